#include "compute_executor.h"

#include <ATen/Parallel.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <vector>

#include "compute.h"
#include "kernel_lookup.h"

namespace mpsgen::cpu {

mpsgen::compute::Limits compute_limits() {
  return {compute::max_threads_per_threadgroup, compute::simdgroup_width};
}

namespace {
bool checking() {
  static const bool on = [] {
    const char* v = std::getenv("MPSGEN_CPU_CHECK");
    return v && *v && std::string(v) != "0";
  }();
  return on;
}
} // namespace

void exec_compute_kernel(const mpsgen::compute::ComputeSpec& spec, const std::string& host_name,
                         std::initializer_list<BufferArg> buffers, const mpsgen::compute::LaunchSize& launch,
                         std::initializer_list<const char*> threadgroup_names) {
  const KernelEntry* plain = find_compute_kernel(host_name);
  TORCH_CHECK_NOT_IMPLEMENTED(plain, spec.name, " (", spec.origin, "): no compute kernel named ", host_name,
                              " in the CPU backend's library");
  record_launch(*plain);
  const KernelEntry* entry = plain;
  if (checking()) {
    entry = find_compute_kernel(host_name + "!checked");
    TORCH_CHECK(entry, spec.name, " (", spec.origin, "): MPSGEN_CPU_CHECK=1, but this build has no checked variant of ",
                host_name, " (it is made on Linux, with clang and objcopy)");
  }
  if (launch.empty()) return;
  std::vector<void*> bound;
  std::vector<const char*> names;
  std::vector<uint64_t> bytes;
  std::vector<uint32_t> elements;
  for (const BufferArg& b : buffers) {
    bound.push_back(b.data);
    names.push_back(b.name);
    bytes.push_back(b.bytes);
    elements.push_back(b.element);
  }
  std::vector<const char*> group_names(threadgroup_names);
  compute::Launch l{{launch.grid[0], launch.grid[1], launch.grid[2]},
                    {launch.group[0], launch.group[1], launch.group[2]},
                    bound.data(),
                    launch.group_memory.data(),
                    uint32_t(launch.group_memory.size()),
                    names.data(),
                    bytes.data(),
                    elements.data(),
                    uint32_t(bound.size()),
                    group_names.size() == launch.group_memory.size() ? group_names.data() : nullptr};
  const uint64_t groups = compute::threadgroup_count(l);
  if (entry->compute.checked) {  // one CPU thread: the checks' record of each byte is its own
    const char* error = compute::run_groups(entry->compute, l, 0, groups);
    TORCH_CHECK(!error, spec.name, " (", spec.origin, "): ", error ? error : "");
    return;
  }
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
