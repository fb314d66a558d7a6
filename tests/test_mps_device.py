"""The MPS canary (mpsgen/mps_device.py): `mps` is used only where a known computation on it
matches the CPU's, since GitHub's hosted macOS runners report MPS available and then fail
(actions/runner-images#9918) or compute other values (#14380). Each case stands in for the device."""
from __future__ import annotations

import pytest
import torch

from mpsgen import mps_device

pytestmark = pytest.mark.quick


@pytest.fixture(autouse=True)
def fresh_devices():
    mps_device.devices.cache_clear()
    yield
    mps_device.devices.cache_clear()


def test_a_device_that_computes_as_the_cpu_passes():
    assert mps_device.canary(run=mps_device._computation) is None


def test_a_device_that_raises_as_a_virtualised_runner_does_is_not_used():
    def out_of_memory(x):
        raise RuntimeError("MPS backend out of memory (MPS allocated: 0 bytes, other allocations: 0 bytes)")

    reason = mps_device.canary(run=out_of_memory)
    assert reason.startswith("MPS is reported available, but the canary raised on it: RuntimeError: MPS backend out")


@pytest.mark.parametrize("wrong", [lambda r: r + 1e-3, lambda r: r[:2], lambda r: torch.zeros_like(r)])
def test_a_device_that_computes_other_values_is_not_used(wrong):
    reason = mps_device.canary(run=lambda x: wrong(mps_device._computation(x)))
    assert reason.startswith("MPS is reported available, but the canary's values differ from the CPU's")


def test_without_mps_the_cpu_backend_alone_runs(monkeypatch):
    monkeypatch.delenv("MPSGEN_DEVICES", raising=False)
    monkeypatch.setattr(torch.backends.mps, "is_available", lambda: False)
    assert mps_device.canary() == "torch.backends.mps.is_available() is False"
    assert mps_device.devices() == ("cpu",)


def test_reported_but_failing_mps_means_cpu_only_unless_mps_is_required(monkeypatch):
    monkeypatch.delenv("MPSGEN_DEVICES", raising=False)
    monkeypatch.setattr(mps_device, "canary", lambda: "the canary raised")
    assert mps_device.devices() == ("cpu",)
    mps_device.devices.cache_clear()
    monkeypatch.setenv("MPSGEN_REQUIRE_MPS", "1")
    with pytest.raises(mps_device.MpsRequired, match="MPSGEN_REQUIRE_MPS=1, but the MPS device cannot be used: "
                                                     "the canary raised"):
        mps_device.devices()


def test_a_passing_canary_adds_mps_and_the_variable_overrides_it(monkeypatch):
    monkeypatch.delenv("MPSGEN_DEVICES", raising=False)
    monkeypatch.setattr(mps_device, "canary", lambda: None)
    assert mps_device.devices() == ("cpu", "mps")
    mps_device.devices.cache_clear()
    monkeypatch.setenv("MPSGEN_DEVICES", "cpu")
    assert mps_device.devices() == ("cpu",)


def test_the_verdict_goes_to_the_job_summary(monkeypatch, tmp_path, capsys):
    summary = tmp_path / "summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    monkeypatch.setattr(mps_device, "canary", lambda: "the canary raised")
    monkeypatch.delenv("MPSGEN_REQUIRE_MPS", raising=False)
    assert mps_device.main() == 0
    assert "MPS not used: the canary raised. The tests run on the CPU backend only." in summary.read_text()
    monkeypatch.setenv("MPSGEN_REQUIRE_MPS", "1")
    assert mps_device.main() == 1
