"""The main job: run every op of ops.yaml on sample tensors against its torch reference.

    python -m mpsgen.report [--quick]

Prints one row per (op, registered dtype, device): how many samples matched the
torch reference within dtype tolerances, and the largest absolute error; then
how many (op, dtype, sample) cases matched per op. Exits 1 if any sample
mismatched, other than the ones an xfail in ops.yaml names.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

import mpsgen  # noqa: F401  (loads the extension)
from codegen.loader import load
from mpsgen.samples import (MATCH, MISMATCH, TORCH_DTYPES, UNSUPPORTED, compare, devices, entry_params, op_overload,
                            reference, registered_dtypes, registered_outputs, samples)

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mpsgen.report", description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=Path, default=ROOT / "ops.yaml")
    parser.add_argument("--quick", action="store_true", help="skip the large (1M-element) samples")
    args = parser.parse_args(argv)
    registry = load(args.ops)
    start = time.perf_counter()
    header = f"{'op':<18}{'dtype':<11}{'device':<8}{'matched':>10}{'max error':>12}  where it differs"
    print(header)
    print("-" * len(header))
    per_op: dict[str, list[int]] = {}  # name -> [matched, compared, xfailed, unsupported]
    for op in registry.ops:
        for entry in op.entries:
            fn, ref = op_overload(registry.namespace, entry.qualified_name), reference(entry.reference)
            xfails = {x.dtype: x for x in entry.xfails}
            counts = per_op.setdefault(entry.qualified_name, [0, 0, 0, 0])
            for r in op.registrations:
                dtype, xfail = TORCH_DTYPES[r.input], xfails.get(r.input)
                for device in devices():
                    matched = compared = 0
                    worst, where = 0.0, []
                    for sample in samples(entry.opinfo, entry_params(entry), device, dtype, registered_dtypes(op),
                                          large=not args.quick):
                        status, err, _ = compare(fn, ref, sample, registered_outputs(op))
                        counts[3] += status == UNSUPPORTED
                        if status not in (MATCH, MISMATCH):
                            continue
                        if status == MISMATCH and xfail and (not xfail.samples or sample.name in xfail.samples):
                            counts[2] += 1  # expected to differ: ops.yaml says why
                            where.append(f"{sample.name} (xfail)")
                            continue
                        compared += 1
                        matched += status == MATCH
                        worst = max(worst, err)
                        if status == MISMATCH:
                            where.append(sample.name)
                    counts[0] += matched
                    counts[1] += compared
                    print(f"{entry.qualified_name:<18}{str(dtype)[6:]:<11}{device:<8}{f'{matched}/{compared}':>10}"
                          f"{worst:>12.3g}  {', '.join(where[:4])}")
    print(f"\n{'op':<18}{'matched':>14}{'xfailed':>9}{'unsupported':>13}   (op, dtype, sample) cases")
    for name, (matched, compared, xfailed, unsupported) in per_op.items():
        print(f"{name:<18}{f'{matched}/{compared}':>14}{xfailed:>9}{unsupported:>13}")
    total = sum(c[1] for c in per_op.values())
    bad = total - sum(c[0] for c in per_op.values())
    print(f"\n{len(registry.ops)} ops ({len(per_op)} entries with overloads), {total} (op, dtype, sample) cases: "
          f"{total - bad} matched, {bad} differ, {sum(c[2] for c in per_op.values())} xfailed as ops.yaml says "
          f"({time.perf_counter() - start:.1f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
