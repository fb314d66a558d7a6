"""Metal syntax that C++ lacks, rewritten so the Metal host shim can compile it.

Applied to the preprocessed `.metal` text (codegen/emit/host_names.py's preprocess), so
macros have expanded and comments are gone; string and character literals are left
alone.

- Swizzles: `v.yx`, `v.xxyz` become `v.template swizzle<1, 0>()` (a member template of
  the shim's vectors that returns a new, const vector), and a swizzle assigned to
  (`v.xy = w`, `v.zy += w`) becomes `v.template swizzle_ref<0, 1>()`, which writes the
  components (distinct ones only, as Metal requires). `xyzw` names with 2 to 4 components
  are always rewritten (a user struct field spelt like one, `p.xy`, would be too). `rgba`
  names, also of one component (`v.a` becomes `v.w`), are rewritten unless the user's code
  (the lines the registry's `#line`s mark) has the name other than after `.` or `->`: a
  declared name (a field `float bar;`, or a variable `a`, which then hides `v.a`: the shim
  refuses it, name the variable otherwise), and `p.bar` is left alone.
- `not`: in Metal the relational function `not(x)` (component-wise complement), in C++ an
  alternative token for `!`. The token becomes `mpsgen_not`, which the shim defines (in
  namespace metal, so `metal::not(b)` and, with `using namespace metal`, `not(b)` both work).
- `constant`: the shim's preprocessing marks it (`constant__mpsgen`, clang only, the kernel units'
  compiler). `constant void*`, the pointer of torch's strided kernels, becomes a pointer into
  address space 2 (`const __attribute__((address_space(2))) void*`), a type of its own as
  Metal's is (torch 2.14 overloads val_at_offs on it); any other `constant` becomes `const`
  (the shim's header says why). A `static_cast` or `reinterpret_cast` to a `constant` pointer
  becomes the shim's `metal::mpsgen_cast`, a C cast, which may leave address space 2 (Metal's
  cast of a `constant void*` to a `constant char*` stays in its address space).
- `constant const T` (or `const constant T`, as torch's c10/metal/error.h writes it): the shim
  spells the address space `constant` as `const`, and C++ refuses a duplicate `const`; the pair
  becomes one `const` (line markers between them, from a macro of torch's headers, are kept).
- Half literals (`2.0h`) need no rewrite: the shim defines a literal operator `h`.
"""
from __future__ import annotations

import re

_COMPONENT = {"x": 0, "y": 1, "z": 2, "w": 3, "r": 0, "g": 1, "b": 2, "a": 3}

# A string or character literal (kept as is), or a swizzle: `.xy..` not followed by `(` (a
# method call), the token `not`, or `const const`. Every alternative starts with `"`, `'`, `.`,
# `n` or `c`, so the regex engine skips to those characters; whether a value (an identifier, `)` or `]`) stands before the dot is checked
# by _replace (a lookbehind here made the scan of a preprocessed unit, 1.3 MB of mostly
# libstdc++, ten times slower: 0.1 s per unit, under the GIL).
_TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\''
    r'|\.\s*(?P<swizzle>[xyzw]{2,4}|[rgba]{1,4})\b(?!\s*\()'
    r'(?P<assigned>(?=\s*(?:=(?!=)|[-+*/]=)))?'
    r'|(?P<not>not)(?!\w)'
    r'|(?P<const>const(?:(?:\s|#[^\n]*\n)+const)+)(?!\w)'
)


def _after_value(text: str, dot: int) -> bool:
    """Whether an identifier, `)` or `]` ends right before `dot` (whitespace between allowed)."""
    i = dot
    while i > 0 and text[i - 1].isspace():
        i -= 1
    return i > 0 and (text[i - 1].isalnum() or text[i - 1] in "_)]")


_RGBA_WORD = re.compile(r"\b[rgba]{1,4}\b")
_MARKER = re.compile(r'^# \d+ "([^"]*)"[ \d]*$', re.M)


def _users_code(text: str) -> str:
    """The stretches of preprocessed text its line markers attribute to a registry (.yaml), or all
    of a text without line markers."""
    marks = list(_MARKER.finditer(text))
    if not marks:
        return text
    return "\n".join(text[m.end():(marks[i + 1].start() if i + 1 < len(marks) else len(text))]
                     for i, m in enumerate(marks) if m.group(1).endswith((".yaml", ".yml")))


def _declared_rgba(text: str) -> set[str]:
    """Words of the letters rgba that the user's code has not after `.` or `->`: declared names."""
    names = set()
    text = _users_code(text)
    for m in _RGBA_WORD.finditer(text):
        i = m.start()
        while i > 0 and text[i - 1].isspace():
            i -= 1
        if not (text[i - 1:i] == "." or text[i - 2:i] == "->"):
            names.add(m.group(0))
    return names


CONSTANT_SPACE = "const __attribute__((address_space(2)))"
_MARK = "constant__mpsgen"  # the shim's `constant` in the build's preprocessing
# what may stand before a mark (a cast to a `constant` pointer, a `const`), and after it
_BEFORE_MARK = re.compile(r"(?P<cast>(?:reinterpret|static)_cast\s*<\s*)?(?P<const>\bconst(?:\s|#[^\n]*\n)+)?$")
_AFTER_MARK = re.compile(r"(?P<const>(?:\s|#[^\n]*\n)+const\b)?(?P<void>(?:\s|#[^\n]*\n|const\b)*void\s*\*)?")
_MARKER_LINE = re.compile(r"\n#[^\n]*\n")


def _spell_constant(text: str) -> str:
    """Each marked `constant`: in address space 2 before `void*`, else `const`; with a `const`
    beside it, one; after `static_cast<`/`reinterpret_cast<`, the shim's C cast."""
    out, last = [], 0
    i = text.find(_MARK)
    while i >= 0:
        end = i + len(_MARK)
        if (i and (text[i - 1].isalnum() or text[i - 1] == "_")) or (end < len(text) and
                                                                       (text[end].isalnum() or text[end] == "_")):
            i = text.find(_MARK, end)
            continue
        before = _BEFORE_MARK.search(text, max(last, i - 120), i)
        after = _AFTER_MARK.match(text, end)
        start = before.start() if before.group(0) else i
        stop = after.end("const") if after.group("const") else end
        # line markers inside what is replaced stay, so the lines after it keep their numbers
        markers = "".join(_MARKER_LINE.findall(text, start, stop))
        out += [text[last:start], "::metal::mpsgen_cast<" if before.group("cast") else "",
                CONSTANT_SPACE if after.group("void") else "const", markers]
        last = stop
        i = text.find(_MARK, stop)
    return "".join(out) + text[last:] if out else text


def _replace(m: re.Match, declared: dict[str, set[str]]) -> str:
    if m.group("const") is not None:  # `constant const`, with the shim's `constant` expanded
        before = m.string[m.start() - 1] if m.start() else " "
        if before.isalnum() or before == "_":
            return m.group(0)
        # the later ones blanked: a line marker between them (a macro of a system header) stays
        return "const" + re.sub(r"\bconst\b", "     ", m.group(0)[5:])
    if m.group("not") is not None:  # Metal's relational function, not C++'s `!` (the shim's mpsgen_not)
        before = m.string[m.start() - 1] if m.start() else " "
        return m.group(0) if before.isalnum() or before == "_" else "mpsgen_not"
    swizzle = m.group("swizzle")
    if swizzle is None or not _after_value(m.string, m.start()):
        return m.group(0)
    if swizzle[0] in "rgba":
        if "names" not in declared:  # scanned once per unit, when the first rgba swizzle comes
            declared["names"] = _declared_rgba(m.string)
        if swizzle in declared["names"]:
            return m.group(0)
        if len(swizzle) == 1:  # one component: the member itself, an lvalue
            return "." + "xyzw"[_COMPONENT[swizzle]]
    indices = ", ".join(str(_COMPONENT[c]) for c in swizzle)
    method = "swizzle_ref" if m.group("assigned") is not None else "swizzle"
    return f".template {method}<{indices}>()"


def to_cpp(text: str) -> str:
    """The preprocessed Metal text with its swizzles, `not` and `constant` rewritten for the shim."""
    declared: dict[str, set[str]] = {}
    return _TOKEN.sub(lambda m: _replace(m, declared), _spell_constant(text))
