/* Feeding a text through the engine to score it, the one loop behind
 * perplexity, predictor eval and predictor training's sample collection.
 * Three rules cut the text into windows of the engine's context
 * (max_seq positions); in each, the logits after position p predict the
 * token at p + 1:
 *   TEXT_FEED_BOS_LED     every window led by BOS at position 0, then
 *                         max_seq - 1 text tokens, each scored; one
 *                         forward pass per text token (predictor samples'
 *                         rows need that), whatever the vocabulary says.
 *   TEXT_FEED_VOCAB_BOS   flashbed's own perplexity rule: as BOS_LED when
 *                         the vocabulary adds BOS (tok.add_bos); else a
 *                         window is max_seq text tokens, the first only
 *                         context (nothing predicts it), and the next
 *                         window starts on the previous one's last token,
 *                         so every text token but the very first is scored
 *                         once (the model never sees a BOS it was not
 *                         trained to see).
 *   TEXT_FEED_SECOND_HALF llama.cpp's perplexity tool (tools/perplexity/
 *                         perplexity.cpp, perplexity()): the stream is the
 *                         text with BOS before it when the vocabulary adds
 *                         BOS, cut into whole windows of max_seq tokens (a
 *                         partial last one dropped); each window's first
 *                         token replaced by BOS when the vocabulary adds
 *                         BOS; only its second half scored: with first =
 *                         max_seq / 2, the tokens at first + 1 .. max_seq
 *                         - 1, max_seq - 1 - first of them.
 * A caller sees each predicted token's index before the forward pass that
 * predicts it (the probe FFN records then) and the logits after it; the
 * index is into the caller's tokens (BOS is never one of them). Under
 * SECOND_HALF the forward passes of a window's first half are seen by
 * `before` but not `scored`. Single-threaded use of one engine; the
 * engine's own threads compute. */
#ifndef FLASHBED_ENGINE_TEXT_FEED_H
#define FLASHBED_ENGINE_TEXT_FEED_H

#include <stdbool.h>
#include <stddef.h>

#include "engine/forward/engine.h"

enum text_feed_rule {
    TEXT_FEED_BOS_LED = 0, /* the zero value: what the predictors have always been fed */
    TEXT_FEED_VOCAB_BOS,
    TEXT_FEED_SECOND_HALF,
};

struct text_feed {
    /* Optional: before text token i's logits are computed. */
    void (*before)(void *ctx, size_t i);
    /* Optional: the logits that predict text token i (vocab_size of them);
     * non-zero stops the feed, which returns -1. */
    int (*scored)(void *ctx, size_t i, const float *logits);
    /* Optional: after each window, done of n tokens fed. */
    void (*progress)(void *ctx, size_t done, size_t n);
    void *ctx;
    enum text_feed_rule rule;
    size_t max_windows; /* stop after this many windows (0: all the text's) */
};

/* What a rule makes of n text tokens in windows of max_seq positions, at
 * most max_windows of them (0: all): the windows fed and the tokens
 * scored (text_feed_run's `scored` calls when nothing stops it). */
struct text_feed_plan {
    size_t windows, scored;
    size_t first; /* SECOND_HALF: the window's position whose logits are the first scored; else 0 */
};
struct text_feed_plan text_feed_plan(enum text_feed_rule rule, bool add_bos, int max_seq, size_t n,
                                     size_t max_windows);
/* The fewest positions a window needs to score a token under rule
 * (BOS_LED and VOCAB_BOS 2, SECOND_HALF 3). */
int text_feed_min_context(enum text_feed_rule rule);
/* The rule's name as perplexity's --rule and its JSON give it:
 * "flashbed" for VOCAB_BOS, "llama.cpp" for SECOND_HALF, "bos-led". */
const char *text_feed_rule_name(enum text_feed_rule rule);

/* Feeds tokens[0..n) by f->rule in windows of the engine's max_seq
 * positions. 0 when all were fed, 1 when interrupted() stopped it between
 * tokens, -1 when `scored` stopped it, TEXT_FEED_FAILED when a forward
 * pass failed (the backend's reason in e->err; the engine is spent). */
#define TEXT_FEED_FAILED (-2)
int text_feed_run(struct engine *e, const int *tokens, size_t n, const struct text_feed *f);

/* A text file's tokens, as the feed takes them: no BOS (each rule adds
 * its own where the vocabulary or the rule asks). */
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
/* The same with every carriage return ('\r') removed from the text before
 * it is tokenized when drop_cr (a CRLF copy read as llama.cpp's reference
 * figures read it: tests/data/gguf/real/). */
int text_tokens_load_cr(const struct model *m, const char *path, uint64_t skip, uint64_t want, bool hash,
                        bool drop_cr, struct text_tokens *t, char *err, size_t errlen);
void text_tokens_free(struct text_tokens *t);

/* -log softmax(logits)[target], computed stably in double; *top (may be
 * NULL) gets the argmax. */
double text_feed_nll(const float *logits, int vocab, int target, int *top);

#endif
