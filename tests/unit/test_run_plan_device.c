/* Run planning on a device whose memory is not the host's (engine/run/run_plan.h):
 * without a device budget the plan is the DRAM budget's, exactly, and only
 * records what lands where; with one, the caches get what cache_capacity_rows
 * gives for the device's share (a row costing its stride, its up bias and its
 * device move entry), every refusal names the budget and what it had to
 * hold, the DRAM budget beside it holds the host's pinned part, and a
 * backend in host memory refuses a device budget. A model that exists only
 * as numbers. */
#include "check.h"
#include "plan_model_fixture.h"
#include "policy_text.h"
#include "trace_fixture.h"

#include "cache/cache.h"
#include "engine/run/run_plan.h"

/* d_model 4, f32, ReLU: bundles of 64 bytes; dram.bin 1000 bytes, the KV
 * cache 100. On the device a cache row is 64 + 8 (its move entry), 4 more
 * with an up bias; pinned x is 16 bytes. */
enum { STRIDE = PLAN_STRIDE, FIXED = PLAN_DRAM + 100, DROW = STRIDE + 8, X_PINNED = 16 };

static int plan(const struct model *m, const char *policy, bool device, uint64_t budget, uint64_t device_budget,
                const struct trace *tr, struct run_plan_out *out, char *err)
{
    struct run_plan_input in = {.m = m, .policy = POLICY(policy), .layout = LAYOUT("bundled"), .budget = budget,
                                .kv_bytes = 100, .trace = tr, .tokens = tr ? 5 : 10, .device = device,
                                .device_budget = device_budget};
    err[0] = 0;
    return run_plan_make(&in, out, err, 512);
}

/* No device budget: the DRAM budget's plan, the same on the host and on a
 * device, with what lands on the device and what is pinned recorded. */
static void test_dram_plan_unchanged(void)
{
    struct model m = fake_model(2, 8);
    struct run_plan_out host, dev;
    char err[512];
    uint64_t budget = FIXED + 192 + 384 + 63; /* test_run_plan's: 3 rows a layer, 2 staging, 1 bounce */
    CHECK(plan(&m, "window:3", false, budget, 0, NULL, &host, err) == 0);
    CHECK(plan(&m, "window:3", true, budget, 0, NULL, &dev, err) == 0);
    CHECK_U64(dev.capacity_rows, 3);
    CHECK(host.capacity_rows == dev.capacity_rows && host.staging_rows == dev.staging_rows &&
          host.bounce_rows == dev.bounce_rows && host.held_bytes == dev.held_bytes &&
          host.ffn_cache_bytes == dev.ffn_cache_bytes && host.layer_rows[0] == dev.layer_rows[0] &&
          host.layer_rows[1] == dev.layer_rows[1] && policy_spec_equal(&host.policy, &dev.policy));
    CHECK(!host.device_sized && !dev.device_sized);
    CHECK_U64(host.device_bytes, 0);
    CHECK_U64(host.pinned_bytes, 0);
    /* weights and KV, 2 staging rows, 6 cache rows of 72 */
    CHECK_U64(dev.device_fixed_bytes, FIXED);
    CHECK_U64(dev.device_stage_bytes, 2 * STRIDE);
    CHECK_U64(dev.device_row_bytes, DROW);
    CHECK_U64(dev.device_bytes, FIXED + 2 * STRIDE + 6 * DROW);
    /* the ring of 2 x 2 rows, x, the pinned moves lists; then the bounce row */
    CHECK_U64(dev.pinned_bytes, RUN_PINNED_RING_SLOTS * 2 * STRIDE + X_PINNED + 6 * 8);
    CHECK_U64(dev.host_bytes, dev.pinned_bytes + STRIDE);
    CHECK_U64(run_plan_ring_bytes(2, STRIDE), 256);
    free(host.layer_rows);
    free(dev.layer_rows);
}

/* Every device budget: the capacity cache_capacity_rows gives for what it
 * leaves after the weights, the KV cache and the device staging area, and
 * never more held on the device than the budget. */
static void test_device_capacity(void)
{
    struct model m = fake_model(2, 8);
    char err[512];
    uint64_t planned = 0;
    for (uint64_t d = FIXED + 1; d <= FIXED + 2 * 8 * DROW + 4 * STRIDE; d++) {
        struct run_plan_out out;
        if (plan(&m, "window:3", true, 0, d, NULL, &out, err) != 0)
            continue;
        planned++;
        uint64_t share = d - FIXED - (uint64_t)out.staging_rows * STRIDE;
        CHECK_U64(out.capacity_rows, cache_capacity_rows(share, DROW, 2, 8));
        CHECK(out.device_sized && out.device_bytes <= d);
        CHECK_U64(out.device_bytes, FIXED + out.staging_rows * STRIDE + 2 * out.capacity_rows * DROW);
        free(out.layer_rows);
    }
    CHECK(planned > 2 * 8 * DROW);
    /* 1731: 631 left, 2 staging rows (128), 503 for 2 layers of 72-byte rows: 3 each; 72 less: 2 */
    struct run_plan_out out;
    CHECK(plan(&m, "window:3", true, 0, FIXED + 2 * STRIDE + 6 * DROW + 71, NULL, &out, err) == 0);
    CHECK_U64(out.staging_rows, 2);
    CHECK_U64(out.capacity_rows, 3);
    CHECK_U64(out.ffn_cache_bytes, 3 * 2 * 32); /* replay's --dram-budget for these rows, as on the host */
    free(out.layer_rows);
    /* 72 less: 559 left hold 7 rows, so staging goes in batches of a quarter of them (1 row), and 495
     * left buy 3 rows a layer still */
    CHECK(plan(&m, "window:3", true, 0, FIXED + 2 * STRIDE + 6 * DROW - 1, NULL, &out, err) == 0);
    CHECK_U64(out.staging_rows, 1);
    CHECK_U64(out.capacity_rows, 3);
    free(out.layer_rows);
    /* with an up bias a row is 4 bytes more, on the device and in its staging area */
    struct layer_weights lw[2] = {{.ffn_up_bias = (const float *)&m}, {.ffn_up_bias = (const float *)&m}};
    m.layers = lw;
    CHECK(plan(&m, "window:3", true, 0, FIXED + 2 * 68 + 6 * (DROW + 4) + 75, NULL, &out, err) == 0);
    CHECK_U64(out.device_row_bytes, DROW + 4);
    CHECK_U64(out.staging_rows, 2);
    CHECK_U64(out.capacity_rows, 3);
    CHECK_U64(out.device_bytes, FIXED + 2 * 68 + 6 * (DROW + 4));
    free(out.layer_rows);
}

/* The refusals name the budget and what it had to hold. */
static void test_device_refusals(void)
{
    struct model m = fake_model(2, 8);
    struct run_plan_out out;
    char err[512];
    CHECK(plan(&m, "window:3", true, 0, FIXED, NULL, &out, err) == -1);
    CHECK_STR(err, "the device budget of 1.10 kB: the weights that stay on the device and the KV cache already "
                   "take 1.10 kB");
    /* 50 bytes left: the two staging rows (a quarter of the layer) do not fit */
    CHECK(plan(&m, "window:3", true, 0, FIXED + 50, NULL, &out, err) == -1);
    CHECK_STR(err, "the device budget of 1.15 kB cannot hold the weights and KV cache (1.10 kB) plus the device "
                   "staging area (0.13 kB: 2 rows of 64 bytes): it needs 1.23 kB");
    /* staging fits, a row in each layer (2 x 72) does not: 1100 + 64 + 144 = 1308 */
    CHECK(plan(&m, "lru", true, 0, FIXED + 100, NULL, &out, err) == -1);
    CHECK_STR(err, "the device budget of 1.20 kB cannot hold the weights and KV cache (1.10 kB), the device staging "
                   "area (0.06 kB) and a cache row in each of 2 layers (72 bytes each, its moves entry included): it "
                   "needs at least 1.31 kB");
    /* a backend computing in host memory has no device memory to budget */
    CHECK(plan(&m, "window:3", false, 0, FIXED + 4096, NULL, &out, err) == -1);
    CHECK(strstr(err, "a device budget needs a device whose memory is not the host's") != NULL);
    /* on a device, either budget sizes what needs one */
    CHECK(plan(&m, "lru", true, 0, 0, NULL, &out, err) == -1);
    CHECK_STR(err, "policy lru keeps what a budget holds: it needs a DRAM budget or a device budget");
    /* a budget-sized policy takes the device budget as its budget */
    CHECK(plan(&m, "lru", true, 0, FIXED + 2 * STRIDE + 6 * DROW, NULL, &out, err) == 0);
    CHECK_U64(out.capacity_rows, 3);
    free(out.layer_rows);
}

/* The DRAM budget beside a device budget holds the host's part: the
 * pinned ring, x and moves lists, and the bounce row (384 bytes here). */
static void test_host_part(void)
{
    struct model m = fake_model(2, 8);
    struct run_plan_out out;
    char err[512];
    uint64_t d = FIXED + 2 * STRIDE + 6 * DROW + 71; /* 2 staging rows, 3 cache rows a layer */
    uint64_t host = RUN_PINNED_RING_SLOTS * 2 * STRIDE + X_PINNED + 6 * 8 + STRIDE;
    CHECK(plan(&m, "window:3", true, host, d, NULL, &out, err) == 0);
    CHECK_U64(out.host_bytes, host);
    free(out.layer_rows);
    CHECK(plan(&m, "window:3", true, 300, d, NULL, &out, err) == -1);
    CHECK_STR(err, "the DRAM budget of 0.30 kB cannot hold what the host keeps beside the device: 0.38 kB (0.32 kB "
                   "pinned: a staging ring of 2 x 2 rows, x and the moves lists of 6 cache rows; the bounce buffer "
                   "of 1 rows)");
    CHECK(out.layer_rows == NULL);
}

/* hybrid on the device: R rows in each layer beside the streamed layer's
 * d_ff - R staged, all within the device budget. */
static void test_device_hybrid(void)
{
    struct model m = fake_model(2, 8);
    struct run_plan_out out;
    char err[512];
    /* 728 left: a staged layer (512), then 80 per R (2 x 72 - 64): R = 2 */
    CHECK(plan(&m, "hybrid", true, 0, FIXED + 8 * STRIDE + 3 * DROW, NULL, &out, err) == 0);
    CHECK_U64(out.capacity_rows, 2);
    CHECK_U64(out.staging_rows, 6);
    CHECK_U64(out.device_bytes, FIXED + 6 * STRIDE + 4 * DROW);
    CHECK(out.device_bytes <= FIXED + 8 * STRIDE + 3 * DROW);
    free(out.layer_rows);
}

/* window:auto with a trace: the K the DRAM plan chooses for the same rows,
 * the trace's dry run giving what the device holds. One layer, d_ff 8,
 * largest need 3: one staging row. */
static const int s0[] = {0, 1, 2, -1}, s1[] = {1, 2, 3, -1}, s2[] = {0, 4, -1}, s3[] = {1, 2, 5, -1},
                 s4[] = {0, 1, -1};
static const int *const sets[] = {s0, s1, s2, s3, s4};

static void test_device_window_auto(void)
{
    struct trace tr;
    fixture_trace(&tr, 1, 2, 8, FFN_RELU, 5, sets);
    struct model m = fake_model(1, 8);
    for (uint64_t c = 2; c <= 8; c++) {
        struct run_plan_out host, dev;
        char err[512];
        CHECK(plan(&m, "window:auto", false, FIXED + 128 + c * STRIDE, 0, &tr, &host, err) == 0);
        CHECK(plan(&m, "window:auto", true, 0, FIXED + STRIDE + c * DROW, &tr, &dev, err) == 0);
        CHECK_U64(dev.capacity_rows, c);
        CHECK_U64(dev.window_k, host.window_k);
        CHECK_U64(dev.layer_rows[0], host.layer_rows[0]);
        CHECK_U64(dev.device_bytes, FIXED + STRIDE + dev.layer_rows[0] * DROW);
        free(host.layer_rows);
        free(dev.layer_rows);
    }
    trace_free(&tr);
}

static void test_dense_device(void)
{
    struct model m = fake_model(2, 100);
    char err[512];
    m.ffn_bytes = 2 * 100 * STRIDE; /* with dram.bin and the KV cache, 13900 */
    CHECK(run_plan_dense_device_check(&m, 100, 0, err, sizeof err) == 0);
    CHECK(run_plan_dense_device_check(&m, 100, 13900, err, sizeof err) == 0);
    CHECK(run_plan_dense_device_check(&m, 100, 13899, err, sizeof err) == -1);
    CHECK(run_plan_dense_device_check(&m, 100, 12000, err, sizeof err) == -1);
    CHECK_STR(err, "the model and its KV cache need 13.90 kB on the device, the device budget is 12.00 kB");
}

int main(void)
{
    test_dram_plan_unchanged();
    test_device_capacity();
    test_device_refusals();
    test_host_part();
    test_device_hybrid();
    test_device_window_auto();
    test_dense_device();
    return check_report("test_run_plan_device");
}
