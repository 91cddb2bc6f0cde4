/* The streaming trace reader: one token at a time, every record checked
 * against the header; and trace_load, which keeps a whole trace in memory. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/model_shape.h"
#include "traces/set_codec.h"
#include "traces/trace.h"
#include "traces/trace_file.h"

struct trace_reader {
    struct trace_meta meta;
    char path[4096];
    FILE *f;
    uint64_t n_tokens, tokens_read, active_events, pred_events;
    uint32_t *cur[2], *prev[2];        /* [n_layers * d_ff] per kind */
    uint32_t *n_cur[2], *n_prev[2];    /* [n_layers] */
    const uint32_t **ptr[2];           /* [n_layers] -> cur rows, handed out */
    uint32_t *scratch;                 /* [d_ff] */
    struct byte_buf buf;
    bool done;
};

#define ERR(...) trace_err(err, errlen, __VA_ARGS__)

void trace_reader_close(struct trace_reader *r)
{
    if (!r)
        return;
    if (r->f)
        fclose(r->f);
    for (int k = 0; k < 2; k++) {
        free(r->cur[k]);
        free(r->prev[k]);
        free(r->n_cur[k]);
        free(r->n_prev[k]);
        free(r->ptr[k]);
    }
    free(r->scratch);
    byte_buf_free(&r->buf);
    trace_meta_free(&r->meta);
    free(r);
}

struct trace_reader *trace_reader_open(const char *path, char *err, size_t errlen)
{
    struct trace_reader *r = calloc(1, sizeof *r);
    if (!r) {
        ERR("%s: out of memory", path);
        return NULL;
    }
    snprintf(r->path, sizeof r->path, "%s", path);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
        ERR("%s: is a directory, not a trace file", path);
        trace_reader_close(r);
        return NULL;
    }
    r->f = fopen(path, "rb");
    if (!r->f) {
        ERR("cannot read trace %s: %s", path, strerror(errno));
        trace_reader_close(r);
        return NULL;
    }
    char why[256];
    if (trace_header_get(r->f, &r->meta, &r->n_tokens, why, sizeof why) != 0) {
        ERR("%s: %s", path, why);
        trace_reader_close(r);
        return NULL;
    }
    size_t plane = (size_t)r->meta.n_layers * r->meta.d_ff;
    bool ok = true;
    for (int k = 0; k < 2; k++) {
        r->cur[k] = malloc(plane * sizeof(uint32_t));
        r->prev[k] = malloc(plane * sizeof(uint32_t));
        r->n_cur[k] = calloc(r->meta.n_layers, sizeof(uint32_t));
        r->n_prev[k] = calloc(r->meta.n_layers, sizeof(uint32_t));
        r->ptr[k] = calloc(r->meta.n_layers, sizeof(uint32_t *));
        ok = ok && r->cur[k] && r->prev[k] && r->n_cur[k] && r->n_prev[k] && r->ptr[k];
    }
    r->scratch = malloc((size_t)r->meta.d_ff * sizeof(uint32_t));
    if (!ok || !r->scratch) {
        ERR("%s: out of memory for %u layers x %u neurons", path, r->meta.n_layers, r->meta.d_ff);
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

static int read_footer(struct trace_reader *r, char *err, size_t errlen)
{
    char magic[7];
    uint64_t n, na, np;
    if (fread(magic, 1, 7, r->f) != 7 || memcmp(magic, &TRACE_END_MAGIC[1], 7) != 0)
        return ERR("%s: after token %llu: expected a token or the end marker, found garbage", r->path,
                   (unsigned long long)r->tokens_read);
    if (trace_get_u64(r->f, &n) || trace_get_u64(r->f, &na) || trace_get_u64(r->f, &np))
        return ERR("%s: truncated end marker", r->path);
    if (n != r->n_tokens || n != r->tokens_read)
        return ERR("%s: header says %llu tokens, end marker %llu, body holds %llu", r->path,
                   (unsigned long long)r->n_tokens, (unsigned long long)n,
                   (unsigned long long)r->tokens_read);
    if (na != r->active_events || np != r->pred_events)
        return ERR("%s: end marker counts %llu active and %llu predicted neurons, body holds %llu and %llu",
                   r->path, (unsigned long long)na, (unsigned long long)np,
                   (unsigned long long)r->active_events, (unsigned long long)r->pred_events);
    if (getc(r->f) != EOF)
        return ERR("%s: trailing bytes after the end marker", r->path);
    r->done = true;
    return 0;
}

int trace_reader_next(struct trace_reader *r, struct trace_token *tok, char *err, size_t errlen)
{
    if (r->done)
        return 0;
    int c = getc(r->f);
    if (c == EOF)
        return ERR("%s: truncated after token %llu of %llu (no end marker)", r->path,
                   (unsigned long long)r->tokens_read, (unsigned long long)r->n_tokens);
    if (c == TRACE_END_MAGIC[0])
        return read_footer(r, err, errlen);
    if (c != TRACE_TOKEN_MARK)
        return ERR("%s: token %llu: bad token marker 0x%02x", r->path,
                   (unsigned long long)r->tokens_read, (unsigned)c);
    if (r->tokens_read >= r->n_tokens)
        return ERR("%s: body holds more tokens than the header's %llu", r->path,
                   (unsigned long long)r->n_tokens);
    int flags = getc(r->f);
    if (flags == EOF)
        return ERR("%s: token %llu: truncated", r->path, (unsigned long long)r->tokens_read);
    if (flags & ~(TRACE_TOKEN_GENERATED | TRACE_TOKEN_SEQ_START))
        return ERR("%s: token %llu: unknown token flags 0x%02x", r->path,
                   (unsigned long long)r->tokens_read, (unsigned)flags);
    if (r->tokens_read == 0)
        flags |= TRACE_TOKEN_SEQ_START;
    bool seq_start = flags & TRACE_TOKEN_SEQ_START;
    uint32_t d_ff = r->meta.d_ff;
    for (int k = 0; k < 2; k++) {
        uint32_t *t = r->prev[k];
        r->prev[k] = r->cur[k];
        r->cur[k] = t;
        uint32_t *tn = r->n_prev[k];
        r->n_prev[k] = r->n_cur[k];
        r->n_cur[k] = tn;
    }
    int kinds = r->meta.has_predicted ? 2 : 1;
    for (uint32_t l = 0; l < r->meta.n_layers; l++) {
        for (int k = 0; k < kinds; k++) {
            size_t row = (size_t)l * d_ff;
            struct id_span refs[3] = {
                {NULL, 0},
                {seq_start ? NULL : r->prev[k] + row, r->n_prev[k][l]},
                {k == 1 ? r->cur[0] + row : NULL, r->n_cur[0][l]},
            };
            char why[160];
            if (set_decode(r->f, refs, d_ff, r->cur[k] + row, &r->n_cur[k][l], r->scratch, &r->buf,
                           why, sizeof why) != 0)
                return ERR("%s: token %llu layer %u (%s set): %s", r->path,
                           (unsigned long long)r->tokens_read, l, k ? "predicted" : "active", why);
            r->ptr[k][l] = r->cur[k] + row;
            *(k ? &r->pred_events : &r->active_events) += r->n_cur[k][l];
        }
    }
    tok->index = r->tokens_read++;
    tok->flags = (unsigned)flags;
    tok->active = r->ptr[0];
    tok->n_active = r->n_cur[0];
    tok->pred = r->meta.has_predicted ? r->ptr[1] : NULL;
    tok->n_pred = r->meta.has_predicted ? r->n_cur[1] : NULL;
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
    memset(tr, 0, sizeof *tr);
}

/* Appends n ids to a growing array. */
static int append_ids(uint32_t **ids, uint64_t *len, uint64_t *cap, const uint32_t *src, uint32_t n)
{
    if (*len + n > *cap) {
        uint64_t c = *cap ? *cap : 1u << 16;
        while (c < *len + n)
            c *= 2;
        uint32_t *p = realloc(*ids, c * sizeof **ids);
        if (!p)
            return -1;
        *ids = p;
        *cap = c;
    }
    if (n)
        memcpy(*ids + *len, src, n * sizeof *src);
    *len += n;
    return 0;
}

int trace_load(const char *path, struct trace *tr, char *err, size_t errlen)
{
    memset(tr, 0, sizeof *tr);
    struct trace_reader *r = trace_reader_open(path, err, errlen);
    if (!r)
        return -1;
    const struct trace_meta *m = &r->meta;
    uint64_t nt = r->n_tokens, nl = m->n_layers;
    struct stat st;
    /* A token takes at least 2 bytes plus 3 per set: a header promising more
     * tokens than the file can hold is caught before allocating for them. */
    uint64_t min_token = 2 + 3 * nl * (m->has_predicted ? 2 : 1);
    if (fstat(fileno(r->f), &st) != 0 || nt > (uint64_t)st.st_size / min_token) {
        ERR("%s: header says %llu tokens but the file has only %lld bytes", path,
            (unsigned long long)nt, (long long)st.st_size);
        trace_reader_close(r);
        return -1;
    }
    tr->file_bytes = (uint64_t)st.st_size;
    tr->meta = *m;
    tr->meta.source = strdup(m->source);
    tr->token_flags = malloc(nt ? nt : 1);
    tr->active_off = calloc(nt * nl + 1, sizeof(uint64_t));
    if (m->has_predicted)
        tr->pred_off = calloc(nt * nl + 1, sizeof(uint64_t));
    if (!tr->meta.source || !tr->token_flags || !tr->active_off || (m->has_predicted && !tr->pred_off)) {
        ERR("%s: out of memory for %llu tokens", path, (unsigned long long)nt);
        trace_reader_close(r);
        trace_free(tr);
        return -1;
    }
    uint64_t na = 0, ca = 0, np = 0, cp = 0;
    struct trace_token tok;
    int rc;
    while ((rc = trace_reader_next(r, &tok, err, errlen)) == 1) {
        tr->token_flags[tok.index] = (uint8_t)tok.flags;
        for (uint32_t l = 0; l < nl; l++) {
            uint64_t i = tok.index * nl + l;
            if (append_ids(&tr->active_ids, &na, &ca, tok.active[l], tok.n_active[l]) != 0 ||
                (m->has_predicted && append_ids(&tr->pred_ids, &np, &cp, tok.pred[l], tok.n_pred[l]) != 0)) {
                rc = ERR("%s: out of memory", path);
                break;
            }
            tr->active_off[i + 1] = na;
            if (m->has_predicted)
                tr->pred_off[i + 1] = np;
        }
        if (rc < 0)
            break;
    }
    tr->n_tokens = nt;
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
        snprintf(err, errlen, "'%s' is not predicted, actual or auto", use);
        return -1;
    }
    if (*predicted && !m->has_predicted) {
        snprintf(err, errlen, "%s has no predicted sets (use its active sets: actual)", path);
        return -1;
    }
    return 0;
}

int trace_matches_shape(const struct trace *tr, const char *trace_path, const struct model_shape *s,
                        char *err, size_t errlen)
{
    const struct trace_meta *m = &tr->meta;
    if (m->n_layers != s->n_layers || m->d_model != s->d_model || m->d_ff != s->d_ff ||
        m->ffn_kind != (uint32_t)s->ffn_kind) {
        snprintf(err, errlen,
                 "%s: recorded for %u layers, d_model %u, d_ff %u (%s), but the model shape %s has %u, %u, %u (%s)",
                 trace_path, m->n_layers, m->d_model, m->d_ff, m->ffn_kind == FFN_GLU ? "glu" : "relu",
                 s->name, s->n_layers, s->d_model, s->d_ff, s->ffn_kind == FFN_GLU ? "glu" : "relu");
        return -1;
    }
    return 0;
}
