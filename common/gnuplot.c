#include "common/gnuplot.h"

#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "common/cleanup.h"
#include "common/errbuf.h"
#include "common/fsutil.h"
#include "common/out_manifest.h"
#include "common/strbuf.h"
#include "common/subprocess.h"

/* Whether the variable is a title a script draws above its plot. */
static bool is_title(const char *name)
{
    size_t n = strlen(name);
    return n >= 5 && !strcmp(name + n - 5, "title");
}

/* Where the line of a title that starts at c breaks: the last space within
 * GNUPLOT_TITLE_WRAP characters (UTF-8 sequences count once), or NULL when
 * the rest fits or has no space to break at. */
static const char *title_break(const char *c)
{
    const char *space = NULL;
    size_t chars = 0;
    for (; *c && chars <= GNUPLOT_TITLE_WRAP; c++) {
        chars += ((unsigned char)*c & 0xC0) != 0x80;
        if (*c == ' ' && chars <= GNUPLOT_TITLE_WRAP)
            space = c;
    }
    return chars > GNUPLOT_TITLE_WRAP ? space : NULL;
}

/* name='text' with text escaped for gnuplot's single quotes; a title longer
 * than a line is broken at spaces into lines joined by "\n" (gnuplot's
 * single quotes keep a backslash as it is). */
static void add_text(struct strbuf *b, const char *name, const char *text)
{
    strbuf_add(b, "%s='", name);
    const char *cut = is_title(name) ? title_break(text ? text : "") : NULL;
    for (const char *c = text ? text : ""; *c; c++) {
        if (c == cut) {
            strbuf_add(b, "'.\"\\n\".'");
            cut = title_break(c + 1);
            continue;
        }
        strbuf_add(b, "%s", *c == '\'' ? "''" : *c == '\n' || *c == '\r' ? " " : (char[2]){*c, 0});
    }
    strbuf_add(b, "'; ");
}

char *gnuplot_commands(const struct gnuplot_arg *args, size_t n, const char *term, const char *outfile)
{
    struct strbuf b = {0};
    for (size_t i = 0; i < n; i++) {
        if (args[i].text)
            add_text(&b, args[i].name, args[i].text);
        else
            strbuf_add(&b, "%s=%.17g; ", args[i].name, args[i].number);
    }
    add_text(&b, "term", term);
    add_text(&b, "outfile", outfile);
    return strbuf_take(&b);
}

/* The end of gnuplot's output, at most its last 800 characters, without
 * the final line break: what an error message can carry. */
static const char *last_lines(char *said)
{
    size_t n = strlen(said);
    while (n && (said[n - 1] == '\n' || said[n - 1] == ' '))
        said[--n] = '\0';
    return n > 800 ? said + n - 800 : said;
}

/* One output: gnuplot into its temporary, renamed into place. */
static int render_one(struct out_manifest *folder, const char *script_path, const struct gnuplot_arg *args, size_t n,
                      const char *out, char *err, size_t errlen)
{
    const char *ext = strrchr(out, '.');
    const char *term = ext && strcmp(ext, ".svg") == 0 ? "svg" : "pngcairo";
    char tmp[4200];
    atomic_tmp_name(out, tmp, sizeof tmp);
    if (out_manifest_claim(folder, out, err, errlen) != 0) /* a file of the user's is there */
        return -1;
    char *expr = gnuplot_commands(args, n, term, tmp);
    if (!expr)
        return err_set(err, errlen, "out of memory drawing %s", out);
    int tmp_handle = cleanup_add_file(tmp); /* gnuplot writes it; a Ctrl-C removes it */
    const char *argv[] = {"gnuplot", "-e", expr, script_path, NULL};
    char *said = NULL; /* gnuplot's warnings: shown only when it fails */
    int rc = run_capture(argv, &said, STDERR_CAPTURE);
    free(expr);
    if (rc != 0 || !path_exists(tmp))
        rc = err_set(err, errlen, "gnuplot failed drawing %s with %s%s%s", out, script_path,
                     said && said[0] ? ": " : "", said ? last_lines(said) : "");
    else if (rename(tmp, out) != 0)
        rc = err_set(err, errlen, "cannot write %s (renaming its temporary into place): %s", out, strerror(errno));
    else
        out_manifest_written(folder, out);
    free(said);
    if (rc != 0)
        unlink(tmp);
    cleanup_forget(tmp_handle);
    return rc;
}

int gnuplot_draw(const struct fb_settings *set, struct out_manifest *folder, const char *script,
                 const struct gnuplot_arg *args, size_t n, const char *stem, char *err, size_t errlen)
{
    if (!program_available("gnuplot"))
        return err_set(err, errlen, "gnuplot is not installed (apt-get install gnuplot-nox); no plot written");
    char script_path[4096], out[4200];
    snprintf(script_path, sizeof script_path, "%s/%s", set->plots_dir, script);
    if (!path_exists(script_path))
        return err_set(err, errlen, "plot script %s is missing (is the plots folder set right?)", script_path);
    const char *exts[] = {"png", "svg"};
    for (int i = 0; i < 2; i++) {
        if ((size_t)snprintf(out, sizeof out, "%s.%s", stem, exts[i]) >= sizeof out)
            return err_set(err, errlen, "the plot's path %s.%s is too long", stem, exts[i]);
        if (render_one(folder, script_path, args, n, out, err, errlen) != 0)
            return -1;
    }
    return 0;
}
