#!/usr/bin/env bash
# Issue 32's benchmark: the engine against the machine's own limits, the
# two sides of each ratio measured side by side in one run, rounds
# alternating, medians of ROUNDS (>= 5):
#
#   1. compute: run's compute per token (naive: every weight once a token,
#      just read from flash; all, layer by layer: the rows it holds and the
#      rest of the model) beside dense generate's per token on the same model, as
#      weight bytes computed per second: naive's compute / dense's should be
#      >= 0.85;
#   2. reads: the engine's read throughput (run --mode naive, its reads of
#      whole layers' rows) beside sweep's on a scratch file of the same disk
#      at the size of the requests the engine issues (run.json's bytes over
#      io_requests) and its reader threads: >= 0.90;
#   3. replay: neuron-events per second per policy on a calibrated trace
#      of REPLAY_SHAPE (opt-6.7b, 256 tokens, as the issue measures it;
#      naive, predictor, window:5, lru, belady x split, bundled, 25%
#      budget): >= 200 M;
#   4. pinning: naive's compute with the compute team unpinned (--no-pin)
#      beside pinned (the default), the same run otherwise;
#   5. sparsity paying for the flash: on SPARSE_SHAPE (llama-1.1b, f16),
#      run all (window 5) with a calibrated trace (~3% of neurons) and half
#      the model as the budget, its reads issued ahead (--read-ahead on,
#      the default) and layer by layer (off), each beside dense generate
#      with every weight in DRAM, as tokens/s ratios: >= 1.5 read ahead.
#
#   tools/bench-engine.sh [ROUNDS] [OUT]       e.g. tools/bench-engine.sh 5
#
# Makes results/bench-models/SHAPE (synthetic f16 weights) when missing.
# Environment: SHAPE (opt-1.3b), THREADS (2: compute), IO_THREADS (32:
# run's reader threads), GEN (8 tokens a run), BUDGET (50%: all's),
# SPARSE_SHAPE (llama-1.1b), REPLAY_SHAPE (opt-6.7b). A timing benchmark, not a test: run it on a
# quiet machine.
set -euo pipefail
cd "$(dirname "$0")/.."
. tools/bench-lib.sh
bench_settings engine "${1:-}" "${2:-}"
SPARSE_SHAPE=${SPARSE_SHAPE:-llama-1.1b}
MODEL=$(bench_model "$FB" "$SHAPE")
SPARSE_MODEL=$(bench_model "$FB" "$SPARSE_SHAPE")
mkdir -p "$OUT"
bench_prompt "$OUT/prompt.txt" 40
TRACE=$OUT/$SHAPE.trace
[ -f "$TRACE" ] || "$FB" trace synth --shape "$SHAPE" --tokens 64 --seed 1 --out "$TRACE" >/dev/null
REPLAY_SHAPE=${REPLAY_SHAPE:-opt-6.7b}
REPLAY_TRACE=$OUT/replay-$REPLAY_SHAPE.trace
[ -f "$REPLAY_TRACE" ] || "$FB" trace synth --shape "$REPLAY_SHAPE" --tokens 256 --seed 1 --out "$REPLAY_TRACE" >/dev/null
SPARSE_TRACE=$OUT/$SPARSE_SHAPE.trace
[ -f "$SPARSE_TRACE" ] || "$FB" trace synth --shape "$SPARSE_SHAPE" --tokens 64 --seed 1 --out "$SPARSE_TRACE" >/dev/null
FFN_BYTES=$(stat -c %s "$MODEL/ffn.bin")
SCRATCH_BYTES=$((FFN_BYTES < 2147483648 ? FFN_BYTES : 2147483648))
trap 'rm -f "$OUT/scratch.bin"' EXIT
RUN=(--model "$MODEL" --prompt-file "$OUT/prompt.txt" --prompt-tokens 4 -n "$GEN" --ignore-eos --threads "$THREADS"
     --io-threads "$IO_THREADS" --active "trace:$TRACE" --cold 2 --quiet)

for r in $(seq 1 "$ROUNDS"); do
    echo "round $r of $ROUNDS" >&2
    "$FB" generate --model "$MODEL" --prompt-file "$OUT/prompt.txt" --prompt-tokens 4 -n "$GEN" --temperature 0 \
        --threads "$THREADS" --json "$OUT/dense-$r.json" >/dev/null 2>"$OUT/dense-$r.log"
    "$FB" run "${RUN[@]}" --mode naive --out "$OUT/naive-$r" >"$OUT/naive-$r.log" 2>&1
    # layer by layer: its compute alone, not shared with reads issued ahead (item 5 measures those)
    "$FB" run "${RUN[@]}" --mode all --window 5 --dram-budget "$BUDGET" --read-ahead off --out "$OUT/all-$r" \
        >"$OUT/all-$r.log" 2>&1
    "$FB" --no-pin run "${RUN[@]}" --mode naive --out "$OUT/naive-nopin-$r" >"$OUT/naive-nopin-$r.log" 2>&1
    "$FB" generate --model "$SPARSE_MODEL" --prompt-file "$OUT/prompt.txt" --prompt-tokens 4 -n "$GEN" --temperature 0 \
        --threads "$THREADS" --json "$OUT/sparse-dense-$r.json" >/dev/null 2>"$OUT/sparse-dense-$r.log"
    for ahead in on off; do
        "$FB" run --model "$SPARSE_MODEL" --prompt-file "$OUT/prompt.txt" --prompt-tokens 4 -n "$GEN" --ignore-eos \
            --threads "$THREADS" --io-threads "$IO_THREADS" --active "trace:$SPARSE_TRACE" --cold 5 --quiet --mode all \
            --window 5 --dram-budget 50% --read-ahead $ahead --out "$OUT/sparse-$ahead-$r" >"$OUT/sparse-$ahead-$r.log" 2>&1
    done
    # the size of the reads the engine hands its I/O engine (long ones split), rounded to 4 KiB
    chunk=$(python3 -c 'import json,sys; s=json.load(open(sys.argv[1]))["summary"]
print(max(4096, round((s["bytes_read"] + s["dram_bytes_read"]) / max(s["io_requests"], 1) / 4096) * 4096))' \
        "$OUT/naive-$r/run.json")
    "$FB" sweep --file "$OUT/scratch.bin" --size "${SCRATCH_BYTES}B" --chunks "$chunk" --threads "$IO_THREADS" \
        --runtime 2 --ramp 0.3 --seed 1 --out "$OUT/sweep-$r" >"$OUT/sweep-$r.log" 2>&1
    "$FB" replay --trace "$REPLAY_TRACE" --policy naive,predictor,window:5,lru,belady --layout split,bundled \
        --dram-budget 25% --quiet --out "$OUT/replay-$r" >"$OUT/replay-$r.log" 2>&1
done

python3 - "$OUT" "$ROUNDS" "$MODEL" "$SPARSE_MODEL" "$REPLAY_SHAPE" <<'EOF'
import json, os, statistics as st, sys
out, rounds, model, sparse, replay_shape = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4], sys.argv[5]
load = lambda p: json.load(open(p))
dram_bytes = os.path.getsize(f"{model}/dram.bin")
stride = load(f"{model}/model.json")["ffn"]["bundle_stride"]
def sparse_row(r):
    """The sparse shape's round: dense and all (read ahead, and not) in ms per token."""
    dense_ms = 1e3 / load(f"{out}/sparse-dense-{r}.json")["summary"]["generation_tokens_per_second"]
    on, off = (load(f"{out}/sparse-{a}-{r}/run.json")["summary"] for a in ("on", "off"))
    return {"sparse_dense_ms": dense_ms, "sparse_on_ms": on["total_ms"], "sparse_off_ms": off["total_ms"],
            "sparse_on_over_dense": dense_ms / on["total_ms"], "sparse_off_over_dense": dense_ms / off["total_ms"],
            "sparse_read_ms": on["read_ms"], "sparse_exposed_ms": on["io_ms"], "sparse_compute_ms": on["compute_ms"]}

rows = []
for r in range(1, rounds + 1):
    dense = load(f"{out}/dense-{r}.json")["summary"]
    naive, full = load(f"{out}/naive-{r}/run.json")["summary"], load(f"{out}/all-{r}/run.json")["summary"]
    sweep = load(f"{out}/sweep-{r}/sweep.json")["points"][0]
    replay = load(f"{out}/replay-{r}/replay.json")
    dense_ms = 1e3 / dense["generation_tokens_per_second"]
    weights = dense.get("weight_bytes_per_token") or dram_bytes + os.path.getsize(f"{model}/ffn.bin")
    all_bytes = dram_bytes + full["cache_rows"] * stride # what all's compute reads: the model but its FFN, the rows held
    rows.append({
        "dense_ms": dense_ms, "naive_compute_ms": naive["compute_ms"], "all_compute_ms": full["compute_ms"],
        "naive_over_dense": dense_ms / naive["compute_ms"],
        "all_over_dense": (all_bytes / full["compute_ms"]) / (weights / dense_ms),
        "engine_read_bw": naive["read_throughput_bytes"], "sweep_bw": sweep["bw_bytes"],
        "read_over_sweep": naive["read_throughput_bytes"] / sweep["bw_bytes"],
        "chunk": sweep["chunk_bytes"],
        "events": {f'{x["policy"]} {x["layout"]}': x["events_per_second"] for x in replay["results"]},
        "naive_nopin_compute_ms": load(f"{out}/naive-nopin-{r}/run.json")["summary"]["compute_ms"],
        **sparse_row(r),
    })
med = lambda k: st.median(x[k] for x in rows)
summary = {k: med(k) for k in ("dense_ms", "naive_compute_ms", "all_compute_ms", "naive_over_dense", "all_over_dense",
                               "engine_read_bw", "sweep_bw", "read_over_sweep", "naive_nopin_compute_ms")}
summary.update({k: med(k) for k in rows[0] if k.startswith("sparse_")})
summary["events_per_second"] = {k: st.median(x["events"][k] for x in rows) for k in rows[0]["events"]}
summary["rounds"], summary["chunk_bytes"] = rounds, rows[0]["chunk"]
json.dump({"summary": summary, "rounds": rows}, open(f"{out}/bench.json", "w"), indent=1)
with open(f"{out}/bench.md", "w") as f:
    f.write(f"Medians of {rounds} alternating rounds ({model}).\n\n| ratio | measured | goal |\n|---|---:|---:|\n")
    f.write(f"| run naive's compute speed / dense generate's (same weights) | {summary['naive_over_dense']:.2f} "
            f"({summary['naive_compute_ms']:.1f} vs {summary['dense_ms']:.1f} ms) | >= 0.85 |\n")
    f.write(f"| run all's compute speed per byte touched / dense's | {summary['all_over_dense']:.2f} | >= 0.85 |\n")
    f.write(f"| engine read throughput / sweep's ({summary['chunk_bytes'] // 1024} KiB reads) | "
            f"{summary['read_over_sweep']:.2f} ({summary['engine_read_bw'] / 1e9:.2f} vs {summary['sweep_bw'] / 1e9:.2f} GB/s) | >= 0.90 |\n")
    f.write(f"| naive's compute pinned / unpinned (--no-pin), ms | {summary['naive_compute_ms']:.1f} / "
            f"{summary['naive_nopin_compute_ms']:.1f} | |\n")
    f.write(f"| {os.path.basename(sparse)} all (3% trace, 50% budget) read ahead, tokens/s / dense generate's | "
            f"{summary['sparse_on_over_dense']:.2f} ({summary['sparse_on_ms']:.1f} vs {summary['sparse_dense_ms']:.1f} ms; "
            f"reads {summary['sparse_read_ms']:.1f} ms of which {summary['sparse_exposed_ms']:.1f} exposed, compute "
            f"{summary['sparse_compute_ms']:.1f}) | >= 1.5 |\n")
    f.write(f"| the same layer by layer (--read-ahead off) / dense | {summary['sparse_off_over_dense']:.2f} "
            f"({summary['sparse_off_ms']:.1f} ms) | |\n")
    for k, v in summary["events_per_second"].items():
        f.write(f"| replay {k} ({replay_shape}, 256 tokens): M neuron-events/s | {v / 1e6:.0f} | >= 200 |\n")
print(open(f"{out}/bench.md").read(), end="")
EOF
