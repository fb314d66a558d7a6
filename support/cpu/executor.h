// CPU executor: picks a kernel host_name exactly as MetalShaderLibrary's
// exec_unary_kernel / exec_binary_kernel / exec_ternary_kernel do on MPS,
// binds the same [[buffer(i)]] arguments, then runs that kernel (compiled from
// the same .metal source) over its grid on torch's CPU threads.
#pragma once

#include <ATen/TensorIterator.h>
#include <c10/core/Scalar.h>

#include <optional>
#include <string>

namespace mpsgen::cpu {

// common_dtype: the iterator's common dtype on MPS (the CPU iterator does not
// compute one); alpha: the Scalar of REGISTER_*_ALPHA_OP kernels.
void exec_unary_kernel(at::TensorIteratorBase& iter, const std::string& name, c10::ScalarType common_dtype,
                       const std::optional<c10::Scalar>& alpha = std::nullopt);
// natural_output_dtype: kBool for comparisons, whose out= of another dtype
// stores through the binary_strided_castout kernel.
void exec_binary_kernel(at::TensorIteratorBase& iter, const std::string& name, c10::ScalarType common_dtype,
                        const std::optional<c10::Scalar>& alpha = std::nullopt,
                        std::optional<c10::ScalarType> natural_output_dtype = std::nullopt);
void exec_ternary_kernel(at::TensorIteratorBase& iter, const std::string& name);

} // namespace mpsgen::cpu
