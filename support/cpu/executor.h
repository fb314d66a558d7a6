// CPU executor: picks a kernel host_name exactly as MetalShaderLibrary's
// exec_unary_kernel / exec_binary_kernel do on MPS, then runs that kernel
// (compiled from the same .metal source) over its grid on torch's CPU threads.
#pragma once

#include <ATen/TensorIterator.h>

#include <string>

namespace mpsgen::cpu {

void exec_unary_kernel(at::TensorIteratorBase& iter, const std::string& name);
void exec_binary_kernel(at::TensorIteratorBase& iter, const std::string& name, c10::ScalarType common_dtype);

} // namespace mpsgen::cpu
