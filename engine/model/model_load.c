/* Opening a flashbed model folder: model.json is checked against the
 * files before any weight is trusted. */
#include "engine/model/model.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "common/checked.h"
#include "common/errbuf.h"
#include "common/json_file.h"
#include "engine/model/model_format.h"
#include "engine/model/model_integrity.h"
#include "engine/model/model_load_impl.h"
#include "engine/model/model_table.h"
#include "engine/tokenizer/tokenizer_gguf.h"

void *model_read_whole(const char *path, size_t expect, size_t *len, char *err, size_t errlen)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        err_set(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || (size_t)st.st_size != expect) {
        err_set(err, errlen, "%s: is %lld bytes, model.json says %zu", path, (long long)st.st_size, expect);
        close(fd);
        return NULL;
    }
    void *buf = NULL;
    size_t alloc = expect ? expect : 1;
    if (posix_memalign(&buf, 2u << 20, alloc) != 0) {
        err_set(err, errlen, "%s: cannot allocate %zu bytes", path, expect);
        close(fd);
        return NULL;
    }
#ifdef MADV_HUGEPAGE
    madvise(buf, alloc, MADV_HUGEPAGE);
#endif
    size_t done = 0;
    while (done < expect) {
        ssize_t got = read(fd, (char *)buf + done, expect - done > (1u << 30) ? (1u << 30) : expect - done);
        if (got <= 0) {
            err_set(err, errlen, "%s: read failed at byte %zu: %s", path, done,
                    got < 0 ? strerror(errno) : "end of file");
            free(buf);
            close(fd);
            return NULL;
        }
        done += (size_t)got;
    }
    close(fd);
    *len = expect;
    return buf;
}

/* Whether entry e's dtype is what name may have: *t, or for a matrix of
 * a per-tensor model (struct model's tensor_dtypes) any type whose blocks
 * make its rows of `row` elements, written to *t. */
static int tensor_type(const struct table *tb, const char *name, const cJSON *dt, int ndim, uint64_t row,
                       enum fb_dtype *t)
{
    enum fb_dtype got;
    bool known = cJSON_IsString(dt) && wtype_parse(dt->valuestring, &got) == 0;
    if (known && (tb->m->tensor_dtypes || tb->own_types) && ndim == 2) {
        if (!wtype_row_fits(got, row))
            return err_set(tb->err, tb->errlen, "%s: tensor '%s' has dtype %s, whose blocks of %u do not make its rows of %llu",
                           tb->json_path, name, wtype_name(got), wtype_block_elems(got), (unsigned long long)row);
        *t = got;
        return 0;
    }
    if (known && got == *t)
        return 0;
    return err_set(tb->err, tb->errlen, "%s: tensor '%s' has dtype %s, expected %s", tb->json_path, name,
                   cJSON_IsString(dt) ? dt->valuestring : "(none)", wtype_name(*t));
}

const void *tensor_of(const struct table *tb, const char *name, enum fb_dtype *type, int ndim, uint64_t d0,
                      uint64_t d1)
{
    const cJSON *e;
    cJSON_ArrayForEach(e, tb->tensors)
    {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(e, "name");
        if (cJSON_IsString(n) && !strcmp(n->valuestring, name))
            break;
    }
    if (!e) {
        err_set(tb->err, tb->errlen, "%s: tensor '%s' is missing", tb->json_path, name);
        return NULL;
    }
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(e, "dtype");
    const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
    const cJSON *off = cJSON_GetObjectItemCaseSensitive(e, "offset");
    const cJSON *bytes = cJSON_GetObjectItemCaseSensitive(e, "bytes");
    if (tensor_type(tb, name, dt, ndim, ndim == 1 ? d0 : d1, type) != 0)
        return NULL;
    enum fb_dtype t = *type;
    uint64_t want[2] = {d0, d1};
    if (!cJSON_IsArray(shape) || cJSON_GetArraySize(shape) != ndim) {
        err_set(tb->err, tb->errlen, "%s: tensor '%s' should have %d dimensions", tb->json_path, name, ndim);
        return NULL;
    }
    char what[160];
    for (int i = 0; i < ndim; i++) {
        snprintf(what, sizeof what, "tensor '%s' shape[%d]", name, i);
        uint64_t got_dim;
        if (json_number_u64(cJSON_GetArrayItem(shape, i), what, want[i], want[i], &got_dim, tb->json_path,
                            tb->err, tb->errlen))
            return NULL;
    }
    /* the shape's dimensions are bounded (MODEL_MAX_*): the product fits */
    uint64_t len = wtype_row_bytes(t, ndim == 1 ? d0 : d0 * d1), offset, nbytes;
    snprintf(what, sizeof what, "tensor '%s' \"offset\"", name);
    if (json_number_u64(off, what, 0, tb->file.bytes, &offset, tb->json_path, tb->err, tb->errlen))
        return NULL;
    snprintf(what, sizeof what, "tensor '%s' \"bytes\"", name);
    if (json_number_u64(bytes, what, len, len, &nbytes, tb->json_path, tb->err, tb->errlen))
        return NULL;
    if (offset % 4 != 0 || !range_within(offset, len, tb->file.bytes)) {
        err_set(tb->err, tb->errlen, "%s: tensor '%s' has a bad offset: %llu bytes at %llu %s %s (%zu bytes)",
                tb->json_path, name, (unsigned long long)len, (unsigned long long)offset,
                offset % 4 ? "are misaligned in" : "pass the end of", tb->file.file, (size_t)tb->file.bytes);
        return NULL;
    }
    return (const char *)tb->file.base + offset;
}

/* A tensor of type t exactly (vectors; matrices of a model of one type). */
static const void *tensor(const struct table *tb, const char *name, enum fb_dtype t, int ndim, uint64_t d0,
                          uint64_t d1)
{
    return tensor_of(tb, name, &t, ndim, d0, d1);
}

/* Gemma 3's norms on each branch's output (post_norms). */
static int load_post_norms(const struct model *m, const struct table *tb, uint32_t l, struct layer_weights *L)
{
    char n[96];
    layer_tensor_name(n, sizeof n, (int)l, "post_attn_norm.weight");
    if (!(L->post_attn_norm = tensor(tb, n, DTYPE_F32, 1, m->shape.d_model, 0)))
        return -1;
    layer_tensor_name(n, sizeof n, (int)l, "post_ffn_norm.weight");
    return (L->post_ffn_norm = tensor(tb, n, DTYPE_F32, 1, m->shape.d_model, 0)) ? 0 : -1;
}

static int load_layers(struct model *m, const struct table *tb)
{
    const struct model_shape *s = &m->shape;
    uint64_t d = s->d_model;
    char n[96];
#define T(field, what, type, nd, a, b)                                                           \
    do {                                                                                        \
        layer_tensor_name(n, sizeof n, (int)l, what);                                           \
        if (!(L->field = tensor(tb, n, type, nd, a, b)))                                        \
            return -1;                                                                          \
    } while (0)
#define M(field, what, a, b)                                                                     \
    do {                                                                                        \
        layer_tensor_name(n, sizeof n, (int)l, what);                                           \
        L->field##_type = m->dtype;                                                             \
        if (!(L->field = tensor_of(tb, n, &L->field##_type, 2, a, b)))                          \
            return -1;                                                                          \
    } while (0)
    const struct arch *a = &m->arch;
    bool ffn_norm = !a->parallel_block; /* a parallel block's one norm is attn_norm */
    for (uint32_t l = 0; l < s->n_layers; l++) {
        struct layer_weights *L = &m->layers[l];
        T(attn_norm, "attn_norm.weight", DTYPE_F32, 1, d, 0);
        M(wq, "attn.wq", m->q_dim, d);
        M(wk, "attn.wk", m->kv_dim, d);
        M(wv, "attn.wv", m->kv_dim, d);
        M(wo, "attn.wo", d, m->q_dim);
        if (ffn_norm)
            T(ffn_norm, "ffn_norm.weight", DTYPE_F32, 1, d, 0);
        if (a->post_norms && load_post_norms(m, tb, l, L))
            return -1;
        if (a->norm == NORM_LAYER) {
            T(attn_norm_bias, "attn_norm.bias", DTYPE_F32, 1, d, 0);
            if (ffn_norm)
                T(ffn_norm_bias, "ffn_norm.bias", DTYPE_F32, 1, d, 0);
        }
        if (a->qk_norm) {
            T(q_norm, "attn.q_norm.weight", DTYPE_F32, 1, m->head_dim, 0);
            T(k_norm, "attn.k_norm.weight", DTYPE_F32, 1, m->head_dim, 0);
        }
        if (a->qk_norm && a->norm == NORM_LAYER) {
            T(q_norm_bias, "attn.q_norm.bias", DTYPE_F32, 1, m->head_dim, 0);
            T(k_norm_bias, "attn.k_norm.bias", DTYPE_F32, 1, m->head_dim, 0);
        }
        if (a->qkv_bias) {
            T(bq, "attn.bq", DTYPE_F32, 1, m->q_dim, 0);
            T(bk, "attn.bk", DTYPE_F32, 1, m->kv_dim, 0);
            T(bv, "attn.bv", DTYPE_F32, 1, m->kv_dim, 0);
        }
        if (a->biases) {
            T(bo, "attn.bo", DTYPE_F32, 1, d, 0);
            T(ffn_up_bias, "ffn.up_bias", DTYPE_F32, 1, s->d_ff, 0);
            T(ffn_down_bias, "ffn.down_bias", DTYPE_F32, 1, d, 0);
        }
        L->ffn_bundles = m->ffn ? (const char *)m->ffn + (uint64_t)l * s->d_ff * m->bundle_stride : NULL;
    }
#undef T
#undef M
    return 0;
}

int model_open(struct model *m, const char *dir, char *err, size_t errlen)
{
    return model_open_flags(m, dir, 0, err, errlen);
}

/* model.json's "dram" and "ffn" sections against the shape and dtype. */
static int check_layout(struct model *m, const cJSON *o, const char *path, uint64_t *dram_bytes,
                        uint64_t *ffn_bytes, char *err, size_t errlen)
{
    const struct model_shape *s = &m->shape;
    const cJSON *dram = cJSON_GetObjectItemCaseSensitive(o, "dram");
    const cJSON *ffn = cJSON_GetObjectItemCaseSensitive(o, "ffn");
    uint64_t stride;
    if (!cJSON_IsObject(dram) || !cJSON_IsObject(ffn))
        return err_set(err, errlen, "%s: \"dram\" or \"ffn\" section missing or malformed", path);
    /* sizes past SIZE_MAX / 2 cannot be read into memory, and bounding
     * them keeps every sum below 2^64 */
    if (json_get_u64(dram, "bytes", 0, SIZE_MAX / 2, dram_bytes, path, err, errlen) ||
        json_get_u64(ffn, "bytes", 0, SIZE_MAX / 2, ffn_bytes, path, err, errlen) ||
        json_get_u64(ffn, "bundle_stride", 1, SIZE_MAX / 2, &stride, path, err, errlen))
        return -1;
    m->bundle_bytes = ffn_bundle_bytes(s, m->dtype);
    m->bundle_stride = ffn_bundle_stride(s, m->dtype);
    if (stride != m->bundle_stride || *ffn_bytes != stride * s->d_ff * s->n_layers)
        return err_set(err, errlen, "%s: FFN layout (bundle_stride %llu, %llu bytes) does not match the shape",
                       path, (unsigned long long)stride, (unsigned long long)*ffn_bytes);
    return 0;
}

/* dram.bin into memory; ffn.bin too, or only checked when it stays on flash. */
static int load_files(struct model *m, const char *dir, unsigned flags, uint64_t dram_bytes, uint64_t ffn_bytes,
                      char *err, size_t errlen)
{
    char fpath[4300];
    snprintf(fpath, sizeof fpath, "%s/%s", dir, MODEL_DRAM_FILE);
    if (!(m->dram = model_read_whole(fpath, dram_bytes, &m->dram_bytes, err, errlen)))
        return -1;
    snprintf(m->ffn_path, sizeof m->ffn_path, "%s/%s", dir, MODEL_FFN_FILE);
    if (!(flags & MODEL_FFN_ON_FLASH))
        return (m->ffn = model_read_whole(m->ffn_path, ffn_bytes, &m->ffn_bytes, err, errlen)) ? 0 : -1;
    struct stat st;
    if (stat(m->ffn_path, &st) != 0)
        return err_set(err, errlen, "%s: cannot open: %s", m->ffn_path, strerror(errno));
    if ((uint64_t)st.st_size != ffn_bytes)
        return err_set(err, errlen, "%s: is %lld bytes, model.json says %llu", m->ffn_path,
                       (long long)st.st_size, (unsigned long long)ffn_bytes);
    m->ffn_bytes = ffn_bytes;
    return 0;
}

/* Every DRAM tensor the architecture needs, found and checked. */
static int load_tensors(struct model *m, const struct table *tb)
{
    const struct model_shape *s = &m->shape;
    uint64_t d = s->d_model;
    m->tok_embedding_type = m->pos_embedding_type = m->output_type = m->dtype;
    if (!(m->tok_embedding = tensor_of(tb, "tok_embedding", &m->tok_embedding_type, 2, s->vocab_size, d)) ||
        !(m->final_norm = tensor(tb, "final_norm.weight", DTYPE_F32, 1, d, 0)))
        return -1;
    if (m->arch.norm == NORM_LAYER && !(m->final_norm_bias = tensor(tb, "final_norm.bias", DTYPE_F32, 1, d, 0)))
        return -1;
    if (m->arch.position == POSITION_LEARNED &&
        !(m->pos_embedding = tensor_of(tb, "pos_embedding", &m->pos_embedding_type, 2,
                                       s->max_positions + s->position_offset, d)))
        return -1;
    if (m->arch.tied_output)
        m->output = m->tok_embedding, m->output_type = m->tok_embedding_type;
    else
        m->output = tensor_of(tb, "output", &m->output_type, 2, s->vocab_size, d);
    if (!m->output)
        return -1;
    if (m->arch.output_bias && !(m->output_bias = tensor(tb, "output.bias", DTYPE_F32, 1, s->vocab_size, 0)))
        return -1;
    m->layers = calloc(s->n_layers, sizeof *m->layers);
    if (!m->layers)
        return err_set(tb->err, tb->errlen, "%s: cannot allocate %u layers", tb->json_path, s->n_layers);
    return load_layers(m, tb);
}

/* A GGUF file's tokenizer metadata (the file is closed again after). */
static int load_gguf_tokenizer(struct tokenizer *t, const char *fpath, int vocab_size, char *err, size_t errlen)
{
    struct gguf_file f;
    if (gguf_open(&f, fpath, err, errlen))
        return -1;
    int rc = tokenizer_load_gguf(t, &f, vocab_size, err, errlen);
    gguf_close(&f);
    return rc;
}

/* The tokens generation stops at: EOS, then model.json's stop_ids (each
 * once); more than the model holds is refused, never cut short. */
static int read_stop_ids(struct model *m, const cJSON *tok, const char *path, char *err, size_t errlen)
{
    m->n_stop = 0;
    m->stop_ids[m->n_stop++] = m->eos_id;
    const cJSON *stops = cJSON_GetObjectItemCaseSensitive(tok, "stop_ids"), *it;
    cJSON_ArrayForEach(it, stops)
    {
        uint64_t id;
        if (json_number_u64(it, "tokenizer \"stop_ids\" entry", 0, m->shape.vocab_size - 1, &id, path, err, errlen))
            return -1;
        bool known = false;
        for (int i = 0; i < m->n_stop; i++)
            known = known || m->stop_ids[i] == (int)id;
        if (known)
            continue;
        if (m->n_stop == MODEL_MAX_STOP_IDS)
            return err_set(err, errlen, "%s: tokenizer \"stop_ids\" names more than the %d tokens a model stops at",
                           path, MODEL_MAX_STOP_IDS - 1);
        m->stop_ids[m->n_stop++] = (int)id;
    }
    return 0;
}

/* The tokenizer model.json names, and its special ids. */
static int load_tokenizer(struct model *m, const cJSON *o, const char *dir, const char *path, char *err,
                          size_t errlen)
{
    const struct model_shape *s = &m->shape;
    const cJSON *tok = cJSON_GetObjectItemCaseSensitive(o, "tokenizer");
    const cJSON *kind = cJSON_GetObjectItemCaseSensitive(tok, "kind");
    const cJSON *tfile = cJSON_GetObjectItemCaseSensitive(tok, "file");
    if (!cJSON_IsString(kind) || !cJSON_IsString(tfile))
        return err_set(err, errlen, "%s: \"tokenizer\" must name its \"kind\" and \"file\"", path);
    /* a file of the model folder: no path, and not the folder itself */
    const char *tname = tfile->valuestring;
    if (!tname[0] || strchr(tname, '/') || !strcmp(tname, ".") || !strcmp(tname, ".."))
        return err_set(err, errlen, "%s: tokenizer \"file\" must be a file name inside the model folder, not \"%.100s\"",
                       path, tname);
    char fpath[4300];
    snprintf(fpath, sizeof fpath, "%s/%s", dir, tfile->valuestring);
    int tok_rc;
    if (!strcmp(kind->valuestring, "sentencepiece-bpe"))
        tok_rc = tokenizer_load_llama2c(&m->tok, fpath, (int)s->vocab_size, err, errlen);
    else if (!strcmp(kind->valuestring, "byte-level-bpe"))
        tok_rc = tokenizer_load_hf_bytelevel(&m->tok, fpath, (int)s->vocab_size, err, errlen);
    else if (!strcmp(kind->valuestring, "gguf"))
        tok_rc = load_gguf_tokenizer(&m->tok, fpath, (int)s->vocab_size, err, errlen);
    else
        return err_set(err, errlen,
                       "%s: tokenizer kind \"%s\" is not supported (sentencepiece-bpe, byte-level-bpe, gguf)", path,
                       kind->valuestring);
    if (tok_rc != 0)
        return -1;
    uint64_t bos, eos;
    if (json_get_u64(tok, "bos_id", 0, s->vocab_size - 1, &bos, path, err, errlen) ||
        json_get_u64(tok, "eos_id", 0, s->vocab_size - 1, &eos, path, err, errlen))
        return -1;
    m->bos_id = m->tok.bos_id = (int)bos;
    m->eos_id = m->tok.eos_id = (int)eos;
    return read_stop_ids(m, tok, path, err, errlen);
}

/* model.json's format, shape, architecture and dtype. */
static int read_header(struct model *m, const cJSON *o, const char *path, char *err, size_t errlen)
{
    const cJSON *fmt = cJSON_GetObjectItemCaseSensitive(o, "format");
    if (!cJSON_IsString(fmt) || strcmp(fmt->valuestring, MODEL_FORMAT_NAME) != 0)
        return err_set(err, errlen, "%s: not a flashbed model (no \"format\": \"%s\")", path,
                       MODEL_FORMAT_NAME);
    uint64_t version;
    if (json_get_u64(o, "format_version", MODEL_FORMAT_VERSION, MODEL_FORMAT_VERSION, &version, path, err, errlen))
        return -1;
    if (model_shape_read(path, &m->shape, err, errlen) != 0)
        return -1;
    const struct model_shape *s = &m->shape;
    char why[512];
    if (arch_from_shape(s, &m->arch, why, sizeof why) != 0)
        return err_set(err, errlen, "%s: %s", path, why);
    const cJSON *dt = cJSON_GetObjectItemCaseSensitive(o, "dtype");
    if (!cJSON_IsString(dt) || wtype_parse(dt->valuestring, &m->dtype))
        return err_set(err, errlen, "%s: unknown \"dtype\" (%s)", path, wtype_names());
    const cJSON *per = cJSON_GetObjectItemCaseSensitive(o, "tensor_dtypes");
    if (per && !(cJSON_IsString(per) && !strcmp(per->valuestring, MODEL_TENSOR_DTYPES)))
        return err_set(err, errlen, "%s: \"tensor_dtypes\" must be \"%s\" when present", path,
                       MODEL_TENSOR_DTYPES);
    m->tensor_dtypes = per != NULL;
    m->head_dim = model_shape_head_dim(s);
    m->q_dim = s->n_heads * m->head_dim;
    m->kv_dim = s->n_kv_heads * m->head_dim;
    return 0;
}

int model_open_flags(struct model *m, const char *dir, unsigned flags, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    snprintf(m->dir, sizeof m->dir, "%s", dir);
    m->verify_off = (flags & MODEL_NO_VERIFY) != 0;
    char path[4200];
    snprintf(path, sizeof path, "%s/%s", dir, MODEL_JSON);
    struct stat st;
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode))
        return err_set(err, errlen, "%s is not a flashbed model folder: %s; convert one with flashbed convert", dir,
                       stat(dir, &st) != 0 ? strerror(errno) : "not a folder");
    char *text = read_text_file(path, NULL);
    if (!text && errno == ENOENT)
        return err_set(err, errlen, "%s is not a flashbed model folder: no %s; convert one with flashbed convert", dir,
                       MODEL_JSON);
    if (!text)
        return err_set(err, errlen, "%s: cannot read: %s", path, strerror(errno));
    cJSON *o = cJSON_Parse(text);
    free(text);
    uint64_t dram_bytes = 0, ffn_bytes = 0;
    struct table tb = {.json_path = path, .m = m, .err = err, .errlen = errlen};
    int rc = read_header(m, o, path, err, errlen);
    if (rc == 0)
        rc = check_layout(m, o, path, &dram_bytes, &ffn_bytes, err, errlen);
    if (rc == 0)
        rc = load_files(m, dir, flags, dram_bytes, ffn_bytes, err, errlen);
    if (rc == 0) {
        tb.tensors = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "dram"), "tensors");
        tb.file = (struct tensor_file){MODEL_DRAM_FILE, "dram", m->dram, m->dram_bytes};
        rc = model_table_check(tb.tensors, &tb.file, path, err, errlen);
    }
    if (rc == 0)
        rc = load_tensors(m, &tb);
    if (rc == 0)
        rc = model_checksums_read(m, o, path, err, errlen);
    if (rc == 0 && !(flags & MODEL_NO_VERIFY))
        rc = model_tensors_verify(m, &tb.file, tb.tensors, err, errlen) || model_ffn_verify_all(m, err, errlen) ? -1
                                                                                                             : 0;
    if (rc == 0)
        rc = model_matrices_open(m, o, flags, path, err, errlen);
    if (rc == 0)
        rc = load_tokenizer(m, o, dir, path, err, errlen);
    cJSON_Delete(o);
    if (rc)
        model_close(m);
    return rc;
}

void model_close(struct model *m)
{
    free(m->dram);
    free(m->ffn_matrices);
    free(m->ffn);
    free(m->ffn_crc);
    free(m->layers);
    tokenizer_free(&m->tok);
    memset(m, 0, sizeof *m);
}

int model_unit_geometry(const struct model *m, struct unit_geometry *g, char *err, size_t errlen)
{
    if (ffn_unit_geometry(&m->shape, m->dtype, g, err, errlen) != 0)
        return -1;
    return m->bundle_stride ? unit_geometry_set_stride(g, m->bundle_stride, err, errlen) : 0;
}

struct trace_meta model_trace_meta(const struct model *m)
{
    struct trace_meta t = {.n_layers = m->shape.n_layers, .d_model = m->shape.d_model, .d_ff = m->shape.d_ff,
                           .dtype = m->dtype, .ffn_kind = (uint32_t)m->shape.ffn_kind};
    trace_meta_set_units(&t);
    return t;
}

void model_weight_types(const struct model *m, bool has[DTYPE_COUNT])
{
    for (int t = 0; t < DTYPE_COUNT; t++)
        has[t] = false;
    has[m->dtype] = has[m->tok_embedding_type] = has[m->output_type] = true;
    if (m->pos_embedding)
        has[m->pos_embedding_type] = true;
    for (uint32_t l = 0; m->layers && l < m->shape.n_layers; l++) {
        const struct layer_weights *L = &m->layers[l];
        has[L->wq_type] = has[L->wk_type] = has[L->wv_type] = has[L->wo_type] = true;
        if (L->ffn_down)
            has[L->ffn_up_type] = has[L->ffn_down_type] = true;
        if (L->ffn_gate)
            has[L->ffn_gate_type] = true;
    }
}

/* Layer l's FFN as the dense FFN reads it: its matrices when they are
 * here, else its bundles. */
static uint64_t ffn_bytes(const struct model *m, uint32_t l)
{
    const struct layer_weights *L = &m->layers[l];
    uint64_t d = m->shape.d_model, ff = m->shape.d_ff;
    if (!L->ffn_down)
        return m->bundle_bytes * ff;
    return ff * wtype_row_bytes(L->ffn_up_type, d) + d * wtype_row_bytes(L->ffn_down_type, ff) +
           (L->ffn_gate ? ff * wtype_row_bytes(L->ffn_gate_type, d) : 0);
}

/* Layer l's attention matrices, each in its type. */
static uint64_t attention_bytes(const struct model *m, uint32_t l)
{
    const struct layer_weights *L = &m->layers[l];
    uint64_t d = m->shape.d_model;
    return m->q_dim * wtype_row_bytes(L->wq_type, d) + m->kv_dim * wtype_row_bytes(L->wk_type, d) +
           m->kv_dim * wtype_row_bytes(L->wv_type, d) + d * wtype_row_bytes(L->wo_type, m->q_dim);
}

uint64_t model_bytes_per_token(const struct model *m)
{
    const struct model_shape *s = &m->shape;
    uint64_t d = s->d_model, sum = 0;
    for (uint32_t l = 0; l < s->n_layers; l++)
        sum += attention_bytes(m, l) + ffn_bytes(m, l);
    return sum + s->vocab_size * wtype_row_bytes(m->output_type, d) + wtype_row_bytes(m->tok_embedding_type, d);
}
