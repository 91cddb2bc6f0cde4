/* flashbed model make: a synthetic model of a real shape. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "common/log.h"
#include "common/model_shape.h"
#include "common/options.h"
#include "engine/synthetic.h"

struct model_make_opts {
    char *arch;
    char *shape;
    char *dtype;
    char *format;
    uint64_t seed;
    char *out;
};

#define O(f) offsetof(struct model_make_opts, f)
static const struct opt_def model_make_options[] = {
    {"arch", OPT_STRING, O(arch), NULL, "NAME", "architecture the shape must have: llama (opt: not yet)"},
    {"shape", OPT_STRING, O(shape), NULL, "NAME", "a shape in configs/models (llama-tiny, llama-1.1b, llama-2-7b) or a .json"},
    {"dtype", OPT_STRING, O(dtype), "f32", "TYPE", "weights as written: f32 (llama2.c checkpoints are f32)"},
    {"format", OPT_STRING, O(format), "llama2c", "NAME", "output format: llama2c (hf: not yet)"},
    {"seed", OPT_UINT, O(seed), "1", "S", "random weights seed"},
    {"out", OPT_STRING, O(out), NULL, "DIR", "folder to write: model.bin + tokenizer.bin"},
    OPT_END,
};
#undef O

static const struct opt_command model_make_command = {
    .name = "model make",
    .usage = "--arch llama --shape NAME --seed S --out DIR",
    .summary = "Writes a synthetic model of a real shape with random weights scaled so activations\n"
               "stay finite, as a llama2.c checkpoint (model.bin) with a synthetic tokenizer.bin of\n"
               "the shape's vocabulary size. Convert it with flashbed convert DIR/model.bin\n"
               "--tokenizer DIR/tokenizer.bin. Hugging Face output and OPT are not supported yet.",
    .opts = model_make_options,
    .max_positional = 0,
};

int cmd_model(int argc, char **argv)
{
    if (argc < 2 || strcmp(argv[1], "make") != 0) {
        if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
            opts_print_help(&model_make_command, stdout);
            return 0;
        }
        fb_error("model: expected a subcommand: make (see flashbed model make --help)");
        return 2;
    }
    struct model_make_opts o;
    memset(&o, 0, sizeof o);
    int rc = opts_parse(&model_make_command, &o, argc - 1, argv + 1, NULL, NULL);
    if (rc != 0) {
        opts_free(&model_make_command, &o);
        return rc > 0 ? 0 : 2;
    }
    rc = 2;
    struct model_shape s;
    char err[512];
    if (!o.shape || !o.out || !o.arch)
        fb_error("model make: needs --arch, --shape and --out");
    else if (strcmp(o.format, "llama2c") != 0)
        fb_error("model make --format: '%s' is not supported yet (llama2c)", o.format);
    else if (strcmp(o.dtype, "f32") != 0)
        fb_error("model make --dtype: llama2c checkpoints are f32; convert with --dtype %s instead", o.dtype);
    else if (model_shape_load(o.shape, &s, err, sizeof err) != 0)
        fb_error("%s", err);
    else if (strcmp(s.arch, o.arch) != 0)
        fb_error("model make: shape %s is a %s model, not %s", s.name, s.arch, o.arch);
    else
        rc = synthetic_llama2c(&s, o.seed, o.out) == 0 ? 0 : 1;
    opts_free(&model_make_command, &o);
    return rc;
}
