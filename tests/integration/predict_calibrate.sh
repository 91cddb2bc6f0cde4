#!/usr/bin/env bash
# flashbed calibrate (from a sweep, and measuring: where its sweep goes) and
# flashbed predict: files, keys, the paper tables (with a given profile),
# --compare against a hand-written run, and bad input.
source "$(dirname "$0")/lib.sh"
SRC=${FLASHBED_SOURCE:?}

# A small sweep (null engine: fast and deterministic in shape) feeds calibrate.
check "sweep for calibrate" "$FLASHBED" sweep --file "$WORK/d.bin" --size 4m --chunks 4k,16k,64k \
    --threads 1,2 --runtime 0.05 --ramp 0 --engine null --out "$WORK/sweep"
check "calibrate from a sweep" "$FLASHBED" calibrate --sweep "$WORK/sweep/sweep.json" --quick \
    --name testbox --out "$WORK/hw/testbox.json"
check "profile keys" test "$(json_get "$WORK/hw/testbox.json" 'all(k in d for k in ["name","backend","flash","dram","compute","provenance"]) and len(d["flash"]["points"]) == 6 and d["compute"]["dtypes"]["f32"]["bw_bytes"] > 0 and "mape_pct_heldout" in d["flash"]["fit"]')" = True
check "the cpu backend's rates, recorded with its device" test "$(json_get "$WORK/hw/testbox.json" '(d["backend"], d["provenance"]["backend"], d["provenance"]["device"], d["provenance"]["emulated"])')" = "('cpu', 'cpu', 'host CPU', False)"
check "a cpu profile: no device part, f32 and f16 as before" test "$(json_get "$WORK/hw/testbox.json" '("device" in d, "emulated" in d, "emulated_note" in d, sorted(d["compute"]["dtypes"]))')" = "(False, False, False, ['f16', 'f32'])"

# calibrate measuring: the sweep it measures goes beside the profile
# (PROFILE-sweep/), its scratch file is made there and removed, and nothing
# lands in the working folder (no results/ there).
mkdir -p "$WORK/cwd"
check "calibrate measures" bash -c "cd '$WORK/cwd' && '$FLASHBED' calibrate --quick --size 8m --name box --out '$WORK/cal/hw/box.json' 2>/dev/null"
check "the profile and its sweep, nothing else" test "$(ls "$WORK/cal/hw" | tr '\n' ' ')" = "box-sweep box.json "
check "the sweep's files" test "$(ls "$WORK/cal/hw/box-sweep" | tr '\n' ' ')" = "sweep.csv sweep.json sweep.md "
check "the profile's points are the sweep's" test "$(json_get "$WORK/cal/hw/box.json" 'len(d["flash"]["points"])')" = \
    "$(json_get "$WORK/cal/hw/box-sweep/sweep.json" 'len(d["points"])')"
check "nothing written in the working folder" test -z "$(ls -A "$WORK/cwd")"
# the fixed costs (sim/hw_profile.h: struct hw_fixed), each term with its source
check "fixed costs measured on the scratch file" test "$(json_get "$WORK/cal/hw/box.json" '(lambda f: (f["read_s"]["psync"]["s"] >= 0, f["batch_s"] >= 0, [t["threads"] for t in f["tail"]], all(t["factor"] >= 1 for t in f["tail"]), f["team_threads"] >= 1, f["job_hot_s"] > 0, 1 <= len(f["job_cold"]) <= 4 and f["job_cold"][0]["gap_s"] >= 0.0001 and all(a["gap_s"] < b["gap_s"] for a, b in zip(f["job_cold"], f["job_cold"][1:])) and all(c["job_s"] > 0 for c in f["job_cold"]), f["min_parallel_work"], all(f[k].startswith("measured") for k in ("read_source", "batch_source", "tail_source", "job_source")), f["token_s"], len(f["token_source"]) > 0))(d["fixed"])')" = "(True, True, [1, 4, 16, 32], True, True, True, True, 32768, True, 0, True)"
check "from a sweep: no read terms, said so; the team measured" test "$(json_get "$WORK/hw/testbox.json" '(lambda f: (f["read_s"]["psync"]["s"], f["tail"], f["read_source"], f["job_source"].startswith("measured")))(d["fixed"])')" = "(0, [], 'not measured (calibrate --sweep reads no file): 0', True)"
# the CRC-32C rate run --verify checks bundles at (issue 34), with its source, both ways of calibrating
for prof in "$WORK/hw/testbox.json" "$WORK/cal/hw/box.json"; do
    check "CRC-32C rate measured: $(basename "$prof")" test "$(json_get "$prof" '(d["dram"]["crc32c_bw_bytes"] > 0, d["dram"]["crc32c_buffer_bytes"], d["dram"]["crc32c_source"].startswith("measured: CRC-32C"))')" = "(True, 16384, True)"
done
# default result folders are stamped to the second: two commands in a row get one each
check "two predicts in a row" bash -c "cd '$WORK/cwd' && '$FLASHBED' predict >/dev/null && '$FLASHBED' predict --paper table2 >/dev/null"
check "two result folders" test "$(ls "$WORK/cwd/results" | wc -l)" = 2

check "predict with the new profile" "$FLASHBED" predict --model opt-1.3b --hw "$WORK/hw/testbox.json" \
    --dtype f16 --policy window:5 --layout bundled --out "$WORK/pred"
check "predict.json keys" test "$(json_get "$WORK/pred/predict.json" 'all(k in d["prediction"] for k in ["io_ms","mem_ms","compute_ms","serial_total_ms","overlapped_total_ms","dram"]) and "provenance" in d')" = True
check "predict.md" grep -q '| I/O ms | mem ms | compute ms |' "$WORK/pred/predict.md"
check "predict.json: the fixed costs priced" test "$(json_get "$WORK/pred/predict.json" 'sorted(d["prediction"]["fixed"])')" = \
    "['batch_ms', 'jobs_ms', 'read_batches', 'read_tail_ms', 'team_cold_jobs', 'team_jobs', 'token_ms']"

# verification priced (issue 34): on by default, as run; its bytes / the CRC rate inside mem ms; off: none
check "predict --verify off" "$FLASHBED" predict --model opt-1.3b --hw "$WORK/hw/testbox.json" \
    --dtype f16 --policy naive,window:5 --layout bundled --verify off --out "$WORK/pred-off"
check "predict --verify on (default)" "$FLASHBED" predict --model opt-1.3b --hw "$WORK/hw/testbox.json" \
    --dtype f16 --policy naive,window:5 --layout bundled --out "$WORK/pred-on"
check "verify off: nothing priced" test "$(json_get "$WORK/pred-off/predict.json" '[(p["prediction"]["verify"]["requested"], p["prediction"]["verify"]["ms"]) for p in d["predictions"]]')" = "[('off', 0), ('off', 0)]"
check "verify on: naive checks every FFN row (24 x 8192 x 8192 bytes) at the profile's rate, inside mem" test "$(json_get "$WORK/pred-on/predict.json" '(lambda p, bw: (p["verify"]["requested"], p["verify"]["bytes_per_token"], abs(p["verify"]["ms"] - 1e3 * 24 * 8192 * 8192 / bw) < 1e-9, p["mem_ms"] == p["verify"]["ms"]))(d["predictions"][0]["prediction"], '"$(json_get "$WORK/hw/testbox.json" 'd["dram"]["crc32c_bw_bytes"]')"')')" = "('on', 1610612736, True, True)"
check "verify on: window:5's mem grows by its verify ms" test "$(python3 -c 'import json, sys
on, off = (json.load(open(f))["predictions"][1]["prediction"] for f in sys.argv[1:])
print(on["verify"]["ms"] > 0 and abs(on["mem_ms"] - off["mem_ms"] - on["verify"]["ms"]) < 1e-9)' "$WORK/pred-on/predict.json" "$WORK/pred-off/predict.json")" = True
check "predict.md says so" grep -q '^Verification (--verify on): the bundles read whole, CRC-32C at' "$WORK/pred-on/predict.md"
check "a profile without a CRC rate: unpriced, said so" "$FLASHBED" predict --model opt-6.7b --hw m1max-cpu --dtype f32 --policy naive --out "$WORK/pred-unpriced"
check "unpriced in predict.md" grep -q 'unpriced: .*m1max-cpu.json has no CRC-32C rate' "$WORK/pred-unpriced/predict.md"
check "unpriced in predict.json" test "$(json_get "$WORK/pred-unpriced/predict.json" '(d["prediction"]["verify"]["priced"], d["prediction"]["verify"]["ms"])')" = "(False, 0)"
# --compare prices as the run ran: its summary.verify.requested (absent, as in a run before it: off)
python3 - "$SRC/tests/data/measured_run.json" "$WORK/run-verify.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["summary"]["verify"] = {"requested": "on", "verify_ms_per_token": 30.0}
d["provenance"].update(model="opt-1.3b", dtype="f16", shape={"n_layers": 24, "d_model": 2048, "d_ff": 8192})
json.dump(d, open(sys.argv[2], "w"))
PY
check "predict --compare a run that checked its reads" "$FLASHBED" predict --model opt-1.3b --hw "$WORK/hw/testbox.json" \
    --dtype f16 --policy window:5 --compare "$WORK/run-verify.json" --out "$WORK/cmp-verify"
check "compare: priced on, its verify ms beside the run's" test "$(json_get "$WORK/cmp-verify/compare.json" '[(c["component"], c["measured_ms"]) for c in d["components"]][4]')" = "('verify_ms', 30)"
check "the same run, --verify off given: not priced" "$FLASHBED" predict --model opt-1.3b --hw "$WORK/hw/testbox.json" \
    --dtype f16 --policy window:5 --verify off --compare "$WORK/run-verify.json" --out "$WORK/cmp-verify-off"
check "compare: no verify row" test "$(json_get "$WORK/cmp-verify-off/predict.json" 'd["prediction"]["verify"]["requested"]')" = off
check "a run without summary.verify: priced off" "$FLASHBED" predict --model opt-6.7b --hw "$WORK/hw/testbox.json" \
    --dtype f32 --policy window:5 --compare "$SRC/tests/data/measured_run.json" --out "$WORK/cmp-old"
# the run's model is the shape priced: another shape or dtype is refused, naming both
expect_error "--compare: another shape" "run-verify.json is a run of opt-1.3b (f16: 24 layers, d_model 2048, d_ff 8192), but the prediction prices --model opt-6.7b (32 layers, d_model 4096, d_ff 16384) at --dtype f16" \
    predict --model opt-6.7b --dtype f16 --policy window:5 --compare "$WORK/run-verify.json" --out "$WORK/bad-shape"
check "nothing written" test ! -e "$WORK/bad-shape"
expect_error "--compare: another dtype" "at --dtype f32: give the run's shape and dtype" \
    predict --model opt-1.3b --dtype f32 --policy window:5 --compare "$WORK/run-verify.json" --out "$WORK/bad-dtype"
expect_error "--compare: a run without its shape, another dtype" "is a run of opt-6.7b (f32)" \
    predict --model opt-6.7b --dtype f16 --policy window:5 --compare "$SRC/tests/data/measured_run.json" --out "$WORK/bad-dtype2"
check "priced off" test "$(json_get "$WORK/cmp-old/predict.json" 'd["prediction"]["verify"]["requested"]')" = off
expect_error "--verify with --paper" "--verify does not apply" predict --paper table2 --verify on --out "$WORK/bad-pv"
expect_error "--verify maybe" "--verify" predict --verify maybe --out "$WORK/bad-pv2"

check "predict --compare" "$FLASHBED" predict --model opt-6.7b --hw m1max-cpu --dtype f32 \
    --policy window:5 --compare "$SRC/tests/data/measured_run.json" --out "$WORK/cmp"
check "compare: its verdict, from its own numbers" test "$(json_get "$WORK/cmp/compare.json" '(lambda t, e: d["verdict"].startswith("Verdict: the cost model %s on this run: " % ("holds" if abs(e) <= 0.15 else "misses")) and ("%+.0f%%" % (100 * e)) in d["verdict"])(*[(c["component"], c["rel_err"]) for c in d["components"]][3])')" = True
check "compare.md ends with the verdict" test "$(grep -v '^$' "$WORK/cmp/compare.md" | tail -1 | cut -c1-9)" = "Verdict: "
check "compare: components and MAPE" test "$(json_get "$WORK/cmp/compare.json" '[c["component"] for c in d["components"]] == ["io_ms","mem_ms","compute_ms","total_ms"] and d["components"][0]["measured_ms"] == 110 and d["mape_pct"] >= 0')" = True

# Settings before the command (or their environment variables) reach the
# library and are recorded in the provenance.
cp -r "$SRC/configs" "$WORK/configs"
check "global options" "$FLASHBED" --configs "$WORK/configs" --min-parallel-work 0 predict --out "$WORK/set1"
check "settings recorded" test "$(json_get "$WORK/set1/predict.json" '[d["provenance"]["settings"][k] for k in ("configs_dir", "min_parallel_work", "plots_dir")]')" = "['$WORK/configs', 0, '$SRC/plots']"
check "environment" env FLASHBED_CONFIGS="$WORK/configs" FLASHBED_MIN_PARALLEL_WORK=7 "$FLASHBED" predict --out "$WORK/set2"
check "environment recorded" test "$(json_get "$WORK/set2/predict.json" '[d["provenance"]["settings"][k] for k in ("configs_dir", "min_parallel_work")]')" = "['$WORK/configs', 7]"
check "the option wins over the environment" env FLASHBED_MIN_PARALLEL_WORK=7 "$FLASHBED" --min-parallel-work 9 predict --out "$WORK/set3"
check "option recorded" test "$(json_get "$WORK/set3/predict.json" 'd["provenance"]["settings"]["min_parallel_work"]')" = 9
check "no sim faults recorded when off" test "$(json_get "$WORK/set3/predict.json" '"sim_fail_at" in d["provenance"]["settings"] or "sim_delay_us" in d["provenance"]["settings"]')" = False
check "sim knobs" env FLASHBED_SIM_DELAY_US=5 "$FLASHBED" --sim-fail-at 12 predict --out "$WORK/set4"
check "sim knobs recorded" test "$(json_get "$WORK/set4/predict.json" '[d["provenance"]["settings"][k] for k in ("sim_fail_at", "sim_delay_us")]')" = "[12, 5]"
expect_error "configs from an empty folder" "$WORK/none/models/opt-6.7b.json" --configs "$WORK/none" predict --out "$WORK/bad0"
expect_error "unknown global option" "unknown option '--nope' before the command" --nope predict

"$FLASHBED" predict --paper all --out "$WORK/paper" >"$WORK/paper.out" 2>"$WORK/paper.err"
check "predict --paper all" test $? -eq 0
# the tables on the terminal (stdout), as written, the folder on stderr (issue 35)
check "paper all: stdout is the three tables' Markdown, in order" \
    cmp -s "$WORK/paper.out" <(cat "$WORK/paper/table2.md"; echo; cat "$WORK/paper/table3.md"; echo; cat "$WORK/paper/fig7.md")
check "paper all: the folder on stderr" grep -q "written to $WORK/paper/" "$WORK/paper.err"
"$FLASHBED" predict --paper table3 --out "$WORK/paper-t3" >"$WORK/paper-t3.out" 2>/dev/null
check "paper table3 alone: its table on stdout" cmp -s "$WORK/paper-t3.out" "$WORK/paper-t3/table3.md"
check "paper table3: a row of it" grep -q '^| opt-6.7b | naive | CPU | m1max-cpu (paper) | 2196 / ' "$WORK/paper-t3/table3.md"
check "without --hw: every difference is the model's error" test \
    "$(json_get "$WORK/paper/table3.json" 'set(r["difference"] for r in d["rows"])')" = "{'model error'}"
check "without --hw: no cell says machines" bash -c "! grep -q 'machines)' '$WORK/paper/table3.md' '$WORK/paper/table2.md'"
for f in table2.json table2.md table3.json table3.md fig7.json fig7.md fig7.csv fig7.png fig7.svg; do
    check "paper: $f" test -s "$WORK/paper/$f"
done
check "table2 rows" test "$(json_get "$WORK/paper/table2.json" '[r["config"] for r in d["rows"]]')" = "['naive', 'hybrid', '+ predictor', '+ windowing', '+ bundling']"
check "without --hw every row is the paper's" test "$(json_get "$WORK/paper/table3.json" 'set(r["hw_from"] for r in d["rows"])')" = "{'paper'}"

# --paper --hw: a modified copy of a paper profile prices the rows it
# applies to, marked "given"; the others keep the paper's numbers.
modified() { # paper profile, new name, python statement over d, output
    python3 - "$SRC/configs/hw/$1.json" "$2" "$3" "$4" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
d["name"] = sys.argv[2]
exec(sys.argv[3])
json.dump(d, open(sys.argv[4], "w"))
PY
}
modified m1max-cpu slowcpu 'd["flash"]["sequential_bw"] /= 2' "$WORK/slowcpu.json"
check "table3 --hw slowcpu" bash -c "'$FLASHBED' predict --paper table3 --hw '$WORK/slowcpu.json' --out '$WORK/paper-cpu' >'$WORK/paper-cpu.out'"
check "table3 --hw slowcpu: the table on stdout" cmp -s "$WORK/paper-cpu.out" "$WORK/paper-cpu/table3.md"
# another machine's profile: the difference from the paper is the machines', not an error
check "table3 --hw slowcpu: the given rows are a difference of machines, the others the model's error" test \
    "$(json_get "$WORK/paper-cpu/table3.json" 'sorted(set((r["hw_from"], r["difference"]) for r in d["rows"]))')" = \
    "[('given', 'machines'), ('paper', 'model error')]"
check "table3.md: a given row's percentages say machines" \
    grep -q '^| opt-6.7b | naive | CPU | slowcpu (\*given\*) | 2196 / [0-9]* (+[0-9]*% machines) | 0 / 0 | 986 / 986 (+0% machines) | 3182 / [0-9]* (+[0-9]*% machines) | calibrated here: compute; another machine than the paper.s: a difference, not an error |$' \
    "$WORK/paper-cpu/table3.md"
check "table3.md: a paper row's do not" grep -q '^| opt-6.7b | naive | GPU | rtx4090-gpu (paper) | 2196 / [0-9]* (-1%) |' "$WORK/paper-cpu/table3.md"
check "table3.md: the machines' difference explained" grep -q "not an error of the model" "$WORK/paper-cpu/table3.md"
for same in m1max-cpu "$SRC/configs/hw/m1max-cpu.json"; do
    "$FLASHBED" predict --paper table3 --hw "$same" --out "$WORK/paper-same" >/dev/null 2>&1
    check "table3 --hw $same (the paper's own profile): still the model's error" test \
        "$(json_get "$WORK/paper-same/table3.json" 'set(r["difference"] for r in d["rows"])')" = "{'model error'}"
    check "table3 --hw $same: no cell says machines" bash -c "! grep -q 'machines)' '$WORK/paper-same/table3.md'"
    rm -rf "$WORK/paper-same"
done
same_or_given() { # default table3.json, given table3.json: the CPU rows given, their naive and hybrid I/O doubled; the others as before
    python3 - "$1" "$2" <<'PY'
import json, sys
a, b = (json.load(open(f))["rows"] for f in sys.argv[1:])
ok = len(a) == len(b) and b[0]["hw"] == "slowcpu"
for x, y in zip(a, b):
    cpu = x["backend"] == "CPU"
    ok = ok and y["hw_from"] == ("given" if cpu else "paper")
    double = cpu and x["method"] in ("naive", "hybrid")
    ok = ok and abs(y["model_io_ms"] - (2 if double else 1) * x["model_io_ms"]) < 1e-6 * x["model_io_ms"]
    ok = ok and y["model_compute_ms"] == x["model_compute_ms"] and y["paper_io_ms"] == x["paper_io_ms"]
sys.exit(0 if ok else 1)
PY
}
check "table3: the CPU rows priced with the given profile, the others the paper's" same_or_given "$WORK/paper/table3.json" "$WORK/paper-cpu/table3.json"
check "table3.md marks the given rows" grep -q '| opt-6.7b | naive | CPU | slowcpu (\*given\*) |' "$WORK/paper-cpu/table3.md"
check "table3.md marks the paper's rows" grep -q '| opt-6.7b | naive | GPU | rtx4090-gpu (paper) |' "$WORK/paper-cpu/table3.md"
check "table3 --hw a measured profile" "$FLASHBED" predict --paper table3 --hw "$WORK/hw/testbox.json" --out "$WORK/paper-box"
check "table3: no cell priced with a measured profile is called calibrated" test \
    "$(json_get "$WORK/paper-box/table3.json" 'any("calibrated" in r["notes"] for r in d["rows"] if r["hw_from"] == "given")')" = False
check "table3: the paper's cells still are" test \
    "$(json_get "$WORK/paper-box/table3.json" 'any("calibrated" in r["notes"] for r in d["rows"] if r["hw_from"] == "paper")')" = True
check "table3 --hw a measured profile: its rows a difference of machines" test \
    "$(json_get "$WORK/paper-box/table3.json" 'set(r["difference"] for r in d["rows"] if r["hw_from"] == "given")')" = "{'machines'}"
modified m1max-metal slowmetal 'd["flash"]["sequential_bw"] /= 2' "$WORK/slowmetal.json"
check "table3 --hw slowmetal" "$FLASHBED" predict --paper table3 --hw "$WORK/slowmetal.json" --out "$WORK/paper-metal"
check "table3: both Metal backends' rows given" test "$(json_get "$WORK/paper-metal/table3.json" 'sorted(set(r["backend"] for r in d["rows"] if r["hw_from"] == "given"))')" = "['Metal M1', 'Metal M2']"
check "table2 --hw slowmetal" "$FLASHBED" predict --paper table2 --hw "$WORK/slowmetal.json" --out "$WORK/paper-t2"
check "table2: naive I/O doubled" test "$(json_get "$WORK/paper-t2/table2.json" "round(d['rows'][0]['model_io_ms'] / $(json_get "$WORK/paper/table2.json" "d['rows'][0]['model_io_ms']"), 6)")" = 2.0
check "table2: marked" test "$(json_get "$WORK/paper-t2/table2.json" 'd["hw"] + " " + d["hw_from"]')" = "slowmetal given"
check "table2 --hw slowmetal: a difference of machines" test "$(json_get "$WORK/paper-t2/table2.json" 'd["difference"]')" = machines
check "table2.md: its columns say difference, its cells machines" bash -c \
    "grep -q '| I/O ms model | difference | I/O ms (Table 2 densities) | difference |' '$WORK/paper-t2/table2.md' &&
     grep -q '^| naive | .* | +[0-9.]*% machines | [0-9]* | +[0-9.]*% machines |$' '$WORK/paper-t2/table2.md'"
"$FLASHBED" predict --paper table2 --hw m1max-metal --out "$WORK/paper-t2same" >/dev/null 2>&1
check "table2 --hw m1max-metal (the paper's own): the model's error" test \
    "$(json_get "$WORK/paper-t2same/table2.json" 'd["difference"]')" = "model error"
check "table2 without --hw: the model's error" test "$(json_get "$WORK/paper/table2.json" 'd["difference"]')" = "model error"
modified rtx4090-gpu slowgpu 'd["compute"]["dtypes"]["bf16"]["derive_from"]["ms"] *= 2' "$WORK/slowgpu.json"
check "fig7 --hw slowgpu" "$FLASHBED" predict --paper fig7 --hw "$WORK/slowgpu.json" --out "$WORK/paper-f7"
check "fig7: compute doubled" test "$(json_get "$WORK/paper-f7/fig7.json" "[round(r['compute_ms'], 6) for r in d['rows']]")" = \
    "$(json_get "$WORK/paper/fig7.json" "[round(2 * r['compute_ms'], 6) for r in d['rows']]")"
check "fig7: named" test "$(json_get "$WORK/paper-f7/fig7.json" '"slowgpu profile (given" in d["figure"]')" = True
check "fig7 --dtype f32 with a CPU profile" "$FLASHBED" predict --paper fig7 --hw "$WORK/slowcpu.json" --dtype f32 --out "$WORK/paper-f7cpu"
modified m1max-cpu tpu 'd["backend"] = "tpu"' "$WORK/tpu.json"
expect_error "table3 with a backend of no row" "describes the 'tpu' backend" predict --paper table3 --hw "$WORK/tpu.json" --out "$WORK/bad-p1"
expect_error "fig7 at a dtype the profile lacks" "no compute rate for bf16" predict --paper fig7 --hw "$WORK/slowcpu.json" --out "$WORK/bad-p2"
expect_error "all: refused before any table" "has no compute rate for" predict --paper all --hw "$WORK/slowcpu.json" --out "$WORK/bad-p3"
expect_error "an option --paper does not read" "--model does not apply" predict --paper table3 --model opt-1.3b --out "$WORK/bad-p4"
expect_error "--dtype with table3" "priced at the paper's dtypes" predict --paper table3 --dtype f16 --out "$WORK/bad-p5"
for d in bad-p1 bad-p2 bad-p3 bad-p4 bad-p5; do
    check "no output for $d" test ! -e "$WORK/$d"
done

expect_error "unknown model" "no-such-shape" predict --model no-such-shape --out "$WORK/bad1"
expect_error "unknown profile" "no-such-hw" predict --hw no-such-hw --out "$WORK/bad2"
expect_error "bad policy" "bad --policy" predict --policy window:x --out "$WORK/bad3"
expect_error "bad budget" "dram-budget" predict --dram-budget 150% --out "$WORK/bad4"
expect_error "bad dtype" "unknown dtype 'q3'" predict --dtype q3 --out "$WORK/bad5"
expect_error "unknown paper table" "unknown paper 'table9'" predict --paper table9 --out "$WORK/bad6"
echo '{"summary": {"io_ms": 1}}' > "$WORK/partial_run.json"
expect_error "measured run lacks keys" "summary.mem_ms" predict --compare "$WORK/partial_run.json" --out "$WORK/bad7"
expect_error "sweep file missing" "cannot read sweep" calibrate --sweep "$WORK/none.json" --out "$WORK/bad8/x.json"
echo '{"points": [{"chunk_bytes": 4096}]}' > "$WORK/badsweep.json"
expect_error "sweep lacks keys" "lacks chunk_bytes" calibrate --sweep "$WORK/badsweep.json" --out "$WORK/bad9.json"
printf '{"name": "x", "backend": "cpu", "flash": {"points": [], "fit": {}}, "dram": {"copy": []}, "compute": {"dtypes": {}}}' > "$WORK/badhw.json"
expect_error "profile without fit" "flash.fit needs" predict --hw "$WORK/badhw.json" --out "$WORK/bad10"
for d in bad1 bad2 bad3 bad4 bad5 bad6 bad10; do
    check "no output for $d" test ! -e "$WORK/$d"
done
check "no profile written for bad sweeps" test ! -e "$WORK/bad9.json"
# Volumes from a replayed trace: the predicted bytes are the replay's, rescaled
# from the trace's f16 to the prediction's f32.
T="$WORK/tiny.trace"
check "synth a trace" "$FLASHBED" trace synth --shape opt-tiny --tokens 30 --seed 3 --out "$T"
# (the whole FFN as budget: with less the window shrinks to fit it, and
# predict prices the unshrunk window)
check "replay it" "$FLASHBED" replay --trace "$T" --policy window:5 --layout bundled --dram-budget 100% --out "$WORK/replay" --quiet
check "predict --trace window:5" "$FLASHBED" predict --model opt-tiny --trace "$T" --policy window:5 --layout bundled --dtype f32 --out "$WORK/ptrace"
check "trace bytes x 2 (f16 -> f32)" test "$(json_get "$WORK/ptrace/predict.json" "round(d['prediction']['bytes_per_token'],3)")" = "$(json_get "$WORK/replay/replay.json" "round(2*d['results'][0]['bytes_per_token'],3)")"
check "trace reads" test "$(json_get "$WORK/ptrace/predict.json" "round(d['prediction']['reads_per_token'],6)")" = "$(json_get "$WORK/replay/replay.json" "round(d['results'][0]['reads_per_token'],6)")"
check "volume source names the trace" test "$(json_get "$WORK/ptrace/predict.json" "'replay of' in d['volume_source'] and 'window:5' in d['volume_source']")" = True
check "predict --trace lru" "$FLASHBED" predict --model opt-tiny --trace "$T" --policy lru --layout coalesce:2 --dtype f32 --dram-budget 95% --out "$WORK/plru"
check "lru priced as a cache" test "$(json_get "$WORK/plru/predict.json" "d['prediction']['bytes_per_token'] > 0 and d['prediction']['mem_ms'] >= 0")" = True
expect_error "trace of another shape" "but the model shape opt-125m" predict --model opt-125m --trace "$T" --out "$WORK/bad11"
expect_error "naive needs no trace" "need no trace" predict --model opt-tiny --trace "$T" --policy naive --out "$WORK/bad12"
expect_error "budget below the non-FFN weights" "leaves no DRAM" predict --model opt-tiny --trace "$T" --policy lru --dram-budget 10% --out "$WORK/bad13"
expect_error "bad --use" "unknown use 'guessed'" predict --model opt-tiny --trace "$T" --use guessed --out "$WORK/bad14"
expect_error "missing trace" "cannot read trace" predict --model opt-tiny --trace "$WORK/none.trace" --out "$WORK/bad15"
expect_error "cache policy without trace" "need volumes replayed from a trace (--trace FILE)" predict --policy lru --out "$WORK/bad16"
for d in bad11 bad12 bad13 bad14 bad15 bad16; do
    check "no output for $d" test ! -e "$WORK/$d"
done

# A list of policies: one prediction each, equal to pricing each alone.
same_as_singles() { # list folder, then one folder per policy in order
    python3 - "$@" <<'PY'
import json, sys
lst = json.load(open(sys.argv[1] + "/predict.json"))
one = [json.load(open(d + "/predict.json")) for d in sys.argv[2:]]
preds = lst["predictions"]
ok = len(preds) == len(one) and "prediction" not in lst
for p, o in zip(preds, one):
    ok = ok and p["prediction"] == o["prediction"] == o["predictions"][0]["prediction"]
    ok = ok and p["volume_source"] == o["volume_source"] and p["policy"] == o["predictions"][0]["policy"]
sys.exit(0 if ok else 1)
PY
}
md_rows() { # predict.md, then the policies: one row each in the latency table
    local md=$1 p
    shift
    for p in "$@"; do
        grep -q "^| $p | [0-9.]* | [0-9.]* | [0-9.]* | [0-9.]* | [0-9.]* |\$" "$md" || return 1
    done
}
i=0
for p in lru belady window:5; do
    i=$((i + 1))
    check "predict --trace $p alone" "$FLASHBED" predict --model opt-tiny --trace "$T" --policy $p --layout coalesce:2 \
        --dtype f32 --dram-budget 95% --out "$WORK/one$i"
done
check "predict --trace lru,belady,window:5" "$FLASHBED" predict --model opt-tiny --trace "$T" \
    --policy lru,belady,window:5 --layout coalesce:2 --dtype f32 --dram-budget 95% --out "$WORK/list"
check "list = three single runs, exactly" same_as_singles "$WORK/list" "$WORK/one1" "$WORK/one2" "$WORK/one3"
check "list: policies in order" test "$(json_get "$WORK/list/predict.json" "[p['policy'] for p in d['predictions']]")" = "['lru', 'belady', 'window:5']"
check "list: one Markdown row each" md_rows "$WORK/list/predict.md" lru belady window:5
check "list: one table" test "$(grep -c '^| policy | I/O ms |' "$WORK/list/predict.md")" = 1
i=0
for p in naive predictor window:3; do
    i=$((i + 1))
    check "predict $p alone" "$FLASHBED" predict --policy $p --layout split --out "$WORK/paper_one$i"
done
check "predict naive,predictor,window:3" "$FLASHBED" predict --policy naive,predictor,window:3 --layout split --out "$WORK/paper_list"
check "paper densities: list = single runs" same_as_singles "$WORK/paper_list" "$WORK/paper_one1" "$WORK/paper_one2" "$WORK/paper_one3"
expect_error "lru in a list without a trace" "policy 'lru' is priced from a trace's exact sets only" predict --policy window:5,lru --out "$WORK/bad17"
expect_error "empty element" "policy 2 of 'window:5,' is empty" predict --policy window:5, --out "$WORK/bad18"
expect_error "unknown policy in a list" "unknown policy 'nope'" predict --policy naive,nope --out "$WORK/bad19"
expect_error "empty element with a trace" "policy 2 of 'lru,,belady' is empty" predict --model opt-tiny --trace "$T" --policy lru,,belady --out "$WORK/bad20"
expect_error "--compare with a list" "give one --policy" predict --policy naive,window:5 --compare "$SRC/tests/data/measured_run.json" --out "$WORK/bad21"
for d in bad17 bad18 bad19 bad20 bad21; do
    check "no output for $d" test ! -e "$WORK/$d"
done
finish
