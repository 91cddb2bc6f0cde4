/* The progress bar (cli/progress_bar.h). */
#include "cli/progress_bar.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "common/clock.h"

void progress_begin(struct progress *p, const char *label, uint64_t total)
{
    memset(p, 0, sizeof *p);
    p->enabled = isatty(STDERR_FILENO);
    p->total = total ? total : 1;
    p->start_ns = now_ns();
    snprintf(p->label, sizeof p->label, "%s", label);
}

void progress_update(struct progress *p, uint64_t done, const char *note)
{
    if (!p->enabled)
        return;
    enum { WIDTH = 30 };
    double frac = (double)done / (double)p->total;
    if (frac > 1)
        frac = 1;
    int fill = (int)(frac * WIDTH);
    char bar[WIDTH + 1];
    for (int i = 0; i < WIDTH; i++)
        bar[i] = i < fill ? '#' : '.';
    bar[WIDTH] = '\0';
    double elapsed = (double)(now_ns() - p->start_ns) * 1e-9;
    double eta = done ? elapsed * (double)(p->total - done) / (double)done : 0;
    fprintf(stderr, "\r\033[K%s [%s] %llu/%llu  %.0fs elapsed, ~%.0fs left  %s", p->label, bar,
            (unsigned long long)done, (unsigned long long)p->total, elapsed, eta,
            note ? note : "");
    fflush(stderr);
}

void progress_end(struct progress *p)
{
    if (p->enabled)
        fprintf(stderr, "\r\033[K");
}
