/* Byte-level BPE's pre-tokenizers by name (tokenizer.h's enum
 * tokenizer_pre). All rest on GPT-2's splitter as tokenizer.c
 * approximates it (bytes >= 0x80 count as letters); "smollm" first cuts
 * every digit out alone, as llama.cpp's \p{N} pass before GPT-2's regex
 * does (ASCII digits: the other \p{N} code points are not told apart
 * yet). The regexes proper of llama-bpe and qwen2 (digits in runs of 1..3
 * or 1, newlines, a non-letter before a word) are not matched yet. */
#include "engine/tokenizer/tokenizer_internal.h"

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* llama.cpp's "smollm": \p{N} pieces first, then GPT-2's regex inside
 * each stretch between them. */
static size_t smollm_end(const char *text, size_t len, size_t i)
{
    if (is_digit(text[i]))
        return i + 1;
    size_t stop = i + 1;
    while (stop < len && !is_digit(text[stop]))
        stop++;
    return tokenizer_pretoken_end_legacy(text, stop, i);
}

size_t tokenizer_pretoken_end(enum tokenizer_pre pre, const char *text, size_t len, size_t i)
{
    switch (pre) {
    case TOKENIZER_PRE_SMOLLM:
        return smollm_end(text, len, i);
    case TOKENIZER_PRE_LEGACY:
    case TOKENIZER_PRE_GPT2:
    case TOKENIZER_PRE_LLAMA3:
    case TOKENIZER_PRE_QWEN2:
    case TOKENIZER_PRE_DEFAULT:
        break;
    }
    return tokenizer_pretoken_end_legacy(text, len, i);
}
