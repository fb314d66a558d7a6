#include "executor.h"

#include <ATen/Parallel.h>
#include <ATen/core/Tensor.h>
#include <c10/util/Exception.h>

#include <array>
#include <cstring>
#include <initializer_list>
#include <unordered_map>
#include <utility>
#include <vector>

#include "elementwise.h"
#include "kernel_lookup.h"

namespace mpsgen::cpu {
namespace {

using mpsgen::metal_type;

constexpr uint32_t kIlpPerThread = 4;         // c10::metal::ILP_PER_THREAD
constexpr uint64_t kIlpThreshold = 1u << 18;  // exec_*_kernel's default crossover
constexpr int64_t kGrain = 1 << 14;           // threads per parallel_for chunk

// A kernel as exec_*_kernel picks it, cached per op name and variant: a call builds and looks
// up no host_name string once its thread has seen that op with those dtypes and that layout.
// `variant` lists everything the host_name depends on besides the op name: which exec_* and
// flavour first (each its own number), then dtypes and flags, each below 64; `make_name`
// builds the host_name, only on a miss.
struct Kernel {
  std::string op;  // the op name it was cached for: a hit compares it, so a reused address cannot alias
  std::string params_type;  // and the params struct's type name, which ends a params kernel's host_name
  std::string host_name;
  const KernelEntry* entry = nullptr;  // null: the library has no such kernel (a probe's answer)
  bool resolved = false;
};

struct KernelKey {
  const std::string* op;
  uint64_t variant;
  bool operator==(const KernelKey& o) const { return op == o.op && variant == o.variant; }
};

struct KernelKeyHash {
  size_t operator()(const KernelKey& k) const {
    return std::hash<const void*>()(k.op) ^ std::hash<uint64_t>()(k.variant * 0x9E3779B97F4A7C15ull);
  }
};

// required: a missing kernel is an error, as MetalShaderLibrary's; else the caller probes for it.
template <typename MakeName>
const Kernel& kernel_for(const std::string& op, std::initializer_list<uint32_t> variant, MakeName&& make_name,
                         bool required = true, const std::string& params_type = {}) {
  uint64_t packed = 0;
  for (uint32_t v : variant) {
    TORCH_INTERNAL_ASSERT(v < 64 && packed >> 58 == 0, "kernel variant out of range");
    packed = packed << 6 | v;
  }
  thread_local std::unordered_map<KernelKey, Kernel, KernelKeyHash> cache;
  Kernel& k = cache[KernelKey{&op, packed}];
  if (!k.resolved || k.op != op || k.params_type != params_type) {
    k.host_name = make_name();
    k.entry = find_kernel(k.host_name);
    k.op = op;
    k.params_type = params_type;
    k.resolved = true;
  }
  if (required) {
    TORCH_CHECK(k.entry, "Failed to create function state object for: ", k.host_name);  // MetalShaderLibrary's words
  }
  return k;
}

constexpr uint32_t kNone = 63;  // a variant part that is absent (no alpha)

uint32_t type_code(c10::ScalarType t) {
  return static_cast<uint32_t>(t);  // c10::metal::ScalarType shares the enum values
}

uint32_t elem_size(c10::ScalarType t) {
  return static_cast<uint32_t>(c10::elementSize(t));
}

// A Scalar as the kernel's `constant T& alpha` reads it: the raw bytes of T
// (what the MPS host's MPSScalar passes through setBytes).
struct ScalarBytes {
  alignas(16) unsigned char bytes[16] = {};

  ScalarBytes(const c10::Scalar& s, c10::ScalarType t) {
    switch (t) {
      case c10::kFloat: store(s.to<float>()); break;
      case c10::kHalf: store(s.to<c10::Half>()); break;
      case c10::kBFloat16: store(s.to<c10::BFloat16>()); break;
      case c10::kLong: store(s.to<int64_t>()); break;
      case c10::kInt: store(s.to<int32_t>()); break;
      case c10::kShort: store(s.to<int16_t>()); break;
      case c10::kChar: store(s.to<int8_t>()); break;
      case c10::kByte: store(s.to<uint8_t>()); break;
      case c10::kBool: store(s.to<bool>()); break;
      case c10::kUInt16: store(s.to<uint16_t>()); break;
      case c10::kUInt32: store(s.to<uint32_t>()); break;
      case c10::kUInt64: store(s.to<uint64_t>()); break;
      case c10::kComplexFloat: store(s.to<c10::complex<float>>()); break;
      case c10::kComplexHalf: {
        const auto v = s.to<c10::complex<float>>();
        store(c10::complex<c10::Half>(v.real(), v.imag()));
        break;
      }
      default: TORCH_CHECK(false, "unsupported alpha type ", t);
    }
  }
  template <typename T>
  void store(const T& v) {
    static_assert(sizeof(T) <= sizeof(bytes));
    std::memcpy(bytes, &v, sizeof(T));
  }
  void* data() { return bytes; }
};

// A launch: buffers in [[buffer(i)]] order, grid like dispatchThreads.
struct Launch {
  std::array<void*, 16> buffers{};  // c10/metal's kernels bind at most a dozen
  size_t nbuffers = 0;
  uint64_t threads = 0;
  uint32_t grid_x = 1;

  void push(const void* p) {
    TORCH_INTERNAL_ASSERT(nbuffers < buffers.size(), "too many kernel buffers");
    buffers[nbuffers++] = const_cast<void*>(p);
  }
  void run(const Kernel& kernel, int expected_grid_dims) {
    const KernelEntry& k = *kernel.entry;
    record_launch(k);
    TORCH_INTERNAL_ASSERT(k.grid_dims == expected_grid_dims, "unexpected grid for ", kernel.host_name);
    void* const* b = buffers.data();
    const uint32_t gx = grid_x;
    if (static_cast<int64_t>(threads) <= kGrain) {
      // one chunk: run it here, as TensorIterator's for_each runs a small loop serially
      k.run(b, 0, threads, gx);
      return;
    }
    at::parallel_for(0, static_cast<int64_t>(threads), kGrain, [&](int64_t begin, int64_t end) {
      k.run(b, static_cast<uint64_t>(begin), static_cast<uint64_t>(end), gx);
    });
  }
};

// Operands of the iterator as Metal binds them: [0] output, then the inputs.
void bind_operands(Launch& l, at::TensorIteratorBase& iter) {
  for (int i = 0; i < iter.ntensors(); ++i) l.push(iter.data_ptr(i));
}

// The strided kernels' shape and per-operand strides (in bytes), in operand order.
void bind_shape_and_strides(Launch& l, at::TensorIteratorBase& iter) {
  l.push(iter.shape().data());
  for (int i = 0; i < iter.ntensors(); ++i) l.push(iter.strides(i).data());
}

// exec_{binary,ternary}_kernel's prologue: false when nothing is left to launch for
// `iter` (it is empty, or it was split into 32-bit sub-iterators, each run by `again`).
template <typename F>
bool ready_to_launch(at::TensorIteratorBase& iter, F&& again) {
  TORCH_CHECK(iter.output().scalar_type() != c10::kDouble, "float64 is not supported on MPS");
  if (iter.numel() == 0) return false;
  if (!iter.can_use_32bit_indexing()) {
    for (auto& sub : iter.with_32bit_indexing()) again(sub);
    return false;
  }
  return true;
}

} // namespace

void exec_unary_kernel(at::TensorIteratorBase& iter, const std::string& name, c10::ScalarType common,
                       const std::optional<c10::Scalar>& alpha) {
  if (!iter.can_use_32bit_indexing()) {
    for (auto& sub : iter.with_32bit_indexing()) exec_unary_kernel(sub, name, common, alpha);
    return;
  }
  const uint32_t length = static_cast<uint32_t>(iter.numel());
  if (length == 0) return;
  if (alpha) {
    // REGISTER_UNARY_ALPHA_OP kernels: the alpha travels in the common dtype,
    // and there is no castout fallback.
    ScalarBytes a(*alpha, common);
    exec_unary_kernel_with_params(iter, name, static_cast<const void*>(a.data()), metal_type(common));
    return;
  }

  const auto out_t = iter.dtype(0), in_t = iter.dtype(1);
  const bool contiguous = iter.is_contiguous();
  auto shape = iter.shape();
  auto in_strides = iter.strides(1), out_strides = iter.strides(0);
  std::array<uint32_t, 4> packed{};
  uint32_t numel = length;
  Launch l;
  l.push(iter.data_ptr(0));
  l.push(iter.data_ptr(1));
  l.threads = length;

  const bool dense_ilp = contiguous && c10::isFloatingType(out_t) && length >= kIlpThreshold;
  const Kernel* kernel = &kernel_for(name, {0, contiguous, dense_ilp, type_code(out_t), type_code(in_t)}, [&] {
    return name + "_" + (!contiguous ? "strided" : dense_ilp ? "dense" : "dense_scalar") + "_" + metal_type(out_t) +
           "_" + metal_type(in_t);
  }, /*required=*/false);
  const bool castout = kernel->entry == nullptr;
  if (castout) {
    // no kernel for this output dtype: compute in the input's and cast on store
    kernel = &kernel_for(name, {1, contiguous, type_code(in_t)}, [&] {
      return name + "_" + (contiguous ? "dense_castout" : "strided_castout") + "_" + metal_type(in_t);
    });
  }
  if (!contiguous) {
    l.push(shape.data());
    l.push(in_strides.data());
    l.push(out_strides.data());
    packed = {{static_cast<uint32_t>(iter.ndim()), type_code(out_t), 0, 0}};
    l.push(packed.data());  // uint ndim, or uint2 {ndim, out_type} for castout
    l.grid_x = static_cast<uint32_t>(shape[0]);
  } else if (castout) {
    packed = {{elem_size(out_t), type_code(out_t), 0, 0}};
    l.push(packed.data());
  } else if (dense_ilp) {
    l.push(&numel);
    l.threads = (length + kIlpPerThread - 1) / kIlpPerThread;
  }
  l.run(*kernel, contiguous ? 1 : 2);
}

void exec_unary_kernel_with_params(at::TensorIteratorBase& iter, const std::string& name, const void* params,
                                   const std::string& params_type_name) {
  if (!iter.can_use_32bit_indexing()) {
    for (auto& sub : iter.with_32bit_indexing()) exec_unary_kernel_with_params(sub, name, params, params_type_name);
    return;
  }
  if (iter.numel() == 0) return;
  // unary_alpha_dense / unary_alpha_strided: the params at buffer 2, or 6 after the strides
  const bool contiguous = iter.is_contiguous();
  const Kernel& kernel = kernel_for(name, {2, contiguous, type_code(iter.dtype(0)), type_code(iter.dtype(1))}, [&] {
    return name + (contiguous ? "_dense_" : "_strided_") + metal_type(iter.dtype(0)) + "_" + metal_type(iter.dtype(1)) +
           "_" + params_type_name;
  }, true, params_type_name);
  auto shape = iter.shape();
  auto in_strides = iter.strides(1), out_strides = iter.strides(0);
  const uint32_t ndim = static_cast<uint32_t>(iter.ndim());
  Launch l;
  l.threads = static_cast<uint64_t>(iter.numel());
  l.push(iter.data_ptr(0));
  l.push(iter.data_ptr(1));
  if (!contiguous) {
    l.push(shape.data());
    l.push(in_strides.data());
    l.push(out_strides.data());
    l.push(&ndim);
    l.grid_x = static_cast<uint32_t>(shape[0]);
  }
  l.push(params);
  l.run(kernel, contiguous ? 1 : 2);
}

void exec_binary_kernel_with_params(at::TensorIteratorBase& iter, const std::string& name, const void* params,
                                    const std::string& params_type_name) {
  if (!ready_to_launch(iter, [&](auto& sub) { exec_binary_kernel_with_params(sub, name, params, params_type_name); })) {
    return;
  }
  // binary_alpha_dense / binary_alpha_strided with the params as alpha (buffer 3);
  // the host gives both inputs one dtype, so the _cast kernels are not needed.
  const auto a_t = iter.input(0).scalar_type(), b_t = iter.input(1).scalar_type(), out_t = iter.dtype(0);
  TORCH_INTERNAL_ASSERT(a_t == b_t, name, ": params kernels expect inputs of one dtype");
  const bool contiguous = iter.is_contiguous();
  const Kernel& kernel = kernel_for(name, {3, contiguous, type_code(out_t), type_code(a_t)}, [&] {
    return name + (contiguous ? "_dense_" : "_strided_") + metal_type(out_t) + "_" + metal_type(a_t) + "_" +
           params_type_name;
  }, true, params_type_name);
  std::array<uint32_t, 4> ndim_types{static_cast<uint32_t>(iter.ndim()), type_code(a_t), type_code(b_t),
                                     type_code(out_t)};
  Launch l;
  l.threads = static_cast<uint64_t>(iter.numel());
  bind_operands(l, iter);
  l.push(params);
  if (!contiguous) {
    bind_shape_and_strides(l, iter);
    l.push(ndim_types.data());
  }
  l.run(kernel, 1);
}

void exec_ternary_kernel_with_params(at::TensorIteratorBase& iter, const std::string& name, const void* params,
                                     const std::string& params_type_name) {
  if (!ready_to_launch(iter, [&](auto& sub) { exec_ternary_kernel_with_params(sub, name, params, params_type_name); })) {
    return;
  }
  // ternary_alpha_dense / ternary_alpha_strided (support/metal/mpsgen/ternary_alpha.h)
  const auto out_t = iter.dtype(0), in_t = iter.dtype(1);
  TORCH_INTERNAL_ASSERT(in_t == iter.dtype(2) && in_t == iter.dtype(3), name,
                        ": params kernels expect inputs of one dtype");
  const bool contiguous = iter.is_contiguous();
  const Kernel& kernel = kernel_for(name, {4, contiguous, type_code(out_t), type_code(in_t)}, [&] {
    return name + (contiguous ? "_dense_" : "_strided_") + metal_type(out_t) + "_" + metal_type(in_t) + "_" +
           params_type_name;
  }, true, params_type_name);
  const uint32_t ndim = static_cast<uint32_t>(iter.ndim());
  Launch l;
  l.threads = static_cast<uint64_t>(iter.numel());
  bind_operands(l, iter);
  l.push(params);
  if (!contiguous) {
    bind_shape_and_strides(l, iter);
    l.push(&ndim);
  }
  l.run(kernel, 1);
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

void exec_binary_kernel(at::TensorIteratorBase& iter, const std::string& name, c10::ScalarType common,
                        const std::optional<c10::Scalar>& alpha,
                        std::optional<c10::ScalarType> natural_output_dtype) {
  if (!ready_to_launch(iter, [&](auto& sub) { exec_binary_kernel(sub, name, common, alpha, natural_output_dtype); })) {
    return;
  }
  const uint32_t numel = static_cast<uint32_t>(iter.numel());
  const auto& out = iter.output();
  const auto out_t = out.scalar_type();
  const auto natural = natural_output_dtype.value_or(out_t);
  const bool output_cast = out_t != natural;
  at::Tensor a = iter.input(0), b = iter.input(1);
  bool cast = a.scalar_type() != b.scalar_type();

  // Dense operand + broadcast (or scalar) operand, as exec_binary_kernel detects them.
  int bc_side = 0;  // 1: lhs is broadcast, 2: rhs is broadcast
  int64_t broadcast_numel = 0;
  if (!output_cast) {
    const bool a_full = a.numel() == out.numel(), b_full = b.numel() == out.numel();
    if (!a_full && dense_broadcastable(a, out) && b_full && b.is_contiguous() && out.is_contiguous()) {
      bc_side = 1, broadcast_numel = a.numel();
    } else if (!b_full && dense_broadcastable(b, out) && a_full && a.is_contiguous() && out.is_contiguous()) {
      bc_side = 2, broadcast_numel = b.numel();
    }
  }
  const bool scalar = bc_side && broadcast_numel == 1;
  at::Tensor& bc = bc_side == 1 ? a : b;
  const at::Tensor& dense = bc_side == 1 ? b : a;
  if (scalar && cast && dense.scalar_type() == common && c10::isIntegralType(bc.scalar_type(), true) &&
      c10::toRealValueType(common) == c10::kFloat) {
    // The host promotes an integral scalar to the float computation dtype.
    bc = bc.to(common);
    cast = false;
  }
  const auto a_t = a.scalar_type(), b_t = b.scalar_type();
  const auto alpha_t = cast ? out_t : common;
  const auto A = [&] { return alpha ? "_" + metal_type(alpha_t) : std::string(); };
  // _cast kernels are keyed on (output, computation dtype): polar reads float into float2
  const auto C = [&] { return metal_type(out_t) + "_" + metal_type(common); };
  std::optional<ScalarBytes> alpha_bytes;
  if (alpha) alpha_bytes.emplace(*alpha, alpha_t);
  std::array<uint32_t, 4> sizes_types{elem_size(a_t), elem_size(b_t), type_code(a_t), type_code(b_t)};
  std::array<uint32_t, 4> ndim_types{static_cast<uint32_t>(iter.ndim()), type_code(a_t), type_code(b_t),
                                     type_code(out_t)};
  const bool contiguous = iter.is_contiguous();

  Launch l;
  l.threads = numel;
  // what the host_name depends on besides the op name; the flavour's parts follow
  const uint32_t alpha_code = alpha ? type_code(alpha_t) : kNone;
  const Kernel* kernel = nullptr;
  if (output_cast) {
    // A comparison storing into a non-bool out=: compute bool, cast on store.
    kernel = &kernel_for(name, {5, type_code(natural), type_code(common), alpha_code}, [&] {
      return name + "_strided_castout_" + metal_type(natural) + "_" + metal_type(common) + A();
    });
    bind_operands(l, iter);
    bind_shape_and_strides(l, iter);
    l.push(ndim_types.data());
  } else if (bc_side) {
    // The broadcast operand is bound where it stands: lhs at 1, rhs at 2.
    l.push(iter.data_ptr(0));
    l.push(bc_side == 1 ? a.data_ptr() : iter.data_ptr(1));
    l.push(bc_side == 2 ? b.data_ptr() : iter.data_ptr(2));
    kernel = &kernel_for(name, {6, scalar, static_cast<uint32_t>(bc_side), cast, type_code(out_t),
                                type_code(cast ? common : dense.scalar_type()), alpha_code}, [&] {
      const std::string flavor = scalar ? (bc_side == 1 ? "_dense_scalar_lhs" : "_dense_scalar")
                                        : (bc_side == 1 ? "_dense_broadcast_rhs" : "_dense_broadcast");
      return name + flavor + (cast ? "_cast_" + C() : "_" + metal_type(out_t) + "_" + metal_type(dense.scalar_type())) +
             A();
    });
    if (!scalar) l.push(&broadcast_numel);
    if (alpha) l.push(alpha_bytes->data());
    if (cast) l.push(sizes_types.data());
  } else if (contiguous) {
    const bool ilp = !cast && !alpha && c10::isFloatingType(out_t) && numel >= kIlpThreshold;
    kernel = &kernel_for(name, {7, ilp, cast, type_code(out_t), type_code(cast ? common : a_t), alpha_code}, [&] {
      return name + (ilp ? "_dense_ilp4" : "_dense") +
             (cast ? "_cast_" + C() : "_" + metal_type(out_t) + "_" + metal_type(a_t)) + A();
    });
    bind_operands(l, iter);
    if (alpha) l.push(alpha_bytes->data());
    if (cast) l.push(sizes_types.data());
    if (ilp) {
      l.push(&numel);
      l.threads = (numel + kIlpPerThread - 1) / kIlpPerThread;
    }
  } else {
    kernel = &kernel_for(name, {8, cast, type_code(out_t), type_code(cast ? common : a_t), alpha_code}, [&] {
      return name + "_strided" + (cast ? "_cast_" + C() : "_" + metal_type(out_t) + "_" + metal_type(a_t)) + A();
    });
    bind_operands(l, iter);
    if (alpha) l.push(alpha_bytes->data());
    bind_shape_and_strides(l, iter);
    l.push(ndim_types.data());
  }
  l.run(*kernel, 1);
}

void exec_ternary_kernel(at::TensorIteratorBase& iter, const std::string& name) {
  if (!ready_to_launch(iter, [&](auto& sub) { exec_ternary_kernel(sub, name); })) return;
  const auto out_t = iter.dtype(0), in_t = iter.dtype(1), o1_t = iter.dtype(2), o2_t = iter.dtype(3);
  const bool cast = in_t != o1_t || in_t != o2_t || in_t != out_t;
  const bool contiguous = iter.is_contiguous();
  const Kernel& kernel = kernel_for(name, {9, contiguous, cast, type_code(out_t), type_code(in_t)}, [&] {
    return name + (contiguous ? "_dense" : "_strided") +
           (cast ? "_cast_" + metal_type(out_t) : "_" + metal_type(out_t) + "_" + metal_type(in_t));
  });
  // ternary_dense_cast's element sizes: the inputs' (a uint3 up to torch 2.14), and from 2.15 (a
  // uint4, its stores cast to the output's dtype) the output's in .w
  std::array<uint32_t, 4> sizes{elem_size(in_t), elem_size(o1_t), elem_size(o2_t), elem_size(out_t)};
  std::array<uint32_t, 4> types{type_code(in_t), type_code(o1_t), type_code(o2_t), type_code(out_t)};
  uint32_t ndim = static_cast<uint32_t>(iter.ndim());
  Launch l;
  l.threads = static_cast<uint64_t>(iter.numel());
  bind_operands(l, iter);
  if (!contiguous) {
    bind_shape_and_strides(l, iter);
    l.push(&ndim);
    l.push(types.data());  // read by the _cast kernel only
  } else if (cast) {
    l.push(sizes.data());
    l.push(types.data());
  }
  l.run(kernel, 1);
}

} // namespace mpsgen::cpu
