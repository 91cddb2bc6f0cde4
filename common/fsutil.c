#include "common/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#ifdef __linux__
#include <sys/sysmacros.h>
#include <sys/vfs.h>
#endif
#ifdef __APPLE__
#include <sys/mount.h>
#include <sys/param.h>
#endif

bool path_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

void dir_of(const char *path, char *buf, unsigned len)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(buf, len, ".");
    else if (slash == path)
        snprintf(buf, len, "/");
    else
        snprintf(buf, len, "%.*s", (int)(slash - path), path);
}

int mkdir_p(const char *path, unsigned mode)
{
    char tmp[4096];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp) {
        errno = ENAMETOOLONG;
        return -1;
    }
    for (char *p = tmp + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(tmp, mode) != 0 && errno != EEXIST)
            return -1;
        *p = '/';
    }
    if (mkdir(tmp, mode) != 0 && errno != EEXIST)
        return -1;
    struct stat st;
    if (stat(tmp, &st) != 0)
        return -1;
    if (!S_ISDIR(st.st_mode)) {
        errno = ENOTDIR;
        return -1;
    }
    return 0;
}

int free_bytes(const char *path, uint64_t *out)
{
    struct statvfs sv;
    if (statvfs(path, &sv) != 0)
        return -1;
    *out = (uint64_t)sv.f_bavail * (uint64_t)sv.f_frsize;
    return 0;
}

#ifdef __linux__
static void read_line(const char *file, char *buf, size_t len)
{
    buf[0] = '\0';
    FILE *f = fopen(file, "r");
    if (!f)
        return;
    if (fgets(buf, (int)len, f)) {
        size_t n = strlen(buf);
        while (n && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
            buf[--n] = '\0';
    }
    fclose(f);
}

static const char *fs_name(long magic)
{
    switch ((unsigned long)magic) {
    case 0xEF53: return "ext4";
    case 0x58465342: return "xfs";
    case 0x9123683E: return "btrfs";
    case 0x01021994: return "tmpfs";
    case 0x858458f6: return "ramfs";
    case 0x794c7630: return "overlayfs";
    case 0x2FC12FC1: return "zfs";
    case 0xF2F52010: return "f2fs";
    case 0x6969: return "nfs";
    case 0x65735546: return "fuse";
    default: return NULL;
    }
}

static void device_facts(dev_t dev, struct disk_info *info)
{
    char path[600], buf[256];
    snprintf(path, sizeof path, "/sys/dev/block/%u:%u/uevent", major(dev), minor(dev));
    FILE *f = fopen(path, "r");
    if (!f)
        return;
    while (fgets(buf, sizeof buf, f))
        if (strncmp(buf, "DEVNAME=", 8) == 0) {
            buf[strcspn(buf, "\n")] = '\0';
            snprintf(info->device, sizeof info->device, "%s", buf + 8);
        }
    fclose(f);
    if (!info->device[0])
        return;
    /* A partition's sysfs folder sits inside its disk's folder. */
    snprintf(path, sizeof path, "/sys/dev/block/%u:%u/partition", major(dev), minor(dev));
    snprintf(info->whole_device, sizeof info->whole_device, "%s", info->device);
    if (access(path, F_OK) == 0) {
        char link[512];
        snprintf(path, sizeof path, "/sys/dev/block/%u:%u", major(dev), minor(dev));
        ssize_t n = readlink(path, link, sizeof link - 1);
        if (n > 0) {
            link[n] = '\0';
            char *last = strrchr(link, '/');
            if (last) {
                *last = '\0';
                char *parent = strrchr(link, '/');
                if (parent)
                    snprintf(info->whole_device, sizeof info->whole_device, "%s", parent + 1);
            }
        }
    }
    snprintf(path, sizeof path, "/sys/block/%s/device/model", info->whole_device);
    read_line(path, info->model, sizeof info->model);
    snprintf(path, sizeof path, "/sys/block/%s/queue/rotational", info->whole_device);
    read_line(path, buf, sizeof buf);
    info->rotational = buf[0] ? atoi(buf) : -1;
    snprintf(path, sizeof path, "/sys/block/%s/queue/logical_block_size", info->whole_device);
    read_line(path, buf, sizeof buf);
    info->logical_block = buf[0] ? (uint32_t)atoi(buf) : 0;
}
#endif

int disk_info_for_path(const char *path, struct disk_info *info)
{
    memset(info, 0, sizeof *info);
    info->rotational = -1;
    struct stat st;
    if (stat(path, &st) != 0)
        return -1;
#ifdef __linux__
    struct statfs sf;
    if (statfs(path, &sf) == 0) {
        const char *name = fs_name((long)sf.f_type);
        if (name)
            snprintf(info->fs_type, sizeof info->fs_type, "%s", name);
        else
            snprintf(info->fs_type, sizeof info->fs_type, "0x%lx", (unsigned long)sf.f_type);
        info->memory_backed = (unsigned long)sf.f_type == 0x01021994ul ||
                              (unsigned long)sf.f_type == 0x858458f6ul;
    }
    device_facts(st.st_dev, info);
#elif defined(__APPLE__)
    struct statfs sf;
    if (statfs(path, &sf) == 0) {
        snprintf(info->fs_type, sizeof info->fs_type, "%s", sf.f_fstypename);
        const char *dev = strrchr(sf.f_mntfromname, '/');
        snprintf(info->device, sizeof info->device, "%s", dev ? dev + 1 : sf.f_mntfromname);
        snprintf(info->whole_device, sizeof info->whole_device, "%s", info->device);
        info->memory_backed = strcmp(sf.f_fstypename, "devfs") == 0;
    }
    info->logical_block = 4096;
#endif
    return 0;
}

int dio_alignment(const char *path, uint32_t *offset_align, uint32_t *mem_align)
{
#if defined(__linux__) && defined(STATX_DIOALIGN)
    struct statx sx;
    if (statx(AT_FDCWD, path, 0, STATX_DIOALIGN, &sx) == 0 && (sx.stx_mask & STATX_DIOALIGN)) {
        if (sx.stx_dio_offset_align == 0)
            return -1; /* the file system says: no direct I/O here */
        *offset_align = sx.stx_dio_offset_align;
        *mem_align = sx.stx_dio_mem_align ? sx.stx_dio_mem_align : sx.stx_dio_offset_align;
        return 0;
    }
#endif
    /* Older kernels: fall back on the device's logical block size. */
    struct disk_info info;
    if (disk_info_for_path(path, &info) != 0)
        return -1;
    if (info.memory_backed)
        return -1;
    uint32_t b = info.logical_block ? info.logical_block : 4096;
    *offset_align = b;
    *mem_align = b;
    return 0;
}

static int remove_entry(const char *path, const struct stat *st, int type, struct FTW *ftw)
{
    (void)st, (void)ftw;
    return (type == FTW_DP ? rmdir(path) : unlink(path)) != 0 ? -1 : 0;
}

int fs_remove_tree(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}
