"""Fake (meta) kernels: torch.library.opcheck on every entry of ops.yaml, every
registered dtype, on its OpInfo samples.

opcheck runs each sample for real and under FakeTensorMode and compares
shape, dtype and strides (test_faketensor), and checks the schema's mutation and
alias annotations (test_schema). The autograd registration and the trace with
AOTAutograd and dynamic shapes (test_aot_dispatch_dynamic) run once per structure
class of the samples (mpsgen/opcheck.py): a failure names the sample and its class.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import mpsgen.ops  # loads mpsgen's own ops (the extension and generated/library.py)
from mpsgen.opcheck import opcheck_calls, opcheck_samples, out_refuses_grad, structure
from mpsgen.codegen.registry.loader import load
from mpsgen.samples import (TORCH_DTYPES, Sample, as_inplace, edge_samples, entry_params, inplace_allowed,
                            op_overload, opinfo_samples, reference, registered_dtypes, registered_outputs,
                            require_grad)

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = load(ROOT / "ops.yaml")
NS = REGISTRY.namespace
MIN_SAMPLES = 8


def _cases():
    for op in REGISTRY.own_ops:  # aten entries: test_aten_entries_use_torchs_meta_kernels below
        for entry in op.entries:
            for r in op.registrations:
                dtype = TORCH_DTYPES[r.input]
                yield pytest.param(op, entry, dtype, id=f"{entry.qualified_name}-{str(dtype)[6:]}")


def _differentiable(dtype: torch.dtype, op=None) -> bool:
    """Samples require grad, so opcheck also runs backward. Not complex32, in or out (polar of
    half): torch's CPU autograd cannot reduce it (`"sum_cpu" not implemented for 'ComplexHalf'`)."""
    out = next((TORCH_DTYPES[r.output] for r in op.registrations if TORCH_DTYPES[r.input] == dtype), dtype) \
        if op is not None else dtype
    # an op without formulas has no backward, as torch's own (mish_backward): nothing to trace
    return (dtype.is_floating_point or dtype.is_complex) and torch.complex32 not in (dtype, out) \
        and (op is None or bool(op.derivatives))


@pytest.mark.parametrize("op,entry,dtype", list(_cases()))
def test_opcheck_opinfo_samples(op, entry, dtype, record_property):
    fn = op_overload(NS, entry.qualified_name)
    grad = _differentiable(dtype, op)
    found = opinfo_samples(entry.opinfo, entry_params(entry), "cpu", dtype, requires_grad=grad,
                           reference_inputs=False)
    if len(found) < MIN_SAMPLES:
        # unary OpInfos have one sample_input; Scalar overloads fit only reference_inputs. Some
        # reference_inputs generators raise partway for complex32 (tan's, tanh's and sigmoid's
        # divide it on torch's CPU: "div_cpu" not implemented for 'ComplexHalf'): the samples made
        # before that are used (`dropped` keeps the error from propagating)
        found = opinfo_samples(entry.opinfo, entry_params(entry), "cpu", dtype, requires_grad=grad,
                               dropped=[])[:MIN_SAMPLES]
    # the op refuses what torch refuses, or a result dtype it does not register: nothing to trace
    found = [s for s in found if not _nothing_to_trace(fn, op, entry, s)]
    if not found:
        # no OpInfo sample fits the schema (clamp's are Tensor bounds; leaky_relu_backward has
        # no OpInfo; the report lists why each was dropped), or torch computes none of them
        # (div[trunc_rounding]'s for complex): opcheck the edge samples instead
        found = [require_grad(s) if grad else s
                 for s in edge_samples(entry_params(entry), "cpu", dtype, {dtype}, large=False)
                 if s.name not in ("empty", "nan-inf") and _runs(fn, s, grad)][:MIN_SAMPLES]
    assert found, f"no sample fits {entry.schema}"
    checked = []
    for sample in found:
        result = fn(*sample.args, **sample.kwargs)
        if result.isnan().any():
            continue  # opcheck compares without equal_nan (where(c, x, nan) fails it for aten.where too)
        if result.is_complex():
            # a real input of a complex result (lerp's float32 0-dim weight) gets no gradient:
            # torch's autograd refuses a complex one for it (torch.lerp raises at backward, and
            # opcheck of aten.lerp.Tensor fails alike)
            for a in (*sample.args, *sample.kwargs.values()):
                if isinstance(a, torch.Tensor) and a.is_leaf and not a.is_complex():
                    a.requires_grad_(False)
        checked.append(sample)
    traced = opcheck_samples(fn, checked)
    record_property("opcheck_classes", traced)
    # every structure among the samples was traced by one of them (mpsgen/opcheck.py)
    assert {structure(s.args, s.kwargs) for s in checked} == set(traced)


def _nothing_to_trace(fn, op, entry, sample) -> bool:
    """The op raises for the sample, and torch's reference raises too (div of complex with a
    rounding mode; lerp of integers with a float weight) or, where the op raised
    NotImplementedError, gives a dtype the op registers no kernel for (full_like's dtype=float64,
    which compare() counts UNSUPPORTED). Each is called once."""
    try:
        fn(*sample.args, **sample.kwargs)
        return False
    except (NotImplementedError, RuntimeError) as e:
        ours = e
    try:
        expected = reference(entry.reference)(*sample.args, **sample.kwargs)
    except (RuntimeError, NotImplementedError):
        return True
    return isinstance(ours, NotImplementedError) and "no kernel registered" in str(ours) and str(expected.dtype).removeprefix("torch.") not in registered_outputs(op)


def _runs(fn, sample, with_grad: bool) -> bool:
    """The op computes this sample, all finite (polygamma refuses n=-1, as torch does)."""
    try:
        result = fn(*sample.args, **sample.kwargs)
    except (RuntimeError, NotImplementedError, ValueError):
        return False
    # opcheck compares eager and traced outputs without equal_nan (see _variant_args)
    # (without NaN), and its gradients too, which an infinite result makes NaN
    if not (result.is_floating_point() or result.is_complex()):
        return True
    return bool(result.isfinite().all()) if with_grad else not result.isnan().any()


def _variant_args(entry, dtype):
    """A broadcasting sample for the out= and in-place variants (self has the full shape).

    Non-negative, integers and bools nonzero: opcheck compares eager and traced outputs without
    equal_nan, so a NaN result (sqrt(-1), an integer 0 / 0 divided to float) fails it, for
    torch's own aten.sqrt and aten.div too."""
    by_name = {s.name: s for s in edge_samples(entry_params(entry), "cpu", dtype, {dtype}, large=False)}
    sample = by_name.get("broadcast-rhs", by_name["transposed"])

    def positive(a):
        if not isinstance(a, torch.Tensor) or a.is_complex():
            return a
        if a.dtype == torch.bool:
            return torch.ones_like(a) if dtype == torch.bool else a  # not a mask (where's condition)
        if not a.is_signed() and a.dtype != torch.uint8:  # uint16/32/64: torch's CPU has no abs or add
            return a | 1
        return a.abs() if a.is_floating_point() else a.abs() + 1
    sample.args = tuple(positive(a) for a in sample.args)
    return sample


@pytest.mark.parametrize("op,entry,dtype", list(_cases()))
def test_opcheck_out_and_inplace(op, entry, dtype):
    sample = _variant_args(entry, dtype)
    names = entry.schema_names
    expected = op_overload(NS, names["functional"])(*sample.args, **sample.kwargs)
    outs = {"resized": torch.empty(0, dtype=expected.dtype), "as is": torch.empty_like(expected)}
    calls = [(op_overload(NS, names["out"]),
              Sample(f"{sample.name}, out {how}", sample.args, {**sample.kwargs, "out": out}))
             for how, out in outs.items()]
    # out= refuses inputs that require grad, as torch's out= variants do (opcheck's autograd
    # check cannot see a missing Autograd kernel of an out= variant: mpsgen/opcheck.py)
    graded = require_grad(Sample(sample.name, tuple(a.clone() if isinstance(a, torch.Tensor) else a
                                                     for a in sample.args), sample.kwargs))
    if any(isinstance(a, torch.Tensor) and a.requires_grad for a in graded.args):
        assert out_refuses_grad(op_overload(NS, names["out"]), graded, torch.empty_like(expected)) is None
    if "inplace" in names and inplace_allowed(dtype, expected.dtype):  # where has no in-place variant
        params = entry_params(entry)
        self = next(a for a in sample.args if isinstance(a, torch.Tensor))
        args, kwargs = as_inplace(params, sample.args, sample.kwargs, self.clone())
        calls.append((op_overload(NS, names["inplace"]), Sample(f"{sample.name}, in place", args, kwargs)))
    assert len(opcheck_calls(calls)) == len(calls)  # each call a class of its own: each traced


@pytest.mark.parametrize("op,entry,dtype", list(_cases()))
def test_fake_matches_real_on_edge_samples(op, entry, dtype):
    """Broadcasting, type promotion, 0-dim, transposed and sliced inputs: the fake
    kernel's shape, dtype and strides are those of the real kernel's output."""
    fn = op_overload(NS, entry.qualified_name)
    checked = 0
    for sample in edge_samples(entry_params(entry), "cpu", dtype, registered_dtypes(op), large=False):
        try:
            real, error = fn(*sample.args, **sample.kwargs), None
        except (NotImplementedError, RuntimeError) as e:
            error = e  # an unregistered promoted dtype, a refused alpha: the fake kernel refuses too
        with FakeTensorMode(allow_non_fake_inputs=True) as mode:
            args = [mode.from_tensor(a) if isinstance(a, torch.Tensor) else a for a in sample.args]
            if error is not None and "ZeroDivisionError" in str(error):
                # a zero among the values: a fake tensor has none (torch's meta kernels compute too)
                assert isinstance(fn(*args, **sample.kwargs), torch.Tensor)
                continue
            if error is not None:
                # both name the op as "<namespace>::<op>: "; a dtype in a check's message is
                # printed as each language prints it (Float from C++, torch.float32 from Python)
                message = re.split(r"\b(?:Float|Half|BFloat16|Double|Long|Int|Short|Char|Byte|Bool|ComplexFloat|"
                                   r"ComplexHalf)\b", str(error))[0]
                with pytest.raises(type(error), match=re.escape(message[:40])):
                    fn(*args, **sample.kwargs)
                continue
            fake = fn(*args, **sample.kwargs)
        assert (fake.shape, fake.dtype, fake.stride()) == (real.shape, real.dtype, real.stride()), sample.name
        checked += 1
    assert checked >= 5


@pytest.mark.parametrize("call,match", [
    (lambda x: torch.ops.mpsgen.exp_(x.long()), "can't be cast to the desired output type"),
    (lambda x: torch.ops.mpsgen.add_(x[0].clone(), x), "doesn't match the broadcast shape"),
    (lambda x: torch.ops.mpsgen.exp(x.double()), "no kernel registered for dtype"),
])
def test_traced_variants_refuse_what_the_kernels_refuse(call, match):
    """Under fake tensors (as in torch.compile) the out=/in-place decompositions and the
    fake kernels raise what the C++ kernels raise in eager mode, and torch too."""
    x = torch.randn(4, 6)
    with pytest.raises((RuntimeError, NotImplementedError), match=match):
        call(x)
    with FakeTensorMode() as mode, pytest.raises((RuntimeError, NotImplementedError), match=match):
        call(mode.from_tensor(x))


@pytest.mark.parametrize("op", REGISTRY.aten_ops, ids=lambda op: op.qualified_name)
def test_aten_entries_use_torchs_meta_kernels(op):
    """An `implements: aten` entry defines no op of ours and has no fake kernel of ours:
    torch's meta kernel serves it. opcheck runs on the overridden aten op in
    tests/test_aten_overrides.py (test_opcheck_passes_where_torch_passes)."""
    assert not hasattr(getattr(torch.ops, NS), op.qualified_name)
    assert torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{op.qualified_name}", "Meta")
