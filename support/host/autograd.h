// What generated/autograd.cpp shares: the pieces of torch's VariableType kernels that
// are the same for every op, and the helpers `derivatives:` formulas may call beside
// ATen's own functions. Formulas are derivatives.yaml's C++ expression language; these
// helpers mirror the ones of torch/csrc/autograd/FunctionsManual.h that libtorch does
// not export.
#pragma once

#include <ATen/ATen.h>  // formulas call ATen's functions and operators
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/util/string_view.h>
#include <torch/csrc/autograd/VariableTypeUtils.h>
#include <torch/csrc/autograd/functions/utils.h>

#include <optional>
#include <string>
#include <utility>

namespace mpsgen::autograd {

using torch::autograd::SavedVariable;
using torch::autograd::variable_list;

// ---- helpers a formula may call ------------------------------------------------

// derivatives.yaml's handle_r_to_c: a real input's gradient is the real part of a complex one.
inline at::Tensor handle_r_to_c(c10::ScalarType input, at::Tensor grad) {
  if (!c10::isComplexType(input) && grad.is_complex()) {
    return at::real(grad);
  }
  return grad;
}

inline at::Tensor handle_r_to_c(const at::Tensor& input, at::Tensor grad) {
  return handle_r_to_c(input.scalar_type(), std::move(grad));
}

inline at::Tensor handle_r_to_c(const at::Scalar& input, at::Tensor grad) {
  return input.isComplex() || !grad.is_complex() ? grad : at::real(grad);
}

// ---- what the generated kernels share ---------------------------------------------

// A backward through an input ops.yaml gives no formula for.
[[noreturn]] inline at::Tensor no_formula(const char* op, const char* arg, const char* origin) {
  TORCH_CHECK(false, op, ": no derivative formula for input '", arg, "' (ops.yaml entry at ", origin,
              "); add `derivatives: {", arg, ": <expression>}` to the entry to differentiate through it");
}

// What a Node keeps of a non-Tensor argument: the value, a string_view as a string.
template <typename T>
T keep(const T& value) {
  return value;
}

inline std::string keep(c10::string_view value) {
  return std::string(value);
}

inline std::optional<std::string> keep(const std::optional<c10::string_view>& value) {
  return value.has_value() ? std::optional<std::string>(std::string(*value)) : std::nullopt;
}

// A `Tensor?` argument saved for backward, and how the formula reads it back.
inline SavedVariable save_optional(const std::optional<at::Tensor>& t) {
  return t.has_value() ? SavedVariable(*t, false) : SavedVariable();
}

inline std::optional<at::Tensor> unpack_optional(const SavedVariable& saved) {
  at::Tensor t = saved.unpack();
  return t.defined() ? std::optional<at::Tensor>(std::move(t)) : std::nullopt;
}

// Calls the op's kernel below autograd, as VariableType's kernels do.
template <typename Sig, typename... Args>
decltype(auto) below_autograd(const c10::TypedOperatorHandle<Sig>& op, c10::DispatchKeySet ks, Args&&... args) {
  at::AutoDispatchBelowADInplaceOrView guard;
  return op.redispatch(ks & c10::after_autograd_keyset, std::forward<Args>(args)...);
}

// An out= variant's check: torch's out= functions refuse autograd when an input or out
// requires grad (and grad mode is on).
template <typename... Tensors>
void check_out(const char* name, const Tensors&... tensors) {
  TORCH_CHECK(!torch::autograd::compute_requires_grad(tensors...), name,
              ": functions with out=... arguments don't support automatic differentiation, "
              "but one of the arguments requires grad.");
}

// The backward of an op whose results are bool or integer, written in place into a tensor
// that requires grad: the values no longer depend on the inputs, so no gradient flows
// (an undefined gradient is a zero one), as derivatives.yaml's `zeros_like` for lt_ and eq_.
struct NoGradientBackward final : public torch::autograd::TraceableFunction {
  explicit NoGradientBackward(std::string op) : op_(std::move(op)) {}
  variable_list apply(variable_list&& /*grads*/) override {
    return variable_list(num_outputs());
  }
  std::string name() const override {
    return op_ + "Backward";
  }

 private:
  std::string op_;
};

} // namespace mpsgen::autograd
