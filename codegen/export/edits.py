"""The edits an export makes to files the tree already has: native_functions.yaml (MPS joins the
op's shared dispatch line), derivatives.yaml (the entry's formulas, for an op torch has none for)
and common_mps.py (the op leaves the lists that expect it to fail on MPS; one without a derivative
joins XFAILLIST_GRAD). Each edit changes the lines it must and keeps every other byte."""
from __future__ import annotations

import ast
import functools
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


def _has_derivatives(text: str, schema: str) -> bool:
    return f"- name: {schema}\n" in text


def derivatives(text: str, plans: list[Plan]) -> tuple[str, list[Plan]]:
    """derivatives.yaml with a row of each exported op's `derivatives:` that torch has no row for
    (at its end), and the plans whose rows were added."""
    added = [p for p in plans if p.op.derivatives and not _has_derivatives(text, str(p.op.schema))]
    rows = "".join(f"\n- name: {p.op.schema}\n" + "".join(f"  {d.arg}: {d.formula}\n" for d in p.op.derivatives)
                   for p in added)
    return (text if text.endswith("\n") or not text else text + "\n") + rows, added


@dataclass(frozen=True)
class ListEdit:
    """One entry of a common_mps.py list, removed or narrowed to the dtypes the kernel lacks."""

    list_name: str
    key: str
    line: int  # where the entry starts, 1-based
    kept: tuple[str, ...]  # torch dtypes the kernel leaves out: they stay expected to fail
    added: bool = False  # an entry added (XFAILLIST_GRAD), not removed

    def describe(self) -> str:
        if self.added:
            return f"{self.list_name}[{self.key!r}] added (no derivative in derivatives.yaml)"
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

    info = _opinfo(p.op.opinfo)
    if info is None:
        return ()
    have = {DTYPES[r.input].torch for r in p.op.all_registrations}
    tested = {str(d).removeprefix("torch.") for d in set(info.dtypes) & set(get_all_dtypes())} - _NOT_ON_MPS
    return tuple(f"torch.{d}" for d in sorted(tested - have))


def modifier_dicts(tree: ast.Module) -> list[tuple[str, ast.Dict]]:
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


@functools.cache
def _opinfo(name: str):
    """The OpInfo `name` (`name[variant]`) of op_db, or None."""
    from torch.testing._internal.common_methods_invocations import op_db

    parsed = opinfo_names.parse(name) if name else None
    if parsed is None:
        return None
    return next((o for o in op_db if o.name == parsed[0] and (o.variant_test_name or "") == parsed[1]), None)


def without_derivative(plans: list[Plan], derivatives_text: str) -> list[str]:
    """The common_mps keys of exported ops whose OpInfo says they support autograd but which have
    no derivatives.yaml row (torch's or the export's): test_mps's gradient test expects them to fail."""
    keys = []
    for p in plans:
        info = _opinfo(p.op.opinfo)
        if info is not None and info.supports_autograd and not _has_derivatives(derivatives_text, str(p.op.schema)):
            keys.append(opinfo_key(p.op.opinfo))
    return keys


def grad_list(tree: ast.Module) -> ast.Dict | None:
    fn = next((n for n in ast.walk(tree) if isinstance(n, ast.FunctionDef) and n.name == "mps_ops_grad_modifier"), None)
    for node in ast.walk(fn) if fn else ():
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict) and \
                any(isinstance(t, ast.Name) and t.id == "XFAILLIST_GRAD" for t in node.targets):
            return node.value
    return None


def common_mps(text: str, plans: list[Plan], no_derivative: list[str] = ()) -> tuple[str, list[ListEdit]]:
    """common_mps.py without the exported ops' entries in mps_ops_modifier's lists (an entry whose
    OpInfo dtypes the kernel does not all cover keeps those dtypes), with XFAILLIST_GRAD entries for
    the keys of `no_derivative`, and what was changed."""
    keys = {k: p for p in plans if (k := opinfo_key(p.op.opinfo))}
    lines = text.splitlines(keepends=True)
    edits: list[ListEdit] = []
    replaced: dict[int, tuple[int, str]] = {}  # first line -> (last line, replacement)
    for list_name, d in modifier_dicts(ast.parse(text)):
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
    grad = grad_list(ast.parse(text)) if no_derivative else None
    present = {k.value for k in grad.keys if isinstance(k, ast.Constant)} if grad else set()
    missing = [k for k in no_derivative if k not in present]
    if missing:
        if grad is None or not grad.keys:
            raise ValueError("common_mps.py: no XFAILLIST_GRAD in mps_ops_grad_modifier to add to")
        first = grad.keys[0].lineno  # the new entries go before its first entry, with its indentation
        line = lines[first - 1]
        indent = line[: len(line) - len(line.lstrip())]
        new = "".join(f'{indent}"{k}": None,  # no derivative in derivatives.yaml\n' for k in missing)
        replaced[first] = (first, new + (replaced[first][1] if first in replaced else line))
        edits += [ListEdit("XFAILLIST_GRAD", k, first, (), added=True) for k in missing]
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
