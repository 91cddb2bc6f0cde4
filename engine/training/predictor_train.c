/* Training activation predictors (predictor_train.h). Per layer the
 * parameters are one flat f32 vector theta = [A (r x d) | B (f x r) | bias
 * (f)], with its gradient, Adam's two moments and the best epoch's copy
 * beside it, and A^T and B^T kept for the forward's products. */
#include "engine/training/predictor_train.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/errbuf.h"
#include "common/interrupt.h"
#include "common/rng.h"
#include "engine/compute/threadpool.h"

#define ADAM_B1 0.9
#define ADAM_B2 0.999
#define ADAM_EPS 1e-8f

/* One layer's trainable state. */
struct layer_state {
    uint32_t rank;
    size_t n_params;
    float *theta, *grad, *m1, *m2, *best; /* n_params each, one allocation */
    float *at, *bt;                       /* A^T (d x r), B^T (r x f): theta's A and B transposed */
    double pos_weight, best_score; /* best_score: what the kept epoch is chosen by */
    uint32_t best_epoch;
    struct predictor_layer_eval best_eval;
    uint64_t steps; /* Adam's t */
    struct rng rng; /* shuffles */
};

/* Buffers of one mini-batch, shared by the layers (sized for the largest rank). */
struct workspace {
    size_t cap;            /* rows */
    size_t *rows;          /* sample rows of the batch */
    float *x, *y;          /* [cap][d], [cap][f] (0 or 1) */
    float *h, *dh;         /* [cap][r_max] */
    float *z;              /* [cap][f]: logits, then dZ */
    double *row_loss;      /* [cap] */
    uint32_t (*row_counts)[3]; /* [cap] true positives, false positives, false negatives */
    size_t *perm;          /* [train rows] */
};

/* What the team's jobs share for one batch of one layer. */
struct job {
    const struct predictor_samples *s;
    uint32_t layer, r, d, f;
    struct layer_state *L;
    struct workspace *w;
    size_t n;        /* rows in the batch */
    bool train;      /* compute dZ */
    float cut;       /* logit above which a neuron is predicted active */
    double scale;    /* 1 / (n * f): the loss is a mean */
    float lr_t, b1, b2; /* Adam: step size with bias correction folded in */
};

static float *param_b(const struct job *j) { return j->L->theta + (size_t)j->r * j->d; }
static float *param_c(const struct job *j) { return j->L->theta + (size_t)j->r * j->d + (size_t)j->f * j->r; }

/* ---- the batch's jobs ----
 * Three team runs per mini-batch: rows (gather, H, Z and the loss, dZ,
 * dH: all row-local), gradients (dB and dbias over neurons, dA over rank
 * dimensions) and the update (Adam, then A^T and B^T, over rank dimensions
 * and neurons). Few runs because waking the team costs microseconds, far
 * more on a loaded machine. */

/* Worker w's share [lo, hi) of n items. */
static void share(size_t n, int w, int nw, size_t *lo, size_t *hi)
{
    *lo = n * (size_t)w / (size_t)nw;
    *hi = n * (size_t)(w + 1) / (size_t)nw;
}

/* y[n] += a x[n]: the products below are sums of these, each output
 * element accumulated in a fixed order (vectorised across elements, never
 * reassociated), so the bits do not depend on how work is split. */
static inline void axpy(float *restrict y, float a, const float *restrict x, size_t n)
{
    for (size_t i = 0; i < n; i++)
        y[i] += a * x[i];
}

static void gather_row(const struct job *j, size_t n)
{
    size_t row = j->w->rows[n];
    memcpy(j->w->x + n * j->d, samples_x(j->s, j->layer, row), j->d * sizeof(float));
    const uint64_t *bits = samples_bits(j->s, j->layer, row);
    float *y = j->w->y + n * j->f;
    for (uint32_t i = 0; i < j->f; i++)
        y[i] = samples_active(bits, i) ? 1.0f : 0.0f;
}

/* H[n] = sum_t X[n][t] A^T[t] */
static void hidden_row(const struct job *j, size_t n)
{
    const float *x = j->w->x + n * j->d;
    float *h = j->w->h + n * j->r;
    memset(h, 0, j->r * sizeof *h);
    for (uint32_t t = 0; t < j->d; t++)
        axpy(h, x[t], j->L->at + (size_t)t * j->r, j->r);
}

/* The loss and counts of row n's neurons; with train, z becomes dZ. Both
 * the loss and the gradient come from one exp: e = exp(-|z|),
 * softplus(z) = max(z, 0) + log1p(e), sigmoid(z) = 1/(1+e) or e/(1+e). */
static void logits_row(const struct job *j, size_t n)
{
    const float *c = param_c(j), *h = j->w->h + n * j->r, *y = j->w->y + n * j->f;
    float *z = j->w->z + n * j->f;
    memcpy(z, c, j->f * sizeof *z);
    for (uint32_t k = 0; k < j->r; k++)
        axpy(z, h[k], j->L->bt + (size_t)k * j->f, j->f);
    double loss = 0;
    float w = (float)j->L->pos_weight, scale = (float)j->scale;
    uint32_t tp = 0, fp = 0, fn = 0;
    for (uint32_t i = 0; i < j->f; i++) {
        float zi = z[i], e = expf(-fabsf(zi)), sp = (zi > 0 ? zi : 0) + log1pf(e);
        bool pos = y[i] > 0.5f, pred = zi > j->cut;
        tp += pos && pred, fp += !pos && pred, fn += pos && !pred;
        loss += pos ? w * (sp - zi) : sp;
        float p = zi >= 0 ? 1 / (1 + e) : e / (1 + e);
        if (j->train)
            z[i] = (pos ? -w * (1 - p) : p) * scale;
    }
    j->w->row_loss[n] = loss;
    j->w->row_counts[n][0] = tp, j->w->row_counts[n][1] = fp, j->w->row_counts[n][2] = fn;
}

/* dH[n] = sum_i dZ[n][i] B[i] */
static void dh_row(const struct job *j, size_t n)
{
    const float *b = param_b(j), *dz = j->w->z + n * j->f;
    float *dh = j->w->dh + n * j->r;
    memset(dh, 0, j->r * sizeof *dh);
    for (uint32_t i = 0; i < j->f; i++)
        axpy(dh, dz[i], b + (size_t)i * j->r, j->r);
}

static void job_rows(void *ctx, int w, int nw)
{
    const struct job *j = ctx;
    size_t lo, hi;
    share(j->n, w, nw, &lo, &hi);
    for (size_t n = lo; n < hi; n++) {
        gather_row(j, n);
        hidden_row(j, n);
        logits_row(j, n);
        if (j->train)
            dh_row(j, n);
    }
}

/* dB[i] = sum_n dZ[n][i] H[n], dbias[i] = sum_n dZ[n][i], for neurons [lo, hi). */
static void grad_b(const struct job *j, size_t lo, size_t hi)
{
    float *gb = j->L->grad + (size_t)j->r * j->d, *gc = gb + (size_t)j->f * j->r;
    memset(gb + lo * j->r, 0, (hi - lo) * j->r * sizeof(float));
    memset(gc + lo, 0, (hi - lo) * sizeof(float));
    for (size_t n = 0; n < j->n; n++) {
        const float *dz = j->w->z + n * j->f, *h = j->w->h + n * j->r;
        for (size_t i = lo; i < hi; i++) {
            gc[i] += dz[i];
            axpy(gb + i * j->r, dz[i], h, j->r);
        }
    }
}

/* dA[k] = sum_n dH[n][k] X[n], for rank dimensions [lo, hi). */
static void grad_a(const struct job *j, size_t lo, size_t hi)
{
    float *ga = j->L->grad;
    memset(ga + lo * j->d, 0, (hi - lo) * j->d * sizeof(float));
    for (size_t n = 0; n < j->n; n++) {
        const float *dh = j->w->dh + n * j->r, *x = j->w->x + n * j->d;
        for (size_t k = lo; k < hi; k++)
            axpy(ga + k * j->d, dh[k], x, j->d);
    }
}

static void job_grads(void *ctx, int w, int nw)
{
    const struct job *j = ctx;
    size_t lo, hi;
    share(j->f, w, nw, &lo, &hi);
    grad_b(j, lo, hi);
    share(j->r, w, nw, &lo, &hi);
    grad_a(j, lo, hi);
}

static inline void adam(const struct job *j, size_t i)
{
    struct layer_state *L = j->L;
    float g = L->grad[i];
    L->m1[i] = j->b1 * L->m1[i] + (1 - j->b1) * g;
    L->m2[i] = j->b2 * L->m2[i] + (1 - j->b2) * g * g;
    L->theta[i] -= j->lr_t * L->m1[i] / (sqrtf(L->m2[i]) + ADAM_EPS);
}

/* Rank dimension k: A's row k and B's column k (Adam when training), then
 * their transposes A^T[.][k] and B^T[k], the forward's layouts. */
static void update_rank(const struct job *j, size_t k)
{
    size_t b0 = (size_t)j->r * j->d;
    for (uint32_t t = 0; t < j->d; t++) {
        if (j->train)
            adam(j, k * j->d + t);
        j->L->at[(size_t)t * j->r + k] = j->L->theta[k * j->d + t];
    }
    for (uint32_t i = 0; i < j->f; i++) {
        if (j->train)
            adam(j, b0 + (size_t)i * j->r + k);
        j->L->bt[k * j->f + i] = j->L->theta[b0 + (size_t)i * j->r + k];
    }
}

static void job_update(void *ctx, int w, int nw)
{
    const struct job *j = ctx;
    size_t lo, hi;
    share(j->r, w, nw, &lo, &hi);
    for (size_t k = lo; k < hi; k++)
        update_rank(j, k);
    share(j->f, w, nw, &lo, &hi);
    size_t c0 = (size_t)j->r * (j->d + j->f);
    for (size_t i = lo; i < hi && j->train; i++)
        adam(j, c0 + i);
}

/* ---- steps ---- */

/* Forward (and, with j->train, backward and the update) of the batch whose
 * rows are in w->rows[0..n). */
static void run_batch(struct threadpool *pool, struct job *j, size_t n, double lr, uint64_t total_steps)
{
    j->n = n;
    j->scale = 1.0 / ((double)n * j->f);
    threadpool_run(pool, job_rows, j);
    if (!j->train)
        return;
    threadpool_run(pool, job_grads, j);
    uint64_t t = ++j->L->steps;
    /* the cosine schedule: lr at the first step, down to 0 after the last */
    double rate = lr * 0.5 * (1 + cos(M_PI * (double)(t - 1) / (double)total_steps));
    /* Adam's bias corrections folded into the step: rate sqrt(1-b2^t) / (1-b1^t) */
    j->lr_t = (float)(rate * sqrt(1 - pow(ADAM_B2, (double)t)) / (1 - pow(ADAM_B1, (double)t)));
    j->b1 = (float)ADAM_B1, j->b2 = (float)ADAM_B2;
    threadpool_run(pool, job_update, j);
}

/* Sums of the batch's row losses and counts, in row order. */
static void add_batch(const struct workspace *w, size_t n, double *loss, uint64_t counts[3])
{
    for (size_t i = 0; i < n; i++) {
        *loss += w->row_loss[i];
        for (int k = 0; k < 3; k++)
            counts[k] += w->row_counts[i][k];
    }
}

static void fill_eval(struct predictor_layer_eval *e, double loss, const uint64_t counts[3], size_t rows, uint32_t f)
{
    double cells = (double)rows * f;
    uint64_t tp = counts[0], fp = counts[1], fn = counts[2], negatives = (uint64_t)cells - tp - fn;
    *e = (struct predictor_layer_eval){
        .loss = loss / cells,
        .recall = tp + fn ? (double)tp / (double)(tp + fn) : 1.0,
        .predicted_density = (double)(tp + fp) / cells,
        .true_density = (double)(tp + fn) / cells,
        .false_positive_rate = negatives ? (double)fp / (double)negatives : 0.0,
    };
}

struct trainer {
    const struct predictor_samples *s;
    float *val_z, *val_pos; /* with a target recall: the validation rows' logits [n_val][f], the positives' */
    const struct predictor_train_config *c;
    struct predictor *p;
    struct threadpool *pool;
    struct workspace w;
    struct layer_state *layers;
    size_t n_train, n_val;
    uint64_t steps_done, steps_total;
    uint64_t layer_steps; /* one layer's mini-batches over all epochs: the schedule's length */
};

static struct job job_for(struct trainer *t, uint32_t l, bool train)
{
    return (struct job){.s = t->s, .layer = l, .r = t->layers[l].rank, .d = t->s->d_model, .f = t->s->d_ff,
                        .L = &t->layers[l], .w = &t->w, .train = train,
                        .cut = predictor_logit_threshold(t->p->layers[l].threshold)};
}

static int descending(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x < y) - (x > y);
}

/* The highest threshold at which layer l's recall on the validation rows
 * (their logits in t->val_z) is at least the target, and e's counts there. */
static void calibrate(struct trainer *t, uint32_t l, struct predictor_layer_eval *e)
{
    uint32_t f = t->s->d_ff;
    size_t npos = 0, cells = t->n_val * f;
    for (size_t r = 0; r < t->n_val; r++) {
        const uint64_t *bits = samples_bits(t->s, l, t->n_train + r);
        for (uint32_t i = 0; i < f; i++)
            if (samples_active(bits, i))
                t->val_pos[npos++] = t->val_z[r * f + i];
    }
    float cut = INFINITY; /* nothing fired: predict nothing */
    if (npos) {
        size_t k = (size_t)ceil(t->c->target_recall * (double)npos - 1e-9);
        k = k < 1 ? 1 : k > npos ? npos : k;
        qsort(t->val_pos, npos, sizeof *t->val_pos, descending);
        cut = nextafterf(t->val_pos[k - 1], -INFINITY);
    }
    uint64_t counts[3] = {0, 0, 0}; /* TP, FP, FN */
    for (size_t i = 0; i < npos; i++)
        counts[0] += t->val_pos[i] > cut;
    counts[2] = npos - counts[0];
    for (size_t i = 0; i < cells; i++)
        counts[1] += t->val_z[i] > cut;
    counts[1] -= counts[0];
    fill_eval(e, e->loss * (double)cells, counts, t->n_val, f);
    e->threshold = predictor_threshold_of_logit(cut);
}

/* Layer l on the validation rows. */
static void validate(struct trainer *t, uint32_t l, struct predictor_layer_eval *e)
{
    struct job j = job_for(t, l, false);
    double loss = 0;
    uint64_t counts[3] = {0, 0, 0};
    for (size_t at = 0; at < t->n_val; at += t->w.cap) {
        size_t n = t->n_val - at < t->w.cap ? t->n_val - at : t->w.cap;
        for (size_t i = 0; i < n; i++)
            t->w.rows[i] = t->n_train + at + i;
        run_batch(t->pool, &j, n, 0, 1);
        add_batch(&t->w, n, &loss, counts);
        if (t->val_z)
            memcpy(t->val_z + at * j.f, t->w.z, n * j.f * sizeof(float));
    }
    fill_eval(e, loss, counts, t->n_val, t->s->d_ff);
    e->threshold = t->p->layers[l].threshold;
    if (t->val_z)
        calibrate(t, l, e);
}

static void shuffle(size_t *perm, size_t n, struct rng *r)
{
    for (size_t i = 0; i < n; i++)
        perm[i] = i;
    for (size_t i = n; i > 1; i--) {
        size_t k = (size_t)rng_below(r, i);
        size_t v = perm[i - 1];
        perm[i - 1] = perm[k], perm[k] = v;
    }
}

/* One epoch of layer l; 1 if interrupted (the epoch is then incomplete). */
static int train_epoch(struct trainer *t, uint32_t l, double *mean_loss)
{
    struct job j = job_for(t, l, true);
    shuffle(t->w.perm, t->n_train, &t->layers[l].rng);
    double loss = 0;
    uint64_t counts[3] = {0, 0, 0};
    for (size_t at = 0; at < t->n_train; at += t->w.cap) {
        if (interrupted())
            return 1;
        size_t n = t->n_train - at < t->w.cap ? t->n_train - at : t->w.cap;
        memcpy(t->w.rows, t->w.perm + at, n * sizeof *t->w.rows);
        run_batch(t->pool, &j, n, t->c->lr, t->layer_steps);
        add_batch(&t->w, n, &loss, counts);
        if (t->c->on_step)
            t->c->on_step(t->c->ctx, ++t->steps_done, t->steps_total);
    }
    *mean_loss = loss / ((double)t->n_train * t->s->d_ff);
    return 0;
}

/* Validates every layer after epoch e, keeping improvements, and reports. */
static void close_epoch(struct trainer *t, uint32_t e, const double *train_loss, struct predictor_layer_eval *val,
                        bool *improved, uint64_t t0)
{
    for (uint32_t l = 0; l < t->s->n_layers; l++) {
        struct layer_state *L = &t->layers[l];
        validate(t, l, &val[l]);
        /* with a target recall, the density it costs; else the loss */
        double score = t->val_z ? val[l].predicted_density : val[l].loss;
        improved[l] = e == 0 || score < L->best_score;
        if (improved[l]) {
            L->best_score = score, L->best_epoch = e, L->best_eval = val[l];
            memcpy(L->best, L->theta, L->n_params * sizeof *L->best);
        }
    }
    struct predictor_epoch_report rep = {.epoch = e, .n_layers = t->s->n_layers, .train_loss = train_loss,
                                         .val = val, .improved = improved,
                                         .seconds = (double)(now_ns() - t0) * 1e-9};
    if (t->c->on_epoch)
        t->c->on_epoch(t->c->ctx, &rep);
}

/* ---- set-up ---- */

static uint64_t layer_seed(uint64_t seed, uint32_t layer)
{
    uint64_t x = seed ^ (0x9e3779b97f4a7c15ull * (layer + 1));
    return rng_splitmix(&x);
}

/* negatives / positives over the training rows of layer l. */
static double pos_weight(const struct predictor_samples *s, uint32_t l, size_t n_train)
{
    uint64_t pos = 0;
    for (size_t r = 0; r < n_train; r++) {
        const uint64_t *bits = samples_bits(s, l, r);
        for (size_t k = 0; k < s->words; k++)
            pos += (uint64_t)__builtin_popcountll(bits[k]);
    }
    uint64_t cells = (uint64_t)n_train * s->d_ff;
    return pos && pos < cells ? (double)(cells - pos) / (double)pos : 1.0;
}

static int layer_init(struct trainer *t, uint32_t l)
{
    const struct predictor *p = t->p;
    struct layer_state *L = &t->layers[l];
    L->rank = p->layers[l].rank;
    L->n_params = (size_t)L->rank * (p->d_model + p->d_ff) + p->d_ff;
    L->theta = calloc(6 * L->n_params, sizeof *L->theta);
    if (!L->theta)
        return -1;
    L->grad = L->theta + L->n_params, L->m1 = L->grad + L->n_params, L->m2 = L->m1 + L->n_params;
    L->best = L->m2 + L->n_params, L->at = L->best + L->n_params, L->bt = L->at + (size_t)L->rank * p->d_model;
    float *a = L->theta, *b = a + (size_t)L->rank * p->d_model, *c = b + (size_t)p->d_ff * L->rank;
    predictor_get_layer(p, l, a, b, c);
    L->pos_weight = pos_weight(t->s, l, t->n_train);
    rng_seed(&L->rng, layer_seed(t->c->seed, l));
    struct job j = job_for(t, l, false); /* not training: the update only transposes */
    threadpool_run(t->pool, job_update, &j);
    return 0;
}

static int workspace_init(struct workspace *w, size_t cap, uint32_t d, uint32_t f, uint32_t r, size_t n_train)
{
    w->cap = cap;
    w->rows = malloc(cap * sizeof *w->rows);
    w->x = malloc(cap * d * sizeof *w->x);
    w->y = malloc(cap * f * sizeof *w->y);
    w->h = malloc(cap * r * sizeof *w->h);
    w->dh = malloc(cap * r * sizeof *w->dh);
    w->z = malloc(cap * f * sizeof *w->z);
    w->row_loss = malloc(cap * sizeof *w->row_loss);
    w->row_counts = malloc(cap * sizeof *w->row_counts);
    w->perm = malloc((n_train ? n_train : 1) * sizeof *w->perm);
    return w->rows && w->x && w->y && w->h && w->dh && w->z && w->row_loss && w->row_counts && w->perm ? 0 : -1;
}

static void workspace_free(struct workspace *w)
{
    free(w->rows), free(w->x), free(w->y), free(w->h), free(w->dh), free(w->z);
    free(w->row_loss), free(w->row_counts), free(w->perm);
}

static void trainer_free(struct trainer *t)
{
    if (t->layers)
        for (uint32_t l = 0; l < t->s->n_layers; l++)
            free(t->layers[l].theta);
    free(t->layers);
    workspace_free(&t->w);
    free(t->val_z);
    free(t->val_pos);
    threadpool_destroy(t->pool);
}

static int trainer_init(struct trainer *t, char *err, size_t errlen)
{
    const struct predictor_samples *s = t->s;
    t->n_val = predictor_holdout_rows(s->n_rows, t->c->holdout);
    t->n_train = s->n_rows - t->n_val;
    if (t->n_val < 1 || t->n_train < 1)
        return err_set(err, errlen, "%zu rows of samples cannot be split into training and validation rows",
                       s->n_rows);
    size_t cap = t->c->batch < t->n_train ? t->c->batch : t->n_train;
    if (cap < 1)
        return err_set(err, errlen, "a mini-batch needs at least one row");
    t->layers = calloc(s->n_layers ? s->n_layers : 1, sizeof *t->layers);
    t->pool = threadpool_create(t->c->threads < 1 ? 1 : t->c->threads);
    int rc = t->layers && t->pool ? 0 : -1;
    if (rc == 0)
        rc = workspace_init(&t->w, cap, s->d_model, s->d_ff, predictor_max_rank(t->p), t->n_train);
    if (rc == 0 && t->c->target_recall > 0) {
        t->val_z = malloc(t->n_val * s->d_ff * sizeof *t->val_z);
        t->val_pos = malloc(t->n_val * s->d_ff * sizeof *t->val_pos);
        rc = t->val_z && t->val_pos ? 0 : -1;
    }
    for (uint32_t l = 0; rc == 0 && l < s->n_layers; l++)
        rc = layer_init(t, l);
    t->layer_steps = (uint64_t)t->c->epochs * ((t->n_train + cap - 1) / cap);
    t->steps_total = t->layer_steps * s->n_layers;
    return rc == 0 ? 0 : err_set(err, errlen, "predictor training: out of memory");
}

static int result_init(struct predictor_train_result *r, const struct trainer *t)
{
    uint32_t n = t->s->n_layers;
    *r = (struct predictor_train_result){.n_layers = n, .train_rows = t->n_train, .val_rows = t->n_val};
    r->pos_weight = calloc(n ? n : 1, sizeof *r->pos_weight);
    r->best_epoch = calloc(n ? n : 1, sizeof *r->best_epoch);
    r->best = calloc(n ? n : 1, sizeof *r->best);
    return r->pos_weight && r->best_epoch && r->best ? 0 : -1;
}

/* The kept epochs into p and r. */
static void finish(struct trainer *t, struct predictor_train_result *r)
{
    const struct predictor *p = t->p;
    for (uint32_t l = 0; l < t->s->n_layers; l++) {
        struct layer_state *L = &t->layers[l];
        float *a = L->best, *b = a + (size_t)L->rank * p->d_model, *c = b + (size_t)p->d_ff * L->rank;
        predictor_set_layer(t->p, l, a, b, c);
        if (t->val_z)
            t->p->layers[l].threshold = L->best_eval.threshold;
        r->pos_weight[l] = L->pos_weight;
        r->best_epoch[l] = L->best_epoch;
        r->best[l] = L->best_eval;
    }
}

/* Epochs 0 (validation of the start) to c->epochs. */
static void epochs(struct trainer *t, struct predictor_train_result *r, double *train_loss,
                   struct predictor_layer_eval *val, bool *improved)
{
    uint32_t nl = t->s->n_layers;
    for (uint32_t l = 0; l < nl; l++)
        train_loss[l] = NAN;
    close_epoch(t, 0, train_loss, val, improved, now_ns());
    for (uint32_t e = 1; e <= t->c->epochs && !r->interrupted; e++) {
        uint64_t t0 = now_ns();
        for (uint32_t l = 0; l < nl && !r->interrupted; l++)
            r->interrupted = train_epoch(t, l, &train_loss[l]) != 0;
        if (r->interrupted)
            break;
        close_epoch(t, e, train_loss, val, improved, t0);
        r->epochs_run = e;
    }
}

int predictor_train(struct predictor *p, const struct predictor_samples *s, const struct predictor_train_config *c,
                    struct predictor_train_result *r, char *err, size_t errlen)
{
    memset(r, 0, sizeof *r);
    if (!(c->target_recall >= 0 && c->target_recall <= 1))
        return err_set(err, errlen, "target recall %g is not in (0, 1]", c->target_recall);
    if (p->n_layers != s->n_layers || p->d_model != s->d_model || p->d_ff != s->d_ff)
        return err_set(err, errlen, "the predictor's shape (%u x %u x %u) is not the samples' (%u x %u x %u)",
                       p->n_layers, p->d_model, p->d_ff, s->n_layers, s->d_model, s->d_ff);
    uint64_t t0 = now_ns();
    struct trainer t = {.s = s, .c = c, .p = p};
    int rc = trainer_init(&t, err, errlen);
    uint32_t nl = s->n_layers ? s->n_layers : 1;
    double *train_loss = calloc(nl, sizeof *train_loss);
    struct predictor_layer_eval *val = calloc(nl, sizeof *val);
    bool *improved = calloc(nl, sizeof *improved);
    if (rc == 0 && (result_init(r, &t) != 0 || !train_loss || !val || !improved))
        rc = err_set(err, errlen, "predictor training: out of memory");
    if (rc == 0) {
        epochs(&t, r, train_loss, val, improved);
        finish(&t, r);
        if (c->target_recall > 0)
            p->target_recall = c->target_recall;
        r->seconds = (double)(now_ns() - t0) * 1e-9;
    } else
        predictor_train_result_free(r);
    free(train_loss), free(val), free(improved);
    trainer_free(&t);
    return rc;
}

void predictor_train_result_free(struct predictor_train_result *r)
{
    free(r->pos_weight);
    free(r->best_epoch);
    free(r->best);
    memset(r, 0, sizeof *r);
}

size_t predictor_holdout_rows(size_t n, double holdout)
{
    if (n < 2)
        return 0;
    size_t k = (size_t)ceil((double)n * holdout);
    return k < 1 ? 1 : k > n - 1 ? n - 1 : k;
}
