/* The one scoring loop (engine/forward/text_feed.h). */
#include "engine/forward/text_feed.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/interrupt.h"
#include "common/json_file.h"
#include "common/sha256.h"
#include "engine/forward/sampler.h"

/* One forward pass of a window: before, the pass of token at pos, then
 * `scored` with the logits when target (an index into the caller's
 * tokens) is scored. 0 to go on, else text_feed_run's code. */
static int feed_one(struct engine *e, const struct text_feed *f, int token, int pos, size_t target, bool score)
{
    if (interrupted())
        return 1;
    if (f->before)
        f->before(f->ctx, target);
    if (engine_forward(e, token, pos) != 0)
        return TEXT_FEED_FAILED;
    if (score && f->scored && f->scored(f->ctx, target, e->s.logits) != 0)
        return -1;
    return 0;
}

/* BOS_LED (bos) and VOCAB_BOS: windows advance by max_seq - 1 text
 * tokens; led by BOS, or by the text token before the window's first
 * target (lead 1), which is then the previous window's last target. */
static int feed_windows(struct engine *e, const int *tokens, size_t n, const struct text_feed *f, bool bos)
{
    size_t span = (size_t)e->max_seq - 1, lead = bos ? 0 : 1, windows = 0;
    for (size_t start = 0; start + lead < n && (!f->max_windows || windows < f->max_windows);
         start += span, windows++) {
        size_t end = start + lead + span < n ? start + lead + span : n;
        int prev = bos ? e->m->bos_id : tokens[start];
        for (size_t i = start + lead; i < end; i++) {
            int rc = feed_one(e, f, prev, (int)(i - start - lead), i, true);
            if (rc != 0)
                return rc;
            prev = tokens[i];
        }
        if (f->progress)
            f->progress(f->ctx, end, n);
    }
    return 0;
}

/* SECOND_HALF: window w is stream[w * max_seq, (w + 1) * max_seq) of the
 * stream [BOS when add_bos] + tokens, its first token BOS when add_bos.
 * The window's last token is not fed: nothing it predicts is scored. */
static int feed_second_half(struct engine *e, const int *tokens, size_t n, const struct text_feed *f)
{
    bool add_bos = e->m->tok.add_bos;
    size_t w_len = (size_t)e->max_seq, skew = add_bos ? 1 : 0;
    struct text_feed_plan plan = text_feed_plan(TEXT_FEED_SECOND_HALF, add_bos, e->max_seq, n, f->max_windows);
    for (size_t w = 0; w < plan.windows; w++) {
        size_t base = w * w_len; /* the window's first stream index */
        for (size_t k = 0; k + 1 < w_len; k++) {
            size_t s = base + k;
            int token = k == 0 && add_bos ? e->m->bos_id : tokens[s - skew];
            int rc = feed_one(e, f, token, (int)k, s + 1 - skew, k >= plan.first);
            if (rc != 0)
                return rc;
        }
        if (f->progress)
            f->progress(f->ctx, base + w_len - skew, n);
    }
    return 0;
}

int text_feed_run(struct engine *e, const int *tokens, size_t n, const struct text_feed *f)
{
    switch (f->rule) {
    case TEXT_FEED_BOS_LED:
        return feed_windows(e, tokens, n, f, true);
    case TEXT_FEED_VOCAB_BOS:
        return feed_windows(e, tokens, n, f, e->m->tok.add_bos);
    case TEXT_FEED_SECOND_HALF:
        return feed_second_half(e, tokens, n, f);
    }
    return TEXT_FEED_FAILED;
}

static size_t capped(size_t windows, size_t max_windows)
{
    return max_windows && max_windows < windows ? max_windows : windows;
}

struct text_feed_plan text_feed_plan(enum text_feed_rule rule, bool add_bos, int max_seq, size_t n,
                                     size_t max_windows)
{
    struct text_feed_plan p = {0, 0, 0};
    if (max_seq < text_feed_min_context(rule))
        return p;
    size_t w_len = (size_t)max_seq, span = w_len - 1;
    bool bos = rule == TEXT_FEED_BOS_LED || add_bos;
    switch (rule) {
    case TEXT_FEED_BOS_LED:
    case TEXT_FEED_VOCAB_BOS: {
        size_t targets = bos ? n : (n > 0 ? n - 1 : 0); /* without BOS the first token is only context */
        p.windows = capped((targets + span - 1) / span, max_windows);
        p.scored = targets < p.windows * span ? targets : p.windows * span;
        return p;
    }
    case TEXT_FEED_SECOND_HALF:
        p.first = w_len / 2;
        p.windows = capped((n + (add_bos ? 1 : 0)) / w_len, max_windows);
        p.scored = p.windows * (w_len - 1 - p.first);
        return p;
    }
    return p;
}

int text_feed_min_context(enum text_feed_rule rule)
{
    switch (rule) {
    case TEXT_FEED_BOS_LED:
    case TEXT_FEED_VOCAB_BOS:
        return 2;
    case TEXT_FEED_SECOND_HALF:
        return 3;
    }
    return 2;
}

const char *text_feed_rule_name(enum text_feed_rule rule)
{
    switch (rule) {
    case TEXT_FEED_BOS_LED:
        return "bos-led";
    case TEXT_FEED_VOCAB_BOS:
        return "flashbed";
    case TEXT_FEED_SECOND_HALF:
        return "llama.cpp";
    }
    return "?";
}

double text_feed_nll(const float *logits, int vocab, int target, int *top)
{
    int best = argmax(logits, vocab);
    double sum = 0;
    for (int v = 0; v < vocab; v++)
        sum += exp((double)logits[v] - logits[best]);
    if (top)
        *top = best;
    return log(sum) + logits[best] - logits[target];
}

int text_tokens_load(const struct model *m, const char *path, uint64_t skip, uint64_t want, bool hash,
                     struct text_tokens *t, char *err, size_t errlen)
{
    return text_tokens_load_cr(m, path, skip, want, hash, false, t, err, errlen);
}

/* Removes every '\r' of text[0..*len) in place, *len shortened. */
static void drop_carriage_returns(char *text, size_t *len)
{
    size_t kept = 0;
    for (size_t i = 0; i < *len; i++)
        if (text[i] != '\r')
            text[kept++] = text[i];
    *len = kept;
}

int text_tokens_load_cr(const struct model *m, const char *path, uint64_t skip, uint64_t want, bool hash,
                        bool drop_cr, struct text_tokens *t, char *err, size_t errlen)
{
    memset(t, 0, sizeof *t);
    if (hash && sha256_file_hex(path, t->sha256, err, errlen) != 0)
        return -1;
    size_t len;
    char *text = read_text_file(path, &len);
    if (!text)
        return err_set(err, errlen, "%s: cannot read: %s", path, strerror(errno));
    if (drop_cr)
        drop_carriage_returns(text, &len);
    t->ids = malloc(tokenizer_max_tokens(len) * sizeof *t->ids);
    if (!t->ids) {
        free(text);
        return err_set(err, errlen, "%s: out of memory for its tokens", path);
    }
    t->n_in_file = tokenizer_encode(&m->tok, text, len, false, t->ids);
    free(text);
    size_t avail = t->n_in_file > skip ? t->n_in_file - (size_t)skip : 0;
    memmove(t->ids, t->ids + (avail ? skip : 0), avail * sizeof *t->ids);
    t->n = want && want < avail ? (size_t)want : avail;
    return 0;
}

void text_tokens_free(struct text_tokens *t)
{
    free(t->ids);
    t->ids = NULL;
    t->n = 0;
}
