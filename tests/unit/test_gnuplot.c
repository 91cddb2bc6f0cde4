/* common/gnuplot: the one way flashbed draws. Every string argument is
 * quoted by gnuplot_commands (a quote doubled, a line break a space), so
 * a path or title holding a quote and a space stays one gnuplot string;
 * gnuplot_draw writes <stem>.png and <stem>.svg through temporaries, and
 * leaves neither a plot nor a temporary when gnuplot fails. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "test_files.h"
#include "common/fsutil.h"
#include "common/gnuplot.h"
#include "common/subprocess.h"

static void check_commands(void)
{
    const struct gnuplot_arg args[] = {GP_TEXT("plot_title", "Lily's \"model\"\nline two"),
                                       GP_NUMBER("yscale", 0.5), GP_TEXT("empty", "")};
    char *cmd = gnuplot_commands(args, 3, "svg", "/tmp/a b/it's.svg");
    CHECK_STR(cmd, "plot_title='Lily''s \"model\" line two'; yscale=0.5; empty=''; term='svg'; "
                   "outfile='/tmp/a b/it''s.svg'; ");
    free(cmd);
    cmd = gnuplot_commands(NULL, 0, "pngcairo", "x.png");
    CHECK_STR(cmd, "term='pngcairo'; outfile='x.png'; ");
    free(cmd);
}

/* A title longer than a line is broken at spaces (issue 47: bytes_vs_k's
 * subtitle ran off both sides of an 800-pixel plot); other strings never. */
static void check_long_title(void)
{
    const char *sub = "at 50%, the study's budget where the window's size (k = 1..16) changes the bytes per token "
                      "most (by 57%)";
    const struct gnuplot_arg args[] = {GP_TEXT("plot_subtitle", sub), GP_TEXT("csv", sub)};
    char *cmd = gnuplot_commands(args, 2, "svg", "o.svg");
    CHECK_STR(cmd, "plot_subtitle='at 50%, the study''s budget where the window''s size (k = 1..16) changes the "
                   "bytes per'.\"\\n\".'token most (by 57%)'; csv='at 50%, the study''s budget where the "
                   "window''s size (k = 1..16) changes the bytes per token most (by 57%)'; term='svg'; "
                   "outfile='o.svg'; ");
    free(cmd);
}

static long file_size(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 ? (long)st.st_size : -1;
}

/* Entries of dir whose name holds ".tmp." (a temporary left behind). */
static int temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += strstr(e->d_name, ".tmp.") != NULL;
    if (d)
        closedir(d);
    return n;
}

/* A plot in a folder whose name has a quote and a space, with such a title. */
static void check_draw(void)
{
    char dir[] = "/tmp/flashbed gp it's-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char csv[600], script[600], stem[600], png[700], svg[700], err[1024];
    snprintf(csv, sizeof csv, "%s/data it's.csv", dir);
    snprintf(script, sizeof script, "%s/line.gp", dir);
    snprintf(stem, sizeof stem, "%s/plot it's", dir);
    snprintf(png, sizeof png, "%s.png", stem);
    snprintf(svg, sizeof svg, "%s.svg", stem);
    test_write_text(csv, "1,2\n2,4\n3,3\n");
    test_write_text(script, "if (term eq 'svg') { set terminal svg } else { set terminal pngcairo }\n"
                       "set output outfile\nset datafile separator ','\nset title plot_title noenhanced\n"
                       "plot csv using 1:($2 * yscale) with lines\n");
    struct fb_settings set = fb_settings_defaults();
    set.plots_dir = dir;
    const struct gnuplot_arg args[] = {GP_TEXT("csv", csv), GP_NUMBER("yscale", 2),
                                       GP_TEXT("plot_title", "Lily's model, 'quoted'")};
    int rc = gnuplot_draw(&set, NULL, "line.gp", args, 3, stem, err, sizeof err);
    if (rc != 0)
        fprintf(stderr, "gnuplot_draw: %s\n", err);
    CHECK(rc == 0);
    CHECK(file_size(png) > 0);
    CHECK(file_size(svg) > 0);
    /* a failing script: no plot, no temporary, and the error names the output */
    test_write_text(script, "this is not gnuplot\n");
    snprintf(stem, sizeof stem, "%s/broken", dir);
    snprintf(png, sizeof png, "%s.png", stem);
    CHECK(gnuplot_draw(&set, NULL, "line.gp", args, 3, stem, err, sizeof err) == -1);
    CHECK(strstr(err, png) != NULL);
    CHECK(file_size(png) == -1);
    CHECK(temporaries(dir) == 0);
    CHECK(gnuplot_draw(&set, NULL, "missing.gp", args, 3, stem, err, sizeof err) == -1);
    CHECK(strstr(err, "missing.gp is missing") != NULL);
    fs_remove_tree(dir);
}

int main(void)
{
    check_commands();
    check_long_title();
    if (program_available("gnuplot"))
        check_draw();
    else
        printf("test_gnuplot: gnuplot not installed: drawing not checked\n");
    return check_report("test_gnuplot");
}
