"""`checks:` of an ops.yaml entry: argument conditions torch enforces before computing.

A condition is a small Python expression over the entry's non-Tensor arguments (and the
dtypes of its Tensors, `real.dtype == imag.dtype`), e.g.
`min is not None or max is not None` (clamp) or `not self_is_result or negative_slope >= 0`
(leaky_relu_backward). Two helpers reach the operands' dtypes: `dtype_of(<arg>)` (a
Tensor's dtype, or a Scalar overload's Scalar as a wrapped number: `dtype_of(other) !=
torch.bool`, sub) and `dtype_max(<tensor>)` (the largest finite value of its dtype:
`lambd <= dtype_max(self)`, softshrink); `<tensor>.dim()` compares as a number (`weight.dim()
== 0`, lerp); `<tensor>.is_floating_point()`, `<tensor>.is_complex()` and `is_integral(<Scalar>)` (an int or
bool, as c10::Scalar::isIntegral(true)) are conditions (lerp's integer weights). The fake kernel evaluates a condition as written
(mpsgen/torch_library.py defines the helpers); the C++ host evaluates its translation,
made here (support/host/elementwise.h defines them). Only what both can say the same way
is accepted.

A message may name values as a Python f-string does: `{lambd}`, `{self.dtype}`,
`{dtype_of(other)}`, `{dtype_max(self)}`. Each language prints them as torch's own
checks do in that language (`Float` and `3.40282e+38` from C++, `torch.float32` and
`3.4028234663852886e+38` from Python).
"""
from __future__ import annotations

import ast

from .dtypes import DTYPES

_TORCH_DTYPES = {d.torch: d.scalar_type for d in DTYPES.values()}

_COMPARE = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


class CheckError(ValueError):
    pass


def to_cpp(condition: str, kinds: dict[str, tuple[str, bool]]) -> str:
    """C++ for `condition`; kinds maps each usable argument to (kind, optional)."""
    try:
        tree = ast.parse(condition.strip(), mode="eval")
    except SyntaxError as e:
        raise CheckError(f"not a Python expression: {e.msg}") from None
    return _cpp(tree.body, kinds)


def _value(name: str, kind: str, optional: bool) -> str:
    """An argument as a C++ value to compare: Scalars as double, optionals unwrapped."""
    v = f"(*{name})" if optional else name
    return f"{v}.to<double>()" if kind == "Scalar" else v


def _cpp(node: ast.AST, kinds) -> str:
    if isinstance(node, ast.BoolOp):
        op = " && " if isinstance(node.op, ast.And) else " || "
        return "(" + op.join(_cpp(v, kinds) for v in node.values) + ")"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return f"!{_cpp(node.operand, kinds)}"
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, op, right = node.left, node.ops[0], node.comparators[0]
        if isinstance(op, (ast.Is, ast.IsNot)) and isinstance(right, ast.Constant) and right.value is None:
            if _is_tensor(left, kinds) and kinds[left.id][1]:  # a Tensor? argument
                return f"{'!' if isinstance(op, ast.Is) else ''}mpsgen::given({left.id})"
            name = _name(left, kinds, optional=True)
            return f"{'!' if isinstance(op, ast.Is) else ''}{name}.has_value()"
        if isinstance(op, (ast.Eq, ast.NotEq)) and _is_dtype(left, kinds) and _is_dtype(right, kinds):
            return f"({_dtype(left, kinds)} {_COMPARE[type(op)]} {_dtype(right, kinds)})"
        if type(op) in _COMPARE:
            return f"({_operand(left, kinds)} {_COMPARE[type(op)]} {_operand(right, kinds)})"
    if isinstance(node, ast.Name):
        kind, optional = kinds.get(node.id, (None, False))
        if kind == "bool" and not optional:
            return node.id
    if _tensor_method(node, kinds, _KIND_TESTS):  # self.is_floating_point(): a dtype's kind, as a bool
        return f"{node.func.value.id}.{node.func.attr}()"
    if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "is_integral"
            and len(node.args) == 1 and not node.keywords and isinstance(node.args[0], ast.Name)
            and kinds.get(node.args[0].id) == ("Scalar", False)):  # torch's alpha.isIntegral(true)
        return f"mpsgen::is_integral({node.args[0].id})"
    raise _unsupported(node)


_KIND_TESTS = ("is_floating_point", "is_complex")  # at::Tensor's and torch.Tensor's, alike


def _tensor_method(node: ast.AST, kinds, methods) -> bool:
    """`<tensor>.<method>()` with no arguments, for a method of `methods`."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in methods
            and _is_tensor(node.func.value, kinds) and not node.args and not node.keywords)


def _unsupported(node: ast.AST) -> CheckError:
    return CheckError(f"{ast.unparse(node)!r} is not supported: use and/or/not, `<arg> is [not] None`, "
                      "comparisons of arguments, numbers, `<tensor>.dim()` and `dtype_max(<tensor>)`, `<tensor>.dtype` or "
                      "`dtype_of(<tensor>)` compared (==, !=) with another or with torch.<dtype> (one of "
                      f"{', '.join(_TORCH_DTYPES)}), `<tensor>.is_floating_point()`, `<tensor>.is_complex()`, "
                      "`is_integral(<Scalar>)` and bool arguments")


def _is_tensor(node: ast.AST, kinds) -> bool:
    return isinstance(node, ast.Name) and kinds.get(node.id, (None,))[0] == "Tensor"


def _call(node: ast.AST, function: str, kinds) -> bool:
    """`function(<tensor>)`, a helper both languages define."""
    return (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == function
            and len(node.args) == 1 and not node.keywords and _is_tensor(node.args[0], kinds))


def _is_dtype(node: ast.AST, kinds) -> bool:
    """`<tensor>.dtype`, `dtype_of(<tensor>)` or `torch.<dtype>`: dtypes compare with == and != only."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name):
        if node.value.id == "torch":
            return node.attr in _TORCH_DTYPES
        return node.attr == "dtype" and _is_tensor(node.value, kinds)
    return _call(node, "dtype_of", kinds)


def _dtype(node: ast.AST, kinds) -> str:
    if isinstance(node, ast.Call):  # dtype_of(x): also a Scalar overload's Scalar, as a wrapped number
        return f"mpsgen::dtype_of({node.args[0].id})"
    if node.value.id == "torch":
        return f"c10::ScalarType::{_TORCH_DTYPES[node.attr]}"
    return f"{node.value.id}.scalar_type()"


def message_to_cpp(message: str, kinds: dict[str, tuple[str, bool]]) -> str:
    """TORCH_CHECK's message arguments for `message`, read as a Python f-string."""
    try:
        tree = ast.parse("f" + repr(message), mode="eval").body
    except SyntaxError as e:
        raise CheckError(f"not a valid f-string (write a literal brace as {{{{ or }}}}): {e.msg}") from None
    parts = []
    for piece in tree.values:
        if isinstance(piece, ast.Constant):
            parts.append('"' + piece.value.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"')
            continue
        if piece.conversion != -1 or piece.format_spec is not None:
            raise CheckError(f"{{{ast.unparse(piece.value)}}}: no conversions or format specs in a message")
        parts.append(_printed(piece.value, kinds))
    return ", ".join(parts) or '""'


def _printed(node: ast.AST, kinds) -> str:
    """A value a message shows: an argument, a dtype, or dtype_max(<tensor>)."""
    if _is_dtype(node, kinds):
        return _dtype(node, kinds)
    if _call(node, "dtype_max", kinds):
        return f"mpsgen::dtype_max({node.args[0].id})"
    if isinstance(node, ast.Name) and node.id in kinds and kinds[node.id][0] != "Tensor":
        kind, optional = kinds[node.id]
        if not optional:
            return _value(node.id, kind, optional)
    raise CheckError(f"{{{ast.unparse(node)}}}: a message may show a non-optional non-Tensor argument, "
                     "`<tensor>.dtype`, `dtype_of(<tensor>)` or `dtype_max(<tensor>)`")


def _name(node: ast.AST, kinds, optional: bool = False) -> str:
    if not isinstance(node, ast.Name):
        raise _unsupported(node)
    if node.id not in kinds or kinds[node.id][0] == "Tensor":
        names = [k for k, (kind, _) in kinds.items() if kind != "Tensor"]
        raise CheckError(f"{ast.unparse(node)!r} is not a non-Tensor argument ({', '.join(names)})")
    if optional and not kinds[node.id][1]:
        raise CheckError(f"'{node.id}' is not optional, so it is never None")
    return node.id


def _operand(node: ast.AST, kinds) -> str:
    if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(node.value, bool):
        return repr(float(node.value))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub):
        return f"-{_operand(node.operand, kinds)}"
    if _call(node, "dtype_max", kinds):
        return f"mpsgen::dtype_max({node.args[0].id})"
    if _tensor_method(node, kinds, ("dim",)):
        return f"static_cast<double>({node.func.value.id}.dim())"  # lerp's 0-dim weight
    name = _name(node, kinds)
    kind, optional = kinds[name]
    if kind not in ("Scalar", "int", "float"):
        raise CheckError(f"'{name}' is a {kind}; only numbers compare")
    return _value(name, kind, optional)
