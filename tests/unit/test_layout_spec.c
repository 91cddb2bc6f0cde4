/* A layout as a value (cache/layout_spec.h): the one parser from text, the
 * one formatter back, lists as replay takes them, and the refusals word
 * for word as run, replay and predict print them. Every name the formatter
 * writes parses back to the same value. */
#include "check.h"

#include <stdlib.h>

#include "cache/cache.h"
#include "cache/transposed.h"

static struct layout_spec parse(const char *text, char *err)
{
    struct layout_spec l;
    if (cache_layout_parse(text, &l, err, 256) != 0)
        CHECK(l.ops == NULL && l.arg == 0); /* zeroed on failure */
    return l;
}

/* Each name parses into its ops and argument and is written back as given. */
static void test_round_trip(void)
{
    static const struct {
        const char *text;
        const struct layout_ops *ops;
        uint64_t arg;
    } cases[] = {
        {"split", &layout_split, 0},       {"bundled", &layout_bundled, 0},   {"friends", &layout_friends, 0},
        {"coalesce:0", &layout_coalesce, 0}, {"coalesce:2", &layout_coalesce, 2},
        {"coalesce:4294967294", &layout_coalesce, 4294967294ull}, {"transposed", &layout_transposed, 0},
    };
    char err[256], name[LAYOUT_NAME_MAX];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct layout_spec l = parse(cases[i].text, err);
        CHECK(l.ops == cases[i].ops);
        CHECK_U64(l.arg, cases[i].arg);
        cache_layout_name(&l, name, sizeof name);
        CHECK_STR(name, cases[i].text);
        struct layout_spec m = layout_spec_of(cases[i].ops, cases[i].arg);
        CHECK(layout_spec_equal(&l, &m));
    }
    /* the spelling is the formatter's: leading zeros are not kept, whatever the text's length */
    struct layout_spec l = parse("coalesce:000000000000000000000000000000000000000000000000000003", err);
    cache_layout_name(&l, name, sizeof name);
    CHECK_STR(name, "coalesce:3");
    /* an argument only where the layout takes one; none is no layout */
    struct layout_spec b = layout_spec_of(&layout_bundled, 7), none = {0};
    CHECK_U64(b.arg, 0);
    CHECK(!layout_spec_equal(&b, &none));
    cache_layout_name(&none, name, sizeof name);
    CHECK_STR(name, "");
    struct layout_spec c0 = layout_spec_of(&layout_coalesce, 0), c1 = layout_spec_of(&layout_coalesce, 1);
    CHECK(!layout_spec_equal(&c0, &c1));
}

/* Refusals name the text and what is wrong, as the commands print them. */
static void test_refusals(void)
{
    char err[256];
    CHECK(parse("diagonal", err).ops == NULL);
    CHECK_STR(err, "unknown layout 'diagonal' (available: split, bundled, friends, coalesce:G, transposed)");
    CHECK(parse("", err).ops == NULL);
    CHECK_STR(err, "unknown layout '' (available: split, bundled, friends, coalesce:G, transposed)");
    CHECK(parse("coalesce", err).ops == NULL);
    CHECK_STR(err, "layout 'coalesce' needs a whole number after ':' (e.g. coalesce:4)");
    static const char *const not_numbers[] = {"coalesce:", "coalesce:x", "coalesce:-1", "coalesce:1x",
                                              "coalesce:99999999999999999999"};
    for (size_t i = 0; i < sizeof not_numbers / sizeof not_numbers[0]; i++)
        CHECK(parse(not_numbers[i], err).ops == NULL && strstr(err, "needs a whole number after ':'"));
    CHECK(parse("coalesce:4294967295", err).ops == NULL);
    CHECK_STR(err, "layout 'coalesce:4294967295': the gap must be below 4294967295 rows");
    CHECK(parse("split:1", err).ops == NULL);
    CHECK_STR(err, "layout 'split:1' takes no argument");
    CHECK(parse("friends:2", err).ops == NULL && strstr(err, "layout 'friends:2' takes no argument"));
    CHECK(parse("split,bundled", err).ops == NULL && strstr(err, "unknown layout 'split,bundled'"));
}

/* Lists: every element, in order; the first bad one refused as the parser
 * words it (an empty element is the unknown layout ''), the elements
 * before it kept. */
static void test_lists(void)
{
    char err[256];
    struct layout_spec *l = NULL;
    size_t n = 0;
    CHECK(cache_layout_parse_list("split,bundled,friends,coalesce:2", &l, &n, err, sizeof err) == 0);
    CHECK_U64(n, 4);
    CHECK(l[0].ops == &layout_split && l[1].ops == &layout_bundled && l[2].ops == &layout_friends);
    CHECK(l[3].ops == &layout_coalesce && l[3].arg == 2);
    free(l);
    CHECK(cache_layout_parse_list("bundled", &l, &n, err, sizeof err) == 0 && n == 1 && l[0].ops == &layout_bundled);
    free(l);
    static const struct {
        const char *list;
        size_t before;
        const char *err;
    } bad[] = {
        {"split,,bundled", 1, "unknown layout '' (available: split, bundled, friends, coalesce:G, transposed)"},
        {"split,", 1, "unknown layout '' (available: split, bundled, friends, coalesce:G, transposed)"},
        {",split", 0, "unknown layout '' (available: split, bundled, friends, coalesce:G, transposed)"},
        {"", 0, "unknown layout '' (available: split, bundled, friends, coalesce:G, transposed)"},
        {"bundled,nope,split", 1, "unknown layout 'nope' (available: split, bundled, friends, coalesce:G, transposed)"},
        {"split,bundled,coalesce:x", 2, "layout 'coalesce:x' needs a whole number after ':' (e.g. coalesce:4)"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        CHECK(cache_layout_parse_list(bad[i].list, &l, &n, err, sizeof err) == -1);
        CHECK_U64(n, bad[i].before);
        CHECK_STR(err, bad[i].err);
        free(l);
    }
}

/* The transposed layout's two streams (cache/transposed.h): Llama-2-7B's
 * shape in f16 packed and at a 4096-byte alignment, and the budget split in
 * proportion to their sizes. */
static void test_transposed_geometry(void)
{
    struct transposed_geometry g;
    char err[256];
    const struct unit_dims llama = {32, 4096, 11008, FFN_GLU, DTYPE_F16}, small = {2, 100, 300, FFN_RELU, DTYPE_F32};
    CHECK(cache_transposed_geometry(&llama, 0, &g, err, sizeof err) == 0);
    CHECK_U64(g.chan.d_ff, 4096);
    CHECK_U64(g.chan.vecs_per_row, 2);
    CHECK_U64(g.chan.row_bytes, 2 * 11008 * 2);
    CHECK_U64(g.down.d_ff, 11008);
    CHECK_U64(g.down.row_bytes, 4096 * 2);
    CHECK(cache_transposed_geometry(&small, 4096, &g, err, sizeof err) == 0);
    CHECK_U64(g.chan.row_bytes, 4096);   /* 1200 bytes padded */
    CHECK_U64(g.down.row_bytes, 4096);   /* 400 bytes padded */
    CHECK_U64(g.chan.read_align, 4096);
    uint64_t chan, down;
    CHECK(cache_transposed_geometry(&llama, 0, &g, err, sizeof err) == 0);
    /* half the FFN: chan gets 2/3 of the budget, down 1/3; each half its rows */
    uint64_t ffn = 32ull * 4096 * 11008 * 2 * 3;
    cache_transposed_capacity(ffn / 2, &g, &chan, &down);
    CHECK_U64(chan, 2048);
    CHECK_U64(down, 5504);
    cache_transposed_capacity(0, &g, &chan, &down);
    CHECK_U64(chan + down, 0);
    cache_transposed_capacity(ffn * 2, &g, &chan, &down); /* at most every row */
    CHECK_U64(chan, 4096);
    CHECK_U64(down, 11008);
}

int main(void)
{
    test_transposed_geometry();
    test_round_trip();
    test_refusals();
    test_lists();
    return check_report("test_layout_spec");
}
