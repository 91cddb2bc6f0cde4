/* Running helper programs (fio, gnuplot, git) without a shell. */
#ifndef FLASHBED_COMMON_SUBPROCESS_H
#define FLASHBED_COMMON_SUBPROCESS_H

#include <stdbool.h>

/* What becomes of the program's stderr. */
enum { STDERR_PASS = 0, STDERR_DISCARD = 1, STDERR_CAPTURE = 2 };

/* Runs argv[0] (searched in PATH) with argv, collects its stdout into a
 * heap string *out (may be NULL on failure). stderr (quiet_stderr): passed
 * through (STDERR_PASS, 0), discarded (STDERR_DISCARD, or any other true
 * value), or captured into *out with stdout (STDERR_CAPTURE: for a program
 * whose warnings are noise unless it fails, as gnuplot's). Returns the
 * exit status (0..255), or -1 when the program could not be started or
 * died by a signal. */
int run_capture(const char *const argv[], char **out, int quiet_stderr);

/* True when the program can be found in PATH (or is a path to an executable). */
bool program_available(const char *name);

#endif
