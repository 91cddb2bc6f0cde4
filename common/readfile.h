/* A whole file into memory, NUL-terminated (text, JSON, prompts). */
#ifndef FLASHBED_COMMON_READFILE_H
#define FLASHBED_COMMON_READFILE_H

#include <stddef.h>

/* The contents of path plus a terminating NUL, or NULL with errno set.
 * len (may be NULL) gets the byte count. The caller frees. */
char *read_file(const char *path, size_t *len);

#endif
