#include "elementwise.h"

#include <ATen/ExpandUtils.h>
#include <ATen/Functions.h>
#include <ATen/native/Resize.h>
#include <ATen/native/TypeProperties.h>
#include <c10/util/Exception.h>

#include <sstream>

namespace mpsgen {
namespace {

// The dtype TensorIterator would compute in: result_type over all inputs, then
// integers (and bool) to the default float dtype for *_float_op style ops.
c10::ScalarType compute_dtype(const OpSpec& op, at::TensorList inputs) {
  c10::ScalarType common = at::native::result_type(inputs);
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

// The dtype that selects the kernel, as exec_*_kernel names it: a unary
// kernel is keyed on its input dtype; a binary one on its inputs' dtype when
// they agree and on the computation dtype when it reads them with casts.
void check_registered(const OpSpec& op, at::TensorList inputs, c10::ScalarType common) {
  c10::ScalarType key = common;
  if (inputs.size() == 1 || inputs[0].scalar_type() == inputs[1].scalar_type()) {
    key = inputs[0].scalar_type();
  }
  for (const auto& r : op.registrations) {
    if (r.input == key) return;
  }
  TORCH_CHECK_NOT_IMPLEMENTED(false, op.name, ": no kernel registered for dtype ", c10::toString(key),
                              " (", op.origin, " registers: ", registered_list(op), ")");
}

at::TensorIterator build(const OpSpec& op, Backend backend, at::TensorList inputs, const at::Tensor& out) {
  at::TensorIteratorConfig config;
  config.set_check_mem_overlap(true).add_output(out);
  for (const auto& t : inputs) config.add_const_input(t);
  if (backend == Backend::MPS) {
    // What torch's build_borrowing_{unary,binary}[_float]_op configure: on MPS
    // no operand is copied; the kernels read and write mixed dtypes.
    config.allow_cpu_scalars(true)
        .promote_inputs_to_common_dtype(true)
        .cast_common_dtype_to_outputs(true)
        .enforce_safe_casting_to_output(true)
        .promote_integer_inputs_to_float(op.int_to_float);
  } else {
    // On CPU tensors TensorIterator would copy every operand to the common
    // dtype first, and the kernels would only ever see same-dtype operands.
    // Keep the operands as MPS sees them; dtypes were settled by the caller.
    config.check_all_same_dtype(false);
  }
  return config.build();
}

void run(const OpSpec& op, Backend backend, at::TensorList inputs, at::Tensor& out, const KernelFn& kernel,
         c10::ScalarType common) {
  auto iter = build(op, backend, inputs, out);
  kernel(iter, common);
}

} // namespace

at::Tensor elementwise(const OpSpec& op, Backend backend, at::TensorList inputs, const KernelFn& kernel) {
  const auto common = compute_dtype(op, inputs);
  check_registered(op, inputs, common);
  auto out = at::empty({0}, inputs[0].options().dtype(common));
  run(op, backend, inputs, out, kernel, common);
  return out;
}

at::Tensor& elementwise_out(const OpSpec& op, Backend backend, at::TensorList inputs, at::Tensor& out,
                            const KernelFn& kernel) {
  const auto common = compute_dtype(op, inputs);
  check_registered(op, inputs, common);
  TORCH_CHECK(c10::canCast(common, out.scalar_type()), op.name, ": result type ", common,
              " can't be cast to the desired output type ", out.scalar_type());
  TORCH_CHECK(out.device() == inputs[0].device(), op.name, ": expected out on ", inputs[0].device(),
              ", got ", out.device());
  if (out.scalar_type() == common || inputs.size() == 1) {
    // Unary kernels store into any output dtype through their castout variant.
    run(op, backend, inputs, out, kernel, common);
    return out;
  }
  // Binary kernels produce the computation dtype; cast on the way out, as
  // TensorIterator does for CPU outputs.
  auto tmp = at::empty({0}, out.options().dtype(common));
  run(op, backend, inputs, tmp, kernel, common);
  at::native::resize_output(out, tmp.sizes());
  out.copy_(tmp);
  return out;
}

} // namespace mpsgen
