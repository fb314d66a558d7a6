"""Derivative formulas: one Python expression each, emitted on one line of library.py.

library.py writes each formula as `<formula> if ctx.needs_input_grad[i] else None,`
on a single line, so a formula is accepted only if that line means what the user
wrote: no comment (it would swallow the rest of the line), no backslash line
continuation, nothing that changes when its whitespace is folded to single spaces
(a string with line breaks), and nothing the generated code cannot hold (a bare
tuple, assignment expressions, yield/await, nesting the compiler cannot handle).
A conditional or lambda at the top is parenthesised so the appended `if` cannot
bind to it.
"""
from __future__ import annotations

import ast
import functools
import io
import tokenize
from dataclasses import dataclass

MAX_LENGTH = 4000  # characters
MAX_DEPTH = 100  # syntax-tree levels; CPython's compiler recurses on each


@dataclass(frozen=True)
class Formula:
    text: str  # one line, as library.py emits it
    names: frozenset  # the names it reads
    tree: ast.Expression


def _scan(tree: ast.Expression) -> frozenset | str:
    """The names a formula reads, in one walk that also bounds its depth and refuses
    what it may not contain."""
    names, todo = set(), [(tree, 1)]
    while todo:
        node, depth = todo.pop()
        if depth > MAX_DEPTH:
            return f"nests more than {MAX_DEPTH} levels deep; split it into smaller terms"
        kind = type(node)
        if kind is ast.Name:
            names.add(node.id)
        elif kind is ast.NamedExpr:
            return "assigns with ':='; a formula only reads grad, result and the arguments"
        elif kind in (ast.Yield, ast.YieldFrom, ast.Await):
            return f"uses '{kind.__name__.lower()}', which a formula cannot"
        todo.extend((child, depth + 1) for child in ast.iter_child_nodes(node))
    return frozenset(names)


def _parse(text: str) -> ast.Expression | str:
    try:
        return ast.parse(text, mode="eval")
    except SyntaxError as e:
        return f"is not a Python expression: {e.msg} in {text!r}"
    except (RecursionError, MemoryError):
        return f"is nested too deeply for Python's parser (at most {MAX_DEPTH} levels)"
    except ValueError as e:  # e.g. null bytes, integer literals beyond 4,300 digits
        return f"is not a Python expression: {e}"


def _layout_problem(text: str) -> str | None:
    """A comment or a backslash continuation, found by Python's own tokenizer."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    except (tokenize.TokenError, SyntaxError):
        return None  # ast.parse reports it
    previous = None
    for tok in tokens:
        if tok.type == tokenize.COMMENT:
            return (f"contains a comment ({tok.string!r}); a formula is one expression on one line "
                    "of library.py: put the comment on its own YAML line, starting with '#'")
        if tok.type in (tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER):
            previous = None
            continue
        if previous is not None and tok.start[0] > previous.end[0]:
            return ("continues a line with '\\'; YAML joins the lines of a folded or plain scalar "
                    "itself, so write the formula without the backslash")
        previous = tok
    return None


@functools.lru_cache(maxsize=4096)
def check(formula: str) -> Formula | str:
    """The formula as library.py will hold it, or what is wrong with it (a phrase that
    follows "the formula for 'self' ")."""
    text = formula.strip()
    if len(text) > MAX_LENGTH:
        return f"is {len(text):,} characters long; at most {MAX_LENGTH:,}"
    tree = _parse(text)
    if isinstance(tree, str):
        return tree
    names = _scan(tree)
    if isinstance(names, str):
        return names
    problem = _layout_problem(text) if ("#" in text or "\\" in text) else None
    if problem:
        return problem
    if isinstance(tree.body, (ast.Tuple, ast.Starred)):
        return "is a tuple; a formula is the gradient of one input, a single expression"
    one_line = " ".join(text.split())
    folded = _parse(one_line) if one_line != text else tree
    if isinstance(folded, str) or (folded is not tree and ast.dump(folded) != ast.dump(tree)):
        return ("changes meaning when written on one line (a string with a line break or repeated "
                "spaces?); write it so that single spaces between its parts keep it the same")
    if isinstance(tree.body, (ast.IfExp, ast.Lambda)):
        one_line = f"({one_line})"  # library.py appends `if ctx.needs_input_grad[i] else None`
    return Formula(one_line, names, tree)
