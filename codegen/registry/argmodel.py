"""The model of an entry's arguments: the schema's arguments (Arg), the params its kernels
read (Param) and how they reach them (transport_of), its checks (Check), and the argument
whose value picks the kernel (Selector). Frozen dataclasses, no knowledge of files."""
from __future__ import annotations

from dataclasses import dataclass

from torchgen.model import FunctionSchema

# Metal types a non-Tensor argument may take in the kernel (`args:` in ops.yaml):
# T is the dtype the kernel computes in, opmath its opmath_t (float for half/bfloat).
PARAM_TYPES = ("T", "opmath", "float", "long", "int", "bool")
# the schema's non-Tensor kinds, and the Metal type each gets unless `args:` says otherwise
DEFAULT_PARAM_TYPE = {"Scalar": "T", "float": "float", "int": "long", "bool": "bool"}


@dataclass(frozen=True)
class Arg:
    name: str
    kind: str  # "Tensor" | "Scalar" | "int" | "float" | "bool" | "str" (the schema type without `?`)
    decl: str  # as written in the schema, e.g. "Scalar alpha=1"
    kwarg_only: bool
    has_default: bool = False
    optional: bool = False  # `Scalar?`, `float?`, `str?`: None is a value

    @property
    def default(self) -> str | None:
        """The default as the schema writes it (`1`, `0.5`, `None`, `'none'`), or None."""
        return self.decl.split("=", 1)[1] if self.has_default else None


def schema_args(schema: FunctionSchema) -> list[Arg]:
    a = schema.arguments

    def arg(x, kwarg_only):
        kind = str(x.type).rstrip("?")
        return Arg(x.name, kind, str(x), kwarg_only, x.default is not None, str(x.type).endswith("?"))

    return [arg(x, False) for x in a.flat_positional] + [arg(x, True) for x in a.flat_kwarg_only]


def transport_of(params) -> str:
    """How params reach a kernel (Op.transport): none, alpha (one Scalar, in T or in opmath_t<T>)
    or a params struct."""
    if not params:
        return "none"
    p = params[0]
    if len(params) == 1 and p.kind == "Scalar" and p.metal in ("T", "opmath") and not p.optional:
        return "alpha"
    return "params"


@dataclass(frozen=True)
class Param:
    """A non-Tensor argument the kernels read: the alpha of REGISTER_*_ALPHA_OP,
    or a field of the op's params struct (exec_*_kernel_with_params)."""

    name: str
    kind: str  # "Scalar" | "int" | "float" | "bool"
    optional: bool  # the struct carries `bool has_<name>` after the value
    metal: str  # one of PARAM_TYPES
    promotes: bool = False  # a Scalar that takes part in type promotion, as a wrapped number


# A check's `error:` (the exception torch raises) and the c10 macro that raises it from C++
CHECK_ERRORS = {"RuntimeError": "TORCH_CHECK", "NotImplementedError": "TORCH_CHECK_NOT_IMPLEMENTED",
                "ValueError": "TORCH_CHECK_VALUE", "TypeError": "TORCH_CHECK_TYPE", "IndexError": "TORCH_CHECK_INDEX"}


@dataclass(frozen=True)
class Check:
    """A condition torch checks of the arguments (`checks:`), with torch's message."""

    require: str  # Python, over the non-Tensor arguments (the fake kernel)
    cpp: str  # the same condition in C++ (the host stubs)
    message: str  # a Python f-string's body: `{lambd}` shows the argument
    cpp_message: str  # the message as TORCH_CHECK's arguments
    line: int
    error: str = "RuntimeError"  # the Python exception torch raises (`error:`), a key of CHECK_ERRORS

    @property
    def cpp_macro(self) -> str:
        """c10's check macro that raises `error` in Python."""
        return CHECK_ERRORS[self.error]


@dataclass(frozen=True)
class Selector:
    """An argument whose value picks the kernel: each value of a `str` argument names a functor;
    an `int` or `Scalar` argument's conditions (`== 0`, `>= 2`, `else`) do, the first that holds."""

    arg: str
    choices: tuple[tuple[str, str], ...]  # (value, kernel name); value "None" for `str?` given None
    # by value: the conditions, (test, bound) beside `choices` ("==", 0.0); ("else", 0.0) for the rest
    conditions: tuple[tuple[str, float], ...] = ()
    # `{kernel: k, params: [...]}`: the params kernel k reads, where it reads fewer than the op's
    reads: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # `{op: <entry>}`: kernels of other entries, (kernel, the entry's name, the choice's line);
    # the loader resolves the entry's name to its kernel's
    shared: tuple[tuple[str, str, int], ...] = ()

    @property
    def by_value(self) -> bool:
        return bool(self.conditions)

    def representatives(self) -> list:
        """A value of the argument each condition selects (else: none), as the samples vary it."""
        step = {"==": 0, "<=": 0, ">=": 0, "<": -1, ">": 1}
        return [int(b) + step[t] if b == int(b) else b for t, b in self.conditions if t in step]

    @property
    def kernels(self) -> list[str]:
        return list(dict.fromkeys(k for _, k in self.choices))
