/* The streaming trace reader: one token at a time, every record checked
 * against the header; and trace_load, which keeps a whole trace in memory.
 * From version 2 each layer's block is read whole and its CRC checked
 * before a set of it is decoded, so damage is reported as damage, with the
 * token and layer where it lies. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cjson/cJSON.h>

#include "common/crc32c.h"
#include "common/errbuf.h"
#include "common/model_shape.h"
#include "traces/set_codec.h"
#include "traces/trace.h"
#include "traces/trace_file.h"

struct trace_reader {
    struct trace_meta meta;
    char path[4096];
    FILE *f;
    uint32_t version;
    uint64_t file_bytes, pos;          /* pos: bytes consumed, to bound a block's length */
    uint64_t check_bytes;              /* checksums and block lengths read so far */
    uint64_t n_tokens, tokens_read, active_events, pred_events;
    uint8_t token_head[2];             /* the current token's marker and flags */
    struct id_row *cur[3], *prev[3];   /* [n_layers] rows per kind (active, predicted, channels),
                                          grown to the sets they hold */
    uint32_t *n_cur[3], *n_prev[3];    /* [n_layers] */
    const uint32_t **ptr[3];           /* [n_layers] -> cur rows, handed out */
    struct id_row scratch;             /* a relative record's difference */
    struct byte_buf buf;               /* a set's payload */
    struct byte_buf blk;               /* a version 2 block */
    bool done;
};


void trace_reader_close(struct trace_reader *r)
{
    if (!r)
        return;
    if (r->f)
        fclose(r->f);
    for (int k = 0; k < 3; k++) {
        /* rows exist only once alloc_rows ran: a refused header's n_layers
         * may be anything (the fuzzer's 4278189825 took minutes here) */
        for (uint32_t l = 0; r->cur[k] && l < r->meta.n_layers; l++)
            free(r->cur[k][l].ids);
        for (uint32_t l = 0; r->prev[k] && l < r->meta.n_layers; l++)
            free(r->prev[k][l].ids);
        free(r->cur[k]);
        free(r->prev[k]);
        free(r->n_cur[k]);
        free(r->n_prev[k]);
        free(r->ptr[k]);
    }
    free(r->scratch.ids);
    byte_buf_free(&r->buf);
    byte_buf_free(&r->blk);
    trace_meta_free(&r->meta);
    free(r);
}

/* Per layer and kind, an empty row: each grows as its sets need (a header
 * may claim d_ff neurons that no record of a small file can fill). */
static int alloc_rows(struct trace_reader *r)
{
    uint32_t n_layers = r->meta.n_layers;
    bool ok = true;
    for (int k = 0; k < 3; k++) {
        r->cur[k] = calloc(n_layers, sizeof(struct id_row));
        r->prev[k] = calloc(n_layers, sizeof(struct id_row));
        r->n_cur[k] = calloc(r->meta.n_layers, sizeof(uint32_t));
        r->n_prev[k] = calloc(r->meta.n_layers, sizeof(uint32_t));
        r->ptr[k] = calloc(r->meta.n_layers, sizeof(uint32_t *));
        ok = ok && r->cur[k] && r->prev[k] && r->n_cur[k] && r->n_prev[k] && r->ptr[k];
    }
    return ok ? 0 : -1;
}

struct trace_reader *trace_reader_open(const char *path, char *err, size_t errlen)
{
    struct trace_reader *r = calloc(1, sizeof *r);
    if (!r) {
        err_set(err, errlen, "%s: out of memory", path);
        return NULL;
    }
    snprintf(r->path, sizeof r->path, "%s", path);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        err_set(err, errlen, "%s: is a directory, not a trace file", path);
        trace_reader_close(r);
        return NULL;
    }
    r->f = fopen(path, "rb");
    if (!r->f) {
        err_set(err, errlen, "cannot read trace %s: %s", path, strerror(errno));
        trace_reader_close(r);
        return NULL;
    }
    char why[256];
    if (trace_header_get(r->f, &r->meta, &r->n_tokens, &r->version, why, sizeof why) != 0) {
        err_set(err, errlen, "%s: %s", path, why);
        trace_reader_close(r);
        return NULL;
    }
    long at = ftell(r->f);
    if (fstat(fileno(r->f), &st) != 0 || at < 0) {
        err_set(err, errlen, "%s: cannot tell its size: %s", path, strerror(errno));
        trace_reader_close(r);
        return NULL;
    }
    r->file_bytes = (uint64_t)st.st_size;
    r->pos = (uint64_t)at;
    if (r->version >= TRACE_VERSION_CHECKED)
        r->check_bytes = TRACE_CRC_BYTES;
    if (alloc_rows(r) != 0) {
        err_set(err, errlen, "%s: out of memory for %u layers", path, r->meta.n_layers);
        trace_reader_close(r);
        return NULL;
    }
    return r;
}

const struct trace_meta *trace_reader_meta(const struct trace_reader *r)
{
    return &r->meta;
}

uint64_t trace_reader_n_tokens(const struct trace_reader *r)
{
    return r->n_tokens;
}

uint32_t trace_reader_version(const struct trace_reader *r)
{
    return r->version;
}

uint64_t trace_reader_check_bytes(const struct trace_reader *r)
{
    return r->check_bytes;
}

/* Every read of the body goes through these two, which count the bytes. */
static int next_byte(struct trace_reader *r)
{
    int c = getc(r->f);
    r->pos += c != EOF;
    return c;
}

static int read_bytes(struct trace_reader *r, void *dst, size_t n)
{
    size_t got = fread(dst, 1, n, r->f);
    r->pos += got;
    return got == n ? 0 : -1;
}

/* The end marker, its first byte already read. */
static int read_footer(struct trace_reader *r, char *err, size_t errlen)
{
    uint8_t p[TRACE_FOOTER_BYTES + TRACE_CRC_BYTES];
    p[0] = (uint8_t)TRACE_END_MAGIC[0];
    bool checked = r->version >= TRACE_VERSION_CHECKED;
    if (read_bytes(r, p + 1, 7) != 0 || memcmp(p, TRACE_END_MAGIC, 8) != 0)
        return err_set(err, errlen, "%s: after %llu tokens: expected a token or the end marker, found garbage", r->path,
                   (unsigned long long)r->tokens_read);
    if (read_bytes(r, p + 8, TRACE_FOOTER_BYTES - 8 + (checked ? TRACE_CRC_BYTES : 0)) != 0)
        return err_set(err, errlen, "%s: truncated end marker", r->path);
    if (checked) {
        uint32_t want = trace_get_u32(p + TRACE_FOOTER_BYTES), got = crc32c(p, TRACE_FOOTER_BYTES);
        if (got != want)
            return err_set(err, errlen, "%s: end marker checksum mismatch (stored 0x%08x, computed 0x%08x): the file is damaged",
                       r->path, want, got);
        r->check_bytes += TRACE_CRC_BYTES;
    }
    uint64_t n = trace_get_u64_at(p + 8), na = trace_get_u64_at(p + 16), np = trace_get_u64_at(p + 24);
    if (n != r->n_tokens || n != r->tokens_read)
        return err_set(err, errlen, "%s: header says %llu tokens, end marker %llu, body holds %llu", r->path,
                   (unsigned long long)r->n_tokens, (unsigned long long)n,
                   (unsigned long long)r->tokens_read);
    if (na != r->active_events || np != r->pred_events)
        return err_set(err, errlen, "%s: end marker counts %llu active and %llu predicted neurons, body holds %llu and %llu",
                   r->path, (unsigned long long)na, (unsigned long long)np,
                   (unsigned long long)r->active_events, (unsigned long long)r->pred_events);
    if (getc(r->f) != EOF)
        return err_set(err, errlen, "%s: trailing bytes after the end marker", r->path);
    r->done = true;
    return 0;
}

/* A version 2 block's length: a varint, kept as read for the CRC. */
static int read_block_len(struct trace_reader *r, uint8_t *raw, size_t *n_raw, uint64_t *len)
{
    *len = 0;
    *n_raw = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        int c = next_byte(r);
        if (c == EOF)
            return -1;
        raw[(*n_raw)++] = (uint8_t)c;
        *len |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return 0;
    }
    return -1;
}

/* Where layer l's sets of the current token come from: version 1 decodes
 * straight from the file; version 2 reads the block whole, checks its
 * length and CRC, and decodes from memory. */
static int open_block(struct trace_reader *r, uint32_t l, struct byte_src *src, char *err, size_t errlen)
{
    memset(src, 0, sizeof *src);
    if (r->version < TRACE_VERSION_CHECKED) {
        src->f = r->f;
        src->len = r->pos < r->file_bytes ? r->file_bytes - r->pos : 0;
        return 0;
    }
    unsigned long long t = (unsigned long long)r->tokens_read;
    uint8_t raw[10], stored[TRACE_CRC_BYTES];
    size_t n_raw;
    uint64_t len, max = trace_block_max(&r->meta);
    if (read_block_len(r, raw, &n_raw, &len) != 0)
        return err_set(err, errlen, "%s: token %llu layer %u: truncated or damaged block length", r->path, t, l);
    if (len > max)
        return err_set(err, errlen, "%s: token %llu layer %u: block of %llu bytes is longer than any (%llu): the file is damaged",
                   r->path, t, l, (unsigned long long)len, (unsigned long long)max);
    if (r->pos > r->file_bytes || len + TRACE_CRC_BYTES > r->file_bytes - r->pos)
        return err_set(err, errlen, "%s: token %llu layer %u: block of %llu bytes runs past the end of the file (truncated or damaged)",
                   r->path, t, l, (unsigned long long)len);
    r->blk.len = 0;
    if (byte_buf_reserve(&r->blk, len) != 0)
        return err_set(err, errlen, "%s: out of memory", r->path);
    if (read_bytes(r, r->blk.p, len) != 0 || read_bytes(r, stored, sizeof stored) != 0)
        return err_set(err, errlen, "%s: token %llu layer %u: truncated", r->path, t, l);
    uint32_t crc = trace_block_crc_start(r->tokens_read, l);
    if (l == 0)
        crc = crc32c_update(crc, r->token_head, sizeof r->token_head);
    crc = crc32c_update(crc32c_update(crc, raw, n_raw), r->blk.p, len);
    uint32_t want = trace_get_u32(stored);
    if (crc != want)
        return err_set(err, errlen, "%s: token %llu layer %u: checksum mismatch (stored 0x%08x, computed 0x%08x): the file is damaged",
                   r->path, t, l, want, crc);
    r->check_bytes += n_raw + TRACE_CRC_BYTES;
    src->p = r->blk.p;
    src->len = len;
    return 0;
}

/* The token's first byte, c, read: a marker, or the end marker when every
 * token is in. */
static int check_token_start(struct trace_reader *r, int c, char *err, size_t errlen)
{
    if (r->tokens_read >= r->n_tokens)
        return c == TRACE_TOKEN_MARK
                   ? err_set(err, errlen, "%s: body holds more tokens than the header's %llu", r->path,
                         (unsigned long long)r->n_tokens)
                   : err_set(err, errlen, "%s: after token %llu, the last: expected the end marker, found byte 0x%02x",
                         r->path, (unsigned long long)r->tokens_read - 1, (unsigned)c);
    if (c != TRACE_TOKEN_MARK)
        return err_set(err, errlen, "%s: token %llu: bad token marker 0x%02x", r->path, (unsigned long long)r->tokens_read,
                   (unsigned)c);
    return 0;
}

/* Whether the trace holds sets of kind k (0 active, 1 predicted, 2 channels). */
static bool has_kind(const struct trace_meta *m, int k)
{
    return k == 0 || (k == 1 && m->has_predicted) || (k == 2 && m->has_channels);
}

static const char *const kind_names[3] = {"active", "predicted", "channel"};

/* Decodes layer l's sets from src into the current rows. */
static int decode_layer(struct trace_reader *r, uint32_t l, bool seq_start, struct byte_src *src, char *err,
                        size_t errlen)
{
    for (int k = 0; k < 3; k++) {
        if (!has_kind(&r->meta, k))
            continue;
        struct id_span refs[3] = {
            {NULL, 0},
            {seq_start ? NULL : r->prev[k][l].ids, r->n_prev[k][l]},
            {k == 1 ? r->cur[0][l].ids : NULL, r->n_cur[0][l]},
        };
        uint32_t bound = k == 2 ? r->meta.d_model : r->meta.d_ff;
        char why[160];
        int rc = set_decode(src, refs, bound, &r->cur[k][l], &r->n_cur[k][l], &r->scratch, &r->buf, why, sizeof why);
        if (src->f) { /* version 1: the record's bytes are counted here, and what is left shrinks */
            r->pos += src->pos;
            src->len = byte_src_left(src);
            src->pos = 0;
        }
        if (rc != 0)
            return err_set(err, errlen, "%s: token %llu layer %u (%s set): %s", r->path, (unsigned long long)r->tokens_read, l,
                       kind_names[k], why);
        r->ptr[k][l] = r->cur[k][l].ids;
        if (k < 2)
            *(k ? &r->pred_events : &r->active_events) += r->n_cur[k][l];
    }
    if (!src->f && src->pos != src->len)
        return err_set(err, errlen, "%s: token %llu layer %u: %zu bytes left over after its sets", r->path,
                   (unsigned long long)r->tokens_read, l, src->len - src->pos);
    return 0;
}

int trace_reader_next(struct trace_reader *r, struct trace_token *tok, char *err, size_t errlen)
{
    if (r->done)
        return 0;
    int c = next_byte(r);
    if (c == EOF)
        return err_set(err, errlen, "%s: truncated after token %llu of %llu (no end marker)", r->path,
                   (unsigned long long)r->tokens_read, (unsigned long long)r->n_tokens);
    if (c == TRACE_END_MAGIC[0])
        return read_footer(r, err, errlen);
    if (check_token_start(r, c, err, errlen) != 0)
        return -1;
    int flags = next_byte(r);
    if (flags == EOF)
        return err_set(err, errlen, "%s: token %llu: truncated", r->path, (unsigned long long)r->tokens_read);
    r->token_head[0] = (uint8_t)c;
    r->token_head[1] = (uint8_t)flags;
    for (int k = 0; k < 3; k++) {
        struct id_row *t = r->prev[k];
        r->prev[k] = r->cur[k];
        r->cur[k] = t;
        uint32_t *tn = r->n_prev[k];
        r->n_prev[k] = r->n_cur[k];
        r->n_cur[k] = tn;
    }
    for (uint32_t l = 0; l < r->meta.n_layers; l++) {
        struct byte_src src;
        if (open_block(r, l, &src, err, errlen) != 0)
            return -1;
        /* layer 0's CRC covers the flags: checked, they can be looked at */
        if (l == 0 && (flags & ~(TRACE_TOKEN_GENERATED | TRACE_TOKEN_SEQ_START)))
            return err_set(err, errlen, "%s: token %llu: unknown token flags 0x%02x", r->path,
                       (unsigned long long)r->tokens_read, (unsigned)flags);
        if (r->tokens_read == 0)
            flags |= TRACE_TOKEN_SEQ_START;
        if (decode_layer(r, l, flags & TRACE_TOKEN_SEQ_START, &src, err, errlen) != 0)
            return -1;
    }
    tok->index = r->tokens_read++;
    tok->flags = (unsigned)flags;
    tok->active = r->ptr[0];
    tok->n_active = r->n_cur[0];
    tok->pred = r->meta.has_predicted ? r->ptr[1] : NULL;
    tok->n_pred = r->meta.has_predicted ? r->n_cur[1] : NULL;
    tok->channels = r->meta.has_channels ? r->ptr[2] : NULL;
    tok->n_channels = r->meta.has_channels ? r->n_cur[2] : NULL;
    return 1;
}

void trace_free(struct trace *tr)
{
    trace_meta_free(&tr->meta);
    free(tr->token_flags);
    free(tr->active_off);
    free(tr->active_ids);
    free(tr->pred_off);
    free(tr->pred_ids);
    free(tr->chan_off);
    free(tr->chan_ids);
    memset(tr, 0, sizeof *tr);
}

/* One kind's sets of a trace in memory, growing as tokens are read. */
struct load_sets {
    uint64_t **off;
    uint32_t **ids;
    uint64_t n, cap;
};

/* Appends token t's sets of the kind (rows[l], counts[l]); 0, or -1 out of memory. */
static int load_token(struct load_sets *s, uint64_t t, uint32_t nl, const uint32_t *const *rows,
                      const uint32_t *counts)
{
    for (uint32_t l = 0; l < nl; l++) {
        if (trace_append_ids(s->ids, &s->n, &s->cap, rows[l], counts[l]) != 0)
            return -1;
        (*s->off)[t * nl + l + 1] = s->n;
    }
    return 0;
}

/* Reads every token of r into tr's arrays (allocated by the caller). */
static int load_body(struct trace_reader *r, struct trace *tr, char *err, size_t errlen)
{
    const struct trace_meta *m = &r->meta;
    struct load_sets sets[3] = {{&tr->active_off, &tr->active_ids, 0, 0},
                                {&tr->pred_off, &tr->pred_ids, 0, 0},
                                {&tr->chan_off, &tr->chan_ids, 0, 0}};
    struct trace_token tok;
    int rc;
    while ((rc = trace_reader_next(r, &tok, err, errlen)) == 1) {
        tr->token_flags[tok.index] = (uint8_t)tok.flags;
        if (load_token(&sets[0], tok.index, m->n_layers, tok.active, tok.n_active) != 0 ||
            (m->has_predicted && load_token(&sets[1], tok.index, m->n_layers, tok.pred, tok.n_pred) != 0) ||
            (m->has_channels && load_token(&sets[2], tok.index, m->n_layers, tok.channels, tok.n_channels) != 0))
            return err_set(err, errlen, "%s: out of memory", r->path);
    }
    return rc;
}

int trace_load(const char *path, struct trace *tr, char *err, size_t errlen)
{
    memset(tr, 0, sizeof *tr);
    struct trace_reader *r = trace_reader_open(path, err, errlen);
    if (!r)
        return -1;
    const struct trace_meta *m = &r->meta;
    uint64_t nt = r->n_tokens, nl = m->n_layers;
    /* A token takes at least 2 bytes plus 3 per set: a header promising more
     * tokens than the file can hold is caught before allocating for them. */
    uint64_t min_token = 2 + 3 * nl * (uint64_t)trace_sets_per_block(m);
    if (nt > r->file_bytes / min_token) {
        err_set(err, errlen, "%s: header says %llu tokens but the file has only %llu bytes", path, (unsigned long long)nt,
            (unsigned long long)r->file_bytes);
        trace_reader_close(r);
        return -1;
    }
    tr->file_bytes = r->file_bytes;
    tr->version = r->version;
    tr->meta = *m;
    tr->meta.source = strdup(m->source);
    tr->token_flags = malloc(nt ? nt : 1);
    tr->active_off = calloc(nt * nl + 1, sizeof(uint64_t));
    if (m->has_predicted)
        tr->pred_off = calloc(nt * nl + 1, sizeof(uint64_t));
    if (m->has_channels)
        tr->chan_off = calloc(nt * nl + 1, sizeof(uint64_t));
    if (!tr->meta.source || !tr->token_flags || !tr->active_off || (m->has_predicted && !tr->pred_off) ||
        (m->has_channels && !tr->chan_off)) {
        err_set(err, errlen, "%s: out of memory for %llu tokens", path, (unsigned long long)nt);
        trace_reader_close(r);
        trace_free(tr);
        return -1;
    }
    int rc = load_body(r, tr, err, errlen);
    tr->n_tokens = nt;
    tr->check_bytes = r->check_bytes;
    trace_reader_close(r);
    if (rc != 0) {
        trace_free(tr);
        return -1;
    }
    return 0;
}

int trace_choose_sets(const char *use, const struct trace_meta *m, const char *path, bool *predicted,
                      char *err, size_t errlen)
{
    if (!strcmp(use, "auto"))
        *predicted = m->has_predicted;
    else if (!strcmp(use, "predicted") || !strcmp(use, "actual"))
        *predicted = use[0] == 'p';
    else {
        err_set(err, errlen, "'%s' is not predicted, actual or auto", use);
        return -1;
    }
    if (*predicted && !m->has_predicted) {
        err_set(err, errlen, "%s has no predicted sets (use its active sets: actual)", path);
        return -1;
    }
    return 0;
}

bool trace_source_synthetic(const struct trace_meta *m, char *model, size_t len)
{
    cJSON *src = m->source ? cJSON_Parse(m->source) : NULL;
    const char *how = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(src, "source"));
    const char *name = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(src, "model"));
    bool synthetic = how && !strcmp(how, "synthetic");
    snprintf(model, len, "%s", name ? name : "");
    cJSON_Delete(src);
    return synthetic;
}

int trace_matches_shape(const struct trace *tr, const char *trace_path, const struct model_shape *s,
                        char *err, size_t errlen)
{
    const struct trace_meta *m = &tr->meta;
    if (m->n_layers != s->n_layers || m->d_model != s->d_model || m->d_ff != s->d_ff ||
        m->ffn_kind != (uint32_t)s->ffn_kind) {
        err_set(err, errlen,
                 "%s: recorded for %u layers, d_model %u, d_ff %u (%s), but the model shape %s has %u, %u, %u (%s)",
                 trace_path, m->n_layers, m->d_model, m->d_ff, m->ffn_kind == FFN_GLU ? "glu" : "relu",
                 s->name, s->n_layers, s->d_model, s->d_ff, s->ffn_kind == FFN_GLU ? "glu" : "relu");
        return -1;
    }
    return 0;
}
