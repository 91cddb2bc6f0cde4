/* One neuron set as a trace record (format in traces/trace.h): the writer
 * tries every reference and code and keeps the smallest; the reader undoes
 * it. Internal to traces/. */
#ifndef FLASHBED_TRACES_SET_CODEC_H
#define FLASHBED_TRACES_SET_CODEC_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

enum set_ref { SET_REF_NONE = 0, SET_REF_PREV = 1, SET_REF_ACTIVE = 2 };
enum set_code { SET_CODE_BITSET = 0, SET_CODE_RICE = 1 };

struct byte_buf {
    uint8_t *p;
    size_t len, cap;
};

/* Where set_decode reads from: a stream (version 1 traces, whose records
 * are not delimited) or bytes in memory (a version 2 block, read whole and
 * checked against its CRC first). len bounds what a record may claim
 * before anything is allocated for it: a set of n neurons takes at least n
 * bits, so a header's d_ff alone never sizes a buffer. */
struct byte_src {
    FILE *f;              /* read from f when not NULL, else from p */
    const uint8_t *p;
    size_t len;           /* p: its length; f: at most this many bytes are left in the file */
    size_t pos;           /* bytes consumed (p[pos..len) is what is left) */
};

/* The next byte, or EOF at the end. */
int byte_src_getc(struct byte_src *s);

/* At most how many bytes are left to read. */
size_t byte_src_left(const struct byte_src *s);

/* A growing id array: a trace row holds what its sets need, not d_ff. */
struct id_row {
    uint32_t *ids;
    size_t cap;
};

/* Room for n ids (at least 1, so ids is never NULL); 0, or -1 when out of memory. */
int id_row_reserve(struct id_row *r, size_t n);

/* A sorted id list and its length, as references are passed around. */
struct id_span {
    const uint32_t *ids;
    uint32_t n;
};

/* a XOR b of two ascending lists into out (room for na + nb); returns its length. */
uint32_t ids_symmetric_difference(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb,
                                  uint32_t *out);

/* Appends the smallest record for ids to out. refs[SET_REF_*] are the
 * candidates (ids NULL: not available). scratch holds 2*d_ff ids.
 * Returns 0, or -1 when out of memory. */
int set_encode(struct byte_buf *out, const uint32_t *ids, uint32_t n, const struct id_span refs[3],
               uint32_t d_ff, uint32_t *scratch);

/* The largest record set_encode writes for d_ff: tag, count, Rice
 * parameter and length, and a bitset's bytes (a Rice record is kept only
 * when smaller than the bitset). */
static inline uint64_t set_record_max(uint32_t d_ff)
{
    return 1 + 5 + 1 + 10 + ((uint64_t)d_ff + 7) / 8;
}

/* Appends v as a little-endian base-128 varint (at most 10 bytes); 0, or -1
 * when out of memory. */
int byte_buf_put_varint(struct byte_buf *b, uint64_t v);

/* Reads one record from src into out, *n its length; out and scratch
 * grow to what the record holds (never past d_ff ids, and only once the
 * bytes left in src can hold them); refs must not point into them. buf is
 * a reusable byte buffer. 0, or -1 with a short reason in why
 * ("truncated", "neuron 9 >= d_ff 8", "out of memory", ...). */
int set_decode(struct byte_src *src, const struct id_span refs[3], uint32_t d_ff, struct id_row *out, uint32_t *n,
               struct id_row *scratch, struct byte_buf *buf, char *why, size_t whylen);

int byte_buf_reserve(struct byte_buf *b, size_t extra);
void byte_buf_free(struct byte_buf *b);

#endif
