"""Size and shape expressions of a kernel entry (`compute:` in ops.yaml): how big its outputs
are, and how many threads it launches in groups of how many.

A size is a small Python expression over the entry's Tensor and int arguments:
integer literals, `t.size(d)` (`d` a literal, negative from the end), `t.numel()`, `t.dim()`,
an `int` argument by name, `+ - * // %`, `min(a, b)`, `max(a, b)`, `ceil_div(a, b)`; a launch's
sizes may also name the outputs and `max_threads` (the pipeline's maxTotalThreadsPerThreadgroup)
and `execution_width` (its threadExecutionWidth, 32 on Apple GPUs).
A shape is a list of sizes, where an item may also be a starred slice of a Tensor's shape
(`[*self.shape[:-1]]`, `[self.size(0) * (self.size(0) - 1) // 2]`), or `t.shape` alone.

The fake kernel and the sample checks evaluate the expression as written (mpsgen/compute_library.py
defines the helpers: `//` and `%` are Python's); the C++ host evaluates its translation, made here
(support/host/compute_host.h defines the helpers, with Python's `//` and `%`). Only what both say
the same way is accepted.
"""
from __future__ import annotations

import ast

LAUNCH_NAMES = {"max_threads": "limits.max_threads", "execution_width": "limits.execution_width"}
_FUNCTIONS = {"min": "std::min<int64_t>", "max": "std::max<int64_t>", "ceil_div": "mpsgen::compute::ceil_div"}
_OPS = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*"}


class SizeError(ValueError):
    pass


def _parse(text: str) -> ast.AST:
    if not isinstance(text, (str, int)) or isinstance(text, bool):
        raise SizeError(f"expected an expression, got {text!r}")
    try:
        return ast.parse(str(text).strip(), mode="eval").body
    except SyntaxError as e:
        raise SizeError(f"not a Python expression: {e.msg}") from None


def size_to_cpp(text: str | int, tensors: set[str], ints: set[str], launch: bool = False) -> str:
    """C++ (an int64_t) for a size; `tensors` and `ints` are the names it may use."""
    return _size(_parse(text), tensors, ints, launch)


def _literal(node: ast.AST) -> int | None:
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub) and isinstance(node.operand, ast.Constant) \
            and type(node.operand.value) is int:
        return -node.operand.value
    return None


def _tensor_call(node: ast.AST, tensors: set[str]) -> tuple[str, str, list] | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and isinstance(node.func.value, ast.Name):
        if node.func.value.id in tensors:
            return node.func.value.id, node.func.attr, node.args
    return None


def _size(node: ast.AST, tensors: set[str], ints: set[str], launch: bool) -> str:
    value = _literal(node)
    if value is not None:
        return f"int64_t({value})"
    if isinstance(node, ast.Name):
        if node.id in ints:
            return f"int64_t({node.id})"
        if launch and node.id in LAUNCH_NAMES:
            return f"int64_t({LAUNCH_NAMES[node.id]})"
        known = sorted(ints | (set(LAUNCH_NAMES) if launch else set()))
        raise SizeError(f"'{node.id}' is no int argument{' or launch limit' if launch else ''} here"
                        f"{' (these are: ' + ', '.join(known) + ')' if known else ''}")
    call = _tensor_call(node, tensors)
    if call:
        name, method, args = call
        if method == "size" and len(args) == 1 and _literal(args[0]) is not None:
            return f"{name}.size({_literal(args[0])})"
        if method in ("numel", "dim") and not args:
            return f"int64_t({name}.{method}())"
        raise SizeError(f"'{name}.{method}(...)': a Tensor's size is t.size(d) with a literal d, t.numel() or t.dim()")
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _FUNCTIONS:
        if len(node.args) != 2 or node.keywords:
            raise SizeError(f"{node.func.id}() takes two sizes")
        a, b = (_size(x, tensors, ints, launch) for x in node.args)
        return f"{_FUNCTIONS[node.func.id]}({a}, {b})"
    if isinstance(node, ast.BinOp):
        a, b = _size(node.left, tensors, ints, launch), _size(node.right, tensors, ints, launch)
        if type(node.op) in _OPS:
            return f"({a} {_OPS[type(node.op)]} {b})"
        if isinstance(node.op, ast.FloorDiv):
            return f"mpsgen::compute::floordiv({a}, {b})"
        if isinstance(node.op, ast.Mod):
            return f"mpsgen::compute::pymod({a}, {b})"
    raise SizeError(f"'{ast.unparse(node)}' is not a size: use integers, t.size(d), t.numel(), t.dim(), int "
                    "arguments, + - * // %, min, max and ceil_div")


def shape_to_cpp(text: str, tensors: set[str], ints: set[str]) -> list[str]:
    """C++ statements appending the shape's sizes to a c10::DimVector `shape`."""
    node = _parse(text)
    if isinstance(node, ast.Attribute) and node.attr == "shape" and isinstance(node.value, ast.Name) \
            and node.value.id in tensors:
        return [f"shape.append({node.value.id}.sizes().begin(), {node.value.id}.sizes().end());"]
    if not isinstance(node, ast.List):
        raise SizeError("a shape is a list of sizes, such as [self.size(0), *self.shape[1:]], or t.shape")
    lines = []
    for item in node.elts:
        if isinstance(item, ast.Starred):
            sl = item.value
            if not (isinstance(sl, ast.Subscript) and isinstance(sl.value, ast.Attribute) and sl.value.attr == "shape"
                    and isinstance(sl.value.value, ast.Name) and sl.value.value.id in tensors
                    and isinstance(sl.slice, ast.Slice) and sl.slice.step is None):
                raise SizeError(f"'{ast.unparse(item)}': a starred item is a slice of a Tensor's shape, "
                                "such as *self.shape[:-1]")
            bounds = []
            for b in (sl.slice.lower, sl.slice.upper):
                if b is not None and _literal(b) is None:
                    raise SizeError(f"'{ast.unparse(item)}': the slice's bounds are integer literals")
                bounds.append("std::nullopt" if b is None else str(_literal(b)))
            lines.append(f"mpsgen::compute::append_slice(shape, {sl.value.value.id}.sizes(), {bounds[0]}, {bounds[1]});")
        else:
            lines.append(f"shape.push_back({_size(item, tensors, ints, False)});")
    return lines


def names_in(text: str | int) -> set[str]:
    """The names an expression uses (to tell whether a launch size reads the outputs)."""
    return {n.id for n in ast.walk(_parse(text)) if isinstance(n, ast.Name)}


_COMPARE = {ast.Eq: "==", ast.NotEq: "!=", ast.Lt: "<", ast.LtE: "<=", ast.Gt: ">", ast.GtE: ">="}


def condition_to_cpp(text: str, tensors: set[str], ints: set[str], floats: set[str] = frozenset()) -> str:
    """C++ (a bool) for a check's condition: comparisons of sizes (or of float arguments and
    number literals), joined by `and`, `or`, `not`."""
    return _condition(_parse(text), tensors, ints, floats)


def _operand(node: ast.AST, tensors, ints, floats) -> str:
    if isinstance(node, ast.Name) and node.id in floats:
        return f"double({node.id})"
    if isinstance(node, ast.Constant) and type(node.value) is float:
        return repr(node.value)
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "float" \
            and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) and node.args[0].value in ("inf", "-inf"):
        return ("-" if node.args[0].value == "-inf" else "") + "std::numeric_limits<double>::infinity()"
    return _size(node, tensors, ints, False)


def _condition(node: ast.AST, tensors, ints, floats) -> str:
    if isinstance(node, ast.BoolOp):
        joined = " && " if isinstance(node.op, ast.And) else " || "
        return "(" + joined.join(_condition(v, tensors, ints, floats) for v in node.values) + ")"
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
        return f"!{_condition(node.operand, tensors, ints, floats)}"
    if isinstance(node, ast.Compare) and all(type(o) in _COMPARE for o in node.ops):
        items = [_operand(x, tensors, ints, floats) for x in (node.left, *node.comparators)]
        return "(" + " && ".join(f"{a} {_COMPARE[type(o)]} {b}"
                                 for a, o, b in zip(items, node.ops, items[1:])) + ")"
    raise SizeError(f"'{ast.unparse(node)}' is not a condition: compare sizes (or float arguments) with "
                    "== != < <= > >=, joined by and, or, not")
