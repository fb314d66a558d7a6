"""The Metal-strict check's lexical rules (run by codegen/verify/check_metal.py).

They read only the user's code: the stretches of a generated `.metal` that `#line N "ops.yaml"`
attributes to the registry (functors and their helpers). Each rule is a restriction of the Metal
Shading Language Specification (its C++ restrictions, the address spaces of pointers, references
and program-scope variables, its scalar types) that g++ compiling through the host shim would not
enforce; docs/verification.md lists them with the planted mistake that tests each.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .finding import Finding


def is_user_file(name: str) -> bool:
    """The registry (ops.yaml, or whatever --ops named): what `#line` attributes to the user."""
    return name.endswith((".yaml", ".yml"))


# ---- user regions of a generated .metal -------------------------------------------

_LINE_DIRECTIVE = re.compile(r'^\s*#\s*line\s+(\d+)\s+"([^"]*)"\s*$')


def user_regions(metal_text: str) -> list[tuple[str, int, str]]:
    """(file, first line, text) of each stretch a `#line N "ops.yaml"` attributes to the user."""
    regions, current = [], None
    for raw in metal_text.splitlines():
        m = _LINE_DIRECTIVE.match(raw)
        if m:
            if current:
                regions.append(current)
            name = m.group(2)
            current = (name, int(m.group(1)), []) if is_user_file(name) else None
            continue
        if current:
            current[2].append(raw)
    if current:
        regions.append(current)
    return [(f, first, "\n".join(lines)) for f, first, lines in regions]


# ---- lexical rules --------------------------------------------------------------------

_TOKEN = re.compile(
    r"(?P<comment>//[^\n]*|/\*.*?\*/)"
    r'|(?P<string>"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\')'
    r"|(?P<ident>[A-Za-z_]\w*)"
    r"|(?P<number>\.?\d(?:[\w.]|[eEpP][+-])*)"
    r"|(?P<punct>::|->|[^\s\w])",
    re.S,
)

_KEYWORD_RULES = {
    "double": "Metal does not allow the double type (use float)",
    "throw": "Metal does not allow exceptions (throw)",
    "try": "Metal does not allow exceptions (try)",
    "catch": "Metal does not allow exceptions (catch)",
    "new": "Metal does not allow dynamic allocation (new)",
    "delete": "Metal does not allow dynamic allocation (delete)",
    "virtual": "Metal does not allow virtual functions",
    "dynamic_cast": "Metal does not allow dynamic_cast (no run-time type information)",
    "typeid": "Metal does not allow typeid (no run-time type information)",
    "goto": "Metal does not allow goto",
    "register": "Metal does not allow the register storage class",
    "thread_local": "Metal does not allow thread_local storage",
}
_STD = ("Metal does not allow the C++ standard library (std::); use the Metal Standard "
        "Library (metal::) or c10::metal")
_BUILTIN = "Metal does not allow compiler builtins ({name}); use the Metal Standard Library"
_STATIC = "Metal does not allow function-scope static variables"
_LONG_LONG = "Metal does not allow long long (long is Metal's 64-bit integer)"
_NOEXCEPT = "Metal does not allow the noexcept operator"
_MAIN = "Metal does not allow a function named main"
_LAMBDA = ("Metal 3.1 does not allow lambda expressions (Metal 3.2 does; mpsgen builds for -std=metal3.1, "
           "as macOS 14 needs): use a helper function or a functor")
_DERIVED = "Metal does not allow derived classes (a struct or class with a base class)"
# Where `noexcept(` is the operator, not a function's exception specification
_BEFORE_AN_OPERAND = {"(", "=", ",", "return", "!", "|", "?", "{", "["}


@dataclass
class _Tok:
    kind: str
    text: str
    line: int
    col: int


def _tokens(text: str, first_line: int) -> list[_Tok]:
    toks, line, line_start = [], first_line, 0
    for m in _TOKEN.finditer(text):
        # advance the line count to the token's start
        chunk = text[line_start:m.start()]
        nl = chunk.count("\n")
        if nl:
            line += nl
            line_start += chunk.rfind("\n") + 1
        col = m.start() - line_start + 1
        kind = m.lastgroup
        if kind not in ("comment", "string"):
            toks.append(_Tok(kind, m.group(0), line, col))
        inner = m.group(0).count("\n")  # a block comment spanning lines
        if inner:
            line += inner
            line_start = m.start() + m.group(0).rfind("\n") + 1
    return toks


def _brace_kind(toks: list[_Tok], i: int) -> str:
    """What the `{` at toks[i] opens: class, namespace, init (a braced initializer) or block."""
    prev = toks[i - 1].text if i else ";"
    if prev in ("=", ",", "(", "{", "[", "return"):
        return "init"
    j = i - 1
    while j >= 0 and toks[j].text not in (";", "{", "}"):
        if toks[j].text in ("struct", "class", "union", "enum"):
            return "class"
        if toks[j].text == "namespace" or (toks[j].text == "extern" and j + 1 < i and toks[j + 1].kind == "string"):
            return "namespace"
        j -= 1
    return "block"  # a function body, a lambda's, or a statement block


def lexical_findings(metal_text: str) -> list[Finding]:
    findings = []
    for file, first, text in user_regions(metal_text):
        toks = _tokens(text, first)
        scopes: list[str] = []
        for i, t in enumerate(toks):
            nxt = toks[i + 1].text if i + 1 < len(toks) else ""
            prev = toks[i - 1].text if i else ""
            if t.text == "{":
                scopes.append(_brace_kind(toks, i))
            elif t.text == "}":
                if scopes:
                    scopes.pop()
            elif t.text == "[" and _is_lambda(toks, i):
                findings.append(Finding(file, t.line, t.col, _LAMBDA))
            elif t.text == ":" and _is_base_clause(toks, i):
                findings.append(Finding(file, t.line, t.col, _DERIVED))
            elif t.kind != "ident":
                continue
            elif t.text in _KEYWORD_RULES:
                if t.text == "delete" and prev == "=":
                    continue  # a deleted function is fine
                findings.append(Finding(file, t.line, t.col, _KEYWORD_RULES[t.text]))
            elif t.text == "std" and (nxt == "::" or prev == "namespace"):
                findings.append(Finding(file, t.line, t.col, _STD))
            elif t.text.startswith("__builtin_"):
                findings.append(Finding(file, t.line, t.col, _BUILTIN.format(name=t.text)))
            elif t.text == "static" and [k for k in scopes if k != "init"][-1:] == ["block"]:
                findings.append(Finding(file, t.line, t.col, _STATIC))
            elif t.text == "long" and nxt == "long":
                findings.append(Finding(file, t.line, t.col, _LONG_LONG))
            elif t.text == "noexcept" and nxt == "(" and prev in _BEFORE_AN_OPERAND:
                findings.append(Finding(file, t.line, t.col, _NOEXCEPT))
            elif t.text == "main" and nxt == "(" and _is_definition(toks, i + 1, _matching(toks, i + 1)):
                findings.append(Finding(file, t.line, t.col, _MAIN))
        findings += [Finding(file, t.line, t.col, _ADDRESS_SPACE) for t in _unqualified_parameters(toks)]
        findings += [Finding(file, t.line, t.col, message) for t, message in _declaration_findings(toks)]
    return sorted(findings)


def _is_lambda(toks: list[_Tok], i: int) -> bool:
    """Does the `[` at toks[i] introduce a lambda (not a subscript, an array declarator or an attribute)?"""
    prev = toks[i - 1] if i else None
    if prev is not None and (prev.text in (")", "]", "[", "operator") or prev.kind == "number"
                             or (prev.kind == "ident" and prev.text not in ("return", "case"))):
        return False
    close = _matching(toks, i)
    after = toks[close + 1].text if close + 1 < len(toks) else ""
    return i + 1 < len(toks) and toks[i + 1].text != "[" and after in ("(", "{", "mutable", "->", "<")


def _is_base_clause(toks: list[_Tok], i: int) -> bool:
    """Is the `:` at toks[i] the start of a class's base list (`struct B : A`, not `enum class E : int`)?"""
    j = i - 1
    if j >= 0 and toks[j].text == "final":
        j -= 1
    if j >= 0 and toks[j].text == ">":  # a specialization's arguments
        depth = 0
        while j >= 0:
            depth += {">": 1, "<": -1}.get(toks[j].text, 0)
            j -= 1
            if depth == 0:
                break
    return j >= 1 and toks[j].kind == "ident" and toks[j - 1].text in ("struct", "class") \
        and not (j >= 2 and toks[j - 2].text == "enum")


# Pointer and reference parameters of a function (or lambda) definition need an address space.
_ADDRESS_SPACE = ("Metal requires an address space (device, constant, thread or threadgroup) on "
                  "pointer and reference parameters")
_ADDRESS_SPACES = {"device", "constant", "thread", "threadgroup", "threadgroup_imageblock", "ray_data",
                   "object_data"}
_NOT_A_FUNCTION = {"if", "while", "for", "switch", "catch", "return", "sizeof", "alignof", "alignas",
                   "decltype", "static_assert", "noexcept", "requires", "typeid", "new", "delete"}
_AFTER_PARAMETERS = {"const", "noexcept", "override", "final", "mutable", "constexpr", "volatile"}
_OPEN, _CLOSE = {"(": ")", "[": "]", "{": "}"}, {")", "]", "}"}


def _matching(toks: list[_Tok], i: int) -> int:
    depth = 0
    for j in range(i, len(toks)):
        if toks[j].text in _OPEN:
            depth += 1
        elif toks[j].text in _CLOSE:
            depth -= 1
            if depth == 0:
                return j
    return len(toks)


def _is_definition(toks: list[_Tok], i: int, close: int) -> bool:
    """Does the `(` at toks[i] open the parameters of a function or lambda definition?"""
    j = close + 1
    while j < len(toks) and toks[j].text in _AFTER_PARAMETERS:
        j += 1
    if j < len(toks) and toks[j].text == "->":  # trailing return type
        while j < len(toks) and toks[j].text not in ("{", ";", "="):
            j += 1
    if j >= len(toks) or toks[j].text != "{":
        return False
    prev = toks[i - 1] if i else None
    before = toks[i - 2] if i >= 2 else None
    if prev is None:
        return False
    if prev.text == "]":  # a lambda
        return True
    if prev.text == ")" and i >= 3 and toks[i - 3].text == "operator":  # operator()
        return True
    if prev.kind == "punct" and before is not None and before.text == "operator":  # operator+ etc.
        return True
    if prev.kind == "ident" and prev.text not in _NOT_A_FUNCTION and before is not None:
        # a name after a type (or Class::name, ~Class): not a call, nor a member initializer
        return (before.kind == "ident" and before.text not in ("return", "else", "do", "case", "new")) \
            or before.text in (">", "*", "&", "&&", "::", "~")
    return False


def _unqualified_parameters(toks: list[_Tok]) -> list[_Tok]:
    found = []
    for i, t in enumerate(toks):
        if t.text != "(":
            continue
        close = _matching(toks, i)
        if not _is_definition(toks, i, close):
            continue
        params, current, depth, angles = [], [], 0, 0
        for tok in toks[i + 1:close]:
            if tok.text in _OPEN:
                depth += 1
            elif tok.text in _CLOSE:
                depth -= 1
            elif tok.text == "<" and current and current[-1].kind == "ident":  # template arguments
                angles += 1
            elif tok.text == ">" and angles:
                angles -= 1
            if tok.text == "," and depth == 0 and angles == 0:
                params.append(current)
                current = []
            else:
                current.append(tok)
        params.append(current)
        for param in params:
            declarator = []
            for tok in param:
                if tok.text == "=":  # a default argument: its `*` multiplies
                    break
                declarator.append(tok)
            refs = [x for x in declarator if x.text in ("*", "&", "&&")]
            if refs and not any(x.text in _ADDRESS_SPACES for x in declarator):
                found.append(refs[0])
    return found


# ---- declarations: pointers and references, program-scope variables -------------------------

_DECLARED = ("Metal requires an address space (device, constant, thread or threadgroup) on pointer and "
             "reference variables, members and return types")
_PROGRAM_SCOPE = ("Metal requires program-scope variables in the constant address space (constant, or "
                  "constexpr constant)")
_STATIC_MEMBER = ("Metal requires static data members in the constant address space (static constexpr "
                  "constant)")
# Words that begin a statement or declaration this rule does not read
_NOT_A_DECLARATION = {"return", "case", "default", "goto", "throw", "delete", "else", "do", "if", "while", "for",
                      "switch", "break", "continue", "struct", "class", "union", "enum", "typedef", "using",
                      "namespace", "static_assert", "friend", "extern", "public", "private", "protected",
                      "operator", "sizeof", "new", "template", "typename"}
_QUALIFIERS = {"const", "volatile", "static", "inline", "constexpr", "mutable", "auto", "unsigned", "signed"}
_NEXT_TO_A_NAME = {"=", ";", ",", "(", "[", "{", ":"}


def _angle_close(toks: list[_Tok], i: int) -> int | None:
    """The `>` that closes the template arguments opened at toks[i], if they close before `;`, `{` or `}`."""
    depth = 0
    for j in range(i, len(toks)):
        text = toks[j].text
        if text in (";", "{", "}"):
            return None
        depth += {"<": 1, ">": -1, "(": 1, ")": -1}.get(text, 0)
        if depth == 0:
            return j
        if depth < 0:
            return None
    return None


def _statement_starts(toks: list[_Tok]) -> list[tuple[int, str]]:
    """(index, scope) of each token that may begin a declaration: the first, and those after `;`, `{`,
    `}`, `for (` and `public:`; scope is namespace, class or block."""
    scopes: list[str] = []
    starts = [(0, "namespace")] if toks else []
    for i, t in enumerate(toks):
        if t.text == "{":
            scopes.append(_brace_kind(toks, i))
        elif t.text == "}" and scopes:
            scopes.pop()
        kinds = [k for k in scopes if k != "init"]
        scope = kinds[-1] if kinds else "namespace"
        if scopes and scopes[-1] == "init":
            continue  # a braced initializer's elements
        if t.text in (";", "{", "}") or (t.text == "(" and i and toks[i - 1].text == "for") \
                or (t.text == ":" and i and toks[i - 1].text in ("public", "private", "protected")):
            starts.append((i + 1, "block" if t.text == "(" else scope))
    return [(i, scope) for i, scope in starts if i < len(toks)]


def _declaration_findings(toks: list[_Tok]) -> list[tuple[_Tok, str]]:
    """A pointer or reference declared without an address space (a variable, member or return type;
    `auto` deduces one), and a program-scope variable or static data member not in `constant`."""
    found = []
    for k, scope in _statement_starts(toks):
        if toks[k].text == "template" and k + 1 < len(toks) and toks[k + 1].text == "<":
            close = _angle_close(toks, k + 1)
            if close is None:
                continue
            k = close + 1
        spec = []
        while k < len(toks):
            t = toks[k]
            if t.kind == "ident" and t.text not in _NOT_A_DECLARATION:
                spec.append(t)
            elif t.text == "<" and spec:
                close = _angle_close(toks, k)
                if close is None:
                    break
                k = close
            elif t.text != "::":
                break
            k += 1
        if not spec or (k < len(toks) and toks[k].text in _NOT_A_DECLARATION):
            continue
        refs = []
        while k < len(toks) and (toks[k].text in ("*", "&", "&&") or (refs and toks[k].text in ("const", "volatile"))):
            if toks[k].text in ("*", "&", "&&"):
                refs.append(toks[k])
            k += 1
        if refs:
            if k + 1 >= len(toks) or toks[k].kind != "ident" or toks[k].text == "operator" \
                    or toks[k + 1].text not in _NEXT_TO_A_NAME:
                continue
            words = {t.text for t in spec}
            if not words & _ADDRESS_SPACES and not (words <= _QUALIFIERS and "auto" in words):
                found.append((refs[0], _DECLARED))
            continue
        if len(spec) < 2 or k >= len(toks) or toks[k].text not in ("=", ";", "[", "{", ","):
            continue  # not a variable (a call, an expression, a function's declaration)
        words = {t.text for t in spec[:-1]}
        if "constant" in words:
            continue
        if scope == "namespace":
            found.append((spec[-1], _PROGRAM_SCOPE))
        elif scope == "class" and "static" in words:
            found.append((spec[-1], _STATIC_MEMBER))
    return found
