"""The macOS cross-build (codegen/verify/macos_build.py, `check-macos`) and its symbol check
(codegen/verify/macos_symbols.py): what a Mac would reject or fail to load is caught on Linux.

Needs zig (requirements.txt) and torch's macOS arm64 wheel of the installed torch's version,
which codegen/verify/macos_sdk.py fetches with pip into the cache (once per version). `.ci/run`
runs the whole cross-build of the shipped registry (`python -m codegen check-macos`); these tests
plant what it must catch, each in a unit of its own.
"""
from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from mpsgen.codegen import build
from mpsgen.codegen.build import GENERATED, ROOT
from mpsgen.codegen.verify import clang_check, macos_build, macos_sdk, macos_symbols


@pytest.fixture(scope="module")
def sdk() -> Path:
    return macos_sdk.torch_folder()


def flags(build_dir: Path, sdk: Path) -> list[str]:
    return macos_build.compile_flags(ROOT, build_dir, sdk / "torch" / "include")


# ---- the symbol check: each planted unit leaves one symbol nothing on a Mac exports ----------

PLANTED = {
    # declared in the macOS wheel's headers, defined in no macOS dylib (found from the export list)
    "torch": ("#include <torch/csrc/inductor/aoti_torch/mkldnn_tensor.h>\n"
              "void* planted_torch(at::Tensor* t) { return torch::aot_inductor::data_ptr_from_mkldnn(t); }\n",
              "torch::aot_inductor::data_ptr_from_mkldnn(at::Tensor*)"),
    # GNU libstdc++'s, which a Mac does not have (libc++ and libc++abi have no __gnu_cxx)
    "libstdc++": ("namespace __gnu_cxx { void __verbose_terminate_handler(); }\n"
                  "void planted_libstdcxx() { __gnu_cxx::__verbose_terminate_handler(); }\n",
                  "__gnu_cxx::__verbose_terminate_handler()"),
    # Metal's is MTLCreateSystemDefaultDevice
    "framework": ('extern "C" void* MTLCreateSystemDefaultDevic(void);\n'
                  "void* planted_framework() { return MTLCreateSystemDefaultDevic(); }\n",
                  "_MTLCreateSystemDefaultDevic"),
}
# one symbol from each place a symbol resolves, each used as the Mac build uses it
RESOLVED = (
    '#include <Python.h>\n#include <c10/util/Exception.h>\n#include <cstdlib>\n#include <string>\n'
    'extern "C" void* MTLCreateSystemDefaultDevice(void);\n'
    'extern "C" void* objc_autoreleasePoolPush(void);\n'
    "void planted_torch_helper();\n"
    "std::string resolved(const std::string& s) {\n"
    "  planted_torch_helper();\n"  # defined in another unit: the link
    '  TORCH_CHECK(!s.empty(), "empty");\n'  # c10::detail::torchCheckFail: torch
    '  if (std::getenv("MPSGEN_PLANTED")) return s;\n'  # libSystem
    "  (void)objc_autoreleasePoolPush();\n"  # libobjc, as torch imports it
    "  (void)MTLCreateSystemDefaultDevice();\n"  # Metal, exports.txt
    '  PyErr_SetString(PyExc_RuntimeError, "x");\n'  # Python
    "  return s + s;\n}\n"
)
EXPECTED = {"__Z20planted_torch_helperv": "the link", "_getenv": "libSystem", "_objc_autoreleasePoolPush":
            "Apple, as torch imports it", "_MTLCreateSystemDefaultDevice": "Apple, exports.txt",
            "_PyErr_SetString": "Python"}


@pytest.fixture(scope="module")
def planted(sdk, tmp_path_factory):
    """The planted units and the resolving one, compiled, linked as a Mac links, resolved."""
    tmp = tmp_path_factory.mktemp("macos-planted")
    sources = []
    for name, (code, _) in PLANTED.items():
        sources.append(tmp / f"planted_{name.replace('+', 'x')}.cpp")
        sources[-1].write_text(code + ("void planted_torch_helper() {}\n" if name == "torch" else ""))
    sources.append(tmp / "resolved.cpp")
    sources[-1].write_text(RESOLVED)
    compiled = [macos_build.compile_unit(s, flags(tmp, sdk), tmp) for s in sources]
    assert all(c.ok for c in compiled), [c.messages for c in compiled]
    objects = [c.object for c in compiled]
    assert macos_build.link(objects, tmp / "image.dylib").returncode == 0
    with_libcxx = macos_build.link(objects, tmp / "libcxx.dylib", mac_libcxx=False)
    assert with_libcxx.returncode == 0, with_libcxx.stderr
    result = macos_symbols.resolve([macos_symbols.read_object(c.object, c.name) for c in compiled],
                                   macos_symbols.read_object(tmp / "image.dylib").undefined,
                                   macos_symbols.read_object(tmp / "libcxx.dylib").undefined,
                                   macos_sdk.symbols(sdk), macos_sdk.libsystem_exports())
    return compiled, result


def test_each_planted_symbol_and_nothing_else_is_unresolved(planted):
    compiled, result = planted
    names = macos_symbols.demangle(sorted(result.unresolved))
    found = {names[symbol]: units for symbol, units in result.unresolved.items()}
    assert found == {what: [f"planted_{name.replace('+', 'x')}.cpp"] for name, (_, what) in PLANTED.items()}


def test_every_source_resolves_what_it_exports(planted):
    _, result = planted
    for symbol, source in EXPECTED.items():
        assert result.where.get(symbol) == source, symbol
    torch_check = [s for s in result.where if "torchCheckFail" in s]
    assert torch_check and all(result.where[s] == "torch" for s in torch_check)
    # operator new, std::string's members: libc++'s, resolved through what torch imports or zig's libc++
    assert any(result.where[s] in ("Apple, as torch imports it", "libc++, zig's build") for s in result.where
               if s.startswith("__ZNSt3__1") or s == "__Znwm")


def test_the_report_names_the_symbol_its_unit_and_fails(planted, sdk, capsys):
    compiled, result = planted
    assert macos_build.report(macos_build.CrossBuild(compiled, Path("image"), "", result, sdk), 1.0) == 1
    out = capsys.readouterr().out
    for name, (_, what) in PLANTED.items():
        assert re.search(rf"FAIL unresolved symbol {re.escape(what)} .*used by planted_{re.escape(name.replace('+', 'x'))}"
                         r"\.cpp.*the import would fail on a Mac", out), out
    assert "3 unresolved symbol(s)" in out


def test_torchs_fmt_is_compiled_in_as_the_mac_build_compiles_it(sdk, tmp_path):
    """torch's OperationUtils.h formats kernel names with fmt::format, which calls fmt::vformat:
    no torch dylib exports it, so the Mac build compiles fmt header-only (build.MPS_CXX_FLAGS)."""
    source = tmp_path / "formats.mm"
    source.write_text('#include <fmt/format.h>\n#include <string>\n'
                      'std::string name(int i) { return fmt::format("kernel_{}", i); }\n')

    def unresolved(extra: list[str]) -> set[str]:
        c = macos_build.compile_unit(source, [*flags(tmp_path, sdk), *extra], tmp_path)
        assert c.ok, c.messages
        o = macos_symbols.read_object(c.object)
        r = macos_symbols.resolve([o], o.undefined, None, macos_sdk.symbols(sdk), macos_sdk.libsystem_exports())
        return {n for n in r.unresolved if "fmt" in n}

    assert unresolved(["-UFMT_HEADER_ONLY"]), "without FMT_HEADER_ONLY, fmt::vformat is torch's and unexported"
    assert "-DFMT_HEADER_ONLY" in build.MPS_CXX_FLAGS and unresolved([]) == set()


# ---- what the stand-in SDK names, against Apple's documentation and torch's real imports --------

_INTERFACE = re.compile(r"^@interface (\w+)", re.M)
_C_FUNCTION = re.compile(r"^(?:extern \"C\" )?[\w<>* ]+?\b(\w+)\((?:void|[^)]*\w[^)]*)\);$", re.M)


def test_every_class_and_function_the_stand_in_declares_is_exported_by_apple(sdk):
    listed = macos_symbols.listed_exports()
    imported = {name: lib for lib, names in macos_sdk.symbols(sdk)["imports"].items() for name in names}
    libsystem = macos_sdk.libsystem_exports()
    missing = []
    for header in sorted((ROOT / "support" / "apple_sdk").rglob("*.h")):
        text = header.read_text()
        symbols = [f"_OBJC_CLASS_$_{c}" for c in _INTERFACE.findall(text)]
        symbols += [f"_{f}" for f in _C_FUNCTION.findall(text) if "static inline" not in text.split(f + "(")[0][-40:]]
        missing += [f"{header.name}: {s}" for s in symbols if s not in listed and s not in imported and s not in libsystem]
    assert missing == []


# A program links Foundation (`-framework Foundation`), which re-exports CoreFoundation, where
# NSArray, NSData and NSDictionary are defined today: torch's imports name the library that defines.
REEXPORTS = {"Foundation": ("Foundation", "CoreFoundation")}


def test_the_listed_exports_agree_with_the_libraries_torch_imports_them_from(sdk):
    imported = {name: Path(lib).name for lib, names in macos_sdk.symbols(sdk)["imports"].items() for name in names}
    both = {s: lib for s, lib in macos_symbols.listed_exports().items() if s in imported}
    assert len(both) >= 10  # NSString, NSArray, MTLCompileOptions, MPSGraph, ... torch links them too
    disagree = {s: (lib, imported[s]) for s, lib in both.items()
                if imported[s].split(".")[0] not in REEXPORTS.get(lib, (lib,))}
    assert disagree == {}


# ---- Objective-C++ mistakes only a Mac compile sees, in the `.mm` stubs --------------------------

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


def mps_unit(build_dir: Path, generated: Path) -> Path:
    build.mps_metal_sources_header(build_dir, with_metallib=False, generated=generated)
    return build.host_unity_source(build_dir, "_mps.mm", generated)


@pytest.fixture(scope="module")
def planted_mps(sdk, tmp_path_factory):
    """A copy of generated/ whose elu_mps.mm (an op with params: it includes torch's Objective-C++
    OperationUtils.h) ends with every PLANTED_MPS mistake, its unity unit compiled once for the Mac
    (clang stops at the errors): (the stub, {name: the line of its `// <-`}, the findings, the compiler's output)."""
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
    c = macos_build.compile_unit(mps_unit(tmp, generated), flags(tmp, sdk), tmp)
    return stub, lines, clang_check.parse(c.messages), c.messages


def test_every_planted_mps_mistake_and_nothing_else_is_reported(planted_mps):
    stub, lines, findings, messages = planted_mps
    assert sorted((Path(f.file).resolve(), f.line, f.severity) for f in findings) == \
        sorted((stub.resolve(), line, "error") for line in lines.values()), messages


@pytest.mark.parametrize("name", PLANTED_MPS)
def test_a_planted_mps_mistake_is_reported_at_its_line(planted_mps, name):
    stub, lines, findings, messages = planted_mps
    at_line = [f for f in findings if Path(f.file).resolve() == stub.resolve() and f.line == lines[name]]
    assert [f.severity for f in at_line] == ["error"], messages
    assert PLANTED_MPS[name][1] in at_line[0].message


def test_arc_would_reject_torchs_headers(sdk, tmp_path, monkeypatch):
    """The MPS flags once held -fobjc-arc; torch's OperationUtils.h retains and releases by hand,
    which ARC forbids: a Mac build of any op with params would have failed. The check catches it."""
    monkeypatch.setattr(build, "MPS_CXX_FLAGS", ["-fobjc-arc", "-DFMT_HEADER_ONLY"])
    c = macos_build.compile_unit(mps_unit(tmp_path, GENERATED), flags(tmp_path, sdk), tmp_path)
    errors = [f for f in clang_check.parse(c.messages) if f.severity == "error"]
    assert errors and all(Path(f.file).name == "OperationUtils.h" for f in errors
                          if "explicit message send" in f.message), c.messages
    assert any("ARC forbids explicit message send of 'retain'" in f.message for f in errors)


def test_zigs_lib_folder_is_one_per_machine_and_version_for_every_environment(tmp_path, monkeypatch):
    """The cross-build links with one zig lib folder whichever environment's ziglang runs: zig
    keys the Mac's libc++, which it builds for the link with its own, by that folder's files,
    and each environment's own folder had it built again (about 45 s) over the other's."""
    monkeypatch.setenv("MPSGEN_MACOS_CACHE_DIR", str(tmp_path / "cache"))
    homes = []
    for venv in ("venv-a", "venv-b"):
        home = tmp_path / venv / "ziglang"
        (home / "lib" / "libcxx" / "src").mkdir(parents=True)
        (home / "lib" / "libcxx" / "src" / "algorithm.cpp").write_text(f"// {venv}\n")
        homes.append(home)
    monkeypatch.setattr(macos_sdk, "zig_home", lambda: homes[0])
    folder = macos_sdk.zig_lib_dir()
    monkeypatch.setattr(macos_sdk, "zig_home", lambda: homes[1])
    assert macos_sdk.zig_lib_dir() == folder
    assert folder.parent.parent == tmp_path / "cache" and folder.name == "lib"
    made = folder / "libcxx" / "src" / "algorithm.cpp"
    assert made.read_text() == "// venv-a\n"  # made once, from the first
    assert made.stat().st_ino == (homes[0] / "lib" / "libcxx" / "src" / "algorithm.cpp").stat().st_ino  # a hard link
    assert [p.name for p in (tmp_path / "cache").iterdir()] == [folder.parent.name]  # nothing staged is left
