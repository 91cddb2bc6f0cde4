/* The median of a sample, for benchmarks that report medians of rounds
 * measured side by side (a shared machine's bandwidth swings; the median
 * is what one round of many tells). */
#ifndef FLASHBED_COMMON_MEDIAN_H
#define FLASHBED_COMMON_MEDIAN_H

#include <stddef.h>

/* The median of v[0..n), sorting v in place; the mean of the two middle
 * values when n is even; 0 when n is 0. Any thread, v its caller's. */
double median_sorting(double *v, size_t n);

#endif
