/* Plots are gnuplot scripts in plots/ (the settings' plots_dir,
 * common/settings.h), run at run time: flashbed passes the data file and
 * output names as gnuplot variables. */
#ifndef FLASHBED_COMMON_GNUPLOT_H
#define FLASHBED_COMMON_GNUPLOT_H

#include <stddef.h>

#include "common/settings.h"

/* One variable a plot script reads: a string, or with text NULL a number.
 * gnuplot_draw quotes every string itself (a path or title may hold
 * quotes, spaces, anything), so callers never build gnuplot syntax. */
struct gnuplot_arg {
    const char *name;
    const char *text;
    double number;
};
#define GP_TEXT(name, text) {(name), (text), 0}
#define GP_NUMBER(name, value) {(name), NULL, (value)}

struct out_manifest;

/* Draws <set->plots_dir>/<script> into <stem>.png and <stem>.svg with the n
 * args, the output names passed as the script's term and outfile. Each output goes to
 * a temporary name (removed on failure or a signal) renamed into place when
 * gnuplot succeeds, claimed first in folder, the command's result folder
 * (common/out_manifest.h; NULL: none). Returns 0, or -1 with the reason in err. */
int gnuplot_draw(const struct fb_settings *set, struct out_manifest *folder, const char *script,
                 const struct gnuplot_arg *args, size_t n, const char *stem, char *err, size_t errlen);

/* A title (a variable whose name ends in "title") longer than this many
 * characters is broken at spaces into lines of at most this many: the
 * narrowest plot (800 pixels, an 11-point font) shows about 100. */
#define GNUPLOT_TITLE_WRAP 90

/* The gnuplot command string gnuplot_draw passes with -e: each arg as
 * name='text' (a single quote doubled, as gnuplot reads '...'; a line break
 * becomes a space, since one would end the command; a title broken into
 * lines as 'line'."\n".'line') or name=number, then term and outfile. NULL
 * when out of memory; caller frees. */
char *gnuplot_commands(const struct gnuplot_arg *args, size_t n, const char *term, const char *outfile);

#endif
