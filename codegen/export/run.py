"""An export: plan every op, render its files, edit the tree's files, into one set of changes
(in-tree path -> old and new text). Nothing comes out unless every op can be exported."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from ..registry.model import Op, Registry
from . import edits, plan as plans, render, tree as trees
from .plan import ExportError, Plan

_IN_TREE_KERNEL = re.compile(r"^(\w+?)_(?:dense|strided)_")
_REGISTER = re.compile(r"\bREGISTER_\w*OP\(\s*(\w+)\s*,")


@dataclass
class Export:
    plans: list[Plan]
    changes: dict[str, tuple[str | None, str]]  # in-tree path -> (old text or None, new text)
    list_edits: list[edits.ListEdit] = field(default_factory=list)
    derivatives: list[str] = field(default_factory=list)  # the entries whose derivatives.yaml rows were added

    def summary(self, t: trees.Tree) -> str:
        out = []
        for p in self.plans:
            op = p.op
            out.append(f"{op.qualified_name} (ops.yaml:{op.loc.line}): MPS joins `{p.dispatch_text.strip()}` of "
                       f"{p.out_name} (native_functions.yaml:{p.dispatch_line}); {render.operation_path(op)} "
                       f"registers {', '.join(f'`{k}_kernel_mps` for {s.name} ({s.header}, {s.fn_type})' for k, s in p.stubs)}; "
                       f"kernels in new file {render.kernel_path(op)}")
            for check in op.checks:
                out.append(f"  ops.yaml:{check.line}: `{check.require}` is not carried: torch's own meta function "
                           "and kernels enforce its argument checks in-tree")
        for name in self.derivatives:
            out.append(f"{trees.DERIVATIVES}: {name}'s derivatives added (torch has none)")
        for e in self.list_edits:
            out.append(f"{trees.COMMON_MPS}:{e.line}: {e.describe()}")
        out.append(f"new files, not insertions into torch's existing kernel files "
                   f"({'the tree' if t.real else 'the installed torch'} is the base)")
        return "\n".join(out)


def in_tree_kernels(t: trees.Tree) -> dict[str, str]:
    """Kernel names torch already has -> where: a checkout's kernels/*.metal, or else the kernels
    that the installed torch's macOS build bundles (its metallib's function names)."""
    if t.real:
        found = {}
        for path in sorted((t.root / trees.KERNELS).glob("*.metal")):
            for m in _REGISTER.finditer(path.read_text(errors="replace")):
                found.setdefault(m[1], str(path.relative_to(t.root)))
        return found
    from ..build import torch_version
    from ..verify import macos_sdk

    where = f"torch {macos_sdk.release(torch_version())}'s bundled Metal library (its macOS wheel)"
    return {m[1]: where for name in macos_sdk.metal_kernels() if (m := _IN_TREE_KERNEL.match(name))}


def find(registry: Registry, name: str) -> Op:
    for op in registry.ops:
        if name in (op.qualified_name, op.name):
            return op
    for op in registry.compute_ops:
        if name in (op.qualified_name, op.name):
            raise ExportError(f"{op.loc}: {op.qualified_name} is a kernel entry (compute:); export-pytorch writes "
                              "functor entries only, and cannot yet write a kernel entry as an in-tree patch (its "
                              "generated/" + op.name + ".metal and _mps.mm are the kernel and host stub to start from)")
    raise ExportError(f"{registry.path}: no entry {name!r}; its entries: "
                      + ", ".join(op.qualified_name for op in registry.ops))


def export(registry: Registry, names: list[str], t: trees.Tree, known_kernels: dict[str, str] | None = None,
           stub_names: dict[str, str] | None = None) -> Export:
    """`stub_names`: entry -> the stub its `.out` calls, where torch's naming does not find it."""
    stub_names = dict(stub_names or {})
    target = plans.parse_target(t)
    known = in_tree_kernels(t) if known_kernels is None else known_kernels
    errors, chosen = [], []
    for name in dict.fromkeys(names):
        try:
            op = find(registry, name)
            p = plans.plan(op, target, t, stub_names.pop(op.qualified_name, None))
            for kernel in op.kernels:
                if kernel in known:
                    raise ExportError(f"ops.yaml:{op.loc.line} ({op.qualified_name}): kernel name `{kernel}` is "
                                      f"taken in-tree ({known[kernel]}): rename the entry's kernel (`kernel:`)")
            for path in render.files(p):
                if t.exists(path):
                    raise ExportError(f"ops.yaml:{op.loc.line} ({op.qualified_name}): {path} exists in the tree")
            chosen.append(p)
        except ExportError as e:
            errors.append(str(e))
    errors += [f"--stub {name}={stub}: {name} is not among the exported entries" for name, stub in stub_names.items()]
    if errors:
        raise ExportError("\n".join(errors))
    changes: dict[str, tuple[str | None, str]] = {}
    for p in chosen:
        changes.update({path: (None, text) for path, text in render.files(p).items()})
    changes[trees.NATIVE_FUNCTIONS] = (target.text, edits.native_functions(target.text, chosen))
    old_derivatives = t.read(trees.DERIVATIVES)
    new_derivatives, with_rows = edits.derivatives(old_derivatives, chosen)
    if with_rows:
        changes[trees.DERIVATIVES] = (old_derivatives, new_derivatives)
    old_mps = t.read(trees.COMMON_MPS)
    new_mps, list_edits = edits.common_mps(old_mps, chosen, edits.without_derivative(chosen, new_derivatives))
    if new_mps != old_mps:
        changes[trees.COMMON_MPS] = (old_mps, new_mps)
    return Export(chosen, changes, list_edits, [p.op.qualified_name for p in with_rows])
