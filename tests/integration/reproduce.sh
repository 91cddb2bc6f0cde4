#!/usr/bin/env bash
# flashbed reproduce --tiny (issue 16): every part of the study runs, each
# table and plot exists, the Table 3 and Fig. 7 numbers in REPORT.md are
# those of the result files, the training-free sparsity study on stories260K
# (with the shared data) has every cell and its section, a second run resumes (nothing runs again), --plan and
# --merge work, and bad input is refused before anything runs.
source "$(dirname "$0")/lib.sh"
S="$WORK/study"
DATA_ARGS=()
[ -f "$FLASHBED_DATA/models/stories260K/stories260K.bin" ] && DATA_ARGS=(--data "$FLASHBED_DATA")
[ ${#DATA_ARGS[@]} -gt 0 ] || echo "note: no shared data under FLASHBED_DATA=$FLASHBED_DATA: the recorded trace is left out"

# every flag the plan writes exists in its command's options and parses,
# in each tier (nothing runs, nothing is written)
for tier in tiny quick full; do
    check "reproduce --$tier --check-plan: every step parses" "$FLASHBED" reproduce --$tier "${DATA_ARGS[@]}" \
        --check-plan --out "$WORK/plan-$tier"
    check "reproduce --$tier --check-plan writes nothing" test ! -e "$WORK/plan-$tier"
done
# The quick tier measures Table 3's CPU rows at the real shapes whose f16
# weights fit half the memory (Phi-2 5.6 GB, the 1.1B Llama 2.2 GB) and
# the disk; the others are left out, saying why (the plan's steps:
# test_reproduce_plan). The disk here may be short: then it says so.
plan_says() { # MEMORY: what --check-plan of the quick tier says
    "$FLASHBED" reproduce --quick --memory "$1" --check-plan --out "$WORK/plan-quick" 2>&1
}
lacks() { ! grep -q "$1" <<<"$2"; } # TEXT OUTPUT
out=$(plan_says 64g)
if grep -q "do not fit the" <<<"$out"; then
    echo "note: the disk here is short of room for the real shapes: $out"
else
    check "--quick: Table 3 also at Phi-2 and the 1.1B Llama" \
        grep -q "Table 3's CPU rows also at the real shapes phi-2, llama-1.1b-fatrelu$" <<<"$out"
    out=$(plan_says 6g)
    check "--quick, 6 GiB: the 1.1B Llama only" grep -q "also at the real shapes llama-1.1b-fatrelu$" <<<"$out"
    check "--quick, 6 GiB: Phi-2 left out, saying why" grep -q "left out: phi-2: its 5.6 GB of f16 weights are \
more than half of the 6.4 GB of memory" <<<"$out"
fi
out=$(plan_says 4g)
check "--quick, 4 GiB: no real shape added" lacks "also at the real shapes" "$out"
check "--quick, 4 GiB: both left out" grep -q "; llama-1.1b-fatrelu: its 2.2 GB of f16 weights" <<<"$out"
for tier in tiny full; do
    out=$("$FLASHBED" reproduce --$tier --memory 64g --check-plan --out "$WORK/plan-$tier" 2>&1)
    check "--$tier: no real shape added" lacks "real shapes" "$out"
done
# --check-args, what --check-plan runs on each step: parses, stops
check "--check-args: options that parse, exit 0" "$FLASHBED" --check-args run --model "$WORK/none" --prompt hi \
    --out "$WORK/never"
check "--check-args: nothing run or written" test ! -e "$WORK/never"
EXPECT_RC=2 expect_error "--check-args: an unknown flag" "run: unknown option '--bogus'" --check-args run --bogus
EXPECT_RC=2 expect_error "--check-args: a value out of range" "io-threads" --check-args run --io-threads 0
check "reproduce --help exits 0" "$FLASHBED" reproduce --help

check "reproduce --tiny" "$FLASHBED" reproduce --tiny "${DATA_ARGS[@]}" --out "$S"
check "REPORT.md written" test -s "$S/REPORT.md"
# every CSV the study writes opens with a header row: names, not numbers
# (issue 47: the sparsity study's quality CSVs had none)
csv_headers() {
    local bad=0 f first
    while IFS= read -r f; do
        first=$(head -1 "$f")
        if ! [[ "$first" =~ ^[A-Za-z_][A-Za-z0-9_\ ]*(,[A-Za-z_][A-Za-z0-9_\ /().%-]*)*$ ]]; then
            echo "no header row: $f: $first" >&2
            bad=1
        fi
    done < <(find "$S" -name '*.csv')
    return $bad
}
check "every CSV of the study has a header row" csv_headers
check "the sparsity study's CSV among them" test "$(head -1 "$S/sparsity/tinystories-quality.csv")" = "source,ffn_mb_per_token,perplexity"
for section in "## Fig. 2b" "## This machine's profile" "## Traces and Fig. 4a" "## The policy study" \
               "## Table 2" "## Table 3" "## Table 3 on every backend" "## Table 3's device rows" "## Fig. 8" "## Fig. 7, measured" "## What differs from the paper"; do
    check "REPORT.md has '$section'" grep -q "^$section" "$S/REPORT.md"
done
check "Fig. 2b table" test -s "$S/fig2b/sweep.md"
check "the profile" test -s "$S/calibration/hw.json"
check "the paper's Table 3 priced with it" grep -q "reproduce (\*given\*)" "$S/paper-table3/table3.md"
for shape in opt-tiny falcon-tiny persimmon-tiny phi-tiny llama-relu-tiny; do
    check "$shape: trace" test -s "$S/traces/$shape.trace"
    check "$shape: trace statistics" test -s "$S/traces/$shape-info/trace_info.json"
    check "$shape: policy study" test -s "$S/policies/$shape/replay.csv"
    check "$shape: synthetic model" test -s "$S/models/$shape/model.json"
    check "$shape: its Hugging Face folder removed" test ! -e "$S/models/$shape-hf"
    for mode in naive hybrid predictor window all; do
        check "$shape $mode: measured" test -s "$S/runs/$shape/$mode-trace-r1/run.json"
        check "$shape $mode: modelled" test -s "$S/runs/$shape/$mode-trace-predict/predict.json"
    done
    if [ ${#DATA_ARGS[@]} -gt 0 ]; then
        check "$shape: a trained predictor" test -s "$S/models/$shape/predictor.safetensors"
        for mode in predictor window all; do
            check "$shape $mode with the predictor: measured" test -s "$S/runs/$shape/$mode-predictor-r1/run.json"
        done
    fi
done
if [ ${#DATA_ARGS[@]} -gt 0 ]; then
    check "stories260K's recorded trace" test -s "$S/traces/stories260K.trace"
    check "its policy study" test -s "$S/policies/stories260K/replay.md"
    # the training-free sparsity study on stories260K (tiny: S = 0.5, P > 0.5)
    check "the study's thresholds (gate per layer and global, input)" test "$(json_get "$S/sparsity/thresholds/s50.json" 'd["sparsity"], d["kind"], d["gate"]["global_threshold"] > 0')" = "0.5 both True"
    check "the study's predictor, in its own stories260K folder" test -s "$S/models/stories260K/predictor.safetensors"
    for text in tinystories wikitext2; do
        for cell in dense gate-s50 gate-cal-s50 teal-s50 predictor-p50; do
            check "sparsity $text $cell: measured" test "$(json_get "$S/sparsity/$text/$cell.json" 'd["tokens_scored"], d["ms_per_token"] > 0')" = "256 True"
        done
        check "sparsity $text: the gate from the thresholds file" test "$(json_get "$S/sparsity/$text/gate-s50.json" 'd["sparsify_file"].endswith("sparsity/thresholds/s50.json")')" = True
        check "REPORT.md: the $text table" grep -q "^### stories260K on $text" "$S/REPORT.md"
        for row in "| dense | every neuron |" "| gate | S = 0.5 |" "| gate-cal | S = 0.5 |" "| teal | S = 0.5 |" "| predictor | P > 0.5 |"; do
            check "REPORT.md: $text's row '$row'" bash -c "sed -n '/^### stories260K on $text/,/^###\|^## /p' '$S/REPORT.md' | grep -qF '$row'"
        done
    done
    check "tinystories scored past the calibration tokens" test "$(json_get "$S/sparsity/tinystories/dense.json" 'd["tokens_skipped"]')" = 512
    check "REPORT.md: the sparsity section" grep -q "^## Training-free sparsity: quality against bytes (stories260K)" "$S/REPORT.md"
    if command -v gnuplot >/dev/null; then
        check "the sparsity plot" test -s "$S/sparsity/tinystories-quality.png"
        check "REPORT.md shows it" grep -q "(sparsity/tinystories-quality.png)" "$S/REPORT.md"
    fi
fi
check "nothing left as not built" bash -c "! grep -q 'Not in this study yet' '$S/REPORT.md'"
check "Fig. 8's long run" test -s "$S/fig8/run.json"
# Fig. 7 measured on the first model (opt-tiny): each share's runs and price.
for share in 70 80 90; do
    check "Fig. 7 at $share%: measured" test -s "$S/fig7/$share-r1/run.json"
    check "Fig. 7 at $share%: window:auto" test "$(json_get "$S/fig7/$share-r1/run.json" "d['provenance']['parameters']['window']")" = auto
    check "Fig. 7 at $share%: modelled" test -s "$S/fig7/$share-predict/predict.json"
    check "Fig. 7 at $share%: predict chose K" test "$(json_get "$S/fig7/$share-predict/predict.json" "d['predictions'][0]['window_auto']['window_k'] >= 1")" = True
done
check "Fig. 7: no other model's" test "$(ls "$S/fig7" | grep -c -- '-r1$')" = 3
check "Fig. 7: the paper's modelled curve" test -s "$S/paper-fig7/fig7.csv"
check "Fig. 7: its CSV" test -s "$S/fig7/fig7.csv"
check "Fig. 8: a row per token" test "$(($(wc -l <"$S/fig8/tokens.csv") - 1))" = 32
if command -v gnuplot >/dev/null; then
    for plot in fig2b/throughput traces/opt-tiny-info/fig4a policies/opt-tiny/bytes_vs_k fig8/fig8 fig7/fig7 \
                runs/opt-tiny/ablation runs/llama-relu-tiny/ablation; do
        check "plot $plot.png" test -s "$S/$plot.png"
        check "plot $plot.svg" test -s "$S/$plot.svg"
        check "REPORT.md shows $plot.png" bash -c "grep -q '($plot.png)' '$S/REPORT.md' || [ $plot = policies/opt-tiny/bytes_vs_k ]"
    done
else
    echo "note: gnuplot not installed: plots not checked"
fi

# Table 3's numbers come from the result files: medians of the rounds'
# run.json summaries and predict.json's prediction, recomputed here.
check "Table 3 rows are the result files' numbers" python3 - "$S" <<'PY'
import json, re, statistics, sys
s = sys.argv[1]
text = open(f"{s}/REPORT.md").read()
table3 = text[text.index("## Table 3"):].split("\n## ")[0]
rows = [l for l in table3.splitlines() if re.match(r"\| \S+-tiny \| (naive|hybrid|all) \|", l)]
assert len(rows) == 15, len(rows)
assert "| shape | mode | DRAM budget | rounds | tokens/round | measured ms/token |" in table3
assert "Shapes, per architecture: opt: opt-tiny; falcon: falcon-tiny; persimmon: persimmon-tiny; phi: phi-tiny; " \
       "llama2: llama-relu-tiny." in table3, "the tiny tier's rows at the tiny shapes, and no real one"
for row in rows:
    cells = [c.strip() for c in row.strip().strip("|").split("|")]
    shape, mode, rounds = cells[0], cells[1], int(cells[3])
    runs = [json.load(open(f"{s}/runs/{shape}/{mode}-trace-r{r}/run.json"))["summary"] for r in range(1, rounds + 1)]
    assert cells[4] == f"{runs[0]['tokens']} (+{runs[0]['cold_tokens_excluded']} cold)", (cells[4], runs[0]["tokens"])
    want = [statistics.median(sum(r[k] for k in ("io_ms", "mem_ms", "compute_ms")) for r in runs)]
    want += [statistics.median(r[k] for r in runs) for k in ("io_ms", "mem_ms", "compute_ms")]
    got = [float(cells[5].split()[0])] + [float(c) for c in cells[6:9]]
    p = json.load(open(f"{s}/runs/{shape}/{mode}-trace-predict/predict.json"))["predictions"][0]["prediction"]
    want += [p["io_ms"] + p["mem_ms"] + p["compute_ms"], p["io_ms"], p["mem_ms"], p["compute_ms"]]
    got += [float(c) for c in cells[9:13]]
    for g, w in zip(got, want):
        assert abs(g - w) <= 0.051, (shape, mode, got, want)
PY

# Table 3's device rows: naive and all on every device backend that starts
# (sim always), each beside the price with its own calibrated profile, the
# emulated ones labelled, and the paper's GPU and Metal rows modelled.
check "sim's device profile, emulated" test "$(json_get "$S/calibration/hw-sim.json" '(d["backend"], d["emulated"], "device" in d)')" = "('sim', True, True)"
check "the device rows are the result files' numbers" python3 - "$S" <<'PY'
import json, os, re, statistics, sys
s = sys.argv[1]
text = open(f"{s}/REPORT.md").read()
sec = text[text.index("## Table 3's device rows"):].split("\n## ")[0]
rows = [[c.strip() for c in l.strip().strip("|").split("|")] for l in sec.splitlines()
        if re.match(r"\| (sim|opencl|cuda) \|", l)]
backends = sorted({r[0] for r in rows})
ran = sorted(b for b in ("sim", "opencl", "cuda") if os.path.exists(f"{s}/runs/opt-tiny/naive-trace-{b}-r1/run.json"))
assert "sim" in backends and backends == ran, (backends, ran)
assert len(rows) == 2 * len(backends), rows
for c in rows:
    b, mode, rounds = c[0], c[3], int(c[4])
    runs = [json.load(open(f"{s}/runs/opt-tiny/{mode}-trace-{b}-r{r}/run.json")) for r in range(1, rounds + 1)]
    assert all(r["provenance"]["backend"] == b for r in runs)
    want = statistics.median(sum(r["summary"][k] for k in ("io_ms", "mem_ms", "compute_ms")) for r in runs)
    assert abs(float(c[5].split()[0]) - want) <= 0.051, (c, want)
    dev = json.load(open(f"{s}/runs/opt-tiny/{mode}-trace-{b}-predict/predict.json"))["predictions"][0]["prediction"]["device"]
    assert abs(float(c[6]) - dev["total_ms"]) <= 0.051, (c, dev)
    m = runs[0]["summary"]
    assert c[8] == f"{m['h2d_ms']:.3f} / {dev['h2d_ms']:.3f}", (c[8], m, dev)
    assert c[9] == f"{m['io_ms']:.3f} / {m['read_ms']:.3f}", (c[9], m)
    assert c[11] == f"{m['h2d_bytes'] / 1e6:.1f} / {dev['h2d_bytes'] / 1e6:.1f}", (c[11], m, dev)
    assert c[12] == f"{m['launches']:.1f} / {dev['launches']:.1f}" and c[13] == f"{m['syncs']:.1f} / {dev['syncs']:.1f}", c
    emulated = json.load(open(f"{s}/calibration/hw-{b}.json"))["emulated"]
    assert (c[15] == "emulated device: a check of the pipeline, not a GPU timing") == emulated, c
paper = json.load(open(f"{s}/paper-table3/table3.json"))["rows"]
for r in paper:
    if "device" not in r:
        continue
    line = [l for l in sec.splitlines() if l.startswith(f"| {r['backend']} (the paper's) | {r['hw']} | {r['model']} | {r['method']} |")]
    assert len(line) == 1, (r["backend"], r["method"])
    cells = [c.strip() for c in line[0].strip().strip("|").split("|")]
    assert abs(float(cells[6]) - r["device"]["total_ms"]) <= 0.051 and float(cells[14]) == r["paper_total_ms"], cells
assert any(r["hw"] == "rtx4090-gpu" and "device" in r for r in paper) and any(r["hw"] == "m1max-metal" and "device" in r for r in paper)
PY

# The ablation bars are Table 2's numbers: each mode's measured (trace)
# total and I/O, modelled total, and measured (predictor) total.
check "ablation bars are Table 2's numbers" python3 - "$S" <<'PY'
import csv, re, sys
s = sys.argv[1]
text = open(f"{s}/REPORT.md").read()
table2 = text[text.index("## Table 2, measured"):].split("\n## ")[0]
rows = [[c.strip() for c in l.strip().strip("|").split("|")] for l in table2.splitlines()
        if re.match(r"\| \S+-tiny \| (naive|hybrid|predictor|window|all) \|", l)]
assert len(rows) == 25, len(rows)
for cells in rows:
    shape, mode = cells[0], cells[1]
    bars = {r["bar"]: r for r in csv.DictReader(open(f"{s}/runs/{shape}/ablation.csv"))}
    got = bars[f"{mode}: measured (trace)"]
    assert abs(float(got["total_ms"]) - float(cells[2].split()[0])) <= 0.051, (shape, mode, got, cells)
    assert abs(float(got["io_ms"]) - float(cells[3])) <= 0.051, (shape, mode, got, cells)
    assert abs(float(bars[f"{mode}: modelled (trace)"]["total_ms"]) - float(cells[4])) <= 0.051, (shape, mode, cells)
    if cells[5] not in ("(as trace)", "—"):
        assert abs(float(bars[f"{mode}: measured (predictor)"]["total_ms"]) - float(cells[5].split()[0])) <= 0.051
    assert not any(b.startswith(f"{mode}: paper") for b in bars), "the paper's bars belong to OPT-6.7B alone"
PY

# The fio line of "What differs" is the sweep's ratios: medians over the
# thread counts at the smallest and largest chunk.
if command -v fio >/dev/null; then
    check "What differs: flashbed against fio, from sweep.json" python3 - "$S" <<'PY'
import json, re, statistics, sys
s = sys.argv[1]
text = open(f"{s}/REPORT.md").read()
m = re.search(r"- Fig. 2b beside fio: flashbed/fio throughput ([\d.]+)x at (\d+) KiB and ([\d.]+)x at (\d+) KiB", text)
assert m, "no fio line"
pts = json.load(open(f"{s}/fig2b/sweep.json"))["points"]
lo, hi = min(p["chunk_bytes"] for p in pts), max(p["chunk_bytes"] for p in pts)
for ratio, kib, chunk in ((m[1], m[2], lo), (m[3], m[4], hi)):
    want = statistics.median(p["bw_ratio_vs_fio"] for p in pts if p["chunk_bytes"] == chunk)
    assert int(kib) == chunk // 1024 and abs(float(ratio) - want) <= 0.0051, (ratio, kib, want, chunk)
PY
    check "Fig. 2b like for like, the huge-page gain its own series" python3 - "$S" <<'PY'
import json, re, statistics, sys
s = sys.argv[1]
text = open(f"{s}/REPORT.md").read()
small = json.load(open(f"{s}/fig2b/sweep.json"))
huge = json.load(open(f"{s}/fig2b-huge/sweep.json"))
assert small["provenance"]["parameters"].get("small-pages") in (True, "true", 1), small["provenance"]["parameters"]
assert not any(p["huge_pages"] for p in small["points"]), "Fig. 2b beside fio reads into 4 KiB pages"
assert "like for like: both reading into 4 KiB pages" in text
m = re.search(r"The huge-page gain, its own series: .* ([\d.]+)x at (\d+) KiB and ([\d.]+)x at (\d+) KiB", text)
assert m, "no huge-page gain line"
for gain, kib in ((m[1], m[2]), (m[3], m[4])):
    chunk = int(kib) * 1024
    bw = {p["threads"]: p["bw_bytes"] for p in small["points"] if p["chunk_bytes"] == chunk}
    want = statistics.median(p["bw_bytes"] / bw[p["threads"]] for p in huge["points"] if p["chunk_bytes"] == chunk)
    assert abs(float(gain) - want) <= 0.0051, (gain, kib, want)
hw = json.load(open(f"{s}/calibration/hw.json"))
assert "fig2b-huge/sweep.json" in json.dumps(hw["provenance"]), "the profile's flash is the engine's (huge-page) sweep"
PY
fi

# Fig. 7's rows come from the result files too: K from run.json's summary
# and predict.json's window_auto, medians of the rounds, the price; and the
# CSV the plot draws holds the same numbers.
check "Fig. 7 rows are the result files' numbers" python3 - "$S" <<'PY'
import csv, json, re, statistics, sys
s = sys.argv[1]
text = open(f"{s}/REPORT.md").read()
fig7 = text[text.index("## Fig. 7, measured"):].split("\n## ")[0]
rows = [l for l in fig7.splitlines() if re.match(r"\| \d+% \|", l)]
assert len(rows) == 3, rows
plotted = {int(r["share"]): r for r in csv.DictReader(open(f"{s}/fig7/fig7.csv"))}
parts = ("io_ms", "mem_ms", "compute_ms")
for row in rows:
    cells = [c.strip() for c in row.strip().strip("|").split("|")]
    share, rounds = int(cells[0].rstrip("%")), int(cells[5])
    runs = [json.load(open(f"{s}/fig7/{share}-r{r}/run.json"))["summary"] for r in range(1, rounds + 1)]
    pred = json.load(open(f"{s}/fig7/{share}-predict/predict.json"))["predictions"][0]
    auto, p = pred["window_auto"], pred["prediction"]
    assert pred["policy"] == f"window:{auto['window_k']}", pred["policy"]
    want_k = [runs[0]["window_k"], auto["window_k"], runs[0]["capacity_rows_per_layer"], auto["capacity_rows"]]
    assert [int(c) for c in cells[1:5]] == want_k, (share, cells[1:5], want_k)
    measured = [statistics.median(sum(r[k] for k in parts) for r in runs)]
    measured += [statistics.median(r[k] for r in runs) for k in parts]
    modelled = [sum(p[k] for k in parts)] + [p[k] for k in parts]
    got = [float(cells[6].split()[0])] + [float(c) for c in cells[7:14]]
    for g, w in zip(got, measured + modelled):
        assert abs(g - w) <= 0.0006, (share, got, measured + modelled)
    line = plotted[share]
    names = ["measured_total", "measured_io", "measured_mem", "measured_compute",
             "modelled_total", "modelled_io", "modelled_mem", "modelled_compute"]
    for n, w in zip(names, measured + modelled):
        assert abs(float(line[n]) - w) <= 1e-5 * max(1, abs(w)), (share, n, line[n], w)
    assert int(line["run_k"]) == runs[0]["window_k"] and int(line["predict_k"]) == auto["window_k"]
PY

# The first screen (issue 35): the summary opens the report, and its
# figures are the result files', recomputed here: each shape's medians and
# speedups beside the paper's, the cost model's errors in holds or misses
# by the 15% line, the best deployable feasible policy per budget, the
# friends notes said once as a range.
check "the summary comes first, its figures the result files'" python3 - "$S" "$(dirname "$0")/../../configs" <<'PY'
import glob, json, os, re, statistics, sys
s, configs = sys.argv[1], sys.argv[2]
text = open(f"{s}/REPORT.md").read()
heads = re.findall(r"^## .*$", text, re.M)
assert heads[0] == "## At a glance", heads[:3]
glance = text[text.index("## At a glance"):].split("\n## ")[0]
assert len(glance.splitlines()) <= 60, len(glance.splitlines())
paper = json.load(open(f"{configs}/paper/table3.json"))["rows"]
arch_paper = {"opt": "opt-6.7b", "falcon": "falcon-7b", "persimmon": "persimmon-8b", "phi": "phi-2", "llama-relu": "llama-2-7b"}
def cpu(model, method, key):
    r = [r for r in paper if r["model"] == model and r["method"] == method and r["backend"] == "CPU"]
    return r[0][key] if r else None
def med(shape, mode, key):
    runs = [json.load(open(f))["summary"] for f in sorted(glob.glob(f"{s}/runs/{shape}/{mode}-trace-r*/run.json"))]
    parts = ("io_ms", "mem_ms", "compute_ms")
    return statistics.median(sum(r[k] for k in parts) if key == "total" else r[key] for r in runs)
def few(shape, modes):  # REPRO_SPEEDUP_MIN_ROUNDS 3, _TOKENS 32: the caveat on the speedup's own line
    runs = {m: sorted(glob.glob(f"{s}/runs/{shape}/{m}-trace-r*/run.json")) for m in modes}
    rounds = min(len(r) for r in runs.values())
    tokens = min(json.load(open(r[0]))["summary"]["tokens"] for r in runs.values())
    if rounds >= 3 and tokens >= 32:
        return ""
    return f" ({rounds} round{'' if rounds == 1 else 's'} × {tokens:.0f} token{'' if tokens == 1 else 's'}: too few)"
def ratio(here_slow, here_fast, p_slow, p_fast, caveat):
    return f"{here_slow / here_fast:.2f}×{caveat} / " + (f"{p_slow / p_fast:.2f}×" if p_slow and p_fast else "—")
holds, misses = [], []
for shape in ("opt-tiny", "falcon-tiny", "persimmon-tiny", "phi-tiny", "llama-relu-tiny"):
    model = arch_paper[shape[:-5]]
    t = {m: med(shape, m, "total") for m in ("naive", "hybrid", "all")}
    io = {m: med(shape, m, "io_ms") for m in ("naive", "all")}
    want = (f"| {shape} ({model}) | {t['naive']:.1f} → {t['hybrid']:.1f} → {t['all']:.1f} | "
            f"{ratio(t['naive'], t['all'], cpu(model, 'naive', 'total_ms'), cpu(model, 'all', 'total_ms'), few(shape, ('naive', 'all')))} | "
            f"{ratio(t['naive'], t['hybrid'], cpu(model, 'naive', 'total_ms'), cpu(model, 'hybrid', 'total_ms'), few(shape, ('naive', 'hybrid')))} | "
            f"{ratio(io['naive'], io['all'], cpu(model, 'naive', 'io_ms'), cpu(model, 'all', 'io_ms'), few(shape, ('naive', 'all')))} |")
    assert want in glance, (want, glance)
    assert "too few" not in want or '"Too few": a speedup from under 3 rounds' in glance, glance
    for m in ("naive", "hybrid", "all"):
        p = json.load(open(f"{s}/runs/{shape}/{m}-trace-predict/predict.json"))["predictions"][0]["prediction"]
        err = 100 * ((p["io_ms"] + p["mem_ms"] + p["compute_ms"]) - t[m]) / t[m]
        (holds if round(abs(err)) <= 15 else misses).append((shape, m, f"{err:+.0f}%"))
def listed(items):
    out, last = "", None
    for shape, m, e in items:
        out += (f", {m} {e}" if shape == last else f"{'; ' if last else ''}{shape} {m} {e}")
        last = shape
    return out
def check_list(name, items):
    line = re.search(rf"^- \*\*{name}\*\* \([^)]*\): (.*)\.$", glance, re.M)[1]
    shapes = listed(items)
    if shapes:  # then Fig. 7's shares, where they land in this list
        assert line == shapes or line.startswith(shapes + "; Fig. 7 "), (name, line, shapes)
    else:
        assert line == "nowhere" or line.startswith("Fig. 7 "), (name, line)
check_list("Holds", holds)
check_list("Misses", misses)
def reason(trace, budget, policy):  # a streaming winner's bracket: no runnable caching row feasible, else replay's words
    if policy not in ("naive", "hybrid"):
        return ""
    d = json.load(open(f"{s}/policies/{trace}/replay.json"))
    if not any(r["dram_budget"] == budget and r["feasible"] and r["policy"] not in ("naive", "hybrid", "belady")
               for r in d["results"]):
        return " (no caching policy fits)"
    text = next(v["text"] for v in d["verdict"]["budgets"] if v["dram_budget"] == budget)
    why = text.split("Why not caching: ")[1].split("\n")[0] if "Why not caching: " in text else ""
    return " (caching IOPS-bound)" if "IOPS-bound" in why else " (caching slower)"
traces = sorted(os.listdir(f"{s}/policies"))
for trace in traces:
    rows = json.load(open(f"{s}/policies/{trace}/replay.json"))["results"]
    budgets = list(dict.fromkeys(r["dram_budget"] for r in rows))
    cells = []
    for b in budgets:
        ok = [r for r in rows if r["dram_budget"] == b and r["feasible"] and r["policy"] != "belady"]
        best = min(ok, key=lambda r: r["total_ms"])
        cells.append(f"{best['policy']}, {best['layout']}: {best['total_ms']:.3g} ms" + reason(trace, b, best["policy"]))
    want = f"| {trace} | " + " | ".join(cells) + " |"
    assert want in glance, (want, glance)
ratios = []
for trace in traces:
    rows = json.load(open(f"{s}/policies/{trace}/replay.json"))["results"]
    key = lambda r: (r["policy"], r["dram_budget"], r["sets"])
    bundled = {key(r): r["bytes_per_token"] for r in rows if r["layout"] == "bundled"}
    ratios += [r["bytes_per_token"] / bundled[key(r)] for r in rows if r["layout"] == "friends" and key(r) in bundled]
assert len(re.findall("friends reads", text)) == 1, "the friends notes said once"
assert f"pairs of the {len(traces)} traces" in text and f"{min(ratios):.2f}× to {max(ratios):.2f}×" in text
PY

check "the disk beside the M1 Max at 16 KiB" grep -q "^- Flash at 16 KiB chunks: this disk reads" "$S/REPORT.md"

# Resuming: every step is done, nothing runs again, the report is rewritten.
out=$("$FLASHBED" reproduce --tiny "${DATA_ARGS[@]}" --out "$S" 2>&1)
check "a second run resumes: nothing runs again" grep -q "0 steps run" <<<"$out"
# An unfinished step (its marker gone) runs again, alone.
rm "$S/steps/trace-info-opt-tiny.json"
out=$("$FLASHBED" reproduce --tiny "${DATA_ARGS[@]}" --out "$S" 2>&1)
check "an unfinished step runs again, alone" grep -q "1 steps run" <<<"$out"

# A step whose results are gone: the summary says so instead of a number.
mkdir -p "$WORK/aside" && mv "$S"/runs/opt-tiny/all-trace-r* "$WORK/aside/"
check "a study without its all runs: the report rewritten" "$FLASHBED" reproduce --tiny "${DATA_ARGS[@]}" --out "$S"
check "the summary: all did not run" grep -q "^| opt-tiny (opt-6.7b) | [0-9.]* → [0-9.]* → all did not run | all did not run |" "$S/REPORT.md"
check "the summary: no error for it" grep -q "^- No figure: opt-tiny all (did not run)" "$S/REPORT.md"
mv "$WORK"/aside/* "$S/runs/opt-tiny/"

# --plan: one independent study per model; --merge collects them.
check "--plan" "$FLASHBED" reproduce --tiny --models opt,phi --out "$WORK/many" --plan "$WORK/plan.txt"
check "--plan: one line per model" test "$(wc -l <"$WORK/plan.txt")" = 2
check "--plan: each line its own folder" grep -q -- "--models phi .*--out '$WORK/many/phi'" "$WORK/plan.txt"
check "the plan's first line runs" bash -c "$(head -1 "$WORK/plan.txt") 2>/dev/null"
check "--merge" "$FLASHBED" reproduce --merge --out "$WORK/many"
check "--merge: the finished study" grep -q "^## opt" "$WORK/many/REPORT.md"
check "--merge: its tables" grep -q "^| opt-tiny | all |" "$WORK/many/REPORT.md"
check "--merge: the summary first" test "$(grep -m1 '^## ' "$WORK/many/REPORT.md")" = "## At a glance"
check "--merge: its rows under the study's name" grep -q "^| opt: opt-tiny (opt-6.7b) | [0-9.]* → " "$WORK/many/REPORT.md"
check "--merge: the unfinished study's policy study" grep -q "^| opt: opt-tiny | " "$WORK/many/REPORT.md"

# Bad input: refused before anything runs.
expect_error "two tiers" "one of --tiny, --quick, --full" reproduce --tiny --full --out "$WORK/x"
expect_error "unknown model" "unknown model 'gpt5'" reproduce --tiny --models opt,gpt5 --out "$WORK/x"
expect_error "a model twice" "named twice" reproduce --tiny --models opt,opt --out "$WORK/x"
check "refused: no folder made" test ! -e "$WORK/x"
mkdir -p "$WORK/mine" && echo "the user's notes" >"$WORK/mine/notes.txt"
expect_error "a folder that is not a study's" "not a study's folder" reproduce --tiny --models opt --out "$WORK/mine"
check "the user's folder untouched" test "$(ls "$WORK/mine")" = notes.txt
expect_error "other settings in a study's folder" "was done with other settings" \
    reproduce --tiny --models opt --disk "$WORK" --out "$S"
expect_error "--merge of a folder without studies" "no study folders" reproduce --merge --out "$WORK/mine"

echo "reproduce.sh: $checks checks, $failures failed"
[ "$failures" -eq 0 ]
