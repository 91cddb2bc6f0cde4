#include "traces/trace_file.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "common/model_shape.h"

int trace_err(char *err, size_t errlen, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
    return -1;
}

static void put_u32(struct byte_buf *b, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        b->p[b->len++] = (uint8_t)(v >> (8 * i));
}

static void put_u64(struct byte_buf *b, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        b->p[b->len++] = (uint8_t)(v >> (8 * i));
}

int trace_header_put(struct byte_buf *b, const struct trace_meta *m, uint64_t n_tokens)
{
    size_t slen = strlen(m->source);
    if (byte_buf_reserve(b, 64 + slen) != 0)
        return -1;
    memcpy(b->p + b->len, TRACE_MAGIC, 8);
    b->len += 8;
    put_u32(b, TRACE_VERSION);
    put_u32(b, m->n_layers);
    put_u32(b, m->d_model);
    put_u32(b, m->d_ff);
    put_u32(b, m->bytes_per_weight);
    put_u32(b, m->ffn_kind);
    put_u32(b, m->has_predicted ? 1 : 0);
    put_u64(b, n_tokens);
    put_u32(b, (uint32_t)slen);
    memcpy(b->p + b->len, m->source, slen);
    b->len += slen;
    return 0;
}

int trace_footer_put(struct byte_buf *b, uint64_t n_tokens, uint64_t active_events,
                     uint64_t pred_events)
{
    if (byte_buf_reserve(b, 32) != 0)
        return -1;
    memcpy(b->p + b->len, TRACE_END_MAGIC, 8);
    b->len += 8;
    put_u64(b, n_tokens);
    put_u64(b, active_events);
    put_u64(b, pred_events);
    return 0;
}

int trace_put_u64_file(FILE *f, uint64_t v)
{
    uint8_t p[8];
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
    return fwrite(p, 1, 8, f) == 8 ? 0 : -1;
}

static int get_u32(FILE *f, uint32_t *v)
{
    uint8_t p[4];
    if (fread(p, 1, 4, f) != 4)
        return -1;
    *v = (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
    return 0;
}

int trace_get_u64(FILE *f, uint64_t *v)
{
    uint32_t lo, hi;
    if (get_u32(f, &lo) != 0 || get_u32(f, &hi) != 0)
        return -1;
    *v = (uint64_t)hi << 32 | lo;
    return 0;
}

#define WHY(...) (snprintf(why, whylen, __VA_ARGS__), -1)

int trace_header_get(FILE *f, struct trace_meta *m, uint64_t *n_tokens, char *why, size_t whylen)
{
    char magic[8];
    memset(m, 0, sizeof *m);
    size_t got = fread(magic, 1, 8, f);
    if (got != 8 || memcmp(magic, TRACE_MAGIC, 8) != 0)
        return got < 8 && memcmp(magic, TRACE_MAGIC, got) == 0 && got > 0
                   ? WHY("truncated header")
                   : WHY("not a flashbed trace (wrong magic number)");
    uint32_t version, flags, kind, slen;
    if (get_u32(f, &version) != 0)
        return WHY("truncated header");
    if (version > TRACE_VERSION)
        return WHY("trace format version %u is newer than this flashbed reads (%u)", version,
                   TRACE_VERSION);
    if (version == 0)
        return WHY("bad trace format version 0");
    if (get_u32(f, &m->n_layers) || get_u32(f, &m->d_model) || get_u32(f, &m->d_ff) ||
        get_u32(f, &m->bytes_per_weight) || get_u32(f, &kind) || get_u32(f, &flags) ||
        trace_get_u64(f, n_tokens) || get_u32(f, &slen))
        return WHY("truncated header");
    if (m->n_layers == 0 || m->n_layers > 4096 || m->d_ff == 0 || m->d_ff > (1u << 26) ||
        (uint64_t)m->n_layers * m->d_ff > (1u << 26) || m->d_model == 0 || m->d_model > (1u << 20) ||
        m->bytes_per_weight == 0 || m->bytes_per_weight > 8)
        return WHY("implausible shape in header (layers %u, d_model %u, d_ff %u, %u bytes per weight)",
                   m->n_layers, m->d_model, m->d_ff, m->bytes_per_weight);
    if (kind > FFN_GLU)
        return WHY("unknown FFN kind %u in header", kind);
    if (flags > 1)
        return WHY("unknown header flags 0x%x", flags);
    if (slen > TRACE_MAX_SOURCE)
        return WHY("source description of %u bytes is implausible", slen);
    m->ffn_kind = kind;
    m->has_predicted = flags & 1;
    m->source = malloc(slen + 1);
    if (!m->source)
        return WHY("out of memory");
    if (fread(m->source, 1, slen, f) != slen) {
        trace_meta_free(m);
        return WHY("truncated header");
    }
    m->source[slen] = 0;
    return 0;
}
