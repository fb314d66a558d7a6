"""Per-call overhead of generated ops on small CPU tensors, against torch's own ops.

    .venv/bin/python benchmarks/dispatch_overhead.py [--repeat 7] [--number 2000]

For a unary (exp), a binary (hypot), a binary-with-alpha (add.Tensor) and a ternary
(lerp.Tensor) op, each of the functional, out= and in-place variants is timed, called as
mpsgen.<op> against torch.<op> (or the Tensor method for in-place), on 16 float32
elements with 1 thread: with autograd enabled and no input requiring grad,
and under torch.inference_mode(). Then forward + backward of a small model of these
ops with requires_grad=True. Every row is against the same call of torch's own op,
measured in the same run: medians of --repeat repeats of --number calls each.
Targets (issue 13): ratio <= 1.5 with autograd enabled, <= 1.3 under inference_mode,
<= 1.5 for forward + backward.
"""
import argparse
import statistics
import sys
import timeit
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402

import mpsgen.ops  # loads mpsgen's own ops (the extension and generated/library.py)

OPS = torch.ops.mpsgen
N = 16


def paired(ours, theirs, number: int, repeat: int) -> tuple[float, float, float]:
    """Median µs per call of each, and the median of the per-repeat ratios: the two are
    timed alternately, so a burst of load on a noisy machine falls on both."""
    ours(), theirs()  # warm up: first-call lookups
    times = [(timeit.timeit(ours, number=number), timeit.timeit(theirs, number=number)) for _ in range(repeat)]
    med = lambda xs: statistics.median(xs) / number * 1e6  # noqa: E731
    return med([o for o, _ in times]), med([t for _, t in times]), statistics.median(o / t for o, t in times)


def cases():
    """(name, ours, torch's), each a no-argument call on fresh 16-element tensors."""
    x, y, z, out = (torch.rand(N) + 0.5 for _ in range(4))
    return [
        ("exp", lambda: mpsgen.exp(x), lambda: torch.exp(x)),
        ("exp out=", lambda: mpsgen.exp(x, out=out), lambda: torch.exp(x, out=out)),
        ("exp_", lambda: mpsgen.exp_(out), lambda: torch.exp_(out)),
        ("hypot", lambda: mpsgen.hypot(x, y), lambda: torch.hypot(x, y)),
        ("hypot out=", lambda: mpsgen.hypot(x, y, out=out), lambda: torch.hypot(x, y, out=out)),
        ("hypot_", lambda: mpsgen.hypot_(out, y), lambda: out.hypot_(y)),
        ("add (alpha)", lambda: mpsgen.add(x, y, alpha=2), lambda: torch.add(x, y, alpha=2)),
        ("add out= (alpha)", lambda: mpsgen.add(x, y, alpha=2, out=out), lambda: torch.add(x, y, alpha=2, out=out)),
        ("add_ (alpha)", lambda: mpsgen.add_(out, y, alpha=2), lambda: out.add_(y, alpha=2)),
        ("lerp", lambda: mpsgen.lerp(x, y, z), lambda: torch.lerp(x, y, z)),
        ("lerp out=", lambda: mpsgen.lerp(x, y, z, out=out), lambda: torch.lerp(x, y, z, out=out)),
        ("lerp_", lambda: mpsgen.lerp_(out, y, z), lambda: out.lerp_(y, z)),
        # the same op called through torch.ops, against torch's own through torch.ops
        ("torch.ops...hypot", lambda: OPS.hypot(x, y), lambda: torch.ops.aten.hypot(x, y)),
    ]


def model_step(ours: bool, x, w, b):
    """Forward and backward of exp(hypot(x, w)) + 2 b, lerped towards w by x."""
    ns = mpsgen if ours else torch
    h = ns.add(ns.exp(ns.hypot(x, w)), b, alpha=2)
    ns.lerp(h, w, x).sum().backward()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--number", type=int, default=2000)
    args = parser.parse_args()
    torch.set_num_threads(1)
    rows = []
    for name, ours, theirs in cases():
        rows.append((name, "autograd enabled", *paired(ours, theirs, args.number, args.repeat)))
    with torch.inference_mode():
        for name, ours, theirs in cases():
            rows.append((name, "inference_mode", *paired(ours, theirs, args.number, args.repeat)))
    x, w, b = (torch.rand(N, requires_grad=True) for _ in range(3))
    rows.append(("model: 4 ops, forward + backward", "requires_grad",
                 *paired(lambda: model_step(True, x, w, b), lambda: model_step(False, x, w, b),
                         max(1, args.number // 10), args.repeat)))
    print(f"{N} float32 elements, 1 thread; medians of {args.repeat} x {args.number} calls, in µs;")
    print("ratio: the median of the per-repeat ratios (mpsgen and torch timed alternately)")
    print(f"{'call':34} {'mode':17} {'mpsgen':>8} {'torch':>8} {'ratio':>6}")
    for name, mode, ours, theirs, ratio in rows:
        print(f"{name:34} {mode:17} {ours:8.2f} {theirs:8.2f} {ratio:6.2f}")
    for mode in ("autograd enabled", "inference_mode", "requires_grad"):
        ratios = [r for name, m, _, _, r in rows if m == mode and not name.startswith("torch.ops")]
        print(f"{mode}: worst ratio {max(ratios):.2f}, geomean {statistics.geometric_mean(ratios):.2f}")


if __name__ == "__main__":
    main()
