/* One inference engine: a model, a backend, an FFN implementation and the
 * run state (activations and a KV cache preallocated for the context). */
#ifndef FLASHBED_ENGINE_ENGINE_H
#define FLASHBED_ENGINE_ENGINE_H

#include <stddef.h>

#include "common/settings.h"
#include "engine/compute/backend.h"
#include "engine/ffn/ffn.h"
#include "engine/model/model.h"

struct run_state {
    float *x;        /* (d_model) the residual stream */
    float *xb, *xb2; /* (d_model) normed input, branch output */
    float *ffn_out;  /* (d_model) the FFN's output beside xb2's attention (parallel blocks) */
    float *q;        /* (q_dim) */
    float *att_out;  /* (q_dim) */
    float *k_cache;  /* (n_layers, max_seq, kv_dim) */
    float *v_cache;  /* (n_layers, max_seq, kv_dim) */
    float *logits;   /* (vocab) */
};

struct engine {
    const struct model *m;
    const struct backend_ops *be_ops;
    struct backend *be;
    struct ffn ffn;
    struct run_state s;
    int max_seq; /* positions the KV cache holds */
    int be_threads;
};

/* The positions an engine initialised with max_seq holds: max_seq, capped
 * at the model's max_positions (0 or less: max_positions). */
int engine_context(const struct model *m, int max_seq);

/* max_seq 0: the model's max_positions. set tunes the backend (read at
 * init). 0, or -1 with the reason in err and nothing left started. err is
 * empty when the FFN's create failed: it prints its own error (ffn.h). */
int engine_init(struct engine *e, const struct fb_settings *set, const struct model *m,
                const struct backend_ops *be, const struct ffn_ops *ffn, int threads, int max_seq, char *err,
                size_t errlen);
/* The same with settings for the FFN implementation (kept by pointer). */
int engine_init_with(struct engine *e, const struct fb_settings *set, const struct model *m,
                     const struct backend_ops *be, const struct ffn_ops *ffn, const void *ffn_config, int threads,
                     int max_seq, char *err, size_t errlen);
void engine_free(struct engine *e);

/* Runs token at position pos (0 <= pos < max_seq) and leaves the next
 * token's logits in e->s.logits. Allocates nothing. */
void engine_forward(struct engine *e, int token, int pos);

#endif
