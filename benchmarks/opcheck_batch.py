"""The AOT/dynamic-shape check of opcheck, once per structure class, four ways: one class per
trace or all of an (entry, dtype)'s classes in one trace (as mpsgen/opcheck.py batches them),
each with torch's clones (safe_aot_autograd_check, as torch.library.opcheck's
test_aot_dispatch_dynamic calls it: every input cloned) or as mpsgen/opcheck.py checks (only
the arguments the op writes are cloned).

    .venv/bin/python benchmarks/opcheck_batch.py [--cases 40] [--seed 2]

For --cases (entry, dtype) pairs of the shipped ops.yaml drawn with --seed, the OpInfo samples
the suite's test_fake.py uses (sample_inputs; floating and complex dtypes require grad), one
representative per structure class. Each pair is checked the four ways in turn (the order
rotates from pair to pair, so load on a noisy machine falls on all); prints the seconds of each,
their ratio to torch's way, and the number of classes. One intra-op thread, as each pytest-xdist worker.
"""
import argparse
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import torch  # noqa: E402
from torch.testing._internal.optests.generate_tests import safe_aot_autograd_check  # noqa: E402

import mpsgen.ops  # noqa: E402,F401  loads mpsgen's own ops
from mpsgen.codegen.registry.loader import load  # noqa: E402
from mpsgen.opcheck import _aot_dispatch_dynamic, aot_check, structure  # noqa: E402
from mpsgen.samples import TORCH_DTYPES, entry_params, op_overload, opinfo_samples  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent


def representatives(registry, entry, dtype) -> tuple:
    """The op, and {(op, class): sample} of the samples it computes without NaN."""
    fn = op_overload(registry.namespace, entry.qualified_name)
    grad = dtype.is_floating_point or dtype.is_complex
    first = {}
    for sample in opinfo_samples(entry.opinfo, entry_params(entry), "cpu", dtype, requires_grad=grad,
                                 reference_inputs=False):
        try:
            result = fn(*sample.args, **sample.kwargs)
        except Exception:
            continue
        if not bool(result.isnan().any()):
            first.setdefault((fn, structure(sample.args, sample.kwargs)), sample)
    return fn, first


def _torchs_clones_one_trace(fn, first: dict) -> None:
    """All classes in one trace through safe_aot_autograd_check, as mpsgen/opcheck.py did before
    it cloned only the arguments the op writes."""
    with torch._dynamo.config.patch(fake_tensor_cache_enabled=False):
        safe_aot_autograd_check(lambda *calls: [op(*a, **k) for op, a, k in calls],
                                tuple((fn, s.args, s.kwargs) for s in first.values()), {}, dynamic=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=40)
    parser.add_argument("--seed", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(1)
    registry = load(ROOT / "ops.yaml")
    pairs = [(entry, TORCH_DTYPES[r.input]) for op in registry.own_ops for entry in op.entries
             for r in op.registrations if TORCH_DTYPES[r.input] != torch.complex32]
    random.Random(args.seed).shuffle(pairs)
    chosen = []
    for entry, dtype in pairs:
        fn, first = representatives(registry, entry, dtype)
        if first:
            chosen.append((fn, first))
        if len(chosen) == args.cases:
            break
    torchs = "torch's clones, one class per trace"
    ways = {torchs: lambda fn, first: [safe_aot_autograd_check(fn, s.args, s.kwargs, dynamic=True)
                                       for s in first.values()],
            "torch's clones, one trace": _torchs_clones_one_trace,
            "one class per trace": lambda fn, first: [aot_check([(fn, s.args, s.kwargs)]) for s in first.values()],
            "one trace (mpsgen/opcheck.py)": lambda fn, first: _aot_dispatch_dynamic(first)}
    seconds = dict.fromkeys(ways, 0.0)
    for i, (fn, first) in enumerate(chosen):
        order = list(ways)
        for way in order[i % 4:] + order[:i % 4]:
            start = time.perf_counter()
            ways[way](fn, first)
            seconds[way] += time.perf_counter() - start
    classes = sum(len(first) for _, first in chosen)
    print(f"{len(chosen)} (entry, dtype) pairs, {classes} structure classes")
    for way, s in seconds.items():
        print(f"{way:>36}: {s:6.2f} s, {s / seconds[torchs]:.2f} of torch's")


if __name__ == "__main__":
    main()
