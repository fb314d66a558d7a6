"""The CPU backend's speed: every op of ops.yaml against torch's own op, in the same run.

    .venv/bin/python benchmarks/cpu_backend.py                  # every case, 1e7 elements
    .venv/bin/python benchmarks/cpu_backend.py --ops 'add|exp' --dtypes float32 --threads 1

Cases: each entry (op or Scalar overload) x each of float32, float16, bfloat16 and one
integer dtype it registers (int32, else the first integer registration) x layout:
`contiguous` (1-D tensors of --numel elements), `strided` (2-D views with a gap after
each row, so the strided kernels run) and, for entries with two or more tensors,
`broadcast` (the other tensors a row that broadcasts over the first). Each case runs
with one thread and with all of torch's threads (torch.set_num_threads; the executor
runs on torch's thread pool).

Each side is called alternately, after one warm-up call each; the figure is the median
call time, the ratio mpsgen / torch (the entry's `reference:`). Lower is better. With one
thread the time is the calling thread's CPU time (torch and the executor both run a
1-thread op in the caller), so other processes on a busy machine do not count; with
several, wall time. A case
whose torch reference raises for the dtype (torch's CPU lacks it) is listed and left
out of the geomean. The `implements: aten` entries are torch's own operators: their
mpsgen side runs in a subprocess with MPSGEN_ATEN_CPU_OVERRIDES=1, where the operator
runs mpsgen's kernels, on the same inputs (same seed).

Freed memory stays in the process (glibc's malloc told to use no mmap for large blocks
and not to trim: keep_freed_memory), so each call's output reuses pages already mapped.
Otherwise a 40 MB output is a fresh mmap whose ~10^4 page faults cost more than the
kernel (about 14 ms against 1-2 ms for a float32 add at 1e7), and one side of a pair
sometimes skipped them, which made the ratio a draw of the allocator.
"""
from __future__ import annotations

import argparse
import ctypes
import json
import math
import os
import re
import statistics
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import torch  # noqa: E402

from mpsgen.codegen.registry.loader import load  # noqa: E402
from mpsgen.aten_overrides import ENV as ATEN_ENV  # noqa: E402
from mpsgen.samples import TORCH_DTYPES, entry_params, fill, op_overload, reference  # noqa: E402

FLOATS = ("float", "half", "bfloat")
INTEGERS = ("int", "long", "short", "char", "uchar")
LAYOUTS = ("contiguous", "strided", "broadcast")
GAP = 16  # elements skipped after each row of a strided case


@dataclass(frozen=True)
class Case:
    entry: str  # qualified name, e.g. add.Tensor
    dtype: str  # Metal type name: float, half, bfloat, int, ...
    layout: str

    @property
    def label(self) -> str:
        return f"{self.entry} {str(TORCH_DTYPES[self.dtype])[6:]} {self.layout}"


def bench_dtypes(op) -> list[str]:
    """float, half and bfloat where registered, and one integer dtype."""
    registered = [r.input for r in op.registrations]
    ints = [t for t in INTEGERS if t in registered]
    return [t for t in FLOATS if t in registered] + ints[:1]


def entries(registry):
    """(op, entry) for every callable entry of the registry."""
    for op in registry.ops:
        for entry in op.entries:
            yield op, entry


def cases(registry, ops_pattern: str, dtypes: list[str] | None, layouts: list[str]) -> list[Case]:
    found = []
    for op, entry in entries(registry):
        if ops_pattern and not re.search(ops_pattern, entry.qualified_name):
            continue
        ntensors = sum(p.kind == "Tensor" for p in entry_params(entry))
        for dtype in bench_dtypes(op):
            if dtypes and str(TORCH_DTYPES[dtype])[6:] not in dtypes:
                continue
            for layout in layouts:
                if layout == "broadcast" and ntensors < 2:
                    continue
                found.append(Case(entry.qualified_name, dtype, layout))
    return found


def shape(numel: int) -> tuple[int, int]:
    cols = 1000
    return max(1, numel // cols), cols


def make(case: Case, entry, numel: int):
    """(args, kwargs) of a case's call, the same in every process (seeded by the case)."""
    torch.manual_seed(sum(map(ord, case.label)))
    dtype = TORCH_DTYPES[case.dtype]
    params = entry_params(entry)
    ntensors = sum(p.kind == "Tensor" for p in params)
    rows, cols = shape(numel)

    def tensor(*size):
        return torch.testing.make_tensor(size, device="cpu", dtype=dtype)

    if case.layout == "contiguous":
        tensors = [tensor(rows * cols) for _ in range(ntensors)]
    elif case.layout == "strided":
        tensors = [tensor(rows, cols + GAP)[:, :cols] for _ in range(ntensors)]
    else:
        tensors = [tensor(rows, cols)] + [tensor(cols) for _ in range(ntensors - 1)]
    return fill(params, tensors, dtype)


CLOCK = time.perf_counter  # run() sets it: thread_time with one thread, wall time with several


def call_time(fn, args, kwargs) -> float:
    start = CLOCK()
    fn(*args, **kwargs)
    return CLOCK() - start


def time_pair(mine, theirs, args, kwargs, repeat: int, budget: float) -> tuple[float, float]:
    """Median seconds per call of each, called alternately after a warm-up call each."""
    first = call_time(mine, args, kwargs) + call_time(theirs, args, kwargs)
    n = max(1, min(repeat, int(budget / max(first, 1e-9))))
    a, b = [], []
    for _ in range(n):
        a.append(call_time(mine, args, kwargs))
        b.append(call_time(theirs, args, kwargs))
    return statistics.median(a), statistics.median(b)


def time_one(fn, args, kwargs, repeat: int) -> float:
    fn(*args, **kwargs)
    return statistics.median(call_time(fn, args, kwargs) for _ in range(repeat))


def aten_worker(argv) -> None:
    """Subprocess: time the mpsgen side of `implements: aten` cases (argv: json of
    {ops, numel, threads, repeat, cases}); prints json {label: seconds}."""
    job = json.loads(argv[0])
    global CLOCK
    torch.set_num_threads(job["threads"])
    CLOCK = time.thread_time if job["threads"] == 1 else time.perf_counter
    import mpsgen.ops  # noqa: F401  (with MPSGEN_ATEN_CPU_OVERRIDES=1: torch's operators run mpsgen's kernels)

    registry = load(job["ops"])
    by_name = {e.qualified_name: (op, e) for op, e in entries(registry)}
    out = {}
    for entry_name, dtype, layout, repeat in job["cases"]:
        case = Case(entry_name, dtype, layout)
        op, entry = by_name[entry_name]
        args, kwargs = make(case, entry, job["numel"])
        out[case.label] = time_one(reference(entry.reference), args, kwargs, repeat)
    print(json.dumps(out))


def run_aten(ops: str, numel: int, threads: int, pending: list[tuple[Case, int]]) -> dict[str, float]:
    if not pending:
        return {}
    job = {"ops": ops, "numel": numel, "threads": threads,
           "cases": [(c.entry, c.dtype, c.layout, r) for c, r in pending]}
    env = {**os.environ, ATEN_ENV: "1"}
    proc = subprocess.run([sys.executable, __file__, "--aten-worker", json.dumps(job)], env=env,
                          capture_output=True, text=True, check=True)
    return json.loads(proc.stdout.splitlines()[-1])


def keep_freed_memory() -> None:
    """glibc only (elsewhere a no-op): M_MMAP_MAX 0, M_TRIM_THRESHOLD at its maximum."""
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):
        return
    M_TRIM_THRESHOLD, M_MMAP_MAX = -1, -4  # glibc's malloc.h
    mallopt(M_MMAP_MAX, 0)
    mallopt(M_TRIM_THRESHOLD, 2**31 - 1)


def geomean(xs: list[float]) -> float:
    return math.exp(sum(map(math.log, xs)) / len(xs)) if xs else float("nan")


def run(registry, selected: list[Case], numel: int, threads: int, repeat: int, budget: float) -> dict[str, tuple]:
    """{label: (mpsgen s, torch s)} for one thread setting; prints a row per case."""
    global CLOCK
    torch.set_num_threads(threads)
    CLOCK = time.thread_time if threads == 1 else time.perf_counter
    import mpsgen.ops  # noqa: F401

    ns = registry.namespace
    by_name = {e.qualified_name: (op, e) for op, e in entries(registry)}
    results, aten_pending = {}, []
    for case in selected:
        op, entry = by_name[case.entry]
        args, kwargs = make(case, entry, numel)
        ref = reference(entry.reference)
        try:
            ref(*args, **kwargs)
        except Exception as e:  # torch's CPU lacks the dtype: no figure to compare with
            print(f"{case.label:<48} torch: {type(e).__name__}: {str(e).splitlines()[0][:60]}", flush=True)
            continue
        if op.implements:
            theirs = time_one(ref, args, kwargs, repeat)
            aten_pending.append((case, repeat))
            results[case.label] = (None, theirs)
            continue
        mine = op_overload(ns, entry.qualified_name)
        results[case.label] = time_pair(mine, ref, args, kwargs, repeat, budget)
        m, t = results[case.label]
        print(f"{case.label:<48}{m * 1e3:10.2f}{t * 1e3:10.2f}{m / t:8.2f}", flush=True)
        del args, kwargs
    for label, m in run_aten(str(registry.path), numel, threads, aten_pending).items():
        t = results[label][1]
        results[label] = (m, t)
        print(f"{label:<48}{m * 1e3:10.2f}{t * 1e3:10.2f}{m / t:8.2f}", flush=True)
    return results


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    keep_freed_memory()
    if argv[:1] == ["--aten-worker"]:
        aten_worker(argv[1:])
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", default="", help="regex on entry names (add.Tensor, exp, ...)")
    parser.add_argument("--dtypes", default="", help="comma-separated torch names: float32,float16,bfloat16,int32")
    parser.add_argument("--layouts", default=",".join(LAYOUTS))
    parser.add_argument("--numel", type=float, default=1e7)
    parser.add_argument("--threads", default="1,all", help="comma-separated: numbers or `all`")
    parser.add_argument("--repeat", type=int, default=5, help="calls per side per case, at most")
    parser.add_argument("--budget", type=float, default=2.0, help="seconds per case, roughly")
    parser.add_argument("--registry", type=Path, default=ROOT / "ops.yaml")
    args = parser.parse_args(argv)
    registry = load(args.registry)
    selected = cases(registry, args.ops, [d for d in args.dtypes.split(",") if d], args.layouts.split(","))
    all_threads = torch.get_num_threads()
    numel = int(args.numel)
    summary = []
    for th in args.threads.split(","):
        threads = all_threads if th == "all" else int(th)
        print(f"\n== {len(selected)} cases, {numel:.0e} elements, {threads} thread(s) ==")
        print(f"{'case':<48}{'mpsgen ms':>10}{'torch ms':>10}{'ratio':>8}", flush=True)
        results = run(registry, selected, numel, threads, args.repeat, args.budget)
        ratios = {label: m / t for label, (m, t) in results.items()}
        worst = max(ratios, key=ratios.get) if ratios else "-"
        summary.append((threads, len(ratios), geomean(list(ratios.values())), worst, ratios.get(worst, float("nan")),
                        sum(r > 3 for r in ratios.values()), ratios))
    print(f"\n{'threads':>7} {'cases':>6} {'geomean':>8} {'> 3x':>5}  worst")
    for threads, n, g, worst, w, over, _ in summary:
        print(f"{threads:>7} {n:>6} {g:>8.2f} {over:>5}  {w:.2f} ({worst})")
    # geomean per dtype and per layout (the label's last two words)
    groups = sorted({word for *_, ratios in summary for label in ratios for word in label.split()[-2:]})
    print(f"\n{'geomean of':<12}" + "".join(f"{th:>9}t" for th, *_ in summary))
    for g in groups:
        cells = [geomean([r for label, r in ratios.items() if g in label.split()[-2:]]) for *_, ratios in summary]
        print(f"{g:<12}" + "".join(f"{c:>10.2f}" for c in cells))
    return 0


if __name__ == "__main__":
    sys.exit(main())
