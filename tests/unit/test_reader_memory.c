/* Every reader's allocation bounded by its input's size: small crafted
 * files whose headers claim huge counts (a trace of 2^40 tokens or a 1 MiB
 * source description, a safetensors tensor of 2^34 bytes or a 99 MB
 * header, a tokenizer.bin of 2^24 tokens, a llama2.c checkpoint of the
 * largest shape, a model.json whose dram.bin is 1 TiB) are refused with
 * the format's own message, and GGUF files claiming 2^40 keys, tensors,
 * string bytes or array elements, under an address-space limit of 256 MiB over
 * what the test had when it started: a reader that allocated first would
 * fail with "out of memory" instead, or abort. A trace that is valid and
 * claims the largest neuron count (16 x 2^22) is read and summarised
 * within the limit. Sanitizer builds reserve terabytes of shadow memory,
 * so there the limit is left out and only the messages are checked. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "check.h"
#include "model_fixture.h"
#include "engine/import/import.h"
#include "common/gguf.h"
#include "engine/import/safetensors.h"
#include "engine/tokenizer/tokenizer.h"
#include "traces/trace.h"
#include "traces/trace_stats.h"

#if defined(__SANITIZE_ADDRESS__)
#define UNDER_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define UNDER_SANITIZER 1
#endif
#endif

static char dir[300];

static void write_bytes(const char *name, const void *p, size_t n)
{
    char path[400];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    CHECK(f && fwrite(p, 1, n, f) == n);
    if (f)
        fclose(f);
}

static void path_of(const char *name, char *path, size_t len)
{
    snprintf(path, len, "%s/%s", dir, name);
}

static void expect(const char *what, int rc, const char *why, const char *want)
{
    CHECK(rc != 0);
    if (!strstr(why, want)) {
        check_failures++;
        fprintf(stderr, "%s: message \"%s\" lacks \"%s\"\n", what, why, want);
    }
    check_count++;
}

#ifndef UNDER_SANITIZER
/* The address space the process has now, in bytes (VmSize). */
static uint64_t vm_size(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    unsigned long long kb = 0;
    while (f && fgets(line, sizeof line, f))
        if (sscanf(line, "VmSize: %llu kB", &kb) == 1)
            break;
    if (f)
        fclose(f);
    return (uint64_t)kb << 10;
}
#endif

static void limit_memory(void)
{
#ifndef UNDER_SANITIZER
    uint64_t cap = vm_size() + (256ull << 20);
    struct rlimit r = {cap, cap};
    CHECK(setrlimit(RLIMIT_AS, &r) == 0);
    printf("address space limited to %llu MiB\n", (unsigned long long)(cap >> 20));
#else
    printf("sanitizer build: no address-space limit, messages only\n");
#endif
}

static void put_u32(unsigned char *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

static void put_u64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> (8 * i));
}

/* A version 1 trace header (16 layers, d_ff 2^22: the most neurons a
 * header may claim), source "{}" unless slen says more; returns its length. */
static size_t trace_header(unsigned char *p, uint64_t n_tokens, uint32_t slen)
{
    memcpy(p, "FBTRACE", 8);
    uint32_t f[7] = {1, 16, 64, 1u << 22, 4, 0, 0};
    for (int i = 0; i < 7; i++)
        put_u32(p + 8 + 4 * i, f[i]);
    put_u64(p + 36, n_tokens);
    put_u32(p + 44, slen);
    memcpy(p + 48, "{}", 2);
    return 50;
}

static size_t trace_footer(unsigned char *p, uint64_t n_tokens)
{
    memcpy(p, "FBTREND", 8);
    put_u64(p + 8, n_tokens);
    put_u64(p + 16, 0);
    put_u64(p + 24, 0);
    return 32;
}

static void test_traces(void)
{
    unsigned char b[256];
    char path[400], why[512];
    struct trace tr;
    size_t n = trace_header(b, 1ull << 40, 2);
    n += trace_footer(b + n, 0);
    write_bytes("many.tr", b, n);
    path_of("many.tr", path, sizeof path);
    expect("trace of 2^40 tokens", trace_load(path, &tr, why, sizeof why), why,
           "header says 1099511627776 tokens but the file has only 82 bytes");
    n = trace_header(b, 0, 1u << 20);
    write_bytes("source.tr", b, n);
    path_of("source.tr", path, sizeof path);
    expect("1 MiB source", trace_load(path, &tr, why, sizeof why), why,
           "truncated header (a source description of 1048576 bytes, 2 bytes left in the file)");
    /* one token, every layer's set empty (Rice, count 0, k 0, 0 bytes) */
    n = trace_header(b, 1, 2);
    b[n++] = 0xa7;
    b[n++] = 0;
    for (int l = 0; l < 16; l++, n += 4)
        memcpy(b + n, "\x01\x00\x00\x00", 4);
    n += trace_footer(b + n, 1);
    write_bytes("one.tr", b, n);
    path_of("one.tr", path, sizeof path);
    int rc = trace_load(path, &tr, why, sizeof why);
    if (rc)
        fprintf(stderr, "one.tr: %s\n", why);
    CHECK(rc == 0);
    struct trace_stats s;
    CHECK(rc == 0 && trace_stats_compute(&tr, &s) == 0);
    if (rc == 0) {
        CHECK_U64(tr.n_tokens, 1);
        trace_stats_free(&s);
        trace_free(&tr);
    }
}

/* A safetensors file: its header text, then data bytes of zeros. */
static void write_st(const char *name, const char *header, uint64_t hlen, size_t data)
{
    unsigned char b[512] = {0};
    size_t t = strlen(header);
    put_u64(b, hlen ? hlen : t);
    memcpy(b + 8, header, t);
    write_bytes(name, b, 8 + t + data);
}

static void test_safetensors(void)
{
    char path[400], why[512];
    struct st_set s;
    write_st("huge.safetensors", "{\"w\":{\"dtype\":\"F32\",\"shape\":[65536,65536],\"data_offsets\":[0,17179869184]}}",
             0, 16);
    path_of("huge.safetensors", path, sizeof path);
    expect("tensor of 2^34 bytes", st_open_file(&s, path, why, sizeof why), why,
           "tensor 'w' ends at byte 82 + 17179869184, past the end of the file (98 bytes)");
    write_st("longhdr.safetensors", "{}", 99999999, 0);
    path_of("longhdr.safetensors", path, sizeof path);
    expect("header of 99999999 bytes", st_open_file(&s, path, why, sizeof why), why,
           "header length 99999999, file 10 bytes");
}

/* A GGUF header (version 3) with its counts, then `key` with a value type
 * and the 8-byte number that follows it (a string's length, or an
 * array's element type 4 and length): 64 bytes in all. */
static void write_gguf(const char *name, uint64_t n_tensors, uint64_t n_kv, uint32_t type, uint64_t n)
{
    unsigned char b[64] = {'G', 'G', 'U', 'F', 3};
    put_u64(b + 8, n_tensors);
    put_u64(b + 16, n_kv);
    put_u64(b + 24, 1);
    b[32] = 'k';
    put_u32(b + 33, type);
    if (type == 9) { /* an array of uint32 */
        put_u32(b + 37, 4);
        put_u64(b + 41, n);
    } else
        put_u64(b + 37, n);
    write_bytes(name, b, sizeof b);
}

static void test_gguf(void)
{
    char path[400], why[512];
    struct gguf_file f;
    path_of("m.gguf", path, sizeof path);
    write_gguf("m.gguf", 0, 1ull << 40, 8, 1);
    expect("GGUF of 2^40 keys", gguf_open(&f, path, why, sizeof why), why, "claims 1099511627776 keys");
    write_gguf("m.gguf", 1ull << 40, 1, 8, 1);
    expect("GGUF of 2^40 tensors", gguf_open(&f, path, why, sizeof why), why, "claims 1099511627776 tensors");
    write_gguf("m.gguf", 0, 1, 8, 1ull << 40);
    expect("GGUF string of 2^40 bytes", gguf_open(&f, path, why, sizeof why), why,
           "a string of 1099511627776 bytes needs");
    write_gguf("m.gguf", 0, 1, 9, 1ull << 40);
    expect("GGUF array of 2^40 elements", gguf_open(&f, path, why, sizeof why), why,
           "array of 1099511627776 uint32 elements, more than");
}

static void test_tokenizer_bin(void)
{
    unsigned char b[12] = {1, 0, 0, 0};
    char path[400], why[512];
    write_bytes("tokenizer.bin", b, sizeof b);
    path_of("tokenizer.bin", path, sizeof path);
    struct tokenizer t;
    expect("tokenizer.bin of 2^24 tokens", tokenizer_load_llama2c(&t, path, 1 << 24, why, sizeof why), why,
           "12 bytes cannot hold the model's 16777216 tokens");
}

static void test_llama2c(void)
{
    /* dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, seq_len */
    int32_t h[7] = {1 << 16, 1 << 20, 4096, 64, 64, 1 << 22, 1 << 22};
    unsigned char b[28 + 4 * 8 + 16] = {0};
    for (int i = 0; i < 7; i++)
        put_u32(b + 4 * i, (uint32_t)h[i]);
    put_u32(b + 28, 1); /* a tokenizer.bin beside it: max length 1, then 4 bytes */
    write_bytes("model.bin", b, 28);
    write_bytes("tok.bin", b + 28, 8);
    char ckpt[400], tok[400], out[400], why[512];
    path_of("model.bin", ckpt, sizeof ckpt);
    path_of("tok.bin", tok, sizeof tok);
    path_of("l2c-out", out, sizeof out);
    expect("llama2.c checkpoint of the largest shape", import_llama2c(ckpt, tok, out, DTYPE_F32, NULL, why, sizeof why), why,
           "truncated: tensor 'token_embedding' needs bytes 28..");
}

/* opt-tiny's model.json claiming a dram.bin of 1 TiB. */
static void test_model_json(const char *model)
{
    char path[700], why[512];
    snprintf(path, sizeof path, "%s/model.json", model);
    FILE *f = fopen(path, "rb");
    static char text[1 << 20];
    size_t n = f ? fread(text, 1, sizeof text - 1, f) : 0;
    if (f)
        fclose(f);
    text[n] = '\0';
    cJSON *o = cJSON_Parse(text);
    cJSON *dram = cJSON_GetObjectItemCaseSensitive(o, "dram");
    CHECK(dram != NULL);
    cJSON_ReplaceItemInObjectCaseSensitive(dram, "bytes", cJSON_CreateNumber(1099511627776.0));
    char *edited = cJSON_Print(o);
    f = fopen(path, "wb");
    CHECK(f && edited && fputs(edited, f) >= 0);
    if (f)
        fclose(f);
    free(edited);
    cJSON_Delete(o);
    struct model m;
    expect("dram.bin of 1 TiB", model_open(&m, model, why, sizeof why), why, "model.json says 1099511627776");
}

int main(void)
{
    char tmp[] = "/tmp/flashbed-reader-mem-XXXXXX", model[600], why[512];
    struct model_shape shape;
    /* the model is made before the limit: making it is not what is tested */
    int made = fixture_opt_tiny(tmp, model, sizeof model, 3, 0.2, &shape, why, sizeof why);
    if (made)
        fprintf(stderr, "fixture: %s\n", why);
    CHECK(made == 0);
    snprintf(dir, sizeof dir, "%s", tmp);
    limit_memory();
    test_traces();
    test_safetensors();
    test_gguf();
    test_tokenizer_bin();
    test_llama2c();
    if (made == 0)
        test_model_json(model);
    fixture_remove(tmp);
    return check_report("test_reader_memory");
}
