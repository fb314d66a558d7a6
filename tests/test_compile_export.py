"""torch.compile and torch.export with every entry of ops.yaml.

Each entry runs as its functional, out= and in-place variants inside one
function: compiled with fullgraph=True (a graph break fails the test), and
exported, saved, loaded and run. Results, and gradients where the op is
differentiable, must equal eager's.

Per entry the backend is aot_eager: dynamo, fake kernels, functionalization
and AOTAutograd, everything but inductor's code generation, which one model
test below covers (it compiles C++ and takes far longer per graph).
"""
from __future__ import annotations

import io
from pathlib import Path

import pytest
import torch

import mpsgen.ops  # loads mpsgen's own ops (the extension and generated/library.py)
from mpsgen.codegen.registry.loader import load
from mpsgen.samples import (TORCH_DTYPES, as_inplace, edge_samples, entry_params, inplace_allowed, op_overload,
                            value_tensors)

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = load(ROOT / "ops.yaml")
NS = REGISTRY.namespace


def _cases():
    # aten entries (implements: aten) compile through torch's own meta kernels and
    # decompositions; opcheck's AOT-dispatch check on the overridden op is in
    # tests/test_aten_overrides.py
    for op in REGISTRY.own_ops:
        dtypes = [TORCH_DTYPES[r.input] for r in op.registrations]
        dtype = torch.float32 if torch.float32 in dtypes else dtypes[0]
        for entry in op.entries:
            yield pytest.param(op, entry, dtype, id=entry.qualified_name)


def _sample(entry, dtype):
    """Tensors (self full-shaped, the others broadcasting) and the entry's Scalars."""
    by_name = {s.name: s for s in edge_samples(entry_params(entry), "cpu", dtype, {dtype}, large=False)}
    return by_name.get("broadcast-rhs", by_name["transposed"])


def _all_variants(entry, sample):
    """A function running the entry's three variants: functional, out= and in-place.

    The out= tensor is contiguous and has the result's shape: dynamo refuses an
    out= that needs resizing or is strided (a graph break, for torch's own ops
    too); opcheck covers those."""
    names = entry.schema_names
    functional, out = (op_overload(NS, names[k]) for k in ("functional", "out"))
    params, inplace_ok = entry_params(entry), with_inplace(entry, sample)
    inplace = op_overload(NS, names["inplace"]) if inplace_ok else None

    def f(*args, **kwargs):
        result = functional(*args, **kwargs)
        out_result = out(*args, **kwargs, out=torch.empty(result.shape, dtype=result.dtype))
        self = next(a for a in args if isinstance(a, torch.Tensor))
        if inplace_ok:
            self = self.clone()
            inplace_args, inplace_kwargs = as_inplace(params, args, kwargs, self)
            inplace(*inplace_args, **inplace_kwargs)
        return result, out_result, self

    return f


def with_inplace(entry, sample) -> bool:
    """exp_ of an integer tensor, polar_ of a float one, abs_ of a complex one: refused, as torch
    refuses them; a `mask:` op (where) has no in-place variant."""
    if "inplace" not in entry.schema_names:
        return False
    result = op_overload(NS, entry.qualified_name)(*sample.args, **sample.kwargs)
    return inplace_allowed(next(a for a in sample.args if isinstance(a, torch.Tensor)).dtype, result.dtype)


def _recording_aot_eager(graphs: list):
    """aot_eager, keeping the graphs dynamo captured."""
    from torch._dynamo.backends.debugging import aot_eager

    def backend(gm, example_inputs):
        graphs.append(gm.code)
        return aot_eager(gm, example_inputs)

    return backend


@pytest.mark.parametrize("op,entry,dtype", list(_cases()))
def test_compile_fullgraph_matches_eager(op, entry, dtype):
    torch._dynamo.reset()
    sample = _sample(entry, dtype)
    f, graphs = _all_variants(entry, sample), []
    compiled = torch.compile(f, fullgraph=True, backend=_recording_aot_eager(graphs))
    torch.testing.assert_close(compiled(*sample.args, **sample.kwargs), f(*sample.args, **sample.kwargs),
                               equal_nan=True)
    assert len(graphs) == 1
    names = entry.schema_names
    for kind in ("functional", "out") + (("inplace",) if with_inplace(entry, sample) else ()):
        # the variants are in the one graph
        assert f"torch.ops.{NS}.{names[kind]}" in graphs[0].replace(".default", ""), names[kind]


@pytest.mark.parametrize("op,entry,dtype", [c for c in _cases() if c.values[0].differentiable
                                            and c.values[0].derivatives  # not mish_backward: no backward
                                            and value_tensors(c.values[0], c.values[1])])  # not where.Scalar
def test_compile_backward_matches_eager(op, entry, dtype):
    torch._dynamo.reset()
    sample = _sample(entry, dtype)
    fn = op_overload(NS, entry.qualified_name)
    # where's bool mask is not differentiable
    inputs = [a for a in sample.args if isinstance(a, torch.Tensor) and (a.is_floating_point() or a.is_complex())]
    for a in inputs:
        a.requires_grad_(True)

    def f(*args, **kwargs):
        result = fn(*args, **kwargs)
        return (result.abs() if result.is_complex() else result).sum()  # a real loss

    compiled = torch.compile(f, fullgraph=True, backend="aot_eager")
    expected = torch.autograd.grad(f(*sample.args, **sample.kwargs), inputs)
    actual = torch.autograd.grad(compiled(*sample.args, **sample.kwargs), inputs)
    torch.testing.assert_close(actual, expected, equal_nan=True)


class _Variants(torch.nn.Module):
    """An entry's three variants; its Scalars are constants of the module."""

    def __init__(self, entry, sample, scalars):
        super().__init__()
        self.f, self.kwargs, self.scalars = _all_variants(entry, sample), sample.kwargs, scalars

    def forward(self, *tensors):
        it = iter(tensors)
        args = [next(it) if s is None else s for s in self.scalars]
        return self.f(*args, **self.kwargs)


@pytest.mark.parametrize("op,entry,dtype", list(_cases()))
def test_export_save_load_matches_eager(op, entry, dtype):
    sample = _sample(entry, dtype)
    tensors = tuple(a for a in sample.args if isinstance(a, torch.Tensor))
    scalars = [None if isinstance(a, torch.Tensor) else a for a in sample.args]
    module = _Variants(entry, sample, scalars)
    exported = torch.export.export(module, tensors)
    graph = str(exported.graph)
    assert f"{NS}.{entry.schema_names['functional']}" in graph.replace("_.", ".")  # not decomposed away

    buffer = io.BytesIO()
    torch.export.save(exported, buffer)
    buffer.seek(0)
    loaded = torch.export.load(buffer)
    torch.testing.assert_close(loaded.module()(*tensors), module(*tensors), equal_nan=True)


class _Model(torch.nn.Module):
    """A small block made of generated ops only."""

    def __init__(self):
        super().__init__()
        self.w = torch.nn.Parameter(torch.randn(16))
        self.b = torch.nn.Parameter(torch.randn(16))

    def forward(self, x):
        ops = torch.ops.mpsgen
        h = ops.add(ops.mul(x, self.w), self.b, alpha=0.5)
        h = ops.lerp(ops.sigmoid(h), ops.leaky_relu(h, 0.1), 0.25)
        h = ops.maximum(ops.hypot(h, x), ops.exp(ops.neg(h)))
        return ops.addcmul(h, ops.erf(h), ops.sqrt(ops.abs(x)))


def test_inductor_model_forward_and_backward():
    torch._dynamo.reset()
    model, x = _Model(), torch.randn(8, 16)
    expected = model(x)
    expected_grads = torch.autograd.grad(expected.sum(), list(model.parameters()))
    compiled = torch.compile(model, fullgraph=True)  # inductor
    actual = compiled(x)
    actual_grads = torch.autograd.grad(actual.sum(), list(model.parameters()))
    torch.testing.assert_close(actual, expected)
    torch.testing.assert_close(actual_grads, expected_grads)
