#!/usr/bin/env bash
# tools/gpu-check.sh's GPU rows (issue 31) without a GPU: the same script on
# the sim backend and opt-tiny (GPU_CHECK_BACKEND=sim GPU_CHECK_TINY=1)
# calibrates the device, makes the shape, runs naive and all, prices them
# and writes the report, whose numbers are the result files'.
source "$(dirname "$0")/lib.sh"
SRC=${FLASHBED_SOURCE:?}
G="$WORK/gc"
run_check() {
    GPU_CHECK_BACKEND=${1:-sim} GPU_CHECK_TINY=1 GPU_CHECK_FLASHBED="$FLASHBED" GPU_CHECK_OUT="$G" \
        bash "$SRC/tools/gpu-check.sh" >"$WORK/out.txt" 2>&1
}
check "gpu-check on sim, tiny: every step passes" run_check sim
cat "$WORK/out.txt"
check "the report" test -s "$G/report.md"
check "every step passed" bash -c "! grep -q FAIL '$G/report.md' && grep -q 'Overall: all passed' '$G/report.md'"
check "the device calibrated, emulated" test "$(json_get "$G/hw-sim.json" '(d["backend"], d["emulated"], "device" in d)')" \
    = "('sim', True, True)"
check "the rows labelled emulated" grep -q "## Table 3's GPU rows: sim (emulated device: a check of the pipeline, not a GPU timing)" \
    "$G/report.md"
check "the disk's own read rate stated" grep -q "^- this machine's disk (swept here" "$G/report.md"
check "the weights removed once run" test ! -e "$G/work/opt-tiny"
check "the rows are the result files' numbers" python3 - "$G" <<'PY'
import json, re, sys
g = sys.argv[1]
text = open(f"{g}/report.md").read()
rows = [[c.strip() for c in l.strip().strip("|").split("|")] for l in text.splitlines()
        if re.match(r"\| opt-tiny \| (naive|all) \|", l)]
assert [r[1] for r in rows] == ["naive", "all"], rows
for cells in rows:
    mode = cells[1]
    run = json.load(open(f"{g}/runs/opt-tiny-{mode}/run.json"))
    s = run["summary"]
    assert run["provenance"]["backend"] == "sim", run["provenance"]
    got = [float(c) for c in cells[2:7]]
    want = [s[k] for k in ("total_ms", "io_ms", "read_ms", "mem_ms", "compute_ms")]
    assert all(abs(a - b) <= 0.051 for a, b in zip(got, want)), (got, want)
    assert abs(float(cells[7]) - s["h2d_bytes"] / 1e6) <= 0.051, (cells, s["h2d_bytes"])
    assert abs(float(cells[8]) - s["h2d_ms"]) <= 0.0051, (cells, s["h2d_ms"])
    p = json.load(open(f"{g}/runs/opt-tiny-{mode}-predict/predict.json"))["predictions"][0]["prediction"]
    assert abs(float(cells[9]) - p["device"]["total_ms"]) <= 0.051, (cells, p["device"])
    assert cells[10] == {"naive": "2218", "all": "84"}[mode], cells
PY
bad=$(GPU_CHECK_BACKEND=tpu GPU_CHECK_OUT="$WORK/bad" bash "$SRC/tools/gpu-check.sh" 2>&1)
check "an unknown backend: exit 2, said, nothing written" test $? = 2 -a ! -e "$WORK/bad"
check "an unknown backend: the message" grep -q "cuda, opencl or sim, not 'tpu'" <<<"$bad"
finish
