// macOS: the params-struct dispatch of generated ops.
//
// Unary and binary ops call MetalShaderLibrary::exec_{unary,binary}_kernel_with_params,
// whose template bodies live in torch's Objective-C++ OperationUtils.h. Ternary ops
// with a Scalar or params (support/metal/mpsgen/ternary_alpha.h) have no torch
// counterpart: ternary_with_params binds and dispatches them the way torch's
// exec_ternary_kernel does its own kernels. Compiled as C++ (the Linux syntax
// check) only the declarations are seen; only a Mac compiles the bodies.
#pragma once

#include <ATen/TensorIterator.h>
#include <ATen/native/mps/MetalShaderLibrary.h>

#include <algorithm>
#include <string>

#ifdef __OBJC__
#include <ATen/native/mps/OperationUtils.h>
#endif

namespace mpsgen::mps {

// How a ternary strided kernel reads its thread position. linear: a uint, the element's index
// in a 1D grid (mpsgen's ternary_alpha.h, for torch before 2.15). dims3: a uint3, as torch
// 2.15's REGISTER_TERNARY_ALPHA_OP kernels do (c10/metal/indexing.h's ternary_offsets): dimension 0
// in x, 1 in y, the others flattened in z, over a grid of (sizes[0], sizes[1], the product of the
// rest). The dense kernels take a uint in both.
enum class TernaryGrid { linear, dims3 };

class TernaryWithParams {
 public:
  TernaryWithParams(at::native::mps::MetalShaderLibrary& library, TernaryGrid grid) : library_(library), grid_(grid) {}

  // Runs `<name>_<dense|strided>_<out>_<in>_<params_type_name>` with `params` at buffer 4.
  template <typename T>
  void operator()(at::TensorIteratorBase& iter, const std::string& name, const T& params,
                  const std::string& params_type_name);

 private:
  at::native::mps::MetalShaderLibrary& library_;
  TernaryGrid grid_;
};

inline TernaryWithParams ternary_with_params(at::native::mps::MetalShaderLibrary& library,
                                             TernaryGrid grid = TernaryGrid::linear) {
  return TernaryWithParams(library, grid);
}

#ifdef __OBJC__
template <typename T>
void TernaryWithParams::operator()(at::TensorIteratorBase& iter, const std::string& name, const T& params,
                                   const std::string& params_type_name) {
  using namespace at::native::mps;
  TORCH_CHECK(iter.output().scalar_type() != at::kDouble, "float64 is not supported on MPS");
  if (iter.numel() == 0) return;
  if (!iter.can_use_32bit_indexing()) {
    for (auto&& sub : iter.with_32bit_indexing()) (*this)(sub, name, params, params_type_name);
    return;
  }
  const bool contiguous = iter.is_contiguous();
  const auto kernel_name = name + (contiguous ? "_dense_" : "_strided_") + scalarToMetalTypeString(iter.output()) +
                           "_" + scalarToMetalTypeString(iter.input(0)) + "_" + params_type_name;
  auto* stream = at::mps::getCurrentMPSStream();
  dispatch_sync_with_rethrow(stream->queue(), ^() {
    @autoreleasepool {
      auto encoder = stream->commandEncoder();
      auto pso = library_.getPipelineStateForFunc(kernel_name);
      getMPSProfiler().beginProfileKernel(pso, kernel_name, {iter.input(0), iter.input(1), iter.input(2)});
      [encoder setComputePipelineState:pso];
      bind_iter_tensors(encoder, iter);
      at::native::mps::detail::mtl_setArg(encoder, params, 4);  // qualified: torch 2.14 adds a global ::detail
      if (!contiguous) {
        mtl_setArgs<5>(encoder, iter.shape(), iter.strides(0), iter.strides(1), iter.strides(2), iter.strides(3),
                       static_cast<uint32_t>(iter.ndim()));
      }
      if (!contiguous && grid_ == TernaryGrid::dims3) {
        const auto shape = iter.shape();
        NSUInteger x = shape.size() > 0 ? shape[0] : 1, y = shape.size() > 1 ? shape[1] : 1, z = 1;
        for (size_t i = 2; i < shape.size(); ++i) z *= shape[i];
        const NSUInteger most = pso.maxTotalThreadsPerThreadgroup;
        const NSUInteger width = std::min<NSUInteger>(x, most), height = std::min<NSUInteger>(y, most / width);
        [encoder dispatchThreads:MTLSizeMake(x, y, z) threadsPerThreadgroup:MTLSizeMake(width, height, 1)];
      } else {
        mtl_dispatch1DJob(encoder, pso, iter.numel());
      }
      getMPSProfiler().endProfileKernel(pso);
    }
  });
}
#endif

} // namespace mpsgen::mps
