"""op-output-match: every op of ops.yaml, every registered dtype, against torch.

Samples: OpInfo sample_inputs and reference_inputs where op_db has the op,
plus empty, 0-dim, non-contiguous, broadcasting and large inputs. Tolerances
are torch.testing's dtype defaults (those of PyTorch's own test_output_match).
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

import mpsgen  # noqa: F401  (loads the extension)
from codegen.loader import load
from mpsgen.samples import MATCH, MISMATCH, TORCH_DTYPES, compare, devices, reference, samples

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = load(ROOT / "ops.yaml")
OPS = torch.ops.__getattr__(REGISTRY.namespace)


def _cases():
    for op in REGISTRY.ops:
        xfails = {x.dtype: x.reason for x in op.xfails}
        for r in op.registrations:
            dtype = TORCH_DTYPES[r.input]
            marks = [pytest.mark.xfail(reason=xfails[r.input], strict=True)] if r.input in xfails else []
            yield pytest.param(op, dtype, id=f"{op.name}-{str(dtype).removeprefix('torch.')}", marks=marks)


@pytest.mark.parametrize("op,dtype", list(_cases()))
def test_output_match(op, dtype):
    fn, ref = getattr(OPS, op.name), reference(op.reference)
    arity = len(op.input_names)
    compared, failures = 0, []
    for device in devices():
        for sample in samples(op.opinfo, arity, device, dtype):
            status, err, message = compare(fn, ref, sample.args)
            compared += status != "no-reference"
            if status == MISMATCH:
                failures.append(f"{device} {sample.name}: max error {err:.3g}\n{message}")
    assert compared >= 10, f"only {compared} samples had a torch reference result"
    assert not failures, f"{len(failures)} of {compared} samples differ:\n" + "\n".join(failures[:5])


def _first(op_family: str):
    return next(op for op in REGISTRY.ops if op.family == op_family)


@pytest.mark.parametrize("family", ["unary", "binary"])
def test_out_and_inplace_variants_match_reference(family):
    op = _first(family)
    ref = reference(op.reference)
    for r in op.registrations[:1]:
        dtype = TORCH_DTYPES[r.input]
        args = tuple(torch.testing.make_tensor(4, 5, dtype=dtype, device="cpu") for _ in op.input_names)
        expected = ref(*args)
        out = torch.empty(0, dtype=expected.dtype)
        result = getattr(OPS, op.name).out(*args, out=out)
        assert result is out
        torch.testing.assert_close(out, expected)
        # out= into a non-contiguous tensor of the right shape
        strided_out = torch.empty(5, 4, dtype=expected.dtype).t()
        getattr(OPS, op.name).out(*args, out=strided_out)
        torch.testing.assert_close(strided_out, expected)
        if expected.dtype == dtype:
            self_ = args[0].clone().t().contiguous().t()  # non-contiguous self
            returned = getattr(OPS, op.name + "_")(self_, *args[1:])
            assert returned is self_
            torch.testing.assert_close(self_, expected)


def _unregistered(op):
    registered = {TORCH_DTYPES[r.input] for r in op.registrations}
    return next(d for d in (torch.float64, torch.int16, torch.float32, torch.bool) if d not in registered)


@pytest.mark.parametrize("op", REGISTRY.ops, ids=lambda op: op.name)
def test_unregistered_dtype_raises_naming_op_and_registered_dtypes(op):
    dtype = _unregistered(op)
    args = [torch.ones(3, dtype=dtype) for _ in op.input_names]
    with pytest.raises(RuntimeError) as info:
        getattr(OPS, op.name)(*args)
    message = str(info.value)
    assert op.name in message and str(dtype).removeprefix("torch.").lower() in message.lower().replace("double", "float64")
    first = TORCH_DTYPES[op.registrations[0].input]
    assert {"float32": "Float", "int64": "Long"}.get(str(first)[6:], "") in message


def test_mismatched_shapes_raise():
    op = _first("binary")
    with pytest.raises(RuntimeError, match="size of tensor a"):
        getattr(OPS, op.name)(torch.ones(3), torch.ones(4))


def test_out_dtype_that_torch_rejects_raises_like_torch():
    op = next(o for o in REGISTRY.ops if o.promotes_int_to_float and o.family == "unary")
    with pytest.raises(RuntimeError, match="can't be cast to the desired output type Long"):
        getattr(OPS, op.name).out(torch.ones(3), out=torch.empty(3, dtype=torch.long))
    with pytest.raises(RuntimeError, match="can't be cast"):
        getattr(OPS, op.name + "_")(torch.arange(3))


def test_unary_out_with_other_dtype_uses_castout_and_matches():
    op = next(o for o in REGISTRY.ops if o.promotes_int_to_float and o.family == "unary")
    x = torch.arange(-3, 7)
    out = torch.empty(10, dtype=torch.float16)
    getattr(OPS, op.name).out(x, out=out)
    torch.testing.assert_close(out, reference(op.reference)(x).half())


def test_inplace_rejects_broadcast_self():
    op = _first("binary")
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        getattr(OPS, op.name + "_")(torch.ones(3), torch.ones(2, 3))
