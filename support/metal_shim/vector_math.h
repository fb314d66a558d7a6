// Float math the compiler can vectorise: the Metal host shim's exp, exp2, exp10, log, log2,
// log10, sinh, cosh, tanh, atan and atan2 (metal_stdlib), written as straight-line arithmetic
// instead of libm calls.
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
// formula has one (log, sinh, cosh, tanh, atan, atan2).
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

constexpr double PI = 0x1.921fb54442d18p1;
constexpr double TAN_PI_8 = 0x1.a827999fcef32p-2;  // tan(pi/8) = sqrt(2) - 1

// atan(u) for |u| <= tan(pi/8) (plus a rounding), by its Taylor series to u^27 (truncation
// below 2^-39 relative).
inline double atan_reduced(double u) {
  const double u2 = u * u;
  double p = -1.0 / 27;
  for (int k = 25; k >= 3; k -= 2) p = (k % 4 == 1 ? 1.0 : -1.0) / k + u2 * p;  // unrolled: k is constant
  return u + u * (u2 * p);
}

// atan(lo / hi) for 0 <= lo <= hi (floats held in doubles, hi > 0), in [0, pi/4]. Above
// tan(pi/8), atan(t) = pi/4 + atan((t - 1) / (t + 1)), with (lo - hi) / (hi + lo) for the
// quotient: lo and hi are within a factor 2.5 there, so the sum and difference are exact and one
// division serves both branches.
inline double atan_ratio(double lo, double hi) {
  const bool upper = lo > TAN_PI_8 * hi;
  const double num = upper ? lo - hi : lo, den = upper ? hi + lo : hi;
  return (upper ? PI / 4 : 0.0) + atan_reduced(num / den);
}

// atan2 as C99 Annex F defines it (the sign of zeros and infinities included): the angle of
// the smaller magnitude over the larger, then reflected into the octant of (x, y).
inline float atan2(float y, float x) {
  const double ay = __builtin_fabs(double(y)), ax = __builtin_fabs(double(x));
  const bool steep = ay > ax;  // the angle from the y axis: pi/2 - atan(ax / ay)
  double lo = steep ? ax : ay, hi = steep ? ay : ax;
  const bool both_inf = lo == __builtin_inf();  // +-pi/4, +-3pi/4
  lo = both_inf ? 1.0 : lo;
  hi = both_inf || hi == 0.0 ? 1.0 : hi;  // both zero: lo = 0, angle 0 (or pi)
  double r = atan_ratio(lo, hi);
  r = steep ? PI / 2 - r : r;
  r = __builtin_signbit(x) ? PI - r : r;
  r = __builtin_copysign(r, double(y));
  return (x != x) | (y != y) ? x + y : float(r);
}

inline float atan(float x) { return atan2(x, 1.0f); }

}  // namespace mpsgen_vmath
