"""Time `python -m codegen generate` on a synthetic 1,000-op registry (issue 12).

    .venv/bin/python benchmarks/generate.py [--ops N] [--repeat R]

The registry clones the shipped ops.yaml's entries (functors, dtypes, derivatives,
overloads) under new names until it has N ops, in a temporary directory. Each figure
is the median wall time of R runs of the command line, as a user runs it:

- first: into a new output folder (every file rendered and written);
- unchanged: again, nothing changed (must write 0 files);
- one op edited: one functor changed (renders again, writes that op's files).

Targets (issue 12, 2 cores): first ≤ 1.0 s, unchanged ≤ 0.3 s with 0 files written.
"""
from __future__ import annotations

import argparse
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGETS = {"first": 1.0, "unchanged": 0.3}


def synthetic_registry(n_ops: int) -> str:
    """The shipped entries, cloned under names `<op>_k<i>` until there are n_ops ops. An
    `implements: aten` entry is kept once as it is; its clones are ops of the registry's own."""
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
            if "\n    implements: aten" in block:
                if k == 0:  # torch's own aten op, once: a clone's name is not aten's
                    out.append(block if block.endswith("\n") else block + "\n")
                    count += is_op
                    continue
                block = re.sub(r"(?m)^    (implements|replaces): \w+\n", "", block)
            new = f"{base}_k{k}"
            block = re.sub(rf"^(  - func: ){base}\b", rf"\g<1>{new}", block, count=1)
            # every kernel name of the entry (`kernel:`, str choices, functor structs) gets the suffix
            block = re.sub(r"(\bkernel:[ \t]*)(\w+)", rf"\1\2_k{k}", block)
            block = re.sub(r"\bchoices: \{[^}]*\}",
                           lambda m: re.sub(r"(:[ \t]*)(\w+)(?=[ \t]*[,}])", rf"\1\2_k{k}", m[0]), block)
            block = re.sub(r"(?m)^( +)choices:\n(?:\1  +[^\n]*\n)+",  # block-style choices: `None: div_true`
                           lambda m: re.sub(r"(?m)^( +[\w']+:[ \t]*)(\w+)$", rf"\1\2_k{k}", m[0]), block)
            block = re.sub(r"(?m)^(    given:\n(?:      [^\n]*\n)+)",  # `given:` values name kernels too
                           lambda m: re.sub(r"(?m)(:[ \t]*)(\w+)$", rf"\1\2_k{k}", m[0]), block)
            block = re.sub(r"\bstruct (\w+)_functor\b", rf"struct \1_k{k}_functor", block)
            block = re.sub(r"(:[ \t]+)([&*])(\w+)", rf"\1\2\3_k{k}", block)  # anchors are unique per file
            if "opinfo:" not in block:  # keep the OpInfo the clone's original uses
                block = block.replace("\n", f"\n    opinfo: {base}\n", 1)
            out.append(block if block.endswith("\n") else block + "\n")
            count += is_op
        k += 1
    assert len(ops) and count == n_ops
    return "".join(out)


def run(ops: Path, out: Path, root: Path = ROOT) -> tuple[float, str]:
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "codegen", "generate", "--ops", str(ops), "--out", str(out)],
                       cwd=root, capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if r.returncode:
        sys.exit(f"generate failed:\n{r.stderr}")
    return elapsed, r.stdout.strip()


def phases(ops: Path, tmp: Path, root: Path, repeat: int) -> str:
    """Where a first run's time goes: load, render, write (in a child process)."""
    code = f"""
import statistics, sys, time
from pathlib import Path
sys.path.insert(0, {str(root)!r})
t = {{"load": [], "render": [], "write": []}}
from mpsgen.codegen.registry import loader
from mpsgen.codegen.emit import render, writer
for i in range({repeat}):
    s = time.perf_counter(); registry = loader.load({str(ops)!r}); t["load"].append(time.perf_counter() - s)
    s = time.perf_counter(); files = render.render(registry); t["render"].append(time.perf_counter() - s)
    out = Path({str(tmp)!r}) / f"phase_{{i}}"
    s = time.perf_counter(); writer.apply(out, files, writer.plan(out, files)); t["write"].append(time.perf_counter() - s)
print(", ".join(f"{{k}} {{statistics.median(v):.3f}} s" for k, v in t.items()))
"""
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=root)
    return r.stdout.strip() or r.stderr.strip().splitlines()[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ops", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--root", type=Path, default=ROOT,
                        help="checkout whose codegen to time (e.g. another worktree, to compare)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        ops = Path(tmp) / "ops.yaml"
        text = synthetic_registry(args.ops)
        ops.write_text(text)
        print(f"registry: {args.ops} ops, {text.count(chr(10))} lines, {len(text) // 1024} KB; "
              f"{args.repeat} runs each; command: {sys.executable} -m codegen generate")
        figures: dict[str, tuple[float, str]] = {}

        times, report = [], ""
        for i in range(args.repeat):  # a new folder each time: no deletion of the last run's files
            out = Path(tmp) / f"generated_{i}"
            elapsed, report = run(ops, out, args.root)
            times.append(elapsed)
        figures["first"] = (statistics.median(times), report)

        times = []
        for _ in range(args.repeat):
            elapsed, report = run(ops, out, args.root)
            times.append(elapsed)
            if "wrote 0 file(s)" not in report:
                sys.exit(f"an unchanged registry wrote files: {report}")
        figures["unchanged"] = (statistics.median(times), report)

        times = []
        for i in range(args.repeat):
            ops.write_text(text.replace("return x;", f"return x; // edit {i}", 1)
                           if "return x;" in text else text.replace("inline", f"/* edit {i} */ inline", 1))
            elapsed, report = run(ops, out, args.root)
            times.append(elapsed)
        figures["one op edited"] = (statistics.median(times), report)

        print(f"{'phases':>14}: {phases(ops, Path(tmp), args.root, args.repeat)}  (in-process medians)")
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
