"""Bad input at run time: what torch refuses is refused with torch's message, and every
other mistake gets an exception naming the op and the argument. torch's own op, run on
CPU in the same situation, is the oracle wherever torch has the op.

Other classes of issue 10 are tested where their code is tested: more dimensions than
c10/metal's kernels index (16, 17, 25, 64, broadcast, expanded and into a strided out=)
in test_semantics.py's `test_beyond_sixteen_dimensions_matches_torch` and
`test_the_issue_reproductions_beyond_sixteen_dimensions`; lerp/addcmul extremes in
test_semantics.py's `test_lerp_with_a_negative_weight_does_not_overflow` and
`test_addcmul_fuses_like_torch`.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import mpsgen.ops  # noqa: F401  (loads the ops: torch.ops.mpsgen.*, the fake kernels)
from mpsgen.codegen.registry.loader import load
from mpsgen.samples import TORCH_DTYPES, entry_params, fill, op_overload

pytestmark = pytest.mark.quick  # bash test.sh --quick (tests/conftest.py)

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = load(ROOT / "ops.yaml")
NS = REGISTRY.namespace
OPS = getattr(torch.ops, NS)


def torch_error(call) -> BaseException:
    """The exception torch's own op raises (the oracle); fails if it raises none."""
    try:
        call()
    except Exception as e:  # noqa: BLE001  (whatever torch raises is the expectation)
        return e
    pytest.fail("the oracle did not raise: the test's premise is wrong")


def assert_refused_like_torch(ours, theirs, op: str) -> None:
    """ours raises what theirs (torch's call, or the exception it raised) raises: the same
    exception type, torch's message, after the op's name."""
    expected = theirs if isinstance(theirs, BaseException) else torch_error(theirs)
    with pytest.raises(type(expected)) as info:
        ours()
    message = str(info.value)
    assert message.startswith(f"{NS}::{op}"), message
    torch_message = re.sub(r"^\w+\(\): ", "", str(expected).splitlines()[0])  # "exp(): ...": torch names its op
    assert torch_message in message, (message, str(expected))


def _call_args(entry, dtype=None):
    """Float (or the first registered dtype's) 2x3 inputs for an entry, Scalars as a user passes them."""
    op = next(o for o in REGISTRY.ops if entry in o.entries)
    dtype = dtype or TORCH_DTYPES[op.registrations[0].input]
    tensors = [torch.ones(2, 3, dtype=dtype) for _ in op.tensor_args]
    return op, dtype, fill(entry_params(entry), tensors, dtype)


# ---- out= into a tensor that requires grad -----------------------------------------

def test_out_requiring_grad_is_refused_like_torch():
    x = torch.randn(3)
    assert_refused_like_torch(lambda: OPS.exp.out(x, out=torch.empty(3, requires_grad=True)),
                              lambda: torch.exp(x, out=torch.empty(3, requires_grad=True)), "exp.out")
    assert_refused_like_torch(lambda: OPS.hypot.out(x, x, out=torch.empty(3, requires_grad=True)),
                              lambda: torch.hypot(x, x, out=torch.empty(3, requires_grad=True)), "hypot.out")
    # without grad mode, torch writes into it; so do we
    with torch.no_grad():
        ours, theirs = torch.empty(3, requires_grad=True), torch.empty(3, requires_grad=True)
        OPS.exp.out(x, out=ours)
        torch.exp(x, out=theirs)
    torch.testing.assert_close(ours, theirs)


def _differentiable_results(op) -> bool:
    """Only floating point and complex tensors can require grad (an out= of the op's result dtype)."""
    out = TORCH_DTYPES[op.registrations[0].output]
    return out.is_floating_point or out.is_complex


# `implements: aten` entries are torch's own ops: torch's autograd and ADInplaceOrView kernels refuse these
@pytest.mark.parametrize("entry", [e for o in REGISTRY.own_ops if _differentiable_results(o) for e in o.entries],
                         ids=lambda e: e.qualified_name)
def test_every_out_variant_refuses_an_out_requiring_grad(entry):
    op, dtype, (args, kwargs) = _call_args(entry)
    expected = torch_error(lambda: torch.exp(torch.ones(3), out=torch.empty(3, requires_grad=True)))
    out = torch.empty(2, 3, dtype=TORCH_DTYPES[op.registrations[0].output], requires_grad=True)
    with pytest.raises(type(expected), match="out=... arguments don't support automatic differentiation"):
        op_overload(NS, entry.schema_names["out"])(*args, **kwargs, out=out)


# ---- in-place (or out=) on an inference tensor outside inference mode ---------------

def _inference(t: torch.Tensor) -> torch.Tensor:
    with torch.inference_mode():
        return t.clone()


def test_inference_tensor_updates_are_refused_like_torch():
    x = torch.randn(3)
    assert_refused_like_torch(lambda: OPS.exp_(_inference(x)), lambda: torch.exp_(_inference(x)), "exp")
    assert_refused_like_torch(lambda: OPS.add_(_inference(x), x), lambda: _inference(x).add_(x), "add")
    assert_refused_like_torch(lambda: OPS.exp.out(x, out=_inference(x)),
                              lambda: torch.exp(x, out=_inference(x)), "exp")
    # inside inference mode both write
    with torch.inference_mode():
        ours, theirs = x.clone(), x.clone()
        OPS.exp_(ours)
        torch.exp_(theirs)
    torch.testing.assert_close(ours, theirs)


@pytest.mark.parametrize("entry", [e for o in REGISTRY.own_ops for e in o.entries if "inplace" in e.schema_names],
                         ids=lambda e: e.qualified_name)
def test_every_inplace_variant_refuses_an_inference_self(entry):
    op, dtype, _ = _call_args(entry)
    tensors = [_inference(torch.ones(2, 3, dtype=dtype))] + [torch.ones(2, 3, dtype=dtype)
                                                             for _ in op.tensor_args[1:]]
    args, kwargs = fill(entry_params(entry), tensors, dtype, inplace=True)
    expected = torch_error(lambda: torch.exp_(_inference(torch.ones(3))))
    with pytest.raises(type(expected), match="Inplace update to inference tensor outside InferenceMode"):
        op_overload(NS, entry.schema_names["inplace"])(*args, **kwargs)
    assert torch.equal(tensors[0], torch.ones(2, 3, dtype=dtype))  # nothing was written


# ---- out= on another device than the inputs -------------------------------------------

@pytest.mark.parametrize("name,ours,theirs", [
    ("exp.out", lambda x, o: OPS.exp.out(x, out=o), lambda x, o: torch.exp(x, out=o)),
    ("hypot.out", lambda x, o: OPS.hypot.out(x, x, out=o), lambda x, o: torch.hypot(x, x, out=o)),
    ("eq.Tensor_out", lambda x, o: OPS.eq.Tensor_out(x, x, out=o), lambda x, o: torch.eq(x, x, out=o)),
    ("lerp.Tensor_out", lambda x, o: OPS.lerp.Tensor_out(x, x, x, out=o), lambda x, o: torch.lerp(x, x, x, out=o)),
])
def test_meta_out_with_cpu_inputs_is_refused_like_torch(name, ours, theirs):
    x = torch.randn(3)
    assert_refused_like_torch(lambda: ours(x, torch.empty(3, device="meta")),
                              lambda: theirs(x, torch.empty(3, device="meta")), name)


# ---- argument checks torch makes (ops.yaml `checks:`) -----------------------------------

@pytest.mark.parametrize("dtype,lambd", [(torch.float32, math.nan), (torch.float32, -1.0),
                                         (torch.float32, math.inf), (torch.float32, 1e39),
                                         (torch.float16, 1e5), (torch.bfloat16, -0.5)])
def test_softshrink_lambda_out_of_range_is_refused_like_torch(dtype, lambd):
    x = torch.randn(4, dtype=dtype)
    ref = torch.nn.functional.softshrink
    assert_refused_like_torch(lambda: OPS.softshrink(x, lambd), lambda: ref(x, lambd), "softshrink")
    assert_refused_like_torch(lambda: OPS.softshrink_(x.clone(), lambd), lambda: ref(x, lambd), "softshrink")
    assert_refused_like_torch(lambda: OPS.softshrink.out(x, lambd, out=torch.empty(4, dtype=dtype)),
                              lambda: ref(x, lambd), "softshrink")
    # traced: the fake kernel gives the message torch's meta kernel gives (Python's formatting)
    with FakeTensorMode() as mode:
        fake = mode.from_tensor(x)
        assert_refused_like_torch(lambda: OPS.softshrink(fake, lambd), lambda: ref(fake, lambd), "softshrink")


@pytest.mark.parametrize("dtype,lambd", [(torch.float32, 0.0), (torch.float16, 65504.0), (torch.bfloat16, 2.0)])
def test_softshrink_lambda_in_range_matches_torch(dtype, lambd):
    x = torch.randn(16, dtype=dtype) * 4
    torch.testing.assert_close(OPS.softshrink(x, lambd), torch.nn.functional.softshrink(x, lambd))


def test_hardshrink_takes_any_lambda_as_torch_does():
    x = torch.randn(16)
    for lambd in (math.nan, -1.0, math.inf):
        torch.testing.assert_close(OPS.hardshrink(x, lambd), torch.nn.functional.hardshrink(x, lambd),
                                   equal_nan=True)


B = torch.tensor([True, False, True])
F = torch.tensor([1.5, -2.0, 0.25])


@pytest.mark.parametrize("op,ours,theirs", [
    ("sub", lambda: OPS.sub(F, B), lambda: torch.sub(F, B)),
    ("sub", lambda: OPS.sub(B, F), lambda: torch.sub(B, F)),
    ("sub", lambda: OPS.sub(B, B), lambda: torch.sub(B, B)),
    ("sub", lambda: OPS.sub(B, torch.tensor(True)), lambda: torch.sub(B, torch.tensor(True))),
    ("sub", lambda: OPS.sub.Scalar(F, True), lambda: torch.ops.aten.sub.Scalar(F, True)),
    ("sub", lambda: OPS.sub.Scalar(B, True), lambda: torch.ops.aten.sub.Scalar(B, True)),
    ("sub", lambda: OPS.sub.Scalar(B, 2), lambda: torch.ops.aten.sub.Scalar(B, 2)),
    ("sub", lambda: OPS.sub_(F.clone(), B), lambda: F.clone().sub_(B)),
    ("sub", lambda: OPS.sub.out(F, B, out=torch.empty(3)), lambda: torch.sub(F, B, out=torch.empty(3))),
    ("neg", lambda: OPS.neg(B), lambda: torch.neg(B)),
    ("neg", lambda: OPS.neg_(B.clone()), lambda: B.clone().neg_()),
], ids=["float-bool", "bool-float", "bool-bool", "bool-0dim_bool", "Scalar-float-True", "Scalar-bool-True",
        "Scalar-bool-2", "inplace", "out", "neg", "neg_"])
def test_bool_subtraction_and_negation_are_refused_like_torch(op, ours, theirs):
    expected = torch_error(theirs)  # eager torch
    assert_refused_like_torch(ours, expected, op)
    # traced, the fake kernels (and the out=/in-place decompositions over them) refuse too
    with FakeTensorMode(allow_non_fake_inputs=True):
        assert_refused_like_torch(ours, expected, op)


def test_sub_of_other_dtypes_still_runs():
    i = torch.tensor([3, 4, 5])
    torch.testing.assert_close(OPS.sub(F, i), torch.sub(F, i))
    torch.testing.assert_close(OPS.sub.Scalar(i, 2), torch.ops.aten.sub.Scalar(i, 2))


# ---- messages that name the op and the argument ----------------------------------------

@pytest.mark.parametrize("dtype", [torch.float64, torch.complex128])
def test_out_of_a_dtype_metal_lacks_is_computed_then_cast_like_torch(dtype):
    """float64/complex128 exist on CPU only: the castout kernels cannot store them, so the
    host computes in the registered dtype and casts on the way out, as torch's CPU does."""
    x = torch.randn(5)
    for ours, theirs in [(lambda o: OPS.exp.out(x, out=o), lambda o: torch.exp(x, out=o)),
                         (lambda o: OPS.eq.Tensor_out(x, x.flip(0), out=o), lambda o: torch.eq(x, x.flip(0), out=o)),
                         (lambda o: OPS.hypot.out(x, x, out=o), lambda o: torch.hypot(x, x, out=o))]:
        actual, expected = torch.full((5,), 7, dtype=dtype), torch.full((5,), 7, dtype=dtype)
        ours(actual)
        theirs(expected)
        torch.testing.assert_close(actual, expected)


def test_a_registered_dtype_is_still_required_for_the_inputs():
    with pytest.raises(NotImplementedError, match=rf"^{NS}::exp: no kernel registered for dtype Double "
                                                  r"\(ops.yaml:\d+ registers: Float, Half, BFloat16"):
        OPS.exp(torch.randn(3, dtype=torch.float64))


@pytest.mark.parametrize("call,arg", [
    (lambda x: OPS.hypot(x, None), "other"),
    (lambda x: OPS.hypot(None, x), "self"),
    (lambda x: OPS.lerp(x, x, None), "weight"),
    (lambda x: OPS.exp.out(x, out=None), "out"),
    (lambda x: OPS.hypot.out(x, None, out=torch.empty(3)), "other"),
    (lambda x: OPS.sub(x, None), "other"),
], ids=["hypot-other", "hypot-self", "lerp-weight", "exp-out", "hypot.out-other", "sub-other"])
def test_none_for_a_tensor_names_the_op_and_the_argument(call, arg):
    x = torch.randn(3)
    torch_error(lambda: torch.hypot(x, None))  # torch refuses None for a Tensor too (a TypeError)
    with pytest.raises(TypeError, match=rf"^{NS}::\w+(\.\w+)?: argument '{arg}' must be a Tensor, not None$"):
        call(x)
    with FakeTensorMode(allow_non_fake_inputs=True), \
            pytest.raises(TypeError, match=rf"^{NS}::\w+(\.\w+)?: argument '{arg}' must be a Tensor, not None$"):
        call(x)
