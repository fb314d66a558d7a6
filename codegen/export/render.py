"""The in-tree files of an exported op, from templates/pytorch/: its kernels
(kernels/<File>.metal) and its host (operations/<File>.mm)."""
from __future__ import annotations

import jinja2

from dataclasses import dataclass

from ..emit.render import TEMPLATES, registrations
from ..registry.dtypes import DTYPES
from ..registry.model import Op
from .plan import Plan
from . import tree


def file_stem(op: Op) -> str:
    """`special_ndtri` -> `SpecialNdtri`: torch names its kernel and operation files in CamelCase."""
    return "".join(part[:1].upper() + part[1:] for part in op.name.split("_"))


def params_path(op: Op) -> str:
    return f"{tree.KERNELS}/{file_stem(op)}.h"


def kernel_path(op: Op) -> str:
    return f"{tree.KERNELS}/{file_stem(op)}.metal"


def operation_path(op: Op) -> str:
    return f"{tree.OPERATIONS}/{file_stem(op)}.mm"


def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES / "pytorch"), trim_blocks=True,
                              lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)


def _exec_arguments(op: Op, kernel: str) -> str:
    """What exec_*_kernel takes after the iterator and the name: the alpha the kernel reads; for a
    comparison, the bool its kernels produce (`natural_output_dtype`, so an out= of another dtype
    is cast from it)."""
    if op.kernel_transport(kernel) == "alpha":
        alpha = op.kernel_alpha_arg(kernel)
        # an opmath alpha in the kernels' DTYPEA: ATen's opmath type (plan.py refuses the integers
        # whose c10/metal opmath_t is wider, which ATen's is not)
        return f", {alpha}, at::toOpMathType(iter.common_dtype())" if op.alpha_type(alpha) == "opmath" else f", {alpha}"
    if op.bool_output and op.family == "binary":
        return ", std::nullopt, std::nullopt, kBool"
    return ""


# a params field's C++/Metal type in torch's one-parameter struct (T: its instantiation type)
_FIELD = {"T": "T", "opmath": "T", "float": "float", "long": "long", "int": "int", "bool": "bool"}
_CONVERT = {"float": "float", "long": "int64_t", "int": "int32_t", "bool": "bool"}  # of the fixed-type fields


@dataclass(frozen=True)
class Params:
    """An exported op's params struct: `<File>Params<T>`, T the opmath type or the dtype."""

    struct: str
    at_opmath: bool  # instantiated at opmath_t<dtype> (its fields were opmath_t<T>), else at the dtype
    fields: list[tuple[str, str]]  # (type, name)
    values: list[str]  # the host's initializer of each field, from the kernel function's arguments
    dtypes: list[str]  # AT_DISPATCH_V2's list: kFloat, kHalf, ...


def params(op: Op) -> Params | None:
    if op.transport != "params":
        return None
    at_opmath = any(p.metal == "opmath" for p in op.params)
    scalar = "opmath_t" if at_opmath else "scalar_t"
    values = []
    for p in op.params:
        to = scalar if p.metal in ("T", "opmath") else _CONVERT[p.metal]
        values.append(f"{p.name}.to<{to}>()" if p.kind == "Scalar" else f"static_cast<{to}>({p.name})")
    return Params(f"{file_stem(op)}Params", at_opmath, [(_FIELD[p.metal], p.name) for p in op.params], values,
                  [f"k{DTYPES[t].scalar_type}" for t in op.compute_types])


def files(plan: Plan) -> dict[str, str]:
    """In-tree path -> text of the op's new files: its kernels, its host, and a params header."""
    op = plan.op
    env = _environment()
    p = params(op)
    lines = [line for kernel in op.kernels for r in op.table(kernel).registrations
             for line in registrations(op, kernel, r)]
    if p is not None:  # the params typedefs under torch's naming
        lines = [line.replace(f"{op.name}_params_", f"{p.struct}_") for line in lines]
    extra = {k: _exec_arguments(op, k) for k, _ in plan.stubs}
    out = {
        kernel_path(op): env.get_template("kernel.metal.j2").render(op=op, lines=lines, params=p, file=file_stem(op)),
        operation_path(op): env.get_template("operation.mm.j2").render(
            op=op, plan=plan, file=file_stem(op), params=p,
            extra=extra, opmath_alpha=any("toOpMathType" in e for e in extra.values()),
            struct={k: op.kernel_transport(k) == "params" for k, _ in plan.stubs}),
    }
    if p is not None:
        out[params_path(op)] = env.get_template("params.h.j2").render(op=op, struct=p.struct, fields=p.fields,
                                                                       at_opmath=p.at_opmath)
    return out
