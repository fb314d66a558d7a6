"""The in-tree files of an exported op, from templates/pytorch/: its kernels
(kernels/<File>.metal) and its host (operations/<File>.mm)."""
from __future__ import annotations

import jinja2

from ..emit.render import TEMPLATES, registrations
from ..registry.model import Op
from .plan import Plan
from . import tree


def file_stem(op: Op) -> str:
    """`special_ndtri` -> `SpecialNdtri`: torch names its kernel and operation files in CamelCase."""
    return "".join(part[:1].upper() + part[1:] for part in op.name.split("_"))


def kernel_path(op: Op) -> str:
    return f"{tree.KERNELS}/{file_stem(op)}.metal"


def operation_path(op: Op) -> str:
    return f"{tree.OPERATIONS}/{file_stem(op)}.mm"


def _environment() -> jinja2.Environment:
    return jinja2.Environment(loader=jinja2.FileSystemLoader(TEMPLATES / "pytorch"), trim_blocks=True,
                              lstrip_blocks=True, keep_trailing_newline=True, undefined=jinja2.StrictUndefined)


def _exec_arguments(op: Op) -> str:
    """What exec_*_kernel takes after the iterator and the name: the alpha the kernels read; for a
    comparison, the bool its kernels produce (`natural_output_dtype`, so an out= of another dtype
    is cast from it)."""
    if op.transport == "alpha":
        return f", {op.params[0].name}"
    if op.bool_output and op.family == "binary":
        return ", std::nullopt, std::nullopt, kBool"
    return ""


def files(plan: Plan) -> dict[str, str]:
    """In-tree path -> text of the op's two new files."""
    op = plan.op
    env = _environment()
    lines = [line for kernel in op.kernels for r in op.table(kernel).registrations
             for line in registrations(op, kernel, r)]
    return {
        kernel_path(op): env.get_template("kernel.metal.j2").render(op=op, lines=lines),
        operation_path(op): env.get_template("operation.mm.j2").render(op=op, plan=plan, file=file_stem(op),
                                                                          extra=_exec_arguments(op)),
    }
