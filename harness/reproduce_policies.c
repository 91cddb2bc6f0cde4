/* REPORT.md's policy study and the quoting of a step's Markdown with its
 * long tables folded into their CSV (harness/reproduce_tables.h): the
 * report keeps a table's first rows and links the file holding them all,
 * and says once what the replays' friends notes say 144 times. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/fsutil.h"
#include "common/json_file.h"
#include "harness/reproduce_summary.h"
#include "harness/reproduce_tables.h"

/* line (len bytes) is "- " and one of notes, followed by anything. */
static bool is_note(const char *line, size_t len, const cJSON *notes)
{
    const cJSON *n;
    if (len < 2 || strncmp(line, "- ", 2))
        return false;
    cJSON_ArrayForEach(n, notes)
    {
        size_t k = cJSON_IsString(n) ? strlen(n->valuestring) : 0;
        if (k && k <= len - 2 && !strncmp(line + 2, n->valuestring, k))
            return true;
    }
    return false;
}

/* The rows a table left out, after it: where they all are. */
static void fold_note(struct strbuf *b, size_t *folded, const char *csv_rel)
{
    if (*folded)
        strbuf_add(b, "\n… and %zu more rows: every row in [`%s`](%s).\n", *folded, csv_rel, csv_rel);
    *folded = 0;
}

bool repro_quote_folded(struct strbuf *b, const struct repro_plan *p, const char *rel, const char *csv_rel,
                        size_t head, const cJSON *skip_notes)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", p->config.out, rel);
    char *text = read_text_file(path, NULL);
    if (!text)
        return false;
    size_t row = 0, folded = 0; /* row: of the table the line is in (0 outside one) */
    for (char *line = text, *end; *line; line = end + (*end != '\0')) {
        end = line + strcspn(line, "\n");
        size_t len = (size_t)(end - line);
        if (line[0] != '|') {
            row = 0;
            fold_note(b, &folded, csv_rel);
        } else if (++row > head + 2) { /* its header and rule, then head rows */
            folded++;
            continue;
        }
        if (is_note(line, len, skip_notes))
            continue;
        strbuf_add(b, "%s%.*s\n", line[0] == '#' ? "##" : "", (int)len, line);
    }
    fold_note(b, &folded, csv_rel);
    strbuf_add(b, "\n(from `%s`)\n\n", rel);
    free(text);
    return true;
}

/* friends against bundled over every policy and budget of the replays:
 * the range of the ratio of their bytes per token. */
struct friends_range {
    double lo, hi;
    size_t pairs, more, traces;
};

static const char *str_of(const cJSON *row, const char *key)
{
    const char *v = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(row, key));
    return v ? v : "";
}

static double bundled_bytes(const cJSON *results, const cJSON *like)
{
    const cJSON *r;
    const char *keys[] = {"policy", "dram_budget", "sets"};
    cJSON_ArrayForEach(r, results)
    {
        bool same = !strcmp(str_of(r, "layout"), "bundled");
        for (int k = 0; k < 3 && same; k++)
            same = cJSON_Compare(cJSON_GetObjectItemCaseSensitive(r, keys[k]),
                                 cJSON_GetObjectItemCaseSensitive(like, keys[k]), true);
        if (same)
            return cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "bytes_per_token"));
    }
    return NAN;
}

static void friends_of(struct friends_range *f, const cJSON *results)
{
    const cJSON *r;
    bool any = false;
    cJSON_ArrayForEach(r, results)
    {
        if (strcmp(str_of(r, "layout"), "friends"))
            continue;
        double bundled = bundled_bytes(results, r);
        double friends = cJSON_GetNumberValue(cJSON_GetObjectItemCaseSensitive(r, "bytes_per_token"));
        if (!(bundled > 0) || !isfinite(friends))
            continue;
        double ratio = friends / bundled;
        f->lo = fmin(f->lo, ratio), f->hi = fmax(f->hi, ratio);
        f->pairs++, f->more += ratio > 1;
        any = true;
    }
    f->traces += any;
}

static void friends_line(struct strbuf *b, const struct friends_range *f)
{
    if (!f->pairs)
        return;
    if (f->more == f->pairs)
        strbuf_add(b, "Co-activation bundling, said once for every trace: friends reads more bytes per token than "
                      "bundled in all %zu policy and budget pairs of the %zu traces, %.2f× to %.2f× as many, as the "
                      "paper's App. D found (hot neurons are every neuron's friend and are read again and again).",
                   f->pairs, f->traces, f->lo, f->hi);
    else
        strbuf_add(b, "Co-activation bundling, said once for every trace: friends reads %.2f× to %.2f× the bytes "
                      "per token of bundled over the %zu policy and budget pairs of the %zu traces (more in %zu of "
                      "them).", f->lo, f->hi, f->pairs, f->traces, f->more);
    strbuf_add(b, " Each pair's ratio and its reason: the notes of the trace's `replay.json`.\n\n");
}

static void policy_trace(struct strbuf *b, const struct repro_plan *p, const char *trace, struct friends_range *f)
{
    char rel[300], csv[300], path[4400];
    snprintf(path, sizeof path, "%s/policies/%s/replay.json", p->config.out, trace);
    cJSON *replay = read_json_file(path);
    friends_of(f, cJSON_GetObjectItemCaseSensitive(replay, "results"));
    snprintf(rel, sizeof rel, "policies/%s/replay.md", trace);
    snprintf(csv, sizeof csv, "policies/%s/replay.csv", trace);
    strbuf_add(b, "### %s\n\n", trace);
    if (!repro_quote_folded(b, p, rel, csv, 6, cJSON_GetObjectItemCaseSensitive(replay, "notes")))
        strbuf_add(b, "Did not run: no `%s`.\n\n", rel);
    cJSON_Delete(replay);
    static const char *const plots[] = {"budget_bytes", "budget_ms", "budget_reads", "fig4a"};
    for (int k = 0; k < 4; k++) {
        snprintf(rel, sizeof rel, "policies/%s/%s.png", trace, plots[k]);
        snprintf(path, sizeof path, "%s/%s", p->config.out, rel);
        if (path_exists(path))
            strbuf_add(b, "![%s](%s)\n\n", plots[k], rel);
    }
}

void repro_section_policies(struct strbuf *b, const struct repro_plan *p)
{
    strbuf_add(b, "## The policy study: bytes, reads and modelled ms per token under every policy, layout and "
                  "DRAM budget\n\n"
                  "`replay` of each trace at 10%%, 25%% and 50%% of the FFN as DRAM, priced on this machine's profile "
                  "(an infeasible budget is marked, not dropped). Each table shows its first rows; every row is in "
                  "the trace's `replay.csv`. The best policy at each budget heads this report.\n\n");
    char names[32][64];
    size_t n = repro_summary_traces(p, names, 32);
    struct friends_range f = {.lo = INFINITY, .hi = -INFINITY};
    struct strbuf traces = {0};
    for (size_t i = 0; i < n; i++)
        policy_trace(&traces, p, names[i], &f);
    friends_line(b, &f);
    char *text = strbuf_take(&traces);
    strbuf_add(b, "%s", text ? text : "");
    free(text);
    if (!n)
        strbuf_add(b, "Not replayed yet.\n\n");
}
