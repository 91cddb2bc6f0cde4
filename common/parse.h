/* Parsing of the textual values users type: sizes, lists, durations.
 * Every parser returns 0 on success and -1 on failure, with a reason
 * (a short phrase, no trailing newline) written to err[errlen]. */
#ifndef FLASHBED_COMMON_PARSE_H
#define FLASHBED_COMMON_PARSE_H

#include <stddef.h>
#include <stdint.h>

/* A list of unsigned 64-bit values, as given on the command line. */
struct u64_list {
    size_t n;
    uint64_t *v; /* heap, n entries */
};

/* "4096", "32k", "4G", "1.5M", "64KiB": binary units (k = 1024).
 * The result must be a whole number of bytes and must not overflow. */
int parse_size(const char *text, uint64_t *out, char *err, size_t errlen);

/* Comma-separated sizes: "4k,32k,1m". Empty items are rejected. */
int parse_size_list(const char *text, struct u64_list *out, char *err, size_t errlen);

/* The items of a comma-separated list, as they are ("" for an empty one):
 * a NULL-terminated array in one allocation (free() it), *n items; NULL
 * when out of memory, *n still the number of items the list has. */
char **split_commas(const char *text, size_t *n);

/* Comma-separated positive integers: "1,2,4,8". */
int parse_uint_list(const char *text, struct u64_list *out, char *err, size_t errlen);

/* Token ids as a file holds them: whole numbers below limit, separated by
 * white space; a line whose first non-blank character is '#' is a comment.
 * At least one. *ids (heap, caller frees) gets them, *n their count. */
int parse_id_list(const char *text, uint64_t limit, int **ids, size_t *n, char *err, size_t errlen);

/* A non-negative integer. */
int parse_uint(const char *text, uint64_t *out, char *err, size_t errlen);

/* A finite real number. */
int parse_double(const char *text, double *out, char *err, size_t errlen);

/* A share: a finite real number ("0.5"), or a percentage of one ("50%",
 * stored as 0.5). */
int parse_share(const char *text, double *out, char *err, size_t errlen);

/* As parse_size, for an amount of memory or disk (a file's size, a budget):
 * a number without a unit other than 0 is refused ("25" is rarely 25 bytes;
 * "25B" is), err saying "did you mean <number><guess>?", guess being the
 * caller's likeliest unit ("G", "%") or units, comma-separated ("k,m":
 * "did you mean 25k or 25m?"). */
int parse_size_with_unit(const char *text, const char *guess, uint64_t *out, char *err, size_t errlen);

/* A budget: "50%" of whole (0% to 100%), or a size as parse_size_with_unit
 * reads it ("25" refused: did you mean 25%?). *bytes gets the byte count
 * (a percentage may give a fraction). */
int parse_share_or_size(const char *text, double whole, double *bytes, char *err, size_t errlen);

/* Seconds: "2", "0.5", "2s", "500ms", "250us". */
int parse_duration(const char *text, double *seconds, char *err, size_t errlen);

/* Writes "4k", "1m", "1g" when exact, else the byte count. */
void format_size(uint64_t bytes, char *buf, size_t len);

void u64_list_free(struct u64_list *l);

#endif
