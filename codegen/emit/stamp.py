"""Skip loading and rendering when neither ops.yaml nor the generator changed.

After a successful `generate`, a stamp records a key (SHA-256 of the ops.yaml bytes
and its file name, every source of codegen/ and templates/, and the versions of the
libraries that shape the output) and the SHA-256 of every file written. The next
`generate` or `check` with the same key only verifies generated/ against the stamp:
each listed file must still be a regular file with the recorded hash, and no other
file may carry our banner (a stale op's file to delete). Anything else, or any doubt,
falls back to the full load and render, so `check` stays truthful.

The stamp lives outside generated/ (which holds only generated files, and is
committed): in $MPSGEN_CACHE_DIR, else $XDG_CACHE_HOME/mpsgen, else ~/.cache/mpsgen,
one file per output folder, the 64 most recent. MPSGEN_CACHE=0 disables it. Failing to read or write it
is never an error.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import stat
import sys
from pathlib import Path

from . import writer

VERSION = b"mpsgen-stamp-1"
_CODEGEN = Path(__file__).resolve().parents[1]  # every stage of the generator
_SOURCES = (_CODEGEN, _CODEGEN.parent / "templates")


def enabled() -> bool:
    return os.environ.get("MPSGEN_CACHE", "1") != "0"


def cache_dir() -> Path:
    if os.environ.get("MPSGEN_CACHE_DIR"):
        return Path(os.environ["MPSGEN_CACHE_DIR"])
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "mpsgen"


def _stamp_path(out_dir: Path) -> Path:
    where = hashlib.sha256(os.fsencode(os.path.realpath(out_dir))).hexdigest()[:32]
    return cache_dir() / f"{where}.json"


def key(ops_bytes: bytes, yaml_name: str) -> str:
    h = hashlib.sha256(VERSION)
    for part in (ops_bytes, yaml_name.encode(), sys.version.encode()):
        h.update(len(part).to_bytes(8, "little") + part)
    for folder in _SOURCES:
        for path in sorted(folder.rglob("*")):
            if path.is_file() and path.suffix in (".py", ".j2"):
                data = path.read_bytes()
                name = path.relative_to(folder).as_posix()
                h.update(name.encode() + b"\0" + len(data).to_bytes(8, "little") + data)
    for module in ("torchgen", "jinja2", "yaml"):  # without importing them
        spec = importlib.util.find_spec(module)
        origin = spec.origin if spec and spec.origin else ""
        try:
            st = os.stat(origin)
            h.update(f"{module}:{origin}:{st.st_size}:{st.st_mtime_ns}".encode())
        except OSError:
            h.update(f"{module}:none".encode())
    return h.hexdigest()


def fresh(out_dir: Path, stamp_key: str) -> dict | None:
    """The stamp's record if generated/ is exactly what it recorded for this key, else None."""
    if not enabled():
        return None
    try:
        record = json.loads(_stamp_path(out_dir).read_text())
        if record.get("key") != stamp_key or record.get("out") != os.path.realpath(out_dir):
            return None
        files: dict[str, str] = record["files"]
        folder = os.fspath(out_dir)
        for name, digest in files.items():
            path = os.path.join(folder, name)
            if not stat.S_ISREG(os.lstat(path).st_mode):
                return None
            with open(path, "rb") as f:
                if hashlib.sha256(f.read()).hexdigest() != digest:
                    return None
        if writer.stale_files(out_dir, files):
            return None
        return record
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None


def record(out_dir: Path, stamp_key: str, files: dict[str, str], n_ops: int) -> None:
    """Remember that generated/ holds exactly `files` for this key (best effort)."""
    if not enabled():
        return
    text = json.dumps({
        "key": stamp_key, "out": os.path.realpath(out_dir), "ops": n_ops,
        "files": {name: hashlib.sha256(content.encode()).hexdigest() for name, content in files.items()},
    })
    path = _stamp_path(out_dir)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}")
        with open(tmp, "x") as f:  # exclusive: never through a planted file or link
            f.write(text)
        os.replace(tmp, path)
        _prune(path.parent)
    except OSError:
        pass


MAX_STAMPS = 64  # one per output folder; the oldest go first


def _prune(folder: Path) -> None:
    stamps = [e for e in os.scandir(folder) if e.name.endswith(".json") and e.is_file(follow_symlinks=False)]
    if len(stamps) > MAX_STAMPS:
        stamps.sort(key=lambda e: e.stat(follow_symlinks=False).st_mtime_ns)
        for old in stamps[: len(stamps) - MAX_STAMPS]:
            os.unlink(old.path)


def forget(out_dir: Path) -> None:
    try:
        os.unlink(_stamp_path(out_dir))
    except OSError:
        pass
