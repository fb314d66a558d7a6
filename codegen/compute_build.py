"""The build of the compute family (kernel entries) beside codegen/build.py's: Boost.Context,
which runs their synchronising kernels' threads on fibers, and their checked variants."""
from __future__ import annotations

import functools
import shutil
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

# The checked variant of a compute kernel unit (support/cpu/compute_check.cpp): every memory access
# instrumented as ThreadSanitizer does, its calls answered by mpsgen's checks, not TSan's runtime.
CHECKED_KERNEL_FLAGS = ["-fsanitize=thread", "-mllvm", "-tsan-instrument-func-entry-exit=false"]


def localize_command(obj: Path) -> list[str]:
    """objcopy making every symbol a checked unit defines local to it, out of the COMDAT groups the
    linker keeps one copy of: its copies of inline functions and template instances, instrumented,
    must not stand in for the plain units' at the link (they are the same weak symbols), nor theirs
    for its."""
    return ["objcopy", "--wildcard", "--localize-symbol=*", "--remove-section=.group", str(obj)]


@functools.cache
def fiber_flags() -> tuple[list[str], list[str]]:
    """(compile, link) flags of Boost.Context, which runs the threads of compute kernels with
    barriers and SIMD-group functions on fibers (support/cpu/compute_group.cpp): linked where the
    host compiler finds its header and its library (Debian's libboost-context-dev, Homebrew's
    boost). Without it, that unit is compiled with MPSGEN_NO_FIBERS, and such a kernel's launch
    fails with an error naming the package; every other kernel runs as before."""
    header = subprocess.run(["c++", "-E", "-x", "c++", "-"], input="#include <boost/context/fiber.hpp>\n",
                            capture_output=True, text=True)
    lib = subprocess.run(["c++", "-print-file-name=libboost_context" + (".dylib" if sys.platform == "darwin" else ".so")],
                         capture_output=True, text=True).stdout.strip()
    if header.returncode == 0 and Path(lib).is_absolute() and Path(lib).is_file():
        where = Path(lib).resolve().parent
        return [], [f"-L{where}", f"-Wl,-rpath,{where}", "-lboost_context"]
    return ["-DMPSGEN_NO_FIBERS"], []


def checked_variants(compiler: str | Sequence[str], for_this_machine: bool) -> bool:
    """Whether the build compiles the compute kernels' checked variants (support/cpu/compute_check.cpp):
    on Linux, for this machine, with clang (ThreadSanitizer's instrumentation) and objcopy."""
    return (sys.platform.startswith("linux") and for_this_machine and not isinstance(compiler, str)
            and list(compiler) != ["c++"] and shutil.which("objcopy") is not None)


def checked_kernel_source(unit: Path) -> Path:
    """`<op>_checked_kernels.cpp`: the kernel unit whose registrations name the checked variants
    (MPSGEN_CHECKED), compiled with CHECKED_KERNEL_FLAGS (codegen/ninja_build.py)."""
    checked = unit.with_name(unit.name.removesuffix("_kernels.cpp") + "_checked_kernels.cpp")
    text = "#define MPSGEN_CHECKED 1\n" + unit.read_text()
    if not checked.is_file() or checked.read_text() != text:
        checked.write_text(text)
    return checked
