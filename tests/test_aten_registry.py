"""`implements: aten` and `replaces: mps` in ops.yaml (issue 15): what the loader refuses,
each at its ops.yaml line, and what the generator writes for an aten entry."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from mpsgen.codegen.registry import loader
from mpsgen.codegen.emit import render

FUNCTOR = ("    functor: |\n"
           "      template <typename T>\n"
           "      inline T operator()(const T x) { return x; }\n")
BINARY = ("    functor: |\n"
          "      template <typename T>\n"
          "      inline T operator()(const T a, const T b) { return a; }\n")


def entry(func: str, extra: str = "    implements: aten\n", functor: str = FUNCTOR) -> str:
    return f"  - func: {func}\n{extra}    dtypes: [float]\n    reference: torch.exp\n    opinfo: null\n{functor}"


def load(tmp_path: Path, *entries: str):
    path = tmp_path / "ops.yaml"
    path.write_text("namespace: testns\nops:\n" + "".join(entries))
    return loader.load(path)


def errors(tmp_path: Path, *entries: str) -> list[str]:
    with pytest.raises(loader.RegistryError) as info:
        load(tmp_path, *entries)
    return info.value.errors


def line_of(tmp_path: Path, needle: str) -> int:
    lines = (tmp_path / "ops.yaml").read_text().splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if needle in line]
    assert len(hits) == 1, hits
    return hits[0]


def only(found: list[str], line: int, key: str) -> str:
    assert len(found) == 1, found
    assert found[0].startswith(f"ops.yaml:{line}: ") and f"key '{key}'" in found[0], found[0]
    return found[0]


def test_an_aten_op_that_does_not_exist(tmp_path):
    e = only(errors(tmp_path, entry("special_airy_aj(Tensor x) -> Tensor")),
             line_of(tmp_path, "func:"), "func")
    assert "aten has no operator 'special_airy_aj'" in e and "special_airy_ai" in e  # a close match


def test_a_schema_that_differs_from_atens_names_both(tmp_path):
    e = only(errors(tmp_path, entry("heaviside(Tensor self, Tensor other) -> Tensor", functor=BINARY)),
             line_of(tmp_path, "func:"), "func")
    assert "heaviside(Tensor self, Tensor other) -> Tensor" in e
    assert "heaviside(Tensor self, Tensor values) -> Tensor" in e and "differs from aten's" in e


def test_replacing_torchs_mps_kernel_must_be_explicit(tmp_path):
    e = only(errors(tmp_path, entry("silu(Tensor self) -> Tensor")), line_of(tmp_path, "func:"), "implements")
    assert "torch already runs this op on MPS" in e and "silu_out" in e and "replaces: mps" in e
    # also through a composite kernel, which runs on MPS through the ops it calls
    e = only(errors(tmp_path, entry("special_expit(Tensor self) -> Tensor")), line_of(tmp_path, "func:"), "implements")
    assert "CompositeImplicitAutograd" in e


def test_replaces_needs_an_mps_kernel_to_replace_and_an_aten_entry(tmp_path):
    only(errors(tmp_path, entry("special_ndtri(Tensor self) -> Tensor",
                                "    implements: aten\n    replaces: mps\n")), line_of(tmp_path, "replaces:"), "replaces")
    only(errors(tmp_path, entry("foo(Tensor self) -> Tensor", "    replaces: mps\n")),
         line_of(tmp_path, "replaces:"), "replaces")
    only(errors(tmp_path, entry("silu(Tensor self) -> Tensor", "    implements: aten\n    replaces: cuda\n")),
         line_of(tmp_path, "replaces:"), "replaces")


def test_implements_names_aten(tmp_path):
    only(errors(tmp_path, entry("special_ndtri(Tensor self) -> Tensor", "    implements: prims\n")),
         line_of(tmp_path, "implements:"), "implements")


def test_an_aten_entry_has_atens_derivatives(tmp_path):
    e = only(errors(tmp_path, entry("special_ndtri(Tensor self) -> Tensor",
                                    "    implements: aten\n    derivatives: {self: grad}\n")),
             line_of(tmp_path, "derivatives:"), "derivatives")
    assert "derivatives.yaml" in e


def test_an_aten_entry_takes_no_scalar_overload(tmp_path):
    found = errors(tmp_path, entry("heaviside(Tensor self, Tensor values) -> Tensor", functor=BINARY),
                   "  - func: heaviside.Scalar(Tensor self, Scalar values) -> Tensor\n")
    only(found, line_of(tmp_path, "heaviside.Scalar"), "func")


def test_the_variants_registered_are_those_aten_has(tmp_path):
    registry = load(tmp_path, entry("special_airy_ai(Tensor x) -> Tensor"),
                    entry("silu(Tensor self) -> Tensor", "    implements: aten\n    replaces: mps\n"))
    airy, silu = registry.ops
    assert airy.aten_variants == ("functional", "out") and not airy.replaces  # no special_airy_ai_
    assert silu.aten_variants == ("functional", "out", "inplace") and silu.replaces == "mps"


def test_generated_code_for_an_aten_entry(tmp_path):
    registry = load(tmp_path, entry("special_airy_ai(Tensor x) -> Tensor"), entry("foo(Tensor self) -> Tensor", ""))
    files = render.render(registry)
    mps, cpu = files["special_airy_ai_mps.mm"], files["special_airy_ai_cpu.cpp"]
    assert "TORCH_LIBRARY_IMPL(aten, MPS, m)" in mps and "TORCH_LIBRARY_IMPL(testns" not in mps
    assert re.findall(r'm\.impl\("([^"]+)"', mps) == ["special_airy_ai", "special_airy_ai.out"]
    # CPU: a registration function, never a static registration for aten
    assert "TORCH_LIBRARY_IMPL" not in cpu and "void register_special_airy_ai_aten_cpu(torch::Library& m)" in cpu
    # no schema, fake kernel or autograd of ours; the one function that registers the CPU kernels
    reg, lib = files["registration.cpp"], files["library.py"]
    assert "special_airy_ai" not in reg.split("namespace mpsgen::generated")[0] and 'm.def("foo' in reg
    assert "register_special_airy_ai_aten_cpu(*m);" in reg
    assert "special_airy_ai" not in lib and "testns::foo" in lib
    # the ops.yaml line it came from
    assert f"ops.yaml:{line_of(tmp_path, 'special_airy_ai(')}" in mps.splitlines()[0]


def test_the_docs_list_what_ops_yaml_fills():
    from mpsgen.codegen.emit import aten_table

    root = Path(__file__).resolve().parent.parent
    page = (root / "docs" / "aten-ops.md").read_text()
    block = re.search(r"<!-- aten-table: [^\n]*-->\n(.*?)<!-- /aten-table -->", page, re.S)
    assert block, "docs/aten-ops.md has no aten-table block"
    assert block[1] == aten_table.markdown(loader.load(root / "ops.yaml")), \
        "docs/aten-ops.md's table is stale: paste the output of `python -m codegen.emit.aten_table`"


def _installed_minor() -> str:
    import torch

    return ".".join(torch.__version__.split("+")[0].split(".")[:2])


def test_torch_has_mps_is_checked_against_the_installed_torch(tmp_path):
    """`torch_has_mps: "X.Y"`: the first torch with its own MPS kernel. aten's native_functions.yaml
    of the installed torch is the oracle: silu has had an MPS kernel for years, special_ndtri none."""
    later = "99.0"
    e = only(errors(tmp_path, entry("silu(Tensor self) -> Tensor", f'    implements: aten\n    torch_has_mps: "{later}"\n')),
             line_of(tmp_path, "torch_has_mps:"), "torch_has_mps")
    assert "already runs this op on MPS" in e and f"before {later}" in e
    e = only(errors(tmp_path, entry("special_ndtri(Tensor self) -> Tensor",
                                    f'    implements: aten\n    torch_has_mps: "{_installed_minor()}"\n')),
             line_of(tmp_path, "torch_has_mps:"), "torch_has_mps")
    assert "has no MPS kernel for aten::special_ndtri" in e
    e = only(errors(tmp_path, entry("silu(Tensor self) -> Tensor",
                                    '    implements: aten\n    replaces: mps\n    torch_has_mps: "2.13"\n')),
             line_of(tmp_path, "torch_has_mps:"), "torch_has_mps")
    assert "give one of them" in e
    e = only(errors(tmp_path, entry("special_ndtri(Tensor self) -> Tensor", "    implements: aten\n    torch_has_mps: 2.15\n")),
             line_of(tmp_path, "torch_has_mps:"), "torch_has_mps")
    assert "quoted string" in e


def test_an_entry_steps_aside_on_a_torch_with_its_own_mps_kernel(tmp_path):
    """silu runs on MPS in every torch mpsgen builds against: with `torch_has_mps` at or before
    the installed release, the entry loads, its MPS stub registers nothing, its CPU stub stays."""
    registry = load(tmp_path, entry("silu(Tensor self) -> Tensor", '    implements: aten\n    torch_has_mps: "2.13"\n'))
    op = registry.aten_ops[0]
    assert op.torch_runs_mps and op.torch_has_mps == "2.13"
    files = render.render(registry)
    mps = files["silu_mps.mm"]
    assert "TORCH_LIBRARY_IMPL" not in mps and "torch runs aten::silu on MPS itself from 2.13" in mps
    assert "void register_silu_aten_cpu(torch::Library& m)" in files["silu_cpu.cpp"]
