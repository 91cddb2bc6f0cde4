/* flashbed model make: a synthetic model of a real shape (model verify:
 * cli/cmd_model_verify.c; model transpose: cli/cmd_model_transpose.c). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli_parse.h"
#include "cli/commands.h"
#include "cli/shared.h"
#include "common/fsutil.h"
#include "common/log.h"
#include "common/model_shape.h"
#include "common/options.h"
#include "common/out_path.h"
#include "engine/import/spectrum.h"
#include "engine/import/synthetic.h"

struct model_make_opts {
    char *arch;
    char *shape;
    char *dtype;
    char *format;
    double relu_density;
    char *up_spectrum;
    uint64_t seed;
    char *out;
    struct opt_given given; /* which options the command line gave (opts_given) */
};

#define O(f) offsetof(struct model_make_opts, f)
static const struct opt_def model_make_options[] = {
    {"arch", OPT_STRING, O(arch), NULL, "NAME",
     "architecture the shape must have: opt, llama, falcon, persimmon, phi, phi3, bamboo, mistral, qwen2 or qwen3"},
    {"shape", OPT_STRING, O(shape), NULL, "NAME", "a shape in configs/models (opt-6.7b, llama-tiny, ...) or a .json"},
    {"dtype", OPT_STRING, O(dtype), "f16", "TYPE", "matrices as written (llama2c: f32 only)",
     .allowed = WTYPE_ALLOWED},
    {"format", OPT_STRING, O(format), "hf", "NAME", "hf (config.json + safetensors + tokenizer.json) or llama2c",
     .allowed = "hf|llama2c"},
    {"relu-density", OPT_DOUBLE, O(relu_density), "-1", "D",
     "ReLU FFNs with biases (OPT, Persimmon, Phi): up-projection biases so that about a fraction D of FFN "
     "neurons fire (Falcon and Llama have no FFN biases: refused)"},
    {"up-spectrum", OPT_STRING, O(up_spectrum), "flat", "SPEC",
     "singular values of the up projection (Llama: and the gate): flat, power:ALPHA or lowrank:R:NOISE; hf only"},
    {"seed", OPT_UINT, O(seed), "1", "S", "random weights seed"},
    {"out", OPT_STRING, O(out), NULL, "DIR", "folder to write: model.bin + tokenizer.bin"},
    OPT_END,
};
#undef O

static const struct opt_command model_make_command = {
    .name = "model make",
    .usage = "--arch opt|llama|falcon|persimmon|phi|phi3|bamboo|mistral|qwen2|qwen3 --shape NAME [--dtype f16]\n"
             "       [--up-spectrum SPEC] [--seed S] --out DIR",
    .summary = "Writes a synthetic model of a real shape with random weights scaled so activations\n"
               "stay finite: a Hugging Face style folder (config.json, model.safetensors, a\n"
               "tokenizer.json over a synthetic vocabulary of the shape's size) with the tensor\n"
               "names, fused layouts and config keys of the architecture's transformers model\n"
               "(Falcon's fused query_key_value, Persimmon's per-head one and q/k LayerNorms,\n"
               "Phi's LM head bias, Phi-3's fused qkv_proj and gate_up_proj, a relufied Falcon as\n"
               "\"activation\": \"relu\", a Llama's FATReLU as \"hidden_act\": \"fatrelu\" with\n"
               "flashbed_fatrelu_threshold, TurboSparse's dReLU as model_type bamboo), or with --format\n"
               "llama2c a llama2.c checkpoint (model.bin, f32) and tokenizer.bin, so other engines\n"
               "can run the same weights. Convert either with flashbed convert.\n"
               "\n"
               "Uniform random weights spread their energy over every direction of the input\n"
               "(a flat singular spectrum), so no low-rank predictor can learn which neurons\n"
               "fire; trained up projections concentrate it in few directions. --up-spectrum\n"
               "writes every up projection (and a Llama's gate) as U diag(sigma) V^T, U and V\n"
               "random orthogonal factors from the seed, at the flat weights' Frobenius norm:\n"
               "  flat             iid uniform weights, as without the option\n"
               "  power:ALPHA      sigma_i ~ (i+1)^-ALPHA, 0 <= ALPHA <= 16 (0: exactly flat)\n"
               "  lowrank:R:NOISE  R equal values, the rest NOISE (0..1) times as large\n"
               "Every other tensor equals the flat model's of the same seed; with --relu-density\n"
               "each neuron's bias scales with its own row norm. The spectrum is recorded in\n"
               "config.json (flashbed_up_spectrum), and convert carries it into model.json.",
    .opts = model_make_options,
    .max_positional = 0,
    OPT_GIVEN_AT(struct model_make_opts, given),
};

/* Every option's refusal, naming the option, before anything is written:
 * 0 with the shape, dtype and spectrum, or the exit status (printed). */
static int check_make(const struct model_make_opts *o, const struct fb_settings *set, struct model_shape *s,
                      enum fb_dtype *dt, struct spectrum *up)
{
    char err[512];
    bool llama2c = !strcmp(o->format, "llama2c");
    if (!o->shape || !o->out || !o->arch)
        fb_error("model make: needs --arch, --shape and --out");
    else if (wtype_parse(o->dtype, dt) != 0)
        fb_error("model make --dtype: unknown dtype '%s' (%s)", o->dtype, wtype_names());
    else if (llama2c && *dt != DTYPE_F32)
        fb_error("model make --dtype: llama2c checkpoints are f32; convert with --dtype %s instead", o->dtype);
    /* -1, the default, means not given: a value typed must lie in (0, 1) */
    else if (opts_given(&model_make_command, o, "relu-density") && !(o->relu_density > 0 && o->relu_density < 1))
        fb_error("model make --relu-density: needs 0 < D < 1, not %g", o->relu_density);
    else if (llama2c && o->relu_density >= 0)
        fb_error("model make --relu-density: needs --format hf (and a ReLU shape with FFN biases)");
    else if (spectrum_parse(o->up_spectrum, up, err, sizeof err) != 0)
        fb_error("model make --up-spectrum: %s", err);
    /* a llama2.c checkpoint has no field to record it in: a converted copy
     * could not say its spectrum was shaped */
    else if (llama2c && up->kind != SPECTRUM_FLAT)
        fb_error("model make --up-spectrum: needs --format hf (a llama2.c checkpoint cannot record it)");
    else if (model_shape_load(set, o->shape, s, err, sizeof err) != 0) {
        fb_error("%s", err);
        return FB_EXIT_FAILURE;
    }
    else if (strcmp(s->arch, o->arch) != 0)
        fb_error("model make: shape %s is a %s model, not %s", s->name, s->arch, o->arch);
    /* The writers refuse these too; checked here to name the option. */
    else if (synthetic_relu_density_check(s, o->relu_density, err, sizeof err) != 0)
        fb_error("model make --relu-density: %s", err);
    else if (spectrum_check_shape(up, s->d_ff, s->d_model, err, sizeof err) != 0)
        fb_error("model make --up-spectrum: shape %s: %s", s->name, err);
    else if (out_new_dir_ok("model make --out", o->out) != 0)
        return FB_EXIT_FAILURE;
    else
        return 0;
    return FB_EXIT_USAGE;
}

/* The model written (the folders made above --out kept, or removed again
 * when it fails). The exit status. */
static int make(const struct model_make_opts *o, const struct model_shape *s, enum fb_dtype dt,
                const struct spectrum *up)
{
    struct out_parents made;
    char err[512];
    if (out_parents_ok("model make --out", o->out, &made) != 0)
        return 1;
    struct cli_progress bar;
    struct progress_report report = cli_progress_report(&bar);
    int mrc = !strcmp(o->format, "llama2c")
                  ? synthetic_llama2c(s, o->seed, o->out, &report, err, sizeof err)
                  : synthetic_hf(s, dt, o->seed, o->relu_density, up, o->out, &report, err, sizeof err);
    cli_progress_end(&bar);
    if (mrc != 0) {
        fb_error("model make: %s", err);
        out_parents_undo(&made);
        return 1;
    }
    out_parents_keep(&made);
    return 0;
}

static int model_make(int argc, char **argv, const struct fb_settings *set)
{
    struct model_make_opts o;
    int rc;
    if (!cli_start(&model_make_command, &o, sizeof o, argc, argv, NULL, NULL, &rc))
        return rc;
    if (o.out)
        out_path_trim(o.out); /* "m/" names the folder m */
    struct model_shape s;
    enum fb_dtype dt;
    struct spectrum up;
    if ((rc = check_make(&o, set, &s, &dt, &up)) == 0)
        rc = make(&o, &s, dt, &up);
    opts_free(&model_make_command, &o);
    return rc;
}

static int model_verify(int argc, char **argv, const struct fb_settings *set)
{
    (void)set; /* verifying reads no setting */
    return cmd_model_verify(argc, argv);
}

static int model_transpose(int argc, char **argv, const struct fb_settings *set)
{
    (void)set; /* transposing reads no setting */
    return cmd_model_transpose(argc, argv);
}

const struct subcommand model_subcommands[] = {
    {"make", "a synthetic model of a real shape (configs/models), as a Hugging Face folder or a llama2.c checkpoint",
     &model_make_command, NULL, model_make},
    {"verify", "checks a model folder against its checksums and for NaN/infinite weights", NULL, "DIR",
     model_verify},
    {"transpose", "writes ffn_t.bin (channel bundles, rows of down) for input sparsity on flash", NULL,
     "DIR [--force]", model_transpose},
    {NULL, NULL, NULL, NULL, NULL},
};

int cmd_model(int argc, char **argv, const struct fb_settings *set)
{
    return cli_subcommands_run("model", model_subcommands, argc, argv, set);
}
