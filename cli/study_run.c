/* The shared tail of reproduce and sparsify study (cli/study_run.h). */
#include "cli/study_run.h"

#include <stdio.h>
#include <unistd.h>

#include "cli/shared.h"
#include "common/fsutil.h"
#include "common/interrupt.h"
#include "common/log.h"
#include "common/out_manifest.h"
#include "common/provenance.h"

int study_own_path(const char *name, char *buf, size_t len)
{
    ssize_t n = readlink("/proc/self/exe", buf, len - 1);
    if (n <= 0) {
        fb_error("%s: cannot find flashbed's own path (/proc/self/exe)", name);
        return -1;
    }
    buf[n] = '\0';
    return 0;
}

struct progress_state {
    bool terminal;
    size_t ran, skipped;
};

/* Counts the steps and says each one: on a terminal as it starts and ends,
 * in a log (stderr not a terminal) one line when it ends, with its seconds
 * and how it ended. */
static void on_progress(void *ctx, const struct repro_plan *p, size_t i, enum repro_event ev, double seconds)
{
    static const char *const how[] = {"done before", "started", "done", "failed", "interrupted"};
    struct progress_state *st = ctx;
    if (ev == REPRO_SKIPPED)
        st->skipped++;
    if (ev == REPRO_FINISHED)
        st->ran++;
    if (ev == REPRO_SKIPPED || (!st->terminal && ev == REPRO_STARTED))
        return;
    if (!st->terminal)
        fprintf(stderr, "flashbed: [%zu/%zu] %s (%s): %.1f s, %s\n", i + 1, p->n, p->steps[i].id,
                p->steps[i].what, seconds, how[ev]);
    else if (ev == REPRO_STARTED)
        fprintf(stderr, "[%zu/%zu] %s ...", i + 1, p->n, p->steps[i].what);
    else
        fprintf(stderr, " %.1f s%s%s\n", seconds, ev == REPRO_FINISHED ? "" : ", ", ev == REPRO_FINISHED ? "" : how[ev]);
}

/* How this process was run, for the report's head ("flashbed NAME" when
 * provenance cannot say). */
static void command_line(const char *name, char *buf, size_t len)
{
    snprintf(buf, len, "flashbed %s", name);
    cJSON *prov = provenance_new();
    const cJSON *line = cJSON_GetObjectItemCaseSensitive(prov, "command_line");
    if (cJSON_IsString(line))
        snprintf(buf, len, "%s", line->valuestring);
    cJSON_Delete(prov);
}

int study_run(struct repro_plan *plan, const struct study_run_spec *s, const struct fb_settings *set)
{
    char err[8192], min_parallel[32], cmd[8192], mark[4400];
    const char *globals[8];
    cli_step_globals(set, min_parallel, sizeof min_parallel, globals);
    /* the study's folder keeps its finished steps; one a study made before
     * folders had a list of flashbed's files is taken as all flashbed's */
    snprintf(mark, sizeof mark, "%s/reproduce.json", s->out);
    char list[4400];
    snprintf(list, sizeof list, "%s/%s", s->out, OUT_MANIFEST_NAME);
    bool legacy = path_exists(mark) && !path_exists(list);
    char what[64];
    snprintf(what, sizeof what, "%s --out", s->name);
    if (out_result_dir_ok(what, s->out, legacy, true, NULL, &plan->folder) != 0)
        return 1;
    interrupt_install();
    struct progress_state st = {.terminal = isatty(STDERR_FILENO)};
    bool stopped = false;
    int rc = repro_run(plan, s->program, globals, on_progress, &st, &stopped, err, sizeof err);
    if (rc != 0)
        fb_error("%s: %s", s->name, err);
    command_line(s->name, cmd, sizeof cmd);
    snprintf(mark, sizeof mark, "%s/reproduce.json", s->out);
    /* a folder the study did not claim (the user's) gets no report either */
    if (path_exists(mark) && s->report(plan, cmd, err, sizeof err) != 0) {
        fb_error("%s: REPORT.md: %s", s->name, err);
        rc = -1;
    }
    if (stopped)
        fb_info("interrupted: %zu steps finished this time, kept; run the same command to resume", st.ran);
    else if (rc == 0 && s->done_on_stdout)
        printf("%s: %zu steps run, %zu done before; report: %s/REPORT.md\n", s->name, st.ran, st.skipped, s->out);
    else if (rc == 0)
        fb_info("%zu steps run, %zu done before; report: %s/REPORT.md", st.ran, st.skipped, s->out);
    int status = out_result_dir_close(plan->folder, stopped ? 130 : rc == 0 ? 0 : 1);
    plan->folder = NULL;
    return status;
}
