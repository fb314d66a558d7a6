// Kernel registry of the CPU backend, keyed by Metal host_name.
//
// Torch-free on purpose: it is included both by kernel translation units
// (where the Metal host shim has turned `device`, `kernel`, ... into macros)
// and by the torch-side executor.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace mpsgen::cpu {

// Runs threads [begin, end) of a launch. Thread t maps to position t of a 1D
// grid, or to (t % grid_x, t / grid_x) of a 2D grid. `buffers[i]` points at
// what Metal would bind at [[buffer(i)]]: a tensor's data or a small constant.
using KernelRunFn = void (*)(void* const* buffers, uint64_t begin, uint64_t end, uint32_t grid_x);

struct KernelEntry {
  KernelRunFn run;
  int grid_dims;  // 1 or 2: the kernel takes `uint` or `uint2` thread_position_in_grid
  const std::string* host_name;  // its key in the registry
};

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

// Called from static initializers of the kernel translation units.
bool register_kernel(const char* host_name, KernelRunFn run, int grid_dims);
// nullptr when no kernel has that host_name.
const KernelEntry* find_kernel(const std::string& host_name);
std::vector<std::string> kernel_names();

// The executor records each launch's host_name; take_launches() returns and
// clears them (tests check which kernel variant a call selected).
void record_launch(const KernelEntry& kernel);
std::vector<std::string> take_launches();

} // namespace mpsgen::cpu
