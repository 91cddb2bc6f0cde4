/* Read buffers for the benchmark threads and the flash reader. They are
 * backed by transparent huge pages where the kernel allows it: a direct
 * read into one physically contiguous buffer is one DMA segment list of a
 * few entries, where 4 KiB pages make it 256 entries per MiB. On virtual
 * disks (virtio, Firecracker) each entry can cost the host a copy of its
 * own, and the difference in throughput is several-fold at 1 MiB chunks. */
#ifndef FLASHBED_IO_IO_BUFFER_H
#define FLASHBED_IO_IO_BUFFER_H

#include <stdbool.h>
#include <stddef.h>

struct io_buffer {
    void *base;
    size_t len;       /* mapped length */
    bool huge;        /* huge pages were requested (MADV_HUGEPAGE) */
};

/* Maps at least len bytes, aligned to 2 MiB, touched so that page faults
 * never land inside a measurement. huge=false gives ordinary pages. 0 or -errno. */
int io_buffer_alloc(struct io_buffer *b, size_t len, bool huge);
void io_buffer_free(struct io_buffer *b);

#endif
