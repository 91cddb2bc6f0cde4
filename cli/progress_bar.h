/* A one-line progress bar on stderr, drawn only when stderr is a terminal
 * (CI logs and redirected runs stay clean): what the program draws, from
 * its own loops or from a library's progress_report (cli/shared.h:
 * cli_progress_report). */
#ifndef FLASHBED_CLI_PROGRESS_BAR_H
#define FLASHBED_CLI_PROGRESS_BAR_H

#include <stdint.h>

#include "common/progress.h"

struct progress {
    int enabled;
    uint64_t total;
    uint64_t start_ns;
    char label[64];
};

void progress_begin(struct progress *p, const char *label, uint64_t total);
/* done of total steps finished; note is a short status (may be NULL). */
void progress_update(struct progress *p, uint64_t done, const char *note);
void progress_end(struct progress *p);

#endif
