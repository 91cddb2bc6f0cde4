/* The flat interface of traces/trace_capi.h: a streaming reader whose
 * token is copied into one id array per call (one foreign call per token,
 * not per set), and the writer's open from plain numbers. */
#include "traces/trace_capi.h"

#include <stdbool.h>
#include <stdlib.h>

#include "common/errbuf.h"
#include "traces/trace.h"

struct trace_capi_reader {
    struct trace_reader *r;
    uint32_t *ids;
    size_t cap;
    uint64_t *off;  /* [sets * n_layers + 1] */
};

int fbt_capi_version(void)
{
    return TRACE_CAPI_VERSION;
}

static int sets_per_token(const struct trace_meta *m)
{
    return 1 + (m->has_predicted ? 1 : 0) + (m->has_channels ? 1 : 0);
}

struct trace_capi_reader *fbt_reader_open(const char *path, char *err, size_t errlen)
{
    struct trace_reader *r = trace_reader_open(path, err, errlen);
    if (!r)
        return NULL;
    struct trace_capi_reader *c = calloc(1, sizeof *c);
    const struct trace_meta *m = trace_reader_meta(r);
    if (c)
        c->off = calloc((size_t)sets_per_token(m) * m->n_layers + 1, sizeof *c->off);
    if (!c || !c->off) {
        err_set(err, errlen, "%s: out of memory", path);
        free(c);
        trace_reader_close(r);
        return NULL;
    }
    c->r = r;
    return c;
}

void fbt_reader_header(const struct trace_capi_reader *c, uint64_t out[FBT_HEADER_FIELDS])
{
    const struct trace_meta *m = trace_reader_meta(c->r);
    uint64_t v[FBT_HEADER_FIELDS] = {trace_reader_version(c->r), m->n_layers, m->d_model, m->d_ff,
                                     wtype_traits(m->dtype)->code, m->ffn_kind, m->has_predicted, m->has_channels,
                                     trace_reader_n_tokens(c->r), unit_kind_code(m->unit_kind), m->units};
    for (int i = 0; i < FBT_HEADER_FIELDS; i++)
        out[i] = v[i];
}

const char *fbt_reader_source(const struct trace_capi_reader *c)
{
    const char *s = trace_reader_meta(c->r)->source;
    return s ? s : "";
}

/* Appends one kind's sets of every layer to c->ids, offsets from *at on. */
static int copy_kind(struct trace_capi_reader *c, uint32_t n_layers, const uint32_t *const *sets, const uint32_t *n,
                     size_t *at, uint64_t *len)
{
    for (uint32_t l = 0; l < n_layers; l++) {
        if (*len + n[l] > c->cap) {
            size_t cap = c->cap ? c->cap : 4096;
            while (cap < *len + n[l])
                cap *= 2;
            uint32_t *p = realloc(c->ids, cap * sizeof *p);
            if (!p)
                return -1;
            c->ids = p;
            c->cap = cap;
        }
        for (uint32_t j = 0; j < n[l]; j++)
            c->ids[*len + j] = sets[l][j];
        *len += n[l];
        c->off[++*at] = *len;
    }
    return 0;
}

int fbt_reader_next(struct trace_capi_reader *c, uint32_t *flags, char *err, size_t errlen)
{
    struct trace_token tok;
    int rc = trace_reader_next(c->r, &tok, err, errlen);
    if (rc != 1)
        return rc;
    uint32_t nl = trace_reader_meta(c->r)->n_layers;
    size_t at = 0;
    uint64_t len = 0;
    c->off[0] = 0;
    if (copy_kind(c, nl, tok.active, tok.n_active, &at, &len) != 0 ||
        (tok.pred && copy_kind(c, nl, tok.pred, tok.n_pred, &at, &len) != 0) ||
        (tok.channels && copy_kind(c, nl, tok.channels, tok.n_channels, &at, &len) != 0))
        return err_set(err, errlen, "out of memory for token %llu's sets", (unsigned long long)tok.index);
    *flags = tok.flags;
    return 1;
}

const uint32_t *fbt_reader_ids(const struct trace_capi_reader *c)
{
    return c->ids;
}

const uint64_t *fbt_reader_offsets(const struct trace_capi_reader *c)
{
    return c->off;
}

uint64_t fbt_reader_check_bytes(const struct trace_capi_reader *c)
{
    return trace_reader_check_bytes(c->r);
}

void fbt_reader_close(struct trace_capi_reader *c)
{
    if (!c)
        return;
    trace_reader_close(c->r);
    free(c->ids);
    free(c->off);
    free(c);
}

struct trace_writer *fbt_writer_open(const char *path, const uint32_t shape[FBT_SHAPE_FIELDS], int has_predicted,
                                     int has_channels, const char *source, char *err, size_t errlen)
{
    struct trace_meta m = {
        .n_layers = shape[0], .d_model = shape[1], .d_ff = shape[2], .ffn_kind = shape[4], .units = shape[6],
        .has_predicted = has_predicted != 0, .source = (char *)source, .has_channels = has_channels != 0,
    };
    if (wtype_from_code(shape[3], &m.dtype) != 0) {
        err_set(err, errlen, "%s: weight type code %u is not in the table (%s)", path, shape[3], wtype_names());
        return NULL;
    }
    if (unit_kind_from_code(shape[5], &m.unit_kind) != 0) {
        err_set(err, errlen, "%s: unit kind code %u is not in the table", path, shape[5]);
        return NULL;
    }
    return trace_writer_open(NULL, path, &m, err, errlen);
}
