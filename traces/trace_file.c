#include "traces/trace_file.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/crc32c.h"
#include "common/errbuf.h"
#include "common/model_shape.h"

void trace_put_u32(uint8_t p[4], uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

uint32_t trace_get_u32(const uint8_t p[4])
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

uint64_t trace_get_u64_at(const uint8_t p[8])
{
    return (uint64_t)trace_get_u32(p + 4) << 32 | trace_get_u32(p);
}

static void put_u32(struct byte_buf *b, uint32_t v)
{
    trace_put_u32(b->p + b->len, v);
    b->len += 4;
}

static void put_u64(struct byte_buf *b, uint64_t v)
{
    put_u32(b, (uint32_t)v);
    put_u32(b, (uint32_t)(v >> 32));
}

/* The CRC of everything appended to b since offset start, appended. */
static void put_crc_since(struct byte_buf *b, size_t start)
{
    put_u32(b, crc32c(b->p + start, b->len - start));
}

uint32_t trace_block_crc_start(uint64_t token, uint32_t layer)
{
    uint8_t p[12];
    trace_put_u32(p, (uint32_t)token);
    trace_put_u32(p + 4, (uint32_t)(token >> 32));
    trace_put_u32(p + 8, layer);
    return crc32c(p, sizeof p);
}

/* The header's one heap part; here, beside the header's reader and writer
 * (trace_writer.c and trace_reader.c both call it, and this file calls
 * neither of them). */
void trace_meta_free(struct trace_meta *m)
{
    free(m->source);
    m->source = NULL;
}

void trace_meta_set_units(struct trace_meta *m)
{
    m->unit_kind = m->has_channels ? UNIT_DOWN_ROW : UNIT_NEURON_BUNDLE;
    m->units = m->d_ff;
}

int trace_meta_check(const struct trace_meta *m, char *why, size_t whylen)
{
    if (!wtype_valid(m->dtype))
        return err_set(why, whylen, "weight type %d is not in the table (%s)", (int)m->dtype, wtype_names());
    enum unit_kind want = m->has_channels ? UNIT_DOWN_ROW : UNIT_NEURON_BUNDLE;
    if (m->unit_kind != want)
        return err_set(why, whylen, "unit kind \"%s\" in a trace %s channel sets (it records \"%s\")",
                       unit_kind_name(m->unit_kind), m->has_channels ? "with" : "without", unit_kind_name(want));
    if (m->units != m->d_ff)
        return err_set(why, whylen, "%u units per layer of kind \"%s\": a trace records d_ff (%u)", m->units,
                       unit_kind_name(m->unit_kind), m->d_ff);
    return 0;
}

int trace_header_put(struct byte_buf *b, const struct trace_meta *m, uint64_t n_tokens)
{
    size_t slen = strlen(m->source);
    if (byte_buf_reserve(b, TRACE_HEADER_FIXED + slen + TRACE_CRC_BYTES) != 0)
        return -1;
    size_t start = b->len;
    memcpy(b->p + b->len, TRACE_MAGIC, 8);
    b->len += 8;
    put_u32(b, TRACE_VERSION);
    put_u32(b, m->n_layers);
    put_u32(b, m->d_model);
    put_u32(b, m->d_ff);
    put_u32(b, wtype_traits(m->dtype)->code);
    put_u32(b, m->ffn_kind);
    put_u32(b, (m->has_predicted ? TRACE_FLAG_PREDICTED : 0u) | (m->has_channels ? TRACE_FLAG_CHANNELS : 0u));
    put_u32(b, unit_kind_code(m->unit_kind));
    put_u32(b, m->units);
    put_u64(b, n_tokens);
    put_u32(b, (uint32_t)slen);
    memcpy(b->p + b->len, m->source, slen);
    b->len += slen;
    put_crc_since(b, start);
    return 0;
}

int trace_footer_put(struct byte_buf *b, uint64_t n_tokens, uint64_t active_events,
                     uint64_t pred_events)
{
    if (byte_buf_reserve(b, TRACE_FOOTER_BYTES + TRACE_CRC_BYTES) != 0)
        return -1;
    size_t start = b->len;
    memcpy(b->p + b->len, TRACE_END_MAGIC, 8);
    b->len += 8;
    put_u64(b, n_tokens);
    put_u64(b, active_events);
    put_u64(b, pred_events);
    put_crc_since(b, start);
    return 0;
}


/* The version 2 header's CRC, read after the source and compared with
 * what the bytes before it give. */
static int check_header_crc(FILE *f, const uint8_t *fixed, size_t fixed_len, const char *source, uint32_t slen,
                            char *why, size_t whylen)
{
    uint8_t stored[TRACE_CRC_BYTES];
    if (fread(stored, 1, sizeof stored, f) != sizeof stored)
        return err_set(why, whylen, "truncated header (no checksum)");
    uint32_t want = trace_get_u32(stored);
    uint32_t got = crc32c_update(crc32c(fixed, fixed_len), source, slen);
    if (got != want)
        return err_set(why, whylen, "header checksum mismatch (stored 0x%08x, computed 0x%08x): the header is damaged", want,
                   got);
    return 0;
}

/* The weight type in a header: a type code from version 3, before it
 * bytes per weight (trace.h: 4 is f32, 2 f16). */
static int header_type(uint32_t v, uint32_t version, enum fb_dtype *t, char *why, size_t whylen)
{
    if (version >= TRACE_VERSION_TYPED)
        return wtype_from_code(v, t) == 0
                   ? 0
                   : err_set(why, whylen, "unknown weight type code %u in header (known: %s)", v, wtype_names());
    if (v == 4 || v == 2) {
        *t = v == 4 ? DTYPE_F32 : DTYPE_F16;
        return 0;
    }
    return err_set(why, whylen,
                   "%u bytes per weight in a version %u header: only 4 (f32) and 2 (f16) name a weight type", v,
                   version);
}

/* The unit kind and count: version 3's fields, or what an older header's
 * channel flag says (trace.h). */
static int header_units(const uint8_t *q, uint32_t version, struct trace_meta *m, char *why, size_t whylen)
{
    if (version < TRACE_VERSION_TYPED) {
        trace_meta_set_units(m);
        return 0;
    }
    uint32_t code = trace_get_u32(q);
    if (unit_kind_from_code(code, &m->unit_kind) != 0)
        return err_set(why, whylen, "unknown unit kind code %u in header", code);
    m->units = trace_get_u32(q + 4);
    return 0;
}

/* The fields of a header whose bytes are trusted (checked, or version 1). */
static int header_fields(const uint8_t *fixed, uint32_t version, struct trace_meta *m, uint64_t *n_tokens, char *why,
                         size_t whylen)
{
    const uint8_t *q = fixed + 12;
    m->n_layers = trace_get_u32(q);
    m->d_model = trace_get_u32(q + 4);
    m->d_ff = trace_get_u32(q + 8);
    uint32_t type = trace_get_u32(q + 12), kind = trace_get_u32(q + 16), flags = trace_get_u32(q + 20);
    *n_tokens = trace_get_u64_at(q + (version >= TRACE_VERSION_TYPED ? 32 : 24));
    /* a trace is of a model: the model shapes' bounds (a d_ff of 2^26 cost
     * trace info seconds over a 1.4 KB file: fuzz_trace) */
    if (m->n_layers == 0 || m->n_layers > MODEL_MAX_LAYERS || m->d_ff == 0 || m->d_ff > MODEL_MAX_D_FF ||
        (uint64_t)m->n_layers * m->d_ff > (1u << 26) || m->d_model == 0 || m->d_model > MODEL_MAX_D_MODEL)
        return err_set(why, whylen, "implausible shape in header (layers %u, d_model %u, d_ff %u)", m->n_layers,
                       m->d_model, m->d_ff);
    if (header_type(type, version, &m->dtype, why, whylen) != 0)
        return -1;
    if (kind > FFN_GLU)
        return err_set(why, whylen, "unknown FFN kind %u in header", kind);
    if (flags & ~(uint32_t)(TRACE_FLAG_PREDICTED | TRACE_FLAG_CHANNELS))
        return err_set(why, whylen, "unknown header flags 0x%x", flags);
    m->ffn_kind = kind;
    m->has_predicted = flags & TRACE_FLAG_PREDICTED;
    m->has_channels = flags & TRACE_FLAG_CHANNELS;
    if (header_units(q + 24, version, m, why, whylen) != 0)
        return -1;
    return trace_meta_check(m, why, whylen);
}

int trace_header_get(FILE *f, struct trace_meta *m, uint64_t *n_tokens, uint32_t *version, char *why,
                     size_t whylen)
{
    uint8_t fixed[TRACE_HEADER_FIXED];
    memset(m, 0, sizeof *m);
    size_t got = fread(fixed, 1, 8, f);
    if (got != 8 || memcmp(fixed, TRACE_MAGIC, 8) != 0)
        return got < 8 && memcmp(fixed, TRACE_MAGIC, got) == 0 && got > 0
                   ? err_set(why, whylen, "truncated header")
                   : err_set(why, whylen, "not a flashbed trace (wrong magic number in the header)");
    if (fread(fixed + 8, 1, 4, f) != 4)
        return err_set(why, whylen, "truncated header");
    *version = trace_get_u32(fixed + 8);
    if (*version > TRACE_VERSION)
        return err_set(why, whylen, "header says trace format version %u, newer than this flashbed reads (%u)", *version,
                   TRACE_VERSION);
    if (*version == 0)
        return err_set(why, whylen, "header says trace format version 0, which does not exist");
    size_t fixed_len = *version >= TRACE_VERSION_TYPED ? TRACE_HEADER_FIXED : TRACE_HEADER_FIXED_V2;
    if (fread(fixed + 12, 1, fixed_len - 12, f) != fixed_len - 12)
        return err_set(why, whylen, "truncated header");
    uint32_t slen = trace_get_u32(fixed + fixed_len - 4);
    if (slen > TRACE_MAX_SOURCE)
        return err_set(why, whylen, "header's source description of %u bytes is implausible", slen);
    /* allocated only for what the file holds: a header of a few bytes
     * cannot claim a megabyte */
    struct stat st;
    long at = ftell(f);
    if (fstat(fileno(f), &st) == 0 && at >= 0 && S_ISREG(st.st_mode) && slen > (uint64_t)st.st_size - (uint64_t)at)
        return err_set(why, whylen, "truncated header (a source description of %u bytes, %llu bytes left in the file)",
                       slen, (unsigned long long)((uint64_t)st.st_size - (uint64_t)at));
    m->source = malloc(slen + 1);
    if (!m->source)
        return err_set(why, whylen, "out of memory");
    if (fread(m->source, 1, slen, f) != slen) {
        trace_meta_free(m);
        return err_set(why, whylen, "truncated header");
    }
    m->source[slen] = 0;
    /* the checksum first: a damaged field then reads as damage, not as a
     * strange shape */
    if ((*version >= TRACE_VERSION_CHECKED &&
         check_header_crc(f, fixed, fixed_len, m->source, slen, why, whylen) != 0) ||
        header_fields(fixed, *version, m, n_tokens, why, whylen) != 0) {
        trace_meta_free(m);
        return -1;
    }
    if (m->has_channels && *version < TRACE_VERSION_CHECKED) {
        trace_meta_free(m);
        return err_set(why, whylen, "channel sets flagged in a version %u header (they came with version 2)", *version);
    }
    return 0;
}

/* The one check of a set: unit names its ids ("neuron", "channel"), bound
 * their limit (bound_name: "d_ff", "d_model"). */
static int check_set(const uint32_t *ids, uint32_t n, uint32_t bound, const char *what, const char *unit,
                     const char *bound_name, char *why, size_t whylen)
{
    if (n && !ids)
        return err_set(why, whylen, "%s set of %u %ss given as NULL", what, n, unit);
    for (uint32_t j = 0; j < n; j++) {
        if (ids[j] >= bound)
            return err_set(why, whylen, "%s %s %u >= %s %u", what, unit, ids[j], bound_name, bound);
        if (j && ids[j] <= ids[j - 1])
            return err_set(why, whylen, "%s %ss not strictly ascending (%u after %u)", what, unit, ids[j], ids[j - 1]);
    }
    return 0;
}

int trace_check_ids(const uint32_t *ids, uint32_t n, uint32_t d_ff, const char *what, char *why, size_t whylen)
{
    return check_set(ids, n, d_ff, what, "neuron", "d_ff", why, whylen);
}

int trace_check_channels(const uint32_t *ids, uint32_t n, uint32_t d_model, char *why, size_t whylen)
{
    return check_set(ids, n, d_model, "kept", "channel", "d_model", why, whylen);
}

int trace_append_ids(uint32_t **ids, uint64_t *len, uint64_t *cap, const uint32_t *src, uint32_t n)
{
    if (*len + n > *cap) {
        uint64_t c = *cap ? *cap : 1u << 16;
        while (c < *len + n)
            c *= 2;
        uint32_t *p = realloc(*ids, c * sizeof **ids);
        if (!p)
            return -1;
        *ids = p;
        *cap = c;
    }
    if (n)
        memcpy(*ids + *len, src, n * sizeof *src);
    *len += n;
    return 0;
}
