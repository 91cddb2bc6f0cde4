/* The safetensors format's rules, checked where a file's header is read
 * (engine/import/safetensors.c), as huggingface/safetensors' own reader
 * (SafeTensors::read_metadata and Metadata::validate) refuses what breaks
 * them:
 *   - the 8-byte little-endian header length N is at most 100,000,000 and
 *     the file holds 8 + N bytes at least;
 *   - the N header bytes are UTF-8 text of one JSON object (whitespace,
 *     the writers' padding, may follow it; nothing else);
 *   - "__metadata__", when present, maps strings to strings;
 *   - every other key is a tensor: an object with a dtype, a shape of whole
 *     numbers and data_offsets [begin, end], begin <= end, end - begin =
 *     elements x dtype size (no overflow); names are unique;
 *   - taken in the order of their offsets, the tensors' byte ranges tile
 *     the data buffer: each begins where the one before ended (no gap, no
 *     overlap), the first at 0, and the last ends at the end of the file.
 * The order of the keys in the header does not matter (the library sorts
 * by offsets too). Each function returns 0, or -1 with the reason in err
 * naming the file, the tensor or key, and what is wrong. No threads. */
#ifndef FLASHBED_ENGINE_SAFETENSORS_RULES_H
#define FLASHBED_ENGINE_SAFETENSORS_RULES_H

#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "engine/model/dtype.h"

#define ST_MAX_HEADER_BYTES 100000000u

/* The header's n bytes at p as a JSON object (new, for the caller to
 * delete), or NULL with the reason in err: not UTF-8, not JSON, not an
 * object, or something after the object other than whitespace. */
cJSON *st_parse_header(const char *path, const unsigned char *p, size_t n, char *err, size_t errlen);

/* A dtype's name in the header ("F32", "F16", "BF16": those this reader
 * converts) as the enum; -1 for any other. */
int st_wtype_parse(const char *name, enum fb_dtype *t);

/* One tensor entry: an object, its dtype one of those this reader knows
 * (F32, F16, BF16), shape and data_offsets consistent with each other. */
int st_check_entry(const char *path, const cJSON *e, char *err, size_t errlen);

/* "__metadata__": an object of strings (e may be NULL: there is none). */
int st_check_metadata(const char *path, const cJSON *e, char *err, size_t errlen);

/* The entries together (each already checked): unique names, and byte
 * ranges tiling data_bytes (the file's size less 8 + N) exactly. */
int st_check_layout(const char *path, const cJSON *header, uint64_t data_bytes, char *err, size_t errlen);

#endif
