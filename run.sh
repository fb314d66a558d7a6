#!/usr/bin/env bash
# Set up, generate, build and run the main job:  bash run.sh
#   1. a virtualenv in .venv with the pinned requirements (torch==2.13.0, CPU wheel)
#   2. python -m codegen generate   (setup.py runs it too)
#   3. build the extension in place (torch.utils.cpp_extension + ninja, no build isolation)
#   4. python -m mpsgen.report: every op of ops.yaml against its torch reference
set -euo pipefail
cd "$(dirname "$0")"
if [ ! -x .venv/bin/python ]; then
  python3 -m venv .venv
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -r requirements.txt
.venv/bin/python -m codegen generate
MAX_JOBS="${MAX_JOBS:-$(nproc)}" .venv/bin/python setup.py --quiet build_ext --inplace
.venv/bin/python -m mpsgen.report "$@"
