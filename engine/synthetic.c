#include "engine/synthetic.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "common/log.h"
#include "common/progress.h"
#include "common/rng.h"

#define CHUNK (1u << 20)

/* n floats uniform in [base - scale, base + scale], streamed in chunks. */
static int write_uniform(FILE *f, struct rng *r, uint64_t n, float scale, float base, float *buf,
                         struct progress *p, uint64_t *done)
{
    while (n > 0) {
        size_t k = n < CHUNK ? (size_t)n : CHUNK;
        for (size_t i = 0; i < k; i++)
            buf[i] = base + scale * (float)((int64_t)(rng_next(r) >> 40) - (1 << 23)) * (1.0f / (1 << 23));
        if (fwrite(buf, 4, k, f) != k)
            return -1;
        n -= k;
        *done += k;
        progress_update(p, *done, NULL);
    }
    return 0;
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
        if (i < 3)
            snprintf(p, sizeof p, "%s", i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
        else if (i < 259)
            snprintf(p, sizeof p, "<0x%02X>", i - 3);
        else if (i == 259)
            snprintf(p, sizeof p, " "); /* the dummy prefix */
        else { /* " a".." z", then "aa", "ab", ...: distinct letter pieces */
            uint32_t k = i - 260, n = 0;
            char tmp[8];
            if (k < 26)
                snprintf(p, sizeof p, " %c", 'a' + k);
            else {
                k -= 26;
                do {
                    tmp[n++] = (char)('a' + k % 26);
                    k /= 26;
                } while (k && n < 6);
                tmp[n++] = 'a';
                for (uint32_t j = 0; j < n; j++)
                    p[j] = tmp[n - 1 - j];
                p[n] = '\0';
            }
        }
        float score = -(float)i;
        int32_t len = (int32_t)strlen(p);
        bad = fwrite(&score, 4, 1, f) != 1 || fwrite(&len, 4, 1, f) != 1 || fwrite(p, 1, (size_t)len, f) != (size_t)len;
    }
    return fclose(f) != 0 || bad ? -1 : 0;
}

int synthetic_llama2c(const struct model_shape *s, uint64_t seed, const char *out_dir)
{
    if (strcmp(s->arch, "llama") != 0 || s->ffn_kind != FFN_GLU || s->biases || s->parallel_block ||
        s->rope_fraction != 1.0) {
        fb_error("model make: shape %s (%s) cannot be written as a llama2.c checkpoint (Llama shapes only)",
                 s->name, s->arch);
        return -1;
    }
    if (s->vocab_size < 260 + 26) {
        fb_error("model make: shape %s: vocabulary of %u is too small for a byte-fallback tokenizer",
                 s->name, s->vocab_size);
        return -1;
    }
    struct stat st;
    if (stat(out_dir, &st) == 0) {
        fb_error("%s: already exists; remove it or choose another --out", out_dir);
        return -1;
    }
    char tmp[4200], path[4300];
    snprintf(tmp, sizeof tmp, "%s.tmp.%d", out_dir, (int)getpid());
    if (mkdir(tmp, 0755) != 0) {
        fb_error("%s: cannot create: %s", tmp, strerror(errno));
        return -1;
    }
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
    snprintf(path, sizeof path, "%s/model.bin", tmp);
    FILE *f = fopen(path, "wb");
    float *buf = malloc(CHUNK * sizeof *buf);
    int32_t hdr[7] = {(int32_t)d, (int32_t)ff, (int32_t)L, (int32_t)s->n_heads, (int32_t)s->n_kv_heads,
                      s->tied_embeddings ? (int32_t)V : -(int32_t)V, (int32_t)s->max_positions};
    int bad = !f || !buf || fwrite(hdr, 4, 7, f) != 7;
    struct rng r;
    rng_seed(&r, seed);
    struct progress p;
    progress_begin(&p, "model make", total);
    for (size_t i = 0; i < nparts && !bad; i++)
        bad = write_uniform(f, &r, parts[i].n, parts[i].scale, parts[i].base, buf, &p, &done) != 0;
    progress_end(&p);
    if (f && fclose(f) != 0)
        bad = 1;
    free(buf);
    snprintf(path, sizeof path, "%s/tokenizer.bin", tmp);
    if (bad || write_tokenizer(path, s->vocab_size) != 0 || rename(tmp, out_dir) != 0) {
        fb_error("%s: cannot write the model: %s", out_dir, strerror(errno));
        snprintf(path, sizeof path, "%s/model.bin", tmp);
        unlink(path);
        snprintf(path, sizeof path, "%s/tokenizer.bin", tmp);
        unlink(path);
        rmdir(tmp);
        return -1;
    }
    return 0;
}
