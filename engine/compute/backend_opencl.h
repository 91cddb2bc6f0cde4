/* The opencl backend's program build on its own (the backend itself is
 * backend_opencl in backend.h): builds an OpenCL C source on the device
 * the backend would pick and returns the driver's verdict, so that a test
 * can check that a kernel that does not compile is reported with its
 * build log. Threading: any thread; it holds nothing afterwards. */
#ifndef FLASHBED_ENGINE_BACKEND_OPENCL_H
#define FLASHBED_ENGINE_BACKEND_OPENCL_H

#include <stddef.h>

/* 0 when src builds; -1 when it does not, with the first lines of the
 * build log in log; 1 when there is no OpenCL here (no platform, no
 * device, or a build without OpenCL), with why in log. */
int opencl_build_source(const char *src, char *log, size_t loglen);

#endif
