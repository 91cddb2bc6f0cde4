/* Architecture choices from a shape's strings: the one place where OPT,
 * Llama, Falcon, Phi-2, Persimmon, Mistral, Qwen and Gemma 3 differ, and RoPE's
 * frequency table (rope_scaling) computed from them. */
#include "engine/model/model.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "common/errbuf.h"

/* HF rotates int(rope_fraction * head_dim) dims of each head (Persimmon,
 * Phi-2: the first ones); the engine rotates them in adjacent pairs, so
 * the count must be even and, with RoPE, not 0. */
static int rope_dims_of(const struct model_shape *s, struct arch *a, char *err, size_t errlen)
{
    uint32_t head_dim = model_shape_head_dim(s);
    double dims = s->rope_fraction * head_dim;
    a->rope_dims = 0;
    if (a->position != POSITION_ROPE)
        return 0;
    if (dims >= 0 && dims <= head_dim)
        a->rope_dims = (uint32_t)dims; /* truncated, as Python's int() */
    if (a->rope_dims == 0 || a->rope_dims % 2) {
        err_set(err, errlen,
                 "rope_fraction %g of head_dim %u rotates %u dims: RoPE needs an even number of them, at least 2",
                 s->rope_fraction, head_dim, a->rope_dims);
        return -1;
    }
    return 0;
}

/* The shape's rope_scaling (model_shape_check has judged its numbers). */
static int rope_scaling_of(const struct model_shape *s, struct arch *a, char *err, size_t errlen)
{
    a->rope_factor = s->rope_factor;
    a->rope_low_freq_factor = s->rope_low_freq_factor;
    a->rope_high_freq_factor = s->rope_high_freq_factor;
    a->rope_original_max_positions = s->rope_original_max_positions;
    if (!s->rope_scaling[0])
        a->rope_scaling = ROPE_PLAIN;
    else if (!strcmp(s->rope_scaling, "linear"))
        a->rope_scaling = ROPE_LINEAR;
    else if (!strcmp(s->rope_scaling, "llama3"))
        a->rope_scaling = ROPE_LLAMA3;
    else if (!strcmp(s->rope_scaling, "longrope") && s->rope_pairs == a->rope_dims / 2 &&
             s->rope_pairs <= MODEL_MAX_ROPE_PAIRS) {
        a->rope_scaling = ROPE_LONGROPE;
        memcpy(a->rope_short_factor, s->rope_short_factor, s->rope_pairs * sizeof *a->rope_short_factor);
        memcpy(a->rope_long_factor, s->rope_long_factor, s->rope_pairs * sizeof *a->rope_long_factor);
    } else
        return err_set(err, errlen, "rope_scaling \"%s\" is not supported by the forward pass", s->rope_scaling);
    return 0;
}

/* Gemma 3's keys (the rest of a already filled): post-norms in a
 * sequential RMSNorm block only, a local RoPE theta not with longrope
 * (both would be table 1). */
static int gemma_of(const struct model_shape *s, struct arch *a, char *err, size_t errlen)
{
    a->window_pattern = s->sliding_window_pattern;
    a->rope_local_theta = (float)s->rope_local_theta;
    a->embed_scale = s->embedding_scale != 0 ? (float)s->embedding_scale : 1.0f;
    a->post_norms = s->post_norms;
    if (a->post_norms && (a->parallel_block || a->norm != NORM_RMS))
        return err_set(err, errlen, "post_norms is supported in a sequential block with rmsnorm only");
    if (a->rope_local_theta != 0 && a->rope_scaling == ROPE_LONGROPE)
        return err_set(err, errlen, "rope_local_theta with rope_scaling \"longrope\" is not supported (both are "
                       "RoPE table 1)");
    return 0;
}

int arch_from_shape(const struct model_shape *s, struct arch *a, char *err, size_t errlen)
{
    memset(a, 0, sizeof *a);
    if (!strcmp(s->norm, "rmsnorm"))
        a->norm = NORM_RMS;
    else if (!strcmp(s->norm, "layernorm"))
        a->norm = NORM_LAYER;
    else {
        err_set(err, errlen, "norm \"%s\" is not supported by the forward pass", s->norm);
        return -1;
    }
    if (!strcmp(s->position, "rope"))
        a->position = POSITION_ROPE;
    else if (!strcmp(s->position, "learned"))
        a->position = POSITION_LEARNED;
    else {
        err_set(err, errlen, "position \"%s\" is not supported by the forward pass", s->position);
        return -1;
    }
    static const struct {
        const char *name;
        enum activation act;
    } acts[] = {{"relu", ACT_RELU},          {"swiglu", ACT_SILU},   {"silu", ACT_SILU},
                {"gelu", ACT_GELU},          {"gelu_tanh", ACT_GELU_TANH}, {"squared_relu", ACT_SQUARED_RELU},
                {"fatrelu", ACT_FATRELU}, {"drelu", ACT_RELU}};
    size_t i = 0, n = sizeof acts / sizeof acts[0];
    while (i < n && strcmp(s->ffn_activation, acts[i].name))
        i++;
    if (i < n)
        a->act = acts[i].act;
    else {
        err_set(err, errlen, "FFN activation \"%s\" is not supported by the forward pass",
                 s->ffn_activation);
        return -1;
    }
    a->glu = s->ffn_kind == FFN_GLU;
    a->act_on_up = !strcmp(s->ffn_activation, "drelu");
    if (a->act_on_up && !a->glu) {
        err_set(err, errlen, "FFN activation \"drelu\" (relu on gate and up) needs ffn_kind \"glu\"");
        return -1;
    }
    a->biases = s->biases;
    a->qkv_bias = s->biases || s->qkv_bias;
    a->sliding_window = s->sliding_window;
    a->tied_output = s->tied_embeddings;
    a->parallel_block = s->parallel_block;
    a->qk_norm = s->qk_norm;
    a->output_bias = s->output_bias;
    a->fatrelu_threshold = (float)s->fatrelu_threshold;
    a->norm_eps = (float)s->norm_eps;
    a->position_offset = s->position_offset;
    a->rope_theta = (float)s->rope_theta;
    return rope_dims_of(s, a, err, errlen) || rope_scaling_of(s, a, err, errlen) || gemma_of(s, a, err, errlen) ? -1
                                                                                                              : 0;
}

void layer_tensor_name(char *buf, size_t len, int layer, const char *what)
{
    snprintf(buf, len, "layers.%d.%s", layer, what);
}

/* Llama 3.1's rule (HF's _compute_llama3_parameters): a pair whose
 * wavelength 2 pi / f is under original / high_freq_factor keeps f, one
 * over original / low_freq_factor turns factor times slower, and one
 * between blends the two by where original / wavelength falls between
 * low_freq_factor and high_freq_factor. */
static double llama3_freq(const struct arch *a, double f)
{
    double wavelen = 2 * M_PI / f, orig = a->rope_original_max_positions;
    if (wavelen < orig / a->rope_high_freq_factor)
        return f;
    if (wavelen > orig / a->rope_low_freq_factor)
        return f / a->rope_factor;
    double smooth = (orig / wavelen - a->rope_low_freq_factor) / (a->rope_high_freq_factor - a->rope_low_freq_factor);
    return (1 - smooth) * f / a->rope_factor + smooth * f;
}

/* longrope's factor on cos and sin (HF's attention_factor, as
 * Phi3LongRoPEScaledRotaryEmbedding computes it for both tables from
 * max_position_embeddings / original_max_position_embeddings, our
 * rope_factor): sqrt(1 + ln(factor) / ln(original)) above 1, else 1. */
static double longrope_scale(const struct arch *a)
{
    if (a->rope_factor <= 1)
        return 1;
    return sqrt(1 + log(a->rope_factor) / log(a->rope_original_max_positions));
}

/* The windowed layers' table (rope_local_theta): plain frequencies. */
static void local_rope_table(const struct arch *a, float *inv_freq, float *scale)
{
    for (uint32_t j = 0; j < a->rope_dims / 2; j++)
        inv_freq[j] = (float)(1.0 / pow(a->rope_local_theta, (double)(2 * j) / a->rope_dims));
    *scale = 1.0f;
}

void arch_rope_table(const struct arch *a, int table, float *inv_freq, float *scale)
{
    if (table && a->rope_local_theta != 0) {
        local_rope_table(a, inv_freq, scale);
        return;
    }
    const double *ext = table ? a->rope_long_factor : a->rope_short_factor;
    for (uint32_t j = 0; j < a->rope_dims / 2; j++) {
        double f = 1.0 / pow(a->rope_theta, (double)(2 * j) / a->rope_dims);
        if (a->rope_scaling == ROPE_LINEAR)
            f /= a->rope_factor;
        else if (a->rope_scaling == ROPE_LLAMA3)
            f = llama3_freq(a, f);
        else if (a->rope_scaling == ROPE_LONGROPE)
            f /= ext[j];
        inv_freq[j] = (float)f;
    }
    *scale = a->rope_scaling == ROPE_LONGROPE ? (float)longrope_scale(a) : 1.0f;
}

int arch_rope_table_at(const struct arch *a, int pos)
{
    return a->rope_scaling == ROPE_LONGROPE && pos >= a->rope_original_max_positions;
}

bool arch_layer_windowed(const struct arch *a, int layer)
{
    return a->sliding_window && (!a->window_pattern || (uint32_t)(layer + 1) % a->window_pattern != 0);
}

int arch_layer_rope_table(const struct arch *a, int layer, int pos)
{
    if (a->rope_local_theta != 0)
        return arch_layer_windowed(a, layer);
    return arch_rope_table_at(a, pos);
}

bool arch_two_rope_tables(const struct arch *a)
{
    return a->rope_scaling == ROPE_LONGROPE || a->rope_local_theta != 0;
}

void arch_rope_freqs(const struct arch *a, float *inv_freq, float *scale)
{
    arch_rope_table(a, 0, inv_freq, scale);
}
