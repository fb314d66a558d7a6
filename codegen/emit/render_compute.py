"""Render a kernel entry (codegen/registry/compute_model.py's ComputeOp) into its `.metal` and its
two host stubs, from templates/compute.metal.j2, compute_cpu.cpp.j2 and compute_mps.mm.j2 (with
_compute_host.j2, what both stubs share)."""
from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import jinja2
from torchgen.model import BaseTy, BaseType, FunctionSchema

from ..registry import sizes
from ..registry.argmodel import CHECK_ERRORS
from ..registry.compute_model import TEMPLATE, ComputeOp, GroupMemory, metal_sizeof
from ..registry.dtypes import DTYPES


@dataclass(frozen=True)
class KernelParameter:
    declaration: str  # its type and name, T standing for the template dtype
    attribute: str  # `[[buffer(0)]]`

    def for_dtype(self, t: str) -> str:
        return re.sub(rf"\b{TEMPLATE}\b", t, self.declaration)


def kernel_parameters(op: ComputeOp) -> list[KernelParameter]:
    """The kernel's signature, made from the entry's arguments: its buffers, its threadgroup
    memory, then the thread positions the body reads."""
    if op.function:  # as the function declares them
        return [KernelParameter(p.declaration, f"[[{p.attribute}({p.index})]]" if p.attribute in ("buffer", "threadgroup")
                                else f"[[{p.attribute}]]") for p in op.signature]
    found = [KernelParameter(f"{b.declaration} {b.name}", f"[[buffer({i})]]") for i, b in enumerate(op.buffers)]
    found += [KernelParameter(f"threadgroup {m.type}* {m.name}", f"[[threadgroup({i})]]")
              for i, m in enumerate(op.group_memory)]
    found += [KernelParameter(f"{t} {a}", f"[[{a}]]") for a, t in op.positions]
    return found


def _names(op: ComputeOp, outputs: bool) -> tuple[set[str], set[str]]:
    tensors = {t.name for t in op.tensors if outputs or not t.output}
    return tensors, {s.name for s in op.scalars if s.schema_type == "int"}


def shape_lines(op: ComputeOp, shape: str) -> list[str]:
    return sizes.shape_to_cpp(shape, *_names(op, False))


def launch_sizes(op: ComputeOp, exprs: tuple[str, ...]) -> str:
    return ", ".join(sizes.size_to_cpp(e, *_names(op, True), launch=True) for e in exprs)


def memory_bytes(op: ComputeOp) -> str:
    """Each [[threadgroup(i)]]'s bytes, its element type's size in the dtype's instantiation."""
    return ", ".join(f"{sizes.size_to_cpp(m.length, *_names(op, True), launch=True)} * int64_t(sizeof_{m.name})"
                     for m in op.group_memory)


def group_memory_sizes(op: ComputeOp, m: GroupMemory) -> str:
    """sizeof the memory's element type, by the template dtype `T` (a C++ expression)."""
    sizes_ = {t: metal_sizeof(m.type, t) for t in op.dtypes}
    if len(set(sizes_.values())) == 1:
        return str(next(iter(sizes_.values())))
    return " : ".join(f"T == c10::k{DTYPES[t].scalar_type} ? {n}" for t, n in sizes_.items()) + " : 0"


_CPP = {"int": "int64_t", "float": "double", "bool": "bool"}
# a `constant X&` Scalar parameter's X, as the host holds the value it binds
HOST_SCALARS = {"long": "int64_t", "int": "int32_t", "uint": "uint32_t", "ulong": "uint64_t", "short": "int16_t",
                "ushort": "uint16_t", "char": "int8_t", "uchar": "uint8_t", "float": "float", "bool": "bool"}


def host_scalar_type(declaration: str) -> str:
    """The host's type of the value bound to a `constant long&` (or `constant float&`, ...) parameter."""
    words = [w for w in re.findall(r"\w+", declaration) if w not in ("constant", "const", "device")]
    return HOST_SCALARS[words[0]]


def cpp_params(op: ComputeOp) -> str:
    """The host function's parameters, in schema order."""
    scalars = {s.name: s for s in op.scalars}
    return ", ".join(f"{_CPP[scalars[a.name].schema_type] if a.name in scalars else 'const at::Tensor&'} {a.name}"
                     for a in op.schema.arguments.flat_all)


@dataclass(frozen=True)
class HostVariant:
    """One registered variant of a kernel entry: its host function and how it gets its outputs."""
    kind: str  # functional, out, inplace
    schema_name: str  # the operator it is registered for: `take.out`
    function: str  # the host function's name, without the backend
    params: str  # its C++ parameters, in its schema's order
    returns: str  # its C++ return type


def host_variants(op: ComputeOp) -> list[HostVariant]:
    """Each variant the entry's kernels register, with its schema: for an `implements: aten`
    entry aten's (those aten dispatches to a backend kernel), else its own (functional, out=,
    in-place where it has one: compute_variants.py)."""
    from ..registry.aten_schemas import aten_ops

    schemas = {name: aten_ops()[name]["schema"] for _, name in op.aten_variants} if op.implements else \
        {s.split("(", 1)[0]: s for _, s in op.own_schemas}
    found = []
    for kind, name in op.variants:
        schema = FunctionSchema.parse(schemas[name])
        params = ", ".join(f"{_cpp_type(a)} {a.name}" for a in schema.arguments.flat_all)
        function = {"functional": op.name, "out": f"{op.name}_out", "inplace": f"{op.name}_inplace"}[kind]
        found.append(HostVariant(kind, name, function, params,
                                 _returns(op, True) if kind == "out" else "at::Tensor&" if kind == "inplace"
                                 else _returns(op, False)))
    return found


def _cpp_type(a) -> str:
    if a.type == BaseType(BaseTy.Tensor):
        return "at::Tensor&" if a.annotation is not None and a.annotation.is_write else "const at::Tensor&"
    return _CPP[{BaseTy.int: "int", BaseTy.float: "float", BaseTy.bool: "bool"}[a.type.name]]


def _returns(op: ComputeOp, references: bool) -> str:
    t = "at::Tensor&" if references else "at::Tensor"
    return t if len(op.outputs) == 1 else f"std::tuple<{', '.join([t] * len(op.outputs))}>"


def dtype_scalar_type(t: str) -> str:
    return DTYPES[t].scalar_type


# c10/metal headers a kernel's code may call into, included where it does: reduction_utils.h
# calls SIMD-group functions, and a unit that includes it runs its threads on fibers
# (compute_syntax.synchronises).
_C10_HEADERS = {
    "c10/metal/reduction_utils.h": re.compile(r"\b(?:threadgroup_(?:sum2?|prod|max|min|argmax|argmin|welford\w*)|"
                                              r"simd_arg(?:max|min)|c10::metal::simd_\w+)\b"),
    "c10/metal/atomic.h": re.compile(r"\bAtomicType\b"),
    "c10/metal/random.h": re.compile(r"\b(?:philox4|rand|randn|randint)\w*\s*\("),
}


def c10_includes(op: ComputeOp) -> list[str]:
    code = op.function or op.body
    return [h for h, used in _C10_HEADERS.items() if used.search(code)]


def compute_files(env: jinja2.Environment, registry, banner: str) -> dict[str, str]:
    yaml_name = Path(registry.path).name
    files = {}
    for op in registry.compute_ops:
        common = dict(op=op, ns=registry.namespace, yaml_name=yaml_name, banner=banner.format(
            origin=f"{op.loc} (op '{op.name}')"), params=kernel_parameters(op), shape_lines=shape_lines,
            launch_sizes=launch_sizes, memory_bytes=memory_bytes, TEMPLATE=TEMPLATE,
            group_memory_sizes=group_memory_sizes, dtype_scalar_type=dtype_scalar_type, cpp_params=cpp_params,
            host_scalar_type=host_scalar_type, c10_includes=c10_includes(op), op_variants=host_variants(op),
            check_macro=CHECK_ERRORS.__getitem__)
        files[f"{op.name}.metal"] = env.get_template("compute.metal.j2").render(**common)
        files[f"{op.name}_cpu.cpp"] = env.get_template("compute_cpu.cpp.j2").render(**common)
        files[f"{op.name}_mps.mm"] = env.get_template("compute_mps.mm.j2").render(**common)
    return files
