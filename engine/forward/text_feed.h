/* Feeding a text through the engine to score it, the one loop behind
 * perplexity, predictor eval and predictor training's sample collection:
 * the tokens go in windows of the engine's context, each window led by BOS
 * at position 0, so the logits after position p predict the window's
 * token p. A caller sees each token before its forward (the probe FFN
 * records then) and the logits after it. Single-threaded use of one
 * engine; the engine's own threads compute. */
#ifndef FLASHBED_ENGINE_TEXT_FEED_H
#define FLASHBED_ENGINE_TEXT_FEED_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/forward/engine.h"

struct text_feed {
    /* Optional: before text token i's logits are computed. */
    void (*before)(void *ctx, size_t i);
    /* Optional: the logits that predict text token i (vocab_size of them);
     * non-zero stops the feed, which returns -1. */
    int (*scored)(void *ctx, size_t i, const float *logits);
    /* Optional: after each window, done of n tokens fed. */
    void (*progress)(void *ctx, size_t done, size_t n);
    void *ctx;
};

/* Feeds tokens[0..n) (window = the engine's max_seq - 1 text tokens after
 * BOS). 0 when all were fed, 1 when interrupted() stopped it between
 * tokens, -1 when `scored` stopped it, TEXT_FEED_FAILED when a forward
 * pass failed (the backend's reason in e->err; the engine is spent). */
#define TEXT_FEED_FAILED (-2)
int text_feed_run(struct engine *e, const int *tokens, size_t n, const struct text_feed *f);

/* A text file's tokens, as the feed takes them: no BOS (each window adds
 * its own). */
struct text_tokens {
    int *ids;          /* [n], owned (text_tokens_free) */
    size_t n;          /* from token skip on, at most want of them */
    size_t n_in_file;  /* every token of the text */
    char sha256[65];   /* with hash: the file's, hex (which text a result came from); else "" */
};

/* The UTF-8 text file at path in model m's tokens, from token skip on, at
 * most want of them (want 0: all); fewer when the text has fewer (the
 * caller judges whether that is enough). With hash, first the file's
 * SHA-256 (a file that cannot be opened is named as sha256_file_hex names
 * it). 0, or -1 with err naming the file (unreadable, out of memory); t
 * owns its ids either way (text_tokens_free). */
int text_tokens_load(const struct model *m, const char *path, uint64_t skip, uint64_t want, bool hash,
                     struct text_tokens *t, char *err, size_t errlen);
void text_tokens_free(struct text_tokens *t);

/* -log softmax(logits)[target], computed stably in double; *top (may be
 * NULL) gets the argmax. */
double text_feed_nll(const float *logits, int vocab, int target, int *top);

#endif
