"""Build the mpsgen torch extension: `python setup.py build_ext --inplace`.

Regenerates generated/ from ops.yaml first. On macOS it builds the MPS backend
(.mm host stubs, Metal kernels); everywhere it builds the CPU backend, which
runs the same .metal kernels compiled as C++ through the Metal host shim.
"""
import subprocess
import sys
from pathlib import Path

from setuptools import setup
from torch.utils import cpp_extension
from torch.utils.cpp_extension import BuildExtension, CppExtension

ROOT = Path(__file__).resolve().parent
subprocess.run([sys.executable, "-m", "codegen", "generate"], cwd=ROOT, check=True)
sys.path.insert(0, str(ROOT))
from codegen import build  # noqa: E402  (after generate, from this checkout)

# one short line per compiled unit, and the compiler's own messages (codegen/build.py)
cpp_extension._run_ninja_build = build.run_ninja

BUILD = ROOT / "build" / "mpsgen"
BUILD.mkdir(parents=True, exist_ok=True)
rel = lambda p: str(Path(p).relative_to(ROOT))  # noqa: E731

# the host stubs of all ops compile as one unit per backend (codegen/build.py host_sources)
mps = sys.platform == "darwin"
if mps:
    build.mps_metal_sources_header(BUILD)
sources = [rel(p) for p in build.host_sources(BUILD, mps)]
sources += [rel(p) for p in build.cpu_kernel_sources(BUILD, build.kernel_compiler())]
include_dirs = [str(d) for d in build.host_include_dirs(BUILD)]
extra_cflags = list(build.CXX_FLAGS) + ([] if mps else build.GCC_CXX_FLAGS)
extra_link_args = [] if mps else list(build.GCC_LINK_FLAGS)

if mps:
    include_dirs.append(str(build.MPS_INCLUDE))
    extra_cflags += build.MPS_CXX_FLAGS
    extra_link_args += ["-framework", "Metal", "-framework", "Foundation"]

setup(
    name="mpsgen",
    version="0.1.0",
    packages=["mpsgen"],
    ext_modules=[
        CppExtension(
            "mpsgen._C",
            sources,
            include_dirs=include_dirs,
            extra_compile_args={"cxx": extra_cflags},
            extra_link_args=extra_link_args,
        )
    ],
    cmdclass={"build_ext": BuildExtension.with_options(use_ninja=True)},
)
