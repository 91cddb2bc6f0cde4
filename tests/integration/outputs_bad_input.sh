#!/usr/bin/env bash
# Outputs and the user's files (issue 15): every command refuses an output
# it cannot create before doing its work, naming the user's path, and
# leaves nothing behind; sweep never writes into a file flashbed did not
# create (a byte-for-byte check); a file system without direct I/O is
# refused or recorded as such, never claimed bypassed; Ctrl-C (SIGINT) and
# SIGTERM during convert, model make and calibrate remove the unfinished
# output (and the folders made above it) and exit 130 / 143.
source "$(dirname "$0")/lib.sh"
# In the sanitizer build a report exits 199: above 128, expect_error calls it
# a crash instead of taking it for the refusal it expects.
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}exitcode=199"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:+$UBSAN_OPTIONS:}exitcode=199"
FLASHBED=$(cd "$(dirname "$FLASHBED")" && pwd)/$(basename "$FLASHBED") # before the cd
cd "$WORK" || exit 1 # default result folders (results/...) land here

# Nothing flashbed names "<x>.tmp.<pid>" is left anywhere in the work folder.
no_temporaries() {
    local left
    left=$(find "$WORK" -name '*.tmp.*' 2>/dev/null)
    [ -z "$left" ] || { echo "left behind: $left" >&2; return 1; }
}
same_bytes() { [ "$(md5sum <"$1")" = "$2" ]; }

# A small model, a trace, a text and a run to give the commands input.
check "opt-tiny model" "$FLASHBED" model make --arch opt --shape opt-tiny --dtype f32 --relu-density 0.2 --out "$WORK/hf"
check "convert it" "$FLASHBED" convert "$WORK/hf" --out "$WORK/m"
check "a trace" "$FLASHBED" trace synth --shape opt-tiny --tokens 8 --out "$WORK/t.trace"
printf 'the cat sat on the mat and the dog sat on the log. ' >"$WORK/text.txt"
for _ in 1 2 3 4 5 6; do cat "$WORK/text.txt" "$WORK/text.txt" >"$WORK/t2" && mv "$WORK/t2" "$WORK/text.txt"; done
check "a run" "$FLASHBED" run --model "$WORK/m" --mode all --prompt "the cat" -n 4 --threads 1 --out "$WORK/run"

# ---- --out that cannot be created: under a regular file (root ignores
# permission bits, so a file in the path is what stops us) ----
printf 'a file of the user, not a folder\n' >"$WORK/userfile"
USER_SUM=$(md5sum <"$WORK/userfile")
BAD="$WORK/userfile/x"
bad_out() { # description, then the command; its error must name $BAD's parent
    local what=$1
    shift
    expect_error "$what" "userfile" "$@"
    check "$what: the user's file untouched" same_bytes "$WORK/userfile" "$USER_SUM"
    check "$what: nothing left behind" no_temporaries
}
bad_out "sweep --out" sweep --file "$WORK/s.bin" --size 1m --chunks 4k --threads 1 --runtime 0.05 --ramp 0 --out "$BAD"
check "sweep --out: no scratch file made" test ! -e "$WORK/s.bin"
bad_out "calibrate --out" calibrate --quick --file "$WORK/c.bin" --size 64m --out "$BAD/hw.json"
check "calibrate --out: refused before measuring" test ! -e "$WORK/c.bin"
bad_out "predict --out" predict --model opt-tiny --hw m1max-cpu --dtype f32 --policy window:5 --out "$BAD"
bad_out "predict --paper --out" predict --paper table2 --out "$BAD"
bad_out "predict --compare --out" predict --model opt-tiny --hw m1max-cpu --compare "$WORK/run/run.json" --out "$BAD"
bad_out "replay --out" replay --trace "$WORK/t.trace" --policy lru --out "$BAD"
bad_out "trace info --out" trace info "$WORK/t.trace" --out "$BAD"
bad_out "trace synth --out" trace synth --shape opt-tiny --tokens 8 --out "$BAD"
bad_out "run --out" run --model "$WORK/m" --mode all --prompt "the cat" -n 4 --threads 1 --out "$BAD"
bad_out "run --record" run --model "$WORK/m" --mode all --prompt "the cat" -n 4 --threads 1 --record "$BAD" --out "$WORK/run-rec"
check "run --record: no result folder" test ! -e "$WORK/run-rec"
bad_out "generate --json" generate --model "$WORK/m" --prompt "the cat" -n 2 --threads 1 --json "$BAD"
bad_out "perplexity --json" perplexity --model "$WORK/m" --text "$WORK/text.txt" --tokens 16 --json "$BAD"
bad_out "predictor eval --out" predictor eval --model "$WORK/m" --text "$WORK/text.txt" --out "$BAD"
bad_out "convert --out" convert "$WORK/hf" --out "$BAD"
bad_out "model make --out" model make --arch opt --shape opt-tiny --dtype f32 --out "$BAD"

# The message names the user's path and what is wrong with it.
expect_error "trace info names the path and why" "$BAD: cannot create: $WORK/userfile is not a folder" \
    trace info "$WORK/t.trace" --out "$BAD"
expect_error "run: a folder where a file is wanted" "is a folder" \
    run --model "$WORK/m" --mode all --prompt "the cat" -n 2 --threads 1 --record "$WORK/run" --out "$WORK/run-rec"
expect_error "generate --json: a missing folder" "does not exist" \
    generate --model "$WORK/m" --prompt "the cat" -n 2 --json "$WORK/nowhere/g.json"
expect_error "result folder is a file" "exists and is not a folder" trace info "$WORK/t.trace" --out "$WORK/userfile"
expect_error "convert --out exists" "already exists" convert "$WORK/hf" --out "$WORK/m"
expect_error "model make --out exists (a file)" "already exists" \
    model make --arch opt --shape opt-tiny --dtype f32 --out "$WORK/userfile"
check "the user's file still untouched" same_bytes "$WORK/userfile" "$USER_SUM"

# ---- an output that is one of the command's inputs: refused, the input intact ----
MODEL_SUM=$(cat "$WORK/m"/* | md5sum)
TEXT_SUM=$(md5sum <"$WORK/text.txt")
TRACE_SUM=$(md5sum <"$WORK/t.trace")
expect_error "run --record over the model's model.json" "would replace a file of $WORK/m" \
    run --model "$WORK/m" --mode all --prompt "the cat" -n 2 --threads 1 --record "$WORK/m/model.json" --out "$WORK/run-in"
expect_error "run --record over --active's trace" "is the command's input" \
    run --model "$WORK/m" --mode all --active "trace:$WORK/t.trace" --prompt "the cat" -n 2 --threads 1 \
    --record "$WORK/./t.trace" --out "$WORK/run-in"
check "run --record refused: no result folder" test ! -e "$WORK/run-in"
expect_error "generate --json over the model's dram.bin" "would replace a file of $WORK/m" \
    generate --model "$WORK/m" --prompt "the cat" -n 2 --json "$WORK/m/dram.bin"
expect_error "perplexity --json over its --text" "is the command's input $WORK/text.txt" \
    perplexity --model "$WORK/m" --text "$WORK/text.txt" --tokens 16 --json "$WORK/text.txt"
cp "$WORK/run/run.json" "$WORK/sweep-in.json"
SWEEP_SUM=$(md5sum <"$WORK/sweep-in.json")
expect_error "calibrate --out over its --sweep" "is the command's input" \
    calibrate --quick --sweep "$WORK/sweep-in.json" --out "$WORK/sweep-in.json"
check "the model folder intact" test "$(cat "$WORK/m"/* | md5sum)" = "$MODEL_SUM"
check "the text intact" same_bytes "$WORK/text.txt" "$TEXT_SUM"
check "the trace intact" same_bytes "$WORK/t.trace" "$TRACE_SUM"
check "the sweep intact" same_bytes "$WORK/sweep-in.json" "$SWEEP_SUM"
expect_error "perplexity --json on a device" "not a regular file" \
    perplexity --model "$WORK/m" --text "$WORK/text.txt" --tokens 16 --json /dev/null
check "/dev/null still a device" test -c /dev/null

# ---- sweep's scratch file: a user's file is never written ----
printf 'notes of the user, 45 bytes, not flashbed!!\n' >"$WORK/notes.txt"
NOTES_SUM=$(md5sum <"$WORK/notes.txt")
expect_error "sweep into a user's small file" "not a flashbed scratch file" \
    sweep --file "$WORK/notes.txt" --size 1m --chunks 4k --threads 1 --runtime 0.05 --ramp 0 --out "$WORK/sw-notes"
check "sweep: the user's file byte for byte" same_bytes "$WORK/notes.txt" "$NOTES_SUM"
check "sweep: no result folder for a refusal" test ! -e "$WORK/sw-notes"
expect_error "calibrate into a user's small file" "not a flashbed scratch file" \
    calibrate --quick --file "$WORK/notes.txt" --size 1m --out "$WORK/hw-notes.json"
check "calibrate: the user's file byte for byte" same_bytes "$WORK/notes.txt" "$NOTES_SUM"
check "calibrate: no profile" test ! -e "$WORK/hw-notes.json"
# A user's file large enough is read as it is, never written.
head -c 2097152 /dev/zero | tr '\0' 'u' >"$WORK/big-user.bin"
BIG_SUM=$(md5sum <"$WORK/big-user.bin")
check "sweep reads a large user file" "$FLASHBED" sweep --file "$WORK/big-user.bin" --size 1m --chunks 4k --threads 1 \
    --runtime 0.05 --ramp 0 --engine null --out "$WORK/sw-big"
check "sweep: the large file byte for byte" same_bytes "$WORK/big-user.bin" "$BIG_SUM"
# flashbed's own file: created with the marker, and extended.
check "sweep creates a scratch file" "$FLASHBED" sweep --file "$WORK/own.bin" --size 1m --chunks 4k --threads 1 \
    --runtime 0.05 --ramp 0 --engine null --out "$WORK/sw-own"
check "the scratch file starts with the marker" grep -q "^flashbed scratch file" <(head -c 64 "$WORK/own.bin")
check "sweep extends its own file" "$FLASHBED" sweep --file "$WORK/own.bin" --size 3m --chunks 4k --threads 1 \
    --runtime 0.05 --ramp 0 --engine null --out "$WORK/sw-own2"
check "extended to the size" test "$(stat -c %s "$WORK/own.bin")" = 3145728
check "still marked" grep -q "^flashbed scratch file" <(head -c 64 "$WORK/own.bin")
check "no scratch temporaries" no_temporaries

# ---- no direct I/O (tmpfs): refused, or recorded as not bypassed ----
SHM=$(mktemp -d /dev/shm/flashbed-outputs-XXXXXX 2>/dev/null)
if [ -n "$SHM" ] && [ "$(stat -f -c %T "$SHM")" = tmpfs ]; then
    cp -r "$WORK/m" "$SHM/m"
    expect_error "run on tmpfs: refused" "does not support direct I/O" \
        run --model "$SHM/m" --mode all --prompt "the cat" -n 2 --threads 1 --out "$WORK/run-shm"
    check "run on tmpfs: no result" test ! -e "$WORK/run-shm"
    check "run --buffered on tmpfs" "$FLASHBED" run --model "$SHM/m" --mode all --buffered --prompt "the cat" -n 2 \
        --threads 1 --out "$WORK/run-shm-buf"
    check "run --buffered: recorded as not bypassed" \
        test "$(json_get "$WORK/run-shm-buf/run.json" "d['provenance']['page_cache_bypassed']")" = False
    expect_error "sweep on tmpfs: refused" "does not support direct I/O" \
        sweep --file "$SHM/s.bin" --size 1m --chunks 4k --threads 1 --runtime 0.05 --ramp 0 --out "$WORK/sw-shm"
    rm -rf "$SHM"
else
    echo "outputs_bad_input: no tmpfs at /dev/shm; the no-direct-I/O cases are skipped"
    [ -n "$SHM" ] && rm -rf "$SHM"
fi
# calibrate from a sweep claims no more than the sweep recorded.
check "a sweep for calibrate" "$FLASHBED" sweep --file "$WORK/big-user.bin" --size 1m --chunks 4k,16k,64k \
    --threads 1,2 --runtime 0.05 --ramp 0 --engine null --out "$WORK/sw-cal"
check "calibrate --sweep" "$FLASHBED" calibrate --quick --sweep "$WORK/sw-cal/sweep.json" --out "$WORK/hw-sweep.json"
check "the profile's page_cache_bypassed is the sweep's" \
    test "$(json_get "$WORK/hw-sweep.json" "d['flash']['page_cache_bypassed']")" = \
    "$(json_get "$WORK/sw-cal/sweep.json" "d['page_cache_bypassed']")"

# ---- convert and model make make the folders missing above --out, and take
# them away again when they fail ----
check "convert into new folders" "$FLASHBED" convert "$WORK/hf" --out "$WORK/made/a/m"
check "convert: the model is there" test -s "$WORK/made/a/m/model.json"
check "model make into new folders" "$FLASHBED" model make --arch opt --shape opt-tiny --dtype f32 --out "$WORK/made/b/c/hf"
check "model make: the model is there" test -s "$WORK/made/b/c/hf/config.json"
expect_error "a failed convert into new folders" "none.bin" convert "$WORK/hf" --tokenizer "$WORK/none.bin" --out "$WORK/gone/a/m"
check "a failed convert: the folders it made are gone" test ! -e "$WORK/gone"
expect_error "a failed convert into an existing folder's new child" "none.bin" \
    convert "$WORK/hf" --tokenizer "$WORK/none.bin" --out "$WORK/made/new/m"
check "a failed convert: the folder that was there stays" test -d "$WORK/made" -a ! -e "$WORK/made/new"
rm -rf "$WORK/made"

# ---- Ctrl-C and SIGTERM: unfinished output removed, exit 128 + signal ----
# Starts the command in the background, waits until its temporary exists
# (the work has begun), signals it, and checks the status and that neither
# the temporary nor the destination is left. When the command finished
# before the signal, the case is skipped, saying so: never a random failure.
interrupt_case() { # description, signal, expected status, destination, command...
    local what=$1 sig=$2 want=$3 dest=$4
    shift 4
    "$FLASHBED" "$@" >/dev/null 2>"$WORK/sig.err" &
    local pid=$! waited=0
    until compgen -G "${TEMP_OF:-$dest}.tmp.*" >/dev/null || ! kill -0 $pid 2>/dev/null || [ $waited -ge 600 ]; do
        sleep 0.05
        waited=$((waited + 1))
    done
    sleep 0.3
    if ! kill -s "$sig" $pid 2>/dev/null; then
        wait $pid
        echo "outputs_bad_input: $what finished before the signal; case skipped"
        rm -rf "$dest" ${MADE_ABOVE:+"$MADE_ABOVE"}
        return
    fi
    wait $pid
    local rc=$?
    # kill succeeds on a process that has finished but is not yet reaped:
    # exit 0 means the work was done before the signal could stop it
    if [ $rc -eq 0 ]; then
        echo "outputs_bad_input: $what finished before the signal (exit 0); case skipped"
        rm -rf "$dest" ${MADE_ABOVE:+"$MADE_ABOVE"}
        return
    fi
    echo "outputs_bad_input: $what: exit $rc after SIG$sig"
    checks=$((checks + 1))
    if [ $rc -ne "$want" ]; then
        fail "$what: exit $rc after SIG$sig, expected $want ($(cat "$WORK/sig.err"))"
    fi
    check "$what: destination absent" test ! -e "$dest"
    check "$what: no temporary left" no_temporaries
    if [ -n "${MADE_ABOVE:-}" ]; then
        check "$what: the folders made above it are gone" test ! -e "$MADE_ABOVE"
    fi
}
# opt-125m in f32: about 0.5 GB, seconds to write and to convert.
interrupt_case "model make, Ctrl-C" INT 130 "$WORK/big-hf" \
    model make --arch opt --shape opt-125m --dtype f32 --out "$WORK/big-hf"
interrupt_case "model make, SIGTERM" TERM 143 "$WORK/big-hf" \
    model make --arch opt --shape opt-125m --dtype f32 --out "$WORK/big-hf"
check "a big model to convert" "$FLASHBED" model make --arch opt --shape opt-125m --dtype f32 --out "$WORK/src-hf"
interrupt_case "convert, Ctrl-C" INT 130 "$WORK/big" convert "$WORK/src-hf" --out "$WORK/big"
interrupt_case "convert, SIGTERM" TERM 143 "$WORK/big" convert "$WORK/src-hf" --out "$WORK/big"
# convert and model make make missing folders above --out; a signal takes them away again
MADE_ABOVE="$WORK/new1" interrupt_case "convert into new folders, Ctrl-C" INT 130 "$WORK/new1/new2/big" \
    convert "$WORK/src-hf" --out "$WORK/new1/new2/big"
MADE_ABOVE="$WORK/new3" interrupt_case "model make into a new folder, SIGTERM" TERM 143 "$WORK/new3/big-hf" \
    model make --arch opt --shape opt-125m --dtype f32 --out "$WORK/new3/big-hf"
# trace synth polls: it stops, removes the unfinished trace, and says so.
TEMP_OF="$WORK/synth" interrupt_case "trace synth, Ctrl-C" INT 130 "$WORK/synth.trace" \
    trace synth --shape opt-6.7b --tokens 4000 --out "$WORK/synth.trace"
# trace export writes its folder under a temporary a signal removes
check "a trace to export" "$FLASHBED" trace synth --shape opt-1.3b --tokens 200 --seed 1 --out "$WORK/export.trace"
interrupt_case "trace export, Ctrl-C" INT 130 "$WORK/exported" trace export "$WORK/export.trace" --out "$WORK/exported"
MADE_ABOVE="$WORK/new4" interrupt_case "trace export into new folders, SIGTERM" TERM 143 "$WORK/new4/exported" \
    trace export "$WORK/export.trace" --format npz-friendly --out "$WORK/new4/exported"
# calibrate polls: the first Ctrl-C stops the sweep at a safe point; no
# profile is written from a cut sweep, and its scratch temporary is gone.
# (the signal is sent once the scratch file's temporary exists: while it is
# written, or, on a fast disk, during the sweep that follows)
TEMP_OF="$WORK/cal.bin" interrupt_case "calibrate, Ctrl-C" INT 130 "$WORK/hw-cut.json" \
    calibrate --quick --file "$WORK/cal.bin" --size 2g --out "$WORK/hw-cut.json"
# without --file its own scratch file, made beside the profile, goes too
TEMP_OF="$WORK/hw-cut2-sweep/scratch.bin" interrupt_case "calibrate, its own scratch file, Ctrl-C" INT 130 \
    "$WORK/hw-cut2.json" calibrate --quick --size 2g --out "$WORK/hw-cut2.json"
check "calibrate, Ctrl-C: its own scratch file removed" test ! -e "$WORK/hw-cut2-sweep/scratch.bin"
check "calibrate wrote nothing into the working folder's results/" test ! -e "$WORK/results"
rm -rf "$WORK/src-hf" "$WORK/results" "$WORK/cal.bin" "$WORK/hw-cut-sweep" "$WORK/hw-cut2-sweep"

finish
