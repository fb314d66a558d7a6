"""The shim's vectorisable math (support/metal_shim/vector_math.h) against independent oracles.

exp, exp2, exp10, log, log2 and log10 of float are computed in double there, so each float
result must be the exact value rounded to nearest, give or take the last bit where the exact
value lies within about 2^-40 of a rounding boundary: checked within 0.5 ulp + 2^-10 of numpy's
float64 value (itself within an ulp of double) on 2^16 floats spread over every exponent, both
signs, and the special operands as C99 Annex F specifies them. fma must round once, as C's
fmaf: compared bit for bit with glibc's fmaf (through ctypes) on operands chosen to cancel.
Each program is compiled the way the CPU build compiles a .metal (tests/test_shim.py).
"""
from __future__ import annotations

import ctypes
import ctypes.util

import numpy as np
import pytest

from tests.test_shim import PRELUDE, _compile_and_run

F32 = np.float32


def _grid() -> np.ndarray:
    bits = np.arange(0, 2**32, 65537, dtype=np.uint64).astype(np.uint32)
    specials = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 88.72283, 88.72284, -103.97, -103.98,
                         -87.3, 1e-45, 1.1754942e-38, 1.1754944e-38, 3.4028235e38, 1000.0, 8.0, 0.1],
                        dtype=F32)
    return np.concatenate([bits.view(F32), specials])


def _run(tmp_path, body: str, nout: int) -> np.ndarray:
    out = _compile_and_run(tmp_path, PRELUDE + "\nint main() {\n" + body + "\n}\n")
    return np.array([float.fromhex(v) if v not in ("nan", "-nan") else np.nan for v in out.split()],
                    dtype=np.float64).reshape(-1, nout)


REFERENCES = {
    "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x),
    "log": np.log, "log2": np.log2, "log10": np.log10,
}


def test_exp_and_log_are_rounded_to_nearest(tmp_path):
    x = _grid()
    names = list(REFERENCES)
    data = ", ".join(f"{float(v)!r}f".replace("inff", "INFINITY").replace("nanf", "NAN") for v in x)
    calls = " ".join(f"__builtin_printf(\" %a\", double(metal::{n}(x)));" for n in names)
    got = _run(tmp_path, f"const float xs[] = {{{data}}};\n"
                         f"for (float x : xs) {{ {calls} }}", len(names))
    bad = []
    with np.errstate(all="ignore"):
        for j, name in enumerate(names):
            exact = REFERENCES[name](x.astype(np.float64))
            rounded = exact.astype(F32).astype(np.float64)
            ulp = np.spacing(np.abs(rounded).astype(F32)).astype(np.float64)
            ulp = np.where(np.isfinite(rounded), ulp, np.inf)
            err = np.abs(got[:, j] - exact) / ulp
            finite = np.isfinite(rounded)
            # Non-finite results (inf, nan; overflow) exactly, NaN for NaN; finite ones within 0.5 ulp.
            wrong = np.where(finite, ~(err <= 0.5 + 2**-10),
                             ~((got[:, j] == rounded) | (np.isnan(got[:, j]) & np.isnan(rounded))))
            for i in np.flatnonzero(wrong)[:5]:
                bad.append(f"{name}({float(x[i]).hex()}) = {got[i, j].hex()}, exact {exact[i].hex()}")
    assert not bad, "\n".join(bad)


@pytest.fixture(scope="module")
def libm_fmaf():
    libm = ctypes.CDLL(ctypes.util.find_library("m"))
    libm.fmaf.restype = ctypes.c_float
    libm.fmaf.argtypes = [ctypes.c_float] * 3
    return libm.fmaf


def test_fma_is_fmaf_bit_for_bit(tmp_path, libm_fmaf):
    rng = np.random.default_rng(7)
    n = 4000
    a = rng.standard_normal(n).astype(F32) * F32(2.0) ** rng.integers(-60, 60, n).astype(F32)
    b = rng.standard_normal(n).astype(F32)
    # c cancels most of a * b (the rounding of the sum then rests on the low bits), or is random.
    c = np.where(np.arange(n) % 2 == 0, -(a * b) * F32(1 + 2**-20),
                 rng.standard_normal(n).astype(F32) * F32(2.0) ** rng.integers(-80, 80, n).astype(F32))
    # a * a = 1 + j 2^-11 + j^2 2^-24 is halfway between two floats: a c far below a double's
    # last bit decides the rounding, which a double sum (rounded twice) gets wrong.
    j = np.arange(1, 80, 2)
    halfway = (F32(1) + j.astype(F32) * F32(2**-12)).repeat(4)
    tiny = np.tile(np.array([2**-60, -2**-60, 2**-75, -2**-75], dtype=F32), len(j))
    a, b, c = np.concatenate([a, halfway]), np.concatenate([b, halfway]), np.concatenate([c, tiny])
    edges = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 3.4028235e38, 1e-45, -1.0, 1.0000001], dtype=F32)
    ea, eb, ec = (g.ravel() for g in np.meshgrid(edges, edges, edges, indexing="ij"))
    a, b, c = np.concatenate([a, ea]), np.concatenate([b, eb]), np.concatenate([c, ec])
    triples = ", ".join(f"{{{float(p)!r}f, {float(q)!r}f, {float(r)!r}f}}" for p, q, r in zip(a, b, c))
    got = _run(tmp_path, f"const float t[][3] = {{{triples.replace('inff', 'INFINITY').replace('nanf', 'NAN')}}};\n"
                         "for (auto& v : t) __builtin_printf(\" %a\", double(metal::fma(v[0], v[1], v[2])));", 1)
    expected = np.array([libm_fmaf(float(p), float(q), float(r)) for p, q, r in zip(a, b, c)], dtype=np.float64)
    same = (got[:, 0] == expected) & (np.signbit(got[:, 0]) == np.signbit(expected))
    same |= np.isnan(got[:, 0]) & np.isnan(expected)
    bad = [f"fma({float(a[i]).hex()}, {float(b[i]).hex()}, {float(c[i]).hex()}) = {got[i, 0].hex()}, "
           f"fmaf {expected[i].hex()}" for i in np.flatnonzero(~same)[:5]]
    assert not bad, "\n".join(bad)
