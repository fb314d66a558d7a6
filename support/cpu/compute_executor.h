// The CPU backend's launch of a kernel entry's compute kernel: what the CPU host stub calls
// where the MPS stub dispatches on the MPS stream (support/cpu/compute.h has the model).
#pragma once

#include <initializer_list>
#include <string>

#include "compute_host.h"

namespace mpsgen::cpu {

// The CPU pipeline's limits: Apple GPUs' 1024 threads per threadgroup and 32-lane simdgroups.
mpsgen::compute::Limits compute_limits();

// Runs kernel `host_name` over `launch`, buffers[i] bound at [[buffer(i)]], its threadgroups on
// torch's CPU threads. A kernel not found, or one that fails (a barrier some threads skip), raises
// an error naming the op.
void exec_compute_kernel(const mpsgen::compute::ComputeSpec& spec, const std::string& host_name,
                         std::initializer_list<void*> buffers, const mpsgen::compute::LaunchSize& launch);

} // namespace mpsgen::cpu
