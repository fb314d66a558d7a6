"""Metal syntax that C++ lacks, rewritten so the Metal host shim can compile it.

Applied to the preprocessed `.metal` text (codegen/emit/host_names.py's preprocess), so
macros have expanded and comments are gone; string and character literals are left
alone.

- Swizzles: `v.yx`, `v.xxyz` become `v.template swizzle<1, 0>()` (a member template of
  the shim's vectors that returns a new, const vector), and a swizzle assigned to
  (`v.xy = w`, `v.zy += w`) becomes `v.template swizzle_ref<0, 1>()`, which writes the
  components (distinct ones only, as Metal requires). Only `xyzw` names are rewritten,
  with 2 to 4 components (not `rgba`, which user struct fields such as `.bar` could
  spell); a user struct field spelt like a swizzle (`p.xy`) would be rewritten too.
- `not`: in Metal the relational function `not(x)` (component-wise complement), in C++ an
  alternative token for `!`. The token becomes `mpsgen_not`, which the shim defines (in
  namespace metal, so `metal::not(b)` and, with `using namespace metal`, `not(b)` both work).
- `constant const T` (or `const constant T`, as torch's c10/metal/error.h writes it): the shim
  spells the address space `constant` as `const`, and C++ refuses a duplicate `const`; the pair
  becomes one `const` (line markers between them, from a macro of torch's headers, are kept).
- Half literals (`2.0h`) need no rewrite: the shim defines a literal operator `h`.
"""
from __future__ import annotations

import re

_COMPONENT = {"x": 0, "y": 1, "z": 2, "w": 3}

# A string or character literal (kept as is), or a swizzle: `.xy..` not followed by `(` (a
# method call), the token `not`, or `const const`. Every alternative starts with `"`, `'`, `.`,
# `n` or `c`, so the regex engine skips to those characters; whether a value (an identifier, `)` or `]`) stands before the dot is checked
# by _replace (a lookbehind here made the scan of a preprocessed unit, 1.3 MB of mostly
# libstdc++, ten times slower: 0.1 s per unit, under the GIL).
_TOKEN = re.compile(
    r'"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\''
    r'|\.\s*(?P<swizzle>[xyzw]{2,4})\b(?!\s*\()'
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


def _replace(m: re.Match) -> str:
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
    indices = ", ".join(str(_COMPONENT[c]) for c in swizzle)
    method = "swizzle_ref" if m.group("assigned") is not None else "swizzle"
    return f".template {method}<{indices}>()"


def to_cpp(text: str) -> str:
    """The preprocessed Metal text with its swizzles and `not` rewritten for the host shim."""
    return _TOKEN.sub(_replace, text)
