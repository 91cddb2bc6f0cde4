/* The decode loop (engine/forward/decode.h) on a small synthetic OPT: which
 * positions it computes and what its callback sees, greedy tokens equal to
 * a hand-written loop over engine_forward, and every stop rule: length,
 * end of sequence (and --ignore-eos), the callback's error, n = 0, an
 * interruption; configurations that do not fit are refused. And the
 * scoring loop perplexity and the predictors share (engine/forward/text_feed.h). */
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "model_fixture.h"
#include "common/interrupt.h"
#include "common/median.h"
#include "common/sha256.h"
#include "engine/forward/bw_ceiling.h"
#include "engine/forward/decode.h"
#include "engine/forward/engine.h"
#include "engine/forward/sampler.h"
#include "engine/forward/text_feed.h"
#include "engine/import/import.h"
#include "engine/import/synthetic.h"

enum { MAX_STEPS = 64 };

/* What the hooks saw. */
struct seen {
    int n, n_before;
    struct decode_step steps[MAX_STEPS];
    int before_pos[MAX_STEPS];
    bool before_generated[MAX_STEPS];
    int fail_at; /* the callback says stop at this position; -1: never */
};

static void on_before(void *ctx, int pos, bool generated)
{
    struct seen *s = ctx;
    s->before_pos[s->n_before] = pos;
    s->before_generated[s->n_before++] = generated;
}

static int on_token(void *ctx, const struct decode_step *step)
{
    struct seen *s = ctx;
    s->steps[s->n++] = *step;
    return step->pos == s->fail_at ? -1 : 0;
}

static int decode(struct engine *e, const int *prompt, int n_prompt, int n, bool ignore_eos, struct seen *s,
                  struct decode_result *r)
{
    memset(s, 0, sizeof *s);
    s->fail_at = -1;
    struct decode_config c = {.prompt = prompt, .n_prompt = n_prompt, .n = n, .ignore_eos = ignore_eos};
    struct decode_hooks h = {.before = on_before, .token = on_token, .ctx = s};
    char err[256];
    return decode_run(e, &c, &h, r, err, sizeof err);
}

/* Greedy tokens after the prompt, by hand: forward, argmax, feed back. */
static void greedy_by_hand(struct engine *e, const int *prompt, int n_prompt, int n, int *out)
{
    int vocab = (int)e->m->shape.vocab_size;
    for (int p = 0; p < n_prompt; p++)
        engine_forward(e, prompt[p], p);
    for (int i = 0; i < n; i++) {
        out[i] = argmax(e->s.logits, vocab);
        if (i + 1 < n)
            engine_forward(e, out[i], n_prompt + i);
    }
}

static void test_length(struct engine *e, const int *prompt, const int *greedy)
{
    struct seen s;
    struct decode_result r;
    CHECK(decode(e, prompt, 3, 5, true, &s, &r) == 0);
    CHECK(r.stop == DECODE_LENGTH && r.n_forward == 7 && r.n_generated == 5);
    CHECK_STR(decode_stop_name(r.stop), "length");
    CHECK(s.n == 7 && s.n_before == 7);
    for (int p = 0; p < s.n; p++) {
        const struct decode_step *st = &s.steps[p];
        CHECK(st->pos == p && s.before_pos[p] == p);
        CHECK(st->generated == (p >= 3) && s.before_generated[p] == (p >= 3));
        CHECK(st->token == (p < 3 ? prompt[p] : greedy[p - 3])); /* generated tokens are fed back */
        CHECK(st->sampled == (p < 2 ? -1 : greedy[p - 2]));       /* sampled from the last prompt position on */
        CHECK(st->start_ns <= st->end_ns);
        CHECK(p == 0 || s.steps[p - 1].end_ns <= st->start_ns);
    }
}

static void test_end_of_sequence(struct engine *e, struct model *m, const int *prompt, const int *greedy)
{
    /* the third generated token becomes the model's stop token (the first
     * two must differ from it for the count below) */
    int stop = greedy[2], before = 0;
    while (before < 2 && greedy[before] != stop)
        before++;
    int saved[4], n_saved = m->n_stop;
    memcpy(saved, m->stop_ids, sizeof saved);
    m->stop_ids[0] = stop;
    m->n_stop = 1;
    struct seen s;
    struct decode_result r;
    CHECK(decode(e, prompt, 3, 8, false, &s, &r) == 0);
    CHECK(r.stop == DECODE_EOS && r.n_generated == before);
    CHECK_STR(decode_stop_name(r.stop), "end of sequence");
    CHECK(r.n_forward == 3 + before && s.n == r.n_forward);
    CHECK(s.steps[s.n - 1].sampled == -1); /* the stop token is not generated */
    CHECK(decode_is_stop(m, stop) && !decode_is_stop(m, stop + 1));
    CHECK(decode(e, prompt, 3, 8, true, &s, &r) == 0); /* --ignore-eos */
    CHECK(r.stop == DECODE_LENGTH && r.n_generated == 8 && s.steps[4].sampled == stop);
    memcpy(m->stop_ids, saved, sizeof saved);
    m->n_stop = n_saved;
}

static void test_other_stops(struct engine *e, const int *prompt)
{
    struct seen s;
    struct decode_result r;
    memset(&s, 0, sizeof s);
    s.fail_at = 4;
    struct decode_config c = {.prompt = prompt, .n_prompt = 3, .n = 8, .ignore_eos = true};
    struct decode_hooks h = {.token = on_token, .ctx = &s}; /* no before hook */
    char err[256];
    CHECK(decode_run(e, &c, &h, &r, err, sizeof err) == 0);
    CHECK(r.stop == DECODE_ERROR && r.n_forward == 5 && r.n_generated == 2 && s.n == 5);
    CHECK_STR(decode_stop_name(r.stop), "error");

    /* n = 0: the prompt is computed, nothing sampled */
    CHECK(decode(e, prompt, 3, 0, true, &s, &r) == 0);
    CHECK(r.stop == DECODE_LENGTH && r.n_forward == 3 && r.n_generated == 0 && s.steps[2].sampled == -1);

    /* what does not fit the engine's positions, or has no prompt */
    int most = e->max_seq - 3 + 1; /* the last generated token is not fed back */
    CHECK(decode(e, prompt, 3, most, true, &s, &r) == 0);
    CHECK(r.n_forward == e->max_seq && r.n_generated == most);
    CHECK(decode(e, prompt, 3, most + 1, true, &s, &r) == -1 && s.n == 0);
    CHECK(decode(e, prompt, 0, 4, true, &s, &r) == -1 && s.n == 0);

    /* an interruption stops it before the next forward pass */
    interrupt_install();
    fflush(stderr);
    raise(SIGINT);
    CHECK(interrupted());
    CHECK(decode(e, prompt, 3, 4, true, &s, &r) == 0);
    CHECK(r.stop == DECODE_INTERRUPTED && r.n_forward == 0 && s.n == 0);
    CHECK_STR(decode_stop_name(r.stop), "interrupted");
}

/* The scoring loop (engine/forward/text_feed.h): 20 tokens in windows of the
 * engine's 16 positions, 15 text tokens after BOS each; every token seen
 * in order, its logits those of the BOS-led window computed by hand. */
struct feed_seen {
    int n_before, n_scored, n_progress;
    size_t order_ok, progress_done[4];
    double nll;
    const int *toks;
    int vocab;
};

static void fed_before(void *ctx, size_t i)
{
    struct feed_seen *s = ctx;
    s->order_ok += (size_t)s->n_before++ == i;
}

static int fed_scored(void *ctx, size_t i, const float *logits)
{
    struct feed_seen *s = ctx;
    s->n_scored++;
    s->nll += text_feed_nll(logits, s->vocab, s->toks[i], NULL);
    return 0;
}

static void fed_progress(void *ctx, size_t done, size_t n)
{
    struct feed_seen *s = ctx;
    (void)n;
    if (s->n_progress < 4)
        s->progress_done[s->n_progress] = done;
    s->n_progress++;
}

static int stop_at_3(void *ctx, size_t i, const float *logits)
{
    (void)ctx, (void)logits;
    return i == 3;
}

static void test_text_feed(struct engine *e, const struct model *m)
{
    int toks[20];
    for (int i = 0; i < 20; i++)
        toks[i] = 5 + 7 * i;
    struct feed_seen s = {.toks = toks, .vocab = (int)m->shape.vocab_size};
    const struct text_feed f = {.before = fed_before, .scored = fed_scored, .progress = fed_progress, .ctx = &s};
    CHECK(text_feed_run(e, toks, 20, &f) == 0);
    CHECK(s.n_before == 20 && s.n_scored == 20 && s.order_ok == 20);
    CHECK(s.n_progress == 2 && s.progress_done[0] == 15 && s.progress_done[1] == 20);
    double want = 0;
    for (int start = 0; start < 20; start += 15) {
        int prev = m->bos_id;
        for (int i = start; i < 20 && i < start + 15; i++) {
            engine_forward(e, prev, i - start);
            int vocab = (int)m->shape.vocab_size, best = argmax(e->s.logits, vocab);
            double sum = 0;
            for (int v = 0; v < vocab; v++)
                sum += exp((double)e->s.logits[v] - e->s.logits[best]);
            want += log(sum) + e->s.logits[best] - e->s.logits[toks[i]];
            prev = toks[i];
        }
    }
    CHECK_NEAR(s.nll, want, 1e-9 * (1 + fabs(want)));
    const struct text_feed stop = {.scored = stop_at_3};
    CHECK(text_feed_run(e, toks, 20, &stop) == -1);
}

/* The bandwidth ceiling's record: one pass per step up to its room,
 * resident bytes as loaded, the median of the paired ratios. */
static void test_bw_ceiling(struct engine *e, const struct model *m)
{
    struct bw_ceiling c;
    char err[256];
    CHECK(bw_ceiling_open(&c, m, 3, err, sizeof err) == 0);
    CHECK(bw_ceiling_bandwidth(&c) == 0 && bw_ceiling_median_paired(&c) == 0); /* before any pass */
    CHECK_NEAR(c.resident_bytes, (double)m->dram_bytes + (m->ffn ? (double)m->ffn_bytes : 0), 0);
    for (int i = 0; i < 4; i++)
        bw_ceiling_pass(&c, e, 1e-3 * (i + 1), 1e6);
    CHECK_U64((uint64_t)c.passes, 3); /* the fourth has no room */
    CHECK(c.read_s > 0 && c.best_bw > 0);
    CHECK(bw_ceiling_bandwidth(&c) <= c.best_bw * (1 + 1e-9));
    double p1 = c.paired[1];
    double sorted[3] = {c.paired[0], c.paired[1], c.paired[2]};
    CHECK_NEAR(bw_ceiling_median_paired(&c), median_sorting(sorted, 3), 0);
    CHECK(p1 > 0);
    bw_ceiling_close(&c);
    CHECK(c.paired == NULL);
}

/* A text file's tokens: all, from a skip, cut to a count, and a missing
 * file named in the error. */
static void test_text_tokens(const struct model *m, const char *dir)
{
    char path[700], err[1024];
    snprintf(path, sizeof path, "%s/text.txt", dir);
    const char *text = "the cat sat on the mat and the dog ran";
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0);
    int want[64];
    size_t n = tokenizer_encode(&m->tok, text, strlen(text), false, want);
    CHECK(n > 4);
    struct text_tokens t;
    CHECK(text_tokens_load(m, path, 0, 0, true, &t, err, sizeof err) == 0);
    CHECK(t.n == n && t.n_in_file == n && memcmp(t.ids, want, n * sizeof *want) == 0);
    char hex[65];
    CHECK(sha256_file_hex(path, hex, err, sizeof err) == 0 && strcmp(hex, t.sha256) == 0);
    text_tokens_free(&t);
    CHECK(text_tokens_load(m, path, 2, 3, false, &t, err, sizeof err) == 0);
    CHECK(t.n == 3 && t.n_in_file == n && memcmp(t.ids, want + 2, 3 * sizeof *want) == 0);
    CHECK(t.sha256[0] == '\0'); /* not asked for */
    text_tokens_free(&t);
    CHECK(text_tokens_load(m, path, n + 5, 0, false, &t, err, sizeof err) == 0 && t.n == 0); /* skipped past the end */
    text_tokens_free(&t);
    remove(path);
    CHECK(text_tokens_load(m, path, 0, 0, false, &t, err, sizeof err) == -1 && strstr(err, "text.txt: cannot read"));
    text_tokens_free(&t);
    CHECK(text_tokens_load(m, path, 0, 0, true, &t, err, sizeof err) == -1 && strstr(err, "text.txt") != NULL);
    text_tokens_free(&t);
}

int main(void)
{
    const struct fb_settings set = fb_settings_defaults();
    char tmp[] = "/tmp/flashbed-test-decode-XXXXXX";
    struct model_shape shape;
    char err[512], dir[600];
    CHECK(fixture_opt_tiny(tmp, dir, sizeof dir, 3, 0.2, &shape, err, sizeof err) == 0);
    struct model m;
    struct engine e;
    CHECK(model_open(&m, dir, err, sizeof err) == 0);
    CHECK(engine_init(&e, &set, &m, &backend_cpu, &ffn_dense, 1, 16, err, sizeof err) == 0);
    int prompt[3] = {m.bos_id, 300, 421}, greedy[8];
    greedy_by_hand(&e, prompt, 3, 8, greedy);
    test_length(&e, prompt, greedy);
    test_end_of_sequence(&e, &m, prompt, greedy);
    test_bw_ceiling(&e, &m);
    test_text_tokens(&m, dir);
    test_text_feed(&e, &m); /* before test_other_stops, which leaves an interrupt behind */
    test_other_stops(&e, prompt);
    engine_free(&e);
    model_close(&m);
    CHECK(fixture_remove(tmp) == 0);
    return check_report("test_decode");
}
