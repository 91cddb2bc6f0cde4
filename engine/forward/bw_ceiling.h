/* The DRAM bandwidth ceiling of a decode step, measured beside it
 * (generate --bandwidth): after every timed step the backend's own threads
 * read the model's resident weights once with a plain read loop, and the
 * step's weight bandwidth is compared with that pass's. The ceiling is so
 * measured on the very pages the step streams (on a virtual machine two
 * buffers of the same size read up to 20% apart, by where their pages
 * landed), on the same threads, side by side in time (a neighbour's load
 * on a shared machine weighs on both alike). One engine's thread; the
 * passes use the engine's backend threads. */
#ifndef FLASHBED_ENGINE_FORWARD_BW_CEILING_H
#define FLASHBED_ENGINE_FORWARD_BW_CEILING_H

#include <stddef.h>

#include "engine/forward/engine.h"

struct bw_ceiling {
    double resident_bytes; /* what one pass reads: dram.bin and ffn.bin as loaded */
    int passes, max_passes;
    double read_s;  /* all passes */
    double *paired; /* [max_passes] per step: the step's weight bandwidth / its pass's read bandwidth */
    double best_bw; /* the fastest pass, bytes per second */
};

/* Room for up to max_passes passes over model m's resident weights.
 * 0, or -1 with err (out of memory). */
int bw_ceiling_open(struct bw_ceiling *c, const struct model *m, int max_passes, char *err, size_t errlen);
void bw_ceiling_close(struct bw_ceiling *c);
/* One pass after a decode step of step_s seconds that read `bytes` of
 * weights; passes beyond max_passes are not taken. */
void bw_ceiling_pass(struct bw_ceiling *c, struct engine *e, double step_s, double bytes);
/* The passes' read bandwidth, bytes per second (0 before any). */
double bw_ceiling_bandwidth(const struct bw_ceiling *c);
/* The median over steps of step bandwidth / pass bandwidth (0 before any);
 * sorts the record. */
double bw_ceiling_median_paired(struct bw_ceiling *c);

#endif
