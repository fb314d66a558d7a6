"""What op-output-match checks of an op's variants beside its functional result: out= and
in-place bit for bit with it, torch.library.opcheck, and torch.compile(fullgraph=True). Used in
the aten-override subprocess (mpsgen/aten_overrides.py) and for kernel entries of their own
namespace (mpsgen/compute_harness.py). `C` is the extension, whose launch log says which of our
kernels a call ran."""
from __future__ import annotations

import torch

from .samples import Sample, op_overload


def opcheck_failure(fn, sample: Sample) -> str | None:
    """None if torch.library.opcheck passes on the sample, else its first line of failure."""
    try:
        torch.library.opcheck(fn, sample.args, sample.kwargs)
    except Exception as e:
        return f"{type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''}"
    return None


def compile_failure(C, fn, args, kwargs, eager: tuple) -> str | None:
    """None if torch.compile(fullgraph=True) of the op (aot_eager: torch's meta kernel traces it,
    the graph calls the op, so our kernel) gives the eager result bit for bit and launched our
    kernel; else what went wrong."""
    torch._dynamo.reset()
    compiled = torch.compile(lambda *a, **k: fn(*a, **k), fullgraph=True, backend="aot_eager")
    result, error, launches = call(C, compiled, args, kwargs)
    if error is not None:
        return f"{error[0]}: {error[1]}"
    if not launches:
        return "the compiled graph launched no kernel of ours"
    try:
        torch.testing.assert_close(result, eager[0], rtol=0, atol=0, equal_nan=True)
    except AssertionError as e:
        return f"differs from the eager result: {str(e).splitlines()[0]}"
    return None


def call(C, fn, args, kwargs) -> tuple:
    C.cpu_take_launches()
    try:
        result, error = fn(*args, **kwargs), None
    except Exception as e:
        result, error = None, (type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    return result, error, list(C.cpu_take_launches())


def _variant(C, fn, args, kwargs, expected, written) -> tuple:
    """An out= or in-place call as an Outcome tuple: no result (the functional one stands for
    it), an error if it raised or what it wrote (`written`: the out= tensors or self) differs
    from the functional result in any bit or dtype."""
    _, error, launches = call(C, fn, args, kwargs)
    if error is None:
        try:
            torch.testing.assert_close(written, expected, rtol=0, atol=0, equal_nan=True)
        except AssertionError as e:
            error = ("AssertionError", f"differs from the functional result: {str(e).splitlines()[0]}")
    return None, error, launches


def variants(C, names, args, kwargs, functional, ns: str = "aten") -> dict:
    """out= into empty tensors of the result's dtypes (named as `out_names`, for an op of several
    results), and in-place on a copy of self where the result has self's dtype and shape."""
    done, result = {}, functional[0]
    results = result if isinstance(result, tuple) else (result,)
    if not results or not all(isinstance(r, torch.Tensor) for r in results):
        return done
    if "out" in names:
        outs = {n: torch.empty(0, dtype=r.dtype) for n, r in zip(names.get("out_names", ["out"]), results)}
        written = tuple(outs.values()) if isinstance(result, tuple) else outs.get("out")
        done["out"] = _variant(C, op_overload(ns, names["out"]), args, {**kwargs, **outs}, result, written)
    self_ = args[0] if args and isinstance(args[0], torch.Tensor) else None
    if "inplace" in names and self_ is not None and not isinstance(result, tuple) and self_.dtype == result.dtype \
            and self_.shape == result.shape:
        copy = self_.clone()
        done["inplace"] = _variant(C, op_overload(ns, names["inplace"]), (copy, *args[1:]), kwargs, result, copy)
    return done
