/* Text in and out for the generating commands (generate, run). */
#ifndef FLASHBED_CLI_TEXT_OUT_H
#define FLASHBED_CLI_TEXT_OUT_H

#include <stdint.h>

#include <cjson/cJSON.h>

#include "engine/model/model.h"
#include "engine/tokenizer/tokenizer.h"

/* The file's text (caller frees), or NULL with the error printed. */
char *read_prompt_file(const char *path);
/* The prompt's token ids, BOS first, cut to the first keep tokens after BOS
 * (keep 0: all); *n gets the count. Caller frees; NULL when out of memory. */
int *encode_prompt(const struct model *m, const char *text, uint64_t keep, int *n);
/* Writes token id (after prev) to stdout; with rec, also its text as valid
 * UTF-8 under "text" (U+FFFD for bytes that do not form a character). */
void emit_token(const struct tokenizer *t, int prev, int id, cJSON *rec);
/* Writes the prompt's text (its tokens after BOS) to stdout and flushes:
 * what the generated text continues. */
void emit_prompt(const struct tokenizer *t, const int *prompt, int n_prompt);

#endif
