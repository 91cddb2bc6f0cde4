/* Plots are gnuplot scripts in plots/, run at run time: flashbed passes the
 * data file and output names as gnuplot variables. */
#ifndef FLASHBED_COMMON_GNUPLOT_H
#define FLASHBED_COMMON_GNUPLOT_H

#include <stddef.h>

/* Directory holding the .gp scripts: what plots_dir_set() was given, else
 * the source tree's plots/ (compiled in). */
const char *plots_dir(void);

/* NULL or "" restores the default. */
void plots_dir_set(const char *dir);

/* Runs plots/<script> once per output in outputs[] (NULL-terminated; the
 * extension, .png or .svg, picks the terminal). vars are "name=value"
 * strings (values quoted by the caller where they are strings). Each
 * output is written to a temporary name and renamed when gnuplot succeeds.
 * Returns 0, or -1 with the reason in err. */
int gnuplot_render(const char *script, const char *const vars[], const char *const outputs[], char *err,
                   size_t errlen);

/* A string variable for gnuplot_render: name='value', each single quote of
 * value doubled (gnuplot's escape inside '...'), so a title or path holding
 * one stays one string. 0, or -1 when buf is too small (buf then holds
 * name='' so the script still runs). */
int gnuplot_var(char *buf, size_t len, const char *name, const char *value);

#endif
