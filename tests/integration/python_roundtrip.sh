#!/usr/bin/env bash
# python/flashbed_trace.py writes the C writer's bytes: traces written by C
# (trace synth, and fb_trace_copy's rewrite of a trace holding every set
# encoding the C writer makes, with predicted and channel sets, and of the
# committed version 1 file) are read by Python and written again, byte for
# byte the same, which flashbed then reads; on libflashbed_trace
# (FLASHBED_TRACE_LIB, where the build makes it) and on the pure-Python
# path, with numpy and with numpy absent (a None in sys.modules), in the
# list, set and numpy forms. Also: a closed pipe gives no traceback, and
# pip install ./python works offline in a throwaway venv.
source "$(dirname "$0")/lib.sh"

SRC="${FLASHBED_SOURCE:-$(dirname "$0")/../..}"
PYMOD="$SRC/python/flashbed_trace.py"
COPY=${FLASHBED_TRACE_COPY:?FLASHBED_TRACE_COPY names fb_trace_copy}
LIB=${FLASHBED_TRACE_LIB:-none}
export PYTHONPATH="$SRC/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1
PY=$(python_that "import json") || { echo "python_roundtrip: skipped: python3 not found"; exit 77; }
NPY=$(python_that "import numpy") || NPY=

# ---- the C-written traces ----
check "synth opt-tiny (predicted sets, 3 sequences)" "$FLASHBED" trace synth --shape opt-tiny --tokens 60 --prompts 3 \
    --seed 3 --out "$WORK/syn.trace"
check "synth llama-tiny (GLU, d_ff no multiple of 8)" "$FLASHBED" trace synth --shape llama-tiny --tokens 30 \
    --prompts 2 --seed 5 --out "$WORK/glu.trace"
# Sets made to need each encoding: dense fresh sets (a bitset), sparse
# fresh ones (Rice), small changes from the previous token (Rice against
# it), predicted sets near the active one (Rice against it), channel sets
# likewise; sequence starts in between.
check "python writes the sets of every encoding" env FLASHBED_TRACE_LIB=none "$PY" - "$WORK/mixed.src" <<'EOF'
import random, sys, flashbed_trace as f
rng, L, d_ff, d_model = random.Random(11), 3, 203, 160
def fresh(bound, dense):
    return sorted(rng.sample(range(bound), bound // 2 if dense else 3))
def near(ids, bound, flips=3):
    return sorted(set(ids).symmetric_difference(rng.sample(range(bound), flips)))
m = f.TraceMeta(L, d_model, d_ff, "f16", f.FFN_GLU, True, '{"test":"every encoding"}', has_channels=True)
prev = None
with f.TraceWriter(sys.argv[1], m) as w:
    for t in range(40):
        start = t % 13 == 0
        w.begin_token(f.TOKEN_SEQ_START if start else f.TOKEN_GENERATED)
        cur = []
        for l in range(L):
            if start or prev is None or rng.random() < 0.2:
                a, c = fresh(d_ff, rng.random() < 0.5), fresh(d_model, rng.random() < 0.5)
            else:
                a, c = near(prev[l][0], d_ff), near(prev[l][2], d_model, 2)
            u = rng.random()
            if u < 0.3 and not start and prev is not None:
                p = near(prev[l][1], d_ff, 2)
            else:
                p = near(a, d_ff, 2) if u < 0.8 else fresh(d_ff, rng.random() < 0.5)
            w.layer(a, p, c)
            cur.append((a, p, c))
        prev = cur
EOF
check "fb_trace_copy writes them as C does" "$COPY" "$WORK/mixed.src" "$WORK/mixed.trace"
check "fb_trace_copy rewrites the version 1 file" "$COPY" "$SRC/tests/data/trace_v1.trace" "$WORK/v1.trace"
check "the C-written trace holds every encoding C writes, per kind" env FLASHBED_TRACE_LIB=none "$PY" - "$WORK/mixed.trace" <<'EOF'
import sys, flashbed_trace as f
seen, decode = set(), f.decode_set
def peek(src, refs, bound, sets="list"):
    kind = "channel" if bound == 160 else "predicted" if refs[2] is not None else "active"
    seen.add((kind, src.data[src.pos] >> 4, src.data[src.pos] & 15))
    return decode(src, refs, bound, sets)
f.decode_set = peek
for _ in f.read_tokens(sys.argv[1]):
    pass
# (kind, reference, code): a bitset against a reference is never smaller
# than the bitset alone, so the C writer makes none
want = {(k, f.REF_NONE, f.CODE_BITSET) for k in ("active", "predicted", "channel")}
want |= {(k, r, f.CODE_RICE) for k in ("active", "predicted", "channel") for r in (f.REF_NONE, f.REF_PREV)}
want.add(("predicted", f.REF_ACTIVE, f.CODE_RICE))
sys.exit("missing %s" % sorted(want - seen) if want - seen else 0)
EOF

# ---- Python reads each and writes it again: the same bytes ----
copy_py() { # lib|pure, form, numpy|no-numpy, in, out
    local lib=$LIB
    [ "$1" = pure ] && lib=none
    local py=$PY
    [ "$3" = numpy ] && py=$NPY
    FLASHBED_TRACE_LIB=$lib "$py" - "$@" <<'EOF'
import sys
path, form, numpy, src, dst = sys.argv[1:]
if numpy == "no-numpy":
    sys.modules["numpy"] = None
import flashbed_trace as f
if (f.library() is not None) != (path == "lib"):
    sys.exit("expected the %s path: %s" % (path, f.why_pure()))
with f.TraceReader(src, sets=form) as r, f.TraceWriter(dst, r.meta) as w:
    for tok in r:
        w.begin_token(tok.flags)
        for l in range(r.n_layers):
            w.layer(tok.active[l], tok.predicted[l] if tok.predicted is not None else None,
                    tok.channels[l] if tok.channels is not None else None)
EOF
}
combos="pure:list:no-numpy pure:set:no-numpy"
[ -n "$NPY" ] && combos="$combos pure:numpy:numpy pure:list:numpy"
if [ "$LIB" != none ]; then
    combos="$combos lib:list:no-numpy lib:set:no-numpy"
    [ -n "$NPY" ] && combos="$combos lib:numpy:numpy lib:list:numpy"
else
    echo "python_roundtrip: no libflashbed_trace in this build: the pure-Python path only"
fi
[ -z "$NPY" ] && echo "python_roundtrip: no python with numpy: numpy cases skipped"
for combo in $combos; do
    IFS=: read -r path form np <<<"$combo"
    for name in syn glu mixed v1; do
        in="$WORK/$name.trace"
        [ $name = v1 ] && in="$SRC/tests/data/trace_v1.trace" # C's rewrite of it is $WORK/v1.trace
        out="$WORK/$name.$path.$form.$np.trace"
        check "$name, $path, $form form, $np: python copies it" copy_py "$path" "$form" "$np" "$in" "$out"
        check "$name, $path, $form form, $np: byte for byte the C writer's" cmp "$WORK/$name.trace" "$out"
        check "$name, $path, $form form, $np: flashbed reads it" \
            "$FLASHBED" trace info "$out" --out "$WORK/info.$name.$path.$form.$np" > /dev/null
    done
done

# ---- sets that are not sets of the trace: refused, naming token and layer, nothing written ----
refuses() { # lib|pure, numpy|no-numpy
    local lib=$LIB py=$PY
    [ "$1" = pure ] && lib=none
    [ "$2" = numpy ] && py=$NPY
    FLASHBED_TRACE_LIB=$lib "$py" - "$2" "$WORK/bad.trace" <<'EOF'
import os, sys
if sys.argv[1] == "no-numpy":
    sys.modules["numpy"] = None
import flashbed_trace as f
cases = [([3, 2], "not strictly ascending"), ([1, 40], "40"), ([-1], "-1"), ([1.5], "")]
for ids, says in cases:
    try:
        with f.TraceWriter(sys.argv[2], f.TraceMeta(2, 8, 40, has_predicted=True)) as w:
            w.begin_token()
            w.layer([1, 2], [0])
            w.layer(ids, [])
        sys.exit("%r: no error" % ids)
    except f.TraceError as e:
        if "token 0 layer 1" not in str(e) or says not in str(e):
            sys.exit("%r: message %r" % (ids, str(e)))
    if os.path.exists(sys.argv[2]) or any(".tmp." in n for n in os.listdir(os.path.dirname(sys.argv[2]))):
        sys.exit("%r: a file was left" % ids)
EOF
}
for combo in $combos; do
    IFS=: read -r path form np <<<"$combo"
    [ "$form" = list ] || continue
    check "$path, $np: bad sets refused naming token and layer, nothing written" refuses "$path" "$np"
done

# ---- a closed pipe: no traceback, SIGPIPE's status ----
check "synth a trace that dumps to more than a pipe holds" "$FLASHBED" trace synth --shape opt-tiny --tokens 400 \
    --out "$WORK/long.trace"
for path in pure lib; do
    lib=$LIB
    [ $path = pure ] && lib=none
    [ $path = lib ] && [ "$LIB" = none ] && continue
    for how in script module; do
        if [ $how = script ]; then cmd=("$PY" "$PYMOD"); else cmd=("$PY" -m flashbed_trace); fi
        FLASHBED_TRACE_LIB=$lib "${cmd[@]}" dump "$WORK/long.trace" 2> "$WORK/pipe.err" | head -1 > "$WORK/pipe.out"
        rc=${PIPESTATUS[0]}
        check "$path, $how: dump | head: exit 141 (got $rc)" test "$rc" -eq 141
        check "$path, $how: dump | head: nothing on stderr" test ! -s "$WORK/pipe.err"
        check "$path, $how: dump | head: the first line" grep -q "^0 2 0 a " "$WORK/pipe.out"
    done
done

# ---- pip install ./python, offline, into a throwaway venv ----
PIP=$(python_that "import pip, venv") || PIP=
if [ -z "$PIP" ]; then
    echo "python_roundtrip: no python with pip and venv: the install checks skipped"
    finish
fi
before=$(ls -a "$SRC/python")
wheel_kinds="pure"
[ "$LIB" != none ] && wheel_kinds="lib pure"
for kind in $wheel_kinds; do
    V="$WORK/venv-$kind"
    lib=$LIB
    [ $kind = pure ] && lib=none
    check "$kind: a venv" "$PIP" -m venv --without-pip --system-site-packages "$V"
    FLASHBED_TRACE_LIB=$lib "$V/bin/python" -m pip install --no-index --no-deps --quiet --disable-pip-version-check \
        "$SRC/python" > "$WORK/pip-$kind.log" 2>&1
    check "$kind: pip install --no-index ./python" test $? -eq 0
    (cd "$WORK" && env -u FLASHBED_TRACE_LIB -u PYTHONPATH "$V/bin/python" -c "
import sys, flashbed_trace as f, flashbed_record
want_lib = sys.argv[1] == 'lib'
sys.exit(0 if (f.library() is not None) == want_lib and f.__file__.startswith(sys.argv[2]) else
         'library %s (%s), module %s' % (f.library(), f.why_pure(), f.__file__))" "$kind" "$V")
    check "$kind: the installed module imports from the venv, the library $([ $kind = lib ] && echo beside it || echo absent)" test $? -eq 0
    (cd "$WORK" && env -u FLASHBED_TRACE_LIB -u PYTHONPATH "$V/bin/flashbed-trace" info "$WORK/syn.trace" > "$WORK/inst-$kind.out")
    check "$kind: the flashbed-trace command reads a trace" grep -q "tokens: 60" "$WORK/inst-$kind.out"
done
check "installing left nothing in python/" test "$before" = "$(ls -a "$SRC/python")"

finish
