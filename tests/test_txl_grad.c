/* Tests of Transformer-XL's relative-position attention (cpu/cpu_txl.c), built in double
 * (tt_runtime_f64) so that central differences check the backward to about 1e-8:
 *   1. the forward against a direct transcription of MODEL.md section 3 (absolute positions,
 *      sinusoids and projections written out), dropatt's mask included;
 *   2. every gradient (h, Wqkv, Wr, Wo, u, v) against finite differences, and the add/write
 *      convention, with and without a clamp_len that clamps, with dropatt, with and without memory;
 *   3. causality: output row i has exactly zero gradient with respect to h rows j > i;
 *   4. memory: a segment attending to the previous segment as memory equals the long run.
 * Inputs are random on every run; the seed is printed and TT_TEST_SEED=<n> replays a run. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_txl.h"
#include "rng.h"
#include "testutil.h"

_Static_assert(sizeof(tt_real) == sizeof(double),
               "test_txl_grad must link tt_runtime_f64 (TT_REAL=double)");

/* The derivative is Richardson's (4 D(h/2) - D(h)) / 3 of central differences D at FD_H and h/2;
 * the error of an element is |analytic - numeric| / max(FLOOR, |analytic| + |numeric|), as in
 * test_cpu_grad.c. The op is smooth (no ReLU), so the step can be larger than there: measured over
 * 30 seeds, the worst element was 3e-8 at h = 3e-5, 1e-8 at 1e-4, 1.5e-9 at 1e-3 (rounding,
 * falling as 1/h), 5e-10 at 3e-3 and 8e-9 at 1e-2 (the h^4 truncation term). */
#define FD_H 3e-3
#define FLOOR 1e-3
#define TOL 1e-8

static uint64_t g_seed;

/* Tensor `id` of a test: uniform in [-scale, scale), from the counter-based RNG of rng.h. */
static tt_real *random_tensor(long n, uint64_t id, double scale)
{
    tt_real *x = calloc((size_t)(n > 0 ? n : 1), sizeof *x);
    for (long i = 0; i < n; i++) x[i] = (tt_real)(scale * (2.0 * tt_uniform(g_seed, id, (uint64_t)i) - 1.0));
    return x;
}

/* One problem: the inputs, the output, and the weights c of the objective f = sum c . out. */
typedef struct {
    cpu_txl_shape s;
    int clamp;
    tt_real *h, *mem, *pe, *wqkv, *wr, *wo, *u, *v, *out, *c;
} txl_case;

static long hd_of(const cpu_txl_shape *s) { return (long)s->heads * s->dhead; }

static void case_open(txl_case *t, cpu_txl_shape s, int clamp, uint64_t id)
{
    const long hd = hd_of(&s), k = s.m + s.n, rows = (long)s.batch * s.n;
    t->s = s, t->clamp = clamp;
    id *= 16;
    t->h = random_tensor(rows * s.d, id + 0, 1);
    t->mem = random_tensor((long)s.batch * s.m * s.d, id + 1, 1);
    t->wqkv = random_tensor(3 * hd * s.d, id + 2, 0.6);
    t->wr = random_tensor(hd * s.d, id + 3, 0.6);
    t->wo = random_tensor(s.d * hd, id + 4, 0.6);
    t->u = random_tensor(hd, id + 5, 0.5);
    t->v = random_tensor(hd, id + 6, 0.5);
    t->c = random_tensor(rows * s.d, id + 7, 1);
    t->out = random_tensor(rows * s.d, id + 8, 1);
    t->pe = random_tensor(k * s.d, id + 9, 1);
    cpu_txl_pos_emb(t->pe, (int)k, s.d, clamp);
}

static void case_close(txl_case *t)
{
    free(t->h), free(t->mem), free(t->pe), free(t->wqkv), free(t->wr), free(t->wo), free(t->u);
    free(t->v), free(t->out), free(t->c);
}

static cpu_txl_weights weights(const txl_case *t)
{
    return (cpu_txl_weights){t->wqkv, t->wr, t->wo, t->u, t->v};
}

static double objective(txl_case *t)
{
    cpu_txl_attn_fwd(t->out, t->h, t->s.m ? t->mem : NULL, t->pe, weights(t), t->s);
    long double f = 0; /* extended: the unchanged terms of f(x+h), f(x-h) cancel exactly */
    for (long i = 0; i < (long)t->s.batch * t->s.n * t->s.d; i++) f += (long double)t->c[i] * t->out[i];
    return (double)f;
}

static double numeric_derivative(txl_case *t, tt_real *x)
{
    const tt_real x0 = *x;
    double d[2];
    for (int k = 0; k < 2; k++) {
        const double step = FD_H / (1 << k);
        *x = x0 + step;
        const double fp = objective(t);
        *x = x0 - step;
        const double fm = objective(t);
        d[k] = (fp - fm) / (2 * step);
    }
    *x = x0;
    return (4 * d[1] - d[0]) / 3;
}

/* --- 1. the formula, transcribed: one output element, everything recomputed ------------------ */
static double ref_out(const txl_case *t, int b, int i, int e)
{
    const cpu_txl_shape *s = &t->s;
    const int dh = s->dhead, hd = (int)hd_of(s), d = s->d, m = s->m;
    double out = 0;
    for (int c = 0; c < s->heads; c++) {
        /* x_j: memory rows first, then this segment's rows; query i at absolute position m+i */
#define ROW(j) ((j) < m ? t->mem + ((size_t)b * m + (j)) * d : t->h + ((size_t)b * s->n + (j) - m) * d)
        double q[64], score[64], a[64] = {0}, mx = -INFINITY, z = 0;
        for (int f = 0; f < dh; f++) {
            q[f] = 0;
            for (int x = 0; x < d; x++) q[f] += t->wqkv[(size_t)(c * dh + f) * d + x] * ROW(m + i)[x];
        }
        for (int j = 0; j <= m + i; j++) {
            int dist = m + i - j;
            if (t->clamp > 0 && dist > t->clamp) dist = t->clamp;
            double pe[64];
            for (int f = 0; f < d / 2; f++) {
                pe[f] = sin(dist * pow(10000.0, -2.0 * f / d));
                pe[d / 2 + f] = cos(dist * pow(10000.0, -2.0 * f / d));
            }
            score[j] = 0;
            for (int f = 0; f < dh; f++) {
                double kf = 0, rf = 0;
                for (int x = 0; x < d; x++) {
                    kf += t->wqkv[(size_t)(hd + c * dh + f) * d + x] * ROW(j)[x];
                    rf += t->wr[(size_t)(c * dh + f) * d + x] * pe[x];
                }
                score[j] += (q[f] + t->u[c * dh + f]) * kf + (q[f] + t->v[c * dh + f]) * rf;
            }
            score[j] /= sqrt(dh);
            mx = fmax(mx, score[j]);
        }
        for (int j = 0; j <= m + i; j++) z += exp(score[j] - mx);
        for (int j = 0; j <= m + i; j++) {
            double p = exp(score[j] - mx) / z;
            if (s->dropatt > 0) {
                const uint64_t idx = (((uint64_t)b * s->heads + c) * s->n + i) * (m + s->n) + j;
                p = tt_uniform(s->seed, s->stream, idx) >= s->dropatt ? p / (1 - s->dropatt) : 0;
            }
            for (int f = 0; f < dh; f++) {
                double vf = 0;
                for (int x = 0; x < d; x++) vf += t->wqkv[(size_t)(2 * hd + c * dh + f) * d + x] * ROW(j)[x];
                a[f] += p * vf;
            }
        }
#undef ROW
        for (int f = 0; f < dh; f++) out += t->wo[(size_t)e * hd + c * dh + f] * a[f];
    }
    return out;
}

static void check_forward(txl_case *t)
{
    objective(t);
    double worst = 0;
    for (int b = 0; b < t->s.batch; b++)
        for (int i = 0; i < t->s.n; i++)
            for (int e = 0; e < t->s.d; e++) {
                const double got = t->out[((size_t)b * t->s.n + i) * t->s.d + e], want = ref_out(t, b, i, e);
                worst = fmax(worst, fabs(got - want) / fmax(1, fabs(want)));
            }
    print_message("    forward vs the formula: max err %.2e\n", worst);
    assert_true(worst < 1e-12);
}

/* --- 2. gradients ----------------------------------------------------------------------------- */
#define JUNK ((tt_real)1e3) /* dh starts at it: written, not added into */

static void check_gradients(cpu_txl_shape s, int clamp, uint64_t id, const char *name)
{
    print_message("  %s: B %d D %d H %d dh %d N %d M %d clamp_len %d dropatt %g\n", name, s.batch, s.d,
                  s.heads, s.dhead, s.n, s.m, clamp, (double)s.dropatt);
    txl_case t;
    case_open(&t, s, clamp, id);
    check_forward(&t);
    const long hd = hd_of(&s), nh = (long)s.batch * s.n * s.d;
    const long sizes[6] = {nh, 3 * hd * s.d, hd * s.d, s.d * hd, hd, hd};
    tt_real *grads[6], *junk[6];
    for (int g = 0; g < 6; g++) {
        junk[g] = random_tensor(sizes[g], id * 16 + 10 + (uint64_t)g, 1); /* parameters: added into */
        grads[g] = malloc((size_t)sizes[g] * sizeof(tt_real));
        for (long e = 0; e < sizes[g]; e++) grads[g][e] = g == 0 ? JUNK : junk[g][e];
    }
    cpu_txl_grads pg = {grads[1], grads[2], grads[3], grads[4], grads[5], NULL};
    cpu_txl_attn_bwd(grads[0], pg, t.c, t.h, s.m ? t.mem : NULL, t.pe, weights(&t), s);
    tt_real *xs[6] = {t.h, t.wqkv, t.wr, t.wo, t.u, t.v};
    const char *names[6] = {"h", "qkv_net.weight", "r_net.weight", "o_net.weight", "r_w_bias", "r_r_bias"};
    long failed = 0;
    for (int g = 0; g < 6; g++) {
        double worst = 0, biggest = 0;
        for (long e = 0; e < sizes[g]; e++) {
            const double a = grads[g][e] - (g ? junk[g][e] : 0), num = numeric_derivative(&t, xs[g] + e);
            const double err = fabs(a - num) / fmax(FLOOR, fabs(a) + fabs(num));
            worst = fmax(worst, err == err ? err : INFINITY);
            biggest = fmax(biggest, fabs(num));
            if (!(err <= TOL) && failed++ < 8)
                print_message("    %s[%ld]: analytic %.15e numeric %.15e err %.2e\n", names[g], e, a,
                              num, err);
        }
        print_message("    d %-15s max rel err %.2e over %ld elements (largest |grad| %.2e)\n", names[g],
                      worst, sizes[g], biggest);
        assert_true(biggest > 1e-3); /* a gradient that is all zero would check nothing */
    }
    assert_int_equal(failed, 0);
    /* NULL gradients are skipped; the others are the same */
    tt_real *u2 = calloc((size_t)hd, sizeof *u2);
    cpu_txl_attn_bwd(NULL, (cpu_txl_grads){NULL, NULL, NULL, u2, NULL, NULL}, t.c, t.h,
                     s.m ? t.mem : NULL, t.pe, weights(&t), s);
    for (long e = 0; e < hd; e++) assert_true(fabs(u2[e] - (grads[4][e] - junk[4][e])) < 1e-12);
    free(u2);
    for (int g = 0; g < 6; g++) free(grads[g]), free(junk[g]);
    case_close(&t);
}

static const cpu_txl_shape TINY = {2, 4, 3, 8, 2, 3, 0, 0, 0, 0}; /* B N M D H dh */

static void test_grad_plain(void **state)
{
    (void)state;
    check_gradients(TINY, 0, 1, "no clamp, no dropatt");
}

static void test_grad_clamp_dropatt(void **state)
{
    (void)state;
    cpu_txl_shape s = TINY;
    s.dropatt = (tt_real)0.3, s.seed = 1234567, s.stream = tt_dropout_stream(5, 7);
    check_gradients(s, 2, 2, "clamp_len 2 (distances up to 6), dropatt 0.3"); /* klen 7 */
}

static void test_grad_no_memory(void **state)
{
    (void)state;
    cpu_txl_shape s = TINY;
    s.m = 0;
    check_gradients(s, 0, 3, "first segment (M = 0)");
}

/* --- the bf16 emulations (cpu_txl_round) --------------------------------------------------------
 * The test of the GPU against this reference rounds as each of the GPU's bf16 paths does; each
 * emulation must still compute the attention: within bf16's roundings of the exact output and
 * gradients, and not the same bits as the other (they round at other points). The shape's
 * queries see up to 140 keys: the fused emulation's online softmax spans three tiles of 64. */
/* ||x - y|| over ||y||, or over scale where scale > 0 */
static double rel_l2(const tt_real *x, const tt_real *y, long n, double scale)
{
    double num = 0, den = 0;
    for (long i = 0; i < n; i++) num += (x[i] - y[i]) * (x[i] - y[i]), den += y[i] * y[i];
    return sqrt(num) / (scale > 0 ? scale : sqrt(den));
}

static void test_rounded(void **state)
{
    (void)state;
    const cpu_txl_shape s = {2, 40, 100, 16, 2, 8, (tt_real)0.2, 99, 3, 0}; /* B N M D H dh */
    txl_case t;
    case_open(&t, s, 0, 5);
    const long hd = hd_of(&s), no = (long)s.batch * s.n * s.d;
    const long sizes[6] = {no, 3 * hd * s.d, hd * s.d, s.d * hd, hd, hd};
    tt_real *out[3], *g[3][6];
    /* u's and v's gradients are sums over every (sequence, head, query) row that cancel: their
     * roundings' errors are judged against the root-sum-square of those rows (the exact run's),
     * not against the sums themselves (a sum that cancelled to a tenth of its rows' size would
     * otherwise show a tenfold error) */
    double uv_terms[2] = {0, 0};
    for (int r = 0; r < 3; r++) {
        out[r] = malloc((size_t)no * sizeof(tt_real));
        cpu_txl_attn_fwd_as(out[r], t.h, t.mem, t.pe, weights(&t), s, (cpu_txl_round)r);
        for (int k = 0; k < 6; k++) g[r][k] = calloc((size_t)sizes[k], sizeof(tt_real));
        cpu_txl_attn_bwd_as(g[r][0], (cpu_txl_grads){g[r][1], g[r][2], g[r][3], g[r][4], g[r][5], r ? NULL : uv_terms},
                            t.c, t.h, t.mem, t.pe, weights(&t), s, (cpu_txl_round)r);
    }
    const char *names[7] = {"out", "dh", "qkv_net", "r_net", "o_net", "r_w_bias", "r_r_bias"};
    for (int k = 0; k < 7; k++) {
        const tt_real *x[3] = {k ? g[0][k - 1] : out[0], k ? g[1][k - 1] : out[1], k ? g[2][k - 1] : out[2]};
        const long n = k ? sizes[k - 1] : no;
        const double scale = k >= 5 ? sqrt(uv_terms[k - 5]) : 0;
        const double e1 = rel_l2(x[1], x[0], n, scale), e2 = rel_l2(x[2], x[0], n, scale);
        const double e12 = rel_l2(x[2], x[1], n, 0);
        print_message("  %-9s rel. error%s: unfused bf16 %.2e, fused bf16 %.2e, between them %.2e\n",
                      names[k], k >= 5 ? " (to its rows' size)" : "", e1, e2, e12);
        assert_true(e1 > 1e-5 && e1 < 2e-2);
        assert_true(e2 > 1e-5 && e2 < 2e-2);
        assert_true(e12 > 0);
    }
    for (int r = 0; r < 3; r++) {
        free(out[r]);
        for (int k = 0; k < 6; k++) free(g[r][k]);
    }
    case_close(&t);
}

/* --- 3. causality ----------------------------------------------------------------------------- */
static void test_causal(void **state)
{
    (void)state;
    cpu_txl_shape s = TINY;
    s.dropatt = (tt_real)0.3, s.seed = 99, s.stream = 3;
    txl_case t;
    case_open(&t, s, 0, 4);
    const long rows = (long)s.batch * s.n;
    tt_real *dh = malloc((size_t)rows * s.d * sizeof *dh), *c = calloc((size_t)rows * s.d, sizeof *c);
    tt_real *out0 = malloc((size_t)rows * s.d * sizeof *out0);
    objective(&t);
    memcpy(out0, t.out, (size_t)rows * s.d * sizeof *out0);
    for (int i = 0; i < s.n; i++) {
        /* the objective reads output row i of every sequence only */
        memset(c, 0, (size_t)rows * s.d * sizeof *c);
        for (int b = 0; b < s.batch; b++)
            for (int e = 0; e < s.d; e++) {
                const size_t at = ((size_t)b * s.n + i) * s.d + e;
                c[at] = t.c[at];
            }
        cpu_txl_attn_bwd(dh, (cpu_txl_grads){0}, c, t.h, t.mem, t.pe, weights(&t), s);
        for (int b = 0; b < s.batch; b++)
            for (int j = 0; j < s.n; j++) {
                double mag = 0;
                for (int e = 0; e < s.d; e++) mag = fmax(mag, fabs(dh[((size_t)b * s.n + j) * s.d + e]));
                if (j > i && mag != 0)
                    fail_msg("d out[%d] / d h[%d] (sequence %d) = %g, not 0", i, j, b, mag);
                if (j <= i) assert_true(mag > 0);
            }
        /* and the forward: changing the later rows leaves row i's output bit for bit */
        if (i + 1 < s.n) {
            tt_real *h0 = malloc((size_t)rows * s.d * sizeof *h0);
            memcpy(h0, t.h, (size_t)rows * s.d * sizeof *h0);
            for (int b = 0; b < s.batch; b++)
                for (long e = ((long)b * s.n + i + 1) * s.d; e < ((long)b + 1) * s.n * s.d; e++)
                    t.h[e] += 0.5;
            objective(&t);
            for (int b = 0; b < s.batch; b++)
                for (int r = 0; r <= i; r++)
                    assert_memory_equal(t.out + ((size_t)b * s.n + r) * s.d,
                                        out0 + ((size_t)b * s.n + r) * s.d, (size_t)s.d * sizeof *out0);
            memcpy(t.h, h0, (size_t)rows * s.d * sizeof *h0);
            free(h0);
        }
    }
    print_message("  causal: d out[i] / d h[j > i] == 0 exactly, and later rows leave out[i] unchanged\n");
    free(dh), free(c), free(out0);
    case_close(&t);
}

/* --- 4. memory ---------------------------------------------------------------------------------
 * Segment 2 with mem = segment 1's inputs (M = N) against one run over the 2N rows with no
 * memory. They must agree: in Transformer-XL every query of a segment sees the whole memory plus
 * the current rows up to itself, so query i of segment 2 (absolute position N+i) sees absolute
 * positions 0..N+i, exactly what query N+i of the causal 2N-row run sees; the distances are the
 * same, and klen = M+N = 2N in both, so r is the same matrix. (With M < N the segment's queries
 * would all see from N-M on, a fixed start, not a window sliding with i; the long run would then
 * need a mask the op does not have, and the forward check of section 1, where the reference is
 * written in absolute positions, already covers that case.) dropatt is off: its mask is indexed by
 * the position in P, which differs between the two runs. */
static void test_memory(void **state)
{
    (void)state;
    for (int clamp = 0; clamp <= 3; clamp += 3) {
        cpu_txl_shape s = TINY;
        s.m = s.n;
        txl_case seg; /* seg.mem is segment 1, seg.h segment 2 */
        case_open(&seg, s, clamp, 5 + (uint64_t)clamp);
        objective(&seg);
        cpu_txl_shape ls = s;
        ls.n = 2 * s.n, ls.m = 0;
        const size_t seq = (size_t)s.n * s.d;
        tt_real *x = malloc(2 * seq * s.batch * sizeof *x), *out = malloc(2 * seq * s.batch * sizeof *out);
        for (int b = 0; b < s.batch; b++) {
            memcpy(x + 2 * seq * b, seg.mem + seq * b, seq * sizeof *x);
            memcpy(x + 2 * seq * b + seq, seg.h + seq * b, seq * sizeof *x);
        }
        cpu_txl_attn_fwd(out, x, NULL, seg.pe, weights(&seg), ls); /* pe: klen 2N in both */
        double worst = 0;
        for (int b = 0; b < s.batch; b++)
            for (size_t e = 0; e < seq; e++) {
                const double a = seg.out[seq * b + e], l = out[2 * seq * b + seq + e];
                worst = fmax(worst, fabs(a - l) / fmax(1, fabs(l)));
            }
        print_message("  memory (clamp_len %d): segment 2 with segment 1 as memory vs the 2N-row run: "
                      "max err %.2e\n", clamp, worst);
        assert_true(worst <= 1e-12);
        free(x), free(out);
        case_close(&seg);
    }
}

int main(void)
{
    g_seed = tu_seed();
    printf("test_txl_grad: seed %llu (TT_TEST_SEED=%llu replays this run)\n", (unsigned long long)g_seed,
           (unsigned long long)g_seed);
    fflush(stdout);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_grad_plain),
        cmocka_unit_test(test_grad_clamp_dropatt),
        cmocka_unit_test(test_grad_no_memory),
        cmocka_unit_test(test_rounded),
        cmocka_unit_test(test_causal),
        cmocka_unit_test(test_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
