"""The model of a kernel entry (`compute:` in ops.yaml): a Metal compute kernel as a torch op.

What differs from kernel entry to kernel entry is data here; the templates
(templates/compute*.j2) and the support code (support/host/compute_host.h, the CPU and MPS
launchers) are the same for all of them.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

from torchgen.model import FunctionSchema

from .argmodel import schema_args
from .dtypes import DTYPES, OPMATH
from .kernel_signature import Parameter
from .compute_variants import floating
from .model import Derivative, Location, inplace_order

TEMPLATE = "T"  # a tensor of the template dtype: one kernel per registered dtype
# an output's shape that is its reference's: the op run on meta tensors, whose fake kernel runs the
# entry's reference on them (coreai's torch_defn: one definition for the shape and the oracle)
REFERENCE = "reference"

# Metal's type of a Scalar argument, by its schema type
SCALAR_TYPES = {"int": "long", "float": "float", "bool": "bool"}

# What a body may read besides its arguments, each a parameter with that attribute when used
BODY_POSITIONS = {
    "thread_position_in_grid": "uint3", "thread_position_in_threadgroup": "uint3",
    "threadgroup_position_in_grid": "uint3", "threads_per_threadgroup": "uint3", "threads_per_grid": "uint3",
    "threadgroups_per_grid": "uint3", "thread_index_in_threadgroup": "uint",
    "thread_index_in_simdgroup": "uint", "simdgroup_index_in_threadgroup": "uint",
    "simdgroups_per_threadgroup": "uint", "threads_per_simdgroup": "uint",
}
# and each Tensor's layout, bound when the body uses it (`self_sizes`, ...)
LAYOUT = {"sizes": "constant long*", "strides": "constant long*", "ndim": "constant uint&", "numel": "constant long&"}


_SIZES = {"float": 4, "half": 2, "bfloat": 2, "int": 4, "uint": 4, "long": 8, "ulong": 8, "short": 2, "ushort": 2,
          "char": 1, "uchar": 1, "bool": 1}


def metal_sizeof(type_: str, t: str) -> int | None:
    """sizeof a Metal scalar or vector type (`float`, `half4`, `T`, `opmath_t<T>`) where T is `t`;
    None for a type this does not know."""
    s = re.sub(rf"\b{TEMPLATE}\b", t, type_).replace(" ", "")
    m = re.fullmatch(r"(?:c10::metal::)?opmath_t<(\w+)>", s)
    if m:
        s = OPMATH.get(m.group(1), m.group(1))
    m = re.fullmatch(r"([a-z]+?)([234]?)", s)
    if not m or m.group(1) not in _SIZES:
        return None
    n = int(m.group(2) or 1)
    return _SIZES[m.group(1)] * (4 if n == 3 else n)


@dataclass(frozen=True)
class ComputeTensor:
    name: str
    output: bool
    dtype: str  # TEMPLATE or a Metal dtype (DTYPES)
    shape: str = ""  # an output's shape (codegen/registry/sizes.py), or REFERENCE
    # an output's value before the launch: a number (kernels accumulating into it) or the name of
    # an input Tensor it starts as a copy of (kernels scattering into it; its in-place variant
    # writes into that input)
    init: float | int | str | None = None

    @property
    def from_reference(self) -> bool:
        """Shaped as the entry's reference shapes its result, on meta tensors."""
        return self.shape == REFERENCE

    @property
    def init_from(self) -> str:
        """The input an output starts as a copy of, or ''."""
        return self.init if isinstance(self.init, str) else ""

    def metal_type(self, t: str) -> str:
        return t if self.dtype == TEMPLATE else self.dtype

    @property
    def scalar_type(self) -> str:
        """The c10::ScalarType of a fixed dtype ('' for the template's)."""
        return "" if self.dtype == TEMPLATE else DTYPES[self.dtype].scalar_type


@dataclass(frozen=True)
class ComputeScalar:
    name: str
    schema_type: str  # int, float, bool

    @property
    def metal(self) -> str:
        return SCALAR_TYPES[self.schema_type]


@dataclass(frozen=True)
class ComputeCheck:
    """A condition the host checks before the launch (`checks:`), with its error."""
    require: str  # the condition as ops.yaml gives it (Python)
    cpp: str  # the condition in C++ (sizes.condition_to_cpp)
    message: tuple[str, ...]  # TORCH_CHECK's message arguments: C++ string literals and sizes
    error: str  # the Python exception: RuntimeError, IndexError, ValueError, ...
    line: int
    text: str = ""  # the message as ops.yaml gives it, {size} holes and all (the fake kernel's)


@dataclass(frozen=True)
class SampleTensor:
    """A Tensor of a `samples:` item: its shape, the range of its random values (make_tensor's
    low and high) and whether it is made non-contiguous."""
    shape: tuple[int, ...]
    low: float | None = None
    high: float | None = None
    noncontiguous: bool = False


@dataclass(frozen=True)
class GroupMemory:
    name: str
    type: str  # a Metal type, may name T (`opmath_t<T>`)
    length: str  # elements, a launch size


@dataclass(frozen=True)
class Buffer:
    """One [[buffer(i)]] of the kernel, in order: what the host binds there."""
    name: str  # the parameter's name in the kernel
    declaration: str  # its type, T standing for the template dtype
    tensor: str = ""  # the tensor whose data, or layout, it is
    layout: str = ""  # "", or sizes / strides / ndim / numel
    scalar: str = ""  # the Scalar argument it is
    index: int = 0


def buffer_name(name: str, tensors: set[str], scalars: set[str]) -> Buffer | None:
    """What a [[buffer(i)]] parameter of this name binds: a tensor, a Scalar, or a tensor's layout
    (`self_sizes`); None for a name that is none of them."""
    if name in tensors:
        return Buffer(name, "", tensor=name)
    if name in scalars:
        return Buffer(name, "", scalar=name)
    for layout in LAYOUT:
        if name.endswith(f"_{layout}") and name[: -len(layout) - 1] in tensors:
            return Buffer(name, "", tensor=name[: -len(layout) - 1], layout=layout)
    return None


def buffer_of(op, p: Parameter) -> Buffer:
    b = buffer_name(p.name, {t.name for t in op.tensors}, {s.name for s in op.scalars})
    return Buffer(b.name, p.declaration.rsplit(None, 1)[0] if " " in p.declaration else p.declaration, b.tensor,
                  b.layout, b.scalar, p.index)


@dataclass(frozen=True)
class ComputeOp:
    schema: FunctionSchema
    loc: Location
    reference: str
    opinfo: str
    dtypes: tuple[str, ...]  # the template dtypes, Metal names
    tensors: tuple[ComputeTensor, ...]  # inputs in schema order, then outputs
    scalars: tuple[ComputeScalar, ...]
    group_memory: tuple[GroupMemory, ...]
    grid: tuple[str, ...]  # threads per dimension (1 to 3)
    threadgroup: tuple[str, ...]
    body: str
    body_line: int  # ops.yaml line of the body's first line
    samples: tuple  # per sample: (name, shape) of each Tensor, then (name, value) of each Scalar
    implements: str = ""  # "aten": its kernels are registered for torch's own aten::<op>
    # for an aten entry: (variant, aten's operator name) of each variant registered: those of
    # functional / out / inplace that aten dispatches to a backend kernel (compute_aten.py)
    aten_variants: tuple[tuple[str, str], ...] = ()
    # of its own namespace: (variant, schema) of functional, out= and in-place (compute_variants.py)
    own_schemas: tuple[tuple[str, str], ...] = ()
    derivatives: tuple[Derivative, ...] = ()  # `derivatives:`, for an entry of its own namespace
    # `torch_has_mps: "2.15"`: the first torch with its own MPS kernels for the op; the installed
    # torch is one (`torch_runs_mps`): the entry's MPS stub registers nothing, its CPU kernels stay
    torch_has_mps: str = ""
    torch_runs_mps: bool = False
    checks: tuple[ComputeCheck, ...] = ()
    # (Tensor, size): its values index a dimension of that size, negative ones from the end
    indices: tuple[tuple[str, str], ...] = ()
    # the whole-function form (`function:`): its text, first line and the kernel's parameters
    function: str = ""
    function_line: int = 0
    signature: tuple[Parameter, ...] = ()

    @property
    def name(self) -> str:
        """The kernel's and the generated files' name."""
        overload = self.schema.name.overload_name
        return str(self.schema.name.name) + (f"_{overload}" if overload else "")

    @property
    def qualified_name(self) -> str:
        return str(self.schema.name)

    @property
    def word_atomics(self) -> bool:
        """Whether its kernel uses atomics, which on an element of 1 or 2 bytes (c10/metal's
        AtomicType: a compare-and-swap of the 4-byte word around it) reach the whole word: on the
        CPU backend its outputs are then launched into buffers of whole words (compute_host.h's
        working_output), which the GPU's allocations are."""
        return re.search(r"\b(?:atomic\w*|AtomicType\w*)\b", self.body or self.function) is not None

    @property
    def args(self):
        """The schema's arguments (argmodel.Arg), as sample binding reads them."""
        return schema_args(self.schema)

    @property
    def variants(self) -> tuple[tuple[str, str], ...]:
        """(variant, operator name) of each variant its kernels register: aten's or its own."""
        return self.aten_variants or tuple((kind, s.split("(", 1)[0]) for kind, s in self.own_schemas)

    # What generated/autograd.cpp reads of an entry (as of model.Entry's): a kernel entry has no mask
    mask = ""

    @property
    def schemas(self) -> dict[str, str]:
        return dict(self.own_schemas)

    @property
    def schema_names(self) -> dict[str, str]:
        return dict(self.variants)

    @property
    def cname(self) -> str:
        return self.name

    @property
    def out_names(self) -> tuple[str, ...]:
        return tuple(t.name for t in self.outputs)

    @property
    def inplace_args(self):
        return inplace_order(self.args)

    def derivative(self, arg: str) -> Derivative | None:
        return next((d for d in self.derivatives if d.arg == arg), None)

    @property
    def differentiable(self) -> bool:
        """Whether it has a backward node: one output of the template dtype (beside any of fixed
        dtypes), some dtype floating."""
        return sum(t.dtype == TEMPLATE for t in self.outputs) == 1 and floating(self.dtypes)

    @property
    def grad_output(self) -> int:
        """The index of the output it differentiates (the one of the template dtype)."""
        return next(i for i, t in enumerate(self.outputs) if t.dtype == TEMPLATE)

    @property
    def impl_namespace(self) -> str | None:
        return "aten" if self.implements else None

    @property
    def inputs(self) -> tuple[ComputeTensor, ...]:
        return tuple(t for t in self.tensors if not t.output)

    @property
    def outputs(self) -> tuple[ComputeTensor, ...]:
        return tuple(t for t in self.tensors if t.output)

    @cached_property
    def buffers(self) -> tuple[Buffer, ...]:
        """The kernel's [[buffer(i)]] parameters: the function's, by index; or for a body, the
        inputs, the outputs, the Scalars, then the layout of each tensor the body uses."""
        if self.function:
            return tuple(sorted((buffer_of(self, p) for p in self.signature if p.attribute == "buffer"),
                                key=lambda b: b.index))
        found = [Buffer(t.name, f"{'device' if t.output else 'constant'} {t.dtype}*", tensor=t.name)
                 for t in self.tensors]
        found += [Buffer(s.name, f"constant {s.metal}&", scalar=s.name) for s in self.scalars]
        for t in self.tensors:
            for layout, declaration in LAYOUT.items():
                if self.uses(f"{t.name}_{layout}"):
                    found.append(Buffer(f"{t.name}_{layout}", declaration, tensor=t.name, layout=layout))
        return tuple(found)

    @cached_property
    def positions(self) -> tuple[tuple[str, str], ...]:
        """The thread-position parameters the body reads: (attribute, type)."""
        if self.function:
            return ()  # the function's own (signature)
        return tuple((a, t) for a, t in BODY_POSITIONS.items() if self.uses(a))

    def uses(self, name: str) -> bool:
        return re.search(rf"\b{re.escape(name)}\b", self.body) is not None

    def host_name(self, t: str) -> str:
        return f"{self.name}_{t}"
