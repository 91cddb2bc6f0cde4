/* How library code reports failure: it returns an error code and writes
 * one line of why into a buffer its caller supplies (char *err, size_t
 * errlen). The line has no "error:" tag and names no command-line option:
 * only cli/ prints, and it adds the option the failure is about. */
#ifndef FLASHBED_COMMON_ERRBUF_H
#define FLASHBED_COMMON_ERRBUF_H

#include <stdarg.h>
#include <stddef.h>

#include "common/printf_attr.h"

/* snprintf into err (which may be NULL when errlen is 0); returns -1, so
 * that "return err_set(err, errlen, ...);" reads as the failure it is. */
int err_set(char *err, size_t errlen, const char *fmt, ...) FB_PRINTF(3, 4);

/* The same with the arguments of a caller's own variadic function. */
int err_vset(char *err, size_t errlen, const char *fmt, va_list ap) FB_PRINTF(3, 0);

/* Replaces every occurrence of from in err by to (truncating at errlen):
 * a writer's message about its temporary "<dir>.tmp.<pid>/x" then names
 * the user's "<dir>/x". */
void err_replace(char *err, size_t errlen, const char *from, const char *to);

#endif
