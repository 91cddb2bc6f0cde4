/* Reading whole files: text, and JSON through cJSON. */
#ifndef FLASHBED_COMMON_JSON_FILE_H
#define FLASHBED_COMMON_JSON_FILE_H

#include <stddef.h>

#include <cjson/cJSON.h>

/* The file's bytes plus a terminating NUL (heap), or NULL with errno set
 * when it cannot be read. len (may be NULL) gets the byte count. Reads to the
 * end rather than trusting the size, so pipes and /proc files work too. */
char *read_text_file(const char *path, size_t *len);

/* The parsed file, or NULL when it cannot be read or is not JSON. */
cJSON *read_json_file(const char *path);

#endif
