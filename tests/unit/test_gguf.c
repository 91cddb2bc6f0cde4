/* The GGUF reader (common/gguf.h) on files written here byte by
 * byte (a tiny writer below): every metadata value type read back
 * through the typed getters, arrays by index and by cursor (strings and
 * nested arrays), tensors of the types flashbed reads and one it does
 * not (the file opens; the lookup by name refuses it naming its type),
 * versions 2 and 3, alignment; then each refusal the header contract
 * lists, with its message's key parts, and every prefix of a valid file
 * refused. Last, the real SmolLM2 GGUF from the shared data (skipped,
 * saying so, without it): its metadata and tensor table as an
 * independent reading of the file found them. */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/gguf.h"

/* ---- a tiny GGUF writer ---- */

struct buf {
    unsigned char p[8192];
    size_t n;
};

static void put(struct buf *b, const void *d, size_t n)
{
    if (b->n + n > sizeof b->p)
        abort();
    memcpy(b->p + b->n, d, n);
    b->n += n;
}

static void put_le(struct buf *b, uint64_t v, unsigned n)
{
    for (unsigned i = 0; i < n; i++)
        b->p[b->n + i] = (unsigned char)(v >> (8 * i));
    b->n += n;
}

static void put_u32(struct buf *b, uint32_t v) { put_le(b, v, 4); }
static void put_u64(struct buf *b, uint64_t v) { put_le(b, v, 8); }

static void put_str(struct buf *b, const char *s)
{
    put_u64(b, strlen(s));
    put(b, s, strlen(s));
}

static void put_f32(struct buf *b, float x)
{
    uint32_t u;
    memcpy(&u, &x, 4);
    put_u32(b, u);
}

static void put_f64(struct buf *b, double x)
{
    uint64_t u;
    memcpy(&u, &x, 8);
    put_u64(b, u);
}

static void header(struct buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
    b->n = 0;
    put(b, "GGUF", 4);
    put_u32(b, version);
    put_u64(b, n_tensors);
    put_u64(b, n_kv);
}

/* A key and its value type (the value follows). */
static void key(struct buf *b, const char *k, uint32_t type)
{
    put_str(b, k);
    put_u32(b, type);
}

static void kv_u32(struct buf *b, const char *k, uint32_t v)
{
    key(b, k, GGUF_TYPE_UINT32);
    put_u32(b, v);
}

static void kv_str(struct buf *b, const char *k, const char *v)
{
    key(b, k, GGUF_TYPE_STRING);
    put_str(b, v);
}

static void tensor_info(struct buf *b, const char *name, uint32_t n_dims, const uint64_t *dims, uint32_t type,
                        uint64_t offset)
{
    put_str(b, name);
    put_u32(b, n_dims);
    for (uint32_t d = 0; d < n_dims; d++)
        put_u64(b, dims[d]);
    put_u32(b, type);
    put_u64(b, offset);
}

static void pad(struct buf *b, size_t align)
{
    while (b->n % align)
        b->p[b->n++] = 0;
}

static void zeros(struct buf *b, size_t n)
{
    memset(b->p + b->n, 0, n);
    b->n += n;
}

static char dir[] = "/tmp/flashbed-test-gguf-XXXXXX";
static char path[4200];

static void write_file(const struct buf *b, size_t n)
{
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(b->p, 1, n, f) != n)
        abort();
    fclose(f);
}

/* b's first n bytes refused, the message holding the path and want. */
static void refused_n(const struct buf *b, size_t n, const char *want, int line)
{
    struct gguf_file f;
    char err[1024] = "";
    write_file(b, n);
    int rc = gguf_open(&f, path, err, sizeof err);
    check_count++;
    if (rc == 0 || !strstr(err, path) || !strstr(err, want)) {
        check_failures++;
        fprintf(stderr, "test_gguf.c:%d: want refusal with \"%s\", got rc %d: %s\n", line, want, rc, err);
    }
    if (rc == 0)
        gguf_close(&f);
    CHECK(f.map == NULL && f.kv == NULL && f.tensors == NULL && f.keys == NULL); /* nothing left */
}
#define REFUSED(b, want) refused_n((b), (b)->n, (want), __LINE__)

static int opened(const struct buf *b, struct gguf_file *f)
{
    char err[1024] = "";
    write_file(b, b->n);
    int rc = gguf_open(f, path, err, sizeof err);
    if (rc)
        fprintf(stderr, "unexpected refusal: %s\n", err);
    return rc;
}

/* ---- accepted ---- */

/* One key of every scalar type, arrays of each, strings, nested arrays. */
static void every_type_file(struct buf *b)
{
    header(b, 3, 0, 21);
    key(b, "t.u8", GGUF_TYPE_UINT8), put_le(b, 200, 1);
    key(b, "t.i8", GGUF_TYPE_INT8), put_le(b, (uint8_t)-100, 1);
    key(b, "t.u16", GGUF_TYPE_UINT16), put_le(b, 60000, 2);
    key(b, "t.i16", GGUF_TYPE_INT16), put_le(b, (uint16_t)-30000, 2);
    kv_u32(b, "t.u32", 4000000000u);
    key(b, "t.i32", GGUF_TYPE_INT32), put_u32(b, (uint32_t)-2000000000);
    key(b, "t.f32", GGUF_TYPE_FLOAT32), put_f32(b, 1.5f);
    key(b, "t.bool", GGUF_TYPE_BOOL), put_le(b, 1, 1);
    kv_str(b, "t.str", "smollm");
    key(b, "t.u64", GGUF_TYPE_UINT64), put_u64(b, (1ull << 63) + 5);
    key(b, "t.i64", GGUF_TYPE_INT64), put_u64(b, (uint64_t) - (1ll << 62));
    key(b, "t.f64", GGUF_TYPE_FLOAT64), put_f64(b, 0.25);
    key(b, "t.f64.big", GGUF_TYPE_FLOAT64), put_f64(b, 1e300);
    key(b, "t.arr.i32", GGUF_TYPE_ARRAY), put_u32(b, GGUF_TYPE_INT32), put_u64(b, 3);
    put_u32(b, (uint32_t)-1), put_u32(b, 0), put_u32(b, 7);
    key(b, "t.arr.f32", GGUF_TYPE_ARRAY), put_u32(b, GGUF_TYPE_FLOAT32), put_u64(b, 2), put_f32(b, 0.5f),
        put_f32(b, -2);
    key(b, "t.arr.str", GGUF_TYPE_ARRAY), put_u32(b, GGUF_TYPE_STRING), put_u64(b, 3);
    put_str(b, "a"), put_str(b, ""), put_str(b, "\xc4\xa0t");
    key(b, "t.arr.bool", GGUF_TYPE_ARRAY), put_u32(b, GGUF_TYPE_BOOL), put_u64(b, 2), put_le(b, 0x0100, 2);
    key(b, "t.arr.u16", GGUF_TYPE_ARRAY), put_u32(b, GGUF_TYPE_UINT16), put_u64(b, 1), put_le(b, 65535, 2);
    key(b, "t.arr.f64", GGUF_TYPE_ARRAY), put_u32(b, GGUF_TYPE_FLOAT64), put_u64(b, 1), put_f64(b, 1e300);
    /* [["x", "yz"], [5]]: an array of arrays */
    key(b, "t.arr.nested", GGUF_TYPE_ARRAY), put_u32(b, GGUF_TYPE_ARRAY), put_u64(b, 2);
    put_u32(b, GGUF_TYPE_STRING), put_u64(b, 2), put_str(b, "x"), put_str(b, "yz");
    put_u32(b, GGUF_TYPE_INT8), put_u64(b, 1), put_le(b, 5, 1);
    key(b, "t.arr.empty", GGUF_TYPE_ARRAY), put_u32(b, GGUF_TYPE_STRING), put_u64(b, 0);
}

static void check_arrays(const struct gguf_file *f)
{
    char err[512];
    struct gguf_value a, e, e2;
    struct gguf_cursor c, c2;
    CHECK(gguf_get_array(f, "t.arr.i32", GGUF_TYPE_INT32, &a, err, sizeof err) == 0);
    CHECK_U64(a.count, 3);
    CHECK(gguf_elem_int(&a, 0) == -1 && gguf_elem_int(&a, 2) == 7 && gguf_elem_int(&a, 3) == 0);
    CHECK(gguf_elem_uint(&a, 0) == 0); /* another element kind: 0 */
    CHECK(gguf_get_array(f, "t.arr.f32", GGUF_TYPE_FLOAT32, &a, err, sizeof err) == 0);
    CHECK(gguf_elem_float(&a, 0) == 0.5 && gguf_elem_float(&a, 1) == -2.0);
    CHECK(gguf_get_array(f, "t.arr.bool", GGUF_TYPE_BOOL, &a, err, sizeof err) == 0);
    CHECK(gguf_elem_uint(&a, 0) == 0 && gguf_elem_uint(&a, 1) == 1);
    CHECK(gguf_get_array(f, "t.arr.u16", GGUF_TYPE_UINT16, &a, err, sizeof err) == 0 && gguf_elem_uint(&a, 0) == 65535);
    CHECK(gguf_get_array(f, "t.arr.f64", GGUF_TYPE_COUNT, &a, err, sizeof err) == 0 && gguf_elem_float(&a, 0) == 1e300);
    CHECK(gguf_get_array(f, "t.arr.str", GGUF_TYPE_STRING, &a, err, sizeof err) == 0);
    gguf_cursor_init(&c, &a);
    CHECK(gguf_cursor_next(&c, &e) && gguf_str_eq(&e, "a"));
    CHECK(gguf_cursor_next(&c, &e) && gguf_str_eq(&e, ""));
    CHECK(gguf_cursor_next(&c, &e) && gguf_str_eq(&e, "\xc4\xa0t"));
    CHECK(!gguf_cursor_next(&c, &e));
    CHECK(gguf_get_array(f, "t.arr.nested", GGUF_TYPE_ARRAY, &a, err, sizeof err) == 0 && a.count == 2);
    gguf_cursor_init(&c, &a);
    CHECK(gguf_cursor_next(&c, &e) && e.type == GGUF_TYPE_ARRAY && e.elem_type == GGUF_TYPE_STRING);
    gguf_cursor_init(&c2, &e);
    CHECK(gguf_cursor_next(&c2, &e2) && gguf_str_eq(&e2, "x") && gguf_cursor_next(&c2, &e2) && gguf_str_eq(&e2, "yz"));
    CHECK(gguf_cursor_next(&c, &e) && e.elem_type == GGUF_TYPE_INT8 && gguf_elem_int(&e, 0) == 5);
    CHECK(!gguf_cursor_next(&c, &e));
    CHECK(gguf_get_array(f, "t.arr.empty", GGUF_TYPE_STRING, &a, err, sizeof err) == 0 && a.count == 0);
    gguf_cursor_init(&c, &a);
    CHECK(!gguf_cursor_next(&c, &e));
    CHECK(gguf_get_array(f, "t.arr.str", GGUF_TYPE_INT32, &a, err, sizeof err) == -1);
    CHECK(strstr(err, "key 't.arr.str' is an array of string, not of int32") != NULL);
}

static void test_every_value_type(void)
{
    struct buf b;
    struct gguf_file f;
    every_type_file(&b);
    CHECK(opened(&b, &f) == 0);
    if (!f.map)
        return;
    CHECK_U64(f.version, 3);
    CHECK_U64(f.n_kv, 21);
    CHECK_U64(f.n_tensors, 0);
    CHECK_U64(f.alignment, 32);
    CHECK_STR(f.kv[0].key, "t.u8");
    CHECK_STR(f.kv[20].key, "t.arr.empty");
    CHECK(f.kv[13].value.type == GGUF_TYPE_ARRAY && f.kv[13].value.elem_type == GGUF_TYPE_INT32);
    check_arrays(&f);
    gguf_close(&f);
}

/* Each getter on each scalar: integers of any type where they fit. */
static void test_getters(void)
{
    struct buf b;
    struct gguf_file f;
    every_type_file(&b);
    CHECK(opened(&b, &f) == 0);
    if (!f.map)
        return;
    char err[512];
    uint32_t u = 0;
    int32_t i = 0;
    uint64_t u64 = 0;
    float x = 0;
    bool yes = false;
    const char *s;
    size_t len;
    CHECK(gguf_get_u32(&f, "t.u8", &u, err, sizeof err) == 0 && u == 200);
    CHECK(gguf_get_u32(&f, "t.u16", &u, err, sizeof err) == 0 && u == 60000);
    CHECK(gguf_get_u32(&f, "t.u32", &u, err, sizeof err) == 0 && u == 4000000000u);
    CHECK(gguf_get_i32(&f, "t.i8", &i, err, sizeof err) == 0 && i == -100);
    CHECK(gguf_get_i32(&f, "t.i16", &i, err, sizeof err) == 0 && i == -30000);
    CHECK(gguf_get_i32(&f, "t.i32", &i, err, sizeof err) == 0 && i == -2000000000);
    CHECK(gguf_get_i32(&f, "t.u8", &i, err, sizeof err) == 0 && i == 200);
    CHECK(gguf_get_u64(&f, "t.u64", &u64, err, sizeof err) == 0 && u64 == (1ull << 63) + 5);
    CHECK(gguf_get_f32(&f, "t.f32", &x, err, sizeof err) == 0 && x == 1.5f);
    CHECK(gguf_get_f32(&f, "t.f64", &x, err, sizeof err) == 0 && x == 0.25f);
    CHECK(gguf_get_f32(&f, "t.f64.big", &x, err, sizeof err) == -1 &&
          strstr(err, "key 't.f64.big' is 1e+300, outside float32's range"));
    CHECK(gguf_get_bool(&f, "t.bool", &yes, err, sizeof err) == 0 && yes);
    CHECK(gguf_get_str(&f, "t.str", &s, &len, err, sizeof err) == 0 && len == 6 && !memcmp(s, "smollm", 6));
    CHECK(gguf_str_eq(&gguf_find(&f, "t.str")->value, "smollm") &&
          !gguf_str_eq(&gguf_find(&f, "t.str")->value, "smol"));
    CHECK(gguf_get_u32(&f, "t.u64", &u, err, sizeof err) == -1 &&
          strstr(err, "key 't.u64' is 9223372036854775813, outside 0..4294967295"));
    CHECK(gguf_get_u32(&f, "t.i8", &u, err, sizeof err) == -1 &&
          strstr(err, "key 't.i8' is -100, outside 0..4294967295"));
    CHECK(gguf_get_i32(&f, "t.u32", &i, err, sizeof err) == -1 &&
          strstr(err, "key 't.u32' is 4000000000, outside -2147483648..2147483647"));
    CHECK(gguf_get_u64(&f, "t.i64", &u64, err, sizeof err) == -1 && strstr(err, "key 't.i64' is -4611686018427387904"));
    CHECK(gguf_get_u32(&f, "t.str", &u, err, sizeof err) == -1 &&
          strstr(err, "key 't.str' is a string, not an integer"));
    CHECK(gguf_get_f32(&f, "t.u8", &x, err, sizeof err) == -1 && strstr(err, "key 't.u8' is a uint8, not a float"));
    CHECK(gguf_get_bool(&f, "t.u8", &yes, err, sizeof err) == -1 && strstr(err, "key 't.u8' is a uint8, not a bool"));
    CHECK(gguf_get_str(&f, "t.u8", &s, &len, err, sizeof err) == -1 && strstr(err, "not a string"));
    CHECK(gguf_get_array(&f, "t.u8", GGUF_TYPE_COUNT, &(struct gguf_value){0}, err, sizeof err) == -1 &&
          strstr(err, "key 't.u8' is a uint8, not an array"));
    CHECK(gguf_get_u32(&f, "llama.block_count", &u, err, sizeof err) == -1 && strstr(err, path) &&
          strstr(err, "key 'llama.block_count' is missing"));
    CHECK(gguf_find(&f, "t.u") == NULL && gguf_find(&f, "t.u8") == &f.kv[0]);
    gguf_close(&f);
}

/* F32, F16, BF16 tensors, one of 4 dims, and a Q4_1 and an IQ2_XS one
 * (no row in the table today: the file opens, the lookup refuses). */
static void tensor_file(struct buf *b, uint32_t quant_code)
{
    header(b, 3, 4, 1);
    kv_str(b, "general.architecture", "llama");
    tensor_info(b, "token_embd.weight", 2, (uint64_t[]){4, 3}, 0, 0);
    tensor_info(b, "blk.0.attn_norm.weight", 1, (uint64_t[]){8}, 1, 64);
    tensor_info(b, "blk.0.x", 4, (uint64_t[]){2, 1, 1, 2}, 30, 96);
    tensor_info(b, "blk.0.ffn_up.weight", 2, (uint64_t[]){32, 2}, quant_code, 128);
    pad(b, 32);
    for (int k = 0; k < 12; k++)
        put_f32(b, (float)k * 0.5f);
    zeros(b, 16);
    for (int k = 0; k < 8; k++)
        put_le(b, 0x3c00, 2); /* f16 1.0 */
    zeros(b, 16);
    for (int k = 0; k < 4; k++)
        put_le(b, 0x3f80, 2); /* bf16 1.0 */
    zeros(b, 24);
    enum fb_dtype t;
    zeros(b, wtype_from_code(quant_code, &t) ? 40 /* two Q4_1 blocks */ : wtype_row_bytes(t, 64));
}

static void test_tensors(void)
{
    struct buf b;
    struct gguf_file f;
    char err[512];
    const struct gguf_tensor *t;
    const void *data;
    tensor_file(&b, 3);
    CHECK(opened(&b, &f) == 0);
    if (!f.map)
        return;
    CHECK_U64(f.n_tensors, 4);
    CHECK(gguf_tensor_get(&f, "token_embd.weight", &t, &data, err, sizeof err) == 0);
    CHECK(t->n_dims == 2 && t->dims[0] == 4 && t->dims[1] == 3 && t->dims[2] == 1 && t->elems == 12);
    CHECK(t->known && t->type == DTYPE_F32 && t->bytes == 48 && t->offset == 0);
    float v[12];
    memcpy(v, data, sizeof v);
    CHECK(v[0] == 0 && v[11] == 5.5f);
    CHECK((const unsigned char *)data == f.map + f.data_start && f.data_start % 32 == 0);
    CHECK(gguf_tensor_get(&f, "blk.0.attn_norm.weight", &t, &data, err, sizeof err) == 0);
    CHECK(t->type == DTYPE_F16 && t->bytes == 16 && ((const unsigned char *)data)[1] == 0x3c);
    CHECK(gguf_tensor_get(&f, "blk.0.x", &t, NULL, err, sizeof err) == 0);
    CHECK(t->type == DTYPE_BF16 && t->n_dims == 4 && t->elems == 4 && t->bytes == 8);
    CHECK(gguf_tensor_find(&f, "blk.0.ffn_up.weight") == &f.tensors[3] && f.tensors[3].type_code == 3);
    enum fb_dtype q;
    if (wtype_from_code(3, &q) != 0) { /* until the quantized rows are in the table */
        CHECK(gguf_tensor_get(&f, "blk.0.ffn_up.weight", &t, &data, err, sizeof err) == -1);
        CHECK(strstr(err, path) &&
              strstr(err, "tensor blk.0.ffn_up.weight has type Q4_1 (code 3), which flashbed does not read"));
    }
    CHECK(gguf_tensor_get(&f, "output.weight", &t, &data, err, sizeof err) == -1 &&
          strstr(err, "no tensor 'output.weight'"));
    gguf_close(&f);
    struct {
        uint32_t code;
        const char *name;
    } unread[] = {{17, "IQ2_XS"}, {39, "MXFP4"}, {35, "TQ2_0"}};
    for (size_t k = 0; k < sizeof unread / sizeof unread[0]; k++) {
        tensor_file(&b, unread[k].code);
        if (wtype_from_code(unread[k].code, &q) == 0 || opened(&b, &f))
            continue;
        char want[200];
        snprintf(want, sizeof want, "has type %s (code %u), which flashbed does not read", unread[k].name,
                 unread[k].code);
        CHECK(gguf_tensor_get(&f, "blk.0.ffn_up.weight", &t, &data, err, sizeof err) == -1 && strstr(err, want));
        gguf_close(&f);
    }
    tensor_file(&b, 200);
    CHECK(opened(&b, &f) == 0);
    CHECK(gguf_tensor_get(&f, "blk.0.ffn_up.weight", &t, &data, err, sizeof err) == -1 &&
          strstr(err, "has type unknown to ggml (code 200)"));
    gguf_close(&f);
    CHECK_STR(gguf_ggml_type_name(8), "Q8_0");
    CHECK(gguf_ggml_type_name(4) == NULL && gguf_ggml_type_name(40) == NULL);
}

static void test_versions_and_alignment(void)
{
    struct buf b;
    struct gguf_file f;
    header(&b, 2, 1, 2);
    kv_u32(&b, "general.alignment", 64);
    kv_str(&b, "general.name", "v2");
    tensor_info(&b, "w", 1, (uint64_t[]){5}, 0, 64);
    pad(&b, 64);
    zeros(&b, 64 + 20);
    CHECK(opened(&b, &f) == 0);
    CHECK(f.version == 2 && f.alignment == 64 && f.data_start % 64 == 0 && f.tensors[0].bytes == 20);
    CHECK(gguf_tensor_data(&f, &f.tensors[0]) == f.map + f.data_start + 64);
    gguf_close(&f);
    /* metadata only: the padding after the keys may be left out */
    header(&b, 3, 0, 1);
    kv_str(&b, "general.name", "odd");
    CHECK(b.n % 32 != 0);
    CHECK(opened(&b, &f) == 0);
    CHECK(f.n_tensors == 0 && f.data_start == b.n);
    gguf_close(&f);
}

/* ---- refused ---- */

static void test_header_refusals(void)
{
    struct buf b;
    header(&b, 1, 0, 0);
    REFUSED(&b, "GGUF version 1, which flashbed does not read (versions 2 and 3)");
    header(&b, 4, 0, 0);
    REFUSED(&b, "GGUF version 4, which flashbed does not read");
    header(&b, 0x03000000u, 0, 0);
    REFUSED(&b, "(a big-endian file)");
    header(&b, 3, 0, 0);
    memcpy(b.p, "GGML", 4);
    REFUSED(&b, "not a GGUF file (no GGUF magic)");
    header(&b, 3, 0, 0);
    refused_n(&b, 23, "not a GGUF file (shorter than the 24-byte header)", __LINE__);
    refused_n(&b, 0, "not a GGUF file", __LINE__);
    header(&b, 3, 0, 1000000);
    zeros(&b, 100);
    REFUSED(&b, "the header claims 1000000 keys, more than the 100 bytes after it could hold");
    header(&b, 3, UINT64_MAX, 1);
    kv_u32(&b, "a", 1);
    REFUSED(&b, "the header claims 18446744073709551615 tensors, more than");
    header(&b, 3, 0, UINT64_MAX);
    REFUSED(&b, "claims 18446744073709551615 keys");
}

static void test_value_refusals(void)
{
    struct buf b;
    header(&b, 3, 0, 1);
    put_u64(&b, 100);
    put(&b, "general.", 8);
    REFUSED(&b, "truncated in key 1 of 1: its name of 100 bytes needs 100 bytes at byte 32");
    header(&b, 3, 0, 1);
    key(&b, "general.name", GGUF_TYPE_STRING);
    put_u64(&b, 1ull << 63);
    put(&b, "abc", 3);
    REFUSED(&b, "truncated in key 'general.name': a string of 9223372036854775808 bytes needs");
    header(&b, 3, 0, 1);
    key(&b, "t.arr", GGUF_TYPE_ARRAY), put_u32(&b, GGUF_TYPE_UINT32), put_u64(&b, 1000), zeros(&b, 400);
    REFUSED(&b, "key 't.arr' is an array of 1000 uint32 elements, more than the 400 bytes left in the file could hold");
    header(&b, 3, 0, 1);
    key(&b, "t.arr", GGUF_TYPE_ARRAY), put_u32(&b, GGUF_TYPE_STRING), put_u64(&b, 2), put_str(&b, "ab"), put_u64(&b, 9);
    put(&b, "abcdefgh", 8);
    REFUSED(&b, "truncated in key 't.arr': a string of 9 bytes needs 9 bytes");
    header(&b, 3, 0, 1);
    key(&b, "t.x", 13), put_u64(&b, 0);
    REFUSED(&b, "key 't.x' has unknown value type 13 (0..12)");
    header(&b, 3, 0, 1);
    key(&b, "t.arr", GGUF_TYPE_ARRAY), put_u32(&b, 99), put_u64(&b, 0);
    REFUSED(&b, "key 't.arr' is an array of unknown value type 99");
    header(&b, 3, 0, 1);
    key(&b, "t.deep", GGUF_TYPE_ARRAY);
    for (int d = 0; d < GGUF_MAX_ARRAY_DEPTH; d++)
        put_u32(&b, GGUF_TYPE_ARRAY), put_u64(&b, 1);
    put_u32(&b, GGUF_TYPE_UINT8), put_u64(&b, 0);
    REFUSED(&b, "key 't.deep' nests arrays more than 4 deep");
    header(&b, 3, 0, 1);
    key(&b, "t.b", GGUF_TYPE_BOOL), put_le(&b, 2, 1);
    REFUSED(&b, "key 't.b' holds a bool of value 2");
    header(&b, 3, 0, 1);
    key(&b, "t.b", GGUF_TYPE_ARRAY), put_u32(&b, GGUF_TYPE_BOOL), put_u64(&b, 2), put_le(&b, 0xff00, 2);
    REFUSED(&b, "key 't.b' holds a bool of value 255");
    header(&b, 3, 0, 2);
    kv_u32(&b, "a.b", 1), kv_u32(&b, "a.b", 2);
    REFUSED(&b, "key 'a.b' appears twice");
    header(&b, 3, 0, 1);
    kv_u32(&b, "", 1);
    REFUSED(&b, "key 1 of 1 has an empty name");
    header(&b, 3, 0, 1);
    put_u64(&b, 3), put(&b, "a\0b", 3), put_u32(&b, GGUF_TYPE_UINT8), put_le(&b, 0, 1);
    REFUSED(&b, "key 1 of 1 has a NUL byte in its name");
    header(&b, 3, 0, 1);
    key(&b, "t.u32", GGUF_TYPE_UINT32), put_le(&b, 0, 3);
    REFUSED(&b, "truncated in key 't.u32': its value needs 4 bytes");
}

static void test_tensor_refusals(void)
{
    struct buf b;
    header(&b, 3, 1, 0);
    tensor_info(&b, "x", 0, NULL, 0, 0), zeros(&b, 64);
    REFUSED(&b, "tensor 'x' has 0 dimensions (1 to 4)");
    header(&b, 3, 1, 0);
    tensor_info(&b, "x", 5, (uint64_t[]){1, 1, 1, 1, 1}, 0, 0), zeros(&b, 64);
    REFUSED(&b, "tensor 'x' has 5 dimensions (1 to 4)");
    header(&b, 3, 1, 0);
    tensor_info(&b, "x", 2, (uint64_t[]){4, 0}, 0, 0), zeros(&b, 64);
    REFUSED(&b, "tensor 'x' has dimension 1 of 0");
    header(&b, 3, 1, 0);
    tensor_info(&b, "x", 2, (uint64_t[]){1ull << 32, 1ull << 32}, 0, 0), zeros(&b, 64);
    REFUSED(&b, "tensor 'x' has dimensions whose element count overflows 64 bits");
    header(&b, 3, 1, 0);
    tensor_info(&b, "x", 2, (uint64_t[]){1ull << 62, 1}, 0, 0), zeros(&b, 64);
    REFUSED(&b, "tensor 'x' has a byte count that overflows 64 bits");
    header(&b, 3, 1, 0);
    tensor_info(&b, "a123456789012345678901234567890123456789012345678901234567890123", 1, (uint64_t[]){1}, 0, 0);
    zeros(&b, 64);
    REFUSED(&b, "tensor info 1 of 1 has a name of 64 bytes (1 to 63, no NUL byte)");
    header(&b, 3, 1, 0);
    tensor_info(&b, "", 1, (uint64_t[]){1}, 0, 0), zeros(&b, 64);
    REFUSED(&b, "tensor info 1 of 1 has a name of 0 bytes");
    /* names long enough that the cut info is past the count's bound (33 bytes an info at least) */
    header(&b, 3, 1, 0);
    tensor_info(&b, "output.weight", 1, (uint64_t[]){1}, 0, 0);
    refused_n(&b, b.n - 3, "truncated in tensor 'output.weight': its offset needs 8 bytes", __LINE__);
    header(&b, 3, 1, 0);
    tensor_info(&b, "blk.0.attn_q.weight", 3, (uint64_t[]){1, 1, 1}, 0, 0);
    refused_n(&b, 24 + 8 + 19 + 4 + 8, "truncated in tensor 'blk.0.attn_q.weight': a dimension needs 8 bytes",
              __LINE__);
    header(&b, 3, 2, 0);
    tensor_info(&b, "x", 1, (uint64_t[]){1}, 0, 0), tensor_info(&b, "x", 1, (uint64_t[]){1}, 0, 32);
    pad(&b, 32), zeros(&b, 64);
    REFUSED(&b, "tensor 'x' is listed twice");
}

static void test_layout_refusals(void)
{
    struct buf b;
    header(&b, 3, 1, 0);
    tensor_info(&b, "x", 1, (uint64_t[]){1}, 0, 4), pad(&b, 32), zeros(&b, 64);
    REFUSED(&b, "tensor 'x' has offset 4, not a multiple of the alignment 32");
    header(&b, 3, 2, 0);
    tensor_info(&b, "x", 1, (uint64_t[]){16}, 0, 0), tensor_info(&b, "y", 1, (uint64_t[]){1}, 0, 32);
    pad(&b, 32), zeros(&b, 64);
    REFUSED(&b, "tensor 'y' (at offset 32 of the data section) overlaps tensor 'x' (0..64)");
    header(&b, 3, 2, 0); /* two of a type the table lacks, at one offset: each has a byte there */
    tensor_info(&b, "p", 1, (uint64_t[]){32}, 200, 0), tensor_info(&b, "q", 1, (uint64_t[]){32}, 201, 0);
    pad(&b, 32), zeros(&b, 64);
    REFUSED(&b, "tensor 'q' (at offset 0 of the data section) overlaps tensor 'p' (0..1)");
    header(&b, 3, 1, 0);
    tensor_info(&b, "x", 1, (uint64_t[]){16}, 0, 0), pad(&b, 32), zeros(&b, 63);
    REFUSED(&b, "tensor 'x' (64 bytes at offset 0 of the data section) ends past the end of the file (the data "
                "section holds 63 bytes)");
    header(&b, 3, 1, 0);
    tensor_info(&b, "x", 1, (uint64_t[]){1}, 0, UINT64_MAX - 31), pad(&b, 32), zeros(&b, 64);
    REFUSED(&b, "tensor 'x' (4 bytes at offset 18446744073709551584 of the data section) ends past the end");
    header(&b, 3, 1, 0);
    tensor_info(&b, "x", 1, (uint64_t[]){1}, 200, 64), pad(&b, 32), zeros(&b, 64);
    REFUSED(&b, "tensor 'x' (1 bytes at offset 64 of the data section) ends past the end");
    header(&b, 3, 1, 0);
    tensor_info(&b, "x", 1, (uint64_t[]){1}, 0, 0);
    REFUSED(&b, "the data section starts at byte 64 (the tensor infos end at 57, aligned to 32), past the end of the "
                "file (57 bytes)");
    header(&b, 3, 0, 1);
    kv_u32(&b, "general.alignment", 0);
    REFUSED(&b, "key 'general.alignment' is 0, not a nonzero power of two");
    header(&b, 3, 0, 1);
    kv_u32(&b, "general.alignment", 48);
    REFUSED(&b, "key 'general.alignment' is 48, not a nonzero power of two");
    header(&b, 3, 0, 1);
    key(&b, "general.alignment", GGUF_TYPE_UINT64), put_u64(&b, 32);
    REFUSED(&b, "key 'general.alignment' is a uint64 (the format's is a uint32)");
}

/* A row that is not a whole number of blocks, for each block type the
 * table has (none until the quantized rows are in it: said so). */
static void test_block_rows(void)
{
    int tried = 0;
    for (uint32_t code = 0; code < 64; code++) {
        enum fb_dtype t;
        if (wtype_from_code(code, &t) || wtype_block_elems(t) == 1)
            continue;
        struct buf b;
        uint64_t row = wtype_block_elems(t) + 1;
        header(&b, 3, 1, 0);
        tensor_info(&b, "blk.0.ffn_up.weight", 2, (uint64_t[]){row, 2}, code, 0), pad(&b, 32);
        zeros(&b, 2 * wtype_row_bytes(t, row - 1) + 64);
        char want[200];
        snprintf(want, sizeof want,
                 "tensor 'blk.0.ffn_up.weight' has rows of %llu elements, not a whole number of %s blocks",
                 (unsigned long long)row, wtype_traits(t)->upper_name);
        REFUSED(&b, want);
        tried++;
    }
    if (!tried)
        printf("test_gguf: block rows: no block type in common/wtypes.def yet, skipped\n");
}

/* Every proper prefix of a valid file with keys and tensors is refused. */
static void test_every_prefix_refused(void)
{
    struct buf b;
    struct gguf_file f;
    tensor_file(&b, 0 /* F32: its bytes known, so cutting them shows */);
    CHECK(opened(&b, &f) == 0);
    gguf_close(&f);
    for (size_t n = 0; n < b.n; n++) {
        char err[1024] = "";
        write_file(&b, n);
        int rc = gguf_open(&f, path, err, sizeof err);
        CHECK(rc == -1 && strstr(err, path));
        if (rc == 0) {
            fprintf(stderr, "prefix of %zu bytes accepted\n", n);
            gguf_close(&f);
        }
    }
    every_type_file(&b); /* no tensors: every prefix cuts a value */
    for (size_t n = 0; n < b.n; n++) {
        write_file(&b, n);
        CHECK(gguf_open(&f, path, (char[256]){0}, 256) == -1);
    }
}

/* ---- the real file ---- */

static void check_real_metadata(const struct gguf_file *f)
{
    char err[512];
    uint32_t u = 0;
    float x = 0;
    const char *s;
    size_t len;
    struct gguf_value a;
    CHECK(gguf_get_str(f, "general.architecture", &s, &len, err, sizeof err) == 0 && len == 5 &&
          !memcmp(s, "llama", 5));
    CHECK(gguf_get_u32(f, "llama.block_count", &u, err, sizeof err) == 0 && u == 30);
    CHECK(gguf_get_u32(f, "llama.embedding_length", &u, err, sizeof err) == 0 && u == 576);
    CHECK(gguf_get_u32(f, "llama.feed_forward_length", &u, err, sizeof err) == 0 && u == 1536);
    CHECK(gguf_get_u32(f, "llama.attention.head_count", &u, err, sizeof err) == 0 && u == 9);
    CHECK(gguf_get_u32(f, "llama.attention.head_count_kv", &u, err, sizeof err) == 0 && u == 3);
    CHECK(gguf_get_f32(f, "llama.rope.freq_base", &x, err, sizeof err) == 0 && x == 100000.0f);
    CHECK(gguf_str_eq(&gguf_find(f, "tokenizer.ggml.model")->value, "gpt2"));
    CHECK(gguf_str_eq(&gguf_find(f, "tokenizer.ggml.pre")->value, "smollm"));
    CHECK(gguf_get_array(f, "tokenizer.ggml.tokens", GGUF_TYPE_STRING, &a, err, sizeof err) == 0 && a.count == 49152);
    struct gguf_cursor c;
    struct gguf_value e;
    uint64_t n = 0;
    gguf_cursor_init(&c, &a);
    while (gguf_cursor_next(&c, &e))
        n += n == 0 ? gguf_str_eq(&e, "<|endoftext|>") : 1;
    CHECK_U64(n, 49152);
    CHECK(gguf_get_array(f, "tokenizer.ggml.merges", GGUF_TYPE_STRING, &a, err, sizeof err) == 0 && a.count == 48900);
    CHECK(gguf_get_array(f, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, &a, err, sizeof err) == 0 &&
          gguf_elem_int(&a, 0) == 3);
}

static void check_real_tensors(const struct gguf_file *f)
{
    int counts[3] = {0}; /* F32, Q4_1, Q8_0 */
    for (uint64_t i = 0; i < f->n_tensors; i++) {
        const struct gguf_tensor *t = &f->tensors[i];
        counts[0] += t->type_code == 0;
        counts[1] += t->type_code == 3;
        counts[2] += t->type_code == 8;
    }
    CHECK(counts[0] == 61 && counts[1] == 210 && counts[2] == 1);
    const struct gguf_tensor *t = gguf_tensor_find(f, "token_embd.weight");
    CHECK(t && t->type_code == 8 && t->dims[0] == 576 && t->dims[1] == 49152 && t->offset == 0);
    t = gguf_tensor_find(f, "blk.0.ffn_down.weight");
    CHECK(t && t->type_code == 3 && t->dims[0] == 1536 && t->dims[1] == 576 && t->offset == 30083328);
    t = gguf_tensor_find(f, "output_norm.weight");
    CHECK(t && t->known && t->type == DTYPE_F32 && t->bytes == 576 * 4 && t->offset == 96574464);
    CHECK(f->data_start == 1785664 && f->size == 98362432);
}

/* The real model, as tests/README.md's shared data: skipped without it. */
static void test_real_file(void)
{
    const char *data = getenv("FLASHBED_DATA");
    char real[4200];
    snprintf(real, sizeof real, "%s/models/smollm2-135m/SmolLM2-135M-Instruct.Q4_1.gguf",
             data && *data ? data : FLASHBED_DATA_DEFAULT);
    if (access(real, R_OK) != 0) {
        printf("test_gguf: the real file: skipped: %s not found (set FLASHBED_DATA)\n", real);
        return;
    }
    struct gguf_file f;
    char err[1024];
    CHECK(gguf_open(&f, real, err, sizeof err) == 0);
    if (!f.map)
        return (void)fprintf(stderr, "%s\n", err);
    CHECK_U64(f.version, 3);
    CHECK_U64(f.n_tensors, 272);
    CHECK_U64(f.n_kv, 33);
    CHECK_U64(f.alignment, 32);
    check_real_metadata(&f);
    check_real_tensors(&f);
    gguf_close(&f);
}

int main(void)
{
    if (!mkdtemp(dir))
        abort();
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    test_every_value_type();
    test_getters();
    test_tensors();
    test_versions_and_alignment();
    test_header_refusals();
    test_value_refusals();
    test_tensor_refusals();
    test_layout_refusals();
    test_block_rows();
    test_every_prefix_refused();
    unlink(path);
    rmdir(dir);
    test_real_file();
    return check_report("test_gguf");
}
