#!/usr/bin/env bash
# A small sweep with the null and psync engines (and io_uring, mmap when
# available): the files written, their keys, and exact point counts.
source "$(dirname "$0")/lib.sh"

DATA="$WORK/data.bin"
run_sweep() { # out-dir, extra args...
    local out=$1
    shift
    "$FLASHBED" sweep --file "$DATA" --size 8m --chunks 4k,64k --threads 1,2 --runtime 0.1 \
        --ramp 0.02 --out "$out" "$@"
}

check "null sweep runs" run_sweep "$WORK/null" --engine null
check "file created at full size" test "$(stat -c %s "$DATA")" -eq $((8 << 20))
check "file holds non-constant data" test "$(head -c 1048576 "$DATA" | od -An -tx1 | tr -s ' ' '\n' | sort -u | wc -l)" -gt 200
check "no temporary left" test -z "$(ls "$WORK" | grep tmp)"
for f in sweep.json sweep.csv sweep.md; do
    check "null: $f written" test -s "$WORK/null/$f"
done
check "null: 4 points" test "$(json_get "$WORK/null/sweep.json" 'len(d["points"])')" -eq 4
check "null: provenance" test "$(json_get "$WORK/null/sweep.json" 'all(k in d["provenance"] for k in ["command_line","git_commit","date","machine","disk","parameters"])')" = True
check "null: every key" test "$(json_get "$WORK/null/sweep.json" 'all(all(k in p for k in ["engine","chunk_bytes","threads","iodepth","direct","bytes","seconds","bw_bytes","iops","lat_p50_ns","lat_p90_ns","lat_p99_ns","lat_p999_ns","cpu_user_s","cpu_sys_s"]) for p in d["points"])')" = True
check "null: engine named, no direct I/O claimed" test "$(json_get "$WORK/null/sweep.json" 'set((p["engine"], p["direct"]) for p in d["points"])')" = "{('null', False)}"
check "null: grid order" test "$(json_get "$WORK/null/sweep.json" '[(p["threads"], p["chunk_bytes"]) for p in d["points"]]')" = "[(1, 4096), (1, 65536), (2, 4096), (2, 65536)]"
check "null: bytes = ios x chunk" test "$(json_get "$WORK/null/sweep.json" 'all(p["bytes"] == p["ios"] * p["chunk_bytes"] and p["ios"] > 0 for p in d["points"])')" = True
check "null: csv has header + 4 rows" test "$(wc -l < "$WORK/null/sweep.csv")" -eq 5
check "null: markdown table rows" test "$(grep -c '^| [0-9]' "$WORK/null/sweep.md")" -eq 4
# the verdict: the peak named from sweep.json's fastest point, page cache used (the null engine reads nothing)
peak=$(json_get "$WORK/null/sweep.json" 'max(d["points"], key=lambda p: p["bw_bytes"])')
check "null: sweep.md opens with its verdict" grep -q "^- Peak: .* with $(python3 -c "import ast,sys; p=ast.literal_eval(sys.argv[1]); print({4096:'4k',65536:'64k'}[p['chunk_bytes']], 'reads from', p['threads'])" "$peak") thread.*, page cache used" "$WORK/null/sweep.md"
check "null: the verdict before the points" test "$(grep -n '^## ' "$WORK/null/sweep.md" | cut -d: -f2 | tr '\n' ,)" = "## Verdict,## Every point,"

check "psync sweep runs" run_sweep "$WORK/psync" --engine psync
check "psync: 4 points" test "$(json_get "$WORK/psync/sweep.json" 'len(d["points"])')" -eq 4
check "psync: direct I/O recorded" test "$(json_get "$WORK/psync/sweep.json" 'd["page_cache_bypassed"] and all(p["direct"] for p in d["points"])')" = True
check "psync: real reads" test "$(json_get "$WORK/psync/sweep.json" 'all(p["bw_bytes"] > 0 and p["lat_p50_ns"] > 0 and p["lat_p50_ns"] <= p["lat_p99_ns"] <= p["lat_p999_ns"] for p in d["points"])')" = True

check "psync buffered runs" run_sweep "$WORK/buffered" --engine psync --buffered --threads 1 --chunks 4k
check "buffered: page cache recorded" test "$(json_get "$WORK/buffered/sweep.json" 'd["page_cache_bypassed"] or d["points"][0]["direct"]')" = False

if "$FLASHBED" sweep --help | grep -q io_uring && [ -n "$(ldconfig -p 2>/dev/null | grep liburing)" ]; then
    check "io_uring sweep runs" run_sweep "$WORK/uring" --engine io_uring --iodepth 4 --threads 1
    check "io_uring: iodepth kept" test "$(json_get "$WORK/uring/sweep.json" 'set(p["iodepth"] for p in d["points"])')" = "{4}"
fi
check "mmap sweep runs" run_sweep "$WORK/mmap" --engine mmap --threads 1
check "mmap: reports the page cache is used" test "$(json_get "$WORK/mmap/sweep.json" 'set(p["direct"] for p in d["points"])')" = "{False}"

if command -v fio >/dev/null; then
    check "fio comparison runs" run_sweep "$WORK/fio" --engine psync --threads 1 --chunks 64k
    check "fio comparison runs" run_sweep "$WORK/fio" --engine psync --threads 1 --chunks 64k --compare-fio
    check "fio: keys and ratio" test "$(json_get "$WORK/fio/sweep.json" 'all(p["fio_bw_bytes"] > 0 and p["fio_iops"] > 0 and abs(p["bw_ratio_vs_fio"] - p["bw_bytes"] / p["fio_bw_bytes"]) < 1e-9 for p in d["points"])')" = True
fi
# Rounds (issue 47): every round's figure and the median/min/max columns, named
check "rounds: a sweep of 2 rounds" run_sweep "$WORK/rounds" --engine null --rounds 2
check "rounds: csv names each column" test "$(head -1 "$WORK/rounds/sweep.csv" | tr ',' '\n' | grep -c -x -E 'bw_bytes|bw_bytes_min|bw_bytes_max|bw_bytes_round1|bw_bytes_round2')" -eq 5
check "rounds: no third round" test "$(head -1 "$WORK/rounds/sweep.csv" | grep -c bw_bytes_round3)" -eq 0
check "rounds: csv rows as wide as the header" test "$(awk -F, '{print NF}' "$WORK/rounds/sweep.csv" | sort -u | wc -l)" -eq 1
check "rounds: median of 2 is their mean, min/max their extremes" test "$(json_get "$WORK/rounds/sweep.json" 'all(abs(p["bw_bytes"] - (p["bw_bytes_round1"] + p["bw_bytes_round2"]) / 2) <= 1e-9 * p["bw_bytes"] and p["bw_bytes_min"] == min(p["bw_bytes_round1"], p["bw_bytes_round2"]) and p["bw_bytes_max"] == max(p["bw_bytes_round1"], p["bw_bytes_round2"]) for p in d["points"])')" = True
check "rounds: the runtime split over them" test "$(json_get "$WORK/rounds/sweep.json" 'd["provenance"]["parameters"]["rounds"]')" = 2
check "rounds: markdown shows min–max" grep -q '^| chunk | threads | iodepth | GiB/s | min–max | IOPS |' "$WORK/rounds/sweep.md"
check "rounds: markdown says what the figures are" grep -q "^- rounds: 2 per point of 0.05 s each after 0.01 s ramp" "$WORK/rounds/sweep.md"
check "one round: the columns as before" run_sweep "$WORK/round1" --engine null --rounds 1
check "one round: no round columns" test "$(head -1 "$WORK/round1/sweep.csv" | grep -c -E 'round1|_min')" -eq 0
if command -v fio >/dev/null; then
    check "rounds beside fio" run_sweep "$WORK/fio2" --engine psync --threads 1 --chunks 64k --rounds 2 --compare-fio
    check "rounds beside fio: columns" test "$(head -1 "$WORK/fio2/sweep.csv" | tr ',' '\n' | grep -c -x -E 'fio_bw_bytes|fio_bw_bytes_min|fio_bw_bytes_max|fio_bw_bytes_round1|fio_bw_bytes_round2|bw_ratio_vs_fio|bw_ratio_min|bw_ratio_max')" -eq 8
    check "rounds beside fio: the ratio is the medians' and within the rounds' range" test "$(json_get "$WORK/fio2/sweep.json" 'all(abs(p["bw_ratio_vs_fio"] - p["bw_bytes"] / p["fio_bw_bytes"]) < 1e-9 and p["bw_ratio_min"] <= p["bw_ratio_vs_fio"] <= p["bw_ratio_max"] and abs(p["bw_ratio_min"] - min(p["bw_bytes_round%d" % r] / p["fio_bw_bytes_round%d" % r] for r in (1, 2))) < 1e-12 for p in d["points"])')" = True
    check "rounds beside fio: the verdict counts rounds" grep -q "^- Beside fio (the same jobs, 2 rounds each): ours / fio agree" "$WORK/fio2/sweep.md"
    check "rounds beside fio: markdown ranges" grep -q '| fio GiB/s | min–max | ours / fio | min–max |$' "$WORK/fio2/sweep.md"
fi
if command -v gnuplot >/dev/null; then
    check "plot drawn" run_sweep "$WORK/plot" --engine null --plot
    check "png written" test "$(head -c 4 "$WORK/plot/throughput.png" | od -An -c | tr -d ' ')" = "211PNG"
    check "svg written" grep -q '<svg' "$WORK/plot/throughput.svg"
fi

# Ctrl-C keeps the finished points: interrupt a long sweep after its first point.
"$FLASHBED" sweep --file "$DATA" --size 8m --chunks 4k,8k,16k,32k --threads 1 --runtime 0.5 \
    --ramp 0 --engine null --out "$WORK/intr" 2>/dev/null &
pid=$!
for _ in $(seq 100); do [ -f "$WORK/intr/sweep.json" ] && break; sleep 0.05; done
kill -INT $pid
wait $pid
rc=$?
check "interrupt: exit 130" test $rc -eq 130
check "interrupt: finished points kept" test "$(json_get "$WORK/intr/sweep.json" '0 < len(d["points"]) < 4 and not d["complete"]')" = True
check "interrupt: no temporaries" test -z "$(ls "$WORK/intr" | grep tmp)"
finish
