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
from mpsgen.codegen.torch_versions import REQUIREMENT, TESTED

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
    major, minor, _ = (int(p) for p in TESTED[-1].split("."))
    assert not spec.contains(f"{major}.{minor + 1}.0")  # untested: refused until it is tested
    assert not spec.contains("2.12.1")
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
