"""Load a kernel entry of ops.yaml (an op whose `compute:` gives a Metal compute kernel) into a
ComputeOp. Every problem is an error naming its ops.yaml line, the op and the key.

    - func: row_sum(Tensor self) -> Tensor
      dtypes: [float]                      # the template dtype T: one kernel per dtype
      reference: mpsgen.references.row_sum
      samples: [{self: [5, 100]}, {self: [0, 3]}]
      compute:
        outputs: {out: {shape: "[*self.shape[:-1]]"}}
        grid: [out.numel() * 256]          # threads (dispatchThreads)
        threadgroup: [256]
        threadgroup_memory: {partial: {type: float, length: 32}}
        body: |
          ...

docs/registry.md ("Kernel entries") says what each key means.
"""
from __future__ import annotations

import json
import re

from torchgen.model import BaseTy, BaseType, FunctionSchema

from . import names, sizes, yaml_source
from .kernel_signature import (POSITION_ATTRIBUTES, ParameterError, balanced, parse_parameter,
                               position_type_error, split_top)
from .compute_aten import aten_variants
from .compute_variants import derivatives as read_derivatives, own_schemas
from .schema import read_torch_has_mps
from .compute_model import (REFERENCE, TEMPLATE, ComputeCheck, ComputeOp, ComputeScalar, ComputeTensor, GroupMemory, SampleTensor,
                            buffer_name, metal_sizeof)
from .dtypes import DTYPES, GROUPS
from .errors import Errors
from .kernels import functor_line
from .model import Location
from .opinfo_names import check_opinfo

ENTRY_KEYS = {"func", "dtypes", "reference", "opinfo", "samples", "compute", "implements", "checks", "torch_has_mps",
              "derivatives"}
COMPUTE_KEYS = {"body", "function", "outputs", "tensors", "grid", "threadgroup", "threadgroup_memory", "indices"}
OUTPUT_KEYS = {"shape", "dtype", "init"}
CHECK_KEYS = {"require", "message", "error"}
CHECK_ERRORS = ("RuntimeError", "IndexError", "ValueError", "TypeError", "NotImplementedError")
SAMPLE_TENSOR_KEYS = {"shape", "low", "high", "noncontiguous"}
_SCALARS = {BaseTy.int: "int", BaseTy.float: "float", BaseTy.bool: "bool"}


def load_entry(entry, errors: Errors) -> ComputeOp | None:
    line = entry.line
    n_before = len(errors.messages)

    def line_of(key: str, within=entry) -> int:
        return within.key_lines.get(key, within.line)

    func = entry.get("func")
    try:
        schema = FunctionSchema.parse(func)
    except Exception as e:  # torchgen raises AssertionError/RuntimeError
        errors.add(line_of("func"), func, "func", f"not a valid schema: {func!r} ({e})")
        return None
    label = str(schema.name)
    for key in sorted(set(entry) - ENTRY_KEYS, key=str):
        errors.add(line_of(key), label, yaml_source.key_name(key),
                   f"unknown key for a kernel entry; expected one of {sorted(ENTRY_KEYS)}")
    for key in ("dtypes", "reference"):
        if key not in entry:
            errors.add(line, label, key, "missing; a kernel entry needs func, dtypes, reference and compute")
    compute = entry["compute"]
    if not isinstance(compute, yaml_source.Mapping):
        errors.add(line_of("compute"), label, "compute", f"expected a mapping with keys {sorted(COMPUTE_KEYS)}")
        return None
    for key in sorted(set(compute) - COMPUTE_KEYS, key=str):
        errors.add(line_of(key, compute), label, f"compute.{yaml_source.key_name(key)}",
                   f"unknown key; expected one of {sorted(COMPUTE_KEYS)}")

    inputs, scalars = _arguments(schema, label, line_of("func"), errors)
    fixed = _input_dtypes(compute.get("tensors", {}), inputs, label, line_of("tensors", compute), errors)
    outputs = _outputs(schema, compute.get("outputs"), inputs, scalars, label, compute, errors)
    tensors = tuple(ComputeTensor(n, False, fixed.get(n, TEMPLATE)) for n in inputs) + outputs
    dtypes = _dtypes(entry.get("dtypes"), label, line_of("dtypes"), errors)
    every = {t.name for t in tensors}
    ints = {s.name for s in scalars if s.schema_type == "int"}
    grid = _launch(compute, "grid", [f"{outputs[0].name}.numel()"] if outputs else ["1"], every, ints, label, errors)
    group = _launch(compute, "threadgroup", [f"max(1, min(max_threads, {grid[0]}))"] if grid else ["1"], every, ints, label,
                    errors)
    memory = _group_memory(compute.get("threadgroup_memory", {}), every, ints, label,
                           line_of("threadgroup_memory", compute), errors)
    for m in memory:
        unknown = [t for t in dtypes if metal_sizeof(m.type, t) is None]
        if unknown:
            errors.add(line_of("threadgroup_memory", compute), label, "compute.threadgroup_memory",
                       f"'{m.name}': {m.type!r} is not a Metal scalar or vector type, or opmath_t<...> of one, for "
                       f"T = {', '.join(unknown)}")
    if not any(t.dtype == TEMPLATE for t in tensors if not t.output) and tensors:
        errors.add(line_of("func"), label, "compute.tensors", "at least one input Tensor has the template dtype T, "
                   "which chooses the kernel")
    body, function, signature = compute.get("body", ""), compute.get("function", ""), ()
    if ("body" in compute) == ("function" in compute):
        errors.add(line_of("compute"), label, "compute", "expected the kernel as either 'body' (its body; the "
                   "signature is made from the arguments) or 'function' (a whole templated kernel function)")
    elif not isinstance(body or function, str) or not (body or function).strip():
        key = "body" if "body" in compute else "function"
        errors.add(line_of(key, compute), label, f"compute.{key}", "expected Metal code")
    elif function:
        signature = _signature(function, functor_line(function, line_of("function", compute)) + 1, str(schema.name.name),
                               tensors, scalars, memory, label, errors)
    reference = entry.get("reference")
    if not isinstance(reference, str) or "." not in reference:
        errors.add(line_of("reference"), label, "reference", f"expected a dotted Python path, got {reference!r}")
    opinfo = entry.get("opinfo") or ""
    if opinfo and (reason := check_opinfo(opinfo)):
        errors.add(line_of("opinfo"), label, "opinfo", reason)
    samples = _samples(entry.get("samples", []), inputs, scalars, label, line_of("samples"), errors)
    checks = _checks(entry.get("checks", []), inputs, scalars, label, line_of("checks"), errors)
    indices = _indices(compute.get("indices", {}), inputs, fixed, ints, label, line_of("indices", compute), errors)
    implements, variants, torch_runs_mps = entry.get("implements", ""), (), False
    since = read_torch_has_mps(entry, "", label, line_of, errors)
    if since and not implements:
        errors.add(line_of("torch_has_mps"), label, "torch_has_mps", "'torch_has_mps' steps an `implements: aten` "
                   "entry aside for torch's own MPS kernel; this entry does not implement an aten op")
    if implements != "" and implements != "aten":
        errors.add(line_of("implements"), label, "implements", f"expected 'aten' (the entry registers kernels for "
                   f"torch's own aten::<op>), got {implements!r}")
    elif implements:
        variants, torch_runs_mps = aten_variants(schema, outputs, inputs[0] if inputs else "", since, label,
                                                 line_of("func"), errors)
    own = () if implements else own_schemas(schema, outputs, inputs[0] if inputs else "")
    formulas = read_derivatives(entry, schema, outputs, dtypes, implements, label, line_of("derivatives"), errors)
    if not samples and not opinfo:
        errors.add(line, label, "samples", "a kernel entry without 'opinfo' needs 'samples' to be tested on")
    taken = {n: "argument" for n in [*inputs, *(s.name for s in scalars)]}
    for t in outputs:
        taken[t.name] = "output"
    for m in memory:
        if m.name in taken:
            errors.add(line_of("threadgroup_memory", compute), label, "compute.threadgroup_memory",
                       f"'{m.name}' is already the name of an {taken[m.name]}")
    if len(errors.messages) > n_before:
        return None
    return ComputeOp(schema=schema, loc=Location(errors.file, line), reference=reference, opinfo=opinfo,
                     dtypes=dtypes, tensors=tensors, scalars=scalars, group_memory=memory, grid=grid,
                     threadgroup=group, body=body, body_line=functor_line(body, line_of("body", compute)) + 1,
                     samples=samples, function=function, implements=implements, aten_variants=variants,
                     torch_has_mps=since, torch_runs_mps=torch_runs_mps, own_schemas=own, derivatives=formulas,
                     checks=checks, indices=indices,
                     function_line=functor_line(function, line_of("function", compute)) + 1 if function else 0,
                     signature=signature)


def _signature(function, first_line, name, tensors, scalars, memory, label, errors):
    """The parameters of the function's `kernel void <op>(...)`, each bound by its name: a
    [[buffer(i)]] to a tensor, a Scalar or a tensor's layout (`self_sizes`), a [[threadgroup(i)]]
    to the i-th of `threadgroup_memory`."""
    found = list(re.finditer(r"\bkernel\s+void\s+(\w+)\s*\(", function))
    line = first_line + (function[:found[0].start()].count("\n") if found else 0)
    if len(found) != 1 or found[0].group(1) != name or not re.search(r"template\s*<\s*typename\s+T\s*>\s*$",
                                                                         function[:found[0].start()] if found else ""):
        errors.add(line, label, "compute.function", f"expected one `template <typename T> kernel void {name}(...)`: "
                   "the kernel, named as the op, templated on the dtype T (one instantiation per dtype)")
        return ()
    params, _ = balanced(function, found[0].end(), "(", ")")
    try:
        signature = tuple(parse_parameter(p) for p in split_top(params))
    except ParameterError as e:
        errors.add(line, label, "compute.function", str(e))
        return ()
    tensor_names, scalar_names = {t.name for t in tensors}, {s.name for s in scalars}
    buffers = sorted(p.index for p in signature if p.attribute == "buffer")
    if buffers != list(range(len(buffers))):
        errors.add(line, label, "compute.function", f"the [[buffer(i)]] indices are {buffers}: expected 0 to "
                   f"{len(buffers) - 1}, each once")
    for p in signature:
        if p.attribute in POSITION_ATTRIBUTES and (wrong := position_type_error(p)):
            at = re.search(rf"\b{re.escape(p.name)}\s*\[\[\s*{p.attribute}\b", function)
            errors.add(first_line + function[:at.start()].count("\n") if at else line, label, "compute.function", wrong)
        if p.attribute == "buffer" and buffer_name(p.name, tensor_names, scalar_names) is None:
            errors.add(line, label, "compute.function", f"[[buffer({p.index})]] `{p.declaration}`: a buffer is named as "
                       f"a Tensor or Scalar argument or output ({', '.join(sorted(tensor_names | scalar_names))}) or a "
                       "tensor's <name>_sizes, _strides, _ndim or _numel, which the host binds there")
        if p.attribute == "buffer" and p.name in scalar_names and not re.fullmatch(
                r"(?:const\s+)?constant\s+(?:const\s+)?(long|int|uint|ulong|short|ushort|char|uchar|float|bool)\s*&\s*\w+",
                p.declaration):
            errors.add(line, label, "compute.function", f"`{p.declaration}`: a Scalar is a `constant X&` of a Metal "
                       "scalar type")
        if p.attribute == "threadgroup" and (p.index >= len(memory) or memory[p.index].name != p.name):
            errors.add(line, label, "compute.function", f"[[threadgroup({p.index})]] `{p.declaration}`: expected the "
                       f"{p.index}th entry of threadgroup_memory ({', '.join(m.name for m in memory) or 'none'})")
    return signature


def _arguments(schema, label, line, errors):
    inputs, scalars = [], []
    if schema.arguments.out or schema.name.name.inplace:
        errors.add(line, label, "func", "a kernel entry is a functional op for now (no out= or in-place schema)")
    for a in schema.arguments.flat_all:
        if a.type == BaseType(BaseTy.Tensor) and a.annotation is None:
            inputs.append(a.name)
        elif isinstance(a.type, BaseType) and a.type.name in _SCALARS:
            scalars.append(ComputeScalar(a.name, _SCALARS[a.type.name]))
        else:
            errors.add(line, label, "func", f"argument '{a.name}' is {a.type}: a kernel entry takes Tensors, "
                       "int, float and bool")
    return inputs, tuple(scalars)


def _input_dtypes(spec, inputs, label, line, errors) -> dict[str, str]:
    if not isinstance(spec, dict):
        errors.add(line, label, "compute.tensors", "expected a mapping of input Tensor to its Metal dtype")
        return {}
    found = {}
    for name, dtype in spec.items():
        if name not in inputs:
            errors.add(line, label, "compute.tensors", f"'{name}' is no Tensor argument ({', '.join(inputs)})")
        elif dtype not in DTYPES:
            errors.add(line, label, "compute.tensors", f"'{name}': {dtype!r} is no Metal dtype ({', '.join(DTYPES)})")
        else:
            found[name] = dtype
    return found


def _outputs(schema, spec, inputs, scalars, label, compute, errors) -> tuple[ComputeTensor, ...]:
    line = compute.key_lines.get("outputs", compute.line)
    returns = schema.returns
    names_ = [r.name or ("out" if len(returns) == 1 else "") for r in returns]
    if not returns or any(r.type != BaseType(BaseTy.Tensor) for r in returns) or "" in names_:
        errors.add(line, label, "func", "a kernel entry returns Tensors, named when there are several "
                   "(`-> (Tensor mantissa, Tensor exponent)`)")
        return ()
    if not isinstance(spec, dict) or set(spec) != set(names_):
        errors.add(line, label, "compute.outputs", f"expected a mapping of each output ({', '.join(names_)}) to its "
                   "{shape, dtype, init}")
        return ()
    ints = {s.name for s in scalars if s.schema_type == "int"}
    found = []
    for name in names_:
        out = spec[name]
        init = out.get("init") if isinstance(out, dict) else None
        copies = isinstance(init, str)
        if not isinstance(out, dict) or set(out) - OUTPUT_KEYS or ("shape" not in out and not copies):
            errors.add(line, label, f"compute.outputs.{name}", f"expected keys {sorted(OUTPUT_KEYS)}, shape required "
                       "(unless the output starts as a copy of an input, `init: <input>`)")
            continue
        if copies and (init not in inputs or out.get("shape", f"{init}.shape") != f"{init}.shape"
                       or out.get("dtype", TEMPLATE) != TEMPLATE):
            errors.add(line, label, f"compute.outputs.{name}.init", f"an output starting as a copy of an input names "
                       f"an input Tensor ({', '.join(inputs)}) of the template dtype, and has its shape; got "
                       f"init: {init!r}")
            continue
        out = {"shape": f"{init}.shape", **out} if copies else out
        try:  # `reference`: as the entry's reference shapes its result (every kernel entry has one)
            out["shape"] == REFERENCE or sizes.shape_to_cpp(out["shape"], set(inputs), ints)
        except sizes.SizeError as e:
            errors.add(line, label, f"compute.outputs.{name}.shape", str(e))
            continue
        dtype = out.get("dtype", TEMPLATE)
        if dtype != TEMPLATE and dtype not in DTYPES:
            errors.add(line, label, f"compute.outputs.{name}.dtype", f"expected T or a Metal dtype, got {dtype!r}")
            continue
        if init is not None and not copies and (isinstance(init, bool) or not isinstance(init, (int, float))):
            errors.add(line, label, f"compute.outputs.{name}.init", f"expected a number or an input's name, got {init!r}")
            continue
        found.append(ComputeTensor(name, True, dtype, out["shape"], init))
    return tuple(found)


def _dtypes(spec, label, line, errors) -> tuple[str, ...]:
    items = spec if isinstance(spec, list) else []
    found = []
    for item in items:
        if isinstance(item, str) and item in GROUPS and not GROUPS[item].opmath:
            found += [i for i, o in GROUPS[item].pairs if i == o]
        elif isinstance(item, str) and item in DTYPES:
            found.append(item)
        elif isinstance(item, dict) and set(item) == {"in", "out"} and item["in"] == item["out"] in DTYPES:
            found.append(item["in"])  # one dtype where a group has its name: {in: float, out: float}
        else:
            errors.add(line, label, "dtypes", f"{yaml_source.short(item)} is no Metal dtype ({', '.join(DTYPES)}) "
                       "or group of them (float, integer, complex, unsigned), or {in: X, out: X} for the dtype X alone")
    if not items:
        errors.add(line, label, "dtypes", "expected a list of Metal dtypes or groups: the template dtypes T")
    return tuple(dict.fromkeys(found))


def _launch(compute, key, default, tensors, ints, label, errors) -> tuple[str, ...]:
    spec = compute.get(key, default)
    line = compute.key_lines.get(key, compute.line)
    if not isinstance(spec, list) or not 1 <= len(spec) <= 3:
        errors.add(line, label, f"compute.{key}", "expected a list of one to three sizes (x, y, z)")
        return ()
    for item in spec:
        try:
            sizes.size_to_cpp(item, tensors, ints, launch=True)
        except sizes.SizeError as e:
            errors.add(line, label, f"compute.{key}", str(e))
            return ()
    return tuple(str(s) for s in spec)


def _group_memory(spec, tensors, ints, label, line, errors) -> tuple[GroupMemory, ...]:
    if not isinstance(spec, dict):
        errors.add(line, label, "compute.threadgroup_memory", "expected a mapping of name to {type, length}")
        return ()
    found = []
    for name, m in spec.items():
        if not (isinstance(m, dict) and set(m) == {"type", "length"} and isinstance(m["type"], str)):
            errors.add(line, label, "compute.threadgroup_memory", f"'{name}': expected {{type: a Metal type, length: "
                       "a size}}")
            continue
        if problem := names.check_cpp_name(name):
            errors.add(line, label, "compute.threadgroup_memory", f"'{name}': {problem}")
            continue
        try:
            sizes.size_to_cpp(m["length"], tensors, ints, launch=True)
        except sizes.SizeError as e:
            errors.add(line, label, "compute.threadgroup_memory", f"'{name}'.length: {e}")
            continue
        found.append(GroupMemory(name, m["type"], str(m["length"])))
    return tuple(found)


def _samples(spec, inputs, scalars, label, line, errors):
    """Each sample: every Tensor argument's shape, and every Scalar's value."""
    if not isinstance(spec, list):
        errors.add(line, label, "samples", "expected a list of {tensor: shape, scalar: value} mappings")
        return ()
    kinds = {s.name: s.schema_type for s in scalars}
    found = []
    for item in spec:
        ok = isinstance(item, dict) and set(item) == set(inputs) | set(kinds) and all(
            _sample_tensor(item[n]) is not None for n in inputs) and all(
            (type(item[n]) is bool) if k == "bool" else (type(item[n]) is int) if k == "int"
            else type(item[n]) in (int, float) for n, k in kinds.items())
        if not ok:
            errors.add(line, label, "samples", f"each sample maps every Tensor argument ({', '.join(inputs)}) to a "
                       "shape such as [5, 100] or {shape, low, high, noncontiguous}"
                       f"{' and every Scalar (' + ', '.join(kinds) + ') to a value' if kinds else ''}"
                       f", got {yaml_source.short(item)}")
            continue
        found.append(tuple((n, _sample_tensor(item[n]) if n in inputs else item[n]) for n in [*inputs, *kinds]))
    return tuple(found)


def _sample_tensor(value) -> SampleTensor | None:
    """A sample's Tensor: its shape, or {shape, low, high, noncontiguous}; None if it is neither."""
    spec = dict(value) if isinstance(value, dict) else {"shape": value}
    shape, low, high = spec.get("shape"), spec.get("low"), spec.get("high")
    number = lambda v: v is None or (type(v) in (int, float))  # noqa: E731
    if set(spec) - SAMPLE_TENSOR_KEYS or not isinstance(shape, list) or not all(type(d) is int and d >= 0 for d in shape) \
            or not number(low) or not number(high) or type(spec.get("noncontiguous", False)) is not bool:
        return None
    return SampleTensor(tuple(shape), low, high, spec.get("noncontiguous", False))


def _checks(spec, inputs, scalars, label, line, errors) -> tuple[ComputeCheck, ...]:
    """`checks:` [{require: a condition of sizes, message: text with {size} holes, error: IndexError}]."""
    ints = {s.name for s in scalars if s.schema_type == "int"}
    floats = {s.name for s in scalars if s.schema_type == "float"}
    if not isinstance(spec, list):
        errors.add(line, label, "checks", "expected a list of {require, message, error}")
        return ()
    found = []
    for item in spec:
        if not isinstance(item, dict) or set(item) - CHECK_KEYS or not {"require", "message"} <= set(item) \
                or not isinstance(item["message"], str) or item.get("error", "RuntimeError") not in CHECK_ERRORS:
            errors.add(getattr(item, "line", line), label, "checks", "expected {require: a condition, message: its "
                       f"error's text, error: one of {', '.join(CHECK_ERRORS)} (RuntimeError if left out)}}, got "
                       f"{yaml_source.short(item)}")
            continue
        try:
            cpp = sizes.condition_to_cpp(item["require"], set(inputs), ints, floats)
            message = []
            for i, part in enumerate(re.split(r"\{([^{}]*)\}", item["message"])):
                message.append(sizes.size_to_cpp(part, set(inputs), ints) if i % 2 else json.dumps(part))
        except sizes.SizeError as e:
            errors.add(getattr(item, "line", line), label, "checks", str(e))
            continue
        found.append(ComputeCheck(str(item["require"]), cpp, tuple(m for m in message if m != '""'),
                                  item.get("error", "RuntimeError"), getattr(item, "line", line), item["message"]))
    return tuple(found)


def _indices(spec, inputs, fixed, ints, label, line, errors) -> tuple[tuple[str, str], ...]:
    """`indices: {index: self.numel()}`: the Tensor's values index that many elements."""
    if not isinstance(spec, dict):
        errors.add(line, label, "compute.indices", "expected a mapping of an index Tensor to the size it indexes")
        return ()
    found = []
    for name, size in spec.items():
        if fixed.get(name) != "long":
            errors.add(line, label, "compute.indices", f"'{name}' is no input Tensor of dtype long (`tensors: "
                       f"{{{name}: long}}`)")
            continue
        try:
            found.append((name, sizes.size_to_cpp(size, set(inputs), ints)))
        except sizes.SizeError as e:
            errors.add(line, label, "compute.indices", f"'{name}': {e}")
    return tuple(found)

