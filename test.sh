#!/usr/bin/env bash
# Run the test suite (after `bash run.sh` has built the extension):  bash test.sh
# pytest-xdist spreads it over the machine's cores (at most 4 workers); add -n 0 to run serially.
# --dist worksteal: a worker that runs out takes tests queued for another (with the default
# scheduling one worker ran its queue of 120 s alone at the end of the suite).
# bash test.sh --quick: the `quick` subset (tests/conftest.py), under a minute, for every commit.
set -euo pipefail
cd "$(dirname "$0")"
if [ "${1:-}" = "--quick" ]; then
  shift
  set -- -m quick "$@"
fi
exec .venv/bin/python -m pytest -q -n auto --maxprocesses 4 --dist worksteal tests "$@"
