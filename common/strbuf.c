#include "common/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void strbuf_add(struct strbuf *b, const char *fmt, ...)
{
    if (b->failed)
        return;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) {
        b->failed = 1;
        return;
    }
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 1024;
        while (cap < b->len + (size_t)n + 1)
            cap *= 2;
        char *ns = realloc(b->s, cap);
        if (!ns) {
            b->failed = 1;
            return;
        }
        b->s = ns;
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->s + b->len, b->cap - b->len, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

char *strbuf_take(struct strbuf *b)
{
    char *s = b->s;
    if (b->failed) {
        free(s);
        s = NULL;
    } else if (!s) {
        s = strdup("");
    }
    memset(b, 0, sizeof *b);
    return s;
}

int memtext_open(struct memtext *t)
{
    t->s = NULL;
    t->len = 0;
    t->f = open_memstream(&t->s, &t->len);
    return t->f ? 0 : -1;
}

char *memtext_take(struct memtext *t)
{
    int failed = ferror(t->f) != 0;
    if (fclose(t->f) != 0 || failed) {
        free(t->s);
        return NULL;
    }
    return t->s;
}
