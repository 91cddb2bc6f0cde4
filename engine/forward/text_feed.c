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

int text_feed_run(struct engine *e, const int *tokens, size_t n, const struct text_feed *f)
{
    size_t window = (size_t)e->max_seq - 1;
    for (size_t start = 0; start < n; start += window) {
        size_t end = start + window < n ? start + window : n;
        int prev = e->m->bos_id;
        for (size_t i = start; i < end; i++) {
            if (interrupted())
                return 1;
            if (f->before)
                f->before(f->ctx, i);
            if (engine_forward(e, prev, (int)(i - start)) != 0)
                return TEXT_FEED_FAILED;
            if (f->scored && f->scored(f->ctx, i, e->s.logits) != 0)
                return -1;
            prev = tokens[i];
        }
        if (f->progress)
            f->progress(f->ctx, end, n);
    }
    return 0;
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
    memset(t, 0, sizeof *t);
    if (hash && sha256_file_hex(path, t->sha256, err, errlen) != 0)
        return -1;
    size_t len;
    char *text = read_text_file(path, &len);
    if (!text)
        return err_set(err, errlen, "%s: cannot read: %s", path, strerror(errno));
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
