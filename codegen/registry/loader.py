"""Load ops.yaml into the model, collecting every error with its file:line.

The pipeline of one entry reads top to bottom in `_load_entry`: the schema first (schema.py),
then its arguments (arguments.py), functor and dtypes (kernels.py), derivatives (formulas.py)
and what the tests expect (expectations.py); then each op's Scalar overloads are attached.
Nothing here writes files; `load()` either returns a valid Registry or raises RegistryError
listing all problems found.
"""
from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from torchgen.model import FunctionSchema

from . import compute, names, yaml_source
from .argmodel import schema_args
from .arguments import (check_args, check_checks, check_dtype_defaults, check_given, check_mask,
                        check_result_dtype, check_zero_divisor)
from .dtypes import DTYPES, GROUPS
from .errors import Errors, RegistryError
from .expectations import check_gaps, check_tolerances, check_xfails
from .formulas import check_derivatives
from .kernels import OPMATH_FAMILIES, check_dtypes, check_functor, functor_line, dtype_tables
from .model import Derivative, Location, Op, Overload, Registry
from .opinfo_names import check_opinfo
from .schema import IDENT, check_implements, check_schema

__all__ = ["load", "RegistryError"]

# YAML values that remember their lines (yaml_source.py)
_Mapping = yaml_source.Mapping

TOP_KEYS = {"namespace", "ops"}


OP_KEYS = {"func", "functor", "dtypes", "reference", "opinfo", "xfail", "derivatives", "args", "kernel",
           "alpha_check", "checks", "tolerances", "implements", "replaces", "torch_has_mps", "given", "mask", "gaps", "out_dtype",
           "zero_divisor", "dtype_defaults", "result_dtype"}


OVERLOAD_KEYS = {"func", "reference", "opinfo", "xfail", "derivatives", "out_dtype"}


# `out_dtype:` how out= relates to the result dtype: cast to it (TensorIterator's binary and
# *_float ops), or exact, as torch's unary-op iterators (check_all_same_dtype) and its
# generated out= of composite ops (add.Scalar_out) require; {exact: [dtypes]}: exact for
# those input dtypes only (torch's abs computes complex inputs into a temporary, then casts)
OUT_DTYPES = ("cast", "exact")


_OUT_DTYPE_HELP = ("expected 'exact' (out= must have the result dtype, as torch's neg.out refuses another), "
                   "'cast' (the default), or a mapping of {exact: [input dtypes or groups]} and/or "
                   "{complex: input} (a complex out= of a complex input must have the input's dtype, as torch's abs.out)")


_NOT_DIFFERENTIABLE = ("{op} kernels produce only bool or integer results, or a factory's (an op with "
                       "layout, device or pin_memory, as full_like), which autograd does not differentiate; "
                       "remove 'derivatives'")


REQUIRED_OP_KEYS = ("func", "functor", "dtypes", "reference")


_DOTTED = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)+\Z")


def load(path: str | Path, data: bytes | None = None) -> Registry:
    """`data`: the file's bytes, if the caller already read them (so they cannot change between)."""
    path = Path(path)
    display = path.name
    errors = Errors(display)
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
    compute_ops: list = []  # kernel entries (codegen/registry/compute.py)
    overloads: list[_PendingOverload] = []
    first_seen: dict[str, int] = {}
    file_names: dict[str, tuple[str, int]] = {}  # lower-case op name -> (qualified name, line)
    rejected: set[str | None] = set()  # base names of ops with errors
    for entry, entry_line in zip(entries, entry_lines):
        if not isinstance(entry, _Mapping):
            errors.add(entry_line, None, "ops", "each entry of 'ops' must be a mapping such as "
                       f"'- func: exp(Tensor self) -> Tensor', got {yaml_source.short(entry)}")
            continue
        if "compute" in entry:
            loaded = compute.load_entry(entry, errors)
            if loaded is None:
                continue
            problem = names.check_op_name(loaded.name)
            other = first_seen.get(loaded.qualified_name) or file_names.get(loaded.name.lower(), (None, None))[1]
            if problem or other:
                errors.add(loaded.loc.line, loaded.qualified_name, "func",
                           problem or f"the op at {display}:{other} already names the files {loaded.name}.metal, ...")
                continue
            first_seen[loaded.qualified_name] = loaded.loc.line
            file_names[loaded.name.lower()] = (loaded.qualified_name, loaded.loc.line)
            compute_ops.append(loaded)
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

    ops = [_resolve_shared(op, ops, errors) for op in ops]
    kernel_lines: dict[str, int] = {}
    for op in ops:
        for k in dict.fromkeys([op.name, *op.own_kernels]):
            if k in kernel_lines:
                errors.add(op.loc.line, op.qualified_name, "kernel" if k == op.name else "args",
                           f"kernel name '{k}' is already used by the op at {display}:{kernel_lines[k]} "
                           "(kernel and file names must be unique: set 'kernel:' to another name)")
            kernel_lines.setdefault(k, op.loc.line)
    ops = _attach_overloads(ops, [ov for ov in overloads if str(ov.schema.name.name.base) not in rejected], errors)
    if errors.messages:
        raise RegistryError(errors.messages)
    return Registry(namespace=namespace, ops=tuple(ops), path=str(path), compute_ops=tuple(compute_ops))


def _load_entry(entry, errors: Errors) -> Op | Overload | None:
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
            family = check_schema(schema, name, line_of("func"), errors, is_overload)
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
    if "kernel" in entry and not (isinstance(kernel, str) and IDENT.fullmatch(kernel)):
        errors.add(line_of("kernel"), label, "kernel", f"expected a C++ identifier naming the kernels, got {kernel!r}")
        kernel = None
    params, selector, own_dtypes = (), None, {}
    if "args" in entry and (is_overload or family is None):
        if is_overload:
            errors.add(line_of("args"), label, "args", "a Scalar overload runs its op's kernels; 'args' belongs there")
    elif family is not None and not is_overload:
        params, selector, own_dtypes = check_args(entry.get("args"), args, family, label, line_of("args"), errors)
    n_given_errors = len(errors.messages)
    given = check_given(entry, args, bool(params or selector), label, line_of, errors) \
        if family is not None and not is_overload else ()
    given_ok = len(errors.messages) == n_given_errors  # else the functors' names cannot be known
    kernels = selector.kernels if selector else list(dict.fromkeys(k for _, k in given)) if given else [kernel]
    # no kernels: every `str` choice was refused above, so the functors' names are unknown; a
    # choice running another entry's kernel (`{op: digamma}`) finds its functor there
    own = [k for k in kernels if not selector or k not in {s for s, _, _ in selector.shared}]
    functor = check_functor(entry.get("functor"), own, label, line_of("functor"), errors) \
        if "functor" in entry and kernel and given_ok and own else None
    opmath_ok = family in OPMATH_FAMILIES and (family == "ternary" or not params)
    registrations = check_dtypes(entry.get("dtypes"), family, opmath_ok, label, line_of("dtypes"), errors) \
        if "dtypes" in entry else ()
    tables = dtype_tables(kernel, kernels, registrations, line_of("dtypes"), own_dtypes, family, opmath_ok, label,
                     errors) if kernel and given_ok else ()
    checks = check_checks(entry["checks"], args, label, line_of("checks"), errors) \
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

    derivatives = check_derivatives(entry["derivatives"], schema, args, label, line_of("derivatives"), errors) \
        if "derivatives" in entry and schema is not None else None
    implements, replaces, aten_variants, torch_has_mps, torch_runs_mps = check_implements(entry, schema, family, label, line_of, errors)
    mask = check_mask(entry, args, family, bool(params or selector or given), label, line_of, errors) \
        if "mask" in entry and schema is not None and not is_overload else ""
    zero_divisor = check_zero_divisor(entry, args, label, line_of("zero_divisor"), errors) \
        if "zero_divisor" in entry and schema is not None and not is_overload else ""
    result_like = check_result_dtype(entry, args, label, line_of("result_dtype"), errors) \
        if "result_dtype" in entry and schema is not None and not is_overload else ""
    dtype_defaults = check_dtype_defaults(entry["dtype_defaults"], args, label, line_of("dtype_defaults"), errors) \
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
                                line_of("xfail"), loc, derivatives, out_dtype, _complex_out_input(entry))
    every = [r for t in tables for r in t.registrations]
    xfails = check_xfails(entry.get("xfail", []), every, label, line_of("xfail"), errors)
    tolerances = check_tolerances(entry.get("tolerances", []), every, label, line_of("tolerances"), errors)
    gaps = check_gaps(entry.get("gaps", []), every, label, line_of("gaps"), errors)
    if len(errors.messages) > n_before:
        return None
    op = Op(schema=schema, reference=reference, opinfo=opinfo, xfails=xfails, loc=loc,
            derivatives=derivatives or (), name=kernel, family=family, functor=functor,
            tables=tables, params=params, selector=selector, given=given, alpha_check=alpha_check,
            # a `mask:` op's out= takes only the result dtype unless it says otherwise (torch's where)
            exact_out=_exact_inputs("exact" if mask and out_dtype is None else out_dtype,
                                    [r for t in tables for r in t.registrations]),
            complex_out_input=bool(_complex_out_input(entry)),
            checks=checks, mask=mask, zero_divisor=zero_divisor, dtype_defaults=dtype_defaults,
            result_like="" if dtype_arg else result_like, dtype_arg=dtype_arg,
            tolerances=tolerances, gaps=gaps, implements=implements, replaces=replaces, aten_variants=aten_variants,
            torch_has_mps=torch_has_mps, torch_runs_mps=torch_runs_mps,
            functor_line=functor_line(entry["functor"], line_of("functor")))
    if op.derivatives and not op.differentiable:
        errors.add(line_of("derivatives"), label, "derivatives", _NOT_DIFFERENTIABLE.format(op="this op's"))
        return None
    return op


def _resolve_shared(op: Op, ops: list[Op], errors: Errors) -> Op:
    """A choice running another entry's kernel (`0: {op: digamma}`): that entry's one kernel, which
    reads no params, of the op's family, registered for every dtype the choice may run it with.
    The choice's kernel name becomes the entry's kernel's."""
    if not op.shared_kernels:
        return op
    by_name = {o.qualified_name: o for o in ops}
    resolved = {}
    for name, owner_name, line in op.selector.shared:
        owner = by_name.get(owner_name)
        why = ("names no op of this file" if owner is None or owner is op else
               "selects among several kernels" if owner.selector or owner.given else
               f"reads params ({', '.join(p.name for p in owner.params)}); a shared kernel reads none"
               if owner.params else
               f"is {owner.family}, this op {op.family}" if owner.family != op.family else "")
        if not why:
            theirs = {(r.input, r.output, r.opmath) for r in owner.tables[0].registrations}
            missing = [r for r in op.table(name).registrations if (r.input, r.output, r.opmath) not in theirs]
            if missing:
                why = ("does not register " + ", ".join(f"{r.input} -> {r.output}" for r in missing) +
                       f", which this op's dtypes run through it (line {op.table(name).line})")
        if why:
            errors.add(line, op.qualified_name, "args",
                       f"choice {{op: {owner_name}}}: {owner_name!r} {why}; expected an entry with one kernel "
                       "and no params that registers the dtypes this choice runs it for")
            continue
        resolved[name] = owner.name
    if not resolved:
        return op
    rename = lambda k: resolved.get(k, k)  # noqa: E731
    sel = op.selector
    selector = dataclasses.replace(
        sel, choices=tuple((v, rename(k)) for v, k in sel.choices),
        shared=tuple((resolved[k], owner, line) for k, owner, line in sel.shared if k in resolved))
    tables = tuple(dataclasses.replace(t, kernels=tuple(rename(k) for k in t.kernels)) for t in op.tables)
    return dataclasses.replace(op, selector=selector, tables=tables)


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
    complex_out: bool | None = None  # `out_dtype: {complex: input}`; None: not given, the op's

    @property
    def qualified_name(self) -> str:
        return str(self.schema.name)


def _attach_overloads(ops: list[Op], overloads: list[_PendingOverload], errors: Errors) -> list[Op]:
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
        xfails = check_xfails(ov.xfail, op.registrations, label, ov.xfail_line, errors)
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
            exact_out=op.exact_out if ov.out_dtype is None else _exact_inputs(ov.out_dtype, op.all_registrations),
            complex_out_input=op.complex_out_input if ov.complex_out is None else ov.complex_out))
    return [dataclasses.replace(op, overloads=tuple(attached[op.name])) if attached[op.name] else op for op in ops]


def _check_out_dtype(entry, label, line, errors) -> str | tuple[str, ...] | None:
    """`out_dtype:` as 'cast', 'exact' or the input dtypes it is exact for; None if not given."""
    spec = entry.get("out_dtype")
    if "out_dtype" not in entry or spec in OUT_DTYPES:
        return spec
    if not (isinstance(spec, dict) and spec and set(spec) <= {"exact", "complex"}
            and spec.get("complex", "input") == "input"
            and (isinstance(spec.get("exact"), list) and spec["exact"] or "exact" not in spec)):
        errors.add(line, label, "out_dtype", f"{_OUT_DTYPE_HELP}, got {yaml_source.short(spec)}")
        return None
    found: list[str] = []
    for name in spec.get("exact", ()):
        if isinstance(name, str) and name in GROUPS:
            found += [i for i, _ in GROUPS[name].pairs]
        elif isinstance(name, str) and name in DTYPES:
            found.append(name)
        else:
            errors.add(line, label, "out_dtype", f"unknown dtype {yaml_source.short(name)} in 'exact'; expected "
                       f"one of {sorted(DTYPES)} or a group of {sorted(GROUPS)}")
    return tuple(dict.fromkeys(found))


def _complex_out_input(entry) -> bool | None:
    """`out_dtype: {complex: input}`; None when the entry gives no out_dtype (an overload: its op's)."""
    if "out_dtype" not in entry:
        return None
    spec = entry["out_dtype"]
    return isinstance(spec, dict) and spec.get("complex") == "input"


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


def _match_overload(ov: _PendingOverload, op: Op, errors: Errors) -> tuple[str, ...] | None:
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
