"""Loads the mpsgen extension: its ops appear as torch.ops.<namespace>.<op>, and as
mpsgen.<op> / mpsgen.<op>_ (functional with out=, and in-place), bound the way torch
binds torch.<op>: torch's argument parser in C++, then straight to the dispatcher, so an
eager call costs what torch's own op costs. Under torch.compile they trace as the
torch.ops op they call.

Importing it also runs generated/library.py, which gives every op its fake
kernel and out=/in-place decompositions (torch.compile and torch.export); the
autograd kernels are C++.

Entries of ops.yaml with `implements: aten` register torch's own aten ops for MPS when
the library loads. Their CPU kernels replace torch's CPU kernels only when the
environment variable MPSGEN_ATEN_CPU_OVERRIDES=1 is set (tests/test_aten_overrides.py
runs torch's ops through them on Linux); never by default.
"""
import importlib.util
import os
from pathlib import Path

import torch  # noqa: F401  (the extension links against torch's libraries)

from . import _C  # noqa: F401  (static initializers register the ops)

_LIBRARY = Path(__file__).resolve().parent.parent / "generated" / "library.py"


def _load_library():
    spec = importlib.util.spec_from_file_location("mpsgen.library", _LIBRARY)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


library = _load_library()


def _export(name: str):
    """mpsgen.<name>: the C++ binding, which torch.compile replaces by the torch.ops op."""
    fast, packet = getattr(_C, name), getattr(getattr(torch.ops, library.lib.ns), name)

    def traced(*args, **kwargs):
        return packet(*args, **kwargs)

    torch.compiler.substitute_in_graph(fast, skip_signature_check=True)(traced)
    globals()[name] = fast


for _name in library.BINDINGS:
    _export(_name)

ATEN_CPU_OVERRIDES = "MPSGEN_ATEN_CPU_OVERRIDES"
if os.environ.get(ATEN_CPU_OVERRIDES) == "1":
    _C.register_aten_cpu_overrides()
