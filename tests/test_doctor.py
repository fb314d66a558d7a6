"""`mpsgen doctor` (mpsgen/doctor.py): the report file a Mac owner attaches to an issue. Its Mac
path runs here with the Mac's commands stood in for (the toolchain, the build, the canary, the
main job on mps); its Linux path with the cross-build stood in for (tests/test_macos_build.py and
.ci/run run the real one)."""
from __future__ import annotations

import subprocess
import sys

import pytest

from mpsgen import doctor, mps_device
from mpsgen.codegen.build import ROOT
from mpsgen.codegen.package import read_project
from mpsgen.codegen.verify import macos_build

pytestmark = pytest.mark.quick


@pytest.fixture
def project():
    return read_project(ROOT)


@pytest.mark.parametrize("code", [0, 1])
def test_off_a_mac_it_runs_the_cross_build_and_says_what_only_a_mac_adds(project, tmp_path, monkeypatch, code):
    monkeypatch.setattr(sys, "platform", "linux")
    monkeypatch.setattr(macos_build, "main", lambda *a: print("check-macos: 88 unit(s) ...") or code)
    out = tmp_path / "report.txt"
    assert doctor.main(project, out) == code
    text = out.read_text()
    assert text.startswith("mpsgen doctor\nmachine: ") and "torch " in text and "check-macos: 88 unit(s) ..." in text
    assert all(f"  - {what}" in text for what in doctor.ONLY_A_MAC)
    assert text.endswith("result: ok\n" if code == 0 else "result: problems above\n")


def fake_mac(monkeypatch, missing=(), build=0):
    monkeypatch.setattr(sys, "platform", "darwin")
    ran = []

    def run(command):
        ran.append(command)
        if command[0] in missing or (len(command) > 3 and command[3] in missing):
            return 127, f"{command[0]}: not found"
        return build if command[1:3] == ["-m", "mpsgen"] else 0, "Apple clang version 17.0.0"

    monkeypatch.setattr(doctor, "_run", run)
    return ran


def test_on_a_mac_without_the_metal_compiler_the_build_goes_on_but_a_failing_canary_stops(project, tmp_path,
                                                                                           monkeypatch):
    fake_mac(monkeypatch, missing=("metal",))
    monkeypatch.setattr(mps_device, "canary", lambda: "MPS is reported available, but the canary raised on it: boom")
    assert doctor.main(project, tmp_path / "r.txt") == 1
    text = (tmp_path / "r.txt").read_text()
    assert "none Metal compiler: `xcrun -sdk macosx metal --version` exited 127 (the ops compile their Metal " \
           "at run time instead)" in text
    assert "ok   build (mpsgen build)" in text and "FAIL MPS canary: MPS is reported available" in text


def test_on_a_mac_a_failed_build_is_reported_with_its_output(project, tmp_path, monkeypatch):
    fake_mac(monkeypatch, build=1)
    assert doctor.main(project, tmp_path / "r.txt") == 1
    assert "FAIL build (mpsgen build)" in (tmp_path / "r.txt").read_text()


def test_on_a_mac_every_op_runs_on_mps_against_the_cpu(project, tmp_path, monkeypatch):
    fake_mac(monkeypatch)
    monkeypatch.setattr(mps_device, "canary", lambda: None)
    calls = []

    def report(command, **kw):
        calls.append((command, kw["env"]["MPSGEN_DEVICES"]))
        return subprocess.CompletedProcess(command, 0, "hypot   float32   mps   129/129   0.055\n", "")

    monkeypatch.setattr(doctor.subprocess, "run", report)
    assert doctor.main(project, tmp_path / "r.txt") == 0
    [(command, devices)] = calls
    assert command[1:3] == ["-m", "mpsgen.report"] and devices == "mps"
    assert command[command.index("--ops") + 1] == str(project.ops)
    text = (tmp_path / "r.txt").read_text()
    assert "ok   MPS canary: matches the CPU" in text and "hypot   float32   mps   129/129   0.055" in text
