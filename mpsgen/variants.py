"""Every CPU kernel variant this machine can run gives the baseline's bits, on every entry's samples.

    python -m mpsgen.variants [--ops ops.yaml] [--loads mpsgen.ops] [OP ...]

The CPU kernels that gain from newer x86-64 instructions have variants (baseline, AVX2 + F16C +
FMA, AVX-512; support/cpu/kernel_launch.h), and the launcher runs the highest this CPU has.
Here each variant the build holds and this CPU runs is run in a subprocess of its own under
MPSGEN_CPU_ISA (baseline, avx2, and no cap for AVX-512), over every entry's registered dtypes
and the main job's samples (without the large ones: OpInfo's and the edge samples, the
`implements: aten` entries through their aten ops, as mpsgen.report runs them), and each
result is compared with the baseline's bit for bit, NaN payloads aside (which NaN operand an
instruction returns follows the operand order, which a vectoriser may swap; torch and Metal
promise no payload), and each error message too.

A variant this CPU cannot run is named as not run; one that this CPU runs but the build did not
compile (MPSGEN_CPU_VARIANTS=native compiles only the highest a machine runs) fails the
comparison, with the command that builds it: the verdict must not depend on the machine.
Exits 1 if any result differs, naming the entry, dtype and sample.
"""
from __future__ import annotations

import argparse
import hashlib
import importlib
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import torch

from mpsgen import runtime
from mpsgen.codegen.build import _AVX2_FLAGS, _AVX512_FLAGS, _machine_cpu_flags
from mpsgen.codegen.registry.loader import load
from mpsgen.samples import TORCH_DTYPES, entry_params, entry_registrations, op_overload, registered_dtypes, samples

ROOT = Path(__file__).resolve().parent.parent
# (name, MPSGEN_CPU_ISA, the CPU flags it needs, the index of cpu_compiled_variants() it needs)
VARIANTS = [("baseline", "baseline", set(), None),
            ("avx2", "avx2", _AVX2_FLAGS, "avx2"),
            ("avx512", None, _AVX2_FLAGS | _AVX512_FLAGS, "avx512")]


SHOWN = 4096  # results of at most this many elements are kept whole, to show where they differ


def canonical(t: torch.Tensor) -> torch.Tensor:
    """The tensor's bits, every NaN made the one quiet NaN (its position kept)."""
    t = t.detach().contiguous().clone()
    parts = torch.view_as_real(t) if t.is_complex() else t
    if parts.is_floating_point():
        parts[parts.isnan()] = float("nan")
    flat = parts.reshape(-1)
    return flat.view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[flat.element_size()])


def _digest(t: torch.Tensor) -> str:
    return hashlib.sha1(canonical(t).numpy().tobytes()).hexdigest()


def _outcome(fn, sample):
    """The call's error, or per result its dtype, shape, bits' digest and (if small) bits."""
    try:
        result = fn(*sample.args, **sample.kwargs)
    except Exception as e:  # the same refusal under every variant
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    results = result if isinstance(result, (tuple, list)) else (result,)
    return tuple((str(r.dtype), tuple(r.shape), _digest(r), canonical(r) if r.numel() <= SHOWN else None)
                 if isinstance(r, torch.Tensor) else repr(r) for r in results)


def _inputs(sample) -> str:
    """A digest of the sample's inputs: every run must see the same."""
    h = hashlib.sha1()
    for a in (*sample.args, *sample.kwargs.values()):
        h.update(canonical(a).numpy().tobytes() if isinstance(a, torch.Tensor) else repr(a).encode())
    return h.hexdigest()


def run_child(registry, only, out: Path) -> None:
    """Every selected entry's (dtype, sample) results under this process's MPSGEN_CPU_ISA."""
    cases = {}
    for op in registry.ops:
        for entry in op.entries:
            if only and op.name not in only and entry.qualified_name not in only:
                continue
            fn = op_overload(op.impl_namespace or registry.namespace, entry.qualified_name)
            for r in entry_registrations(op, entry):
                found = samples(entry.opinfo, entry_params(entry), "cpu", TORCH_DTYPES[r.input], registered_dtypes(op),
                                large=False, dropped=[])
                for i, sample in enumerate(found):
                    key = (entry.qualified_name, str(TORCH_DTYPES[r.input]).removeprefix("torch."), f"{sample.name}#{i}")
                    cases[key] = (_inputs(sample), _outcome(fn, sample))
    ext = runtime.extension(registry.namespace)
    torch.save({"avx2": ext.cpu_use_avx2(), "avx512": ext.cpu_use_avx512(), "cases": cases}, out)


def _differences(base, other) -> list[str]:
    """How `other`'s results differ from the baseline's, one line per case."""
    lines = []
    for key, (inputs, outcome) in base.items():
        if key not in other:
            lines.append(f"{' '.join(key)}: not run")
            continue
        their_inputs, theirs = other[key]
        if not _same(inputs, their_inputs):
            lines.append(f"{' '.join(key)}: the samples' inputs differ between the runs (not seeded?)")
        elif not _same(outcome, theirs):
            lines.append(f"{' '.join(key)}: {_describe(outcome, theirs)}")
    return lines


def _same(a, b) -> bool:
    """Equal outcomes: the same error, or results of the same dtypes, shapes and bits."""
    if isinstance(a, tuple) and isinstance(b, tuple):
        return len(a) == len(b) and all(x[:3] == y[:3] if isinstance(x, tuple) and isinstance(y, tuple) else x == y
                                        for x, y in zip(a, b))
    return a == b


def _describe(base, other) -> str:
    if isinstance(base, str) or isinstance(other, str):
        return f"baseline {base if isinstance(base, str) else 'computes'}; this variant {other if isinstance(other, str) else 'computes'}"
    for x, y in zip(base, other):
        if not (isinstance(x, tuple) and isinstance(y, tuple)) or x[:2] != y[:2]:
            return f"the results differ: {x[:2] if isinstance(x, tuple) else x} against {y[:2] if isinstance(y, tuple) else y}"
        (dtype, shape, digest, a), (_, _, theirs, b) = x, y
        if digest == theirs:
            continue
        if a is None:
            return f"the bits of the {dtype} result of shape {list(shape)} differ"
        where = (a != b).nonzero().flatten()
        return (f"{where.numel()} of {a.numel()} elements ({dtype}, shape {list(shape)}) differ in their bits, "
                f"first at flat index {where[0].item()}: {a[where[0]].item():#x} (baseline) against "
                f"{b[where[0]].item():#x}")
    return "the results differ"


def cpu_name() -> str:
    """The CPU's model name, family and model (/proc/cpuinfo), as benchmark figures quote it."""
    try:
        info = dict(map(str.strip, line.split(":", 1)) for line in Path("/proc/cpuinfo").read_text().splitlines()[:30] if ":" in line)
    except OSError:
        return "unknown CPU"
    get = lambda k: info.get(k, "?").strip()  # noqa: E731
    return f"{get('model name')} (family {get('cpu family')} model {get('model')})"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mpsgen.variants", description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", metavar="OP", help="these ops only (default: every op)")
    parser.add_argument("--ops", type=Path, default=ROOT / "ops.yaml")
    parser.add_argument("--loads", default="mpsgen.ops", help="the module whose import loads the ops")
    parser.add_argument("--child", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    registry = load(args.ops)
    importlib.import_module(args.loads)
    if args.child:
        run_child(registry, set(args.only), args.child)
        return 0

    start = time.perf_counter()
    flags = _machine_cpu_flags() or set()
    compiled = runtime.extension(registry.namespace).cpu_compiled_variants()
    print(f"CPU: {cpu_name()}; kernels with a variant compiled: {compiled['avx2']} AVX2, {compiled['avx512']} AVX-512")
    runs, failures = {}, []
    with tempfile.TemporaryDirectory() as tmp:
        for name, cap, needs, built in VARIANTS:
            if not needs <= flags:
                print(f"{name:<9} not run: this CPU lacks {' '.join(sorted(needs - flags))} "
                      f"({compiled.get(built, 0)} kernels hold the variant, compiled and not run)")
                continue
            if built and compiled[built] == 0:
                failures.append(f"{name}: this CPU runs it but the build compiled no kernel's {name} variant: "
                                "build with MPSGEN_CPU_VARIANTS=all (python setup.py build_ext --inplace)")
                print(f"{name:<9} NOT COMPILED: this CPU runs it; build with MPSGEN_CPU_VARIANTS=all")
                continue
            # the parent's sys.path: a project's in-place build (mpsgen variants) imports first
            env = {**os.environ, "MPSGEN_ATEN_CPU_OVERRIDES": "1", "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
            env.pop("MPSGEN_CPU_ISA", None)
            if cap:
                env["MPSGEN_CPU_ISA"] = cap
            out = Path(tmp) / f"{name}.pt"
            t0 = time.perf_counter()
            child = subprocess.run([sys.executable, "-m", "mpsgen.variants", "--ops", str(args.ops), "--loads",
                                    args.loads, "--child", str(out), *args.only], env=env, capture_output=True, text=True)
            if child.returncode:  # torch's warnings (the aten overrides) are shown only with a failure
                print(f"{name:<9} failed to run (exit {child.returncode}):\n{child.stdout}{child.stderr}")
                failures.append(f"{name}: the run failed")
                continue
            runs[name] = torch.load(out, weights_only=False)
            ran = {"baseline": not runs[name]["avx2"], "avx2": runs[name]["avx2"] and not runs[name]["avx512"],
                   "avx512": runs[name]["avx512"]}[name]
            if not ran:
                failures.append(f"{name}: under MPSGEN_CPU_ISA={cap} the kernels did not run the {name} variant")
            base = runs.get("baseline", runs[name])["cases"]
            diff = [] if name == "baseline" else _differences(base, runs[name]["cases"])
            failures += [f"{name}: {d}" for d in diff]
            verdict = "the reference run" if name == "baseline" else f"{len(diff)} differ from the baseline"
            print(f"{name:<9} ran {len(runs[name]['cases'])} (entry, dtype, sample) cases: {verdict} "
                  f"({time.perf_counter() - t0:.1f} s)", flush=True)
    for line in failures[:50]:
        print(f"  {line}")
    if len(failures) > 50:
        print(f"  ... and {len(failures) - 50} more")
    print(f"{'FAILED' if failures else 'ok'}: variants run {', '.join(runs)} "
          f"({time.perf_counter() - start:.1f} s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
