"""The torch releases mpsgen installs beside (issue 48): one requirement, said alike everywhere,
and each tested release a line of .ci/run."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

import torch
from packaging.requirements import Requirement

from mpsgen.codegen.torch_versions import REQUIREMENT, TESTED

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
    assert torch.__version__.split("+")[0] == TESTED[0]  # the suite runs on the default one


def test_ci_runs_each_other_release():
    lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert [m.group(1) for m in map(re.compile(r"^bash \.ci/torch-version (\S+)$").match, lines) if m] == list(TESTED[1:])


def test_a_new_project_asks_for_the_same_range(tmp_path):
    from mpsgen.scaffold import init

    init(tmp_path / "demo", "demo")
    project = tomllib.loads((tmp_path / "demo" / "pyproject.toml").read_text())
    assert REQUIREMENT in project["project"]["dependencies"]
    assert REQUIREMENT in project["build-system"]["requires"]
