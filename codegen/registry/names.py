"""Identifier rules for the names ops.yaml gives the generated code.

An op name becomes C++ (`<name>_functor`, the host functions, the REGISTER_* macro
arguments, which the preprocessor expands), Metal (`<name>_dense_float_float`), a file
name (`<name>.metal`, `<name>_mps.mm`, `<name>_cpu.cpp`) and a torch operator name; a
namespace becomes `torch.ops.<namespace>` and a C++ `TORCH_LIBRARY` name. Each
`check_*` function returns why a name is refused, or None.

Every regular expression here matches the whole string (`fullmatch`): `$` would
accept a trailing newline.
"""
from __future__ import annotations

import keyword
import re

IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
DOTTED = re.compile(r"[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)+")

# Op names name three files each (`<name>_cpu.cpp` is the longest suffix) and the
# kernels' host_names (`<name>_strided_castout_float_bfloat`); 64 keeps every one of
# them far below file-system (255 bytes) and tool limits.
MAX_NAME_LENGTH = 64

# C++20 keywords, alternative tokens and identifiers with special meaning.
CPP_KEYWORDS = frozenset("""
alignas alignof and and_eq asm auto bitand bitor bool break case catch char char8_t char16_t
char32_t class compl concept const consteval constexpr constinit const_cast continue co_await
co_return co_yield decltype default delete do double dynamic_cast else enum explicit export
extern false float for friend goto if inline int long mutable namespace new noexcept not not_eq
nullptr operator or or_eq private protected public register reinterpret_cast requires return
short signed sizeof static static_assert static_cast struct switch template this thread_local
throw true try typedef typeid typename union unsigned using virtual void volatile wchar_t while
xor xor_eq final override import module restrict _Bool _Complex _Imaginary
""".split())

# Metal Shading Language keywords and the type names it adds (the kernels are Metal).
METAL_KEYWORDS = frozenset("""
kernel vertex fragment device constant thread threadgroup threadgroup_imageblock ray_data
object_data half bfloat float2 float3 float4 half2 half3 half4 int2 int3 int4 uint uint2 uint3
uint4 uchar ushort ulong size_t ptrdiff_t metal precise fast visible stitchable
""".split())

# Macros (and macro-like names) that the C, C++ and Metal standard headers the generated
# code includes may define. The REGISTER_* macros expand their arguments, so an op
# named NULL would become `__null_functor`.
STANDARD_MACROS = frozenset("""
NULL EOF BUFSIZ FILENAME_MAX FOPEN_MAX L_tmpnam TMP_MAX SEEK_SET SEEK_CUR SEEK_END stdin stdout
stderr errno EDOM ERANGE EILSEQ assert static_assert offsetof setjmp longjmp va_arg va_start
va_end va_copy va_list CHAR_BIT CHAR_MIN CHAR_MAX SCHAR_MIN SCHAR_MAX UCHAR_MAX SHRT_MIN
SHRT_MAX USHRT_MAX INT_MIN INT_MAX UINT_MAX LONG_MIN LONG_MAX ULONG_MAX LLONG_MIN LLONG_MAX
ULLONG_MAX MB_LEN_MAX FLT_MAX FLT_MIN FLT_EPSILON DBL_MAX DBL_MIN DBL_EPSILON HUGE_VAL
HUGE_VALF HUGE_VALL INFINITY NAN FP_NAN FP_INFINITE FP_ZERO FP_NORMAL FP_SUBNORMAL
MATH_ERRNO MATH_ERREXIT math_errhandling EXIT_SUCCESS EXIT_FAILURE RAND_MAX MB_CUR_MAX
CLOCKS_PER_SEC SIG_DFL SIG_ERR SIG_IGN SIGABRT SIGFPE SIGILL SIGINT SIGSEGV SIGTERM
WEOF WCHAR_MIN WCHAR_MAX __FILE__ __LINE__ __DATE__ __TIME__ __func__ __cplusplus
__METAL_VERSION__ __STDC__ unix linux __unix__ __linux__ __APPLE__ TARGET_OS_MAC
""".split())

# Namespaces torch and its libraries define or reserve, and C++ namespaces the
# generated code opens (`at`, `c10`, `std`).
RESERVED_NAMESPACES = frozenset("""
aten prim prims quantized _quantized quantized_decomposed torch _C c10 at std cuda mkldnn
onnx _caffe2 caffe2 profiler _test inductor higher_order rngprims _c10d_functional
c10d_functional _dtensor sparse mps metal torchvision torchaudio torchtext fbgemm
""".split())


def is_identifier(name: object) -> bool:
    return isinstance(name, str) and IDENTIFIER.fullmatch(name) is not None


def is_dotted(name: object) -> bool:
    return isinstance(name, str) and DOTTED.fullmatch(name) is not None


def check_cpp_name(name: str) -> str | None:
    """Why `name` cannot be a C++/Metal identifier in the generated code, or None.

    Usable for op names and argument names alike.
    """
    if not is_identifier(name):
        return f"{name!r} is not a C++ identifier ([A-Za-z_][A-Za-z0-9_]*)"
    if name in CPP_KEYWORDS:
        return f"{name!r} is a C++ keyword"
    if name in METAL_KEYWORDS:
        return f"{name!r} is a Metal keyword or type name"
    if name in STANDARD_MACROS:
        return f"{name!r} is a macro or reserved name of the C/C++ standard headers"
    if name.startswith("__") or re.fullmatch(r"_[A-Z].*", name):
        return f"{name!r} is reserved in C++ (a leading '__' or '_' and a capital)"
    if "__" in name:
        return f"{name!r} contains '__', which C++ reserves"
    if keyword.iskeyword(name):
        return f"{name!r} is a Python keyword (the ops are Python callables too)"
    return None


def check_op_name(name: str) -> str | None:
    """Why an op's base name cannot name its generated files and kernels, or None."""
    if len(name) > MAX_NAME_LENGTH:
        return (f"op name is {len(name)} characters long; at most {MAX_NAME_LENGTH}, because it "
                "names the generated files and kernels")
    return check_cpp_name(name)


def check_namespace(name: object) -> str | None:
    """Why `name` cannot be the torch library namespace, or None."""
    if not is_identifier(name):
        return f"expected a C++ identifier naming the torch library, got {name!r}"
    if len(name) > MAX_NAME_LENGTH:
        return f"namespace is {len(name)} characters long; at most {MAX_NAME_LENGTH}"
    if name in RESERVED_NAMESPACES:
        return f"namespace {name!r} is reserved by torch or C++; choose a name of your own"
    if name.startswith("_"):
        return f"namespace {name!r} starts with '_', which torch uses for its private libraries"
    return check_cpp_name(name)
