#!/usr/bin/env bash
# flashbed trace synth | info and flashbed replay end to end on a small shape,
# and every bad input: a clear error, non-zero exit, no result left behind.
source "$(dirname "$0")/lib.sh"

T="$WORK/tiny.trace"
OUT="$WORK/replay"
check "synth a tiny trace" "$FLASHBED" trace synth --shape opt-tiny --tokens 40 --prompts 2 --seed 7 --out "$T"
check "trace file exists" test -s "$T"
"$FLASHBED" trace info "$T" > "$WORK/info.txt"
check "info exits 0" test $? -eq 0
check "info shows the shape" grep -q "2 layers, d_model 64, d_ff 256" "$WORK/info.txt"
check "info shows 2 sequences" grep -q "in 2 sequence" "$WORK/info.txt"
check "info shows targets beside achieved" grep -q "| active density, first layer | 1.56% |" "$WORK/info.txt"
check "info says the profile is scaled" grep -q "scaled by relative layer depth" "$WORK/info.txt"
check "info shows s_agg(16)" grep -q "^| 16 |" "$WORK/info.txt"
check "info names the profile" grep -q "^  profile: opt-6.7b$" "$WORK/info.txt"
check "info shows per-layer targets (14 of 256 neurons for 5.36%)" grep -q "^| 2 | 5.36% | 5.47% |" "$WORK/info.txt"

# Another architecture: its own statistics, named in the header and by info.
check "synth phi-tiny" "$FLASHBED" trace synth --shape phi-tiny --tokens 20 --seed 2 --out "$WORK/phi.trace"
"$FLASHBED" trace info "$WORK/phi.trace" > "$WORK/phi.txt"
check "phi info exits 0" test $? -eq 0
check "phi: the Phi-2 profile" grep -q "^  profile: phi-2$" "$WORK/phi.txt"
check "phi: statistics from Phi-2's" grep -q "statistics from: Phi-2 (relufied) profile (paper Fig. 9c" "$WORK/phi.txt"
check "phi: what they rest on" grep -q "profile statistics: Phi-2 relufied. Paper: middle layers densest" "$WORK/phi.txt"
check "phi: predicted 2x" grep -q "| predicted / active | 2.00x |" "$WORK/phi.txt"
# A header from before the profiles (no profile, no per-layer targets) still reads.
python3 - "$WORK/phi.trace" "$WORK/old.trace" <<'EOF'
import json, struct, sys
b = open(sys.argv[1], 'rb').read()
n = struct.unpack_from('<I', b, 44)[0]
src = json.loads(b[48:48 + n])
for k in ('profile', 'profile_source'):
    del src[k]
del src['targets']['density_layers']
new = json.dumps(src, separators=(',', ':')).encode()
open(sys.argv[2], 'wb').write(b[:44] + struct.pack('<I', len(new)) + new + b[48 + n:])
EOF
"$FLASHBED" trace info "$WORK/old.trace" > "$WORK/old.txt"
check "older header: info exits 0" test $? -eq 0
check "older header: no profile line" bash -c "! grep -q '^  profile' '$WORK/old.txt'"
check "older header: no layer targets" grep -q "^| 1 | - | " "$WORK/old.txt"

check "same seed, same trace" bash -c "'$FLASHBED' trace synth --shape opt-tiny --tokens 40 --prompts 2 --seed 7 --out '$WORK/again.trace' && cmp -s '$T' '$WORK/again.trace'"

check "replay runs" "$FLASHBED" replay --trace "$T" --layout split,bundled,friends,coalesce:2 --out "$OUT" --quiet
for f in replay.json replay.csv replay.md; do check "$f written" test -s "$OUT/$f"; done
check "8 policies x 4 layouts" test "$(json_get "$OUT/replay.json" "len(d['results'])")" = 32
check "provenance with parameters" test "$(json_get "$OUT/replay.json" "'parameters' in d['provenance']")" = True
check "result keys" test "$(json_get "$OUT/replay.json" "sorted(k for k in ['policy','layout','bytes_per_token','reads_per_token','hit_ratio','dram_peak_bytes','rows_inserted_per_token','rows_deleted_per_token','events_per_second'] if k in d['results'][0])==sorted(['policy','layout','bytes_per_token','reads_per_token','hit_ratio','dram_peak_bytes','rows_inserted_per_token','rows_deleted_per_token','events_per_second'])")" = True
check "naive reads the whole FFN" test "$(json_get "$OUT/replay.json" "int(d['results'][0]['bytes_per_token'])")" = $((2 * 256 * 2 * 64 * 2))
check "csv has a header and 32 rows" test "$(wc -l < "$OUT/replay.csv")" -eq 33
check "markdown table" grep -q "| window:5 | bundled |" "$OUT/replay.md"
check "actual sets" "$FLASHBED" replay --trace "$T" --policy predictor --layout bundled --use actual --dram-budget 1m --out "$WORK/actual" --quiet
check "budget in bytes recorded" test "$(json_get "$WORK/actual/replay.json" "d['provenance']['parameters']['dram_budget_bytes']")" = 1048576

if command -v gnuplot >/dev/null; then
    check "plots" "$FLASHBED" replay --trace "$T" --policy window:5 --layout bundled --plot --out "$WORK/plots" --quiet
    for f in fig4a.png fig4a.svg bytes_vs_k.png bytes_vs_k.svg window_sweep.csv sagg.csv; do
        check "$f drawn" test -s "$WORK/plots/$f"
    done
    check "window sweep k = 0..16" test "$(wc -l < "$WORK/plots/window_sweep.csv")" -eq 18
    check "trace info plot" "$FLASHBED" trace info "$T" --out "$WORK/info" --plot
    check "trace_info.json" test -s "$WORK/info/trace_info.json"
fi

# Bad inputs.
printf 'not a trace, just text\n' > "$WORK/text.trace"
expect_error "wrong magic" "wrong magic" trace info "$WORK/text.trace"
head -c 300 "$T" > "$WORK/cut.trace"
expect_error "truncated" "cut.trace" trace info "$WORK/cut.trace"
cp "$T" "$WORK/new.trace"
printf '\x07' | dd of="$WORK/new.trace" bs=1 seek=8 conv=notrunc 2>/dev/null
expect_error "newer version" "newer than this flashbed" replay --trace "$WORK/new.trace" --out "$WORK/bad1"
expect_error "missing trace" "cannot read trace" replay --trace "$WORK/none.trace" --out "$WORK/bad2"
expect_error "no --trace" "needs --trace" replay --out "$WORK/bad3"
expect_error "unknown policy" "unknown policy 'fifo'" replay --trace "$T" --policy lru,fifo --out "$WORK/bad4"
expect_error "window without K" "needs a whole number" replay --trace "$T" --policy window --out "$WORK/bad5"
expect_error "window:0" "at least the current token" replay --trace "$T" --policy window:0 --out "$WORK/bad6"
expect_error "unknown layout" "unknown layout" replay --trace "$T" --layout zigzag --out "$WORK/bad7"
expect_error "bad budget" "between 0% and 100%" replay --trace "$T" --dram-budget 150% --out "$WORK/bad8"
expect_error "bad budget size" "dram-budget" replay --trace "$T" --dram-budget 12q --out "$WORK/bad9"
expect_error "bad --use" "'predicted' or 'actual'" replay --trace "$T" --use guessed --out "$WORK/bad10"
expect_error "unknown shape" "trace synth --shape" trace synth --shape opt-99b --out "$WORK/bad.trace"
expect_error "synth without --out" "needs --out" trace synth
expect_error "more prompts than tokens" "at least --prompts" trace synth --shape opt-tiny --tokens 2 --prompts 3 --out "$WORK/bad.trace"
expect_error "trace without subcommand" "needs a subcommand" trace
expect_error "info without file" "needs a trace FILE" trace info
for i in 1 2 3 4 5 6 7 8 9 10; do check "no result folder bad$i" test ! -e "$WORK/bad$i"; done
check "no bad trace written" test ! -e "$WORK/bad.trace"
check "no temporary left" test -z "$(find "$WORK" -name '*.tmp.*')"
finish
