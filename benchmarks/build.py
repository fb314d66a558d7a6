"""Time the edit → build loop (issue 12): `.venv/bin/python benchmarks/build.py [--extra-ops M]`

Each figure is the wall time of the build command (docs/build.md) as a user runs it
(`python setup.py --quiet build_ext --inplace`, MAX_JOBS = every core), in a temporary
copy of this checkout, so the checkout's own build is left alone:

- clean: the shipped ops.yaml, from nothing, with an empty object cache (target ≤ 60 s + 2 s
  per op);
- clean, second copy: the same in another copy, its units from the object cache that the
  first filled (codegen/objcache.py: a second clone, a scratch copy);
- nothing changed: the same again (target ≤ 3 s, and ninja has no work);
- one functor edited: a line added to a functor in the middle of ops.yaml, which moves
  every op after it to other lines (target ≤ 10 s, compiling only that op's kernels and
  the small table of op specs that holds each op's line); then, the same two units from the
  object cache, the edit undone (built without setuptools and torch: codegen/uptodate.py)
  and made again through setuptools and torch (the stamp removed);
- slowest unit: the shipped ops plus a functor shaped like torch's mish_backward, whose unit
  once took 270 s alone; the longest compile step of that build (target ≤ 60 s);
- clean, larger: the shipped ops plus M clones of them (benchmarks/generate.py's synthetic
  registry), with an empty object cache; seconds per added op = (larger - clean) / M (target
  ≤ 2 s). Beside it, the CPU seconds per added op over the cores: two builds' wall times
  move with the machine's speed between them (±10 % seen from one clean build to the next),
  so with a few extra ops the wall figure is mostly noise; use the default M.

Each build's object cache is a folder of this run's own (MPSGEN_OBJECT_CACHE_DIR), so the
machine's cache neither helps nor changes. The first line names the CPU and the CPU kernel
variants the builds compile (MPSGEN_CPU_VARIANTS; `avx2` on a machine with AVX-512 compiles
what a machine without it compiles by default).

The machine is shared and noisy: run it on an idle machine, and quote the figures with
the command.
"""
from __future__ import annotations

import argparse
import os
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
from mpsgen.codegen.build import cpu_variants  # noqa: E402
from mpsgen.codegen.registry.loader import load  # noqa: E402
from mpsgen.codegen.uptodate import STAMP  # noqa: E402
from generate import synthetic_registry  # noqa: E402
from project import cpu  # noqa: E402

COPIED = ["codegen", "support", "templates", "mpsgen", "setup.py", "pyproject.toml", "ops.yaml"]
STEP = re.compile(r"\[\d+/\d+\] \S+ (\S+)")


def copy_checkout(dest: Path) -> None:
    ignore = shutil.ignore_patterns("*.so", "__pycache__", "*.pyc")
    for name in COPIED:
        src = ROOT / name
        if src.is_dir():
            shutil.copytree(src, dest / name, ignore=ignore)
        else:
            shutil.copy2(src, dest / name)


def cpu_seconds() -> float:
    """User and system time of this process's finished children and theirs (the compilers)."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def build(where: Path, objects: Path) -> tuple[float, str, float]:
    """One build: its wall seconds, its output and its CPU seconds."""
    env = {**os.environ, "MAX_JOBS": str(os.cpu_count() or 1), "MPSGEN_OBJECT_CACHE_DIR": str(objects)}
    t, cpu0 = time.perf_counter(), cpu_seconds()
    r = subprocess.run([sys.executable, "setup.py", "--quiet", "build_ext", "--inplace"],
                       cwd=where, env=env, capture_output=True, text=True)
    elapsed = time.perf_counter() - t
    if r.returncode:
        sys.exit(f"build failed in {where}:\n{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return elapsed, r.stdout, cpu_seconds() - cpu0


# A functor shaped like torch's mish_backward (tanh(log1p(exp(x))) and a sigmoid): at clang's
# inline threshold 1000 its unit took 270 s to compile (codegen/objcache.py bounds it). The
# shipped mish_backward computes the same from one exp, and compiles in seconds.
STEEP_OP = """
  - func: mish_backward_nested(Tensor grad_output, Tensor self) -> Tensor
    dtypes: [float]
    reference: torch.ops.aten.mish_backward
    opinfo: null
    functor: |
      template <typename T>
      inline T operator()(const T grad_output, const T x) {
        const auto v = static_cast<opmath_t<T>>(x);
        const auto t = precise::tanh(c10::metal::log1p(precise::exp(v)));
        const auto s = 1 / (1 + precise::exp(-v));
        return static_cast<T>(static_cast<opmath_t<T>>(grad_output) * (t + v * s * (1 - t * t)));
      }
"""


def slowest_unit(where: Path) -> tuple[str, float]:
    """The unit whose compile step took longest in the last build (ninja's log)."""
    steps = {}
    for log in where.glob("build/temp.*/.ninja_log"):
        for line in log.read_text().splitlines()[1:]:
            start, end, _, output, _ = line.split("\t")
            steps[Path(output).name] = (int(end) - int(start)) / 1000
    return max(steps.items(), key=lambda kv: kv[1])


def add_a_line_to_a_functor(ops_yaml: Path) -> str:
    """Add a comment line inside the functor of the op in the middle of the file; returns its name."""
    text = ops_yaml.read_text()
    functors = [m for m in re.finditer(r"(?m)^  - func: (\w+)[^\n]*\n(?:    [^\n]*\n)*?    functor: \|\n", text)]
    m = functors[len(functors) // 2]
    ops_yaml.write_text(text[:m.end()] + "      // an edit that moves every later op one line down\n" + text[m.end():])
    return m.group(1)


def report(name: str, seconds: float, target: float, note: str = "") -> bool:
    ok = seconds <= target
    print(f"{name:>20}: {seconds:7.1f} s  target ≤ {target:.0f} s: {'ok' if ok else 'MISSED'}{note}", flush=True)
    return ok


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extra-ops", type=int, default=40, help="ops the larger registry adds")
    args = parser.parse_args()
    ok = True
    variants = os.environ.get("MPSGEN_CPU_VARIANTS", "native")
    level, lower = cpu_variants()
    which = ("up to " if lower else "only ") + ["baseline", "AVX2", "AVX-512"][level]
    print(f"{cpu()}; CPU kernel variants {which} (MPSGEN_CPU_VARIANTS={variants}); command: "
          f"MAX_JOBS={os.cpu_count()} {sys.executable} setup.py --quiet build_ext --inplace, in a temporary "
          "copy of the checkout", flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        shipped = Path(tmp) / "shipped"
        copy_checkout(shipped)
        ops = len(load(shipped / "ops.yaml").ops)
        objects = Path(tmp) / "objects"
        clean, _, clean_cpu = build(shipped, objects)
        ok &= report(f"clean ({ops} ops)", clean, 60 + 2 * ops, f"  ({clean_cpu:.0f} CPU-s)")

        second = Path(tmp) / "second"
        copy_checkout(second)
        warm, _, _ = build(second, objects)
        report("clean, second copy", warm, 60 + 2 * ops, "  (units from the object cache the first filled)")
        shutil.rmtree(second)

        again, log, _ = build(shipped, objects)
        ok &= report("nothing changed", again, 3, "  (ninja had work!)" if "ninja: no work to do" not in log else
                     "  (up to date before torch was imported)" if "is up to date" in log else "")
        ok &= "ninja: no work to do" in log

        shipped_ops = (shipped / "ops.yaml").read_text()
        edited = add_a_line_to_a_functor(shipped / "ops.yaml")
        seconds, log, _ = build(shipped, objects)
        units = STEP.findall(log)
        expected = sorted([f"build/mpsgen/{edited}_kernels.cpp", "generated/op_specs.cpp"])
        quick = "; without setuptools and torch" if "built without setuptools" in log else ""
        ok &= report("one functor edited", seconds, 10, f"  (compiled: {', '.join(units)}{quick})")
        ok &= sorted(units) == expected
        # the same two units from the object cache: the edit undone, then made again through
        # setuptools and torch (no stamp, so the full build), for what the build without them saves
        edited_ops = (shipped / "ops.yaml").read_text()
        (shipped / "ops.yaml").write_text(shipped_ops)
        seconds, log, _ = build(shipped, objects)
        quick = ", without setuptools and torch" if "built without setuptools" in log else ""
        report("edit undone", seconds, 10, f"  (its units from the object cache{quick})")
        (shipped / "ops.yaml").write_text(edited_ops)
        (shipped / "build" / STAMP).unlink(missing_ok=True)
        seconds, log, _ = build(shipped, objects)
        report("edit made again", seconds, 10, "  (its units from the object cache, through setuptools and torch)")

        steep = Path(tmp) / "steep"
        copy_checkout(steep)
        with (steep / "ops.yaml").open("a") as f:
            f.write(STEEP_OP)
        build(steep, objects)
        unit, seconds = slowest_unit(steep)
        ok &= report("slowest unit", seconds, 60, f"  ({unit}; the shipped ops plus a functor shaped like mish_backward's)")
        shutil.rmtree(steep)

        larger = Path(tmp) / "larger"
        copy_checkout(larger)
        (larger / "ops.yaml").write_text(synthetic_registry(ops + args.extra_ops))
        big, _, big_cpu = build(larger, Path(tmp) / "objects-larger")
        ok &= report(f"clean ({ops + args.extra_ops} ops)", big, 60 + 2 * (ops + args.extra_ops), f"  ({big_cpu:.0f} CPU-s)")
        per_op = (big - clean) / args.extra_ops
        # the difference of two builds' wall times moves with the machine's speed between them;
        # their CPU seconds per added op, over the cores, are the steadier companion figure
        steady = (big_cpu - clean_cpu) / args.extra_ops / (os.cpu_count() or 1)
        print(f"{'per added op':>20}: {per_op:7.2f} s  target ≤ 2 s: {'ok' if per_op <= 2 else 'MISSED'}"
              f"  ({steady:.2f} s: CPU-s per added op / {os.cpu_count()} cores)")
        ok &= per_op <= 2
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
