/* The safetensors format's rules (engine/import/safetensors_rules.h), one
 * crafted file per rule: each refused with a message naming the file, the
 * tensor or key and what is wrong, and the forms the format allows (keys
 * in any order, padding after the header, empty tensors, UTF-8 names)
 * accepted with the right values. Also the sharded index agreeing with
 * its shards. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "test_files.h"
#include "engine/import/safetensors.h"

static char dir[256];

/* Bytes of header text written: strlen, or this when set (a header with NULs). */
static size_t header_bytes;

/* 8-byte little-endian length, the header text as given (hlen_claim
 * overrides its length when not UINT64_MAX), then n_data bytes of the
 * floats 0, 1, 2, ... */
static void write_st(const char *name, const char *header, uint64_t hlen_claim, size_t n_data)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CHECK(f != NULL);
    if (!f)
        return;
    size_t text = header_bytes ? header_bytes : strlen(header);
    uint64_t hlen = hlen_claim != UINT64_MAX ? hlen_claim : text;
    unsigned char len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (unsigned char)(hlen >> (8 * i));
    fwrite(len, 1, 8, f);
    fwrite(header, 1, text, f);
    for (size_t i = 0; i < n_data; i++) {
        float v = (float)(i / 4);
        unsigned char b[4];
        memcpy(b, &v, 4);
        fputc(b[i % 4], f);
    }
    fclose(f);
}

/* Opens name; 0 when accepted (closed again), else -1 with the message in why. */
static int open_st(const char *name, char *why, size_t len)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    struct st_set s;
    why[0] = '\0';
    int rc = st_open_file(&s, path, why, len);
    if (rc == 0)
        st_close(&s);
    return rc;
}

/* header refused with a message holding want (and the file's name). */
static void refused(const char *what, const char *header, uint64_t hlen, size_t n_data, const char *want)
{
    char why[512];
    write_st("bad.safetensors", header, hlen, n_data);
    int rc = open_st("bad.safetensors", why, sizeof why);
    CHECK(rc == -1);
    CHECK(strstr(why, "bad.safetensors") != NULL);
    if (!strstr(why, want)) {
        check_failures++;
        fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n", what, why, want);
    }
    check_count++;
}

static void accepted(const char *what, const char *header, size_t n_data)
{
    char why[512];
    write_st("good.safetensors", header, UINT64_MAX, n_data);
    int rc = open_st("good.safetensors", why, sizeof why);
    if (rc != 0)
        fprintf(stderr, "%s: refused: %s\n", what, why);
    CHECK(rc == 0);
}

static void test_header_length(void)
{
    char path[512], why[512];
    snprintf(path, sizeof path, "%s/short.safetensors", dir);
    test_write_text(path, "{}");
    CHECK(open_st("short.safetensors", why, sizeof why) == -1);
    CHECK(strstr(why, "shorter than the 8-byte header length") != NULL);
    refused("header over the limit", "{}", 100000001ull, 0, "over the format's limit of 100000000 bytes");
    refused("header past the file", "{}", 64, 0, "header length 64, file 10 bytes");
}

static void test_header_text(void)
{
    refused("not UTF-8", "{\"a\xff\":{}}", UINT64_MAX, 0, "not UTF-8 text (byte 3 of the header)");
    refused("overlong UTF-8", "{\"\xc0\xaf\":{}}", UINT64_MAX, 0, "not UTF-8 text (byte 2");
    refused("UTF-16 surrogate", "{\"\xed\xa0\x80\":{}}", UINT64_MAX, 0, "not UTF-8 text (byte 2");
    refused("not JSON", "{\"a\":", UINT64_MAX, 0, "header is not a JSON object");
    refused("JSON, not an object", "[1, 2]  ", UINT64_MAX, 0, "header is not a JSON object");
    refused("bytes after the object", "{} x", UINT64_MAX, 0, "has bytes after its JSON object (byte 3 of 4)");
    header_bytes = 8;
    refused("NUL after the object", "{}\0\0\0\0\0\0", 8, 0, "has bytes after its JSON object (byte 2 of 8)");
    header_bytes = 0;
    accepted("empty header padded with spaces", "{}      ", 0);
    accepted("UTF-8 tensor name",
             "{\"caf\xc3\xa9\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}", 8);
}

static void test_metadata(void)
{
    refused("metadata value a number", "{\"__metadata__\":{\"format\":\"pt\",\"n\":1}}", UINT64_MAX, 0,
            "__metadata__ key 'n' is not a string");
    refused("metadata not an object", "{\"__metadata__\":[\"pt\"]}", UINT64_MAX, 0,
            "__metadata__ is not an object of strings");
    refused("metadata twice", "{\"__metadata__\":{},\"__metadata__\":{}}", UINT64_MAX, 0,
            "__metadata__ is listed twice");
    accepted("metadata of strings", "{\"__metadata__\":{\"format\":\"pt\"}}", 0);
}

#define T(name, dt, shape, b, e) "\"" name "\":{\"dtype\":\"" dt "\",\"shape\":" shape ",\"data_offsets\":[" b "," e "]}"

static void test_entries(void)
{
    refused("entry not an object", "{\"w\":[1,2]}", UINT64_MAX, 0, "tensor 'w' is not an object");
    refused("unknown dtype", "{" T("w", "I64", "[1]", "0", "8") "}", UINT64_MAX, 8,
            "tensor 'w' has unsupported dtype I64");
    refused("no shape", "{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", UINT64_MAX, 4, "tensor 'w' has no shape");
    refused("fractional dimension", "{" T("w", "F32", "[1.5]", "0", "4") "}", UINT64_MAX, 4,
            "tensor 'w' shape must be a whole number");
    refused("element count overflows", "{" T("w", "F32", "[4294967296,4294967296]", "0", "0") "}", UINT64_MAX, 0,
            "tensor 'w' has a shape whose element count overflows");
    refused("byte count overflows", "{" T("w", "F32", "[4611686018427387904]", "0", "0") "}", UINT64_MAX, 0,
            "tensor 'w' has a shape whose byte count overflows");
    refused("offsets not a pair", "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", UINT64_MAX, 4,
            "tensor 'w' has malformed data_offsets");
    refused("end before begin", "{" T("w", "F32", "[0]", "8", "4") "}", UINT64_MAX, 8,
            "tensor 'w' data_offsets[1] must be a whole number from 8");
    refused("size against shape", "{" T("w", "F32", "[4]", "0", "8") "}", UINT64_MAX, 8,
            "tensor 'w' spans 8 bytes but its shape and dtype need 16");
    refused("past the end", "{" T("w", "F32", "[4]", "0", "16") "}", UINT64_MAX, 8, "tensor 'w' ends at byte");
    refused("name twice", "{" T("w", "F32", "[1]", "0", "4") "," T("w", "F32", "[1]", "4", "8") "}", UINT64_MAX, 8,
            "tensor 'w' is listed twice");
}

static void test_layout(void)
{
    refused("overlap", "{" T("a", "F32", "[2]", "0", "8") "," T("b", "F32", "[2]", "4", "12") "}", UINT64_MAX, 12,
            "tensor 'b' (data bytes 4..12) overlaps tensor 'a' (ending at 8)");
    refused("same range twice", "{" T("a", "F32", "[2]", "0", "8") "," T("b", "F32", "[2]", "0", "8") "}",
            UINT64_MAX, 8, "overlaps tensor 'a'");
    refused("gap", "{" T("a", "F32", "[2]", "0", "8") "," T("b", "F32", "[2]", "12", "20") "}", UINT64_MAX, 20,
            "data bytes 8..12 lie in no tensor (a gap before tensor 'b')");
    refused("first not at 0", "{" T("b", "F32", "[2]", "4", "12") "}", UINT64_MAX, 12,
            "data bytes 0..4 lie in no tensor (a gap before tensor 'b')");
    refused("bytes after the last", "{" T("a", "F32", "[2]", "0", "8") "}", UINT64_MAX, 12,
            "the tensors cover 8 bytes of data but the file holds 12 after its header");
    refused("data but no tensor", "{}", UINT64_MAX, 4, "cover 0 bytes of data but the file holds 4");
    /* empty tensors take no bytes: at any offset the others leave free */
    accepted("empty tensors", "{" T("a", "F32", "[2]", "0", "8") "," T("z", "F32", "[0]", "8", "8") ","
             T("y", "F16", "[3,0]", "8", "8") "," T("b", "BF16", "[2]", "8", "12") "}", 12);
    refused("empty tensor inside another", "{" T("a", "F32", "[2]", "0", "8") "," T("z", "F32", "[0]", "4", "4") "}",
            UINT64_MAX, 8, "tensor 'z' (data bytes 4..4) overlaps tensor 'a' (ending at 8)");
}

/* Keys in any order: the offsets, not the header's order, place the data. */
static void test_key_order(void)
{
    write_st("order.safetensors", "{" T("b", "F32", "[2]", "8", "16") "," T("a", "F32", "[2]", "0", "8") "}", UINT64_MAX,
             16);
    char path[512], why[512];
    snprintf(path, sizeof path, "%s/order.safetensors", dir);
    struct st_set s;
    CHECK(st_open_file(&s, path, why, sizeof why) == 0);
    float *b = st_read_f32(&s, "b", 1, (uint64_t[]){2}, why, sizeof why);
    CHECK(b && b[0] == 2.0f && b[1] == 3.0f);
    free(b);
    st_close(&s);
}

/* st_write's files follow every rule. */
static void test_writer(void)
{
    float a[3] = {1, 2, 3}, b[4] = {4, 5, 6, 7};
    struct st_tensor t[] = {{"a", DTYPE_F32, 1, {3, 0}, a}, {"b", DTYPE_BF16, 2, {2, 2}, b}};
    cJSON *meta = cJSON_CreateObject();
    cJSON_AddStringToObject(meta, "format", "pt");
    char path[512], why[512];
    snprintf(path, sizeof path, "%s/written.safetensors", dir);
    CHECK(st_write(path, t, 2, meta, why, sizeof why) == 0);
    cJSON_Delete(meta);
    CHECK(open_st("written.safetensors", why, sizeof why) == 0);
}

static void write_text_in(const char *sub, const char *name, const char *text)
{
    char path[512];
    snprintf(path, sizeof path, "%s/%s/%s", dir, sub, name);
    test_write_text(path, text);
}

/* Two shards, s1 of the given header ({a} unless both), s2 {b, c}, and the index as given. */
static void shards_of(const char *index, int both, const char *want)
{
    char sub[300], why[512];
    snprintf(sub, sizeof sub, "%s/sharded", dir);
    mkdir(sub, 0755);
    if (both)
        write_st("sharded/s1.safetensors", "{" T("a", "F32", "[2]", "0", "8") "," T("b", "F32", "[1]", "8", "12") "}",
                 UINT64_MAX, 12);
    else
        write_st("sharded/s1.safetensors", "{" T("a", "F32", "[2]", "0", "8") "}", UINT64_MAX, 8);
    write_st("sharded/s2.safetensors", "{" T("b", "F32", "[1]", "0", "4") "," T("c", "F32", "[1]", "4", "8") "}",
             UINT64_MAX, 8);
    write_text_in("sharded", "model.safetensors.index.json", index);
    struct st_set s;
    int rc = st_open(&s, sub, why, sizeof why);
    if (!want) {
        if (rc != 0)
            fprintf(stderr, "index %s refused: %s\n", index, why);
        CHECK(rc == 0);
        if (rc == 0)
            st_close(&s);
        return;
    }
    CHECK(rc == -1);
    if (!strstr(why, want))
        fprintf(stderr, "index %s: message \"%s\" lacks \"%s\"\n", index, why, want);
    CHECK(strstr(why, want) != NULL);
}

static void shards(const char *index, const char *want)
{
    shards_of(index, 0, want);
}

static void test_index(void)
{
    shards("{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\",\"c\":\"s2.safetensors\"}}", NULL);
    shards("{\"weight_map\":{\"a\":\"s2.safetensors\",\"b\":\"s2.safetensors\",\"c\":\"s2.safetensors\"}}",
           "weight_map places tensor 'a' in s2.safetensors, which does not hold it");
    /* c unlisted: read where it lies, as transformers loads a shard whole */
    shards("{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\"}}", NULL);
    shards_of("{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\",\"c\":\"s2.safetensors\"}}", 1,
              "s1.safetensors holds tensor 'b', which");
    shards_of("{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"s2.safetensors\",\"c\":\"s2.safetensors\"}}", 1,
              "places in s2.safetensors");
    shards("{\"weight_map\":{\"a\":\"s1.safetensors\",\"b\":\"../s2.safetensors\"}}", "is not a file name");
}

int main(void)
{
    snprintf(dir, sizeof dir, "/tmp/flashbed-st-rules-%d", (int)getpid());
    mkdir(dir, 0755);
    test_header_length();
    test_header_text();
    test_metadata();
    test_entries();
    test_layout();
    test_key_order();
    test_writer();
    test_index();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    CHECK(system(cmd) == 0);
    return check_report("test_safetensors_rules");
}
