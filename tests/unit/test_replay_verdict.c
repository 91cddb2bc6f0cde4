/* replay's verdict (sim/replay_verdict.h, issue 35): exact lines on rows
 * whose winner is set by hand; on a trace built so that caching wins at a
 * roomy budget and every caching policy is infeasible at a tight one;
 * which profile prices a replay (sim/hw_choice.h). */
#include "check.h"
#include "policy_text.h"
#include "trace_fixture.h"

#include <sys/stat.h>
#include <unistd.h>

#include "common/fsutil.h"
#include "common/json_file.h"
#include "sim/hw_choice.h"
#include "sim/replay_price.h"
#include "sim/replay_study.h"
#include "sim/replay_verdict.h"

/* A priced row made by hand: only what the verdict reads. */
static struct replay_row row(const char *budget, const char *policy, const char *layout, bool feasible, double mb,
                             double reads, double io, double mem, double compute)
{
    struct replay_row r;
    memset(&r, 0, sizeof r);
    r.budget = budget;
    r.res.pol = POLICY(policy);
    r.res.lay = LAYOUT(layout);
    snprintf(r.res.policy, sizeof r.res.policy, "%s", policy);
    snprintf(r.res.layout, sizeof r.res.layout, "%s", layout);
    r.res.budget_given = true;
    r.res.dram_budget = !strcmp(budget, "25%") ? 100000 : 40000;
    r.res.budget_rows = !strcmp(budget, "25%") ? 40 : 10;
    r.res.d_ff = 100;
    r.res.max_needed_rows = 30;
    r.res.feasible = feasible;
    r.res.bytes_per_token = mb * 1e6;
    r.res.reads_per_token = reads;
    r.priced = true;
    struct cost_prediction *c = &r.modelled.prediction;
    c->io_ms = io;
    c->mem_ms = mem;
    c->compute_ms = compute;
    c->serial_ms = io + mem + compute;
    c->reads_per_token = reads;
    c->bytes_per_token = reads * 768;
    c->chunk_bytes = 768;
    return r;
}

/* At 25% window:5 is fastest and predictor next; at 10% every caching
 * row is infeasible, so naive wins, and window:5's reads (500 of 768
 * bytes in 2 ms: 250000 reads/s, 192 MB/s) are under half the flat
 * profile's 1 GB/s: IOPS-bound. */
static void hand_made(void)
{
    struct replay_row rows[] = {
        row("25%", "naive", "bundled", true, 1, 5, 0.5, 0, 0.1),
        row("25%", "window:5", "bundled", true, 0.2, 100, 0.125, 0.0625, 0.125),
        row("25%", "predictor", "bundled", true, 0.3, 120, 0.25, 0, 0.25),
        row("25%", "window:5", "split", true, 0.2, 200, 0.25, 0.0625, 0.125),
        row("10%", "naive", "bundled", true, 1, 5, 0.5, 0, 0.1),
        row("10%", "hybrid", "bundled", true, 0.9, 5, 0.5, 0, 0.125),
        row("10%", "window:5", "bundled", false, 0.5, 500, 2, 0.5, 0.5),
        row("10%", "lru", "bundled", false, 0.5, 600, 2.5, 0.5, 0.5),
    };
    struct hw_profile hw;
    memset(&hw, 0, sizeof hw);
    snprintf(hw.name, sizeof hw.name, "flat");
    hw.flash.sequential_bw = 1e9;
    struct replay_verdict v[8];
    CHECK(replay_verdicts(rows, 8, v) == 2);
    CHECK(v[0].best == &rows[1] && v[0].runner_up == &rows[2] && v[0].caching == &rows[1]);
    CHECK(v[0].n_caching == 3 && v[0].n_caching_feasible == 3);
    CHECK(v[1].best == &rows[4] && v[1].runner_up == &rows[5] && v[1].caching == &rows[6]);
    CHECK(v[1].n_caching == 2 && v[1].n_caching_feasible == 0 && v[1].max_needed_rows == 30);
    char *a = replay_verdict_lines(&v[0], &hw), *b = replay_verdict_lines(&v[1], &hw);
    CHECK_STR(a, "- 25% (0.1 MB, 40 rows per layer): best window:5 with bundled, 0.312 ms per token (I/O 0.125, "
                 "memory 0.0625, compute 0.125); 0.2 MB in 100 reads per token; feasible (a token needs up to 30 "
                 "rows in one layer; the budget holds 40).\n"
                 "  Runner-up: predictor with bundled, 0.5 ms (+60%); 0.3 MB in 120 reads per token.\n");
    CHECK_STR(b, "- 10% (0.04 MB, 10 rows per layer): best naive with bundled, 0.6 ms per token (I/O 0.5, memory "
                 "0, compute 0.1); 1 MB of FFN per token, streamed; feasible (it streams whole layers).\n"
                 "  Runner-up: hybrid with bundled, 0.625 ms (+4%); 0.9 MB of FFN per token, streamed.\n"
                 "  Why not caching: every caching policy is infeasible at 10%: a token needs up to 30 of a "
                 "layer's 100 rows (30%), the budget holds 10 (10%). Were they feasible, the fastest, window:5 "
                 "with bundled, is IOPS-bound on flat: its reads of 768 bytes, 500 per token at 250000 reads/s "
                 "(192 MB/s, 19.2% of the profile's 1 GB/s sequential), take 2 ms of I/O against naive's 0.5 ms.\n");
    free(a);
    free(b);
    /* a feasible caching row that reads less but computes more: said so */
    rows[6].res.feasible = true;
    rows[6].modelled.prediction.io_ms = 0.25;
    rows[6].modelled.prediction.serial_ms = 1.25;
    CHECK(replay_verdicts(rows, 8, v) == 2 && v[1].best == &rows[4] && v[1].caching == &rows[6]);
    CHECK(v[0].online == NULL && v[1].online == NULL);
    b = replay_verdict_lines(&v[1], &hw);
    CHECK(strstr(b, "  Why not caching: the fastest feasible caching row, window:5 with bundled, reads less (0.25 ms "
                    "of I/O against naive's 0.5) but its memory management and compute (the predictor included) "
                    "bring it to 1.25 ms.\n") != NULL);
    free(b);
    /* belady fastest: the fastest policy a run can use beside it */
    struct replay_row future[] = {
        row("25%", "belady", "bundled", true, 0.1, 50, 0.125, 0, 0.125),
        row("25%", "lru", "bundled", true, 0.2, 100, 0.25, 0, 0.125),
        row("25%", "window:5", "bundled", true, 0.2, 100, 0.25, 0, 0.25),
    };
    CHECK(replay_verdicts(future, 3, v) == 1 && v[0].best == &future[0] && v[0].online == &future[1]);
    a = replay_verdict_lines(&v[0], &hw);
    CHECK(strstr(a, "\n  Runner-up: lru with bundled, 0.375 ms (+50%); 0.2 MB in 100 reads per token.\n  belady reads "
                    "the future (the offline lower bound); the fastest a run can use: lru with bundled, 0.375 ms "
                    "(+50%).\n") != NULL);
    free(a);
}

/* Every token needs rows 0 and 1 of each of 2 layers (d_ff 64): a window
 * keeps them and reads nothing after the first token, where naive reads
 * every layer whole; a budget of one row per layer holds neither. */
static void by_construction(void)
{
    static const int need[] = {0, 1, -1};
    const int *sets[16];
    for (int i = 0; i < 16; i++)
        sets[i] = need;
    struct trace tr;
    fixture_trace(&tr, 2, 16, 64, FFN_RELU, 8, sets);
    const struct fb_settings set = fb_settings_defaults();
    struct replay_pricing p;
    char err[1024];
    CHECK(replay_pricing_open(&p, &set, &tr, "fixture", "m1max-cpu", 0, err, sizeof err) == 0);
    const struct policy_spec pols[] = {POLICY("naive"), POLICY("window:2"), POLICY("lru")};
    const struct layout_spec lays[] = {LAYOUT("bundled")};
    /* a row is 2 x 16 f16 weights, 64 bytes (the header prices its
     * attention by d_model: kept); 2 layers: 128 bytes hold one row a layer, 50% 32 */
    const struct replay_budget budgets[] = {{"50%", 2048, 0.5, false}, {"128", 128, 128.0 / 4096, false}};
    struct replay_study s = {&tr, pols, 3, lays, 1, budgets, 2, false, &p, 0, 0};
    struct replay_row rows[6];
    size_t done = 0;
    CHECK(replay_study_run(&s, rows, &done, NULL, NULL, err, sizeof err) == 0 && done == 6);
    struct replay_verdict v[6];
    CHECK(replay_verdicts(rows, done, v) == 2);
    CHECK(v[0].best && v[0].best->res.pol.ops->keeps_reads && v[0].best->res.feasible);
    CHECK(v[0].best->res.bytes_per_token == 2 * 2 * 64 / 8.0); /* 4 rows of 64 bytes, once in 8 tokens */
    CHECK(v[1].best && !strcmp(v[1].best->res.policy, "naive") && v[1].n_caching_feasible == 0);
    char *text = replay_verdict_text(rows, done, p.hw, "Priced by m1max-cpu.");
    CHECK(text && strstr(text, "## Verdict: the fastest feasible policy and layout at each budget\n\nPriced by "
                               "m1max-cpu. Ranked by") != NULL);
    CHECK(text && strstr(text, "\n- 128 (0.000128 MB, 1 rows per layer): best naive with bundled, ") != NULL);
    CHECK(text && strstr(text, "  Why not caching: every caching policy is infeasible at 128: a token needs up to 2 "
                               "of a layer's 64 rows (3%), the budget holds 1 (2%). Were they feasible, the fastest, ") != NULL);
    free(text);
    replay_rows_free(rows, done);
    replay_pricing_close(&p);
    trace_free(&tr);
}

/* The profile: the one given; else this machine's where calibrate writes
 * it; else the default, with how to make one. */
static void profile_choice(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct hw_choice c;
    char note[2000], dir[] = "/tmp/fb-verdict-XXXXXX", cwd[4096], src[4300];
    hw_choose(&set, "m2ultra-metal", "box", &c);
    CHECK(c.given && !c.own && !strcmp(c.profile, "m2ultra-metal"));
    hw_choice_note(&c, "m2ultra-metal", "p.json", note, sizeof note);
    CHECK_STR(note, "Priced by m2ultra-metal (p.json), the profile given with --hw.");
    CHECK(getcwd(cwd, sizeof cwd) && mkdtemp(dir) && chdir(dir) == 0);
    snprintf(src, sizeof src, "%s/hw/m1max-cpu.json", set.configs_dir); /* an absolute path */
    hw_choose(&set, NULL, "box", &c);
    CHECK(!c.given && !c.own && !strcmp(c.profile, HW_DEFAULT_PROFILE));
    hw_choice_note(&c, "m1max-cpu", "x.json", note, sizeof note);
    CHECK(strstr(note, "Priced by m1max-cpu (x.json), the paper's machine, not this one (the default: no profile of "
                       "this machine at results/hw-box.json or ") != NULL);
    CHECK(strstr(note, "`flashbed calibrate --quick` measures this machine into results/hw-box.json") != NULL);
    char *text = read_text_file(src, NULL);
    FILE *f = mkdir("results", 0755) == 0 ? fopen("results/hw-box.json", "w") : NULL;
    CHECK(text && f && fputs(text, f) >= 0);
    if (f)
        fclose(f);
    free(text);
    hw_choose(&set, NULL, "box", &c);
    CHECK(c.own && !strcmp(c.profile, "results/hw-box.json"));
    hw_choice_note(&c, "box", "results/hw-box.json", note, sizeof note);
    CHECK_STR(note, "Priced by this machine's own profile, box (results/hw-box.json), measured by `flashbed calibrate`.");
    /* one measured on an emulated device is passed over, and said so */
    text = read_text_file(src, NULL);
    f = fopen("results/hw-box.json", "w");
    CHECK(text && f && text[0] == '{' && fprintf(f, "{\"emulated\": true,%s", text + 1) > 0);
    if (f)
        fclose(f);
    free(text);
    hw_choose(&set, NULL, "box", &c);
    CHECK(!c.own && !strcmp(c.profile, HW_DEFAULT_PROFILE));
    hw_choice_note(&c, "m1max-cpu", "x.json", note, sizeof note);
    CHECK(strstr(note, "(the default: results/hw-box.json was measured on an emulated device (give it with --hw and "
                       "--allow-emulated)). `flashbed calibrate --quick`") != NULL);
    unlink("results/hw-box.json");
    rmdir("results");
    CHECK(chdir(cwd) == 0 && rmdir(dir) == 0);
}

int main(void)
{
    hand_made();
    by_construction();
    profile_choice();
    return check_report("replay_verdict");
}
