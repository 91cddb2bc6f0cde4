/* bench_point: a point measures at least one read on every thread, however
 * late the thread runs (issue 47: on a loaded machine a thread first
 * scheduled after its deadline measured none, and sweep_engines saw a point
 * of 0 reads). A runtime of 0 puts every thread past its deadline at its
 * first read, deterministically: each must still count one, and the bytes
 * must be whole reads. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "harness/bench_point.h"
#include "io/ioengine.h"

static void past_the_deadline(const char *path, double ramp_s, unsigned threads)
{
    struct point_params p = {.engine = &ioengine_null, .path = path, .file_size = 1 << 20, .chunk = 4096,
                             .threads = threads, .iodepth = 1, .runtime_s = 0, .ramp_s = ramp_s, .seed = 1};
    struct point_result r;
    memset(&r, 0, sizeof r);
    char err[256] = "";
    CHECK(bench_point_run(&p, &r, err, sizeof err) == 0);
    CHECK(r.ios >= threads); /* at least one per thread */
    CHECK(r.bytes == r.ios * p.chunk);
    CHECK(r.seconds > 0 && r.bw_bytes > 0);
    if (r.ios < threads)
        fprintf(stderr, "ramp %g, %u threads: %llu reads measured (%s)\n", ramp_s, threads,
                (unsigned long long)r.ios, err);
}

int main(void)
{
    char path[] = "/tmp/fb_test_bench_point_XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0 && ftruncate(fd, 1 << 20) == 0);
    close(fd);
    past_the_deadline(path, 0, 1);
    past_the_deadline(path, 0, 2);
    past_the_deadline(path, 0.001, 3);
    unlink(path);
    return check_report("test_bench_point");
}
