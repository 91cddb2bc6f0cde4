# Table 3's GPU rows for tools/gpu-check.sh (sourced; issue 31): gpu_rows
# uses the caller's step (a PASS/FAIL row per command), $fb (flashbed),
# $backend, $tiny and $out, and writes $out/gpu-rows.md: the device's
# calibration, this machine's disk, and naive and all at half the model on
# OPT-6.7B's and OPT-1.3B's shapes, measured beside the cost model on the
# calibrated profile and beside the paper's RTX 4090 rows (2218 ms naive,
# 84 ms all). GPU_CHECK_TINY=1: opt-tiny and an 8 MiB disk sweep, seconds.

# One shape's model (synthetic f16 weights, ReLU firing 5%) and trace.
gpu_model() {
    local shape=$1 w="$out/work"
    step "model make $shape (f16)" "$fb" model make --arch opt --shape "$shape" --dtype f16 --relu-density 0.05 \
        --seed 1 --out "$w/$shape-hf"
    step "convert $shape" "$fb" convert "$w/$shape-hf" --out "$w/$shape" --dtype f16
    rm -rf "$w/$shape-hf"
    step "trace synth $shape" "$fb" trace synth --shape "$shape" --tokens 64 --seed 1 --out "$w/$shape.trace"
}

# naive and all on the device at the paper's budget, each priced on the profile.
gpu_runs() {
    local shape=$1 w="$out/work" budget=50% allow=()
    local prompt="the quick brown fox jumps over the lazy dog 1 the quick brown fox jumps over the lazy dog 2"
    [[ $shape == *-tiny ]] && budget=75% # two layers: one layer's staging does not fit in half
    [ "$emulated" = True ] && allow=(--allow-emulated)
    step "run $shape naive --backend $backend" "$fb" run --model "$w/$shape" --backend "$backend" --mode naive \
        --active "trace:$w/$shape.trace" --prompt "$prompt" --prompt-tokens 4 -n 4 --cold 1 --ignore-eos --quiet \
        --out "$out/runs/$shape-naive"
    step "run $shape all --backend $backend" "$fb" run --model "$w/$shape" --backend "$backend" --mode all --window 5 \
        --active "trace:$w/$shape.trace" --dram-budget $budget --prompt "$prompt" --prompt-tokens 8 -n 8 --cold 5 \
        --ignore-eos --quiet --out "$out/runs/$shape-all"
    step "predict $shape naive" "$fb" predict --model "$shape" --hw "$out/hw-$backend.json" "${allow[@]}" --dtype f16 \
        --policy naive --dram-budget $budget --predictor-rank none --out "$out/runs/$shape-naive-predict"
    step "predict $shape all" "$fb" predict --model "$shape" --hw "$out/hw-$backend.json" "${allow[@]}" --dtype f16 \
        --policy window:5 --layout bundled --dram-budget $budget --trace "$w/$shape.trace" --predictor-rank none \
        --out "$out/runs/$shape-all-predict"
}

# The rows' Markdown from the result files.
gpu_rows_md() {
    python3 - "$out" "$backend" "$@" <<'PY'
import json, os, sys
out, backend, shapes = sys.argv[1], sys.argv[2], sys.argv[3:]
def load(p):
    try:
        return json.load(open(p))
    except (OSError, ValueError):
        return None
hw = load(f"{out}/hw-{backend}.json") or {}
fl, dev = hw.get("flash", {}), hw.get("device", {})
pts = [p for p in fl.get("points", []) if p["chunk_bytes"] == 16384]
rand = max((p["bw_bytes"] for p in pts), default=None)
print(f"## Table 3's GPU rows: {backend}" + (" (emulated device: a check of the pipeline, not a GPU timing)" if hw.get("emulated") else ""))
print()
print(f"- device: {dev.get('name', 'not calibrated')}; calibrated profile `hw-{backend}.json`")
print(f"- this machine's disk (swept here, O_DIRECT): sequential {fl.get('sequential_bw', 0) / 1e9:.2f} GB/s, "
      + (f"16 KiB random reads {rand / 1e9:.2f} GB/s (best over threads)" if rand else "no 16 KiB point")
      + "; not the paper's SSD (M1 Max: 6.1 GB/s sequential, 2.25 GB/s at 16 KiB)")
print()
print("| model | mode | measured ms/token | I/O (exposed) | reads' whole time | mem | compute | uploaded MB/token | uploads' device ms | modelled ms/token (serial + device) | paper RTX 4090 (OPT-6.7B) |")
print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
paper = {"naive": 2218, "all": 84}
for shape in shapes:
    for mode in ("naive", "all"):
        run = (load(f"{out}/runs/{shape}-{mode}/run.json") or {}).get("summary")
        pred = load(f"{out}/runs/{shape}-{mode}-predict/predict.json")
        p = pred["predictions"][0]["prediction"] if pred else {}
        model = p.get("device", {}).get("total_ms", p.get("serial_total_ms"))
        keys = ("total_ms", "io_ms", "read_ms", "mem_ms", "compute_ms")
        m = [f"{run[k]:.1f}" if k in run else "—" for k in keys] if run else ["not run"] + [""] * 4
        up = f"{run['h2d_bytes'] / 1e6:.1f}" if run and "h2d_bytes" in run else "—"
        h2d = f"{run['h2d_ms']:.2f}" if run and "h2d_ms" in run else "—"
        print(f"| {shape} | {mode} | " + " | ".join(m) + f" | {up} | {h2d} | " + (f"{model:.1f}" if model is not None else "—")
              + f" | {paper[mode]} |")
print()
print("Measured: the steady tokens' mean (run.json's summary; I/O: the reads the token still waited for after the "
      "device had finished its work, the rest of their whole time overlapped it; the uploads' device ms: timed "
      "by events); modelled: `predict` on the calibrated profile "
      "(its device terms included). The paper's numbers are its RTX 4090 with its SSD, for OPT-6.7B; the "
      "weights here are synthetic (the shape, not the checkpoint).")
PY
}

gpu_rows() {
    # the small shape first: on a machine lent for minutes, it is measured
    # even when OPT-6.7B's 13 GB (made, then converted) do not fit the time
    local shapes=${GPU_CHECK_SHAPES:-opt-1.3b opt-6.7b} t0=$SECONDS
    [ "$tiny" = 1 ] && shapes=opt-tiny
    mkdir -p "$out/work" "$out/runs"
    if [ "$tiny" = 1 ]; then # a tiny sweep of the disk: seconds, not calibrate's own minute
        step "sweep the disk (8 MiB)" "$fb" sweep --file "$out/work/scratch.bin" --size 8m --chunks 8k,16k,64k \
            --threads 1,2 --runtime 0.05 --ramp 0 --out "$out/work/sweep"
        rm -f "$out/work/scratch.bin"
        step "calibrate --backend $backend" "$fb" calibrate --quick --backend "$backend" \
            --sweep "$out/work/sweep/sweep.json" --name "gpu-check-$backend" --out "$out/hw-$backend.json"
    else
        step "calibrate --backend $backend (and this disk)" "$fb" calibrate --quick --backend "$backend" \
            --name "gpu-check-$backend" --out "$out/hw-$backend.json"
    fi
    emulated=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("emulated", False))' \
        "$out/hw-$backend.json" 2>/dev/null || echo False)
    for shape in $shapes; do
        gpu_model "$shape"
        gpu_runs "$shape"
        rm -rf "${out:?}/work/$shape" # the weights: gigabytes, not kept
    done
    gpu_rows_md $shapes >"$out/gpu-rows.md"
    echo "GPU rows took $((SECONDS - t0)) s." >>"$out/gpu-rows.md"
    echo >>"$out/gpu-rows.md"
}
