/* The declarative option parser: defaults, both value spellings, lists,
 * positionals, errors, and the JSON dump used for provenance. */
#include <stdlib.h>

#include "check.h"
#include "common/options.h"
#include "common/parse.h"

struct demo {
    char *name;
    uint64_t size;
    struct u64_list chunks;
    uint64_t count;
    double runtime;
    bool flag;
    struct opt_given given;
};

#define O(f) offsetof(struct demo, f)
static const struct opt_def demo_opts[] = {
    {"name", OPT_STRING, O(name), "x", "S", "a name"},
    {"size", OPT_SIZE, O(size), "4G", "B", "a size"},
    {"chunks", OPT_SIZE_LIST, O(chunks), "4k,8k", "L", "sizes"},
    {"count", OPT_UINT, O(count), NULL, "N", "a count"},
    {"runtime", OPT_DURATION, O(runtime), "2", "S", "seconds"},
    {"flag", OPT_FLAG, O(flag), NULL, NULL, "a flag"},
    OPT_END,
};
#undef O
static const struct opt_command demo_cmd = {"demo", "[options]", "A demo.", demo_opts, 1,
                                            OPT_GIVEN_AT(struct demo, given)};

/* Options with ranges and allowed values (the constraint fields). */
struct ranged {
    uint64_t count;
    double ratio;
    uint64_t size;
    struct u64_list threads;
    char *mode;
    double secs;
    struct opt_given given;
};

#define O(f) offsetof(struct ranged, f)
static const struct opt_def ranged_opts[] = {
    {"count", OPT_UINT, O(count), "1", "N", "a count", .min = 1, .max = 10},
    {"ratio", OPT_DOUBLE, O(ratio), "0", "R", "a ratio", .max = 1, .max_open = true},
    {"size", OPT_SIZE, O(size), "4k", "B", "a size", .min = 4096, .max = 1 << 30},
    {"threads", OPT_UINT_LIST, O(threads), "1,2", "L", "threads", .min = 1, .max = FB_MAX_THREADS},
    {"mode", OPT_STRING, O(mode), "bb", "M", "a mode", .allowed = "a|bb|c"},
    {"secs", OPT_DURATION, O(secs), "1", "S", "seconds", .min = 0.5, .max = OPT_NO_MAX},
    OPT_END,
};
static const struct opt_def bad_default_opts[] = {
    {"count", OPT_UINT, O(count), "11", "N", "a count", .min = 1, .max = 10},
    OPT_END,
};
static const struct opt_def bad_string_default_opts[] = {
    {"mode", OPT_STRING, O(mode), "d", "M", "a mode", .allowed = "a|bb|c"},
    OPT_END,
};
static const struct opt_def bad_range_opts[] = {
    {"count", OPT_UINT, O(count), NULL, "N", "min without max", .min = 5},
    OPT_END,
};
static const struct opt_def bad_allowed_opts[] = {
    {"count", OPT_UINT, O(count), NULL, "N", "allowed on a number", .allowed = "1|2"},
    OPT_END,
};
static const struct opt_def word_opts[] = {
    {"count", OPT_UINT, O(count), "auto", "N|auto", "a count or auto", .min = 1, .max = 10, .allowed = "auto"},
    OPT_END,
};
static const struct opt_def bad_word_opts[] = { /* 0 would be both a number and the word */
    {"count", OPT_UINT, O(count), NULL, "N", "a word without a range from 1", .allowed = "auto"},
    OPT_END,
};
#undef O
static const struct opt_command ranged_cmd = {"ranged", "[options]", "Ranges.", ranged_opts, 0,
                                              OPT_GIVEN_AT(struct ranged, given)};

/* Parses argv against `opts`; msg gets the error (the parser prints nothing). */
static int parse_ranged(const struct opt_def *opts, int argc, char **argv, char *msg, size_t len)
{
    struct opt_command cmd = ranged_cmd;
    cmd.opts = opts;
    struct ranged r;
    memset(&r, 0, sizeof r);
    msg[0] = '\0';
    int rc = opts_parse(&cmd, &r, argc, argv, NULL, NULL, msg, len);
    opts_free(&cmd, &r);
    return rc;
}

#define ACCEPTS(...)                                                                   \
    do {                                                                               \
        char *a_[] = {"ranged", __VA_ARGS__, NULL};                                   \
        CHECK(parse_ranged(ranged_opts, (int)(sizeof a_ / sizeof *a_) - 1, a_, msg, sizeof msg) == 0); \
    } while (0)
#define REFUSES(want, ...)                                                             \
    do {                                                                               \
        char *a_[] = {"ranged", __VA_ARGS__, NULL};                                   \
        CHECK(parse_ranged(ranged_opts, (int)(sizeof a_ / sizeof *a_) - 1, a_, msg, sizeof msg) == -1); \
        CHECK(strstr(msg, want) != NULL);                                              \
    } while (0)

static void test_ranges(void)
{
    char msg[1024];
    char *none[] = {"ranged", NULL};
    CHECK(parse_ranged(ranged_opts, 1, none, msg, sizeof msg) == 0); /* the defaults are in range */
    ACCEPTS("--count", "5");
    ACCEPTS("--count", "1"); /* both bounds are in */
    ACCEPTS("--count", "10");
    REFUSES("ranged --count: 0 is out of range (1 to 10)", "--count", "0");
    REFUSES("ranged --count: 11 is out of range (1 to 10)", "--count=11");
    ACCEPTS("--ratio", "0");
    ACCEPTS("--ratio", "0.999");
    REFUSES("ranged --ratio: 1 is out of range (0 to under 1)", "--ratio", "1");
    REFUSES("ranged --ratio: -0.5 is out of range", "--ratio", "-0.5");
    ACCEPTS("--size", "4k");
    ACCEPTS("--size", "1g");
    REFUSES("ranged --size: 2k is out of range (4k to 1g)", "--size", "2k");
    REFUSES("ranged --size: 1048580k is out of range (4k to 1g)", "--size", "1048580k");
    ACCEPTS("--threads", "1,1024");
    REFUSES("ranged --threads: 1025 is out of range (each 1 to 1024)", "--threads", "4,1025");
    ACCEPTS("--mode", "a");
    ACCEPTS("--mode", "c");
    REFUSES("ranged --mode: unknown mode 'd' (expected 'a', 'bb' or 'c')", "--mode", "d");
    REFUSES("unknown mode 'b'", "--mode", "b"); /* a prefix of an allowed value is not one */
    REFUSES("unknown mode 'bbb'", "--mode", "bbb");
    ACCEPTS("--secs", "500ms");
    ACCEPTS("--secs", "1000000");
    REFUSES("ranged --secs: 0.25 is out of range (at least 0.5)", "--secs", "250ms");

    /* a default outside its own range, or a table declared wrong, fails every parse */
    CHECK(parse_ranged(bad_default_opts, 1, none, msg, sizeof msg) == -1);
    CHECK(strstr(msg, "ranged --count: the default 11 is out of range (1 to 10)") != NULL);
    CHECK(parse_ranged(bad_string_default_opts, 1, none, msg, sizeof msg) == -1);
    CHECK(strstr(msg, "the default mode 'd' is not allowed") != NULL);
    CHECK(parse_ranged(bad_range_opts, 1, none, msg, sizeof msg) == -1);
    CHECK(strstr(msg, "internal: ranged --count") != NULL);
    CHECK(parse_ranged(bad_allowed_opts, 1, none, msg, sizeof msg) == -1);
    CHECK(strstr(msg, "internal: ranged --count") != NULL);
}

/* An OPT_UINT's one word stands for 0 and goes back to JSON as the word. */
static void test_uint_word(void)
{
    char msg[1024];
    struct opt_command cmd = ranged_cmd;
    cmd.opts = word_opts;
    struct ranged r;
    char *typed[] = {"ranged", "--count", "7", NULL}, *word[] = {"ranged", NULL};
    memset(&r, 0, sizeof r);
    CHECK(opts_parse(&cmd, &r, 3, typed, NULL, NULL, msg, sizeof msg) == 0);
    CHECK_U64(r.count, 7);
    memset(&r, 0, sizeof r);
    CHECK(opts_parse(&cmd, &r, 1, word, NULL, NULL, msg, sizeof msg) == 0);
    CHECK_U64(r.count, 0);
    cJSON *j = opts_to_json(&cmd, &r);
    CHECK_STR(cJSON_GetStringValue(cJSON_GetObjectItem(j, "count")), "auto");
    cJSON_Delete(j);
    char *zero[] = {"ranged", "--count", "0", NULL}, *other[] = {"ranged", "--count", "autox", NULL};
    CHECK(parse_ranged(word_opts, 3, zero, msg, sizeof msg) == -1);
    CHECK(strstr(msg, "0 is out of range (1 to 10)") != NULL);
    CHECK(parse_ranged(word_opts, 3, other, msg, sizeof msg) == -1);
    char *none[] = {"ranged", NULL};
    CHECK(parse_ranged(bad_word_opts, 1, none, msg, sizeof msg) == -1);
    CHECK(strstr(msg, "internal: ranged --count") != NULL);
    char buf[4096] = "";
    FILE *f = fmemopen(buf, sizeof buf - 1, "w");
    opts_print_options(word_opts, f);
    fclose(f);
    CHECK(strstr(buf, "[range: 1 to 10, or auto]") != NULL);
}

static void test_help_shows_constraints(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    opts_print_help(&ranged_cmd, f);
    fclose(f);
    CHECK(strstr(text, "a count [default: 1] [range: 1 to 10]") != NULL);
    CHECK(strstr(text, "[range: 0 to under 1]") != NULL);
    CHECK(strstr(text, "[range: 4k to 1g]") != NULL);
    CHECK(strstr(text, "threads [default: 1,2] [each: 1 to 1024]") != NULL);
    CHECK(strstr(text, "a mode [default: bb] [one of: a|bb|c]") != NULL);
    CHECK(strstr(text, "[range: at least 0.5]") != NULL);
    free(text);
}

/* Options before a subcommand: parsing stops at the first bare argument. */
static void test_prefix(void)
{
    struct ranged r;
    memset(&r, 0, sizeof r);
    int next = 0;
    char *a[] = {"prog", "--count", "3", "--mode=c", "sub", "--count", "4", NULL};
    char err[256];
    CHECK(opts_parse_prefix(&ranged_cmd, &r, 7, a, &next, err, sizeof err) == 0);
    CHECK(next == 4);
    CHECK_U64(r.count, 3);
    CHECK_STR(r.mode, "c");
    CHECK(opts_given(&ranged_cmd, &r, "count"));
    opts_free(&ranged_cmd, &r);
    char *b[] = {"prog", "--count", "3", NULL};
    CHECK(opts_parse_prefix(&ranged_cmd, &r, 3, b, &next, err, sizeof err) == 0 && next == 3);
    opts_free(&ranged_cmd, &r);
    char *c[] = {"prog", "--help", "sub", NULL}; /* help is the caller's to print */
    CHECK(opts_parse_prefix(&ranged_cmd, &r, 3, c, &next, err, sizeof err) == 0 && next == 1);
    opts_free(&ranged_cmd, &r);
}

/* A fragment two commands share, embedded at a different offset in each:
 * one declaration, each command's defaults, a short name. */
struct frag {
    char *text;
    uint64_t n;
    double t;
};

#define F(f) offsetof(struct frag, f)
static const struct opt_def frag_opts[] = {
    {"text", OPT_STRING, F(text), NULL, "S", "some text"},
    {"n", OPT_UINT, F(n), "64", "N", "a count", .min = 1, .max = OPT_NO_MAX, .short_name = 'n'},
    {"t", OPT_DOUBLE, F(t), "0", "T", "a temperature", .max = OPT_NO_MAX},
    OPT_END,
};
#undef F

struct cmd_a {
    char *head;
    struct frag f;
    bool tail;
    struct opt_given given;
};
struct cmd_b {
    uint64_t own;
    struct frag f;
};

static const struct opt_def a_head[] = {
    {"head", OPT_STRING, offsetof(struct cmd_a, head), "h", "S", "a head"},
    OPT_END,
};
static const struct opt_def a_tail[] = {
    {"tail", OPT_FLAG, offsetof(struct cmd_a, tail), NULL, NULL, "a tail"},
    OPT_END,
};
static const struct opt_table a_tables[] = {
    {frag_opts, offsetof(struct cmd_a, f)},
    {a_tail, 0},
    OPT_TABLES_END,
};
static const struct opt_default a_defaults[] = {{"n", "256"}, {"t", "1.0"}, OPT_DEFAULTS_END};
static const struct opt_command cmd_a = {
    .name = "a", .usage = "[options]", .summary = "A.", .opts = a_head, .max_positional = 1,
    .tables = a_tables, .defaults = a_defaults, OPT_GIVEN_AT(struct cmd_a, given),
};
static const struct opt_def b_own[] = {
    {"own", OPT_UINT, offsetof(struct cmd_b, own), "3", "N", "its own"},
    OPT_END,
};
static const struct opt_table b_tables[] = {
    {frag_opts, offsetof(struct cmd_b, f)},
    {b_own, 0},
    OPT_TABLES_END,
};
static const struct opt_command cmd_b = {.name = "b", .usage = "", .summary = "B.", .tables = b_tables};

/* a: the command's defaults over the fragment's; values, positionals,
 * what was given and the JSON, tables in order. */
static void fragments_in_a(void)
{
    char err[256], *pos[1];
    int npos = 0;
    struct cmd_a a;
    memset(&a, 0, sizeof a);
    char *a1[] = {"a", NULL};
    CHECK(opts_parse(&cmd_a, &a, 1, a1, pos, &npos, err, sizeof err) == 0);
    CHECK_STR(a.head, "h");
    CHECK_U64(a.f.n, 256); /* the command's defaults, not the fragment's */
    CHECK_NEAR(a.f.t, 1.0, 0);
    CHECK(a.f.text == NULL && !a.tail);
    opts_free(&cmd_a, &a);

    char *a2[] = {"a", "-n", "5", "--text=x", "--tail", "in", "--t", "0.5", NULL};
    CHECK(opts_parse(&cmd_a, &a, 8, a2, pos, &npos, err, sizeof err) == 0);
    CHECK_U64(a.f.n, 5);
    CHECK_STR(a.f.text, "x");
    CHECK_NEAR(a.f.t, 0.5, 0);
    CHECK(a.tail && npos == 1 && strcmp(pos[0], "in") == 0);
    CHECK(opts_given(&cmd_a, &a, "n") && opts_given(&cmd_a, &a, "tail") && !opts_given(&cmd_a, &a, "head"));
    cJSON *j = opts_to_json(&cmd_a, &a);
    char *text = cJSON_PrintUnformatted(j);
    CHECK_STR(text, "{\"head\":\"h\",\"text\":\"x\",\"n\":5,\"t\":0.5,\"tail\":true}"); /* tables in order */
    free(text);
    cJSON_Delete(j);
    opts_free(&cmd_a, &a);
    CHECK(a.f.text == NULL && a.head == NULL);
}

/* b: the fragment's own defaults, ranges and refusals under b's name. */
static void fragments_in_b(void)
{
    char err[256];
    struct cmd_b b;
    memset(&b, 0, sizeof b);
    char *b1[] = {"b", "--n", "7", NULL};
    CHECK(opts_parse(&cmd_b, &b, 3, b1, NULL, NULL, err, sizeof err) == 0);
    CHECK_U64(b.f.n, 7);
    CHECK_NEAR(b.f.t, 0, 0); /* the fragment's own default */
    CHECK_U64(b.own, 3);
    opts_free(&cmd_b, &b);
    char *b2[] = {"b", "-n", "0", NULL};
    CHECK(opts_parse(&cmd_b, &b, 3, b2, NULL, NULL, err, sizeof err) == -1);
    CHECK_STR(err, "b --n: 0 is out of range (at least 1)");
    opts_free(&cmd_b, &b);
    char *b3[] = {"b", "-n", NULL};
    CHECK(opts_parse(&cmd_b, &b, 2, b3, NULL, NULL, err, sizeof err) == -1);
    CHECK_STR(err, "b: option --n needs a value (N)");
    opts_free(&cmd_b, &b);
    char *b4[] = {"b", "-x", NULL}; /* no option has that short name: a bare argument */
    CHECK(opts_parse(&cmd_b, &b, 2, b4, NULL, NULL, err, sizeof err) == -1);
    CHECK_STR(err, "b: unexpected argument '-x' (see flashbed b --help)");
    opts_free(&cmd_b, &b);
}

/* --help shows each command's default and the short name */
static void fragments_help(void)
{
    char *help = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&help, &len);
    opts_print_help(&cmd_a, f);
    fclose(f);
    CHECK(strstr(help, "a count (also -n) [default: 256] [range: at least 1]") != NULL);
    CHECK(strstr(help, "--head") < strstr(help, "--text") && strstr(help, "--t T") < strstr(help, "--tail"));
    free(help);
}

/* tables that declare an option twice, or a default for no option */
static void fragments_bad_tables(void)
{
    char err[256];
    struct cmd_b b;
    memset(&b, 0, sizeof b);
    char *b1[] = {"b", "--n", "7", NULL};
    static const struct opt_table twice[] = {{frag_opts, 0}, {frag_opts, 0}, OPT_TABLES_END};
    struct opt_command bad = cmd_b;
    bad.tables = twice;
    CHECK(opts_parse(&bad, &b, 1, b1, NULL, NULL, err, sizeof err) == -1);
    CHECK_STR(err, "internal: b declares --text twice");
    opts_free(&cmd_b, &b);
    static const struct opt_default stray[] = {{"zz", "1"}, OPT_DEFAULTS_END};
    bad = cmd_b;
    bad.defaults = stray;
    CHECK(opts_parse(&bad, &b, 1, b1, NULL, NULL, err, sizeof err) == -1);
    CHECK_STR(err, "internal: b sets a default for --zz, an option it does not have");
    opts_free(&cmd_b, &b);
}

static void test_fragments(void)
{
    fragments_in_a();
    fragments_in_b();
    fragments_help();
    fragments_bad_tables();
}

/* Each parsed struct keeps its own answers: a second parse, of another
 * struct of the same command or of another command, changes nothing in
 * the first; a command that keeps none answers false. */
static void test_given_per_struct(void)
{
    char err[256];
    struct demo one, two;
    memset(&one, 0, sizeof one);
    memset(&two, 0, sizeof two);
    char *a1[] = {"demo", "--size", "1m", NULL}, *a2[] = {"demo", "--count", "3", NULL};
    CHECK(opts_parse(&demo_cmd, &one, 3, a1, NULL, NULL, err, sizeof err) == 0);
    CHECK(opts_parse(&demo_cmd, &two, 3, a2, NULL, NULL, err, sizeof err) == 0);
    struct ranged r;
    memset(&r, 0, sizeof r);
    char *a3[] = {"ranged", "--size", "4k", NULL};
    CHECK(opts_parse(&ranged_cmd, &r, 3, a3, NULL, NULL, err, sizeof err) == 0);
    CHECK(opts_given(&demo_cmd, &one, "size") && !opts_given(&demo_cmd, &one, "count"));
    CHECK(opts_given(&demo_cmd, &two, "count") && !opts_given(&demo_cmd, &two, "size"));
    CHECK(opts_given(&ranged_cmd, &r, "size") && !opts_given(&ranged_cmd, &r, "count"));
    struct cmd_b b;
    memset(&b, 0, sizeof b);
    char *b1[] = {"b", "--own", "4", NULL};
    CHECK(opts_parse(&cmd_b, &b, 3, b1, NULL, NULL, err, sizeof err) == 0);
    CHECK(!opts_given(&cmd_b, &b, "own")); /* cmd_b keeps no record */
    opts_free(&demo_cmd, &one);
    opts_free(&demo_cmd, &two);
    opts_free(&ranged_cmd, &r);
    opts_free(&cmd_b, &b);
}

static int parse(struct demo *d, int argc, char **argv, char **pos, int *npos)
{
    char err[256];
    memset(d, 0, sizeof *d);
    return opts_parse(&demo_cmd, d, argc, argv, pos, npos, err, sizeof err);
}

/* The defaults, then every kind of value given, and the JSON of them. */
static void test_values(void)
{
    struct demo d;
    char *pos[2];
    int npos = 0;

    char *a1[] = {"demo", NULL};
    CHECK(parse(&d, 1, a1, pos, &npos) == 0);
    CHECK_STR(d.name, "x");
    CHECK_U64(d.size, 4ull << 30);
    CHECK_U64(d.chunks.n, 2);
    CHECK_U64(d.count, 0);
    CHECK_NEAR(d.runtime, 2, 0);
    CHECK(!d.flag);
    CHECK(!opts_given(&demo_cmd, &d, "size"));
    opts_free(&demo_cmd, &d);

    char *a2[] = {"demo", "--size", "1m", "--chunks=32k,1m,4k", "--flag", "input.bin",
                  "--runtime", "250ms", "--name=y", NULL};
    CHECK(parse(&d, 9, a2, pos, &npos) == 0);
    CHECK_U64(d.size, 1u << 20);
    CHECK_U64(d.chunks.n, 3);
    CHECK_U64(d.chunks.v[1], 1u << 20);
    CHECK(d.flag);
    CHECK_NEAR(d.runtime, 0.25, 1e-12);
    CHECK_STR(d.name, "y");
    CHECK(npos == 1 && strcmp(pos[0], "input.bin") == 0);
    CHECK(opts_given(&demo_cmd, &d, "size"));
    CHECK(!opts_given(&demo_cmd, &d, "count"));
    cJSON *j = opts_to_json(&demo_cmd, &d);
    char *text = cJSON_PrintUnformatted(j);
    CHECK_STR(text, "{\"name\":\"y\",\"size\":1048576,\"chunks\":[32768,1048576,4096],\"count\":0,"
                    "\"runtime\":0.25,\"flag\":true}");
    free(text);
    cJSON_Delete(j);
    opts_free(&demo_cmd, &d);
}

/* An unknown option, a bad size, a missing value, a positional too many,
 * a value on a flag: refused; --help answers 1. */
static void test_refusals(void)
{
    struct demo d;
    char *pos[2];
    int npos = 0;
    char *bad1[] = {"demo", "--nope", NULL};
    CHECK(parse(&d, 2, bad1, pos, &npos) == -1);
    opts_free(&demo_cmd, &d);
    char *bad2[] = {"demo", "--size", "4x", NULL};
    CHECK(parse(&d, 3, bad2, pos, &npos) == -1);
    opts_free(&demo_cmd, &d);
    char *bad3[] = {"demo", "--size", NULL};
    CHECK(parse(&d, 2, bad3, pos, &npos) == -1);
    opts_free(&demo_cmd, &d);
    char *bad4[] = {"demo", "a", "b", NULL};
    CHECK(parse(&d, 3, bad4, pos, &npos) == -1);
    opts_free(&demo_cmd, &d);
    char *bad5[] = {"demo", "--flag=1", NULL};
    CHECK(parse(&d, 2, bad5, pos, &npos) == -1);
    opts_free(&demo_cmd, &d);
    char *help[] = {"demo", "--help", NULL};
    CHECK(parse(&d, 2, help, pos, &npos) == 1);
    opts_free(&demo_cmd, &d);
}

/* An unknown option names the one it likely meant; one of the program's
 * global options given after the command says where it goes. */
static void test_suggestions(void)
{
    char msg[512];
    struct opt_def globals[] = {
        {"configs", OPT_STRING, 0, NULL, "DIR", "configs"},
        {"no-pin", OPT_FLAG, 0, NULL, NULL, "no pin"},
        OPT_END,
    };
    struct opt_command cmd = ranged_cmd;
    cmd.before_command = globals;
    struct ranged r;
    char *typo[] = {"ranged", "--cuont", "3", NULL};
    memset(&r, 0, sizeof r);
    CHECK(opts_parse(&cmd, &r, 3, typo, NULL, NULL, msg, sizeof msg) == -1);
    CHECK_STR(msg, "ranged: unknown option '--cuont'; did you mean --count? (see flashbed ranged --help)");
    opts_free(&cmd, &r);
    char *global[] = {"ranged", "--configs", "x", NULL};
    CHECK(opts_parse(&cmd, &r, 3, global, NULL, NULL, msg, sizeof msg) == -1);
    CHECK_STR(msg, "ranged: --configs is a global option: it goes before the command (flashbed --configs ... ranged ...)");
    opts_free(&cmd, &r);
    char *near_global[] = {"ranged", "--config=x", NULL};
    CHECK(opts_parse(&cmd, &r, 2, near_global, NULL, NULL, msg, sizeof msg) == -1);
    CHECK_STR(msg, "ranged: unknown option '--config'; did you mean the global option --configs? (it goes before "
                   "the command) (see flashbed ranged --help)");
    opts_free(&cmd, &r);
    char *help[] = {"ranged", "--hlep", NULL};
    CHECK(opts_parse(&cmd, &r, 2, help, NULL, NULL, msg, sizeof msg) == -1);
    CHECK_STR(msg, "ranged: unknown option '--hlep'; did you mean --help? (see flashbed ranged --help)");
    opts_free(&cmd, &r);
    char *far[] = {"ranged", "--zzzzzz", NULL};
    CHECK(opts_parse(&cmd, &r, 2, far, NULL, NULL, msg, sizeof msg) == -1);
    CHECK_STR(msg, "ranged: unknown option '--zzzzzz' (see flashbed ranged --help)");
    opts_free(&cmd, &r);
    int next = 0;
    char *before[] = {"prog", "--moed", "a", "sub", NULL};
    CHECK(opts_parse_prefix(&ranged_cmd, &r, 4, before, &next, msg, sizeof msg) == -1);
    CHECK_STR(msg, "unknown option '--moed' before the command; did you mean --mode? (see flashbed --help)");
    opts_free(&ranged_cmd, &r);
    char *cmd_opt[] = {"prog", "--prompt", "m", "sub", NULL};
    CHECK(opts_parse_prefix(&ranged_cmd, &r, 4, cmd_opt, &next, msg, sizeof msg) == -1);
    CHECK(strstr(msg, "a command's own options go after the command (flashbed COMMAND --prompt)") != NULL);
    opts_free(&ranged_cmd, &r);
}

/* A size option needs a unit: "25" refused, "25B" bytes; a help that
 * states its default says it once, one that does not gets the table's. */
static void test_size_units_and_defaults(void)
{
    char msg[512];
    REFUSES("ranged --size: '5000' has no unit: did you mean 5000G?", "--size", "5000");
    ACCEPTS("--size", "5000B");
    struct opt_def stated[] = {
        {"n", OPT_UINT, 0, "0", "N", "threads [default: all cores]"},
        {"m", OPT_UINT, 0, "3", "N", "tries"},
        OPT_END,
    };
    struct opt_command cmd = {"stated", "", "", stated, 0};
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    opts_print_help(&cmd, f);
    fclose(f);
    CHECK(strstr(text, "threads [default: all cores]\n") != NULL);
    CHECK(strstr(text, "tries [default: 3]\n") != NULL);
    free(text);
}

int main(void)
{
    test_values();
    test_refusals();
    test_suggestions();
    test_size_units_and_defaults();
    test_ranges();
    test_uint_word();
    test_help_shows_constraints();
    test_prefix();
    test_fragments();
    test_given_per_struct();
    return check_report("test_options");
}
