/* The opencl backend's device and program: which device, building the
 * kernels' program text with the driver's log on failure, and OpenCL's
 * error codes by name (opencl_impl.h, backend_opencl.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "engine/compute/backend_opencl.h"
#include "engine/compute/opencl_impl.h"

const char *const ocl_kernel_names[K_COUNT] = {
    [K_MATVEC] = "fb_matvec",     [K_FFN_H] = "fb_ffn_h", [K_FFN_DOWN] = "fb_ffn_down",
    [K_ATTENTION] = "fb_attention", [K_NORM] = "fb_norm",  [K_ROPE] = "fb_rope",
    [K_ADD] = "fb_add",           [K_EMBED] = "fb_embed", [K_MOVE_ROWS] = "fb_move_rows",
    [K_FFN_ACT] = "fb_ffn_act",
};

const char *ocl_error_name(cl_int rc)
{
    switch (rc) {
    case CL_DEVICE_NOT_FOUND: return "CL_DEVICE_NOT_FOUND";
    case CL_DEVICE_NOT_AVAILABLE: return "CL_DEVICE_NOT_AVAILABLE";
    case CL_MEM_OBJECT_ALLOCATION_FAILURE: return "CL_MEM_OBJECT_ALLOCATION_FAILURE";
    case CL_OUT_OF_RESOURCES: return "CL_OUT_OF_RESOURCES";
    case CL_OUT_OF_HOST_MEMORY: return "CL_OUT_OF_HOST_MEMORY";
    case CL_BUILD_PROGRAM_FAILURE: return "CL_BUILD_PROGRAM_FAILURE";
    case CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST: return "CL_EXEC_STATUS_ERROR_FOR_EVENTS_IN_WAIT_LIST";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_DEVICE: return "CL_INVALID_DEVICE";
    case CL_INVALID_MEM_OBJECT: return "CL_INVALID_MEM_OBJECT";
    case CL_INVALID_BUILD_OPTIONS: return "CL_INVALID_BUILD_OPTIONS";
    case CL_INVALID_KERNEL_NAME: return "CL_INVALID_KERNEL_NAME";
    case CL_INVALID_ARG_INDEX: return "CL_INVALID_ARG_INDEX";
    case CL_INVALID_ARG_VALUE: return "CL_INVALID_ARG_VALUE";
    case CL_INVALID_ARG_SIZE: return "CL_INVALID_ARG_SIZE";
    case CL_INVALID_KERNEL_ARGS: return "CL_INVALID_KERNEL_ARGS";
    case CL_INVALID_WORK_GROUP_SIZE: return "CL_INVALID_WORK_GROUP_SIZE";
    case CL_INVALID_GLOBAL_WORK_SIZE: return "CL_INVALID_GLOBAL_WORK_SIZE";
    case CL_INVALID_EVENT: return "CL_INVALID_EVENT";
    case CL_INVALID_BUFFER_SIZE: return "CL_INVALID_BUFFER_SIZE";
    case CL_INVALID_HOST_PTR: return "CL_INVALID_HOST_PTR";
    case CL_INVALID_OPERATION: return "CL_INVALID_OPERATION";
    case CL_MISALIGNED_SUB_BUFFER_OFFSET: return "CL_MISALIGNED_SUB_BUFFER_OFFSET";
    }
    return "an OpenCL error";
}

int ocl_check(struct backend *b, cl_int rc, const char *what)
{
    if (rc == CL_SUCCESS)
        return 0;
    b->base.failed = true;
    return bk_fail(&b->base, "%s: %s (%d)", what, ocl_error_name(rc), (int)rc);
}

/* Every device of every platform, in order, into devs (at most cap);
 * returns how many, or -1 when there is no platform. */
static int all_devices(cl_device_id *devs, cl_uint cap, cl_device_type *types)
{
    cl_platform_id plats[16];
    cl_uint n_plat = 0, n = 0;
    if (clGetPlatformIDs(16, plats, &n_plat) != CL_SUCCESS || n_plat == 0)
        return -1;
    for (cl_uint p = 0; p < n_plat && p < 16 && n < cap; p++) {
        cl_uint got = 0;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, cap - n, devs + n, &got) != CL_SUCCESS)
            continue;
        n += got < cap - n ? got : cap - n;
    }
    for (cl_uint i = 0; i < n; i++)
        if (clGetDeviceInfo(devs[i], CL_DEVICE_TYPE, sizeof types[i], &types[i], NULL) != CL_SUCCESS)
            types[i] = 0;
    return (int)n;
}

int ocl_pick_device(int64_t want, cl_device_id *out, char *err, size_t errlen)
{
    cl_device_id devs[64];
    cl_device_type types[64];
    int n = all_devices(devs, 64, types);
    if (n < 0) {
        err_set(err, errlen, "opencl backend: no OpenCL platform (install pocl-opencl-icd for the CPU)");
        return 1;
    }
    if (n == 0) {
        err_set(err, errlen, "opencl backend: no OpenCL device (install pocl-opencl-icd for the CPU)");
        return 1;
    }
    if (want >= 0) {
        if (want >= n)
            return err_set(err, errlen, "opencl backend: device %lld is not one of the %d devices (0-%d)",
                           (long long)want, n, n - 1);
        *out = devs[want];
        return 0;
    }
    *out = devs[0];
    for (int i = 0; i < n; i++)
        if (types[i] & CL_DEVICE_TYPE_GPU) {
            *out = devs[i];
            break;
        }
    return 0;
}

int ocl_describe_device(cl_device_id dev, struct backend_device *out, uint64_t *max_alloc, char *err, size_t errlen)
{
    cl_device_type type = 0;
    cl_ulong mem = 0, most = 0;
    *out = (struct backend_device){0};
    if (clGetDeviceInfo(dev, CL_DEVICE_NAME, sizeof out->device - 1, out->device, NULL) != CL_SUCCESS ||
        clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof type, &type, NULL) != CL_SUCCESS ||
        clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof mem, &mem, NULL) != CL_SUCCESS ||
        clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof most, &most, NULL) != CL_SUCCESS)
        return err_set(err, errlen, "opencl backend: cannot query the device");
    out->emulated = (type & CL_DEVICE_TYPE_CPU) != 0; /* PoCL: no GPU timings */
    out->mem_bytes = mem;
    *max_alloc = most;
    return 0;
}

/* Appends the first lines of a build log to dst, joined by " | " into
 * one line, as much as fits. */
static void log_lines(char *dst, size_t len, const char *log)
{
    if (!len)
        return;
    size_t at = strlen(dst);
    int lines = 0;
    for (const char *p = log; *p && at + 1 < len; p++) {
        if (*p != '\n') {
            dst[at++] = *p;
            continue;
        }
        if (++lines == 8 || !p[1])
            break;
        for (const char *sep = " | "; *sep && at + 1 < len; sep++)
            dst[at++] = *sep;
    }
    dst[at] = '\0';
}

int ocl_build(cl_context ctx, cl_device_id dev, const char *src, cl_program *out, char *err, size_t errlen)
{
    cl_int rc;
    cl_program p = clCreateProgramWithSource(ctx, 1, &src, NULL, &rc);
    if (rc != CL_SUCCESS)
        return err_set(err, errlen, "opencl backend: cannot create the program: %s", ocl_error_name(rc));
    rc = clBuildProgram(p, 1, &dev, "-cl-std=CL1.2", NULL, NULL);
    if (rc == CL_SUCCESS) {
        *out = p;
        return 0;
    }
    size_t n = 0;
    char *log = NULL;
    if (clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, 0, NULL, &n) == CL_SUCCESS && (log = calloc(1, n + 1)))
        clGetProgramBuildInfo(p, dev, CL_PROGRAM_BUILD_LOG, n, log, NULL);
    err_set(err, errlen, "opencl backend: building the kernels failed (%s): ", ocl_error_name(rc));
    log_lines(err, errlen, log && *log ? log : "no build log");
    free(log);
    clReleaseProgram(p);
    return -1;
}

int opencl_build_source(const char *src, char *log, size_t loglen)
{
    cl_device_id dev;
    int rc = ocl_pick_device(-1, &dev, log, loglen);
    if (rc != 0)
        return rc;
    cl_int cl;
    cl_context ctx = clCreateContext(NULL, 1, &dev, NULL, NULL, &cl);
    if (cl != CL_SUCCESS)
        return err_set(log, loglen, "opencl backend: cannot create a context: %s", ocl_error_name(cl));
    cl_program p;
    rc = ocl_build(ctx, dev, src, &p, log, loglen);
    if (rc == 0)
        clReleaseProgram(p);
    clReleaseContext(ctx);
    return rc;
}
