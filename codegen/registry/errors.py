"""A registry's errors: every problem found while loading, each with its file:line, op and key."""
from __future__ import annotations

from . import yaml_source


class RegistryError(Exception):
    def __init__(self, errors: list[str]):
        super().__init__("\n".join(errors))
        self.errors = errors


MAX_MESSAGE = 600  # characters; a message quotes values, which aliases may have made large


class Errors:
    def __init__(self, file: str):
        self.file, self.messages = file, []

    def add(self, line: int, op: str | None, key: object, message: str) -> None:
        """`key` is a key's name, or None for none; a YAML key null/0/false is named by
        yaml_source.key_name (the caller passes that string)."""
        where = f"{self.file}:{line}"
        op, key = (None if x is None else yaml_source.one_line(str(x), 80) for x in (op, key))
        what = ", ".join(p for p in (f"op '{op}'" if op else "",
                                     f"key '{key}'" if key is not None else "") if p)
        self.messages.append(f"{where}: {what + ': ' if what else ''}{yaml_source.one_line(message, MAX_MESSAGE)}")
