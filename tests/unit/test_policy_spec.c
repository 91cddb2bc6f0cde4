/* A policy as a value (cache/policy_spec.h): the one parser from text, the
 * one formatter back, window:auto only where asked for, lists, and the
 * modes' policies. Every name the formatter writes parses back to the
 * same value. */
#include "check.h"

#include <stdlib.h>

#include "cache/cache.h"
#include "cache/mode.h"

static struct policy_spec parse(const char *text, bool auto_ok, char *err)
{
    struct policy_spec p;
    if (cache_policy_parse(text, auto_ok, &p, err, 256) != 0)
        memset(&p, 0, sizeof p);
    return p;
}

/* Each name parses into its ops and argument and is written back as given. */
static void test_round_trip(void)
{
    static const struct {
        const char *text;
        const struct policy_ops *ops;
        uint64_t arg;
    } cases[] = {
        {"naive", &policy_naive, 0},   {"hybrid", &policy_hybrid, 0}, {"predictor", &policy_predictor, 0},
        {"window:1", &policy_window, 1}, {"window:5", &policy_window, 5},
        {"window:4294967294", &policy_window, 4294967294ull},
        {"lru", &policy_lru, 0},       {"lfu", &policy_lfu, 0},       {"hot", &policy_hot, 0},
        {"belady", &policy_belady, 0},
    };
    char err[256], name[POLICY_NAME_MAX];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct policy_spec p = parse(cases[i].text, false, err);
        CHECK(p.ops == cases[i].ops);
        CHECK_U64(p.arg, cases[i].arg);
        CHECK(!p.arg_auto);
        cache_policy_name(&p, name, sizeof name);
        CHECK_STR(name, cases[i].text);
        struct policy_spec q = policy_spec_of(cases[i].ops, cases[i].arg);
        CHECK(policy_spec_equal(&p, &q));
    }
    /* the spelling is the formatter's: a leading zero is not kept */
    struct policy_spec p = parse("window:05", false, err);
    cache_policy_name(&p, name, sizeof name);
    CHECK_STR(name, "window:5");
}

/* window:auto: a window whose K is left to the caller, only where taken. */
static void test_auto(void)
{
    char err[256] = "", name[POLICY_NAME_MAX];
    struct policy_spec p = parse("window:auto", true, err);
    CHECK(p.ops == &policy_window && p.arg_auto && p.arg == 0);
    cache_policy_name(&p, name, sizeof name);
    CHECK_STR(name, "window:auto");
    p = parse("window:auto", false, err);
    CHECK(p.ops == NULL);
    CHECK(strstr(err, "policy 'window:auto' needs a whole number after ':' (e.g. window:4)") != NULL);
    CHECK(parse("lru:auto", true, err).ops == NULL && strstr(err, "takes no argument"));
    CHECK(parse("auto", true, err).ops == NULL && strstr(err, "unknown policy 'auto'"));
    struct policy_spec five = policy_spec_of(&policy_window, 5);
    CHECK(!policy_spec_equal(&p, &five));
}

/* Refusals name the text and what is wrong. */
static void test_refusals(void)
{
    char err[256];
    CHECK(parse("window:0", false, err).ops == NULL && strstr(err, "at least the current token (K from 1 to 4294967294)"));
    CHECK(parse("window:4294967295", false, err).ops == NULL && strstr(err, "at least the current token"));
    CHECK(parse("window", false, err).ops == NULL && strstr(err, "needs a whole number"));
    CHECK(parse("window:-1", false, err).ops == NULL && strstr(err, "needs a whole number"));
    CHECK(parse("lru:3", false, err).ops == NULL && strstr(err, "policy 'lru:3' takes no argument"));
    CHECK(parse("fifo", false, err).ops == NULL);
    CHECK_STR(err, "unknown policy 'fifo' (available: naive, hybrid, predictor, window:K, lru, lfu, hot, belady)");
    CHECK(parse("", false, err).ops == NULL && strstr(err, "unknown policy ''"));
}

/* Lists: every element, in order; the bad one named by its position, the
 * elements before it kept. */
static void test_lists(void)
{
    char err[256];
    struct policy_spec *p = NULL;
    size_t n = 0;
    CHECK(cache_policy_parse_list("lru,window:auto,window:3", true, &p, &n, err, sizeof err) == 0);
    CHECK_U64(n, 3);
    CHECK(p[0].ops == &policy_lru && p[1].arg_auto && p[2].ops == &policy_window && p[2].arg == 3);
    free(p);
    CHECK(cache_policy_parse_list("lru,,belady", false, &p, &n, err, sizeof err) == -1);
    CHECK_STR(err, "policy 2 of 'lru,,belady' is empty (policies are separated by single commas)");
    CHECK_U64(n, 1);
    CHECK(p[0].ops == &policy_lru);
    free(p);
    CHECK(cache_policy_parse_list("window:5,", false, &p, &n, err, sizeof err) == -1);
    CHECK_STR(err, "policy 2 of 'window:5,' is empty (policies are separated by single commas)");
    free(p);
    CHECK(cache_policy_parse_list("naive,nope", false, &p, &n, err, sizeof err) == -1);
    CHECK(strstr(err, "unknown policy 'nope'") != NULL);
    CHECK_U64(n, 1);
    free(p);
    CHECK(cache_policy_parse_list("window:auto", false, &p, &n, err, sizeof err) == -1);
    CHECK_U64(n, 0);
    free(p);
    CHECK(cache_policy_parse_list("window:0000000000000000000000000000000000000000000000005", false, &p, &n, err,
                                  sizeof err) == -1);
    CHECK(strstr(err, "policy 1 of 'window:000") && strstr(err, "is longer than 47 characters"));
    free(p);
}

/* The modes' policies: K where the mode takes one, auto included. */
static void test_modes(void)
{
    struct policy_spec p = cache_mode_policy(cache_mode_find("window"), 7, false);
    CHECK(p.ops == &policy_window && p.arg == 7 && !p.arg_auto);
    p = cache_mode_policy(cache_mode_find("all"), 0, true);
    CHECK(p.ops == &policy_window && p.arg_auto);
    p = cache_mode_policy(cache_mode_find("hybrid"), 7, true); /* no K: neither given nor auto */
    CHECK(p.ops == &policy_hybrid && p.arg == 0 && !p.arg_auto);
}

int main(void)
{
    test_round_trip();
    test_auto();
    test_refusals();
    test_lists();
    test_modes();
    return check_report("test_policy_spec");
}
