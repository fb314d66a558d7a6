"""clang's driver on Linux: PyPI's ziglang's `zig clang`, in g++ mode, with the system's GNU
toolchain. The build compiles the CPU kernel units with it (codegen/build.py) and check-metal's
clang step checks with it (codegen/verify/clang_check.py)."""
from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

INSTALL_HINT = ("install the set-up's requirements: `bash run.sh`, or "
                "`.venv/bin/python -m pip install -r requirements.txt` (PyPI's ziglang bundles clang)")


class ClangMissing(RuntimeError):
    pass


def clang_command() -> list[str]:
    """clang's driver from PyPI's ziglang, in g++ mode, for this Linux machine's GNU toolchain."""
    if not sys.platform.startswith("linux"):
        raise ClangMissing(f"the clang step runs on Linux (ziglang's clang with the system's GNU toolchain); "
                           f"on {sys.platform} build the extension with the platform's clang instead")
    try:
        import ziglang
    except ImportError:
        raise ClangMissing(f"check-metal needs clang and cannot import ziglang: {INSTALL_HINT}") from None
    home = Path(ziglang.__file__).resolve().parent
    zig = home / "zig"
    if not zig.is_file():
        raise ClangMissing(f"ziglang at {home} has no zig binary: reinstall it ({INSTALL_HINT})")
    return [str(zig), "clang", "--driver-mode=g++", f"--target={platform.machine()}-linux-gnu",
            "-resource-dir", str(home / "lib")]


def clang_version(clang: list[str]) -> str:
    r = subprocess.run([*clang, "--version"], capture_output=True, text=True)
    return r.stdout.splitlines()[0] if r.returncode == 0 and r.stdout else "clang (version unknown)"
