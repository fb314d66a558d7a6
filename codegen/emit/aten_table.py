"""docs/aten-ops.md's table of the aten ops that ops.yaml fills on MPS (`implements: aten`).

    python -m codegen.emit.aten_table [ops.yaml]   # prints it

tests/test_aten_registry.py checks that docs/aten-ops.md holds exactly this table.
"""
from __future__ import annotations

import sys
from pathlib import Path

from ..registry.dtypes import DTYPES
from ..registry.loader import load

ROOT = Path(__file__).resolve().parents[2]


def markdown(registry) -> str:
    rows = ["| aten operators | call | dtypes on MPS (input) | replaces torch's MPS kernel |",
            "|---|---|---|---|"]
    for op in registry.aten_ops:
        dtypes = " ".join(str(DTYPES[r.input].torch) for r in op.registrations)
        variants = ", ".join(f"`{op.schema_names[v]}`" for v in op.variants)
        rows.append(f"| {variants} | `{op.reference}` | {dtypes} | "
                    f"{_torchs(op)} |")
    return "\n".join(rows) + "\n"


def _torchs(op) -> str:
    if op.replaces:
        return "yes"
    if op.torch_has_mps:  # from ops.yaml, not from the installed torch: the page is the same on each
        return f"no: torch has none before {op.torch_has_mps}, and from {op.torch_has_mps} its own runs (`torch_has_mps`)"
    return "no (torch has none)"


if __name__ == "__main__":
    print(markdown(load(sys.argv[1] if len(sys.argv) > 1 else ROOT / "ops.yaml")), end="")
