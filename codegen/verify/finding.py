"""A problem check-metal reports, at a file, line and column (its Metal-strict step and its
clang step alike)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, order=True)
class Finding:
    file: str
    line: int
    col: int
    message: str
    severity: str = "error"  # or "warning" (the clang step reports both)

    def __str__(self) -> str:
        return f"{self.file}:{self.line}:{self.col}: {self.severity}: {self.message}"
