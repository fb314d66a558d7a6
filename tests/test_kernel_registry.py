"""The CPU backend's kernels are exactly what torch's REGISTER_* macros instantiate.

The expected host_names follow c10/metal/indexing.h's naming scheme
(NAME_<variant>_<OUT>_<IN>[_<ALPHA>]), written out here independently of the build step
that reads them back from the preprocessed .metal.
"""
from __future__ import annotations

from pathlib import Path

import pytest

import mpsgen._C as ext
from codegen.loader import load

REGISTRY = load(Path(__file__).resolve().parent.parent / "ops.yaml")

UNARY = ["dense_{o}_{i}", "dense_scalar_{o}_{i}", "strided_{o}_{i}",
         "dense_castout_{i}", "dense_castout_ilp_{i}", "strided_castout_{i}"]
BINARY = ["strided_{o}_{i}", "strided_cast_{o}_{i}", "dense_{o}_{i}", "dense_ilp4_{o}_{i}",
          "dense_cast_{o}_{i}", "dense_broadcast_{o}_{i}", "dense_broadcast_rhs_{o}_{i}",
          "dense_broadcast_cast_{o}_{i}", "dense_broadcast_rhs_cast_{o}_{i}", "dense_scalar_{o}_{i}",
          "dense_scalar_lhs_{o}_{i}", "dense_scalar_cast_{o}_{i}", "dense_scalar_lhs_cast_{o}_{i}"]
UNARY_ALPHA = ["dense_{o}_{i}_{a}", "strided_{o}_{i}_{a}"]
BINARY_ALPHA = [v + "_{a}" for v in BINARY if "ilp" not in v]
TERNARY = ["strided_{o}_{i}", "strided_cast_{i}", "dense_{o}_{i}", "dense_cast_{i}"]
COMPARISON = BINARY + ["strided_castout_{o}_{i}"]  # REGISTER_BINARY_CASTOUT_OP
FAMILIES = {"unary": UNARY, "unary_alpha": UNARY_ALPHA, "binary": BINARY, "binary_alpha": BINARY_ALPHA,
            "ternary": TERNARY}


@pytest.mark.parametrize("op", REGISTRY.ops, ids=lambda op: op.name)
def test_cpu_registry_holds_exactly_the_macro_instantiations(op):
    variants = COMPARISON if op.family == "binary" and op.bool_output else FAMILIES[op.family]
    # the alpha travels in the output dtype
    expected = {f"{op.name}_" + v.format(o=r.output, i=r.input, a=r.output)
                for r in op.registrations for v in variants}
    actual = {n for n in ext.cpu_kernel_names() if n.startswith(op.name + "_")}
    # other ops sharing the prefix (e.g. "mul" vs "mul_foo") would show up as extras
    actual = {n for n in actual if not any(n.startswith(o.name + "_") and len(o.name) > len(op.name)
                                           for o in REGISTRY.ops)}
    assert actual == expected
