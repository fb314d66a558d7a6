"""The Metal host shim (support/metal_shim) against the Metal Shading Language's definitions.

Each case is a Metal expression compiled the way the CPU build compiles a .metal
(codegen/emit/host_names.py's preprocess: shim first, Metal syntax rewritten, then g++) in
one small program, and its value is compared with what the specification defines,
computed independently here (Python, numpy float32, torch for half/bfloat rounding).
Needs g++ and torch's headers, not the built extension.
"""
from __future__ import annotations

import math
import subprocess
import textwrap

import numpy as np
import pytest
import torch

from mpsgen.codegen.build import CPU_SUPPORT, SHIM_INCLUDE, kernel_include_dirs, torch_include
from mpsgen.codegen.emit.host_names import preprocess

F32 = np.float32
INF = float("inf")
NAN = float("nan")

PRELUDE = """
#include <c10/metal/igamma.h>
#include <c10/metal/special_math.h>
#include <c10/metal/utils.h>
#include <metal_stdlib>
using namespace metal;

inline void out_one(float v) { __builtin_printf(" %a", double(v)); }
inline void out_one(double v) { __builtin_printf(" %a", v); }
inline void out_one(half v) { __builtin_printf(" %a", double(float(v))); }
inline void out_one(bfloat v) { __builtin_printf(" %a", double(float(v))); }
inline void out_one(bool v) { __builtin_printf(" %d", int(v)); }
template <typename T, metal::enable_if_t<std::is_integral_v<T> && std::is_signed_v<T>, bool> = true>
inline void out_one(T v) { __builtin_printf(" %lld", (long long)v); }
template <typename T, metal::enable_if_t<std::is_integral_v<T> && std::is_unsigned_v<T>, bool> = true>
inline void out_one(T v) { __builtin_printf(" %llu", (unsigned long long)v); }
template <typename T, int N>
inline void out_one(metal::vec<T, N> v) { for (int i = 0; i < N; ++i) out_one(v[i]); }
template <typename T>
inline void out(int i, T v) { __builtin_printf("%d", i); out_one(v); __builtin_printf("\\n"); }
"""


def _compile_and_run(tmp_path, source: str) -> str:
    metal = tmp_path / "probe.metal"
    metal.write_text(source)
    text = preprocess("c++", metal, [SHIM_INCLUDE, CPU_SUPPORT, torch_include()])
    exe = tmp_path / "probe"
    r = subprocess.run(["c++", "-std=c++20", "-O0", "-x", "c++", "-", "-o", str(exe)],
                       input=text, capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    assert not r.stderr, r.stderr[-4000:]  # quiet: no warnings from torch or the shim
    return subprocess.run([str(exe)], capture_output=True, text=True, check=True, timeout=60).stdout


def evaluate(tmp_path, expressions: list[str], setup: str = "") -> list[list[float]]:
    """Each Metal expression's value(s), component by component."""
    body = "\n".join(f"  out({i}, {e});" for i, e in enumerate(expressions))
    source = PRELUDE + setup + "\nint main() {\n" + body + "\n}\n"
    results: dict[int, list[float]] = {}
    for line in _compile_and_run(tmp_path, source).splitlines():
        i, *values = line.split()
        results[int(i)] = [float.fromhex(v) if "0x" in v or v in ("inf", "-inf", "nan", "-nan")
                           else int(v) for v in values]
    return [results[i] for i in range(len(expressions))]


def same(actual, expected, ulps: float = 0) -> bool:
    if isinstance(actual, int) and isinstance(expected, int):
        return actual == expected  # integer results exactly, beyond float's 24 bits
    actual, expected = float(actual), float(expected)
    if math.isnan(expected):
        return math.isnan(actual)
    if expected == 0 and ulps == 0:
        return actual == 0 and math.copysign(1, actual) == math.copysign(1, expected)
    if math.isinf(expected) or ulps == 0:
        return actual == expected
    return abs(actual - expected) <= ulps * float(np.spacing(F32(abs(expected))))


def check(tmp_path, cases: list[tuple], setup: str = ""):
    """cases: (metal_expression, expected value or list of component values[, ulps])."""
    got = evaluate(tmp_path, [c[0] for c in cases], setup)
    bad = []
    for case, actual in zip(cases, got):
        expr, expected, ulps = case[0], case[1], case[2] if len(case) > 2 else 0
        expected = expected if isinstance(expected, (list, tuple)) else [expected]
        if len(actual) != len(expected) or not all(same(a, e, ulps) for a, e in zip(actual, expected)):
            bad.append(f"{expr}: got {actual}, specified {list(map(float, expected))}")
    assert not bad, "\n".join(bad)


def f32(x) -> float:
    return float(F32(x))


def half(x) -> float:
    return torch.tensor(x, dtype=torch.float64).to(torch.float16).item()


def bf16(x) -> float:
    return torch.tensor(x, dtype=torch.float64).to(torch.bfloat16).item()


# ---- issue 16: sinpi/cospi/tanpi exact, nextafter in the narrow type ----------------

def test_sinpi_cospi_tanpi_are_exact_at_integers_and_half_integers(tmp_path):
    cases = []
    for k in range(-6, 7):
        cases.append((f"sinpi({k}.0f)", math.copysign(0.0, k) if k else 0.0))
        h = f"{k + 0.5!r}f"  # k + 1/2
        cases.append((f"cospi({h})", 0.0))
        cases.append((f"tanpi({k}.0f)", math.copysign(0.0, k) if k else 0.0))
        cases.append((f"cospi({k}.0f)", 1.0 if k % 2 == 0 else -1.0))
        cases.append((f"sinpi({h})", 1.0 if k % 2 == 0 else -1.0))
        # tan(pi x) at k + 1/2: +inf for even k, -inf for odd k (IEEE 754 tanPi)
        cases.append((f"tanpi({h})", INF if k % 2 == 0 else -INF))
    for x in (0.25, 1 / 3, -0.7, 2.2, 1e-3, 12345.25, -1e-30):
        cases.append((f"sinpi({x!r}f)", f32(math.sin(math.pi * float(F32(x)))), 1))
        cases.append((f"cospi({x!r}f)", f32(math.cos(math.pi * float(F32(x)))), 1))
    cases += [("sinpi(half(3.0f))", 0.0), ("sinpi(bfloat(-4.0f))", -0.0), ("cospi(half(2.5f))", 0.0),
              ("sinpi(INFINITY)", NAN), ("sinpi(NAN)", NAN),
              ("sinpi(float2(1.0f, 0.5f))", [0.0, 1.0])]
    check(tmp_path, cases)


def test_log_gamma_has_its_poles(tmp_path):
    xs = [-3.0, -1.0, -2.5, -3.0001, -0.5, 0.5, 7.25]
    ref = torch.lgamma(torch.tensor(xs, dtype=torch.float32)).tolist()
    # 64 ulps: c10's reflection formula loses bits where lgamma crosses 0 (near -2.5)
    check(tmp_path, [(f"c10::metal::log_gamma({x!r}f)", r, 64) for x, r in zip(xs, ref)])


@pytest.mark.parametrize("metal_type,dtype", [("half", torch.float16), ("bfloat", torch.bfloat16)])
def test_nextafter_steps_in_the_narrow_type(tmp_path, metal_type, dtype):
    pairs = [(1, 2), (1, 0), (INF, -INF), (-INF, 0), (0, 1), (0, -1), (-1, 0), (2, 2), (-0.0, 0.0),
             (65504 if dtype == torch.float16 else 3e38, INF), (NAN, 1), (1, NAN), (1e-3, -5)]
    x = torch.tensor([p[0] for p in pairs], dtype=dtype)
    y = torch.tensor([p[1] for p in pairs], dtype=dtype)
    ref = torch.nextafter(x, y).tolist()
    t = metal_type
    exprs = [f"nextafter({t}({float(a)!r}f), {t}({float(b)!r}f))".replace("inff", "INFINITY")
             .replace("nanf", "NAN") for a, b in zip(x.tolist(), y.tolist())]
    check(tmp_path, list(zip(exprs, ref)) + [
        (f"nextafter({t}2({t}(1.0f), {t}(1.0f)), {t}2({t}(2.0f), {t}(0.0f)))", ref[:2])])


# ---- issue 16: the shim declares no math function Metal lacks -----------------------

@pytest.mark.parametrize("name", ["log1p", "expm1", "erf", "erfc", "lgamma", "tgamma", "cbrt"])
def test_no_unary_math_beyond_metal(tmp_path, name):
    _assert_undeclared(tmp_path, f"::metal::{name}(0.5f)")


def test_no_hypot_beyond_metal(tmp_path):
    _assert_undeclared(tmp_path, "::metal::hypot(3.0f, 4.0f)")


def _assert_undeclared(tmp_path, expr: str):
    metal = tmp_path / "probe.metal"
    metal.write_text(f"#include <metal_stdlib>\nfloat probe() {{ return {expr}; }}\n")
    text = preprocess("c++", metal, [SHIM_INCLUDE, CPU_SUPPORT, torch_include()])
    r = subprocess.run(["c++", "-std=c++20", "-fsyntax-only", "-x", "c++", "-"],
                       input=text, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and "is not a member of" in r.stderr, r.stderr[-2000:]


def test_c10_igamma_compiles_and_matches_torch(tmp_path):
    """igamma.h calls ::log1p/::expm1/::lgamma: unambiguous only without the shim's own."""
    pairs = [(0.5, 0.5), (2.0, 3.0), (10.0, 2.5), (1.0, 1e-3), (3.0, 30.0)]
    a = torch.tensor([p[0] for p in pairs])
    x = torch.tensor([p[1] for p in pairs])
    lower, upper = torch.special.gammainc(a, x).tolist(), torch.special.gammaincc(a, x).tolist()
    cases = [(f"c10::metal::igamma({p[0]!r}f, {p[1]!r}f)", r, 64) for p, r in zip(pairs, lower)]
    cases += [(f"c10::metal::igammac({p[0]!r}f, {p[1]!r}f)", r, 64) for p, r in zip(pairs, upper)]
    check(tmp_path, cases)


# ---- issue 11: the Metal Standard Library's functions, scalar and vector -------------

def test_common_functions(tmp_path):
    def smooth(e0, e1, x):
        t = min(max((x - e0) / (e1 - e0), 0.0), 1.0)
        return t * t * (3 - 2 * t)

    check(tmp_path, [
        # mix(x, y, a) = x + (y - x) * a
        ("mix(1.0f, 3.0f, 0.25f)", 1.5),
        ("mix(float2(0.0f, 10.0f), float2(4.0f, 20.0f), 0.5f)", [2.0, 15.0]),
        ("mix(float3(0.0f), float3(1.0f, 2.0f, 4.0f), float3(0.5f, 0.25f, 1.0f))", [0.5, 0.5, 4.0]),
        ("mix(half(1.0f), half(3.0f), half(0.5f))", 2.0),
        # smoothstep: clamp((x - e0) / (e1 - e0), 0, 1), then t * t * (3 - 2t)
        ("smoothstep(0.0f, 1.0f, 0.25f)", f32(smooth(0, 1, 0.25))),
        ("smoothstep(1.0f, 2.0f, 0.5f)", 0.0),
        ("smoothstep(1.0f, 2.0f, 3.0f)", 1.0),
        ("smoothstep(float3(0.0f), float3(2.0f), float3(-1.0f, 0.5f, 5.0f))",
         [0.0, f32(smooth(0, 2, 0.5)), 1.0]),
        ("smoothstep(half(0.0f), half(1.0f), half(0.5f))", 0.5),
        # step(edge, x) = x < edge ? 0 : 1
        ("step(0.5f, 0.4f)", 0.0), ("step(0.5f, 0.5f)", 1.0),
        ("step(float2(1.0f, 2.0f), float2(1.5f, 1.5f))", [1.0, 0.0]),
        # clamp(x, lo, hi) = fmin(fmax(x, lo), hi)
        ("clamp(5.0f, 0.0f, 1.0f)", 1.0), ("clamp(-5, -2, 3)", -2), ("clamp(uint(7), 1u, 5u)", 5),
        ("clamp(float4(-1.0f, 0.5f, 2.0f, NAN), 0.0f, 1.0f)", [0.0, 0.5, 1.0, 0.0]),
        ("clamp(int3(-4, 2, 9), int3(0), int3(5))", [0, 2, 5]),
        ("saturate(1.5f)", 1.0), ("saturate(-0.5f)", 0.0), ("saturate(half(0.25f))", 0.25),
        ("saturate(float2(0.25f, 3.0f))", [0.25, 1.0]),
        # sign: 1 for > 0, -1 for < 0, +-0 for +-0, 0 for NaN
        ("sign(-2.0f)", -1.0), ("sign(-0.0f)", -0.0), ("sign(0.0f)", 0.0), ("sign(NAN)", 0.0),
        ("sign(float4(3.0f, 0.0f, -0.0f, -INFINITY))", [1.0, 0.0, -0.0, -1.0]),
        ("sign(bfloat(-3.0f))", -1.0),
    ])


def test_math_functions(tmp_path):
    frac = lambda x: min(x - math.floor(x), float.fromhex("0x1.fffffep-1"))  # noqa: E731
    check(tmp_path, [
        # rint rounds to nearest even, round away from zero
        ("rint(2.5f)", 2.0), ("rint(3.5f)", 4.0), ("rint(-2.5f)", -2.0), ("rint(float2(0.5f, 1.5f))", [0.0, 2.0]),
        ("round(2.5f)", 3.0), ("round(-2.5f)", -3.0), ("trunc(-2.7f)", -2.0), ("floor(-2.5f)", -3.0),
        ("ceil(float3(-2.5f, 0.2f, 3.0f))", [-2.0, 1.0, 3.0]), ("rint(half(2.5f))", 2.0),
        # fract(x) = x - floor(x), at most the largest value below 1
        ("fract(-0.25f)", 0.75), ("fract(-1e-10f)", f32(frac(float(F32(-1e-10))))), ("fract(3.75f)", 0.75),
        ("fract(half(-0.0001f))", float.fromhex("0x1.ffcp-1")), ("fract(float2(1.5f, -1.5f))", [0.5, 0.5]),
        ("fabs(-3.0f)", 3.0), ("abs(float2(-1.0f, 2.0f))", [1.0, 2.0]), ("abs(-0.0f)", 0.0),
        # min/max/fmin/fmax: the non-NaN operand
        ("fmax(NAN, 1.0f)", 1.0), ("fmin(2.0f, NAN)", 2.0), ("min(1.0f, NAN)", 1.0), ("max(NAN, -1.0f)", -1.0),
        ("min(float2(1.0f, 5.0f), float2(3.0f, 2.0f))", [1.0, 2.0]), ("max(half(1.0f), half(2.0f))", 2.0), ("min(0.5, 2.0)", 0.5),
        ("fmin3(3.0f, 1.0f, 2.0f)", 1.0), ("fmax3(3.0f, 1.0f, 2.0f)", 3.0), ("fmedian3(3.0f, 1.0f, 2.0f)", 2.0),
        ("min3(3, 1, 2)", 1), ("max3(3, 1, 2)", 3), ("median3(3, 1, 2)", 2), ("median3(1.0f, 9.0f, 5.0f)", 5.0),
        ("fma(2.0f, 3.0f, 4.0f)", 10.0), ("fma(float2(1.0f, 2.0f), float2(3.0f), float2(0.5f))", [3.5, 6.5]),
        ("fma(half(2.0f), half(3.0f), half(1.0f))", 7.0),
        ("pow(2.0f, 10.0f)", 1024.0), ("powr(2.0f, 0.5f)", f32(math.sqrt(2)), 1), ("powr(-2.0f, 2.0f)", NAN),
        ("exp10(2.0f)", 100.0), ("exp2(3.0f)", 8.0), ("exp2(float2(-1.0f, 4.0f))", [0.5, 16.0]),
        ("rsqrt(4.0f)", 0.5), ("rsqrt(float2(16.0f, 0.25f))", [0.25, 2.0]), ("log2(8.0f)", 3.0),
        ("log10(1000.0f)", 3.0, 1), ("log(float2(1.0f, M_E_F))", [0.0, 1.0], 1),
        ("sqrt(float4(1.0f, 4.0f, 9.0f, 16.0f))", [1.0, 2.0, 3.0, 4.0]), ("sqrt(half(2.0f))", half(math.sqrt(2))),
        ("exp(float2(0.0f, 1.0f))", [1.0, f32(math.e)], 1), ("sin(half(0.5f))", half(math.sin(0.5))),
        ("atan2(1.0f, 1.0f)", f32(math.pi / 4), 1), ("atan2(float2(0.0f, 1.0f), float2(-1.0f, 0.0f))",
                                                    [f32(math.pi), f32(math.pi / 2)], 1),
        ("tanh(0.5f)", f32(math.tanh(0.5)), 1), ("asinh(1.0f)", f32(math.asinh(1)), 1),
        ("copysign(3.0f, -0.0f)", -3.0), ("copysign(float2(1.0f, -2.0f), float2(-1.0f, 1.0f))", [-1.0, 2.0]),
        ("divide(6.0f, 4.0f)", 1.5), ("fast::divide(1.0f, 4.0f)", 0.25), ("precise::divide(half(3.0f), half(2.0f))", 1.5),
        ("fdim(5.0f, 3.0f)", 2.0), ("fdim(3.0f, 5.0f)", 0.0), ("fmod(7.0f, 3.0f)", 1.0), ("fmod(-7.0f, 3.0f)", -1.0),
        ("fmod(float2(7.5f, -1.0f), float2(2.0f))", [1.5, -1.0]),
        ("ldexp(1.5f, 3)", 12.0), ("ldexp(float2(1.0f, 3.0f), int2(2, -1))", [4.0, 1.5]), ("ilogb(12.0f)", 3),
        ("ilogb(float2(0.5f, 1024.0f))", [-1, 10]),
        ("[] { int e; float m = frexp(12.0f, e); return float2(m, float(e)); }()", [0.75, 4.0]),
        ("[] { float i; float f = modf(3.25f, i); return float2(f, i); }()", [0.25, 3.0]),
        ("[] { float2 i; float2 f = modf(float2(-1.5f, 2.0f), i); return float4(f, i); }()",
         [-0.5, 0.0, -1.0, 2.0]),
        ("[] { float c; float s = sincos(0.0f, c); return float2(s, c); }()", [0.0, 1.0]),
        ("nextafter(1.0f, 2.0f)", 1 + 2 ** -23), ("nextafter(float2(1.0f), float2(0.0f, 2.0f))",
                                                  [1 - 2 ** -24, 1 + 2 ** -23]),
        ("precise::sqrt(2.0f)", f32(math.sqrt(2))), ("fast::exp2(3.0f)", 8.0), ("precise::clamp(2.0f, 0.0f, 1.0f)", 1.0),
    ])


# The Metal Shading Language Specification's standard library, chapter 6: the functions of its
# common, integer, relational, math and geometric tables (the math ones also in fast:: and
# precise::). `not` is the Metal syntax rewrite's (test_not_rewrite_takes_the_token_only).
MSL_FUNCTIONS = {
    "common": "clamp mix saturate sign smoothstep step",
    "integer": "abs absdiff addsat clamp clz ctz extract_bits hadd insert_bits mad24 madhi madsat max max3 median3 "
               "min min3 mul24 mulhi popcount reverse_bits rhadd rotate subsat",
    "relational": "all any isfinite isinf isnan isnormal isordered isunordered select signbit",
    "math": "acos acosh asin asinh atan atan2 atanh ceil copysign cos cosh cospi divide exp exp2 exp10 fabs fdim floor "
            "fma fmax fmax3 fmedian3 fmin fmin3 fmod fract frexp ilogb ldexp log log2 log10 modf nextafter pow powr "
            "rint round rsqrt sin sincos sinh sinpi sqrt tan tanh tanpi trunc",
    "geometric": "cross distance distance_squared dot faceforward length length_squared normalize reflect refract",
}


@pytest.mark.parametrize("table", MSL_FUNCTIONS)
def test_the_shim_declares_every_function_of_the_metal_standard_library(table):
    """Valid Metal calls none of these is refused for a name the shim lacks (one compile per table;
    on failure, each name alone says which)."""
    spaces = ("metal", "metal::fast", "metal::precise") if table == "math" else ("metal",)
    names = [f"{ns}::{n}" for n in MSL_FUNCTIONS[table].split() for ns in spaces]
    includes = [f"-I{d}" for d in (SHIM_INCLUDE, CPU_SUPPORT, torch_include())]

    def compiles(chosen):
        source = "#include <metal_stdlib>\n" + "".join(f"using {n};\n" for n in chosen)
        return subprocess.run(["g++", "-std=c++20", "-fsyntax-only", "-x", "c++", "-", *includes], input=source,
                              capture_output=True, text=True).returncode == 0
    if not compiles(names):
        assert [n for n in names if not compiles([n])] == []


def test_relational_functions(tmp_path):
    check(tmp_path, [
        ("isnan(float2(NAN, 1.0f))", [1, 0]), ("isnan(half(NAN))", 1), ("isnan(bfloat(1.0f))", 0),
        ("isinf(float3(INFINITY, -INFINITY, 0.0f))", [1, 1, 0]), ("isinf(half(70000.0f))", 1),
        ("isfinite(float2(1.0f, INFINITY))", [1, 0]), ("isfinite(NAN)", 0),
        ("signbit(float2(-0.0f, 1.0f))", [1, 0]), ("signbit(-2.0f)", 1),
        ("isnormal(float2(1e-40f, 1.0f))", [0, 1]), ("isnormal(half(1e-5f))", 0), ("isnormal(0.0f)", 0),
        ("isordered(1.0f, NAN)", 0), ("isunordered(1.0f, NAN)", 1), ("isordered(1.0f, 2.0f)", 1),
        ("isunordered(float2(1.0f, NAN), float2(2.0f))", [0, 1]),
        ("all(bool2(true, false))", 0), ("any(bool2(true, false))", 1), ("all(bool3(true))", 1),
        ("any(bool4(false))", 0), ("all(float2(1.0f, 2.0f) < float2(2.0f, 3.0f))", 1),
        ("any(int3(1, 2, 3) == 2)", 1), ("float2(1.0f, 5.0f) >= float2(2.0f, 5.0f)", [0, 1]),
        ("select(float2(1.0f, 2.0f), float2(3.0f, 4.0f), bool2(true, false))", [3.0, 2.0]),
        ("select(1.0f, 2.0f, true)", 2.0), ("select(1, 2, false)", 1),
        ("select(int3(1), int3(2), int3(0, 5, 0) > 1)", [1, 2, 1]),
        # not: Metal's function (the Metal syntax rewrite makes the C++ token a call of it)
        ("not(bool3(true, false, true))", [0, 1, 0]), ("metal::not(false)", 1),
        ("all(not(float2(1.0f, 2.0f) > 3.0f))", 1),
    ])


def test_integer_functions(tmp_path):
    check(tmp_path, [
        ("popcount(uint(0xF0F0))", 8), ("popcount(-1)", 32), ("popcount(char(-1))", 8),
        ("popcount(ulong(0xFFFFFFFFFFull))", 40), ("popcount(uint2(3u, 7u))", [2, 3]),
        ("clz(uint(1))", 31), ("clz(0u)", 32), ("clz(ushort(1))", 15), ("clz(uchar(0))", 8), ("clz(-1)", 0),
        ("clz(long(1))", 63), ("clz(int2(1, 256))", [31, 23]),
        ("ctz(uint(8))", 3), ("ctz(0)", 32), ("ctz(short(0))", 16), ("ctz(uchar(0x80))", 7),
        ("ctz(uint3(1u, 2u, 0u))", [0, 1, 32]),
        # mulhi: the high half of the full product
        ("mulhi(uint(0x80000000u), 4u)", 2), ("mulhi(-2, 0x40000000)", -1),
        ("mulhi(ulong(1) << 63, ulong(4))", 2), ("mulhi(uchar(200), uchar(200))", (200 * 200) >> 8),
        ("mulhi(int2(65536, -65536), int2(65536))", [1, -1]),
        ("madhi(uint(0x80000000u), 4u, 5u)", 7), ("madsat(100, 100, 5)", 10005),
        ("madsat(char(100), char(100), char(5))", 127), ("madsat(char(-100), char(100), char(5))", -128),
        ("madsat(ulong(1) << 63, ulong(4), ulong(1))", 2 ** 64 - 1), ("madsat(uint(7), 3u, 1u)", 22), ("mul24(3, 5)", 15), ("mad24(3, 5, 1)", 16),
        # rotate left, modulo the width
        ("rotate(uint(0x80000001u), 1u)", 3), ("rotate(uchar(0x81), uchar(9))", 3), ("rotate(uint(5), 32u)", 5),
        ("rotate(uint2(1u, 0x80000000u), uint2(4u, 1u))", [16, 1]),
        ("absdiff(3, 10)", 7), ("absdiff(char(-128), char(127))", 255), ("absdiff(-2147483647 - 1, 2147483647)", 2**32 - 1), ("absdiff(uint(3), uint(10))", 7), ("absdiff(int2(-5, 5), int2(5, -5))", [10, 10]),
        ("addsat(char(100), char(100))", 127), ("addsat(uchar(200), uchar(100))", 255),
        ("subsat(uchar(5), uchar(10))", 0), ("subsat(-2147483647, 10)", -2 ** 31),
        ("addsat(int2(2147483647, 1), int2(1))", [2 ** 31 - 1, 2]),
        ("hadd(2147483647, 2147483647)", 2 ** 31 - 1), ("rhadd(uchar(255), uchar(0))", 128), ("hadd(3, 4)", 3),
        ("reverse_bits(uchar(1))", 128), ("reverse_bits(uint(6))", 0x60000000),
        ("extract_bits(uint(0xABCD), 4u, 8u)", 0xBC), ("extract_bits(int(0xF0), 4u, 4u)", -1),
        ("insert_bits(uint(0xFFFF), uint(0), 4u, 8u)", 0xF00F),
        ("insert_bits(uint2(0u), uint2(1u, 3u), 2u, 2u)", [4, 12]),
        ("abs(-5)", 5), ("abs(int3(-1, 0, 7))", [1, 0, 7]), ("abs(char(-128))", -128),
        ("min(3, -4)", -4), ("max(uint2(1u, 9u), uint2(5u))", [5, 9]),
    ])


def test_geometric_functions(tmp_path):
    v, w = np.array([1, 2, 2], dtype=F32), np.array([3, -1, 0.5], dtype=F32)
    n = np.array([0, 1, 0], dtype=F32)
    i = np.array([1, -1, 0], dtype=F32) / F32(math.sqrt(2))
    eta = F32(0.5)
    k = 1 - eta * eta * (1 - np.dot(n, i) ** 2)
    refract = eta * i - (eta * np.dot(n, i) + np.sqrt(k)) * n
    check(tmp_path, [
        ("dot(float3(1.0f, 2.0f, 2.0f), float3(3.0f, -1.0f, 0.5f))", float(np.dot(v, w))),
        ("dot(int2(1, 2), int2(3, 4))", 11), ("dot(half2(1.0f, 2.0f), half2(3.0f, 4.0f))", 11.0),
        ("length(float3(1.0f, 2.0f, 2.0f))", 3.0), ("length(float2(3.0f, 4.0f))", 5.0),
        ("length_squared(float4(1.0f))", 4.0),
        ("distance(float2(1.0f, 1.0f), float2(4.0f, 5.0f))", 5.0),
        ("distance_squared(float3(1.0f), float3(2.0f))", 3.0),
        ("normalize(float3(1.0f, 2.0f, 2.0f))", [f32(1 / 3), f32(2 / 3), f32(2 / 3)], 1),
        ("normalize(float2(0.0f, -5.0f))", [0.0, -1.0]),
        ("cross(float3(1.0f, 0.0f, 0.0f), float3(0.0f, 1.0f, 0.0f))", [0.0, 0.0, 1.0]),
        ("cross(float3(1.0f, 2.0f, 2.0f), float3(3.0f, -1.0f, 0.5f))", list(map(float, np.cross(v, w)))),
        ("faceforward(float2(0.0f, 1.0f), float2(1.0f, -1.0f), float2(0.0f, 1.0f))", [0.0, 1.0]),
        ("faceforward(float2(0.0f, 1.0f), float2(1.0f, 1.0f), float2(0.0f, 1.0f))", [-0.0, -1.0]),
        ("reflect(float2(1.0f, -1.0f), float2(0.0f, 1.0f))", [1.0, 1.0]),
        ("refract(float3(1.0f, -1.0f, 0.0f) / sqrt(2.0f), float3(0.0f, 1.0f, 0.0f), 0.5f)",
         list(map(float, refract)), 2),
        ("refract(float2(1.0f, -0.1f), float2(0.0f, 1.0f), 2.0f)", [0.0, 0.0]),  # total reflection
    ])


def test_vectors_swizzles_literals_as_type_limits(tmp_path):
    check(tmp_path, [
        # read swizzles (2, 3 and 4 components, repeats) and Metal's vector constructors
        ("float4(1.0f, 2.0f, 3.0f, 4.0f).yx", [2.0, 1.0]), ("float4(1.0f, 2.0f, 3.0f, 4.0f).wzyx", [4, 3, 2, 1]),
        ("float2(1.0f, 2.0f).xxyy", [1.0, 1.0, 2.0, 2.0]), ("int3(1, 2, 3).zxy", [3, 1, 2]),
        ("float3(1.0f, 2.0f, 3.0f).xy * 2.0f", [2.0, 4.0]),
        ("[] { float4 v = float4(1.0f, 2.0f, 3.0f, 4.0f); return dot(v.xy, v.zw); }()", 11.0),
        ("[] { float4 v = float4(5.0f, 6.0f, 7.0f, 8.0f); auto s = v.zy; return s.yx.x; }()", 6.0),
        # swizzles assigned to (distinct components)
        ("[] { float4 v = float4(1.0f, 2.0f, 3.0f, 4.0f); v.yx = float2(9.0f, 8.0f); return v; }()", [8, 9, 3, 4]),
        ("[] { float3 v = float3(1.0f); v.zx += float2(1.0f, 2.0f); v.xy *= 2.0f; return v; }()", [6, 2, 2]),
        ("[] { int4 v = int4(0); v.wzy = int3(1, 2, 3); return v; }()", [0, 3, 2, 1]),
        ("float4(float2(1.0f, 2.0f), 3.0f, 4.0f)", [1, 2, 3, 4]), ("float4(float2(1.0f, 2.0f), float2(3.0f))",
                                                                   [1, 2, 3, 3]),
        ("float3(1.0f, float2(2.0f, 3.0f))", [1, 2, 3]), ("float4(int4(1, 2, 3, 4).yzw, 0)", [2, 3, 4, 0]),
        ("float2(int2(3, -4))", [3.0, -4.0]), ("int2(float2(1.9f, -1.9f))", [1, -1]),
        ("int3(7, 8, 9) % 4", [3, 0, 1]), ("uint2(12u, 10u) & uint2(10u)", [8, 10]), ("~uint2(0u)", [2**32 - 1] * 2),
        ("int2(1, 2) << 3", [8, 16]), ("!bool2(true, false)", [0, 1]), ("-float2(1.0f, -2.0f)", [-1.0, 2.0]),
        # half literals
        ("2.5h", 2.5), ("1h + half(0.5f)", 1.5), ("0.1h", half(0.1)), ("HALF_MAX", 65504.0), ("HALF_MIN", 2.0 ** -14), ("HALF_EPSILON", 2.0 ** -10),
        # as_type reinterprets bits
        ("as_type<uint>(1.0f)", 0x3F800000), ("as_type<float>(0x40490fdbu)", f32(math.pi)),
        ("as_type<ushort>(half(1.0f))", 0x3C00), ("as_type<half2>(0x3C004000u)", [2.0, 1.0]),
        ("as_type<uint2>(float2(1.0f, -2.0f))", [0x3F800000, 0xC0000000]), ("sizeof(float3)", 16),
        ("as_type<bfloat>(ushort(0x3F80))", 1.0),
        # numeric_limits
        ("numeric_limits<half>::max()", 65504.0), ("numeric_limits<half>::epsilon()", 2.0 ** -10),
        ("numeric_limits<half>::min()", 2.0 ** -14), ("numeric_limits<half>::lowest()", -65504.0),
        ("numeric_limits<bfloat>::max()", float(torch.finfo(torch.bfloat16).max)),
        ("numeric_limits<bfloat>::epsilon()", 2.0 ** -7), ("numeric_limits<float>::infinity()", INF),
        ("numeric_limits<float>::max()", float(np.finfo(F32).max)), ("numeric_limits<int>::max()", 2 ** 31 - 1),
        ("numeric_limits<uchar>::max()", 255), ("numeric_limits<half>::infinity()", INF),
        ("numeric_limits<half>::denorm_min()", 2.0 ** -24),
    ])


def test_build_route_finds_every_kernel_and_compiles_quietly(tmp_path):
    """The build's preprocess keeps the REGISTER_* expansions parseable (host_names) while
    torch's headers count as system headers: -Wall -Wextra print nothing."""
    from mpsgen.codegen.build import GENERATED
    from mpsgen.codegen.emit.host_names import parse_instantiations, registration_lines, strip_host_name_attributes

    text = preprocess("c++", GENERATED / "lerp.metal", kernel_include_dirs())
    kernels = parse_instantiations(text)
    assert {k.host_name for k in kernels} >= {"lerp_dense_float_float", "lerp_strided_half_half"}
    r = subprocess.run(["c++", "-std=c++20", "-fsyntax-only", "-Wall", "-Wextra", f"-I{CPU_SUPPORT}",
                        "-x", "c++", "-"], input=strip_host_name_attributes(text) + registration_lines(kernels),
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0 and not r.stderr, r.stderr[-3000:]


def test_swizzle_rewrite_leaves_other_syntax_alone():
    from mpsgen.codegen.emit.metal_syntax import to_cpp

    assert to_cpp("a = v.yx + w.xyzw;") == "a = v.template swizzle<1, 0>() + w.template swizzle<0, 1, 2, 3>();"
    assert to_cpp("f(v).zy * a[1].ww") == "f(v).template swizzle<2, 1>() * a[1].template swizzle<3, 3>()"
    assert to_cpp("v.xy.yx") == "v.template swizzle<0, 1>().template swizzle<1, 0>()"
    assert to_cpp("v.zx = w; v.xy += w; b = v.xy == w;") == (
        "v.template swizzle_ref<2, 0>() = w; v.template swizzle_ref<0, 1>() += w; "
        "b = v.template swizzle<0, 1>() == w;")
    for unchanged in ('p.x + p.y', 'v.xy()', 'puts("v.xy");', "c = '.'; v.xyzwx", "o.xray", "t.wx_"):
        assert to_cpp(unchanged) == unchanged



def test_rgba_swizzles_unless_the_name_is_declared():
    """Metal's second set of component names (MSL 2.2.1): `.r` is `.x`, `.ga` the swizzle <1, 3>; a
    name the user's code declares (a field `bar`, a variable `a`) stays a member access, and only
    the user's code (what line markers attribute to the registry) declares."""
    from mpsgen.codegen.emit.metal_syntax import to_cpp

    assert to_cpp("v.a = v.r + v.ga.x; v.rg = w;") == (
        "v.w = v.x + v.template swizzle<1, 3>().x; v.template swizzle_ref<0, 1>() = w;")
    assert to_cpp("struct P { float bar; }; float a = p.bar + q.a + q.rgb.r;") == (
        "struct P { float bar; }; float a = p.bar + q.a + q.template swizzle<0, 1, 2>().x;")
    assert to_cpp("v.argb()") == "v.argb()"  # a method call
    unit = '# 1 "c10/metal/utils.h" 3\nfloat a;\n# 40 "ops.yaml"\nfloat b = v.a + v.b;\n'
    assert to_cpp(unit) == unit.replace("v.a", "v.w")


def test_not_rewrite_takes_the_token_only():
    from mpsgen.codegen.emit.metal_syntax import to_cpp

    assert to_cpp("b = metal::not(c) && not (d);") == "b = metal::mpsgen_not(c) && mpsgen_not (d);"
    for unchanged in ('cannot(1)', 'not_(2)', 'knot', 'puts("not");', "notify(x)"):
        assert to_cpp(unchanged) == unchanged


def test_constant_const_becomes_one_const():
    """`constant const char*` (torch's c10/metal/error.h) is valid Metal; with the shim's `constant`
    expanded it is `const const`, which C++ refuses. Line markers between the two stay."""
    from mpsgen.codegen.emit.metal_syntax import to_cpp

    assert to_cpp("const const char* s;") == "const       char* s;"
    assert to_cpp('const \n# 49 "ops.yaml"\n  const float k;') == 'const \n# 49 "ops.yaml"\n        float k;'
    for unchanged in ("const constexpr float k;", "const float* const p;", "myconst const x;", 'puts("const const");'):
        assert to_cpp(unchanged) == unchanged
    r = subprocess.run(["c++", "-std=c++20", "-fsyntax-only", "-x", "c++", "-"],
                       input=to_cpp("const const char* s = \"x\";"), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


@pytest.mark.parametrize("statement,says", [
    ("float2 v = float2(1.0f); v.xx = float2(2.0f);", "a swizzle assigned to repeats a component"),
    ("float2 v = float2(1.0f); v.xz = float2(2.0f);", "swizzle component out of range"),
    ("float2 v = float2(1.0f); float3 w = v.xyz;", "swizzle component out of range"),
])
def test_invalid_swizzles_fail_to_compile(tmp_path, statement, says):
    metal = tmp_path / "probe.metal"
    metal.write_text(f"#include <metal_stdlib>\nusing namespace metal;\nvoid probe() {{ {statement} }}\n")
    text = preprocess("c++", metal, [SHIM_INCLUDE, CPU_SUPPORT, torch_include()])
    r = subprocess.run(["c++", "-std=c++20", "-fsyntax-only", "-x", "c++", "-"],
                       input=text, capture_output=True, text=True, timeout=300)
    assert r.returncode != 0 and says in r.stderr, r.stderr[-2000:]


def test_constant_is_spelt_by_what_follows_it():
    """The build's preprocessing marks Metal's `constant` (clang): `constant void*` points into
    address space 2, any other `constant` is `const`, and a cast to a `constant` pointer is a C
    cast (metal_syntax's docstring and the shim's header say why)."""
    from mpsgen.codegen.emit.metal_syntax import CONSTANT_SPACE, to_cpp

    assert to_cpp("f(constant__mpsgen void* p, constant__mpsgen float* q, constant__mpsgen uint& n);") == (
        f"f({CONSTANT_SPACE} void* p, const float* q, const uint& n);")
    assert to_cpp("const constant__mpsgen void * p; constant__mpsgen const char* s;") == (
        f"{CONSTANT_SPACE} void * p; const char* s;")
    assert to_cpp("constant__mpsgen result_of<F, T, T>* out;") == "const result_of<F, T, T>* out;"
    assert to_cpp("x = *reinterpret_cast<constant__mpsgen T*>(static_cast<constant__mpsgen char*>(p) + o);") == (
        "x = *::metal::mpsgen_cast<const T*>(::metal::mpsgen_cast<const char*>(p) + o);")
    assert to_cpp('constant__mpsgen\n# 72 "indexing.h"\nvoid* p;') == f'{CONSTANT_SPACE}\n# 72 "indexing.h"\nvoid* p;'
    # (no string literal holds the mark: the preprocessor expands no macro there)
    for unchanged in ("myconstant__mpsgen void* p;", "constant__mpsgen_x void* p;"):
        assert to_cpp(unchanged) == unchanged


def test_a_constant_pointer_and_a_device_pointer_are_overloads_as_in_metal(tmp_path):
    """torch 2.14's c10/metal/indexing.h overloads val_at_offs on `constant void*` and `device const
    void*` (with `constant` spelt `const`, one function defined twice). Through the build's own route
    (clang, the shim, the rewrite), the two are overloads, and each pointer picks its own, as in
    Metal: a `constant void*` the constant one, a `device void*` the device one (MSL: address
    spaces do not convert). A typed `constant` pointer reached from the byte pointer reads as before."""
    from mpsgen.codegen.clang import clang_command

    metal = tmp_path / "spaces.metal"
    metal.write_text(textwrap.dedent("""
        #include <metal_stdlib>
        using namespace metal;
        struct in_constant {};
        struct in_device {};
        in_constant space_of(constant void*);
        in_device space_of(device const void*);
        static_assert(is_same_v<decltype(space_of(declval<constant void*>())), in_constant>, "constant");
        static_assert(is_same_v<decltype(space_of(declval<device void*>())), in_device>, "device");
        static_assert(is_same_v<decltype(space_of(declval<device const void*>())), in_device>, "device const");
        inline float second(constant void* p) {
          return *reinterpret_cast<constant float*>(static_cast<constant char*>(p) + sizeof(float));
        }
        kernel void probe(device float* out [[buffer(0)]], constant void* in [[buffer(1)]],
                          uint i [[thread_position_in_grid]]) {
          out[i] = second(in);
        }
    """))
    clang = clang_command()
    text = preprocess(clang, metal, kernel_include_dirs())
    r = subprocess.run([*clang, "-std=c++20", "-fsyntax-only", "-x", "c++", "-"], input=text,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-3000:]
    # without the address space, the two are one function declared twice (2.14's "redefinition")
    plain = text.replace("__attribute__((address_space(2)))", "")
    r = subprocess.run([*clang, "-std=c++20", "-fsyntax-only", "-x", "c++", "-"], input=plain,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode != 0 and "functions that differ only in their return type cannot be overloaded" in r.stderr
