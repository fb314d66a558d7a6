"""`Tensor?` arguments (issue 9): the Tensor? arguments given select the kernel (`given:`).

The shipped `clamp.Tensor` is the example: min and max given run a ternary kernel, one of
them a binary one, as torch's clamp_Tensor_out runs clamp, maximum or minimum. Its
op-output-match (OpInfo's clamp samples, with and without each bound), fake kernel,
opcheck, gradients, compile and export are in the suites that cover every entry; here,
the loader's errors at their ops.yaml line, the out= and in-place names torch gives the
overload, and the run-time error for a combination `given:` does not list.
"""
from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from mpsgen.codegen.registry import loader  # noqa: E402
from test_registry_errors import errors_of, lineno, one_op, single  # noqa: E402

import mpsgen.ops  # loads mpsgen's own ops (the extension and generated/library.py)

OPS = torch.ops.mpsgen
CLAMP_FUNCTORS = ("    functor: |\n"
                  "      struct both_functor { template <typename T> T operator()(T a, T b, T c) { return a; } };\n"
                  "      struct lo_functor { template <typename T> T operator()(T a, T b) { return a; } };\n")

ONE_FUNCTOR = ("    functor: |\n"
               "      template <typename T>\n"
               "      inline T operator()(const T a, const T b) { return a; }\n")


def clamp_like(given: str, func: str = "cl(Tensor self, Tensor? lo=None, Tensor? hi=None) -> Tensor",
               functors: str = CLAMP_FUNCTORS) -> str:
    return one_op(func, "", "torch.clamp", given + functors)


def test_a_given_op_loads_with_a_kernel_per_combination(tmp_path):
    path = tmp_path / "ops.yaml"
    path.write_text(clamp_like("    given:\n      lo hi: both\n      lo: lo\n"))
    op = loader.load(path).ops[0]
    assert op.kernels == ["both", "lo"]
    assert (op.kernel_family("both"), op.kernel_family("lo")) == ("ternary", "binary")
    assert op.optional_tensor_args == ["lo", "hi"] and not op.given_complete


def test_tensor_optionals_need_given(tmp_path):
    text = clamp_like("")
    errors = errors_of(tmp_path, text)
    assert "need the kernel each combination given runs" in single(errors, lineno(text, "- func:"), "given", "cl")


@pytest.mark.parametrize("given,expected", [
    ("    given:\n      lo mid: both\n", "expected the Tensor? arguments given"),
    ("    given:\n      lo lo: both\n", "expected the Tensor? arguments given"),
    ("    given:\n      lo hi: both\n      hi, lo: lo\n", "name the same arguments"),
    ("    given:\n      lo hi: 3\n", "must name a kernel"),
    ("    given:\n      lo hi: both\n      lo: both\n", "a kernel has one shape"),
    ("    given: [lo, hi]\n", "need the kernel each combination given runs"),
])
def test_given_errors_name_the_line_and_key(tmp_path, given, expected):
    text = clamp_like(given)
    errors = errors_of(tmp_path, text)
    assert expected in single(errors, lineno(text, "given:"), "given", "cl")


def test_given_without_tensor_optionals_is_an_error(tmp_path):
    text = clamp_like("    given:\n      lo: lo\n", func="cl(Tensor self, Tensor lo) -> Tensor", functors=ONE_FUNCTOR)
    errors = errors_of(tmp_path, text)
    assert "this schema has none" in single(errors, lineno(text, "given:"), "given", "cl")


def test_the_first_tensor_is_not_optional(tmp_path):
    text = clamp_like("    given:\n      lo: lo\n", func="cl(Tensor? lo, Tensor self) -> Tensor", functors=ONE_FUNCTOR)
    errors = errors_of(tmp_path, text)
    assert "the first of them not optional" in single(errors, lineno(text, "- func:"), "func", "cl")


def test_a_missing_functor_for_a_given_kernel_is_an_error(tmp_path):
    text = clamp_like("    given:\n      lo hi: both\n      hi: hi_only\n")
    errors = errors_of(tmp_path, text)
    assert "struct hi_only_functor" in single(errors, lineno(text, "functor:"), "functor", "cl")


def test_variants_take_torchs_names():
    """clamp.Tensor's out= and in-place are clamp.Tensor_out and clamp_.Tensor in aten, so
    here too (beside clamp's clamp.out and clamp_)."""
    x = torch.randn(4)
    lo = torch.zeros(4)
    out = torch.empty(4)
    OPS.clamp.Tensor_out(x, lo, None, out=out)
    torch.testing.assert_close(out, torch.clamp(x, min=lo))
    OPS.clamp_.Tensor(x, None, lo)
    torch.testing.assert_close(x, torch.clamp(x, max=lo))


def test_no_bound_is_refused_with_torchs_message():
    x = torch.randn(3)
    with pytest.raises(RuntimeError, match=re.escape("mpsgen::clamp: torch.clamp: At least one of 'min' or 'max' "
                                                     "must not be None")):
        OPS.clamp.Tensor(x, None, None)
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        torch.clamp(x, None, None)  # torch's own words


@pytest.mark.parametrize("lo,hi", [(True, True), (True, False), (False, True)])
def test_each_combination_runs_its_kernel(lo, hi):
    """The launch log names the kernel `given:` selects; the result is torch's."""
    x = torch.randn(6, 5)
    x[0, 0] = float("nan")
    low, high = (torch.randn(5) - 1 if lo else None), (torch.randn(6, 1) + 1 if hi else None)
    mpsgen._C.cpu_take_launches()
    result = OPS.clamp.Tensor(x, low, high)
    launched = mpsgen._C.cpu_take_launches()
    kernel = "clamp_tensor" + ("" if lo and hi else "_min" if lo else "_max")
    assert launched and all(re.match(kernel + r"_(dense|strided)", name) for name in launched), launched
    torch.testing.assert_close(result, torch.clamp(x, low, high), equal_nan=True)
