#!/usr/bin/env bash
# The transformers fixtures (tests/data/<arch>_fixture, tools/make_hf_fixture.py)
# through the flash path, as a user runs them: `flashbed convert` the
# folder, then `flashbed run --mode all --active oracle` on the reference's
# prompt ids (--prompt-ids) must generate transformers' greedy tokens, with
# the FFN read from flash through the neuron cache. For the ReLU family the
# run's --record trace must equal, set for set, the one PyTorch's hooks
# recorded on transformers' model (recorded.trace: python/flashbed_record.py,
# compared by tools/recorder_check.py). tools/hf_reference.py, the pure-Python
# reference of engine_hf_archs.sh, must give transformers' logits too. Needs
# python3 (the standard library), no torch, no transformers. Then
# --prompt-ids' refusals and the reference environment's pins.
source "$(dirname "$0")/lib.sh"

DATA="$FLASHBED_SOURCE/tests/data"
COMPARE="$FLASHBED_SOURCE/tools/recorder_check.py"

# A placeholder tokenizer.bin (llama2.c's layout) of $2 pieces: the
# fixtures other than OPT ship none, and their ids are fed as they are.
placeholder_tokenizer() { # path, vocabulary size
    python3 - "$1" "$2" <<'PY'
import struct, sys
path, vocab = sys.argv[1], int(sys.argv[2])
with open(path, "wb") as f:
    f.write(struct.pack("<i", 8))
    for i in range(vocab):
        piece = ("<0x%02X>" % i if i < 256 else "w%d" % i).encode()
        f.write(struct.pack("<fi", -float(i), len(piece)) + piece)
PY
}

# The ids the run fed after its prompt, space-separated (tokens.csv).
generated_ids() { # run folder
    awk -F, '$3 == "generated" { printf "%s%s", sep, $2; sep = " " }' "$1/tokens.csv"
}

# Runs a command with its output kept in $LOG (shown only on failure).
LOG="$WORK/last.log"
logged() {
    "$@" > "$LOG" 2>&1 || { cat "$LOG" >&2; return 1; }
}

# The largest |a - b| between tools/hf_reference.py's logits (text rows on
# stdin's file $1) and the fixture's logits.f32 ($2), within $3.
reference_agrees() { # hf_reference.py output, logits.f32, tolerance, name
    python3 - "$@" <<'PY'
import struct, sys
rows = [list(map(float, l.split())) for l in open(sys.argv[1])]
raw = open(sys.argv[2], "rb").read()
vocab = len(rows[0]) if rows else 0
if not rows or len(raw) != 4 * len(rows) * vocab:
    sys.exit("%d rows of %d logits against %d bytes" % (len(rows), vocab, len(raw)))
flat = struct.unpack("<%df" % (len(raw) // 4), raw)
worst = max(abs(v - flat[p * vocab + i]) for p, row in enumerate(rows) for i, v in enumerate(row))
print("  %s: hf_reference.py against transformers: max |delta logit| %.3g" % (sys.argv[4], worst))
sys.exit(worst > float(sys.argv[3]))
PY
}

fixture_case() { # arch
    local arch=$1 fx="$DATA/$1_fixture" w="$WORK/$1"
    mkdir -p "$w"
    local ref="$fx/reference.json" tok=()
    json_get "$ref" '"\n".join(map(str, d["prompt_ids"]))' > "$w/prompt.ids"
    local want n
    want=$(json_get "$ref" '" ".join(map(str, d["greedy_ids"]))')
    n=$(json_get "$ref" 'len(d["greedy_ids"])')
    if [ ! -f "$fx/tokenizer.json" ]; then
        placeholder_tokenizer "$w/tok.bin" "$(json_get "$fx/config.json" 'd["vocab_size"]')"
        tok=(--tokenizer "$w/tok.bin")
    fi
    # the pure-Python double-precision reference that engine_hf_archs.sh
    # trusts on the paper's shapes, against transformers itself
    python3 "$FLASHBED_SOURCE/tools/hf_reference.py" "$fx" $(json_get "$ref" '" ".join(map(str, d["prompt_ids"] + d["greedy_ids"]))') \
        > "$w/hf_reference.txt"
    check "$arch: tools/hf_reference.py equals transformers within 1e-4" \
        reference_agrees "$w/hf_reference.txt" "$fx/logits.f32" 1e-4 "$arch"
    check "$arch: convert" logged "$FLASHBED" convert "$fx" "${tok[@]}" --out "$w/m"
    # n + 1: the run forwards every token it generates but the last, and
    # the recorder forwarded all n of transformers' greedy tokens
    check "$arch: run --mode all --active oracle" logged "$FLASHBED" run --model "$w/m" --mode all --active oracle \
        --prompt-ids "$w/prompt.ids" -n $((n + 1)) --ignore-eos --record "$w/flashbed.trace" --out "$w/run" --quiet
    local got
    got=$(generated_ids "$w/run" | cut -d' ' -f1-"$n")
    check "$arch: the flash path generates transformers' greedy tokens ($want; got $got)" test "$got" = "$want"
    if [ -f "$fx/recorded.trace" ]; then
        check "$arch: the run's active sets equal PyTorch's hooks on transformers" \
            logged python3 "$COMPARE" compare "$fx/recorded.trace" "$w/flashbed.trace" --json "$w/compare.json"
        echo "  $arch: $(json_get "$w/compare.json" \
            '"%d tokens x %d layers, %d of %d sets equal" % (d["tokens"], d["layers"], d["sets_equal"], d["sets_compared"])')"
    fi
}

for arch in opt llama llama-relu falcon falcon-gelu persimmon phi phi-gelu phi3 drelu prosparse llama3 mistral qwen2 \
    qwen3 phi3_longrope; do
    fixture_case "$arch"
done
check "every ReLU-family fixture has a recorded trace" \
    test "$(ls "$DATA"/{opt,llama-relu,falcon,persimmon,phi,drelu,prosparse}_fixture/recorded.trace | wc -l)" -eq 7

# --prompt-ids' refusals name the option and the file, and leave no result folder
M="$WORK/opt/m"
printf '5 17\n# a comment\n900\n' > "$WORK/outside.ids"
expect_error "an id outside the vocabulary" "--prompt-ids $WORK/outside.ids: id 3, '900', is not a token id below 320" \
    run --model "$M" --prompt-ids "$WORK/outside.ids" -n 2 --out "$WORK/bad-run"
printf '5 x7\n' > "$WORK/word.ids"
expect_error "a word that is not an id" "id 2, 'x7', is not a token id" \
    generate --model "$M" --prompt-ids "$WORK/word.ids" -n 2
printf '# nothing\n\n' > "$WORK/empty.ids"
expect_error "no ids" "empty.ids: holds no token ids" run --model "$M" --prompt-ids "$WORK/empty.ids" -n 2 \
    --out "$WORK/bad-run"
expect_error "a missing file" "$WORK/none.ids: cannot read" run --model "$M" --prompt-ids "$WORK/none.ids" -n 2 \
    --out "$WORK/bad-run"
EXPECT_RC=2 expect_error "with --prompt too" "needs exactly one of --prompt TEXT, --prompt-file FILE and --prompt-ids FILE" \
    run --model "$M" --prompt "hi" --prompt-ids "$WORK/outside.ids" -n 2 --out "$WORK/bad-run"
check "no result folder after the refusals" test ! -e "$WORK/bad-run"
# with ids a prompt needs no tokenizer: generate's ids are the dense engine's greedy ones too
"$FLASHBED" generate --model "$M" --prompt-ids "$WORK/opt/prompt.ids" --temperature 0 -n 8 --json "$WORK/gen.json" \
    > /dev/null 2>&1
check "generate --prompt-ids: the prompt fed as given" \
    test "$(json_get "$WORK/gen.json" '" ".join(map(str, d["prompt_token_ids"]))')" = "$(tr '\n' ' ' < "$WORK/opt/prompt.ids" | sed 's/ $//')"
check "generate --prompt-ids: transformers' greedy tokens" \
    test "$(json_get "$WORK/gen.json" '" ".join(str(t["id"]) for t in d["tokens"])')" = \
    "$(json_get "$DATA/opt_fixture/reference.json" '" ".join(map(str, d["greedy_ids"]))')"

# the reference environment's pins: an interpreter without them is refused,
# every missing or different package named (a copy of the pins with one
# package nobody has, so the check holds on any machine)
PINS="$WORK/reference-env"
cp -r "$FLASHBED_SOURCE/tools/reference-env" "$PINS"
echo "flashbed-no-such-package==1.0" >> "$PINS/requirements.txt"
python3 "$PINS/pins.py" 2> "$WORK/pins.err"
check "pins.py: an interpreter without a pinned package is refused" test $? -eq 1
check "pins.py: the package named with its pin and where it comes from" \
    grep -q "flashbed-no-such-package 1.0 (PyPI) is missing" "$WORK/pins.err"
if ! python3 "$FLASHBED_SOURCE/tools/reference-env/pins.py" 2> /dev/null; then
    python3 "$FLASHBED_SOURCE/tools/make_hf_fixture.py" --out "$WORK/regen" 2> "$WORK/regen.err"
    check "make_hf_fixture.py refuses an unpinned interpreter" test $? -ne 0
    check "make_hf_fixture.py says why" grep -q "needs the pinned reference environment" "$WORK/regen.err"
    check "make_hf_fixture.py wrote nothing" test ! -e "$WORK/regen"
fi
finish
