/* The cost model's transposed layout (input sparsity, issue 33) against
 * numbers worked out by hand: Llama-2-7B's shape in f16 on a profile whose
 * flash reads 1 GB/s at every size and thread count, whose compute reads
 * weights at 10 GB/s, copies at 10 GB/s, with 100 ns per row; half the
 * input channels and a quarter of the rows of down kept; and the refusals
 * (no volumes, a keeping policy without a trace, volumes of the wrong
 * layout). The paper's tables are test_cost_model's. */
#include <stdlib.h>

#include "check.h"
#include "policy_text.h"

#include "common/model_shape.h"
#include "common/settings.h"
#include "sim/cost_model.h"
#include "sim/hw_profile.h"
#include "hw_fixture.h"
#include "sim/predict_list.h"

static struct hw_profile *flat_profile(void)
{
    struct hw_profile *hw = hw_flat_profile();
    hw->per_row_ns = 100;
    return hw;
}

/* Llama-2-7B: d_model 4096, d_ff 11008, 32 layers, a GLU. In f16 a channel
 * bundle is 2 x 11008 x 2 = 44032 bytes, a row of down 4096 x 2 = 8192.
 * Kept per token: 0.5 x 4096 x 32 = 65536 channels, 0.25 x 11008 x 32 =
 * 88064 rows of down.
 *   I/O      65536 x 44032 + 88064 x 8192 = 2885681152 + 721420288
 *            = 3607101440 bytes at 1 GB/s: 3607.10144 ms, 153600 reads
 *   memory   nothing kept or copied; 153600 rows inserted x 100 ns: 15.36 ms
 *   FFN      2 x (2 x 65536 x 11008 + 88064 x 4096) = 3607101440 bytes at
 *            10 GB/s: 360.710144 ms; no predictor
 *   DRAM     the FFN's rows held: 3607101440 bytes */
static void densities(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    char err[1024];
    CHECK(model_shape_load(&set, "llama-2-7b", &s, err, sizeof err) == 0);
    struct hw_profile *hw = flat_profile();
    struct cost_config c = {.shape = &s, .hw = hw, .io_threads = 32, .context_tokens = 256,
                            .policy = POLICY("predictor"), .layout = LAYOUT("transposed")};
    snprintf(c.dtype, sizeof c.dtype, "f16");
    struct cost_prediction o;
    CHECK(cost_predict(&c, &o, err, sizeof err) == -1); /* no volumes */
    CHECK(strstr(err, "layout transposed is priced from its two streams' volumes") != NULL);
    volumes_transposed_from_densities(&s, 0.5, 0.25, &c.vol);
    CHECK(cost_predict(&c, &o, err, sizeof err) == 0);
    CHECK_NEAR(o.bytes_per_token, 3607101440.0, 1e-12);
    CHECK_NEAR(o.reads_per_token, 153600, 1e-12);
    CHECK_NEAR(o.io_ms, 3607.10144, 1e-9);
    CHECK_NEAR(o.mem_ms, 15.36, 1e-9);
    CHECK_NEAR(o.ffn_ms, 360.710144, 1e-9);
    CHECK(o.predictor_ms == 0 && o.dram_predictor == 0);
    CHECK_NEAR(o.dram_ffn, 3607101440.0, 1e-12);
    CHECK_NEAR(o.rows_inserted, 153600, 1e-12);
    /* the same volumes under a neuron layout: refused */
    c.layout = LAYOUT("bundled");
    CHECK(cost_predict(&c, &o, err, sizeof err) == -1 && strstr(err, "--layout transposed") != NULL);
    /* naive streams the model as with any layout */
    c.layout = LAYOUT("transposed");
    c.policy = POLICY("naive");
    memset(&c.vol, 0, sizeof c.vol);
    CHECK(cost_predict(&c, &o, err, sizeof err) == 0 && o.bytes_per_token > 1e10);
    free(hw);
}

/* predict's list: the densities given price predictor; a policy that keeps
 * rows needs a trace; without densities, refused. */
static void predict_list_refusals(void)
{
    const struct fb_settings set = fb_settings_defaults();
    struct model_shape s;
    char err[1024];
    CHECK(model_shape_load(&set, "llama-2-7b", &s, err, sizeof err) == 0);
    struct hw_profile *hw = flat_profile();
    struct predict_setup su = {.settings = &set, .shape = &s, .hw = hw, .dtype = "f16",
                               .layout = LAYOUT("transposed"), .dram_share = 0.5, .io_threads = 32,
                               .context_tokens = 256, .channel_density = 0.5, .down_density = 0.25};
    struct policy_spec pols[2] = {POLICY("predictor"), POLICY("naive")};
    struct policy_prediction *out = NULL;
    CHECK(predict_list(&su, pols, 2, &out, err, sizeof err) == 0);
    if (out) {
        CHECK_NEAR(out[0].prediction.io_ms, 3607.10144, 1e-9);
        CHECK(out[0].config.predictor_source[0] == 0 && out[0].prediction.predictor_ms == 0);
        free(out);
        out = NULL;
    }
    struct policy_spec window = POLICY("window:3");
    CHECK(predict_list(&su, &window, 1, &out, err, sizeof err) == -1);
    CHECK(strstr(err, "a policy that keeps rows needs a trace with channel sets") != NULL);
    su.down_density = 0;
    CHECK(predict_list(&su, pols, 1, &out, err, sizeof err) == -1);
    CHECK(strstr(err, "needs --channel-density and --down-density") != NULL);
    free(hw);
}

int main(void)
{
    densities();
    predict_list_refusals();
    return check_report("test_cost_transposed");
}
