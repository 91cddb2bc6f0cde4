/* The option fragments generate and run share, and what both make of them. */
#include "cli/decode_opts.h"

#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <unistd.h>

#include "cli/backend_opts.h"
#include "cli/text_out.h"
#include "common/log.h"
#include "common/machine.h"
#include "common/model_shape.h"
#include "common/parse.h"

#define D(f) offsetof(struct decode_opts, f)
const struct opt_def decode_prompt_options[] = {
    {"prompt", OPT_STRING, D(prompt), NULL, "TEXT", "prompt text"},
    {"prompt-file", OPT_STRING, D(prompt_file), NULL, "FILE", "read the prompt from a file"},
    {"prompt-ids", OPT_STRING, D(prompt_ids), NULL, "FILE",
     "the prompt as token ids, separated by white space ('#' starts a comment line), fed as they are: no "
     "tokenizer, no BOS added (a reference's ids, another tool's tokens)"},
    /* no model holds more positions: larger counts would not fit an int */
    {"prompt-tokens", OPT_UINT, D(prompt_tokens), "0", "N", "keep the first N prompt tokens (0: all; BOS not counted)",
     .max = MODEL_MAX_POSITIONS},
    {"n", OPT_UINT, D(n), "64", "N", "tokens to generate", .min = 1, .max = MODEL_MAX_POSITIONS, .short_name = 'n'},
    OPT_END,
};

const struct opt_def decode_eos_options[] = {
    {"ignore-eos", OPT_FLAG, D(ignore_eos), NULL, NULL, "generate all -n tokens (for measurements)"},
    OPT_END,
};

const struct opt_def decode_sampling_options[] = {
    {"temperature", OPT_DOUBLE, D(temperature), "0", "T", "sampling temperature; 0 is greedy",
     .min = 0, .max = OPT_NO_MAX},
    {"top-p", OPT_DOUBLE, D(top_p), "0.9", "P", "nucleus sampling mass; 1 samples the full distribution",
     .min = 0, .max = 1},
    {"seed", OPT_UINT, D(seed), "0", "S", "sampling seed"},
    OPT_END,
};

const struct opt_def decode_compute_options[] = {
    {"threads", OPT_UINT, D(threads), "0", "N", "compute threads (0: all CPUs)", .max = FB_MAX_THREADS},
    {"backend", OPT_STRING, D(backend), "cpu", "NAME", BACKEND_OPT_HELP, .allowed = BACKEND_OPT_ALLOWED},
    OPT_END,
};
#undef D

const char *decode_opts_text(const char *cmd, const struct decode_opts *d, char **owned, int *status)
{
    *owned = NULL;
    if ((d->prompt != NULL) + (d->prompt_file != NULL) + (d->prompt_ids != NULL) != 1) {
        fb_error("%s: needs exactly one of --prompt TEXT, --prompt-file FILE and --prompt-ids FILE", cmd);
        *status = 2;
        return NULL;
    }
    if (d->prompt)
        return d->prompt;
    *owned = read_prompt_file(d->prompt_file ? d->prompt_file : d->prompt_ids);
    *status = 1;
    return *owned;
}

int *decode_opts_prompt(const char *cmd, const struct decode_opts *d, const struct model *m, const char *text,
                        int *n)
{
    if (!d->prompt_ids) {
        int *ids = encode_prompt(m, text, d->prompt_tokens, n);
        if (!ids)
            fb_error("%s: cannot allocate the prompt's tokens", cmd);
        return ids;
    }
    int *ids;
    size_t count;
    char err[256];
    if (parse_id_list(text, m->shape.vocab_size, &ids, &count, err, sizeof err) != 0) {
        fb_error("%s --prompt-ids %s: %s", cmd, d->prompt_ids, err);
        return NULL;
    }
    if (d->prompt_tokens && count > d->prompt_tokens)
        count = (size_t)d->prompt_tokens;
    *n = count > INT_MAX ? INT_MAX : (int)count;
    return ids;
}

void decode_opts_fit_text(const struct decode_opts *d, int n_prompt, long room, char *buf, size_t len)
{
    int bos = d->prompt_ids ? 0 : 1; /* encode_prompt puts BOS first; --prompt-ids are fed as they are */
    long keep = room - bos;
    char had[96];
    if (bos)
        snprintf(had, sizeof had, "the prompt is %d tokens + BOS", n_prompt - bos);
    else
        snprintf(had, sizeof had, "the prompt is %d ids (--prompt-ids: no BOS added)", n_prompt);
    if (keep >= 1)
        snprintf(buf, len, "%s; --prompt-tokens %ld%s at most fits", had, keep, bos ? " (BOS not counted)" : "");
    else
        snprintf(buf, len, "%s; -n leaves no room for a prompt: lower -n", had);
}

int decode_opts_threads(const struct decode_opts *d)
{
    return machine_compute_threads(d->threads);
}

struct decode_config decode_opts_config(const struct decode_opts *d, const int *prompt, int n_prompt, int n)
{
    return (struct decode_config){
        .prompt = prompt,
        .n_prompt = n_prompt,
        .n = n,
        .ignore_eos = d->ignore_eos,
        .temperature = (float)d->temperature,
        .top_p = (float)d->top_p,
        .seed = d->seed,
    };
}
