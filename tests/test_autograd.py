"""Autograd: the `derivatives:` of ops.yaml against the gradients of the torch reference.

Metal has no double, so instead of a float64 gradcheck each generated op's
gradients are compared with those torch computes for its reference op, on the
same inputs and the same incoming gradient, in float32, the reduced-precision
dtypes and complex (where the op registers them).
"""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import torch

import mpsgen.ops  # loads mpsgen's own ops (the extension and generated/library.py)
from mpsgen.codegen.emit import render
from mpsgen.codegen.registry.loader import load
from mpsgen.samples import (TORCH_DTYPES, edge_samples, entry_params, fill, op_overload, opinfo_samples, reference,
                            registered_dtypes, registered_outputs, require_grad, value_tensors)

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = load(ROOT / "ops.yaml")
NS = REGISTRY.namespace
GRAD_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.complex64)


def _cases():
    for op in REGISTRY.own_ops:  # aten entries: test_aten_entries_use_torchs_derivatives below
        if not op.differentiable or not op.derivatives:
            continue  # no formulas: torch has no derivative either (test_no_formulas_... below)
        for entry in op.entries:
            if not value_tensors(op, entry):
                continue  # where.Scalar: only Scalars, nothing to differentiate
            for r in op.registrations:
                dtype = TORCH_DTYPES[r.input]
                # not a complex32 result (polar of half): torch's CPU autograd cannot reduce it
                if dtype in GRAD_DTYPES and r.output != "half2":
                    yield pytest.param(op, entry, dtype, id=f"{entry.qualified_name}-{str(dtype)[6:]}")


def _grad_samples(op, entry, dtype):
    """OpInfo samples with requires_grad, plus broadcasting, 0-dim and strided ones.

    Only finite inputs: a gradient at NaN or ±inf is a convention, and torch's own is not
    even consistent. Its CPU hardshrink_backward gives `grad` at NaN for the 9-element
    reference_inputs[15] but 0 for the 128x128 reference_inputs[16] (scalar vs vector loop).
    """
    found = opinfo_samples(entry.opinfo, entry_params(entry), "cpu", dtype, requires_grad=True)
    found += [require_grad(s) for s in edge_samples(entry_params(entry), "cpu", dtype, registered_dtypes(op),
                                                    large=False)]
    return [s for s in found if all(bool(a.detach().isfinite().all()) for a in s.args if isinstance(a, torch.Tensor))]


def _gradients(fn, sample, g=None):
    """d(<out, g>)/d(inputs), g random unless given: the output, and (g, each input's gradient)."""
    inputs = [a for a in sample.args if isinstance(a, torch.Tensor) and a.requires_grad]
    out = fn(*sample.args, **sample.kwargs)
    if not inputs or not out.requires_grad:
        return out, None
    if g is None:
        g = torch.testing.make_tensor(out.shape, dtype=out.dtype, device=out.device, low=-2, high=2)
    return out, (g, torch.autograd.grad(out, inputs, g, allow_unused=True))


@pytest.mark.parametrize("op,entry,dtype", list(_cases()))
def test_gradients_match_reference(op, entry, dtype):
    fn, ref = op_overload(NS, entry.qualified_name), reference(entry.reference)
    compared, failures = 0, []
    for sample in _grad_samples(op, entry, dtype):
        try:
            expected_out, expected = _gradients(ref, sample, None)
        except Exception:
            continue  # torch itself has no gradient here (e.g. an unsupported dtype mix)
        if expected is None:
            continue
        g, expected_grads = expected
        try:
            actual_out, actual = _gradients(fn, sample, g)
        except NotImplementedError as err:  # a promoted dtype the op does not register, and says so
            if "no kernel registered" in str(err) and str(expected_out.dtype)[6:] not in registered_outputs(op):
                continue
            raise
        assert actual is not None, f"{sample.name}: the output does not require grad"
        for i, (a, e) in enumerate(zip(actual[1], expected_grads)):
            if (a is None) != (e is None):
                failures.append(f"{sample.name} input {i}: {a} vs {e}")
                continue
            if a is None:
                continue
            try:
                torch.testing.assert_close(a, e, equal_nan=True, **_tolerance(dtype))
            except AssertionError as err:
                failures.append(f"{sample.name} input {i}: {err}")
        compared += 1
    assert compared >= 5, f"only {compared} samples had a torch reference gradient"
    assert not failures, f"{len(failures)} gradients differ:\n" + "\n".join(failures[:4])


def _tolerance(dtype):
    """torch.testing's defaults, a notch looser for half/bfloat: formulas that read
    `result` run on our forward result, itself within those defaults of torch's (hypot
    float16 differs by more than the defaults allow)."""
    if dtype == torch.float16:
        return dict(rtol=2e-3, atol=2e-5)
    if dtype == torch.bfloat16:
        return dict(rtol=3.2e-2, atol=1e-4)
    return {}


def test_every_differentiable_input_has_a_formula():
    """The shipped registry: every Tensor input of every differentiable entry but a bool mask (where's
    condition), unless the op has no formulas at all, as torch's mish_backward has none."""
    missing = [f"{e.qualified_name}: {a}" for op in REGISTRY.own_ops if op.differentiable and op.derivatives
               for e in op.entries
               for a in (x.name for x in e.args if x.kind == "Tensor" and x.name != e.mask)
               if e.derivative(a) is None]
    assert not missing


@pytest.mark.parametrize("op", [op for op in REGISTRY.own_ops if op.differentiable and not op.derivatives],
                         ids=lambda op: op.qualified_name)
def test_no_formulas_refuse_backward_as_torchs_op_does(op):
    """An op without `derivatives:` raises at backward, naming the op and the input, where
    torch's own op has no derivative either ("derivative for aten::mish_backward is not implemented")."""
    tensors = [torch.randn(4, requires_grad=True) for _ in op.tensor_args]
    args, kwargs = fill(entry_params(op), tensors, torch.float32)
    with pytest.raises(RuntimeError, match="not implemented"):
        reference(op.reference)(*args, **kwargs).sum().backward()
    with pytest.raises(RuntimeError, match=f"{NS}::{op.qualified_name}: no derivative formula for input"):
        op_overload(NS, op.qualified_name)(*args, **kwargs).sum().backward()


def test_out_variant_refuses_autograd():
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=f"{NS}::exp.out: functions with out=.* don't support automatic"):
        torch.ops.mpsgen.exp(x, out=torch.empty(3))


def test_inplace_differentiates():
    x = torch.randn(4, 5, requires_grad=True)
    y = x * 2
    torch.ops.mpsgen.sin_(y)
    (gx,) = torch.autograd.grad(y.sum(), x)
    torch.testing.assert_close(gx, 2 * torch.cos(2 * x.detach()))


def test_inplace_without_grad_bumps_the_version_counter():
    """A tensor saved for backward and then changed in place must make backward fail."""
    w = torch.randn(3, requires_grad=True)
    x = torch.randn(3)
    y = torch.mul(x, w)  # saves x
    torch.ops.mpsgen.exp_(x)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        y.sum().backward()


def test_not_differentiable_results_do_not_require_grad():
    x = torch.randn(3, requires_grad=True)
    assert not torch.ops.mpsgen.isnan(x).requires_grad
    assert not torch.ops.mpsgen.lt(x, x.detach()).requires_grad


# --- the generated C++ (tests/test_autograd_cpp.py runs it on a registry of its own) -----

def test_generated_backward_names_the_formula_line_and_keeps_only_what_it_reads():
    text = render.render(REGISTRY)["autograd.cpp"]
    line = next(i + 1 for i, l in enumerate((ROOT / "ops.yaml").read_text().splitlines())
                if l.strip() == "self: grad * result.conj()")
    assert f'#line {line} "ops.yaml"\n    grad_inputs[0] = grad * result.conj();\n' in text
    node = text[text.index("struct ExpBackward"):text.index("variable_list ExpBackward::apply")]
    assert "SavedVariable result_;" in node and "self_" not in node  # exp's formula reads result only


@pytest.mark.parametrize("op", REGISTRY.aten_ops, ids=lambda op: op.qualified_name)
def test_aten_entries_use_torchs_derivatives(op):
    """An `implements: aten` entry has no formulas (the loader refuses `derivatives:`):
    torch's autograd kernel for the aten op, from derivatives.yaml, serves it. opcheck's
    autograd-registration check runs on the overridden op in tests/test_aten_overrides.py."""
    assert not op.derivatives
    assert torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{op.qualified_name}", "Autograd")


# --- no Python on the eager path ------------------------------------------------------

def _python_calls(fn) -> list[str]:
    """The Python functions a call runs, besides the test's own lambda and torch.ops's
    own __call__ (which calls into C++ for torch's ops too)."""
    seen = []

    def profile(frame, event, arg):
        if event == "call":
            seen.append(f"{frame.f_code.co_filename}:{frame.f_code.co_name}")

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return [c for c in seen if not c.endswith("torch/_ops.py:__call__") and not c.startswith(__file__)]


@pytest.mark.parametrize("mode", ["autograd enabled", "inference_mode", "requires_grad"])
def test_eager_calls_never_enter_python(mode):
    ops = torch.ops.mpsgen
    with torch.inference_mode(mode == "inference_mode"):
        x, y, z = (torch.rand(4) + 0.5 for _ in range(3))
        out = torch.empty(4)
        calls = [lambda: ops.exp(x), lambda: ops.hypot(x, y), lambda: ops.add.Tensor(x, y, alpha=2),
                 lambda: ops.lerp.Tensor(x, y, z), lambda: ops.clamp.Tensor(x, y), lambda: ops.lt.Tensor(x, y),
                 lambda: mpsgen.hypot(x, y), lambda: mpsgen.add(x, y, alpha=2)]
        if mode == "requires_grad":
            x.requires_grad_(True)
            y.requires_grad_(True)
        else:
            calls += [lambda: ops.exp.out(x, out=out), lambda: ops.exp_(out), lambda: ops.hypot_(out, y),
                      lambda: ops.lerp.Tensor_out(x, y, z, out=out), lambda: ops.lt_.Tensor(out, y),
                      lambda: mpsgen.hypot(x, y, out=out), lambda: mpsgen.lerp_(out, y, z)]
        for call in calls:
            call()  # the first call may load what it needs
            assert _python_calls(call) == []
    if mode == "requires_grad":  # backward() itself is Python (torch/_tensor.py), for torch's ops too
        ours = [c for c in _python_calls(lambda: ops.hypot(x, y).sum().backward())
                if c.startswith((str(ROOT / "mpsgen"), str(ROOT / "generated")))
                or "torch/_library/" in c or "torch/autograd/function.py" in c]
        assert ours == []
