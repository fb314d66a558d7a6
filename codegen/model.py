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

    @property
    def input_dtype(self) -> Dtype:
        return DTYPES[self.input]

    @property
    def output_dtype(self) -> Dtype:
        return DTYPES[self.output]


@dataclass(frozen=True)
class XFail:
    dtype: str  # Metal type name
    reason: str


@dataclass(frozen=True)
class Op:
    name: str  # base name: torch.ops.<namespace>.<name>
    schema: FunctionSchema
    family: str  # "unary" | "binary"
    functor: str  # full `struct <name>_functor { ... };` source
    registrations: tuple[Registration, ...]
    reference: str  # dotted path of the torch reference, e.g. torch.exp
    opinfo: str  # OpInfo name in op_db for samples ("" when none)
    xfails: tuple[XFail, ...]
    loc: Location
    functor_line: int  # ops.yaml line that the first line of `functor` comes from

    @property
    def promotes_int_to_float(self) -> bool:
        """Integer inputs produce a float result (TensorIterator's *_float_op)."""
        return any(
            r.input_dtype.kind in ("integer", "bool") and r.output_dtype.kind == "float"
            for r in self.registrations
        )

    @property
    def input_names(self) -> list[str]:
        return [a.name for a in self.schema.arguments.flat_positional]

    @property
    def schemas(self) -> dict[str, str]:
        """Functional, out= and in-place schemas, as registered with TORCH_LIBRARY."""
        args = ", ".join(f"Tensor {n}" for n in self.input_names)
        rest = ", ".join(f"Tensor {n}" for n in self.input_names[1:])
        ov = self.schema.name.overload_name
        out_name = f"{self.name}.{ov}_out" if ov else f"{self.name}.out"
        inplace_name = f"{self.name}_.{ov}" if ov else f"{self.name}_"
        inplace_args = f"Tensor(a!) {self.input_names[0]}" + (f", {rest}" if rest else "")
        return {
            "functional": str(self.schema),
            "out": f"{out_name}({args}, *, Tensor(a!) out) -> Tensor(a!)",
            "inplace": f"{inplace_name}({inplace_args}) -> Tensor(a!)",
        }

    @property
    def schema_names(self) -> dict[str, str]:
        """The operator names (with overload) that m.impl() registers."""
        return {kind: s.split("(", 1)[0] for kind, s in self.schemas.items()}

    def registered_inputs(self) -> list[str]:
        return [r.input for r in self.registrations]


@dataclass(frozen=True)
class Registry:
    namespace: str
    ops: tuple[Op, ...]
    path: str
