/* The trace header across format versions (traces/trace.h): one committed
 * file of each version reads with exactly the meta expected (version 1's
 * and 2's bytes per weight as a type, their units from the channel flag;
 * version 3's type code and unit fields as written) and the sets its .sets
 * file lists; an older bytes per weight with no type is refused naming the
 * file and the value; version 3's header fields are checked (type code,
 * unit kind, units per layer, the channel flag's pairing), and the writer
 * and the builder refuse a meta the format cannot hold. The unit kinds'
 * file codes are stable. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "common/crc32c.h"
#include "common/model_shape.h"
#include "common/unit_kind.h"
#include "common/wtype.h"
#include "traces/trace.h"

static char err[512];
static char path[300];

struct want {
    const char *file;
    uint32_t version, n_layers, d_model, d_ff;
    enum fb_dtype dtype;
    uint32_t ffn_kind;
    bool predicted, channels;
    enum unit_kind unit;
    uint32_t units;
    uint64_t n_tokens;
};

/* Whether every set a .sets file lists (token, flags, layer, a|p|c, ids)
 * is the loaded trace's, and it lists them all. */
static bool sets_match(const struct trace *tr, const char *sets_path)
{
    FILE *f = fopen(sets_path, "r");
    if (!f)
        return false;
    char *line = NULL;
    size_t cap = 0;
    uint64_t listed = 0, wrong = 0;
    while (getline(&line, &cap, f) > 0) {
        if (line[0] == '#')
            continue;
        char *q = line;
        unsigned long long t = strtoull(q, &q, 10);
        unsigned long flags = strtoul(q, &q, 10), l = strtoul(q, &q, 10);
        while (*q == ' ')
            q++;
        char kind = *q++;
        uint32_t n = 0, j = 0;
        const uint32_t *ids = NULL;
        if (t < tr->n_tokens && l < tr->meta.n_layers)
            ids = kind == 'c' ? trace_channels(tr, t, (uint32_t)l, &n) : trace_set(tr, kind == 'p', t, (uint32_t)l, &n);
        bool same = (ids || n == 0) && t < tr->n_tokens && tr->token_flags[t] == flags;
        for (char *e; same; q = e, j++) {
            unsigned long id = strtoul(q, &e, 10);
            if (e == q)
                break;
            same = j < n && ids[j] == id;
        }
        wrong += !(same && j == n);
        listed++;
    }
    free(line);
    fclose(f);
    uint64_t sets = tr->n_tokens * tr->meta.n_layers;
    uint64_t kinds = 1 + (tr->meta.has_predicted ? 1 : 0) + (tr->meta.has_channels ? 1 : 0);
    return wrong == 0 && listed == sets * kinds;
}

static void reads_as(const struct want *w)
{
    char file[512], sets[512];
    snprintf(file, sizeof file, "%s/%s.trace", TEST_DATA_DIR, w->file);
    snprintf(sets, sizeof sets, "%s/%s.sets", TEST_DATA_DIR, w->file);
    struct trace tr;
    CHECK(trace_load(file, &tr, err, sizeof err) == 0);
    if (tr.n_tokens == 0) {
        fprintf(stderr, "%s: %s\n", file, err);
        return;
    }
    const struct trace_meta *m = &tr.meta;
    CHECK_U64(tr.version, w->version);
    CHECK_U64(m->n_layers, w->n_layers);
    CHECK_U64(m->d_model, w->d_model);
    CHECK_U64(m->d_ff, w->d_ff);
    CHECK_STR(wtype_name(m->dtype), wtype_name(w->dtype));
    CHECK_U64(m->ffn_kind, w->ffn_kind);
    CHECK(m->has_predicted == w->predicted && m->has_channels == w->channels);
    CHECK_STR(unit_kind_name(m->unit_kind), unit_kind_name(w->unit));
    CHECK_U64(m->units, w->units);
    CHECK_U64(tr.n_tokens, w->n_tokens);
    CHECK(sets_match(&tr, sets));
    trace_free(&tr);
}

/* One committed file per version: 1 and 2 (their writers') and 3. */
static void committed_files(void)
{
    static const struct want files[] = {
        {"trace_v1", 1, 2, 64, 256, DTYPE_F16, FFN_RELU, true, false, UNIT_NEURON_BUNDLE, 256, 12},
        {"trace_v2", 2, 2, 16, 40, DTYPE_F32, FFN_GLU, false, true, UNIT_DOWN_ROW, 40, 6},
        {"trace_v3", 3, 2, 16, 48, DTYPE_BF16, FFN_RELU, true, false, UNIT_NEURON_BUNDLE, 48, 5},
    };
    for (size_t i = 0; i < sizeof files / sizeof files[0]; i++)
        reads_as(&files[i]);
}

/* A committed file's bytes with one u32 header field set (the tests run
 * little-endian), its header CRC redone; fixed: the fixed header's bytes. */
static void write_patched(const char *src, size_t at, uint32_t v, size_t fixed)
{
    char file[512];
    snprintf(file, sizeof file, "%s/%s", TEST_DATA_DIR, src);
    FILE *f = fopen(file, "rb");
    uint8_t b[4096];
    size_t n = f ? fread(b, 1, sizeof b, f) : 0;
    if (f)
        fclose(f);
    memcpy(b + at, &v, 4);
    uint32_t slen, crc;
    memcpy(&slen, b + fixed - 4, 4);
    crc = crc32c(b, fixed + slen);
    memcpy(b + fixed + slen, &crc, 4);
    f = fopen(path, "wb");
    CHECK(f && fwrite(b, 1, n, f) == n);
    if (f)
        fclose(f);
}

static void refused(const char *what, const char *want)
{
    struct trace tr;
    int rc = trace_load(path, &tr, err, sizeof err);
    CHECK(rc == -1);
    if (rc == 0)
        trace_free(&tr);
    if (rc == -1 && (!strstr(err, path) || !strstr(err, want))) {
        fprintf(stderr, "%s: \"%s\" lacks \"%s\" or the file\n", what, err, want);
        check_failures++;
    }
}

/* Version 2's bytes per weight (field at 24): 2 reads as f16, others are refused. */
static void older_weight_sizes(void)
{
    struct trace tr;
    write_patched("trace_v2.trace", 24, 2, 48);
    CHECK(trace_load(path, &tr, err, sizeof err) == 0);
    CHECK(tr.n_tokens && tr.meta.dtype == DTYPE_F16 && tr.meta.unit_kind == UNIT_DOWN_ROW);
    if (tr.n_tokens)
        trace_free(&tr);
    write_patched("trace_v2.trace", 24, 1, 48);
    refused("1 byte per weight", "1 bytes per weight in a version 2 header: only 4 (f32) and 2 (f16)");
    write_patched("trace_v2.trace", 24, 3, 48);
    refused("3 bytes per weight", "3 bytes per weight in a version 2 header");
}

/* Version 3's fields: type code at 24, flags at 32, unit kind at 36, units at 40. */
static void version_3_fields(void)
{
    write_patched("trace_v3.trace", 24, 20, 56); /* ggml's IQ4_NL: no row of the table */
    refused("type code 20", "unknown weight type code 20 in header");
    write_patched("trace_v3.trace", 36, 9, 56);
    refused("unit kind 9", "unknown unit kind code 9 in header");
    write_patched("trace_v3.trace", 40, 47, 56);
    refused("units 47", "47 units per layer of kind \"neuron bundle\": a trace records d_ff (48)");
    write_patched("trace_v3.trace", 36, unit_kind_code(UNIT_EXPERT), 56);
    refused("expert", "unit kind \"expert\" in a trace without channel sets (it records \"neuron bundle\")");
    write_patched("trace_v3.trace", 32, 3, 56); /* channel sets flagged beside neuron bundles */
    refused("channels with neuron bundles", "unit kind \"neuron bundle\" in a trace with channel sets");
}

/* The writer and the builder take only a meta the format holds. */
static void writer_and_builder(void)
{
    struct trace_meta m = {.n_layers = 1, .d_model = 8, .d_ff = 16, .dtype = DTYPE_F16, .source = "{}"};
    trace_meta_set_units(&m);
    CHECK(m.unit_kind == UNIT_NEURON_BUNDLE && m.units == 16);
    m.has_channels = true;
    CHECK(trace_writer_open(NULL, path, &m, err, sizeof err) == NULL);
    CHECK(strstr(err, "unit kind \"neuron bundle\" in a trace with channel sets") != NULL);
    trace_meta_set_units(&m);
    CHECK(m.unit_kind == UNIT_DOWN_ROW && m.units == 16);
    m.units = 8;
    CHECK(trace_builder_new(&m, err, sizeof err) == NULL);
    CHECK(strstr(err, "8 units per layer") != NULL);
    m.units = 16;
    m.dtype = (enum fb_dtype)DTYPE_COUNT;
    CHECK(trace_writer_open(NULL, path, &m, err, sizeof err) == NULL);
    CHECK(strstr(err, "not in the table") != NULL);
}

/* The kinds' file codes never change once written. */
static void unit_kind_codes(void)
{
    static const struct {
        enum unit_kind kind;
        uint32_t code;
        const char *name;
    } rows[] = {{UNIT_NEURON_BUNDLE, 0, "neuron bundle"},
                {UNIT_CHANNEL_BUNDLE, 1, "channel bundle"},
                {UNIT_DOWN_ROW, 2, "row of down"},
                {UNIT_EXPERT, 3, "expert"}};
    CHECK_U64(UNIT_KIND_COUNT, 4);
    for (size_t i = 0; i < 4; i++) {
        enum unit_kind k;
        CHECK_U64(unit_kind_code(rows[i].kind), rows[i].code);
        CHECK_STR(unit_kind_name(rows[i].kind), rows[i].name);
        CHECK(unit_kind_from_code(rows[i].code, &k) == 0 && k == rows[i].kind);
    }
    enum unit_kind k;
    CHECK(unit_kind_from_code(4, &k) == -1);
    CHECK_STR(unit_kind_name((enum unit_kind)UNIT_KIND_COUNT), "?");
}

int main(void)
{
    snprintf(path, sizeof path, "/tmp/flashbed-trace-versions-%d.trace", (int)getpid());
    committed_files();
    older_weight_sizes();
    version_3_fields();
    writer_and_builder();
    unit_kind_codes();
    unlink(path);
    return check_report("test_trace_versions");
}
