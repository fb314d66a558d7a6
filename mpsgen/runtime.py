"""Loading a package of generated ops: mpsgen's own (`import mpsgen.ops`) and every project
made with `mpsgen init` (`import <name>`) load theirs the same way:

    from mpsgen.runtime import load_ops
    load_ops(globals(), library=Path(__file__).parent / "generated" / "library.py")

`load_ops` imports the package's extension (`<package>._C`: its static initializers define
`torch.ops.<namespace>.*` and register the kernels), runs the generated `library.py` (fake
kernels, out=/in-place decompositions for torch.compile and torch.export) and puts each op's
Python binding into the package's namespace, bound the way torch binds `torch.<op>`: torch's
argument parser in C++, then straight to the dispatcher. Under torch.compile they trace as
the torch.ops op they call.

Each namespace can be defined by one package only: torch aborts the process when a second
library defines it again, so a second package is refused first, with both named.

Entries with `implements: aten` register torch's own aten ops for MPS when the extension
loads. Their CPU kernels replace torch's CPU kernels only when the environment variable
MPSGEN_ATEN_CPU_OVERRIDES=1 is set (the tests use it in a subprocess); never by default.
"""
from __future__ import annotations

import importlib
import importlib.util
import mmap
import os
import re
import sys
from pathlib import Path
from types import ModuleType

import torch

ATEN_CPU_OVERRIDES = "MPSGEN_ATEN_CPU_OVERRIDES"

# namespace -> (package name, its extension module), for every package load_ops loaded
_LOADED: dict[str, tuple[str, ModuleType]] = {}
_NAMESPACE = re.compile(r'^NAMESPACE = "(\w+)"', re.M)


class NamespaceConflict(ImportError):
    """A second package defines a torch library namespace that one already defines."""


def namespace_of(library: Path) -> str:
    """The namespace a generated library.py registers (its `NAMESPACE = "..."` line)."""
    found = _NAMESPACE.search(Path(library).read_text())
    if found is None:
        raise ImportError(f"{library}: no NAMESPACE line; generate it again with this mpsgen")
    return found[1]


def _defined_elsewhere(namespace: str) -> bool:
    """Whether some library already defines ops in `namespace` (not through load_ops)."""
    prefix = f"{namespace}::"
    return any(name.startswith(prefix) for name in torch._C._dispatch_get_all_op_names())


def extension(namespace: str) -> ModuleType:
    """The loaded extension module that defines `namespace`'s ops."""
    try:
        return _LOADED[namespace][1]
    except KeyError:
        raise LookupError(f"no package loaded with load_ops defines the namespace {namespace!r} "
                          f"(loaded: {', '.join(sorted(_LOADED)) or 'none'})") from None


def package_of(namespace: str) -> str:
    """The name of the loaded package that defines `namespace`'s ops."""
    extension(namespace)
    return _LOADED[namespace][0]


def load_ops(package_globals: dict, library: Path, extension_name: str | None = None) -> ModuleType:
    """Load the package whose module globals are `package_globals`: its extension
    (`extension_name`, default `<package>._C`) and its generated `library`; export every op's
    binding into it. Returns the generated library module."""
    package = package_globals["__name__"]
    extension_name = extension_name or f"{package}._C"
    check_built_against(extension_name)
    namespace = namespace_of(library)
    if namespace in _LOADED:
        if _LOADED[namespace][0] == package:
            return package_globals["library"]
        raise NamespaceConflict(
            f"cannot load {package}: the torch namespace {namespace!r} of its ops ({library}) is already "
            f"defined by the package {_LOADED[namespace][0]}; two packages cannot define one namespace: give one "
            f"of them another `namespace:` in its ops.yaml")
    # the package's own extension, imported before it (`import mpsgen._C`), defined them itself
    if extension_name not in sys.modules and _defined_elsewhere(namespace):
        raise NamespaceConflict(
            f"cannot load {package}: the torch namespace {namespace!r} of its ops ({library}) is already defined "
            f"in this process by another library (torch.ops.{namespace}); give {package}'s ops.yaml another "
            f"`namespace:`")
    C = importlib.import_module(extension_name)  # static initializers register the ops
    _LOADED[namespace] = (package, C)

    spec = importlib.util.spec_from_file_location(f"{package}.library", library)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    package_globals["library"] = module
    ops = getattr(torch.ops, namespace)
    for name in module.BINDINGS:
        package_globals[name] = _binding(getattr(C, name), getattr(ops, name))
    if os.environ.get(ATEN_CPU_OVERRIDES) == "1":
        C.register_aten_cpu_overrides()
    return module


_BUILT_AGAINST = b"mpsgen-built-against-torch "


def built_against(path: str | Path) -> str | None:
    """The torch version an mpsgen extension file was compiled against (support/host/module.cpp
    writes it into the file), read without loading it; None where the file has none."""
    with open(path, "rb") as f, mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as data:
        start = data.find(_BUILT_AGAINST)
        end = data.find(b"\n", start, start + 100) if start >= 0 else -1
        return data[start + len(_BUILT_AGAINST):end].decode() if end > 0 else None


def check_built_against(extension_name: str) -> None:
    """ImportError, naming both versions and how to rebuild, where the extension was compiled
    against another torch than the one imported (torch's C++ ABI changes between releases)."""
    spec = importlib.util.find_spec(extension_name)
    if spec is None or not spec.origin or not Path(spec.origin).is_file():
        return  # importing it says what is missing
    built, running = built_against(spec.origin), torch.__version__.split("+", 1)[0]
    if built is not None and built != running:
        raise ImportError(
            f"{extension_name} ({spec.origin}) was built against torch {built}, and this is torch {running} "
            f"({torch.__version__}): a torch extension runs only under the torch it was compiled against. Rebuild "
            f"it under this torch: `mpsgen build` in its project (or `bash run.sh` in mpsgen's checkout), or "
            f"`pip install --no-build-isolation --force-reinstall --no-deps <its source>`", name=extension_name)


def _binding(fast, packet):
    """The C++ binding, which torch.compile replaces by the torch.ops op it calls."""

    def traced(*args, **kwargs):
        return packet(*args, **kwargs)

    torch.compiler.substitute_in_graph(fast, skip_signature_check=True)(traced)
    return fast
