/* FB_PRINTF(fmt, first): lets the compiler check the format strings given
 * to our own printf-style functions. Its own header so that library code
 * can use it without including the logger (common/log.h), which only cli/
 * calls. */
#ifndef FLASHBED_COMMON_PRINTF_ATTR_H
#define FLASHBED_COMMON_PRINTF_ATTR_H

#if defined(__GNUC__)
#define FB_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define FB_PRINTF(a, b)
#endif

#endif
