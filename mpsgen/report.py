"""The main job: run every op of ops.yaml on sample tensors against its torch reference.

    python -m mpsgen.report [--quick]

Prints one row per (op, registered dtype, device): how many samples matched the
torch reference within dtype tolerances, and the largest absolute error.
Exits 1 if any sample mismatched.
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import torch

import mpsgen  # noqa: F401  (loads the extension)
from codegen.loader import load
from mpsgen.samples import MATCH, MISMATCH, TORCH_DTYPES, compare, devices, reference, samples

ROOT = Path(__file__).resolve().parent.parent


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m mpsgen.report", description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=Path, default=ROOT / "ops.yaml")
    parser.add_argument("--quick", action="store_true", help="skip the large (1M-element) samples")
    args = parser.parse_args(argv)
    registry = load(args.ops)
    ops = getattr(torch.ops, registry.namespace)
    start = time.perf_counter()
    header = f"{'op':<14}{'dtype':<10}{'device':<8}{'matched':>10}{'max error':>12}  where it differs"
    print(header)
    print("-" * len(header))
    total = bad = 0
    for op in registry.ops:
        fn, ref = getattr(ops, op.name), reference(op.reference)
        for r in op.registrations:
            dtype = TORCH_DTYPES[r.input]
            for device in devices():
                matched = compared = 0
                worst, where = 0.0, []
                for sample in samples(op.opinfo, len(op.input_names), device, dtype, large=not args.quick):
                    status, err, _ = compare(fn, ref, sample.args)
                    if status in (MATCH, MISMATCH):
                        compared += 1
                        matched += status == MATCH
                        worst = max(worst, err)
                    if status == MISMATCH:
                        where.append(sample.name)
                total += compared
                bad += compared - matched
                print(f"{op.name:<14}{str(dtype)[6:]:<10}{device:<8}{f'{matched}/{compared}':>10}"
                      f"{worst:>12.3g}  {', '.join(where[:4])}")
    print(f"\n{len(registry.ops)} ops, {total} (op, dtype, sample) cases: {total - bad} matched, "
          f"{bad} differ ({time.perf_counter() - start:.1f} s)")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
