#!/usr/bin/env bash
# The mistakes newcomers make, each answered in words they can act on
# (issue 35): a typed command, subcommand or option gets "did you mean";
# a global option after the command says where it goes; a size or budget
# without a unit is refused with its likely meaning (25 -> 25%, 64 -> 64G)
# on every option that takes one, "25B" being bytes; a --hw that names no
# profile lists the profiles there are, the calibrated ones in ./results
# included, and how to make one; a folder that is not a model says so; and
# every command's --help states each option's default once.
source "$(dirname "$0")/lib.sh"

# said EXIT WHAT LINE COMMAND...: the command exits EXIT and its error
# output is exactly LINE (the first line when there are more).
said() {
    local want_rc=$1 what=$2 line=$3
    shift 3
    checks=$((checks + 1))
    local err rc
    err=$("$@" 2>&1 >/dev/null)
    rc=$?
    if [ $rc -ne "$want_rc" ]; then
        fail "$what: exit $rc, expected $want_rc: $err"
    elif [ "$(head -1 <<<"$err")" != "$line" ]; then
        fail "$what: said '$(head -1 <<<"$err")', expected '$line'"
    fi
}

check "opt-tiny model" "$FLASHBED" model make --arch opt --shape opt-tiny --dtype f32 --seed 5 --out "$WORK/opt-hf"
check "convert it" "$FLASHBED" convert "$WORK/opt-hf" --out "$WORK/opt"
M="$WORK/opt"
E="flashbed: error:"

# ---- did you mean
said 2 "a command's typo" "$E unknown command 'rnu': did you mean 'run'? (sweep, calibrate, predict, trace, replay, convert, generate, perplexity, run, predictor, sparsify, model or reproduce)" \
    "$FLASHBED" rnu
said 2 "help of a typo" "$E unknown command 'replya': did you mean 'replay'? (sweep, calibrate, predict, trace, replay, convert, generate, perplexity, run, predictor, sparsify, model or reproduce)" \
    "$FLASHBED" help replya
said 2 "nothing near" "$E unknown command 'benchmark' (sweep, calibrate, predict, trace, replay, convert, generate, perplexity, run, predictor, sparsify, model or reproduce)" \
    "$FLASHBED" benchmark
said 2 "a subcommand's typo" "$E trace: unknown subcommand 'inof': did you mean 'info'? (info, synth or export)" \
    "$FLASHBED" trace inof
said 2 "predictor's" "$E predictor: unknown subcommand 'trian': did you mean 'train'? (train or eval)" "$FLASHBED" predictor trian
said 2 "sparsify's" "$E sparsify: unknown subcommand 'calibrat': did you mean 'calibrate'? (calibrate or study)" \
    "$FLASHBED" sparsify calibrat
said 2 "model's" "$E model: unknown subcommand 'verfy': did you mean 'verify'? (make, verify or transpose)" "$FLASHBED" model verfy
said 2 "model without one" "$E model: needs a subcommand, make, verify or transpose, before its options" \
    "$FLASHBED" model --arch opt
said 2 "an option's typo" "$E run: unknown option '--dram-buget'; did you mean --dram-budget? (see flashbed run --help)" \
    "$FLASHBED" run --model "$M" --dram-buget 50%
said 2 "an option's typo with =" "$E sweep: unknown option '--chunk'; did you mean --chunks? (see flashbed sweep --help)" \
    "$FLASHBED" sweep --chunk=4k
said 2 "an option's transposed letters" "$E generate: unknown option '--promtp'; did you mean --prompt? (see flashbed generate --help)" \
    "$FLASHBED" generate --model "$M" --promtp x
said 2 "--help's typo" "$E replay: unknown option '--hlep'; did you mean --help? (see flashbed replay --help)" \
    "$FLASHBED" replay --hlep
said 2 "a subcommand's option" "$E trace synth: unknown option '--token'; did you mean --tokens? (see flashbed trace synth --help)" \
    "$FLASHBED" trace synth --token 5 --out "$WORK/t.trace"
said 2 "a global option after the command" "$E run: --configs is a global option: it goes before the command (flashbed --configs ... run ...)" \
    "$FLASHBED" run --model "$M" --configs "$WORK"
said 2 "a global flag after the command" "$E predict: --no-pin is a global option: it goes before the command (flashbed --no-pin ... predict ...)" \
    "$FLASHBED" predict --no-pin
said 2 "near a global option" "$E replay: unknown option '--plot-dir'; did you mean the global option --plots-dir? (it goes before the command) (see flashbed replay --help)" \
    "$FLASHBED" replay --plot-dir x
said 2 "a global option's typo" "$E unknown option '--confgs' before the command; did you mean --configs? (see flashbed --help)" \
    "$FLASHBED" --confgs x run
said 2 "a command's option before it" "$E unknown option '--model' before the command; a command's own options go after the command (flashbed COMMAND --model) (see flashbed --help)" \
    "$FLASHBED" --model x run

# ---- a size or budget without its unit, on every option that takes one
U="has no unit: did you mean"
said 2 "predict --dram-budget 25" "$E predict --dram-budget: '25' $U 25%? (a share is written 25%, a size 25B for bytes, or 25K, 25M, 25G)" \
    "$FLASHBED" predict --dram-budget 25 --out "$WORK/p1"
check "predict --dram-budget 2000000000B runs" "$FLASHBED" predict --dram-budget 2000000000B --out "$WORK/p2"
check "predict: the bytes as given" test "$(grep -c . "$WORK/p2/predict.md")" -gt 0
check "a trace" "$FLASHBED" trace synth --shape opt-tiny --tokens 16 --out "$WORK/t.trace"
said 2 "replay --dram-budget, one of a list" "$E replay --dram-budget '10%,25': budget 2: '25' $U 25%? (a share is written 25%, a size 25B for bytes, or 25K, 25M, 25G)" \
    "$FLASHBED" replay --trace "$WORK/t.trace" --dram-budget 10%,25 --out "$WORK/r1"
check "replay --dram-budget 0,64K,4096B: 0 needs no unit" "$FLASHBED" replay --trace "$WORK/t.trace" --dram-budget 0,64K,4096B \
    --out "$WORK/r2" --quiet
check "replay: 4096B is 4096 bytes" test "$(json_get "$WORK/r2/replay.json" "sorted(set(r['dram_budget_bytes'] for r in d['results']))")" = "[0, 4096, 65536]"
RUN=(run --model "$M" --prompt "the cat" -n 2 --threads 1 --quiet)
said 2 "run --dram-budget 50" "$E run --dram-budget '50': '50' $U 50%? (a share is written 50%, a size 50B for bytes, or 50K, 50M, 50G)" \
    "$FLASHBED" "${RUN[@]}" --dram-budget 50 --out "$WORK/run1"
said 2 "run --device-budget 30" "$E run --device-budget '30': '30' $U 30%? (a share is written 30%, a size 30B for bytes, or 30K, 30M, 30G)" \
    "$FLASHBED" "${RUN[@]}" --backend sim --device-budget 30 --out "$WORK/run2"
said 2 "sweep --size 256: no unit guessed" "$E sweep --size: '256' $U 256k or 256m? (a size is written 256B for bytes, or 256K, 256M, 256G)" \
    "$FLASHBED" sweep --file "$WORK/s.bin" --size 256 --out "$WORK/sw"
said 2 "calibrate --size 64" "$E calibrate --size: '64' $U 64G? (a size is written 64B for bytes, or 64K, 64M, 64G)" \
    "$FLASHBED" calibrate --size 64 --out "$WORK/hw.json"
said 2 "reproduce --memory 16" "$E reproduce --memory: '16' $U 16G? (a size is written 16B for bytes, or 16K, 16M, 16G)" \
    "$FLASHBED" reproduce --memory 16 --check-plan --out "$WORK/repro"
check "reproduce --memory 0: this machine's" "$FLASHBED" reproduce --memory 0 --check-plan --out "$WORK/repro"
check "nothing written by the refusals" test ! -e "$WORK/p1" -a ! -e "$WORK/r1" -a ! -e "$WORK/run1" -a ! -e "$WORK/run2" \
    -a ! -e "$WORK/sw" -a ! -e "$WORK/s.bin" -a ! -e "$WORK/hw.json"

# ---- --hw that names no profile: the ones there are, and how to make one
mkdir -p "$WORK/cwd/results"
cp "$FLASHBED_SOURCE/configs/hw/m1max-cpu.json" "$WORK/cwd/results/hw-box.json"
NOHW="$E hardware profile 'nope': no such profile ($FLASHBED_SOURCE/configs/hw/nope.json: No such file or directory); the profiles in $FLASHBED_SOURCE/configs/hw: m1max-cpu, m1max-metal, m2ultra-metal, rtx4090-gpu"
HOW="make one for this machine with flashbed calibrate (it writes results/hw-HOSTNAME.json; --hw that path)"
said 1 "predict --hw nope" "$NOHW; $HOW" "$FLASHBED" --configs "$FLASHBED_SOURCE/configs" predict --hw nope --out "$WORK/p3"
said 1 "with calibrated ones here" "$NOHW; calibrated here (give the path): results/hw-box.json; $HOW" \
    bash -c "cd '$WORK/cwd' && '$FLASHBED' --configs '$FLASHBED_SOURCE/configs' predict --hw nope --out '$WORK/p3'"
check "the path it names works" bash -c "cd '$WORK/cwd' && '$FLASHBED' predict --hw results/hw-box.json --out '$WORK/p4'"
said 1 "replay --hw nope" "$E replay --hw 'nope': hardware profile 'nope': no such profile ($FLASHBED_SOURCE/configs/hw/nope.json: No such file or directory); the profiles in $FLASHBED_SOURCE/configs/hw: m1max-cpu, m1max-metal, m2ultra-metal, rtx4090-gpu; $HOW" \
    "$FLASHBED" --configs "$FLASHBED_SOURCE/configs" replay --trace "$WORK/t.trace" --hw nope --out "$WORK/r3"

# ---- a folder that is not a model
mkdir -p "$WORK/notes"
said 1 "generate --model a plain folder" "$E $WORK/notes is not a flashbed model folder: no model.json; convert one with flashbed convert" \
    "$FLASHBED" generate --model "$WORK/notes" --prompt x
said 1 "run --model the HF folder" "$E $WORK/opt-hf is not a flashbed model folder: no model.json; convert one with flashbed convert" \
    "$FLASHBED" "${RUN[@]}" --model "$WORK/opt-hf" --out "$WORK/run3"
said 1 "model verify a file" "$E model verify: $WORK/opt/model.json is not a flashbed model folder: not a folder; convert one with flashbed convert" \
    "$FLASHBED" model verify "$WORK/opt/model.json"

# ---- every --help: each default said once, none contradicting another
for cmd in "" sweep calibrate predict replay convert generate perplexity run reproduce "trace info" "trace synth" \
    "trace export" "predictor train" "predictor eval" "sparsify calibrate" "sparsify study" "model make" "model verify" \
    "model transpose"; do
    help=$("$FLASHBED" $cmd --help)
    check "flashbed $cmd --help: exit 0, options listed" test $? -eq 0 -a -n "$(grep -- '^  --' <<<"$help")"
    twice=$(grep -iE 'default.*default' <<<"$help")
    check "flashbed $cmd --help: no option states its default twice${twice:+: $twice}" test -z "$twice"
done
check "reproduce --memory: its default once" test "$("$FLASHBED" reproduce --help | grep -c -- "--memory SIZE .*\[default: 0, this machine's memory\]$")" = 1
check "a table default shown" bash -c "'$FLASHBED' sweep --help | grep -q -- '--size BYTES .*\[default: 4G\]'"
finish
