"""Build-time steps shared by setup.py and the tests (run after generate).

- CPU backend: wrap each generated .metal in a C++ translation unit (host shim
  first, the kernels' host_name registrations last).
- macOS: embed each .metal, header-inlined, plus its metallib when `xcrun
  metal` is available, into mpsgen_metal_sources.h for the MPS host stubs.
"""
from __future__ import annotations

import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path

from .host_names import parse_instantiations, preprocess, registration_lines, strip_host_name_attributes

ROOT = Path(__file__).resolve().parent.parent
GENERATED = ROOT / "generated"
SUPPORT = ROOT / "support"
SHIM_INCLUDE = SUPPORT / "metal_shim"
CPU_SUPPORT = SUPPORT / "cpu"
METAL_INCLUDE = SUPPORT / "metal"  # the project's own Metal headers (mpsgen/ternary_alpha.h)
MPS_INCLUDE = SUPPORT / "mps"

# The extension's own compile flags and include dirs (setup.py; torch adds its own).
CXX_FLAGS = ["-O2", "-Wno-attributes", "-Wno-unknown-pragmas"]
MPS_CXX_FLAGS = ["-fobjc-arc"]


def host_include_dirs(build_dir: Path) -> list[Path]:
    """Where the host sources' includes resolve (setup.py): support/host, the CPU executor,
    the Metal host shim and the build dir's generated headers."""
    return [SUPPORT / "host", CPU_SUPPORT, SHIM_INCLUDE, build_dir]


def torch_include() -> Path:
    from torch.utils.cpp_extension import include_paths

    return Path(include_paths()[0])


def kernel_include_dirs() -> list[Path]:
    """Where a .metal's includes resolve when it is compiled as C++: the host shim, the
    CPU launcher, the project's Metal headers, then torch's (c10/metal)."""
    return [SHIM_INCLUDE, CPU_SUPPORT, METAL_INCLUDE, torch_include()]


def _write_if_changed(path: Path, text: str) -> None:
    if not path.is_file() or path.read_text() != text:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def cpu_kernel_unit(metal: Path, compiler: str | Sequence[str] = "c++") -> str:
    """The C++ translation unit of one generated .metal for the CPU backend: the .metal
    preprocessed by `compiler` (host shim and launcher first), then one registration per
    host_name that torch's REGISTER_* macros instantiated."""
    text = preprocess(compiler, metal, kernel_include_dirs())
    kernels = parse_instantiations(text)
    if not kernels:
        raise RuntimeError(f"{metal}: no `template [[host_name(...)]]` kernels instantiated")
    return (
        f"// Kernels of {metal.name} compiled as C++ for the CPU backend (written by the build):\n"
        "// the preprocessed .metal (Metal host shim and launcher first), then one registration per\n"
        "// host_name that torch's REGISTER_* macros instantiated.\n"
        + strip_host_name_attributes(text)
        + "\n"
        + registration_lines(kernels)
    )


def cpu_kernel_sources(build_dir: Path, compiler: str | Sequence[str] = "c++") -> list[Path]:
    """One `<op>_kernels.cpp` per generated .metal; returns their paths."""
    sources = []
    for metal in sorted(GENERATED.glob("*.metal")):
        wrapper = build_dir / f"{metal.stem}_kernels.cpp"
        _write_if_changed(wrapper, cpu_kernel_unit(metal, compiler))
        sources.append(wrapper)
    return sources


def host_unity_source(build_dir: Path, suffix: str, generated: Path = GENERATED) -> Path:
    """One translation unit including every generated `<op><suffix>` host stub (`_cpu.cpp`,
    `_mps.mm`), and registration.cpp with the CPU ones (built on every platform). The stubs are small; the ATen headers each includes
    dominate their compile time, so they are compiled once for the whole registry. Every
    name in a stub is op-prefixed or in an anonymous namespace, so they compose."""
    stubs = sorted(generated.glob(f"*{suffix}"))
    if suffix == "_cpu.cpp":
        stubs.append(generated / "registration.cpp")
    unit = build_dir / f"mpsgen_host{Path(suffix).stem}{Path(suffix).suffix}"
    _write_if_changed(unit, "// The host stubs of generated/, one translation unit (written by the build).\n"
                      + "".join(f'#include "{p.resolve()}"\n' for p in stubs))
    return unit


def host_sources(build_dir: Path, mps: bool, generated: Path = GENERATED) -> list[Path]:
    """The extension's host translation units (setup.py): the unity unit of the CPU stubs and
    the support sources; with `mps`, the unity unit of the `.mm` stubs and the Metal library
    (whose embedded sources header is written by mps_metal_sources_header)."""
    sources = [host_unity_source(build_dir, "_cpu.cpp", generated),
               SUPPORT / "host" / "elementwise.cpp", SUPPORT / "host" / "module.cpp",
               CPU_SUPPORT / "executor.cpp", CPU_SUPPORT / "kernel_registry.cpp"]
    if mps:
        sources += [host_unity_source(build_dir, "_mps.mm", generated), MPS_INCLUDE / "metal_library.mm"]
    return sources


def _c_string_literal(text: str) -> str:
    # Split into chunks: compilers cap the length of a single string literal.
    chunks = [text[i : i + 8000] for i in range(0, len(text), 8000)] or [""]
    return "\n".join(f'R"MPSGEN_METAL({c})MPSGEN_METAL"' for c in chunks)


def _metallib(metal: Path, build_dir: Path) -> bytes | None:
    if shutil.which("xcrun") is None:
        return None
    air, lib = build_dir / f"{metal.stem}.air", build_dir / f"{metal.stem}.metallib"
    try:
        subprocess.run(["xcrun", "-sdk", "macosx", "metal", "-std=metal3.1", f"-I{torch_include()}",
                        f"-I{METAL_INCLUDE}",
                        "-c", str(metal), "-o", str(air)], check=True, capture_output=True)
        subprocess.run(["xcrun", "-sdk", "macosx", "metallib", str(air), "-o", str(lib)],
                       check=True, capture_output=True)
    except (subprocess.CalledProcessError, FileNotFoundError):
        return None  # Command Line Tools only: fall back to runtime compilation
    return lib.read_bytes()


def mps_metal_sources_header(build_dir: Path, with_metallib: bool = True, generated: Path = GENERATED) -> Path:
    from torch.utils._cpp_embed_headers import embed_headers

    entries, blobs = [], []
    for i, metal in enumerate(sorted(generated.glob("*.metal"))):
        source = embed_headers(str(metal), [str(torch_include()), str(METAL_INCLUDE)])
        lib = _metallib(metal, build_dir) if with_metallib else None
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
