/* The compute team pinned one thread per CPU (engine/compute/threadpool.h,
 * common/cpu_pin.h): every worker runs on its own CPU of the allowed set,
 * the caller as worker 0 on the first; a thread the pinned caller starts
 * and releases gets the whole allowed set back; destroy returns the caller
 * to it; a team larger than the set, or of one, is not pinned and leaves
 * the caller as it was. On a machine allowing one CPU only the last two
 * hold, and the test says so. */
#include "check.h"

#include <pthread.h>
#include <sched.h>
#include <stdlib.h>

#include "common/cpu_pin.h"
#include "engine/compute/threadpool.h"

enum { MAX_CPUS = 1024, JOBS = 50 };

struct seen {
    int cpu[JOBS][2]; /* [job][worker] */
    int job;
};

static void where(void *arg, int worker, int n)
{
    struct seen *s = arg;
    if (n == 2)
        s->cpu[s->job][worker] = sched_getcpu();
}

static int mask_count(void)
{
    cpu_set_t m;
    CPU_ZERO(&m);
    if (pthread_getaffinity_np(pthread_self(), sizeof m, &m) != 0)
        return -1;
    return CPU_COUNT(&m);
}

static void *released_count(void *arg)
{
    int *count = arg;
    *count = cpu_pin_release_self() == 0 ? mask_count() : -1;
    return NULL;
}

static void check_pinned_team(const int *cpus, int allowed)
{
    struct threadpool *p = threadpool_create_pinned(2);
    CHECK(p != NULL);
    if (!p)
        return;
    CHECK(threadpool_pinned(p));
    CHECK(mask_count() == 1); /* the caller, on cpus[0] */
    struct seen s = {0};
    for (s.job = 0; s.job < JOBS; s.job++)
        threadpool_run(p, where, &s);
    int off = 0;
    for (int j = 0; j < JOBS; j++)
        off += (s.cpu[j][0] != cpus[0]) + (s.cpu[j][1] != cpus[1]);
    CHECK_U64(off, 0);
    pthread_t t;
    int count = 0;
    CHECK(pthread_create(&t, NULL, released_count, &count) == 0 && pthread_join(t, NULL) == 0);
    CHECK(count == allowed);
    threadpool_destroy(p);
    CHECK(mask_count() == allowed);
}

static void check_unpinned_teams(int allowed)
{
    int sizes[] = {1, allowed + 1};
    for (int i = 0; i < 2; i++) {
        struct threadpool *p = threadpool_create_pinned(sizes[i]);
        CHECK(p != NULL);
        if (!p)
            continue;
        CHECK(!threadpool_pinned(p));
        CHECK(mask_count() == allowed);
        threadpool_destroy(p);
        CHECK(mask_count() == allowed);
    }
}

int main(void)
{
    static int cpus[MAX_CPUS];
    int allowed = cpu_pin_allowed(cpus, MAX_CPUS);
    CHECK(allowed >= 1);
    CHECK(allowed == mask_count());
    if (allowed >= 2)
        check_pinned_team(cpus, allowed);
    else
        printf("test_threadpool_pin: one CPU allowed here: the pinned team is not checked\n");
    check_unpinned_teams(allowed);
    return check_report("test_threadpool_pin");
}
