"""op-output-match: every entry of ops.yaml, every registered dtype, against torch.

Samples: OpInfo sample_inputs and reference_inputs where op_db has the op,
plus empty, 0-dim, non-contiguous, broadcasting, type-promoting, non-finite
and large inputs. Tolerances are torch.testing's dtype defaults (those of
PyTorch's own test_output_match).
"""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

import mpsgen  # noqa: F401  (loads the extension)
from codegen.loader import load
from mpsgen.samples import (MATCH, MISMATCH, TORCH_DTYPES, compare, devices, entry_params, op_overload,
                            reference, registered_dtypes, registered_outputs, samples)

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = load(ROOT / "ops.yaml")


def _cases():
    for op in REGISTRY.ops:
        for entry in op.entries:
            xfails = {x.dtype: x for x in entry.xfails}
            for r in op.registrations:
                dtype, xfail = TORCH_DTYPES[r.input], xfails.get(r.input)
                # an xfail without `samples` covers the dtype; with them, only those samples
                marks = [pytest.mark.xfail(reason=xfail.reason, strict=True)] if xfail and not xfail.samples else []
                yield pytest.param(op, entry, dtype, xfail.samples if xfail else (), marks=marks,
                                   id=f"{entry.qualified_name}-{str(dtype).removeprefix('torch.')}")


@pytest.mark.parametrize("op,entry,dtype,xfail_samples", list(_cases()))
def test_output_match(op, entry, dtype, xfail_samples):
    fn, ref = op_overload(REGISTRY.namespace, entry.qualified_name), reference(entry.reference)
    compared, failures, xfailed = 0, [], set()
    for device in devices():
        for sample in samples(entry.opinfo, entry_params(entry), device, dtype, registered_dtypes(op)):
            status, err, message = compare(fn, ref, sample, registered_outputs(op))
            compared += status in (MATCH, MISMATCH)
            if status == MISMATCH and sample.name in xfail_samples:
                xfailed.add(sample.name)
            elif status == MISMATCH:
                failures.append(f"{device} {sample.name}: max error {err:.3g}\n{message}")
    assert compared >= 10, f"only {compared} samples had a torch reference result"
    assert not failures, f"{len(failures)} of {compared} samples differ:\n" + "\n".join(failures[:5])
    # strict: an xfailed sample that matches means the xfail in ops.yaml is stale
    assert xfailed == set(xfail_samples), f"xfailed samples now match: {set(xfail_samples) - xfailed}"
