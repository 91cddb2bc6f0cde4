/* The device kernels' type numbers (engine/compute/kernels/wtypes.kern) checked against
 * the weight-type table (common/wtype.h) at compile time: the count, and
 * for each row of common/wtypes.def its number and its block. A row the
 * kernels lack fails here naming FB_<ID> (undeclared). Included by the
 * host files that hand types to the kernels and by a unit test, so the
 * check is built whether or not a GPU toolkit is. C only. */
#ifndef FLASHBED_ENGINE_KERNELS_WTYPES_CHECK_H
#define FLASHBED_ENGINE_KERNELS_WTYPES_CHECK_H

#include "common/wtype.h"
#include "engine/compute/kernels/wtypes.kern"

_Static_assert(FB_DTYPE_COUNT == DTYPE_COUNT, "kernels/wtypes.kern: not one number per row of common/wtypes.def");
#define WTYPE(id, ...)                                                                                         \
    _Static_assert(FB_##id == DTYPE_##id && FB_##id##_BLOCK_ELEMS == WTYPE_BLOCK_ELEMS_##id &&                 \
                       FB_##id##_BLOCK_BYTES == WTYPE_BLOCK_BYTES_##id,                                        \
                   "kernels/wtypes.kern: " #id "'s number or block is not the table's");
#include "common/wtypes.def"
#undef WTYPE

/* t's number in the kernels: the table's own, as the asserts above hold
 * (one function for both device backends, not a switch each); -1 outside
 * the enum. Which types the kernels decode is bk_device_kernels_support's. */
static inline int wtype_kernel_code(enum fb_dtype t)
{
    return wtype_valid(t) ? (int)t : -1;
}

#endif
