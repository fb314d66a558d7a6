"""Kernel entries (ops.yaml `compute:`): a Metal compute kernel as a torch op, from the registry to
a built project.

A project made with `mpsgen init` gets kernel entries written the way docs/registry.md says: a
row-wise sum through torch's threadgroup_sum (threadgroup memory, barriers, simd_sum), the same
with the barrier before the partial sums are read left out (planted), and a launch wider than a
threadgroup may be. It is built with `mpsgen build`; the ops run in a subprocess against torch's
own sum, in index order and under the shuffled schedule (support/cpu/compute.h).
"""
from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import torch

from mpsgen.codegen.registry.errors import RegistryError
from mpsgen.codegen.registry.loader import load
from mpsgen.compute_library import ComputeSpec, fake_compute
from mpsgen.scaffold import init

ROOT = Path(__file__).resolve().parents[1]

ROW_SUM = """
  # one threadgroup per row: torch's threadgroup_sum over threadgroup memory
  - func: row_sum(Tensor self) -> Tensor
    dtypes: [float]
    reference: {ns}.references.row_sum
    derivatives:
      self: {ns}::row_sum_backward(grad, self)
    checks:
      - {{require: "self.dim() >= 1", message: "expected a tensor of at least one dimension, got {{self.dim()}}", error: IndexError}}
    samples: [{{self: [5, 100]}}, {{self: [3, 1]}}, {{self: [0, 7]}}, {{self: [4, 0]}}, {{self: [2, 3000]}}, {{self: [7]}}]
    compute:
      outputs:
        out: {{shape: "[*self.shape[:-1]]"}}
      grid: [out.numel() * 256]
      threadgroup: [256]
      threadgroup_memory:
        partial: {{type: "opmath_t<T>", length: 8}}
      body: |
        const uint row = threadgroup_position_in_grid.x;
        const uint lane = thread_position_in_threadgroup.x;
        const long n = self_sizes[self_ndim - 1];
        opmath_t<T> acc = 0;
        for (long c = lane; c < n; c += threads_per_threadgroup.x) {{
          acc += static_cast<opmath_t<T>>(self[row * n + c]);
        }}
        {reduce}
        if (lane == 0) {{
          out[row] = static_cast<T>(total);
        }}
"""
# row_sum's backward, a kernel entry itself: each element's gradient is its row's; its output
# shaped as its reference shapes its result, on meta tensors
ROW_SUM_BACKWARD = """
  - func: row_sum_backward(Tensor grad, Tensor self) -> Tensor
    dtypes: [float]
    reference: {ns}.references.row_sum_backward
    samples: [{{grad: [5], self: [5, 100]}}, {{grad: [], self: [7]}}, {{grad: [3], self: [3, 1]}}, {{grad: [4], self: [4, 0]}}]
    compute:
      outputs:
        out: {{shape: reference}}
      body: |
        const uint i = thread_position_in_grid.x;
        if (i < out_numel) {{
          out[i] = grad[i / self_sizes[self_ndim - 1]];
        }}
"""
# a kernel that updates its output in place, which starts as a copy of self: an in-place variant
INCREMENT = """
  - func: increment(Tensor self, float by) -> Tensor
    dtypes: [float, int]
    reference: {ns}.references.increment
    samples: [{{self: [5, 3], by: 0.5}}, {{self: {{shape: [4, 6], noncontiguous: true}}, by: -2.0}}, {{self: [0], by: 1.0}}]
    compute:
      outputs:
        out: {{init: self}}
      body: |
        const uint i = thread_position_in_grid.x;
        if (i < out_numel) {{
          out[i] = static_cast<T>(static_cast<float>(out[i]) + by);
        }}
"""
# two outputs, one differentiated: the magnitude (T), and the sign (int) its formula reads
SPLIT_SIGN = """
  - func: split_sign(Tensor self) -> (Tensor magnitude, Tensor sign)
    dtypes: [float]
    reference: {ns}.references.split_sign
    derivatives:
      self: grad * sign
    samples: [{{self: [5, 7]}}, {{self: [0]}}, {{self: {{shape: [4, 6], noncontiguous: true}}}}]
    compute:
      outputs:
        magnitude: {{shape: self.shape}}
        sign: {{shape: self.shape, dtype: int}}
      body: |
        const uint i = thread_position_in_grid.x;
        if (i < magnitude_numel) {{
          const float v = static_cast<float>(self[i]);
          magnitude[i] = static_cast<T>(v < 0 ? -v : v);
          sign[i] = v < 0 ? -1 : (v > 0 ? 1 : 0);
        }}
"""
THREADGROUP_SUM = "const auto total = c10::metal::threadgroup_sum(partial, acc, lane, threads_per_threadgroup.x);"
# the simdgroups' sums stored, then read by lane 0 with no barrier between
NO_BARRIER = ("partial[lane / 32] = simd_sum(acc);\n        opmath_t<T> total = 0;\n"
              "        if (lane == 0) for (uint i = 0; i < 8; ++i) total += partial[i];")
# the whole-function form: the kernel as written, its buffers bound by their names
AXPY = """
  - func: axpy(Tensor self, Tensor other, float alpha) -> Tensor
    dtypes: [float, int]
    reference: {ns}.references.axpy
    samples: [{{self: [5], other: [5], alpha: 0.5}}, {{self: [1000], other: [1000], alpha: -3}}, {{self: [0], other: [0], alpha: 1.0}}]
    compute:
      outputs:
        out: {{shape: self.shape}}
      function: |
        template <typename T>
        kernel void axpy(constant T* self [[buffer(0)]], constant T* other [[buffer(1)]],
                         device T* out [[buffer(2)]], constant float& alpha [[buffer(3)]],
                         constant long& out_numel [[buffer(4)]], uint i [[thread_position_in_grid]]) {{
          if (i < out_numel) {{
            out[i] = static_cast<T>(static_cast<float>(self[i]) + alpha * static_cast<float>(other[i]));
          }}
        }}
"""
# the same with an output pointer in no address space, which Metal refuses
NO_SPACE = AXPY.replace("axpy", "no_space").replace("device T* out", "T* out")
TOO_WIDE = """
  - func: too_wide(Tensor self) -> Tensor
    dtypes: [float]
    reference: torch.clone
    samples: [{self: [5]}]
    compute:
      outputs:
        out: {shape: self.shape}
      threadgroup: [2048]
      body: |
        if (thread_position_in_grid.x < self_numel) out[thread_position_in_grid.x] = self[thread_position_in_grid.x];
"""


def _run(args, cwd, env=None, check=True):
    r = subprocess.run([str(a) for a in args], cwd=cwd, capture_output=True, text=True, env=env, timeout=1200)
    if check:
        assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    return r


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("kernels") / "kops"
    init(folder, "kops")
    ops = folder / "ops.yaml"
    ops.write_text(ops.read_text() + ROW_SUM.format(ns="kops", reduce=THREADGROUP_SUM)
                   + ROW_SUM.format(ns="kops", reduce=NO_BARRIER).replace("row_sum(", "row_sum_planted(")
                   + TOO_WIDE + AXPY.format(ns="kops") + ROW_SUM_BACKWARD.format(ns="kops") + INCREMENT.format(ns="kops")
                   + SPLIT_SIGN.format(ns="kops"))
    (folder / "kops" / "references.py").write_text(
        "import torch\n\n\ndef row_sum(self):\n    return self.sum(dim=-1)\n\n\n"
        "def row_sum_backward(grad, self):\n    return grad.unsqueeze(-1).expand(self.shape).clone()\n\n\n"
        "def increment(self, by):\n    return (self.float() + by).to(self.dtype)\n\n\n"
        "def axpy(self, other, alpha):\n    return (self.float() + alpha * other.float()).to(self.dtype)\n\n\n"
        "def split_sign(self):\n    return self.abs(), torch.sign(self).int()\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), MAX_JOBS="2")
    _run([sys.executable, "-m", "mpsgen", "build"], folder, env)
    return folder


def run_ops(project: Path, schedule: str = "", check: bool = False) -> str:
    script = textwrap.dedent("""
        import torch, kops
        for shape in [(5, 100), (64, 1000), (3, 1), (7,)]:
            x = torch.randn(shape)
            for op in ("row_sum", "row_sum_planted"):
                try:
                    ok = torch.allclose(getattr(torch.ops.kops, op)(x), x.sum(-1), rtol=1e-5, atol=1e-4)
                    print(op, shape, "match" if ok else "differ")
                except RuntimeError as e:
                    print(op, shape, "raises", str(e).splitlines()[0])
        try:
            torch.ops.kops.too_wide(torch.ones(5))
        except RuntimeError as e:
            print("too_wide:", str(e).splitlines()[0])
    """)
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{project}", MPSGEN_CPU_SCHEDULE=schedule,
               MPSGEN_CPU_CHECK="1" if check else "0")
    return _run([sys.executable, "-c", script], project, env).stdout


@pytest.mark.parametrize("schedule", ["", "shuffle:1", "shuffle:2"])
def test_a_row_sum_through_threadgroup_memory_matches_torch_and_a_missing_barrier_does_not(project, schedule):
    out = run_ops(project, schedule).splitlines()
    assert [line for line in out if line.startswith("row_sum ")] == [
        f"row_sum {s} match" for s in ("(5, 100)", "(64, 1000)", "(3, 1)", "(7,)")]
    # every multi-simdgroup row reads partial sums not yet written, in some order of the schedule
    planted = [line for line in out if line.startswith("row_sum_planted ")]
    assert "row_sum_planted (64, 1000) differ" in planted


def test_the_checked_variant_names_the_race_of_the_missing_barrier(project):
    out = run_ops(project, check=True).splitlines()
    assert [line for line in out if line.startswith("row_sum ")] == [
        f"row_sum {s} match" for s in ("(5, 100)", "(64, 1000)", "(3, 1)", "(7,)")]
    # lane 0 reads the partial sums the other simdgroups write, with no barrier between
    planted = next(line for line in out if line.startswith("row_sum_planted (64, 1000)"))
    assert planted.startswith("row_sum_planted (64, 1000) raises kops::row_sum_planted (ops.yaml:"), planted
    assert "row_sum_planted_float!checked: race: thread " in planted and "'partial' at element " in planted, planted


def test_a_launch_wider_than_a_threadgroup_is_refused_naming_the_op(project):
    line = next(s for s in run_ops(project).splitlines() if s.startswith("too_wide:"))
    assert line.startswith("too_wide: kops::too_wide (ops.yaml:")
    assert "kernel too_wide_float: a threadgroup of 2048 threads is more than the pipeline's " \
           "maxTotalThreadsPerThreadgroup, 1024" in line


def test_mpsgen_test_passes_the_kernel_entries(project):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = _run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "tests/test_ops.py", "-k",
              "(row_sum and not planted) or axpy or increment or split_sign"], project, env, check=False)
    assert r.returncode == 0, r.stdout[-3000:]
    # row_sum, row_sum_backward, split_sign: float32, float16, bfloat16; axpy, increment: those and
    # int32; each with its out= (and increment_) bit for bit, opcheck, torch.compile, row_sum's and
    # split_sign's gradients
    assert "17 passed" in r.stdout, r.stdout[-3000:]


def test_a_backward_that_is_a_kernel_entry_runs_and_the_variants_register(project):
    script = textwrap.dedent("""
        import torch, kops
        from mpsgen import runtime
        C = runtime.extension("kops")
        x = torch.randn(5, 100, requires_grad=True)
        g = torch.randn(5)
        y = torch.ops.kops.row_sum(x)
        print("grad_fn", y.grad_fn.name())
        C.cpu_take_launches()
        y.backward(g)
        print("backward launched", sorted(set(C.cpu_take_launches())))
        print("grad", torch.equal(x.grad, g[:, None].expand(5, 100)))
        out = torch.empty(0)
        torch.ops.kops.row_sum.out(x.detach(), out=out)
        print("out", out.shape, torch.equal(out, torch.ops.kops.row_sum(x.detach())))
        try:
            torch.ops.kops.row_sum.out(x, out=torch.empty(5))
        except RuntimeError as e:
            print("out with grad:", str(e).splitlines()[0])
        t = torch.arange(6.).reshape(2, 3).t()
        r = torch.ops.kops.increment_(t, 0.5)
        print("inplace", r is t, t.tolist())
        # shaped by its reference: on meta (the fake kernel), and from the CPU host through it
        print("reference shape", tuple(torch.ops.kops.row_sum_backward(torch.ones(5, device="meta"), x.to("meta")).shape),
              tuple(torch.ops.kops.row_sum_backward(g, x.detach()).shape))
        for device in ("cpu", "meta"):  # the C++ host's check, and the fake kernel's
            try:
                torch.ops.kops.row_sum(torch.ones((), device=device))
            except IndexError as e:
                print(device, "check:", str(e).splitlines()[0])
        # two outputs: the magnitude differentiated through the formula reading the sign output
        v = torch.tensor([-2.0, 0.0, 3.0], requires_grad=True)
        magnitude, sign = torch.ops.kops.split_sign(v)
        magnitude.backward(torch.tensor([1.0, 1.0, 10.0]))
        print("split_sign", magnitude.grad_fn.name(), sign.requires_grad, sign.dtype, v.grad.tolist())
        z = torch.ones(3, requires_grad=True)
        try:
            torch.ops.kops.increment(z, 1.0).sum().backward()
        except RuntimeError as e:
            print("no formula:", str(e).splitlines()[0])
    """)
    env = dict(os.environ, PYTHONPATH=f"{ROOT}{os.pathsep}{project}")
    out = _run([sys.executable, "-c", script], project, env).stdout.splitlines()
    assert "grad_fn RowSumBackward" in out
    assert "backward launched ['row_sum_backward_float']" in out, out
    assert "grad True" in out and "out torch.Size([5]) True" in out
    assert "reference shape (5, 100) (5, 100)" in out, out
    assert "split_sign SplitSignBackward False torch.int32 [-1.0, 0.0, 10.0]" in out, out
    assert any(line.startswith("out with grad: kops::row_sum.out: functions with out=... arguments don't support "
                               "automatic differentiation") for line in out), out
    # a non-contiguous self: launched into its contiguous copy, copied back (hand-computed values)
    assert "inplace True [[0.5, 3.5], [1.5, 4.5], [2.5, 5.5]]" in out, out
    for device in ("cpu", "meta"):
        assert f"{device} check: kops::row_sum: expected a tensor of at least one dimension, got 0" in out, out
    assert any(line.startswith("no formula: kops::increment: no derivative formula for input 'self' (ops.yaml entry at "
                               "ops.yaml:") for line in out), out


def test_a_kernel_that_never_synchronises_runs_its_threads_in_a_loop(project):
    unit = (project / "build" / "kops" / "axpy_kernels.cpp").read_text()
    assert "ComputeKernel<&::axpy<float>, true, role(Bind::buffer, 0)" in unit
    assert "ComputeKernel<&::row_sum<float>, false," in (project / "build" / "kops" / "row_sum_kernels.cpp").read_text()


def test_check_metal_refuses_a_kernel_parameter_without_an_address_space(project, tmp_path):
    text = (project / "ops.yaml").read_text()
    (project / "ops.yaml").write_text(text + NO_SPACE.format(ns="kops"))
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    try:
        _run([sys.executable, "-m", "mpsgen", "generate"], project, env)
        r = _run([sys.executable, "-m", "mpsgen", "check-metal", "no_space", "axpy"], project, env, check=False)
    finally:
        (project / "ops.yaml").write_text(text)
        _run([sys.executable, "-m", "mpsgen", "generate"], project, env)
    assert r.returncode == 1, r.stdout[-3000:]
    line = text.count("\n") + NO_SPACE.format(ns="kops")[:NO_SPACE.format(ns="kops").index("T* out")].count("\n") + 1
    assert f"ops.yaml:{line}:" in r.stdout and "address space" in r.stdout, r.stdout[-2000:]
    assert "ok   axpy" in r.stdout


def test_the_mac_build_of_the_kernel_entries_compiles_and_links(project):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = _run([sys.executable, "-m", "mpsgen", "check-macos"], project, env, check=False)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    assert "ok   row_sum_kernels.cpp" in r.stdout and "ok   mpsgen_host_mps.mm as Objective-C++" in r.stdout
    assert " 0 rejected, 0 unresolved symbol(s)" in r.stdout


def test_the_kernel_signature_binds_what_the_body_uses(project):
    metal = (project / "kops" / "generated" / "row_sum.metal").read_text()
    assert "template <typename T>\nkernel void row_sum(\n    constant T* self [[buffer(0)]],\n" \
           "    device T* out [[buffer(1)]],\n    constant long* self_sizes [[buffer(2)]],\n" \
           "    constant uint& self_ndim [[buffer(3)]],\n    threadgroup opmath_t<T>* partial [[threadgroup(0)]],\n" \
           "    uint3 thread_position_in_threadgroup [[thread_position_in_threadgroup]]," in metal
    assert "self_strides" not in metal  # not read by the body: not bound
    for t in ("float", "half", "bfloat"):
        assert f'template [[host_name("row_sum_{t}")]] kernel void row_sum<{t}>(' in metal


@pytest.mark.parametrize("edit, says", [
    (("compute:", "compute:\n      colour: red"), "key 'compute.colour': unknown key"),
    (('{shape: "[*self.shape[:-1]]"}', '{shape: "[self.size(k)]"}'), "key 'compute.outputs.out.shape': 'self.size(...)'"),
    (("out: {shape", "result: {shape"), "key 'compute.outputs': expected a mapping of each output (out)"),
    (("{type: \"opmath_t<T>\", length: 8}", "{type: widget, length: 8}"), "'widget' is not a Metal scalar or vector type"),
    (("    samples: [{self: [5, 100]}, {self: [3, 1]}, {self: [0, 7]}, {self: [4, 0]}, {self: [2, 3000]}, {self: [7]}]\n",
      ""), "key 'samples': a kernel entry without 'opinfo' needs 'samples'"),
    (("grid: [out.numel() * 256]", "grid: [out.numel() * warp]"), "'warp' is no int argument or launch limit"),
    (("row_sum_backward(grad, self)", "row_sum_backward(grad, slef)"), "key 'derivatives': the formula for 'self' "),
    (("dtypes: [float]", "dtypes: [int]"), "key 'derivatives': its kernels are for int: integer and bool results"),
    (('out: {shape: "[*self.shape[:-1]]"}', 'out: {shape: "[*self.shape[:-1]]", dtype: int}'),
     "key 'derivatives': a kernel entry with derivatives has one output of the template dtype T (got out: int)"),
    (("dtypes: [float]", "dtypes: [float]\n    implements: aten"), "key 'derivatives': an `implements: aten` entry "
     "differentiates as torch's aten op does"),
])
def test_a_bad_kernel_entry_names_its_line_and_key(tmp_path, edit, says):
    text = "namespace: kops\nops:\n" + ROW_SUM.format(ns="kops", reduce=THREADGROUP_SUM).replace(*edit)
    (tmp_path / "ops.yaml").write_text(text)
    with pytest.raises(RegistryError) as e:
        load(tmp_path / "ops.yaml")
    assert says in str(e.value)
    assert str(e.value).startswith("ops.yaml:")


def test_an_output_shaped_by_the_reference_takes_the_shape_of_its_result_and_must_have_its_dtype():
    # what the fake kernel does, and so the C++ host, which calls the op on meta tensors
    spec = ComputeSpec("kops::outer", "ops.yaml:9", dtypes=[torch.float32], template_inputs=["self", "other"],
                       outputs=[("out", "reference", None)], reference="torch.outer")
    x, y = torch.empty(3, device="meta"), torch.empty(4, device="meta")
    out = fake_compute(spec, {"self": x, "other": y}, {}, (x, y))
    assert (out.shape, out.dtype, out.device.type) == ((3, 4), torch.float32, "meta")
    with pytest.raises(RuntimeError, match=r"^kops::outer \(ops.yaml:9\): its reference gives output 'out' as "
                       r"torch.float32, and its kernel writes torch.int32"):
        fake_compute(dataclasses.replace(spec, outputs=[("out", "reference", torch.int32)]),
                     {"self": x, "other": y}, {}, (x, y))
    with pytest.raises(RuntimeError, match=r"its reference torch.outer gives 1 result\(s\), and the entry has 2 "):
        fake_compute(dataclasses.replace(spec, outputs=[("a", "reference", None), ("b", "reference", None)]),
                     {"self": x, "other": y}, {}, (x, y))


def test_the_formulas_of_an_entry_with_several_outputs_read_them_by_name(tmp_path):
    (tmp_path / "ops.yaml").write_text("namespace: kops\nops:\n" + SPLIT_SIGN.format(ns="kops"))
    op, = load(tmp_path / "ops.yaml").compute_ops
    assert (op.differentiable, op.grad_output, [(d.arg, d.formula) for d in op.derivatives]) == (
        True, 0, [("self", "grad * sign")])
    (tmp_path / "ops.yaml").write_text("namespace: kops\nops:\n" + SPLIT_SIGN.format(ns="kops").replace(
        "grad * sign", "grad * result"))
    with pytest.raises(RegistryError, match=r"the formula for 'self' uses unknown name\(s\) result; a formula may "
                       r"use grad, magnitude, sign and the arguments \(self\)"):
        load(tmp_path / "ops.yaml")


def test_the_variants_of_an_entry_of_its_own_namespace(tmp_path):
    (tmp_path / "ops.yaml").write_text("namespace: kops\nops:\n" + ROW_SUM.format(ns="kops", reduce=THREADGROUP_SUM)
                                       + INCREMENT.format(ns="kops"))
    row_sum, increment = load(tmp_path / "ops.yaml").compute_ops
    assert row_sum.own_schemas == (("functional", "row_sum(Tensor self) -> Tensor"),
                                   ("out", "row_sum.out(Tensor self, *, Tensor(a!) out) -> Tensor(a!)"))
    assert dict(increment.own_schemas)["inplace"] == "increment_(Tensor(a!) self, float by) -> Tensor(a!)"
    assert [(d.arg, d.formula) for d in row_sum.derivatives] == [("self", "kops::row_sum_backward(grad, self)")]


@pytest.mark.parametrize("declaration, says", [
    ("float i [[thread_position_in_grid]]", "`float i`: Metal gives [[thread_position_in_grid]] as ushort, ushort2, "
     "ushort3, uint, uint2 or uint3, by value"),
    ("uint3 i [[thread_index_in_simdgroup]]", "`uint3 i`: Metal gives [[thread_index_in_simdgroup]] as ushort or uint"),
    ("thread uint& i [[thread_position_in_grid]]", "`thread uint& i`: Metal gives [[thread_position_in_grid]]"),
])
def test_a_thread_position_parameter_of_a_type_metal_refuses_is_named_at_its_line(tmp_path, declaration, says):
    entry = AXPY.format(ns="kops").replace("uint i [[thread_position_in_grid]]", declaration)
    (tmp_path / "ops.yaml").write_text("namespace: kops\nops:\n" + entry)
    with pytest.raises(RegistryError) as e:
        load(tmp_path / "ops.yaml")
    line = ("namespace: kops\nops:\n" + entry)[:("namespace: kops\nops:\n" + entry).index(declaration)].count("\n") + 1
    assert f"ops.yaml:{line}: " in str(e.value) and says in str(e.value), str(e.value)


def test_mpsgen_new_kernel_scaffolds_an_entry_that_generates_once_its_body_is_written(tmp_path):
    folder = tmp_path / "nk"
    init(folder, "nk")
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    mpsgen = [sys.executable, "-m", "mpsgen"]
    own = _run([*mpsgen, "new", "row_max(Tensor self) -> Tensor", "--kernel"], folder, env).stdout
    assert "  - func: row_max(Tensor self) -> Tensor\n    dtypes: [float]\n    reference: nk.references.row_max\n" \
           "    samples: [{self: [5, 7]}, {self: [0]}]\n    compute:\n      outputs:\n        out: {shape: reference}\n" \
           '      body: ""\n' in own
    assert "def row_max(self):\n    raise NotImplementedError" in (folder / "nk" / "references.py").read_text()
    # aten's take: its OpInfo's sample gives index's dtype and the output's shape
    take = _run([*mpsgen, "new", "take", "--kernel", "--aten"], folder, env).stdout
    assert "    implements: aten\n" in take and "    opinfo: take\n" in take and "      tensors: {index: long}\n" in take
    assert "        out: {shape: index.shape}\n" in take
    # pdist's: its output is no input's shape, so the reference's result shapes it
    pdist = _run([*mpsgen, "new", "_pdist_forward", "--kernel", "--aten"], folder, env).stdout
    assert "        out: {shape: reference}\n" in pdist, pdist
    refused = _run([*mpsgen, "generate"], folder, env, check=False)
    text = (folder / "ops.yaml").read_text()
    bodies = [i + 1 for i, line in enumerate(text.splitlines()) if line == '      body: ""']
    assert refused.returncode == 1 and [f"ops.yaml:{n}:" in refused.stderr for n in bodies] == [True] * 3
    assert "key 'compute.body': expected Metal code" in refused.stderr
    (folder / "ops.yaml").write_text(text.replace('      body: ""', "      body: |\n"
                                                  "        const uint i = thread_position_in_grid.x;\n"
                                                  "        if (i < out_numel) out[i] = self[i];"))
    _run([*mpsgen, "generate"], folder, env)
    assert (folder / "nk" / "generated" / "row_max.metal").is_file() and (folder / "nk" / "generated" / "take_mps.mm").is_file()
    assert "const auto like = mpsgen::compute::reference_outputs(_pdist_forward_spec, {self, p});" in \
        (folder / "nk" / "generated" / "_pdist_forward_cpu.cpp").read_text()
    again = _run([*mpsgen, "new", "take", "--kernel"], folder, env, check=False)
    assert again.returncode == 1 and "already has take; nothing was changed" in again.stdout + again.stderr
