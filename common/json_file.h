/* Reading whole files: text, and JSON through cJSON; and the numbers in
 * them, range-checked before they become integers or rates. The number
 * helpers return 0, or -1 with a line in err naming the file (path), the
 * key and the value found. Thread-safe (no shared state). And lists of
 * numbers written so they read back exactly. */
#ifndef FLASHBED_COMMON_JSON_FILE_H
#define FLASHBED_COMMON_JSON_FILE_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* The file's bytes plus a terminating NUL (heap), or NULL with errno set
 * when it cannot be read. len (may be NULL) gets the byte count. Reads to the
 * end rather than trusting the size, so pipes and /proc files work too. */
char *read_text_file(const char *path, size_t *len);

/* The parsed file, or NULL when it cannot be read or is not JSON. */
cJSON *read_json_file(const char *path);

/* v as a whole number in [min, max]: refuses a missing value, a string, a
 * fraction (0.5), NaN or infinity, and anything outside the range (-1 for
 * an unsigned, 1e300, 2^64 - 1, which a double rounds to 2^64). what names
 * the value in the message as it should read there: "tensor 'x' offset". */
int json_number_u64(const cJSON *v, const char *what, uint64_t min, uint64_t max, uint64_t *out,
                    const char *path, char *err, size_t errlen);

/* v as a finite number in [min, max]. */
int json_number_finite(const cJSON *v, const char *what, double min, double max, double *out,
                       const char *path, char *err, size_t errlen);

/* The same for obj's member key (missing when obj is not an object); the
 * message names it in quotes: "d_model". */
int json_get_u64(const cJSON *obj, const char *key, uint64_t min, uint64_t max, uint64_t *out,
                 const char *path, char *err, size_t errlen);
int json_get_finite(const cJSON *obj, const char *key, double min, double max, double *out,
                    const char *path, char *err, size_t errlen);

/* Adds key: [v[0], ...] to obj, each number in the fewest digits (15 to
 * 17) that read back as it exactly (cJSON's own printing settles for 15
 * where they read back within an epsilon); n finite values. 0, or -1 out
 * of memory. */
int json_add_exact_doubles(cJSON *obj, const char *key, const double *v, size_t n);

#endif
