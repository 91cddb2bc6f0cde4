/* The plan's disk use and --clean (harness/reproduce_disk.h). */
#include "harness/reproduce_disk.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache/unit_geometry.h"
#include "common/errbuf.h"
#include "common/fsutil.h"
#include "common/model_shape.h"
#include "common/parse.h"
#include "engine/model/dtype.h"
#include "engine/model/model_format.h"

/* The value after flag among the step's arguments, or NULL. */
static const char *arg_after(const struct repro_step *s, const char *flag)
{
    for (char **a = s->args; *a && a[1]; a++)
        if (!strcmp(*a, flag))
            return a[1];
    return NULL;
}

static bool is(const struct repro_step *s, const char *a0, const char *a1)
{
    return !strcmp(s->args[0], a0) && (!a1 || (s->args[1] && !strcmp(s->args[1], a1)));
}

/* A converted model folder: ffn.bin's padded bundles and their checksums,
 * dram.bin's matrices in the dtype, its vectors (norms, FFN biases) in f32. */
static uint64_t model_bytes(const struct model_shape *s, enum fb_dtype t)
{
    struct param_counts c;
    model_shape_params(s, &c);
    uint64_t cells = (uint64_t)s->n_layers * s->d_ff;
    uint64_t ffn_vectors = c.ffn - cells * unit_neuron_weights(s);
    return cells * ffn_bundle_stride(s, t) + cells * 4 + wtype_row_bytes(t, c.embeddings + c.lm_head + c.attention) +
           (c.norms + ffn_vectors) * 4;
}

/* Apparent bytes of path: a file's size, a folder's files summed. */
static uint64_t tree_bytes(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return 0;
    if (!S_ISDIR(st.st_mode))
        return S_ISREG(st.st_mode) ? (uint64_t)st.st_size : 0;
    uint64_t sum = 0;
    DIR *d = opendir(path);
    for (struct dirent *e; d && (e = readdir(d));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, ".."))
            continue;
        char sub[8400];
        snprintf(sub, sizeof sub, "%s/%s", path, e->d_name);
        sum += tree_bytes(sub);
    }
    if (d)
        closedir(d);
    return sum;
}

static bool step_finished(const struct repro_plan *p, const struct repro_step *s)
{
    char marker[4400];
    snprintf(marker, sizeof marker, "%s/steps/%s.json", p->config.out, s->id);
    return path_exists(marker);
}

/* The shape and dtype of the model a step makes or reads (make's --shape,
 * found again for the convert reading make's --out). */
static int shape_of_make(const struct repro_plan *p, const char *hf_dir, struct model_shape *shape, char *err,
                         size_t errlen)
{
    for (size_t i = 0; i < p->n; i++) {
        const struct repro_step *s = &p->steps[i];
        const char *out = arg_after(s, "--out"), *name = arg_after(s, "--shape");
        if (is(s, "model", "make") && out && name && !strcmp(out, hf_dir))
            return model_shape_load(p->config.settings, name, shape, err, errlen);
    }
    return err_set(err, errlen, "no step makes %s", hf_dir);
}

/* A converted model's folder: by its shape (a synthetic model) or by its
 * checkpoint's size (a llama2.c checkpoint, converted as it is). */
static int convert_bytes(const struct repro_plan *p, const struct repro_step *s, uint64_t *bytes,
                         struct model_shape *shape, enum fb_dtype *dtype, char *err, size_t errlen)
{
    const char *d = arg_after(s, "--dtype");
    *dtype = DTYPE_F32;
    if (d && wtype_parse(d, dtype) != 0)
        return err_set(err, errlen, "step %s: dtype %s", s->id, d);
    struct stat st;
    if (stat(s->args[1], &st) == 0 && S_ISREG(st.st_mode)) { /* a checkpoint */
        shape->n_layers = 0;
        *bytes = (uint64_t)st.st_size;
        return 0;
    }
    if (shape_of_make(p, s->args[1], shape, err, errlen) != 0)
        return -1;
    *bytes = model_bytes(shape, *dtype);
    return 0;
}

/* The models kept, the predictors trained into them, the HF folders' peak. */
struct model_made {
    const char *dir;
    struct model_shape shape;
    enum fb_dtype dtype;
};

static int add_model(const struct repro_plan *p, const struct repro_step *s, struct repro_disk *d,
                     struct model_made *m, char *err, size_t errlen)
{
    uint64_t bytes = 0;
    if (convert_bytes(p, s, &bytes, &m->shape, &m->dtype, err, errlen) != 0)
        return -1;
    m->dir = arg_after(s, "--out");
    d->models += bytes;
    bool there = m->dir && path_exists(m->dir);
    d->need_out += there ? 0 : bytes;
    if (m->shape.n_layers && !there) { /* the Hugging Face folder it was converted from, at its peak */
        struct param_counts c;
        model_shape_params(&m->shape, &c);
        uint64_t hf = wtype_row_bytes(m->dtype, c.total);
        d->hf_peak = hf > d->hf_peak ? hf : d->hf_peak;
    }
    return 0;
}

static void add_predictor(const struct repro_step *s, const struct model_made *models, size_t n,
                          struct repro_disk *d, bool done)
{
    const char *dir = arg_after(s, "--model"), *rank = arg_after(s, "--rank");
    uint64_t r = 0;
    char err[128];
    if (!dir || !rank || parse_uint(rank, &r, err, sizeof err) != 0)
        return;
    for (size_t i = 0; i < n; i++) {
        const struct model_shape *sh = &models[i].shape;
        if (strcmp(models[i].dir, dir) || !sh->n_layers)
            continue;
        uint64_t per_layer = r * sh->d_model + sh->d_ff * r + sh->d_ff;
        uint64_t bytes = (uint64_t)sh->n_layers * wtype_row_bytes(models[i].dtype, per_layer);
        d->predictors += bytes;
        d->need_out += done ? 0 : bytes;
    }
}

/* A synthetic trace at most: every set of both kinds a bitset and its header. */
static int add_trace(const struct repro_plan *p, const struct repro_step *s, struct repro_disk *d, bool done,
                     char *err, size_t errlen)
{
    struct model_shape sh;
    uint64_t tokens;
    const char *t = arg_after(s, "--tokens");
    if (model_shape_load(p->config.settings, arg_after(s, "--shape"), &sh, err, errlen) != 0 || !t ||
        parse_uint(t, &tokens, err, errlen) != 0)
        return -1;
    uint64_t bytes = tokens * sh.n_layers * 2 * ((sh.d_ff + 7) / 8 + 16) + 4096;
    d->traces += bytes;
    d->need_out += done ? 0 : bytes;
    return 0;
}

static int add_scratch(const struct repro_step *s, struct repro_disk *d, char *err, size_t errlen)
{
    uint64_t size;
    const char *file = arg_after(s, "--file"), *sz = arg_after(s, "--size");
    if (!file || !sz || parse_size(sz, &size, err, errlen) != 0)
        return 0;
    if (size <= d->scratch)
        return 0;
    struct stat st;
    uint64_t have = stat(file, &st) == 0 ? (uint64_t)st.st_size : 0;
    d->scratch = size;
    d->need_disk = size > have ? size - have : 0;
    snprintf(d->scratch_path, sizeof d->scratch_path, "%s", file);
    return 0;
}

static int add_step(const struct repro_plan *p, size_t i, struct repro_disk *d, struct model_made *models,
                    size_t *n_models, char *err, size_t errlen)
{
    const struct repro_step *s = &p->steps[i];
    bool done = step_finished(p, s);
    bool plots = false;
    for (char **a = s->args; *a; a++)
        plots |= !strcmp(*a, "--plot");
    uint64_t results = plots ? REPRO_DISK_RESULTS_PLOTS : REPRO_DISK_RESULTS_PER_STEP;
    d->results += results;
    d->need_out += done ? 0 : results;
    if (is(s, "convert", NULL))
        return add_model(p, s, d, &models[(*n_models)++], err, errlen);
    if (is(s, "predictor", "train"))
        add_predictor(s, models, *n_models, d, done);
    if (is(s, "trace", "synth"))
        return add_trace(p, s, d, done, err, errlen);
    if (is(s, "sweep", NULL))
        return add_scratch(s, d, err, errlen);
    return 0;
}

int repro_disk_estimate(const struct repro_plan *p, struct repro_disk *d, char *err, size_t errlen)
{
    memset(d, 0, sizeof *d);
    struct model_made *models = calloc(p->n ? p->n : 1, sizeof *models);
    if (!models)
        return err_set(err, errlen, "out of memory");
    size_t n_models = 0;
    int rc = 0;
    for (size_t i = 0; i < p->n && rc == 0; i++)
        rc = add_step(p, i, d, models, &n_models, err, errlen);
    free(models);
    d->need_out += d->hf_peak;
    d->total = d->models + d->predictors + d->hf_peak + d->scratch + d->traces + d->results;
    return rc;
}

/* The file system of path's nearest existing folder: its id and free bytes. */
static int fs_of(const char *path, dev_t *dev, uint64_t *free_b)
{
    char dir[4200];
    snprintf(dir, sizeof dir, "%s", path);
    struct stat st;
    while (stat(dir, &st) != 0) {
        char up[4200];
        dir_of(dir, up, sizeof up);
        if (!strcmp(up, dir))
            return -1;
        snprintf(dir, sizeof dir, "%s", up);
    }
    *dev = st.st_dev;
    return free_bytes(dir, free_b);
}

int repro_disk_check(const struct repro_plan *p, const struct repro_disk *d, char *err, size_t errlen)
{
    dev_t out_dev = 0, disk_dev = 0;
    uint64_t out_free = 0, disk_free = 0;
    if (fs_of(p->config.out, &out_dev, &out_free) != 0)
        return 0; /* unknown: the steps say so if the disk fills */
    bool scratch = d->scratch_path[0] && fs_of(d->scratch_path, &disk_dev, &disk_free) == 0;
    bool same = !scratch || disk_dev == out_dev;
    uint64_t need = d->need_out + (same ? d->need_disk : 0);
    if (need > out_free)
        return err_set(err, errlen,
                       "%s: the study needs %.1f MiB more there and the disk has %.1f MiB free: free some room, "
                       "or choose another --out%s",
                       p->config.out, need / 1048576.0, out_free / 1048576.0, same && d->need_disk ? " or --disk" : "");
    if (!same && d->need_disk > disk_free)
        return err_set(err, errlen, "%s: Fig. 2b's scratch file needs %.1f MiB and the disk has %.1f MiB free: "
                       "choose another --disk", d->scratch_path, d->need_disk / 1048576.0, disk_free / 1048576.0);
    return 0;
}

/* Whether the step made a model folder: a conversion, or `model make`'s
 * Hugging Face folder (normally removed by the step after it). */
static const char *made_model(const struct repro_step *s)
{
    return is(s, "convert", NULL) || is(s, "model", "make") ? arg_after(s, "--out") : NULL;
}

/* The plan's scratch file: the --file of its sweeps, the study's own name. */
static const char *plan_scratch(const struct repro_plan *p)
{
    for (size_t i = 0; i < p->n; i++)
        if (is(&p->steps[i], "sweep", NULL) && arg_after(&p->steps[i], "--file"))
            return arg_after(&p->steps[i], "--file");
    return NULL;
}

uint64_t repro_clean_list(const struct repro_plan *p, repro_clean_fn fn, void *ctx)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < p->n; i++) {
        const char *dir = made_model(&p->steps[i]);
        if (!dir || !step_finished(p, &p->steps[i]) || !path_exists(dir))
            continue;
        uint64_t b = tree_bytes(dir);
        sum += b;
        if (fn)
            fn(ctx, dir, b);
    }
    const char *scratch = plan_scratch(p);
    if (scratch && path_exists(scratch)) {
        uint64_t b = tree_bytes(scratch);
        sum += b;
        if (fn)
            fn(ctx, scratch, b);
    }
    return sum;
}

/* The step wrote into (or removed) a folder --clean removes: its marker
 * goes too, so that it runs again after the folder is made again. */
static bool touches(const struct repro_plan *p, const struct repro_step *s)
{
    const char *target = is(s, "predictor", "train") ? arg_after(s, "--model")
                         : !strcmp(s->args[0], REPRO_REMOVE) ? s->args[1] : made_model(s);
    if (!target)
        return false;
    for (size_t i = 0; i < p->n; i++) {
        const char *dir = made_model(&p->steps[i]);
        if (dir && !strcmp(dir, target))
            return true;
    }
    return false;
}

/* The markers of the steps that made or wrote into the folders --clean
 * removes (markers first: an interrupted clean leaves steps to redo). */
static int clean_markers(const struct repro_plan *p, char *err, size_t errlen)
{
    for (size_t i = 0; i < p->n; i++) {
        const struct repro_step *s = &p->steps[i];
        char marker[4400];
        snprintf(marker, sizeof marker, "%s/steps/%s.json", p->config.out, s->id);
        if (touches(p, s) && unlink(marker) != 0 && errno != ENOENT)
            return err_set(err, errlen, "%s: cannot remove: %s", marker, strerror(errno));
    }
    return 0;
}

int repro_clean(const struct repro_plan *p, uint64_t *removed, char *err, size_t errlen)
{
    *removed = 0;
    const char *scratch = plan_scratch(p);
    /* the folders' own steps are finished now; once their markers are gone
     * they are not, so which folders to remove is decided first */
    bool *gone = calloc(p->n ? p->n : 1, sizeof *gone);
    if (!gone)
        return err_set(err, errlen, "out of memory");
    for (size_t i = 0; i < p->n; i++)
        gone[i] = made_model(&p->steps[i]) && step_finished(p, &p->steps[i]);
    int rc = clean_markers(p, err, errlen);
    for (size_t i = 0; i < p->n && rc == 0; i++) {
        const char *dir = made_model(&p->steps[i]);
        if (!gone[i] || !path_exists(dir))
            continue;
        uint64_t b = tree_bytes(dir);
        if (fs_remove_tree(dir) != 0)
            rc = err_set(err, errlen, "%s: cannot remove: %s", dir, strerror(errno));
        else
            *removed += b;
    }
    free(gone);
    if (rc != 0)
        return -1;
    if (scratch && path_exists(scratch)) {
        uint64_t b = tree_bytes(scratch);
        if (unlink(scratch) != 0)
            return err_set(err, errlen, "%s: cannot remove: %s", scratch, strerror(errno));
        *removed += b;
    }
    return 0;
}

