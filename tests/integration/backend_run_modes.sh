#!/usr/bin/env bash
# flashbed run's FFN on a device (issue 31), from the command line: every
# mode (naive, hybrid, predictor, window, all) and the other neuron sources
# (a predictor, with --check and --record; a recorded trace; the gate on a
# GLU model), and a budget that moves rows, run with --backend sim and,
# where OpenCL starts (PoCL in CI), --backend opencl, against --backend cpu
# on tiny models: the same greedy tokens, per token the same bytes read,
# reads, rows inserted and row moves in run.json, uploads (h2d_bytes)
# exactly the rows inserted (a row and its up bias each) and the moves
# lists (8 bytes a move), and a recorded trace byte for byte the cpu's.
source "$(dirname "$0")/lib.sh"
MAKE_PRED=${FLASHBED_TEST_PREDICTOR:?the fb_test_predictor helper}
MAKE_MODEL=${FLASHBED_TEST_ARCH_MODEL:?the fb_test_arch_model helper}

check "opt-tiny model" "$FLASHBED" model make --arch opt --shape opt-tiny --dtype f32 --seed 5 --relu-density 0.15 --out "$WORK/opt-hf"
check "convert it" "$FLASHBED" convert "$WORK/opt-hf" --out "$WORK/opt"
check "a predictor for it" "$MAKE_PRED" "$WORK/opt" slice:16
check "a GLU model (llama, FATReLU)" "$MAKE_MODEL" llama-relu-tiny "$WORK/llama"
check "a predictor for it" "$MAKE_PRED" "$WORK/llama" slice:16
RUN=(run --prompt "the cat sat" -n 6 --ignore-eos --threads 1 --io-threads 1 --quiet)
BACKENDS=(sim)
if probe=$("$FLASHBED" "${RUN[@]}" --model "$WORK/opt" -n 1 --mode all --backend opencl --out "$WORK/probe" 2>&1 >/dev/null); then
    BACKENDS+=(opencl)
else
    echo "opencl does not start here ($probe): its runs are skipped"
fi

# A case: its name, the model, its bundle's bias, then run's options. Runs
# cpu and each device; with REC=1 each records into its folder's rec.trace.
# The comparisons run at the end, in one Python (compare_all).
CASES=()
compare_case() {
    local name=$1 model=$2 bias=$3 b
    shift 3
    for b in cpu "${BACKENDS[@]}"; do
        local rec=()
        [ "${REC:-0}" = 1 ] && mkdir -p "$WORK/$name-$b" && rec=(--record "$WORK/$name-$b/rec.trace")
        check "$name on $b" "$FLASHBED" "${RUN[@]}" --model "$model" "$@" "${rec[@]}" --backend $b --out "$WORK/$name-$b"
    done
    CASES+=("$name:$bias:${REC:-0}")
}
# Each device run against cpu's: tokens; per token bytes read, reads and
# rows inserted; uploads; a recorded trace's bytes. One FAIL line per
# failed comparison, then the count of comparisons.
compare_all() {
    python3 - "$WORK" "${BACKENDS[*]}" "${CASES[@]}" <<'PY'
import json, sys
work, backends, cases = sys.argv[1], sys.argv[2].split(), sys.argv[3:]
def load(name, b):
    with open(f"{work}/{name}-{b}/run.json") as f:
        return json.load(f)
def reads(d):
    return [(int(t["bytes_read"]), int(t["reads"]), int(t["rows_inserted"])) for t in d["tokens"]]
def uploads_ok(d, bias):
    stride = d["summary"]["row_stride"]
    return all(t["h2d_bytes"] == t["rows_inserted"] * (stride + bias) + 8 * t["row_moves"] for t in d["tokens"])
def same_bytes(a, b):
    with open(a, "rb") as fa, open(b, "rb") as fb:
        return fa.read() == fb.read()
n = 0
for case in cases:
    name, bias, rec = case.split(":")
    try:
        cpu = load(name, "cpu")
    except OSError as e:
        print(f"FAIL: {name}: no cpu run.json ({e})")
        continue
    for b in backends:
        try:
            dev = load(name, b)
        except OSError as e:
            print(f"FAIL: {name}: no {b} run.json ({e})")
            continue
        checks = [("tokens are cpu's", [t["id"] for t in dev["tokens"]] == [t["id"] for t in cpu["tokens"]]),
                  ("bytes read, reads and rows inserted per token are cpu's", reads(dev) == reads(cpu)),
                  ("uploads are the rows inserted and the moves lists", uploads_ok(dev, int(bias)))]
        if rec == "1":
            checks.append(("recorded trace is cpu's", same_bytes(f"{work}/{name}-{b}/rec.trace", f"{work}/{name}-cpu/rec.trace")))
        for what, ok in checks:
            n += 1
            if not ok:
                print(f"FAIL: {name}: {b}'s {what}")
print(n)
PY
}

for mode in naive hybrid predictor window all; do
    compare_case "$mode" "$WORK/opt" 4 --mode $mode
done
compare_case predictor-check "$WORK/opt" 4 --mode predictor --active predictor --check
REC=1 compare_case all-predictor-record "$WORK/opt" 4 --mode all --active predictor
compare_case window-trace-check "$WORK/opt" 4 --mode window --active "trace:$WORK/all-predictor-record-cpu/rec.trace" --check
compare_case lru-budget "$WORK/opt" 4 --policy lru --layout bundled --dram-budget 45%
REC=1 compare_case gate "$WORK/llama" 0 --mode all --active gate --check
out=$(compare_all)
checks=$((checks + $(tail -n 1 <<<"$out")))
while IFS= read -r line; do
    [[ $line == FAIL:* ]] && fail "${line#FAIL: }"
done <<<"$out"
check "the budget moved rows" grep -Eq '"row_moves":[[:space:]]*[1-9]' "$WORK/lru-budget-sim/run.json"
finish
