// The lookup side of the CPU backend's kernel registry (support/cpu/kernel_registry.h): the
// kernels by host_name and the launch log, for the torch-side executor and the module.
#pragma once
#include <string>
#include <vector>

#include "compute.h"
#include "kernel_registry.h"

namespace mpsgen::cpu {

struct KernelEntry {
  KernelRunFn run;
  int grid_dims;  // 1 or 2: the kernel takes `uint` or `uint2` thread_position_in_grid
  const std::string* host_name;  // its key in the registry
  compute::Kernel compute;       // a compute kernel's (kernel entries); run is null then
};

// nullptr when no kernel has that host_name.
const KernelEntry* find_kernel(const std::string& host_name);
// nullptr when no compute kernel has that host_name.
const KernelEntry* find_compute_kernel(const std::string& host_name);
std::vector<std::string> kernel_names();

// The executor records each launch's host_name; take_launches() returns and
// clears them (tests check which kernel variant a call selected).
void record_launch(const KernelEntry& kernel);
std::vector<std::string> take_launches();

} // namespace mpsgen::cpu
