"""The main job: run every op of ops.yaml on sample tensors against its torch reference.

    python -m mpsgen.report [--quick] [OP ...]      (mpsgen test [OP ...] in a project)

Prints one row per (op, registered dtype, device): how many samples matched the
torch reference within dtype tolerances, how many differed as an xfail in ops.yaml says
they do, the worst error as a fraction of its tolerance
(assert_close's atol + rtol * |expected|: at most 1 where every sample matched), how many
samples were compared against a widened oracle (torch's CPU lacks the dtype, so
the reference ran in a wider one and was cast back), how many had no torch
result, and how many OpInfo samples bound to the entry's schema. Then, per op,
the (op, dtype, sample) totals, the OpInfo samples dropped with the reason,
the samples with no torch result with the reason, and the samples that used a
widened oracle, and the warnings raised while the rows ran, each once. Exits 1 if any sample mismatched (other than the ones an xfail
in ops.yaml names), if no sample ran a registered dtype's own kernel, or if a
row could not be run at all.

Kernel entries (ops.yaml `compute:`) have rows too, on their `samples:` and OpInfo's
(mpsgen/compute_harness.py); their variants, opcheck, torch.compile and gradients are checked
by tests/test_ops.py.

Entries that implement aten ops (`implements: aten`) run their CPU rows in one
subprocess that registers their kernels for torch's own aten ops
(MPSGEN_ATEN_CPU_OVERRIDES=1, mpsgen/aten_overrides.py), on the samples without the
large ones; torch's op in this process is the oracle. Their out= and in-place
variants and opcheck are checked by tests/test_aten_overrides.py.
"""
from __future__ import annotations

import argparse
import sys
import time
import traceback
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path


import importlib

from mpsgen.codegen.registry.loader import load
from mpsgen import compute_harness
from mpsgen.aten_overrides import ENV as ATEN_ENV, row, run_cached
from mpsgen.samples import (MATCH, MISMATCH, NO_REFERENCE, TORCH_DTYPES, UNSUPPORTED, compare, devices,
                            entry_registrations, kernel_input_type, reference, registered_outputs, tolerance)

ROOT = Path(__file__).resolve().parent.parent


@dataclass
class Totals:
    """(op, dtype, sample) cases of one entry, over its dtypes and devices."""

    matched: int = 0
    compared: int = 0
    xfailed: int = 0
    unsupported: int = 0
    no_reference: int = 0
    widened: int = 0
    bound: int = 0
    dropped: int = 0
    errors: int = 0  # rows that could not run, and dtypes whose own kernel never ran
    drop_reasons: Counter = field(default_factory=Counter)
    no_ref_reasons: Counter = field(default_factory=Counter)
    widened_rows: list = field(default_factory=list)  # (dtype, device, [(sample, oracle)])
    problems: list = field(default_factory=list)


def _first_line(text: str, limit: int = 160) -> str:
    line = text.splitlines()[0] if text else ""
    return line if len(line) <= limit else line[:limit - 3] + "..."


@dataclass
class Row:
    """One (entry, dtype, device): its samples, the op that runs them (its launch log, or the
    override subprocess's replay), and how they are compared."""
    name: str  # the op's kernel name (host_name <name>_<dtype>)
    qualified_name: str
    found: list
    traced: object
    dropped: list
    registered: set  # the result dtypes it registers (torch's names)
    tol: dict | None = None
    dtype_defaults: tuple = ()


def entry_row(registry, op, entry, r, device, large) -> Row:
    """A functor entry's row; an aten entry's CPU row runs in the override subprocess
    (mpsgen/aten_overrides.py)."""
    dropped: list = []
    found, traced = row(registry, op, entry, r.input, device, large=large, dropped=dropped)
    return Row(op.name, entry.qualified_name, found, traced, dropped, registered_outputs(op), tolerance(op, r.input),
               op.dtype_defaults)


def compute_row(registry, op, metal_dtype, device) -> Row:
    """A kernel entry's row (mpsgen/compute_harness.py): its `samples:` and OpInfo's."""
    case = run_cached(str(Path(registry.path).resolve()))[(op.qualified_name, metal_dtype)] if op.implements else None
    dropped: list = []
    found, traced = compute_harness.row(registry, op, metal_dtype, device, case, dropped)
    return Row(op.name, op.qualified_name, found, traced, dropped, {str(TORCH_DTYPES[t])[6:] for t in op.dtypes})


def run_row(ref, row_: Row, metal_dtype, device, xfail, t: Totals) -> tuple[str, str]:
    """One (entry, dtype, device) row: updates t; returns (counts text, where it differs)."""
    dtype = TORCH_DTYPES[metal_dtype]
    found, traced, dropped = row_.found, row_.traced, row_.dropped
    bound = sum(s.name.startswith(("opinfo[", "reference[")) for s in found)
    t.bound += bound
    t.dropped += len(dropped)
    t.drop_reasons.update(reason for _, reason in dropped)
    matched = compared = no_ref = xfailed = 0
    worst, where, widened, ran_own, refusals = 0.0, [], [], False, Counter()
    for sample in found:
        c = compare(traced, ref, sample, row_.registered, row_.tol, row_.dtype_defaults)
        t.unsupported += c.status == UNSUPPORTED
        if c.status == NO_REFERENCE:
            no_ref += 1
            t.no_ref_reasons[c.message] += 1
            refusals[c.message] += 1
            continue
        if c.status not in (MATCH, MISMATCH):
            continue
        if c.oracle:
            widened.append((sample.name, c.oracle))
        ran_own |= any(kernel_input_type(k, row_.name) == metal_dtype for k in traced.last)
        if c.status == MISMATCH and xfail and (not xfail.samples or sample.name in xfail.samples):
            t.xfailed += 1  # expected to differ: ops.yaml says why
            xfailed += 1
            where.append(f"{sample.name} (xfail)")
            continue
        compared += 1
        matched += c.status == MATCH
        worst = max(worst, c.of_tolerance)
        if c.status == MISMATCH:
            where.append(sample.name)
    if device == "cpu" and not ran_own:
        # the CPU executor's launch log: no compared sample selected this dtype's kernel
        t.errors += 1
        if found and no_ref == len(found):  # torch refuses every sample: nothing to compare with
            reason = _first_line(refusals.most_common(1)[0][0], 100)
            where.insert(0, f"torch refuses every {str(dtype)[6:]} input")
            t.problems.append(f"{row_.qualified_name} {str(dtype)[6:]}: torch refuses every {str(dtype)[6:]} "
                              f"input (\"{reason}\"), so no sample could check the kernel this entry registers for "
                              f"it: register the dtypes torch computes")
        else:
            where.insert(0, f"no sample ran a {metal_dtype} kernel")
            t.problems.append(f"{row_.qualified_name} {str(dtype)[6:]}: no compared sample ran a kernel "
                              f"instantiated for {metal_dtype}")
    t.matched += matched
    t.compared += compared
    t.no_reference += no_ref
    t.widened += len(widened)
    if widened:
        t.widened_rows.append((str(dtype)[6:], device, widened))
    counts = (f"{f'{matched}/{compared}':>10}{xfailed:>8}{worst:>12.2g}{len(widened):>9}{no_ref:>8}"
              f"{f'{bound}/{bound + len(dropped)}':>9}")
    return counts, ", ".join(where[:4]) + (f" (+{len(where) - 4})" if len(where) > 4 else "")


def _print_row(name, metal_dtype, device, w, dtypes, t: Totals, ref, xfail, make_row) -> None:
    """Runs and prints one row, or the error that kept it from running."""
    dtype = str(TORCH_DTYPES[metal_dtype])[6:]
    if dtypes and dtype not in dtypes:
        return
    label = f"{name:<{w}}{dtype:<11}{device:<8}"
    try:
        counts, where = run_row(ref, make_row(), metal_dtype, device, xfail, t)
    except Exception as e:  # report the row and go on
        t.errors += 1
        where = traceback.format_exception_only(type(e), e)[-1].strip()
        t.problems.append(f"{name} {dtype} {device}: {_first_line(where)}")
        print(f"{label}  error: {_first_line(where)}")
        return
    print(f"{label}{counts}  {where}", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mpsgen.report", description=__doc__.splitlines()[0])
    parser.add_argument("only", nargs="*", metavar="OP", help="these ops only (default: every op)")
    parser.add_argument("--ops", type=Path, default=ROOT / "ops.yaml")
    parser.add_argument("--loads", default="mpsgen.ops", help="the module whose import loads the ops "
                        "(default: mpsgen.ops, mpsgen's own)")
    parser.add_argument("--quick", action="store_true", help="skip the large samples")
    parser.add_argument("--dtypes", nargs="+", metavar="DTYPE", default=(),
                        help="these input dtypes only, by torch's names (float32 bfloat16 ...)")
    args = parser.parse_args(argv)
    named = {str(d).removeprefix("torch.") for d in TORCH_DTYPES.values()}
    if set(args.dtypes) - named:
        print(f"no dtype {', '.join(sorted(set(args.dtypes) - named))}; dtypes: {', '.join(sorted(named))}",
              file=sys.stderr)
        return 2
    registry = load(args.ops)
    known = {op.name for op in registry.ops} | {e.qualified_name for op in registry.ops for e in op.entries} \
        | {n for op in registry.compute_ops for n in (op.qualified_name, op.qualified_name.split(".")[0])}
    unknown = [name for name in args.only if name not in known]
    if unknown:
        import difflib

        for name in unknown:
            close = difflib.get_close_matches(name, sorted(known), n=3)
            print(f"{args.ops}: no op {name!r}" + (f" (close: {', '.join(close)})" if close else ""), file=sys.stderr)
        return 2
    importlib.import_module(args.loads)
    start = time.perf_counter()
    selected = [(op, entry) for op in registry.ops for entry in op.entries
                if not args.only or op.name in args.only or entry.qualified_name in args.only]
    kernels = [op for op in registry.compute_ops
               if not args.only or {op.qualified_name, op.qualified_name.split(".")[0]} & set(args.only)]
    w = max([18, *(len(entry.qualified_name) + 2 for _, entry in selected),
             *(len(op.qualified_name) + 2 for op in kernels)])  # the op column fits every name
    header = (f"{'op':<{w}}{'dtype':<11}{'device':<8}{'matched':>10}{'xfailed':>8}{'error/tol':>12}{'widened':>9}"
              f"{'no-ref':>8}{'opinfo':>9}  where it differs")
    print(header)
    print("-" * len(header))
    per_op: dict[str, Totals] = {}
    # recorded under the filters in force (Python's default shows each once), listed at the end, not amid the rows
    with warnings.catch_warnings(record=True) as caught:
        for op, entry in selected:
            t = per_op.setdefault(entry.qualified_name, Totals())
            try:
                ref = reference(entry.reference)
            except Exception as e:
                t.errors += 1
                t.problems.append(f"{entry.qualified_name}: {type(e).__name__}: {_first_line(str(e))}")
                print(f"{entry.qualified_name:<{w}}{'-':<11}{'-':<8}  error: {type(e).__name__}: {_first_line(str(e))}")
                continue
            xfails = {x.dtype: x for x in entry.xfails}
            for r in entry_registrations(op, entry):
                for device in devices():
                    _print_row(entry.qualified_name, r.input, device, w, args.dtypes, t, ref, xfails.get(r.input),
                               lambda: entry_row(registry, op, entry, r, device, not args.quick))
        for op in kernels:  # kernel entries (ops.yaml `compute:`)
            t = per_op.setdefault(op.qualified_name, Totals())
            ref = reference(op.reference)
            for metal_dtype in op.dtypes:
                for device in devices():
                    _print_row(op.qualified_name, metal_dtype, device, w, args.dtypes, t, ref, None,
                               lambda: compute_row(registry, op, metal_dtype, device))

    print(f"\n{'op':<{w}}{'matched':>14}{'xfailed':>9}{'unsupported':>13}{'widened':>9}{'no-ref':>8}"
          f"{'opinfo bound':>14}{'dropped':>9}   (op, dtype, sample) cases")
    for name, t in per_op.items():
        print(f"{name:<{w}}{f'{t.matched}/{t.compared}':>14}{t.xfailed:>9}{t.unsupported:>13}{t.widened:>9}"
              f"{t.no_reference:>8}{t.bound:>14}{t.dropped:>9}")

    if any(t.dropped for t in per_op.values()):
        print("\nOpInfo samples dropped, per op (over its dtypes and devices):")
        for name, t in per_op.items():
            for reason, n in sorted(t.drop_reasons.items(), key=lambda kv: -kv[1]):
                print(f"  {name}: {n} x {reason}")
    if any(t.no_reference for t in per_op.values()):
        print("\nSamples with no torch result (torch rejects the input), per op:")
        for name, t in per_op.items():
            for reason, n in sorted(t.no_ref_reasons.items(), key=lambda kv: -kv[1]):
                print(f"  {name}: {n} x {_first_line(reason)}")
    if any(t.widened_rows for t in per_op.values()):
        print("\nSamples compared against a widened oracle (torch's CPU lacks the dtype: the reference "
              "ran in a wider dtype, cast back, narrow-dtype tolerances):")
        for name, t in per_op.items():
            for dtype, device, widened in t.widened_rows:
                by_oracle: dict[str, list[str]] = {}
                for sample, oracle in widened:
                    by_oracle.setdefault(oracle, []).append(sample)
                for oracle, names in by_oracle.items():
                    print(f"  {name} {dtype} {device} ({oracle}): {len(names)}: {', '.join(names)}")
    ran_aten = [o for o in [*registry.aten_ops, *(k for k in registry.compute_ops if k.implements)]
                if o.qualified_name in per_op]  # the ops this run selected
    if ran_aten:
        names = ", ".join(o.qualified_name for o in ran_aten)
        print(f"\n{len(ran_aten)} entries implement aten ops ({names}): "
              "their CPU rows ran torch's own aten op with our kernels registered for it, in a subprocess "
              f"({ATEN_ENV}=1, mpsgen/aten_overrides.py), on the samples without the large ones, against "
              "torch's CPU op in this process; their out=, in-place, refusals and opcheck are checked by "
              "tests/test_aten_overrides.py (functor entries) and tests/test_ops.py (kernel entries)")
    distinct = dict.fromkeys(f"{warning.filename.rpartition('site-packages/')[2]}:{warning.lineno}: "
                             f"{warning.category.__name__}: {_first_line(str(warning.message), 300)}"
                             for warning in caught)
    if distinct:
        print("\nWarnings raised while the rows ran (each once):")
        for text in distinct:
            print(f"  {text}")
    problems = [p for t in per_op.values() for p in t.problems]
    if problems:
        print("\nProblems:")
        for p in problems:
            print(f"  {p}")

    total = sum(t.compared for t in per_op.values())
    bad = total - sum(t.matched for t in per_op.values())
    errors = sum(t.errors for t in per_op.values())
    n_ops = len({name.split(".")[0] for name in per_op}) if args.only else len(registry.ops) + len(registry.compute_ops)
    print(f"\n{n_ops} ops ({len(per_op)} entries with overloads), {total} (op, dtype, sample) cases: "
          f"{total - bad} matched, {bad} differ, {sum(t.xfailed for t in per_op.values())} xfailed as ops.yaml says, "
          f"{sum(t.widened for t in per_op.values())} against a widened oracle, "
          f"{sum(t.no_reference for t in per_op.values())} with no torch result, "
          f"{sum(t.dropped for t in per_op.values())} OpInfo samples dropped; {errors} problem(s) "
          f"({time.perf_counter() - start:.1f} s)")
    return 1 if bad or errors else 0


if __name__ == "__main__":
    sys.exit(main())
