#!/usr/bin/env python3
"""Writes tests/data/pretokenize/splits.json: how llama.cpp's pre-tokenizers
split crafted texts, for tests/unit/test_pretokenize.c.

The reference is llama.cpp's own regex lists (src/llama-vocab.cpp,
llm_tokenizer_bpe, ggml-org/llama.cpp as vendored by llama-cpp-python
0.3.36) run as src/unicode.cpp's unicode_regex_split runs them: each regex
in turn over every piece the previous left, its matches and the stretches
between them both kept; the text first read as llama.cpp reads UTF-8 (an
unreadable byte is U+FFFD) and each word written back from the code points.
The regexes run on the `regex` module (pip install regex): the pinned
reference environment with llama-cpp-python was not at hand, so this is the
regex semantics, not llama.cpp's binary. Texts keep to code points whose
class Unicode 15.1 (llama.cpp's table) and the regex module's newer tables
agree on.

    python3 -m venv /tmp/v && /tmp/v/bin/pip install regex
    /tmp/v/bin/python tools/make_pretokenize_fixture.py > tests/data/pretokenize/splits.json
"""
import json
import sys

import regex

GPT2 = r"'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)"
LLAMA3 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}"
          r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
QWEN2 = (r"(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}"
         r"| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+")
PRESETS = {
    "gpt-2": [GPT2],
    "llama-bpe": [LLAMA3],
    "qwen2": [QWEN2],
    "smollm": [r"\p{N}", GPT2],
    "default": [r"[\p{P}\$\+<=>\^~\|]+", GPT2, r"\p{N}+", r"[0-9][0-9][0-9]"],
}

TEXTS = [
    b"Hello world",
    b"1 12 123 1234 12345 123456 1234567",
    b"x1234567y 89",
    b"I'M YOU'RE WE'VE HE'LL SHE'D IT'S DON'T i'm you're we've he'll she'd it's don't",
    b"'s 're 'x 'Re 'rE '' ' s",
    b"a\nb\n\nc \n d  \n  e\r\nf \r\n g",
    b"trailing spaces   ",
    b"   leading",
    b"tabs\tand\t\tmore \t x",
    "caf\u00e9 na\u00efve \u00e9t\u00e9 Stra\u00dfe STRASSE".encode(),
    "\u4e2d\u6587\u5b57 \u4e2d\u6587 and \u65e5\u672c\u8a9e\u306e\u6587".encode(),
    "\u2605 stars \u2605\u2605 \u2606!".encode(),
    "emoji \U0001F600\U0001F601 x\U0001F44D\U0001F3FD y".encode(),
    "numbers \u00bd \u2460\u2461\u2462\u2463 \u0663\u0664\u0665\u0666 \uff11\uff12".encode(),
    b"punct: a,b.c;d!? (x) [y] {z} $5 +3 <=> ^~| `q` @me #tag 100% a_b",
    b"code: for (i = 0; i < 10; i++) { x += y * 2; }\n",
    b"mixed123abc 4ever x2y3z",
    "nbsp\u00a0here\u3000ideo\u2003em \u2028line".encode(),
    b"\r\n\r\n  \r\n",
    b"end with newline\n",
    b"  ",
    b" ",
    b"a",
    b"!!!\n\n",
    b"?!abc ...def --- ghi",
    b"bad \xff utf8 \xc3 here \x80\x80 and \xe4\xb8 cut",
    b"overlong \xc0\xaf and \xe0\x80\xaf",
    b"ends in lead \xe4",
    b"accents e\xcc\x81 n\xcc\x83o",
    b"\xd8\xa7\xd9\x84\xd8\xb9\xd8\xb1\xd8\xa8\xd9\x8a\xd8\xa9 \xd8\xa7\xd9\x84\xd9\x84\xd8\xba\xd8\xa9",
    "\u0392\u03b1\u03c3\u03b9\u03bb\u03b9\u03ba\u03ae \u041f\u0440\u0438\u0432\u0435\u0442 2024".encode(),
    b"it's 2023's 'S'T x'LL",
    b"a \n\n b",
    b"x  \ty",
    b"1,234,567.89 and 3.14159",
]


def llama_decode(data):
    """llama.cpp's unicode_cpts_from_utf8."""
    cps, i = [], 0
    while i < len(data):
        b = data[i]
        n = 1 if b < 0x80 else 0 if b < 0xC0 else 2 if b < 0xE0 else 3 if b < 0xF0 else 4 if b < 0xF8 else 0
        ok = n > 0 and i + n <= len(data) and all(0x80 <= c < 0xC0 for c in data[i + 1:i + n])
        if not ok:
            cps.append(0xFFFD)
            i += 1
            continue
        cp = b & (0x7F, 0x1F, 0x0F, 0x07)[n - 1]
        for c in data[i + 1:i + n]:
            cp = (cp << 6) | (c & 0x3F)
        assert cp <= 0x10FFFF, "llama.cpp throws on code points past U+10FFFF"
        cps.append(cp)
        i += n
    return cps


def split(pattern_list, text):
    pieces = [text]
    for pattern in pattern_list:
        rx = regex.compile(pattern)
        out = []
        for piece in pieces:
            at = 0
            for m in rx.finditer(piece):
                if m.start() > at:
                    out.append(piece[at:m.start()])
                out.append(m.group())
                at = m.end()
            if at < len(piece):
                out.append(piece[at:])
        pieces = out
    return pieces


def main():
    cases = []
    for name, patterns in PRESETS.items():
        for data in TEXTS:
            text = "".join(chr(c) for c in llama_decode(data))
            words = [w.encode("utf-8", "surrogatepass").hex() for w in split(patterns, text)]
            cases.append({"pre": name, "text_hex": data.hex(), "words_hex": words})
    json.dump({
        "made_by": "tools/make_pretokenize_fixture.py",
        "reference": "llama.cpp's regex lists (llama-cpp-python 0.3.36's ggml-org/llama.cpp) on the regex module",
        "regex_version": regex.__version__,
        "python": sys.version.split()[0],
        "cases": cases,
    }, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
