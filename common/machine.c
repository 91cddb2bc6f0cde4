#include "common/machine.h"

#include "common/limits.h"

#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#ifdef __APPLE__
#include <sys/sysctl.h>
#endif

static void cpu_model(char *buf, size_t len)
{
    snprintf(buf, len, "unknown");
#ifdef __linux__
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f)
        return;
    char line[512];
    while (fgets(line, sizeof line, f)) {
        /* x86 says "model name", many Arm kernels only "CPU part" / "Hardware". */
        if (strncmp(line, "model name", 10) == 0 || strncmp(line, "Hardware", 8) == 0) {
            char *colon = strchr(line, ':');
            if (colon) {
                colon++;
                while (*colon == ' ' || *colon == '\t')
                    colon++;
                colon[strcspn(colon, "\n")] = '\0';
                snprintf(buf, len, "%s", colon);
                break;
            }
        }
    }
    fclose(f);
#elif defined(__APPLE__)
    size_t n = len;
    if (sysctlbyname("machdep.cpu.brand_string", buf, &n, NULL, 0) != 0)
        snprintf(buf, len, "unknown");
#endif
}

void machine_info_get(struct machine_info *m)
{
    memset(m, 0, sizeof *m);
    if (gethostname(m->hostname, sizeof m->hostname - 1) != 0)
        snprintf(m->hostname, sizeof m->hostname, "unknown");
    struct utsname u;
    if (uname(&u) == 0)
        snprintf(m->os, sizeof m->os, "%s %s %s", u.sysname, u.release, u.machine);
    cpu_model(m->cpu_model, sizeof m->cpu_model);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    m->logical_cpus = n > 0 ? (int)n : 1;
#ifdef __APPLE__
    uint64_t mem = 0;
    size_t sz = sizeof mem;
    if (sysctlbyname("hw.memsize", &mem, &sz, NULL, 0) == 0)
        m->mem_bytes = mem;
#else
    long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
    if (pages > 0 && page > 0)
        m->mem_bytes = (uint64_t)pages * (uint64_t)page;
#endif
}

int machine_compute_threads(uint64_t asked)
{
    long n = asked ? (long)(asked < FB_MAX_THREADS ? asked : FB_MAX_THREADS) : sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > FB_MAX_THREADS ? FB_MAX_THREADS : (int)n;
}
