"""Loads the mpsgen extension: its ops appear as torch.ops.<namespace>.<op>.

Importing it also runs generated/library.py, which gives every op its fake
kernel, autograd formulas and out=/in-place decompositions (torch.compile,
torch.export and training).
"""
import importlib.util
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
