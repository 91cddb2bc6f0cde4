/* A flash run (engine/run/run_exec.h over the flash FFN) reading through
 * the fault engine (io/engine_fault.c), on a small synthetic OPT under
 * --mode all with the oracle, one reader thread:
 *   - eio@X and short@X (X a byte the first token reads): the run
 *     completes with dense's tokens, 1 retry counted, 1 fault injected, and
 *     exactly the bytes a run without faults reads;
 *   - eio@X/2: the run stops at the first token, which keeps its row; the
 *     error names ffn.bin, offset X, the layer and neuron X falls in; the
 *     bytes counted are those of the reads that completed (fewer than the
 *     clean run's first token); no row of that step, and so not X's
 *     neuron, is held in its layer's neuron cache;
 *   - eio:1: the first read fails twice, nothing is counted as read and
 *     every neuron cache is empty;
 *   - driven by a trace, with read-ahead: layer 1's reads, gone ahead
 *     while layer 0 computed, fail twice: layer 0 keeps the rows it read,
 *     layer 1 holds none; once only, the run completes with the clean
 *     run's bytes. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "model_fixture.h"
#include "engine/ffn/ffn_flash.h"
#include "engine/ffn/ffn_flash_impl.h"
#include "engine/forward/engine.h"
#include "engine/run/run_exec.h"
#include "engine/run/run_setup.h"
#include "io/io_fault.h"
#include "trace_file_fixture.h"

enum { N_PROMPT = 4, N_GEN = 6, MAX_SEQ = N_PROMPT + N_GEN, N_ROWS = MAX_SEQ - 1 };

struct outcome {
    struct run_outcome out;
    struct io_fault_counts faults;
    double retries, bytes;
    bool cache_empty;          /* every layer's neuron cache holds no row */
    uint32_t held[2];          /* rows layers 0 and 1 hold */
    double ahead;              /* layers whose reads went ahead */
    int32_t row_of_failed;     /* the failed neuron's row in its layer's cache (-1: none) */
    uint64_t layer, neuron;    /* where the failed offset falls */
};

/* The offset in "... at offset N of ..."; UINT64_MAX when none. */
static uint64_t failed_offset(const char *err)
{
    const char *at = strstr(err, "at offset ");
    unsigned long long off;
    return at && sscanf(at, "at offset %llu", &off) == 1 ? off : UINT64_MAX;
}

/* What the flash FFN's caches hold after the run. */
static void look_at_caches(struct engine *e, const struct model *m, struct outcome *r)
{
    const struct flash_ffn *ff = e->ffn.priv;
    r->cache_empty = true;
    for (uint32_t l = 0; l < m->shape.n_layers; l++)
        r->cache_empty &= ff->s.caches[l].num_used == 0;
    for (uint32_t l = 0; l < 2 && l < m->shape.n_layers; l++)
        r->held[l] = ff->s.caches[l].num_used;
    r->row_of_failed = -1;
    uint64_t off = failed_offset(r->out.error);
    if (off == UINT64_MAX)
        return;
    uint64_t bundle = off / m->bundle_stride;
    r->layer = bundle / m->shape.d_ff;
    r->neuron = bundle % m->shape.d_ff;
    const struct neuron_cache *c = &ff->s.caches[r->layer];
    r->row_of_failed = c->capacity ? c->row_of[r->neuron] : -1;
}

/* The prompt and N_GEN tokens with io_engine (and rules, with fault) into r. */
static const char *active = "oracle"; /* the source the runs use */

static void run_with(const struct model *m, const int *prompt, const char *engine, const char *rules, struct outcome *r)
{
    const struct fb_settings set = fb_settings_defaults();
    static struct io_fault fault;
    struct io_fault_spec spec;
    char err[2048];
    CHECK(io_fault_parse(rules, 1, &spec, err, sizeof err) == 0);
    io_fault_init(&fault, &spec);
    struct run_options o = {.cmd = "run", .mode = "all", .window = 5, .active = active, .use = "auto",
                            .read_ahead = true, .io_engine = engine, .fault = strcmp(engine, "fault") ? NULL : &fault,
                            .io_threads = 1, .iodepth = 1, .direct = false, .settings = &set};
    struct run_setup p;
    memset(&p, 0, sizeof p);
    memset(r, 0, sizeof *r);
    CHECK(run_setup_plan(&o, m, &p, err, sizeof err) == 0);
    run_setup_sizes(&p, m, MAX_SEQ);
    CHECK(run_setup_fit(&o, m, &p, N_ROWS, err, sizeof err) == 0);
    struct engine e;
    CHECK(run_engine_init(&e, &set, m, &backend_cpu, &p, 1, MAX_SEQ, err, sizeof err) == 0);
    struct decode_config d = {.prompt = prompt, .n_prompt = N_PROMPT, .n = N_GEN, .ignore_eos = true};
    struct run_exec_config c = {.decode = d};
    CHECK(run_exec(&e, &c, &r->out, err, sizeof err) == 0);
    for (int i = 0; i < r->out.n_rows; i++) {
        r->retries += r->out.rows[i].read_retries;
        r->bytes += r->out.rows[i].bytes_read;
        r->ahead += r->out.rows[i].layers_ahead;
    }
    io_fault_counts(&fault, &r->faults);
    look_at_caches(&e, m, r);
    engine_free(&e);
    run_setup_free(&p);
}

static bool same_tokens(const struct outcome *a, const struct outcome *b)
{
    if (a->out.n_rows != b->out.n_rows)
        return false;
    for (int i = 0; i < a->out.n_rows; i++)
        if (a->out.rows[i].id != b->out.rows[i].id)
            return false;
    return true;
}

static void test_transient(const struct model *m, const int *prompt, const struct outcome *clean, uint64_t x)
{
    char rules[64];
    const char *kinds[] = {"eio", "short"};
    for (int k = 0; k < 2; k++) {
        struct outcome r;
        snprintf(rules, sizeof rules, "%s@%" PRIu64, kinds[k], x);
        run_with(m, prompt, "fault", rules, &r);
        CHECK_STR(r.out.error, "");
        CHECK_STR(r.out.stop, "length");
        CHECK(same_tokens(&r, clean));
        CHECK(r.retries == 1 && r.bytes == clean->bytes);
        CHECK_U64(r.faults.injected[k == 0 ? IO_FAULT_EIO : IO_FAULT_SHORT], 1);
        CHECK_U64(r.faults.injected[k == 0 ? IO_FAULT_SHORT : IO_FAULT_EIO], 0);
        free(r.out.rows);
    }
}

static void test_persistent(const struct model *m, const int *prompt, const struct outcome *clean, uint64_t x)
{
    char rules[64];
    struct outcome r;
    snprintf(rules, sizeof rules, "eio@%" PRIu64 "/2", x);
    run_with(m, prompt, "fault", rules, &r);
    CHECK_STR(r.out.stop, "error");
    CHECK_U64(r.out.n_rows, 1); /* the failed token's row is kept */
    CHECK(failed_offset(r.out.error) == x);
    char where[96];
    snprintf(where, sizeof where, "(layer %" PRIu64 ", neuron %" PRIu64 ")", r.layer, r.neuron);
    CHECK(strstr(r.out.error, "ffn.bin") && strstr(r.out.error, "tried 2 times") && strstr(r.out.error, where));
    CHECK(r.retries == 1 && r.faults.injected[IO_FAULT_EIO] == 2);
    CHECK(r.bytes < clean->out.rows[0].bytes_read);
    CHECK(r.row_of_failed < 0); /* the failed neuron is not resident */
    free(r.out.rows);

    run_with(m, prompt, "fault", "eio:1", &r);
    CHECK_U64(r.out.n_rows, 1);
    CHECK(r.bytes == 0 && r.retries == 1 && r.faults.attempts == 2);
    CHECK(r.cache_empty && r.row_of_failed < 0);
    CHECK(strstr(r.out.error, "(layer 0, neuron ") != NULL);
    free(r.out.rows);
}

/* Token 0 of the mod-16 trace needs in layer 1 the neurons i with
 * (3i + 7) mod 16 < 3: 3, 9, 14, ...; X is neuron 3's first byte. */
static void test_read_ahead(const struct model *m, const int *prompt, const char *dir)
{
    char path[700], source[720], rules[64];
    snprintf(path, sizeof path, "%s/mod16.trace", dir);
    snprintf(source, sizeof source, "trace:%s", path);
    CHECK(write_mod16_trace(path, m, N_ROWS + 1) == 0);
    active = source;
    struct outcome clean, r;
    run_with(m, prompt, "psync", NULL, &clean);
    CHECK_STR(clean.out.error, "");
    CHECK(clean.ahead > 0); /* the reads went ahead: finish_ahead is what is tested */
    uint64_t x = ((uint64_t)m->shape.d_ff + 3) * m->bundle_stride;
    snprintf(rules, sizeof rules, "eio@%" PRIu64 "/2", x);
    run_with(m, prompt, "fault", rules, &r);
    CHECK_U64(r.out.n_rows, 1);
    CHECK(r.layer == 1 && r.neuron == 3 && strstr(r.out.error, "(layer 1, neuron 3)") != NULL);
    CHECK(r.out.rows[0].layers_ahead >= 1);
    uint32_t layer0 = 0; /* token 0's set in layer 0, which the window keeps whole */
    for (uint32_t i = 0; i < m->shape.d_ff; i++)
        layer0 += (3 * i) % 16 < 3;
    CHECK_U64(r.held[0], layer0);               /* layer 0's reads completed: its rows stay */
    CHECK_U64(r.held[1], 0);                    /* layer 1's did not: none of its rows is resident */
    CHECK(r.row_of_failed < 0);
    free(r.out.rows);
    snprintf(rules, sizeof rules, "eio@%" PRIu64, x);
    run_with(m, prompt, "fault", rules, &r);
    CHECK_STR(r.out.error, "");
    CHECK(r.retries == 1 && r.bytes == clean.bytes && same_tokens(&r, &clean));
    free(r.out.rows);
    free(clean.out.rows);
    active = "oracle";
}

int main(void)
{
    char tmp[] = "/tmp/flashbed-test-fault-run-XXXXXX";
    char err[512], dir[600];
    struct model dense, flash;
    CHECK(fixture_dense_and_flash(tmp, dir, sizeof dir, &dense, &flash, err, sizeof err) == 0);
    int prompt[N_PROMPT] = {dense.bos_id, 300, 421, 77};
    struct outcome clean, first;
    run_with(&flash, prompt, "psync", NULL, &clean);
    CHECK_STR(clean.out.error, "");
    CHECK_U64(clean.out.n_rows, N_ROWS);
    CHECK(clean.retries == 0 && !clean.cache_empty);
    /* X: the byte the first read of the run starts at (eio:1 fails there) */
    run_with(&flash, prompt, "fault", "eio:1", &first);
    uint64_t x = failed_offset(first.out.error);
    CHECK(x != UINT64_MAX);
    free(first.out.rows);
    test_transient(&flash, prompt, &clean, x);
    test_persistent(&flash, prompt, &clean, x);
    test_read_ahead(&flash, prompt, tmp);
    free(clean.out.rows);
    model_close(&dense);
    model_close(&flash);
    CHECK(fixture_remove(tmp) == 0);
    return check_report("test_fault_run");
}
