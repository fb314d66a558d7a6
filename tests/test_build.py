"""The build steps of codegen/build.py: what is prepared again after an edit, and the log.

An edit to one functor must compile that op's kernels again and nothing else (issue 12):
moving the ops below it to other ops.yaml lines changes their `#line`s and comments only,
which change no compiled code. These tests check that against the preprocessor itself: a
unit is kept only when its code would be the same, and one whose code reads `__LINE__` is
made again.
"""
from __future__ import annotations

import json
import os
import re
import shutil
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mpsgen.codegen import build, ninja_build
from test_codegen import generate_ok, registry, unary_op, write_ops

BASE_PYTHON = getattr(sys, "_base_executable", sys.executable)  # the interpreter of this venv

UNARY = "      template <typename T>\n      inline T operator()(const T x) {\n        return x;\n      }\n"


def _op(name: str, body: str = UNARY) -> str:
    return unary_op(name).replace(
        "      template <typename T>\n      inline T operator()(const T x) {\n        return x;\n      }\n", body)


def _prepare(tmp_path, text):
    """Generate `text` into tmp_path/out and prepare its CPU build units in tmp_path/build."""
    out, units = tmp_path / "out", tmp_path / "build"
    units.mkdir(exist_ok=True)
    generate_ok(write_ops(tmp_path, text), out)
    kernels = {p.stem.removesuffix("_kernels"): p.read_text() for p in build.cpu_kernel_sources(units, generated=out)}
    host = build.host_unity_source(units, "_cpu.cpp", generated=out).read_text()
    return kernels, host, (out / "op_specs.cpp").read_text()


# a functor edit that adds a line, moving every op after it one ops.yaml line down
LONGER = UNARY.replace("        return x;\n", "        // one more line\n        return x;\n")


def test_moving_an_op_to_other_lines_prepares_only_the_edited_op(tmp_path):
    kernels, host, specs = _prepare(tmp_path, registry(_op("first"), _op("second")))
    kernels2, host2, specs2 = _prepare(tmp_path, registry(_op("first", LONGER), _op("second")))
    assert kernels2["first"] != kernels["first"] and "one more line" not in kernels["first"]
    assert kernels2["second"] == kernels["second"]  # its #line numbers moved; not made again
    assert host2 == host  # the stubs name their ops.yaml lines in comments only
    # the op's line is data: op_specs.cpp (a small unit) has the new one
    line = lambda text: int(re.search(r'"\w+::second",\s*"ops\.yaml:(\d+)"', text).group(1))
    assert line(specs2) == line(specs) + 1


def test_a_kernel_that_reads_its_line_is_made_again_when_it_moves(tmp_path):
    reads_line = UNARY.replace("return x;", "return x + static_cast<T>(__LINE__ * 0);")
    kernels, _, _ = _prepare(tmp_path, registry(_op("first"), _op("second", reads_line)))
    kernels2, _, _ = _prepare(tmp_path, registry(_op("first", LONGER), _op("second", reads_line)))
    assert kernels2["second"] != kernels["second"]


def test_a_changed_header_prepares_every_op_again(tmp_path, monkeypatch):
    kernels, _, _ = _prepare(tmp_path, registry(_op("first")))
    shim = tmp_path / "shim"
    shutil.copytree(build.SHIM_INCLUDE, shim)
    (shim / "metal_stdlib").write_text((shim / "metal_stdlib").read_text() + "\n// edited\n")
    monkeypatch.setattr(build, "SHIM_INCLUDE", shim)
    unit = tmp_path / "build" / "first_kernels.cpp"
    before = unit.read_text().splitlines()[0]
    build.cpu_kernel_sources(tmp_path / "build", generated=tmp_path / "out")
    assert unit.read_text().splitlines()[0] != before  # a new key: the unit was made again


def _ninja_build(folder, source: str) -> None:
    (folder / "unit.cpp").write_text(source)
    (folder / "build.ninja").write_text(textwrap.dedent(f"""\
        rule cxx
          command = c++ -O2 -Wall -fPIC -DSOME_LONG_FLAG=1 -c $in -o $out
        build {folder}/unit.o: cxx {folder}/unit.cpp
        """))
    ninja_build.run_ninja(str(folder), verbose=False, error_prefix="Error compiling objects")


def test_build_log_is_one_line_per_unit_and_the_compilers_messages(tmp_path, capsys):
    _ninja_build(tmp_path, "int f() { int unused_thing = 0; return 1; }\n")
    log = capsys.readouterr().out
    assert [line for line in log.splitlines() if line.startswith("[")] == [f"[1/1] c++ {tmp_path}/unit.cpp"]
    assert "-DSOME_LONG_FLAG" not in log  # no command lines
    assert "unused_thing" in log and "warning" in log  # the compiler's own message, in full


def test_build_log_shows_errors_and_fails(tmp_path, capsys):
    with pytest.raises(RuntimeError, match="Error compiling objects"):
        _ninja_build(tmp_path, "int f() { return undeclared_name; }\n")
    log = capsys.readouterr().out
    assert "undeclared_name" in log and "error" in log


def test_ninja_compiles_the_longest_units_first(tmp_path, capsys, monkeypatch):
    """The host units (ATen headers and code per op) first, then the kernel units by their
    number of kernels: torch writes build.ninja sorted by path, and ninja 1.11 starts ready
    steps in the file's order, so one core compiled the last host unit alone at the end."""
    sources = {"a_kernels.cpp": 1, "b_kernels.cpp": 3, "c_kernels.cpp": 2, "module.cpp": 0}
    for name, kernels in sources.items():
        (tmp_path / name).write_text("// register_kernel(\n" * kernels + "int f() { return 0; }\n")
    (tmp_path / "build.ninja").write_text(
        "rule compile\n  command = c++ -c $in -o $out\n"
        + "".join(f"build {tmp_path}/{n[:-4]}.o: compile {tmp_path}/{n}\n" for n in sorted(sources)))
    monkeypatch.setenv("MAX_JOBS", "1")
    ninja_build.run_ninja(str(tmp_path), verbose=False, error_prefix="Error compiling objects")
    steps = [line.split("/")[-1] for line in capsys.readouterr().out.splitlines() if line.startswith("[")]
    assert steps == ["module.cpp", "b_kernels.cpp", "c_kernels.cpp", "a_kernels.cpp"]
    # only the order changed, and each step runs through the object cache (codegen/objcache.py)
    assert (f"rule compile\n  command = {BASE_PYTHON} {ninja_build.OBJCACHE} c++ -c $in -o $out\n"
            in (tmp_path / "build.ninja").read_text())


def test_every_compile_step_runs_through_the_object_cache_once(tmp_path):
    ninja = tmp_path / "build.ninja"
    ninja.write_text("rule compile\n  command = c++ -c $in -o $out\n\nrule compile_kernels\n  command = zig clang -c $in\n")
    ninja_build.compile_through_cache(ninja)
    ninja_build.compile_through_cache(ninja)  # a second pass changes nothing
    text = ninja.read_text()
    assert text.count(str(ninja_build.OBJCACHE)) == 2
    # run by the Python the venv was made from: every venv of it writes the same commands
    assert f"command = {BASE_PYTHON} {ninja_build.OBJCACHE} zig clang -c $in\n" in text


def test_units_compile_with_their_own_rules(tmp_path):
    """Kernel and host units get clang's rules (build.kernel_compiler), without the flags for g++
    alone; the executor keeps torch's rule (g++), with -fopenmp, which no other unit gets."""
    ninja = tmp_path / "build.ninja"
    text = ("cflags = -Ifoo\npost_cflags = -O2 -fpeel-loops -DTORCH_EXTENSION_NAME=_C\n\n"
            "rule compile\n  command = c++ $cflags -c $in -o $out $post_cflags\n\n"
            f"build {tmp_path}/add_kernels.o: compile {tmp_path}/add_kernels.cpp\n"
            f"build {tmp_path}/row_sum_checked_kernels.o: compile {tmp_path}/row_sum_checked_kernels.cpp\n"
            f"build {tmp_path}/module.o: compile {tmp_path}/module.cpp\n"
            f"build {tmp_path}/executor.o: compile {tmp_path}/executor.cpp\n"
            f"build {tmp_path}/stubs.o: compile {tmp_path}/stubs.mm\n")
    ninja.write_text(text)
    ninja_build.assign_compilers(ninja, ["zig", "clang"], ["-fopenmp"])
    ninja_build.assign_compilers(ninja, ["zig", "clang"], ["-fopenmp"])  # a second pass changes nothing
    out = ninja.read_text()
    rules = dict(re.findall(r"rule (\w+)\n  command = ([^\n]*)\n", out))
    assert sorted(rules) == ["compile", "compile_checked_kernels", "compile_host", "compile_kernels", "compile_openmp"]
    assert rules["compile_kernels"].startswith("zig clang ") and "$cflags" in rules["compile_kernels"]
    assert "-O2" in rules["compile_kernels"] and "post_cflags" not in rules["compile_kernels"]
    assert rules["compile_host"].startswith("zig clang ") and rules["compile_host"].endswith(" $clang_post_cflags")
    assert "\nclang_post_cflags = -O2 -DTORCH_EXTENSION_NAME=_C\n" in out  # g++'s -fpeel-loops left out
    assert rules["compile_openmp"] == "c++ $cflags -c $in -o $out $post_cflags -fopenmp"
    assert f"build {tmp_path}/add_kernels.o: compile_kernels {tmp_path}/add_kernels.cpp\n" in out
    assert f"build {tmp_path}/module.o: compile_host {tmp_path}/module.cpp\n" in out
    # a compute kernel's checked variant: instrumented, then its symbols made its own
    assert f"build {tmp_path}/row_sum_checked_kernels.o: compile_checked_kernels {tmp_path}/row_sum_checked_kernels.cpp\n" in out
    assert rules["compile_checked_kernels"].startswith(rules["compile_kernels"] + " -fsanitize=thread ")
    assert rules["compile_checked_kernels"].endswith(" && objcopy --wildcard --localize-symbol='*' --remove-section=.group $out")
    assert f"build {tmp_path}/executor.o: compile_openmp {tmp_path}/executor.cpp\n" in out
    assert f"build {tmp_path}/stubs.o: compile {tmp_path}/stubs.mm\n" in out  # Objective-C++: torch's
    ninja.write_text(text)
    ninja_build.assign_compilers(ninja, ["c++"])  # without clang (nor OpenMP): torch's rule for all
    assert ninja.read_text() == text


@pytest.mark.parametrize("setting, flags, level", [
    ("all", None, (2, True)), ("avx2", None, (1, True)), ("baseline", None, (0, True)), (" AVX512 ", None, (2, True)),
    # native: the one variant of each kernel the machine runs
    ("native", {"avx2", "f16c", "fma", "avx512f", "avx512vl", "avx512bw", "avx512dq"}, (2, False)),
    ("native", {"avx2", "f16c", "fma", "avx512f"}, (1, False)),  # AVX-512 without BW, DQ, VL: the AVX2 level
    ("native", {"avx2", "f16c", "sse4_2"}, (0, False)),  # AVX2 without FMA: baseline only
    ("", None, (2, True)),  # native, on a machine whose features are unknown (not x86-64): every variant
])
def test_cpu_variants_follow_the_setting_or_the_building_machine(monkeypatch, setting, flags, level):
    monkeypatch.setenv("MPSGEN_CPU_VARIANTS", setting)
    monkeypatch.setattr(build, "_machine_cpu_flags", lambda: flags)
    build.cpu_variants.cache_clear()
    try:
        assert build.cpu_variants() == level
    finally:
        build.cpu_variants.cache_clear()


def test_cpu_variants_refuse_an_unknown_setting(monkeypatch):
    monkeypatch.setenv("MPSGEN_CPU_VARIANTS", "avx3")
    build.cpu_variants.cache_clear()
    try:
        with pytest.raises(SystemExit, match="MPSGEN_CPU_VARIANTS='avx3': expected native, all, baseline, avx2, avx512"):
            build.cpu_variants()
    finally:
        build.cpu_variants.cache_clear()


def test_the_link_runs_only_when_an_object_or_the_link_changed(tmp_path):
    from mpsgen.codegen.package import link_when_stale

    calls = []

    class Compiler:  # a distutils compiler's link, running its command through `call`
        def link(self, target_desc, objects, output_filename, output_dir=None, *args, **kwargs):
            calls.append(list(objects))
            self.call(["ld", *objects, "-o", output_filename])
            Path(output_dir, output_filename).write_text("linked")

        def call(self, command):
            pass

    a, b = tmp_path / "a.o", tmp_path / "b.o"
    a.write_text("a")
    b.write_text("b")
    out = tmp_path / "lib"
    out.mkdir()
    linker = link_when_stale(Compiler(), tmp_path / "temp")
    linker("shared_object", [str(a), str(b)], "_C.so", str(out), ["-lfoo"])
    linker("shared_object", [str(a), str(b)], "_C.so", str(out), ["-lfoo"])  # nothing changed
    assert len(calls) == 1
    # what it ran, kept for the builds without torch (codegen/uptodate.py)
    record = json.loads((tmp_path / "temp" / "_C.so.link.json").read_text())
    assert record["commands"] == [["ld", str(a), str(b), "-o", "_C.so"]] and record["output"] == str(out / "_C.so")
    os.utime(a, (time.time() + 5, time.time() + 5))  # an object compiled again
    linker("shared_object", [str(a), str(b)], "_C.so", str(out), ["-lfoo"])
    assert len(calls) == 2
    linker("shared_object", [str(a)], "_C.so", str(out), ["-lfoo"])  # one object less
    linker("shared_object", [str(a)], "_C.so", str(out), ["-lbar"])  # another library
    assert len(calls) == 4
    (out / "_C.so").unlink()  # the output removed
    linker("shared_object", [str(a)], "_C.so", str(out), ["-lbar"])
    assert len(calls) == 5


def test_torch_version_is_torchs_with_or_without_its_metadata(monkeypatch):
    """The kernel units' key reads torch's version without importing torch where it can."""
    import importlib.metadata

    import torch

    assert build.torch_version() == torch.__version__

    def no_metadata(name):
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", no_metadata)
    assert build.torch_version() == torch.__version__


def test_without_clang_torchs_address_space_overloads_are_refused_with_the_reason(tmp_path, monkeypatch):
    """Without ziglang the kernel units fall back to the host compiler, whose shim spells both
    `constant void*` and `device const void*` as `const void*`: torch 2.14's indexing.h overloads
    val_at_offs on them, one function twice. Asked of the headers (issue 48): the build says so
    and what to install, where it printed the compiler's "redefinition of val_at_offs"; with
    2.13's headers it still falls back to the host compiler."""
    from mpsgen.codegen.clang import ClangMissing

    def missing():
        raise ClangMissing("check-metal needs clang and cannot import ziglang: install ...")

    headers = tmp_path / "include"
    (headers / "c10" / "metal").mkdir(parents=True)
    indexing = headers / "c10" / "metal" / "indexing.h"
    monkeypatch.setattr(build, "clang_command", missing)
    monkeypatch.setattr(build, "torch_include", lambda: headers)
    monkeypatch.setattr(build.sys, "platform", "linux")
    build.kernel_compiler.cache_clear()
    try:
        # 2.14.1's two overloads, as its c10/metal/indexing.h declares them
        indexing.write_text("template <typename T>\ninline T val_at_offs(constant void* ptr, long offs) {}\n"
                            "template <typename T>\ninline T val_at_offs(device const void* ptr, long offs) {}\n")
        with pytest.raises(ClangMissing, match=r"c10/metal overloads val_at_offs on Metal's `constant` and `device` "
                                               r"pointers, .* cannot build them: check-metal needs clang"):
            build.kernel_compiler()
        build.kernel_compiler.cache_clear()
        # 2.13.0's: a device pointer without const, a function of its own under the host compiler too
        indexing.write_text("inline T val_at_offs(constant void* ptr, long offs) {}\n"
                            "inline T val_at_offs(device void* ptr, long offs) {}\n")
        assert build.kernel_compiler() == ("c++",)
    finally:
        build.kernel_compiler.cache_clear()
