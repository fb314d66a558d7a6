// What the host stubs of every kernel entry share (generated/<op>_cpu.cpp and <op>_mps.mm):
// the op as data, its dtype and device checks, the sizes of ops.yaml's shape and launch
// expressions (codegen/registry/sizes.py translates them to these helpers), and the check of a
// launch against Metal's limits. Each error names the op and its ops.yaml line.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/ivalue.h>
#include <c10/core/ScalarType.h>
#include <c10/util/SmallVector.h>

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace mpsgen::compute {

struct ComputeSpec {
  const char* name;    // "<namespace>::<op>"
  const char* origin;  // "ops.yaml:LINE"
  std::vector<c10::ScalarType> dtypes;  // the template dtypes its kernels are registered for
};

// Python's // and % (the expressions are Python's), and a ceiling division.
int64_t floordiv(int64_t a, int64_t b);
int64_t pymod(int64_t a, int64_t b);
int64_t ceil_div(int64_t a, int64_t b);
// Appends sizes[start:stop], as Python slices it.
void append_slice(c10::DimVector& shape, c10::IntArrayRef sizes, std::optional<int64_t> start,
                  std::optional<int64_t> stop);

// The dtype of the tensors of the template dtype (named, for errors): all the same, and
// registered; else a NotImplementedError naming the op, its line and the registered dtypes.
c10::ScalarType template_dtype(const ComputeSpec& spec,
                               std::initializer_list<std::pair<const char*, const at::Tensor*>> tensors);
// A tensor of a fixed dtype (`compute: tensors:`).
void check_dtype(const ComputeSpec& spec, const char* name, const at::Tensor& t, c10::ScalarType expected);
// Every tensor on `device`, defined.
void check_devices(const ComputeSpec& spec, c10::DeviceType device,
                   std::initializer_list<std::pair<const char*, const at::Tensor*>> tensors);

// An out= tensor: on the inputs' device, of the dtype the entry gives it (as torch's out= ops
// refuse another dtype); its shape is then resized (at::native::resize_output).
void check_out(const ComputeSpec& spec, const char* name, const at::Tensor& out, const c10::TensorOptions& expected);
// The tensor a launch writes an output into: `given` (an out= tensor, or in-place's self) where
// it is defined and contiguous, else a new contiguous tensor of `shape`. With `words` (the CPU
// backend, for a kernel with atomics), an output of 1- or 2-byte elements is always a new one
// whose bytes are whole 4-byte words from a 4-byte boundary: c10/metal's AtomicType updates such
// an element by a compare-and-swap of the word around it, which for the first or last element
// of a tensor would reach bytes that are not its own.
at::Tensor working_output(const at::Tensor& given, c10::IntArrayRef shape, const c10::TensorOptions& options,
                          bool words);
// The bytes of working_output's output `t` (with `words`) a kernel may touch: its own, and for
// elements of 1 or 2 bytes the rest of its last 4-byte word, which working_output allocated.
uint64_t word_bytes(const at::Tensor& t);

// `indices:` every value of the long tensor `index` indexes `size` elements: -size <= i < size
// (negative ones count from the end, as torch's); else an IndexError as torch's take and put_ give.
void check_indices(const ComputeSpec& spec, const char* name, const at::Tensor& index, int64_t size);

// The outputs of the op `spec.name` called with `args`, each Tensor as a meta tensor of its sizes,
// strides and dtype: what an entry's `shape: reference` outputs take their sizes from. The op's Meta
// kernel is the fake kernel of generated/library.py, which runs the entry's reference on them and
// checks its dtypes; without that library loaded, an error naming the op says so.
std::vector<at::Tensor> reference_outputs(const ComputeSpec& spec, std::vector<c10::IValue> args);

// What the pipeline allows (MTLComputePipelineState's maxTotalThreadsPerThreadgroup and
// threadExecutionWidth).
struct Limits {
  int64_t max_threads;
  int64_t execution_width;
};

struct LaunchSize {
  uint32_t grid[3];   // threads
  uint32_t group[3];  // threads per threadgroup
  std::vector<uint32_t> group_memory;  // bytes of each [[threadgroup(i)]]
  bool empty() const { return grid[0] == 0 || grid[1] == 0 || grid[2] == 0; }
};

// A launch of `kernel` checked against Metal's limits and the pipeline's: sizes above 0 (a grid
// may be empty: nothing runs, and nothing else is checked) and below 2^32, at most `limits.max_threads` threads per
// threadgroup, at most 32 KiB of threadgroup memory, at most 31 buffers; else an error naming the
// op, its line, the kernel and the limit.
LaunchSize check_launch(const ComputeSpec& spec, const std::string& kernel, std::initializer_list<int64_t> grid,
                    std::initializer_list<int64_t> group, const Limits& limits,
                    std::initializer_list<int64_t> group_memory_bytes, size_t nbuffers);

} // namespace mpsgen::compute
