"""`export-pytorch` (codegen/export): ops.yaml entries as an in-tree PyTorch change, verified
offline against the installed torch's own files (native_functions.yaml and tags.yaml parsed by
torchgen, common_mps.py, the ATen headers that declare the stubs, the macOS wheel's headers and
bundled Metal library), with the mistakes those checks must catch planted one at a time."""
from __future__ import annotations

import ast
import re
import shutil
from pathlib import Path

import pytest
import torch

from mpsgen.codegen.build import GENERATED, ROOT
from mpsgen.codegen.emit import render as emit_render
from mpsgen.codegen.torch_versions import FEATURES, gives
from mpsgen.codegen.export import check, cli, patch, run, tree as trees
from mpsgen.codegen.export.plan import ExportError
from mpsgen.codegen.registry import loader
from mpsgen.codegen.verify import macos_sdk

ATEN_OPS = ["heaviside", "special_ndtri", "special_log_ndtr", "special_laguerre_polynomial_l",
            "special_legendre_polynomial_p", "special_airy_ai"]


@pytest.fixture(scope="module")
def registry():
    return loader.load(ROOT / "ops.yaml")


@pytest.fixture(scope="module")
def bundled() -> frozenset[str]:
    return macos_sdk.metal_kernels()


def _exported(registry, names, tmp: Path) -> tuple[run.Export, str]:
    result = run.export(registry, names, trees.scratch(tmp / "base"))
    return result, patch.unified_diff(result.changes)


def _checked_tree(diff: str, tmp: Path, base: trees.Tree | None = None) -> trees.Tree:
    """The patch applied to a fresh scratch tree, or to a copy of `base`."""
    if base is None:
        t = trees.scratch(tmp / "tree")
    else:
        shutil.copytree(base.root, tmp / "tree")
        t = trees.Tree(tmp / "tree", tmp / "tree" / trees.NATIVE_HEADERS, real=False)
    assert not check.apply(diff, t.root)[0].problems
    return t


def test_the_shipped_aten_entries_cover_every_implements_aten_op(registry):
    assert sorted(op.qualified_name for op in registry.aten_ops) == sorted(ATEN_OPS)


def test_every_aten_entry_exports_and_passes_every_offline_check(registry, bundled, tmp_path):
    result, diff = _exported(registry, ATEN_OPS, tmp_path)
    outcomes = check.check_all(result, diff, tmp_path / "check", GENERATED, bundled)
    assert [str(o) for o in outcomes if o.problems] == []
    # one outcome per check and op: apply, then dispatch, metal, kernels and host for each op, and common_mps
    assert sorted({o.check for o in outcomes}) == ["apply", "common_mps", "dispatch", "host", "kernels", "metal"]
    assert len(outcomes) == 2 + 4 * len(ATEN_OPS)


def test_the_heaviside_patch_reads_as_in_tree_code(registry, tmp_path):
    result, diff = _exported(registry, ["heaviside"], tmp_path)
    files = re.findall(r"^diff --git a/(\S+)", diff, re.M)
    assert files == ["aten/src/ATen/native/mps/kernels/Heaviside.metal",
                     "aten/src/ATen/native/mps/operations/Heaviside.mm",
                     trees.NATIVE_FUNCTIONS, trees.COMMON_MPS]
    kernel = result.changes["aten/src/ATen/native/mps/kernels/Heaviside.metal"][1]
    host = result.changes["aten/src/ATen/native/mps/operations/Heaviside.mm"][1]
    for text in (kernel, host):
        assert "mpsgen" not in text and "#line" not in text
    assert "struct heaviside_functor" in kernel
    assert kernel.count("REGISTER_BINARY_OP(heaviside, ") == 9  # float, half, bfloat, 5 integers, bool
    assert "REGISTER_DISPATCH(heaviside_stub, &heaviside_kernel_mps)" in host
    assert "static void heaviside_kernel_mps(TensorIteratorBase& iter)" in host  # structured_binary_fn's type
    # the yaml: one line changed, MPS beside the CPU and CUDA kernel
    old, new = result.changes[trees.NATIVE_FUNCTIONS]
    changed = [(a, b) for a, b in zip(old.splitlines(), new.splitlines()) if a != b]
    assert changed == [("    CPU, CUDA: heaviside_out", "    CPU, CUDA, MPS: heaviside_out")]
    # common_mps.py: heaviside leaves UNIMPLEMENTED_XFAILLIST, nothing else changes
    old, new = result.changes[trees.COMMON_MPS]
    assert [line for line in old.splitlines() if line not in new.splitlines()] == ['            "heaviside": None,']
    assert len(new.splitlines()) == len(old.splitlines()) - 1


def test_the_command_writes_the_patch_a_new_user_asks_for(tmp_path, capsys):
    out = tmp_path / "heaviside.patch"
    assert cli.main(ROOT / "ops.yaml", ["heaviside"], out, None) == 0
    said = capsys.readouterr().out
    assert "MPS joins `CPU, CUDA: heaviside_out`" in said and "new files" in said
    assert out.read_text().startswith("diff --git a/aten/src/ATen/native/mps/kernels/Heaviside.metal")


def test_a_torch_tree_is_changed_in_place(registry, tmp_path, capsys):
    tree_dir = tmp_path / "pytorch"
    trees.scratch(tree_dir)
    before = (tree_dir / trees.NATIVE_FUNCTIONS).read_text()
    assert cli.main(ROOT / "ops.yaml", ["special_airy_ai"], None, tree_dir) == 0
    assert "CPU, CUDA, MPS: special_airy_ai_out" in (tree_dir / trees.NATIVE_FUNCTIONS).read_text()
    assert (tree_dir / "aten/src/ATen/native/mps/kernels/SpecialAiryAi.metal").is_file()
    # a second export of it finds torch running the op on MPS now, and changes nothing
    after = (tree_dir / trees.NATIVE_FUNCTIONS).read_text()
    assert cli.main(ROOT / "ops.yaml", ["special_airy_ai"], None, tree_dir) == 1
    assert "torch already runs special_airy_ai.out on MPS through `special_airy_ai_out`" in capsys.readouterr().err
    assert (tree_dir / trees.NATIVE_FUNCTIONS).read_text() == after
    assert before != (tree_dir / trees.NATIVE_FUNCTIONS).read_text()


@pytest.mark.parametrize("name, reason", [
    ("hypot", "torch already runs hypot.out on MPS through `hypot_out`"),
    ("exp", "its functor calls mpsgen:: functions (support/metal/mpsgen/complex_math.h"),
    ("elu", "torch already runs elu.out on MPS through `elu_out`"),
    ("div.Tensor_mode", "torch already runs div.out_mode on MPS through `div_out_mode`"),
    ("polygamma", "its kernels are chosen by the value of `n`"),
    ("addcmul", "exec_ternary_kernel takes no Scalar arguments" if not gives("ternary_alpha", torch.__version__)
     else "torch has no exec_ternary_kernel_with_params"),
])
def test_what_cannot_be_exported_yet_is_refused_with_its_reason_and_nothing_is_written(name, reason, tmp_path, capsys):
    out = tmp_path / "x.patch"
    assert cli.main(ROOT / "ops.yaml", [name], out, None) == 1
    err = capsys.readouterr().err
    assert reason in err and re.search(r"ops\.yaml:\d+", err)
    assert not out.exists()


# ---- planted mistakes: each check catches its own ------------------------------------------

def test_a_typo_in_a_dispatch_key_is_caught_by_torchgen(registry, tmp_path):
    result, diff = _exported(registry, ["heaviside"], tmp_path)
    t = _checked_tree(diff.replace("+    CPU, CUDA, MPS: heaviside_out", "+    CPU, CUDA, MSP: heaviside_out"), tmp_path)
    [outcome] = check.dispatch(result, t)
    assert "unknown dispatch key MSP" in outcome.problems[0]


def test_a_dispatch_key_given_twice_is_caught(registry, tmp_path):
    result, diff = _exported(registry, ["heaviside"], tmp_path)
    twice = diff.replace("+    CPU, CUDA, MPS: heaviside_out\n", "+    CPU, CUDA, MPS: heaviside_out\n+    MPS: heaviside_out_mps\n")
    twice = re.sub(r"(@@ -6872,7 \+6872,)7", r"\g<1>8", twice)
    t = _checked_tree(twice, tmp_path)
    [outcome] = check.dispatch(result, t)
    assert outcome.problems == ("heaviside.out's dispatch gives MPS twice",
                                "MPS maps heaviside.out to heaviside_out_mps, not heaviside_out")


def test_a_kernel_function_of_another_type_than_the_stub_is_caught_by_the_mac_compile(registry, tmp_path):
    result, diff = _exported(registry, ["heaviside"], tmp_path)
    assert diff.count("TensorIteratorBase& iter") == 1
    t = _checked_tree(diff.replace("TensorIteratorBase& iter", "TensorIterator& iter"), tmp_path)
    [outcome] = check.host(result, t, tmp_path / "objects")
    assert outcome.problems and "heaviside_kernel_mps" in outcome.problems[0]


def test_a_kernel_name_torch_has_is_refused_and_caught_in_a_kernel_file(registry, bundled, tmp_path):
    # the export refuses an entry whose kernel torch's bundled Metal library has (xlogy's)
    text = (ROOT / "ops.yaml").read_text().replace("    out_dtype: exact  # its kernel refuses",
                                                   "    kernel: xlogy\n    out_dtype: exact  # its kernel refuses", 1)
    (tmp_path / "ops.yaml").write_text(text)
    with pytest.raises(ExportError, match=r"kernel name `xlogy` is taken in-tree \(torch 2\.\d+\.\d+'s bundled"):
        run.export(loader.load(tmp_path / "ops.yaml"), ["heaviside"], trees.scratch(tmp_path / "base"))
    # and the kernel check finds such a functor in a kernel file, by its kernels' host names
    result, diff = _exported(registry, ["heaviside"], tmp_path)
    t = _checked_tree(diff, tmp_path)
    kernel = t.root / "aten/src/ATen/native/mps/kernels/Heaviside.metal"
    kernel.write_text(kernel.read_text().replace("heaviside", "atan2"))
    [outcome] = check.metal(result, t, bundled)
    assert "torch's bundled Metal library already has" in outcome.problems[0] and "atan2_dense_bfloat_bfloat" in outcome.problems[0]


def test_an_mpsgen_header_in_a_kernel_file_does_not_resolve_in_tree(registry, bundled, tmp_path):
    result, diff = _exported(registry, ["heaviside"], tmp_path)
    t = _checked_tree(diff.replace("+#include <metal_stdlib>\n", "+#include <metal_stdlib>\n+#include <mpsgen/complex_math.h>\n", 1)
                      .replace("@@ -0,0 +1,23 @@", "@@ -0,0 +1,24 @@", 1), tmp_path)
    [outcome] = check.metal(result, t, bundled)
    assert "mpsgen/complex_math.h" in outcome.problems[0]


def test_an_entry_left_in_common_mps_is_caught(registry, tmp_path):
    result, diff = _exported(registry, ["heaviside"], tmp_path)
    t = _checked_tree(diff, tmp_path)
    path = t.root / trees.COMMON_MPS
    path.write_text(path.read_text().replace('            "geqrf": None,\n', '            "geqrf": None,\n            "heaviside": None,\n'))
    [outcome] = check.common_mps(result, t)
    assert outcome.problems == ("UNIMPLEMENTED_XFAILLIST['heaviside'] is still there",)
    tree = ast.parse(path.read_text())  # the planted file is still Python: the check read the list, not a syntax error
    assert tree.body


def test_a_kernel_file_that_is_not_the_tested_code_is_caught(registry, tmp_path):
    result, diff = _exported(registry, ["heaviside"], tmp_path)
    t = _checked_tree(diff, tmp_path)
    [ok] = check.same_kernels(result, t, GENERATED)
    assert not ok.problems
    kernel = t.root / "aten/src/ATen/native/mps/kernels/Heaviside.metal"
    kernel.write_text(kernel.read_text().replace("? values :", "? -values :"))
    [outcome] = check.same_kernels(result, t, GENERATED)
    assert "not the code of" in outcome.problems[0] and "-values" in outcome.problems[0]


# ---- the other families, on the installed torch's files as they were before torch had their MPS
# kernels: in torch 2.13 every other structured TensorIterator op with a shared CPU/CUDA stub
# already runs on MPS, so these rows lose their MPS key (or line) first, and the kernel names
# torch bundles for those ops are left out of the clash checks

FAMILIES = {
    # entry: (the row's line as torch has it, as it was without MPS, torch's kernels of the op)
    "hardshrink": ("    CPU, CUDA, MPS: hardshrink_out\n", "    CPU, CUDA: hardshrink_out\n", ("hardshrink",)),
    "leaky_relu": ("    CPU, CUDA, MPS: leaky_relu_out\n", "    CPU, CUDA: leaky_relu_out\n", ("leaky_relu",)),
    "sub.Tensor": ("    CPU, CUDA: sub_out\n    MPS: sub_out_mps\n", "    CPU, CUDA: sub_out\n", ("sub",)),
    "eq.Tensor": ("    CPU, CUDA, MPS, MTIA: eq_Tensor_out\n", "    CPU, CUDA, MTIA: eq_Tensor_out\n", ("eq",)),
    "elu": ("    CPU, CUDA, MPS: elu_out\n", "    CPU, CUDA: elu_out\n", ("elu",)),
    "lerp.Tensor": ("    CPU, CUDA, MPS: lerp_Tensor\n", "    CPU, CUDA: lerp_Tensor\n", ("lerp",)),
    "div.Tensor_mode": ("    CPU, CUDA, MPS: div_out_mode\n", "    CPU, CUDA: div_out_mode\n",
                        ("div_true", "div_trunc", "div_floor")),
}
# lerp_Tensor calls lerp_kernel_tensor_weight (ATen/native/Lerp.h), which no naming rule reaches
STUBS = {"lerp.Tensor": "lerp_kernel_tensor_weight"}


def _before_their_kernels(tmp_path: Path) -> trees.Tree:
    """The installed torch's files with FAMILIES' rows as they were without MPS."""
    t = trees.scratch(tmp_path / "before")
    path = t.root / trees.NATIVE_FUNCTIONS
    text = path.read_text()
    for row, without, _ in FAMILIES.values():
        assert text.count(row) == 1
        text = text.replace(row, without)
    path.write_text(text)
    return t


def test_alpha_params_comparison_ternary_and_choice_entries_export_where_torch_lacks_the_kernel(
        registry, bundled, tmp_path):
    t = _before_their_kernels(tmp_path)
    # torch's own kernels of these ops: <name>_dense_..., <name>_strided_... (not elu_backward's)
    names = {name for *_, kernels in FAMILIES.values() for name in kernels}
    theirs = tuple(f"{name}_{layout}_" for name in names for layout in ("dense", "strided"))
    known = {k: v for k, v in run.in_tree_kernels(t).items() if k not in names}
    result = run.export(registry, list(FAMILIES), t, known_kernels=known, stub_names=STUBS)
    diff = patch.unified_diff(result.changes)
    outcomes = check.check_all(result, diff, tmp_path / "check", GENERATED,
                               frozenset(n for n in bundled if not n.startswith(theirs)), base=t.root)
    assert [str(o) for o in outcomes if o.problems] == []
    assert len(outcomes) == 2 + 4 * len(FAMILIES)
    hosts = {p.op.qualified_name: result.changes[f"aten/src/ATen/native/mps/operations/{name}.mm"][1]
             for p, name in zip(result.plans, ["Hardshrink", "LeakyRelu", "Sub", "Eq", "Elu", "Lerp", "Div"])}
    # each kernel function has its stub's exact type and passes what the kernels read
    assert "hardshrink_kernel_mps(TensorIteratorBase& iter, const c10::Scalar& lambd)" in hosts["hardshrink"]
    assert 'lib.exec_unary_kernel(iter, "hardshrink", lambd);' in hosts["hardshrink"]
    assert "REGISTER_DISPATCH(hardshrink_stub, &hardshrink_kernel_mps)" in hosts["hardshrink"]
    assert "sub_kernel_mps(TensorIteratorBase& iter, const Scalar& alpha)" in hosts["sub.Tensor"]
    assert 'lib.exec_binary_kernel(iter, "sub", alpha);' in hosts["sub.Tensor"]
    assert 'lib.exec_binary_kernel(iter, "eq", std::nullopt, std::nullopt, kBool);' in hosts["eq.Tensor"]
    assert "REGISTER_DISPATCH(eq_stub, &eq_kernel_mps)" in hosts["eq.Tensor"]
    kernel = result.changes["aten/src/ATen/native/mps/kernels/Eq.metal"][1]
    assert "REGISTER_BINARY_CASTOUT_OP(eq, float, bool);" in kernel and "float2" in kernel  # complex64 too
    assert "REGISTER_BINARY_ALPHA_OP(sub, float, float, float);" in result.changes["aten/src/ATen/native/mps/kernels/Sub.metal"][1]
    # a params struct: torch's one-parameter form in a header beside the kernels, at the opmath type
    header = result.changes["aten/src/ATen/native/mps/kernels/Elu.h"][1]
    assert "template <typename T>\nstruct EluParams {\n  T alpha;\n  T scale;\n  T input_scale;\n};" in header
    kernel = result.changes["aten/src/ATen/native/mps/kernels/Elu.metal"][1]
    assert "#include <ATen/native/mps/kernels/Elu.h>" in kernel
    assert "typedef EluParams<opmath_t<half>> EluParams_half;" in kernel
    assert "REGISTER_UNARY_ALPHA_OP(elu, half, EluParams_half, half);" in kernel
    assert "AT_DISPATCH_V2(iter.common_dtype(), \"elu_mps\"" in hosts["elu"] and "kFloat, kHalf, kBFloat16);" in hosts["elu"]
    assert "const EluParams<opmath_t> params{alpha.to<opmath_t>(), scale.to<opmath_t>(), input_scale.to<opmath_t>()};" in hosts["elu"]
    # a ternary, for the stub --stub names
    assert 'lib.exec_ternary_kernel(iter, "lerp");' in hosts["lerp.Tensor"]
    assert "REGISTER_DISPATCH(lerp_kernel_tensor_weight, &lerp_kernel_mps)" in hosts["lerp.Tensor"]
    assert "REGISTER_TERNARY_OP(lerp, float2, float2);" in result.changes["aten/src/ATen/native/mps/kernels/Lerp.metal"][1]
    # a str choice: each choice's kernel registers for the stub torch's div_out_mode picks by the value
    for kernel in ("div_true", "div_trunc", "div_floor"):
        assert f'static void {kernel}_kernel_mps(TensorIteratorBase& iter) {{\n  lib.exec_binary_kernel(iter, "{kernel}");' \
            in hosts["div.Tensor_mode"]
        assert f"REGISTER_DISPATCH({kernel}_stub, &{kernel}_kernel_mps)" in hosts["div.Tensor_mode"]


def test_a_stub_torch_does_not_name_after_the_op_is_asked_for(registry, tmp_path, capsys):
    t = _before_their_kernels(tmp_path)
    with pytest.raises(ExportError, match=r"name the one it calls with --stub lerp\.Tensor=STUB \(declared: "
                                          r"lerp_kernel_scalar_weight, lerp_kernel_tensor_weight\)"):
        run.export(registry, ["lerp.Tensor"], t, known_kernels={})
    # a stub of another type than the entry's kernels take is refused, as one that does not exist
    with pytest.raises(ExportError, match=r"`lerp_kernel_scalar_weight` \(Lerp\.h\) takes \(at::TensorIteratorBase&, "
                                          r"const Scalar&\); the entry's kernel `lerp` reads the iterator$"):
        run.export(registry, ["lerp.Tensor"], t, known_kernels={}, stub_names={"lerp.Tensor": "lerp_kernel_scalar_weight"})
    with pytest.raises(ExportError, match="--stub lerp_stub: the tree's ATen/native headers declare no such stub"):
        run.export(registry, ["lerp.Tensor"], t, known_kernels={}, stub_names={"lerp.Tensor": "lerp_stub"})
    # and from the command line
    assert cli.stub_option(["lerp.Tensor=lerp_kernel_tensor_weight"]) == STUBS
    with pytest.raises(ValueError, match="expected OP=STUB"):
        cli.stub_option(["lerp_kernel_tensor_weight"])


# ---- derivatives.yaml and XFAILLIST_GRAD --------------------------------------------------

def _without_rows(tmp_path: Path, rows: dict[str, str], derivative_names: list[str]) -> trees.Tree:
    """The installed torch's files with `rows` replaced (MPS keys removed) and the derivatives.yaml
    rows of `derivative_names` (schemas) deleted: an op torch has no derivative for."""
    t = trees.scratch(tmp_path / "before")
    path = t.root / trees.NATIVE_FUNCTIONS
    text = path.read_text()
    for row, without in rows.items():
        text = text.replace(row, without)
    path.write_text(text)
    path = t.root / trees.DERIVATIVES
    text = path.read_text()
    for schema in derivative_names:
        found = re.search(rf"- name: {re.escape(schema)}\n(  .*\n)*", text)
        text = text.replace(found.group(0), "")
    path.write_text(text)
    return t


def test_an_op_torch_has_no_derivative_for_gets_the_entrys_and_torchgen_loads_them(registry, tmp_path):
    schema = "hardshrink(Tensor self, Scalar lambd=0.5) -> Tensor"
    t = _without_rows(tmp_path, {"    CPU, CUDA, MPS: hardshrink_out\n": "    CPU, CUDA: hardshrink_out\n"}, [schema])
    result = run.export(registry, ["hardshrink"], t, known_kernels={})
    assert result.derivatives == ["hardshrink"]
    old, new = result.changes[trees.DERIVATIVES]
    assert new == old + ("\n- name: hardshrink(Tensor self, Scalar lambd=0.5) -> Tensor\n"
                         "  self: where((self < -lambd.toDouble()) | (self > lambd.toDouble()), grad, 0)\n")
    diff = patch.unified_diff(result.changes)
    checked = _checked_tree(diff, tmp_path, base=t)
    assert [o.problems for o in check.derivatives(result, checked)] == [()]
    # planted: the row names an argument the op does not have; torchgen refuses the file
    path = checked.root / trees.DERIVATIVES
    path.write_text(path.read_text().replace("  self: where((self <", "  input: where((self <"))
    [outcome] = check.derivatives(result, checked)
    assert outcome.problems[0].startswith("torchgen cannot load it: AssertionError")
    assert "hardshrink(Tensor self, Scalar lambd=0.5) -> Tensor" in outcome.problems[0]


def test_an_op_whose_opinfo_takes_gradients_but_that_has_no_derivative_joins_xfaillist_grad(registry, tmp_path):
    # special_ndtri's entry takes torch's derivative (implements: aten); without torch's row it has none
    t = _without_rows(tmp_path, {}, ["special_ndtri(Tensor self) -> Tensor"])
    result = run.export(registry, ["special_ndtri"], t)
    assert result.derivatives == [] and trees.DERIVATIVES not in result.changes
    assert [e.describe() for e in result.list_edits if e.added] == \
        ["XFAILLIST_GRAD['special.ndtri'] added (no derivative in derivatives.yaml)"]
    old, new = result.changes[trees.COMMON_MPS]
    added = [line for line in new.splitlines() if line not in old.splitlines()]
    assert added == ['            "special.ndtri": None,  # no derivative in derivatives.yaml']
    checked = _checked_tree(patch.unified_diff(result.changes), tmp_path, base=t)
    assert check.common_mps(result, checked)[0].problems == ()
    # with torch's row it needs none (the shipped export)
    assert not [e for e in run.export(registry, ["special_ndtri"], trees.scratch(tmp_path / "torch")).list_edits if e.added]


TERNARY_WITH_A_SCALAR = """namespace: testns
ops:
  - func: fma3(Tensor self, Tensor a, Tensor b, *, Scalar alpha=1) -> Tensor
    args: {alpha: T}
    dtypes: [float]
    reference: torch.addcmul
    opinfo: null
    functor: |
      template <typename T>
      inline T operator()(const T x, const T a, const T b, const T alpha) { return x + alpha * a * b; }
"""


def test_a_ternary_kernel_with_a_scalar_exports_for_a_tree_whose_torch_has_the_ternary_alpha(tmp_path):
    """FEATURES["ternary_alpha"] decides, from the tree's release: before it the entry is refused,
    naming the release that has it; from it, the in-tree code is torch's macro and call."""
    from mpsgen.codegen.export import render as export_render
    from mpsgen.codegen.export.plan import _refusal

    (tmp_path / "ops.yaml").write_text(TERNARY_WITH_A_SCALAR)
    op = loader.load(tmp_path / "ops.yaml").ops[0]
    assert op.transport == "alpha"
    since = FEATURES["ternary_alpha"]
    assert f"are torch {since}'s" in _refusal(op, "2.14.1")
    assert _refusal(op, f"{since}.0") is None and _refusal(op, f"{since}.0a0") is None
    assert export_render._exec_arguments(op, "fma3") == ", alpha"  # lib.exec_ternary_kernel(iter, "fma3", alpha)
    lines = [line for r in op.table("fma3").registrations for line in emit_render.registrations(op, "fma3", r)]
    assert lines[0] == "REGISTER_TERNARY_ALPHA_OP(fma3, float, float, float)"  # torch's macro, as in-tree
    # an opmath alpha: torch's macro with the opmath type (torch 2.15's own addcmul_dense_half_half_float)
    # and ATen's opmath type as exec_ternary_kernel's scalar_arg_type
    (tmp_path / "ops.yaml").write_text(TERNARY_WITH_A_SCALAR.replace("{alpha: T}", "{alpha: opmath}")
                                       .replace("dtypes: [float]", "dtypes: [opmath_float]"))
    opmath = loader.load(tmp_path / "ops.yaml").ops[0]
    assert _refusal(opmath, f"{since}.0") is None
    assert export_render._exec_arguments(opmath, "fma3") == ", alpha, at::toOpMathType(iter.common_dtype())"
    lines = [line for r in opmath.table("fma3").registrations for line in emit_render.registrations(opmath, "fma3", r)]
    assert "REGISTER_OPMATH_TERNARY_ALPHA_OP(fma3, half, float, half)" in lines
    # addcmul's int8 alpha is c10/metal's opmath_t, an int, where ATen's opmath type is int8 itself
    addcmul = next(o for o in loader.load(ROOT / "ops.yaml").ops if o.name == "addcmul")
    assert "an int for int8" in _refusal(addcmul, f"{since}.0")
