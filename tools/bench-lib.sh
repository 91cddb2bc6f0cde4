# Shared by the tools/bench-*.sh scripts (sourced, from the repository root).

# bench_model FB SHAPE: prints results/bench-models/SHAPE, the synthetic f16
# model of that shape (its architecture from configs/models/SHAPE.json),
# making it (flashbed model make + convert) when missing, or anew when it
# has no checksums (written before flashbed recorded them: run --verify would
# check nothing). FFNs with biases
# get 5% of neurons firing; Falcon and Llama have none to set it with.
bench_model() {
    local fb=$1 shape=$2 model=results/bench-models/$2 arch density=()
    [ -x "$fb" ] || { echo "build flashbed first (tools/run-default.sh or cmake)" >&2; return 2; }
    arch=$(bench_shape_key "$shape" arch) || return 2
    case $arch in opt|persimmon|phi) density=(--relu-density 0.05) ;; esac
    mkdir -p results/bench-models
    if [ ! -f "$model/model.json" ] || ! grep -q '"checksums"' "$model/model.json"; then
        rm -rf "$model"
        "$fb" model make --arch "$arch" --shape "$shape" --dtype f16 "${density[@]}" --seed 1 --out "$model-hf" >&2
        "$fb" convert "$model-hf" --out "$model" --dtype f16 >&2
        rm -rf "$model-hf"
    fi
    echo "$model"
}

# bench_prompt FILE N: a prompt of N numbered phrases, long enough for any
# --prompt-tokens of the synthetic vocabulary.
bench_prompt() {
    for i in $(seq 1 "$2"); do printf 'the quick brown fox jumps over the lazy dog %d ' "$i"; done > "$1"
}

# bench_shape_key SHAPE KEY: prints configs/models/SHAPE.json's KEY.
bench_shape_key() {
    python3 -c "import json, sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])" "configs/models/$1.json" "$2"
}
