/* Fuzzes model.json as the engine opens a model folder
 * (engine/model/model_load.c): format, shape (common/model_shape.c), dtype, the
 * "dram" and "ffn" layout, every DRAM tensor's dtype, shape, offset and
 * size, the tokenizer entry. The harness makes the rest of the folder
 * agree with what the input claims where it cheaply can: dram.bin of the
 * "dram" byte count (zeros, up to 8 MiB), ffn.bin of the "ffn" byte count
 * (sparse; read into memory when at most 8 MiB, else left on flash, as
 * `run` opens it), a tokenizer.bin of the
 * shape's vocabulary. Every tensor the open accepted is then read from
 * its first to its last byte, and, with ffn.bin in memory, two tokens run
 * through the dense engine. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "engine/forward/engine.h"
#include "engine/model/dtype.h"
#include "engine/model/model.h"
#include "fuzz_util.h"

enum { MAX_DRAM = 8 << 20, MAX_VOCAB = 1 << 16 };

static double number_at(const cJSON *o, const char *section, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(section ? cJSON_GetObjectItemCaseSensitive(o, section) : o,
                                                      key);
    return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

static void sized_file(const char *name, double bytes, double limit)
{
    const char *path = fuzz_path(name);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0) {
        perror(path);
        abort();
    }
    /* sparse; a size the file system refuses leaves it empty, which the
     * loader must refuse too */
    if (bytes > 0 && bytes <= limit && ftruncate(fd, (off_t)bytes) != 0 && ftruncate(fd, 0) != 0) {
        perror(path);
        abort();
    }
    close(fd);
}

/* Sets the folder beside model.json up as the input describes it; returns
 * the open flags: ffn.bin is read into memory, as generate does, when it
 * is small enough, else left on flash, as run does. */
static unsigned make_folder(const uint8_t *data, size_t size)
{
    fuzz_mkdir("m");
    fuzz_write("m/model.json", data, size);
    cJSON *o = cJSON_ParseWithLength((const char *)data, size);
    sized_file("m/dram.bin", number_at(o, "dram", "bytes"), MAX_DRAM);
    double ffn_bytes = number_at(o, "ffn", "bytes");
    sized_file("m/ffn.bin", ffn_bytes, 1e12);
    double vocab = number_at(o, NULL, "vocab_size");
    const cJSON *tfile = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(o, "tokenizer"), "file");
    char name[300];
    snprintf(name, sizeof name, "m/%.200s",
             cJSON_IsString(tfile) && !strchr(tfile->valuestring, '/') ? tfile->valuestring : "tokenizer.bin");
    fuzz_write_tokenizer_bin(name, vocab >= 1 && vocab <= MAX_VOCAB ? (int)vocab : 1);
    cJSON_Delete(o);
    return ffn_bytes >= 0 && ffn_bytes <= MAX_DRAM ? 0 : MODEL_FFN_ON_FLASH;
}

static void touch(const void *p, uint64_t bytes)
{
    if (!p || !bytes)
        return;
    const volatile char *c = p;
    (void)c[0];
    (void)c[bytes - 1];
}

/* Every tensor's extent, as the loader promised it. */
static void touch_tensors(const struct model *m)
{
    const struct model_shape *s = &m->shape;
    uint64_t d = s->d_model, es = wtype_row_bytes(m->dtype, 1);
    touch(m->tok_embedding, (uint64_t)s->vocab_size * d * es);
    touch(m->pos_embedding, ((uint64_t)s->max_positions + s->position_offset) * d * es);
    touch(m->final_norm, d * 4);
    touch(m->final_norm_bias, d * 4);
    touch(m->output, (uint64_t)s->vocab_size * d * es);
    touch(m->output_bias, (uint64_t)s->vocab_size * 4);
    for (uint32_t l = 0; l < s->n_layers; l++) {
        const struct layer_weights *L = &m->layers[l];
        touch(L->attn_norm, d * 4);
        touch(L->wq, (uint64_t)m->q_dim * d * es);
        touch(L->wk, (uint64_t)m->kv_dim * d * es);
        touch(L->wv, (uint64_t)m->kv_dim * d * es);
        touch(L->wo, d * m->q_dim * es);
        touch(L->ffn_norm, d * 4);
        touch(L->attn_norm_bias, d * 4);
        touch(L->ffn_norm_bias, d * 4);
        touch(L->q_norm, (uint64_t)m->head_dim * 4);
        touch(L->q_norm_bias, (uint64_t)m->head_dim * 4);
        touch(L->k_norm, (uint64_t)m->head_dim * 4);
        touch(L->k_norm_bias, (uint64_t)m->head_dim * 4);
        touch(L->bq, (uint64_t)m->q_dim * 4);
        touch(L->bk, (uint64_t)m->kv_dim * 4);
        touch(L->bv, (uint64_t)m->kv_dim * 4);
        touch(L->bo, d * 4);
        touch(L->ffn_up_bias, (uint64_t)s->d_ff * 4);
        touch(L->ffn_down_bias, d * 4);
        touch(L->ffn_bundles, (uint64_t)s->d_ff * m->bundle_stride);
    }
}

/* Two tokens through the dense engine, as generate runs them: what a
 * model that opens must survive (RoPE over the heads, the position
 * table, every norm and bias at its size). */
static void run_two_tokens(const struct model *m)
{
    const struct fb_settings set = fb_settings_defaults();
    struct engine e;
    char err[512];
    int seq = m->shape.max_positions < 2 ? (int)m->shape.max_positions : 2;
    if (engine_init(&e, &set, m, &backend_cpu, &ffn_dense, 1, seq, err, sizeof err) != 0) {
        fuzz_note("engine_init", -1, err);
        return;
    }
    for (int pos = 0; pos < seq; pos++)
        engine_forward(&e, m->bos_id, pos);
    engine_free(&e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    unsigned flags = make_folder(data, size);
    struct model m;
    char err[1024];
    int rc = model_open_flags(&m, fuzz_path("m"), flags, err, sizeof err);
    fuzz_note("model_open", rc, err);
    if (rc == 0) {
        touch_tensors(&m);
        if (!(flags & MODEL_FFN_ON_FLASH))
            run_two_tokens(&m);
        model_close(&m);
    }
    return 0;
}
