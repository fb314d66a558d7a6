#!/usr/bin/env bash
# ASan + UBSan run of a small registry: build the ops below with
# -fsanitize=address,undefined in a separate tree, then run the op-output-match,
# semantics and runtime-robustness tests against that build.
#
#   bash tools/sanitize.sh                 # the default ops; extra arguments go to pytest
#   SANITIZE_OPS="exp hypot" bash tools/sanitize.sh -k exp
#
# The separate tree (build/sanitize/, or $SANITIZE_DIR) is a copy of codegen/, templates/,
# support/, mpsgen/ (no .so), tests/, setup.py and pyproject.toml with a registry of the selected ops of
# ops.yaml: everything the build and the tests read is relative to the checkout, so the
# copy generates, builds and tests its own registry and never touches the in-place
# extension or generated/. A second run rebuilds only what changed (ninja).
#
# The default ops are those the semantics and runtime-robustness tests name: unary
# (exp), unary with a Scalar (hardshrink, softshrink), params structs (elu, clamp with a
# promoting Scalar, gelu's str choice), binary (hypot, mul), binary with alpha and checks
# (add, sub), comparisons (lt, eq), neg, div's str? choice, binary with params
# (leaky_relu_backward), ternary (lerp, and lerp.Scalar's own kernel), ternary with params
# (addcmul); Scalar overloads of add, sub, mul, lt, eq.
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${PYTHON:-$ROOT/.venv/bin/python}"
WORK="${SANITIZE_DIR:-$ROOT/build/sanitize}"
OPS="${SANITIZE_OPS:-exp hardshrink softshrink elu clamp gelu hypot mul add sub lt eq neg div leaky_relu_backward lerp addcmul}"
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
"$PY" - "$ROOT/ops.yaml" "$WORK/ops.yaml.new" $OPS <<'EOF'
import re, sys
source, target, *names = sys.argv[1:]
text = open(source).read()
starts = [m.start() for m in re.finditer(r"^  - func: ", text, re.M)]
header, blocks = text[:starts[0]], [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]
kept = [b for b in blocks if re.match(r"  - func: (\w+)", b).group(1) in names]
missing = set(names) - {re.match(r"  - func: (\w+)", b).group(1) for b in kept}
if missing:
    sys.exit(f"sanitize.sh: no op {', '.join(sorted(missing))} in {source}")
open(target, "w").write(header + "".join(kept))
EOF
cmp -s "$WORK/ops.yaml.new" "$WORK/ops.yaml" && rm "$WORK/ops.yaml.new" || mv "$WORK/ops.yaml.new" "$WORK/ops.yaml"

SAN="-fsanitize=address,undefined -fno-omit-frame-pointer"
cd "$WORK"
echo "sanitize.sh: building $(grep -c '^  - func: ' ops.yaml) entries with $SAN in $WORK" >&2
# distutils appends CFLAGS/LDFLAGS to torch's compile and link lines (ninja)
CFLAGS="$SAN" LDFLAGS="$SAN" MAX_JOBS="$JOBS" "$PY" setup.py --quiet build_ext --inplace > build.log 2>&1 \
  || { tail -50 build.log; exit 1; }
grep -q -- "-fsanitize=address,undefined" build/temp.*/build.ninja || { echo "sanitize.sh: flags not in build.ninja" >&2; exit 1; }

# an ASan library in a Python that is not: preload the runtimes; CPython leaks by design
LIBASAN="$(c++ -print-file-name=libasan.so)"
LIBUBSAN="$(c++ -print-file-name=libubsan.so)"
export LD_PRELOAD="$LIBASAN $LIBUBSAN"
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:halt_on_error=1:print_stacktrace=1"
export UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1"
# -s: a sanitizer report is written to stderr, then the process aborts; pytest's capture
# would drop it with the process (the xdist worker goes "node down" and its test fails).
# The 2-GiB views of test_views_beyond_32bit_offsets run too.
exec "$PY" -m pytest -s -q -p no:cacheprovider -n "$JOBS" tests/test_ops.py tests/test_semantics.py \
  tests/test_runtime_robustness.py "$@"
