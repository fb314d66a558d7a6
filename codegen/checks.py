"""`checks:` of an ops.yaml entry: argument conditions torch enforces before computing.

A condition is a small Python expression over the entry's non-Tensor arguments (and the
dtypes of its Tensors, `real.dtype == imag.dtype`), e.g.
`min is not None or max is not None` (clamp) or `not self_is_result or negative_slope >= 0`
(leaky_relu_backward). The fake kernel evaluates it as written; the C++ host evaluates
its translation, made here. Only what both can say the same way is accepted.
"""
from __future__ import annotations

import ast

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
            name = _name(left, kinds, optional=True)
            return f"{'!' if isinstance(op, ast.Is) else ''}{name}.has_value()"
        if isinstance(op, (ast.Eq, ast.NotEq)) and _is_dtype(left, kinds) and _is_dtype(right, kinds):
            return f"({left.value.id}.scalar_type() {_COMPARE[type(op)]} {right.value.id}.scalar_type())"
        if type(op) in _COMPARE:
            return f"({_operand(left, kinds)} {_COMPARE[type(op)]} {_operand(right, kinds)})"
    if isinstance(node, ast.Name):
        kind, optional = kinds.get(node.id, (None, False))
        if kind == "bool" and not optional:
            return node.id
    raise CheckError(f"{ast.unparse(node)!r} is not supported: use and/or/not, `<arg> is [not] None`, "
                     "comparisons of arguments and numbers, `<tensor>.dtype == <tensor>.dtype`, and bool "
                     "arguments")


def _is_dtype(node: ast.AST, kinds) -> bool:
    """`<tensor>.dtype`: Tensors compare by dtype only."""
    return (isinstance(node, ast.Attribute) and node.attr == "dtype" and isinstance(node.value, ast.Name)
            and kinds.get(node.value.id, (None,))[0] == "Tensor")


def _name(node: ast.AST, kinds, optional: bool = False) -> str:
    if not isinstance(node, ast.Name) or node.id not in kinds or kinds[node.id][0] == "Tensor":
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
    name = _name(node, kinds)
    kind, optional = kinds[name]
    if kind not in ("Scalar", "int", "float"):
        raise CheckError(f"'{name}' is a {kind}; only numbers compare")
    return _value(name, kind, optional)
