#!/usr/bin/env bash
# Reusing an --out folder (common/out_manifest.h), through the commands:
# a second run that writes fewer files leaves none of the first run's
# behind (replay --plot then replay; trace info --plot then trace info);
# a file of the user's in the folder survives; one at a path the command
# writes is refused before any work, naming it, unchanged, with nothing
# written, and --force replaces it; a folder without the list is the
# user's, unless its result file's provenance says flashbed wrote it (a
# folder from before the lists).
source "$(dirname "$0")/lib.sh"

T="$WORK/tiny.trace"
D="$WORK/replay"
check "synth a tiny trace" "$FLASHBED" trace synth --shape opt-tiny --tokens 40 --prompts 2 --seed 7 --out "$T"

plots=0
if command -v gnuplot > /dev/null 2>&1; then plots=1; fi
if [ $plots -eq 1 ]; then
    check "replay --plot" "$FLASHBED" replay --trace "$T" --out "$D" --plot --quiet
    check "the plots are there" test -f "$D/budget_ms.png" -a -f "$D/fig4a.svg" -a -f "$D/bytes_vs_k.png"
else # without gnuplot the window sweep's csv stands for the plots
    echo "gnuplot not installed: the window sweep's csv stands for the plots"
    check "replay --window-sweep" "$FLASHBED" replay --trace "$T" --out "$D" --window-sweep --quiet
fi
check "window_sweep.csv is there" test -f "$D/window_sweep.csv"
check "the list names what was written" grep -qx "replay.json" "$D/.flashbed-files"
echo "my notes" > "$D/notes.txt"
check "replay again without --plot" "$FLASHBED" replay --trace "$T" --out "$D" --quiet
check "exactly this run's files and the user's are left" test "$(ls -A "$D" | tr '\n' ' ')" = \
    ".flashbed-files notes.txt replay.csv replay.json replay.md "
check "the user's file unchanged" test "$(cat "$D/notes.txt")" = "my notes"
check "the list names exactly this run's files" test "$(grep -v '^#' "$D/.flashbed-files" | sort | tr '\n' ' ')" = \
    "replay.csv replay.json replay.md "

# A user's file where replay writes: refused before the replay, named, kept.
U="$WORK/user"
mkdir -p "$U"
echo "my table" > "$U/replay.md"
expect_error "a user's replay.md is refused" "$U/replay.md: exists and flashbed did not write it" \
    replay --trace "$T" --out "$U" --quiet
check "the refusal says how to go on" bash -c "'$FLASHBED' replay --trace '$T' --out '$U' --quiet 2>&1 | grep -q -- '--force'"
check "the user's file unchanged" test "$(cat "$U/replay.md")" = "my table"
check "nothing written beside it" test "$(ls -A "$U")" = "replay.md"
check "--force replaces it" "$FLASHBED" replay --trace "$T" --out "$U" --quiet --force
check "replaced and listed" grep -qx "replay.md" "$U/.flashbed-files"
check "now flashbed's" bash -c "! grep -q 'my table' '$U/replay.md'"
check "a second run needs no --force" "$FLASHBED" replay --trace "$T" --out "$U" --quiet

# A result folder from before the lists: its result file's provenance says
# flashbed wrote it, so the command's own result files are flashbed's.
L="$WORK/legacy"
check "a replay" "$FLASHBED" replay --trace "$T" --out "$L" --quiet
rm "$L/.flashbed-files"
check "again into it without the list: taken as flashbed's" "$FLASHBED" replay --trace "$T" --out "$L" --quiet
check "and listed now" grep -qx "replay.md" "$L/.flashbed-files"

# The same rule in another command (trace info), and in a run's folder.
I="$WORK/info"
if [ $plots -eq 1 ]; then
    check "trace info --plot" "$FLASHBED" trace info "$T" --out "$I" --plot
    check "fig4a drawn" test -f "$I/fig4a.png"
    check "trace info without --plot" "$FLASHBED" trace info "$T" --out "$I"
    check "no fig4a left from the first" test ! -e "$I/fig4a.png" -a ! -e "$I/fig4a.svg"
fi
mkdir -p "$WORK/info2"
echo "{}" > "$WORK/info2/trace_info.json"
expect_error "trace info: a user's trace_info.json" "$WORK/info2/trace_info.json: exists and flashbed did not write it" \
    trace info "$T" --out "$WORK/info2"
mkdir -p "$WORK/pred"
echo "mine" > "$WORK/pred/predict.md"
expect_error "predict: a user's predict.md" "$WORK/pred/predict.md: exists and flashbed did not write it" \
    predict --model opt-tiny --hw m1max-cpu --out "$WORK/pred"
check "predict's refusal left the folder as it was" test "$(ls -A "$WORK/pred")" = "predict.md"
finish
