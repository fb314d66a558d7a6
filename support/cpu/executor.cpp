#include "executor.h"

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <array>
#include <vector>

#include "kernel_registry.h"

namespace mpsgen::cpu {
namespace {

// scalarToMetalTypeString
const char* metal_type(c10::ScalarType t) {
  switch (t) {
    case c10::kFloat: return "float";
    case c10::kHalf: return "half";
    case c10::kBFloat16: return "bfloat";
    case c10::kLong: return "long";
    case c10::kInt: return "int";
    case c10::kShort: return "short";
    case c10::kChar: return "char";
    case c10::kByte: return "uchar";
    case c10::kBool: return "bool";
    case c10::kComplexFloat: return "float2";
    case c10::kComplexHalf: return "half2";
    case c10::kUInt16: return "ushort";
    case c10::kUInt32: return "uint";
    case c10::kUInt64: return "ulong";
    default: TORCH_CHECK(false, "Undefined type ", t);
  }
}

constexpr uint32_t kIlpPerThread = 4;         // c10::metal::ILP_PER_THREAD
constexpr uint64_t kIlpThreshold = 1u << 18;  // exec_*_kernel's default crossover
constexpr int64_t kGrain = 1 << 14;           // threads per parallel_for chunk

const KernelEntry& lookup(const std::string& kname) {
  const KernelEntry* k = find_kernel(kname);
  // The message MetalShaderLibrary gives for a host_name the library lacks.
  TORCH_CHECK(k, "Failed to create function state object for: ", kname);
  return *k;
}

// A launch: buffers in [[buffer(i)]] order, grid like dispatchThreads.
struct Launch {
  std::vector<void*> buffers;
  uint64_t threads = 0;
  uint32_t grid_x = 1;

  void run(const KernelEntry& k) {
    void* const* b = buffers.data();
    const uint32_t gx = grid_x;
    at::parallel_for(0, static_cast<int64_t>(threads), kGrain, [&](int64_t begin, int64_t end) {
      k.run(b, static_cast<uint64_t>(begin), static_cast<uint64_t>(end), gx);
    });
  }
};

uint32_t type_code(c10::ScalarType t) {
  return static_cast<uint32_t>(t);  // c10::metal::ScalarType shares the enum values
}

} // namespace

void exec_unary_kernel(at::TensorIteratorBase& iter, const std::string& name) {
  if (!iter.can_use_32bit_indexing()) {
    for (auto& sub : iter.with_32bit_indexing()) exec_unary_kernel(sub, name);
    return;
  }
  const uint32_t length = static_cast<uint32_t>(iter.numel());
  if (length == 0) return;
  const auto out_t = iter.dtype(0), in_t = iter.dtype(1);
  const bool contiguous = iter.is_contiguous();
  const bool dense_ilp = contiguous && c10::isFloatingType(out_t) && length >= kIlpThreshold;

  std::string kname = name + "_" + (!contiguous ? "strided" : dense_ilp ? "dense" : "dense_scalar") +
                      "_" + metal_type(out_t) + "_" + metal_type(in_t);
  bool castout = false;
  if (!find_kernel(kname)) {
    castout = true;
    kname = name + "_" + (contiguous ? "dense_castout" : "strided_castout") + "_" + metal_type(in_t);
  }
  const KernelEntry& k = lookup(kname);

  Launch l;
  l.buffers = {iter.data_ptr(0), iter.data_ptr(1)};
  std::array<uint32_t, 4> packed{};  // outlives the launch
  uint32_t numel = length;
  auto shape = iter.shape();
  auto in_strides = iter.strides(1), out_strides = iter.strides(0);
  if (!contiguous) {
    l.buffers.push_back(const_cast<int64_t*>(shape.data()));
    l.buffers.push_back(const_cast<int64_t*>(in_strides.data()));
    l.buffers.push_back(const_cast<int64_t*>(out_strides.data()));
    packed = {{static_cast<uint32_t>(iter.ndim()), type_code(out_t), 0, 0}};
    l.buffers.push_back(packed.data());  // uint ndim, or uint2 {ndim, out_type} for castout
    l.grid_x = static_cast<uint32_t>(shape[0]);
    l.threads = length;
  } else if (castout) {
    packed = {{static_cast<uint32_t>(c10::elementSize(out_t)), type_code(out_t), 0, 0}};
    l.buffers.push_back(packed.data());
    l.threads = length;
  } else if (dense_ilp) {
    l.buffers.push_back(&numel);
    l.threads = (length + kIlpPerThread - 1) / kIlpPerThread;
  } else {
    l.threads = length;
  }
  TORCH_INTERNAL_ASSERT(k.grid_dims == (contiguous ? 1 : 2), "unexpected grid for ", kname);
  l.run(k);
}

namespace {
// is_dense_broadcastable: `from` broadcasts into `into` by plain repetition.
bool dense_broadcastable(const at::TensorBase& from, const at::TensorBase& into) {
  if (!from.is_contiguous() || !into.is_contiguous() || from.dim() > into.dim()) return false;
  bool mismatch = false;
  for (int64_t i = 1; i <= from.dim(); ++i) {
    const int64_t f = from.size(-i), t = into.size(-i);
    if (!mismatch && f != t) mismatch = true;
    if (mismatch && f != 1) return false;
  }
  return true;
}
} // namespace

void exec_binary_kernel(at::TensorIteratorBase& iter, const std::string& name, c10::ScalarType common) {
  TORCH_CHECK(iter.output().scalar_type() != c10::kDouble, "float64 is not supported on MPS");
  if (iter.numel() == 0) return;
  if (!iter.can_use_32bit_indexing()) {
    for (auto& sub : iter.with_32bit_indexing()) exec_binary_kernel(sub, name, common);
    return;
  }
  const uint32_t numel = static_cast<uint32_t>(iter.numel());
  const auto& out = iter.output();
  const auto& a = iter.input(0);
  const auto& b = iter.input(1);
  const auto out_t = out.scalar_type(), a_t = a.scalar_type(), b_t = b.scalar_type();
  const bool cast = a_t != b_t;
  const std::string T_out = metal_type(out_t);
  const std::string cast_types = T_out + "_" + (out_t == c10::kBool ? metal_type(common) : T_out);

  // Dense operand + broadcast (or scalar) operand, as exec_binary_kernel detects them.
  int bc_side = 0;  // 1: lhs is broadcast, 2: rhs is broadcast
  int64_t broadcast_numel = 0;
  const bool a_full = a.numel() == out.numel(), b_full = b.numel() == out.numel();
  if (!a_full && dense_broadcastable(a, out) && b_full && b.is_contiguous() && out.is_contiguous()) {
    bc_side = 1, broadcast_numel = a.numel();
  } else if (!b_full && dense_broadcastable(b, out) && a_full && a.is_contiguous() && out.is_contiguous()) {
    bc_side = 2, broadcast_numel = b.numel();
  }
  const bool contiguous = iter.is_contiguous();
  std::array<uint32_t, 4> sizes_types{static_cast<uint32_t>(c10::elementSize(a_t)),
                                      static_cast<uint32_t>(c10::elementSize(b_t)), type_code(a_t),
                                      type_code(b_t)};
  Launch l;
  std::string kname;
  if (bc_side) {
    const bool scalar = broadcast_numel == 1;
    // The broadcast operand is bound where it stands: lhs at 1, rhs at 2.
    void* lhs = bc_side == 1 ? a.data_ptr() : iter.data_ptr(1);
    void* rhs = bc_side == 2 ? b.data_ptr() : iter.data_ptr(2);
    l.buffers = {iter.data_ptr(0), lhs, rhs};
    const std::string flavor = scalar ? (bc_side == 1 ? "dense_scalar_lhs" : "dense_scalar")
                                      : (bc_side == 1 ? "dense_broadcast_rhs" : "dense_broadcast");
    kname = name + "_" + flavor + (cast ? "_cast_" + cast_types
                                        : "_" + T_out + "_" + metal_type(bc_side == 1 ? b_t : a_t));
    if (!scalar) l.buffers.push_back(&broadcast_numel);
    if (cast) l.buffers.push_back(sizes_types.data());
    l.threads = numel;
  } else if (contiguous) {
    const bool ilp = !cast && c10::isFloatingType(out_t) && numel >= kIlpThreshold;
    kname = name + (ilp ? "_dense_ilp4" : "_dense") +
            (cast ? "_cast_" + cast_types : "_" + T_out + "_" + metal_type(a_t));
    l.buffers = {iter.data_ptr(0), iter.data_ptr(1), iter.data_ptr(2)};
    if (cast) l.buffers.push_back(sizes_types.data());
    if (ilp) l.buffers.push_back(const_cast<uint32_t*>(&numel));
    l.threads = ilp ? (numel + kIlpPerThread - 1) / kIlpPerThread : numel;
  } else {
    kname = name + "_strided" + (cast ? "_cast_" + cast_types : "_" + T_out + "_" + metal_type(a_t));
    l.buffers = {iter.data_ptr(0), iter.data_ptr(1), iter.data_ptr(2),
                 const_cast<int64_t*>(iter.shape().data()),
                 const_cast<int64_t*>(iter.strides(0).data()),
                 const_cast<int64_t*>(iter.strides(1).data()),
                 const_cast<int64_t*>(iter.strides(2).data())};
    sizes_types = {{static_cast<uint32_t>(iter.ndim()), type_code(a_t), type_code(b_t), type_code(out_t)}};
    l.buffers.push_back(sizes_types.data());
    l.threads = numel;
  }
  l.run(lookup(kname));
}

} // namespace mpsgen::cpu
