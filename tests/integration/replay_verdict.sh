#!/usr/bin/env bash
# replay's verdict (issue 35) end to end: traces written with the Python
# writer so that the winner is known by construction, the verdict lines
# checked exactly against the rows they cite; every caching policy
# infeasible, with its reason; the profile that priced it (the default,
# then this machine's own where calibrate writes it); --plot with one
# budget, nothing but flashbed's own line on stderr.
source "$(dirname "$0")/lib.sh"

# Two layers, d_model 64, d_ff 256, 2 bytes per weight (a row: 256 bytes),
# 20 tokens, token t needing rows n*(t % period) .. n*(t % period) + n - 1
# of every layer.
write_trace() { # file, rows needed per token, period
    PYTHONPATH="$FLASHBED_SOURCE/python" python3 - "$1" "$2" "$3" <<'EOF'
import sys, flashbed_trace as f
n, period = int(sys.argv[2]), int(sys.argv[3])
meta = f.TraceMeta(2, 64, 256, dtype="f16")
with f.TraceWriter(sys.argv[1], meta) as w:
    for t in range(20):
        w.begin_token(1 if t == 0 else 0)
        for layer in range(2):
            w.layer(list(range(n * (t % period), n * (t % period) + n)))
EOF
}
check "a trace needing 8 rows a layer, 4 sets in turn" write_trace "$WORK/few.trace" 8 4
check "a trace needing the same 200 rows a layer" write_trace "$WORK/many.trace" 200 1

# The line a row's verdict should say, from replay.json (the C side's %.3g).
expect_best() { # replay.json, budget; prints the expected "best ..." text
    python3 - "$1" "$2" <<'EOF'
import json, sys
d = json.load(open(sys.argv[1]))
rows = [r for r in d['results'] if r['dram_budget'] == sys.argv[2] and r['feasible']]
b = min(rows, key=lambda r: r['total_ms'])  # the first of equals, as min keeps
g = lambda x: '%.3g' % x
print('best %s with %s, %s ms per token (I/O %s, memory %s, compute %s); ' % (
    b['policy'], b['layout'], g(b['total_ms']), g(b['io_ms']), g(b['mem_ms']), g(b['compute_ms'])))
EOF
}

cd "$WORK" || exit 1 # replay looks for this machine's profile in results/ here
HOST=$(hostname | cut -c1-63)

# 8 rows a layer of 4 sets in turn, 25% of the FFN holds 64: window:5 keeps
# all 32 and reads only in the first 4 tokens (64 reads of 256 bytes in 20
# tokens); hybrid streams the 75% not resident, naive everything.
"$FLASHBED" replay --trace few.trace --policy naive,hybrid,window:5 --layout bundled --dram-budget 25% \
    --out few --quiet > few.out 2> few.err
check "few: replay exits 0" test $? -eq 0
check "few: the verdict's heading" grep -qx "## Verdict: the fastest feasible policy and layout at each budget" few.out
best=$(expect_best few/replay.json 25%)
check "few: window:5 wins, as built" grep -q "^best window:5 with bundled, " <<< "$best"
check "few: the winner's line" grep -qxF -- "- 25% (0.0328 MB, 64 rows per layer): ${best}0.000819 MB in 3.20 reads per token; feasible (a token needs up to 8 rows in one layer; the budget holds 64)." few.out
check "few: the runner-up, hybrid" grep -q "^  Runner-up: hybrid with bundled, [0-9.e-]* ms (+[0-9]*%); 0.0983 MB of FFN per token, streamed.$" few.out
check "few: the verdict in replay.json" test "$(json_get few/replay.json "[(b['dram_budget'], b['best']['policy'], b['runner_up']['policy'], b['caching_rows'], b['caching_rows_feasible']) for b in d['verdict']['budgets']]")" = "[('25%', 'window:5', 'hybrid', 1, 1)]"
check "few: no why-not line (a caching policy won)" test "$(grep -c "Why not caching" few.out)" -eq 0
check "few: replay.md opens with the verdict" test "$(sed -n 5p few/replay.md)" = "## Verdict: the fastest feasible policy and layout at each budget"
check "few: the default profile named, and how to make one" grep -q "^Priced by m1max-cpu (.*m1max-cpu.json), the paper's machine, not this one (the default: no profile of this machine at results/hw-$HOST.json or .*/hw/$HOST.json). \`flashbed calibrate --quick\` measures this machine into results/hw-$HOST.json" few/replay.md
check "few: stderr holds flashbed's line alone" test "$(cat few.err)" = "flashbed: results in few"

# 200 rows a layer: no caching policy fits 25% (64 rows).
"$FLASHBED" replay --trace many.trace --policy naive,hybrid,window:2,lru --layout bundled --dram-budget 25% \
    --out many --quiet > many.out 2> many.err
check "many: replay exits 0" test $? -eq 0
best=$(expect_best many/replay.json 25%)
check "many: naive or hybrid wins" grep -Eq "^best (naive|hybrid) with bundled" <<< "$best"
check "many: the winner's line" grep -qF -- "- 25% (0.0328 MB, 64 rows per layer): $best" many.out
check "many: why, from the numbers" grep -qF "  Why not caching: every caching policy is infeasible at 25%: a token needs up to 200 of a layer's 256 rows (78%), the budget holds 64 (25%). Were they feasible, the fastest, " many.out
check "many: the verdict in replay.json" test "$(json_get many/replay.json "[(b['caching_rows'], b['caching_rows_feasible'], 'every caching policy is infeasible' in b['text']) for b in d['verdict']['budgets']]")" = "[(2, 0, True)]"
check "many: the fastest caching row's I/O beside the winner's" grep -Eq "^  Why not caching: .*, take [0-9.e-]+ ms of I/O against (naive|hybrid)'s [0-9.e-]+ ms\.$|reads less" many.out

# A budget of 0 keeps no row: every window reads the same, so the sweep is
# drawn without a budget, where window:2 and :3 read 4096 bytes a token and
# window:4 and longer 819.2 (64 rows in 20 tokens): 80%.
check "zero: window sweep" "$FLASHBED" replay --trace few.trace --policy naive --layout bundled --dram-budget 0 --window-sweep --out zero-sweep --quiet > zero-sweep.out
check "zero: the sweep drawn without a budget, and why" grep -qxF "Window sweep (window_sweep.csv): without a budget: at every budget of the study the window's size (k = 1..16) changes the bytes per token by under 5% (the budget leaves no room for more tokens' rows); without one, by 80%." zero-sweep.out
check "zero: the sweep at no budget" test "$(cut -d, -f4,7 zero-sweep/window_sweep.csv | sort -u | tr '\n' ' ')" = "4096,none 819.2,none bytes_per_token,dram_budget "

# This machine's own profile, where calibrate writes it, is used and named.
mkdir -p results
sed 's/"name": *"m1max-cpu"/"name": "own-box"/' "$FLASHBED_SOURCE/configs/hw/m1max-cpu.json" > "results/hw-$HOST.json"
check "own: replay" "$FLASHBED" replay --trace few.trace --policy naive,window:2 --layout bundled --dram-budget 25% --out own --quiet
check "own: priced by it" test "$(json_get own/replay.json "d['pricing']['hw_path']")" = "results/hw-$HOST.json"
check "own: said so" grep -q "^Priced by this machine's own profile, .* (results/hw-$HOST.json), measured by \`flashbed calibrate\`." own/replay.md
check "own: --hw still wins" "$FLASHBED" replay --trace few.trace --policy naive --layout bundled --hw m1max-cpu --out given --quiet
check "own: --hw named" test "$(json_get given/replay.json "d['pricing']['hw_path']")" != "results/hw-$HOST.json"
rm -r results

if command -v gnuplot > /dev/null; then
    "$FLASHBED" replay --trace few.trace --policy naive,hybrid,window:2,lru --layout split,bundled --dram-budget 25% \
        --plot --out plot --quiet > plot.out 2> plot.err
    check "plot: replay exits 0" test $? -eq 0
    check "plot: no gnuplot warning on stderr" test "$(cat plot.err)" = "flashbed: results in plot"
    for f in budget_bytes budget_ms budget_reads bytes_vs_k fig4a; do
        for e in png svg; do check "plot: $f.$e drawn" test -s "plot/$f.$e"; done
    done
    check "plot: one budget, one marker per configuration" grep -q "at a DRAM budget of 25%" plot/budget_ms.svg
    check "plot: configurations named on the axis" grep -q "window:2 (k = 1), bundled" plot/budget_ms.svg
    check "plot: the header is no configuration" test "$(grep -c "policy, layout" plot/budget_ms.svg)" -eq 1
    # 25% holds window:4's 32 rows a layer: (4096 - 819.2) / 4096 = 80%
    check "plot: the window sweep's budget said" grep -qxF "Window sweep (window_sweep.csv, bytes_vs_k): at 25%, the study's budget where the window's size (k = 1..16) changes the bytes per token most (by 80%)." plot.out
    check "plot: the sweep at that budget" test "$(cut -d, -f4,7 plot/window_sweep.csv | sort -u | tr '\n' ' ')" = "4096,25% 819.2,25% bytes_per_token,dram_budget "
    check "plot: the sweep's budget in the title" grep -q "at 25%, the study's budget where" plot/bytes_vs_k.svg
    # a gnuplot that fails says what it said
    mkdir -p badplots && cp "$FLASHBED_SOURCE"/plots/*.gp badplots/
    printf 'set output outfile\nplot sin(x) with nonsense\n' > badplots/replay_vs_budget.gp
    expect_error "plot: a failing gnuplot's own words in the error" "unrecognized plot type" \
        --plots-dir badplots replay --trace few.trace --policy naive --layout bundled --plot --out badplot --quiet
else
    echo "gnuplot is not installed: the plots are not checked"
fi
finish
