#include "common/cleanup.h"

#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>
#include <unistd.h>

#ifdef __linux__
#include <sys/syscall.h>
#endif

/* A slot is claimed (FREE -> CLAIMED) before its path is written and only
 * then published (ACTIVE), so a signal handler never reads a half-written
 * path. The handler acts on ACTIVE slots only. */
enum { SLOT_FREE, SLOT_CLAIMED, SLOT_ACTIVE };

/* Room for any name flashbed builds from a user path (4096) plus its
 * ".tmp.<pid>" suffix. */
#define CLEANUP_PATH_MAX 4352

/* What a slot holds: a temporary file, a temporary folder (its files go
 * too), or a folder made for an output, removed only while empty. */
enum { KIND_FILE, KIND_DIR, KIND_EMPTY_DIR };

struct cleanup_slot {
    atomic_int state;
    int kind;
    char path[CLEANUP_PATH_MAX];
};

/* Lock-free atomics are what makes the handler's reads async-signal-safe. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "cleanup registry needs lock-free atomic int");

static struct cleanup_slot slots[CLEANUP_SLOTS];

static int add(const char *path, int kind)
{
    size_t n = strlen(path);
    if (n >= CLEANUP_PATH_MAX)
        return -1;
    for (int i = 0; i < CLEANUP_SLOTS; i++) {
        int expected = SLOT_FREE;
        if (!atomic_compare_exchange_strong(&slots[i].state, &expected, SLOT_CLAIMED))
            continue;
        memcpy(slots[i].path, path, n + 1);
        slots[i].kind = kind;
        atomic_store(&slots[i].state, SLOT_ACTIVE);
        return i;
    }
    return -1;
}

int cleanup_add_file(const char *path)
{
    return add(path, KIND_FILE);
}

int cleanup_add_dir(const char *path)
{
    return add(path, KIND_DIR);
}

int cleanup_add_empty_dir(const char *path)
{
    return add(path, KIND_EMPTY_DIR);
}

void cleanup_forget(int handle)
{
    if (handle >= 0 && handle < CLEANUP_SLOTS)
        atomic_store(&slots[handle].state, SLOT_FREE);
}

int cleanup_count(void)
{
    int n = 0;
    for (int i = 0; i < CLEANUP_SLOTS; i++)
        n += atomic_load(&slots[i].state) == SLOT_ACTIVE;
    return n;
}

#ifdef __linux__
/* The kernel's record for getdents64 (glibc's wrapper is not in every
 * libc this builds against; the system call is). */
struct dirent64_record {
    unsigned long long d_ino;
    long long d_off;
    unsigned short d_reclen;
    unsigned char d_type;
    char d_name[];
};

static bool is_dot_or_dotdot(const char *name)
{
    return name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'));
}

/* Unlinks the plain files directly in dir with calls a signal handler may
 * make: no opendir (it allocates), no stdio. */
static void remove_dir_files(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return;
    /* 8-byte alignment for the records' 64-bit fields. */
    static _Alignas(8) char buf[8192];
    for (;;) {
        long n = syscall(SYS_getdents64, fd, buf, sizeof buf);
        if (n <= 0)
            break;
        for (long off = 0; off < n;) {
            const struct dirent64_record *d = (const struct dirent64_record *)(buf + off);
            if (!is_dot_or_dotdot(d->d_name))
                unlinkat(fd, d->d_name, 0);
            off += d->d_reclen;
        }
    }
    close(fd);
}
#else
/* Without a signal-safe way to list a folder, only an empty one goes:
 * writers on these systems register the files they put in it. */
static void remove_dir_files(const char *dir)
{
    (void)dir;
}
#endif

static void remove_slots(int kind)
{
    for (int i = CLEANUP_SLOTS - 1; i >= 0; i--) {
        if (atomic_load(&slots[i].state) != SLOT_ACTIVE || slots[i].kind != kind)
            continue;
        if (kind == KIND_DIR) {
            /* twice: a thread still writing may have added a file meanwhile */
            remove_dir_files(slots[i].path);
            if (rmdir(slots[i].path) != 0) {
                remove_dir_files(slots[i].path);
                rmdir(slots[i].path);
            }
        } else if (kind == KIND_EMPTY_DIR) {
            rmdir(slots[i].path); /* fails, keeping it, while anything is inside */
        } else {
            unlink(slots[i].path);
        }
    }
}

void cleanup_remove_all(void)
{
    remove_slots(KIND_FILE);
    remove_slots(KIND_DIR);
    /* nested folders in any slot order: a folder empties once the one
     * inside it went, so as many passes as there are slots suffice */
    for (int pass = 0; pass < CLEANUP_SLOTS; pass++)
        remove_slots(KIND_EMPTY_DIR);
}
