#!/usr/bin/env bash
# Writes that fail: every writer leaves nothing partial and the user's files
# untouched, tested through real failures, not by construction. Two ways:
#   - `ulimit -f` with SIGXFSZ ignored: write() itself fails (EFBIG) in the
#     middle of a file, whichever writer and stdio path it is;
#   - the preloaded shim helpers/fb_fault_write.c ($FB_FAULT_SHIM): fsync,
#     fclose or rename of a chosen file fails with ENOSPC or EIO.
# Over convert, model make, run --record, run's result files, trace synth,
# predictor train --force and eval, replay, predict and sweep: exit 1 with an error line
# naming the user's file (never a temporary), the injection seen, no
# temporary left, the output absent or, where it existed, byte-identical.
source "$(dirname "$0")/lib.sh"

SHIM=${FB_FAULT_SHIM:-}
if [ -z "$SHIM" ] || [ ! -f "$SHIM" ]; then
    echo "skipped: FB_FAULT_SHIM (helpers/fb_fault_write.c built as a module) not given"
    exit 77
fi
# the shim is preloaded ahead of a sanitized binary's runtime
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0"

# shim CALL ERRNO PATH-PART command...: the first CALL on a file whose path has
# PATH-PART (ending in $: ends with it) fails; the command may be a function.
shim() {
    local call=$1 e=$2 part=$3
    shift 3
    (export LD_PRELOAD="$SHIM" FB_FAULT_CALL="$call" FB_FAULT_ERRNO="$e" FB_FAULT_PATH="$part"; "$@")
}
# fsize KIB command...: no file may grow past KIB KiB; write() fails with EFBIG instead.
fsize() {
    local kib=$1
    shift
    (trap '' XFSZ; ulimit -f "$kib"; "$@")
}
tree_sum() { (cd "$1" && find . -type f -print0 | sort -z | xargs -0 sha256sum) | sha256sum | cut -c1-64; }
no_tmp() { test -z "$(find "$WORK" -name '*.tmp.*' -o -name '*.tmp')"; }

# write_fails WHAT ERROR-PATTERN INJECTED-PATTERN command...: exit 1, the
# error line, the injection reported (the shim's line, or EFBIG's message),
# no temporary anywhere under WORK.
write_fails() {
    local what=$1 pattern=$2 injected=$3
    shift 3
    checks=$((checks + 1))
    local out rc
    out=$("$@" 2>&1 >/dev/null)
    rc=$?
    if [ $rc -ne 1 ]; then
        fail "$what: exit $rc, expected 1: $out"
    elif ! grep -q "error: .*$pattern" <<<"$out"; then
        fail "$what: no error line with '$pattern': $out"
    elif ! grep -q -- "$injected" <<<"$out"; then
        fail "$what: the fault was not injected ('$injected'): $out"
    elif grep -q "error: .*\.tmp\." <<<"$out"; then
        fail "$what: the error names a temporary: $out"
    elif ! no_tmp; then
        fail "$what: temporaries left: $(find "$WORK" -name '*.tmp*')"
    fi
}
FULL="File too large"

check "model make" "$FLASHBED" model make --arch opt --shape opt-tiny --dtype f32 --seed 5 --relu-density 0.15 --out "$WORK/hf"
HF_SUM=$(tree_sum "$WORK/hf")

# ---- model make: the Hugging Face folder
write_fails "model make, write past the limit" "mk1/model.safetensors: cannot write .*: $FULL" "$FULL" fsize 64 "$FLASHBED" model make --arch opt --shape opt-tiny --out "$WORK/mk1"
write_fails "model make, ENOSPC at close" "mk2" "fclose of .*mk2.* fails with ENOSPC" shim fclose ENOSPC /mk2 "$FLASHBED" model make --arch opt --shape opt-tiny --out "$WORK/mk2"
write_fails "model make, EIO at rename" "mk3" "rename of .*mk3 fails with EIO" shim rename EIO '/mk3$' "$FLASHBED" model make --arch opt --shape opt-tiny --out "$WORK/mk3"
check "model make: nothing written" test ! -e "$WORK/mk1" -a ! -e "$WORK/mk2" -a ! -e "$WORK/mk3"

# ---- convert: the flashbed model folder; the checkpoint read, never touched
write_fails "convert, write past the limit" "cv1" "$FULL" fsize 64 "$FLASHBED" convert "$WORK/hf" --out "$WORK/cv1"
write_fails "convert, ENOSPC closing ffn.bin" "cv2" "fclose of .*ffn.bin fails with ENOSPC" shim fclose ENOSPC /ffn.bin "$FLASHBED" convert "$WORK/hf" --out "$WORK/cv2"
write_fails "convert, EIO closing model.json" "cv3" "fclose of .*model.json fails with EIO" shim fclose EIO /model.json "$FLASHBED" convert "$WORK/hf" --out "$WORK/cv3"
write_fails "convert, EIO at rename" "cv4" "rename of .*cv4 fails with EIO" shim rename EIO '/cv4$' "$FLASHBED" convert "$WORK/hf" --out "$WORK/cv4"
check "convert: nothing written" test ! -e "$WORK/cv1" -a ! -e "$WORK/cv2" -a ! -e "$WORK/cv3" -a ! -e "$WORK/cv4"
check "convert: the checkpoint untouched" test "$(tree_sum "$WORK/hf")" = "$HF_SUM"
check "convert" "$FLASHBED" convert "$WORK/hf" --out "$WORK/m"
M="$WORK/m"
M_SUM=$(tree_sum "$M")
P="the cat sat on the mat"
run() { "$FLASHBED" run --model "$M" --prompt "$P" -n 4 --ignore-eos --threads 1 --io-threads 2 --buffered --quiet "$@"; }

# ---- run --record: the trace; a trace the user had there (replaced only with
# --force) stays as it was when the write fails
echo "the user's trace" >"$WORK/rec.trace"
REC_SUM=$(sha256sum <"$WORK/rec.trace")
write_fails "run --record, EIO closing the trace" "run --record: .*rec.trace" "fclose of .*rec.tmp.* fails with EIO" shim fclose EIO /rec.tmp run --out "$WORK/r1" --record "$WORK/rec.trace" --force
write_fails "run --record, ENOSPC at rename" "run --record: .*rec.trace" "rename of .*rec.trace fails with ENOSPC" shim rename ENOSPC /rec.trace run --out "$WORK/r2" --record "$WORK/rec.trace" --force
write_fails "run --record, run.json past the limit" "r3/run.json" "$FULL" fsize 8 run --out "$WORK/r3" --record "$WORK/rec.trace" --force
check "run --record: the user's trace untouched" test "$(sha256sum <"$WORK/rec.trace")" = "$REC_SUM"

# ---- run's result files: run.json, run.md, tokens.csv; an earlier run's files stay whole
check "a run" run --out "$WORK/res"
RES_SUM=$(tree_sum "$WORK/res")
write_fails "run.json, EIO at fsync" "res/run.json" "fsync of .*res/run.tmp.* fails with EIO" shim fsync EIO /res/run.tmp run --out "$WORK/res"
FB_FAULT_NTH=2 write_fails "run.md, ENOSPC at close" "res/run.md" "fclose of .*res/run.tmp.*md fails with ENOSPC" shim fclose ENOSPC /res/run.tmp. run --out "$WORK/res"
FB_FAULT_NTH=3 write_fails "tokens.csv, EIO at close" "res/tokens.csv" "fclose of .*tokens.tmp.* fails with EIO" shim fclose EIO /res/ run --out "$WORK/res"
write_fails "run.json, EIO at rename" "res/run.json" "rename of .*res/run.json fails with EIO" shim rename EIO '/res/run.json$' run --out "$WORK/res"
write_fails "run.json past the limit" "res/run.json" "$FULL" fsize 4 run --out "$WORK/res"
check "run: the earlier results untouched" test "$(tree_sum "$WORK/res")" = "$RES_SUM"
check "run: the model untouched" test "$(tree_sum "$M")" = "$M_SUM"

# ---- trace synth
echo "the user's synthetic trace" >"$WORK/syn.trace"
SYN_SUM=$(sha256sum <"$WORK/syn.trace")
synth() { "$FLASHBED" trace synth --shape opt-tiny --tokens 400 --seed 7 --out "$WORK/syn.trace"; }
write_fails "trace synth, write past the limit" "syn.trace" "$FULL" fsize 8 synth
write_fails "trace synth, ENOSPC at close" "syn.trace" "fclose of .*syn.tmp.* fails with ENOSPC" shim fclose ENOSPC /syn.tmp synth
write_fails "trace synth, EIO at rename" "syn.trace" "rename of .*syn.trace fails with EIO" shim rename EIO /syn.trace synth
check "trace synth: the user's file untouched" test "$(sha256sum <"$WORK/syn.trace")" = "$SYN_SUM"
check "trace synth" "$FLASHBED" trace synth --shape opt-tiny --tokens 40 --seed 7 --out "$WORK/t.trace"

# ---- replay's result files
replay() { "$FLASHBED" replay --trace "$WORK/t.trace" --policy window:5 --layout bundled --quiet --out "$WORK/rp"; }
write_fails "replay.json, ENOSPC at fsync" "rp/replay.json" "fsync of .*rp/replay.tmp.* fails with ENOSPC" shim fsync ENOSPC /rp/replay.tmp replay
check "replay: no replay.json" test ! -e "$WORK/rp/replay.json"
check "replay" replay
RP_SUM=$(tree_sum "$WORK/rp")
FB_FAULT_NTH=2 write_fails "replay.csv, EIO at close" "rp/replay.csv" "fclose of .*rp/replay.tmp.*csv fails with EIO" shim fclose EIO /rp/replay.tmp. replay
write_fails "replay.json, ENOSPC at rename" "rp/replay.json" "rename of .*rp/replay.json fails with ENOSPC" shim rename ENOSPC '/rp/replay.json$' replay
check "replay: the earlier results untouched" test "$(tree_sum "$WORK/rp")" = "$RP_SUM"
predict() { "$FLASHBED" predict --model opt-tiny --out "$WORK/pr"; }
check "predict" predict
PR_SUM=$(tree_sum "$WORK/pr")
FB_FAULT_NTH=2 write_fails "predict.md, ENOSPC at fsync" "pr/predict.md" "fsync of .*pr/predict.tmp.*md fails with ENOSPC" shim fsync ENOSPC /pr/predict.tmp. predict
check "predict: the earlier results untouched" test "$(tree_sum "$WORK/pr")" = "$PR_SUM"

# ---- predictor train --force: the model's predictor and model.json stay as they were
for i in $(seq 300); do printf 'the cat sat on the mat and the dog ran to the park. '; done >"$WORK/text.txt"
train() { "$FLASHBED" predictor train --model "$M" --text "$WORK/text.txt" --tokens 200 --rank 8 --epochs 1 --threads 1 --force; }
check "predictor train" train
M_SUM=$(tree_sum "$M")
write_fails "predictor train, EIO closing the weights" "predictor" "fclose of .*predictor.* fails with EIO" shim fclose EIO /predictor.tmp. train
write_fails "predictor train, ENOSPC at fsync of model.json" "model.json" "fsync of .*model.* fails with ENOSPC" shim fsync ENOSPC /model. train
write_fails "predictor train, write past the limit" "predictor.safetensors: write failed: $FULL" "$FULL" fsize 4 train
check "predictor train: the model folder untouched" test "$(tree_sum "$M")" = "$M_SUM"
evaluate() { "$FLASHBED" predictor eval --model "$M" --text "$WORK/text.txt" --skip 200 --tokens 100 --threads 1 --out "$WORK/ev"; }
check "predictor eval" evaluate
EV_SUM=$(tree_sum "$WORK/ev")
FB_FAULT_NTH=3 write_fails "predictor eval, fig9a.csv EIO at close" "ev/fig9a.csv" "fclose of .*ev/fig9a.tmp.* fails with EIO" shim fclose EIO /ev/ evaluate
write_fails "predictor eval, eval.json past the limit" "ev/eval.json" "$FULL" fsize 1 evaluate
check "predictor eval: the earlier results untouched" test "$(tree_sum "$WORK/ev")" = "$EV_SUM"

# ---- sweep's result files
head -c $((4 << 20)) /dev/urandom >"$WORK/data.bin"
sweep() { "$FLASHBED" sweep --file "$WORK/data.bin" --size 4m --chunks 4k --threads 1 --runtime 0.02 --ramp 0 --engine psync --buffered --out "$WORK/sw"; }
write_fails "sweep.json, EIO at rename" "sw/sweep.json" "rename of .*sweep.json fails with EIO" shim rename EIO '/sw/sweep.json$' sweep
FB_FAULT_NTH=2 write_fails "sweep.csv, ENOSPC at fsync" "sw/sweep.csv" "fsync of .*sweep.tmp.*csv fails with ENOSPC" shim fsync ENOSPC /sw/sweep.tmp. sweep
check "sweep: none of its files" test -z "$(ls "$WORK/sw" 2>/dev/null)"
finish
