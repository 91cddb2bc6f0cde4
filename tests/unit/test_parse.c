#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/parse.h"

static uint64_t size_of(const char *s)
{
    uint64_t v = 0;
    char err[128];
    CHECK(parse_size(s, &v, err, sizeof err) == 0);
    return v;
}

static void size_rejects(const char *s, const char *why_contains)
{
    uint64_t v = 12345;
    char err[256] = "";
    CHECK(parse_size(s, &v, err, sizeof err) == -1);
    CHECK(strstr(err, why_contains) != NULL);
    CHECK_U64(v, 12345); /* untouched on failure */
}

static void test_sizes(void)
{
    CHECK_U64(size_of("0"), 0);
    CHECK_U64(size_of("4096"), 4096);
    CHECK_U64(size_of("4k"), 4096);
    CHECK_U64(size_of("4K"), 4096);
    CHECK_U64(size_of("32KiB"), 32768);
    CHECK_U64(size_of("1m"), 1048576);
    CHECK_U64(size_of("1MB"), 1048576);
    CHECK_U64(size_of("4G"), 4294967296ull);
    CHECK_U64(size_of("2t"), 2ull << 40);
    CHECK_U64(size_of("1.5m"), 1572864);
    CHECK_U64(size_of("0.5k"), 512);
    CHECK_U64(size_of("512b"), 512);
    size_rejects("", "empty");
    size_rejects("k", "not a size");
    size_rejects("-4k", "not a size");
    size_rejects("4x", "unknown size unit");
    size_rejects("4kk", "unknown size unit");
    size_rejects("4 k", "unknown size unit");
    size_rejects("0.3k", "whole number");
    size_rejects("1.", "not a size");
    size_rejects("99999999999999999999", "too large");
    size_rejects("16777216t", "too large");
}

static void test_lists(void)
{
    struct u64_list l;
    char err[256];
    CHECK(parse_size_list("4k,32k,256k,1m", &l, err, sizeof err) == 0);
    CHECK_U64(l.n, 4);
    CHECK_U64(l.v[0], 4096);
    CHECK_U64(l.v[3], 1048576);
    u64_list_free(&l);
    CHECK(parse_uint_list("1,4,16,64", &l, err, sizeof err) == 0);
    CHECK_U64(l.n, 4);
    CHECK_U64(l.v[2], 16);
    u64_list_free(&l);
    CHECK(parse_uint_list("7", &l, err, sizeof err) == 0);
    CHECK_U64(l.n, 1);
    u64_list_free(&l);
    CHECK(parse_size_list("4k,,8k", &l, err, sizeof err) == -1);
    CHECK(strstr(err, "empty item") != NULL);
    CHECK(l.v == NULL && l.n == 0);
    CHECK(parse_size_list("4k,", &l, err, sizeof err) == -1);
    CHECK(parse_size_list("", &l, err, sizeof err) == -1);
    CHECK(parse_uint_list("1,0,4", &l, err, sizeof err) == -1);
    CHECK(strstr(err, "positive") != NULL);
    CHECK(parse_uint_list("1,two", &l, err, sizeof err) == -1);
    CHECK(parse_uint_list("1,-2", &l, err, sizeof err) == -1);
    CHECK(parse_size_list("4k,8q", &l, err, sizeof err) == -1);
}

/* Token ids as --prompt-ids reads them: white space, comment lines,
 * every id below the vocabulary, at least one. */
static void test_id_lists(void)
{
    int *ids;
    size_t n;
    char err[128];
    CHECK(parse_id_list("# prompt\n2 17\t300\n\n  # more\n45\n", 320, &ids, &n, err, sizeof err) == 0);
    CHECK_U64(n, 4);
    CHECK(ids && ids[0] == 2 && ids[1] == 17 && ids[2] == 300 && ids[3] == 45);
    free(ids);
    char many[200 * 4 + 1] = "";
    for (int i = 0; i < 200; i++)
        snprintf(many + strlen(many), sizeof many - strlen(many), "%d ", i % 10);
    CHECK(parse_id_list(many, 10, &ids, &n, err, sizeof err) == 0); /* past the first growth */
    CHECK_U64(n, 200);
    CHECK(ids && ids[199] == 9);
    free(ids);
    CHECK(parse_id_list("1 320", 320, &ids, &n, err, sizeof err) == -1);
    CHECK(strstr(err, "id 2, '320', is not a token id below 320") != NULL);
    CHECK(ids == NULL && n == 0);
    CHECK(parse_id_list("1 -2", 320, &ids, &n, err, sizeof err) == -1);
    CHECK(strstr(err, "'-2'") != NULL);
    CHECK(parse_id_list("1 2x", 320, &ids, &n, err, sizeof err) == -1);
    CHECK(parse_id_list("99999999999999999999999", 320, &ids, &n, err, sizeof err) == -1);
    CHECK(parse_id_list("123456789012345678901234567890123456789", 1u << 31, &ids, &n, err, sizeof err) == -1);
    CHECK(strstr(err, "id 1") != NULL);
    CHECK(parse_id_list("3000000000", 1ull << 40, &ids, &n, err, sizeof err) == -1); /* past an int */
    CHECK(parse_id_list("# only a comment\n", 320, &ids, &n, err, sizeof err) == -1);
    CHECK(strstr(err, "holds no token ids") != NULL);
    CHECK(parse_id_list("", 320, &ids, &n, err, sizeof err) == -1);
}

static void test_split_commas(void)
{
    size_t n = 0;
    char **v = split_commas("lru,window:5,,hot", &n);
    CHECK(v && n == 4);
    CHECK(v && !strcmp(v[0], "lru") && !strcmp(v[1], "window:5") && !strcmp(v[2], "") && !strcmp(v[3], "hot"));
    CHECK(v && v[4] == NULL);
    free(v);
    v = split_commas("one", &n);
    CHECK(v && n == 1 && !strcmp(v[0], "one"));
    free(v);
}

static void test_durations_and_numbers(void)
{
    double s;
    char err[128];
    CHECK(parse_duration("2", &s, err, sizeof err) == 0);
    CHECK_NEAR(s, 2.0, 1e-12);
    CHECK(parse_duration("0.5", &s, err, sizeof err) == 0);
    CHECK_NEAR(s, 0.5, 1e-12);
    CHECK(parse_duration("500ms", &s, err, sizeof err) == 0);
    CHECK_NEAR(s, 0.5, 1e-12);
    CHECK(parse_duration("250us", &s, err, sizeof err) == 0);
    CHECK_NEAR(s, 250e-6, 1e-15);
    CHECK(parse_duration("3s", &s, err, sizeof err) == 0);
    CHECK_NEAR(s, 3.0, 1e-12);
    CHECK(parse_duration("-1", &s, err, sizeof err) == -1);
    CHECK(parse_duration("2h", &s, err, sizeof err) == -1);
    CHECK(parse_duration("abc", &s, err, sizeof err) == -1);
    uint64_t u;
    CHECK(parse_uint("42", &u, err, sizeof err) == 0);
    CHECK_U64(u, 42);
    CHECK(parse_uint("4.2", &u, err, sizeof err) == -1);
    CHECK(parse_uint("", &u, err, sizeof err) == -1);
    double d;
    CHECK(parse_double("0.9", &d, err, sizeof err) == 0);
    CHECK_NEAR(d, 0.9, 1e-15);
    CHECK(parse_double("nan", &d, err, sizeof err) == -1);
    CHECK(parse_double("1e", &d, err, sizeof err) == -1);
}

static void test_format(void)
{
    char b[32];
    format_size(4096, b, sizeof b);
    CHECK_STR(b, "4k");
    format_size(1048576, b, sizeof b);
    CHECK_STR(b, "1m");
    format_size(3ull << 30, b, sizeof b);
    CHECK_STR(b, "3g");
    format_size(1000, b, sizeof b);
    CHECK_STR(b, "1000");
    format_size(6144, b, sizeof b);
    CHECK_STR(b, "6k");
}

/* An amount of memory or disk needs its unit: "25" is refused with the
 * likely meaning, "25B" is bytes, 0 needs none. */
static void test_sizes_with_unit(void)
{
    uint64_t v = 7;
    char err[256] = "";
    CHECK(parse_size_with_unit("25", "G", &v, err, sizeof err) == -1);
    CHECK_STR(err, "'25' has no unit: did you mean 25G? (a size is written 25B for bytes, or 25K, 25M, 25G)");
    /* a file's size whose likely units are two (sweep --size, issue 47):
     * both suggested, neither guessed */
    CHECK(parse_size_with_unit("256", "k,m", &v, err, sizeof err) == -1);
    CHECK_STR(err, "'256' has no unit: did you mean 256k or 256m? (a size is written 256B for bytes, or 256K, "
                   "256M, 256G)");
    CHECK(parse_size_with_unit("2", "k,m,g", &v, err, sizeof err) == -1);
    CHECK(strstr(err, "did you mean 2k, 2m or 2g?") != NULL);
    CHECK(parse_size_with_unit("256k", "k,m", &v, err, sizeof err) == 0);
    CHECK_U64(v, 256 * 1024);
    CHECK(parse_size_with_unit("1.5", "G", &v, err, sizeof err) == -1);
    CHECK(strstr(err, "did you mean 1.5G?") != NULL);
    CHECK(parse_size_with_unit("25B", "G", &v, err, sizeof err) == 0);
    CHECK_U64(v, 25);
    CHECK(parse_size_with_unit("25b", "G", &v, err, sizeof err) == 0);
    CHECK_U64(v, 25);
    CHECK(parse_size_with_unit("2KiB", "G", &v, err, sizeof err) == 0);
    CHECK_U64(v, 2048);
    CHECK(parse_size_with_unit("0", "G", &v, err, sizeof err) == 0);
    CHECK_U64(v, 0);
    CHECK(parse_size_with_unit("4q", "G", &v, err, sizeof err) == -1);
    CHECK(strstr(err, "unknown size unit") != NULL);
    double bytes = -1;
    CHECK(parse_share_or_size("25", 1000, &bytes, err, sizeof err) == -1);
    CHECK_STR(err, "'25' has no unit: did you mean 25%? (a share is written 25%, a size 25B for bytes, or 25K, "
                   "25M, 25G)");
    CHECK(bytes == -1);
    CHECK(parse_share_or_size("25%", 1000, &bytes, err, sizeof err) == 0);
    CHECK(bytes == 250);
    CHECK(parse_share_or_size("25B", 1000, &bytes, err, sizeof err) == 0);
    CHECK(bytes == 25);
    CHECK(parse_share_or_size("1MiB", 1000, &bytes, err, sizeof err) == 0);
    CHECK(bytes == 1048576);
    CHECK(parse_share_or_size("0", 1000, &bytes, err, sizeof err) == 0);
    CHECK(bytes == 0);
}

int main(void)
{
    test_sizes();
    test_sizes_with_unit();
    test_lists();
    test_id_lists();
    test_split_commas();
    test_durations_and_numbers();
    test_format();
    return check_report("test_parse");
}
