/* fio's JSON (a real fio 3.33 run, tests/data/) is read into the numbers the
 * sweep puts beside its own; and the command line matches the sweep's job. */
#include <stdlib.h>

#include "check.h"
#include "harness/fio_job.h"

#ifndef TEST_DATA_DIR
#error TEST_DATA_DIR must be defined
#endif

static char *slurp(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) {
        free(s);
        s = NULL;
    }
    if (s)
        s[n] = '\0';
    fclose(f);
    return s;
}

static void test_parse_real_output(void)
{
    char *text = slurp(TEST_DATA_DIR "/fio_psync_randread.json");
    CHECK(text != NULL);
    if (!text)
        return;
    struct fio_result r;
    char err[256];
    CHECK(fio_parse_json(text, &r, err, sizeof err) == 0);
    CHECK_NEAR(r.bw_bytes, 235268252, 0.5);
    CHECK_NEAR(r.iops, 57438.538206, 1e-6);
    CHECK_U64(r.lat_p50_ns, 31360);
    CHECK_U64(r.lat_p999_ns, 91648);
    CHECK(r.lat_p90_ns >= r.lat_p50_ns && r.lat_p99_ns >= r.lat_p90_ns);
    free(text);
}

static void test_parse_rejects(void)
{
    struct fio_result r;
    char err[256];
    CHECK(fio_parse_json("fio: some warning\n", &r, err, sizeof err) == -1);
    CHECK(fio_parse_json("{ not json", &r, err, sizeof err) == -1);
    CHECK(fio_parse_json("{\"jobs\": []}", &r, err, sizeof err) == -1);
    CHECK(fio_parse_json("{\"jobs\": [{\"read\": {\"iops\": 1}}]}", &r, err, sizeof err) == -1);
    /* A warning line before the JSON is skipped. */
    CHECK(fio_parse_json("note: x\n{\"jobs\": [{\"read\": {\"bw_bytes\": 10, \"iops\": 2}}]}", &r,
                         err, sizeof err) == 0);
    CHECK_NEAR(r.bw_bytes, 10, 0);
    CHECK_U64(r.lat_p50_ns, 0);
}

static int has_arg(const char *const *argv, const char *want)
{
    for (; *argv; argv++)
        if (strcmp(*argv, want) == 0)
            return 1;
    return 0;
}

static void test_job_matches_point(void)
{
    struct point_params p = {
        .engine = &ioengine_psync,
        .path = "/data/f.bin",
        .file_size = 1ull << 30,
        .chunk = 32768,
        .threads = 16,
        .iodepth = 1,
        .direct = true,
        .runtime_s = 2,
        .ramp_s = 0.5,
    };
    static struct fio_argv args, args2;
    const char *const *argv = fio_job_argv(&p, NULL, &args);
    CHECK_STR(argv[0], "fio");
    CHECK(has_arg(argv, "--filename=/data/f.bin"));
    CHECK(has_arg(argv, "--size=1073741824"));
    CHECK(has_arg(argv, "--ioengine=psync"));
    CHECK(has_arg(argv, "--direct=1"));
    CHECK(has_arg(argv, "--rw=randread"));
    CHECK(has_arg(argv, "--bs=32768"));
    CHECK(has_arg(argv, "--numjobs=16"));
    CHECK(has_arg(argv, "--iodepth=1"));
    CHECK(has_arg(argv, "--thread"));
    CHECK(has_arg(argv, "--norandommap"));
    CHECK(has_arg(argv, "--readonly")); /* fio never writes the user's file */
    CHECK(has_arg(argv, "--randrepeat=0"));
    CHECK(has_arg(argv, "--time_based"));
    CHECK(has_arg(argv, "--runtime=2000ms"));
    CHECK(has_arg(argv, "--ramp_time=500ms"));
    CHECK(has_arg(argv, "--group_reporting"));
    CHECK(has_arg(argv, "--output-format=json"));
    CHECK(!has_arg(argv, "--mem=shmhuge"));
    const char *const *argv2 = fio_job_argv(&p, "shmhuge", &args2);
    CHECK(has_arg(argv2, "--mem=shmhuge"));
    CHECK(!has_arg(argv, "--mem=shmhuge")); /* the first command line is still its own */
    CHECK_U64(fio_huge_pages_needed(&p), 16); /* 16 threads x one 32k buffer each */
    p.chunk = 3u << 20;
    CHECK_U64(fio_huge_pages_needed(&p), 32);
}

int main(void)
{
    test_parse_real_output();
    test_parse_rejects();
    test_job_matches_point();
    return check_report("test_fio_parse");
}
