#!/usr/bin/env bash
# ASan + UBSan run of the registry: build its ops with AddressSanitizer and UBSan's
# float-cast-overflow, shift and signed-integer-overflow checks (the build's -fwrapv defines
# signed overflow in the host code, so that check reports only where it is undefined) in a
# separate tree, then run the main job's op-output-match samples (python -m mpsgen.report
# --quick) there, every UBSan report logged (the run goes on), and count the reports.
#
#   bash tools/sanitize.sh                      # every entry of ops.yaml
#   SANITIZE_OPS="exp lerp" bash tools/sanitize.sh
#   bash tools/sanitize.sh --pytest [ARGS]      # the op, semantics and robustness tests instead
#
# -fsanitize=undefined is not used: zig's clang 22 puts -fsanitize=function into it, whose
# handler (__ubsan_handle_function_type_mismatch) gcc's libubsan, the runtime preloaded here,
# lacks, so the extension failed to import (issue 59).
#
# The separate tree (build/sanitize/, or $SANITIZE_DIR) is a copy of codegen/, templates/,
# support/, mpsgen/ (no .so), tests/, setup.py and pyproject.toml with a registry of the selected ops of
# ops.yaml: everything the build and the tests read is relative to the checkout, so the
# copy generates, builds and tests its own registry and never touches the in-place
# extension or generated/. A second run rebuilds only what changed (ninja).
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
WORK="${SANITIZE_DIR:-$ROOT/build/sanitize}"
OPS="${SANITIZE_OPS:-}"  # empty: every op
JOBS="${MAX_JOBS:-2}"

mkdir -p "$WORK"
for d in codegen templates support mpsgen tests; do
  rm -rf "${WORK:?}/$d.new"
  cp -r "$ROOT/$d" "$WORK/$d.new"
  find "$WORK/$d.new" \( -name '*.so' -o -name __pycache__ \) -prune -exec rm -rf {} +
  # keep unchanged files' timestamps so ninja rebuilds only what changed
  if [ -d "$WORK/$d" ] && diff -rq -x "*.so" -x __pycache__ "$WORK/$d" "$WORK/$d.new" > /dev/null 2>&1; then
    rm -rf "${WORK:?}/$d.new"
  else
    rm -rf "${WORK:?}/$d" && mv "$WORK/$d.new" "$WORK/$d"
  fi
done
for f in setup.py pyproject.toml; do cmp -s "$ROOT/$f" "$WORK/$f" || cp "$ROOT/$f" "$WORK/$f"; done

# the registry: ops.yaml's header and the entries whose base name is selected
"$PY" - "${SANITIZE_REGISTRY:-$ROOT/ops.yaml}" "$WORK/ops.yaml.new" $OPS <<'EOF'
import re, sys
source, target, *names = sys.argv[1:]
text = open(source).read()
starts = [m.start() for m in re.finditer(r"^  - func: ", text, re.M)]
header, blocks = text[:starts[0]], [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]
kept = [b for b in blocks if not names or re.match(r"  - func: (\w+)", b).group(1) in names]
missing = set(names) - {re.match(r"  - func: (\w+)", b).group(1) for b in kept}
if missing:
    sys.exit(f"sanitize.sh: no op {', '.join(sorted(missing))} in {source}")
# the others become blank lines, so that every line keeps its number: a report names ops.yaml's
open(target, "w").write(header + "".join(b if b in kept else "\n" * b.count("\n") for b in blocks))
EOF
cmp -s "$WORK/ops.yaml.new" "$WORK/ops.yaml" && rm "$WORK/ops.yaml.new" || mv "$WORK/ops.yaml.new" "$WORK/ops.yaml"

SAN="-fsanitize=address,float-cast-overflow,shift,signed-integer-overflow -fno-omit-frame-pointer"
cd "$WORK"
echo "sanitize.sh: building $(grep -c '^  - func: ' ops.yaml) entries with $SAN in $WORK" >&2
# distutils appends CFLAGS/LDFLAGS to torch's compile and link lines (ninja)
# the object cache keys a sanitized object with its line markers (codegen/objcache.py): its
# reports name the ops.yaml lines of this run
CFLAGS="$SAN" LDFLAGS="$SAN" MAX_JOBS="$JOBS" "$PY" setup.py --quiet build_ext --inplace > build.log 2>&1 \
  || { tail -50 build.log; exit 1; }
grep -q -- "-fsanitize=address,float-cast-overflow" build/temp.*/build.ninja || { echo "sanitize.sh: flags not in build.ninja" >&2; exit 1; }

# an ASan library in a Python that is not: preload the runtimes; CPython leaks by design
LIBASAN="$(c++ -print-file-name=libasan.so)"
LIBUBSAN="$(c++ -print-file-name=libubsan.so)"
export LD_PRELOAD="$LIBASAN $LIBUBSAN"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1:print_stacktrace=1"
if [ "${1:-}" = "--pytest" ]; then
  shift
  export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
  # -s: a sanitizer report is written to stderr, then the process aborts; pytest's capture
  # would drop it with the process (the xdist worker goes "node down" and its test fails).
  exec "$PY" -m pytest -s -q -p no:cacheprovider -n "$JOBS" tests/test_ops.py tests/test_semantics.py \
    tests/test_runtime_robustness.py "$@"
fi
# every report (once per source location), with the ops.yaml line of the functor (the
# .metal's #line), on the report's stderr
export UBSAN_OPTIONS="halt_on_error=0:print_stacktrace=0"
status=0
"$PY" -m mpsgen.report --quick "$@" > report.log 2>&1 || status=$?
tail -1 report.log
reports=$(grep -c "runtime error" report.log || true)
if [ "$reports" != "0" ]; then
  echo "sanitize.sh: $reports UBSan report(s) (all in $WORK/report.log):" >&2
  grep "runtime error" report.log | head -20 >&2
  exit 1
fi
echo "sanitize.sh: 0 UBSan reports over $(grep -c '^  - func: ' ops.yaml) entries' samples (report exit $status)"
exit "$status"
