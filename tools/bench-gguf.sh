#!/usr/bin/env bash
# Dense decode of real GGUF models, flashbed against llama.cpp (issue 46's
# "As fast as llama.cpp"): the same GGUF file, the same prompt token ids,
# the same number of decode steps and the same thread count (1 and 2) on
# both sides, rounds alternating between the two programs (which one goes
# first swapped every round), medians of ROUNDS. Decode only: the prompt is
# processed first and not timed; flashbed's figure is generate's
# generation_tokens_per_second ((generated - 1) / decode seconds, sampling
# included), llama.cpp's is its own decode timer (llama_perf_context:
# t_eval over n_eval single-token decodes), with the Python loop's wall
# clock beside it. Each round also runs flashbed `generate --bandwidth`
# once per thread count: its weight bytes per token against the DRAM read
# rate a read loop over the weights reaches on the same threads (the
# fraction of the DRAM read limit); the table puts beside it each engine's
# timed tokens/s times the same weight bytes per token against the same
# rate, so that llama.cpp's share by the same measure shows whether the
# limit is in reach on the machine. A timing benchmark, not a test.
#
#   tools/bench-gguf.sh [ROUNDS] [OUT]        e.g. tools/bench-gguf.sh 5
#
# Writes OUT/bench.md (a Markdown table with its provenance) and
# OUT/bench.json (every round). Environment:
#   LLAMA_PY  a Python with llama-cpp-python (tools/make-reference-env.sh;
#             default .venv-ref/bin/python)
#   MODELS    GGUF files, space-separated (default: SmolLM2-135M Q4_1 from
#             ../shared/data, Gemma 3 270M Q4_K_M from .models: tools/fetch-models.sh); one
#             flashbed cannot convert is reported as skipped, with the reason
#   THREADS   thread counts, space-separated (default "1 2")
#   GEN       tokens generated per run (default 128)
#   FB        the flashbed binary (default build/flashbed)
#   NOTE      a line for the header (e.g. "machine shared with builds")
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${1:-5}
OUT=${2:-results/bench-gguf-$(date -u +%Y%m%dT%H%M%SZ)}
FB=${FB:-build/flashbed}
THREADS=${THREADS:-1 2}
GEN=${GEN:-128}
PROMPT="Once upon a time, in a small village by the sea, there lived an old fisherman who"
DEFAULT_MODELS="../shared/data/models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf .models/gemma3-270m/gemma-3-270m-q4_k_m.gguf"
MODELS=${MODELS:-$DEFAULT_MODELS}
if [ -z "${LLAMA_PY:-}" ]; then
    LLAMA_PY=.venv-ref/bin/python
fi
[ "$ROUNDS" -ge 1 ] 2>/dev/null || { echo "ROUNDS must be a positive number (5 or more for medians)" >&2; exit 2; }
[ -x "$FB" ] || { echo "build flashbed first (tools/run-default.sh or cmake): no $FB" >&2; exit 2; }
if ! "$LLAMA_PY" -c 'import llama_cpp' 2>/dev/null; then
    echo "llama.cpp missing: $LLAMA_PY cannot import llama_cpp (make it with tools/make-reference-env.sh," \
         "or set LLAMA_PY to a Python that has llama-cpp-python)" >&2
    exit 2
fi
mkdir -p "$OUT"
CMD="tools/bench-gguf.sh $*"
LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)

# The llama.cpp side: ARGV model ids-file threads steps out.json. Evaluates
# the prompt (not timed), then `steps` greedy single-token decodes.
cat > "$OUT/llama_decode.py" <<'PY'
import json, sys, time
import llama_cpp, numpy
model, ids_file, threads, steps, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), sys.argv[5]
ids = [int(x) for x in open(ids_file).read().split()]
llm = llama_cpp.Llama(model_path=model, n_threads=threads, n_threads_batch=threads, n_ctx=len(ids) + steps + 16,
                      n_batch=512, n_gpu_layers=0, verbose=False)
n_vocab = llm.n_vocab()
def greedy():
    return int(numpy.ctypeslib.as_array(llm._ctx.get_logits(), shape=(n_vocab,)).argmax())
llm.eval(ids)
tok, out_ids = greedy(), []
llama_cpp.llama_perf_context_reset(llm._ctx.ctx)
t0 = time.perf_counter()
for _ in range(steps):
    out_ids.append(tok)
    llm.eval([tok])
    tok = greedy()
wall = time.perf_counter() - t0
perf = llama_cpp.llama_perf_context(llm._ctx.ctx)
json.dump({"steps": steps, "n_eval": perf.n_eval, "t_eval_ms": perf.t_eval_ms, "wall_s": wall,
           "tokens_per_second": perf.n_eval / (perf.t_eval_ms / 1e3),
           "wall_tokens_per_second": steps / wall, "ids": out_ids}, open(out, "w"))
PY

LLAMA_INFO=$("$LLAMA_PY" -c 'import llama_cpp; print(llama_cpp.__version__, llama_cpp.llama_print_system_info().decode().strip())')
: > "$OUT/models.txt"
for gguf in $MODELS; do
    name=$(basename "$gguf" .gguf)
    dir=$OUT/models/$name
    if [ ! -f "$gguf" ]; then
        echo "$name	no file $gguf" >> "$OUT/models.txt"; continue
    fi
    if [ ! -f "$dir/model.json" ] && ! "$FB" convert "$gguf" --out "$dir" > "$OUT/$name-convert.log" 2>&1; then
        echo "$name	flashbed convert: $(grep -m1 error "$OUT/$name-convert.log")" >> "$OUT/models.txt"
        continue
    fi
    # the prompt's ids as flashbed's tokenizer makes them (BOS included),
    # and how many tokens greedy decoding gives before an end of sequence
    "$FB" generate --model "$dir" --prompt "$PROMPT" -n "$GEN" --temperature 0 --threads 1 \
        --json "$OUT/$name-prep.json" > /dev/null 2> "$OUT/$name-prep.log"
    python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(*d["prompt_token_ids"]);
print(d["summary"]["generated_tokens"], file=open(sys.argv[2], "w"))' \
        "$OUT/$name-prep.json" "$OUT/$name-gen.txt" > "$OUT/$name.ids"
    echo "$name	$gguf	$dir" >> "$OUT/models.txt"
done

fb_run() { # model dir threads out [--bandwidth]
    "$FB" generate --model "$2" --prompt-ids "$1" -n "$(cat "${1%.ids}-gen.txt")" --temperature 0 --threads "$3" \
        --json "$4" "${@:5}" > /dev/null 2> "${4%.json}.log"
}
for r in $(seq 1 "$ROUNDS"); do
    echo "round $r of $ROUNDS" >&2
    while IFS=$'\t' read -r name gguf dir; do
        [ -n "$dir" ] || continue
        ids=$OUT/$name.ids steps=$(( $(cat "$OUT/$name-gen.txt") - 1 ))
        for t in $THREADS; do
            at=$OUT/$name-t$t-r$r
            if [ $((r % 2)) -eq 1 ]; then
                fb_run "$ids" "$dir" "$t" "$at-flashbed.json"
                "$LLAMA_PY" "$OUT/llama_decode.py" "$gguf" "$ids" "$t" "$steps" "$at-llama.json"
            else
                "$LLAMA_PY" "$OUT/llama_decode.py" "$gguf" "$ids" "$t" "$steps" "$at-llama.json"
                fb_run "$ids" "$dir" "$t" "$at-flashbed.json"
            fi
            fb_run "$ids" "$dir" "$t" "$at-bandwidth.json" --bandwidth
        done
    done < "$OUT/models.txt"
done

python3 - "$OUT" "$ROUNDS" "$THREADS" "$CMD" "$LLAMA_INFO" "$LOAD_BEFORE" "$(cut -d' ' -f1-3 /proc/loadavg)" \
    "${NOTE:-}" <<'PY'
import json, os, platform, statistics as st, subprocess, sys, time
out, rounds, threads, cmd, llama_info, load0, load1, note = sys.argv[1:]
rounds, threads = int(rounds), [int(t) for t in threads.split()]
load = lambda p: json.load(open(p))
sh = lambda *a: subprocess.run(a, capture_output=True, text=True).stdout.strip()
cpu = next((l.split(":", 1)[1].strip() for l in open("/proc/cpuinfo") if l.startswith("model name")), "?")
commit = sh("git", "rev-parse", "--short", "HEAD") + (" (with local changes)" if sh("git", "status", "--porcelain", "-uno") else "")
lines = [f"command: `{cmd}`", f"commit: {commit}; date: {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}",
         f"machine: {platform.node()}, {cpu}, {os.cpu_count()} logical CPUs; load average before {load0}, after {load1}",
         f"llama.cpp: llama-cpp-python {llama_info}"]
if note:
    lines.append(f"note: {note}")
lines += [f"medians of {rounds} rounds, flashbed and llama.cpp alternating (which goes first swapped each round); "
          "decode tokens/s only (prompt not timed); ratio = flashbed / llama.cpp, the median of the rounds' pairs.", "",
          "| model | threads | decode steps | flashbed tok/s | llama.cpp tok/s | flashbed / llama.cpp | "
          "flashbed min–max | llama.cpp min–max | llama.cpp wall tok/s | weight MB/token | DRAM read GB/s | "
          "flashbed of DRAM limit | flashbed timed of DRAM limit | llama.cpp of DRAM limit |",
          "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
rows, skipped = [], []
for line in open(f"{out}/models.txt"):
    f = line.rstrip("\n").split("\t")
    if len(f) < 3:
        skipped.append(f"{f[0]}: {f[1]}")
        continue
    name = f[0]
    for t in threads:
        rs = [{k: load(f"{out}/{name}-t{t}-r{r}-{k}.json") for k in ("flashbed", "llama", "bandwidth")}
              for r in range(1, rounds + 1)]
        fb = [x["flashbed"]["summary"]["generation_tokens_per_second"] for x in rs]
        ll = [x["llama"]["tokens_per_second"] for x in rs]
        bw = [x["bandwidth"]["summary"] for x in rs]
        row = {"model": name, "threads": t, "decode_steps": rs[0]["llama"]["steps"],
               "flashbed_tokens_per_second": fb, "llama_tokens_per_second": ll,
               "llama_wall_tokens_per_second": [x["llama"]["wall_tokens_per_second"] for x in rs],
               "ratio_median_of_pairs": st.median(a / b for a, b in zip(fb, ll)),
               "weight_bytes_per_token": bw[0]["weight_bytes_per_token"],
               "dram_read_bytes_per_second": [b["dram_read_bandwidth_bytes_per_second"] for b in bw],
               "dram_fraction": [b["bandwidth_fraction"] for b in bw]}
        # each engine's timed tokens/s times the same weight bytes per token
        # against the same round's read rate: the share llama.cpp reaches
        # by the very measure flashbed's goal is set in
        share = lambda tps: [t * row["weight_bytes_per_token"] / b for t, b in zip(tps, row["dram_read_bytes_per_second"])]
        row["flashbed_timed_dram_fraction"], row["llama_dram_fraction"] = share(fb), share(ll)
        rows.append(row)
        lines.append(f"| {name} | {t} | {row['decode_steps']} | {st.median(fb):.1f} | {st.median(ll):.1f} | "
                     f"{row['ratio_median_of_pairs']:.2f}x | {min(fb):.1f}–{max(fb):.1f} | {min(ll):.1f}–{max(ll):.1f} | "
                     f"{st.median(row['llama_wall_tokens_per_second']):.1f} | {row['weight_bytes_per_token'] / 1e6:.1f} | "
                     f"{st.median(row['dram_read_bytes_per_second']) / 1e9:.1f} | {100 * st.median(row['dram_fraction']):.1f}% | "
                     f"{100 * st.median(row['flashbed_timed_dram_fraction']):.1f}% | {100 * st.median(row['llama_dram_fraction']):.1f}% |")
for s in skipped:
    lines.append(f"\nskipped {s}")
lines.append("\nflashbed of DRAM limit: generate --bandwidth's own run (weight bytes per token x its tokens/s, each step "
             "after a read pass over the resident weights on the same threads, against those passes' rate); timed: the "
             "same from the timed run's tokens/s; llama.cpp: its tokens/s x the same weight bytes per token against the "
             "same rate (the share llama.cpp reaches by the same measure).")
lines.append("\ngoal (issue 46): flashbed / llama.cpp >= 1.0x at each thread count, >= 85% of the DRAM read limit.")
open(f"{out}/bench.md", "w").write("\n".join(lines) + "\n")
json.dump({"command": cmd, "rounds": rounds, "rows": rows, "skipped": skipped}, open(f"{out}/bench.json", "w"), indent=1)
print("\n".join(lines))
PY
