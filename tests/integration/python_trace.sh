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

# Python info --json against flashbed trace info's trace_info.json: the same
# shape, tokens and sequences, and per layer the neurons flashbed's densities
# count (density * tokens * d_ff), active and predicted.
same_as_flashbed() { # trace, python info json, flashbed trace_info.json
    python3 - "$@" <<'EOF'
import json, sys
path, py, fb = sys.argv[1], json.load(open(sys.argv[2])), json.load(open(sys.argv[3]))
ok = True
def want(what, a, b):
    global ok
    if a != b:
        print("%s: %s: python %r, flashbed %r" % (path, what, a, b), file=sys.stderr)
        ok = False
for k in ("n_layers", "d_model", "d_ff", "tokens", "sequences"):
    want(k, py[k], fb[k])
want("version", py["version"], fb["format_version"])
want("checked", py["checked"], fb["checked"])
want("file bytes", py["file_bytes"], fb["file_bytes"])
n = fb["tokens"] * fb["d_ff"]
want("active per layer", py["active_per_layer"], [round(d * n) for d in fb["density_active"]])
want("active total", py["active_neurons"], sum(round(d * n) for d in fb["density_active"]))
if "density_predicted" in fb:
    want("predicted per layer", py["predicted_per_layer"], [round(d * n) for d in fb["density_predicted"]])
    want("predicted total", py["predicted_neurons"], sum(round(d * n) for d in fb["density_predicted"]))
else:
    want("has predicted", py["has_predicted"], False)
    want("predicted total", py["predicted_neurons"], 0)
want("source", json.loads(py["source"]), fb["source"])
sys.exit(0 if ok else 1)
EOF
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

# ---- version 2 with predicted sets, several sequences ----
T="$WORK/pred.trace"
check "synth a trace with predicted sets" "$FLASHBED" trace synth --shape opt-tiny --tokens 80 --prompts 3 --seed 3 --out "$T"
read_both pred "$T"
check "pred: header fields as attributes" python3 -c "
import sys, flashbed_trace as f
with f.TraceReader(sys.argv[1]) as r:
    got = (r.version, r.n_layers, r.d_model, r.d_ff, r.bytes_per_weight, r.ffn_kind, r.has_predicted, r.n_tokens)
    sys.exit(got != (2, 2, 64, 256, 2, f.FFN_RELU, True, 80) or '\"opt-tiny\"' not in r.source)" "$T"
check "pred: 3 sequences" python3 -c "import json,sys; sys.exit(json.load(open(sys.argv[1]))['sequences'] != 3)" "$WORK/pred.py.json"

# Another architecture: GLU, a d_ff that is no multiple of 8.
check "synth llama-tiny" "$FLASHBED" trace synth --shape llama-tiny --tokens 30 --prompts 2 --seed 5 --out "$WORK/glu.trace"
read_both glu "$WORK/glu.trace"

# ---- version 1: the committed file, and the sets it is known to hold ----
V1="$SRC/tests/data/trace_v1.trace"
read_both v1 "$V1"
check "v1: python reads every set of trace_v1.sets" \
    bash -c "python3 '$PY' dump '$V1' | cmp -s - <(grep -v '^#' '$SRC/tests/data/trace_v1.sets')"

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
    check "copy $name: version 2, checked" \
        python3 -c "import json,sys; d=json.load(open(sys.argv[1])); sys.exit(d['format_version'] != 2 or not d['checked'])" \
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
n = 48 + int.from_bytes(b[44:48], "little") + 4
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

finish
