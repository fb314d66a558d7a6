"""Is there an MPS device to test on? Not where torch merely says so: a canary decides.

GitHub's hosted macOS runners run in Apple's Virtualization Framework, which has no MPS, yet torch
reports MPS available there; the first kernel then fails ("MPS backend out of memory (MPS
allocated: 0 bytes ...)", actions/runner-images#9918) or returns other values
(actions/runner-images#14380). So the tests use `mps` only when a known computation on it
matches the CPU's (`canary`). `MPSGEN_DEVICES=cpu` (or `cpu,mps`) sets the devices outright;
`MPSGEN_REQUIRE_MPS=1` (a real Apple-silicon machine, the self-hosted workflow job) makes a failed
canary an error instead of a CPU-only run.

`python -m mpsgen.mps_device` prints the verdict (and appends it to $GITHUB_STEP_SUMMARY where
that is set); it exits 1 only when MPS is required and fails.
"""
from __future__ import annotations

import functools
import os
import sys

import torch


def _computation(x: torch.Tensor) -> torch.Tensor:
    """exp, a multiply-add and a reduction: three kinds of kernel, each checked against the CPU."""
    return torch.stack([torch.exp(x), x * 0.5 + 1.0, x.cumsum(0) / x.numel()])


def canary(device: str = "mps", run=None) -> str | None:
    """None when `device` computes the canary as the CPU does; else why it cannot be used.
    `run` (a tensor on the CPU -> its result, on the CPU) stands in for the device in tests."""
    if run is None and not torch.backends.mps.is_available():
        return "torch.backends.mps.is_available() is False"
    x = torch.linspace(-4.0, 4.0, 4099)
    try:
        got = (run or (lambda t: _computation(t.to(device)).cpu()))(x)
    except Exception as e:  # noqa: BLE001 - whatever the device raises is the reason
        return f"MPS is reported available, but the canary raised on it: {type(e).__name__}: {str(e)[:300]}"
    want = _computation(x)
    if got.shape != want.shape or not torch.allclose(got, want, rtol=1e-4, atol=1e-5, equal_nan=True):
        error = (got - want).abs().max().item() if got.shape == want.shape else float("inf")
        return f"MPS is reported available, but the canary's values differ from the CPU's (max error {error:.3g})"
    return None


class MpsRequired(RuntimeError):
    pass


@functools.cache
def devices() -> tuple[str, ...]:
    """The devices the tests and the main job run on: the CPU backend everywhere, MPS where the
    canary passes (or as MPSGEN_DEVICES says)."""
    forced = os.environ.get("MPSGEN_DEVICES", "").strip()
    if forced:
        return tuple(d.strip() for d in forced.split(",") if d.strip())
    reason = canary()
    if reason is None:
        return ("cpu", "mps")
    if os.environ.get("MPSGEN_REQUIRE_MPS") == "1":
        raise MpsRequired(f"MPSGEN_REQUIRE_MPS=1, but the MPS device cannot be used: {reason}")
    return ("cpu",)


def main() -> int:
    reason = canary()
    if reason is None:
        verdict = "MPS: the canary matched the CPU; the tests run on `mps` too."
    else:
        verdict = f"MPS not used: {reason}. The tests run on the CPU backend only."
    print(verdict)
    summary = os.environ.get("GITHUB_STEP_SUMMARY")
    if summary:
        with open(summary, "a") as f:
            f.write(f"### MPS device\n\n{verdict}\n")
    return 1 if reason is not None and os.environ.get("MPSGEN_REQUIRE_MPS") == "1" else 0


if __name__ == "__main__":
    sys.exit(main())
