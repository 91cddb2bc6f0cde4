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
static const struct opt_command demo_cmd = {"demo", "[options]", "A demo.", demo_opts, 1};

static int parse(struct demo *d, int argc, char **argv, char **pos, int *npos)
{
    memset(d, 0, sizeof *d);
    return opts_parse(&demo_cmd, d, argc, argv, pos, npos);
}

int main(void)
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
    return check_report("test_options");
}
