/* Byte-level BPE's pre-tokenizers by name (tokenizer.h's enum
 * tokenizer_pre), split as llama.cpp splits them (src/llama-vocab.cpp's
 * regex lists, run by src/unicode.cpp's unicode_regex_split).
 *
 * llama.cpp applies a list of regexes in turn: each splits every piece the
 * previous one left into its matches and the stretches between them. GPT-2's
 * and Llama 3's regexes it runs through hand-written splitters (which are
 * then the ground truth, quirks included); the others through std::regex
 * over a text where every code point above ASCII stands for its class.
 * Here every regex is a matcher: the length of its match at a position
 * (0: none), found leftmost as std::regex_iterator finds it.
 *   gpt-2:     GPT-2's regex
 *   llama-bpe: Llama 3's regex (contractions in either case, digits 1..3)
 *   qwen2:     Llama 3's regex with \p{N} one digit at a time
 *   smollm:    \p{N}, then GPT-2's
 *   default:   [\p{P}$+<=>^~|]+, GPT-2's, \p{N}+, [0-9][0-9][0-9]
 * Unicode classes: engine/tokenizer/unicode_classes.h. */
#include <string.h>

#include "engine/tokenizer/tokenizer_internal.h"
#include "engine/tokenizer/unicode_classes.h"

typedef size_t (*match_fn)(const uint32_t *c, size_t p, size_t e);

static int is_letter(uint32_t cp)
{
    return unicode_class_of(cp) == UC_LETTER;
}

static int is_number(uint32_t cp)
{
    return unicode_class_of(cp) == UC_NUMBER;
}

/* [^\s\p{L}\p{N}] */
static int is_other(uint32_t cp)
{
    enum unicode_class k = unicode_class_of(cp);
    return k != UC_LETTER && k != UC_NUMBER && !unicode_is_space(cp);
}

static int is_newline(uint32_t cp)
{
    return cp == '\r' || cp == '\n';
}

/* ASCII lowercase; no code point above ASCII lowercases to a letter a
 * contraction needs (tools/gen_unicode_classes.py checks it), so this is
 * llama.cpp's unicode_tolower for them. */
static uint32_t fold(uint32_t cp)
{
    return cp >= 'A' && cp <= 'Z' ? cp + 32 : cp;
}

/* 's 't 're 've 'm 'll 'd (in either case when any_case) at p: its length. */
static size_t contraction(const uint32_t *c, size_t p, size_t e, int any_case)
{
    if (c[p] != '\'' || p + 1 >= e)
        return 0;
    uint32_t a = any_case ? fold(c[p + 1]) : c[p + 1];
    if (a == 's' || a == 't' || a == 'm' || a == 'd')
        return 2;
    if (p + 2 >= e)
        return 0;
    uint32_t b = any_case ? fold(c[p + 2]) : c[p + 2];
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        return 3;
    return 0;
}

static size_t run_end(const uint32_t *c, size_t q, size_t e, int (*in_class)(uint32_t))
{
    while (q < e && in_class(c[q]))
        q++;
    return q;
}

/* Whitespace at p: \s+(?!\S) leaves the last one for what follows; at the
 * piece's end it takes all. With newlines, \s*[\r\n]+ first: up to the
 * run's last \r or \n. */
static size_t space_run(const uint32_t *c, size_t p, size_t e, int newlines)
{
    size_t w = 0, through_newline = 0;
    while (p + w < e && unicode_is_space(c[p + w])) {
        if (newlines && is_newline(c[p + w]))
            through_newline = w + 1;
        w++;
    }
    if (through_newline)
        return through_newline;
    if (w > 1 && p + w < e)
        return w - 1;
    return w > 0 ? w : 1;
}

/* 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S) */
static size_t match_gpt2(const uint32_t *c, size_t p, size_t e)
{
    size_t k = contraction(c, p, e, 0);
    if (k)
        return k;
    size_t q = c[p] == ' ' ? p + 1 : p;
    if (q < e) {
        if (is_letter(c[q]))
            return run_end(c, q, e, is_letter) - p;
        if (is_number(c[q]))
            return run_end(c, q, e, is_number) - p;
        if (is_other(c[q]))
            return run_end(c, q, e, is_other) - p;
    }
    return space_run(c, p, e, 0);
}

/* (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,digits}|
 *  ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+ */
static size_t match_llama3_digits(const uint32_t *c, size_t p, size_t e, size_t digits)
{
    size_t k = contraction(c, p, e, 1);
    if (k)
        return k;
    uint32_t cp = c[p];
    if (!is_newline(cp) && !is_number(cp) && (is_letter(cp) || (p + 1 < e && is_letter(c[p + 1]))))
        return run_end(c, p + 1, e, is_letter) - p;
    if (is_number(cp)) {
        size_t q = p;
        while (q < e && q - p < digits && is_number(c[q]))
            q++;
        return q - p;
    }
    size_t q = cp == ' ' ? p + 1 : p;
    if (q < e && is_other(c[q])) {
        q = run_end(c, q, e, is_other);
        while (q < e && is_newline(c[q]))
            q++;
        return q - p;
    }
    return space_run(c, p, e, 1);
}

static size_t match_llama3(const uint32_t *c, size_t p, size_t e)
{
    return match_llama3_digits(c, p, e, 3);
}

static size_t match_qwen2(const uint32_t *c, size_t p, size_t e)
{
    return match_llama3_digits(c, p, e, 1);
}

/* \p{N} */
static size_t match_number(const uint32_t *c, size_t p, size_t e)
{
    (void)e;
    return is_number(c[p]) ? 1 : 0;
}

/* \p{N}+ */
static size_t match_numbers(const uint32_t *c, size_t p, size_t e)
{
    return run_end(c, p, e, is_number) - p;
}

/* [\p{P}\$\+<=>\^~\|] */
static int is_punct_or_sign(uint32_t cp)
{
    return unicode_class_of(cp) == UC_PUNCT || (cp < 0x80 && cp && strchr("$+<=>^~|", (int)cp));
}

static size_t match_punct_run(const uint32_t *c, size_t p, size_t e)
{
    return run_end(c, p, e, is_punct_or_sign) - p;
}

/* [0-9][0-9][0-9] */
static size_t match_three_digits(const uint32_t *c, size_t p, size_t e)
{
    for (size_t k = 0; k < 3; k++)
        if (p + k >= e || c[p + k] < '0' || c[p + k] > '9')
            return 0;
    return 3;
}

/* One regex over every piece of in[0..nin) (piece ends): its matches and
 * the stretches between them, as piece ends into out. Returns the count. */
static size_t apply_pass(match_fn match, const uint32_t *c, const size_t *in, size_t nin, size_t *out)
{
    size_t nout = 0, b = 0;
    for (size_t f = 0; f < nin; f++) {
        size_t e = in[f], gap = b;
        for (size_t p = b; p < e;) {
            size_t k = match(c, p, e);
            if (k == 0) {
                p++;
                continue;
            }
            if (gap < p)
                out[nout++] = p;
            p += k;
            out[nout++] = p;
            gap = p;
        }
        if (gap < e)
            out[nout++] = e;
        b = e;
    }
    return nout;
}

/* The regexes of each pre-tokenizer, in llama.cpp's order. */
static size_t passes_of(enum tokenizer_pre pre, match_fn pass[4])
{
    switch (pre) {
    case TOKENIZER_PRE_LEGACY: /* the approximation of GPT-2's; here the real one */
    case TOKENIZER_PRE_GPT2:
        pass[0] = match_gpt2;
        return 1;
    case TOKENIZER_PRE_LLAMA3:
        pass[0] = match_llama3;
        return 1;
    case TOKENIZER_PRE_QWEN2:
        pass[0] = match_qwen2;
        return 1;
    case TOKENIZER_PRE_SMOLLM:
        pass[0] = match_number;
        pass[1] = match_gpt2;
        return 2;
    case TOKENIZER_PRE_DEFAULT:
        pass[0] = match_punct_run;
        pass[1] = match_gpt2;
        pass[2] = match_numbers;
        pass[3] = match_three_digits;
        return 4;
    }
    return 0;
}

size_t tokenizer_pretokenize(enum tokenizer_pre pre, const uint32_t *cps, size_t n, size_t *ends, size_t *scratch)
{
    if (n == 0)
        return 0;
    match_fn pass[4];
    size_t np = passes_of(pre, pass);
    size_t *cur = ends, *next = scratch, count = 1;
    cur[0] = n;
    for (size_t k = 0; k < np; k++) {
        count = apply_pass(pass[k], cps, cur, count, next);
        size_t *t = cur;
        cur = next;
        next = t;
    }
    if (cur != ends)
        memcpy(ends, cur, count * sizeof *ends);
    return count;
}
