/* What the fuzz harnesses share: most of flashbed's parsers read a path,
 * so a harness writes its input to a file in a folder of its own
 * (/dev/shm/flashbed-fuzz-PID, or $TMPDIR when /dev/shm is missing),
 * removed when the process exits. Failures here are the harness's, not the
 * input's: they abort, so a broken set-up never passes as "no crash".
 *
 * Each harness defines LLVMFuzzerTestOneInput; libFuzzer drives it in the
 * fuzz build (FLASHBED_FUZZ), replay_main.c in the ordinary ones. Single
 * threaded, as both drivers are. */
#ifndef FLASHBED_TESTS_FUZZ_UTIL_H
#define FLASHBED_TESTS_FUZZ_UTIL_H

#include <stddef.h>
#include <stdint.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The harness's own folder, created on first use. */
const char *fuzz_dir(void);

/* dir/name filled with data[0..size); returns the path (static storage,
 * one per name slot: valid until the next call with the same name). */
const char *fuzz_write(const char *name, const void *data, size_t size);

/* dir/name as a path, without touching it. */
const char *fuzz_path(const char *name);

/* dir/name as a new, empty folder (whatever was there is removed first);
 * returns its path as fuzz_path does. */
const char *fuzz_mkdir(const char *name);

/* Removes dir/name and whatever it holds (a file or a folder tree). */
void fuzz_remove(const char *name);

/* dir/name as a llama2.c tokenizer.bin of vocab tokens (<unk>, <s>, </s>,
 * the <0xXX> byte tokens, then "p3", "p4", ...): what a model header that
 * names a vocabulary size needs beside it. Returns the path (not written
 * when no file can have that name, e.g. a folder). */
const char *fuzz_write_tokenizer_bin(const char *name, int vocab);

/* With FLASHBED_FUZZ_VERBOSE set, prints what a parser said about an
 * input (its err buffer, or "accepted"): how to see that the seeds reach
 * past the first checks. Silent otherwise, as fuzzing wants. */
void fuzz_note(const char *what, int rc, const char *err);

/* data as a NUL-terminated string (a new buffer, caller frees). */
char *fuzz_strndup(const uint8_t *data, size_t size);

#endif
