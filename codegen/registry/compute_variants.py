"""The variants and derivatives of a kernel entry of its own namespace (one without
`implements: aten`, whose variants are aten's: compute_aten.py).

Its schemas are named as native_functions.yaml names an op's: `row_sum.out` writes into the
outputs as the entry names them (a keyword-only `Tensor(a!)` each, aten's frexp.Tensor_out's
way), and `row_sum_` exists where the one output starts as a copy of the first input
(`init: self`): the kernel then updates that tensor, which the in-place variant is.

    - func: row_sum(Tensor self) -> Tensor
      derivatives:
        self: kops::row_sum_backward(grad, self)   # a backward that is a kernel entry itself

A formula is C++ as derivatives.yaml's (formulas.py checks it). generated/autograd.cpp declares
each kernel entry of the namespace as a function `<namespace>::<op>(...)` calling its operator,
so one entry's formula can call another's kernel.
"""
from __future__ import annotations

from string import ascii_lowercase

from torchgen.model import FunctionSchema

from .argmodel import schema_args
from .dtypes import DTYPES
from .formulas import check_derivatives
from .model import Derivative


def own_schemas(schema: FunctionSchema, outputs, first_tensor: str) -> tuple[tuple[str, str], ...]:
    """(variant, schema) of the functional op, its out= variant and, where the one output is
    `init: <first input>`, its in-place variant."""
    base, ov = str(schema.name.name.base), schema.name.overload_name
    args = schema_args(schema)
    pos = [a.decl for a in args if not a.kwarg_only]
    kw = [a.decl for a in args if a.kwarg_only]
    marks = [f"Tensor({ascii_lowercase[i]}!)" for i in range(len(outputs))]
    outs = [f"{m} {t.name}" for m, t in zip(marks, outputs)]
    returns = marks[0] if len(marks) == 1 else f"({', '.join(outs)})"
    out_name = f"{base}.{ov}_out" if ov else f"{base}.out"
    found = [("functional", str(schema)), ("out", f"{out_name}({', '.join(pos)}, *, {', '.join(kw + outs)}) -> {returns}")]
    if len(outputs) == 1 and first_tensor and outputs[0].init_from == first_tensor:
        rest = [a.decl for a in args if not a.kwarg_only and a.name != first_tensor]
        star = f", *, {', '.join(kw)}" if kw else ""
        inplace = f"{base}_.{ov}" if ov else f"{base}_"
        found.append(("inplace", f"{inplace}({', '.join([f'Tensor(a!) {first_tensor}', *rest])}{star}) -> Tensor(a!)"))
    return tuple(found)


def derivatives(entry, schema: FunctionSchema, outputs, dtypes, implements: str, label: str, line: int,
                errors) -> tuple[Derivative, ...]:
    """The entry's `derivatives:` (formulas.py's checks), where a kernel entry may have them:
    of its own namespace, with one output of the template dtype (its float dtypes differentiate);
    beside it, outputs of fixed dtypes (indices, exponents), which are not differentiated and
    which the formulas read by name."""
    if "derivatives" not in entry:
        return ()
    if implements:
        errors.add(line, label, "derivatives", "an `implements: aten` entry differentiates as torch's aten op does "
                   "(derivatives.yaml); remove 'derivatives'")
        return ()
    if sum(t.dtype == "T" for t in outputs) != 1:
        errors.add(line, label, "derivatives", "a kernel entry with derivatives has one output of the template "
                   f"dtype T (got {', '.join(f'{t.name}: {t.dtype}' for t in outputs) or 'none'}), the one "
                   "differentiated; the gradients of several such outputs are not generated yet")
        return ()
    if not floating(dtypes):
        errors.add(line, label, "derivatives", f"its kernels are for {', '.join(dtypes)}: integer and bool results, "
                   "which autograd does not differentiate; remove 'derivatives'")
        return ()
    return check_derivatives(entry["derivatives"], schema, schema_args(schema), label, line, errors,
                             tuple(t.name for t in outputs) if len(outputs) > 1 else ())


def floating(dtypes) -> bool:
    """Whether some of the template dtypes is floating (or complex): what autograd differentiates."""
    return any(DTYPES[t].kind in ("float", "complex") for t in dtypes)
