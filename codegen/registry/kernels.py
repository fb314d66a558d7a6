"""What an entry compiles: its functor (an operator() body or whole structs) and its dtype
registrations (`dtypes:`, groups and pairs), in one table per set of kernels."""
from __future__ import annotations

import functools
import re

from . import yaml_source
from .dtypes import DTYPES, GROUPS
from .model import DtypeTable, Registration


OPMATH_FAMILIES = ("binary", "ternary")  # REGISTER_OPMATH_BINARY_OP / REGISTER_OPMATH_TERNARY_OP


def check_functor(source, kernels, label, line, errors) -> str | None:
    if source is None or (isinstance(source, str) and not source.strip()):
        errors.add(line, label, "functor", "is empty: write the op's Metal math, its operator() templates, "
                   f"or the whole 'struct {kernels[0]}_functor' (`mpsgen new` leaves it empty for you)")
        return None
    if not isinstance(source, str):
        errors.add(line, label, "functor", "expected Metal source: an operator() body or a whole struct")
        return None
    structs = _structs(source)
    wanted = [f"{k}_functor" for k in kernels]
    missing = [w for w in wanted if w not in structs]
    if structs and missing:
        errors.add(line, label, "functor",
                   f"defines struct {', '.join(structs)}; expected {' and '.join(repr('struct ' + w) for w in wanted)}"
                   + ("" if len(wanted) > 1 else " or only the operator() definitions"))
        return None
    if not structs and len(wanted) > 1:
        errors.add(line, label, "functor", f"the 'str' choices select several functors: define "
                   f"{', '.join('struct ' + w for w in wanted)}")
        return None
    body = source.strip("\n")
    if structs:
        return body  # the whole struct(s), as written
    indented = "\n".join(("  " + l) if l.strip() else "" for l in body.splitlines())
    return f"struct {wanted[0]} {{\n{indented}\n}};"


def functor_line(source: str, key_line: int) -> int:
    """The ops.yaml line of the functor's first line, as check_functor emits it."""
    # a block scalar starts below its key; leading blank lines are stripped
    first = key_line + 1 + len(source) - len(source.lstrip("\n"))
    # a source defining a struct is emitted as written; a wrapped body gets
    # its synthetic struct line just above its own first line
    return first if _structs(source) else first - 1


@functools.lru_cache(maxsize=16)  # check_functor, then functor_line, ask for the same entry
def _structs(source: str) -> tuple[str, ...]:
    """Names of the structs a functor source defines at its top level (comments ignored): a
    struct declared inside a function body (a small local type, which Metal allows) is not one."""
    if "struct" not in source:  # most functors are operator() bodies: no need to strip comments
        return ()
    code = _COMMENT.sub("", source)
    found, depth = [], 0
    for m in _STRUCT_OR_BRACE.finditer(code):
        if m.group(0) == "{":
            depth += 1
        elif m.group(0) == "}":
            depth = max(depth - 1, 0)
        elif depth == 0:
            found.append(m.group(1))
    return tuple(found)


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_STRUCT_OR_BRACE = re.compile(r"\bstruct\s+(\w+)|[{}]")


def check_dtypes(spec, family, opmath_ok, label, line, errors) -> tuple[Registration, ...]:
    if not isinstance(spec, list) or not spec:
        errors.add(line, label, "dtypes",
                   f"expected a list of groups {sorted(GROUPS)} or {{in: T, out: T}} pairs")
        return ()
    item_lines = getattr(spec, "item_lines", [line] * len(spec))
    regs: list[Registration] = []
    for item, item_line in zip(spec, item_lines):
        if isinstance(item, str):
            group = GROUPS.get(item)
            if group is None:
                errors.add(item_line, label, "dtypes",
                           f"unknown dtype group {item!r}; expected one of {sorted(GROUPS)} "
                           f"or a pair {{in: T, out: T}}{_float8_note([item])}")
                continue
            if group.opmath and not opmath_ok:
                errors.add(item_line, label, "dtypes",
                           f"group {item!r} computes in opmath, which torch's macros offer for "
                           f"{' and '.join(OPMATH_FAMILIES)} ops only, and for binary ops without "
                           f"params (this op is {family})")
                continue
            regs += [Registration(i, o, group.opmath, item_line) for i, o in group.pairs]
        elif isinstance(item, dict):
            unknown = set(item) - {"in", "out", "opmath"}
            if unknown or "in" not in item or "out" not in item:
                errors.add(item_line, label, "dtypes",
                           f"a pair needs keys 'in' and 'out' (and optional 'opmath'), got {dict(item)}")
                continue
            bad = [yaml_source.short(item[k], quote=False) for k in ("in", "out")
                   if not isinstance(item[k], str) or item[k] not in DTYPES]
            if bad:
                errors.add(item_line, label, "dtypes",
                           f"unknown dtype {', '.join(bad)}; expected one of {sorted(DTYPES)}{_float8_note(bad)}")
                continue
            opmath = item.get("opmath", False)
            if not isinstance(opmath, bool) or (opmath and not opmath_ok):
                errors.add(item_line, label, "dtypes",
                           f"'opmath' is a boolean, for {' and '.join(OPMATH_FAMILIES)} ops only")
                continue
            regs.append(Registration(item["in"], item["out"], opmath, item_line))
        else:
            errors.add(item_line, label, "dtypes", f"expected a group name or a pair, got {item!r}")
    seen: dict[str, int] = {}
    for r in regs:
        if r.input in seen:
            # torch's castout host_names are keyed on the input dtype alone
            errors.add(r.line, label, "dtypes",
                       f"input dtype {r.input!r} is registered more than once (first on line {seen[r.input]})")
        seen.setdefault(r.input, r.line)
    return tuple(regs)


def _float8_note(names) -> str:
    """Why a float8 name is no dtype here: torch 2.13's MPS backend has none (its getMPSDataType
    and scalarToMetalTypeString refuse float8, and c10/metal/common.h lists no float8 type)."""
    if any("float8" in str(n) or "fp8" in str(n) for n in names):
        return " (torch 2.13's MPS backend has no float8 dtype, so no MPS kernel could be given one)"
    return ""


def dtype_tables(name, kernels, registrations, line, own_dtypes, family, opmath_ok, label, errors) -> tuple[DtypeTable, ...]:
    """The op's dtype tables: its `dtypes` for the kernels without their own, then one per
    `str` choice that gives its own (checked as `dtypes` is), all of bool results or none."""
    tables = [DtypeTable(registrations, tuple(k for k in kernels if k not in own_dtypes), f"{name}_spec",
                         line=line)]
    for kernel, (value, shown, spec, spec_line) in own_dtypes.items():
        regs = check_dtypes(spec, family, opmath_ok, label, spec_line, errors)
        if not regs:
            continue
        table = DtypeTable(regs, (kernel,), f"{name}_{kernel}_spec", shown, spec_line)
        if registrations and table.bool_output != tables[0].bool_output:
            errors.add(spec_line, label, "args", f"choice {value!r}: its dtypes give "
                       f"{'only' if table.bool_output else 'not only'} bool results, the op's `dtypes` "
                       f"{'only' if tables[0].bool_output else 'not only'} bool; a comparison's choices all "
                       "give bool, and other ops' none")
        tables.append(table)
    return tuple(tables)
