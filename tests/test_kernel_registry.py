"""The CPU backend's kernels are exactly what torch's REGISTER_* macros instantiate.

The expected host_names follow c10/metal/indexing.h's naming scheme
(NAME_<variant>_<OUT>_<IN>[_<ALPHA>]), written out here independently of the build step
that reads them back from the preprocessed .metal.
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

import mpsgen._C as ext
import mpsgen.ops  # noqa: F401  (loads the ops: torch.ops.mpsgen.*, the fake kernels)
from mpsgen.codegen.build import torch_include
from mpsgen.codegen.registry.loader import load
from mpsgen.codegen.torch_versions import gives

REGISTRY = load(Path(__file__).resolve().parent.parent / "ops.yaml")

UNARY = ["dense_{o}_{i}", "dense_scalar_{o}_{i}", "strided_{o}_{i}",
         "dense_castout_{i}", "dense_castout_ilp_{i}", "strided_castout_{i}"]
BINARY = ["strided_{o}_{i}", "strided_cast_{o}_{i}", "dense_{o}_{i}", "dense_ilp4_{o}_{i}",
          "dense_cast_{o}_{i}", "dense_broadcast_{o}_{i}", "dense_broadcast_rhs_{o}_{i}",
          "dense_broadcast_cast_{o}_{i}", "dense_broadcast_rhs_cast_{o}_{i}", "dense_scalar_{o}_{i}",
          "dense_scalar_lhs_{o}_{i}", "dense_scalar_cast_{o}_{i}", "dense_scalar_lhs_cast_{o}_{i}"]
UNARY_ALPHA = ["dense_{o}_{i}_{a}", "strided_{o}_{i}_{a}"]
BINARY_ALPHA = [v + "_{a}" for v in BINARY if "ilp" not in v]
TERNARY = ["strided_{o}_{i}", "strided_cast_{i}", "dense_{o}_{i}", "dense_cast_{i}"]
# support/metal/mpsgen/ternary_alpha.h: operands of one dtype, so no _cast variants; torch's own
# macro (2.15) has them, named by the input and alpha types (2.15's addcmul_dense_cast_half_float)
TERNARY_ALPHA = ["strided_{o}_{i}_{a}", "dense_{o}_{i}_{a}"] + (
    ["strided_cast_{i}_{a}", "dense_cast_{i}_{a}"] if gives("ternary_alpha", torch.__version__) else [])
COMPARISON = BINARY + ["strided_castout_{o}_{i}"]  # REGISTER_BINARY_CASTOUT_OP
FAMILIES = {"unary": UNARY, "unary_alpha": UNARY_ALPHA, "binary": BINARY, "binary_alpha": BINARY_ALPHA,
            "ternary": TERNARY, "ternary_alpha": TERNARY_ALPHA}
KERNELS = {k for op in REGISTRY.ops for k in op.kernels}


# c10/metal/utils.h's opmath_t, read from the installed torch's header: `struct OpMathType<half> {
# using type = float; };`
OPMATH_T = dict(re.findall(r"struct OpMathType<(\w+)>\s*\{\s*using type = (\w+);",
                           (torch_include() / "c10" / "metal" / "utils.h").read_text()))


def alpha_type(op, kernel, r) -> str:
    """The Scalar's Metal type: the computation dtype (the output's, or the input's for bool
    results), its opmath_t for an `opmath` alpha, or the params struct typedef for it,
    `<op>_params_<T>`."""
    compute = r.input if r.output == "bool" else r.output
    if op.kernel_transport(kernel) != "alpha":
        return f"{op.name}_params_{compute}"
    return OPMATH_T.get(compute, compute) if op.alpha_type(op.kernel_alpha_arg(kernel)) == "opmath" else compute


def _kernel_of(host_name: str) -> str | None:
    """The kernel a host_name belongs to: the longest kernel name it starts with ("mul_foo"
    over "mul", "clamp_tensor_min" over "clamp_tensor")."""
    return max((k for k in KERNELS if host_name.startswith(k + "_")), key=len, default=None)


@pytest.mark.parametrize("op", REGISTRY.ops, ids=lambda op: op.name)
def test_cpu_registry_holds_exactly_the_macro_instantiations(op):
    expected = set()
    # each kernel in its own family (a `given:` op's differ), with its dtypes; a choice's kernel
    # reading no params (`params: []`) without them; another entry's kernel (`{op: ...}`) in its own
    for k in op.own_kernels:
        family = op.kernel_family(k) + ("_alpha" if op.kernel_transport(k) != "none" else "")
        variants = COMPARISON if family == "binary" and op.bool_output else FAMILIES[family]
        expected |= {f"{k}_" + v.format(o=r.output, i=r.input, a=alpha_type(op, k, r))
                     for r in op.table(k).registrations for v in variants}
    actual = {n for n in ext.cpu_kernel_names() if _kernel_of(n) in op.own_kernels}
    assert actual == expected


def test_the_avx_variants_go_to_narrow_float_kernels_and_to_ops_calling_vector_math():
    """codegen/emit/host_names.py: kernels reading or writing half or bfloat get the AVX2 and AVX-512
    variants by their host_name (their cast kernels AVX2 only); every kernel of a unit whose
    ops.yaml code (after an ops.yaml line marker) calls exp, log, tanh, fma, erf... gets both. Calls in the shim or c10
    headers do not count; other kernels get the baseline variant only."""
    from mpsgen.codegen.emit.host_names import KernelInstantiation, calls_vector_math, registration_lines

    shim = '# 480 "support/metal_shim/metal_stdlib"\ninline float exp(float x) { return x; }\n'
    plain = shim + '# 12 "ops.yaml"\nstruct add_functor { float operator()(float a, float b) { return a + b; } };\n'
    mathy = plain + '# 30 "ops.yaml"\n  return c10::metal::erf(x) + precise::tanh (x);\n'
    assert not calls_vector_math(plain)
    assert calls_vector_math(mathy)
    assert calls_vector_math('# 7 "ops.yml"\nreturn fma(a, b, c);\n')
    assert not calls_vector_math('# 7 "ops.yaml"\nreturn expected(a) + logical(b);\n')
    assert calls_vector_math('# 7 "ops.yaml"\nreturn precise::sin(x) * tan(y);\n')
    assert not calls_vector_math('# 7 "ops.yaml"\nreturn sinpi(x) + cosine(y);\n')  # not the shim's sin or cos

    kernels = [KernelInstantiation(host_name=h, function=f"::c10::metal::unary_dense<{t}, f>")
               for h, t in [("f_dense_float_float", "float"), ("f_dense_half_half", "half"),
                            ("f_dense_bfloat_bfloat", "bfloat")]]
    def isa(text: str) -> list[str]:  # Kernel<&fn, Isa...>: the mask after the kernel's function
        return re.findall(r"Kernel<&::c10::metal::unary_dense<\w+, f>, (\d)[,>][^\n]*::run\(\)", text)

    # Isa, a mask: 1 AVX2, 2 AVX-512, 3 both
    assert isa(registration_lines(kernels)) == ["0", "3", "3"]  # AVX2 and AVX-512 for half and bfloat
    assert isa(registration_lines(kernels, vector_math=True)) == ["3"] * 3  # and for vector math
    # a build for a machine without AVX-512 (or without AVX2) compiles no variant above it
    assert isa(registration_lines(kernels, vector_math=True, max_isa=1)) == ["1"] * 3
    assert isa(registration_lines(kernels, max_isa=0)) == ["0"] * 3
    # a native build (lower=False) compiles the one variant its machine runs
    assert isa(registration_lines(kernels, lower=False)) == ["0", "2", "2"]
    assert isa(registration_lines(kernels, vector_math=True, max_isa=1, lower=False)) == ["1"] * 3
    # a cast kernel (a switch on the dtype per element) of half or bfloat gets AVX2, no AVX-512,
    # unless the op calls vector math
    casts = [KernelInstantiation(host_name=h, function=f"::c10::metal::{k}<{t}, f>")
             for h, k, t in [("f_dense_cast_half_half", "unary_dense_castout", "half"),
                             ("f_strided_castout_bfloat", "binary_strided_castout", "bfloat"),
                             ("f_dense_castout_ilp_half", "unary_dense_castout_ilp", "half"),
                             ("f_dense_cast_float_float", "binary_dense_cast", "float")]]
    def cast_isa(text: str) -> list[str]:
        return re.findall(r"Kernel<&::c10::metal::\w+<\w+, f>, (\d)[,>][^\n]*::run\(\)", text)

    assert cast_isa(registration_lines(casts)) == ["1", "1", "1", "0"]
    assert cast_isa(registration_lines(casts, vector_math=True)) == ["3"] * 4
    assert cast_isa(registration_lines(casts, max_isa=0)) == ["0"] * 4
    # natively on a machine with AVX-512 too: the AVX2 variant is these kernels' highest
    assert cast_isa(registration_lines(casts, lower=False)) == ["1", "1", "1", "0"]
    assert cast_isa(registration_lines(casts, vector_math=True, lower=False)) == ["2"] * 4
