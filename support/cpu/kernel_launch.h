// Turns an instantiated Metal kernel template into a KernelRunFn.
//
// Included right after the Metal host shim in a kernel translation unit; the
// build appends one registration per kernel (codegen/emit/host_names.py). Every Metal kernel here takes its arguments in
// [[buffer(i)]] order followed by one thread position, so binding argument i
// to buffers[i] is all a launch needs: pointers are passed through, and
// `constant T&` parameters are read from the pointed-to value.
//
// The loop over grid threads has the kernel inlined, so the compiler can vectorise across
// threads (out[i] = f(a[i], b[i]) becomes a SIMD loop). Some kernels (codegen/emit/host_names.py
// says which: those reading or writing half or bfloat, and the kernels of ops calling the
// shim's vectorised math or fma) are compiled twice: for the baseline ISA the extension is
// built for, and, on x86-64, for AVX2 + F16C, picked at run time when the CPU has them
// (cpu_use_avx2), so a build for baseline x86-64 still runs anywhere. They are compiled a
// third time, for AVX-512 (cpu_use_avx512; clang only): double arithmetic 8 lanes wide halves
// the vectorised math's time, and 16-bit permutes separate the half and bfloat ILP tiles.
// `flatten` inlines the kernel and what it calls into the AVX2 variant, so it converts half <->
// float with F16C instructions where the baseline calls libgcc's software conversions per
// value, twenty times slower, and runs double arithmetic four lanes wide. Other kernels gain little from AVX2
// (their loops vectorise with SSE2) and are compiled once: the second variant of every kernel
// made the kernels' build 40 % longer. All variants give the same
// bits (NaN payloads aside: which NaN operand an operation returns follows the operand order,
// which the vectoriser may swap). F16C rounds to nearest even as the software conversions do.
// Built by clang (the kernel units' compiler, codegen/build.py), the variant also has FMA, so
// the shim's `fma` (c10/metal's erf, our lerp) is the instruction, inlined and vectorised,
// where the baseline calls libm's fmaf: both round once. With -ffp-contract=off clang fuses
// nothing else. g++ (the build without ziglang) gets no FMA: its vectoriser fuses complex
// multiplications into fmaddsub even under -ffp-contract=off, which rounds differently
// (tests/test_cpu_launcher.py compares the variants).
#pragma once
#include <tuple>
#include <type_traits>
#include <utility>

#include "kernel_registry.h"

#if defined(__x86_64__) && defined(__GNUC__)
#define MPSGEN_CPU_X86_AVX2 1
#if defined(__clang__)
#define MPSGEN_CPU_AVX2_TARGET "avx2,f16c,fma"
// clang only: g++ would fuse under AVX-512 as it does under FMA (above).
#define MPSGEN_CPU_X86_AVX512 1
#define MPSGEN_CPU_AVX512_TARGET "avx512f,avx512vl,avx512bw,avx512dq,avx2,f16c,fma"
#else
#define MPSGEN_CPU_AVX2_TARGET "avx2,f16c"
#define MPSGEN_CPU_X86_AVX512 0
#endif
#else
#define MPSGEN_CPU_X86_AVX2 0
#define MPSGEN_CPU_X86_AVX512 0
#endif

namespace mpsgen::cpu::detail {

// A kernel's `constant` pointer is a pointer into address space 2 where clang builds the unit (the
// Metal host shim says why). Unspaced<P> is its type in C++'s own memory, which the launch's
// layout tests below compare with; a buffer's pointer converts to it with a C cast (no-op here).
template <typename P>
struct unspaced {
  using type = P;
};
#if defined(__clang__)
template <typename T>
struct unspaced<const MPSGEN_CONSTANT_SPACE T*> {
  using type = const T*;
};
#endif
template <typename P>
using Unspaced = typename unspaced<P>::type;

// Every loop over grid threads below is `vectorize(assume_safety)`: Metal runs a grid's threads in
// no order, so a kernel's threads are independent, as the pragma tells the vectoriser; it could
// not otherwise check an output pointer against a `constant` one, in another address space, at
// run time (LLVM: "cannot identify array bounds"), and the loops stayed scalar.

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
    return (P)p;  // into the kernel's address space (above)
  } else {
    return *static_cast<std::remove_reference_t<P>*>(p);
  }
}

// Isa: the variants compiled besides the baseline one, a mask (codegen/emit/host_names.py says
// which kernels get them; codegen/build.py cpu_variants which the build compiles: by default only
// the one the building machine runs): 0 none, 1 AVX2 + F16C (+ FMA), 2 AVX-512 (F, VL, BW, DQ,
// with AVX2, F16C and FMA; clang only: g++ builds compile AVX2 in its place), 3 both.
// Ilp: 0, or the tile width of a kernel whose threads each handle Ilp consecutive elements
// and whose last buffer is the `constant uint& numel` it tests the tile against
// (c10::metal's unary_dense and binary_dense_ilp; codegen/emit/host_names.py names them).
// Unit: for a strided kernel launched row by row, RowUnit<the size of each operand's element,
// output first> (codegen/emit/host_names.py ROW_OPERANDS), or NoRowUnit.
template <size_t... Sizes>
struct RowUnit {
  static constexpr size_t count = sizeof...(Sizes);
  static constexpr long stride[sizeof...(Sizes)][1] = {{long(Sizes)}...};
};
struct NoRowUnit {
  static constexpr size_t count = 0;
};

template <auto Fn, unsigned Isa, unsigned Ilp = 0, unsigned Broadcast = 0, typename Unit = NoRowUnit>
struct Kernel;

template <typename... Args, void (*Fn)(Args...), unsigned Isa, unsigned Ilp, unsigned Broadcast, typename Unit>
struct Kernel<Fn, Isa, Ilp, Broadcast, Unit> {
  using Params = std::tuple<Args...>;
  static constexpr size_t nbuffers = sizeof...(Args) - 1;
  using Pos = std::tuple_element_t<nbuffers, Params>;
  static constexpr int grid_dims = std::is_same_v<Pos, uint2> ? 2 : 1;
  static_assert(std::is_same_v<Pos, uint2> || std::is_same_v<Pos, uint>,
                "last kernel parameter must be the uint/uint2 thread position");

  template <size_t I>
  using Arg = std::tuple_element_t<I, Params>;

  // The kernel behind a pointer the compiler cannot see through, so a loop calling it does
  // not inline it: for launches too rare to be worth the compile time of an inlined copy.
  static inline void (*volatile opaque_kernel)(Args...) = Fn;

  // One thread of the loop below: the kernel inlined, or (Opaque) called through `callee`.
  // clang (the kernel units' compiler on Linux, codegen/build.py) is told to inline it here:
  // its inliner, like g++'s at -O2, weighs a strided kernel by its loops over dimensions, which
  // the launch's constant ndim and sizes then fold away (unhelped, add bfloat16 on a strided
  // view took 119 ms at 1e7 instead of 15). g++ ignores the attribute (-Wno-attributes) and
  // gets there with --param=max-inline-insns-auto (GCC_CXX_FLAGS).
  template <bool Opaque, typename... P>
  __attribute__((always_inline)) static inline void call(void (*callee)(Args...), P... p) {
    if constexpr (Opaque) {
      callee(p...);
    } else {
#if defined(__clang__)
      [[clang::always_inline]] Fn(p...);
#else
      Fn(p...);
#endif
    }
  }

  // The loop over grid threads [begin, end), the arguments bound: `a`, all but the last
  // buffer, then `last` (an ILP kernel's numel).
  // Interleaved: the AVX-512 variant's (below).
  template <bool Opaque = false, bool Interleaved = false, typename Last, typename... A>
  __attribute__((always_inline)) static inline void loop(uint64_t begin, uint64_t end, uint32_t grid_x, Last last,
                                                         A... a) {
    // The partial tile of an ILP kernel (one thread, below) calls the kernel compiled once per
    // unit: inlined there it was a copy of both the kernel's branches in every variant, 8 % of
    // the kernel units' compile time (sin, exp, atan2, hypot, copysign, bitwise_not: 25.3 -> 23.3 s).
    constexpr bool opaque_tail = Opaque || Ilp != 0;
    void (*const callee)(Args...) = opaque_tail ? opaque_kernel : nullptr;
    (mpsgen_vmath::assume_not_a_table(a), ...);  // sin/cos/tan's table is no kernel buffer
    if constexpr (grid_dims == 2) {
      // Row by row: what the kernel computes from the row alone (its outer coordinates)
      // stays out of the loop over x, and there is no division per thread here.
      for (uint64_t t = begin; t < end;) {
        const uint y = uint(t / grid_x), x0 = uint(t % grid_x);
        const uint64_t row_end = x0 + (end - t);
        const uint x1 = row_end < grid_x ? uint(row_end) : grid_x;
        // Four vectors per iteration, as the ILP kernels' tiles give (below): a long functor
        // (sin, log) is one dependent chain per vector, and one chain at a time left the strided
        // rows twice as slow as the contiguous tiles (docs/cpu-backend.md, "Launcher").
#if defined(__clang__)
#pragma clang loop vectorize(assume_safety) interleave_count(4)
#endif
        for (uint x = x0; x < x1; ++x) {
          call<Opaque>(callee, a..., last, uint2(x, y));
        }
        t += x1 - x0;
      }
    } else {
      // A 1D grid has at most 2^32 threads: a 32-bit counter, which the vectoriser can
      // follow through the kernel's `uint` index.
      uint t = uint(begin);
      if constexpr (Ilp != 0 && !Opaque) {
        // Threads whose whole tile lies below numel take the kernel's full-tile branch
        // (`index * Ilp + Ilp <= numel`), whatever numel is beyond their tile. They run with
        // numel bound to UINT_MAX, a constant the compiler sees, so the test folds away and
        // the partial-tile loop leaves this loop's body, which then vectorises. The other
        // threads (at most one tile) run with the real numel.
        static_assert(std::is_same_v<Last, uint>, "an ILP kernel's last buffer is its numel");
        // The kernel's `index * Ilp + j` is 32-bit arithmetic, so the compiler widens it to
        // the address with a mask against wrapping, and then cannot tell where the loop's
        // accesses start and end, nor check the output against the input: the loop stayed
        // scalar (docs/cpu-backend.md, "Launcher"). A full tile's thread is below
        // numel / Ilp, so its `index * Ilp + j` does not wrap; said to the compiler, the mask
        // goes. The loop reads and writes each operand as Ilp interleaved streams (element j
        // of every tile); vectorised 16 tiles wide, the shuffles that separate them cost less
        // per element than at the width clang picks.
        // The kernel's Ilp elements are Ilp copies of the functor one after the other, so a long
        // functor (sin, erf) is one dependent chain at a time for the core to overlap. With 32
        // vector registers (the AVX-512 variant) two vectors are interleaved instruction by
        // instruction, as the strided rows' four are (above): erf float16 contiguous 3.11 ->
        // 2.42 times torch's time, gelu float32 2.80 -> 2.51 (docs/performance.md). The
        // baseline's 16 registers spill instead (floor float32 2.41 -> 2.97), and four in the
        // AVX-512 variant made sin float16 slower.
        const uint full = last / Ilp < uint(end) ? last / Ilp : uint(end);
        if constexpr (Interleaved) {
#if defined(__clang__)
#pragma clang loop vectorize(assume_safety) vectorize_width(16) interleave_count(2)
#endif
          for (; t < full; ++t) {
            if (t >= ~0u / Ilp) __builtin_unreachable();
            call<false>(nullptr, a..., ~0u, t);
          }
        } else {
#if defined(__clang__)
#pragma clang loop vectorize(assume_safety) vectorize_width(16)
#endif
          for (; t < full; ++t) {
            if (t >= ~0u / Ilp) __builtin_unreachable();
            call<false>(nullptr, a..., ~0u, t);
          }
        }
      }
#if defined(__clang__)
#pragma clang loop vectorize(assume_safety)
#endif
      for (; t < uint(end); ++t) {
        call<opaque_tail>(callee, a..., last, t);
      }
    }
  }

  // The 2D-grid kernels unary_strided and unary_alpha_strided of c10::metal read their
  // dimension count from buffer 5, `uint ndim`. Their loops over dimensions run to it, so the
  // compiler computes every coordinate and offset on every thread, a division per outer
  // dimension included. For two dimensions the launch binds it as a constant instead
  // (the same value: loop versioning by hand), so the loops unroll, and what depends on the
  // row alone (the outer coordinates, their offsets) is hoisted out of the loop over x.
  static constexpr size_t ndim_buffer = 5;
  // unary_strided_castout (a `uint2 ndim_outtype` there: an output of another dtype) keeps
  // the plain launch, for compile time, as the binary cast kernels do below.
  static constexpr bool versioned_layout() {
    if constexpr (grid_dims == 2 && nbuffers > ndim_buffer) {
      return std::is_same_v<Arg<ndim_buffer>, const uint&>;
    } else {
      return false;
    }
  }
  static constexpr bool versioned = versioned_layout();

  // Argument I bound for a launch; Ndim != 0: the dimension count, as a constant.
  template <size_t I, unsigned Ndim>
  __attribute__((always_inline)) static inline Bound<Arg<I>> bound(void* const* buffers) {
    Bound<Arg<I>> v = bind_arg<Arg<I>>(buffers[I]);
    if constexpr (versioned && I == ndim_buffer && Ndim != 0) {
      v = Ndim;
    }
    return v;
  }

  template <unsigned Ndim, bool Opaque = false, bool Interleaved = false, size_t... I>
  __attribute__((always_inline)) static inline void run_ndim(void* const* buffers, uint64_t begin, uint64_t end,
                                                             uint32_t grid_x, std::index_sequence<I...>) {
    loop<Opaque, Interleaved>(begin, end, grid_x, bound<nbuffers - 1, Ndim>(buffers), bound<I, Ndim>(buffers)...);
  }

  // ---- 1D-grid strided kernels, launched row by row ----
  // c10::metal's binary and ternary strided kernels (and ternary_alpha.h's) bind: the
  // operands' pointers (output first), maybe params (alpha), `sizes`, one stride array per
  // operand in the same order, then the dimension count (`uint ndim`, or the x of a
  // `uint3`). Each thread finds its coordinates from its index with a division and
  // a modulo per dimension by the runtime `sizes`: about 30 cycles per element on this
  // machine, ten times the work of a binary op. So the launch runs each row (the innermost
  // dimension at fixed outer coordinates) as a 1-D launch of the same kernel: the operand
  // pointers moved to the row's start, ndim 1, and `sizes` a constant extent of 2^30 that
  // the compiler sees, so its modulo is a mask and its division is dead. The kernel still
  // computes each offset from its thread index and the operand's stride, as it does on
  // the GPU; the launcher computes the row's start once per row.
  static constexpr bool operand_arg[] = {
      (std::is_same_v<Unspaced<Args>, void*> || std::is_same_v<Unspaced<Args>, const void*>)...};
  static constexpr bool long_ptr_arg[] = {std::is_same_v<Unspaced<Args>, const long*>...};
  // `uint ndim` (ternary_strided, ternary_alpha_strided, ternary_strided_cast) or `uint3 ndim`
  // (binary_strided, binary_alpha_strided). binary_strided_cast, binary_strided_castout and
  // binary_alpha_strided_cast (a `uint4 ndim_types`: operands of mixed dtypes) keep the
  // per-thread launch: an inlined row launch of each made a binary op's kernels take a tenth
  // longer to compile (div: 11.3 s against 12.3), for a case less common.
  static constexpr bool ndim_arg[] = {(std::is_same_v<Args, const uint&> || std::is_same_v<Args, const uint3&>)...};
  static constexpr size_t count_operands() {
    size_t n = 0;
    while (n < nbuffers && operand_arg[n]) ++n;
    return n;
  }
  static constexpr size_t find_sizes() {
    for (size_t i = 0; i < nbuffers; ++i) {
      if (long_ptr_arg[i]) return i;
    }
    return nbuffers;
  }
  static constexpr size_t noperands = count_operands();
  static constexpr size_t sizes_buffer = find_sizes();
  static constexpr size_t row_ndim_buffer = sizes_buffer + 1 + noperands;
  static constexpr bool strided_layout() {
    if (grid_dims != 1 || noperands == 0 || row_ndim_buffer >= nbuffers) return false;
    for (size_t k = 1; k <= noperands; ++k) {
      if (!long_ptr_arg[sizes_buffer + k]) return false;
    }
    return ndim_arg[row_ndim_buffer];
  }
  static constexpr bool row_launch = strided_layout();
  static constexpr long row_max = 1L << 30;  // threads of one row launch
  static constexpr long row_sizes[1] = {row_max};
  static constexpr long zero_strides[1] = {0};

  template <typename V>
  static inline uint ndim_of(const V& v) {
    if constexpr (std::is_same_v<V, uint>) {
      return v;
    } else {
      return v.x;
    }
  }

  // Argument I of the row launch whose operand k starts `base[k]` bytes in.
  template <size_t I>
  __attribute__((always_inline)) static inline Bound<Arg<I>> row_arg(void* const* buffers, const long* const* strides,
                                                                      const int64_t* base) {
    if constexpr (I < noperands) {
      using Byte = std::conditional_t<std::is_const_v<std::remove_pointer_t<Unspaced<Arg<I>>>>, const char, char>;
      return (Arg<I>)(static_cast<Byte*>(buffers[I]) + base[I]);
    } else if constexpr (I == sizes_buffer) {
      return (Arg<I>)row_sizes;
    } else if constexpr (I > sizes_buffer && I <= sizes_buffer + noperands) {
      return (Arg<I>)strides[I - sizes_buffer - 1];
    } else if constexpr (I == row_ndim_buffer) {
      Bound<Arg<I>> v = bind_arg<Arg<I>>(buffers[I]);
      if constexpr (std::is_same_v<Bound<Arg<I>>, uint>) {
        v = 1;
      } else {
        v.x = 1;
      }
      return v;
    } else {
      return bind_arg<Arg<I>>(buffers[I]);
    }
  }

  static_assert(Unit::count == 0 || (row_launch && Unit::count == noperands) || (versioned && Unit::count == 2),
                "RowUnit names the element size of each operand of a row-launched kernel");

  template <size_t... I>
  __attribute__((always_inline)) static inline void run_row(void* const* buffers, const long* const* strides,
                                                            const int64_t* base, uint x0, uint x1,
                                                            std::index_sequence<I...>) {
    // run_rows keeps a row launch within row_max threads; said to the compiler, the kernel's
    // `index % sizes[0]` is the index, so offsets with a constant stride are linear in it.
    if (x1 > uint(row_max)) __builtin_unreachable();
    loop(x0, x1, 0, row_arg<nbuffers - 1>(buffers, strides, base), row_arg<I>(buffers, strides, base)...);
  }

  __attribute__((always_inline)) static inline void run_rows(void* const* buffers, uint64_t begin, uint64_t end) {
    const long* sizes = static_cast<const long*>(buffers[sizes_buffer]);
    const uint ndim = ndim_of(bind_arg<Arg<row_ndim_buffer>>(buffers[row_ndim_buffer]));
    const long* strides[noperands];
    for (size_t k = 0; k < noperands; ++k) {
      // A 0-dim launch has no strides: its one thread reads offset 0.
      strides[k] = ndim == 0 ? zero_strides : static_cast<const long*>(buffers[sizes_buffer + 1 + k]);
    }
    // A row contiguous in every operand (each stride its element's size: a transposed or
    // sliced matrix, a view with a gap between rows) runs a copy with those strides as
    // constants, so its loop vectorises as a dense one does (the same values: loop
    // versioning by hand, as for the 2D-grid kernels' ndim).
    // So does a row where the last operand alone repeats one element (a Python scalar, or a
    // column broadcast along the row: inner stride 0), the stride 0 bound as a constant too:
    // its runtime stride kept the loop scalar (docs/cpu-backend.md, "Launcher").
    const long* unit[noperands > 0 ? noperands : 1];
    const long* scalar_last[noperands > 0 ? noperands : 1];
    bool unit_row = Unit::count != 0 && ndim >= 1, scalar_row = unit_row && noperands >= 2;
    if constexpr (Unit::count != 0) {
      for (size_t k = 0; k < noperands; ++k) {
        unit[k] = scalar_last[k] = Unit::stride[k];
        unit_row = unit_row && strides[k][0] == Unit::stride[k][0];
        scalar_row = scalar_row && strides[k][0] == (k + 1 < noperands ? Unit::stride[k][0] : 0);
      }
      scalar_last[noperands - 1] = zero_strides;
    }
    const uint64_t row = ndim == 0 ? 1 : uint64_t(sizes[0]);
    if (row > uint64_t(row_max)) {
      // longer rows than one row launch takes (2^30 threads): once per thread, as Metal would
      run_ndim<0, true>(buffers, begin, end, 0, std::make_index_sequence<nbuffers - 1>{});
      return;
    }
    for (uint64_t t = begin; t < end;) {
      uint64_t r = t / row;
      const uint64_t x0 = t % row, x1 = x0 + (end - t) < row ? x0 + (end - t) : row;
      int64_t base[noperands] = {};
      for (uint i = 1; i < ndim; ++i) {
        const int64_t p = int64_t(r % uint64_t(sizes[i]));
        r /= uint64_t(sizes[i]);
        for (size_t k = 0; k < noperands; ++k) base[k] += p * strides[k][i];
      }
      if (unit_row) {
        run_row(buffers, unit, base, uint(x0), uint(x1), std::make_index_sequence<nbuffers - 1>{});
      } else if (scalar_row) {
        run_row(buffers, scalar_last, base, uint(x0), uint(x1), std::make_index_sequence<nbuffers - 1>{});
      } else {
        run_row(buffers, strides, base, uint(x0), uint(x1), std::make_index_sequence<nbuffers - 1>{});
      }
      t += x1 - x0;
    }
  }

  // ---- binary_dense_broadcast(_rhs), launched a repetition at a time ----
  // out[tid] = f(input[tid], broadcast[tid % broadcast_numel]) (operands swapped in _rhs;
  // binary_alpha_dense_broadcast(_rhs) bind alpha after broadcast_numel): a 64-bit modulo by the runtime `broadcast_numel` (buffer 3) per element. Each run of
  // broadcast_numel threads, where the broadcast operand repeats, is launched on its own,
  // the output and the dense input moved to its start and broadcast_numel a constant the
  // compiler sees, so the modulo folds away and the loop vectorises like a dense one.
  // Broadcast: the buffer index of the broadcast operand (codegen/emit/host_names.py), or 0.
  static constexpr bool broadcast_layout() {
    if constexpr (nbuffers >= 4) {
      return std::is_same_v<Arg<3>, const long&> && (Broadcast == 1 || Broadcast == 2);
    } else {
      return false;
    }
  }
  static_assert(Broadcast == 0 || broadcast_layout(), "binary_dense_broadcast binds out, two operands, broadcast_numel (and alpha)");

  // broadcast_numel as the launch binds it: 2^62, more than a 32-bit thread index can reach,
  // so the compiler folds `tid % broadcast_numel` to `tid`.
  static constexpr long repetition_numel = 1L << 62;

  template <size_t I>
  __attribute__((always_inline)) static inline Bound<Arg<I>> repetition_arg(void* const* buffers, uint64_t start) {
    if constexpr (I == 3) {
      return repetition_numel;
    } else if constexpr (I > 3 || I == Broadcast) {
      return bind_arg<Arg<I>>(buffers[I]);
    } else {
      return bind_arg<Arg<I>>(buffers[I]) + start;
    }
  }

  template <size_t... I>
  __attribute__((always_inline)) static inline void run_repetition(void* const* buffers, uint64_t start, uint x0,
                                                                   uint x1, std::index_sequence<I...>) {
    loop(x0, x1, 0, repetition_arg<nbuffers - 1>(buffers, start), repetition_arg<I>(buffers, start)...);
  }

  __attribute__((always_inline)) static inline void run_repetitions(void* const* buffers, uint64_t begin,
                                                                    uint64_t end) {
    const uint64_t n = uint64_t(*static_cast<const long*>(buffers[3]));
    for (uint64_t t = begin; t < end;) {
      const uint64_t start = t - t % n;  // the repetition's first thread
      const uint64_t x0 = t - start, x1 = x0 + (end - t) < n ? x0 + (end - t) : n;
      run_repetition(buffers, start, uint(x0), uint(x1), std::make_index_sequence<nbuffers - 1>{});
      t += x1 - x0;
    }
  }

  template <bool Interleaved = false>
  __attribute__((always_inline)) static inline void run_impl(void* const* buffers, uint64_t begin, uint64_t end,
                                                             uint32_t grid_x) {
    constexpr auto args = std::make_index_sequence<nbuffers - 1>{};
    if constexpr (Broadcast != 0) {
      run_repetitions(buffers, begin, end);
    } else if constexpr (row_launch) {
      run_rows(buffers, begin, end);
    } else {
      if constexpr (versioned) {
        // One inlined copy, for two dimensions (a strided view of a matrix, or any view whose
        // dimensions coalesce to two); other counts call the kernel once per thread. Each
        // inlined copy adds about a fifth to the compile time of a unary op's kernels.
        if (ndim_of(bind_arg<Arg<ndim_buffer>>(buffers[ndim_buffer])) == 2) {
          if constexpr (Unit::count == 2) {
            // Rows contiguous in both operands: their inner strides (buffers 3 and 4, input
            // then output) bound as the constants they equal, so the loop over x vectorises.
            const long* in = static_cast<const long*>(buffers[3]);
            const long* out = static_cast<const long*>(buffers[4]);
            if (in[0] == Unit::stride[1][0] && out[0] == Unit::stride[0][0] && grid_x <= uint(row_max)) {
              const long in_unit[2] = {Unit::stride[1][0], in[1]}, out_unit[2] = {Unit::stride[0][0], out[1]};
              void* unit[nbuffers];
              for (size_t i = 0; i < nbuffers; ++i) unit[i] = buffers[i];
              unit[3] = const_cast<long*>(in_unit);
              unit[4] = const_cast<long*>(out_unit);
              run_ndim<2>(unit, begin, end, grid_x, args);  // x below 2^30: int(x) linear in x
              return;
            }
          }
          run_ndim<2>(buffers, begin, end, grid_x, args);
        } else {
          run_ndim<0, true>(buffers, begin, end, grid_x, args);
        }
      } else {
        run_ndim<0, false, Interleaved>(buffers, begin, end, grid_x, args);
      }
    }
  }

  static void run_baseline(void* const* buffers, uint64_t begin, uint64_t end, uint32_t grid_x) {
    run_impl(buffers, begin, end, grid_x);
  }
  // The baseline of a kernel that has a variant for newer CPUs: run only on an x86-64 without
  // AVX2, F16C and FMA (or under MPSGEN_CPU_ISA=baseline). It is the plain launch, as Metal
  // runs a grid: the kernel called once per thread through opaque_kernel, compiled once per
  // unit (the launches above that call it so share it) and not inlined into loops. Same bits
  // (tests/test_cpu_launcher.py), slower, and a shorter compile: the kernel unit of sin (every
  // kernel with variants) 10.0 s -> 8.7 s, of eq 6.5 s -> 6.2 s, against its copy inlined into
  // every launch path for size (clang's `cold`; AMD EPYC, AVX-512, medians of two).
  // Castout kernels (an out= of another dtype), a third of all kernels, were tried the same
  // way as their only variant: the kernel units' total CPU time did not move (312 s against
  // 320 s in one build each, within the noise), so they stay as they are.
  __attribute__((cold)) static void run_baseline_cold(void* const* buffers, uint64_t begin, uint64_t end,
                                                     uint32_t grid_x) {
    run_ndim<0, true>(buffers, begin, end, grid_x, std::make_index_sequence<nbuffers - 1>{});
  }
#if MPSGEN_CPU_X86_AVX2
  __attribute__((flatten, target(MPSGEN_CPU_AVX2_TARGET))) static void run_avx2(void* const* buffers, uint64_t begin,
                                                                         uint64_t end, uint32_t grid_x) {
    run_impl(buffers, begin, end, grid_x);
  }
#endif
#if MPSGEN_CPU_X86_AVX512
  __attribute__((flatten, target(MPSGEN_CPU_AVX512_TARGET))) static void run_avx512(void* const* buffers,
                                                                             uint64_t begin, uint64_t end,
                                                                             uint32_t grid_x) {
    run_impl<true>(buffers, begin, end, grid_x);
  }
#endif
  // The variant for this CPU (registration_lines registers it).
  static constexpr unsigned isa = MPSGEN_CPU_X86_AVX512 ? Isa : MPSGEN_CPU_X86_AVX2 && Isa != 0 ? 1 : 0;
  static KernelRunFn run() {
    // the variants compiled: bit 0 AVX2, bit 1 AVX-512 (isa already drops what the compiler lacks)
    count_compiled_variants(((MPSGEN_CPU_X86_AVX2 && (isa & 1)) ? 1u : 0u) |
                            ((MPSGEN_CPU_X86_AVX512 && (isa & 2)) ? 2u : 0u));
    if constexpr (isa == 0) {
      return &run_baseline;
    } else {
#if MPSGEN_CPU_X86_AVX512
      if constexpr ((isa & 2) != 0) {
        if (cpu_use_avx512()) {
          count_avx512_kernel();
          return &run_avx512;
        }
      }
#endif
#if MPSGEN_CPU_X86_AVX2
      if constexpr ((isa & 1) != 0) {
        if (cpu_use_avx2()) return &run_avx2;
      }
#endif
      return &run_baseline_cold;  // only the variants above are compiled at full speed
    }
  }
};

} // namespace mpsgen::cpu::detail

