/* A trace built in memory (traces/trace.h: trace_builder), and the sinks
 * that let a recorder write either a file or memory. */
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "traces/trace.h"
#include "traces/trace_file.h"

/* A growable array of uint32 ids and the offsets of its sets. */
struct id_sets {
    uint32_t *ids;
    uint64_t n, cap;
    uint64_t *off; /* [n_tokens * n_layers + 1] */
};

struct trace_builder {
    struct trace_meta meta;
    uint8_t *flags;          /* [cap_tokens] */
    uint64_t n_tokens, cap_tokens;
    uint32_t next_layer;     /* layers given of the current token */
    bool chan_given;         /* layer next_layer's channel set is in chan */
    struct id_sets active, pred, chan;
};

static void sets_free(struct id_sets *s)
{
    free(s->ids);
    free(s->off);
}

void trace_builder_free(struct trace_builder *b)
{
    if (!b)
        return;
    free(b->meta.source);
    free(b->flags);
    sets_free(&b->active);
    sets_free(&b->pred);
    sets_free(&b->chan);
    free(b);
}

struct trace_builder *trace_builder_new(const struct trace_meta *meta, char *err, size_t errlen)
{
    if (meta->n_layers == 0 || meta->d_ff == 0) {
        err_set(err, errlen, "a trace in memory needs layers and neurons");
        return NULL;
    }
    char why[256];
    if (trace_meta_check(meta, why, sizeof why) != 0) {
        err_set(err, errlen, "a trace in memory: %s", why);
        return NULL;
    }
    struct trace_builder *b = calloc(1, sizeof *b);
    if (b) {
        b->meta = *meta;
        b->meta.source = strdup(meta->source ? meta->source : "{}");
    }
    if (!b || !b->meta.source) {
        trace_builder_free(b);
        err_set(err, errlen, "out of memory for a trace in memory");
        return NULL;
    }
    return b;
}

/* Room for one more token's flags and set offsets. */
static int grow_tokens(struct trace_builder *b)
{
    if (b->n_tokens < b->cap_tokens)
        return 0;
    uint64_t cap = b->cap_tokens ? 2 * b->cap_tokens : 64, sets = cap * b->meta.n_layers + 1;
    uint8_t *flags = realloc(b->flags, cap);
    if (flags)
        b->flags = flags;
    uint64_t *a = realloc(b->active.off, sets * sizeof *a);
    if (a)
        b->active.off = a;
    uint64_t *p = b->meta.has_predicted ? realloc(b->pred.off, sets * sizeof *p) : NULL;
    if (p)
        b->pred.off = p;
    uint64_t *c = b->meta.has_channels ? realloc(b->chan.off, sets * sizeof *c) : NULL;
    if (c)
        b->chan.off = c;
    if (!flags || !a || (b->meta.has_predicted && !p) || (b->meta.has_channels && !c))
        return -1;
    b->cap_tokens = cap;
    return 0;
}

static int builder_begin(void *impl, unsigned flags, char *err, size_t errlen)
{
    struct trace_builder *b = impl;
    if (b->n_tokens && b->next_layer != b->meta.n_layers)
        return err_set(err, errlen, "token %llu got %u of %u layers", (unsigned long long)b->n_tokens - 1,
                       b->next_layer, b->meta.n_layers);
    if (grow_tokens(b) != 0)
        return err_set(err, errlen, "out of memory for token %llu of a trace in memory",
                       (unsigned long long)b->n_tokens);
    b->flags[b->n_tokens] = (uint8_t)(flags | (b->n_tokens == 0 ? TRACE_TOKEN_SEQ_START : 0u));
    uint64_t at = b->n_tokens * b->meta.n_layers;
    b->active.off[at] = b->active.n;
    if (b->meta.has_predicted)
        b->pred.off[at] = b->pred.n;
    if (b->meta.has_channels)
        b->chan.off[at] = b->chan.n;
    b->n_tokens++;
    b->next_layer = 0;
    return 0;
}

/* Appends ids[0..n) to s once they are a set of the trace (the writer's check). */
static int append_set(const struct trace_builder *b, struct id_sets *s, uint32_t layer, const uint32_t *ids,
                      uint32_t n, const char *what, char *err, size_t errlen)
{
    char why[160];
    if (trace_check_ids(ids, n, b->meta.d_ff, what, why, sizeof why) != 0)
        return err_set(err, errlen, "token %llu layer %u: %s", (unsigned long long)b->n_tokens - 1, layer, why);
    if (trace_append_ids(&s->ids, &s->n, &s->cap, ids, n) != 0)
        return err_set(err, errlen, "out of memory for a trace in memory");
    return 0;
}

static int builder_channels(void *impl, uint32_t layer, const uint32_t *ids, uint32_t n, char *err, size_t errlen)
{
    struct trace_builder *b = impl;
    if (!b->meta.has_channels)
        return err_set(err, errlen, "channel set given for a trace without channel sets");
    if (b->n_tokens == 0 || layer != b->next_layer || layer >= b->meta.n_layers)
        return err_set(err, errlen, "channels of layer %u given out of order (expected %u of token %llu)", layer,
                       b->next_layer, (unsigned long long)b->n_tokens);
    if (b->chan_given)
        return err_set(err, errlen, "token %llu layer %u: channel set given twice", (unsigned long long)b->n_tokens - 1,
                       layer);
    char why[160];
    if (trace_check_channels(ids, n, b->meta.d_model, why, sizeof why) != 0)
        return err_set(err, errlen, "token %llu layer %u: %s", (unsigned long long)b->n_tokens - 1, layer, why);
    if (trace_append_ids(&b->chan.ids, &b->chan.n, &b->chan.cap, ids, n) != 0)
        return err_set(err, errlen, "out of memory for a trace in memory");
    b->chan_given = true;
    return 0;
}

static int builder_layer(void *impl, uint32_t layer, const uint32_t *active, uint32_t n_active,
                         const uint32_t *pred, uint32_t n_pred, char *err, size_t errlen)
{
    struct trace_builder *b = impl;
    if (b->n_tokens == 0 || layer != b->next_layer || layer >= b->meta.n_layers)
        return err_set(err, errlen, "layer %u given out of order (expected %u of token %llu)", layer, b->next_layer,
                       (unsigned long long)b->n_tokens);
    if (b->meta.has_channels && !b->chan_given)
        return err_set(err, errlen, "token %llu layer %u: no channel set (channels come before the layer)",
                       (unsigned long long)b->n_tokens - 1, layer);
    if (append_set(b, &b->active, layer, active, n_active, "active", err, errlen) != 0 ||
        (b->meta.has_predicted && append_set(b, &b->pred, layer, pred, n_pred, "predicted", err, errlen) != 0))
        return -1;
    uint64_t next = (b->n_tokens - 1) * b->meta.n_layers + layer + 1;
    b->active.off[next] = b->active.n;
    if (b->meta.has_predicted)
        b->pred.off[next] = b->pred.n;
    if (b->meta.has_channels)
        b->chan.off[next] = b->chan.n;
    b->chan_given = false;
    b->next_layer++;
    return 0;
}

struct trace_sink trace_builder_sink(struct trace_builder *b)
{
    return (struct trace_sink){builder_begin, builder_layer, b, builder_channels};
}

int trace_builder_finish(struct trace_builder *b, struct trace *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (b->n_tokens && b->next_layer != b->meta.n_layers) {
        err_set(err, errlen, "token %llu got %u of %u layers", (unsigned long long)b->n_tokens - 1, b->next_layer,
                b->meta.n_layers);
        trace_builder_free(b);
        return -1;
    }
    if (b->n_tokens == 0 && grow_tokens(b) != 0) { /* an empty trace still has its one offset */
        trace_builder_free(b);
        return err_set(err, errlen, "out of memory for a trace in memory");
    }
    if (b->n_tokens == 0) {
        b->active.off[0] = 0;
        if (b->meta.has_predicted)
            b->pred.off[0] = 0;
        if (b->meta.has_channels)
            b->chan.off[0] = 0;
    }
    *out = (struct trace){.meta = b->meta, .n_tokens = b->n_tokens, .token_flags = b->flags,
                          .active_off = b->active.off, .active_ids = b->active.ids,
                          .pred_off = b->meta.has_predicted ? b->pred.off : NULL,
                          .pred_ids = b->meta.has_predicted ? b->pred.ids : NULL,
                          .chan_off = b->meta.has_channels ? b->chan.off : NULL,
                          .chan_ids = b->meta.has_channels ? b->chan.ids : NULL, .version = TRACE_VERSION};
    if (!out->active_ids) /* no neuron was ever active: a valid, empty id array */
        out->active_ids = calloc(1, sizeof *out->active_ids);
    if (b->meta.has_predicted && !out->pred_ids)
        out->pred_ids = calloc(1, sizeof *out->pred_ids);
    if (b->meta.has_channels && !out->chan_ids)
        out->chan_ids = calloc(1, sizeof *out->chan_ids);
    free(b); /* its arrays now belong to out */
    return 0;
}

static int writer_begin(void *impl, unsigned flags, char *err, size_t errlen)
{
    return trace_writer_begin_token(impl, flags, err, errlen);
}

static int writer_layer(void *impl, uint32_t layer, const uint32_t *active, uint32_t n_active, const uint32_t *pred,
                        uint32_t n_pred, char *err, size_t errlen)
{
    return trace_writer_layer(impl, layer, active, n_active, pred, n_pred, err, errlen);
}

static int writer_channels(void *impl, uint32_t layer, const uint32_t *ids, uint32_t n, char *err, size_t errlen)
{
    return trace_writer_layer_channels(impl, layer, ids, n, err, errlen);
}

struct trace_sink trace_writer_sink(struct trace_writer *w)
{
    return (struct trace_sink){writer_begin, writer_layer, w, writer_channels};
}
