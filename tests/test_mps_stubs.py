"""The macOS sources, compiled on any machine as C++ with -fsyntax-only.

This checks the generated .mm host stubs and support/mps against the installed
torch headers (MetalShaderLibrary.h has non-Objective-C fallbacks for its
types). It cannot check Objective-C, Metal compilation or GPU execution:
those need a Mac.
"""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from mpsgen.codegen import build
from mpsgen.codegen.registry.loader import load

pytestmark = pytest.mark.quick  # bash test.sh --quick (tests/conftest.py)

ROOT = Path(__file__).resolve().parent.parent
COMPILER = shutil.which("c++") or shutil.which("g++")


@pytest.mark.skipif(COMPILER is None, reason="needs a C++ compiler")
def test_mps_host_stubs_compile_as_cpp(tmp_path):
    from torch.utils.cpp_extension import include_paths

    stubs = sorted((ROOT / "generated").glob("*_mps.mm"))
    registry = load(ROOT / "ops.yaml")
    assert len(stubs) == len(registry.ops) + len(registry.compute_ops)
    build.mps_metal_sources_header(tmp_path, with_metallib=False)
    # One translation unit for all of them: each stub's names are op-prefixed.
    unit = tmp_path / "all_mps_stubs.cpp"
    unit.write_text("".join(f'#include "{p}"\n' for p in stubs + [ROOT / "support/mps/metal_library.mm"]))
    includes = [*include_paths(), ROOT / "support/host", ROOT / "support/mps", tmp_path]
    cmd = [COMPILER, "-std=c++20", "-fsyntax-only", "-x", "c++", *[f"-I{p}" for p in includes], str(unit)]
    result = subprocess.run(cmd, capture_output=True, text=True)
    assert result.returncode == 0, result.stderr[-4000:]


def test_embedded_metal_source_is_self_contained(tmp_path):
    header = build.mps_metal_sources_header(tmp_path, with_metallib=False).read_text()
    # Runtime-compiled Metal has no include path: every c10/metal include is inlined, and so
    # are the project's own headers (support/metal/mpsgen)
    assert "#include <c10/metal" not in header
    assert "#include <mpsgen/" not in header
    assert "inline float2 reciprocal(const float2 z)" in header  # mpsgen/complex_math.h
    assert "kernel void ternary_alpha_dense(" in header  # mpsgen/ternary_alpha.h
    assert "REGISTER_UNARY_OP(exp, float, float);" in header
    assert "struct exp_functor" in header


def test_the_metallibs_compile_with_torchs_safe_math(tmp_path, monkeypatch):
    """The Metal compiler's default is fast math; torch compiles its own .metal with
    -fno-fast-math and runtime-compiles with safe math. A stand-in `xcrun` on PATH records the
    command the build runs for an op's metallib."""
    log = tmp_path / "xcrun.log"
    fake = tmp_path / "bin" / "xcrun"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\n"
                    f'echo "$@" >> "{log}"\n'
                    'case "$*" in *--version*) echo "Apple metal version 32023.0"; exit 0;; esac\n'
                    'while [ $# -gt 1 ]; do [ "$1" = "-o" ] && : > "$2"; shift; done\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{fake.parent}:{os.environ['PATH']}")
    metal = ROOT / "generated" / "exp.metal"
    assert build._metallib(metal, metal.read_text(), tmp_path) == b""
    compile_line = next(line for line in log.read_text().splitlines() if " -c " in f" {line} ")
    assert "-fno-fast-math" in compile_line.split() and "-std=metal3.1" in compile_line.split()
