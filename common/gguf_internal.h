/* What the GGUF reader's files share (common/gguf*.c), not part of
 * its API (common/gguf.h): the header's parse into a gguf_file
 * whose map and size are set, the checks over what it read, and the
 * little-endian numbers and value sizes of the format. */
#ifndef FLASHBED_COMMON_GGUF_INTERNAL_H
#define FLASHBED_COMMON_GGUF_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "common/gguf.h"

/* magic, version, tensor count, key count */
#define GGUF_HEADER_BYTES 24u

/* n (1..8) bytes at p as a little-endian unsigned number. */
static inline uint64_t gguf_le(const unsigned char *p, unsigned n)
{
    uint64_t v = 0;
    for (unsigned i = n; i-- > 0;)
        v = v << 8 | p[i];
    return v;
}

/* The encoded size of a value of a fixed-size type; 0 for STRING, ARRAY
 * and codes outside the enum. */
uint64_t gguf_vtype_size(uint32_t t);

/* Parses the header, the key/value pairs and the tensor infos of f->map
 * (f->size bytes) into f: version, counts, kv (keys copied into f->keys),
 * tensors (dims, elems, type, offset), and the end of the tensor infos in
 * *infos_end. -1 with err naming the file and where. */
int gguf_read_header(struct gguf_file *f, uint64_t *infos_end, char *err, size_t errlen);

/* The checks over what gguf_read_header read: keys unique,
 * general.alignment, the data section's start, each tensor's type, row
 * and range, the tensors' names unique and their ranges apart. Sets
 * f->alignment, f->data_start and each known tensor's type and bytes. */
int gguf_check(struct gguf_file *f, uint64_t infos_end, char *err, size_t errlen);

#endif
