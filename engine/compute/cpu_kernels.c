/* The CPU kernels (cpu_kernels.h): f32 compute over f32/f16/bf16 weights
 * (the block formats' path: quant_dot.h, below the dispatches), rows split over
 * a thread team, AVX2/FMA/F16C intrinsics where the compiler targets them
 * and plain loops with independent accumulators (which compilers vectorize
 * for NEON and others) elsewhere. Decode at batch 1 is memory-bound, so the
 * loops aim to stream weights at full bandwidth, not to save flops. */
#include "engine/compute/cpu_kernels.h"

#include <math.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/clock.h"
#include "common/errbuf.h"
#include "common/limits.h"
#include "engine/compute/activation.h"
#include "engine/compute/membw.h"
#include "engine/compute/quant_dot.h"
#include "engine/compute/threadpool.h"

#if defined(__AVX2__) && defined(__FMA__) && defined(__F16C__)
#include <immintrin.h>
#define HAVE_AVX2 1
#endif

#define FFN_GROUPS 16 /* see the FFN below */
#define PAGE_FLOATS 1024 /* floats in a 4 KiB page */

struct cpu_kernels {
    struct threadpool *pool;
    int threads;
    size_t max_dim, max_seq;
    size_t min_parallel; /* multiply-adds below which one thread works alone */
    float *partial_buf; /* the allocation partial lies in */
    float *partial;     /* (FFN_GROUPS, partial_stride): the FFN's group sums (below) */
    size_t partial_stride;
    struct work_slot *slots; /* one per thread: the rows it owns (below) */
    float *att;     /* (max_heads, max_seq): attention scores */
    float *read_sums; /* (threads, 16): read_pass's sums, a cache line each */
    void *xq;         /* x quantized for the block types' dot products (max_dim of any activation type) */
};

/* ---- the decode entries: the only code here that knows how a type lays
 * out its elements. Each is an exhaustive switch on t, called with t a
 * constant (each loop below has one copy per type, see "one copy of each
 * loop per type"), so the switch folds away. A new type in
 * common/wtypes.def does not compile until it has a case in each: load8
 * (8 elements from i, a multiple of 8, widened: the AVX2 loops), elem
 * (element i: the tails and the portable loops) and pair_rows (below). A
 * row's bytes come from the table (wtype_row_bytes), constant here too.
 * The block formats (wtypes.def's WTYPE_QUANT rows) have no element
 * entry: every dispatch below sends their rows to the block path (x
 * quantized once, integer dot products: quant_dot.h), so their cases in
 * these entries are never reached. */

#ifdef HAVE_AVX2
static inline float hsum256(__m256 v)
{
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    s = _mm_add_ss(s, _mm_movehdup_ps(s));
    return _mm_cvtss_f32(s);
}

static inline __attribute__((always_inline)) __m256 load8(const void *w, enum fb_dtype t, int i)
{
    switch (t) {
    case DTYPE_F32:
        return _mm256_loadu_ps((const float *)w + i);
    case DTYPE_F16:
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)w + i)));
    case DTYPE_BF16: /* the top half of an f32 */
        return _mm256_castsi256_ps(
            _mm256_slli_epi32(_mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)((const uint16_t *)w + i))), 16));
#define WTYPE(...)
#define WTYPE_QUANT(id, ...) case DTYPE_##id:
#include "common/wtypes.def"
#undef WTYPE_QUANT
#undef WTYPE
        break; /* the block path's (above) */
    }
    return _mm256_setzero_ps();
}
#endif

static inline __attribute__((always_inline)) float elem(const void *w, enum fb_dtype t, int i)
{
    switch (t) {
    case DTYPE_F32:
        return ((const float *)w)[i];
    case DTYPE_F16:
        return f16_to_f32(((const uint16_t *)w)[i]);
    case DTYPE_BF16:
        return bf16_to_f32(((const uint16_t *)w)[i]);
#define WTYPE(...)
#define WTYPE_QUANT(id, ...) case DTYPE_##id:
#include "common/wtypes.def"
#undef WTYPE_QUANT
#undef WTYPE
        break; /* the block path's (above) */
    }
    return 0.0f;
}

#ifndef HAVE_AVX2
/* dst[16] = w[i, i + 16) widened: the portable loops' load, a block the
 * compiler turns into vector conversions (NEON, SSE2) */
static inline __attribute__((always_inline)) void widen16(float *dst, const void *w, enum fb_dtype t, int i)
{
#if defined(__aarch64__) && defined(__ARM_FP16_FORMAT_IEEE)
    if (t == DTYPE_F16) { /* the hardware's own conversion (fcvtl) */
        const __fp16 *h = (const __fp16 *)w + i;
        for (int k = 0; k < 16; k++)
            dst[k] = (float)h[k];
        return;
    }
#endif
    for (int k = 0; k < 16; k++)
        dst[k] = elem(w, t, i + k);
}
#endif

/* How the weights stream depends on the micro-architecture; each rule
 * here was measured on a 2-vCPU development VM against the read loop of
 * membw.c (tools/bench-dense.sh, generate --bandwidth).
 *
 * A 16-bit row costs about twice the instructions per byte (the
 * conversion), so the out-of-order window reaches half as far ahead, and
 * without help it streamed at ~75% of that bandwidth on Zen 3: those rows go
 * one at a time, as one sequential stream, and each step prefetches the
 * bytes PREFETCH_AHEAD further on (non-temporal: they are read once),
 * which keeps misses in flight across the 4 KiB boundaries where the
 * hardware prefetchers restart (~90%). Two 16-bit rows at a time ran
 * slower, with or without prefetch; so did other distances (512-8192).
 *
 * f32 rows differ by machine. On Zen 3 (AVX2 only) they went two at a time,
 * sharing each load of x, with no software prefetch (96%, against ~88% one
 * at a time; prefetches only took miss slots there). On Zen 4 (AVX-512)
 * pairs were the slowest way (75-85%) and f32 rows stream best like the
 * 16-bit ones, one at a time with the same prefetch (93-95%; without the
 * prefetch about the same; 512-bit kernels no faster, the loads being
 * what waits). The build has no micro-architecture switch, so AVX-512
 * stands in for "Zen 4 or later"; a new machine wants its own measurement. */
#define PREFETCH_AHEAD 1024
#if defined(__AVX512F__)
#define PAIR_F32_ROWS 0
#else
#define PAIR_F32_ROWS 1
#endif

/* Whether rows of t go two at a time (the measurements above). */
static inline bool pair_rows(enum fb_dtype t)
{
    switch (t) {
    case DTYPE_F32:
        return PAIR_F32_ROWS;
    case DTYPE_F16:
    case DTYPE_BF16:
        return false;
#define WTYPE(...)
#define WTYPE_QUANT(id, ...) case DTYPE_##id:
#include "common/wtypes.def"
#undef WTYPE_QUANT
#undef WTYPE
        break; /* the block path's (above) */
    }
    return false;
}

static inline int prefetch_ahead(enum fb_dtype t)
{
    return pair_rows(t) ? -1 : PREFETCH_AHEAD;
}

#ifdef HAVE_AVX2
/* `lines` cache lines from p on */
static inline __attribute__((always_inline)) void prefetch_lines(const char *p, int lines)
{
    for (int k = 0; k < lines; k++)
        _mm_prefetch(p + 64 * k, _MM_HINT_NTA);
}
#endif

/* dot_as and axpy_as take a prefetch pointer pf (NULL: none): each step
 * prefetches, from pf on, as many bytes as it reads from w: the cache
 * lines of 32 elements (two of f32, one of a 16-bit type). */
#define STEP_LINES(t) ((int)((wtype_row_bytes(t, 32) + 63) / 64))

/* A row's dot product: four accumulators of 8 lanes over i stepping by 32,
 * then 8 at a time into the first, then one at a time. dot2_as gives each
 * of its two rows exactly this order, so pairing rows (to share the loads
 * of x) changes no result. */
static inline __attribute__((always_inline)) float dot_as(const void *w, enum fb_dtype t, const float *x, int n,
                                                          const char *pf)
{
    int i = 0;
    float sum = 0.0f;
#ifdef HAVE_AVX2
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    for (; i + 32 <= n; i += 32) {
        if (pf)
            prefetch_lines(pf + wtype_row_bytes(t, (uint64_t)i), STEP_LINES(t));
        a0 = _mm256_fmadd_ps(load8(w, t, i), _mm256_loadu_ps(x + i), a0);
        a1 = _mm256_fmadd_ps(load8(w, t, i + 8), _mm256_loadu_ps(x + i + 8), a1);
        a2 = _mm256_fmadd_ps(load8(w, t, i + 16), _mm256_loadu_ps(x + i + 16), a2);
        a3 = _mm256_fmadd_ps(load8(w, t, i + 24), _mm256_loadu_ps(x + i + 24), a3);
    }
    for (; i + 8 <= n; i += 8)
        a0 = _mm256_fmadd_ps(load8(w, t, i), _mm256_loadu_ps(x + i), a0);
    sum = hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
#else
    (void)pf;
    float acc[16] = {0}, wb[16];
    for (; i + 16 <= n; i += 16) {
        widen16(wb, w, t, i);
        for (int k = 0; k < 16; k++)
            acc[k] += wb[k] * x[i + k];
    }
    for (int k = 0; k < 16; k++)
        sum += acc[k];
#endif
    for (; i < n; i++)
        sum += elem(w, t, i) * x[i];
    return sum;
}

/* Two rows against x in one pass, each summed as dot_as sums it (no
 * prefetch: only f32 rows go in pairs). */
static inline __attribute__((always_inline)) void dot2_as(const void *w0, const void *w1, enum fb_dtype t,
                                                          const float *x, int n, float *out0, float *out1)
{
#ifdef HAVE_AVX2
    int i = 0;
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
    __m256 b0 = a0, b1 = a0, b2 = a0, b3 = a0;
    for (; i + 32 <= n; i += 32) {
        __m256 x0 = _mm256_loadu_ps(x + i), x1 = _mm256_loadu_ps(x + i + 8);
        a0 = _mm256_fmadd_ps(load8(w0, t, i), x0, a0);
        b0 = _mm256_fmadd_ps(load8(w1, t, i), x0, b0);
        a1 = _mm256_fmadd_ps(load8(w0, t, i + 8), x1, a1);
        b1 = _mm256_fmadd_ps(load8(w1, t, i + 8), x1, b1);
        __m256 x2 = _mm256_loadu_ps(x + i + 16), x3 = _mm256_loadu_ps(x + i + 24);
        a2 = _mm256_fmadd_ps(load8(w0, t, i + 16), x2, a2);
        b2 = _mm256_fmadd_ps(load8(w1, t, i + 16), x2, b2);
        a3 = _mm256_fmadd_ps(load8(w0, t, i + 24), x3, a3);
        b3 = _mm256_fmadd_ps(load8(w1, t, i + 24), x3, b3);
    }
    for (; i + 8 <= n; i += 8) {
        __m256 x0 = _mm256_loadu_ps(x + i);
        a0 = _mm256_fmadd_ps(load8(w0, t, i), x0, a0);
        b0 = _mm256_fmadd_ps(load8(w1, t, i), x0, b0);
    }
    float s0 = hsum256(_mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3)));
    float s1 = hsum256(_mm256_add_ps(_mm256_add_ps(b0, b1), _mm256_add_ps(b2, b3)));
    for (; i < n; i++) {
        s0 += elem(w0, t, i) * x[i];
        s1 += elem(w1, t, i) * x[i];
    }
    *out0 = s0;
    *out1 = s1;
#else
    *out0 = dot_as(w0, t, x, n, NULL);
    *out1 = dot_as(w1, t, x, n, NULL);
#endif
}

/* y[n] += a * w[n] */
static inline __attribute__((always_inline)) void axpy_as(float *y, float a, const void *w, enum fb_dtype t, int n,
                                                          const char *pf)
{
    int i = 0;
#ifdef HAVE_AVX2
    __m256 av = _mm256_set1_ps(a);
    for (; i + 32 <= n; i += 32) {
        if (pf)
            prefetch_lines(pf + wtype_row_bytes(t, (uint64_t)i), STEP_LINES(t));
        for (int k = i; k < i + 32; k += 8)
            _mm256_storeu_ps(y + k, _mm256_fmadd_ps(av, load8(w, t, k), _mm256_loadu_ps(y + k)));
    }
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(av, load8(w, t, i), _mm256_loadu_ps(y + i)));
#else
    (void)pf;
    float wb[16];
    for (; i + 16 <= n; i += 16) {
        widen16(wb, w, t, i);
        for (int k = 0; k < 16; k++)
            y[i + k] += a * wb[k];
    }
#endif
    for (; i < n; i++)
        y[i] += a * elem(w, t, i);
}

/* y[n] += a * the n elements of a block type's row at w (n a whole
 * number of its blocks): decoded a block at a time (dtype_to_f32, the
 * reference decode) and added in order. */
static void axpy_blocks(float *y, float a, const void *w, enum fb_dtype t, int n)
{
    float buf[256]; /* the largest block */
    int k = (int)wtype_block_elems(t);
    size_t bytes = wtype_block_bytes(t);
    for (int i = 0; i < n; i += k, w = (const char *)w + bytes) {
        dtype_to_f32(buf, w, t, (size_t)k);
        for (int e = 0; e < k; e++)
            y[i + e] += a * buf[e];
    }
}

/* One copy of each loop per storage type, so the type test is not in the
 * inner loop: each dispatch below is a switch with a case per row of
 * common/wtypes.def, generated from it, calling the loop with the type as
 * a constant. */
static void axpy(float *y, float a, const void *w, enum fb_dtype t, int n)
{
    switch (t) {
#define WTYPE(id, ...)                              \
    case DTYPE_##id:                                \
        axpy_as(y, a, w, DTYPE_##id, n, NULL);      \
        break;
#define WTYPE_QUANT(id, ...)                        \
    case DTYPE_##id:                                \
        axpy_blocks(y, a, w, DTYPE_##id, n);        \
        break;
#include "common/wtypes.def"
#undef WTYPE_QUANT
#undef WTYPE
    }
}

/* ---- sharing out the work ----
 * Each worker owns a contiguous share of the rows (or FFN groups) and
 * takes it a chunk at a time from its own counter, so its weights stream
 * from memory in one run the hardware prefetchers can follow; a worker
 * that has finished its share takes chunks from the others' (the next one
 * each has not started), so on a shared machine a descheduled thread
 * delays only the chunk it is in, not its whole share. */

struct work_slot {
    _Alignas(64) atomic_int next; /* the first row not yet taken */
    int end;
};

static void share_out(struct cpu_kernels *b, int n, int workers, int chunk)
{
    for (int w = 0; w < workers; w++) {
        int lo = (int)((long long)n * w / workers) / chunk * chunk;
        int hi = w + 1 == workers ? n : (int)((long long)n * (w + 1) / workers) / chunk * chunk;
        atomic_store_explicit(&b->slots[w].next, lo, memory_order_relaxed);
        b->slots[w].end = hi;
    }
}

/* The next chunk [*lo, *hi) for `worker`: its own first, then the others'
 * in turn; *victim (0 at the start) remembers whose it is on. */
static bool take_chunk(struct cpu_kernels *b, int worker, int workers, int chunk, int *victim, int *lo, int *hi)
{
    for (; *victim < workers; ++*victim) {
        struct work_slot *s = &b->slots[(worker + *victim) % workers];
        if (atomic_load_explicit(&s->next, memory_order_relaxed) >= s->end)
            continue;
        int c = atomic_fetch_add_explicit(&s->next, chunk, memory_order_relaxed);
        if (c < s->end) {
            *lo = c;
            *hi = c + chunk < s->end ? c + chunk : s->end;
            return true;
        }
    }
    return false;
}

static void split(int n, int worker, int workers, int *lo, int *hi)
{
    *lo = (int)((long long)n * worker / workers);
    *hi = (int)((long long)n * (worker + 1) / workers);
}

/* ---- the block types' activations ---- */

/* For a block type t: x[n] quantized into b->xq (its dot products'
 * activation type, once per product) and its dot product; NULL for a
 * float type. */
static quant_dot_fn quantize_x(struct cpu_kernels *b, enum fb_dtype t, const float *x, int n)
{
    quant_dot_fn dot;
    enum quant_act act;
    if (quant_dot_of(t, &dot, &act) != 0)
        return NULL;
    quant_act_from_f32(b->xq, act, x, (size_t)n);
    return dot;
}

/* ---- matvec ---- */

#define ROW_CHUNK 16 /* rows per chunk; even, so rows pair up */

struct matvec_job {
    struct cpu_kernels *b;
    float *out;
    const void *w;
    enum fb_dtype t;
    const float *x, *bias;
    int rows, cols;
    quant_dot_fn qdot; /* a block type's dot product, against b->xq */
    quant_dot8_fn qdot8; /* its eight-row form, or NULL */
};

static inline __attribute__((always_inline)) void matvec_rows_as(const struct matvec_job *j, enum fb_dtype t,
                                                                 int lo, int hi)
{
    size_t row_bytes = wtype_row_bytes(t, (uint64_t)j->cols);
    const char *w = (const char *)j->w + (size_t)lo * row_bytes;
    int ahead = prefetch_ahead(t);
    int r = lo;
    if (pair_rows(t))
        for (; r + 2 <= hi; r += 2, w += 2 * row_bytes)
            dot2_as(w, w + row_bytes, t, j->x, j->cols, &j->out[r], &j->out[r + 1]);
    for (; r < hi; r++, w += row_bytes)
        j->out[r] = dot_as(w, t, j->x, j->cols, ahead >= 0 ? w + ahead : NULL);
    if (j->bias)
        for (r = lo; r < hi; r++)
            j->out[r] += j->bias[r];
}

/* The block path: each row's integer dot product against x quantized. */
static void matvec_rows_q(const struct matvec_job *j, int lo, int hi)
{
    size_t row_bytes = wtype_row_bytes(j->t, (uint64_t)j->cols);
    const char *w = (const char *)j->w + (size_t)lo * row_bytes;
    int r = lo;
    if (j->qdot8 && row_bytes < (size_t)1 << 28)
        for (; r + 8 <= hi; r += 8, w += 8 * row_bytes)
            j->qdot8(w, row_bytes, j->b->xq, j->cols, &j->out[r]);
    for (; r < hi; r++, w += row_bytes)
        j->out[r] = j->qdot(w, j->b->xq, j->cols);
    if (j->bias)
        for (int r = lo; r < hi; r++)
            j->out[r] += j->bias[r];
}

static void matvec_rows(const struct matvec_job *j, int lo, int hi)
{
    switch (j->t) {
#define WTYPE(id, ...)                              \
    case DTYPE_##id:                                \
        matvec_rows_as(j, DTYPE_##id, lo, hi);      \
        break;
#define WTYPE_QUANT(id, ...)                        \
    case DTYPE_##id:                                \
        matvec_rows_q(j, lo, hi);                   \
        break;
#include "common/wtypes.def"
#undef WTYPE_QUANT
#undef WTYPE
    }
}

static void matvec_part(void *arg, int worker, int workers)
{
    struct matvec_job *j = arg;
    int lo, hi, victim = 0;
    while (take_chunk(j->b, worker, workers, ROW_CHUNK, &victim, &lo, &hi))
        matvec_rows(j, lo, hi);
}

void ck_matvec(struct cpu_kernels *b, float *out, const void *w, enum fb_dtype t, const float *x,
                       const float *bias, int rows, int cols)
{
    struct matvec_job j = {b, out, w, t, x, bias, rows, cols, quantize_x(b, t, x, cols), quant_dot8_of(t)};
    /* small matrices are not worth waking the team for */
    if ((size_t)rows * (size_t)cols < b->min_parallel) {
        matvec_rows(&j, 0, rows);
        return;
    }
    share_out(b, rows, b->threads, ROW_CHUNK);
    threadpool_run(b->pool, matvec_part, &j);
}

/* ---- accumulating rows ----
 * y's elements are cut into chunks a worker takes whole; each element sums
 * the rows in their order, so the result does not depend on the threads. */

#define AXPY_CHUNK 128 /* elements of y per chunk: a multiple of 32 */

struct axpy_job {
    struct cpu_kernels *b;
    float *y;
    const void *const *rows;
    const float *a;
    int n_rows;
    enum fb_dtype t;
    int chunk; /* AXPY_CHUNK, or a block type's block when larger (a chunk starts on a block) */
};

static void axpy_rows_span(const struct axpy_job *j, int lo, int hi)
{
    size_t skip = wtype_row_bytes(j->t, (uint64_t)lo); /* lo: a multiple of j->chunk */
    for (int r = 0; r < j->n_rows; r++)
        if (j->a[r] != 0.0f)
            axpy(j->y + lo, j->a[r], (const char *)j->rows[r] + skip, j->t, hi - lo);
}

static void axpy_rows_part(void *arg, int worker, int workers)
{
    struct axpy_job *j = arg;
    int lo, hi, victim = 0;
    while (take_chunk(j->b, worker, workers, j->chunk, &victim, &lo, &hi))
        axpy_rows_span(j, lo, hi);
}

void ck_axpy_rows(struct cpu_kernels *b, float *y, int n, const void *const *rows, const float *a, int n_rows,
                  enum fb_dtype t)
{
    int block = (int)wtype_block_elems(t);
    struct axpy_job j = {b, y, rows, a, n_rows, t, block > AXPY_CHUNK ? block : AXPY_CHUNK};
    if ((size_t)n * (size_t)n_rows < b->min_parallel || n <= j.chunk) {
        axpy_rows_span(&j, 0, n);
        return;
    }
    share_out(b, n, b->threads, j.chunk);
    threadpool_run(b->pool, axpy_rows_part, &j);
}

/* ---- FFN over bundles ----
 * The rows are cut into FFN_GROUPS fixed groups; one thread computes a
 * group alone, streaming each bundle once (up and gate side by side, then
 * down: the whole neuron from one contiguous read) into the group's own
 * sum, and the sums are added in group order. So the result depends
 * neither on the number of threads nor on which thread took which group. */

struct ffn_job {
    struct cpu_kernels *b;
    float *out;
    const char *rows;
    size_t stride;
    int n_rows, d;
    const float *up_bias, *x;
    const int32_t *ids; /* the bundles to take (ids[r]), or NULL: bundle r */
    enum fb_dtype t;
    enum activation act;
    float act_threshold; /* FATReLU's */
    bool glu, act_on_up;
    quant_dot_fn qdot; /* a block type's dot product, against b->xq */
};

static inline __attribute__((always_inline)) void ffn_group_as(const struct ffn_job *j, enum fb_dtype t, int g)
{
    float *acc = j->b->partial + (size_t)g * j->b->partial_stride;
    memset(acc, 0, (size_t)j->d * sizeof *acc);
    size_t row_bytes = wtype_row_bytes(t, (uint64_t)j->d);
    size_t down_off = row_bytes * (j->glu ? 2 : 1);
    int lo = (int)((long long)j->n_rows * g / FFN_GROUPS), hi = (int)((long long)j->n_rows * (g + 1) / FFN_GROUPS);
    int ahead = prefetch_ahead(t);
    for (int r = lo; r < hi; r++) {
        size_t n = j->ids ? (size_t)j->ids[r] : (size_t)r;
        const char *bundle = j->rows + n * j->stride, *gate_row = bundle + row_bytes;
        float z, gate = 0.0f;
        if (j->glu && pair_rows(t)) {
            dot2_as(bundle, gate_row, t, j->x, j->d, &z, &gate);
        } else {
            z = dot_as(bundle, t, j->x, j->d, ahead >= 0 ? bundle + ahead : NULL);
            if (j->glu)
                gate = dot_as(gate_row, t, j->x, j->d, ahead >= 0 ? gate_row + ahead : NULL);
        }
        if (j->up_bias)
            z += j->up_bias[n];
        float up = j->glu && !j->act_on_up ? z : activation_apply_t(z, j->act, j->act_threshold);
        float h = j->glu ? activation_apply_t(gate, j->act, j->act_threshold) * up : up;
        if (h != 0.0f) /* a silent ReLU neuron writes nothing back */
            axpy_as(acc, h, bundle + down_off, t, j->d, ahead >= 0 ? bundle + down_off + ahead : NULL);
    }
}

/* The block path of ffn_group_as: up and gate as integer dot products
 * against x quantized, down added a block at a time as decoded. */
static void ffn_group_q(const struct ffn_job *j, int g)
{
    float *acc = j->b->partial + (size_t)g * j->b->partial_stride;
    memset(acc, 0, (size_t)j->d * sizeof *acc);
    size_t row_bytes = wtype_row_bytes(j->t, (uint64_t)j->d);
    size_t down_off = row_bytes * (j->glu ? 2 : 1);
    int lo = (int)((long long)j->n_rows * g / FFN_GROUPS), hi = (int)((long long)j->n_rows * (g + 1) / FFN_GROUPS);
    for (int r = lo; r < hi; r++) {
        size_t n = j->ids ? (size_t)j->ids[r] : (size_t)r;
        const char *bundle = j->rows + n * j->stride;
        float z = j->qdot(bundle, j->b->xq, j->d), gate = j->glu ? j->qdot(bundle + row_bytes, j->b->xq, j->d) : 0.0f;
        if (j->up_bias)
            z += j->up_bias[n];
        float up = j->glu && !j->act_on_up ? z : activation_apply_t(z, j->act, j->act_threshold);
        float h = j->glu ? activation_apply_t(gate, j->act, j->act_threshold) * up : up;
        if (h != 0.0f)
            axpy_blocks(acc, h, bundle + down_off, j->t, j->d);
    }
}

static void ffn_group(const struct ffn_job *j, int g)
{
    switch (j->t) {
#define WTYPE(id, ...)                              \
    case DTYPE_##id:                                \
        ffn_group_as(j, DTYPE_##id, g);             \
        break;
#define WTYPE_QUANT(id, ...)                        \
    case DTYPE_##id:                                \
        ffn_group_q(j, g);                          \
        break;
#include "common/wtypes.def"
#undef WTYPE_QUANT
#undef WTYPE
    }
}

static void ffn_groups(void *arg, int worker, int workers)
{
    struct ffn_job *j = arg;
    int lo, hi, victim = 0;
    while (take_chunk(j->b, worker, workers, 1, &victim, &lo, &hi))
        ffn_group(j, lo);
}

static void ffn_reduce(void *arg, int worker, int workers)
{
    struct ffn_job *j = arg;
    int lo, hi;
    split(j->d, worker, workers, &lo, &hi);
    const float *p = j->b->partial;
    for (int i = lo; i < hi; i++) {
        float s = 0.0f;
        for (int g = 0; g < FFN_GROUPS; g++)
            s += p[(size_t)g * j->b->partial_stride + i];
        j->out[i] = s;
    }
}

static void ffn_run(struct cpu_kernels *b, struct ffn_job *j)
{
    if ((size_t)j->n_rows * (size_t)j->d < b->min_parallel) {
        for (int g = 0; g < FFN_GROUPS; g++)
            ffn_group(j, g);
        ffn_reduce(j, 0, 1);
        return;
    }
    share_out(b, FFN_GROUPS, b->threads, 1);
    threadpool_run(b->pool, ffn_groups, j);
    threadpool_run(b->pool, ffn_reduce, j);
}

void ck_ffn_rows(struct cpu_kernels *b, float *out, const void *rows, size_t row_stride, int n_rows,
                 const float *up_bias, const float *x, int d, enum fb_dtype t, const struct arch *a)
{
    struct ffn_job j = {b,    out,  rows,  row_stride, n_rows, d, up_bias, x, NULL, t, a->act, a->fatrelu_threshold,
                        a->glu, a->act_on_up, quantize_x(b, t, x, d)};
    ffn_run(b, &j);
}

void ck_ffn_ids(struct cpu_kernels *b, float *out, const void *bundles, size_t row_stride, const int32_t *ids,
                int n_ids, const float *up_bias, const float *x, int d, enum fb_dtype t, const struct arch *a)
{
    struct ffn_job j = {b,    out,  bundles, row_stride, n_ids, d, up_bias, x, ids, t, a->act, a->fatrelu_threshold,
                        a->glu, a->act_on_up, quantize_x(b, t, x, d)};
    ffn_run(b, &j);
}

/* ---- attention ---- */

struct attn_job {
    struct cpu_kernels *b;
    float *out;
    const float *q, *k, *v;
    int n_pos, n_heads, kv_mul, head_dim, kv_dim;
};

/* o[0, n) = the sum over positions t of w[t] v_t (v_t at v + t stride),
 * each element summed from zero in position order with axpy_as's
 * operations (an FMA per lane where the build has AVX2, else a multiply
 * and an add): the same bits as axpy_as per position, but the sums stay
 * in registers, 64 elements at a time, across the positions instead of
 * being stored and loaded again for each. */
static void attn_values(float *o, const float *w, const float *v, size_t stride, int n_pos, int n)
{
    int i = 0;
#ifdef HAVE_AVX2
    for (; i + 64 <= n; i += 64) {
        __m256 acc[8];
        for (int k = 0; k < 8; k++)
            acc[k] = _mm256_setzero_ps();
        for (int t = 0; t < n_pos; t++) {
            __m256 a = _mm256_set1_ps(w[t]);
            const float *vt = v + (size_t)t * stride + i;
            for (int k = 0; k < 8; k++)
                acc[k] = _mm256_fmadd_ps(a, _mm256_loadu_ps(vt + 8 * k), acc[k]);
        }
        for (int k = 0; k < 8; k++)
            _mm256_storeu_ps(o + i + 8 * k, acc[k]);
    }
    for (; i + 8 <= n; i += 8) {
        __m256 acc = _mm256_setzero_ps();
        for (int t = 0; t < n_pos; t++)
            acc = _mm256_fmadd_ps(_mm256_set1_ps(w[t]), _mm256_loadu_ps(v + (size_t)t * stride + i), acc);
        _mm256_storeu_ps(o + i, acc);
    }
#endif
    memset(o + i, 0, (size_t)(n - i) * sizeof *o);
    for (int t = 0; t < n_pos; t++)
        for (int e = i; e < n; e++)
            o[e] += w[t] * v[(size_t)t * stride + e];
}

static void attn_part(void *arg, int worker, int workers)
{
    struct attn_job *j = arg;
    int lo, hi;
    split(j->n_heads, worker, workers, &lo, &hi);
    float scale = 1.0f / sqrtf((float)j->head_dim);
    for (int h = lo; h < hi; h++) {
        const float *q = j->q + (size_t)h * j->head_dim;
        size_t kv_off = (size_t)(h / j->kv_mul) * j->head_dim;
        float *att = j->b->att + (size_t)h * j->b->max_seq;
        float max = -INFINITY;
        for (int t = 0; t < j->n_pos; t++) {
            att[t] = dot_as(j->k + (size_t)t * j->kv_dim + kv_off, DTYPE_F32, q, j->head_dim, NULL) * scale;
            if (att[t] > max)
                max = att[t];
        }
        float sum = 0.0f;
        for (int t = 0; t < j->n_pos; t++) {
            att[t] = expf(att[t] - max);
            sum += att[t];
        }
        for (int t = 0; t < j->n_pos; t++)
            att[t] /= sum;
        attn_values(j->out + (size_t)h * j->head_dim, att, j->v + kv_off, (size_t)j->kv_dim, j->n_pos, j->head_dim);
    }
}

void ck_attention(struct cpu_kernels *b, float *out, const float *q, const float *k_cache,
                          const float *v_cache, int n_pos, int n_heads, int n_kv_heads, int head_dim)
{
    struct attn_job j = {b, out, q, k_cache, v_cache, n_pos, n_heads, n_heads / n_kv_heads, head_dim,
                         n_kv_heads * head_dim};
    if ((size_t)n_pos * (size_t)n_heads * (size_t)head_dim < b->min_parallel / 2)
        attn_part(&j, 0, 1);
    else
        threadpool_run(b->pool, attn_part, &j);
}

/* ---- small vector steps ---- */

void ck_norm(struct cpu_kernels *b, float *out, const float *x, const float *weight,
                     const float *bias, int d, enum norm_kind kind, float eps)
{
    (void)b;
    float mean = 0.0f;
    if (kind == NORM_LAYER) {
        for (int i = 0; i < d; i++)
            mean += x[i];
        mean /= (float)d;
    }
    float ss = 0.0f;
    for (int i = 0; i < d; i++)
        ss += (x[i] - mean) * (x[i] - mean);
    float inv = 1.0f / sqrtf(ss / (float)d + eps);
    for (int i = 0; i < d; i++)
        out[i] = weight[i] * ((x[i] - mean) * inv) + (bias ? bias[i] : 0.0f);
}

void ck_rope(struct cpu_kernels *b, float *vec, int n_heads, int head_dim, int rot_dims, int pos,
             const float *inv_freq, float scale)
{
    (void)b;
    for (int i = 0; i < rot_dims; i += 2) {
        float angle = (float)pos * inv_freq[i / 2], c = cosf(angle) * scale, s = sinf(angle) * scale;
        for (int h = 0; h < n_heads; h++) {
            float *v = vec + (size_t)h * head_dim;
            float v0 = v[i], v1 = v[i + 1];
            v[i] = v0 * c - v1 * s;
            v[i + 1] = v0 * s + v1 * c;
        }
    }
}

void ck_add(struct cpu_kernels *b, float *y, const float *x, int n)
{
    (void)b;
    for (int i = 0; i < n; i++)
        y[i] += x[i];
}

/* Neurons from which the activation is shared out among the team: a
 * GELU neuron (tanhf, or erff) costs tens of nanoseconds, so Gemma 3's
 * 2048 are worth a handoff of a microsecond or two; a SiLU one a few, so
 * SmolLM2's 1536 are not. */
#define ACT_PARALLEL_MIN 2048

struct act_job {
    float *h;
    const float *z, *g;
    const struct arch *a;
};

static void act_span(void *ctx, size_t lo, size_t hi)
{
    const struct act_job *j = ctx;
    for (size_t i = lo; i < hi; i++)
        j->h[i] = ffn_neuron_value(j->a, j->z[i], j->g ? j->g[i] : 0.0f);
}

void ck_ffn_act(struct cpu_kernels *b, float *h, const float *z, const float *g, int n, const struct arch *a)
{
    struct act_job j = {h, z, g, a};
    /* each neuron from its own inputs: the same bits on any number of threads */
    threadpool_for(n >= ACT_PARALLEL_MIN ? b->pool : NULL, (size_t)n, act_span, &j);
}

void ck_embed(struct cpu_kernels *b, float *out, const void *table, enum fb_dtype t, int r, int d)
{
    (void)b;
    dtype_to_f32(out, (const char *)table + (size_t)r * wtype_row_bytes(t, (uint64_t)d), t, (size_t)d);
}

void ck_scale(struct cpu_kernels *b, float *x, float s, int n)
{
    (void)b;
    if (s == 1.0f)
        return;
    for (int i = 0; i < n; i++)
        x[i] *= s;
}

/* ---- the read-only ceiling ---- */

struct read_job {
    const void *buf;
    size_t bytes;
    float *sums; /* one per worker, so the loads cannot be optimized away */
};

static void read_part(void *arg, int worker, int workers)
{
    struct read_job *j = arg;
    j->sums[worker * 16] = membw_read_share(j->buf, j->bytes, worker, workers);
}

double ck_read_pass(struct cpu_kernels *b, const void *buf, size_t bytes)
{
    struct read_job j = {buf, bytes, b->read_sums};
    uint64_t t0 = now_ns();
    threadpool_run(b->pool, read_part, &j);
    return (double)(now_ns() - t0) * 1e-9;
}

/* ---- lifecycle ---- */

/* The scratch x quantized takes for vectors of up to max_dim floats in
 * the largest activation type (rounded up to a whole q8_k block). */
static size_t xq_bytes(size_t max_dim)
{
    size_t n = (max_dim + 255) / 256 * 256, most = 0;
    enum quant_act acts[] = {QUANT_ACT_Q8_0, QUANT_ACT_Q8_1, QUANT_ACT_Q8_K};
    for (size_t i = 0; i < sizeof acts / sizeof acts[0]; i++)
        most = quant_act_bytes(acts[i], n) > most ? quant_act_bytes(acts[i], n) : most;
    return most;
}

void ck_destroy(struct cpu_kernels *b)
{
    if (!b)
        return;
    threadpool_destroy(b->pool);
    free(b->partial_buf);
    free(b->att);
    free(b->slots);
    free(b->read_sums);
    free(b->xq);
    free(b);
}

bool ck_pinned(const struct cpu_kernels *k)
{
    return threadpool_pinned(k->pool);
}

struct cpu_kernels *ck_create(const struct fb_settings *set, int threads, size_t max_dim, size_t max_seq,
                                  size_t max_heads, char *err, size_t errlen)
{
    if (threads > FB_MAX_THREADS) {
        err_set(err, errlen, "cpu kernels: %d compute threads, more than the limit of %d", threads, FB_MAX_THREADS);
        return NULL;
    }
    struct cpu_kernels *b = calloc(1, sizeof *b);
    if (!b) {
        err_set(err, errlen, "cpu kernels: out of memory");
        return NULL;
    }
    b->threads = threads < 1 ? 1 : threads;
    b->max_dim = (max_dim + 15) / 16 * 16;
    b->max_seq = max_seq;
    b->min_parallel = set->min_parallel_work;
    b->pool = set->pin_threads ? threadpool_create_pinned(b->threads) : threadpool_create(b->threads);
    /* Each group sum starts half a page past a 4 KiB boundary. The
     * write-back pass stores into it while loading a down column that
     * starts on a 4 KiB boundary; a load whose address matches an older
     * store's in the low 12 bits waits for it (4K aliasing), and a sum at
     * malloc's usual 16 bytes past a page made the f16 FFN ~10% slower
     * from L3 (decode from DRAM, memory-bound, showed no difference; the
     * host's bandwidth bursts, where the FFN is near its compute speed,
     * are where it can count). */
    b->partial_stride = (b->max_dim + PAGE_FLOATS - 1) / PAGE_FLOATS * PAGE_FLOATS;
    b->partial_buf = aligned_alloc(4096, (FFN_GROUPS + 1) * b->partial_stride * sizeof *b->partial);
    b->partial = b->partial_buf ? b->partial_buf + PAGE_FLOATS / 2 : NULL;
    b->att = malloc(max_heads * max_seq * sizeof *b->att);
    b->slots = aligned_alloc(64, (size_t)b->threads * sizeof *b->slots);
    b->read_sums = aligned_alloc(64, (size_t)b->threads * 16 * sizeof *b->read_sums);
    b->xq = malloc(xq_bytes(max_dim));
    if (!b->pool || !b->partial || !b->att || !b->slots || !b->read_sums || !b->xq) {
        err_set(err, errlen, "cpu kernels: cannot start %d threads or allocate scratch", b->threads);
        ck_destroy(b);
        return NULL;
    }
    return b;
}
