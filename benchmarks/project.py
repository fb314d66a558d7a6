"""Time from `mpsgen init` to a green `mpsgen test` for one new op (issue 30's target: at most
60 s on 2 cores, torch installed), as a user adding an aten operator to a new project does:

    .venv/bin/python benchmarks/project.py [--repeat 3]

Each run, in a new temporary folder: `mpsgen init`, `mpsgen new frac`, the functor written
into ops.yaml, `mpsgen build` (generate, then every unit compiled: the project's and mpsgen's
support sources), `mpsgen test frac`. It runs the command from this checkout (`python -m
mpsgen`), twice: with the object cache off (MPSGEN_OBJECT_CACHE=0: every unit compiled, as on
a machine's first build) and on (codegen/objcache.py: mpsgen's support units, the same in
every project, come from the cache, which an untimed build of another project, with only
its example op, fills; the project's own units are compiled).
Prints each step's median over the runs, the total, and its ratio to the 60 s target, with the
CPU it ran on.
"""
from __future__ import annotations

import argparse
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TARGET = 60.0
FRAC = """\
      template <typename T>
      inline T operator()(const T x) {
        const float v = static_cast<float>(x);
        return static_cast<T>(v - ::metal::trunc(v));
      }
"""


def cpu() -> str:
    """The CPU model, and whether it has AVX-512 (the build's kernel variants depend on it)."""
    model = platform.processor() or "unknown CPU"
    try:
        info = Path("/proc/cpuinfo").read_text()
        field = lambda name: next(l.split(":", 1)[1].strip() for l in info.splitlines()  # noqa: E731
                                  if l.split(":", 1)[0].strip() == name)
        # a cloud VM's model name is often only the brand ("AMD EPYC"): family and model tell its generation
        model = f"{field('model name')} (CPU family {field('cpu family')}, model {field('model')})"
        flags = next(l for l in info.splitlines() if l.startswith("flags")).split()
        model += f", {os.cpu_count()} cores, " + ("AVX-512" if "avx512f" in flags else "no AVX-512") \
                 + (", AVX2" if "avx2" in flags else "")
    except (OSError, StopIteration):
        pass
    return model


def one_run(folder: Path, cache: bool, namespace: str = "bench_ops", new_op: bool = True) -> dict[str, float]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "MPSGEN_OBJECT_CACHE": "1" if cache else "0", "MPSGEN_OBJECT_CACHE_DIR": str(folder.parent / "objects")}
    folder.mkdir()
    mpsgen = [sys.executable, "-m", "mpsgen"]
    project = folder / namespace
    times = {}

    def step(name, args, cwd):
        start = time.perf_counter()
        r = subprocess.run(args, cwd=cwd, env=env, capture_output=True, text=True)
        times[name] = time.perf_counter() - start
        if r.returncode != 0:
            sys.exit(f"{name} failed:\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")

    step("init", [*mpsgen, "init", project.name, "--namespace", namespace], folder)
    if new_op:
        step("new frac", [*mpsgen, "new", "frac"], project)
        ops = project / "ops.yaml"
        ops.write_text(ops.read_text().replace('    functor: ""\n', "    functor: |\n" + FRAC))
    step("build", [*mpsgen, "build"], project)
    if new_op:
        step("test frac", [*mpsgen, "test", "frac"], project)
    times["total"] = sum(times.values())
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    print(f"mpsgen init -> green mpsgen test, one new op; {args.repeat} run(s) each, medians; {cpu()}")
    for cache, label in ((False, "every unit compiled (MPSGEN_OBJECT_CACHE=0)"),
                         (True, "with the object cache, after another project's build (mpsgen's support units from it)")):
        runs = []
        for _ in range(args.repeat):
            objects = Path(tempfile.mkdtemp(prefix="mpsgen-bench-"))  # this run's own object cache
            try:
                if cache:  # another project (its example op only) fills it with mpsgen's support units
                    one_run(objects / "other", cache, namespace="bench_other", new_op=False)
                runs.append(one_run(objects / "project", cache))
            finally:
                shutil.rmtree(objects)
        print(label)
        for name in runs[0]:
            print(f"  {name:<10} {statistics.median(r[name] for r in runs):7.1f} s")
        total = statistics.median(r["total"] for r in runs)
        print(f"  total / target ({TARGET:.0f} s): {total / TARGET:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
