"""A Metal kernel function's parameters, as the kernel entries' whole-function form writes them
(`compute: function:`) and as the build reads them back from the preprocessed instantiations
(codegen/emit/compute_syntax.py): each parameter's declaration and its one attribute."""
from __future__ import annotations

import re
from dataclasses import dataclass

# The thread-position attributes the launcher binds (compute_launch.h's Bind), by Metal's names.
POSITION_ATTRIBUTES = {
    "thread_position_in_grid": "thread_position_in_grid",
    "thread_position_in_threadgroup": "thread_position_in_threadgroup",
    "threadgroup_position_in_grid": "threadgroup_position_in_grid",
    "threads_per_threadgroup": "threads_per_threadgroup",
    "threads_per_grid": "threads_per_grid",
    "threadgroups_per_grid": "threadgroups_per_grid",
    "thread_index_in_threadgroup": "thread_index_in_threadgroup",
    "thread_index_in_simdgroup": "thread_index_in_simdgroup",
    "simdgroup_index_in_threadgroup": "simdgroup_index_in_threadgroup",
    "simdgroups_per_threadgroup": "simdgroups_per_threadgroup",
    "threads_per_simdgroup": "threads_per_simdgroup",
    "thread_execution_width": "threads_per_simdgroup",
    "dispatch_threads_per_threadgroup": "dispatch_threads_per_threadgroup",
}


# The types Metal allows a thread-position parameter (the Metal Shading Language Specification's
# attributes for kernel function input arguments): an index or a count of lanes and simdgroups is
# a ushort or uint; a position or a size in the grid or a threadgroup also their 2- and 3-vectors.
SCALAR_POSITIONS = {"thread_index_in_threadgroup", "thread_index_in_simdgroup", "simdgroup_index_in_threadgroup",
                    "simdgroups_per_threadgroup", "threads_per_simdgroup", "thread_execution_width"}
SCALAR_POSITION_TYPES = ("ushort", "uint")
VECTOR_POSITION_TYPES = ("ushort", "ushort2", "ushort3", "uint", "uint2", "uint3")


def position_type_error(p: "Parameter") -> str | None:
    """Why Metal refuses the type of a thread-position parameter, or None."""
    words = [w for w in re.findall(r"\w+", p.declaration)[:-1] if w != "const"]
    allowed = SCALAR_POSITION_TYPES if p.attribute in SCALAR_POSITIONS else VECTOR_POSITION_TYPES
    if len(words) == 1 and words[0] in allowed and "*" not in p.declaration and "&" not in p.declaration:
        return None
    return (f"kernel parameter `{p.declaration}`: Metal gives [[{p.attribute}]] as {', '.join(allowed[:-1])} or "
            f"{allowed[-1]}, by value")


@dataclass(frozen=True)
class Parameter:
    declaration: str  # `device float* out`
    attribute: str  # `buffer`, `threadgroup`, or a position attribute
    index: int = 0  # buffer(i) / threadgroup(i)

    @property
    def name(self) -> str:
        """The parameter's name: the declaration's last identifier."""
        words = re.findall(r"\w+", self.declaration)
        return words[-1] if words else ""


_ATTRIBUTE = re.compile(r"\[\[\s*(\w+)\s*(?:\(\s*(\d+)\s*\))?\s*\]\]")


def balanced(text: str, start: int, open_: str = "<", close: str = ">") -> tuple[str, int]:
    """The balanced contents starting right after the opening bracket at `start`, and the index
    after the closing one (a kernel's template arguments, its parameter list)."""
    depth, i = 1, start
    while depth:
        c = text[i]
        depth += (c == open_) - (c == close)
        i += 1
    return text[start : i - 1], i


def split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, c in enumerate(text):
        depth += (c in "(<[") - (c in ")>]")
        if c == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p.strip() for p in parts if p.strip()]


class ParameterError(ValueError):
    pass


def parse_parameter(text: str) -> Parameter:
    """One kernel parameter: its declaration and its one Metal attribute."""
    attributes = _ATTRIBUTE.findall(text)
    declaration = " ".join(_ATTRIBUTE.sub("", text).split())
    if len(attributes) != 1:
        raise ParameterError(f"kernel parameter `{declaration}` needs one attribute ([[buffer(i)]], "
                             f"[[threadgroup(i)]] or a thread-position attribute), has {len(attributes)}")
    name, index = attributes[0]
    name = "threadgroup" if name == "mpsgen_threadgroup" else name
    if name in ("buffer", "threadgroup"):
        if not index:
            raise ParameterError(f"kernel parameter `{declaration}`: [[{name}(i)]] needs its index")
        return Parameter(declaration, name, int(index))
    if name not in POSITION_ATTRIBUTES:
        raise ParameterError(f"kernel parameter `{declaration}`: [[{name}]] is not an attribute the CPU backend "
                             f"binds (buffer, threadgroup, {', '.join(POSITION_ATTRIBUTES)})")
    return Parameter(declaration, name)
