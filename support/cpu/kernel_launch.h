// Turns an instantiated Metal kernel template into a KernelRunFn.
//
// Included right after the Metal host shim in a kernel translation unit; the
// build appends one registration per kernel (codegen/host_names.py). Every Metal kernel here takes its arguments in
// [[buffer(i)]] order followed by one thread position, so binding argument i
// to buffers[i] is all a launch needs: pointers are passed through, and
// `constant T&` parameters are read from the pointed-to value.
#pragma once
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernel_registry.h"

namespace mpsgen::cpu::detail {

template <typename P>
inline P bind_arg(void* p) {
  if constexpr (std::is_pointer_v<P>) {
    return static_cast<P>(p);
  } else {
    static_assert(std::is_reference_v<P>, "kernel parameters must be pointers or references");
    return *static_cast<std::remove_reference_t<P>*>(p);
  }
}

template <auto Fn>
struct Kernel;

template <typename... Args, void (*Fn)(Args...)>
struct Kernel<Fn> {
  using Params = std::tuple<Args...>;
  static constexpr size_t nbuffers = sizeof...(Args) - 1;
  using Pos = std::tuple_element_t<nbuffers, Params>;
  static constexpr int grid_dims = std::is_same_v<Pos, uint2> ? 2 : 1;
  static_assert(std::is_same_v<Pos, uint2> || std::is_same_v<Pos, uint>,
                "last kernel parameter must be the uint/uint2 thread position");

  template <size_t... I>
  static void run_impl(void* const* buffers, uint64_t begin, uint64_t end, uint32_t grid_x,
                       std::index_sequence<I...>) {
    for (uint64_t t = begin; t < end; ++t) {
      if constexpr (grid_dims == 2) {
        Fn(bind_arg<std::tuple_element_t<I, Params>>(buffers[I])...,
           uint2(uint(t % grid_x), uint(t / grid_x)));
      } else {
        Fn(bind_arg<std::tuple_element_t<I, Params>>(buffers[I])..., uint(t));
      }
    }
  }
  static void run(void* const* buffers, uint64_t begin, uint64_t end, uint32_t grid_x) {
    run_impl(buffers, begin, end, grid_x, std::make_index_sequence<nbuffers>{});
  }
};

} // namespace mpsgen::cpu::detail

