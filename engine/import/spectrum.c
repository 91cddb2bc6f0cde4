#include "engine/import/spectrum.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/errbuf.h"
#include "common/parse.h"
#include "common/rng.h"

/* ---- the text form ---- */

static int parse_power(const char *text, const char *arg, struct spectrum *sp, char *err, size_t errlen)
{
    char why[128];
    if (parse_double(arg, &sp->alpha, why, sizeof why) != 0)
        return err_set(err, errlen, "'%s': ALPHA: %s", text, why);
    if (!(sp->alpha >= 0 && sp->alpha <= SPECTRUM_MAX_ALPHA))
        return err_set(err, errlen, "'%s': ALPHA must lie between 0 and %g", text, SPECTRUM_MAX_ALPHA);
    sp->kind = SPECTRUM_POWER;
    return 0;
}

static int parse_lowrank(const char *text, const char *arg, struct spectrum *sp, char *err, size_t errlen)
{
    const char *colon = strchr(arg, ':');
    char rank[32], why[128];
    uint64_t r;
    if (!colon || (size_t)(colon - arg) >= sizeof rank)
        return err_set(err, errlen, "'%s': expected lowrank:R:NOISE", text);
    snprintf(rank, sizeof rank, "%.*s", (int)(colon - arg), arg);
    if (parse_uint(rank, &r, why, sizeof why) != 0)
        return err_set(err, errlen, "'%s': R: %s", text, why);
    if (r < 1 || r > UINT32_MAX)
        return err_set(err, errlen, "'%s': R must be at least 1", text);
    if (parse_double(colon + 1, &sp->noise, why, sizeof why) != 0)
        return err_set(err, errlen, "'%s': NOISE: %s", text, why);
    if (!(sp->noise >= 0 && sp->noise <= 1))
        return err_set(err, errlen, "'%s': NOISE must lie between 0 and 1", text);
    sp->kind = SPECTRUM_LOWRANK;
    sp->rank = (uint32_t)r;
    return 0;
}

int spectrum_parse(const char *text, struct spectrum *sp, char *err, size_t errlen)
{
    memset(sp, 0, sizeof *sp);
    if (!strcmp(text, "flat"))
        return 0;
    if (!strncmp(text, "power:", 6))
        return parse_power(text, text + 6, sp, err, errlen);
    if (!strncmp(text, "lowrank:", 8))
        return parse_lowrank(text, text + 8, sp, err, errlen);
    return err_set(err, errlen, "'%s': expected flat, power:ALPHA or lowrank:R:NOISE", text);
}

/* The shortest %g form that reads back as v, so provenance says "1" for
 * 1.0 yet keeps every digit a user gave. */
static void shortest(double v, char *buf, size_t len)
{
    for (int digits = 1; digits <= 17; digits++) {
        snprintf(buf, len, "%.*g", digits, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

void spectrum_format(const struct spectrum *sp, char *buf, size_t len)
{
    char a[32];
    if (sp->kind == SPECTRUM_POWER) {
        shortest(sp->alpha, a, sizeof a);
        snprintf(buf, len, "power:%s", a);
    } else if (sp->kind == SPECTRUM_LOWRANK) {
        shortest(sp->noise, a, sizeof a);
        snprintf(buf, len, "lowrank:%u:%s", sp->rank, a);
    } else
        snprintf(buf, len, "flat");
}

int spectrum_check_shape(const struct spectrum *sp, uint64_t rows, uint64_t cols, char *err, size_t errlen)
{
    uint64_t r = rows < cols ? rows : cols;
    if (sp->kind == SPECTRUM_LOWRANK && sp->rank > r)
        return err_set(err, errlen, "rank %u exceeds the %llu x %llu matrix's %llu singular values", sp->rank,
                       (unsigned long long)rows, (unsigned long long)cols, (unsigned long long)r);
    return 0;
}

void spectrum_sigmas(const struct spectrum *sp, uint64_t r, double frob2, double *sigma)
{
    double sum = 0;
    for (uint64_t i = 0; i < r; i++) {
        if (sp->kind == SPECTRUM_POWER)
            sigma[i] = pow((double)(i + 1), -sp->alpha);
        else if (sp->kind == SPECTRUM_LOWRANK)
            sigma[i] = i < sp->rank ? 1.0 : sp->noise;
        else
            sigma[i] = 1.0;
        sum += sigma[i] * sigma[i];
    }
    double scale = sum > 0 ? sqrt(frob2 / sum) : 0;
    for (uint64_t i = 0; i < r; i++)
        sigma[i] *= scale;
}

/* ---- random orthogonal factors ----
 *
 * A dense Haar-random orthogonal matrix (QR of a Gaussian one) costs
 * O(n^3), and so does multiplying by it: for OPT-1.3B's 24 up projections
 * of 8192 x 2048 that is ~10^12 multiply-adds, tens of minutes on two
 * cores without BLAS. Instead each factor is a product of permutations and
 * Givens rotations laid out as butterflies: a round puts the rows in a
 * random order, then for each stage s = 0 .. ceil(log2 n)-1 rotates every
 * pair of positions (j, j + 2^s), j with bit s clear, by a uniformly
 * random angle. After one round every output row depends on every input
 * row (as in an FFT); ROUNDS rounds with fresh orders mix well enough that
 * no neuron or input coordinate is special, while the factor stays
 * exactly orthogonal (up to float rounding: ~1e-6 relative), so the
 * singular values are the chosen ones. One factor costs ROUNDS *
 * ceil(log2 n) * n/2 row rotations: O(n log n) per column. The angles come
 * from rejection sampling in the unit disc (no libm trigonometry), so the
 * bytes depend on the seed alone. */

/* One round already connects every row to every other; two more, each
 * after a fresh order, undo the butterfly's fixed pairing (with a flat
 * spectrum the rows' norms then spread as a Haar factor's do:
 * tests/unit/test_up_spectrum.c). */
#define ROUNDS 3

/* Columns are rotated BLOCK at a time through the whole factor: the block
 * of every row (n x BLOCK floats) is gathered into a scratch buffer, where
 * a permutation is a sequential copy and a stage's pairs are near each
 * other; rotating rows of the matrix in place would stream all of it
 * through memory once per stage, in random order. */
#define BLOCK 32

struct rotation {
    uint32_t a, b; /* positions in the relabeled order */
    float c, s;    /* (a, b) <- (c a - s b, s a + c b) */
};

/* A random orthogonal n x n factor: per round a relabeling, then the
 * round's rotations. */
struct butterfly {
    uint64_t n;
    uint32_t *perm;       /* ROUNDS x n: position j takes what was at perm[j] */
    struct rotation *rot; /* ROUNDS x per_round */
    size_t per_round;
};

static unsigned ceil_log2(uint64_t n)
{
    unsigned k = 0;
    while ((1ull << k) < n)
        k++;
    return k;
}

/* cos and sin of a uniformly random angle. */
static void random_angle(struct rng *r, float *c, float *s)
{
    double x, y, q;
    do {
        x = 2 * rng_unit(r) - 1;
        y = 2 * rng_unit(r) - 1;
        q = x * x + y * y;
    } while (q > 1 || q < 1e-12);
    q = sqrt(q);
    *c = (float)(x / q);
    *s = (float)(y / q);
}

static void random_permutation(struct rng *r, uint32_t *perm, uint64_t n)
{
    for (uint64_t i = 0; i < n; i++)
        perm[i] = (uint32_t)i;
    for (uint64_t i = n; i > 1; i--) { /* Fisher-Yates */
        uint64_t j = rng_below(r, i);
        uint32_t t = perm[i - 1];
        perm[i - 1] = perm[j];
        perm[j] = t;
    }
}

/* How many pairs one round rotates: for each stage s = 0 .. ceil(log2 n)-1
 * every pair (j, j + 2^s) with bit s of j clear. */
static size_t round_pairs(uint64_t n)
{
    size_t k = 0;
    for (unsigned s = 0; s < ceil_log2(n); s++)
        for (uint64_t j = 0; j + (1ull << s) < n; j++)
            k += !(j & (1ull << s));
    return k;
}

/* One round's rotations, in that order, with random angles. */
static void butterfly_round(uint64_t n, struct rng *r, struct rotation *rot)
{
    size_t k = 0;
    for (unsigned s = 0; s < ceil_log2(n); s++) {
        uint64_t step = 1ull << s;
        for (uint64_t j = 0; j + step < n; j++) {
            if (j & step)
                continue;
            rot[k].a = (uint32_t)j;
            rot[k].b = (uint32_t)(j + step);
            random_angle(r, &rot[k].c, &rot[k].s);
            k++;
        }
    }
}

static void butterfly_free(struct butterfly *b)
{
    free(b->perm);
    free(b->rot);
}

/* Draws a factor of size n from r. 0, or -1 when out of memory. */
static int butterfly_make(struct butterfly *b, uint64_t n, struct rng *r)
{
    b->n = n;
    b->per_round = round_pairs(n);
    b->perm = malloc(ROUNDS * n * sizeof *b->perm);
    b->rot = malloc((ROUNDS * b->per_round + 1) * sizeof *b->rot);
    if (!b->perm || !b->rot) {
        butterfly_free(b);
        return -1;
    }
    for (int round = 0; round < ROUNDS; round++) {
        random_permutation(r, b->perm + round * n, n);
        butterfly_round(n, r, b->rot + round * b->per_round);
    }
    return 0;
}

static void rotate_pairs(const struct rotation *rot, size_t count, float *t)
{
    for (size_t k = 0; k < count; k++) {
        float *restrict x = t + (uint64_t)rot[k].a * BLOCK;
        float *restrict y = t + (uint64_t)rot[k].b * BLOCK;
        const float c = rot[k].c, s = rot[k].s;
        for (int j = 0; j < BLOCK; j++) {
            float u = x[j], v = y[j];
            x[j] = c * u - s * v;
            y[j] = s * u + c * v;
        }
    }
}

/* Columns c0 .. c0+width-1 of m (n rows, ld floats apart) through b, with
 * t and u two n x BLOCK scratch buffers. A narrower last block is padded
 * with zeros, which the rotations keep zero. */
static void rotate_block(const struct butterfly *b, float *m, uint64_t ld, uint64_t c0, uint64_t width, float *t,
                         float *u)
{
    uint64_t n = b->n;
    for (uint64_t i = 0; i < n; i++) {
        memcpy(t + i * BLOCK, m + i * ld + c0, width * sizeof *t);
        memset(t + i * BLOCK + width, 0, (BLOCK - width) * sizeof *t);
    }
    for (int round = 0; round < ROUNDS; round++) {
        const uint32_t *perm = b->perm + round * n;
        for (uint64_t j = 0; j < n; j++)
            memcpy(u + j * BLOCK, t + (uint64_t)perm[j] * BLOCK, BLOCK * sizeof *u);
        float *swap = t;
        t = u;
        u = swap;
        rotate_pairs(b->rot + round * b->per_round, b->per_round, t);
    }
    for (uint64_t i = 0; i < n; i++)
        memcpy(m + i * ld + c0, t + i * BLOCK, width * sizeof *t);
}

/* m (n x cols, row-major) <- Q m, Q the factor b. 0, or -1 when out of
 * memory. */
static int rotate_rows(const struct butterfly *b, float *m, uint64_t cols)
{
    float *t = malloc(2 * b->n * BLOCK * sizeof *t);
    if (!t)
        return -1;
    for (uint64_t c0 = 0; c0 < cols; c0 += BLOCK)
        rotate_block(b, m, cols, c0, cols - c0 < BLOCK ? cols - c0 : BLOCK, t, t + b->n * BLOCK);
    free(t);
    return 0;
}

/* m (n x cols) <- a random orthogonal factor of size n, drawn from r,
 * times m. 0, or -1 when out of memory. */
static int random_rotation(uint64_t n, struct rng *r, float *m, uint64_t cols)
{
    struct butterfly b;
    if (butterfly_make(&b, n, r) != 0)
        return -1;
    int rc = rotate_rows(&b, m, cols);
    butterfly_free(&b);
    return rc;
}

int spectrum_matrix(const struct spectrum *sp, uint64_t rows, uint64_t cols, double frob2, uint64_t seed,
                    float *w, char *err, size_t errlen)
{
    uint64_t r = rows < cols ? rows : cols;
    struct rng rng;
    rng_seed(&rng, seed);
    double *sigma = malloc(r * sizeof *sigma);
    /* V^T is built in w itself when it has room for it (rows >= cols) */
    float *vt = rows >= cols ? w : malloc(cols * cols * sizeof *vt);
    int rc = -1;
    if (sigma && vt) {
        memset(vt, 0, cols * cols * sizeof *vt);
        for (uint64_t i = 0; i < cols; i++)
            vt[i * cols + i] = 1;
        rc = random_rotation(cols, &rng, vt, cols);
    }
    if (rc == 0) {
        /* w = [diag(sigma) V^T; 0]: row i is sigma_i times V's column i */
        spectrum_sigmas(sp, r, frob2, sigma);
        for (uint64_t i = 0; i < r; i++)
            for (uint64_t j = 0; j < cols; j++)
                w[i * cols + j] = (float)(sigma[i] * vt[i * cols + j]);
        memset(w + r * cols, 0, (rows - r) * cols * sizeof *w);
        /* then U's factor on the left: w = U diag(sigma) V^T */
        rc = random_rotation(rows, &rng, w, cols);
    }
    if (vt != w)
        free(vt);
    free(sigma);
    return rc ? err_set(err, errlen, "out of memory for a %llu x %llu matrix's factors",
                        (unsigned long long)rows, (unsigned long long)cols)
              : 0;
}
