/* The forward pass against an independent, plain double-precision
 * reference written here from the original (unbundled) matrices, for two
 * architectures: OPT-style (LayerNorm, learned positions with offset 2,
 * ReLU FFN with biases, tied output) and Llama-style (RMSNorm, RoPE, GQA,
 * SwiGLU, separate output). Checks the model writer's bundle layout, the
 * loader, every backend op and the threaded paths; and f16/bf16 storage
 * against the reference run on the rounded weights. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/rng.h"
#include "engine/engine.h"
#include "engine/model_format.h"

/* Where the library says why a call failed (it prints nothing itself). */
static char why[1024];

enum { D = 32, H = 4, KVH = 2, HD = D / H, FF = 48, LAYERS = 2, V = 270, MAXPOS = 16, OFFSET = 2 };

struct ref_layer {
    float n1w[D], n1b[D], n2w[D], n2b[D];
    float wq[D * D], wk[KVH * HD * D], wv[KVH * HD * D], wo[D * D];
    float bq[D], bk[KVH * HD], bv[KVH * HD], bo[D];
    float up[FF * D], gate[FF * D], down[D * FF], bup[FF], bdown[D];
};

struct ref_model {
    bool opt;
    float emb[V * D], pos[(MAXPOS + OFFSET) * D], out[V * D], nfw[D], nfb[D];
    struct ref_layer l[LAYERS];
    double kc[LAYERS][MAXPOS][KVH * HD], vc[LAYERS][MAXPOS][KVH * HD];
};

static void fill(struct rng *r, float *v, size_t n, float scale, float base)
{
    for (size_t i = 0; i < n; i++)
        v[i] = base + scale * (float)(2 * rng_unit(r) - 1);
}

static void init_ref(struct ref_model *m, bool opt, uint64_t seed)
{
    struct rng r;
    rng_seed(&r, seed);
    memset(m, 0, sizeof *m);
    m->opt = opt;
    fill(&r, m->emb, V * D, 1.0f, 0);
    fill(&r, m->pos, (MAXPOS + OFFSET) * D, 0.5f, 0);
    fill(&r, m->out, V * D, 0.3f, 0);
    fill(&r, m->nfw, D, 0.2f, 1);
    fill(&r, m->nfb, D, 0.1f, 0);
    float s = 1.0f / sqrtf(D);
    for (int l = 0; l < LAYERS; l++) {
        struct ref_layer *L = &m->l[l];
        fill(&r, L->n1w, D, 0.2f, 1);
        fill(&r, L->n2w, D, 0.2f, 1);
        fill(&r, L->n1b, D, 0.1f, 0);
        fill(&r, L->n2b, D, 0.1f, 0);
        fill(&r, L->wq, D * D, s, 0);
        fill(&r, L->wk, KVH * HD * D, s, 0);
        fill(&r, L->wv, KVH * HD * D, s, 0);
        fill(&r, L->wo, D * D, s, 0);
        fill(&r, L->bq, D, 0.1f, 0);
        fill(&r, L->bk, KVH * HD, 0.1f, 0);
        fill(&r, L->bv, KVH * HD, 0.1f, 0);
        fill(&r, L->bo, D, 0.1f, 0);
        fill(&r, L->up, FF * D, s, 0);
        fill(&r, L->gate, FF * D, s, 0);
        fill(&r, L->down, D * FF, 1.0f / sqrtf(FF), 0);
        fill(&r, L->bup, FF, 0.2f, -0.05f);
        fill(&r, L->bdown, D, 0.1f, 0);
    }
}

/* Weights as the engine will see them after storage in dtype t. */
static void round_through(float *v, size_t n, enum fb_dtype t)
{
    if (t == DTYPE_F32)
        return;
    uint16_t *tmp = malloc(n * 2);
    dtype_from_f32(tmp, t, v, n);
    dtype_to_f32(v, tmp, t, n);
    free(tmp);
}

static void round_matrices(struct ref_model *m, enum fb_dtype t)
{
    round_through(m->emb, V * D, t);
    round_through(m->pos, (MAXPOS + OFFSET) * D, t);
    round_through(m->out, V * D, t);
    for (int l = 0; l < LAYERS; l++) {
        struct ref_layer *L = &m->l[l];
        float *mats[] = {L->wq, L->wk, L->wv, L->wo, L->up, L->gate, L->down};
        size_t ns[] = {D * D, KVH * HD * D, KVH * HD * D, D * D, FF * D, FF * D, D * FF};
        for (int i = 0; i < 7; i++)
            round_through(mats[i], ns[i], t);
    }
}

static void ref_norm(double *o, const double *x, const float *w, const float *b, bool layer)
{
    double mean = 0, ss = 0;
    if (layer) {
        for (int i = 0; i < D; i++)
            mean += x[i];
        mean /= D;
    }
    for (int i = 0; i < D; i++)
        ss += (x[i] - mean) * (x[i] - mean);
    double inv = 1.0 / sqrt(ss / D + 1e-5);
    for (int i = 0; i < D; i++)
        o[i] = w[i] * (x[i] - mean) * inv + (layer ? b[i] : 0);
}

static void ref_mv(double *o, const float *w, const double *x, int rows, int cols, const float *bias)
{
    for (int r = 0; r < rows; r++) {
        double s = bias ? bias[r] : 0;
        for (int c = 0; c < cols; c++)
            s += (double)w[r * cols + c] * x[c];
        o[r] = s;
    }
}

static void ref_rope(double *v, int heads, int pos)
{
    for (int h = 0; h < heads; h++)
        for (int i = 0; i < HD; i += 2) {
            double a = pos / pow(10000.0, (double)i / HD), c = cos(a), s = sin(a);
            double x0 = v[h * HD + i], x1 = v[h * HD + i + 1];
            v[h * HD + i] = x0 * c - x1 * s;
            v[h * HD + i + 1] = x0 * s + x1 * c;
        }
}

static void ref_forward(struct ref_model *m, int token, int pos, double *logits)
{
    bool opt = m->opt;
    double x[D], xn[D], q[D], k[KVH * HD], v[KVH * HD], att[D], o[D], h[FF];
    for (int i = 0; i < D; i++)
        x[i] = m->emb[token * D + i] + (opt ? m->pos[(pos + OFFSET) * D + i] : 0);
    for (int l = 0; l < LAYERS; l++) {
        struct ref_layer *L = &m->l[l];
        ref_norm(xn, x, L->n1w, L->n1b, opt);
        ref_mv(q, L->wq, xn, D, D, opt ? L->bq : NULL);
        ref_mv(k, L->wk, xn, KVH * HD, D, opt ? L->bk : NULL);
        ref_mv(v, L->wv, xn, KVH * HD, D, opt ? L->bv : NULL);
        if (!opt) {
            ref_rope(q, H, pos);
            ref_rope(k, KVH, pos);
        }
        memcpy(m->kc[l][pos], k, sizeof k);
        memcpy(m->vc[l][pos], v, sizeof v);
        for (int hh = 0; hh < H; hh++) {
            int kvh = hh / (H / KVH);
            double sc[MAXPOS], max = -1e300, sum = 0;
            for (int t = 0; t <= pos; t++) {
                sc[t] = 0;
                for (int i = 0; i < HD; i++)
                    sc[t] += q[hh * HD + i] * m->kc[l][t][kvh * HD + i];
                sc[t] /= sqrt(HD);
                if (sc[t] > max)
                    max = sc[t];
            }
            for (int t = 0; t <= pos; t++)
                sum += (sc[t] = exp(sc[t] - max));
            for (int i = 0; i < HD; i++) {
                att[hh * HD + i] = 0;
                for (int t = 0; t <= pos; t++)
                    att[hh * HD + i] += sc[t] / sum * m->vc[l][t][kvh * HD + i];
            }
        }
        ref_mv(o, L->wo, att, D, D, opt ? L->bo : NULL);
        for (int i = 0; i < D; i++)
            x[i] += o[i];
        ref_norm(xn, x, L->n2w, L->n2b, opt);
        for (int n = 0; n < FF; n++) {
            double z = opt ? L->bup[n] : 0, g = 0;
            for (int c = 0; c < D; c++) {
                z += (double)L->up[n * D + c] * xn[c];
                g += (double)L->gate[n * D + c] * xn[c];
            }
            h[n] = opt ? (z > 0 ? z : 0) : g / (1 + exp(-g)) * z;
        }
        ref_mv(o, L->down, h, D, FF, opt ? L->bdown : NULL);
        for (int i = 0; i < D; i++)
            x[i] += o[i];
    }
    ref_norm(xn, x, m->nfw, m->nfb, opt);
    ref_mv(logits, opt ? m->emb : m->out, xn, V, D, NULL);
}

static void write_tokenizer(const char *path)
{
    FILE *f = fopen(path, "wb");
    int32_t max = 6;
    fwrite(&max, 4, 1, f);
    for (int i = 0; i < V; i++) {
        char p[8];
        if (i < 3)
            snprintf(p, sizeof p, "%s", i == 0 ? "<unk>" : i == 1 ? "<s>" : "</s>");
        else if (i < 259)
            snprintf(p, sizeof p, "<0x%02X>", i - 3);
        else
            snprintf(p, sizeof p, "%c", i == 259 ? ' ' : 'a' + (i - 260));
        float score = (float)-i;
        int32_t len = (int32_t)strlen(p);
        fwrite(&score, 4, 1, f);
        fwrite(&len, 4, 1, f);
        fwrite(p, 1, (size_t)len, f);
    }
    fclose(f);
}

static int write_model(const struct ref_model *m, const char *dir, enum fb_dtype t, const char *tok)
{
    struct model_shape s = {
        .d_model = D, .d_ff = FF, .n_layers = LAYERS, .n_heads = H, .n_kv_heads = KVH, .vocab_size = V,
        .max_positions = MAXPOS, .ffn_kind = m->opt ? FFN_RELU : FFN_GLU, .norm_eps = 1e-5,
        .position_offset = m->opt ? OFFSET : 0, .rope_fraction = 1.0, .rope_theta = 10000,
        .biases = m->opt, .tied_embeddings = m->opt};
    snprintf(s.name, sizeof s.name, "%s", m->opt ? "ref-opt" : "ref-llama");
    snprintf(s.arch, sizeof s.arch, "%s", m->opt ? "opt" : "llama");
    snprintf(s.ffn_activation, sizeof s.ffn_activation, "%s", m->opt ? "relu" : "swiglu");
    snprintf(s.norm, sizeof s.norm, "%s", m->opt ? "layernorm" : "rmsnorm");
    snprintf(s.position, sizeof s.position, "%s", m->opt ? "learned" : "rope");
    struct model_writer w;
    if (model_writer_begin(&w, dir, &s, t, why, sizeof why))
        return -1;
    char n[64];
    model_writer_tensor(&w, "tok_embedding", m->emb, 2, (uint64_t[]){V, D});
    if (m->opt)
        model_writer_tensor(&w, "pos_embedding", m->pos, 2, (uint64_t[]){MAXPOS + OFFSET, D});
    for (int l = 0; l < LAYERS; l++) {
        const struct ref_layer *L = &m->l[l];
#define W(what, ptr, nd, a, b)                                                   \
    layer_tensor_name(n, sizeof n, l, what);                                     \
    if (model_writer_tensor(&w, n, ptr, nd, (uint64_t[]){a, b}))                 \
        return -1;
        W("attn_norm.weight", L->n1w, 1, D, 0);
        W("attn.wq", L->wq, 2, D, D);
        W("attn.wk", L->wk, 2, KVH * HD, D);
        W("attn.wv", L->wv, 2, KVH * HD, D);
        W("attn.wo", L->wo, 2, D, D);
        W("ffn_norm.weight", L->n2w, 1, D, 0);
        if (m->opt) {
            W("attn_norm.bias", L->n1b, 1, D, 0);
            W("ffn_norm.bias", L->n2b, 1, D, 0);
            W("attn.bq", L->bq, 1, D, 0);
            W("attn.bk", L->bk, 1, KVH * HD, 0);
            W("attn.bv", L->bv, 1, KVH * HD, 0);
            W("attn.bo", L->bo, 1, D, 0);
            W("ffn.up_bias", L->bup, 1, FF, 0);
            W("ffn.down_bias", L->bdown, 1, D, 0);
        }
#undef W
        if (model_writer_ffn_layer(&w, l, L->up, m->opt ? NULL : L->gate, L->down))
            return -1;
    }
    model_writer_tensor(&w, "final_norm.weight", m->nfw, 1, (uint64_t[]){D});
    if (m->opt)
        model_writer_tensor(&w, "final_norm.bias", m->nfb, 1, (uint64_t[]){D});
    else
        model_writer_tensor(&w, "output", m->out, 2, (uint64_t[]){V, D});
    if (model_writer_copy_file(&w, tok, "tokenizer.bin"))
        return -1;
    cJSON *meta = cJSON_CreateObject();
    cJSON *tk = cJSON_AddObjectToObject(meta, "tokenizer");
    cJSON_AddStringToObject(tk, "kind", "sentencepiece-bpe");
    cJSON_AddStringToObject(tk, "file", "tokenizer.bin");
    cJSON_AddNumberToObject(tk, "bos_id", 1);
    cJSON_AddNumberToObject(tk, "eos_id", 2);
    return model_writer_finish(&w, meta);
}

static struct ref_model ref;
static float last_logits[8][V]; /* of the previous compare(), for the thread check */

static void compare(bool opt, enum fb_dtype t, int threads, double tol, const char *tmp, const char *tok)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s-%s-%d", tmp, opt ? "opt" : "llama", dtype_name(t), threads);
    init_ref(&ref, opt, 42);
    CHECK(write_model(&ref, dir, t, tok) == 0);
    round_matrices(&ref, t);
    struct model m;
    CHECK(model_open(&m, dir, why, sizeof why) == 0);
    CHECK_U64(m.bundle_stride % FFN_ALIGN, 0);
    struct engine e;
    CHECK(engine_init(&e, &m, &backend_cpu, &ffn_dense, threads, 0, why, sizeof why) == 0);
    static const int toks[] = {1, 260, 265, 3, 269, 100, 7, 261};
    double worst = 0, logits[V];
    bool same_as_last = true;
    for (int p = 0; p < 8; p++) {
        engine_forward(&e, toks[p], p);
        same_as_last &= memcmp(last_logits[p], e.s.logits, sizeof last_logits[p]) == 0;
        memcpy(last_logits[p], e.s.logits, sizeof last_logits[p]);
        ref_forward(&ref, toks[p], p, logits);
        for (int i = 0; i < V; i++)
            worst = fmax(worst, fabs(logits[i] - e.s.logits[i]));
    }
    printf("%s %s threads %d: max |logit - reference| = %.3g\n", opt ? "opt" : "llama", dtype_name(t),
           threads, worst);
    CHECK(worst <= tol);
    if (threads == 2 && t == DTYPE_F32) /* bit-identical to the 1-thread run just before */
        CHECK(same_as_last);
    engine_free(&e);
    model_close(&m);
}

static void rm_model(const char *dir)
{
    const char *files[] = {"model.json", "dram.bin", "ffn.bin", "tokenizer.bin"};
    char p[700];
    for (int i = 0; i < 4; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
}

int main(void)
{
    char tmp[] = "/tmp/flashbed-test-engine-XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    char tok[600];
    snprintf(tok, sizeof tok, "%s/tok.bin", tmp);
    write_tokenizer(tok);
    /* every step on the thread team, however small, so 2 threads test the split paths */
    backend_cpu_set_min_parallel(0);
    for (int opt = 0; opt <= 1; opt++) {
        compare(opt, DTYPE_F32, 1, 1e-4, tmp, tok);
        compare(opt, DTYPE_F32, 2, 1e-4, tmp, tok);
        compare(opt, DTYPE_F16, 2, 1e-3, tmp, tok);
        compare(opt, DTYPE_BF16, 1, 1e-3, tmp, tok);
    }
    /* the writer refuses to overwrite and leaves nothing behind on failure */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/opt-f32-1", tmp);
    struct model_writer w;
    struct model_shape s = {.d_model = D};
    CHECK(model_writer_begin(&w, dir, &s, DTYPE_F32, why, sizeof why) == -1);
    const char *names[] = {"opt", "llama"}, *types[] = {"f32", "f16", "bf16"};
    for (int a = 0; a < 2; a++)
        for (int t = 0; t < 3; t++)
            for (int th = 1; th <= 2; th++) {
                snprintf(dir, sizeof dir, "%s/%s-%s-%d", tmp, names[a], types[t], th);
                rm_model(dir);
            }
    unlink(tok);
    CHECK(rmdir(tmp) == 0);
    return check_report("test_engine_reference");
}
