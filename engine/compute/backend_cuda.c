/* The cuda backend: the shared kernel bodies (kernels/) compiled by nvcc,
 * on device 0 through the CUDA runtime. This half is the instance, the
 * memory, the copies and the queue; the ops are backend_cuda_ops.c.
 *
 *   BUF_DEVICE     cudaMalloc: device memory, reached by copies and ops
 *                  only (host_ptr NULL); its contents start undefined;
 *   BUF_PINNED     cudaMallocHost: page-locked host memory, mapped into
 *                  the device's address space (unified addressing), so
 *                  copies run at full speed and ops may read it;
 *   register_host  cudaHostRegister (mapped) of page-aligned memory, so
 *                  the device reads the caller's memory in place; where
 *                  that is refused, or the memory does not start on a page
 *                  (pinning a page shared with other memory would clash
 *                  with its registration), a device buffer holding a copy
 *                  made now: right for what is registered (weights, read
 *                  only), but the host's later writes are not seen, and
 *                  host_ptr gives NULL for it;
 *   the queue      one non-blocking stream: copies are cudaMemcpyAsync on
 *                  it, ops are kernel launches on it; events are a ring of
 *                  CUDA events recorded on it, with timing (event_elapsed:
 *                  cudaEventElapsedTime); sync is cudaStreamSynchronize.
 *
 * A launch's error comes from cudaGetLastError after it; a fault while the
 * queue runs comes back from the next sync or event wait, and leaves the
 * backend failed (cu_check). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/errbuf.h"
#include "engine/compute/backend_cuda_impl.h"

int cu_check(struct backend *b, cudaError_t e, const char *what)
{
    if (e == cudaSuccess)
        return 0;
    (void)cudaGetLastError(); /* clears an error that is not sticky */
    if (e != cudaErrorMemoryAllocation && e != cudaErrorHostMemoryAlreadyRegistered && e != cudaErrorInvalidValue)
        b->base.failed = true;
    return bk_fail(&b->base, "%s: %s", what, cudaGetErrorString(e));
}

static void cuda_destroy(struct backend *b)
{
    if (!b)
        return;
    if (b->stream)
        (void)cudaStreamSynchronize(b->stream);
    for (int i = 0; i < CUDA_EVENT_RING; i++)
        if (b->ring[i])
            (void)cudaEventDestroy(b->ring[i]);
    (void)cudaFree(b->ffn_h);
    (void)cudaFree(b->att);
    (void)cudaFreeHost(b->move_fault);
    if (b->stream)
        (void)cudaStreamDestroy(b->stream);
    free(b);
}

/* Device 0 as the driver describes it; 0, or -1 with why in err. A
 * query: the runtime starts, but no stream or memory is made. */
static int describe_device(struct backend_device *out, char *err, size_t errlen)
{
    int n = 0;
    struct cudaDeviceProp p;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n < 1) {
        (void)cudaGetLastError();
        return err_set(err, errlen, "cuda backend: no CUDA device (cudaGetDeviceCount: %s)",
                       e != cudaSuccess ? cudaGetErrorString(e) : "0 devices");
    }
    if ((e = cudaGetDeviceProperties(&p, 0)) != cudaSuccess) {
        (void)cudaGetLastError();
        return err_set(err, errlen, "cuda backend: cudaGetDeviceProperties: %s", cudaGetErrorString(e));
    }
    *out = (struct backend_device){.mem_bytes = p.totalGlobalMem};
    snprintf(out->device, sizeof out->device, "%s", p.name);
    return 0;
}

static int cuda_describe(const struct fb_settings *set, struct backend_device *out, char *err, size_t errlen)
{
    (void)set;
    return describe_device(out, err, errlen);
}

/* The stream, the event ring and the scratch sized from cfg. */
static int start(struct backend *b, const struct backend_config *cfg)
{
    if (cu_check(b, cudaSetDevice(b->device), "cudaSetDevice"))
        return -1;
    if (cu_check(b, cudaStreamCreateWithFlags(&b->stream, cudaStreamNonBlocking), "cudaStreamCreate"))
        return -1;
    b->max_dim = cfg->max_dim ? cfg->max_dim : 1;
    b->max_seq = cfg->max_seq ? cfg->max_seq : 1;
    b->max_heads = cfg->max_heads ? cfg->max_heads : 1;
    if (cu_check(b, cudaMalloc((void **)&b->ffn_h, b->max_dim * sizeof(float)), "the FFN's scratch") ||
        cu_check(b, cudaMalloc((void **)&b->att, b->max_heads * b->max_seq * sizeof(float)), "attention's scratch") ||
        cu_check(b, cudaMallocHost((void **)&b->move_fault, sizeof(int)), "move_rows' fault word"))
        return -1;
    *b->move_fault = 0;
    return 0;
}

static struct backend *cuda_create(const struct backend_config *cfg, char *err, size_t errlen)
{
    struct backend_device desc;
    if (describe_device(&desc, err, errlen) != 0)
        return NULL;
    struct backend *b = calloc(1, sizeof *b);
    if (!b) {
        err_set(err, errlen, "cuda backend: out of memory");
        return NULL;
    }
    b->desc = desc;
    if (start(b, cfg) != 0) {
        err_set(err, errlen, "cuda backend: %s", b->base.err);
        cuda_destroy(b);
        return NULL;
    }
    return b;
}

static const char *cuda_error(struct backend *b)
{
    return b->base.err;
}

static void cuda_info(struct backend *b, struct backend_device *out)
{
    *out = b->desc;
}

static void cuda_counts(struct backend *b, struct backend_counts *out)
{
    *out = b->base.counts;
}

/* A refused allocation, said as the model (or buffer) not fitting. */
static int alloc_refused(struct backend *b, size_t bytes, enum buf_kind kind, cudaError_t e)
{
    (void)cudaGetLastError();
    if (e != cudaErrorMemoryAllocation)
        return cu_check(b, e, kind == BUF_DEVICE ? "cudaMalloc" : "cudaMallocHost");
    if (kind == BUF_PINNED)
        return bk_fail(&b->base, "%zu MiB of pinned host memory does not fit (cudaMallocHost: %s)", bytes >> 20,
                       cudaGetErrorString(e));
    size_t free_b = 0, total = 0;
    (void)cudaMemGetInfo(&free_b, &total);
    return bk_fail(&b->base, "%zu MiB does not fit in the device memory of %s (%zu MiB free of %zu MiB)",
                   bytes >> 20, b->desc.device, free_b >> 20, total >> 20);
}

static int cuda_alloc(struct backend *b, size_t bytes, enum buf_kind kind, struct dev_buf **out)
{
    if (b->base.failed)
        return -1;
    struct dev_buf *d = bk_buf_new(&b->base, bytes, kind);
    if (!d)
        return -1;
    void *p = NULL;
    size_t n = bytes ? bytes : 1; /* a real address even for nothing */
    cudaError_t e = kind == BUF_DEVICE ? cudaMalloc(&p, n) : cudaMallocHost(&p, n);
    if (e != cudaSuccess) {
        free(d);
        return alloc_refused(b, bytes, kind, e);
    }
    d->handle = p;
    d->host = kind == BUF_PINNED ? p : NULL;
    *out = d;
    return 0;
}

/* host pinned in place and mapped (read-only where the memory is: a
 * file's read-only mapping); 0, or the refusal. */
static cudaError_t pin_in_place(void *host, size_t bytes, void **dev)
{
    cudaError_t e = cudaHostRegister(host, bytes, cudaHostRegisterMapped | cudaHostRegisterPortable);
    if (e != cudaSuccess) {
        (void)cudaGetLastError();
        e = cudaHostRegister(host, bytes,
                             cudaHostRegisterMapped | cudaHostRegisterPortable | cudaHostRegisterReadOnly);
    }
    if (e != cudaSuccess)
        return e;
    e = cudaHostGetDevicePointer(dev, host, 0);
    if (e != cudaSuccess)
        (void)cudaHostUnregister(host);
    return e;
}

static int cuda_register(struct backend *b, void *host, size_t bytes, struct dev_buf **out)
{
    if (b->base.failed)
        return -1;
    long page = sysconf(_SC_PAGESIZE);
    void *dev = NULL;
    if (bytes && page > 0 && (uintptr_t)host % (uintptr_t)page == 0 && pin_in_place(host, bytes, &dev) == cudaSuccess) {
        struct dev_buf *d = bk_buf_new(&b->base, bytes, BUF_PINNED);
        if (!d) {
            (void)cudaHostUnregister(host);
            return -1;
        }
        *d = (struct dev_buf){.bytes = bytes, .kind = BUF_PINNED, .registered = true, .host = host, .handle = dev};
        *out = d;
        return 0;
    }
    (void)cudaGetLastError(); /* the refusal: a copy instead */
    struct dev_buf *d;
    if (cuda_alloc(b, bytes, BUF_DEVICE, &d) != 0)
        return -1;
    d->registered = true;
    if (cu_check(b, cudaMemcpyAsync(d->handle, host, bytes, cudaMemcpyHostToDevice, b->stream), "register copy") ||
        cu_check(b, cudaStreamSynchronize(b->stream), "register copy")) {
        (void)cudaFree(d->handle);
        free(d);
        return -1;
    }
    b->base.counts.bytes_up += bytes;
    b->base.counts.copies++;
    *out = d;
    return 0;
}

/* Waits for the queue first: work still reading the buffer finishes. */
static void cuda_buf_free(struct backend *b, struct dev_buf *buf)
{
    if (!buf)
        return;
    cudaError_t e = cudaStreamSynchronize(b->stream);
    if (e != cudaSuccess && !b->base.failed)
        cu_check(b, e, "sync before a free");
    if (buf->registered && buf->host)
        (void)cudaHostUnregister(buf->host);
    else if (buf->host)
        (void)cudaFreeHost(buf->host);
    else
        (void)cudaFree(buf->handle);
    free(buf);
}

static void *cuda_host_ptr(struct backend *b, struct dev_buf *buf)
{
    (void)b;
    return buf->host;
}

static int cuda_upload(struct backend *b, struct dev_ref dst, const void *src, size_t bytes)
{
    if (bk_span(&b->base, dst, bytes, false, "upload destination"))
        return -1;
    if (bytes && cu_check(b, cudaMemcpyAsync(cu_at(dst), src, bytes, cudaMemcpyDefault, b->stream), "upload"))
        return -1;
    b->base.counts.bytes_up += bytes;
    b->base.counts.copies++;
    return 0;
}

static int cuda_download(struct backend *b, void *dst, struct dev_ref src, size_t bytes)
{
    if (bk_span(&b->base, src, bytes, false, "download source"))
        return -1;
    if (bytes && cu_check(b, cudaMemcpyAsync(dst, cu_at(src), bytes, cudaMemcpyDefault, b->stream), "download"))
        return -1;
    b->base.counts.bytes_down += bytes;
    b->base.counts.copies++;
    return 0;
}

static int cuda_event_record(struct backend *b, uint64_t *event)
{
    if (b->base.failed)
        return -1;
    uint64_t n = b->events + 1;
    cudaEvent_t *slot = &b->ring[n % CUDA_EVENT_RING];
    /* with timing (no cudaEventDisableTiming): event_elapsed reads it */
    if ((!*slot && cu_check(b, cudaEventCreateWithFlags(slot, cudaEventDefault), "cudaEventCreate")) ||
        cu_check(b, cudaEventRecord(*slot, b->stream), "cudaEventRecord"))
        return -1;
    b->events = n;
    *event = n;
    return 0;
}

/* After a wait: a fault the move_rows kernel left fails the backend. */
static int queue_passed(struct backend *b, cudaError_t e, const char *what)
{
    if (cu_check(b, e, what))
        return -1;
    int m = *(volatile int *)b->move_fault;
    if (m == 0)
        return 0;
    b->base.failed = true;
    return bk_fail(&b->base, "move_rows: move %d is outside the buffer's rows", m - 1);
}

/* An event whose slot was recorded again since is waited for through the
 * later record: the queue is in order, so passing that one passes it. */
static int cuda_event_wait(struct backend *b, uint64_t event)
{
    if (b->base.failed)
        return -1;
    if (event == 0 || event > b->events)
        return bk_fail(&b->base, "event %llu was never recorded", (unsigned long long)event);
    b->base.counts.syncs++;
    return queue_passed(b, cudaEventSynchronize(b->ring[event % CUDA_EVENT_RING]), "the queue (event wait)");
}

/* 0 when a kept event has completed; -1, the backend not failed, when
 * it has not yet (a fault in the queue is the waits' to report). */
static int event_done(struct backend *b, uint64_t event)
{
    cudaError_t e = cudaEventQuery(b->ring[event % CUDA_EVENT_RING]);
    if (e == cudaSuccess)
        return 0;
    (void)cudaGetLastError(); /* cudaErrorNotReady is no fault */
    return bk_fail(&b->base, "event_elapsed: event %llu has not completed (wait for it first): %s",
                   (unsigned long long)event, cudaGetErrorString(e));
}

static int cuda_event_elapsed(struct backend *b, uint64_t from, uint64_t to, double *ms)
{
    if (bk_check_events(&b->base, from, to, b->events) || event_done(b, from) || event_done(b, to))
        return -1;
    if (from == to) {
        *ms = 0.0;
        return 0;
    }
    float t = 0.0f;
    if (cu_check(b, cudaEventElapsedTime(&t, b->ring[from % CUDA_EVENT_RING], b->ring[to % CUDA_EVENT_RING]),
                 "event_elapsed: cudaEventElapsedTime"))
        return -1;
    *ms = t > 0.0f ? (double)t : 0.0;
    return 0;
}

static int cuda_sync(struct backend *b)
{
    if (b->base.failed)
        return -1;
    b->base.counts.syncs++;
    return queue_passed(b, cudaStreamSynchronize(b->stream), "the queue (sync)");
}

const struct backend_ops backend_cuda = {
    .name = "cuda",
    .describe = cuda_describe,
    .supports = bk_device_kernels_support,
    .create = cuda_create,
    .destroy = cuda_destroy,
    .error = cuda_error,
    .info = cuda_info,
    .counts = cuda_counts,
    .alloc = cuda_alloc,
    .register_host = cuda_register,
    .buf_free = cuda_buf_free,
    .host_ptr = cuda_host_ptr,
    .upload = cuda_upload,
    .download = cuda_download,
    .move_rows = cuda_move_rows,
    .event_record = cuda_event_record,
    .event_wait = cuda_event_wait,
    .event_elapsed = cuda_event_elapsed,
    .sync = cuda_sync,
    .matvec = cuda_matvec,
    .ffn_rows = cuda_ffn_rows,
    .ffn_ids = cuda_ffn_ids,
    .attention = cuda_attention,
    .norm = cuda_norm,
    .rope = cuda_rope,
    .add = cuda_add,
    .embed = cuda_embed,
    .ffn_act = cuda_ffn_act,
};
