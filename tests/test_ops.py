"""op-output-match: every entry of ops.yaml, every registered dtype, against torch.

Entries that implement aten ops (`implements: aten`) run on CPU in one subprocess with
MPSGEN_ATEN_CPU_OVERRIDES=1 (mpsgen/aten_overrides.py) and are compared here with
torch's own CPU op, on the same saved inputs.

Samples: OpInfo sample_inputs and reference_inputs where op_db has the op,
plus empty, 0-dim, non-contiguous, broadcasting, type-promoting, non-finite
and large inputs. Tolerances are torch.testing's dtype defaults (those of
PyTorch's own test_output_match). Where torch's CPU has no kernel for a dtype
(complex32, float16/bfloat16 for some special functions, bool or integers for
some ops), the reference runs in a wider dtype and is cast back; the
"op-output-match" section at the end of pytest's output lists those samples,
the samples with no torch result and the OpInfo samples that did not bind.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import mpsgen  # noqa: F401  (loads the extension)
from codegen.loader import load
from mpsgen.aten_overrides import row
from mpsgen.samples import (MATCH, MISMATCH, NO_REFERENCE, TORCH_DTYPES, compare, devices, entry_registrations,
                            kernel_input_type, reference, registered_outputs, tolerance)

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = load(ROOT / "ops.yaml")


def _cases():
    for op in REGISTRY.ops:
        for entry in op.entries:
            xfails = {x.dtype: x for x in entry.xfails}
            for r in entry_registrations(op, entry):
                dtype, xfail = TORCH_DTYPES[r.input], xfails.get(r.input)
                # an xfail without `samples` covers the dtype; with them, only those samples
                marks = [pytest.mark.xfail(reason=xfail.reason, strict=True)] if xfail and not xfail.samples else []
                yield pytest.param(op, entry, r.input, xfail.samples if xfail else (), marks=marks,
                                   id=f"{entry.qualified_name}-{str(dtype).removeprefix('torch.')}")


def _names(items, limit=None) -> str:
    items = list(items)
    shown = items if limit is None else items[:limit]
    return ", ".join(shown) + (f" (+{len(items) - len(shown)})" if len(shown) < len(items) else "")


@pytest.mark.parametrize("op,entry,metal_dtype,xfail_samples", list(_cases()))
def test_output_match(op, entry, metal_dtype, xfail_samples, record_property):
    ref = reference(entry.reference)
    compared, failures, xfailed = 0, [], set()
    widened, no_reference, dropped, bound = [], [], [], 0
    own_kernel = []  # CPU samples whose launches include a kernel instantiated for this dtype
    for device in devices():
        # an `implements: aten` entry's CPU samples run in a subprocess with its CPU kernels
        # registered for torch's op (mpsgen/aten_overrides.py); here, torch's op is the oracle
        found, fn = row(REGISTRY, op, entry, metal_dtype, device, dropped=dropped)
        bound += sum(s.name.startswith(("opinfo[", "reference[")) for s in found)
        for sample in found:
            c = compare(fn, ref, sample, registered_outputs(op), tolerance(op, metal_dtype))
            if c.status == NO_REFERENCE:
                no_reference.append(f"{device} {sample.name}: {c.message}")
            if c.status not in (MATCH, MISMATCH):
                continue
            compared += 1
            if c.oracle:
                widened.append(f"{device} {sample.name} ({c.oracle})")
            if device == "cpu" and any(kernel_input_type(k, op.name) == metal_dtype for k in fn.last):
                own_kernel.append(sample.name)
            if c.status == MISMATCH and sample.name in xfail_samples:
                xfailed.add(sample.name)
            elif c.status == MISMATCH:
                failures.append(f"{device} {sample.name}: max error {c.error:.3g}"
                                + (f" (widened oracle: {c.oracle})" if c.oracle else "") + f"\n{c.message}")
    # shown in the "op-output-match" section of pytest's summary (tests/conftest.py)
    record_property("widened_oracle", widened)
    record_property("no_reference", no_reference)
    record_property("opinfo", (entry.opinfo, bound, [f"{name}: {reason}" for name, reason in dropped]))

    # mismatches first: the floor below must not hide them
    assert not failures, (f"{len(failures)} of {compared} samples differ"
                          + (f" ({len(widened)} compared against a widened oracle)" if widened else "")
                          + ":\n" + "\n".join(failures[:5]))
    assert compared >= 10, (f"only {compared} samples had a torch reference result; no result for "
                            f"{len(no_reference)}: {_names(no_reference, 5)}")
    # the CPU executor's launch log: some compared sample ran this dtype's own kernel,
    # not only kernels that promotion selected for another dtype
    assert own_kernel, (f"no compared sample launched a {op.name} kernel instantiated for {metal_dtype} "
                        f"(every call promoted to another dtype's kernel)")
    # strict: an xfailed sample that matches means the xfail in ops.yaml is stale
    assert xfailed == set(xfail_samples), f"xfailed samples now match: {set(xfail_samples) - xfailed}"
