/* Writing small input files in unit tests: the text, or a failed check. */
#ifndef FLASHBED_TESTS_TEST_FILES_H
#define FLASHBED_TESTS_TEST_FILES_H

#include <stdio.h>

#include "check.h"

static inline void test_write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (f) {
        fputs(text, f);
        fclose(f);
    }
}

#endif
