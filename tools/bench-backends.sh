#!/usr/bin/env bash
# A device backend's decode beside cpu (issue 30): stories260K, greedy,
# runs alternating cpu and BACKEND so both see the same machine, medians
# and the median of per-round ratios. On PoCL or sim this is a correctness
# run's speed (an emulated device), not a GPU timing; the tokens of every
# run are checked equal to cpu's.
#
#   tools/bench-backends.sh [BACKEND] [RUNS] [OUT]    e.g. tools/bench-backends.sh opencl 7
#
# Environment: THREADS (2), GEN (200 tokens per run), DTYPE (f32),
# FLASHBED_DATA (../shared/data). Makes results/bench-models/stories260K-$DTYPE
# when missing.
set -euo pipefail
cd "$(dirname "$0")/.."
BACKEND=${1:-opencl}
RUNS=${2:-7}
OUT=${3:-results/bench-backends-$(date -u +%Y%m%dT%H%M%SZ)}
FB=build/flashbed
THREADS=${THREADS:-2}
GEN=${GEN:-200}
DTYPE=${DTYPE:-f32}
DATA=${FLASHBED_DATA:-../shared/data}
SRC=$DATA/models/stories260K
M=results/bench-models/stories260K-$DTYPE
[ -x "$FB" ] || { echo "build flashbed first (tools/run-default.sh or cmake)" >&2; exit 2; }
[ -f "$SRC/stories260K.bin" ] || { echo "no stories260K under $DATA (set FLASHBED_DATA)" >&2; exit 2; }
mkdir -p "$OUT" results/bench-models
[ -f "$M/model.json" ] || "$FB" convert "$SRC/stories260K.bin" --tokenizer "$SRC/tok512.bin" --dtype "$DTYPE" --out "$M"
for r in $(seq 1 "$RUNS"); do
    for b in cpu "$BACKEND"; do
        "$FB" generate --model "$M" --prompt "Once upon a time" -n "$GEN" --temperature 0 --threads "$THREADS" \
            --backend "$b" --json "$OUT/$b-$r.json" >/dev/null 2>"$OUT/$b-$r.log"
    done
done
python3 - "$OUT" "$RUNS" "$BACKEND" <<'PY'
import json, statistics as st, sys
out, runs, dev = sys.argv[1], int(sys.argv[2]), sys.argv[3]
load = lambda b, r: json.load(open(f"{out}/{b}-{r}.json"))
ids = lambda d: [t["id"] for t in d["tokens"]]
rate = {b: [load(b, r)["summary"]["generation_tokens_per_second"] for r in range(1, runs + 1)] for b in ("cpu", dev)}
same = all(ids(load(dev, r)) == ids(load("cpu", 1)) for r in range(1, runs + 1))
prov = load(dev, 1)["provenance"]
s = {"backend": dev, "device": prov.get("device"), "emulated": prov.get("emulated"), "runs": runs,
     "tokens_per_second_median": {b: st.median(v) for b, v in rate.items()},
     "cpu_over_backend_median_of_pairs": st.median(c / d for c, d in zip(rate["cpu"], rate[dev])),
     "tokens_equal_cpu": same}
json.dump(s, open(f"{out}/summary.json", "w"), indent=1)
print(f"{dev} ({s['device']}, emulated {s['emulated']}): {s['tokens_per_second_median'][dev]:.0f} tok/s, "
      f"cpu {s['tokens_per_second_median']['cpu']:.0f} tok/s, cpu/{dev} {s['cpu_over_backend_median_of_pairs']:.1f} "
      f"(median of {runs} alternating pairs); greedy tokens equal to cpu's: {same}")
sys.exit(0 if same else 1)
PY
