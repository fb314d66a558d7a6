// Runs the threadgroups of a compute launch (support/cpu/compute.h says how).
//
// Each thread of a synchronising kernel runs on a fiber of Boost.Context (fcontext: a switch
// is a few registers saved and restored, 6.3 ns on an AMD EPYC family 25 model 1, against
// glibc swapcontext's 1.2 us and its signal-mask system call: two fibers resuming each other 2e6 times).
// The fibers of one group run on the calling thread, one at a time, so threadgroup memory and
// the scheduler's state need no locks; the groups of a launch run on several threads
// (support/cpu/compute_executor.cpp), each with stacks of its own.
#include "compute.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#if __has_include(<boost/context/fiber.hpp>) && !defined(MPSGEN_NO_FIBERS)
#include <boost/context/fiber.hpp>
#define MPSGEN_HAVE_FIBERS 1
#else
#define MPSGEN_HAVE_FIBERS 0
#endif

namespace mpsgen::cpu::compute {
namespace {

enum class State : uint8_t { ready, barrier, simdgroup, done, failed };

// MPSGEN_CPU_SCHEDULE: "index" (the default: threads by index between synchronisation points)
// or "shuffle" / "shuffle:SEED" (a seeded random order, the same for a group whichever thread
// runs it).
struct Schedule {
  bool shuffle = false;
  uint64_t seed = 0;
};
const Schedule& schedule() {
  static const Schedule s = [] {
    Schedule r;
    const char* v = std::getenv("MPSGEN_CPU_SCHEDULE");
    if (v && std::strncmp(v, "shuffle", 7) == 0) {
      r.shuffle = true;
      if (v[7] == ':') r.seed = std::strtoull(v + 8, nullptr, 10);
    }
    return r;
  }();
  return s;
}

uint64_t splitmix64(uint64_t& x) {
  uint64_t z = (x += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// `order` in a random order drawn from `state` (Fisher-Yates).
void shuffle(std::vector<uint32_t>& order, uint64_t& state) {
  for (size_t i = order.size(); i > 1; --i) {
    const size_t j = size_t(splitmix64(state) % i);
    std::swap(order[i - 1], order[j]);
  }
}

// The order of a shuffled schedule's step: by index, by index from the last, or random, in turn
// from step to step (starting where the group's seed says). A race shows in one order and not in
// another: a thread that reads before the writers of a later index shows in the first, one that
// reads after them in the second.
void arrange(std::vector<uint32_t>& order, uint64_t& rng, uint32_t step) {
  switch (step % 3) {
    case 0:
      break;
    case 1:
      std::reverse(order.begin(), order.end());
      break;
    default:
      shuffle(order, rng);
  }
}

struct Lane;

// The launch state of the calling thread: what the shim's functions reach through position(),
// threadgroup_barrier() and simdgroup_call().
struct Current {
  Lane* lane = nullptr;          // the fiber running now (null in a flat loop)
  const Position* pos = nullptr;  // the thread running now
  const char* kernel = "";
  std::string error;             // the launch's first failure
};
thread_local Current current;

void record(const std::string& message) {
  if (current.error.empty()) current.error = message;
}

std::string coords(const uint32_t* v) {
  return "(" + std::to_string(v[0]) + ", " + std::to_string(v[1]) + ", " + std::to_string(v[2]) + ")";
}

#if MPSGEN_HAVE_FIBERS
namespace ctx = boost::context;

// The stacks of one thread's fibers, one per thread of a group, made once: 256 KiB each, of which
// a kernel touches a few pages (only those are backed by memory), below a guard page, so a
// kernel that overflows its stack faults instead of writing into its neighbour's.
constexpr size_t stack_size = 256 * 1024;
struct Stacks {
  char* base = nullptr;
  size_t page = 0;
  Stacks() {
    page = size_t(sysconf(_SC_PAGESIZE));
    const size_t total = max_threads_per_threadgroup * (stack_size + page);
    void* p = mmap(nullptr, total, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) throw std::bad_alloc();
    base = static_cast<char*>(p);
    for (uint32_t i = 0; i < max_threads_per_threadgroup; ++i) mprotect(base + i * (stack_size + page), page, PROT_NONE);
  }
  ~Stacks() { munmap(base, max_threads_per_threadgroup * (stack_size + page)); }
  const char* low(uint32_t i) const { return base + i * (stack_size + page) + page; }
  ctx::stack_context stack(uint32_t i) const {
    ctx::stack_context sc;
    sc.size = stack_size;
    sc.sp = base + i * (stack_size + page) + page + stack_size;  // the top: stacks grow down
    return sc;
  }
};

// Boost.Context's StackAllocator over one of those stacks (thread i of a group always runs on
// stack i). A fiber abandoned when its launch fails is never resumed nor destroyed: its frames
// (the kernel's, the shim's) own nothing, and its stack is the next group's.
struct LaneStack {
  const Stacks* stacks;
  uint32_t index;
  ctx::stack_context allocate() { return stacks->stack(index); }
  void deallocate(ctx::stack_context&) noexcept {}
};

struct Lane {
  Position pos;
  State state = State::ready;
  const char* function = nullptr;  // the simdgroup function it waits at
  Combine combine = nullptr;
  const void* in = nullptr;
  void* out = nullptr;
  uint32_t arg = 0;
  const void* site = nullptr;  // where in the kernel it called the function
  uint32_t epoch = 0, simd_epoch = 0;  // the barriers and SIMD-group functions it went through
  bool started = false;
  ctx::fiber fiber;  // the thread, while it waits
  ctx::fiber back;   // the scheduler, while the thread runs
};

struct Slot {
  alignas(Lane) unsigned char bytes[sizeof(Lane)];
};

// Back to the scheduler, with this lane's state already set; returns when it is resumed.
void suspend(Lane& lane) {
  lane.back = std::move(lane.back).resume();
}
#else
struct Lane {};
#endif

const char* describe(State s, const char* function) {
  switch (s) {
    case State::barrier:
      return "threadgroup_barrier";
    case State::simdgroup:
      return function;
    case State::done:
      return "the end of the kernel";
    default:
      return "a running thread";
  }
}

void fill_position(Position& p, const Launch& launch, const uint32_t* group_pos, const uint32_t* size,
                   uint32_t t) {
  const uint32_t in[3] = {t % size[0], (t / size[0]) % size[1], t / (size[0] * size[1])};
  const uint32_t nthreads = size[0] * size[1] * size[2];
  for (int d = 0; d < 3; ++d) {
    p.thread_position_in_threadgroup[d] = in[d];
    p.threadgroup_position_in_grid[d] = group_pos[d];
    p.threads_per_threadgroup[d] = size[d];
    p.threads_per_grid[d] = launch.grid[d];
    p.threadgroups_per_grid[d] = (launch.grid[d] + launch.group[d] - 1) / launch.group[d];
    p.thread_position_in_grid[d] = group_pos[d] * launch.group[d] + in[d];
    p.dispatch_threads_per_threadgroup[d] = launch.group[d];
  }
  p.thread_index_in_threadgroup = t;
  p.thread_index_in_simdgroup = t % simdgroup_width;
  p.simdgroup_index_in_threadgroup = t / simdgroup_width;
  p.simdgroups_per_threadgroup = (nthreads + simdgroup_width - 1) / simdgroup_width;
  p.threads_per_simdgroup = simdgroup_width;
}

// The group's [[threadgroup(i)]] memory, reused by the calling thread's next group. Metal leaves
// it undefined at a group's start; under the shuffled schedule every byte is 0xff (NaN, -1), so a
// kernel reading memory no thread of its group wrote does not find the last group's values.
struct Arena {
  std::vector<unsigned char> bytes;
  void* pointers[max_threadgroup_buffers] = {};
  void** bind(const Launch& launch) {
    size_t total = 0;
    for (uint32_t i = 0; i < launch.nthreadgroup; ++i) total += (launch.threadgroup_lengths[i] + 15) / 16 * 16;
    if (bytes.size() < total + 16) bytes.resize(total + 16);
    unsigned char* p = bytes.data() + (16 - reinterpret_cast<uintptr_t>(bytes.data()) % 16) % 16;
    for (uint32_t i = 0; i < launch.nthreadgroup; ++i) {
      pointers[i] = p;
      p += (launch.threadgroup_lengths[i] + 15) / 16 * 16;
    }
    if (schedule().shuffle) std::memset(bytes.data(), 0xff, bytes.size());
    return pointers;
  }
};
thread_local Arena arena;

#if MPSGEN_HAVE_FIBERS
thread_local std::unique_ptr<Stacks> stacks;

// Runs the fibers of one group until every thread has ended or the group cannot go on.
void run_fibers(const Kernel& kernel, const Launch& launch, void* const* tg, const uint32_t* group_pos,
                const uint32_t* size, uint64_t& rng, uint64_t group_index) {
  const uint32_t n = size[0] * size[1] * size[2];
  if (!stacks) stacks = std::make_unique<Stacks>();
  // Lanes live in storage without destructors: a fiber abandoned by a failed group is dropped.
  thread_local std::unique_ptr<Slot[]> storage;
  if (!storage) storage.reset(new Slot[max_threads_per_threadgroup]);
  Lane* lanes = reinterpret_cast<Lane*>(storage.get());
  for (uint32_t t = 0; t < n; ++t) {
    Lane* lane = new (&lanes[t]) Lane();
    fill_position(lane->pos, launch, group_pos, size, t);
  }
  if (kernel.checked) {
    check::launcher_reads(lanes, n * sizeof(Lane));
    check::launcher_reads(tg, max_threadgroup_buffers * sizeof(void*));
  }
  auto destroy = [&](bool all_done) {
    // Ended fibers hold nothing; a failed group's are abandoned (LaneStack).
    for (uint32_t t = 0; t < n; ++t) {
      if (all_done) lanes[t].~Lane();
    }
  };
  std::vector<uint32_t> order;
  order.reserve(n);
  uint32_t ended = 0, phase = uint32_t(rng);
  while (true) {
    order.clear();
    for (uint32_t t = 0; t < n; ++t) {
      if (lanes[t].state == State::ready) order.push_back(t);
    }
    if (schedule().shuffle) arrange(order, rng, phase++);
    for (uint32_t t : order) {
      Lane& lane = lanes[t];
      current.lane = &lane;
      current.pos = &lane.pos;
      if (!lane.started) {
        lane.started = true;
        lane.fiber = ctx::fiber(std::allocator_arg, LaneStack{stacks.get(), t}, [&kernel, &lane, tg, &launch](ctx::fiber&& back) {
          lane.back = std::move(back);
          kernel.one(launch.buffers, tg, lane.pos);
          lane.state = State::done;
          return std::move(lane.back);
        });
      }
      if (kernel.checked) {
        check::enter(group_index * max_threads_per_threadgroup + t, lane.epoch, lane.simd_epoch, stacks->low(t),
                     stacks->low(t) + stack_size);
      }
      lane.fiber = std::move(lane.fiber).resume();
      if (kernel.checked) check::leave();
      current.lane = nullptr;
      if (lane.state == State::done) ++ended;
      if (lane.state == State::failed || !current.error.empty()) {
        destroy(false);
        return;
      }
    }
    if (ended == n) {
      destroy(true);
      return;
    }
    // Every live thread waits. In each simdgroup, the lanes waiting at one simdgroup function
    // (one call of it: the same function from the same place) are that call's active lanes, as
    // on a GPU, where lanes that branched elsewhere or returned are inactive: it runs over them
    // (c10/metal/reduction_utils.h's threadgroup_sum calls simd_sum on the first lanes alone).
    bool progress = false;
    for (uint32_t s = 0; s * simdgroup_width < n; ++s) {
      const uint32_t first = s * simdgroup_width, width = n - first < simdgroup_width ? n - first : simdgroup_width;
      uint32_t waiting = 0;
      for (uint32_t l = 0; l < width; ++l) waiting |= uint32_t(lanes[first + l].state == State::simdgroup) << l;
      while (waiting) {
        const Lane& at = lanes[first + __builtin_ctz(waiting)];
        Lanes call{};
        call.width = width;
        for (uint32_t l = 0; l < width; ++l) {
          Lane& lane = lanes[first + l];
          if (!(waiting >> l & 1u) || lane.function != at.function || lane.combine != at.combine || lane.site != at.site) {
            continue;
          }
          call.mask |= 1u << l;
          call.in[l] = lane.in;
          call.out[l] = lane.out;
          call.param[l] = lane.arg;
        }
        if (at.combine) at.combine(call);
        for (uint32_t l = 0; l < width; ++l) {
          if (call.mask >> l & 1u) {
            lanes[first + l].state = State::ready;
            ++lanes[first + l].simd_epoch;
          }
        }
        waiting &= ~call.mask;
        progress = true;
      }
    }
    if (progress) continue;
    uint32_t waiting = 0;
    for (uint32_t t = 0; t < n; ++t) waiting += lanes[t].state == State::barrier;
    if (waiting == n) {
      for (uint32_t t = 0; t < n; ++t) {
        lanes[t].state = State::ready;
        ++lanes[t].epoch;
      }
      continue;
    }
    // Threads that cannot go on: name two that disagree.
    uint32_t a = 0;
    while (lanes[a].state == State::done) ++a;
    uint32_t b = 0;
    while (b < n && (lanes[b].state == lanes[a].state && lanes[b].function == lanes[a].function)) ++b;
    if (b == n) b = 0;  // unreachable: they would have been released
    record(std::string(kernel.host_name) + ": thread " + std::to_string(a) + " of threadgroup " + coords(group_pos) +
           " waits at " + describe(lanes[a].state, lanes[a].function) + " while thread " + std::to_string(b) +
           " is at " + describe(lanes[b].state, lanes[b].function) +
           ": every thread of a threadgroup must reach each threadgroup_barrier (Metal leaves it undefined; the CPU "
           "backend refuses it)");
    destroy(false);
    return;
  }
}
#endif

} // namespace

uint64_t threadgroup_count(const Launch& launch) {
  uint64_t n = 1;
  for (int d = 0; d < 3; ++d) n *= (uint64_t(launch.grid[d]) + launch.group[d] - 1) / launch.group[d];
  return n;
}

const char* run_groups(const Kernel& kernel, const Launch& launch, uint64_t begin, uint64_t end) {
  current = Current{};
  current.kernel = kernel.host_name;
  if (kernel.checked) check::begin_launch(kernel, launch);
  const uint32_t ngroups[3] = {(launch.grid[0] + launch.group[0] - 1) / launch.group[0],
                               (launch.grid[1] + launch.group[1] - 1) / launch.group[1],
                               (launch.grid[2] + launch.group[2] - 1) / launch.group[2]};
  if (kernel.flat && kernel.grid_only && !schedule().shuffle && launch.grid[1] == 1 && launch.grid[2] == 1 &&
      launch.nthreadgroup == 0) {
    // threads [begin, end) of the grid's groups, in one loop (the kernel reads no group's position)
    const uint64_t first_thread = begin * launch.group[0];
    const uint64_t last = std::min<uint64_t>(end * uint64_t(launch.group[0]), launch.grid[0]);
    const uint32_t group_pos[3] = {uint32_t(begin), 0, 0};
    const uint32_t size[3] = {launch.group[0], 1, 1};
    Position first;
    fill_position(first, launch, group_pos, size, 0);
    current.pos = &first;
    if (last > first_thread) kernel.flat(launch.buffers, nullptr, first, 0, uint32_t(last - first_thread));
    current.pos = nullptr;
    return current.error.empty() ? nullptr : current.error.c_str();
  }
  for (uint64_t g = begin; g < end && current.error.empty(); ++g) {
    const uint32_t group_pos[3] = {uint32_t(g % ngroups[0]), uint32_t(g / ngroups[0] % ngroups[1]),
                                   uint32_t(g / (uint64_t(ngroups[0]) * ngroups[1]))};
    uint32_t size[3];
    for (int d = 0; d < 3; ++d) {
      const uint32_t left = launch.grid[d] - group_pos[d] * launch.group[d];
      size[d] = left < launch.group[d] ? left : launch.group[d];
    }
    const uint32_t n = size[0] * size[1] * size[2];
    void* const* tg = arena.bind(launch);
    if (kernel.checked) check::begin_group(launch, tg, group_pos);
    uint64_t rng = schedule().seed ^ (g * 0xd1b54a32d192ed03ull);
    if (kernel.flat && !schedule().shuffle) {
      Position first;
      fill_position(first, launch, group_pos, size, 0);
      current.pos = &first;
      kernel.flat(launch.buffers, tg, first, 0, n);
    } else if (kernel.flat) {
      std::vector<uint32_t> order(n);
      for (uint32_t t = 0; t < n; ++t) order[t] = t;
      arrange(order, rng, uint32_t(rng));
      Position pos;
      current.pos = &pos;
      for (uint32_t t : order) {
        fill_position(pos, launch, group_pos, size, t);
        kernel.one(launch.buffers, tg, pos);
      }
    } else {
#if MPSGEN_HAVE_FIBERS
      run_fibers(kernel, launch, tg, group_pos, size, rng, g);
#else
      record(std::string(kernel.host_name) +
             ": this build of the CPU backend has no Boost.Context, which runs kernels with barriers and simdgroup "
             "functions (install libboost-context-dev on Debian/Ubuntu or boost from Homebrew, then rebuild)");
#endif
    }
    current.pos = nullptr;
  }
  if (kernel.checked) check::end_launch();
  return current.error.empty() ? nullptr : current.error.c_str();
}

const Position& position() {
  return *current.pos;
}

void fail(const char* message) {
  record(std::string(current.kernel) + ": " + message);
#if MPSGEN_HAVE_FIBERS
  if (current.lane) {
    current.lane->state = State::failed;
    suspend(*current.lane);  // never resumed
  }
#endif
}

namespace {
void flat_refused(const char* what) {
  record(std::string(current.kernel) + " calls " + what +
         " though the generator found no synchronisation in its source: it ran without (a bug of mpsgen's)");
}
} // namespace

void threadgroup_barrier() {
#if MPSGEN_HAVE_FIBERS
  if (Lane* lane = current.lane) {
    lane->state = State::barrier;
    suspend(*lane);
    return;
  }
#endif
  flat_refused("threadgroup_barrier");
}

__attribute__((noinline)) void simdgroup_call(const char* function, Combine combine, const void* in, void* out, uint32_t arg) {
#if MPSGEN_HAVE_FIBERS
  if (Lane* lane = current.lane) {
    lane->state = State::simdgroup;
    lane->function = function;
    lane->combine = combine;
    lane->in = in;
    lane->out = out;
    lane->arg = arg;
    lane->site = __builtin_return_address(0);  // in the kernel: the shim's functions are inlined
    suspend(*lane);
    return;
  }
#endif
  flat_refused(function);
}

void simdgroup_barrier() {
  simdgroup_call("simdgroup_barrier", nullptr, nullptr, nullptr, 0);
}

} // namespace mpsgen::cpu::compute
