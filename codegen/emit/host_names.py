"""Recover the Metal host_names a `.metal` file instantiates (build step).

The CPU backend needs to find every kernel by its host_name, exactly as
`MetalShaderLibrary` does on macOS. Those names live only inside
`template [[host_name("...")]] kernel void ...` explicit instantiations that
torch's REGISTER_* macros expand to, so the build preprocesses the generated
`.metal` (through the Metal host shim) and reads them back from the compiler's
output. The registry is therefore built from what the macros really
instantiated, never from a list the generator keeps on the side.
"""
from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from . import compute_syntax, metal_syntax
from ..registry.kernel_signature import balanced as _balanced
from ..registry.opinfo_names import torch_version
from ..torch_versions import FEATURE_HEADERS, gives

_INSTANTIATION = re.compile(
    r'template\s*\[\[\s*host_name\s*\(((?:\s*"[^"]*")+)\s*\)\s*\]\]\s*void\s*'
    r'((?:::)?\s*c10\s*::\s*metal\s*::\s*\w+)\s*<'
)


@dataclass(frozen=True)
class KernelInstantiation:
    host_name: str
    function: str  # e.g. ::c10::metal::unary_dense<float, exp_functor>
    position: str = ""  # "uint3": its last parameter, the thread position, is a uint3 (else uint/uint2)


# the last parameter of an instantiation's parameter list, when it is a uint3 (the thread position;
# the list itself holds parentheses: a `constant` pointer is `__attribute__((address_space(2)))`)
_UINT3_PARAMETER = re.compile(r"\buint3\s+\w+\s*$")


def _position(text: str, end: int) -> str:
    """"uint3" when the parameter list that follows the template arguments ends in a uint3."""
    m = re.compile(r"\s*\(").match(text, end)
    if not m:
        return ""
    params, _ = _balanced(text, m.end(), "(", ")")
    return "uint3" if _UINT3_PARAMETER.search(params.rsplit(",", 1)[-1]) else ""


def parse_instantiations(preprocessed: str) -> list[KernelInstantiation]:
    found = []
    for m in _INSTANTIATION.finditer(preprocessed):
        host_name = "".join(re.findall(r'"([^"]*)"', m.group(1)))
        function = re.sub(r"\s+", "", m.group(2))
        if not function.startswith("::"):
            function = "::" + function
        args, end = _balanced(preprocessed, m.end())
        found.append(KernelInstantiation(host_name, f"{function}<{' '.join(args.split())}>",
                                         _position(preprocessed, end)))
    return found


def compiler_command(compiler: str | Sequence[str]) -> list[str]:
    """A compiler given as one program (`c++`) or as a command (`zig clang --driver-mode=g++`)."""
    return [compiler] if isinstance(compiler, str) else list(compiler)


def preprocess(compiler: str | Sequence[str], metal: Path, include_dirs: list[Path],
               first: Sequence[str] = ()) -> str:
    """The .metal after the preprocessor, with the Metal host shim and the CPU
    launcher (support/cpu/kernel_launch.h) included first.

    Line markers are kept, so diagnostics still point into the .metal file
    (and, through its #line directives, into ops.yaml).
    The line markers of headers from include dirs outside this project (torch's) are
    flagged as system headers, so compiling this text stays quiet about torch's own
    warnings. (Not -isystem: g++ -E would then split every REGISTER_* expansion with
    line markers.) Metal syntax C++ lacks (swizzles) is rewritten (codegen/emit/metal_syntax.py).
    first: headers included before the shim (check-metal's C library).
    """
    return rewrite_preprocessed(preprocess_raw(compiler, metal, include_dirs, first), include_dirs)


def rewrite_preprocessed(raw: str, include_dirs: list[Path]) -> str:
    """preprocess's rewrites of the preprocessor's output: system-header flags on the line
    markers of headers outside this project, Metal syntax as C++."""
    # as written (the line markers use the -I spelling) and resolved (a symlinked venv)
    system = sorted({str(p) + "/" for d in include_dirs if not _ours(Path(d))
                     for p in (Path(d).absolute(), Path(d).resolve())})
    return metal_syntax.to_cpp(_flag_system_headers(raw, system))


def feature_headers() -> list[str]:
    """The headers the installed torch's features need first (torch_versions.FEATURE_HEADERS):
    none before torch 2.15, so a unit's text, and its cached object, are what they were."""
    return [header for feature, header in FEATURE_HEADERS.items() if gives(feature, torch_version())]


def preprocess_raw(compiler: str | Sequence[str], metal: Path, include_dirs: list[Path],
                   first: Sequence[str] = ()) -> str:
    """The preprocessor's output as it is, before preprocess's rewrites. A compute kernel's
    .metal (a kernel entry's) gets the shim's <metal_compute> and <metal_atomic> (Metal's
    <metal_stdlib> has them) and the compute launcher too, and is read as
    compute_syntax.to_host_source spells it."""
    first = [*feature_headers(), *first]
    text = metal.read_text()
    compute = compute_syntax.is_compute(text)
    heads = ["metal_stdlib", "kernel_launch.h", *(("metal_compute", "metal_atomic", "compute_launch.h") if compute else ())]
    cmd = [*compiler_command(compiler), "-std=c++20", "-E", "-x", "c++", "-DMPSGEN_CONSTANT_MARKED",
           *(a for header in [*first] for a in ("-include", header)),
           *(a for header in heads for a in ("-include", header))]
    cmd += [f"-I{d}" for d in include_dirs]
    if compute:
        # from standard input, named as the file (line markers, diagnostics) and its folder searched
        source = f'# 1 "{metal}"\n' + compute_syntax.to_host_source(text)
        cmd += ["-iquote", str(metal.parent), "-"]
    else:
        source, cmd = None, [*cmd, str(metal)]
    result = subprocess.run(cmd, capture_output=True, text=True, input=source)
    if result.returncode:
        raise RuntimeError(f"preprocessing {metal} failed:\n{result.stderr}")
    return result.stdout


_PROJECT = Path(__file__).resolve().parents[2]
_LINE_MARKER = re.compile(r'^(# \d+ "([^"]*)")((?: [1-4])*)$', re.M)


def _ours(d: Path) -> bool:
    d = d.resolve()
    return d.is_relative_to(_PROJECT) and "site-packages" not in d.parts  # not .venv's torch


def _flag_system_headers(text: str, system_dirs: list[str]) -> str:
    """Add flag 3 (system header) to the line markers of files under system_dirs."""
    def flag(m: re.Match) -> str:
        flags = m.group(3).split()
        if "3" in flags or not any(m.group(2).startswith(d) for d in system_dirs):
            return m.group(0)
        flags = [f for f in flags if f != "4"] + ["3"] + (["4"] if "4" in flags else [])
        return m.group(1) + "".join(" " + f for f in flags)

    return _LINE_MARKER.sub(flag, text)


_HOST_NAME_ATTRIBUTE = re.compile(r'\[\[\s*host_name\s*\((?:\s*"[^"]*")+\s*\)\s*\]\]')


def strip_host_name_attributes(preprocessed: str) -> str:
    """Drop `[[host_name(...)]]`: g++ ignores it with a warning, clang rejects
    its place in an explicit instantiation. The names live on in the registry."""
    return _HOST_NAME_ATTRIBUTE.sub("", preprocessed)


# c10::metal's kernels whose threads each handle ILP_PER_THREAD (4) elements, with `numel` as
# their last buffer: the launcher runs their full tiles apart (support/cpu/kernel_launch.h).
ILP_KERNELS = {"::c10::metal::unary_dense", "::c10::metal::binary_dense_ilp"}
# c10::metal's kernels that read one operand modulo `broadcast_numel`, and that operand's
# buffer: the launcher runs each repetition of it apart (support/cpu/kernel_launch.h).
BROADCAST_KERNELS = {"::c10::metal::binary_dense_broadcast": 2, "::c10::metal::binary_dense_broadcast_rhs": 1,
                     "::c10::metal::binary_alpha_dense_broadcast": 2,
                     "::c10::metal::binary_alpha_dense_broadcast_rhs": 1}
# c10::metal's strided kernels that the launcher runs row by row (the 2D-grid unary ones: by
# rows of their grid), and the element type of each operand (output first) from the kernel's
# template arguments: a row whose every operand is contiguous (its stride that type's size)
# gets the launch's unit-stride copy (support/cpu/kernel_launch.h). ternary_alpha_strided is
# support/metal/mpsgen/ternary_alpha.h's.
ROW_OPERANDS = {
    "::c10::metal::unary_strided": lambda t, f: [f"::c10::metal::result_of<{f}, {t}>", t],
    "::c10::metal::unary_alpha_strided": lambda t, a, f: [f"::c10::metal::result_of<{f}, {t}, {a}>", t],
    "::c10::metal::binary_strided": lambda t, f, *_: [f"::c10::metal::result_of<{f}, {t}, {t}>", t, t],
    "::c10::metal::binary_alpha_strided": lambda t, a, f: [f"::c10::metal::result_of<{f}, {t}, {t}, {a}>", t, t],
    "::c10::metal::ternary_strided": lambda t, f, *_: [f"::c10::metal::result_of<{f}, {t}, {t}, {t}>", t, t, t],
    "::c10::metal::ternary_alpha_strided": lambda t, a, f, *_: [f"::c10::metal::result_of<{f}, {t}, {t}, {t}, {a}>", t, t, t],
}


def _split_template_args(args: str) -> list[str]:
    """`float, add_functor, ::c10::metal::opmath_t<float>` → its three arguments."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(args):
        depth += (c == "<") - (c == ">")
        if c == "," and depth == 0:
            parts.append(args[start:i].strip())
            start = i + 1
    return parts + [args[start:].strip()]


# Which kernels get the launcher's AVX2 (+ F16C, FMA) variant besides the baseline one
# (support/cpu/kernel_launch.h): those that read or write half or bfloat (a host_name names each
# operand's Metal type), whose conversions AVX2 does 8 at a time, and every kernel of an op
# whose code in ops.yaml calls the shim's vectorised math (support/metal_shim/vector_math.h),
# `fma`, or c10/metal helpers built on them: double arithmetic 4 lanes wide instead of 2, and
# the FMA instruction instead of a call to fmaf. Both also get an AVX-512 variant (clang
# builds): the double arithmetic of the latter is what their time goes to, and 8 lanes halve
# it; in the former, the contiguous (ILP) kernels' loops separate each tile's 4 elements with
# shuffles, which AVX-512 BW does in one 16-bit permute where AVX2 needs several (floor float16
# contiguous 3.07 -> 1.03 of torch's time, mul bfloat16 2.24 -> 0.85 on the AMD EPYC; docs/cpu-backend.md).
# The cast kernels (operands of mixed dtypes, or an out= of another: their loads and stores are a
# switch on the dtype per element) of the former get no AVX-512 variant: none ran faster than
# its AVX2 one (add, mul, eq and hypot of half or bfloat with int8, add of half to float out=:
# the same time within 2 %; sin's castout, a vector-math op, ran in half the time, and keeps it).
# Other kernels (add, compare, select...) gain nothing from AVX2 and are compiled once: a
# variant of every kernel made the kernel units take about 40 % longer to compile.
# A build compiles the variants up to `max_isa` (codegen/build.py cpu_variants), and by default
# (`lower` false: a native build) only the highest of a kernel's, the one the machine that builds
# runs: a variant its CPU cannot run, or would not pick, only costs compile time.
NARROW_FLOAT = re.compile(r"_(?:half2?|bfloat)(?:_|$)")
CAST_KERNEL = re.compile(r"_cast(?:out)?(?:_|$)")  # a c10::metal kernel template's name
VECTOR_MATH_CALL = re.compile(
    r"\b(?:exp2?|exp10|log|log2|log10|log1p|expm1|ldexp|sin|cos|tan|sinh|cosh|tanh|atan2?|fma|erf|erfc|"
    r"erfinv|logaddexp|sigmoid)\s*\(")
_MARKER_FILE = re.compile(r'(?m)^# \d+ "([^"]*)"[^\n]*$')


def calls_vector_math(preprocessed: str) -> bool:
    """Whether the code that came from ops.yaml (after a line marker naming a .yaml file, up to
    the next marker) calls one of VECTOR_MATH_CALL's functions."""
    pieces = _MARKER_FILE.split(preprocessed)  # text, file, text, file, text, ...
    return any(VECTOR_MATH_CALL.search(code) for name, code in zip(pieces[1::2], pieces[2::2])
               if name.endswith((".yaml", ".yml")))


def registration_lines(instantiations: list[KernelInstantiation], vector_math: bool = False, max_isa: int = 2,
                       lower: bool = True) -> str:
    """C++ that registers each instantiated kernel with the CPU backend by host_name;
    `vector_math`: the unit's ops.yaml code calls vectorised math (calls_vector_math);
    `max_isa`: the highest variant compiled (0 baseline, 1 AVX2, 2 AVX-512); `lower`: a kernel's
    variants below its highest too. The launcher's Isa is the mask of the variants compiled."""
    lines = []
    for i, k in enumerate(instantiations):
        template = k.function.split("<", 1)[0]
        ilp = 4 if template in ILP_KERNELS else 0
        broadcast = BROADCAST_KERNELS.get(template, 0)
        if vector_math:
            isa = 2
        elif NARROW_FLOAT.search(k.host_name):
            isa = 1 if CAST_KERNEL.search(template) else 2
        else:
            isa = 0
        top = min(isa, max_isa)
        isa = 0 if top == 0 else (1 << top) - 1 if lower else 1 << (top - 1)
        form = f", {ilp}, {broadcast}" if broadcast else f", {ilp}" if ilp else ""
        if template in ROW_OPERANDS:
            operands = ROW_OPERANDS[template](*_split_template_args(k.function[len(template) + 1 : -1]))
            form = f", 0, 0, ::mpsgen::cpu::detail::RowUnit<{', '.join(f'sizeof({t})' for t in operands)}>"
        fn = f"::mpsgen::cpu::detail::uint3_position<&{k.function}>" if k.position == "uint3" else f"&{k.function}"
        kernel = f"::mpsgen::cpu::detail::Kernel<{fn}, {isa}{form}>"
        lines.append(
            f"[[maybe_unused]] static const bool mpsgen_kernel_{i} = ::mpsgen::cpu::register_kernel(\n"
            f'    "{k.host_name}", {kernel}::run(), {kernel}::grid_dims);\n'
        )
    return "".join(lines)
