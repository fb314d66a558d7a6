"""The shim's vectorisable math (support/metal_shim/vector_math.h) against independent oracles.

exp, exp2, exp10, log, log2, log10, sinh, cosh, tanh, atan and atan2 of float are computed in double there,
so each float result must be the exact value rounded to nearest, give or take the last bit
where the exact value lies within about 2^-40 of a rounding boundary: checked within
0.5 ulp + 2^-10 of numpy's float64 value (itself within an ulp of double) on 2^16 floats spread
over every exponent, both signs, and the special operands as C99 Annex F specifies them (the
sign of a zero too).
Each program is compiled the way the CPU build compiles a .metal (tests/test_shim.py).
"""
from __future__ import annotations

import numpy as np

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
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "atan": np.arctan,
}


def _floats(x: np.ndarray) -> str:
    return ", ".join(f"{float(v)!r}f".replace("inff", "INFINITY").replace("nanf", "NAN") for v in x)


def _misrounded(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """Where `got` is not `exact` rounded to float (see the module's docstring)."""
    rounded = exact.astype(F32).astype(np.float64)
    ulp = np.spacing(np.abs(rounded).astype(F32)).astype(np.float64)
    ulp = np.where(np.isfinite(rounded), ulp, np.inf)
    err = np.abs(got - exact) / ulp
    finite = np.isfinite(rounded)
    # Non-finite results (inf, nan; overflow) exactly, NaN for NaN; finite ones within 0.5 ulp.
    wrong = np.where(finite, ~(err <= 0.5 + 2**-10), ~((got == rounded) | (np.isnan(got) & np.isnan(rounded))))
    return wrong | ((rounded == 0) & (np.signbit(got) != np.signbit(rounded)))  # the sign of a zero


def test_exp_and_log_are_rounded_to_nearest(tmp_path):
    x = _grid()
    names = list(REFERENCES)
    calls = " ".join(f"__builtin_printf(\" %a\", double(metal::{n}(x)));" for n in names)
    got = _run(tmp_path, f"const float xs[] = {{{_floats(x)}}};\n"
                         f"for (float x : xs) {{ {calls} }}", len(names))
    bad = []
    with np.errstate(all="ignore"):
        for j, name in enumerate(names):
            exact = REFERENCES[name](x.astype(np.float64))
            for i in np.flatnonzero(_misrounded(got[:, j], exact))[:5]:
                bad.append(f"{name}({float(x[i]).hex()}) = {got[i, j].hex()}, exact {exact[i].hex()}")
    assert not bad, "\n".join(bad)


def test_atan2_is_rounded_to_nearest(tmp_path):
    """atan2(y, x) on every pair of the special operands (C99 Annex F: the signs of zeros and
    infinities pick the quadrant), on pairs of similar magnitude (the reduction above
    tan(pi/8) and the octant's reflections) and on pairs of random bit patterns."""
    rng = np.random.default_rng(0)
    specials = np.array([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-45, -3.4028235e38, 0.41421357, 2.4142137],
                        dtype=F32)
    sy, sx = np.meshgrid(specials, specials)
    near = rng.uniform(-9, 9, size=(2, 20000)).astype(F32)
    bits = rng.integers(0, 2**32, size=(2, 20000), dtype=np.uint64).astype(np.uint32).view(F32)
    y = np.concatenate([sy.ravel(), near[0], bits[0]])
    x = np.concatenate([sx.ravel(), near[1], bits[1]])
    got = _run(tmp_path, f"const float ys[] = {{{_floats(y)}}};\nconst float xs[] = {{{_floats(x)}}};\n"
                         f"for (int i = 0; i < {len(x)}; ++i) "
                         "__builtin_printf(\" %a\", double(metal::atan2(ys[i], xs[i])));", 1)[:, 0]
    with np.errstate(all="ignore"):
        exact = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    bad = [f"atan2({float(y[i]).hex()}, {float(x[i]).hex()}) = {got[i].hex()}, exact {exact[i].hex()}"
           for i in np.flatnonzero(_misrounded(got, exact))[:5]]
    assert not bad, "\n".join(bad)


def test_rounding_functions_match_c(tmp_path):
    """floor, ceil, trunc, rint (ties to even) and round (ties away from zero), bit for bit
    (the sign of a zero included) against numpy in float64, on the float grid and on the
    operands around each rounding decision: halves, 2^23 (the last float with a fraction
    below it), the smallest subnormal."""
    edge = np.array([0.5, 1.5, 2.5, 0.49999997, 0.50000006, 2**23 - 0.5, 2**23, 2**23 + 1, 2**24 + 2, 1e-45, 0.99999994,
                     1.0000001, 3.4028235e38], dtype=F32)
    x = np.concatenate([_grid(), edge, -edge])
    names = ["floor", "ceil", "trunc", "rint", "round"]
    calls = " ".join(f"__builtin_printf(\" %a\", double(metal::{n}(x)));" for n in names)
    got = _run(tmp_path, f"const float xs[] = {{{_floats(x)}}};\nfor (float x : xs) {{ {calls} }}", len(names))
    with np.errstate(all="ignore"):
        d = x.astype(np.float64)
        exact = {"floor": np.floor(d), "ceil": np.ceil(d), "trunc": np.trunc(d), "rint": np.rint(d),
                 "round": np.copysign(np.floor(np.abs(d) + 0.5), d)}
    bad = []
    for j, name in enumerate(names):
        want = exact[name]
        same = (got[:, j] == want) & (np.signbit(got[:, j]) == np.signbit(want))
        same |= np.isnan(got[:, j]) & np.isnan(want)
        bad += [f"{name}({float(x[i]).hex()}) = {got[i, j].hex()}, want {want[i].hex()}" for i in np.flatnonzero(~same)[:3]]
    assert not bad, "\n".join(bad)
