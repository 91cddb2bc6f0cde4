#!/usr/bin/env bash
# Python's trace reader and writer against the C library's on one synthetic
# trace (flashbed trace synth), alternating, medians: tools/bench_python_trace.py.
# Run from the repository root after building (cmake --build build). Settings
# from the environment: BUILD (build), SHAPE (llama-2-7b), TOKENS (200),
# SLOW_TOKENS (10: the pure-Python cases), ROUNDS (5), BEFORE (a git
# revision whose python/flashbed_trace.py is timed beside, e.g. b88d276),
# PY (a python3 with numpy: Debian's when PATH's has none).
set -eu
BUILD=${BUILD:-build}
for f in "$BUILD/flashbed" "$BUILD/tests/fb_trace_copy" "$BUILD/libflashbed_trace.so"; do
    [ -e "$f" ] || { echo "bench-python-trace: $f missing: build first (cmake --build $BUILD)" >&2; exit 2; }
done
PY=${PY:-}
if [ -z "$PY" ]; then
    for p in python3 /usr/bin/python3; do
        if "$p" -c "import numpy" 2>/dev/null; then PY=$p; break; fi
    done
fi
[ -n "$PY" ] || { echo "bench-python-trace: no python3 with numpy (set PY)" >&2; exit 2; }
before=()
if [ -n "${BEFORE:-}" ]; then
    dir=$(mktemp -d)
    trap 'rm -rf "$dir"' EXIT
    git show "$BEFORE:python/flashbed_trace.py" > "$dir/flashbed_trace.py"
    before=(--before-dir "$dir")
fi
exec "$PY" tools/bench_python_trace.py --flashbed "$BUILD/flashbed" --copy "$BUILD/tests/fb_trace_copy" \
    --lib "$BUILD/libflashbed_trace.so" --python "$PY" --src . --shape "${SHAPE:-llama-2-7b}" \
    --tokens "${TOKENS:-200}" --slow-tokens "${SLOW_TOKENS:-10}" --rounds "${ROUNDS:-5}" "${before[@]}" \
    ${JSON:+--json "$JSON"}
