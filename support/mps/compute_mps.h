// macOS: the launch of a kernel entry's compute kernel, as torch's in-tree native-Metal ops launch
// theirs: the pipeline from the op's MetalShaderLibrary, its arguments bound with mtl_setArgs on the
// current MPS stream's encoder inside dispatch_sync_with_rethrow, then dispatchThreads. Compiled as
// C++ (the Linux syntax check) only the declarations are seen; only a Mac compiles the bodies.
#pragma once

#include <ATen/native/mps/MetalShaderLibrary.h>

#include <string>

#include "compute_host.h"

#ifdef __OBJC__
#include <ATen/native/mps/OperationUtils.h>
#endif

namespace mpsgen::mps {

// The pipeline's maxTotalThreadsPerThreadgroup and threadExecutionWidth.
mpsgen::compute::Limits compute_limits(at::native::mps::MetalShaderLibrary& library, const std::string& kernel);

// Binds `args` at [[buffer(0)]], [[buffer(1)]], ... (tensors by their MTLBuffer and offset, sizes
// and strides as arrays of int64, Scalars by value) and the threadgroup memory lengths, then
// dispatches `launch.grid` threads in threadgroups of `launch.group`.
template <typename... Args>
void dispatch_compute(at::native::mps::MetalShaderLibrary& library, const std::string& kernel,
                      const mpsgen::compute::LaunchSize& launch, const Args&... args);

#ifdef __OBJC__
inline mpsgen::compute::Limits compute_limits(at::native::mps::MetalShaderLibrary& library,
                                              const std::string& kernel) {
  auto pso = library.getPipelineStateForFunc(kernel);
  return {int64_t(pso.maxTotalThreadsPerThreadgroup), int64_t(pso.threadExecutionWidth)};
}

template <typename... Args>
void dispatch_compute(at::native::mps::MetalShaderLibrary& library, const std::string& kernel,
                      const mpsgen::compute::LaunchSize& launch, const Args&... args) {
  using namespace at::native::mps;
  if (launch.empty()) return;
  auto pso = library.getPipelineStateForFunc(kernel);
  auto* stream = at::mps::getCurrentMPSStream();
  dispatch_sync_with_rethrow(stream->queue(), ^() {
    @autoreleasepool {
      auto encoder = stream->commandEncoder();
      getMPSProfiler().beginProfileKernel(pso, kernel, false);
      [encoder setComputePipelineState:pso];
      mtl_setArgs(encoder, args...);
      for (size_t i = 0; i < launch.group_memory.size(); ++i) {
        [encoder setThreadgroupMemoryLength:launch.group_memory[i] atIndex:i];
      }
      [encoder dispatchThreads:MTLSizeMake(launch.grid[0], launch.grid[1], launch.grid[2])
          threadsPerThreadgroup:MTLSizeMake(launch.group[0], launch.group[1], launch.group[2])];
      getMPSProfiler().endProfileKernel(pso);
    }
  });
}
#endif

} // namespace mpsgen::mps
