#include "io/io_buffer.h"

#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#define HUGE_ALIGN (2u << 20)

int io_buffer_alloc(struct io_buffer *b, size_t len, bool huge)
{
    memset(b, 0, sizeof *b);
    size_t want = (len + HUGE_ALIGN - 1) & ~(size_t)(HUGE_ALIGN - 1);
    /* Over-map by one huge page so the start can be aligned, then trim. */
    size_t span = want + HUGE_ALIGN;
    char *raw = mmap(NULL, span, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED)
        return -errno;
    uintptr_t start = ((uintptr_t)raw + HUGE_ALIGN - 1) & ~(uintptr_t)(HUGE_ALIGN - 1);
    size_t head = start - (uintptr_t)raw;
    if (head)
        munmap(raw, head);
    size_t tail = span - head - want;
    if (tail)
        munmap((char *)start + want, tail);
    b->base = (void *)start;
    b->len = want;
#ifdef MADV_HUGEPAGE
    if (huge)
        b->huge = madvise(b->base, b->len, MADV_HUGEPAGE) == 0;
#else
    (void)huge;
#endif
    memset(b->base, 0, b->len);
    return 0;
}

void io_buffer_free(struct io_buffer *b)
{
    if (b->base)
        munmap(b->base, b->len);
    memset(b, 0, sizeof *b);
}
