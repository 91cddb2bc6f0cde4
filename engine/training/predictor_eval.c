/* Evaluating a predictor against dense (predictor_eval.h). */
#include "engine/training/predictor_eval.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cache/unit_geometry.h"
#include "common/errbuf.h"
#include "common/interrupt.h"
#include "engine/ffn/ffn_probe.h"
#include "engine/ffn/ffn_select.h"
#include "engine/forward/decode.h"
#include "engine/forward/engine.h"
#include "engine/forward/text_feed.h"

/* Short story openings in ordinary words: TinyStories' register for
 * stories260K, and words any synthetic tokenizer spells out. */
const char *const predictor_eval_prompts[] = {
    "Once upon a time",
    "The little girl",
    "One day, a boy named Tom",
    "The sun was",
    "She wanted to",
    "In the park there was",
    "The cat and the dog",
    "Mom said",
    NULL,
};

uint64_t model_madds_per_token(const struct model *m)
{
    const struct model_shape *s = &m->shape;
    uint64_t d = s->d_model, ffn = (uint64_t)s->d_ff * unit_neuron_weights(s);
    uint64_t attn = (uint64_t)m->q_dim * d * 2 + (uint64_t)m->kv_dim * d * 2;
    return (uint64_t)s->n_layers * (attn + ffn) + (uint64_t)s->vocab_size * d;
}

uint64_t model_weight_bytes(const struct model *m)
{
    return (uint64_t)m->dram_bytes + (uint64_t)m->shape.n_layers * m->shape.d_ff * m->bundle_bytes;
}

/* The probe's callback: the predictor beside the truth, counted per layer. */
struct compare {
    const struct predictor *p;
    struct engine *e;
    bool counting; /* the text pass; not the greedy prompts */
    float *h, *logits;
    uint32_t *ids;
    struct predictor_eval_layer *layers;
};

static void compare_observe(void *ctx, int layer, int pos, const float *x, const float *h, const uint8_t *active)
{
    (void)pos;
    struct compare *c = ctx;
    if (!c->counting)
        return;
    uint32_t n = predictor_predict(c->p, (uint32_t)layer, c->e->ck, x, c->h, c->logits, c->ids);
    struct predictor_eval_layer *L = &c->layers[layer];
    uint32_t k = 0, f = c->p->d_ff;
    uint64_t tp = 0, fp = 0, fn = 0;
    double mass = 0, missed = 0;
    for (uint32_t i = 0; i < f; i++) {
        bool pred = k < n && c->ids[k] == i;
        k += pred;
        tp += active[i] && pred, fp += !active[i] && pred, fn += active[i] && !pred;
        mass += active[i] ? fabsf(h[i]) : 0.0f;
        missed += active[i] && !pred ? fabsf(h[i]) : 0.0f;
    }
    L->tp += tp, L->fp += fp, L->fn += fn, L->tn += f - tp - fp - fn;
    L->active_mass += mass, L->missed_mass += missed;
}

struct text_pass {
    const int *tokens;
    size_t n;
    int *top;            /* [n]: filled when compare is NULL */
    const int *compare;  /* [n]: dense's top tokens to agree with */
    double nll;
    size_t scored, agree;
    int vocab;
    const struct predictor_eval_config *c;
    const char *stage;
};

static int pass_scored(void *ctx, size_t i, const float *logits)
{
    struct text_pass *tp = ctx;
    int top;
    tp->nll += text_feed_nll(logits, tp->vocab, tp->tokens[i], &top);
    if (tp->compare)
        tp->agree += top == tp->compare[i];
    else
        tp->top[i] = top;
    tp->scored++;
    return 0;
}

static void pass_progress(void *ctx, size_t done, size_t n)
{
    struct text_pass *tp = ctx;
    if (tp->c->progress)
        tp->c->progress(tp->c->ctx, tp->stage, done, n);
}

static const struct backend_ops *be_of(const struct predictor_eval_config *c)
{
    return c->backend ? c->backend : &backend_cpu;
}

/* Feeds the text in BOS-led windows (engine/forward/text_feed.h); 1 if
 * interrupted, -1 with err when a forward pass failed. */
static int run_text(struct engine *e, struct text_pass *tp, const struct predictor_eval_config *c, const char *stage,
                    char *err, size_t errlen)
{
    tp->vocab = (int)e->m->shape.vocab_size;
    tp->c = c;
    tp->stage = stage;
    const struct text_feed f = {.scored = pass_scored, .progress = pass_progress, .ctx = tp};
    int rc = text_feed_run(e, tp->tokens, tp->n, &f);
    return rc == TEXT_FEED_FAILED ? err_set(err, errlen, "the %s pass: %s", stage, e->err) : rc;
}

struct greedy_rec {
    int *out;
    int n;
};

static int greedy_token(void *ctx, const struct decode_step *step)
{
    struct greedy_rec *g = ctx;
    if (step->sampled >= 0 && g->n < 1 << 30)
        g->out[g->n++] = step->sampled;
    return 0;
}

/* Greedy continuations of every prompt into out[prompt][gen_tokens]; 1 if interrupted. */
static int run_greedy(struct engine *e, const struct predictor_eval_config *c, int *out, size_t n_prompts,
                      const char *stage, char *err, size_t errlen)
{
    const struct model *m = e->m;
    for (size_t k = 0; k < n_prompts; k++) {
        const char *text = predictor_eval_prompts[k];
        int ids[256];
        size_t n = tokenizer_encode(&m->tok, text, strlen(text), true, ids);
        struct decode_config dc = {.prompt = ids, .n_prompt = (int)n, .n = c->gen_tokens, .ignore_eos = true};
        struct greedy_rec g = {.out = out + k * (size_t)c->gen_tokens};
        struct decode_hooks h = {.token = greedy_token, .ctx = &g};
        struct decode_result r;
        for (int i = 0; i < c->gen_tokens; i++)
            g.out[i] = -1;
        if (decode_run(e, &dc, &h, &r, err, errlen) != 0)
            return -1;
        if (r.stop == DECODE_INTERRUPTED)
            return 1;
        if (c->progress)
            c->progress(c->ctx, stage, k + 1, n_prompts);
    }
    return 0;
}

static size_t count_prompts(void)
{
    size_t n = 0;
    while (predictor_eval_prompts[n])
        n++;
    return n;
}

/* Pass 1: dense with the probe; the per-layer counts, dense's NLL and top tokens. */
static int dense_pass(const struct model *m, const struct predictor *p, struct text_pass *tp,
                      const struct predictor_eval_config *c, struct predictor_eval_result *r, char *err,
                      size_t errlen)
{
    struct compare cmp = {.p = p, .counting = true, .layers = r->layers};
    cmp.h = malloc((predictor_max_rank(p) + 1) * sizeof *cmp.h);
    cmp.logits = malloc(p->d_ff * sizeof *cmp.logits);
    cmp.ids = malloc(p->d_ff * sizeof *cmp.ids);
    struct ffn_probe_config pc = {.target = p->target, .act_threshold = p->act_threshold,
                                  .observe = compare_observe, .ctx = &cmp};
    struct engine e;
    int rc = cmp.h && cmp.logits && cmp.ids ? 0 : err_set(err, errlen, "predictor evaluation: out of memory");
    if (rc == 0)
        rc = engine_init_with(&e, c->settings, m, be_of(c), &ffn_probe, &pc, c->threads, c->context, err, errlen);
    if (rc == 0) {
        cmp.e = &e;
        rc = run_text(&e, tp, c, "dense", err, errlen);
        cmp.counting = false;
        if (rc == 0 && c->gen_tokens > 0)
            rc = run_greedy(&e, c, r->greedy_dense, r->n_prompts, "greedy dense", err, errlen);
        engine_free(&e);
    }
    free(cmp.h), free(cmp.logits), free(cmp.ids);
    return rc;
}

/* Pass 2: the FFN on the predicted neurons only. */
static int predictor_pass(const struct model *m, const struct predictor *p, struct text_pass *tp,
                          const struct predictor_eval_config *c, struct predictor_eval_result *r, char *err,
                          size_t errlen)
{
    struct select_config sc = {.ops = &source_predictor, .predictor = p};
    struct engine e;
    if (engine_init_with(&e, c->settings, m, be_of(c), &ffn_select, &sc, c->threads, c->context, err, errlen) != 0)
        return -1;
    int rc = run_text(&e, tp, c, "predictor", err, errlen);
    if (rc == 0 && c->gen_tokens > 0)
        rc = run_greedy(&e, c, r->greedy_predictor, r->n_prompts, "greedy predictor", err, errlen);
    engine_free(&e);
    return rc;
}

/* Pass 3: the FFN on the truly active neurons (the oracle's sparsity). */
static int oracle_pass(const struct model *m, const struct predictor *p, struct text_pass *tp,
                       const struct predictor_eval_config *c, char *err, size_t errlen)
{
    struct select_config sc = {.ops = &source_oracle, .threshold = p->act_threshold};
    struct engine e;
    if (engine_init_with(&e, c->settings, m, be_of(c), &ffn_select, &sc, c->threads, c->context, err, errlen) != 0)
        return -1;
    int rc = run_text(&e, tp, c, "oracle", err, errlen);
    engine_free(&e);
    return rc;
}

static void layer_rates(struct predictor_eval_layer *L)
{
    double cells = (double)(L->tp + L->fp + L->fn + L->tn);
    double pos = (double)(L->tp + L->fn), neg = (double)(L->fp + L->tn);
    L->true_density = cells ? pos / cells : 0;
    L->predicted_density = cells ? (double)(L->tp + L->fp) / cells : 0;
    L->recall = pos ? (double)L->tp / pos : 1.0;
    L->false_negative_rate = 1 - L->recall;
    L->false_positive_rate = neg ? (double)L->fp / neg : 0.0;
    L->missed_mass_share = L->active_mass > 0 ? L->missed_mass / L->active_mass : 0.0;
}

/* Common prefix and position-by-position agreement of the greedy tokens. */
static void greedy_figures(struct predictor_eval_result *r, int gen)
{
    size_t prefix = 0, match = 0, total = 0;
    for (size_t k = 0; k < r->n_prompts; k++) {
        const int *a = r->greedy_dense + k * (size_t)gen, *b = r->greedy_predictor + k * (size_t)gen;
        bool same = true;
        for (int i = 0; i < gen && a[i] >= 0; i++, total++) {
            same = same && a[i] == b[i];
            prefix += same;
            match += a[i] == b[i];
        }
    }
    r->greedy_tokens = total;
    r->greedy_agreement = total ? (double)prefix / (double)total : NAN;
    r->greedy_match = total ? (double)match / (double)total : NAN;
}

static void summarise(struct predictor_eval_result *r, const struct text_pass *dense, const struct text_pass *pred,
                      const struct text_pass *oracle, int gen)
{
    double t = 0, d = 0, rc = 0;
    for (uint32_t l = 0; l < r->n_layers; l++) {
        layer_rates(&r->layers[l]);
        t += r->layers[l].true_density, d += r->layers[l].predicted_density, rc += r->layers[l].recall;
    }
    r->mean_true_density = r->n_layers ? t / r->n_layers : 0;
    r->mean_predicted_density = r->n_layers ? d / r->n_layers : 0;
    r->mean_recall = r->n_layers ? rc / r->n_layers : 0;
    r->tokens = dense->scored;
    r->nll_dense = dense->scored ? dense->nll / (double)dense->scored : NAN;
    r->nll_predictor = pred->scored ? pred->nll / (double)pred->scored : NAN;
    r->perplexity_dense = exp(r->nll_dense);
    r->perplexity_predictor = exp(r->nll_predictor);
    r->nll_oracle = oracle->scored ? oracle->nll / (double)oracle->scored : NAN;
    r->perplexity_oracle = exp(r->nll_oracle);
    r->top1_agreement = pred->scored ? (double)pred->agree / (double)pred->scored : NAN;
    if (gen > 0 && !r->interrupted)
        greedy_figures(r, gen);
    else
        r->greedy_agreement = r->greedy_match = NAN;
}

static int result_init(struct predictor_eval_result *r, const struct model *m, const struct predictor *p, int gen)
{
    memset(r, 0, sizeof *r);
    r->n_layers = p->n_layers;
    r->n_prompts = gen > 0 ? count_prompts() : 0;
    r->layers = calloc(p->n_layers ? p->n_layers : 1, sizeof *r->layers);
    size_t g = r->n_prompts * (size_t)(gen > 0 ? gen : 0);
    r->greedy_dense = calloc(g ? g : 1, sizeof *r->greedy_dense);
    r->greedy_predictor = calloc(g ? g : 1, sizeof *r->greedy_predictor);
    r->predictor_bytes = predictor_bytes(p);
    r->predictor_madds = predictor_madds(p);
    r->model_bytes = model_weight_bytes(m);
    r->model_madds = model_madds_per_token(m);
    return r->layers && r->greedy_dense && r->greedy_predictor ? 0 : -1;
}

int predictor_eval_run(const struct model *m, const struct predictor *p, const int *tokens, size_t n,
                       const struct predictor_eval_config *c, struct predictor_eval_result *r, char *err,
                       size_t errlen)
{
    const struct model_shape *s = &m->shape;
    if (p->n_layers != s->n_layers || p->d_model != s->d_model || p->d_ff != s->d_ff)
        return err_set(err, errlen, "the predictor (%u layers, d_model %u, d_ff %u) does not fit the model (%u, %u, "
                       "%u)", p->n_layers, p->d_model, p->d_ff, s->n_layers, s->d_model, s->d_ff);
    if (n == 0)
        return err_set(err, errlen, "no tokens to evaluate on");
    /* each window is BOS then text: one position would score nothing and
     * the windows would never advance */
    if (engine_context(m, c->context) < 2)
        return err_set(err, errlen, "a context of %d position%s leaves no room for text after BOS", engine_context(m, c->context),
                       engine_context(m, c->context) == 1 ? "" : "s");
    int *top = malloc(n * sizeof *top);
    if (!top || result_init(r, m, p, c->gen_tokens) != 0) {
        free(top);
        predictor_eval_result_free(r);
        return err_set(err, errlen, "predictor evaluation: out of memory");
    }
    struct text_pass dense = {.tokens = tokens, .n = n, .top = top};
    struct text_pass pred = {.tokens = tokens, .n = n, .compare = top};
    struct text_pass oracle = {.tokens = tokens, .n = n, .compare = top};
    int rc = dense_pass(m, p, &dense, c, r, err, errlen);
    if (rc == 0)
        rc = predictor_pass(m, p, &pred, c, r, err, errlen);
    if (rc == 0)
        rc = oracle_pass(m, p, &oracle, c, err, errlen);
    free(top);
    if (rc < 0) {
        predictor_eval_result_free(r);
        return -1;
    }
    r->interrupted = rc == 1;
    summarise(r, &dense, &pred, &oracle, c->gen_tokens);
    return 0;
}

void predictor_eval_result_free(struct predictor_eval_result *r)
{
    free(r->layers);
    free(r->greedy_dense);
    free(r->greedy_predictor);
    memset(r, 0, sizeof *r);
}
