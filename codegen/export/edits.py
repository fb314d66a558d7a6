"""The edits an export makes to files the tree already has: native_functions.yaml (MPS joins the
op's shared dispatch line) and common_mps.py (the op leaves the lists that expect it to fail on MPS).
Each edit changes the lines it must and keeps every other byte."""
from __future__ import annotations

import ast
from dataclasses import dataclass

from ..registry import opinfo_names
from ..registry.dtypes import DTYPES
from .plan import Plan

# torch.float64 and complex128: MPS has neither, so test_mps never instantiates them
_NOT_ON_MPS = {"float64", "complex128"}


def native_functions(text: str, plans: list[Plan]) -> str:
    lines = text.splitlines(keepends=True)
    for p in plans:
        old = lines[p.dispatch_line - 1]
        if old.rstrip("\n") != p.dispatch_text:
            raise ValueError(f"native_functions.yaml:{p.dispatch_line} changed under the export: {old!r}")
        lines[p.dispatch_line - 1] = p.new_dispatch_text + "\n"
    return "".join(lines)


@dataclass(frozen=True)
class ListEdit:
    """One entry of a common_mps.py list, removed or narrowed to the dtypes the kernel lacks."""

    list_name: str
    key: str
    line: int  # where the entry starts, 1-based
    kept: tuple[str, ...]  # torch dtypes the kernel leaves out: they stay expected to fail

    def describe(self) -> str:
        if self.kept:
            return f"{self.list_name}[{self.key!r}] narrowed to {', '.join(self.kept)} (dtypes the kernel lacks)"
        return f"{self.list_name}[{self.key!r}] removed"


def opinfo_key(opinfo: str) -> str | None:
    """common_mps.py's key of an OpInfo: op.name + op.variant_test_name."""
    parsed = opinfo_names.parse(opinfo) if opinfo else None
    return None if parsed is None else parsed[0] + parsed[1]


def _lacking(p: Plan) -> tuple[str, ...]:
    """The dtypes test_mps runs the op's OpInfo in (its dtypes of get_all_dtypes(), as test_mps's
    MPS_DTYPES, but float64 and complex128) that the op's kernels do not register, as `torch.<name>`."""
    from torch.testing._internal.common_dtype import get_all_dtypes
    from torch.testing._internal.common_methods_invocations import op_db

    name, variant = opinfo_names.parse(p.op.opinfo)
    info = next((o for o in op_db if o.name == name and (o.variant_test_name or "") == variant), None)
    if info is None:
        return ()
    have = {DTYPES[r.input].torch for r in p.op.all_registrations}
    tested = {str(d).removeprefix("torch.") for d in set(info.dtypes) & set(get_all_dtypes())} - _NOT_ON_MPS
    return tuple(f"torch.{d}" for d in sorted(tested - have))


def _modifier_dicts(tree: ast.Module) -> list[tuple[str, ast.Dict]]:
    """The dict literals assigned in the first mps_ops_modifier (the one for a Mac with MPS):
    UNIMPLEMENTED_XFAILLIST, ON_MPS_XFAILLIST, SKIPLIST, ..."""
    fn = next(n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "mps_ops_modifier")
    found = []
    for node in ast.walk(fn):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and isinstance(node.value, ast.Dict):
            target = node.targets[0] if isinstance(node, ast.Assign) else node.target
            if isinstance(target, ast.Name):
                found.append((target.id, node.value))
    return found


def common_mps(text: str, plans: list[Plan]) -> tuple[str, list[ListEdit]]:
    """common_mps.py without the exported ops' entries in mps_ops_modifier's lists (an entry whose
    OpInfo dtypes the kernel does not all cover keeps those dtypes), and what was changed."""
    keys = {k: p for p in plans if (k := opinfo_key(p.op.opinfo))}
    lines = text.splitlines(keepends=True)
    edits: list[ListEdit] = []
    replaced: dict[int, tuple[int, str]] = {}  # first line -> (last line, replacement)
    for list_name, d in _modifier_dicts(ast.parse(text)):
        for k, v in zip(d.keys, d.values):
            if not (isinstance(k, ast.Constant) and k.value in keys):
                continue
            line = lines[k.lineno - 1]
            if k.lineno != v.end_lineno or not line.lstrip().startswith((f'"{k.value}"', f"'{k.value}'")):
                raise ValueError(f"common_mps.py:{k.lineno}: the entry {k.value!r} does not stand on a line of its own; edit it by hand")
            kept = _lacking(keys[k.value])
            indent = line[: len(line) - len(line.lstrip())]
            new = f'{indent}"{k.value}": [{", ".join(kept)}],\n' if kept else ""
            replaced[k.lineno] = (v.end_lineno, new)
            edits.append(ListEdit(list_name, k.value, k.lineno, kept))
    out, n = [], 1
    while n <= len(lines):
        if n in replaced:
            last, new = replaced[n]
            out.append(new)
            n = last + 1
        else:
            out.append(lines[n - 1])
            n += 1
    return "".join(out), edits
