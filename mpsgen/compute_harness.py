"""op-output-match for kernel entries (ops.yaml `compute:`): every registered dtype, on the
entry's `samples:` (random values, seeded) and, with `opinfo:`, OpInfo's samples, on every
device, against its torch reference (mpsgen/harness.py runs these cases beside the elementwise
ones). An `implements: aten` entry's CPU samples run in the aten-override subprocess
(mpsgen/aten_overrides.py), whose outcomes the caller passes as `aten_case`: there each out= and
in-place variant the entry registers must give the functional result bit for bit, and opcheck
and torch.compile(fullgraph=True) (aot_eager) must pass; an entry of its own namespace is held to
the same in this process, and with `derivatives:` its gradients to its reference's (autograd). Wherever torch raises for a sample, the op must raise too."""
from __future__ import annotations

import pytest
import torch

from . import runtime
from .variant_checks import call, compile_failure, opcheck_failure, variants
from .samples import MATCH, MISMATCH, NO_REFERENCE, TORCH_DTYPES, LaunchLog, Sample, compare, devices, \
    entry_params, kernel_input_type, op_overload, opinfo_samples, reference


def cases(registry, only: tuple[str, ...] = ()):
    for op in getattr(registry, "compute_ops", ()):
        if only and op.name not in only and op.qualified_name not in only:
            continue
        for t in op.dtypes:
            yield pytest.param(op, None, t, (), id=f"{op.qualified_name}-{str(TORCH_DTYPES[t]).removeprefix('torch.')}")


def declared_samples(op, metal_dtype: str, device: str) -> list[Sample]:
    """One sample per `samples:` item: each Tensor of the template dtype random in that dtype
    (torch.testing.make_tensor over the item's low/high, non-contiguous where it says, seeded by
    the sample's index), a fixed-dtype Tensor in its own, each Scalar as given; in schema order."""
    inputs = {t.name: t for t in op.inputs}
    found = []
    for i, values in enumerate(op.samples):
        torch.manual_seed(i)
        given = {}
        for name, value in values:
            if name in inputs:
                dtype = TORCH_DTYPES[metal_dtype if inputs[name].dtype == "T" else inputs[name].dtype]
                value = torch.testing.make_tensor(value.shape, dtype=dtype, device=device, low=value.low,
                                                  high=value.high, noncontiguous=value.noncontiguous)
            given[name] = value
        shape = "x".join(map(str, values[0][1].shape)) or "0-dim"
        found.append(Sample(f"samples[{i}] {shape}", tuple(given[a.name] for a in op.schema.arguments.flat_all)))
    return found


def samples(op, metal_dtype: str, device: str, dropped: list | None = None) -> list[Sample]:
    """OpInfo's samples that bind to the entry's schema (with `opinfo:`), then its own."""
    found = opinfo_samples(op.opinfo, entry_params(op), device, TORCH_DTYPES[metal_dtype],
                           dropped=dropped) if op.opinfo else []
    return found + declared_samples(op, metal_dtype, device)


def _raises(fn, sample: Sample) -> bool:
    try:
        fn(*sample.args, **sample.kwargs)
    except Exception:
        return True
    return False


def row(registry, op, metal_dtype: str, device: str, aten_case=None, dropped: list | None = None):
    """(samples, op) of one (entry, dtype, device): the entry's op in this process with its launch
    log, or for an aten entry on CPU (`aten_case`), the override subprocess's samples and replay."""
    if aten_case is not None and device == "cpu":  # torch's op with our CPU kernels, in the subprocess
        if dropped is not None:
            dropped.extend(aten_case.dropped)
        return aten_case.samples, aten_case.replay()
    return samples(op, metal_dtype, device, dropped), LaunchLog(
        op_overload(op.impl_namespace or registry.namespace, op.qualified_name), runtime.extension(registry.namespace))


def output_match(registry, op, metal_dtype: str, aten_case=None) -> None:
    ref = reference(op.reference)
    compared, failures, own_kernel, no_reference = 0, [], [], []
    for device in devices():
        found, fn = row(registry, op, metal_dtype, device, aten_case)
        for sample in found:
            c = compare(fn, ref, sample, {str(TORCH_DTYPES[t])[6:] for t in op.dtypes})
            if c.status == NO_REFERENCE:
                no_reference.append(f"{device} {sample.name}: {c.message}")
                if not _raises(fn, sample):
                    failures.append(f"{device} {sample.name}: torch raises ({c.message}), the op computes")
            if c.status not in (MATCH, MISMATCH):
                continue
            compared += 1
            if device == "cpu" and any(kernel_input_type(k, op.name) == metal_dtype for k in fn.last):
                own_kernel.append(sample.name)
            if c.status == MISMATCH:
                failures.append(f"{device} {sample.name}: max error {c.error:.3g}\n{c.message}")
    if aten_case is not None:
        failures += _variant_failures(op, aten_case)
    else:
        failures += own_variant_failures(registry, op, metal_dtype)
    assert not failures, f"{len(failures)} failures in {compared} compared samples:\n" + "\n".join(failures[:5])
    assert compared >= len(op.samples) // 2 + 1, f"only {compared} samples had a torch result: {no_reference[:5]}"
    assert own_kernel, f"no compared sample launched {op.host_name(metal_dtype)}"


def _variant_failures(op, case) -> list[str]:
    """The registered out= and in-place variants against the functional result (the subprocess
    compared them bit for bit), opcheck and torch.compile(fullgraph=True) on the first OpInfo sample."""
    failures = []
    for (variant, name), outcome in case.outcomes.items():
        if variant != "functional" and outcome.error is not None:
            failures.append(f"cpu {name}, the {variant} variant: {outcome.error[0]}: {outcome.error[1]}")
    failures += [f"cpu {name}: opcheck: {why}" for name, why in case.opcheck.items() if why is not None]
    failures += [f"cpu {name}: torch.compile(fullgraph=True): {why}" for name, why in case.compiled.items()
                 if why is not None]
    if not case.compiled:
        failures.append("no OpInfo sample ran under torch.compile(fullgraph=True)")
    ran = {v for v, _ in case.outcomes}
    for kind, _ in op.aten_variants:
        if kind != "functional" and kind not in ran and any(o.result is not None or o.error is None
                                                              for o in case.outcomes.values()):
            failures.append(f"no sample ran the registered {kind} variant")
    return failures


def own_variant_failures(registry, op, metal_dtype: str) -> list[str]:
    """An entry of its own namespace on CPU: its out= and in-place variants bit for bit with the
    functional result on every sample; opcheck and torch.compile(fullgraph=True) on the first;
    with `derivatives:`, the gradients of a floating dtype against the reference's."""
    ns, names = registry.namespace, {**dict(op.variants), "out_names": list(op.out_names), "compile": True}
    C, fn = runtime.extension(ns), op_overload(ns, op.qualified_name)
    failures, found, ran, first = [], samples(op, metal_dtype, "cpu"), set(), None
    for sample in found:
        functional = call(C, fn, sample.args, sample.kwargs)
        if first is None and functional[1] is None:
            first = (sample, functional)  # opcheck and torch.compile run on it below
        for variant, (_, error, _) in variants(C, names, sample.args, sample.kwargs, functional, ns).items():
            ran.add(variant)
            if error is not None and functional[1] is None:
                failures.append(f"cpu {sample.name}, the {variant} variant {names[variant]}: {error[0]}: {error[1]}")
    if first is None:
        return failures + ["no sample ran without an error"]
    sample, eager = first
    if why := opcheck_failure(fn, sample):
        failures.append(f"cpu {sample.name}: opcheck: {why}")
    if why := compile_failure(C, fn, sample.args, sample.kwargs, eager):
        failures.append(f"cpu {sample.name}: torch.compile(fullgraph=True): {why}")
    failures += [f"no sample ran the registered {kind} variant" for kind in names
                 if kind in ("out", "inplace") and kind not in ran]
    if op.derivatives and TORCH_DTYPES[metal_dtype].is_floating_point:
        failures += _gradient_failures(op, fn, found)
    return failures


def _gradient_failures(op, fn, found: list[Sample]) -> list[str]:
    """The gradient of each input with a formula, through the op's backward node, against autograd
    through the reference, for a random incoming gradient, on every sample (torch's tolerances of
    the dtype; the gradient of the reference computed in float64 and cast, as the oracle)."""
    ref, failures = reference(op.reference), []
    wrt = [i for i, a in enumerate(op.schema.arguments.flat_all) if op.derivative(a.name)]
    for sample in found:
        ours = [a.detach().clone().requires_grad_(i in wrt) if isinstance(a, torch.Tensor) else a
                for i, a in enumerate(sample.args)]
        theirs = [a.detach().double().requires_grad_(i in wrt) if isinstance(a, torch.Tensor) and
                  a.is_floating_point() else a for i, a in enumerate(sample.args)]
        result, expected_result = fn(*ours, **sample.kwargs), ref(*theirs, **sample.kwargs)
        if isinstance(result, tuple):  # several outputs: the one of the template dtype is differentiated
            result, expected_result = result[op.grad_output], expected_result[op.grad_output]
        torch.manual_seed(0)
        grad = torch.randn(result.shape, dtype=result.dtype)
        expected = torch.autograd.grad(expected_result, [theirs[i] for i in wrt], grad.double(), allow_unused=True)
        try:
            got = torch.autograd.grad(result, [ours[i] for i in wrt], grad, allow_unused=True)
        except RuntimeError as err:
            failures.append(f"cpu {sample.name}: backward raised: {str(err).splitlines()[0]}")
            continue
        for i, e, g in zip(wrt, expected, got):
            name = op.schema.arguments.flat_all[i].name
            if g is None:
                failures.append(f"cpu {sample.name}: no gradient reached '{name}'")
                continue
            try:
                torch.testing.assert_close(g, e.to(g.dtype) if e is not None else torch.zeros_like(ours[i]))
            except AssertionError as err:
                failures.append(f"cpu {sample.name}: the gradient of '{name}' differs from the reference's: "
                                f"{str(err).splitlines()[0]}")
    return failures
