"""What torch's own MPS tests expect torch's MPS kernels to support, read from the installed
wheel: each OpInfo's MPS dtypes (`dtypesIfMPS`, else its dtypes) minus what
torch/testing/_internal/common_mps.py expects to fail there. That module defines its lists
only where torch.backends.mps.is_available(), so they are read from its source.
"""
from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

import torch

from .samples import _opinfo

MPS_LISTS = ("UNIMPLEMENTED_XFAILLIST", "UNDEFINED_XFAILLIST", "ON_MPS_XFAILLIST")


@lru_cache(maxsize=None)
def _common_mps() -> tuple[dict, set]:
    """torch/testing/_internal/common_mps.py's xfail lists ({OpInfo name: dtypes or None
    for all}) and SUPPORTED_COMPLEX_OPS, read from its source: they are defined only where
    torch.backends.mps.is_available()."""
    import torch.testing._internal.common_mps as module

    tree = ast.parse(Path(module.__file__).read_text())
    modifier = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "mps_ops_modifier")
    lists, complex_ops = {}, set()
    for node in ast.walk(modifier):
        target = node.targets[0] if isinstance(node, ast.Assign) else getattr(node, "target", None)
        name = getattr(target, "id", None)
        if name in MPS_LISTS:
            for key, value in zip(node.value.keys, node.value.values):
                dtypes = None if isinstance(value, ast.Constant) and value.value is None else {
                    getattr(torch, e.attr) for e in value.elts}
                old = lists.get(key.value, set())
                lists[key.value] = None if dtypes is None or old is None else old | dtypes
        elif name == "SUPPORTED_COMPLEX_OPS":
            complex_ops = {e.value for e in node.value.elts}
    return lists, complex_ops


def mps_supported_dtypes(opinfo: str) -> set:
    """The dtypes torch's MPS tests expect its MPS kernel to handle: the OpInfo's dtypes
    minus those common_mps.py expects to fail (float64 and complex128 always; complex
    unless the op is in SUPPORTED_COMPLEX_OPS)."""
    info = _opinfo(opinfo)
    lists, complex_ops = _common_mps()
    key = info.name + info.variant_test_name
    unsupported = lists.get(key, set())
    if unsupported is None:
        return set()
    dtypes = set(info.supported_dtypes("mps")) - unsupported - {torch.float64, torch.complex128}
    if key not in complex_ops:
        dtypes -= {torch.complex32, torch.complex64}
    return dtypes

