/* A growable string for building Markdown and CSV. An allocation failure
 * marks the buffer failed; strbuf_take then returns NULL. */
#ifndef FLASHBED_COMMON_STRBUF_H
#define FLASHBED_COMMON_STRBUF_H

#include <stddef.h>

#include "common/log.h"

struct strbuf {
    char *s;
    size_t len, cap;
    int failed;
};

void strbuf_add(struct strbuf *b, const char *fmt, ...) FB_PRINTF(2, 3);

/* The text (caller frees; "" when nothing was added), or NULL after a failure. */
char *strbuf_take(struct strbuf *b);

#endif
