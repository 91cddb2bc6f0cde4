/* Encoding with a GGUF-built tokenizer, as llama.cpp's llama_vocab
 * tokenize does it: special tokens cut out of the text first
 * (engine/tokenizer/tokenizer_special.c), then each stretch of text by
 * the vocabulary's algorithm (SentencePiece over the characters with
 * spaces written "▁"; byte-level BPE word by word after the
 * pre-tokenizer), BOS and EOS as the vocabulary adds them. */
#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer/tokenizer_internal.h"
#include "engine/tokenizer/unicode_classes.h"

/* SentencePiece's symbols: a stretch of the (escaped) text; n == 0 once
 * merged into its left neighbour. */
struct spm_sym {
    size_t off, n;
    int prev, next;
};

static size_t utf8_len(unsigned char c)
{
    return c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 1;
}

/* A candidate when the two symbols' joined text is a token: its score,
 * and the joined size (in right_id) to tell a stale candidate. */
static void spm_try(const struct tokenizer *t, const char *text, const struct spm_sym *y, int l, int r,
                    struct merge *h, size_t *nh)
{
    if (l < 0 || r < 0)
        return;
    size_t n = y[l].n + y[r].n;
    int id = tokenizer_lookup(t, text + y[l].off, n);
    if (id < 0)
        return;
    tokenizer_heap_push(h, nh, (struct merge){t->scores[id], l, r, (int)n, id, id});
}

/* llama.cpp's llm_tokenizer_spm: UTF-8 characters merged while the
 * joined text is a token, the highest score first, the leftmost on ties;
 * a final symbol that is no token comes out as its bytes' tokens. */
static size_t spm_encode(const struct tokenizer *t, const char *text, size_t len, struct spm_sym *y,
                         struct merge *h, int *out)
{
    int ny = 0;
    for (size_t off = 0; off < len; ny++) {
        size_t n = utf8_len((unsigned char)text[off]);
        y[ny] = (struct spm_sym){off, n < len - off ? n : len - off, ny - 1, -1};
        off += y[ny].n;
        if (off < len)
            y[ny].next = ny + 1;
    }
    size_t nh = 0;
    for (int i = 1; i < ny; i++)
        spm_try(t, text, y, i - 1, i, h, &nh);
    while (nh > 0) {
        struct merge m = tokenizer_heap_pop(h, &nh);
        struct spm_sym *l = &y[m.left], *r = &y[m.right];
        if (l->n == 0 || r->n == 0 || l->n + r->n != (size_t)m.left_id)
            continue;
        l->n += r->n;
        r->n = 0;
        l->next = r->next;
        if (r->next >= 0)
            y[r->next].prev = m.left;
        spm_try(t, text, y, l->prev, m.left, h, &nh);
        spm_try(t, text, y, m.left, l->next, h, &nh);
    }
    size_t n = 0;
    for (int i = ny > 0 ? 0 : -1; i >= 0; i = y[i].next) {
        int id = tokenizer_lookup(t, text + y[i].off, y[i].n);
        if (id >= 0) {
            out[n++] = id;
            continue;
        }
        for (size_t k = 0; k < y[i].n; k++) {
            int b = t->byte_ids[(unsigned char)text[y[i].off + k]];
            if (b >= 0)
                out[n++] = b;
        }
    }
    return n;
}

/* One stretch of text for SentencePiece: the prefix space when asked,
 * every space written "▁". */
static size_t spm_stretch(const struct tokenizer *t, const char *text, size_t len, bool prefix, int *out)
{
    char *esc = malloc(3 * len + 4);
    struct spm_sym *y = malloc((3 * len + 4) * sizeof *y);
    struct merge *h = malloc((9 * len + 16) * sizeof *h); /* 3 candidates a symbol at most */
    size_t e = 0, n = 0;
    if (esc && y && h) {
        for (size_t i = 0; i < len + prefix; i++) {
            char c = i < prefix ? ' ' : text[i - prefix];
            if (c == ' ') {
                memcpy(esc + e, "\xE2\x96\x81", 3);
                e += 3;
            } else
                esc[e++] = c;
        }
        n = spm_encode(t, esc, e, y, h, out);
    }
    free(esc);
    free(y);
    free(h);
    return n;
}

/* One word for byte-level BPE: whole where the vocabulary ignores merges
 * (Llama 3) and has it, else its bytes merged. */
static size_t bpe_word(const struct tokenizer *t, const char *w, size_t wl, struct sym *s, struct merge *h,
                       char *buf, int *out)
{
    int whole = t->ignore_merges ? tokenizer_lookup(t, w, wl) : -1;
    if (whole >= 0) {
        out[0] = whole;
        return 1;
    }
    int ns = 0;
    for (size_t k = 0; k < wl; k++) {
        int b = t->byte_ids[(unsigned char)w[k]];
        s[ns++].id = b >= 0 ? b : 0;
    }
    return tokenizer_bpe(t, s, ns, h, buf, out);
}

/* The longest word's UTF-8 length in bytes. */
static size_t longest_word(const uint32_t *cps, const size_t *ends, size_t nw)
{
    size_t most = 0;
    char tmp[4];
    for (size_t k = 0, b = 0; k < nw; b = ends[k++]) {
        size_t wl = 0;
        for (size_t i = b; i < ends[k]; i++)
            wl += unicode_encode_utf8(cps[i], tmp);
        most = wl > most ? wl : most;
    }
    return most;
}

/* The words ends[0..nw) of cps, each written back as UTF-8 and merged. */
static size_t bpe_words(const struct tokenizer *t, const uint32_t *cps, const size_t *ends, size_t nw, int *out)
{
    size_t wcap = longest_word(cps, ends, nw) + 4, n = 0;
    char *word = malloc(wcap);
    struct sym *s = malloc(wcap * sizeof *s);
    struct merge *h = malloc((3 * wcap + 4) * sizeof *h);
    char *buf = malloc(2 * (size_t)t->max_piece_len + 8);
    for (size_t k = 0, b = 0; word && s && h && buf && k < nw; b = ends[k++]) {
        size_t wl = 0;
        for (size_t i = b; i < ends[k]; i++)
            wl += unicode_encode_utf8(cps[i], word + wl);
        n += bpe_word(t, word, wl, s, h, buf, out + n);
    }
    free(word);
    free(s);
    free(h);
    free(buf);
    return n;
}

/* One stretch of text for byte-level BPE, as llama.cpp does it: read as
 * code points (a byte it cannot read becomes U+FFFD: 3 bytes, so at most 3
 * tokens a text byte), split by the pre-tokenizer, each word written back
 * as UTF-8 and merged. */
static size_t bpe_stretch(const struct tokenizer *t, const char *text, size_t len, int *out)
{
    uint32_t *cps = malloc((len + 1) * sizeof *cps);
    size_t *ends = malloc((len + 1) * sizeof *ends), *scratch = malloc((len + 1) * sizeof *scratch);
    size_t n = 0;
    if (cps && ends && scratch) {
        size_t ncp = unicode_decode_utf8(text, len, cps);
        n = bpe_words(t, cps, ends, tokenizer_pretokenize(t->pre, cps, ncp, ends, scratch), out);
    }
    free(cps);
    free(ends);
    free(scratch);
    return n;
}

size_t tokenizer_encode_special(const struct tokenizer *t, const char *text, size_t len, bool add_special,
                                bool parse_special, int *out)
{
    if (!t->gguf)
        return tokenizer_encode(t, text, len, add_special, out);
    size_t n = 0;
    if (add_special && t->add_bos)
        out[n++] = t->bos_id;
    struct tokenizer_fragment *fr;
    size_t nf = tokenizer_partition(t, text, len, parse_special, &fr);
    bool prev_special = true; /* SentencePiece: the prefix space at the start and after a special token */
    for (size_t f = 0; f < nf; f++) {
        if (fr[f].token >= 0) {
            out[n++] = fr[f].token;
            prev_special = true;
            continue;
        }
        const char *p = text + fr[f].off;
        if (t->kind == TOKENIZER_SENTENCEPIECE_BPE)
            n += spm_stretch(t, p, fr[f].len, t->add_space_prefix && prev_special, out + n);
        else
            n += bpe_stretch(t, p, fr[f].len, out + n);
        prev_special = false;
    }
    free(fr);
    if (add_special && t->add_eos)
        out[n++] = t->eos_id;
    return n;
}
