/* Gradient tests of the CPU reference (cpu/cpu_ops.c, cpu/cpu_model.c, cpu/model.c),
 * built in double (tt_runtime_f64) so that central differences check every backward tightly:
 *   1. each op's backward against finite differences of a random linear functional of its output,
 *      plus its forward against the formula of MODEL.md, and the add/write convention;
 *   2. the whole LM: d(loss_sum / scored) / d(every parameter element), for tiny models covering
 *      causal/unmasked, position none/key, tied/untied, full/adaptive softmax, label smoothing,
 *      token weights and dropout; Transformer-XL with memory, dropout and dropatt too;
 *   3. the causal mask: no gradient reaches an earlier token's loss from a later position;
 *   4. h cores equal one core holding their mean g;
 *   5. determinism: the same inputs give bit-identical losses and gradients;
 *   6. Transformer-XL's memory: segments carrying it score each token as a direct evaluation of
 *      the whole stream with the keys the memory gives each query.
 * Inputs are random on every run; the seed is printed and TT_TEST_SEED=<n> replays a run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "cpu_model.h"
#include "cpu_ops.h"
#include "model.h"
#include "rng.h"
#include "spec.h"
#include "testutil.h"

_Static_assert(sizeof(tt_real) == sizeof(double),
               "test_cpu_grad must link tt_runtime_f64 (TT_REAL=double)");

/* --- the finite-difference yardstick ---------------------------------------------------------
 * The numeric derivative is the central difference D(h) = (f(x+h) - f(x-h)) / 2h at h = FD_H and
 * h/2, combined by Richardson extrapolation: R = (4 D(h/2) - D(h)) / 3 cancels the h^2 term of
 * the truncation error and leaves O(h^4 f^(5)).
 * Why h = 1e-4 (with R) and not a plain D at h = 1e-5..1e-6: the error of a difference quotient
 * is truncation + rounding, f''' h^2 / 6 + delta_f / h, where delta_f is the rounding error of
 * one evaluation of f. In double, delta_f is about 1e-15 for the model's loss (O(1), thousands of
 * operations, accumulated by the code under test), so the rounding term dominates from h = 1e-5
 * down. Measured with this file's metric (seed 42, without the redraws), the worst element over
 * all ops and models was
 *     plain D:  h = 1e-4: 6e-6   h = 1e-5: 1.5e-7   h = 1e-6: 1.1e-6
 *     R:        h = 1e-4: 4e-8   h = 1e-5: 3.5e-7   h = 1e-6: 3.5e-6
 * (h = 1e-3: 1e-1, ReLU kinks inside the step). Plain central differences leave a margin of
 * 7x below TOL at best; R at h = 1e-4 leaves 25x:
 * its truncation error is below 1e-16 f^(5) (LayerNorm's high derivatives included) and its
 * rounding term about 1e-11. The larger step makes it likelier that a ReLU input lies within a
 * step of 0; that is detected (R from h/2 and h/4 must agree with R from h and h/2, see
 * fd_derivative), and the model tests then draw a new point, the op tests (inputs kept away from
 * the kink) fail.
 *
 * Error measure, the same everywhere: |a - n| / max(FLOOR, |a| + |n|) for each element, a the
 * analytic gradient, n the numeric one, checked against TOL. It is a relative error for gradients
 * above FLOOR and an absolute error of TOL * FLOOR = 1e-9 below it: well above the noise (about
 * 1e-11 absolute) and far below what a backward bug leaves (a sign flip of a gradient g gives an
 * error of 1 for |g| > FLOOR / 2, 2|g| / FLOOR otherwise; every model tensor must have some
 * gradient above MIN_TENSOR_GRAD, so that this shows). */
#define FD_H 1e-4
#define FLOOR 1e-3
#define TOL 1e-6
#define MIN_TENSOR_GRAD 1e-5
#define SUBSET 200 /* elements checked of a tensor larger than SUBSET_ABOVE */
#define SUBSET_ABOVE 400

/* --- random numbers (splitmix64) -------------------------------------------------------------- */
static uint64_t g_seed;

typedef struct {
    uint64_t s;
} rng;

static uint64_t rng_u64(rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static rng rng_for(uint64_t test_id)
{
    rng r = {g_seed ^ (test_id * 0xd1b54a32d192ed03ull)};
    rng_u64(&r);
    return r;
}

static double rng_u01(rng *r) { return (double)(rng_u64(r) >> 11) * (1.0 / 9007199254740992.0); }
static double rng_uniform(rng *r, double lo, double hi) { return lo + (hi - lo) * rng_u01(r); }
static double rng_normal(rng *r)
{
    const double u1 = 1.0 - rng_u01(r), u2 = rng_u01(r);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}
static void fill_normal(rng *r, tt_real *x, long n, double std)
{
    for (long i = 0; i < n; i++) x[i] = (tt_real)(std * rng_normal(r));
}
static void fill_uniform(rng *r, tt_real *x, long n, double lo, double hi)
{
    for (long i = 0; i < n; i++) x[i] = (tt_real)rng_uniform(r, lo, hi);
}
static tt_real *alloc_real(long n) { return calloc((size_t)(n > 0 ? n : 1), sizeof(tt_real)); }

/* The objectives' sum c . y, compensated (Neumaier): the y that a perturbation leaves unchanged
 * are the same bits in f(x+h) and f(x-h), so with an exact sum they cancel exactly and only the
 * rounding inside the op reaches the difference quotient. */
static double dot(const tt_real *a, const tt_real *b, long n)
{
    double s = 0, comp = 0;
    for (long i = 0; i < n; i++) {
        const double t = (double)a[i] * b[i], u = s + t;
        comp += fabs(s) >= fabs(t) ? (s - u) + t : (t - u) + s;
        s = u;
    }
    return s + comp;
}

/* --- gradient checking ------------------------------------------------------------------------ */
typedef double (*objective)(void *ctx);

typedef struct {
    double max_err;
    long checked, failed, rough; /* rough: points where f is not smooth within the step */
} errstat;

static double rel_err(double a, double b)
{
    const double e = fabs(a - b) / fmax(FLOOR, fabs(a) + fabs(b));
    return e == e ? e : INFINITY;
}

/* d f / d *x: R(h) = (4 D(h/2) - D(h)) / 3 from central differences D at h = FD_H and h/2.
 * *smooth says whether R(h/2) (from h/2 and h/4) agrees with it to TOL / 2: a ReLU input within a
 * step of its kink makes them disagree (by about the jump of the derivative), a smooth f does not
 * (their difference is O(h^4) plus the rounding noise). The noise: f's evaluations are exact to
 * a few hundred ulps of |f| (sums in double), which the smallest step h/4 divides, and the
 * extrapolations amplify by at most 10/3; the agreement asked for is never finer than that. A
 * point that only the noise made disagree (seen once, in cpu_mla, with a gradient near zero and a
 * large |f|) is not a kink. */
static double fd_derivative(objective f, void *ctx, tt_real *x, bool *smooth)
{
    const tt_real x0 = *x;
    double d[3], fmax_abs = 0;
    for (int s = 0; s < 3; s++) {
        const double h = FD_H / (1 << s);
        const tt_real xp = (tt_real)(x0 + h), xm = (tt_real)(x0 - h);
        *x = xp;
        const double fp = f(ctx);
        *x = xm;
        const double fm = f(ctx);
        d[s] = (fp - fm) / ((double)xp - (double)xm); /* the steps as represented */
        fmax_abs = fmax(fmax_abs, fmax(fabs(fp), fabs(fm)));
    }
    *x = x0;
    const double r1 = (4.0 * d[1] - d[0]) / 3.0, r2 = (4.0 * d[2] - d[1]) / 3.0;
    const double noise = 10.0 / 3.0 * 512 * DBL_EPSILON * fmax_abs / (FD_H / 4);
    *smooth = rel_err(r1, r2) <= TOL / 2 || fabs(r1 - r2) <= noise;
    return r1;
}

/* The failures of a check are held back until it is known whether its point counts (a model
 * point with ReLU kinks within the step is redrawn, and its messages dropped). */
static char g_msgs[4096];
static size_t g_msgs_len;
static void msgs_flush(bool show)
{
    if (show && g_msgs_len) print_message("%s", g_msgs);
    g_msgs_len = 0;
    g_msgs[0] = 0;
}

static void record(errstat *e, const char *what, long i, double analytic, double numeric)
{
    const double err = rel_err(analytic, numeric);
    if (err > e->max_err) e->max_err = err;
    if (err > TOL && e->failed++ < 8 && g_msgs_len < sizeof g_msgs) {
        const int k = snprintf(g_msgs + g_msgs_len, sizeof g_msgs - g_msgs_len,
                               "    %s[%ld]: analytic %.15e numeric %.15e err %.2e\n", what, i,
                               analytic, numeric, err);
        if (k > 0) g_msgs_len += (size_t)k;
    }
    e->checked++;
}

/* Checks grad against d f / d x for every element of x (a random subset of a large x). */
static void check_tensor(errstat *e, rng *r, const char *what, objective f, void *ctx, tt_real *x,
                         const tt_real *grad, long n)
{
    const bool all = n <= SUBSET_ABOVE;
    for (long s = 0; s < (all ? n : SUBSET); s++) {
        const long i = all ? s : (long)(rng_u64(r) % (uint64_t)n);
        bool smooth;
        const double num = fd_derivative(f, ctx, x + i, &smooth);
        if (!smooth) e->rough++;
        record(e, what, i, grad[i], num);
    }
}

/* The end of an op's check: report, then fail on any error above TOL or any rough point. */
static void op_report(const char *op, const errstat *e)
{
    msgs_flush(true);
    print_message("  %-38s max rel err %.2e over %ld elements\n", op, e->max_err, e->checked);
    if (e->rough) print_message("    %ld points not smooth within the step\n", e->rough);
    assert_int_equal(e->failed, 0);
    assert_int_equal(e->rough, 0);
    assert_true(e->checked > 0);
}

/* |a - b| <= tol * scale, scale the sum of the magnitudes of the terms of b (a sum with
 * cancellation is only as exact as its largest terms). */
static void assert_near(double a, double b, double tol, double scale, const char *what)
{
    if (!(fabs(a - b) <= tol * scale))
        fail_msg("%s: %.17g vs %.17g (diff %.2e > %.0e * %.3g)", what, a, b, fabs(a - b), tol,
                 scale);
}

/* |a - b| <= tol * max(|a|, |b|, 1e-300): the forward checks against MODEL.md's formulas. */
static void assert_close(double a, double b, double tol, const char *what)
{
    const double e = fabs(a - b) / fmax(fmax(fabs(a), fabs(b)), 1e-300);
    if (!(e <= tol)) fail_msg("%s: %.17g vs %.17g (rel %.2e > %.0e)", what, a, b, e, tol);
}

/* A backward must ADD into parameter gradients: they start at this random junk and the junk is
 * subtracted before the comparison; an op that overwrites fails the gradient check. Input
 * gradients are written: they start at JUNK, which would show if they were added into. */
#define JUNK ((tt_real)1e3)
static void fill_junk(tt_real *x, long n)
{
    for (long i = 0; i < n; i++) x[i] = JUNK;
}
static void subtract(tt_real *x, const tt_real *base, long n)
{
    for (long i = 0; i < n; i++) x[i] -= base[i];
}

/* === 1. ops ================================================================================== */

/* --- linear --- */
typedef struct {
    int rows, in, out;
    tt_real *x, *w, *b, *y, *c;
} linear_ctx;

static double linear_obj(void *p)
{
    linear_ctx *k = p;
    cpu_linear_fwd(k->y, k->x, k->w, k->b, k->rows, k->in, k->out);
    return dot(k->c, k->y, (long)k->rows * k->out);
}

/* The bf16 rounding every bf16 kernel is checked against (cpu/bf16.h; the kernels' tt_store_as
 * and tt_bf16x2): to nearest, ties to even, on the bits (subnormals and the overflow to
 * infinity included), and a NaN kept a quiet NaN with its sign and the payload's high bits. */
static void test_bf16_rounding(void **state)
{
    (void)state;
    static const struct {
        uint32_t in;
        uint16_t out;
    } cases[] = {
        {0x3f800000u, 0x3f80}, /* 1 */
        {0x3f808000u, 0x3f80}, /* a tie, to the even below */
        {0x3f818000u, 0x3f82}, /* a tie, to the even above */
        {0x3f808001u, 0x3f81}, /* just above a tie */
        {0x3f807fffu, 0x3f80}, /* just below */
        {0xbf818000u, 0xbf82}, /* negative tie */
        {0x80000000u, 0x8000}, /* -0 */
        {0x00000001u, 0x0000}, /* the smallest subnormal, to 0 */
        {0x00008000u, 0x0000}, /* a subnormal tie, to even 0 */
        {0x00018000u, 0x0002}, /* a subnormal tie, to even 2 */
        {0x007fffffu, 0x0080}, /* the largest subnormal, up to the smallest normal */
        {0x7f7fffffu, 0x7f80}, /* the largest float, over bf16's largest: infinity */
        {0x7f7f7fffu, 0x7f7f}, /* bf16's largest stays */
        {0x7f800000u, 0x7f80}, /* infinity */
        {0xff800000u, 0xff80}, /* -infinity */
        {0x7fc00000u, 0x7fc0}, /* a quiet NaN */
        {0x7f800001u, 0x7fc0}, /* a signaling NaN whose payload is all below bf16: quieted */
        {0x7fa00000u, 0x7fe0}, /* a signaling NaN, quieted, its payload's high bits kept */
        {0xffc12345u, 0xffc1}, /* a negative NaN keeps its sign */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        float x;
        memcpy(&x, &cases[i].in, sizeof x);
        const uint16_t got = tt_bf16_from_float(x);
        if (got != cases[i].out)
            fail_msg("bf16 of 0x%08x: 0x%04x, want 0x%04x", (unsigned)cases[i].in, got, cases[i].out);
    }
}

static void test_op_linear(void **state)
{
    (void)state;
    rng r = rng_for(1);
    linear_ctx k = {5, 4, 3, NULL, NULL, NULL, NULL, NULL};
    const long nx = k.rows * k.in, nw = k.out * k.in, ny = k.rows * k.out;
    k.x = alloc_real(nx), k.w = alloc_real(nw), k.b = alloc_real(k.out), k.y = alloc_real(ny);
    k.c = alloc_real(ny);
    fill_normal(&r, k.x, nx, 1), fill_normal(&r, k.w, nw, 1), fill_normal(&r, k.b, k.out, 1);
    fill_normal(&r, k.c, ny, 1);
    linear_obj(&k);
    for (int i = 0; i < k.rows; i++)
        for (int o = 0; o < k.out; o++) {
            double s = k.b[o], scale = fabs(k.b[o]);
            for (int j = 0; j < k.in; j++) {
                s += k.x[i * k.in + j] * k.w[o * k.in + j];
                scale += fabs(k.x[i * k.in + j] * k.w[o * k.in + j]);
            }
            assert_near(k.y[i * k.out + o], s, 1e-14, scale, "linear forward");
        }
    tt_real *dx = alloc_real(nx), *dw = alloc_real(nw), *db = alloc_real(k.out);
    tt_real *w0 = alloc_real(nw), *b0 = alloc_real(k.out);
    fill_junk(dx, nx), fill_normal(&r, w0, nw, 1), fill_normal(&r, b0, k.out, 1);
    memcpy(dw, w0, nw * sizeof *dw), memcpy(db, b0, k.out * sizeof *db);
    cpu_linear_bwd(dx, dw, db, k.c, k.x, k.w, k.rows, k.in, k.out);
    subtract(dw, w0, nw), subtract(db, b0, k.out);
    errstat e = {0};
    check_tensor(&e, &r, "linear.x", linear_obj, &k, k.x, dx, nx);
    check_tensor(&e, &r, "linear.w", linear_obj, &k, k.w, dw, nw);
    check_tensor(&e, &r, "linear.b", linear_obj, &k, k.b, db, k.out);
    op_report("cpu_linear (x, w, b)", &e);
    /* NULL gradients are skipped, and the bias-free forward */
    tt_real *dx2 = alloc_real(nx);
    cpu_linear_bwd(dx2, NULL, NULL, k.c, k.x, k.w, k.rows, k.in, k.out);
    assert_memory_equal(dx, dx2, nx * sizeof *dx);
    free(dx2), free(dx), free(dw), free(db), free(w0), free(b0);
    free(k.x), free(k.w), free(k.b), free(k.y), free(k.c);
}

/* --- layernorm --- */
typedef struct {
    int rows, d;
    tt_real *x, *gamma, *beta, *y, *mean, *rstd, *c;
} ln_ctx;

static double ln_obj(void *p)
{
    ln_ctx *k = p;
    cpu_layernorm_fwd(k->y, k->mean, k->rstd, k->x, k->gamma, k->beta, k->rows, k->d);
    return dot(k->c, k->y, (long)k->rows * k->d);
}

static void test_op_layernorm(void **state)
{
    (void)state;
    rng r = rng_for(2);
    ln_ctx k = {4, 6, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    const long n = k.rows * k.d;
    k.x = alloc_real(n), k.gamma = alloc_real(k.d), k.beta = alloc_real(k.d), k.y = alloc_real(n);
    k.mean = alloc_real(k.rows), k.rstd = alloc_real(k.rows), k.c = alloc_real(n);
    for (int i = 0; i < k.rows; i++) /* rows of different offsets and spreads */
        for (int j = 0; j < k.d; j++)
            k.x[i * k.d + j] = (tt_real)(0.5 * i - 1 + (0.3 + i) * rng_normal(&r));
    fill_normal(&r, k.gamma, k.d, 1), fill_normal(&r, k.beta, k.d, 1), fill_normal(&r, k.c, n, 1);
    ln_obj(&k);
    for (int i = 0; i < k.rows; i++) {
        double m = 0, v = 0;
        for (int j = 0; j < k.d; j++) m += k.x[i * k.d + j] / k.d;
        for (int j = 0; j < k.d; j++) v += (k.x[i * k.d + j] - m) * (k.x[i * k.d + j] - m) / k.d;
        for (int j = 0; j < k.d; j++) {
            const double xn = (k.x[i * k.d + j] - m) / sqrt(v + (double)TT_LN_EPS) * k.gamma[j];
            assert_near(k.y[i * k.d + j], xn + k.beta[j], 1e-13, fabs(xn) + fabs(k.beta[j]),
                        "layernorm forward");
        }
    }
    tt_real *dx = alloc_real(n), *dg = alloc_real(k.d), *db = alloc_real(k.d);
    tt_real *g0 = alloc_real(k.d), *b0 = alloc_real(k.d);
    fill_junk(dx, n), fill_normal(&r, g0, k.d, 1), fill_normal(&r, b0, k.d, 1);
    memcpy(dg, g0, k.d * sizeof *dg), memcpy(db, b0, k.d * sizeof *db);
    cpu_layernorm_bwd(dx, dg, db, k.c, k.x, k.mean, k.rstd, k.gamma, k.rows, k.d);
    subtract(dg, g0, k.d), subtract(db, b0, k.d);
    errstat e = {0};
    check_tensor(&e, &r, "layernorm.x", ln_obj, &k, k.x, dx, n);
    check_tensor(&e, &r, "layernorm.gamma", ln_obj, &k, k.gamma, dg, k.d);
    check_tensor(&e, &r, "layernorm.beta", ln_obj, &k, k.beta, db, k.d);
    op_report("cpu_layernorm (x, gamma, beta)", &e);
    free(dx), free(dg), free(db), free(g0), free(b0);
    free(k.x), free(k.gamma), free(k.beta), free(k.y), free(k.mean), free(k.rstd), free(k.c);
}

/* --- dropout --- */
typedef struct {
    long n;
    tt_real p;
    uint64_t seed, stream;
    tt_real *x, *y, *c;
    uint8_t *mask;
} dropout_ctx;

static double dropout_obj(void *p)
{
    dropout_ctx *k = p;
    cpu_dropout_fwd(k->y, k->mask, k->x, k->n, k->p, k->seed, k->stream);
    return dot(k->c, k->y, k->n);
}

static void test_op_dropout(void **state)
{
    (void)state;
    rng r = rng_for(3);
    const tt_real ps[2] = {(tt_real)0.3, 0};
    for (int t = 0; t < 2; t++) {
        dropout_ctx k = {300, ps[t], rng_u64(&r), rng_u64(&r), NULL, NULL, NULL, NULL};
        k.x = alloc_real(k.n), k.y = alloc_real(k.n), k.c = alloc_real(k.n);
        k.mask = malloc((size_t)k.n);
        fill_normal(&r, k.x, k.n, 1), fill_normal(&r, k.c, k.n, 1);
        dropout_obj(&k);
        long kept = 0;
        for (long i = 0; i < k.n; i++) {
            assert_true(k.mask[i] <= 1);
            kept += k.mask[i];
            if (k.mask[i])
                assert_close(k.y[i], k.x[i] / (1 - k.p), 1e-15, "dropout forward (kept)");
            else
                assert_true(k.y[i] == 0.0);
        }
        if (k.p > 0) /* 300 draws of p = 0.3: 210 +- 8 kept */
            assert_true(kept > 150 && kept < 270);
        else
            assert_int_equal(kept, k.n);
        tt_real *dx = alloc_real(k.n);
        fill_junk(dx, k.n);
        cpu_dropout_bwd(dx, k.c, k.mask, k.n, k.p);
        errstat e = {0};
        check_tensor(&e, &r, "dropout.x", dropout_obj, &k, k.x, dx, k.n);
        op_report(k.p > 0 ? "cpu_dropout p=0.3 (x)" : "cpu_dropout p=0 (x)", &e);
        /* in place, as the model calls it */
        tt_real *z = alloc_real(k.n);
        memcpy(z, k.x, k.n * sizeof *z);
        cpu_dropout_fwd(z, NULL, z, k.n, k.p, k.seed, k.stream);
        dropout_obj(&k); /* k.y was left at the last perturbed point */
        assert_memory_equal(z, k.y, k.n * sizeof *z);
        free(z), free(dx), free(k.x), free(k.y), free(k.c), free(k.mask);
    }
}

/* The kernels' dropout test (tt_keep_threshold: the draw's bits against an integer) is the CPU's
 * (its uniform against p in float), for every 24-bit draw at the p that matter (the ends, the
 * shipped 0.1 and 0.3, the floats next to them), and around the threshold of many random p. */
static void test_keep_threshold(void **state)
{
    (void)state;
    const float special[] = {0.f, -0.5f, 1e-30f, 1e-8f, 0.1f, 0.3f, 0.5f, nextafterf(0.1f, 1.f),
                             nextafterf(0.3f, 0.f), 0.999f, nextafterf(1.f, 0.f), 1.f, 1.5f, NAN};
    for (size_t i = 0; i < sizeof special / sizeof *special; i++) {
        const float p = special[i];
        const uint32_t thr = tt_keep_threshold(p);
        long differ = 0;
        for (uint32_t u = 0; u < 1u << 24; u++)
            differ += ((float)u * (1.0f / 16777216.0f) >= p) != (u >= thr);
        if (differ) fail_msg("p = %.9g: threshold %u differs from the float test at %ld draws", p, thr, differ);
    }
    rng r = rng_for(11);
    for (int t = 0; t < 100000; t++) {
        const float p = (float)(rng_u64(&r) >> 40) * (1.0f / 16777216.0f) + (float)(rng_u64(&r) % 3) * 1e-9f;
        const uint32_t thr = tt_keep_threshold(p);
        for (int64_t u = (int64_t)thr - 2; u <= (int64_t)thr + 2; u++) {
            if (u < 0 || u >= 1 << 24) continue;
            assert_true(((float)u * (1.0f / 16777216.0f) >= p) == ((uint32_t)u >= thr));
        }
    }
    for (uint64_t i = 0; i < 1000; i++) /* the bits are the uniform's */
        assert_true(tt_uniform(3, 5, i) == (float)tt_uniform_bits(3, 5, i) * (1.0f / 16777216.0f));
}

/* --- relu --- */
typedef struct {
    long n;
    tt_real *x, *y, *c;
} relu_ctx;

static double relu_obj(void *p)
{
    relu_ctx *k = p;
    cpu_relu_fwd(k->y, k->x, k->n);
    return dot(k->c, k->y, k->n);
}

static void test_op_relu(void **state)
{
    (void)state;
    rng r = rng_for(4);
    relu_ctx k = {100, NULL, NULL, NULL};
    k.x = alloc_real(k.n), k.y = alloc_real(k.n), k.c = alloc_real(k.n);
    for (long i = 0; i < k.n; i++) /* |x| >= 0.1: no step of 1e-5 crosses the kink */
        k.x[i] = (tt_real)((rng_u64(&r) & 1 ? 1 : -1) * rng_uniform(&r, 0.1, 2));
    fill_normal(&r, k.c, k.n, 1);
    relu_obj(&k);
    for (long i = 0; i < k.n; i++) assert_true(k.y[i] == (k.x[i] > 0 ? k.x[i] : 0));
    tt_real *dx = alloc_real(k.n);
    fill_junk(dx, k.n);
    cpu_relu_bwd(dx, k.c, k.y, k.n);
    errstat e = {0};
    check_tensor(&e, &r, "relu.x", relu_obj, &k, k.x, dx, k.n);
    op_report("cpu_relu (x)", &e);
    free(dx), free(k.x), free(k.y), free(k.c);
}

/* --- core --- */
typedef struct {
    int h, r;
    tt_real *theta, *g, *c;
} core_ctx;

static double core_obj(void *p)
{
    core_ctx *k = p;
    cpu_core_fwd(k->g, k->theta, k->h, k->r);
    return dot(k->c, k->g, k->r);
}

static void test_op_core(void **state)
{
    (void)state;
    rng r = rng_for(5);
    const int hs[2] = {1, 3};
    for (int t = 0; t < 2; t++) {
        core_ctx k = {hs[t], 5, NULL, NULL, NULL};
        const long n = (long)k.h * k.r;
        k.theta = alloc_real(n), k.g = alloc_real(k.r), k.c = alloc_real(k.r);
        fill_normal(&r, k.theta, n, 1.5), fill_normal(&r, k.c, k.r, 1);
        core_obj(&k);
        double total = 0;
        for (int i = 0; i < k.r; i++) { /* g = (1/h) sum_c softmax(theta_c) */
            double g = 0;
            for (int c = 0; c < k.h; c++) {
                double z = 0;
                for (int j = 0; j < k.r; j++) z += exp(k.theta[c * k.r + j]);
                g += exp(k.theta[c * k.r + i]) / z / k.h;
            }
            assert_close(k.g[i], g, 1e-14, "core forward");
            total += k.g[i];
        }
        assert_close(total, 1.0, 1e-14, "core sums to 1");
        tt_real *dt = alloc_real(n), *t0 = alloc_real(n);
        fill_normal(&r, t0, n, 1);
        memcpy(dt, t0, n * sizeof *dt);
        cpu_core_bwd(dt, k.c, k.theta, k.h, k.r);
        subtract(dt, t0, n);
        errstat e = {0};
        check_tensor(&e, &r, "core.theta", core_obj, &k, k.theta, dt, n);
        op_report(k.h == 1 ? "cpu_core h=1 (theta)" : "cpu_core h=3 (theta)", &e);
        free(dt), free(t0), free(k.theta), free(k.g), free(k.c);
    }
}

/* --- multi-linear attention --- */
typedef struct {
    cpu_mla_shape s;
    tt_real *qkv, *g, *wo, *p, *u, *v, *y, *c;
} mla_ctx;

static double mla_obj(void *p)
{
    mla_ctx *k = p;
    cpu_mla_fwd(k->y, k->qkv, k->g, k->wo, k->p, k->u, k->v, k->s);
    return dot(k->c, k->y, (long)k->s.batch * k->s.n * k->s.d);
}

/* Y of MODEL.md section 1 from the materialized T, term by term. */
static double mla_naive(const mla_ctx *k, int b, int i, int e, double *scale)
{
    const int n = k->s.n, r = k->s.r;
    const tt_real *seq = k->qkv + (size_t)b * n * 3 * r;
    double y = 0;
    *scale = 0;
    for (int j = 0; j < n; j++)
        for (int l = 0; l < n; l++) {
            if (k->s.causal && (j > i || l > i)) continue;
            double t = 0, ta = 0;
            for (int q = 0; q < r; q++) {
                const double qi = seq[i * 3 * r + q], kj = seq[j * 3 * r + r + q];
                const double vl = seq[l * 3 * r + 2 * r + q];
                double a = (qi + (k->u ? k->u[q] : 0)) * kj;
                if (k->p) a += (qi + k->v[q]) * k->p[j * r + q];
                t += k->g[q] * a * vl;
                ta += fabs(k->g[q] * a * vl) + fabs(k->g[q] * qi * kj * vl);
            }
            y += t * k->wo[(size_t)e * n * n + j * n + l];
            *scale += ta * fabs(k->wo[(size_t)e * n * n + j * n + l]);
        }
    return y;
}

static void test_op_mla(void **state)
{
    (void)state;
    rng r = rng_for(6);
    for (int combo = 0; combo < 4; combo++) {
        const bool causal = combo & 1, key = combo & 2;
        mla_ctx k = {{2, 5, 3, 4, causal}, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};
        const int B = k.s.batch, N = k.s.n, R = k.s.r, D = k.s.d;
        const long nqkv = (long)B * N * 3 * R, nwo = (long)D * N * N, ny = (long)B * N * D;
        k.qkv = alloc_real(nqkv), k.g = alloc_real(R), k.wo = alloc_real(nwo);
        k.y = alloc_real(ny), k.c = alloc_real(ny);
        fill_normal(&r, k.qkv, nqkv, 1), fill_uniform(&r, k.g, R, 0.1, 1);
        fill_normal(&r, k.wo, nwo, 1), fill_normal(&r, k.c, ny, 1);
        if (key) {
            k.p = alloc_real((long)N * R), k.u = alloc_real(R), k.v = alloc_real(R);
            fill_normal(&r, k.p, (long)N * R, 1), fill_normal(&r, k.u, R, 1);
            fill_normal(&r, k.v, R, 1);
        }
        mla_obj(&k);
        for (int b = 0; b < B; b++)
            for (int i = 0; i < N; i++)
                for (int e = 0; e < D; e++) {
                    double scale;
                    const double want = mla_naive(&k, b, i, e, &scale);
                    assert_near(k.y[(b * N + i) * D + e], want, 1e-14, scale,
                                "mla forward vs MODEL.md");
                }

        /* analytic gradients: parameter gradients start at junk (they are added into) */
        const long np = key ? (long)N * R : 0, nr = key ? R : 0;
        tt_real *dqkv = alloc_real(nqkv), *dg = alloc_real(R), *dwo = alloc_real(nwo);
        tt_real *dp = key ? alloc_real(np) : NULL, *du = key ? alloc_real(nr) : NULL;
        tt_real *dv = key ? alloc_real(nr) : NULL;
        tt_real *g0 = alloc_real(R), *wo0 = alloc_real(nwo), *p0 = alloc_real(np);
        tt_real *u0 = alloc_real(nr), *v0 = alloc_real(nr);
        fill_junk(dqkv, nqkv), fill_normal(&r, g0, R, 1), fill_normal(&r, wo0, nwo, 1);
        fill_normal(&r, p0, np, 1), fill_normal(&r, u0, nr, 1), fill_normal(&r, v0, nr, 1);
        memcpy(dg, g0, R * sizeof *dg), memcpy(dwo, wo0, nwo * sizeof *dwo);
        if (key) {
            memcpy(dp, p0, np * sizeof *dp), memcpy(du, u0, nr * sizeof *du);
            memcpy(dv, v0, nr * sizeof *dv);
        }
        cpu_mla_bwd(dqkv, dg, dwo, dp, du, dv, k.c, k.qkv, k.g, k.wo, k.p, k.u, k.v, k.s);
        subtract(dg, g0, R), subtract(dwo, wo0, nwo);
        if (key) subtract(dp, p0, np), subtract(du, u0, nr), subtract(dv, v0, nr);
        errstat e = {0};
        check_tensor(&e, &r, "mla.qkv", mla_obj, &k, k.qkv, dqkv, nqkv);
        check_tensor(&e, &r, "mla.g", mla_obj, &k, k.g, dg, R);
        check_tensor(&e, &r, "mla.wo", mla_obj, &k, k.wo, dwo, nwo);
        if (key) {
            check_tensor(&e, &r, "mla.p", mla_obj, &k, k.p, dp, np);
            check_tensor(&e, &r, "mla.u", mla_obj, &k, k.u, du, nr);
            check_tensor(&e, &r, "mla.v", mla_obj, &k, k.v, dv, nr);
        }
        char name[64];
        snprintf(name, sizeof name, "cpu_mla causal=%d position=%s", causal, key ? "key" : "none");
        op_report(name, &e);

        /* From zero, twice: dg, dwo, dp, du, dv are added into (exactly 2x), dqkv is written */
        tt_real *a_qkv = alloc_real(nqkv), *a_g = alloc_real(R), *a_wo = alloc_real(nwo);
        tt_real *a_p = alloc_real(np), *a_u = alloc_real(nr), *a_v = alloc_real(nr);
        tt_real *b_qkv = alloc_real(nqkv), *b_g = alloc_real(R), *b_wo = alloc_real(nwo);
        tt_real *b_p = alloc_real(np), *b_u = alloc_real(nr), *b_v = alloc_real(nr);
        cpu_mla_bwd(a_qkv, a_g, a_wo, key ? a_p : NULL, key ? a_u : NULL, key ? a_v : NULL, k.c,
                    k.qkv, k.g, k.wo, k.p, k.u, k.v, k.s);
        fill_junk(b_qkv, nqkv);
        for (int t = 0; t < 2; t++)
            cpu_mla_bwd(b_qkv, b_g, b_wo, key ? b_p : NULL, key ? b_u : NULL, key ? b_v : NULL, k.c,
                        k.qkv, k.g, k.wo, k.p, k.u, k.v, k.s);
        assert_memory_equal(a_qkv, b_qkv, nqkv * sizeof *a_qkv);
        for (long i = 0; i < R; i++) assert_true(b_g[i] == 2 * a_g[i]);
        for (long i = 0; i < nwo; i++) assert_true(b_wo[i] == 2 * a_wo[i]);
        for (long i = 0; i < np; i++) assert_true(b_p[i] == 2 * a_p[i]);
        for (long i = 0; i < nr; i++) assert_true(b_u[i] == 2 * a_u[i] && b_v[i] == 2 * a_v[i]);
        /* ... and the first call agrees with the junk-started one */
        for (long i = 0; i < nqkv; i++) assert_true(a_qkv[i] == dqkv[i]);
        /* NULL gradients are skipped and do not change the others */
        tt_real *c_qkv = alloc_real(nqkv);
        cpu_mla_bwd(c_qkv, NULL, NULL, NULL, NULL, NULL, k.c, k.qkv, k.g, k.wo, k.p, k.u, k.v, k.s);
        assert_memory_equal(a_qkv, c_qkv, nqkv * sizeof *a_qkv);
        free(c_qkv);
        free(a_qkv), free(a_g), free(a_wo), free(a_p), free(a_u), free(a_v);
        free(b_qkv), free(b_g), free(b_wo), free(b_p), free(b_u), free(b_v);
        free(dqkv), free(dg), free(dwo), free(dp), free(du), free(dv);
        free(g0), free(wo0), free(p0), free(u0), free(v0);
        free(k.qkv), free(k.g), free(k.wo), free(k.p), free(k.u), free(k.v), free(k.y), free(k.c);
    }
}

/* --- cross-entropy --- */
typedef struct {
    int rows, n;
    tt_real eps, scale;
    tt_real *logits;
    int32_t *targets;
} ce_ctx;

static double ce_obj(void *p)
{
    ce_ctx *k = p;
    return k->scale *
           cpu_cross_entropy(NULL, NULL, k->logits, k->targets, k->rows, k->n, k->eps, k->scale);
}

static void test_op_cross_entropy(void **state)
{
    (void)state;
    rng r = rng_for(7);
    const tt_real epss[2] = {0, (tt_real)0.1};
    for (int t = 0; t < 2; t++) {
        ce_ctx k = {6, 7, epss[t], (tt_real)rng_uniform(&r, 0.2, 2), NULL, NULL};
        const long n = (long)k.rows * k.n;
        k.logits = alloc_real(n);
        k.targets = malloc((size_t)k.rows * sizeof *k.targets);
        fill_normal(&r, k.logits, n, 2);
        for (int i = 0; i < k.rows; i++) k.targets[i] = (int32_t)(rng_u64(&r) % (uint64_t)k.n);
        double want = 0, want_nll = 0;
        for (int i = 0; i < k.rows; i++) {
            const tt_real *x = k.logits + (size_t)i * k.n;
            double mx = x[0], z = 0, mean_nll = 0;
            for (int j = 1; j < k.n; j++) mx = fmax(mx, x[j]);
            for (int j = 0; j < k.n; j++) z += exp(x[j] - mx);
            for (int j = 0; j < k.n; j++) mean_nll += (mx + log(z) - x[j]) / k.n;
            const double nll = mx + log(z) - x[k.targets[i]];
            want_nll += nll;
            want += (1 - k.eps) * nll + k.eps * mean_nll;
        }
        tt_real *dl = alloc_real(n);
        fill_junk(dl, n);
        double nll = -1;
        const double loss =
            cpu_cross_entropy(dl, &nll, k.logits, k.targets, k.rows, k.n, k.eps, k.scale);
        assert_close(loss, want, 1e-13, "cross-entropy loss");
        assert_close(nll, want_nll, 1e-13, "cross-entropy nll");
        /* the loss and its gradient are invariant to a shift of a row, even one that would
         * overflow exp without the max subtraction */
        tt_real *shifted = alloc_real(n), *ds = alloc_real(n);
        for (long i = 0; i < n; i++) shifted[i] = k.logits[i] + (i / k.n == 2 ? 1000 : -3);
        const double ls =
            cpu_cross_entropy(ds, NULL, shifted, k.targets, k.rows, k.n, k.eps, k.scale);
        assert_close(ls, loss, 1e-12, "cross-entropy of shifted logits");
        for (long i = 0; i < n; i++)
            assert_true(fabs(ds[i] - dl[i]) <= 1e-10 * fmax(1e-3, fabs(dl[i])));
        free(shifted), free(ds);
        errstat e = {0};
        check_tensor(&e, &r, "cross_entropy.logits", ce_obj, &k, k.logits, dl, n);
        op_report(k.eps > 0 ? "cpu_cross_entropy eps=0.1 (logits)"
                            : "cpu_cross_entropy eps=0 (logits)",
                  &e);
        free(dl), free(k.logits), free(k.targets);
    }
}

/* === 2. the model ============================================================================ */
#define VOCAB 50
#define SEQ 6
#define BATCH 2

typedef struct {
    const char *name;
    bool causal, key, tie;
    int cores;
    double dropout;
    bool adaptive; /* cutoffs [10, 30] */
    int div_val;
    double label_smoothing;
    bool train; /* dropout on, with a fixed seed and step */
    bool weighted; /* random token weights, some 0 */
    /* Transformer-XL (D 8, 2 heads of 3, N TXL_SEQ, F 12) instead of the tensorized model */
    bool txl;
    int mem_len, clamp_len;
    double dropatt;
    bool first_segment; /* no memory yet (mlen 0); else a random one of mem_len rows */
} model_cfg;

#define TXL_SEQ 4

typedef struct {
    tt_spec spec;
    tt_layout layout;
    tt_cpu_lm lm;
    tt_lm_opts opts;
    int32_t *inputs, *targets;
    tt_real *w, *g, *weight;
    tt_real *mems; /* Transformer-XL: [L, B, mem_len, D], the first mlen rows of each used */
    int mlen;
} model;

/* Transformer-XL's memories at their longest: [L, B, M, D]. */
static long mems_numel(const tt_layout *l)
{
    return (long)l->m.layers * BATCH * l->m.mem_len * l->m.d_model;
}

static void model_open(model *m, const model_cfg *c)
{
    char yaml[1024], err[512];
    int len = c->txl ? snprintf(yaml, sizeof yaml,
                                "model:\n"
                                "  kind: transformer-xl\n"
                                "  vocab: %d\n"
                                "  d_model: 8\n"
                                "  layers: 2\n"
                                "  n_head: 2\n"
                                "  d_head: 3\n"
                                "  seq_len: %d\n"
                                "  mem_len: %d\n"
                                "  clamp_len: %d\n"
                                "  d_inner: 12\n"
                                "  dropout: %g\n"
                                "  dropatt: %g\n"
                                "  tie_weights: %s\n",
                                VOCAB, TXL_SEQ, c->mem_len, c->clamp_len, c->dropout, c->dropatt,
                                c->tie ? "true" : "false") :
                     snprintf(yaml, sizeof yaml,
                       "model:\n"
                       "  kind: tensorized\n"
                       "  vocab: %d\n"
                       "  d_model: 8\n"
                       "  layers: 2\n"
                       "  rank: 3\n"
                       "  cores: %d\n"
                       "  seq_len: %d\n"
                       "  d_inner: 12\n"
                       "  dropout: %g\n"
                       "  causal: %s\n"
                       "  position: %s\n"
                       "  tie_weights: %s\n",
                       VOCAB, c->cores, SEQ, c->dropout, c->causal ? "true" : "false",
                       c->key ? "key" : "none", c->tie ? "true" : "false");
    if (c->adaptive)
        len += snprintf(yaml + len, sizeof yaml - (size_t)len,
                        "  adaptive:\n    cutoffs: [10, 30]\n    div_val: %d\n", c->div_val);
    len += snprintf(yaml + len, sizeof yaml - (size_t)len,
                    "train:\n  batch: %d\n  label_smoothing: %g\n", BATCH, c->label_smoothing);
    assert_true(len < (int)sizeof yaml);
    memset(m, 0, sizeof *m);
    if (tt_spec_parse(yaml, (size_t)len, c->name, ".", &m->spec, err, sizeof err) != 0)
        fail_msg("spec: %s\n%s", err, yaml);
    if (tt_spec_check_vocab(&m->spec, VOCAB, err, sizeof err) != 0) fail_msg("vocab: %s", err);
    if (tt_layout_build(&m->spec.model, VOCAB, &m->layout, err, sizeof err) != 0)
        fail_msg("layout: %s", err);
    tt_cpu_lm_init(&m->lm, &m->layout, m->spec.train.batch);
    const int rows = m->lm.rows;
    assert_int_equal(rows, BATCH * (c->txl ? TXL_SEQ : SEQ));
    m->inputs = malloc((size_t)rows * sizeof *m->inputs);
    m->targets = malloc((size_t)rows * sizeof *m->targets);
    m->w = alloc_real((long)m->layout.n_floats);
    m->g = alloc_real((long)m->layout.n_floats);
    m->opts.train = c->train;
    m->opts.label_smoothing = (tt_real)m->spec.train.label_smoothing;
    if (c->weighted) m->weight = alloc_real(rows);
    if (c->txl) {
        m->mlen = c->first_segment ? 0 : c->mem_len;
        m->mems = alloc_real(mems_numel(&m->layout));
    }
    m->opts.weight = m->weight;
}

static void model_close(model *m)
{
    tt_cpu_lm_free(&m->lm);
    tt_layout_free(&m->layout);
    tt_spec_free(&m->spec);
    free(m->inputs), free(m->targets), free(m->w), free(m->g), free(m->weight), free(m->mems);
}

/* Weights from tt_layout_init with a random seed, then moved off its special points: tensors
 * drawn with std s are scaled to std 15 s (0.02 -> 0.3), so that Q, K, V, T and every logit are
 * O(1) and each path carries a fair share of the gradient; constants (LayerNorm gamma 1, biases
 * 0) get N(0, 0.3^2) added, so that a backward that forgets gamma or a bias cannot hide. Random
 * tokens, targets, token weights and dropout seed/step. */
static void model_randomize(model *m, rng *r)
{
    tt_layout_init(&m->layout, m->w, rng_u64(r));
    for (int i = 0; i < m->layout.n_params; i++) {
        const tt_param *p = &m->layout.params[i];
        tt_real *x = m->w + p->offset;
        for (size_t k = 0; k < p->numel; k++)
            x[k] = p->init_std > 0 ? x[k] * 15 : x[k] + (tt_real)(0.3 * rng_normal(r));
    }
    /* memories are layer inputs: O(1), as a LayerNorm's output */
    if (m->mems) fill_normal(r, m->mems, mems_numel(&m->layout), 1.0);
    for (int i = 0; i < m->lm.rows; i++) {
        m->inputs[i] = (int32_t)(rng_u64(r) % VOCAB);
        m->targets[i] = (int32_t)(rng_u64(r) % VOCAB);
        if (m->weight) m->weight[i] = rng_u64(r) % 4 == 0 ? 0 : (tt_real)rng_uniform(r, 0.2, 2);
    }
    if (m->weight) m->weight[0] = 1; /* at least one token scored */
    /* every cluster is an input and a target somewhere, so that every table has a gradient */
    for (int c = 0; c < m->layout.n_clusters && m->layout.n_clusters > 1; c++) {
        const long lo = m->layout.lo[c], span = m->layout.hi[c] - lo;
        m->inputs[2 * c] = (int32_t)(lo + (long)(rng_u64(r) % (uint64_t)span));
        m->targets[2 * c + 1] = (int32_t)(lo + (long)(rng_u64(r) % (uint64_t)span));
        if (m->weight) m->weight[2 * c + 1] = 1;
    }
    m->opts.seed = rng_u64(r);
    m->opts.step = rng_u64(r) % 100000;
}

/* One run of the model's kind; Transformer-XL attends to m->mems and keeps them. */
static void model_run(model *m, tt_real *grads, tt_lm_result *res)
{
    if (m->layout.m.kind == TT_KIND_TXL)
        tt_cpu_txl_lm_run(&m->lm, m->w, grads, m->inputs, m->targets, m->mlen ? m->mems : NULL,
                          m->mlen, NULL, &m->opts, res);
    else
        tt_cpu_lm_run(&m->lm, m->w, grads, m->inputs, m->targets, &m->opts, res);
}

static double model_obj(void *p)
{
    model *m = p;
    tt_lm_result res;
    model_run(m, NULL, &res);
    return res.loss_sum / res.scored;
}

/* The gradient of loss_sum / scored, from zero. */
static void model_grad(model *m, tt_lm_result *res)
{
    memset(m->g, 0, m->layout.n_floats * sizeof *m->g);
    model_run(m, m->g, res);
}

/* Every parameter element of the model against finite differences. A draw the check cannot judge
 * is redrawn, at most MAX_DRAWS times: one with a point where the loss is not smooth within the
 * step (a ReLU input within ~1e-5 of 0), or one where a whole tensor's gradient is below
 * MIN_TENSOR_GRAD (a sign flip there would not show; seed 10114668676049489590 drew the two
 * values of a core below it, 8.0e-6, and failed before this redraw). */
#define MAX_DRAWS 4
static void check_model(const model_cfg *c, uint64_t test_id)
{
    rng r = rng_for(test_id);
    model m;
    model_open(&m, c);
    errstat e = {0};
    double max_grad = 0, min_tensor = INFINITY;
    long small = 0; /* tensors whose gradient is all below MIN_TENSOR_GRAD, in the last draw */
    for (int draw = 0; draw < MAX_DRAWS; draw++) {
        model_randomize(&m, &r);
        tt_lm_result res;
        model_grad(&m, &res);
        assert_true(res.scored > 0 && isfinite(res.loss_sum));
        assert_close(model_obj(&m), res.loss_sum / res.scored, 0, "loss with and without grads");
        memset(&e, 0, sizeof e);
        max_grad = 0, min_tensor = INFINITY, small = 0;
        for (int i = 0; i < m.layout.n_params; i++) {
            const tt_param *p = &m.layout.params[i];
            errstat pe = {0};
            double pmax = 0;
            for (size_t k = 0; k < p->numel; k++) {
                bool smooth;
                tt_real *x = m.w + p->offset + k;
                const double num = fd_derivative(model_obj, &m, x, &smooth);
                if (!smooth) pe.rough++;
                record(&pe, p->name, (long)k, m.g[p->offset + k], num);
                pmax = fmax(pmax, fabs(num));
            }
            /* a tensor whose gradient is all below the floor would not show a sign flip */
            if (pmax < MIN_TENSOR_GRAD) {
                small++;
                const int n =
                    g_msgs_len < sizeof g_msgs
                        ? snprintf(g_msgs + g_msgs_len, sizeof g_msgs - g_msgs_len,
                                   "    %s: largest gradient %.2e, too small to test\n", p->name, pmax)
                        : 0;
                if (n > 0) g_msgs_len += (size_t)n;
            }
            max_grad = fmax(max_grad, pmax);
            min_tensor = fmin(min_tensor, pmax);
            e.checked += pe.checked, e.failed += pe.failed, e.rough += pe.rough;
            e.max_err = fmax(e.max_err, pe.max_err);
        }
        msgs_flush(!e.rough || small);
        if (!e.rough && !small) break;
        if (e.rough)
            print_message("    %s: %ld points not smooth within the step (ReLU kinks); new draw\n",
                          c->name, e.rough);
        else
            print_message("    %s: %ld tensors' gradients too small to test; new draw\n", c->name,
                          small);
    }
    char name[96];
    snprintf(name, sizeof name, "model %s", c->name);
    print_message("  %-38s max rel err %.2e over %ld parameters (|grad| max %.1e, smallest "
                  "tensor max %.1e)\n",
                  name, e.max_err, e.checked, max_grad, min_tensor);
    size_t total = 0;
    for (int i = 0; i < m.layout.n_params; i++) total += m.layout.params[i].numel;
    assert_int_equal(e.checked, (long)total);
    assert_int_equal(e.failed, 0);
    assert_int_equal(e.rough, 0);
    assert_int_equal(small, 0);
    model_close(&m);
}

static void test_model_a_causal_none_tied(void **state)
{
    (void)state;
    const model_cfg c = {
        .name = "a: causal none tied full", .causal = true, .tie = true, .cores = 2};
    check_model(&c, 101);
}

static void test_model_b_causal_key_tied(void **state)
{
    (void)state;
    const model_cfg c = {
        .name = "b: causal key tied full", .causal = true, .key = true, .tie = true, .cores = 2};
    check_model(&c, 102);
}

static void test_model_c_unmasked(void **state)
{
    (void)state;
    const model_cfg c1 = {.name = "c: unmasked none tied full", .tie = true, .cores = 2};
    check_model(&c1, 103);
    const model_cfg c2 = {
        .name = "c2: unmasked key tied full", .key = true, .tie = true, .cores = 2};
    check_model(&c2, 113);
}

static void test_model_d_adaptive_div2_untied(void **state)
{
    (void)state;
    const model_cfg c = {.name = "d: adaptive div_val 2 untied",
                         .causal = true,
                         .cores = 2,
                         .adaptive = true,
                         .div_val = 2};
    check_model(&c, 104);
}

static void test_model_e_adaptive_div1_tied(void **state)
{
    (void)state;
    const model_cfg c = {.name = "e: adaptive div_val 1 tied",
                         .causal = true,
                         .tie = true,
                         .cores = 2,
                         .adaptive = true,
                         .div_val = 1};
    check_model(&c, 105);
    /* also the tied projections of div_val 2, and div_val 1 untied */
    const model_cfg c2 = {.name = "e2: adaptive div_val 2 tied key",
                          .causal = true,
                          .key = true,
                          .tie = true,
                          .cores = 2,
                          .adaptive = true,
                          .div_val = 2};
    check_model(&c2, 115);
    const model_cfg c3 = {.name = "e3: adaptive div_val 1 untied",
                          .causal = true,
                          .cores = 2,
                          .adaptive = true,
                          .div_val = 1};
    check_model(&c3, 125);
}

static void test_model_f_label_smoothing(void **state)
{
    (void)state;
    const model_cfg c = {.name = "f: label smoothing 0.1 full",
                         .causal = true,
                         .tie = true,
                         .cores = 2,
                         .label_smoothing = 0.1};
    check_model(&c, 106);
    /* token weights (some 0): the gradient of the weighted mean */
    const model_cfg c2 = {.name = "f2: ls 0.1 untied, token weights",
                          .causal = true,
                          .key = true,
                          .cores = 2,
                          .label_smoothing = 0.1,
                          .weighted = true};
    check_model(&c2, 116);
}

static void test_model_g_dropout(void **state)
{
    (void)state;
    const model_cfg c = {.name = "g: dropout 0.2 train, key",
                         .causal = true,
                         .key = true,
                         .tie = true,
                         .cores = 2,
                         .dropout = 0.2,
                         .train = true};
    check_model(&c, 107);
    const model_cfg c2 = {.name = "g2: dropout 0.2 train, adaptive",
                          .causal = true,
                          .cores = 3,
                          .dropout = 0.2,
                          .adaptive = true,
                          .div_val = 2,
                          .train = true};
    check_model(&c2, 117);
}

/* Transformer-XL (MODEL.md section 3) with a random memory of M rows per layer, which the
 * gradient does not reach: tied/untied, full/adaptive softmax, dropout and dropatt. */
static void test_model_t_txl(void **state)
{
    (void)state;
    /* name, M, clamp_len, tied, cutoffs, div_val, dropout = dropatt (train), label smoothing */
    const struct {
        const char *name;
        int mem_len, clamp_len;
        bool tie, adaptive;
        int div_val;
        double dropout, label_smoothing;
    } t[] = {
        {"t: txl tied full, drop+dropatt", 4, 0, true, false, 1, 0.2, 0},
        {"t2: txl untied adaptive 2, clamp 3", 4, 3, false, true, 2, 0.2, 0},
        {"t3: txl tied adaptive 1, drop", 4, 0, true, true, 1, 0.2, 0},
        {"t4: txl tied adaptive 2, M 3", 3, 0, true, true, 2, 0.1, 0},
        {"t5: txl untied, ls 0.1, weights, mlen 0", 4, 0, false, false, 1, 0, 0.1},
    };
    for (int i = 0; i < (int)(sizeof t / sizeof *t); i++) {
        const model_cfg c = {.name = t[i].name,
                             .txl = true,
                             .tie = t[i].tie,
                             .mem_len = t[i].mem_len,
                             .clamp_len = t[i].clamp_len,
                             .adaptive = t[i].adaptive,
                             .div_val = t[i].div_val,
                             .dropout = t[i].dropout,
                             .dropatt = t[i].dropout,
                             .train = t[i].dropout > 0,
                             .label_smoothing = t[i].label_smoothing,
                             .weighted = t[i].label_smoothing > 0,
                             .first_segment = t[i].label_smoothing > 0};
        check_model(&c, 501 + (uint64_t)i);
    }
}

/* === 3. the causal mask ======================================================================= */
static bool row_zero(const tt_real *x, int d)
{
    for (int k = 0; k < d; k++)
        if (x[k] != 0.0) return false;
    return true;
}

static void test_causal_leak(void **state)
{
    (void)state;
    rng r = rng_for(201);
    for (int mode = 0; mode < 4; mode++) {
        const bool causal = mode & 1, key = mode & 2;
        const model_cfg c = {.name = "leak",
                             .causal = causal,
                             .key = key,
                             .tie = true,
                             .cores = 2,
                             .weighted = true};
        model m;
        model_open(&m, &c);
        model_randomize(&m, &r);
        const int d = m.layout.m.d_model;
        long later_nonzero = 0;
        for (int i = 0; i < SEQ; i++) {
            memset(m.weight, 0, BATCH * SEQ * sizeof *m.weight);
            m.weight[i] = 1; /* sequence 0, position i */
            tt_lm_result res;
            model_grad(&m, &res);
            assert_true(res.scored == 1);
            for (int j = 0; j < BATCH * SEQ; j++) {
                const bool zero = row_zero(m.lm.d_emb + (size_t)j * d, d);
                if (j >= SEQ) { /* sequence 1 never sees sequence 0's loss */
                    if (!zero)
                        fail_msg("causal %d key %d: loss at (0,%d) reaches sequence 1 row %d",
                                 causal, key, i, j - SEQ);
                } else if (j <= i) {
                    if (zero)
                        fail_msg("causal %d key %d: loss at (0,%d) has no gradient at %d", causal,
                                 key, i, j);
                } else if (causal) {
                    if (!zero) fail_msg("causal: loss at (0,%d) leaks to later position %d", i, j);
                } else if (!zero) {
                    later_nonzero++;
                }
            }
            if (!causal && i < SEQ - 1) {
                bool any = false;
                for (int j = i + 1; j < SEQ; j++) any |= !row_zero(m.lm.d_emb + (size_t)j * d, d);
                if (!any) fail_msg("unmasked: loss at (0,%d) reaches no later position", i);
            }
        }
        if (!causal) assert_true(later_nonzero > 0);
        model_close(&m);
    }
    print_message("  causal mask: later positions exactly 0 (none/key); unmasked: nonzero\n");
}

/* === 4. h cores are one core holding their mean =============================================== */
static void test_cores_mean(void **state)
{
    (void)state;
    rng r = rng_for(301);
    for (int key = 0; key < 2; key++) {
        const model_cfg c3 = {.name = "cores 3", .causal = true, .key = key, .cores = 3};
        const model_cfg c1 = {.name = "cores 1", .causal = true, .key = key, .cores = 1};
        model m3, m1;
        model_open(&m3, &c3), model_open(&m1, &c1);
        model_randomize(&m3, &r);
        memcpy(m1.inputs, m3.inputs, BATCH * SEQ * sizeof *m1.inputs);
        memcpy(m1.targets, m3.targets, BATCH * SEQ * sizeof *m1.targets);
        const int R = m3.layout.m.rank;
        for (int i = 0; i < m3.layout.n_params; i++) {
            const tt_param *p3 = &m3.layout.params[i];
            const tt_param *p1 = tt_layout_find(&m1.layout, p3->name);
            assert_non_null(p1);
            tt_real *x3 = m3.w + p3->offset, *x1 = m1.w + p1->offset;
            if (!strstr(p3->name, "core_value")) {
                assert_int_equal(p1->numel, p3->numel);
                memcpy(x1, x3, p3->numel * sizeof *x1);
                continue;
            }
            assert_int_equal(p3->numel, 3 * R);
            assert_int_equal(p1->numel, R);
            fill_normal(&r, x3, 3 * R, 1.5); /* cores far apart */
            for (int q = 0; q < R; q++) { /* theta_1 = log g, g = mean of the softmaxes */
                double g = 0;
                for (int h = 0; h < 3; h++) {
                    double z = 0;
                    for (int k = 0; k < R; k++) z += exp(x3[h * R + k]);
                    g += exp(x3[h * R + q]) / z / 3;
                }
                x1[q] = (tt_real)log(g);
            }
        }
        tt_lm_result r3, r1;
        model_grad(&m3, &r3);
        model_grad(&m1, &r1);
        print_message("  cores 3 vs 1 (position %s): loss %.15f vs %.15f\n", key ? "key" : "none",
                      r3.loss_sum / r3.scored, r1.loss_sum / r1.scored);
        assert_close(r3.loss_sum, r1.loss_sum, 1e-12, "loss of 3 cores vs their mean");
        assert_close(r3.nll_sum, r1.nll_sum, 1e-12, "nll of 3 cores vs their mean");
        /* every other gradient agrees too */
        for (int i = 0; i < m3.layout.n_params; i++) {
            const tt_param *p3 = &m3.layout.params[i];
            if (strstr(p3->name, "core_value")) continue;
            const tt_param *p1 = tt_layout_find(&m1.layout, p3->name);
            for (size_t k = 0; k < p3->numel; k++) {
                const double a = m3.g[p3->offset + k], b = m1.g[p1->offset + k];
                if (!(fabs(a - b) <= 1e-10 * fmax(1e-3, fabs(a) + fabs(b))))
                    fail_msg("gradient of %s[%zu]: %.17g (3 cores) vs %.17g (1)", p3->name, k, a,
                             b);
            }
        }
        model_close(&m3), model_close(&m1);
    }
}

/* === 5. determinism =========================================================================== */
static void test_determinism(void **state)
{
    (void)state;
    rng r = rng_for(401);
    const model_cfg c = {.name = "det",
                         .causal = true,
                         .key = true,
                         .cores = 2,
                         .dropout = 0.2,
                         .adaptive = true,
                         .div_val = 2,
                         .train = true,
                         .weighted = true};
    model m, m2;
    model_open(&m, &c), model_open(&m2, &c);
    model_randomize(&m, &r);
    const size_t nf = m.layout.n_floats, rd = (size_t)m.lm.rows * m.layout.m.d_model;
    tt_real *g1 = alloc_real((long)nf), *e1 = alloc_real((long)rd);
    tt_lm_result a, b;
    model_grad(&m, &a);
    memcpy(g1, m.g, nf * sizeof *g1), memcpy(e1, m.lm.d_emb, rd * sizeof *e1);
    for (int t = 0; t < 2; t++) { /* the same object again, then a fresh one */
        model *x = t ? &m2 : &m;
        if (t) {
            memcpy(m2.w, m.w, nf * sizeof *m.w);
            memcpy(m2.inputs, m.inputs, BATCH * SEQ * sizeof *m.inputs);
            memcpy(m2.targets, m.targets, BATCH * SEQ * sizeof *m.targets);
            memcpy(m2.weight, m.weight, BATCH * SEQ * sizeof *m.weight);
            m2.opts = m.opts;
            m2.opts.weight = m2.weight;
        }
        model_grad(x, &b);
        assert_memory_equal(&a.loss_sum, &b.loss_sum, sizeof a.loss_sum);
        assert_memory_equal(&a.nll_sum, &b.nll_sum, sizeof a.nll_sum);
        assert_memory_equal(&a.scored, &b.scored, sizeof a.scored);
        assert_memory_equal(g1, x->g, nf * sizeof *g1);
        assert_memory_equal(e1, x->lm.d_emb, rd * sizeof *e1);
    }
    /* grads are added into: a second run on top doubles them (to rounding) */
    tt_cpu_lm_run(&m.lm, m.w, m.g, m.inputs, m.targets, &m.opts, &b);
    tt_cpu_lm_run(&m.lm, m.w, m.g, m.inputs, m.targets, &m.opts, &b);
    for (size_t i = 0; i < nf; i++)
        if (!(fabs(m.g[i] - 3 * g1[i]) <= 1e-12 * fmax(1e-3, fabs(g1[i]))))
            fail_msg("grads[%zu]: three runs give %.17g, one %.17g", i, m.g[i], g1[i]);
    /* the dropout masks follow the step: another step gives another loss */
    m.opts.step++;
    tt_cpu_lm_run(&m.lm, m.w, NULL, m.inputs, m.targets, &m.opts, &b);
    assert_true(b.loss_sum != a.loss_sum);
    /* and evaluation (train false) ignores seed and step */
    m.opts.train = false;
    tt_lm_result e0, e2;
    tt_cpu_lm_run(&m.lm, m.w, NULL, m.inputs, m.targets, &m.opts, &e0);
    m.opts.step += 7, m.opts.seed ^= 12345;
    tt_cpu_lm_run(&m.lm, m.w, NULL, m.inputs, m.targets, &m.opts, &e2);
    assert_memory_equal(&e0.loss_sum, &e2.loss_sum, sizeof e0.loss_sum);
    free(g1), free(e1);
    model_close(&m), model_close(&m2);
    print_message("  determinism: bit-identical loss, grads and d_emb (same and fresh lm)\n");
}

/* === 5b. a batch in shares (several GPUs) ====================================================
 * Each of K ranks runs B/K of a step's sequences (tt_lm_opts' seq0, norm): every sequence run as
 * a batch of its own, at its place in the whole batch and divided by the whole batch's weight,
 * draws the dropout masks it draws in the whole batch (embedding, attention output, FFN, and
 * Transformer-XL's dropatt), so the shares' loss sums and gradients add up to the whole batch's.
 * Without seq0 the masks differ and so does the sum; the test sees that too. */
static void check_shares(const model_cfg *c, uint64_t test_id)
{
    rng r = rng_for(test_id);
    model m;
    model_open(&m, c);
    model_randomize(&m, &r);
    const size_t nf = m.layout.n_floats;
    const int seq = m.lm.rows / BATCH, d = m.layout.m.d_model, L = m.layout.m.layers;
    tt_lm_result whole;
    model_grad(&m, &whole);
    tt_real *gs = alloc_real((long)nf);
    tt_real *mem1 = m.mlen ? alloc_real((long)L * m.mlen * d) : NULL;
    tt_cpu_lm one;
    tt_cpu_lm_init(&one, &m.layout, 1);
    for (int wrong = 0; wrong < 2; wrong++) {
        memset(gs, 0, nf * sizeof *gs);
        double loss = 0, nll = 0, scored = 0;
        for (int b = 0; b < BATCH; b++) {
            tt_lm_opts o = m.opts;
            o.seq0 = wrong ? 0 : b;
            o.norm = whole.scored;
            if (m.weight) o.weight = m.weight + (size_t)b * seq;
            const int32_t *in = m.inputs + (size_t)b * seq, *tg = m.targets + (size_t)b * seq;
            tt_lm_result res;
            if (m.layout.m.kind == TT_KIND_TXL) {
                for (int k = 0; k < L && mem1; k++) /* the sequence's memories, [L, 1, mlen, D] */
                    memcpy(mem1 + (size_t)k * m.mlen * d,
                           m.mems + ((size_t)k * BATCH + b) * m.mlen * d,
                           (size_t)m.mlen * d * sizeof *mem1);
                tt_cpu_txl_lm_run(&one, m.w, gs, in, tg, mem1, m.mlen, NULL, &o, &res);
            } else {
                tt_cpu_lm_run(&one, m.w, gs, in, tg, &o, &res);
            }
            loss += res.loss_sum, nll += res.nll_sum, scored += res.scored;
        }
        double worst = 0, big = 0;
        for (size_t i = 0; i < nf; i++) big = fmax(big, fabs(m.g[i]));
        for (size_t i = 0; i < nf; i++) worst = fmax(worst, fabs(gs[i] - m.g[i]) / big);
        const double dl = fabs(loss - whole.loss_sum) / fabs(whole.loss_sum);
        print_message("  %s, %s: loss sum %.2e, gradients %.2e (of the largest) from the whole "
                      "batch's\n", c->name, wrong ? "every share at seq0 0" : "shares at their seq0",
                      dl, worst);
        if (wrong) {
            assert_true(dl > 1e-6 || worst > 1e-6); /* other masks: another sum */
        } else {
            assert_true(dl < 1e-12 && worst < 1e-12);
            assert_true(fabs(nll - whole.nll_sum) <= 1e-12 * fabs(whole.nll_sum));
            assert_true(fabs(scored - whole.scored) <= 1e-12 * whole.scored); /* sums of weights */
        }
    }
    tt_cpu_lm_free(&one);
    free(gs), free(mem1);
    model_close(&m);
}

static void test_batch_shares(void **state)
{
    (void)state;
    const model_cfg t = {.name = "tensorized, dropout 0.2, adaptive", .causal = true, .key = true,
                         .cores = 2, .dropout = 0.2, .adaptive = true, .div_val = 2, .train = true,
                         .weighted = true};
    check_shares(&t, 451);
    const model_cfg x = {.name = "Transformer-XL, dropout and dropatt 0.2, memory", .txl = true,
                         .tie = true, .mem_len = 4, .dropout = 0.2, .dropatt = 0.2, .train = true};
    check_shares(&x, 452);
}

/* === 6. Transformer-XL's memory =============================================================
 * Segments run one after the other, each attending to the memories the previous one returned,
 * score each token exactly as a direct evaluation of the whole stream in which the query at
 * position t of segment s = t / N sees the keys max(0, s N - M) .. t: those of its segment up to
 * itself and the M before the segment (the memory holds the layer inputs of those positions as
 * their own segments computed them, and the direct evaluation computes every position likewise),
 * at relative distance t - j (clamped to clamp_len). Written out per position, without cpu_txl
 * and without the LM's code: embedding, attention, LayerNorms, FFN, full softmax. */
#define CARRY_SEGS 3

static void txl_direct_nll(const model *m, const int32_t *tokens, const int32_t *targets, int b,
                           double *nll)
{
    const tt_model_spec *s = &m->layout.m;
    const int T = CARRY_SEGS * TXL_SEQ, d = s->d_model, f = s->d_inner, H = s->n_head,
              dh = s->d_head, hd = H * dh, M = s->mem_len;
    tt_view w;
    tt_view_make(&m->layout, m->w, &w);
    tt_real *x = alloc_real((long)T * d), *qkv = alloc_real((long)T * 3 * hd), *a = alloc_real(hd);
    tt_real *y = alloc_real(d), *t1 = alloc_real(d), *hid = alloc_real(f), *mean = alloc_real(1),
            *rstd = alloc_real(1), *pe = alloc_real(d), *r = alloc_real(hd), *pos = alloc_real(1);
    for (int t = 0; t < T; t++)
        for (int e = 0; e < d; e++)
            x[(size_t)t * d + e] =
                w.emb[0][(size_t)tokens[(size_t)b * T + t] * d + e] * sqrt((double)d);
    for (int k = 0; k < s->layers; k++) {
        const tt_layer_view *lw = &w.layer[k];
        cpu_linear_fwd(qkv, x, lw->qkv, NULL, T, d, 3 * hd);
        tt_real *out = alloc_real((long)T * d);
        for (int t = 0; t < T; t++) {
            const int lo = t / TXL_SEQ * TXL_SEQ - M > 0 ? t / TXL_SEQ * TXL_SEQ - M : 0;
            for (int c = 0; c < H; c++) {
                double score[CARRY_SEGS * TXL_SEQ], mx = -INFINITY, z = 0;
                for (int j = lo; j <= t; j++) {
                    const int dist =
                        s->clamp_len > 0 && t - j > s->clamp_len ? s->clamp_len : t - j;
                    pos[0] = (tt_real)dist;
                    cpu_sinusoid(pe, pos, 1, d);
                    cpu_linear_fwd(r, pe, lw->r_net, NULL, 1, d, hd);
                    double sc = 0;
                    for (int e = 0; e < dh; e++) {
                        const double q = qkv[(size_t)t * 3 * hd + c * dh + e];
                        sc += (q + w.u[c * dh + e]) * qkv[(size_t)j * 3 * hd + hd + c * dh + e] +
                              (q + w.v[c * dh + e]) * r[c * dh + e];
                    }
                    score[j - lo] = sc / sqrt((double)dh);
                    mx = fmax(mx, score[j - lo]);
                }
                for (int j = lo; j <= t; j++) z += score[j - lo] = exp(score[j - lo] - mx);
                for (int e = 0; e < dh; e++) {
                    double acc = 0;
                    for (int j = lo; j <= t; j++)
                        acc += score[j - lo] / z * qkv[(size_t)j * 3 * hd + 2 * hd + c * dh + e];
                    a[c * dh + e] = (tt_real)acc;
                }
            }
            cpu_linear_fwd(y, a, lw->o, NULL, 1, hd, d);
            for (int e = 0; e < d; e++) y[e] += x[(size_t)t * d + e];
            cpu_layernorm_fwd(t1, mean, rstd, y, lw->ln1_w, lw->ln1_b, 1, d);
            cpu_linear_fwd(hid, t1, lw->ff1_w, lw->ff1_b, 1, d, f);
            for (int e = 0; e < f; e++) hid[e] = hid[e] > 0 ? hid[e] : 0;
            cpu_linear_fwd(y, hid, lw->ff2_w, lw->ff2_b, 1, f, d);
            for (int e = 0; e < d; e++) y[e] += t1[e];
            cpu_layernorm_fwd(out + (size_t)t * d, mean, rstd, y, lw->ln2_w, lw->ln2_b, 1, d);
        }
        memcpy(x, out, (size_t)T * d * sizeof *x);
        free(out);
    }
    for (int t = 0; t < T; t++) {
        double logit[VOCAB], mx = -INFINITY, z = 0;
        for (int v = 0; v < VOCAB; v++) {
            double l = w.out_b[0][v];
            for (int e = 0; e < d; e++)
                l += (double)x[(size_t)t * d + e] * w.out_w[0][(size_t)v * d + e];
            logit[v] = l;
            mx = fmax(mx, l);
        }
        for (int v = 0; v < VOCAB; v++) z += exp(logit[v] - mx);
        nll[t] = mx + log(z) - logit[targets[(size_t)b * T + t]];
    }
    free(x), free(qkv), free(a), free(y), free(t1), free(hid), free(mean), free(rstd), free(pe);
    free(r), free(pos);
    tt_view_free(&w);
}

static void test_txl_memory_carry(void **state)
{
    (void)state;
    rng r = rng_for(601);
    const struct {
        int mem_len, clamp_len;
        bool tie;
    } cases[] = {{4, 0, true}, {4, 3, false}, {3, 0, false}, {6, 2, true}, {0, 0, true}};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const model_cfg c = {.name = "carry",
                             .txl = true,
                             .tie = cases[ci].tie,
                             .mem_len = cases[ci].mem_len,
                             .clamp_len = cases[ci].clamp_len,
                             .first_segment = true,
                             .weighted = true};
        model m;
        model_open(&m, &c);
        model_randomize(&m, &r);
        const int T = CARRY_SEGS * TXL_SEQ, M = c.mem_len;
        int32_t tokens[BATCH * CARRY_SEGS * TXL_SEQ], targets[BATCH * CARRY_SEGS * TXL_SEQ];
        for (int i = 0; i < BATCH * T; i++) {
            tokens[i] = (int32_t)(rng_u64(&r) % VOCAB);
            targets[i] = (int32_t)(rng_u64(&r) % VOCAB);
        }
        double direct[BATCH][CARRY_SEGS * TXL_SEQ], worst = 0;
        for (int b = 0; b < BATCH; b++) txl_direct_nll(&m, tokens, targets, b, direct[b]);
        int mlen = 0;
        for (int seg = 0; seg < CARRY_SEGS; seg++) {
            for (int b = 0; b < BATCH; b++)
                for (int i = 0; i < TXL_SEQ; i++) {
                    m.inputs[b * TXL_SEQ + i] = tokens[b * T + seg * TXL_SEQ + i];
                    m.targets[b * TXL_SEQ + i] = targets[b * T + seg * TXL_SEQ + i];
                }
            /* each token's loss alone (weight one-hot), the memories left as they are */
            for (int row = 0; row < BATCH * TXL_SEQ; row++) {
                memset(m.weight, 0, BATCH * TXL_SEQ * sizeof *m.weight);
                m.weight[row] = 1;
                tt_lm_result res;
                tt_cpu_txl_lm_run(&m.lm, m.w, NULL, m.inputs, m.targets, mlen ? m.mems : NULL,
                                  mlen, NULL, &m.opts, &res);
                const double want = direct[row / TXL_SEQ][seg * TXL_SEQ + row % TXL_SEQ];
                worst = fmax(worst, fabs(res.nll_sum - want));
                if (!(fabs(res.nll_sum - want) <= 1e-12))
                    fail_msg("M %d clamp %d: segment %d row %d: nll %.17g, direct %.17g", M,
                             c.clamp_len, seg, row, res.nll_sum, want);
            }
            /* then the run that carries them, in place */
            tt_lm_result res;
            const int next = tt_cpu_txl_lm_run(&m.lm, m.w, NULL, m.inputs, m.targets,
                                               mlen ? m.mems : NULL, mlen, m.mems, &m.opts, &res);
            assert_int_equal(next, mlen + TXL_SEQ < M ? mlen + TXL_SEQ : M);
            mlen = next;
        }
        print_message("  txl memory, %d segments of %d, M %d, clamp %d, %s: per-token nll vs the "
                      "direct evaluation, max |diff| %.1e\n",
                      CARRY_SEGS, TXL_SEQ, M, c.clamp_len, c.tie ? "tied" : "untied", worst);
        model_close(&m);
    }
}

/* === main ===================================================================================== */
int main(void)
{
    g_seed = tu_seed();
    printf("test_cpu_grad: seed %llu (TT_TEST_SEED=%llu replays this run)\n",
           (unsigned long long)g_seed, (unsigned long long)g_seed);
    fflush(stdout);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bf16_rounding),
        cmocka_unit_test(test_op_linear),
        cmocka_unit_test(test_op_layernorm),
        cmocka_unit_test(test_op_dropout),
        cmocka_unit_test(test_keep_threshold),
        cmocka_unit_test(test_op_relu),
        cmocka_unit_test(test_op_core),
        cmocka_unit_test(test_op_mla),
        cmocka_unit_test(test_op_cross_entropy),
        cmocka_unit_test(test_model_a_causal_none_tied),
        cmocka_unit_test(test_model_b_causal_key_tied),
        cmocka_unit_test(test_model_c_unmasked),
        cmocka_unit_test(test_model_d_adaptive_div2_untied),
        cmocka_unit_test(test_model_e_adaptive_div1_tied),
        cmocka_unit_test(test_model_f_label_smoothing),
        cmocka_unit_test(test_model_g_dropout),
        cmocka_unit_test(test_model_t_txl),
        cmocka_unit_test(test_causal_leak),
        cmocka_unit_test(test_cores_mean),
        cmocka_unit_test(test_determinism),
        cmocka_unit_test(test_batch_shares),
        cmocka_unit_test(test_txl_memory_carry),
    };
    const int failed = cmocka_run_group_tests(tests, NULL, NULL);
    if (failed)
        printf("test_cpu_grad: FAILED with seed %llu (TT_TEST_SEED=%llu)\n",
               (unsigned long long)g_seed, (unsigned long long)g_seed);
    return failed;
}
