"""torch.library.opcheck over a list of samples, tracing once per structure class.

opcheck runs four checks. Two are cheap and run on every sample: test_schema (the schema's
mutation and alias annotations) and test_faketensor (the fake kernel's shape, dtype and
strides against the real result). The other two, test_autograd_registration and
test_aot_dispatch_dynamic (an AOTAutograd trace with dynamic shapes, forward and backward,
compared with eager), cost a trace each, about 0.7 s. What they check of an elementwise op
depends on the sample's *structure*, not its sizes or values: sizes are symbols in the trace,
and the values are compared with torch sample by sample by op-output-match. So they run on
the first sample of each structure class (`structure`):

- per Tensor argument: dtype, rank, each dimension as 0, 1 or a size symbol shared by equal
  sizes (the tracer specializes 0 and 1 and gives equal sizes one symbol, which is also the
  broadcast pattern), the stride class (contiguous, transposed, expanded, sliced, offset),
  and requires_grad;
- per other argument: its kind (int, float, complex Scalar; None), or its value where the
  value is not a number (a bool, a string, a dtype, a memory format);
- the overload (functional, out=, in-place) is the op itself.

The AOT traces of one call of opcheck_calls are batched: one trace calls the op once per
class representative, through torch's own checker (aot_autograd_check, which opcheck's
test_aot_dispatch_dynamic calls through safe_aot_autograd_check), and compares every output
and gradient with eager. Each call is traced with symbolic sizes as it would be alone; the one
difference is that equal sizes of different calls share a symbol too. Should it fail, every
class is traced again on its own, and the failure names the class.

safe_aot_autograd_check clones every input first, because aot_autograd_check calls the function
several times and it must not change its inputs. Here only the arguments the op's schema
writes are cloned (out=, in-place's self); the others are passed as they are, as a user's
compiled code passes them. The trace then sees their layouts (a clone makes an expanded or
sliced input dense, and opcheck traces that), and is lighter by the clones' symbolic strides.

benchmarks/opcheck_batch.py, 40 (entry, dtype) pairs of 244-246 classes, AMD EPYC family 25
model 17: one trace of all classes took 0.67-0.71 of the time of a trace per class, both with
torch's clones; cloning only what the op writes, 0.74-0.78 of that again.
"""
from __future__ import annotations

import functools

import torch
from torch._prims_common import is_non_overlapping_and_dense_or_false
from torch.testing._internal.optests.aot_autograd import aot_autograd_check

EVERY_SAMPLE = ("test_schema", "test_faketensor")
PER_CLASS = ("test_autograd_registration",)
BATCHED = "test_aot_dispatch_dynamic"


def _layout(t: torch.Tensor) -> str:
    """The stride class: '' (contiguous), 'transposed(order)', 'expanded(dims)', 'sliced(order)',
    'offset'. The order lists the dimensions from the largest stride to the smallest."""
    if t.layout != torch.strided:
        return str(t.layout)
    big = [d for d in range(t.dim()) if t.shape[d] > 1]
    order = ",".join(str(d) for d in sorted(big, key=lambda d: (-t.stride(d), d)))
    zero = [d for d in big if t.stride(d) == 0]
    if zero:
        return f" expanded({','.join(map(str, zero))})"
    if t.is_contiguous():
        return " offset" if t.storage_offset() else ""
    if is_non_overlapping_and_dense_or_false(t):
        return f" transposed({order})"
    return f" sliced({order})"


def structure(args: tuple, kwargs: dict) -> str:
    """The sample's structure class as a readable name, e.g.
    'float32[a,1] grad, float32[a] transposed(0), int' (sizes > 1 named by symbol, equal sizes alike)."""
    symbols: dict[int, str] = {}

    def size(n: int) -> str:
        if n in (0, 1):
            return str(n)
        return symbols.setdefault(n, "abcdefghijklmnopqrstuvwxyz"[len(symbols) % 26])

    def describe(a) -> str:
        if isinstance(a, torch.Tensor):
            dims = ",".join(size(n) for n in a.shape)
            dtype = str(a.dtype).removeprefix("torch.")
            return f"{dtype}[{dims}]{_layout(a)}{' grad' if a.requires_grad else ''}"
        if isinstance(a, (list, tuple)):
            return "(" + ", ".join(describe(x) for x in a) + ")"
        if isinstance(a, bool) or a is None or not isinstance(a, (int, float, complex)):
            return repr(a)  # a value the trace specializes on: bool, str, dtype, memory format, None
        return type(a).__name__  # a number: its kind
    parts = [describe(a) for a in args] + [f"{k}={describe(v)}" for k, v in kwargs.items()]
    return ", ".join(parts)


def opcheck_samples(op, samples: list) -> dict[str, str]:
    """opcheck_calls on one op: {structure class: the name of the sample that traced it}."""
    return {cls: name for (_, cls), name in opcheck_calls([(op, s) for s in samples]).items()}


def opcheck_calls(calls: list) -> dict[tuple, str]:
    """torch.library.opcheck on every (op, sample): EVERY_SAMPLE's checks on each, PER_CLASS's
    and the AOT trace on the first sample of each (op, structure class). `samples` are (name,
    args, kwargs) objects. Returns {(op, class): the name of the sample that traced it}; a
    failure names the op, the sample and its class."""
    first: dict[tuple, object] = {}
    for op, sample in calls:
        key = (op, structure(sample.args, sample.kwargs))
        _opcheck(op, sample, key[1], EVERY_SAMPLE if key in first else EVERY_SAMPLE + PER_CLASS)
        first.setdefault(key, sample)
    _aot_dispatch_dynamic(first)
    return {key: sample.name for key, sample in first.items()}


def _opcheck(op, sample, cls: str, utils) -> None:
    try:
        torch.library.opcheck(op, sample.args, sample.kwargs, test_utils=utils)
    except Exception as e:
        raise AssertionError(f"{op}: sample {sample.name} (class {cls}): {e}") from e


def _aot_dispatch_dynamic(first: dict) -> None:
    """opcheck's test_aot_dispatch_dynamic on every class at once, only the arguments the op
    writes cloned (the module's docstring)."""
    try:
        aot_check([(op, sample.args, sample.kwargs) for (op, _), sample in first.items()])
    except Exception as batched:
        for (op, cls), sample in first.items():
            try:
                aot_check([(op, sample.args, sample.kwargs)])
            except Exception as e:
                raise AssertionError(f"{op}: sample {sample.name} (class {cls}): {BATCHED}: {e}") from e
        raise AssertionError(f"{BATCHED} failed on the classes {list(first)} traced together, and passed "
                             f"on each alone: {batched}") from batched


def aot_check(calls: list) -> None:
    """torch's AOTAutograd check with dynamic shapes (aot_autograd_check, as
    safe_aot_autograd_check calls it) of every (op, args, kwargs) in one trace; the arguments
    the op writes are cloned for each call (the module's docstring)."""
    def each(*calls):
        results = []
        for op, args, kwargs in calls:
            args, kwargs = _written_copied(op, args, kwargs)
            results.append(op(*args, **kwargs))
        return results
    # without FakeTensorMode's dispatch cache, an optimization only: every class is a shape
    # of its own, so the cache misses, and making its entries cost more than it saved (the
    # 353 classes of add.Tensor, sin, where.self, hypot, polygamma, clamp.Tensor and
    # div.Tensor_mode in all their dtypes: 11.1-11.4 s with it, 10.0-10.4 s without)
    with torch._dynamo.config.patch(fake_tensor_cache_enabled=False):
        aot_autograd_check(each, tuple(calls), {}, dynamic=True, check_gradients="auto",
                           assert_equals_fn=torch.testing.assert_close)


def _written_copied(op, args: tuple, kwargs: dict) -> tuple:
    """args and kwargs with a copy of each Tensor the op's schema writes (out=, in-place's self):
    aot_autograd_check calls the function several times, each on the inputs as they were."""
    names, written = _schema_names(op)
    if not written:
        return args, kwargs
    return (tuple(a.clone() if names[i] in written and isinstance(a, torch.Tensor) else a for i, a in enumerate(args)),
            {k: v.clone() if k in written and isinstance(v, torch.Tensor) else v for k, v in kwargs.items()})


@functools.cache
def _schema_names(op) -> tuple[tuple[str, ...], frozenset[str]]:
    """The op's argument names, and those its schema writes: read once per op, not at each of
    the trace's calls."""
    arguments = op._schema.arguments
    return (tuple(a.name for a in arguments),
            frozenset(a.name for a in arguments if a.alias_info is not None and a.alias_info.is_write))


OUT_WITH_GRAD = "functions with out=... arguments don't support automatic differentiation"


def out_refuses_grad(out_op, sample, out: torch.Tensor | None = None) -> str | None:
    """None if the out= overload refuses the sample's inputs that require grad, as torch's own
    out= variants do (VariableType: "functions with out=... arguments don't support automatic
    differentiation"); else what it did. torch's test_autograd_registration cannot see a missing
    Autograd kernel of an mpsgen out= variant: its decomposition at CompositeImplicitAutograd
    passes that check."""
    first = next(a for a in sample.args if isinstance(a, torch.Tensor))
    assert any(isinstance(a, torch.Tensor) and a.requires_grad for a in (*sample.args, *sample.kwargs.values())), \
        f"sample {sample.name}: no input requires grad"
    out = torch.empty(0, dtype=first.dtype) if out is None else out
    try:
        out_op(*sample.args, **sample.kwargs, out=out)
    except RuntimeError as e:
        if OUT_WITH_GRAD in str(e):
            return None
        return f"{out_op}: out= with an input requiring grad did not refuse it as torch does; it raised: {e}"
    return f"{out_op}: out= with an input requiring grad did not refuse it as torch does; it returned"
