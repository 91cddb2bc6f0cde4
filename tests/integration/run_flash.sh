#!/usr/bin/env bash
# flashbed run: every flash mode with the oracle generates what dense does;
# a trace drives exactly the reads the offline replay counts; budgets are
# honoured or refused; recorded traces replay; bad inputs are refused with
# nothing left behind.
source "$(dirname "$0")/lib.sh"

check "opt-tiny model" "$FLASHBED" model make --arch opt --shape opt-tiny --dtype f32 --seed 5 --relu-density 0.15 --out "$WORK/opt-hf"
check "convert it" "$FLASHBED" convert "$WORK/opt-hf" --out "$WORK/opt"
M="$WORK/opt"
P="the cat sat on the mat and the dog"

# Dense reference, then every flash mode: the same tokens.
check "dense" "$FLASHBED" run --model "$M" --mode dense --prompt "$P" -n 24 --ignore-eos --threads 1 --out "$WORK/dense"
ids() { json_get "$1/run.json" "[t['id'] for t in d['tokens']]"; }
for mode in naive hybrid predictor window all; do
    check "$mode runs" "$FLASHBED" run --model "$M" --mode $mode --prompt "$P" -n 24 --ignore-eos --threads 1 --io-threads 4 --out "$WORK/$mode"
    check "$mode: same tokens as dense" test "$(ids "$WORK/$mode")" = "$(ids "$WORK/dense")"
    check "$mode: run.md" test -s "$WORK/$mode/run.md"
done
check "all + coalesce: same tokens" "$FLASHBED" run --model "$M" --mode all --coalesce 3 --prompt "$P" -n 24 --ignore-eos --threads 1 --out "$WORK/coalesce"
check "coalesce: same tokens" test "$(ids "$WORK/coalesce")" = "$(ids "$WORK/dense")"
check "coalesced reads are fewer" test "$(json_get "$WORK/coalesce/run.json" "d['summary']['reads'] < $(json_get "$WORK/all/run.json" "d['summary']['reads']")")" = True
check "io_uring: same tokens" "$FLASHBED" run --model "$M" --mode all --io-engine io_uring --iodepth 8 --io-threads 2 --prompt "$P" -n 24 --ignore-eos --threads 1 --out "$WORK/uring"
check "io_uring tokens" test "$(ids "$WORK/uring")" = "$(ids "$WORK/dense")"

# Per-token accounting.
R="$WORK/all/run.json"
check "run.json keys" test "$(json_get "$R" "all(k in d['tokens'][3] for k in ['io_ms','mem_ms','compute_ms','bytes_read','reads','rows_inserted','rows_deleted','cache_rows'])")" = True
check "summary keys" test "$(json_get "$R" "all(k in d['summary'] for k in ['io_ms','mem_ms','compute_ms','peak_rss_bytes','tokens_per_second'])")" = True
check "naive reads the whole FFN every token" test "$(json_get "$WORK/naive/run.json" "all(t['bytes_read'] >= 2*256*4096 for t in d['tokens'])")" = True
check "bundled: adjacent neurons in one read" test "$(json_get "$R" "all(0 < t['reads'] <= t['rows_inserted'] or t['rows_inserted'] == 0 for t in d['tokens']) and sum(t['reads'] for t in d['tokens']) < sum(t['rows_inserted'] for t in d['tokens'])")" = True
check "split: two reads per inserted row" test "$(json_get "$WORK/window/run.json" "all(t['reads'] == 2*t['rows_inserted'] for t in d['tokens'])")" = True
check "predictor keeps nothing" test "$(json_get "$WORK/predictor/run.json" "all(t['rows_inserted'] == t['needed'] for t in d['tokens'])")" = True
check "the window reads less than the predictor" test "$(json_get "$R" "d['summary']['bytes_read']") " != "" -a "$(json_get "$R" "d['summary']['bytes_read'] < $(json_get "$WORK/predictor/run.json" "d['summary']['bytes_read']")")" = True
check "page cache bypassed recorded" test "$(json_get "$R" "d['provenance']['page_cache_bypassed']")" = True
check "predict --compare reads run.json" "$FLASHBED" predict --model opt-tiny --compare "$R" --out "$WORK/cmp"

# A trace drives the reads: exactly what the offline replay counts.
T="$WORK/tiny.trace"
check "synth trace" "$FLASHBED" trace synth --shape opt-tiny --tokens 40 --seed 9 --out "$T"
check "trace-driven all" "$FLASHBED" run --model "$M" --mode all --window 3 --active "trace:$T" --prompt "$P" -n 20 --ignore-eos --threads 1 --out "$WORK/traced"
check "replay the same" "$FLASHBED" replay --trace "$T" --policy window:3 --layout coalesce:0 --out "$WORK/replay" --quiet
n_tok=$(json_get "$WORK/traced/run.json" "len(d['tokens'])")
check "reads per token equal the replay's" test "$(json_get "$WORK/traced/run.json" "[int(t['reads']) for t in d['tokens']]")" = "$(json_get "$WORK/replay/replay.json" "[int(x) for x in d['results'][0]['per_token']['reads'][:$n_tok]]")"
check "rows inserted equal the replay's" test "$(json_get "$WORK/traced/run.json" "[int(t['rows_inserted']) for t in d['tokens']]")" = "$(json_get "$WORK/replay/replay.json" "[int(x) for x in d['results'][0]['per_token']['rows_inserted'][:$n_tok]]")"

# Budgets: a cache that cannot hold the window shrinks it; too little is refused.
check "small budget shrinks the window" "$FLASHBED" run --model "$M" --mode all --active "trace:$T" --dram-budget 800k --prompt "$P" -n 8 --ignore-eos --threads 1 --out "$WORK/small"
check "the window shrank" test "$(json_get "$WORK/small/run.json" "sum(t['window_shrinks'] for t in d['tokens']) > 0")" = True
check "peak RSS recorded" test "$(json_get "$WORK/small/run.json" "d['summary']['peak_rss_bytes'] > 0")" = True

# Recording: the oracle's active sets, replayable.
check "record" "$FLASHBED" run --model "$M" --mode all --prompt "$P" -n 10 --ignore-eos --threads 1 --record "$WORK/rec.trace" --out "$WORK/rec"
check "recorded trace reads back" "$FLASHBED" trace info "$WORK/rec.trace"
check "recorded trace replays" "$FLASHBED" replay --trace "$WORK/rec.trace" --policy window:5 --layout bundled --use actual --out "$WORK/rec-replay" --quiet
check "recorded sets are what the run needed" test "$(json_get "$WORK/rec-replay/replay.json" "d['results'][0]['needed_total']")" = "$(json_get "$WORK/rec/run.json" "int(sum(t['needed'] for t in d['tokens']))")"

# stories260K (SwiGLU): with threshold 0 every mode equals dense.
DATA=${FLASHBED_DATA:-../shared/data}
S="$DATA/models/stories260K"
if [ -f "$S/stories260K.bin" ]; then
    check "convert stories260K" "$FLASHBED" convert "$S/stories260K.bin" --tokenizer "$S/tok512.bin" --out "$WORK/s260"
    check "stories dense" "$FLASHBED" run --model "$WORK/s260" --mode dense --prompt "Once upon a time" -n 40 --threads 1 --out "$WORK/s-dense"
    for mode in naive window all; do
        check "stories $mode" "$FLASHBED" run --model "$WORK/s260" --mode $mode --prompt "Once upon a time" -n 40 --threads 1 --io-threads 4 --out "$WORK/s-$mode"
        check "stories $mode: same tokens as dense" test "$(ids "$WORK/s-$mode")" = "$(ids "$WORK/s-dense")"
    done
else
    echo "skipping the stories260K checks: $S not found (set FLASHBED_DATA)"
fi

# Bad inputs.
expect_error "no model" "needs --model" run --prompt x --out "$WORK/bad1"
expect_error "unknown mode" "unknown 'turbo'" run --model "$M" --mode turbo --prompt x --out "$WORK/bad2"
expect_error "trace of another shape" "recorded for" run --model "$WORK/s260" --mode all --active "trace:$T" --prompt x --out "$WORK/bad3"
expect_error "bad --active" "oracle or trace:FILE" run --model "$M" --active magic --prompt x --out "$WORK/bad4"
expect_error "budget below one token's neurons" "one token's neurons alone" run --model "$M" --mode all --active "trace:$T" --dram-budget 650k --prompt x --out "$WORK/bad12"
expect_error "budget below the resident weights" "already take" run --model "$M" --mode all --dram-budget 10k --prompt x --out "$WORK/bad5"
expect_error "dense over budget" "the model needs" run --model "$M" --mode dense --dram-budget 50% --prompt x --out "$WORK/bad6"
expect_error "record in dense mode" "dense mode does not look" run --model "$M" --mode dense --record "$WORK/bad.trace" --prompt x --out "$WORK/bad7"
expect_error "missing trace" "cannot read trace" run --model "$M" --active "trace:$WORK/none.trace" --prompt x --out "$WORK/bad8"
expect_error "window 0" "window" run --model "$M" --window 0 --prompt x --out "$WORK/bad9"
expect_error "unknown io engine" "io-engine" run --model "$M" --io-engine mmap --prompt x --out "$WORK/bad10"
cp -r "$M" "$WORK/cut"
truncate -s 4096 "$WORK/cut/ffn.bin"
expect_error "truncated ffn.bin" "ffn.bin: is 4096 bytes" run --model "$WORK/cut" --prompt x --out "$WORK/bad11"
for d in bad1 bad2 bad3 bad4 bad5 bad6 bad7 bad8 bad9 bad10 bad11 bad12; do
    check "no output for $d" test ! -e "$WORK/$d"
done
check "no trace for a refused run" test ! -e "$WORK/bad.trace"
finish
