"""Derivative formulas: C++ expressions in derivatives.yaml's language, checked before
generated/autograd.cpp holds them.

A formula is the gradient of one input, e.g. `grad * self.cos().conj()` or
`handle_r_to_c(self, grad * other.conj())`. autograd.cpp evaluates it where `grad`,
`result` and the entry's arguments are in scope, with `using namespace at` (as
derivatives.yaml's formulas call ATen) and support/host/autograd.h's helpers. A check
here cannot compile it; what it does catch, at the formula's ops.yaml line:

- what would break out of the expression: `;`, unbalanced brackets, a preprocessor `#`,
  a comment (YAML's own `#` comments stay outside the formula), an unterminated string;
- a name that is not a call, a namespace, a member or a C++ word, and is none of what a
  formula may read: grad, result, the entry's arguments (a typo such as `slef`).

It also finds which of those names the formula reads: the node saves just those. What
the compiler rejects otherwise it reports at the formula's ops.yaml line (`#line`).
"""
from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from .model import Derivative

MAX_LENGTH = 4000  # characters

# C++ words and the constants a formula may name besides the arguments
CPP_WORDS = frozenset("""
    true false nullptr this sizeof alignof decltype static_cast const_cast reinterpret_cast
    const auto void bool char short int long float double signed unsigned
    int8_t int16_t int32_t int64_t uint8_t uint16_t uint32_t uint64_t size_t
    M_E M_LOG2E M_LOG10E M_LN2 M_LN10 M_PI M_PI_2 M_PI_4 M_1_PI M_2_PI M_2_SQRTPI M_SQRT2 M_SQRT1_2
    INFINITY NAN
""".split())

_TOKEN = re.compile(r"""
    (?P<space>\s+)
  | (?P<comment>//[^\n]*|/\*.*?\*/)
  | (?P<string>"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*')
  | (?P<number>\.?\d(?:[eEpP][+-]|[\w.'])*)
  | (?P<name>[A-Za-z_]\w*)
  | (?P<punct>::|->|[()\[\]{};#]|.)
""", re.VERBOSE | re.DOTALL)
_PAIRS = {")": "(", "]": "[", "}": "{"}


@dataclass(frozen=True)
class Formula:
    text: str  # as autograd.cpp holds it
    names: frozenset  # the bare names it reads: grad, result, arguments, or unknown ones


def _tokens(text: str) -> list[tuple[str, str]] | str:
    found, pos = [], 0
    while pos < len(text):
        m = _TOKEN.match(text, pos)
        kind = m.lastgroup
        if kind == "punct" and m.group() in ('"', "'") or text.startswith("/*", pos) and kind != "comment":
            return "has an unterminated string, character or comment"
        if kind == "comment":
            return "contains a C++ comment; put the comment on its own YAML line, starting with '#'"
        if kind != "space":
            found.append((kind, m.group()))
        pos = m.end()
    return found


def _structure_problem(tokens: list[tuple[str, str]]) -> str | None:
    stack = []
    for kind, tok in tokens:
        if kind != "punct":
            continue
        if tok == ";":
            return "contains ';'; a formula is one C++ expression, the gradient of one input"
        if tok == "#":
            return "contains '#'; a formula cannot hold preprocessor directives"
        if tok in "([{":
            stack.append(tok)
        elif tok in _PAIRS:
            if not stack or stack.pop() != _PAIRS[tok]:
                return f"has an unmatched {tok!r}"
    return f"has an unclosed {stack[-1]!r}" if stack else None


def _bare_names(tokens: list[tuple[str, str]]) -> frozenset:
    """Names that stand for a value: not a member (`x.cos`, `p->y`), not qualified (`at::cos`),
    not a namespace or class (`std::`), not a call (`where(`)."""
    names = set()
    for i, (kind, tok) in enumerate(tokens):
        if kind != "name" or tok in CPP_WORDS or re.fullmatch(r"k[A-Z]\w*", tok):  # kFloat, kBool: ATen's dtypes
            continue
        before = tokens[i - 1][1] if i else ""
        after = tokens[i + 1][1] if i + 1 < len(tokens) else ""
        if before in (".", "->", "::") or after in ("::", "("):
            continue
        names.add(tok)
    return frozenset(names)


@functools.lru_cache(maxsize=4096)
def check(formula: str) -> Formula | str:
    """The formula as autograd.cpp will hold it, or what is wrong with it (a phrase that
    follows "the formula for 'self' ")."""
    text = formula.strip()
    if len(text) > MAX_LENGTH:
        return f"is {len(text):,} characters long; at most {MAX_LENGTH:,}"
    tokens = _tokens(text)
    if isinstance(tokens, str):
        return tokens
    problem = _structure_problem(tokens)
    if problem:
        return problem
    return Formula(text, _bare_names(tokens))


# what a derivative formula may read besides the entry's arguments (generated/autograd.cpp)
FORMULA_NAMES = {"grad", "result"}


def check_derivatives(spec, schema, args, label, line, errors, outputs: tuple[str, ...] = ()) -> tuple[Derivative, ...]:
    """`outputs`: the names of a kernel entry's several outputs, which its formulas read (their
    values) in the place of `result`; `grad` is then the gradient of its one differentiable output."""
    tensors = [a.name for a in args if a.kind == "Tensor"]
    if not isinstance(spec, dict) or not spec:
        errors.add(line, label, "derivatives",
                   f"expected a mapping from Tensor arguments ({', '.join(tensors)}) to formulas, "
                   "e.g. {self: grad * result.conj()}")
        return ()
    allowed = (FORMULA_NAMES - ({"result"} if outputs else set())) | {a.name for a in args} | set(outputs)
    readable = f"grad, {', '.join(outputs) if outputs else 'result'}"
    key_lines = getattr(spec, "key_lines", {})
    found = []
    for arg, formula in spec.items():
        item_line = key_lines.get(arg, line)
        if arg not in tensors:
            errors.add(item_line, label, "derivatives",
                       f"{arg!r} is not a Tensor argument of {schema.name}; expected one of {tensors}")
            continue
        if not isinstance(formula, str) or not formula.strip():
            errors.add(item_line, label, "derivatives", f"the formula for {arg!r} must be a C++ expression")
            continue
        checked = check(formula)  # one C++ expression
        if isinstance(checked, str):
            errors.add(item_line, label, "derivatives", f"the formula for {arg!r} {checked}")
            continue
        names = set(checked.names)
        unknown = sorted(names - allowed)
        if unknown:
            errors.add(item_line, label, "derivatives",
                       f"the formula for {arg!r} uses unknown name(s) {', '.join(unknown)}; a formula may use "
                       f"{readable} and the arguments ({', '.join(a.name for a in args)}), and call "
                       "ATen's functions (derivatives.yaml's C++) and handle_r_to_c")
            continue
        found.append(Derivative(arg, checked.text, item_line, frozenset(names)))
    return tuple(found)
