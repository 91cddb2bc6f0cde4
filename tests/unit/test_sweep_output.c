/* The sweep's JSON, CSV and Markdown writers on hand-made points: every key
 * the issue names, fio's keys only where fio ran, the ratio computed right. */
#include <stdlib.h>
#include <unistd.h>

#include "check.h"
#include "common/provenance.h"
#include "harness/sweep.h"

static const char *const point_keys[] = {
    "engine", "chunk_bytes", "threads", "iodepth", "direct", "bytes", "seconds", "bw_bytes",
    "iops", "lat_p50_ns", "lat_p90_ns", "lat_p99_ns", "lat_p999_ns", "cpu_user_s", "cpu_sys_s",
};

static void make_point(struct sweep_point *p, uint64_t chunk, unsigned threads, double seconds,
                       uint64_t ios)
{
    memset(p, 0, sizeof *p);
    p->params.engine = &ioengine_psync;
    p->params.chunk = chunk;
    p->params.threads = threads;
    p->params.iodepth = 1;
    p->result.iodepth = 1;
    p->result.direct = true;
    p->result.ios = ios;
    p->result.bytes = ios * chunk;
    p->result.seconds = seconds;
    p->result.bw_bytes = (double)p->result.bytes / seconds;
    p->result.iops = (double)ios / seconds;
    hist_init(&p->result.lat);
    for (uint64_t i = 1; i <= 100; i++)
        hist_add(&p->result.lat, i);
}

static void check_json(const struct sweep *s)
{
    cJSON *j = sweep_to_json(s);
    CHECK(cJSON_IsObject(cJSON_GetObjectItem(j, "provenance")));
    CHECK(cJSON_IsString(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "provenance"), "git_commit")));
    CHECK_STR(cJSON_GetObjectItem(cJSON_GetObjectItem(j, "provenance"), "command_line")->valuestring,
              "flashbed sweep --file x.bin");
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(j, "page_cache_bypassed")));
    cJSON *points = cJSON_GetObjectItem(j, "points");
    CHECK(cJSON_GetArraySize(points) == 2);
    for (int i = 0; i < 2; i++) {
        cJSON *p = cJSON_GetArrayItem(points, i);
        for (size_t k = 0; k < sizeof point_keys / sizeof point_keys[0]; k++)
            CHECK(cJSON_GetObjectItem(p, point_keys[k]) != NULL);
    }
    cJSON *p0 = cJSON_GetArrayItem(points, 0), *p1 = cJSON_GetArrayItem(points, 1);
    CHECK(cJSON_GetObjectItem(p0, "bw_ratio_vs_fio") == NULL);
    CHECK(cJSON_GetObjectItem(p0, "fio_bw_bytes") == NULL);
    CHECK_STR(cJSON_GetObjectItem(p0, "engine")->valuestring, "psync");
    CHECK_NEAR(cJSON_GetObjectItem(p0, "bw_bytes")->valuedouble, 4096.0 * 1000 / 2, 1e-6);
    CHECK_NEAR(cJSON_GetObjectItem(p0, "iops")->valuedouble, 500, 1e-9);
    CHECK_NEAR(cJSON_GetObjectItem(p0, "lat_p50_ns")->valuedouble, 50, 0);
    CHECK_NEAR(cJSON_GetObjectItem(p0, "lat_p999_ns")->valuedouble, 100, 0);
    CHECK(cJSON_IsTrue(cJSON_GetObjectItem(p0, "direct")));
    CHECK_NEAR(cJSON_GetObjectItem(p1, "bw_ratio_vs_fio")->valuedouble, 0.8, 1e-12);
    CHECK_NEAR(cJSON_GetObjectItem(p1, "fio_iops")->valuedouble, 62.5, 0);
    CHECK_NEAR(cJSON_GetObjectItem(p1, "fio_lat_p50_ns")->valuedouble, 777, 0);
    cJSON_Delete(j);
}

static void check_csv(const struct sweep *s)
{
    char *csv = sweep_to_csv(s);
    const char *head = "engine,chunk_bytes,threads,iodepth,direct,bytes,ios,seconds,bw_bytes,iops,";
    CHECK(strncmp(csv, head, strlen(head)) == 0);
    CHECK(strstr(csv, ",bw_ratio_vs_fio\n") != NULL);
    CHECK(strstr(csv, "\npsync,4096,1,1,true,4096000,1000,2,2048000,500,") != NULL);
    /* Every row has as many columns as the header. */
    int lines = 0, commas_header = -1;
    for (char *line = csv; *line;) {
        char *nl = strchr(line, '\n');
        int commas = 0;
        for (char *c = line; c < nl; c++)
            commas += *c == ',';
        if (commas_header < 0)
            commas_header = commas;
        CHECK(commas == commas_header);
        lines++;
        line = nl + 1;
    }
    CHECK(lines == 3);
    free(csv);
}

static void check_markdown(const struct sweep *s)
{
    char *md = sweep_to_markdown(s);
    CHECK(strstr(md, "| chunk | threads |") != NULL);
    CHECK(strstr(md, "| 4k | 1 | 1 |") != NULL);
    CHECK(strstr(md, "| 1m | 4 | 1 |") != NULL);
    CHECK(strstr(md, "0.800 |") != NULL);
    CHECK(strstr(md, "page cache bypassed") != NULL);
    free(md);
}

static void check_files(const struct sweep *s)
{
    /* Written files parse back. */
    char dir[] = "/tmp/flashbed-test-sweep-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char sub[128];
    snprintf(sub, sizeof sub, "%s/out", dir);
    char err[512];
    CHECK(sweep_write_files(s, sub, err, sizeof err) == 0);
    char path[256];
    snprintf(path, sizeof path, "%s/sweep.json", sub);
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (f) {
        char buf[1 << 16];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        buf[n] = '\0';
        fclose(f);
        cJSON *back = cJSON_Parse(buf);
        CHECK(back && cJSON_GetArraySize(cJSON_GetObjectItem(back, "points")) == 2);
        cJSON_Delete(back);
    }
    const char *names[] = {"sweep.json", "sweep.csv", "sweep.md"};
    for (int i = 0; i < 3; i++) {
        snprintf(path, sizeof path, "%s/%s", sub, names[i]);
        CHECK(access(path, R_OK) == 0);
        unlink(path);
    }
    rmdir(sub);
    rmdir(dir);
}

int main(void)
{
    char *argv[] = {"flashbed", "sweep", "--file", "x.bin", NULL};
    provenance_set_argv(4, argv);
    struct sweep_config cfg = {.path = "x.bin", .engine = &ioengine_psync, .direct = true};
    uint64_t threads[] = {1, 4};
    cfg.threads.n = 2;
    cfg.threads.v = threads;
    struct sweep_point pts[2];
    make_point(&pts[0], 4096, 1, 2.0, 1000);
    make_point(&pts[1], 1 << 20, 4, 2.0, 100);
    pts[1].has_fio = true;
    pts[1].fio.bw_bytes = pts[1].result.bw_bytes / 0.8; /* ours at 80% of fio */
    pts[1].fio.iops = 62.5;
    pts[1].fio.lat_p50_ns = 777;
    struct sweep s = {.cfg = &cfg, .provenance = provenance_new(), .points = pts, .n_points = 2,
                      .complete = true};
    check_json(&s);
    check_csv(&s);
    check_markdown(&s);
    check_files(&s);
    cJSON_Delete(s.provenance);
    return check_report("test_sweep_output");
}
