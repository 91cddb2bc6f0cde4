#include "sim/hw_profile.h"

#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/json_file.h"
#include "common/limits.h"
#include "common/model_shape.h"
#include "sim/hw_profile_names.h"

/* The largest rate, size or time a profile may give: far above any real
 * machine's, low enough that products of them stay finite. */
#define HW_MAX_NUMBER 1e18
#define HW_REQUIRED NAN

/* where.key of o: def when absent (an error when def is HW_REQUIRED), else a
 * finite number in [min, HW_MAX_NUMBER] and, when positive, above 0. The error names the file, the key and the value:
 * a profile rate of "inf" or -1 GB/s is refused, not priced. */
static int num(const cJSON *o, const char *where, const char *key, double def, double min, bool positive,
               double *out, const char *path, char *err, size_t errlen)
{
    const cJSON *v = cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
    if (!v && !isnan(def)) {
        *out = def;
        return 0;
    }
    char what[160];
    snprintf(what, sizeof what, "\"%s%s%s\"", where, where[0] ? "." : "", key);
    if (json_number_finite(v, what, min, HW_MAX_NUMBER, out, path, err, errlen))
        return -1;
    if (positive && *out <= 0)
        return err_set(err, errlen, "%s: %s must be positive, not %g", path, what, *out);
    return 0;
}

static void str(const cJSON *o, const char *key, char *out, size_t len)
{
    const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
    if (cJSON_IsString(v))
        snprintf(out, len, "%s", v->valuestring);
}

static int read_derive(const cJSON *o, struct derive_rule *d, const char *path, const char *what,
                       char *err, size_t errlen)
{
    const cJSON *r = cJSON_GetObjectItemCaseSensitive(o, "derive_from");
    if (!r)
        return 0;
    memset(d, 0, sizeof *d);
    str(r, "model", d->model, sizeof d->model);
    str(r, "policy", d->policy, sizeof d->policy);
    str(r, "dtype", d->dtype, sizeof d->dtype);
    char where[96];
    snprintf(where, sizeof where, "%s.derive_from", what);
    if (num(r, where, "ms", 0, 0, false, &d->ms, path, err, errlen) ||
        num(r, where, "fraction", 0, 0, false, &d->fraction, path, err, errlen) ||
        num(r, where, "chunk_bytes", 0, 0, false, &d->chunk, path, err, errlen))
        return -1;
    if (d->fraction > 1)
        return err_set(err, errlen, "%s: \"%s.fraction\" is a share of the FFN: at most 1, not %g", path, where,
                       d->fraction);
    if (!d->model[0] || d->ms <= 0) {
        err_set(err, errlen, "%s: %s.derive_from needs \"model\" and a positive \"ms\"", path, what);
        return -1;
    }
    return 0;
}

static const char *fit_names[] = {"L0_s", "b1", "B_max", "IOPS_max", "p"};

/* flash.points: the measured throughput grid (at most HW_MAX_POINTS;
 * more are ignored), into hw->points and the model's grid. */
static int read_flash_points(const cJSON *f, struct hw_profile *hw, const char *path, char *err, size_t errlen)
{
    const cJSON *pts = cJSON_GetObjectItemCaseSensitive(f, "points");
    size_t n = 0;
    const cJSON *p;
    cJSON_ArrayForEach(p, pts)
    {
        if (n == HW_MAX_POINTS)
            break;
        double c, t, bw;
        char where[64];
        snprintf(where, sizeof where, "flash.points[%zu]", n);
        if (num(p, where, "chunk_bytes", HW_REQUIRED, 0, true, &c, path, err, errlen) ||
            num(p, where, "threads", HW_REQUIRED, 0, true, &t, path, err, errlen) ||
            num(p, where, "bw_bytes", HW_REQUIRED, 0, true, &bw, path, err, errlen))
            return -1;
        if (t > FB_MAX_THREADS)
            return err_set(err, errlen, "%s: \"%s.threads\" must be at most %d, not %g", path, where,
                           FB_MAX_THREADS, t);
        hw->points[n++] = (struct flash_point){c, t, bw};
    }
    hw->flash.grid = hw->points;
    hw->flash.n_grid = n;
    return 0;
}

/* flash.fit, the closed form: given, or fitted here to the points over the
 * parameters named in "free". A profile whose flash point derives from a
 * paper's row (derive_from) is fitted by the cost model once that point is
 * added (cost_resolve_profile), so it need not hold a usable fit here. */
static int read_flash_fit(const cJSON *f, struct hw_profile *hw, const char *path, char *err, size_t errlen)
{
    const cJSON *fit = cJSON_GetObjectItemCaseSensitive(f, "fit");
    if (!cJSON_IsObject(fit))
        return err_set(err, errlen, "%s: missing \"flash.fit\"", path);
    double v[5];
    for (int i = 0; i < 5; i++)
        if (num(fit, "flash.fit", fit_names[i], 0, 0, false, &v[i], path, err, errlen))
            return -1;
    hw->flash.fit = (struct flash_params){v[0], v[1], v[2], v[3], v[4]};
    unsigned free_mask = 0;
    const cJSON *fr = cJSON_GetObjectItemCaseSensitive(fit, "free");
    const cJSON *name;
    cJSON_ArrayForEach(name, fr)
    {
        for (int i = 0; i < 5; i++)
            if (cJSON_IsString(name) && strcmp(name->valuestring, fit_names[i]) == 0)
                free_mask |= 1u << i;
    }
    if (free_mask && !hw->flash_derive.ms && flash_fit(hw->points, hw->flash.n_grid, free_mask, &hw->flash.fit) < 0)
        return err_set(err, errlen, "%s: flash.fit frees more parameters than there are points", path);
    const struct flash_params *fp = &hw->flash.fit;
    if (!hw->flash_derive.ms && !(fp->L0_s > 0 && fp->b1 > 0 && fp->B_max > 0 && fp->IOPS_max > 0 && fp->p > 0))
        return err_set(err, errlen, "%s: flash.fit needs positive L0_s, b1, B_max, IOPS_max, p", path);
    return 0;
}

static int read_flash(const cJSON *f, struct hw_profile *hw, const char *path, char *err,
                      size_t errlen)
{
    if (!cJSON_IsObject(f)) {
        err_set(err, errlen, "%s: missing \"flash\" object", path);
        return -1;
    }
    str(f, "source", hw->flash_source, sizeof hw->flash_source);
    if (num(f, "flash", "sequential_bw", 0, 0, false, &hw->flash.sequential_bw, path, err, errlen))
        return -1;
    if (read_flash_points(f, hw, path, err, errlen) != 0 ||
        read_derive(f, &hw->flash_derive, path, "flash", err, errlen) != 0)
        return -1;
    return read_flash_fit(f, hw, path, err, errlen);
}

#define CRC_ABSENT "not measured (a profile written before calibrate measured the CRC-32C rate): verification unpriced"

/* dram.crc32c_bw_bytes, its buffer size and source: absent, 0 and said so. */
static int read_crc(const cJSON *dram, struct hw_profile *hw, const char *path, char *err, size_t errlen)
{
    snprintf(hw->crc_source, sizeof hw->crc_source, "%s", CRC_ABSENT);
    str(dram, "crc32c_source", hw->crc_source, sizeof hw->crc_source);
    if (num(dram, "dram", "crc32c_bw_bytes", 0, 0, false, &hw->crc_bw, path, err, errlen) ||
        num(dram, "dram", "crc32c_buffer_bytes", 0, 0, false, &hw->crc_buffer_bytes, path, err, errlen))
        return -1;
    if (!hw->crc_bw)
        snprintf(hw->crc_source, sizeof hw->crc_source, "%s", CRC_ABSENT);
    return 0;
}

/* The "dram" object: copy points (row bytes, bandwidth) or what they derive from. */
static int read_dram(const cJSON *o, struct hw_profile *hw, const char *path, char *err, size_t errlen)
{
    const cJSON *dram = cJSON_GetObjectItemCaseSensitive(o, "dram");
    if (!cJSON_IsObject(dram))
        return err_set(err, errlen, "%s: missing \"dram\" object", path);
    str(dram, "source", hw->mem_source, sizeof hw->mem_source);
    if (num(dram, "dram", "per_row_ns", 0, 0, false, &hw->per_row_ns, path, err, errlen))
        return -1;
    const cJSON *cp;
    cJSON_ArrayForEach(cp, cJSON_GetObjectItemCaseSensitive(dram, "copy"))
    {
        if (hw->n_copy == HW_MAX_COPY)
            break;
        double rb, bw;
        char where[64];
        snprintf(where, sizeof where, "dram.copy[%zu]", hw->n_copy);
        if (num(cp, where, "row_bytes", HW_REQUIRED, 0, true, &rb, path, err, errlen) ||
            num(cp, where, "bw_bytes", HW_REQUIRED, 0, true, &bw, path, err, errlen))
            return -1;
        hw->copy_row_bytes[hw->n_copy] = rb;
        hw->copy_bw[hw->n_copy++] = bw;
    }
    if (read_derive(dram, &hw->mem_derive, path, "dram", err, errlen) != 0 || read_crc(dram, hw, path, err, errlen))
        return -1;
    if (!hw->n_copy && !hw->mem_derive.ms)
        return err_set(err, errlen, "%s: dram needs \"copy\" points or \"derive_from\"", path);
    return 0;
}

/* The "compute" object: a rate per dtype, measured or derived. */
static int read_compute(const cJSON *o, struct hw_profile *hw, const char *path, char *err, size_t errlen)
{
    const cJSON *comp = cJSON_GetObjectItemCaseSensitive(o, "compute");
    str(comp, "note", hw->compute_note, sizeof hw->compute_note);
    const cJSON *d;
    cJSON_ArrayForEach(d, cJSON_GetObjectItemCaseSensitive(comp, "dtypes"))
    {
        if (hw->n_compute == HW_MAX_DTYPES)
            break;
        struct compute_rate *c = &hw->compute[hw->n_compute];
        snprintf(c->dtype, sizeof c->dtype, "%s", d->string ? d->string : "");
        char where[64];
        snprintf(where, sizeof where, "compute.dtypes.%.20s", c->dtype);
        if (num(d, where, "bw_bytes", 0, 0, false, &c->bw, path, err, errlen) ||
            num(d, where, "flops", 0, 0, false, &c->flops, path, err, errlen))
            return -1;
        str(d, "source", c->source, sizeof c->source);
        if (read_derive(d, &c->derive, path, "compute", err, errlen) != 0)
            return -1;
        if (c->bw <= 0 && c->derive.ms <= 0)
            return err_set(err, errlen, "%s: compute.dtypes.%s needs bw_bytes or derive_from", path, c->dtype);
        hw->n_compute++;
    }
    if (!hw->n_compute)
        return err_set(err, errlen, "%s: compute.dtypes is empty", path);
    return 0;
}

static const char *xfer_keys[] = {"h2d_pinned_bw_bytes", "h2d_pageable_bw_bytes", "d2h_pinned_bw_bytes",
                                   "d2h_pageable_bw_bytes"};

static double *xfer_field(struct hw_device *d, int k)
{
    double *f[] = {d->h2d_pinned_bw, d->h2d_pageable_bw, d->d2h_pinned_bw, d->d2h_pageable_bw};
    return f[k];
}

/* device.transfers: per copy size (ascending), the four bandwidths. */
static int read_transfers(const cJSON *dev, struct hw_device *d, const char *path, char *err, size_t errlen)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(dev, "transfers"))
    {
        if (d->n_xfer == HW_MAX_XFER)
            break;
        char where[64];
        size_t i = d->n_xfer;
        snprintf(where, sizeof where, "device.transfers[%zu]", i);
        if (num(t, where, "bytes", HW_REQUIRED, 0, true, &d->xfer_bytes[i], path, err, errlen))
            return -1;
        if (i > 0 && d->xfer_bytes[i] <= d->xfer_bytes[i - 1])
            return err_set(err, errlen, "%s: \"%s.bytes\" must be larger than the size before it", path, where);
        for (int k = 0; k < 4; k++)
            if (num(t, where, xfer_keys[k], HW_REQUIRED, 0, true, &xfer_field(d, k)[i], path, err, errlen))
                return -1;
        d->n_xfer++;
    }
    if (!d->n_xfer)
        return err_set(err, errlen, "%s: device.transfers is empty", path);
    return 0;
}

/* The "device" object, when there is one; and whether the profile is
 * of an emulated device, refused unless flags allow it. */
static int read_device(const cJSON *o, unsigned flags, struct hw_profile *hw, const char *path, char *err,
                       size_t errlen)
{
    hw->emulated = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "emulated"));
    str(o, "emulated_note", hw->emulated_note, sizeof hw->emulated_note);
    const cJSON *dev = cJSON_GetObjectItemCaseSensitive(o, "device");
    struct hw_device *d = &hw->device;
    if (dev) {
        if (!cJSON_IsObject(dev))
            return err_set(err, errlen, "%s: \"device\" is not an object", path);
        d->present = true;
        d->host_visible = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(dev, "host_visible"));
        str(dev, "name", d->name, sizeof d->name);
        str(dev, "source", d->source, sizeof d->source);
        /* unified memory copies nothing: its transfers are absent */
        bool xfers = !d->host_visible || cJSON_HasObjectItem(dev, "transfers");
        if ((xfers && read_transfers(dev, d, path, err, errlen) != 0) ||
            num(dev, "device", "launch_s", HW_REQUIRED, 0, true, &d->launch_s, path, err, errlen) ||
            num(dev, "device", "sync_s", HW_REQUIRED, 0, true, &d->sync_s, path, err, errlen) ||
            num(dev, "device", "event_s", HW_REQUIRED, 0, true, &d->event_s, path, err, errlen))
            return -1;
    }
    if (hw->emulated && !(flags & HW_LOAD_ALLOW_EMULATED))
        return err_set(err, errlen,
                       "%s: a profile of an emulated device (%s backend on %s): its rates check the pipeline and "
                       "are no GPU's; --allow-emulated (predict, replay) prices with it all the same",
                       path, hw->backend, d->name[0] ? d->name : "an unnamed device");
    return 0;
}

const char *const hw_io_engine_names[HW_IO_ENGINES] = {"psync", "io_uring"};

int hw_io_engine(const char *name)
{
    for (int i = 0; i < HW_IO_ENGINES; i++)
        if (name && strcmp(name, hw_io_engine_names[i]) == 0)
            return i;
    return -1;
}

#define FIXED_ABSENT "absent from the profile (written before calibrate measured fixed costs): priced as 0"

/* A list of {xk, yk} pairs under fx's key, xk ascending (and > 0; yk > 0
 * too when y_positive), at most HW_MAX_TAIL, into x, y and *n. */
struct pair_list {
    const char *key, *xk, *yk;
    bool y_positive;
    double *x, *y;
    size_t *n;
};

static int read_pairs(const cJSON *fx, const struct pair_list *l, const char *path, char *err, size_t errlen)
{
    const cJSON *t;
    cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(fx, l->key))
    {
        if (*l->n == HW_MAX_TAIL)
            break;
        char where[64];
        size_t i = *l->n;
        snprintf(where, sizeof where, "fixed.%s[%zu]", l->key, i);
        if (num(t, where, l->xk, HW_REQUIRED, 0, true, &l->x[i], path, err, errlen) ||
            num(t, where, l->yk, HW_REQUIRED, 0, l->y_positive, &l->y[i], path, err, errlen))
            return -1;
        if (i > 0 && l->x[i] <= l->x[i - 1])
            return err_set(err, errlen, "%s: \"%s.%s\" must be more than the entry before it", path, where, l->xk);
        (*l->n)++;
    }
    return 0;
}

/* fixed.tail: per active reader threads, the batch tail factor (>= 1 in
 * a measurement; taken as given), threads ascending. */
static int read_tail(const cJSON *fx, struct hw_fixed *f, const char *path, char *err, size_t errlen)
{
    struct pair_list l = {"tail", "threads", "factor", true, f->tail_threads, f->tail_factor, &f->n_tail};
    return read_pairs(fx, &l, path, err, errlen);
}

/* fixed.job_cold: [{"gap_s", "job_s"}], waits ascending. */
static int read_cold(const cJSON *fx, struct hw_fixed *f, const char *path, char *err, size_t errlen)
{
    struct pair_list l = {"job_cold", "gap_s", "job_s", false, f->cold_gap_s, f->job_cold_s, &f->n_cold};
    return read_pairs(fx, &l, path, err, errlen);
}

/* fixed.read_s: {"psync": {"s", "bw_bytes"}, "io_uring": {...}}, either absent. */
static int read_per_read(const cJSON *fx, struct hw_fixed *f, const char *path, char *err, size_t errlen)
{
    const cJSON *rs = cJSON_GetObjectItemCaseSensitive(fx, "read_s");
    for (int e = 0; e < HW_IO_ENGINES; e++) {
        const cJSON *o = cJSON_GetObjectItemCaseSensitive(rs, hw_io_engine_names[e]);
        char where[64];
        snprintf(where, sizeof where, "fixed.read_s.%s", hw_io_engine_names[e]);
        if (o && (num(o, where, "s", HW_REQUIRED, 0, false, &f->read_s[e], path, err, errlen) ||
                  num(o, where, "bw_bytes", 0, 0, false, &f->read_bw[e], path, err, errlen)))
            return -1;
    }
    return 0;
}

/* The "fixed" object (hw_profile.h: struct hw_fixed); absent: every term 0, said so. */
static int read_fixed(const cJSON *o, struct hw_fixed *f, const char *path, char *err, size_t errlen)
{
    const cJSON *fx = cJSON_GetObjectItemCaseSensitive(o, "fixed");
    char *src[] = {f->read_source, f->batch_source, f->tail_source, f->job_source, f->token_source};
    const char *keys[] = {"read_source", "batch_source", "tail_source", "job_source", "token_source"};
    for (int i = 0; i < 5; i++) {
        snprintf(src[i], 300, "%s", FIXED_ABSENT);
        if (fx)
            str(fx, keys[i], src[i], 300);
    }
    if (!fx)
        return 0;
    if (!cJSON_IsObject(fx))
        return err_set(err, errlen, "%s: \"fixed\" is not an object", path);
    f->present = true;
    if (read_per_read(fx, f, path, err, errlen) || read_tail(fx, f, path, err, errlen) ||
        num(fx, "fixed", "batch_s", 0, 0, false, &f->batch_s, path, err, errlen) ||
        num(fx, "fixed", "team_threads", 0, 0, false, &f->team_threads, path, err, errlen) ||
        num(fx, "fixed", "min_parallel_work", 0, 0, false, &f->min_parallel_work, path, err, errlen) ||
        num(fx, "fixed", "job_hot_s", 0, 0, false, &f->job_hot_s, path, err, errlen) ||
        read_cold(fx, f, path, err, errlen) ||
        num(fx, "fixed", "token_s", 0, 0, false, &f->token_s, path, err, errlen))
        return -1;
    return 0;
}

/* The profile's name, backend and reader threads. */
static int read_head(const cJSON *o, struct hw_profile *hw, const char *path, char *err, size_t errlen)
{
    str(o, "name", hw->name, sizeof hw->name);
    str(o, "backend", hw->backend, sizeof hw->backend);
    uint64_t io_threads = 32;
    if (cJSON_HasObjectItem(o, "io_threads") &&
        json_get_u64(o, "io_threads", 1, FB_MAX_THREADS, &io_threads, path, err, errlen))
        return -1;
    hw->io_threads = (unsigned)io_threads;
    if (!hw->name[0] || !hw->backend[0])
        return err_set(err, errlen, "%s: needs \"name\" and \"backend\"", path);
    return 0;
}

int hw_profile_load(const struct fb_settings *set, const char *name, struct hw_profile *hw, char *err,
                    size_t errlen)
{
    return hw_profile_load_flags(set, name, 0, hw, err, errlen);
}

int hw_profile_load_flags(const struct fb_settings *set, const char *name, unsigned flags, struct hw_profile *hw,
                          char *err, size_t errlen)
{
    memset(hw, 0, sizeof *hw);
    if (config_file_path(set, "hw", name, hw->path, sizeof hw->path) != 0)
        return err_set(err, errlen, "hardware profile %.200s...: the name is too long for a path", name);
    char *text = read_text_file(hw->path, NULL);
    if (!text && errno == ENOENT)
        return hw_profile_missing(set, name, hw->path, strerror(errno), err, errlen);
    if (!text)
        return err_set(err, errlen, "hardware profile %s: cannot read %s: %s", name, hw->path, strerror(errno));
    cJSON *o = cJSON_Parse(text);
    free(text);
    const char *path = hw->path;
    int rc = -1;
    if (!cJSON_IsObject(o))
        err_set(err, errlen, "%s: not a JSON object", path);
    else if (read_head(o, hw, path, err, errlen) == 0 && read_device(o, flags, hw, path, err, errlen) == 0 &&
             read_flash(cJSON_GetObjectItemCaseSensitive(o, "flash"), hw, path, err, errlen) == 0 &&
             read_dram(o, hw, path, err, errlen) == 0 && read_compute(o, hw, path, err, errlen) == 0 &&
             read_fixed(o, &hw->fixed, path, err, errlen) == 0)
        rc = 0;
    cJSON_Delete(o);
    return rc;
}

int hw_flash_from_sweep(const char *path, struct hw_profile *hw, bool *bypassed, char *err, size_t errlen)
{
    cJSON *s = read_json_file(path);
    if (!s)
        return err_set(err, errlen, "cannot read sweep results %s (missing or not JSON)", path);
    const cJSON *pt;
    size_t n = 0;
    cJSON_ArrayForEach(pt, cJSON_GetObjectItemCaseSensitive(s, "points"))
    {
        if (!cJSON_HasObjectItem(pt, "chunk_bytes") || !cJSON_HasObjectItem(pt, "threads") ||
            !cJSON_HasObjectItem(pt, "bw_bytes")) {
            err_set(err, errlen, "%s: points[%zu] lacks chunk_bytes, threads or bw_bytes", path, n);
            cJSON_Delete(s);
            return -1;
        }
        char what[3][64];
        uint64_t chunk, threads;
        double bw;
        snprintf(what[0], sizeof what[0], "points[%zu].chunk_bytes", n);
        snprintf(what[1], sizeof what[1], "points[%zu].threads", n);
        snprintf(what[2], sizeof what[2], "points[%zu].bw_bytes", n);
        /* a sweep's chunks are whole byte counts, its threads as the options allow */
        if (json_number_u64(cJSON_GetObjectItemCaseSensitive(pt, "chunk_bytes"), what[0], 1, (uint64_t)1 << 40,
                            &chunk, path, err, errlen) ||
            json_number_u64(cJSON_GetObjectItemCaseSensitive(pt, "threads"), what[1], 1, FB_MAX_THREADS, &threads,
                            path, err, errlen) ||
            json_number_finite(cJSON_GetObjectItemCaseSensitive(pt, "bw_bytes"), what[2], 1, 1e18, &bw, path, err,
                               errlen)) {
            cJSON_Delete(s);
            return -1;
        }
        if (n < HW_MAX_POINTS)
            hw->points[n++] = (struct flash_point){(double)chunk, (double)threads, bw};
    }
    const cJSON *direct = cJSON_GetObjectItemCaseSensitive(s, "page_cache_bypassed");
    *bypassed = cJSON_IsTrue(direct); /* the profile claims no more than its sweep did */
    snprintf(hw->flash_source, sizeof hw->flash_source, "flashbed sweep %s (%s)", path,
             cJSON_IsTrue(direct) ? "direct I/O" : "page cache used: not honest flash numbers");
    cJSON_Delete(s);
    if (n < 6)
        return err_set(err, errlen, "%s has %zu points; the closed form needs at least 6 (chunk x threads)", path, n);
    hw->flash.grid = hw->points;
    hw->flash.n_grid = n;
    return 0;
}

/* y at x over n points (xs ascending): log-interpolated in x, clamped. */
static double interp_log(const double *xs, const double *ys, size_t n, double x)
{
    if (!n)
        return 0;
    if (x <= xs[0])
        return ys[0];
    for (size_t i = 1; i < n; i++)
        if (x <= xs[i]) {
            double a = xs[i - 1], b = xs[i];
            double u = (log(x) - log(a)) / (log(b) - log(a));
            return ys[i - 1] + u * (ys[i] - ys[i - 1]);
        }
    return ys[n - 1];
}

double hw_copy_bw(const struct hw_profile *hw, double row_bytes)
{
    return interp_log(hw->copy_row_bytes, hw->copy_bw, hw->n_copy, row_bytes);
}

double hw_device_bw(const struct hw_profile *hw, bool h2d, bool pinned, double bytes)
{
    const struct hw_device *d = &hw->device;
    const double *bw = h2d ? (pinned ? d->h2d_pinned_bw : d->h2d_pageable_bw)
                           : (pinned ? d->d2h_pinned_bw : d->d2h_pageable_bw);
    return d->present && !d->host_visible && d->n_xfer ? interp_log(d->xfer_bytes, bw, d->n_xfer, bytes) : 0;
}

double hw_read_tail(const struct hw_profile *hw, double threads)
{
    const struct hw_fixed *f = &hw->fixed;
    if (!f->n_tail || threads <= 0)
        return 1;
    double x[HW_MAX_TAIL];
    for (size_t i = 0; i < f->n_tail; i++)
        x[i] = f->tail_threads[i];
    return interp_log(x, f->tail_factor, f->n_tail, threads);
}

double hw_job_cold(const struct hw_profile *hw, double gap_s)
{
    const struct hw_fixed *f = &hw->fixed;
    return f->n_cold ? interp_log(f->cold_gap_s, f->job_cold_s, f->n_cold, gap_s > 0 ? gap_s : 0) : 0;
}

struct compute_rate *hw_compute(struct hw_profile *hw, const char *dtype)
{
    for (size_t i = 0; i < hw->n_compute; i++)
        if (strcmp(hw->compute[i].dtype, dtype) == 0)
            return &hw->compute[i];
    return NULL;
}

/* "emulated" (and its note) and "device", for a profile of a device. */
static void device_to_json(const struct hw_profile *hw, cJSON *o)
{
    const struct hw_device *d = &hw->device;
    if (!d->present && !hw->emulated)
        return;
    cJSON_AddBoolToObject(o, "emulated", hw->emulated);
    if (hw->emulated)
        cJSON_AddStringToObject(o, "emulated_note", hw->emulated_note);
    if (!d->present)
        return;
    cJSON *j = cJSON_AddObjectToObject(o, "device");
    cJSON_AddStringToObject(j, "name", d->name);
    cJSON_AddStringToObject(j, "source", d->source);
    if (d->host_visible)
        cJSON_AddBoolToObject(j, "host_visible", true);
    cJSON *ts = d->n_xfer || !d->host_visible ? cJSON_AddArrayToObject(j, "transfers") : NULL;
    for (size_t i = 0; i < d->n_xfer; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddNumberToObject(t, "bytes", d->xfer_bytes[i]);
        for (int k = 0; k < 4; k++)
            cJSON_AddNumberToObject(t, xfer_keys[k], xfer_field((struct hw_device *)d, k)[i]);
        cJSON_AddItemToArray(ts, t);
    }
    cJSON_AddNumberToObject(j, "launch_s", d->launch_s);
    cJSON_AddNumberToObject(j, "sync_s", d->sync_s);
    cJSON_AddNumberToObject(j, "event_s", d->event_s);
}

/* "fixed", for a profile that has it (hw_profile.h: struct hw_fixed). */
/* [{xk: x[i], yk: y[i]}, ...] under j's key: read_pairs' list. */
static void write_pairs(cJSON *j, const char *key, const char *xk, const char *yk, const double *x, const double *y,
                        size_t n)
{
    cJSON *arr = cJSON_AddArrayToObject(j, key);
    for (size_t i = 0; i < n; i++) {
        cJSON *t = cJSON_CreateObject();
        cJSON_AddNumberToObject(t, xk, x[i]);
        cJSON_AddNumberToObject(t, yk, y[i]);
        cJSON_AddItemToArray(arr, t);
    }
}

static void fixed_to_json(const struct hw_fixed *f, cJSON *o)
{
    if (!f->present)
        return;
    cJSON *j = cJSON_AddObjectToObject(o, "fixed");
    cJSON *rs = cJSON_AddObjectToObject(j, "read_s");
    for (int e = 0; e < HW_IO_ENGINES; e++) {
        cJSON *r = cJSON_AddObjectToObject(rs, hw_io_engine_names[e]);
        cJSON_AddNumberToObject(r, "s", f->read_s[e]);
        cJSON_AddNumberToObject(r, "bw_bytes", f->read_bw[e]);
    }
    cJSON_AddStringToObject(j, "read_source", f->read_source);
    cJSON_AddNumberToObject(j, "batch_s", f->batch_s);
    cJSON_AddStringToObject(j, "batch_source", f->batch_source);
    write_pairs(j, "tail", "threads", "factor", f->tail_threads, f->tail_factor, f->n_tail);
    cJSON_AddStringToObject(j, "tail_source", f->tail_source);
    cJSON_AddNumberToObject(j, "team_threads", f->team_threads);
    cJSON_AddNumberToObject(j, "min_parallel_work", f->min_parallel_work);
    cJSON_AddNumberToObject(j, "job_hot_s", f->job_hot_s);
    write_pairs(j, "job_cold", "gap_s", "job_s", f->cold_gap_s, f->job_cold_s, f->n_cold);
    cJSON_AddStringToObject(j, "job_source", f->job_source);
    cJSON_AddNumberToObject(j, "token_s", f->token_s);
    cJSON_AddStringToObject(j, "token_source", f->token_source);
}

cJSON *hw_profile_to_json(const struct hw_profile *hw)
{
    cJSON *o = cJSON_CreateObject();
    cJSON_AddStringToObject(o, "name", hw->name);
    cJSON_AddStringToObject(o, "backend", hw->backend);
    cJSON_AddNumberToObject(o, "io_threads", hw->io_threads);
    device_to_json(hw, o);
    cJSON *f = cJSON_AddObjectToObject(o, "flash");
    cJSON_AddStringToObject(f, "source", hw->flash_source);
    cJSON_AddNumberToObject(f, "sequential_bw", hw->flash.sequential_bw);
    cJSON *pts = cJSON_AddArrayToObject(f, "points");
    for (size_t i = 0; i < hw->flash.n_grid; i++) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddNumberToObject(p, "chunk_bytes", hw->points[i].chunk);
        cJSON_AddNumberToObject(p, "threads", hw->points[i].threads);
        cJSON_AddNumberToObject(p, "bw_bytes", hw->points[i].bw);
        cJSON_AddItemToArray(pts, p);
    }
    cJSON *fit = cJSON_AddObjectToObject(f, "fit");
    double v[5] = {hw->flash.fit.L0_s, hw->flash.fit.b1, hw->flash.fit.B_max,
                   hw->flash.fit.IOPS_max, hw->flash.fit.p};
    for (int i = 0; i < 5; i++)
        cJSON_AddNumberToObject(fit, fit_names[i], v[i]);
    cJSON *d = cJSON_AddObjectToObject(o, "dram");
    cJSON_AddStringToObject(d, "source", hw->mem_source);
    cJSON_AddNumberToObject(d, "per_row_ns", hw->per_row_ns);
    cJSON *copy = cJSON_AddArrayToObject(d, "copy");
    for (size_t i = 0; i < hw->n_copy; i++) {
        cJSON *p = cJSON_CreateObject();
        cJSON_AddNumberToObject(p, "row_bytes", hw->copy_row_bytes[i]);
        cJSON_AddNumberToObject(p, "bw_bytes", hw->copy_bw[i]);
        cJSON_AddItemToArray(copy, p);
    }
    if (hw->crc_bw > 0) {
        cJSON_AddNumberToObject(d, "crc32c_bw_bytes", hw->crc_bw);
        cJSON_AddNumberToObject(d, "crc32c_buffer_bytes", hw->crc_buffer_bytes);
        cJSON_AddStringToObject(d, "crc32c_source", hw->crc_source);
    }
    cJSON *c = cJSON_AddObjectToObject(o, "compute");
    cJSON_AddStringToObject(c, "note", hw->compute_note);
    cJSON *dt = cJSON_AddObjectToObject(c, "dtypes");
    for (size_t i = 0; i < hw->n_compute; i++) {
        cJSON *r = cJSON_AddObjectToObject(dt, hw->compute[i].dtype);
        cJSON_AddNumberToObject(r, "bw_bytes", hw->compute[i].bw);
        cJSON_AddNumberToObject(r, "flops", hw->compute[i].flops);
        cJSON_AddStringToObject(r, "source", hw->compute[i].source);
    }
    fixed_to_json(&hw->fixed, o);
    return o;
}
