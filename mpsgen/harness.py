"""op-output-match as a library: mpsgen's own tests/test_ops.py and the test file of every
project made with `mpsgen init` run the same check.

    from mpsgen import harness
    REGISTRY = harness.load_project(__file__)   # the project's ops.yaml; its ops loaded

    @pytest.mark.parametrize(harness.PARAMS, harness.cases(REGISTRY))
    def test_output_match(op, entry, metal_dtype, xfail_samples, record_property):
        harness.output_match(REGISTRY, op, entry, metal_dtype, xfail_samples, record_property)

Each case is one entry and one registered dtype, compared on every device (CPU, and MPS
where torch has it) over OpInfo sample and reference inputs plus edge samples (empty, 0-dim,
non-contiguous, broadcasting, type-promoting, non-finite, large) against the entry's torch
reference, with torch.testing's dtype tolerances (those of PyTorch's own test_output_match).
Where torch's CPU has no kernel for a dtype the reference runs in a wider dtype and is cast
back; `record_property` carries those samples, the ones with no torch result and the OpInfo
samples that did not bind to pytest's summary (tests/conftest.py).
"""
from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from . import compute_harness
from .aten_overrides import row, run_cached
from .samples import (MATCH, MISMATCH, NO_REFERENCE, TORCH_DTYPES, compare, devices, entry_registrations,
                      kernel_input_type, reference, registered_outputs, tolerance)

PARAMS = "op,entry,metal_dtype,xfail_samples"


def load_project(start: str | Path):
    """The registry of the project at or above `start` (a test file), with its ops loaded:
    the project's package is imported from the project's folder first, so an in-place build
    (`mpsgen build`) is what runs."""
    from .codegen.registry.loader import load
    from .codegen.package import find_project

    project = find_project(Path(start).resolve().parent)
    project.use_in_place_build()
    importlib.import_module(project.loads)
    return load(project.ops)


def cases(registry, only: tuple[str, ...] = ()):
    """One pytest.param per (entry, registered dtype), with the entry's xfail as a strict xfail
    mark (without `samples`) or as the samples that must differ (with them). `only`: these
    ops' entries (base names or entry names) only."""
    yield from compute_harness.cases(registry, only)
    for op in registry.ops:
        for entry in op.entries:
            if only and op.name not in only and entry.qualified_name not in only:
                continue
            xfails = {x.dtype: x for x in entry.xfails}
            for r in entry_registrations(op, entry):
                dtype, xfail = TORCH_DTYPES[r.input], xfails.get(r.input)
                marks = [pytest.mark.xfail(reason=xfail.reason, strict=True)] if xfail and not xfail.samples else []
                yield pytest.param(op, entry, r.input, xfail.samples if xfail else (), marks=marks,
                                   id=f"{entry.qualified_name}-{str(dtype).removeprefix('torch.')}")


def _names(items, limit=None) -> str:
    items = list(items)
    shown = items if limit is None else items[:limit]
    return ", ".join(shown) + (f" (+{len(items) - len(shown)})" if len(shown) < len(items) else "")


def output_match(registry, op, entry, metal_dtype, xfail_samples, record_property) -> None:
    """Asserts that the entry's op matches its torch reference for one registered dtype."""
    if entry is None:  # a kernel entry (compute_harness.cases)
        case = run_cached(str(Path(registry.path).resolve()))[(op.qualified_name, metal_dtype)] \
            if op.implements else None
        return compute_harness.output_match(registry, op, metal_dtype, case)
    ref = reference(entry.reference)
    compared, failures, xfailed = 0, [], set()
    widened, no_reference, dropped, bound = [], [], [], 0
    own_kernel = []  # CPU samples whose launches include a kernel instantiated for this dtype
    for device in devices():
        # an `implements: aten` entry's CPU samples run in a subprocess with its CPU kernels
        # registered for torch's op (mpsgen/aten_overrides.py); here, torch's op is the oracle
        found, fn = row(registry, op, entry, metal_dtype, device, dropped=dropped)
        bound += sum(s.name.startswith(("opinfo[", "reference[")) for s in found)
        for sample in found:
            c = compare(fn, ref, sample, registered_outputs(op), tolerance(op, metal_dtype), op.dtype_defaults,
                        measure=False)  # a match's error is not read here
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
