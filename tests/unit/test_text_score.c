/* The scoring rules of engine/forward/text_feed.h and the sums of
 * engine/forward/text_score.h, on tests/data/gguf/llama/F32 (README.md
 * there) converted as stored:
 *   text_feed_plan's exact counts of windows and tokens scored per rule;
 *   llama.cpp's rule (SECOND_HALF) over one window of the fixture's 80
 *   ids against llama.cpp's own logits at those positions (logits.f32):
 *   the nll of the 39 tokens its second half scores, within 39 times
 *   twice the fixture test's F32 logit bound (a token's -log softmax moves
 *   by at most 2 max|dlogit|);
 *   every rule over several windows equal to a hand-written loop over
 *   engine_forward (BOS replacing each window's first token, which tokens
 *   are fed, which are scored), with the vocabulary adding BOS and not;
 *   each window's sum, --windows' cut, and the order `before` sees. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "check.h"
#include "common/fsutil.h"
#include "common/json_file.h"
#include "engine/forward/engine.h"
#include "engine/forward/text_feed.h"
#include "engine/forward/text_score.h"
#include "engine/import/import.h"

#ifndef TEST_DATA_DIR
#error TEST_DATA_DIR must name tests/data
#endif

#define FIXTURE TEST_DATA_DIR "/gguf/llama/F32"
#define N_IDS 80            /* the fixture's positions: its prompt (BOS first) and greedy ids */
#define F32_LOGIT_BOUND 0.02 /* test_gguf_fixture's F32 tolerance on |flashbed's logit - llama.cpp's| */

static int ids[N_IDS], vocab;
static float *ref_logits; /* [N_IDS][vocab]: llama.cpp's, after each id */

static int ref_ids(const cJSON *o, const char *key, int at)
{
    const cJSON *it;
    cJSON_ArrayForEach(it, cJSON_GetObjectItemCaseSensitive(o, key))
    {
        if (at < N_IDS)
            ids[at] = (int)it->valuedouble;
        at++;
    }
    return at;
}

static void load_reference(void)
{
    cJSON *o = read_json_file(FIXTURE "/reference.json");
    CHECK(o != NULL);
    const cJSON *nv = cJSON_GetObjectItemCaseSensitive(o, "n_vocab");
    vocab = cJSON_IsNumber(nv) ? (int)nv->valuedouble : 0;
    CHECK(ref_ids(o, "greedy_ids", ref_ids(o, "prompt_ids", 0)) == N_IDS);
    cJSON_Delete(o);
    size_t len = 0;
    ref_logits = (float *)read_text_file(FIXTURE "/logits.f32", &len);
    CHECK(ref_logits && vocab > 0 && len == (size_t)N_IDS * (size_t)vocab * sizeof(float));
}

/* The windows and tokens each rule makes of a text: counted by hand. */
static void test_plan(void)
{
    struct text_feed_plan p = text_feed_plan(TEXT_FEED_BOS_LED, false, 16, 20, 0);
    CHECK(p.windows == 2 && p.scored == 20 && p.first == 0); /* 15 + 5 after BOS, add_bos ignored */
    p = text_feed_plan(TEXT_FEED_VOCAB_BOS, true, 16, 20, 0);
    CHECK(p.windows == 2 && p.scored == 20);
    p = text_feed_plan(TEXT_FEED_VOCAB_BOS, false, 16, 20, 0);
    CHECK(p.windows == 2 && p.scored == 19); /* the first token only context */
    p = text_feed_plan(TEXT_FEED_VOCAB_BOS, false, 16, 16, 0);
    CHECK(p.windows == 1 && p.scored == 15);
    p = text_feed_plan(TEXT_FEED_VOCAB_BOS, false, 16, 1, 0);
    CHECK(p.windows == 0 && p.scored == 0);
    p = text_feed_plan(TEXT_FEED_VOCAB_BOS, true, 16, 100, 3);
    CHECK(p.windows == 3 && p.scored == 45);
    p = text_feed_plan(TEXT_FEED_SECOND_HALF, true, 512, 301947, 0); /* 301948 with BOS: 589 windows */
    CHECK(p.windows == 589 && p.first == 256 && p.scored == 589 * 255);
    p = text_feed_plan(TEXT_FEED_SECOND_HALF, false, 512, 301948, 100); /* SmolLM2's reference run */
    CHECK(p.windows == 100 && p.scored == 25500);
    p = text_feed_plan(TEXT_FEED_SECOND_HALF, false, 16, 15, 0);
    CHECK(p.windows == 0 && p.scored == 0); /* no whole window */
    p = text_feed_plan(TEXT_FEED_SECOND_HALF, true, 16, 15, 0);
    CHECK(p.windows == 1 && p.scored == 7); /* BOS completes it */
    p = text_feed_plan(TEXT_FEED_SECOND_HALF, false, 3, 6, 0);
    CHECK(p.windows == 2 && p.first == 1 && p.scored == 2);
    CHECK(text_feed_plan(TEXT_FEED_SECOND_HALF, false, 2, 6, 0).scored == 0);
    CHECK(text_feed_min_context(TEXT_FEED_SECOND_HALF) == 3 && text_feed_min_context(TEXT_FEED_VOCAB_BOS) == 2);
    CHECK_STR(text_feed_rule_name(TEXT_FEED_SECOND_HALF), "llama.cpp");
    CHECK_STR(text_feed_rule_name(TEXT_FEED_VOCAB_BOS), "flashbed");
}

static double nll_of(const float *logits, int target)
{
    return text_feed_nll(logits, vocab, target, NULL);
}

/* fed[0..n_fed) at positions 0.. through a fresh window; the sum of the
 * nll of target[k] after fed[k] for k >= from. */
static double window_nll(struct engine *e, const int *fed, int n_fed, const int *target, int from)
{
    double sum = 0;
    for (int k = 0; k < n_fed; k++) {
        CHECK(engine_forward(e, fed[k], k) == 0);
        if (k >= from)
            sum += nll_of(e->s.logits, target[k]);
    }
    return sum;
}

/* SECOND_HALF by hand: the stream [BOS when add_bos] + text cut into
 * windows of w, each's first token BOS when add_bos. */
static double by_hand_second_half(struct engine *e, const int *text, int n, int w, bool add_bos, double *per)
{
    int stream[N_IDS + 1], fed[N_IDS], target[N_IDS], len = 0;
    if (add_bos)
        stream[len++] = e->m->bos_id;
    memcpy(stream + len, text, (size_t)n * sizeof *text);
    len += n;
    double sum = 0;
    for (int win = 0; (win + 1) * w <= len; win++) {
        for (int k = 0; k + 1 < w; k++) {
            fed[k] = k == 0 && add_bos ? e->m->bos_id : stream[win * w + k];
            target[k] = stream[win * w + k + 1];
        }
        per[win] = window_nll(e, fed, w - 1, target, w / 2);
        sum += per[win];
    }
    return sum;
}

/* VOCAB_BOS by hand with a vocabulary adding no BOS: windows of w text
 * tokens advancing by w - 1, the first of each only context. */
static double by_hand_no_bos(struct engine *e, const int *text, int n, int w)
{
    double sum = 0;
    for (int start = 0; start + 1 < n; start += w - 1) {
        int len = start + w < n ? w : n - start;
        sum += window_nll(e, text + start, len - 1, text + start + 1, 0);
    }
    return sum;
}

struct order {
    size_t n_before, next, out_of_order;
};

static void saw_before(void *ctx, size_t i)
{
    struct order *o = ctx;
    o->out_of_order += i != o->next;
    o->next = i + 1;
    o->n_before++;
}

/* One window of all 80 ids (llama.cpp's context for logits.f32): its
 * second half against llama.cpp's logits. */
static void test_against_llama_cpp(struct model *m)
{
    const struct fb_settings set = fb_settings_defaults();
    struct engine e;
    char err[512];
    CHECK(m->tok.add_bos && ids[0] == m->bos_id); /* the fixture's vocabulary adds BOS; its ids hold it */
    CHECK(engine_init(&e, &set, m, &backend_cpu, &ffn_dense, 1, N_IDS, err, sizeof err) == 0);
    double per[2] = {0, 0}, want = 0;
    struct text_score s = {.window_nll = per};
    const struct text_score_config c = {.rule = TEXT_FEED_SECOND_HALF};
    CHECK(text_score_run(&e, ids + 1, N_IDS - 1, &c, &s) == 0); /* the text: the ids after BOS */
    CHECK(s.windows == 1 && s.scored == N_IDS - 1 - N_IDS / 2);
    for (int p = N_IDS / 2; p + 1 < N_IDS; p++)
        want += nll_of(ref_logits + (size_t)p * (size_t)vocab, ids[p + 1]);
    CHECK_NEAR(s.nll, want, (double)s.scored * 2 * F32_LOGIT_BOUND);
    CHECK_NEAR(per[0], s.nll, 0);
    printf("llama.cpp's rule on the F32 fixture: nll %.6f, from llama.cpp's logits %.6f (%zu tokens)\n", s.nll,
           want, s.scored);
    struct order o = {0, 0, 0};
    const struct text_feed f = {.before = saw_before, .ctx = &o, .rule = TEXT_FEED_SECOND_HALF};
    CHECK(text_feed_run(&e, ids + 1, N_IDS - 1, &f) == 0);
    CHECK(o.n_before == N_IDS - 1 && o.out_of_order == 0); /* every pass but the window's last, in order */
    engine_free(&e);
}

/* Every rule over windows of 16 against the hand-written loops. */
static void test_rules_by_hand(struct model *m, bool add_bos)
{
    const struct fb_settings set = fb_settings_defaults();
    struct engine e;
    char err[512];
    const int w = 16, *text = ids + 1, n = N_IDS - 1;
    m->tok.add_bos = add_bos;
    CHECK(engine_init(&e, &set, m, &backend_cpu, &ffn_dense, 1, w, err, sizeof err) == 0);
    double per[8] = {0}, want_per[8] = {0};
    struct text_score s = {.window_nll = per};
    struct text_score_config c = {.rule = TEXT_FEED_SECOND_HALF};
    CHECK(text_score_run(&e, text, (size_t)n, &c, &s) == 0);
    double want = by_hand_second_half(&e, text, n, w, add_bos, want_per);
    size_t windows = add_bos ? 5 : 4; /* 80 or 79 tokens in windows of 16 */
    CHECK(s.windows == windows && s.scored == windows * 7);
    CHECK_NEAR(s.nll, want, 1e-9 * (1 + fabs(want)));
    for (size_t i = 0; i < windows; i++)
        CHECK_NEAR(per[i], want_per[i], 1e-9 * (1 + fabs(want_per[i])));
    c.max_windows = 2;
    CHECK(text_score_run(&e, text, (size_t)n, &c, &s) == 0);
    CHECK(s.windows == 2 && s.scored == 14);
    CHECK_NEAR(s.nll, want_per[0] + want_per[1], 1e-9 * (1 + fabs(want)));
    c = (struct text_score_config){.rule = TEXT_FEED_VOCAB_BOS};
    struct text_score own = {0}, led = {0};
    CHECK(text_score_run(&e, text, (size_t)n, &c, &own) == 0);
    c.rule = TEXT_FEED_BOS_LED;
    CHECK(text_score_run(&e, text, (size_t)n, &c, &led) == 0);
    CHECK(led.scored == (size_t)n && led.windows == 6); /* 79 tokens, 15 a window after BOS */
    if (add_bos) {
        CHECK(own.scored == led.scored && own.windows == led.windows && own.nll == led.nll);
    } else {
        want = by_hand_no_bos(&e, text, n, w);
        CHECK(own.scored == (size_t)n - 1 && own.windows == 6); /* 78 targets, 15 a window */
        CHECK_NEAR(own.nll, want, 1e-9 * (1 + fabs(want)));
    }
    engine_free(&e);
    m->tok.add_bos = true;
}

int main(void)
{
    char tmp[] = "/tmp/flashbed-test-text-score-XXXXXX", folder[600], why[1024];
    CHECK(mkdtemp(tmp) != NULL);
    test_plan();
    load_reference();
    snprintf(folder, sizeof folder, "%s/model", tmp);
    struct import_dtype dt = {.keep = true, .dtype = DTYPE_F16};
    CHECK(import_gguf(FIXTURE "/model.gguf", NULL, folder, &dt, NULL, why, sizeof why) == 0);
    struct model m;
    if (ref_logits && model_open(&m, folder, why, sizeof why) == 0) {
        CHECK((int)m.shape.vocab_size == vocab);
        test_against_llama_cpp(&m);
        test_rules_by_hand(&m, true);
        test_rules_by_hand(&m, false);
        model_close(&m);
    } else {
        fprintf(stderr, "test_text_score: %s\n", why);
        CHECK(0);
    }
    free(ref_logits);
    fs_remove_tree(tmp);
    return check_report("test_text_score");
}
