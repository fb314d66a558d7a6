"""The build API: a registry compiled into a Python package with its own torch extension.

A project made by `mpsgen init` has a two-line setup.py,

    from mpsgen.codegen.package import setup
    setup()

and its settings in pyproject.toml:

    [tool.mpsgen]
    package = "myops"               # the Python package: myops._C, `import myops`
    ops = "ops.yaml"                # the registry (default)
    generated = "myops/generated"   # where generate writes (default: <package>/generated)

`setup()` generates (a registry error prints the same file:line messages as `mpsgen
generate` and exits 1, before setuptools runs), then builds `<package>._C` from the
generated sources and mpsgen's installed support sources with torch.utils.cpp_extension and
ninja, and ships the generated `library.py` inside the package. `pip install` and `pip
wheel` run it as they run any setup.py; build without isolation (`--no-build-isolation`),
so the extension is compiled against the installed torch. This repository's own setup.py
is the same call, with the generator's own packages added.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tomllib
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Project:
    """Where a project's registry, generated code and package are."""

    root: Path
    package: str  # the Python package that holds the extension, `<package>._C`
    ops: Path  # the registry
    generated: Path  # generate's output folder
    loads: str  # the module whose import loads the ops (the package, or mpsgen.ops for mpsgen's own)

    @property
    def build_dir(self) -> Path:
        return self.root / "build" / self.package

    def use_in_place_build(self) -> None:
        """Put the project's folder first on sys.path when it holds an in-place build (`mpsgen
        build`), so that build is what imports; else the installed package (`pip install`) does."""
        import importlib.machinery

        folder = self.root / self.package.replace(".", "/")
        if any((folder / f"_C{suffix}").is_file() for suffix in importlib.machinery.EXTENSION_SUFFIXES) \
                and str(self.root) not in sys.path:
            sys.path.insert(0, str(self.root))


def find_project(start: Path | None = None) -> Project:
    """The project whose pyproject.toml (with a [tool.mpsgen] table) is in `start` or above."""
    here = Path(start or Path.cwd()).resolve()
    for folder in (here, *here.parents):
        if (folder / "pyproject.toml").is_file():
            project = read_project(folder)
            if project is not None:
                return project
    raise LookupError(f"no mpsgen project in {here} or above: no pyproject.toml with a [tool.mpsgen] table "
                      f"(start one with `mpsgen init DIR --namespace NAME`)")


def read_project(root: Path) -> Project | None:
    """The project of `root`/pyproject.toml, or None when it has no [tool.mpsgen] table."""
    root = Path(root).resolve()
    path = root / "pyproject.toml"
    with open(path, "rb") as f:
        try:
            table = tomllib.load(f).get("tool", {}).get("mpsgen")
        except tomllib.TOMLDecodeError as e:
            raise ValueError(f"{path}: {e}") from None
    if table is None:
        return None
    unknown = set(table) - {"package", "ops", "generated", "loads"}
    if unknown or not isinstance(table.get("package"), str):
        raise ValueError(f"{path}: [tool.mpsgen] takes `package` (required, a string), `ops`, `generated` and "
                         f"`loads`" + (f"; unknown: {', '.join(sorted(unknown))}" if unknown else ""))
    package = table["package"]
    return Project(root, package, root / table.get("ops", "ops.yaml"),
                   root / table.get("generated", f"{package.replace('.', '/')}/generated"),
                   table.get("loads", package))


def generate(project: Project, command: str = "generate") -> int:
    """`mpsgen generate` (or `check`) for the project; 0 when generated/ is fresh."""
    from .__main__ import main

    return main([command, "--ops", str(project.ops), "--out", str(project.generated)])


def extension(project: Project):
    """The CppExtension `<package>._C` of the project's generated code (after generate)."""
    from torch.utils import cpp_extension
    from torch.utils.cpp_extension import CppExtension

    from . import build, compute_build, ninja_build

    # one short line per compiled unit, and the compiler's own messages (ninja_build.run_ninja)
    cpp_extension._run_ninja_build = ninja_build.run_ninja
    build_dir = project.build_dir
    build_dir.mkdir(parents=True, exist_ok=True)
    mps = sys.platform == "darwin"
    if mps:
        build.mps_metal_sources_header(build_dir, generated=project.generated)
    sources = build.host_sources(build_dir, mps, project.generated)
    sources += build.cpu_kernel_sources(build_dir, build.kernel_compiler(), project.generated)
    # __FILE__ names files relative to the project and to mpsgen (build.file_prefix_maps)
    fiber_compile, fiber_link = compute_build.fiber_flags()
    flags = list(build.CXX_FLAGS) + (build.MPS_CXX_FLAGS if mps else build.GCC_CXX_FLAGS) \
        + build.file_prefix_maps(project.root) + fiber_compile
    link = (["-framework", "Metal", "-framework", "Foundation"] if mps else [*build.GCC_LINK_FLAGS, *build.linker_flags()]) \
        + fiber_link
    include_dirs = build.host_include_dirs(build_dir) + ([build.MPS_INCLUDE] if mps else [])
    return CppExtension(f"{project.package}._C", [_relative(p, project.root, build_dir) for p in sources],
                        include_dirs=[str(d) for d in include_dirs], extra_compile_args={"cxx": flags},
                        extra_link_args=link)


def _relative(path: Path, root: Path, build_dir: Path) -> str:
    """`path` relative to the project, as setuptools wants sources. mpsgen's own support
    sources (installed, outside the project) are compiled through a one-line unit in the build
    folder that includes them, so their objects stay in the project's build folder."""
    path = Path(path).resolve()
    if not path.is_relative_to(root):
        from .build import SUPPORT, _write_if_changed

        name = "_".join(path.relative_to(SUPPORT).parts) if path.is_relative_to(SUPPORT) else path.name
        unit = build_dir / "support" / name
        _write_if_changed(unit, f"// mpsgen's {path.name}, compiled into this project (written by the build)\n"
                                f'#include "{path}"\n')
        path = unit
    return os.path.relpath(path, root)


def link_when_stale(compiler, folder: Path):
    """`compiler.link` (a distutils compiler's) that does nothing when its output is newer
    than every object and was linked with the same arguments. Each link that succeeds leaves
    in `folder` (the build's) its key and the commands it ran (uptodate.link_record), which
    the builds without torch run again."""
    from . import uptodate

    link = compiler.link

    def link_if_stale(target_desc, objects, output_filename, output_dir=None, *args, **kwargs):
        out = Path(output_dir or "", output_filename)
        key = hashlib.sha256(repr((target_desc, list(objects), str(out), args, kwargs)).encode()).hexdigest()
        record = uptodate.link_record(folder, out)
        try:
            last = json.loads(record.read_text())
        except (OSError, ValueError):
            last = {}
        if last.get("key") == key and uptodate.linked(out, objects):
            return
        record.unlink(missing_ok=True)
        commands = []

        def recording(run):
            def run_and_record(command, **kw):
                if list(command) not in commands:  # one command, whichever of the two ran it
                    commands.append(list(command))
                return run(command, **kw)
            return run_and_record

        runners = {n: getattr(compiler, n) for n in ("call", "spawn") if hasattr(compiler, n)}
        for name, run in runners.items():  # setuptools' `call` (`spawn` in older ones)
            setattr(compiler, name, recording(run))
        try:
            link(target_desc, objects, output_filename, output_dir, *args, **kwargs)
        finally:
            for name, run in runners.items():
                setattr(compiler, name, run)
        folder.mkdir(parents=True, exist_ok=True)
        record.write_text(json.dumps({"key": key, "output": str(out.resolve()), "commands": commands,
                                      "objects": [str(Path(o).resolve()) for o in objects]}))

    return link_if_stale


def _build_extension_command(project: Project):
    """torch's BuildExtension (ninja), linking only when the objects or the link changed
    (link_when_stale): torch's command always links, since it leaves to ninja what to
    compile; that was 1.2 s of a build where nothing changed. A successful build leaves the
    stamp that lets the next one stop before importing torch when nothing changed (uptodate)."""
    from torch.utils.cpp_extension import BuildExtension

    from . import uptodate

    class Build(BuildExtension.with_options(use_ninja=True)):
        def build_extensions(self) -> None:
            self.compiler.link = link_when_stale(self.compiler, Path(self.build_temp))
            # distutils adds a virtual environment's include folder, which holds no header in most:
            # left out, so that venvs of one Python write the same compile commands, and a build
            # from another venv (pip wheel from a test venv) does not make ninja run every step again
            venv_include = os.path.join(sys.exec_prefix, "include")
            if sys.exec_prefix != sys.base_exec_prefix and _holds_no_file(Path(venv_include)):
                self.compiler.include_dirs = [d for d in self.compiler.include_dirs if d != venv_include]
            super().build_extensions()

        def run(self) -> None:
            super().run()
            uptodate.remember(project, sys.argv[1:], self.build_temp)

    return Build


def _holds_no_file(folder: Path) -> bool:
    return folder.is_dir() and not any(p.is_file() for p in folder.rglob("*"))


# What the build imports, with the package that provides it: under `pip install --no-build-isolation`
# pip installs none of pyproject.toml's build requirements, so a fresh venv lacks them.
BUILD_REQUIREMENTS = (("torch", "torch"), ("ninja", "ninja"), ("jinja2", "jinja2"), ("yaml", "pyyaml"),
                      ("setuptools", "setuptools>=70.1"))


def missing_build_requirements(argv: list[str]) -> list[str]:
    """The packages the build needs and this Python lacks: each of BUILD_REQUIREMENTS, and for a
    wheel (`bdist_wheel`, what pip runs) a setuptools that has that command (70.1 and later, or the
    `wheel` package): Python 3.11's venvs carry setuptools 65, where pip stops with "invalid command
    'bdist_wheel'"."""
    import importlib.util

    missing = [package for module, package in BUILD_REQUIREMENTS if importlib.util.find_spec(module) is None]
    if "bdist_wheel" in argv and "setuptools>=70.1" not in missing and \
            importlib.util.find_spec("setuptools.command.bdist_wheel") is None and importlib.util.find_spec("wheel") is None:
        missing.append("setuptools>=70.1")
    return missing


def setup(root: Path | str | None = None, **kwargs):
    """setuptools.setup for the project in `root` (default: the calling setup.py's folder, the
    current directory under pip): generate, then build `<package>._C`. `kwargs` go to
    setuptools (packages, package_data, ...); the package and its generated library.py are
    added."""
    missing = missing_build_requirements(sys.argv)
    if missing:
        wanted = " ".join(f"'{m}'" if ">" in m else m for m in missing)
        sys.exit(f"error: mpsgen's build needs {', '.join(missing)}, which this Python ({sys.executable}) lacks: "
                 f"`{Path(sys.executable).name} -m pip install {wanted}`, then run the same command again (without "
                 f"build isolation, `pip install --no-build-isolation .`, so that it compiles against this torch)")
    from .registry.opinfo_names import torch_version
    from .torch_versions import untested

    said, stop = untested(torch_version())
    if stop:
        sys.exit(said)
    if said:
        print(said, file=sys.stderr)
    project = read_project(Path(root or Path.cwd()))
    if project is None:
        sys.exit(f"{Path(root or Path.cwd()) / 'pyproject.toml'}: no [tool.mpsgen] table")
    os.chdir(project.root)
    if generate(project):
        sys.exit(f"mpsgen: {project.ops.name} has errors (above); nothing was built")
    from . import uptodate

    # only the project's own extension: ninja's build file, which the check asks, is the last
    # extension's, and what another is made from is not in the stamp
    try:
        done = None if kwargs.get("ext_modules") else uptodate.build_without_torch(project, sys.argv[1:])
    except (RuntimeError, subprocess.CalledProcessError) as e:
        sys.exit(f"error: {e}")
    if done == "up to date":
        print(f"ninja: no work to do.\nmpsgen: {project.package}._C is up to date (nothing changed since its "
              f"last build)", flush=True)
    elif done:
        print(f"mpsgen: {project.package}._C built without setuptools (the same ops and build setting as its "
              f"last build)", flush=True)
    if done:
        return None
    uptodate.forget(project)
    import setuptools

    packages = list(kwargs.pop("packages", [project.package]))
    package_data = dict(kwargs.pop("package_data", {}))
    library = project.generated / "library.py"
    if library.is_relative_to(project.root / project.package.replace(".", "/")):
        inside = library.relative_to(project.root / project.package.replace(".", "/"))
        package_data.setdefault(project.package, []).append(str(inside))
    return setuptools.setup(
        packages=packages,
        package_data=package_data,
        ext_modules=[extension(project), *kwargs.pop("ext_modules", [])],
        cmdclass={"build_ext": _build_extension_command(project), **kwargs.pop("cmdclass", {})},
        **kwargs,
    )
