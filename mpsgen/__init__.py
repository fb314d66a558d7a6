"""mpsgen: a declarative code generator for PyTorch MPS elementwise operators.

The package holds the generator (`mpsgen.codegen`, its templates and support sources), the
build API for projects of one's own (`mpsgen.codegen.package`), the `mpsgen` command
(`mpsgen.cli`), the test harness (`mpsgen.harness`, `mpsgen.samples`), the loader every
generated package uses (`mpsgen.runtime`), and this repository's own ops.

`import mpsgen` loads no extension, so the generator and the command work before anything
is built. `import mpsgen.ops` loads mpsgen's own ops (torch.ops.mpsgen.*); `mpsgen.<op>`
does it on first use:

    import torch, mpsgen.ops
    torch.ops.mpsgen.hypot(x, y)
    mpsgen.hypot(x, y, out=torch.empty(4, 5))
"""

from pathlib import Path as _Path

__version__ = "0.2.0"

# Installed, the generator, its templates and support sources are inside this package
# (mpsgen/codegen/, mpsgen/templates/, mpsgen/support/, mpsgen/generated/library.py). In a
# checkout they are the repository's top-level folders beside it, which this makes
# mpsgen.codegen and so on: the same names, so code never asks which layout it runs from.
_CHECKOUT = _Path(__file__).resolve().parent.parent
if not (_Path(__file__).resolve().parent / "codegen").is_dir() and (_CHECKOUT / "codegen" / "__init__.py").is_file():
    __path__.append(str(_CHECKOUT))


def __getattr__(name: str):
    """mpsgen.<op> and mpsgen.library: from mpsgen.ops, loaded on first use."""
    import importlib.util
    import sys

    # a submodule (`from . import runtime`) is the import system's to load, and so is
    # anything asked while mpsgen.ops itself is loading
    if name.startswith("__") or "mpsgen.ops" in sys.modules and not hasattr(sys.modules["mpsgen.ops"], "library") \
            or importlib.util.find_spec(f"{__name__}.{name}") is not None:
        raise AttributeError(f"module 'mpsgen' has no attribute {name!r}")
    from . import ops

    try:
        return getattr(ops, name)
    except AttributeError:
        raise AttributeError(f"module 'mpsgen' has no attribute {name!r} (not an op of mpsgen's own ops.yaml)") \
            from None
