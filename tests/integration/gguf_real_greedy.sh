#!/usr/bin/env bash
# The two real GGUF models' greedy continuations against llama.cpp's (issue
# 46): tests/data/gguf/real/*.json hold llama.cpp's 32 greedy ids for four
# prompts (the prompts' ids as llama.cpp tokenized them) and its top-2 margin
# at each step. flashbed's `generate --temperature 0` from the same ids must
# agree until the first step at which llama.cpp's winner leads by less than
# 0.3 (block types' logits differ from llama.cpp's by up to 0.34 on the tiny
# fixtures: 8-bit activation rounding), and where the two part, llama.cpp's
# margin there must be under 0.3: a near tie, not a wrong computation.
# SmolLM2 from the shared data, Gemma 3 270M from .models (tools/fetch-models.sh);
# each model absent is skipped, saying so; both absent: the test skips.
source "$(dirname "$0")/lib.sh"

REF="$FLASHBED_SOURCE/tests/data/gguf/real"
models=(
    "smollm2-135m-q4_1|$FLASHBED_DATA/models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf"
    "gemma3-270m-q4_k_m|$FLASHBED_SOURCE/.models/gemma3-270m/gemma-3-270m-q4_k_m.gguf"
)
ran=0
logged() { # a command whose output is shown only when it fails
    "$@" >"$WORK/last.log" 2>&1 || { cat "$WORK/last.log" >&2; return 1; }
}
for entry in "${models[@]}"; do
    name=${entry%%|*} gguf=${entry#*|}
    if [ ! -f "$gguf" ]; then
        echo "$name: skipped: $gguf not found"
        continue
    fi
    ran=$((ran + 1))
    check "$name: convert" logged "$FLASHBED" convert "$gguf" --out "$WORK/$name"
    for i in 0 1 2 3; do
        json_get "$REF/$name.json" "' '.join(map(str, d['greedy']['runs'][$i]['prompt_ids']))" >"$WORK/$name-$i.ids"
        check "$name prompt $i: generate" logged "$FLASHBED" generate --model "$WORK/$name" --prompt-ids "$WORK/$name-$i.ids" \
            -n 32 --temperature 0 --threads 2 --json "$WORK/$name-$i.json"
        verdict=$(python3 - "$REF/$name.json" "$i" "$WORK/$name-$i.json" <<'PY'
import json, sys
run = json.load(open(sys.argv[1]))['greedy']['runs'][int(sys.argv[2])]
got = [t['id'] for t in json.load(open(sys.argv[3]))['tokens']]
want, margin = run['greedy_ids'], run['margins']
part = next((k for k in range(len(want)) if k >= len(got) or got[k] != want[k]), None)
tie = next((k for k in range(len(want)) if margin[k] < 0.3), len(want))
if part is None:
    print(f"ok: all {len(want)} equal")
elif margin[part] < 0.3:
    print(f"ok: equal for {part}, then a near tie (llama.cpp margin {margin[part]:.3f})")
else:
    print(f"FAIL: parts at step {part} where llama.cpp leads by {margin[part]:.3f} (first near tie at step {tie})")
PY
        )
        echo "$name prompt $i: $verdict"
        check "$name prompt $i: $verdict" test "${verdict%%:*}" = ok
    done
done
[ $ran -eq 0 ] && { echo "skipped: neither real model found"; exit 77; }
finish
