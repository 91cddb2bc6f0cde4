/* One inference engine: a model, a backend (backend.h) holding its
 * weights, an FFN implementation and the run state (activations and a KV
 * cache preallocated for the context, in the backend's memory). Every
 * step is enqueued on the backend; a token's logits come back to the host
 * at its end. */
#ifndef FLASHBED_ENGINE_ENGINE_H
#define FLASHBED_ENGINE_ENGINE_H

#include <stddef.h>

#include "common/settings.h"
#include "engine/compute/backend.h"
#include "engine/compute/cpu_kernels.h"
#include "engine/compute/dev_model.h"
#include "engine/ffn/ffn.h"
#include "engine/model/model.h"

/* The activations, on the backend: refs into one buffer. */
struct run_state {
    struct dev_ref x;        /* (d_model) the residual stream */
    struct dev_ref xb, xb2;  /* (widest), (d_model): normed input, branch output */
    struct dev_ref ffn_out;  /* (d_model) the FFN's output beside xb2's attention (parallel blocks) */
    struct dev_ref q;        /* (q_dim) */
    struct dev_ref att_out;  /* (q_dim) */
    struct dev_ref k_cache;  /* (n_layers, max_seq, kv_dim) */
    struct dev_ref v_cache;  /* (n_layers, max_seq, kv_dim) */
    struct dev_ref logits_dev; /* (vocab) */
    /* (rope_dims / 2) the model's RoPE frequencies, one table per
     * arch_rope_table (the second one only for longrope or a windowed
     * layers' theta, arch_two_rope_tables; else it is the first's ref),
     * and the factor on their cos and sin; layer l at position p rotates
     * with table arch_layer_rope_table(l, p) */
    struct dev_ref rope_freq[ARCH_ROPE_TABLES];
    float rope_scale[ARCH_ROPE_TABLES];
    float *logits;           /* (vocab) on the host: the last token's, after engine_forward */
};

/* Host memory a host FFN reads its input from and writes its output to
 * when the backend's memory is not the host's (pinned buffers). */
struct host_bridge {
    struct dev_buf *buf; /* (2, d_model) floats, or NULL on the cpu backend */
    float *x, *out;
};

struct engine {
    const struct model *m;
    struct cpu_kernels *ck; /* the host's kernels: host FFNs, predictors, the cpu backend */
    const struct backend_ops *be_ops;
    struct backend *be;
    struct backend_device be_info;
    struct dev_model w;     /* the weights on the backend */
    struct ffn ffn;
    struct dev_buf *state;  /* what s's refs point into */
    struct dev_buf *logits_host; /* pinned, where logits come back; NULL on the cpu backend */
    struct host_bridge bridge;
    struct run_state s;
    int max_seq; /* positions the KV cache holds */
    int be_threads;
    char err[512]; /* why engine_forward failed */
};

/* The positions an engine initialised with max_seq holds: max_seq, capped
 * at the model's max_positions (0 or less: max_positions). */
int engine_context(const struct model *m, int max_seq);

/* max_seq 0: the model's max_positions. set tunes the backend (read at
 * init). 0, or -1 with the reason in err and nothing left started. A
 * backend without a device here, or lacking an op for the model's weight
 * type, is refused first, before anything is created (backend.h's rule:
 * backend_check_type). err is empty when the FFN's create failed: it
 * prints its own error (ffn.h). */
int engine_init(struct engine *e, const struct fb_settings *set, const struct model *m,
                const struct backend_ops *be, const struct ffn_ops *ffn, int threads, int max_seq, char *err,
                size_t errlen);
/* The same with settings for the FFN implementation (kept by pointer). */
int engine_init_with(struct engine *e, const struct fb_settings *set, const struct model *m,
                     const struct backend_ops *be, const struct ffn_ops *ffn, const void *ffn_config, int threads,
                     int max_seq, char *err, size_t errlen);
void engine_free(struct engine *e);

/* Runs token at position pos (0 <= pos < max_seq) and leaves the next
 * token's logits in e->s.logits. Allocates nothing. 0, or -1 with the
 * backend's reason in e->err (a device fault: the engine is then spent). */
int engine_forward(struct engine *e, int token, int pos);

#endif
