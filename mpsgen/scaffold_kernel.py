"""`mpsgen new OP --kernel`: add a kernel entry (ops.yaml `compute:`, docs/registry.md) to a
project's ops.yaml, its body left to write (`mpsgen generate` refuses it empty).

OP is aten's operator (its schema, OpInfo, dtypes and reference, as `mpsgen new` gives a functor
entry; `--aten` registers it for aten's own op), or a schema of the project's own op,
`"row_max(Tensor self) -> Tensor"`, whose torch reference starts as a stub in
`<package>/references.py` and whose samples are shapes to edit.
"""
from __future__ import annotations

import re

import yaml

from .codegen.package import Project
from .scaffold import ScaffoldError, _dtype_items, _opinfo_name, _reference

_SCALARS = {"int": "1", "float": "0.5", "bool": "false"}


def _outputs(schema) -> list[str]:
    """The outputs' names: as aten's out= variant names them, the schema's named returns, or out."""
    from torchgen.model import FunctionSchema

    from .codegen.registry import aten_schemas

    out = aten_schemas.variant_names(str(schema)).get("out")
    if out:
        return [a.name for a in FunctionSchema.parse(aten_schemas.aten_ops()[out]["schema"]).arguments.out]
    if all(r.name for r in schema.returns):
        return [r.name for r in schema.returns]
    return ["out"] if len(schema.returns) == 1 else [f"out{i}" for i in range(len(schema.returns))]


def _result_dtypes(schema, dtypes, aten: bool) -> list[str]:
    """Each output's dtype: T where it is the input's for every dtype (aten's meta kernel says, for
    an aten op), else the fixed Metal dtype it always is."""
    import torch

    from .codegen.registry.dtypes import DTYPES
    from .scaffold import meta_results

    if not aten:
        return ["T"] * len(schema.returns)
    metal = {getattr(torch, d.torch): m for m, d in DTYPES.items()}
    seen: list[set] = [set() for _ in schema.returns]
    for dtype in dtypes:
        # a dtype aten refuses tells nothing; the others decide
        for found, r in zip(seen, meta_results(schema, dtype) or ()):
            found.add("T" if r.dtype == dtype else metal.get(r.dtype, "T"))
    return [next(iter(s)) if len(s) == 1 else "T" for s in seen]


def _from_a_sample(schema, info, tensors, outputs) -> tuple[dict, dict]:
    """From OpInfo's first float32 sample through aten's op: the inputs of another dtype than the
    first Tensor's (fixed: `tensors:`), and each output's shape where it is an input's."""
    import torch

    from .samples import op_overload

    try:
        sample = next(iter(info.sample_inputs("cpu", torch.float32)))
        given = [sample.input, *sample.args]
        results = op_overload("aten", f"{schema.name.name}.{schema.name.overload_name or 'default'}")(
            *given, **sample.kwargs)
    except Exception:  # noqa: BLE001  (no sample to learn from: the defaults stand)
        return {}, {}
    from .codegen.registry.dtypes import DTYPES

    metal = {getattr(torch, d.torch): m for m, d in DTYPES.items()}
    values = dict(zip((a.name for a in schema.arguments.flat_positional), given))
    fixed = {t.name: metal[v.dtype] for t in tensors[1:] if isinstance(v := values.get(t.name), torch.Tensor)
             and v.dtype != sample.input.dtype and v.dtype in metal}
    shapes = {}
    for name, r in zip(outputs, results if isinstance(results, tuple) else (results,)):
        same = [t.name for t in tensors if isinstance(values.get(t.name), torch.Tensor) and values[t.name].shape == r.shape]
        if same and same[0] != tensors[0].name:
            shapes[name] = f"{same[0]}.shape"
    return fixed, shapes


def _check_arguments(schema, where: str) -> list:
    tensors = []
    for a in schema.arguments.flat_all:
        if str(a.type) == "Tensor":
            tensors.append(a)
        elif str(a.type) not in _SCALARS:
            raise ScaffoldError(f"{where}: argument '{a.name}' is {a.type}; a kernel entry takes Tensors, int, float "
                                "and bool")
    if not tensors:
        raise ScaffoldError(f"{where}: a kernel entry takes at least one Tensor, whose dtype picks its kernel")
    return tensors


def new_kernel(project: Project, op: str, aten: bool = False) -> str:
    """Append a kernel entry for `op` (aten's operator, or a schema of the project's own op) to the
    project's ops.yaml, and for an own op a reference stub; returns the entry's text."""
    import torch
    from torchgen.model import FunctionSchema, SchemaKind

    from .codegen.registry import aten_schemas
    from .samples import _opinfo

    own = "(" in op
    if own:
        if aten:
            raise ScaffoldError("--aten names aten's operator, not a schema of the project's own")
        try:
            schema = FunctionSchema.parse(op)
        except Exception as e:  # noqa: BLE001  (torchgen raises AssertionError/RuntimeError)
            raise ScaffoldError(f"not a valid schema: {op!r} ({e})") from None
        if schema.kind() != SchemaKind.functional:
            raise ScaffoldError(f"{op}: give the functional schema; its out= and in-place variants are generated")
    else:
        table = aten_schemas.aten_ops()
        name = op if op in table else f"{op}.default"
        if name not in table:
            raise ScaffoldError(f"aten has no operator {op!r} (a schema in quotes, `\"my_op(Tensor self) -> "
                                f"Tensor\"`, adds an op of the project's own)")
        schema = FunctionSchema.parse(table[name]["schema"])
        if schema.kind() != SchemaKind.functional:
            raise ScaffoldError(f"aten::{op} is an {schema.kind().name} variant; name the functional overload")
    tensors = _check_arguments(schema, f"aten::{op}" if not own else str(schema.name))
    base = str(schema.name.name)
    text = project.ops.read_text()
    entries = (yaml.safe_load(text) or {}).get("ops") or []
    if any(isinstance(e, dict) and str(e.get("func", "")).split("(")[0] in (base, str(schema.name)) for e in entries):
        raise ScaffoldError(f"{project.ops} already has {schema.name}; nothing was changed")

    info_name = None if own else _opinfo_name(base)
    info = _opinfo(info_name) if info_name else None
    wanted = {torch.float32, torch.float16, torch.bfloat16}
    if info:
        wanted = (set(info.supported_dtypes("cpu")) - {torch.float64, torch.complex128, torch.complex64,
                                                       torch.complex32}) or wanted
    items = _dtype_items({d: d for d in wanted}, 1) or ["float"]
    outputs = list(zip(_outputs(schema), _result_dtypes(schema, sorted(wanted, key=str), not own)))
    first = tensors[0].name
    shown = f'"{op}"' if own else op
    lines = ["", f"  # `mpsgen new {shown} --kernel`: a kernel entry (mpsgen's docs/registry.md, kernel entries). "
                 "Write its body:",
             f"  # by default one thread per element of `{outputs[0][0]}` (thread_position_in_grid.x), the "
             "inputs contiguous;",
             f"  # `{first}_sizes`, `{first}_numel` and the other layouts are bound where the body reads them. "
             "Edit each",
             "  # output's shape (`reference`: its reference's result's, on meta tensors; a rule of sizes "
             "costs no call into Python),",
             "  # and the grid and threadgroup where the kernel needs others. generate refuses an empty body.",
             f"  - func: {schema}"]
    if aten:
        lines.append("    implements: aten")
    lines.append(f"    dtypes: [{', '.join(items)}]")
    if own:
        lines.append(f"    reference: {project.package}.references.{base}")
    else:
        lines.append(f"    reference: {_reference(base, info)}")
    if info:
        lines.append(f"    opinfo: {info_name}")
    else:
        sample = ", ".join(f"{a.name}: [5, 7]" if a in tensors else f"{a.name}: {_SCALARS[str(a.type)]}"
                           for a in schema.arguments.flat_all)
        empty = ", ".join(f"{a.name}: [0]" if a in tensors else f"{a.name}: {_SCALARS[str(a.type)]}"
                          for a in schema.arguments.flat_all)
        lines.append(f"    samples: [{{{sample}}}, {{{empty}}}]")
    fixed, shapes = _from_a_sample(schema, info, tensors, [n for n, _ in outputs]) if info else ({}, {})
    lines += ["    compute:"]
    if fixed:
        lines.append(f"      tensors: {{{', '.join(f'{n}: {d}' for n, d in fixed.items())}}}")
    lines.append("      outputs:")
    for name, dtype in outputs:
        lines.append(f"        {name}: {{shape: {shapes.get(name, 'reference')}"
                     + (f", dtype: {dtype}" if dtype != "T" else "") + "}")
    lines += ['      body: ""', ""]
    entry = "\n".join(lines)
    project.ops.write_text(text.rstrip("\n") + "\n" + entry)
    if own:
        _reference_stub(project, schema)
    return entry


def _reference_stub(project: Project, schema) -> None:
    """A function in <package>/references.py for the reference to be written (it raises until then)."""
    path = project.root / project.package.replace(".", "/") / "references.py"
    text = path.read_text() if path.is_file() else '"""torch references of the ops.yaml entries."""\nimport torch\n'
    name = str(schema.name.name)
    if re.search(rf"^def {re.escape(name)}\(", text, re.M):
        return
    params = ", ".join(a.name for a in schema.arguments.flat_all)
    path.write_text(text.rstrip("\n") + f"\n\n\ndef {name}({params}):\n"
                    f"    raise NotImplementedError(\"write {name}'s torch reference (ops.yaml's {name} entry)\")\n")
