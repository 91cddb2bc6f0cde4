/* Issue 31's matrix: the flash FFN on a device whose memory is not the
 * host's against the cpu backend, for every mode (naive, hybrid,
 * predictor, window, all) x every neuron source (the oracle, a trace's
 * true sets, its predicted sets, an activation predictor, the gate on a
 * GLU model), plain, with --check and with --record, and each source under
 * budgets that move rows (matrix_fixture.h), on a synthetic OPT (ReLU,
 * biases, learned positions) and a llama with FATReLU (GLU, GQA):
 *   - per token, what device_run_fixture.h compares: the same greedy token,
 *     on sim the same logits bit for bit (elsewhere within 1e-4 of cpu's
 *     scale), the same reads (bytes, reads), rows inserted, row moves,
 *     neurons needed and --check's counts, and uploads exactly what the
 *     policy's insertions imply;
 *   - a recorded trace on the device is byte for byte the cpu's;
 *   - the paths are exercised: every source inserts rows, the budgets move
 *     rows, --check finds the true sets, and the trace's and the
 *     predictor's choices apart from them;
 *   - the cpu runs read ahead (flash_run_fixture.h asks for it) where the
 *     sets are known before a layer's input: layers go ahead under the
 *     trace's sets, never under the oracle, the predictor or the gate,
 *     never on the device — so every comparison above is also
 *     read-ahead's against the layer-by-layer path.
 * Usage: test_ffn_flash_matrix BACKEND (sim, opencl, cuda); a backend that
 * cannot start here exits 77 (sim always starts). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "device_run_fixture.h"
#include "flash_run_fixture.h"
#include "matrix_fixture.h"

enum { MAX_CASES = 128 };

/* What the runs exercised, per source. */
struct tally {
    uint64_t rows[MX_SOURCES], moves[MX_SOURCES];
    uint64_t active[MX_SOURCES], off[MX_SOURCES]; /* --check's truly active, and missed + extra */
    uint64_t ahead[MX_SOURCES], dev_ahead;         /* layers read ahead: on cpu, on the device */
    int cases, records;
};

/* Whole file a, b: equal bytes. */
static bool same_file(const char *a, const char *b)
{
    FILE *fa = fopen(a, "rb"), *fb = fopen(b, "rb");
    bool same = fa && fb;
    for (int ca = 0, cb = 0; same && ca != EOF; same = ca == cb) {
        ca = fgetc(fa);
        cb = fgetc(fb);
    }
    if (fa)
        fclose(fa);
    if (fb)
        fclose(fb);
    return same;
}

/* The device run's tokens against the cpu run's; the tally grows. */
static void compare_runs(const struct mx_case *c, const struct model *m, const struct watch *dev,
                         const struct watch *cpu, bool exact, struct tally *t)
{
    bool bias = m->layers[0].ffn_up_bias != NULL;
    uint64_t bundle = m->bundle_stride + (bias ? sizeof(float) : 0);
    char what[300];
    CHECK_U64(dev->n, cpu->n);
    for (int i = 0; i < dev->n && i < cpu->n; i++) {
        snprintf(what, sizeof what, "%s, token %d", c->what, i);
        compare_token(what, &dev->t[i], &cpu->t[i], dev->vocab, exact, bundle, m->bundle_stride);
        t->rows[c->source] += (uint64_t)dev->t[i].r.rows_inserted;
        t->moves[c->source] += (uint64_t)dev->t[i].r.row_moves;
        t->ahead[c->source] += (uint64_t)cpu->t[i].r.layers_ahead;
        t->dev_ahead += (uint64_t)dev->t[i].r.layers_ahead;
        if (c->rc.check) {
            t->active[c->source] += (uint64_t)dev->t[i].r.active;
            t->off[c->source] += (uint64_t)(dev->t[i].r.missed + dev->t[i].r.extra);
        }
    }
}

/* Case c of x on be against cpu; 77 when be cannot start here, else 0. */
static int compare_case(const struct backend_ops *be, const struct mx_model *x, const struct mx_case *c,
                        const int *prompt, struct tally *t)
{
    struct watch *dev = calloc(1, sizeof *dev), *cpu = calloc(1, sizeof *cpu);
    char err[1024], rec_cpu[700], rec_dev[700];
    snprintf(rec_cpu, sizeof rec_cpu, "%s/cpu.trace", x->tmp);
    snprintf(rec_dev, sizeof rec_dev, "%s/dev.trace", x->tmp);
    int rc = 0;
    CHECK(dev && cpu);
    if (dev && cpu)
        CHECK(run_on_rec(&backend_cpu, &x->flash, &c->rc, prompt, c->record ? rec_cpu : NULL, cpu, err, sizeof err) ==
              0);
    if (dev && cpu &&
        run_on_rec(be, &x->flash, &c->rc, prompt, c->record ? rec_dev : NULL, dev, err, sizeof err) != 0) {
        printf("test_ffn_flash_matrix: %s cannot start here (%s): skipped\n", be->name, err);
        rc = 77;
    } else if (dev && cpu) {
        compare_runs(c, &x->flash, dev, cpu, strcmp(be->name, "sim") == 0, t);
        compare_memory(dev, cpu);
        if (c->record && !same_file(rec_dev, rec_cpu))
            fprintf(stderr, "%s: the device's recorded trace is not the cpu's\n", c->what);
        CHECK(!c->record || same_file(rec_dev, rec_cpu));
        t->records += c->record;
        t->cases++;
    }
    if (cpu)
        watch_free(cpu);
    if (dev)
        watch_free(dev);
    free(cpu);
    free(dev);
    return rc;
}

/* Every case of shape's model on be; 77 when be cannot start here. */
static int run_shape(const struct backend_ops *be, const char *shape, struct tally *t)
{
    struct mx_model x;
    char err[1024];
    if (mx_open(shape, &x, err, sizeof err) != 0) {
        fprintf(stderr, "%s: %s\n", shape, err);
        CHECK(false);
        return 0;
    }
    static struct mx_case cases[MAX_CASES];
    int n = mx_cases(&x, cases, MAX_CASES), rc = 0;
    CHECK(n < MAX_CASES);
    int prompt[N_PROMPT] = {x.dense.bos_id, 300, 421, 77, 12};
    for (int k = 0; rc == 0 && k < n; k++)
        rc = compare_case(be, &x, &cases[k], prompt, t);
    /* every source of the model chose rows; --check found the true sets,
     * and where a trace or the predictor chose, sets apart from them (the
     * gate's choice on a FATReLU GLU is the true set) */
    for (int s = 0; rc == 0 && s < MX_SOURCES; s++) {
        bool used = s != MX_GATE || x.glu;
        CHECK(!used || t->rows[s] > 0);
        CHECK(!used || s == MX_ORACLE || t->active[s] > 0);
        CHECK(!used || s == MX_ORACLE || s == MX_GATE || t->off[s] > 0);
        bool traced = s == MX_TRACE_ACTIVE || s == MX_TRACE_PREDICTED;
        CHECK(!used || (traced ? t->ahead[s] > 0 : t->ahead[s] == 0));
    }
    CHECK_U64(t->dev_ahead, 0);
    mx_close(&x);
    return rc;
}

int main(int argc, char **argv)
{
    const struct backend_ops *be = backend_arg(argc, argv);
    if (!be)
        return 2;
    static const char *const shapes[] = {"opt-tiny", "llama-relu-tiny"};
    int rc = 0;
    for (size_t k = 0; rc == 0 && k < sizeof shapes / sizeof shapes[0]; k++) {
        struct tally t = {0};
        rc = run_shape(be, shapes[k], &t);
        uint64_t moves = 0;
        for (int s = 0; s < MX_SOURCES; s++)
            moves += t.moves[s];
        CHECK(rc != 0 || moves > 0);
        if (rc == 0)
            printf("test_ffn_flash_matrix %s, %s: %d cases (%d recorded), %llu row moves\n", be->name, shapes[k],
                   t.cases, t.records, (unsigned long long)moves);
    }
    if (rc == 77 && strcmp(be->name, "sim") != 0)
        return 77;
    return check_report("test_ffn_flash_matrix");
}
