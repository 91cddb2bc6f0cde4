#!/usr/bin/env bash
# Models as users bring them (issue 47): a Hugging Face folder with
# SentencePiece's tokenizer.model instead of tokenizer.json converts (its
# tokenizer read: engine/tokenizer/tokenizer_spm.h); a bare
# model.safetensors, a folder of pytorch_model.bin and a folder without a
# tokenizer each get a message that says what flashbed expects and the
# shortest way there; a damaged tokenizer.model is named, nothing left.
source "$(dirname "$0")/lib.sh"
SPM="$FLASHBED_SOURCE/tests/data/spm/tokenizer.model"

# a Llama folder whose vocabulary is the fixture's 1000 pieces
sed -e 's/"vocab_size": 512/"vocab_size": 1000/' -e 's/"name": "llama-tiny"/"name": "llama-spm"/' \
    "$FLASHBED_SOURCE/configs/models/llama-tiny.json" >"$WORK/llama-spm.json"
check "a Llama folder" "$FLASHBED" model make --arch llama --shape "$WORK/llama-spm.json" --dtype f32 --seed 3 \
    --out "$WORK/hf"
rm "$WORK/hf/tokenizer.json"
cp "$SPM" "$WORK/hf/tokenizer.model"
check "tokenizer.model instead of tokenizer.json: converts" "$FLASHBED" convert "$WORK/hf" --out "$WORK/m"
check "its tokenizer: SentencePiece, from tokenizer.model" test \
    "$(json_get "$WORK/m/model.json" '(d["tokenizer"]["kind"], d["tokenizer"]["file"], d["source"]["tokenizer"].endswith("/tokenizer.model"))')" \
    = "('sentencepiece-bpe', 'tokenizer.bin', True)"
check "the converted model generates" "$FLASHBED" generate --model "$WORK/m" --prompt "Hello world" -n 3

# said WHAT PATTERN COMMAND...: exit 1, one error line holding PATTERN (fixed text)
said() {
    local what=$1 want=$2
    shift 2
    checks=$((checks + 1))
    local err rc
    err=$("$FLASHBED" "$@" 2>&1 >/dev/null)
    rc=$?
    if [ $rc -ne 1 ]; then
        fail "$what: exit $rc, expected 1: $err"
    elif ! grep -qF -- "$want" <<<"$err"; then
        fail "$what: said '$err', expected it to hold '$want'"
    fi
}

said "a bare model.safetensors beside config.json" \
    "$WORK/hf/model.safetensors: a safetensors file holds the weights alone; flashbed converts the Hugging Face folder it comes from (config.json, model.safetensors, tokenizer.json or tokenizer.model): its folder has config.json: flashbed convert $WORK/hf --out DIR" \
    convert "$WORK/hf/model.safetensors" --out "$WORK/o1"
mkdir -p "$WORK/lone"
cp "$WORK/hf/model.safetensors" "$WORK/lone/"
said "a bare model.safetensors alone" \
    "put it in a folder with the repository's config.json and tokenizer.json (or tokenizer.model), then flashbed convert FOLDER --out DIR" \
    convert "$WORK/lone/model.safetensors" --out "$WORK/o2" --tokenizer "$SPM"

mkdir -p "$WORK/pt"
cp "$WORK/hf/config.json" "$WORK/hf/tokenizer.model" "$WORK/pt/"
cp "$WORK/hf/model.safetensors" "$WORK/pt/pytorch_model.bin"
said "a folder of pytorch_model.bin" \
    "$WORK/pt: holds pytorch_model.bin (PyTorch's pickle format), which flashbed does not read: it reads model.safetensors" \
    convert "$WORK/pt" --out "$WORK/o3"
said "... and how to re-save it" "save_pretrained(o)\" $WORK/pt $WORK/pt-safetensors, then convert $WORK/pt-safetensors" \
    convert "$WORK/pt" --out "$WORK/o3"
said "pytorch_model.bin given alone" "$WORK/pt/pytorch_model.bin: a PyTorch checkpoint, which flashbed does not read" \
    convert "$WORK/pt/pytorch_model.bin" --out "$WORK/o4"

mkdir -p "$WORK/notok"
cp "$WORK/hf/config.json" "$WORK/hf/model.safetensors" "$WORK/notok/"
said "a folder without a tokenizer" \
    "$WORK/notok: no tokenizer.json or tokenizer.model: flashbed reads either (copy the one the model's repository ships beside config.json), or a llama2.c tokenizer.bin given with --tokenizer FILE" \
    convert "$WORK/notok" --out "$WORK/o5"
check "... and nothing written" test ! -e "$WORK/o5"

head -c 3000 "$SPM" >"$WORK/notok/tokenizer.model"
said "a damaged tokenizer.model" "$WORK/notok/tokenizer.model: not a SentencePiece model (tokenizer.model): " \
    convert "$WORK/notok" --out "$WORK/o6"
check "... and nothing written" test ! -e "$WORK/o6"
finish
