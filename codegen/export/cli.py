"""`mpsgen export-pytorch OP [OP ...] (--out PATCH | --torch-tree DIR) [--check]` (also
`python -m codegen export-pytorch`): the export written as a diff against the installed torch's
files laid out as a tree, or into the PyTorch checkout DIR; --check verifies the diff offline."""
from __future__ import annotations

import sys
import tempfile
from pathlib import Path

from ..registry import loader
from . import patch, run, tree as trees
from .plan import ExportError


def stub_option(values: list[str] | None) -> dict[str, str]:
    """`--stub OP=STUB`, repeatable, as a dict (ValueError naming a malformed one)."""
    found = {}
    for value in values or []:
        op, sep, stub = value.partition("=")
        if not (sep and op and stub):
            raise ValueError(f"--stub {value}: expected OP=STUB, e.g. --stub lerp.Tensor=lerp_kernel_tensor_weight")
        found[op] = stub
    return found


def main(ops_path: Path, names: list[str], out: Path | None, torch_tree: Path | None, check: bool = False,
         generated: Path | None = None, stubs: dict[str, str] | None = None) -> int:
    """`generated`: the registry's generated/ (--check compares the exported kernels with it);
    `stubs`: entry -> the stub its `.out` calls, where torch's naming does not find it (--stub)."""
    if (out is None) == (torch_tree is None):
        print("export-pytorch: give --out PATCH (a diff against the installed torch's files) or --torch-tree DIR "
              "(a PyTorch checkout to change)", file=sys.stderr)
        return 2
    try:
        registry = loader.load(ops_path)
    except loader.RegistryError as e:
        print("\n".join(e.errors), file=sys.stderr)
        return 1
    with tempfile.TemporaryDirectory(prefix="mpsgen-export-") as tmp:
        try:
            t = trees.checkout(torch_tree) if torch_tree else trees.scratch(Path(tmp))
            result = run.export(registry, names, t, stub_names=stubs)
        except (ExportError, FileNotFoundError) as e:
            print(f"export-pytorch: nothing written:\n{e}", file=sys.stderr)
            return 1
        diff = patch.unified_diff(result.changes)
        if torch_tree:
            patch.write(result.changes, t.root)
            print(f"wrote into {t.root}:")
        else:
            out.write_text(diff)
            print(f"wrote {out} (apply in a PyTorch checkout with `git apply {out.name}`):")
        print(result.summary(t))
        if not check:
            return 0
        from . import check as checks

        scratch = Path(tmp) / "check"
        scratch.mkdir()
        outcomes = checks.check_all(result, diff, scratch, generated or ops_path.parent / "generated")
        print("\n".join(map(str, outcomes)))
        failed = sum(1 for o in outcomes if o.problems)
        print(f"export-pytorch --check: {len(outcomes)} checks, {failed} failed")
        return 1 if failed else 0
