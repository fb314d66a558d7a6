// Structured-kernel semantics shared by every generated host stub, MPS and CPU.
//
// A generated stub supplies an OpSpec (from its ops.yaml entry) and a kernel
// callback that runs `exec_*_kernel` on a configured TensorIterator. This file
// owns what torch's structured elementwise ops do around that call: dtype
// promotion (0-dim tensors and Python scalars included), broadcasting, output
// allocation and resizing, the out=/in-place cast rules, and the errors for a
// dtype the op does not register or a tensor on the wrong device.
#pragma once

#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>

#include <functional>
#include <optional>
#include <vector>

namespace mpsgen {

enum class Backend { MPS, CPU };

struct Registered {
  c10::ScalarType input;   // the kernel's DTYPEI
  c10::ScalarType output;  // the kernel's DTYPEO
};

struct OpSpec {
  const char* name;            // torch.ops.<namespace>.<name>
  const char* origin;          // "ops.yaml:LINE", for error messages
  bool int_to_float;           // integer inputs compute in the default float dtype
  bool bool_output;            // a comparison/predicate: kernels produce bool
  bool castout;                // out= of another dtype stores through castout kernels
  std::vector<Registered> registrations;
};

// Runs exec_*_kernel. compute_dtype is the dtype the op computes in (the
// common dtype of torch's TensorIterator, integers promoted for *_float ops);
// alpha is the op's Scalar parameter (alpha families only).
using KernelFn = std::function<void(at::TensorIteratorBase&, c10::ScalarType compute_dtype,
                                    const std::optional<c10::Scalar>& alpha)>;

// Functional, out= and in-place entry points for 1, 2 or 3 tensor inputs.
at::Tensor elementwise(const OpSpec& op, Backend backend, at::TensorList inputs,
                       const std::optional<c10::Scalar>& alpha, const KernelFn& kernel);
at::Tensor& elementwise_out(const OpSpec& op, Backend backend, at::TensorList inputs,
                            const std::optional<c10::Scalar>& alpha, at::Tensor& out, const KernelFn& kernel);

} // namespace mpsgen
