#include "metal_library.h"

#include <c10/util/Exception.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

// Written by setup.py (codegen/build.py): for each op, its header-inlined
// Metal source and, when it could be compiled, its metallib bytes.
#include "mpsgen_metal_sources.h"

namespace mpsgen::mps {

at::native::mps::MetalShaderLibrary& library(const std::string& op) {
  static std::mutex mutex;
  static std::unordered_map<std::string, std::unique_ptr<at::native::mps::MetalShaderLibrary>> libraries;
  std::lock_guard<std::mutex> guard(mutex);
  auto& lib = libraries[op];
  if (!lib) {
    for (const auto& entry : kMetalSources) {
      if (op != entry.op) continue;
      if (entry.metallib_size) {
        lib = std::make_unique<at::native::mps::PrecompiledMetalShaderLibrary>(
            std::vector<uint8_t>(entry.metallib, entry.metallib + entry.metallib_size));
      } else {
        lib = std::make_unique<at::native::mps::MetalShaderLibrary>(entry.source);
      }
    }
    TORCH_CHECK(lib, "mpsgen: no Metal library was built for op '", op, "'; rebuild the extension");
  }
  return *lib;
}

} // namespace mpsgen::mps
