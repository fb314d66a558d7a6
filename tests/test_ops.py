"""op-output-match: every entry of ops.yaml, every registered dtype, against torch
(mpsgen/harness.py, the same check a project made with `mpsgen init` runs).

Entries that implement aten ops (`implements: aten`) run on CPU in one subprocess with
MPSGEN_ATEN_CPU_OVERRIDES=1 (mpsgen/aten_overrides.py) and are compared here with
torch's own CPU op, on the same saved inputs.

Samples: OpInfo sample_inputs and reference_inputs where op_db has the op,
plus empty, 0-dim, non-contiguous, broadcasting, type-promoting, non-finite
and large inputs. Tolerances are torch.testing's dtype defaults (those of
PyTorch's own test_output_match). Where torch's CPU has no kernel for a dtype
(complex32, float16/bfloat16 for some special functions, bool or integers for
some ops), the reference runs in a wider dtype and is cast back; the
"op-output-match" section at the end of pytest's output lists those samples,
the samples with no torch result and the OpInfo samples that did not bind.
"""
from __future__ import annotations

import pytest

from mpsgen import harness

REGISTRY = harness.load_project(__file__)


def _kind(op, entry) -> tuple:
    """What makes an entry a kind of its own for the generated code: family, params, choices,
    Tensor? combinations, mask, Scalar overload, result options, a bool result; a kernel entry is
    one kind."""
    if entry is None:
        return ("compute",)
    selector = op.selector and ("value" if op.selector.by_value else "str")
    return (op.family, op.transport, selector, bool(op.given), bool(op.mask), entry is not op,
            bool(op.result_options), bool(op.result_like), op.bool_output)


def _with_quick(cases) -> list:
    """The cases, the first dtype of the first entry of each kind marked `quick` (bash test.sh
    --quick); not the aten entries, whose CPU rows share one subprocess of about 25 s."""
    seen, marked = set(), []
    for case in cases:
        op, entry = case.values[:2]
        kind = _kind(op, entry)
        if kind not in seen and not op.implements:
            seen.add(kind)
            case = pytest.param(*case.values, marks=(*case.marks, pytest.mark.quick), id=case.id)
        marked.append(case)
    return marked


@pytest.mark.parametrize(harness.PARAMS, _with_quick(harness.cases(REGISTRY)))
def test_output_match(op, entry, metal_dtype, xfail_samples, record_property):
    harness.output_match(REGISTRY, op, entry, metal_dtype, xfail_samples, record_property)
