/* The forward pass against an independent, plain double-precision
 * reference written here from the original (unbundled) matrices, for
 * every architecture the engine runs:
 *
 *   opt        LayerNorm, learned positions offset by 2, ReLU FFN with
 *              biases, tied output (a small shape of its own)
 *   llama      RMSNorm, RoPE, grouped-query attention, SwiGLU, separate
 *              output (a small shape of its own)
 *   falcon     falcon-tiny: parallel block (one LayerNorm with bias, both
 *              branches reading it), multi-query attention, no linear
 *              biases, RoPE over the whole head; ReLU, and exact GELU
 *   persimmon  persimmon-tiny: a LayerNorm over each head's q and k
 *              (shared [head_dim] weight and bias) before RoPE on the
 *              first half of each head, squared ReLU, biases, untied output
 *   phi        phi-tiny: parallel block, RoPE on the first 40% of each
 *              head, biases, untied output with a bias; ReLU, and GELU's
 *              tanh form
 *   llama-relu llama-relu-tiny: a FATReLU gate (threshold 0.01), and the
 *              same at 0.3, where many more gates fall under it
 *   llama3     llama3-tiny: RoPE at Llama 3.1's scaled frequencies (pairs
 *              of wavelength under original/high_freq_factor kept, over
 *              original/low_freq_factor slowed by factor, blended between)
 *   mistral    mistral-tiny: attention over the last 6 positions
 *   qwen2      qwen2-tiny: q, k and v biases, no other bias
 *   qwen3      qwen3-tiny: an RMSNorm over each head's q and k before
 *              RoPE, head_dim 16 where d_model / n_heads is 8
 *   phi3-longrope phi3-longrope-tiny: Phi-3's longrope, each pair's
 *              frequency divided by its short factor at positions 0-3 and
 *              by its long one at 4-7, cos and sin times sqrt(1 + ln 64 /
 *              ln 4)
 *
 * Partial RoPE rotates adjacent pairs (i, i+1) of each head's first
 * int(rope_fraction * head_dim) dims by pos * theta^(-i/rot) (HF's
 * frequencies over the rotated dims, in the pair order the importer
 * produces); the rest of the head passes unrotated.
 *
 * Checks the model writer's bundle layout, the loader (parallel blocks
 * have no ffn_norm tensors), every backend op and the threaded paths (2
 * threads give the 1-thread bits); and f16/bf16 storage against the
 * reference run on the rounded weights. Logits over 8 positions; the
 * bounds are 2e-5 (f32) and 5e-5 (f16, bf16) in absolute value, the
 * errors measured 0.5e-6 to 6.7e-6 (vector kernels and portable loops);
 * each architecture's feature left out of the reference (GELU's form
 * swapped, FATReLU as ReLU, RoPE over the whole head or with the head's
 * frequencies, no q/k norm, no output bias, a sequential block) moved the
 * logits by 9.6e-4 to 9 (issue 33's: Llama 3.1's scaling left out 0.18,
 * Mistral's window 0.62, Qwen2's q/k/v biases 1.99). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch_fixture.h"
#include "check.h"
#include "engine/forward/engine.h"

/* Where the library says why a call failed (it prints nothing itself). */
static char why[1024];

enum { POSITIONS = 8 };

enum ref_act { R_RELU, R_SILU, R_GELU, R_GELU_TANH, R_SQUARED_RELU, R_FATRELU };

struct ref {
    struct fx_model f;
    enum ref_act act;
    double fat_t, eps, theta;
    int rot;          /* dims of each head rotated; 0 with learned positions */
    double freq[64];  /* pair j's turn per position: theta^(-2j/rot), rescaled as the shape says */
    double freq_long[64], cos_sin_factor; /* longrope: the long factors' turns (from position
                                           * original on), the factor on cos and sin */
    int long_from;    /* the first position of freq_long; past every position but for longrope */
    int window;       /* positions attended (the last ones); 0: all */
    double *kc, *vc;  /* [layers][POSITIONS][kv_dim] */
};

static int ref_act_of(const char *name, enum ref_act *a)
{
    static const char *names[] = {"relu", "swiglu", "gelu", "gelu_tanh", "squared_relu", "fatrelu"};
    for (int i = 0; i < 6; i++)
        if (!strcmp(name, names[i])) {
            *a = (enum ref_act)i;
            return 0;
        }
    return -1;
}

static double ref_activation(const struct ref *r, double v)
{
    switch (r->act) {
    case R_RELU:
        return v > 0 ? v : 0;
    case R_SILU:
        return v / (1 + exp(-v));
    case R_GELU:
        return 0.5 * v * erfc(-v / sqrt(2.0));
    case R_GELU_TANH:
        return 0.5 * v * (1 + tanh(sqrt(2 / 3.14159265358979323846) * (v + 0.044715 * v * v * v)));
    case R_SQUARED_RELU:
        return v > 0 ? v * v : 0;
    case R_FATRELU:
        return v > r->fat_t ? v : 0;
    }
    return NAN;
}

static void ref_norm(double *o, const double *x, int n, const float *w, const float *b, bool layer, double eps)
{
    double mean = 0, ss = 0;
    if (layer) {
        for (int i = 0; i < n; i++)
            mean += x[i];
        mean /= n;
    }
    for (int i = 0; i < n; i++)
        ss += (x[i] - mean) * (x[i] - mean);
    double inv = 1.0 / sqrt(ss / n + eps);
    for (int i = 0; i < n; i++)
        o[i] = w[i] * (x[i] - mean) * inv + (layer ? b[i] : 0);
}

static void ref_mv(double *o, const float *w, const double *x, int rows, int cols, const float *bias)
{
    for (int r = 0; r < rows; r++) {
        double s = bias ? bias[r] : 0;
        for (int c = 0; c < cols; c++)
            s += (double)w[(size_t)r * cols + c] * x[c];
        o[r] = s;
    }
}

/* The reference's frequencies: plain, linear (divided by the factor) or
 * Llama 3.1's bands, read from the shape's keys here. */
static void ref_freqs(struct ref *r, const struct model_shape *s)
{
    for (int j = 0; j < r->rot / 2; j++) {
        double f = pow(r->theta, -2.0 * j / r->rot), wave = 2 * M_PI / f;
        double lo = s->rope_original_max_positions / s->rope_low_freq_factor;
        double hi = s->rope_original_max_positions / s->rope_high_freq_factor;
        if (!strcmp(s->rope_scaling, "linear"))
            f /= s->rope_factor;
        else if (!strcmp(s->rope_scaling, "llama3") && wave > lo)
            f /= s->rope_factor;
        else if (!strcmp(s->rope_scaling, "llama3") && wave >= hi) {
            double t = (s->rope_original_max_positions / wave - s->rope_low_freq_factor) /
                       (s->rope_high_freq_factor - s->rope_low_freq_factor);
            f = t * f + (1 - t) * f / s->rope_factor;
        }
        r->freq[j] = f;
        r->freq_long[j] = f;
    }
    r->cos_sin_factor = 1;
    r->long_from = POSITIONS;
    if (strcmp(s->rope_scaling, "longrope") != 0)
        return;
    /* HF's Phi3LongRoPEScaledRotaryEmbedding with a KV cache: the
     * sequence so far is pos + 1 long; over original, long_factor */
    for (int j = 0; j < r->rot / 2; j++) {
        r->freq[j] = pow(r->theta, -2.0 * j / r->rot) / s->rope_short_factor[j];
        r->freq_long[j] = pow(r->theta, -2.0 * j / r->rot) / s->rope_long_factor[j];
    }
    double orig = s->rope_original_max_positions, scale = s->max_positions / orig;
    r->cos_sin_factor = scale > 1 ? sqrt(1 + log(scale) / log(orig)) : 1;
    r->long_from = (int)orig; /* the first pos with pos + 1 > original */
}

static void ref_rope(double *v, int heads, int hd, int rot, int pos, const double *freq, double factor)
{
    for (int h = 0; h < heads; h++)
        for (int i = 0; i < rot; i += 2) {
            double a = pos * freq[i / 2], c = factor * cos(a), s = factor * sin(a);
            double x0 = v[h * hd + i], x1 = v[h * hd + i + 1];
            v[h * hd + i] = x0 * c - x1 * s;
            v[h * hd + i + 1] = x0 * s + x1 * c;
        }
}

/* Each head of v through the model's norm over head_dim with one shared
 * w (and b: LayerNorm's). */
static void ref_head_norm(double *v, int heads, int hd, const float *w, const float *b, bool layer, double eps)
{
    for (int h = 0; h < heads; h++)
        ref_norm(v + h * hd, v + h * hd, hd, w, b, layer, eps);
}

/* o[d] = attention of layer l on the normed input xn at pos. */
static void ref_attention(struct ref *r, int l, const double *xn, int pos, double *o)
{
    const struct fx_model *f = &r->f;
    const struct fx_layer *L = &f->l[l];
    int d = (int)f->d, hd = (int)f->hd, H = (int)f->h, KV = (int)f->kvh, kv = KV * hd;
    bool b = f->s.biases, bqkv = b || f->s.qkv_bias;
    double *q = calloc((size_t)H * hd, sizeof *q), *att = calloc((size_t)H * hd, sizeof *att);
    double *k = r->kc + ((size_t)l * POSITIONS + pos) * kv, *v = r->vc + ((size_t)l * POSITIONS + pos) * kv;
    ref_mv(q, L->wq, xn, H * hd, d, bqkv ? L->bq : NULL);
    ref_mv(k, L->wk, xn, kv, d, bqkv ? L->bk : NULL);
    ref_mv(v, L->wv, xn, kv, d, bqkv ? L->bv : NULL);
    if (f->s.qk_norm) {
        ref_head_norm(q, H, hd, L->qnw, L->qnb, f->layernorm, r->eps);
        ref_head_norm(k, KV, hd, L->knw, L->knb, f->layernorm, r->eps);
    }
    const double *freq = pos >= r->long_from ? r->freq_long : r->freq;
    ref_rope(q, H, hd, r->rot, pos, freq, r->cos_sin_factor);
    ref_rope(k, KV, hd, r->rot, pos, freq, r->cos_sin_factor);
    int first = r->window && pos >= r->window ? pos - r->window + 1 : 0;
    for (int h = 0; h < H; h++) {
        int kvh = h / (H / KV);
        double sc[POSITIONS], max = -1e300, sum = 0;
        for (int t = first; t <= pos; t++) {
            const double *kt = r->kc + ((size_t)l * POSITIONS + t) * kv + kvh * hd;
            sc[t] = 0;
            for (int i = 0; i < hd; i++)
                sc[t] += q[h * hd + i] * kt[i];
            sc[t] /= sqrt(hd);
            max = fmax(max, sc[t]);
        }
        for (int t = first; t <= pos; t++)
            sum += (sc[t] = exp(sc[t] - max));
        for (int t = first; t <= pos; t++)
            for (int i = 0; i < hd; i++)
                att[h * hd + i] += sc[t] / sum * r->vc[((size_t)l * POSITIONS + t) * kv + kvh * hd + i];
    }
    ref_mv(o, L->wo, att, d, H * hd, b ? L->bo : NULL);
    free(q);
    free(att);
}

/* o[d] = the FFN of layer l on xn: act(up·x + b) or act(gate·x)·(up·x). */
static void ref_ffn(const struct ref *r, int l, const double *xn, double *o)
{
    const struct fx_model *f = &r->f;
    const struct fx_layer *L = &f->l[l];
    int d = (int)f->d, ff = (int)f->ff;
    double *h = malloc((size_t)ff * sizeof *h);
    for (int n = 0; n < ff; n++) {
        double z = f->s.biases ? L->bup[n] : 0, g = 0;
        for (int c = 0; c < d; c++) {
            z += (double)L->up[(size_t)n * d + c] * xn[c];
            g += (double)L->gate[(size_t)n * d + c] * xn[c];
        }
        h[n] = f->glu ? ref_activation(r, g) * z : ref_activation(r, z);
    }
    ref_mv(o, L->down, h, d, ff, f->s.biases ? L->bdown : NULL);
    free(h);
}

static void ref_forward(struct ref *r, int token, int pos, double *logits)
{
    const struct fx_model *f = &r->f;
    int d = (int)f->d;
    bool ln = f->layernorm;
    double *x = malloc((size_t)d * sizeof *x), *xn = malloc((size_t)d * sizeof *xn);
    double *a = malloc((size_t)d * sizeof *a), *m = malloc((size_t)d * sizeof *m);
    for (int i = 0; i < d; i++)
        x[i] = f->emb[(size_t)token * d + i] + (f->learned ? f->pos[(size_t)(pos + f->s.position_offset) * d + i] : 0);
    for (int l = 0; l < (int)f->nl; l++) {
        const struct fx_layer *L = &f->l[l];
        ref_norm(xn, x, d, L->n1w, L->n1b, ln, r->eps);
        ref_attention(r, l, xn, pos, a);
        if (!f->parallel) { /* x += attn(n1(x)); x += ffn(n2(x)) */
            for (int i = 0; i < d; i++)
                x[i] += a[i];
            ref_norm(xn, x, d, L->n2w, L->n2b, ln, r->eps);
        }
        ref_ffn(r, l, xn, m); /* parallel: the same n1(x) as the attention */
        for (int i = 0; i < d; i++)
            x[i] += m[i] + (f->parallel ? a[i] : 0);
    }
    ref_norm(xn, x, d, f->nfw, f->nfb, ln, r->eps);
    ref_mv(logits, f->s.tied_embeddings ? f->emb : f->out, xn, (int)f->v, d, f->s.output_bias ? f->out_b : NULL);
    free(x), free(xn), free(a), free(m);
}

/* The reference's own reading of the shape (not the engine's arch). */
static int ref_init(struct ref *r, const struct model_shape *s, float ffn_scale)
{
    memset(r, 0, sizeof *r);
    if (ref_act_of(s->ffn_activation, &r->act) != 0 || fx_init(&r->f, s, 42, ffn_scale) != 0)
        return -1;
    r->fat_t = s->fatrelu_threshold;
    r->eps = s->norm_eps;
    r->theta = s->rope_theta;
    r->rot = strcmp(s->position, "rope") ? 0 : (int)(s->rope_fraction * r->f.hd);
    if (r->rot > 128)
        return -1;
    ref_freqs(r, s);
    r->window = (int)s->sliding_window;
    size_t kv = (size_t)s->n_layers * POSITIONS * s->n_kv_heads * r->f.hd;
    r->kc = calloc(kv, sizeof *r->kc);
    r->vc = calloc(kv, sizeof *r->vc);
    return r->kc && r->vc ? 0 : -1;
}

static void ref_free(struct ref *r)
{
    fx_free(&r->f);
    free(r->kc);
    free(r->vc);
}

/* The small OPT and Llama shapes this test has always used. */
static struct model_shape small_shape(bool opt)
{
    struct model_shape s = {
        .d_model = 32, .d_ff = 48, .n_layers = 2, .n_heads = 4, .n_kv_heads = 2, .vocab_size = 270,
        .max_positions = 16, .ffn_kind = opt ? FFN_RELU : FFN_GLU, .norm_eps = 1e-5,
        .position_offset = opt ? 2 : 0, .rope_fraction = 1.0, .rope_theta = 10000,
        .biases = opt, .tied_embeddings = opt};
    snprintf(s.name, sizeof s.name, "%s", opt ? "ref-opt" : "ref-llama");
    snprintf(s.arch, sizeof s.arch, "%s", opt ? "opt" : "llama");
    snprintf(s.ffn_activation, sizeof s.ffn_activation, "%s", opt ? "relu" : "swiglu");
    snprintf(s.norm, sizeof s.norm, "%s", opt ? "layernorm" : "rmsnorm");
    snprintf(s.position, sizeof s.position, "%s", opt ? "learned" : "rope");
    return s;
}

struct ref_case {
    const char *label;
    const char *shape;      /* configs/models name; NULL: small_shape */
    bool opt;               /* small_shape's */
    const char *activation; /* replaces the shape's, or NULL */
    double fatrelu_threshold; /* replaces the shape's when > 0 */
    float ffn_scale;
};

static int case_shape(const struct ref_case *c, struct model_shape *s)
{
    const struct fb_settings set = fb_settings_defaults();
    if (!c->shape)
        *s = small_shape(c->opt);
    else if (model_shape_load(&set, c->shape, s, why, sizeof why) != 0)
        return -1;
    if (c->activation)
        snprintf(s->ffn_activation, sizeof s->ffn_activation, "%s", c->activation);
    if (c->fatrelu_threshold > 0)
        s->fatrelu_threshold = c->fatrelu_threshold;
    snprintf(s->name, sizeof s->name, "%s", c->label);
    return 0;
}

/* The engine's logits of the previous compare(), for the thread check. */
static float *last_logits;

static void compare(const struct ref_case *c, enum fb_dtype t, int threads, double tol, const char *tmp)
{
    /* every step on the thread team, however small, so 2 threads test the split paths */
    struct fb_settings set = fb_settings_defaults();
    set.min_parallel_work = 0;
    char dir[512], tok[600];
    snprintf(dir, sizeof dir, "%s/%s-%s-%d", tmp, c->label, wtype_name(t), threads);
    snprintf(tok, sizeof tok, "%s/tok-%s.bin", tmp, c->label);
    struct model_shape s;
    struct ref r;
    CHECK(case_shape(c, &s) == 0);
    CHECK(ref_init(&r, &s, c->ffn_scale) == 0);
    CHECK(fx_write_tokenizer(tok, s.vocab_size) == 0);
    CHECK(fx_write(&r.f, dir, t, tok, why, sizeof why) == 0);
    fx_round(&r.f, t);
    struct model m;
    CHECK(model_open(&m, dir, why, sizeof why) == 0);
    CHECK_U64(m.bundle_stride % FFN_ALIGN, 0);
    struct engine e;
    CHECK(engine_init(&e, &set, &m, &backend_cpu, &ffn_dense, threads, 0, why, sizeof why) == 0);
    static const int toks[POSITIONS] = {1, 260, 265, 3, 269, 100, 7, 261};
    size_t V = s.vocab_size;
    double worst = 0, *logits = malloc(V * sizeof *logits);
    float *mine = malloc(POSITIONS * V * sizeof *mine);
    for (int p = 0; p < POSITIONS; p++) {
        engine_forward(&e, toks[p], p);
        memcpy(mine + p * V, e.s.logits, V * sizeof *mine);
        ref_forward(&r, toks[p], p, logits);
        for (size_t i = 0; i < V; i++)
            worst = fmax(worst, fabs(logits[i] - e.s.logits[i]));
    }
    printf("%-16s %-4s threads %d: max |logit - reference| = %.3g (bound %g)\n", c->label, wtype_name(t), threads,
           worst, tol);
    CHECK(worst <= tol);
    if (threads == 2 && t == DTYPE_F32) /* bit-identical to the 1-thread run just before */
        CHECK(last_logits && memcmp(last_logits, mine, POSITIONS * V * sizeof *mine) == 0);
    free(last_logits);
    last_logits = mine;
    free(logits);
    engine_free(&e);
    model_close(&m);
    ref_free(&r);
    unlink(tok);
}

static void rm_model(const char *dir)
{
    const char *files[] = {"model.json", "dram.bin", "ffn.bin", "ffn.crc32c", "tokenizer.bin"};
    char p[700];
    for (int i = 0; i < 5; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
}

static const struct ref_case cases[] = {
    {"opt", NULL, true, NULL, 0, 1},
    {"llama", NULL, false, NULL, 0, 1},
    {"falcon", "falcon-tiny", false, NULL, 0, 2.5f},
    {"falcon-gelu", "falcon-tiny", false, "gelu", 0, 2.5f},
    {"persimmon", "persimmon-tiny", false, NULL, 0, 2.5f},
    {"phi", "phi-tiny", false, NULL, 0, 2.5f},
    {"phi-gelu_tanh", "phi-tiny", false, "gelu_tanh", 0, 2.5f},
    {"llama-relu", "llama-relu-tiny", false, NULL, 0, 2.5f},
    {"llama-fatrelu0.3", "llama-relu-tiny", false, NULL, 0.3, 2.5f},
    {"llama3", "llama3-tiny", false, NULL, 0, 2.5f},
    {"mistral", "mistral-tiny", false, NULL, 0, 2.5f},
    {"qwen2", "qwen2-tiny", false, NULL, 0, 2.5f},
    {"qwen3", "qwen3-tiny", false, NULL, 0, 2.5f},
    {"phi3-longrope", "phi3-longrope-tiny", false, NULL, 0, 2.5f},
};
enum { N_CASES = sizeof cases / sizeof cases[0] };

int main(void)
{
    char tmp[] = "/tmp/flashbed-test-engine-XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    for (int i = 0; i < N_CASES; i++) {
        compare(&cases[i], DTYPE_F32, 1, 2e-5, tmp);
        compare(&cases[i], DTYPE_F32, 2, 2e-5, tmp);
        compare(&cases[i], DTYPE_F16, 2, 5e-5, tmp);
        compare(&cases[i], DTYPE_BF16, 1, 5e-5, tmp);
    }
    free(last_logits);
    /* the writer refuses to overwrite and leaves nothing behind on failure */
    char dir[600];
    snprintf(dir, sizeof dir, "%s/opt-f32-1", tmp);
    struct model_writer w;
    struct model_shape s = {.d_model = 32};
    CHECK(model_writer_begin(&w, dir, &s, DTYPE_F32, why, sizeof why) == -1);
    const char *types[] = {"f32", "f16", "bf16"};
    for (int c = 0; c < N_CASES; c++)
        for (int t = 0; t < 3; t++)
            for (int th = 1; th <= 2; th++) {
                snprintf(dir, sizeof dir, "%s/%s-%s-%d", tmp, cases[c].label, types[t], th);
                rm_model(dir);
            }
    CHECK(rmdir(tmp) == 0);
    return check_report("test_engine_reference");
}
