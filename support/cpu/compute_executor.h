// The CPU backend's launch of a kernel entry's compute kernel: what the CPU host stub calls
// where the MPS stub dispatches on the MPS stream (support/cpu/compute.h has the model).
#pragma once

#include <initializer_list>
#include <string>

#include "compute_host.h"

namespace mpsgen::cpu {

// The CPU pipeline's limits: Apple GPUs' 1024 threads per threadgroup and 32-lane simdgroups.
mpsgen::compute::Limits compute_limits();

// What the host binds at one [[buffer(i)]]: its data, and for the checked variant its size,
// its element's and its name.
struct BufferArg {
  void* data;
  uint64_t bytes;
  uint32_t element;
  const char* name;
};

// Runs kernel `host_name` over `launch`, buffers[i] bound at [[buffer(i)]], its threadgroups on
// torch's CPU threads. A kernel not found, or one that fails (a barrier some threads skip), raises
// an error naming the op. With MPSGEN_CPU_CHECK=1 it runs the kernel's checked variant
// (support/cpu/compute_check.cpp), whose races and out-of-bounds accesses raise, naming the
// buffer (`threadgroup_names`: the [[threadgroup(i)]] memories').
void exec_compute_kernel(const mpsgen::compute::ComputeSpec& spec, const std::string& host_name,
                         std::initializer_list<BufferArg> buffers, const mpsgen::compute::LaunchSize& launch,
                         std::initializer_list<const char*> threadgroup_names = {});

} // namespace mpsgen::cpu
