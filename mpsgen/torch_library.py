"""What generated/library.py registers with torch.library, for every entry of ops.yaml:

- a fake (meta) kernel: the output's shape, dtype and strides, computed as the
  C++ host (support/host/elementwise.cpp) and its TensorIterator compute them;
- for the out= and in-place variants, a decomposition into the functional op
  (what functionalization, and so torch.compile and torch.export, run).

The kernels and their autograd (generated/autograd.cpp) are C++: everything here
runs only on fake or meta tensors, never on an eager call.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch._prims_common import (ELEMENTWISE_TYPE_PROMOTION_KIND, apply_perm,
                                 compute_elementwise_output_logical_to_physical_perm,
                                 compute_elementwise_output_strides, elementwise_dtypes, invert_perm,
                                 make_contiguous_strides_for)

from .samples import op_overload


@dataclass(frozen=True)
class Spec:
    """An op's dtype rules: the Python twin of the C++ OpSpec in its host stubs."""

    name: str  # "mpsgen::exp"
    origin: str  # "ops.yaml:6"
    int_to_float: bool
    bool_output: bool
    registrations: dict  # input torch.dtype -> output torch.dtype, as the .metal registers them
    alpha_checks: bool = False  # torch's alpha_check (add/sub-style binary ops)
    inputs: tuple = ()  # the Tensor arguments' names, in kernel order
    optional: tuple = ()  # of those, the `Tensor?` ones: None is a value
    given: tuple = ()  # the combinations of Tensor? arguments given that `given:` has kernels for
    given_message: str = ""  # the error for any other combination
    mask: str = ""  # the Tensor argument that is a bool mask (`mask:`): outside type promotion
    result_like: str = ""  # the Tensor argument whose dtype the result has (`result_dtype:`)
    choice: str = ""  # the `str` choice whose own dtypes these are (`rounding_mode='trunc'`), for errors


# --- fake kernels ---------------------------------------------------------------

_NUMBER_DTYPES = ((bool, torch.bool), (int, torch.int64), (float, torch.float64), (complex, torch.complex128))


def dtype_of(x) -> torch.dtype:
    """A tensor's dtype; a Python number's as at::native::wrapped_scalar_tensor makes it.
    (Also a helper of `checks:` conditions, as mpsgen::dtype_of in C++.)"""
    if isinstance(x, torch.Tensor):
        return x.dtype
    return next(d for kind, d in _NUMBER_DTYPES if isinstance(x, kind))


def dtype_max(x: torch.Tensor):
    """The largest finite value of a tensor's dtype, for `checks:` (mpsgen::dtype_max in C++)."""
    if x.dtype == torch.bool:
        return 1
    info = torch.finfo if x.dtype.is_floating_point or x.dtype.is_complex else torch.iinfo
    return info(x.dtype).max


def is_integral(x) -> bool:
    """A Scalar given as an int or a bool, for `checks:` (mpsgen::is_integral in C++, as
    c10::Scalar::isIntegral(/*includeBool=*/true))."""
    return isinstance(x, (bool, int, torch.SymInt, torch.SymBool))


def check_defined(spec: Spec, operands: list) -> None:
    """Every Tensor argument given (the C++ host's check_defined), but the `Tensor?` ones."""
    for name, x in zip(spec.inputs, operands):
        if x is None and name not in spec.optional:
            raise TypeError(f"{spec.name}: argument '{name}' must be a Tensor, not None")


def given_operands(spec: Spec, operands: list) -> list:
    """The operands the kernel reads: all, or for an op with `Tensor?` arguments the ones
    given, which must be a combination `given:` has a kernel for (as the C++ host checks)."""
    if not spec.optional:
        return operands
    present = tuple(name for name, x in zip(spec.inputs, operands) if name in spec.optional and x is not None)
    if present not in spec.given:
        raise RuntimeError(f"{spec.name}: {spec.given_message}")
    return [x for x in operands if x is not None]


def _is_cpu_scalar(x) -> bool:
    return not isinstance(x, torch.Tensor) or (x.dim() == 0 and x.device.type == "cpu")


def _combine(higher: torch.dtype | None, lower: torch.dtype | None) -> torch.dtype | None:
    """c10's combine_categories: a lower-priority operand's dtype counts only where it is of a
    higher category (a float 0-dim beside an integer tensor)."""
    if higher is None or lower is None:
        return higher or lower
    if higher.is_complex:
        return higher
    if lower.is_complex:
        return higher.to_complex() if higher.is_floating_point else lower
    if higher.is_floating_point:
        return higher
    if higher == torch.bool or lower.is_floating_point:
        return torch.promote_types(higher, lower)
    return higher


def _result_type(values: list) -> torch.dtype:
    """at::native::result_type over tensors and numbers: tensors with dimensions, then 0-dim
    tensors, then numbers, each promoted with c10's promoteTypes (which refuses uint16, uint32
    and uint64 beside another dtype with torch's message)."""
    tiers: list[torch.dtype | None] = [None, None, None]
    for v in values:
        if isinstance(v, torch.Tensor):
            tier, dtype = (0 if v.dim() else 1), v.dtype
        else:
            tier, dtype = 2, elementwise_dtypes(v, type_promotion_kind=ELEMENTWISE_TYPE_PROMOTION_KIND.DEFAULT)[1]
        tiers[tier] = dtype if tiers[tier] is None else torch.promote_types(tiers[tier], dtype)
    return _combine(tiers[0], _combine(tiers[1], tiers[2]))


def _compute_dtype(spec: Spec, values: list) -> torch.dtype:
    """The dtype the host computes in: torch's promotion over the tensors and numbers
    (0-dim tensors and Python numbers as scalars), integers to float for *_float ops."""
    common = _result_type(values)
    if spec.int_to_float and not (common.is_floating_point or common.is_complex):
        common = torch.get_default_dtype()
    return common


_OPMATH = {torch.float16: torch.float32, torch.bfloat16: torch.float32, torch.complex32: torch.complex64}


def result_dtype(spec: Spec, operands: list, alpha=None, promoting=(), dtype=None,
                 kernel_scalar=None, opmath_scalars=()) -> torch.dtype:
    """The dtype the kernel produces for these operands, with the C++ host's checks.

    operands: the op's tensor inputs; a Scalar overload's Scalars as Python numbers.
    promoting: the Scalars that take part in type promotion (None when absent).
    dtype: a ScalarType argument's value (`result_dtype:`): the dtype the kernels compute in.
    kernel_scalar: the Scalar the kernels read (REGISTER_*_ALPHA_OP's), which the host converts to
    the computation dtype with c10's range check.
    opmath_scalars: the Scalars of `opmath` params fields, which the host checks against the
    computation dtype itself where it is an integer (its opmath may be wider) and converts to
    its opmath (mpsgen::scalar_as_opmath).
    """
    scalars = [p for p in promoting if p is not None]
    if spec.mask:  # the mask takes no part; the others are cast to their common dtype (torch's where)
        operands = [x for name, x in zip(spec.inputs, operands) if name != spec.mask]
    common = dtype or _compute_dtype(spec, [*operands, *scalars])
    dtypes = [dtype_of(x) for x in operands]
    if (scalars and common != _compute_dtype(spec, operands)) or spec.mask or dtype:
        dtypes = [common]  # a promoting Scalar changed the dtype, a mask, a dtype argument: the host casts to it
    key = dtypes[0] if len(set(dtypes)) == 1 else common  # the dtype that names the kernel
    if key not in spec.registrations:
        registered = ", ".join(str(d).removeprefix("torch.") for d in spec.registrations)
        raise NotImplementedError(f"{spec.name}: no kernel registered for dtype {str(key).removeprefix('torch.')}"
                                  f"{' with ' + spec.choice if spec.choice else ''} "
                                  f"({spec.origin} registers: {registered})")
    if spec.alpha_checks and alpha is not None:
        _check_alpha(spec, common, alpha)
    if kernel_scalar is not None:
        _check_converts(spec, kernel_scalar, common)
    for value in opmath_scalars:
        if value is not None:
            _check_converts(spec, value, _OPMATH.get(common, common))
    return spec.registrations[key]


_TESTS = {"==": lambda v, b: v == b, "!=": lambda v, b: v != b, "<": lambda v, b: v < b,
          "<=": lambda v, b: v <= b, ">": lambda v, b: v > b, ">=": lambda v, b: v >= b, "else": lambda v, b: True}


def check_value_choice(spec: Spec, arg: str, value, conditions) -> None:
    """An int or Scalar argument that selects the kernel by its value must meet one of the
    conditions (as the C++ host checks): ((test, bound), ...), tried in order. A complex value
    with an imaginary part equals no bound and differs from every one; it has no order."""
    if isinstance(value, complex) and value.imag == 0:
        value = value.real
    for test, bound in conditions:
        if isinstance(value, complex) and test not in ("==", "!=", "else"):
            raise ValueError(f"{spec.name}: argument '{arg}' is {value}, a complex value, which has no order: "
                             f"the choice '{arg} {test} {bound:g}' cannot take it")
        if _TESTS[test](value, bound):
            return
    listed = ", ".join(f"{arg} {test} {bound:g}" for test, bound in conditions)
    raise ValueError(f"{spec.name}: argument '{arg}' is {value}, which no kernel takes ({listed})")


def check_choice(spec: Spec, arg: str, value, allowed: list) -> None:
    """A `str` argument's value must be one of the kernels' choices (as the C++ host checks)."""
    # the choice "None" is the optional's None, not the string 'None' (which torch's div refuses)
    if ("None" in allowed) if value is None else (value != "None" and value in allowed):
        return
    listed = ", ".join("None" if v == "None" else f"'{v}'" for v in allowed)
    raise ValueError(f"{spec.name}: argument '{arg}' must be one of {listed}, got "
                     f"{'None' if value is None else repr(value)}")


def _check_alpha(spec: Spec, common: torch.dtype, alpha) -> None:
    if isinstance(alpha, bool) and common != torch.bool:
        raise RuntimeError(f"{spec.name}: Boolean alpha only supported for Boolean results.")
    if not isinstance(alpha, (bool, int)) and not (common.is_floating_point or common.is_complex):
        raise RuntimeError(f"{spec.name}: For integral input tensors, argument alpha must not be a "
                           "floating point number.")
    if isinstance(alpha, complex) and not common.is_complex:
        raise RuntimeError(f"{spec.name}: For non-complex input tensors, argument alpha must not be a "
                           "complex number.")


def _check_converts(spec: Spec, value, dtype: torch.dtype) -> None:
    """torch's where makes its Scalars tensors of the result dtype (at::scalar_tensor, as the C++
    host does): made here on CPU, outside fake mode, for the same range check and message."""
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():
        try:
            torch.scalar_tensor(value, dtype=dtype, device="cpu")
        except RuntimeError as e:
            raise RuntimeError(f"{spec.name}: {e}") from None


def _check_options(spec: Spec, here: torch.device, rank: int, layout=None, device=None, pin_memory=None,
                   memory_format=None) -> None:
    """aten's *_like options that kernels writing where they read can honour (as the C++ host checks);
    rank: the result's, which a channels-last memory format requires as empty_like does."""
    for fmt, needed, name in ((torch.channels_last, 4, "channels_last"),
                              (torch.channels_last_3d, 5, "channels_last_3d")):
        if memory_format == fmt and rank != needed:
            raise RuntimeError(f"{spec.name}: required rank {needed} tensor to use {name} format")
    if layout is not None and layout != torch.strided:
        raise RuntimeError(f"{spec.name}: a layout other than torch.strided is not supported; "
                           "the kernels write a strided result")
    if pin_memory:
        raise RuntimeError(f"{spec.name}: pin_memory=True is not supported; the result is on the inputs' device")
    if device is not None:
        device = torch.device(device)
        if device.type != here.type or (device.index is not None and device.index != (here.index or 0)):
            raise RuntimeError(f"{spec.name}: device {device} is not the inputs' device {here}; "
                               "the kernels write where they read")


def fake_elementwise(spec: Spec, operands: list, alpha=None, promoting=(), choice=None,
                     converted=(), options=None, kernel_scalar=None, opmath_scalars=()) -> torch.Tensor:
    """A new output as the C++ host makes it: broadcast shape, TensorIterator's
    stride order, the registered result dtype, on the first non-CPU-scalar's device.
    choice: (argument, value, {allowed value: the Spec of the dtypes its kernel registers}) of a
    `str` argument that selects the kernel. converted: a `mask:` op's Scalars, which must fit
    the result dtype (as torch's where converts them). options: the result's dtype (a ScalarType
    argument), layout, device, pin_memory and memory_format, as far as the schema takes them.
    kernel_scalar: the Scalar the kernels read (REGISTER_*_ALPHA_OP's), which must fit the
    computation dtype. opmath_scalars: see result_dtype."""
    options = options or {}
    check_defined(spec, operands)
    operands = given_operands(spec, operands)
    if choice is not None:
        arg, value, specs = choice
        check_choice(spec, arg, value, list(specs))
        spec = specs["None" if value is None else value]
    dtype = result_dtype(spec, operands, alpha, promoting, options.get("dtype"), kernel_scalar, opmath_scalars)
    if spec.result_like:  # aten's kernel allocates its output like this input (mish_backward)
        like = operands[spec.inputs.index(spec.result_like)].dtype
        if not torch.can_cast(dtype, like):
            raise RuntimeError(f"{spec.name}: result type {dtype} can't be cast to the desired output type {like}")
        dtype = like
    for value in converted:
        _check_converts(spec, value, dtype)
    tensors = [x for x in operands if isinstance(x, torch.Tensor)]
    device = next((t.device for t in tensors if not _is_cpu_scalar(t)), tensors[0].device)
    for i, t in enumerate(tensors):
        if t.device != device and not _is_cpu_scalar(t):
            raise RuntimeError(f"{spec.name}: expected all tensors on one device, but input {i} is on "
                               f"{t.device} and input 0 on {device}")
    _check_options(spec, device, max(t.dim() for t in tensors), **{k: v for k, v in options.items() if k != "dtype"})
    shape = torch.broadcast_shapes(*(t.shape for t in tensors))
    memory_format = options.get("memory_format")
    if memory_format not in (None, torch.preserve_format):  # a new result laid out as empty_like would
        return torch.empty(shape, dtype=dtype, device=device, memory_format=memory_format)
    return torch.empty_strided(shape, _output_strides(tensors, shape), dtype=dtype, device=device)


class _Broadcast:
    """A tensor as broadcast to `shape`, as far as torch's stride-order rule reads it (shape,
    stride(), ndim, numel()): a fake kernel that expanded its operands paid a dispatch for each,
    which under a dynamic-shape trace was a third of the trace's time."""

    def __init__(self, t: torch.Tensor, shape):
        pad = len(shape) - t.dim()
        self.shape, self.ndim = tuple(shape), len(shape)
        self._stride = tuple(0 if i < pad or (t.shape[i - pad] == 1 and shape[i] != 1) else t.stride(i - pad)
                             for i in range(len(shape)))

    def stride(self):
        return self._stride

    def numel(self):
        return math.prod(self.shape)


def _output_strides(tensors: list, shape) -> tuple:
    """TensorIterator's output strides for operands broadcast to `shape`: those of
    torch._prims_common.compute_elementwise_output_strides on the expanded operands, whose
    short cuts (rank 0 or 1, one operand) come first."""
    if len(shape) <= 1:
        return (1,) * len(shape)
    views = [t for t in tensors if not _is_cpu_scalar(t)]  # 0-dim CPU tensors do not count, as in TensorIterator
    if len(views) == 1:  # the only operand with dimensions: of the result's shape
        return compute_elementwise_output_strides(views[0])
    perm, _ = compute_elementwise_output_logical_to_physical_perm(*(_Broadcast(t, shape) for t in views),
                                                                  _skip_checks=True)
    return tuple(apply_perm(make_contiguous_strides_for(apply_perm(shape, perm)), invert_perm(perm)))


# --- out= and in-place variants ---------------------------------------------------

def _check_castable(name: str, result: torch.Tensor, out: torch.Tensor) -> None:
    if not torch.can_cast(result.dtype, out.dtype):
        raise RuntimeError(f"{name}: result type {result.dtype} can't be cast to the desired output type "
                           f"{out.dtype}")


def register_variants(lib: torch.library.Library, name: str, out: str, inplace: str | None,
                      self_index: int = 0, exact_out: bool | set = False, complex_out_input: bool = False) -> None:
    """Decompositions of the out= and in-place variants of op `name`
    (inplace None: the op has none, as a `mask:` op).

    self_index: where the in-place variant's first argument (the Tensor it writes) stands
    among the functional op's positional arguments: polygamma_(self, n) is polygamma(n, self).
    exact_out: out= must have the result's dtype, no cast (a `mask:` op, as torch's where; ops.yaml
    `out_dtype: exact`, as torch's neg.out); a set: only when the first Tensor has one of those
    dtypes (`out_dtype: {exact: [...]}`: torch's abs casts into out= for complex inputs only).
    complex_out_input: a complex out= of a complex first Tensor must have its dtype (`out_dtype:
    {complex: input}`: torch's abs.out computes complex -> complex into a complex out=).

    The decompositions sit at CompositeImplicitAutograd: eager CPU/MPS calls keep
    running the C++ kernels (a backend kernel wins over it); functionalization,
    fake tensors and meta tensors decompose.
    """
    functional = op_overload(lib.ns, name)
    out_name, inplace_name = f"{lib.ns}::{out}", f"{lib.ns}::{inplace}"  # for messages

    def inplace_decomposition(self, *args, **kwargs):
        result = functional(*args[:self_index], self, *args[self_index:], **kwargs)
        if self.is_complex() and not result.is_complex() and result.dtype != torch.bool:
            # as the C++ host (mpsgen::check_inplace) and torch's abs_
            raise RuntimeError(f"{inplace_name}: In-place {name.split('.')[0]} is not supported for complex "
                               "tensors (its result is real)")
        if result.shape != self.shape:
            raise RuntimeError(f"{inplace_name}: output with shape {list(self.shape)} doesn't match the "
                               f"broadcast shape {list(result.shape)}")
        _check_castable(inplace_name, result, self)
        return self.copy_(result)

    def out_decomposition(*args, out, **kwargs):
        if out is None:
            raise TypeError(f"{out_name}: argument 'out' must be a Tensor, not None")
        result = functional(*args, **kwargs)
        if out.device != result.device:
            # TensorIterator's check; a meta out= would otherwise take a CPU result's copy_ silently
            raise RuntimeError(f"{out_name}: Attempting to copy from device {result.device} to device "
                               f"{out.device}, but cross-device copies are not allowed!")
        first = next((a for a in args if isinstance(a, torch.Tensor)), None)
        exact = exact_out is True or (bool(exact_out) and first is not None and first.dtype in exact_out)
        if exact and out.dtype != result.dtype:
            raise RuntimeError(f"{out_name}: Expected out type to be {result.dtype} but got {out.dtype}")
        if complex_out_input and first is not None and first.dtype.is_complex and out.dtype.is_complex \
                and out.dtype != first.dtype:
            raise RuntimeError(f"{out_name}: Found dtype {out.dtype} but expected {first.dtype}")
        _check_castable(out_name, result, out)
        if out.shape != result.shape:
            # as at::native::resize_output, then the layout TensorIterator gives a new output;
            # functionalization's resize_ takes concrete sizes: a symbolic shape is specialized here
            out.resize_([int(s) for s in result.shape])
            out.as_strided_([int(s) for s in result.shape], [int(s) for s in result.stride()])
        return out.copy_(result)

    lib.impl(out, out_decomposition, "CompositeImplicitAutograd")
    if inplace is not None:
        lib.impl(inplace, inplace_decomposition, "CompositeImplicitAutograd")
