#include "cli/shared.h"

#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "common/atomic_file.h"
#include "common/fsutil.h"
#include "common/json_file.h"
#include "common/log.h"
#include "common/out_manifest.h"
#include "common/out_path.h"
#include "common/provenance.h"
#include "common/settings.h"

int write_json_file(struct out_manifest *folder, const char *path, const cJSON *json)
{
    char err[4400]; /* room for two paths */
    if (atomic_write_json(folder, path, json, err, sizeof err) == 0)
        return 0;
    fb_error("%s", err);
    return -1;
}

int write_text_file(struct out_manifest *folder, const char *path, const char *text)
{
    char err[4400];
    if (atomic_write_text(folder, path, text, err, sizeof err) == 0)
        return 0;
    fb_error("%s", err);
    return -1;
}

int write_file_set(struct out_manifest *folder, const char *dir, const cJSON *json, const char *json_name,
                   const char *const *names, const char *const *texts, int n)
{
    char err[4400], path[4200];
    struct atomic_set set = {.n = 0, .folder = folder};
    snprintf(path, sizeof path, "%s/%s", dir, json_name);
    int rc = atomic_set_json(&set, path, json, err, sizeof err);
    for (int i = 0; i < n && rc == 0; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        rc = atomic_set_text(&set, path, texts[i], err, sizeof err);
    }
    if (rc == 0)
        rc = atomic_set_commit(&set, err, sizeof err);
    else
        atomic_set_abort(&set);
    if (rc != 0)
        fb_error("%s", err);
    return rc;
}

int out_dir_ok(const char *what, const char *dir)
{
    char err[4400];
    if (out_dir_check(dir, err, sizeof err) == 0)
        return 0;
    fb_error("%s: %s", what, err);
    return -1;
}

/* A result folder flashbed wrote before folders had a list: no list, and
 * the command's result file (names[0]) says flashbed made it. */
static bool written_before_lists(const char *dir, const char *const *names)
{
    char path[4400];
    snprintf(path, sizeof path, "%s/%s", dir, OUT_MANIFEST_NAME);
    if (!names || !names[0] || path_exists(path))
        return false;
    snprintf(path, sizeof path, "%s/%s", dir, names[0]);
    cJSON *j = path_exists(path) ? read_json_file(path) : NULL;
    const cJSON *tool = cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(j, "provenance"), "tool");
    bool ours = cJSON_IsString(tool) && !strcmp(tool->valuestring, "flashbed");
    cJSON_Delete(j);
    return ours;
}

int out_result_dir_ok(const char *what, const char *dir, bool force, bool keep_old, const char *const *names,
                      struct out_manifest **folder)
{
    char err[4400], path[4400];
    *folder = NULL;
    if (out_dir_ok(what, dir) != 0)
        return -1;
    bool adopt = written_before_lists(dir, names);
    struct out_manifest *m = out_manifest_open(dir, (struct out_manifest_mode){force, keep_old}, err, sizeof err);
    int rc = m ? 0 : -1;
    for (size_t i = 0; rc == 0 && adopt && names[i]; i++) { /* its own result files are flashbed's */
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        rc = out_manifest_adopt(m, path, err, sizeof err);
    }
    for (size_t i = 0; rc == 0 && names && names[i]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        rc = out_manifest_check(m, path, err, sizeof err);
    }
    if (rc == 0) {
        *folder = m;
        return 0;
    }
    fb_error("%s: %s", what, err);
    char ignored[16];
    out_manifest_close(m, ignored, sizeof ignored); /* nothing written: the folder as it was */
    return -1;
}

int out_result_dir_close(struct out_manifest *folder, int rc)
{
    char err[4400];
    if (out_manifest_close(folder, err, sizeof err) == 0)
        return rc;
    fb_error("%s", err);
    return rc == 0 ? 1 : rc;
}

int out_new_dir_ok(const char *what, const char *dir)
{
    char err[4400];
    if (out_new_dir_check(dir, err, sizeof err) == 0)
        return 0;
    fb_error("%s: %s", what, err);
    return -1;
}

int out_file_ok(const char *what, const char *path, int make_parent)
{
    char err[4400];
    if (out_file_check(path, make_parent, err, sizeof err) == 0)
        return 0;
    fb_error("%s: %s", what, err);
    return -1;
}

int out_parents_ok(const char *what, const char *path, struct out_parents *p)
{
    char err[4400];
    if (out_parents_make(path, p, err, sizeof err) == 0)
        return 0;
    fb_error("%s: %s", what, err);
    return -1;
}

int out_file_ok_beside(const char *what, const char *path, int make_parent, const char *const *inputs,
                       size_t n_inputs, const char *model_dir)
{
    if (out_file_ok(what, path, make_parent) != 0)
        return -1;
    char err[4400];
    if (out_file_not_input(path, inputs, n_inputs, &model_dir, model_dir ? 1 : 0, err, sizeof err) == 0)
        return 0;
    fb_error("%s: %s", what, err);
    return -1;
}

void result_dir_name(const char *out, const char *command, char *dir, size_t len)
{
    if (out) {
        snprintf(dir, len, "%s", out);
        return;
    }
    char stamp[32];
    provenance_stamp(stamp, sizeof stamp);
    snprintf(dir, len, "results/%s-%s", command, stamp);
    /* the stamp has seconds: a second command within the same second would
     * write into the first one's folder */
    for (int i = 2; path_exists(dir) && i < 1000; i++)
        snprintf(dir, len, "results/%s-%s-%d", command, stamp, i);
}

static void draw_report(void *ctx, const char *label, uint64_t done, uint64_t total, const char *note)
{
    struct cli_progress *p = ctx;
    if (!p->begun || strcmp(p->label, label)) {
        if (p->begun)
            progress_end(&p->bar);
        progress_begin(&p->bar, label, total);
        snprintf(p->label, sizeof p->label, "%s", label);
        p->begun = true;
    }
    progress_update(&p->bar, done, note);
}

struct progress_report cli_progress_report(struct cli_progress *p)
{
    memset(p, 0, sizeof *p);
    return (struct progress_report){draw_report, p};
}

void cli_progress_end(struct cli_progress *p)
{
    if (p->begun)
        progress_end(&p->bar);
    p->begun = false;
}

void cli_step_globals(const struct fb_settings *set, char *min_parallel, size_t len, const char *globals[8])
{
    snprintf(min_parallel, len, "%zu", set->min_parallel_work);
    const char *g[] = {"--configs", set->configs_dir, "--plots-dir", set->plots_dir, "--min-parallel-work",
                       min_parallel, set->pin_threads ? NULL : "--no-pin", NULL};
    memcpy(globals, g, sizeof g);
}
