/* "Did you mean": the edit distance (with transpositions) and which
 * candidate a typo gets, or none. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "common/suggest.h"

static void test_distance(void)
{
    CHECK_U64(edit_distance("", ""), 0);
    CHECK_U64(edit_distance("run", "run"), 0);
    CHECK_U64(edit_distance("", "run"), 3);
    CHECK_U64(edit_distance("rnu", "run"), 1);           /* a swap is one edit */
    CHECK_U64(edit_distance("dram-buget", "dram-budget"), 1);
    CHECK_U64(edit_distance("kitten", "sitting"), 3);
    CHECK_U64(edit_distance("ca", "abc"), 3);            /* optimal string alignment: no edit twice */
    char longer[SUGGEST_MAX_LEN + 2];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    CHECK(edit_distance(longer, "a") == SIZE_MAX);
}

static void test_nearest(void)
{
    const char *commands[] = {"sweep", "calibrate", "predict", "trace", "replay", "run", "reproduce"};
    size_t n = sizeof commands / sizeof commands[0];
    CHECK_STR(suggest_nearest("rnu", commands, n), "run");
    CHECK_STR(suggest_nearest("replya", commands, n), "replay");
    CHECK_STR(suggest_nearest("calibrte", commands, n), "calibrate");
    CHECK_STR(suggest_nearest("reproduec", commands, n), "reproduce");
    CHECK(suggest_nearest("run", commands, n) == NULL);     /* a known word needs no guess */
    CHECK(suggest_nearest("xyz", commands, n) == NULL);     /* 1 edit at most for 3 letters */
    CHECK(suggest_nearest("benchmark", commands, n) == NULL);
    const char *options[] = {"model", "dram-budget", "device-budget", "mode", NULL, "threads"};
    size_t m = sizeof options / sizeof options[0];
    CHECK_STR(suggest_nearest("modle", options, m), "model");
    CHECK_STR(suggest_nearest("mod", options, m), "mode");            /* the nearest, 1 edit */
    CHECK_STR(suggest_nearest("dram", options, m), "dram-budget");    /* the one that holds it */
    CHECK(suggest_nearest("budget", options, m) == NULL);            /* two hold it: no guess */
    CHECK_STR(suggest_nearest("thread", options, m), "threads");     /* NULL rows skipped */
    CHECK(suggest_nearest("x", options, 0) == NULL);
}

int main(void)
{
    test_distance();
    test_nearest();
    return check_report("test_suggest");
}
