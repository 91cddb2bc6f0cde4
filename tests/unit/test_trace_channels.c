/* Channel sets in traces (issue 33: the input channels TEAL keeps): written
 * and read back exactly, through the file and the builder alike, with and
 * without predicted sets; the header's flag word (a trace without channel
 * sets is written as before: flags 0 or 1); every writer and builder rule
 * (ascending, below d_model, once per layer and before it, only in a trace
 * that has them) refused with its reason; unknown flag bits refused; trace
 * synth's channel sets at the density asked for. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"

#include "common/crc32c.h"
#include "common/model_shape.h"
#include "traces/trace.h"
#include "traces/trace_synth.h"

static char dir[] = "/tmp/flashbed-trace-chan-XXXXXX";
static char err[1024];

/* Deterministic sets: token t layer l keeps channel j when (j*3 + t + l) % m
 * is small, with m varying so sets are empty, sparse, dense and full. */
static uint32_t chan_set(uint32_t t, uint32_t l, uint32_t d_model, uint32_t *ids)
{
    uint32_t n = 0, m = 1 + (t + 2 * l) % 5;
    for (uint32_t j = 0; j < d_model; j++)
        if ((t + l) % 7 != 6 && (j * 3 + t + l) % m < (m + 1) / 2)
            ids[n++] = j;
    return n;
}

static uint32_t neuron_set(uint32_t t, uint32_t l, uint32_t d_ff, uint32_t *ids)
{
    uint32_t n = 0;
    for (uint32_t i = 0; i < d_ff; i++)
        if ((i * 5 + t * 3 + l) % 4 == 0)
            ids[n++] = i;
    return n;
}

/* Writes T tokens through both sinks; returns the total of channel ids. */
static uint64_t record(struct trace_sink *sinks, const struct trace_meta *m, uint32_t T)
{
    uint32_t *a = malloc(m->d_ff * sizeof *a), *c = malloc(m->d_model * sizeof *c);
    uint64_t total = 0;
    for (uint32_t t = 0; t < T; t++) {
        unsigned flags = t == T / 2 ? TRACE_TOKEN_SEQ_START : TRACE_TOKEN_GENERATED;
        for (int k = 0; k < 2; k++)
            CHECK(sinks[k].begin_token(sinks[k].impl, flags, err, sizeof err) == 0);
        for (uint32_t l = 0; l < m->n_layers; l++) {
            uint32_t na = neuron_set(t, l, m->d_ff, a), nc = chan_set(t, l, m->d_model, c);
            total += nc;
            for (int k = 0; k < 2; k++) {
                CHECK(sinks[k].channels(sinks[k].impl, l, c, nc, err, sizeof err) == 0);
                CHECK(sinks[k].layer(sinks[k].impl, l, a, na, a, na, err, sizeof err) == 0);
            }
        }
    }
    free(a);
    free(c);
    return total;
}

/* Every (t, l) channel set of tr is what chan_set made. */
static int wrong_sets(const struct trace *tr)
{
    uint32_t *c = malloc(tr->meta.d_model * sizeof *c);
    int bad = 0;
    for (uint64_t t = 0; t < tr->n_tokens; t++)
        for (uint32_t l = 0; l < tr->meta.n_layers; l++) {
            uint32_t n, want = chan_set((uint32_t)t, l, tr->meta.d_model, c);
            const uint32_t *ids = trace_channels(tr, t, l, &n);
            bad += n != want || (n && memcmp(ids, c, n * sizeof *ids) != 0);
        }
    free(c);
    return bad;
}

static void round_trip(uint32_t L, uint32_t d_model, uint32_t d_ff, uint32_t T, bool pred)
{
    char path[256];
    snprintf(path, sizeof path, "%s/chan.trace", dir);
    struct trace_meta m = {.n_layers = L, .d_model = d_model, .d_ff = d_ff, .dtype = DTYPE_F16, .ffn_kind = FFN_GLU,
                           .has_predicted = pred, .source = "{\"model\":\"chan\"}", .has_channels = true};
    trace_meta_set_units(&m);
    struct trace_writer *w = trace_writer_open(NULL, path, &m, err, sizeof err);
    struct trace_builder *b = trace_builder_new(&m, err, sizeof err);
    CHECK(w && b);
    if (!w || !b)
        return;
    struct trace_sink sinks[2] = {trace_writer_sink(w), trace_builder_sink(b)};
    uint64_t total = record(sinks, &m, T);
    CHECK(trace_writer_close(w, err, sizeof err) == 0);
    struct trace file, mem;
    CHECK(trace_load(path, &file, err, sizeof err) == 0);
    CHECK(trace_builder_finish(b, &mem, err, sizeof err) == 0);
    CHECK(file.meta.has_channels && mem.meta.has_channels && file.meta.has_predicted == pred);
    CHECK_U64(file.version, TRACE_VERSION);
    CHECK_U64(file.chan_off[(uint64_t)T * L], total);
    CHECK_U64(mem.chan_off[(uint64_t)T * L], total);
    CHECK_U64(wrong_sets(&file), 0);
    CHECK_U64(wrong_sets(&mem), 0);
    CHECK(memcmp(file.active_off, mem.active_off, ((uint64_t)T * L + 1) * sizeof *file.active_off) == 0);
    /* the streaming reader hands the same sets out */
    struct trace_reader *r = trace_reader_open(path, err, sizeof err);
    struct trace_token tok;
    uint64_t streamed = 0;
    while (r && trace_reader_next(r, &tok, err, sizeof err) == 1)
        for (uint32_t l = 0; l < L; l++)
            streamed += tok.channels ? tok.n_channels[l] : 1000000;
    CHECK_U64(streamed, total);
    trace_reader_close(r);
    /* the header's flag word: bit 1 for channel sets */
    FILE *f = fopen(path, "rb");
    uint8_t head[36];
    CHECK(f && fread(head, 1, sizeof head, f) == sizeof head);
    if (f)
        fclose(f);
    CHECK_U64(head[32], pred ? 3 : 2);
    trace_free(&file);
    trace_free(&mem);
}

/* A trace without channel sets: flag word as before, no channel arrays. */
static void without_channels(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/plain.trace", dir);
    struct trace_meta m = {.n_layers = 1, .d_model = 8, .d_ff = 16, .dtype = DTYPE_F16, .ffn_kind = FFN_RELU,
                           .has_predicted = true, .source = "{}", .has_channels = false};
    trace_meta_set_units(&m);
    struct trace_writer *w = trace_writer_open(NULL, path, &m, err, sizeof err);
    uint32_t a[] = {1, 2}, c[] = {0};
    CHECK(trace_writer_begin_token(w, 0, err, sizeof err) == 0);
    CHECK(trace_writer_layer_channels(w, 0, c, 1, err, sizeof err) == -1);
    CHECK(strstr(err, "channel set given for a trace without channel sets") != NULL);
    CHECK(trace_writer_layer(w, 0, a, 2, a, 2, err, sizeof err) == 0);
    CHECK(trace_writer_close(w, err, sizeof err) == 0);
    struct trace tr;
    CHECK(trace_load(path, &tr, err, sizeof err) == 0);
    CHECK(!tr.meta.has_channels && tr.chan_off == NULL && tr.chan_ids == NULL);
    uint32_t n = 7;
    CHECK(trace_channels(&tr, 0, 0, &n) == NULL && n == 0);
    trace_free(&tr);
    FILE *f = fopen(path, "rb");
    uint8_t head[36];
    CHECK(f && fread(head, 1, sizeof head, f) == sizeof head);
    if (f)
        fclose(f);
    CHECK_U64(head[32], 1);
    CHECK_U64(head[8], TRACE_VERSION);
    struct trace_sink s = trace_builder_sink(trace_builder_new(&m, err, sizeof err));
    CHECK(s.begin_token(s.impl, 0, err, sizeof err) == 0);
    CHECK(s.channels(s.impl, 0, c, 1, err, sizeof err) == -1);
    CHECK(strstr(err, "without channel sets") != NULL);
    trace_builder_free(s.impl);
}

/* The writer's and the builder's rules, each refused with its reason. */
static void refusals(struct trace_sink s, const char *prefix)
{
    const uint32_t ok[] = {0, 3}, over[] = {2, 8}, unsorted[] = {3, 1}, a[] = {5};
    CHECK(s.begin_token(s.impl, 0, err, sizeof err) == 0);
    CHECK(s.layer(s.impl, 0, a, 1, NULL, 0, err, sizeof err) == -1);
    CHECK(strstr(err, "token 0 layer 0: no channel set") != NULL);
    CHECK(s.channels(s.impl, 1, ok, 2, err, sizeof err) == -1);
    CHECK(strstr(err, "channels of layer 1") != NULL);
    CHECK(s.channels(s.impl, 0, over, 2, err, sizeof err) == -1);
    CHECK(strstr(err, "token 0 layer 0: kept channel 8 >= d_model 8") != NULL);
    CHECK(s.channels(s.impl, 0, unsorted, 2, err, sizeof err) == -1);
    CHECK(strstr(err, "kept channels not strictly ascending (1 after 3)") != NULL);
    CHECK(s.channels(s.impl, 0, NULL, 2, err, sizeof err) == -1);
    CHECK(strstr(err, "given as NULL") != NULL);
    CHECK(s.channels(s.impl, 0, ok, 2, err, sizeof err) == 0);
    CHECK(s.channels(s.impl, 0, ok, 2, err, sizeof err) == -1);
    CHECK(strstr(err, "channel set given twice") != NULL);
    CHECK(s.layer(s.impl, 0, a, 1, NULL, 0, err, sizeof err) == 0);
    CHECK(s.channels(s.impl, 0, ok, 2, err, sizeof err) == -1); /* layer 0 is done: 1 is due */
    CHECK(s.channels(s.impl, 1, NULL, 0, err, sizeof err) == 0); /* an empty set is a set */
    CHECK(s.layer(s.impl, 1, a, 1, NULL, 0, err, sizeof err) == 0);
    CHECK(s.channels(s.impl, 2, ok, 2, err, sizeof err) == -1); /* past the last layer */
    (void)prefix;
}

static void writer_and_builder_refusals(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/refused.trace", dir);
    struct trace_meta m = {.n_layers = 2, .d_model = 8, .d_ff = 16, .dtype = DTYPE_F16, .ffn_kind = FFN_RELU,
                           .has_predicted = false, .source = "{}", .has_channels = true};
    trace_meta_set_units(&m);
    struct trace_writer *w = trace_writer_open(NULL, path, &m, err, sizeof err);
    CHECK(trace_writer_layer_channels(w, 0, NULL, 0, err, sizeof err) == -1);
    CHECK(strstr(err, "before trace_writer_begin_token") != NULL);
    refusals(trace_writer_sink(w), path);
    CHECK(trace_writer_close(w, err, sizeof err) == 0);
    struct trace tr;
    CHECK(trace_load(path, &tr, err, sizeof err) == 0);
    uint32_t n;
    const uint32_t *ids = trace_channels(&tr, 0, 0, &n);
    CHECK(n == 2 && ids[0] == 0 && ids[1] == 3);
    trace_channels(&tr, 0, 1, &n);
    CHECK_U64(n, 0);
    trace_free(&tr);
    struct trace_builder *b = trace_builder_new(&m, err, sizeof err);
    refusals(trace_builder_sink(b), "");
    CHECK(trace_builder_finish(b, &tr, err, sizeof err) == 0);
    ids = trace_channels(&tr, 0, 0, &n);
    CHECK(n == 2 && ids[0] == 0 && ids[1] == 3);
    trace_free(&tr);
}

/* A flag bit nobody defines (bit 2) is refused, as bit 1 is by the readers
 * from before channel sets. */
static void unknown_flags(void)
{
    char path[256];
    snprintf(path, sizeof path, "%s/flags.trace", dir);
    struct trace_meta m = {.n_layers = 1, .d_model = 8, .d_ff = 16, .dtype = DTYPE_F16, .ffn_kind = FFN_RELU,
                           .has_predicted = false, .source = "{}", .has_channels = true};
    trace_meta_set_units(&m);
    struct trace_writer *w = trace_writer_open(NULL, path, &m, err, sizeof err);
    uint32_t c[] = {1};
    CHECK(trace_writer_begin_token(w, 0, err, sizeof err) == 0);
    CHECK(trace_writer_layer_channels(w, 0, c, 1, err, sizeof err) == 0);
    CHECK(trace_writer_layer(w, 0, c, 1, NULL, 0, err, sizeof err) == 0);
    CHECK(trace_writer_close(w, err, sizeof err) == 0);
    FILE *f = fopen(path, "r+b");
    uint8_t b[64];
    size_t n = fread(b, 1, sizeof b, f);
    CHECK(n == sizeof b);
    b[32] = 6;
    uint32_t slen;
    memcpy(&slen, b + 52, 4); /* version 3's fixed header: 56 bytes */
    uint8_t *all = malloc(56 + slen + 4);
    fseek(f, 0, SEEK_SET);
    CHECK(fread(all, 1, 56 + slen, f) == 56 + slen);
    all[32] = 6;
    uint32_t crc = crc32c(all, 56 + slen);
    fseek(f, 0, SEEK_SET);
    fwrite(all, 1, 56 + slen, f);
    fwrite(&crc, 1, 4, f);
    fclose(f);
    free(all);
    struct trace tr;
    CHECK(trace_load(path, &tr, err, sizeof err) == -1);
    CHECK(strstr(err, "unknown header flags 0x6") != NULL);
}

/* trace synth with a channel density: every (token, layer) keeps exactly
 * round(D * d_model) channels, the active density is the level asked for,
 * and the trace has no predicted sets; the same seed gives the same file. */
static void synth_channels(void)
{
    struct model_shape shape = {0};
    snprintf(shape.name, sizeof shape.name, "chan-test");
    shape.n_layers = 3;
    shape.d_model = 40;
    shape.d_ff = 96;
    shape.ffn_kind = FFN_GLU;
    struct synth_params p;
    synth_params_default(&p, &shape);
    p.tokens = 20;
    p.prompts = 2;
    p.channel_density = 0.25;
    p.active_density = 0.5;
    char path[256];
    snprintf(path, sizeof path, "%s/synth.trace", dir);
    CHECK(synth_write(&p, path, err, sizeof err) == 0);
    struct trace tr;
    CHECK(trace_load(path, &tr, err, sizeof err) == 0);
    CHECK(tr.meta.has_channels && !tr.meta.has_predicted);
    int wrong = 0;
    for (uint64_t t = 0; t < tr.n_tokens; t++)
        for (uint32_t l = 0; l < 3; l++) {
            uint32_t nc, na;
            trace_channels(&tr, t, l, &nc);
            trace_set(&tr, 0, t, l, &na);
            wrong += nc != 10 || na != 48;
        }
    CHECK_U64(wrong, 0);
    trace_free(&tr);
}

int main(void)
{
    CHECK(mkdtemp(dir) != NULL);
    round_trip(3, 37, 20, 11, true);  /* d_model not a multiple of 8 */
    round_trip(2, 300, 64, 9, false); /* Rice and bitset records */
    round_trip(1, 1, 1, 4, false);
    without_channels();
    writer_and_builder_refusals();
    unknown_flags();
    synth_channels();
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    CHECK(system(cmd) == 0);
    return check_report("test_trace_channels");
}
