"""What a Mac would build against, fetched on Linux: torch's macOS arm64 wheel and zig's darwin files.

The macOS cross-build (codegen/verify/macos_build.py) compiles the extension for the Mac against
the headers of the torch a Mac user installs with the same version, and resolves what it links
against what that torch's libraries export. Both come from torch's macOS arm64 wheel, which pip
fetches as it fetches any wheel (`pip download --platform macosx_14_0_arm64`, its cache included).
Kept per torch version in the cache folder: the wheel's `torch/include`, and `symbols.json`, read
from its dylibs with LIEF:

- `exports`: each of torch's dylibs (libc10, libtorch_cpu, libtorch_python, ...) and what it exports;
- `imports`: what those dylibs import from Apple's libraries (libc++, libobjc, the Metal and
  Foundation frameworks, ...), by library: names that Apple's linker resolved against Apple's SDK
  when it linked torch, so they are exported there.

and `metal_kernels.json`: the name of every kernel in the Metal libraries that libtorch_cpu.dylib
bundles (torch's in-tree kernels, `atan2_dense_float_float`, ...), read from their function lists.

zig (PyPI's ziglang, a requirement) gives the rest: clang for aarch64-macos, darwin's libc and
Objective-C runtime headers, libc++'s headers and libSystem.tbd (libSystem's exports).
"""
from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from ..build import torch_version
from ..torch_versions import release  # noqa: F401  (the macOS wheel's version; callers name it here)

TARGET = "aarch64-macos.14.0"  # torch's macOS wheels: macosx_14_0_arm64
PLATFORM = "macosx_14_0_arm64"
_DYLIB = re.compile(r"^torch/lib/[^/]+\.dylib$")


class SdkMissing(RuntimeError):
    pass


def cache_root() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(os.environ.get("MPSGEN_MACOS_CACHE_DIR") or Path(base) / "mpsgen" / "macos")


def python_tag() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def torch_folder(version: str | None = None) -> Path:
    """The macOS wheel's files for `version` (default: the installed torch's), fetched once."""
    version = release(version or torch_version())
    folder = cache_root() / f"torch-{version}-py{python_tag()}"
    if (folder / "symbols.json").is_file():
        return folder
    cache_root().mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix="mpsgen-macos-", dir=cache_root()) as tmp:
        wheel = _download(version, Path(tmp))
        staged = Path(tmp) / "staged"
        _unpack(wheel, staged)
        try:
            staged.rename(folder)
        except OSError:  # another build unpacked it first
            if not (folder / "symbols.json").is_file():
                raise
    return folder


_METALLIB_NAME = re.compile(rb"NAME(..)([A-Za-z_][A-Za-z0-9_]*)\x00", re.S)


def metallib_kernel_names(data: bytes) -> set[str]:
    """The kernel names of the Metal libraries (`MTLB` files) inside `data`: each function's
    entry tags its name `NAME`, a little-endian uint16 length (with the NUL), the name, a NUL."""
    return {m[2].decode() for m in _METALLIB_NAME.finditer(data) if int.from_bytes(m[1], "little") == len(m[2]) + 1}


def metal_kernels(version: str | None = None) -> frozenset[str]:
    """The kernels torch's macOS build of `version` (default: the installed torch's) bundles."""
    folder = torch_folder(version)
    path = folder / "metal_kernels.json"
    if not path.is_file():  # a folder unpacked before the list was kept
        with tempfile.TemporaryDirectory(prefix="mpsgen-macos-", dir=cache_root()) as tmp:
            wheel = _download(release(version or torch_version()), Path(tmp))
            with zipfile.ZipFile(wheel) as z:
                _write_metal_kernels(z.read("torch/lib/libtorch_cpu.dylib"), folder)
    return frozenset(json.loads(path.read_text()))


def _write_metal_kernels(libtorch_cpu: bytes, folder: Path) -> None:
    names = sorted(metallib_kernel_names(libtorch_cpu))
    tmp = folder / "metal_kernels.json.tmp"
    tmp.write_text(json.dumps(names, indent=0))
    tmp.replace(folder / "metal_kernels.json")


def _download(version: str, into: Path) -> Path:
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
               "--platform", PLATFORM, "--python-version", python_tag(), "--implementation", "cp",
               f"torch=={version}", "-d", str(into)]
    r = subprocess.run(command, capture_output=True, text=True)
    wheels = sorted(into.glob("torch-*.whl"))
    if r.returncode or not wheels:
        raise SdkMissing(f"torch {version}'s macOS arm64 wheel ({PLATFORM}, Python {python_tag()}) could not be "
                         f"fetched: `{' '.join(command[2:])}` said:\n{r.stderr.strip()[-1500:]}")
    return wheels[0]


def _unpack(wheel: Path, folder: Path) -> None:
    """torch/include as it is; the dylibs read for their symbols, not kept (350 MB)."""
    import lief

    lief.logging.disable()
    symbols = {"wheel": wheel.name, "exports": {}, "imports": {}}
    with zipfile.ZipFile(wheel) as z, tempfile.TemporaryDirectory() as tmp:
        for name in z.namelist():
            if name.startswith("torch/include/") and not name.endswith("/"):
                z.extract(name, folder)
            elif _DYLIB.match(name):
                path = Path(z.extract(name, tmp))
                if path.name == "libtorch_cpu.dylib":
                    folder.mkdir(parents=True, exist_ok=True)
                    _write_metal_kernels(path.read_bytes(), folder)
                binary = lief.parse(str(path))
                symbols["exports"][path.name] = sorted(s.name for s in binary.exported_symbols)
                for s in binary.imported_symbols:
                    if s.has_binding_info and s.binding_info.has_library:
                        symbols["imports"].setdefault(s.binding_info.library.name, set()).add(s.name)
                path.unlink()
    symbols["imports"] = {lib: sorted(names) for lib, names in sorted(symbols["imports"].items())}
    (folder / "symbols.json").write_text(json.dumps(symbols, indent=0))


@functools.cache
def symbols(folder: Path) -> dict:
    return json.loads((folder / "symbols.json").read_text())


def zig_home() -> Path:
    import ziglang

    return Path(ziglang.__file__).resolve().parent


def zig_lib_dir() -> Path:
    """zig's lib folder at one path per machine and ziglang version, for every environment. The
    Mac's libc++ and libc++abi, which the cross-build's second link makes zig build from that
    folder (45 s of CPU on 2 cores), stay in zig's cache for one folder only: measured, a second
    install of the same ziglang, with a folder of its own, built them again (47.8 s), and the
    first did again after it (49.0 s); through one folder, either zig found them (0.8 s). So a
    checkout's .venv, a torch version's venv and a fresh clone's each rebuilt them in turn.
    Made once, as hard links where the cache shares the file system, else as a copy; the
    staged folder is renamed into place, so a folder found is whole."""
    import importlib.metadata

    folder = cache_root() / f"zig-{importlib.metadata.version('ziglang')}"
    if (folder / "lib").is_dir():
        return folder / "lib"
    cache_root().mkdir(parents=True, exist_ok=True)
    staged = Path(tempfile.mkdtemp(prefix="mpsgen-zig-", dir=cache_root()))
    try:
        shutil.copytree(zig_home() / "lib", staged / "lib", copy_function=_link_or_copy)
        staged.rename(folder)
    except OSError:
        if not (folder / "lib").is_dir():  # not another process's folder, renamed into place first
            raise
    finally:
        shutil.rmtree(staged, ignore_errors=True)
    return folder / "lib"


def _link_or_copy(source: str, target: str) -> None:
    try:
        os.link(source, target)
    except OSError:
        shutil.copy2(source, target)


def compiler() -> list[str]:
    """zig's clang driver for the Mac: `zig c++ -target aarch64-macos.14.0` (darwin's libc,
    libc++'s and the Objective-C runtime's headers are zig's)."""
    zig = zig_home() / "zig"
    if not zig.is_file():
        raise SdkMissing(f"ziglang at {zig.parent} has no zig binary: reinstall the requirements")
    return [str(zig), "c++", "-target", TARGET]


@functools.cache
def libsystem_exports() -> frozenset[str]:
    """libSystem's exports (and those of the libraries it re-exports), from zig's libSystem.tbd."""
    import yaml

    class Loader(getattr(yaml, "CSafeLoader", yaml.SafeLoader)):
        pass

    Loader.add_multi_constructor("!", lambda loader, suffix, node: loader.construct_mapping(node, deep=True))
    names = set()
    text = (zig_home() / "lib" / "libc" / "darwin" / "libSystem.tbd").read_text()
    for document in yaml.load_all(text, Loader=Loader):
        for section in ("exports", "reexports"):
            for block in (document or {}).get(section, []):
                names.update(block.get("symbols", []))
                names.update(block.get("weak-symbols", []))
                names.update(block.get("thread-local-symbols", []))
                for cls in block.get("objc-classes", []):
                    names.update((f"_OBJC_CLASS_$_{cls}", f"_OBJC_METACLASS_$_{cls}"))
                names.update(f"_OBJC_IVAR_$_{v}" for v in block.get("objc-ivars", []))
    return frozenset(names)


def clang_version() -> str:
    r = subprocess.run([*compiler()[:2], "--version"], capture_output=True, text=True)
    return r.stdout.splitlines()[0] if r.returncode == 0 and r.stdout else "clang (version unknown)"
