"""Load ops.yaml into the model, collecting every error with its file:line.

Nothing here writes files; `load()` either returns a valid Registry or raises
RegistryError listing all problems found.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import re
from pathlib import Path

from torchgen.model import BaseTy, BaseType, FunctionSchema, SchemaKind

from . import formulas, names, yaml_source
from .aten_schemas import aten_ops
from .dtypes import DTYPES, GROUPS
from .checks import CheckError, message_to_cpp, to_cpp
from .opinfo_names import check_opinfo
from .model import (DEFAULT_PARAM_TYPE, Check, Tolerance, PARAM_TYPES, Derivative, DtypeTable, Gap, Location, Op,
                    Overload, Param, Registration, Registry, Selector, XFail, schema_args, variant_schemas)

TOP_KEYS = {"namespace", "ops"}
OP_KEYS = {"func", "functor", "dtypes", "reference", "opinfo", "xfail", "derivatives", "args", "kernel",
           "alpha_check", "checks", "tolerances", "implements", "replaces", "given", "mask", "gaps", "out_dtype",
           "zero_divisor", "dtype_defaults", "result_dtype"}
OVERLOAD_KEYS = {"func", "reference", "opinfo", "xfail", "derivatives", "out_dtype"}
# `out_dtype:` how out= relates to the result dtype: cast to it (TensorIterator's binary and
# *_float ops), or exact, as torch's unary-op iterators (check_all_same_dtype) and its
# generated out= of composite ops (add.Scalar_out) require; {exact: [dtypes]}: exact for
# those input dtypes only (torch's abs computes complex inputs into a temporary, then casts)
OUT_DTYPES = ("cast", "exact")
_OUT_DTYPE_HELP = ("expected 'exact' (out= must have the result dtype, as torch's neg.out refuses another), "
                   "'cast' (the default), or {exact: [input dtypes or groups]}")
_NOT_DIFFERENTIABLE = ("{op} kernels produce only bool or integer results, or a factory's (an op with "
                       "layout, device or pin_memory, as full_like), which autograd does not differentiate; "
                       "remove 'derivatives'")
# what a derivative formula may read besides the entry's arguments (generated/autograd.cpp)
FORMULA_NAMES = {"grad", "result"}
REQUIRED_OP_KEYS = ("func", "functor", "dtypes", "reference")
FAMILIES = {1: "unary", 2: "binary", 3: "ternary"}
TENSOR = BaseType(BaseTy.Tensor)
# schema argument types an entry may use: Tensors, and what the kernels read as params
SUPPORTED_TYPES = ("Tensor", "Tensor?", "Scalar", "Scalar?", "int", "int?", "float", "float?", "bool", "str", "str?",
                   "ScalarType", "ScalarType?", "Layout?", "Device?", "bool?", "MemoryFormat?")
# the result's TensorOptions, as aten's *_like functions take them: read by the host, not the kernels
OPTION_TYPES = {"Layout?": "layout", "Device?": "device", "bool?": "pin_memory", "MemoryFormat?": "memory_format"}
# names the generated C++ and Python use for their own purposes. aten's own argument names
# are not among them (sigmoid_backward's `output`, infinitely_differentiable_gelu_backward's
# `grad`): a formula's `grad` is the incoming gradient, as in derivatives.yaml
RESERVED_ARG_NAMES = {"out", "result", "iter", "common", "params", "ctx", "kernel", "torch", "math",
                      "lib", "self_", "inputs"}
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")  # \Z: `$` would accept a trailing newline
_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+\Z")


class RegistryError(Exception):
    def __init__(self, errors: list[str]):
        super().__init__("\n".join(errors))
        self.errors = errors


# YAML values that remember their lines (codegen/yaml_source.py)
_Mapping, _Sequence = yaml_source.Mapping, yaml_source.Sequence
MAX_MESSAGE = 600  # characters; a message quotes values, which aliases may have made large


class _Errors:
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


def load(path: str | Path, data: bytes | None = None) -> Registry:
    """`data`: the file's bytes, if the caller already read them (so they cannot change between)."""
    path = Path(path)
    display = path.name
    errors = _Errors(display)
    try:
        data = yaml_source.read(path) if data is None else data
    except OSError as e:
        raise RegistryError([f"{path}: cannot read the registry: {e.strerror or e}"]) from None
    try:
        doc = yaml_source.load(yaml_source.decode(data))
    except yaml_source.SourceError as e:
        errors.add(e.line, None, yaml_source.key_name(e.key) if e.has_key else None, e.message)
        raise RegistryError(errors.messages) from None
    if not isinstance(doc, _Mapping):
        line = getattr(doc, "line", 1)
        raise RegistryError([f"{display}:{line}: expected a mapping with keys 'namespace' and 'ops', "
                             f"got {yaml_source.short(doc)}"])

    for key in sorted(set(doc) - TOP_KEYS, key=str):
        errors.add(doc.key_lines[key], None, yaml_source.key_name(key),
                   f"unknown key; expected one of {sorted(TOP_KEYS)}")
    namespace = doc.get("namespace")
    problem = names.check_namespace(namespace)
    if problem:
        errors.add(doc.key_lines.get("namespace", doc.line), None, "namespace", problem)
    entries = doc.get("ops")
    if not isinstance(entries, list) or not entries:
        errors.add(doc.key_lines.get("ops", doc.line), None, "ops", "expected a non-empty list of ops")
        entries = []
    entry_lines = getattr(entries, "item_lines", [doc.key_lines.get("ops", doc.line)] * len(entries))

    ops: list[Op] = []
    overloads: list[_PendingOverload] = []
    first_seen: dict[str, int] = {}
    file_names: dict[str, tuple[str, int]] = {}  # lower-case op name -> (qualified name, line)
    rejected: set[str | None] = set()  # base names of ops with errors
    for entry, entry_line in zip(entries, entry_lines):
        if not isinstance(entry, _Mapping):
            errors.add(entry_line, None, "ops", "each entry of 'ops' must be a mapping such as "
                       f"'- func: exp(Tensor self) -> Tensor', got {yaml_source.short(entry)}")
            continue
        loaded = _load_entry(entry, errors)
        if loaded is None:
            if "functor" in entry or "dtypes" in entry:  # an op with errors: its overloads wait for it
                rejected.add(_base_name(entry.get("func")))
            continue
        problem = names.check_op_name(loaded.name) if isinstance(loaded, Op) else None
        if problem:  # it names the generated files, kernels and C++ functions
            errors.add(entry.key_lines.get("func", entry.line), loaded.qualified_name, "func", problem)
            continue
        name = loaded.qualified_name
        if name in first_seen:
            errors.add(loaded.loc.line, name, "func",
                       f"duplicate op name; first defined at {display}:{first_seen[name]}")
            continue
        if isinstance(loaded, Op):  # its name names its files, also on case-insensitive file systems
            other = file_names.get(loaded.name.lower())
            if other is not None:
                errors.add(loaded.loc.line, name, "func",
                           f"the op at {display}:{other[1]} ({other[0]}) already has a functor and "
                           f"generates the files {loaded.name}.metal, ...; give this op's kernels and files "
                           "another name with 'kernel:', or make it a Scalar overload (no functor and dtypes)")
                continue
            file_names[loaded.name.lower()] = (name, loaded.loc.line)
        first_seen[name] = loaded.loc.line
        if isinstance(loaded, Op):
            ops.append(loaded)  # the overloads go into Op.overloads below
        else:
            overloads.append(loaded)

    kernel_lines: dict[str, int] = {}
    for op in ops:
        for k in dict.fromkeys([op.name, *op.kernels]):
            if k in kernel_lines:
                errors.add(op.loc.line, op.qualified_name, "kernel" if k == op.name else "args",
                           f"kernel name '{k}' is already used by the op at {display}:{kernel_lines[k]} "
                           "(kernel and file names must be unique: set 'kernel:' to another name)")
            kernel_lines.setdefault(k, op.loc.line)
    ops = _attach_overloads(ops, [ov for ov in overloads if str(ov.schema.name.name.base) not in rejected], errors)
    if errors.messages:
        raise RegistryError(errors.messages)
    return Registry(namespace=namespace, ops=tuple(ops), path=str(path))


def _load_entry(entry, errors: _Errors) -> Op | Overload | None:
    if not isinstance(entry, _Mapping):
        errors.add(0, None, None, f"each entry of 'ops' must be a mapping, got {entry!r}")
        return None
    line = entry.line
    n_before = len(errors.messages)

    def line_of(key: str) -> int:
        return entry.key_lines.get(key, line)

    # The schema first: it gives the op its name for every later message.
    # An entry without functor and dtypes is a Scalar overload of another op.
    is_overload = "functor" not in entry and "dtypes" not in entry
    name, schema, family, args = None, None, None, []
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
            family = _check_schema(schema, name, line_of("func"), errors, is_overload)
            args = schema_args(schema)
    label = str(schema.name) if schema is not None else (func if isinstance(func, str) else None)

    allowed = OVERLOAD_KEYS if is_overload else OP_KEYS
    for key in sorted(set(entry) - allowed, key=str):
        errors.add(line_of(key), label, yaml_source.key_name(key), f"unknown key; expected one of {sorted(allowed)}")
    required = () if is_overload else REQUIRED_OP_KEYS[1:]
    for key in required:
        if key not in entry:
            errors.add(line, label, key, "missing; every op needs func, functor, dtypes and reference")

    kernel = entry.get("kernel", name)
    if "kernel" in entry and not (isinstance(kernel, str) and _IDENT.fullmatch(kernel)):
        errors.add(line_of("kernel"), label, "kernel", f"expected a C++ identifier naming the kernels, got {kernel!r}")
        kernel = None
    params, selector, own_dtypes = (), None, {}
    if "args" in entry and (is_overload or family is None):
        if is_overload:
            errors.add(line_of("args"), label, "args", "a Scalar overload runs its op's kernels; 'args' belongs there")
    elif family is not None and not is_overload:
        params, selector, own_dtypes = _check_args(entry.get("args"), args, family, label, line_of("args"), errors)
    n_given_errors = len(errors.messages)
    given = _check_given(entry, args, bool(params or selector), label, line_of, errors) \
        if family is not None and not is_overload else ()
    given_ok = len(errors.messages) == n_given_errors  # else the functors' names cannot be known
    kernels = selector.kernels if selector else list(dict.fromkeys(k for _, k in given)) if given else [kernel]
    # no kernels: every `str` choice was refused above, so the functors' names are unknown
    functor = _check_functor(entry.get("functor"), kernels, label, line_of("functor"), errors) \
        if "functor" in entry and kernel and given_ok and kernels else None
    opmath_ok = family in OPMATH_FAMILIES and (family == "ternary" or not params)
    registrations = _check_dtypes(entry.get("dtypes"), family, opmath_ok, label, line_of("dtypes"), errors) \
        if "dtypes" in entry else ()
    tables = _tables(kernel, kernels, registrations, line_of("dtypes"), own_dtypes, family, opmath_ok, label,
                     errors) if kernel and given_ok else ()
    checks = _check_checks(entry["checks"], args, label, line_of("checks"), errors) \
        if "checks" in entry and schema is not None and not is_overload else ()
    out_dtype = _check_out_dtype(entry, label, line_of("out_dtype"), errors)
    alpha_check = entry.get("alpha_check", False)
    if not isinstance(alpha_check, bool) or (alpha_check and not (
            len(params) == 1 and params[0].kind == "Scalar" and family == "binary")):
        errors.add(line_of("alpha_check"), label, "alpha_check",
                   "a boolean; true applies torch's add/sub alpha checks to a binary op's one Scalar")

    reference = entry.get("reference")
    if "reference" in entry and not (isinstance(reference, str) and _DOTTED.fullmatch(reference)):
        errors.add(line_of("reference"), label, "reference",
                   f"expected a dotted Python path such as 'torch.exp', got {reference!r}")
    opinfo = entry.get("opinfo", name or "")
    if opinfo is None:
        opinfo = ""  # `opinfo: null`: the op has no OpInfo entry
    if not isinstance(opinfo, str):
        errors.add(line_of("opinfo"), label, "opinfo", f"expected an OpInfo name or null, got {opinfo!r}")
    elif "opinfo" in entry and opinfo and (reason := check_opinfo(opinfo)):
        errors.add(line_of("opinfo"), label, "opinfo", reason)

    derivatives = _check_derivatives(entry["derivatives"], schema, args, label, line_of("derivatives"), errors) \
        if "derivatives" in entry and schema is not None else None
    implements, replaces, aten_variants = _check_implements(entry, schema, family, label, line_of, errors)
    mask = _check_mask(entry, args, family, bool(params or selector or given), label, line_of, errors) \
        if "mask" in entry and schema is not None and not is_overload else ""
    zero_divisor = _check_zero_divisor(entry, args, label, line_of("zero_divisor"), errors) \
        if "zero_divisor" in entry and schema is not None and not is_overload else ""
    result_like = _check_result_dtype(entry, args, label, line_of("result_dtype"), errors) \
        if "result_dtype" in entry and schema is not None and not is_overload else ""
    dtype_defaults = _check_dtype_defaults(entry["dtype_defaults"], args, label, line_of("dtype_defaults"), errors) \
        if "dtype_defaults" in entry and schema is not None and not is_overload else ()
    dtype_arg = next((a.name for a in args if a.kind == "ScalarType"), "") if family is not None else ""
    if dtype_arg and "result_dtype" not in entry and not is_overload:
        errors.add(line, label, "result_dtype", f"the ScalarType argument '{dtype_arg}' is the result's dtype: "
                   f"add 'result_dtype: {dtype_arg}'")

    if len(errors.messages) > n_before:
        return None
    loc = Location(errors.file, line)
    if is_overload:
        # reference, opinfo, xfails and derivatives default to, and are checked against, the op
        return _PendingOverload(schema, reference, entry.get("opinfo", False), entry.get("xfail", []),
                                line_of("xfail"), loc, derivatives, out_dtype)
    every = [r for t in tables for r in t.registrations]
    xfails = _check_xfails(entry.get("xfail", []), every, label, line_of("xfail"), errors)
    tolerances = _check_tolerances(entry.get("tolerances", []), every, label, line_of("tolerances"), errors)
    gaps = _check_gaps(entry.get("gaps", []), every, label, line_of("gaps"), errors)
    if len(errors.messages) > n_before:
        return None
    op = Op(schema=schema, reference=reference, opinfo=opinfo, xfails=xfails, loc=loc,
            derivatives=derivatives or (), name=kernel, family=family, functor=functor,
            tables=tables, params=params, selector=selector, given=given, alpha_check=alpha_check,
            # a `mask:` op's out= takes only the result dtype unless it says otherwise (torch's where)
            exact_out=_exact_inputs("exact" if mask and out_dtype is None else out_dtype,
                                    [r for t in tables for r in t.registrations]),
            checks=checks, mask=mask, zero_divisor=zero_divisor, dtype_defaults=dtype_defaults,
            result_like="" if dtype_arg else result_like, dtype_arg=dtype_arg,
            tolerances=tolerances, gaps=gaps, implements=implements, replaces=replaces, aten_variants=aten_variants,
            functor_line=_functor_line(entry["functor"], line_of("functor")))
    if op.derivatives and not op.differentiable:
        errors.add(line_of("derivatives"), label, "derivatives", _NOT_DIFFERENTIABLE.format(op="this op's"))
        return None
    return op


@dataclasses.dataclass
class _PendingOverload:
    schema: FunctionSchema
    reference: str | None
    opinfo: str | None | bool  # False: not given
    xfail: object
    xfail_line: int
    loc: Location
    derivatives: tuple[Derivative, ...] | None  # None: not given
    out_dtype: str | tuple[str, ...] | None  # None: not given, the op's (_check_out_dtype)

    @property
    def qualified_name(self) -> str:
        return str(self.schema.name)


def _attach_overloads(ops: list[Op], overloads: list[_PendingOverload], errors: _Errors) -> list[Op]:
    """Give each op its Scalar overloads; complete the overloads' defaults from the op."""
    by_name: dict[str, Op] = {}
    for op in ops:  # an overload runs the kernels of the first op with its base name
        by_name.setdefault(str(op.schema.name.name.base), op)
    attached: dict[str, list[Overload]] = {op.name: [] for op in ops}
    for ov in overloads:
        base, label = str(ov.schema.name.name.base), ov.qualified_name
        op = by_name.get(base)
        if op is None:
            errors.add(ov.loc.line, label, "func",
                       f"an entry without functor and dtypes is a Scalar overload, but no op "
                       f"named '{base}' has a functor in this file")
            continue
        if op.implements:
            errors.add(ov.loc.line, label, "func",
                       f"the op at {errors.file}:{op.loc.line} implements aten::{op.qualified_name}; a Scalar "
                       "overload would define a new op of this namespace on its kernels. Write aten's overload "
                       "as an entry of its own with 'implements: aten'")
            continue
        scalars = _match_overload(ov, op, errors)
        if scalars is None:
            continue
        xfails = _check_xfails(ov.xfail, op.registrations, label, ov.xfail_line, errors)
        opinfo = op.opinfo if ov.opinfo is False else (ov.opinfo or "")
        if ov.derivatives and not op.differentiable:
            errors.add(ov.loc.line, label, "derivatives", _NOT_DIFFERENTIABLE.format(op=op.name + "'s"))
            continue
        # without its own formulas, an overload uses the op's for the Tensors it keeps
        derivatives = ov.derivatives if ov.derivatives is not None else tuple(
            d for d in op.derivatives if d.arg not in scalars)
        attached[op.name].append(Overload(
            schema=ov.schema, reference=ov.reference or op.reference, opinfo=opinfo, xfails=xfails,
            loc=ov.loc, derivatives=derivatives, mask=op.mask, scalar_args=scalars,
            exact_out=op.exact_out if ov.out_dtype is None else _exact_inputs(ov.out_dtype, op.all_registrations)))
    return [dataclasses.replace(op, overloads=tuple(attached[op.name])) if attached[op.name] else op for op in ops]


def _canonical(schema: str) -> str:
    return str(FunctionSchema.parse(schema))


def _check_implements(entry, schema, family, label, line_of, errors) -> tuple[str, str, tuple[str, ...]]:
    """`implements: aten` and `replaces: mps`: the entry's schema must be aten's, and its
    generated out= and in-place variants are registered where aten has them (with the
    schema the generator would write). Replacing a path torch already has on MPS must be
    explicit. Returns (implements, replaces, the variants aten has)."""
    implements, replaces = entry.get("implements", ""), entry.get("replaces", "")
    if "implements" in entry and implements != "aten":
        errors.add(line_of("implements"), label, "implements",
                   f"expected 'aten' (the entry registers kernels for torch's own aten::<op>), got {implements!r}")
        return "", "", ()
    if "replaces" in entry and (not implements or replaces != "mps"):
        errors.add(line_of("replaces"), label, "replaces",
                   "'replaces: mps' says an 'implements: aten' entry replaces torch's own MPS kernel"
                   + ("" if implements else "; this entry does not implement an aten op"))
        return "", "", ()
    if not implements or schema is None or family is None:
        return "", "", ()
    if "derivatives" in entry:
        errors.add(line_of("derivatives"), label, "derivatives",
                   "an 'implements: aten' entry uses aten's own derivatives (derivatives.yaml); remove 'derivatives'")
    table, line = aten_ops(), line_of("func")
    ours = variant_schemas(schema)
    found, on_mps = [], []
    for kind, text in ours.items():
        name = text.split("(", 1)[0]
        aten = table.get(name)
        if aten is None:
            if kind == "functional":
                close = difflib.get_close_matches(name, list(table), n=3, cutoff=0.75)
                errors.add(line, label, "func", f"aten has no operator '{name}' in the installed torch's "
                           "native_functions.yaml" + (f"; close matches: {', '.join(close)}" if close else ""))
                return "", "", ()
            continue  # e.g. special_airy_ai has an out= but no in-place variant
        if _canonical(aten["schema"]) != _canonical(text):
            what = "the schema" if kind == "functional" else f"the generated {kind} variant"
            errors.add(line, label, "func", f"{what} differs from aten's: ops.yaml gives '{_canonical(text)}', "
                       f"aten (native_functions.yaml) declares '{aten['schema']}'")
            return "", "", ()
        found.append(kind)
        if aten["mps"]:
            on_mps.append(aten["mps"])
    if on_mps and replaces != "mps":
        errors.add(line, label, "implements", f"torch already runs this op on MPS ({on_mps[0]}); registering "
                   "it would replace torch's MPS kernel: add 'replaces: mps' and register every dtype torch's "
                   "MPS kernel supports")
    elif replaces and not on_mps:
        errors.add(line_of("replaces"), label, "replaces",
                   f"torch has no MPS kernel for aten::{schema.name} to replace; remove 'replaces'")
    return implements, replaces, tuple(found)


def _float8_note(names) -> str:
    """Why a float8 name is no dtype here: torch 2.13's MPS backend has none (its getMPSDataType
    and scalarToMetalTypeString refuse float8, and c10/metal/common.h lists no float8 type)."""
    if any("float8" in str(n) or "fp8" in str(n) for n in names):
        return " (torch 2.13's MPS backend has no float8 dtype, so no MPS kernel could be given one)"
    return ""


def _check_out_dtype(entry, label, line, errors) -> str | tuple[str, ...] | None:
    """`out_dtype:` as 'cast', 'exact' or the input dtypes it is exact for; None if not given."""
    spec = entry.get("out_dtype")
    if "out_dtype" not in entry or spec in OUT_DTYPES:
        return spec
    if not (isinstance(spec, dict) and set(spec) == {"exact"} and isinstance(spec["exact"], list) and spec["exact"]):
        errors.add(line, label, "out_dtype", f"{_OUT_DTYPE_HELP}, got {yaml_source.short(spec)}")
        return None
    found: list[str] = []
    for name in spec["exact"]:
        if isinstance(name, str) and name in GROUPS:
            found += [i for i, _ in GROUPS[name].pairs]
        elif isinstance(name, str) and name in DTYPES:
            found.append(name)
        else:
            errors.add(line, label, "out_dtype", f"unknown dtype {yaml_source.short(name)} in 'exact'; expected "
                       f"one of {sorted(DTYPES)} or a group of {sorted(GROUPS)}")
    return tuple(dict.fromkeys(found))


def _exact_inputs(out_dtype, registrations) -> tuple[str, ...]:
    """The input dtypes (of the registrations) whose out= must have the result dtype."""
    inputs = [r.input for r in registrations]
    if out_dtype == "exact":
        return tuple(dict.fromkeys(inputs))
    return tuple(i for i in dict.fromkeys(inputs) if i in (out_dtype or ()) and out_dtype != "cast")


def _base_name(func: object) -> str | None:
    """The op name a `func:` starts with, read even where the schema has errors."""
    m = re.match(r"\s*([A-Za-z_][A-Za-z0-9_]*)", func) if isinstance(func, str) else None
    return m.group(1) if m else None


def _match_overload(ov: _PendingOverload, op: Op, errors: _Errors) -> tuple[str, ...] | None:
    """The op's Tensor arguments that this overload takes as Scalars."""
    mine, theirs = schema_args(ov.schema), op.args
    expected = ", ".join(a.decl for a in theirs)
    if [a.name for a in mine] != [a.name for a in theirs]:
        errors.add(ov.loc.line, ov.qualified_name, "func",
                   f"a Scalar overload must take the arguments of {op.qualified_name} ({expected}) "
                   f"by the same names, with some Tensors as Scalars")
        return None
    scalars = []
    for m, t in zip(mine, theirs):
        if m.kind == t.kind and m.optional == t.optional:
            continue
        if m.kind == "Scalar" and t.kind == "Tensor" and m is not mine[0]:
            scalars.append(m.name)
        else:
            errors.add(ov.loc.line, ov.qualified_name, "func",
                       f"argument '{m.name}' is {m.decl.split()[0]} here but {t.decl.split()[0]} in "
                       f"{op.qualified_name}; only Tensor arguments other than the first may become Scalar")
            return None
    if not scalars:
        errors.add(ov.loc.line, ov.qualified_name, "func",
                   f"takes the same arguments as {op.qualified_name}; a Scalar overload replaces "
                   "at least one Tensor by a Scalar")
        return None
    return tuple(scalars)


def _functor_line(source: str, key_line: int) -> int:
    """The ops.yaml line of the functor's first line, as _check_functor emits it."""
    # a block scalar starts below its key; leading blank lines are stripped
    first = key_line + 1 + len(source) - len(source.lstrip("\n"))
    # a source defining a struct is emitted as written; a wrapped body gets
    # its synthetic struct line just above its own first line
    return first if _structs(source) else first - 1


def _check_schema(schema: FunctionSchema, name: str, line: int, errors: _Errors,
                  is_overload: bool = False) -> str | None:
    if not _IDENT.fullmatch(name) or name.startswith("_") or name.endswith("_"):
        errors.add(line, name, "func", "op name must be a C++ identifier without leading/trailing '_'")
    overload = schema.name.overload_name
    if overload and not _IDENT.fullmatch(overload):  # torch's schema parser reads an identifier
        errors.add(line, name, "func", f"overload name {overload!r} must be an identifier (letters, digits "
                   "and '_', not starting with a digit), as torch's schema parser reads it")
    if schema.kind() != SchemaKind.functional or schema.name.name.inplace:
        errors.add(line, name, "func",
                   "expected the functional schema; out= and in-place variants are generated")
        return None
    if len(schema.returns) != 1 or schema.returns[0].type != TENSOR:
        errors.add(line, name, "func", "expected a single 'Tensor' return")
    args = schema.arguments
    every = [*args.flat_positional, *args.flat_kwarg_only]
    ok = True
    for a in every:
        if str(a.type) not in SUPPORTED_TYPES:
            errors.add(line, name, "func",
                       f"argument '{a.name}' has type {a.type}, which an elementwise kernel cannot take; "
                       f"supported: {', '.join(SUPPORTED_TYPES)}")
            ok = False
        elif a.annotation is not None:
            errors.add(line, name, "func", f"argument '{a.name}' has an alias annotation; the functional "
                       "schema's arguments are not aliased (out= and in-place variants are generated)")
            ok = False
        elif a.type == TENSOR and (a.default is not None or a in args.flat_kwarg_only):
            errors.add(line, name, "func", f"Tensor argument '{a.name}' must be positional, without a default")
            ok = False
        elif str(a.type) == "Tensor?" and (a.default not in (None, "None") or a in args.flat_kwarg_only):
            errors.add(line, name, "func", f"Tensor? argument '{a.name}' must be positional, with no default "
                       "or None")
            ok = False
        elif str(a.type) in OPTION_TYPES and (a.name != OPTION_TYPES[str(a.type)] or a.default != "None"):
            errors.add(line, name, "func", f"argument '{a.name}': a {a.type} argument is the result's "
                       f"'{OPTION_TYPES[str(a.type)]}', as aten's *_like functions take it: expected "
                       f"'{a.type} {OPTION_TYPES[str(a.type)]}=None'")
            ok = False
        elif str(a.type).startswith("ScalarType") and a.default not in (None, "None"):
            errors.add(line, name, "func", f"argument '{a.name}': a ScalarType's default is None or none")
            ok = False
        elif str(a.type) not in OPTION_TYPES and (a.name in RESERVED_ARG_NAMES or names.check_cpp_name(a.name)):
            # (the options' fixed names reach only the host's C++, where `device` is no keyword)
            why = names.check_cpp_name(a.name) or f"a name the generated code uses ({', '.join(sorted(RESERVED_ARG_NAMES))})"
            errors.add(line, name, "func", f"argument name '{a.name}' is reserved: {why}; rename it")
            ok = False
        elif a.default is not None and _default_error(str(a.type), a.default):
            errors.add(line, name, "func", f"argument '{a.name}': default {a.default!r} "
                       f"{_default_error(str(a.type), a.default)}")
            ok = False
    arg_names = [a.name for a in every]
    for dup in sorted({n for n in arg_names if arg_names.count(n) > 1}):
        errors.add(line, name, "func", f"argument '{dup}' appears more than once")
        ok = False
    if not ok or is_overload:
        return None  # an overload is checked against its op's schema
    tensors = [a for a in every if str(a.type) in ("Tensor", "Tensor?")]
    if len(tensors) not in FAMILIES or tensors[0].type != TENSOR:
        errors.add(line, name, "func", f"expected 1 (unary), 2 (binary) or 3 (ternary) Tensor arguments, the "
                   f"first of them not optional, got {', '.join(str(a.type) for a in tensors) or 'none'}")
        return None
    if sum(str(a.type).startswith("ScalarType") for a in every) > 1:
        errors.add(line, name, "func", "at most one 'ScalarType' argument may set the result dtype")
        return None
    if sum(str(a.type).startswith("str") for a in every) > 1:
        errors.add(line, name, "func", "at most one 'str' argument may choose the functor")
        return None
    return FAMILIES[len(tensors)]




def _default_error(type_: str, default: str) -> str | None:
    """Why a schema default cannot be passed on as written, or None. torchgen keeps
    defaults as text; the generated C++ and Python read them as literals."""
    if default == "None":
        return None if type_.endswith("?") else "is None, but the argument is not optional ('?')"
    kind = type_.rstrip("?")
    if kind == "str":
        return None if re.fullmatch(r"'[A-Za-z0-9_]*'", default) else "must be a quoted identifier such as 'none'"
    if kind == "bool":
        return None if default in ("True", "False") else "must be True or False"
    pattern = {"int": r"-?[0-9]{1,18}", "float": r"-?[0-9]{1,18}(\.[0-9]{0,18})?(e-?[0-9]{1,2})?",
               "Scalar": r"-?[0-9]{1,18}(\.[0-9]{0,18})?(e-?[0-9]{1,2})?|True|False"}[kind]
    return None if re.fullmatch(pattern, default) else f"is not a plain decimal literal for a {kind}"


def _check_args(spec, op_args, family, label, line, errors) -> tuple[tuple[Param, ...], Selector | None, dict]:
    """The params the kernels read and the `str` selector, from the schema and `args:`; and
    the choices' own dtypes, unchecked ({kernel: (value, how errors show it, dtypes as written, line)})."""
    spec = {} if spec is None else spec
    if not isinstance(spec, dict):
        errors.add(line, label, "args", "expected a mapping from argument names to their Metal type "
                   f"({', '.join(PARAM_TYPES)}), {{type: T, promotes: true}} or {{choices: {{value: kernel}}}}")
        return (), None, {}
    key_lines = getattr(spec, "key_lines", {})
    by_name = {a.name: a for a in op_args}
    for key in spec:
        if key not in by_name or by_name[key].kind == "Tensor":
            non_tensor = [a.name for a in op_args if a.kind != "Tensor"]
            errors.add(key_lines.get(key, line), label, "args",
                       f"{key!r} is not a non-Tensor argument of the schema; expected one of {non_tensor}")
    params, selector, own_dtypes = [], None, {}
    for a in op_args:
        if a.kind in ("Tensor", "ScalarType") or (a.optional and f"{a.kind}?" in OPTION_TYPES):
            continue  # the host reads them (the result's dtype and options), the kernels do not
        item, item_line = spec.get(a.name), key_lines.get(a.name, line)
        if a.kind == "str":
            selector, own_dtypes = _check_choices(a, item, label, item_line, errors)
            continue
        metal, promotes = DEFAULT_PARAM_TYPE[a.kind], False
        if isinstance(item, str):
            metal = item
        elif isinstance(item, dict) and set(item) <= {"type", "promotes", "choices"}:
            metal, promotes = item.get("type", metal), item.get("promotes", False)
            if "choices" in item:
                selector = _check_value_choices(a, item["choices"], label, item_line, errors)
        elif item is not None:
            errors.add(item_line, label, "args", f"{a.name!r}: expected a Metal type ({', '.join(PARAM_TYPES)}), "
                       f"{{type: T, promotes: true}} or {{choices: {{0: kernel, else: kernel}}}}, got {item!r}")
            continue
        if metal not in PARAM_TYPES:
            errors.add(item_line, label, "args", f"{a.name!r}: unknown Metal type {metal!r}; "
                       f"expected one of {', '.join(PARAM_TYPES)}")
        elif not isinstance(promotes, bool) or (promotes and a.kind != "Scalar"):
            errors.add(item_line, label, "args", f"{a.name!r}: 'promotes' is a boolean, for Scalar arguments "
                       "(which torch may treat as wrapped numbers)")
        else:
            params.append(Param(a.name, a.kind, a.optional, metal, promotes))
    return tuple(params), selector, own_dtypes


# what a `str` choice or a `given:` combination maps to
_NAME_A_KERNEL = "must name a kernel (a C++ identifier; its functor is '<kernel>_functor')"
_GIVEN_EXAMPLE = "{min max: clamp_tensor, min: clamp_tensor_min, max: clamp_tensor_max}"


def _check_given(entry, op_args, has_params, label, line_of, errors) -> tuple[tuple[tuple[str, ...], str], ...]:
    """`given:` of an op with `Tensor?` arguments: for each combination of them given (a key
    naming them, separated by spaces or commas; `null` for none), the kernel that runs. It
    reads the required Tensors and the given ones, in schema order: one, two or three
    Tensors select the unary, binary or ternary kernel shapes."""
    optional = [a.name for a in op_args if a.kind == "Tensor" and a.optional]
    line = line_of("given")
    if not optional:
        if "given" in entry:
            errors.add(line, label, "given", "only an op with 'Tensor?' arguments selects its kernel by the "
                       "ones given; this schema has none")
        return ()
    spec = entry.get("given")
    if not isinstance(spec, dict) or not spec:
        errors.add(line, label, "given", f"the schema's Tensor? arguments ({', '.join(optional)}) need the kernel "
                   f"each combination given runs, e.g. given: {_GIVEN_EXAMPLE}")
        return ()
    if has_params:
        errors.add(line, label, "given", "an op that selects its kernel by its Tensor? arguments takes no "
                   "Scalar, int, float, bool or str arguments (not supported yet)")
        return ()
    found, seen = [], {}
    for key, kernel in spec.items():
        names_given = [] if key is None else re.split(r"[\s,]+", key.strip()) if isinstance(key, str) else None
        if names_given is None or any(n not in optional for n in names_given) or \
                len(set(names_given)) != len(names_given):
            errors.add(line, label, "given", f"key {yaml_source.key_name(key)}: expected the Tensor? arguments "
                       f"given, separated by spaces ({', '.join(optional)}), or null for none")
            continue
        combo = tuple(n for n in optional if n in names_given)  # schema order
        if combo in seen:
            errors.add(line, label, "given", f"keys {seen[combo]!r} and {key!r} name the same arguments")
            continue
        seen[combo] = key
        if not isinstance(kernel, str) or not _IDENT.fullmatch(kernel):
            errors.add(line, label, "given", f"{key!r} {_NAME_A_KERNEL}, got {kernel!r}")
            continue
        found.append((combo, kernel))
    families = {}
    for combo, kernel in found:
        n = sum(a.kind == "Tensor" and not a.optional for a in op_args) + len(combo)
        if families.setdefault(kernel, n) != n:
            errors.add(line, label, "given", f"kernel {kernel!r} would read {families[kernel]} and {n} Tensors; "
                       "a kernel has one shape")
    return tuple(found)


def _check_mask(entry, op_args, family, has_params, label, line_of, errors) -> str:
    """`mask: <name>`: the ternary op's first Tensor is a bool mask (where's condition), left out
    of type promotion and of the kernel's dtype; the kernels read it through their _cast variants
    as 0 or 1 of the computation dtype."""
    name, line = entry["mask"], line_of("mask")
    tensors = [a.name for a in op_args if a.kind == "Tensor"]
    expected = (f"expected the name of the first of three Tensor arguments of a ternary op without other "
                f"arguments (mask: {tensors[0] if tensors else 'condition'})")
    if not isinstance(name, str) or name not in tensors:
        errors.add(line, label, "mask", f"{name!r} is not a Tensor argument of the schema; {expected}")
    elif family != "ternary" or name != tensors[0] or has_params or "implements" in entry:
        why = ("the op is " + str(family) if family != "ternary" else
               f"'{name}' is not the first Tensor ({tensors[0]})" if name != tensors[0] else
               "an 'implements: aten' entry cannot have it" if "implements" in entry else
               "the op has other arguments or Tensor? arguments")
        errors.add(line, label, "mask", f"{why}; {expected}")
    elif isinstance(entry.get("derivatives"), dict) and name in entry["derivatives"]:
        errors.add(line_of("derivatives"), label, "derivatives",
                   f"'{name}' is the bool mask (mask: {name}), which is not differentiable; remove its formula")
    else:
        return name
    return ""


def _tensor_named(entry, key, allowed, what, label, line, errors) -> str:
    """`<key>: <name>`, a Tensor argument among `allowed`; "" after an error saying `what` it must be."""
    name = entry[key]
    if name not in allowed:
        errors.add(line, label, key, f"expected the name of a Tensor argument {what} "
                   f"({', '.join(allowed) or 'this op has none'}), got {yaml_source.short(name)}")
        return ""
    return name


def _check_zero_divisor(entry, op_args, label, line, errors) -> str:
    """`zero_divisor: <name>`: a Tensor after the first whose zeros make an integer result raise
    ZeroDivisionError on the CPU backend, as torch's CPU kernels raise (div's trunc and floor)."""
    tensors = [a for a in op_args if a.kind == "Tensor"]
    divisors = [] if any(a.optional for a in tensors) else [a.name for a in tensors[1:]]
    return _tensor_named(entry, "zero_divisor", divisors, "after the first, of an op without Tensor? arguments",
                         label, line, errors)


def _check_result_dtype(entry, op_args, label, line, errors) -> str:
    """`result_dtype: <name>`: the result has that Tensor's dtype, as aten's kernel allocates its
    output like it (mish_backward's is self's); computed in the promoted dtype, then cast."""
    tensors = [a.name for a in op_args if a.kind == "Tensor" and not a.optional and a.name != entry.get("mask")]
    dtypes = [a.name for a in op_args if a.kind == "ScalarType"]
    if dtypes and entry["result_dtype"] != dtypes[0]:
        errors.add(line, label, "result_dtype", f"expected {dtypes[0]!r}, the ScalarType argument whose value is "
                   f"the result's dtype, got {yaml_source.short(entry['result_dtype'])}")
        return ""
    if dtypes:  # a dtype argument (full_like's): the computation's dtype; None for the promoted one
        return dtypes[0]
    return _tensor_named(entry, "result_dtype", tensors, "whose dtype the result has", label, line, errors)


def _check_dtype_defaults(spec, op_args, label, line, errors) -> tuple[tuple[str, str], ...]:
    """`dtype_defaults: {<arg>: max | lowest}`: optional float arguments whose None means the
    dtype's largest or lowest value (nan_to_num's posinf, neginf), for the tests' widened oracle."""
    optional = [a.name for a in op_args if a.kind in ("float", "Scalar") and a.optional and a.default == "None"]
    if not isinstance(spec, dict) or not spec:
        errors.add(line, label, "dtype_defaults", f"expected a mapping of optional float arguments "
                   f"({', '.join(optional) or 'this op has none'}) to max or lowest, got {yaml_source.short(spec)}")
        return ()
    found = []
    for name, limit in spec.items():
        if name not in optional or limit not in ("max", "lowest"):
            errors.add(line, label, "dtype_defaults", f"{name!r}: {limit!r}; expected an optional float argument "
                       f"with default None ({', '.join(optional) or 'this op has none'}) mapped to max or lowest")
        else:
            found.append((name, limit))
    return tuple(found)


def _check_checks(spec, op_args, label, line, errors) -> tuple[Check, ...]:
    kinds = {a.name: (a.kind, a.optional) for a in op_args}
    items = spec if isinstance(spec, list) else [None]
    item_lines = getattr(spec, "item_lines", [line] * len(items))
    found = []
    for item, item_line in zip(items, item_lines):
        if not (isinstance(item, dict) and set(item) == {"require", "message"}
                and all(isinstance(v, str) and v.strip() for v in item.values())):
            errors.add(item_line, label, "checks", "expected a list of {require: <condition>, message: <torch's "
                       "error>}, e.g. {require: min is not None or max is not None, message: ...}")
            continue
        try:
            cpp = to_cpp(item["require"], kinds)
        except CheckError as e:
            errors.add(item_line, label, "checks", f"condition {item['require']!r}: {e}")
            continue
        message = item["message"].strip()
        try:
            cpp_message = message_to_cpp(message, kinds)
        except CheckError as e:
            errors.add(item_line, label, "checks", f"message {message!r}: {e}")
            continue
        found.append(Check(" ".join(item["require"].split()), cpp, message, cpp_message, item_line))
    return tuple(found)


_CHOICE_WITH_DTYPES = "{kernel: div_trunc, dtypes: [float, integer]}"


def _check_choices(arg, item, label, line, errors) -> tuple[Selector | None, dict]:
    """The kernel each value of a `str` argument selects; and the kernels that a choice gives
    dtypes of their own ({kernel: (value, how errors show it, dtypes as written, line)}, checked by
    _tables)."""
    example = "{choices: {none: gelu, tanh: gelu_tanh}}"
    if not (isinstance(item, dict) and set(item) == {"choices"} and isinstance(item["choices"], dict)
            and item["choices"]):
        errors.add(line, label, "args", f"str argument {arg.name!r} needs the kernel each value selects, "
                   f"e.g. {arg.name}: {example}")
        return None, {}
    choices, own_dtypes = [], {}
    value_lines = getattr(item["choices"], "key_lines", {})
    for value, kernel in item["choices"].items():
        value_line = value_lines.get(value, line)
        value = "None" if value is None else value
        dtypes = None
        if isinstance(kernel, dict):  # {kernel: <name>, dtypes: [...]}: the choice's own dtypes
            if set(kernel) != {"kernel", "dtypes"}:
                errors.add(value_line, label, "args", f"{arg.name!r}: choice {value!r} is a kernel name or "
                           f"{_CHOICE_WITH_DTYPES}, got keys {sorted(map(str, kernel))}")
                continue
            dtypes, kernel = (kernel["dtypes"], getattr(kernel, "key_lines", {}).get("dtypes", value_line)), \
                kernel["kernel"]
        if not isinstance(value, str) or not _IDENT.fullmatch(value):
            errors.add(value_line, label, "args", f"{arg.name!r}: choice {value!r} is not an identifier")
        elif value == "None" and not arg.optional:
            errors.add(value_line, label, "args", f"{arg.name!r}: a None choice needs an optional 'str?' argument")
        elif not isinstance(kernel, str) or not _IDENT.fullmatch(kernel):
            errors.add(value_line, label, "args", f"{arg.name!r}: choice {value!r} {_NAME_A_KERNEL}, got {kernel!r}")
        else:
            choices.append((value, kernel))
            if dtypes is not None:
                shown = f"{arg.name}=None" if value == "None" else f"{arg.name}='{value}'"
                own_dtypes.setdefault(kernel, (value, shown, *dtypes))  # a second one is an error below
    shared = [(v, k) for v, k in choices if k in own_dtypes and own_dtypes[k][0] != v]
    for value, kernel in shared:
        errors.add(value_lines.get(value, line), label, "args",
                   f"{arg.name!r}: choice {value!r} selects {kernel!r}, whose dtypes choice "
                   f"{own_dtypes[kernel][0]!r} gives; a kernel with dtypes of its own serves one choice")
    if arg.optional and "None" not in dict(choices):
        errors.add(line, label, "args", f"{arg.name!r} is optional: add the kernel for None, e.g. None: {arg.name}_none")
    if arg.has_default and arg.default != "None" and arg.default.strip("'") not in dict(choices):
        errors.add(line, label, "args", f"{arg.name!r}: its default {arg.default} is not one of the choices "
                   f"{sorted(dict(choices))}")
    return Selector(arg.name, tuple(choices)), own_dtypes


_CONDITION = re.compile(r"(==|!=|<=|>=|<|>)\s*(-?[0-9]+(?:\.[0-9]+)?)")


def _check_value_choices(arg, choices, label, line, errors) -> Selector | None:
    """`choices:` of an `int` or `Scalar` argument: the kernel each value selects, by conditions
    tried in order (`0: digamma` is `== 0`, `">= 2": polygamma`, `else: polygamma`), as torch's
    hosts pick polygamma's kernel by n."""
    example = "{0: digamma, 1: trigamma, else: polygamma}"
    if arg.optional or arg.kind not in ("int", "Scalar") or not isinstance(choices, dict) or not choices:
        errors.add(line, label, "args", f"{arg.name!r}: choices by value are for an int or Scalar argument "
                   f"(not optional), as a mapping from values or conditions to kernels, e.g. {example}")
        return None
    found, conditions = [], []
    for key, kernel in choices.items():
        if isinstance(key, bool) or not (isinstance(key, (int, float)) or key == "else"
                                         or isinstance(key, str) and _CONDITION.fullmatch(key.strip())):
            errors.add(line, label, "args", f"{arg.name!r}: choice {yaml_source.short(key)} is not a value, a "
                       "condition such as '>= 2' (==, !=, <, <=, >, >= and a number) or else")
            continue
        if not isinstance(kernel, str) or not _IDENT.fullmatch(kernel):
            errors.add(line, label, "args", f"{arg.name!r}: choice {key!r} {_NAME_A_KERNEL}, got {kernel!r}")
            continue
        if key == "else":
            test, bound = "else", 0.0
        elif isinstance(key, str):
            m = _CONDITION.fullmatch(key.strip())
            test, bound = m.group(1), float(m.group(2))
        else:
            test, bound = "==", float(key)
        found.append((key if key == "else" else f"{test} {bound:g}", kernel))
        conditions.append((test, bound))
    if any(t == "else" for t, _ in conditions[:-1]):
        errors.add(line, label, "args", f"{arg.name!r}: 'else' must be the last choice, for the values no "
                   "condition before it takes")
    return Selector(arg.name, tuple(found), tuple(conditions)) if found else None


def _tables(name, kernels, registrations, line, own_dtypes, family, opmath_ok, label, errors) -> tuple[DtypeTable, ...]:
    """The op's dtype tables: its `dtypes` for the kernels without their own, then one per
    `str` choice that gives its own (checked as `dtypes` is), all of bool results or none."""
    tables = [DtypeTable(registrations, tuple(k for k in kernels if k not in own_dtypes), f"{name}_spec",
                         line=line)]
    for kernel, (value, shown, spec, spec_line) in own_dtypes.items():
        regs = _check_dtypes(spec, family, opmath_ok, label, spec_line, errors)
        if not regs:
            continue
        table = DtypeTable(regs, (kernel,), f"{name}_{kernel}_spec", shown, spec_line)
        if registrations and table.bool_output != tables[0].bool_output:
            errors.add(spec_line, label, "args", f"choice {value!r}: its dtypes give "
                       f"{'only' if table.bool_output else 'not only'} bool results, the op's `dtypes` "
                       f"{'only' if tables[0].bool_output else 'not only'} bool; a comparison's choices all "
                       "give bool, and other ops' none")
        tables.append(table)
    return tuple(tables)


def _check_functor(source, kernels, label, line, errors) -> str | None:
    if source is None or (isinstance(source, str) and not source.strip()):
        errors.add(line, label, "functor", "is empty: write the op's Metal math, its operator() templates, "
                   f"or the whole 'struct {kernels[0]}_functor' (`mpsgen new` leaves it empty for you)")
        return None
    if not isinstance(source, str):
        errors.add(line, label, "functor", "expected Metal source: an operator() body or a whole struct")
        return None
    structs = _structs(source)
    wanted = [f"{k}_functor" for k in kernels]
    missing = [w for w in wanted if w not in structs]
    if structs and missing:
        errors.add(line, label, "functor",
                   f"defines struct {', '.join(structs)}; expected {' and '.join(repr('struct ' + w) for w in wanted)}"
                   + ("" if len(wanted) > 1 else " or only the operator() definitions"))
        return None
    if not structs and len(wanted) > 1:
        errors.add(line, label, "functor", f"the 'str' choices select several functors: define "
                   f"{', '.join('struct ' + w for w in wanted)}")
        return None
    body = source.strip("\n")
    if structs:
        return body  # the whole struct(s), as written
    indented = "\n".join(("  " + l) if l.strip() else "" for l in body.splitlines())
    return f"struct {wanted[0]} {{\n{indented}\n}};"


@functools.lru_cache(maxsize=16)  # _check_functor, then _functor_line, ask for the same entry
def _structs(source: str) -> tuple[str, ...]:
    """Names of the structs a functor source defines (comments ignored)."""
    if "struct" not in source:  # most functors are operator() bodies: no need to strip comments
        return ()
    code = _COMMENT.sub("", source)
    return tuple(_STRUCT.findall(code))


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)
_STRUCT = re.compile(r"\bstruct\s+(\w+)")


OPMATH_FAMILIES = ("binary", "ternary")  # REGISTER_OPMATH_BINARY_OP / REGISTER_OPMATH_TERNARY_OP


def _check_dtypes(spec, family, opmath_ok, label, line, errors) -> tuple[Registration, ...]:
    if not isinstance(spec, list) or not spec:
        errors.add(line, label, "dtypes",
                   f"expected a list of groups {sorted(GROUPS)} or {{in: T, out: T}} pairs")
        return ()
    item_lines = getattr(spec, "item_lines", [line] * len(spec))
    regs: list[Registration] = []
    for item, item_line in zip(spec, item_lines):
        if isinstance(item, str):
            group = GROUPS.get(item)
            if group is None:
                errors.add(item_line, label, "dtypes",
                           f"unknown dtype group {item!r}; expected one of {sorted(GROUPS)} "
                           f"or a pair {{in: T, out: T}}{_float8_note([item])}")
                continue
            if group.opmath and not opmath_ok:
                errors.add(item_line, label, "dtypes",
                           f"group {item!r} computes in opmath, which torch's macros offer for "
                           f"{' and '.join(OPMATH_FAMILIES)} ops only, and for binary ops without "
                           f"params (this op is {family})")
                continue
            regs += [Registration(i, o, group.opmath, item_line) for i, o in group.pairs]
        elif isinstance(item, dict):
            unknown = set(item) - {"in", "out", "opmath"}
            if unknown or "in" not in item or "out" not in item:
                errors.add(item_line, label, "dtypes",
                           f"a pair needs keys 'in' and 'out' (and optional 'opmath'), got {dict(item)}")
                continue
            bad = [yaml_source.short(item[k], quote=False) for k in ("in", "out")
                   if not isinstance(item[k], str) or item[k] not in DTYPES]
            if bad:
                errors.add(item_line, label, "dtypes",
                           f"unknown dtype {', '.join(bad)}; expected one of {sorted(DTYPES)}{_float8_note(bad)}")
                continue
            opmath = item.get("opmath", False)
            if not isinstance(opmath, bool) or (opmath and not opmath_ok):
                errors.add(item_line, label, "dtypes",
                           f"'opmath' is a boolean, for {' and '.join(OPMATH_FAMILIES)} ops only")
                continue
            regs.append(Registration(item["in"], item["out"], opmath, item_line))
        else:
            errors.add(item_line, label, "dtypes", f"expected a group name or a pair, got {item!r}")
    seen: dict[str, int] = {}
    for r in regs:
        if r.input in seen:
            # torch's castout host_names are keyed on the input dtype alone
            errors.add(r.line, label, "dtypes",
                       f"input dtype {r.input!r} is registered more than once (first on line {seen[r.input]})")
        seen.setdefault(r.input, r.line)
    return tuple(regs)


def _check_derivatives(spec, schema, args, label, line, errors) -> tuple[Derivative, ...]:
    tensors = [a.name for a in args if a.kind == "Tensor"]
    if not isinstance(spec, dict) or not spec:
        errors.add(line, label, "derivatives",
                   f"expected a mapping from Tensor arguments ({', '.join(tensors)}) to formulas, "
                   "e.g. {self: grad * result.conj()}")
        return ()
    allowed = FORMULA_NAMES | {a.name for a in args}
    key_lines = getattr(spec, "key_lines", {})
    found = []
    for arg, formula in spec.items():
        item_line = key_lines.get(arg, line)
        if arg not in tensors:
            errors.add(item_line, label, "derivatives",
                       f"{arg!r} is not a Tensor argument of {schema.name}; expected one of {tensors}")
            continue
        if not isinstance(formula, str) or not formula.strip():
            errors.add(item_line, label, "derivatives", f"the formula for {arg!r} must be a C++ expression")
            continue
        checked = formulas.check(formula)  # one C++ expression (formulas.py)
        if isinstance(checked, str):
            errors.add(item_line, label, "derivatives", f"the formula for {arg!r} {checked}")
            continue
        names = set(checked.names)
        unknown = sorted(names - allowed)
        if unknown:
            errors.add(item_line, label, "derivatives",
                       f"the formula for {arg!r} uses unknown name(s) {', '.join(unknown)}; a formula may use "
                       f"grad, result and the arguments ({', '.join(a.name for a in args)}), and call "
                       "ATen's functions (derivatives.yaml's C++) and handle_r_to_c")
            continue
        found.append(Derivative(arg, checked.text, item_line, frozenset(names)))
    return tuple(found)


def _check_tolerances(spec, registrations, label, line, errors) -> tuple[Tolerance, ...]:
    expected = "expected a list of {dtype: T, rtol: number, atol: number, reason: text}"
    if not isinstance(spec, list):
        errors.add(line, label, "tolerances", expected)
        return ()
    registered = {r.input for r in registrations}
    found = []
    for item, item_line in zip(spec, getattr(spec, "item_lines", [line] * len(spec))):
        number = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool) and 0 <= v < 1  # noqa: E731
        if not (isinstance(item, dict) and set(item) == {"dtype", "rtol", "atol", "reason"}):
            errors.add(item_line, label, "tolerances", f"{expected}, got {yaml_source.short(item)}")
        elif not isinstance(item["dtype"], str) or item["dtype"] not in registered:
            errors.add(item_line, label, "tolerances", f"dtype {yaml_source.short(item['dtype'])} is not registered "
                       "for this op")
        elif not (number(item["rtol"]) and number(item["atol"])):
            errors.add(item_line, label, "tolerances", "rtol and atol are numbers in [0, 1)")
        elif not isinstance(item["reason"], str) or not item["reason"].strip():
            errors.add(item_line, label, "tolerances", "a looser tolerance needs a non-empty reason")
        else:
            found.append(Tolerance(item["dtype"], float(item["rtol"]), float(item["atol"]), item["reason"].strip()))
    return tuple(found)


def _check_gaps(spec, registrations, label, line, errors) -> tuple[Gap, ...]:
    """`gaps:` the dtypes torch's MPS kernel supports that the entry leaves out, each with why
    (a group name stands for its input dtypes)."""
    expected = ("a list of {dtype: T or a group, reason: text}: dtypes torch's MPS kernel supports that this op "
                "does not register")
    if not isinstance(spec, list):
        errors.add(line, label, "gaps", f"expected {expected}")
        return ()
    registered, gaps = {r.input for r in registrations}, []
    for item in spec:
        item_line = getattr(item, "line", line)
        if not isinstance(item, dict) or set(item) != {"dtype", "reason"}:
            errors.add(item_line, label, "gaps", f"expected {expected}, got {item!r}")
            continue
        name, reason = item["dtype"], item["reason"]
        dtypes = None if not isinstance(name, str) else [name] if name in DTYPES else \
            [i for i, _ in GROUPS[name].pairs] if name in GROUPS else None
        if not isinstance(reason, str) or not reason.strip():
            errors.add(item_line, label, "gaps", "a gap needs a non-empty reason")
        elif dtypes is None:
            errors.add(item_line, label, "gaps", f"unknown dtype or group {name!r}; expected one of "
                       f"{sorted(DTYPES)} or {sorted(GROUPS)}")
        elif bad := [d for d in dtypes if d in registered or any(g.dtype == d for g in gaps)]:
            errors.add(item_line, label, "gaps", f"dtype {bad[0]!r} is "
                       + ("registered for this op" if bad[0] in registered else "listed twice"))
        else:
            gaps += [Gap(d, " ".join(reason.split())) for d in dtypes]
    return tuple(gaps)


def _check_xfails(spec, registrations, label, line, errors) -> tuple[XFail, ...]:
    if not isinstance(spec, list):
        errors.add(line, label, "xfail", "expected a list of {dtype: T, reason: text[, samples: [name, ...]]}")
        return ()
    registered = {r.input for r in registrations}
    xfails = []
    for item in spec:
        item_line = getattr(item, "line", line)
        if not isinstance(item, dict) or not {"dtype", "reason"} <= set(item) <= {"dtype", "reason", "samples"}:
            errors.add(item_line, label, "xfail",
                       f"expected {{dtype: T, reason: text[, samples: [name, ...]]}}, got {item!r}")
        elif not isinstance(item["dtype"], str) or item["dtype"] not in registered:
            errors.add(item_line, label, "xfail",
                       f"dtype {item['dtype']!r} is not registered for this op")
        elif not isinstance(item["reason"], str) or not item["reason"].strip():
            errors.add(item_line, label, "xfail", "an xfail needs a non-empty reason")
        elif not isinstance(item.get("samples", []), list) or not all(
                isinstance(x, str) and x for x in item.get("samples", [])):
            errors.add(item_line, label, "xfail", "'samples' is a list of sample names such as 'reference[64]'")
        else:
            xfails.append(XFail(item["dtype"], item["reason"].strip(), tuple(item.get("samples", []))))
    return tuple(xfails)
