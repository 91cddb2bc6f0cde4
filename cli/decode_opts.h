/* The options generate and run share, declared once as fragments
 * (common/options.h): the prompt and -n, the end-of-sequence rule,
 * sampling, and the compute threads and backend. Each command embeds a
 * struct decode_opts, lists the fragments it takes at offsetof(its struct,
 * that member) in the order its --help shows them, and states the defaults
 * it wants otherwise: the fragments carry run's (64 tokens, greedy: a
 * measurement), generate overrides them (256 tokens at temperature 1). */
#ifndef FLASHBED_CLI_DECODE_OPTS_H
#define FLASHBED_CLI_DECODE_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "common/options.h"
#include "engine/forward/decode.h"
#include "engine/model/model.h"

struct decode_opts {
    char *prompt, *prompt_file, *prompt_ids;
    uint64_t prompt_tokens, n;
    bool ignore_eos;
    double temperature, top_p;
    uint64_t seed;
    uint64_t threads;
    char *backend;
};

extern const struct opt_def decode_prompt_options[];   /* prompt, prompt-file, prompt-ids, prompt-tokens, n */
extern const struct opt_def decode_eos_options[];      /* ignore-eos */
extern const struct opt_def decode_sampling_options[]; /* temperature, top-p, seed */
extern const struct opt_def decode_compute_options[];  /* threads, backend */

/* The prompt's text: --prompt, or the file --prompt-file or --prompt-ids
 * names (then *owned holds it for the caller to free). NULL with the error
 * printed and *status the exit status: 2 unless exactly one of the three
 * was given, 1 when the file cannot be read. `cmd` names the command in
 * the message. */
const char *decode_opts_text(const char *cmd, const struct decode_opts *d, char **owned, int *status);

/* The prompt's token ids from decode_opts_text's text: the tokenizer's
 * (BOS first) or, with --prompt-ids, the file's ids as they are, each
 * checked against m's vocabulary; cut to --prompt-tokens. *n gets the
 * count; caller frees. NULL with the error printed. */
int *decode_opts_prompt(const char *cmd, const struct decode_opts *d, const struct model *m, const char *text,
                        int *n);

/* The prompt, counted as --prompt-tokens counts it (BOS not counted: the
 * tokenizer adds it; --prompt-ids adds none), and what fits `room`
 * positions, into buf for a refusal: "the prompt is 4 tokens + BOS;
 * --prompt-tokens 3 (BOS not counted) at most fits". */
void decode_opts_fit_text(const struct decode_opts *d, int n_prompt, long room, char *buf, size_t len);

/* --threads, 0 meaning every online CPU. */
int decode_opts_threads(const struct decode_opts *d);

/* The decode loop's settings for prompt[0..n_prompt) and n tokens. */
struct decode_config decode_opts_config(const struct decode_opts *d, const int *prompt, int n_prompt, int n);

#endif
