#!/usr/bin/env bash
# SmolLM2-135M-Instruct (Q4_1 matrices, a Q8_0 embedding; shared data)
# through the flash path: `flashbed run --mode all` (the oracle at
# threshold 0, the FFN read from ffn.bin's f16 bundles through the neuron
# cache) generates dense decode's greedy tokens (generate, on the stored
# blocks) for the first five tokens of a fixed prompt, where the winner
# leads by 0.92 or more; the sixth is a near tie (0.068) the two
# arithmetics may break apart. model.json's name is the file's general.name.
source "$(dirname "$0")/lib.sh"

GGUF="$FLASHBED_DATA/models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf"
if [ ! -f "$GGUF" ]; then
    echo "skipped: SmolLM2 not found under FLASHBED_DATA=$FLASHBED_DATA"
    exit 77
fi
LOG="$WORK/last.log"
logged() { # a command whose output is shown only when it fails
    "$@" > "$LOG" 2>&1 || { cat "$LOG" >&2; return 1; }
}
M="$WORK/smol"
P="The capital of France is"
check "convert" logged "$FLASHBED" convert "$GGUF" --out "$M"
check "model.json's name is general.name" \
    test "$(json_get "$M/model.json" 'd["name"]')" = "Smollm2 135M 8k Lc100K Mix1 Ep2"
check "generate" logged "$FLASHBED" generate --model "$M" --prompt "$P" -n 5 --temperature 0 --threads 2 \
    --json "$WORK/gen.json"
want=$(json_get "$WORK/gen.json" '" ".join(str(t["id"]) for t in d["tokens"])')
# -n 6: a run lists the tokens it forwarded, every one it generated but the last
check "run --mode all" logged "$FLASHBED" run --model "$M" --mode all --prompt "$P" -n 6 --ignore-eos --threads 2 \
    --quiet --out "$WORK/run"
got=$(awk -F, '$3 == "generated" { printf "%s%s", sep, $2; sep = " " }' "$WORK/run/tokens.csv")
check "the flash run's tokens are generate's ($want; got $got)" test "$got" = "$want"
check "five of them" test "$(wc -w <<<"$want")" = 5
finish
