"""The shim's vectorisable math (support/metal_shim/vector_math.h) against independent oracles.

exp, exp2, exp10, log, log2, log10, sinh, cosh, tanh, sin, cos, tan, atan and atan2 of float are
computed in double there, so each float result must be the exact value rounded to nearest,
give or take the last bit where the exact value lies within about 2^-40 of a rounding boundary
(ldexp rounds once, so it must be C's ldexpf bit for bit): checked within
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
    return np.concatenate([bits.view(F32), specials, NEAREST_QUARTER_TURNS, -NEAREST_QUARTER_TURNS])


# For each exponent from 2^-7 up, the float nearest a multiple of pi/2 (other than 0): where
# sin/cos/tan's reduction cancels most (0x1.f37c8ap+95 comes within 2^-29.9 quarter turns).
# Found by a sweep over every float outside the repo; the expected values here are numpy's.
NEAREST_QUARTER_TURNS = np.array([float.fromhex(h) for h in """
    0x1.fffffep-1 0x1.921fb6p+0 0x1.921fb6p+1 0x1.2d97c8p+2 0x1.2d97c8p+3 0x1.2d97c8p+4
    0x1.2d97c8p+5 0x1.2d97c8p+6 0x1.f9cbe2p+7 0x1.f9cbe2p+8 0x1.f9cbe2p+9 0x1.f9cbe2p+10
    0x1.17cc5p+11 0x1.17cc5p+12 0x1.17cc5p+13 0x1.17cc5p+14 0x1.9a48dep+15 0x1.9a48dep+16
    0x1.9a48dep+17 0x1.04ccbcp+18 0x1.04ccbcp+19 0x1.04ccbcp+20 0x1.4ac55cp+21 0x1.4ac55cp+22
    0x1.4ac55cp+23 0x1.e768f6p+24 0x1.4665d2p+25 0x1.4665d2p+26 0x1.4665d2p+27 0x1.08ecc2p+28
    0x1.27a94ap+29 0x1.27a94ap+30 0x1.1ffa28p+31 0x1.b7a65ep+32 0x1.ffa4e8p+33 0x1.47d0fep+34
    0x1.47d0fep+35 0x1.47d0fep+36 0x1.47d0fep+37 0x1.47d0fep+38 0x1.47d0fep+39 0x1.628d4cp+40
    0x1.628d4cp+41 0x1.628d4cp+42 0x1.628d4cp+43 0x1.628d4cp+44 0x1.f0eaeep+45 0x1.f0eaeep+46
    0x1.f0eaeep+47 0x1.705312p+48 0x1.705312p+49 0x1.b86d92p+50 0x1.dc7ad2p+51 0x1.ee8172p+52
    0x1.f784c2p+53 0x1.fc066ap+54 0x1.fe473ep+55 0x1.ff67a8p+56 0x1.0f79ap+57 0x1.0f79ap+58
    0x1.0f79ap+59 0x1.0f79ap+60 0x1.0f79ap+61 0x1.0f79ap+62 0x1.0f79ap+63 0x1.c82258p+64
    0x1.c82258p+65 0x1.5619c2p+66 0x1.f8aad6p+67 0x1.a7624cp+68 0x1.a7624cp+69 0x1.d83694p+70
    0x1.d83694p+71 0x1.cc0182p+72 0x1.5c0e66p+73 0x1.5c0e66p+74 0x1.5c0e66p+75 0x1.13093p+76
    0x1.13093p+77 0x1.13093p+78 0x1.13093p+79 0x1.13093p+80 0x1.13093p+81 0x1.13093p+82
    0x1.8dc776p+83 0x1.8dc776p+84 0x1.32ede2p+85 0x1.32ede2p+86 0x1.32ede2p+87 0x1.32ede2p+88
    0x1.abb4bp+89 0x1.abb4bp+90 0x1.40c784p+91 0x1.0b50eep+92 0x1.0b50eep+93 0x1.0b50eep+94
    0x1.f37c8ap+95 0x1.f37c8ap+96 0x1.f37c8ap+97 0x1.f37c8ap+98 0x1.f37c8ap+99 0x1.f37c8ap+100
    0x1.7f4134p+101 0x1.7f4134p+102 0x1.7f4134p+103 0x1.cc383p+104 0x1.a5bcb2p+105 0x1.a5bcb2p+106
    0x1.df43b8p+107 0x1.2928e2p+108 0x1.a0f9dp+109 0x1.484dd6p+110 0x1.b08c4ap+111 0x1.b08c4ap+112
    0x1.b08c4ap+113 0x1.517106p+114 0x1.80fea8p+115 0x1.80fea8p+116 0x1.20befep+117 0x1.f99756p+118
    0x1.2ceb8p+119 0x1.2ceb8p+120 0x1.d8660ap+121 0x1.fe037ap+122 0x1.fe037ap+123 0x1.fe037ap+124
    0x1.fe037ap+125 0x1.7b9b4p+126 0x1.7b9b4p+127
""".split()], dtype=F32)


def _run(tmp_path, body: str, nout: int) -> np.ndarray:
    out = _compile_and_run(tmp_path, PRELUDE + "\nint main() {\n" + body + "\n}\n")
    return np.array([float.fromhex(v) if v not in ("nan", "-nan") else np.nan for v in out.split()],
                    dtype=np.float64).reshape(-1, nout)


REFERENCES = {
    "exp": np.exp, "exp2": np.exp2, "exp10": lambda x: np.power(10.0, x),
    "log": np.log, "log2": np.log2, "log10": np.log10,
    "sinh": np.sinh, "cosh": np.cosh, "tanh": np.tanh, "atan": np.arctan,
    "sin": np.sin, "cos": np.cos, "tan": np.tan,
}


def _floats(x: np.ndarray) -> str:
    return ", ".join(f"{float(v)!r}f".replace("inff", "INFINITY").replace("nanf", "NAN") for v in x)


def _misrounded(got: np.ndarray, exact: np.ndarray) -> np.ndarray:
    """Where `got` is not `exact` rounded to float (see the module's docstring)."""
    with np.errstate(all="ignore"):  # infinite results: compared exactly below
        rounded = exact.astype(F32).astype(np.float64)
        ulp = np.spacing(np.abs(rounded).astype(F32)).astype(np.float64)
        ulp = np.where(np.isfinite(rounded), ulp, np.inf)
        err = np.abs(got - exact) / ulp
    finite = np.isfinite(rounded)
    # Non-finite results (inf, nan; overflow) exactly, NaN for NaN; finite ones within 0.5 ulp.
    wrong = np.where(finite, ~(err <= 0.5 + 2**-10), ~((got == rounded) | (np.isnan(got) & np.isnan(rounded))))
    return wrong | ((rounded == 0) & (np.signbit(got) != np.signbit(rounded)))  # the sign of a zero


def test_unary_functions_are_rounded_to_nearest(tmp_path):
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


def _pairs(specials: list[float], near: tuple[float, float], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of the special operands, 20000 pairs uniform in `near` and 20000 pairs of random
    bit patterns."""
    rng = np.random.default_rng(seed)
    s = np.array(specials, dtype=F32)
    sa, sb = np.meshgrid(s, s)
    close = rng.uniform(*near, size=(2, 20000)).astype(F32)
    bits = rng.integers(0, 2**32, size=(2, 20000), dtype=np.uint64).astype(np.uint32).view(F32)
    return np.concatenate([sa.ravel(), close[0], bits[0]]), np.concatenate([sb.ravel(), close[1], bits[1]])


def _check_binary(tmp_path, name: str, a: np.ndarray, b: np.ndarray, exact: np.ndarray) -> None:
    got = _run(tmp_path, f"const float as[] = {{{_floats(a)}}};\nconst float bs[] = {{{_floats(b)}}};\n"
                         f"for (int i = 0; i < {len(a)}; ++i) "
                         f"__builtin_printf(\" %a\", double(metal::{name}(as[i], bs[i])));", 1)[:, 0]
    bad = [f"{name}({float(a[i]).hex()}, {float(b[i]).hex()}) = {got[i].hex()}, exact {exact[i].hex()}"
           for i in np.flatnonzero(_misrounded(got, exact))[:5]]
    assert not bad, "\n".join(bad)


def test_atan2_is_rounded_to_nearest(tmp_path):
    """atan2(y, x) on every pair of the special operands (C99 Annex F: the signs of zeros and
    infinities pick the quadrant), on pairs of similar magnitude (the reduction above
    tan(pi/8) and the octant's reflections) and on pairs of random bit patterns."""
    y, x = _pairs([0.0, -0.0, 1.0, -1.0, np.inf, -np.inf, np.nan, 1e-45, -3.4028235e38, 0.41421357, 2.4142137],
                  (-9, 9), seed=0)
    with np.errstate(all="ignore"):
        exact = np.arctan2(y.astype(np.float64), x.astype(np.float64))
    _check_binary(tmp_path, "atan2", y, x, exact)


def test_ldexp_is_rounded_to_nearest(tmp_path):
    """ldexp(x, e), rounded once, to subnormals too, against numpy's float32 ldexp (C's ldexpf),
    bit for bit, for exponents that overflow, underflow and do neither."""
    rng = np.random.default_rng(2)
    x = np.concatenate([_grid(), rng.integers(0, 2**32, 5000, dtype=np.uint64).astype(np.uint32).view(F32)])
    e = rng.integers(-330, 330, size=x.size).astype(np.int32)
    got = _run(tmp_path, f"const float xs[] = {{{_floats(x)}}};\nconst int es[] = {{{', '.join(map(str, e))}}};\n"
                         f"for (int i = 0; i < {len(x)}; ++i) "
                         "__builtin_printf(\" %a\", double(metal::ldexp(xs[i], es[i])));", 1)[:, 0]
    with np.errstate(all="ignore"):
        want = np.ldexp(x, e).astype(np.float64)
    same = ((got == want) & (np.signbit(got) == np.signbit(want))) | (np.isnan(got) & np.isnan(want))
    bad = [f"ldexp({float(x[i]).hex()}, {e[i]}) = {got[i].hex()}, want {want[i].hex()}" for i in np.flatnonzero(~same)[:5]]
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
