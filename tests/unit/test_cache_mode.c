/* The mode table's paper-table columns (cache/mode.h): Table 3's CPU rows
 * are naive, hybrid and all, its device rows naive and all, each in the
 * paper's order; every mode of a table is one of the table's modes; past
 * the last there is none. */
#include "check.h"

#include "cache/mode.h"

static void check_table(enum cache_mode_table table, const char *const *want, size_t n)
{
    CHECK_U64(cache_mode_table_count(table), n);
    for (size_t i = 0; i < n; i++) {
        const struct cache_mode *m = cache_mode_of_table(table, i);
        CHECK_STR(m ? m->name : NULL, want[i]);
        CHECK(m && m == cache_mode_find(want[i]) && (m->tables & table));
    }
    CHECK(cache_mode_of_table(table, n) == NULL);
    CHECK(cache_mode_of_table(table, n + 100) == NULL);
}

/* The modes a table leaves out say so in their column. */
static void test_left_out(void)
{
    size_t n = 0;
    for (const struct cache_mode *m; (m = cache_mode_at(n)); n++)
        if (!strcmp(m->name, "predictor") || !strcmp(m->name, "window"))
            CHECK(m->tables == 0);
    CHECK_U64(n, CACHE_MODE_COUNT);
}

/* The names joined as REPORT.md's header and the summary's folder pattern
 * use them; a buffer too small is cut, never overrun. */
static void test_join(void)
{
    char buf[64], small[8];
    CHECK_STR(cache_mode_table_join(CACHE_MODE_TABLE3_CPU, "|", "-trace-r1", buf, sizeof buf),
              "naive-trace-r1|hybrid-trace-r1|all-trace-r1");
    CHECK_STR(cache_mode_table_join(CACHE_MODE_TABLE3_DEVICE, " → ", "", buf, sizeof buf), "naive → all");
    CHECK_STR(cache_mode_table_join(CACHE_MODE_TABLE3_CPU, ", ", "", small, sizeof small), "naive, ");
}

int main(void)
{
    static const char *const cpu[] = {"naive", "hybrid", "all"}, *const device[] = {"naive", "all"};
    check_table(CACHE_MODE_TABLE3_CPU, cpu, 3);
    check_table(CACHE_MODE_TABLE3_DEVICE, device, 2);
    test_left_out();
    test_join();
    return check_report("test_cache_mode");
}
