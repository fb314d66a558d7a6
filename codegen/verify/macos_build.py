"""The macOS build, proven from Linux: `python -m codegen check-macos` (and `mpsgen check-macos`).

Compiles every unit that `pip install` compiles on a Mac, for aarch64-macos 14 with zig's clang
(codegen/verify/macos_sdk.py), with the flags the Mac build uses (codegen/package.py: torch's,
build.CXX_FLAGS, build.MPS_CXX_FLAGS; on a Mac every unit goes through torch's one compile rule):

- each op's CPU kernel unit, its .metal preprocessed for the target (no x86-64 variants);
- the host units: the CPU stubs' unity unit, op_specs, autograd, bindings, the support sources;
- the `.mm` stubs' unity unit and support/mps/metal_library.mm, as Objective-C++ with Apple's
  runtime (zig's objc headers) under the stand-in SDK (support/apple_sdk);

against torch's macOS wheel of the installed torch's version. Objects go through the object cache
(codegen/objcache.py), as in every build. It then links them as setuptools links an extension on
macOS (`-bundle -undefined dynamic_lookup`) and resolves every symbol the objects leave undefined
(codegen/verify/macos_symbols.py): an unresolved one is an error naming the symbol, the units
that use it and, where one is there, the ops.yaml line.
"""
from __future__ import annotations

import os
import subprocess
import sys
import sysconfig
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from .. import build, objcache
from . import macos_sdk, macos_symbols
from .clang_check import TORCH_FLAGS

APPLE_SDK = build.SUPPORT / "apple_sdk"
# setuptools on macOS links with `-bundle -undefined dynamic_lookup` (Python's LDSHARED, torch's
# ldflags). zig 0.17.1's Mach-O linker crashes on -bundle (SIGSEGV), so the image is a dylib
# (-shared): the same symbols stay undefined and are resolved the same way; only the file type
# differs. libc++ is the Mac's (/usr/lib/libc++.1.dylib), not zig's, which zig would build and
# link statically: -nostdlib++, and a second link with it tells which symbols zig's has.
LINK_FLAGS = ["-shared", "-undefined", "dynamic_lookup"]
MAC_LIBCXX = ["-nostdlib++"]


@dataclass
class Compiled:
    source: Path
    object: Path
    seconds: float
    ok: bool
    messages: str  # the compiler's errors and warnings

    @property
    def name(self) -> str:
        return self.source.name + (" as Objective-C++" if self.source.suffix == ".mm" else "")


def compile_flags(root: Path, build_dir: Path, torch_headers: Path) -> list[str]:
    """The Mac build's flags and include dirs (codegen/package.py extension, torch's BuildExtension)."""
    includes = [*build.host_include_dirs(build_dir), build.MPS_INCLUDE]
    system = [torch_headers, torch_headers / "torch" / "csrc" / "api" / "include",
              Path(sysconfig.get_paths()["include"]), APPLE_SDK]
    return [*TORCH_FLAGS, *build.CXX_FLAGS, *build.MPS_CXX_FLAGS, *build.file_prefix_maps(root),
            *(f"-I{d}" for d in includes), *(f"-isystem{d}" for d in system)]


def sources(build_dir: Path, generated: Path, torch_headers: Path) -> list[Path]:
    """Every unit the Mac build compiles, written into build_dir: kernel units first."""
    target = build.KernelTarget(torch_headers, build.CpuVariants(0, lower=True))  # arm64: no x86-64 variants
    kernels = build.cpu_kernel_sources(build_dir, macos_sdk.compiler(), generated, target)
    build.mps_metal_sources_header(build_dir, with_metallib=False, generated=generated, torch_headers=torch_headers)
    return kernels + build.host_sources(build_dir, mps=True, generated=generated)


# A `.mm` is Objective-C++ by its suffix, on Apple's runtime (the darwin target's default), with
# blocks. A message that no declared selector matches is an error here: Apple clang only warns,
# and the call fails at run time ("unrecognized selector sent to instance").
OBJC_FLAGS = ["-fblocks", "-Werror=objc-method-access"]


def unit_flags(source: Path, flags: list[str]) -> list[str]:
    return [*flags, *OBJC_FLAGS] if source.suffix == ".mm" else flags


def compile_unit(source: Path, flags: list[str], objects: Path) -> Compiled:
    """One unit, through the object cache (objcache.py as a script, as ninja runs it). Not
    `-fsyntax-only`: zig's driver then fails renaming an object it never wrote, and leaves an
    empty a.out in the working folder; a unit with errors stops before code generation anyway."""
    obj = objects / (source.name + ".o")
    start = time.perf_counter()
    command = [sys.executable, objcache.__file__, *macos_sdk.compiler(), *unit_flags(source, flags),
               "-c", str(source), "-o", str(obj)]
    r = subprocess.run(command, capture_output=True, text=True)
    return Compiled(source, obj, time.perf_counter() - start, r.returncode == 0, r.stderr + r.stdout)


def link(objects: list[Path], out: Path, mac_libcxx: bool = True) -> subprocess.CompletedProcess:
    """zig links with the machine's one lib folder (macos_sdk.zig_lib_dir): the libc++ it builds
    for the link with its own is built once per machine, not once per environment in turn."""
    return subprocess.run([*macos_sdk.compiler(), *LINK_FLAGS, *(MAC_LIBCXX if mac_libcxx else []),
                           *map(str, objects), "-o", str(out)], capture_output=True, text=True,
                          env={**os.environ, "ZIG_LIB_DIR": str(macos_sdk.zig_lib_dir())})


@dataclass
class CrossBuild:
    units: list[Compiled]
    linked: Path | None
    link_error: str
    resolution: macos_symbols.Resolution | None
    torch_folder: Path


def cross_build(root: Path, build_dir: Path, generated: Path, jobs: int | None = None) -> CrossBuild:
    """Compile every unit for the Mac, link, resolve: into build_dir (kept: its units are keyed,
    its objects cached, so a second run compiles only what changed)."""
    torch_folder = macos_sdk.torch_folder()
    torch_headers = torch_folder / "torch" / "include"
    build_dir.mkdir(parents=True, exist_ok=True)
    units = sources(build_dir, generated, torch_headers)
    flags = compile_flags(root, build_dir, torch_headers)
    objects = build_dir / "objects"
    objects.mkdir(exist_ok=True)
    with ThreadPoolExecutor(max_workers=jobs or os.cpu_count() or 1) as pool:
        compiled = list(pool.map(lambda s: compile_unit(s, flags, objects), units))
    if not all(c.ok for c in compiled):
        return CrossBuild(compiled, None, "", None, torch_folder)
    image, with_libcxx = build_dir / "_C.dylib", build_dir / "_C.libcxx.dylib"
    r = link([c.object for c in compiled], image)
    if r.returncode:
        return CrossBuild(compiled, None, r.stderr or f"the linker exited with {r.returncode}", None, torch_folder)
    r2 = link([c.object for c in compiled], with_libcxx, mac_libcxx=False)
    linked_with_libcxx = macos_symbols.read_object(with_libcxx).undefined if r2.returncode == 0 else None
    objs = [macos_symbols.read_object(c.object, c.name) for c in compiled]
    resolution = macos_symbols.resolve(objs, macos_symbols.read_object(image).undefined,
                                       linked_with_libcxx,
                                       macos_sdk.symbols(torch_folder), macos_sdk.libsystem_exports())
    return CrossBuild(compiled, image, "", resolution, torch_folder)


def report(result: CrossBuild, seconds: float) -> int:
    """Print what was compiled, linked and resolved; 1 if anything failed."""
    print(f"macOS arm64 cross-build: {' '.join(macos_sdk.compiler()[1:])}, {macos_sdk.clang_version()}, against "
          f"torch's macOS wheel {macos_sdk.symbols(result.torch_folder)['wheel']}")
    for c in result.units:
        warnings = c.messages.count("warning: ")
        failed = not c.ok
        print(f"{'FAIL' if failed else 'ok  '} {c.name} ({c.seconds:.1f} s"
              + (f", {warnings} warning(s)" if warnings else "") + ")")
        if c.messages.strip() and (failed or warnings):
            print("  " + c.messages.strip().replace("\n", "\n  "))
    rejected = sum(not c.ok for c in result.units)
    failures = rejected
    if result.link_error:
        print(f"FAIL link: {result.link_error.strip()}")
        failures += 1
    if result.resolution is not None:
        res = result.resolution
        counts = ", ".join(f"{n} {where}" for where, n in res.counts().items())
        print(f"symbols: {len(res.where) + len(res.unresolved)} undefined in the objects; resolved: {counts}")
        names = macos_symbols.demangle(sorted(res.unresolved))
        for symbol, units in sorted(res.unresolved.items()):
            lines = [line for u in units if (line := macos_symbols.registry_line(_unit_source(result, u)))]
            print(f"FAIL unresolved symbol {names[symbol]} ({symbol}): used by {', '.join(units)}"
                  + (f" ({', '.join(lines)})" if lines else "")
                  + ": no unit, torch dylib, Apple library or Python exports it; the import would fail on a Mac")
        failures += len(res.unresolved)
        print(f"check-macos: {len(result.units)} unit(s) compiled for {macos_sdk.TARGET}, {rejected} rejected, "
              f"{len(res.unresolved)} unresolved symbol(s), {seconds:.1f} s")
    else:
        print(f"check-macos: {len(result.units)} unit(s), {rejected} rejected; not linked, {seconds:.1f} s")
    return 1 if failures else 0


def _unit_source(result: CrossBuild, unit: str) -> Path:
    return next((c.source for c in result.units if c.name == unit), Path(unit))


def main(root: Path, generated: Path, build_dir: Path) -> int:
    start = time.perf_counter()
    try:
        result = cross_build(root, build_dir, generated)
    except macos_sdk.SdkMissing as e:
        print(f"check-macos: {e}", file=sys.stderr)
        return 1
    return report(result, time.perf_counter() - start)
