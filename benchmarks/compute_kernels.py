"""The CPU backend's compute kernels (kernel entries) against what they stand beside:

- a kernel entry that never synchronises (its threads run in a plain loop) against the same op as
  an elementwise functor: softsign, x / (1 + |x|) in float, contiguous. Its body has no bounds
  check: the grid is one thread per element. (A check against the `long` self_numel costs the
  loop half its vector width: 64-bit compares; measured 2.35 times the functor's time against 0.34
  without, AMD EPYC family 25 model 1.)
- a threadgroup reduction (torch's threadgroup_sum: simd_sum, threadgroup memory, barriers, each
  thread on a fiber) against torch's own CPU sum over the last dimension.

    .venv/bin/python benchmarks/compute_kernels.py [--size N] [--repeat R] [--threads T]

It makes a project with `mpsgen init` in a temporary folder, adds the two kernel entries, builds it
(`mpsgen build`), then times each op in one process, medians of R runs, and prints the ratios (op
over its baseline) with the CPU they ran on.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
from project import cpu  # noqa: E402

ENTRIES = """
  - func: softsign_kernel(Tensor self) -> Tensor
    dtypes: [float]
    reference: torch.nn.functional.softsign
    samples: [{self: [1000]}]
    compute:
      outputs:
        out: {shape: self.shape}
      body: |
        // one thread per element, exactly (dispatchThreads): no bounds check needed
        const uint i = thread_position_in_grid.x;
        const float v = static_cast<float>(self[i]);
        out[i] = static_cast<T>(v / (1.0f + ::metal::abs(v)));

  - func: row_sum(Tensor self) -> Tensor
    dtypes: [float]
    reference: torch.sum
    samples: [{self: [5, 100]}]
    compute:
      outputs:
        out: {shape: "[*self.shape[:-1]]"}
      grid: [out.numel() * 256]
      threadgroup: [256]
      threadgroup_memory:
        partial: {type: "opmath_t<T>", length: 8}
      body: |
        const uint row = threadgroup_position_in_grid.x;
        const uint lane = thread_position_in_threadgroup.x;
        const long n = self_sizes[self_ndim - 1];
        opmath_t<T> acc = 0;
        for (long c = lane; c < n; c += threads_per_threadgroup.x) {
          acc += static_cast<opmath_t<T>>(self[row * n + c]);
        }
        const auto total = c10::metal::threadgroup_sum(partial, acc, lane, threads_per_threadgroup.x);
        if (lane == 0) {
          out[row] = static_cast<T>(total);
        }
"""

TIMING = """
import statistics, sys, time
import torch
import benchops
size, repeat, threads = int(sys.argv[1]), int(sys.argv[2]), int(sys.argv[3])
torch.set_num_threads(threads)

def median(fn, *args):
    fn(*args)
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t)
    return statistics.median(times)

x = torch.randn(size)
functor = median(torch.ops.benchops.softsign, x)
kernel = median(torch.ops.benchops.softsign_kernel, x)
assert torch.equal(torch.ops.benchops.softsign(x), torch.ops.benchops.softsign_kernel(x))
rows = x.reshape(-1, 256)
reduction = median(torch.ops.benchops.row_sum, rows)
torch_sum = median(lambda t: t.sum(dim=-1), rows)
torch.testing.assert_close(torch.ops.benchops.row_sum(rows), rows.sum(dim=-1))
print(f"softsign float32, {size} elements: kernel entry {kernel * 1e3:.3f} ms, functor {functor * 1e3:.3f} ms: "
      f"ratio {kernel / functor:.2f}")
print(f"row sum float32, {rows.shape[0]} rows of 256 (threadgroup_sum, fibers): kernel entry {reduction * 1e3:.2f} ms, "
      f"torch's CPU sum {torch_sum * 1e3:.3f} ms: ratio {reduction / torch_sum:.0f}")
"""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--size", type=int, default=1 << 20)
    parser.add_argument("--repeat", type=int, default=21)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    env = dict(os.environ, PYTHONPATH=str(ROOT), MAX_JOBS=os.environ.get("MAX_JOBS", "2"))
    with tempfile.TemporaryDirectory(prefix="mpsgen-compute-bench-") as tmp:
        project = Path(tmp) / "benchops"
        subprocess.run([sys.executable, "-m", "mpsgen", "init", project.name, "--namespace", "benchops"], cwd=tmp,
                       env=env, check=True, capture_output=True)
        ops = project / "ops.yaml"
        ops.write_text(ops.read_text() + ENTRIES)
        subprocess.run([sys.executable, "-m", "mpsgen", "build"], cwd=project, env=env, check=True, capture_output=True)
        print(f"mpsgen compute kernels on the CPU backend, {args.threads} thread(s), medians of {args.repeat}; {cpu()}")
        r = subprocess.run([sys.executable, "-c", textwrap.dedent(TIMING), str(args.size), str(args.repeat),
                            str(args.threads)], cwd=project, env=dict(env, PYTHONPATH=f"{ROOT}{os.pathsep}{project}"),
                           capture_output=True, text=True)
        print(r.stdout, end="")
        if r.returncode:
            print(r.stderr[-3000:], file=sys.stderr)
        return r.returncode


if __name__ == "__main__":
    sys.exit(main())
