"""What the tests expect of an entry's registrations: `xfail:`, `tolerances:` and `gaps:`."""
from __future__ import annotations

from . import yaml_source
from .dtypes import DTYPES, GROUPS
from .model import Gap, Tolerance, XFail


def check_xfails(spec, registrations, label, line, errors) -> tuple[XFail, ...]:
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


def check_tolerances(spec, registrations, label, line, errors) -> tuple[Tolerance, ...]:
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


def check_gaps(spec, registrations, label, line, errors) -> tuple[Gap, ...]:
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
