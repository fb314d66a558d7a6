"""The CPU side of a compute kernel's `.metal` (a kernel entry's): what the build does to it
besides what host_names.py does to every `.metal`.

- Before the preprocessor (`to_host_source`): Metal's `[[threadgroup(i)]]` attribute would
  lose its name to the shim's empty `threadgroup` macro, so it is spelled
  `[[mpsgen_threadgroup(i)]]`; a `threadgroup` variable declared in a kernel (`threadgroup
  float partial[32];`) is one object per group, shared by its threads, which on the CPU,
  where one thread runs a group's threads one at a time, is a `static thread_local`
  (MPSGEN_THREADGROUP_VARIABLE, support/metal_shim/metal_compute).
- After it (`parse_compute_instantiations`): each `template [[host_name("...")]] kernel void
  name<...>(...)` with the role of each parameter, read from its attribute, for the launcher's
  registration (support/cpu/compute_launch.h); and whether the unit's own code synchronises
  (`synchronises`), which decides whether its threads may run in a plain loop.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..registry.kernel_signature import POSITION_ATTRIBUTES, Parameter, parse_parameter, split_top
from ..registry.kernel_signature import balanced as _balanced

# A kernel function or instantiation in the .metal as written (the generated elementwise
# .metal files have none: torch's REGISTER_* macros write theirs).
_KERNEL = re.compile(r"\bkernel\s+void\b")
_TG_ATTRIBUTE = re.compile(r"\[\[\s*threadgroup\s*\(")
# `threadgroup T name[...];` where a statement starts: no pointer, reference or call in it.
_TG_VARIABLE = re.compile(r"(?<=[;{}])(\s*)threadgroup\b(?=[^;*&(){}]*;)")


def is_compute(metal_text: str) -> bool:
    return bool(_KERNEL.search(metal_text))


def to_host_source(metal_text: str) -> str:
    """The .metal as the CPU backend's preprocessor reads it (same lines)."""
    text = _TG_ATTRIBUTE.sub("[[mpsgen_threadgroup(", metal_text)
    return _TG_VARIABLE.sub(r"\1MPSGEN_THREADGROUP_VARIABLE", text)


def role(p: Parameter) -> str:
    """A parameter's role expression of compute_launch.h."""
    if p.attribute == "buffer":
        return f"role(Bind::buffer, {p.index})"
    if p.attribute == "threadgroup":
        return f"role(Bind::group_memory, {p.index})"
    return f"role(Bind::{POSITION_ATTRIBUTES[p.attribute]})"


@dataclass(frozen=True)
class ComputeInstantiation:
    host_name: str
    function: str  # `row_sum<float>`
    parameters: tuple[Parameter, ...]


_INSTANTIATION = re.compile(
    r'template\s*\[\[\s*host_name\s*\(((?:\s*"[^"]*")+)\s*\)\s*\]\]\s*void\s+((?:::)?[A-Za-z_][\w:]*)\s*<')


def parse_compute_instantiations(preprocessed: str) -> list[ComputeInstantiation]:
    """The kernel entries' instantiations (not c10::metal's, which host_names.py reads)."""
    found = []
    for m in _INSTANTIATION.finditer(preprocessed):
        function = m.group(2).lstrip(":")
        if function.startswith("c10::metal::"):
            continue
        host_name = "".join(re.findall(r'"([^"]*)"', m.group(1)))
        args, end = _balanced(preprocessed, m.end(), "<", ">")
        paren = preprocessed.index("(", end)
        params, _ = _balanced(preprocessed, paren + 1, "(", ")")
        found.append(ComputeInstantiation(host_name, f"{function}<{' '.join(args.split())}>",
                                          tuple(parse_parameter(p) for p in split_top(params))))
    return found


_LINE_MARKER = re.compile(r'^# \d+ "([^"]*)"[^\n]*$', re.M)
_SYNC = re.compile(r"\b(threadgroup_barrier|simdgroup_barrier|simd_\w+|quad_\w+)\s*(?:<[^;{}()]*>\s*)?\(")


def synchronises(preprocessed: str, ours: tuple[str, ...]) -> bool:
    """Whether code outside the Metal host shim and the CPU launcher (the folders `ours`: the
    kernels and torch's headers are outside) calls a barrier
    or a SIMD-group function anywhere in the unit: then its kernels run on fibers. A kernel
    found not to that still calls one fails its launch (support/cpu/compute_group.cpp)."""
    pieces = _LINE_MARKER.split(preprocessed)
    # split gives: text, file, text, file, text...
    texts = [pieces[0]] + [pieces[i + 1] for i in range(1, len(pieces) - 1, 2) if not pieces[i].startswith(ours)]
    return any(_SYNC.search(t) for t in texts)


def registration_lines(kernels: list[ComputeInstantiation], flat: bool) -> str:
    """One registration per kernel, appended to the preprocessed unit (so written out: the
    preprocessor is done with it but for the unit's own MPSGEN_CHECKED, which the build defines
    where it compiles the unit again as the kernels' checked variant, support/cpu/compute_check.cpp)."""
    lines = ["namespace mpsgen_compute_registrations {", "using ::mpsgen::cpu::compute::Bind;",
             "using ::mpsgen::cpu::compute::role;"]
    for i, k in enumerate(kernels):
        roles = ", ".join(role(p) for p in k.parameters)
        kernel = (f"::mpsgen::cpu::compute::ComputeKernel<&::{k.function}, {'true' if flat else 'false'}, {roles}>"
                  f'::make("{k.host_name}" MPSGEN_CHECKED_SUFFIX)')
        lines.append(f"static const bool registered_{i} = ::mpsgen::cpu::register_compute_kernel(MPSGEN_CHECKED_KERNEL(\n"
                     f"    {kernel}));")
    return ("#if defined(MPSGEN_CHECKED)\n#define MPSGEN_CHECKED_SUFFIX \"!checked\"\n"
            "#define MPSGEN_CHECKED_KERNEL(...) ::mpsgen::cpu::compute::checked(__VA_ARGS__)\n#else\n"
            "#define MPSGEN_CHECKED_SUFFIX \"\"\n#define MPSGEN_CHECKED_KERNEL(...) __VA_ARGS__\n#endif\n"
            + "\n".join(lines + ["} // namespace mpsgen_compute_registrations"]) + "\n")
