/* Writing a flashbed model folder (see model_format.h). */
#include "engine/model/model_format.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/cleanup.h"
#include "common/crc32c.h"
#include "common/errbuf.h"
#include "common/json_file.h"
#include "common/provenance.h"
#include "engine/model/model.h"

int ffn_unit_geometry(const struct model_shape *s, enum fb_dtype t, struct unit_geometry *g, char *err,
                      size_t errlen)
{
    struct unit_dims d = unit_dims_of_shape(s, t);
    return unit_geometry_make(UNIT_NEURON_BUNDLE, &d, FFN_ALIGN, g, err, errlen);
}

static struct unit_geometry bundle_of(const struct model_shape *s, enum fb_dtype t)
{
    struct unit_geometry g;
    char err[256];
    return ffn_unit_geometry(s, t, &g, err, sizeof err) == 0 ? g : (struct unit_geometry){0};
}

uint64_t ffn_bundle_bytes(const struct model_shape *s, enum fb_dtype t)
{
    return bundle_of(s, t).bytes;
}

uint64_t ffn_bundle_stride(const struct model_shape *s, enum fb_dtype t)
{
    return bundle_of(s, t).stride;
}

/* longrope's keys, and its rule in words for whoever reads model.json
 * (arch_rope_table_at applies it; the reader ignores the words). */
static void longrope_to_json(const struct model_shape *s, cJSON *o)
{
    cJSON_AddNumberToObject(o, "rope_original_max_positions", s->rope_original_max_positions);
    /* each read back exactly (a failure, out of memory, leaves the key
     * out: model_shape_read then refuses the file by its name) */
    json_add_exact_doubles(o, "rope_short_factor", s->rope_short_factor, s->rope_pairs);
    json_add_exact_doubles(o, "rope_long_factor", s->rope_long_factor, s->rope_pairs);
    cJSON_AddStringToObject(o, "rope_longrope_rule", LONGROPE_RULE);
}

/* The RoPE scaling a shape keeps, so a converted model keeps its
 * frequencies (model_shape.c's get_rope_scaling reads these). */
static void rope_scaling_to_json(const struct model_shape *s, cJSON *o)
{
    if (!s->rope_scaling[0])
        return;
    cJSON_AddStringToObject(o, "rope_scaling", s->rope_scaling);
    cJSON_AddNumberToObject(o, "rope_factor", s->rope_factor);
    if (!strcmp(s->rope_scaling, "longrope")) {
        longrope_to_json(s, o);
        return;
    }
    if (strcmp(s->rope_scaling, "llama3") != 0)
        return;
    cJSON_AddNumberToObject(o, "rope_low_freq_factor", s->rope_low_freq_factor);
    cJSON_AddNumberToObject(o, "rope_high_freq_factor", s->rope_high_freq_factor);
    cJSON_AddNumberToObject(o, "rope_original_max_positions", s->rope_original_max_positions);
}

/* Gemma 3's keys (model_shape.h), each only when set (cJSON prints a
 * number with the digits that read back to the same double). */
static void gemma_keys_to_json(const struct model_shape *s, cJSON *o)
{
    if (s->sliding_window_pattern)
        cJSON_AddNumberToObject(o, "sliding_window_pattern", s->sliding_window_pattern);
    if (s->rope_local_theta != 0)
        cJSON_AddNumberToObject(o, "rope_local_theta", s->rope_local_theta);
    if (s->embedding_scale != 0)
        cJSON_AddNumberToObject(o, "embedding_scale", s->embedding_scale);
    if (s->post_norms)
        cJSON_AddBoolToObject(o, "post_norms", true);
}

void model_shape_to_json(const struct model_shape *s, cJSON *o)
{
    cJSON_AddStringToObject(o, "name", s->name);
    cJSON_AddStringToObject(o, "arch", s->arch);
    cJSON_AddNumberToObject(o, "d_model", s->d_model);
    cJSON_AddNumberToObject(o, "d_ff", s->d_ff);
    cJSON_AddNumberToObject(o, "n_layers", s->n_layers);
    cJSON_AddNumberToObject(o, "n_heads", s->n_heads);
    cJSON_AddNumberToObject(o, "n_kv_heads", s->n_kv_heads);
    cJSON_AddNumberToObject(o, "vocab_size", s->vocab_size);
    cJSON_AddNumberToObject(o, "max_positions", s->max_positions);
    cJSON_AddStringToObject(o, "ffn_kind", s->ffn_kind == FFN_GLU ? "glu" : "relu");
    cJSON_AddStringToObject(o, "ffn_activation", s->ffn_activation);
    cJSON_AddStringToObject(o, "norm", s->norm);
    cJSON_AddNumberToObject(o, "norm_eps", s->norm_eps);
    cJSON_AddStringToObject(o, "position", s->position);
    cJSON_AddNumberToObject(o, "position_offset", s->position_offset);
    cJSON_AddNumberToObject(o, "rope_fraction", s->rope_fraction);
    cJSON_AddNumberToObject(o, "rope_theta", s->rope_theta);
    cJSON_AddBoolToObject(o, "biases", s->biases);
    cJSON_AddBoolToObject(o, "tied_embeddings", s->tied_embeddings);
    cJSON_AddBoolToObject(o, "parallel_block", s->parallel_block);
    /* optional keys: written only when set, so older shapes' files stay as they were */
    if (s->fatrelu_threshold != 0)
        cJSON_AddNumberToObject(o, "fatrelu_threshold", s->fatrelu_threshold);
    if (s->qk_norm)
        cJSON_AddBoolToObject(o, "qk_norm", true);
    if (s->output_bias)
        cJSON_AddBoolToObject(o, "output_bias", true);
    if (s->head_dim)
        cJSON_AddNumberToObject(o, "head_dim", s->head_dim);
    if (s->qkv_bias)
        cJSON_AddBoolToObject(o, "qkv_bias", true);
    if (s->sliding_window)
        cJSON_AddNumberToObject(o, "sliding_window", s->sliding_window);
    gemma_keys_to_json(s, o);
    rope_scaling_to_json(s, o);
}

static int remove_tree(const char *dir)
{
    static const char *files[] = {MODEL_JSON,      MODEL_DRAM_FILE, MODEL_FFN_FILE,  MODEL_FFN_CRC_FILE,
                                  MODEL_FFN_MATRICES_FILE, "tokenizer.bin", "tokenizer.json", "tokenizer.gguf"};
    char p[4400];
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    return rmdir(dir);
}

/* The writer's failures go to the buffer its caller gave model_writer_begin. */
#define WERR(w, ...) err_set((w)->err, (w)->errlen, __VA_ARGS__)

int model_writer_begin(struct model_writer *w, const char *dir, const struct model_shape *s,
                       enum fb_dtype t, char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    w->err = err;
    w->errlen = errlen;
    snprintf(w->dir, sizeof w->dir, "%s", dir);
    snprintf(w->tmp, sizeof w->tmp, "%s.tmp.%d", dir, (int)getpid());
    w->shape = *s;
    w->dtype = t;
    w->cleanup = -1;
    struct stat st;
    if (stat(dir, &st) == 0)
        return WERR(w, "%s: already exists; remove it or choose another folder", dir);
    /* registered before it exists: a Ctrl-C at any point leaves nothing */
    w->cleanup = cleanup_add_dir(w->tmp);
    if (mkdir(w->tmp, 0755) != 0) {
        WERR(w, "%s: cannot create folder: %s", dir, strerror(errno));
        cleanup_forget(w->cleanup);
        w->tmp[0] = '\0'; /* not ours: abort must not remove it */
        return -1;
    }
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", w->tmp, MODEL_DRAM_FILE);
    w->dram = fopen(p, "wb");
    snprintf(p, sizeof p, "%s/%s", w->tmp, MODEL_FFN_FILE);
    w->ffn = fopen(p, "wb");
    w->tensors = cJSON_CreateArray();
    w->scratch = calloc(1, ffn_bundle_stride(s, t) > (uint64_t)s->d_ff * 4 ? ffn_bundle_stride(s, t)
                                                                             : (uint64_t)s->d_ff * 4);
    w->column = malloc((size_t)s->d_model * 4);
    w->ffn_crc = malloc((size_t)s->n_layers * s->d_ff * sizeof *w->ffn_crc);
    if (!w->dram || !w->ffn || !w->scratch || !w->column || !w->ffn_crc) {
        WERR(w, "%s: cannot create model files: %s", w->dir, strerror(errno));
        model_writer_abort(w);
        return -1;
    }
    return 0;
}

static int write_or_fail(struct model_writer *w, FILE *f, const void *buf, size_t n, const char *what)
{
    if (fwrite(buf, 1, n, f) != n)
        return WERR(w, "%s: write failed (%s): %s", w->dir, what, strerror(errno));
    return 0;
}

/* A file of tensors being written and its table (dram.bin, ffn_matrices.bin). */
struct tensor_out {
    FILE *f;
    uint64_t *off;
    cJSON *table;
};

/* The table's entry for a tensor of ndim dims in type t, of bytes, at the
 * file's next DRAM_ALIGN boundary (the padding written). NULL when the
 * padding could not be written. */
static cJSON *begin_entry_in(struct model_writer *w, struct tensor_out o, const char *name, enum fb_dtype t, int ndim,
                             const uint64_t *dims, uint64_t bytes)
{
    static const char zeros[DRAM_ALIGN];
    uint64_t pad = (DRAM_ALIGN - *o.off % DRAM_ALIGN) % DRAM_ALIGN;
    if (write_or_fail(w, o.f, zeros, pad, name))
        return NULL;
    *o.off += pad;
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", name);
    cJSON_AddStringToObject(e, "dtype", wtype_name(t));
    cJSON *shape = cJSON_AddArrayToObject(e, "shape");
    for (int i = 0; i < ndim; i++)
        cJSON_AddItemToArray(shape, cJSON_CreateNumber((double)dims[i]));
    cJSON_AddNumberToObject(e, "offset", (double)*o.off);
    cJSON_AddNumberToObject(e, "bytes", (double)bytes);
    cJSON_AddItemToArray(o.table, e);
    return e;
}

static cJSON *begin_entry(struct model_writer *w, const char *name, enum fb_dtype t, int ndim, const uint64_t *dims,
                          uint64_t bytes)
{
    return begin_entry_in(w, (struct tensor_out){w->dram, &w->dram_off, w->tensors}, name, t, ndim, dims, bytes);
}

/* Rows and row length of a tensor of ndim dims (a vector: one row). */
static void rows_cols(int ndim, const uint64_t *dims, uint64_t *rows, uint64_t *cols)
{
    *rows = ndim >= 2 ? dims[0] : 1;
    *cols = dims[ndim - 1];
    for (int i = 1; i < ndim - 1; i++)
        *rows *= dims[i];
}

int model_writer_tensor(struct model_writer *w, const char *name, const float *data, int ndim,
                        const uint64_t *dims)
{
    enum fb_dtype t = ndim >= 2 ? w->dtype : DTYPE_F32;
    uint64_t rows, cols;
    rows_cols(ndim, dims, &rows, &cols);
    uint64_t row_bytes = wtype_row_bytes(t, cols);
    cJSON *e = begin_entry(w, name, t, ndim, dims, rows * row_bytes);
    if (!e)
        return -1;
    /* row by row so the conversion buffer stays one row long */
    void *row = malloc(row_bytes ? row_bytes : 1);
    if (!row)
        return WERR(w, "%s: out of memory converting tensor '%s'", w->dir, name);
    uint32_t crc = 0;
    for (uint64_t r = 0; r < rows; r++) {
        dtype_from_f32(row, t, data + r * cols, cols);
        crc = crc32c_update(crc, row, row_bytes);
        if (write_or_fail(w, w->dram, row, row_bytes, name)) {
            free(row);
            return -1;
        }
    }
    free(row);
    cJSON_AddNumberToObject(e, MODEL_CHECKSUM_ALGORITHM, crc);
    w->dram_off += rows * row_bytes;
    return 0;
}

int model_writer_matrix_stored(struct model_writer *w, const char *name, enum fb_dtype t, const void *data,
                               const uint64_t dims[2])
{
    if (!wtype_row_fits(t, dims[1]))
        return WERR(w, "%s: tensor '%s': rows of %llu elements are not whole blocks of %s (%u)", w->dir, name,
                    (unsigned long long)dims[1], wtype_name(t), wtype_block_elems(t));
    uint64_t bytes = dims[0] * wtype_row_bytes(t, dims[1]);
    cJSON *e = begin_entry(w, name, t, 2, dims, bytes);
    if (!e || write_or_fail(w, w->dram, data, bytes, name))
        return -1;
    cJSON_AddNumberToObject(e, MODEL_CHECKSUM_ALGORITHM, crc32c(data, bytes));
    w->dram_off += bytes;
    w->tensor_dtypes = true;
    return 0;
}

/* ffn_matrices.bin and its table, opened on first use. */
static int open_matrices(struct model_writer *w)
{
    if (w->mats)
        return 0;
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", w->tmp, MODEL_FFN_MATRICES_FILE);
    if (!(w->mats = fopen(p, "wb")) || !(w->mat_tensors = cJSON_CreateArray()))
        return WERR(w, "%s: cannot create %s: %s", w->dir, MODEL_FFN_MATRICES_FILE, strerror(errno));
    return 0;
}

int model_writer_ffn_matrix_stored(struct model_writer *w, int layer, const char *part, enum fb_dtype t,
                                   const void *data)
{
    const struct model_shape *s = &w->shape;
    bool down = !strcmp(part, "down");
    uint64_t dims[2] = {down ? s->d_model : s->d_ff, down ? s->d_ff : s->d_model};
    char name[96], what[32];
    snprintf(what, sizeof what, "ffn.%s", part);
    layer_tensor_name(name, sizeof name, layer, what);
    if (!wtype_row_fits(t, dims[1]))
        return WERR(w, "%s: tensor '%s': rows of %llu elements are not whole blocks of %s (%u)", w->dir, name,
                    (unsigned long long)dims[1], wtype_name(t), wtype_block_elems(t));
    if (open_matrices(w) != 0)
        return -1;
    uint64_t bytes = dims[0] * wtype_row_bytes(t, dims[1]);
    cJSON *e = begin_entry_in(w, (struct tensor_out){w->mats, &w->mats_off, w->mat_tensors}, name, t, 2, dims, bytes);
    if (!e || write_or_fail(w, w->mats, data, bytes, name))
        return -1;
    cJSON_AddNumberToObject(e, MODEL_CHECKSUM_ALGORITHM, crc32c(data, bytes));
    w->mats_off += bytes;
    return 0;
}

int model_writer_ffn_layer(struct model_writer *w, int layer, const float *up, const float *gate,
                           const float *down)
{
    const struct model_shape *s = &w->shape;
    if (layer != w->ffn_layers_written)
        return WERR(w, "%s: FFN layer %d written out of order", w->dir, layer);
    uint64_t d = s->d_model, n = s->d_ff;
    struct unit_geometry g;
    char why[256];
    if (ffn_unit_geometry(s, w->dtype, &g, why, sizeof why) != 0)
        return WERR(w, "%s: %s", w->dir, why);
    const struct unit_extent *u = unit_extent_named(&g, "up"), *gt = unit_extent_named(&g, "gate"),
                             *dn = unit_extent_named(&g, "down");
    char *b = w->scratch;
    for (uint64_t i = 0; i < n; i++) {
        memset(b, 0, g.stride);
        dtype_from_f32(b + u->offset, w->dtype, up + i * d, d);
        if (gt)
            dtype_from_f32(b + gt->offset, w->dtype, gate + i * d, d);
        for (uint64_t j = 0; j < d; j++)
            w->column[j] = down[j * n + i];
        dtype_from_f32(b + dn->offset, w->dtype, w->column, d);
        w->ffn_crc[(uint64_t)layer * n + i] = crc32c(b, g.bytes);
        if (write_or_fail(w, w->ffn, b, g.stride, "ffn"))
            return -1;
    }
    w->ffn_layers_written++;
    return 0;
}

int model_writer_copy_file(struct model_writer *w, const char *src, const char *name)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", w->tmp, name);
    FILE *in = fopen(src, "rb");
    if (!in)
        return WERR(w, "%s: cannot read: %s", src, strerror(errno));
    FILE *out = fopen(p, "wb");
    int rc = out ? 0 : -1;
    char buf[65536];
    size_t got;
    while (rc == 0 && (got = fread(buf, 1, sizeof buf, in)) > 0)
        if (fwrite(buf, 1, got, out) != got)
            rc = -1;
    if (ferror(in) || (out && fclose(out) != 0))
        rc = -1;
    fclose(in);
    if (rc)
        WERR(w, "%s: cannot copy %s into the model folder as %s", w->dir, src, name);
    return rc;
}

/* model.json's object: the format, the shape, the caller's keys (meta),
 * and where the DRAM tensors and FFN bundles lie. The tensor table moves
 * into it (w->tensors becomes NULL), so it is freed with the object. */
static cJSON *model_json(struct model_writer *w, const cJSON *meta)
{
    const struct model_shape *s = &w->shape;
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "format", MODEL_FORMAT_NAME);
    cJSON_AddNumberToObject(o, "format_version", MODEL_FORMAT_VERSION);
    model_shape_to_json(s, o);
    cJSON_AddStringToObject(o, "dtype", wtype_name(w->dtype));
    if (w->tensor_dtypes)
        cJSON_AddStringToObject(o, "tensor_dtypes", MODEL_TENSOR_DTYPES);
    for (cJSON *it = meta ? meta->child : NULL; it; it = it->next)
        cJSON_AddItemToObject(o, it->string, cJSON_Duplicate(it, 1));
    cJSON *dram = cJSON_AddObjectToObject(o, "dram");
    cJSON_AddStringToObject(dram, "file", MODEL_DRAM_FILE);
    cJSON_AddNumberToObject(dram, "bytes", (double)w->dram_off);
    cJSON_AddItemToObject(dram, "tensors", w->tensors);
    w->tensors = NULL;
    cJSON *ffn = cJSON_AddObjectToObject(o, "ffn");
    cJSON_AddStringToObject(ffn, "file", MODEL_FFN_FILE);
    cJSON_AddStringToObject(ffn, "layout", s->ffn_kind == FFN_GLU ? "bundle:up,gate,down" : "bundle:up,down");
    cJSON_AddNumberToObject(ffn, "bundle_bytes", (double)ffn_bundle_bytes(s, w->dtype));
    cJSON_AddNumberToObject(ffn, "bundle_stride", (double)ffn_bundle_stride(s, w->dtype));
    cJSON_AddNumberToObject(ffn, "alignment", FFN_ALIGN);
    cJSON_AddNumberToObject(ffn, "bytes",
                            (double)(ffn_bundle_stride(s, w->dtype) * s->d_ff * s->n_layers));
    cJSON *sums = cJSON_AddObjectToObject(ffn, "checksums");
    cJSON_AddStringToObject(sums, "algorithm", MODEL_CHECKSUM_ALGORITHM);
    cJSON_AddStringToObject(sums, "unit", "bundle (its bundle_bytes, not the padding)");
    cJSON_AddStringToObject(sums, "file", MODEL_FFN_CRC_FILE);
    cJSON_AddNumberToObject(sums, "file_crc32c",
                            crc32c(w->ffn_crc, (size_t)s->n_layers * s->d_ff * sizeof *w->ffn_crc));
    cJSON_AddStringToObject(dram, "checksums", MODEL_CHECKSUM_ALGORITHM " per tensor (its \"crc32c\")");
    if (w->mat_tensors) {
        cJSON *mats = cJSON_AddObjectToObject(o, "ffn_matrices");
        cJSON_AddStringToObject(mats, "file", MODEL_FFN_MATRICES_FILE);
        cJSON_AddNumberToObject(mats, "bytes", (double)w->mats_off);
        cJSON_AddItemToObject(mats, "tensors", w->mat_tensors);
        w->mat_tensors = NULL;
        cJSON_AddStringToObject(mats, "checksums", MODEL_CHECKSUM_ALGORITHM " per tensor (its \"crc32c\")");
    }
    cJSON_AddItemToObject(o, "provenance", provenance_new());
    return o;
}

/* Writes o as model.json into the temporary folder and frees o. */
static int write_model_json(struct model_writer *w, cJSON *o)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", w->tmp, MODEL_JSON);
    char *text = cJSON_Print(o);
    cJSON_Delete(o);
    FILE *f = fopen(p, "w");
    int bad = !text || !f || fputs(text, f) < 0 || fputc('\n', f) < 0;
    if (f && fclose(f) != 0) /* closed even after a failed write */
        bad = 1;
    if (bad) /* before free(), which may change errno */
        WERR(w, "%s: cannot write %s: %s", w->dir, MODEL_JSON, strerror(errno));
    free(text);
    return bad ? -1 : 0;
}

/* The data files complete: every FFN layer written, both files flushed
 * and closed (a full disk shows at fclose). */
static int close_data_files(struct model_writer *w)
{
    const struct model_shape *s = &w->shape;
    if (w->ffn_layers_written != (int)s->n_layers)
        return WERR(w, "%s: %d of %u FFN layers written", w->dir, w->ffn_layers_written, s->n_layers);
    int e1 = fclose(w->dram), e2 = fclose(w->ffn), e3 = w->mats ? fclose(w->mats) : 0;
    w->dram = w->ffn = w->mats = NULL;
    if (e1 || e2 || e3)
        return WERR(w, "%s: cannot write model files: %s", w->dir, strerror(errno));
    return 0;
}

/* ffn.crc32c: the bundles' checksums, little-endian (as this machine
 * stores them: the build refuses a big-endian target). */
static int write_ffn_checksums(struct model_writer *w)
{
    char p[4400];
    snprintf(p, sizeof p, "%s/%s", w->tmp, MODEL_FFN_CRC_FILE);
    size_t n = (size_t)w->shape.n_layers * w->shape.d_ff;
    FILE *f = fopen(p, "wb");
    int bad = !f || fwrite(w->ffn_crc, sizeof *w->ffn_crc, n, f) != n;
    if (f && fclose(f) != 0)
        bad = 1;
    return bad ? WERR(w, "%s: cannot write %s: %s", w->dir, MODEL_FFN_CRC_FILE, strerror(errno)) : 0;
}

int model_writer_finish(struct model_writer *w, cJSON *meta)
{
    int rc = -1;
    if (close_data_files(w) != 0 || write_ffn_checksums(w) != 0 || write_model_json(w, model_json(w, meta)) != 0)
        goto out;
    /* the folder appears under its name only now, complete */
    if (rename(w->tmp, w->dir) != 0) {
        WERR(w, "%s: cannot move the finished folder into place: %s", w->dir, strerror(errno));
        goto out;
    }
    cleanup_forget(w->cleanup);
    w->cleanup = -1;
    rc = 0;
out:
    cJSON_Delete(meta);
    if (rc)
        model_writer_abort(w);
    else {
        cJSON_Delete(w->tensors);
        cJSON_Delete(w->mat_tensors);
        free(w->scratch);
        free(w->column);
        free(w->ffn_crc);
        memset(w, 0, sizeof *w);
        w->cleanup = -1;
    }
    return rc;
}

void model_writer_abort(struct model_writer *w)
{
    if (w->dram)
        fclose(w->dram);
    if (w->ffn)
        fclose(w->ffn);
    if (w->mats)
        fclose(w->mats);
    cJSON_Delete(w->tensors);
    cJSON_Delete(w->mat_tensors);
    free(w->scratch);
    free(w->column);
    free(w->ffn_crc);
    if (w->tmp[0]) {
        remove_tree(w->tmp);
        /* a failure about a file in the temporary names the user's folder */
        err_replace(w->err, w->errlen, w->tmp, w->dir);
    }
    cleanup_forget(w->cleanup);
    memset(w, 0, sizeof *w);
    w->cleanup = -1;
}

int file_fnv1a64(const char *path, char hex[17])
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    uint64_t h = 0xcbf29ce484222325ull;
    unsigned char buf[1 << 14]; /* the caller's stack: thread-safe */
    size_t got;
    while ((got = fread(buf, 1, sizeof buf, f)) > 0)
        for (size_t i = 0; i < got; i++)
            h = (h ^ buf[i]) * 0x100000001b3ull;
    int bad = ferror(f);
    fclose(f);
    snprintf(hex, 17, "%016llx", (unsigned long long)h);
    return bad ? -1 : 0;
}
