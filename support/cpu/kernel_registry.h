// Kernel registry of the CPU backend, keyed by Metal host_name: what a kernel translation
// unit calls to register its kernels (support/cpu/kernel_lookup.h has the lookup side).
//
// Torch-free and without the C++ library's strings and containers on purpose: every kernel
// unit includes it (where the Metal host shim has turned `device`, `kernel`, ... into
// macros), as check-metal's strict compile of each op does, and Metal has neither: without
// <string> and <vector>, that compile reads 28,700 lines where it read 44,000 (0.46 -> 0.28 s).
#pragma once
#include <cstdint>

namespace mpsgen::cpu {

// Runs threads [begin, end) of a launch. Thread t maps to position t of a 1D
// grid, or to (t % grid_x, t / grid_x) of a 2D grid. `buffers[i]` points at
// what Metal would bind at [[buffer(i)]]: a tensor's data or a small constant.
using KernelRunFn = void (*)(void* const* buffers, uint64_t begin, uint64_t end, uint32_t grid_x);

// Whether kernels run their AVX2 + F16C (+ FMA) variant, and those that have one their
// AVX-512 variant (support/cpu/kernel_launch.h): when this x86-64 CPU has those, unless
// MPSGEN_CPU_ISA=baseline or =avx2 caps the variant (the tests compare them). Decided once,
// at the first kernel's registration.
bool cpu_use_avx2();
bool cpu_use_avx512();
// How many registered kernels run their AVX-512 variant (none in a build whose kernels g++
// compiled: they have none).
void count_avx512_kernel();
int avx512_kernels();
// How many registered kernels have an AVX2 (isa 1) or AVX-512 (isa 2) variant compiled, whether
// or not this CPU runs it (MPSGEN_CPU_VARIANTS decides what a build compiles): python -m
// mpsgen.variants compares only the variants a build holds.
void count_compiled_variants(unsigned mask);
int compiled_variant_kernels(unsigned isa);

// Called from static initializers of the kernel translation units.
bool register_kernel(const char* host_name, KernelRunFn run, int grid_dims);
namespace compute {
struct Kernel;
}
// A compute kernel of a kernel entry (support/cpu/compute_launch.h).
bool register_compute_kernel(const compute::Kernel& kernel);

} // namespace mpsgen::cpu
