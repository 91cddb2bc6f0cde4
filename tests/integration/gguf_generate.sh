#!/usr/bin/env bash
# A converted GGUF model generates from a text prompt and prints it back
# whole: the tiny qwen2 fixture's vocabulary adds no BOS (as Qwen's and
# SmolLM2's do not), so the prompt's first token is a word of the text,
# printed like the rest; the llama fixture's adds one, which prints
# nothing. Both as llama.cpp tokenizes them (tests/data/gguf/README.md).
source "$(dirname "$0")/lib.sh"

DATA="$FLASHBED_SOURCE/tests/data/gguf"
for arch in qwen2 llama; do
    check "$arch converts" "$FLASHBED" convert "$DATA/$arch/Q8_0/model.gguf" --out "$WORK/$arch"
    out=$("$FLASHBED" generate --model "$WORK/$arch" --prompt "Hello world! The year" -n 3 --temperature 0 \
        --threads 1 2>/dev/null)
    check "$arch: the prompt printed whole before the continuation ('$out')" \
        test "${out:0:21}" = "Hello world! The year"
done
finish
