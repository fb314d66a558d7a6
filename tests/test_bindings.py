"""mpsgen.<op> and mpsgen.<op>_ (generated/bindings.cpp): the same results and errors as the
torch.ops op they bind, for every entry, its out= and in-place variants."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

import mpsgen.ops  # loads mpsgen's own ops (the extension and generated/library.py)
from mpsgen.codegen.registry.loader import load
from mpsgen.samples import TORCH_DTYPES, as_inplace, edge_samples, entry_params, op_overload, registered_dtypes

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = load(ROOT / "ops.yaml")
NS = REGISTRY.namespace


def _entries():
    for op in REGISTRY.own_ops:
        for e in op.entries:
            yield pytest.param(op, e, id=e.qualified_name)


def _outcome(fn, *args, **kwargs):
    """A call's result, or the type and message of what it raised."""
    try:
        return fn(*args, **kwargs)
    except Exception as e:  # noqa: BLE001  (compared, not swallowed)
        return type(e), str(e)


def _same(actual, expected):
    if isinstance(expected, tuple):  # torch.ops raised: the binding raises the same
        assert actual == expected
    else:
        torch.testing.assert_close(actual, expected, rtol=0, atol=0, equal_nan=True)


@pytest.mark.parametrize("op,entry", list(_entries()))
def test_binding_matches_torch_ops(op, entry):
    """Every variant on the entry's edge samples, in its first registered dtype: the same values,
    or the same error (a sample may be one torch refuses, such as a negative polygamma n)."""
    dtype = TORCH_DTYPES[op.registrations[0].input]
    params = entry_params(entry)
    samples = edge_samples(params, "cpu", dtype, registered_dtypes(op), large=False)
    assert samples
    fn, inplace = getattr(mpsgen, entry.base_name), getattr(mpsgen, entry.base_name + "_", None)
    for s in samples:
        expected = _outcome(op_overload(NS, entry.qualified_name), *s.args, **s.kwargs)
        _same(_outcome(fn, *s.args, **s.kwargs), expected)
        if isinstance(expected, tuple):
            continue
        out = torch.empty(0, dtype=expected.dtype)
        assert fn(*s.args, **s.kwargs, out=out) is out
        _same(out, expected)
        if "inplace" in entry.schemas:
            args, kwargs = as_inplace(params, s.args, s.kwargs)
            mine, theirs = (args[0].clone(), *args[1:]), (args[0].clone(), *args[1:])
            wanted = _outcome(op_overload(NS, entry.schema_names["inplace"]), *theirs, **kwargs)
            got = _outcome(inplace, *mine, **kwargs)
            _same(got, wanted)
            if not isinstance(wanted, tuple):
                assert got is mine[0]


def test_binding_errors_name_the_op_and_argument():
    x = torch.rand(3)
    with pytest.raises(TypeError, match=r"hypot\(\): argument 'other' \(position 2\) must be Tensor, not str"):
        mpsgen.hypot(x, "a")
    with pytest.raises(ValueError, match="mpsgen::gelu: argument 'approximate' must be one of 'none', 'tanh'"):
        mpsgen.gelu(x, approximate="bad")
    with pytest.raises(NotImplementedError, match="mpsgen::bitwise_not: no kernel registered for dtype Float"):
        mpsgen.bitwise_not(x)


def test_the_string_none_is_not_the_none_choice():
    """div's rounding_mode=None chooses true division; the string 'None' is refused, as torch's
    div refuses it ("expected rounding_mode to be one of None, 'trunc', or 'floor'"), eagerly,
    through the binding and traced."""
    x = torch.rand(3) + 1
    with pytest.raises(RuntimeError, match="but found 'None'"):
        torch.div(x, x, rounding_mode="None")
    says = r"mpsgen::div: argument 'rounding_mode' must be one of None, 'trunc', 'floor', got 'None'"
    with pytest.raises(ValueError, match=says):
        torch.ops.mpsgen.div.Tensor_mode(x, x, rounding_mode="None")
    with pytest.raises(ValueError, match=says):
        mpsgen.div(x, x, rounding_mode="None")
    with torch._subclasses.FakeTensorMode() as mode, pytest.raises(ValueError, match=says):
        torch.ops.mpsgen.div.Tensor_mode(mode.from_tensor(x), mode.from_tensor(x), rounding_mode="None")
    torch.testing.assert_close(mpsgen.div(x, x, rounding_mode=None), torch.div(x, x, rounding_mode=None))


def test_tensor_subclasses_go_through_torch_ops():
    """An argument with __torch_function__ sees the torch.ops op, as for torch's own ops."""
    seen = []

    class Logged(torch.Tensor):
        @classmethod
        def __torch_function__(cls, func, types, args=(), kwargs=None):
            seen.append(func)
            return super().__torch_function__(func, types, args, kwargs or {})

    x = torch.rand(3).as_subclass(Logged)
    mpsgen.hypot(x, x)
    assert torch.ops.mpsgen.hypot.default in seen or torch.ops.mpsgen.hypot in seen


def test_compiled_function_traces_the_binding_as_its_op():
    def f(x, y):
        return mpsgen.hypot(x, y) * 2

    x, y = torch.rand(4), torch.rand(4)
    torch.testing.assert_close(torch.compile(f, fullgraph=True)(x, y), f(x, y))
