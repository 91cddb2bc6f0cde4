/* Fuzzes the command-line option parser (common/options.c) with a command
 * that has one option of every type, constraints of every kind (ranges,
 * an open upper end, allowed words, "auto", a short name), a shared
 * fragment at an offset with a command-specific default, and bare
 * arguments. The input is argv after the subcommand, one argument per
 * line. A parse that succeeds must hold every value inside its declared
 * range, and is dumped as JSON (every result's provenance) and asked
 * which options were given; the global-options
 * prefix parser reads the same words. */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "common/options.h"
#include "common/parse.h"
#include "fuzz_util.h"

enum { MAX_ARGS = 64 };

struct fragment {
    char *prompt;
    double temperature;
    uint64_t seed;
};

struct values {
    bool flag;
    char *name, *dtype;
    uint64_t count, threads, size;
    double ratio, persist, seconds;
    struct u64_list sizes, list;
    struct fragment frag;
    struct opt_given given;
};

#define O(f) offsetof(struct values, f)
static const struct opt_def own[] = {
    {"flag", OPT_FLAG, O(flag), NULL, NULL, "a flag"},
    {"name", OPT_STRING, O(name), NULL, "NAME", "a string", .short_name = 'n'},
    {"dtype", OPT_STRING, O(dtype), "f32", "TYPE", "allowed words", .allowed = "f32|f16|bf16"},
    {"count", OPT_UINT, O(count), "1", "N", "a bounded count", .min = 1, .max = 4096},
    {"threads", OPT_UINT, O(threads), "auto", "N", "auto or a count", .min = 1, .max = FB_MAX_THREADS,
     .allowed = "auto"},
    {"size", OPT_SIZE, O(size), "4k", "SIZE", "a size", .min = 512, .max = OPT_NO_MAX},
    {"ratio", OPT_DOUBLE, O(ratio), "0.5", "R", "a double", .min = -1, .max = 1},
    {"persist", OPT_DOUBLE, O(persist), "0", "P", "an open range", .max = 1, .max_open = true},
    {"time", OPT_DURATION, O(seconds), "2", "T", "a duration", .min = 0.001, .max = 3600},
    {"chunks", OPT_SIZE_LIST, O(sizes), "4k,32k", "LIST", "sizes", .min = 1, .max = 1 << 30},
    {"list", OPT_UINT_LIST, O(list), "1,2", "LIST", "counts", .min = 1, .max = 64},
    OPT_END,
};
#undef O

#define F(f) offsetof(struct fragment, f)
static const struct opt_def fragment_opts[] = {
    {"prompt", OPT_STRING, F(prompt), "Once upon a time", "TEXT", "a shared string"},
    {"temperature", OPT_DOUBLE, F(temperature), "1", "T", "a shared double", .min = 0, .max = 100},
    {"seed", OPT_UINT, F(seed), "0", "S", "a shared number"},
    OPT_END,
};
#undef F

static const struct opt_table tables[] = {{fragment_opts, offsetof(struct values, frag)}, OPT_TABLES_END};
static const struct opt_default defaults[] = {{"temperature", "0.8"}, OPT_DEFAULTS_END};
static const struct opt_command command = {
    .name = "fuzz",
    .usage = "[options] [FILE...]",
    .summary = "every kind of option",
    .opts = own,
    .max_positional = 2,
    .tables = tables,
    .defaults = defaults,
    OPT_GIVEN_AT(struct values, given),
};

static bool in(double v, double lo, double hi)
{
    return v >= lo && v <= hi;
}

/* What a successful parse promises: every value inside its declared range
 * and allowed words, defaults included. */
static void check_ranges(const struct values *v)
{
    bool ok = v->dtype && (!strcmp(v->dtype, "f32") || !strcmp(v->dtype, "f16") || !strcmp(v->dtype, "bf16")) &&
              in((double)v->count, 1, 4096) && (v->threads == 0 || in((double)v->threads, 1, FB_MAX_THREADS)) &&
              v->size >= 512 && in(v->ratio, -1, 1) && v->persist >= 0 && v->persist < 1 &&
              in(v->seconds, 0.001, 3600) && v->sizes.n >= 1 && v->list.n >= 1 && v->frag.prompt &&
              in(v->frag.temperature, 0, 100);
    for (size_t i = 0; i < v->sizes.n; i++)
        ok = ok && in((double)v->sizes.v[i], 1, 1 << 30);
    for (size_t i = 0; i < v->list.n; i++)
        ok = ok && in((double)v->list.v[i], 1, 64);
    if (!ok)
        abort();
}

/* argv[0] = the command, then one argument per line of text (changed in place). */
static int split_args(char *text, char **argv)
{
    int argc = 0;
    argv[argc++] = "fuzz";
    for (char *line = text; line && argc < MAX_ARGS;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        argv[argc++] = line;
        line = nl ? nl + 1 : NULL;
    }
    return argc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *text = fuzz_strndup(data, size);
    char *argv[MAX_ARGS];
    int argc = split_args(text, argv);
    struct values v;
    memset(&v, 0, sizeof v);
    char *positional[2];
    int n_positional = 0;
    char err[1024];
    int rc = opts_parse(&command, &v, argc, argv, positional, &n_positional, err, sizeof err);
    fuzz_note("opts_parse", rc, rc > 0 ? "help" : err);
    if (rc == 0) {
        if (n_positional > command.max_positional)
            abort();
        check_ranges(&v);
        cJSON *j = opts_to_json(&command, &v);
        char *s = cJSON_PrintUnformatted(j);
        free(s);
        cJSON_Delete(j);
        opts_given(&command, &v, "size");
        opts_given(&command, &v, "temperature");
    }
    opts_free(&command, &v);
    memset(&v, 0, sizeof v);
    int next;
    opts_parse_prefix(&command, &v, argc, argv, &next, err, sizeof err);
    opts_free(&command, &v);
    free(text);
    return 0;
}
