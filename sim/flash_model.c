#include "sim/flash_model.h"

#include <float.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

double flash_closed_form(const struct flash_params *fp, double s, double n)
{
    double per_read = fp->L0_s + s / fp->b1;
    double streams = n * s / per_read;
    double p = fp->p;
    double sum = pow(streams, -p) + pow(fp->B_max, -p) + pow(fp->IOPS_max * s, -p);
    return pow(sum, -1.0 / p);
}

/* --- Nelder-Mead over the free parameters, in log space ------------------ */

enum { NPAR = 5 };

struct fit_problem {
    const struct flash_point *pts;
    size_t n;
    unsigned free_mask;
    struct flash_params base;
};

static void unpack(const struct fit_problem *fpb, const double *x, struct flash_params *out)
{
    double v[NPAR] = {fpb->base.L0_s, fpb->base.b1, fpb->base.B_max, fpb->base.IOPS_max,
                      fpb->base.p};
    int k = 0;
    for (int i = 0; i < NPAR; i++)
        if (fpb->free_mask & (1u << i))
            v[i] = exp(x[k++]);
    *out = (struct flash_params){v[0], v[1], v[2], v[3], v[4]};
}

static double objective(const struct fit_problem *fpb, const double *x)
{
    struct flash_params fp;
    unpack(fpb, x, &fp);
    /* A single stream faster than 10 TB/s means "not a limit": stop there
     * rather than wander to infinity. */
    if (fp.p < 0.5 || fp.p > 40 || fp.b1 > 1e13)
        return 1e30;
    /* nor to zero: every parameter stays a finite positive number (a
     * harness-only sweep, as with the null engine, has no latency to fit) */
    const double vals[] = {fp.L0_s, fp.b1, fp.B_max, fp.IOPS_max};
    for (int i = 0; i < 4; i++)
        if (!(vals[i] > 1e-12 && vals[i] < 1e16))
            return 1e30;
    double sse = 0;
    for (size_t i = 0; i < fpb->n; i++) {
        double m = flash_closed_form(&fp, fpb->pts[i].chunk, fpb->pts[i].threads);
        double d = log(m) - log(fpb->pts[i].bw);
        sse += d * d;
    }
    return isfinite(sse) ? sse : 1e30;
}

/* The simplex: dim + 1 vertices in log-parameter space and the objective
 * at each, ordered best first by simplex_sort. */
struct simplex {
    int dim;
    double v[NPAR + 1][NPAR];
    double f[NPAR + 1];
};

/* Best first, by exchanges (the order equal values end in is part of the
 * fit's result, so it stays this simple sort). */
static void simplex_sort(struct simplex *s)
{
    int dim = s->dim;
    for (int i = 0; i <= dim; i++)
        for (int j = i + 1; j <= dim; j++)
            if (s->f[j] < s->f[i]) {
                double t = s->f[i];
                s->f[i] = s->f[j];
                s->f[j] = t;
                for (int k = 0; k < dim; k++) {
                    double u = s->v[i][k];
                    s->v[i][k] = s->v[j][k];
                    s->v[j][k] = u;
                }
            }
}

static void replace_worst(struct simplex *s, const double *x, double fx)
{
    memcpy(s->v[s->dim], x, sizeof(double) * (size_t)s->dim);
    s->f[s->dim] = fx;
}

/* Every vertex halfway towards the best: the step of last resort, when
 * neither reflecting nor contracting the worst vertex improved it. */
static void simplex_shrink(const struct fit_problem *fpb, struct simplex *s)
{
    for (int i = 1; i <= s->dim; i++) {
        for (int k = 0; k < s->dim; k++)
            s->v[i][k] = s->v[0][k] + 0.5 * (s->v[i][k] - s->v[0][k]);
        s->f[i] = objective(fpb, s->v[i]);
    }
}

/* One Nelder-Mead step on a sorted simplex: the worst vertex reflected
 * through the others' centroid, expanded when that is the best yet,
 * contracted when it is no better than the second worst, else a shrink. */
static void simplex_step(const struct fit_problem *fpb, struct simplex *s)
{
    int dim = s->dim;
    const double *worst = s->v[dim];
    double centroid[NPAR] = {0}, xr[NPAR], xe[NPAR], xc[NPAR];
    for (int i = 0; i < dim; i++)
        for (int k = 0; k < dim; k++)
            centroid[k] += s->v[i][k] / dim;
    for (int k = 0; k < dim; k++)
        xr[k] = centroid[k] + (centroid[k] - worst[k]);
    double fr = objective(fpb, xr);
    if (fr < s->f[0]) {
        for (int k = 0; k < dim; k++)
            xe[k] = centroid[k] + 2 * (centroid[k] - worst[k]);
        double fe = objective(fpb, xe);
        replace_worst(s, fe < fr ? xe : xr, fe < fr ? fe : fr);
    } else if (fr < s->f[dim - 1]) {
        replace_worst(s, xr, fr);
    } else {
        for (int k = 0; k < dim; k++)
            xc[k] = centroid[k] + 0.5 * (worst[k] - centroid[k]);
        double fc = objective(fpb, xc);
        if (fc < s->f[dim])
            replace_worst(s, xc, fc);
        else
            simplex_shrink(fpb, s);
    }
}

/* Minimises the objective from x (dim free parameters, in log space) for
 * at most iters steps; x becomes the best vertex, whose value is returned. */
static double nelder_mead(const struct fit_problem *fpb, double *x, int dim, int iters)
{
    struct simplex s = {.dim = dim};
    for (int i = 0; i <= dim; i++) {
        memcpy(s.v[i], x, sizeof(double) * (size_t)dim);
        if (i)
            s.v[i][i - 1] += 0.5;
        s.f[i] = objective(fpb, s.v[i]);
    }
    for (int it = 0; it < iters; it++) {
        simplex_sort(&s);
        /* converged: the vertices agree to rounding (after a few steps,
         * so a flat start does not stop the search at once) */
        if (fabs(s.f[dim] - s.f[0]) <= 1e-15 * (fabs(s.f[0]) + 1e-30) && it > 50)
            break;
        simplex_step(fpb, &s);
    }
    int best = 0;
    for (int i = 1; i <= dim; i++)
        if (s.f[i] < s.f[best])
            best = i;
    memcpy(x, s.v[best], sizeof(double) * (size_t)dim);
    return s.f[best];
}

/* Starting values read off the data. */
static void initial_estimates(const struct flash_point *pts, size_t n, struct flash_params *fp)
{
    double max_bw = 0, max_iops = 0;
    /* Per-read time of single-thread points: t = L0 + s/b1, fitted by least squares. */
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    int m = 0;
    for (size_t i = 0; i < n; i++) {
        if (pts[i].bw > max_bw)
            max_bw = pts[i].bw;
        if (pts[i].bw / pts[i].chunk > max_iops)
            max_iops = pts[i].bw / pts[i].chunk;
        if (pts[i].threads == 1) {
            double t = pts[i].chunk / pts[i].bw;
            sx += pts[i].chunk;
            sy += t;
            sxx += pts[i].chunk * pts[i].chunk;
            sxy += pts[i].chunk * t;
            m++;
        }
    }
    double slope = 0, icept = 0;
    if (m >= 2 && m * sxx - sx * sx > 0) {
        slope = (m * sxy - sx * sy) / (m * sxx - sx * sx);
        icept = (sy - slope * sx) / m;
    }
    fp->b1 = slope > 0 ? 1.0 / slope : max_bw;
    fp->L0_s = icept > 1e-7 ? icept : 1e-5;
    fp->B_max = max_bw * 1.05;
    fp->IOPS_max = max_iops * 1.05;
    fp->p = 3;
}

double flash_fit(const struct flash_point *pts, size_t n, unsigned free_mask,
                 struct flash_params *fp)
{
    int dim = 0;
    for (int i = 0; i < NPAR; i++)
        dim += (free_mask >> i) & 1;
    if (n < (size_t)dim || dim == 0)
        return -1;
    struct flash_params est;
    initial_estimates(pts, n, &est);
    struct fit_problem fpb = {pts, n, free_mask, *fp};
    if (free_mask == FIT_ALL)
        fpb.base = est;
    else {
        /* Free parameters start from the estimates, fixed ones stay. */
        if (free_mask & FIT_L0) fpb.base.L0_s = est.L0_s;
        if (free_mask & FIT_B1) fpb.base.b1 = est.b1;
        if (free_mask & FIT_BMAX) fpb.base.B_max = est.B_max;
        if (free_mask & FIT_IOPS) fpb.base.IOPS_max = est.IOPS_max;
        if (free_mask & FIT_P) fpb.base.p = est.p;
    }
    double v[NPAR] = {fpb.base.L0_s, fpb.base.b1, fpb.base.B_max, fpb.base.IOPS_max, fpb.base.p};
    double x[NPAR];
    int k = 0;
    for (int i = 0; i < NPAR; i++)
        if (free_mask & (1u << i))
            x[k++] = log(v[i]);
    /* Restarts shake Nelder-Mead out of the flat valleys the p-norm makes. */
    double best = DBL_MAX, bx[NPAR];
    memcpy(bx, x, sizeof x);
    for (int r = 0; r < 12; r++) {
        double f = nelder_mead(&fpb, x, dim, 4000);
        if (f < best - 1e-18) {
            best = f;
            memcpy(bx, x, sizeof x);
        } else if (r > 3) {
            break;
        }
    }
    unpack(&fpb, bx, fp);
    return sqrt(best / (double)n);
}

double flash_mape(const struct flash_params *fp, const struct flash_point *pts, size_t n)
{
    if (!n)
        return 0;
    double sum = 0;
    for (size_t i = 0; i < n; i++)
        sum += fabs(flash_closed_form(fp, pts[i].chunk, pts[i].threads) - pts[i].bw) / pts[i].bw;
    return 100.0 * sum / (double)n;
}

/* Rank of a value among the distinct values of one axis. */
static int axis_rank(const struct flash_point *pts, size_t n, double v, int by_chunk)
{
    int rank = 0;
    double seen[256];
    int nseen = 0;
    for (size_t i = 0; i < n && nseen < 256; i++) {
        double a = by_chunk ? pts[i].chunk : pts[i].threads;
        int dup = 0;
        for (int k = 0; k < nseen; k++)
            dup |= seen[k] == a;
        if (!dup) {
            seen[nseen++] = a;
            rank += a < v;
        }
    }
    return rank;
}

double flash_heldout_mape(const struct flash_point *pts, size_t n)
{
    struct flash_point *train = malloc(n * sizeof *train), *test = malloc(n * sizeof *test);
    size_t nt = 0, nh = 0;
    for (size_t i = 0; i < n; i++) {
        int parity = (axis_rank(pts, n, pts[i].chunk, 1) + axis_rank(pts, n, pts[i].threads, 0)) % 2;
        if (parity)
            test[nh++] = pts[i];
        else
            train[nt++] = pts[i];
    }
    double mape = -1;
    struct flash_params fp = {0};
    if (nt >= NPAR && nh > 0 && flash_fit(train, nt, FIT_ALL, &fp) >= 0)
        mape = flash_mape(&fp, test, nh);
    free(train);
    free(test);
    return mape;
}

static const struct flash_point *grid_find(const struct flash_model *m, double chunk, double threads)
{
    for (size_t i = 0; i < m->n_grid; i++)
        if (m->grid[i].chunk == chunk && m->grid[i].threads == threads)
            return &m->grid[i];
    return NULL;
}

/* The grid values just below and above v on one axis; false when outside. */
static bool bracket(const struct flash_model *m, double v, int by_chunk, double *lo, double *hi)
{
    *lo = -1;
    *hi = DBL_MAX;
    for (size_t i = 0; i < m->n_grid; i++) {
        double a = by_chunk ? m->grid[i].chunk : m->grid[i].threads;
        if (a <= v && a > *lo)
            *lo = a;
        if (a >= v && a < *hi)
            *hi = a;
    }
    return *lo > 0 && *hi < DBL_MAX;
}

double flash_throughput(const struct flash_model *m, double chunk, double threads,
                        bool *interpolated)
{
    double c0, c1, t0, t1;
    if (m->n_grid && bracket(m, chunk, 1, &c0, &c1) && bracket(m, threads, 0, &t0, &t1)) {
        const struct flash_point *p00 = grid_find(m, c0, t0), *p01 = grid_find(m, c0, t1),
                                 *p10 = grid_find(m, c1, t0), *p11 = grid_find(m, c1, t1);
        if (p00 && p01 && p10 && p11) {
            double u = c1 > c0 ? (log(chunk) - log(c0)) / (log(c1) - log(c0)) : 0;
            double w = t1 > t0 ? (log(threads) - log(t0)) / (log(t1) - log(t0)) : 0;
            if (interpolated)
                *interpolated = true;
            return (1 - u) * (1 - w) * p00->bw + (1 - u) * w * p01->bw + u * (1 - w) * p10->bw +
                   u * w * p11->bw;
        }
    }
    if (interpolated)
        *interpolated = false;
    return flash_closed_form(&m->fit, chunk, threads);
}
