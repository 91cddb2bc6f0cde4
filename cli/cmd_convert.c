/* flashbed convert: a source model in, a flashbed model folder out. */
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cli/cli_parse.h"
#include "cli/commands.h"
#include "cli/shared.h"
#include "common/log.h"
#include "common/options.h"
#include "common/out_path.h"
#include "engine/import/import.h"

struct convert_opts {
    char *out;
    char *dtype;
    char *tokenizer;
};

/* A GGUF file: named FILE.gguf. */
static bool is_gguf(const char *path)
{
    size_t n = strlen(path);
    return n > 5 && !strcmp(path + n - 5, ".gguf");
}

/* The importer for input: a folder (Hugging Face), a .gguf file, else a llama2.c checkpoint. */
static int import_any(const char *input, bool dir, const struct convert_opts *o, struct import_dtype *dt,
                      const struct progress_report *report, char *err, size_t errlen)
{
    if (dir)
        return import_hf(input, o->tokenizer, o->out, dt, report, err, errlen);
    if (is_gguf(input))
        return import_gguf(input, o->tokenizer, o->out, dt, report, err, errlen);
    return import_llama2c(input, o->tokenizer, o->out, dt->dtype, report, err, errlen);
}

#define O(f) offsetof(struct convert_opts, f)
static const struct opt_def convert_options[] = {
    {"out", OPT_STRING, O(out), NULL, "DIR", "model folder to write (must not exist)"},
    {"dtype", OPT_STRING, O(dtype), NULL, "TYPE",
     "weight storage (default: the checkpoint's own, its matrices' when it mixes; llama2.c: f32; a GGUF "
     "file: each matrix as stored, f32, f16 or bf16 decode everything)",
     .allowed = WTYPE_ALLOWED},
    {"tokenizer", OPT_STRING, O(tokenizer), NULL, "FILE",
     "llama2.c tokenizer.bin (needed for llama2.c checkpoints; replaces a folder's tokenizer.json or a GGUF "
     "file's tokenizer)"},
    OPT_END,
};
#undef O

/* Filled by convert_summary from the importers' own tables. */
static char summary[4096]; /* the fixed text, hf (1200) and gguf (256) with room to spare */

static struct opt_command convert_command = {
    .name = "convert",
    .usage = "INPUT --out DIR [--dtype TYPE] [--tokenizer FILE]",
    .summary = summary,
    .opts = convert_options,
    .max_positional = 1,
};

/* list into out as lines of at most width columns, each after two spaces,
 * broken at the spaces after its commas. */
static void wrap_list(const char *list, char *out, size_t len, size_t width)
{
    size_t used = 0, col = 2;
    snprintf(out, len, "  ");
    for (const char *p = list; *p && used + 4 < len; p++) {
        size_t word = strcspn(p + 1, " ") + 1;
        if (*p == ' ' && p > list && p[-1] == ',' && col + word > width) {
            used = strlen(out);
            snprintf(out + used, len - used, "\n  ");
            col = 2;
            continue;
        }
        used = strlen(out);
        snprintf(out + used, len - used, "%c", *p);
        col++;
    }
}

/* convert --help's text: what INPUT may be, the architectures listed from
 * the tables the importers dispatch on (engine/import/import.h), so that
 * help names every one they accept. */
static void convert_summary(void)
{
    char list[1024], hf[1200], gguf[256];
    import_hf_archs(list, sizeof list, true);
    wrap_list(list, hf, sizeof hf, 82);
    import_gguf_archs(gguf, sizeof gguf);
    snprintf(summary, sizeof summary,
             "Converts a model into a flashbed model folder (model.json, dram.bin, ffn.bin laid\n"
             "out by neuron bundle, tokenizer). INPUT is one of:\n"
             "- a Hugging Face folder: config.json, model.safetensors (or the shards its\n"
             "  model.safetensors.index.json lists), and tokenizer.json or SentencePiece's\n"
             "  tokenizer.model; config.json's model_type one of:\n"
             "%s;\n"
             "- a GGUF file (FILE.gguf, llama.cpp's format) of general.architecture %s,\n"
             "  whose matrices stay in their stored types (F32 ... Q8_0, Q2_K ... Q6_K);\n"
             "- a llama2.c checkpoint, with --tokenizer FILE (its tokenizer.bin).\n"
             "The weights keep the checkpoint's dtype unless --dtype says otherwise.",
             hf, gguf);
}

/* Which weight types a GGUF file or Hugging Face folder became. */
static void say_dtypes(const char *input, bool dir, const struct import_dtype *dt)
{
    if (!dir && is_gguf(input))
        fb_info("matrices %s, FFN bundles in %s (the file holds %s)", dt->keep ? "as stored" : wtype_name(dt->dtype),
                wtype_name(dt->dtype), dt->held);
    else if (dir)
        fb_info("weights in %s (%s; the checkpoint holds %s)", wtype_name(dt->dtype),
                dt->keep ? "the checkpoint's own" : "--dtype", dt->held);
}

int cmd_convert(int argc, char **argv, const struct fb_settings *set)
{
    (void)set; /* converting reads no setting: no shape name, plot or backend */
    struct convert_opts o;
    char *pos[1] = {NULL};
    int npos = 0;
    int rc;
    convert_summary();
    if (!cli_start(&convert_command, &o, sizeof o, argc, argv, pos, &npos, &rc))
        return rc;
    if (o.out)
        out_path_trim(o.out); /* "m/" names the folder m */
    enum fb_dtype dt = DTYPE_F32;
    struct stat st;
    struct out_parents made;
    char err[1024];
    rc = 2;
    if (npos != 1)
        fb_error("convert: needs the INPUT model (see flashbed convert --help)");
    else if (!o.out)
        fb_error("convert: needs --out DIR");
    else if (o.dtype && wtype_parse(o.dtype, &dt) != 0)
        fb_error("convert --dtype: unknown dtype '%s' (%s)", o.dtype, wtype_names());
    else if (stat(pos[0], &st) != 0 && (rc = FB_EXIT_FAILURE))
        fb_error("%s: does not exist", pos[0]);
    else if (!S_ISDIR(st.st_mode) && !is_gguf(pos[0]) && import_lone_file_check(pos[0], err, sizeof err) != 0 &&
             (rc = FB_EXIT_FAILURE))
        fb_error("%s", err);
    /* The importers refuse these too; checked here to name the option. */
    else if (!S_ISDIR(st.st_mode) && !is_gguf(pos[0]) && !o.tokenizer)
        fb_error("%s: a llama2.c checkpoint needs --tokenizer FILE (its tokenizer.bin)", pos[0]);
    else if (out_new_dir_ok("convert --out", o.out) != 0)
        rc = FB_EXIT_FAILURE;
    else if (out_parents_ok("convert --out", o.out, &made) != 0)
        rc = 1;
    else {
        struct cli_progress bar;
        struct progress_report report = cli_progress_report(&bar);
        struct import_dtype hf_dt = {.keep = !o.dtype, .dtype = dt};
        int irc = import_any(pos[0], S_ISDIR(st.st_mode), &o, &hf_dt, &report, err, sizeof err);
        cli_progress_end(&bar);
        if (irc == 0)
            say_dtypes(pos[0], S_ISDIR(st.st_mode), &hf_dt);
        if (irc != 0)
            fb_error("%s", err);
        /* folders made above --out go again with a failed conversion */
        if (irc == 0)
            out_parents_keep(&made);
        else
            out_parents_undo(&made);
        rc = irc == 0 ? 0 : 1;
    }
    if (rc == 0)
        fb_info("wrote %s", o.out);
    opts_free(&convert_command, &o);
    return rc;
}
