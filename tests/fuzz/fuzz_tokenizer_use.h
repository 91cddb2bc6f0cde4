/* What the tokenizer harnesses do with a tokenizer that loaded: encode a
 * fixed text (spaces, digits, punctuation, multi-byte UTF-8, a stray
 * continuation byte) and a slice of the input itself, then decode every
 * id in order, as generation prints them. */
#ifndef FLASHBED_TESTS_FUZZ_TOKENIZER_USE_H
#define FLASHBED_TESTS_FUZZ_TOKENIZER_USE_H

#include <stdlib.h>
#include <string.h>

#include "engine/tokenizer/tokenizer.h"

static void fuzz_encode_decode(const struct tokenizer *t, const char *text, size_t len)
{
    int *ids = malloc(tokenizer_max_tokens(len) * sizeof *ids);
    if (!ids)
        abort();
    size_t n = tokenizer_encode(t, text, len, true, ids);
    if (n > tokenizer_max_tokens(len))
        abort();
    int prev = -1;
    for (size_t i = 0; i < n; i++) {
        if (ids[i] < 0 || ids[i] >= t->vocab_size)
            abort(); /* encode produced an id outside the vocabulary */
        size_t blen;
        char buf[2];
        const char *s = tokenizer_decode(t, prev, ids[i], &blen, buf);
        volatile char sink = blen && s ? s[blen - 1] : 0;
        (void)sink;
        prev = ids[i];
    }
    free(ids);
}

static void fuzz_use_tokenizer(const struct tokenizer *t, const uint8_t *data, size_t size)
{
    static const char sample[] = "Once upon a time,  there were 42 \xc3\xbc\xe2\x96\x81 caf\xc3\xa9s!\n\t\x80 end";
    fuzz_encode_decode(t, sample, sizeof sample - 1);
    fuzz_encode_decode(t, (const char *)data, size < 256 ? size : 256);
    for (int id = 0; id < t->vocab_size; id++) {
        size_t blen;
        char buf[2];
        const char *s = tokenizer_decode(t, id ? id - 1 : 0, id, &blen, buf);
        volatile char sink = blen && s ? s[blen - 1] : 0;
        (void)sink;
    }
}

#endif
