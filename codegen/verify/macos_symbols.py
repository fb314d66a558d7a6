"""Does the Mac extension load? Every symbol its objects leave undefined, resolved as dyld would.

dyld resolves an extension's undefined symbols (linked `-undefined dynamic_lookup`) in the
process that imports it: Python, and the libraries loaded by `import torch`. A symbol none of
them exports makes the import fail on every Mac ("symbol not found in flat namespace"). Each
undefined symbol of each object (read with LIEF) is looked up, in turn, in:

1. the link: another unit of the extension, or the linker (the image linked as a Mac links it,
   codegen/verify/macos_build.py, no longer lists it as undefined);
2. torch's macOS dylibs (their export tries, read from the wheel: codegen/verify/macos_sdk.py);
3. libSystem (zig's libSystem.tbd: libc, libm, libdispatch, the blocks runtime, ...);
4. Apple's other libraries as torch's dylibs import from them: libc++, libobjc and the frameworks
   (Metal, Foundation, MetalPerformanceShaders, ...), each name one that Apple's linker resolved
   against Apple's SDK when it linked torch;
5. what mpsgen's sources and the stand-in SDK name beyond those, from Apple's documentation
   (support/apple_sdk/exports.txt);
6. Python's C API: what this machine's Python exports (the same API on every platform; the
   `_` that Mach-O puts before every C name added);
7. libc++ as zig builds it (LLVM's, newer than a Mac's own: the image linked again with it
   statically no longer lists the symbol). A Mac's /usr/lib/libc++.1.dylib is not here to read,
   so these are counted apart: only a Mac shows that its libc++ has them.

What is left is an error naming the symbol (demangled), the units that use it and, where the
unit is one op's, that op's ops.yaml line.
"""
from __future__ import annotations

import functools
import re
import subprocess
import sys
import sysconfig
from dataclasses import dataclass, field
from pathlib import Path

from ..build import SUPPORT
from . import macos_sdk

N_EXT, N_TYPE, N_UNDF, N_SECT = 0x01, 0x0E, 0x00, 0x0E
EXPORTS_LIST = SUPPORT / "apple_sdk" / "exports.txt"
SOURCES = ("the link", "torch", "libSystem", "Apple, as torch imports it", "Apple, exports.txt", "Python",
           "libc++, zig's build")


@dataclass
class ObjectSymbols:
    unit: str
    defined: set[str]
    undefined: set[str]


def read_object(path: Path, unit: str | None = None) -> ObjectSymbols:
    import lief

    lief.logging.disable()
    binary = lief.parse(str(path))
    if binary is None:
        raise ValueError(f"{path}: not a Mach-O object")
    defined, undefined = set(), set()
    for s in binary.symbols:
        kind = s.raw_type & N_TYPE
        if not s.raw_type & N_EXT:
            continue
        if kind == N_SECT or (kind == N_UNDF and s.value):  # a definition, or a common symbol
            defined.add(s.name)
        elif kind == N_UNDF:
            undefined.add(s.name)
    return ObjectSymbols(unit or path.name.removesuffix(".o"), defined, undefined)


@functools.cache
def python_exports() -> frozenset[str]:
    """The C names this machine's Python exports (its executable's, or libpython's where it has
    one), with Mach-O's leading underscore."""
    import lief

    lief.logging.disable()
    names = set()
    library = Path(sysconfig.get_config_var("LIBDIR") or "", sysconfig.get_config_var("INSTSONAME") or "")
    for path in (Path(sys.executable).resolve(), library):
        binary = lief.parse(str(path)) if path.is_file() else None
        if binary is not None:
            names.update("_" + s.name for s in binary.exported_symbols)
    return frozenset(names)


def listed_exports(path: Path = EXPORTS_LIST) -> dict[str, str]:
    """support/apple_sdk/exports.txt: `symbol library documentation-URL` per line, `class:Name`
    standing for the class's two symbols; symbol -> library."""
    listed = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            symbol, library, *_ = line.split()
            if symbol.startswith("class:"):
                name = symbol.removeprefix("class:")
                listed.update({f"_OBJC_CLASS_$_{name}": library, f"_OBJC_METACLASS_$_{name}": library})
            else:
                listed[symbol] = library
    return listed


@dataclass
class Resolution:
    where: dict[str, str] = field(default_factory=dict)  # symbol -> the source it resolved in (SOURCES)
    unresolved: dict[str, list[str]] = field(default_factory=dict)  # symbol -> the units using it

    def counts(self) -> dict[str, int]:
        return {s: sum(1 for w in self.where.values() if w == s) for s in SOURCES}


def resolve(objects: list[ObjectSymbols], linked: set[str], linked_with_libcxx: set[str] | None, torch_symbols: dict,
            libsystem: frozenset[str], listed: dict[str, str] | None = None,
            python: frozenset[str] | None = None) -> Resolution:
    """`linked`: what the image linked as a Mac links it leaves undefined; `linked_with_libcxx`:
    the same, linked with zig's libc++ (None where that link failed)."""
    torch_exports = set().union(*torch_symbols["exports"].values())
    apple = set().union(*(names for lib, names in torch_symbols["imports"].items() if not lib.startswith("@rpath/")))
    sources = [("torch", torch_exports), ("libSystem", libsystem), ("Apple, as torch imports it", apple),
               ("Apple, exports.txt", set(listed_exports() if listed is None else listed)),
               ("Python", python_exports() if python is None else python)]
    result = Resolution()
    for o in objects:
        for name in sorted(o.undefined):
            if name not in linked:
                where = "the link"
            else:
                where = next((label for label, names in sources if name in names), None)
                if where is None and linked_with_libcxx is not None and name not in linked_with_libcxx:
                    where = "libc++, zig's build"
            if where is None:
                result.unresolved.setdefault(name, []).append(o.unit)
            else:
                result.where[name] = where
    return result


def demangle(names: list[str]) -> dict[str, str]:
    """Itanium C++ names demangled by binutils' c++filt (Mach-O's leading `_` dropped first)."""
    if not names:
        return {}
    try:
        r = subprocess.run(["c++filt"], input="\n".join(n[1:] if n.startswith("_") else n for n in names),
                           capture_output=True, text=True, check=True)
        out = r.stdout.splitlines()
    except (OSError, subprocess.CalledProcessError):
        return {n: n for n in names}
    return {n: (d if d != n[1:] else n) for n, d in zip(names, out)}


_YAML_LINE = re.compile(r'(?m)^#(?:line)? (\d+) "([^"\n]*\.ya?ml)"')


def registry_line(source: Path) -> str | None:
    """The ops.yaml line of an op's unit (`<op>_kernels.cpp`): the first `#line` into the registry."""
    try:
        m = _YAML_LINE.search(source.read_text())
    except OSError:
        return None
    return f"{Path(m[2]).name}:{m[1]}" if m else None
