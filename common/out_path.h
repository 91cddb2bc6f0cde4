/* Checking, right after option parsing and before any long work, that a
 * command's output can be made where the user asked, so that a bad --out
 * is refused at once with its reason instead of after minutes of work (or
 * with no message at all).
 *
 * Each check writes nothing. It looks at the path and its nearest existing
 * ancestor: that must be a folder, searchable and writable (access(2):
 * also true for root on a read-only file system, which reports EROFS).
 * Messages name the user's path and the ancestor in the way.
 *
 * Returns 0, or -1 with the reason in err ("PATH: ..."). Thread-safe. */
#ifndef FLASHBED_COMMON_OUT_PATH_H
#define FLASHBED_COMMON_OUT_PATH_H

#include <stddef.h>

/* A result folder the command creates (with its parents) if missing, or
 * fills if it exists: an existing folder must be writable. */
int out_dir_check(const char *dir, char *err, size_t errlen);

/* A new folder that must not exist yet (convert, model make), written as
 * "<dir>.tmp.<pid>" beside it and renamed; missing parents are made for it
 * (out_parents_make), so the nearest existing ancestor must be a writable
 * folder. */
int out_new_dir_check(const char *dir, char *err, size_t errlen);

/* A result file written as "<path>.tmp.<pid>" and renamed over path. An
 * existing path must be a regular file (a folder, device or pipe is
 * refused: the rename would replace it). With make_parent the command
 * creates missing parent folders; otherwise the parent must exist. */
int out_file_check(const char *path, int make_parent, char *err, size_t errlen);

/* An output file that is one of the command's inputs would destroy it
 * (`run --record MODEL/model.json`): refused when path exists and is the
 * same file (device and inode) as one of inputs[0..n_inputs), or lies in
 * one of folders[0..n_folders) (a model folder: flashbed replaces no file
 * of a folder it reads; only `predictor train` writes there). NULL entries
 * are skipped (options not given); a path that does not exist yet passes. */
int out_file_not_input(const char *path, const char *const *inputs, size_t n_inputs, const char *const *folders,
                       size_t n_folders, char *err, size_t errlen);

/* The folders above an output that did not exist and were made for it,
 * remembered so that a failure or a signal takes them away again. */
struct out_parents {
    char **dirs;  /* outermost first */
    int *handles; /* their registrations in common/cleanup.h */
    size_t n;
};

/* Makes the missing folders above path (its parent, mkdir -p), each
 * registered before it exists to be removed, while empty, on a signal.
 * 0, or -1 with the reason in err (what was made is removed again).
 * Either way p is then given to out_parents_keep or out_parents_undo. */
int out_parents_make(const char *path, struct out_parents *p, char *err, size_t errlen);

/* The output is in place: the folders stay (and leave the registry). */
void out_parents_keep(struct out_parents *p);

/* The output failed: the folders made are removed, innermost first, each
 * only while empty (one holding anything stays). */
void out_parents_undo(struct out_parents *p);

/* Drops trailing slashes in place ("models/m/" -> "models/m"; "/" stays):
 * a folder written as "<dir>.tmp.<pid>" and renamed needs its plain name. */
void out_path_trim(char *path);

#endif
