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

# bench_settings NAME ROUNDS OUT: the settings the engine benchmarks share,
# from their arguments and the environment: ROUNDS (5), OUT
# (results/bench-NAME-<time>), FB, SHAPE (opt-1.3b), THREADS (2),
# IO_THREADS (32), GEN (8), BUDGET (50%); exits 2 on a ROUNDS that is not
# a positive number.
bench_settings() {
    ROUNDS=${2:-5}
    OUT=${3:-results/bench-$1-$(date -u +%Y%m%dT%H%M%SZ)}
    FB=build/flashbed
    SHAPE=${SHAPE:-opt-1.3b}
    THREADS=${THREADS:-2}
    IO_THREADS=${IO_THREADS:-32}
    GEN=${GEN:-8}
    BUDGET=${BUDGET:-50%}
    [ "$ROUNDS" -ge 1 ] 2>/dev/null || { echo "ROUNDS must be a positive number (5 or more for medians)" >&2; exit 2; }
}
