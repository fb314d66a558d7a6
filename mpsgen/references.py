"""Oracles for what torch's CPU does not compute: an ops.yaml `reference:` may name one.

Each is torch's own op where torch's CPU has a kernel for the inputs, and otherwise computes
the semantics the entry documents from the definition, exactly, with nothing that depends on
the machine (no float result cast to an integer dtype: out of its range C++ leaves the cast
undefined, and torch's CPU gave 0, a saturated or a wrapped value by CPU and loop).
"""
from __future__ import annotations

import torch

_INTEGRAL_WEIGHT = "For integral input tensors, argument alpha must not be a floating point number."


def lerp(self: torch.Tensor, end: torch.Tensor, weight, *, out: torch.Tensor | None = None):
    """torch.lerp; for integer and bool tensors, self + weight * (end - self) in integers modulo
    2**bits, as torch's MPS lerp computes in the tensors' dtype (its MPSGraph of subtraction,
    multiplication and addition, and lerp.Scalar's `lerp_alpha` kernel after alpha_check, which
    reads a bool tensor's weight as a bool).
    torch's CPU lerp has no integers. Computed with Python's integers, so no intermediate
    overflows; a floating weight of an integer tensor raises, as torch's MPS lerp.Scalar does."""
    if self.is_floating_point() or self.is_complex():
        return torch.lerp(self, end, weight, out=out) if out is not None else torch.lerp(self, end, weight)
    meta = lambda v: v.to("meta") if isinstance(v, torch.Tensor) else v  # noqa: E731
    torch.lerp(meta(self), meta(end), meta(weight))  # torch's own checks: dtypes, shapes
    if isinstance(weight, torch.Tensor):
        if weight.is_floating_point() or weight.is_complex():
            raise RuntimeError(f"lerp: an integer tensor takes an integer weight, got dtype {weight.dtype}")
        tensors = torch.broadcast_tensors(self, end, weight)
    else:
        if not isinstance(weight, (bool, int)):
            if weight not in (0, 1):  # which torch's MPS copies without its alpha_check
                raise RuntimeError(_INTEGRAL_WEIGHT)
            weight = int(weight)
        if self.dtype == torch.bool:  # as torch's MPS kernel reads it: converted to bool
            weight = int(bool(weight))
        tensors = torch.broadcast_tensors(self, end)
    a, b, *w = (t.to(torch.int64).contiguous() if t.dtype != torch.uint64 else t.contiguous() for t in tensors)
    weights = w[0].flatten().tolist() if w else None
    bits = 1 if self.dtype == torch.bool else torch.iinfo(self.dtype).bits
    modulus, signed = 1 << bits, self.dtype.is_signed and self.dtype != torch.bool
    values = []
    for i, (x, y) in enumerate(zip(_unsigned(a), _unsigned(b))):
        v = (x + (weights[i] if weights is not None else weight) * (y - x)) % modulus
        values.append(v - modulus if signed and v >= modulus // 2 else v)
    result = _from_values(values, self.dtype, a.shape)
    if out is not None:
        return out.copy_(result)
    return result


def _unsigned(t: torch.Tensor) -> list[int]:
    """A tensor's values as Python integers (uint64 from its bits: torch's CPU has few uint64 ops)."""
    if t.dtype == torch.uint64:
        return [v % (1 << 64) for v in t.view(torch.int64).flatten().tolist()]
    return t.flatten().tolist()


def _from_values(values: list[int], dtype: torch.dtype, shape) -> torch.Tensor:
    if dtype == torch.uint64:  # values from 2**63 on do not fit torch.tensor's int64
        signed = [v - (1 << 64) if v >= 1 << 63 else v for v in values]
        return torch.tensor(signed, dtype=torch.int64).view(torch.uint64).reshape(shape)
    return torch.tensor(values, dtype=torch.int64).to(dtype).reshape(shape)
