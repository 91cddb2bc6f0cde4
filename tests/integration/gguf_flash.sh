#!/usr/bin/env bash
# The tools a researcher runs on a model, on GGUF models as `flashbed
# convert` imports them (tests/data/gguf: tiny random models; matrices kept
# in their block types, the FFN's in ffn_matrices.bin, ffn.bin's bundles in
# f16). Dense decode computes on the stored blocks (8-bit activations), the
# flash paths on ffn.bin's f16 decode of them, so the two agree where no
# near tie intervenes: each case's prompt and token count are where the
# dense winner leads by 0.17 or more (fb_test_logits, when written).
#   - run --mode dense generates generate's greedy tokens, all of them;
#     run --mode all (oracle, threshold 0) and naive, the first N; sim the
#     cpu backend's, token for token
#   - a trace recorded by run drives a run whose reads, bytes and rows
#     inserted per token equal replay's count of the same trace
#   - the masked dense FFN (--active oracle or gate at threshold 0) equals
#     dense on the stored blocks bit for bit (perplexity printed the same)
#   - sparsify calibrate, predictor train and eval, and run with their
#     sources (gate-cal, predictor, teal after model transpose) complete
#   - model.json's name is the file's general.name
source "$(dirname "$0")/lib.sh"

DATA="$FLASHBED_SOURCE/tests/data/gguf"
LOG="$WORK/last.log"
logged() { # a command whose output is shown only when it fails
    "$@" > "$LOG" 2>&1 || { cat "$LOG" >&2; return 1; }
}
gen_ids() { json_get "$1" '" ".join(str(t["id"]) for t in d["tokens"])'; }
run_ids() { awk -F, '$3 == "generated" { printf "%s%s", sep, $2; sep = " " }' "$1/tokens.csv"; }
first() { echo "$2" | cut -d' ' -f1-"$1"; }

# run.json's reads, bytes_read and rows_inserted per token equal replay.json's.
counts_equal() { # run folder (replay in its replay/)
    python3 - "$1" <<'PY'
import json, sys
run = json.load(open(sys.argv[1] + "/run.json"))["tokens"]
rep = json.load(open(sys.argv[1] + "/replay/replay.json"))["results"][0]["per_token"]
for r, p in (("reads", "reads"), ("bytes_read", "bytes"), ("rows_inserted", "rows_inserted")):
    a, b = [int(t[r]) for t in run], [int(x) for x in rep[p][:len(run)]]
    if a != b:
        sys.exit("%s: run %s, replay %s" % (r, a, b))
PY
}

printf '1 5 9 33 70 100 200 7\n' > "$WORK/p1.ids"
printf '3 40 80 120 160 200 240 280\n' > "$WORK/p2.ids"

flash_case() { # arch, type, prompt (p1 or p2), tokens free of near ties
    local arch=$1 type=$2 ids="$WORK/$3.ids" n=$4 m="$WORK/$1-$2" w="$WORK/$1-$2.out"
    mkdir -p "$w"
    check "$arch $type: convert" logged "$FLASHBED" convert "$DATA/$arch/$type/model.gguf" --out "$m"
    check "$arch $type: generate" logged "$FLASHBED" generate --model "$m" --prompt-ids "$ids" -n 6 --temperature 0 \
        --threads 1 --json "$w/gen.json"
    local g
    g=$(gen_ids "$w/gen.json")
    local common=(--prompt-ids "$ids" -n 7 --ignore-eos --threads 1 --io-threads 2 --quiet)
    check "$arch $type: run --mode dense" logged "$FLASHBED" run --model "$m" --mode dense "${common[@]}" --out "$w/dense"
    check "$arch $type: run --mode dense generates generate's tokens ($g)" \
        test "$(first "$(wc -w <<<"$g")" "$(run_ids "$w/dense")")" = "$g"
    for mode in all naive; do
        check "$arch $type: run --mode $mode" logged "$FLASHBED" run --model "$m" --mode $mode "${common[@]}" --out "$w/$mode"
        check "$arch $type: run --mode $mode, its first $n tokens generate's ($(first "$n" "$g"))" \
            test "$(first "$n" "$(run_ids "$w/$mode")")" = "$(first "$n" "$g")"
    done
    check "$arch $type: run --backend sim" logged "$FLASHBED" run --model "$m" --mode all --backend sim "${common[@]}" \
        --out "$w/sim"
    check "$arch $type: sim's tokens are cpu's" test "$(run_ids "$w/sim")" = "$(run_ids "$w/all")"
}

flash_case llama Q8_0 p1 6
flash_case qwen2 Q4_K p1 6
flash_case phi3 Q4_K p1 6
flash_case qwen3 Q4_0 p2 4
flash_case qwen3 F16 p2 3
check "model.json's name is the file's general.name" \
    test "$(json_get "$WORK/llama-Q8_0/model.json" 'd["name"]')" = "flashbed tiny llama s32"

# A recorded trace drives the reads replay counts (llama Q4_0, sparse at
# an oracle threshold so that the caches matter).
M="$WORK/llama-Q4_0"
T="$WORK/llama.trace"
check "llama Q4_0: convert" logged "$FLASHBED" convert "$DATA/llama/Q4_0/model.gguf" --out "$M"
check "record a trace" logged "$FLASHBED" run --model "$M" --mode all --threshold 0.05 --prompt-ids "$WORK/p1.ids" -n 20 \
    --ignore-eos --threads 1 --io-threads 2 --quiet --record "$T" --out "$WORK/rec"
check "run.md says the flash FFN is f16 decoded from the blocks" grep -q \
    "^- FFN on flash: f16 bundles of ffn.bin, decoded from the matrices the source stored" "$WORK/rec/run.md"
for pl in "lru bundled" "window:4 split" "hot coalesce:2" "belady split"; do
    read -r policy layout <<<"$pl"
    out="$WORK/x-${policy/:/}-${layout/:/}"
    check "$policy $layout: run on the trace" logged "$FLASHBED" run --model "$M" --policy "$policy" --layout "$layout" \
        --active "trace:$T" --use actual --dram-budget 60% --prompt-ids "$WORK/p1.ids" -n 20 --ignore-eos --threads 1 \
        --io-threads 2 --quiet --out "$out"
    read -r S C A <<<"$(json_get "$out/run.json" \
        '" ".join(str(int(d["summary"][k])) for k in ("row_stride", "ffn_cache_stride_bytes", "read_align"))')"
    check "$policy $layout: replay" logged "$FLASHBED" replay --trace "$T" --policy "$policy" --layout "$layout" \
        --dram-budget "${C}B" --row-stride "$S" --read-align "$A" --use actual --out "$out/replay" --quiet
    check "$policy $layout: per-token reads, bytes and rows inserted equal replay's" counts_equal "$out"
done

# The masked dense FFN on the stored blocks: every neuron chosen is dense.
head -c 6000 "$FLASHBED_SOURCE/README.md" > "$WORK/text.txt"
ppl() { "$FLASHBED" perplexity --model "$M" --text "$WORK/text.txt" --tokens 200 --threads 1 "$@" 2> /dev/null | head -1; }
dense=$(ppl)
check "perplexity runs ($dense)" test -n "$dense"
check "perplexity --active oracle --threshold 0 is dense's" test "$(ppl --active oracle --threshold 0)" = "$dense"
check "perplexity --active gate --threshold 0 is dense's" test "$(ppl --active gate --threshold 0)" = "$dense"
"$FLASHBED" generate --model "$M" --prompt-ids "$WORK/p1.ids" -n 6 --temperature 0 --threads 1 --active oracle \
    --threshold 0 --json "$WORK/gen-oracle.json" > /dev/null 2>&1
"$FLASHBED" generate --model "$M" --prompt-ids "$WORK/p1.ids" -n 6 --temperature 0 --threads 1 \
    --json "$WORK/gen-dense.json" > /dev/null 2>&1
check "generate --active oracle --threshold 0 is dense's" test "$(gen_ids "$WORK/gen-oracle.json")" = "$(gen_ids "$WORK/gen-dense.json")"

# The sparsity and predictor tools, and run with what they write.
check "sparsify calibrate" logged "$FLASHBED" sparsify calibrate --model "$M" --text "$WORK/text.txt" --sparsity 0.5 \
    --tokens 256 --threads 1
check "predictor train" logged "$FLASHBED" predictor train --model "$M" --text "$WORK/text.txt" --tokens 256 --rank 16 \
    --epochs 2 --act-threshold 0.05 --threads 1
check "predictor eval" logged "$FLASHBED" predictor eval --model "$M" --text "$WORK/text.txt" --tokens 128 --threads 1 \
    --out "$WORK/eval"
check "model transpose" logged "$FLASHBED" model transpose "$M"
for src in gate-cal predictor teal; do
    check "run --active $src" logged "$FLASHBED" run --model "$M" --mode all --active $src --prompt-ids "$WORK/p1.ids" \
        -n 6 --ignore-eos --threads 1 --io-threads 2 --quiet --out "$WORK/src-$src"
done
finish
