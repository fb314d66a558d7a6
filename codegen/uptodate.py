"""Builds answered before torch is imported: when nothing changed, or only the registry's code.

A build through setup.py imports torch for torch.utils.cpp_extension: 1.2 of the 1.5 s of a
build where nothing changed (AMD EPYC family 26; more on slower machines), and as much of
every edit's. After each successful `build_ext` the build leaves a stamp with two digests of
what the extension is made from, each file by its size and modification time:
- its setting: the command line, the build's environment variables, Python, torch's files,
  the compilers and ninja, mpsgen's code and support files, the project's pyproject.toml and
  setup.py, and the names of the generated files (which ops there are);
- all of it: the setting, the generated files, the build folder and the extension.
The next `build_ext` with the same command line, after generate:
- all of it the same, and ninja (`-n`, which checks the headers each unit included) without
  work: the extension is up to date, and the build stops;
- the same setting (an edit to ops.yaml that adds or removes no op): the build's own steps,
  without torch: the units whose keys changed written again (build.py), ninja on the build
  file of the last build (the same sources and flags: that is the setting), the last link's
  command again when an object is newer than the extension, and its copy in place;
- anything else, or no stamp (a build that fails or stops leaves none), `--force`, another
  setuptools command (`pip install` and `pip wheel` always build), a setup.py with extensions
  of its own, the Objective-C++ build of macOS (its Metal sources header needs torch): the
  full build through setuptools and torch.
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
    from . import build, ninja_build

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
    home = build.torch_home()
    found += [str(home / "version.py"), *map(str, home.glob("_C*")), *map(str, (home / "lib").glob("*"))]
    return [Path(p).resolve() for p in found if p]


def _add(h, files: list[Path]) -> None:
    for path in files:
        try:
            st = path.stat()
            h.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\n".encode())
        except OSError:
            h.update(f"{path}\0missing\n".encode())


def digests(project, argv: list[str]) -> tuple[str, str]:
    """The digests of a build of `project` with `argv`: its setting, and all it is made from
    but what ninja checks itself (codegen/package.py: after generate)."""
    from . import build

    setting = hashlib.sha256()
    env = {k: v for k, v in os.environ.items() if k in _ENV_NAMES or k.startswith(_ENV_PREFIXES)}
    generated = _files(project.generated)
    setting.update(repr((argv, sys.executable, sys.version, sorted(env.items()),
                         [p.relative_to(project.generated).as_posix() for p in generated])).encode())
    _add(setting, [project.root / "pyproject.toml", Path(sys.argv[0]).resolve(), *_toolchain(),
                   *_files(Path(__file__).resolve().parent), *_files(build.SUPPORT)])
    everything = setting.copy()
    package = project.root / project.package.replace(".", "/")
    _add(everything, [*generated, *_files(project.root / "build", skip=(STAMP,)), *sorted(package.glob("_C*"))])
    return setting.hexdigest(), everything.hexdigest()


def _stamp(project) -> Path:
    return project.root / "build" / STAMP


LINK_RECORD = ".link.json"  # in ninja's folder, beside the objects


def link_record(folder: Path, output: Path) -> Path:
    """Where package.link_when_stale keeps its link's key and what the link ran (the
    commands, for the builds without torch), from the last link that succeeded."""
    return folder / (output.name + LINK_RECORD)


def linked(output: Path, objects: list[str]) -> bool:
    """Whether `output` exists and is newer than every object."""
    return output.is_file() and all(os.path.getmtime(o) < output.stat().st_mtime for o in objects)


def _no_work(ninja_dir: Path) -> bool:
    from . import ninja_build

    r = subprocess.run([*ninja_build.ninja_command(), "-n"], cwd=ninja_dir, capture_output=True, text=True)
    return r.returncode == 0 and r.stdout.strip() == "ninja: no work to do."


def build_without_torch(project, argv: list[str]) -> str | None:
    """"up to date", "built", or None when the build needs setuptools and torch (above).
    Raises RuntimeError when a unit does not compile, CalledProcessError when the link fails."""
    try:
        stamp = json.loads(_stamp(project).read_text()) if eligible(argv) else {}
    except (OSError, ValueError):
        return None
    ninja_dir = Path(stamp.get("ninja_dir", "/nonexistent"))
    if not ninja_dir.is_dir():
        return None
    setting, everything = digests(project, argv)
    if stamp.get("setting") != setting:
        return None
    if stamp.get("everything") == everything and _no_work(ninja_dir):
        return "up to date"
    records = list(ninja_dir.glob("*" + LINK_RECORD))
    if sys.platform == "darwin" or len(records) != 1:
        return None
    link = json.loads(records[0].read_text())
    if not link.get("commands"):  # a setuptools whose link this build could not see
        return None
    forget(project)
    from . import build, ninja_build

    build.host_sources(project.build_dir, False, project.generated)
    build.cpu_kernel_sources(project.build_dir, build.kernel_compiler(), project.generated)
    ninja_build.run_ninja(str(ninja_dir), False, "Error compiling objects")
    out = Path(link["output"])
    for command in [] if linked(out, link["objects"]) else link["commands"]:
        subprocess.run(command, check=True)
    if {"--inplace", "-i"} & set(argv):  # setuptools' copy of the extension into the package, as it makes it
        shutil.copy2(out, project.root / project.package.replace(".", "/") / out.name)
    remember(project, argv, str(ninja_dir))
    return "built"


def forget(project) -> None:
    """Before a build: until it succeeds, nothing is known to be up to date."""
    _stamp(project).unlink(missing_ok=True)


def remember(project, argv: list[str], ninja_dir: str) -> None:
    """After a successful build (ninja's build file in `ninja_dir`)."""
    if eligible(argv):
        setting, everything = digests(project, argv)
        stamp = _stamp(project)
        stamp.parent.mkdir(parents=True, exist_ok=True)
        stamp.write_text(json.dumps({"setting": setting, "everything": everything,
                                     "ninja_dir": str(Path(ninja_dir).resolve())}))
