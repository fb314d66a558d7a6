// The checked variant of compute kernels (MPSGEN_CPU_CHECK=1): races and out-of-bounds
// accesses fail on Linux, naming the kernel, the buffer and the element.
//
// The build compiles each compute kernel unit a second time with clang's ThreadSanitizer
// instrumentation (-fsanitize=thread) and without its runtime: every load, store and atomic
// operation of the kernel's code calls one of the __tsan_* functions below (codegen/build.py,
// the `_checked_kernels` units, their symbols made local so they cannot stand in for the plain
// kernels'). They check each access of the thread running now (support/cpu/compute_group.cpp
// says which, and where its stack is):
//  - inside one of the launch's buffers or a [[threadgroup(i)]] memory: against the earlier
//    accesses to each byte. Two threads conflict where one writes and not both are atomic, and
//    nothing orders them: threads of one group are ordered by a barrier between them, lanes of one
//    simdgroup also by a SIMD-group function between them, threads of different groups never.
//    A conflict is a race (a non-atomic accumulation, a read of what another thread writes with
//    no barrier between).
//  - outside every buffer but within 64 KiB of one's ends: out of bounds of that buffer.
//  - the thread's own stack, and what the launcher reads to bind the kernel's arguments (the
//    buffer table, the thread's position): not checked. Anything else (a threadgroup variable, a constant
//    table): checked for races within the group, as threadgroup memory.
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "compute.h"

namespace mpsgen::cpu::compute::check {
namespace {

constexpr uintptr_t nearby = 64 * 1024;

struct Region {
  uintptr_t lo, hi;
  std::string name;
  uint32_t element;
  bool group;  // threadgroup memory (its accesses are the group's)
};

struct Access {
  uint64_t who = ~uint64_t(0);  // group * max_threads_per_threadgroup + thread; none yet
  uint32_t epoch = 0, simd_epoch = 0;
  bool write = false, atomic = false;
};

struct Shadow {
  Access read, write;  // the last read and the last write of the byte
};

struct State {
  bool launch = false, running = false;
  std::string kernel;
  std::vector<Region> regions;
  std::vector<std::pair<uintptr_t, uintptr_t>> launcher;  // what the launcher reads: arguments, positions
  std::unordered_map<uintptr_t, Shadow> device, group;
  Access now;
  uintptr_t stack_lo = 0, stack_hi = 0;
  uint32_t group_x = 0, group_y = 0, group_z = 0;
};
thread_local State state;

uint32_t thread_of(uint64_t who) { return uint32_t(who % max_threads_per_threadgroup); }

// Whether nothing orders `a` before the access running now.
bool unordered(const Access& a) {
  const Access& b = state.now;
  if (a.who == ~uint64_t(0) || a.who == b.who) return false;
  if (a.who / max_threads_per_threadgroup != b.who / max_threads_per_threadgroup) return true;
  if (a.epoch != b.epoch) return false;
  return !(thread_of(a.who) / simdgroup_width == thread_of(b.who) / simdgroup_width && a.simd_epoch != b.simd_epoch);
}

std::string where(const Region* r, uintptr_t a) {
  if (!r) return "memory shared by the group (a threadgroup variable) at " + std::to_string(a);
  const uintptr_t offset = a - r->lo;
  return "'" + r->name + "' at element " + std::to_string(offset / r->element) +
         (r->element > 1 && offset % r->element ? " (byte " + std::to_string(offset % r->element) + ")" : "");
}

std::string group_name() {
  return "threadgroup (" + std::to_string(state.group_x) + ", " + std::to_string(state.group_y) + ", " +
         std::to_string(state.group_z) + ")";
}

void race(const Access& other, const Region* r, uintptr_t a) {
  const bool same_group = other.who / max_threads_per_threadgroup == state.now.who / max_threads_per_threadgroup;
  const std::string them = same_group ? "thread " + std::to_string(thread_of(other.who))
                                      : "a thread of another threadgroup";
  fail((std::string("race: thread ") + std::to_string(thread_of(state.now.who)) + " of " + group_name() + " " +
        (state.now.write ? "writes" : "reads") + " " + where(r, a) + ", which " + them + " " +
        (other.write ? "wrote" : "read") + " with nothing between them to order the two" +
        (same_group ? " (a threadgroup_barrier, or an atomic for both)" : " (only an atomic for both: threadgroups run in no order)"))
           .c_str());
}

void access(const void* p, size_t size, bool write, bool atomic) {
  if (!state.running) return;
  const uintptr_t lo = reinterpret_cast<uintptr_t>(p);
  if (lo >= state.stack_lo && lo < state.stack_hi) return;  // the thread's own
  for (const auto& [b, e] : state.launcher) {
    if (lo >= b && lo < e) return;
  }
  const Region* r = nullptr;
  for (const Region& region : state.regions) {
    if (lo >= region.lo && lo < region.hi) r = &region;
  }
  if (!r) {
    for (const Region& region : state.regions) {
      if (!region.group && ((lo >= region.hi && lo < region.hi + nearby) || (lo < region.lo && lo + nearby >= region.lo))) {
        const int64_t offset = int64_t(lo) - int64_t(region.lo);
        fail((std::string("out of bounds: thread ") + std::to_string(thread_of(state.now.who)) + " of " + group_name() +
              " " + (write ? "writes" : "reads") + " '" + region.name + "' at element " +
              std::to_string(offset >= 0 ? offset / int64_t(region.element) : -((-offset + region.element - 1) / region.element)) +
              ", which has " + std::to_string((region.hi - region.lo) / region.element) + " elements")
                 .c_str());
        return;
      }
    }
  }
  state.now.write = write;
  state.now.atomic = atomic;
  auto& shadow = r && !r->group ? state.device : state.group;
  for (uintptr_t a = lo; a < lo + size; ++a) {
    Shadow& s = shadow[a];
    auto conflicts = [&](const Access& other) {
      return unordered(other) && (other.write || write) && !(other.atomic && atomic);
    };
    if (conflicts(s.write)) return race(s.write, r, a);
    if (write && conflicts(s.read)) return race(s.read, r, a);
    (write ? s.write : s.read) = state.now;
  }
}

} // namespace

void begin_launch(const Kernel& kernel, const Launch& launch) {
  state = State{};
  state.launch = true;
  state.kernel = kernel.host_name;
  launcher_reads(launch.buffers, launch.nbuffers * sizeof(void*));
  for (uint32_t i = 0; i < launch.nbuffers; ++i) {
    const uintptr_t lo = reinterpret_cast<uintptr_t>(launch.buffers[i]);
    if (lo && launch.buffer_bytes[i]) {
      state.regions.push_back({lo, lo + launch.buffer_bytes[i], launch.buffer_names[i],
                               std::max<uint32_t>(1, launch.buffer_element_sizes[i]), false});
    }
  }
}

void launcher_reads(const void* lo, size_t bytes) {
  state.launcher.emplace_back(reinterpret_cast<uintptr_t>(lo), reinterpret_cast<uintptr_t>(lo) + bytes);
}

void begin_group(const Launch& launch, void* const* memory, const uint32_t* group_pos) {
  state.group.clear();
  state.regions.erase(std::remove_if(state.regions.begin(), state.regions.end(), [](const Region& r) { return r.group; }),
                      state.regions.end());
  for (uint32_t i = 0; i < launch.nthreadgroup; ++i) {
    const uintptr_t lo = reinterpret_cast<uintptr_t>(memory[i]);
    const std::string name = launch.threadgroup_names ? launch.threadgroup_names[i] : "threadgroup(" + std::to_string(i) + ")";
    state.regions.push_back({lo, lo + launch.threadgroup_lengths[i], name, 1, true});
  }
  state.group_x = group_pos[0];
  state.group_y = group_pos[1];
  state.group_z = group_pos[2];
}

void enter(uint64_t who, uint32_t epoch, uint32_t simd_epoch, const void* stack_lo, const void* stack_hi) {
  state.running = state.launch;
  state.now = Access{who, epoch, simd_epoch, false, false};
  state.stack_lo = reinterpret_cast<uintptr_t>(stack_lo);
  state.stack_hi = reinterpret_cast<uintptr_t>(stack_hi);
}

void leave() { state.running = false; }

void end_launch() { state = State{}; }

} // namespace mpsgen::cpu::compute::check

// ---- what ThreadSanitizer's instrumentation calls ----------------------------------------
using mpsgen::cpu::compute::check::access;

extern "C" {
void __tsan_init() {}
void __tsan_func_entry(void*) {}
void __tsan_func_exit() {}
#define MPSGEN_TSAN_ACCESS(n)                                                          \
  void __tsan_read##n(void* p) { access(p, n, false, false); }                         \
  void __tsan_write##n(void* p) { access(p, n, true, false); }                         \
  void __tsan_unaligned_read##n(void* p) { access(p, n, false, false); }               \
  void __tsan_unaligned_write##n(void* p) { access(p, n, true, false); }               \
  void __tsan_volatile_read##n(void* p) { access(p, n, false, false); }                \
  void __tsan_volatile_write##n(void* p) { access(p, n, true, false); }
MPSGEN_TSAN_ACCESS(1)
MPSGEN_TSAN_ACCESS(2)
MPSGEN_TSAN_ACCESS(4)
MPSGEN_TSAN_ACCESS(8)
MPSGEN_TSAN_ACCESS(16)
#undef MPSGEN_TSAN_ACCESS
void __tsan_read_range(void* p, unsigned long n) { access(p, n, false, false); }
void __tsan_write_range(void* p, unsigned long n) { access(p, n, true, false); }
void* __tsan_memcpy(void* d, const void* s, unsigned long n) {
  access(s, n, false, false);
  access(d, n, true, false);
  return std::memcpy(d, s, n);
}
void* __tsan_memmove(void* d, const void* s, unsigned long n) {
  access(s, n, false, false);
  access(d, n, true, false);
  return std::memmove(d, s, n);
}
void* __tsan_memset(void* d, int c, unsigned long n) {
  access(d, n, true, false);
  return std::memset(d, c, n);
}
void __tsan_atomic_thread_fence(int) { __atomic_thread_fence(__ATOMIC_SEQ_CST); }
void __tsan_atomic_signal_fence(int) {}

// Atomics: the operation itself, relaxed (Metal's only order), and the access, atomic.
#define MPSGEN_TSAN_ATOMIC(n, T)                                                                          \
  T __tsan_atomic##n##_load(const volatile T* a, int) {                                                  \
    access(const_cast<const T*>(a), n / 8, false, true);                                                 \
    return __atomic_load_n(a, __ATOMIC_RELAXED);                                                         \
  }                                                                                                       \
  void __tsan_atomic##n##_store(volatile T* a, T v, int) {                                                \
    access(const_cast<T*>(a), n / 8, true, true);                                                        \
    __atomic_store_n(a, v, __ATOMIC_RELAXED);                                                             \
  }                                                                                                       \
  T __tsan_atomic##n##_exchange(volatile T* a, T v, int) {                                               \
    access(const_cast<T*>(a), n / 8, true, true);                                                        \
    return __atomic_exchange_n(a, v, __ATOMIC_RELAXED);                                                  \
  }                                                                                                       \
  MPSGEN_TSAN_RMW(n, T, fetch_add, __atomic_fetch_add)                                                    \
  MPSGEN_TSAN_RMW(n, T, fetch_sub, __atomic_fetch_sub)                                                    \
  MPSGEN_TSAN_RMW(n, T, fetch_and, __atomic_fetch_and)                                                    \
  MPSGEN_TSAN_RMW(n, T, fetch_or, __atomic_fetch_or)                                                      \
  MPSGEN_TSAN_RMW(n, T, fetch_xor, __atomic_fetch_xor)                                                    \
  MPSGEN_TSAN_RMW(n, T, fetch_nand, __atomic_fetch_nand)                                                  \
  int __tsan_atomic##n##_compare_exchange_strong(volatile T* a, T* e, T v, int, int) {                    \
    access(const_cast<T*>(a), n / 8, true, true);                                                        \
    return __atomic_compare_exchange_n(a, e, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);              \
  }                                                                                                       \
  int __tsan_atomic##n##_compare_exchange_weak(volatile T* a, T* e, T v, int, int) {                      \
    access(const_cast<T*>(a), n / 8, true, true);                                                        \
    return __atomic_compare_exchange_n(a, e, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED);               \
  }                                                                                                       \
  T __tsan_atomic##n##_compare_exchange_val(volatile T* a, T e, T v, int, int) {                          \
    access(const_cast<T*>(a), n / 8, true, true);                                                        \
    __atomic_compare_exchange_n(a, &e, v, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED);                    \
    return e;                                                                                             \
  }
#define MPSGEN_TSAN_RMW(n, T, op, builtin)                                                                \
  T __tsan_atomic##n##_##op(volatile T* a, T v, int) {                                                    \
    access(const_cast<T*>(a), n / 8, true, true);                                                        \
    return builtin(a, v, __ATOMIC_RELAXED);                                                              \
  }
MPSGEN_TSAN_ATOMIC(8, uint8_t)
MPSGEN_TSAN_ATOMIC(16, uint16_t)
MPSGEN_TSAN_ATOMIC(32, uint32_t)
MPSGEN_TSAN_ATOMIC(64, uint64_t)
#undef MPSGEN_TSAN_RMW
#undef MPSGEN_TSAN_ATOMIC
}
