/* File-system facts the benchmarks must know and record: which disk a path
 * lives on, its file system, the direct-I/O alignment it demands, and how
 * much room is left. Linux first; macOS paths compile under __APPLE__. */
#ifndef FLASHBED_COMMON_FSUTIL_H
#define FLASHBED_COMMON_FSUTIL_H

#include <stdbool.h>
#include <stdint.h>

struct disk_info {
    char fs_type[32];      /* "ext4", "xfs", "tmpfs", "apfs", or "0x<magic>" */
    char device[256];       /* "vda", "nvme0n1p2", or "" when unknown */
    char whole_device[256]; /* the disk the partition belongs to */
    char model[128];       /* from sysfs, or "" */
    int rotational;        /* 1, 0, or -1 when unknown */
    uint32_t logical_block;/* device logical block size, 0 when unknown */
    bool memory_backed;    /* tmpfs/ramfs: "flash" reads would be memory reads */
};

/* Fills info for the file system holding path (which must exist). */
int disk_info_for_path(const char *path, struct disk_info *info);

/* Alignment that direct I/O on this file needs for offsets and sizes, and
 * for buffer addresses. Returns 0 and sets both when known; -1 when the
 * file system gives no direct-I/O alignment (does not support it). */
int dio_alignment(const char *path, uint32_t *offset_align, uint32_t *mem_align);

/* Bytes a non-root user may still write on the file system holding path. */
int free_bytes(const char *path, uint64_t *out);

/* mkdir -p. Returns 0 or -1 with errno set. */
int mkdir_p(const char *path, unsigned mode);

/* The directory part of path, in buf ("." when none). */
void dir_of(const char *path, char *buf, unsigned len);

bool path_exists(const char *path);

/* rm -r: path and, when it is a folder, everything under it (links are
 * removed, not followed). A missing path is no error. 0, or -1 with errno
 * of the first failure. */
int fs_remove_tree(const char *path);

#endif
