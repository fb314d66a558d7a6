// Float math the compiler can vectorise: the Metal host shim's exp, exp2, exp10, log, log2,
// log10, sinh, cosh and tanh (metal_stdlib), written as straight-line arithmetic instead of
// libm calls.
//
// A libm call in the launcher's loop over grid threads (support/cpu/kernel_launch.h) keeps the
// loop scalar: one call per element, where torch's own CPU kernels run SLEEF's 8-wide
// functions. These bodies are inlined into that loop and vectorise with it. Each computes in
// double, so the float result is within 0.5 ulp plus about 2^-40 of the exact value (glibc's
// expf/logf, also computed in double, are within 0.5 ulp plus about 2^-30), and its bits do
// not depend on how the loop was vectorised: no lane ever calls another implementation, so a
// thread's element gives the same value in a vectorised loop, in its scalar remainder or in a
// strided kernel's scalar loop, whatever the ISA variant and the thread count.
//
// No tables (a table lookup in a vectorised loop is a gather); divisions only where the
// formula has one (log, sinh, cosh, tanh).
// Polynomial coefficients are Taylor coefficients, computed by the compiler from the constants.
#pragma once
#pragma GCC system_header

#include <cstdint>

namespace mpsgen_vmath {

inline double as_double(uint64_t b) { return __builtin_bit_cast(double, b); }
inline uint64_t bits_of(double d) { return __builtin_bit_cast(uint64_t, d); }

constexpr double LN2 = 0x1.62e42fefa39efp-1;      // ln 2, rounded to double
constexpr double LOG2E = 0x1.71547652b82fep0;     // 1 / ln 2
constexpr double LOG2_10 = 0x1.a934f0979a371p1;   // log2(10)
constexpr double LOG10_2 = 0x1.34413509f79ffp-2;  // log10(2)

// 2^z for z in [-231, 188]: z = k + r with k an integer and |r| <= 1/2, 2^r by its Taylor
// polynomial in r ln 2 (degree 10: truncation below 2^-42 relative), 2^k put into the exponent.
inline double exp2_reduced(double z) {
  constexpr double SHIFT = 0x1.8p52;  // z + SHIFT rounds z to an integer held in the low bits
  const double t = z + SHIFT;
  const double r = z - (t - SHIFT);
  constexpr double c1 = LN2, c2 = c1 * LN2 / 2, c3 = c2 * LN2 / 3, c4 = c3 * LN2 / 4, c5 = c4 * LN2 / 5,
                   c6 = c5 * LN2 / 6, c7 = c6 * LN2 / 7, c8 = c7 * LN2 / 8, c9 = c8 * LN2 / 9, c10 = c9 * LN2 / 10;
  const double p =
      1.0 + r * (c1 + r * (c2 + r * (c3 + r * (c4 + r * (c5 + r * (c6 + r * (c7 + r * (c8 + r * (c9 + r * c10)))))))));
  const double scale = as_double((bits_of(t) + 1023) << 52);  // 2^k: k + 1023 in the exponent field
  return p * scale;
}

// z clamped where exp/exp2/exp10 of float are 0 or inf anyway (NaN passes through).
inline double clamp_exponent(double z) { return z < -200.0 ? -200.0 : (z > 150.0 ? 150.0 : z); }

inline float exp2(float x) { return float(exp2_reduced(clamp_exponent(double(x)))); }
inline float exp(float x) { return float(exp2_reduced(clamp_exponent(double(x) * LOG2E))); }
inline float exp10(float x) { return float(exp2_reduced(clamp_exponent(double(x) * LOG2_10))); }

// log2(x) for finite x > 0, in double: x = m 2^e with m in [sqrt(1/2), sqrt(2)), then
// ln m = 2 atanh(s), s = (m - 1) / (m + 1), |s| <= 0.1716, by its series to s^15 (truncation
// below 2^-44 relative).
inline double log2_finite(float x) {
  const bool subnormal = __builtin_bit_cast(uint32_t, x) < 0x00800000u;  // includes +0
  const uint32_t ix = __builtin_bit_cast(uint32_t, subnormal ? x * 0x1p23f : x);
  const uint32_t tmp = ix - 0x3f3504f3u;                // bits of sqrt(1/2) as a float
  const int e = int32_t(tmp) >> 23;                     // the exponent that puts m in range
  const double m = double(__builtin_bit_cast(float, ix - (tmp & 0xff800000u)));
  const double f = m - 1.0;
  const double s = f / (2.0 + f);
  const double s2 = s * s;
  const double series =
      1.0 + s2 * (1.0 / 3 + s2 * (1.0 / 5 + s2 * (1.0 / 7 + s2 * (1.0 / 9 + s2 * (1.0 / 11 + s2 * (1.0 / 13 + s2 / 15))))));
  return double(e - (subnormal ? 23 : 0)) + (2.0 * LOG2E) * s * series;
}

// log of float's special operands, as C and Metal define them: -inf at +-0, NaN below 0
// and for NaN, +inf at +inf; `finite` otherwise.
inline float log_special(float x, float finite) {
  float r = x == 0.0f ? -__builtin_inff() : finite;
  r = x == __builtin_inff() ? x : r;
  return (x < 0.0f) | (x != x) ? __builtin_nanf("") : r;
}

inline float log2(float x) { return log_special(x, float(log2_finite(x))); }
inline float log(float x) { return log_special(x, float(log2_finite(x) * LN2)); }
inline float log10(float x) { return log_special(x, float(log2_finite(x) * LOG10_2)); }

// e^|x| for the hyperbolic functions, |x| clamped where their float results are inf or +-1
// anyway (NaN passes through).
inline double exp_abs(float x, double cap) {
  const double a = __builtin_fabs(double(x));
  return exp2_reduced((a > cap ? cap : a) * LOG2E);
}
// Below 2^-8 the Taylor series to x^7 (truncation below 2^-60 relative); above, from e^|x|
// (e^|x| - 1 loses at most 9 of its 52 bits there).
inline float sinh(float x) {
  const double d = double(x), d2 = d * d, e = exp_abs(x, 100.0);
  const double small = d + d * d2 * (1.0 / 6 + d2 * (1.0 / 120 + d2 / 5040));  // keeps -0
  const double large = __builtin_copysign(0.5 * (e - 1.0 / e), d);
  return float(__builtin_fabs(d) < 0x1p-8 ? small : large);
}
inline float cosh(float x) {
  const double e = exp_abs(x, 100.0);
  return float(0.5 * (e + 1.0 / e));
}
// tanh = (e^2|x| - 1) / (e^2|x| + 1) with the sign of x; below 2^-8 its Taylor series to x^9.
inline float tanh(float x) {
  const double d = double(x), d2 = d * d, e = exp_abs(x, 20.0);
  const double e2 = e * e;
  const double small =
      __builtin_copysign(__builtin_fabs(d) * (1.0 - d2 * (1.0 / 3 - d2 * (2.0 / 15 - d2 * (17.0 / 315 - d2 * (62.0 / 2835))))), d);
  const double large = __builtin_copysign((e2 - 1.0) / (e2 + 1.0), d);
  return float(__builtin_fabs(d) < 0x1p-8 ? small : large);
}

}  // namespace mpsgen_vmath
