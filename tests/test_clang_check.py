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

from test_check_metal import marked_line, metal_source, unary

from mpsgen.codegen.verify import check_metal, clang_check
from mpsgen.codegen import clang
from mpsgen.codegen.build import CPU_SUPPORT, GENERATED, SHIM_INCLUDE, torch_include

CLANG = clang.clang_command()  # a missing clang fails the suite, as it fails CI's check-metal


def host_unit(build_dir: Path, generated: Path, name: str) -> clang_check.Unit:
    units = {u.name: u for u in clang_check.host_units(build_dir, generated)}
    return units[name]


def test_kernel_unit_reports_what_clang_rejects_and_gcc_accepts(tmp_path):
    # `register` is only a warning to g++ in C++17 and later; clang rejects it (as Apple clang does)
    functor = unary("register float acc = static_cast<float>(x);  // <-\nreturn static_cast<T>(acc * 2.0f);")
    metal = tmp_path / "foo.metal"
    metal.write_text(metal_source(functor))

    strict, gcc_output = check_metal.check_file(metal, [SHIM_INCLUDE, CPU_SUPPORT, torch_include()])
    assert strict == [] and "register" in gcc_output  # g++: a warning, not an error

    result = clang_check.check_unit(clang_check.kernel_units([metal])[0], CLANG, tmp_path)
    assert result.rejected, result.stderr
    errors = [f for f in result.findings if f.severity == "error"]
    assert [(f.file, f.line) for f in errors] == [("ops.yaml", marked_line(functor))], result.stderr
    assert "'register' storage class specifier" in errors[0].message


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


def test_shipped_mps_stubs_pass_as_cpp(tmp_path):
    result = clang_check.check_unit(host_unit(tmp_path, GENERATED, "host mpsgen_host_mps.mm as C++"), CLANG, tmp_path)
    assert result.findings == [], result.stderr
    # only the Objective-C++-only template bodies were missing, and those errors alone were dropped
    assert "is used but not defined in this translation unit" in result.stderr


OBJC_ONLY = ("/t/torch/include/ATen/native/mps/MetalShaderLibrary.h:199:8: error: function "
             "'at::native::mps::MetalShaderLibrary::exec_unary_kernel_with_params<(anonymous namespace)::"
             "elu_params<float>>' is used but not defined in this translation unit, and cannot be defined in "
             "any other translation unit because its type does not have linkage\n"
             "/w/generated/elu_mps.mm:40:5: note: used here\n")
OTHER_UNDEFINED = OBJC_ONLY.replace("at::native::mps::MetalShaderLibrary::exec_unary_kernel_with_params",
                                    "mpsgen::helper")
WARNING = "/w/generated/elu_mps.mm:12:7: warning: unused variable 'k' [-Wunused-variable]\n"


def test_only_objective_cpp_body_errors_are_dropped_and_only_from_mm_units():
    findings, dropped = clang_check.parse(OBJC_ONLY + OTHER_UNDEFINED + WARNING, objc_stand_in=True)
    assert dropped == 1
    assert "function 'mpsgen::helper<" in findings[0].message
    assert [(f.file, f.line, f.col, f.severity) for f in findings] == [
        ("/t/torch/include/ATen/native/mps/MetalShaderLibrary.h", 199, 8, "error"),
        ("/w/generated/elu_mps.mm", 12, 7, "warning")]
    findings, dropped = clang_check.parse(OBJC_ONLY, objc_stand_in=False)
    assert dropped == 0 and len(findings) == 1 and findings[0].severity == "error"


def test_missing_clang_fails_with_how_to_get_it(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ziglang", None)  # import ziglang raises ImportError
    assert check_metal.main(GENERATED, ["hypot"]) == 1
    err = capsys.readouterr().err
    assert "cannot import ziglang" in err and "requirements.txt" in err and "bash run.sh" in err
