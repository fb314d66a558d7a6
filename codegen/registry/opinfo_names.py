"""Validate ops.yaml's `opinfo:` against torch's op_db, without importing op_db on every run.

`opinfo:` names an entry of `torch.testing._internal.common_methods_invocations.op_db`:
either a plain name (`hypot`, `nn.functional.hardshrink`), which selects the OpInfo of
that name without a variant, or `name[variant_test_name]` (`polygamma[polygamma_n_1]`,
`div[floor_rounding]`), which selects that variant.

Importing op_db takes seconds, so the names are cached in a JSON file keyed on the
installed torch (its version, and the size and mtime of common_methods_invocations.py,
read without importing torch). The cache goes to the first writable of `<repo>/build/`,
`$XDG_CACHE_HOME/mpsgen` (`~/.cache/mpsgen`) and the system temp folder, or only to
`$MPSGEN_CACHE_DIR` when that is set; if none is writable, op_db is imported on every run.
"""
from __future__ import annotations

import difflib
import importlib.util
import json
import os
import re
import tempfile
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_SYNTAX = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_.]*)(?:\[(?P<variant>[A-Za-z0-9_.]*)\])?\Z")
CACHE_FORMAT = 1


def parse(spec: str) -> tuple[str, str] | None:
    """`name[variant]` -> (name, variant); `name` -> (name, ""); None if malformed."""
    m = _SYNTAX.match(spec.strip()) if isinstance(spec, str) else None
    if m is None:
        return None
    return m["name"], m["variant"] or ""


_VERSION = re.compile(r"""^__version__\s*(?::\s*str\s*)?=\s*['"]([^'"\n]+)['"]""", re.M)


def torch_version() -> str:
    """The installed torch's version without importing it: torch/version.py as its build
    wrote it (importing importlib.metadata costs more than the rest of these cache lookups),
    else the package metadata. Raises if torch is not installed."""
    spec = importlib.util.find_spec("torch")
    if spec is not None and spec.submodule_search_locations:
        try:
            text = (Path(list(spec.submodule_search_locations)[0]) / "version.py").read_text()
            found = _VERSION.search(text)
            if found:
                return found[1]
        except (OSError, UnicodeDecodeError):
            pass
    from importlib import metadata

    return metadata.version("torch")


def _torch_key() -> str | None:
    """Identify the installed torch without importing it."""
    try:
        version = torch_version()
        spec = importlib.util.find_spec("torch")
    except Exception:
        return None
    if spec is None or not spec.submodule_search_locations:
        return None
    cmi = Path(list(spec.submodule_search_locations)[0]) / "testing" / "_internal" / "common_methods_invocations.py"
    try:
        st = cmi.stat()
    except OSError:
        return None
    return f"{version}|{st.st_size}|{st.st_mtime_ns}"


def _cache_dirs() -> list[Path]:
    if os.environ.get("MPSGEN_CACHE_DIR"):  # that folder only
        return [Path(os.environ["MPSGEN_CACHE_DIR"])]
    dirs = [ROOT / "build"] if (ROOT / "ops.yaml").is_file() else []  # a checkout's build/, not site-packages
    dirs.append(Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "mpsgen")
    dirs.append(Path(tempfile.gettempdir()) / "mpsgen-cache")
    return dirs


def _from_op_db() -> dict[str, list[str]]:
    """{OpInfo name: [variant_test_name, ...]} ("" is the plain OpInfo), from op_db itself."""
    from torch.testing._internal.common_methods_invocations import op_db

    names: dict[str, list[str]] = {}
    for o in op_db:
        names.setdefault(o.name, []).append(o.variant_test_name or "")
    return names


def _read(path: Path, key: str, field: str = "names") -> dict | None:
    """The cached `field` of a JSON cache file written for `key` (the installed torch), or None."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("format") != CACHE_FORMAT or data.get("torch") != key:
        return None
    names = data.get(field)
    return names if isinstance(names, dict) else None


def _write(path: Path, key: str, names: dict, field: str = "names") -> bool:
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # write-then-rename: concurrent generate runs (pytest-xdist) never read half a file
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
        with os.fdopen(fd, "w") as f:
            json.dump({"format": CACHE_FORMAT, "torch": key, field: names}, f, sort_keys=True)
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
        return True
    except OSError:
        return False


@lru_cache(maxsize=None)
def opinfo_names() -> dict[str, tuple[str, ...]]:
    """{OpInfo name: its variant_test_names} of the installed torch ("" for the plain one)."""
    key = _torch_key()
    if key is not None:
        for d in _cache_dirs():
            names = _read(d / "opinfo_names.json", key)
            if names is not None:
                return {k: tuple(v) for k, v in names.items()}
    names = _from_op_db()
    if key is not None:
        for d in _cache_dirs():
            if _write(d / "opinfo_names.json", key, names):
                break
    return {k: tuple(v) for k, v in names.items()}


def _spell(name: str, variant: str) -> str:
    return f"{name}[{variant}]" if variant else name


def _close_names(name: str, names) -> list[str]:
    """Close spellings, also by the last dotted part (`hardshrink` -> `nn.functional.hardshrink`)."""
    by_last: dict[str, list[str]] = {}
    for n in names:
        by_last.setdefault(n.rsplit(".", 1)[-1], []).append(n)
    close = difflib.get_close_matches(name, list(names), n=5, cutoff=0.6)
    for last in difflib.get_close_matches(name.rsplit(".", 1)[-1], list(by_last), n=3, cutoff=0.8):
        close += sorted(by_last[last])
    return list(dict.fromkeys(close))[:5]


def check_opinfo(spec: str) -> str | None:
    """None if `spec` names an OpInfo of op_db, else why not (with close matches)."""
    parsed = parse(spec)
    if parsed is None:
        return f"expected an OpInfo name such as 'hypot' or 'name[variant_test_name]', got {spec!r}"
    name, variant = parsed
    names = opinfo_names()
    if name not in names:
        close = _close_names(name, names)
        hint = f"; close matches: {', '.join(close)}" if close else ""
        return f"no OpInfo named '{name}' in torch's op_db{hint}"
    variants = names[name]
    if variant in variants:
        return None
    spelt = [_spell(name, v) for v in variants]
    if not variant:
        return (f"op_db has '{name}' only as variants: {', '.join(spelt)}; "
                f"write one as opinfo: {name}[variant_test_name]")
    close = difflib.get_close_matches(variant, [v for v in variants if v], n=5, cutoff=0.6)
    hint = f"; close matches: {', '.join(_spell(name, v) for v in close)}" if close else ""
    return f"op_db's '{name}' has no variant '{variant}' (it has: {', '.join(spelt)}){hint}"
