/* spm_model_read (engine/tokenizer/tokenizer_spm.h): protocol buffers'
 * wire format, only as much of it as ModelProto's fields need. Every
 * length is checked against the bytes left before it is used, so a
 * damaged file ends in an error naming the offset, never a read past the
 * buffer or an allocation larger than the file. */
#include "engine/tokenizer/tokenizer_spm.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "common/errbuf.h"

/* protocol buffers' wire types */
enum { WIRE_VARINT = 0, WIRE_I64 = 1, WIRE_LEN = 2, WIRE_I32 = 5 };

/* A stretch of the file being read, and where to say what is wrong. */
struct pb {
    const uint8_t *p, *end, *start; /* start: the file's first byte, for offsets */
    const char *path;
    char *err;
    size_t errlen;
};

static int pb_fail(struct pb *b, const char *what)
{
    return err_set(b->err, b->errlen, "%s: not a SentencePiece model (tokenizer.model): %s at byte %zu", b->path,
                   what, (size_t)(b->p - b->start));
}

static int pb_varint(struct pb *b, uint64_t *v)
{
    *v = 0;
    for (int shift = 0; shift < 70; shift += 7) {
        if (b->p >= b->end)
            return pb_fail(b, "a number cut off by the end");
        uint8_t c = *b->p++;
        *v |= (uint64_t)(c & 0x7f) << (shift < 64 ? shift : 63);
        if (!(c & 0x80))
            return 0;
    }
    return pb_fail(b, "a number longer than 10 bytes");
}

/* The next field's number and wire type; 1 at the end of the stretch. */
static int pb_tag(struct pb *b, uint64_t *field, int *wire)
{
    if (b->p >= b->end)
        return 1;
    uint64_t tag;
    if (pb_varint(b, &tag) != 0)
        return -1;
    *field = tag >> 3;
    *wire = (int)(tag & 7);
    if (*field == 0)
        return pb_fail(b, "field number 0");
    return 0;
}

/* A length-delimited value into sub, b moved past it. */
static int pb_len(struct pb *b, struct pb *sub)
{
    uint64_t n;
    if (pb_varint(b, &n) != 0)
        return -1;
    if (n > (uint64_t)(b->end - b->p))
        return pb_fail(b, "a length past the end of its message");
    *sub = *b;
    sub->end = b->p + n;
    b->p += n;
    return 0;
}

static int pb_skip(struct pb *b, int wire)
{
    uint64_t v;
    struct pb sub = {0}; /* set by the field reader; zeroed so -O3 sees it set */
    size_t fixed = wire == WIRE_I64 ? 8 : 4;
    switch (wire) {
    case WIRE_VARINT:
        return pb_varint(b, &v);
    case WIRE_LEN:
        return pb_len(b, &sub);
    case WIRE_I64:
    case WIRE_I32:
        if ((size_t)(b->end - b->p) < fixed)
            return pb_fail(b, "a fixed-size value cut off by the end");
        b->p += fixed;
        return 0;
    }
    return pb_fail(b, "a group or an unknown wire type");
}

/* field's value, which must have wire type want. */
static int pb_want(struct pb *b, int wire, int want, uint64_t field)
{
    if (wire == want)
        return 0;
    char what[96];
    snprintf(what, sizeof what, "field %llu of wire type %d, not %d", (unsigned long long)field, wire, want);
    return pb_fail(b, what);
}

static int pb_uint(struct pb *b, int wire, uint64_t field, int64_t *v)
{
    uint64_t u;
    if (pb_want(b, wire, WIRE_VARINT, field) != 0 || pb_varint(b, &u) != 0)
        return -1;
    *v = (int64_t)u; /* int32 and enum fields: a negative one is sign-extended to 64 bits */
    return 0;
}

static int pb_float(struct pb *b, int wire, uint64_t field, float *v)
{
    if (pb_want(b, wire, WIRE_I32, field) != 0)
        return -1;
    if (b->end - b->p < 4)
        return pb_fail(b, "a float cut off by the end");
    uint32_t u = (uint32_t)b->p[0] | (uint32_t)b->p[1] << 8 | (uint32_t)b->p[2] << 16 | (uint32_t)b->p[3] << 24;
    memcpy(v, &u, 4);
    b->p += 4;
    return 0;
}

/* One SentencePiece message into piece i. */
static int read_piece(struct pb *b, struct spm_model *m, uint32_t i)
{
    uint64_t field;
    int wire, rc;
    int64_t type = SPM_PIECE_NORMAL;
    struct pb s = {0}; /* set by the field reader; zeroed so -O3 sees it set */
    while ((rc = pb_tag(b, &field, &wire)) == 0) {
        if (field == 1) {
            if (pb_want(b, wire, WIRE_LEN, field) != 0 || pb_len(b, &s) != 0)
                return -1;
            size_t n = (size_t)(s.end - s.p);
            char *p = malloc(n + 1);
            if (!p)
                return pb_fail(b, "out of memory for a piece");
            memcpy(p, s.p, n);
            p[n] = '\0';
            free(m->pieces[i]);
            m->pieces[i] = p;
            m->piece_len[i] = (uint32_t)n;
        } else if (field == 2) {
            if (pb_float(b, wire, field, &m->scores[i]) != 0)
                return -1;
        } else if (field == 3) {
            if (pb_uint(b, wire, field, &type) != 0)
                return -1;
        } else if (pb_skip(b, wire) != 0)
            return -1;
    }
    if (rc < 0)
        return -1;
    if (type < SPM_PIECE_NORMAL || type > SPM_PIECE_BYTE)
        return pb_fail(b, "a piece type outside 1..6");
    m->types[i] = (uint8_t)type;
    return m->pieces[i] ? 0 : pb_fail(b, "a piece without its text");
}

static int read_trainer(struct pb *b, struct spm_model *m)
{
    uint64_t field;
    int wire, rc;
    int64_t v;
    int64_t *ids[] = {&m->unk_id, &m->bos_id, &m->eos_id, &m->pad_id}; /* fields 40..43 */
    while ((rc = pb_tag(b, &field, &wire)) == 0) {
        if (field == 3 || field == 35 || (field >= 40 && field <= 43)) {
            if (pb_uint(b, wire, field, &v) != 0)
                return -1;
            if (field == 3)
                m->model_type = v;
            else if (field == 35)
                m->byte_fallback = v != 0;
            else
                *ids[field - 40] = (int32_t)v;
        } else if (pb_skip(b, wire) != 0)
            return -1;
    }
    return rc < 0 ? -1 : 0;
}

static int read_normalizer(struct pb *b, struct spm_model *m)
{
    uint64_t field;
    int wire, rc;
    int64_t v;
    struct pb s = {0}; /* set by the field reader; zeroed so -O3 sees it set */
    bool *flags[] = {&m->add_dummy_prefix, &m->remove_extra_whitespaces, &m->escape_whitespaces}; /* 3..5 */
    while ((rc = pb_tag(b, &field, &wire)) == 0) {
        if (field == 1 || field == 2) {
            if (pb_want(b, wire, WIRE_LEN, field) != 0 || pb_len(b, &s) != 0)
                return -1;
            if (field == 1)
                snprintf(m->normalizer, sizeof m->normalizer, "%.*s", (int)(s.end - s.p < 63 ? s.end - s.p : 63),
                         (const char *)s.p);
            else
                m->charsmap_bytes = (uint64_t)(s.end - s.p);
        } else if (field >= 3 && field <= 5) {
            if (pb_uint(b, wire, field, &v) != 0)
                return -1;
            *flags[field - 3] = v != 0;
        } else if (pb_skip(b, wire) != 0)
            return -1;
    }
    return rc < 0 ? -1 : 0;
}

/* The number of pieces (ModelProto field 1), the message checked for
 * well-formedness on the way. */
static int count_pieces(struct pb b, uint32_t *n)
{
    uint64_t field;
    int wire, rc;
    *n = 0;
    while ((rc = pb_tag(&b, &field, &wire)) == 0) {
        if (field == 1 && pb_want(&b, wire, WIRE_LEN, field) != 0)
            return -1;
        if (pb_skip(&b, wire) != 0)
            return -1;
        *n += field == 1;
    }
    if (rc < 0)
        return -1;
    return *n ? 0 : pb_fail(&b, "no pieces (ModelProto field 1) up to the end");
}

static int read_model(struct pb b, struct spm_model *m)
{
    uint64_t field;
    int wire, rc;
    uint32_t i = 0;
    struct pb s = {0}; /* set by the field reader; zeroed so -O3 sees it set */
    while ((rc = pb_tag(&b, &field, &wire)) == 0) {
        if (field >= 1 && field <= 3) {
            if (pb_want(&b, wire, WIRE_LEN, field) != 0 || pb_len(&b, &s) != 0)
                return -1;
            int r = field == 1 ? read_piece(&s, m, i++) : field == 2 ? read_trainer(&s, m) : read_normalizer(&s, m);
            if (r != 0)
                return -1;
        } else if (pb_skip(&b, wire) != 0)
            return -1;
    }
    return rc < 0 ? -1 : 0;
}

/* The whole file into *buf (the caller frees it), refusing one over SPM_MAX_FILE. */
static int read_file(const char *path, uint8_t **buf, size_t *n, char *err, size_t errlen)
{
    FILE *f = fopen(path, "rb");
    struct stat st;
    if (!f)
        return err_set(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    if (fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > SPM_MAX_FILE) {
        fclose(f);
        return err_set(err, errlen, "%s: not a SentencePiece model: not a file of at most %u bytes", path,
                       SPM_MAX_FILE);
    }
    *n = (size_t)st.st_size;
    *buf = malloc(*n ? *n : 1);
    bool ok = *buf && fread(*buf, 1, *n, f) == *n;
    fclose(f);
    if (!ok) {
        free(*buf);
        *buf = NULL;
        return err_set(err, errlen, "%s: cannot read %zu bytes", path, *n);
    }
    return 0;
}

int spm_model_read(const char *path, struct spm_model *m, char *err, size_t errlen)
{
    memset(m, 0, sizeof *m);
    m->model_type = SPM_MODEL_UNIGRAM; /* the proto's defaults */
    m->bos_id = 1, m->eos_id = 2, m->pad_id = -1;
    m->add_dummy_prefix = m->remove_extra_whitespaces = m->escape_whitespaces = true;
    uint8_t *buf = NULL;
    size_t n = 0;
    if (read_file(path, &buf, &n, err, errlen) != 0)
        return -1;
    struct pb b = {buf, buf + n, buf, path, err, errlen};
    int rc = count_pieces(b, &m->n_pieces);
    if (rc == 0) {
        m->pieces = calloc(m->n_pieces, sizeof *m->pieces);
        m->piece_len = calloc(m->n_pieces, sizeof *m->piece_len);
        m->scores = calloc(m->n_pieces, sizeof *m->scores);
        m->types = calloc(m->n_pieces, sizeof *m->types);
        if (!m->pieces || !m->piece_len || !m->scores || !m->types)
            rc = err_set(err, errlen, "%s: out of memory for %u pieces", path, m->n_pieces);
    }
    if (rc == 0)
        rc = read_model(b, m);
    free(buf);
    if (rc != 0)
        spm_model_free(m);
    return rc;
}

void spm_model_free(struct spm_model *m)
{
    for (uint32_t i = 0; m->pieces && i < m->n_pieces; i++)
        free(m->pieces[i]);
    free(m->pieces);
    free(m->piece_len);
    free(m->scores);
    free(m->types);
    memset(m, 0, sizeof *m);
}
