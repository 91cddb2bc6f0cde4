#include "common/log.h"

#include <stdarg.h>
#include <stdio.h>

static int quiet;

void fb_set_quiet(int q) { quiet = q; }

/* stdout first: when both streams go to one file or pipe, a message lands
 * after what was printed before it, never inside a half-written line. */
static void vsay(const char *tag, const char *fmt, va_list ap)
{
    fflush(stdout);
    fprintf(stderr, "flashbed: %s", tag);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void fb_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay("error: ", fmt, ap);
    va_end(ap);
}

void fb_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsay("warning: ", fmt, ap);
    va_end(ap);
}

void fb_info(const char *fmt, ...)
{
    if (quiet)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsay("", fmt, ap);
    va_end(ap);
}
