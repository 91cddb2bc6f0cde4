/* calibrate's copy and queue measurement (harness/calibrate_transfer.h) on
 * cpu and sim: what it says it enqueued and waited for is exactly what the
 * backend counted, and exactly what its plan implies; every rate it
 * reports is positive; a device fault (sim's sim_fail_at) fails it, and
 * calibrate_measure_device, with the fault's reason. The profile keeps
 * what was measured ("device", "emulated"), the loader refuses an
 * emulated profile unless allowed, and hw_device_bw interpolates it. No
 * timing is checked. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "engine/compute/backend.h"
#include "harness/calibrate.h"
#include "harness/calibrate_transfer.h"

static const size_t sizes[] = {64, 4096, 65536};
static const struct xfer_plan plan = {.sizes = sizes, .n_sizes = 3, .samples = 3, .launches = 10, .waits = 4};

struct inst {
    struct cpu_kernels *ck;
    struct backend *b;
};

/* ops started as calibrate starts it; false when it cannot start here */
static bool inst_start(const struct backend_ops *ops, const struct fb_settings *set, struct inst *in)
{
    char err[512];
    in->ck = ck_create(set, 1, 64, 1, 1, err, sizeof err);
    struct backend_config cfg = {.set = set, .threads = 1, .max_dim = 64, .max_seq = 1, .max_heads = 1,
                                 .host = in->ck};
    in->b = in->ck ? ops->create(&cfg, err, sizeof err) : NULL;
    if (!in->b) {
        printf("%s does not start here (%s): skipped\n", ops->name, err);
        ck_destroy(in->ck);
    }
    return in->b != NULL;
}

static void inst_stop(const struct backend_ops *ops, struct inst *in)
{
    ops->destroy(in->b);
    ck_destroy(in->ck);
}

/* The counts the plan implies: each size, both directions, both memory
 * kinds, one untimed copy and `samples` timed, each then a sync; 6
 * rounds of launches, each then a sync; `waits` syncs and event waits;
 * the sync before the buffers are freed. */
static void check_tally(const struct xfer_tally *t)
{
    uint64_t all = 0, per = (uint64_t)plan.samples + 1;
    for (size_t i = 0; i < plan.n_sizes; i++)
        all += sizes[i];
    CHECK_U64(t->bytes_up, 2 * per * all);
    CHECK_U64(t->bytes_down, 2 * per * all);
    CHECK_U64(t->copies, 4 * per * plan.n_sizes);
    CHECK_U64(t->launches, 6 * (uint64_t)plan.launches);
    CHECK_U64(t->syncs, 4 * per * plan.n_sizes + 6 + 2 * (uint64_t)plan.waits + 1);
}

static void test_counts(const struct backend_ops *ops)
{
    struct fb_settings set = fb_settings_defaults();
    struct inst in;
    if (!inst_start(ops, &set, &in))
        return;
    struct backend_counts before, after;
    ops->counts(in.b, &before);
    struct hw_device d = {0};
    struct xfer_tally t;
    char err[512];
    CHECK(measure_device_transfers(ops, in.b, &plan, &d, &t, err, sizeof err) == 0);
    CHECK_STR(err, "");
    ops->counts(in.b, &after);
    check_tally(&t);
    CHECK_U64(after.bytes_up - before.bytes_up, t.bytes_up);
    CHECK_U64(after.bytes_down - before.bytes_down, t.bytes_down);
    CHECK_U64(after.copies - before.copies, t.copies);
    CHECK_U64(after.launches - before.launches, t.launches);
    CHECK_U64(after.syncs - before.syncs, t.syncs);
    CHECK_U64(d.n_xfer, 3);
    for (size_t i = 0; i < d.n_xfer; i++) {
        CHECK(d.xfer_bytes[i] == (double)sizes[i]);
        CHECK(d.h2d_pinned_bw[i] > 0 && d.h2d_pageable_bw[i] > 0);
        CHECK(d.d2h_pinned_bw[i] > 0 && d.d2h_pageable_bw[i] > 0);
    }
    CHECK(d.launch_s > 0 && d.sync_s > 0 && d.event_s > 0);
    inst_stop(ops, &in);
}

/* A plan it cannot run is refused before anything is enqueued. */
static void test_bad_plan(void)
{
    struct fb_settings set = fb_settings_defaults();
    struct inst in;
    if (!inst_start(&backend_cpu, &set, &in))
        return;
    struct xfer_plan p = plan;
    p.n_sizes = 0;
    struct hw_device d = {0};
    struct xfer_tally t;
    char err[512];
    CHECK(measure_device_transfers(&backend_cpu, in.b, &p, &d, &t, err, sizeof err) == -1);
    CHECK(strstr(err, "internal: a transfer plan of 0 sizes") != NULL);
    struct backend_counts c;
    backend_cpu.counts(in.b, &c);
    CHECK_U64(c.copies + c.launches + c.syncs, 0);
    inst_stop(&backend_cpu, &in);
}

/* sim failing its Nth command: in the copies (3), in the launches (after
 * the 48 copies: 50); the reason is the fault's. */
static void test_fault(void)
{
    const uint64_t at[] = {3, 50};
    for (int i = 0; i < 2; i++) {
        struct fb_settings set = fb_settings_defaults();
        set.sim_fail_at = at[i];
        struct inst in;
        if (!inst_start(&backend_sim, &set, &in))
            return;
        struct hw_device d = {0};
        struct xfer_tally t;
        char err[512], want[64];
        CHECK(measure_device_transfers(&backend_sim, in.b, &plan, &d, &t, err, sizeof err) == -1);
        snprintf(want, sizeof want, "command %llu ", (unsigned long long)at[i]);
        CHECK(strstr(err, "sim backend: ") == err && strstr(err, want) && strstr(err, "an injected failure"));
        CHECK_U64(d.n_xfer, 0);
        inst_stop(&backend_sim, &in);
    }
}

/* calibrate's device measurement fails with the fault's reason. */
static void test_calibrate_fault(void)
{
    struct fb_settings set = fb_settings_defaults();
    struct inst in;
    if (!inst_start(&backend_sim, &set, &in))
        return;
    inst_stop(&backend_sim, &in);
    set.sim_fail_at = 5;
    struct hw_profile *hw = calloc(1, sizeof *hw);
    char err[512];
    CHECK(calibrate_measure_device(hw, &set, &backend_sim, 1, true, err, sizeof err) == -1);
    CHECK(strstr(err, "command 5 ") && strstr(err, "an injected failure"));
    free(hw);
}

/* A profile of an emulated device as calibrate writes it, at path. */
static void write_emulated(const char *path)
{
    struct hw_profile *hw = calloc(1, sizeof *hw);
    snprintf(hw->name, sizeof hw->name, "box");
    snprintf(hw->backend, sizeof hw->backend, "sim");
    hw->io_threads = 4;
    hw->flash.fit = (struct flash_params){1e-4, 1e9, 2e9, 1e5, 2};
    hw->flash.sequential_bw = 2e9;
    hw->n_copy = 1;
    hw->copy_row_bytes[0] = 4096;
    hw->copy_bw[0] = 1e10;
    hw->n_compute = 1;
    snprintf(hw->compute[0].dtype, sizeof hw->compute[0].dtype, "f16");
    hw->compute[0].bw = 5e10;
    hw->emulated = true;
    snprintf(hw->emulated_note, sizeof hw->emulated_note, "a model of a device");
    struct hw_device *d = &hw->device;
    *d = (struct hw_device){.present = true, .n_xfer = 2, .launch_s = 2e-6, .sync_s = 3e-6, .event_s = 4e-6};
    snprintf(d->name, sizeof d->name, "simulated");
    for (int i = 0; i < 2; i++) {
        d->xfer_bytes[i] = i ? 1 << 20 : 1 << 10;
        d->h2d_pinned_bw[i] = (i + 1) * 1e9;
        d->h2d_pageable_bw[i] = (i + 1) * 2e9;
        d->d2h_pinned_bw[i] = (i + 1) * 3e9;
        d->d2h_pageable_bw[i] = (i + 1) * 4e9;
    }
    cJSON *j = hw_profile_to_json(hw);
    char *text = cJSON_Print(j);
    FILE *f = fopen(path, "w");
    CHECK(f && text);
    if (f && text)
        fputs(text, f);
    if (f)
        fclose(f);
    free(text);
    cJSON_Delete(j);
    free(hw);
}

/* Written, refused by default naming the file, loaded when allowed with
 * every number kept; hw_device_bw between and beyond the sizes. */
static void test_profile(void)
{
    char dir[] = "/tmp/fb-caltransfer-XXXXXX", path[64], err[1024];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/box.json", dir);
    write_emulated(path);
    struct fb_settings set = fb_settings_defaults();
    struct hw_profile *hw = calloc(1, sizeof *hw);
    CHECK(hw_profile_load(&set, path, hw, err, sizeof err) == -1);
    CHECK(strstr(err, path) == err && strstr(err, "emulated device (sim backend on simulated)") &&
          strstr(err, "--allow-emulated") && !strchr(err, '\n'));
    CHECK(hw_profile_load_flags(&set, path, HW_LOAD_ALLOW_EMULATED, hw, err, sizeof err) == 0);
    CHECK(hw->emulated && hw->device.present && hw->device.n_xfer == 2);
    CHECK_STR(hw->emulated_note, "a model of a device");
    CHECK_STR(hw->device.name, "simulated");
    CHECK(hw->device.launch_s == 2e-6 && hw->device.sync_s == 3e-6 && hw->device.event_s == 4e-6);
    CHECK(hw_device_bw(hw, true, true, 1 << 10) == 1e9);
    CHECK(hw_device_bw(hw, true, false, 1 << 20) == 4e9);
    CHECK(hw_device_bw(hw, false, true, 1 << 30) == 6e9);      /* clamped */
    CHECK(hw_device_bw(hw, false, false, 1 << 4) == 4e9);      /* clamped */
    CHECK_NEAR(hw_device_bw(hw, true, true, 1 << 15), 1.5e9, 1); /* halfway in log */
    CHECK(hw_profile_load(&set, "m1max-cpu", hw, err, sizeof err) == 0);
    CHECK(!hw->emulated && !hw->device.present && hw_device_bw(hw, true, true, 4096) == 0);
    free(hw);
    unlink(path);
    CHECK(rmdir(dir) == 0);
}

int main(void)
{
    test_counts(&backend_cpu);
    test_counts(&backend_sim);
    test_bad_plan();
    test_fault();
    test_calibrate_fault();
    test_profile();
    return check_report("test_calibrate_transfer");
}
