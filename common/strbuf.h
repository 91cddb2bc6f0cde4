/* A growable string for building Markdown and CSV. An allocation failure
 * marks the buffer failed; strbuf_take then returns NULL. */
#ifndef FLASHBED_COMMON_STRBUF_H
#define FLASHBED_COMMON_STRBUF_H

#include <stddef.h>
#include <stdio.h>

#include "common/printf_attr.h"

struct strbuf {
    char *s;
    size_t len, cap;
    int failed;
};

void strbuf_add(struct strbuf *b, const char *fmt, ...) FB_PRINTF(2, 3);

/* The text (caller frees; "" when nothing was added), or NULL after a failure. */
char *strbuf_take(struct strbuf *b);

/* stdio formatting into one growable buffer (open_memstream), for writers
 * that take a FILE * (common/result_fields.h). */
struct memtext {
    FILE *f;
    char *s;
    size_t len;
};

/* 0, or -1 when the stream cannot be opened. */
int memtext_open(struct memtext *t);
/* Closes the stream: the text (caller frees), or NULL after a write error. */
char *memtext_take(struct memtext *t);

#endif
