"""op-output-match for kernel entries (ops.yaml `compute:`): every registered dtype, on the
entry's `samples:` shapes (random values, seeded), on every device, against its torch reference
(mpsgen/harness.py runs these cases beside the elementwise ones)."""
from __future__ import annotations

import pytest
import torch

from . import runtime
from .samples import MATCH, MISMATCH, NO_REFERENCE, TORCH_DTYPES, LaunchLog, Sample, compare, devices, \
    kernel_input_type, op_overload, reference


def cases(registry, only: tuple[str, ...] = ()):
    for op in getattr(registry, "compute_ops", ()):
        if only and op.name not in only and op.qualified_name not in only:
            continue
        for t in op.dtypes:
            yield pytest.param(op, None, t, (), id=f"{op.qualified_name}-{str(TORCH_DTYPES[t]).removeprefix('torch.')}")


def samples(op, metal_dtype: str, device: str) -> list[Sample]:
    """One sample per `samples:` item: each Tensor of the template dtype random in that dtype
    (torch.testing.make_tensor, seeded by the sample's index), a fixed-dtype Tensor in its own,
    each Scalar as given; in schema order."""
    inputs = {t.name: t for t in op.inputs}
    found = []
    for i, values in enumerate(op.samples):
        torch.manual_seed(i)
        given = {}
        for name, value in values:
            if name in inputs:
                dtype = TORCH_DTYPES[metal_dtype if inputs[name].dtype == "T" else inputs[name].dtype]
                value = torch.testing.make_tensor(value, dtype=dtype, device=device)
            given[name] = value
        shape = "x".join(map(str, values[0][1])) or "0-dim"
        found.append(Sample(f"samples[{i}] {shape}", tuple(given[a.name] for a in op.schema.arguments.flat_all)))
    return found


def output_match(registry, op, metal_dtype: str) -> None:
    ref = reference(op.reference)
    fn = LaunchLog(op_overload(registry.namespace, op.qualified_name), runtime.extension(registry.namespace))
    compared, failures, own_kernel, no_reference = 0, [], [], []
    for device in devices():
        for sample in samples(op, metal_dtype, device):
            c = compare(fn, ref, sample, {str(TORCH_DTYPES[t])[6:] for t in op.dtypes})
            if c.status == NO_REFERENCE:
                no_reference.append(f"{device} {sample.name}: {c.message}")
            if c.status not in (MATCH, MISMATCH):
                continue
            compared += 1
            if device == "cpu" and any(kernel_input_type(k, op.name) == metal_dtype for k in fn.last):
                own_kernel.append(sample.name)
            if c.status == MISMATCH:
                failures.append(f"{device} {sample.name}: max error {c.error:.3g}\n{c.message}")
    assert not failures, f"{len(failures)} of {compared} samples differ:\n" + "\n".join(failures[:5])
    assert compared >= len(op.samples), f"only {compared} samples had a torch result: {no_reference[:5]}"
    assert own_kernel, f"no compared sample launched {op.host_name(metal_dtype)}"
