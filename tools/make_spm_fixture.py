#!/usr/bin/env python3
"""Regenerates tests/data/spm/: a small SentencePiece BPE model trained the
way Llama 2's tokenizer.model was (BPE, byte fallback, identity
normalizer, whitespace kept as written, the dummy prefix), and
sentencepiece's own ids for a few fixed texts, which test_tokenizer_spm
compares flashbed's reader and tokenizer with.

The training text is this repository's own documentation (README.md and
docs/*.md), so the fixture carries no one else's data. Run from the
repository root, in a venv with sentencepiece (0.2.0 made the committed
files):

    python3 -m venv /tmp/spvenv && /tmp/spvenv/bin/pip install sentencepiece==0.2.0
    /tmp/spvenv/bin/python tools/make_spm_fixture.py
"""
import glob
import io
import json
import os

import sentencepiece as spm

OUT = "tests/data/spm"
TEXTS = [
    "Hello world",
    "Once upon a time, there was a little girl named Lily.",
    "  two leading spaces, and  two inside",
    "flashbed reads ffn.bin from flash: 4096 rows x 11008 columns.",
    "line one\nline two\ttabbed",
    "naïve café — ünïcödé 日本語 🙂 falls back to bytes",
    "",
    " ",
]


def main():
    text = ""
    for path in ["README.md"] + sorted(glob.glob("docs/*.md")):
        with open(path, encoding="utf-8") as f:
            text += f.read()
    lines = [l for l in text.splitlines() if l.strip()]
    model = io.BytesIO()
    spm.SentencePieceTrainer.train(
        sentence_iterator=iter(lines), model_writer=model, model_type="bpe", vocab_size=1000,
        byte_fallback=True, normalization_rule_name="identity", remove_extra_whitespaces=False,
        add_dummy_prefix=True, split_digits=True, allow_whitespace_only_pieces=True,
        character_coverage=0.9995, num_threads=1, unk_id=0, bos_id=1, eos_id=2, pad_id=-1,
        minloglevel=2)
    os.makedirs(OUT, exist_ok=True)
    with open(os.path.join(OUT, "tokenizer.model"), "wb") as f:
        f.write(model.getvalue())
    sp = spm.SentencePieceProcessor(model_proto=model.getvalue())
    cases = [{"text": t, "ids": sp.encode(t)} for t in TEXTS]
    ref = {"sentencepiece": spm.__version__, "vocab_size": sp.get_piece_size(), "bos_id": sp.bos_id(),
           "eos_id": sp.eos_id(), "unk_id": sp.unk_id(), "cases": cases}
    with open(os.path.join(OUT, "expected.json"), "w", encoding="utf-8") as f:
        json.dump(ref, f, ensure_ascii=False, indent=None)
        f.write("\n")


if __name__ == "__main__":
    main()
