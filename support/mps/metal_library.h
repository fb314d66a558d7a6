// macOS: one MetalShaderLibrary per op, built from what setup.py embedded.
#pragma once

#include <ATen/native/mps/MetalShaderLibrary.h>

#include <string>

namespace mpsgen::mps {

// The library holding the kernels of generated/<op>.metal: its precompiled
// metallib when the build had `xcrun metal`, otherwise its header-inlined
// source, compiled by Metal at first use. Either way kernels are looked up by
// the host_names that torch's REGISTER_* macros gave them.
at::native::mps::MetalShaderLibrary& library(const std::string& op);

} // namespace mpsgen::mps
