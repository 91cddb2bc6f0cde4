#!/usr/bin/env bash
# trace synth --like: a synthetic twin of a recorded trace copies its
# active density per layer, its tokens, sequences and prompt tokens, and
# writes predicted sets only where the recorded trace has them; replay runs
# on both (issue 48's real-against-synthetic comparison).
source "$(dirname "$0")/lib.sh"
M="$WORK/opt-tiny"
check "make a tiny OPT" "$FLASHBED" model make --arch opt --shape opt-tiny --relu-density 0.2 --out "$WORK/hf"
check "convert it" "$FLASHBED" convert "$WORK/hf" --out "$M"
check "record its true activations" "$FLASHBED" run --model "$M" --mode all --prompt "Once upon a time" -n 24 \
    --ignore-eos --quiet --record "$WORK/real.trace" --out "$WORK/rec"
check "its twin" "$FLASHBED" trace synth --shape opt-tiny --like "$WORK/real.trace" --out "$WORK/twin.trace"
"$FLASHBED" trace info "$WORK/real.trace" > "$WORK/real.txt"
"$FLASHBED" trace info "$WORK/twin.trace" > "$WORK/twin.txt"
tokens() { grep '^  tokens:' "$1"; }
check "the twin has the recorded tokens, prompt tokens and sequences" test "$(tokens "$WORK/real.txt")" = "$(tokens "$WORK/twin.txt")"
# each layer's set sizes are the rounded density: equal to within one neuron (of 256) per layer
check "the twin's density per layer is the recorded one" python3 - "$WORK/real.txt" "$WORK/twin.txt" <<'PY'
import re, sys
def dens(p):
    t = open(p).read().split("density per layer")[1].split("\n\n")[0]
    return [float(r.split("|")[3].strip().rstrip("%")) for r in t.strip().split("\n")[2:]]
a, b = dens(sys.argv[1]), dens(sys.argv[2])
sys.exit(0 if len(a) == len(b) == 2 and all(abs(x - y) <= 100 / 256 for x, y in zip(a, b)) else 1)
PY
check "a recorded trace without predicted sets: a twin without them" grep -q "^  predicted sets: no" "$WORK/twin.txt"
check "the header names the recorded trace" grep -q "\"like\":\"$WORK/real.trace\"" "$WORK/twin.txt"
check "the targets are the recorded densities" grep -q "^| active density, mean | [0-9.]*% | [0-9.]*% |" "$WORK/twin.txt"
check "no paper window target for a twin" bash -c "! grep -q 'window of 5 tokens holds' '$WORK/twin.txt'"
check "replay runs on the twin" "$FLASHBED" replay --trace "$WORK/twin.trace" --policy lru --layout bundled \
    --dram-budget 50% --quiet --out "$WORK/replay-twin"

# --fit: the generator's reuse knobs fitted to the recorded trace's; the
# search starts from the knobs given and keeps only improvements
"$FLASHBED" trace synth --shape opt-tiny --like "$WORK/real.trace" --fit --out "$WORK/fit.trace" 2> "$WORK/fit.err"
check "a fitted twin" test -s "$WORK/fit.trace"
check "the fit is printed" grep -q "fitted to $WORK/real.trace's reuse: --zipf [0-9.]* --recur [0-9.]* --recur-decay [0-9.]*" "$WORK/fit.err"
check "no worse than the knobs given" python3 -c "
import re, sys
a, b = map(float, re.search(r'now ([0-9.]+) from it .*, ([0-9.]+) with the knobs given', open(sys.argv[1]).read()).groups())
sys.exit(0 if a <= b else 1)" "$WORK/fit.err"
check "the header says it was fitted" bash -c "'$FLASHBED' trace info '$WORK/fit.trace' | grep -q '\"reuse_fitted\":true'"
EXPECT_RC=2 expect_error "--fit without --like" "needs --like" trace synth --shape opt-tiny --fit --out "$WORK/no.trace"

# a synthetic trace with predicted sets: its twin keeps them at the same ratio
check "a trace with predicted sets" "$FLASHBED" trace synth --shape opt-tiny --tokens 40 --prompts 2 --out "$WORK/syn.trace"
check "its twin" "$FLASHBED" trace synth --shape opt-tiny --like "$WORK/syn.trace" --out "$WORK/syn-twin.trace"
"$FLASHBED" trace info "$WORK/syn-twin.trace" > "$WORK/syn-twin.txt"
check "predicted sets kept" grep -q "^  predicted sets: yes" "$WORK/syn-twin.txt"
check "40 tokens in 2 sequences" grep -q "^  tokens: 40 .* in 2 sequence" "$WORK/syn-twin.txt"

expect_error "a trace of another shape" "d_ff" trace synth --shape opt-125m --like "$WORK/real.trace" \
    --out "$WORK/no.trace"
check "nothing written" test ! -e "$WORK/no.trace"
expect_error "a missing trace" "$WORK/missing.trace" trace synth --shape opt-tiny --like "$WORK/missing.trace" \
    --out "$WORK/no.trace"
finish
