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

// MetalShaderLibrary::exec_{unary,binary}_kernel_with_params, and the ternary
// kernels of support/metal/mpsgen/ternary_alpha.h: `params` is the struct (or
// the one Scalar) the kernel reads, laid out as its Metal type
// `params_type_name`, which ends the host_name.
void exec_unary_kernel_with_params(at::TensorIteratorBase& iter, const std::string& name, const void* params,
                                   const std::string& params_type_name);
void exec_binary_kernel_with_params(at::TensorIteratorBase& iter, const std::string& name, const void* params,
                                    const std::string& params_type_name);
void exec_ternary_kernel_with_params(at::TensorIteratorBase& iter, const std::string& name, const void* params,
                                     const std::string& params_type_name);

// The same, called as MetalShaderLibrary's are: with the params struct itself.
template <typename P>
void exec_unary_kernel_with_params(at::TensorIteratorBase& iter, const std::string& name, const P& params,
                                   const std::string& params_type_name) {
  exec_unary_kernel_with_params(iter, name, static_cast<const void*>(&params), params_type_name);
}
template <typename P>
void exec_binary_kernel_with_params(at::TensorIteratorBase& iter, const std::string& name, const P& params,
                                    const std::string& params_type_name) {
  exec_binary_kernel_with_params(iter, name, static_cast<const void*>(&params), params_type_name);
}
template <typename P>
void exec_ternary_kernel_with_params(at::TensorIteratorBase& iter, const std::string& name, const P& params,
                                     const std::string& params_type_name) {
  exec_ternary_kernel_with_params(iter, name, static_cast<const void*>(&params), params_type_name);
}

} // namespace mpsgen::cpu
