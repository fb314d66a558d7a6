#!/usr/bin/env bash
# Run the test suite (after `bash run.sh` has built the extension):  bash test.sh
set -euo pipefail
cd "$(dirname "$0")"
exec .venv/bin/python -m pytest -q tests "$@"
