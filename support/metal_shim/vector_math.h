// Float math the compiler can vectorise: the Metal host shim's exp, exp2, exp10, log, log2,
// log10, ldexp, sinh, cosh, tanh, sin, cos, tan, atan and atan2 (metal_stdlib), written as
// straight-line arithmetic instead of libm calls.
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
// One table, for sin/cos/tan's argument reduction (a lookup in a vectorised loop is a gather);
// divisions only where the formula has one (log, sinh, cosh, tanh, tan, atan, atan2).
// Polynomial coefficients are Taylor coefficients, computed by the compiler from the constants,
// except sin_quarter_turns' (a Chebyshev fit, two terms shorter than Taylor's for the same error).
#pragma once
#pragma GCC system_header

#include <cstdint>
#include <type_traits>

namespace mpsgen_vmath {

constexpr double as_double(uint64_t b) { return __builtin_bit_cast(double, b); }
constexpr uint64_t bits_of(double d) { return __builtin_bit_cast(uint64_t, d); }

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

// x 2^e, rounded once (to a subnormal too): exact in double for |e| <= 400, and beyond that
// the float result is 0 or inf anyway.
inline float ldexp(float x, int e) {
  const int c = e < -400 ? -400 : (e > 400 ? 400 : e);
  return float(double(x) * as_double(uint64_t(int64_t(c) + 1023) << 52));
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

// ---- sin, cos, tan ----
// x 2/pi = n + t with |t| <= 1/2, exactly for every float (Payne and Hanek's reduction): a float
// is M 2^E with M an integer below 2^24, and the bits of 2/pi that weigh 2^(2 - E) or more only
// add multiples of 4 to x 2/pi, which sin and cos ignore. So |x| times the next 24 bits of 2/pi
// (exact: 24 bits by 24), the 24 after (exact) and the 53 after those gives n mod 4, and t to
// about 2^-70: the closest a float comes to a multiple of pi/2 is t = 2^-29.9 (at 0x1.f37c8ap+95,
// a sweep over every float outside the repo), so t keeps 40 bits where it is smallest. The
// chunks are looked up by the exponent field: a table of 256 entries, two gathers (the first two
// chunks as floats in one 64-bit word, the third a double), each about five cycles per eight
// lanes on AMD Zen 4. A row's chunks are scaled by 2^k, k = max(field - 152, 0), so that they stay
// normal floats; |x| is scaled by 2^-k to match (4 M for |x| >= 2^26).
constexpr uint32_t TWO_OVER_PI[9] = {0xa2f9836e, 0x4e441529, 0xfc2757d1, 0xf534ddc0, 0xdb629599,
                                     0x3c439041, 0xfe5163ab, 0xdebbc561, 0xb7246e3a};  // after the point

// Bits [p, p + n) of 2/pi after the binary point (bit 1 weighs 1/2), n <= 53, as a double
// times 2^k.
constexpr double two_over_pi_bits(int p, int n, int k) {
  const int b = p - 1, w = b / 32, o = b % 32;  // the bits start at bit o of word w
  const unsigned __int128 window = (unsigned __int128)TWO_OVER_PI[w] << 96 | (unsigned __int128)TWO_OVER_PI[w + 1] << 64 |
                                   (unsigned __int128)TWO_OVER_PI[w + 2] << 32 | TWO_OVER_PI[w + 3];
  const uint64_t v = uint64_t(window << o >> (128 - n));
  return double(v) * as_double(uint64_t(1023 + k - (p + n - 1)) << 52);  // times 2^(k - (p + n - 1))
}

struct ReductionChunks {
  uint64_t c01;  // chunks 0 and 1 (24 bits each) as floats, chunk 0 in the low half
  double c2;     // chunk 2 (53 bits)
};
struct ReductionTable {
  ReductionChunks by_exponent[256];
};
constexpr uint32_t reduction_scale(uint32_t field) { return field > 152 ? field - 152 : 0; }
constexpr ReductionTable make_reduction_table() {
  ReductionTable t{};
  for (int f = 0; f < 256; ++f) {
    const int e = (f == 0 ? 1 : f) - 150;  // the exponent of M's unit (subnormals share field 1's)
    const int p = e - 1 > 1 ? e - 1 : 1;   // the first bit of 2/pi that is not a multiple of 4 here
    const int k = int(reduction_scale(uint32_t(f)));
    const uint64_t c0 = __builtin_bit_cast(uint32_t, float(two_over_pi_bits(p, 24, k)));
    const uint64_t c1 = __builtin_bit_cast(uint32_t, float(two_over_pi_bits(p + 24, 24, k)));
    t.by_exponent[f] = {c0 | c1 << 32, two_over_pi_bits(p + 48, 53, k)};
  }
  return t;
}
// A template, so a unit that calls no sin, cos or tan never computes the table.
template <typename = void>
inline constexpr ReductionTable REDUCTION_TABLE = make_reduction_table();

// The kernel launcher (support/cpu/kernel_launch.h) tells the compiler that no kernel buffer
// `p` is this table: otherwise a loop looking the table up does not vectorise (clang cannot
// bound the lookup's index, so it cannot check the table against the buffers the loop writes).
template <typename P>
inline void assume_not_a_table(P p) {
#if defined(__has_builtin) && __has_builtin(__builtin_assume_separate_storage)
  if constexpr (std::is_pointer_v<P>) {
    __builtin_assume_separate_storage((const void*)p, (const void*)&REDUCTION_TABLE<>);
  }
#else
  (void)p;
#endif
}

// |x| 2/pi = n + t with t in [-1/2, 1/2] (returned) and q = n mod 4.
inline double reduce_quarter_turns(float x, uint32_t& q) {
  const uint32_t bits = __builtin_bit_cast(uint32_t, x) & 0x7fffffffu;
  const ReductionChunks& c = REDUCTION_TABLE<>.by_exponent[bits >> 23];
  const double a = double(__builtin_bit_cast(float, bits)) * as_double(uint64_t(1023 - reduction_scale(bits >> 23)) << 52);
  const double c0 = __builtin_bit_cast(float, uint32_t(c.c01)), c1 = __builtin_bit_cast(float, uint32_t(c.c01 >> 32));
  const double p0 = a * c0, p1 = a * c1, p2 = a * c.c2;  // p0 < 2^26 and p1 exact
  constexpr double SHIFT = 0x1.8p52;  // v + SHIFT rounds v (below 2^51) to an integer in the low bits
  const double n0 = p0 + SHIFT;
  const double f0 = p0 - (n0 - SHIFT);   // exact, in [-1/2, 1/2]
  const double s = f0 + p1, v = s - f0;  // s + e = f0 + p1 exactly (Knuth's two-sum)
  const double e = (f0 - (s - v)) + (p1 - v);
  const double n1 = s + SHIFT;
  q = uint32_t(bits_of(n0) + bits_of(n1)) & 3u;
  return (s - (n1 - SHIFT)) + (e + p2);
}

// sin(u pi/2) for |u| <= 1: u P(u^2), P the degree-6 Chebyshev fit (mpmath's chebyfit) of
// sin(pi/2 sqrt(v)) / sqrt(v) on [0, 1], rounded to double: relative error below 2^-43.5.
inline double sin_quarter_turns(double u) {
  constexpr double P[7] = {0x1.d53abdeb199c1p-25, -0x1.e29b82ab98ea9p-19, 0x1.50770f6a5a66bp-13,
                           -0x1.32d2c9b2d1df5p-8, 0x1.466bc66ed3d1cp-4,  -0x1.4abbce624ad99p-1,
                           0x1.921fb54442bb4p+0};
  const double v = u * u;
  double p = P[0];
  for (int k = 1; k < 7; ++k) p = p * v + P[k];  // unrolled: k is constant
  return u * p;
}

// NaN where x is an infinity or NaN, r otherwise (-0 too): a product, not a select, so the
// compiler does not make the table lookup conditional (a branch per lane).
inline float nan_unless_finite(float x, float r) { return r * (1.0f + (x - x)); }

// sin(pi/2 (n + t)) is sin(t pi/2), cos(t pi/2), -sin(t pi/2), -cos(t pi/2) for n mod 4 = 0, 1,
// 2, 3; cos(t pi/2) = sin((1 - |t|) pi/2), so one polynomial serves both.
inline float sin(float x) {
  uint32_t q;
  const double t = reduce_quarter_turns(x, q);
  const double r = sin_quarter_turns(q & 1u ? 1.0 - __builtin_fabs(t) : t);
  const bool negate = ((q & 2u) != 0) != (__builtin_signbit(x) != 0);  // sin(-x) = -sin(x), -0 too
  return nan_unless_finite(x, float(negate ? -r : r));
}
inline float cos(float x) {
  uint32_t q;
  const double t = reduce_quarter_turns(x, q);
  const double r = sin_quarter_turns(q & 1u ? t : 1.0 - __builtin_fabs(t));
  return nan_unless_finite(x, float(((q + 1u) & 2u) != 0 ? -r : r));
}
// tan(pi/2 (n + t)) = tan(t pi/2) for even n, -1 / tan(t pi/2) for odd n.
inline float tan(float x) {
  uint32_t q;
  const double t = reduce_quarter_turns(x, q);
  const double s = sin_quarter_turns(t), c = sin_quarter_turns(1.0 - __builtin_fabs(t));
  const double r = q & 1u ? -c / s : s / c;
  return nan_unless_finite(x, float(__builtin_signbit(x) ? -r : r));
}

}  // namespace mpsgen_vmath
