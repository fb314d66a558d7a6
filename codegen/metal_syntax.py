"""Metal syntax that C++ lacks, rewritten so the Metal host shim can compile it.

Applied to the preprocessed `.metal` text (codegen/host_names.py's preprocess), so
macros have expanded and comments are gone; string and character literals are left
alone.

- Read swizzles: `v.yx`, `v.xxyz` become `v.template swizzle<1, 0>()` (a member
  template of the shim's vectors that returns a new vector). The value is const, so
  assigning to a swizzle fails to compile instead of silently writing a temporary.
  Only `xyzw` names are rewritten, and only with 2 to 4 components; a field of a
  user struct spelt like a swizzle (`p.xy`) would be rewritten too.
- Half literals (`2.0h`) need no rewrite: the shim defines a literal operator `h`.
"""
from __future__ import annotations

import re

_COMPONENT = {"x": 0, "y": 1, "z": 2, "w": 3}

# A string or character literal (kept as is), or a swizzle after a value: an
# identifier, `)` or `]`, then `.xy..`, not followed by `(` (a method call).
_TOKEN = re.compile(
    r'(?P<literal>"(?:[^"\\\n]|\\.)*"|\'(?:[^\'\\\n]|\\.)*\')'
    r'|(?<=[\w)\]])(?P<dot>\s*\.\s*)(?P<swizzle>[xyzw]{2,4})\b(?!\s*\()'
)


def _replace(m: re.Match) -> str:
    if m.group("literal"):
        return m.group(0)
    indices = ", ".join(str(_COMPONENT[c]) for c in m.group("swizzle"))
    return f".template swizzle<{indices}>()"


def to_cpp(text: str) -> str:
    """The preprocessed Metal text with its swizzles rewritten for the host shim."""
    return _TOKEN.sub(_replace, text)
