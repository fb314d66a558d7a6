// The CPU launcher runs kernels whose thread position is a uint (1D grid) or uint2 (2D). Torch
// 2.15's ternary strided kernels (ternary_strided, ternary_strided_cast, ternary_alpha_strided and
// its _cast; codegen/torch_versions.py FEATURES["ternary_alpha"] marks the release) take
// `uint3 thread_pos [[thread_position_in_grid]]` instead, and c10/metal/indexing.h's
// ternary_offsets reads dimension 0 from .x, dimension 1 from .y and the others, flattened, from
// .z: torch's host dispatches them over a grid of (sizes[0], sizes[1], the product of the rest).
// Threads in that grid's order (x fastest) are the elements in the order of a 1D launch's index.
// The launcher runs such a kernel row by row (kernel_launch.h, "1D-grid strided kernels"): each
// row a launch with ndim 1, the operands moved to the row's start, where the kernel reads .x alone;
// so (x, 0, 0) is the position that grid gives the row's thread x. Its fallback for a row of more
// than 2^30 threads runs the kernel once per thread with the real ndim: with two dimensions or more
// that is over INT32_MAX elements, which the host splits first (32-bit indexing, as torch's), so
// that path only meets ndim 1 (and 0), where .x is all the kernel reads too.
// uint3_position<&kernel> is that kernel with a uint position: what the registrations
// (codegen/emit/host_names.py) hand the launcher for a kernel whose last parameter is a uint3.
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
