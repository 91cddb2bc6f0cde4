#include "common/cpu_pin.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>

static pthread_once_t allowed_once = PTHREAD_ONCE_INIT;
static cpu_set_t allowed;
static int allowed_ok;

static void capture_allowed(void)
{
    CPU_ZERO(&allowed);
    allowed_ok = sched_getaffinity(0, sizeof allowed, &allowed) == 0;
}

int cpu_pin_allowed(int *cpus, int max)
{
    pthread_once(&allowed_once, capture_allowed);
    if (!allowed_ok)
        return 0;
    int n = 0;
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &allowed)) {
            if (n < max)
                cpus[n] = c;
            n++;
        }
    return n;
}

int cpu_pin_self(int cpu)
{
    pthread_once(&allowed_once, capture_allowed);
    if (cpu < 0 || cpu >= CPU_SETSIZE)
        return EINVAL;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(cpu, &one);
    return pthread_setaffinity_np(pthread_self(), sizeof one, &one);
}

int cpu_pin_release_self(void)
{
    pthread_once(&allowed_once, capture_allowed);
    if (!allowed_ok)
        return ENOSYS;
    return pthread_setaffinity_np(pthread_self(), sizeof allowed, &allowed);
}
