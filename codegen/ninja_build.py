"""ninja for torch's BuildExtension: the build file torch writes, given its compilers (clang
for the kernel units and the host units, g++ with OpenMP for the executor), every compile step
through the object cache, the longest first; and ninja run with one short line per unit."""
from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

from .build import (CLANG_KERNEL_FLAGS, CXX_FLAGS, GCC_CXX_FLAGS, GCC_OPENMP_FLAGS, OPENMP_SOURCES, ROOT,
                    _write_if_changed, kernel_compiler)
from .compute_build import CHECKED_KERNEL_FLAGS, localize_command

_NINJA_STEP = re.compile(r"\[(\d+)/(\d+)\] (.*)")


def _step_summary(command: str) -> str:
    """`c++ ... -c -c src -o obj ...` → `c++ src`: what the step builds, not how."""
    args = command.split()
    if len(args) > 2 and args[1].endswith("objcache.py"):  # compile_through_cache's launcher
        args = args[2:]
    compiler = "clang" if "clang" in args[:2] else args[0].rsplit("/", 1)[-1]  # `zig clang ...`
    for flag, verb in (("-c", compiler), ("-o", "link")):
        if flag in args:
            target = Path(args[len(args) - args[::-1].index(flag)])
            shown = target.relative_to(ROOT) if target.is_relative_to(ROOT) else target
            return f"{verb} {shown}"
    return command


_BUILD_STATEMENT = re.compile(r"^build ([^:\n]+): (compile\w*) ([^\n]+)\n", re.M)


def _cost_estimate(source: Path) -> float:
    """How long a unit takes to compile, for ordering: a kernel unit by its number of kernels
    (registrations); the host units, each compiling the ATen headers and one piece of code per
    op, before any kernel unit."""
    if source.name.endswith("_kernels.cpp"):
        try:
            return source.read_text().count("register_kernel(")
        except OSError:
            return 0
    return float("inf")


_KERNEL_RULE, _HOST_RULE, _OPENMP_RULE = "compile_kernels", "compile_host", "compile_openmp"
_CHECKED_RULE = "compile_checked_kernels"


def _rule(name: str, command: str) -> tuple[str, str]:
    return f"rule {name}\n", f"  command = {command}\n  depfile = $out.d\n  deps = gcc\n\n"


def assign_compilers(build_ninja: Path, clang: Sequence[str], openmp_flags: Sequence[str] = ()) -> None:
    """Give the compile steps of torch's build.ninja (one rule, the host compiler, for every
    source) rules of their own:
    - kernel units: `clang` (kernel_compiler) with the build's flags, without the flags for
      g++ alone (GCC_CXX_FLAGS, in torch's `post_cflags`);
    - the other C++ units: `clang` with torch's flags minus those, as macOS builds them with
      its clang; a quarter faster to compile than with g++ 12 (bindings.cpp 25.6 s -> 17.6 s,
      the CPU stubs' unit 20.9 s -> 16.1 s, AMD EPYC);
    - OPENMP_SOURCES: torch's rule (g++) plus `openmp_flags`: clang has no libgomp here.
    `clang` ["c++"] (no ziglang, or macOS) leaves the first two on torch's rule."""
    text = build_ninja.read_text()
    if "rule compile\n" not in text:
        return
    rules = []
    openmp = "|".join(re.escape(Path(s).stem) for s in OPENMP_SOURCES)
    if openmp_flags:
        torch_rule = re.search(r"(?m)^rule compile\n  command = ([^\n]*)\n", text)[1]
        rules.append(_rule(_OPENMP_RULE, f"{torch_rule} {' '.join(openmp_flags)}"))
        text = re.sub(rf"(?m)^(build [^:\n]*/(?:{openmp})\.o): compile ", rf"\1: {_OPENMP_RULE} ", text)
    if list(clang) != ["c++"]:
        compiler = " ".join(clang)
        flags = " ".join(["-std=c++20", *CXX_FLAGS, *CLANG_KERNEL_FLAGS])
        rules.append(_rule(_KERNEL_RULE, f"{compiler} -MMD -MF $out.d $cflags -c $in -o $out {flags}"))
        # a compute kernel's checked variant (build.checked_kernel_source), its symbols made its own
        localize = " ".join(localize_command(Path("$out"))).replace("*", "'*'")
        rules.append(_rule(_CHECKED_RULE, f"{compiler} -MMD -MF $out.d $cflags -c $in -o $out {flags} "
                                          f"{' '.join(CHECKED_KERNEL_FLAGS)} && {localize}"))
        rules.append(_rule(_HOST_RULE, f"{compiler} -MMD -MF $out.d $cflags -c $in -o $out $clang_post_cflags"))
        post = re.search(r"(?m)^post_cflags = ([^\n]*)$", text)
        clang_post = [f for f in (post[1].split() if post else []) if f not in GCC_CXX_FLAGS]
        if "\nclang_post_cflags = " not in text and post:
            text = text.replace(post[0], f"{post[0]}\nclang_post_cflags = {' '.join(clang_post)}", 1)
        text = re.sub(r"(?m)^(build [^:\n]+_checked_kernels\.o): compile ", rf"\1: {_CHECKED_RULE} ", text)
        text = re.sub(r"(?m)^(build [^:\n]+_kernels\.o): compile ", rf"\1: {_KERNEL_RULE} ", text)
        text = re.sub(r"(?m)^(build [^:\n]+\.o): compile ([^\n]+\.cpp)$", rf"\1: {_HOST_RULE} \2", text)
    missing = "".join(head + body for head, body in rules if head not in text)  # a second pass adds none
    text = text.replace("rule compile\n", missing + "rule compile\n", 1)
    _write_if_changed(build_ninja, text)


OBJCACHE = Path(__file__).resolve().parent / "objcache.py"


def _python_of_the_cache() -> str:
    """The Python that runs objcache.py (the standard library only): the interpreter a virtual
    environment was made from, so that every venv of one Python writes the same commands and
    ninja does not compile everything again when a build runs from another one."""
    base = getattr(sys, "_base_executable", None)
    return base if base and os.path.isfile(base) else sys.executable


def compile_through_cache(build_ninja: Path) -> None:
    """Run every compile step of torch's build.ninja through the object cache (objcache.py),
    which compiles a unit only when no build on this machine compiled the same code with the
    same compiler and flags before. Always in the command, so that turning the cache off
    (MPSGEN_OBJECT_CACHE=0, read when a step runs) does not make ninja compile everything again."""
    text = build_ninja.read_text()
    launcher = f"{shlex.quote(_python_of_the_cache())} {shlex.quote(str(OBJCACHE))} "
    text = re.sub(r"(?m)^(rule compile\w*\n  command = )(?!" + re.escape(launcher) + ")", lambda m: m[1] + launcher,
                  text)
    _write_if_changed(build_ninja, text)


def order_longest_first(build_ninja: Path) -> None:
    """Reorder the compile steps of torch's build.ninja, longest first. ninja 1.11 starts ready
    steps in the file's order, and torch writes them sorted by path, so the host units
    (autograd, bindings, the CPU stubs, module.cpp) came last, one core compiling module.cpp
    alone for its last 14 s. Only the order changes, so ninja has no more work than before."""
    text = build_ninja.read_text()
    steps = _BUILD_STATEMENT.findall(text)
    if not steps:
        return
    ordered = sorted(steps, key=lambda step: -_cost_estimate(Path(step[2].strip())))
    first = _BUILD_STATEMENT.search(text).start()
    rest = _BUILD_STATEMENT.sub("", text[first:])
    _write_if_changed(build_ninja, text[:first] + "".join(f"build {o}: {r} {i}\n" for o, r, i in ordered) + rest)


def ninja_command() -> list[str]:
    """The ninja of requirements.txt, whether or not its folder is on PATH; else PATH's."""
    try:
        import ninja

        return [str(Path(ninja.BIN_DIR) / "ninja")]
    except ImportError:
        return ["ninja"]


def run_ninja(build_directory: str, verbose: bool, error_prefix: str) -> None:
    """ninja for torch's BuildExtension, printing one short line per compiled unit and, in
    full, whatever the compiler says (the user's warnings and errors; torch's own headers
    are system headers and stay quiet). Same signature as
    torch.utils.cpp_extension._run_ninja_build, which setup.py replaces with it: torch's
    prints every command line in full (hundreds of flags each), or with --quiet nothing at
    all, warnings included."""
    command = [*ninja_command(), "-v"]
    if os.environ.get("MAX_JOBS"):
        command += ["-j", os.environ["MAX_JOBS"]]
    assign_compilers(Path(build_directory) / "build.ninja", kernel_compiler(),
                     GCC_OPENMP_FLAGS if sys.platform != "darwin" else ())
    compile_through_cache(Path(build_directory) / "build.ninja")
    order_longest_first(Path(build_directory) / "build.ninja")
    proc = subprocess.Popen(command, cwd=build_directory, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True)
    for line in proc.stdout:
        step = _NINJA_STEP.fullmatch(line.rstrip("\n"))
        print(f"[{step[1]}/{step[2]}] {_step_summary(step[3])}" if step else line.rstrip("\n"), flush=True)
    if proc.wait():
        raise RuntimeError(f"{error_prefix} (the compiler's messages are above)")
