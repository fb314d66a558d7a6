// The CPU backend's model of a Metal compute launch: a grid of threadgroups, each a set of
// threads in simdgroups of 32 lanes, sharing threadgroup memory and meeting at barriers.
//
// What a kernel unit sees (through the Metal host shim's <metal_compute> and the launcher,
// support/cpu/compute_launch.h); support/cpu/compute_group.cpp runs it. Torch-free and without
// the C++ library's containers, as kernel_registry.h is: every kernel unit includes it.
//
// How a threadgroup runs (docs/cpu-backend.md, "Compute kernels"):
//  - A kernel that never synchronises (no barrier, no simdgroup function: `flat`, which the
//    generator decides from its source and this file checks at run time) runs its threads one
//    after the other in a loop, as the elementwise kernels do.
//  - Any other kernel runs each thread of a group on a fiber of its own (Boost.Context). A
//    thread runs until it reaches a barrier or a simdgroup function, then the next one runs;
//    when every thread still running waits, the scheduler releases what can go on: a
//    simdgroup whose live lanes all wait at the same simdgroup function (the function is then
//    computed over those lanes), or the whole group at a barrier. Lanes at different points
//    of one simdgroup, or threads of one group at different barriers, are refused with an
//    error naming the kernel: Metal leaves both undefined.
//  - Under a shuffled schedule (MPSGEN_CPU_SCHEDULE=shuffle[:SEED], which the tests use), the
//    threads between two synchronisation points run by index, by index from the last, or in a
//    seeded random order, in turn from step to step, so a kernel that reads what another thread
//    writes without a barrier between them gets another value in some step.
#pragma once
#include <cstddef>
#include <cstdint>

namespace mpsgen::cpu::compute {

constexpr uint32_t simdgroup_width = 32;  // Apple GPUs' thread execution width
constexpr uint32_t max_threads_per_threadgroup = 1024;
constexpr uint32_t max_threadgroup_memory = 32768;  // bytes (Apple GPUs: 32 KiB)
constexpr uint32_t max_threadgroup_buffers = 31;    // [[threadgroup(i)]] arguments
constexpr uint32_t max_buffers = 31;                // [[buffer(i)]] arguments

// Metal's thread-position attributes of one thread.
struct Position {
  uint32_t thread_position_in_grid[3];
  uint32_t thread_position_in_threadgroup[3];
  uint32_t threadgroup_position_in_grid[3];
  uint32_t threads_per_threadgroup[3];  // this group's: smaller at the grid's edge (dispatchThreads)
  uint32_t threads_per_grid[3];
  uint32_t threadgroups_per_grid[3];
  uint32_t thread_index_in_threadgroup;
  uint32_t thread_index_in_simdgroup;
  uint32_t simdgroup_index_in_threadgroup;
  uint32_t simdgroups_per_threadgroup;
  uint32_t threads_per_simdgroup;
  uint32_t dispatch_threads_per_threadgroup[3];  // the launch's threadgroup size
};

// One launch: `grid` threads in threadgroups of `group` threads (Metal's dispatchThreads; the
// last group of a dimension may be partial), the [[buffer(i)]] pointers, and the byte length of
// each [[threadgroup(i)]] argument.
struct Launch {
  uint32_t grid[3];
  uint32_t group[3];
  void* const* buffers;
  const uint32_t* threadgroup_lengths;
  uint32_t nthreadgroup;
  // For a checked kernel (below): each buffer's name, bytes and element size, nbuffers of them
  // (a Scalar or a layout array is a buffer too), and each [[threadgroup(i)]]'s name.
  const char* const* buffer_names = nullptr;
  const uint64_t* buffer_bytes = nullptr;
  const uint32_t* buffer_element_sizes = nullptr;
  uint32_t nbuffers = 0;
  const char* const* threadgroup_names = nullptr;
};

// What the launcher makes of one kernel (support/cpu/compute_launch.h).
struct Kernel {
  const char* host_name;
  // Runs one thread: `group_memory[i]` is the group's [[threadgroup(i)]] memory.
  void (*one)(void* const* buffers, void* const* group_memory, const Position& pos);
  // Runs threads [begin, end) of one group in order, where no thread synchronises; null for a
  // kernel the generator found synchronising.
  void (*flat)(void* const* buffers, void* const* group_memory, const Position& first, uint32_t begin,
               uint32_t end);
  // Its checked variant (MPSGEN_CPU_CHECK=1; support/cpu/compute_check.cpp): the same kernel
  // compiled with every memory access reported, registered as `<host_name>!checked`. Its
  // threads run one at a time, on fibers, on one CPU thread.
  bool checked = false;
  // A flat kernel that reads no position but its place in the grid: `flat` may run the threads
  // of several threadgroups of a 1D grid in one call.
  bool grid_only = false;
};

// The kernel as its checked variant registers it.
constexpr Kernel checked(Kernel k) {
  k.flat = nullptr;
  k.checked = true;
  k.grid_only = false;
  return k;
}

// Runs threadgroups [begin, end) (numbered x fastest) of a launch on the calling thread.
// Returns null, or the message of what stopped it (the group's remaining threads do not run).
const char* run_groups(const Kernel& k, const Launch& launch, uint64_t begin, uint64_t end);
uint64_t threadgroup_count(const Launch& launch);

// ---- what the shim's synchronising functions call, from inside a kernel ----
// The position of the thread running now.
const Position& position();
void threadgroup_barrier();
void simdgroup_barrier();

// A simdgroup function: this lane gives the address of its operand and of its result, and
// `arg` (a lane, a delta: what the function takes besides the value). When every live lane
// of the simdgroup has called the same function, `combine` runs once, over the lanes in
// `mask`, and writes each one's result. The addresses stay valid: each lane waits on its fiber.
struct Lanes {
  const void* in[simdgroup_width];
  void* out[simdgroup_width];
  uint32_t param[simdgroup_width];
  uint32_t mask;     // the live lanes (bit i: lane i)
  uint32_t width;    // lanes in this simdgroup (fewer in a group's last one)
};
using Combine = void (*)(const Lanes& lanes);
void simdgroup_call(const char* function, Combine combine, const void* in, void* out, uint32_t arg);

// The checked variant's bookkeeping (support/cpu/compute_check.cpp), called by the scheduler.
namespace check {
void begin_launch(const Kernel& kernel, const Launch& launch);
void begin_group(const Launch& launch, void* const* memory, const uint32_t* group_pos);
// Memory the launcher reads to call the kernel (the scheduler's: positions, the memory table).
void launcher_reads(const void* lo, size_t bytes);
// Thread `who` (group * 1024 + thread) runs now, after `epoch` barriers of its group and
// `simd_epoch` SIMD-group functions of its simdgroup, on the stack [stack_lo, stack_hi).
void enter(uint64_t who, uint32_t epoch, uint32_t simd_epoch, const void* stack_lo, const void* stack_hi);
void leave();
void end_launch();
} // namespace check

// Fails the launch with `message` (run_groups returns the first). On a fiber the thread stops
// there; in a flat loop it goes on, and the launch still fails.
void fail(const char* message);

} // namespace mpsgen::cpu::compute
