/* The backends by name, and the ones this build lacks: a backend whose
 * library was not found at build time is still known by name, and its
 * create says what is missing (the tests skip it; the CLI prints it). */
#include <string.h>

#include "common/errbuf.h"
#include "engine/compute/backend.h"
#include "engine/compute/backend_opencl.h"

#if !defined(FLASHBED_HAVE_OPENCL) || !defined(FLASHBED_HAVE_CUDA)
static struct backend *absent_create(const char *name, const char *why, char *err, size_t errlen)
{
    err_set(err, errlen, "%s backend: %s", name, why);
    return NULL;
}
#endif

#ifndef FLASHBED_HAVE_OPENCL
static struct backend *opencl_absent(const struct backend_config *cfg, char *err, size_t errlen)
{
    (void)cfg;
    return absent_create("opencl", "this build has no OpenCL (install ocl-icd-opencl-dev and opencl-c-headers, "
                                   "then rebuild)", err, errlen);
}
const struct backend_ops backend_opencl = {.name = "opencl", .create = opencl_absent};

int opencl_build_source(const char *src, char *log, size_t loglen)
{
    (void)src;
    err_set(log, loglen, "opencl backend: this build has no OpenCL");
    return 1;
}
#endif

#ifndef FLASHBED_HAVE_CUDA
static struct backend *cuda_absent(const struct backend_config *cfg, char *err, size_t errlen)
{
    (void)cfg;
    return absent_create("cuda",
                         "this build has no CUDA (nvcc was not found at configure time, or FLASHBED_CUDA is off: "
                         "sanitizer and fuzz builds leave it out)",
                         err, errlen);
}
const struct backend_ops backend_cuda = {.name = "cuda", .create = cuda_absent};
#endif

static const struct backend_ops *const all[] = {&backend_cpu, &backend_sim, &backend_opencl, &backend_cuda};

const struct backend_ops *backend_find(const char *name)
{
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++)
        if (!strcmp(all[i]->name, name))
            return all[i];
    return NULL;
}

const char *backend_names(void)
{
    return "cpu, sim, opencl, cuda";
}
