#include "kernel_registry.h"

#include <map>
#include <mutex>
#include <stdexcept>
#include <utility>

namespace mpsgen::cpu {
namespace {
std::map<std::string, KernelEntry>& registry() {
  static std::map<std::string, KernelEntry> kernels;  // built during static init
  return kernels;
}
} // namespace

bool register_kernel(const char* host_name, KernelRunFn run, int grid_dims) {
  // Metal rejects a library with two kernels of one host_name; so do we.
  if (!registry().emplace(host_name, KernelEntry{run, grid_dims}).second) {
    throw std::logic_error(std::string("duplicate Metal host_name: ") + host_name);
  }
  return true;
}

const KernelEntry* find_kernel(const std::string& host_name) {
  auto it = registry().find(host_name);
  return it == registry().end() ? nullptr : &it->second;
}

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const auto& kv : registry()) names.push_back(kv.first);
  return names;
}

namespace {
std::mutex launches_mutex;
std::vector<std::string> launches;
} // namespace

void record_launch(const std::string& host_name) {
  std::lock_guard<std::mutex> lock(launches_mutex);
  if (launches.size() < 4096) launches.push_back(host_name);  // bounded: tests read it
}

std::vector<std::string> take_launches() {
  std::lock_guard<std::mutex> lock(launches_mutex);
  return std::exchange(launches, {});
}

} // namespace mpsgen::cpu
