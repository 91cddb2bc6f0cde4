/* model make --relu-density: a synthetic OPT's FFN fires for about the
 * asked fraction of neurons, with the flat up projection and with shaped
 * spectra (--up-spectrum, whose neurons' biases follow their row norms).
 * Counted through the FFN interface itself: a counting FFN wraps the dense
 * one, as a flash-resident FFN would. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "check.h"
#include "engine/forward/engine.h"
#include "engine/import/import.h"
#include "engine/import/spectrum.h"
#include "engine/import/synthetic.h"
#include "engine/model/model_format.h"

/* Where the library says why a call failed (it prints nothing itself). */
static char why[1024];

struct counts {
    uint64_t fired, total;
    double sum2; /* of each call's (token and layer's) fraction squared */
    uint64_t calls;
};

static int count_create(struct ffn *f, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    f->priv = calloc(1, sizeof(struct counts));
    return f->priv ? 0 : -1;
}

static void count_forward(struct ffn *f, int layer, int pos, const float *x, float *out)
{
    const struct model *m = f->m;
    const struct layer_weights *L = &m->layers[layer];
    struct counts *c = f->priv;
    uint64_t fired = c->fired;
    for (uint32_t i = 0; i < m->shape.d_ff; i++) {
        const float *up = (const float *)((const char *)L->ffn_bundles + i * m->bundle_stride);
        float z = L->ffn_up_bias[i];
        for (uint32_t j = 0; j < m->shape.d_model; j++)
            z += up[j] * x[j];
        c->fired += z > 0;
        c->total++;
    }
    double share = (double)(c->fired - fired) / m->shape.d_ff;
    c->sum2 += share * share;
    c->calls++;
    ffn_dense.forward(f, layer, pos, x, out);
}

static void count_destroy(struct ffn *f)
{
    free(f->priv);
}

static const struct ffn_ops ffn_counting = {
    .name = "counting", .create = count_create, .forward = count_forward, .destroy = count_destroy};

static void rm_dir(const char *dir, const char *const *files, int n)
{
    char p[700];
    for (int i = 0; i < n; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    rmdir(dir);
}

int main(void)
{
    const struct fb_settings set = fb_settings_defaults();
    char tmp[] = "/tmp/flashbed-test-density-XXXXXX";
    CHECK(mkdtemp(tmp) != NULL);
    struct model_shape s;
    char err[512];
    CHECK(model_shape_load(&set, "opt-tiny", &s, err, sizeof err) == 0);
    static const struct {
        double density;
        const char *spectrum;
    } cases[] = {{0.05, "flat"}, {0.3, "flat"}, {0.05, "power:1"}, {0.3, "power:0.5"}, {0.1, "lowrank:8:0.1"}};
    enum { TOKENS = 64 };
    for (int k = 0; k < (int)(sizeof cases / sizeof cases[0]); k++) {
        char hf[600], dir[600];
        snprintf(hf, sizeof hf, "%s/hf%d", tmp, k);
        snprintf(dir, sizeof dir, "%s/m%d", tmp, k);
        struct spectrum sp;
        CHECK(spectrum_parse(cases[k].spectrum, &sp, why, sizeof why) == 0);
        CHECK(synthetic_hf(&s, DTYPE_F32, 7 + k, cases[k].density, &sp, hf, NULL, why, sizeof why) == 0);
        struct import_dtype dt = {.keep = false, .dtype = DTYPE_F32};
        CHECK(import_hf(hf, NULL, dir, &dt, NULL, why, sizeof why) == 0);
        struct model m;
        struct engine e;
        CHECK(model_open(&m, dir, why, sizeof why) == 0);
        CHECK(engine_init(&e, &set, &m, &backend_cpu, &ffn_counting, 1, 0, why, sizeof why) == 0);
        for (int p = 0; p < TOKENS; p++)
            engine_forward(&e, p == 0 ? m.bos_id : 260 + (p * 37) % 700, p);
        struct counts *c = e.ffn.priv;
        double got = (double)c->fired / (double)c->total;
        double sd = sqrt(fmax(0, c->sum2 / (double)c->calls - got * got));
        /* sd: how much one token's (and layer's) share varies; a shaped
         * spectrum makes it vary more, as the input's few strong directions
         * move many neurons at once */
        printf("relu density %.2f, up spectrum %s: %llu of %llu neurons fired (%.3f, per token sd %.3f)\n",
               cases[k].density, cases[k].spectrum, (unsigned long long)c->fired, (unsigned long long)c->total,
               got, sd);
        CHECK_U64(c->total, (uint64_t)TOKENS * s.n_layers * s.d_ff);
        CHECK(fabs(got - cases[k].density) < 0.03);
        engine_free(&e);
        model_close(&m);
        const char *hf_files[] = {"config.json", "model.safetensors", "tokenizer.json"};
        const char *m_files[] = {"model.json", "dram.bin", "ffn.bin", "ffn.crc32c", "tokenizer.bin"};
        rm_dir(hf, hf_files, 3);
        rm_dir(dir, m_files, 5);
    }
    /* a Llama shape has no ReLU to set */
    CHECK(model_shape_load(&set, "llama-tiny", &s, err, sizeof err) == 0);
    char hf[600];
    snprintf(hf, sizeof hf, "%s/llama", tmp);
    CHECK(synthetic_hf(&s, DTYPE_F16, 1, 0.1, NULL, hf, NULL, why, sizeof why) == -1);
    CHECK(access(hf, F_OK) != 0);
    CHECK(rmdir(tmp) == 0);
    return check_report("test_relu_density");
}
