#include "common/gnuplot.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/cleanup.h"
#include "common/errbuf.h"
#include "common/fsutil.h"
#include "common/subprocess.h"

#ifndef FLASHBED_SOURCE_DIR
#define FLASHBED_SOURCE_DIR "."
#endif

static char plots_dir_given[2048];

const char *plots_dir(void)
{
    return plots_dir_given[0] ? plots_dir_given : FLASHBED_SOURCE_DIR "/plots";
}

void plots_dir_set(const char *dir)
{
    snprintf(plots_dir_given, sizeof plots_dir_given, "%s", dir ? dir : "");
}

int gnuplot_var(char *buf, size_t len, const char *name, const char *value)
{
    size_t n = (size_t)snprintf(buf, len, "%s='", name);
    for (const char *c = value; n < len && *c; c++) {
        if (*c == '\'')
            buf[n++] = '\'';
        if (n < len)
            buf[n++] = *c;
    }
    if (n + 2 > len) { /* no room for the value and its closing quote */
        snprintf(buf, len, "%s=''", name);
        return -1;
    }
    buf[n++] = '\'';
    buf[n] = '\0';
    return 0;
}

int gnuplot_render(const char *script, const char *const vars[], const char *const outputs[], char *err,
                   size_t errlen)
{
    if (!program_available("gnuplot"))
        return err_set(err, errlen, "gnuplot is not installed (apt-get install gnuplot-nox); no plot written");
    char script_path[4096];
    snprintf(script_path, sizeof script_path, "%s/%s", plots_dir(), script);
    if (!path_exists(script_path))
        return err_set(err, errlen, "plot script %s is missing (is the plots folder set right?)", script_path);
    for (const char *const *out = outputs; *out; out++) {
        const char *ext = strrchr(*out, '.');
        const char *term = ext && strcmp(ext, ".svg") == 0 ? "svg" : "pngcairo";
        char tmp[4200];
        atomic_tmp_name(*out, tmp, sizeof tmp);
        int tmp_handle = cleanup_add_file(tmp); /* gnuplot writes it; a Ctrl-C removes it */
        /* One -e string: every variable, then the terminal and output. */
        size_t len = strlen(tmp) + 128;
        for (const char *const *v = vars; *v; v++)
            len += strlen(*v) + 2;
        char *expr = malloc(len);
        if (!expr) {
            cleanup_forget(tmp_handle);
            return err_set(err, errlen, "out of memory drawing %s", *out);
        }
        expr[0] = '\0';
        for (const char *const *v = vars; *v; v++) {
            strcat(expr, *v);
            strcat(expr, "; ");
        }
        char tail[4400];
        snprintf(tail, sizeof tail, "term='%s'; outfile='%s'", term, tmp);
        strcat(expr, tail);
        const char *argv[] = {"gnuplot", "-e", expr, script_path, NULL};
        char *ignored = NULL;
        int rc = run_capture(argv, &ignored, 0);
        free(ignored);
        free(expr);
        if (rc != 0 || !path_exists(tmp)) {
            unlink(tmp);
            cleanup_forget(tmp_handle);
            return err_set(err, errlen, "gnuplot failed drawing %s with %s", *out, script_path);
        }
        if (rename(tmp, *out) != 0) {
            err_set(err, errlen, "cannot write %s (renaming its temporary into place): %s", *out, strerror(errno));
            unlink(tmp);
            cleanup_forget(tmp_handle);
            return -1;
        }
        cleanup_forget(tmp_handle);
    }
    return 0;
}
