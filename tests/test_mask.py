"""Masked ternaries (issue 9): `mask:` names a ternary op's first Tensor as a bool mask,
left out of type promotion and of the kernel's dtype, as torch's where does.

The shipped `where.self` is the example. Its op-output-match (OpInfo's where samples, the
edge samples with bool masks), fake kernel, opcheck, gradients, compile and export are in
the suites that cover every entry; here, the loader's errors at their ops.yaml line, torch's
error for a mask of another dtype, the kernels that run, the absent in-place variant, and
how samples reach the mask.
"""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mpsgen.codegen.registry import loader  # noqa: E402
from test_registry_errors import errors_of, lineno, one_op, single  # noqa: E402
from test_runtime_robustness import assert_refused_like_torch  # noqa: E402

import mpsgen.ops  # loads mpsgen's own ops (the extension and generated/library.py)
from mpsgen.samples import edge_samples, entry_params, opinfo_samples  # noqa: E402

OPS = torch.ops.mpsgen
REGISTRY = loader.load(ROOT / "ops.yaml")
WHERE = next(op for op in REGISTRY.ops if op.qualified_name == "where.self")
FUNCTOR = ("    functor: |\n"
           "      template <typename T>\n"
           "      inline T operator()(const T c, const T a, const T b) { return c != T(0) ? a : b; }\n")


def masked(mask: str, func: str = "sel(Tensor cond, Tensor self, Tensor other) -> Tensor", extra: str = "") -> str:
    return one_op(func, mask, "torch.where", extra + FUNCTOR)


def test_a_mask_op_loads_without_an_inplace_variant(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(masked("    mask: cond\n"))
    op = loader.load(path).ops[0]
    assert op.mask == "cond" and op.mask_index == 0
    assert op.variants == ("functional", "out") and list(op.schema_names) == ["functional", "out"]


@pytest.mark.parametrize("mask,func,extra,line_of,key,expected", [
    ("    mask: nope\n", None, "", "mask:", "mask", "'nope' is not a Tensor argument of the schema"),
    ("    mask: [cond]\n", None, "", "mask:", "mask", "is not a Tensor argument of the schema"),
    ("    mask: self\n", None, "", "mask:", "mask", "'self' is not the first Tensor (cond)"),
    ("    mask: cond\n", "sel(Tensor cond, Tensor self) -> Tensor", "", "mask:", "mask", "the op is binary"),
    ("    mask: cond\n", "sel(Tensor cond, Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor", "", "mask:",
     "mask", "the op has other arguments"),
    ("    mask: cond\n", None, "    derivatives:\n      cond: grad\n", "derivatives:", "derivatives",
     "'cond' is the bool mask (mask: cond), which is not differentiable"),
])
def test_mask_errors_name_the_line_and_key(tmp_path, mask, func, extra, line_of, key, expected):
    text = masked(mask, func or "sel(Tensor cond, Tensor self, Tensor other) -> Tensor", extra)
    message = single(errors_of(tmp_path, text), lineno(text, line_of), key, "sel")
    assert expected in message, message
    if key == "mask":
        assert "expected the name of the first of three Tensor arguments" in message


def test_where_has_torchs_variants_and_no_inplace():
    """aten has where.self and where.self_out, and no where_."""
    assert WHERE.schema_names == {"functional": "where.self", "out": "where.self_out"}
    assert not hasattr(OPS, "where_")
    c, a, b = torch.rand(4, 5) < 0.5, torch.randn(4, 5), torch.randn(5)
    out = torch.empty(0)
    assert OPS.where.self_out(c, a, b, out=out) is out
    torch.testing.assert_close(out, torch.where(c, a, b))


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.float16])
def test_a_mask_of_another_dtype_is_refused_with_torchs_message(dtype):
    c, a = torch.ones(3, dtype=dtype), torch.randn(3)
    assert_refused_like_torch(lambda: OPS.where.self(c, a, a), lambda: torch.where(c, a, a), "where")
    with torch._subclasses.FakeTensorMode():  # the fake kernel says the same (Python's dtype names)
        with pytest.raises(RuntimeError, match="mpsgen::where: where expected condition to be a boolean tensor"):
            OPS.where.self(torch.ones(3, dtype=dtype), torch.randn(3), torch.randn(3))


SCALAR_OVERLOADS = {"where.ScalarSelf": (True, False), "where.ScalarOther": (False, True), "where.Scalar": (True, True)}


@pytest.mark.parametrize("name", SCALAR_OVERLOADS)
@pytest.mark.parametrize("value", [2, -1.5, True, 1 - 2j])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16, torch.int8, torch.bool, torch.complex64])
def test_where_scalar_overloads_promote_as_torchs(name, value, dtype):
    """aten's where.ScalarSelf / ScalarOther / Scalar: a Scalar promotes as a wrapped number
    (where(mask, 1.5, int8_tensor) is float32, where(mask, 2, half_tensor) half), eager and traced."""
    scalar_self, scalar_other = SCALAR_OVERLOADS[name]
    c = torch.rand(4, 5) < 0.5
    t = torch.testing.make_tensor(4, 5, dtype=dtype, device="cpu")
    self_, other = (value if scalar_self else t), (-value if scalar_other else t.flip(0))
    expected = torch.where(c, self_, other)
    fn = getattr(OPS.where, name.split(".")[1])
    torch.testing.assert_close(fn(c, self_, other), expected)
    with torch._subclasses.FakeTensorMode() as mode:
        traced = fn(mode.from_tensor(c), *(mode.from_tensor(x) if isinstance(x, torch.Tensor) else x
                                           for x in (self_, other)))
    assert (traced.shape, traced.dtype) == (expected.shape, expected.dtype)


@pytest.mark.parametrize("name", SCALAR_OVERLOADS)
@pytest.mark.parametrize("value,dtype", [
    (1e308, torch.float32), (-1e39, torch.float32), (1e5, torch.float16), (1e39, torch.bfloat16),
    (2**63, torch.int64), (-2**63 - 1, torch.int64), (300, torch.int8), (2**31, torch.int32), (-1, torch.uint8),
    (300, torch.uint8), (-256, torch.uint8),
    (1e308 + 1j, torch.complex64), (float("inf"), torch.float16), (3.0e38, torch.float32), (127, torch.int8),
])
def test_where_scalars_convert_with_torchs_range_check(name, value, dtype):
    """torch's where makes its Scalars tensors of the result dtype (at::scalar_tensor): one beyond
    that dtype's range raises ("value cannot be converted to type float without overflow"), where a
    wrapped number of other ops would become inf or wrap; eager and traced alike."""
    scalar_self, scalar_other = SCALAR_OVERLOADS[name]
    c = torch.tensor([True, False, True])
    t = torch.zeros(3, dtype=dtype)
    self_, other = (value if scalar_self else t), (value if scalar_other else t)
    if not isinstance(self_, torch.Tensor) and not isinstance(other, torch.Tensor):
        other = t  # where.Scalar of two numbers computes in the default dtype: the value meets dtype here
        name = "where.ScalarSelf"
    fn = getattr(OPS.where, name.split(".")[1])
    try:
        expected = torch.where(c, self_, other)
    except OverflowError:  # beyond every Scalar (-2**63 - 1): the argument parser refuses it, for both
        with pytest.raises(OverflowError):
            fn(c, self_, other)
        return
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as ours:
            fn(c, self_, other)
        assert str(ours.value).splitlines()[0] == "mpsgen::where: " + str(e).splitlines()[0]
        with torch._subclasses.FakeTensorMode() as mode, pytest.raises(RuntimeError, match="without overflow"):
            fn(mode.from_tensor(c), *(mode.from_tensor(x) if isinstance(x, torch.Tensor) else x for x in (self_, other)))
        return
    torch.testing.assert_close(fn(c, self_, other), expected, equal_nan=True)
    with torch._subclasses.FakeTensorMode() as mode:
        fn(mode.from_tensor(c), *(mode.from_tensor(x) if isinstance(x, torch.Tensor) else x for x in (self_, other)))


@pytest.mark.parametrize("out_dtype", [torch.float64, torch.float16, torch.int64, torch.complex64])
def test_where_out_takes_only_the_result_dtype_as_torchs(out_dtype):
    """torch's where casts no result into out= (unlike structured ops): another dtype raises,
    with torch's message, eagerly and traced."""
    c, a, b = torch.rand(4) < 0.5, torch.randn(4), torch.randn(4)
    with pytest.raises(RuntimeError, match="Expected out type to be Float but got") as torchs:
        torch.where(c, a, b, out=torch.empty(4, dtype=out_dtype))
    with pytest.raises(RuntimeError) as ours:
        OPS.where.self_out(c, a, b, out=torch.empty(4, dtype=out_dtype))
    assert str(ours.value).splitlines()[0] == "mpsgen::where: " + str(torchs.value).splitlines()[0]
    with torch._subclasses.FakeTensorMode() as mode:
        fake = [mode.from_tensor(x) for x in (c, a, b, torch.empty(4, dtype=out_dtype))]
        with pytest.raises(RuntimeError, match=rf"mpsgen::where.self_out: Expected out type to be torch.float32 "
                                               rf"but got {out_dtype}"):
            OPS.where.self_out(*fake[:3], out=fake[3])


def test_a_uint8_mask_warns_once_as_torchs():
    """torch's where warns about a uint8 condition once per process (TORCH_WARN_ONCE); ours
    gives the same message, once (torch.ops prints a C++ warning on stderr). A fresh process
    each, as the warnings are once per process."""
    torchs = ("import torch, warnings\n"
              "c, a = torch.tensor([0, 1, 2], dtype=torch.uint8), torch.randn(3)\n"
              "with warnings.catch_warnings(record=True) as w:\n"
              "    warnings.simplefilter('always')\n"
              "    torch.where(c, a, a); torch.where(c, a, a)\n"
              "print(len(w)); print(str(w[0].message).split(' (Triggered internally')[0])\n")
    r = subprocess.run([sys.executable, "-c", torchs], capture_output=True, text=True, cwd=ROOT, timeout=300)
    count, message = r.stdout.splitlines()
    assert count == "1" and "uint8 condition" in message, r.stdout
    ours = ("import torch, mpsgen.ops\n"
            "c, a = torch.tensor([0, 1, 2], dtype=torch.uint8), torch.randn(3)\n"
            "torch.ops.mpsgen.where.self(c, a, a); torch.ops.mpsgen.where.self(c, a, a)\n")
    r = subprocess.run([sys.executable, "-c", ours], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stderr.count(message) == 1, r.stderr


def test_a_uint8_mask_selects_as_torchs_does():
    """torch still takes a uint8 condition (deprecated), any nonzero byte as True."""
    c = torch.tensor([0, 1, 2, 255, 0, 128], dtype=torch.uint8)
    a, b = torch.arange(6, dtype=torch.int8), -torch.arange(6, dtype=torch.int8) - 1
    with pytest.warns(UserWarning, match="uint8 condition"):
        expected = torch.where(c, a, b)
    torch.testing.assert_close(OPS.where.self(c, a, b), expected)


@pytest.mark.parametrize("a_dtype,b_dtype", [(torch.float32, torch.float32), (torch.int32, torch.float16),
                                             (torch.bool, torch.bool), (torch.float16, torch.complex64)])
def test_the_mask_stays_bool_and_the_cast_kernel_reads_it(a_dtype, b_dtype):
    """The kernel is that of result_type(self, other): its _cast variant whenever the mask's
    dtype differs (bool inputs and mask: the plain bool kernel); the result is torch's."""
    c = torch.rand(6, 5) < 0.5
    a = torch.testing.make_tensor(6, 5, dtype=a_dtype, device="cpu")
    b = torch.testing.make_tensor(5, dtype=b_dtype, device="cpu")
    common = torch.result_type(a, b)
    mpsgen._C.cpu_take_launches()
    result = OPS.where.self(c, a, b)
    launched = mpsgen._C.cpu_take_launches()
    metal = {torch.float32: "float", torch.bool: "bool", torch.float16: "half", torch.complex64: "float2"}[common]
    kernel = f"where_(dense|strided)_bool_bool" if common == torch.bool else f"where_(dense|strided)_cast_{metal}"
    assert launched and all(re.fullmatch(kernel, name) for name in launched), launched
    assert result.dtype == common
    torch.testing.assert_close(result, torch.where(c, a, b))


def test_opinfo_samples_bind_input_to_self():
    """OpInfo's where samples are (self, condition, other), the method form self.where(condition, other):
    sample.input binds to `self`, not to the first Tensor."""
    from torch.testing._internal.common_methods_invocations import op_db

    dropped = []
    found = opinfo_samples("where", entry_params(WHERE), "cpu", torch.float32, dropped=dropped)
    assert found and not dropped, dropped
    theirs = list(next(o for o in op_db if o.name == "where").sample_inputs("cpu", torch.float32))
    for ours, sample in zip(found, theirs):
        assert [a.shape for a in ours.args] == [sample.args[0].shape, sample.input.shape, sample.args[1].shape]
        assert ours.args[0].dtype == torch.bool


@pytest.mark.parametrize("dtype", [torch.float32, torch.int8])
def test_edge_samples_give_the_mask_bool_tensors_in_each_layout(dtype):
    for s in edge_samples(entry_params(WHERE), "cpu", dtype, {dtype}, large=False):
        mask, self_ = s.args[0], s.args[1]
        assert mask.dtype == torch.bool, s.name
        if s.name in ("transposed", "sliced", "empty", "0-dim", "contiguous"):
            assert (mask.shape, mask.stride()) == (self_.shape, self_.stride()), s.name
