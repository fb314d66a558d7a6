"""A longer run of the registry fuzz of tests/test_fuzz_registry.py.

    .venv/bin/python benchmarks/fuzz_registry.py [--seconds 600] [--seed N] [--seeds K]

Runs K seeds (N, N+1, ...) for --seconds each, and stops at the first failure, which
it saves as <work>/failing.yaml and prints (exit 1). The suite's test runs one seed for
FUZZ_SECONDS (35 by default).
"""
from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))

import test_fuzz_registry as fz  # noqa: E402


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=600)
    parser.add_argument("--seed", type=int, default=fz.FUZZ_SEED)
    parser.add_argument("--seeds", type=int, default=1)
    parser.add_argument("--work", type=Path, default=None, help="where to keep the failing mutant")
    args = parser.parse_args()
    work = args.work or Path(tempfile.mkdtemp(prefix="mpsgen-fuzz-"))
    total = {"accepted": 0, "rejected": 0}
    for seed in range(args.seed, args.seed + args.seeds):
        try:
            counts = fz.fuzz(args.seconds, seed, work)
        except fz.FuzzFailure as e:
            print(f"FAILED: {e}", file=sys.stderr)
            return 1
        for k, v in counts.items():
            total[k] += v
    print(f"total: {total}; no raw traceback, every error located, output unchanged after each rejection")
    return 0


if __name__ == "__main__":
    sys.exit(main())
