"""aten's operators as the installed torch declares them, for `implements: aten` entries.

torchgen ships the `native_functions.yaml` the installed torch was built from
(`torchgen/packaged/ATen/native/native_functions.yaml`). For each operator (with its
overload, `heaviside.out`) this module keeps its schema and whether torch already
runs it on MPS, and why: a kernel under an `MPS` dispatch key (`silu.out`: `CPU, CUDA,
MPS, MTIA: silu_out`), a structured op whose `out=` has one (`silu` delegates to
`silu.out`), or a composite kernel (CompositeImplicitAutograd, or no `dispatch:` at all,
which torchgen reads as CompositeImplicitAutograd; CompositeExplicitAutograd), which runs
on MPS through the ops it calls. Registering an MPS kernel replaces that path, which an
entry must say with `replaces: mps`.

Reading the YAML takes a second or two, so the table is cached as JSON beside the
OpInfo names (codegen/registry/opinfo_names.py), keyed on the torch version and the file's size
and mtime.
"""
from __future__ import annotations

import importlib.util
from functools import lru_cache
from pathlib import Path

from . import opinfo_names

COMPOSITE = ("CompositeImplicitAutograd", "CompositeExplicitAutograd", "CompositeExplicitAutogradNonFunctional")


def _yaml_path() -> Path | None:
    spec = importlib.util.find_spec("torchgen")
    if spec is None or not spec.submodule_search_locations:
        return None
    path = Path(list(spec.submodule_search_locations)[0]) / "packaged" / "ATen" / "native" / "native_functions.yaml"
    return path if path.is_file() else None


def _key(path: Path) -> str | None:
    try:
        st = path.stat()
        return f"{opinfo_names.torch_version()}|{st.st_size}|{st.st_mtime_ns}"
    except Exception:
        return None


def _dispatch_keys(entry: dict) -> dict[str, str]:
    """{dispatch key: kernel} of one native_functions.yaml entry (`CPU, CUDA: f` split)."""
    found = {}
    for keys, kernel in (entry.get("dispatch") or {}).items():
        for k in str(keys).split(","):
            found[k.strip()] = str(kernel)
    return found


def _mps_path(name: str, entries: dict[str, dict]) -> str | None:
    """How torch runs `name` on MPS today, or None if it has no MPS path."""
    e = entries[name]
    keys = e["dispatch"]
    if "MPS" in keys:
        return f"native_functions.yaml dispatches {name} to MPS kernel {keys['MPS']}"
    delegate = e.get("delegate")
    if delegate:
        out_keys = entries.get(delegate, {}).get("dispatch", {})
        if "MPS" in out_keys:
            return f"{name} is structured: its {delegate} has MPS kernel {out_keys['MPS']}"
        return None
    composite = [k for k in COMPOSITE if k in keys] or ([] if keys else ["CompositeImplicitAutograd"])
    if composite:
        return f"{name} is {composite[0]}: it runs on MPS through the ops its kernel calls"
    return None


def _from_yaml(path: Path) -> dict[str, dict]:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    raw = yaml.load(path.read_text(), Loader=loader)
    entries = {}
    for e in raw:
        func = e.get("func") if isinstance(e, dict) else None
        if not isinstance(func, str):
            continue
        name = func.split("(", 1)[0]
        entries[name] = {"schema": func, "dispatch": _dispatch_keys(e), "delegate": e.get("structured_delegate")}
    return {name: {"schema": e["schema"], "mps": _mps_path(name, entries)} for name, e in entries.items()}


@lru_cache(maxsize=None)
def aten_ops() -> dict[str, dict]:
    """{`name.overload`: {"schema": its schema, "mps": how torch runs it on MPS, or None}}."""
    path = _yaml_path()
    if path is None:
        return {}
    key = _key(path)
    if key is not None:
        for d in opinfo_names._cache_dirs():
            table = opinfo_names._read(d / "aten_ops.json", key, field="ops")
            if table is not None:
                return table
    table = _from_yaml(path)
    if key is not None:
        for d in opinfo_names._cache_dirs():
            if opinfo_names._write(d / "aten_ops.json", key, table, field="ops"):
                break
    return table


@lru_cache(maxsize=None)
def _by_base() -> dict[str, list[str]]:
    """aten's operator names by base name without the in-place `_` (`clamp_.Tensor` under `clamp`)."""
    found: dict[str, list[str]] = {}
    for name in aten_ops():
        found.setdefault(name.split(".", 1)[0].rstrip("_"), []).append(name)
    return found


@lru_cache(maxsize=None)
def variant_names(functional: str) -> dict[str, str]:
    """aten's own names of the out= and in-place variants of a functional schema that aten
    declares (`clamp.Tensor` -> {"out": "clamp.Tensor_out", "inplace": "clamp_.Tensor"}),
    found as torchgen groups them: the operators whose core signature equals this one's.
    Empty when aten does not declare the functional schema itself; a kind aten lacks
    (an `autogen:` variant such as `mul.Scalar_out`) is left out."""
    from torchgen.model import FunctionSchema, SchemaKind

    table = aten_ops()
    schema = FunctionSchema.parse(functional)
    name = str(schema.name)
    if name not in table or str(FunctionSchema.parse(table[name]["schema"])) != str(schema):
        return {}
    signature, kinds = schema.signature(), {SchemaKind.out: "out", SchemaKind.inplace: "inplace"}
    found = {}
    for other in _by_base().get(str(schema.name.name.base), []):
        theirs = FunctionSchema.parse(table[other]["schema"])
        if theirs.kind() in kinds and theirs.signature() == signature:
            found[kinds[theirs.kind()]] = other
    return found
