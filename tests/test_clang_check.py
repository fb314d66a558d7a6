"""check-metal's clang step (codegen/verify/clang_check.py): what Apple clang would reject in the CPU
kernels and host stubs is reported, though g++ accepts it; the shipped units pass.

Needs clang from the set-up (PyPI's ziglang, requirements.txt), g++ and torch's headers,
not the built extension.
"""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from test_check_metal import marked_line, metal_source, unary

from mpsgen.codegen.verify import check_metal, clang_check
from mpsgen.codegen import clang
from mpsgen.codegen import build
from mpsgen.codegen.build import CPU_SUPPORT, GENERATED, SHIM_INCLUDE, torch_include

CLANG = clang.clang_command()  # a missing clang fails the suite, as it fails CI's check-metal


def host_unit(build_dir: Path, generated: Path, name: str) -> clang_check.Unit:
    units = {u.name: u for u in clang_check.host_units(build_dir, generated)}
    return units[name]


def test_kernel_unit_reports_what_clang_rejects_and_gcc_accepts(tmp_path):
    # arithmetic on void* is a GNU extension g++ accepts (a -Wpointer-arith warning); clang rejects it
    functor = unary("float v = static_cast<float>(x);\nthread void* p = &v;\n"
                    "thread const char* q = static_cast<thread const char*>(p + 1);  // <-\n"
                    "return static_cast<T>(v + float(q != nullptr));")
    metal = tmp_path / "foo.metal"
    metal.write_text(metal_source(functor))

    strict, gcc_output = check_metal.check_file(metal, [SHIM_INCLUDE, CPU_SUPPORT, torch_include()])
    assert strict == [] and "pointer-arith" in gcc_output  # g++: a warning, not an error

    result = clang_check.check_unit(clang_check.kernel_units([metal])[0], CLANG, tmp_path)
    assert result.rejected, result.stderr
    errors = [f for f in result.findings if f.severity == "error"]
    assert [(f.file, f.line) for f in errors] == [("ops.yaml", marked_line(functor))], result.stderr
    assert "arithmetic on a pointer to void" in errors[0].message


LATER_CXX = {  # Metal 3.1 is C++14: what C++17 and C++20 added, each where a functor would write it
    "constexpr if": (unary("if constexpr (sizeof(T) == 2) {  // <-\n  return x;\n}\nreturn x + x;"), "constexpr if"),
    "if with an initializer": (unary("if (float v = static_cast<float>(x); v > 0.0f) {  // <-\n  return x;\n}\n"
                                     "return T(0);"), "if initialization statements"),
    "structured binding": (unary("auto [hi, lo] = parts{static_cast<float>(x), 1.0f};  // <-\n"
                                 "return static_cast<T>(hi - lo);", "struct parts { float hi, lo; };\n"),
                           "structured binding declarations"),
    "nested namespace": (unary("return static_cast<T>(a::b::twice(static_cast<float>(x)));",
                               "namespace a::b {  // <-\ninline float twice(float v) { return 2.0f * v; }\n}\n"),
                         "nested namespace definition"),
    "fold expression": (unary("return static_cast<T>(sum(static_cast<float>(x), 1.0f));",
                              "template <typename... Ts>\ninline float sum(Ts... v) { return (v + ...); }  // <-\n"),
                        "pack fold expression"),
}


@pytest.mark.parametrize("feature", LATER_CXX)
def test_kernel_unit_rejects_cxx17_in_the_users_code(tmp_path, feature):
    """g++ (C++20) compiles them; the clang step holds the kernel's own code to C++14 and lets the
    shim's and launcher's C++17 pass (every shipped unit passes: test_cli_checks_shipped_ops)."""
    functor, says = LATER_CXX[feature]
    metal = tmp_path / "foo.metal"
    metal.write_text(metal_source(functor))
    strict, _ = check_metal.check_file(metal, [SHIM_INCLUDE, CPU_SUPPORT, torch_include()])
    assert strict == []
    result = clang_check.check_unit(clang_check.kernel_units([metal])[0], CLANG, tmp_path)
    assert result.rejected, result.stderr
    assert [(f.file, f.line, f.severity) for f in result.findings] == \
        [("ops.yaml", marked_line(functor), "error")], result.stderr
    assert result.findings[0].message.startswith(f"Metal 3.1 is C++14: {says}")


def test_host_unit_reports_what_clang_rejects_and_gcc_accepts(tmp_path):
    # arithmetic on void* is a GNU extension g++ accepts (a -Wpointer-arith warning); clang rejects it
    snippet = "[[maybe_unused]] const char* hypot_next_byte(void* p) { return static_cast<const char*>(p + 1); }\n"
    gcc = subprocess.run(["g++", "-std=c++20", "-fsyntax-only", "-x", "c++", "-"], input=snippet,
                         capture_output=True, text=True)
    assert gcc.returncode == 0, gcc.stderr

    generated = tmp_path / "generated"
    shutil.copytree(GENERATED, generated)
    stub = generated / "hypot_cpu.cpp"
    text = stub.read_text()
    stub.write_text(text + "namespace {\n" + snippet + "}\n")
    bad_line = text.count("\n") + 2

    result = clang_check.check_unit(host_unit(tmp_path / "build", generated, "host mpsgen_host_cpu.cpp"),
                                    CLANG, tmp_path / "build")
    # the injected line, and nothing else of the shipped CPU host stubs, is reported
    assert [(Path(f.file).resolve(), f.line, f.severity) for f in result.findings] == \
        [(stub.resolve(), bad_line, "error")], result.stderr
    assert "arithmetic on a pointer to void" in result.findings[0].message


def test_missing_clang_fails_with_how_to_get_it(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ziglang", None)  # import ziglang raises ImportError
    assert check_metal.main(GENERATED, ["hypot"]) == 1
    err = capsys.readouterr().err
    assert "cannot import ziglang" in err and "requirements.txt" in err and "bash run.sh" in err
