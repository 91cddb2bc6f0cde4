/* The mode x source matrix that the flash-FFN-on-a-device tests run
 * (test_ffn_flash_matrix, test_device_terms), over a small model of a given
 * shape:
 *
 *   mx_open     a model folder of a configs/models shape (opt-tiny as
 *               fixture_opt_tiny makes it, any other through arch_fixture.h),
 *               with an activation predictor written into it (predictor_fixture.h's
 *               slice:16, which only partly agrees with the true sets: the
 *               predictor source), opened
 *               dense and with its FFN on flash, and a trace of its shape
 *               with predicted sets beside the true ones (the trace source,
 *               either set);
 *   mx_cases    every mode (naive, hybrid, predictor, window, all) x every
 *               source the mode takes (oracle, the trace's true sets, its
 *               predicted sets, the predictor, the gate on a GLU model; a
 *               chooser is refused beside a policy that reads whole
 *               layers) x plain, --check (not beside the oracle) and
 *               --record; and each source under a budget that moves rows
 *               (window:3 split, lru bundled);
 *   mx_reads_x  whether the host reads a layer's x on a device: what
 *               device_terms.h's host_reads_x means for a case.
 *
 * Tests only: failures are returned (-1 with err), nothing is printed. */
#ifndef FLASHBED_TEST_MATRIX_FIXTURE_H
#define FLASHBED_TEST_MATRIX_FIXTURE_H

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch_fixture.h"
#include "flash_run_fixture.h"
#include "model_fixture.h"
#include "predictor_fixture.h"

enum mx_source { MX_ORACLE, MX_TRACE_ACTIVE, MX_TRACE_PREDICTED, MX_PREDICTOR, MX_GATE, MX_SOURCES };
static const char *const mx_source_names[MX_SOURCES] = {"oracle", "trace (true sets)", "trace (predicted sets)",
                                                        "predictor", "gate"};

struct mx_model {
    char tmp[64], dir[600];
    const char *shape;
    struct model dense, flash;
    char trace[700], trace_spec[720]; /* the trace, and --active trace:FILE */
    bool glu;
};

struct mx_case {
    struct run_case rc;
    enum mx_source source;
    bool record;
    char what[200];
};

/* The arch fixture's model of shape name into dir (seed 7, up rows at
 * 2.5/sqrt(d_model), as fb_test_arch_model writes it). */
static inline int mx_arch_model(const char *name, const char *tmp, const char *dir, char *err, size_t errlen)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    struct fx_model f;
    char tok[700];
    if (model_shape_load(&set, name, &s, err, errlen) != 0)
        return -1;
    if (fx_init(&f, &s, 7, 2.5f) != 0) {
        fx_free(&f);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    snprintf(tok, sizeof tok, "%s/tokenizer.bin", tmp);
    int rc = fx_write_tokenizer(tok, s.vocab_size);
    if (rc != 0)
        snprintf(err, errlen, "%s: cannot write", tok);
    else
        rc = fx_write(&f, dir, DTYPE_F32, tok, err, errlen);
    fx_free(&f);
    return rc;
}

/* The trace: token t needs, in layer l, the neurons i with
 * (3i + 5t + 7l) mod 16 < 3 and is predicted to need those with
 * (3i + 5t + 7l + 1) mod 16 < 4 (partly the same). */
static inline int mx_write_trace(const char *path, const struct model *m, uint32_t n_tokens)
{
    return write_mod16_trace_as(path, m, n_tokens, (uint32_t)m->shape.ffn_kind, true);
}

/* The predictor source's predictor, written into x's folder. */
static inline int mx_write_predictor(struct mx_model *x, char *err, size_t errlen)
{
    struct predictor p;
    if (fixture_predictor(&x->dense, "slice:16", 1, &p, err, errlen) != 0)
        return -1;
    int rc = predictor_save(&p, x->dir, true, err, errlen);
    predictor_free(&p);
    return rc;
}

/* shape's model into a new temporary folder; 0, or -1 with err (x holds
 * nothing to close, but mx_close removes the folder). */
static inline int mx_open(const char *shape, struct mx_model *x, char *err, size_t errlen)
{
    memset(x, 0, sizeof *x);
    x->shape = shape;
    snprintf(x->tmp, sizeof x->tmp, "/tmp/flashbed-test-matrix-XXXXXX");
    struct model_shape s;
    int rc;
    if (strcmp(shape, "opt-tiny") == 0) {
        rc = fixture_opt_tiny(x->tmp, x->dir, sizeof x->dir, 5, 0.15, &s, err, errlen);
    } else if (!mkdtemp(x->tmp)) {
        snprintf(err, errlen, "mkdtemp %s failed", x->tmp);
        return -1;
    } else {
        snprintf(x->dir, sizeof x->dir, "%s/m", x->tmp);
        rc = mx_arch_model(shape, x->tmp, x->dir, err, errlen);
    }
    if (rc != 0 || model_open(&x->dense, x->dir, err, errlen) != 0)
        return -1;
    if (mx_write_predictor(x, err, errlen) != 0 ||
        model_open_flags(&x->flash, x->dir, MODEL_FFN_ON_FLASH, err, errlen) != 0) {
        model_close(&x->dense);
        return -1;
    }
    x->glu = x->flash.shape.ffn_kind == FFN_GLU;
    snprintf(x->trace, sizeof x->trace, "%s/sets.trace", x->tmp);
    snprintf(x->trace_spec, sizeof x->trace_spec, "trace:%s", x->trace);
    /* flash_run_fixture.h's, for a run_case that says only traced */
    snprintf(trace_path, sizeof trace_path, "%s", x->trace);
    snprintf(trace_active, sizeof trace_active, "%s", x->trace_spec);
    if (mx_write_trace(x->trace, &x->flash, MAX_SEQ) != 0) {
        snprintf(err, errlen, "%s: cannot write the trace", x->trace);
        return -1;
    }
    return 0;
}

static inline void mx_close(struct mx_model *x)
{
    model_close(&x->dense);
    model_close(&x->flash);
    fixture_remove(x->tmp);
}

/* Whether source src can choose under mode (a chooser cannot beside a
 * policy that reads whole layers; the gate needs a GLU model). */
static inline bool mx_takes(const struct mx_model *x, const char *mode, enum mx_source src)
{
    bool whole = !strcmp(mode, "naive") || !strcmp(mode, "hybrid");
    if (src == MX_GATE && !x->glu)
        return false;
    return !(whole && (src == MX_PREDICTOR || src == MX_GATE));
}

static inline void mx_fill(const struct mx_model *x, struct mx_case *c, enum mx_source src, bool check, bool record)
{
    static const char *const active[MX_SOURCES] = {"oracle", NULL, NULL, "predictor", "gate"};
    c->source = src;
    c->record = record;
    c->rc.active = active[src] ? active[src] : x->trace_spec;
    c->rc.traced = src == MX_TRACE_ACTIVE || src == MX_TRACE_PREDICTED;
    c->rc.use = src == MX_TRACE_ACTIVE ? "actual" : src == MX_TRACE_PREDICTED ? "predicted" : NULL;
    c->rc.check = check;
    snprintf(c->what, sizeof c->what, "%s: %s%s%s%s, %s%s%s", x->shape, c->rc.policy ? c->rc.policy : c->rc.mode,
             c->rc.layout ? " " : "", c->rc.layout ? c->rc.layout : "", c->rc.budget_pct ? " (budget)" : "",
             mx_source_names[src],
             check ? ", --check" : "", record ? ", --record" : "");
}

/* The matrix for x into out[0..max); the count. */
static inline int mx_cases(const struct mx_model *x, struct mx_case *out, int max)
{
    static const char *const modes[] = {"naive", "hybrid", "predictor", "window", "all"};
    static const struct run_case budgeted[] = {{"window", "window:3", "split", 45, false, NULL, NULL, false},
                                               {"all", "lru", "bundled", 45, false, NULL, NULL, false}};
    int n = 0;
    for (size_t k = 0; k < sizeof modes / sizeof modes[0]; k++)
        for (int src = 0; src < MX_SOURCES; src++)
            for (int v = 0; v < 3 && mx_takes(x, modes[k], (enum mx_source)src); v++) {
                if ((v == 1 && src == MX_ORACLE) || n >= max)
                    continue; /* --check beside the oracle is refused */
                out[n].rc = (struct run_case){modes[k], NULL, NULL, 0, false, NULL, NULL, false};
                mx_fill(x, &out[n], (enum mx_source)src, v == 1, v == 2);
                n++;
            }
    for (size_t k = 0; k < sizeof budgeted / sizeof budgeted[0]; k++)
        for (int src = 0; src < MX_SOURCES && n < max; src++) {
            if (!mx_takes(x, budgeted[k].mode, (enum mx_source)src))
                continue;
            out[n].rc = budgeted[k];
            mx_fill(x, &out[n], (enum mx_source)src, false, false);
            n++;
        }
    return n;
}

/* Whether the predictor chooses on the device (device_terms.h's
 * device_predictor): the predictor beside a policy that chooses. */
static inline bool mx_device_predictor(const struct mx_case *c)
{
    bool whole = !strcmp(c->rc.mode, "naive") || !strcmp(c->rc.mode, "hybrid");
    return !whole && c->source == MX_PREDICTOR;
}

/* Whether the host reads each layer's x (device_terms.h's host_reads_x):
 * a source that chooses on the host (the oracle, the gate; the predictor
 * runs on the device) beside a policy that chooses (not one that reads
 * whole layers), or the
 * true activations beside the choice, which --check asks for and a
 * trace-driven --record records (the oracle's own choice is them: beside
 * a policy that reads whole layers only the record reads them). */
static inline bool mx_reads_x(const struct mx_case *c)
{
    bool whole = !strcmp(c->rc.mode, "naive") || !strcmp(c->rc.mode, "hybrid");
    bool trace = c->rc.traced, oracle = c->source == MX_ORACLE;
    bool chooses = !whole && !trace && !mx_device_predictor(c);
    bool truth = oracle ? c->record && whole : c->rc.check || (c->record && trace);
    return chooses || truth;
}

#endif
