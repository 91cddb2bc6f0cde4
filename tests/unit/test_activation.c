/* The FFN activations (engine/compute/activation.h) at fixed points, against
 * values computed in double from their definitions (Python's math.erf,
 * math.tanh); the rule for "active" each implies (the ReLU family sparse at
 * exactly zero, a GLU's gate deciding; SiLU and GELU by threshold) and the
 * predictor target it maps to; and what arch_from_shape makes of the
 * shapes the engine now runs (parallel blocks, partial RoPE's rotated
 * dims, FATReLU's threshold) and refuses (an odd or zero rotated count). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "check.h"
#include "common/model_shape.h"
#include "engine/compute/activation.h"
#include "engine/ffn/ffn_probe.h"

/* within float rounding of the double value */
#define CHECK_ACT(v, act, t, want) CHECK_NEAR(activation_apply_t((v), (act), (t)), (want), 2e-7 * (fabs(want) + 1))

static void test_values(void)
{
    CHECK(activation_apply_t(-1.0f, ACT_RELU, 0) == 0.0f);
    CHECK(activation_apply_t(0.0f, ACT_RELU, 0) == 0.0f);
    CHECK(activation_apply_t(2.5f, ACT_RELU, 0) == 2.5f);
    CHECK(activation_apply_t(-1.0f, ACT_SQUARED_RELU, 0) == 0.0f);
    CHECK(activation_apply_t(3.0f, ACT_SQUARED_RELU, 0) == 9.0f);
    CHECK(activation_apply_t(0.5f, ACT_SQUARED_RELU, 0) == 0.25f);
    /* FATReLU: strictly above the threshold passes unchanged */
    CHECK(activation_apply_t(0.25f, ACT_FATRELU, 0.25f) == 0.0f);
    CHECK(activation_apply_t(0.26f, ACT_FATRELU, 0.25f) == 0.26f);
    CHECK(activation_apply_t(0.2f, ACT_FATRELU, 0.25f) == 0.0f);
    CHECK(activation_apply_t(-1.0f, ACT_FATRELU, 0.25f) == 0.0f);
    CHECK(activation_apply_t(1e-3f, ACT_FATRELU, 0.0f) == 1e-3f);
    CHECK(activation_apply_t(0.005f, ACT_FATRELU, 0.01f) == 0.0f);
    /* the others ignore the threshold */
    CHECK(activation_apply_t(0.2f, ACT_RELU, 0.25f) == 0.2f);
    CHECK(activation_apply_t(0.2f, ACT_SQUARED_RELU, 0.25f) == 0.2f * 0.2f);
    CHECK_ACT(1.0f, ACT_GELU, 0.5f, 0.8413447460685429);
    CHECK_ACT(-1.0f, ACT_GELU, 0, -0.15865525393145707);
    CHECK_ACT(2.0f, ACT_GELU, 0, 1.9544997361036416);
    CHECK_ACT(-3.0f, ACT_GELU, 0, -0.00404969409489031);
    CHECK_ACT(0.5f, ACT_GELU, 0, 0.34573123063700656);
    CHECK(activation_apply_t(0.0f, ACT_GELU, 0) == 0.0f);
    CHECK_ACT(1.0f, ACT_GELU_TANH, 0, 0.8411919906082768);
    CHECK_ACT(-1.0f, ACT_GELU_TANH, 0, -0.15880800939172324);
    CHECK_ACT(2.0f, ACT_GELU_TANH, 0, 1.954597694087775);
    CHECK_ACT(-3.0f, ACT_GELU_TANH, 0, -0.0036373920817729943);
    CHECK_ACT(0.5f, ACT_GELU_TANH, 0, 0.34571400982514394);
    CHECK_ACT(1.0f, ACT_SILU, 0, 0.7310585786300049);
    CHECK_ACT(-1.0f, ACT_SILU, 0, -0.2689414213699951);
    CHECK_ACT(2.0f, ACT_SILU, 0, 1.7615941559557646);
    /* the plain entry point is FATReLU at 0 */
    CHECK(activation_apply(0.1f, ACT_FATRELU) == 0.1f);
    CHECK(activation_apply(1.0f, ACT_GELU) == activation_apply_t(1.0f, ACT_GELU, 0));
}

static void test_active_rule(void)
{
    CHECK(activation_sparse(ACT_RELU) && activation_sparse(ACT_SQUARED_RELU) && activation_sparse(ACT_FATRELU));
    CHECK(!activation_sparse(ACT_SILU) && !activation_sparse(ACT_GELU) && !activation_sparse(ACT_GELU_TANH));
    struct arch relu = {.act = ACT_RELU}, sq = {.act = ACT_SQUARED_RELU};
    struct arch fat_glu = {.act = ACT_FATRELU, .glu = true, .fatrelu_threshold = 0.25f};
    struct arch gelu = {.act = ACT_GELU}, swiglu = {.act = ACT_SILU, .glu = true};
    /* the ReLU family: not zero, whatever the threshold */
    CHECK(ffn_neuron_active(&relu, 1e-30f, 0, 5.0f));
    CHECK(!ffn_neuron_active(&relu, 0.0f, 0, 0.0f));
    CHECK(!ffn_neuron_active(&relu, -2.0f, 0, 0.0f));
    CHECK(ffn_neuron_active(&sq, 0.01f, 0, 1.0f));
    /* a FATReLU gate decides: up's size does not matter */
    CHECK(!ffn_neuron_active(&fat_glu, 100.0f, 0.2f, 0.0f));
    CHECK(ffn_neuron_active(&fat_glu, 1e-9f, 0.3f, 1.0f));
    CHECK(ffn_neuron_value(&fat_glu, 2.0f, 0.3f) == 0.6f);
    CHECK(ffn_neuron_value(&fat_glu, 2.0f, 0.2f) == 0.0f);
    /* dReLU (TurboSparse): relu(gate) * relu(up), active when the product is not zero */
    struct arch drelu = {.act = ACT_RELU, .glu = true, .act_on_up = true};
    CHECK(ffn_neuron_value(&drelu, 2.0f, 0.5f) == 1.0f);
    CHECK(ffn_neuron_value(&drelu, -2.0f, 0.5f) == 0.0f); /* a ReLU GLU's value: -1 */
    CHECK(ffn_neuron_value(&drelu, 2.0f, -0.5f) == 0.0f);
    CHECK(ffn_neuron_active(&drelu, 1e-30f, 1e-30f, 5.0f));
    CHECK(!ffn_neuron_active(&drelu, -2.0f, 0.5f, 0.0f));
    CHECK(!ffn_neuron_active(&drelu, 2.0f, -0.5f, 0.0f));
    CHECK(!ffn_neuron_active(&drelu, 0.0f, 3.0f, 0.0f));
    struct arch relu_glu = {.act = ACT_RELU, .glu = true};
    CHECK(ffn_neuron_active(&relu_glu, -2.0f, 0.5f, 0.0f)); /* the gate alone decides there */
    /* GELU, SiLU: |value| above the threshold */
    CHECK(ffn_neuron_active(&gelu, 1.0f, 0, 0.1f));       /* 0.841 */
    CHECK(!ffn_neuron_active(&gelu, -3.0f, 0, 0.01f));    /* -0.004 */
    CHECK(ffn_neuron_active(&gelu, -3.0f, 0, 0.0f));
    CHECK(ffn_neuron_active(&swiglu, -2.0f, 1.0f, 1.4f)); /* silu(1) * -2 = -1.46 */
    CHECK(!ffn_neuron_active(&swiglu, -2.0f, 1.0f, 1.5f));
    enum predictor_target t;
    char err[256];
    struct arch all[] = {relu, sq, fat_glu, gelu, swiglu, {.act = ACT_GELU_TANH}};
    enum predictor_target want[] = {PREDICT_RELU, PREDICT_RELU, PREDICT_RELU, PREDICT_GLU_ABS, PREDICT_GLU_ABS,
                                    PREDICT_GLU_ABS};
    for (int i = 0; i < 6; i++) {
        CHECK(predictor_target_of(&all[i], &t, err, sizeof err) == 0);
        CHECK(t == want[i]);
    }
}

static void test_arch(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    struct arch a;
    char err[512];
    static const struct {
        const char *shape;
        uint32_t rope_dims;
        bool parallel, qk_norm, output_bias;
        enum activation act;
    } want[] = {
        {"falcon-tiny", 16, true, false, false, ACT_RELU},
        {"persimmon-tiny", 8, false, true, false, ACT_SQUARED_RELU},
        {"phi-tiny", 8, true, false, true, ACT_RELU},
        {"phi-2", 32, true, false, true, ACT_RELU},
        {"persimmon-8b", 32, false, true, false, ACT_SQUARED_RELU},
        {"llama-relu-tiny", 8, false, false, false, ACT_FATRELU},
        {"opt-tiny", 0, false, false, false, ACT_RELU},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        CHECK(model_shape_load(&set, want[i].shape, &s, err, sizeof err) == 0);
        CHECK(arch_from_shape(&s, &a, err, sizeof err) == 0);
        CHECK_U64(a.rope_dims, want[i].rope_dims);
        CHECK(a.parallel_block == want[i].parallel && a.qk_norm == want[i].qk_norm);
        CHECK(a.output_bias == want[i].output_bias && a.act == want[i].act);
    }
    CHECK(model_shape_load(&set, "llama-relu-tiny", &s, err, sizeof err) == 0);
    CHECK(arch_from_shape(&s, &a, err, sizeof err) == 0);
    CHECK(a.fatrelu_threshold == 0.01f && a.glu);
    snprintf(s.ffn_activation, sizeof s.ffn_activation, "gelu_tanh");
    CHECK(arch_from_shape(&s, &a, err, sizeof err) == 0 && a.act == ACT_GELU_TANH && !a.act_on_up);
    /* dReLU: ReLU on a GLU's gate and up; a plain FFN has no up to add it to */
    snprintf(s.ffn_activation, sizeof s.ffn_activation, "drelu");
    CHECK(arch_from_shape(&s, &a, err, sizeof err) == 0 && a.act == ACT_RELU && a.glu && a.act_on_up);
    s.ffn_kind = FFN_RELU;
    CHECK(arch_from_shape(&s, &a, err, sizeof err) == -1);
    CHECK(strstr(err, "\"drelu\"") != NULL && strstr(err, "\"glu\"") != NULL);
    /* RoPE rotates pairs: an odd count of dims, or none, is refused */
    CHECK(model_shape_load(&set, "falcon-tiny", &s, err, sizeof err) == 0); /* head_dim 16 */
    s.rope_fraction = 0.3125;                                          /* 5 dims */
    CHECK(arch_from_shape(&s, &a, err, sizeof err) == -1);
    CHECK(strstr(err, "even") != NULL && strstr(err, "rotates 5 dims") != NULL);
    s.rope_fraction = 0.0;
    CHECK(arch_from_shape(&s, &a, err, sizeof err) == -1);
    s.rope_fraction = 0.35; /* 5.6 dims: truncated to 5, as HF's int() */
    CHECK(arch_from_shape(&s, &a, err, sizeof err) == -1);
    s.rope_fraction = 0.4; /* 6.4: 6 */
    CHECK(arch_from_shape(&s, &a, err, sizeof err) == 0 && a.rope_dims == 6);
    s.rope_fraction = 1.5;
    CHECK(arch_from_shape(&s, &a, err, sizeof err) == -1);
}

/* RoPE's frequencies as data: plain theta^(-2j/rot); linear divides
 * each by the factor; llama3 (Llama 3.1's rule, checked here pair by pair
 * against the band each wavelength falls in) keeps the short ones,
 * divides the long ones and blends between. */
static void test_rope_freqs(void)
{
    struct arch a = {.position = POSITION_ROPE, .rope_theta = 10000, .rope_dims = 8};
    float plain[4], f[4], scale = 0;
    arch_rope_freqs(&a, plain, &scale);
    CHECK(scale == 1.0f);
    for (int j = 0; j < 4; j++)
        CHECK_NEAR(plain[j], pow(10000, -2.0 * j / 8), 1e-7 * plain[j]);
    a.rope_scaling = ROPE_LINEAR, a.rope_factor = 4;
    arch_rope_freqs(&a, f, &scale);
    for (int j = 0; j < 4; j++)
        CHECK_NEAR(f[j], plain[j] / 4.0, 1e-7 * plain[j]);
    /* wavelengths 6.3, 63, 628, 6283 against original 128: under 128/4
     * kept, over 128/1 divided by 8, 63 blended with s = (128/63 - 1)/3 */
    a.rope_scaling = ROPE_LLAMA3, a.rope_factor = 8, a.rope_low_freq_factor = 1, a.rope_high_freq_factor = 4;
    a.rope_original_max_positions = 128;
    arch_rope_freqs(&a, f, &scale);
    CHECK(scale == 1.0f);
    CHECK(f[0] == plain[0]);
    double w1 = 2 * M_PI / pow(10000, -2.0 / 8), s1 = (128 / w1 - 1) / 3;
    CHECK(s1 > 0 && s1 < 1);
    CHECK_NEAR(f[1], (1 - s1) * plain[1] / 8 + s1 * plain[1], 1e-6 * plain[1]);
    CHECK(f[1] > plain[1] / 8 && f[1] < plain[1]);
    CHECK_NEAR(f[2], plain[2] / 8.0, 1e-7 * plain[2]);
    CHECK_NEAR(f[3], plain[3] / 8.0, 1e-7 * plain[3]);
    /* the shape's keys reach the arch */
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    char err[512];
    CHECK(model_shape_load(&set, "llama-3.1-8b", &s, err, sizeof err) == 0);
    CHECK(arch_from_shape(&s, &a, err, sizeof err) == 0);
    CHECK(a.rope_scaling == ROPE_LLAMA3 && a.rope_factor == 8 && a.rope_original_max_positions == 8192);
    CHECK(model_shape_load(&set, "mistral-7b", &s, err, sizeof err) == 0);
    CHECK(arch_from_shape(&s, &a, err, sizeof err) == 0 && a.sliding_window == 4096 && a.rope_scaling == ROPE_PLAIN);
    CHECK(model_shape_load(&set, "qwen2.5-7b", &s, err, sizeof err) == 0);
    CHECK(arch_from_shape(&s, &a, err, sizeof err) == 0 && a.qkv_bias && !a.biases);
    CHECK(model_shape_load(&set, "qwen3-8b", &s, err, sizeof err) == 0);
    CHECK(arch_from_shape(&s, &a, err, sizeof err) == 0 && a.qk_norm && a.norm == NORM_RMS && a.rope_dims == 128);
}

/* longrope: table 0 divides pair j by short_factor[j], table 1 by
 * long_factor[j], both scaled by sqrt(1 + ln 16 / ln 8); table 1 from
 * position 8 (the original context) on; other scalings have one table. */
static void test_longrope_freqs(void)
{
    struct arch a = {.position = POSITION_ROPE, .rope_theta = 10000, .rope_dims = 8, .rope_scaling = ROPE_LONGROPE,
                     .rope_factor = 16, .rope_original_max_positions = 8};
    const double shorts[4] = {1, 1.5, 2, 3}, longs[4] = {1, 4, 16, 64};
    memcpy(a.rope_short_factor, shorts, sizeof shorts), memcpy(a.rope_long_factor, longs, sizeof longs);
    float f[4], g[4], scale = 0, long_scale = 0;
    double plain[4];
    for (int j = 0; j < 4; j++)
        plain[j] = pow(10000, -2.0 * j / 8);
    arch_rope_table(&a, 0, f, &scale);
    arch_rope_table(&a, 1, g, &long_scale);
    for (int j = 0; j < 4; j++) {
        CHECK_NEAR(f[j], plain[j] / shorts[j], 1e-7 * plain[j]);
        CHECK_NEAR(g[j], plain[j] / longs[j], 1e-7 * plain[j]);
    }
    CHECK_NEAR(scale, sqrt(1 + log(16) / log(8)), 1e-7);
    CHECK(long_scale == scale);
    CHECK(arch_rope_table_at(&a, 0) == 0 && arch_rope_table_at(&a, 7) == 0);
    CHECK(arch_rope_table_at(&a, 8) == 1 && arch_rope_table_at(&a, 1000) == 1);
    a.rope_factor = 1; /* max_positions = original: no attention factor */
    arch_rope_table(&a, 1, g, &scale);
    CHECK(scale == 1.0f);
    a.rope_scaling = ROPE_LLAMA3;
    CHECK(arch_rope_table_at(&a, 1000) == 0);
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    char err[512];
    CHECK(model_shape_load(&set, "phi-3-mini-128k", &s, err, sizeof err) == 0);
    CHECK(arch_from_shape(&s, &a, err, sizeof err) == 0);
    CHECK(a.rope_scaling == ROPE_LONGROPE && a.rope_original_max_positions == 4096 && a.rope_dims == 96);
    CHECK(a.rope_short_factor[47] == s.rope_short_factor[47] && a.rope_long_factor[47] == s.rope_long_factor[47]);
    CHECK(arch_rope_table_at(&a, 4095) == 0 && arch_rope_table_at(&a, 4096) == 1);
}

/* Gemma 3's keys: layers 5, 11, 17 of 18 global (pattern 6), the rest
 * windowed and rotating with table 1 (base 10000, unscaled), the global
 * ones with table 0 (rope_theta, linear scaling kept); the embedding
 * scale and post-norms reach the arch; the combinations refused. */
static void test_gemma_arch(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    struct arch a;
    char err[512];
    CHECK(model_shape_load(&set, "qwen3-8b", &s, err, sizeof err) == 0);
    s.n_layers = 18, s.sliding_window = 512, s.sliding_window_pattern = 6, s.rope_local_theta = 10000;
    s.rope_theta = 1e6, s.embedding_scale = sqrtf(640.0f), s.post_norms = true;
    snprintf(s.rope_scaling, sizeof s.rope_scaling, "linear");
    s.rope_factor = 8;
    CHECK(model_shape_check(&s, "gemma", err, sizeof err) == 0);
    CHECK(arch_from_shape(&s, &a, err, sizeof err) == 0);
    CHECK(a.post_norms && a.embed_scale == sqrtf(640.0f) && a.window_pattern == 6 && arch_two_rope_tables(&a));
    int global = 0;
    for (int l = 0; l < 18; l++) {
        bool windowed = (l + 1) % 6 != 0;
        global += !windowed;
        CHECK(arch_layer_windowed(&a, l) == windowed && model_shape_layer_windowed(&s, (uint32_t)l) == windowed);
        CHECK(arch_layer_rope_table(&a, l, 100000) == (windowed ? 1 : 0));
    }
    CHECK(global == 3 && !arch_layer_windowed(&a, 5) && !arch_layer_windowed(&a, 17) && arch_layer_windowed(&a, 6));
    /* the mean attended: 15 layers see 512, 3 see all 4096 */
    CHECK_NEAR(model_shape_attended(&s, 4096), (15 * 512.0 + 3 * 4096.0) / 18, 1e-9);
    float local[64], global_f[64], scale = 0;
    arch_rope_table(&a, 1, local, &scale);
    CHECK(scale == 1.0f);
    arch_rope_table(&a, 0, global_f, &scale);
    for (uint32_t j = 0; j < a.rope_dims / 2; j++) {
        CHECK_NEAR(local[j], pow(10000, -2.0 * j / a.rope_dims), 1e-7 * local[j]);
        CHECK_NEAR(global_f[j], pow(1e6, -2.0 * j / a.rope_dims) / 8, 1e-6 * global_f[j]);
    }
    /* Mistral's window without a pattern: every layer, one table */
    s.sliding_window_pattern = 0, s.rope_local_theta = 0, s.embedding_scale = 0;
    CHECK(arch_from_shape(&s, &a, err, sizeof err) == 0 && arch_layer_windowed(&a, 5) && !arch_two_rope_tables(&a));
    CHECK(a.embed_scale == 1.0f && arch_layer_rope_table(&a, 5, 0) == 0);
    /* refused: a pattern without a window, post-norms in a parallel block */
    s.sliding_window_pattern = 6, s.sliding_window = 0;
    CHECK(model_shape_check(&s, "gemma", err, sizeof err) != 0 && strstr(err, "sliding_window_pattern"));
    s.sliding_window = 512, s.parallel_block = true;
    CHECK(arch_from_shape(&s, &a, err, sizeof err) != 0 && strstr(err, "post_norms"));
}

int main(void)
{
    test_values();
    test_rope_freqs();
    test_longrope_freqs();
    test_active_rule();
    test_arch();
    test_gemma_arch();
    return check_report("test_activation");
}
