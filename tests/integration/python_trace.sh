#!/usr/bin/env bash
# python/flashbed_trace.py against flashbed itself: the Python reader reads
# the sets flashbed reads (versions 1 and 2, with and without predicted
# sets), its writer's files are ones flashbed reads back to the same
# statistics, and damage is reported with where it lies.
source "$(dirname "$0")/lib.sh"

if ! command -v python3 >/dev/null 2>&1; then
    echo "python_trace: skipped: python3 not found"
    exit 77
fi
SRC="${FLASHBED_SOURCE:-$(dirname "$0")/../..}"
PY="$SRC/python/flashbed_trace.py"
export PYTHONPATH="$SRC/python${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1 # leave no __pycache__ in the source tree

check "crc32c(123456789) is 0xE3069283" \
    python3 -c "import flashbed_trace as f, sys; sys.exit(f.crc32c(b'123456789') != 0xE3069283)"
check "crc32c continues across parts" \
    python3 -c "import flashbed_trace as f, sys; sys.exit(f.crc32c(b'6789', f.crc32c(b'12345')) != 0xE3069283)"

# Python info --json against flashbed trace info's trace_info.json
# (same_as_flashbed.py: shape, tokens, sequences, neurons per layer).
same_as_flashbed() { # trace, python info json, flashbed trace_info.json
    python3 "$SRC/tests/integration/same_as_flashbed.py" "$@"
}

# Reads trace $2 with both readers into $WORK/$1.py.json and $WORK/$1.fb/.
read_both() {
    python3 "$PY" info "$2" --json > "$WORK/$1.py.json"
    check "$1: python info exits 0" test $? -eq 0
    "$FLASHBED" trace info "$2" --out "$WORK/$1.fb" > /dev/null
    check "$1: flashbed trace info exits 0" test $? -eq 0
    check "$1: python reads what flashbed reads" same_as_flashbed "$2" "$WORK/$1.py.json" "$WORK/$1.fb/trace_info.json"
}

# The same sets, token flags and header, read by the Python reader.
same_sets() { # a, b
    python3 - "$1" "$2" <<'EOF'
import sys, flashbed_trace as f
with f.TraceReader(sys.argv[1]) as a, f.TraceReader(sys.argv[2]) as b:
    for k in ("n_layers", "d_model", "d_ff", "bytes_per_weight", "ffn_kind", "has_predicted", "source", "n_tokens"):
        if getattr(a, k) != getattr(b, k):
            sys.exit("header field %s differs" % k)
    n = 0
    for x, y in zip(a, b):
        if (x.index, x.flags, x.active, x.predicted) != (y.index, y.flags, y.active, y.predicted):
            sys.exit("token %d differs" % x.index)
        n += 1
    if n != a.n_tokens or a.tokens_read != b.tokens_read:
        sys.exit("token counts differ")
EOF
}

# trace_info.json without what depends on the file's bytes or the run.
stats_only() {
    python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
for k in ('provenance', 'file_bytes', 'bits_per_neuron', 'check_bits_per_neuron', 'format_version', 'checked'):
    d.pop(k, None)
print(json.dumps(d, sort_keys=True))" "$1"
}

# ---- the current version (3) with predicted sets, several sequences ----
T="$WORK/pred.trace"
check "synth a trace with predicted sets" "$FLASHBED" trace synth --shape opt-tiny --tokens 80 --prompts 3 --seed 3 --out "$T"
read_both pred "$T"
check "pred: header fields as attributes" python3 -c "
import sys, flashbed_trace as f
with f.TraceReader(sys.argv[1]) as r:
    got = (r.version, r.n_layers, r.d_model, r.d_ff, r.bytes_per_weight, r.ffn_kind, r.has_predicted, r.n_tokens)
    sys.exit(got != (3, 2, 64, 256, 2, f.FFN_RELU, True, 80) or '\"opt-tiny\"' not in r.source)" "$T"
check "pred: 3 sequences" python3 -c "import json,sys; sys.exit(json.load(open(sys.argv[1]))['sequences'] != 3)" "$WORK/pred.py.json"

# Another architecture: GLU, a d_ff that is no multiple of 8.
check "synth llama-tiny" "$FLASHBED" trace synth --shape llama-tiny --tokens 30 --prompts 2 --seed 5 --out "$WORK/glu.trace"
read_both glu "$WORK/glu.trace"

check "pred: a caller changing a token's lists leaves the next token's sets as they are" python3 -c "
import sys, flashbed_trace as f
want = [(t.active, t.predicted) for t in f.read_tokens(sys.argv[1])]
got = []
for t in f.read_tokens(sys.argv[1]):
    got.append(([list(x) for x in t.active], [list(x) for x in t.predicted]))
    for x in t.active + t.predicted:
        x.append(10**6)
sys.exit(got != want)" "$T"

# ---- version 1: the committed file, and the sets it is known to hold ----
V1="$SRC/tests/data/trace_v1.trace"
read_both v1 "$V1"
check "v1: python reads every set of trace_v1.sets" \
    bash -c "python3 '$PY' dump '$V1' | cmp -s - <(grep -v '^#' '$SRC/tests/data/trace_v1.sets')"

# ---- versions 2 and 3: the committed files, their sets and their headers ----
# (version 1 and 2 record bytes per weight: 2 reads as f16, 4 as f32; their
# units follow the channel flag)
for v in 1 2 3; do
    F="$SRC/tests/data/trace_v$v.trace"
    check "v$v: python reads every set of trace_v$v.sets" \
        bash -c "python3 '$PY' dump '$F' | cmp -s - <(grep -v '^#' '$SRC/tests/data/trace_v$v.sets')"
    check "v$v: its header's type and units" python3 -c "
import sys, flashbed_trace as f
want = {1: ('f16', f.UNIT_NEURON_BUNDLE, 256), 2: ('f32', f.UNIT_DOWN_ROW, 40), 3: ('bf16', f.UNIT_NEURON_BUNDLE, 48)}
with f.TraceReader(sys.argv[1]) as r:
    sys.exit((r.version, r.dtype, r.unit_kind, r.units) != (int(sys.argv[2]),) + want[int(sys.argv[2])])" "$F" "$v"
done
read_both v3 "$SRC/tests/data/trace_v3.trace"
# an older header's bytes per weight that names no type: refused, naming the
# file and the value, on the C library's path and the pure one
python3 - "$SRC/tests/data/trace_v2.trace" "$WORK/bpw3.trace" <<'EOF'
import struct, sys, flashbed_trace as f
b = bytearray(open(sys.argv[1], "rb").read())
b[24:28] = struct.pack("<I", 3)
n = struct.unpack_from("<I", b, 44)[0]
b[48 + n:52 + n] = struct.pack("<I", f.crc32c(bytes(b[:48 + n])))
open(sys.argv[2], "wb").write(b)
EOF
for lib in "${FLASHBED_TRACE_LIB:-none}" none; do
    check "bytes per weight 3 refused ($lib)" env FLASHBED_TRACE_LIB="$lib" python3 -c "
import sys, flashbed_trace as f
try:
    f.TraceReader(sys.argv[1])
except f.TraceError as e:
    sys.exit(not (sys.argv[1] in str(e) and '3 bytes per weight in a version 2 header' in str(e)))
sys.exit(1)" "$WORK/bpw3.trace"
done
read_both v2 "$SRC/tests/data/trace_v2.trace"

# ---- without predicted sets: written by the Python writer ----
check "write an active-only trace (copy --active-only)" python3 "$PY" copy --active-only "$T" "$WORK/active.trace"
read_both active "$WORK/active.trace"
check "active-only: the active neurons of its source" python3 -c "
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
sys.exit(a['active_per_layer'] != b['active_per_layer'] or b['has_predicted'])" "$WORK/pred.py.json" "$WORK/active.py.json"

# ---- copy: flashbed reads it to the same statistics, python to the same sets ----
for name in pred glu v1 active; do
    case $name in v1) IN="$V1" ;; *) IN="$WORK/$name.trace" ;; esac
    check "copy $name" python3 "$PY" copy "$IN" "$WORK/$name.copy.trace"
    "$FLASHBED" trace info "$WORK/$name.copy.trace" --out "$WORK/$name.copy.fb" > /dev/null
    check "copy $name: flashbed trace info accepts it" test $? -eq 0
    check "copy $name: flashbed's statistics unchanged" \
        test "$(stats_only "$WORK/$name.fb/trace_info.json")" = "$(stats_only "$WORK/$name.copy.fb/trace_info.json")"
    check "copy $name: version 3, checked" \
        python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d['format_version'] != 3 or not d['checked'])" \
        "$WORK/$name.copy.fb/trace_info.json"
    check "copy $name: python reads the same sets" same_sets "$IN" "$WORK/$name.copy.trace"
done
check "copy leaves no temporary" bash -c "! ls '$WORK' | grep -q '\.tmp\.'"

# ---- damage ----
# A flipped bit in token 40's data: the reader names that token and a layer.
python3 - "$T" "$WORK/flip.trace" <<'EOF'
import sys, flashbed_trace as f
b = bytearray(open(sys.argv[1], "rb").read())
# find token 40's marker by reading block lengths from the header's end
# (version 3's fixed header: 56 bytes)
n = 56 + int.from_bytes(b[52:56], "little") + 4
for t in range(41):
    start = n
    n += 2
    for l in range(2):
        length = 0
        shift = 0
        while True:
            c = b[n]; n += 1
            length |= (c & 0x7F) << shift; shift += 7
            if not c & 0x80:
                break
        if t == 40 and l == 1:
            b[n + 1] ^= 0x10  # a byte inside layer 1's sets
        n += length + 4
open(sys.argv[2], "wb").write(b)
EOF
raises() { # trace, pattern the message must hold
    python3 - "$@" <<'EOF'
import re, sys, flashbed_trace as f
try:
    for _ in f.read_tokens(sys.argv[1]):
        pass
except f.TraceError as e:
    if sys.argv[1] in str(e) and re.search(sys.argv[2], str(e)):
        sys.exit(0)
    sys.exit("message %r lacks the file or %r" % (str(e), sys.argv[2]))
sys.exit("no TraceError")
EOF
}
check "flipped bit: python names token 40 layer 1" raises "$WORK/flip.trace" "token 40 layer 1: checksum mismatch"
check "flipped bit: flashbed agrees it is damaged" bash -c "! '$FLASHBED' trace info '$WORK/flip.trace' > /dev/null 2>&1"
head -c 1000 "$T" > "$WORK/cut.trace"
check "truncated: python raises" raises "$WORK/cut.trace" "truncated"
head -c 60 "$T" > "$WORK/cuthead.trace"
check "truncated header: python raises" raises "$WORK/cuthead.trace" "header"
python3 -c "
import sys; b = bytearray(open(sys.argv[1], 'rb').read()); b[20] ^= 1; open(sys.argv[2], 'wb').write(b)" "$T" "$WORK/head.trace"
check "flipped header bit: python names the header" raises "$WORK/head.trace" "header checksum mismatch"
python3 -c "
import sys; b = bytearray(open(sys.argv[1], 'rb').read()); b[-10] ^= 1; open(sys.argv[2], 'wb').write(b)" "$T" "$WORK/foot.trace"
check "flipped footer bit: python names the end marker" raises "$WORK/foot.trace" "end marker checksum mismatch"
check "not a trace: python says so" raises "$PY" "not a flashbed trace"

for bad in flip cut head; do
    python3 "$PY" copy "$WORK/$bad.trace" "$WORK/$bad.out.trace" > /dev/null 2> "$WORK/$bad.err"
    rc=$?
    check "copy of $bad: exit 1" test $rc -eq 1
    check "copy of $bad: message names the file" grep -q "error: $WORK/$bad.trace: " "$WORK/$bad.err"
    check "copy of $bad: nothing at OUT" test ! -e "$WORK/$bad.out.trace"
done
check "failed copies leave no temporary" bash -c "! ls '$WORK' | grep -q '\.tmp\.'"
python3 "$PY" copy "$WORK/missing.trace" "$WORK/missing.out.trace" 2> "$WORK/missing.err"
check "copy of a missing file: exit 1" test $? -eq 1
check "copy of a missing file: names it" grep -q "missing.trace" "$WORK/missing.err"
python3 "$PY" info > /dev/null 2>&1
check "no trace named: usage, exit 2" test $? -eq 2

# ---- set forms: sets="set" and sets="numpy" give the list form's sets ----
# flashbed's synthetic traces hold Rice records only; dense sets written by
# the Python writer are bitset records, which numpy decodes on its own path.
check "write a trace with bitset records" python3 - "$WORK/dense.trace" <<'EOF'
import random, sys, flashbed_trace as f
rng, d_ff, L = random.Random(7), 203, 3  # d_ff no multiple of 8: padding bits
def some():
    p = rng.choice((0, 0.02, 0.3, 0.5, 0.9, 1))
    ids = set(rng.sample(range(d_ff), int(p * d_ff)))
    if rng.random() < 0.3:
        ids.add(d_ff - 1)
    return sorted(ids)
sent = []
with f.TraceWriter(sys.argv[1], f.TraceMeta(L, 32, d_ff, has_predicted=True, source='{"test":"dense"}')) as w:
    for t in range(40):
        w.begin_token(f.TOKEN_SEQ_START if t == 20 else f.TOKEN_GENERATED)
        sets = [(some(), some()) for _ in range(L)]
        for a, p in sets:
            w.layer(a, p)
        sent.append(sets)
bitsets = 0
f._lib, f._lib_why = None, "counting the Python decoder's records"  # the count needs the Python reader
decode = f._decode_bitset
def counted(*args):
    global bitsets
    bitsets += 1
    return decode(*args)
f._decode_bitset = counted
got = [[(tok.active[l], tok.predicted[l]) for l in range(L)] for tok in f.read_tokens(sys.argv[1])]
sys.exit("read back other sets" if got != sent else "no bitset records" if bitsets < 20 else 0)
EOF
read_both dense "$WORK/dense.trace"

# Every set of a trace in each form named against the list form: a frozenset
# of the same ids, or a sorted read-only numpy.uint32 array of them.
forms_agree() { # python, trace, forms...
    local py=$1
    shift
    "$py" - "$@" <<'EOF'
import sys, flashbed_trace as f
path, forms = sys.argv[1], sys.argv[2:]
def same(form, want, got):
    if form == "set":
        return type(got) is frozenset and got == frozenset(want)
    return (type(got).__name__ == "ndarray" and str(got.dtype) == "uint32" and not got.flags.writeable
            and got.tolist() == want)
readers = [f.TraceReader(path)] + [f.TraceReader(path, sets=s) for s in forms]
its = [iter(r) for r in readers]
for toks in zip(*its):
    base = toks[0]
    for form, t in zip(forms, toks[1:]):
        if (t.index, t.flags, t.predicted is None) != (base.index, base.flags, base.predicted is None):
            sys.exit("%s: token %d: %s form differs in index, flags or predicted" % (path, base.index, form))
        for what in ("active", "predicted"):
            want, got = getattr(base, what), getattr(t, what)
            if want is None:
                continue
            if len(got) != len(want):
                sys.exit("%s: token %d: %s form has %d layers" % (path, base.index, form, len(got)))
            for l in range(len(want)):
                if not same(form, want[l], got[l]):
                    sys.exit("%s: token %d layer %d: %s set of the %s form differs" % (path, base.index, l, what, form))
for it, r in zip(its[1:], readers[1:]):
    if next(it, None) is not None:  # the footer checked, and nothing more
        sys.exit("%s: the %s form reads more tokens" % (path, r.sets))
    if (r.tokens_read, r.active_events, r.pred_events) != (readers[0].tokens_read, readers[0].active_events,
                                                             readers[0].pred_events):
        sys.exit("%s: the %s form counts other totals" % (path, r.sets))
EOF
}
# Copies through the writer from the sets of a form: the same sets.
copy_from_form() { # python, form, in, out
    "$1" - "$2" "$3" "$4" <<'EOF'
import sys, flashbed_trace as f
form, src, dst = sys.argv[1:]
with f.TraceReader(src, sets=form) as r, f.TraceWriter(dst, r.meta) as w:
    for tok in r:
        w.begin_token(tok.flags)
        for l in range(r.n_layers):
            w.layer(tok.active[l], tok.predicted[l] if tok.predicted is not None else None)
EOF
}
for name in pred glu v1 active dense; do
    case $name in v1) IN="$V1" ;; *) IN="$WORK/$name.trace" ;; esac
    check "$name: the set form's sets are the list form's" forms_agree python3 "$IN" set
done
check "dense: writer takes the set form's frozensets" copy_from_form python3 set "$WORK/dense.trace" "$WORK/dense.set.trace"
check "dense: ... and writes the same sets" same_sets "$WORK/dense.trace" "$WORK/dense.set.trace"
check "unknown set form: ValueError naming the forms" python3 -c "
import sys, flashbed_trace as f
try:
    f.TraceReader(sys.argv[1], sets='tuple')
except ValueError as e:
    sys.exit('numpy' not in str(e) or 'tuple' not in str(e))
sys.exit('no ValueError')" "$T"

# numpy missing (a None in sys.modules makes its import fail): the list and
# set forms work, the numpy form raises TraceError saying why.
check "numpy missing: list and set forms read, numpy form raises TraceError" python3 - "$T" <<'EOF'
import sys
sys.modules["numpy"] = None
import flashbed_trace as f
n = sum(1 for _ in f.read_tokens(sys.argv[1])) + sum(1 for _ in f.read_tokens(sys.argv[1], sets="set"))
if n != 160:
    sys.exit("read %d tokens, not 2 x 80" % n)
for attempt in (lambda: f.TraceReader(sys.argv[1], sets="numpy"), lambda: next(f.read_tokens(sys.argv[1], "numpy"))):
    try:
        attempt()
    except f.TraceError as e:
        if "numpy" not in str(e) or "not installed" not in str(e):
            sys.exit("message %r does not say numpy is not installed" % str(e))
    else:
        sys.exit("no TraceError")
EOF

# The numpy form wherever a python on the way has numpy (python3 on PATH may
# be one without it).
NPY=$(python_that "import flashbed_trace as f; f._numpy()") || NPY=
if [ -z "$NPY" ]; then
    echo "python_trace: numpy not installed: numpy checks skipped"
else
    echo "python_trace: numpy checks with $NPY"
    for name in pred glu v1 active dense; do
        case $name in v1) IN="$V1" ;; *) IN="$WORK/$name.trace" ;; esac
        check "$name: the numpy form's sets are the list form's" forms_agree "$NPY" "$IN" numpy set
    done
    check "the list and set forms do not import numpy" "$NPY" -c "
import sys, flashbed_trace as f
for form in ('list', 'set'):
    for _ in f.read_tokens(sys.argv[1], sets=form):
        pass
sys.exit('numpy' in sys.modules)" "$WORK/dense.trace"
    check "dense: writer takes the numpy form's arrays" copy_from_form "$NPY" numpy "$WORK/dense.trace" "$WORK/dense.np.trace"
    check "dense: ... and writes the same sets" same_sets "$WORK/dense.trace" "$WORK/dense.np.trace"
    # the numpy decoders' checks: the list decoders' words for bad records
    check "numpy form: bad bitset records refused in the list form's words" "$NPY" - <<'EOF'
import sys, flashbed_trace as f
import numpy as np
d_ff = 13  # two bytes, bits 13..15 padding
cases = [
    bytes([0x00, 2, 0x05, 0x00]),        # ids 0, 2
    bytes([0x00, 1, 0x00, 0x40]),        # id 14: padding
    bytes([0x00, 3, 0x05, 0x00]),        # says 3, holds 2
    bytes([0x00, 2, 0x05]),              # truncated
    bytes([0x20, 3, 0x05, 0x10]),        # ids 0, 2, 12 XOR the active set: 0, 5
    bytes([0x01, 3, 1, 2, 0b1011_0110, 0x01]),  # Rice, k = 1
]
active = [2, 5, 12]
for rec in cases:
    out = []
    for form, refs in (("list", (None, None, active)), ("numpy", (None, None, np.array(active, np.uint32)))):
        try:
            got = f.decode_set(f._Mem(rec), refs, d_ff, form)
            out.append(got if form == "list" else (got.tolist(), str(got.dtype)))
        except f._Why as e:
            out.append("error: %s" % e)
    want = out[0] if isinstance(out[0], str) else (out[0], "uint32")
    if out[1] != want:
        sys.exit("record %s: list form %r, numpy form %r" % (rec.hex(), out[0], out[1]))
EOF
    for bad in flip cut cuthead head foot; do
        check "$bad: the numpy form raises the list form's error" "$NPY" - "$WORK/$bad.trace" <<'EOF'
import sys, flashbed_trace as f
msgs = []
for form in ("list", "numpy"):
    try:
        for _ in f.read_tokens(sys.argv[1], sets=form):
            pass
        msgs.append("no error")
    except f.TraceError as e:
        msgs.append(str(e))
sys.exit(0 if msgs[0] == msgs[1] != "no error" else "list %r, numpy %r" % tuple(msgs))
EOF
    done
fi

# ---- channel sets (issue 33): written by Python, read by flashbed; copied back ----
check "python writes a trace with channel sets" python3 - "$WORK/chan.trace" <<'EOF'
import sys, flashbed_trace as f
m = f.TraceMeta(2, 12, 40, "f16", f.FFN_GLU, False, '{"model":"chan"}', has_channels=True)
with f.TraceWriter(sys.argv[1], m) as w:
    for t in range(5):
        w.begin_token(f.TOKEN_GENERATED)
        for l in range(2):
            w.layer([i for i in range(40) if (i + t + l) % 3 == 0], channels=[j for j in range(12) if (j + t) % 4 < 1 + l])
EOF
read_both chan "$WORK/chan.trace"
check "chan: flashbed reads the kept channels' density" python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
sys.exit(abs(d['mean_density_channels'] - (15 + 30) / 120) > 1e-12)" "$WORK/chan.fb/trace_info.json"
check "chan: a layer without its channel set is refused" python3 -c "
import sys, flashbed_trace as f
w = f.TraceWriter(sys.argv[1], f.TraceMeta(1, 4, 8, has_channels=True))
w.begin_token()
try:
    w.layer([1])
    sys.exit('no error')
except f.TraceError as e:
    w.abort()
    sys.exit(0 if 'no channel set' in str(e) else str(e))" "$WORK/nochan.trace"
check "chan: copy keeps the channel sets" python3 "$PY" copy "$WORK/chan.trace" "$WORK/chan2.trace"
check "chan: the copy reads the same" python3 -c "
import sys, flashbed_trace as f
a, b = list(f.read_tokens(sys.argv[1])), list(f.read_tokens(sys.argv[2]))
sys.exit(len(a) != 5 or [x.channels for x in a] != [y.channels for y in b] or a[1].channels[1] != [0, 3, 4, 7, 8, 11])" "$WORK/chan.trace" "$WORK/chan2.trace"

finish
