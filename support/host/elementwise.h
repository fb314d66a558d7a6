// Structured-kernel semantics shared by every generated host stub, MPS and CPU.
//
// A generated stub supplies an OpSpec (from its ops.yaml entry) and a kernel
// callback that runs `exec_*_kernel` on a configured TensorIterator. This file
// owns what torch's structured elementwise ops do around that call: dtype
// promotion (0-dim tensors and Python scalars included), broadcasting, output
// allocation and resizing, the out=/in-place cast rules, and the errors for a
// dtype the op does not register or a tensor on the wrong device.
#pragma once

#include <ATen/TensorIterator.h>
#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>

#include <c10/util/Exception.h>
#include <c10/util/complex.h>

#include "op_spec.h"

#include <functional>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <optional>
#include <vector>

namespace mpsgen {

enum class Backend { MPS, CPU };

// The Scalar arguments the host itself looks at (the kernels get theirs from
// the generated kernel function).
// The result's dtype and options, where the schema takes them as aten's *_like functions do
// (full_like's): a ScalarType argument (`result_dtype:`) is the dtype the kernels compute in,
// the inputs cast to it; a memory format other than preserve lays out a new result.
struct ResultOptions {
  std::optional<c10::ScalarType> dtype;
  std::optional<c10::Layout> layout;
  std::optional<c10::Device> device;
  std::optional<bool> pin_memory;
  std::optional<c10::MemoryFormat> memory_format;
};

struct ScalarArgs {
  std::optional<c10::Scalar> alpha;                   // checked by torch's alpha_check if op.alpha_check
  std::vector<std::optional<c10::Scalar>> promoting;  // take part in type promotion as wrapped numbers
  // a `mask:` op's Scalar overloads: torch's where makes them tensors of the result dtype
  // (at::scalar_tensor), whose conversion refuses a value beyond that dtype's range
  std::vector<c10::Scalar> converted = {};
  ResultOptions result = {};
};

// The entry's `checks:` (ops.yaml): the conditions torch enforces on the arguments,
// run once every operand is known to be a Tensor, before the dtype and device checks.
using ChecksFn = std::function<void()>;

// Runs exec_*_kernel. compute_dtype is the dtype the op computes in (the
// common dtype of torch's TensorIterator, integers promoted for *_float ops).
using KernelFn = std::function<void(at::TensorIteratorBase&, c10::ScalarType compute_dtype)>;

// Functional, out= and in-place entry points for 1, 2 or 3 tensor inputs. exact_out: the
// input dtypes whose out= must have the result dtype (ops.yaml `out_dtype:`, as torch's
// neg.out; a `mask:` op's by default, as torch's where's); out= of the others is cast into
// within torch's can_cast rule. complex_out_input: a complex out= of a complex input must have
// the input's dtype (`out_dtype: {complex: input}`, as torch's abs.out).
at::Tensor elementwise(const OpSpec& op, Backend backend, at::TensorList inputs, const ScalarArgs& scalars,
                       const ChecksFn& checks, const KernelFn& kernel);
// An in-place variant's self: refused where it is complex and the op's result for it is real,
// as torch's in-place variants refuse it.
void check_inplace(const OpSpec& op, const at::Tensor& self);
at::Tensor& elementwise_out(const OpSpec& op, Backend backend, at::TensorList inputs, const ScalarArgs& scalars,
                            const ChecksFn& checks, at::Tensor& out, const KernelFn& kernel,
                            std::initializer_list<c10::ScalarType> exact_out = {},
                            bool complex_out_input = false);

// A `Tensor?` argument is given: present and defined (torch.ops passes None as nullopt).
inline bool given(const std::optional<at::Tensor>& t) { return t.has_value() && t->defined(); }

// The Tensors the kernel reads of an op with `Tensor?` arguments: the given ones, in schema
// order (the required ones always; an undefined one is reported by check_defined).
inline std::vector<at::Tensor> given_tensors(std::initializer_list<std::optional<at::Tensor>> tensors) {
  std::vector<at::Tensor> found;
  for (const auto& t : tensors) {
    if (t.has_value()) found.push_back(*t);
  }
  return found;
}

// What `checks:` conditions may use (codegen/registry/checks.py): an argument's dtype (a Scalar
// overload's Scalar as the wrapped number it becomes), and the largest finite value of
// a tensor's dtype (std::numeric_limits<T>::max(), as torch's softshrink check reads it), and
// whether a Scalar is integral.
inline c10::ScalarType dtype_of(const at::Tensor& t) { return t.scalar_type(); }
inline c10::ScalarType dtype_of(const c10::Scalar& s) { return s.type(); }
double dtype_max(const at::Tensor& t);
inline bool is_integral(const c10::Scalar& s) { return s.isIntegral(/*includeBool=*/true); }  // an int or bool

// The kernel a `str` argument selects (ops.yaml `args: {<arg>: {choices: ...}}`);
// an unknown value raises a ValueError listing the allowed ones. The choice "None" is
// the optional's None (std::nullopt), never the string 'None'.
const char* choose(const OpSpec& op, const char* arg, std::optional<c10::string_view> value,
                   std::initializer_list<std::pair<const char*, const char*>> choices);

// The kernel an int or Scalar argument's value selects (ops.yaml `args: {n: {choices: {0: digamma,
// else: polygamma}}}`): the first condition that holds; none raises a ValueError listing them.
struct ValueChoice {
  const char* test;  // "==", "!=", "<", "<=", ">", ">=", or "else" (any value)
  double bound;
  const char* kernel;
};
const char* choose(const OpSpec& op, const char* arg, double value, std::initializer_list<ValueChoice> choices);
// A Scalar's value, compared as torch's value: a complex one with an imaginary part equals no
// real bound and differs from every one; compared with <, <=, > or >= it is a ValueError.
const char* choose(const OpSpec& op, const char* arg, const c10::Scalar& value,
                   std::initializer_list<ValueChoice> choices);
// The Metal spelling of a dtype (scalarToMetalTypeString): names params structs.
std::string metal_type(c10::ScalarType t);

// c10/metal's opmath_t on the host: the type an `opmath` params field has.
template <typename T>
struct OpMath {
  using type = T;
};
template <>
struct OpMath<c10::Half> {
  using type = float;
};
template <>
struct OpMath<c10::BFloat16> {
  using type = float;
};
template <>
struct OpMath<int16_t> {
  using type = int32_t;
};
template <>
struct OpMath<int8_t> {
  using type = int32_t;
};
template <>
struct OpMath<uint8_t> {
  using type = int32_t;
};
template <>
struct OpMath<c10::complex<c10::Half>> {
  using type = c10::complex<float>;
};
template <typename T>
using opmath_t = typename OpMath<T>::type;

// A Scalar argument as the kernels read it, in T: c10's checked conversion (a complex fill of a
// real result, 1e300 as half), whose error then names the op.
template <typename T>
T scalar_as(const OpSpec& op, const c10::Scalar& s) {
  try {
    return s.to<T>();
  } catch (const std::runtime_error& e) {  // c10's report_overflow throws std::runtime_error
    TORCH_CHECK(false, op.name, ": ", e.what());
  }
}

// A Scalar argument an `opmath` params field holds: in opmath_t<T>, after the value is checked
// to fit T itself where T is an integer narrower than its opmath (int8, int16, uint8 compute in
// int32), as torch's kernels take it (value.to<scalar_t>()): addcmul of int8 with value=1000
// raises instead of wrapping in the kernel's cast to T.
template <typename T>
opmath_t<T> scalar_as_opmath(const OpSpec& op, const c10::Scalar& s) {
  if constexpr (std::is_integral_v<T> && !std::is_same_v<opmath_t<T>, T>) {
    (void)scalar_as<T>(op, s);
  }
  return scalar_as<opmath_t<T>>(op, s);
}

// Calls f(Tag<T>{}) with the C++ type T of dtype t, to fill a params struct
// whose layout matches the Metal one for that dtype.
template <typename T>
struct Tag {
  using type = T;
};
template <typename F>
void visit_dtype(const OpSpec& op, c10::ScalarType t, F&& f) {
  switch (t) {
    case c10::kFloat: return f(Tag<float>{});
    case c10::kHalf: return f(Tag<c10::Half>{});
    case c10::kBFloat16: return f(Tag<c10::BFloat16>{});
    case c10::kLong: return f(Tag<int64_t>{});
    case c10::kInt: return f(Tag<int32_t>{});
    case c10::kShort: return f(Tag<int16_t>{});
    case c10::kChar: return f(Tag<int8_t>{});
    case c10::kByte: return f(Tag<uint8_t>{});
    case c10::kBool: return f(Tag<bool>{});
    case c10::kComplexFloat: return f(Tag<c10::complex<float>>{});
    case c10::kComplexHalf: return f(Tag<c10::complex<c10::Half>>{});
    case c10::kUInt16: return f(Tag<uint16_t>{});
    case c10::kUInt32: return f(Tag<uint32_t>{});
    case c10::kUInt64: return f(Tag<uint64_t>{});
    default: TORCH_CHECK_NOT_IMPLEMENTED(false, op.name, ": no kernel computes in dtype ", t);
  }
}

// exec_*_kernel converts its alpha to the computation dtype itself: checked first, so that a value
// beyond that dtype (a fill of 300 for int8) raises naming the op.
inline void check_scalar_fits(const OpSpec& op, const c10::Scalar& s, c10::ScalarType t) {
  visit_dtype(op, t, [&](auto tag) { (void)scalar_as<typename decltype(tag)::type>(op, s); });
}

// The same for an alpha in opmath_t of the computation dtype t (scalar_as_opmath's checks).
inline void check_opmath_scalar_fits(const OpSpec& op, const c10::Scalar& s, c10::ScalarType t) {
  visit_dtype(op, t, [&](auto tag) { (void)scalar_as_opmath<typename decltype(tag)::type>(op, s); });
}

// c10/metal's opmath_t as a dtype (OpMath above): the scalar_arg_type of an alpha in opmath.
inline c10::ScalarType opmath_type(const OpSpec& op, c10::ScalarType t) {
  c10::ScalarType result = t;
  visit_dtype(op, t, [&](auto tag) {
    result = c10::CppTypeToScalarType<opmath_t<typename decltype(tag)::type>>::value;
  });
  return result;
}

} // namespace mpsgen
