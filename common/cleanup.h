/* Temporaries to remove when flashbed is stopped by a signal: a result's
 * "<path>.tmp.<pid>" file, a model's "<dir>.tmp.<pid>" folder, a scratch
 * file being created. A writer registers its temporary before creating it
 * and forgets it once it is renamed into place (or removed on a failure);
 * whatever is still registered when SIGINT/SIGTERM ends the program is
 * removed by cleanup_remove_all (common/interrupt.c calls it), so a Ctrl-C
 * leaves nothing half-written behind.
 *
 * Only temporary names are ever registered, never a user's path: removing
 * one that was already renamed or never created does nothing. The one
 * exception, folders made for an output, is removed only while empty.
 *
 * Returns: cleanup_add_* a handle (>= 0), or -1 when the path is too long
 * or every slot is taken (the temporary is then not removed on a signal;
 * the writer still removes it on an ordinary failure). cleanup_forget
 * ignores -1.
 *
 * Threading: add and forget may be called from any thread (slots are
 * claimed with atomics); cleanup_remove_all is async-signal-safe (it uses
 * only unlink, rmdir, open, close and getdents64) and may run in a signal
 * handler that interrupted any of them. */
#ifndef FLASHBED_COMMON_CLEANUP_H
#define FLASHBED_COMMON_CLEANUP_H

/* Slots: a command has a handful of temporaries open at once. */
#define CLEANUP_SLOTS 64

/* A temporary file. */
int cleanup_add_file(const char *path);
/* A temporary folder: removed with the plain files directly inside it
 * (flashbed's model folders are flat). */
int cleanup_add_dir(const char *path);
/* A folder flashbed made for an output (a missing parent of --out,
 * common/out_path.h's out_parents_make): removed, after the temporaries,
 * only while empty, so what it holds of anyone's is never touched. */
int cleanup_add_empty_dir(const char *path);
/* The temporary was renamed into place or removed: nothing to do for it. */
void cleanup_forget(int handle);

/* Removes every registered temporary: files, then folders, then the empty
 * folders made for outputs. Async-signal-safe. */
void cleanup_remove_all(void);

/* How many temporaries are registered now (for tests). */
int cleanup_count(void);

#endif
