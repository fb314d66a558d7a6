"""The audit: every entry registers every dtype torch's own MPS kernel supports for its op.

The oracle ships in the installed wheel (mpsgen/mps_support.py): the entry's OpInfo's MPS
dtypes (`dtypesIfMPS`, else its dtypes) minus what torch/testing/_internal/common_mps.py
expects to fail on MPS (float64 and complex128, which Metal lacks, always; complex unless
the op is in its SUPPORTED_COMPLEX_OPS). A dtype torch supports that an entry leaves out
must be listed in its `gaps:` with the reason; a listed gap torch does not support, or that
the entry registers after all, is stale. `implements: aten` entries are held to the same
oracle in tests/test_aten_overrides.py. Whether a gap could now be filled (registered, every
sample matches torch) is tried by tests/test_install.py, which builds projects.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch

from mpsgen.codegen.registry.loader import load
from mpsgen.codegen.registry.model import Gap
from mpsgen.mps_support import mps_supported_dtypes
from mpsgen.samples import TORCH_DTYPES

REGISTRY = load(Path(__file__).resolve().parent.parent / "ops.yaml")
METAL = {torch_dtype: metal for metal, torch_dtype in TORCH_DTYPES.items()}


def audit(op) -> list[str]:
    """What is wrong with the op's registrations against torch's MPS support: an unlisted gap,
    or a stale one."""
    supported = {METAL[d] for d in mps_supported_dtypes(op.opinfo) if d in METAL}
    missing = supported - {r.input for r in op.registrations}
    listed = {g.dtype for g in op.gaps}
    problems = [f"torch's MPS kernel supports {d}, which {op.loc} neither registers nor lists in gaps:"
                for d in sorted(missing - listed)]
    problems += [f"gaps: lists {d}, which torch's MPS tests do not expect torch to support"
                 for d in sorted(listed - missing)]
    return problems


AUDITED = [op for op in REGISTRY.own_ops if op.opinfo]


@pytest.mark.parametrize("op", AUDITED, ids=lambda op: op.name)
def test_registers_every_dtype_torchs_mps_kernel_supports(op):
    assert audit(op) == []


def test_the_audit_covers_the_registry():
    """Every own op has an OpInfo to audit against, but those torch's op_db lacks (aten's
    backward ops: `opinfo: null`), and those are not in op_db under their own names."""
    from torch.testing._internal.common_methods_invocations import op_db
    unaudited = {op.name for op in REGISTRY.own_ops} - {op.name for op in AUDITED}
    assert unaudited == {op.name for op in REGISTRY.own_ops if not op.opinfo}
    assert unaudited >= {"leaky_relu_backward", "sigmoid_backward", "tanh_backward"}
    assert not unaudited & {o.name for o in op_db}


def test_the_audit_fails_for_a_dropped_dtype_and_for_a_stale_gap():
    """The audit can fail: mul without complex32, and a gap for a dtype mul registers."""
    mul = next(op for op in REGISTRY.own_ops if op.name == "mul")
    tables = tuple(dataclasses.replace(t, registrations=tuple(r for r in t.registrations if r.input != "half2"))
                   for t in mul.tables)
    if torch.complex32 in mps_supported_dtypes(mul.opinfo):
        assert audit(dataclasses.replace(mul, tables=tables)) == [
            f"torch's MPS kernel supports half2, which {mul.loc} neither registers nor lists in gaps:"]
    without_float = tuple(dataclasses.replace(t, registrations=tuple(r for r in t.registrations if r.input != "float"))
                          for t in mul.tables)
    assert audit(dataclasses.replace(mul, tables=without_float)) == [
        f"torch's MPS kernel supports float, which {mul.loc} neither registers nor lists in gaps:"]
    assert audit(dataclasses.replace(mul, gaps=(Gap("float", "stale"),))) == [
        "gaps: lists float, which torch's MPS tests do not expect torch to support"]
