/* ck_axpy_rows (engine/compute/cpu_kernels.h), input sparsity's kernel on
 * flash: y += sum a[r] * row r over rows anywhere in memory, f32, f16 and
 * bf16, against a double-precision reference on the same stored weights;
 * one thread and a team of three (every step on the team) give the same
 * bits; a row weighted 0 is skipped (a NaN in it does not reach y). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "common/settings.h"
#include "engine/compute/cpu_kernels.h"
#include "engine/model/dtype.h"

enum { N = 1000, ROWS = 37 };

static void fill(float *y, const void *const *rows, const float *a, enum fb_dtype t, struct cpu_kernels *k)
{
    for (int i = 0; i < N; i++)
        y[i] = 0.01f * (float)(i % 7);
    ck_axpy_rows(k, y, N, rows, a, ROWS, t);
}

static void one_dtype(enum fb_dtype t, struct cpu_kernels *k1, struct cpu_kernels *k3)
{
    size_t w = wtype_row_bytes(t, 1); /* an element's bytes: the float types */
    uint8_t *store = malloc((size_t)ROWS * (N + 3) * w);
    float *f = malloc(N * sizeof *f), *wide = malloc(N * sizeof *wide), a[ROWS];
    const void *rows[ROWS];
    double ref[N];
    for (int i = 0; i < N; i++)
        ref[i] = 0.01f * (float)(i % 7);
    for (int r = 0; r < ROWS; r++) {
        /* rows at odd offsets, in reverse order: anywhere in memory */
        uint8_t *row = store + (size_t)(ROWS - 1 - r) * (N + 3) * w + w;
        for (int i = 0; i < N; i++)
            f[i] = sinf(0.37f * (float)(r * N + i));
        dtype_from_f32(row, t, f, N);
        dtype_to_f32(wide, row, t, N);
        rows[r] = row;
        a[r] = r % 5 == 0 ? 0.0f : cosf((float)r);
        if (a[r] == 0.0f)
            memcpy(row, &(float){NAN}, sizeof(float) < w ? sizeof(float) : w); /* never read */
        for (int i = 0; a[r] != 0.0f && i < N; i++)
            ref[i] += (double)a[r] * wide[i];
    }
    float y1[N], y3[N];
    fill(y1, rows, a, t, k1);
    fill(y3, rows, a, t, k3);
    CHECK(memcmp(y1, y3, sizeof y1) == 0);
    double worst = 0;
    for (int i = 0; i < N; i++)
        worst = fmax(worst, fabs(y1[i] - ref[i]));
    CHECK_NEAR(worst, 0, 1e-4);
    free(store);
    free(f);
    free(wide);
}

int main(void)
{
    struct fb_settings set = fb_settings_defaults();
    set.min_parallel_work = 0; /* every step on the team */
    set.pin_threads = false;
    char err[256];
    struct cpu_kernels *k1 = ck_create(&set, 1, N, 1, 1, err, sizeof err);
    struct cpu_kernels *k3 = ck_create(&set, 3, N, 1, 1, err, sizeof err);
    CHECK(k1 && k3);
    if (k1 && k3) {
        one_dtype(DTYPE_F32, k1, k3);
        one_dtype(DTYPE_F16, k1, k3);
        one_dtype(DTYPE_BF16, k1, k3);
    }
    ck_destroy(k1);
    ck_destroy(k3);
    return check_report("axpy_rows");
}
