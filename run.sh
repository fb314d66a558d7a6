#!/usr/bin/env bash
# Set up, generate, build and run the main job:  bash run.sh
#   1. a virtualenv in .venv with the pinned requirements (torch==2.13.0, CPU wheel), and
#      Boost.Context (Debian's libboost-context-dev) for the CPU backend's compute kernels
#   2. python -m codegen generate   (setup.py runs it too)
#   3. build the extension in place (torch.utils.cpp_extension + ninja, no build isolation)
#   4. python -m mpsgen.report: every op of ops.yaml against its torch reference
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
# Boost.Context: the fibers on which the CPU backend runs compute kernels with barriers and
# SIMD-group functions (docs/cpu-backend.md). Debian's package where this runs as root.
if ! echo '#include <boost/context/fiber.hpp>' | c++ -E -x c++ - >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq libboost-context-dev >/dev/null
  else
    echo "run.sh: Boost.Context is missing (Debian/Ubuntu: apt-get install libboost-context-dev;" \
         "macOS: brew install boost): compute kernels with barriers will not run on the CPU backend" >&2
  fi
fi
.venv/bin/python -m codegen generate
MAX_JOBS="${MAX_JOBS:-$(nproc)}" .venv/bin/python setup.py --quiet build_ext --inplace
.venv/bin/python -m mpsgen.report "$@"
