#include "kernel_lookup.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
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

namespace {
// MPSGEN_CPU_ISA: "baseline" or "avx2" caps the variants kernels run at that one.
bool isa_allowed(const char* variant) {
  const char* cap = std::getenv("MPSGEN_CPU_ISA");
  if (!cap) return true;
  if (std::strcmp(cap, "baseline") == 0) return false;
  return !(std::strcmp(cap, "avx2") == 0 && std::strcmp(variant, "avx512") == 0);
}
} // namespace

bool cpu_use_avx2() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool use = [] {
    __builtin_cpu_init();  // static initializers may run before libgcc's own
    return isa_allowed("avx2") && __builtin_cpu_supports("avx2") && __builtin_cpu_supports("f16c") &&
           __builtin_cpu_supports("fma");
  }();
  return use;
#else
  return false;
#endif
}

bool cpu_use_avx512() {
#if defined(__x86_64__) && defined(__GNUC__)
  static const bool use = [] {
    __builtin_cpu_init();
    return cpu_use_avx2() && isa_allowed("avx512") && __builtin_cpu_supports("avx512f") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512dq");
  }();
  return use;
#else
  return false;
#endif
}

namespace {
std::atomic<int> n_avx512_kernels{0};
} // namespace
void count_avx512_kernel() { ++n_avx512_kernels; }
int avx512_kernels() { return n_avx512_kernels.load(); }

namespace {
std::atomic<int> n_compiled[2]{{0}, {0}};
} // namespace
void count_compiled_variants(unsigned mask) {
  for (unsigned isa = 1; isa <= 2; ++isa)
    if (mask & (1u << (isa - 1))) ++n_compiled[isa - 1];
}
int compiled_variant_kernels(unsigned isa) { return isa == 1 || isa == 2 ? n_compiled[isa - 1].load() : 0; }

bool register_kernel(const char* host_name, KernelRunFn run, int grid_dims) {
  // Metal rejects a library with two kernels of one host_name; so do we.
  auto [it, added] = registry().emplace(host_name, KernelEntry{run, grid_dims, nullptr, {}});
  if (!added) throw std::logic_error(std::string("duplicate Metal host_name: ") + host_name);
  it->second.host_name = &it->first;  // a map's keys stay where they are
  return true;
}

bool register_compute_kernel(const compute::Kernel& kernel) {
  auto [it, added] = registry().emplace(kernel.host_name, KernelEntry{nullptr, 0, nullptr, kernel});
  if (!added) throw std::logic_error(std::string("duplicate Metal host_name: ") + kernel.host_name);
  it->second.host_name = &it->first;
  return true;
}

const KernelEntry* find_compute_kernel(const std::string& host_name) {
  auto it = registry().find(host_name);
  return it == registry().end() || it->second.run ? nullptr : &it->second;
}

const KernelEntry* find_kernel(const std::string& host_name) {
  auto it = registry().find(host_name);
  return it == registry().end() || !it->second.run ? nullptr : &it->second;
}

std::vector<std::string> kernel_names() {
  std::vector<std::string> names;
  for (const auto& kv : registry()) names.push_back(kv.first);
  return names;
}

namespace {
// The first kLaunchSlots launches since the last take_launches(): a slot is claimed with one
// atomic add, so recording costs a launch next to nothing. Tests read them between calls.
constexpr size_t kLaunchSlots = 4096;
std::array<std::atomic<const KernelEntry*>, kLaunchSlots> launches;
std::atomic<size_t> nlaunches{0};
std::mutex take_mutex;
} // namespace

void record_launch(const KernelEntry& kernel) {
  const size_t slot = nlaunches.fetch_add(1, std::memory_order_relaxed);
  if (slot < kLaunchSlots) launches[slot].store(&kernel, std::memory_order_release);
}

std::vector<std::string> take_launches() {
  std::lock_guard<std::mutex> lock(take_mutex);
  const size_t n = std::min(nlaunches.exchange(0), kLaunchSlots);
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) {
    if (const KernelEntry* k = launches[i].exchange(nullptr, std::memory_order_acquire)) names.push_back(*k->host_name);
  }
  return names;
}

} // namespace mpsgen::cpu
