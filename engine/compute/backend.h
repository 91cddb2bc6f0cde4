/* One backend interface for every device the engine computes on (as
 * ggml-backend separates memory from compute; learnt from, not copied):
 *
 *   memory   buffers a backend owns (device memory, or pinned host memory
 *            the host can read), and existing host memory registered with
 *            it (the model's mapping, I/O buffers); a dev_ref is a byte
 *            offset into one buffer, what every op takes;
 *   copies   upload (host -> buffer), download (buffer -> host), and a
 *            batched row move inside a buffer (the neuron cache's
 *            swap-with-last, paper Fig. 6);
 *   a queue  every copy and op is enqueued on the backend's one in-order
 *            queue and may run later: the host may reuse an upload's
 *            source, or read a download's destination, only after an
 *            event recorded after it has been waited on (or after sync);
 *   compute  the forward pass's steps, on f32 vectors over weights of
 *            the types the backend supports (supports(): cpu and sim
 *            every type; opencl and cuda the float types, not yet the
 *            block formats), with the same contracts as the CPU kernels
 *            (cpu_kernels.h);
 *   a device what a backend computes on, described without an instance
 *            (describe(): listing and probing build nothing).
 *
 * Backends: cpu (the CPU kernels in place on host memory; its queue runs
 * each call before returning), sim (a strict simulated device: the CPU
 * kernels in its own buffers on a queue thread that runs only when the
 * host waits, bit-identical to cpu; backend_sim.h), opencl and cuda (one
 * kernel source, kernels/). Every call returns 0, or -1 with the reason
 * in backend_error(); a failure inside the queue (a kernel that faulted,
 * an injected fault) is reported by the next sync or event wait, and the
 * backend stays failed. Nothing aborts. Threading: one host thread calls
 * an instance at a time. */
#ifndef FLASHBED_ENGINE_BACKEND_H
#define FLASHBED_ENGINE_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/settings.h"
#include "engine/compute/cpu_kernels.h"
#include "engine/model/dtype.h"
#include "engine/model/model.h"

struct backend;
struct dev_buf;

/* A place in a buffer: buf NULL is "none" (an absent bias). */
struct dev_ref {
    struct dev_buf *buf;
    size_t off; /* bytes */
};

static inline struct dev_ref dev_at(struct dev_ref r, size_t bytes)
{
    return (struct dev_ref){r.buf, r.off + bytes};
}

enum buf_kind {
    BUF_DEVICE, /* the device's own memory: reached only through copies and ops */
    BUF_PINNED, /* host memory the device copies from and to at full speed; the host reads it too */
};

struct backend_config {
    const struct fb_settings *set; /* tuning (the CPU kernels' min_parallel_work) */
    int threads;                   /* host threads a backend that computes on the CPU uses */
    size_t max_dim;                /* the widest vector: d_model, q_dim, d_ff, FFN rows */
    size_t max_seq, max_heads;     /* attention's scores */
    struct cpu_kernels *host;      /* the engine's CPU kernels: the cpu backend computes with them */
};

/* A backend's device as its driver describes it. One description for
 * both questions:
 *   describe()  before any instance (listing, probing, the CLI's check
 *               of --backend): asks the driver only (clGetPlatformIDs and
 *               clGetDeviceInfo, cudaGetDeviceProperties; nothing for cpu
 *               and sim): no context, no queue, no kernel build; it
 *               describes the device create would open with the same
 *               settings;
 *   info()      of an instance: the device its work runs on.
 * So nothing is kept twice: an instance that was created answers info(),
 * and a caller that has none answers describe(). */
struct backend_device {
    char device[256];    /* the device's name, as its driver gives it */
    bool emulated;       /* computed by a model of a device (sim, PoCL): no GPU timings */
    bool host_visible;   /* host_ptr() gives a host address for every buffer (cpu) */
    bool zeroed;         /* alloc's memory starts zeroed, backed only where written (cpu) */
    uint64_t mem_bytes;  /* device memory, 0 when unknown */
};

/* The compute ops of struct backend_ops, by name, for supports(). */
enum backend_op {
    BACKEND_OP_MATVEC,
    BACKEND_OP_FFN_ROWS,
    BACKEND_OP_FFN_IDS,
    BACKEND_OP_ATTENTION,
    BACKEND_OP_NORM,
    BACKEND_OP_ROPE,
    BACKEND_OP_ADD,
    BACKEND_OP_EMBED,
    BACKEND_OP_MOVE_ROWS,
    BACKEND_OP_FFN_ACT,
};
enum { BACKEND_OP_COUNT = BACKEND_OP_FFN_ACT + 1 };

/* "matvec", "ffn_rows", ... (the member's name); "?" outside the enum. */
const char *backend_op_name(enum backend_op op);

/* What went through the queue since create. */
struct backend_counts {
    uint64_t bytes_up, bytes_down, bytes_moved; /* uploads, downloads, row moves */
    uint64_t copies, launches, syncs;           /* syncs: sync() and event waits */
};

/* The events every backend keeps timing for (event_elapsed): the last
 * this many recorded. An older one can still be waited for. */
enum { BACKEND_EVENTS_KEPT = 4096 };

/* One row move of move_rows: row src of the buffer to row dst. */
struct row_move {
    int32_t dst, src;
};

struct backend_ops {
    const char *name;
    /* This backend's device here, without an instance (struct
     * backend_device): 0, or -1 with why not in err (no driver or device
     * here, a device number out of range, or a backend this build lacks). */
    int (*describe)(const struct fb_settings *set, struct backend_device *out, char *err, size_t errlen);
    /* Whether the backend computes op on weights of type t: a property of
     * its kernels, the same on every device it runs on, so asked with no
     * device and no instance. For an op that reads no weights (attention,
     * norm, rope, add, move_rows: f32 and bytes), t is the model's weight
     * type all the same. NULL only in a backend this build lacks. The
     * caller's rule is below (backend_check_type). */
    bool (*supports)(enum backend_op op, enum fb_dtype t);
    /* An instance; NULL, with the reason in err, when the backend has no
     * device here or cannot start (a kernel build log is in err). */
    struct backend *(*create)(const struct backend_config *cfg, char *err, size_t errlen);
    void (*destroy)(struct backend *b);
    const char *(*error)(struct backend *b); /* why the last call failed */
    void (*info)(struct backend *b, struct backend_device *out); /* the device b runs on */
    void (*counts)(struct backend *b, struct backend_counts *out);

    /* ---- memory ---- */
    /* A buffer of bytes of kind; -1 when the device refuses (too big). */
    int (*alloc)(struct backend *b, size_t bytes, enum buf_kind kind, struct dev_buf **out);
    /* Wraps host memory the caller keeps (bytes from host) as a buffer
     * copies can reach; on cpu ops compute on it in place. Freed with
     * buf_free, which leaves the memory to its owner (NULL: nothing). */
    int (*register_host)(struct backend *b, void *host, size_t bytes, struct dev_buf **out);
    void (*buf_free)(struct backend *b, struct dev_buf *buf);
    /* The host address of a buffer's byte 0, or NULL when the host cannot
     * reach it (device memory off the cpu backend). Reading it is safe
     * only after the work writing it is waited for. */
    void *(*host_ptr)(struct backend *b, struct dev_buf *buf);

    /* ---- copies and the queue ---- */
    int (*upload)(struct backend *b, struct dev_ref dst, const void *src, size_t bytes);
    int (*download)(struct backend *b, void *dst, struct dev_ref src, size_t bytes);
    /* For each of n moves in order: row_bytes at base + src * row_bytes to
     * base + dst * row_bytes; moves is a buffer of n struct row_move,
     * uploaded by the host before. */
    int (*move_rows)(struct backend *b, struct dev_ref base, size_t row_bytes, struct dev_ref moves, int n);
    /* A mark after everything enqueued so far; event_wait blocks until
     * the queue has passed it. Events are numbered 1, 2, ... in the order
     * recorded, so one waited for completes every smaller one. */
    int (*event_record)(struct backend *b, uint64_t *event);
    int (*event_wait)(struct backend *b, uint64_t event);
    int (*sync)(struct backend *b); /* waits for everything enqueued */
    /* *ms = the device's time between two events recorded on this
     * instance's queue, from recorded before (or as) to: what the queue
     * took to run the work enqueued between them. Both must have
     * completed: waited for with event_wait or sync, or an event recorded
     * after them waited for (the queue is in order). Returns 0, or -1 with
     * the reason in error() (the backend stays usable) when either is not
     * complete yet, was never recorded, is older than the last
     * BACKEND_EVENTS_KEPT recorded (its record recycled: refused, never
     * answered wrong), or to precedes from; from == to gives 0. It is not
     * a wait: it blocks on nothing and leaves counts (syncs included)
     * unchanged. Whose clock: cpu runs every copy and op synchronously in
     * the calling thread, so its events are the host's monotonic clock
     * when recorded; sim's queue thread stamps each event's mark as it
     * reaches it, on a clock that runs only while that thread runs
     * commands (its idle time while the host has not waited yet does not
     * count: backend_sim.h); opencl takes the marker's profiling end, cuda
     * cudaEventElapsedTime (about 0.5 us resolution). */
    int (*event_elapsed)(struct backend *b, uint64_t from, uint64_t to, double *ms);

    /* ---- compute: the contracts of cpu_kernels.h, on buffers ---- */
    int (*matvec)(struct backend *b, struct dev_ref out, struct dev_ref w, enum fb_dtype t, struct dev_ref x,
                  struct dev_ref bias, int rows, int cols);
    int (*ffn_rows)(struct backend *b, struct dev_ref out, struct dev_ref rows, size_t row_stride, int n_rows,
                    struct dev_ref up_bias, struct dev_ref x, int d, enum fb_dtype t, const struct arch *a);
    /* ids: a buffer of n_ids int32 bundle numbers */
    int (*ffn_ids)(struct backend *b, struct dev_ref out, struct dev_ref bundles, size_t row_stride,
                   struct dev_ref ids, int n_ids, struct dev_ref up_bias, struct dev_ref x, int d, enum fb_dtype t,
                   const struct arch *a);
    int (*attention)(struct backend *b, struct dev_ref out, struct dev_ref q, struct dev_ref k_cache,
                     struct dev_ref v_cache, int n_pos, int n_heads, int n_kv_heads, int head_dim);
    int (*norm)(struct backend *b, struct dev_ref out, struct dev_ref x, struct dev_ref weight, struct dev_ref bias,
                int d, enum norm_kind kind, float eps);
    /* inv_freq: rot_dims / 2 floats, pair j's turn per position
     * (arch_rope_freqs); cos and sin are multiplied by scale */
    int (*rope)(struct backend *b, struct dev_ref vec, int n_heads, int head_dim, int rot_dims, int pos,
                struct dev_ref inv_freq, float scale);
    int (*add)(struct backend *b, struct dev_ref y, struct dev_ref x, int n);
    /* out = row r of table times scale (1: the row as stored; Gemma's sqrt(d_model)) */
    int (*embed)(struct backend *b, struct dev_ref out, struct dev_ref table, enum fb_dtype t, int r, int d,
                 float scale);
    /* h[n] = each neuron's value before the down projection from z = up x
     * (+ bias) and, for a GLU, g = gate x (activation.h's
     * ffn_neuron_value): the FFN as three matvecs and this, for weights
     * kept as whole matrices (a GGUF's, as stored). g's buf is NULL
     * without a gate; h may be z. */
    int (*ffn_act)(struct backend *b, struct dev_ref h, struct dev_ref z, struct dev_ref g, int n,
                   const struct arch *a);
};

/* The backends: backend_cpu, backend_sim, backend_opencl, backend_cuda
 * (backends.def, the one list). */
#define BACKEND(id) extern const struct backend_ops backend_##id;
#include "engine/compute/backends.def"
#undef BACKEND

/* A backend by name (cpu, sim, opencl, cuda); NULL when unknown. A known
 * backend that this build or machine lacks is found: its describe and
 * create say so. */
const struct backend_ops *backend_find(const char *name);
/* The i-th backend of backends.def, from 0; NULL past the last. */
const struct backend_ops *backend_nth(size_t i);
/* "cpu, sim, opencl, cuda": the names backend_find knows. */
const char *backend_names(void);
/* "cpu|sim|opencl|cuda": the same for an option's allowed values, as an
 * address constant that a static option table can hold. */
#define BACKEND_ALLOWED (backend_bar_names + 1)
extern const char backend_bar_names[]; /* "|cpu|sim|opencl|cuda" */

/* The caller's rule: support is asked before anything is planned or
 * allocated, and there is no silent fallback.
 *   - A backend computes a model only if it supports every op for the
 *     model's weight type (the forward pass and the FFNs between them use
 *     all of them). The engine asks at set-up (engine_init_with, before
 *     the CPU kernels, the instance or any buffer): a type the backend
 *     lacks is refused in one line naming the backend, the op and the
 *     type: "opencl backend: no matvec for q4_0 weights (cpu computes
 *     every op for every type)". A run never moves an op to another
 *     backend behind the caller's back: a pass split between devices
 *     would move every activation across the bus and be measured as the
 *     device's.
 *   - cpu is the model: it computes every op for every type of the table
 *     (a new type lands there first; the device backends say no until
 *     their kernels decode it).
 *   - A test of ops (backend_ops_<name>) skips an op a backend lacks for
 *     a type, and counts the skips, as ggml's test-backend-ops does.
 * backend_check_type applies the first: describe into dev (the backend
 * has a device here) and then supports for every op; 0, or -1 with the
 * one line in err. */
int backend_check_type(const struct backend_ops *b, const struct fb_settings *set, enum fb_dtype t,
                       struct backend_device *dev, char *err, size_t errlen);
/* supports, false for a backend this build lacks (no supports). */
bool backend_supports(const struct backend_ops *b, enum backend_op op, enum fb_dtype t);

#endif
