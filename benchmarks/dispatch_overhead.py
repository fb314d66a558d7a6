"""Per-call overhead of a generated op on small CPU tensors, against torch's own op.

    .venv/bin/python benchmarks/dispatch_overhead.py

A generated op's autograd registration (torch.library.register_autograd) and the
out=/in-place autograd kernels are Python, so every eager call with autograd
active passes through Python. torch.inference_mode() skips the autograd key and
shows the C++ path alone. Prints medians of 7 repeats and ratios against
torch.hypot measured in the same run.
"""
import statistics
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import mpsgen  # noqa: E402,F401

NUMBER, REPEAT = 2000, 7


def median_us(fn) -> float:
    return statistics.median(timeit.repeat(fn, number=NUMBER, repeat=REPEAT)) / NUMBER * 1e6


def main() -> None:
    torch.set_num_threads(1)
    ops = torch.ops.mpsgen
    x, y, out = torch.randn(16), torch.randn(16), torch.empty(16)
    rows = [
        ("torch.hypot (baseline)", lambda: torch.hypot(x, y)),
        ("mpsgen.hypot", lambda: ops.hypot(x, y)),
        ("mpsgen.hypot.out", lambda: ops.hypot.out(x, y, out=out)),
        ("mpsgen.hypot_", lambda: ops.hypot_(out, y)),
    ]
    results = [(name, median_us(fn)) for name, fn in rows]
    with torch.inference_mode():
        xi, yi = torch.randn(16), torch.randn(16)
        results.append(("mpsgen.hypot, inference_mode", median_us(lambda: ops.hypot(xi, yi))))
    base = results[0][1]
    print(f"{'call (16 float32 elements)':34} {'median us':>10} {'vs torch':>9}")
    for name, us in results:
        print(f"{name:34} {us:10.1f} {us / base:8.1f}x")


if __name__ == "__main__":
    main()
