/* Units (see unit.h): for each, its random inputs and CPU twin, its launch as the trainer's, and
 * its outputs with their tolerances; and the one check that poisons the outputs, runs, downloads
 * and compares, with an error planted or not. */
#include "unit.h"

#include <limits.h>
#include <stdarg.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "cpu_ops.h"
#include "cpu_txl.h"
#include "mla_geom.cuh"
#include "mla_mat.h"
#include "launch.h"
#include "optim.h"
#include "rng.h"
#include "util.h"

/* --- tolerances ------------------------------------------------------------------------------ */

/* What an output is held to, by how it is computed, at fp32 storage ([0]) and at bf16 ([1]): the
 * relative L2 error over the whole tensor, and over each row where rows are positions (a row's
 * error against max(its reference's norm, 3e-2 of the RMS row norm), so that a row that is
 * legitimately tiny is not held to relative precision).
 *   STORED: an activation of the storage type, computed in fp32 (the twin in double on the same
 *     rounded inputs). bf16: 1e-2 over the tensor. A row of D values each rounded once to 8 bits
 *     is off by about 2^-9/sqrt(3) = 1.1e-3; the tensor-core kernels round intermediate products
 *     to bf16 as well (T and dT before their products with Wo and dY, g K and V before mma), and
 *     some rows go through a single such product (the first of a causal sequence), ~5e-3 after
 *     a few roundings: per row 4e-2, a margin of eight, and 25 times below the 1 of a zeroed row.
 *     fp32: 1e-5 over the tensor, each element a few fp32 roundings (~1e-7) of its terms; per row
 *     1e-3, because a row whose terms nearly cancel (Transformer-XL's dAC for a query that sees
 *     two keys whose dP are nearly equal) keeps its terms' absolute error: up to 1e3 times its
 *     own norm's 1e-7 at the norm floor. Still 1e3 below a zeroed row.
 *   FP32: fp32 values computed in fp32 from the same inputs (LayerNorm's statistics, bias and
 *     scale gradients, the losses): 1e-5 over the tensor.
 *   MMA: fp32 gradients of a kernel that multiplies on tensor cores when its plan constant MMA is
 *     1 (T, dT, dY, Q rounded to bf16 on the way into mma): a bf16 product's bounds, STORED's at
 *     bf16; mla.cu's kernels multiply in fp32 and are held to FP32's. The attention's dg, du, dv
 *     (r values) and dP (n x r) are sums over the checked sequences, and their error is taken
 *     against the larger of their own norm and the root-sum-square of the sequences' parts (the
 *     output's floor): with r = 7 the sum can cancel well below its parts by chance, while the
 *     bf16 roundings of the parts' terms keep the parts' size. An H100 run of mat-odd-key at bf16
 *     saw dv 1.39e-2 against its own norm, where some 35 other seeds gave 3e-3..9e-3; its inputs,
 *     rebuilt on the CPU, give a floor 2.6 times dv's norm: 5.3e-3 against it. The bound stays
 *     1e-2; the norm it divides by is what changed.
 *   SUM: the residual sum x + dropout(y), one rounding of the fp32 value the twin rounds too: 1e-6
 *     over the tensor (in practice the same values); per row STORED's, which already tell a
 *     zeroed row (a bound of 1e-6 on the whole allows one row 1e-6 x sqrt(rows) of its own).
 *   EXACT: moves, gathers and one rounding of the same value: the same values, element by
 *     element. */
typedef enum { TOL_STORED, TOL_FP32, TOL_MMA, TOL_SUM, TOL_EXACT } tol_kind;

static const struct {
    double whole[2], row[2];
} tolerances[] = {
    [TOL_STORED] = {{1e-5, 1e-2}, {1e-3, 4e-2}},
    [TOL_FP32] = {{1e-5, 1e-5}, {0, 0}}, /* never rows of positions */
    [TOL_SUM] = {{1e-6, 1e-6}, {1e-3, 4e-2}},
};

/* --- comparing ------------------------------------------------------------------------------- */

static double over(double err, double tol)
{
    if (isnan(err)) return INFINITY;
    return tol > 0 ? err / tol : err > 0 ? INFINITY : 0;
}

/* The bound of its kind nearest to failing kept in *b, the largest ratio in r. */
static void keep(tt_unit_result *r, tt_unit_bound *b, const char *tensor, double err, double tol,
                 long row)
{
    const double q = over(err, tol);
    if (!b->tensor || q > over(b->err, b->tol)) *b = (tt_unit_bound){err, tol, tensor, row};
    if (q > r->ratio) r->ratio = q;
}

void tt_compare(tt_unit_result *r, const char *tensor, const float *got, const float *want,
                long rows, long cols, double tol, double row_tol, double floor)
{
    const size_t n = (size_t)rows * cols;
    for (size_t i = 0; i < n && !r->note[0]; i++)
        if (!isfinite(got[i])) snprintf(r->note, sizeof r->note, "%s[%zu] is %g", tensor, i, got[i]);
    keep(r, &r->whole, tensor, tt_rel_l2_floor(got, want, n, floor), tol, -1);
    if (row_tol <= 0) return;
    double all = 0;
    for (size_t i = 0; i < n; i++) all += (double)want[i] * want[i];
    /* 3e-2 of the RMS row norm: a row that sums few terms (the first of a causal sequence: one
     * T value times Wo) can be a sum over the rank that cancels, small beside its terms, while the
     * tensor-core kernels' roundings of those terms (A_j, T in bf16) keep their absolute size (an
     * H100 run saw 0.26 of such a row's norm where it was 1e-3 of the RMS). A zeroed row above
     * 0.12% of the RMS still fails the bound of 4e-2. */
    const double low = 3e-2 * sqrt(all / (double)rows);
    for (long row = 0; row < rows; row++) {
        double num = 0, den = 0;
        for (long c = 0; c < cols; c++) {
            const double g = got[(size_t)row * cols + c], w = want[(size_t)row * cols + c];
            num += (g - w) * (g - w), den += w * w;
        }
        const double norm = sqrt(den) > low ? sqrt(den) : low;
        const double e = !isfinite(num) ? INFINITY : norm > 0 ? sqrt(num) / norm : num > 0 ? INFINITY : 0;
        keep(r, &r->row, tensor, e, row_tol, row);
    }
}

/* Element by element: the count that differ (NaN differs from everything). */
static void compare_exact(tt_unit_result *r, const char *tensor, const float *got, const float *want,
                          size_t n)
{
    size_t differ = 0;
    for (size_t i = 0; i < n; i++) {
        if (got[i] == want[i]) continue;
        if (!differ++ && !r->note[0])
            snprintf(r->note, sizeof r->note, "%s[%zu] is %g, want %g", tensor, i, got[i], want[i]);
    }
    keep(r, &r->whole, tensor, (double)differ, 0, -1);
}

/* --- a unit's state ---------------------------------------------------------------------------- */

/* An output: where the kernels write it and what the CPU twin says it holds. */
typedef struct {
    const char *name;
    void *dev;
    int bf16;            /* stored as bf16, else fp32 */
    long rows, cols, ld; /* what is checked: [rows, cols], rows ld apart on the device */
    int seq;             /* rows of a sequence where rows are positions (held to the per-row
                          * bound; ZERO_ROWS zeroes two of each); 0: not positions */
    tol_kind tol;
    const char *mma;     /* TOL_MMA: the op whose constant MMA says how it is computed */
    const float *start;  /* [rows, cols] it holds before the kernels run (added into, or an input
                          * written over in place); NULL: poisoned */
    double floor;        /* the norm the whole tensor's relative error is taken against where the
                          * reference's own is smaller (0: none): a sum over the checked
                          * sequences can cancel below its parts, while the rounding errors keep
                          * the parts' size */
} output;

#define MAX_OUTPUTS 6
#define MAX_KEPT 32

struct tt_unit {
    const tt_unit_desc *d;
    const tt_spec *s;
    uint64_t seed;
    int batch, check, bf16; /* the spec's batch, the check's sequences, bf16 storage */
    bool rounded;           /* cuBLAS's tf32 products between fp32 values: bf16's bounds */
    long rows, rows_check;  /* rows of positions at the batch and at the check */
    output out[MAX_OUTPUTS];
    int n_out;
    float *want[MAX_OUTPUTS]; /* the CPU twin's [rows, cols] of each output */
    float *scratch;
    size_t scratch_floats;
    tt_dropout drop;
    char about[192]; /* what a run covers and what the check does (tt_unit_describe) */
    void *host[MAX_KEPT], *dev[MAX_KEPT]; /* freed with the unit */
    int n_host, n_dev;
    void *h; /* the unit's own inputs and buffers */
};

struct tt_unit_impl {
    /* inputs, device buffers, outputs */
    void (*init)(tt_unit *u, const tt_unit_opts *o);
    /* the CPU twin into want (each holding its output's start, else zeros); NULL for a unit with
     * its own check */
    void (*twin)(const tt_unit *u, float *const *want);
    void (*run)(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check);
    size_t (*scratch)(const tt_unit *u, const tt_gpu_program *p); /* floats; NULL: none */
    /* a check of its own instead of the outputs' (NULL: theirs) */
    tt_unit_result (*check)(tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu);
};

static void *keep_host(tt_unit *u, void *p)
{
    TT_ASSERT(u->n_host < MAX_KEPT);
    return u->host[u->n_host++] = p;
}

static void *keep_dev(tt_unit *u, void *p)
{
    TT_ASSERT(u->n_dev < MAX_KEPT);
    return u->dev[u->n_dev++] = p;
}

static void *dev_buffer(tt_unit *u, size_t bytes)
{
    void *d;
    TT_CUDA(cudaMalloc(&d, bytes + 1));
    return keep_dev(u, d);
}

/* Device memory of total bytes holding the n bytes at x over and over: the timed batch past the
 * checked sequences holds the same values, never zeros. */
static void *dev_copies(tt_unit *u, const void *x, size_t n, size_t total)
{
    char *d = dev_buffer(u, total > n ? total : n);
    TT_CUDA(cudaMemcpy(d, x, n, cudaMemcpyHostToDevice));
    for (size_t at = n; n && at < total; at *= 2)
        TT_CUDA(cudaMemcpy(d + at, d, total - at < at ? total - at : at, cudaMemcpyDeviceToDevice));
    return d;
}

static size_t storage_size(int bf16) { return bf16 ? 2 : 4; }

/* x [n] as the storage type, repeated over total elements (dev_copies). */
static void *dev_repeated(tt_unit *u, const float *x, size_t n, size_t total, int bf16)
{
    if (n > total) n = total;
    if (!bf16) return dev_copies(u, x, n * 4, total * 4);
    uint16_t *h = tt_xmalloc(n * 2 + 1);
    for (size_t i = 0; i < n; i++) h[i] = tt_bf16_from_float(x[i]);
    void *d = dev_copies(u, h, n * 2, total * 2);
    free(h);
    return d;
}

/* x [rows, cols] with rows ld apart, the padding NaN (of storage type bf16), into buf [rows * ld]. */
static void *pitched(const float *x, long rows, long cols, long ld, int bf16)
{
    void *buf = tt_xmalloc((size_t)rows * ld * storage_size(bf16) + 1);
    for (long r = 0; r < rows; r++)
        for (long c = 0; c < ld; c++) {
            const float v = c < cols ? x[(size_t)r * cols + c] : NAN;
            if (bf16) ((uint16_t *)buf)[(size_t)r * ld + c] = tt_bf16_from_float(v);
            else ((float *)buf)[(size_t)r * ld + c] = v;
        }
    return buf;
}

/* x [rows, cols] into device rows ld apart (padding NaN), repeated over total rows. */
static void *dev_rows(tt_unit *u, const float *x, long rows, long cols, long ld, long total, int bf16)
{
    void *buf = pitched(x, rows, cols, ld, bf16);
    const size_t es = storage_size(bf16);
    void *d = dev_copies(u, buf, (size_t)rows * ld * es, (size_t)(total > rows ? total : rows) * ld * es);
    free(buf);
    return d;
}

static float *host_randn(tt_unit *u, size_t n, float std, uint64_t stream, int bf16)
{
    float *x = keep_host(u, tt_xmalloc(n * 4 + 1));
    tt_randn(x, n, std, u->seed, stream, bf16);
    return x;
}

/* An output of [rows, cols] at dev, rows ld apart; the caller sets mma, start and floor where it
 * has them. */
static output *add_output(tt_unit *u, const char *name, void *dev, int bf16, long rows, long cols,
                          long ld, int seq, tol_kind tol)
{
    TT_ASSERT(u->n_out < MAX_OUTPUTS);
    output *o = &u->out[u->n_out++];
    *o = (output){name, dev, bf16, rows, cols, ld, seq, tol, NULL, NULL, 0};
    return o;
}

/* A dropout site of the unit: the spec's p where it has one, else 0.1, so that a planted dropout
 * error matters. */
static void unit_dropout(tt_unit *u, double spec_p, uint32_t site)
{
    unsigned long long *step;
    u->drop = tt_check_dropout(spec_p > 0 ? (float)spec_p : 0.1f, u->seed, site, &step);
    keep_dev(u, step);
}

/* The D-wide rows' pitch: the trainer's (Transformer-XL's padded to 16-byte groups), or wider by
 * pad with a NaN gap. */
static long d_pitch(const tt_unit *u, int pad)
{
    const long d = u->s->model.d_model;
    if (pad) return tt_row_pitch(d) + pad;
    return u->s->model.kind == TT_KIND_TXL ? tt_row_pitch(d) : d;
}

static long max_rows(long a, long b) { return a > b ? a : b; }

/* The unit's description: what a run covers (fmt), then how many of the `all` the check covers. */
static void about(tt_unit *u, long checked, long all, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void about(tt_unit *u, long checked, long all, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    const int k = vsnprintf(u->about, sizeof u->about, fmt, ap);
    va_end(ap);
    if (k < 0 || (size_t)k >= sizeof u->about) return;
    if (checked == all)
        snprintf(u->about + k, sizeof u->about - (size_t)k, ", checked against the CPU on all of them");
    else
        snprintf(u->about + k, sizeof u->about - (size_t)k, ", checked against the CPU on %ld of them",
                 checked);
}

/* --- multi-linear attention (templates/mla.cu; mla_tc.cu on the bf16 path) -------------------- */

typedef struct {
    int n, r, d, key;
    float *qkv, *wo, *g, *pos, *u, *v, *dy; /* host, the checked sequences' */
    void *d_qkv, *d_wo, *d_pos, *d_dy, *d_y, *d_dqkv;
    float *d_g, *d_u, *d_v, *d_dwo, *d_vec, *d_dp; /* d_vec: dg, du, dv */
} mla;

static mla *mla_inputs(tt_unit *u)
{
    const tt_model_spec *m = &u->s->model;
    mla *a = u->h = tt_xcalloc(1, sizeof *a);
    a->n = m->seq_len, a->r = m->rank, a->d = m->d_model, a->key = m->position == TT_POS_KEY;
    const int n = a->n, r = a->r, d = a->d, bf = u->bf16;
    const size_t nq = (size_t)u->check * n * 3 * r, nw = (size_t)d * n * n, nr = (size_t)n * r;
    a->qkv = host_randn(u, nq, 1.f, 1, bf);
    a->wo = host_randn(u, nw, 0.05f, 2, bf);
    const float *theta = host_randn(u, 2 * (size_t)r, 1.f, 3, 0);
    a->g = keep_host(u, tt_xmalloc((size_t)r * 4));
    cpu_core_fwd(a->g, theta, 2, r);
    a->pos = host_randn(u, nr, 1.f, 4, bf);
    a->u = host_randn(u, r, 0.5f, 5, 0);
    a->v = host_randn(u, r, 0.5f, 6, 0);
    a->d_qkv = dev_repeated(u, a->qkv, nq, (size_t)u->batch * n * 3 * r, bf);
    a->d_wo = dev_repeated(u, a->wo, nw, nw, bf);
    a->d_g = dev_repeated(u, a->g, r, r, 0);
    if (a->key) {
        a->d_pos = dev_repeated(u, a->pos, nr, nr, bf);
        a->d_u = dev_repeated(u, a->u, r, r, 0);
        a->d_v = dev_repeated(u, a->v, r, r, 0);
    }
    snprintf(u->about, sizeof u->about, " at batch %d, checked against the CPU at batch %d", u->batch,
             u->check);
    return a;
}

static cpu_mla_shape mla_shape(const tt_unit *u)
{
    const mla *a = u->h;
    return (cpu_mla_shape){u->check, a->n, a->r, a->d, u->s->model.causal};
}

static void mla_fwd_init(tt_unit *u, const tt_unit_opts *o)
{
    (void)o;
    mla *a = mla_inputs(u);
    a->d_y = dev_buffer(u, (size_t)u->rows * a->d * storage_size(u->bf16));
    add_output(u, "y", a->d_y, u->bf16, u->rows_check, a->d, a->d, a->n, TOL_STORED);
}

static void mla_fwd_twin(const tt_unit *u, float *const *want)
{
    const mla *a = u->h;
    const int key = a->key;
    cpu_mla_fwd(want[0], a->qkv, a->g, a->wo, key ? a->pos : NULL, key ? a->u : NULL,
                key ? a->v : NULL, mla_shape(u));
}

static void mla_fwd_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    const mla *a = u->h;
    tt_mla_fwd(p, gpu->stream, a->d_y, a->d_qkv, a->d_g, a->d_wo, a->d_pos, a->d_u, a->d_v,
               u->scratch, check ? u->check : u->batch, a->n, a->r, a->d);
}

/* The floors (see output) of dg, du, dv and dP, into floor[0..3]: the root-sum-square of each
 * checked sequence's own gradient, from the twin once per sequence. Only where more than one
 * sequence is checked: with one, its part is the sum, and the twin's second pass would buy
 * nothing. */
static void mla_sum_floors(const tt_unit *u, double floor[4])
{
    const mla *a = u->h;
    const int n = a->n, r = a->r, d = a->d, key = a->key;
    if (u->check < 2) return;
    cpu_mla_shape one = mla_shape(u);
    one.batch = 1;
    const size_t all = (size_t)3 * r + (size_t)n * r;
    float *part = tt_xmalloc(all * 4); /* dg, du, dv, dP: cpu_mla_bwd adds into them */
    for (int b = 0; b < u->check; b++) {
        memset(part, 0, all * 4);
        cpu_mla_bwd(NULL, part, NULL, key ? part + 3 * r : NULL, key ? part + r : NULL,
                    key ? part + 2 * r : NULL, a->dy + (size_t)b * n * d,
                    a->qkv + (size_t)b * n * 3 * r, a->g, a->wo, key ? a->pos : NULL,
                    key ? a->u : NULL, key ? a->v : NULL, one);
        for (size_t e = 0; e < all; e++)
            floor[e < (size_t)3 * r ? e / r : 3] += (double)part[e] * part[e];
    }
    free(part);
    for (int k = 0; k < 4; k++) floor[k] = sqrt(floor[k]);
}

/* The parameter gradients are added into: they start from random values, so that a kernel that
 * overwrote them would fail. */
/* dwo_added: dWo starts from random values (the fused kernels add into it); else it starts
 * poisoned (the materialized path writes it), so that an entry left unwritten fails. */
static void mla_bwd_outputs(tt_unit *u, bool dwo_added)
{
    mla *a = mla_inputs(u);
    const int n = a->n, r = a->r, d = a->d, bf = u->bf16;
    const size_t ny = (size_t)u->rows_check * d, nw = (size_t)d * n * n, es = storage_size(bf);
    a->dy = host_randn(u, ny, 1.f, 7, bf);
    a->d_dy = dev_repeated(u, a->dy, ny, (size_t)u->rows * d, bf);
    const float *dwo0 = host_randn(u, nw, 0.1f, 8, 0), *vec0 = host_randn(u, 3 * (size_t)r, 0.1f, 9, 0);
    a->d_dqkv = dev_buffer(u, (size_t)u->rows * 3 * r * es);
    a->d_dwo = dev_buffer(u, nw * 4);
    a->d_vec = dev_buffer(u, 3 * (size_t)r * 4);
    double floor[4] = {0}; /* dg, du, dv, dP */
    mla_sum_floors(u, floor);
    add_output(u, "dqkv", a->d_dqkv, bf, u->rows_check, 3 * r, 3 * r, n, TOL_STORED);
    output *out = add_output(u, "dwo", a->d_dwo, 0, d, (long)n * n, (long)n * n, 0, TOL_MMA);
    out->mma = "mla_bwd_wo", out->start = dwo_added ? dwo0 : NULL;
    out = add_output(u, "dg", a->d_vec, 0, 1, r, r, 0, TOL_MMA);
    out->mma = "mla_bwd_q", out->start = vec0, out->floor = floor[0];
    if (!a->key) return;
    a->d_dp = dev_buffer(u, (size_t)n * r * 4);
    out = add_output(u, "dp", a->d_dp, 0, n, r, r, 0, TOL_MMA);
    out->mma = "mla_bwd_q", out->floor = floor[3];
    out = add_output(u, "du", a->d_vec + r, 0, 1, r, r, 0, TOL_MMA);
    out->mma = "mla_bwd_q", out->start = vec0 + r, out->floor = floor[1];
    out = add_output(u, "dv", a->d_vec + 2 * r, 0, 1, r, r, 0, TOL_MMA);
    out->mma = "mla_bwd_q", out->start = vec0 + 2 * r, out->floor = floor[2];
}

static void mla_bwd_init(tt_unit *u, const tt_unit_opts *o)
{
    (void)o;
    mla_bwd_outputs(u, true);
}

static void mla_bwd_twin(const tt_unit *u, float *const *want)
{
    const mla *a = u->h;
    const int key = a->key;
    cpu_mla_bwd(want[0], want[2], want[1], key ? want[3] : NULL, key ? want[4] : NULL,
                key ? want[5] : NULL, a->dy, a->qkv, a->g, a->wo, key ? a->pos : NULL,
                key ? a->u : NULL, key ? a->v : NULL, mla_shape(u));
}

/* dWo's kernels on the side stream, as the trainer runs them */
static void mla_bwd_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    const mla *a = u->h;
    const int key = a->key, r = a->r;
    tt_mla_bwd(p, gpu->stream, &gpu->side, a->d_dqkv, a->d_dwo, a->d_dp, a->d_vec,
               key ? a->d_vec + r : NULL, key ? a->d_vec + 2 * r : NULL, u->scratch, a->d_dy,
               a->d_qkv, a->d_g, a->d_wo, a->d_pos, a->d_u, a->d_v, check ? u->check : u->batch,
               a->n, r, a->d);
}

static size_t mla_scratch(const tt_unit *u, const tt_gpu_program *p)
{
    return tt_mla_scratch_floats(p, u->batch);
}

/* The attention with T materialized (templates/mla_mat.cu, gpu/mla_mat.c): the fused units'
 * inputs, twins and outputs; the run through a tt_gemm of its own (no workspace, no tuning
 * cache: cuBLASLt's heuristic algorithms) with the buffers in the scratch. */
static void mla_mat_fwd_init(tt_unit *u, const tt_unit_opts *o)
{
    mla_fwd_init(u, o);
    u->rounded = u->s->train.precision == TT_PREC_TF32;
}

static void mla_mat_bwd_init(tt_unit *u, const tt_unit_opts *o)
{
    (void)o;
    mla_bwd_outputs(u, false); /* tt_mla_mat_bwd writes dWo */
    u->rounded = u->s->train.precision == TT_PREC_TF32;
}

/* The buffers' floats, for the whole batch, in whole 256-byte blocks: then (where mla_bwd_q
 * reads dT) its partials, which mla_bwd_reduce reads by 16 bytes */
static size_t mla_mat_bufs_floats(const tt_unit *u)
{
    const tt_model_spec *m = &u->s->model;
    tt_mla_mat_bufs b;
    const size_t bytes = tt_mla_mat_carve(&b, NULL, u->batch, m->seq_len, m->rank, m->d_model,
                                          m->position == TT_POS_KEY, storage_size(u->bf16));
    return (bytes + 255) / 256 * 64;
}
/* mla_bwd_q's partials where it reads dT (after the buffers in the scratch) */
static float *mat_part(const tt_unit *u) { return (float *)u->scratch + mla_mat_bufs_floats(u); }

static tt_mla_mat_bufs mat_bufs(const tt_unit *u, bool check)
{
    const mla *a = u->h;
    tt_mla_mat_bufs b;
    tt_mla_mat_carve(&b, u->scratch, check ? u->check : u->batch, a->n, a->r, a->d, a->key,
                     storage_size(u->bf16));
    return b;
}

static void mla_mat_fwd_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu,
                            bool check)
{
    const mla *a = u->h;
    tt_gemm gm;
    tt_gemm_init(&gm, gpu, u->s->train.precision);
    const tt_mla_mat_bufs b = mat_bufs(u, check);
    tt_mla_mat_fwd(p, &gm, gpu->stream, a->d_y, a->d_qkv, a->d_g, a->d_wo, a->d_pos, a->d_u,
                   a->d_v, &b, check ? u->check : u->batch, a->n, a->r, a->d, NULL);
    TT_CUDA(cudaStreamSynchronize(gpu->stream));
    tt_gemm_free(&gm);
}

static void mla_mat_bwd_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu,
                            bool check)
{
    const mla *a = u->h;
    const int key = a->key, r = a->r;
    tt_gemm gm;
    tt_gemm_init(&gm, gpu, u->s->train.precision);
    const tt_mla_mat_bufs b = mat_bufs(u, check);
    tt_mla_mat_bwd(p, &gm, gpu->stream, a->d_dqkv, a->d_dwo, a->d_dp, a->d_vec,
                   key ? a->d_vec + r : NULL, key ? a->d_vec + 2 * r : NULL, a->d_dy, a->d_qkv,
                   a->d_g, a->d_wo, a->d_pos, a->d_u, a->d_v, &b, mat_part(u), false,
                   check ? u->check : u->batch, a->n, r, a->d, NULL);
    TT_CUDA(cudaStreamSynchronize(gpu->stream));
    tt_gemm_free(&gm);
}

static size_t mla_mat_scratch(const tt_unit *u, const tt_gpu_program *p)
{
    return mla_mat_bufs_floats(u) + tt_mla_scratch_floats(p, u->batch);
}

/* --- LayerNorm fused with the residual and dropout (templates/layernorm.cu, colsum.cu) -------- */

typedef struct {
    int d;
    long ld, rows;                      /* rows checked */
    float *x, *y, *dout, *gamma, *beta; /* host inputs */
    float *sum, *mean, *rstd;           /* the twin's forward: the backward's inputs */
    uint8_t *mask;
    void *d_x, *d_y, *d_out, *d_sum, *d_s, *d_dout, *d_dx, *d_dy;
    float *d_gamma, *d_beta, *d_mean, *d_rstd, *d_dgb;
} ln;

static ln *ln_inputs(tt_unit *u, const tt_unit_opts *o)
{
    ln *l = u->h = tt_xcalloc(1, sizeof *l);
    l->d = u->s->model.d_model, l->ld = d_pitch(u, o->ld_pad);
    l->rows = u->rows_check + o->tail_rows;
    const size_t nd = (size_t)l->rows * l->d;
    const int bf = u->bf16;
    l->x = host_randn(u, nd, 1.5f, 11, 0);
    for (size_t i = 0; i < nd; i++) l->x[i] += 0.3f; /* a mean to remove */
    tt_round_storage(l->x, nd, bf);
    l->y = host_randn(u, nd, 1.f, 12, bf);
    l->dout = host_randn(u, nd, 1.f, 13, bf);
    l->gamma = host_randn(u, l->d, 0.5f, 14, 0);
    l->beta = host_randn(u, l->d, 0.5f, 15, 0);
    for (int i = 0; i < l->d; i++) l->gamma[i] += 1.f;
    l->d_gamma = dev_repeated(u, l->gamma, l->d, l->d, 0);
    l->d_beta = dev_repeated(u, l->beta, l->d, l->d, 0);
    unit_dropout(u, u->s->model.dropout, 3);
    about(u, l->rows, u->rows, " on %ld rows of %d", u->rows, l->d);
    return l;
}

/* s = x + dropout(y), rounded as the device stores it, and out = LayerNorm(s) */
static void ln_forward(const tt_unit *u, const ln *l, float *out, float *sum, float *mean,
                       float *rstd, uint8_t *mask)
{
    const size_t nd = (size_t)l->rows * l->d;
    tt_cpu_dropout(sum, mask, l->y, (long)nd, u->drop);
    for (size_t i = 0; i < nd; i++) sum[i] += l->x[i];
    tt_round_storage(sum, nd, u->bf16);
    cpu_layernorm_fwd(out, mean, rstd, sum, l->gamma, l->beta, (int)l->rows, l->d);
}

/* The device's x, y and outputs of a residual forward, with the outputs declared. */
static void ln_fwd_init_buffers(tt_unit *u, ln *l)
{
    const long rows = l->rows, all = max_rows(u->rows, rows), d = l->d, ld = l->ld;
    const int bf = u->bf16;
    l->d_x = dev_rows(u, l->x, rows, d, ld, all, bf);
    l->d_y = dev_rows(u, l->y, rows, d, ld, all, bf);
    l->d_out = dev_buffer(u, (size_t)all * ld * storage_size(bf));
    l->d_sum = dev_buffer(u, (size_t)all * ld * storage_size(bf));
    l->d_mean = dev_buffer(u, (size_t)all * 4);
    l->d_rstd = dev_buffer(u, (size_t)all * 4);
    const int n = u->s->model.seq_len;
    add_output(u, "out", l->d_out, bf, rows, d, ld, n, TOL_STORED);
    add_output(u, "sum", l->d_sum, bf, rows, d, ld, n, TOL_SUM);
    add_output(u, "mean", l->d_mean, 0, rows, 1, 1, 0, TOL_FP32);
    add_output(u, "rstd", l->d_rstd, 0, rows, 1, 1, 0, TOL_FP32);
}

static void ln_fwd_init(tt_unit *u, const tt_unit_opts *o) { ln_fwd_init_buffers(u, ln_inputs(u, o)); }

static void ln_fwd_twin(const tt_unit *u, float *const *want)
{
    ln_forward(u, u->h, want[0], want[1], want[2], want[3], NULL);
}

static void ln_fwd_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    const ln *l = u->h;
    tt_residual_ln_fwd(p, gpu->stream, l->d_out, l->d_sum, l->d_mean, l->d_rstd, l->d_x, l->d_y,
                       l->d_gamma, l->d_beta, (int)(check ? l->rows : u->rows), l->d, (int)l->ld,
                       u->drop);
}

/* mla_residual_ln_fwd: y is the sum of the attention's parts (random fp32 here, [JP][batch][N][D]
 * over every row the timed batch has), which the twin adds in part order and rounds to the
 * storage type before ln_forward, as mla_fwd_sum does before residual_ln_fwd. */
typedef struct {
    ln l; /* first: ln_fwd_twin reads it */
    float *d_part;
    int batch;
} mln;

static void mln_fwd_init(tt_unit *u, const tt_unit_opts *o)
{
    ln *base = ln_inputs(u, o);
    mln *ml = tt_xcalloc(1, sizeof *ml);
    ml->l = *base;
    free(base);
    u->h = ml;
    ln *l = &ml->l;
    ln_fwd_init_buffers(u, l);
    const int n = u->s->model.seq_len, d = l->d, causal = u->s->model.causal, jp = (n + 15) / 16;
    const long all = max_rows(u->rows, l->rows);
    ml->batch = (int)((all + n - 1) / n);
    const size_t stride = (size_t)ml->batch * n * d, np = (size_t)jp * stride;
    float *part = host_randn(u, np, 0.5f, 16, 0);
    for (long r = 0; r < l->rows; r++) {
        const int parts = tt_mla_parts((int)(r % n) / 16, n, causal, 16, 16);
        for (int c = 0; c < d; c++) {
            float y = 0.f;
            for (int k = 0; k < parts; k++) y += part[(size_t)k * stride + (size_t)r * d + c];
            l->y[(size_t)r * d + c] = y;
        }
    }
    tt_round_storage(l->y, (size_t)l->rows * d, u->bf16);
    ml->d_part = dev_copies(u, part, np * 4, np * 4);
}

static void mln_fwd_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    const mln *ml = u->h;
    const ln *l = &ml->l;
    tt_mla_residual_ln_fwd(p, gpu->stream, l->d_out, l->d_sum, l->d_mean, l->d_rstd, l->d_x,
                           ml->d_part, ml->batch, l->d_gamma, l->d_beta,
                           (int)(check ? l->rows : u->rows), l->d, (int)l->ld, u->drop);
}

/* The backward reads the twin's s and statistics, so that only its kernels are under test. */
static void ln_bwd_init(tt_unit *u, const tt_unit_opts *o)
{
    ln *l = ln_inputs(u, o);
    const long rows = l->rows, all = max_rows(u->rows, rows), d = l->d, ld = l->ld;
    const size_t nd = (size_t)rows * d;
    const int bf = u->bf16;
    float *out = tt_xmalloc(nd * 4);
    l->sum = keep_host(u, tt_xmalloc(nd * 4));
    l->mean = keep_host(u, tt_xmalloc((size_t)rows * 4));
    l->rstd = keep_host(u, tt_xmalloc((size_t)rows * 4));
    l->mask = keep_host(u, tt_xmalloc(nd));
    ln_forward(u, l, out, l->sum, l->mean, l->rstd, l->mask);
    free(out);
    l->d_s = dev_rows(u, l->sum, rows, d, ld, all, bf);
    l->d_dout = dev_rows(u, l->dout, rows, d, ld, all, bf);
    l->d_mean = dev_repeated(u, l->mean, rows, all, 0);
    l->d_rstd = dev_repeated(u, l->rstd, rows, all, 0);
    l->d_dx = dev_buffer(u, (size_t)all * ld * storage_size(bf));
    l->d_dy = dev_buffer(u, (size_t)all * ld * storage_size(bf));
    l->d_dgb = dev_buffer(u, 3 * (size_t)d * 4);
    const int n = u->s->model.seq_len;
    add_output(u, "dx", l->d_dx, bf, rows, d, ld, n, TOL_STORED);
    add_output(u, "dy", l->d_dy, bf, rows, d, ld, n, TOL_STORED);
    add_output(u, "dgamma", l->d_dgb, 0, 1, d, d, 0, TOL_FP32);
    add_output(u, "dbeta", l->d_dgb + d, 0, 1, d, d, 0, TOL_FP32);
    add_output(u, "dbias", l->d_dgb + 2 * d, 0, 1, d, d, 0, TOL_FP32);
}

/* dbias: the sum of dy's rows in fp32 (the bias gradient of the product whose output y is:
 * cpu_linear_bwd's db), dy not rounded to the storage type first */
static void ln_bwd_twin(const tt_unit *u, float *const *want)
{
    const ln *l = u->h;
    cpu_layernorm_bwd(want[0], want[2], want[3], l->dout, l->sum, l->mean, l->rstd, l->gamma,
                      (int)l->rows, l->d);
    cpu_dropout_bwd(want[1], want[0], l->mask, l->rows * l->d, u->drop.p);
    cpu_linear_bwd(NULL, NULL, want[4], want[1], NULL, NULL, (int)l->rows, 1, l->d);
}

static void ln_bwd_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    const ln *l = u->h;
    tt_residual_ln_bwd(p, gpu->stream, l->d_dx, l->d_dy, l->d_dgb, l->d_dgb + l->d,
                       l->d_dgb + 2 * l->d, u->scratch, l->d_dout, l->d_s, l->d_mean, l->d_rstd, l->d_gamma,
                       (int)(check ? l->rows : u->rows), l->d, (int)l->ld, u->drop);
}

static size_t ln_bwd_scratch(const tt_unit *u, const tt_gpu_program *p)
{
    const ln *l = u->h;
    return 3 * (size_t)tt_layernorm_bwd_parts(p, (int)max_rows(u->rows, l->rows)) * l->d;
}

/* --- the FFN's activation (templates/ffn_act.cu, colsum.cu) ----------------------------------- */

/* In place, as the trainer runs it: hd over z, dz over dhd. */
typedef struct {
    int f, ld;
    long rows;                 /* rows checked */
    float *z, *b1, *dhd, *h;   /* host inputs; h: relu's output as stored (the CPU's relu_bwd
                                * reads it) */
    uint8_t *mask;
    void *d_z, *d_hd, *d_dhd;
    float *d_b1, *d_db1;
} ffn;

static ffn *ffn_inputs(tt_unit *u, const tt_unit_opts *o)
{
    ffn *a = u->h = tt_xcalloc(1, sizeof *a);
    a->f = u->s->model.d_inner, a->ld = (int)tt_row_pitch(a->f);
    a->rows = u->rows_check + o->tail_rows;
    const size_t nf = (size_t)a->rows * a->f;
    a->z = host_randn(u, nf, 1.f, 31, u->bf16);
    a->b1 = host_randn(u, a->f, 0.5f, 32, 0);
    a->dhd = host_randn(u, nf, 1.f, 33, u->bf16);
    a->d_b1 = dev_repeated(u, a->b1, a->f, a->f, 0);
    unit_dropout(u, u->s->model.dropout, 7);
    about(u, a->rows, u->rows, " on %ld rows of %d", u->rows, a->f);
    return a;
}

/* h = relu(z + b1), hd = dropout(h); both rounded as the device stores them */
static void ffn_forward(const tt_unit *u, const ffn *a, float *h, float *hd, uint8_t *mask)
{
    const size_t nf = (size_t)a->rows * a->f;
    for (size_t i = 0; i < nf; i++) h[i] = a->z[i] + a->b1[i % a->f];
    cpu_relu_fwd(h, h, (long)nf);
    tt_cpu_dropout(hd, mask, h, (long)nf, u->drop);
    tt_round_storage(h, nf, u->bf16);
    tt_round_storage(hd, nf, u->bf16);
}

static void ffn_fwd_init(tt_unit *u, const tt_unit_opts *o)
{
    ffn *a = ffn_inputs(u, o);
    const long all = max_rows(u->rows, a->rows);
    const int bf = u->bf16, n = u->s->model.seq_len;
    a->d_z = dev_rows(u, a->z, a->rows, a->f, a->ld, all, bf);
    add_output(u, "hd", a->d_z, bf, a->rows, a->f, a->ld, n, TOL_STORED)->start = a->z;
}

static void ffn_fwd_twin(const tt_unit *u, float *const *want)
{
    const ffn *a = u->h;
    float *h = tt_xmalloc((size_t)a->rows * a->f * 4);
    ffn_forward(u, a, h, want[0], NULL);
    free(h);
}

static void ffn_fwd_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    const ffn *a = u->h;
    tt_ffn_act_fwd(p, gpu->stream, a->d_z, a->d_z, a->d_b1, (int)(check ? a->rows : u->rows), a->f,
                   a->ld, u->drop);
}

/* The backward's input is the forward's hd (as the device stores it); its twin is the CPU's
 * mask and relu_bwd on the stored h, which the kernel never sees. */
static void ffn_bwd_init(tt_unit *u, const tt_unit_opts *o)
{
    ffn *a = ffn_inputs(u, o);
    const long all = max_rows(u->rows, a->rows);
    const size_t nf = (size_t)a->rows * a->f;
    const int bf = u->bf16, n = u->s->model.seq_len;
    float *hd = tt_xmalloc(nf * 4);
    a->h = keep_host(u, tt_xmalloc(nf * 4));
    a->mask = keep_host(u, tt_xmalloc(nf));
    ffn_forward(u, a, a->h, hd, a->mask);
    a->d_hd = dev_rows(u, hd, a->rows, a->f, a->ld, all, bf);
    free(hd);
    a->d_dhd = dev_rows(u, a->dhd, a->rows, a->f, a->ld, all, bf);
    a->d_db1 = dev_buffer(u, (size_t)a->f * 4);
    add_output(u, "dz", a->d_dhd, bf, a->rows, a->f, a->ld, n, TOL_STORED)->start = a->dhd;
    add_output(u, "db1", a->d_db1, 0, 1, a->f, a->f, 0, TOL_FP32);
}

static void ffn_bwd_twin(const tt_unit *u, float *const *want)
{
    const ffn *a = u->h;
    const long nf = a->rows * a->f;
    cpu_dropout_bwd(want[0], a->dhd, a->mask, nf, u->drop.p);
    cpu_relu_bwd(want[0], want[0], a->h, nf);
    cpu_linear_bwd(NULL, NULL, want[1], want[0], NULL, NULL, (int)a->rows, 1, a->f);
}

static void ffn_bwd_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    const ffn *a = u->h;
    tt_ffn_act_bwd(p, gpu->stream, a->d_dhd, a->d_db1, u->scratch, a->d_dhd, a->d_hd,
                   (int)(check ? a->rows : u->rows), a->f, a->ld, u->drop.p);
}

static size_t ffn_bwd_scratch(const tt_unit *u, const tt_gpu_program *p)
{
    (void)u;
    return tt_ffn_act_bwd_part_floats(p);
}

/* --- the adaptive head's cluster columns (templates/cluster_cols.cu) --------------------------- */

/* As the trainer runs them: x [rows, D] rows ld apart (the head's input), Wc [NC, D], bc [NC] as
 * the storage-type copies; y and dy [rows, NC] rows NC + 3 apart (a slice of the logits: the
 * padding must stay untouched); the backward adds into dx and the fp32 gradients, which start
 * random. */
typedef struct {
    int d, nc, ldy;
    long ld, rows;                        /* rows checked */
    float *x, *w, *b, *dy, *dx0, *dw0, *db0; /* host */
    void *d_x, *d_w, *d_b, *d_y, *d_dy, *d_dx;
    float *d_dw, *d_db;
} clu;

static clu *clu_inputs(tt_unit *u, const tt_unit_opts *o)
{
    clu *a = u->h = tt_xcalloc(1, sizeof *a);
    const int bf = u->bf16;
    a->d = u->s->model.d_model, a->nc = u->s->model.n_cutoffs, a->ldy = a->nc + 3;
    a->ld = d_pitch(u, o->ld_pad);
    a->rows = u->rows_check + o->tail_rows;
    const long all = max_rows(u->rows, a->rows);
    a->x = host_randn(u, (size_t)a->rows * a->d, 1.f, 51, bf);
    a->w = host_randn(u, (size_t)a->nc * a->d, 1.f / sqrtf((float)a->d), 52, bf);
    a->b = host_randn(u, a->nc, 0.5f, 53, bf);
    a->d_x = dev_rows(u, a->x, a->rows, a->d, a->ld, all, bf);
    a->d_w = dev_rows(u, a->w, a->nc, a->d, a->d, 0, bf);
    a->d_b = dev_repeated(u, a->b, a->nc, a->nc, bf);
    about(u, a->rows, u->rows, " on %ld rows of %d, %d clusters", u->rows, a->d, a->nc);
    return a;
}

static void clu_fwd_init(tt_unit *u, const tt_unit_opts *o)
{
    clu *a = clu_inputs(u, o);
    const long all = max_rows(u->rows, a->rows);
    a->d_y = dev_buffer(u, (size_t)all * a->ldy * storage_size(u->bf16));
    add_output(u, "y", a->d_y, u->bf16, a->rows, a->nc, a->ldy, u->s->model.seq_len, TOL_STORED);
}

static void clu_fwd_twin(const tt_unit *u, float *const *want)
{
    const clu *a = u->h;
    for (long r = 0; r < a->rows; r++)
        for (int j = 0; j < a->nc; j++) {
            double s = a->b[j];
            for (int k = 0; k < a->d; k++) s += (double)a->x[(size_t)r * a->d + k] * a->w[(size_t)j * a->d + k];
            want[0][(size_t)r * a->nc + j] = (float)s;
        }
    tt_round_storage(want[0], (size_t)a->rows * a->nc, u->bf16);
}

static void clu_fwd_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    const clu *a = u->h;
    tt_cluster_cols_fwd(p, gpu->stream, a->d_y, a->ldy, a->d_x, (int)a->ld, a->d_w, a->d, a->d_b,
                        (int)(check ? a->rows : u->rows), a->nc, a->d);
}

static void clu_bwd_init(tt_unit *u, const tt_unit_opts *o)
{
    clu *a = clu_inputs(u, o);
    const long all = max_rows(u->rows, a->rows);
    const int bf = u->bf16, n = u->s->model.seq_len;
    a->dy = host_randn(u, (size_t)a->rows * a->nc, 1e-2f, 54, bf);
    a->dx0 = host_randn(u, (size_t)a->rows * a->d, 1e-2f, 55, bf);
    a->dw0 = host_randn(u, (size_t)a->nc * a->d, 1.f, 56, 0);
    a->db0 = host_randn(u, a->nc, 1.f, 57, 0);
    a->d_dy = dev_rows(u, a->dy, a->rows, a->nc, a->ldy, all, bf);
    a->d_dx = dev_rows(u, a->dx0, a->rows, a->d, a->ld, all, bf);
    a->d_dw = dev_buffer(u, (size_t)a->nc * a->d * 4);
    a->d_db = dev_buffer(u, (size_t)a->nc * 4);
    add_output(u, "dx", a->d_dx, bf, a->rows, a->d, a->ld, n, TOL_STORED)->start = a->dx0;
    add_output(u, "dWc", a->d_dw, 0, a->nc, a->d, a->d, 0, TOL_FP32)->start = a->dw0;
    add_output(u, "dbc", a->d_db, 0, 1, a->nc, a->nc, 0, TOL_FP32)->start = a->db0;
}

/* want holds the outputs' starts: the sums added in double */
static void clu_bwd_twin(const tt_unit *u, float *const *want)
{
    const clu *a = u->h;
    for (long r = 0; r < a->rows; r++)
        for (int k = 0; k < a->d; k++) {
            double s = 0;
            for (int j = 0; j < a->nc; j++) s += (double)a->dy[(size_t)r * a->nc + j] * a->w[(size_t)j * a->d + k];
            want[0][(size_t)r * a->d + k] += (float)s;
        }
    tt_round_storage(want[0], (size_t)a->rows * a->d, u->bf16);
    for (int j = 0; j < a->nc; j++) {
        double sb = 0;
        for (long r = 0; r < a->rows; r++) sb += a->dy[(size_t)r * a->nc + j];
        want[2][j] += (float)sb;
        for (int k = 0; k < a->d; k++) {
            double s = 0;
            for (long r = 0; r < a->rows; r++) s += (double)a->dy[(size_t)r * a->nc + j] * a->x[(size_t)r * a->d + k];
            want[1][(size_t)j * a->d + k] += (float)s;
        }
    }
}

static void clu_bwd_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    const clu *a = u->h;
    tt_cluster_cols_bwd(p, gpu->stream, a->d_dx, (int)a->ld, a->d_dw, a->d_db, u->scratch, a->d_dy,
                        a->ldy, a->d_x, a->d_w, a->d, (int)(check ? a->rows : u->rows), a->nc, a->d);
}

static size_t clu_bwd_scratch(const tt_unit *u, const tt_gpu_program *p)
{
    (void)u;
    return tt_cluster_cols_part_floats(p);
}

/* --- the cross-entropy of the head's logits (templates/xent.cu) ------------------------------- */

/* As training runs it: the losses, and the gradient over the logits in place. */
typedef struct {
    int v, ld;
    float eps, scale;
    float *logits; /* host, the checked rows' */
    int32_t *t;
    void *d_logits;
    float *d_loss, *d_nll;
    int32_t *d_t;
} xent;

static void xent_init(tt_unit *u, const tt_unit_opts *o)
{
    const tt_model_spec *m = &u->s->model;
    xent *a = u->h = tt_xcalloc(1, sizeof *a);
    const long vocab = o->vocab > 0 ? o->vocab : m->vocab;
    a->v = (int)(m->n_cutoffs ? m->cutoffs[0] + m->n_cutoffs : vocab);
    TT_ASSERT(a->v > 0);
    a->ld = (int)tt_row_pitch(a->v);
    a->eps = m->n_cutoffs ? 0.f : (float)u->s->train.label_smoothing;
    a->scale = 1.f / (float)u->rows;
    const long rows = u->rows_check;
    const size_t nl = (size_t)rows * a->v;
    a->logits = host_randn(u, nl, 2.f, 41, u->bf16);
    a->t = keep_host(u, tt_xmalloc((size_t)rows * 4));
    for (long r = 0; r < rows; r++) a->t[r] = (int32_t)(tt_uniform(u->seed, 42, (uint64_t)r) * a->v);
    a->d_logits = dev_rows(u, a->logits, rows, a->v, a->ld, u->rows, u->bf16);
    a->d_t = dev_copies(u, a->t, (size_t)rows * 4, (size_t)u->rows * 4);
    a->d_loss = dev_buffer(u, (size_t)u->rows * 4);
    a->d_nll = dev_buffer(u, (size_t)u->rows * 4);
    about(u, rows, u->rows, " on %ld rows of %d logits", u->rows, a->v);
    add_output(u, "loss", a->d_loss, 0, rows, 1, 1, 0, TOL_FP32);
    add_output(u, "nll", a->d_nll, 0, rows, 1, 1, 0, TOL_FP32);
    add_output(u, "dlogits", a->d_logits, u->bf16, rows, a->v, a->ld, m->seq_len, TOL_STORED)->start =
        a->logits;
}

static void xent_twin(const tt_unit *u, float *const *want)
{
    const xent *a = u->h;
    for (long r = 0; r < u->rows_check; r++) {
        double nll;
        want[0][r] = (float)cpu_cross_entropy(want[2] + (size_t)r * a->v, &nll,
                                              a->logits + (size_t)r * a->v, a->t + r, 1, a->v,
                                              a->eps, a->scale);
        want[1][r] = (float)nll;
    }
}

static void xent_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    const xent *a = u->h;
    tt_xent(p, gpu->stream, a->d_loss, a->d_nll, a->d_logits, a->d_t, NULL,
            (int)(check ? u->rows_check : u->rows), a->v, a->ld, a->eps, a->scale, true);
}

/* --- Transformer-XL's shift, mask, softmax and dropatt (templates/txl_softmax.cu) ------------- */

/* The twin's rows are in the reference's order (b, c, i); the GPU's head-major (c, b, i). */
typedef struct {
    int heads, n, m, k;
    long rows;                     /* rows checked: check x heads x n */
    float scale;
    float *ac, *bd, *dpd, *prob;   /* host, the reference's order; prob as stored */
    uint8_t *mask;
    float *d_ac, *d_bd, *d_dpd;
    void *d_prob, *d_pdrop, *d_dac, *d_dbd, *d_probc;
} txl_sm;

/* rows (b, c, i) of k values of the reference into the GPU's (c, b, i), or back */
static void head_major(float *dst, const float *src, int batch, int heads, int n, int k, bool back)
{
    for (int s = 0; s < batch; s++)
        for (int c = 0; c < heads; c++) {
            const size_t ref = ((size_t)s * heads + c) * n * k, gpu = ((size_t)c * batch + s) * n * k;
            memcpy(dst + (back ? ref : gpu), src + (back ? gpu : ref), (size_t)n * k * 4);
        }
}

/* x [rows, k] of the reference, head-major on the device, repeated over the batch's rows */
static float *txl_upload(tt_unit *u, const float *x, int bf16)
{
    const txl_sm *a = u->h;
    const size_t ne = (size_t)a->rows * a->k;
    float *hm = tt_xmalloc(ne * 4 + 1);
    head_major(hm, x, u->check, a->heads, a->n, a->k, false);
    float *d = dev_repeated(u, hm, ne, (size_t)u->batch * a->heads * a->n * a->k, bf16);
    free(hm);
    return d;
}

static txl_sm *txl_sm_inputs(tt_unit *u)
{
    const tt_model_spec *m = &u->s->model;
    txl_sm *a = u->h = tt_xcalloc(1, sizeof *a);
    a->heads = m->n_head, a->n = m->seq_len, a->m = m->mem_len, a->k = a->m + a->n;
    a->rows = (long)u->check * a->heads * a->n;
    a->scale = (float)(1.0 / sqrt((double)m->d_head));
    const size_t ne = (size_t)a->rows * a->k;
    a->ac = host_randn(u, ne, 2.f, 51, 0);
    a->bd = host_randn(u, ne, 2.f, 52, 0);
    unit_dropout(u, m->dropatt, 9);
    const long all = (long)u->batch * a->heads * a->n;
    about(u, a->rows, all, " on %ld rows of %d keys", all, a->k);
    return a;
}

static void txl_sm_outputs(tt_unit *u, const char *a_name, void **a_dev, const char *b_name, void **b_dev)
{
    const txl_sm *a = u->h;
    const size_t all = (size_t)u->batch * a->heads * a->n * a->k * storage_size(u->bf16);
    *a_dev = dev_buffer(u, all);
    *b_dev = dev_buffer(u, all);
    add_output(u, a_name, *a_dev, u->bf16, a->rows, a->k, a->k, a->n, TOL_STORED);
    add_output(u, b_name, *b_dev, u->bf16, a->rows, a->k, a->k, a->n, TOL_STORED);
}

/* prob, rounded as stored (the backward reads it), and pdrop = dropatt(prob) */
static void txl_sm_forward(const tt_unit *u, const txl_sm *a, float *prob, float *pdrop, uint8_t *mask)
{
    const size_t ne = (size_t)a->rows * a->k;
    cpu_txl_probs(prob, a->ac, a->bd, (int)a->rows, a->n, a->m, a->scale);
    tt_round_storage(prob, ne, u->bf16);
    tt_cpu_dropout(pdrop, mask, prob, (long)ne, u->drop);
}

static void txl_fwd_init(tt_unit *u, const tt_unit_opts *o)
{
    (void)o;
    txl_sm *a = txl_sm_inputs(u);
    a->d_ac = txl_upload(u, a->ac, 0);
    a->d_bd = txl_upload(u, a->bd, 0);
    txl_sm_outputs(u, "prob", &a->d_prob, "pdrop", &a->d_pdrop);
}

static void txl_fwd_twin(const tt_unit *u, float *const *want)
{
    const txl_sm *a = u->h;
    const size_t ne = (size_t)a->rows * a->k;
    float *prob = tt_xmalloc(ne * 4), *pdrop = tt_xmalloc(ne * 4);
    txl_sm_forward(u, a, prob, pdrop, NULL);
    head_major(want[0], prob, u->check, a->heads, a->n, a->k, false);
    head_major(want[1], pdrop, u->check, a->heads, a->n, a->k, false);
    free(prob), free(pdrop);
}

/* The backward reads the twin's prob, so that it stands alone. */
static void txl_bwd_init(tt_unit *u, const tt_unit_opts *o)
{
    (void)o;
    txl_sm *a = txl_sm_inputs(u);
    const size_t ne = (size_t)a->rows * a->k;
    a->dpd = host_randn(u, ne, 1.f, 53, 0);
    a->prob = keep_host(u, tt_xmalloc(ne * 4));
    a->mask = keep_host(u, tt_xmalloc(ne));
    float *pdrop = tt_xmalloc(ne * 4);
    txl_sm_forward(u, a, a->prob, pdrop, a->mask);
    free(pdrop);
    a->d_dpd = txl_upload(u, a->dpd, 0);
    a->d_probc = txl_upload(u, a->prob, u->bf16);
    txl_sm_outputs(u, "dac", &a->d_dac, "dbd", &a->d_dbd);
}

static void txl_bwd_twin(const tt_unit *u, float *const *want)
{
    const txl_sm *a = u->h;
    const size_t ne = (size_t)a->rows * a->k;
    float *dprob = tt_xmalloc(ne * 4), *dac = tt_xmalloc(ne * 4), *dbd = tt_xmalloc(ne * 4);
    cpu_dropout_bwd(dprob, a->dpd, a->mask, (long)ne, u->drop.p);
    cpu_txl_probs_bwd(dac, dbd, a->prob, dprob, (int)a->rows, a->n, a->m, a->scale);
    head_major(want[0], dac, u->check, a->heads, a->n, a->k, false);
    head_major(want[1], dbd, u->check, a->heads, a->n, a->k, false);
    free(dprob), free(dac), free(dbd);
}

static void txl_fwd_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    const txl_sm *a = u->h;
    tt_txl_softmax_fwd(p, gpu->stream, a->d_prob, a->d_pdrop, a->d_ac, a->d_bd,
                       check ? u->check : u->batch, a->heads, a->n, a->m, a->scale, u->drop);
}

static void txl_bwd_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    const txl_sm *a = u->h;
    tt_txl_softmax_bwd(p, gpu->stream, a->d_dac, a->d_dbd, a->d_dpd, a->d_probc,
                       check ? u->check : u->batch, a->heads, a->n, a->m, a->scale, u->drop);
}

/* --- Transformer-XL's attention fused (templates/txl_flash.cu) ---------------------------------- */

/* Inputs in the kernels' head-major padded layouts for the checked sequences ([H][check][rows][dp],
 * zero from d_head on), repeated over the batch; the twin works in the reference's order (b, c,
 * i) from the same rounded values, in double. */
typedef struct {
    int heads, n, m, k, dh, dp;
    float scale;
    float *qu, *qv, *kk, *v, *r, *dout; /* host, head-major, the checked sequences' */
    float *o, *lse;                      /* the twin's forward (o rounded as stored) */
    void *d_qu, *d_qv, *d_k, *d_v, *d_r, *d_dout, *d_o;
    float *d_lse;
    void *d_out[5];
} txl_fl;

/* [H][check][rows][dp] of rounded normals, zero past d_head */
static float *fl_input(tt_unit *u, const txl_fl *a, int rows, float std, uint64_t stream)
{
    const size_t nr = (size_t)a->heads * u->check * rows;
    float *x = host_randn(u, nr * a->dp, std, stream, u->bf16);
    for (size_t i = 0; i < nr; i++)
        for (int e = a->dh; e < a->dp; e++) x[i * a->dp + e] = 0.f;
    return x;
}

static void *fl_upload(tt_unit *u, const float *x, int rows, int heads_only)
{
    const txl_fl *a = u->h;
    const size_t n = (size_t)a->heads * (heads_only ? 1 : u->check) * rows * a->dp;
    const size_t all = (size_t)a->heads * (heads_only ? 1 : u->batch) * rows * a->dp;
    return dev_repeated(u, x, n, all, u->bf16);
}

/* Row i of sequence b, head c of a head-major [H][check][rows][dp] tensor */
static const float *fl_row(const tt_unit *u, const txl_fl *a, const float *x, int c, int b, int rows, int i)
{
    return x + (((size_t)c * u->check + b) * rows + i) * a->dp;
}

static double fl_dot(const float *x, const float *y, int n)
{
    double s = 0;
    for (int e = 0; e < n; e++) s += (double)x[e] * y[e];
    return s;
}

/* The probabilities of (b, c) [n][k] as cpu_txl_probs computes them (visible j <= m + i), their
 * dropped-out copy (the reference's flat order, as the kernels draw it), and each row's lse. */
static void fl_probs(const tt_unit *u, const txl_fl *a, int b, int c, float *prob, float *pdrop,
                     uint8_t *mask, float *lse)
{
    const int n = a->n, k = a->k;
    float *ac = tt_xmalloc((size_t)n * k * 4), *bd = tt_xmalloc((size_t)n * k * 4);
    for (int i = 0; i < n; i++) {
        const float *qu = fl_row(u, a, a->qu, c, b, n, i), *qv = fl_row(u, a, a->qv, c, b, n, i);
        for (int j = 0; j < k; j++) {
            ac[(size_t)i * k + j] = (float)fl_dot(qu, fl_row(u, a, a->kk, c, b, k, j), a->dh);
            bd[(size_t)i * k + j] = (float)fl_dot(qv, a->r + ((size_t)c * k + j) * a->dp, a->dh);
        }
        if (!lse) continue;
        double mx = -INFINITY, z = 0;
        for (int j = 0; j <= a->m + i; j++)
            mx = fmax(mx, ((double)ac[(size_t)i * k + j] + bd[(size_t)i * k + n - 1 - i + j]) * a->scale);
        for (int j = 0; j <= a->m + i; j++)
            z += exp(((double)ac[(size_t)i * k + j] + bd[(size_t)i * k + n - 1 - i + j]) * a->scale - mx);
        lse[i] = (float)(mx + log(z));
    }
    cpu_txl_probs(prob, ac, bd, n, n, a->m, a->scale);
    /* the dropout of rows (b, c, 0 .. n-1): elements from ((b H + c) n) k on of the site's stream */
    const size_t first = ((size_t)b * a->heads + c) * n * k, ne = (size_t)n * k;
    float *all = tt_xcalloc(first + ne, 4), *dall = tt_xmalloc((first + ne) * 4);
    uint8_t *mall = tt_xmalloc(first + ne);
    memcpy(all + first, prob, ne * 4);
    tt_cpu_dropout(dall, mall, all, (long)(first + ne), u->drop);
    memcpy(pdrop, dall + first, ne * 4);
    if (mask) memcpy(mask, mall + first, ne);
    free(all), free(dall), free(mall), free(ac), free(bd);
}

static txl_fl *fl_inputs(tt_unit *u)
{
    const tt_model_spec *m = &u->s->model;
    txl_fl *a = u->h = tt_xcalloc(1, sizeof *a);
    a->heads = m->n_head, a->n = m->seq_len, a->m = m->mem_len, a->k = a->m + a->n;
    a->dh = m->d_head, a->dp = (int)tt_row_pitch(m->d_head);
    a->scale = (float)(1.0 / sqrt((double)m->d_head));
    a->qu = fl_input(u, a, a->n, 1.f, 61);
    a->qv = fl_input(u, a, a->n, 1.f, 62);
    a->kk = fl_input(u, a, a->k, 1.f, 63);
    a->v = fl_input(u, a, a->k, 1.f, 64);
    a->r = host_randn(u, (size_t)a->heads * a->k * a->dp, 1.f, 65, u->bf16);
    for (size_t i = 0; i < (size_t)a->heads * a->k; i++)
        for (int e = a->dh; e < a->dp; e++) a->r[i * a->dp + e] = 0.f;
    a->d_qu = fl_upload(u, a->qu, a->n, 0);
    a->d_qv = fl_upload(u, a->qv, a->n, 0);
    a->d_k = fl_upload(u, a->kk, a->k, 0);
    a->d_v = fl_upload(u, a->v, a->k, 0);
    a->d_r = fl_upload(u, a->r, a->k, 1);
    unit_dropout(u, m->dropatt, 9);
    about(u, u->check, u->batch, " on %d sequences x %d heads of %d queries and %d keys", u->batch,
          a->heads, a->n, a->k);
    return a;
}

/* The twin's o [H][check][n][dp] (P' V, rounded as stored) and lse [H][check][n] */
static void fl_forward(const tt_unit *u, const txl_fl *a, float *o, float *lse)
{
    const int n = a->n, k = a->k;
    float *prob = tt_xmalloc((size_t)n * k * 4), *pdrop = tt_xmalloc((size_t)n * k * 4);
    for (int b = 0; b < u->check; b++)
        for (int c = 0; c < a->heads; c++) {
            const size_t row0 = ((size_t)c * u->check + b) * n;
            fl_probs(u, a, b, c, prob, pdrop, NULL, lse + row0);
            for (int i = 0; i < n; i++)
                for (int e = 0; e < a->dp; e++) {
                    double s = 0;
                    for (int j = 0; j < k; j++) s += (double)pdrop[(size_t)i * k + j] * fl_row(u, a, a->v, c, b, k, j)[e];
                    o[(row0 + i) * a->dp + e] = (float)s;
                }
        }
    free(prob), free(pdrop);
}

static void fl_fwd_init(tt_unit *u, const tt_unit_opts *o)
{
    (void)o;
    txl_fl *a = fl_inputs(u);
    const long rows = (long)a->heads * u->check * a->n, all = (long)a->heads * u->batch * a->n;
    a->d_out[0] = dev_buffer(u, (size_t)all * a->dp * storage_size(u->bf16));
    a->d_out[1] = dev_buffer(u, (size_t)all * 4);
    add_output(u, "o", a->d_out[0], u->bf16, rows, a->dp, a->dp, a->n, TOL_STORED);
    add_output(u, "lse", a->d_out[1], 0, rows, 1, 1, a->n, TOL_FP32);
}

static void fl_fwd_twin(const tt_unit *u, float *const *want)
{
    fl_forward(u, u->h, want[0], want[1]);
}

static void fl_fwd_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    const txl_fl *a = u->h;
    tt_txl_attn_fwd(p, gpu->stream, a->d_out[0], a->d_out[1], a->d_qu, a->d_qv, a->d_k, a->d_v,
                    a->d_r, check ? u->check : u->batch, a->heads, a->n, a->m, a->scale, u->drop);
}

/* The backward reads the twin's o and lse, so that it stands alone. It writes dq, dk, dv into
 * the projections' rows, here packed (q, k, v blocks H d_head apart) in rows padded by 8 that
 * must stay unwritten, and adds du, dv into values it starts from. */
#define FL_PAD 8

static void fl_bwd_init(tt_unit *u, const tt_unit_opts *o)
{
    (void)o;
    txl_fl *a = fl_inputs(u);
    const int n = a->n, k = a->k, m = a->m, H = a->heads, hd = H * a->dh;
    const size_t qrows = (size_t)H * u->check * n;
    a->dout = fl_input(u, a, n, 1.f, 66);
    a->o = keep_host(u, tt_xmalloc(qrows * a->dp * 4 + 1));
    a->lse = keep_host(u, tt_xmalloc(qrows * 4 + 1));
    fl_forward(u, a, a->o, a->lse);
    tt_round_storage(a->o, qrows * a->dp, u->bf16);
    a->d_dout = fl_upload(u, a->dout, n, 0);
    a->d_o = fl_upload(u, a->o, n, 0);
    a->d_lse = dev_repeated(u, a->lse, qrows, (size_t)H * u->batch * n, 0);
    const size_t es = storage_size(u->bf16);
    a->d_out[0] = dev_buffer(u, (size_t)u->batch * n * (3 * hd + FL_PAD) * es);
    add_output(u, "dqkv", a->d_out[0], u->bf16, (long)u->check * n, 3 * hd, 3 * hd + FL_PAD, n, TOL_STORED);
    a->d_out[1] = dev_buffer(u, (size_t)H * u->batch * n * (tt_row_pitch(k) + 8) * es);
    add_output(u, "dbd", a->d_out[1], u->bf16, (long)qrows, k, tt_row_pitch(k) + 8, n, TOL_STORED);
    a->d_out[2] = dev_buffer(u, 2 * (size_t)hd * 4);
    output *uv = add_output(u, "du|dv", a->d_out[2], 0, 2, hd, hd, 0, TOL_STORED);
    uv->start = host_randn(u, 2 * (size_t)hd, 1.f, 67, 0);
    if (m > 0) { /* the memory's rows of dk, dv */
        a->d_out[3] = dev_buffer(u, (size_t)u->batch * m * (2 * hd + FL_PAD) * es);
        add_output(u, "dkvm", a->d_out[3], u->bf16, (long)u->check * m, 2 * hd, 2 * hd + FL_PAD, m,
                   TOL_STORED);
    }
}

static void fl_bwd_twin(const tt_unit *u, float *const *want)
{
    const txl_fl *a = u->h;
    const int n = a->n, k = a->k, mm = a->m, dp = a->dp, dh = a->dh, hd = a->heads * dh;
    const size_t ne = (size_t)n * k;
    float *prob = tt_xmalloc(ne * 4), *pdrop = tt_xmalloc(ne * 4), *dpd = tt_xmalloc(ne * 4);
    float *dprob = tt_xmalloc(ne * 4), *dac = tt_xmalloc(ne * 4), *dbd = tt_xmalloc(ne * 4);
    uint8_t *mask = tt_xmalloc(ne);
    double *uv = tt_xcalloc(2 * (size_t)hd, sizeof(double));
    for (int b = 0; b < u->check; b++)
        for (int c = 0; c < a->heads; c++) {
            fl_probs(u, a, b, c, prob, pdrop, mask, NULL);
            for (int i = 0; i < n; i++)
                for (int j = 0; j < k; j++)
                    dpd[(size_t)i * k + j] = (float)fl_dot(fl_row(u, a, a->dout, c, b, n, i),
                                                           fl_row(u, a, a->v, c, b, k, j), dp);
            cpu_dropout_bwd(dprob, dpd, mask, (long)ne, u->drop.p);
            /* dS = P (dP - D) scale (cpu_txl_probs_bwd's), with D = sum_e dO o as the kernels
             * define it, from o as stored: sum_j P dP of the rounded forward. At bf16 the two
             * differ by o's rounding, which dS shows wherever dP - D cancels (a row's dominant
             * key), up to 5e-2 of small rows' norms at d_head 8 */
            memset(dac, 0, ne * 4), memset(dbd, 0, ne * 4);
            for (int i = 0; i < n; i++) {
                const size_t qi = ((size_t)c * u->check + b) * n + i;
                const double D = fl_dot(fl_row(u, a, a->dout, c, b, n, i), a->o + qi * dp, dp);
                for (int j = 0; j <= mm + i; j++) {
                    const float ds = (float)(prob[(size_t)i * k + j] * (dprob[(size_t)i * k + j] - D) * a->scale);
                    dac[(size_t)i * k + j] = ds;
                    dbd[(size_t)i * k + n - 1 - i + j] = ds;
                }
            }
            /* dS and P' enter their products as stored (bf16: rounded), as in either strategy */
            tt_round_storage(dac, ne, u->bf16);
            tt_round_storage(dbd, ne, u->bf16);
            tt_round_storage(pdrop, ne, u->bf16);
            for (int e = 0; e < dh; e++) {
                const int col = c * dh + e;
                for (int i = 0; i < n; i++) { /* dq = d(q + u) + d(q + v), and their sums */
                    double gu = 0, gv = 0;
                    for (int j = 0; j < k; j++) {
                        gu += (double)dac[(size_t)i * k + j] * fl_row(u, a, a->kk, c, b, k, j)[e];
                        gv += (double)dbd[(size_t)i * k + j] * a->r[((size_t)c * k + j) * dp + e];
                    }
                    want[0][((size_t)b * n + i) * 3 * hd + col] = (float)(gu + gv);
                    uv[col] += gu, uv[hd + col] += gv;
                }
                for (int j = 0; j < k; j++) { /* dk, dv: the memory's rows, then the segment's */
                    double gk = 0, gvv = 0;
                    for (int i = 0; i < n; i++) {
                        gk += (double)dac[(size_t)i * k + j] * fl_row(u, a, a->qu, c, b, n, i)[e];
                        gvv += (double)pdrop[(size_t)i * k + j] * fl_row(u, a, a->dout, c, b, n, i)[e];
                    }
                    float *row = j < mm ? want[3] + ((size_t)b * mm + j) * 2 * hd
                                        : want[0] + ((size_t)b * n + j - mm) * 3 * hd + hd;
                    row[col] = (float)gk;
                    row[hd + col] = (float)gvv;
                }
            }
            memcpy(want[1] + (((size_t)c * u->check + b) * n) * k, dbd, ne * 4);
        }
    for (int i = 0; i < 2 * hd; i++) want[2][i] += (float)uv[i];
    free(prob), free(pdrop), free(dpd), free(dprob), free(dac), free(dbd), free(mask), free(uv);
}

/* The scratch: the partial sums of du, dv, then dS between the two kernels (bf16), poisoned
 * before the check: an entry that txl_attn_bwd_q reads but txl_attn_bwd_kv did not write is NaN
 * in the gradients. */
static size_t fl_uvpart_floats(const tt_unit *u, const tt_gpu_program *p)
{
    const txl_fl *a = u->h;
    return (tt_txl_uv_part_floats(p, u->batch, a->heads, a->n) + 63) / 64 * 64; /* dS 256-byte aligned */
}

static size_t fl_bwd_scratch(const tt_unit *u, const tt_gpu_program *p)
{
    const txl_fl *a = u->h;
    return fl_uvpart_floats(u, p) + ((size_t)a->heads * u->batch * a->n * tt_txl_ds_pitch(a->k) * 2 + 3) / 4;
}

static void fl_bwd_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    const txl_fl *a = u->h;
    const int hd = a->heads * a->dh;
    const tt_qkv_rows lay = {3 * hd + FL_PAD, 2 * hd + FL_PAD, hd};
    float *du = a->d_out[2], *uvpart = u->scratch, *ds = uvpart + fl_uvpart_floats(u, p);
    tt_txl_attn_bwd(p, gpu->stream, a->d_out[0], a->m ? a->d_out[3] : NULL, lay, du, du + hd,
                    uvpart, a->d_out[1], (int)tt_row_pitch(a->k) + 8, ds, a->d_qu,
                    a->d_qv, a->d_k, a->d_v, a->d_r, a->d_o, a->d_dout, a->d_lse,
                    check ? u->check : u->batch, a->heads, a->n, a->m, a->scale, u->drop);
}


/* --- Transformer-XL's heads split out of the projections (templates/txl.cu) ------------------- */

/* The projections' rows as the trainer keeps them: q, k, v blocks of H d_head values, hl (H
 * d_head rounded up to whole 16-byte groups) apart, the gaps NaN (never read). */
typedef struct {
    int n, m, heads, dh, dp, hl;
    float *qkv, *kvm, *u, *vb; /* host, the checked sequences' */
    void *d_qkv, *d_kvm, *d_qu, *d_qv, *d_k, *d_v;
    float *d_u, *d_vb;
} heads;

/* rows of `blocks` blocks hl apart, hd values each, random (rounded) with NaN gaps */
static float *heads_rows(tt_unit *u, long rows, int blocks, int hd, int hl, uint64_t stream)
{
    float *x = host_randn(u, (size_t)rows * blocks * hl, 1.f, stream, u->bf16);
    for (long r = 0; r < rows; r++)
        for (int b = 0; b < blocks; b++)
            for (int c = hd; c < hl; c++) x[((size_t)r * blocks + b) * hl + c] = NAN;
    return x;
}

static void heads_init(tt_unit *u, const tt_unit_opts *o)
{
    (void)o;
    const tt_model_spec *m = &u->s->model;
    heads *a = u->h = tt_xcalloc(1, sizeof *a);
    a->n = m->seq_len, a->m = m->mem_len, a->heads = m->n_head, a->dh = m->d_head;
    a->dp = (int)tt_row_pitch(m->d_head);
    const int hd = a->heads * a->dh, bf = u->bf16, B = u->check, klen = a->m + a->n;
    a->hl = (int)tt_row_pitch(hd);
    a->qkv = heads_rows(u, (long)B * a->n, 3, hd, a->hl, 91);
    a->kvm = heads_rows(u, (long)B * a->m, 2, hd, a->hl, 92);
    a->u = host_randn(u, hd, 0.5f, 93, 0);
    a->vb = host_randn(u, hd, 0.5f, 94, 0);
    const size_t nq = (size_t)B * a->n * 3 * a->hl, nkv = (size_t)B * a->m * 2 * a->hl;
    a->d_qkv = dev_repeated(u, a->qkv, nq, nq / B * u->batch, bf);
    a->d_kvm = dev_repeated(u, a->kvm, nkv, nkv / B * u->batch, bf);
    a->d_u = dev_repeated(u, a->u, hd, hd, 0);
    a->d_vb = dev_repeated(u, a->vb, hd, hd, 0);
    about(u, B, u->batch, " for %d sequences of %d rows and %d of memory", u->batch, a->n, a->m);
    const size_t es = storage_size(bf), q_all = (size_t)a->heads * u->batch * a->n * a->dp;
    const size_t k_all = (size_t)a->heads * u->batch * klen * a->dp;
    a->d_qu = dev_buffer(u, q_all * es), a->d_qv = dev_buffer(u, q_all * es);
    a->d_k = dev_buffer(u, k_all * es), a->d_v = dev_buffer(u, k_all * es);
    const long qrows = (long)a->heads * B * a->n, krows = (long)a->heads * B * klen;
    add_output(u, "qu", a->d_qu, bf, qrows, a->dp, a->dp, a->n, TOL_EXACT);
    add_output(u, "qv", a->d_qv, bf, qrows, a->dp, a->dp, a->n, TOL_EXACT);
    add_output(u, "k", a->d_k, bf, krows, a->dp, a->dp, klen, TOL_EXACT);
    add_output(u, "v", a->d_v, bf, krows, a->dp, a->dp, klen, TOL_EXACT);
}

/* [H][rows][DP], zero past d_head: moves, and one rounded sum */
static void heads_twin(const tt_unit *u, float *const *want)
{
    const heads *a = u->h;
    const int B = u->check, n = a->n, mm = a->m, H = a->heads, dh = a->dh, dp = a->dp, hl = a->hl;
    const int klen = mm + n;
    float *qu = want[0], *qv = want[1], *k = want[2], *v = want[3];
    for (int c = 0; c < H; c++)
        for (int b = 0; b < B; b++)
            for (int j = 0; j < klen; j++)
                for (int e = 0; e < dh; e++) {
                    const int col = c * dh + e;
                    const size_t at = (((size_t)c * B + b) * klen + j) * dp + e;
                    const float *src = j < mm ? a->kvm + ((size_t)b * mm + j) * 2 * hl
                                              : a->qkv + ((size_t)b * n + j - mm) * 3 * hl + hl;
                    k[at] = src[col], v[at] = src[hl + col];
                    if (j < mm) continue;
                    const size_t q = (((size_t)c * B + b) * n + j - mm) * dp + e;
                    const float x = a->qkv[((size_t)b * n + j - mm) * 3 * hl + col];
                    qu[q] = x + a->u[col], qv[q] = x + a->vb[col];
                }
    tt_round_storage(qu, (size_t)H * B * n * dp, u->bf16);
    tt_round_storage(qv, (size_t)H * B * n * dp, u->bf16);
}

static void heads_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    const heads *a = u->h;
    tt_txl_heads_qkv(p, gpu->stream, a->d_qu, a->d_qv, a->d_k, a->d_v, a->d_qkv,
                     a->m ? a->d_kvm : NULL, a->d_u, a->d_vb, check ? u->check : u->batch, a->n,
                     a->m, (tt_qkv_rows){3 * a->hl, 2 * a->hl, a->hl});
}

/* --- the embedding of one table (templates/embedding.cu) -------------------------------------- */

#define PATTERN ((size_t)1 << 20) /* floats repeated over a large device array (never zeros) */

typedef struct {
    int d, ld;
    long vocab;
    float *pattern; /* what every PATTERN floats of the table hold */
    int32_t *tok;   /* host, the checked rows' */
    float *d_emb;
    int32_t *d_tok;
    void *d_x0;
} emb;

static void emb_init(tt_unit *u, const tt_unit_opts *o)
{
    emb *a = u->h = tt_xcalloc(1, sizeof *a);
    a->d = u->s->model.d_model, a->ld = (int)d_pitch(u, o->ld_pad);
    a->vocab = o->vocab > 0 ? o->vocab : u->s->model.vocab;
    TT_ASSERT(a->vocab > 0);
    const long rows = u->rows_check;
    a->pattern = host_randn(u, PATTERN, 0.5f, 71, 0);
    a->d_emb = dev_repeated(u, a->pattern, PATTERN, (size_t)a->vocab * a->d, 0);
    a->tok = keep_host(u, tt_xmalloc((size_t)rows * 4));
    for (long r = 0; r < rows; r++) /* frequent words often, as text has them */
        a->tok[r] = (int32_t)((double)a->vocab * pow(tt_uniform(u->seed, 72, (uint64_t)r), 4.0));
    a->d_tok = dev_copies(u, a->tok, (size_t)rows * 4, (size_t)u->rows * 4);
    a->d_x0 = dev_buffer(u, (size_t)u->rows * a->ld * storage_size(u->bf16));
    unit_dropout(u, u->s->model.dropout, 0);
    about(u, rows, u->rows, " on %ld rows of %d from %ld words", u->rows, a->d, a->vocab);
    add_output(u, "x0", a->d_x0, u->bf16, rows, a->d, a->ld, u->s->model.seq_len, TOL_STORED);
}

static void emb_twin(const tt_unit *u, float *const *want)
{
    const emb *a = u->h;
    const size_t nd = (size_t)u->rows_check * a->d;
    float *e = tt_xmalloc((size_t)a->d * sizeof *e); /* the token's row of the repeated table */
    for (long r = 0; r < u->rows_check; r++) {
        for (int i = 0; i < a->d; i++) e[i] = a->pattern[((size_t)a->tok[r] * a->d + i) % PATTERN];
        cpu_embedding_row(want[0] + (size_t)r * a->d, e, a->d);
    }
    free(e);
    tt_cpu_dropout(want[0], NULL, want[0], (long)nd, u->drop);
}

static void emb_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    const emb *a = u->h;
    tt_embedding_fwd(p, gpu->stream, a->d_x0, a->d_emb, a->d_tok, (int)(check ? u->rows_check : u->rows),
                     a->d, a->ld, (int)a->vocab, u->drop);
}

/* --- a tail cluster's rows gathered (templates/adaptive.cu) ----------------------------------- */

/* Every fifth row listed (a tail's share of the rows), padded with -1 to the bucket, as
 * route_batch lists a cluster's rows; for the check's rows and for the batch's. */
typedef struct {
    int d, ld, count, count_all;
    float *x; /* host, the checked rows' */
    int32_t *idx;
    void *d_x, *d_xc;
    int32_t *d_idx, *d_idx_all;
} gather;

static int32_t *gather_list(tt_unit *u, long rows, int *count)
{
    const long listed = (rows + 4) / 5;
    *count = (int)((listed + TT_ADAPTIVE_BUCKET - 1) / TT_ADAPTIVE_BUCKET * TT_ADAPTIVE_BUCKET);
    int32_t *idx = keep_host(u, tt_xmalloc((size_t)*count * 4));
    for (int i = 0; i < *count; i++) idx[i] = i < listed ? 5 * i : -1;
    return idx;
}

static void gather_init(tt_unit *u, const tt_unit_opts *o)
{
    gather *a = u->h = tt_xcalloc(1, sizeof *a);
    a->d = u->s->model.d_model, a->ld = (int)d_pitch(u, o->ld_pad);
    const long rows = u->rows_check;
    a->x = host_randn(u, (size_t)rows * a->d, 1.f, 81, u->bf16);
    a->d_x = dev_rows(u, a->x, rows, a->d, a->ld, u->rows, u->bf16);
    a->idx = gather_list(u, rows, &a->count);
    const int32_t *all = gather_list(u, u->rows, &a->count_all);
    a->d_idx = dev_copies(u, a->idx, (size_t)a->count * 4, (size_t)a->count * 4);
    a->d_idx_all = dev_copies(u, all, (size_t)a->count_all * 4, (size_t)a->count_all * 4);
    a->d_xc = dev_buffer(u, (size_t)a->count_all * a->ld * storage_size(u->bf16));
    about(u, a->count, a->count_all, " on %d listed rows of %d", a->count_all, a->d);
    add_output(u, "xc", a->d_xc, u->bf16, a->count, a->d, a->ld, 0, TOL_EXACT);
}

/* the listed rows, zero rows for the padding */
static void gather_twin(const tt_unit *u, float *const *want)
{
    const gather *a = u->h;
    for (int i = 0; i < a->count; i++)
        if (a->idx[i] >= 0)
            memcpy(want[0] + (size_t)i * a->d, a->x + (size_t)a->idx[i] * a->d, (size_t)a->d * 4);
}

static void gather_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    const gather *a = u->h;
    tt_adaptive_gather(p, gpu->stream, a->d_xc, a->d_x, check ? a->d_idx : a->d_idx_all,
                       check ? a->count : a->count_all, a->d, a->ld);
}

/* --- Adam (templates/adam.cu) ------------------------------------------------------------------- */

#define ADAM_CHECK 100003 /* elements checked: odd, so that the vector loop's tail runs too */
#define ADAM_PADS 6

typedef struct {
    size_t n; /* elements timed */
    tt_train_spec t;
    float *w, *m, *v, *g;         /* host, ADAM_CHECK of each */
    float *w_ref, *m_ref, *v_ref; /* tt_adam_step's results */
    float *d_w, *d_m, *d_v, *d_g;
    void *d_copy; /* the storage type's copy of w (bf16 only, as the trainer) */
    tt_adam_scalars *d_sc;
    /* padded copies Adam writes (as the trainer's FFN weights): jobs whose sources are ranges of
     * the storage-type weights (d_copy, or d_w at fp32) among the checked elements */
    long long pads[ADAM_PADS][TT_COPY_FIELDS]; /* in tt_copy_jobs_for_adam's order, device addresses */
    long long *d_pads;
    const unsigned char *d_pad_src; /* the storage-type weights: d_copy, or d_w at fp32 */
    unsigned char *d_pad_dst;
    size_t pad_bytes;
} adam_in;

/* The padded copies' jobs (elements: source offset, columns, rows, destination pitch): unaligned
 * starts and widths (a group of four elements across two rows and across two jobs), two jobs
 * back to back (the search leaves one for the next), one in the scalar tail, one of the FFN's
 * row (16 rows of 2,100 in 2,104) and one of Transformer-XL's (410 in 416). Listed out of
 * order: the table is sorted as the trainer sorts it. */
static const long adam_pad_shape[ADAM_PADS][4] = {
    {40001, 41, 101, 48},   {1000, 210, 37, 216},        {1000 + 210 * 37, 64, 10, 72},
    {ADAM_CHECK - 65, 13, 5, 16}, {50003, 2100, 16, 2104}, {87001, 410, 30, 416},
};

static unsigned char adam_pad_before(size_t i) { return (unsigned char)(i * 29u + 3u); }

static void adam_init(tt_unit *u, const tt_unit_opts *o)
{
    adam_in *a = u->h = tt_xcalloc(1, sizeof *a);
    a->n = o->params > ADAM_CHECK ? (size_t)o->params : (size_t)1 << 24;
    a->t = u->s->train;
    const size_t c = ADAM_CHECK;
    a->w = host_randn(u, c, 0.02f, 21, 0);
    a->g = host_randn(u, c, 0.01f, 22, 0);
    a->m = host_randn(u, c, 0.01f, 23, 0);
    a->v = host_randn(u, c, 1e-4f, 24, 0);
    for (size_t i = 0; i < c; i++) a->v[i] = fabsf(a->v[i]);
    const long step = 7;
    const double lr = 2.5e-4;
    tt_adam_scalars host = {.clip = 1.0};
    tt_adam_scalars_at(&host, &a->t, lr, step);
    a->d_sc = dev_copies(u, &host, sizeof host, sizeof host);
    float **ref[] = {&a->w_ref, &a->m_ref, &a->v_ref};
    const float *from[] = {a->w, a->m, a->v};
    for (int i = 0; i < 3; i++) *ref[i] = keep_host(u, tt_xmalloc(c * 4)), memcpy(*ref[i], from[i], c * 4);
    tt_adam_step(a->w_ref, a->g, a->m_ref, a->v_ref, c, &a->t, lr, step);
    a->d_w = dev_repeated(u, a->w, c, a->n, 0);
    a->d_m = dev_repeated(u, a->m, c, a->n, 0);
    a->d_v = dev_repeated(u, a->v, c, a->n, 0);
    a->d_g = dev_repeated(u, a->g, c, a->n, 0);
    if (u->bf16) a->d_copy = dev_buffer(u, a->n * 2);
    const size_t es = storage_size(u->bf16);
    a->d_pad_src = a->d_copy ? (const unsigned char *)a->d_copy : (const unsigned char *)a->d_w;
    size_t at[ADAM_PADS];
    for (int j = 0; j < ADAM_PADS; j++) {
        at[j] = a->pad_bytes;
        a->pad_bytes += (size_t)(adam_pad_shape[j][2] * adam_pad_shape[j][3]) * es + 64;
    }
    a->d_pad_dst = dev_buffer(u, a->pad_bytes);
    for (int j = 0; j < ADAM_PADS; j++) {
        const long *sh = adam_pad_shape[j];
        TT_ASSERT(sh[0] + sh[1] * sh[2] <= (long)c);
        tt_copy_job(a->pads[j], a->d_pad_dst + at[j], (size_t)sh[3] * es,
                    a->d_pad_src + (size_t)sh[0] * es, (size_t)sh[1] * es, (size_t)sh[1] * es, sh[2]);
    }
    tt_copy_jobs_for_adam(&a->pads[0][0], ADAM_PADS); /* as the trainer orders its table */
    a->d_pads = dev_copies(u, a->pads, sizeof a->pads, sizeof a->pads);
    about(u, ADAM_CHECK, (long)a->n, " over %zu parameters, %d padded copies", a->n, ADAM_PADS);
}

static void adam_launch(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, size_t n)
{
    const adam_in *a = u->h;
    tt_adam(p, gpu->stream, a->d_w, a->d_m, a->d_v, a->d_copy, a->d_g, a->d_sc, NULL, n,
            &a->t, a->d_pads, ADAM_PADS);
}

static void adam_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    const adam_in *a = u->h;
    adam_launch(u, p, gpu, check ? ADAM_CHECK : a->n);
}

/* As the kernel test: w, m, v within one ulp of tt_adam_step's (the kernel does the CPU's
 * operations in its order), the copy the device's w rounded, exactly. */
static tt_unit_result adam_check(tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu)
{
    const adam_in *a = u->h;
    const size_t c = ADAM_CHECK;
    tt_unit_result r = {.whole.row = -1, .row.row = -1};
    float *dev[] = {a->d_w, a->d_m, a->d_v};
    const float *from[] = {a->w, a->m, a->v}, *want[] = {a->w_ref, a->m_ref, a->v_ref};
    static const char *const name[] = {"w", "m", "v"};
    for (int i = 0; i < 3; i++) TT_CUDA(cudaMemcpy(dev[i], from[i], c * 4, cudaMemcpyHostToDevice));
    if (a->d_copy) TT_CUDA(cudaMemset(a->d_copy, 0xff, c * 2));
    unsigned char *pad = tt_xmalloc(a->pad_bytes);
    for (size_t i = 0; i < a->pad_bytes; i++) pad[i] = adam_pad_before(i);
    TT_CUDA(cudaMemcpy(a->d_pad_dst, pad, a->pad_bytes, cudaMemcpyHostToDevice));
    TT_CUDA(cudaDeviceSynchronize());
    adam_run(u, p, gpu, true);
    TT_CUDA(cudaDeviceSynchronize());
    float *w = NULL;
    for (int i = 0; i < 3; i++) {
        float *got = tt_gpu_download(dev[i], c, 0);
        long most = 0;
        for (size_t e = 0; e < c; e++) {
            const long ulps = isfinite(got[e]) ? tt_ulps_apart(got[e], want[i][e]) : LONG_MAX / 2;
            if (ulps > most) most = ulps;
        }
        keep(&r, &r.whole, name[i], (double)most, 1, -1);
        if (i == 0) w = got;
        else free(got);
    }
    if (a->d_copy) {
        float *copy = tt_gpu_download(a->d_copy, c, 1);
        tt_round_storage(w, c, 1);
        for (size_t e = 0; e < c && !r.note[0]; e++)
            if (!(copy[e] == w[e])) {
                snprintf(r.note, sizeof r.note, "the bf16 copy of w[%zu] is %g, w rounded %g", e,
                         copy[e], w[e]);
                r.ratio = INFINITY;
            }
        free(copy);
    }
    free(w);
    /* each padded copy holds the bytes of its source rows (the storage-type w as the device
     * left it) at its pitch, and nothing else of the destination was written */
    const size_t es = storage_size(u->bf16);
    unsigned char *src = tt_xmalloc(c * es), *pwant = tt_xmalloc(a->pad_bytes);
    TT_CUDA(cudaMemcpy(src, a->d_pad_src, c * es, cudaMemcpyDeviceToHost));
    TT_CUDA(cudaMemcpy(pad, a->d_pad_dst, a->pad_bytes, cudaMemcpyDeviceToHost));
    for (size_t i = 0; i < a->pad_bytes; i++) pwant[i] = adam_pad_before(i);
    for (int j = 0; j < ADAM_PADS; j++) {
        const long long *q = a->pads[j];
        const size_t so = (size_t)((const unsigned char *)(uintptr_t)q[TT_COPY_SRC] - a->d_pad_src);
        const size_t dso = (size_t)((const unsigned char *)(uintptr_t)q[TT_COPY_DST] - a->d_pad_dst);
        for (long long row = 0; row < q[TT_COPY_ROWS]; row++)
            memcpy(pwant + dso + row * q[TT_COPY_DST_PITCH], src + so + row * q[TT_COPY_SRC_PITCH],
                   (size_t)q[TT_COPY_ROW_BYTES]);
    }
    size_t differ = 0;
    for (size_t i = 0; i < a->pad_bytes; i++)
        if (pad[i] != pwant[i] && !differ++ && !r.note[0])
            snprintf(r.note, sizeof r.note, "padded copies: byte %zu is 0x%02x, want 0x%02x (%s)", i,
                     pad[i], pwant[i], pwant[i] == adam_pad_before(i) ? "not to be written" : "a row's");
    if (differ) r.ratio = INFINITY;
    free(src);
    free(pwant);
    free(pad);
    return r;
}

/* --- fp32 to the storage type (templates/cast.cu), over the model's parameters ---------------- */

typedef struct {
    size_t n;
    float *pattern; /* what every PATTERN floats of the input hold */
    void *d_in;     /* fp32 (cast), the storage type (cast_widen) */
    void *d_out;
} cast_in;

static void cast_init(tt_unit *u, const tt_unit_opts *o)
{
    cast_in *a = u->h = tt_xcalloc(1, sizeof *a);
    a->n = o->params > 0 ? (size_t)o->params : (size_t)1 << 24;
    a->pattern = host_randn(u, PATTERN, 0.02f, 61, 0);
    /* and, every 97th element, one of the values whose rounding is easiest to get wrong: ties
     * (to the even below and above), subnormals and a subnormal tie, the overflow to infinity,
     * infinities, -0 and NaNs (quiet, signaling, negative: the CPU's quiet NaN bits) */
    static const uint32_t special[] = {0x3f808000u, 0x3f818000u, 0xbf818000u, 0x00000001u,
                                       0x00018000u, 0x007fffffu, 0x7f7fffffu, 0x7f800000u,
                                       0xff800000u, 0x80000000u, 0x7fc00000u, 0x7fa00000u,
                                       0x7f800001u, 0xffc12345u};
    for (size_t i = 0, k = 0; i < PATTERN; i += 97, k++)
        memcpy(&a->pattern[i], &special[k % (sizeof special / sizeof *special)], 4);
    a->d_in = dev_repeated(u, a->pattern, PATTERN, a->n, 0);
    a->d_out = dev_buffer(u, a->n * storage_size(u->bf16));
    about(u, (long)a->n, (long)a->n, " over %zu parameters", a->n);
}

static void cast_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    (void)check;
    const cast_in *a = u->h;
    tt_cast(p, gpu->stream, a->d_out, (const float *)a->d_in, (long)a->n);
}

/* every element, rounded as the CPU rounds (to nearest, ties to even; NaN the CPU's quiet NaN):
 * the same bits */
static tt_unit_result cast_check(tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu)
{
    const cast_in *a = u->h;
    TT_CUDA(cudaMemset(a->d_out, 0xff, a->n * storage_size(u->bf16)));
    TT_CUDA(cudaDeviceSynchronize());
    cast_run(u, p, gpu, true);
    TT_CUDA(cudaDeviceSynchronize());
    float *got = tt_gpu_download(a->d_out, a->n, u->bf16);
    tt_unit_result r = {.whole.row = -1, .row.row = -1};
    size_t differ = 0;
    for (size_t i = 0; i < a->n; i++) {
        float want = a->pattern[i % PATTERN];
        tt_round_storage(&want, 1, u->bf16);
        if (memcmp(&got[i], &want, 4) == 0) continue;
        if (!differ++) snprintf(r.note, sizeof r.note, "out[%zu] is %g, want %g", i, got[i], want);
    }
    free(got);
    r.whole = (tt_unit_bound){(double)differ, 0, "out", -1};
    r.ratio = differ ? INFINITY : 0;
    return r;
}

/* --- the storage type back to fp32 (templates/cast.cu's cast_widen): the gradients summed in bf16
 * over several GPUs, over the model's parameters ------------------------------------------------ */

static void widen_init(tt_unit *u, const tt_unit_opts *o)
{
    cast_in *a = u->h = tt_xcalloc(1, sizeof *a);
    a->n = o->params > 0 ? (size_t)o->params : (size_t)1 << 24;
    a->pattern = host_randn(u, PATTERN, 0.02f, 62, u->bf16); /* values of the storage type */
    a->d_in = dev_repeated(u, a->pattern, PATTERN, a->n, u->bf16);
    a->d_out = dev_buffer(u, a->n * 4);
    about(u, (long)a->n, (long)a->n, " over %zu parameters", a->n);
}

static void widen_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    (void)check;
    const cast_in *a = u->h;
    tt_cast_widen(p, gpu->stream, a->d_out, a->d_in, (long)a->n);
}

/* every element exactly the value it widens */
static tt_unit_result widen_check(tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu)
{
    const cast_in *a = u->h;
    TT_CUDA(cudaMemset(a->d_out, 0xff, a->n * 4));
    TT_CUDA(cudaDeviceSynchronize());
    widen_run(u, p, gpu, true);
    TT_CUDA(cudaDeviceSynchronize());
    float *got = tt_gpu_download(a->d_out, a->n, 0);
    tt_unit_result r = {.whole.row = -1, .row.row = -1};
    size_t differ = 0;
    for (size_t i = 0; i < a->n; i++) {
        const float want = a->pattern[i % PATTERN];
        if (memcmp(&got[i], &want, 4) == 0) continue;
        if (!differ++) snprintf(r.note, sizeof r.note, "out[%zu] is %g, want %g", i, got[i], want);
    }
    free(got);
    r.whole = (tt_unit_bound){(double)differ, 0, "out", -1};
    r.ratio = differ ? INFINITY : 0;
    return r;
}

/* --- rows copied from one pitch to another (templates/copy.cu's copy_rows): the padded copies of
 * the weights ---------------------------------------------------------------------------------- */

#define COPY_JOBS 101
#define COPY_GAP 64 /* bytes between one job's arrays and the next's, which nothing may write */

typedef struct {
    long long jobs[COPY_JOBS][TT_COPY_FIELDS]; /* as the kernel reads them: device addresses */
    size_t src_bytes, dst_bytes;
    unsigned char *src, *want; /* the source, and the destination as it must end */
    unsigned char *d_src, *d_dst;
    long long *d_jobs;
    long max_rows;
} copy_in;

/* The destination's bytes before the run (never the source's pattern). */
static unsigned char copy_before(size_t i) { return (unsigned char)(i * 131u + 7u); }

/* Job j's widest access is 16 >> (j % 5) bytes: its addresses, pitches and length are multiples
 * of it, and one of them is an odd multiple; lengths of every residue above that; rows from 1 to
 * 64, three jobs of weight-sized rows (2,100 of 512 bytes, 256 of 4,200, 410 of 820: the FFN's
 * and Transformer-XL's padded weights at bf16) and one of 5,000 rows (more than the plan's blocks
 * hold warps: the warps stride); destination pitches equal to the row or wider, so that the gaps
 * between rows show a write past a row's end. */
static void copy_init(tt_unit *u, const tt_unit_opts *o)
{
    (void)o;
    copy_in *a = u->h = tt_xcalloc(1, sizeof *a);
    long long shape[COPY_JOBS][5]; /* src offset, dst offset, src pitch, dst pitch, row bytes */
    long rows[COPY_JOBS];
    size_t src_at = 0, dst_at = 0;
    for (int j = 0; j < COPY_JOBS; j++) {
        const uint64_t h = tt_mix64(u->seed ^ (0x9e3779b97f4a7c15ull * (uint64_t)(j + 1)));
        const long long w = 16 >> (j % 5);
        long long bytes = w * (1 + (long long)(h % 97));
        rows[j] = 1 + (long)((h >> 8) % 64);
        if (j == 5) bytes = 512, rows[j] = 2100;
        if (j == 6) bytes = 4200, rows[j] = 256;
        if (j == 7) bytes = 820, rows[j] = 410;
        if (j == 10) bytes = 16, rows[j] = 5000;
        const long long sp = bytes + w * (long long)((h >> 16) % 3);
        const long long dp = bytes + w * (long long)((h >> 24) % 5);
        /* the odd multiple of w: the source's offset past 16-byte alignment (w < 16) */
        const long long off = w < 16 ? w : 0;
        shape[j][0] = (long long)src_at + off;
        shape[j][1] = (long long)dst_at + (long long)((h >> 32) % 2) * w * 2;
        shape[j][2] = sp, shape[j][3] = dp, shape[j][4] = bytes;
        src_at = (size_t)(shape[j][0] + sp * rows[j]) + COPY_GAP;
        dst_at = (size_t)(shape[j][1] + dp * rows[j]) + COPY_GAP;
        src_at = (src_at + 15) / 16 * 16, dst_at = (dst_at + 15) / 16 * 16;
    }
    a->src_bytes = src_at, a->dst_bytes = dst_at;
    a->src = keep_host(u, tt_xmalloc(src_at));
    a->want = keep_host(u, tt_xmalloc(dst_at));
    for (size_t i = 0; i < src_at; i++)
        a->src[i] = (unsigned char)(tt_mix64(u->seed + 0x632be59bd9b4e019ull * (i + 1)) >> 56);
    for (size_t i = 0; i < dst_at; i++) a->want[i] = copy_before(i);
    a->d_src = dev_buffer(u, src_at);
    a->d_dst = dev_buffer(u, dst_at);
    a->d_jobs = dev_buffer(u, sizeof a->jobs);
    TT_CUDA(cudaMemcpy(a->d_src, a->src, src_at, cudaMemcpyHostToDevice));
    long total_rows = 0;
    for (int j = 0; j < COPY_JOBS; j++) {
        tt_copy_job(a->jobs[j], a->d_dst + shape[j][1], (size_t)shape[j][3], a->d_src + shape[j][0],
                    (size_t)shape[j][2], (size_t)shape[j][4], rows[j]);
        for (long r = 0; r < rows[j]; r++)
            memcpy(a->want + shape[j][1] + r * shape[j][3], a->src + shape[j][0] + r * shape[j][2],
                   (size_t)shape[j][4]);
        if (rows[j] > a->max_rows) a->max_rows = rows[j];
        total_rows += rows[j];
    }
    TT_CUDA(cudaMemcpy(a->d_jobs, a->jobs, sizeof a->jobs, cudaMemcpyHostToDevice));
    about(u, total_rows, total_rows, " of %d arrays, %ld rows (every access width from 16 bytes "
          "to 1)", COPY_JOBS, total_rows);
}

static void copy_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, bool check)
{
    (void)check;
    const copy_in *a = u->h;
    tt_copy_rows(p, gpu->stream, a->d_jobs, COPY_JOBS, a->max_rows);
}

/* every byte of the destination: the rows copied, and nothing else written (the gaps between
 * rows and between arrays keep the bytes they had) */
static tt_unit_result copy_check(tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu)
{
    const copy_in *a = u->h;
    unsigned char *got = tt_xmalloc(a->dst_bytes);
    for (size_t i = 0; i < a->dst_bytes; i++) got[i] = copy_before(i);
    TT_CUDA(cudaMemcpy(a->d_dst, got, a->dst_bytes, cudaMemcpyHostToDevice));
    copy_run(u, p, gpu, true);
    TT_CUDA(cudaDeviceSynchronize());
    TT_CUDA(cudaMemcpy(got, a->d_dst, a->dst_bytes, cudaMemcpyDeviceToHost));
    tt_unit_result r = {.whole.row = -1, .row.row = -1};
    size_t differ = 0;
    for (size_t i = 0; i < a->dst_bytes; i++) {
        if (got[i] == a->want[i]) continue;
        if (!differ++)
            snprintf(r.note, sizeof r.note, "dst byte %zu is 0x%02x, want 0x%02x (%s)", i, got[i],
                     a->want[i], a->want[i] == copy_before(i) ? "not to be written" : "a row's");
    }
    free(got);
    r.whole = (tt_unit_bound){(double)differ, 0, "dst", -1};
    r.ratio = differ ? INFINITY : 0;
    return r;
}

/* --- the table ---------------------------------------------------------------------------------- */

#define PLANT(p) (1u << TT_PLANT_##p)
#define MASK_PLANTS (PLANT(ZERO_ROWS) | PLANT(MASK_AHEAD) | PLANT(KEY_STRICT))
/* Transformer-XL's probabilities from a twin that recomputes them (cpu_txl_probs): the mask a key
 * late, the relative shift a column late */
#define TXL_PLANTS (PLANT(MASK_AHEAD) | PLANT(TXL_SHIFT))
#define OPS(...) ((const char *const[]){__VA_ARGS__})
#define IMPL(...) (&(const struct tt_unit_impl){__VA_ARGS__})

/* Each: its name; the plan's ops it runs; what it times; what its errors count; the errors that
 * may be planted; whether the vocabulary sizes it; its twin, when slow; init, twin, run,
 * scratch, and a check of its own. */
const tt_unit_desc tt_units[] = {
    {"mla_fwd", OPS("mla_fwd", "mla_fwd_sum", NULL), "tt_mla_fwd", "rel. error", MASK_PLANTS,
     false, "the attention's CPU twin (forward)",
     IMPL(mla_fwd_init, mla_fwd_twin, mla_fwd_run, mla_scratch, NULL)},
    {"mla_bwd",
     OPS("mla_bwd_wo", "mla_bwd_q", "mla_bwd_wo_sum", "mla_bwd_reduce", NULL), /* mla_bwd_wo: the fused
                                                                          * strategy's alone */
     "tt_mla_bwd", "rel. error", MASK_PLANTS, false, "the attention's CPU twin (backward)",
     IMPL(mla_bwd_init, mla_bwd_twin, mla_bwd_run, mla_scratch, NULL)},
    {"mla_mat_fwd", OPS("mla_mat_prep", "mla_mat_t", "mla_mat_mask", "mla_mat_rows", NULL), "tt_mla_mat_fwd", "rel. error",
     MASK_PLANTS, false, "the attention's CPU twin (forward)",
     IMPL(mla_mat_fwd_init, mla_fwd_twin, mla_mat_fwd_run, mla_mat_scratch, NULL)},
    {"mla_mat_bwd",
     OPS("mla_mat_prep", "mla_mat_grads", "mla_mat_params", "mla_mat_t", "mla_bwd_q", "mla_bwd_reduce",
        "mla_mat_mask", "mla_mat_rows", NULL),
     "tt_mla_mat_bwd", "rel. error", MASK_PLANTS, false, "the attention's CPU twin (backward)",
     IMPL(mla_mat_bwd_init, mla_bwd_twin, mla_mat_bwd_run, mla_mat_scratch, NULL)},
    {"residual_ln_fwd", OPS("residual_ln_fwd", NULL), "tt_residual_ln_fwd", "rel. error",
     PLANT(ZERO_ROWS) | PLANT(DROPOUT_FWD_UNSCALED), false, NULL,
     IMPL(ln_fwd_init, ln_fwd_twin, ln_fwd_run, NULL, NULL)},
    {"mla_residual_ln_fwd", OPS("mla_residual_ln_fwd", NULL), "tt_mla_residual_ln_fwd",
     "rel. error", PLANT(ZERO_ROWS) | PLANT(DROPOUT_FWD_UNSCALED), false, NULL,
     IMPL(mln_fwd_init, ln_fwd_twin, mln_fwd_run, NULL, NULL)},
    {"residual_ln_bwd", OPS("residual_ln_bwd", "colsum", NULL), "tt_residual_ln_bwd", "rel. error",
     PLANT(ZERO_ROWS) | PLANT(DROPOUT_BWD_UNSCALED), false, NULL,
     IMPL(ln_bwd_init, ln_bwd_twin, ln_bwd_run, ln_bwd_scratch, NULL)},
    {"adam", OPS("adam", NULL), "tt_adam", "ulps", 0, false, NULL,
     IMPL(adam_init, NULL, adam_run, NULL, adam_check)},
    {"ffn_act_fwd", OPS("ffn_act_fwd", NULL), "tt_ffn_act_fwd", "rel. error",
     PLANT(ZERO_ROWS) | PLANT(DROPOUT_FWD_UNSCALED), false, NULL,
     IMPL(ffn_fwd_init, ffn_fwd_twin, ffn_fwd_run, NULL, NULL)},
    {"ffn_act_bwd", OPS("ffn_act_bwd", "bias_colsum", NULL), "tt_ffn_act_bwd", "rel. error",
     PLANT(ZERO_ROWS) | PLANT(DROPOUT_BWD_UNSCALED), false, NULL,
     IMPL(ffn_bwd_init, ffn_bwd_twin, ffn_bwd_run, ffn_bwd_scratch, NULL)},
    {"cluster_cols_fwd", OPS("cluster_cols_fwd", NULL), "tt_cluster_cols_fwd", "rel. error",
     PLANT(ZERO_ROWS), false, NULL, IMPL(clu_fwd_init, clu_fwd_twin, clu_fwd_run, NULL, NULL)},
    {"cluster_cols_bwd", OPS("cluster_cols_bwd", "cluster_cols_sum", NULL), "tt_cluster_cols_bwd",
     "rel. error", PLANT(ZERO_ROWS), false, NULL,
     IMPL(clu_bwd_init, clu_bwd_twin, clu_bwd_run, clu_bwd_scratch, NULL)},
    {"xent", OPS("xent", NULL), "tt_xent", "rel. error", PLANT(ZERO_ROWS), true, NULL,
     IMPL(xent_init, xent_twin, xent_run, NULL, NULL)},
    {"txl_softmax_fwd", OPS("txl_softmax_fwd", NULL), "tt_txl_softmax_fwd", "rel. error",
     PLANT(ZERO_ROWS) | PLANT(DROPOUT_FWD_UNSCALED) | TXL_PLANTS, false, NULL,
     IMPL(txl_fwd_init, txl_fwd_twin, txl_fwd_run, NULL, NULL)},
    {"txl_softmax_bwd", OPS("txl_softmax_bwd", NULL), "tt_txl_softmax_bwd", "rel. error",
     PLANT(ZERO_ROWS) | PLANT(DROPOUT_BWD_UNSCALED), false, NULL,
     IMPL(txl_bwd_init, txl_bwd_twin, txl_bwd_run, NULL, NULL)},
    {"txl_attn_fwd", OPS("txl_attn_fwd", NULL), "tt_txl_attn_fwd", "rel. error",
     PLANT(ZERO_ROWS) | PLANT(DROPOUT_FWD_UNSCALED) | TXL_PLANTS, false,
     "the attention's CPU twin (forward)", IMPL(fl_fwd_init, fl_fwd_twin, fl_fwd_run, NULL, NULL)},
    {"txl_attn_bwd", OPS("txl_attn_bwd_kv", "txl_attn_bwd_q", "txl_uv_sum", NULL), "tt_txl_attn_bwd",
     "rel. error", PLANT(ZERO_ROWS) | PLANT(DROPOUT_BWD_UNSCALED) | TXL_PLANTS, false,
     "the attention's CPU twin (backward)", IMPL(fl_bwd_init, fl_bwd_twin, fl_bwd_run, fl_bwd_scratch, NULL)},
    {"cast", OPS("cast", NULL), "tt_cast", "differ", 0, false, NULL,
     IMPL(cast_init, NULL, cast_run, NULL, cast_check)},
    {"cast_widen", OPS("cast_widen", NULL), "tt_cast_widen", "differ", 0, false, NULL,
     IMPL(widen_init, NULL, widen_run, NULL, widen_check)},
    {"copy_rows", OPS("copy_rows", NULL), "tt_copy_rows", "differ", 0, false, NULL,
     IMPL(copy_init, NULL, copy_run, NULL, copy_check)},
    {"embedding_fwd", OPS("embedding_fwd", NULL), "tt_embedding_fwd", "rel. error",
     PLANT(ZERO_ROWS) | PLANT(DROPOUT_FWD_UNSCALED), true, NULL,
     IMPL(emb_init, emb_twin, emb_run, NULL, NULL)},
    {"adaptive_gather", OPS("adaptive_gather", NULL), "tt_adaptive_gather", "differ", 0, false,
     NULL, IMPL(gather_init, gather_twin, gather_run, NULL, NULL)},
    {"txl_heads_qkv", OPS("txl_heads_qkv", NULL), "tt_txl_heads_qkv", "differ", PLANT(ZERO_ROWS),
     false, NULL, IMPL(heads_init, heads_twin, heads_run, NULL, NULL)},
};
const int tt_n_units = (int)(sizeof tt_units / sizeof *tt_units);

const char *tt_plant_name(tt_plant p)
{
    static const char *const names[] = {"none", "zero rows", "mask ahead", "key strict",
                                        "dropout fwd unscaled", "dropout bwd unscaled", "txl shift late"};
    return (unsigned)p < TT_PLANTS ? names[p] : "?";
}

const tt_unit_desc *tt_unit_of_op(const char *op)
{
    for (int i = 0; i < tt_n_units; i++)
        for (const char *const *o = tt_units[i].ops; *o; o++)
            if (!strcmp(*o, op)) return &tt_units[i];
    return NULL;
}

bool tt_unit_in_plan(const tt_unit_desc *d, const tt_plan *plan)
{
    for (int i = 0; i < plan->n; i++)
        if (!strcmp(plan->kernels[i].op, d->ops[0])) return true;
    return false;
}

bool tt_unit_plants(const tt_unit_desc *d, const tt_spec *spec, tt_plant p)
{
    if (p == TT_PLANT_NONE) return true;
    if (!(d->plants & 1u << p)) return false;
    return (p != TT_PLANT_MASK_AHEAD && p != TT_PLANT_KEY_STRICT) || spec->model.causal;
}

/* --- the check ----------------------------------------------------------------------------------- */

/* The twin's outputs with cpu_plant's error k (CPU_PLANT_NONE: none), into new arrays. */
static void twin_into(const tt_unit *u, float **want, cpu_plant_kind k)
{
    for (int i = 0; i < u->n_out; i++) {
        const output *o = &u->out[i];
        const size_t n = (size_t)o->rows * o->cols;
        want[i] = tt_xcalloc(n + 1, 4);
        if (o->start) memcpy(want[i], o->start, n * 4);
    }
    cpu_plant(k);
    u->d->impl->twin(u, want);
    cpu_plant(CPU_PLANT_NONE);
}

void tt_unit_fit(tt_unit *u, const tt_gpu_program *p)
{
    const size_t need = (u->d->impl->scratch ? u->d->impl->scratch(u, p) : 0) + 1;
    if (need <= u->scratch_floats) return;
    if (u->scratch) TT_CUDA(cudaFree(u->scratch));
    TT_CUDA(cudaMalloc((void **)&u->scratch, need * 4));
    u->scratch_floats = need;
}

/* Every output poisoned or set to its start, the scratch poisoned (a kernel that reads what
 * nothing wrote fails); all done before the kernels start on their stream. */
static void reset_outputs(tt_unit *u)
{
    for (int i = 0; i < u->n_out; i++) {
        const output *o = &u->out[i];
        const size_t bytes = (size_t)o->rows * o->ld * storage_size(o->bf16);
        if (!o->start) {
            TT_CUDA(cudaMemset(o->dev, 0xff, bytes));
            continue;
        }
        void *buf = pitched(o->start, o->rows, o->cols, o->ld, o->bf16);
        TT_CUDA(cudaMemcpy(o->dev, buf, bytes, cudaMemcpyHostToDevice));
        free(buf);
    }
    if (u->scratch) TT_CUDA(cudaMemset(u->scratch, 0xff, u->scratch_floats * 4));
    TT_CUDA(cudaDeviceSynchronize());
}

static void run_check(tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu)
{
    tt_unit_fit(u, p);
    reset_outputs(u);
    u->d->impl->run(u, p, gpu, true);
    TT_CUDA(cudaDeviceSynchronize());
    TT_CUDA(cudaGetLastError());
}

static void compare_output(const tt_unit *u, const output *o, const float *want,
                           const tt_gpu_program *p, tt_plant plant, tt_unit_result *r)
{
    long written = 0, at = 0;
    float *got = tt_gpu_download_rows(o->dev, o->rows, o->cols, o->ld, o->bf16, &written, &at);
    if (written) {
        if (!r->note[0])
            snprintf(r->note, sizeof r->note, "%ld padding elements of %s written, the first in "
                     "row %ld", written, o->name, at / o->ld);
        r->ratio = INFINITY;
    }
    if (plant == TT_PLANT_ZERO_ROWS && o->seq)
        for (long row = 0; row < o->rows; row++)
            if (row % o->seq < 2) memset(got + (size_t)row * o->cols, 0, (size_t)o->cols * 4);
    if (o->tol == TOL_EXACT) {
        compare_exact(r, o->name, got, want, (size_t)o->rows * o->cols);
    } else {
        tol_kind k = o->tol;
        int prec = u->bf16 || u->rounded;
        if (k == TOL_MMA) { /* a bf16 product's bounds, or fp32's; the materialized strategy's
                             * from cuBLAS's products (no o->mma kernel): as the storage's */
            const bool mma = tt_mla_materialized(p)
                                 ? prec
                                 : tt_kernel_const(tt_gpu_kernel_of(p, o->mma)->k, "MMA", 0) != 0;
            k = mma ? TOL_STORED : TOL_FP32;
            prec = mma;
        }
        tt_compare(r, o->name, got, want, o->rows, o->cols, tolerances[k].whole[prec],
                   o->seq ? tolerances[k].row[prec] : 0, o->floor);
    }
    free(got);
}

tt_unit_result tt_unit_check(tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, tt_plant plant)
{
    TT_ASSERT(tt_unit_plants(u->d, u->s, plant));
    if (u->d->impl->check) return u->d->impl->check(u, p, gpu);
    static const cpu_plant_kind twin_plant[TT_PLANTS] = {
        [TT_PLANT_MASK_AHEAD] = CPU_PLANT_MASK_AHEAD,
        [TT_PLANT_KEY_STRICT] = CPU_PLANT_KEY_STRICT,
        [TT_PLANT_DROPOUT_FWD_UNSCALED] = CPU_PLANT_DROPOUT_FWD_UNSCALED,
        [TT_PLANT_DROPOUT_BWD_UNSCALED] = CPU_PLANT_DROPOUT_BWD_UNSCALED,
        [TT_PLANT_TXL_SHIFT] = CPU_PLANT_TXL_SHIFT,
    };
    float *planted[MAX_OUTPUTS] = {0};
    float *const *want = u->want;
    if (twin_plant[plant] != CPU_PLANT_NONE) {
        twin_into(u, planted, twin_plant[plant]);
        want = planted;
    }
    run_check(u, p, gpu);
    tt_unit_result r = {.whole.row = -1, .row.row = -1};
    for (int i = 0; i < u->n_out; i++) compare_output(u, &u->out[i], want[i], p, plant, &r);
    for (int i = 0; i < u->n_out; i++) free(planted[i]);
    return r;
}

void tt_unit_verdict(const tt_unit_result *r, const char *measure, char *out, size_t n)
{
    const bool by_row = r->row.tensor && over(r->row.err, r->row.tol) > over(r->whole.err, r->whole.tol);
    const tt_unit_bound *b = by_row ? &r->row : &r->whole;
    if (r->note[0]) snprintf(out, n, "%s", r->note);
    else if (!b->tensor) snprintf(out, n, "nothing compared");
    else if (b->row >= 0)
        snprintf(out, n, "%s row %ld: %s %.2e over its bound %.0e", b->tensor, b->row, measure,
                 b->err, b->tol);
    else
        snprintf(out, n, "%s: %s %.2e over its tolerance %.0e", b->tensor, measure, b->err, b->tol);
}

const char *tt_unit_differs_twice(tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu)
{
    TT_ASSERT(u->n_out > 0);
    void *first[MAX_OUTPUTS];
    const char *differs = NULL;
    for (int round = 0; round < 2; round++) {
        run_check(u, p, gpu);
        for (int i = 0; i < u->n_out; i++) {
            const output *o = &u->out[i];
            const size_t bytes = (size_t)o->rows * o->ld * storage_size(o->bf16);
            void *now = tt_xmalloc(bytes + 1);
            TT_CUDA(cudaMemcpy(now, o->dev, bytes, cudaMemcpyDeviceToHost));
            if (!round) {
                first[i] = now;
                continue;
            }
            if (!differs && memcmp(first[i], now, bytes) != 0) differs = o->name;
            free(first[i]), free(now);
        }
    }
    return differs;
}

/* --- a unit's life --------------------------------------------------------------------------------- */

tt_unit *tt_unit_init(const tt_unit_desc *d, const tt_spec *spec, const tt_unit_opts *o)
{
    tt_unit *u = tt_xcalloc(1, sizeof *u);
    u->d = d, u->s = spec, u->seed = o->seed;
    u->batch = spec->train.batch;
    u->check = o->check > 0 && o->check < u->batch ? o->check : u->batch;
    u->bf16 = spec->train.precision == TT_PREC_BF16;
    u->rows = (long)u->batch * spec->model.seq_len;
    u->rows_check = (long)u->check * spec->model.seq_len;
    d->impl->init(u, o);
    if (d->impl->twin) twin_into(u, u->want, CPU_PLANT_NONE);
    reset_outputs(u);
    return u;
}

void tt_unit_free(tt_unit *u)
{
    if (!u) return;
    for (int i = 0; i < u->n_out; i++) free(u->want[i]);
    for (int i = 0; i < u->n_host; i++) free(u->host[i]);
    for (int i = 0; i < u->n_dev; i++) cudaFree(u->dev[i]);
    if (u->scratch) cudaFree(u->scratch);
    free(u->h);
    free(u);
}

const tt_unit_desc *tt_unit_desc_of(const tt_unit *u) { return u->d; }

void tt_unit_describe(const tt_unit *u, char *out, size_t n) { snprintf(out, n, "%s", u->about); }

void tt_unit_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu)
{
    u->d->impl->run(u, p, gpu, false);
}

/* --- what the units are built from ---------------------------------------------------------------- */

void tt_randn(float *x, size_t n, float std, uint64_t seed, uint64_t stream, int bf16)
{
    for (size_t i = 0; i < n; i++) {
        const double u1 = 1.0 - tt_uniform(seed, stream, 2 * i), u2 = tt_uniform(seed, stream, 2 * i + 1);
        x[i] = (float)(std * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
    }
    tt_round_storage(x, n, bf16);
}

void tt_round_storage(float *x, size_t n, int bf16)
{
    if (bf16) cpu_round_bf16(x, n);
}

void *tt_gpu_poisoned(size_t bytes)
{
    void *d;
    TT_CUDA(cudaMalloc(&d, bytes + 1));
    TT_CUDA(cudaMemset(d, 0xff, bytes + 1));
    TT_CUDA(cudaDeviceSynchronize());
    return d;
}

void *tt_gpu_upload_rows(const float *x, long rows, long cols, long ld, int bf16)
{
    void *buf = pitched(x, rows, cols, ld, bf16), *d;
    const size_t bytes = (size_t)rows * ld * storage_size(bf16);
    TT_CUDA(cudaMalloc(&d, bytes + 1));
    TT_CUDA(cudaMemcpy(d, buf, bytes, cudaMemcpyHostToDevice));
    TT_CUDA(cudaDeviceSynchronize());
    free(buf);
    return d;
}

float *tt_gpu_download_rows(const void *d, long rows, long cols, long ld, int bf16, long *written,
                            long *at)
{
    float *all = tt_gpu_download(d, (size_t)rows * ld, bf16), *x = tt_xmalloc((size_t)rows * cols * 4 + 1);
    long w = 0;
    for (long r = 0; r < rows; r++)
        for (long c = 0; c < ld; c++) {
            const float v = all[(size_t)r * ld + c];
            if (c < cols) {
                x[(size_t)r * cols + c] = v;
            } else if (!isnan(v)) {
                if (!w && at) *at = r * ld + c;
                w++;
            }
        }
    if (written) *written = w;
    free(all);
    return x;
}

long tt_ulps_apart(float a, float b)
{
    int32_t x, y;
    memcpy(&x, &a, 4), memcpy(&y, &b, 4);
    if (x < 0) x = INT32_MIN - x; /* monotonic: ordered like the floats */
    if (y < 0) y = INT32_MIN - y;
    return labs((long)x - (long)y);
}

tt_dropout tt_check_dropout(float p, uint64_t seed, uint32_t site, unsigned long long **step)
{
    const unsigned long long at = 4243 + site;
    TT_CUDA(cudaMalloc((void **)step, sizeof at));
    TT_CUDA(cudaMemcpy(*step, &at, sizeof at, cudaMemcpyHostToDevice));
    return (tt_dropout){.p = p, .seed = seed, .step = *step, .site = site};
}

void tt_cpu_dropout(float *y, uint8_t *mask, const float *x, long n, tt_dropout drop)
{
    unsigned long long step;
    TT_CUDA(cudaMemcpy(&step, drop.step, sizeof step, cudaMemcpyDeviceToHost));
    cpu_dropout_fwd(y, mask, x, n, drop.p, drop.seed, tt_dropout_stream(step, drop.site));
}
