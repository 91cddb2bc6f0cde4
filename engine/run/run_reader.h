/* run --io-engine auto: the flash reader chosen by measurement. Before the
 * run, io/reader_probe.h reads batches like the run's from the model's own
 * ffn.bin with each candidate — psync with --io-threads threads, io_uring
 * with 2 threads x 16 reads in flight, and with 4 x 8 — and the fastest
 * becomes the run's reader (p->cfg.io_engine, io_threads, iodepth). A
 * batch is a layer's reads: for naive and hybrid, which read whole layers,
 * the layer in reads of the engine's largest request (1 MiB); else one
 * neuron bundle per read, as many as a layer's set gains per token in the
 * trace's first tokens (what a window reads), or 5% of the layer without
 * a trace.
 *
 * Return convention: 0, or -1 with the reason in err. Threading: the
 * caller's thread, before the engine starts. */
#ifndef FLASHBED_ENGINE_RUN_READER_H
#define FLASHBED_ENGINE_RUN_READER_H

#include <stddef.h>
#include <stdint.h>

#include "engine/model/model.h"
#include "engine/run/run_setup.h"
#include "io/reader_probe.h"

enum { RUN_READER_CANDIDATES = 3, RUN_READER_ROUNDS = 5 };

/* What the probe measured, for run.json. */
struct run_reader_choice {
    struct reader_candidate c[RUN_READER_CANDIDATES];
    size_t n, best;
    uint64_t read_bytes;
    uint32_t batch_reads;
};

/* Probes the candidates for p's run on m and sets p->cfg's reader to the
 * fastest; what was measured into *out. */
int run_reader_choose(const struct model *m, struct run_setup *p, struct run_reader_choice *out, char *err,
                      size_t errlen);

#endif
