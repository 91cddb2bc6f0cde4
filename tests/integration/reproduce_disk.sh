#!/usr/bin/env bash
# flashbed reproduce in a log and on disk (one model of the tiny tier):
#   - stderr not a terminal: one line per finished step (id, what, seconds,
#     how it ended), as many as the steps that ran;
#   - the disk it states before it starts, against what it wrote: the model
#     folders within 5% of their estimate, the scratch file exactly its
#     --size, the whole study at most the stated total (whose results
#     allowance is an upper bound) and at least models + scratch;
#   - at the end, the command that removes its big files; --clean removes
#     exactly the model folders, the scratch file and the markers of the
#     steps that made them, nothing else, and a second run makes them again;
#   - a disk without the room: refused before anything is written (where a
#     small tmpfs can be mounted here).
source "$(dirname "$0")/lib.sh"
S="$WORK/study"
LOG="$WORK/log.txt"

"$FLASHBED" reproduce --tiny --models opt --out "$S" 2>"$LOG" </dev/null
check "reproduce --tiny --models opt, stderr to a file" test $? -eq 0
steps=$(ls "$S/steps" | wc -l)
check "a line per finished step ($steps)" test "$(grep -cE '^flashbed: \[[0-9]+/[0-9]+\] [a-z0-9.-]+ \(.*\): [0-9]+\.[0-9] s, done$' "$LOG")" -eq "$steps"
check "the first step's line" grep -qE "^flashbed: \[1/$steps\] fig2b-sweep \(Fig. 2b.*\): [0-9.]+ s, done$" "$LOG"
check "no terminal drawing in the log" bash -c "! grep -q '\.\.\.' '$LOG'"

# The estimate, said before the first step
check "the disk estimate comes first" bash -c "head -1 '$LOG' | grep -q '^flashbed: disk: '"
line=$(grep '^flashbed: disk: ' "$LOG")
num() { sed -E "s/.*$1 ([0-9.]+) MiB.*/\1/" <<<"$line"; }
total=$(sed -E 's/^flashbed: disk: ([0-9.]+) MiB at most.*/\1/' <<<"$line")
models=$(num "\(models")
scratch=$(num "scratch file")
bytes() { find "$@" -type f -printf '%s\n' | awk '{s += $1} END {print s + 0}'; }
actual_models=$(bytes "$S/models")
actual_scratch=$(bytes "$S/flashbed-reproduce-scratch.bin")
actual_total=$(bytes "$S")
echo "estimate: total $total MiB, models $models MiB, scratch $scratch MiB; written: models $actual_models," \
    "scratch $actual_scratch, study $actual_total bytes"
within() { awk -v a="$1" -v e="$2" -v t="$3" 'BEGIN {exit !(a >= e * (1 - t) && a <= e * (1 + t))}'; }
check "models within 5% of the estimate" within "$actual_models" "$(awk -v m="$models" 'BEGIN {print m * 1048576}')" 0.05
check "the scratch file as estimated" within "$actual_scratch" "$(awk -v m="$scratch" 'BEGIN {print m * 1048576}')" 0.001
check "the study no more than the stated total" awk -v a="$actual_total" -v t="$total" 'BEGIN {exit !(a <= t * 1048576)}'
check "the study at least models and scratch" test "$actual_total" -ge $((actual_models + actual_scratch))

# The way to remove them, said at the end; --clean removes exactly them
check "the command that removes them" grep -q "to remove them (the results stay): .*reproduce --tiny --models opt --out $S --clean$" "$LOG"
(cd "$S" && find . -type f | sort) >"$WORK/before.txt"
check "reproduce --clean" "$FLASHBED" reproduce --tiny --models opt --out "$S" --clean
(cd "$S" && find . -type f | sort) >"$WORK/after.txt"
comm -23 "$WORK/before.txt" "$WORK/after.txt" >"$WORK/removed.txt"
check "nothing new appeared" test -z "$(comm -13 "$WORK/before.txt" "$WORK/after.txt")"
check "removed: only model files, the scratch file, the model steps' markers" \
    bash -c "! grep -vE '^\./(models/opt-tiny/[^/]+|flashbed-reproduce-scratch\.bin|steps/model-(make|convert|tidy)-opt-tiny\.json)$' '$WORK/removed.txt'"
check "removed: every model file and the scratch file" \
    test "$(grep -c '^\./models/' "$WORK/removed.txt")" = "$(grep -c '^\./models/' "$WORK/before.txt")" -a \
    "$(grep -c scratch "$WORK/removed.txt")" = 1
check "removed: the three model steps' markers" test "$(grep -c '^\./steps/' "$WORK/removed.txt")" = 3
check "the results stay" test -s "$S/REPORT.md" -a -s "$S/runs/opt-tiny/all-trace-r1/run.json"
check "--clean again: nothing left to remove" bash -c "'$FLASHBED' reproduce --tiny --models opt --out '$S' --clean 2>&1 | grep -q 'removed 0.0 MiB'"
out=$("$FLASHBED" reproduce --tiny --models opt --out "$S" 2>&1 </dev/null)
check "a second run makes the model again, alone" grep -q "3 steps run, $((steps - 3)) done before" <<<"$out"
check "the model is back" test -s "$S/models/opt-tiny/ffn.bin"

# A disk without the room (a 4 MiB tmpfs, where this machine lets us mount one)
SMALL="$WORK/small"
mkdir -p "$SMALL"
if mount -t tmpfs -o size=4m tmpfs "$SMALL" 2>/dev/null; then
    expect_error "a disk without the room" "$SMALL/study: the study needs .* MiB more there and the disk has" \
        reproduce --tiny --models opt --out "$SMALL/study"
    check "refused before anything is written" test ! -e "$SMALL/study"
    umount "$SMALL"
else
    echo "note: cannot mount a small tmpfs here: the refusal for want of room is not checked"
fi
finish
