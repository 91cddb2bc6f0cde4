/* One rule for every command that writes its result set into a folder
 * (--out of sweep, replay, predict, run, trace info, calibrate's sweep,
 * predictor eval, a study's folder): the folder ends up holding this
 * command's files and the user's, never an older result beside a newer one,
 * and never a user's file replaced without being asked.
 *
 * How flashbed knows its own files: DIR/.flashbed-files (OUT_MANIFEST_NAME),
 * one name a line relative to DIR, lists every file flashbed wrote there.
 * A file not listed is the user's.
 *
 * The command opens its folder once (out_manifest_open, after its options
 * are parsed); from then on every writer in common/ that renames a result
 * into place (atomic_file.h, gnuplot.h, the trace writer) claims the path
 * first (out_manifest_claim) and reports it written after the rename
 * (out_manifest_written). A claim refuses a path where a file of the user's
 * exists, naming it, unless the folder was opened with force (the
 * command's --force); a new name is added to the list at once, so an
 * interruption never leaves one of flashbed's files unlisted. When the
 * command ends (out_manifest_close), if it wrote anything this time, the
 * files listed from the last time and not written this time are removed
 * (a plot of an option not given now), unless the folder keeps them (a
 * study resumes: its finished steps stay); the list is rewritten to what
 * is there. A command that wrote nothing changes nothing (a list it made
 * for claims it then did not write is removed again).
 *
 * A listed file edited by the user is still flashbed's (no checksums): copy
 * what you edit out of the folder.
 *
 * Return convention: 0, or -1 with the reason naming the path in err.
 * Threading: one folder per process at a time; claim and written may be
 * called from any thread (a mutex); open and close from the main thread. */
#ifndef FLASHBED_COMMON_OUT_MANIFEST_H
#define FLASHBED_COMMON_OUT_MANIFEST_H

#include <stdbool.h>
#include <stddef.h>

#define OUT_MANIFEST_NAME ".flashbed-files"

/* How a command uses its folder. */
struct out_manifest_mode {
    bool force;    /* replace the user's files at the paths it writes (--force) */
    bool keep_old; /* never remove the files of earlier runs (a resumed study) */
};

/* Reads DIR's list (none: nothing in it is flashbed's) and makes DIR the
 * folder claims are checked against. DIR need not exist yet. */
int out_manifest_open(const char *dir, struct out_manifest_mode mode, char *err, size_t errlen);

/* Before a writer creates path's temporary: 0 when path is not under the
 * open folder, is listed, or does not exist (or with force); -1 when a
 * file of the user's is there. */
int out_manifest_claim(const char *path, char *err, size_t errlen);

/* out_manifest_claim's refusal without claiming: a command checks the
 * files it will write before its long work. */
int out_manifest_check(const char *path, char *err, size_t errlen);

/* Lists path (under the open folder) as flashbed's: a result folder
 * written before folders had lists, known by its result file's provenance
 * (cli/shared.c's out_result_dir_ok). */
int out_manifest_adopt(const char *path, char *err, size_t errlen);

/* After path was renamed into place. */
void out_manifest_written(const char *path);

/* The command is done: removes the stale files (see above) and rewrites
 * the list; the folder is closed either way. 0, or -1 when the list could
 * not be written or a stale file not removed (err says which). */
int out_manifest_close(char *err, size_t errlen);

/* Whether path (relative to the open folder, or a full path under it) is
 * listed now, and how many files were written since open (for tests). */
bool out_manifest_lists(const char *path);
size_t out_manifest_written_count(void);

#endif
