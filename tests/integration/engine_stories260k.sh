#!/usr/bin/env bash
# The dense engine on a real trained model: stories260K greedy output must
# equal the reference llama2.c implementation token for token
# (tests/data/stories260K_greedy_ids.txt), with 1 and 2 threads; perplexity
# and f16/bf16 conversions run and stay sane.
source "$(dirname "$0")/lib.sh"

need_stories260k
M="$WORK/s260"
check "convert" "$FLASHBED" convert "$SRC/stories260K.bin" --tokenizer "$SRC/tok512.bin" --out "$M"
check "model.json" test -f "$M/model.json"
check "ffn.bin is bundles of 4096 bytes" test "$(stat -c %s "$M/ffn.bin")" -eq $((5 * 172 * 4096))
check "model.json says so" test "$(json_get "$M/model.json" 'd["ffn"]["bundle_stride"]')" = 4096

expected=$(grep -v '^#' "$FLASHBED_SOURCE/tests/data/stories260K_greedy_ids.txt")
for threads in 1 2; do
    # with 2 threads every step runs on the thread team (FLASHBED_MIN_PARALLEL_WORK=0)
    env FLASHBED_MIN_PARALLEL_WORK=$([ $threads = 2 ] && echo 0) "$FLASHBED" generate --model "$M" --prompt "Once upon a time" --temperature 0 -n 252 \
        --threads $threads --json "$WORK/gen$threads.json" >"$WORK/out$threads.txt" 2>"$WORK/err$threads.txt"
    check "generate exits 0 ($threads threads)" test $? -eq 0
    got=$(json_get "$WORK/gen$threads.json" '" ".join(str(i) for i in d["prompt_token_ids"] + [t["id"] for t in d["tokens"]])')
    check "greedy ids equal llama2.c's ($threads threads)" test "$got" = "$expected"
done
check "stdout starts with the prompt and the known continuation" \
    grep -q "^Once upon a time, there was a little girl named Lily. She loved to play outside in the park." "$WORK/out1.txt"
check "statistics on stderr" grep -q "generation: .* tokens/s" "$WORK/err1.txt"
check "stdout carries only text" bash -c "! grep -q 'tokens/s' '$WORK/out1.txt'"
check "json has provenance and parameters" test "$(json_get "$WORK/gen1.json" 'd["provenance"]["parameters"]["temperature"]')" = 0
check "json has per-token timings" test "$(json_get "$WORK/gen1.json" 'len([t for t in d["tokens"] if t["ms"] >= 0])')" = 252

# --prompt-file with --prompt-tokens keeps the first N tokens after BOS
printf 'Once upon a time, there was a dog.' >"$WORK/prompt.txt"
"$FLASHBED" generate --model "$M" --prompt-file "$WORK/prompt.txt" --prompt-tokens 4 --temperature 0 -n 5 \
    --json "$WORK/pf.json" >"$WORK/pf.txt" 2>/dev/null
check "prompt truncated to 4 tokens + BOS" test "$(json_get "$WORK/pf.json" 'd["prompt_token_ids"]')" = "[1, 403, 407, 261, 378]"
check "the truncated prompt is what stdout repeats" grep -q "^Once upon a time, there" "$WORK/pf.txt"

# seeded sampling is reproducible, and top-p sampling runs
"$FLASHBED" generate --model "$M" --prompt "Once" --temperature 0.8 --top-p 0.9 --seed 7 -n 40 >"$WORK/s1.txt" 2>/dev/null
"$FLASHBED" generate --model "$M" --prompt "Once" --temperature 0.8 --top-p 0.9 --seed 7 -n 40 >"$WORK/s2.txt" 2>/dev/null
check "same seed, same text" cmp -s "$WORK/s1.txt" "$WORK/s2.txt"

out=$("$FLASHBED" perplexity --model "$M" --text "$FLASHBED_DATA/corpus/tinystories_sample.txt" --tokens 1500 --json "$WORK/ppl.json" 2>/dev/null)
check "perplexity printed" grep -q "^perplexity [0-9.]* over 1500 tokens" <<<"$out"
check "perplexity is that of a trained model (2..20)" \
    python3 -c "import json,sys; p=json.load(open(sys.argv[1]))['perplexity']; sys.exit(not 2 < p < 20)" "$WORK/ppl.json"

for dt in f16 bf16; do
    check "convert $dt" "$FLASHBED" convert "$SRC/stories260K.bin" --tokenizer "$SRC/tok512.bin" --out "$M-$dt" --dtype $dt
    check "$dt FFN file is half" test "$(stat -c %s "$M-$dt/dram.bin")" -lt "$(stat -c %s "$M/dram.bin")"
    "$FLASHBED" generate --model "$M-$dt" --prompt "Once upon a time" --temperature 0 -n 20 >"$WORK/$dt.txt" 2>/dev/null
    check "$dt greedy starts like f32" grep -q "^Once upon a time, there was a little girl" "$WORK/$dt.txt"
done
finish
