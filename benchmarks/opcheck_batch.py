"""The AOT/dynamic-shape check of opcheck, once per structure class: traced one class at a time
(as torch.library.opcheck's test_aot_dispatch_dynamic does) against all of an (entry, dtype)'s
classes in one trace (mpsgen/opcheck.py).

    .venv/bin/python benchmarks/opcheck_batch.py [--cases 40] [--seed 2]

For --cases (entry, dtype) pairs of the shipped ops.yaml drawn with --seed, the OpInfo samples
the suite's test_fake.py uses (sample_inputs; floating and complex dtypes require grad), one
representative per structure class. Each pair is checked both ways, alternately (the order
flips each repeat, so load on a noisy machine falls on both); prints the seconds of each and
their ratio, and the number of classes. One intra-op thread, as each pytest-xdist worker.
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
from mpsgen.opcheck import _aot_dispatch_dynamic, structure  # noqa: E402
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
    seconds = {"one class per trace": 0.0, "all classes in one trace": 0.0}
    for i, (fn, first) in enumerate(chosen):
        ways = list(seconds)
        for way in (ways if i % 2 else ways[::-1]):
            start = time.perf_counter()
            if way == "one class per trace":
                for sample in first.values():
                    safe_aot_autograd_check(fn, sample.args, sample.kwargs, dynamic=True)
            else:
                _aot_dispatch_dynamic(first)
            seconds[way] += time.perf_counter() - start
    classes = sum(len(first) for _, first in chosen)
    print(f"{len(chosen)} (entry, dtype) pairs, {classes} structure classes")
    for way, s in seconds.items():
        print(f"{way:>26}: {s:6.2f} s")
    print(f"{'ratio':>26}: {seconds['all classes in one trace'] / seconds['one class per trace']:.2f}")


if __name__ == "__main__":
    main()
