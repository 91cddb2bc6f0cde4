/* The trace writer: validates each set, encodes it against its references
 * (traces/set_codec.h), seals each layer's sets into a block with its
 * length and CRC, and streams blocks to a temporary file that is renamed
 * into place only when the trace is complete. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/atomic_file.h"
#include "common/crc32c.h"
#include "common/errbuf.h"
#include "common/out_manifest.h"
#include "traces/set_codec.h"
#include "traces/trace.h"
#include "traces/trace_file.h"

struct trace_writer {
    struct trace_meta meta;
    FILE *f;
    char path[4096], tmp[4200];
    struct out_manifest *folder; /* the result folder path is claimed in (NULL: none) */
    uint64_t n_tokens, active_events, pred_events, bytes;
    uint32_t next_layer;       /* layers written of the current token */
    bool in_token;
    bool seq_start;            /* the current token starts a sequence */
    uint32_t *prev[3];         /* [n_layers * bound]: last token's sets, per kind (active, predicted, channels) */
    uint32_t *n_prev[3];       /* [n_layers] */
    uint32_t *scratch;         /* [2 * max(d_ff, d_model)] */
    uint32_t *chan;            /* [d_model]: the current layer's channel set, until its block is sealed */
    uint32_t n_chan;
    bool chan_given;           /* chan holds layer next_layer's channel set */
    uint8_t token_head[2];     /* the current token's marker and flags: layer 0's CRC covers them */
    struct byte_buf rec;       /* bytes not yet written */
    struct byte_buf blk;       /* the current layer's sets, until sealed into rec */
};


static void writer_free(struct trace_writer *w)
{
    for (int k = 0; k < 3; k++) {
        free(w->prev[k]);
        free(w->n_prev[k]);
    }
    free(w->scratch);
    free(w->chan);
    byte_buf_free(&w->rec);
    byte_buf_free(&w->blk);
    trace_meta_free(&w->meta);
    free(w);
}

static int flush_rec(struct trace_writer *w, char *err, size_t errlen)
{
    if (w->rec.len && fwrite(w->rec.p, 1, w->rec.len, w->f) != w->rec.len)
        return err_set(err, errlen, "%s: write failed: %s", w->path, strerror(errno));
    w->bytes += w->rec.len;
    w->rec.len = 0;
    return 0;
}

/* The previous token's sets per kind, the codec's scratch and the pending
 * channel set. 0, or -1 out of memory. */
static int alloc_state(struct trace_writer *w)
{
    const struct trace_meta *m = &w->meta;
    uint32_t bound[3] = {m->d_ff, m->d_ff, m->d_model};
    bool ok = w->meta.source != NULL;
    for (int k = 0; k < 3; k++) {
        w->prev[k] = malloc(((size_t)m->n_layers * bound[k] + 1) * sizeof(uint32_t));
        w->n_prev[k] = calloc(m->n_layers, sizeof(uint32_t));
        ok = ok && w->prev[k] && w->n_prev[k];
    }
    w->scratch = malloc(2 * (size_t)(m->d_ff > m->d_model ? m->d_ff : m->d_model) * sizeof(uint32_t));
    w->chan = malloc(((size_t)m->d_model + 1) * sizeof(uint32_t));
    return ok && w->scratch && w->chan ? 0 : -1;
}

struct trace_writer *trace_writer_open(struct out_manifest *folder, const char *path, const struct trace_meta *meta,
                                       char *err, size_t errlen)
{
    char why[256];
    if (meta->n_layers == 0 || meta->d_ff == 0 || meta->d_model == 0) {
        err_set(err, errlen, "%s: trace shape must have layers, d_model and d_ff", path);
        return NULL;
    }
    if (trace_meta_check(meta, why, sizeof why) != 0) {
        err_set(err, errlen, "%s: %s", path, why);
        return NULL;
    }
    if (strlen(path) >= 4096) {
        err_set(err, errlen, "%s: path too long", path);
        return NULL;
    }
    if (out_manifest_claim(folder, path, err, errlen) != 0) /* a file of the user's is there */
        return NULL;
    if (meta->source && strlen(meta->source) > TRACE_MAX_SOURCE) {
        /* the reader would refuse the header: do not write a file nothing reads */
        err_set(err, errlen, "%s: source description of %zu bytes exceeds the format's %u", path, strlen(meta->source),
            TRACE_MAX_SOURCE);
        return NULL;
    }
    struct trace_writer *w = calloc(1, sizeof *w);
    if (!w) {
        err_set(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    w->meta = *meta;
    w->meta.source = strdup(meta->source ? meta->source : "{}");
    snprintf(w->path, sizeof w->path, "%s", path);
    w->folder = folder;
    atomic_tmp_name(path, w->tmp, sizeof w->tmp);
    if (alloc_state(w) != 0) {
        err_set(err, errlen, "%s: out of memory for a trace of %u layers x %u neurons", path, meta->n_layers, meta->d_ff);
        writer_free(w);
        return NULL;
    }
    w->f = fopen(w->tmp, "wb");
    if (!w->f) {
        err_set(err, errlen, "cannot write %s: %s", w->tmp, strerror(errno));
        writer_free(w);
        return NULL;
    }
    if (trace_header_put(&w->rec, &w->meta, 0) != 0 || flush_rec(w, err, errlen) != 0) {
        if (!w->rec.p)
            err_set(err, errlen, "%s: out of memory", path);
        trace_writer_abort(w);
        return NULL;
    }
    return w;
}

int trace_writer_begin_token(struct trace_writer *w, unsigned flags, char *err, size_t errlen)
{
    if (w->in_token && w->next_layer != w->meta.n_layers)
        return err_set(err, errlen, "%s: token %llu got %u of %u layers", w->path, (unsigned long long)w->n_tokens - 1,
                   w->next_layer, w->meta.n_layers);
    if (flags & ~(unsigned)(TRACE_TOKEN_GENERATED | TRACE_TOKEN_SEQ_START))
        return err_set(err, errlen, "%s: unknown token flags 0x%x", w->path, flags);
    if (w->n_tokens == 0)
        flags |= TRACE_TOKEN_SEQ_START;
    w->seq_start = flags & TRACE_TOKEN_SEQ_START;
    if (byte_buf_reserve(&w->rec, 2) != 0)
        return err_set(err, errlen, "%s: out of memory", w->path);
    w->token_head[0] = TRACE_TOKEN_MARK;
    w->token_head[1] = (uint8_t)flags;
    memcpy(w->rec.p + w->rec.len, w->token_head, 2);
    w->rec.len += 2;
    w->in_token = true;
    w->next_layer = 0;
    w->n_tokens++;
    return 0;
}

static int check_ids(const struct trace_writer *w, const char *what, uint32_t layer,
                     const uint32_t *ids, uint32_t n, char *err, size_t errlen)
{
    char why[160];
    if (trace_check_ids(ids, n, w->meta.d_ff, what, why, sizeof why) != 0)
        return err_set(err, errlen, "%s: token %llu layer %u: %s", w->path, (unsigned long long)w->n_tokens - 1,
                       layer, why);
    return 0;
}

static int put_set(struct trace_writer *w, int kind, uint32_t layer, const uint32_t *ids, uint32_t n,
                   const uint32_t *active, uint32_t n_active, char *err, size_t errlen)
{
    uint32_t bound = kind == 2 ? w->meta.d_model : w->meta.d_ff;
    uint32_t *prev = w->prev[kind] + (size_t)layer * bound;
    struct id_span refs[3] = {
        {NULL, 0},
        {w->seq_start ? NULL : prev, w->n_prev[kind][layer]},
        {kind == 1 ? active : NULL, n_active},
    };
    static const uint32_t empty_ref[1];
    if (kind == 1 && !refs[SET_REF_ACTIVE].ids)
        refs[SET_REF_ACTIVE].ids = empty_ref;
    if (set_encode(&w->blk, ids, n, refs, bound, w->scratch) != 0)
        return err_set(err, errlen, "%s: out of memory", w->path);
    if (n)
        memcpy(prev, ids, n * sizeof *ids);
    w->n_prev[kind][layer] = n;
    return 0;
}

/* Appends the current layer's block to rec: its length, its sets and the
 * CRC over (token, layer), layer 0's token marker and flags, length and sets. */
static int seal_block(struct trace_writer *w, uint32_t layer, char *err, size_t errlen)
{
    if (w->blk.len > trace_block_max(&w->meta))
        return err_set(err, errlen, "%s: token %llu layer %u: block of %zu bytes exceeds the format's %llu (a codec bug)",
                   w->path, (unsigned long long)w->n_tokens - 1, layer, w->blk.len,
                   (unsigned long long)trace_block_max(&w->meta));
    size_t start = w->rec.len;
    if (byte_buf_put_varint(&w->rec, w->blk.len) != 0 ||
        byte_buf_reserve(&w->rec, w->blk.len + TRACE_CRC_BYTES) != 0)
        return err_set(err, errlen, "%s: out of memory", w->path);
    memcpy(w->rec.p + w->rec.len, w->blk.p, w->blk.len);
    w->rec.len += w->blk.len;
    uint32_t crc = trace_block_crc_start(w->n_tokens - 1, layer);
    if (layer == 0)
        crc = crc32c_update(crc, w->token_head, sizeof w->token_head);
    crc = crc32c_update(crc, w->rec.p + start, w->rec.len - start);
    trace_put_u32(w->rec.p + w->rec.len, crc);
    w->rec.len += TRACE_CRC_BYTES;
    w->blk.len = 0;
    return 0;
}

int trace_writer_layer_channels(struct trace_writer *w, uint32_t layer, const uint32_t *ids, uint32_t n,
                                char *err, size_t errlen)
{
    if (!w->meta.has_channels)
        return err_set(err, errlen, "%s: channel set given for a trace without channel sets", w->path);
    if (!w->in_token)
        return err_set(err, errlen, "%s: channels of layer %u given before trace_writer_begin_token", w->path, layer);
    unsigned long long t = (unsigned long long)w->n_tokens - 1;
    if (layer != w->next_layer || layer >= w->meta.n_layers)
        return err_set(err, errlen, "%s: token %llu: channels of layer %u given where layer %u was due", w->path, t, layer,
                       w->next_layer);
    if (w->chan_given)
        return err_set(err, errlen, "%s: token %llu layer %u: channel set given twice", w->path, t, layer);
    char why[160];
    if (trace_check_channels(ids, n, w->meta.d_model, why, sizeof why) != 0)
        return err_set(err, errlen, "%s: token %llu layer %u: %s", w->path, t, layer, why);
    if (n)
        memcpy(w->chan, ids, n * sizeof *ids);
    w->n_chan = n;
    w->chan_given = true;
    return 0;
}

/* The layer's sets into its block: active, predicted, channels as flagged. */
static int put_sets(struct trace_writer *w, uint32_t layer, const uint32_t *active, uint32_t n_active,
                    const uint32_t *pred, uint32_t n_pred, char *err, size_t errlen)
{
    if (put_set(w, 0, layer, active, n_active, NULL, 0, err, errlen) != 0)
        return -1;
    w->active_events += n_active;
    if (w->meta.has_predicted) {
        if (put_set(w, 1, layer, pred, n_pred, active, n_active, err, errlen) != 0)
            return -1;
        w->pred_events += n_pred;
    }
    if (w->meta.has_channels) {
        if (put_set(w, 2, layer, w->chan, w->n_chan, NULL, 0, err, errlen) != 0)
            return -1;
        w->chan_given = false;
    }
    return 0;
}

int trace_writer_layer(struct trace_writer *w, uint32_t layer, const uint32_t *active,
                       uint32_t n_active, const uint32_t *pred, uint32_t n_pred,
                       char *err, size_t errlen)
{
    if (!w->in_token)
        return err_set(err, errlen, "%s: layer %u written before trace_writer_begin_token", w->path, layer);
    if (layer != w->next_layer || layer >= w->meta.n_layers)
        return err_set(err, errlen, "%s: token %llu: layer %u written where layer %u was due", w->path,
                   (unsigned long long)w->n_tokens - 1, layer, w->next_layer);
    if (check_ids(w, "active", layer, active, n_active, err, errlen) != 0)
        return -1;
    if (w->meta.has_predicted && check_ids(w, "predicted", layer, pred, n_pred, err, errlen) != 0)
        return -1;
    if (w->meta.has_channels && !w->chan_given)
        return err_set(err, errlen, "%s: token %llu layer %u: no channel set (trace_writer_layer_channels comes first)",
                       w->path, (unsigned long long)w->n_tokens - 1, layer);
    if (put_sets(w, layer, active, n_active, pred, n_pred, err, errlen) != 0)
        return -1;
    if (seal_block(w, layer, err, errlen) != 0)
        return -1;
    w->next_layer++;
    return w->rec.len >= (1u << 16) || w->next_layer == w->meta.n_layers ? flush_rec(w, err, errlen) : 0;
}

uint64_t trace_writer_bytes(const struct trace_writer *w)
{
    return w->bytes + w->rec.len;
}

/* The header again, now with the token count and its CRC: same length. */
static int rewrite_header(struct trace_writer *w, char *err, size_t errlen)
{
    if (trace_header_put(&w->rec, &w->meta, w->n_tokens) != 0)
        return err_set(err, errlen, "%s: out of memory", w->path);
    if (fseek(w->f, 0, SEEK_SET) != 0 || fwrite(w->rec.p, 1, w->rec.len, w->f) != w->rec.len)
        return err_set(err, errlen, "%s: cannot patch the header: %s", w->path, strerror(errno));
    w->rec.len = 0;
    return 0;
}

int trace_writer_close(struct trace_writer *w, char *err, size_t errlen)
{
    int rc = 0;
    if (w->in_token && w->next_layer != w->meta.n_layers)
        rc = err_set(err, errlen, "%s: token %llu got %u of %u layers", w->path, (unsigned long long)w->n_tokens - 1,
                 w->next_layer, w->meta.n_layers);
    if (rc == 0 && trace_footer_put(&w->rec, w->n_tokens, w->active_events, w->pred_events) != 0)
        rc = err_set(err, errlen, "%s: out of memory", w->path);
    if (rc == 0)
        rc = flush_rec(w, err, errlen);
    if (rc == 0)
        rc = rewrite_header(w, err, errlen);
    if (rc == 0 && fflush(w->f) != 0)
        rc = err_set(err, errlen, "%s: write failed: %s", w->path, strerror(errno));
    if (fclose(w->f) != 0 && rc == 0)
        rc = err_set(err, errlen, "%s: write failed: %s", w->path, strerror(errno));
    w->f = NULL;
    if (rc == 0 && rename(w->tmp, w->path) != 0)
        rc = err_set(err, errlen, "cannot rename %s to %s: %s", w->tmp, w->path, strerror(errno));
    else if (rc == 0)
        out_manifest_written(w->folder, w->path);
    if (rc != 0)
        remove(w->tmp);
    writer_free(w);
    return rc;
}

void trace_writer_abort(struct trace_writer *w)
{
    if (!w)
        return;
    if (w->f)
        fclose(w->f);
    remove(w->tmp);
    writer_free(w);
}
