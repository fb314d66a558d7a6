"""`mpsgen doctor`: the one command a Mac owner runs to verify mpsgen on their Mac, and one file to
attach to an issue (default `mpsgen-doctor.txt` in the project).

On a Mac it checks the toolchain (macOS version, Xcode or its Command Line Tools, the Metal
compiler), builds the project (`mpsgen build`), asks the MPS canary (mpsgen/mps_device.py), and runs
op-output-match on the `mps` device for every op and dtype, against torch's CPU op as the oracle:
per row the matched count and the worst error as a fraction of its tolerance. Elsewhere it runs
what this machine can: the macOS cross-build and its symbol check (`check-macos`), and says what
only a Mac adds. The report starts with the machine and the versions.
"""
from __future__ import annotations

import contextlib
import io
import os
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path

ONLY_A_MAC = (
    "Apple's Metal compiler on the generated .metal (the CPU backend compiled them as C++ here)",
    "Apple clang and the real SDK on the .mm stubs (the cross-build used zig's clang and a stand-in SDK)",
    "that the extension loads (dyld), with the Mac's own libc++",
    "the ops on the MPS device, against torch's CPU op",
)


def _run(command: list[str]) -> tuple[int, str]:
    """A command's exit status and output (127 where it is not there)."""
    try:
        r = subprocess.run(command, capture_output=True, text=True, timeout=600)
    except (OSError, subprocess.TimeoutExpired) as e:
        return 127, str(e)
    return r.returncode, (r.stdout + r.stderr).strip()


def _version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def machine() -> list[str]:
    mac = platform.mac_ver()[0]
    return [f"machine: {platform.machine()}, {platform.platform()}" + (f", macOS {mac}" if mac else ""),
            f"python {platform.python_version()}, torch {_version('torch')}, mpsgen {_version('mpsgen')}"]


def toolchain() -> tuple[list[str], bool]:
    """The Mac's toolchain, one line each; whether the build can go on (a compiler is there)."""
    lines, ok = [], True
    for what, command, required in (("Xcode", ["xcodebuild", "-version"], False),
                                    ("developer tools", ["xcode-select", "-p"], True),
                                    ("clang", ["clang", "--version"], True),
                                    ("Metal compiler", ["xcrun", "-sdk", "macosx", "metal", "--version"], False)):
        code, out = _run(command)
        first = out.splitlines()[0] if out else ""
        if code == 0:
            lines.append(f"ok   {what}: {first}")
        else:
            ok &= not required
            lines.append(f"{'FAIL' if required else 'none'} {what}: `{' '.join(command)}` exited {code}"
                         + ("" if required else " (the ops compile their Metal at run time instead)"))
    return lines, ok


def on_a_mac(project) -> tuple[list[str], int]:
    from . import mps_device

    lines, ok = toolchain()
    if not ok:
        return lines + ["stopped: no compiler (install Xcode's Command Line Tools: xcode-select --install)"], 1
    code, out = _run([sys.executable, "-m", "mpsgen", "build", "--project", str(project.root)])
    lines.append(f"{'ok  ' if code == 0 else 'FAIL'} build (mpsgen build)")
    if code:
        return lines + [out[-6000:]], 1
    reason = mps_device.canary()
    lines.append("ok   MPS canary: matches the CPU" if reason is None else f"FAIL MPS canary: {reason}")
    if reason is not None:
        return lines, 1
    env = {**os.environ, "MPSGEN_DEVICES": "mps"}
    r = subprocess.run([sys.executable, "-m", "mpsgen.report", "--ops", str(project.ops), "--loads", project.loads],
                       capture_output=True, text=True, env=env, cwd=project.root)
    lines += ["", "op-output-match on mps, against torch's CPU op (mpsgen.report):", r.stdout.rstrip(),
              r.stderr.rstrip()[-3000:]]
    return lines, r.returncode


def elsewhere(project) -> tuple[list[str], int]:
    from .codegen.verify import macos_build

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = macos_build.main(project.root, project.generated, project.root / "build" / "macos-arm64" / project.package)
    lines = [f"not a Mac ({sys.platform}): the macOS cross-build and its symbol check (check-macos):",
             out.getvalue().rstrip(), "", "What only a Mac adds (run `mpsgen doctor` there):"]
    return lines + [f"  - {what}" for what in ONLY_A_MAC], code


def main(project, out: Path | None = None) -> int:
    report = Path(out) if out else project.root / "mpsgen-doctor.txt"
    lines, code = (on_a_mac if sys.platform == "darwin" else elsewhere)(project)
    text = "\n".join(["mpsgen doctor", *machine(), f"project: {project.root} (package {project.package})", "",
                      *lines, "", f"result: {'ok' if code == 0 else 'problems above'}"]) + "\n"
    report.write_text(text)
    print(text, end="")
    print(f"mpsgen doctor: wrote {report}: attach it to an issue")
    return code
