#!/usr/bin/env bash
# Issue 47: every verdict README and docs/ show agrees with the table shown
# beside it (tests/check_shown_verdicts.py recomputes the figures), the
# checker catches each kind of contradiction, and tools/readme_outputs.py
# fills marked output blocks from one run of the Quick start's commands.
source "$(dirname "$0")/lib.sh"
CHECKER="$FLASHBED_SOURCE/tests/check_shown_verdicts.py"
check "README's and docs/' verdicts agree with their tables" python3 "$CHECKER"

# a README whose sweep verdict, replay verdict and compare verdict are each
# contradicted by the table shown beside them
cat > "$WORK/bad.md" <<'MD'
## Sweep
```text
- Peak: 0.939 GiB/s (15388 IOPS) with 64k reads from 8 threads, page cache bypassed.
- The smallest reads at best: 0.206 GiB/s (53899 IOPS) with 4k reads from 8 threads, 4.6× below the peak.
- Beside fio (the same jobs, 3 rounds each): ours / fio agree within 10% at all 3 points; the furthest from 1.0: 64k × 8 threads at 1.44.
```
```text
| chunk | threads | iodepth | GiB/s | min–max | IOPS | fio GiB/s | min–max | ours / fio | min–max |
|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|
| 4k | 8 | 1 | 0.117 | 0.110–0.120 | 30705 | 0.119 | 0.115–0.121 | 0.987 | 0.950–1.020 |
| 64k | 8 | 1 | 0.669 | 0.660–0.680 | 10953 | 0.466 | 0.460–0.470 | 1.435 | 1.400–1.470 |
| 1m | 1 | 1 | 1.000 | 0.800–1.100 | 1024 | 0.851 | 0.840–0.860 | 1.175 | 0.950–1.300 |
```
## Replay
```text
| budget | policy | layout | flash→DRAM per token (MB) | reads per token | feasible |
|---|---|---|---:|---:|---|
| 25% | lru | bundled | 0.05 | 13 | no |
| 25% | belady | bundled | 0.03 | 8 | yes |
- 25% (0.524 MB, 64 rows per layer): best lru with bundled, 0.07 ms per token (I/O 0.05); 0.0329 MB in 8.03 reads per token; feasible (a token needs up to 42 rows).
  Runner-up: belady with bundled, 0.105 ms (+40%); 0.0516 MB in 13 reads per token.
```
## Compare
```text
| component | predicted ms | measured ms | error |
|---|---:|---:|---:|
| io_ms | 0.31 | 0.22 | +36.1% |
| mem_ms | 0.00 | 0.00 | -13.9% |
| compute_ms | 0.05 | 0.54 | -90.7% |
| total | 0.36 | 0.76 | -52.6% |
Verdict: the cost model holds on this run: 0.36 ms a token predicted against 0.37 measured (-2%, within ±15%). The largest gap is I/O: 0.31 against 0.22 ms (+36%).
```
MD
out=$(python3 "$CHECKER" "$WORK/bad.md")
rc=$?
check "contradicted verdicts fail the check" test $rc -ne 0
check "the wrong peak is named" grep -q "sweep peak .* but the table's peak is 1.0 with 1m reads from 1 thread" <<<"$out"
check "the wrong smallest reads are named" grep -q "smallest reads .* the table's best is 0.117" <<<"$out"
check "agreement at all points claimed where one differs" \
    grep -q "sweep claims agreement at all 3 points but the table's 3 points have 2 agreeing" <<<"$out"
check "a verdict's figures its row does not have" grep -q "best lru .* its row reads 0.05 MB in 13" <<<"$out"
check "feasible against the row's no" grep -q "says feasible but its row says no" <<<"$out"
check "a runner-up's figures" grep -q "Runner-up: belady .* its row reads 0.03 MB in 8" <<<"$out"
check "compare: total against the table" grep -q "says 0.36 against 0.37 ms but the table's total row is 0.36 against 0.76" <<<"$out"
check "compare: the largest gap" grep -q "largest gap is I/O but the table's is compute" <<<"$out"
check "exactly those" grep -q "; 8 disagreements" <<<"$out"

# readme_outputs.py: runs the Quick start's sh blocks in a scratch folder and
# fills the marked block; the user's results/ untouched
cat > "$WORK/readme.md" <<'MD'
# x
## Quick start
<!-- shown-provenance -->
old provenance
```sh
mkdir -p results/a && printf -- '- made in a scratch folder\n' > results/a/out.md
```
<!-- shown: cat results/a/out.md; cat $SHOWN/block-1.out -->
```text
old output
```
## Set-up
```sh
exit 1
```
MD
cp "$WORK/readme.md" "$WORK/readme.before"
check "readme_outputs fills the marked block (the Set-up block, which fails, is not run)" \
    python3 "$FLASHBED_SOURCE/tools/readme_outputs.py" --readme "$WORK/readme.md" --build "$(dirname "$FLASHBED")"
check "the shown block holds the run's output" grep -q "^- made in a scratch folder$" "$WORK/readme.md"
check "the old output is gone" bash -c "! grep -q 'old output' '$WORK/readme.md'"
check "the provenance line names the commit" grep -q "^_Every output below comes from one run .*: commit " "$WORK/readme.md"
check "no results/ written beside the README" test ! -e "$WORK/results"
printf '## Quick start\n```sh\nfalse\n```\n' > "$WORK/fails.md"
cp "$WORK/fails.md" "$WORK/fails.before"
python3 "$FLASHBED_SOURCE/tools/readme_outputs.py" --readme "$WORK/fails.md" --build "$(dirname "$FLASHBED")" 2>"$WORK/fails.err"
rc=$?
check "a failing block fails the run" test $rc -ne 0
check "the failing block is named" grep -q "sh block 1 failed" "$WORK/fails.err"
check "the README is untouched" cmp -s "$WORK/fails.md" "$WORK/fails.before"
check "no temporary left" test ! -e "$WORK/fails.md.tmp"
finish
