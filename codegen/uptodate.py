"""A build where nothing changed, answered before torch is imported.

Such a build (`python setup.py build_ext --inplace` twice) spent 1.2 of its 1.5 s importing
torch for torch.utils.cpp_extension, which then found nothing to compile and nothing to link
(AMD EPYC family 26; on slower machines several seconds). After each successful `build_ext`
the build leaves a stamp: a digest of what the extension is made from that ninja does not see
(the command line, the build's environment variables, Python, torch, the compilers, mpsgen's
code and support files, the generated sources, the build folder and the extension itself,
each file by size and modification time) and the folder of ninja's build file. The next build
with the same command line, after generate, compares the digest and asks that ninja, with
`-n`, whether it has work (the headers each unit included, from its depfiles). Only when
both say nothing changed does it stop there; anything else (another digest, ninja's work, no
stamp, a `--force`, any other setuptools command) builds as before, and a build that fails
leaves no stamp.
"""
from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

STAMP = "up-to-date.json"
# The environment a build reads: mpsgen's settings, setuptools' and torch's compilers and flags,
# and PATH (which compiler `c++` is).
_ENV_NAMES = {"CC", "CXX", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "LDSHARED", "AR", "ARFLAGS", "ARCHFLAGS",
              "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "LIBRARY_PATH", "PATH", "SDKROOT", "DEVELOPER_DIR",
              "MACOSX_DEPLOYMENT_TARGET", "_PYTHON_SYSCONFIGDATA_NAME"}
_ENV_PREFIXES = ("MPSGEN_", "TORCH_", "SETUPTOOLS_", "DISTUTILS_", "CUDA", "ROCM", "HIP")


def eligible(argv: list[str]) -> bool:
    """A command line that only builds the extension (`build_ext`, maybe `--inplace`,
    `--quiet`), not forced."""
    commands = [a for a in argv if not a.startswith("-")]
    return commands == ["build_ext"] and not {"--force", "-f"} & set(argv)


def _files(folder: Path, skip: tuple[str, ...] = ()) -> list[Path]:
    return sorted(p for p in folder.rglob("*") if p.is_file() and "__pycache__" not in p.parts
                  and p.name not in skip) if folder.is_dir() else []


def _toolchain() -> list[Path]:
    """The compilers, ninja and torch that a build uses (their files: an upgrade changes them)."""
    from . import ninja_build

    found = [shutil.which(os.environ.get("CXX", "c++")), shutil.which(os.environ.get("CC", "cc")),
             shutil.which(ninja_build.ninja_command()[0])]
    if sys.platform.startswith("linux"):
        ziglang = importlib.util.find_spec("ziglang")
        if ziglang and ziglang.origin:
            found.append(str(Path(ziglang.origin).parent / "zig"))
    elif shutil.which("xcrun"):  # the selected Xcode's compilers
        for tool in ("clang++", "metal"):
            r = subprocess.run(["xcrun", "-f", tool], capture_output=True, text=True)
            found.append(r.stdout.strip() if r.returncode == 0 else None)
    torch = importlib.util.find_spec("torch")
    if torch and torch.origin:
        home = Path(torch.origin).parent
        found += [str(home / "version.py"), *map(str, home.glob("_C*")), *map(str, (home / "lib").glob("*"))]
    return [Path(p).resolve() for p in found if p]


def fingerprint(project, argv: list[str]) -> str:
    """The digest of what a build of `project` with `argv` is made from, but for what ninja
    checks itself (codegen/package.py: after generate)."""
    from . import build

    h = hashlib.sha256()
    env = {k: v for k, v in os.environ.items() if k in _ENV_NAMES or k.startswith(_ENV_PREFIXES)}
    h.update(repr((argv, sys.executable, sys.version, sorted(env.items()))).encode())
    package = project.root / project.package.replace(".", "/")
    files = [project.root / "pyproject.toml", Path(sys.argv[0]).resolve(), *_toolchain(),
             *_files(Path(__file__).resolve().parent), *_files(build.SUPPORT), *_files(project.generated),
             *_files(project.root / "build", skip=(STAMP,)), *sorted(package.glob("_C*"))]
    for path in files:
        try:
            st = path.stat()
            h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        except OSError:
            h.update(f"{path}\0missing\n".encode())
    return h.hexdigest()


def _stamp(project) -> Path:
    return project.root / "build" / STAMP


def is_fresh(project, argv: list[str]) -> bool:
    """Whether the last build of `project` was this command line's, and nothing it was made
    from has changed since: neither what the stamp's digest covers nor what ninja checks."""
    if not eligible(argv):
        return False
    try:
        stamp = json.loads(_stamp(project).read_text())
    except (OSError, ValueError):
        return False
    if stamp.get("fingerprint") != fingerprint(project, argv) or not Path(stamp.get("ninja_dir", "")).is_dir():
        return False
    from . import ninja_build

    r = subprocess.run([*ninja_build.ninja_command(), "-n"], cwd=stamp["ninja_dir"], capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.strip() == "ninja: no work to do."


def forget(project) -> None:
    """Before a build: until it succeeds, nothing is known to be up to date."""
    _stamp(project).unlink(missing_ok=True)


def remember(project, argv: list[str], ninja_dir: str) -> None:
    """After a successful build (ninja's build file in `ninja_dir`)."""
    if eligible(argv):
        stamp = _stamp(project)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(json.dumps({"fingerprint": fingerprint(project, argv),
                                     "ninja_dir": str(Path(ninja_dir).resolve())}))
