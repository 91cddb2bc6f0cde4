/* --backend as every command that computes takes it (generate, run,
 * perplexity, predictor eval, calibrate): the names the option tables
 * allow (backends.def's, through BACKEND_ALLOWED), the backend's device
 * described before any work, so that one this build or machine lacks is
 * refused in one line before anything is written, and what result files
 * record of it. Describing builds nothing (backend.h: no context, queue
 * or kernel build): the engine creates the one instance later, and a
 * model type the backend lacks is refused there, at set-up
 * (backend_check_type). Prints its errors ("flashbed: error: CMD
 * --backend NAME: why"). */
#ifndef FLASHBED_CLI_BACKEND_OPTS_H
#define FLASHBED_CLI_BACKEND_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "common/settings.h"
#include "engine/compute/backend.h"

/* For an option row: {"backend", OPT_STRING, O(backend), "cpu", "NAME",
 * BACKEND_OPT_HELP, .allowed = BACKEND_OPT_ALLOWED}; --help lists the
 * names after it. */
#define BACKEND_OPT_ALLOWED BACKEND_ALLOWED
#define BACKEND_OPT_HELP                                                                                          \
    "compute backend: cpu (the CPU kernels), sim (a simulated device, bit-identical to cpu), or one of a real device"

/* The backend a command computes on, as its result files record it. */
struct cli_backend {
    const struct backend_ops *ops;
    struct backend_device dev; /* its describe(): emulated (no GPU timings), host_visible (no device
                                * memory to budget), mem_bytes (0 when unknown) */
};

/* Describes backend name's device, so that a backend that cannot start
 * here is refused before any work. 0, or -1 (printed, naming cmd and the
 * option). */
int cli_backend_open(const char *cmd, const char *name, const struct fb_settings *set, struct cli_backend *out);

/* The same without printing: 0, or -1 with why in err (for a caller that
 * only asks which backends have a device here: reproduce's device rows). */
int cli_backend_probe(const char *name, const struct fb_settings *set, struct cli_backend *out, char *err,
                      size_t errlen);

/* "backend", "device" and "emulated" into a result file's provenance. */
void cli_backend_provenance(cJSON *prov, const struct cli_backend *b);

#endif
