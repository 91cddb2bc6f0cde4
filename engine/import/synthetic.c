#include "engine/import/synthetic.h"

#include "engine/import/safetensors.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/cleanup.h"
#include "common/errbuf.h"
#include "common/progress.h"
#include "common/rng.h"
#include "engine/import/spectrum.h"
#include "engine/import/synthetic_hf.h"
#include "engine/tokenizer/tokenizer.h"

#include <cjson/cJSON.h>

#define CHUNK (1u << 20)

/* k floats uniform in [base - scale, base + scale]. */
static void fill_uniform(float *buf, size_t k, float scale, float base, struct rng *r)
{
    for (size_t i = 0; i < k; i++)
        buf[i] = base + scale * (float)((int64_t)(rng_next(r) >> 40) - (1 << 23)) * (1.0f / (1 << 23));
}

/* n such floats, streamed in chunks. */
static int write_uniform(FILE *f, struct rng *r, uint64_t n, float scale, float base, float *buf,
                         const struct progress_report *p, uint64_t *done, uint64_t total)
{
    while (n > 0) {
        size_t k = n < CHUNK ? (size_t)n : CHUNK;
        fill_uniform(buf, k, scale, base, r);
        if (fwrite(buf, 4, k, f) != k)
            return -1;
        n -= k;
        *done += k;
        progress_report(p, "model make", *done, total, NULL);
    }
    return 0;
}

/* Piece i of the synthetic vocabulary: <unk> <s> </s>, the 256 byte tokens,
 * " ", then for L = 1, 2, ...: every string of L letters, then each with a
 * leading space. Every piece of two or more characters is its prefix plus
 * its last letter, both earlier in the list: the merges. */
void synthetic_piece(uint32_t i, char *p, size_t len)
{
    if (i < 3) {
        snprintf(p, len, "%s", i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
        return;
    }
    if (i < 259) {
        snprintf(p, len, "<0x%02X>", i - 3);
        return;
    }
    if (i == 259) {
        snprintf(p, len, " ");
        return;
    }
    uint64_t k = i - 260, count = 26;
    int letters = 1;
    while (k >= 2 * count) {
        k -= 2 * count;
        count *= 26;
        letters++;
    }
    int space = k >= count;
    if (space)
        k -= count;
    char *q = p;
    if (space)
        *q++ = ' ';
    for (int j = letters - 1; j >= 0; j--) {
        q[j] = (char)('a' + k % 26);
        k /= 26;
    }
    q[letters] = '\0';
}

static int write_tokenizer(const char *path, uint32_t vocab)
{
    FILE *f = fopen(path, "wb");
    if (!f)
        return -1;
    int32_t max_len = 8;
    int bad = fwrite(&max_len, 4, 1, f) != 1;
    for (uint32_t i = 0; i < vocab && !bad; i++) {
        char p[16];
        synthetic_piece(i, p, sizeof p);
        float score = i < 260 ? TOKENIZER_NO_MERGE : -(float)i;
        int32_t len = (int32_t)strlen(p);
        bad = fwrite(&score, 4, 1, f) != 1 || fwrite(&len, 4, 1, f) != 1 || fwrite(p, 1, (size_t)len, f) != (size_t)len;
    }
    return fclose(f) != 0 || bad ? -1 : 0;
}

/* The temporary folder "<out_dir>.tmp.<pid>" a model is written into,
 * registered with common/cleanup.h so that a Ctrl-C removes it. */
struct syn_output {
    char tmp[4200];
    int cleanup;
};

/* Checks the shape and the destination, and creates the temporary folder. */
static int begin_output(const struct model_shape *s, const char *out_dir, struct syn_output *o, char *err,
                        size_t errlen)
{
    o->cleanup = -1;
    if (s->vocab_size < 260 + 52)
        return err_set(err, errlen, "shape %s: vocabulary of %u is too small for a byte-fallback tokenizer",
                       s->name, s->vocab_size);
    struct stat st;
    if (stat(out_dir, &st) == 0)
        return err_set(err, errlen, "%s: already exists; remove it or choose another folder", out_dir);
    snprintf(o->tmp, sizeof o->tmp, "%s.tmp.%d", out_dir, (int)getpid());
    o->cleanup = cleanup_add_dir(o->tmp); /* before it exists: no window without it */
    if (mkdir(o->tmp, 0755) != 0) {
        int e = errno;
        cleanup_forget(o->cleanup);
        return err_set(err, errlen, "%s: cannot create: %s", out_dir, strerror(e));
    }
    return 0;
}

/* Renames the temporary into place when ok; otherwise (err says why)
 * removes it and its files. Messages name out_dir, not the temporary. */
static int finish_output(int ok, struct syn_output *o, const char *out_dir, const char *const *files, int n,
                         char *err, size_t errlen)
{
    if (ok && rename(o->tmp, out_dir) == 0) {
        cleanup_forget(o->cleanup);
        return 0;
    }
    if (ok)
        err_set(err, errlen, "%s: cannot write the model: %s", out_dir, strerror(errno));
    err_replace(err, errlen, o->tmp, out_dir);
    char path[4300];
    for (int i = 0; i < n; i++) {
        snprintf(path, sizeof path, "%s/%s", o->tmp, files[i]);
        unlink(path);
    }
    rmdir(o->tmp);
    cleanup_forget(o->cleanup);
    return -1;
}

/* The checkpoint's header has sizes only: a Llama with SiLU, plain RoPE
 * and d_model / n_heads dims a head is all it can say. 0, or -1 why. */
static int llama2c_can_say(const struct model_shape *s, char *err, size_t errlen)
{
    if (strcmp(s->arch, "llama") != 0 || s->ffn_kind != FFN_GLU || s->biases || s->parallel_block ||
        s->rope_fraction != 1.0 || strcmp(s->ffn_activation, "swiglu") != 0)
        return err_set(err, errlen,
                       "shape %s (%s, %s) cannot be written as a llama2.c checkpoint (SwiGLU Llama shapes only)",
                       s->name, s->arch, s->ffn_activation);
    if (s->rope_scaling[0] || s->head_dim || s->qkv_bias || s->qk_norm || s->sliding_window)
        return err_set(err, errlen,
                       "shape %s cannot be written as a llama2.c checkpoint: its header has no rope_scaling, head_dim, "
                       "q/k/v biases, q/k norms or sliding window",
                       s->name);
    return 0;
}

int synthetic_llama2c(const struct model_shape *s, uint64_t seed, const char *out_dir,
                      const struct progress_report *progress, char *err, size_t errlen)
{
    if (llama2c_can_say(s, err, errlen))
        return -1;
    struct syn_output out;
    char path[4300];
    if (begin_output(s, out_dir, &out, err, errlen))
        return -1;
    uint64_t d = s->d_model, L = s->n_layers, ff = s->d_ff, V = s->vocab_size;
    uint64_t hs = d / s->n_heads, kv = s->n_kv_heads * hs;
    struct {
        uint64_t n;
        float scale, base;
    } parts[] = {
        {V * d, 1.0f, 0},                          /* token embedding */
        {L * d, 0.0f, 1},                          /* rms_att_weight */
        {L * d * d, 1.0f / sqrtf((float)d), 0},    /* wq */
        {L * kv * d, 1.0f / sqrtf((float)d), 0},   /* wk */
        {L * kv * d, 1.0f / sqrtf((float)d), 0},   /* wv */
        {L * d * d, 1.0f / sqrtf((float)d), 0},    /* wo: its output is added to x */
        {L * d, 0.0f, 1},                          /* rms_ffn_weight */
        {L * ff * d, 1.0f / sqrtf((float)d), 0},   /* w1 (gate) */
        {L * d * ff, 1.0f / sqrtf((float)ff), 0},  /* w2 (down) */
        {L * ff * d, 1.0f / sqrtf((float)d), 0},   /* w3 (up) */
        {d, 0.0f, 1},                              /* rms_final_weight */
        {(uint64_t)s->max_positions * hs, 0.0f, 0},/* legacy RoPE tables, unused */
        {V * d, 1.0f / sqrtf((float)d), 0},        /* classifier */
    };
    size_t nparts = sizeof parts / sizeof parts[0] - (s->tied_embeddings ? 1 : 0);
    uint64_t total = 0, done = 0;
    for (size_t i = 0; i < nparts; i++)
        total += parts[i].n;
    snprintf(path, sizeof path, "%s/model.bin", out.tmp);
    FILE *f = fopen(path, "wb");
    float *buf = malloc(CHUNK * sizeof *buf);
    int32_t hdr[7] = {(int32_t)d, (int32_t)ff, (int32_t)L, (int32_t)s->n_heads, (int32_t)s->n_kv_heads,
                      s->tied_embeddings ? (int32_t)V : -(int32_t)V, (int32_t)s->max_positions};
    int bad = !f || !buf || fwrite(hdr, 4, 7, f) != 7;
    struct rng r;
    rng_seed(&r, seed);
    progress_report(progress, "model make", 0, total, NULL);
    for (size_t i = 0; i < nparts && !bad; i++)
        bad = write_uniform(f, &r, parts[i].n, parts[i].scale, parts[i].base, buf, progress, &done, total) != 0;
    if (f && fclose(f) != 0)
        bad = 1;
    free(buf);
    if (!bad) {
        snprintf(path, sizeof path, "%s/tokenizer.bin", out.tmp);
        bad = write_tokenizer(path, s->vocab_size) != 0;
    }
    if (bad)
        err_set(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    static const char *const files[] = {"model.bin", "tokenizer.bin"};
    return finish_output(!bad, &out, out_dir, files, 2, err, errlen);
}

/* ---- Hugging Face folders ---- */

/* Where the tensors' data goes, and what filling them needs. */
struct syn_writer {
    FILE *f;
    enum fb_dtype dt;           /* the matrices' dtype; vectors are f32 */
    const struct spectrum *up;  /* for FILL_SPECTRAL */
    struct rng r;               /* the one stream every tensor draws from */
    float *buf;                 /* CHUNK floats */
    void *conv;                 /* CHUNK weights in the widest type (conv_bytes) */
    double *row_norm;           /* the last FILL_SPECTRAL matrix's, rows of them */
    uint64_t rows;
    const struct progress_report *progress;
    uint64_t done, total;
};

static uint64_t tensor_elems(const struct syn_tensor *t)
{
    return t->dims[0] * (t->ndim == 2 ? t->dims[1] : 1);
}

/* The bytes of CHUNK weights in the table's widest type: w->conv's size. */
static size_t conv_bytes(void)
{
    uint64_t most = 0;
    for (int t = 0; t < DTYPE_COUNT; t++) {
        uint64_t b = wtype_row_bytes((enum fb_dtype)t, CHUNK);
        most = b > most ? b : most;
    }
    return (size_t)most;
}

/* k floats of x (at most CHUNK) in dtype ti. */
static int put_floats(struct syn_writer *w, const float *x, size_t k, enum fb_dtype ti)
{
    size_t bytes = wtype_row_bytes(ti, k);
    dtype_from_f32(w->conv, ti, x, k);
    int bad = fwrite(w->conv, 1, bytes, w->f) != bytes;
    w->done += k;
    progress_report(w->progress, "model make", w->done, w->total, NULL);
    return bad ? -1 : 0;
}

/* Draws n numbers and drops them: a shaped tensor keeps the stream where
 * the uniform fill would leave it. */
static void rng_skip(struct rng *r, uint64_t n)
{
    while (n-- > 0)
        rng_next(r);
}

static int tensor_uniform(struct syn_writer *w, const struct syn_tensor *t, enum fb_dtype ti)
{
    for (uint64_t left = tensor_elems(t); left > 0;) {
        size_t k = left < CHUNK ? (size_t)left : CHUNK;
        fill_uniform(w->buf, k, t->scale, t->base, &w->r);
        if (put_floats(w, w->buf, k, ti))
            return -1;
        left -= k;
    }
    return 0;
}

/* The matrix with the up spectrum, its factors seeded by the stream's
 * next number, at the Frobenius norm the uniform fill has on average
 * (rows x cols entries of variance scale^2/3); it keeps its row norms. */
static int tensor_spectral(struct syn_writer *w, const struct syn_tensor *t, enum fb_dtype ti, char *err,
                           size_t errlen)
{
    uint64_t rows = t->dims[0], cols = t->dims[1], n = rows * cols;
    uint64_t seed = rng_next(&w->r);
    rng_skip(&w->r, n - 1);
    double frob2 = (double)n * t->scale * t->scale / 3.0;
    float *m = malloc(n * sizeof *m);
    double *norm = realloc(w->row_norm, rows * sizeof *norm);
    if (norm)
        w->row_norm = norm;
    if (!m || !norm) {
        free(m);
        return err_set(err, errlen, "%s: out of memory for %llu x %llu", t->name, (unsigned long long)rows,
                       (unsigned long long)cols);
    }
    int rc = spectrum_matrix(w->up, rows, cols, frob2, seed, m, err, errlen);
    for (uint64_t i = 0; i < rows && !rc; i++) {
        double q = 0;
        for (uint64_t j = 0; j < cols; j++)
            q += (double)m[i * cols + j] * m[i * cols + j];
        norm[i] = sqrt(q);
    }
    w->rows = rows;
    for (uint64_t off = 0; off < n && !rc; off += CHUNK) {
        size_t k = n - off < CHUNK ? (size_t)(n - off) : CHUNK;
        if (put_floats(w, m + off, k, ti))
            rc = err_set(err, errlen, "cannot write %s: %s", t->name, strerror(errno));
    }
    free(m);
    return rc;
}

/* base times the row norms of the matrix before (an up projection's bias). */
static int tensor_row_bias(struct syn_writer *w, const struct syn_tensor *t, char *err, size_t errlen)
{
    uint64_t n = tensor_elems(t);
    if (n != w->rows || n > CHUNK)
        return err_set(err, errlen, "%s: %llu values for a matrix of %llu rows", t->name, (unsigned long long)n,
                       (unsigned long long)w->rows);
    rng_skip(&w->r, n);
    for (uint64_t i = 0; i < n; i++)
        w->buf[i] = (float)(t->base * w->row_norm[i]);
    return put_floats(w, w->buf, (size_t)n, DTYPE_F32) ? err_set(err, errlen, "cannot write %s: %s", t->name,
                                                                  strerror(errno))
                                                        : 0;
}

static int write_tensor(struct syn_writer *w, const struct syn_tensor *t, char *err, size_t errlen)
{
    /* norms and biases stay f32, as checkpoints usually keep them */
    enum fb_dtype ti = t->ndim == 2 ? w->dt : DTYPE_F32;
    if (t->fill == FILL_SPECTRAL)
        return tensor_spectral(w, t, ti, err, errlen);
    if (t->fill == FILL_ROW_BIAS)
        return tensor_row_bias(w, t, err, errlen);
    return tensor_uniform(w, t, ti) ? err_set(err, errlen, "cannot write %s: %s", t->name, strerror(errno)) : 0;
}

/* The safetensors header (engine/import/safetensors.h) of the tensors, which are
 * streamed after it; *total gets the element count. */
static int write_header(FILE *f, const struct syn_tensor *t, int n, enum fb_dtype dt, uint64_t *total)
{
    struct st_tensor *st = calloc((size_t)n, sizeof *st);
    if (!st)
        return -1;
    *total = 0;
    for (int i = 0; i < n; i++) {
        /* norms and biases stay f32, as checkpoints usually keep them */
        st[i] = (struct st_tensor){t[i].name, t[i].ndim == 2 ? dt : DTYPE_F32, t[i].ndim, {t[i].dims[0], t[i].dims[1]},
                                   NULL};
        *total += tensor_elems(&t[i]);
    }
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddStringToObject(meta, "format", "pt");
    cJSON_AddStringToObject(meta, "generator", "flashbed model make");
    int rc = f ? st_write_header(f, st, n, meta) : -1;
    cJSON_Delete(meta);
    free(st);
    return rc;
}

static int write_safetensors(const char *path, const struct syn_tensor *t, int n, enum fb_dtype dt,
                             uint64_t seed, const struct spectrum *up, const struct progress_report *progress,
                             char *err, size_t errlen)
{
    uint64_t total = 0;
    struct syn_writer w = {.f = fopen(path, "wb"), .dt = dt, .up = up, .progress = progress};
    int rc = write_header(w.f, t, n, dt, &total) != 0 ? err_set(err, errlen, "%s: cannot write: %s", path, strerror(errno)) : 0;
    w.buf = malloc(CHUNK * sizeof *w.buf);
    w.conv = malloc(conv_bytes());
    if (!rc && (!w.buf || !w.conv))
        rc = err_set(err, errlen, "%s: out of memory", path);
    rng_seed(&w.r, seed);
    w.total = total;
    progress_report(progress, "model make", 0, total, NULL);
    for (int i = 0; i < n && !rc; i++)
        if ((rc = write_tensor(&w, &t[i], err, errlen)) != 0) {
            char why[512];
            snprintf(why, sizeof why, "%s", err);
            err_set(err, errlen, "%s: %s", path, why); /* the temporary's path: finish_output names out_dir */
        }
    free(w.buf);
    free(w.conv);
    free(w.row_norm);
    if (w.f && fclose(w.f) != 0 && !rc)
        rc = err_set(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    return rc;
}

static int write_config(const char *path, const struct model_shape *s, enum fb_dtype t,
                        const struct spectrum *up, char *err, size_t errlen)
{
    cJSON *c = syn_hf_config(s, wtype_traits(t)->long_name); /* "float16": config.json's torch_dtype */
    cJSON_AddStringToObject(c, "flashbed_shape", s->name);
    /* only when shaped: a flat model's config stays as it always was, and
     * no key means flat for every model, older ones included */
    if (up->kind != SPECTRUM_FLAT) {
        char text[64];
        spectrum_format(up, text, sizeof text);
        cJSON_AddStringToObject(c, "flashbed_up_spectrum", text);
    }
    int rc = atomic_write_json(NULL, path, c, err, errlen);
    cJSON_Delete(c);
    return rc;
}

/* "▁" for spaces, as SentencePiece vocabularies spell them */
static void sp_spelling(const char *p, char *out, size_t len)
{
    size_t o = 0;
    for (; *p && o + 4 < len; p++) {
        if (*p == ' ') {
            memcpy(out + o, "\xe2\x96\x81", 3);
            o += 3;
        } else
            out[o++] = *p;
    }
    out[o] = '\0';
}

static int write_tokenizer_json(const char *path, uint32_t vocab, char *err, size_t errlen)
{
    cJSON *t = cJSON_CreateObject();
    cJSON_AddStringToObject(t, "version", "1.0");
    cJSON *model = cJSON_AddObjectToObject(t, "model");
    cJSON_AddStringToObject(model, "type", "BPE");
    cJSON_AddBoolToObject(model, "byte_fallback", 1);
    cJSON *v = cJSON_AddObjectToObject(model, "vocab");
    cJSON *m = cJSON_AddArrayToObject(model, "merges");
    for (uint32_t i = 0; i < vocab; i++) {
        char p[16], sp[48], a[48], b[48], merge[100];
        synthetic_piece(i, p, sizeof p);
        sp_spelling(p, sp, sizeof sp);
        cJSON_AddNumberToObject(v, sp, i);
        size_t n = strlen(p);
        if (i >= 260 && n >= 2) {
            char prefix[16];
            snprintf(prefix, sizeof prefix, "%.*s", (int)(n - 1), p);
            sp_spelling(prefix, a, sizeof a);
            sp_spelling(p + n - 1, b, sizeof b);
            snprintf(merge, sizeof merge, "%s %s", a, b);
            cJSON_AddItemToArray(m, cJSON_CreateString(merge));
        }
    }
    int rc = atomic_write_json(NULL, path, t, err, errlen);
    cJSON_Delete(t);
    return rc;
}

int synthetic_relu_density_check(const struct model_shape *s, double relu_density, char *err, size_t errlen)
{
    if (relu_density < 0)
        return 0;
    if (relu_density <= 0 || relu_density >= 1)
        return err_set(err, errlen, "needs 0 < D < 1");
    /* the density is set through the up projection's biases, and a neuron
     * fires when its pre-activation is above 0: the ReLU family at threshold 0 */
    if (s->ffn_kind != FFN_RELU || (strcmp(s->ffn_activation, "relu") && strcmp(s->ffn_activation, "squared_relu")))
        return err_set(err, errlen, "shape %s (%s, %s FFN) is not a ReLU or squared-ReLU FFN; needs one and 0 < D < 1",
                       s->name, s->arch, s->ffn_activation);
    if (!s->biases)
        return err_set(err, errlen,
                       "shape %s (%s) has no FFN biases to set (0 < D < 1 needs them): its ReLU fires for about "
                       "half the neurons",
                       s->name, s->arch);
    return 0;
}

int synthetic_hf(const struct model_shape *s, enum fb_dtype t, uint64_t seed, double relu_density,
                 const struct spectrum *up_spectrum, const char *out_dir, const struct progress_report *progress,
                 char *err, size_t errlen)
{
    static const struct spectrum flat = {.kind = SPECTRUM_FLAT};
    const struct spectrum *up = up_spectrum ? up_spectrum : &flat;
    char why[256];
    if (syn_hf_check(s, why, sizeof why) != 0)
        return err_set(err, errlen, "shape %s (%s) cannot be written as a Hugging Face %s folder: %s", s->name,
                       s->arch, s->arch, why);
    if (synthetic_relu_density_check(s, relu_density, why, sizeof why) != 0)
        return err_set(err, errlen, "ReLU density %g: %s", relu_density, why);
    if (spectrum_check_shape(up, s->d_ff, s->d_model, why, sizeof why) != 0)
        return err_set(err, errlen, "up-projection spectrum: %s", why);
    struct syn_output out;
    char path[4300];
    if (begin_output(s, out_dir, &out, err, errlen))
        return -1;
    int cap = syn_hf_capacity(s);
    struct syn_tensor *ts = calloc((size_t)cap, sizeof *ts);
    int rc = ts ? 0 : err_set(err, errlen, "out of memory for %d tensors", cap);
    snprintf(path, sizeof path, "%s/model.safetensors", out.tmp);
    if (!rc)
        rc = write_safetensors(path, ts, syn_hf_tensors(s, relu_density, up->kind != SPECTRUM_FLAT, ts), t, seed, up,
                               progress, err, errlen);
    free(ts);
    snprintf(path, sizeof path, "%s/config.json", out.tmp);
    if (!rc)
        rc = write_config(path, s, t, up, err, errlen);
    snprintf(path, sizeof path, "%s/tokenizer.json", out.tmp);
    if (!rc)
        rc = write_tokenizer_json(path, s->vocab_size, err, errlen);
    static const char *const files[] = {"model.safetensors", "config.json", "tokenizer.json"};
    return finish_output(rc == 0, &out, out_dir, files, 3, err, errlen);
}
