"""The Python side of kernel entries (ops.yaml `compute:`): the fake kernel each one registers
(generated/library.py), from the same shape rules the C++ host evaluates
(codegen/registry/sizes.py translates them; this evaluates them as written), with the same
dtype checks (support/host/compute_host.cpp)."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

import torch

from .samples import op_overload, reference

REFERENCE = "reference"  # an output shaped as the reference's result (codegen/registry/compute_model.py)


@dataclass(frozen=True)
class ComputeSpec:
    name: str  # "<namespace>::<op>"
    origin: str  # "ops.yaml:LINE"
    dtypes: list  # the template dtypes registered
    template_inputs: list[str]
    fixed: dict = field(default_factory=dict)  # input -> its fixed dtype
    outputs: list = field(default_factory=list)  # (name, shape expression, dtype or None: the template's)
    checks: list = field(default_factory=list)  # `checks:`: (condition, message with {size} holes, exception)
    reference: str = ""  # the entry's reference, where an output's shape is "reference"


def ceil_div(a, b):
    return -(-a // b)


def _names(tensors: dict, scalars: dict) -> dict:
    return {"min": min, "max": max, "ceil_div": ceil_div, "float": float, **tensors, **scalars}


def output_shapes(spec: ComputeSpec, tensors: dict, scalars: dict, dtype: torch.dtype, args: tuple = ()) -> dict[str, list]:
    """Each output's shape: its expression evaluated, or, for "reference", the shape of the
    reference's result for it on these (meta or fake) tensors, whose dtype must be the output's."""
    names = _names(tensors, scalars)
    like = _reference_results(spec, args) if any(shape == REFERENCE for _, shape, _ in spec.outputs) else ()
    shapes = {}
    for i, (name, shape, fixed) in enumerate(spec.outputs):
        if shape == REFERENCE:
            if like[i].dtype != (fixed or dtype):
                raise RuntimeError(f"{spec.name} ({spec.origin}): its reference gives output '{name}' as {like[i].dtype}, "
                                   f"and its kernel writes {fixed or dtype}; ops.yaml's compute.outputs.{name}.dtype "
                                   "says which")
            shapes[name] = list(like[i].shape)
        else:  # ops.yaml's expression, accepted by codegen/registry/sizes.py: sizes and shapes only
            shapes[name] = list(eval(shape, {"__builtins__": {}}, names))  # noqa: S307
    return shapes


def _reference_results(spec: ComputeSpec, args: tuple) -> list:
    results = reference(spec.reference)(*args)
    results = list(results) if isinstance(results, (tuple, list)) else [results]
    if len(results) != len(spec.outputs) or not all(isinstance(r, torch.Tensor) for r in results):
        raise RuntimeError(f"{spec.name} ({spec.origin}): its reference {spec.reference} gives {len(results)} "
                           f"result(s), and the entry has {len(spec.outputs)} output Tensor(s)")
    return results


def check(spec: ComputeSpec, tensors: dict, scalars: dict) -> None:
    """The entry's `checks:`, as the C++ host makes them before its launch: the error it raises,
    its message's {size} holes filled in."""
    names = _names(tensors, scalars)
    for condition, message, error in spec.checks:
        if not eval(condition, {"__builtins__": {}}, names):  # noqa: S307  (sizes.py accepted it)
            text = re.sub(r"\{([^{}]*)\}", lambda m: str(eval(m.group(1), {"__builtins__": {}}, names)), message)  # noqa: S307
            raise error(f"{spec.name}: {text}")


def template_dtype(spec: ComputeSpec, tensors: dict) -> torch.dtype:
    first = spec.template_inputs[0]
    dtype = tensors[first].dtype
    for name in spec.template_inputs[1:]:
        if tensors[name].dtype != dtype:
            raise RuntimeError(f"{spec.name}: expected '{name}' to have the dtype of '{first}', got {tensors[name].dtype}")
    if dtype not in spec.dtypes:
        raise NotImplementedError(f"{spec.name} ({spec.origin}) has no kernel for dtype {dtype}; its kernels are "
                                  f"registered for {', '.join(str(d) for d in spec.dtypes)}")
    for name, fixed in spec.fixed.items():
        if tensors[name].dtype != fixed:
            raise RuntimeError(f"{spec.name}: expected '{name}' to be {fixed}, got {tensors[name].dtype}")
    return dtype


def fake_compute(spec: ComputeSpec, tensors: dict, scalars: dict, args: tuple = ()):
    """The outputs a kernel entry makes, on the inputs' device, after its checks; `args`, every
    argument in schema order, are what its reference is called with where it shapes an output."""
    dtype = template_dtype(spec, tensors)
    check(spec, tensors, scalars)
    device = tensors[spec.template_inputs[0]].device
    shapes = output_shapes(spec, tensors, scalars, dtype, args)
    outs = [torch.empty(shapes[name], dtype=fixed or dtype, device=device) for name, _, fixed in spec.outputs]
    return outs[0] if len(outs) == 1 else tuple(outs)


def register_compute_variants(lib: torch.library.Library, spec: ComputeSpec, functional: str, out: str,
                              inplace: str | None = None, self_index: int = 0) -> None:
    """Decompositions of a kernel entry's out= and in-place variants into its functional op, with
    the checks of its C++ host (support/host/compute_host.cpp's check_out): what meta and fake
    tensors run (generated/autograd.cpp's kernels send CPU and MPS calls to the C++ variants)."""
    fn = op_overload(lib.ns, functional)
    names = [name for name, _, _ in spec.outputs]

    def out_decomposition(*args, **kwargs):
        outs = [kwargs.pop(name) for name in names]
        results = fn(*args, **kwargs)
        for name, o, r in zip(names, outs, results if isinstance(results, tuple) else (results,)):
            if o.device != r.device:
                raise RuntimeError(f"{spec.name}: expected the out= tensor '{name}' on {r.device}, got {o.device}")
            if o.dtype != r.dtype:
                raise RuntimeError(f"{spec.name}: expected the out= tensor '{name}' to be {r.dtype}, got {o.dtype}")
            if o.shape != r.shape:
                o.resize_([int(s) for s in r.shape])
            o.copy_(r)
        return outs[0] if len(outs) == 1 else tuple(outs)

    def inplace_decomposition(self, *args, **kwargs):
        return self.copy_(fn(*args[:self_index], self, *args[self_index:], **kwargs))

    lib.impl(out, out_decomposition, "CompositeImplicitAutograd")
    if inplace is not None:
        lib.impl(inplace, inplace_decomposition, "CompositeImplicitAutograd")
