#include "compute_host.h"

#include <ATen/ATen.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/Exception.h>

#include <algorithm>

#include "elementwise.h"  // metal_type

namespace mpsgen::compute {

namespace {
constexpr int64_t max_threadgroup_memory = 32768;  // bytes: Apple GPUs' threadgroup memory
constexpr size_t max_buffers = 31;                 // Metal's buffer argument table
} // namespace

int64_t floordiv(int64_t a, int64_t b) {
  TORCH_CHECK(b != 0, "integer division by zero in a size expression");
  const int64_t q = a / b;
  return (a % b != 0 && ((a < 0) != (b < 0))) ? q - 1 : q;
}

int64_t pymod(int64_t a, int64_t b) {
  TORCH_CHECK(b != 0, "integer modulo by zero in a size expression");
  const int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

int64_t ceil_div(int64_t a, int64_t b) {
  return -floordiv(-a, b);
}

void append_slice(c10::DimVector& shape, c10::IntArrayRef sizes, std::optional<int64_t> start,
                  std::optional<int64_t> stop) {
  const int64_t n = int64_t(sizes.size());
  auto clamp = [n](int64_t i) { return i < 0 ? std::max<int64_t>(0, i + n) : std::min(i, n); };
  const int64_t b = start ? clamp(*start) : 0, e = stop ? clamp(*stop) : n;
  for (int64_t i = b; i < e; ++i) shape.push_back(sizes[i]);
}

namespace {
std::string registered(const ComputeSpec& spec) {
  std::string s;
  for (auto t : spec.dtypes) s += (s.empty() ? "" : ", ") + std::string(c10::toString(t));
  return s;
}
} // namespace

c10::ScalarType template_dtype(const ComputeSpec& spec,
                               std::initializer_list<std::pair<const char*, const at::Tensor*>> tensors) {
  std::optional<c10::ScalarType> dtype;
  const char* first = nullptr;
  for (const auto& [name, t] : tensors) {
    if (!dtype) {
      dtype = t->scalar_type();
      first = name;
    } else {
      TORCH_CHECK(t->scalar_type() == *dtype, spec.name, ": expected '", name, "' to have the dtype of '", first,
                  "' (", *dtype, "), got ", t->scalar_type());
    }
  }
  TORCH_CHECK(dtype, spec.name, ": no tensor of the template dtype");  // the generator makes sure of one
  for (auto t : spec.dtypes) {
    if (t == *dtype) return t;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(false, spec.name, " (", spec.origin, ") has no kernel for dtype ", *dtype,
                              "; its kernels are registered for ", registered(spec));
}

void check_dtype(const ComputeSpec& spec, const char* name, const at::Tensor& t, c10::ScalarType expected) {
  TORCH_CHECK(t.scalar_type() == expected, spec.name, ": expected '", name, "' to be ", expected, ", got ",
              t.scalar_type());
}

void check_devices(const ComputeSpec& spec, c10::DeviceType device,
                   std::initializer_list<std::pair<const char*, const at::Tensor*>> tensors) {
  for (const auto& [name, t] : tensors) {
    TORCH_CHECK_TYPE(t->defined(), spec.name, "(): argument '", name, "' must be Tensor, not None");
    TORCH_CHECK(t->device().type() == device, spec.name, ": expected '", name, "' on ", device, ", got ",
                t->device());
  }
}

void check_out(const ComputeSpec& spec, const char* name, const at::Tensor& out, const c10::TensorOptions& expected) {
  TORCH_CHECK(out.device() == expected.device(), spec.name, ": expected the out= tensor '", name, "' on ",
              expected.device(), ", got ", out.device());
  TORCH_CHECK(out.scalar_type() == c10::typeMetaToScalarType(expected.dtype()), spec.name, ": expected the out= tensor '",
              name, "' to be ", c10::typeMetaToScalarType(expected.dtype()), ", got ", out.scalar_type());
}

at::Tensor working_output(const at::Tensor& given, c10::IntArrayRef shape, const c10::TensorOptions& options,
                          bool words) {
  const int64_t size = options.dtype().itemsize();
  const bool padded = words && size < 4;
  if (given.defined() && given.is_contiguous() && !padded) {
    return given;
  }
  if (!padded) {
    return at::empty(shape, options);
  }
  const int64_t numel = c10::multiply_integers(shape);
  const int64_t per_word = 4 / size;
  // a new allocation starts on a 64-byte boundary (c10's CPU allocator)
  return at::empty({(numel + per_word - 1) / per_word * per_word}, options).narrow(0, 0, numel).view(shape);
}

uint64_t word_bytes(const at::Tensor& t) {
  const uint64_t own = t.nbytes();
  return t.element_size() < 4 ? std::min<uint64_t>((own + 3) / 4 * 4, t.storage().nbytes()) : own;
}

void check_indices(const ComputeSpec& spec, const char* name, const at::Tensor& index, int64_t size) {
  if (index.numel() == 0) {
    return;
  }
  int64_t lo = 0, hi = 0;
  if (index.device().is_cpu()) {  // the values themselves: the CPU backend runs no torch kernel
    const at::Tensor c = index.contiguous();
    const int64_t* p = c.const_data_ptr<int64_t>();
    lo = hi = p[0];
    for (int64_t i = 1; i < c.numel(); ++i) {
      lo = std::min(lo, p[i]);
      hi = std::max(hi, p[i]);
    }
  } else {  // on the GPU, torch's own reduction; reading its result waits for the stream
    const auto [min, max] = at::aminmax(index);
    lo = min.item<int64_t>();
    hi = max.item<int64_t>();
  }
  for (int64_t i : {lo, hi}) {
    TORCH_CHECK_INDEX(i >= -size && i < size, spec.name, ": out of range: tried to access index ", i,
                      " on a tensor of ", size, " elements (argument '", name, "')");
  }
}

std::vector<at::Tensor> reference_outputs(const ComputeSpec& spec, std::vector<c10::IValue> args) {
  const std::string qualified = spec.name;  // <namespace>::<op>[.<overload>]
  const size_t dot = qualified.find('.', qualified.find("::"));
  const auto op = c10::Dispatcher::singleton().findSchema(
      {qualified.substr(0, dot), dot == std::string::npos ? "" : qualified.substr(dot + 1)});
  TORCH_CHECK(op.has_value() && op->hasKernelForDispatchKey(c10::DispatchKey::Meta), spec.name, " (", spec.origin,
              "): its outputs are shaped by its reference, on meta tensors, and the op has no Meta kernel; the "
              "package's generated/library.py registers it (import the package, not only its extension)");
  for (c10::IValue& arg : args) {
    if (arg.isTensor()) {
      const at::Tensor& t = arg.toTensor();
      arg = at::empty_strided(t.sizes(), t.strides(), t.options().device(c10::kMeta));
    }
  }
  torch::jit::Stack stack(std::move(args));
  op->callBoxed(&stack);
  std::vector<at::Tensor> outputs;  // the boxed convention: each returned Tensor on the stack, in order
  for (const c10::IValue& v : stack) {
    outputs.push_back(v.toTensor());
  }
  return outputs;
}

LaunchSize check_launch(const ComputeSpec& spec, const std::string& kernel, std::initializer_list<int64_t> grid,
                    std::initializer_list<int64_t> group, const Limits& limits,
                    std::initializer_list<int64_t> group_memory_bytes, size_t nbuffers) {
  LaunchSize l{{1, 1, 1}, {1, 1, 1}, {}};
  const std::string where = std::string(spec.name) + " (" + spec.origin + "), kernel " + kernel;
  int i = 0;
  for (int64_t g : grid) {
    TORCH_CHECK(g >= 0 && g <= int64_t(UINT32_MAX), where, ": grid size ", g, " in dimension ", i,
                " is not between 0 and 2^32 - 1");
    l.grid[i++] = uint32_t(g);
  }
  if (l.empty()) return l;  // nothing runs: the threadgroup's size does not matter
  int64_t threads = 1;
  i = 0;
  for (int64_t g : group) {
    TORCH_CHECK(g >= 1 && g <= int64_t(UINT32_MAX), where, ": threadgroup size ", g, " in dimension ", i,
                " is not at least 1");
    l.group[i++] = uint32_t(g);
    threads *= g;
  }
  TORCH_CHECK(threads <= limits.max_threads, where, ": a threadgroup of ", threads,
              " threads is more than the pipeline's maxTotalThreadsPerThreadgroup, ", limits.max_threads);
  int64_t bytes = 0;
  for (int64_t b : group_memory_bytes) {
    TORCH_CHECK(b >= 0, where, ": negative threadgroup memory length ", b);
    bytes += b;
    l.group_memory.push_back(uint32_t((b + 15) / 16 * 16));  // Metal wants multiples of 16 bytes
  }
  TORCH_CHECK(bytes <= max_threadgroup_memory, where, ": ", bytes, " bytes of threadgroup memory is more than ",
              max_threadgroup_memory, ", Metal's limit");
  TORCH_CHECK(nbuffers <= max_buffers, where, ": ", nbuffers, " buffers is more than Metal's ", max_buffers);
  return l;
}

} // namespace mpsgen::compute
