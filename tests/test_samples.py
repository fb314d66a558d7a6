"""The sample and oracle machinery behind op-output-match and the main job.

- OpInfo samples that do not bind to the schema are reported, with the reason;
- the widened oracle for dtypes torch's CPU lacks, and what is not widened;
- which registered dtype a kernel's host_name belongs to (the launch-log check);
- test_output_match shows mismatches before the sample floor, and fails when no
  sample ran the dtype's own kernel;
- the main job reports a row whose reference raises, and goes on.
"""
from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
import torch
import yaml

import mpsgen._C as ext
import mpsgen.ops  # noqa: F401  (loads the ops: torch.ops.mpsgen.*, the fake kernels)
from mpsgen.codegen.registry.loader import load
from mpsgen import harness
from mpsgen import samples as S
from mpsgen.samples import (MATCH, MISMATCH, NO_REFERENCE, Comparison, Sample, SchemaParam, compare, kernel_input_type,
                            opinfo_samples)

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = load(ROOT / "ops.yaml")


# ---- dropped OpInfo samples ----------------------------------------------------------------

def test_opinfo_samples_report_what_they_drop():
    params = [SchemaParam("self", "Tensor", False, False), SchemaParam("other", "Tensor", False, False)]
    dropped = []
    found = opinfo_samples("div[floor_rounding]", params, "cpu", torch.float32, dropped=dropped)
    # every div sample passes rounding_mode, which this two-Tensor schema has no place for
    assert not found and dropped
    assert all(reason.startswith("does not fit the schema: (") and "rounding_mode=str" in reason
               and reason.endswith("keyword argument(s) ['rounding_mode'] not in the schema")
               for _, reason in dropped)
    missing = []
    assert opinfo_samples("no_such_op", params, "cpu", torch.float32, dropped=missing) == []
    assert missing == [("opinfo", "no OpInfo 'no_such_op' in op_db")]
    # without `dropped`, the list is what it always was
    assert [s.name for s in opinfo_samples("hypot", params, "cpu", torch.float32)] == \
        [s.name for s in opinfo_samples("hypot", params, "cpu", torch.float32, dropped=[])]


# ---- the widened oracle ----------------------------------------------------------------------

def _make(dtype, *shape):
    return torch.testing.make_tensor(shape or (4, 5), dtype=dtype, device="cpu", low=-3, high=3)


def _via(dtype_map, fn):
    """An 'op' that computes fn in wider dtypes and casts back: what a correct kernel returns."""
    def op(*args):
        out_dtype = fn(*[torch.empty_like(a, device="meta") for a in args]).dtype
        return fn(*[a.to(dtype_map.get(a.dtype, a.dtype)) for a in args]).to(out_dtype)
    return op


# torch's own argument binding (createStackForSchema) refusing the arguments, as opposed to
# the op refusing their values once bound
_BINDING_ERROR = re.compile(r"Expected a value of type|expected at most \d+ argument|Argument \w+ not provided|"
                            r"Unknown keyword argument|missing value for argument|got multiple values")


def drops_aten_would_bind(qualified_name: str, opinfo: str, params, dtype: torch.dtype) -> list[str]:
    """The OpInfo samples our binding drops although torch's own aten overload of the same
    name binds them (called as the OpInfo sample is, input first): those are samples the
    schema ought to accept. A bound call that fails on its values still counts as bound."""
    from mpsgen.codegen.registry.aten_schemas import aten_ops

    if qualified_name not in aten_ops():
        return []
    aten, info, wrong = S.op_overload("aten", qualified_name), S._opinfo(opinfo), []
    for kind, gen in (("opinfo", info.sample_inputs), ("reference", info.reference_inputs)):
        for i, sample in enumerate(gen("cpu", dtype)):
            reason = S.bind(sample, params, "cpu")
            if not isinstance(reason, str):
                continue
            try:
                aten(sample.input, *sample.args, **sample.kwargs)
            except Exception as e:
                if _BINDING_ERROR.search(str(e)):
                    continue  # aten's schema does not take it either
            wrong.append(f"{kind}[{i}]: {reason}")
    return wrong


@pytest.mark.parametrize("entry", [e for op in REGISTRY.ops for e in op.entries if e.opinfo],
                         ids=lambda e: e.qualified_name)
def test_no_entry_drops_a_sample_its_schema_ought_to_accept(entry):
    """Dropped samples are those torch's own overload of that name refuses too (mul.Scalar
    drops OpInfo mul's Tensor-Tensor samples, which aten::mul.Scalar cannot take either)."""
    op = next(o for o in REGISTRY.ops if entry in o.entries)
    dtype = S.TORCH_DTYPES[op.registrations[0].input]
    assert drops_aten_would_bind(entry.qualified_name, entry.opinfo, S.entry_params(entry), dtype) == []


def test_a_schema_narrower_than_atens_is_caught():
    """The check above fails where it should: hypot with `other` taken for a Scalar drops
    OpInfo's Tensor samples, which aten::hypot binds."""
    narrow = [SchemaParam("self", "Tensor", False, False), SchemaParam("other", "Scalar", False, False)]
    wrong = drops_aten_would_bind("hypot", "hypot", narrow, torch.float32)
    assert wrong and all("argument 'other' (Scalar) got Tensor" in w for w in wrong)


def test_complex32_reference_is_widened_to_complex64():
    x, y = _make(torch.complex32), _make(torch.complex32)
    with pytest.raises(NotImplementedError, match="ComplexHalf"):
        torch.div(x, y)  # torch's CPU has no such kernel: what the widened oracle stands in for
    c = compare(_via({torch.complex32: torch.complex64}, torch.div), torch.div, Sample("s", (x, y)))
    assert c == Comparison(MATCH, c.error, "", "complex32->complex64", c.of_tolerance) and c.widened
    assert c.of_tolerance <= 1
    # a wrong result is still a mismatch, and says the oracle was widened
    wrong = compare(lambda a, b: torch.zeros_like(a), torch.div, Sample("s", (x, y)))
    assert wrong.status == MISMATCH and wrong.oracle == "complex32->complex64"
    assert "widened" in wrong.message


def test_widened_oracle_passes_the_narrow_dtypes_limits_where_the_result_depends_on_them():
    """nan_to_num of complex32 means half's 65504 for +inf (its parts' dtype), not float32's max,
    which the widened complex64 reference would give and which casts back to inf (issue 33)."""
    z = torch.tensor([complex(float("inf"), float("-inf")), complex(float("nan"), 1.0)], dtype=torch.complex32)
    missing = NotImplementedError("\"nan_to_num\" not implemented for 'ComplexHalf'")
    half = torch.finfo(torch.float16)
    expected = torch.tensor([complex(half.max, half.min), complex(0.0, 1.0)], dtype=torch.complex32)
    plain, _ = S.widened_reference(torch.nan_to_num, Sample("s", (z,)), missing)
    assert torch.isinf(torch.view_as_real(plain.to(torch.complex64))[0]).all()  # the wrong oracle
    fixed, oracle = S.widened_reference(torch.nan_to_num, Sample("s", (z,)), missing,
                                        (("posinf", "max"), ("neginf", "lowest")))
    assert oracle == "complex32->complex64"
    torch.testing.assert_close(fixed, expected, rtol=0, atol=0, equal_nan=True)
    # a value given is kept: only None means the dtype's limit
    given, _ = S.widened_reference(torch.nan_to_num, Sample("s", (z,), {"posinf": 7.0}), missing,
                                   (("posinf", "max"), ("neginf", "lowest")))
    assert torch.view_as_real(given.to(torch.complex64))[0, 0] == 7.0


def test_widened_oracle_rounds_operands_to_the_common_dtype_first():
    """complex32 times a complex64 (or float32) 0-dim tensor computes in complex32: TensorIterator
    casts the 0-dim operand to it first, so the widened oracle rounds it before widening. A real
    input of a complex result (polar) is not cast to complex."""
    x = torch.tensor([3 + 1j, -2.5 + 0.5j], dtype=torch.complex32)
    missing = NotImplementedError("\"mul_cpu\" not implemented for 'ComplexHalf'")
    for third in (torch.tensor(1 / 3 + 1j / 7, dtype=torch.complex64), torch.tensor(1 / 3)):
        expected = (x.to(torch.complex64) * third.to(torch.complex32).to(torch.complex64)).to(torch.complex32)
        got, oracle = S.widened_reference(torch.mul, Sample("s", (x, third)), missing)
        assert oracle == "complex32->complex64"
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
    a, angle = torch.tensor([1.0, 2.0], dtype=torch.float16), torch.tensor([0.1, 0.7], dtype=torch.float16)
    polar, _ = S.widened_reference(torch.polar, Sample("s", (a, angle)),
                                   NotImplementedError("\"polar_cpu\" not implemented for 'Half'"))
    torch.testing.assert_close(polar, torch.polar(a.float(), angle.float()).to(torch.complex32), rtol=0, atol=0)


def test_widened_result_is_cast_to_the_dtype_torch_would_produce():
    x = _make(torch.complex32)
    # exp keeps complex32; the result of the widened reference is cast back to it
    expected, oracle = S.widened_reference(torch.exp, Sample("s", (x,)), NotImplementedError(
        "\"exp_vml_cpu\" not implemented for 'ComplexHalf'"))
    assert expected.dtype == torch.complex32 and oracle == "complex32->complex64"
    torch.testing.assert_close(expected, torch.exp(x.to(torch.complex64)).to(torch.complex32))
    # without a meta kernel: complex64 -> complex32, and a complex->real result float32 -> float16
    assert S._narrowed_back(torch.complex64, {torch.complex32: torch.complex64}) == torch.complex32
    assert S._narrowed_back(torch.float32, {torch.complex32: torch.complex64}) == torch.float16


def test_half_special_function_widened_to_float32():
    x = _make(torch.float16)
    ref = _refusing(torch.special.i1e, torch.float16, "Half")
    c = compare(lambda t: torch.special.i1e(t.float()).half(), ref, Sample("s", (x,)))
    assert c.status == MATCH and c.oracle == "float16->float32"


def test_bool_and_integer_references_widened():
    a, b = _make(torch.bool), _make(torch.bool)
    with pytest.raises(NotImplementedError, match="'Bool'"):
        torch.gcd(a, b)
    c = compare(lambda x, y: torch.gcd(x.long(), y.long()).bool(), torch.gcd, Sample("s", (a, b)))
    assert c.status == MATCH and c.oracle == "bool->int64"
    # an integer op torch lacks for int8 here: int64 first
    i = _make(torch.int8)
    c = compare(lambda t: t.long().bitwise_not().to(torch.int8), _refusing(torch.bitwise_not, torch.int8, "Char"),
                Sample("s", (i,)))
    assert c.status == MATCH and c.oracle == "int8->int64"


def _refusing(fn, dtype, c10_name):
    """fn as a CPU kernel that lacks `dtype` would behave."""
    def ref(*args, **kwargs):
        if any(isinstance(a, torch.Tensor) and a.dtype == dtype and a.device.type != "meta" for a in args):
            raise NotImplementedError(f"\"{fn.__name__}_cpu\" not implemented for '{c10_name}'")
        return fn(*args, **kwargs)
    return ref


@pytest.mark.parametrize("make,ref", [
    (lambda: (_make(torch.bool),), torch.neg),  # torch's semantics: bool negation is an error
    (lambda: (_make(torch.bool), _make(torch.bool)), torch.sub),
    (lambda: (_make(torch.float32), _make(torch.float32)), torch.bitwise_and),  # no wider float to go to
    (lambda: (_make(torch.complex32), _make(torch.complex32)), torch.lt),  # complex lt: no kernel at any width
])
def test_refusals_that_are_not_missing_narrow_kernels_are_not_widened(make, ref):
    c = compare(lambda *a: torch.zeros(()), ref, Sample("s", make()))
    assert c.status == NO_REFERENCE and not c.widened, c


def test_compare_never_raises_when_the_reference_raises():
    def broken(*a, **k):
        raise ValueError("boom")
    assert compare(torch.exp, broken, Sample("s", (_make(torch.float32),))) == Comparison(NO_REFERENCE, 0.0, "boom")


# ---- the kernel a call ran ------------------------------------------------------------------------

@pytest.mark.parametrize("host_name,op,expected", [
    ("exp_dense_float_long", "exp", "long"),
    ("exp_dense_scalar_float_long", "exp", "long"),
    ("exp_dense_castout_long", "exp", "long"),
    ("exp_dense_castout_ilp_half", "exp", "half"),
    ("add_dense_cast_float_float_float", "add", "float"),
    ("add_dense_broadcast_rhs_long_long_long", "add", "long"),
    ("lt_strided_castout_bool_float", "lt", "float"),
    ("lt_dense_cast_bool_half2", "lt", "half2"),
    ("lerp_dense_cast_float", "lerp", "float"),  # ternary cast: keyed on the input (compute) dtype
    ("hardshrink_strided_half_half_half", "hardshrink", "half"),
    ("bitwise_not_dense_uchar_uchar", "bitwise_not", "uchar"),
    ("addcmul_dense_float_float", "add", None),  # another op's kernel
])
def test_kernel_input_type(host_name, op, expected):
    assert kernel_input_type(host_name, op) == expected


def test_every_built_kernel_belongs_to_a_registered_input_dtype():
    names = ext.cpu_kernel_names()
    for op in REGISTRY.ops:
        mine = [n for n in names if n.startswith(op.name + "_") and kernel_input_type(n, op.name)]
        kinds = {kernel_input_type(n, op.name) for n in mine}
        assert kinds == {r.input for r in op.registrations}, op.name


# ---- test_output_match: the order of its checks, and the own-kernel check ------------------------

def _entry(qualified):
    for op in REGISTRY.ops:
        for e in op.entries:
            if e.qualified_name == qualified:
                return op, e
    raise KeyError(qualified)


def _run_output_match(monkeypatch, qualified, metal_dtype, make_samples, reference=None):
    from mpsgen import aten_overrides
    op, entry = _entry(qualified)
    monkeypatch.setattr(aten_overrides, "samples", lambda *a, **k: make_samples())  # what harness.output_match's row() calls
    monkeypatch.setattr(harness, "reference", S.reference if reference is None else lambda path: reference)
    harness.output_match(REGISTRY, op, entry, metal_dtype, (), record_property=lambda *a: None)


def test_mismatches_are_reported_before_the_sample_floor(monkeypatch):
    make = lambda: [Sample(f"s{i}", (torch.rand(5),)) for i in range(3)]  # noqa: E731
    with pytest.raises(AssertionError) as info:
        _run_output_match(monkeypatch, "exp", "float", make, reference=lambda x: torch.exp(x) + 1)
    assert "3 of 3 samples differ" in str(info.value) and "only" not in str(info.value).splitlines()[0]
    # with no mismatch, the floor still fires
    with pytest.raises(AssertionError, match="only 3 samples had a torch reference result"):
        _run_output_match(monkeypatch, "exp", "float", make)


def test_a_dtype_whose_own_kernel_never_ran_fails(monkeypatch):
    # issue 16: every int64 sample promoted by a float32 operand runs the float kernel
    make = lambda: [Sample(f"s{i}", (torch.arange(12), torch.rand(12))) for i in range(12)]  # noqa: E731
    with pytest.raises(AssertionError, match="no compared sample launched a mul kernel instantiated for long"):
        _run_output_match(monkeypatch, "mul.Tensor", "long", make)
    # one sample in int64 is enough
    _run_output_match(monkeypatch, "mul.Tensor", "long",
                      lambda: make() + [Sample("own", (torch.arange(12), torch.arange(12)))])


# ---- the main job ---------------------------------------------------------------------------------

def test_report_shows_a_row_whose_reference_raises_and_goes_on(tmp_path, capsys):
    from mpsgen import report
    spec = yaml.safe_load((ROOT / "ops.yaml").read_text())
    exp = next(o for o in spec["ops"] if o["func"].startswith("exp("))
    neg = next(o for o in spec["ops"] if o["func"].startswith("neg("))
    broken = {**exp, "reference": "torch.no_such_function"}  # resolving it raises
    raising = {**neg, "reference": "torch.linalg.cholesky", "opinfo": None}  # raises on every sample
    path = tmp_path / "ops.yaml"
    path.write_text(yaml.safe_dump({"namespace": spec["namespace"], "ops": [broken, raising]}, sort_keys=False))
    assert report.main(["--ops", str(path), "--quick"]) == 1
    out = capsys.readouterr().out
    assert re.search(r"^exp +- +- +error: AttributeError", out, re.M)
    # every row of neg, after exp's error
    assert re.search(r"^neg +float32 +cpu", out, re.M) and re.search(r"^neg +complex32 +cpu", out, re.M)
    # cholesky refuses every sample: nothing checks neg's kernels, and the report says why
    assert "Samples with no torch result" in out and "neg float32: torch refuses every float32 input" in out


def test_output_match_passes_a_dtype_only_a_widened_oracle_can_judge(monkeypatch):
    # neg's complex32 kernels, against a torch.neg whose CPU kernel lacks complex32, as
    # torch's does for exp, div or sqrt: every sample is compared with the widened oracle
    op, entry = _entry("neg")
    recorded = {}
    monkeypatch.setattr(harness, "reference", lambda path: _refusing(torch.neg, torch.complex32, "ComplexHalf"))
    harness.output_match(REGISTRY, op, entry, "half2", (), record_property=lambda k, v: recorded.setdefault(k, v))
    widened = recorded["widened_oracle"]
    assert len(widened) >= 10 and all(w.endswith("(complex32->complex64)") for w in widened)


def test_the_reference_is_atens_kernel_with_onednn_off():
    """On CPUs with AVX-512 torch hands float gelu to oneDNN, whose gelu(inf) is nan and
    gelu(3.4e38) inf; the oracle is ATen's own kernel on every machine: gelu(x) = x Phi(x), so
    inf at inf and x itself at 3.4e38 (Phi = 1 there), as float64 computes it too."""
    gelu = S.reference("torch.nn.functional.gelu")
    x = torch.tensor([float("inf"), 3.4e38, -float("inf"), 1.0])
    expected = torch.nn.functional.gelu(x.double()).float()
    assert torch.equal(expected[:2], x[:2])  # the hand-computed values
    torch.testing.assert_close(gelu(x), expected, equal_nan=True)
    assert torch.backends.mkldnn.enabled  # and oneDNN is back on for everything else


# ---- the error as a fraction of its tolerance (the report's error/tol column) -------------------

@pytest.mark.parametrize("actual,expected,tol,status,fraction", [
    # rtol 0.5 of |expected| 2 allows 1: an error of 0.5 is half of it
    ([2.5, -4.0], [2.0, -4.0], {"rtol": 0.5, "atol": 0.0}, MATCH, 0.5),
    ([3.5, -4.0], [2.0, -4.0], {"rtol": 0.5, "atol": 0.0}, MISMATCH, 1.5),
    # atol 0.25 and rtol 0.125 of 4: 0.75 allowed for the second element, whose error is 0.375
    ([2.0, -4.375], [2.0, -4.0], {"rtol": 0.125, "atol": 0.25}, MATCH, 0.5),
    # a huge value with a huge error, well inside its relative tolerance (polygamma's bfloat16 rows)
    ([1.0e20 + 1.0e17], [1.0e20], {"rtol": 0.01, "atol": 0.0}, MATCH, 0.1),
    # two nans, equal infinities: no error
    ([float("nan"), float("inf")], [float("nan"), float("inf")], {"rtol": 0.0, "atol": 0.0}, MATCH, 0.0),
])
def test_the_error_is_reported_as_a_fraction_of_its_tolerance(actual, expected, tol, status, fraction):
    sample = Sample("s", (torch.tensor(expected, dtype=torch.float64),))
    c = compare(lambda x: torch.tensor(actual, dtype=torch.float64), lambda x: x.clone(), sample, tol=tol)
    assert c.status == status and c.of_tolerance == pytest.approx(fraction, rel=1e-9)


def test_an_integer_error_is_infinitely_many_tolerances():
    sample = Sample("s", (torch.tensor([1, 3]),))
    c = compare(lambda x: torch.tensor([1, 2]), lambda x: x.clone(), sample)
    assert c.status == MISMATCH and c.error == 1.0 and c.of_tolerance == float("inf")
    assert compare(lambda x: x.clone(), lambda x: x.clone(), sample).of_tolerance == 0.0


def _report(capsys, *argv) -> tuple[int, str]:
    from mpsgen import report

    code = report.main([*argv, "--quick"])
    return code, capsys.readouterr().out


def test_the_report_reads_right(capsys):
    """The main job's text (issue 50): error/tol within 1 where every sample matched (polygamma
    bfloat16 printed 4.61e+18), long names in their own column, xfailed samples counted per row,
    torch's warnings listed once after the table."""
    # leaky_relu_backward: a name longer than the column (special_laguerre_polynomial_l, an aten entry,
    # ran every aten entry's rows in a subprocess first: 15 s)
    code, out = _report(capsys, "polygamma", "div.Tensor_mode", "leaky_relu_backward",
                        "--dtypes", "bfloat16", "float16", "float32")
    assert code == 0
    assert not re.search(r"^\S+ +(?!bfloat16|float16|float32)\w+ +cpu ", out, re.M)  # the dtypes asked for only
    rows = {tuple(line.split()[:3]): line.split() for line in out.splitlines()
            if re.match(r"^\S+ +\w+ +cpu +\d+/\d+ ", line)}
    header = out.splitlines()[0].split()
    assert header[:9] == ["op", "dtype", "device", "matched", "xfailed", "error/tol", "widened", "no-ref", "opinfo"]
    polygamma = rows[("polygamma", "bfloat16", "cpu")]
    matched, compared = map(int, polygamma[3].split("/"))
    assert matched == compared and 0 < float(polygamma[5]) <= 1
    assert ("leaky_relu_backward", "float32", "cpu") in rows  # not run into the dtype column
    div = next(line for line in out.splitlines() if re.match(r"^div\.Tensor_mode +float16 +cpu ", line))
    assert int(div.split()[4]) == div.count("(xfail)") + (int(m[1]) if (m := re.search(r"\(\+(\d+)\)", div)) else 0) > 0
    table = out[:out.index("\nop ")]
    assert "Warning" not in table
    warned = out[out.index("Warnings raised while the rows ran"):] if "Warnings raised" in out else ""
    assert all(re.match(r"  \S+:\d+: \w+: ", line) for line in warned.splitlines()[1:] if line.startswith("  "))
    assert "TF32 acceleration on top of oneDNN" not in out  # the harness's own, filtered (mpsgen/samples.py)


def test_a_dtype_torch_refuses_everywhere_says_so(capsys, monkeypatch):
    """bool sub, relu, negative: torch refuses every bool input, so the kernel the entry registers
    for bool is never checked; the report says that, not that no sample ran its kernel."""
    from mpsgen import report

    real = report.compare

    def refusing(op_fn, ref_fn, sample, *a, **k):
        if any(isinstance(x, torch.Tensor) and x.dtype == torch.bool for x in sample.args):
            return Comparison(NO_REFERENCE, 0.0, "Subtraction, the `-` operator, with a bool tensor is not supported.")
        return real(op_fn, ref_fn, sample, *a, **k)

    monkeypatch.setattr(report, "compare", refusing)
    code, out = _report(capsys, "sign")  # one that registers bool, and cheap to run (polygamma took 10 s)
    assert code == 1
    assert re.search(r"^sign +bool +cpu +0/0 .*torch refuses every bool input", out, re.M)
    assert ("sign bool: torch refuses every bool input (\"Subtraction, the `-` operator, with a bool tensor is "
            "not supported.\"), so no sample could check the kernel this entry registers for it") in out


@pytest.mark.parametrize("actual,expected", [
    (torch.tensor([1.0, -0.0, float("inf")]), torch.tensor([1.0, 0.0, float("inf")])),  # equal: the short way
    (torch.tensor([1, 2, 3]), torch.tensor([1, 2, 3])),
    (torch.tensor([1.0, float("nan")]), torch.tensor([1.0, float("nan")])),  # NaN: the long way
    (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0 + 1e-6])),  # within tolerance
    (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.5])),  # not
    (torch.tensor([1.0, 2.0]), torch.tensor([1.0, 2.0], dtype=torch.float64)),  # another dtype
    (torch.tensor([[1.0, 2.0]]), torch.tensor([1.0, 2.0])),  # another shape
    (torch.tensor([1 + 2j, 3j]).conj(), torch.tensor([1 - 2j, -3j])),  # a conjugate view
    (torch.tensor([1 + 2j, 3j], dtype=torch.complex32), torch.tensor([1 + 2j, 3j], dtype=torch.complex32)),
])
def test_a_bitwise_equal_result_compares_as_assert_close_and_errors_judge_it(actual, expected):
    """compare()'s short way for a result equal to torch's in every bit gives what torch's
    assert_close and the error measures give it the long way."""
    c = compare(lambda: actual, lambda: expected, Sample("s", ()))
    try:
        torch.testing.assert_close(actual, expected, equal_nan=True)
        status = MATCH
    except AssertionError:
        status = MISMATCH
    assert (c.status, c.error, c.of_tolerance) == (status, *S._errors(actual, expected, None))
    # unmeasured (op-output-match's way): the same status; a sample that differs is still measured
    unmeasured = compare(lambda: actual, lambda: expected, Sample("s", ()), measure=False)
    assert unmeasured.status == status
    if status == MISMATCH or S._bitwise_equal(actual, expected):
        assert unmeasured == c
    else:
        assert math.isnan(unmeasured.error) and math.isnan(unmeasured.of_tolerance)


def test_opinfos_generators_find_the_unittest_test_as_torch_does():
    """samples._unittest_test_fn, which OpInfo's generators call in place of torch's
    extract_test_fn while samples are made, answers as torch's: None under pytest, the test
    method inside a unittest.TestCase."""
    import io
    import unittest

    from torch.testing._internal.common_utils import extract_test_fn

    assert S._unittest_test_fn() is None and extract_test_fn() is None
    found = {}

    class Case(unittest.TestCase):
        def test_it(self):
            found["ours"], found["torch's"] = S._unittest_test_fn(), extract_test_fn()

    unittest.TextTestRunner(stream=io.StringIO()).run(Case("test_it"))
    assert found["ours"] is found["torch's"] is Case.test_it
    with S._test_fn_found_without_source():
        from torch.testing._internal import common_utils
        assert common_utils.extract_test_fn is S._unittest_test_fn
    assert common_utils.extract_test_fn is extract_test_fn


def test_samples_kept_for_the_run_are_those_made_again(tmp_path, monkeypatch):
    """mpsgen/sample_cache.py: sample_inputs saved by the first call and loaded by the next are
    the samples made without the cache, in values, dtypes, shapes, strides and offsets; the
    reference_inputs (OpInfo's large tensors) are made each time and never saved."""
    def layout(samples):
        return [(s.name, [(a.dtype, a.shape, a.stride(), a.storage_offset()) if isinstance(a, torch.Tensor) else a
                          for a in (*s.args, *s.kwargs.values())]) for s in samples]

    params = S.entry_params(next(op for op in REGISTRY.ops if op.name == "add").entries[0])
    monkeypatch.delenv("MPSGEN_SAMPLE_CACHE", raising=False)
    fresh = S.opinfo_samples("add", params, "cpu", torch.float16)
    monkeypatch.setenv("MPSGEN_SAMPLE_CACHE", str(tmp_path))
    first, loaded = (S.opinfo_samples("add", params, "cpu", torch.float16) for _ in range(2))
    assert len(list(tmp_path.glob("*.pt"))) == 1  # sample_inputs' list; reference_inputs' not kept
    assert any(s.name.startswith("reference[") for s in fresh)
    for made in (first, loaded):
        assert layout(made) == layout(fresh)
        for a, b in zip(made, fresh):
            for x, y in zip(a.args, b.args):
                if isinstance(x, torch.Tensor):
                    torch.testing.assert_close(x, y, rtol=0, atol=0, equal_nan=True)
