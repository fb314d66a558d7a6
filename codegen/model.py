"""The validated model of ops.yaml: frozen dataclasses, no knowledge of files."""
from __future__ import annotations

from dataclasses import dataclass

from torchgen.model import FunctionSchema

from .dtypes import DTYPES, Dtype


@dataclass(frozen=True)
class Location:
    file: str
    line: int

    def __str__(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True)
class Registration:
    """One REGISTER_* line: the kernel computes `input` -> `output`."""

    input: str
    output: str
    opmath: bool = False
    line: int = 0  # ops.yaml line of the `dtypes` item it came from

    @property
    def input_dtype(self) -> Dtype:
        return DTYPES[self.input]

    @property
    def output_dtype(self) -> Dtype:
        return DTYPES[self.output]

    @property
    def alpha(self) -> str:
        """The Scalar parameter's Metal type (alpha families): the output dtype,
        which is the dtype the MPS host sends it in (the iterator's common dtype)."""
        return self.output


@dataclass(frozen=True)
class XFail:
    dtype: str  # Metal type name
    reason: str
    samples: tuple[str, ...] = ()  # only these samples (e.g. "reference[64]"); () = the whole dtype


@dataclass(frozen=True)
class Derivative:
    """One `derivatives:` item: the gradient of input `arg`, a Python expression
    in `grad`, `result` and the entry's arguments (derivatives.yaml's spirit)."""

    arg: str
    formula: str
    line: int
    names: frozenset = frozenset()  # the names the formula reads


@dataclass(frozen=True)
class Arg:
    name: str
    kind: str  # "Tensor" | "Scalar"
    decl: str  # as written in the schema, e.g. "Scalar alpha=1"
    kwarg_only: bool
    has_default: bool = False

    @property
    def default(self) -> str | None:
        """The default as the schema writes it (`1`, `0.5`), or None."""
        return self.decl.split("=", 1)[1] if self.has_default else None


def schema_args(schema: FunctionSchema) -> list[Arg]:
    a = schema.arguments
    return [Arg(x.name, str(x.type), str(x), False, x.default is not None) for x in a.flat_positional] + [
        Arg(x.name, str(x.type), str(x), True, x.default is not None) for x in a.flat_kwarg_only
    ]


def variant_schemas(schema: FunctionSchema) -> dict[str, str]:
    """Functional, out= and in-place schemas, named as native_functions.yaml names them."""
    base, ov = str(schema.name.name.base), schema.name.overload_name
    args = schema_args(schema)
    pos = [a.decl for a in args if not a.kwarg_only]
    kw = [a.decl for a in args if a.kwarg_only]
    out_name = f"{base}.{ov}_out" if ov and ov != "Tensor" else f"{base}.out"
    inplace_name = f"{base}_.{ov}" if ov else f"{base}_"
    star = ", *, " + ", ".join(kw) if kw else ""
    inplace_pos = [f"Tensor(a!) {args[0].name}", *pos[1:]]
    return {
        "functional": str(schema),
        "out": f"{out_name}({', '.join(pos)}, *, {', '.join(kw + ['Tensor(a!) out'])}) -> Tensor(a!)",
        "inplace": f"{inplace_name}({', '.join(inplace_pos)}{star}) -> Tensor(a!)",
    }


@dataclass(frozen=True)
class Entry:
    """A callable entry of ops.yaml: an op with its functor, or a Scalar overload of one."""

    schema: FunctionSchema
    reference: str  # dotted path of the torch reference, e.g. torch.exp
    opinfo: str  # OpInfo name in op_db for samples ("" when none)
    xfails: tuple[XFail, ...]
    loc: Location
    derivatives: tuple[Derivative, ...] = ()

    @property
    def qualified_name(self) -> str:
        """`mul` or `mul.Scalar`: the torch.ops name with its overload."""
        return str(self.schema.name)

    @property
    def cname(self) -> str:
        """A C++ identifier for this entry's host functions."""
        return self.qualified_name.replace(".", "_")

    @property
    def args(self) -> list[Arg]:
        return schema_args(self.schema)

    @property
    def schemas(self) -> dict[str, str]:
        return variant_schemas(self.schema)

    def derivative(self, arg: str) -> Derivative | None:
        return next((d for d in self.derivatives if d.arg == arg), None)

    @property
    def schema_names(self) -> dict[str, str]:
        """The operator names (with overload) that m.impl() registers."""
        return {kind: s.split("(", 1)[0] for kind, s in self.schemas.items()}


@dataclass(frozen=True)
class Overload(Entry):
    """`mul.Scalar(Tensor self, Scalar other)`: runs the kernels of the op with the
    same base name, the Scalar arguments wrapped as 0-dim tensors (as torch does)."""

    scalar_args: tuple[str, ...] = ()  # the op's Tensor arguments passed as Scalars here


@dataclass(frozen=True)
class Op(Entry):
    name: str = ""  # base name: torch.ops.<namespace>.<name>; names the generated files
    family: str = ""  # unary | unary_alpha | binary | binary_alpha | ternary
    functor: str = ""  # full `struct <name>_functor { ... };` source
    registrations: tuple[Registration, ...] = ()
    functor_line: int = 0  # ops.yaml line that the first line of `functor` comes from
    overloads: tuple[Overload, ...] = ()

    @property
    def promotes_int_to_float(self) -> bool:
        """Integer inputs produce a float result (TensorIterator's *_float_op)."""
        return any(
            r.input_dtype.kind in ("integer", "bool") and r.output_dtype.kind == "float"
            for r in self.registrations
        )

    @property
    def bool_output(self) -> bool:
        """A predicate or comparison: every kernel produces bool."""
        return all(r.output == "bool" for r in self.registrations)

    @property
    def differentiable(self) -> bool:
        """Some kernel produces a floating or complex result, which autograd tracks."""
        return any(r.output_dtype.kind in ("float", "complex") for r in self.registrations)

    @property
    def has_castout(self) -> bool:
        """out= of any dtype stores through castout kernels: torch's unary ops
        (REGISTER_UNARY_OP) and comparisons (REGISTER_BINARY_CASTOUT_OP)."""
        return self.family == "unary" or (self.family == "binary" and self.bool_output)

    @property
    def tensor_args(self) -> list[str]:
        return [a.name for a in self.args if a.kind == "Tensor"]

    @property
    def alpha_arg(self) -> str | None:
        """The Scalar parameter of an alpha family (e.g. `alpha`, `lambd`)."""
        return next((a.name for a in self.args if a.kind == "Scalar"), None)

    @property
    def entries(self) -> tuple[Entry, ...]:
        return (self, *self.overloads)


@dataclass(frozen=True)
class Registry:
    namespace: str
    ops: tuple[Op, ...]
    path: str

    @property
    def entries(self) -> list[Entry]:
        return [e for op in self.ops for e in op.entries]
