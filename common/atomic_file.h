/* Result files appear whole or not at all: write to "<path>.tmp.<pid>",
 * flush, then rename over <path>. A crash or bad input never leaves a
 * half-written result behind, and the temporary is registered with
 * common/cleanup.h so that a Ctrl-C removes it too. Messages name path,
 * the user's name, never the temporary. A file written into a command's
 * result folder is claimed in it first (common/out_manifest.h): the
 * writer passes that folder (NULL: the file is not a result folder's). */
#ifndef FLASHBED_COMMON_ATOMIC_FILE_H
#define FLASHBED_COMMON_ATOMIC_FILE_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

struct out_manifest;

struct atomic_file {
    FILE *f;
    char tmp[4200];
    char path[4096];
    int cleanup; /* handle in common/cleanup.h, -1 when none */
    struct out_manifest *folder; /* the result folder path is claimed in (NULL: none) */
};

/* Each returns 0, or -1 with a reason naming the file in err (a file of
 * the user's at path, under folder, refused so). */
int atomic_open(struct atomic_file *af, struct out_manifest *folder, const char *path, char *err, size_t errlen);
/* Closes and renames into place; on any write error removes the temporary. */
int atomic_commit(struct atomic_file *af, char *err, size_t errlen);
void atomic_abort(struct atomic_file *af);

/* Whole-file helpers built on the above. (cli/ has write_json_file and
 * write_text_file, which print the reason.) */
int atomic_write_json(struct out_manifest *folder, const char *path, const cJSON *json, char *err, size_t errlen);
int atomic_write_text(struct out_manifest *folder, const char *path, const char *text, char *err, size_t errlen);

/* Files that appear together (a command's result folder): each written to
 * its temporary, flushed, synced and closed by atomic_set_text; then all
 * renamed into place by atomic_set_commit. A write that fails (a full
 * disk, an I/O error) leaves every path as it was: the caller calls
 * atomic_set_abort, which removes the temporaries. Only a rename failing
 * midway leaves the files renamed before it (rename seldom fails where the
 * temporary was just written). Start from a zeroed set, its folder set
 * where its files go into a result folder. */
#define ATOMIC_SET_MAX 4
struct atomic_set {
    struct atomic_file files[ATOMIC_SET_MAX];
    int n; /* written, not yet renamed */
    struct out_manifest *folder; /* the result folder its files are claimed in (NULL: none) */
};
/* text NULL: out of memory making it (said in err). */
int atomic_set_text(struct atomic_set *s, const char *path, const char *text, char *err, size_t errlen);
/* json printed as atomic_write_json prints it (NULL: out of memory). */
int atomic_set_json(struct atomic_set *s, const char *path, const cJSON *json, char *err, size_t errlen);
int atomic_set_commit(struct atomic_set *s, char *err, size_t errlen);
void atomic_set_abort(struct atomic_set *s);

/* Name of the temporary for path, for tools that write files themselves
 * (gnuplot): buf gets "<path>.tmp.<pid><ext>" so the extension is kept. */
void atomic_tmp_name(const char *path, char *buf, unsigned len);

/* Registers atomic_tmp_name(path) with common/cleanup.h for a writer that
 * makes that temporary itself (the trace writer), so that a signal removes
 * it; the handle goes to cleanup_forget once the writer is done. */
int atomic_tmp_watch(const char *path);

/* Rewrites such a writer's message about atomic_tmp_name(path) to name
 * path, the user's name for the file. */
void atomic_err_name_path(char *err, size_t errlen, const char *path);

#endif
