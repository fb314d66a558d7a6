"""Structured-op semantics of every entry of ops.yaml, against torch as the oracle.

out= (resizing, non-contiguous, another dtype through castout or a cast, dtypes
torch refuses), in-place on a non-contiguous self, the errors for unregistered
dtypes, mismatched shapes and bad alphas, and >32-bit indexing.
"""
from __future__ import annotations

import contextlib
import re
from pathlib import Path

import pytest
import torch
from torch.testing._comparison import default_tolerances

import mpsgen._C as ext
import mpsgen.ops  # noqa: F401  (loads the ops: torch.ops.mpsgen.*, the fake kernels)
from mpsgen.codegen.registry.loader import load
from mpsgen.samples import (TORCH_DTYPES, Sample, as_inplace, edge_samples, entry_params, fill, inplace_allowed,
                            op_overload, reference, registered_dtypes, value_tensors, widened_reference)

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = load(ROOT / "ops.yaml")
OPS = getattr(torch.ops, REGISTRY.namespace)
REGISTRY_BY_NAME = {e.qualified_name: e for e in REGISTRY.entries}
# every dtype an out= may have: Metal's, and those only the CPU has (float64, complex128: the
# result is cast into them, as TensorIterator casts)
OUT_DTYPES = [torch.float32, torch.float16, torch.bfloat16, torch.float64, torch.int64, torch.int32, torch.int16,
              torch.int8, torch.uint8, torch.bool, torch.complex64, torch.complex32, torch.complex128]


def overload(qualified: str):
    return op_overload(REGISTRY.namespace, qualified)


def _cases(all_dtypes=True):
    # aten entries (implements: aten): in this process their aten ops run torch's CPU
    # kernels; tests/test_aten_overrides.py checks their out= and in-place variants
    for op in REGISTRY.own_ops:
        for entry in op.entries:
            regs = op.registrations if all_dtypes else op.registrations[:1]
            for r in regs:
                dtype = TORCH_DTYPES[r.input]
                yield pytest.param(op, entry, dtype, id=f"{entry.qualified_name}-{str(dtype)[6:]}")


def _transposed_sample(op, entry, dtype):
    """Non-contiguous (5, 7) inputs; Scalars as a user passes them."""
    s = next(s for s in edge_samples(entry_params(entry), "cpu", dtype, registered_dtypes(op), large=False)
             if s.name == "transposed")
    return s.args, s.kwargs


def _reference(entry, args, kwargs):
    """torch's result, or where torch's CPU lacks the dtype (div of complex32), the widened
    oracle of op-output-match (mpsgen.samples.widened_reference)."""
    ref = reference(entry.reference)
    try:
        return ref(*args, **kwargs)
    except NotImplementedError as e:
        return widened_reference(ref, Sample("transposed", args, kwargs), e, getattr(entry, "dtype_defaults", ()))[0]


@pytest.mark.parametrize("op,entry,dtype", list(_cases()))
def test_out_variant_matches_reference(op, entry, dtype):
    args, kwargs = _transposed_sample(op, entry, dtype)
    expected = _reference(entry, args, kwargs)
    out_fn = overload(entry.schema_names["out"])

    # resized from empty, returned as given
    out = torch.empty(0, dtype=expected.dtype)
    assert out_fn(*args, **kwargs, out=out) is out
    torch.testing.assert_close(out, expected, equal_nan=True)

    # into a non-contiguous tensor of the right shape: its strides are kept
    strided = torch.empty(expected.shape[::-1], dtype=expected.dtype).t()
    out_fn(*args, **kwargs, out=strided)
    assert not strided.is_contiguous()
    torch.testing.assert_close(strided, expected, equal_nan=True)

    # a non-empty out= of the wrong shape is resized (with torch's deprecation
    # warning, which torch.ops calls print from C++ rather than raise as a UserWarning)
    wrong = torch.empty(3, dtype=expected.dtype)
    out_fn(*args, **kwargs, out=wrong)
    torch.testing.assert_close(wrong, expected, equal_nan=True)

    # another dtype: what torch allows is computed, then cast (castout kernels for
    # unary ops and comparisons); what it refuses raises its error. Where aten has the
    # entry's out= (same schema) and runs it for the result dtype, it is the oracle of what
    # is refused: its unary-op iterators and composite out= take no other dtype at all
    aten_out = _aten_op(entry.schemas["out"])
    if aten_out is not None and not _runs(aten_out, args, kwargs, torch.empty(0, dtype=expected.dtype)):
        aten_out = None  # torch's CPU lacks the kernel (float16 of some ops): no oracle
    for other in OUT_DTYPES:
        if other == expected.dtype:
            continue
        target = torch.empty(expected.shape, dtype=other)
        exact = bool(op.mask) or dtype in {TORCH_DTYPES[d] for d in entry.exact_out}
        # `out_dtype: {complex: input}` (abs.out): a complex out= of a complex input has its dtype
        complex_input = entry.complex_out_input and dtype.is_complex and other.is_complex and other != dtype
        ours = exact or complex_input or not torch.can_cast(expected.dtype, other)
        refused = not _runs(aten_out, args, kwargs, torch.empty(expected.shape, dtype=other)) if aten_out else ours
        assert refused == ours, \
            f"ops.yaml's out_dtype of {entry.qualified_name} disagrees with torch for an out= of {other}"
        if exact:  # torch's where casts no result: tests/test_mask.py compares the errors
            with pytest.raises(RuntimeError, match="Expected out type to be"):
                out_fn(*args, **kwargs, out=target)
        elif complex_input:
            with pytest.raises(RuntimeError, match=f"Found dtype {_scalar_type(other)} but expected {_scalar_type(dtype)}"):
                out_fn(*args, **kwargs, out=target)
        elif torch.can_cast(expected.dtype, other):
            out_fn(*args, **kwargs, out=target)
            _close_after_cast(target, expected)
        else:
            with pytest.raises(RuntimeError, match=f"can't be cast to the desired output type"):
                out_fn(*args, **kwargs, out=target)


def _scalar_type(dtype: torch.dtype) -> str:
    """c10's name of a dtype, as C++ messages print it (ComplexFloat for torch.complex64)."""
    return {torch.complex32: "ComplexHalf", torch.complex64: "ComplexFloat", torch.complex128: "ComplexDouble"}[dtype]


def _aten_op(schema: str):
    """aten's operator of exactly this schema (our names and types), or None."""
    qualified = schema.split("(", 1)[0]
    name, _, overload_name = qualified.partition(".")
    packet = getattr(torch.ops.aten, name, None)
    aten = getattr(packet, overload_name or "default", None) if packet is not None else None
    return aten if aten is not None and aten._schema == torch._C.parse_schema(f"aten::{schema}") else None


def _runs(fn, args, kwargs, out) -> bool:
    try:
        fn(*args, **kwargs, out=out)
    except RuntimeError:
        return False
    return True


def _close_after_cast(actual, expected):
    """actual holds expected cast to its dtype, within the looser of the two dtypes' tolerances."""
    rtol, atol = default_tolerances(actual.dtype, expected.dtype)  # what assert_close would pick
    torch.testing.assert_close(actual, expected.to(actual.dtype), equal_nan=True, rtol=rtol, atol=atol)


@pytest.mark.parametrize("op,entry,dtype", [c for c in _cases() if "inplace" in c.values[1].schema_names])
def test_inplace_on_noncontiguous_self(op, entry, dtype):
    args, kwargs = _transposed_sample(op, entry, dtype)
    expected = _reference(entry, args, kwargs)
    tensors = [a for a in args if isinstance(a, torch.Tensor)]
    self_ = tensors[0].clone().t().contiguous().t()  # same values, non-contiguous
    assert not self_.is_contiguous()
    inplace = overload(entry.schema_names["inplace"])
    args, kwargs = as_inplace(entry_params(entry), args, kwargs, self_)
    if inplace_allowed(dtype, expected.dtype):
        assert inplace(*args, **kwargs) is self_
        assert not self_.is_contiguous()
        _close_after_cast(self_, expected)
    elif torch.can_cast(expected.dtype, dtype):  # a real result of a complex self
        with pytest.raises(RuntimeError, match="In-place .* is not supported for complex tensors"):
            inplace(*args, **kwargs)
    else:
        with pytest.raises(RuntimeError, match="can't be cast to the desired output type"):
            inplace(*args, **kwargs)


@pytest.mark.parametrize("op", [o for o in REGISTRY.own_ops if len(o.tensor_args) > 1 and "inplace" in o.variants
                                and o.registrations[0].input == o.registrations[0].output], ids=lambda o: o.name)
def test_inplace_rejects_broadcasting_self(op):
    dtype = TORCH_DTYPES[op.registrations[0].input]
    tensors = [torch.ones(3, dtype=dtype)] + [torch.ones(2, 3, dtype=dtype) for _ in op.tensor_args[1:]]
    args, kwargs = fill(entry_params(op), tensors, dtype, inplace=True)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        overload(op.schema_names["inplace"])(*args, **kwargs)


@pytest.mark.parametrize("op", [o for o in REGISTRY.own_ops if len(o.tensor_args) > 1], ids=lambda o: o.name)
def test_mismatched_shapes_raise_like_torch(op):
    dtype = TORCH_DTYPES[op.registrations[0].input]
    tensors = [torch.ones(3, dtype=dtype)] + [torch.ones(4, dtype=dtype) for _ in op.tensor_args[1:]]
    args, kwargs = fill(entry_params(op), tensors, dtype)
    with pytest.raises(RuntimeError, match="must match the size of tensor"):
        overload(op.qualified_name)(*args, **kwargs)


def _unregistered(op):
    registered = registered_dtypes(op)
    return next(d for d in (torch.float64, torch.int16, torch.float32, torch.bool) if d not in registered)


@pytest.mark.parametrize("entry", [e for op in REGISTRY.own_ops for e in op.entries
                                   if value_tensors(op, e)],  # where.Scalar takes no dtype but Python numbers'
                         ids=lambda e: e.qualified_name)
def test_unregistered_dtype_raises_naming_op_and_registered_dtypes(entry):
    op = next(o for o in REGISTRY.ops if entry in o.entries)
    dtype = _unregistered(op)
    args, kwargs = fill(entry_params(entry), [torch.ones(3, dtype=dtype) for _ in op.tensor_args], dtype)
    with pytest.raises(NotImplementedError) as info:
        overload(entry.qualified_name)(*args, **kwargs)
    message = str(info.value)
    c10_name = {torch.float64: "Double", torch.int16: "Short", torch.float32: "Float", torch.bool: "Bool"}[dtype]
    assert f"{op.base_name}: no kernel registered for dtype {c10_name} " in message
    assert f"{op.loc} registers: " in message
    first = TORCH_DTYPES[op.registrations[0].input]
    assert {"float32": "Float", "int64": "Long"}[str(first)[6:]] in message


CHOICE_GAPS = [(op, table, dtype) for op in REGISTRY.own_ops for table in op.tables[1:]
               for dtype in sorted({r.input for r in op.registrations} - {r.input for r in table.registrations})]


@pytest.mark.parametrize("op,table,metal_dtype", CHOICE_GAPS,
                         ids=[f"{o.name}-{t.choice}-{d}" for o, t, d in CHOICE_GAPS])
def test_choice_without_a_dtype_raises_naming_op_choice_and_its_dtypes(op, table, metal_dtype):
    """A `str` choice with dtypes of its own (div's rounding modes) refuses the op's other
    dtypes by name, eagerly and traced, where torch's CPU refuses the dtype for that choice too."""
    from torch._subclasses.fake_tensor import FakeTensorMode

    dtype = TORCH_DTYPES[metal_dtype]
    value = table.choice.split("=", 1)[1].strip("'")
    args, kwargs = fill(entry_params(op), [torch.ones(3, dtype=dtype) for _ in op.tensor_args], dtype,
                        {op.selector.arg: None if value == "None" else value})
    with pytest.raises(Exception):  # the oracle: torch has no such kernel either
        reference(op.reference)(*args, **kwargs)
    registered = ", ".join(str(TORCH_DTYPES[r.input])[6:] for r in table.registrations)
    expected = (f"{REGISTRY.namespace}::{op.base_name}: no kernel registered for dtype {str(dtype)[6:]} with "
                f"{table.choice} ({op.loc.file}:{table.line} registers: {registered})")
    with FakeTensorMode() as mode, pytest.raises(NotImplementedError) as traced:
        overload(op.qualified_name)(*[mode.from_tensor(a) for a in args], **kwargs)
    assert str(traced.value) == expected
    with pytest.raises(NotImplementedError) as eager:
        overload(op.qualified_name)(*args, **kwargs)
    c10 = {"complex64": "ComplexFloat", "complex32": "ComplexHalf", "float32": "Float", "float16": "Half",
           "bfloat16": "BFloat16", "int64": "Long", "int32": "Int", "int16": "Short", "int8": "Char", "uint8": "Byte",
           "bool": "Bool"}
    assert str(eager.value).splitlines()[0] == re.sub(r"\b(\w+\d*)\b", lambda m: c10.get(m[1], m[1]), expected)


@pytest.mark.parametrize("alpha,match", [(0.5, "alpha must not be a floating point number"),
                                         (True, "Boolean alpha only supported for Boolean results")])
def test_add_alpha_checks_match_torch(alpha, match):
    a, b = torch.arange(3), torch.arange(3)
    with pytest.raises(RuntimeError, match=match):
        torch.add(a, b, alpha=alpha)  # the oracle raises the same
    with pytest.raises(RuntimeError, match=match):
        OPS.add(a, b, alpha=alpha)


@pytest.mark.parametrize("call,ref", [
    (lambda g, x: OPS.leaky_relu_backward(g, x, True, False),
     lambda g, x: torch.ops.aten.leaky_relu_backward(g, x, True, False)),
    (lambda g, x: OPS.hardshrink(x, True), lambda g, x: torch.nn.functional.hardshrink(x, True)),
    (lambda g, x: OPS.lerp(g, x, True), lambda g, x: torch.lerp(g, x, True)),
])
def test_bool_scalars_pass_where_torch_has_no_alpha_check(call, ref):
    """torch's add/sub alpha checks belong to add and sub (`alpha_check: true`); other ops
    take a bool Scalar as torch does."""
    g, x = torch.randn(6), torch.randn(6)
    torch.testing.assert_close(call(g, x), ref(g, x))


# ---- more dimensions than c10/metal's kernels index (max_ndim = 16) -----------------

def _unmergeable(ndim: int, sizes: int):
    """Two broadcasting operands whose result has `sizes` dimensions of size 2 that
    TensorIterator cannot merge, among `ndim` dimensions (the rest of size 1)."""
    shape_a = [2 if i % 2 == 0 else 1 for i in range(sizes)] + [1] * (ndim - sizes)
    shape_b = [1 if i % 2 == 0 else 2 for i in range(sizes)] + [1] * (ndim - sizes)
    return torch.randn(shape_a), torch.randn(shape_b)


@pytest.mark.parametrize("ndim,sizes", [(16, 16), (17, 17), (25, 20), (64, 20)])
def test_beyond_sixteen_dimensions_matches_torch(ndim, sizes):
    a, b = _unmergeable(ndim, sizes)
    torch.testing.assert_close(OPS.hypot(a, b), torch.hypot(a, b))  # broadcast
    big = a.expand(torch.broadcast_shapes(a.shape, b.shape))  # expanded (stride 0)
    torch.testing.assert_close(OPS.exp(big), torch.exp(big))
    torch.testing.assert_close(OPS.lerp(a, b, 0.25), torch.lerp(a, b, 0.25))
    torch.testing.assert_close(OPS.elu(big, 0.5), torch.nn.functional.elu(big, 0.5))
    w = torch.rand(b.shape)
    torch.testing.assert_close(OPS.addcmul(a, b, w, value=2), torch.addcmul(a, b, w, value=2))
    out = torch.empty(big.shape[::-1]).permute(*reversed(range(big.dim())))  # a strided out=
    OPS.hypot.out(a, b, out=out)
    torch.testing.assert_close(out, torch.hypot(a, b))


def test_the_issue_reproductions_beyond_sixteen_dimensions():
    a, b = torch.randn([2, 1] * 10), torch.randn([1, 2] * 10)
    torch.testing.assert_close(OPS.hypot(a, b), torch.hypot(a, b))
    x = torch.randn([2, 1] * 8 + [2]).expand([2] * 17)
    torch.testing.assert_close(OPS.exp(x), torch.exp(x))
    x = torch.randn([2, 1] * 10).expand([2] * 20)
    torch.testing.assert_close(OPS.exp(x), torch.exp(x))
    a, b = torch.randn([2, 1] * 8 + [2]), torch.randn([1, 2] * 8 + [2])
    torch.testing.assert_close(OPS.hypot(a, b), torch.hypot(a, b))


# ---- extremes where torch's formulas avoid overflow --------------------------------

F32_MAX = torch.finfo(torch.float32).max


def test_lerp_with_a_negative_weight_does_not_overflow():
    args = torch.tensor([0.0]), torch.tensor([F32_MAX]), torch.tensor([-0.5])
    torch.testing.assert_close(OPS.lerp(*args), torch.lerp(*args))  # -1.7014e38, not -inf
    torch.testing.assert_close(OPS.lerp(args[0], args[1], -0.5), torch.lerp(args[0], args[1], -0.5))


# ---- lerp of integers: self + weight * (end - self) modulo 2**bits, as torch's MPS computes it ---

INT64 = torch.iinfo(torch.int64)


@pytest.mark.parametrize("a,b,w,dtype,expected", [
    # the issue's uint8 row: 249 + 2 * (150 - 249) = 51, 156 + 2 * (67 - 156) = -22 = 234 mod 256
    ([249, 130, 156, 254], [150, 192, 67, 101], 2, torch.uint8, [51, 254, 234, 204]),
    # -128 + -3 * 255 = -893 = 131 mod 256, -125 as int8; 127 + -3 * -255 = 892 = 124 mod 256
    ([-128, 127], [127, -128], -3, torch.int8, [-125, 124]),
    # MAX + 2 * (MIN - MAX): MIN - MAX = 1 mod 2**64, so MAX + 2 = MIN + 1
    ([INT64.max, INT64.min], [INT64.min, INT64.max], 2, torch.int64, [INT64.min + 1, INT64.max - 1]),
    ([0, 1, 0, 1], [0, 0, 1, 1], 1, torch.bool, [False, False, True, True]),  # weight 1 gives end
    ([0, 1, 0, 1], [0, 0, 1, 1], 0, torch.bool, [False, True, False, True]),  # weight 0 gives self
])
def test_integer_lerp_wraps_modulo_the_dtype(a, b, w, dtype, expected):
    x, y = torch.tensor(a, dtype=dtype), torch.tensor(b, dtype=dtype)
    want = torch.tensor(expected, dtype=dtype)
    weight = torch.full_like(x, w)
    ref = reference("mpsgen.references.lerp")
    for got in (OPS.lerp.Tensor(x, y, weight), OPS.lerp.Scalar(x, y, w), ref(x, y, weight), ref(x, y, w)):
        assert torch.equal(got, want), (got, want)
    if dtype != torch.bool:  # a 0-dim integer weight, as torch's lerp takes one of any dtype
        assert torch.equal(OPS.lerp.Tensor(x, y, torch.tensor(w, dtype=dtype)), want)


def test_integer_lerp_refuses_float_weights_as_torch_mps_does():
    x = torch.tensor([1, 2, 3])
    with pytest.raises(RuntimeError, match="integer tensor takes an integer weight"):
        OPS.lerp.Tensor(x, x, torch.tensor(0.5))
    # torch's MPS alpha_check for lerp.Scalar: only 0 and 1 pass as floats (they copy self or end)
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        OPS.lerp.Scalar(x, x * 2, 0.5)
    assert torch.equal(OPS.lerp.Scalar(x, x * 2, 1.0), x * 2) and torch.equal(OPS.lerp.Scalar(x, x * 2, 0.0), x)
    # the weight reaches the kernel as a float: integers beyond 2**24 would not arrive exactly
    with pytest.raises(RuntimeError, match=r"at most 2\*\*24"):
        OPS.lerp.Scalar(x, x, 2 ** 24 + 1)
    assert torch.equal(OPS.lerp.Scalar(x, x + 1, 2 ** 24), x + 2 ** 24)
    ref = reference("mpsgen.references.lerp")
    with pytest.raises(RuntimeError):
        ref(x, x, torch.tensor(0.5))
    with pytest.raises(RuntimeError, match="alpha must not be a floating point number"):
        ref(x, x, 0.5)


def test_a_float_oracle_cast_back_out_of_range_is_refused():
    """C++ and Metal leave an out-of-range float-to-integer conversion undefined: a widened
    reference whose float result lies outside the integer dtype is no oracle (issue 59)."""
    from mpsgen.samples import _check_defined_cast
    _check_defined_cast(torch.tensor([-128.9, 127.9]), torch.int8)  # truncates into range
    _check_defined_cast(torch.tensor([-2.0 ** 63]), torch.int64)
    for bad, dtype in [([255.0, 256.0], torch.uint8), ([-1.0], torch.uint8), ([float("nan")], torch.int32),
                       ([2.0 ** 63], torch.int64), ([float("-inf")], torch.int16)]:
        with pytest.raises(RuntimeError, match="outside"):
            _check_defined_cast(torch.tensor(bad), dtype)


# ---- what an outside input generator found (issue 59, item 5): refusals and acceptances as torch's ---

BOOLS = torch.tensor([True, False, True, False])


@pytest.mark.parametrize("name", ["floor", "ceil", "trunc"])
def test_rounding_of_bools_passes_them_through_as_torch_mps_registers_it(name):
    """torch's CPU refuses a bool ("floor_vml_cpu" not implemented for 'Bool'); torch's MPS kernels
    register bool (tests/test_mps_dtypes.py), and rounding an integer is the identity."""
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        getattr(torch, name)(BOOLS)
    got = getattr(OPS, name)(BOOLS)
    assert got.dtype == torch.bool and torch.equal(got, BOOLS)


def test_full_like_beyond_half_raises_as_torch_does():
    """The generator reported torch running full_like(dtype=float16) of 9.02e18; torch 2.13's CPU
    refuses it with c10's overflow message, and so do we."""
    for value in (9.02e18, 1.87e9, 65520.0):
        with pytest.raises(RuntimeError, match="cannot be converted to type c10::Half without overflow"):
            torch.full_like(torch.zeros(2), value, dtype=torch.float16)
        with pytest.raises(RuntimeError, match="cannot be converted to type c10::Half without overflow"):
            OPS.full_like(torch.zeros(2), value, dtype=torch.float16)


def test_add_with_alpha_rounds_as_torch_mps_does_for_bfloat16():
    """add(uint8 35, bfloat16 170, alpha=-7): the exact -1155 is -1152 rounded once; torch's MPS
    add_alpha kernel computes `a + mul(alpha, b)` in bfloat (alpha * b = -1190 rounds to -1192,
    then 35 - 1192 = -1157 to -1160), as torch's CPU scalar loop does; its vectorised loop (32
    elements and more on AVX-512) rounds once. Hand-computed, then torch's scalar loop."""
    a, b = torch.tensor([35], dtype=torch.uint8), torch.tensor([170.0], dtype=torch.bfloat16)
    assert OPS.add(a, b, alpha=-7).item() == -1160.0 == torch.add(a, b, alpha=-7).item()
    assert OPS.sub(a, b, alpha=7).item() == -1160.0 == torch.sub(a, b, alpha=7).item()


@pytest.mark.parametrize("value", [1, 2])
def test_addcmul_fuses_like_torch(value):
    args = torch.tensor([float("inf")]), torch.tensor([F32_MAX]), torch.tensor([-F32_MAX])
    # torch computes fma(value * tensor1, tensor2, self): inf for value=1, nan for 2
    torch.testing.assert_close(OPS.addcmul(*args, value=value), torch.addcmul(*args, value=value), equal_nan=True)


NARROW_INTEGERS = {"char": torch.int8, "short": torch.int16, "uchar": torch.uint8}  # their opmath is int32
OPMATH_SCALAR_CASES = [pytest.param(e, p.name, NARROW_INTEGERS[r.input], id=f"{e.qualified_name}-{p.name}-{r.input}")
                       for op in REGISTRY.own_ops for e in op.entries for p in op.params
                       if p.kind == "Scalar" and p.metal == "opmath"
                       for r in op.registrations if r.input in NARROW_INTEGERS]


@pytest.mark.parametrize("entry,arg,dtype", OPMATH_SCALAR_CASES)
def test_an_opmath_scalar_beyond_a_narrow_integer_is_refused_as_torch_refuses(entry, arg, dtype):
    """The kernels read the Scalar in opmath (int32 for int8, int16 and uint8); torch converts it to
    the dtype itself, so 1000 for int8 raises there instead of wrapping. Functional, out=,
    in-place, and the fake kernel (torch.compile) alike."""
    too_big = torch.iinfo(dtype).max + 1
    sample = next(s for s in edge_samples(entry_params(entry), "cpu", dtype, {dtype}, large=False)
                  if s.name == "contiguous")
    kwargs = {**sample.kwargs, arg: too_big}
    with pytest.raises(RuntimeError, match="without overflow"):
        reference(entry.reference)(*sample.args, **kwargs)  # the oracle refuses it
    message = (f"{REGISTRY.namespace}::{entry.qualified_name.split('.')[0]}: value cannot be converted to type "
               ".* without overflow")
    names = entry.schema_names
    op = lambda variant: op_overload(REGISTRY.namespace, names[variant])  # noqa: E731
    calls = [lambda: op("functional")(*sample.args, **kwargs),
             lambda: op("out")(*sample.args, **kwargs, out=torch.empty(0, dtype=dtype))]
    if "inplace" in names:
        calls.append(lambda: op("inplace")(sample.args[0].clone(), *sample.args[1:], **kwargs))
    for call in calls:
        with pytest.raises(RuntimeError, match=message):
            call()
    with torch._subclasses.FakeTensorMode() as mode, pytest.raises(RuntimeError, match=message):
        op_overload(REGISTRY.namespace, names["functional"])(*(mode.from_tensor(a) for a in sample.args), **kwargs)
    # at the limit it computes, as torch does (wrapping arithmetic in both)
    limit = {**sample.kwargs, arg: too_big - 1}
    torch.testing.assert_close(op("functional")(*sample.args, **limit),
                               reference(entry.reference)(*sample.args, **limit))


REAL_OF_COMPLEX = [pytest.param(e, TORCH_DTYPES[r.input], id=f"{e.qualified_name}-{r.input}")
                   for op in REGISTRY.own_ops if not op.bool_output for e in op.entries
                   if "inplace" in e.schema_names for r in op.registrations
                   if TORCH_DTYPES[r.input].is_complex and not TORCH_DTYPES[r.output].is_complex]


def test_the_registry_has_in_place_ops_whose_result_is_real_for_complex_inputs():
    assert {p.values[0].qualified_name for p in REAL_OF_COMPLEX} >= {"abs", "angle"}


@pytest.mark.parametrize("entry,dtype", REAL_OF_COMPLEX)
def test_in_place_of_a_complex_self_with_a_real_result_is_refused(entry, dtype):
    """torch refuses abs_ of a complex tensor ("In-place abs is not supported for complex
    tensors."), as every in-place variant of an op whose result is real for complex inputs: the
    result would be written back with a zero imaginary part. Eager, and the decomposition that
    fake tensors (torch.compile) run; nothing is written."""
    with pytest.raises(RuntimeError, match="In-place abs is not supported for complex tensors"):
        torch.abs_(torch.ones(3, dtype=torch.complex64))  # the rule's oracle
    inplace = overload(entry.schema_names["inplace"])
    self_ = torch.tensor([3 + 4j, -1 - 1j, 0.5j], dtype=dtype)
    before = self_.clone()
    message = (f"{REGISTRY.namespace}::{entry.schema_names['inplace']}: In-place {entry.qualified_name.split('.')[0]} "
               "is not supported for complex tensors")
    with pytest.raises(RuntimeError, match=re.escape(message)):
        inplace(self_)
    assert torch.equal(torch.view_as_real(self_), torch.view_as_real(before))  # (no equal for complex32)
    with torch._subclasses.FakeTensorMode() as mode, pytest.raises(RuntimeError, match=re.escape(message)):
        inplace(mode.from_tensor(self_))
    real = torch.tensor([-1.5, 2.0, 0.0])  # a real self still works in place, as torch's abs_
    expected = reference(entry.reference)(real.clone())
    torch.testing.assert_close(inplace(real), expected)


# ---- tensors that need more than 32-bit indexing ------------------------------------

BIG = {"exp": (torch.exp, 1), "add.Tensor": (torch.add, 2), "lt.Tensor": (torch.lt, 2),
       "lerp.Tensor": (torch.lerp, 3)}


@pytest.fixture(scope="module")
def big_storage():
    """A float32 storage of 2**29 + 2**20 elements (over 2 GiB of byte offsets), left
    uninitialised except where the strided views below read."""
    return torch.empty((1 << 29) + (1 << 20), dtype=torch.float32)


@pytest.mark.parametrize("name", sorted(BIG))
def test_views_beyond_32bit_offsets_split_like_the_mps_host(name, big_storage):
    ref, n = BIG[name]
    # every 2**14-th element: 32800 elements whose byte offsets reach past 2**31,
    # so TensorIterator cannot use 32-bit indexing and exec_*_kernel splits it
    views = []
    for i in range(n):
        v = big_storage[i::1 << 14][:32800]
        v.copy_(torch.randn(v.shape) if i < 2 else torch.rand(v.shape))
        views.append(v)
    assert views[0].storage_offset() + (views[0].numel() - 1) * views[0].stride(0) >= (1 << 29)
    ext.cpu_take_launches()
    actual = overload(name)(*views)
    launches = ext.cpu_take_launches()
    assert len(launches) >= 2, launches  # one launch per 32-bit sub-iterator
    torch.testing.assert_close(actual, ref(*views))


# ---- the kernel variant a call selects, as exec_*_kernel names it -------------------

VARIANTS = [
    ("exp", lambda: (torch.rand(8),), {}, ["exp_dense_scalar_float_float"]),
    # a transposed input is still dense: the output takes its strides
    ("exp", lambda: (torch.rand(8, 8).t(),), {}, ["exp_dense_scalar_float_float"]),
    ("exp", lambda: (torch.rand(8, 8)[:, ::2],), {}, ["exp_strided_float_float"]),
    ("exp", lambda: (torch.arange(8),), {"out": torch.empty(8, dtype=torch.float16)},
     ["exp_dense_castout_long"]),
    ("add.Tensor", lambda: (torch.rand(8), torch.rand(8)), {"alpha": 2}, ["add_dense_float_float_float"]),
    ("add.Tensor", lambda: (torch.rand(4, 8), torch.rand(8)), {}, ["add_dense_broadcast_float_float_float"]),
    ("mul.Scalar", lambda: (torch.rand(8), 2.5), {}, ["mul_dense_scalar_float_float"]),
    ("mul.Scalar", lambda: (torch.arange(8, dtype=torch.int32), 2), {}, ["mul_dense_scalar_int_int"]),
    ("mul.Tensor", lambda: (torch.rand(8), torch.arange(8)), {}, ["mul_dense_cast_float_float"]),
    ("lt.Tensor", lambda: (torch.rand(8), torch.rand(8)), {"out": torch.empty(8, dtype=torch.int32)},
     ["lt_strided_castout_bool_float"]),
    ("lt.Tensor", lambda: (torch.rand(8), torch.arange(8)), {}, ["lt_dense_cast_bool_float"]),
    ("hardshrink", lambda: (torch.rand(8, 8)[:, ::2],), {}, ["hardshrink_strided_float_float_float"]),
    ("lerp.Tensor", lambda: (torch.rand(8), torch.rand(8), torch.rand(8)), {}, ["lerp_dense_float_float"]),
    # lerp.Scalar's own kernel, its weight a float field of lerp_scalar_params<T>
    ("lerp.Scalar", lambda: (torch.rand(8), torch.rand(8), 0.5), {},
     ["lerp_scalar_dense_float_float_lerp_scalar_params_float"]),
    ("lerp.Scalar", lambda: (torch.rand(8).half(), torch.rand(8).half(), 0.5), {},
     ["lerp_scalar_dense_half_half_lerp_scalar_params_half"]),
    # ternary with a Scalar: REGISTER_*TERNARY_ALPHA_OP's kernels, the alpha in opmath as torch 2.15's own
    # addcmul names them (its macOS libtorch_cpu.dylib has addcmul_dense_half_half_float); mixed dtypes
    # are cast first
    ("addcmul", lambda: (torch.rand(8), torch.rand(8, 8).t(), torch.rand(8)), {"value": 2},
     ["addcmul_strided_float_float_float"]),
    ("addcmul", lambda: (torch.rand(8), torch.arange(8), torch.rand(8)), {}, ["addcmul_dense_float_float_float"]),
    ("addcmul", lambda: (torch.rand(8).half(), torch.rand(8).half(), torch.rand(8).half()), {},
     ["addcmul_dense_half_half_float"]),
    ("addcmul", lambda: (torch.arange(8, dtype=torch.int8),) * 3, {}, ["addcmul_dense_char_char_int"]),
    # several Scalars: a params struct (exec_unary_kernel_with_params)
    ("elu", lambda: (torch.rand(8),), {"alpha": 0.5}, ["elu_dense_float_float_elu_params_float"]),
    ("elu", lambda: (torch.rand(8, 8)[:, ::2],), {}, ["elu_strided_float_float_elu_params_float"]),
    # a promoting Scalar: an int tensor clamped by 0.5 computes in float
    ("clamp", lambda: (torch.arange(8),), {"min": 0.5}, ["clamp_dense_float_float_clamp_params_float"]),
    ("clamp", lambda: (torch.arange(8),), {"min": 2}, ["clamp_dense_long_long_clamp_params_long"]),
    # a str argument selects the functor
    ("gelu", lambda: (torch.rand(8),), {"approximate": "tanh"}, ["gelu_tanh_dense_scalar_float_float"]),
    ("div.Tensor_mode", lambda: (torch.rand(8), torch.rand(8)), {"rounding_mode": None},
     ["div_true_dense_float_float"]),
    ("div.Tensor_mode", lambda: (torch.rand(8), torch.rand(8)), {"rounding_mode": "floor"},
     ["div_floor_dense_float_float"]),
    # each choice's own dtypes: integers divide to float, or rounded as integers
    ("div.Tensor_mode", lambda: (torch.arange(8), torch.arange(1, 9)), {"rounding_mode": None},
     ["div_true_dense_float_long"]),
    ("div.Tensor_mode", lambda: (torch.arange(8), torch.arange(1, 9)), {"rounding_mode": "trunc"},
     ["div_trunc_dense_long_long"]),
    # a binary op with params (exec_binary_kernel_with_params)
    ("leaky_relu_backward", lambda: (torch.rand(8), torch.rand(8), 0.1, False), {},
     ["leaky_relu_backward_dense_float_float_leaky_relu_backward_params_float"]),
]


@pytest.mark.parametrize("name,make,kwargs,expected", VARIANTS, ids=[f"{v[0]}-{v[3][0]}" for v in VARIANTS])
def test_selects_the_kernel_exec_kernel_would(name, make, kwargs, expected):
    args = make()
    fn = overload(name if "out" not in kwargs else REGISTRY_BY_NAME[name].schema_names["out"])
    ext.cpu_take_launches()
    fn(*args, **kwargs)
    assert ext.cpu_take_launches() == expected


# ---- non-finite Scalar and float arguments (issue 33) ------------------------------
# torch's kernels give NaN bounds, slopes and replacement values their IEEE meaning
# (clamp(x, min=nan) is all NaN); each such argument of every entry is NaN, inf and -inf
# in turn, on inputs that cross every branch, against torch on the same call.

_NONFINITE_VALUES = (float("nan"), float("inf"), float("-inf"))
_GRID = (-3.0, -1.0, -0.5, -0.0, 0.0, 0.5, 1.0, 3.0, 25.0, float("nan"), float("inf"), float("-inf"))


def _nonfinite_cases():
    for op in REGISTRY.own_ops:
        for entry in op.entries:
            for p in entry_params(entry):
                if p.kind not in ("Scalar", "float") or p.mask:
                    continue
                for r in op.registrations:
                    dtype = TORCH_DTYPES[r.input]
                    if dtype.is_floating_point:
                        for value in _NONFINITE_VALUES:
                            yield pytest.param(entry, p.name, dtype, value,
                                               id=f"{entry.qualified_name}-{p.name}={value}-{str(dtype)[6:]}")


def _aten_oracle(entry):
    """aten's op of the entry's own schema where torch has one (aten::hardtanh, not
    F.hardtanh, whose Python check refuses min_val > max_val before aten runs), else the
    entry's `reference:`."""
    return _aten_op(str(entry.schema)) or reference(entry.reference)


@pytest.mark.parametrize("entry,name,dtype,value", list(_nonfinite_cases()))
def test_non_finite_arguments_match_torch(entry, name, dtype, value):
    params = entry_params(entry)
    n = sum(p.kind == "Tensor" for p in params)
    grid = torch.tensor(_GRID, dtype=dtype)
    # every combination of grid values, by broadcasting, as edge_samples' nan-inf sample
    tensors = [grid.reshape([-1] + [1] * i) for i in range(n)]
    args, kwargs = fill(params, tensors, dtype, {name: value})
    ours = overload(entry.qualified_name)
    try:
        expected = _aten_oracle(entry)(*args, **kwargs)
    except RuntimeError:  # torch refuses the value: so must we
        with pytest.raises(RuntimeError):
            ours(*args, **kwargs)
        return
    actual = ours(*args, **kwargs)
    torch.testing.assert_close(actual, expected, equal_nan=True, atol=0, rtol=0, check_dtype=True)


# ---- mixed dtypes (issue 33) ------------------------------------------------------------
# Most binary ops promote; some of torch's refuse another dtype outright (lerp: "expected dtype
# float for `end`"), and some return one input's dtype (mish_backward). Each Tensor after the
# first of every entry with aten's schema gets another dtype, as a tensor and as a 0-dim tensor:
# ours raises exactly where aten's op raises, and otherwise gives aten's result dtype.

def _mixed_cases():
    for op in REGISTRY.own_ops:
        for entry in op.entries:
            if _aten_op(str(entry.schema)) is None:
                continue
            params = entry_params(entry)
            tensors = [p for p in params if p.kind == "Tensor" and not p.mask]
            for p in tensors[1:]:
                for other in (torch.float16, torch.float64, torch.int64):
                    for zero_dim in (False, True):
                        yield pytest.param(entry, p.name, other, zero_dim,
                                           id=f"{entry.qualified_name}-{p.name}-{str(other)[6:]}{'-0dim' * zero_dim}")


@pytest.mark.parametrize("entry,name,other,zero_dim", list(_mixed_cases()))
def test_mixed_dtypes_are_refused_where_torch_refuses(entry, name, other, zero_dim):
    params = entry_params(entry)
    tensors = [torch.tensor(0.75) if zero_dim and p.name == name else torch.rand(4) for p in params
               if p.kind == "Tensor"]
    tensors = [t.to(other) if p.name == name else (t < 0.5 if p.mask else t)
               for p, t in zip([p for p in params if p.kind == "Tensor"], tensors)]
    args, kwargs = fill(params, tensors, torch.float32)
    try:
        expected = _aten_op(str(entry.schema))(*args, **kwargs)
    except RuntimeError as e:
        if re.search(r"not implemented for '\w+'", str(e)):
            return  # torch's CPU lacks the kernel: a dtype matter, not a refusal
        with pytest.raises(RuntimeError):
            overload(entry.qualified_name)(*args, **kwargs)
        return
    try:
        actual = overload(entry.qualified_name)(*args, **kwargs)
    except NotImplementedError:
        return  # a result dtype the op does not register (test_unregistered_dtype_raises_...)
    # the result dtype is aten's CPU op's (mish_backward's is self's: `result_dtype:`), and so
    # is the fake kernel's, which torch.compile sees
    assert actual.dtype == expected.dtype
    with torch._subclasses.FakeTensorMode(allow_non_fake_inputs=True):
        assert overload(entry.qualified_name)(*args, **kwargs).dtype == expected.dtype


# ---- integer division by zero (issue 33) --------------------------------------------


@pytest.mark.parametrize("mode", ["trunc", "floor"])
@pytest.mark.parametrize("dtype", [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8])
@pytest.mark.parametrize("divisor", ["tensor", "0-dim", "broadcast"])
def test_integer_division_by_zero_raises_as_torchs_cpu_kernels(mode, dtype, divisor):
    a = torch.tensor([[3, 4, 7]], dtype=dtype)
    b = {"tensor": torch.tensor([[1, 0, 2]], dtype=dtype), "0-dim": torch.tensor(0, dtype=dtype),
         "broadcast": torch.tensor([[1], [0]], dtype=dtype)}[divisor]
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        torch.div(a, b, rounding_mode=mode)
    with pytest.raises(RuntimeError, match="mpsgen::div: ZeroDivisionError"):
        OPS.div.Tensor_mode(a, b, rounding_mode=mode)
    with pytest.raises(RuntimeError, match="mpsgen::div: ZeroDivisionError"):
        OPS.div.out_mode(a, b, rounding_mode=mode, out=torch.empty(0, dtype=dtype))
    # no zero: computed; a float result (true division, or a float operand) has no error
    torch.testing.assert_close(OPS.div.Tensor_mode(a, b + 1, rounding_mode=mode), torch.div(a, b + 1, rounding_mode=mode))
    torch.testing.assert_close(OPS.div.Tensor_mode(a, b, rounding_mode=None), torch.div(a, b, rounding_mode=None))
    torch.testing.assert_close(OPS.div.Tensor_mode(a.float(), b, rounding_mode=mode),
                               torch.div(a.float(), b, rounding_mode=mode))


@pytest.mark.parametrize("mode", ["trunc", "floor"])
def test_bool_division_by_zero_raises_as_integer_division_does(mode):
    """A bool quotient is an integer one: True // False raised nothing and gave True (issue 50).
    torch's CPU has no bool div_floor or div_trunc to compare with ("not implemented for 'Bool'"),
    so the oracle is the integer rule above, and 1 // 1 = 1 by hand."""
    a, b = torch.tensor([True, False, True]), torch.tensor([True, True, False])
    with pytest.raises(NotImplementedError, match="not implemented for 'Bool'"):
        torch.div(a, b, rounding_mode=mode)
    with pytest.raises(RuntimeError, match="mpsgen::div: ZeroDivisionError"):
        OPS.div.Tensor_mode(a, b, rounding_mode=mode)
    out = torch.zeros(3, dtype=torch.bool)
    with pytest.raises(RuntimeError, match="mpsgen::div: ZeroDivisionError"):
        OPS.div.out_mode(a, b, rounding_mode=mode, out=out)
    assert not out.any()
    assert torch.equal(OPS.div.Tensor_mode(a, torch.ones(3, dtype=torch.bool), rounding_mode=mode), a)


# ---- a kernel chosen by an argument's value (issue 33) --------------------------------


@pytest.mark.parametrize("n,kernel", [(0, "digamma"), (1, "trigamma"), (2, "polygamma"), (4, "polygamma")])
@pytest.mark.parametrize("dtype", [torch.float32, torch.bfloat16, torch.uint8])
def test_polygammas_n_picks_its_kernel_as_torchs_host_does(n, kernel, dtype):
    """digamma for n == 0, trigamma for n == 1, polygamma otherwise: the kernel the CPU executor
    launched (by host_name, as exec_*_kernel selects it), with torch's values."""
    x = (torch.rand(64) * 6 + 0.1).to(dtype)
    ext.cpu_take_launches()
    actual = OPS.polygamma(n, x)
    launched = ext.cpu_take_launches()
    assert launched and all(k.startswith(f"{kernel}_") for k in launched), launched
    # ops.yaml's float tolerance; bfloat16's own
    torch.testing.assert_close(actual, torch.polygamma(n, x), **({"rtol": 3e-5, "atol": 1e-4}
                                                                if actual.dtype == torch.float32 else {}))
    # out= and in-place run the same choice
    ext.cpu_take_launches()
    OPS.polygamma.out(n, x, out=torch.empty(0, dtype=actual.dtype))
    assert all(k.startswith(f"{kernel}_") for k in ext.cpu_take_launches())


def test_a_value_no_choice_takes_is_a_value_error_naming_it():
    from mpsgen.torch_library import Spec, check_value_choice
    spec = Spec("ns::foo", "ops.yaml:3", int_to_float=False, bool_output=False, registrations={})
    with pytest.raises(ValueError, match=r"ns::foo: argument 'n' is 5, which no kernel takes \(n == 0, n >= 7\)"):
        check_value_choice(spec, "n", 5, (("==", 0.0), (">=", 7.0)))
    check_value_choice(spec, "n", 9, (("==", 0.0), (">=", 7.0)))


def test_a_complex_value_has_no_order_for_a_choice_to_take():
    """A complex value with an imaginary part equals no real bound and differs from each (issue 50);
    a choice comparing it with <, <=, > or >= cannot take it: a ValueError naming the choice.
    With no imaginary part it is the real number. (The C++ host says the same:
    tests/test_install.py builds an op with such a choice.)"""
    from mpsgen.torch_library import Spec, check_value_choice
    spec = Spec("ns::foo", "ops.yaml:3", int_to_float=False, bool_output=False, registrations={})
    check_value_choice(spec, "alpha", 1.5 - 0.5j, (("==", 1.0), ("else", 0.0)))
    check_value_choice(spec, "alpha", 1.5 - 0.5j, (("!=", 1.0),))
    check_value_choice(spec, "alpha", 2 + 0j, ((">=", 2.0),))
    with pytest.raises(ValueError, match=r"ns::foo: argument 'alpha' is \(1\.5-0\.5j\), which no kernel takes \(alpha == 1\)"):
        check_value_choice(spec, "alpha", 1.5 - 0.5j, (("==", 1.0),))
    with pytest.raises(ValueError, match=r"ns::foo: argument 'alpha' is \(1\.5-0\.5j\), a complex value, which has no "
                                         r"order: the choice 'alpha >= 2' cannot take it"):
        check_value_choice(spec, "alpha", 1.5 - 0.5j, (("==", 1.0), (">=", 2.0)))


# ---- uint16, uint32, uint64 (issue 33) ---------------------------------------------------
# torch's barebones unsigned dtypes promote with no other dtype, and its CPU kernels for them
# are few (no bitwise_not or maximum): the limits are checked against Python integers.

UNSIGNED = (torch.uint16, torch.uint32, torch.uint64)
UNSIGNED_BINARY = [pytest.param(op, e, id=e.qualified_name) for op in REGISTRY.own_ops for e in op.entries
                   if len([p for p in entry_params(e) if p.kind == "Tensor"]) == 2
                   and set(UNSIGNED) <= registered_dtypes(op)]


@pytest.mark.parametrize("op,entry", UNSIGNED_BINARY)
@pytest.mark.parametrize("dtype", UNSIGNED, ids=str)
@pytest.mark.parametrize("partner", [torch.int64, torch.int32, torch.uint8, torch.float32, torch.bool, *UNSIGNED],
                         ids=str)
def test_unsigned_dtypes_promote_as_torch_does(op, entry, dtype, partner):
    """Another dtype beside uint16/32/64 as a tensor: torch's refusal (its message); as a
    0-dim tensor of the same category: the unsigned dtype, as torch.result_type gives it."""
    a, b = torch.tensor([1, 2, 3], dtype=dtype), torch.tensor([3, 1, 2]).to(partner)
    registered, op = registered_dtypes(op), overload(entry.qualified_name)
    try:
        expected = torch.result_type(a, b)
    except RuntimeError as e:
        with pytest.raises(RuntimeError, match=re.escape(str(e))):
            op(a, b)
        with torch._subclasses.FakeTensorMode(allow_non_fake_inputs=True), \
                pytest.raises(RuntimeError, match=re.escape(str(e))):
            op(a, b)
    else:
        for mode in (contextlib.nullcontext(), torch._subclasses.FakeTensorMode(allow_non_fake_inputs=True)):
            with mode:
                if expected in registered:
                    assert op(a, b).dtype == expected
                else:
                    with pytest.raises(NotImplementedError, match="no kernel registered"):
                        op(a, b)
    zero_dim = torch.tensor(2).to(partner)
    if torch.result_type(a, zero_dim) == dtype:
        assert op(a, zero_dim).dtype == dtype


_LIMITS = {  # the ops that register the unsigned dtypes, as Python integers compute them
    "bitwise_not": lambda bits, a: (1 << bits) - 1 - a,
    "bitwise_xor": lambda bits, a, b: a ^ b,
    "maximum": lambda bits, a, b: max(a, b),
    "mul.Tensor": lambda bits, a, b: a * b % (1 << bits),
}


@pytest.mark.parametrize("name", sorted(_LIMITS))
@pytest.mark.parametrize("dtype", UNSIGNED, ids=str)
def test_unsigned_limits_match_python_integers(name, dtype):
    bits = dtype.itemsize * 8
    values = sorted({0, 1, 2, 3, (1 << (bits - 1)) - 1, 1 << (bits - 1), (1 << bits) - 2, (1 << bits) - 1})
    assert set(UNSIGNED) <= registered_dtypes(next(op for op in REGISTRY.own_ops if op.name == name.split(".")[0]))
    arity = _LIMITS[name].__code__.co_argcount - 1
    grid = [(a,) if arity == 1 else (a, b) for a in values for b in (values if arity == 2 else [0])]
    tensors = [torch.tensor([g[i] for g in grid]).to(dtype) if dtype != torch.uint64 else
               torch.tensor([g[i] - (1 << 64) if g[i] >= 1 << 63 else g[i] for g in grid]).view(torch.uint64)
               for i in range(arity)]
    actual = overload(name)(*tensors)
    assert actual.dtype == dtype
    got = [v + (1 << 64) if v < 0 else v for v in actual.view(torch.int64).tolist()] if dtype == torch.uint64 \
        else actual.to(torch.int64).tolist()
    assert got == [_LIMITS[name](bits, *g) for g in grid]


# ---- a ScalarType argument and aten's *_like options (issue 33) ----------------------------


@pytest.mark.parametrize("source", [torch.float32, torch.int64, torch.complex64, torch.uint16], ids=str)
@pytest.mark.parametrize("dtype", [None, torch.float16, torch.int8, torch.bool, torch.uint32, torch.complex32],
                         ids=str)
def test_full_likes_dtype_picks_its_kernel(source, dtype):
    """dtype= names the kernel the CPU executor launches (full_like_dense_<dtype>...), as
    exec_unary_kernel selects it by host_name; the values and dtype are torch.full_like's."""
    x = torch.ones(5, 6).to(source)
    ext.cpu_take_launches()
    actual = OPS.full_like(x, 1, dtype=dtype)
    launched = ext.cpu_take_launches()
    expected = torch.full_like(x, 1, dtype=dtype)
    metal = next(m for m, t in TORCH_DTYPES.items() if t == expected.dtype)
    assert launched == [f"full_like_dense_{metal}_{metal}_{metal}"]
    assert actual.dtype == expected.dtype and torch.equal(actual.to(torch.complex64), expected.to(torch.complex64))


@pytest.mark.parametrize("memory_format", [torch.preserve_format, torch.contiguous_format, torch.channels_last])
@pytest.mark.parametrize("layout", ["contiguous", "channels_last", "transposed"])
def test_full_likes_memory_format_lays_out_the_result_as_torchs(memory_format, layout):
    x = torch.randn(2, 3, 4, 5)
    x = {"contiguous": x, "channels_last": x.contiguous(memory_format=torch.channels_last),
         "transposed": x.transpose(1, 3)}[layout]
    expected = torch.full_like(x, 2.0, memory_format=memory_format)
    for mode in (contextlib.nullcontext(), torch._subclasses.FakeTensorMode(allow_non_fake_inputs=True)):
        with mode:
            assert OPS.full_like(x, 2.0, memory_format=memory_format).stride() == expected.stride()


@pytest.mark.parametrize("shape,memory_format", [((3, 4), torch.channels_last), ((2, 3, 4), torch.channels_last),
                                                 ((2, 3, 4, 5), torch.channels_last_3d),
                                                 ((2, 3, 4, 5, 6), torch.channels_last)])
def test_full_likes_channels_last_needs_the_rank_as_torchs(shape, memory_format):
    """torch's full_like and its out= refuse a channels-last memory format for a tensor of another
    rank (empty_like's check); ours did in the functional op, but its out= took and ignored it."""
    x = torch.randn(shape)
    with pytest.raises(RuntimeError, match="required rank") as theirs:
        torch.ops.aten.full_like.out(x, 1.0, memory_format=memory_format, out=torch.empty(0))
    says = re.escape(str(theirs.value))
    calls = [lambda: OPS.full_like(x, 1.0, memory_format=memory_format),
             lambda: OPS.full_like.out(x, 1.0, memory_format=memory_format, out=torch.empty(0))]
    for mode in (contextlib.nullcontext(), torch._subclasses.FakeTensorMode(allow_non_fake_inputs=True)):
        for call in calls:
            with mode, pytest.raises(RuntimeError, match=f"mpsgen::full_like: {says}"):
                call()


@pytest.mark.parametrize("kwargs,says", [
    ({"layout": torch.sparse_coo}, "a layout other than torch.strided is not supported"),
    ({"pin_memory": True}, "pin_memory=True is not supported; the result is on the inputs' device"),
    ({"device": "meta"}, "device meta is not the inputs' device cpu"),
    ({"dtype": torch.float64}, "no kernel registered for dtype"),
    ({"dtype": torch.float32, "device": "cpu", "layout": torch.strided, "pin_memory": False}, None),
])
def test_full_likes_options_are_refused_naming_the_op(kwargs, says):
    """What a kernel writing where it reads cannot honour raises, eagerly and in the fake kernel
    (torch.compile), naming the op; what it can is accepted."""
    x = torch.randn(3)
    for mode in (contextlib.nullcontext(), torch._subclasses.FakeTensorMode(allow_non_fake_inputs=True)):
        with mode:
            if says is None:
                assert OPS.full_like(x, 1, **kwargs).dtype == torch.float32
                continue
            with pytest.raises((RuntimeError, NotImplementedError), match=re.escape(f"mpsgen::full_like: {says}")):
                OPS.full_like(x, 1, **kwargs)


def test_a_fill_beyond_the_dtype_raises_as_torch_does():
    """The fill converts with c10's range check, as torch.full_like's fill_ does."""
    for kwargs in ({"dtype": torch.int8}, {"dtype": torch.float16}):
        value = 300 if kwargs["dtype"] == torch.int8 else 1e6
        with pytest.raises(RuntimeError, match="value cannot be converted"):
            torch.full_like(torch.zeros(2), value, **kwargs)
        with pytest.raises(RuntimeError, match="mpsgen::full_like: value cannot be converted"):
            OPS.full_like(torch.zeros(2), value, **kwargs)


RESULT_LIKE = [pytest.param(op, e, id=e.qualified_name) for op in REGISTRY.own_ops if op.result_like
               for e in op.entries]


@pytest.mark.parametrize("owner,entry", RESULT_LIKE)
def test_a_result_with_an_inputs_dtype_refuses_an_integer_one_in_every_variant(owner, entry):
    """`result_dtype: <input>` (mish_backward: aten allocates the result like self): the functional
    variant refuses an int64 self, whose dtype a float result cannot be cast into; out= and the
    in-place variant refused nothing and wrote the float result (issue 50). Eager and under
    FakeTensorMode; the out= tensor and self unchanged."""
    names = entry.schema_names
    op = lambda variant: op_overload(REGISTRY.namespace, names[variant])  # noqa: E731
    like = owner.result_like_index
    args = [torch.randn(5) for _ in owner.tensor_args]
    args[like] = torch.arange(5)
    message = r"result type (Float|torch\.float32) can't be cast to the desired output type (Long|torch\.int64)"
    out = torch.full((5,), 7.0)
    calls = [lambda a, o: op("functional")(*a), lambda a, o: op("out")(*a, out=o)]
    if "inplace" in names:
        calls.append(lambda a, o: op("inplace")(*a))
    for call in calls:
        with pytest.raises(RuntimeError, match=message):
            call([a.clone() for a in args], out)
        with torch._subclasses.FakeTensorMode() as mode, pytest.raises(RuntimeError, match=message):
            call([mode.from_tensor(a) for a in args], mode.from_tensor(out))
    assert torch.equal(out, torch.full((5,), 7.0))
    # a float input of that dtype still computes, into a float out=
    args[like] = torch.randn(5)
    torch.testing.assert_close(op("out")(*args, out=torch.empty(5)), op("functional")(*args))
