"""Fake (meta) kernels: torch.library.opcheck on every entry of ops.yaml, every
registered dtype, on its OpInfo samples.

opcheck runs each sample for real and under FakeTensorMode and compares
shape, dtype and strides (test_faketensor), checks the schema's mutation and
alias annotations (test_schema), the autograd registration, and traces the op
with AOTAutograd and dynamic shapes (test_aot_dispatch_dynamic).
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import mpsgen  # noqa: F401  (loads the extension and generated/library.py)
from codegen.loader import load
from mpsgen.samples import (TORCH_DTYPES, edge_samples, entry_params, op_overload, opinfo_samples,
                            registered_dtypes)

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = load(ROOT / "ops.yaml")
NS = REGISTRY.namespace
MIN_SAMPLES = 8


def _cases():
    for op in REGISTRY.ops:
        for entry in op.entries:
            for r in op.registrations:
                dtype = TORCH_DTYPES[r.input]
                yield pytest.param(op, entry, dtype, id=f"{entry.qualified_name}-{str(dtype)[6:]}")


def _differentiable(dtype: torch.dtype) -> bool:
    return dtype.is_floating_point or dtype.is_complex


@pytest.mark.parametrize("op,entry,dtype", list(_cases()))
def test_opcheck_opinfo_samples(op, entry, dtype):
    fn = op_overload(NS, entry.qualified_name)
    found = opinfo_samples(entry.opinfo, entry_params(entry), "cpu", dtype,
                           requires_grad=_differentiable(dtype), reference_inputs=False)
    if len(found) < MIN_SAMPLES:
        # unary OpInfos have one sample_input; Scalar overloads fit only reference_inputs
        found = opinfo_samples(entry.opinfo, entry_params(entry), "cpu", dtype,
                               requires_grad=_differentiable(dtype))[:MIN_SAMPLES]
    assert found, f"no OpInfo sample of {entry.opinfo!r} fits {entry.schema}"
    for sample in found:
        torch.library.opcheck(fn, sample.args, sample.kwargs)


def _variant_args(entry, dtype):
    """A broadcasting sample for the out= and in-place variants (self has the full shape)."""
    by_name = {s.name: s for s in edge_samples(entry_params(entry), "cpu", dtype, {dtype}, large=False)}
    return by_name.get("broadcast-rhs", by_name["transposed"])


@pytest.mark.parametrize("op,entry,dtype", list(_cases()))
def test_opcheck_out_and_inplace(op, entry, dtype):
    sample = _variant_args(entry, dtype)
    names = entry.schema_names
    expected = op_overload(NS, names["functional"])(*sample.args, **sample.kwargs)
    for out in (torch.empty(0, dtype=expected.dtype), torch.empty_like(expected)):  # resized, and as is
        torch.library.opcheck(op_overload(NS, names["out"]), sample.args, {**sample.kwargs, "out": out})
    if torch.can_cast(expected.dtype, dtype):
        self, *rest = sample.args
        torch.library.opcheck(op_overload(NS, names["inplace"]), (self.clone(), *rest), sample.kwargs)


@pytest.mark.parametrize("op,entry,dtype", list(_cases()))
def test_fake_matches_real_on_edge_samples(op, entry, dtype):
    """Broadcasting, type promotion, 0-dim, transposed and sliced inputs: the fake
    kernel's shape, dtype and strides are those of the real kernel's output."""
    fn = op_overload(NS, entry.qualified_name)
    checked = 0
    for sample in edge_samples(entry_params(entry), "cpu", dtype, registered_dtypes(op), large=False):
        try:
            real = fn(*sample.args, **sample.kwargs)
        except NotImplementedError:
            real = None  # an unregistered promoted dtype: the fake kernel must refuse it too
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            args = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in sample.args]
            if real is None:
                with pytest.raises(NotImplementedError, match="no kernel registered"):
                    fn(*args, **sample.kwargs)
                continue
            fake = fn(*args, **sample.kwargs)
        assert (fake.shape, fake.dtype, fake.stride()) == (real.shape, real.dtype, real.stride()), sample.name
        checked += 1
    assert checked >= 5
