/* The flash throughput fit recovers known parameters from a sweep the model
 * itself generated, and interpolation returns grid points exactly. */
#include <math.h>

#include "check.h"
#include "sim/flash_model.h"

static const double chunks[] = {4096, 8192, 16384, 32768, 65536, 131072, 262144, 524288, 1048576};
static const double threads[] = {1, 2, 4, 8, 16, 32, 64};

static size_t synth(const struct flash_params *truth, struct flash_point *pts)
{
    size_t n = 0;
    for (size_t t = 0; t < sizeof threads / sizeof threads[0]; t++)
        for (size_t c = 0; c < sizeof chunks / sizeof chunks[0]; c++)
            pts[n++] = (struct flash_point){chunks[c], threads[t],
                                            flash_closed_form(truth, chunks[c], threads[t])};
    return n;
}

static void check_recovery(struct flash_params truth)
{
    struct flash_point pts[64];
    size_t n = synth(&truth, pts);
    struct flash_params fit = {0};
    double rms = flash_fit(pts, n, FIT_ALL, &fit);
    CHECK(rms >= 0 && rms < 1e-4);
    CHECK_NEAR(fit.L0_s / truth.L0_s, 1, 0.02);
    CHECK_NEAR(fit.b1 / truth.b1, 1, 0.02);
    CHECK_NEAR(fit.B_max / truth.B_max, 1, 0.02);
    CHECK_NEAR(fit.IOPS_max / truth.IOPS_max, 1, 0.02);
    CHECK_NEAR(fit.p / truth.p, 1, 0.02);
    CHECK(flash_mape(&fit, pts, n) < 0.1);
    CHECK(flash_heldout_mape(pts, n) < 1.0);
}

int main(void)
{
    /* An NVMe-like device and a slower, IOPS-starved one. */
    check_recovery((struct flash_params){80e-6, 1.5e9, 6.1e9, 400e3, 3.0});
    check_recovery((struct flash_params){30e-6, 3e9, 2.5e9, 150e3, 2.0});

    /* Interpolation: exact on grid points, between neighbours elsewhere. */
    struct flash_params truth = {80e-6, 1.5e9, 6.1e9, 400e3, 3.0};
    struct flash_point pts[64];
    size_t n = synth(&truth, pts);
    struct flash_model m = {.fit = truth, .grid = pts, .n_grid = n};
    bool interp;
    CHECK_NEAR(flash_throughput(&m, 32768, 16, &interp), pts[4 * 9 + 3].bw, 1e-6);
    CHECK(interp);
    double mid = flash_throughput(&m, 24576, 16, &interp);
    CHECK(interp && mid > pts[4 * 9 + 2].bw && mid < pts[4 * 9 + 3].bw);
    /* Outside the grid: the closed form. */
    CHECK_NEAR(flash_throughput(&m, 4u << 20, 16, &interp), flash_closed_form(&truth, 4u << 20, 16), 1e-6);
    CHECK(!interp);
    CHECK_NEAR(flash_throughput(&m, 32768, 128, &interp), flash_closed_form(&truth, 32768, 128), 1e-6);
    CHECK(!interp);
    /* Too few points for the free parameters. */
    struct flash_params fp = truth;
    CHECK(flash_fit(pts, 3, FIT_ALL, &fp) < 0);
    /* Fixing some parameters: two points pin L0 and IOPS_max. */
    fp = truth;
    fp.L0_s = 1e-3;
    fp.IOPS_max = 1e6;
    struct flash_point two[2] = {pts[5 * 9 + 1], pts[5 * 9 + 2]}; /* 8k and 16k at 32 threads */
    CHECK(flash_fit(two, 2, FIT_L0 | FIT_IOPS, &fp) >= 0);
    CHECK_NEAR(flash_closed_form(&fp, two[0].chunk, 32) / two[0].bw, 1, 1e-3);
    CHECK_NEAR(flash_closed_form(&fp, two[1].chunk, 32) / two[1].bw, 1, 1e-3);
    CHECK_NEAR(fp.B_max, truth.B_max, 0);
    return check_report("test_flash_model");
}
