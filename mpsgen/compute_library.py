"""The Python side of kernel entries (ops.yaml `compute:`): the fake kernel each one registers
(generated/library.py), from the same shape rules the C++ host evaluates
(codegen/registry/sizes.py translates them; this evaluates them as written), with the same
dtype checks (support/host/compute_host.cpp)."""
from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass(frozen=True)
class ComputeSpec:
    name: str  # "<namespace>::<op>"
    origin: str  # "ops.yaml:LINE"
    dtypes: list  # the template dtypes registered
    template_inputs: list[str]
    fixed: dict = field(default_factory=dict)  # input -> its fixed dtype
    outputs: list = field(default_factory=list)  # (name, shape expression, dtype or None: the template's)


def ceil_div(a, b):
    return -(-a // b)


def output_shapes(spec: ComputeSpec, tensors: dict, scalars: dict) -> dict[str, list]:
    names = {"min": min, "max": max, "ceil_div": ceil_div, **tensors, **scalars}
    # the expressions are ops.yaml's, accepted by codegen/registry/sizes.py: sizes and shapes only
    return {name: list(eval(shape, {"__builtins__": {}}, names)) for name, shape, _ in spec.outputs}  # noqa: S307


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


def fake_compute(spec: ComputeSpec, tensors: dict, scalars: dict):
    dtype = template_dtype(spec, tensors)
    device = tensors[spec.template_inputs[0]].device
    shapes = output_shapes(spec, tensors, scalars)
    outs = [torch.empty(shapes[name], dtype=fixed or dtype, device=device) for name, _, fixed in spec.outputs]
    return outs[0] if len(outs) == 1 else tuple(outs)
