/* A minimal assertion kit for unit tests: each failed check prints where and
 * why; the test exits non-zero if any failed. */
#ifndef FLASHBED_TESTS_CHECK_H
#define FLASHBED_TESTS_CHECK_H

#include <stdio.h>
#include <string.h>

static int check_failures;
static int check_count;

#define CHECK(cond)                                                                    \
    do {                                                                               \
        check_count++;                                                                 \
        if (!(cond)) {                                                                 \
            check_failures++;                                                          \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond);   \
        }                                                                              \
    } while (0)

#define CHECK_U64(got, want)                                                           \
    do {                                                                               \
        unsigned long long g_ = (unsigned long long)(got), w_ = (unsigned long long)(want); \
        check_count++;                                                                 \
        if (g_ != w_) {                                                                \
            check_failures++;                                                          \
            fprintf(stderr, "%s:%d: %s = %llu, want %llu\n", __FILE__, __LINE__, #got, g_, w_); \
        }                                                                              \
    } while (0)

#define CHECK_STR(got, want)                                                           \
    do {                                                                               \
        const char *g_ = (got), *w_ = (want);                                          \
        check_count++;                                                                 \
        if (!g_ || strcmp(g_, w_) != 0) {                                              \
            check_failures++;                                                          \
            fprintf(stderr, "%s:%d: %s = \"%s\", want \"%s\"\n", __FILE__, __LINE__, #got, \
                    g_ ? g_ : "(null)", w_);                                           \
        }                                                                              \
    } while (0)

#define CHECK_NEAR(got, want, tol)                                                     \
    do {                                                                               \
        double g_ = (got), w_ = (want);                                                \
        check_count++;                                                                 \
        if (!(g_ >= w_ - (tol) && g_ <= w_ + (tol))) {                                 \
            check_failures++;                                                          \
            fprintf(stderr, "%s:%d: %s = %.9g, want %.9g +- %g\n", __FILE__, __LINE__, #got, \
                    g_, w_, (double)(tol));                                            \
        }                                                                              \
    } while (0)

static inline int check_report(const char *name)
{
    printf("%s: %d checks, %d failed\n", name, check_count, check_failures);
    return check_failures ? 1 : 0;
}

#endif
