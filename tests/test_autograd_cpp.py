"""The generated C++ autograd (generated/autograd.cpp) of a registry other than the shipped one:
its kernels compiled alone, over CPU kernels written in Python (torch.library), so the
backward nodes, the missing-formula error and a formula the compiler rejects are checked
without building a second extension of kernels.
"""
from __future__ import annotations

import re
import subprocess

import pytest
import torch
from torch.utils import cpp_extension

from mpsgen.codegen import build
from mpsgen.codegen.emit import render
from mpsgen.codegen.registry.loader import load

REGISTRY_YAML = """\
namespace: mpsgen_cppgrad
ops:
  - func: twice(Tensor self, Tensor other) -> Tensor
    dtypes: [float]
    reference: torch.add
    derivatives:
      self: grad * 2
    functor: |
      template <typename T> inline T operator()(const T a, const T b) { return 2 * a + b; }

  - func: thrice(Tensor self) -> Tensor
    dtypes: [float]
    reference: torch.exp
    functor: |
      template <typename T> inline T operator()(const T a) { return a; }

  - func: scaled(Tensor self, Scalar factor) -> Tensor
    dtypes: [float]
    reference: torch.mul
    derivatives:
      self: grad * factor.conj() * result.sign().abs()
    functor: |
      template <typename T> inline T operator()(const T a, const T f) { return a * f; }
"""
KERNELS = {"twice": lambda a, b: 2 * a + b, "thrice": lambda a: a * 3, "scaled": lambda a, f: a * f}
_KEEP_ALIVE: list = []


def _generate(tmp_path, text: str):
    path = tmp_path / "ops.yaml"
    path.write_text(text)
    registry = load(path)
    source = tmp_path / "autograd.cpp"
    source.write_text(render.render(registry)["autograd.cpp"])
    return registry, source


@pytest.fixture(scope="module")
def ops(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("cppgrad")
    registry, source = _generate(tmp, REGISTRY_YAML)
    lib = torch.library.Library(registry.namespace, "DEF")
    for e in registry.entries:
        for schema in e.schemas.values():
            lib.define(schema)
        fn, names = KERNELS[e.qualified_name], e.schema_names
        lib.impl(names["functional"], fn, "CPU")
        lib.impl(names["out"], lambda *a, out, fn=fn: out.copy_(fn(*a)), "CPU")
        lib.impl(names["inplace"], lambda s, *a, fn=fn: s.copy_(fn(s, *a)), "CPU")
    module = cpp_extension.load("mpsgen_cppgrad", [str(source)], extra_include_paths=[str(build.SUPPORT / "host")],
                                extra_cflags=list(build.CXX_FLAGS), build_directory=str(tmp), is_python_module=False)
    _KEEP_ALIVE.extend([lib, module])  # torch keeps global references to the ops
    return torch.ops.mpsgen_cppgrad


def test_backward_runs_the_formulas(ops):
    a, b = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    out = ops.twice(a, b.detach())
    assert out.grad_fn.name() == "TwiceBackward"
    (ga,) = torch.autograd.grad(out.sum(), a)
    torch.testing.assert_close(ga, torch.full((3,), 2.0))
    x = torch.tensor([1.0, -2.0, 0.0], requires_grad=True)
    (gx,) = torch.autograd.grad(ops.scaled(x, 3.0).sum(), x)  # reads a Scalar and the result
    torch.testing.assert_close(gx, torch.tensor([3.0, 3.0, 0.0]))


def test_backward_without_formula_names_the_op(ops):
    a, b = torch.randn(3, requires_grad=True), torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match=r"mpsgen_cppgrad::twice: no derivative formula for input 'other' "
                                           r"\(ops.yaml entry at ops.yaml:3\)"):
        ops.twice(a, b).sum().backward()
    with pytest.raises(RuntimeError, match=r"mpsgen_cppgrad::thrice: no derivative formula for input 'self'"):
        ops.thrice(a).sum().backward()


def test_inplace_on_a_leaf_that_requires_grad_is_refused(ops):
    x = torch.randn(3, requires_grad=True)
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place"):
        ops.scaled_(x, 2.0)


def test_inplace_saves_the_input_before_writing_it(ops):
    """`twice_`'s formula reads nothing; `scaled_` reads `result`, saved after the write."""
    x = torch.tensor([1.0, -2.0, 0.0], requires_grad=True)
    y = x * 1
    ops.scaled_(y, 4.0)
    assert y.grad_fn.name() == "ScaledBackward"
    (gx,) = torch.autograd.grad(y.sum(), x)
    torch.testing.assert_close(gx, torch.tensor([4.0, 4.0, 0.0]))


def test_a_formula_the_compiler_rejects_is_reported_at_its_ops_yaml_line(tmp_path):
    text = REGISTRY_YAML.replace("self: grad * 2", "self: grad * self.no_such_method()")
    _, source = _generate(tmp_path, text)
    line = next(i + 1 for i, l in enumerate(text.splitlines()) if "no_such_method" in l)
    flags = [f"-I{p}" for p in [*cpp_extension.include_paths(), build.SUPPORT / "host"]]
    run = subprocess.run(["c++", "-std=c++17", "-fsyntax-only", *flags, str(source)], capture_output=True, text=True)
    assert run.returncode != 0
    assert re.search(rf"^ops\.yaml:{line}:\d+: error: .*no_such_method", run.stderr, re.M), run.stderr[-2000:]
