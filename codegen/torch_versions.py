"""The torch releases mpsgen is tested with (issue 48), and the one requirement that says so.

The generator is Python; only the compiled extension is tied to a torch, and it is compiled on
the user's machine against the torch installed there (codegen/build.py), which records it
(support/host/module.cpp; another torch at import is an ImportError, mpsgen/runtime.py). So
mpsgen installs beside any torch of the range below, and each release of it is one line of
`.ci/run` (`bash .ci/torch-version X`: mpsgen's own ops built, the main job, the macOS
cross-build against that torch's macOS wheel, the quick tests). docs/torch-versions.md lists
what differs between them and how the build meets it. Adding a release: TESTED, the range (in
pyproject.toml too), its `.ci/run` line and that table.

FEATURES is the one table of what a release gives that mpsgen otherwise carries itself; the
generator asks `gives(feature, version)` of the installed torch (or of an export's target tree),
and nothing else tests a version.
"""
from __future__ import annotations

TESTED = ("2.13.0", "2.14.1", "2.15.0")  # the default (requirements.txt's CPU wheel) first
# pip's form; pyproject.toml's dependencies and build requirements say the same
# (tests/test_torch_version.py), and so does the pyproject.toml of a project from `mpsgen init`
# No upper bound for pip: with one, pip would replace a newer torch than TESTED's with an older
# one, silently, in the user's environment. The build refuses an untested newer torch instead
# (`untested`), naming the switch that builds anyway.
REQUIREMENT = "torch>=2.13.0"
ALLOW_UNTESTED = "MPSGEN_ALLOW_UNTESTED_TORCH"

# What a torch release's headers give that mpsgen carries itself before it: each feature, the
# first release that has it, and where. Older releases get mpsgen's own (named beside each).
FEATURES = {
    # c10/metal/indexing.h's REGISTER_TERNARY_ALPHA_OP / REGISTER_OPMATH_TERNARY_ALPHA_OP (with
    # ternary_alpha_{dense,strided}[_cast] kernels) and MetalShaderLibrary::exec_ternary_kernel(
    # iter, name, alpha, scalar_arg_type). Before: support/metal/mpsgen/ternary_alpha.h.
    # Its ternary strided kernels (ternary_strided as well as ternary_alpha_strided, and their
    # _cast) take a `uint3` thread position over a 3D grid: the CPU launcher gets them through
    # support/cpu/uint3_position.h (included first in each kernel unit), the MPS host of a params
    # struct dispatches that grid (support/mps/kernels_with_params.h, TernaryGrid::dims3).
    "ternary_alpha": "2.15",
    # c10/metal/float8.h (float8_e4m3fn), included by common.h's Metal branch (by __METAL__),
    # which utils.h's casts need: the kernel units include support/metal_shim/metal_branch.h first.
    "float8": "2.15",
}

# The headers a kernel unit includes before the Metal host shim, for the features that need one.
FEATURE_HEADERS = {"float8": "metal_branch.h", "ternary_alpha": "uint3_position.h"}


def release(version: str) -> str:
    """A torch version without its local part (2.13.0+cpu -> 2.13.0)."""
    return version.split("+", 1)[0]


def minor_of(version: str) -> tuple[int, int]:
    major, minor = release(version).split(".")[:2]
    return int(major), int(minor)


def gives(feature: str, version: str) -> bool:
    """Whether torch `version` (2.15.0, 2.15.0+cpu, 2.15) has FEATURES' `feature`."""
    return minor_of(version) >= minor_of(FEATURES[feature])


def untested(version: str, environ=None) -> tuple[str, bool]:
    """("", _) for a TESTED minor release; else what to tell the builder, and whether to stop:
    a newer torch than TESTED's stops the build unless $MPSGEN_ALLOW_UNTESTED_TORCH=1."""
    import os

    environ = os.environ if environ is None else environ
    if any(minor_of(t) == minor_of(version) for t in TESTED):
        return "", False
    if minor_of(version) < minor_of(TESTED[-1]):
        return (f"mpsgen: torch {version} is older than the releases mpsgen builds against ({', '.join(TESTED)}): "
                f"pip install '{REQUIREMENT}'", True)
    allowed = environ.get(ALLOW_UNTESTED, "") == "1"
    tested = ", ".join(TESTED)
    if allowed:
        return (f"mpsgen: warning: torch {version} is not one mpsgen is tested with ({tested}); building anyway "
                f"({ALLOW_UNTESTED}=1): the generated kernels and checks may not match this torch's headers", False)
    return (f"mpsgen: torch {version} is newer than the releases mpsgen is tested with ({tested}). Either "
            f"install one of those (pip install 'torch=={TESTED[-1]}'), or build against this torch at your own "
            f"risk with {ALLOW_UNTESTED}=1 (then run the tests: `mpsgen test`), and tell us what you saw", True)
