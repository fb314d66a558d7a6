"""The CPU launcher runs the same kernels faster without changing a bit of their results.

support/cpu/kernel_launch.h inlines each kernel into its loop over grid threads, runs the
full tiles of the ILP kernels apart from the last partial one, walks 2D grids row by row,
launches strided kernels row by row and broadcast kernels a repetition at a time, and on
x86-64 picks an AVX2 + F16C variant, or an AVX-512 one, at run time. Each of these must give
the bits the plain per-thread launch gives: compared here against the kernel that handles one
element per thread, across thread counts, and against the variants below the one this CPU runs
(MPSGEN_CPU_ISA=baseline or =avx2, in a subprocess; there NaN payloads aside). A native build
compiles only the variant its machine runs (codegen/build.py cpu_variants): there the lower
variant of a kernel with AVX-512 is its baseline; a build with MPSGEN_CPU_VARIANTS=all, or on a
machine without AVX-512, has the AVX2 ones.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import mpsgen.ops  # loads mpsgen's own ops (the extension and generated/library.py)
import mpsgen._C as ext

ROOT = Path(__file__).resolve().parent.parent
OPS = torch.ops.mpsgen
ILP_THRESHOLD = 1 << 18  # exec_*_kernel's ILP crossover (support/cpu/executor.cpp)
FLOATS = [torch.float32, torch.float16, torch.bfloat16]
METAL = {torch.float32: "float", torch.float16: "half", torch.bfloat16: "bfloat", torch.int32: "int"}


def bits(t: torch.Tensor) -> torch.Tensor:
    """The tensor's raw bits, so NaNs compare too."""
    return t.contiguous().view({1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}[t.element_size()])


def launched(call) -> list[str]:
    ext.cpu_take_launches()
    call()
    return list(ext.cpu_take_launches())


def values(n: int, dtype: torch.dtype, seed: int = 0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(n, generator=g) * 4).to(dtype)


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
@pytest.mark.parametrize("n", [ILP_THRESHOLD + 3, ILP_THRESHOLD + 4, ILP_THRESHOLD + 1])
def test_ilp_kernels_give_the_bits_of_the_one_element_kernels(n, dtype):
    """exp and mul above the ILP threshold (full tiles run apart from the partial last one)
    against the same op on small copies of the head and the tail, which run unary_dense_scalar
    and binary_dense."""
    x, y = values(n, dtype), values(n, dtype, seed=1)
    name = METAL[dtype]
    for op, args, ilp_kernel in [(OPS.exp, (x,), f"exp_dense_{name}_{name}"),
                                 (OPS.mul, (x, y), f"mul_dense_ilp4_{name}_{name}")]:
        assert launched(lambda: op(*args)) == [ilp_kernel]
        whole = op(*args)
        for part in (slice(0, 1000), slice(n - 9, n)):
            assert torch.equal(bits(whole[part]), bits(op(*(a[part].clone() for a in args)))), (op, part)


@pytest.mark.parametrize("dtype", FLOATS + [torch.int32], ids=str)
def test_results_do_not_depend_on_the_thread_count(dtype):
    n = 3 * ILP_THRESHOLD + 5
    x, y = values(n, dtype), values(n, dtype, seed=1)
    calls = [lambda: OPS.add(x, y), lambda: OPS.mul(x, y[:1]), lambda: OPS.exp(x), lambda: OPS.atan2(x, y),
             lambda: OPS.sin(x[::3]), lambda: OPS.lerp(x, y, 0.3) if dtype.is_floating_point else OPS.neg(x)]
    threads = torch.get_num_threads()
    try:
        torch.set_num_threads(1)
        one = [bits(c()) for c in calls]
        torch.set_num_threads(max(2, threads))
        many = [bits(c()) for c in calls]
    finally:
        torch.set_num_threads(threads)
    for i, (a, b) in enumerate(zip(one, many)):
        assert torch.equal(a, b), i


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_a_2d_grid_gives_the_bits_of_the_contiguous_kernel(dtype):
    """unary strided kernels run on a 2D grid, row by row: the same bits as the dense kernel."""
    base = values(300 * 517, dtype).reshape(300, 517)
    view = base[:, 5:500]  # rows with gaps: not coalescable
    assert launched(lambda: OPS.exp(view)) == [f"exp_strided_{METAL[dtype]}_{METAL[dtype]}"]
    assert torch.equal(bits(OPS.exp(view)), bits(OPS.exp(view.contiguous())))
    assert torch.equal(bits(OPS.sigmoid(view.t())), bits(OPS.sigmoid(view.t().contiguous())))
    # three dimensions: the kernel called once per thread (only two are inlined)
    view3 = values(4 * 60 * 517, dtype).reshape(4, 60, 517)[:, ::2, 5:500]
    assert launched(lambda: OPS.exp(view3)) == [f"exp_strided_{METAL[dtype]}_{METAL[dtype]}"]
    assert torch.equal(bits(OPS.exp(view3)), bits(OPS.exp(view3.contiguous())))


def strided_views(dtype: torch.dtype, seed: int) -> list[torch.Tensor]:
    """Non-coalescable views of 1, 2 and 3 dimensions, each over more threads than one
    launch chunk (support/cpu/executor.cpp's kGrain, 16384), in rows that the chunks split."""
    base = values(2 * 300 * 517, dtype, seed).reshape(2, 300, 517)
    return [base.flatten()[::3], base[0, :, 5:500], base[:, :, 7:500].transpose(1, 2)]


@pytest.mark.parametrize("dtype", FLOATS + [torch.int32], ids=str)
def test_strided_launches_row_by_row_give_the_bits_of_the_dense_kernels(dtype):
    """binary and ternary strided kernels run each row as its own 1-D launch (operands moved to
    the row's start): the bits of the dense kernels on contiguous copies, with one thread and
    with two (chunks end inside rows)."""
    threads = torch.get_num_threads()
    try:
        for n_threads in (1, max(2, threads)):
            torch.set_num_threads(n_threads)
            for x, y, w in zip(strided_views(dtype, 0), strided_views(dtype, 1), strided_views(dtype, 2)):
                name = METAL[dtype]
                calls = [(OPS.mul, (x, y), {}, f"mul_strided_{name}_{name}"),
                         (OPS.add, (x, y), {"alpha": 3}, f"add_strided_{name}_{name}_{name}")]
                if dtype.is_floating_point:
                    calls += [(OPS.lerp, (x, y, w), {}, f"lerp_strided_{name}_{name}"),
                              (OPS.addcmul, (x, y, w), {"value": 0.5}, None)]
                for op, args, kwargs, kernel in calls:
                    kernels = launched(lambda: op(*args, **kwargs))
                    assert kernel is None or kernels == [kernel], kernels
                    assert all("_strided" in k for k in kernels), kernels
                    dense = op(*(a.contiguous() for a in args), **kwargs)
                    assert torch.equal(bits(op(*args, **kwargs)), bits(dense)), (op, x.shape, n_threads)
    finally:
        torch.set_num_threads(threads)


@pytest.mark.parametrize("dtype", FLOATS + [torch.int32], ids=str)
def test_rows_contiguous_in_some_operands_only_give_the_bits_of_the_dense_kernels(dtype):
    """A row launch whose rows are contiguous in every operand runs a copy with the strides
    as constants; rows contiguous in one operand and not another (a transposed one), or a
    comparison's bool output (a stride of its own size), must give the dense kernels' bits."""
    rows = values(300 * 517, dtype, 0).reshape(300, 517)[:, 5:500]  # contiguous rows, gaps between
    transposed = values(495 * 300, dtype, 1).reshape(495, 300).t()  # column-major: stride 300
    third = values(300 * 517, dtype, 2).reshape(300, 517)[:, 7:502]
    pairs = [(rows, transposed), (transposed, rows), (rows, third)]
    for x, y in pairs:
        for op, args, kwargs in [(OPS.mul, (x, y), {}), (OPS.add, (x, y), {"alpha": 2}), (OPS.lt, (x, y), {})]:
            assert all("_strided" in k for k in launched(lambda: op(*args, **kwargs)))
            dense = op(*(a.contiguous() for a in args), **kwargs)
            assert torch.equal(bits(op(*args, **kwargs)), bits(dense)), (op, x.stride(), y.stride())
        if dtype.is_floating_point:
            assert torch.equal(bits(OPS.lerp(x, y, third)), bits(OPS.lerp(x.contiguous(), y.contiguous(), third.contiguous())))
    # a unary 2D grid whose output is contiguous and input is not, and the other way round
    expected = OPS.exp(transposed.contiguous())
    assert torch.equal(bits(OPS.exp(transposed, out=torch.empty_like(expected))), bits(expected))
    column_major = torch.empty(495, 300, dtype=expected.dtype).t()
    assert torch.equal(bits(OPS.exp(rows, out=column_major)), bits(OPS.exp(rows.contiguous())))


@pytest.mark.parametrize("dtype", FLOATS + [torch.int32], ids=str)
def test_broadcast_launches_by_repetition_give_the_bits_of_the_dense_kernels(dtype):
    """binary(_alpha)_dense_broadcast(_rhs) run one launch per repetition of the broadcast
    operand: the bits of the dense kernels on the expanded operand, with one thread and two."""
    name = METAL[dtype]
    full, row = values(300 * 517, dtype).reshape(300, 517), values(517, dtype, seed=1)
    cases = [(OPS.mul, (full, row), {}, "_dense_broadcast_"), (OPS.mul, (row, full), {}, "_dense_broadcast_rhs_"),
             (OPS.add, (full, row), {"alpha": 2}, "_dense_broadcast_"),
             (OPS.add, (row, full), {"alpha": 2}, "_dense_broadcast_rhs_")]
    threads = torch.get_num_threads()
    try:
        for n_threads in (1, max(2, threads)):
            torch.set_num_threads(n_threads)
            for op, args, kwargs, form in cases:
                kernels = launched(lambda: op(*args, **kwargs))
                assert len(kernels) == 1 and form in kernels[0] and kernels[0].endswith(name), kernels
                expanded = [a.expand(300, 517).contiguous() for a in args]
                assert torch.equal(bits(op(*args, **kwargs)), bits(op(*expanded, **kwargs))), (op, form, n_threads)
    finally:
        torch.set_num_threads(threads)


_ISA_SCRIPT = """
import sys, torch
sys.path.insert(0, sys.argv[1])
import mpsgen.ops  # loads mpsgen's own ops (the extension and generated/library.py)
from tests.test_cpu_launcher import isa_cases
torch.save(isa_cases(), sys.argv[2])
"""


def isa_cases() -> list[torch.Tensor]:
    """Results that the AVX2 and AVX-512 variants compute with F16C conversions, FMA and
    vectorised loops: half and bfloat arithmetic, lerp, hypot, addcmul, sigmoid, erf, gelu, tanh,
    log, softplus, logaddexp, atan2, sin, cos, tan, complex multiplication, on
    values that include NaN, infinities, zeros and subnormals."""
    out = []
    special = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0, -0.0, 1e-8, -3e-5, 6e-8, 65504.0,
                            65520.0, 1e-40, 3.4e38])
    for dtype in FLOATS:
        x = torch.cat([special, values(4099, torch.float32)]).to(dtype)
        y = torch.cat([special.flip(0), values(4099, torch.float32, seed=1)]).to(dtype)
        w = torch.rand(x.numel(), generator=torch.Generator().manual_seed(2)).to(dtype)
        out += [OPS.add(x, y, alpha=3), OPS.mul(x, y), OPS.sub(x, y), OPS.lerp(x, y, w), OPS.hypot(x, y),
                OPS.addcmul(x, y, w, value=0.7), OPS.sigmoid(x), OPS.exp(x), OPS.mul(x, 2.5),
                OPS.lt(x, y), OPS.maximum(x[::2], y[::2]), OPS.div(x, y, rounding_mode="floor"),
                # fma (erf, gelu) and the shim's vectorised math (tanh, log, softplus, logaddexp, atan2)
                OPS.erf(x), OPS.gelu(x), OPS.tanh(x), OPS.log(x), OPS.softplus(x), OPS.logaddexp(x, y),
                OPS.atan2(x, y), OPS.sin(x), OPS.cos(x), OPS.tan(x), OPS.sin(x * 1e30)]
    # complex: g++ vectorises (a+bi)(c+di) into fmaddsub where the target has FMA
    g = torch.Generator().manual_seed(3)
    z = torch.complex(torch.randn(4099, generator=g), torch.randn(4099, generator=g)) * 1000
    out += [OPS.mul(z, z.flip(0)), OPS.add(z, z.flip(0), alpha=2), OPS.mul(z[::3], z.flip(0)[::3])]
    return out


def _same_bits_as_variant(tmp_path, isa: str) -> None:
    result = tmp_path / f"{isa}.pt"
    env = {**os.environ, "MPSGEN_CPU_ISA": isa}
    subprocess.run([sys.executable, "-c", _ISA_SCRIPT, str(ROOT), str(result)], env=env, check=True, cwd=ROOT)
    theirs = torch.load(result)
    ours = isa_cases()
    assert len(ours) == len(theirs)
    for i, (a, b) in enumerate(zip(ours, theirs)):
        # NaN payloads aside: which NaN operand an operation returns follows the operand
        # order, which the vectoriser may swap (torch and Metal promise no payload either)
        nan = a.isnan() & b.isnan() if a.is_floating_point() else torch.zeros_like(a, dtype=torch.bool)
        assert torch.equal(bits(a)[~nan], bits(b)[~nan]) and torch.equal(a.isnan(), b.isnan()), i


@pytest.mark.skipif(not ext.cpu_use_avx2(), reason="this CPU runs the baseline variant only")
def test_the_variants_give_the_bits_of_the_baseline_variant(tmp_path):
    _same_bits_as_variant(tmp_path, "baseline")


@pytest.mark.skipif(not ext.cpu_use_avx512(), reason="no kernel runs an AVX-512 variant here (no AVX-512, or kernels built by g++)")
def test_avx512_variant_gives_the_bits_of_the_variants_below_it(tmp_path):
    _same_bits_as_variant(tmp_path, "avx2")  # AVX2 where compiled, else the baseline
