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


MPS_UNIT = "host mpsgen_host_mps.mm as Objective-C++"


def test_shipped_mps_stubs_pass_as_objective_cpp(tmp_path):
    """The .mm stubs, parsed as Objective-C++ against the stand-in SDK (support/apple_sdk), with
    torch's MPS headers and so its Objective-C++ template bodies instantiated for the generated
    params structs (elu's exec_unary_kernel_with_params, addcmul's ternary_with_params)."""
    result = clang_check.check_unit(host_unit(tmp_path, GENERATED, MPS_UNIT), CLANG, tmp_path)
    assert result.findings == [], result.stderr
    units = {u.name for u in clang_check.host_units(tmp_path, GENERATED)}
    assert {MPS_UNIT, "host metal_library.mm as Objective-C++"} <= units


# Mistakes only an Objective-C++ parse sees (as C++, the .mm stubs never reach them), and a C++
# one (arithmetic on void*, a GNU extension g++ accepts): each in a function of its own
PLANTED_MPS = {
    # Metal's selector is setBytes:length:atIndex:; Apple clang only warns, the call fails at run time
    "wrong selector": ("[[maybe_unused]] void elu_bind(id<MTLComputeCommandEncoder> encoder, float x) {\n"
                       "  [encoder setBytes:&x length:sizeof(x) index:0];  // <-\n}\n",
                       "instance method '-setBytes:length:index:' not found"),
    # a class method that MTLCaptureManager does not have (it is sharedCaptureManager)
    "wrong class method": ("[[maybe_unused]] BOOL elu_capturing() {\n"
                           "  return [[MTLCaptureManager sharedManager] isCapturing];  // <-\n}\n",
                           "class method '+sharedManager' not found"),
    # a block's parameter list that does not match the handler type Metal declares
    "wrong block type": ("[[maybe_unused]] void elu_when_done(id<MTLCommandBuffer> buffer) {\n"
                         "  [buffer addCompletedHandler:^(int status) { (void)status; }];  // <-\n}\n",
                         "cannot initialize a parameter of type 'MTLCommandBufferHandler'"),
    "C++: arithmetic on void*": ("[[maybe_unused]] const char* elu_next(void* p) {\n"
                                 "  return static_cast<const char*>(p + 1);  // <-\n}\n",
                                 "arithmetic on a pointer to void"),
}


@pytest.fixture(scope="module")
def planted_mps(tmp_path_factory):
    """A copy of generated/ whose elu_mps.mm (an op with params: it includes torch's Objective-C++
    OperationUtils.h) ends with every PLANTED_MPS mistake, checked once (one parse of the unit,
    7 s, serves every mistake): (the stub, {name: the line of its `// <-`}, the result)."""
    tmp = tmp_path_factory.mktemp("planted-mps")
    generated = tmp / "generated"
    shutil.copytree(GENERATED, generated)
    stub = generated / "elu_mps.mm"
    text = stub.read_text() + "namespace {\n"
    lines = {}
    for name, (code, _) in PLANTED_MPS.items():
        lines[name] = text.count("\n") + code.split("// <-")[0].count("\n") + 1
        text += code
    stub.write_text(text + "}  // namespace\n")
    return stub, lines, clang_check.check_unit(host_unit(tmp / "build", generated, MPS_UNIT), CLANG, tmp / "build")


def test_every_planted_mps_mistake_and_nothing_else_is_reported(planted_mps):
    stub, lines, result = planted_mps
    assert sorted((Path(f.file).resolve(), f.line, f.severity) for f in result.findings) == \
        sorted((stub.resolve(), line, "error") for line in lines.values()), result.stderr


@pytest.mark.parametrize("name", PLANTED_MPS)
def test_a_planted_mps_mistake_is_reported_at_its_line(planted_mps, name):
    stub, lines, result = planted_mps
    at_line = [f for f in result.findings if Path(f.file).resolve() == stub.resolve() and f.line == lines[name]]
    assert [f.severity for f in at_line] == ["error"], result.stderr
    assert PLANTED_MPS[name][1] in at_line[0].message


def test_arc_would_reject_torchs_headers(tmp_path, monkeypatch):
    """The MPS flags once held -fobjc-arc; torch's OperationUtils.h retains and releases by hand,
    which ARC forbids: a Mac build of any op with params would have failed. The check catches it."""
    monkeypatch.setattr(build, "MPS_CXX_FLAGS", ["-fobjc-arc"])
    result = clang_check.check_unit(host_unit(tmp_path, GENERATED, MPS_UNIT), CLANG, tmp_path)
    errors = [f for f in result.findings if f.severity == "error"]
    assert errors and all(Path(f.file).name == "OperationUtils.h" for f in errors
                          if "explicit message send" in f.message), result.stderr
    assert any("ARC forbids explicit message send of 'retain'" in f.message for f in errors)


def test_missing_clang_fails_with_how_to_get_it(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "ziglang", None)  # import ziglang raises ImportError
    assert check_metal.main(GENERATED, ["hypot"]) == 1
    err = capsys.readouterr().err
    assert "cannot import ziglang" in err and "requirements.txt" in err and "bash run.sh" in err
