"""Build-time steps shared by setup.py and the tests (run after generate).

- CPU backend: wrap each generated .metal in a C++ translation unit (host shim
  first, the kernels' host_name registrations last).
- macOS: embed each .metal, header-inlined, plus its metallib when `xcrun
  metal` is available, into mpsgen_metal_sources.h for the MPS host stubs.
"""
from __future__ import annotations

import functools
import hashlib
import importlib.metadata
import importlib.util
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import NamedTuple

from . import compute_build, objcache
from .clang import ClangMissing, clang_command
from .emit import compute_syntax, host_names, metal_syntax
from .emit.host_names import (calls_vector_math, parse_instantiations, preprocess, preprocess_raw, registration_lines,
                         rewrite_preprocessed, strip_host_name_attributes)
from .torch_versions import REQUIREMENT

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "generated"
SUPPORT = ROOT / "support"
SHIM_INCLUDE = SUPPORT / "metal_shim"
CPU_SUPPORT = SUPPORT / "cpu"
METAL_INCLUDE = SUPPORT / "metal"  # the project's own Metal headers (mpsgen/ternary_alpha.h, mpsgen/complex_math.h)
# `xcrun metal` flags of the embedded metallibs: torch's own for its .metal (cmake/Metal.cmake
# passes -fno-fast-math; the Metal compiler's default is fast math), so that a precompiled kernel
# computes as the runtime-compiled fallback does (torch's MetalShaderLibrary compiles with safe
# math) and as the CPU backend verified it. .github/workflows/macos.yml compiles with these too.
METAL_FLAGS = ("-std=metal3.1", "-fno-fast-math")
MPS_INCLUDE = SUPPORT / "mps"

# The extension's own compile flags and include dirs (setup.py; torch adds its own).
# -g0: no debug info (Python's CFLAGS ask for -g), a quarter of each kernel unit's compile time.
# -ffp-contract=off: compilers contract a * b + c into one FMA where the target has FMA, which
# rounds differently from the baseline x86-64 build (support/cpu/kernel_launch.h). -fno-math-errno: sqrt and the like become instructions (same result; C's errno is
# nothing Metal has), so loops calling them vectorise.
CXX_FLAGS = ["-O2", "-g0", "-ffp-contract=off", "-fno-math-errno", "-Wno-attributes", "-Wno-unknown-pragmas"]
# g++ only (Linux; clang has no such options): -fvect-cost-model=dynamic, since -O2's "very
# cheap" model leaves the launcher's loop over grid threads scalar whenever it needs an alias
# check or widening (half, bfloat); -fpeel-loops unrolls the ILP kernels' `for j < 4` tile loops
# (g++ ignores their `#pragma unroll`), so the loop over their threads vectorises too;
# max-inline-insns-auto=30 (g++'s -O2 default is 15) lets g++ inline the strided kernels of
# bfloat and of branching functors into that loop as well: not inlined, each thread paid a call
# and the kernel's loops over dimensions (neg bfloat16 strided: 70.6 ms -> 15.0 ms at 1e7, the
# neg unit compiling 3% longer).
GCC_CXX_FLAGS = ["-fvect-cost-model=dynamic", "-fpeel-loops", "--param=max-inline-insns-auto=30"]
# -fopenmp: at::parallel_for (the executor's, support/cpu/executor.cpp) is a header template
# whose `#pragma omp parallel` g++ ignores without it, so every launch ran on one thread.
# Linking with it names libgomp.so.1, the soname of the libgomp torch ships and has loaded by
# then, so the executor shares torch's OpenMP threads and torch.set_num_threads. Only the
# units that call at::parallel_for are compiled with it (OPENMP_SOURCES, ninja_build.assign_compilers):
# g++'s OpenMP passes made every host unit longer to compile (autograd.cpp 35 s -> 30 s without).
GCC_OPENMP_FLAGS = ["-fopenmp"]
GCC_LINK_FLAGS = ["-fopenmp"]
OPENMP_SOURCES = ("executor.cpp", "compute_executor.cpp")
# macOS: the .mm units are compiled without ARC, as torch compiles its own MPS sources: torch's
# OperationUtils.h (which kernels_with_params.h includes for ops with params) retains and releases
# by hand (MPSCachedKernel, MPSCachedGraph), which ARC forbids ("ARC forbids explicit message send
# of 'retain'": check-metal's Objective-C++ parse, codegen/verify/clang_check.py, found it under
# the -fobjc-arc this list held before). mpsgen's own .mm code creates no Objective-C objects.
# FMT_HEADER_ONLY: torch's OperationUtils.h formats kernel names with fmt::format (the templates
# exec_unary_kernel_with_params and the like, instantiated in the `.mm` stubs), which calls
# fmt::vformat; torch links fmt into libtorch_cpu.dylib without exporting it (2.13.0's macOS wheel:
# no fmt::vformat among its 35,334 exports), so the extension failed to load on a Mac with "symbol
# not found" (found by the macOS cross-build's symbol check, codegen/verify/macos_symbols.py).
# Header-only, fmt's functions are compiled into the extension (torch ships fmt/format-inl.h).
MPS_CXX_FLAGS = ["-fno-objc-arc", "-DFMT_HEADER_ONLY"]
# clang, for the CPU kernel units: an inline threshold of 1000 (clang's -O2 default is 225), so
# functors that call the shim's inlined math (support/metal_shim/vector_math.h), such as
# log1p_functor ("too costly to inline" at the default) or special_ndtri's two logs, are
# inlined into their kernels and from there into the launcher's loop, instead of being called
# once per element, compiled for the baseline ISA even from the AVX2/AVX-512 variants
# (docs/cpu-backend.md and docs/performance.md: softplus float16 44 -> 2.6 times torch's time at 500;
# special_ndtri float32, its functor written with selects, 4.1 -> 1.8 at 1000). Each step
# added a few % to the kernel units' compile time. The cost of 1000: a functor shaped like
# torch's mish_backward, tanh(log1p(exp(x))) with a sigmoid, took 270 s to compile its
# float-only unit on an AMD EPYC (2.1 s at 500, 2.4 s at 225), but at 500 special_ndtri
# float32 ran at 17 times torch's time instead of about 2 (benchmarks/cpu_backend.py --ops
# special_ndtri --threads 1). So a unit keeps 1000 unless its compile runs past a budget of CPU
# time (codegen/objcache.py compile_within_budget, MPSGEN_UNIT_BUDGET, 45 s), when it is compiled
# again at 500: the mish_backward unit then takes 47 s in all, once (the cache records it).
# The launcher asks for a vector width on the loop of ILP kernels (support/cpu/kernel_launch.h);
# where a kernel's loop cannot be vectorised (a libm call in it), clang says so: -Wno-pass-failed.
CLANG_KERNEL_FLAGS = ["-mllvm", "-inline-threshold=1000", "-Wno-pass-failed"]
def linker_flags() -> list[str]:
    """gold where binutils has it: it links the extension of the shipped registry (80 objects,
    31 MB) in 0.31 s where the default ld took 0.74 s (AMD EPYC family 26, medians of three),
    a link every edit pays. Linux only (macOS links with its own ld)."""
    return ["-fuse-ld=gold"] if sys.platform.startswith("linux") and shutil.which("ld.gold") else []


@functools.cache
def kernel_compiler() -> tuple[str, ...]:
    """The compiler of the CPU kernel units: clang, as on macOS (there, the platform's; on
    Linux, PyPI's ziglang's, the one check-metal uses, with the system's libstdc++, so its
    objects link with the g++-built host units). clang vectorises what g++ 12 leaves scalar
    in the launcher's loops: half <-> float conversions (F16C's 8-wide vcvtph2ps, where g++
    converts one value per instruction), so a float16 op runs at the speed of a float32 one.
    Without ziglang (an environment without requirements.txt), the host compiler."""
    if sys.platform == "darwin":
        return ("c++",)
    try:
        return tuple(clang_command())
    except ClangMissing as e:
        overloaded = address_space_overloads(torch_include())
        if overloaded:
            raise ClangMissing(f"torch {torch_version()}'s c10/metal overloads {', '.join(overloaded)} on Metal's "
                               "`constant` and `device` pointers, which only clang's address spaces keep apart "
                               f"in the CPU kernels (the Metal host shim); the host compiler cannot build them: {e}"
                               ) from None
        print(f"mpsgen: CPU kernels built with the host compiler, slower: {e}", file=sys.stderr)
        return ("c++",)


def address_space_overloads(torch_headers: Path) -> list[str]:
    """The functions torch's c10/metal/indexing.h overloads on a `constant void*` and a `device
    const void*` alone (2.14's val_at_offs), asked of the headers: one function twice where the
    shim spells both `const void*`, as it does without clang (support/metal_shim/metal_stdlib)."""
    try:
        text = (torch_headers / "c10" / "metal" / "indexing.h").read_text()
    except OSError:
        return []
    constant = set(re.findall(r"(\w+)\(\s*constant\s+void\s*\*", text))
    return sorted(constant & set(re.findall(r"(\w+)\(\s*device\s+const\s+void\s*\*", text)))


CPU_VARIANT_LEVELS = {"baseline": 0, "avx2": 1, "avx512": 2, "all": 2}
_AVX2_FLAGS, _AVX512_FLAGS = {"avx2", "f16c", "fma"}, {"avx512f", "avx512vl", "avx512bw", "avx512dq"}


def _machine_cpu_flags() -> set[str] | None:
    """The CPU features of the machine that builds (x86-64 Linux or macOS), or None."""
    import platform

    if platform.machine().lower() not in ("x86_64", "amd64"):
        return None
    try:
        if sys.platform == "darwin":
            out = subprocess.run(["sysctl", "-n", "machdep.cpu.features", "machdep.cpu.leaf7_features"],
                                 capture_output=True, text=True, check=True).stdout
            return {f.lower() for f in out.split()}  # AVX2, FMA, F16C, AVX512F, ... (an Intel Mac)
        text = Path("/proc/cpuinfo").read_text()
    except (OSError, subprocess.CalledProcessError):
        return None
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.partition(":")[2].split())


class CpuVariants(NamedTuple):
    """The x86-64 variants of the CPU kernels a build compiles (support/cpu/kernel_launch.h):
    up to `level` (0 baseline, 1 AVX2 + F16C + FMA, 2 AVX-512 as well), and with `lower` a
    kernel's variants below its highest too, or else only the highest (codegen/emit/
    host_names.py registration_lines)."""
    level: int
    lower: bool


@functools.cache
def cpu_variants() -> CpuVariants:
    """MPSGEN_CPU_VARIANTS: `native` (default) compiles, of each kernel's variants, the one the
    machine that builds runs: no variant its CPU cannot run or would not pick costs compile time
    (a kernel with AVX2 and AVX-512 variants gets the AVX-512 one alone on a machine with
    AVX-512). `all` compiles every level, for a build meant for other machines (a wheel to
    share); `baseline`, `avx2`, `avx512` the levels up to that one. Kernels with variants keep
    their baseline, for CPUs below the variants and for MPSGEN_CPU_ISA."""
    choice = os.environ.get("MPSGEN_CPU_VARIANTS", "native").strip().lower() or "native"
    if choice in CPU_VARIANT_LEVELS:
        return CpuVariants(CPU_VARIANT_LEVELS[choice], lower=True)
    if choice != "native":
        raise SystemExit(f"mpsgen: MPSGEN_CPU_VARIANTS={choice!r}: expected native, all, "
                         + ", ".join(k for k in CPU_VARIANT_LEVELS if k != "all"))
    flags = _machine_cpu_flags()
    if flags is None:  # not x86-64 (no variants), or features unknown: every variant
        return CpuVariants(2, lower=True)
    level = 2 if _AVX2_FLAGS | _AVX512_FLAGS <= flags else 1 if _AVX2_FLAGS <= flags else 0
    return CpuVariants(level, lower=False)


def host_include_dirs(build_dir: Path) -> list[Path]:
    """Where the host sources' includes resolve (setup.py): support/host, the CPU executor,
    the Metal host shim and the build dir's generated headers."""
    return [SUPPORT / "host", CPU_SUPPORT, SHIM_INCLUDE, build_dir]


def torch_home() -> Path:
    """The installed torch's folder, found without importing torch (uptodate.py's builds)."""
    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        raise ModuleNotFoundError(f"mpsgen builds against torch, which is not installed: pip install '{REQUIREMENT}'")
    return Path(spec.origin).resolve().parent


def torch_version() -> str:
    """torch.__version__, from its package metadata where it has some (no import of torch)."""
    try:
        return importlib.metadata.version("torch")
    except importlib.metadata.PackageNotFoundError:  # a torch without metadata (built in place)
        import torch

        return torch.__version__


def torch_include() -> Path:
    """torch's headers (torch.utils.cpp_extension.include_paths()'s first)."""
    return torch_home() / "include"


def kernel_include_dirs(torch_headers: Path | None = None) -> list[Path]:
    """Where a .metal's includes resolve when it is compiled as C++: the host shim, the
    CPU launcher, the project's Metal headers, then torch's (c10/metal): the installed
    torch's, or `torch_headers` (the macOS cross-build's, codegen/verify/macos_build.py)."""
    return [SHIM_INCLUDE, CPU_SUPPORT, METAL_INCLUDE, torch_headers or torch_include()]


class KernelTarget(NamedTuple):
    """What a kernel unit is made for besides its compiler: torch's headers and the x86-64
    variants it registers (none for arm64)."""
    torch_headers: Path
    variants: CpuVariants


def host_target() -> KernelTarget:
    """This machine's: the installed torch's headers, the variants of MPSGEN_CPU_VARIANTS."""
    return KernelTarget(torch_include(), cpu_variants())


def _write_if_changed(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def _unit_body(metal: Path, text: str, variants: CpuVariants) -> str:
    kernels = parse_instantiations(text)
    compute = compute_syntax.parse_compute_instantiations(text)
    if not kernels and not compute:
        raise RuntimeError(f"{metal}: no `template [[host_name(...)]]` kernels instantiated")
    registrations = registration_lines(kernels, calls_vector_math(text), *variants) if kernels else ""
    if compute:
        flat = not compute_syntax.synchronises(text, (str(SHIM_INCLUDE), str(CPU_SUPPORT)))
        registrations += compute_syntax.registration_lines(compute, flat)
    return (
        f"// Kernels of {metal.name} compiled as C++ for the CPU backend (written by the build):\n"
        "// the preprocessed .metal (Metal host shim and launcher first), then one registration per\n"
        "// host_name that torch's REGISTER_* macros (or the kernel entry) instantiated.\n"
        + strip_host_name_attributes(text)
        + "\n"
        + registrations
    )


def cpu_kernel_unit(metal: Path, compiler: str | Sequence[str] = "c++") -> str:
    """The C++ translation unit of one generated .metal for the CPU backend: the .metal
    preprocessed by `compiler` (host shim and launcher first), then one registration per
    host_name that torch's REGISTER_* macros instantiated."""
    return _unit_body(metal, preprocess(compiler, metal, kernel_include_dirs()), cpu_variants())


_KEY = "// mpsgen build key: "
_LINE_NUMBER = re.compile(r"(#line )\d+|(\.ya?ml:)\d+")


def _unnumbered(m: re.Match) -> str:
    return (m.group(1) or m.group(2)) + "N"


def file_prefix_maps(root: Path) -> list[str]:
    """How __FILE__ (in torch's TORCH_CHECK, for one) names files: the project's folder as '',
    mpsgen's support folder as 'mpsgen/support/' (unless it is in the project, as in mpsgen's
    own checkout: one map, no overlap to order), and torch's folder as 'torch/' (torch's inline
    functions name their headers; a venv in the project, as mpsgen's checkout has, is the case
    where two maps match: torch's comes last, which g++ takes (the last that matches) and clang
    too (the longest)). The same code in another clone, copy or venv is then the same object,
    which the object cache shares: without torch's map, a fresh clone's first suite compiled
    every host unit again, 100 s of CPU in the install tests alone."""
    maps = [f"-ffile-prefix-map={root}{os.sep}="]
    if not SUPPORT.is_relative_to(root):
        maps.append(f"-ffile-prefix-map={SUPPORT}{os.sep}=mpsgen{os.sep}support{os.sep}")
    return maps + [f"-ffile-prefix-map={torch_home()}{os.sep}=torch{os.sep}"]


def _toolchain_key(compiler: str | Sequence[str], target: KernelTarget) -> bytes:
    """What a preprocessed kernel depends on besides its .metal: the compiler, torch's
    headers (its version and place), the project's shim and launcher headers, and the code
    that rewrites the preprocessor's output."""
    h = hashlib.sha256()
    command = [compiler] if isinstance(compiler, str) else list(compiler)
    h.update(f"{shutil.which(command[0])} {command[1:]}\n".encode() + objcache.compiler_identity(command)
             + f"\n{torch_version()}\n{target.torch_headers}\nvariants {tuple(target.variants)}\n"
             .encode())
    here = Path(__file__).resolve().parent
    inputs = [p for d in (SHIM_INCLUDE, CPU_SUPPORT, METAL_INCLUDE) for p in d.rglob("*")
              if p.is_file() and p.suffix not in (".cpp", ".mm")]
    for p in sorted(inputs) + [here / "build.py", *(Path(m.__file__) for m in (host_names, metal_syntax, compute_syntax))]:
        h.update(f"{p.name}\n".encode() + p.read_bytes())
    return h.digest()


def _keys(toolchain: bytes, metal_text: str) -> tuple[str, str]:
    """The two cache keys of one op's kernels: exact, and with registry line numbers left
    out. An edit that moves the ops after it changes only their `#line`s, and those change
    no compiled code (the build has no debug info) unless something expands `__LINE__`
    there; a unit found line-insensitive when it was made is keyed without them, so those
    ops are neither preprocessed nor compiled again."""
    exact = hashlib.sha256(toolchain + metal_text.encode()).hexdigest()
    unnumbered = _LINE_NUMBER.sub(_unnumbered, metal_text)
    return exact, hashlib.sha256(toolchain + b"unnumbered\n" + unnumbered.encode()).hexdigest()


_MARKER = re.compile(r"^#[^\n]*", re.M)


def _line_insensitive(compiler: str, metal: Path, raw: str, scratch: Path, include_dirs: list[Path]) -> bool:
    """Whether the preprocessed .metal (`raw`, as the preprocessor wrote it) is the same, but
    for line markers, when every `#line` in it moves one line down: true unless `__LINE__` is
    expanded in the user's code. The raw texts are compared: the rewrites that follow
    (rewrite_preprocessed) give equal texts for equal inputs."""
    shifted = re.sub(r"(?m)^#line (\d+)", lambda m: f"#line {int(m[1]) + 1}", metal.read_text())
    scratch.write_text(shifted)
    try:
        again = preprocess_raw(compiler, scratch, include_dirs)
    finally:
        scratch.unlink()
    return _MARKER.sub("", again) == _MARKER.sub("", raw)


def _keyed_kernel_unit(compiler: str | Sequence[str], metal: Path, keys: tuple[str, str],
                       build_dir: Path, target: KernelTarget) -> str:
    """cpu_kernel_unit, under the key that says what it was made from."""
    include_dirs = kernel_include_dirs(target.torch_headers)
    raw = preprocess_raw(compiler, metal, include_dirs)
    scratch = build_dir / f"{metal.stem}.shifted.metal"
    key = keys[1] if _line_insensitive(compiler, metal, raw, scratch, include_dirs) else keys[0]
    return f"{_KEY}{key}\n" + _unit_body(metal, rewrite_preprocessed(raw, include_dirs), target.variants)


def cpu_kernel_sources(build_dir: Path, compiler: str | Sequence[str] = "c++", generated: Path = GENERATED,
                       target: KernelTarget | None = None) -> list[Path]:
    """One `<op>_kernels.cpp` per generated .metal; returns their paths. A unit whose key
    (its first line) still matches is left as it is: not preprocessed, not rewritten, so
    ninja does not compile it again. The others are preprocessed on every core. `target`:
    this machine's (host_target) unless given, as the macOS cross-build gives its own."""
    target = target or host_target()
    toolchain = _toolchain_key(compiler, target)
    todo, sources = [], []
    for metal in sorted(generated.glob("*.metal")):
        unit = build_dir / f"{metal.stem}_kernels.cpp"
        keys = _keys(toolchain, metal.read_text())
        sources.append(unit)
        if not unit.is_file() or unit.open().readline().removeprefix(_KEY).strip() not in keys:
            todo.append((metal, unit, keys))
    with ThreadPoolExecutor(max_workers=os.cpu_count() or 1) as pool:
        texts = pool.map(lambda job: _keyed_kernel_unit(compiler, job[0], job[2], build_dir, target), todo)
        for (_, unit, _), text in zip(todo, texts):
            _write_if_changed(unit, text)
    if compute_build.checked_variants(compiler, target.torch_headers == torch_include()):
        for metal, unit in zip(sorted(generated.glob("*.metal")), list(sources)):
            if compute_syntax.is_compute(metal.read_text()):
                sources.append(compute_build.checked_kernel_source(unit))
    return sources


def host_unity_source(build_dir: Path, suffix: str, generated: Path = GENERATED) -> Path:
    """One translation unit of every generated `<op><suffix>` host stub (`_cpu.cpp`,
    `_mps.mm`), and registration.cpp with the CPU ones (built on every platform). The stubs
    are small; the ATen headers each includes dominate their compile time, so they are
    compiled once for the whole registry. Every name in a stub is op-prefixed or in an
    anonymous namespace, so they compose.

    The stubs' text is inlined (under `#line`, so diagnostics name the stub), keyed like the
    kernel units with registry line numbers left out of the key: those appear only in the
    stubs' comments (an op's line is data in op_specs.cpp), so an edit that moves ops to
    other lines does not compile the ATen headers again."""
    stubs = sorted(generated.glob(f"*{suffix}"))
    if suffix == "_cpu.cpp":
        stubs.append(generated / "registration.cpp")
    texts = [p.read_text() for p in stubs]
    unit = build_dir / f"mpsgen_host{Path(suffix).stem}{Path(suffix).suffix}"
    return _keyed_unit(unit, texts, "// The host stubs of generated/, one translation unit (written by the build).\n"
                       + "".join(f'#line 1 "{p.resolve()}"\n{t}\n' for p, t in zip(stubs, texts)))


# Code compiled under a registry `#line` that might expand __LINE__: a macro call or __LINE__ itself.
_FORMULA_REGION = re.compile(r'(?m)^#line \d+ "[^"\n]*\.ya?ml"\n(.*?)^#line ', re.S)
_MACRO_LIKE = re.compile(r"\b[A-Z_][A-Z0-9_]*\s*\(|__LINE__")


def generated_unit(build_dir: Path, name: str, generated: Path = GENERATED) -> Path:
    """A build-dir copy of generated/<name> (autograd.cpp, bindings.cpp), keyed like the host
    stubs' unit: an edit that only moves ops to other registry lines leaves it as it is, so
    the large ATen and autograd headers are not compiled again. Their registry line numbers are
    comments, and the `#line`s each derivative formula compiles under. A stale `#line` changes
    no compiled code (no debug info) unless the formula expands `__LINE__`, so a file whose
    formulas call anything that looks like a macro is keyed with its line numbers; and any
    other change rewrites the copy with today's lines, which is when diagnostics can appear."""
    source = generated / name
    text = source.read_text()
    numbered = any(_MACRO_LIKE.search(m[1]) for m in _FORMULA_REGION.finditer(text))
    return _keyed_unit(build_dir / name, [text], f'#line 1 "{source.resolve()}"\n{text}', numbered)


def _keyed_unit(unit: Path, texts: list[str], body: str, numbered: bool = False) -> Path:
    """Writes `unit`: its key (from `texts`, registry line numbers left out unless `numbered`),
    then `body`; left as it is when its key still matches, so ninja does not compile it again."""
    keyed = texts if numbered else [_LINE_NUMBER.sub(_unnumbered, t) for t in texts]
    key = hashlib.sha256(("numbered\n" if numbered else "").encode() + "".join(keyed).encode()).hexdigest()
    if unit.is_file() and unit.open().readline() == f"{_KEY}{key}\n":
        return unit
    _write_if_changed(unit, f"{_KEY}{key}\n{body}")
    return unit


def host_sources(build_dir: Path, mps: bool, generated: Path = GENERATED) -> list[Path]:
    """The extension's host translation units (setup.py): the unity unit of the CPU stubs, the
    op specs, the autograd kernels, the Python bindings and the support sources; with `mps`, the unity unit of the `.mm` stubs and the Metal library
    (whose embedded sources header is written by mps_metal_sources_header)."""
    sources = [host_unity_source(build_dir, "_cpu.cpp", generated), generated / "op_specs.cpp",
               generated_unit(build_dir, "autograd.cpp", generated), generated_unit(build_dir, "bindings.cpp", generated),
               SUPPORT / "host" / "elementwise.cpp", SUPPORT / "host" / "module.cpp",
               CPU_SUPPORT / "executor.cpp", CPU_SUPPORT / "kernel_registry.cpp", CPU_SUPPORT / "compute_group.cpp",
               SUPPORT / "host" / "compute_host.cpp", CPU_SUPPORT / "compute_executor.cpp",
               CPU_SUPPORT / "compute_check.cpp"]
    if mps:
        sources += [host_unity_source(build_dir, "_mps.mm", generated), MPS_INCLUDE / "metal_library.mm"]
    return sources


def _c_string_literal(text: str) -> str:
    # Split into chunks: compilers cap the length of a single string literal.
    chunks = [text[i : i + 8000] for i in range(0, len(text), 8000)] or [""]
    return "\n".join(f'R"MPSGEN_METAL({c})MPSGEN_METAL"' for c in chunks)


@functools.cache
def _metal_compiler() -> str | None:
    """`xcrun metal`'s version, or None where there is none (Linux; Command Line Tools only)."""
    if shutil.which("xcrun") is None:
        return None
    r = subprocess.run(["xcrun", "-sdk", "macosx", "metal", "--version"], capture_output=True, text=True)
    return r.stdout if r.returncode == 0 else None


def _metallib(metal: Path, source: str, build_dir: Path) -> bytes | None:
    """The op's metallib, compiled again only when its header-inlined source or the Metal
    compiler changed (the key beside it)."""
    version = _metal_compiler()
    if version is None:
        return None
    air, lib = build_dir / f"{metal.stem}.air", build_dir / f"{metal.stem}.metallib"
    key_file = build_dir / f"{metal.stem}.metallib.key"
    key = hashlib.sha256((version + source).encode()).hexdigest()
    if lib.is_file() and key_file.is_file() and key_file.read_text() == key:
        return lib.read_bytes()
    try:
        subprocess.run(["xcrun", "-sdk", "macosx", "metal", *METAL_FLAGS, f"-I{torch_include()}",
                        f"-I{METAL_INCLUDE}",
                        "-c", str(metal), "-o", str(air)], check=True, capture_output=True)
        subprocess.run(["xcrun", "-sdk", "macosx", "metallib", str(air), "-o", str(lib)],
                       check=True, capture_output=True)
    except (subprocess.CalledProcessError, FileNotFoundError):
        return None  # Command Line Tools only: fall back to runtime compilation
    key_file.write_text(key)
    return lib.read_bytes()


def mps_metal_sources_header(build_dir: Path, with_metallib: bool = True, generated: Path = GENERATED,
                             torch_headers: Path | None = None) -> Path:
    """mpsgen_metal_sources.h: each .metal with the headers it includes inlined (torch's own
    embedding), from the installed torch's c10/metal or `torch_headers`'."""
    from torch.utils._cpp_embed_headers import embed_headers

    entries, blobs = [], []
    for i, metal in enumerate(sorted(generated.glob("*.metal"))):
        source = embed_headers(str(metal), [str(torch_headers or torch_include()), str(METAL_INCLUDE)])
        lib = _metallib(metal, source, build_dir) if with_metallib else None
        if lib:
            blobs.append(f"static const uint8_t kMetallib{i}[] = {{{', '.join(map(str, lib))}}};")
        entries.append(
            f'  {{"{metal.stem}", {_c_string_literal(source)},\n'
            f"   {f'kMetallib{i}' if lib else 'nullptr'}, {len(lib) if lib else 0}}},"
        )
    header = build_dir / "mpsgen_metal_sources.h"
    _write_if_changed(
        header,
        "// Metal sources of generated/*.metal, header-inlined (written by the build).\n"
        "#pragma once\n#include <cstddef>\n#include <cstdint>\n\n"
        "struct MpsgenMetalSource {\n  const char* op;\n  const char* source;\n"
        "  const uint8_t* metallib;\n  size_t metallib_size;\n};\n\n"
        + "\n".join(blobs)
        + "\nstatic const MpsgenMetalSource kMetalSources[] = {\n"
        + "\n".join(entries)
        + "\n};\n",
    )
    return header
