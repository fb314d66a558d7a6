// Turns a Metal compute kernel (a kernel entry of ops.yaml, compiled as C++ through the Metal
// host shim) into the compute::Kernel that support/cpu/compute_group.cpp runs.
//
// A Metal kernel's parameters carry attributes ([[buffer(i)]], [[threadgroup(i)]],
// [[thread_position_in_grid]], ...) that C++ drops, so the generator, which read them, names
// each parameter's role, in order (codegen/emit/compute_syntax.py writes the registrations).
// A [[buffer(i)]] pointer is bound to buffers[i] and a `constant T&` read from it, as the
// elementwise launcher binds them (kernel_launch.h); a [[threadgroup(i)]] pointer to the group's
// memory; a thread-position attribute to its value, in the parameter's type (uint, ushort, their
// vectors).
#pragma once
#include <tuple>
#include <type_traits>

#include "compute.h"
#include "kernel_registry.h"

namespace mpsgen::cpu::compute {

// A parameter's role: what it is bound to, and its [[buffer(i)]] / [[threadgroup(i)]] index.
enum class Bind : unsigned {
  buffer,
  group_memory,  // a [[threadgroup(i)]] pointer
  thread_position_in_grid,
  thread_position_in_threadgroup,
  threadgroup_position_in_grid,
  threads_per_threadgroup,
  threads_per_grid,
  threadgroups_per_grid,
  thread_index_in_threadgroup,
  thread_index_in_simdgroup,  // also [[thread_index_in_quadgroup]]'s lane below 32
  simdgroup_index_in_threadgroup,
  simdgroups_per_threadgroup,
  threads_per_simdgroup,  // and [[thread_execution_width]]
  dispatch_threads_per_threadgroup,
};
constexpr unsigned role(Bind b, unsigned index = 0) { return unsigned(b) << 8 | index; }

namespace launch_detail {

template <typename P>
using Plain = std::remove_cv_t<std::remove_reference_t<P>>;

// A thread-position value as the parameter's type: a scalar takes the x of a 3-vector.
template <typename P>
inline P as_param(const uint32_t* v) {
  using T = Plain<P>;
  if constexpr (metal::is_vector<T>::value) {
    using E = typename metal::vec_element<T>::type;
    if constexpr (sizeof(T) / sizeof(E) == 2) {
      return T(E(v[0]), E(v[1]));
    } else {
      return T(E(v[0]), E(v[1]), E(v[2]));
    }
  } else {
    return T(v[0]);
  }
}
template <typename P>
inline P as_param(uint32_t v) {
  return Plain<P>(v);
}

template <unsigned R, typename P>
inline P bind(void* const* buffers, void* const* tg, const Position& p) {
  constexpr Bind b = Bind(R >> 8);
  constexpr unsigned i = R & 0xff;
  if constexpr (b == Bind::buffer) {
    if constexpr (std::is_pointer_v<P>) {
      return (P)buffers[i];
    } else {
      return *static_cast<std::remove_reference_t<P>*>(buffers[i]);
    }
  } else if constexpr (b == Bind::group_memory) {
    static_assert(std::is_pointer_v<P>, "a [[threadgroup(i)]] parameter is a threadgroup pointer");
    return (P)tg[i];
  } else if constexpr (b == Bind::thread_position_in_grid) {
    return as_param<P>(p.thread_position_in_grid);
  } else if constexpr (b == Bind::thread_position_in_threadgroup) {
    return as_param<P>(p.thread_position_in_threadgroup);
  } else if constexpr (b == Bind::threadgroup_position_in_grid) {
    return as_param<P>(p.threadgroup_position_in_grid);
  } else if constexpr (b == Bind::threads_per_threadgroup) {
    return as_param<P>(p.threads_per_threadgroup);
  } else if constexpr (b == Bind::threads_per_grid) {
    return as_param<P>(p.threads_per_grid);
  } else if constexpr (b == Bind::threadgroups_per_grid) {
    return as_param<P>(p.threadgroups_per_grid);
  } else if constexpr (b == Bind::dispatch_threads_per_threadgroup) {
    return as_param<P>(p.dispatch_threads_per_threadgroup);
  } else if constexpr (b == Bind::thread_index_in_threadgroup) {
    return as_param<P>(p.thread_index_in_threadgroup);
  } else if constexpr (b == Bind::thread_index_in_simdgroup) {
    return as_param<P>(p.thread_index_in_simdgroup);
  } else if constexpr (b == Bind::simdgroup_index_in_threadgroup) {
    return as_param<P>(p.simdgroup_index_in_threadgroup);
  } else if constexpr (b == Bind::simdgroups_per_threadgroup) {
    return as_param<P>(p.simdgroups_per_threadgroup);
  } else {
    static_assert(b == Bind::threads_per_simdgroup, "unknown role");
    return as_param<P>(p.threads_per_simdgroup);
  }
}

// The positions of a group's thread t, for a group one thread high and deep (its x is t): what
// changes from thread to thread, the rest as in `first`.
inline Position along_x(const Position& first, uint32_t t) {
  Position p = first;
  p.thread_position_in_threadgroup[0] = t;
  p.thread_position_in_grid[0] = first.thread_position_in_grid[0] + t;
  p.thread_index_in_threadgroup = t;
  p.thread_index_in_simdgroup = t % simdgroup_width;
  p.simdgroup_index_in_threadgroup = t / simdgroup_width;
  return p;
}
inline Position in_group(const Position& first, uint32_t t) {
  const uint32_t* size = first.threads_per_threadgroup;
  Position p = first;
  const uint32_t in[3] = {t % size[0], (t / size[0]) % size[1], t / (size[0] * size[1])};
  for (int d = 0; d < 3; ++d) {
    p.thread_position_in_threadgroup[d] = in[d];
    p.thread_position_in_grid[d] = first.thread_position_in_grid[d] + in[d];
  }
  p.thread_index_in_threadgroup = t;
  p.thread_index_in_simdgroup = t % simdgroup_width;
  p.simdgroup_index_in_threadgroup = t / simdgroup_width;
  return p;
}

} // namespace launch_detail

template <auto Fn, bool Flat, unsigned... Roles>
struct ComputeKernel;

template <typename... Args, void (*Fn)(Args...), bool Flat, unsigned... Roles>
struct ComputeKernel<Fn, Flat, Roles...> {
  static_assert(sizeof...(Args) == sizeof...(Roles), "one role per kernel parameter");

  __attribute__((always_inline)) static inline void call(void* const* buffers, void* const* tg, const Position& p) {
#if defined(__clang__)
    [[clang::always_inline]] Fn(launch_detail::bind<Roles, Args>(buffers, tg, p)...);
#else
    Fn(launch_detail::bind<Roles, Args>(buffers, tg, p)...);
#endif
  }
  static void one(void* const* buffers, void* const* tg, const Position& p) { call(buffers, tg, p); }
  // The loop of a kernel that never synchronises: threads one after the other, the kernel
  // inlined, so a kernel without loops of its own vectorises across threads as an elementwise
  // one does (Metal runs them in no order, as the pragma tells the vectoriser).
  __attribute__((always_inline)) static inline void flat_impl(void* const* buffers, void* const* tg,
                                                             const Position& first, uint32_t begin, uint32_t end) {
    if (first.threads_per_threadgroup[1] == 1 && first.threads_per_threadgroup[2] == 1) {
#if defined(__clang__)
#pragma clang loop vectorize(assume_safety)
#endif
      for (uint32_t t = begin; t < end; ++t) call(buffers, tg, launch_detail::along_x(first, t));
    } else {
      for (uint32_t t = begin; t < end; ++t) call(buffers, tg, launch_detail::in_group(first, t));
    }
  }
  static void flat(void* const* buffers, void* const* tg, const Position& first, uint32_t begin, uint32_t end) {
    flat_impl(buffers, tg, first, begin, end);
  }
#if MPSGEN_CPU_X86_AVX2
  // The same for CPUs with AVX2, F16C and FMA (chosen at run time, as the elementwise kernels'
  // variants are: kernel_launch.h); -ffp-contract=off still keeps every product and sum rounded.
  __attribute__((flatten, target(MPSGEN_CPU_AVX2_TARGET))) static void flat_avx2(void* const* buffers,
                                                                             void* const* tg,
                                                                             const Position& first,
                                                                             uint32_t begin, uint32_t end) {
    flat_impl(buffers, tg, first, begin, end);
  }
#endif
  // Whether the kernel reads no position but its place in the grid (and the grid's size): its
  // threads then run in one loop across threadgroups.
  static constexpr bool grid_only = ((Bind(Roles >> 8) == Bind::buffer || Bind(Roles >> 8) == Bind::thread_position_in_grid ||
                                      Bind(Roles >> 8) == Bind::threads_per_grid) && ...);
  static Kernel make(const char* host_name) {
    auto flat_variant = &flat;
#if MPSGEN_CPU_X86_AVX2
    if (cpu_use_avx2()) flat_variant = &flat_avx2;
#endif
    return Kernel{host_name, &one, Flat ? flat_variant : nullptr, false, Flat && grid_only};
  }
};

} // namespace mpsgen::cpu::compute
