"""Metal element types, the torch dtypes they stand for, and registration groups."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Dtype:
    metal: str  # spelling in .metal sources and host_names
    torch: str  # torch.<name>
    scalar_type: str  # c10::ScalarType enumerator
    kind: str  # "float" | "integer" | "bool" | "complex"


DTYPES = {
    d.metal: d
    for d in (
        Dtype("float", "float32", "Float", "float"),
        Dtype("half", "float16", "Half", "float"),
        Dtype("bfloat", "bfloat16", "BFloat16", "float"),
        Dtype("long", "int64", "Long", "integer"),
        Dtype("int", "int32", "Int", "integer"),
        Dtype("short", "int16", "Short", "integer"),
        Dtype("char", "int8", "Char", "integer"),
        Dtype("uchar", "uint8", "Byte", "integer"),
        Dtype("bool", "bool", "Bool", "bool"),
        Dtype("float2", "complex64", "ComplexFloat", "complex"),
        Dtype("half2", "complex32", "ComplexHalf", "complex"),
        # torch's barebones unsigned dtypes: no promotion with any other dtype, and few CPU kernels
        Dtype("ushort", "uint16", "UInt16", "integer"),
        Dtype("uint", "uint32", "UInt32", "integer"),
        Dtype("ulong", "uint64", "UInt64", "integer"),
    )
}

# c10/metal/utils.h's opmath_t of each Metal type that has a wider one (the others are their own)
OPMATH = {"half": "float", "bfloat": "float", "short": "int", "char": "int", "uchar": "int", "half2": "float2"}

FLOATS = ("float", "half", "bfloat")
INTEGRALS = ("long", "int", "short", "uchar", "char", "bool")
COMPLEX = ("float2", "half2")
UNSIGNED = ("ushort", "uint", "ulong")


@dataclass(frozen=True)
class Group:
    """A dtype group, as PyTorch's in-tree BinaryKernel.metal helpers spell them."""

    pairs: tuple[tuple[str, str], ...]  # (input, output) Metal types
    opmath: bool  # REGISTER_OPMATH_*: inputs promoted to opmath_t before the functor


GROUPS = {
    "float": Group(tuple((t, t) for t in FLOATS), opmath=False),
    "int2float": Group(tuple((t, "float") for t in INTEGRALS), opmath=False),
    "integer": Group(tuple((t, t) for t in INTEGRALS), opmath=False),
    "integer_no_bool": Group(tuple((t, t) for t in INTEGRALS if t != "bool"), opmath=False),
    "opmath_float": Group(tuple((t, t) for t in FLOATS), opmath=True),
    "complex": Group(tuple((t, t) for t in COMPLEX), opmath=False),
    # uint16/uint32/uint64: a group of their own, as torch's in-tree integer helpers leave them out
    "unsigned": Group(tuple((t, t) for t in UNSIGNED), opmath=False),
    "unsigned2bool": Group(tuple((t, "bool") for t in UNSIGNED), opmath=False),
    # predicates and comparisons: bool results
    "float2bool": Group(tuple((t, "bool") for t in FLOATS), opmath=False),
    "integer2bool": Group(tuple((t, "bool") for t in INTEGRALS), opmath=False),
    "complex2bool": Group(tuple((t, "bool") for t in COMPLEX), opmath=False),
    # complex -> real, e.g. abs
    "complex2real": Group((("float2", "float"), ("half2", "half")), opmath=False),
}
