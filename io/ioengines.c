#include "io/ioengine.h"

#include <string.h>

static const struct ioengine_ops *const engines[] = {
    &ioengine_psync,
#ifdef FLASHBED_HAVE_URING
    &ioengine_io_uring,
#endif
    &ioengine_mmap,
    &ioengine_null,
    &ioengine_fault,
#ifdef FLASHBED_HAVE_URING
    &ioengine_fault_io_uring,
#endif
};

const struct ioengine_ops *ioengine_find(const char *name)
{
    for (size_t i = 0; i < sizeof engines / sizeof engines[0]; i++)
        if (strcmp(engines[i]->name, name) == 0)
            return engines[i];
    return NULL;
}

const char *ioengine_with_faults(const char *engine, const char *base)
{
    return engine && base && !strcmp(engine, "fault") && !strcmp(base, "io_uring") ? "fault_io_uring" : engine;
}

const char *ioengine_names(void)
{
#ifdef FLASHBED_HAVE_URING
    return "psync, io_uring, mmap, null, fault, fault_io_uring";
#else
    return "psync, mmap, null, fault (io_uring, fault_io_uring: built without liburing)";
#endif
}
