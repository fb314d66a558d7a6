// Ternary kernels with a Scalar or a params struct, in the style of c10/metal/indexing.h.
//
// torch 2.13's indexing.h registers ternary ops without a Scalar argument only
// (REGISTER_TERNARY_OP); addcmul/addcdiv's `value` needs one. These kernels and
// REGISTER_TERNARY_ALPHA_OP / REGISTER_OPMATH_TERNARY_ALPHA_OP follow torch's
// ternary kernels and host_name scheme, with the Scalar (or params struct) bound
// right after the operands, as the *_alpha kernels of indexing.h bind theirs.
// The host passes operands of one dtype (it casts mixed inputs first), so there
// are no _cast variants.
#pragma once
#include <c10/metal/indexing.h>

namespace c10 {
namespace metal {

template <typename T, typename A, typename F, typename om_t = T>
kernel void ternary_alpha_dense(
    device result_of<F, T, T, T, A>* out [[buffer(0)]],
    constant T* input [[buffer(1)]],
    constant T* other1 [[buffer(2)]],
    constant T* other2 [[buffer(3)]],
    constant A& alpha [[buffer(4)]],
    uint tid [[thread_position_in_grid]]) {
  F f;
  using res_t = result_of<F, T, T, T, A>;
  out[tid] = static_cast<res_t>(
      f(om_t(input[tid]), om_t(other1[tid]), om_t(other2[tid]), alpha));
}

template <typename T, typename A, typename F, typename om_t = T>
kernel void ternary_alpha_strided(
    device void* output [[buffer(0)]],
    constant void* input [[buffer(1)]],
    constant void* other1 [[buffer(2)]],
    constant void* other2 [[buffer(3)]],
    constant A& alpha [[buffer(4)]],
    constant long* sizes [[buffer(5)]],
    constant long* output_strides [[buffer(6)]],
    constant long* input_strides [[buffer(7)]],
    constant long* other1_strides [[buffer(8)]],
    constant long* other2_strides [[buffer(9)]],
    constant uint& ndim [[buffer(10)]],
    uint index [[thread_position_in_grid]]) {
  F f;
  using res_t = result_of<F, T, T, T, A>;
  int pos[max_ndim];
  pos_from_thread_index(int(index), pos, sizes, ndim);
  const auto input_offs = offset_from_coord(pos, input_strides, ndim);
  const auto other1_offs = offset_from_coord(pos, other1_strides, ndim);
  const auto other2_offs = offset_from_coord(pos, other2_strides, ndim);
  const auto output_offs = offset_from_coord(pos, output_strides, ndim);
  const auto a = val_at_offs<T>(input, input_offs);
  const auto b = val_at_offs<T>(other1, other1_offs);
  const auto c = val_at_offs<T>(other2, other2_offs);
  ref_at_offs<res_t>(output, output_offs) =
      static_cast<res_t>(f(om_t(a), om_t(b), om_t(c), alpha));
}

#define REGISTER_TERNARY_ALPHA_OP_(NAME, DTYPEI, DTYPEA, DTYPEO, OMT)         \
  static_assert(                                                              \
      ::metal::is_same_v<                                                     \
          DTYPEO,                                                             \
          ::c10::metal::                                                      \
              result_of<NAME##_functor, DTYPEI, DTYPEI, DTYPEI, DTYPEA>>,     \
      "Output dtype mismatch for ternary op " #NAME " and input " #DTYPEI);   \
  template [[host_name(#NAME "_strided_" #DTYPEO "_" #DTYPEI                  \
                             "_" #DTYPEA)]] kernel void ::c10::metal::        \
      ternary_alpha_strided<DTYPEI, DTYPEA, NAME##_functor, OMT>(             \
          device void* out,                                                   \
          constant void* input,                                               \
          constant void* other1,                                              \
          constant void* other2,                                              \
          constant DTYPEA& alpha,                                             \
          constant long* sizes,                                               \
          constant long* output_strides,                                      \
          constant long* input_strides,                                       \
          constant long* other1_strides,                                      \
          constant long* other2_strides,                                      \
          constant uint& ndim,                                                \
          uint tid);                                                          \
  template [[host_name(#NAME "_dense_" #DTYPEO "_" #DTYPEI                    \
                             "_" #DTYPEA)]] kernel void ::c10::metal::        \
      ternary_alpha_dense<DTYPEI, DTYPEA, NAME##_functor, OMT>(               \
          device ::c10::metal::                                               \
                  result_of<NAME##_functor, DTYPEI, DTYPEI, DTYPEI, DTYPEA> * \
              out_,                                                           \
          constant DTYPEI * input_,                                           \
          constant DTYPEI * other1_,                                          \
          constant DTYPEI * other2_,                                          \
          constant DTYPEA & alpha,                                            \
          uint tid)

// Inputs promoted to opmath_t (half/bfloat computed in float) before the functor.
#define REGISTER_OPMATH_TERNARY_ALPHA_OP(NAME, DTYPEI, DTYPEA, DTYPEO) \
  REGISTER_TERNARY_ALPHA_OP_(                                          \
      NAME, DTYPEI, DTYPEA, DTYPEO, ::c10::metal::opmath_t<DTYPEI>)

#define REGISTER_TERNARY_ALPHA_OP(NAME, DTYPEI, DTYPEA, DTYPEO) \
  REGISTER_TERNARY_ALPHA_OP_(NAME, DTYPEI, DTYPEA, DTYPEO, DTYPEI)

} // namespace metal
} // namespace c10
