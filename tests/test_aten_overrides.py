"""Entries that implement aten ops (`implements: aten`, issue 15).

On Linux, torch's own aten op runs through our CPU kernels only in a subprocess with
MPSGEN_ATEN_CPU_OVERRIDES=1 (mpsgen/aten_overrides.py, one run for all entries). Here:
- a normal `import mpsgen` leaves torch's CPU ops alone;
- in the subprocess, every sample's functional, out= and in-place call (where aten has
  them) reached our kernel (the CPU executor's launch log), and out=/in-place match the
  functional result bit for bit; op-output-match of the functional results against
  torch's CPU op is tests/test_ops.py's, on the same samples;
- torch.library.opcheck passes on the overridden op wherever it passes on torch's own;
- the MPS registrations: an entry that replaces torch's MPS kernel (`replaces: mps`)
  registers every dtype torch's MPS tests say that kernel supports, and an entry that
  does not replace one is an op torch's MPS tests list as unimplemented.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
from functools import lru_cache
from pathlib import Path

import pytest
import torch

import mpsgen.ops  # loads mpsgen's own ops (the extension and generated/library.py)
from mpsgen.codegen.registry.loader import load
from mpsgen.aten_overrides import ENV, opcheck_failure, run_cached
from mpsgen.mps_support import mps_supported_dtypes
from mpsgen.samples import TORCH_DTYPES, op_overload, reference, widened_reference

ROOT = Path(__file__).resolve().parent.parent
REGISTRY = load(ROOT / "ops.yaml")
ATEN = REGISTRY.aten_ops
CASES = [pytest.param(op, r.input, id=f"{op.qualified_name}-{str(TORCH_DTYPES[r.input])[6:]}")
         for op in ATEN for r in op.registrations]


def _results():
    return run_cached(str(ROOT / "ops.yaml"))


def test_the_registry_ships_aten_overrides():
    assert len(ATEN) >= 6, [op.qualified_name for op in ATEN]


def test_a_normal_import_leaves_torch_cpu_ops_alone():
    assert os.environ.get(ENV) != "1"
    for op in ATEN:
        fn = op_overload("aten", op.qualified_name)
        args = [torch.rand(3, 4) for _ in op.tensor_args]
        mpsgen._C.cpu_take_launches()
        fn(*args)
        assert mpsgen._C.cpu_take_launches() == [], f"aten::{op.qualified_name} ran our kernel without {ENV}=1"


def test_the_overrides_register_once_per_process():
    code = ("import mpsgen.ops, torch; "
            "print(mpsgen._C.register_aten_cpu_overrides(), mpsgen._C.register_aten_cpu_overrides())")
    env = {k: v for k, v in os.environ.items() if k != ENV}
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["True", "False"]  # without the variable, import mpsgen did not register them


@pytest.mark.parametrize("op,metal_dtype", CASES)
def test_every_call_ran_our_kernel(op, metal_dtype):
    case = _results()[(op.qualified_name, metal_dtype)]
    by_variant: dict[str, int] = {}
    problems = []
    for (variant, name), outcome in case.outcomes.items():
        sample = next(s for s in case.samples if s.name == name)
        by_variant[variant] = by_variant.get(variant, 0) + 1
        if variant != "functional" and outcome.error is not None:
            problems.append(f"{variant} {name}: {outcome.error[0]}: {outcome.error[1]}")
        empty = any(isinstance(t, torch.Tensor) and t.numel() == 0 for t in sample.args)
        if outcome.error is None and not empty and not any(k.startswith(op.name + "_") for k in outcome.launches):
            problems.append(f"{variant} {name}: launched {outcome.launches}, no {op.name} kernel")
    assert not problems, "\n".join(problems[:10])
    assert by_variant.get("functional") == len(case.samples)
    for variant in op.aten_variants:  # out= on every sample with a result, in-place where it applies
        assert by_variant.get(variant, 0) >= 10, (variant, by_variant)


@pytest.mark.parametrize("op,metal_dtype", CASES)
def test_refuses_what_torch_refuses(op, metal_dtype):
    """Where torch's CPU op raises (heaviside's mixed dtypes), not for lack of a kernel for
    the dtype, the overridden op raises too; where torch computes, test_ops compares."""
    case = _results()[(op.qualified_name, metal_dtype)]
    ref, problems = reference(op.reference), []
    for sample in case.samples:
        try:
            ref(*sample.args, **sample.kwargs)
            continue
        except Exception as e:
            try:
                widened_reference(ref, sample, e)
                continue  # torch's CPU lacks the dtype: a result we fill, compared by test_ops
            except Exception:
                pass  # torch refuses the input
        error = case.outcomes[("functional", sample.name)].error
        if error is None:
            problems.append(f"{sample.name}: torch raises, ours computes")
    assert not problems, problems


@lru_cache(maxsize=None)
def _torch_opcheck(name: str, metal_dtype: str, sample_name: str):
    case = _results()[(name, metal_dtype)]
    sample = next(s for s in case.samples if s.name == sample_name)
    return opcheck_failure(op_overload("aten", name), sample)


@pytest.mark.parametrize("op,metal_dtype", CASES)
def test_opcheck_passes_where_torch_passes(op, metal_dtype):
    """Where torch's own op passes opcheck, or fails it only because its CPU kernel lacks
    the dtype (`"..." not implemented for 'Half'`, which is what we fill), ours passes."""
    case = _results()[(op.qualified_name, metal_dtype)]
    assert case.opcheck, "opcheck ran on no sample"
    ours_failed = {n: f for n, f in case.opcheck.items() if f is not None}
    theirs = {n: _torch_opcheck(op.qualified_name, metal_dtype, n) for n in case.opcheck}
    must_pass = {n for n, f in theirs.items() if f is None or re.search(r"not implemented for '\w+'", f)}
    assert must_pass, f"torch's own aten::{op.qualified_name} fails opcheck on every sample tried: {theirs}"
    assert not (ours_failed.keys() & must_pass), ours_failed


# ---- MPS: what torch's own MPS tests say the op supports ---------------------------------

def test_mps_supported_dtypes_reads_torchs_lists():
    assert mps_supported_dtypes("heaviside") == set()  # UNIMPLEMENTED_XFAILLIST: None
    # silu's dtypesIfMPS adds integers and bool; common_mps.py expects all but bool to fail
    assert mps_supported_dtypes("nn.functional.silu") == {torch.float32, torch.float16, torch.bfloat16, torch.bool}
    assert torch.bool not in mps_supported_dtypes("nn.functional.relu")
    assert torch.int32 in mps_supported_dtypes("nn.functional.relu")


@pytest.mark.parametrize("op", ATEN, ids=lambda op: op.qualified_name)
def test_mps_registration_matches_torchs_mps_support(op):
    """Without `replaces: mps` (checked against native_functions.yaml when generating),
    torch's MPS tests must list the op as unimplemented; with it, every dtype they expect
    torch's MPS kernel to support must be registered (no regression)."""
    supported = mps_supported_dtypes(op.opinfo)
    registered = {TORCH_DTYPES[r.input] for r in op.registrations}
    if op.replaces:
        assert supported <= registered, f"torch's MPS kernel supports {sorted(map(str, supported - registered))}"
    else:
        assert supported == set(), f"torch's MPS tests expect {sorted(map(str, supported))} to work already"


def test_a_replacement_must_cover_torchs_mps_dtypes():
    """The check above fails for a replacement that drops a dtype torch's MPS kernel has."""
    supported = mps_supported_dtypes("nn.functional.silu")
    assert not supported <= {torch.float32, torch.float16}


_OUT_DTYPES = (torch.float64, torch.float16, torch.int64)


def test_out_of_another_dtype_is_refused_where_torch_refuses():
    """aten's out= of another dtype than the result's, overridden (in a subprocess) and
    torch's own (here): both raise or both compute (heaviside's kernel refuses any other)."""
    code = ("import torch, mpsgen.ops\n"
            f"for name in {[op.qualified_name for op in ATEN]!r}:\n"
            "    fn = mpsgen.samples.op_overload('aten', name + '.out' if '.' not in name else name + '_out')\n"
            f"    for dtype in {[str(d) for d in _OUT_DTYPES]!r}:\n"
            "        x = torch.tensor([0.5, -1.0, 0.0])\n"
            "        try:\n"
            "            fn(*[x] * len(fn._schema.arguments[:-1]), out=torch.empty(3, dtype=eval(dtype)))\n"
            "            print(name, dtype, 'computes')\n"
            "        except RuntimeError:\n"
            "            print(name, dtype, 'refuses')\n")
    env = {**os.environ, ENV: "1"}
    ours = subprocess.run([sys.executable, "-c", "import mpsgen.samples\n" + code], cwd=ROOT, env=env,
                          capture_output=True, text=True, check=True).stdout.splitlines()
    theirs = subprocess.run([sys.executable, "-c", "import mpsgen.samples\n" + code.replace(", mpsgen.ops", "")],
                            cwd=ROOT, env={k: v for k, v in os.environ.items() if k != ENV},
                            capture_output=True, text=True, check=True).stdout.splitlines()
    assert len(ours) == len(ATEN) * len(_OUT_DTYPES)
    assert "heaviside torch.float64 refuses" in theirs  # the case the check is for
    assert ours == theirs


def test_polynomial_recurrences_give_torchs_bits():
    """laguerre and legendre run their float32 recurrences as torch's CPU build does, each step
    fused into one FMA (its compiler contracts a * q - k * p): the same bits for every x and n,
    and so the same NaN where the recurrence overflows (issue 33: laguerre(1, 2**31 - 1) with
    int32 n was -4.07e18, torch's is NaN)."""
    x = torch.randn(500, generator=torch.Generator().manual_seed(0)) * 3
    calls = [(name, n) for name in ("laguerre_polynomial_l", "legendre_polynomial_p") for n in (5, 50, 127, 400)]
    code = ("import sys, torch, mpsgen.ops\n"
            "x = torch.load(sys.argv[1])\n"
            f"results = [getattr(torch.special, name)(x, torch.full_like(x, n)) for name, n in {calls!r}]\n"
            "results.append(torch.special.laguerre_polynomial_l(torch.tensor([1.0]), "
            "torch.tensor([2**31 - 1], dtype=torch.int32)))\n"
            "torch.save(results, sys.argv[2])\n")
    import tempfile
    with tempfile.TemporaryDirectory() as tmp:
        torch.save(x, f"{tmp}/x.pt")
        subprocess.run([sys.executable, "-c", code, f"{tmp}/x.pt", f"{tmp}/out.pt"], cwd=ROOT, check=True,
                       env={**os.environ, ENV: "1"}, capture_output=True)
        ours = torch.load(f"{tmp}/out.pt")
    for (name, n), got in zip(calls, ours):
        expected = getattr(torch.special, name)(x, torch.full_like(x, n))
        torch.testing.assert_close(got, expected, rtol=0, atol=0, equal_nan=True, msg=f"{name} n={n}")
    assert ours[-1].isnan().all()
    assert torch.special.laguerre_polynomial_l(torch.tensor([1.0]), torch.tensor([2**31 - 1], dtype=torch.int32)).isnan()
