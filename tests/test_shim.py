"""The Metal host shim (support/metal_shim) against the Metal Shading Language's definitions.

Each case is a Metal expression compiled the way the CPU build compiles a .metal
(codegen/host_names.py's preprocess: shim first, Metal syntax rewritten, then g++) in
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

from codegen.build import CPU_SUPPORT, SHIM_INCLUDE, torch_include
from codegen.host_names import preprocess

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


def same(actual: float, expected: float, ulps: float = 0) -> bool:
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
        if len(actual) != len(expected) or not all(same(a, float(e), ulps) for a, e in zip(actual, expected)):
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
