"""`implements: aten` for a kernel entry: its schema is one of aten's functional schemas, and its
kernels are registered for each variant of it (functional, out=, in-place) that aten dispatches
to a backend kernel. A variant aten runs through other ops (CompositeExplicitAutograd's
`put`, which clones and calls `put_`) is left to them, so it runs on MPS through ours.

    - func: take(Tensor self, Tensor index) -> Tensor
      implements: aten          # registered for aten::take and aten::take.out
"""
from __future__ import annotations

from torchgen.model import FunctionSchema

from .aten_schemas import aten_ops, variant_names
from .opinfo_names import torch_version
from .schema import misdated
from ..torch_versions import release


def aten_variants(schema: FunctionSchema, outputs, first_tensor: str, since: str, label: str, line: int, errors) \
        -> tuple[tuple[tuple[str, str], ...], bool]:
    """(variant, aten's name) of each variant registered, checked against aten's schemas; and
    whether the installed torch runs the op on MPS itself (from `since`, `torch_has_mps`)."""
    table, name = aten_ops(), str(schema.name)
    installed = release(torch_version())
    if name not in table:
        errors.add(line, label, "func", f"aten has no operator '{name}' in the installed torch's native_functions.yaml")
        return (), False
    if str(FunctionSchema.parse(table[name]["schema"])) != str(schema):
        errors.add(line, label, "func", f"the schema differs from aten's: ops.yaml gives '{schema}', aten "
                   f"(native_functions.yaml) declares '{table[name]['schema']}'")
        return (), False
    found, on_mps = [], []
    for kind, aten in {"functional": name, **variant_names(str(schema))}.items():
        how = table[aten]["mps"]  # None, or how torch runs it on MPS: its own kernel or a composite
        if how is None or "Composite" not in how:
            found.append((kind, aten))
            if how:
                on_mps.append(f"aten::{aten}: {how}")
    if on_mps and not since:
        errors.add(line, label, "implements", f"torch {installed} already runs this op on MPS ({on_mps[0]}); a "
                   "kernel entry does not replace torch's MPS kernels: if torch gained it in a release after the "
                   "entry was written, say `torch_has_mps: <that release>` (mpsgen's MPS kernel then steps aside)")
    elif wrong := misdated(since, on_mps, name):
        errors.add(line, label, "torch_has_mps", wrong)
    if not found:
        errors.add(line, label, "implements", f"every variant of aten::{name} is composite in torch (it runs "
                   "through other ops): there is no kernel of it to register")
        return (), False
    kinds = dict(found)
    if "out" in kinds:
        out_names = [a.name for a in FunctionSchema.parse(table[kinds["out"]]["schema"]).arguments.out]
        if out_names != [t.name for t in outputs]:
            errors.add(line, label, "compute.outputs", f"aten::{kinds['out']} writes into {', '.join(out_names)}: "
                       f"name the outputs so (got {', '.join(t.name for t in outputs)})")
    if "inplace" in kinds and not any(t.init_from == first_tensor for t in outputs):
        errors.add(line, label, "compute.outputs", f"aten::{kinds['inplace']} writes into '{first_tensor}': "
                   f"the output it is needs `init: {first_tensor}` (it starts as a copy of it, and the in-place "
                   "variant is that tensor)")
    return tuple(found), bool(on_mps)
