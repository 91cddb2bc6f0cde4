/* Input sparsity on flash against input sparsity in DRAM (issue 33):
 *
 *   fb_test_teal MODEL_DIR POLICY BUDGET_PCT N_GEN ID [ID ...]
 *
 * decodes the prompt ids and N_GEN greedy tokens twice on the cpu backend
 * (one compute thread): with the masked dense FFN of --active teal
 * (ffn_select, the FFN in DRAM, the model's sparsify.json) and with the
 * transposed flash FFN (run's setup of --active teal --policy POLICY
 * --dram-budget BUDGET_PCT%, 0: none; buffered reads of ffn_t.bin).
 * Checks, printing one line each:
 *   - the same tokens;
 *   - the same logits: every position's |flash - dram| <= 1e-5 * the
 *     largest |dram| logit of that position (the relative error of a
 *     logit vector; the two sum the same products in another order);
 *   - each stream's bytes and reads per token equal what two fresh
 *     caches (cache/transposed.h's geometry, the plan's capacities, the
 *     policy) decide for the channel and row sets the DRAM path chose;
 *   - with a policy that keeps nothing (predictor), bytes are the kept
 *     channels x the channel stride plus the kept rows x the down stride.
 * Prints "tokens: ..." and "max_rel: X". Exit 0 when all hold, 1 when one
 * fails, 2 for a bad command line or set-up failure. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache/cache.h"
#include "cache/transposed.h"
#include "engine/ffn/ffn_select.h"
#include "engine/ffn/ffn_transposed.h"
#include "engine/ffn/select_choice.h"
#include "engine/forward/engine.h"
#include "engine/model/model_format.h"
#include "engine/run/run_exec.h"
#include "engine/run/run_setup.h"

enum { MAX_TOKENS = 256 };

/* The DRAM path's sets fed to two fresh caches (the tap below). */
static struct {
    struct neuron_select sel;
    struct cache chan, down;
    uint32_t *chan_ids, *row_ids;
    int64_t token;
    uint64_t chan_bytes[MAX_TOKENS], chan_reads[MAX_TOKENS], down_bytes[MAX_TOKENS], down_reads[MAX_TOKENS];
    uint64_t kept_channels[MAX_TOKENS], kept_rows[MAX_TOKENS];
} tap;

static void tap_forward(struct ffn *f, int layer, int pos, const float *x, float *out)
{
    if (layer == 0)
        tap.token++;
    int64_t t = tap.token;
    uint32_t n_rows = neuron_select_layer(&tap.sel, layer, f->ck, x, tap.row_ids), n_chan = 0;
    for (uint32_t j = 0; j < f->m->shape.d_model; j++)
        if (tap.sel.xs[j] != 0.0f) /* kept: |x_j| above a cut >= 0 */
            tap.chan_ids[n_chan++] = j;
    struct cache_step st;
    cache_request(&tap.chan, (uint64_t)t, (uint32_t)layer, tap.chan_ids, n_chan, false, NULL, &st);
    tap.chan_bytes[t] += st.bytes, tap.chan_reads[t] += st.n_flash_reads;
    cache_request(&tap.down, (uint64_t)t, (uint32_t)layer, tap.row_ids, n_rows, false, NULL, &st);
    tap.down_bytes[t] += st.bytes, tap.down_reads[t] += st.n_flash_reads;
    tap.kept_channels[t] += n_chan, tap.kept_rows[t] += n_rows;
    ffn_select.forward(f, layer, pos, x, out);
}

static const struct ffn_ops ffn_tap = {"tap", NULL, tap_forward, NULL, NULL};

static int argmax(const float *v, uint32_t n)
{
    int best = 0;
    for (uint32_t i = 1; i < n; i++)
        if (v[i] > v[best])
            best = (int)i;
    return best;
}

/* run's setup of --active teal --policy policy within pct% of the model. */
static int flash_setup(const struct fb_settings *set, const struct model *m, const char *policy, uint64_t pct,
                       int max_seq, struct run_setup *p, char *err, size_t errlen)
{
    struct run_options o = {.cmd = "run", .mode = "all", .window = 3, .active = "teal", .use = "auto",
                            .io_engine = "psync", .io_threads = 2, .iodepth = 1, .direct = false,
                            .read_ahead = true, .settings = set};
    memset(p, 0, sizeof *p);
    if (cache_policy_parse(policy, false, &o.policy, err, errlen) != 0 || run_setup_plan(&o, m, p, err, errlen) != 0)
        return -1;
    run_setup_sizes(p, m, max_seq);
    p->budget = p->model_bytes * pct / 100;
    return run_setup_fit(&o, m, p, (uint64_t)max_seq - 1, err, errlen);
}

/* The tap's caches: the plan's policy and capacities over the file's geometry. */
static int tap_open(const struct model *m, const struct run_setup *p, const struct select_config *c, char *err,
                    size_t errlen)
{
    struct transposed_geometry g;
    cache_transposed_geometry(m->shape.n_layers, m->shape.d_model, m->shape.d_ff, m->arch.glu, wtype_row_bytes(m->dtype, 1),
                              FFN_ALIGN, &g);
    struct cache_config cc = {p->plan.policy, p->layout, p->plan.capacity_rows, NULL, false, false};
    struct cache_config cd = {p->plan.policy, p->layout, p->plan.down_capacity_rows, NULL, false, false};
    tap.token = -1;
    tap.chan_ids = malloc(m->shape.d_model * sizeof *tap.chan_ids);
    tap.row_ids = malloc(m->shape.d_ff * sizeof *tap.row_ids);
    if (!tap.chan_ids || !tap.row_ids || cache_open(&tap.chan, &cc, &g.chan, err, errlen) != 0 ||
        cache_open(&tap.down, &cd, &g.down, err, errlen) != 0)
        return -1;
    return neuron_select_open(&tap.sel, m, c, err, errlen);
}

/* Feeds tokens (prompt, then each engine's own argmax) into both engines;
 * the largest relative logit difference into *max_rel, the tokens into out. */
static int decode_both(struct engine *dram, struct engine *flash, const int *prompt, int n_prompt, int n_gen,
                       int *out, double *max_rel, int *token_mismatch)
{
    int fd = 0, ff = 0;
    uint32_t vocab = dram->m->shape.vocab_size;
    *max_rel = 0;
    *token_mismatch = 0;
    for (int pos = 0; pos < n_prompt + n_gen; pos++) {
        int td = pos < n_prompt ? prompt[pos] : fd, tf = pos < n_prompt ? prompt[pos] : ff;
        out[pos] = td;
        *token_mismatch += td != tf;
        if (engine_forward(dram, td, pos) != 0 || engine_forward(flash, tf, pos) != 0 ||
            ffn_flash_error(&flash->ffn)) {
            fprintf(stderr, "position %d: %s%s%s\n", pos, dram->err, flash->err,
                    ffn_flash_error(&flash->ffn) ? ffn_flash_error(&flash->ffn) : "");
            return -1;
        }
        double big = 0, diff = 0;
        for (uint32_t v = 0; v < vocab; v++) {
            big = fmax(big, fabs(dram->s.logits[v]));
            diff = fmax(diff, fabs((double)flash->s.logits[v] - dram->s.logits[v]));
        }
        *max_rel = fmax(*max_rel, big > 0 ? diff / big : diff);
        fd = argmax(dram->s.logits, vocab), ff = argmax(flash->s.logits, vocab);
        struct ffn_flash_token ft;
        ffn_flash_take_token(&flash->ffn, &ft);
        if (ft.chan_bytes != tap.chan_bytes[pos] || ft.down_bytes != tap.down_bytes[pos] ||
            ft.chan_reads != tap.chan_reads[pos] || ft.down_reads != tap.down_reads[pos] ||
            ft.kept_channels != tap.kept_channels[pos] || ft.bytes_read != ft.chan_bytes + ft.down_bytes) {
            fprintf(stderr, "position %d: flash read %llu+%llu bytes in %llu+%llu reads (%llu channels), the caches "
                    "decide %llu+%llu in %llu+%llu (%llu channels)\n", pos, (unsigned long long)ft.chan_bytes,
                    (unsigned long long)ft.down_bytes, (unsigned long long)ft.chan_reads,
                    (unsigned long long)ft.down_reads, (unsigned long long)ft.kept_channels,
                    (unsigned long long)tap.chan_bytes[pos], (unsigned long long)tap.down_bytes[pos],
                    (unsigned long long)tap.chan_reads[pos], (unsigned long long)tap.down_reads[pos],
                    (unsigned long long)tap.kept_channels[pos]);
            *token_mismatch += 1000;
        }
    }
    return 0;
}

/* With a policy that keeps nothing every kept row is read: the counts
 * from the DRAM path's sets alone. */
static int check_unkept(const struct model *m, int n)
{
    struct transposed_geometry g;
    cache_transposed_geometry(m->shape.n_layers, m->shape.d_model, m->shape.d_ff, m->arch.glu, wtype_row_bytes(m->dtype, 1),
                              FFN_ALIGN, &g);
    int bad = 0;
    for (int t = 0; t < n; t++)
        bad += tap.chan_bytes[t] != tap.kept_channels[t] * g.chan.row_bytes ||
               tap.down_bytes[t] != tap.kept_rows[t] * g.down.row_bytes ||
               tap.chan_reads[t] + tap.down_reads[t] != tap.kept_channels[t] + tap.kept_rows[t];
    printf("unkept counts: %s (channel row %llu bytes, down row %llu bytes)\n", bad ? "WRONG" : "exact",
           (unsigned long long)g.chan.row_bytes, (unsigned long long)g.down.row_bytes);
    return bad;
}

static int run(const char *dir, const char *policy, uint64_t pct, const int *ids, int n_prompt, int n_gen)
{
    const struct fb_settings set = fb_settings_defaults();
    char err[4096];
    struct model md, mf;
    struct select_choice sc;
    struct run_setup p;
    struct engine ed, ef;
    int max_seq = n_prompt + n_gen, toks[MAX_TOKENS], mismatch = 0, rc = 2;
    double max_rel = 0;
    if (model_open(&md, dir, err, sizeof err) != 0 || model_open_flags(&mf, dir, MODEL_FFN_ON_FLASH, err, sizeof err))
        return fprintf(stderr, "%s\n", err), 2;
    if (select_choice_open("generate", "teal", false, 0, NULL, &md, &sc, err, sizeof err) != 0 ||
        flash_setup(&set, &mf, policy, pct, max_seq, &p, err, sizeof err) != 0 ||
        tap_open(&md, &p, &sc.cfg, err, sizeof err) != 0)
        return fprintf(stderr, "%s\n", err), 2;
    struct ffn_ops tap_ops = ffn_tap;
    tap_ops.create = ffn_select.create, tap_ops.destroy = ffn_select.destroy;
    if (engine_init_with(&ed, &set, &md, &backend_cpu, &tap_ops, &sc.cfg, 1, max_seq, err, sizeof err) != 0 ||
        run_engine_init(&ef, &set, &mf, &backend_cpu, &p, 1, max_seq, err, sizeof err) != 0)
        return fprintf(stderr, "%s\n", err), 2;
    if (decode_both(&ed, &ef, ids, n_prompt, n_gen, toks, &max_rel, &mismatch) == 0) {
        printf("tokens:");
        for (int i = 0; i < max_seq; i++)
            printf(" %d", toks[i]);
        printf("\nmax_rel: %.3g\n", max_rel);
        if (!policy_layer_rows(p.plan.policy.ops, p.plan.capacity_rows, mf.shape.d_model) &&
            !policy_layer_rows(p.plan.policy.ops, p.plan.down_capacity_rows, mf.shape.d_ff)) /* nothing kept */
            mismatch += check_unkept(&md, max_seq);
        rc = mismatch || max_rel > 1e-5;
        printf("%s\n", rc ? "DIFFERENT" : "same");
    }
    engine_free(&ed);
    engine_free(&ef);
    cache_close(&tap.chan);
    cache_close(&tap.down);
    neuron_select_close(&tap.sel);
    free(tap.chan_ids);
    free(tap.row_ids);
    run_setup_free(&p);
    select_choice_free(&sc);
    model_close(&md);
    model_close(&mf);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: %s MODEL_DIR POLICY BUDGET_PCT N_GEN ID [ID ...]\n", argv[0]);
        return 2;
    }
    int ids[MAX_TOKENS], n_prompt = argc - 5, n_gen = atoi(argv[4]);
    if (n_prompt + n_gen > MAX_TOKENS || n_gen < 0)
        return fprintf(stderr, "at most %d tokens\n", MAX_TOKENS), 2;
    for (int i = 0; i < n_prompt; i++)
        ids[i] = atoi(argv[5 + i]);
    return run(argv[1], argv[2], strtoull(argv[3], NULL, 10), ids, n_prompt, n_gen);
}
