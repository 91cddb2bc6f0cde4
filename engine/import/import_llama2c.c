/* llama2.c checkpoints: header {dim, hidden_dim, n_layers, n_heads,
 * n_kv_heads, vocab_size (negative: separate classifier), seq_len}, then
 * f32 tensors in a fixed order (see ../shared/data/MANIFEST.md). */
#include "engine/import/import.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/errbuf.h"
#include "common/progress.h"
#include "engine/model/model.h"
#include "engine/model/model_format.h"
#include "engine/tokenizer/tokenizer.h"

struct l2c_header {
    int32_t dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len;
};

/* The tensors in file order, with their element counts. */
enum { T_EMB, T_RMS_ATT, T_WQ, T_WK, T_WV, T_WO, T_RMS_FFN, T_W1, T_W2, T_W3, T_RMS_FINAL, T_FREQ, T_CLS, T_COUNT };
static const char *const l2c_names[T_COUNT] = {
    "token_embedding", "rms_att_weight", "wq", "wk", "wv", "wo", "rms_ffn_weight",
    "w1", "w2", "w3", "rms_final_weight", "freq_cis", "classifier"};

static void shape_from_header(const struct l2c_header *h, const char *name, struct model_shape *s)
{
    memset(s, 0, sizeof *s);
    snprintf(s->name, sizeof s->name, "%s", name);
    snprintf(s->arch, sizeof s->arch, "llama");
    s->d_model = (uint32_t)h->dim;
    s->d_ff = (uint32_t)h->hidden_dim;
    s->n_layers = (uint32_t)h->n_layers;
    s->n_heads = (uint32_t)h->n_heads;
    s->n_kv_heads = (uint32_t)h->n_kv_heads;
    s->vocab_size = (uint32_t)abs(h->vocab_size);
    s->max_positions = (uint32_t)h->seq_len;
    s->ffn_kind = FFN_GLU;
    snprintf(s->ffn_activation, sizeof s->ffn_activation, "swiglu");
    snprintf(s->norm, sizeof s->norm, "rmsnorm");
    s->norm_eps = 1e-5;
    snprintf(s->position, sizeof s->position, "rope");
    s->rope_fraction = 1.0;
    s->rope_theta = 10000.0;
    s->tied_embeddings = h->vocab_size > 0;
}

static void model_name_of(const char *path, char *buf, size_t len)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(buf, len, "%s", base);
    char *dot = strrchr(buf, '.');
    if (dot && dot != buf)
        *dot = '\0';
}

/* Layer l's attention and norm tensors, then its FFN, from the
 * checkpoint's per-kind arrays t (all layers of a kind back to back). */
static int write_layer(struct model_writer *w, const struct model_shape *s, const float *const *t, uint32_t l)
{
    uint64_t d = s->d_model, hs = d / s->n_heads, q_dim = s->n_heads * hs, kv_dim = s->n_kv_heads * hs;
    uint64_t ff = s->d_ff;
    char n[96];
    struct {
        const char *what;
        const float *data;
        int ndim;
        uint64_t d0, d1;
    } parts[] = {
        {"attn_norm.weight", t[T_RMS_ATT] + l * d, 1, d, 0},
        {"attn.wq", t[T_WQ] + l * q_dim * d, 2, q_dim, d},
        {"attn.wk", t[T_WK] + l * kv_dim * d, 2, kv_dim, d},
        {"attn.wv", t[T_WV] + l * kv_dim * d, 2, kv_dim, d},
        {"attn.wo", t[T_WO] + l * d * q_dim, 2, d, q_dim},
        {"ffn_norm.weight", t[T_RMS_FFN] + l * d, 1, d, 0},
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        layer_tensor_name(n, sizeof n, (int)l, parts[i].what);
        uint64_t dims[2] = {parts[i].d0, parts[i].d1};
        if (model_writer_tensor(w, n, parts[i].data, parts[i].ndim, dims))
            return -1;
    }
    /* w3 is the up projection, w1 the gate, w2 the down projection */
    return model_writer_ffn_layer(w, (int)l, t[T_W3] + l * ff * d, t[T_W1] + l * ff * d, t[T_W2] + l * d * ff);
}

/* model.json's tokenizer and source keys: llama2.c's token ids, and the
 * files converted with their hashes. */
static cJSON *model_meta(const char *ckpt, const char *tokenizer)
{
    cJSON *meta = cJSON_CreateObject();
    cJSON *tok = cJSON_AddObjectToObject(meta, "tokenizer");
    cJSON_AddStringToObject(tok, "kind", "sentencepiece-bpe");
    cJSON_AddStringToObject(tok, "file", "tokenizer.bin");
    cJSON_AddNumberToObject(tok, "bos_id", 1);
    cJSON_AddNumberToObject(tok, "eos_id", 2);
    /* llama2.c models are trained with BOS between stories: it ends one too */
    cJSON_AddItemToObject(tok, "stop_ids", cJSON_CreateIntArray((const int[]){2, 1}, 2));
    cJSON *src = cJSON_AddObjectToObject(meta, "source");
    char hex[17];
    cJSON_AddStringToObject(src, "format", "llama2c");
    cJSON_AddStringToObject(src, "checkpoint", ckpt);
    if (file_fnv1a64(ckpt, hex) == 0)
        cJSON_AddStringToObject(src, "checkpoint_fnv1a64", hex);
    cJSON_AddStringToObject(src, "tokenizer", tokenizer);
    if (file_fnv1a64(tokenizer, hex) == 0)
        cJSON_AddStringToObject(src, "tokenizer_fnv1a64", hex);
    return meta;
}

static int write_model(const char *ckpt, const char *tokenizer, const char *out_dir, enum fb_dtype dtype,
                       const struct l2c_header *h, const float *const *t, const struct progress_report *progress,
                       char *err, size_t errlen)
{
    struct model_shape s;
    char name[64];
    model_name_of(ckpt, name, sizeof name);
    shape_from_header(h, name, &s);
    uint64_t d = s.d_model;
    struct model_writer w;
    if (model_writer_begin(&w, out_dir, &s, dtype, err, errlen))
        return -1;
    progress_report(progress, "convert", 0, s.n_layers, NULL);
    if (model_writer_tensor(&w, "tok_embedding", t[T_EMB], 2, (uint64_t[]){s.vocab_size, d}))
        goto fail;
    for (uint32_t l = 0; l < s.n_layers; l++) {
        if (write_layer(&w, &s, t, l) != 0)
            goto fail;
        progress_report(progress, "convert", l + 1, s.n_layers, NULL);
    }
    if (model_writer_tensor(&w, "final_norm.weight", t[T_RMS_FINAL], 1, (uint64_t[]){d}))
        goto fail;
    if (!s.tied_embeddings && model_writer_tensor(&w, "output", t[T_CLS], 2, (uint64_t[]){s.vocab_size, d}))
        goto fail;
    if (model_writer_copy_file(&w, tokenizer, "tokenizer.bin"))
        goto fail;
    return model_writer_finish(&w, model_meta(ckpt, tokenizer));
fail:
    model_writer_abort(&w);
    return -1;
}

/* The header at the start of the checkpoint, checked for sizes a real
 * model can have (a wrong file is refused before anything is mapped). */
static int read_header(int fd, const char *ckpt, struct l2c_header *h, char *err, size_t errlen)
{
    if (pread(fd, h, sizeof *h, 0) != (ssize_t)sizeof *h)
        return err_set(err, errlen, "%s: too short for a llama2.c header (28 bytes)", ckpt);
    if (h->dim <= 0 || h->hidden_dim <= 0 || h->n_layers <= 0 || h->n_heads <= 0 || h->n_kv_heads <= 0 ||
        h->vocab_size == 0 || h->seq_len <= 0 || h->dim % h->n_heads || h->n_heads % h->n_kv_heads ||
        (h->dim / h->n_heads) % 2 || h->dim > (1 << 16) || h->n_layers > 4096 || h->vocab_size > (1 << 22) ||
        h->vocab_size < -(1 << 22) || h->hidden_dim > (1 << 20) || h->seq_len > (1 << 22))
        return err_set(err, errlen,
                       "%s: not a llama2.c checkpoint (header dim %d hidden %d layers %d heads %d kv_heads %d "
                       "vocab %d seq_len %d)",
                       ckpt, h->dim, h->hidden_dim, h->n_layers, h->n_heads, h->n_kv_heads, h->vocab_size,
                       h->seq_len);
    return 0;
}

/* Where each tensor starts and its element count; the file must end
 * exactly after the last. read_header's bounds keep every product and the
 * running offset below 2^52. */
static int tensor_offsets(const struct l2c_header *h, uint64_t file_size, const char *ckpt,
                          uint64_t offsets[T_COUNT], uint64_t counts[T_COUNT], char *err, size_t errlen)
{
    uint64_t d = (uint64_t)h->dim, L = (uint64_t)h->n_layers, ff = (uint64_t)h->hidden_dim;
    uint64_t hs = d / (uint64_t)h->n_heads, kv = (uint64_t)h->n_kv_heads * hs, V = (uint64_t)abs(h->vocab_size);
    uint64_t count[T_COUNT] = {V * d, L * d, L * d * d, L * kv * d, L * kv * d, L * d * d, L * d,
                               L * ff * d, L * d * ff, L * ff * d, d, (uint64_t)h->seq_len * hs,
                               h->vocab_size < 0 ? V * d : 0};
    uint64_t off = sizeof *h;
    for (int i = 0; i < T_COUNT; i++) {
        offsets[i] = off;
        counts[i] = count[i];
        off += count[i] * 4;
        if (off > file_size)
            return err_set(err, errlen, "%s: truncated: tensor '%s' needs bytes %llu..%llu, the file has %llu",
                           ckpt, l2c_names[i], (unsigned long long)offsets[i], (unsigned long long)off,
                           (unsigned long long)file_size);
    }
    if (off != file_size)
        return err_set(err, errlen,
                       "%s: %lld bytes after the last tensor (wrong header or not a llama2.c checkpoint)", ckpt,
                       (long long)file_size - (long long)off);
    return 0;
}

/* A NaN or infinite weight would reach every logit: refused, naming the
 * tensor (and layer), before anything is written. One pass over the
 * mapping, as cheap as the copy that follows. */
static int check_finite(const float *const *t, const uint64_t counts[T_COUNT], const struct l2c_header *h,
                        const char *ckpt, char *err, size_t errlen)
{
    for (int i = 0; i < T_COUNT; i++) {
        if (i == T_FREQ)
            continue; /* llama2.c's legacy RoPE table: never read */
        for (uint64_t k = 0; k < counts[i]; k++) {
            float v;
            memcpy(&v, t[i] + k, sizeof v);
            if (isfinite(v))
                continue;
            uint64_t per_layer = counts[i] / (uint64_t)h->n_layers;
            bool layered = i != T_EMB && i != T_RMS_FINAL && i != T_CLS;
            if (layered)
                return err_set(err, errlen, "%s: tensor '%s' of layer %llu holds a non-finite value (%g)", ckpt,
                               l2c_names[i], (unsigned long long)(k / per_layer), (double)v);
            return err_set(err, errlen, "%s: tensor '%s' holds a non-finite value (%g) at element %llu", ckpt,
                           l2c_names[i], (double)v, (unsigned long long)k);
        }
    }
    return 0;
}

/* The tokenizer must load with the checkpoint's vocabulary before any
 * output is written. */
static int check_tokenizer(const char *ckpt, const char *tokenizer, int vocab, char *err, size_t errlen)
{
    if (!tokenizer)
        return err_set(err, errlen, "%s: a llama2.c checkpoint needs its tokenizer (tokenizer.bin)", ckpt);
    struct tokenizer tok;
    if (tokenizer_load_llama2c(&tok, tokenizer, vocab, err, errlen) != 0)
        return -1;
    tokenizer_free(&tok);
    return 0;
}

int import_llama2c(const char *ckpt, const char *tokenizer, const char *out_dir, enum fb_dtype dtype,
                   const struct progress_report *progress, char *err, size_t errlen)
{
    int fd = open(ckpt, O_RDONLY);
    if (fd < 0)
        return err_set(err, errlen, "%s: cannot open: %s", ckpt, strerror(errno));
    struct stat st;
    struct l2c_header h;
    uint64_t offsets[T_COUNT], counts[T_COUNT];
    void *map = MAP_FAILED;
    if (fstat(fd, &st) != 0)
        err_set(err, errlen, "%s: cannot stat: %s", ckpt, strerror(errno));
    else if (read_header(fd, ckpt, &h, err, errlen) == 0 &&
             tensor_offsets(&h, (uint64_t)st.st_size, ckpt, offsets, counts, err, errlen) == 0 &&
             check_tokenizer(ckpt, tokenizer, abs(h.vocab_size), err, errlen) == 0 &&
             (map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0)) == MAP_FAILED)
        err_set(err, errlen, "%s: cannot map: %s", ckpt, strerror(errno));
    close(fd); /* the mapping, if any, stays valid */
    if (map == MAP_FAILED)
        return -1;
    const float *t[T_COUNT];
    for (int i = 0; i < T_COUNT; i++)
        t[i] = (const float *)((const char *)map + offsets[i]);
    int rc = check_finite(t, counts, &h, ckpt, err, errlen);
    if (rc == 0)
        rc = write_model(ckpt, tokenizer, out_dir, dtype, &h, t, progress, err, errlen);
    munmap(map, (size_t)st.st_size);
    return rc;
}
