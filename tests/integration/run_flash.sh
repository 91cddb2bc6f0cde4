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
check "the window reads less than the predictor" test "$(json_get "$WORK/window/run.json" "d['summary']['bytes_read'] < $(json_get "$WORK/predictor/run.json" "d['summary']['bytes_read']")")" = True
check "page cache bypassed recorded" test "$(json_get "$R" "d['provenance']['page_cache_bypassed']")" = True
check "predict --compare reads run.json" "$FLASHBED" predict --model opt-tiny --compare "$R" --out "$WORK/cmp"

# A trace drives the reads: exactly what the offline replay counts.
T="$WORK/tiny.trace"
check "synth trace" "$FLASHBED" trace synth --shape opt-tiny --tokens 40 --seed 9 --out "$T"
check "trace-driven all" "$FLASHBED" run --model "$M" --mode all --window 3 --active "trace:$T" --prompt "$P" -n 20 --ignore-eos --threads 1 --out "$WORK/traced"
C=$(json_get "$WORK/traced/run.json" "int(d['summary']['ffn_cache_bytes'])")
C="${C}B" # bytes, said so
[ "$C" = 0B ] && C=none # the run had no budget: replay's none, not a budget of 0 bytes
check "replay the same" "$FLASHBED" replay --trace "$T" --policy window:3 --layout coalesce:0 --dram-budget "$C" --out "$WORK/replay" --quiet
n_tok=$(json_get "$WORK/traced/run.json" "len(d['tokens'])")
check "reads per token equal the replay's" test "$(json_get "$WORK/traced/run.json" "[int(t['reads']) for t in d['tokens']]")" = "$(json_get "$WORK/replay/replay.json" "[int(x) for x in d['results'][0]['per_token']['reads'][:$n_tok]]")"
check "rows inserted equal the replay's" test "$(json_get "$WORK/traced/run.json" "[int(t['rows_inserted']) for t in d['tokens']]")" = "$(json_get "$WORK/replay/replay.json" "[int(x) for x in d['results'][0]['per_token']['rows_inserted'][:$n_tok]]")"
# Read-ahead (on by default with a trace): every layer's reads go ahead
# here, what the token waited for is apart from the reads' time; off, the
# same tokens and reads layer by layer, and the files keep their old keys.
check "traced: read ahead" test "$(json_get "$WORK/traced/run.json" "(d['provenance']['policy']['read_ahead'], all(t['layers_ahead'] == 2 and t['read_ms'] >= 0 for t in d['tokens']))")" = "(True, True)"
check "run.md says what overlapped" grep -q "^Read-ahead: 2.0 of 2 layers" "$WORK/traced/run.md"
check "tokens.csv has read_ms" grep -q ",read_ms,layers_ahead$" "$WORK/traced/tokens.csv"
check "--read-ahead off" "$FLASHBED" run --model "$M" --mode all --window 3 --active "trace:$T" --prompt "$P" -n 20 --ignore-eos --threads 1 --read-ahead off --out "$WORK/traced-off"
for key in id reads bytes_read rows_inserted rows_deleted; do
    check "read-ahead off: the same $key" test "$(json_get "$WORK/traced-off/run.json" "[t['$key'] for t in d['tokens']]")" = "$(json_get "$WORK/traced/run.json" "[t['$key'] for t in d['tokens']]")"
done
check "read-ahead off: no read-ahead keys" test "$(json_get "$WORK/traced-off/run.json" "(d['provenance']['policy']['read_ahead'], 'layers_ahead' in d['summary'], 'read_ms' in d['summary'])")" = "(False, False, False)"
check "the oracle does not read ahead" test "$(json_get "$WORK/all/run.json" "d['provenance']['policy']['read_ahead']")" = False
# --io-engine auto: three readers measured on the model's ffn.bin, the fastest used.
check "--io-engine auto" "$FLASHBED" run --model "$M" --mode all --window 3 --active "trace:$T" --io-engine auto --prompt "$P" -n 8 --ignore-eos --threads 1 --out "$WORK/auto"
check "auto: the fastest candidate chosen and used" test "$(json_get "$WORK/auto/run.json" "(lambda p, c: (len(c), sum(x['chosen'] for x in c), max(c, key=lambda x: x['bytes_per_second'])['io_engine'] == p['io_engine'], all(x['bytes_per_second'] > 0 for x in c)))(d['provenance']['policy'], d['provenance']['policy']['io_engine_choice']['candidates'])")" = "(3, 1, True, True)"
check "auto: run.md names the reader" grep -q "^- reads: .*the fastest on batches like this run's" "$WORK/auto/run.md"

# Every policy x two layouts, trace-driven under a budget: the run reads,
# per token, exactly what replay counts at the run's ffn_cache_bytes. The
# shape's vectors are 4096 bytes, so direct I/O reads them exactly.
cat > "$WORK/aligned.json" <<'JSON'
{"name": "opt-aligned", "arch": "opt", "d_model": 1024, "d_ff": 192, "n_layers": 2, "n_heads": 8, "n_kv_heads": 8,
 "vocab_size": 512, "max_positions": 64, "ffn_kind": "relu", "ffn_activation": "relu", "norm": "layernorm",
 "norm_eps": 1e-05, "position": "learned", "position_offset": 2, "rope_fraction": 0.0, "rope_theta": 0,
 "biases": true, "tied_embeddings": true, "parallel_block": false, "source": "flashbed test shape"}
JSON
check "aligned model" "$FLASHBED" model make --arch opt --shape "$WORK/aligned.json" --dtype f32 --seed 2 --out "$WORK/al-hf"
check "convert it" "$FLASHBED" convert "$WORK/al-hf" --out "$WORK/al"
TA="$WORK/al.trace"
check "its trace" "$FLASHBED" trace synth --shape "$WORK/aligned.json" --tokens 48 --dtype f32 --seed 4 --out "$TA"
for policy in naive hybrid predictor window:4 lru lfu hot belady; do
    for layout in split bundled; do
        out="$WORK/pol-${policy/:/}-$layout"
        budget=(--dram-budget 96%)
        [ $policy = naive ] && budget=() # its 64 MB dram.bin scratch passes any budget of this tiny model
        check "$policy $layout runs" "$FLASHBED" run --model "$WORK/al" --policy $policy --layout $layout --active "trace:$TA" --use actual \
            "${budget[@]}" --prompt "$P" -n 12 --ignore-eos --threads 1 --io-threads 2 --quiet --out "$out"
        C=$(json_get "$out/run.json" "int(d['summary']['ffn_cache_bytes'])")
        C="${C}B" # bytes, said so
        [ "$C" = 0B ] && C=none # no cache the budget sized (naive, hybrid's half): none, not 0 bytes
        check "$policy $layout: replay" "$FLASHBED" replay --trace "$TA" --policy $policy --layout $layout --dram-budget "$C" --use actual --out "$out/replay" --quiet
        for key in reads:reads bytes_read:bytes rows_inserted:rows_inserted; do
            check "$policy $layout: per-token ${key%%:*} equal the replay's" test \
                "$(json_get "$out/run.json" "[int(t['${key%%:*}']) for t in d['tokens']]")" = \
                "$(json_get "$out/replay/replay.json" "[int(x) for x in d['results'][0]['per_token']['${key#*:}'][:len(d['results'][0]['per_token']['reads'])]][:$(json_get "$out/run.json" "len(d['tokens'])")]")"
        done
        check "$policy $layout: summary names the policy" test "$(json_get "$out/run.json" "d['summary']['policy'] + ' ' + d['summary']['layout']")" = "$policy $layout"
    done
done
# A shape whose rows are padded: opt-tiny in f32 has 512-byte bundles at
# ffn.bin's 4096-byte stride, which the run's cache holds them at. replay
# at the run's row_stride and its cache's bytes at that stride reads, per
# token, what the run read, bytes included; at the packed row the same
# bytes would hold eight times the rows. A split read widens each 256-byte
# vector to direct I/O's blocks (summary.read_align), as replay
# --read-align counts it.
TP="$WORK/padded.trace"
check "padded: its trace" "$FLASHBED" trace synth --shape opt-tiny --tokens 40 --dtype f32 --seed 3 --out "$TP"
for policy in lru window:4; do
    for layout in bundled coalesce:2 split; do
        out="$WORK/pad-${policy/:/}-${layout/:/}"
        check "padded $policy $layout runs" "$FLASHBED" run --model "$M" --policy $policy --layout $layout \
            --active "trace:$TP" --use actual --dram-budget 60% --prompt "$P" -n 20 --ignore-eos --threads 1 \
            --io-threads 2 --quiet --out "$out"
        S=$(json_get "$out/run.json" "int(d['summary']['row_stride'])")
        B=$(json_get "$out/run.json" "int(d['summary']['ffn_cache_stride_bytes'])")
        check "padded $policy $layout: rows at a 4096-byte stride" test "$S" = 4096
        A=$(json_get "$out/run.json" "int(d['summary']['read_align'])")
        check "padded $policy $layout: read at an alignment" test "$A" -gt 0
        check "padded $policy $layout: replay at that stride" "$FLASHBED" replay --trace "$TP" --policy $policy \
            --layout $layout --dram-budget "${B}B" --row-stride "$S" --read-align "$A" --use actual --out "$out/replay" --quiet
        check "padded $policy $layout: replay's row_bytes is the stride" \
            test "$(json_get "$out/replay/replay.json" "d['results'][0]['row_bytes']")" = 4096
        for key in reads:reads bytes_read:bytes rows_inserted:rows_inserted; do
            check "padded $policy $layout: per-token ${key%%:*} equal the replay's" test \
                "$(json_get "$out/run.json" "[int(t['${key%%:*}']) for t in d['tokens']]")" = \
                "$(json_get "$out/replay/replay.json" "[int(x) for x in d['results'][0]['per_token']['${key#*:}'][:$(json_get "$out/run.json" "len(d['tokens'])")]]")"
        done
    done
done
out="$WORK/pad-lru-bundled"
check "padded: the packed replay at those bytes holds more rows than the run" "$FLASHBED" replay --trace "$TP" \
    --policy lru --layout bundled --dram-budget "${B}B" --use actual --out "$out/replay-packed" --quiet
check "padded: ... and reads less" test "$(json_get "$out/replay-packed/replay.json" "sum(d['results'][0]['per_token']['reads'])")" -lt \
    "$(json_get "$out/replay/replay.json" "sum(d['results'][0]['per_token']['reads'])")"
expect_error "replay --row-stride below the packed row" "replay --row-stride '100': 100 bytes: a row of this trace's shape is 512 bytes" \
    replay --trace "$TP" --policy lru --row-stride 100 --out "$WORK/bad-stride"
expect_error "replay --row-stride not a size" "replay --row-stride 'wide'" replay --trace "$TP" --row-stride wide --out "$WORK/bad-stride"
check "replay --row-stride refusals leave no folder" test ! -e "$WORK/bad-stride"

# window:auto: the largest window the budget holds. With a trace it never
# shrinks, one token more would, and replay at its cache bytes agrees.
for budget in 60% 80%; do
    out="$WORK/auto-$budget"
    check "window:auto at $budget" "$FLASHBED" run --model "$M" --policy window:auto --active "trace:$T" --dram-budget $budget \
        --prompt "$P" -n 20 --ignore-eos --threads 1 --quiet --out "$out"
    K=$(json_get "$out/run.json" "d['summary']['window_k']")
    check "window:auto at $budget: summary names window:$K" test "$(json_get "$out/run.json" "d['summary']['policy']")" = "window:$K"
    check "window:auto at $budget: no shrink" test "$(json_get "$out/run.json" "sum(t['window_shrinks'] for t in d['tokens'])")" = 0
    check "window:$((K + 1)) at $budget" "$FLASHBED" run --model "$M" --policy window:$((K + 1)) --active "trace:$T" --dram-budget $budget \
        --prompt "$P" -n 20 --ignore-eos --threads 1 --quiet --out "$out-more"
    check "window:$((K + 1)) at $budget shrinks" test "$(json_get "$out-more/run.json" "sum(t['window_shrinks'] for t in d['tokens']) > 0")" = True
    C=$(json_get "$out/run.json" "int(d['summary']['ffn_cache_bytes'])")
    check "window:auto at $budget: replay" "$FLASHBED" replay --trace "$T" --policy window:$K --layout bundled --dram-budget "${C}B" --out "$out/replay" --quiet
    check "window:auto at $budget: reads equal the replay's" test "$(json_get "$out/run.json" "[int(t['reads']) for t in d['tokens']]")" = \
        "$(json_get "$out/replay/replay.json" "[int(x) for x in d['results'][0]['per_token']['reads'][:$(json_get "$out/run.json" "len(d['tokens'])")]]")"
done
# predict --policy window:auto chooses by the same rule: given a budget
# whose FFN cache has the run's rows per layer (the weights outside the FFN
# from its own DRAM account, plus those rows of 2 x 64 f32 weights in each
# of 2 layers, and half a row), over the run's tokens, it chooses the run's K.
check "predict at 100%" "$FLASHBED" predict --model opt-tiny --dtype f32 --hw m1max-cpu --policy window:auto --layout bundled \
    --trace "$T" --predictor-rank none --dram-budget 100% --out "$WORK/auto-predict-all"
nonffn=$(json_get "$WORK/auto-predict-all/predict.json" "(d['prediction']['dram']['embeddings']['gb'] + d['prediction']['dram']['attention']['gb']) * 1e9")
for budget in 60% 80%; do
    R="$WORK/auto-$budget/run.json"
    rows=$(json_get "$R" "d['summary']['capacity_rows_per_layer']")
    bytes=$(python3 -c "print(round($nonffn + ($rows + 0.5) * 2 * 512))")
    check "predict window:auto for the run at $budget" "$FLASHBED" predict --model opt-tiny --dtype f32 --hw m1max-cpu \
        --policy window:auto --layout bundled --trace "$T" --predictor-rank none --dram-budget "${bytes}B" \
        --tokens "$(json_get "$R" "d['summary']['prompt_tokens'] + d['summary']['generated_tokens'] - 1")" --out "$WORK/auto-predict-$budget"
    P_JSON="$WORK/auto-predict-$budget/predict.json"
    check "predict at $budget: the run's rows" test "$(json_get "$P_JSON" "d['predictions'][0]['window_auto']['capacity_rows']")" = "$rows"
    check "predict at $budget: the run's K" test "$(json_get "$P_JSON" "d['predictions'][0]['window_auto']['window_k']")" = \
        "$(json_get "$R" "d['summary']['window_k']")"
    check "predict at $budget: prices window:K" test "$(json_get "$P_JSON" "d['predictions'][0]['policy']")" = \
        "$(json_get "$R" "d['summary']['policy']")"
    check "predict.md says why" grep -q "window:auto chose K = " "$WORK/auto-predict-$budget/predict.md"
done
expect_error "predict --tokens without window:auto" "has no window:auto" predict --model opt-tiny --policy window:5 --tokens 8 --out "$WORK/bad-tokens"
check "a larger budget, a longer window" test "$(json_get "$WORK/auto-60%/run.json" "d['summary']['window_k']")" -lt "$(json_get "$WORK/auto-80%/run.json" "d['summary']['window_k']")"
check "--window auto with the oracle" "$FLASHBED" run --model "$M" --mode all --window auto --dram-budget 60% --prompt "$P" -n 8 --ignore-eos --threads 1 --quiet --out "$WORK/auto-oracle"
check "the oracle's window comes from s_agg" test "$(json_get "$WORK/auto-oracle/run.json" "'s_agg' in d['provenance']['policy']['window_chosen_from'] and d['summary']['window_k'] >= 1")" = True
check "run.md names the chosen window" grep -q "window:auto chose K" "$WORK/auto-oracle/run.md"
check "run.md reports the density" grep -q "density: " "$WORK/auto-oracle/run.md"
# predict --model takes a model folder as every other --model does (issue 47:
# it took a shape name only, "cannot read" the folder): the same prediction
# as the shape it was made from; an unknown name lists the shapes.
for m in "$M" opt-tiny; do
    check "predict --model $m" "$FLASHBED" predict --model "$m" --policy naive --dram-budget 50% --dtype f32 \
        --predictor-rank none --out "$WORK/pf-$(basename "$m")"
done
check "a model folder predicts as its shape" test "$(json_get "$WORK/pf-opt/predict.json" "d['predictions'][0]['prediction']['serial_total_ms']")" = \
    "$(json_get "$WORK/pf-opt-tiny/predict.json" "d['predictions'][0]['prediction']['serial_total_ms']")"
expect_error "predict --model an unknown name" "neither a model folder nor a shape flashbed knows (.*opt-tiny" \
    predict --model opt-99b --out "$WORK/pf-bad"
expect_error "predict --model a folder without model.json" "a folder without model.json" predict --model "$WORK" \
    --out "$WORK/pf-bad"
# A run of no more tokens than --cold (issue 47: "Steady state (0 tokens
# after 5 cold ones)", then a throughput of 0.00 tokens/s): says there is none.
check "a run shorter than --cold" "$FLASHBED" run --model "$M" --mode all --prompt "the cat" -n 1 --cold 5 --threads 1 \
    --quiet --out "$WORK/short"
check "short: no steady state, and what to change" grep -q "^No steady state: all [0-9]* tokens were cold ones (--cold); run more tokens (-n) or lower --cold" "$WORK/short/run.md"
check "short: no throughput of 0" bash -c "! grep -q '0.00 tokens/s' '$WORK/short/run.md'"
check "short: the cold tokens' row" grep -q "^| cold tokens |" "$WORK/short/run.md"
# A device run's run.md names the device and says when it is emulated (issue 47: only run.json did).
check "run --backend sim" "$FLASHBED" run --model "$M" --mode all --prompt "the cat" -n 4 --threads 1 --backend sim \
    --quiet --out "$WORK/on-sim"
check "run.md names the device, emulated" grep -q "^- backend: sim on sim .*(emulated: a CPU device, its times are not a GPU's)" "$WORK/on-sim/run.md"
check "a cpu run has no such line" bash -c "! grep -q '^- backend:' '$WORK/short/run.md'"
# hot under the oracle: pins what a warm-up (the prompt) needed most; same tokens as dense.
check "hot with the oracle" "$FLASHBED" run --model "$M" --policy hot --dram-budget 70% --prompt "$P" -n 24 --ignore-eos --threads 1 --quiet --out "$WORK/hot-oracle"
check "hot with the oracle: same tokens as dense" test "$(ids "$WORK/hot-oracle")" = "$(ids "$WORK/dense")"
check "hot with the oracle: the profile is recorded" test "$(json_get "$WORK/hot-oracle/run.json" "'warm-up' in d['provenance']['policy']['profile']")" = True
check "hot with the oracle: the pinned rows are the first token's reads" test \
    "$(json_get "$WORK/hot-oracle/run.json" "d['tokens'][0]['rows_inserted'] >= d['summary']['capacity_rows_per_layer'] > 0")" = True
# the warm-up's profile stays in memory: nothing in TMPDIR
mkdir -p "$WORK/tmpdir"
check "hot's warm-up in memory" env TMPDIR="$WORK/tmpdir" "$FLASHBED" run --model "$M" --policy hot --dram-budget 70% \
    --prompt "$P" -n 4 --ignore-eos --threads 1 --quiet --out "$WORK/hot-mem"
check "hot's warm-up writes no scratch file" test -z "$(ls -A "$WORK/tmpdir")"
echo "the cat sat on the mat" > "$WORK/warm.txt"
check "hot with a warm-up file" "$FLASHBED" run --model "$M" --policy hot --dram-budget 70% --warmup-file "$WORK/warm.txt" --prompt "$P" -n 4 --ignore-eos --threads 1 --quiet --out "$WORK/hot-file"
expect_error "hot with a missing warm-up file" "none.txt" run --model "$M" --policy hot --dram-budget 70% --warmup-file "$WORK/none.txt" --prompt x --out "$WORK/bad23"
expect_error "window:auto without a budget" "needs one" run --model "$M" --policy window:auto --prompt x --out "$WORK/bad21"
expect_error "window past the engine's" "1 to 4096" run --model "$M" --policy window:5000 --prompt x --out "$WORK/bad22"

expect_error "mode and policy disagree" "means --policy" run --model "$M" --mode window --policy lru --prompt x --out "$WORK/bad13"
expect_error "belady without a trace" "needs the sets to come" run --model "$M" --policy belady --dram-budget 99% --prompt x --out "$WORK/bad14"
expect_error "lru without a budget" "needs a DRAM budget" run --model "$M" --policy lru --prompt x --out "$WORK/bad15"
expect_error "friends in the engine" "cannot run it" run --model "$M" --policy window:2 --layout friends --active "trace:$T" --prompt x --out "$WORK/bad16"

# Recording: the oracle's active sets, replayable.
check "record" "$FLASHBED" run --model "$M" --mode all --prompt "$P" -n 10 --ignore-eos --threads 1 --record "$WORK/rec.trace" --out "$WORK/rec"
check "recorded trace reads back" "$FLASHBED" trace info "$WORK/rec.trace"
check "recorded trace replays" "$FLASHBED" replay --trace "$WORK/rec.trace" --policy window:5 --layout bundled --use actual --out "$WORK/rec-replay" --quiet
check "recorded sets are what the run needed" test "$(json_get "$WORK/rec-replay/replay.json" "d['results'][0]['needed_total']")" = "$(json_get "$WORK/rec/run.json" "int(sum(t['needed'] for t in d['tokens']))")"
# A trace is data: recording over one is refused without --force (issue 47: it was replaced silently).
sum_before=$(sha256sum <"$WORK/rec.trace")
expect_error "record over an existing trace" "rec.trace already exists; --force replaces it" run --model "$M" \
    --mode all --prompt "$P" -n 2 --threads 1 --record "$WORK/rec.trace" --out "$WORK/rec-again"
check "the trace is untouched" test "$(sha256sum <"$WORK/rec.trace")" = "$sum_before"
check "and no result folder" test ! -e "$WORK/rec-again"
check "--force replaces it" "$FLASHBED" run --model "$M" --mode all --prompt "$P" -n 2 --threads 1 --quiet \
    --record "$WORK/rec.trace" --force --out "$WORK/rec-again"
check "with the new run's tokens" test "$("$FLASHBED" trace info "$WORK/rec.trace" | grep -c " prompt, 1 generated)")" = 1

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
    check "threshold 0: run.md says every neuron is active" grep -q "every neuron is active" "$WORK/s-all/run.md"
    check "stories at threshold 0.05" "$FLASHBED" run --model "$WORK/s260" --mode all --threshold 0.05 --prompt "Once upon a time" -n 20 --threads 1 --quiet --out "$WORK/s-sparse"
    check "a threshold makes it sparse, and run.md says how sparse" test "$(json_get "$WORK/s-sparse/run.json" "d['summary']['density'] < 0.9")" = True
    check "run.md: density from the threshold" grep -q "from --threshold 0.05" "$WORK/s-sparse/run.md"
else
    echo "skipping the stories260K checks: $S not found (set FLASHBED_DATA)"
fi

# Bad inputs.
expect_error "no model" "needs --model" run --prompt x --out "$WORK/bad1"
EXPECT_RC=2 expect_error "unknown mode" "run --mode: unknown mode 'turbo'" run --model "$M" --mode turbo --prompt x --out "$WORK/bad2"
expect_error "trace of another shape" "recorded for" run --model "$WORK/s260" --mode all --active "trace:$T" --prompt x --out "$WORK/bad3"
expect_error "bad --active" "gate, gate-cal, teal or trace:FILE" run --model "$M" --active magic --prompt x --out "$WORK/bad4"
check "a budget below one token's neurons still runs" "$FLASHBED" run --model "$M" --mode all --active "trace:$T" --dram-budget 650k --prompt "$P" -n 8 --ignore-eos --threads 1 --quiet --out "$WORK/overflow"
check "the rows that do not fit are overflow" test "$(json_get "$WORK/overflow/run.json" "sum(t['overflow_rows'] for t in d['tokens']) > 0")" = True
expect_error "budget below the staging area" "staging area\\|hold no row" run --model "$M" --mode all --active "trace:$T" --dram-budget 535k --prompt x --out "$WORK/bad12"
expect_error "budget below the resident weights" "already take" run --model "$M" --mode all --dram-budget 10k --prompt x --out "$WORK/bad5"
expect_error "dense over budget" "the model needs" run --model "$M" --mode dense --dram-budget 50% --prompt x --out "$WORK/bad6"
expect_error "record in dense mode" "dense mode does not look" run --model "$M" --mode dense --record "$WORK/bad.trace" --prompt x --out "$WORK/bad7"
expect_error "missing trace" "cannot read trace" run --model "$M" --active "trace:$WORK/none.trace" --prompt x --out "$WORK/bad8"
# the ranges and values the option table declares: refused by the parser, exit 2
EXPECT_RC=2 expect_error "window 0" "run --window: 0 is out of range (1 to 4096)" run --model "$M" --window 0 --prompt x --out "$WORK/bad9"
EXPECT_RC=2 expect_error "unknown io engine" "run --io-engine: unknown io-engine 'mmap'" run --model "$M" --io-engine mmap --prompt x --out "$WORK/bad10"
EXPECT_RC=2 expect_error "io-threads 0" "run --io-threads: 0 is out of range" run --model "$M" --io-threads 0 --prompt x --out "$WORK/bad17"
EXPECT_RC=2 expect_error "iodepth past the limit" "run --iodepth: 4097 is out of range" run --model "$M" --iodepth 4097 --prompt x --out "$WORK/bad18"
EXPECT_RC=2 expect_error "-n 0" "run --n: 0 is out of range" run --model "$M" -n 0 --prompt x --out "$WORK/bad19"
EXPECT_RC=2 expect_error "negative temperature" "run --temperature: -1 is out of range" run --model "$M" --temperature -1 --prompt x --out "$WORK/bad20"
cp -r "$M" "$WORK/cut"
truncate -s 4096 "$WORK/cut/ffn.bin"
expect_error "truncated ffn.bin" "ffn.bin: is 4096 bytes" run --model "$WORK/cut" --prompt x --out "$WORK/bad11"
for d in bad1 bad2 bad3 bad4 bad5 bad6 bad7 bad8 bad9 bad10 bad11 bad12 bad13 bad14 bad15 bad16 bad17 bad18 bad19 bad20 bad21 bad22 bad23; do
    check "no output for $d" test ! -e "$WORK/$d"
done
check "no trace for a refused run" test ! -e "$WORK/bad.trace"
finish
