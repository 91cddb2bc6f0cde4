# Shared by the tools/bench-*.sh scripts (sourced, from the repository root).

# bench_model FB SHAPE: prints results/bench-models/SHAPE, the synthetic f16
# model of that shape, making it (flashbed model make + convert) when missing.
bench_model() {
    local fb=$1 shape=$2 model=results/bench-models/$2
    [ -x "$fb" ] || { echo "build flashbed first (tools/run-default.sh or cmake)" >&2; return 2; }
    mkdir -p results/bench-models
    if [ ! -f "$model/model.json" ]; then
        "$fb" model make --arch opt --shape "$shape" --dtype f16 --relu-density 0.05 --seed 1 --out "$model-hf" >&2
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
