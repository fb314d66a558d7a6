"""An entry's `func:`: the schema's argument kinds and names, its family (unary, binary,
ternary by its Tensors), and `implements: aten`'s comparison with aten's own schemas."""
from __future__ import annotations

import difflib
import re

from torchgen.model import BaseTy, BaseType, FunctionSchema, SchemaKind

from . import names
from .aten_schemas import aten_ops
from .errors import Errors
from .opinfo_names import torch_version
from ..torch_versions import minor_of, release
from .model import variant_schemas


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


IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*\Z")  # \Z: `$` would accept a trailing newline


def check_schema(schema: FunctionSchema, name: str, line: int, errors: Errors,
                  is_overload: bool = False) -> str | None:
    # a leading '_' is aten's private ops' (_to_copy); a trailing one names in-place variants
    if not IDENT.fullmatch(name) or name.endswith("_"):
        errors.add(line, name, "func", "op name must be a C++ identifier without a trailing '_' (which names "
                   "the in-place variant)")
    overload = schema.name.overload_name
    if overload and not IDENT.fullmatch(overload):  # torch's schema parser reads an identifier
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
            errors.add(line, name, "func", f"argument '{a.name}' has an alias annotation ({a.type}({a.annotation})): "
                       "a custom op's kernel writes a new tensor and cannot honour it; the functional schema's "
                       "arguments are not aliased (out= and in-place variants are generated)")
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


def _canonical(schema: str) -> str:
    return str(FunctionSchema.parse(schema))


def check_implements(entry, schema, family, label, line_of, errors) -> tuple[str, str, tuple[str, ...], str, bool]:
    """`implements: aten` and `replaces: mps`: the entry's schema must be aten's, and its
    generated out= and in-place variants are registered where aten has them (with the
    schema the generator would write). Replacing a path torch already has on MPS must be
    explicit, and so is torch gaining its own (`torch_has_mps`). Returns (implements, replaces,
    the variants aten has, torch_has_mps, whether the installed torch runs its own kernel)."""
    implements, replaces = entry.get("implements", ""), entry.get("replaces", "")
    if "implements" in entry and implements != "aten":
        errors.add(line_of("implements"), label, "implements",
                   f"expected 'aten' (the entry registers kernels for torch's own aten::<op>), got {implements!r}")
        return "", "", (), "", False
    if "replaces" in entry and (not implements or replaces != "mps"):
        errors.add(line_of("replaces"), label, "replaces",
                   "'replaces: mps' says an 'implements: aten' entry replaces torch's own MPS kernel"
                   + ("" if implements else "; this entry does not implement an aten op"))
        return "", "", (), "", False
    if not implements or schema is None or family is None:
        return "", "", (), "", False
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
                return "", "", (), "", False
            continue  # e.g. special_airy_ai has an out= but no in-place variant
        if _canonical(aten["schema"]) != _canonical(text):
            what = "the schema" if kind == "functional" else f"the generated {kind} variant"
            errors.add(line, label, "func", f"{what} differs from aten's: ops.yaml gives '{_canonical(text)}', "
                       f"aten (native_functions.yaml) declares '{aten['schema']}'")
            return "", "", (), "", False
        found.append(kind)
        if aten["mps"]:
            on_mps.append(aten["mps"])
    since = read_torch_has_mps(entry, replaces, label, line_of, errors)
    installed = release(torch_version())
    if wrong := misdated(since, on_mps, str(schema.name)):
        errors.add(line_of("torch_has_mps"), label, "torch_has_mps", wrong)
    elif on_mps and replaces != "mps" and not since:
        errors.add(line, label, "implements", f"torch already runs this op on MPS ({on_mps[0]}, torch {installed}); "
                   "registering it would replace torch's MPS kernel: add 'replaces: mps' and register every "
                   "dtype torch's MPS kernel supports, or, if torch gained the kernel in a release after the "
                   "entry was written, 'torch_has_mps: <that release>' (mpsgen's kernel then steps aside there)")
    elif replaces and not on_mps:
        errors.add(line_of("replaces"), label, "replaces",
                   f"torch has no MPS kernel for aten::{schema.name} to replace; remove 'replaces'")
    return implements, replaces, tuple(found), since, bool(since and on_mps)


def misdated(since: str, on_mps: list[str], name: str) -> str | None:
    """What is wrong with `torch_has_mps: since` for aten::<name>, which the installed torch runs
    on MPS as `on_mps` says (empty: it does not); None if the release agrees with it."""
    installed = release(torch_version())
    if since and on_mps and minor_of(installed) < minor_of(since):
        return f"torch {installed} already runs this op on MPS ({on_mps[0]}), before {since}: give the first " \
               "release that does"
    if since and not on_mps and minor_of(installed) >= minor_of(since):
        return f"torch {installed} has no MPS kernel for aten::{name}, though 'torch_has_mps' says {since} and " \
               "later have one"
    return None


def read_torch_has_mps(entry, replaces, label, line_of, errors) -> str:
    """`torch_has_mps: "2.15"`: the first torch release with its own MPS kernel for the op. On
    that torch and later, the entry's MPS kernel is not registered (torch's runs); its CPU
    kernels and tests stay. Before it, the entry fills the gap as any other."""
    if "torch_has_mps" not in entry:
        return ""
    since = entry["torch_has_mps"]
    if not isinstance(since, str) or not re.fullmatch(r"[0-9]+\.[0-9]+", since):
        errors.add(line_of("torch_has_mps"), label, "torch_has_mps",
                   f"expected a torch release as a quoted string, like \"2.15\", got {since!r}")
        return ""
    if replaces:
        errors.add(line_of("torch_has_mps"), label, "torch_has_mps",
                   "'replaces: mps' registers mpsgen's kernel over torch's; 'torch_has_mps' steps aside for "
                   "it: give one of them")
        return ""
    return since
