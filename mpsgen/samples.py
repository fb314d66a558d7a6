"""Sample inputs for op-output-match: OpInfo's, plus the edge cases we add.

Used by the test suite and by the main job (`python -m mpsgen.report`), so
both judge an op on the same inputs, against the same torch reference.
"""
from __future__ import annotations

import importlib
from dataclasses import dataclass
from functools import lru_cache

import torch

TORCH_DTYPES = {
    "float": torch.float32, "half": torch.float16, "bfloat": torch.bfloat16,
    "long": torch.int64, "int": torch.int32, "short": torch.int16, "char": torch.int8,
    "uchar": torch.uint8, "bool": torch.bool, "float2": torch.complex64, "half2": torch.complex32,
}


@dataclass
class Sample:
    name: str  # where it came from: "opinfo[3]", "reference[12]", "transposed", ...
    args: tuple  # tensors, in schema order


def reference(path: str):
    """Resolve a dotted path such as `torch.exp` (ops.yaml `reference:`)."""
    obj = importlib.import_module(path.split(".")[0])
    for part in path.split(".")[1:]:
        obj = getattr(obj, part)
    return obj


@lru_cache(maxsize=None)
def _opinfo(name: str):
    from torch.testing._internal.common_methods_invocations import op_db

    return {o.name: o for o in op_db if not o.variant_test_name}.get(name)


def _as_tensors(sample, arity: int, device: str, dtype: torch.dtype):
    """OpInfo args as a tuple of tensors, or None when the sample doesn't fit the schema."""
    if sample.kwargs:
        return None
    args = (sample.input, *sample.args)
    if len(args) != arity:
        return None
    out = []
    for a in args:
        if isinstance(a, torch.Tensor):
            out.append(a)
        elif isinstance(a, (bool, int, float)):
            # Our schemas take Tensors: a 0-dim tensor promotes like a scalar (same category).
            out.append(torch.tensor(a, device=device, dtype=dtype if not isinstance(a, bool) else torch.bool))
        else:
            return None
    return tuple(out)


def _make(shape, device, dtype, low=None, high=None):
    return torch.testing.make_tensor(shape, device=device, dtype=dtype, low=low, high=high)


def edge_samples(arity: int, device: str, dtype: torch.dtype, large: bool = True) -> list[Sample]:
    """Empty, 0-dim, non-contiguous, broadcasting and large inputs."""
    make = lambda *shape: _make(shape, device, dtype)  # noqa: E731
    s = [
        Sample("empty", tuple(make(0, 3) for _ in range(arity))),
        Sample("0-dim", tuple(make() for _ in range(arity))),
        Sample("transposed", tuple(make(7, 5).t() for _ in range(arity))),
        Sample("sliced", tuple(make(6, 9)[::2, 1::3] for _ in range(arity))),
        Sample("contiguous", tuple(make(33, 17) for _ in range(arity))),
    ]
    if arity == 2:
        s += [
            Sample("broadcast-rhs", (make(4, 6), make(6))),
            Sample("broadcast-lhs", (make(6), make(4, 6))),
            Sample("broadcast-both", (make(4, 1), make(1, 6))),
            Sample("scalar-rhs", (make(5, 3), make())),
            Sample("scalar-lhs", (make(), make(5, 3))),
            Sample("mixed-layout", (make(5, 4).t(), make(4, 5))),
        ]
    if large:
        s.append(Sample("large", tuple(make(1 << 20) for _ in range(arity))))
        s.append(Sample("large-strided", tuple(make(1024, 1100)[:, ::1].t()[:, :1000] for _ in range(arity))))
    return s


def samples(opinfo_name: str, arity: int, device: str, dtype: torch.dtype, large: bool = True) -> list[Sample]:
    found: list[Sample] = []
    opinfo = _opinfo(opinfo_name) if opinfo_name else None
    if opinfo is not None:
        for kind, gen in (("opinfo", opinfo.sample_inputs), ("reference", opinfo.reference_inputs)):
            for i, sample in enumerate(gen(device, dtype)):
                args = _as_tensors(sample, arity, device, dtype)
                if args is not None:
                    found.append(Sample(f"{kind}[{i}]", args))
    return found + edge_samples(arity, device, dtype, large)


def devices() -> list[str]:
    """CPU everywhere (the CPU backend), plus MPS where this machine has it."""
    return ["cpu"] + (["mps"] if torch.backends.mps.is_available() else [])


MATCH, MISMATCH, NO_REFERENCE = "match", "mismatch", "no-reference"


def compare(op_fn, ref_fn, args: tuple) -> tuple[str, float, str]:
    """Run op and reference on the same inputs: (status, max abs error, message).

    NO_REFERENCE: torch itself rejects the input, so there is nothing to match.
    """
    try:
        expected = ref_fn(*args)
    except Exception as e:
        return NO_REFERENCE, 0.0, str(e).splitlines()[0]
    actual = op_fn(*args)
    err = 0.0
    if actual.shape == expected.shape and actual.numel() and actual.dtype == expected.dtype:
        diff = (actual.to(torch.float64) - expected.to(torch.float64)).abs()
        same = actual.eq(expected)  # equal infinities differ by nan, not 0
        if actual.is_floating_point():
            same |= actual.isnan() & expected.isnan()
        diff = diff.masked_fill(same, 0)
        err = float(diff.nan_to_num(nan=float("inf")).max())
    try:
        torch.testing.assert_close(actual, expected, equal_nan=True)
    except AssertionError as e:
        return MISMATCH, err, str(e)
    return MATCH, err, ""
