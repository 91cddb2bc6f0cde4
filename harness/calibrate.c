#include "harness/calibrate.h"

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/crc32c.h"
#include "common/errbuf.h"
#include "common/rng.h"
#include "engine/compute/cpu_kernels.h"
#include "engine/model/dtype.h"
#include "io/io_buffer.h"
#include "sim/flash_model.h"

double measure_row_copy(size_t row_bytes, double seconds, double *ns_per_row)
{
    /* 512 MiB of rows: well past any last-level cache; on huge pages, as
     * the neuron cache's rows are (engine/ffn/neuron_cache.c): with 4 KiB pages
     * each random row also costs TLB misses the engine does not pay */
    size_t n_rows = ((size_t)512 << 20) / row_bytes;
    if (n_rows < 64)
        n_rows = 64;
    struct io_buffer mem;
    if (io_buffer_alloc(&mem, n_rows * row_bytes, true) != 0)
        return 0;
    char *buf = mem.base; /* touched by io_buffer_alloc: no page fault lands in the timing */
    struct rng r;
    rng_seed(&r, 42);
    uint64_t copies = 0, t0 = now_ns(), deadline = t0 + (uint64_t)(seconds * 1e9), t = t0;
    while (t < deadline) {
        for (int i = 0; i < 64; i++) {
            size_t dst = (size_t)rng_below(&r, n_rows), src = (size_t)rng_below(&r, n_rows);
            if (dst != src)
                memcpy(buf + dst * row_bytes, buf + src * row_bytes, row_bytes);
        }
        copies += 64;
        t = now_ns();
    }
    /* Keep the copies observable so they are not optimised away. */
    volatile char sink = buf[rng_below(&r, n_rows * row_bytes)];
    (void)sink;
    io_buffer_free(&mem);
    double secs = (double)(t - t0) * 1e-9;
    if (ns_per_row)
        *ns_per_row = secs * 1e9 / (double)copies;
    return (double)copies * (double)row_bytes / secs;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* One timing: CRCs of buf for about `seconds` (at least 16); bytes/s. */
/* Bundles of `bytes` checked three side by side (crc32c_x3, as run
 * --verify does) along a region of `total` bytes, larger than the caches:
 * a bundle read with direct I/O lands in DRAM, not in the CPU's caches. */
static double crc_pass(const uint8_t *buf, size_t bytes, size_t total, double seconds, uint32_t *sink)
{
    uint64_t n = 0, t0 = now_ns(), t = t0, deadline = t0 + (uint64_t)(seconds * 1e9);
    size_t off = 0;
    uint32_t out[3];
    while (t < deadline || n < 48) {
        for (int i = 0; i < 16; i++) {
            if (off + 3 * bytes > total)
                off = 0;
            const void *const three[3] = {buf + off, buf + off + bytes, buf + off + 2 * bytes};
            crc32c_x3(three, bytes, out);
            *sink ^= out[0] ^ out[1] ^ out[2];
            off += 3 * bytes;
        }
        n += 48;
        t = now_ns();
    }
    return (double)n * (double)bytes / ((double)(t - t0) * 1e-9);
}

double measure_crc_rate(size_t bytes, int repeats, double seconds)
{
    size_t total = (size_t)256 << 20; /* past any last-level cache */
    if (total < 3 * bytes)
        total = 3 * bytes;
    uint8_t *buf = malloc(total);
    double *rate = calloc((size_t)(repeats > 0 ? repeats : 1), sizeof *rate);
    double median = 0;
    if (buf && rate && bytes && repeats > 0) {
        for (size_t i = 0; i < total; i++)
            buf[i] = (uint8_t)(i * 131 + 7);
        uint32_t sink = 0;
        crc_pass(buf, bytes, total, seconds / 4, &sink); /* warm: the pages touched, the clock up */
        for (int r = 0; r < repeats; r++)
            rate[r] = crc_pass(buf, bytes, total, seconds, &sink);
        qsort(rate, (size_t)repeats, sizeof *rate, cmp_double);
        median = repeats % 2 ? rate[repeats / 2] : (rate[repeats / 2 - 1] + rate[repeats / 2]) / 2;
        volatile uint32_t keep = sink; /* the CRCs observable: not optimised away */
        (void)keep;
    }
    free(buf);
    free(rate);
    return median;
}

void calibrate_measure_crc(struct hw_profile *hw, bool quick)
{
    int repeats = quick ? 5 : 9;
    hw->crc_buffer_bytes = CALIBRATE_CRC_BYTES;
    hw->crc_bw = measure_crc_rate(CALIBRATE_CRC_BYTES, repeats, quick ? 0.02 : 0.05);
    snprintf(hw->crc_source, sizeof hw->crc_source,
             "measured: CRC-32C (common/crc32c.c) of %d-byte bundles three side by side (crc32c_x3, as run "
             "--verify checks them) along 256 MiB (from DRAM, as bundles land), one thread, the median of %d "
             "timings: what run --verify pays per byte of a bundle read whole",
             CALIBRATE_CRC_BYTES, repeats);
}

double measure_matvec(const struct fb_settings *set, size_t rows, size_t cols, enum fb_dtype t, unsigned threads,
                      double seconds, double *flops, char *err, size_t errlen)
{
    size_t row_bytes = wtype_row_bytes(t, cols), bytes = rows * row_bytes;
    /* copies of the matrix, 512 MiB in all, taken in turn: decode streams
     * each weight once per token, so no pass may find the last one's in
     * the last-level cache (on this VM's 32 MiB L3 one 64 MiB matrix timed
     * the same within the noise, 2026-11-23; caches of hundreds of MiB
     * exist); on huge pages, as the engine loads dram.bin
     * (engine/model/model_load.c) */
    size_t copies = ((size_t)512 << 20) / bytes + 1;
    struct io_buffer wmem = {0};
    char *w = io_buffer_alloc(&wmem, copies * bytes, true) == 0 ? wmem.base : NULL;
    float *x = malloc(cols * sizeof *x), *y = malloc(rows * sizeof *y), *ones = malloc(cols * sizeof *ones);
    struct cpu_kernels *be = NULL;
    double rate = 0;
    if (!w || !x || !y || !ones) {
        err_set(err, errlen, "out of memory for a %zu x %zu matrix", rows, cols);
        goto out;
    }
    for (size_t i = 0; i < cols; i++) {
        x[i] = 1.0f / (float)(i + 1);
        ones[i] = 1.0f;
    }
    for (size_t r = 0; r < rows * copies; r++)
        dtype_from_f32(w + r * row_bytes, t, ones, cols);
    /* the engine's own kernel (engine/compute/cpu_kernels.c), on its own thread team */
    be = ck_create(set, threads < 1 ? 1 : (int)threads, rows > cols ? rows : cols, 1, 1, err, errlen);
    if (!be)
        goto out;
    ck_matvec(be, y, w, t, x, NULL, (int)rows, (int)cols); /* warm: page faults, thread start */
    uint64_t passes = 0, t0 = now_ns(), now = t0;
    while (now - t0 < (uint64_t)(seconds * 1e9) || passes < 2) {
        ck_matvec(be, y, w + (passes % copies) * bytes, t, x, NULL, (int)rows, (int)cols);
        passes++;
        now = now_ns();
    }
    double secs = (double)(now - t0) * 1e-9;
    if (flops)
        *flops = 2.0 * (double)rows * (double)cols * (double)passes / secs;
    rate = (double)bytes * (double)passes / secs;
out:
    if (be)
        ck_destroy(be);
    if (w)
        io_buffer_free(&wmem);
    free(x);
    free(y);
    free(ones);
    return rate;
}

void calibrate_fit_flash(struct hw_profile *hw, struct calibrate_fit *fit)
{
    if (hw->flash.sequential_bw <= 0)
        for (size_t i = 0; i < hw->flash.n_grid; i++)
            hw->flash.sequential_bw = fmax(hw->flash.sequential_bw, hw->points[i].bw);
    fit->rms_log_error = flash_fit(hw->points, hw->flash.n_grid, FIT_ALL, &hw->flash.fit);
    fit->mape_all_pct = flash_mape(&hw->flash.fit, hw->points, hw->flash.n_grid);
    fit->mape_heldout_pct = flash_heldout_mape(hw->points, hw->flash.n_grid);
}

void calibrate_measure_memory(struct hw_profile *hw, bool quick)
{
    const size_t rows[] = {4096, 16384, 65536, 262144, 1048576};
    double per_row_ns = 0;
    hw->n_copy = 0;
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        double ns;
        hw->copy_row_bytes[i] = (double)rows[i];
        hw->copy_bw[i] = measure_row_copy(rows[i], quick ? 0.1 : 0.3, &ns);
        if (i == 0)
            per_row_ns = ns;
        hw->n_copy++;
    }
    hw->per_row_ns = 0;
    snprintf(hw->mem_source, sizeof hw->mem_source,
             "measured: memcpy of rows between random slots of a 512 MiB buffer on huge pages, as the neuron "
             "cache's (a 4 KiB row took %.0f ns)",
             per_row_ns);
}

/* Whether a and b are float types of the same bytes per weight. */
static bool same_float_width(const struct wtype_traits *a, const struct wtype_traits *b)
{
    return !a->quantized && !b->quantized && a->block_bytes * b->block_elems == b->block_bytes * a->block_elems;
}

/* The CPU profile's rule, stated here only (ARCHITECTURE.md points here):
 * one float type per width, the table's first of it (f32, f16), and every
 * block type. A later float type of a width already measured (bf16) is
 * not timed, so a CPU profile has no rate for it and the cost model
 * refuses to price it there ("no compute rate for bf16": predict asks
 * hw_compute by name, with no stand-in). Why it stays so: the CPU profiles
 * have always held exactly f32 and f16 (the committed ones, and
 * tests/integration/predict_calibrate.sh and test_wtype_decode hold a new
 * one to that), and the cost model's refusal of bf16 on a CPU profile is
 * itself a tested outcome. The CPU kernels do compute bf16 (a shift to
 * f32, not f16's conversion, so its rate may differ): measuring it is the
 * removal of this filter, with those tests and profiles moved on together. */
bool calibrate_cpu_measures(enum fb_dtype t)
{
    if (!wtype_valid(t) || wtype_traits(t)->quantized) /* the block formats are not priced yet */
        return false;
    for (int e = 0; e < (int)t; e++)
        if (same_float_width(wtype_traits((enum fb_dtype)e), wtype_traits(t)))
            return false;
    return true;
}

void calibrate_measure_compute(struct hw_profile *hw, const struct fb_settings *set, unsigned threads, bool quick,
                               char why[DTYPE_COUNT][512])
{
    for (int h = 0; h < DTYPE_COUNT; h++) {
        enum fb_dtype t = (enum fb_dtype)h;
        why[h][0] = '\0';
        if (!calibrate_cpu_measures(t))
            continue;
        struct compute_rate *cr = &hw->compute[hw->n_compute++];
        snprintf(cr->dtype, sizeof cr->dtype, "%s", wtype_name(t));
        cr->bw = measure_matvec(set, 8192, 4096, t, threads, quick ? 0.3 : 1.0, &cr->flops, why[h], sizeof why[h]);
        snprintf(cr->source, sizeof cr->source,
                 "measured: the cpu backend's matvec, 8192 x 4096 %s weights (copies taken in turn, 512 MiB in "
                 "all), %u threads", wtype_name(t), threads);
    }
    snprintf(hw->compute_note, sizeof hw->compute_note,
             "the engine's cpu backend (engine/compute/cpu_kernels.c) timed on 8192 x 4096 matrices, copies taken in "
             "turn so that none is in the caches: decode at batch 1 streams weights, so this bandwidth prices "
             "every matrix");
}

cJSON *calibrate_profile_json(const struct hw_profile *hw, const struct calibrate_fit *fit, bool bypassed)
{
    cJSON *j = hw_profile_to_json(hw);
    cJSON *flash = cJSON_GetObjectItemCaseSensitive(j, "flash");
    cJSON *f = cJSON_GetObjectItemCaseSensitive(flash, "fit");
    cJSON_AddNumberToObject(f, "rms_log_error", fit->rms_log_error);
    cJSON_AddNumberToObject(f, "mape_pct_all_points", fit->mape_all_pct);
    cJSON_AddNumberToObject(f, "mape_pct_heldout", fit->mape_heldout_pct);
    cJSON_AddBoolToObject(flash, "page_cache_bypassed", bypassed);
    return j;
}
