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
 * are parsed), which gives it the folder as an object; it passes that to
 * every writer that may write into the folder (atomic_file.h's functions
 * and sets, gnuplot.h, the trace writer take it as an argument, NULL where
 * a write is not into a result folder), and each such writer claims the
 * path first (out_manifest_claim) and reports it written after the rename
 * (out_manifest_written). A path not under the folder is not its business:
 * claiming it does nothing. A claim refuses a path where a file of the user's
 * exists, naming it, unless the folder was opened with force (the
 * command's --force); a new name is added to the list at once, so an
 * interruption never leaves one of flashbed's files unlisted. When the
 * command ends (out_manifest_close, which frees the object), if it wrote
 * anything this time, the files listed from the last time and not written
 * this time are removed (a plot of an option not given now), unless the
 * folder keeps them (a study resumes: its finished steps stay); the list is
 * rewritten to what is there. A command that wrote nothing changes nothing (a list it made
 * for claims it then did not write is removed again).
 *
 * A listed file edited by the user is still flashbed's (no checksums): copy
 * what you edit out of the folder.
 *
 * Return convention: 0, or -1 with the reason naming the path in err.
 * Every function but open takes NULL (no folder: the write is into no
 * result folder) and then does nothing: 0, false.
 * Threading: claim, check, adopt and written may be called from any thread
 * (a mutex per folder); close once, after the writers are done. Folders
 * are independent: nothing is kept outside the object. */
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

/* An open result folder: what it lists, what this command claimed and wrote. */
struct out_manifest;

/* Reads DIR's list (none: nothing in it is flashbed's) and returns the
 * folder claims are checked against; NULL, with the reason in err, when
 * the list cannot be read (or out of memory). DIR need not exist yet. */
struct out_manifest *out_manifest_open(const char *dir, struct out_manifest_mode mode, char *err, size_t errlen);

/* Before a writer creates path's temporary: 0 when path is not under the
 * folder, is listed, or does not exist (or with force); -1 when a file of
 * the user's is there. */
int out_manifest_claim(struct out_manifest *m, const char *path, char *err, size_t errlen);

/* out_manifest_claim's refusal without claiming: a command checks the
 * files it will write before its long work. */
int out_manifest_check(struct out_manifest *m, const char *path, char *err, size_t errlen);

/* Lists path (under the folder) as flashbed's: a result folder written
 * before folders had lists, known by its result file's provenance
 * (cli/shared.c's out_result_dir_ok). */
int out_manifest_adopt(struct out_manifest *m, const char *path, char *err, size_t errlen);

/* After path was renamed into place. */
void out_manifest_written(struct out_manifest *m, const char *path);

/* The command is done: removes the stale files (see above) and rewrites
 * the list; the folder is freed either way. 0, or -1 when the list could
 * not be written or a stale file not removed (err says which). */
int out_manifest_close(struct out_manifest *m, char *err, size_t errlen);

/* Whether path (relative to the folder, or a full path under it) is listed
 * now, and how many files were written since open (for tests). */
bool out_manifest_lists(struct out_manifest *m, const char *path);
size_t out_manifest_written_count(struct out_manifest *m);

#endif
