/* The file a sweep reads. Reads of never-written extents are not honest
 * (the file system answers them without touching the disk), so the file is
 * written in full with incompressible pseudo-random data. */
#ifndef FLASHBED_HARNESS_SCRATCH_FILE_H
#define FLASHBED_HARNESS_SCRATCH_FILE_H

#include <stddef.h>
#include <stdint.h>

/* What must happen to path before it can be read over [0, size). */
enum scratch_action { SCRATCH_READY, SCRATCH_CREATE, SCRATCH_EXTEND };

/* Checks, without writing anything: the path is a regular file (or absent
 * in a writable, existing directory), readable, and the file system has
 * room for what must be written. Returns 0 and the action, or -1 with a
 * reason in err. */
int scratch_file_check(const char *path, uint64_t size, enum scratch_action *action, char *err,
                       size_t errlen);

/* Creates (via a temporary name and rename) or extends the file to size
 * bytes of pseudo-random data and syncs it to disk. Shows progress on a
 * terminal. 0, or -1 with a reason in err. */
int scratch_file_prepare(const char *path, uint64_t size, enum scratch_action action, char *err,
                         size_t errlen);

#endif
