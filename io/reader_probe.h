/* Which flash-reader configuration reads the engine's batches fastest on
 * this machine: each candidate (an I/O engine, its threads, reads in
 * flight per thread) opens its own flash reader (io/flash_reader.h) on the
 * file and reads batches like the engine's — batch_reads reads of
 * read_bytes each, at random multiples of stride — rounds alternating
 * between the candidates, each round's batch drawn afresh, the median
 * throughput kept. Issue 32: many psync threads or io_uring with a few
 * threads and deep queues, chosen by measurement rather than assumed.
 *
 * Return convention: 0, or -1 with the reason in err (a candidate that
 * cannot open, a read that fails, a file too small for one read);
 * nothing is left open. Threading: one call at a time per caller; it
 * starts and joins the candidates' reader threads itself. */
#ifndef FLASHBED_IO_READER_PROBE_H
#define FLASHBED_IO_READER_PROBE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct reader_candidate {
    const char *engine;   /* psync or io_uring */
    unsigned threads, iodepth;
    double bytes_per_s;   /* out: the median of its rounds */
};

struct reader_probe_config {
    const char *path;
    uint64_t file_bytes;  /* the part of the file read from */
    uint64_t stride;      /* reads start at multiples of it (a neuron bundle) */
    uint64_t read_bytes;  /* each read's length; stride and read_bytes multiples of the alignment */
    uint32_t batch_reads; /* reads per batch (one layer's) */
    unsigned rounds;      /* batches per candidate (>= 1) */
    bool direct;
    uint64_t max_read;    /* the engine's split of long reads (0: none) */
    uint64_t seed;
};

/* Measures c[0..n) and sets *best to the fastest one's index. */
int reader_probe(const struct reader_probe_config *cfg, struct reader_candidate *c, size_t n, size_t *best,
                 char *err, size_t errlen);

#endif
