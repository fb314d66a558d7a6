#include "compute_executor.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <mutex>
#include <vector>

#include "compute.h"
#include "kernel_lookup.h"

namespace mpsgen::cpu {

mpsgen::compute::Limits compute_limits() {
  return {compute::max_threads_per_threadgroup, compute::simdgroup_width};
}

void exec_compute_kernel(const mpsgen::compute::ComputeSpec& spec, const std::string& host_name,
                         std::initializer_list<void*> buffers, const mpsgen::compute::LaunchSize& launch) {
  const KernelEntry* entry = find_compute_kernel(host_name);
  TORCH_CHECK_NOT_IMPLEMENTED(entry, spec.name, " (", spec.origin, "): no compute kernel named ", host_name,
                              " in the CPU backend's library");
  record_launch(*entry);
  if (launch.empty()) return;
  std::vector<void*> bound(buffers);
  compute::Launch l{{launch.grid[0], launch.grid[1], launch.grid[2]},
                    {launch.group[0], launch.group[1], launch.group[2]},
                    bound.data(),
                    launch.group_memory.data(),
                    uint32_t(launch.group_memory.size())};
  const uint64_t groups = compute::threadgroup_count(l);
  const uint64_t threads = uint64_t(l.group[0]) * l.group[1] * l.group[2];
  std::mutex mutex;
  std::string failure;
  // groups of a few thousand threads a task: a synchronising group costs about 200 ns a thread
  at::parallel_for(0, int64_t(groups), std::max<int64_t>(1, int64_t(16384 / threads)), [&](int64_t b, int64_t e) {
    if (const char* error = compute::run_groups(entry->compute, l, uint64_t(b), uint64_t(e))) {
      std::lock_guard<std::mutex> lock(mutex);
      if (failure.empty()) failure = error;
    }
  });
  TORCH_CHECK(failure.empty(), spec.name, " (", spec.origin, "): ", failure);
}

} // namespace mpsgen::cpu
