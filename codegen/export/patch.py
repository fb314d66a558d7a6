"""An export's changes as a unified diff that `git apply` takes, or written into a tree."""
from __future__ import annotations

import difflib
from pathlib import Path


def unified_diff(changes: dict[str, tuple[str | None, str]]) -> str:
    """In-tree path -> (old text, or None for a new file; new text), as git writes a diff."""
    parts = []
    for path, (old, new) in sorted(changes.items()):
        head = [f"diff --git a/{path} b/{path}\n"]
        if old is None:
            head.append("new file mode 100644\n")
        body = difflib.unified_diff((old or "").splitlines(keepends=True), new.splitlines(keepends=True),
                                    "/dev/null" if old is None else f"a/{path}", f"b/{path}", n=3)
        parts += head + list(body)
    return "".join(parts)


def write(changes: dict[str, tuple[str | None, str]], root: Path) -> None:
    for path, (_, new) in sorted(changes.items()):
        target = root / path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(new)
