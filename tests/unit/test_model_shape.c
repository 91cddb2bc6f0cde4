/* Shapes load from configs/models/ and their parameter counts match hand
 * arithmetic on the public configs. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cache/unit_geometry.h"
#include "check.h"
#include "common/model_shape.h"
#include "engine/model/model_format.h"

/* Issue 33's shapes: each one's parameter count is its model card's, which
 * checks head_dim, the q/k/v biases and the q/k norms as counted; the new
 * keys are read. */
static void test_todays_shapes(const struct fb_settings *set)
{
    static const struct {
        const char *name;
        uint64_t params;
    } want[] = {
        {"llama-3.1-8b", 8030261248ull}, /* Llama 3.1 8B */
        {"mistral-7b", 7241732096ull},   /* Mistral 7B v0.1 */
        {"qwen2.5-7b", 7615616512ull},   /* Qwen2.5-7B: 7.61B */
        {"qwen3-8b", 8190735360ull},     /* Qwen3-8B: 8.19B */
    };
    struct model_shape s;
    struct param_counts c;
    char err[512];
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        CHECK(model_shape_load(set, want[i].name, &s, err, sizeof err) == 0);
        model_shape_params(&s, &c);
        CHECK_U64(c.total, want[i].params);
    }
    CHECK(model_shape_load(set, "llama-3.1-8b", &s, err, sizeof err) == 0);
    CHECK_STR(s.rope_scaling, "llama3");
    CHECK(s.rope_factor == 8 && s.rope_low_freq_factor == 1 && s.rope_high_freq_factor == 4);
    CHECK_U64(s.rope_original_max_positions, 8192);
    CHECK(model_shape_load(set, "mistral-7b", &s, err, sizeof err) == 0);
    CHECK_U64(s.sliding_window, 4096);
    CHECK(model_shape_load(set, "qwen2.5-7b", &s, err, sizeof err) == 0);
    CHECK(s.qkv_bias && !s.biases && !s.qk_norm);
    CHECK(model_shape_load(set, "qwen3-tiny", &s, err, sizeof err) == 0);
    CHECK(s.qk_norm && !s.qkv_bias);
    CHECK_U64(model_shape_head_dim(&s), 16); /* stated: d_model / n_heads is 8 */
    CHECK(model_shape_load(set, "llama-2-7b", &s, err, sizeof err) == 0);
    CHECK(!s.rope_scaling[0] && !s.sliding_window && !s.head_dim && !s.qkv_bias); /* absent keys */
    CHECK_U64(model_shape_head_dim(&s), 128);
}

/* model.json's shape (model_shape_to_json) reads back as it was, the new
 * keys with it. */
static void test_round_trip(const struct fb_settings *set)
{
    const char *names[] = {"llama-3.1-8b", "mistral-7b", "qwen2.5-7b", "qwen3-8b", "opt-6.7b", "persimmon-8b",
                           "phi-3-mini-128k"};
    char path[] = "/tmp/flashbed-shape-XXXXXX", err[512];
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        struct model_shape s, back;
        CHECK(model_shape_load(set, names[i], &s, err, sizeof err) == 0);
        cJSON *o = cJSON_CreateObject();
        model_shape_to_json(&s, o);
        char *text = cJSON_Print(o);
        FILE *f = fopen(path, "w");
        CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0);
        free(text);
        cJSON_Delete(o);
        CHECK(model_shape_read(path, &back, err, sizeof err) == 0);
        snprintf(back.name, sizeof back.name, "%s", s.name);
        memcpy(back.paper_statistics, s.paper_statistics, sizeof s.paper_statistics);
        CHECK(!strcmp(back.rope_scaling, s.rope_scaling) && back.rope_factor == s.rope_factor &&
              back.rope_low_freq_factor == s.rope_low_freq_factor &&
              back.rope_high_freq_factor == s.rope_high_freq_factor &&
              back.rope_original_max_positions == s.rope_original_max_positions);
        /* longrope's lists, to the last bit (cJSON writes doubles that read back exactly) */
        CHECK(back.rope_pairs == s.rope_pairs &&
              !memcmp(back.rope_short_factor, s.rope_short_factor, s.rope_pairs * sizeof *s.rope_short_factor) &&
              !memcmp(back.rope_long_factor, s.rope_long_factor, s.rope_pairs * sizeof *s.rope_long_factor));
        CHECK(back.head_dim == s.head_dim && back.qkv_bias == s.qkv_bias && back.sliding_window == s.sliding_window &&
              back.qk_norm == s.qk_norm && back.biases == s.biases);
        struct param_counts a, b;
        model_shape_params(&s, &a), model_shape_params(&back, &b);
        CHECK_U64(b.total, a.total);
    }
    unlink(path);
}

/* Gemma 3's keys written into model.json and read back exactly; absent
 * from a shape without them. */
static void test_gemma_keys_round_trip(const struct fb_settings *set)
{
    char path[] = "/tmp/flashbed-shape-XXXXXX", err[512];
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    close(fd);
    struct model_shape s, back;
    CHECK(model_shape_load(set, "qwen3-8b", &s, err, sizeof err) == 0);
    cJSON *plain = cJSON_CreateObject();
    model_shape_to_json(&s, plain);
    CHECK(!cJSON_HasObjectItem(plain, "sliding_window_pattern") && !cJSON_HasObjectItem(plain, "post_norms") &&
          !cJSON_HasObjectItem(plain, "embedding_scale") && !cJSON_HasObjectItem(plain, "rope_local_theta"));
    cJSON_Delete(plain);
    s.sliding_window = 512, s.sliding_window_pattern = 6, s.rope_local_theta = 10000;
    s.embedding_scale = sqrtf(640.0f), s.post_norms = true;
    cJSON *o = cJSON_CreateObject();
    model_shape_to_json(&s, o);
    char *text = cJSON_Print(o);
    FILE *f = fopen(path, "w");
    CHECK(f && fputs(text, f) >= 0 && fclose(f) == 0);
    free(text);
    cJSON_Delete(o);
    CHECK(model_shape_read(path, &back, err, sizeof err) == 0);
    CHECK(back.sliding_window == 512 && back.sliding_window_pattern == 6 && back.rope_local_theta == 10000 &&
          back.embedding_scale == s.embedding_scale && back.post_norms);
    struct param_counts a, b;
    model_shape_params(&s, &a), model_shape_params(&back, &b);
    CHECK_U64(b.norms, a.norms);
    s.post_norms = false;
    model_shape_params(&s, &b);
    CHECK_U64(a.norms - b.norms, 2ull * s.d_model * s.n_layers); /* two more norms a layer */
    unlink(path);
}

/* The real shapes of at most 4B: reproduce --quick's Table 3 beside
 * OPT-1.3B, and Phi-3-mini; their published parameter counts. */
static void test_small_real_shapes(const struct fb_settings *set)
{
    struct model_shape s;
    struct param_counts c;
    char err[512];
    CHECK(model_shape_load(set, "llama-1.1b-fatrelu", &s, err, sizeof err) == 0);
    CHECK(s.ffn_kind == FFN_GLU && !s.biases && !s.tied_embeddings && s.fatrelu_threshold == 0.01);
    model_shape_params(&s, &c);
    CHECK_U64(c.total, 1100048384ull); /* TinyLlama-1.1B's published parameter count */
    CHECK(model_shape_load(set, "phi-2", &s, err, sizeof err) == 0);
    model_shape_params(&s, &c);
    CHECK_U64(c.total, 2779683840ull); /* Phi-2's published parameter count */
    CHECK(model_shape_load(set, "phi-3-mini", &s, err, sizeof err) == 0);
    CHECK(s.ffn_kind == FFN_GLU && !s.biases && !s.tied_embeddings && !strcmp(s.arch, "phi3"));
    model_shape_params(&s, &c);
    CHECK_U64(c.total, 3821079552ull); /* Phi-3-mini's published parameter count */
    CHECK_U64(unit_neuron_weights(&s), 3 * 3072);
    /* Phi-3-mini-128k: the same weights, longrope's RoPE over 32 x 4096 positions */
    CHECK(model_shape_load(set, "phi-3-mini-128k", &s, err, sizeof err) == 0);
    model_shape_params(&s, &c);
    CHECK_U64(c.total, 3821079552ull);
    CHECK_STR(s.rope_scaling, "longrope");
    CHECK(s.rope_factor == 32 && s.rope_original_max_positions == 4096 && s.max_positions == 131072);
    CHECK_U64(s.rope_pairs, 48); /* head_dim 96 / 2 */
    CHECK(s.rope_short_factor[0] == 1.05 && s.rope_short_factor[47] == 2.9499999999999975);
    CHECK(s.rope_long_factor[0] == 1.0299999713897705 && s.rope_long_factor[47] == 64.81001281738281);

}

int main(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    struct param_counts c;
    char err[512];
    CHECK(model_shape_load(&set, "opt-6.7b", &s, err, sizeof err) == 0);
    CHECK_U64(s.d_model, 4096);
    CHECK_U64(s.d_ff, 16384);
    CHECK_U64(s.n_layers, 32);
    CHECK(s.ffn_kind == FFN_RELU && s.biases && s.tied_embeddings);
    model_shape_params(&s, &c);
    /* 50272 x 4096 tokens + 2050 x 4096 learned positions. */
    CHECK_U64(c.embeddings, 50272ull * 4096 + 2050ull * 4096);
    CHECK_U64(c.lm_head, 0);
    CHECK_U64(c.attention, 32ull * (4ull * 4096 * 4096 + 4 * 4096));
    CHECK_U64(c.ffn, 32ull * (2ull * 4096 * 16384 + 16384 + 4096));
    CHECK_U64(c.norms, 4096ull * 2 * (2 * 32 + 1));
    CHECK_U64(c.total, c.embeddings + c.attention + c.ffn + c.norms);
    CHECK_U64(c.total, 6658473984ull); /* OPT-6.7B's published parameter count */
    /* The paper gives the FFN as 64.62% of OPT-6.7B; counting every weight
     * (positions and norms too) gives 64.51%. */
    CHECK_NEAR((double)c.ffn / (double)c.total, 0.6451, 0.0001);
    CHECK_NEAR((double)c.ffn / (double)c.total, 0.6462, 0.0015);
    CHECK_U64(unit_neuron_weights(&s), 8192);

    CHECK(model_shape_load(&set, "llama-2-7b", &s, err, sizeof err) == 0);
    CHECK(s.ffn_kind == FFN_GLU && !s.biases && !s.tied_embeddings);
    model_shape_params(&s, &c);
    CHECK_U64(c.total, 6738415616ull); /* Llama-2-7B's published parameter count */
    CHECK_U64(unit_neuron_weights(&s), 3 * 4096);

    const char *names[] = {"opt-125m", "opt-1.3b", "falcon-7b", "persimmon-8b", "phi-2",
                           "opt-tiny", "llama-tiny"};
    for (int i = 0; i < 7; i++) {
        CHECK(model_shape_load(&set, names[i], &s, err, sizeof err) == 0);
        CHECK_STR(s.name, names[i]);
    }
    CHECK(model_shape_load(&set, "opt-125m", &s, err, sizeof err) == 0);
    model_shape_params(&s, &c);
    CHECK_U64(c.total, 125239296ull); /* OPT-125m's published parameter count */

    test_small_real_shapes(&set);
    test_todays_shapes(&set);
    test_round_trip(&set);
    test_gemma_keys_round_trip(&set);
    CHECK(model_shape_load(&set, "no-such-model", &s, err, sizeof err) == -1);
    CHECK(strstr(err, "no-such-model") != NULL);
    return check_report("test_model_shape");
}
