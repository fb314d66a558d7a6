"""Load ops.yaml into the model, collecting every error with its file:line.

Nothing here writes files; `load()` either returns a valid Registry or raises
RegistryError listing all problems found.
"""
from __future__ import annotations

import re
from pathlib import Path

import yaml
from torchgen.model import BaseTy, BaseType, FunctionSchema, SchemaKind

from .dtypes import DTYPES, GROUPS
from .model import Location, Op, Registration, Registry, XFail

TOP_KEYS = {"namespace", "ops"}
OP_KEYS = {"func", "functor", "dtypes", "reference", "opinfo", "xfail"}
REQUIRED_OP_KEYS = ("func", "functor", "dtypes", "reference")
FAMILIES = {1: "unary", 2: "binary"}
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+$")


class RegistryError(Exception):
    def __init__(self, errors: list[str]):
        super().__init__("\n".join(errors))
        self.errors = errors


class _Mapping(dict):
    """A YAML mapping that remembers its own line and each key's line."""

    line: int = 0
    key_lines: dict


class _Loader(yaml.SafeLoader):
    def construct_mapping(self, node, deep=False):
        mapping = _Mapping(super().construct_mapping(node, deep=deep))
        mapping.line = node.start_mark.line + 1
        mapping.key_lines = {
            self.construct_object(k): k.start_mark.line + 1 for k, _ in node.value
        }
        return mapping


_Loader.add_constructor(
    "tag:yaml.org,2002:map", lambda loader, node: loader.construct_mapping(node, deep=True)
)


class _Errors:
    def __init__(self, file: str):
        self.file, self.messages = file, []

    def add(self, line: int, op: str | None, key: str | None, message: str) -> None:
        where = f"{self.file}:{line}"
        what = ", ".join(p for p in (f"op '{op}'" if op else "", f"key '{key}'" if key else "") if p)
        self.messages.append(f"{where}: {what + ': ' if what else ''}{message}")


def load(path: str | Path) -> Registry:
    path = Path(path)
    display = path.name
    errors = _Errors(display)
    try:
        doc = yaml.load(path.read_text(), Loader=_Loader)
    except yaml.YAMLError as e:
        line = getattr(getattr(e, "problem_mark", None), "line", -1) + 1
        raise RegistryError([f"{display}:{line}: not valid YAML: {getattr(e, 'problem', e)}"])
    if not isinstance(doc, _Mapping):
        raise RegistryError([f"{display}:1: expected a mapping with keys 'namespace' and 'ops'"])

    for key in sorted(set(doc) - TOP_KEYS, key=str):
        errors.add(doc.key_lines[key], None, key, f"unknown key; expected one of {sorted(TOP_KEYS)}")
    namespace = doc.get("namespace")
    if not isinstance(namespace, str) or not _IDENT.match(namespace):
        errors.add(doc.key_lines.get("namespace", doc.line), None, "namespace",
                   f"expected a C++ identifier naming the torch library, got {namespace!r}")
    entries = doc.get("ops")
    if not isinstance(entries, list) or not entries:
        errors.add(doc.key_lines.get("ops", doc.line), None, "ops", "expected a non-empty list of ops")
        entries = []

    ops: list[Op] = []
    first_seen: dict[str, int] = {}
    for entry in entries:
        op = _load_op(entry, errors)
        if op is None:
            continue
        if op.name in first_seen:
            errors.add(op.loc.line, op.name, "func",
                       f"duplicate op name; first defined at {display}:{first_seen[op.name]}")
            continue
        first_seen[op.name] = op.loc.line
        ops.append(op)

    if errors.messages:
        raise RegistryError(errors.messages)
    return Registry(namespace=namespace, ops=tuple(ops), path=str(path))


def _load_op(entry, errors: _Errors) -> Op | None:
    if not isinstance(entry, _Mapping):
        errors.add(0, None, None, f"each entry of 'ops' must be a mapping, got {entry!r}")
        return None
    line = entry.line
    n_before = len(errors.messages)

    def line_of(key: str) -> int:
        return entry.key_lines.get(key, line)

    # The schema first: it gives the op its name for every later message.
    name, schema, family = None, None, None
    func = entry.get("func")
    if not isinstance(func, str):
        errors.add(line, None, "func", "missing; expected a schema such as 'exp(Tensor self) -> Tensor'")
    else:
        try:
            schema = FunctionSchema.parse(func)
        except Exception as e:  # torchgen raises AssertionError/RuntimeError
            errors.add(line_of("func"), func, "func", f"not a valid schema: {func!r} ({e})")
        if schema is not None:
            name = str(schema.name.name.base)
            family = _check_schema(schema, name, line_of("func"), errors)
    label = name or (func if isinstance(func, str) else None)

    for key in sorted(set(entry) - OP_KEYS, key=str):
        errors.add(line_of(key), label, key, f"unknown key; expected one of {sorted(OP_KEYS)}")
    for key in REQUIRED_OP_KEYS[1:]:
        if key not in entry:
            errors.add(line, label, key, "missing; every op needs func, functor, dtypes and reference")

    functor = _check_functor(entry.get("functor"), name, label, line_of("functor"), errors) \
        if "functor" in entry else None
    registrations = _check_dtypes(entry.get("dtypes"), family, label, line_of("dtypes"), errors) \
        if "dtypes" in entry else ()

    reference = entry.get("reference")
    if "reference" in entry and not (isinstance(reference, str) and _DOTTED.match(reference)):
        errors.add(line_of("reference"), label, "reference",
                   f"expected a dotted Python path such as 'torch.exp', got {reference!r}")
    opinfo = entry.get("opinfo", name or "")
    if opinfo is None:
        opinfo = ""  # `opinfo: null`: the op has no OpInfo entry
    if not isinstance(opinfo, str):
        errors.add(line_of("opinfo"), label, "opinfo", f"expected an OpInfo name or null, got {opinfo!r}")

    xfails = _check_xfails(entry.get("xfail", []), registrations, label, line_of("xfail"), errors)

    if len(errors.messages) > n_before:
        return None
    return Op(name=name, schema=schema, family=family, functor=functor,
              registrations=registrations, reference=reference, opinfo=opinfo,
              xfails=xfails, loc=Location(errors.file, line),
              functor_line=_functor_line(entry["functor"], line_of("functor")))


def _functor_line(source: str, key_line: int) -> int:
    """The ops.yaml line of the functor's first line, as _check_functor emits it."""
    # a block scalar starts below its key; leading blank lines are stripped
    first = key_line + 1 + len(source) - len(source.lstrip("\n"))
    # a source defining a struct is emitted as written; a wrapped body gets
    # its synthetic struct line just above its own first line
    return first if _structs(source) else first - 1


def _check_schema(schema: FunctionSchema, name: str, line: int, errors: _Errors) -> str | None:
    family = None
    if not _IDENT.match(name) or name.startswith("_") or name.endswith("_"):
        errors.add(line, name, "func", "op name must be a C++ identifier without leading/trailing '_'")
    if schema.kind() != SchemaKind.functional or schema.name.name.inplace:
        errors.add(line, name, "func",
                   "expected the functional schema; out= and in-place variants are generated")
        return None
    args = schema.arguments
    tensor = BaseType(BaseTy.Tensor)
    positional = args.flat_positional
    if args.flat_kwarg_only or any(a.type != tensor or a.default is not None for a in positional):
        errors.add(line, name, "func", "expected only positional 'Tensor' arguments without defaults")
    elif len(positional) not in FAMILIES:
        errors.add(line, name, "func",
                   f"expected 1 (unary) or 2 (binary) Tensor arguments, got {len(positional)}")
    else:
        family = FAMILIES[len(positional)]
    if len(schema.returns) != 1 or schema.returns[0].type != tensor:
        errors.add(line, name, "func", "expected a single 'Tensor' return")
    return family


def _check_functor(source, name, label, line, errors) -> str | None:
    if not isinstance(source, str) or not source.strip():
        errors.add(line, label, "functor", "expected Metal source: an operator() body or a whole struct")
        return None
    if name is None:
        return None
    structs = _structs(source)
    if structs and f"{name}_functor" not in structs:
        errors.add(line, label, "functor",
                   f"defines struct {structs[0]}; expected 'struct {name}_functor' "
                   "or only the operator() definitions")
        return None
    body = source.strip("\n")
    if structs:
        return body  # the whole struct, as written
    indented = "\n".join(("  " + l) if l.strip() else "" for l in body.splitlines())
    return f"struct {name}_functor {{\n{indented}\n}};"


def _structs(source: str) -> list[str]:
    """Names of the structs a functor source defines (comments ignored)."""
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", source, flags=re.S)
    return re.findall(r"\bstruct\s+(\w+)", code)


def _check_dtypes(spec, family, label, line, errors) -> tuple[Registration, ...]:
    if not isinstance(spec, list) or not spec:
        errors.add(line, label, "dtypes",
                   f"expected a list of groups {sorted(GROUPS)} or {{in: T, out: T}} pairs")
        return ()
    regs: list[Registration] = []
    for item in spec:
        if isinstance(item, str):
            group = GROUPS.get(item)
            if group is None:
                errors.add(line, label, "dtypes",
                           f"unknown dtype group {item!r}; expected one of {sorted(GROUPS)} "
                           "or a pair {in: T, out: T}")
                continue
            if group.binary_only and family == "unary":
                errors.add(line, label, "dtypes", f"group {item!r} applies to binary ops only")
                continue
            regs += [Registration(i, o, group.opmath) for i, o in group.pairs]
        elif isinstance(item, dict):
            item_line = getattr(item, "line", line)
            unknown = set(item) - {"in", "out", "opmath"}
            if unknown or "in" not in item or "out" not in item:
                errors.add(item_line, label, "dtypes",
                           f"a pair needs keys 'in' and 'out' (and optional 'opmath'), got {dict(item)}")
                continue
            bad = [str(item[k]) for k in ("in", "out") if item[k] not in DTYPES]
            if bad:
                errors.add(item_line, label, "dtypes",
                           f"unknown dtype {', '.join(bad)}; expected one of {sorted(DTYPES)}")
                continue
            opmath = item.get("opmath", False)
            if not isinstance(opmath, bool) or (opmath and family == "unary"):
                errors.add(item_line, label, "dtypes", "'opmath' is a boolean, for binary ops only")
                continue
            regs.append(Registration(item["in"], item["out"], opmath))
        else:
            errors.add(line, label, "dtypes", f"expected a group name or a pair, got {item!r}")
    seen: set[str] = set()
    for r in regs:
        if r.input in seen:
            # torch's castout host_names are keyed on the input dtype alone
            errors.add(line, label, "dtypes", f"input dtype {r.input!r} is registered more than once")
        seen.add(r.input)
    return tuple(regs)


def _check_xfails(spec, registrations, label, line, errors) -> tuple[XFail, ...]:
    if not isinstance(spec, list):
        errors.add(line, label, "xfail", "expected a list of {dtype: T, reason: text}")
        return ()
    registered = {r.input for r in registrations}
    xfails = []
    for item in spec:
        item_line = getattr(item, "line", line)
        if not isinstance(item, dict) or set(item) != {"dtype", "reason"}:
            errors.add(item_line, label, "xfail", f"expected {{dtype: T, reason: text}}, got {item!r}")
        elif item["dtype"] not in registered:
            errors.add(item_line, label, "xfail",
                       f"dtype {item['dtype']!r} is not registered for this op")
        elif not isinstance(item["reason"], str) or not item["reason"].strip():
            errors.add(item_line, label, "xfail", "an xfail needs a non-empty reason")
        else:
            xfails.append(XFail(item["dtype"], item["reason"].strip()))
    return tuple(xfails)
