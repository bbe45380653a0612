/* The GPU half of kernel autotuning (tune.h): harnesses that check and time each tunable kernel,
 * the search over its variants, and the entry it leaves in the tuning cache. */
#include "autotune.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "compile.h"
#include "cpu_ops.h"
#include "cpu_txl.h"
#include "launch.h"
#include "optim.h"
#include "rng.h"
#include "tune.h"
#include "util.h"

#define WARMUP 5
#define CHECK_BATCH_MAX 16

/* The harnesses, each with what it times. */
typedef enum {
    MLA_FWD, MLA_BWD, LN_FWD, LN_BWD, ADAM, FFN_FWD, FFN_BWD, XENT, TXL_FWD, TXL_BWD, CAST, EMB_FWD,
    GATHER, TXL_QKV
} harness;
static const char *const timed_unit[] = {
    [MLA_FWD] = "tt_mla_fwd", [MLA_BWD] = "tt_mla_bwd", [LN_FWD] = "tt_residual_ln_fwd",
    [LN_BWD] = "tt_residual_ln_bwd", [ADAM] = "tt_adam", [FFN_FWD] = "tt_ffn_act_fwd",
    [FFN_BWD] = "tt_ffn_act_bwd", [XENT] = "tt_xent", [TXL_FWD] = "tt_txl_softmax_fwd",
    [TXL_BWD] = "tt_txl_softmax_bwd", [CAST] = "tt_cast", [EMB_FWD] = "tt_embedding_fwd",
    [GATHER] = "tt_adaptive_gather", [TXL_QKV] = "tt_txl_heads_qkv",
};

/* The ops with a harness, in the order they are tuned. */
static const struct {
    const char *op;
    harness h;
} units[] = {
    {"mla_fwd", MLA_FWD},
    {"mla_bwd_q", MLA_BWD},
    {"mla_bwd_wo", MLA_BWD},
    {"mla_bwd_reduce", MLA_BWD},
    {"mla_bwd_params", MLA_BWD},
    {"residual_ln_fwd", LN_FWD},
    {"residual_ln_bwd", LN_BWD},
    {"colsum", LN_BWD}, /* its second stage */
    {"adam", ADAM},
    {"ffn_act_fwd", FFN_FWD},
    {"ffn_act_bwd", FFN_BWD},
    {"bias_colsum", FFN_BWD}, /* its second stage */
    {"xent", XENT},
    {"txl_softmax_fwd", TXL_FWD},
    {"txl_softmax_bwd", TXL_BWD},
    {"cast", CAST},
    {"embedding_fwd", EMB_FWD},
    {"adaptive_gather", GATHER},
    {"txl_heads_qkv", TXL_QKV},
};

const char *tt_tune_unit(const char *op)
{
    for (size_t i = 0; i < sizeof units / sizeof *units; i++)
        if (!strcmp(units[i].op, op)) return timed_unit[units[i].h];
    return NULL;
}

/* --- the attention's harness: inputs, the CPU twin's results, device buffers ----------------- */

typedef struct {
    int batch, check, n, r, d, key, bf16;
    /* host, fp32, already rounded to what the device holds */
    float *qkv, *wo, *g, *pos, *u, *v, *dy, *dwo0, *vec0;
    /* the CPU twin on the first `check` sequences */
    float *y, *dqkv, *dwo, *vec, *dp;
    /* device, sized for the whole batch */
    void *d_qkv, *d_wo, *d_pos, *d_dy, *d_y, *d_dqkv;
    float *d_g, *d_u, *d_v, *d_dwo, *d_vec, *d_dp;
} attn;

static void randn(float *x, size_t n, float std, uint64_t stream, int bf16)
{
    for (size_t i = 0; i < n; i++) {
        const double u1 = 1.0 - tt_uniform(0x7475ae, stream, 2 * i), u2 = tt_uniform(0x7475ae, stream, 2 * i + 1);
        const float y = (float)(std * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
        x[i] = bf16 ? tt_bf16_to_float(tt_bf16_from_float(y)) : y;
    }
}

static void attn_init(attn *a, const tt_spec *s, int check)
{
    const tt_model_spec *m = &s->model;
    memset(a, 0, sizeof *a);
    a->batch = s->train.batch, a->check = check, a->n = m->seq_len, a->r = m->rank;
    a->d = m->d_model, a->key = m->position == TT_POS_KEY;
    a->bf16 = s->train.precision == TT_PREC_BF16;
    const int n = a->n, r = a->r, d = a->d, bf = a->bf16;
    const size_t nq = (size_t)a->batch * n * 3 * r, nw = (size_t)d * n * n, ny = (size_t)a->batch * n * d;
    const size_t nr = (size_t)n * r;
    a->qkv = tt_xmalloc(nq * 4), a->wo = tt_xmalloc(nw * 4), a->g = tt_xmalloc(r * 4);
    a->pos = tt_xmalloc(nr * 4), a->u = tt_xmalloc(r * 4), a->v = tt_xmalloc(r * 4);
    a->dy = tt_xmalloc(ny * 4), a->dwo0 = tt_xmalloc(nw * 4), a->vec0 = tt_xmalloc(3 * (size_t)r * 4);
    float *theta = tt_xmalloc(2 * (size_t)r * 4);
    randn(a->qkv, nq, 1.f, 1, bf);
    randn(a->wo, nw, 0.05f, 2, bf);
    randn(theta, 2 * (size_t)r, 1.f, 3, 0);
    randn(a->pos, nr, 1.f, 4, bf);
    randn(a->u, r, 0.5f, 5, 0);
    randn(a->v, r, 0.5f, 6, 0);
    randn(a->dy, ny, 1.f, 7, bf);
    randn(a->dwo0, nw, 0.1f, 8, 0); /* gradients are added into: start them away from zero */
    randn(a->vec0, 3 * (size_t)r, 0.1f, 9, 0);
    cpu_core_fwd(a->g, theta, 2, r);
    free(theta);

    /* the CPU twin, once: every variant is held to the same results */
    const cpu_mla_shape sh = {check, n, r, d, m->causal};
    const int key = a->key;
    a->y = tt_xmalloc((size_t)check * n * d * 4);
    cpu_mla_fwd(a->y, a->qkv, a->g, a->wo, key ? a->pos : NULL, key ? a->u : NULL,
                key ? a->v : NULL, sh);
    a->dqkv = tt_xmalloc((size_t)check * n * 3 * r * 4);
    a->dwo = tt_xmalloc(nw * 4), a->vec = tt_xmalloc(3 * (size_t)r * 4), a->dp = tt_xcalloc(nr, 4);
    memcpy(a->dwo, a->dwo0, nw * 4);
    memcpy(a->vec, a->vec0, 3 * (size_t)r * 4);
    cpu_mla_bwd(a->dqkv, a->vec, a->dwo, key ? a->dp : NULL, key ? a->vec + r : NULL,
                key ? a->vec + 2 * r : NULL, a->dy, a->qkv, a->g, a->wo, key ? a->pos : NULL,
                key ? a->u : NULL, key ? a->v : NULL, sh);

    a->d_qkv = tt_gpu_upload(a->qkv, nq, bf), a->d_wo = tt_gpu_upload(a->wo, nw, bf);
    a->d_dy = tt_gpu_upload(a->dy, ny, bf);
    a->d_pos = key ? tt_gpu_upload(a->pos, nr, bf) : NULL;
    a->d_g = tt_gpu_upload(a->g, r, 0);
    a->d_u = key ? tt_gpu_upload(a->u, r, 0) : NULL, a->d_v = key ? tt_gpu_upload(a->v, r, 0) : NULL;
    a->d_dwo = tt_gpu_upload(a->dwo0, nw, 0), a->d_vec = tt_gpu_upload(a->vec0, 3 * (size_t)r, 0);
    TT_CUDA(cudaMalloc(&a->d_y, ny * (bf ? 2 : 4)));
    TT_CUDA(cudaMalloc(&a->d_dqkv, nq * (bf ? 2 : 4)));
    a->d_dp = key ? tt_gpu_upload(a->dp, nr, 0) : NULL;
}

static void attn_free(attn *a)
{
    float *host[] = {a->qkv, a->wo, a->g, a->pos, a->u, a->v, a->dy, a->dwo0, a->vec0,
                     a->y, a->dqkv, a->dwo, a->vec, a->dp};
    for (size_t i = 0; i < sizeof host / sizeof *host; i++) free(host[i]);
    void *dev[] = {a->d_qkv, a->d_wo, a->d_pos, a->d_dy, a->d_y, a->d_dqkv, a->d_g,
                   a->d_u, a->d_v, a->d_dwo, a->d_vec, a->d_dp};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
        if (dev[i]) cudaFree(dev[i]);
}

/* One run of the unit at `batch` sequences, as the trainer runs it. */
static void attn_run(const attn *a, const tt_gpu_program *p, const tt_gpu *gpu, int bwd,
                     int batch, float *scratch)
{
    const int key = a->key;
    if (!bwd) {
        tt_mla_fwd(p, gpu->stream, a->d_y, a->d_qkv, a->d_g, a->d_wo, a->d_pos, a->d_u, a->d_v,
                   scratch, batch, a->n, a->r, a->d);
        return;
    }
    tt_mla_bwd(p, gpu->stream, &gpu->side, a->d_dqkv, a->d_dwo, a->d_dp, a->d_vec,
               key ? a->d_vec + a->r : NULL, key ? a->d_vec + 2 * a->r : NULL, scratch, a->d_dy,
               a->d_qkv, a->d_g, a->d_wo, a->d_pos, a->d_u, a->d_v, batch, a->n, a->r, a->d);
}


/* The variant against the CPU twin on the first `check` sequences, outputs poisoned first.
 * Returns the largest error relative to its tolerance (<= 1 passes); *worst names it. */
static double attn_check(const attn *a, const tt_gpu_program *p, const tt_gpu *gpu, int bwd,
                         float *scratch, double *worst)
{
    const int n = a->n, r = a->r, d = a->d, c = a->check, bf = a->bf16;
    const size_t es = bf ? 2 : 4, nq = (size_t)c * n * 3 * r, nw = (size_t)d * n * n;
    /* the storage type's tolerance; fp32 gradients of tensor-core products: a bf16 product's */
    const double tol = bf ? 1e-2 : 1e-5;
    double ratio = 0;
    *worst = 0;
    if (!bwd) {
        TT_CUDA(cudaMemset(a->d_y, 0xff, (size_t)c * n * d * es));
        attn_run(a, p, gpu, 0, c, scratch);
        TT_CUDA(cudaDeviceSynchronize());
        float *y = tt_gpu_download(a->d_y, (size_t)c * n * d, bf);
        *worst = tt_rel_l2(y, a->y, (size_t)c * n * d);
        free(y);
        return *worst / tol;
    }
    const double tol_wo = tt_kernel_const(tt_gpu_kernel_of(p, "mla_bwd_wo")->k, "MMA", 0) ? 1e-2 : tol;
    const double tol_q = tt_kernel_const(tt_gpu_kernel_of(p, "mla_bwd_q")->k, "MMA", 0) ? 1e-2 : tol;
    TT_CUDA(cudaMemcpy(a->d_dwo, a->dwo0, nw * 4, cudaMemcpyHostToDevice));
    TT_CUDA(cudaMemcpy(a->d_vec, a->vec0, 3 * (size_t)r * 4, cudaMemcpyHostToDevice));
    TT_CUDA(cudaMemset(a->d_dqkv, 0xff, nq * es));
    if (a->key) TT_CUDA(cudaMemset(a->d_dp, 0xff, (size_t)n * r * 4));
    attn_run(a, p, gpu, 1, c, scratch);
    TT_CUDA(cudaDeviceSynchronize());
    float *dqkv = tt_gpu_download(a->d_dqkv, nq, bf), *dwo = tt_gpu_download(a->d_dwo, nw, 0);
    float *vec = tt_gpu_download(a->d_vec, 3 * (size_t)r, 0);
    const double e[3] = {tt_rel_l2(dqkv, a->dqkv, nq), tt_rel_l2(dwo, a->dwo, nw),
                         tt_rel_l2(vec, a->vec, a->key ? 3 * (size_t)r : (size_t)r)};
    const double t[3] = {tol, tol_wo, tol_q};
    for (int i = 0; i < 3; i++)
        if (!(e[i] / t[i] <= ratio)) ratio = e[i] / t[i], *worst = e[i];
    if (a->key) {
        float *dp = tt_gpu_download(a->d_dp, (size_t)n * r, 0);
        const double ep = tt_rel_l2(dp, a->dp, (size_t)n * r);
        if (!(ep / tol_q <= ratio)) ratio = ep / tol_q, *worst = ep;
        free(dp);
    }
    free(dqkv), free(dwo), free(vec);
    return ratio;
}

static int cmp_double(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* --- LayerNorm fused with the residual and dropout (templates/layernorm.cu) ----------------- */

typedef struct {
    int rows, d, bf16;
    float *x, *y, *dout, *gamma, *beta;                 /* host inputs, storage-rounded */
    float *out, *sum, *mean, *rstd, *ds, *dy, *dgb;     /* the CPU twin */
    void *d_x, *d_y, *d_out, *d_sum, *d_s, *d_dout, *d_dx, *d_dy;
    float *d_gamma, *d_beta, *d_mean, *d_rstd, *d_mean2, *d_rstd2, *d_dgb;
    unsigned long long *d_step;
    tt_dropout drop;
} ln;

static void round_to(float *x, size_t n, int bf16)
{
    if (bf16)
        for (size_t i = 0; i < n; i++) x[i] = tt_bf16_to_float(tt_bf16_from_float(x[i]));
}

static void ln_init(ln *l, const tt_spec *s)
{
    memset(l, 0, sizeof *l);
    l->rows = s->train.batch * s->model.seq_len, l->d = s->model.d_model;
    l->bf16 = s->train.precision == TT_PREC_BF16;
    const int rows = l->rows, d = l->d, bf = l->bf16;
    const size_t nd = (size_t)rows * d;
    l->x = tt_xmalloc(nd * 4), l->y = tt_xmalloc(nd * 4), l->dout = tt_xmalloc(nd * 4);
    l->gamma = tt_xmalloc(d * 4), l->beta = tt_xmalloc(d * 4);
    randn(l->x, nd, 1.5f, 11, bf);
    randn(l->y, nd, 1.f, 12, bf);
    randn(l->dout, nd, 1.f, 13, bf);
    randn(l->gamma, d, 0.5f, 14, 0);
    randn(l->beta, d, 0.5f, 15, 0);
    for (int i = 0; i < d; i++) l->gamma[i] += 1.f;
    const unsigned long long step = 4242;
    TT_CUDA(cudaMalloc((void **)&l->d_step, sizeof step));
    TT_CUDA(cudaMemcpy(l->d_step, &step, sizeof step, cudaMemcpyHostToDevice));
    l->drop = (tt_dropout){.p = 0.1f, .seed = 0x7475ae, .step = l->d_step, .site = 3};
    /* the CPU twin: s = x + dropout(y) (rounded as the device stores it), LayerNorm, backward */
    l->sum = tt_xmalloc(nd * 4), l->out = tt_xmalloc(nd * 4), l->mean = tt_xmalloc(rows * 4);
    l->rstd = tt_xmalloc(rows * 4), l->ds = tt_xmalloc(nd * 4), l->dy = tt_xmalloc(nd * 4);
    l->dgb = tt_xcalloc(2 * (size_t)d, 4);
    uint8_t *mask = tt_xmalloc(nd);
    cpu_dropout_fwd(l->sum, mask, l->y, (long)nd, l->drop.p, l->drop.seed,
                    tt_dropout_stream(step, l->drop.site));
    for (size_t i = 0; i < nd; i++) l->sum[i] += l->x[i];
    round_to(l->sum, nd, bf);
    cpu_layernorm_fwd(l->out, l->mean, l->rstd, l->sum, l->gamma, l->beta, rows, d);
    cpu_layernorm_bwd(l->ds, l->dgb, l->dgb + d, l->dout, l->sum, l->mean, l->rstd, l->gamma, rows, d);
    cpu_dropout_bwd(l->dy, l->ds, mask, (long)nd, l->drop.p);
    free(mask);
    const size_t es = bf ? 2 : 4;
    l->d_x = tt_gpu_upload(l->x, nd, bf), l->d_y = tt_gpu_upload(l->y, nd, bf);
    l->d_gamma = tt_gpu_upload(l->gamma, d, 0), l->d_beta = tt_gpu_upload(l->beta, d, 0);
    /* the backward reads the CPU's s and statistics, as the test of this kernel does */
    l->d_s = tt_gpu_upload(l->sum, nd, bf), l->d_dout = tt_gpu_upload(l->dout, nd, bf);
    l->d_mean2 = tt_gpu_upload(l->mean, rows, 0), l->d_rstd2 = tt_gpu_upload(l->rstd, rows, 0);
    void **outs[] = {&l->d_out, &l->d_sum, &l->d_dx, &l->d_dy};
    for (int i = 0; i < 4; i++) TT_CUDA(cudaMalloc(outs[i], nd * es));
    TT_CUDA(cudaMalloc((void **)&l->d_mean, rows * 4));
    TT_CUDA(cudaMalloc((void **)&l->d_rstd, rows * 4));
    TT_CUDA(cudaMalloc((void **)&l->d_dgb, 2 * (size_t)d * 4));
}

static void ln_free(ln *l)
{
    float *host[] = {l->x, l->y, l->dout, l->gamma, l->beta, l->out, l->sum, l->mean, l->rstd,
                     l->ds, l->dy, l->dgb};
    for (size_t i = 0; i < sizeof host / sizeof *host; i++) free(host[i]);
    void *dev[] = {l->d_x, l->d_y, l->d_out, l->d_sum, l->d_s, l->d_dout, l->d_dx, l->d_dy,
                   l->d_gamma, l->d_beta, l->d_mean, l->d_rstd, l->d_mean2, l->d_rstd2, l->d_dgb,
                   l->d_step};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
        if (dev[i]) cudaFree(dev[i]);
}

static void ln_run(const ln *l, const tt_gpu_program *p, const tt_gpu *gpu, int bwd, float *part)
{
    if (!bwd)
        tt_residual_ln_fwd(p, gpu->stream, l->d_out, l->d_sum, l->d_mean, l->d_rstd, l->d_x, l->d_y,
                           l->d_gamma, l->d_beta, l->rows, l->d, l->d, l->drop);
    else
        tt_residual_ln_bwd(p, gpu->stream, l->d_dx, l->d_dy, l->d_dgb, l->d_dgb + l->d, part,
                           l->d_dout, l->d_s, l->d_mean2, l->d_rstd2, l->d_gamma, l->rows, l->d,
                           l->d, l->drop);
}

static size_t ln_part_floats(const ln *l, const tt_gpu_program *p)
{
    return 2 * (size_t)tt_layernorm_bwd_parts(p, l->rows) * l->d;
}

/* worst of got against want over its tolerance, into *ratio and *worst */
static void judge(const void *dev, const float *want, size_t n, int bf16, double tol,
                  double *ratio, double *worst)
{
    float *got = tt_gpu_download(dev, n, bf16);
    const double e = tt_rel_l2(got, want, n);
    if (!(e / tol <= *ratio)) *ratio = e / tol, *worst = e;
    free(got);
}

static double ln_check(const ln *l, const tt_gpu_program *p, const tt_gpu *gpu, int bwd,
                       float *part, double *worst)
{
    const size_t nd = (size_t)l->rows * l->d, es = l->bf16 ? 2 : 4;
    const double tol = l->bf16 ? 1e-2 : 1e-5;
    double ratio = 0;
    *worst = 0;
    void *outs[] = {bwd ? l->d_dx : l->d_out, bwd ? l->d_dy : l->d_sum};
    for (int i = 0; i < 2; i++) TT_CUDA(cudaMemset(outs[i], 0xff, nd * es));
    TT_CUDA(cudaMemset(bwd ? l->d_dgb : l->d_mean, 0xff, (bwd ? 2 * (size_t)l->d : (size_t)l->rows) * 4));
    if (!bwd) TT_CUDA(cudaMemset(l->d_rstd, 0xff, (size_t)l->rows * 4));
    ln_run(l, p, gpu, bwd, part);
    TT_CUDA(cudaDeviceSynchronize());
    if (!bwd) {
        judge(l->d_out, l->out, nd, l->bf16, tol, &ratio, worst);
        judge(l->d_sum, l->sum, nd, l->bf16, 1e-6, &ratio, worst);
        judge(l->d_mean, l->mean, (size_t)l->rows, 0, 1e-5, &ratio, worst);
        judge(l->d_rstd, l->rstd, (size_t)l->rows, 0, 1e-5, &ratio, worst);
    } else {
        judge(l->d_dx, l->ds, nd, l->bf16, tol, &ratio, worst);
        judge(l->d_dy, l->dy, nd, l->bf16, tol, &ratio, worst);
        judge(l->d_dgb, l->dgb, 2 * (size_t)l->d, 0, 1e-5, &ratio, worst);
    }
    return ratio;
}

/* --- Adam (templates/adam.cu) ------------------------------------------------------------------ */

#define ADAM_CHECK 100003 /* elements checked: odd, so that the vector loop's tail runs too */

typedef struct {
    size_t n;                       /* elements timed */
    int bf16;
    tt_train_spec t;
    float *w, *m, *v, *g;           /* host, ADAM_CHECK of each */
    float *w_ref, *m_ref, *v_ref;   /* tt_adam_step's results */
    float *d_w, *d_m, *d_v, *d_g;   /* device, n of each */
    void *d_copy;
    tt_adam_scalars *d_sc;
} adam_in;

static void adam_init(adam_in *a, const tt_spec *s, long params)
{
    memset(a, 0, sizeof *a);
    a->n = params > ADAM_CHECK ? (size_t)params : (size_t)1 << 24;
    a->bf16 = s->train.precision == TT_PREC_BF16;
    a->t = s->train;
    const size_t c = ADAM_CHECK;
    a->w = tt_xmalloc(c * 4), a->m = tt_xmalloc(c * 4), a->v = tt_xmalloc(c * 4), a->g = tt_xmalloc(c * 4);
    randn(a->w, c, 0.02f, 21, 0);
    randn(a->g, c, 0.01f, 22, 0);
    randn(a->m, c, 0.01f, 23, 0);
    randn(a->v, c, 1e-4f, 24, 0);
    for (size_t i = 0; i < c; i++) a->v[i] = fabsf(a->v[i]);
    const long step = 7;
    const double lr = 2.5e-4;
    tt_adam_scalars host = {.clip = 1.0};
    tt_adam_scalars_at(&host, &a->t, lr, step);
    TT_CUDA(cudaMalloc((void **)&a->d_sc, sizeof host));
    TT_CUDA(cudaMemcpy(a->d_sc, &host, sizeof host, cudaMemcpyHostToDevice));
    a->w_ref = tt_xmalloc(c * 4), a->m_ref = tt_xmalloc(c * 4), a->v_ref = tt_xmalloc(c * 4);
    memcpy(a->w_ref, a->w, c * 4), memcpy(a->m_ref, a->m, c * 4), memcpy(a->v_ref, a->v, c * 4);
    tt_adam_step(a->w_ref, a->g, a->m_ref, a->v_ref, c, &a->t, lr, step);
    float **dev[] = {&a->d_w, &a->d_m, &a->d_v, &a->d_g};
    const float *from[] = {a->w, a->m, a->v, a->g};
    for (int i = 0; i < 4; i++) {
        TT_CUDA(cudaMalloc((void **)dev[i], a->n * 4));
        TT_CUDA(cudaMemset(*dev[i], 0, a->n * 4));
        TT_CUDA(cudaMemcpy(*dev[i], from[i], c * 4, cudaMemcpyHostToDevice));
    }
    /* past the checked part, the same values repeated: what is timed is never zeros */
    for (int i = 0; i < 4; i++)
        for (size_t at = c; at < a->n; at += c)
            TT_CUDA(cudaMemcpy(*dev[i] + at, *dev[i], (a->n - at < c ? a->n - at : c) * 4,
                               cudaMemcpyDeviceToDevice));
    TT_CUDA(cudaMalloc(&a->d_copy, a->n * (a->bf16 ? 2 : 4)));
}

static void adam_free(adam_in *a)
{
    float *host[] = {a->w, a->m, a->v, a->g, a->w_ref, a->m_ref, a->v_ref};
    for (size_t i = 0; i < sizeof host / sizeof *host; i++) free(host[i]);
    void *dev[] = {a->d_w, a->d_m, a->d_v, a->d_g, a->d_copy, a->d_sc};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
        if (dev[i]) cudaFree(dev[i]);
}

static void adam_run(const adam_in *a, const tt_gpu_program *p, const tt_gpu *gpu, size_t n)
{
    tt_adam(p, gpu->stream, a->d_w, a->d_m, a->d_v, a->d_copy, a->d_g, a->d_sc, n, &a->t);
}

static long ulps_apart(float a, float b)
{
    int32_t x, y;
    memcpy(&x, &a, 4), memcpy(&y, &b, 4);
    if (x < 0) x = INT32_MIN - x;
    if (y < 0) y = INT32_MIN - y;
    return labs((long)x - (long)y);
}

/* As the kernel test: w, m, v within one ulp of tt_adam_step's, the copy w in the storage type. */
static double adam_check(const adam_in *a, const tt_gpu_program *p, const tt_gpu *gpu, double *worst)
{
    const size_t c = ADAM_CHECK;
    float *dev[] = {a->d_w, a->d_m, a->d_v};
    const float *from[] = {a->w, a->m, a->v}, *want[] = {a->w_ref, a->m_ref, a->v_ref};
    for (int i = 0; i < 3; i++) TT_CUDA(cudaMemcpy(dev[i], from[i], c * 4, cudaMemcpyHostToDevice));
    TT_CUDA(cudaMemset(a->d_copy, 0xff, c * (a->bf16 ? 2 : 4)));
    adam_run(a, p, gpu, c);
    TT_CUDA(cudaDeviceSynchronize());
    long most = 0;
    for (int i = 0; i < 3; i++) {
        float *got = tt_gpu_download(dev[i], c, 0);
        for (size_t e = 0; e < c; e++) {
            const long u = isfinite(got[e]) ? ulps_apart(got[e], want[i][e]) : LONG_MAX / 2;
            if (u > most) most = u;
        }
        free(got);
    }
    float *copy = tt_gpu_download(a->d_copy, c, a->bf16), *w = tt_gpu_download(a->d_w, c, 0);
    round_to(w, c, a->bf16);
    for (size_t e = 0; e < c; e++)
        if (!(copy[e] == w[e])) most = LONG_MAX / 2;
    free(copy), free(w);
    *worst = (double)most; /* in ulps */
    return most <= 1 ? 0 : INFINITY;
}

/* A dropout site for a harness: p, the step in device memory (a graph replay's), a fixed seed. */
static tt_dropout harness_dropout(float p, unsigned long long **d_step, uint32_t site)
{
    const unsigned long long step = 4243 + site;
    TT_CUDA(cudaMalloc((void **)d_step, sizeof step));
    TT_CUDA(cudaMemcpy(*d_step, &step, sizeof step, cudaMemcpyHostToDevice));
    return (tt_dropout){.p = p, .seed = 0x7475ae, .step = *d_step, .site = site};
}

static void host_dropout(float *y, uint8_t *mask, const float *x, size_t n, tt_dropout dr)
{
    unsigned long long step;
    TT_CUDA(cudaMemcpy(&step, dr.step, sizeof step, cudaMemcpyDeviceToHost));
    cpu_dropout_fwd(y, mask, x, (long)n, dr.p, dr.seed, tt_dropout_stream(step, dr.site));
}

/* rows [rows, cols] into device memory ld apart, the padding zero; and back, compact */
static void *upload_rows(const float *x, int rows, int cols, int ld, int bf16)
{
    float *p = tt_xcalloc((size_t)rows * ld, 4);
    for (int r = 0; r < rows; r++) memcpy(p + (size_t)r * ld, x + (size_t)r * cols, (size_t)cols * 4);
    void *d = tt_gpu_upload(p, (size_t)rows * ld, bf16);
    free(p);
    return d;
}

static float *download_rows(const void *d, int rows, int cols, int ld, int bf16)
{
    float *all = tt_gpu_download(d, (size_t)rows * ld, bf16), *x = tt_xmalloc((size_t)rows * cols * 4);
    for (int r = 0; r < rows; r++) memcpy(x + (size_t)r * cols, all + (size_t)r * ld, (size_t)cols * 4);
    free(all);
    return x;
}

static void judge_host(const float *got, const float *want, size_t n, double tol, double *ratio,
                       double *worst)
{
    const double e = tt_rel_l2(got, want, n);
    if (!(e / tol <= *ratio)) *ratio = e / tol, *worst = e;
}

/* --- the FFN's activation (templates/ffn_act.cu) ------------------------------------------------ */

typedef struct {
    int rows, f, ld, bf16;
    float *h, *hd, *dz, *db1;            /* the CPU twin, compact */
    void *d_z, *d_h, *d_hd, *d_hc, *d_dhd, *d_dz;
    float *d_b1, *d_db1;
    unsigned long long *d_step;
    tt_dropout drop;
} ffn;

static void ffn_init(ffn *a, const tt_spec *s)
{
    memset(a, 0, sizeof *a);
    a->rows = s->train.batch * s->model.seq_len, a->f = s->model.d_inner;
    a->ld = (int)tt_row_pitch(a->f), a->bf16 = s->train.precision == TT_PREC_BF16;
    const int rows = a->rows, f = a->f, bf = a->bf16;
    const size_t nf = (size_t)rows * f;
    float *z = tt_xmalloc(nf * 4), *b1 = tt_xmalloc(f * 4), *dhd = tt_xmalloc(nf * 4);
    randn(z, nf, 1.f, 31, bf);
    randn(b1, f, 0.5f, 32, 0);
    randn(dhd, nf, 1.f, 33, bf);
    a->drop = harness_dropout(0.1f, &a->d_step, 7);
    a->h = tt_xmalloc(nf * 4), a->hd = tt_xmalloc(nf * 4), a->dz = tt_xmalloc(nf * 4);
    a->db1 = tt_xcalloc(f, 4);
    uint8_t *mask = tt_xmalloc(nf);
    for (size_t i = 0; i < nf; i++) a->h[i] = z[i] + b1[i % f];
    cpu_relu_fwd(a->h, a->h, (long)nf);
    host_dropout(a->hd, mask, a->h, nf, a->drop);
    round_to(a->h, nf, bf); /* the backward reads the stored h */
    cpu_dropout_bwd(a->dz, dhd, mask, (long)nf, a->drop.p);
    cpu_relu_bwd(a->dz, a->dz, a->h, (long)nf);
    cpu_linear_bwd(NULL, NULL, a->db1, a->dz, NULL, NULL, rows, 1, f);
    free(mask);
    const size_t bytes = (size_t)rows * a->ld * (bf ? 2 : 4);
    a->d_z = upload_rows(z, rows, f, a->ld, bf), a->d_b1 = tt_gpu_upload(b1, f, 0);
    a->d_hc = upload_rows(a->h, rows, f, a->ld, bf), a->d_dhd = upload_rows(dhd, rows, f, a->ld, bf);
    TT_CUDA(cudaMalloc(&a->d_h, bytes));
    TT_CUDA(cudaMalloc(&a->d_hd, bytes));
    TT_CUDA(cudaMalloc(&a->d_dz, bytes));
    TT_CUDA(cudaMalloc((void **)&a->d_db1, (size_t)f * 4));
    free(z), free(b1), free(dhd);
}

static void ffn_free(ffn *a)
{
    free(a->h), free(a->hd), free(a->dz), free(a->db1);
    void *dev[] = {a->d_z, a->d_h, a->d_hd, a->d_hc, a->d_dhd, a->d_dz, a->d_b1, a->d_db1, a->d_step};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
        if (dev[i]) cudaFree(dev[i]);
}

static void ffn_run(const ffn *a, const tt_gpu_program *p, const tt_gpu *gpu, int bwd, float *part)
{
    if (!bwd)
        tt_ffn_act_fwd(p, gpu->stream, a->d_h, a->d_hd, a->d_z, a->d_b1, a->rows, a->f, a->ld, a->drop);
    else
        tt_ffn_act_bwd(p, gpu->stream, a->d_dz, a->d_db1, part, a->d_dhd, a->d_hc, a->rows, a->f,
                       a->ld, a->drop);
}

static double ffn_check(const ffn *a, const tt_gpu_program *p, const tt_gpu *gpu, int bwd,
                        float *part, double *worst)
{
    const size_t bytes = (size_t)a->rows * a->ld * (a->bf16 ? 2 : 4), nf = (size_t)a->rows * a->f;
    const double tol = a->bf16 ? 1e-2 : 1e-5;
    double ratio = 0;
    *worst = 0;
    void *outs[] = {bwd ? a->d_dz : a->d_h, bwd ? a->d_db1 : a->d_hd};
    TT_CUDA(cudaMemset(outs[0], 0xff, bytes));
    TT_CUDA(cudaMemset(outs[1], 0xff, bwd ? (size_t)a->f * 4 : bytes));
    ffn_run(a, p, gpu, bwd, part);
    TT_CUDA(cudaDeviceSynchronize());
    float *x = download_rows(outs[0], a->rows, a->f, a->ld, a->bf16);
    judge_host(x, bwd ? a->dz : a->h, nf, tol, &ratio, worst);
    free(x);
    if (bwd) {
        judge(a->d_db1, a->db1, (size_t)a->f, 0, 1e-5, &ratio, worst);
    } else {
        x = download_rows(a->d_hd, a->rows, a->f, a->ld, a->bf16);
        judge_host(x, a->hd, nf, tol, &ratio, worst);
        free(x);
    }
    return ratio;
}

/* --- the cross-entropy of the head's logits (templates/xent.cu) --------------------------------- */

typedef struct {
    int rows, v, ld, bf16;
    float eps, scale;
    float *logits, *loss, *nll, *dl; /* host: the inputs, then the CPU twin */
    void *d_logits;
    float *d_loss, *d_nll;
    int32_t *d_t;
} xent_in;

static void xent_init(xent_in *a, const tt_spec *s, long vocab)
{
    memset(a, 0, sizeof *a);
    const tt_model_spec *m = &s->model;
    a->rows = s->train.batch * m->seq_len;
    a->v = (int)(m->n_cutoffs ? m->cutoffs[0] + m->n_cutoffs : vocab);
    a->ld = (int)tt_row_pitch(a->v), a->bf16 = s->train.precision == TT_PREC_BF16;
    a->eps = m->n_cutoffs ? 0.f : (float)s->train.label_smoothing, a->scale = 1.f / (float)a->rows;
    const size_t nl = (size_t)a->rows * a->v;
    a->logits = tt_xmalloc(nl * 4), a->dl = tt_xmalloc(nl * 4);
    a->loss = tt_xmalloc((size_t)a->rows * 4), a->nll = tt_xmalloc((size_t)a->rows * 4);
    randn(a->logits, nl, 2.f, 41, a->bf16);
    int32_t *t = tt_xmalloc((size_t)a->rows * 4);
    for (int r = 0; r < a->rows; r++) t[r] = (int32_t)(tt_uniform(0x7475ae, 42, (uint64_t)r) * a->v);
    for (int r = 0; r < a->rows; r++) {
        double n1;
        a->loss[r] = (float)cpu_cross_entropy(a->dl + (size_t)r * a->v, &n1, a->logits + (size_t)r * a->v,
                                              t + r, 1, a->v, a->eps, a->scale);
        a->nll[r] = (float)n1;
    }
    a->d_logits = upload_rows(a->logits, a->rows, a->v, a->ld, a->bf16);
    TT_CUDA(cudaMalloc((void **)&a->d_t, (size_t)a->rows * 4));
    TT_CUDA(cudaMemcpy(a->d_t, t, (size_t)a->rows * 4, cudaMemcpyHostToDevice));
    TT_CUDA(cudaMalloc((void **)&a->d_loss, (size_t)a->rows * 4));
    TT_CUDA(cudaMalloc((void **)&a->d_nll, (size_t)a->rows * 4));
    free(t);
}

static void xent_free(xent_in *a)
{
    free(a->logits), free(a->loss), free(a->nll), free(a->dl);
    void *dev[] = {a->d_logits, a->d_loss, a->d_nll, a->d_t};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
        if (dev[i]) cudaFree(dev[i]);
}

/* As training runs it: the losses, and the gradient over the logits in place. */
static void xent_run(const xent_in *a, const tt_gpu_program *p, const tt_gpu *gpu)
{
    tt_xent(p, gpu->stream, a->d_loss, a->d_nll, a->d_logits, a->d_t, NULL, a->rows, a->v, a->ld,
            a->eps, a->scale, true);
}

static double xent_check(const xent_in *a, const tt_gpu_program *p, const tt_gpu *gpu, double *worst)
{
    const size_t nl = (size_t)a->rows * a->v;
    double ratio = 0;
    *worst = 0;
    void *fresh = upload_rows(a->logits, a->rows, a->v, a->ld, a->bf16);
    TT_CUDA(cudaMemcpy(a->d_logits, fresh, (size_t)a->rows * a->ld * (a->bf16 ? 2 : 4),
                       cudaMemcpyDeviceToDevice));
    cudaFree(fresh);
    TT_CUDA(cudaMemset(a->d_loss, 0xff, (size_t)a->rows * 4));
    TT_CUDA(cudaMemset(a->d_nll, 0xff, (size_t)a->rows * 4));
    xent_run(a, p, gpu);
    TT_CUDA(cudaDeviceSynchronize());
    judge(a->d_loss, a->loss, (size_t)a->rows, 0, 1e-5, &ratio, worst);
    judge(a->d_nll, a->nll, (size_t)a->rows, 0, 1e-5, &ratio, worst);
    float *dl = download_rows(a->d_logits, a->rows, a->v, a->ld, a->bf16);
    judge_host(dl, a->dl, nl, a->bf16 ? 1e-2 : 1e-5, &ratio, worst);
    free(dl);
    return ratio;
}

/* --- Transformer-XL's shift, mask, softmax and dropatt (templates/txl_softmax.cu) --------------- */

typedef struct {
    int batch, heads, n, m, k, bf16;
    float scale;
    float *prob, *pdrop, *dac, *dbd;   /* the CPU twin, rows in the reference's order */
    float *d_ac, *d_bd, *d_dpd;        /* device inputs, rows head-major as the model keeps them */
    void *d_prob, *d_pdrop, *d_dac, *d_dbd, *d_probc;
    unsigned long long *d_step;
    tt_dropout drop;
} txl_sm;

/* rows (b, c, i) of the reference <-> (c, b, i) of the GPU (back: GPU to reference) */
static float *head_major(const float *src, const txl_sm *a, int back)
{
    const int b = a->batch, h = a->heads, n = a->n, k = a->k;
    float *dst = tt_xmalloc((size_t)b * h * n * k * 4);
    for (int s = 0; s < b; s++)
        for (int c = 0; c < h; c++) {
            const size_t ref = ((size_t)s * h + c) * n * k, gpu = ((size_t)c * b + s) * n * k;
            memcpy(dst + (back ? ref : gpu), src + (back ? gpu : ref), (size_t)n * k * 4);
        }
    return dst;
}

static void txl_sm_init(txl_sm *a, const tt_spec *s)
{
    memset(a, 0, sizeof *a);
    const tt_model_spec *m = &s->model;
    a->batch = s->train.batch, a->heads = m->n_head, a->n = m->seq_len, a->m = m->mem_len;
    a->k = a->m + a->n, a->bf16 = s->train.precision == TT_PREC_BF16;
    a->scale = (float)(1.0 / sqrt((double)m->d_head));
    const int rows = a->batch * a->heads * a->n, bf = a->bf16;
    const size_t ne = (size_t)rows * a->k;
    float *ac = tt_xmalloc(ne * 4), *bd = tt_xmalloc(ne * 4), *dpd = tt_xmalloc(ne * 4);
    randn(ac, ne, 2.f, 51, 0);
    randn(bd, ne, 2.f, 52, 0);
    randn(dpd, ne, 1.f, 53, 0);
    a->drop = harness_dropout((float)(m->dropatt > 0 ? m->dropatt : 0.1), &a->d_step, 9);
    a->prob = tt_xmalloc(ne * 4), a->pdrop = tt_xmalloc(ne * 4);
    a->dac = tt_xmalloc(ne * 4), a->dbd = tt_xmalloc(ne * 4);
    float *dprob = tt_xmalloc(ne * 4);
    uint8_t *mask = tt_xmalloc(ne);
    cpu_txl_probs(a->prob, ac, bd, rows, a->n, a->m, a->scale);
    round_to(a->prob, ne, bf); /* the backward reads the stored prob */
    host_dropout(a->pdrop, mask, a->prob, ne, a->drop);
    for (size_t e = 0; e < ne; e++) dprob[e] = mask[e] ? dpd[e] / (1.f - a->drop.p) : 0.f;
    cpu_txl_probs_bwd(a->dac, a->dbd, a->prob, dprob, rows, a->n, a->m, a->scale);
    float *hac = head_major(ac, a, 0), *hbd = head_major(bd, a, 0), *hdpd = head_major(dpd, a, 0);
    float *hprob = head_major(a->prob, a, 0);
    a->d_ac = tt_gpu_upload(hac, ne, 0), a->d_bd = tt_gpu_upload(hbd, ne, 0);
    a->d_dpd = tt_gpu_upload(hdpd, ne, 0), a->d_probc = tt_gpu_upload(hprob, ne, bf);
    void **outs[] = {&a->d_prob, &a->d_pdrop, &a->d_dac, &a->d_dbd};
    for (int i = 0; i < 4; i++) TT_CUDA(cudaMalloc(outs[i], ne * (bf ? 2 : 4)));
    free(ac), free(bd), free(dpd), free(dprob), free(mask), free(hac), free(hbd), free(hdpd), free(hprob);
}

static void txl_sm_free(txl_sm *a)
{
    free(a->prob), free(a->pdrop), free(a->dac), free(a->dbd);
    void *dev[] = {a->d_ac, a->d_bd, a->d_dpd, a->d_prob, a->d_pdrop, a->d_dac, a->d_dbd,
                   a->d_probc, a->d_step};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
        if (dev[i]) cudaFree(dev[i]);
}

/* The backward reads the CPU's prob (as the kernel test does), so each direction stands alone. */
static void txl_sm_run(const txl_sm *a, const tt_gpu_program *p, const tt_gpu *gpu, int bwd)
{
    if (!bwd)
        tt_txl_softmax_fwd(p, gpu->stream, a->d_prob, a->d_pdrop, a->d_ac, a->d_bd, a->batch,
                           a->heads, a->n, a->m, a->scale, a->drop);
    else
        tt_txl_softmax_bwd(p, gpu->stream, a->d_dac, a->d_dbd, a->d_dpd, a->d_probc, a->batch,
                           a->heads, a->n, a->m, a->scale, a->drop);
}

static double txl_sm_check(const txl_sm *a, const tt_gpu_program *p, const tt_gpu *gpu, int bwd,
                           double *worst)
{
    const size_t ne = (size_t)a->batch * a->heads * a->n * a->k, es = a->bf16 ? 2 : 4;
    const double tol = a->bf16 ? 1e-2 : 1e-5;
    double ratio = 0;
    *worst = 0;
    void *outs[2] = {bwd ? a->d_dac : a->d_prob, bwd ? a->d_dbd : a->d_pdrop};
    const float *want[2] = {bwd ? a->dac : a->prob, bwd ? a->dbd : a->pdrop};
    for (int i = 0; i < 2; i++) TT_CUDA(cudaMemset(outs[i], 0xff, ne * es));
    txl_sm_run(a, p, gpu, bwd);
    TT_CUDA(cudaDeviceSynchronize());
    for (int i = 0; i < 2; i++) {
        float *x = tt_gpu_download(outs[i], ne, a->bf16), *ref = head_major(x, a, 1);
        judge_host(ref, want[i], ne, tol, &ratio, worst);
        free(x), free(ref);
    }
    return ratio;
}

/* --- fp32 to the storage type (templates/cast.cu), over the model's parameters ----------------- */

#define PATTERN ((size_t)1 << 20) /* floats repeated over a large device array (never zeros) */

typedef struct {
    size_t n;
    int bf16;
    float *pattern; /* host: what every PATTERN floats of the input hold */
    float *d_in;
    void *d_out;
} cast_in;

/* a device array of n floats holding pattern (PATTERN of them) over and over */
static float *repeated(const float *pattern, size_t n)
{
    float *d;
    TT_CUDA(cudaMalloc((void **)&d, n * 4));
    TT_CUDA(cudaMemcpy(d, pattern, (n < PATTERN ? n : PATTERN) * 4, cudaMemcpyHostToDevice));
    for (size_t at = PATTERN; at < n; at += PATTERN)
        TT_CUDA(cudaMemcpy(d + at, d, (n - at < PATTERN ? n - at : PATTERN) * 4,
                           cudaMemcpyDeviceToDevice));
    return d;
}

static void cast_init(cast_in *a, const tt_spec *s, long params)
{
    memset(a, 0, sizeof *a);
    a->n = params > 0 ? (size_t)params : (size_t)1 << 24;
    a->bf16 = s->train.precision == TT_PREC_BF16;
    a->pattern = tt_xmalloc(PATTERN * 4);
    randn(a->pattern, PATTERN, 0.02f, 61, 0);
    a->d_in = repeated(a->pattern, a->n);
    TT_CUDA(cudaMalloc(&a->d_out, a->n * (a->bf16 ? 2 : 4)));
}

static void cast_free(cast_in *a)
{
    free(a->pattern);
    cudaFree(a->d_in), cudaFree(a->d_out);
}

static void cast_run(const cast_in *a, const tt_gpu_program *p, const tt_gpu *gpu)
{
    tt_cast(p, gpu->stream, a->d_out, a->d_in, (long)a->n);
}

/* every element, rounded as the CPU rounds (to nearest, ties to even): the same bits */
static double cast_check(const cast_in *a, const tt_gpu_program *p, const tt_gpu *gpu, double *worst)
{
    TT_CUDA(cudaMemset(a->d_out, 0xff, a->n * (a->bf16 ? 2 : 4)));
    cast_run(a, p, gpu);
    TT_CUDA(cudaDeviceSynchronize());
    float *got = tt_gpu_download(a->d_out, a->n, a->bf16);
    size_t differ = 0;
    for (size_t i = 0; i < a->n; i++) {
        float want = a->pattern[i % PATTERN];
        round_to(&want, 1, a->bf16);
        differ += !(got[i] == want);
    }
    free(got);
    *worst = (double)differ; /* elements that differ */
    return differ ? INFINITY : 0;
}

/* --- the embedding of one table (templates/embedding.cu) ---------------------------------------- */

typedef struct {
    int rows, d, bf16;
    long vocab;
    float *pattern, *x0;  /* the table's repeated values; the CPU twin's x0 */
    float *d_emb;
    int32_t *d_tok;
    void *d_x0;
    unsigned long long *d_step;
    tt_dropout drop;
} emb_in;

static void emb_init(emb_in *a, const tt_spec *s, long vocab)
{
    memset(a, 0, sizeof *a);
    a->rows = s->train.batch * s->model.seq_len, a->d = s->model.d_model, a->vocab = vocab;
    a->bf16 = s->train.precision == TT_PREC_BF16;
    const int rows = a->rows, d = a->d;
    const size_t nd = (size_t)rows * d;
    a->pattern = tt_xmalloc(PATTERN * 4);
    randn(a->pattern, PATTERN, 0.5f, 71, 0);
    a->d_emb = repeated(a->pattern, (size_t)vocab * d);
    int32_t *tok = tt_xmalloc((size_t)rows * 4);
    for (int r = 0; r < rows; r++) /* frequent words often, as text has them */
        tok[r] = (int32_t)((double)vocab * pow(tt_uniform(0x7475ae, 72, (uint64_t)r), 4.0));
    a->drop = harness_dropout((float)(s->model.dropout > 0 ? s->model.dropout : 0.1), &a->d_step, 0);
    const float scale = (float)sqrt((double)d);
    a->x0 = tt_xmalloc(nd * 4);
    for (int r = 0; r < rows; r++)
        for (int i = 0; i < d; i++)
            a->x0[(size_t)r * d + i] = a->pattern[((size_t)tok[r] * d + i) % PATTERN] * scale;
    uint8_t *mask = tt_xmalloc(nd);
    host_dropout(a->x0, mask, a->x0, nd, a->drop);
    free(mask);
    TT_CUDA(cudaMalloc((void **)&a->d_tok, (size_t)rows * 4));
    TT_CUDA(cudaMemcpy(a->d_tok, tok, (size_t)rows * 4, cudaMemcpyHostToDevice));
    TT_CUDA(cudaMalloc(&a->d_x0, nd * (a->bf16 ? 2 : 4)));
    free(tok);
}

static void emb_free(emb_in *a)
{
    free(a->pattern), free(a->x0);
    void *dev[] = {a->d_emb, a->d_tok, a->d_x0, a->d_step};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
        if (dev[i]) cudaFree(dev[i]);
}

static void emb_run(const emb_in *a, const tt_gpu_program *p, const tt_gpu *gpu)
{
    tt_embedding_fwd(p, gpu->stream, a->d_x0, a->d_emb, a->d_tok, a->rows, a->d, a->d, (int)a->vocab,
                     a->drop);
}

static double emb_check(const emb_in *a, const tt_gpu_program *p, const tt_gpu *gpu, double *worst)
{
    const size_t nd = (size_t)a->rows * a->d;
    double ratio = 0;
    *worst = 0;
    TT_CUDA(cudaMemset(a->d_x0, 0xff, nd * (a->bf16 ? 2 : 4)));
    emb_run(a, p, gpu);
    TT_CUDA(cudaDeviceSynchronize());
    judge(a->d_x0, a->x0, nd, a->bf16, a->bf16 ? 1e-2 : 1e-5, &ratio, worst);
    return ratio;
}

/* --- a tail cluster's rows gathered (templates/adaptive.cu) -------------------------------------- */

typedef struct {
    int rows, d, count, bf16;
    float *xc;      /* the CPU twin: the listed rows, zero rows for the padding */
    void *d_x, *d_xc;
    int32_t *d_idx;
} gather_in;

/* Every fifth row listed (a tail's share of the rows), padded with -1 to the bucket, as
 * route_batch lists a cluster's rows. */
static void gather_init(gather_in *a, const tt_spec *s)
{
    memset(a, 0, sizeof *a);
    a->rows = s->train.batch * s->model.seq_len, a->d = s->model.d_model;
    a->bf16 = s->train.precision == TT_PREC_BF16;
    const int listed = (a->rows + 4) / 5;
    a->count = (listed + TT_ADAPTIVE_BUCKET - 1) / TT_ADAPTIVE_BUCKET * TT_ADAPTIVE_BUCKET;
    const size_t nd = (size_t)a->rows * a->d;
    float *x = tt_xmalloc(nd * 4);
    randn(x, nd, 1.f, 81, a->bf16);
    int32_t *idx = tt_xmalloc((size_t)a->count * 4);
    a->xc = tt_xcalloc((size_t)a->count * a->d, 4);
    for (int i = 0; i < a->count; i++) {
        idx[i] = i < listed ? 5 * i : -1;
        if (i < listed) memcpy(a->xc + (size_t)i * a->d, x + (size_t)idx[i] * a->d, (size_t)a->d * 4);
    }
    a->d_x = tt_gpu_upload(x, nd, a->bf16);
    TT_CUDA(cudaMalloc((void **)&a->d_idx, (size_t)a->count * 4));
    TT_CUDA(cudaMemcpy(a->d_idx, idx, (size_t)a->count * 4, cudaMemcpyHostToDevice));
    TT_CUDA(cudaMalloc(&a->d_xc, (size_t)a->count * a->d * (a->bf16 ? 2 : 4)));
    free(x), free(idx);
}

static void gather_free(gather_in *a)
{
    free(a->xc);
    cudaFree(a->d_x), cudaFree(a->d_xc), cudaFree(a->d_idx);
}

static void gather_run(const gather_in *a, const tt_gpu_program *p, const tt_gpu *gpu)
{
    tt_adaptive_gather(p, gpu->stream, a->d_xc, a->d_x, a->d_idx, a->count, a->d, a->d);
}

/* copies: the same values exactly */
static double gather_check(const gather_in *a, const tt_gpu_program *p, const tt_gpu *gpu,
                           double *worst)
{
    double ratio = 0;
    *worst = 0;
    TT_CUDA(cudaMemset(a->d_xc, 0xff, (size_t)a->count * a->d * (a->bf16 ? 2 : 4)));
    gather_run(a, p, gpu);
    TT_CUDA(cudaDeviceSynchronize());
    judge(a->d_xc, a->xc, (size_t)a->count * a->d, a->bf16, 1e-30, &ratio, worst);
    return *worst == 0 ? 0 : INFINITY;
}

/* --- Transformer-XL's heads split out of the projections (templates/txl.cu) --------------------- */

typedef struct {
    int batch, n, m, heads, dh, dp, bf16;
    float *qu, *qv, *k, *v;       /* the CPU twin, [H][rows][DP], zero past d_head */
    void *d_qkv, *d_kvm, *d_qu, *d_qv, *d_k, *d_v;
    float *d_u, *d_vb;
} heads_in;

static void heads_init(heads_in *a, const tt_spec *s)
{
    memset(a, 0, sizeof *a);
    const tt_model_spec *m = &s->model;
    a->batch = s->train.batch, a->n = m->seq_len, a->m = m->mem_len, a->heads = m->n_head;
    a->dh = m->d_head, a->dp = (int)tt_row_pitch(m->d_head);
    a->bf16 = s->train.precision == TT_PREC_BF16;
    const int B = a->batch, n = a->n, mm = a->m, H = a->heads, dh = a->dh, dp = a->dp, hd = H * dh;
    const int klen = mm + n, bf = a->bf16;
    float *qkv = tt_xmalloc((size_t)B * n * 3 * hd * 4), *kvm = tt_xmalloc((size_t)B * mm * 2 * hd * 4 + 4);
    float *u = tt_xmalloc((size_t)hd * 4), *vb = tt_xmalloc((size_t)hd * 4);
    randn(qkv, (size_t)B * n * 3 * hd, 1.f, 91, bf);
    randn(kvm, (size_t)B * mm * 2 * hd, 1.f, 92, bf);
    randn(u, hd, 0.5f, 93, 0);
    randn(vb, hd, 0.5f, 94, 0);
    a->qu = tt_xcalloc((size_t)H * B * n * dp, 4), a->qv = tt_xcalloc((size_t)H * B * n * dp, 4);
    a->k = tt_xcalloc((size_t)H * B * klen * dp, 4), a->v = tt_xcalloc((size_t)H * B * klen * dp, 4);
    for (int c = 0; c < H; c++)
        for (int b = 0; b < B; b++)
            for (int j = 0; j < klen; j++)
                for (int e = 0; e < dh; e++) {
                    const int col = c * dh + e;
                    const size_t at = (((size_t)c * B + b) * klen + j) * dp + e;
                    const float *src = j < mm ? kvm + ((size_t)b * mm + j) * 2 * hd
                                              : qkv + ((size_t)b * n + j - mm) * 3 * hd + hd;
                    a->k[at] = src[col], a->v[at] = src[hd + col];
                    if (j < mm) continue;
                    const size_t q = (((size_t)c * B + b) * n + j - mm) * dp + e;
                    const float x = qkv[((size_t)b * n + j - mm) * 3 * hd + col];
                    a->qu[q] = x + u[col], a->qv[q] = x + vb[col];
                }
    round_to(a->qu, (size_t)H * B * n * dp, bf);
    round_to(a->qv, (size_t)H * B * n * dp, bf);
    a->d_qkv = tt_gpu_upload(qkv, (size_t)B * n * 3 * hd, bf);
    a->d_kvm = tt_gpu_upload(kvm, (size_t)B * mm * 2 * hd, bf);
    a->d_u = tt_gpu_upload(u, hd, 0), a->d_vb = tt_gpu_upload(vb, hd, 0);
    const size_t es = bf ? 2 : 4;
    TT_CUDA(cudaMalloc(&a->d_qu, (size_t)H * B * n * dp * es));
    TT_CUDA(cudaMalloc(&a->d_qv, (size_t)H * B * n * dp * es));
    TT_CUDA(cudaMalloc(&a->d_k, (size_t)H * B * klen * dp * es));
    TT_CUDA(cudaMalloc(&a->d_v, (size_t)H * B * klen * dp * es));
    free(qkv), free(kvm), free(u), free(vb);
}

static void heads_free(heads_in *a)
{
    free(a->qu), free(a->qv), free(a->k), free(a->v);
    void *dev[] = {a->d_qkv, a->d_kvm, a->d_qu, a->d_qv, a->d_k, a->d_v, a->d_u, a->d_vb};
    for (size_t i = 0; i < sizeof dev / sizeof *dev; i++)
        if (dev[i]) cudaFree(dev[i]);
}

static void heads_run(const heads_in *a, const tt_gpu_program *p, const tt_gpu *gpu)
{
    tt_txl_heads_qkv(p, gpu->stream, a->d_qu, a->d_qv, a->d_k, a->d_v, a->d_qkv,
                     a->m ? a->d_kvm : NULL, a->d_u, a->d_vb, a->batch, a->n, a->m,
                     (tt_qkv_rows){3 * a->heads * a->dh, 2 * a->heads * a->dh, a->heads * a->dh});
}

/* moves and one rounded sum: the same values exactly, the padding zero */
static double heads_check(const heads_in *a, const tt_gpu_program *p, const tt_gpu *gpu,
                          double *worst)
{
    const size_t nq = (size_t)a->heads * a->batch * a->n * a->dp;
    const size_t nk = (size_t)a->heads * a->batch * (a->m + a->n) * a->dp, es = a->bf16 ? 2 : 4;
    double ratio = 0;
    *worst = 0;
    void *outs[] = {a->d_qu, a->d_qv, a->d_k, a->d_v};
    const float *want[] = {a->qu, a->qv, a->k, a->v};
    for (int i = 0; i < 4; i++) TT_CUDA(cudaMemset(outs[i], 0xff, (i < 2 ? nq : nk) * es));
    heads_run(a, p, gpu);
    TT_CUDA(cudaDeviceSynchronize());
    for (int i = 0; i < 4; i++) judge(outs[i], want[i], i < 2 ? nq : nk, a->bf16, 1e-30, &ratio, worst);
    return *worst == 0 ? 0 : INFINITY;
}

/* --- every harness behind one pair of calls ------------------------------------------------------ */

typedef struct {
    attn a;
    ln l;
    adam_in ad;
    ffn f;
    xent_in x;
    txl_sm t;
    cast_in c;
    emb_in e;
    gather_in g;
    heads_in q;
    int have_a, have_l, have_ad, have_f, have_x, have_t, have_c, have_e, have_g, have_q;
} inputs;

static void inputs_need(inputs *in, harness h, const tt_spec *s, int check, long params,
                        long vocab, FILE *out)
{
    if ((h == MLA_FWD || h == MLA_BWD) && !in->have_a) {
        if (out) {
            fprintf(out, "the attention's CPU twin at batch %d (the reference every variant is held to)...\n",
                    check);
            fflush(out);
        }
        attn_init(&in->a, s, check);
        in->have_a = 1;
    }
    if ((h == LN_FWD || h == LN_BWD) && !in->have_l) ln_init(&in->l, s), in->have_l = 1;
    if (h == ADAM && !in->have_ad) adam_init(&in->ad, s, params), in->have_ad = 1;
    if ((h == FFN_FWD || h == FFN_BWD) && !in->have_f) ffn_init(&in->f, s), in->have_f = 1;
    if (h == XENT && !in->have_x) xent_init(&in->x, s, vocab), in->have_x = 1;
    if ((h == TXL_FWD || h == TXL_BWD) && !in->have_t) txl_sm_init(&in->t, s), in->have_t = 1;
    if (h == CAST && !in->have_c) cast_init(&in->c, s, params), in->have_c = 1;
    if (h == EMB_FWD && !in->have_e) emb_init(&in->e, s, vocab), in->have_e = 1;
    if (h == GATHER && !in->have_g) gather_init(&in->g, s), in->have_g = 1;
    if (h == TXL_QKV && !in->have_q) heads_init(&in->q, s), in->have_q = 1;
}

static void inputs_free(inputs *in)
{
    if (in->have_a) attn_free(&in->a);
    if (in->have_l) ln_free(&in->l);
    if (in->have_ad) adam_free(&in->ad);
    if (in->have_f) ffn_free(&in->f);
    if (in->have_x) xent_free(&in->x);
    if (in->have_t) txl_sm_free(&in->t);
    if (in->have_c) cast_free(&in->c);
    if (in->have_e) emb_free(&in->e);
    if (in->have_g) gather_free(&in->g);
    if (in->have_q) heads_free(&in->q);
}

/* The scratch a variant's program needs for harness h (floats). */
static size_t scratch_floats(const inputs *in, harness h, const tt_gpu_program *p)
{
    if (h == MLA_FWD || h == MLA_BWD) return tt_mla_scratch_floats(p, in->a.batch);
    if (h == LN_BWD) return ln_part_floats(&in->l, p);
    if (h == FFN_BWD) return tt_ffn_act_bwd_part_floats(p);
    return 0;
}

static double unit_check(const inputs *in, harness h, const tt_gpu_program *p, const tt_gpu *gpu,
                         float *scratch, double *worst)
{
    switch (h) {
    case MLA_FWD:
    case MLA_BWD: return attn_check(&in->a, p, gpu, h == MLA_BWD, scratch, worst);
    case LN_FWD:
    case LN_BWD: return ln_check(&in->l, p, gpu, h == LN_BWD, scratch, worst);
    case ADAM: return adam_check(&in->ad, p, gpu, worst);
    case FFN_FWD:
    case FFN_BWD: return ffn_check(&in->f, p, gpu, h == FFN_BWD, scratch, worst);
    case XENT: return xent_check(&in->x, p, gpu, worst);
    case TXL_FWD:
    case TXL_BWD: return txl_sm_check(&in->t, p, gpu, h == TXL_BWD, worst);
    case CAST: return cast_check(&in->c, p, gpu, worst);
    case EMB_FWD: return emb_check(&in->e, p, gpu, worst);
    case GATHER: return gather_check(&in->g, p, gpu, worst);
    case TXL_QKV: return heads_check(&in->q, p, gpu, worst);
    }
    return INFINITY;
}

typedef struct {
    const inputs *in;
    harness h;
    const tt_gpu_program *p;
    const tt_gpu *gpu;
    float *scratch;
} timed;

/* One run of the unit at the spec's sizes, as the trainer runs it. */
static void timed_run(const void *arg)
{
    const timed *t = arg;
    switch (t->h) {
    case MLA_FWD:
    case MLA_BWD: attn_run(&t->in->a, t->p, t->gpu, t->h == MLA_BWD, t->in->a.batch, t->scratch); break;
    case LN_FWD:
    case LN_BWD: ln_run(&t->in->l, t->p, t->gpu, t->h == LN_BWD, t->scratch); break;
    case ADAM: adam_run(&t->in->ad, t->p, t->gpu, t->in->ad.n); break;
    case FFN_FWD:
    case FFN_BWD: ffn_run(&t->in->f, t->p, t->gpu, t->h == FFN_BWD, t->scratch); break;
    case XENT: xent_run(&t->in->x, t->p, t->gpu); break;
    case TXL_FWD:
    case TXL_BWD: txl_sm_run(&t->in->t, t->p, t->gpu, t->h == TXL_BWD); break;
    case CAST: cast_run(&t->in->c, t->p, t->gpu); break;
    case EMB_FWD: emb_run(&t->in->e, t->p, t->gpu); break;
    case GATHER: gather_run(&t->in->g, t->p, t->gpu); break;
    case TXL_QKV: heads_run(&t->in->q, t->p, t->gpu); break;
    }
}

/* The median of iters event-timed runs, after WARMUP. */
static double unit_time(const inputs *in, harness h, const tt_gpu_program *p, const tt_gpu *gpu,
                        float *scratch, int iters)
{
    const timed t = {in, h, p, gpu, scratch};
    for (int i = 0; i < WARMUP; i++) timed_run(&t);
    return tt_gpu_median_ms(gpu->stream, iters, timed_run, &t);
}

/* --- the search ------------------------------------------------------------------------------ */

typedef struct {
    tt_tuning t;     /* the choices so far plus this variant's values */
    char label[96];  /* "G=2 TD=64" */
    char error[320]; /* why it was skipped, if it was */
    int heuristic;   /* the plan's own choice */
    double err, ms;
    tt_gpu_program prog;
    int loaded;
} variant;

static const tt_kernel *kernel_of(const tt_plan *p, const char *op)
{
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->kernels[i].op, op)) return &p->kernels[i];
    return NULL;
}

/* Every kernel of the variants' plans, once, compiled in parallel into the cache: loading a
 * variant then finds its CUBINs there. */
static int compile_all(const tt_spec *spec, const char *arch, variant *v, int nv,
                       const tt_cache *cache, int jobs, char *err, size_t errlen)
{
    tt_plan all = {0};
    snprintf(all.arch, sizeof all.arch, "%s", arch);
    for (int i = 0; i < nv; i++) {
        if (v[i].error[0]) continue;
        tt_plan p;
        if (tt_plan_build_tuned(spec, arch, &v[i].t, &p, err, errlen) != 0) return -1;
        for (int k = 0; k < p.n; k++) {
            int seen = 0;
            for (int j = 0; j < all.n && !seen; j++) seen = tt_kernel_same(&all.kernels[j], &p.kernels[k]);
            if (seen) continue;
            all.kernels = tt_xrealloc(all.kernels, (size_t)(all.n + 1) * sizeof *all.kernels);
            all.kernels[all.n++] = p.kernels[k];
        }
        tt_plan_free(&p);
    }
    char *failed = tt_xasprintf("%s/failed", cache->dir);
    tt_build_opts o = {.arch = arch, .cache = cache, .failure_dir = failed, .jobs = jobs};
    tt_build *b = NULL;
    int rc = tt_builds_prepare(&all, &o, &b, err, errlen);
    if (rc == 0 && tt_builds_run(b, all.n, &o) != 0) {
        for (int i = 0; i < all.n; i++)
            if (b[i].error) {
                tt_errf(err, errlen, "%s", b[i].error);
                break;
            }
        rc = -1;
    }
    tt_builds_free(b, all.n);
    tt_plan_free(&all);
    free(failed);
    return rc;
}

/* The variants of op: the product of its tunables' values over the choices made so far. */
static variant *enumerate(const tt_spec *spec, const char *arch, const tt_kernel *k,
                          const tt_tunable *tu, int nt, const tt_tuning *so_far,
                          const tt_kernel *heuristic, int *count)
{
    const tt_tunable *mine[TT_TUNE_KEYS];
    int nm = 0, total = 1;
    for (int i = 0; i < nt && nm < TT_TUNE_KEYS; i++)
        if (!strcmp(tu[i].template_file, k->template_file) && !strcmp(tu[i].op, k->op)) {
            mine[nm++] = &tu[i];
            total *= tu[i].n_values;
        }
    variant *v = tt_xcalloc((size_t)total, sizeof *v);
    for (int idx = 0; idx < total; idx++) {
        variant *x = &v[idx];
        for (int c = 0; c < so_far->n; c++)
            tt_tuning_set(&x->t, so_far->c[c].op, so_far->c[c].key, so_far->c[c].value);
        int rest = idx, used = 0;
        for (int m = 0; m < nm; m++) { /* the first tunable varies slowest */
            int stride = 1;
            for (int q = m + 1; q < nm; q++) stride *= mine[q]->n_values;
            const long value = mine[m]->values[(rest / stride) % mine[m]->n_values];
            tt_tuning_set(&x->t, k->op, mine[m]->key, value);
            used += snprintf(x->label + used, sizeof x->label - (size_t)used, "%s%s=%ld",
                             m ? " " : "", mine[m]->key, value);
        }
        tt_plan p;
        if (tt_plan_build_tuned(spec, arch, &x->t, &p, x->error, sizeof x->error) == 0) {
            const tt_kernel *mk = kernel_of(&p, k->op);
            x->heuristic = mk && tt_kernel_same(mk, heuristic);
            tt_plan_free(&p);
        }
    }
    int found = 0;
    for (int i = 0; i < total; i++) found |= v[i].heuristic;
    if (!found) { /* the heuristic's values are not among the declared ones: time them too */
        v = tt_xrealloc(v, (size_t)(total + 1) * sizeof *v);
        variant *x = &v[total++];
        memset(x, 0, sizeof *x);
        for (int c = 0; c < so_far->n; c++)
            tt_tuning_set(&x->t, so_far->c[c].op, so_far->c[c].key, so_far->c[c].value);
        tt_kernel_variant(heuristic, tu, nt, x->label, sizeof x->label);
        if (tt_variant_parse(x->label, k->op, &x->t) != 0)
            snprintf(x->error, sizeof x->error, "the heuristic's variant '%s' does not parse", x->label);
        x->heuristic = 1;
    }
    *count = total;
    return v;
}

static void release(variant *v)
{
    if (v->loaded) tt_gpu_program_free(&v->prog);
    v->loaded = 0;
}

/* Tunes one op; its choice joins *so_far. */
static int tune_op(const tt_spec *spec, const tt_gpu *gpu, const tt_cache *cache,
                   const tt_tune_opts *o, const inputs *in, harness h, const tt_kernel *k,
                   const tt_tunable *tu, int nt, tt_tuning *so_far, char *err, size_t errlen)
{
    FILE *out = o->out;
    const char *unit = timed_unit[h];
    /* the heuristic's kernel, given the choices so far */
    tt_plan base;
    if (tt_plan_build_tuned(spec, gpu->arch, so_far, &base, err, errlen) != 0) return -1;
    const tt_kernel *hk = kernel_of(&base, k->op);
    char sig[320], heur_label[96];
    if (tt_kernel_signature(k, spec, gpu->arch, tu, nt, sig, sizeof sig, err, errlen) != 0) {
        tt_plan_free(&base);
        return -1;
    }
    tt_kernel_variant(hk, tu, nt, heur_label, sizeof heur_label);
    int nv;
    variant *v = enumerate(spec, gpu->arch, k, tu, nt, so_far, hk, &nv);
    tt_plan_free(&base);
    if (out) {
        fprintf(out, "\n%s (templates/%s): %d variants, timing %s", k->op, k->template_file, nv, unit);
        if (h == MLA_FWD || h == MLA_BWD)
            fprintf(out, " at batch %d, checked against the CPU at batch %d\n", in->a.batch,
                    in->a.check);
        else if (h == ADAM)
            fprintf(out, " over %zu parameters, checked against the CPU on %d\n", in->ad.n,
                    ADAM_CHECK);
        else if (h == FFN_FWD || h == FFN_BWD)
            fprintf(out, " on %d rows of %d, checked against the CPU on all of them\n", in->f.rows,
                    in->f.f);
        else if (h == XENT)
            fprintf(out, " on %d rows of %d logits, checked against the CPU on all of them\n",
                    in->x.rows, in->x.v);
        else if (h == GATHER)
            fprintf(out, " on %d listed rows of %d, checked against the CPU on all of them\n",
                    in->g.count, in->g.d);
        else if (h == TXL_QKV)
            fprintf(out, " for %d sequences of %d rows and %d of memory, checked against the CPU on "
                    "all of them\n", in->q.batch, in->q.n, in->q.m);
        else if (h == CAST)
            fprintf(out, " over %zu parameters, checked against the CPU on all of them\n", in->c.n);
        else if (h == EMB_FWD)
            fprintf(out, " on %d rows of %d from %ld words, checked against the CPU on all of them\n",
                    in->e.rows, in->e.d, in->e.vocab);
        else if (h == TXL_FWD || h == TXL_BWD)
            fprintf(out, " on %d rows of %d keys, checked against the CPU on all of them\n",
                    in->t.batch * in->t.heads * in->t.n, in->t.k);
        else
            fprintf(out, " on %d rows of %d, checked against the CPU on all of them\n", in->l.rows,
                    in->l.d);
        fflush(out);
    }
    const double t0 = tt_now_seconds();
    if (compile_all(spec, gpu->arch, v, nv, cache, o->jobs, err, errlen) != 0) goto fail;
    if (out) fprintf(out, "  built in %.1f s\n  %-22s %-22s %10s %8s\n", tt_now_seconds() - t0,
                     "variant", h == ADAM ? "check (ulps)" : h == CAST ? "check (differ)" : "check (rel. error)",
                     "ms", "speed");
    int best = -1, heur = -1;
    for (int i = 0; i < nv; i++) {
        variant *x = &v[i];
        if (x->heuristic) heur = i;
        if (x->error[0]) {
            if (out) fprintf(out, "  %-22s skipped: %s\n", x->label, x->error);
            continue;
        }
        tt_plan p;
        if (tt_plan_build_tuned(spec, gpu->arch, &x->t, &p, err, errlen) != 0 ||
            tt_gpu_program_load_plan(&x->prog, &p, gpu, cache, err, errlen) != 0)
            goto fail;
        x->loaded = 1;
        float *scratch;
        TT_CUDA(cudaMalloc((void **)&scratch, (scratch_floats(in, h, &x->prog) + 1) * 4));
        double worst = 0;
        const double ratio = unit_check(in, h, &x->prog, gpu, scratch, &worst);
        x->err = worst;
        if (!(ratio <= 1)) {
            snprintf(x->error, sizeof x->error, "WRONG: %s %.2e over its tolerance",
                     h == ADAM ? "ulps" : h == CAST ? "elements differ:" : "relative error", worst);
            if (out) fprintf(out, "  %-22s %s\n", x->label, x->error);
            cudaFree(scratch);
            release(x);
            continue;
        }
        x->ms = unit_time(in, h, &x->prog, gpu, scratch, o->iters);
        cudaFree(scratch);
        if (best < 0 || x->ms < v[best].ms) best = i;
        if (!x->heuristic) release(x); /* kept: the heuristic's, for the final comparison */
    }
    if (heur < 0 || v[heur].error[0]) {
        tt_errf(err, errlen, "%s: the plan's own variant (%s) failed: %s", k->op, heur_label,
                heur < 0 ? "not among the variants" : v[heur].error);
        goto fail;
    }
    for (int i = 0; i < nv && out; i++) {
        if (v[i].error[0]) continue;
        char check[32];
        snprintf(check, sizeof check, h == ADAM || h == CAST ? "ok (%.0f)" : "ok (%.1e)", v[i].err);
        fprintf(out, "  %-22s %-22s %10.4f %7.2fx%s%s\n", v[i].label, check, v[i].ms,
                v[heur].ms / v[i].ms, i == heur ? "  the heuristic's" : "", i == best ? "  fastest" : "");
    }
    /* the gain, measured again with the two alternating, so that drift hits both alike */
    double best_ms = v[best].ms, heur_ms = v[heur].ms;
    if (best != heur) {
        tt_plan p;
        if (tt_plan_build_tuned(spec, gpu->arch, &v[best].t, &p, err, errlen) != 0 ||
            tt_gpu_program_load_plan(&v[best].prog, &p, gpu, cache, err, errlen) != 0)
            goto fail;
        v[best].loaded = 1;
        float *scratch;
        const size_t f1 = scratch_floats(in, h, &v[best].prog), f2 = scratch_floats(in, h, &v[heur].prog);
        TT_CUDA(cudaMalloc((void **)&scratch, ((f1 > f2 ? f1 : f2) + 1) * 4));
        double hb[3], bb[3];
        for (int round = 0; round < 3; round++) {
            hb[round] = unit_time(in, h, &v[heur].prog, gpu, scratch, o->iters);
            bb[round] = unit_time(in, h, &v[best].prog, gpu, scratch, o->iters);
        }
        cudaFree(scratch);
        qsort(hb, 3, sizeof *hb, cmp_double);
        qsort(bb, 3, sizeof *bb, cmp_double);
        heur_ms = hb[1], best_ms = bb[1];
    }
    /* the heuristic stays unless the other is faster in the alternating measurement too */
    const int keep = best == heur || !(best_ms < heur_ms);
    const variant *chosen = keep ? &v[heur] : &v[best];
    tt_tune_entry e = {0};
    snprintf(e.card, sizeof e.card, "%s", gpu->name);
    snprintf(e.signature, sizeof e.signature, "%s", sig);
    snprintf(e.variant, sizeof e.variant, "%s", chosen->label);
    snprintf(e.default_variant, sizeof e.default_variant, "%s", heur_label);
    e.best_ms = keep ? heur_ms : best_ms;
    e.default_ms = heur_ms;
    snprintf(e.unit, sizeof e.unit, "%s", unit);
    tt_tune_today(e.date);
    char *path = tt_tuning_path(cache->dir);
    const int rc = tt_tuning_store(path, &e, err, errlen);
    free(path);
    if (rc != 0) goto fail;
    for (int c = 0; c < chosen->t.n; c++)
        if (!strcmp(chosen->t.c[c].op, k->op))
            tt_tuning_set(so_far, k->op, chosen->t.c[c].key, chosen->t.c[c].value);
    if (out) {
        if (best == heur)
            fprintf(out, "  chosen: %s, the heuristic's (fastest of all): %.4f ms\n", chosen->label,
                    heur_ms);
        else if (keep)
            fprintf(out, "  chosen: %s, the heuristic's: the fastest, %s, was not faster when the "
                    "two were timed alternately (%.4f ms against %.4f)\n", chosen->label,
                    v[best].label, best_ms, heur_ms);
        else
            fprintf(out, "  chosen: %s: %.4f ms against %.4f ms for the heuristic's %s, timed "
                    "alternately (%.2fx)\n", chosen->label, e.best_ms, heur_ms, heur_label,
                    heur_ms / e.best_ms);
        fflush(out);
    }
    for (int i = 0; i < nv; i++) release(&v[i]), tt_tuning_free(&v[i].t);
    free(v);
    return 0;
fail:
    for (int i = 0; i < nv; i++) release(&v[i]), tt_tuning_free(&v[i].t);
    free(v);
    return -1;
}

int tt_tune(const tt_spec *spec, const tt_gpu *gpu, const tt_cache *cache, const tt_tune_opts *o,
            char *err, size_t errlen)
{
    tt_tune_opts opts = *o;
    if (opts.iters < 3) opts.iters = 30;
    tt_tunable *tu;
    int nt;
    if (tt_tunables_load(NULL, &tu, &nt, err, errlen) != 0) return -1;
    tt_plan plan;
    if (tt_plan_build(spec, gpu->arch, &plan, err, errlen) != 0) {
        free(tu);
        return -1;
    }
    int check = opts.check_batch > 0 ? opts.check_batch : spec->train.batch;
    if (check > spec->train.batch) check = spec->train.batch;
    if (opts.check_batch <= 0 && check > CHECK_BATCH_MAX) check = CHECK_BATCH_MAX;
    inputs in = {0};
    int rc = 0, tuned = 0;
    tt_tuning so_far = {0};
    for (size_t u = 0; u < sizeof units / sizeof *units && rc == 0; u++) {
        const tt_kernel *k = kernel_of(&plan, units[u].op);
        int declared = 0;
        for (int i = 0; k && i < nt; i++)
            declared |= !strcmp(tu[i].template_file, k->template_file) && !strcmp(tu[i].op, k->op);
        if (!declared) continue;
        if ((units[u].h == XENT || units[u].h == EMB_FWD) && opts.vocab <= 0 &&
            spec->model.vocab <= 0) {
            if (opts.out)
                fprintf(opts.out, "\n%s: not tuned: the vocabulary is not known yet\n", units[u].op);
            continue;
        }
        inputs_need(&in, units[u].h, spec, check, opts.params,
                    opts.vocab > 0 ? opts.vocab : spec->model.vocab, opts.out);
        rc = tune_op(spec, gpu, cache, &opts, &in, units[u].h, k, tu, nt, &so_far, err, errlen);
        tuned += rc == 0;
    }
    if (rc == 0 && !tuned)
        rc = tt_errf(err, errlen, "no kernel of this spec's plan declares tunables");
    inputs_free(&in);
    tt_tuning_free(&so_far);
    tt_plan_free(&plan);
    free(tu);
    return rc;
}
