/* flashbed calibrate: measure this machine and write a hardware profile. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/backend_opts.h"
#include "cli/cli_parse.h"
#include "cli/commands.h"
#include "cli/shared.h"
#include "common/atomic_file.h"
#include "common/cleanup.h"
#include "common/fsutil.h"
#include "common/interrupt.h"
#include "common/limits.h"
#include "common/log.h"
#include "common/machine.h"
#include "common/options.h"
#include "common/out_path.h"
#include "common/provenance.h"
#include "harness/calibrate.h"
#include "harness/calibrate_fixed.h"
#include "harness/sweep.h"
#include "sim/hw_choice.h"
#include "sim/hw_profile.h"

struct calibrate_opts {
    char *file, *sweep, *name, *out, *backend;
    uint64_t size, threads;
    bool quick, force;
};

#define O(f) offsetof(struct calibrate_opts, f)
static const struct opt_def calibrate_options[] = {
    {"file", OPT_STRING, O(file), NULL, "PATH", "file on the flash device to sweep [default: scratch.bin in the sweep folder beside the profile, made for the sweep and removed after it]; with --sweep, the swept file (it must exist): the fixed costs per read and per batch and the sequential rate are measured on it"},
    {"size", OPT_SIZE, O(size), "1G", "BYTES", "bytes of the file the reads spread over"},
    {"sweep", OPT_STRING, O(sweep), NULL, "SWEEP.json", "take the flash points from this sweep instead of measuring"},
    {"quick", OPT_FLAG, O(quick), NULL, NULL, "a short grid and short timings (about a minute)"},
    {"threads", OPT_UINT, O(threads), "0", "N", "compute threads for the matrix-vector timing [default: all cores]",
     .max = FB_MAX_THREADS},
    {"backend", OPT_STRING, O(backend), "cpu", "NAME",
     "whose rates the profile records: cpu (the CPU kernels' matrix-vector rate), or a device's through sim, "
     "opencl or cuda (its matrix-vector rates, copies and waits; sim and OpenCL on a CPU are emulated devices: "
     "the profile is marked so, and predict takes it only with --allow-emulated)", .allowed = BACKEND_OPT_ALLOWED},
    {"name", OPT_STRING, O(name), NULL, "NAME", "profile name [default: the host name]"},
    {"out", OPT_STRING, O(out), NULL, "PATH", "profile file, e.g. configs/hw/NAME.json [default: results/hw-HOST.json, HOST this machine's host name: where replay and predict look for this machine's profile when --hw is not given]; the sweep measured for it goes beside it, into PATH-without-.json-sweep/"},
    {"force", OPT_FLAG, O(force), NULL, NULL, FORCE_HELP},
    OPT_END,
};
#undef O

static const struct opt_command calibrate_command = {
    .name = "calibrate",
    .usage = "[--quick] [--file PATH] [--sweep SWEEP.json] [--out configs/hw/NAME.json]",
    .summary = "Measures this machine for the cost model: flash read throughput over chunk x threads\n"
               "(through the sweep code) and its fitted closed form, DRAM row-copy bandwidth, the CRC-32C\n"
               "rate run --verify checks bundles at (one thread), and the\n"
               "speed of the engine's matrix-vector kernel, one weight type of each width (f32, f16), over\n"
               "weights that do not fit in the caches, as decode streams them; with --backend B (not cpu) the\n"
               "device's instead, in every weight type, and its upload and download bandwidth from pinned and\n"
               "ordinary memory, launch and synchronisation latency (\"device\"). Writes a hardware profile JSON, and the sweep it\n"
               "measured (sweep.json, sweep.csv, sweep.md) beside it: --out configs/hw/box.json puts it\n"
               "in configs/hw/box-sweep/. Nothing is written elsewhere (without --file the scratch file\n"
               "is made in that folder and removed once measured).",
    .opts = calibrate_options,
    .max_positional = 0,
};

/* Where calibrate keeps the sweep it measures: beside the profile,
 * PROFILE.json -> PROFILE-sweep (another name gets -sweep appended), so
 * that it writes nothing outside the path it was given. */
static void sweep_dir_beside(const char *profile, char *dir, size_t len)
{
    size_t n = strlen(profile);
    if (n > 5 && !strcmp(profile + n - 5, ".json"))
        n -= 5;
    snprintf(dir, len, "%.*s-sweep", (int)n, profile);
}

/* After the sweep, on its file: large reads for the sequential rate the
 * naive baseline uses, and the fixed costs per read and per batch
 * (harness/calibrate_fixed.h). 0, or 1 (printed). */
static int measure_after_sweep(const struct calibrate_opts *o, const char *scratch, struct hw_profile *hw)
{
    char err[1024];
    struct point_params seq = {.engine = ioengine_find("psync"), .path = scratch, .file_size = o->size,
                               .chunk = 4u << 20, .threads = 4, .iodepth = 1, .direct = true, .huge_pages = true,
                               .runtime_s = o->quick ? 0.5 : 1.0, .ramp_s = 0.1, .seed = 7};
    struct point_result r;
    if (bench_point_run(&seq, &r, err, sizeof err) == 0)
        hw->flash.sequential_bw = r.bw_bytes;
    if (calibrate_measure_reads(&hw->fixed, scratch, hw->io_threads, o->quick, err, sizeof err) != 0) {
        fb_error("calibrate: %s", err);
        return 1;
    }
    return 0;
}

/* Flash: a sweep into work over --file, or over work/scratch.bin, which is
 * made here (with the folders above it) and removed once measured; then
 * large reads for the sequential rate. 0, 1 on error (printed), 130 when
 * interrupted. */
static int measure_flash(const struct calibrate_opts *o, const struct fb_settings *set, const char *work,
                         struct hw_profile *hw, bool *bypassed, struct out_manifest **folder)
{
    char scratch[4300], err[1024];
    struct out_parents made = {0};
    bool own = !o->file;
    snprintf(scratch, sizeof scratch, "%s%s", own ? work : o->file, own ? "/scratch.bin" : "");
    if (own && out_parents_ok("calibrate --out", scratch, &made) != 0)
        return 1;
    bool existed = path_exists(scratch);
    /* flashbed's own file at its own default path: a second Ctrl-C takes it too */
    int scratch_handle = own && !existed ? cleanup_add_file(scratch) : -1;
    struct sweep_config c = {
        .path = scratch, .size = o->size, .iodepth = 1, .direct = true, .huge_pages = true,
        .engine = ioengine_find("psync"), .runtime_s = o->quick ? 0.5 : 1.0, .ramp_s = o->quick ? 0.1 : 0.25,
        .out_dir = work, .settings = set,
    };
    int rc = 1;
    if (parse_size_list(o->quick ? "4k,16k,64k,256k,1m" : "4k,8k,16k,32k,64k,128k,256k,512k,1m", &c.chunks, err,
                        sizeof err) != 0 ||
        parse_uint_list(o->quick ? "1,4,16,32" : "1,2,4,8,16,32,64", &c.threads, err, sizeof err) != 0) {
        fb_error("calibrate: internal: its grid: %s", err);
        goto out;
    }
    static const struct sweep_flag flags[] = {{SWEEP_SET_PATH, "--file"}, {SWEEP_SET_SIZE, "--size"}, {0, NULL}};
    rc = run_sweep("calibrate", flags, &c, opts_to_json(&calibrate_command, o), o->force, folder);
    if (rc != 0)
        goto out;
    /* the sweep polled; the measurements after it do not: a Ctrl-C now
     * stops calibrate at once, writing no profile */
    interrupt_exit_on_signal();
    char sweep_json[4300];
    snprintf(sweep_json, sizeof sweep_json, "%s/sweep.json", work);
    if (hw_flash_from_sweep(sweep_json, hw, bypassed, err, sizeof err) != 0) {
        fb_error("%s", err);
        rc = 1;
        goto out;
    }
    rc = measure_after_sweep(o, scratch, hw);
out:
    u64_list_free(&c.chunks);
    u64_list_free(&c.threads);
    if (own && !existed)
        unlink(scratch);
    cleanup_forget(scratch_handle);
    if (rc == 0)
        out_parents_keep(&made);
    else
        out_parents_undo(&made); /* the sweep folder stays while it holds finished points */
    return rc;
}

/* The profile JSON with its provenance, at out (its folder made). 0, or 1 (printed). */
static int write_profile(const struct calibrate_opts *o, const char *out, const char *work,
                         const struct hw_profile *hw, const struct calibrate_fit *fit, bool bypassed,
                         const struct cli_backend *be)
{
    cJSON *j = calibrate_profile_json(hw, fit, bypassed);
    cJSON *prov = provenance_new();
    if (!o->sweep) /* the disk of the file swept (work: the scratch file's folder, the file being gone) */
        provenance_add_disk(prov, o->file ? o->file : work);
    cJSON_AddItemToObject(prov, "parameters", opts_to_json(&calibrate_command, o));
    cli_backend_provenance(prov, be);
    cJSON_AddItemToObject(j, "provenance", prov);
    char out_dir[4096];
    int rc = 1;
    dir_of(out, out_dir, sizeof out_dir);
    if (!path_exists(out_dir) && mkdir_p(out_dir, 0755) != 0)
        fb_error("calibrate --out: %s: cannot create: %s", out_dir, strerror(errno));
    else if (write_json_file(NULL, out, j) == 0) { /* beside the sweep's folder, not in it */
        fb_info("profile written to %s", out);
        rc = 0;
    }
    cJSON_Delete(j);
    return rc;
}

/* Flash from the sweep given, else measured (a measured sweep refuses a
 * file system without direct I/O), and its fit. 0, 1 on error (printed),
 * 130 when interrupted. */
static int flash_profile(const struct calibrate_opts *o, const struct fb_settings *set, const char *work,
                         struct hw_profile *hw, bool *bypassed, struct calibrate_fit *fit,
                         struct out_manifest **folder)
{
    *bypassed = true;
    int rc = 0;
    char err[1024];
    if (o->sweep && hw_flash_from_sweep(o->sweep, hw, bypassed, err, sizeof err) != 0) {
        fb_error("calibrate --sweep: %s", err);
        return 1;
    }
    if (o->sweep && o->file) { /* the sweep's file: its fixed costs and sequential rate measured on it */
        if (!path_exists(o->file)) {
            fb_error("calibrate --file: %s does not exist (with --sweep the file is read, not made)", o->file);
            return 1;
        }
        if (measure_after_sweep(o, o->file, hw) != 0)
            return 1;
    } else if (o->sweep) {
        calibrate_reads_unmeasured(&hw->fixed, "calibrate --sweep reads no file");
    }
    if (!o->sweep && (rc = measure_flash(o, set, work, hw, bypassed, folder)) != 0)
        return rc;
    calibrate_fit_flash(hw, fit);
    fb_info("flash fit: L0 %.1f us, b1 %.2f GB/s, B_max %.2f GB/s, IOPS_max %.0f, p %.2f; MAPE %.1f%% "
            "on all points, %.1f%% on held-out points",
            hw->flash.fit.L0_s * 1e6, hw->flash.fit.b1 / 1e9, hw->flash.fit.B_max / 1e9,
            hw->flash.fit.IOPS_max, hw->flash.fit.p, fit->mape_all_pct, fit->mape_heldout_pct);
    return 0;
}

/* The CPU kernels' compute rates (a kernel that cannot be timed is said,
 * and the profile written all the same, as before devices). */
static void measure_cpu(const struct calibrate_opts *o, const struct fb_settings *set, struct hw_profile *hw)
{
    char why[DTYPE_COUNT][512];
    unsigned threads = (unsigned)machine_compute_threads(o->threads);
    calibrate_measure_compute(hw, set, threads, o->quick, why);
    for (int h = 0; h < DTYPE_COUNT; h++)
        if (why[h][0])
            fb_error("calibrate: %s", why[h]);
    if (calibrate_measure_team(&hw->fixed, set, threads, o->quick, why[0], sizeof why[0]) != 0)
        fb_error("calibrate: %s", why[0]);
    const struct hw_fixed *f = &hw->fixed;
    fb_info("fixed costs: read %.1f us (psync), %.1f us (io_uring); batch %.1f us; tail x%.2f at %.0f threads; "
            "team job %.1f us hot, %.1f us after 3 ms asleep", f->read_s[HW_IO_PSYNC] * 1e6, f->read_s[HW_IO_URING] * 1e6,
            f->batch_s * 1e6, f->n_tail ? f->tail_factor[f->n_tail - 1] : 1,
            f->n_tail ? f->tail_threads[f->n_tail - 1] : 0, f->job_hot_s * 1e6, f->n_cold ? f->job_cold_s[f->n_cold - 1] * 1e6 : 0);
}

/* A device backend's rates, before the flash is measured: a device that
 * fails costs no sweep, and no profile is written. 0, or 1 (printed). */
static int measure_device(const struct calibrate_opts *o, const struct fb_settings *set, struct hw_profile *hw,
                          const struct backend_ops *ops)
{
    char err[1024];
    unsigned threads = (unsigned)machine_compute_threads(o->threads);
    if (calibrate_measure_device(hw, set, ops, threads, o->quick, err, sizeof err) != 0) {
        fb_error("calibrate --backend %s: %s", o->backend, err);
        return 1;
    }
    const struct hw_device *d = &hw->device;
    fb_info("device %s%s: upload %.2f GB/s pinned, %.2f GB/s ordinary (%.0f MiB); launch %.1f us, sync %.1f us",
            d->name, hw->emulated ? " (emulated)" : "", d->h2d_pinned_bw[d->n_xfer - 1] / 1e9,
            d->h2d_pageable_bw[d->n_xfer - 1] / 1e9, d->xfer_bytes[d->n_xfer - 1] / (1 << 20), d->launch_s * 1e6,
            d->sync_s * 1e6);
    return 0;
}

int cmd_calibrate(int argc, char **argv, const struct fb_settings *set)
{
    struct calibrate_opts o;
    int rc;
    if (!cli_start(&calibrate_command, &o, sizeof o, argc, argv, NULL, NULL, &rc))
        return rc;
    rc = 1;
    struct out_manifest *folder = NULL; /* the sweep's result folder, once measure_flash opened it */
    struct hw_profile *hw = calloc(1, sizeof *hw);
    struct machine_info mi;
    machine_info_get(&mi);
    char name[64], out[4096], work[4200];
    snprintf(name, sizeof name, "%.63s", o.name ? o.name : mi.hostname);
    if (o.out)
        snprintf(out, sizeof out, "%s", o.out);
    else /* where replay and predict look for this machine's profile (sim/hw_choice.h) */
        hw_own_profile_path(mi.hostname, out, sizeof out);
    /* before the measurements: a profile (or its sweep) that cannot be written costs nothing */
    const char *inputs[] = {o.sweep, o.file};
    struct cli_backend be;
    if (!hw || out_file_ok_beside("calibrate --out", out, 1, inputs, 2, NULL) != 0)
        goto out;
    sweep_dir_beside(out, work, sizeof work);
    if ((!o.sweep && out_dir_ok("calibrate --out", work) != 0) ||
        cli_backend_open("calibrate", o.backend, set, &be) != 0)
        goto out;
    snprintf(hw->name, sizeof hw->name, "%s", name);
    snprintf(hw->backend, sizeof hw->backend, "%s", be.ops->name);
    hw->io_threads = 32;
    bool device = !be.dev.host_visible; /* a device's memory: its copies are measured */
    if (device && measure_device(&o, set, hw, be.ops) != 0)
        goto out;
    bool bypassed;
    struct calibrate_fit fit;
    if ((rc = flash_profile(&o, set, work, hw, &bypassed, &fit, &folder)) != 0)
        goto out;
    calibrate_measure_memory(hw, o.quick);
    calibrate_measure_crc(hw, o.quick);
    fb_info("CRC-32C (run --verify): %.2f GB/s on %d-byte buffers, one thread", hw->crc_bw / 1e9, CALIBRATE_CRC_BYTES);
    if (!device)
        measure_cpu(&o, set, hw);
    rc = write_profile(&o, out, work, hw, &fit, bypassed, &be);
out:
    free(hw);
    opts_free(&calibrate_command, &o);
    return out_result_dir_close(folder, rc); /* the sweep's folder, when it measured one */
}
