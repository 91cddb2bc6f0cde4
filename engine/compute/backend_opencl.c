/* The opencl backend (backend.h): the kernels of kernels/ops.kern on an
 * OpenCL device (a GPU when there is one, else PoCL's CPU device), one
 * in-order command queue. Device buffers are clCreateBuffer's; pinned
 * buffers are allocated host-visible (CL_MEM_ALLOC_HOST_PTR) and mapped
 * once for their whole life, their mapping being their host address;
 * registered host memory is used in place (CL_MEM_USE_HOST_PTR) on a
 * device that shares the host's memory (PoCL), so its owner must not
 * change it while the device may read it; on a discrete GPU the device
 * reads a copy made at registration and host_ptr gives NULL for it. Copies are
 * enqueued without blocking, events are markers on the queue (profiled:
 * event_elapsed is the difference of two markers' CL_PROFILING_COMMAND_END,
 * the device's clock when all the work before each had finished), and a
 * failure inside the queue (an enqueue refused, a move outside its rows)
 * leaves the instance failed. The compute ops are in opencl_ops.c, the
 * device and the program build in opencl_device.c. */
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "engine/compute/opencl_impl.h"

static void ocl_destroy(struct backend *b)
{
    if (!b)
        return;
    if (b->q)
        clFinish(b->q);
    for (int i = 0; i < OCL_EVENTS; i++)
        if (b->ring[i])
            clReleaseEvent(b->ring[i]);
    cl_mem mems[] = {b->h, b->att, b->fault};
    for (size_t i = 0; i < sizeof mems / sizeof mems[0]; i++)
        if (mems[i])
            clReleaseMemObject(mems[i]);
    for (int i = 0; i < K_COUNT; i++)
        if (b->k[i])
            clReleaseKernel(b->k[i]);
    if (b->prog)
        clReleaseProgram(b->prog);
    if (b->q)
        clReleaseCommandQueue(b->q);
    if (b->ctx)
        clReleaseContext(b->ctx);
    free(b);
}

/* The device, what the backend reports of it, its context and queue. */
static int open_device(struct backend *b, int64_t want, char *err, size_t errlen)
{
    if (ocl_pick_device(want, &b->dev, err, errlen) != 0 ||
        ocl_describe_device(b->dev, &b->desc, &b->max_alloc, err, errlen) != 0)
        return -1;
    cl_bool unified = CL_FALSE;
    b->shares_host = clGetDeviceInfo(b->dev, CL_DEVICE_HOST_UNIFIED_MEMORY, sizeof unified, &unified, NULL) ==
                         CL_SUCCESS &&
                     unified;
    cl_int rc;
    b->ctx = clCreateContext(NULL, 1, &b->dev, NULL, NULL, &rc);
    if (rc != CL_SUCCESS)
        return err_set(err, errlen, "opencl backend: cannot create a context on %s: %s", b->desc.device,
                       ocl_error_name(rc));
    /* profiling: event_elapsed's clock; on PoCL's CPU device a timestamp
     * per command, within the noise of a small enqueue */
    b->q = clCreateCommandQueue(b->ctx, b->dev, CL_QUEUE_PROFILING_ENABLE, &rc);
    if (rc != CL_SUCCESS)
        return err_set(err, errlen, "opencl backend: cannot create a queue on %s: %s", b->desc.device,
                       ocl_error_name(rc));
    return 0;
}

/* The program, its kernels, and the group size every kernel can take:
 * the largest power of two up to 256 (64 on a CPU device, where a group
 * is a loop on one core) within the device's and each kernel's limits. */
static int make_kernels(struct backend *b, char *err, size_t errlen)
{
    if (ocl_build(b->ctx, b->dev, fb_opencl_source, &b->prog, err, errlen))
        return -1;
    size_t most = b->desc.emulated ? 64 : 256, dev_most = 0;
    if (clGetDeviceInfo(b->dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof dev_most, &dev_most, NULL) == CL_SUCCESS &&
        dev_most < most)
        most = dev_most;
    for (int i = 0; i < K_COUNT; i++) {
        cl_int rc;
        b->k[i] = clCreateKernel(b->prog, ocl_kernel_names[i], &rc);
        if (rc != CL_SUCCESS)
            return err_set(err, errlen, "opencl backend: no kernel %s in the program: %s", ocl_kernel_names[i],
                           ocl_error_name(rc));
        size_t k_most = 0;
        if (clGetKernelWorkGroupInfo(b->k[i], b->dev, CL_KERNEL_WORK_GROUP_SIZE, sizeof k_most, &k_most, NULL) ==
                CL_SUCCESS &&
            k_most < most)
            most = k_most;
    }
    for (b->group = 1; b->group * 2 <= most;)
        b->group *= 2;
    return 0;
}

/* The scratch buffers, sized from cfg (ops grow them when asked for
 * more), and move_rows' fault word, zero. */
static int make_scratch(struct backend *b, const struct backend_config *cfg, char *err, size_t errlen)
{
    b->h_floats = cfg->max_dim ? cfg->max_dim : 1;
    b->att_stride = cfg->max_seq ? cfg->max_seq : 1;
    b->att_heads = cfg->max_heads ? cfg->max_heads : 1;
    cl_int rc_h, rc_att, rc_fault, zero = 0;
    b->h = clCreateBuffer(b->ctx, CL_MEM_READ_WRITE, b->h_floats * sizeof(float), NULL, &rc_h);
    b->att = clCreateBuffer(b->ctx, CL_MEM_READ_WRITE, b->att_stride * b->att_heads * sizeof(float), NULL, &rc_att);
    b->fault = clCreateBuffer(b->ctx, CL_MEM_READ_WRITE | CL_MEM_COPY_HOST_PTR, sizeof zero, &zero, &rc_fault);
    if (rc_h != CL_SUCCESS || rc_att != CL_SUCCESS || rc_fault != CL_SUCCESS)
        return err_set(err, errlen, "opencl backend: cannot allocate scratch for %zu floats and %zu x %zu scores",
                       b->h_floats, b->att_heads, b->att_stride);
    return 0;
}

static struct backend *ocl_create(const struct backend_config *cfg, char *err, size_t errlen)
{
    struct backend *b = calloc(1, sizeof *b);
    if (!b) {
        err_set(err, errlen, "opencl backend: out of memory");
        return NULL;
    }
    if (open_device(b, cfg->set ? cfg->set->opencl_device : -1, err, errlen) || make_kernels(b, err, errlen) || make_scratch(b, cfg, err, errlen)) {
        ocl_destroy(b);
        return NULL;
    }
    return b;
}

static const char *ocl_error(struct backend *b)
{
    return b->base.err;
}

static void ocl_info(struct backend *b, struct backend_device *out)
{
    *out = b->desc;
}

/* The device create would open, asked of the driver alone: no context,
 * no queue, no program. */
static int ocl_describe(const struct fb_settings *set, struct backend_device *out, char *err, size_t errlen)
{
    cl_device_id dev;
    uint64_t max_alloc;
    if (ocl_pick_device(set ? set->opencl_device : -1, &dev, err, errlen) != 0)
        return -1;
    return ocl_describe_device(dev, out, &max_alloc, err, errlen);
}

static void ocl_counts(struct backend *b, struct backend_counts *out)
{
    *out = b->base.counts;
}

/* ---- memory ---- */

static int refused(struct backend *b, size_t bytes, cl_int rc)
{
    return bk_fail(&b->base, "%s cannot allocate %zu bytes: %s", b->desc.device, bytes, ocl_error_name(rc));
}

static int ocl_alloc(struct backend *b, size_t bytes, enum buf_kind kind, struct dev_buf **out)
{
    if (b->base.failed)
        return -1;
    if (bytes > b->max_alloc)
        return bk_fail(&b->base, "%s refuses a buffer of %zu bytes: its largest is %llu bytes", b->desc.device, bytes,
                       (unsigned long long)b->max_alloc);
    struct dev_buf *d = bk_buf_new(&b->base, bytes, kind);
    if (!d)
        return -1;
    size_t n = bytes ? bytes : 1;
    cl_int rc;
    cl_mem m = clCreateBuffer(b->ctx, CL_MEM_READ_WRITE | (kind == BUF_PINNED ? CL_MEM_ALLOC_HOST_PTR : 0), n, NULL,
                              &rc);
    if (rc == CL_SUCCESS && kind == BUF_PINNED) {
        d->host = clEnqueueMapBuffer(b->q, m, CL_TRUE, CL_MAP_READ | CL_MAP_WRITE, 0, n, 0, NULL, NULL, &rc);
        if (rc != CL_SUCCESS)
            clReleaseMemObject(m);
    }
    if (rc != CL_SUCCESS) {
        free(d);
        return refused(b, bytes, rc);
    }
    d->handle = m;
    *out = d;
    return 0;
}

static int ocl_register(struct backend *b, void *host, size_t bytes, struct dev_buf **out)
{
    if (b->base.failed)
        return -1;
    if (!host || !bytes)
        return bk_fail(&b->base, "register_host: %zu bytes at %p", bytes, host);
    struct dev_buf *d = bk_buf_new(&b->base, bytes, BUF_PINNED);
    if (!d)
        return -1;
    cl_int rc;
    cl_mem m = clCreateBuffer(b->ctx, CL_MEM_READ_WRITE | CL_MEM_USE_HOST_PTR, bytes, host, &rc);
    if (rc != CL_SUCCESS) {
        free(d);
        return refused(b, bytes, rc);
    }
    d->host = b->shares_host ? host : NULL; /* NULL: a copy made now (see shares_host) */
    d->registered = true;
    d->handle = m;
    *out = d;
    return 0;
}

/* Work still queued on the buffer keeps its memory until it is done. */
static void ocl_buf_free(struct backend *b, struct dev_buf *buf)
{
    if (!buf)
        return;
    cl_mem m = (cl_mem)buf->handle;
    if (buf->host && !buf->registered)
        clEnqueueUnmapMemObject(b->q, m, buf->host, 0, NULL, NULL);
    clReleaseMemObject(m);
    free(buf);
}

static void *ocl_host_ptr(struct backend *b, struct dev_buf *buf)
{
    (void)b;
    return buf->host;
}

/* ---- copies and the queue ---- */

static int ocl_upload(struct backend *b, struct dev_ref dst, const void *src, size_t bytes)
{
    if (bk_span(&b->base, dst, bytes, false, "upload destination"))
        return -1;
    if (bytes && ocl_check(b, clEnqueueWriteBuffer(b->q, ocl_mem(dst), CL_FALSE, dst.off, bytes, src, 0, NULL, NULL),
                           "upload"))
        return -1;
    b->base.counts.bytes_up += bytes;
    b->base.counts.copies++;
    return 0;
}

static int ocl_download(struct backend *b, void *dst, struct dev_ref src, size_t bytes)
{
    if (bk_span(&b->base, src, bytes, false, "download source"))
        return -1;
    if (bytes && ocl_check(b, clEnqueueReadBuffer(b->q, ocl_mem(src), CL_FALSE, src.off, bytes, dst, 0, NULL, NULL),
                           "download"))
        return -1;
    b->base.counts.bytes_down += bytes;
    b->base.counts.copies++;
    return 0;
}

/* After a wait that every move_rows call so far is behind: their fault
 * word has come back, and a move outside its rows fails the instance. */
static int moves_checked(struct backend *b)
{
    if (!b->moved)
        return 0;
    b->moved = false;
    if (b->fault_host == 0)
        return 0;
    b->base.failed = true;
    return bk_fail(&b->base, "move_rows: move %d of a call was outside its buffer's rows", (int)b->fault_host - 1);
}

static int ocl_event_record(struct backend *b, uint64_t *event)
{
    if (b->base.failed)
        return -1;
    cl_event ev;
    if (ocl_check(b, clEnqueueMarkerWithWaitList(b->q, 0, NULL, &ev), "event_record"))
        return -1;
    cl_event *slot = &b->ring[++b->events % OCL_EVENTS];
    if (*slot)
        clReleaseEvent(*slot);
    *slot = ev;
    *event = b->events;
    return 0;
}

/* An event the ring no longer keeps is older than every one it keeps,
 * and the queue is in order: waiting for the oldest kept one passes it. */
static int ocl_event_wait(struct backend *b, uint64_t event)
{
    if (b->base.failed)
        return -1;
    if (event == 0 || event > b->events)
        return bk_fail(&b->base, "event %llu was never recorded", (unsigned long long)event);
    uint64_t kept = b->events - event >= OCL_EVENTS ? b->events - OCL_EVENTS + 1 : event;
    if (ocl_check(b, clWaitForEvents(1, &b->ring[kept % OCL_EVENTS]), "event_wait"))
        return -1;
    b->base.counts.syncs++;
    return event > b->move_mark ? moves_checked(b) : 0;
}

/* The device clock (ns) when the marker of a kept event completed; -1,
 * the backend not failed, when it has not yet (or the driver keeps no
 * time for it): a fault in the queue is the waits' to report. */
static int marker_end(struct backend *b, uint64_t event, cl_ulong *ns)
{
    cl_event ev = b->ring[event % OCL_EVENTS];
    cl_int status = CL_QUEUED;
    if (clGetEventInfo(ev, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL) != CL_SUCCESS ||
        status != CL_COMPLETE)
        return bk_fail(&b->base, "event_elapsed: event %llu has not completed (wait for it first)",
                       (unsigned long long)event);
    cl_int rc = clGetEventProfilingInfo(ev, CL_PROFILING_COMMAND_END, sizeof *ns, ns, NULL);
    if (rc != CL_SUCCESS)
        return bk_fail(&b->base, "event_elapsed: no profiling time for event %llu: %s", (unsigned long long)event,
                       ocl_error_name(rc));
    return 0;
}

static int ocl_event_elapsed(struct backend *b, uint64_t from, uint64_t to, double *ms)
{
    cl_ulong t0 = 0, t1 = 0;
    if (bk_check_events(&b->base, from, to, b->events) || marker_end(b, from, &t0) || marker_end(b, to, &t1))
        return -1;
    /* one clock, and the queue in order: a later marker cannot end first;
     * a driver that says so anyway gets 0, not a negative time */
    *ms = t1 > t0 ? (double)(t1 - t0) * 1e-6 : 0.0;
    return 0;
}

static int ocl_sync(struct backend *b)
{
    if (b->base.failed)
        return -1;
    if (ocl_check(b, clFinish(b->q), "sync"))
        return -1;
    b->base.counts.syncs++;
    return moves_checked(b);
}

const struct backend_ops backend_opencl = {
    .name = "opencl",
    .describe = ocl_describe,
    .supports = bk_device_kernels_support,
    .create = ocl_create,
    .destroy = ocl_destroy,
    .error = ocl_error,
    .info = ocl_info,
    .counts = ocl_counts,
    .alloc = ocl_alloc,
    .register_host = ocl_register,
    .buf_free = ocl_buf_free,
    .host_ptr = ocl_host_ptr,
    .upload = ocl_upload,
    .download = ocl_download,
    .move_rows = ocl_move_rows,
    .event_record = ocl_event_record,
    .event_wait = ocl_event_wait,
    .event_elapsed = ocl_event_elapsed,
    .sync = ocl_sync,
    .matvec = ocl_matvec,
    .ffn_rows = ocl_ffn_rows,
    .ffn_ids = ocl_ffn_ids,
    .attention = ocl_attention,
    .norm = ocl_norm,
    .rope = ocl_rope,
    .add = ocl_add,
    .embed = ocl_embed,
    .ffn_act = ocl_ffn_act,
};
