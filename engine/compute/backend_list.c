/* The backends by name (backends.def), the ones this build lacks, and the
 * caller's rule on support (backend.h). A backend whose library was not
 * found at build time is still known by name: its describe and create say
 * what is missing (the tests skip it; the CLI prints it), and it supports
 * nothing. */
#include <string.h>

#include "common/errbuf.h"
#include "engine/compute/backend.h"
#include "engine/compute/backend_opencl.h"

#ifndef FLASHBED_HAVE_OPENCL
static const char opencl_why[] = "this build has no OpenCL (install ocl-icd-opencl-dev and opencl-c-headers, "
                                 "then rebuild)";

static int opencl_absent_describe(const struct fb_settings *set, struct backend_device *out, char *err,
                                  size_t errlen)
{
    (void)set, (void)out;
    return err_set(err, errlen, "opencl backend: %s", opencl_why);
}
static struct backend *opencl_absent(const struct backend_config *cfg, char *err, size_t errlen)
{
    (void)cfg;
    err_set(err, errlen, "opencl backend: %s", opencl_why);
    return NULL;
}
const struct backend_ops backend_opencl = {
    .name = "opencl", .describe = opencl_absent_describe, .create = opencl_absent};

int opencl_build_source(const char *src, char *log, size_t loglen)
{
    (void)src;
    err_set(log, loglen, "opencl backend: this build has no OpenCL");
    return 1;
}
#endif

#ifndef FLASHBED_HAVE_CUDA
static const char cuda_why[] = "this build has no CUDA (nvcc was not found at configure time, or FLASHBED_CUDA is "
                               "off: sanitizer and fuzz builds leave it out)";

static int cuda_absent_describe(const struct fb_settings *set, struct backend_device *out, char *err, size_t errlen)
{
    (void)set, (void)out;
    return err_set(err, errlen, "cuda backend: %s", cuda_why);
}
static struct backend *cuda_absent(const struct backend_config *cfg, char *err, size_t errlen)
{
    (void)cfg;
    err_set(err, errlen, "cuda backend: %s", cuda_why);
    return NULL;
}
const struct backend_ops backend_cuda = {.name = "cuda", .describe = cuda_absent_describe, .create = cuda_absent};
#endif

static const struct backend_ops *const all[] = {
#define BACKEND(id) &backend_##id,
#include "engine/compute/backends.def"
#undef BACKEND
};

/* Each list starts with a separator that its pointer skips. */
static const char names_commas[] = ""
#define BACKEND(id) ", " #id
#include "engine/compute/backends.def"
#undef BACKEND
    ;
const char backend_bar_names[] = ""
#define BACKEND(id) "|" #id
#include "engine/compute/backends.def"
#undef BACKEND
    ;

const struct backend_ops *backend_find(const char *name)
{
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(all[i]->name, name))
            return all[i];
    return NULL;
}

const struct backend_ops *backend_nth(size_t i)
{
    return i < sizeof all / sizeof all[0] ? all[i] : NULL;
}

const char *backend_names(void)
{
    return names_commas + 2;
}

static const char *const op_names[BACKEND_OP_COUNT] = {
    [BACKEND_OP_MATVEC] = "matvec",       [BACKEND_OP_FFN_ROWS] = "ffn_rows", [BACKEND_OP_FFN_IDS] = "ffn_ids",
    [BACKEND_OP_ATTENTION] = "attention", [BACKEND_OP_NORM] = "norm",         [BACKEND_OP_ROPE] = "rope",
    [BACKEND_OP_ADD] = "add",             [BACKEND_OP_EMBED] = "embed",       [BACKEND_OP_MOVE_ROWS] = "move_rows",
    [BACKEND_OP_FFN_ACT] = "ffn_act",
};

const char *backend_op_name(enum backend_op op)
{
    return (unsigned)op < BACKEND_OP_COUNT ? op_names[op] : "?";
}

bool backend_supports(const struct backend_ops *b, enum backend_op op, enum fb_dtype t)
{
    return b->supports && b->supports(op, t);
}

int backend_check_type(const struct backend_ops *b, const struct fb_settings *set, enum fb_dtype t,
                       struct backend_device *dev, char *err, size_t errlen)
{
    if (b->describe(set, dev, err, errlen) != 0)
        return -1;
    for (int op = 0; op < BACKEND_OP_COUNT; op++)
        if (!backend_supports(b, (enum backend_op)op, t))
            return err_set(err, errlen, "%s backend: no %s for %s weights (cpu computes every op for every type)",
                           b->name, backend_op_name((enum backend_op)op), wtype_name(t));
    return 0;
}
