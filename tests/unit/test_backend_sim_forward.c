/* A whole forward pass on the sim backend gives the cpu backend's logits
 * bit for bit at every position: every architecture's tiny shape (OPT,
 * Llama, Falcon, Persimmon, Phi-2, FATReLU Llama) in f32 and f16, the
 * dense FFN on the device, a host FFN through the engine's pinned bridge
 * (download, wait, upload), every step on the thread team
 * (min_parallel_work 0) and with 2 threads, and once with an injected
 * delay before each command. The sim's counts are exact: one logits
 * download per position, one more per layer and position through the
 * bridge. A fault injected in the middle of a pass stops it with the
 * command named, and the engine is freed cleanly. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "arch_fixture.h"
#include "check.h"
#include "engine/compute/backend.h"
#include "engine/forward/engine.h"

static char why[1024];

enum { POSITIONS = 8, MAX_SEQ = 16 };
static const int toks[POSITIONS] = {1, 260, 265, 3, 269, 100, 7, 261};

/* The dense FFN computed on the host: the engine bridges it. */
static struct ffn_ops host_dense;

struct pass {
    const struct backend_ops *be;
    const struct ffn_ops *ffn;
    uint64_t delay_us, fail_at;
};

/* The logits of POSITIONS tokens into logits[POSITIONS * vocab]; the
 * backend's counts into c. 0, or -1 with the engine's error in why. */
static int forward(const struct model *m, const struct pass *p, float *logits, struct backend_counts *c)
{
    struct fb_settings set = fb_settings_defaults();
    set.min_parallel_work = 0;
    set.sim_delay_us = p->delay_us;
    set.sim_fail_at = p->fail_at;
    struct engine e;
    if (engine_init(&e, &set, m, p->be, p->ffn, 2, MAX_SEQ, why, sizeof why) != 0)
        return -1;
    size_t v = m->shape.vocab_size;
    int rc = 0;
    for (int i = 0; i < POSITIONS && rc == 0; i++) {
        rc = engine_forward(&e, toks[i], i);
        if (rc == 0)
            memcpy(logits + i * v, e.s.logits, v * sizeof *logits);
        else
            snprintf(why, sizeof why, "%s", e.err);
    }
    e.be_ops->counts(e.be, c);
    engine_free(&e);
    return rc;
}

/* Positions whose logits differ in any bit. */
static int differing(const float *a, const float *b, size_t v)
{
    int n = 0;
    for (int i = 0; i < POSITIONS; i++)
        n += memcmp(a + i * v, b + i * v, v * sizeof *a) != 0;
    return n;
}

/* The model folder of shape name in dtype t under tmp; 0, or -1. */
static int write_model(const char *tmp, const char *name, enum fb_dtype t, float ffn_scale, char *dir, size_t len)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    struct fx_model f;
    char tok[600];
    snprintf(dir, len, "%s/%s-%s", tmp, name, wtype_name(t));
    snprintf(tok, sizeof tok, "%s/tok-%s.bin", tmp, name);
    if (model_shape_load(&set, name, &s, why, sizeof why) != 0 || fx_init(&f, &s, 11, ffn_scale) != 0)
        return -1;
    int rc = fx_write_tokenizer(tok, s.vocab_size) || fx_write(&f, dir, t, tok, why, sizeof why) ? -1 : 0;
    fx_free(&f);
    unlink(tok);
    return rc;
}

static void compare(const char *tmp, const char *name, enum fb_dtype t, float ffn_scale, bool with_delay)
{
    char dir[700];
    struct model m;
    CHECK(write_model(tmp, name, t, ffn_scale, dir, sizeof dir) == 0);
    CHECK(model_open(&m, dir, why, sizeof why) == 0);
    size_t v = m.shape.vocab_size, n = POSITIONS * v, d = m.shape.d_model;
    float *want = malloc(n * sizeof *want), *got = malloc(n * sizeof *got);
    struct backend_counts c;
    CHECK(forward(&m, &(struct pass){&backend_cpu, &ffn_dense, 0, 0}, want, &c) == 0);
    size_t finite = 0;
    for (size_t i = 0; i < n; i++)
        finite += isfinite(want[i]) != 0;
    CHECK_U64(finite, n); /* bits compared are numbers (poison is NaN) */
    int differ = 0;
    const struct pass sims[] = {{&backend_sim, &ffn_dense, 0, 0}, {&backend_sim, &host_dense, 0, 0},
                                {&backend_sim, &ffn_dense, 20, 0}};
    for (int i = 0; i < (with_delay ? 3 : 2); i++) {
        memset(got, 0, n * sizeof *got);
        CHECK(forward(&m, &sims[i], got, &c) == 0);
        int diff = differing(got, want, v);
        if (diff)
            fprintf(stderr, "%s %s, %s FFN%s: %d positions differ from cpu\n", name, wtype_name(t),
                    sims[i].ffn->name, sims[i].delay_us ? ", delayed" : "", diff);
        CHECK(diff == 0);
        differ += diff;
        uint64_t bridged = sims[i].ffn == &host_dense ? (uint64_t)POSITIONS * m.shape.n_layers * d * 4 : 0;
        CHECK_U64(c.bytes_down, POSITIONS * v * 4 + bridged);
        CHECK_U64(c.bytes_moved, 0);
    }
    if (!differ)
        printf("%-16s %-4s: sim's logits are cpu's at %d positions\n", name, wtype_name(t), POSITIONS);
    free(want);
    free(got);
    model_close(&m);
}

/* A fault injected while the model uploads fails engine_init with the
 * command named; one injected 10 commands into the first position fails
 * that forward, and the next; both engines are freed cleanly (ASan). */
static void test_faults(const char *tmp)
{
    char dir[700], want[64];
    snprintf(dir, sizeof dir, "%s/opt-tiny-f32", tmp);
    struct model m;
    CHECK(model_open(&m, dir, why, sizeof why) == 0);
    struct fb_settings set = fb_settings_defaults();
    struct engine e;
    struct backend_counts c;
    set.sim_fail_at = 1;
    CHECK(engine_init(&e, &set, &m, &backend_sim, &ffn_dense, 1, MAX_SEQ, why, sizeof why) == -1);
    CHECK(strstr(why, "command 1 (upload): an injected failure") != NULL);
    set.sim_fail_at = 0;
    CHECK(engine_init(&e, &set, &m, &backend_sim, &ffn_dense, 1, MAX_SEQ, why, sizeof why) == 0);
    e.be_ops->counts(e.be, &c);
    uint64_t setup = c.copies + c.launches; /* the weights' uploads and the state's zeros */
    CHECK(setup > 0);
    engine_free(&e);
    set.sim_fail_at = setup + 10;
    CHECK(engine_init(&e, &set, &m, &backend_sim, &ffn_dense, 1, MAX_SEQ, why, sizeof why) == 0);
    CHECK(engine_forward(&e, toks[0], 0) == -1);
    snprintf(want, sizeof want, "command %llu (", (unsigned long long)setup + 10);
    CHECK(strncmp(e.err, "sim backend: ", 13) == 0 && strstr(e.err, want) != NULL);
    CHECK(engine_forward(&e, toks[1], 1) == -1);
    e.be_ops->counts(e.be, &c);
    CHECK_U64(c.copies + c.launches, setup + 9);
    engine_free(&e);
    model_close(&m);
}

static void rm_tree(const char *tmp)
{
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp);
    CHECK(system(cmd) == 0);
}

int main(void)
{
    host_dense = ffn_dense;
    host_dense.name = "host dense";
    host_dense.forward_device = NULL;
    char tmp[] = "/tmp/flashbed-test-sim-XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    static const struct {
        const char *shape;
        float ffn_scale;
    } shapes[] = {{"opt-tiny", 1}, {"llama-tiny", 1}, {"falcon-tiny", 2.5f}, {"persimmon-tiny", 2.5f},
                  {"phi-tiny", 2.5f}, {"llama-relu-tiny", 2.5f}};
    for (size_t i = 0; i < sizeof shapes / sizeof shapes[0]; i++) {
        compare(tmp, shapes[i].shape, DTYPE_F32, shapes[i].ffn_scale, i == 0);
        compare(tmp, shapes[i].shape, DTYPE_F16, shapes[i].ffn_scale, false);
    }
    test_faults(tmp);
    rm_tree(tmp);
    return check_report("test_backend_sim_forward");
}
