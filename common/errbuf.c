#include "common/errbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

int err_vset(char *err, size_t errlen, const char *fmt, va_list ap)
{
    if (err && errlen)
        vsnprintf(err, errlen, fmt, ap);
    return -1;
}

int err_set(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

void err_replace(char *err, size_t errlen, const char *from, const char *to)
{
    size_t nfrom = strlen(from);
    if (!err || errlen == 0 || nfrom == 0 || !strstr(err, from))
        return;
    char out[8192];
    size_t o = 0;
    for (const char *p = err; *p && o + 1 < sizeof out;) {
        if (strncmp(p, from, nfrom) == 0) {
            o += (size_t)snprintf(out + o, sizeof out - o, "%s", to);
            if (o >= sizeof out)
                o = sizeof out - 1;
            p += nfrom;
        } else {
            out[o++] = *p++;
        }
    }
    out[o] = '\0';
    snprintf(err, errlen, "%s", out);
}
