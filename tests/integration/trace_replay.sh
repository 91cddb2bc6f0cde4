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
# layers numbered from 0, as the trace format, its errors, export and the
# model's tensors number them (issue 47: trace info alone counted from 1)
check "info shows per-layer targets (14 of 256 neurons for 5.36%), the last layer as 1" \
    grep -q "^| 1 | 5.36% | 5.47% |" "$WORK/info.txt"
check "info's density table numbers the layers 0 and 1" \
    test "$(awk '/^\| layer \| target/{p=1;next} p&&/^\|---/{next} p&&/^\|/{printf "%s ", $2; next} p{exit}' "$WORK/info.txt")" = "0 1 "
# The hot tenth's share judged against uniform draws of the same set sizes
# (issue 47: it said "power law: well above 10%" whatever the share): a
# trace without popularity (--zipf 0 --recur 0) is no more than chance.
check "info judges the calibrated trace concentrated" grep -q "give [0-9.]*%: concentrated$" "$WORK/info.txt"
check "synth a trace without popularity" "$FLASHBED" trace synth --shape opt-tiny --tokens 64 --zipf 0 --recur 0 \
    --out "$WORK/flat.trace"
"$FLASHBED" trace info "$WORK/flat.trace" > "$WORK/flat.txt"
check "info calls it no more than chance" grep -q "%: no more than chance$" "$WORK/flat.txt"
check "and claims no power law" bash -c "! grep -q 'power law' '$WORK/flat.txt'"

# Another architecture: its own statistics, named in the header and by info.
check "synth phi-tiny" "$FLASHBED" trace synth --shape phi-tiny --tokens 20 --seed 2 --out "$WORK/phi.trace"
"$FLASHBED" trace info "$WORK/phi.trace" > "$WORK/phi.txt"
check "phi info exits 0" test $? -eq 0
check "phi: the Phi-2 profile" grep -q "^  profile: phi-2$" "$WORK/phi.txt"
check "phi: statistics from Phi-2's" grep -q "statistics from: Phi-2 (relufied) profile (paper Fig. 9c" "$WORK/phi.txt"
check "phi: what they rest on" grep -q "profile statistics: Phi-2 relufied. Paper: middle layers densest" "$WORK/phi.txt"
check "phi: predicted 2x" grep -q "| predicted / active | 2.00x |" "$WORK/phi.txt"
# A header from before the profiles (no profile, no per-layer targets) still
# reads: rewritten here with the header's CRC-32C (format version 3: a fixed header of 56 bytes) redone.
python3 - "$WORK/phi.trace" "$WORK/old.trace" <<'EOF'
import json, struct, sys
def crc32c(data):
    c = 0xFFFFFFFF
    for byte in data:
        c ^= byte
        for _ in range(8):
            c = (c >> 1) ^ (0x82F63B78 if c & 1 else 0)
    return c ^ 0xFFFFFFFF
b = open(sys.argv[1], 'rb').read()
n = struct.unpack_from('<I', b, 52)[0]
src = json.loads(b[56:56 + n])
for k in ('profile', 'profile_source'):
    del src[k]
del src['targets']['density_layers']
new = json.dumps(src, separators=(',', ':')).encode()
header = b[:52] + struct.pack('<I', len(new)) + new
open(sys.argv[2], 'wb').write(header + struct.pack('<I', crc32c(header)) + b[56 + n + 4:])
EOF
"$FLASHBED" trace info "$WORK/old.trace" > "$WORK/old.txt"
check "older header: info exits 0" test $? -eq 0
check "older header: no profile line" bash -c "! grep -q '^  profile' '$WORK/old.txt'"
check "older header: no layer targets" grep -q "^| 1 | - | " "$WORK/old.txt"

# Format version 3: checked, its checksums' cost stated; version 1 (the
# committed file the version 1 writer wrote) still reads, unchecked.
check "version 3, checked" grep -q "^  format version 3 (CRC-32C per token and layer: checked), [0-9]* bytes ([0-9.]* bits per recorded neuron, [0-9.]* of them checksums" "$WORK/info.txt"
V1="${FLASHBED_SOURCE:-$(dirname "$0")/../..}/tests/data/trace_v1.trace"
"$FLASHBED" trace info "$V1" --out "$WORK/v1-info" > "$WORK/v1.txt"
check "version 1: info exits 0" test $? -eq 0
check "version 1: unchecked" grep -q "^  format version 1 (no checksums: unchecked), 1449 bytes" "$WORK/v1.txt"
check "version 1: json says so" test "$(json_get "$WORK/v1-info/trace_info.json" "(d['format_version'], d['checked'], d['check_bits_per_neuron'])")" = "(1, False, 0)"
check "version 1 replays" "$FLASHBED" replay --trace "$V1" --policy window:5 --layout bundled --out "$WORK/v1-replay" --quiet
# s_agg(k) stops at the longest sequence: 10 tokens, no k = 11 row of 0%
# and a negative increment.
check "synth 10 tokens" "$FLASHBED" trace synth --shape opt-tiny --tokens 10 --out "$WORK/ten.trace"
"$FLASHBED" trace info "$WORK/ten.trace" --out "$WORK/ten" > "$WORK/ten.txt"
check "10 tokens: info exits 0" test $? -eq 0
check "10 tokens: s_agg up to k = 10" grep -q "^| 10 | " "$WORK/ten.txt"
check "10 tokens: no k = 11" bash -c "! grep -q '^| 11 | ' '$WORK/ten.txt'"
check "10 tokens: says why" grep -q "k up to 10: no sequence of this trace is longer" "$WORK/ten.txt"
check "10 tokens: no negative increment" bash -c "! grep -q -- '-[0-9.]*%' '$WORK/ten.txt'"
check "10 tokens: json arrays of 10" test "$(json_get "$WORK/ten/trace_info.json" "(len(d['sagg_active']), len(d['sagg_predicted']), d['format_version'], d['checked'])")" = "(10, 10, 3, True)"
check "10 tokens: sagg.csv rows 1..10" test "$(wc -l < "$WORK/ten/sagg.csv")" -eq 11
# 2 sequences of 3 tokens: no 5-token window, so no value for its targets
check "synth 2 x 3 tokens" "$FLASHBED" trace synth --shape opt-tiny --tokens 6 --prompts 2 --out "$WORK/six.trace"
"$FLASHBED" trace info "$WORK/six.trace" --out "$WORK/six" > "$WORK/six.txt"
check "2 x 3 tokens: window of 5 not measured" grep -q "| window of 5 tokens holds (predicted) | 24.00% | - |" "$WORK/six.txt"
check "2 x 3 tokens: null in json" test "$(json_get "$WORK/six/trace_info.json" "[c['achieved'] for c in d['calibration'] if c['statistic'] == 'window5_pred']")" = "[None]"

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

# A budget study (issue 16, step 4): every policy x layout at each budget,
# priced in ms per token, infeasible rows marked, friends beside bundled.
B="$WORK/budgets"
check "budget list runs" "$FLASHBED" replay --trace "$T" --layout bundled,friends --dram-budget 10%,50% --plot --hw m1max-cpu --out "$B" --quiet
check "budget list: 2 budgets x 8 policies x 2 layouts" test "$(json_get "$B/replay.json" "len(d['results'])")" = 32
check "budget list: csv header and 32 rows" test "$(wc -l < "$B/replay.csv")" -eq 33
check "budget list: csv columns" bash -c "head -1 '$B/replay.csv' | grep -q ',dram_budget,dram_budget_bytes,dram_budget_share,budget_rows_per_layer,max_needed_rows_per_layer,feasible,infeasible,io_ms,mem_ms,compute_ms,total_ms,'"
check "budget list: a row per budget, policy and layout" test "$(json_get "$B/replay.json" "sorted(set((r['dram_budget'], r['policy'], r['layout']) for r in d['results'])) == sorted((b, p, l) for b in ['10%','50%'] for p in ['naive','hybrid','predictor','window:5','lru','lfu','hot','belady'] for l in ['bundled','friends'])")" = True
check "budget list: bytes and share" test "$(json_get "$B/replay.json" "[(b['given'], b['bytes'], b['share_of_ffn']) for b in d['dram_budgets']]")" = "[('10%', 13107, 0.1), ('50%', 65536, 0.5)]"
check "budget list: each row priced" test "$(json_get "$B/replay.json" "all(r['total_ms'] > 0 and abs(r['io_ms'] + r['mem_ms'] + r['compute_ms'] - r['total_ms']) < 1e-9 for r in d['results'])")" = True
check "budget list: the profile named" test "$(json_get "$B/replay.json" "d['pricing']['hw_profile']")" = m1max-cpu
# 10% of opt-tiny's FFN is 25 rows a layer; its predicted sets need up to 41
check "budget list: predictor infeasible at 10%, feasible at 50%" test "$(json_get "$B/replay.json" "[(r['dram_budget'], r['feasible']) for r in d['results'] if r['policy'] == 'predictor' and r['layout'] == 'bundled']")" = "[('10%', False), ('50%', True)]"
check "budget list: naive never infeasible" test "$(json_get "$B/replay.json" "all(r['feasible'] for r in d['results'] if r['policy'] in ('naive', 'hybrid'))")" = True
check "budget list: infeasible marked in the markdown" grep -q "^| 10% | predictor | bundled | .* | infeasible: a token needs up to [0-9]* rows in one layer; the budget holds 25 per layer |$" "$B/replay.md"
check "budget list: infeasible marked in the csv" grep -q "^predictor,bundled,.*,10%,13107,0.1,25,[0-9]*,false,a token needs up to" "$B/replay.csv"
check "budget list: modelled ms in the markdown" grep -q "^## Modelled time per token: m1max-cpu profile" "$B/replay.md"
# friends on a synthetic trace: about twice bundled's bytes, said beside the result
check "friends note in the markdown" grep -q "^- window:5 at 10%: friends reads [0-9.]*x the bytes per token of bundled: synthetic traces have no co-activation structure" "$B/replay.md"
check "friends note in the json" test "$(json_get "$B/replay.json" "all(r['friends_bytes_over_bundled'] > 1.3 and r['friends_note'].endswith('synthetic traces have no co-activation structure') for r in d['results'] if r['layout'] == 'friends')")" = True
check "friends notes listed" test "$(json_get "$B/replay.json" "len(d['notes'])")" = 16
if command -v gnuplot >/dev/null; then
    for f in budget_bytes budget_ms budget_reads; do
        for e in png svg; do check "$f.$e drawn" test -s "$B/$f.$e"; done
    done
    check "plot title names the trace and profile" grep -q "opt-tiny shape (2 layers, d_model 64, d_ff 256), synthetic trace; m1max-cpu profile (f32)" "$B/budget_ms.svg"
    check "plot labels the paper's k" grep -q "window:5 (k = 4), bundled" "$B/budget_bytes.svg"
else
    echo "gnuplot is not installed: the budget plots are not checked"
fi
# A budget of 0 binds: window keeps nothing (the predictor's reads), infeasible
check "budget 0" "$FLASHBED" replay --trace "$T" --policy predictor,window:5,hybrid --layout bundled --dram-budget 0,100% --out "$WORK/zero" --quiet
check "budget 0: window reads what the predictor reads" test "$(json_get "$WORK/zero/replay.json" "[r['bytes_total'] for r in d['results'][:2]]" | python3 -c "import sys; a = eval(sys.stdin.read()); print(a[0] == a[1])")" = True
check "budget 0: marked" test "$(json_get "$WORK/zero/replay.json" "[(r['policy'], r['feasible']) for r in d['results'] if r['dram_budget'] == '0']")" = "[('predictor', False), ('window:5', False), ('hybrid', True)]"
check "budget 100%: hybrid reads nothing" test "$(json_get "$WORK/zero/replay.json" "d['results'][5]['bytes_total']")" = 0

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
# A flipped bit is damage, reported where it lies: the header, a token's layer, the end marker.
flip() { # file, byte offset, copy
    cp "$1" "$3"
    python3 -c "import sys; f=open(sys.argv[1],'r+b'); f.seek(int(sys.argv[2])); b=f.read(1); f.seek(int(sys.argv[2])); f.write(bytes([b[0]^4]))" "$3" "$2"
}
flip "$T" 30 "$WORK/flip-header.trace"
expect_error "flipped header bit" "flip-header.trace: header checksum mismatch" trace info "$WORK/flip-header.trace"
size=$(stat -c %s "$T")
flip "$T" $((size - 200)) "$WORK/flip-body.trace"
expect_error "flipped body bit" "flip-body.trace: token [0-9]* layer [01]: checksum mismatch (stored 0x[0-9a-f]*, computed 0x[0-9a-f]*): the file is damaged" replay --trace "$WORK/flip-body.trace" --out "$WORK/bad11"
flip "$T" $((size - 10)) "$WORK/flip-end.trace"
expect_error "flipped end marker bit" "flip-end.trace: end marker checksum mismatch" trace info "$WORK/flip-end.trace"
expect_error "no --trace" "needs --trace" replay --out "$WORK/bad3"
expect_error "unknown policy" "unknown policy 'fifo'" replay --trace "$T" --policy lru,fifo --out "$WORK/bad4"
expect_error "window without K" "needs a whole number" replay --trace "$T" --policy window --out "$WORK/bad5"
expect_error "window:0" "at least the current token" replay --trace "$T" --policy window:0 --out "$WORK/bad6"
expect_error "unknown layout" "unknown layout" replay --trace "$T" --layout zigzag --out "$WORK/bad7"
expect_error "bad budget" "between 0% and 100%" replay --trace "$T" --dram-budget 150% --out "$WORK/bad8"
expect_error "bad budget size" "dram-budget" replay --trace "$T" --dram-budget 12q --out "$WORK/bad9"
expect_error "bad --use" "'predicted' or 'actual'" replay --trace "$T" --use guessed --out "$WORK/bad10"
expect_error "empty budget in a list" "replay --dram-budget '10%,,50%': budget 2 is empty" replay --trace "$T" --dram-budget 10%,,50% --out "$WORK/bad12"
expect_error "budget over 100% in a list" "replay --dram-budget '10%,200%': budget 2: a share lies between 0% and 100%, not 200%" replay --trace "$T" --dram-budget 10%,200% --out "$WORK/bad13"
expect_error "unknown --hw" "replay --hw 'no-such-box': hardware profile 'no-such-box': no such profile (.*/hw/no-such-box.json: No such file or directory); the profiles in .*/hw: m1max-cpu, m1max-metal, m2ultra-metal, rtx4090-gpu; make one for this machine with flashbed calibrate" replay --trace "$T" --hw no-such-box --out "$WORK/bad14"
expect_error "unknown shape" "trace synth --shape" trace synth --shape opt-99b --out "$WORK/bad.trace"
expect_error "synth without --out" "needs --out" trace synth
expect_error "more prompts than tokens" "at least --prompts" trace synth --shape opt-tiny --tokens 2 --prompts 3 --out "$WORK/bad.trace"
expect_error "trace without subcommand" "needs a subcommand" trace
expect_error "info without file" "needs a trace FILE" trace info
for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14; do check "no result folder bad$i" test ! -e "$WORK/bad$i"; done
check "no bad trace written" test ! -e "$WORK/bad.trace"
check "no temporary left" test -z "$(find "$WORK" -name '*.tmp.*')"

# ---- input sparsity (issue 33): channel sets, replayed through the transposed layout ----
C="$WORK/teal.trace"
check "synth with channel sets" "$FLASHBED" trace synth --shape llama-tiny --tokens 24 --channel-density 0.5 --active-density 0.25 --out "$C"
check "trace info reports the channels" sh -c "'$FLASHBED' trace info '$C' | grep -q 'channel sets: yes (input channels kept: 50.00% of d_model'"
check "replay --layout transposed" "$FLASHBED" replay --trace "$C" --layout transposed --policy naive,lru,window:3 --dram-budget 25%,50% --out "$WORK/teal" --quiet
check "replay.csv has both streams" sh -c "head -1 '$WORK/teal/replay.csv' | grep -q 'chan_bytes_per_token.*down_bytes_per_token'"
check "replay.csv: a row per policy and budget" test "$(($(wc -l < "$WORK/teal/replay.csv") - 1))" -eq 6
check "replay.md has the streams' table" grep -q "channels: MB / reads per token" "$WORK/teal/replay.md"
check "a stream's bytes add up" python3 -c "
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    if abs(float(r['chan_bytes_per_token']) + float(r['down_bytes_per_token']) - float(r['bytes_per_token'])) > 1e-6 * float(r['bytes_per_token']):
        sys.exit(r['policy'])" "$WORK/teal/replay.csv"
expect_error "neuron layout on channel sets" "the trace has channel sets (input sparsity), which only layout transposed reads" replay --trace "$C" --layout bundled --out "$WORK/teal-bad1"
expect_error "transposed without channel sets" "layout transposed needs a trace with channel sets" replay --trace "$T" --layout transposed --out "$WORK/teal-bad2"
check "no result folder for the refusals" test ! -e "$WORK/teal-bad1" -a ! -e "$WORK/teal-bad2"
check "export csv keeps the channel sets" "$FLASHBED" trace export "$C" --format csv --out "$WORK/teal-csv"
check "export npz-friendly keeps the channel sets" "$FLASHBED" trace export "$C" --format npz-friendly --out "$WORK/teal-npz"
check "exported channel rows: 24 tokens x layers x d_model/2, in both forms" python3 -c "
import json, os, sys
csv_dir, npz_dir = sys.argv[1], sys.argv[2]
meta = json.load(open(os.path.join(csv_dir, 'export.json')))
h = meta['header']
want = 24 * h['n_layers'] * (h['d_model'] // 2)
rows = sum(1 for line in open(os.path.join(csv_dir, 'neurons.csv')) if line.rstrip().endswith(',channel'))
size = os.path.getsize(os.path.join(npz_dir, 'channel_id.u32'))
sys.exit(not (h['has_channels'] and meta['channel_rows'] == want == rows and size == 4 * want))" "$WORK/teal-csv" "$WORK/teal-npz"

finish
