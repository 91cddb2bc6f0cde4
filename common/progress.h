/* Progress of long work. Libraries report it through a progress_report,
 * never drawing: the program passes one that draws a bar
 * (cli/progress_bar.h). */
#ifndef FLASHBED_COMMON_PROGRESS_H
#define FLASHBED_COMMON_PROGRESS_H

#include <stdint.h>

/* How a library reports: fn (NULL: nobody listens) with what it is doing,
 * done of total steps, and a short note (may be NULL). */
struct progress_report {
    void (*fn)(void *ctx, const char *label, uint64_t done, uint64_t total, const char *note);
    void *ctx;
};

static inline void progress_report(const struct progress_report *r, const char *label, uint64_t done,
                                   uint64_t total, const char *note)
{
    if (r && r->fn)
        r->fn(r->ctx, label, done, total, note);
}

#endif
