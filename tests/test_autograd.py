"""Autograd: the `derivatives:` of ops.yaml against the gradients of the torch reference.

Metal has no double, so instead of a float64 gradcheck each generated op's
gradients are compared with those torch computes for its reference op, on the
same inputs and the same incoming gradient, in float32, the reduced-precision
dtypes and complex (where the op registers them).
"""
from __future__ import annotations

import textwrap
from pathlib import Path

import pytest
import torch

import mpsgen  # noqa: F401  (loads the extension and generated/library.py)
from codegen import render
from codegen.loader import load
from mpsgen.samples import (TORCH_DTYPES, edge_samples, entry_params, op_overload, opinfo_samples, reference,
                            registered_dtypes, registered_outputs, require_grad, value_tensors)

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = load(ROOT / "ops.yaml")
NS = REGISTRY.namespace
GRAD_DTYPES = (torch.float32, torch.float16, torch.bfloat16, torch.complex64)


def _cases():
    for op in REGISTRY.own_ops:  # aten entries: test_aten_entries_use_torchs_derivatives below
        if not op.differentiable:
            continue
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
    """The shipped registry: every Tensor input of every differentiable entry but a bool mask (where's condition)."""
    missing = [f"{e.qualified_name}: {a}" for op in REGISTRY.own_ops if op.differentiable for e in op.entries
               for a in (x.name for x in e.args if x.kind == "Tensor" and x.name != e.mask)
               if e.derivative(a) is None]
    assert not missing


def test_out_variant_refuses_autograd():
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=f"{NS}::exp.out: functions with out=.* don't support automatic"):
        torch.ops.mpsgen.exp(x, out=torch.empty(3))


def test_inplace_differentiates_through_the_functional_op():
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


# --- an op without formulas: the generated code, run on an op defined in Python -----

NO_FORMULA_YAML = """\
namespace: mpsgen_noformula
ops:
  - func: twice(Tensor self, Tensor other) -> Tensor
    dtypes: [float]
    reference: torch.add
    derivatives:
      self: grad
    functor: |
      template <typename T> inline T operator()(const T a, const T b) { return a + b; }

  - func: thrice(Tensor self) -> Tensor
    dtypes: [float]
    reference: torch.exp
    functor: |
      template <typename T> inline T operator()(const T a) { return a; }
"""


_KEEP_ALIVE: list = []


@pytest.fixture(scope="module")
def no_formula_ops(tmp_path_factory):
    """The registry's generated library.py, over CPU kernels written in Python
    (the C++ extension only has the shipped ops)."""
    path = tmp_path_factory.mktemp("noformula") / "ops.yaml"
    path.write_text(NO_FORMULA_YAML)
    registry = load(path)
    lib = torch.library.Library(registry.namespace, "DEF")
    kernels = {"twice": lambda a, b: a + b, "thrice": lambda a: a * 3}
    for e in registry.entries:
        for schema in e.schemas.values():
            lib.define(schema)
        fn, names = kernels[e.qualified_name], e.schema_names
        lib.impl(names["functional"], fn, "CPU")
        lib.impl(names["out"], lambda *a, out, fn=fn: out.copy_(fn(*a)), "CPU")
        lib.impl(names["inplace"], lambda s, *a, fn=fn: s.copy_(fn(s, *a)), "CPU")
    generated: dict = {}
    exec(compile(render.render(registry)["library.py"], "library.py", "exec"), generated)
    # both libraries stay registered for the session: torch keeps global references to the ops
    _KEEP_ALIVE.extend([lib, generated])
    return torch.ops.mpsgen_noformula


def test_backward_without_formula_names_the_op(no_formula_ops):
    a, b = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    (ga,) = torch.autograd.grad(no_formula_ops.twice(a, b.detach()).sum(), a)  # self has a formula
    torch.testing.assert_close(ga, torch.ones(3))
    with pytest.raises(RuntimeError, match=r"mpsgen_noformula::twice: no derivative formula for input 'other' "
                                           r"\(ops.yaml entry at ops.yaml:3\)"):
        no_formula_ops.twice(a, b).sum().backward()
    with pytest.raises(RuntimeError, match=r"mpsgen_noformula::thrice: no derivative formula for input 'self'"):
        no_formula_ops.thrice(a).sum().backward()


def test_generated_backward_names_the_formula_line():
    text = render.render(REGISTRY)["library.py"]
    line = next(i + 1 for i, l in enumerate((ROOT / "ops.yaml").read_text().splitlines())
                if l.strip() == "self: grad * conj(result)")
    assert f"grad * conj(result) if ctx.needs_input_grad[0] else None,  # self: ops.yaml:{line}" in text
    assert textwrap.dedent("""\
        def exp_setup_context(ctx, inputs, output):
            self, = inputs
            result = output
            ctx.save_for_backward(result)""") in text


@pytest.mark.parametrize("op", REGISTRY.aten_ops, ids=lambda op: op.qualified_name)
def test_aten_entries_use_torchs_derivatives(op):
    """An `implements: aten` entry has no formulas (the loader refuses `derivatives:`):
    torch's autograd kernel for the aten op, from derivatives.yaml, serves it. opcheck's
    autograd-registration check runs on the overridden op in tests/test_aten_overrides.py."""
    assert not op.derivatives
    assert torch._C._dispatch_has_kernel_for_dispatch_key(f"aten::{op.qualified_name}", "Autograd")
