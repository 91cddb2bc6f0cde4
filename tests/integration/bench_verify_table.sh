#!/usr/bin/env bash
# The on/off statistics of tools/bench-verify*.sh (tools/bench_verify_table.py):
# "on / off" is the ratio of the medians the row shows, the rounds' own
# paired ratios beside it as their median and range; and docs' tables made
# by those tools agree with themselves (issue 47: docs/sparsity.md gave
# 1.030 beside medians 374.67 and 388.42).
source "$(dirname "$0")/lib.sh"
TABLE="$FLASHBED_SOURCE/tools/bench_verify_table.py"
# three rounds whose medians (on 10, off 12) and paired ratios (0.5, 1.25, 0.769) disagree
cat >"$WORK/rows.json" <<'JSON'
[{"on_ms": 5, "off_ms": 10, "verify_ms": 1},
 {"on_ms": 15, "off_ms": 12, "verify_ms": 1},
 {"on_ms": 10, "off_ms": 13, "verify_ms": 1}]
JSON
check "cells: the medians' ratio, then the rounds' median and range" \
    test "$(python3 "$TABLE" "$WORK/rows.json")" = "0.833 (-16.7%) | 0.769 (0.500 to 1.250)"
# every docs table with an "on / off (of the medians)" column: on / off = the medians shown
check_doc_ratios() {
    python3 - "$1" <<'PY'
import re, sys
bad = 0
for line in open(sys.argv[1]):
    cells = [c.strip() for c in line.strip().strip("|").split("|")]
    if len(cells) < 4 or not re.fullmatch(r"[0-9.]+", cells[0]) or not re.fullmatch(r"[0-9.]+", cells[1]):
        continue
    m = re.match(r"([0-9.]+) \(", cells[2])
    if not m:
        continue
    want = float(cells[0]) / float(cells[1])
    if abs(float(m.group(1)) - want) > 0.0015:
        print(f"{sys.argv[1]}: on / off {m.group(1)} beside {cells[0]} / {cells[1]} = {want:.3f}")
        bad += 1
sys.exit(1 if bad else 0)
PY
}
check "docs/sparsity.md's verification table: on / off is the ratio of its medians" \
    check_doc_ratios "$FLASHBED_SOURCE/docs/sparsity.md"
check "docs/sparsity.md names the statistic" grep -q "on / off (of the medians)" "$FLASHBED_SOURCE/docs/sparsity.md"
finish
