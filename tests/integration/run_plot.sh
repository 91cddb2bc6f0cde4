#!/usr/bin/env bash
# flashbed run's tokens.csv and --plot (the paper's Fig. 8): a row per token
# with every per-token field of run.json, the phase and the cold tokens;
# fig8.png and fig8.svg drawn from it (when gnuplot is here), and the
# script re-runs by hand on the CSV; without gnuplot --plot is refused
# before the run.
source "$(dirname "$0")/lib.sh"
SRC=${FLASHBED_SOURCE:?}

check "opt-tiny model" "$FLASHBED" model make --arch opt --shape opt-tiny --dtype f32 --seed 5 --relu-density 0.15 --out "$WORK/opt-hf"
check "convert it" "$FLASHBED" convert "$WORK/opt-hf" --out "$WORK/opt"
M="$WORK/opt"
P="the cat sat on the mat and the dog"

# tokens.csv against run.json: the same tokens, columns and values.
csv_matches_run() { # result folder
    python3 - "$1" <<'PY'
import csv, json, sys
d = sys.argv[1]
run = json.load(open(d + "/run.json"))
rows = list(csv.DictReader(open(d + "/tokens.csv")))
toks, cold = run["tokens"], run["summary"]["cold_tokens_excluded"]
want = set(toks[0]) | {"cold"}
if len(rows) != len(toks) or set(rows[0]) != want:
    sys.exit(f"{len(rows)} rows for {len(toks)} tokens; columns {sorted(set(rows[0]) ^ want)} differ")
for i, (r, t) in enumerate(zip(rows, toks)):
    if r["phase"] != t["phase"] or int(r["index"]) != i or int(r["cold"]) != (i < cold):
        sys.exit(f"token {i}: phase, index or cold differ: {r}")
    for k, v in t.items():
        if k != "phase" and abs(float(r[k]) - v) > 1e-9 * max(1, abs(v)):
            sys.exit(f"token {i}: {k} is {r[k]} in tokens.csv, {v} in run.json")
PY
}

# Without --plot: tokens.csv all the same, no plot.
check "run, no plot" "$FLASHBED" run --model "$M" --mode all --prompt "$P" -n 16 --ignore-eos --threads 1 --io-threads 2 \
    --quiet --out "$WORK/plain"
check "tokens.csv without --plot" csv_matches_run "$WORK/plain"
check "no plot without --plot" test ! -e "$WORK/plain/fig8.png"
check "a prompt and generated tokens" test "$(cut -d, -f3 "$WORK/plain/tokens.csv" | sort -u | tr '\n' ' ')" = "generated phase prompt "

# Without gnuplot: refused before the run, nothing written.
EMPTY="$WORK/empty-path"
mkdir -p "$EMPTY"
RUN_ENV="PATH=$EMPTY" expect_error "--plot without gnuplot" "gnuplot, which is not installed" \
    run --model "$M" --mode all --prompt "$P" -n 4 --threads 1 --quiet --plot --out "$WORK/nognuplot"
check "no result folder without gnuplot" test ! -e "$WORK/nognuplot"

if ! command -v gnuplot >/dev/null; then
    echo "run_plot: gnuplot is not installed; the plot checks are skipped"
    finish
fi
check "run --plot" "$FLASHBED" run --model "$M" --mode all --dram-budget 80% --cold 3 --prompt "$P" -n 40 --ignore-eos \
    --threads 1 --io-threads 2 --quiet --plot --out "$WORK/plot"
check "tokens.csv with --plot" csv_matches_run "$WORK/plot"
check "--cold 3: three cold rows" test "$(awk -F, 'NR > 1 && $4 == 1' "$WORK/plot/tokens.csv" | wc -l)" = 3
for f in fig8.png fig8.svg; do
    check "plot: $f" test -s "$WORK/plot/$f"
done
check "the title names the model, mode, policy and budget" grep -q "opt-hf (f32), mode all: window:5 + coalesce:0, DRAM budget" "$WORK/plot/fig8.svg"
check "the cold tokens are in the key" grep -q "cold (shaded): the first 3 tokens" "$WORK/plot/fig8.svg"
check "no temporaries left" test -z "$(find "$WORK/plot" -name '*.tmp.*')"
check "the script re-runs on the CSV by hand" gnuplot -e "csv='$WORK/plot/tokens.csv'; term='svg'; outfile='$WORK/byhand.svg'" \
    "$SRC/plots/fig8_token_latency.gp"
check "by hand: an SVG" grep -q "<svg" "$WORK/byhand.svg"
check "dense --plot" "$FLASHBED" run --model "$M" --mode dense --prompt "$P" -n 8 --threads 1 --quiet --plot --out "$WORK/dense"
check "dense: fig8.png" test -s "$WORK/dense/fig8.png"
# a model and a result folder whose names hold a quote and a space: the
# title and the paths stay one gnuplot string each (common/gnuplot.h)
Q="$WORK/it's a model"
check "a model folder named with a quote" cp -r "$M" "$Q"
python3 - "$Q/model.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1]))
m["name"] = "Lily's \"model\""
json.dump(m, open(sys.argv[1], "w"))
PY
check "run --plot there" "$FLASHBED" run --model "$Q" --mode all --prompt "$P" -n 6 --threads 1 --io-threads 2 --quiet \
    --plot --out "$WORK/Lily's plots"
check "quoted: fig8.png" test -s "$WORK/Lily's plots/fig8.png"
check "quoted: the title keeps the quotes" grep -qF "Lily's \"model\" (f32), mode all" "$WORK/Lily's plots/fig8.svg"
finish
