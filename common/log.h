/* One voice for errors: "flashbed: error: ..." on stderr, one line each. */
#ifndef FLASHBED_COMMON_LOG_H
#define FLASHBED_COMMON_LOG_H

#include "common/printf_attr.h"

void fb_error(const char *fmt, ...) FB_PRINTF(1, 2);
void fb_warn(const char *fmt, ...) FB_PRINTF(1, 2);
void fb_info(const char *fmt, ...) FB_PRINTF(1, 2);

/* Silences fb_info (for tests and --quiet). */
void fb_set_quiet(int quiet);

#endif
