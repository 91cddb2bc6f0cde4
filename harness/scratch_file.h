/* The file a sweep reads. Reads of never-written extents are not honest
 * (the file system answers them without touching the disk), so the file is
 * written in full with incompressible pseudo-random data.
 *
 * A file flashbed creates starts with a marker (SCRATCH_MARKER, the first
 * bytes of its first block, the rest of which is random data like every
 * other block), and flashbed writes only into files that carry it: a
 * user's file too small for the sweep is refused, never overwritten. The
 * marker is inside the data rather than in a header the reads skip or a
 * sidecar file: reads stay over [0, size) at aligned offsets as before
 * (what a block holds does not change how fast it is read), and the marker
 * cannot be separated from its file. Reading an existing file large
 * enough, marker or not, writes nothing and stays allowed. */
#ifndef FLASHBED_HARNESS_SCRATCH_FILE_H
#define FLASHBED_HARNESS_SCRATCH_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "common/progress.h"

/* The first bytes of every scratch file flashbed creates. */
#define SCRATCH_MARKER "flashbed scratch file: random data for read benchmarks; safe to delete\n"

/* What must happen to path before it can be read over [0, size). */
enum scratch_action { SCRATCH_READY, SCRATCH_CREATE, SCRATCH_EXTEND };

/* Checks, without writing anything: the path is a regular file (or absent
 * in a writable, existing directory), readable, carries the marker if it
 * must be extended, and the file system has room for what must be
 * written. Returns 0 and the action, or -1 with a
 * reason in err. */
int scratch_file_check(const char *path, uint64_t size, enum scratch_action *action, char *err,
                       size_t errlen);

/* Creates (via a temporary name and rename, removed on failure or a
 * signal: common/cleanup.h) or extends the file to size bytes of
 * pseudo-random data starting with the marker, and syncs it to disk. A
 * file to extend is checked for the marker again before any write. Shows progress on a
 * terminal. 0, or -1 with a reason in err. */
int scratch_file_prepare(const char *path, uint64_t size, enum scratch_action action,
                         const struct progress_report *progress, char *err, size_t errlen);

#endif
