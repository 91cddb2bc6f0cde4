#include "traces/set_codec.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"

int byte_buf_reserve(struct byte_buf *b, size_t extra)
{
    if (b->len + extra <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra)
        cap *= 2;
    uint8_t *p = realloc(b->p, cap);
    if (!p)
        return -1;
    b->p = p;
    b->cap = cap;
    return 0;
}

void byte_buf_free(struct byte_buf *b)
{
    free(b->p);
    memset(b, 0, sizeof *b);
}

uint32_t ids_symmetric_difference(const uint32_t *a, uint32_t na, const uint32_t *b, uint32_t nb,
                                  uint32_t *out)
{
    uint32_t i = 0, j = 0, n = 0;
    while (i < na && j < nb) {
        if (a[i] < b[j])
            out[n++] = a[i++];
        else if (b[j] < a[i])
            out[n++] = b[j++];
        else
            i++, j++;
    }
    while (i < na)
        out[n++] = a[i++];
    while (j < nb)
        out[n++] = b[j++];
    return n;
}

int byte_src_getc(struct byte_src *s)
{
    if (s->f) {
        int c = getc(s->f);
        s->pos += c != EOF;
        return c;
    }
    return s->pos < s->len ? s->p[s->pos++] : EOF;
}

size_t byte_src_left(const struct byte_src *s)
{
    return s->pos < s->len ? s->len - s->pos : 0;
}

int id_row_reserve(struct id_row *r, size_t n)
{
    if (n <= r->cap && r->ids)
        return 0;
    size_t cap = r->cap ? r->cap : 16;
    while (cap < n)
        cap *= 2;
    uint32_t *p = realloc(r->ids, cap * sizeof *p);
    if (!p)
        return -1;
    r->ids = p;
    r->cap = cap;
    return 0;
}

/* n bytes into dst; 0, or -1 when fewer are left. */
static int byte_src_read(struct byte_src *s, void *dst, size_t n)
{
    if (n == 0) /* a Rice record of an empty difference: dst may be NULL */
        return 0;
    if (s->f) {
        size_t got = fread(dst, 1, n, s->f);
        s->pos += got;
        return got == n ? 0 : -1;
    }
    if (n > s->len - s->pos)
        return -1;
    memcpy(dst, s->p + s->pos, n);
    s->pos += n;
    return 0;
}

static void put_varint(struct byte_buf *b, uint64_t v)
{
    do {
        uint8_t byte = v & 0x7f;
        v >>= 7;
        b->p[b->len++] = byte | (v ? 0x80 : 0);
    } while (v);
}

/* Gap j of a sorted list: ids[0], then ids[j] - ids[j-1] - 1 (ids are unique). */
static inline uint32_t gap_at(const uint32_t *ids, uint32_t j)
{
    return j ? ids[j] - ids[j - 1] - 1 : ids[0];
}

static uint64_t rice_bits(const uint32_t *ids, uint32_t n, unsigned k)
{
    uint64_t bits = (uint64_t)n * (k + 1);
    for (uint32_t j = 0; j < n; j++)
        bits += gap_at(ids, j) >> k;
    return bits;
}

/* The Rice parameter near log2(mean gap * ln 2), checked one either side. */
static unsigned best_rice_k(const uint32_t *ids, uint32_t n, uint32_t d_ff, uint64_t *bits)
{
    double mean_gap = n ? (double)(d_ff - n) / n + 1 : 1;
    unsigned guess = 0;
    while (guess < 24 && (double)(1u << (guess + 1)) <= mean_gap * 0.69)
        guess++;
    unsigned best = guess;
    *bits = rice_bits(ids, n, guess);
    for (int d = -1; d <= 1; d += 2) {
        int k = (int)guess + d;
        if (k < 0 || k > 24)
            continue;
        uint64_t b = rice_bits(ids, n, (unsigned)k);
        if (b < *bits) {
            *bits = b;
            best = (unsigned)k;
        }
    }
    return best;
}

static void put_rice(struct byte_buf *b, const uint32_t *ids, uint32_t n, unsigned k, uint64_t nbytes)
{
    uint8_t *p = b->p + b->len;
    memset(p, 0, nbytes);
    uint64_t bit = 0;
    for (uint32_t j = 0; j < n; j++) {
        uint32_t v = gap_at(ids, j);
        for (uint32_t q = v >> k; q; q--, bit++)
            p[bit >> 3] |= (uint8_t)(1u << (bit & 7));
        bit++; /* the terminating zero */
        for (unsigned i = 0; i < k; i++, bit++)
            if ((v >> i) & 1)
                p[bit >> 3] |= (uint8_t)(1u << (bit & 7));
    }
    b->len += nbytes;
}

int set_encode(struct byte_buf *out, const uint32_t *ids, uint32_t n, const struct id_span refs[3],
               uint32_t d_ff, uint32_t *scratch)
{
    uint64_t bitset_bytes = (d_ff + 7) / 8;
    unsigned best_ref = SET_REF_NONE, best_code = SET_CODE_BITSET, best_k = 0;
    uint64_t best_size = UINT64_MAX;
    const uint32_t *best_ids = ids;
    uint32_t best_n = n;
    for (unsigned r = SET_REF_NONE; r <= SET_REF_ACTIVE; r++) {
        const uint32_t *d = ids;
        uint32_t dn = n;
        if (r != SET_REF_NONE) {
            if (!refs[r].ids)
                continue;
            /* Two diff buffers alternate so the best one found so far survives;
             * a XOR of two subsets of [0, d_ff) fits in d_ff. */
            uint32_t *slot = best_ids == scratch ? scratch + d_ff : scratch;
            dn = ids_symmetric_difference(ids, n, refs[r].ids, refs[r].n, slot);
            d = slot;
        }
        uint64_t bits;
        unsigned k = best_rice_k(d, dn, d_ff, &bits);
        uint64_t rice = 1 + 5 + (bits + 7) / 8;
        uint64_t size = rice < bitset_bytes ? rice : bitset_bytes;
        if (size < best_size) {
            best_size = size;
            best_code = rice < bitset_bytes ? SET_CODE_RICE : SET_CODE_BITSET;
            best_ref = r;
            best_k = k;
            best_ids = d;
            best_n = dn;
        }
    }
    if (byte_buf_reserve(out, 1 + 5 + 1 + 10 + best_size) != 0)
        return -1;
    out->p[out->len++] = (uint8_t)(best_ref << 4 | best_code);
    put_varint(out, best_n);
    if (best_code == SET_CODE_BITSET) {
        uint8_t *p = out->p + out->len;
        memset(p, 0, bitset_bytes);
        for (uint32_t j = 0; j < best_n; j++)
            p[best_ids[j] >> 3] |= (uint8_t)(1u << (best_ids[j] & 7));
        out->len += bitset_bytes;
    } else {
        uint64_t bits = rice_bits(best_ids, best_n, best_k);
        uint64_t nbytes = (bits + 7) / 8;
        out->p[out->len++] = (uint8_t)best_k;
        put_varint(out, nbytes);
        put_rice(out, best_ids, best_n, best_k, nbytes);
    }
    return 0;
}

int byte_buf_put_varint(struct byte_buf *b, uint64_t v)
{
    if (byte_buf_reserve(b, 10) != 0)
        return -1;
    put_varint(b, v);
    return 0;
}

static int get_varint(struct byte_src *src, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
        int c = byte_src_getc(src);
        if (c == EOF)
            return -1;
        *v |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80))
            return 0;
    }
    return -1;
}

/* A set record's nbytes of payload into buf (its bytes replaced). */
static int read_payload(struct byte_src *src, struct byte_buf *buf, uint64_t nbytes, char *why, size_t whylen)
{
    if (nbytes > byte_src_left(src))
        return err_set(why, whylen, "truncated set record");
    buf->len = 0;
    if (byte_buf_reserve(buf, nbytes) != 0)
        return err_set(why, whylen, "out of memory");
    if (byte_src_read(src, buf->p, nbytes) != 0)
        return err_set(why, whylen, "truncated set record");
    return 0;
}

static int decode_bitset(struct byte_src *src, uint32_t d_ff, uint64_t count, uint32_t *d, struct byte_buf *buf,
                         char *why, size_t whylen)
{
    size_t nbytes = (d_ff + 7) / 8;
    if (read_payload(src, buf, nbytes, why, whylen) != 0)
        return -1;
    uint64_t n = 0;
    for (size_t i = 0; i < nbytes; i++)
        for (uint8_t byte = buf->p[i]; byte; byte &= (uint8_t)(byte - 1)) {
            uint32_t id = (uint32_t)(i * 8 + (unsigned)__builtin_ctz(byte));
            if (id >= d_ff)
                return err_set(why, whylen, "neuron %u >= d_ff %u", id, d_ff);
            if (n < count)
                d[n] = id;
            n++;
        }
    if (n != count)
        return err_set(why, whylen, "bitset holds %llu neurons but the record says %llu", (unsigned long long)n,
                   (unsigned long long)count);
    return 0;
}

static int decode_rice(struct byte_src *src, uint32_t d_ff, uint64_t count, uint32_t *d, struct byte_buf *buf,
                       char *why, size_t whylen)
{
    int k = byte_src_getc(src);
    uint64_t nbytes;
    if (k == EOF || get_varint(src, &nbytes) != 0)
        return err_set(why, whylen, "truncated set record");
    if (k > 24)
        return err_set(why, whylen, "bad Rice parameter %d", k);
    if (nbytes > (uint64_t)d_ff * 8 + 64)
        return err_set(why, whylen, "set record of %llu bytes is larger than any set of d_ff %u",
                   (unsigned long long)nbytes, d_ff);
    if (read_payload(src, buf, nbytes, why, whylen) != 0)
        return -1;
    const uint8_t *p = buf->p;
    uint64_t bit = 0, end = nbytes * 8;
    uint64_t next = 0; /* smallest id the next one may take */
    for (uint64_t j = 0; j < count; j++) {
        uint64_t q = 0;
        for (;;) {
            if (bit >= end)
                return err_set(why, whylen, "set record ends inside neuron %llu of %llu", (unsigned long long)j,
                           (unsigned long long)count);
            int b = (p[bit >> 3] >> (bit & 7)) & 1;
            bit++;
            if (!b)
                break;
            if (++q > d_ff)
                return err_set(why, whylen, "gap beyond d_ff %u", d_ff);
        }
        if (bit + (unsigned)k > end)
            return err_set(why, whylen, "set record ends inside neuron %llu of %llu", (unsigned long long)j,
                       (unsigned long long)count);
        uint64_t v = q << k;
        for (int i = 0; i < k; i++, bit++)
            v |= (uint64_t)((p[bit >> 3] >> (bit & 7)) & 1) << i;
        uint64_t id = next + v;
        if (id >= d_ff)
            return err_set(why, whylen, "neuron %llu >= d_ff %u", (unsigned long long)id, d_ff);
        d[j] = (uint32_t)id;
        next = id + 1;
    }
    return 0;
}

int set_decode(struct byte_src *src, const struct id_span refs[3], uint32_t d_ff, struct id_row *out, uint32_t *n,
               struct id_row *scratch, struct byte_buf *buf, char *why, size_t whylen)
{
    int tag = byte_src_getc(src);
    uint64_t count;
    if (tag == EOF || get_varint(src, &count) != 0)
        return err_set(why, whylen, "truncated set record");
    unsigned ref = (unsigned)tag >> 4, code = (unsigned)tag & 15;
    if (ref > SET_REF_ACTIVE || code > SET_CODE_RICE)
        return err_set(why, whylen, "unknown set encoding 0x%02x", (unsigned)tag);
    if (ref != SET_REF_NONE && !refs[ref].ids)
        return err_set(why, whylen, "record refers to a set it cannot have (%s)", ref == SET_REF_PREV ? "previous token at a sequence start" : "active set of an active record");
    if (count > d_ff)
        return err_set(why, whylen, "set of %llu neurons is larger than d_ff %u", (unsigned long long)count, d_ff);
    if (count / 8 > byte_src_left(src)) /* every neuron takes a bit at least */
        return err_set(why, whylen, "set of %llu neurons cannot fit in the %zu bytes left (truncated)", (unsigned long long)count,
                   byte_src_left(src));
    struct id_row *dst = ref == SET_REF_NONE ? out : scratch;
    if (id_row_reserve(dst, count) != 0)
        return err_set(why, whylen, "out of memory");
    uint32_t *d = dst->ids;
    int rc = code == SET_CODE_BITSET ? decode_bitset(src, d_ff, count, d, buf, why, whylen)
                                     : decode_rice(src, d_ff, count, d, buf, why, whylen);
    if (rc != 0)
        return rc;
    if (ref == SET_REF_NONE) {
        *n = (uint32_t)count;
        return 0;
    }
    /* D XOR ref: at most count + its reference's ids (and d_ff, as both are
     * subsets of [0, d_ff)). */
    if (id_row_reserve(out, count + refs[ref].n) != 0)
        return err_set(why, whylen, "out of memory");
    *n = ids_symmetric_difference(d, (uint32_t)count, refs[ref].ids, refs[ref].n, out->ids);
    return 0;
}
