#!/usr/bin/env bash
# python/flashbed_record.py: its hooks on small hand-built torch models give
# the sets computed step by step (record_hooks.py); flashbed reads its traces
# (trace info with the Python reader's counts, replay, predict --trace); its
# command line, with a stand-in for transformers (stub_transformers/), scores
# in passes of --context, generates, keeps what it recorded on SIGINT and
# refuses bad input naming it. Where torch and transformers are both
# installed, the recorder's sets equal flashbed run --active oracle --record
# on flashbed's synthetic OPT (tools/recorder_check.sh). Without torch only
# the checks that need none run.
source "$(dirname "$0")/lib.sh"

SRC="${FLASHBED_SOURCE:-$(dirname "$0")/../..}"
REC="$SRC/python/flashbed_record.py"
export PYTHONPATH="$SRC/python:$SRC/tests/integration${PYTHONPATH:+:$PYTHONPATH}"
export PYTHONDONTWRITEBYTECODE=1

PY=$(python_that "import json") || { echo "python_record: skipped: python3 not found"; exit 77; }

# ---- refused before torch is needed ----
err_check() { # what, pattern, exit status, then the command
    local what=$1 pattern=$2 want=$3 out rc
    shift 3
    out=$("$@" 2>&1 >/dev/null)
    rc=$?
    check "$what: exit $want (got $rc)" test $rc -eq "$want"
    check "$what: says '$pattern'" grep -q -- "$pattern" <<<"$out"
}
rec_error() { local what=$1 pattern=$2 want=$3; shift 3; err_check "$what" "$pattern" "$want" "$PY" "$REC" "$@"; }
rec_error "no --model" "required" 2 --out "$WORK/t.trace"
rec_error "neither --text nor --token-ids" "give either --text" 1 --model "$WORK" --out "$WORK/t.trace"
rec_error "--text without --tokens" "--text needs --tokens" 1 --model "$WORK" --text "$REC" --out "$WORK/t.trace"
rec_error "--out a folder" "is a folder" 1 --model "$WORK" --token-ids "$REC" --out "$WORK"
rec_error "--out in a missing folder" "folder does not exist" 1 --model "$WORK" --token-ids "$REC" --out "$WORK/no/t.trace"
rec_error "--weight-type and --bytes-per-weight" "not both" 1 --model "$WORK" --token-ids "$REC" --weight-type bf16 \
    --bytes-per-weight 2 --out "$WORK/t.trace"
check "nothing written" test ! -e "$WORK/t.trace"
# the header's type from config.json's dtype, a type kept as a type (bf16 is not 2 bytes read back as f16)
check "weight types from config.json's dtype" "$PY" -c "
import json, os, sys, tempfile, flashbed_record as fr
d = tempfile.mkdtemp(dir=sys.argv[1])
def saved(dt):
    with open(os.path.join(d, 'config.json'), 'w') as f:
        json.dump({'torch_dtype': dt}, f)
    return fr.saved_weight_type(d)
ok = [saved(x) for x in ('float32', 'float16', 'bfloat16')] == ['f32', 'f16', 'bf16']
ok = ok and fr.torch_weight_type('torch.bfloat16') == 'bf16' and fr.torch_weight_type('float64') is None
try:
    saved('float64')
    ok = False
except fr.RecordError as e:
    ok = ok and 'float64' in str(e) and '--weight-type' in str(e)
sys.exit(0 if ok else 1)" "$WORK"

TORCH=$(python_that "import torch") || TORCH=
if [ -z "$TORCH" ]; then
    echo "python_record: torch not installed (Debian's python3-torch): hook and command-line checks skipped"
    finish
fi
echo "python_record: torch from $TORCH"

# ---- hooks on hand-built models ----
"$TORCH" "$SRC/tests/integration/record_hooks.py" "$WORK" > "$WORK/hooks.log" 2>&1
check "record_hooks.py: every check passes" test $? -eq 0
grep FAIL "$WORK/hooks.log" >&2

# flashbed reads the traces: the Python reader's counts, replay, predict --trace
for t in relu glu; do
    "$FLASHBED" trace info "$WORK/$t.trace" --out "$WORK/$t.fb" > /dev/null
    check "$t: flashbed trace info reads it" test $? -eq 0
    "$PY" "$SRC/python/flashbed_trace.py" info "$WORK/$t.trace" --json > "$WORK/$t.py.json"
    check "$t: flashbed counts what the Python reader counts" \
        "$PY" "$SRC/tests/integration/same_as_flashbed.py" "$WORK/$t.trace" "$WORK/$t.py.json" "$WORK/$t.fb/trace_info.json"
done
check "relu: flashbed replay accepts it" "$FLASHBED" replay --trace "$WORK/relu.trace" --policy window:5,lru --quiet --out "$WORK/replay"
check "relu: predict --trace --model opt-tiny accepts it" "$FLASHBED" predict --trace "$WORK/relu.trace" --model opt-tiny \
    --policy window:5,lru --dram-budget 90% --predictor-rank none --out "$WORK/predict-relu" > /dev/null
check "glu: predict --trace --model llama-tiny accepts it" "$FLASHBED" predict --trace "$WORK/glu.trace" --model llama-tiny \
    --policy window:5 --out "$WORK/predict-glu" > /dev/null

# ---- the command line, with the stand-in for transformers ----
M="$WORK/tiny-model"
mkdir -p "$M"
echo '{"model_type": "tiny", "vocab": 256, "d_model": 64, "d_ff": 256, "layers": 2, "glu": false, "seed": 1,
       "max_position_embeddings": 1024, "torch_dtype": "float16", "hidden_act": "relu"}' > "$M/config.json"
printf 'The quick brown fox jumps over the lazy dog; then it sleeps.' > "$WORK/text.txt"
stub() { PYTHONPATH="$SRC/tests/integration/stub_transformers:$PYTHONPATH" exec "$TORCH" "$REC" --model "$M" \
    --down-module 'blocks.*.ffn.down' --device cpu "$@"; }
(stub --text "$WORK/text.txt" --tokens 40 --context 16 --generate 3 --out "$WORK/cli.trace" --ids-out "$WORK/cli.ids" 2> "$WORK/cli.err")
check "cli: exit 0" test $? -eq 0
check "cli: 40 scored in passes of 16 (3 sequences) + 3 generated" "$TORCH" -c "
import sys, flashbed_trace as f
with f.TraceReader(sys.argv[1]) as r:
    flags = [t.flags for t in r]
    want = ([2] + [0] * 15) * 2 + [2] + [0] * 7 + [1] * 3
    sys.exit(flags != want or r.bytes_per_weight != 2 or r.n_layers != 2 or r.d_ff != 256)" "$WORK/cli.trace"
check "cli: the ids file holds the text's bytes and the 3 generated" "$TORCH" -c "
import sys
ids = [int(x) for x in open(sys.argv[1])]
sys.exit(len(ids) != 43 or ids[:40] != list(open(sys.argv[2], 'rb').read()[:40]))" "$WORK/cli.ids" "$WORK/text.txt"
check "cli: the header names the rule, module and tokens" "$TORCH" -c "
import json, sys, flashbed_trace as f
with f.TraceReader(sys.argv[1]) as r:
    s = json.loads(r.source)
sys.exit(s['rule'] != 'nonzero' or s['activation'] != 'relu' or s['down_module'] != 'blocks.*.ffn.down' or s['tokens'] != 40
         or s['generate'] != 3 or s['context'] != 16)" \
    "$WORK/cli.trace"
(stub --token-ids "$WORK/cli.ids" --rule nonzero --context 16 --out "$WORK/ids.trace" 2> /dev/null)
check "cli: the 43 ids scored, nonzero rule: the sets generating them gave" "$TORCH" -c "
import sys, flashbed_trace as f
a, b = list(f.read_tokens(sys.argv[1])), list(f.read_tokens(sys.argv[2]))
sys.exit(len(a) != 43 or len(b) != 43 or any(x.active != y.active for x, y in zip(a, b)))" "$WORK/cli.trace" "$WORK/ids.trace"
(stub --token-ids "$WORK/cli.ids" --context 16 --weight-type bf16 --out "$WORK/bf16.trace" 2> /dev/null)
check "cli: --weight-type bf16 is recorded as bf16 in a version 3 header" "$TORCH" -c "
import sys, flashbed_trace as f
with f.TraceReader(sys.argv[1]) as r:
    sys.exit(r.dtype != 'bf16' or r.version != 3 or r.bytes_per_weight != 2)" "$WORK/bf16.trace"

# bad input through the command line
echo "1 2 x" > "$WORK/bad.ids"
err_check "cli: non-numeric --token-ids" "bad.ids: not a list of integers" 1 stub --token-ids "$WORK/bad.ids" --out "$WORK/b.trace"
echo "1 2 999" > "$WORK/big.ids"
err_check "cli: an id outside the vocabulary" "token id 999 is outside the model's vocabulary of 256" 1 \
    stub --token-ids "$WORK/big.ids" --out "$WORK/b.trace"
err_check "cli: --tokens beyond the text" "text.txt holds 60 tokens; --tokens asks for 500" 1 \
    stub --text "$WORK/text.txt" --tokens 500 --out "$WORK/b.trace"
err_check "cli: a pattern matching nothing" "'blocks.\*.mlp' matches no module" 1 \
    stub --token-ids "$WORK/cli.ids" --down-module 'blocks.*.mlp' --out "$WORK/b.trace"
err_check "cli: --generate beyond the positions" "--generate 2000: the model has 1024 positions" 1 \
    stub --token-ids "$WORK/cli.ids" --generate 2000 --out "$WORK/b.trace"
check "cli: failures wrote nothing" bash -c "[ ! -e '$WORK/b.trace' ] && ! ls '$WORK' | grep -q '\.tmp\.'"

# SIGINT while generating: the tokens so far, as a whole trace, exit 130
sed -i 's/"seed": 1,/"seed": 1, "sleep": 0.05,/' "$M/config.json"
(stub --token-ids "$WORK/cli.ids" --generate 400 --out "$WORK/int.trace" 2> "$WORK/int.err") &
pid=$!
for _ in $(seq 600); do # until the model is loaded and the trace begun, then a little more
    ls "$WORK" | grep -q '^int\.tmp\.' && break
    sleep 0.1
done
sleep 2
kill -INT $pid
wait $pid
check "SIGINT: exit 130" test $? -eq 130
check "SIGINT: a trace of the tokens so far, read back whole" "$TORCH" -c "
import sys, flashbed_trace as f
n = sum(1 for _ in f.read_tokens(sys.argv[1]))
sys.exit(not 43 < n < 443)" "$WORK/int.trace"
check "SIGINT: says it was interrupted" grep -q "interrupted" "$WORK/int.err"
check "SIGINT: no temporary left" bash -c "! ls '$WORK' | grep -q '\.tmp\.'"

# ---- against the engine, where the reference environment is ----
# (tests/integration/hf_fixture_flash.sh checks the committed recorded
# traces of the transformers fixtures without it)
TF=
if [ -x "$SRC/.venv-ref/bin/python" ] && "$SRC/.venv-ref/bin/python" "$SRC/tools/reference-env/pins.py" 2>/dev/null; then
    TF="$SRC/.venv-ref/bin/python"
fi
if [ -z "$TF" ]; then
    echo "python_record: no pinned reference environment (.venv-ref): the sets-equal check on fresh models skipped"
    echo "  (tools/make-reference-env.sh makes it, then tools/recorder_check.sh all DIR runs the check)"
else
    FLASHBED="$FLASHBED" PYTHON="$TF" "$SRC/tools/recorder_check.sh" all "$WORK/check" > "$WORK/check.log" 2>&1
    check "recorder_check: the recorder's sets equal flashbed run's" test $? -eq 0
    cat "$WORK/check.log" | grep "against" >&2
    # what transformers cannot load alone (a bamboo folder: dReLU; a Llama
    # with hidden_act fatrelu: ProSparse's), through the recorder's own
    # loaders: the sets of the fixtures' committed traces again
    for fx in drelu prosparse; do
        d="$SRC/tests/data/${fx}_fixture"
        json_get "$d/reference.json" '"\n".join(map(str, d["prompt_ids"]))' > "$WORK/$fx.ids"
        check "$fx: the recorder loads it" "$TF" "$REC" --model "$d" --token-ids "$WORK/$fx.ids" --generate 8 \
            --device cpu --out "$WORK/$fx.trace"
        check "$fx: the sets of its recorded.trace" "$TF" "$SRC/tools/recorder_check.py" compare "$d/recorded.trace" \
            "$WORK/$fx.trace"
    done
fi
finish
