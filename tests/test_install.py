"""mpsgen installed and used from other projects, as a new user would (issue 30):

- `pip wheel` of this checkout gives a wheel whose install, in a fresh virtual environment
  (torch and the rest reused from this one through a .pth file: nothing is downloaded),
  imports and runs mpsgen's own ops with nothing read from the checkout;
- from another folder, the installed `mpsgen` command starts a project (`init`), adds an
  aten operator (`new`), which `generate` refuses until its functor is written; the
  project's wheel builds through the installed build API, installs, and `mpsgen test` runs
  its op-output-match green;
- mpsgen's own ops, that project and a second one (whose op has the same name in another
  namespace) import and run side by side in one process, each on its own kernels; a second
  package defining a loaded namespace is refused with both named.

One build of each project, shared by the tests of this module (a module-scoped fixture).
"""
from __future__ import annotations

import fcntl
import json
import os
import re
import subprocess
import sys
import sysconfig
import shutil
import tempfile
import textwrap
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent

FRAC = """\
      // frac(x) = x - trunc(x), in float for half and bfloat (exact: the result is representable)
      template <typename T>
      inline T operator()(const T x) {
        const float v = static_cast<float>(x);
        return static_cast<T>(v - ::metal::trunc(v));
      }
"""


def _run(args, cwd, env, check=True, timeout=1800) -> subprocess.CompletedProcess:
    r = subprocess.run([str(a) for a in args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise AssertionError(f"{' '.join(map(str, args))} failed ({r.returncode}) in {cwd}:\n"
                             f"{r.stdout[-3000:]}\n{r.stderr[-3000:]}")
    return r


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """A fresh venv with mpsgen's wheel installed, and two projects' wheels built with it: made
    once per test run. pytest-xdist's workers share it (the first makes it under a lock, the
    others wait and read it): two builds of this checkout's wheel at once would share its
    build folder."""
    run = os.environ.get("PYTEST_XDIST_TESTRUNUID")
    for old in Path(tempfile.gettempdir()).glob("mpsgen-install-*"):  # earlier runs' (kept for their workers)
        if time.time() - old.stat().st_mtime > 6 * 3600:
            shutil.rmtree(old, ignore_errors=True)
    tmp = Path(tempfile.gettempdir()) / f"mpsgen-install-{run}" if run else tmp_path_factory.mktemp("install")
    tmp.mkdir(exist_ok=True)
    with open(tmp / "lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (tmp / "made.json").exists():
            (tmp / "made.json").write_text(json.dumps(_make(tmp)))
        made = json.loads((tmp / "made.json").read_text())
    return {k: Path(v) if k in ("python", "mpsgen", "work", "purelib") else v for k, v in made.items()}


def _make(tmp: Path) -> dict:
    venv = tmp / "venv"
    # without its own pip and setuptools: those of this environment (setuptools>=70.1 has bdist_wheel)
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", "--without-pip", str(venv)],
                   check=True)
    python = venv / "bin" / "python"
    purelib = Path(_run([python, "-c", "import sysconfig; print(sysconfig.get_paths()['purelib'])"], tmp,
                        os.environ).stdout.strip())
    # this environment's packages (torch, jinja2, ...), not the checkout
    (purelib / "reuse-test-environment.pth").write_text(sysconfig.get_paths()["purelib"] + "\n")
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    # then this environment's scripts: its ninja, which the venv's `import ninja` does not find (its
    # BIN_DIR is the venv's), not another on PATH, whose log would make every step of the checkout's
    # build run again (ninja 1.11 and 1.13 keep their logs apart)
    env["PATH"] = os.pathsep.join([str(venv / "bin"), str(Path(sys.executable).parent), env["PATH"]])
    # the generator's cache of this install, not the temporary one of the worker that made it
    # (tests/conftest.py), which is gone when that worker's session ends before another's
    # tests use this env
    env["MPSGEN_CACHE_DIR"] = str(tmp / "cache")
    pip = [python, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    wheels = tmp / "wheels"
    _run([*pip, "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-w", wheels, ROOT], ROOT, env)
    _run([*pip, "install", "--no-build-isolation", "--no-index", *wheels.glob("mpsgen-*.whl")], tmp, env)

    work = tmp / "elsewhere"
    work.mkdir()
    mpsgen = venv / "bin" / "mpsgen"
    _run([mpsgen, "init", "fracops", "--namespace", "fracops"], work, env)
    _run([mpsgen, "init", "softops", "--namespace", "softops"], work, env)
    project = work / "fracops"
    new = _run([mpsgen, "new", "frac"], project, env)
    refused = _run([mpsgen, "generate"], project, env, check=False)
    ops = project / "ops.yaml"
    ops.write_text(ops.read_text().replace('    functor: ""\n', "    functor: |\n" + FRAC))
    for name in ("fracops", "softops"):
        _run([*pip, "wheel", "--no-build-isolation", "--no-deps", "--no-index", "-w", wheels, work / name], work, env)
    _run([*pip, "install", "--no-build-isolation", "--no-index", *wheels.glob("fracops-*.whl"),
          *wheels.glob("softops-*.whl")], tmp, env)
    return {"python": str(python), "mpsgen": str(mpsgen), "env": env, "work": str(work), "purelib": str(purelib),
            "new": new.stdout, "refused": [refused.returncode, refused.stderr]}


def test_new_writes_aten_schema_and_generate_refuses_the_empty_functor(installed):
    assert "  - func: frac(Tensor self) -> Tensor\n" in installed["new"]  # aten's schema
    assert "    reference: torch.frac\n" in installed["new"]
    code, stderr = installed["refused"]
    assert code == 1 and "key 'functor': is empty" in stderr and "ops.yaml:" in stderr


def test_installed_mpsgen_and_two_projects_run_together_from_elsewhere(installed):
    script = textwrap.dedent("""
        import sys, torch
        import mpsgen.ops, fracops, softops
        x = torch.tensor([-2.75, -0.5, 0.0, 1.25, 3.5])
        assert torch.equal(mpsgen.hypot(x, x), torch.hypot(x, x))
        assert torch.equal(fracops.frac(x), torch.frac(x))
        assert torch.equal(torch.ops.fracops.softsign(x), torch.nn.functional.softsign(x))
        assert torch.equal(softops.softsign(x), torch.nn.functional.softsign(x))
        # each package's own kernels ran (its own CPU executor's launch log)
        fracops._C.cpu_take_launches(); softops._C.cpu_take_launches()
        softops.softsign(x)
        assert fracops._C.cpu_take_launches() == [] and softops._C.cpu_take_launches() != []
        # nothing was read from the checkout (but from the environment reused, which may be in it)
        root, reused = sys.argv[1:3]
        files = [getattr(m, "__file__", None) or "" for m in list(sys.modules.values())]
        read = [f for f in files if f.startswith(root) and not f.startswith(reused)]
        assert not read, read
        print(mpsgen.__file__)
    """)
    r = _run([installed["python"], "-c", script, str(ROOT) + os.sep, sysconfig.get_paths()["purelib"] + os.sep],
             installed["work"], installed["env"])
    assert r.stdout.strip().startswith(str(installed["purelib"]))


def test_a_second_package_with_a_loaded_namespace_is_refused_naming_both(installed):
    purelib = installed["purelib"]
    copy = purelib / "fracops_again"
    if not copy.exists():
        shutil.copytree(purelib / "fracops", copy)
    r = _run([installed["python"], "-c", "import fracops, fracops_again"], installed["work"], installed["env"],
             check=False)
    assert r.returncode == 1
    assert "NamespaceConflict" in r.stderr and "fracops_again" in r.stderr and "package fracops" in r.stderr


def test_mpsgen_test_runs_the_new_op_green(installed):
    r = _run([installed["mpsgen"], "test", "frac"], installed["work"] / "fracops", installed["env"], check=False)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "1 ops (1 entries with overloads)" in r.stdout and " 0 differ" in r.stdout
    assert "frac              float16    cpu" in r.stdout


def test_a_projects_mac_build_compiles_and_links_from_linux(installed):
    """`mpsgen check-macos` in a project made by `mpsgen init`, with the installed mpsgen: every
    unit of its Mac build compiles for aarch64-macos and every symbol resolves (tests/test_macos_build.py
    plants what it must catch)."""
    r = _run([installed["mpsgen"], "check-macos"], installed["work"] / "fracops", installed["env"], check=False)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    assert "ok   frac_kernels.cpp" in r.stdout and "ok   mpsgen_host_mps.mm as Objective-C++" in r.stdout
    assert "compiled for aarch64-macos.14.0, 0 rejected, 0 unresolved symbol(s)" in r.stdout


def test_init_refuses_a_folder_that_is_not_empty(installed):
    r = _run([installed["mpsgen"], "init", "fracops", "--namespace", "other"], installed["work"], installed["env"],
             check=False)
    assert r.returncode == 1 and "not an empty folder; nothing was written" in r.stderr
    assert "namespace: fracops" in (installed["work"] / "fracops" / "ops.yaml").read_text()


def test_pip_refuses_a_broken_registry_with_its_line(installed, tmp_path):
    project = tmp_path / "broken"
    shutil.copytree(installed["work"] / "softops", project,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "*.so", "generated"))
    ops = project / "ops.yaml"
    ops.write_text(ops.read_text().replace("dtypes: [float]", "dtypes: [floaty]"))
    r = _run([installed["python"], "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "--no-index",
              "-w", tmp_path / "wheels", project], tmp_path, installed["env"], check=False)
    out = r.stdout + r.stderr
    assert r.returncode != 0
    line = ops.read_text().splitlines().index("    dtypes: [floaty]") + 1
    assert f"ops.yaml:{line}: op 'softsign', key 'dtypes'" in out and "floaty" in out, out[-3000:]
    assert "Traceback" not in out
    assert not (project / "softops" / "generated").exists()  # nothing was written


SETUP_THEN_TORCH = """
import runpy, sys
sys.argv = ["setup.py", "--quiet", "build_ext", "--inplace"]
runpy.run_path("setup.py", run_name="__main__")
print("torch imported:", "torch" in sys.modules)
"""
SOFTSIGN = "return static_cast<T>(v / (1.0f + ::metal::abs(v)));"


def test_a_build_after_an_edit_or_none_runs_without_torch(installed, tmp_path):
    """Nothing changed: up to date, before torch is imported. A functor edited: its kernels
    compiled and linked, still without torch, and the op computes the edit. A compile error
    there fails the build with the compiler's message at its ops.yaml line; another build
    setting takes the full build (codegen/uptodate.py)."""
    project = tmp_path / "softops"
    shutil.copytree(installed["work"] / "softops", project,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "*.so"))
    env = installed["env"]
    assert "up to date" not in _run([installed["mpsgen"], "build"], project, env).stdout
    extension = next((project / "softops").glob("_C*.so"))

    def build_again(check=True, **extra) -> subprocess.CompletedProcess:
        return _run([installed["python"], "-c", SETUP_THEN_TORCH], project, {**env, **extra}, check=check)

    again = build_again().stdout
    assert "softops._C is up to date" in again and "torch imported: False" in again
    ops = project / "ops.yaml"
    text = ops.read_text()
    assert SOFTSIGN in text
    ops.write_text(text.replace(SOFTSIGN, "return static_cast<T>(2.0f * v / (1.0f + ::metal::abs(v)));"))
    built = extension.stat().st_mtime_ns
    edited = build_again().stdout
    assert "] clang " in edited and "softops/softsign_kernels.cpp" in edited and "torch imported: False" in edited
    assert "softops._C built without setuptools" in edited
    assert extension.stat().st_mtime_ns > built
    check = ("import torch, softops; x = torch.tensor([-3.0, -0.5, 0.0, 2.0]); "
             "print(torch.equal(softops.softsign(x), 2 * torch.nn.functional.softsign(x)))")
    assert _run([installed["python"], "-c", check], project, env).stdout.strip() == "True"
    assert "softops._C is up to date" in build_again().stdout

    ops.write_text(text.replace(SOFTSIGN, "return static_cast<T>(v / (1.0f + ::metal::abs(w)));"))
    broken = build_again(check=False)
    line = text.splitlines().index("        " + SOFTSIGN) + 1
    assert broken.returncode != 0 and "torch imported" not in broken.stdout
    assert f"ops.yaml:{line}:" in broken.stdout + broken.stderr and "'w'" in broken.stdout + broken.stderr
    assert "Error compiling objects" in broken.stderr
    ops.write_text(text)
    fixed = build_again().stdout  # after a failed build: the full one
    assert "torch imported: True" in fixed
    check = check.replace("2 * ", "")
    assert _run([installed["python"], "-c", check], project, env).stdout.strip() == "True"

    other = build_again(MPSGEN_CPU_VARIANTS="baseline").stdout  # another build setting: the full build
    assert "up to date" not in other and "torch imported: True" in other


SCALED = """
  # a Scalar whose value picks the kernel, on complex dtypes too; the kernel for 1 reads no
  # alpha, as torch's plain add beside add_alpha (issue 50)
  - func: scaled(Tensor self, Scalar alpha=1) -> Tensor
    args:
      alpha: {choices: {1: {kernel: scaled_one, params: []}, else: scaled}}
    dtypes: [float, complex]
    reference: torch.mul
    functor: |
      struct scaled_one_functor {
        template <typename T>
        inline T operator()(const T x) {
          return x;
        }
      };
      struct scaled_functor {
        template <typename T, typename A>
        inline T operator()(const T x, const A alpha) {
          return static_cast<T>(c10::metal::mul(x, alpha));
        }
      };

  # an argument the kernels do not read, as aten's _to_copy's non_blocking (issue 50)
  - func: copied(Tensor self, *, bool non_blocking=False) -> Tensor
    args: {non_blocking: unread}
    dtypes: [float]
    reference: torch.clone
    functor: |
      template <typename T>
      inline T operator()(const T x) {
        return x;
      }
"""


def test_a_scalar_that_picks_the_kernel_takes_a_complex_value_as_torch_does(installed, tmp_path):
    """`alpha: {choices: {1: ..., else: ...}}` on complex dtypes: a complex alpha is compared as a
    complex value (1+0j is 1, 1.5-0.5j is no number's equal), where the host converted it to double
    and raised "value cannot be converted to type double without overflow"; and an argument the
    kernels do not read (`unread`) passed no params. torch's multiplication
    by the same Scalar is the oracle; the launch log says which kernel ran: for 1, the one that
    reads no params (`params: []`), registered without the alpha (REGISTER_UNARY_OP's host_name
    `scaled_one_dense_float2_float2`, not REGISTER_UNARY_ALPHA_OP's `..._float2_float2_float2`)."""
    project = tmp_path / "softops"
    shutil.copytree(installed["work"] / "softops", project,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "*.so"))
    ops = project / "ops.yaml"
    ops.write_text(ops.read_text().rstrip("\n") + "\n" + SCALED)
    _run([installed["mpsgen"], "build"], project, installed["env"])
    script = textwrap.dedent("""
        import torch, softops
        from torch._subclasses import FakeTensorMode
        x = torch.tensor([1 + 2j, -0.5 + 0j, 3 - 1j], dtype=torch.complex64)
        for alpha in (1.5 - 0.5j, 1, 1 + 0j, 2, 0.5j):
            softops._C.cpu_take_launches()
            torch.testing.assert_close(softops.scaled(x, alpha), x * alpha)
            kernels = set(softops._C.cpu_take_launches())
            with FakeTensorMode(allow_non_fake_inputs=True):
                assert softops.scaled(x, alpha).dtype == torch.complex64
            print(alpha, *sorted(kernels))
        y = torch.tensor([1.5, -2.0])
        softops._C.cpu_take_launches()
        assert torch.equal(softops.copied(y, non_blocking=True), y)
        print("copied", *softops._C.cpu_take_launches())
    """)
    lines = _run([installed["python"], "-c", script], project, installed["env"]).stdout.splitlines()
    # host_name: kernel, variant (dense or dense_scalar, as exec_unary_kernel picks), output and input
    # types, then the alpha's for a kernel that reads one
    alpha, plain = r"scaled_dense(_scalar)?_float2_float2_float2", r"scaled_one_dense(_scalar)?_float2_float2"
    expected = [rf"\(1\.5-0\.5j\) {alpha}", f"1 {plain}", rf"\(1\+0j\) {plain}", f"2 {alpha}", rf"0\.5j {alpha}",
                # `unread`: no params, so REGISTER_UNARY_OP's host_name, without a params type
                r"copied copied_dense(_scalar)?_float_float"]
    assert len(lines) == len(expected) and all(re.fullmatch(e, line) for e, line in zip(expected, lines)), lines


PLANTED_CAST = """
  # planted (issue 59): lerp of integers in float, cast back; out of the integer's range the
  # conversion is undefined, and the AVX2 variant's vector code saturated where the baseline wrapped
  - func: planted_lerp(Tensor self, Tensor end, Tensor weight) -> Tensor
    dtypes: [{in: uchar, out: uchar}, {in: char, out: char}]
    reference: mpsgen.references.lerp
    functor: |
      template <typename T>
      inline T operator()(const T a, const T b, const T w) {
        const float x = static_cast<float>(a), e = static_cast<float>(b), fw = static_cast<float>(w), diff = e - x;
        return static_cast<T>(::metal::abs(fw) < 0.5f ? ::metal::fma(fw, diff, x) : ::metal::fma(-diff, 1.0f - fw, e));
      }
"""


def _cpu_flags() -> set:
    from mpsgen.codegen.build import _machine_cpu_flags

    return _machine_cpu_flags() or set()


@pytest.mark.skipif(not {"avx2", "f16c", "fma"} <= _cpu_flags(), reason="this CPU runs no variant but the baseline")
def test_a_variant_that_gives_other_bits_than_the_baseline_is_named(installed, tmp_path):
    """`mpsgen variants` of a project built with every variant (MPSGEN_CPU_VARIANTS=all) fails on
    a planted functor whose float-to-integer cast is undefined out of range, naming the entry, the
    dtype and the sample where the AVX2 variant's bits differ from the baseline's; the shipped
    lerp's integer arithmetic (mod 2**bits, defined) gives every variant the same bits."""
    project = tmp_path / "softops"
    shutil.copytree(installed["work"] / "softops", project,
                    ignore=shutil.ignore_patterns("build", "*.egg-info", "*.so"))
    ops = project / "ops.yaml"
    ops.write_text(ops.read_text().rstrip("\n") + "\n" + PLANTED_CAST)
    env = {**installed["env"], "MPSGEN_CPU_VARIANTS": "all"}
    _run([installed["mpsgen"], "build"], project, env)
    r = _run([installed["mpsgen"], "variants", "planted_lerp"], project, env, check=False)
    assert r.returncode == 1, r.stdout + r.stderr
    assert re.search(r"^  avx2: planted_lerp uint8 int-extremes#\d+: \d+ of \d+ elements \(torch.uint8, shape "
                     r"\[.*\]\) differ in their bits", r.stdout, re.M), r.stdout
    assert re.search(r"^baseline  ran \d+ \(entry, dtype, sample\) cases", r.stdout, re.M), r.stdout


def _gap_trial(op, gaps, shipped: dict) -> str:
    """A project's ops.yaml of one shipped entry with some of its `gaps:` registered: each gap dtype
    to itself (the op keeps its dtype: checked), the rest of the entry as shipped."""
    assert all(r.input == r.output for r in op.all_registrations), op.loc
    entry = next(dict(e) for e in shipped["ops"] if e["func"] == str(op.schema))
    entry.pop("gaps")
    entry["dtypes"] = list(entry["dtypes"]) + [{"in": g.dtype, "out": g.dtype} for g in gaps]
    return yaml.safe_dump({"namespace": "gaptrial", "ops": [entry]}, sort_keys=False, width=100)


def test_every_gap_of_the_shipped_registry_still_stands(installed, tmp_path):
    """A `gaps:` item says why the entry leaves out a dtype torch's MPS kernel supports
    (tests/test_mps_dtypes.py keeps the lists exact). Here each reason is tried against today's
    kernels (issue 50): the entry, in a project of its own, with its gap dtypes registered. The gap
    stands if the functor does not compile for them (filling it needs code, not a registration) or
    if op-output-match finds a sample of a gap dtype that differs from torch's; it fails when every
    sample matches, because then the gap can be filled. The dtypes of each kind (integer, bool,
    complex...) are tried in a build of their own, so that one that does not compile hides no other."""
    from mpsgen.codegen.registry.dtypes import DTYPES
    from mpsgen.codegen.registry.loader import load
    from mpsgen.samples import TORCH_DTYPES

    registry = load(ROOT / "ops.yaml")
    shipped = yaml.safe_load((ROOT / "ops.yaml").read_text())
    gapped = [op for op in registry.own_ops if op.gaps]
    assert gapped, "no gaps: nothing to try"
    env = installed["env"]
    fillable, seen = [], []
    trials = [(op, [g for g in op.gaps if DTYPES[g.dtype].kind == kind])
              for op in gapped for kind in dict.fromkeys(DTYPES[g.dtype].kind for g in op.gaps)]
    for i, (op, gaps) in enumerate(trials):
        project = tmp_path / f"trial{i}"
        _run([installed["mpsgen"], "init", project.name, "--namespace", "gaptrial"], tmp_path, env)
        (project / "ops.yaml").write_text(_gap_trial(op, gaps, shipped))
        build = _run([installed["mpsgen"], "build"], project, env, check=False)
        if build.returncode != 0:  # the shipped dtypes compile (the main build): these do not
            assert re.search(r"ops\.yaml:\d+:\d+: error", build.stdout + build.stderr), build.stderr[-3000:]
            seen += [f"{op.qualified_name} {g.dtype}: does not compile" for g in gaps]
            continue
        report = _run([installed["mpsgen"], "test"], project, env, check=False).stdout
        for gap in gaps:
            dtype = str(TORCH_DTYPES[gap.dtype]).removeprefix("torch.")
            rows = re.findall(rf"^{re.escape(op.qualified_name)}\s+{dtype}\s+\w+\s+(\d+)/(\d+)", report, re.M)
            assert rows, f"{op.qualified_name} {dtype}: no row in\n{report[:3000]}"
            differ = sum(int(n) - int(m) for m, n in rows)
            seen.append(f"{op.qualified_name} {dtype}: {differ} differ")
            if not differ:
                fillable.append(f"{op.loc}: gap {gap.dtype} could be filled: registered, every sample matches torch")
    assert fillable == [], (fillable, seen)
    assert len(seen) == sum(len(op.gaps) for op in gapped), seen


def test_a_fresh_venv_without_the_build_requirements_is_told_what_to_install(tmp_path):
    """Python 3.11's venv (pip and setuptools 65, nothing else), `pip install --no-build-isolation`
    of this checkout, as a new user would without the README's first line: the build names what
    is missing and the command that installs it, and writes nothing into the checkout."""
    venv = tmp_path / "venv"
    subprocess.run([getattr(sys, "_base_executable", sys.executable), "-m", "venv", str(venv)], check=True,
                   capture_output=True)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    before = sorted(p.name for p in ROOT.iterdir())
    r = _run([venv / "bin" / "python", "-m", "pip", "install", "--no-build-isolation", "--no-index", "--no-deps", ROOT],
             tmp_path, env, check=False, timeout=300)
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert "mpsgen's build needs torch, ninja, jinja2, pyyaml, which this Python" in out, out[-3000:]
    assert "-m pip install torch ninja jinja2 pyyaml`, then run the same command again" in out
    assert sorted(p.name for p in ROOT.iterdir()) == before


def test_a_wheel_needs_a_setuptools_with_bdist_wheel(monkeypatch):
    import importlib.util

    from mpsgen.codegen.package import missing_build_requirements

    real = importlib.util.find_spec
    gone = {"setuptools.command.bdist_wheel", "wheel"}
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None if name in gone else real(name, *a))
    assert missing_build_requirements(["setup.py", "bdist_wheel"]) == ["setuptools>=70.1"]
    assert missing_build_requirements(["setup.py", "build_ext", "--inplace"]) == []
