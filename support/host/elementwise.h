// Structured-kernel semantics shared by every generated host stub, MPS and CPU.
//
// A generated stub supplies an OpSpec (from its ops.yaml entry) and a kernel
// callback that runs `exec_*_kernel` on a configured TensorIterator. This file
// owns what torch's structured elementwise ops do around that call: dtype
// promotion, output allocation and resizing, the out=/in-place cast rules,
// and the error for a dtype the op does not register.
#pragma once

#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/ScalarType.h>

#include <functional>
#include <string>
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
  std::vector<Registered> registrations;
};

// Runs exec_*_kernel; compute_dtype is the dtype the op computes in (the
// common dtype of torch's TensorIterator, integers promoted for *_float ops).
using KernelFn = std::function<void(at::TensorIteratorBase&, c10::ScalarType compute_dtype)>;

// Functional, out= and in-place entry points for 1 (unary) or 2 (binary) inputs.
at::Tensor elementwise(const OpSpec& op, Backend backend, at::TensorList inputs, const KernelFn& kernel);
at::Tensor& elementwise_out(const OpSpec& op, Backend backend, at::TensorList inputs, at::Tensor& out,
                            const KernelFn& kernel);

} // namespace mpsgen
