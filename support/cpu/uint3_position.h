// The CPU launcher runs kernels whose thread position is a uint (1D grid) or uint2 (2D). Torch
// 2.15's ternary_alpha_strided kernels (codegen/torch_versions.py FEATURES["ternary_alpha"])
// take `uint3 tid [[thread_position_in_grid]]` and are dispatched as 1D jobs, where Metal gives
// tid = (x, 0, 0). uint3_position<&kernel> is that kernel with a uint position: what the
// registrations (codegen/emit/host_names.py) hand the launcher for such a kernel.
#pragma once
#include <cstddef>
#include <tuple>
#include <type_traits>
#include <utility>

#include <metal_stdlib>

namespace mpsgen::cpu::detail {

template <auto Fn>
struct Arity;
template <typename... Args, void (*Fn)(Args...)>
struct Arity<Fn> {
  static constexpr size_t value = sizeof...(Args);
};

template <auto Fn, typename Leading>
struct Uint3Position;
template <typename... Args, void (*Fn)(Args...), size_t... I>
struct Uint3Position<Fn, std::index_sequence<I...>> {
  using Params = std::tuple<Args...>;
  static_assert(std::is_same_v<std::tuple_element_t<sizeof...(Args) - 1, Params>, uint3>,
                "uint3_position takes a kernel whose last parameter is its uint3 thread position");
  static void run(std::tuple_element_t<I, Params>... a, uint x) {
    Fn(a..., uint3(x, 0u, 0u));
  }
};

template <auto Fn>
inline constexpr auto uint3_position = &Uint3Position<Fn, std::make_index_sequence<Arity<Fn>::value - 1>>::run;

} // namespace mpsgen::cpu::detail
