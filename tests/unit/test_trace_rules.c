/* The trace format's rules (traces/trace_file.h, set_codec.h), one crafted
 * file per rule the reader checks: the header (magic, version, shape,
 * kind, flags, source), the token (marker, flags), each set record
 * (encoding, reference, count, bitset, Rice code), and the end marker
 * (counts, trailing bytes), in version 1 (no checksums, so each rule is
 * reached directly) and, for the checksums, version 2 from the writer.
 * Each is refused by the streaming reader with a message naming the file,
 * the token and layer where it lies and what is wrong; a file using every
 * encoding (bitset, Rice, difference from the previous token and from the
 * active set) is read back with exact sets. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "traces/trace.h"

static char path[300];

struct bytes {
    unsigned char p[4096];
    size_t n;
};

static void b_put(struct bytes *b, const void *src, size_t n)
{
    memcpy(b->p + b->n, src, n);
    b->n += n;
}

static void b_u8(struct bytes *b, unsigned v)
{
    b->p[b->n++] = (unsigned char)v;
}

static void b_le(struct bytes *b, uint64_t v, int width)
{
    for (int i = 0; i < width; i++)
        b_u8(b, (unsigned)(v >> (8 * i)) & 0xff);
}

/* struct bytes of a version-1 trace header: 2 layers, d_model 8, d_ff as given. */
struct hdr {
    uint32_t version, n_layers, d_ff, bpw, kind, flags, slen;
    uint64_t n_tokens;
};

static const struct hdr base = {1, 2, 16, 4, 0, 0, 2, 1};

static void b_header(struct bytes *b, struct hdr h)
{
    b_put(b, "FBTRACE", 8);
    uint32_t f[7] = {h.version, h.n_layers, 8, h.d_ff, h.bpw, h.kind, h.flags};
    for (int i = 0; i < 7; i++)
        b_le(b, f[i], 4);
    b_le(b, h.n_tokens, 8);
    b_le(b, h.slen, 4);
    b_put(b, "{}", 2);
}

static void b_footer(struct bytes *b, uint64_t n_tokens, uint64_t active, uint64_t pred)
{
    b_put(b, "FBTREND", 8);
    b_le(b, n_tokens, 8);
    b_le(b, active, 8);
    b_le(b, pred, 8);
}

/* Bitset record of {0, 9} (d_ff 16): 2 neurons. */
static void b_bitset_0_9(struct bytes *b)
{
    b_put(b, "\x00\x02\x01\x02", 4);
}

/* One token of both layers' sets {0, 9}. */
static void b_token(struct bytes *b)
{
    b_put(b, "\xa7\x00", 2);
    b_bitset_0_9(b);
    b_bitset_0_9(b);
}

static void write_file(const struct bytes *b)
{
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(b->p, 1, b->n, f) == b->n);
    if (f)
        fclose(f);
}

/* Reads the file to its end; 0, or -1 with the message in why. */
static int read_trace(char *why, size_t len)
{
    struct trace_reader *r = trace_reader_open(path, why, len);
    if (!r)
        return -1;
    struct trace_token t;
    int rc;
    while ((rc = trace_reader_next(r, &t, why, len)) == 1)
        ;
    trace_reader_close(r);
    return rc;
}

static void refused(const char *what, const struct bytes *b, const char *want)
{
    char why[512] = "";
    write_file(b);
    CHECK(read_trace(why, sizeof why) == -1);
    CHECK(strstr(why, path) != NULL);
    if (!strstr(why, want)) {
        check_failures++;
        fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n", what, why, want);
    }
    check_count++;
}

/* The header h, then one token of {0, 9} sets and a footer agreeing. */
static void header_refused(const char *what, struct hdr h, const char *want)
{
    struct bytes b = {.n = 0};
    b_header(&b, h);
    b_token(&b);
    b_footer(&b, 1, 4, 0);
    refused(what, &b, want);
}

static void test_header(void)
{
    struct bytes b = {.n = 0};
    b_put(&b, "FBTRACX", 8);
    refused("wrong magic", &b, "not a flashbed trace (wrong magic number in the header)");
    b.n = 0;
    b_put(&b, "FBTRACE\0\1\0", 10);
    refused("cut header", &b, "truncated header");
    struct hdr h = base;
    h.version = 0;
    header_refused("version 0", h, "version 0, which does not exist");
    h.version = 99;
    header_refused("version 99", h, "version 99, newer than this flashbed reads");
    h = base, h.n_layers = 0;
    header_refused("no layers", h, "implausible shape in header (layers 0");
    h = base, h.d_ff = (1u << 22) + 1;
    header_refused("d_ff past the limit", h, "implausible shape in header (layers 2, d_model 8, d_ff 4194305");
    h = base, h.n_layers = 64, h.d_ff = 1u << 21;
    header_refused("layers x d_ff past 2^26", h, "implausible shape in header (layers 64");
    h = base, h.bpw = 9;
    header_refused("9 bytes per weight", h, "9 bytes per weight");
    h = base, h.kind = 2;
    header_refused("FFN kind 2", h, "unknown FFN kind 2 in header");
    h = base, h.flags = 2; /* channel sets: a version 2 flag, in this version 1 header */
    header_refused("header flags 2", h, "channel sets flagged in a version 1 header");
    h = base, h.flags = 4;
    header_refused("header flags 4", h, "unknown header flags 0x4");
    h = base, h.slen = (1u << 20) + 1;
    header_refused("source over 1 MiB", h, "source description of 1048577 bytes is implausible");
    h = base, h.slen = 4000;
    header_refused("source past the file", h, "truncated header (a source description of 4000 bytes");
}

/* A file whose token 0 is marker, flags, then the given layer-0 record
 * bytes, layer 1 {0, 9}, and a footer for 1 token. */
static void record_refused(const char *what, struct hdr h, const char *rec, size_t n, const char *want)
{
    struct bytes b = {.n = 0};
    b_header(&b, h);
    b_put(&b, "\xa7\x00", 2);
    b_put(&b, rec, n);
    b_bitset_0_9(&b);
    b_footer(&b, 1, 4, 0);
    refused(what, &b, want);
}

static void test_records(void)
{
    struct bytes b = {.n = 0};
    b_header(&b, base);
    b_put(&b, "\x55\x00", 2);
    refused("bad token marker", &b, "token 0: bad token marker 0x55");
    b.n = 0;
    b_header(&b, base);
    b_put(&b, "\xa7\x80", 2);
    b_bitset_0_9(&b);
    b_bitset_0_9(&b);
    b_footer(&b, 1, 4, 0);
    refused("unknown token flags", &b, "token 0: unknown token flags 0x80");
    record_refused("unknown encoding", base, "\x03\x00", 2, "token 0 layer 0 (active set): unknown set encoding 0x03");
    record_refused("unknown reference", base, "\x30\x00", 2, "unknown set encoding 0x30");
    record_refused("previous at a sequence start", base, "\x10\x00\x00\x00", 4,
                   "record refers to a set it cannot have (previous token at a sequence start)");
    record_refused("active of an active record", base, "\x20\x00\x00\x00", 4,
                   "record refers to a set it cannot have (active set of an active record)");
    record_refused("more than d_ff", base, "\x00\x11\x00\x00", 4, "set of 17 neurons is larger than d_ff 16");
    struct hdr wide = base;
    wide.d_ff = 4096;
    record_refused("count past the bytes left", wide, "\x01\x80\x20", 3, "set of 4096 neurons cannot fit in the 36 bytes left");
    record_refused("bitset against its count", base, "\x00\x03\x01\x02", 4,
                   "bitset holds 2 neurons but the record says 3");
    struct hdr h12 = base;
    h12.d_ff = 12;
    record_refused("bitset past d_ff", h12, "\x00\x01\x00\x20", 4, "neuron 13 >= d_ff 12");
    record_refused("Rice parameter", base, "\x01\x01\x19\x01\x00", 5, "bad Rice parameter 25");
    record_refused("Rice record too long", base, "\x01\x01\x00\xc1\x01", 5,
                   "set record of 193 bytes is larger than any set of d_ff 16");
    record_refused("Rice record cut", base, "\x01\x02\x01\x01\x3f", 5, "set record ends inside neuron 1 of 2");
    record_refused("Rice neuron past d_ff", base, "\x01\x01\x04\x01\x01", 5, "neuron 16 >= d_ff 16");
    record_refused("Rice gap past d_ff", base, "\x01\x01\x00\x03\xff\xff\xff", 7, "gap beyond d_ff 16");
    record_refused("truncated record", base, "\x01\x01\x00\x80\x01", 5, "truncated set record");
}

static void test_end(void)
{
    struct bytes b = {.n = 0};
    struct hdr h = base;
    h.n_tokens = 1;
    b_header(&b, h);
    b_token(&b);
    b_token(&b);
    refused("more tokens than the header", &b, "body holds more tokens than the header's 1");
    b.n = 0;
    b_header(&b, h);
    b_token(&b);
    b_put(&b, "\x42", 1);
    refused("garbage after the last token", &b, "after token 0, the last: expected the end marker, found byte 0x42");
    b.n = 0;
    b_header(&b, h);
    b_token(&b);
    refused("no end marker", &b, "truncated after token 1 of 1 (no end marker)");
    b.n = 0;
    b_header(&b, h);
    b_token(&b);
    b_put(&b, "FBTREND\0\1", 9);
    refused("cut end marker", &b, "truncated end marker");
    b.n = 0;
    b_header(&b, h);
    b_token(&b);
    b_put(&b, "FBTRXXXX", 8);
    b_footer(&b, 1, 4, 0);
    refused("garbage end marker", &b, "after 1 tokens: expected a token or the end marker, found garbage");
    b.n = 0;
    b_header(&b, h);
    b_token(&b);
    b_footer(&b, 2, 4, 0);
    refused("end marker's token count", &b, "header says 1 tokens, end marker 2, body holds 1");
    b.n = 0;
    b_header(&b, h);
    b_token(&b);
    b_footer(&b, 1, 5, 0);
    refused("end marker's neuron counts", &b, "end marker counts 5 active and 0 predicted neurons, body holds 4 and 0");
    b.n = 0;
    b_header(&b, h);
    b_token(&b);
    b_footer(&b, 1, 4, 0);
    b_u8(&b, 0);
    refused("bytes after the end", &b, "trailing bytes after the end marker");
}

/* Every encoding accepted, with its exact sets: token 0 active {0, 9}
 * (bitset) and predicted = active XOR {3} (ref active, Rice); token 1
 * active = previous XOR {1} (ref previous, bitset), predicted {3, 5} (Rice). */
static void test_valid(void)
{
    struct bytes b = {.n = 0};
    struct hdr h = base;
    h.n_layers = 1, h.flags = 1, h.n_tokens = 2;
    b_header(&b, h);
    b_put(&b, "\xa7\x00", 2);
    b_bitset_0_9(&b);
    b_put(&b, "\x21\x01\x00\x01\x07", 5); /* XOR active: {3}, k 0: 1 1 1 0 */
    b_put(&b, "\xa7\x00", 2);
    b_put(&b, "\x10\x01\x02\x00", 4);     /* XOR previous: {1} */
    b_put(&b, "\x01\x02\x01\x01\x15", 5); /* {3, 5}, k 1 */
    b_footer(&b, 2, 5, 5);
    write_file(&b);
    char why[512];
    struct trace_reader *r = trace_reader_open(path, why, sizeof why);
    CHECK(r != NULL);
    struct trace_token t;
    static const uint32_t want[4][3] = {{0, 9}, {0, 3, 9}, {0, 1, 9}, {3, 5}};
    static const uint32_t want_n[4] = {2, 3, 3, 2};
    for (int k = 0; r && k < 2; k++) {
        CHECK(trace_reader_next(r, &t, why, sizeof why) == 1);
        CHECK_U64(t.n_active[0], want_n[2 * k]);
        CHECK_U64(t.n_pred[0], want_n[2 * k + 1]);
        CHECK(t.n_active[0] == want_n[2 * k] && !memcmp(t.active[0], want[2 * k], want_n[2 * k] * 4));
        CHECK(t.n_pred[0] == want_n[2 * k + 1] && !memcmp(t.pred[0], want[2 * k + 1], want_n[2 * k + 1] * 4));
    }
    if (r) {
        int rc = trace_reader_next(r, &t, why, sizeof why);
        if (rc)
            fprintf(stderr, "valid trace: %s\n", why);
        CHECK(rc == 0);
        trace_reader_close(r);
    }
}

/* The current version, from the writer: a flipped byte of a block and a cut block. */
static void test_checksums(void)
{
    struct trace_meta m = {.n_layers = 1, .d_model = 8, .d_ff = 16, .dtype = DTYPE_F32, .ffn_kind = 0,
                           .has_predicted = false, .source = "{}", .has_channels = false};
    trace_meta_set_units(&m);
    char why[512];
    struct trace_writer *w = trace_writer_open(NULL, path, &m, why, sizeof why);
    uint32_t set[3] = {1, 4, 7};
    CHECK(w && trace_writer_begin_token(w, 0, why, sizeof why) == 0 &&
          trace_writer_layer(w, 0, set, 3, NULL, 0, why, sizeof why) == 0 && trace_writer_close(w, why, sizeof why) == 0);
    struct bytes b = {.n = 0};
    FILE *f = fopen(path, "rb");
    b.n = f ? fread(b.p, 1, sizeof b.p, f) : 0;
    if (f)
        fclose(f);
    CHECK(read_trace(why, sizeof why) == 0);
    size_t body = 8 + 4 + 8 * 4 + 8 + 4 + 2 + 4 + 2; /* header (version 3), its CRC, the token's marker and flags */
    struct bytes flipped = b;
    flipped.p[body + 2] ^= 0x01;
    refused("flipped block byte", &flipped, "token 0 layer 0: checksum mismatch");
    struct bytes cut = b;
    cut.n = body + 2;
    refused("cut block", &cut, "token 0 layer 0: block of");
}

int main(void)
{
    snprintf(path, sizeof path, "/tmp/flashbed-trace-rules-%d.trace", (int)getpid());
    test_header();
    test_records();
    test_end();
    test_valid();
    test_checksums();
    unlink(path);
    return check_report("test_trace_rules");
}
