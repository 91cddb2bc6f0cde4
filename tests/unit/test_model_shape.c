/* Shapes load from configs/models/ and their parameter counts match hand
 * arithmetic on the public configs. */
#include <string.h>

#include "check.h"
#include "common/model_shape.h"

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
    CHECK_U64(model_shape_neuron_weights(&s), 8192);

    CHECK(model_shape_load(&set, "llama-2-7b", &s, err, sizeof err) == 0);
    CHECK(s.ffn_kind == FFN_GLU && !s.biases && !s.tied_embeddings);
    model_shape_params(&s, &c);
    CHECK_U64(c.total, 6738415616ull); /* Llama-2-7B's published parameter count */
    CHECK_U64(model_shape_neuron_weights(&s), 3 * 4096);

    const char *names[] = {"opt-125m", "opt-1.3b", "falcon-7b", "persimmon-8b", "phi-2",
                           "opt-tiny", "llama-tiny"};
    for (int i = 0; i < 7; i++) {
        CHECK(model_shape_load(&set, names[i], &s, err, sizeof err) == 0);
        CHECK_STR(s.name, names[i]);
    }
    CHECK(model_shape_load(&set, "opt-125m", &s, err, sizeof err) == 0);
    model_shape_params(&s, &c);
    CHECK_U64(c.total, 125239296ull); /* OPT-125m's published parameter count */

    /* the real shapes reproduce --quick measures Table 3 at beside OPT-1.3B */
    CHECK(model_shape_load(&set, "llama-1.1b-fatrelu", &s, err, sizeof err) == 0);
    CHECK(s.ffn_kind == FFN_GLU && !s.biases && !s.tied_embeddings && s.fatrelu_threshold == 0.01);
    model_shape_params(&s, &c);
    CHECK_U64(c.total, 1100048384ull); /* TinyLlama-1.1B's published parameter count */
    CHECK(model_shape_load(&set, "phi-2", &s, err, sizeof err) == 0);
    model_shape_params(&s, &c);
    CHECK_U64(c.total, 2779683840ull); /* Phi-2's published parameter count */
    CHECK(model_shape_load(&set, "phi-3-mini", &s, err, sizeof err) == 0);
    CHECK(s.ffn_kind == FFN_GLU && !s.biases && !s.tied_embeddings && !strcmp(s.arch, "phi3"));
    model_shape_params(&s, &c);
    CHECK_U64(c.total, 3821079552ull); /* Phi-3-mini's published parameter count */
    CHECK_U64(model_shape_neuron_weights(&s), 3 * 3072);

    CHECK(model_shape_load(&set, "no-such-model", &s, err, sizeof err) == -1);
    CHECK(strstr(err, "no-such-model") != NULL);
    return check_report("test_model_shape");
}
