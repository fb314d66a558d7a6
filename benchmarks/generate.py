"""Time `python -m codegen generate` on a synthetic 1,000-op registry (issue 12).

    .venv/bin/python benchmarks/generate.py [--ops N] [--repeat R]

The registry clones the shipped ops.yaml's entries (functors, dtypes, derivatives,
overloads) under new names until it has N ops, in a temporary directory. Each figure
is the median wall time of R runs of the command line, as a user runs it:

- first: into an empty output folder (every file rendered and written);
- unchanged: again, nothing changed (must write 0 files);
- one op edited: one functor changed (renders again, writes that op's files).

Targets (issue 12, 2 cores): first ≤ 1.0 s, unchanged ≤ 0.3 s with 0 files written.
"""
from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"first": 1.0, "unchanged": 0.3}


def synthetic_registry(n_ops: int) -> str:
    """The shipped entries, cloned under names `<op>_k<i>` until there are n_ops ops."""
    text = (ROOT / "ops.yaml").read_text()
    head, _, body = text.partition("\nops:\n")
    blocks = re.split(r"(?m)^(?=  - func: )", body)
    entries = [b for b in blocks if b.startswith("  - func: ")]
    ops = [b for b in entries if "functor:" in b]
    out, count, k = [head, "\nops:\n"], 0, 0
    while count < n_ops:
        for block in entries:
            base = re.match(r"  - func: (\w+)", block).group(1)
            is_op = "functor:" in block
            if is_op and count >= n_ops:
                break
            new = f"{base}_k{k}"
            block = re.sub(rf"^(  - func: ){base}\b", rf"\g<1>{new}", block, count=1)
            block = re.sub(rf"\bstruct {base}_functor\b", f"struct {new}_functor", block)
            block = re.sub(r"(:[ \t]+)([&*])(\w+)", rf"\1\2\3_k{k}", block)  # anchors are unique per file
            if "opinfo:" not in block:  # keep the OpInfo the clone's original uses
                block = block.replace("\n", f"\n    opinfo: {base}\n", 1)
            out.append(block if block.endswith("\n") else block + "\n")
            count += is_op
        k += 1
    assert len(ops) and count == n_ops
    return "".join(out)


def run(ops: Path, out: Path) -> tuple[float, str]:
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "codegen", "generate", "--ops", str(ops), "--out", str(out)],
                       cwd=ROOT, capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if r.returncode:
        sys.exit(f"generate failed:\n{r.stderr}")
    return elapsed, r.stdout.strip()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ops, out = Path(tmp) / "ops.yaml", Path(tmp) / "generated"
        text = synthetic_registry(args.ops)
        ops.write_text(text)
        print(f"registry: {args.ops} ops, {text.count(chr(10))} lines, {len(text) // 1024} KB; "
              f"{args.repeat} runs each; command: {sys.executable} -m codegen generate")
        figures: dict[str, tuple[float, str]] = {}

        times, report = [], ""
        for _ in range(args.repeat):
            shutil.rmtree(out, ignore_errors=True)
            elapsed, report = run(ops, out)
            times.append(elapsed)
        figures["first"] = (statistics.median(times), report)

        times = []
        for _ in range(args.repeat):
            elapsed, report = run(ops, out)
            times.append(elapsed)
            if "wrote 0 file(s)" not in report:
                sys.exit(f"an unchanged registry wrote files: {report}")
        figures["unchanged"] = (statistics.median(times), report)

        times = []
        for i in range(args.repeat):
            ops.write_text(text.replace("return x;", f"return x; // edit {i}", 1)
                           if "return x;" in text else text.replace("inline", f"/* edit {i} */ inline", 1))
            elapsed, report = run(ops, out)
            times.append(elapsed)
        figures["one op edited"] = (statistics.median(times), report)

        failed = False
        for name, (seconds, report) in figures.items():
            target = TARGETS.get(name)
            verdict = "" if target is None else (f"  target ≤ {target:.1f} s: "
                                                 f"{'ok' if seconds <= target else 'MISSED'}")
            failed |= target is not None and seconds > target
            print(f"{name:>14}: {seconds:6.3f} s  ({report}){verdict}")
        sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
