#!/usr/bin/env bash
# One rule for where a machine's profile lives (issue 47, sim/hw_choice.h):
# calibrate writes results/hw-HOST.json by default, --name or not, and
# replay and predict, without --hw, find it there; README's third use
# follows the rule (no --out, no --hw).
source "$(dirname "$0")/lib.sh"
mkdir -p "$WORK/cwd"
cd "$WORK/cwd" || exit 1

check "a sweep" "$FLASHBED" sweep --file "$WORK/d.bin" --size 4m --chunks 4k,16k,64k --threads 1,2 --runtime 0.05 \
    --ramp 0 --engine null --out "$WORK/sweep"
out=$("$FLASHBED" calibrate --sweep "$WORK/sweep/sweep.json" --quick --name labelled 2>&1)
check "calibrate without --out: $out" test $? -eq 0
made=$(ls results/hw-*.json 2>/dev/null)
check "it wrote one profile in results/: $made" test "$(wc -w <<<"$made")" = 1
check "... named after the host, not --name" test "$made" != "results/hw-labelled.json"
check "... and said where" grep -qF "profile written to $made" <<<"$out"
check "the profile keeps --name as its name" test "$(json_get "$made" 'd["name"]')" = labelled

check "a trace" "$FLASHBED" trace synth --shape opt-tiny --tokens 16 --out t.trace
out=$("$FLASHBED" predict --model opt-tiny --dtype f16 --policy window:5 --out pred 2>&1)
check "predict without --hw: $out" test $? -eq 0
check "predict priced by it" test "$(json_get pred/predict.json 'd["provenance"]["parameters"]["hw"]')" = "$made"
check "predict said so" grep -qF "Priced by this machine's own profile, labelled ($made)" <<<"$out"
check "replay without --hw" "$FLASHBED" replay --trace t.trace --policy naive --layout bundled --dram-budget 25% \
    --out rep --quiet
check "replay priced by it" test "$(json_get rep/replay.json 'd["pricing"]["hw_path"]')" = "$made"
check "predict --hw still wins" "$FLASHBED" predict --model opt-tiny --hw m1max-cpu --out pred2
check "... named" test "$(json_get pred2/predict.json 'd["provenance"]["parameters"]["hw"]')" = m1max-cpu

# Elsewhere (no profile there), the paper's machine, and how to make one.
mkdir -p "$WORK/other"
out=$(cd "$WORK/other" && "$FLASHBED" predict --model opt-tiny --out pred 2>&1)
check "no profile: m1max-cpu, and where calibrate would put one" grep -qF \
    "\`flashbed calibrate --quick\` measures this machine into $made (about a minute), which replay and predict then price with" \
    <<<"$out"

# README's third use follows the rule: calibrate without --out, predict without --hw.
README="$FLASHBED_SOURCE/README.md"
third=$(awk '/^### 3\./ {on = 1} on && /^```sh/ {c = 1; next} c && /^```/ {exit} c' "$README")
check "README's third use calibrates" grep -q "flashbed calibrate" <<<"$third"
check "README's third use writes where replay and predict look (no --out)" test -z "$(grep -- '--out results/hw' <<<"$third")"
check "README's third use names no other profile (no --hw)" test -z "$(grep -- '--hw' <<<"$third")"
finish
