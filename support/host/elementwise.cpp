#include "elementwise.h"

#include <ATen/Dispatch.h>
#include <ATen/ExpandUtils.h>
#include <ATen/Functions.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <c10/core/InferenceMode.h>
#include <c10/util/Exception.h>
#include <c10/util/SmallVector.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

namespace mpsgen {
namespace {

// The dtype TensorIterator would compute in: result_type over all inputs
// (0-dim tensors and wrapped Python numbers promote like scalars) and the
// Scalars that promote, then integers (and bool) to the default float dtype
// for *_float_op style ops. A mask (`mask:`) takes no part: torch's where computes
// result_type(self, other).
c10::ScalarType compute_dtype(const OpSpec& op, at::TensorList inputs,
                              const std::vector<std::optional<c10::Scalar>>& promoting) {
  at::native::ResultTypeState state{};
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (static_cast<int>(i) != op.mask) state = at::native::update_result_type_state(inputs[i], state);
  }
  for (const auto& s : promoting) {
    if (s) state = at::native::update_result_type_state(*s, state);
  }
  c10::ScalarType common = at::native::result_type(state);
  if (op.int_to_float && c10::isIntegralType(common, /*includeBool=*/true)) {
    common = c10::typeMetaToScalarType(c10::get_default_dtype());
  }
  return common;
}

std::string registered_list(const OpSpec& op) {
  std::ostringstream s;
  for (size_t i = 0; i < op.registrations.size(); ++i) {
    s << (i ? ", " : "") << c10::toString(op.registrations[i].input);
  }
  return s.str();
}

// The dtype that selects the kernel, as exec_*_kernel names it: the inputs'
// dtype when they all agree, else the computation dtype the kernel reads
// them into with casts. A mask is read through the _cast kernels of the computation
// dtype, which the other operands were cast to.
const Registered& check_registered(const OpSpec& op, at::TensorList inputs, c10::ScalarType common) {
  c10::ScalarType key = op.mask >= 0 ? common : inputs[0].scalar_type();
  for (const auto& t : inputs) {
    if (t.scalar_type() != key) key = common;
  }
  for (const auto& r : op.registrations) {
    if (r.input == key) return r;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(false, op.name, ": no kernel registered for dtype ", c10::toString(key),
                              *op.choice ? " with " : "", op.choice, " (", op.origin, " registers: ",
                              registered_list(op), ")");
}

// torch.ops passes None for a Tensor argument as an undefined tensor.
void check_defined(const OpSpec& op, at::TensorList inputs, const at::Tensor* out) {
  for (size_t i = 0; i < inputs.size(); ++i) {
    TORCH_CHECK_TYPE(inputs[i].defined(), op.name, ": argument '", i < op.inputs.size() ? op.inputs[i] : "?",
                     "' must be a Tensor, not None");
  }
  TORCH_CHECK_TYPE(out == nullptr || out->defined(), op.name, ": argument 'out' must be a Tensor, not None");
}

// What torch's version counter refuses when an op writes into a tensor (VariableVersion::bump):
// an inference tensor, outside inference mode. The ADInplaceOrView kernel that bumps it for
// torch's own ops is a fallthrough for ours, so the host checks it.
void check_writable(const OpSpec& op, const at::Tensor& out) {
  TORCH_CHECK(!out.is_inference() || c10::InferenceMode::is_enabled(), op.name,
              ": Inplace update to inference tensor outside InferenceMode is not allowed.You can make a clone "
              "to get a normal tensor before doing inplace update.See https://github.com/pytorch/rfcs/pull/17 "
              "for more details.");
}

// The Metal spelling of a dtype, or nullptr for a dtype Metal has no type for (float64,
// complex128, ...): the dtypes of c10/metal's C10_METAL_ALL_TYPES_FUNCTOR, which its castout
// kernels can store.
const char* metal_type_or_null(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat: return "float";
    case c10::kHalf: return "half";
    case c10::kBFloat16: return "bfloat";
    case c10::kLong: return "long";
    case c10::kInt: return "int";
    case c10::kShort: return "short";
    case c10::kChar: return "char";
    case c10::kByte: return "uchar";
    case c10::kBool: return "bool";
    case c10::kComplexFloat: return "float2";
    case c10::kComplexHalf: return "half2";
    case c10::kUInt16: return "ushort";
    case c10::kUInt32: return "uint";
    case c10::kUInt64: return "ulong";
    default: return nullptr;
  }
}

bool is_cpu_scalar(const at::Tensor& t) {
  return t.dim() == 0 && t.device().is_cpu();
}

// The device the op runs on: that of its first input that is not a CPU scalar.
c10::Device op_device(at::TensorList inputs) {
  for (const auto& t : inputs) {
    if (!is_cpu_scalar(t)) return t.device();
  }
  return inputs[0].device();
}

void check_devices(const OpSpec& op, Backend backend, at::TensorList inputs, const at::Tensor* out) {
  const auto device = op_device(inputs);
  const char* expected = backend == Backend::MPS ? "mps" : "cpu";
  for (size_t i = 0; i < inputs.size(); ++i) {
    // CPU scalars may join an MPS op, as TensorIterator's allow_cpu_scalars permits.
    TORCH_CHECK(inputs[i].device() == device || is_cpu_scalar(inputs[i]), op.name,
                ": expected all tensors on one device (", expected, "), but input ", i, " is on ",
                inputs[i].device(), " and input 0 on ", device);
  }
  if (out != nullptr) {
    // TensorIterator's message for an output on another device
    TORCH_CHECK(out->device() == device, op.name, ": Attempting to copy from device ", device, " to device ",
                out->device(), ", but cross-device copies are not allowed!");
  }
}

// The Scalars a `mask:` op converts to the result dtype as torch's where does, through
// at::scalar_tensor: where(mask, 1e308, float32 tensor) refuses ("value cannot be converted
// to type float without overflow"), 300 for uint8 too, while -1 wraps and half takes 1e5 as inf.
void check_converted(const OpSpec& op, c10::ScalarType common, const std::vector<c10::Scalar>& converted) {
  for (const auto& s : converted) {
    try {
      (void)at::scalar_tensor(s, at::TensorOptions().dtype(common));
    } catch (const std::runtime_error& e) {  // c10's report_overflow throws std::runtime_error
      TORCH_CHECK(false, op.name, ": ", e.what());
    }
  }
}

// torch's CPU kernels raise for an integer quotient by zero (div's trunc and floor modes,
// `zero_divisor:`), where a CPU running the functor would trap; a GPU returns some value, as
// torch's MPS kernels do, so the MPS stubs do not look (it would cost a device sync).
void check_zero_divisor(const OpSpec& op, Backend backend, at::TensorList args, c10::ScalarType output) {
  // bool too: a bool quotient of a division by zero is an integer division by zero (torch's CPU has no
  // bool div_floor or div_trunc at all; True was returned)
  if (op.zero_divisor < 0 || backend != Backend::CPU || !c10::isIntegralType(output, /*includeBool=*/true)) return;
  TORCH_CHECK(!args[op.zero_divisor].eq(0).any().item<bool>(), op.name, ": ZeroDivisionError");
}

// torch's alpha_check for add/sub-style ops.
// torch's where still takes a uint8 condition (nonzero bytes select), with this warning once
// per process (TensorCompare.cpp's TORCH_WARN_ONCE); a `mask:` op does the same
void warn_uint8_mask(const OpSpec& op, at::TensorList inputs) {
  if (op.mask >= 0 && inputs[op.mask].scalar_type() == c10::kByte) {
    TORCH_WARN_ONCE("where received a uint8 condition tensor. This behavior is deprecated and will be removed in a "
                    "future version of PyTorch. Use a boolean condition instead.");
  }
}

void check_alpha(const OpSpec& op, c10::ScalarType common, const std::optional<c10::Scalar>& alpha) {
  if (!alpha || !op.alpha_check) return;
  TORCH_CHECK(!alpha->isBoolean() || common == c10::kBool, op.name,
              ": Boolean alpha only supported for Boolean results.");
  TORCH_CHECK(c10::isFloatingType(common) || c10::isComplexType(common) || alpha->isIntegral(true), op.name,
              ": For integral input tensors, argument alpha must not be a floating point number.");
  TORCH_CHECK(c10::isComplexType(common) || !alpha->isComplex(), op.name,
              ": For non-complex input tensors, argument alpha must not be a complex number.");
}

// The operands as the kernels read them: a 0-dim operand (a Python number, or
// a 0-dim tensor) enters the computation in the common dtype, as TensorIterator
// casts it on CPU (2.1 added to a half tensor is added as half(2.1); a Python
// float, a 0-dim double, would otherwise reach Metal, which has no double).
// All operands are cast when a promoting Scalar changed the dtype (clamp of an
// int tensor by 0.5 computes in float), or when the kernels read one dtype; all but
// the mask for an op with one, which stays as given (torch's where casts self and other).
c10::SmallVector<at::Tensor, 4> operands(const OpSpec& op, at::TensorList inputs, const ScalarArgs& scalars,
                                         c10::ScalarType common) {
  bool cast_all = op.uniform_inputs || op.mask >= 0 || scalars.result.dtype.has_value();
  if (!scalars.promoting.empty()) cast_all |= compute_dtype(op, inputs, {}) != common;
  c10::SmallVector<at::Tensor, 4> result(inputs.begin(), inputs.end());
  for (size_t i = 0; i < result.size(); ++i) {
    auto& t = result[i];
    if (static_cast<int>(i) == op.mask) continue;
    if (t.scalar_type() != common && (cast_all || (t.dim() == 0 && result.size() > 1))) t = t.to(common);
  }
  return result;
}

// The dtype the kernels compute in: a ScalarType argument's when given (full_like's dtype),
// else torch's promotion.
c10::ScalarType computation_dtype(const OpSpec& op, at::TensorList inputs, const ScalarArgs& scalars) {
  return scalars.result.dtype.value_or(compute_dtype(op, inputs, scalars.promoting));
}

// aten's *_like options that a kernel writing where it reads can honour: a strided result on
// the inputs' device, not pinned.
void check_options(const OpSpec& op, at::TensorList inputs, const ResultOptions& o) {
  TORCH_CHECK(!o.layout || *o.layout == c10::kStrided, op.name,
              ": a layout other than torch.strided is not supported; the kernels write a strided result");
  TORCH_CHECK(!o.pin_memory || !*o.pin_memory, op.name,
              ": pin_memory=True is not supported; the result is on the inputs' device");
  if (o.memory_format == at::MemoryFormat::ChannelsLast || o.memory_format == at::MemoryFormat::ChannelsLast3d) {
    // as empty_like checks it for torch's own *_like ops, and so their out= (full_like.out
    // calls full_like): the result's rank, that of the broadcast inputs
    int64_t rank = 0;
    for (const auto& t : inputs) rank = std::max<int64_t>(rank, t.dim());
    const bool is_2d = *o.memory_format == at::MemoryFormat::ChannelsLast;
    TORCH_CHECK(rank == (is_2d ? 4 : 5), op.name, ": required rank ", is_2d ? 4 : 5, " tensor to use ",
                is_2d ? "channels_last" : "channels_last_3d", " format");
  }
  if (o.device) {
    const auto here = op_device(inputs);
    TORCH_CHECK(o.device->type() == here.type() && (!o.device->has_index() || o.device->index() == here.index()),
                op.name, ": device ", *o.device, " is not the inputs' device ", here,
                "; the kernels write where they read");
  }
}

// out: the output, or undefined for a new one, which the iterator allocates (as torch's
// structured kernels do: once, with the inputs' layout) in `new_dtype` on `device` (CPU only).
at::TensorIterator build(const OpSpec& op, Backend backend, at::TensorList inputs, const at::Tensor& out,
                         c10::ScalarType new_dtype = c10::ScalarType::Undefined, c10::Device device = c10::kCPU) {
  at::TensorIteratorConfig config;
  config.set_check_mem_overlap(true).add_output(out);
  if (backend == Backend::MPS && op.mask >= 0) {
    // as torch's where: self and other were cast to the result dtype, the mask stays bool
    for (const auto& t : inputs) config.add_const_input(t);
    config.allow_cpu_scalars(true).check_all_same_dtype(false);
  } else if (backend == Backend::MPS) {
    // What torch's build_borrowing_*_op (and its comparison config) set up: on
    // MPS no operand is copied; the kernels read and write mixed dtypes.
    for (const auto& t : inputs) config.add_const_input(t);
    config.allow_cpu_scalars(true).promote_inputs_to_common_dtype(true);
    if (op.bool_output) {
      config.cast_common_dtype_to_outputs(out.scalar_type() != c10::kBool);
    } else {
      config.cast_common_dtype_to_outputs(true)
          .enforce_safe_casting_to_output(true)
          .promote_integer_inputs_to_float(op.int_to_float);
    }
  } else {
    // On CPU tensors TensorIterator would copy every operand to the common
    // dtype first, and the kernels would only ever see same-dtype operands.
    // Keep the operands as MPS sees them; dtypes were settled by the caller.
    for (const auto& t : inputs) config.add_const_input(t);
    config.check_all_same_dtype(false);
    if (!out.defined()) config.declare_static_dtype_and_device(new_dtype, device);
  }
  return config.build();
}

// c10/metal's strided kernels keep a coordinate per dimension in `int pos[max_ndim]`.
constexpr int64_t kMaxDims = 16;  // c10::metal::max_ndim

// Runs the kernel into `out`, or (undefined) into a new output of `new_dtype` on `device`,
// which it returns.
at::Tensor run(const OpSpec& op, Backend backend, at::TensorList operands, const at::Tensor& given,
               const KernelFn& kernel, c10::ScalarType common, c10::ScalarType new_dtype = c10::ScalarType::Undefined,
               c10::Device device = c10::kCPU) {
  auto iter = build(op, backend, operands, given, new_dtype, device);
  at::Tensor out = iter.output();
  if (iter.ndim() <= kMaxDims) {
    kernel(iter, common);
    return out;
  }
  // More dimensions than the kernels can index, even after TensorIterator merged what
  // it could: compute on dense operands of the result's shape (one dimension once
  // coalesced), then copy into `out` with its own strides.
  const auto sizes = out.sizes().vec();
  std::vector<at::Tensor> dense;
  for (const auto& t : operands) {
    dense.push_back(t.dim() == 0 ? t : t.expand(sizes).contiguous());
  }
  auto result = at::empty(sizes, out.options().memory_format(at::MemoryFormat::Contiguous));
  auto dense_iter = build(op, backend, dense, result);
  TORCH_INTERNAL_ASSERT(dense_iter.ndim() <= kMaxDims, op.name, ": dense operands did not coalesce");
  kernel(dense_iter, common);
  out.copy_(result);
  return out;
}

} // namespace

at::Tensor elementwise(const OpSpec& op, Backend backend, at::TensorList inputs, const ScalarArgs& scalars,
                       const ChecksFn& checks, const KernelFn& kernel) {
  check_defined(op, inputs, nullptr);
  if (op.result_like >= 0) {
    // as aten's kernel (mish_backward): an output of that input's dtype, which the computation
    // in the promoted dtype is cast into, as TensorIterator casts into a given output
    at::Tensor out = at::empty({0}, inputs[op.result_like].options());
    elementwise_out(op, backend, inputs, scalars, checks, out, kernel);
    return out;
  }
  if (checks) checks();
  const auto common = computation_dtype(op, inputs, scalars);
  const auto args = operands(op, inputs, scalars, common);
  const auto& reg = check_registered(op, args, common);
  check_devices(op, backend, inputs, nullptr);
  check_options(op, inputs, scalars.result);
  check_alpha(op, common, scalars.alpha);
  check_converted(op, common, scalars.converted);
  check_zero_divisor(op, backend, args, reg.output);
  warn_uint8_mask(op, inputs);
  const auto device = op_device(inputs);
  const auto& mf = scalars.result.memory_format;
  if (mf && *mf != at::MemoryFormat::Preserve) {
    // a new result laid out in that memory format, as empty_like lays it out (full_like's)
    at::DimVector shape(inputs[0].sizes());
    for (const auto& t : inputs) shape = at::infer_size_dimvector(shape, t.sizes());
    const auto options = inputs[0].options().device(device).dtype(reg.output).memory_format(*mf);
    return run(op, backend, args, at::empty(shape, options), kernel, common);
  }
  if (backend == Backend::CPU) {
    return run(op, backend, args, at::Tensor(), kernel, common, reg.output, device);
  }
  // MPS: a new output as torch's mps ops make one, resized by the iterator to the inputs' layout
  return run(op, backend, args, at::empty({0}, inputs[0].options().device(device).dtype(reg.output)), kernel, common);
}

void check_inplace(const OpSpec& op, const at::Tensor& self) {
  if (!self.defined() || !self.is_complex() || op.bool_output) return;
  for (const auto& r : op.registrations) {
    // torch's in-place variants of ops whose result is real for complex inputs refuse a complex
    // self (abs_: "In-place abs is not supported for complex tensors."): the real result would
    // be written back with a zero imaginary part
    if (r.input == self.scalar_type() && !c10::isComplexType(r.output)) {
      const std::string full(op.name);  // "<namespace>::<name>[.<overload>]"
      const auto start = full.find("::") + 2, dot = full.find('.', start);
      const std::string base = full.substr(start, dot == std::string::npos ? dot : dot - start);
      const std::string overload = dot == std::string::npos ? "" : full.substr(dot);
      TORCH_CHECK(false, full.substr(0, start), base, "_", overload, ": In-place ", base,
                  " is not supported for complex tensors (its result is real)");
    }
  }
}

at::Tensor& elementwise_out(const OpSpec& op, Backend backend, at::TensorList inputs, const ScalarArgs& scalars,
                            const ChecksFn& checks, at::Tensor& out, const KernelFn& kernel,
                            std::initializer_list<c10::ScalarType> exact_out, bool complex_out_input) {
  check_defined(op, inputs, &out);
  if (checks) checks();
  const auto common = computation_dtype(op, inputs, scalars);
  const auto args = operands(op, inputs, scalars, common);
  const auto& reg = check_registered(op, args, common);
  check_devices(op, backend, inputs, &out);
  check_options(op, inputs, scalars.result);
  check_alpha(op, common, scalars.alpha);
  check_converted(op, common, scalars.converted);
  check_zero_divisor(op, backend, args, reg.output);
  warn_uint8_mask(op, inputs);
  check_writable(op, out);
  // ops.yaml `out_dtype: exact` (torch's neg.out; a `mask:` op's by default, as torch's where):
  // out= must have the result dtype
  const bool exact = std::find(exact_out.begin(), exact_out.end(), reg.input) != exact_out.end();
  TORCH_CHECK(!exact || out.scalar_type() == reg.output, op.name, ": Expected out type to be ", reg.output,
              " but got ", out.scalar_type());
  // ops.yaml `out_dtype: {complex: input}` (torch's abs.out): a complex out= of a complex input takes
  // torch's complex -> complex path, whose iterator keeps the input's dtype
  TORCH_CHECK(!(complex_out_input && c10::isComplexType(reg.input) && c10::isComplexType(out.scalar_type())) ||
                  out.scalar_type() == reg.input,
              op.name, ": Found dtype ", out.scalar_type(), " but expected ", reg.input);
  if (op.result_like >= 0) {
    // the result has that input's dtype (`result_dtype:`, as aten's mish_backward allocates it),
    // whichever out= is given: out= and in-place refuse what the functional variant refuses
    const auto like = inputs[op.result_like].scalar_type();
    TORCH_CHECK(c10::canCast(reg.output, like), op.name, ": result type ", reg.output,
                " can't be cast to the desired output type ", like);
  }
  // torch's structured ops refuse an unsafe cast of the result (bool results
  // of comparisons cast to anything; abs of complex is real).
  TORCH_CHECK(c10::canCast(reg.output, out.scalar_type()), op.name, ": result type ", reg.output,
              " can't be cast to the desired output type ", out.scalar_type());
  if (out.scalar_type() == reg.output || (op.castout && metal_type_or_null(out.scalar_type()))) {
    // castout kernels store into any output dtype Metal has themselves
    run(op, backend, args, out, kernel, common);
    return out;
  }
  // The other kernels produce their registered dtype; cast on the way out, as
  // TensorIterator does for CPU outputs (float64 and complex128 outputs exist on CPU only).
  auto tmp = at::empty({0}, out.options().dtype(reg.output));
  run(op, backend, args, tmp, kernel, common);
  if (at::native::resize_output(out, tmp.sizes())) {
    // a resized output takes the layout TensorIterator gives a new one (that of the inputs)
    out.as_strided_(tmp.sizes(), tmp.strides());
  }
  out.copy_(tmp);
  return out;
}

const char* choose(const OpSpec& op, const char* arg, std::optional<c10::string_view> value,
                   std::initializer_list<std::pair<const char*, const char*>> choices) {
  std::ostringstream allowed;
  for (const auto& [v, kernel] : choices) {
    // the choice "None" is the optional's None, not the string 'None' (which torch's div refuses)
    const bool is_none = std::string_view(v) == "None";
    if (is_none ? !value : value && *value == v) return kernel;
    allowed << (allowed.tellp() ? ", " : "") << (is_none ? "None" : "'" + std::string(v) + "'");
  }
  TORCH_CHECK_VALUE(false, op.name, ": argument '", arg, "' must be one of ", allowed.str(), ", got ",
                    value ? "'" + std::string(*value) + "'" : std::string("None"));
}

const char* choose(const OpSpec& op, const char* arg, double value, std::initializer_list<ValueChoice> choices) {
  std::ostringstream listed;
  for (const auto& c : choices) {
    const std::string_view t = c.test;
    const bool holds = t == "else" || (t == "==" && value == c.bound) || (t == "!=" && value != c.bound) ||
                       (t == "<" && value < c.bound) || (t == "<=" && value <= c.bound) ||
                       (t == ">" && value > c.bound) || (t == ">=" && value >= c.bound);
    if (holds) return c.kernel;
    listed << (listed.tellp() ? ", " : "") << arg << " " << t << " " << c.bound;
  }
  TORCH_CHECK_VALUE(false, op.name, ": argument '", arg, "' is ", value, ", which no kernel takes (", listed.str(),
                    ")");
}

const char* choose(const OpSpec& op, const char* arg, const c10::Scalar& value,
                   std::initializer_list<ValueChoice> choices) {
  if (!value.isComplex()) return choose(op, arg, value.to<double>(), choices);
  const auto z = value.to<c10::complex<double>>();
  if (z.imag() == 0) return choose(op, arg, z.real(), choices);
  std::ostringstream shown, listed;
  shown << "(" << z.real() << (z.imag() < 0 ? "-" : "+") << std::abs(z.imag()) << "j)";  // as Python prints it
  for (const auto& c : choices) {
    const std::string_view t = c.test;
    if (t == "else" || t == "!=") return c.kernel;
    TORCH_CHECK_VALUE(t == "==", op.name, ": argument '", arg, "' is ", shown.str(),
                      ", a complex value, which has no order: the choice '", arg, " ", t, " ", c.bound,
                      "' cannot take it");
    listed << (listed.tellp() ? ", " : "") << arg << " " << t << " " << c.bound;
  }
  TORCH_CHECK_VALUE(false, op.name, ": argument '", arg, "' is ", shown.str(), ", which no kernel takes (",
                    listed.str(), ")");
}

// scalarToMetalTypeString
std::string metal_type(c10::ScalarType t) {
  const char* name = metal_type_or_null(t);
  TORCH_CHECK(name, "Undefined type ", t);
  return name;
}

double dtype_max(const at::Tensor& t) {
  double max = 0;
  AT_DISPATCH_ALL_TYPES_AND3(c10::kHalf, c10::kBFloat16, c10::kBool, c10::toRealValueType(t.scalar_type()),
                             "dtype_max", [&] { max = static_cast<double>(std::numeric_limits<scalar_t>::max()); });
  return max;
}

} // namespace mpsgen
