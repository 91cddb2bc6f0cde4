/* The streamer's private parts (streamer.h), shared by its files:
 * streamer_read.c (batches, landing, checks), streamer_step.c (a layer's
 * decision, memory management and read-ahead) and streamer_open.c.
 * Not an interface: nothing outside engine/ffn/streamer*.c includes it. */
#ifndef FLASHBED_ENGINE_FFN_STREAMER_IMPL_H
#define FLASHBED_ENGINE_FFN_STREAMER_IMPL_H

#include "engine/ffn/streamer.h"

/* Hands reqs[0..n) to r without waiting; true when a batch is in flight. */
bool streamer_submit_batch(struct streamer *s, struct flash_reader *r, const struct flash_read *reqs, size_t n,
                           struct flash_reader_stats *before);
/* Waits for the batch in flight on r, then its counts. */
int streamer_wait_batch(struct streamer *s, struct flash_reader *r, const struct flash_reader_stats *before,
                        uint64_t *bytes);
/* The rows of a completed batch against their checksums. */
void streamer_verify_landed(struct streamer *s, const struct landed_row *rows, uint32_t n);
/* Issues the queued reads and computes the staged rows as a group. */
void streamer_flush(struct streamer *s, int layer, const float *x, float *out);
/* Whether a read of ids first..first+count-1 can land in place. */
bool streamer_lands_in_place(const struct streamer *s, uint32_t first, uint32_t count);
/* STREAMER_NEEDED_ORDER: the rows noted this batch computed (compute_rows) unless a read failed. */
void streamer_sum_batch(struct streamer *s, int layer, const float *x, float *out);
/* Queues the layout's reads of st (flushing when staging or bounce fill). */
void streamer_queue_reads(struct streamer *s, int layer, const struct cache_step *st, const float *x, float *out);

/* streamer_step.c's parts of a step, shared with streamer_needed.c: the
 * policy's deletions not needed now leave; unit id leaves the cache (its
 * move counted); the kept rows read appended; the marks cleared; the
 * step's counts. */
void streamer_make_room(struct streamer *s, int layer, const struct cache_step *st);
void streamer_drop_row(struct streamer *s, int layer, uint32_t id);
int streamer_append_kept(struct streamer *s, int layer, const struct cache_step *st);
void streamer_clear_marks(struct streamer *s, const struct cache_step *st, uint32_t n_needed);
void streamer_count_step(struct streamer *s, const struct neuron_cache *c, const struct cache_step *st,
                         uint64_t shrinks);
/* STREAMER_NEEDED_ORDER's streamer_forward (streamer_needed.c). */
void streamer_forward_needed(struct streamer *s, const struct streamer_step *sp, const float *x, float *out,
                             uint32_t len);

#endif
