// Turns an instantiated Metal kernel template into a KernelRunFn.
//
// Included right after the Metal host shim in a kernel translation unit; the
// build appends one registration per kernel (codegen/host_names.py). Every Metal kernel here takes its arguments in
// [[buffer(i)]] order followed by one thread position, so binding argument i
// to buffers[i] is all a launch needs: pointers are passed through, and
// `constant T&` parameters are read from the pointed-to value.
//
// The loop over grid threads has the kernel inlined, so the compiler can vectorise across
// threads (out[i] = f(a[i], b[i]) becomes a SIMD loop). A kernel that reads or writes half
// (codegen/host_names.py tells by its host_name) is compiled twice: for the baseline ISA the
// extension is built for, and, on x86-64, for AVX2 + F16C, picked at run time when the CPU
// has them (cpu_use_avx2), so a build for baseline x86-64 still runs anywhere. `flatten`
// inlines the kernel and everything it calls into the AVX2 variant, so it converts half <->
// float with F16C instructions where the baseline calls libgcc's software conversions per
// value, twenty times slower. Other kernels gain little from AVX2 (their loops vectorise with
// SSE2 and their math is scalar libm either way) and are compiled once: the second variant of
// every kernel made the kernels' build three to four times longer. Both variants give the same
// bits (NaN payloads aside: which NaN operand an operation returns follows the operand order,
// which the vectoriser may swap). F16C rounds to nearest even as the software conversions do.
// The variant leaves FMA out: with it, g++'s vectoriser fuses complex multiplications into
// fmaddsub even under -ffp-contract=off, which rounds differently (tests/test_cpu_launcher.py
// compares the two variants).
#pragma once
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernel_registry.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define MPSGEN_CPU_X86_AVX2 1
#else
#define MPSGEN_CPU_X86_AVX2 0
#endif

namespace mpsgen::cpu::detail {

// One kernel argument, bound once per launch chunk: a buffer pointer, or a copy of a
// `constant T&` value. Copies are locals the kernel cannot write through its output
// pointers, so the compiler keeps them in registers instead of reloading them (and the
// buffers array) on every grid thread, which also kept the loop from vectorising.
template <typename P>
using Bound = std::conditional_t<std::is_pointer_v<P>, P, std::remove_cv_t<std::remove_reference_t<P>>>;

template <typename P>
inline Bound<P> bind_arg(void* p) {
  static_assert(std::is_pointer_v<P> || std::is_reference_v<P>, "kernel parameters must be pointers or references");
  if constexpr (std::is_pointer_v<P>) {
    return static_cast<P>(p);
  } else {
    return *static_cast<std::remove_reference_t<P>*>(p);
  }
}

// F16c: the kernel reads or writes half, and gets an AVX2 + F16C variant.
// Ilp: 0, or the tile width of a kernel whose threads each handle Ilp consecutive elements
// and whose last buffer is the `constant uint& numel` it tests the tile against
// (c10::metal's unary_dense and binary_dense_ilp; codegen/host_names.py names them).
template <auto Fn, bool F16c, unsigned Ilp = 0>
struct Kernel;

template <typename... Args, void (*Fn)(Args...), bool F16c, unsigned Ilp>
struct Kernel<Fn, F16c, Ilp> {
  using Params = std::tuple<Args...>;
  static constexpr size_t nbuffers = sizeof...(Args) - 1;
  using Pos = std::tuple_element_t<nbuffers, Params>;
  static constexpr int grid_dims = std::is_same_v<Pos, uint2> ? 2 : 1;
  static_assert(std::is_same_v<Pos, uint2> || std::is_same_v<Pos, uint>,
                "last kernel parameter must be the uint/uint2 thread position");

  template <size_t I>
  using Arg = std::tuple_element_t<I, Params>;

  // The loop over grid threads [begin, end), the arguments bound: `a`, all but the last
  // buffer, then `last` (an ILP kernel's numel).
  template <typename Last, typename... A>
  __attribute__((always_inline)) static inline void loop(uint64_t begin, uint64_t end, uint32_t grid_x, Last last,
                                                         A... a) {
    if constexpr (grid_dims == 2) {
      // Row by row: what the kernel computes from the row alone (its outer coordinates)
      // stays out of the loop over x, and there is no division per thread here.
      for (uint64_t t = begin; t < end;) {
        const uint y = uint(t / grid_x), x0 = uint(t % grid_x);
        const uint64_t row_end = x0 + (end - t);
        const uint x1 = row_end < grid_x ? uint(row_end) : grid_x;
        for (uint x = x0; x < x1; ++x) {
          Fn(a..., last, uint2(x, y));
        }
        t += x1 - x0;
      }
    } else {
      // A 1D grid has at most 2^32 threads: a 32-bit counter, which the vectoriser can
      // follow through the kernel's `uint` index.
      uint t = uint(begin);
      if constexpr (Ilp != 0) {
        // Threads whose whole tile lies below numel take the kernel's full-tile branch
        // (`index * Ilp + Ilp <= numel`), whatever numel is beyond their tile. They run with
        // numel bound to UINT_MAX, a constant the compiler sees, so the test folds away and
        // the partial-tile loop leaves this loop's body, which then vectorises. The other
        // threads (at most one tile) run with the real numel.
        static_assert(std::is_same_v<Last, uint>, "an ILP kernel's last buffer is its numel");
        const uint full = last / Ilp < uint(end) ? last / Ilp : uint(end);
        for (; t < full; ++t) {
          Fn(a..., ~0u, t);
        }
      }
      for (; t < uint(end); ++t) {
        Fn(a..., last, t);
      }
    }
  }

  template <size_t... I>
  __attribute__((always_inline)) static inline void run_impl(void* const* buffers, uint64_t begin, uint64_t end,
                                                             uint32_t grid_x, std::index_sequence<I...>) {
    loop(begin, end, grid_x, bind_arg<Arg<nbuffers - 1>>(buffers[nbuffers - 1]), bind_arg<Arg<I>>(buffers[I])...);
  }

  static void run_baseline(void* const* buffers, uint64_t begin, uint64_t end, uint32_t grid_x) {
    run_impl(buffers, begin, end, grid_x, std::make_index_sequence<nbuffers - 1>{});
  }
#if MPSGEN_CPU_X86_AVX2
  __attribute__((flatten, target("avx2,f16c"))) static void run_avx2(void* const* buffers, uint64_t begin,
                                                                         uint64_t end, uint32_t grid_x) {
    run_impl(buffers, begin, end, grid_x, std::make_index_sequence<nbuffers - 1>{});
  }
#endif
  // The variant for this CPU (registration_lines registers it).
  static KernelRunFn run() {
#if MPSGEN_CPU_X86_AVX2
    if constexpr (F16c) {
      if (cpu_use_avx2()) return &run_avx2;
    }
#endif
    return &run_baseline;
  }
};

} // namespace mpsgen::cpu::detail

