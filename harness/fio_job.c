#include "harness/fio_job.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "common/errbuf.h"
#include "common/subprocess.h"

const char *const *fio_job_argv(const struct point_params *p, const char *mem, struct fio_argv *out)
{
    int n = 0;
#define ARG(...) snprintf(out->text[n], FIO_ARG_LEN, __VA_ARGS__), out->argv[n] = out->text[n], n++
    ARG("fio");
    ARG("--name=flashbed");
    ARG("--filename=%s", p->path);
    ARG("--size=%llu", (unsigned long long)p->file_size);
    ARG("--thread");
    ARG("--ioengine=%s", p->engine->fio_name);
    ARG("--direct=%d", p->direct ? 1 : 0);
    ARG("--rw=randread");
    /* fio lays out a file it finds too small: never the user's (sweep
     * prepared it already), so fio may not write at all */
    ARG("--readonly");
    ARG("--bs=%llu", (unsigned long long)p->chunk);
    ARG("--numjobs=%u", p->threads);
    ARG("--iodepth=%u", p->iodepth ? p->iodepth : 1);
    ARG("--norandommap");
    ARG("--randrepeat=0");
    ARG("--time_based");
    ARG("--runtime=%llums", (unsigned long long)llround(p->runtime_s * 1000));
    ARG("--ramp_time=%llums", (unsigned long long)llround(p->ramp_s * 1000));
    ARG("--group_reporting");
    ARG("--output-format=json");
    if (mem)
        ARG("--mem=%s", mem);
#undef ARG
    out->argv[n] = NULL;
    return out->argv;
}

static uint64_t percentile(const cJSON *pct, const char *key)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(pct, key);
    double ns = cJSON_IsNumber(v) ? v->valuedouble : 0;
    /* a value outside uint64_t cannot be converted: unknown, as when absent */
    return isfinite(ns) && ns >= 0 && ns < 18446744073709551616.0 ? (uint64_t)ns : 0;
}

int fio_parse_json(const char *text, struct fio_result *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    const char *brace = text ? strchr(text, '{') : NULL;
    if (!brace) {
        err_set(err, errlen, "fio printed no JSON");
        return -1;
    }
    cJSON *root = cJSON_Parse(brace);
    if (!root) {
        err_set(err, errlen, "fio's JSON does not parse");
        return -1;
    }
    int rc = -1;
    const cJSON *jobs = cJSON_GetObjectItemCaseSensitive(root, "jobs");
    const cJSON *job = cJSON_IsArray(jobs) ? cJSON_GetArrayItem(jobs, 0) : NULL;
    const cJSON *read = job ? cJSON_GetObjectItemCaseSensitive(job, "read") : NULL;
    const cJSON *bw = read ? cJSON_GetObjectItemCaseSensitive(read, "bw_bytes") : NULL;
    const cJSON *iops = read ? cJSON_GetObjectItemCaseSensitive(read, "iops") : NULL;
    if (!cJSON_IsNumber(bw) || !cJSON_IsNumber(iops)) {
        err_set(err, errlen, "fio's JSON has no jobs[0].read.bw_bytes / iops");
        goto out;
    }
    out->bw_bytes = bw->valuedouble;
    out->iops = iops->valuedouble;
    const cJSON *clat = cJSON_GetObjectItemCaseSensitive(read, "clat_ns");
    const cJSON *pct = clat ? cJSON_GetObjectItemCaseSensitive(clat, "percentile") : NULL;
    if (pct) {
        out->lat_p50_ns = percentile(pct, "50.000000");
        out->lat_p90_ns = percentile(pct, "90.000000");
        out->lat_p99_ns = percentile(pct, "99.000000");
        out->lat_p999_ns = percentile(pct, "99.900000");
    }
    rc = 0;
out:
    cJSON_Delete(root);
    return rc;
}

uint64_t fio_huge_pages_needed(const struct point_params *p)
{
    uint64_t per_thread = (uint64_t)(p->iodepth ? p->iodepth : 1) * p->chunk;
    return (uint64_t)p->threads * ((per_thread + (2u << 20) - 1) / (2u << 20));
}

int fio_job_run(const struct point_params *p, const char *mem, struct fio_result *out, char *err,
                size_t errlen)
{
    char *text = NULL;
    struct fio_argv *args = malloc(sizeof *args);
    if (!args)
        return err_set(err, errlen, "out of memory for fio's command line");
    int status = run_capture(fio_job_argv(p, mem, args), &text, 1);
    free(args);
    if (status != 0) {
        err_set(err, errlen, "fio exited with status %d for %s", status, p->path);
        free(text);
        return -1;
    }
    int rc = fio_parse_json(text, out, err, errlen);
    free(text);
    return rc;
}
