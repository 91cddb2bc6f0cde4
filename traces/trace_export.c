#include "traces/trace_export.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/cleanup.h"
#include "common/errbuf.h"
#include "common/fsutil.h"
#include "common/model_shape.h"
#include "traces/trace.h"

int trace_export_format_parse(const char *word, enum trace_export_format *fmt)
{
    if (strcmp(word, "csv") == 0)
        *fmt = TRACE_EXPORT_CSV;
    else if (strcmp(word, "npz-friendly") == 0)
        *fmt = TRACE_EXPORT_NPZ_FRIENDLY;
    else
        return -1;
    return 0;
}

/* The files of one export, opened in the temporary folder. */
enum {
    F_NEURONS_CSV,
    F_TOKENS_CSV,
    F_ACTIVE_TOKEN,
    F_ACTIVE_LAYER,
    F_ACTIVE_NEURON,
    F_PRED_TOKEN,
    F_PRED_LAYER,
    F_PRED_NEURON,
    F_CHAN_TOKEN,
    F_CHAN_LAYER,
    F_CHAN_ID,
    F_TOKENS_FLAGS,
    F_COUNT,
};

static const char *const file_names[F_COUNT] = {
    "neurons.csv",       "tokens.csv",         "active_token.u32",    "active_layer.u32",    "active_neuron.u32",
    "predicted_token.u32", "predicted_layer.u32", "predicted_neuron.u32", "channel_token.u32",
    "channel_layer.u32", "channel_id.u32", "tokens_flags.u8",
};

/* The kinds of rows: active and predicted neurons, kept input channels. */
static const char *const kind_names[3] = {"active", "predicted", "channel"};
static const int kind_base[3] = {F_ACTIVE_TOKEN, F_PRED_TOKEN, F_CHAN_TOKEN};

struct export_state {
    char tmp[4200];
    FILE *f[F_COUNT];
    bool io_error;
};

static int open_file(struct export_state *s, int which, char *err, size_t errlen)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", s->tmp, file_names[which]);
    s->f[which] = fopen(path, "wb");
    if (!s->f[which])
        return err_set(err, errlen, "%s: cannot create: %s", path, strerror(errno));
    setvbuf(s->f[which], NULL, _IOFBF, 1 << 16);
    return 0;
}

static void put_u32(struct export_state *s, int which, uint32_t v)
{
    unsigned char b[4] = {(unsigned char)v, (unsigned char)(v >> 8), (unsigned char)(v >> 16),
                          (unsigned char)(v >> 24)};
    if (fwrite(b, 1, 4, s->f[which]) != 4)
        s->io_error = true;
}

/* One kind's rows of token t, layer l (kind: 0 active, 1 predicted, 2 channel). */
static void put_rows(struct export_state *s, enum trace_export_format fmt, int kind_i, uint64_t t, uint32_t l,
                     const uint32_t *ids, uint32_t n)
{
    if (fmt == TRACE_EXPORT_CSV) {
        const char *kind = kind_names[kind_i];
        for (uint32_t i = 0; i < n; i++)
            if (fprintf(s->f[F_NEURONS_CSV], "%llu,%u,%u,%s\n", (unsigned long long)t, l, ids[i], kind) < 0)
                s->io_error = true;
        return;
    }
    int base = kind_base[kind_i];
    for (uint32_t i = 0; i < n; i++) {
        put_u32(s, base, (uint32_t)t);
        put_u32(s, base + 1, l);
        put_u32(s, base + 2, ids[i]);
    }
}

static void close_files(struct export_state *s)
{
    for (int i = 0; i < F_COUNT; i++) {
        if (s->f[i] && fclose(s->f[i]) != 0)
            s->io_error = true;
        s->f[i] = NULL;
    }
}

static cJSON *file_entry(const char *name, const char *dtype, const char *columns, uint64_t length,
                         const char *meaning)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", name);
    if (dtype)
        cJSON_AddStringToObject(o, "dtype", dtype);
    if (columns)
        cJSON_AddStringToObject(o, "columns", columns);
    cJSON_AddNumberToObject(o, columns ? "rows" : "length", (double)length);
    cJSON_AddStringToObject(o, "meaning", meaning);
    return o;
}

/* export.json's "files": each file, its dtype or columns, length and meaning. */
static cJSON *files_json(const struct trace_meta *m, enum trace_export_format fmt, const struct trace_export_counts *c)
{
    cJSON *files = cJSON_CreateArray();
    if (fmt == TRACE_EXPORT_CSV) {
        cJSON_AddItemToArray(files, file_entry("neurons.csv", NULL, "token,layer,neuron,kind",
                                               c->active_rows + c->predicted_rows + c->channel_rows,
                                               "one row per (token, layer, neuron); kind is active, predicted "
                                               "(only when the trace has predicted sets) or channel (an input "
                                               "channel kept, its id in the neuron column: only when the trace "
                                               "has channel sets); rows in token, layer, kind (active, predicted, "
                                               "channel), id order; header line not counted"));
        cJSON_AddItemToArray(files, file_entry("tokens.csv", NULL, "token,flags,generated,sequence_start",
                                               c->tokens,
                                               "one row per token: flags is the bit set in token_flags, generated "
                                               "and sequence_start are 0 or 1; header line not counted"));
    } else {
        static const char *const what[3] = {"token index", "layer index", "neuron id"};
        const uint64_t rows[3] = {c->active_rows, c->predicted_rows, c->channel_rows};
        for (int kind = 0; kind < 3; kind++) {
            if ((kind == 1 && !m->has_predicted) || (kind == 2 && !m->has_channels))
                continue;
            for (int k = 0; k < 3; k++) {
                char meaning[200];
                snprintf(meaning, sizeof meaning, "%s of each %s (token, layer, %s); rows in token, layer, "
                         "id order, element i of the three %s_* arrays is one row",
                         kind == 2 && k == 2 ? "input channel id" : what[k], kind_names[kind],
                         kind == 2 ? "channel" : "neuron", kind_names[kind]);
                cJSON_AddItemToArray(files, file_entry(file_names[kind_base[kind] + k], "<u4", NULL, rows[kind],
                                                       meaning));
            }
        }
        cJSON_AddItemToArray(files, file_entry("tokens_flags.u8", "u1", NULL, c->tokens,
                                               "each token's flags (bits in token_flags), element i is token i"));
    }
    return files;
}

static cJSON *export_json(const char *trace_path, const struct trace_reader *r, enum trace_export_format fmt,
                          const struct trace_export_counts *c, cJSON *prov)
{
    const struct trace_meta *m = trace_reader_meta(r);
    cJSON *root = cJSON_CreateObject();
    cJSON_AddStringToObject(root, "format", fmt == TRACE_EXPORT_CSV ? "csv" : "npz-friendly");
    cJSON_AddStringToObject(root, "trace", trace_path);
    cJSON *h = cJSON_AddObjectToObject(root, "header");
    cJSON_AddNumberToObject(h, "n_layers", m->n_layers);
    cJSON_AddNumberToObject(h, "d_model", m->d_model);
    cJSON_AddNumberToObject(h, "d_ff", m->d_ff);
    cJSON_AddNumberToObject(h, "n_tokens", (double)trace_reader_n_tokens(r));
    cJSON_AddBoolToObject(h, "has_predicted", m->has_predicted);
    cJSON_AddBoolToObject(h, "has_channels", m->has_channels);
    cJSON_AddStringToObject(h, "dtype", wtype_name(m->dtype));
    cJSON_AddStringToObject(h, "unit_kind", unit_kind_name(m->unit_kind));
    cJSON_AddNumberToObject(h, "units_per_layer", m->units);
    cJSON_AddStringToObject(h, "ffn_kind", m->ffn_kind == FFN_GLU ? "glu" : "relu");
    cJSON_AddNumberToObject(h, "format_version", trace_reader_version(r));
    cJSON *src = m->source ? cJSON_Parse(m->source) : NULL;
    if (src)
        cJSON_AddItemToObject(h, "source", src);
    else if (m->source)
        cJSON_AddStringToObject(h, "source", m->source);
    else
        cJSON_AddNullToObject(h, "source");
    cJSON *tf = cJSON_AddObjectToObject(root, "token_flags");
    cJSON_AddNumberToObject(tf, "generated", TRACE_TOKEN_GENERATED);
    cJSON_AddNumberToObject(tf, "sequence_start", TRACE_TOKEN_SEQ_START);
    cJSON_AddItemToObject(root, "files", files_json(m, fmt, c));
    cJSON_AddNumberToObject(root, "active_rows", (double)c->active_rows);
    cJSON_AddNumberToObject(root, "predicted_rows", (double)c->predicted_rows);
    if (m->has_channels)
        cJSON_AddNumberToObject(root, "channel_rows", (double)c->channel_rows);
    cJSON_AddItemToObject(root, "provenance", prov ? prov : cJSON_CreateNull());
    return root;
}

/* Reads every token and writes its rows; 0, or -1 with err. */
static int export_body(struct trace_reader *r, struct export_state *s, enum trace_export_format fmt,
                       struct trace_export_counts *c, char *err, size_t errlen)
{
    const struct trace_meta *m = trace_reader_meta(r);
    if (fmt == TRACE_EXPORT_CSV) {
        if (open_file(s, F_NEURONS_CSV, err, errlen) != 0 || open_file(s, F_TOKENS_CSV, err, errlen) != 0)
            return -1;
        if (fputs("token,layer,neuron,kind\n", s->f[F_NEURONS_CSV]) == EOF ||
            fputs("token,flags,generated,sequence_start\n", s->f[F_TOKENS_CSV]) == EOF)
            s->io_error = true;
    } else {
        for (int i = F_ACTIVE_TOKEN; i <= F_TOKENS_FLAGS; i++)
            if ((m->has_predicted || i < F_PRED_TOKEN || i > F_PRED_NEURON) &&
                (m->has_channels || i < F_CHAN_TOKEN || i > F_CHAN_ID) && open_file(s, i, err, errlen) != 0)
                return -1;
    }
    struct trace_token tok;
    int rc;
    while ((rc = trace_reader_next(r, &tok, err, errlen)) == 1) {
        if (tok.index > UINT32_MAX && fmt == TRACE_EXPORT_NPZ_FRIENDLY)
            return err_set(err, errlen, "token %llu: beyond what a <u4 token index holds",
                           (unsigned long long)tok.index);
        if (fmt == TRACE_EXPORT_CSV) {
            if (fprintf(s->f[F_TOKENS_CSV], "%llu,%u,%d,%d\n", (unsigned long long)tok.index, tok.flags,
                        (tok.flags & TRACE_TOKEN_GENERATED) != 0, (tok.flags & TRACE_TOKEN_SEQ_START) != 0) < 0)
                s->io_error = true;
        } else {
            unsigned char fl = (unsigned char)tok.flags;
            if (fwrite(&fl, 1, 1, s->f[F_TOKENS_FLAGS]) != 1)
                s->io_error = true;
        }
        for (uint32_t l = 0; l < m->n_layers; l++) {
            put_rows(s, fmt, 0, tok.index, l, tok.active[l], tok.n_active[l]);
            c->active_rows += tok.n_active[l];
            if (m->has_predicted) {
                put_rows(s, fmt, 1, tok.index, l, tok.pred[l], tok.n_pred[l]);
                c->predicted_rows += tok.n_pred[l];
            }
            if (m->has_channels) {
                put_rows(s, fmt, 2, tok.index, l, tok.channels[l], tok.n_channels[l]);
                c->channel_rows += tok.n_channels[l];
            }
        }
        c->tokens++;
        if (s->io_error)
            return err_set(err, errlen, "%s: cannot write: %s", s->tmp, strerror(errno));
    }
    if (rc != 0)
        return -1;
    close_files(s);
    if (s->io_error)
        return err_set(err, errlen, "%s: cannot write: %s", s->tmp, strerror(errno));
    return 0;
}

int trace_export(const char *trace_path, const char *out_dir, enum trace_export_format fmt, cJSON *provenance,
                 struct trace_export_counts *counts, char *err, size_t errlen)
{
    struct trace_export_counts c = {0, 0, 0, 0};
    struct stat st;
    if (lstat(out_dir, &st) == 0) {
        cJSON_Delete(provenance);
        return err_set(err, errlen, "%s: already exists; remove it or choose another folder", out_dir);
    }
    struct trace_reader *r = trace_reader_open(trace_path, err, errlen);
    if (!r) {
        cJSON_Delete(provenance);
        return -1;
    }
    struct export_state s;
    memset(&s, 0, sizeof s);
    snprintf(s.tmp, sizeof s.tmp, "%s.tmp.%d", out_dir, (int)getpid());
    int handle = cleanup_add_dir(s.tmp); /* before it exists: no window without it */
    if (mkdir(s.tmp, 0755) != 0) {
        int e = errno;
        cleanup_forget(handle);
        trace_reader_close(r);
        cJSON_Delete(provenance);
        return err_set(err, errlen, "%s: cannot create: %s", out_dir, strerror(e));
    }
    int rc = export_body(r, &s, fmt, &c, err, errlen);
    if (rc == 0) {
        cJSON *j = export_json(trace_path, r, fmt, &c, provenance);
        provenance = NULL;
        char path[4400];
        snprintf(path, sizeof path, "%s/export.json", s.tmp);
        rc = atomic_write_json(NULL, path, j, err, errlen);
        cJSON_Delete(j);
    }
    if (rc == 0 && rename(s.tmp, out_dir) != 0)
        rc = err_set(err, errlen, "%s: cannot rename into place: %s", out_dir, strerror(errno));
    if (rc != 0) {
        close_files(&s);
        fs_remove_tree(s.tmp); /* our own temporary folder */
        err_replace(err, errlen, s.tmp, out_dir);
    }
    cleanup_forget(handle);
    cJSON_Delete(provenance);
    trace_reader_close(r);
    if (rc == 0 && counts)
        *counts = c;
    return rc;
}
