"""An extension runs only under the torch it was compiled against: it records that torch in the
file (support/host/module.cpp), and mpsgen/runtime.py reads it before loading the extension, so
another torch gets an ImportError naming both versions and how to rebuild, not an undefined
symbol or a crash in a static initializer. mpsgen itself installs beside the torch releases it is
tested with (issue 48): one requirement, said alike everywhere, and each release a line of .ci/run."""
from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

import pytest
import torch
from packaging.requirements import Requirement

import mpsgen.ops  # noqa: F401  (loads mpsgen._C)
from mpsgen import runtime
from mpsgen.codegen.build import GENERATED
from mpsgen.codegen.torch_versions import ALLOW_UNTESTED, FEATURES, REQUIREMENT, TESTED, gives, untested

pytestmark = pytest.mark.quick
RUNNING = torch.__version__.split("+", 1)[0]


def test_the_extension_records_the_torch_it_was_built_against():
    assert runtime.built_against(sys.modules["mpsgen._C"].__file__) == RUNNING


def test_an_extension_built_against_another_torch_is_refused_before_it_loads(tmp_path, monkeypatch):
    built = Path(sys.modules["mpsgen._C"].__file__)
    data = built.read_bytes()
    marker = f"mpsgen-built-against-torch {RUNNING}\n".encode()
    assert data.count(marker) == 1
    package = tmp_path / "oldops"
    package.mkdir()
    (package / "__init__.py").write_text("")
    (package / built.name).write_bytes(data.replace(marker, b"mpsgen-built-against-torch 2.12.9\n"))
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(ImportError) as e:
        runtime.load_ops({"__name__": "oldops"}, GENERATED / "library.py")
    message = str(e.value)
    assert f"oldops._C ({package / built.name}) was built against torch 2.12.9, and this is torch {RUNNING}" in message
    assert "`mpsgen build` in its project" in message and "--no-build-isolation --force-reinstall" in message
    assert "oldops._C" not in sys.modules  # refused before it was loaded


def test_a_file_without_the_record_is_left_to_the_import(tmp_path):
    other = tmp_path / "plain.so"
    other.write_bytes(b"\x7fELF not ours")
    assert runtime.built_against(other) is None


ROOT = Path(__file__).resolve().parents[1]


def test_pyproject_asks_for_the_tested_range_at_install_and_build():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    torches = [r for r in (*project["project"]["dependencies"], *project["build-system"]["requires"])
               if Requirement(r).name == "torch"]
    assert torches == [REQUIREMENT, REQUIREMENT]


def test_every_tested_release_is_in_the_range_and_nothing_past_the_newest():
    spec = Requirement(REQUIREMENT).specifier
    assert all(spec.contains(v) for v in TESTED)
    assert not spec.contains("2.12.1")
    # no upper bound: pip would replace a newer torch with an older one; the build refuses it instead
    major, minor, _ = (int(p) for p in TESTED[-1].split("."))
    newer = f"{major}.{minor + 1}.0"
    assert spec.contains(newer)
    said, stop = untested(newer, {})
    assert stop and newer in said and ALLOW_UNTESTED in said and f"torch=={TESTED[-1]}" in said
    said, stop = untested(newer, {ALLOW_UNTESTED: "1"})
    assert not stop and "warning" in said
    assert all(untested(v, {}) == ("", False) for v in (*TESTED, RUNNING + "+cpu"))
    assert untested("2.12.1", {})[1]
    assert RUNNING in TESTED  # the suite runs on each (the whole on the default, the quick subset on the others)


def test_ci_runs_each_other_release():
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert [m.group(1) for m in map(re.compile(r"^bash \.ci/torch-version (\S+)$").match, lines) if m] == list(TESTED[1:])


def test_a_new_project_asks_for_the_same_range(tmp_path):
    from mpsgen.scaffold import init

    init(tmp_path / "demo", "demo")
    project = tomllib.loads((tmp_path / "demo" / "pyproject.toml").read_text())
    assert REQUIREMENT in project["project"]["dependencies"]
    assert REQUIREMENT in project["build-system"]["requires"]


def test_a_build_under_an_untested_torch_stops_before_it_generates(tmp_path, monkeypatch):
    from mpsgen.codegen import package
    from mpsgen.codegen.registry import opinfo_names

    monkeypatch.setattr(opinfo_names, "torch_version", lambda: "9.1.0")
    monkeypatch.delenv(ALLOW_UNTESTED, raising=False)
    with pytest.raises(SystemExit) as e:
        package.setup(tmp_path)  # no project here: the torch is refused first
    assert "torch 9.1.0 is newer" in str(e.value) and ALLOW_UNTESTED in str(e.value)
    assert not any(tmp_path.iterdir())


def test_the_feature_table_says_what_the_installed_torchs_headers_have():
    """FEATURES decides; the installed torch's own headers are the oracle for it."""
    from mpsgen.codegen.build import torch_include

    indexing = (torch_include() / "c10" / "metal" / "indexing.h").read_text()
    assert gives("ternary_alpha", RUNNING) == ("#define REGISTER_TERNARY_ALPHA_OP(" in indexing)
    library = (torch_include() / "ATen" / "native" / "mps" / "MetalShaderLibrary.h").read_text()
    ternary = re.search(r"void exec_ternary_kernel\(([^)]*)\)", library)[1]
    assert gives("ternary_alpha", RUNNING) == ("alpha" in ternary)
    assert not gives("ternary_alpha", "2.14.1") and gives("ternary_alpha", "2.15.0")


def test_the_kernel_units_include_a_features_header_only_where_the_torch_has_the_feature():
    """Before 2.15 a unit's text is what it was (its cached object too); with 2.15's headers,
    float8.h is there and common.h includes it in its Metal branch, which the shim then takes."""
    from mpsgen.codegen.build import torch_include
    from mpsgen.codegen.emit.host_names import feature_headers

    has_float8 = (torch_include() / "c10" / "metal" / "float8.h").is_file()
    assert ("metal_branch.h" in feature_headers()) == has_float8 == gives("float8", RUNNING)
    assert ("uint3_position.h" in feature_headers()) == gives("ternary_alpha", RUNNING)


def test_a_kernel_with_a_uint3_position_registers_through_the_1d_adapter():
    from mpsgen.codegen.emit.host_names import parse_instantiations, registration_lines

    # as the preprocessor leaves it: a `constant` pointer is `const __attribute__((address_space(2)))`
    text = ('template [[host_name("f_strided_float_float_float")]] void :: c10::metal::ternary_alpha_strided'
            '<float, float, f_functor, float>( void* out, const __attribute__((address_space(2))) long* sizes,'
            ' const uint& ndim, uint3 tid);\n'
            'template [[host_name("f_dense_float_float_float")]] void ::c10::metal::ternary_alpha_dense'
            '<float, float, f_functor, float>(device float* out, constant float* input, uint tid);\n')
    strided, dense = parse_instantiations(text)
    assert (strided.position, dense.position) == ("uint3", "")
    lines = registration_lines([strided, dense])
    assert "Kernel<::mpsgen::cpu::detail::uint3_position<&::c10::metal::ternary_alpha_strided<float, float, f_functor, float>>" in lines
    assert "Kernel<&::c10::metal::ternary_alpha_dense<float, float, f_functor, float>" in lines
