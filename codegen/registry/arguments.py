"""An entry's non-Tensor arguments and the keys about its arguments: `args:` (params, `str`
choices, value choices), `given:`, `mask:`, `zero_divisor:`, `result_dtype:`, `dtype_defaults:`
and `checks:`."""
from __future__ import annotations

import re

from . import yaml_source
from .checks import CheckError, message_to_cpp, to_cpp
from .argmodel import CHECK_ERRORS, DEFAULT_PARAM_TYPE, PARAM_TYPES, Check, Param, Selector, transport_of
from .schema import IDENT, OPTION_TYPES


def check_args(spec, op_args, family, label, line, errors) -> tuple[tuple[Param, ...], Selector | None, dict]:
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
        if item == UNREAD:  # in the schema, not in the kernels (_to_copy's non_blocking)
            continue
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
                       f"expected one of {', '.join(PARAM_TYPES)}, or {UNREAD} for an argument the kernels "
                       "do not read")
        elif not isinstance(promotes, bool) or (promotes and a.kind != "Scalar"):
            errors.add(item_line, label, "args", f"{a.name!r}: 'promotes' is a boolean, for Scalar arguments "
                       "(which torch may treat as wrapped numbers)")
        else:
            params.append(Param(a.name, a.kind, a.optional, metal, promotes))
    return tuple(params), check_reads(selector, params, label, line, errors), own_dtypes


# `args: {<name>: unread}`: an argument of the schema that the kernels do not read
UNREAD = "unread"

# what a `str` choice or a `given:` combination maps to
NAME_A_KERNEL = "must name a kernel (a C++ identifier; its functor is '<kernel>_functor')"


_GIVEN_EXAMPLE = "{min max: clamp_tensor, min: clamp_tensor_min, max: clamp_tensor_max}"


def check_given(entry, op_args, has_params, label, line_of, errors) -> tuple[tuple[tuple[str, ...], str], ...]:
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
        if not isinstance(kernel, str) or not IDENT.fullmatch(kernel):
            errors.add(line, label, "given", f"{key!r} {NAME_A_KERNEL}, got {kernel!r}")
            continue
        found.append((combo, kernel))
    families = {}
    for combo, kernel in found:
        n = sum(a.kind == "Tensor" and not a.optional for a in op_args) + len(combo)
        if families.setdefault(kernel, n) != n:
            errors.add(line, label, "given", f"kernel {kernel!r} would read {families[kernel]} and {n} Tensors; "
                       "a kernel has one shape")
    return tuple(found)


def check_mask(entry, op_args, family, has_params, label, line_of, errors) -> str:
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


def check_zero_divisor(entry, op_args, label, line, errors) -> str:
    """`zero_divisor: <name>`: a Tensor after the first whose zeros make an integer result raise
    ZeroDivisionError on the CPU backend, as torch's CPU kernels raise (div's trunc and floor)."""
    tensors = [a for a in op_args if a.kind == "Tensor"]
    divisors = [] if any(a.optional for a in tensors) else [a.name for a in tensors[1:]]
    return _tensor_named(entry, "zero_divisor", divisors, "after the first, of an op without Tensor? arguments",
                         label, line, errors)


def check_result_dtype(entry, op_args, label, line, errors) -> str:
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


def check_dtype_defaults(spec, op_args, label, line, errors) -> tuple[tuple[str, str], ...]:
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


def check_checks(spec, op_args, label, line, errors) -> tuple[Check, ...]:
    kinds = {a.name: (a.kind, a.optional) for a in op_args}
    items = spec if isinstance(spec, list) else [None]
    item_lines = getattr(spec, "item_lines", [line] * len(items))
    found = []
    for item, item_line in zip(items, item_lines):
        if not (isinstance(item, dict) and {"require", "message"} <= set(item) <= {"require", "message", "error"}
                and all(isinstance(v, str) and v.strip() for v in item.values())):
            errors.add(item_line, label, "checks", "expected a list of {require: <condition>, message: <torch's "
                       "error>} (and maybe error: <the exception torch raises>), e.g. "
                       "{require: min is not None or max is not None, message: ...}")
            continue
        error = item.get("error", "RuntimeError")
        if error not in CHECK_ERRORS:
            errors.add(item_line, label, "checks", f"error {error!r}: expected the exception torch raises, one of "
                       f"{', '.join(CHECK_ERRORS)}")
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
        found.append(Check(" ".join(item["require"].split()), cpp, message, cpp_message, item_line, error))
    return tuple(found)


def _check_choices(arg, item, label, line, errors) -> tuple[Selector | None, dict]:
    """The kernel each value of a `str` argument selects; and the kernels that a choice gives
    dtypes of their own ({kernel: (value, how errors show it, dtypes as written, line)}, checked by
    kernels.dtype_tables)."""
    example = "{choices: {none: gelu, tanh: gelu_tanh}}"
    if not (isinstance(item, dict) and set(item) == {"choices"} and isinstance(item["choices"], dict)
            and item["choices"]):
        errors.add(line, label, "args", f"str argument {arg.name!r} needs the kernel each value selects, "
                   f"e.g. {arg.name}: {example}")
        return None, {}
    choices, own_dtypes, reads, others = [], {}, [], []
    value_lines = getattr(item["choices"], "key_lines", {})
    for value, kernel in item["choices"].items():
        value_line = value_lines.get(value, line)
        value = "None" if value is None else value
        if not isinstance(value, str) or not IDENT.fullmatch(value):
            errors.add(value_line, label, "args", f"{arg.name!r}: choice {value!r} is not an identifier")
            continue
        if value == "None" and not arg.optional:
            errors.add(value_line, label, "args", f"{arg.name!r}: a None choice needs an optional 'str?' argument")
            continue
        parsed = _choice(arg, value, kernel, True, label, value_line, errors)
        if parsed is None:
            continue
        kernel, dtypes, read, owner = parsed
        choices.append((value, kernel))
        reads += [(kernel, read)] if read is not None else []
        others += [(kernel, owner, value_line)] if owner else []
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
    return Selector(arg.name, tuple(choices), reads=_one_read_each(reads, arg, label, line, errors),
                    shared=tuple(others)), own_dtypes


_CHOICE_FORMS = ("a kernel name, {{kernel: <name>, params: [<the arguments it reads>]}}"
                 "{dtypes}, or {{op: <another entry>}} (that entry's kernel)")


def _choice(arg, value, item, str_choice, label, line, errors):
    """One choice: (kernel, (its own dtypes, line) or None, the params it reads or None for all,
    the entry whose kernel it runs or ""), or None after an error."""
    forms = _CHOICE_FORMS.format(dtypes=", {kernel: <name>, dtypes: [...]}" if str_choice else "")
    shown = f"{arg.name!r}: choice {yaml_source.short(value) if not isinstance(value, str) else repr(value)}"
    if isinstance(item, str):
        if not IDENT.fullmatch(item):
            errors.add(line, label, "args", f"{shown} {NAME_A_KERNEL}, got {item!r}")
            return None
        return item, None, None, ""
    keys = set(item) if isinstance(item, dict) else None
    allowed = {"kernel", "params"} | ({"dtypes"} if str_choice else set())
    if keys == {"op"}:
        if not isinstance(item["op"], str) or not item["op"].strip():
            errors.add(line, label, "args", f"{shown}: 'op' names another entry of ops.yaml (its func name, "
                       f"such as digamma), got {yaml_source.short(item['op'])}")
            return None
        return item["op"].strip(), None, None, item["op"].strip()  # reads none: Op.kernel_params
    if keys is None or "kernel" not in keys or not keys <= allowed:
        errors.add(line, label, "args", f"{shown} is {forms}, got {yaml_source.short(item)}")
        return None
    kernel = item["kernel"]
    if not isinstance(kernel, str) or not IDENT.fullmatch(kernel):
        errors.add(line, label, "args", f"{shown} {NAME_A_KERNEL}, got {kernel!r}")
        return None
    read = item.get("params")
    if "params" in item and not (isinstance(read, list) and all(isinstance(n, str) for n in read)):
        errors.add(line, label, "args", f"{shown}: 'params' lists the non-Tensor arguments kernel {kernel!r} "
                   f"reads ([] for none), got {yaml_source.short(read)}")
        return None
    dtypes = (item["dtypes"], getattr(item, "key_lines", {}).get("dtypes", line)) if "dtypes" in item else None
    return kernel, dtypes, (tuple(read) if read is not None else None), ""


def _one_read_each(reads, arg, label, line, errors) -> tuple:
    """A kernel chosen by several values reads the same params for each."""
    found = {}
    for kernel, read in reads:
        if found.setdefault(kernel, read) != read:
            errors.add(line, label, "args", f"{arg.name!r}: kernel {kernel!r} is chosen twice with different "
                       f"'params' ({list(found[kernel])} and {list(read)}); a kernel reads one set")
    return tuple(found.items())


def check_reads(selector, params, label, line, errors) -> Selector | None:
    """Each choice's `params:` names params of the op (its non-Tensor arguments the kernels read),
    and forms what a kernel can take: none, one Scalar as the alpha, or all of the op's params
    (its struct)."""
    if selector is None or not selector.reads:
        return selector
    names = [p.name for p in params]
    for kernel, read in selector.reads:
        unknown = [n for n in read if n not in names]
        subset = tuple(p for p in params if p.name in read)
        if unknown:
            errors.add(line, label, "args", f"kernel {kernel!r}: params {unknown} are not arguments the kernels "
                       f"read; expected some of {names}")
        elif transport_of(subset) == "params" and len(subset) != len(params):
            errors.add(line, label, "args", f"kernel {kernel!r} reads {list(read)}: a kernel reads none of the "
                       f"params, one Scalar (its alpha), or all of them ({names}, the op's params struct)")
    return selector


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
    found, conditions, reads, shared = [], [], [], []
    key_lines = getattr(choices, "key_lines", {})
    for key, item in choices.items():
        if isinstance(key, bool) or not (isinstance(key, (int, float)) or key == "else"
                                         or isinstance(key, str) and _CONDITION.fullmatch(key.strip())):
            errors.add(line, label, "args", f"{arg.name!r}: choice {yaml_source.short(key)} is not a value, a "
                       "condition such as '>= 2' (==, !=, <, <=, >, >= and a number) or else")
            continue
        parsed = _choice(arg, key, item, False, label, key_lines.get(key, line), errors)
        if parsed is None:
            continue
        kernel, _, read, owner = parsed
        reads += [(kernel, read)] if read is not None else []
        shared += [(kernel, owner, key_lines.get(key, line))] if owner else []
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
    return Selector(arg.name, tuple(found), tuple(conditions), reads=_one_read_each(reads, arg, label, line, errors),
                    shared=tuple(shared)) if found else None
