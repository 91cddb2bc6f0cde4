/* Predictor training (engine/training/predictor_train.h) on a planted problem:
 * x ~ N(0, I), labels = the logits of a known rank-r predictor > 0. From a
 * random start, training recovers it: marking per neuron as many rows as
 * truly fired (the planted density), recall >= 0.99; at threshold 0.5,
 * recall >= 0.99 marking at most 1.5x the true density (the balanced loss
 * over-predicts by design). In about a second on one thread. The weights
 * are bit-identical for a seed, run twice and across thread counts;
 * Ctrl-C keeps the best epoch so far; with a target recall each layer's
 * threshold is the highest reaching it on the validation rows (checked
 * against logits recomputed in double) and the kept epoch is the one
 * predicting fewest neurons there; the per-layer rank syntax and the
 * hold-out split. */
#include "check.h"

#include <math.h>
#include <stdbool.h>
#include <signal.h>
#include <stdlib.h>

#include "common/interrupt.h"
#include "common/rng.h"
#include "engine/predictor/predictor.h"
#include "engine/predictor/predictor_init.h"
#include "engine/predictor/predictor_ranks.h"
#include "engine/training/predictor_samples.h"
#include "engine/training/predictor_train.h"

enum { LAYERS = 2, D = 16, F = 48, R = 2, ROWS = 8000 };

static double gauss(struct rng *r)
{
    double u1 = rng_unit(r), u2 = rng_unit(r);
    return sqrt(-2 * log(1 - u1)) * cos(6.283185307179586 * u2);
}

/* Samples from a planted rank-R predictor per layer; neuron i's logit
 * b_i . h is about N(0, |b_i|^2) (h = A x ~ N(0, I)), so a bias of
 * -quantile |b_i| makes it fire with the normal tail's probability beyond
 * quantile (1.2816: 10%). Returns the true density over all rows. */
static double plant(struct predictor_samples *s, size_t rows, double quantile, uint64_t seed)
{
    char err[256];
    CHECK(predictor_samples_alloc(s, LAYERS, D, F, rows, err, sizeof err) == 0);
    struct rng r;
    rng_seed(&r, seed);
    static float a[R * D], b[F * R], bias[F], x[D];
    uint8_t active[F];
    uint64_t fired = 0;
    for (int l = 0; l < LAYERS; l++) {
        for (int i = 0; i < R * D; i++)
            a[i] = (float)(gauss(&r) / sqrt(D));
        for (int i = 0; i < F * R; i++)
            b[i] = (float)gauss(&r);
        for (int i = 0; i < F; i++) {
            double norm = 0;
            for (int k = 0; k < R; k++)
                norm += (double)b[i * R + k] * b[i * R + k];
            bias[i] = (float)(-quantile * sqrt(norm));
        }
        for (size_t row = 0; row < rows; row++) {
            for (int t = 0; t < D; t++)
                x[t] = (float)gauss(&r);
            float h[R];
            for (int k = 0; k < R; k++) {
                h[k] = 0;
                for (int t = 0; t < D; t++)
                    h[k] += a[k * D + t] * x[t];
            }
            for (int i = 0; i < F; i++) {
                float z = bias[i];
                for (int k = 0; k < R; k++)
                    z += b[i * R + k] * h[k];
                active[i] = z > 0;
                fired += active[i];
            }
            predictor_samples_put(s, (uint32_t)l, row, x, active);
        }
    }
    return (double)fired / ((double)LAYERS * rows * F);
}

static void random_start(struct predictor *p, uint64_t seed)
{
    char err[256];
    uint32_t ranks[LAYERS] = {R, R};
    CHECK(predictor_alloc(p, LAYERS, D, F, ranks, DTYPE_F32, err, sizeof err) == 0);
    /* predictor_init's random start draws from no model: the model argument is not read */
    CHECK(predictor_init_weights(p, NULL, PREDICTOR_INIT_RANDOM, seed, PREDICTOR_SVD_ITERATIONS, 1, err, sizeof err) == 0);
}

static int by_logit_desc(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Neuron i's logit on a sample row, in double from the predictor's weights. */
static double logit(const float *a, const float *b, const float *bias, const float *x, int i)
{
    double z = bias[i];
    for (int k = 0; k < R; k++) {
        double h = 0;
        for (int t = 0; t < D; t++)
            h += (double)a[k * D + t] * x[t];
        z += (double)b[i * R + k] * h;
    }
    return z;
}

/* Recall on the validation rows when each neuron is predicted on as many
 * rows as it truly fired, those of its highest logits: how well the
 * predictor ranks, whatever the threshold and each neuron's scale. A
 * recovered predictor scores 1. */
static double recall_at_density(const struct predictor *p, const struct predictor_samples *s, int l, size_t from)
{
    static float a[R * D], b[F * R], bias[F];
    predictor_get_layer(p, (uint32_t)l, a, b, bias);
    size_t n = ROWS - from, positives = 0, hit = 0;
    double (*pairs)[2] = malloc(n * sizeof *pairs);
    for (int i = 0; i < F; i++) {
        size_t fired = 0;
        for (size_t row = from; row < ROWS; row++) {
            bool y = samples_active(samples_bits(s, (uint32_t)l, row), (uint32_t)i);
            pairs[row - from][0] = logit(a, b, bias, samples_x(s, (uint32_t)l, row), i);
            pairs[row - from][1] = y;
            fired += y;
        }
        qsort(pairs, n, sizeof *pairs, by_logit_desc);
        for (size_t k = 0; k < fired; k++)
            hit += pairs[k][1] > 0;
        positives += fired;
    }
    free(pairs);
    return positives ? (double)hit / (double)positives : 1.0;
}

static struct predictor_train_config config(int threads)
{
    return (struct predictor_train_config){.epochs = 30, .batch = 64, .lr = 0.05, .seed = 4, .threads = threads,
                                           .holdout = 0.1};
}

static void test_planted(const struct predictor_samples *s)
{
    struct predictor p;
    random_start(&p, 1);
    struct predictor_train_config c = config(1);
    struct predictor_train_result r;
    char err[256];
    CHECK(predictor_train(&p, s, &c, &r, err, sizeof err) == 0);
    CHECK_U64(r.epochs_run, c.epochs);
    CHECK_U64(r.val_rows, ROWS / 10);
    CHECK(!r.interrupted);
    printf("trained in %.2f s\n", r.seconds);
    for (int l = 0; l < LAYERS; l++) {
        double at_density = recall_at_density(&p, s, l, ROWS - r.val_rows);
        printf("layer %d: recall %.4f at the planted density, %.4f at threshold 0.5 (predicted %.4f, true %.4f), "
               "kept epoch %u, loss %.4f\n", l, at_density, r.best[l].recall, r.best[l].predicted_density,
               r.best[l].true_density, r.best_epoch[l], r.best[l].loss);
        CHECK(at_density >= 0.99);
        CHECK(r.best[l].recall >= 0.99);
        CHECK(r.best[l].predicted_density <= 1.5 * r.best[l].true_density);
        CHECK(r.best_epoch[l] > 0);
        double d = r.best[l].true_density; /* the validation rows' density, near the training rows' */
        CHECK(fabs(r.pos_weight[l] - (1 - d) / d) < 0.3 * (1 - d) / d);
    }
    predictor_train_result_free(&r);
    predictor_free(&p);
}

/* Trains from the same start with the given threads; the weights (caller frees). */
static void *train_bits(const struct predictor_samples *s, int threads, uint32_t epochs, size_t *bytes)
{
    struct predictor p;
    random_start(&p, 2);
    struct predictor_train_config c = config(threads);
    c.epochs = epochs;
    struct predictor_train_result r;
    char err[256];
    CHECK(predictor_train(&p, s, &c, &r, err, sizeof err) == 0);
    predictor_train_result_free(&r);
    void *copy = malloc(p.mem_bytes);
    memcpy(copy, p.mem, p.mem_bytes);
    *bytes = p.mem_bytes;
    predictor_free(&p);
    return copy;
}

static void test_determinism(const struct predictor_samples *s)
{
    size_t n1, n2, n3, n4;
    void *a = train_bits(s, 2, 3, &n1), *b = train_bits(s, 2, 3, &n2);
    void *c = train_bits(s, 1, 3, &n3), *d = train_bits(s, 3, 3, &n4);
    CHECK(n1 == n2 && memcmp(a, b, n1) == 0); /* same seed and threads: the same bits */
    CHECK(n1 == n3 && memcmp(a, c, n1) == 0); /* and across thread counts */
    CHECK(n1 == n4 && memcmp(a, d, n1) == 0);
    free(a), free(b), free(c), free(d);
}

struct densities {
    double at[LAYERS][8];
};

static void record_density(void *ctx, const struct predictor_epoch_report *r)
{
    struct densities *d = ctx;
    for (uint32_t l = 0; l < r->n_layers && r->epoch < 8; l++)
        d->at[l][r->epoch] = r->val[l].predicted_density;
}

static void test_target_recall(const struct predictor_samples *s)
{
    const double target = 0.9;
    struct predictor p;
    random_start(&p, 3);
    struct predictor_train_config c = config(2);
    struct densities seen = {0};
    c.epochs = 5, c.target_recall = target, c.on_epoch = record_density, c.ctx = &seen;
    struct predictor_train_result r;
    char err[256];
    CHECK(predictor_train(&p, s, &c, &r, err, sizeof err) == 0);
    CHECK(p.target_recall == target && r.epochs_run == c.epochs);
    size_t from = s->n_rows - r.val_rows;
    for (int l = 0; l < LAYERS; l++) {
        const struct predictor_layer_eval *e = &r.best[l];
        CHECK(p.layers[l].threshold == e->threshold && e->threshold > 0 && e->threshold < 1);
        /* the highest threshold reaching the target: one positive fewer would miss it */
        double npos = e->true_density * (double)r.val_rows * F;
        CHECK(e->recall >= target && (e->recall * npos - 1) / npos < target);
        /* the kept epoch predicts fewest neurons at the target */
        for (uint32_t k = 0; k <= c.epochs; k++)
            CHECK(seen.at[l][r.best_epoch[l]] <= seen.at[l][k]);
        /* the recall and density again, from logits recomputed in double at p's threshold */
        static float a[R * D], b[F * R], bias[F];
        predictor_get_layer(&p, (uint32_t)l, a, b, bias);
        double cut = log(e->threshold / (1 - e->threshold));
        size_t tp = 0, fired = 0, marked = 0;
        for (size_t row = from; row < s->n_rows; row++)
            for (int i = 0; i < F; i++) {
                bool y = samples_active(samples_bits(s, (uint32_t)l, row), (uint32_t)i);
                bool m = logit(a, b, bias, samples_x(s, (uint32_t)l, row), i) > cut;
                fired += y, marked += m, tp += y && m;
            }
        CHECK(fabs((double)tp / (double)fired - e->recall) <= 2.0 / (double)fired);
        CHECK(fabs((double)marked / ((double)r.val_rows * F) - e->predicted_density) <= 2.0 / ((double)r.val_rows * F));
    }
    predictor_train_result_free(&r);
    /* out of range */
    c.target_recall = 1.5;
    CHECK(predictor_train(&p, s, &c, &r, err, sizeof err) == -1 && strstr(err, "target recall"));
    predictor_free(&p);
}

/* SIGINT from the epoch callback after epoch 2: training stops there and
 * keeps the best of epochs 0..2. */
static void raise_after_two(void *ctx, const struct predictor_epoch_report *r)
{
    (void)ctx;
    if (r->epoch == 2)
        raise(SIGINT);
}

static void test_interrupt(const struct predictor_samples *s)
{
    interrupt_install();
    struct predictor p;
    random_start(&p, 1);
    struct predictor_train_config c = config(1);
    c.on_epoch = raise_after_two;
    struct predictor_train_result r;
    char err[256];
    CHECK(predictor_train(&p, s, &c, &r, err, sizeof err) == 0);
    CHECK(r.interrupted);
    CHECK_U64(r.epochs_run, 2);
    for (int l = 0; l < LAYERS; l++)
        CHECK(r.best_epoch[l] <= 2);
    predictor_train_result_free(&r);
    predictor_free(&p);
}

static void test_ranks(void)
{
    uint32_t ranks[32];
    char err[256];
    CHECK(predictor_ranks_parse("28-31:1024,0:64", 128, 32, 2048, ranks, err, sizeof err) == 0);
    CHECK(ranks[0] == 64 && ranks[1] == 128 && ranks[27] == 128 && ranks[28] == 1024 && ranks[31] == 1024);
    CHECK(predictor_ranks_parse(NULL, 16, 4, 64, ranks, err, sizeof err) == 0 && ranks[3] == 16);
    CHECK(predictor_ranks_parse("1-2:8,2:4", 16, 4, 64, ranks, err, sizeof err) == 0 && ranks[1] == 8 && ranks[2] == 4);
    const char *bad[] = {"28-31", "x:4", "3:", "3:4,", "5:4", "2-1:4", "0:65", "0:0", "1-:3", "0:4x", ",0:4", NULL};
    for (int i = 0; bad[i]; i++) {
        int rc = predictor_ranks_parse(bad[i], 16, 4, 64, ranks, err, sizeof err);
        CHECK(rc == -1);
        if (rc != -1)
            fprintf(stderr, "accepted '%s'\n", bad[i]);
    }
    CHECK(predictor_ranks_parse("5:4", 16, 4, 64, ranks, err, sizeof err) == -1 && strstr(err, "past the model's last (3)"));
    CHECK(predictor_ranks_parse(NULL, 65, 4, 64, ranks, err, sizeof err) == -1 && strstr(err, "rank 65"));
    CHECK_U64(predictor_holdout_rows(100, 0.1), 10);
    CHECK_U64(predictor_holdout_rows(10, 0.01), 1);
    CHECK_U64(predictor_holdout_rows(2, 0.5), 1);
    CHECK_U64(predictor_holdout_rows(1, 0.5), 0);
}

int main(void)
{
    struct predictor_samples s, small;
    double density = plant(&s, ROWS, 1.2816, 11);
    printf("planted density %.4f\n", density);
    CHECK(density > 0.06 && density < 0.12);
    test_planted(&s);
    predictor_samples_free(&s);
    /* a smaller problem for what runs several times, threads included */
    plant(&small, 600, 1.2816, 12);
    test_determinism(&small);
    test_target_recall(&small);
    test_interrupt(&small); /* last: a process stays interrupted */
    predictor_samples_free(&small);
    test_ranks();
    return check_report("test_predictor_train");
}
