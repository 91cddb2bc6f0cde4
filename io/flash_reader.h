/* Parallel reads from the model's FFN file: a pool of reader threads (the
 * paper reads with 32), each with its own instance of one of the sweep's I/O
 * engines (io/ioengine.h: psync, io_uring), direct I/O by default.
 *
 * The engine hands a batch of reads (file offset, length, destination) and
 * waits until all are done: flash_reader_read returns when every byte is in
 * place. Threads take reads from the batch through a shared counter, so a
 * batch of many small reads spreads evenly; reads longer than max_read are
 * split. Threads are created once and park between batches; a batch
 * allocates nothing and wakes only as many threads as it has reads.
 *
 * A read that fails or comes back short is read again once
 * (FLASH_READER_RETRIES, counted in the stats' retries); only its second
 * failure fails the batch, whose first failed offset the stats then hold.
 * Bytes and reads count only reads that completed.
 *
 * Destinations: direct reads land fastest in io_buffer_alloc(huge=true)
 * memory (io/io_buffer.h); on virtual disks 4 KiB pages cost several
 * times the throughput. */
#ifndef FLASHBED_IO_FLASH_READER_H
#define FLASHBED_IO_FLASH_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "io/ioengine.h"

struct flash_read {
    uint64_t offset; /* in the file; aligned to flash_reader_alignment() when direct */
    uint64_t len;    /* likewise a multiple of it */
    void *dst;       /* likewise aligned */
};

struct flash_reader_config {
    const char *path;
    const struct ioengine_ops *engine; /* psync, io_uring or fault (not mmap/null) */
    unsigned threads;                  /* reader threads, 1..1024 */
    unsigned iodepth;                  /* reads in flight per thread, 1..4096 (io_uring; psync: 1) */
    bool direct;                       /* bypass the page cache */
    uint64_t max_read;                 /* split longer reads (0: never); a multiple of the
                                          alignment when direct. Reads are split at 1 GiB
                                          whatever this says (one system call's most) */
    struct io_fault *fault;            /* the fault engine's rules and counts (io/io_fault.h); NULL: none */
};

#define FLASH_READER_RETRIES 1

struct flash_reader_stats {
    uint64_t batches;               /* calls to flash_reader_read */
    uint64_t reads, bytes;          /* reads completed, as issued (after splitting) */
    uint64_t retries;               /* reads tried again after a failure or a short read */
    bool failed;                    /* the last batch waited for failed on a read: */
    uint64_t failed_offset;         /* its offset in the file (the first reported) */
    double wait_ms;                 /* time callers spent in flash_reader_read (submit and wait) */
    double last_batch_ms;           /* the last batch waited for: from its hand-off to the threads until
                                     * its last read completed, whatever the caller did meanwhile */
};

struct flash_reader;

/* Starts cfg->threads reader threads, each with the engine set up and the
 * file open. NULL + err (naming the file) on failure: a bad configuration,
 * a missing file, an engine or open failure (O_DIRECT refused, say). */
struct flash_reader *flash_reader_open(const struct flash_reader_config *cfg, char *err, size_t errlen);

/* Reads all n requests and returns when every one is complete: 0, or -1
 * with err (an I/O error or a short read, naming the file and the offset).
 * Requests are checked first: one past the end of the file (its size when
 * opened), or not aligned for direct I/O, fails the batch before anything
 * is read. After an I/O error the rest of the batch is abandoned (some
 * destinations hold data, some not); the reader stays usable, except after
 * a failed io_uring submit or reap, which leaves reads it cannot account
 * for: every later call then fails. n == 0 returns 0 at once. One caller
 * at a time. */
int flash_reader_read(struct flash_reader *r, const struct flash_read *reqs, size_t n, char *err,
                      size_t errlen);

/* The same in two halves, so the caller can work while the reads run:
 * flash_reader_submit checks the requests (failing as above, nothing then
 * in flight) and hands them to the threads; flash_reader_wait returns when
 * all are complete, with the batch's error. reqs and the destinations
 * must stay untouched until the wait. One batch in flight: a second submit
 * before the wait fails; a wait with nothing in flight returns 0. The
 * stats' wait_ms counts the time spent in both calls. */
int flash_reader_submit(struct flash_reader *r, const struct flash_read *reqs, size_t n, char *err,
                        size_t errlen);
int flash_reader_wait(struct flash_reader *r, char *err, size_t errlen);
/* Offsets, lengths and buffers must be multiples of this (1 without direct I/O). */
uint64_t flash_reader_alignment(const struct flash_reader *r);
bool flash_reader_direct(const struct flash_reader *r);
void flash_reader_stats(const struct flash_reader *r, struct flash_reader_stats *s);
void flash_reader_close(struct flash_reader *r);

#endif
