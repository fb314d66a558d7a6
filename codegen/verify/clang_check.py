"""clang, syntax only, over what macOS compiles with Apple clang (run by `python -m codegen check-metal`).

The extension has only ever been compiled with g++ on Linux; on macOS the same sources go
through Apple clang, which rejects some C++ that g++ accepts (`register` in C++17, arithmetic
on `void*`, a declared-only template used with a type without linkage, ...). This step
compiles, with clang's -fsyntax-only and the build's own flags, each unit as setup.py builds
it (codegen/build.py):

- kernels: each op's CPU translation unit (build.cpu_kernel_unit), the `.metal` preprocessed
  by clang itself through the Metal host shim, as on macOS. torch's headers are flagged as
  system headers in its line markers (host_names.preprocess), so their warnings stay quiet
  and errors in a functor point at its ops.yaml line;
- host: build.host_sources: the CPU stubs' unity unit and the support sources as C++, against
  the installed torch's headers. Torch and Python include dirs are -isystem (nothing parses this
  preprocessor output, so -isystem's extra line markers do no harm).

The `.mm` units (the MPS stubs' unity unit, support/mps/metal_library.mm) are compiled by the macOS
cross-build instead (`check-macos`, codegen/verify/macos_build.py): as Objective-C++ for
aarch64-macos, on Apple's Objective-C runtime headers, against torch's macOS headers.

clang comes from PyPI's `ziglang` (requirements.txt): `zig clang` is clang's own driver,
used here with the system's GNU toolchain (libstdc++, glibc) and zig's clang builtin headers.
(Not `zig c++`: it builds libc++ and glibc stubs on first use, minutes on two cores, and its
-fsyntax-only fails renaming an object file it never wrote.)
"""
from __future__ import annotations

import re
import subprocess
import sysconfig
import time
from dataclasses import dataclass
from pathlib import Path

from .. import build
from ..clang import clang_version
from .finding import Finding

# What torch.utils.cpp_extension adds to the extension's compile (see its build.ninja).
TORCH_FLAGS = ["-std=c++20", "-DTORCH_API_INCLUDE_EXTENSION_H", "-DTORCH_EXTENSION_NAME=_C"]

# Metal 3.1 (-std=metal3.1, build.METAL_FLAGS) is C++14 with Metal's extensions, and Metal 4 the first
# on C++17 (torch's c10/metal/common.h says so of `if constexpr`). The kernel unit is C++20 for the CPU
# launcher around it, so clang warns of every later feature (-Wpre-c++17-compat, ...) and those in the
# kernel's own code (the .metal and the ops.yaml lines in it) become errors; the rest are dropped.
METAL_LANGUAGE_FLAGS = ["-Wpre-c++17-compat", "-Wpre-c++20-compat", "-Wpre-c++23-compat"]
_LATER_CXX = re.compile(r"(?P<what>.*) (?:is|are) incompatible with C\+\+ standards before (?P<std>C\+\+\d+) "
                        r"\[-Wpre-c\+\+\d+-compat\]$")


def metal_language(findings: list[Finding]) -> list[Finding]:
    """clang's pre-C++17/20/23 warnings as errors in Metal code (the .metal, the registry, the project's
    Metal headers), and dropped elsewhere (the shim's and launcher's headers are host C++)."""
    kept = []
    for f in findings:
        m = _LATER_CXX.match(f.message)
        if m is None:
            kept.append(f)
        elif f.file.endswith((".metal", ".yaml", ".yml")) or Path(f.file).resolve().is_relative_to(build.METAL_INCLUDE):
            kept.append(Finding(f.file, f.line, f.col, f"Metal 3.1 is C++14: {m.group('what')} "
                                f"({m.group('std')}) is not allowed", "error"))
    return kept

_DIAGNOSTIC = re.compile(r"^(?P<file>[^:\s][^:]*):(?P<line>\d+):(?P<col>\d+): "
                         r"(?P<severity>fatal error|error|warning): (?P<msg>.*)$", re.M)

def compile_flags() -> list[str]:
    """-fsyntax-only with the build's flags: Python's warning flags (setuptools passes its CFLAGS),
    torch's, and setup.py's own."""
    warnings = [f for f in (sysconfig.get_config_var("CFLAGS") or "").split() if f.startswith("-W")]
    return ["-fsyntax-only", "-ferror-limit=0", "-fno-color-diagnostics", *warnings, *TORCH_FLAGS,
            *build.CXX_FLAGS]


@dataclass
class Unit:
    name: str  # e.g. "kernels hypot", "host mpsgen_host_cpu.cpp"
    source: Path | None = None  # a host source, compiled as C++
    metal: Path | None = None  # a .metal whose CPU kernel unit is compiled


@dataclass
class Result:
    unit: Unit
    findings: list[Finding]  # errors and warnings, in the order clang gave them
    stderr: str
    seconds: float

    @property
    def rejected(self) -> bool:
        return any(f.severity != "warning" for f in self.findings)


def kernel_units(metals: list[Path]) -> list[Unit]:
    return [Unit(f"kernels {m.stem}", metal=m) for m in metals]


def host_units(build_dir: Path, generated: Path) -> list[Unit]:
    """Every C++ host unit setup.py builds (the `.mm` ones are check-macos's); writes their
    generated parts into build_dir."""
    return [Unit(f"host {p.name}", source=p) for p in build.host_sources(build_dir, mps=False, generated=generated)]


def _host_include_flags(build_dir: Path) -> list[str]:
    from torch.utils.cpp_extension import include_paths

    ours = build.host_include_dirs(build_dir)
    theirs = [*include_paths(), sysconfig.get_paths()["include"]]
    return [f"-I{d}" for d in ours] + [f"-isystem{d}" for d in theirs]


def parse(stderr: str) -> list[Finding]:
    """clang's errors and warnings, in its order."""
    return [Finding(m.group("file"), int(m.group("line")), int(m.group("col")), m.group("msg"),
                    "warning" if m.group("severity") == "warning" else "error")
            for m in _DIAGNOSTIC.finditer(stderr)]


def check_unit(unit: Unit, clang: list[str], build_dir: Path) -> Result:
    start = time.perf_counter()
    if unit.metal is not None:
        try:
            text = build.cpu_kernel_unit(unit.metal, clang)
        except RuntimeError as e:  # the preprocessor failed, or no kernel was instantiated
            findings = parse(str(e))
            return Result(unit, findings or [Finding(str(unit.metal), 1, 1, str(e)[-2000:])], str(e),
                          time.perf_counter() - start)
        r = subprocess.run([*clang, *compile_flags(), *METAL_LANGUAGE_FLAGS, "-x", "c++", "-"], input=text,
                           capture_output=True, text=True)
        findings = metal_language(parse(r.stderr))
    else:
        r = subprocess.run([*clang, *compile_flags(), *_host_include_flags(build_dir), "-x", "c++", str(unit.source)],
                           capture_output=True, text=True)
        findings = parse(r.stderr)
    if r.returncode and not any(f.severity == "error" for f in findings):
        findings = [Finding(unit.name, 1, 1, "clang failed:\n" + r.stderr[-2000:])]
    return Result(unit, findings, r.stderr, time.perf_counter() - start)


def report(results: list[Result], clang: list[str], verbose: bool = False) -> int:
    """Print one line per unit (and its findings); return how many units clang rejected."""
    print(f"{clang_version(clang)}, syntax only, with the build's flags: the units macOS compiles")
    for r in results:
        warnings = sum(f.severity == "warning" for f in r.findings)
        print(f"{'FAIL' if r.rejected else 'ok  '} {r.unit.name} ({r.seconds:.1f} s"
              + (f", {warnings} warning(s)" if warnings else "") + ")" + (":" if r.findings else ""))
        for f in r.findings:
            print(f"  {f}")
        if verbose and r.stderr:
            print(r.stderr)
    rejected = sum(r.rejected for r in results)
    print(f"check-metal clang: {len(results)} unit(s), {rejected} rejected "
          "(what Apple clang would reject in the CPU kernels and host stubs)")
    return rejected
