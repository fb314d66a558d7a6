// Complex math shared by the complex functors of ops.yaml: a float2 holds (real, imaginary),
// as torch's complex64, and everything is computed in float. A half2 (complex32) operand is
// widened first (`float2(z)`) and the result narrowed by the caller (`T(...)`). The non-finite
// edges (infinite or NaN parts, signed zeros) come out as torch's CPU kernels give them.
//
// The generated .metal of every op that registers a complex dtype includes this header
// (templates/kernel.metal.j2). It is Metal: no double, no recursion, no exceptions, no std::;
// arguments by value, so no address spaces.
#pragma once
#include <c10/metal/utils.h>
#include <metal_stdlib>

namespace mpsgen {
namespace complex {

// exp(x + iy) = e^x (cos y + i sin y)
inline float2 exp(const float2 z) {
  if (z.y == 0.0f) {
    return float2(::metal::precise::exp(z.x), z.y);  // a real input stays real (inf * 0 would be NaN)
  }
  if (::metal::isinf(z.x) && z.x < 0.0f) {
    return float2(0.0f, 0.0f);  // e^-inf is 0 whatever the angle, NaN or infinite
  }
  const float m = ::metal::precise::exp(z.x);
  return float2(m * ::metal::precise::cos(z.y), m * ::metal::precise::sin(z.y));
}

// log z = log|z| + i arg z
inline float2 log(const float2 z) {
  const float ax = ::metal::fabs(z.x), ay = ::metal::fabs(z.y);
  // |z| is infinite when either part is, whatever the other (NaN too)
  const float r = (::metal::isinf(ax) || ::metal::isinf(ay)) ? INFINITY : ::c10::metal::hypot(ax, ay);
  return float2(::metal::precise::log(r), ::metal::precise::atan2(z.y, z.x));
}

// log1p z = log(1 + z) = log|1 + z| + i arg(1 + z)
inline float2 log1p(const float2 z) {
  const float x = z.x, y = z.y;
  const float arg = ::metal::precise::atan2(y, x + 1.0f);
  const float ax = ::metal::fabs(x), ay = ::metal::fabs(y);
  if (ax < 0.5f && ay < 0.5f) {
    // near 0, log|1 + z| = log1p(x (2 + x) + y^2) / 2 keeps the digits 1 + x would round away
    const float s = x * (2.0f + x) + y * y;
    return float2(s == 0.0f ? x : 0.5f * ::c10::metal::log1p(s), arg);
  }
  const float u = ::metal::fabs(x + 1.0f);
  const float r = (::metal::isinf(u) || ::metal::isinf(ay)) ? INFINITY : ::c10::metal::hypot(u, ay);
  return float2(::metal::precise::log(r), arg);
}

// the principal square root: t = sqrt((|x| + |z|) / 2); x >= 0: (t, y / 2t), else (|y| / 2t, +-t)
inline float2 sqrt(const float2 z) {
  const float x = z.x, y = z.y;
  if (x == 0.0f && y == 0.0f) {
    return float2(0.0f, y);
  }
  if (::metal::isinf(y)) {
    return float2(INFINITY, y);
  }
  if (::metal::isnan(x) || ::metal::isnan(y)) {
    return float2(NAN, NAN);
  }
  if (::metal::isinf(x)) {
    return x > 0.0f ? float2(x, ::metal::copysign(0.0f, y)) : float2(0.0f, ::metal::copysign(INFINITY, y));
  }
  // scaled so that |x| + |z| cannot overflow
  const float ax = ::metal::fabs(x), ay = ::metal::fabs(y);
  const bool big = ax > 1e37f || ay > 1e37f;
  const float s = big ? 0.25f : 1.0f;
  const float r = ::c10::metal::hypot(ax * s, ay * s);
  float t = ::metal::precise::sqrt((ax * s + r) * 0.5f);
  const float u = (ay * s) / (2.0f * t);
  if (big) {
    t *= 2.0f;
  }
  const float v = big ? u * 2.0f : u;
  return x >= 0.0f ? float2(t, ::metal::copysign(v, y)) : float2(v, ::metal::copysign(t, y));
}

// tanh(a + ib) = (sinh a cosh a + i sin b cos b) / (sinh^2 a + cos^2 b), no cancellation
inline float2 tanh(const float2 z) {
  const float a = z.x, b = z.y;
  if (b == 0.0f) {
    return float2(::metal::precise::tanh(a), b);
  }
  if (::metal::isinf(a)) {
    return float2(::metal::copysign(1.0f, a), 0.0f);  // whatever b is, as torch's CPU
  }
  if (::metal::fabs(a) > 40.0f) {  // the real part is +-1, the imaginary one underflows
    return float2(::metal::copysign(1.0f, a),
                  4.0f * ::metal::precise::sin(b) * ::metal::precise::cos(b) *
                      ::metal::precise::exp(-2.0f * ::metal::fabs(a)));
  }
  const float sh = ::metal::precise::sinh(a);
  const float cb = ::metal::precise::cos(b);
  const float den = sh * sh + cb * cb;
  return float2(sh * ::metal::precise::cosh(a) / den, ::metal::precise::sin(b) * cb / den);
}

// 1 / (a + ib) = (a - ib) / (a^2 + b^2), scaled by max(|a|, |b|) against overflow
inline float2 reciprocal(const float2 z) {
  const float a = z.x, b = z.y;
  // one infinite part (the other finite) gives a signed 0, two give NaN, as torch's CPU
  if (::metal::isinf(a) != ::metal::isinf(b) && !::metal::isnan(a) && !::metal::isnan(b)) {
    return float2(::metal::copysign(0.0f, a), -::metal::copysign(0.0f, b));
  }
  const float s = ::metal::max(::metal::fabs(a), ::metal::fabs(b));
  const float as = a / s, bs = b / s;
  const float d = s * (as * as + bs * bs);
  return float2(as / d, -bs / d);
}

} // namespace complex
} // namespace mpsgen
