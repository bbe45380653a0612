/* Every generated kernel against its CPU twin (cpu/cpu_ops.c) on the GPU, on fresh random
 * inputs, with outputs poisoned (NaN) first so that an unwritten element fails. Tolerances are
 * relative L2 errors that fit the precision: fp32 1e-5, bf16 1e-2 (the CPU computes in fp32 on the
 * same bf16-rounded inputs). Without a CUDA device the test exits 77: CTest reports it skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "cache.h"
#include "cpu_ops.h"
#include "cpu_txl.h"
#include "gemm.h"
#include "gpu.h"
#include "gpu_testutil.h"
#include "launch.h"
#include "optim.h"
#include "rng.h"
#include "spec.h"
#include "testutil.h"
#include "util.h"

static tt_gpu gpu;
static tt_cache cache;
static uint64_t seed;
static uint64_t draws;

typedef struct {
    const char *name;
    int d, n, r, batch;
    int causal, pos_key, bf16;
} config;

static const config configs[] = {
    {"ptb", 256, 32, 40, 4, 1, 0, 0},      {"ptb", 256, 32, 40, 4, 1, 0, 1},
    {"wt103", 256, 80, 40, 3, 1, 0, 0},    {"wt103", 256, 80, 40, 3, 1, 0, 1},
    {"odd-key", 100, 13, 7, 2, 0, 1, 0},   {"odd-key", 100, 13, 7, 2, 0, 1, 1},
    {"odd-causal-key", 72, 37, 12, 2, 1, 1, 1},
    {"d96", 96, 32, 16, 2, 1, 0, 1}, /* mla_bwd_wo's dY tile by the loop for uneven chunks */
    {"wide", 1536, 8, 16, 2, 1, 0, 0},     {"wide", 1536, 8, 16, 2, 1, 0, 1},
    {"tiny", 32, 16, 8, 4, 1, 0, 1},       {"nocausal", 64, 40, 24, 3, 0, 0, 1},
};

/* TT_TEST_CONFIGS=substring runs only the configs whose name contains it (racecheck is slow). */
static int skip_config(const config *c)
{
    const char *f = getenv("TT_TEST_CONFIGS");
    return f && *f && !strstr(c->name, f);
}

static void randn(float *x, size_t n, float std)
{
    const uint64_t stream = draws++;
    for (size_t i = 0; i < n; i++) {
        const double u1 = 1.0 - tt_uniform(seed, stream, 2 * i), u2 = tt_uniform(seed, stream, 2 * i + 1);
        x[i] = (float)(std * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
    }
}

/* Rounds x in place to what the device will hold in storage type bf16 (no-op for fp32). */
static void round_storage(float *x, size_t n, int bf16)
{
    if (bf16)
        for (size_t i = 0; i < n; i++) x[i] = tt_bf16_to_float(tt_bf16_from_float(x[i]));
}

static void *upload(const float *x, size_t n, int bf16) { return tt_gpu_upload(x, n, bf16); }

static void *poisoned(size_t n, size_t es)
{
    void *d;
    TT_CUDA(cudaMalloc(&d, n * es));
    TT_CUDA(cudaMemset(d, 0xff, n * es)); /* all-ones bits: NaN in fp32 and bf16 */
    return d;
}

static float *download(const void *d, size_t n, int bf16)
{
    TT_CUDA(cudaStreamSynchronize(gpu.stream));
    TT_CUDA(cudaGetLastError());
    return tt_gpu_download(d, n, bf16);
}

/* A [rows, cols] matrix into device memory with its rows ld apart, as the GPU keeps the FFN's
 * activations and the logits: the ld - cols padding elements of a row are NaN, so that a kernel or
 * product that reads them fails. */
static void *upload_pitched(const float *x, int rows, int cols, int ld, int bf16)
{
    float *p = tt_xmalloc((size_t)rows * ld * sizeof *p);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < ld; c++)
            p[(size_t)r * ld + c] = c < cols ? x[(size_t)r * cols + c] : NAN;
    void *d = upload(p, (size_t)rows * ld, bf16);
    free(p);
    return d;
}

/* The [rows, cols] values of a device matrix whose rows are ld apart and whose padding was NaN:
 * fails where a padding element is not NaN any more (written where nothing may be). */
static float *download_pitched(const void *d, int rows, int cols, int ld, int bf16, const char *what)
{
    float *all = download(d, (size_t)rows * ld, bf16), *x = tt_xmalloc((size_t)rows * cols * 4);
    for (int r = 0; r < rows; r++)
        for (int c = 0; c < ld; c++) {
            const float v = all[(size_t)r * ld + c];
            if (c < cols)
                x[(size_t)r * cols + c] = v;
            else if (!isnan(v))
                fail_msg("%s: padding element (%d, %d) of a row %d wide, %d apart, was written: %g",
                         what, r, c, cols, ld, v);
        }
    free(all);
    return x;
}

/* Relative L2 error; NaN anywhere (an unwritten or broken element) fails. */
static void compare(const char *what, const config *c, const float *got, const float *want,
                    size_t n, double tol)
{
    double num = 0, den = 0;
    size_t nan_at = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i]) && nan_at == (size_t)-1) nan_at = i;
        num += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
        den += (double)want[i] * want[i];
    }
    const double rel = sqrt(num / (den > 0 ? den : 1));
    printf("  %-14s %-15s %-4s  rel err %.2e  (tol %.0e)%s\n", what, c->name, c->bf16 ? "bf16" : "fp32",
           rel, tol, nan_at != (size_t)-1 ? "  NOT FINITE" : "");
    if (nan_at != (size_t)-1) fail_msg("%s %s: element %zu is %f", what, c->name, nan_at, got[nan_at]);
    if (!(rel <= tol)) fail_msg("%s %s: relative error %.3e over %.0e", what, c->name, rel, tol);
}

static void load_program(const config *c, tt_spec *s, tt_gpu_program *p)
{
    char text[1024], err[4096];
    snprintf(text, sizeof text,
             "model: {kind: tensorized, vocab: 100, d_model: %d, layers: 1, rank: %d, cores: 2, "
             "seq_len: %d, d_inner: 32, causal: %s, position: %s}\n"
             "train: {batch: %d, precision: %s}\n",
             c->d, c->r, c->n, c->causal ? "true" : "false", c->pos_key ? "key" : "none", c->batch,
             c->bf16 ? "bf16" : "fp32");
    if (tt_spec_parse(text, strlen(text), "test", ".", s, err, sizeof err) != 0) fail_msg("%s", err);
    if (tt_gpu_program_load(p, s, &gpu, &cache, err, sizeof err) != 0) fail_msg("%s", err);
}

static void test_layernorm(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < sizeof configs / sizeof *configs; ci++) {
        const config *c = &configs[ci];
        if (skip_config(c)) continue;
        tt_spec s;
        tt_gpu_program p;
        load_program(c, &s, &p);
        const int rows = c->batch * c->n + 5, d = c->d; /* not a multiple of the block's rows */
        const size_t nd = (size_t)rows * d;
        float *x = tt_xmalloc(nd * 4), *dy = tt_xmalloc(nd * 4), *gamma = tt_xmalloc(d * 4),
              *beta = tt_xmalloc(d * 4);
        randn(x, nd, 1.5f);
        for (size_t i = 0; i < nd; i++) x[i] += 0.3f; /* a mean to remove */
        randn(dy, nd, 1.f);
        randn(gamma, d, 0.5f);
        randn(beta, d, 0.5f);
        for (int i = 0; i < d; i++) gamma[i] += 1.f;
        round_storage(x, nd, c->bf16);
        round_storage(dy, nd, c->bf16);
        /* CPU twin */
        float *y = tt_xmalloc(nd * 4), *mean = tt_xmalloc(rows * 4), *rstd = tt_xmalloc(rows * 4);
        float *dx = tt_xmalloc(nd * 4), *dgb = tt_xcalloc(2 * (size_t)d, 4);
        cpu_layernorm_fwd(y, mean, rstd, x, gamma, beta, rows, d);
        cpu_layernorm_bwd(dx, dgb, dgb + d, dy, x, mean, rstd, gamma, rows, d);
        /* GPU */
        void *dx_d = upload(x, nd, c->bf16), *ddy = upload(dy, nd, c->bf16);
        float *dgamma_d = upload(gamma, d, 0), *dbeta_d = upload(beta, d, 0);
        void *dy_out = poisoned(nd, c->bf16 ? 2 : 4);
        float *dmean = poisoned(rows, 4), *drstd = poisoned(rows, 4);
        tt_layernorm_fwd(&p, gpu.stream, dy_out, dmean, drstd, dx_d, dgamma_d, dbeta_d, rows, d);
        const double tol = c->bf16 ? 1e-2 : 1e-5;
        float *gy = download(dy_out, nd, c->bf16), *gmean = download(dmean, rows, 0),
              *grstd = download(drstd, rows, 0);
        compare("layernorm_fwd", c, gy, y, nd, tol);
        compare("  mean", c, gmean, mean, rows, 1e-5);
        compare("  rstd", c, grstd, rstd, rows, 1e-5);
        /* backward, from the CPU's statistics so that only the kernel is under test */
        float *dmean2 = upload(mean, rows, 0), *drstd2 = upload(rstd, rows, 0);
        void *ddx = poisoned(nd, c->bf16 ? 2 : 4);
        float *dgb_d = poisoned(2 * (size_t)d, 4);
        float *part = poisoned(2 * (size_t)tt_layernorm_bwd_parts(&p, rows) * d, 4);
        tt_layernorm_bwd(&p, gpu.stream, ddx, dgb_d, dgb_d + d, part, ddy, dx_d, dmean2, drstd2,
                         dgamma_d, rows, d);
        float *gdx = download(ddx, nd, c->bf16), *gdgb = download(dgb_d, 2 * (size_t)d, 0);
        compare("layernorm_bwd", c, gdx, dx, nd, tol);
        compare("  dgamma", c, gdgb, dgb, d, 1e-5);
        compare("  dbeta", c, gdgb + d, dgb + d, d, 1e-5);
        cudaFree(dx_d), cudaFree(ddy), cudaFree(dgamma_d), cudaFree(dbeta_d), cudaFree(dy_out);
        cudaFree(dmean), cudaFree(drstd), cudaFree(dmean2), cudaFree(drstd2), cudaFree(ddx);
        cudaFree(dgb_d), cudaFree(part);
        free(x), free(dy), free(gamma), free(beta), free(y), free(mean), free(rstd), free(dx);
        free(dgb), free(gy), free(gmean), free(grstd), free(gdx), free(gdgb);
        tt_gpu_program_free(&p);
        tt_spec_free(&s);
    }
}

static void test_mla_fwd(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < sizeof configs / sizeof *configs; ci++) {
        const config *c = &configs[ci];
        if (skip_config(c)) continue;
        tt_spec s;
        tt_gpu_program p;
        load_program(c, &s, &p);
        const int n = c->n, r = c->r, d = c->d, b = c->batch;
        const size_t nq = (size_t)b * n * 3 * r, nw = (size_t)d * n * n, ny = (size_t)b * n * d;
        float *qkv = tt_xmalloc(nq * 4), *wo = tt_xmalloc(nw * 4), *theta = tt_xmalloc(2 * r * 4);
        float *g = tt_xmalloc(r * 4), *pos = tt_xmalloc((size_t)n * r * 4), *u = tt_xmalloc(r * 4),
              *v = tt_xmalloc(r * 4);
        randn(qkv, nq, 1.f);
        randn(wo, nw, 0.05f);
        randn(theta, 2 * (size_t)r, 1.f);
        randn(pos, (size_t)n * r, 1.f);
        randn(u, r, 0.5f);
        randn(v, r, 0.5f);
        cpu_core_fwd(g, theta, 2, r);
        round_storage(qkv, nq, c->bf16);
        round_storage(wo, nw, c->bf16);
        round_storage(pos, (size_t)n * r, c->bf16);
        float *y = tt_xmalloc(ny * 4);
        const cpu_mla_shape sh = {b, n, r, d, c->causal};
        cpu_mla_fwd(y, qkv, g, wo, c->pos_key ? pos : NULL, c->pos_key ? u : NULL,
                    c->pos_key ? v : NULL, sh);
        void *dq = upload(qkv, nq, c->bf16), *dwo = upload(wo, nw, c->bf16);
        void *dpos = c->pos_key ? upload(pos, (size_t)n * r, c->bf16) : NULL;
        float *dg = upload(g, r, 0), *du = c->pos_key ? upload(u, r, 0) : NULL,
              *dv = c->pos_key ? upload(v, r, 0) : NULL;
        void *dy = poisoned(ny, c->bf16 ? 2 : 4);
        float *scratch = poisoned(tt_mla_scratch_floats(&p, b) + 1, 4);
        tt_mla_fwd(&p, gpu.stream, dy, dq, dg, dwo, dpos, du, dv, scratch, b, n, r, d);
        float *gy = download(dy, ny, c->bf16);
        compare("mla_fwd", c, gy, y, ny, c->bf16 ? 1e-2 : 1e-5);
        cudaFree(dq), cudaFree(dwo), cudaFree(dpos), cudaFree(dg), cudaFree(du), cudaFree(dv);
        cudaFree(dy), cudaFree(scratch);
        free(qkv), free(wo), free(theta), free(g), free(pos), free(u), free(v), free(y), free(gy);
        tt_gpu_program_free(&p);
        tt_spec_free(&s);
    }
}

/* The backward of multi-linear attention against cpu_mla_bwd. Parameter gradients are added
 * into: they start from random values here, so a kernel that overwrote them would fail. */
static void test_mla_bwd(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < sizeof configs / sizeof *configs; ci++) {
        const config *c = &configs[ci];
        if (skip_config(c)) continue;
        tt_spec s;
        tt_gpu_program p;
        load_program(c, &s, &p);
        const int n = c->n, r = c->r, d = c->d, b = c->batch, key = c->pos_key;
        const size_t nq = (size_t)b * n * 3 * r, nw = (size_t)d * n * n, ny = (size_t)b * n * d;
        const size_t nr = (size_t)n * r;
        float *qkv = tt_xmalloc(nq * 4), *wo = tt_xmalloc(nw * 4), *theta = tt_xmalloc(2 * r * 4);
        float *g = tt_xmalloc(r * 4), *pos = tt_xmalloc(nr * 4), *u = tt_xmalloc(r * 4),
              *v = tt_xmalloc(r * 4), *dy = tt_xmalloc(ny * 4);
        randn(qkv, nq, 1.f);
        randn(wo, nw, 0.05f);
        randn(theta, 2 * (size_t)r, 1.f);
        randn(pos, nr, 1.f);
        randn(u, r, 0.5f);
        randn(v, r, 0.5f);
        randn(dy, ny, 1.f);
        cpu_core_fwd(g, theta, 2, r);
        round_storage(qkv, nq, c->bf16);
        round_storage(wo, nw, c->bf16);
        round_storage(pos, nr, c->bf16);
        round_storage(dy, ny, c->bf16);
        /* starting values of the accumulated gradients, and the CPU's results on top of them */
        float *dwo0 = tt_xmalloc(nw * 4), *vec0 = tt_xmalloc(3 * (size_t)r * 4);
        randn(dwo0, nw, 0.1f);
        randn(vec0, 3 * (size_t)r, 0.1f);
        float *dqkv = tt_xmalloc(nq * 4), *dwo = tt_xmalloc(nw * 4), *dp = tt_xcalloc(nr, 4);
        float *vec = tt_xmalloc(3 * (size_t)r * 4);
        memcpy(dwo, dwo0, nw * 4);
        memcpy(vec, vec0, 3 * (size_t)r * 4);
        const cpu_mla_shape sh = {b, n, r, d, c->causal};
        cpu_mla_bwd(dqkv, vec, dwo, key ? dp : NULL, key ? vec + r : NULL, key ? vec + 2 * r : NULL,
                    dy, qkv, g, wo, key ? pos : NULL, key ? u : NULL, key ? v : NULL, sh);
        void *d_q = upload(qkv, nq, c->bf16), *d_wo = upload(wo, nw, c->bf16);
        void *d_dy = upload(dy, ny, c->bf16);
        void *d_pos = key ? upload(pos, nr, c->bf16) : NULL;
        float *d_g = upload(g, r, 0), *d_u = key ? upload(u, r, 0) : NULL,
              *d_v = key ? upload(v, r, 0) : NULL;
        float *d_dwo = upload(dwo0, nw, 0), *d_vec = upload(vec0, 3 * (size_t)r, 0);
        void *d_dqkv = poisoned(nq, c->bf16 ? 2 : 4);
        float *d_dp = key ? poisoned(nr, 4) : NULL;
        float *part = poisoned(tt_mla_scratch_floats(&p, b), 4);
        /* dWo's kernels on the side stream, as the trainer runs them */
        tt_mla_bwd(&p, gpu.stream, &gpu.side, d_dqkv, d_dwo, d_dp, d_vec, key ? d_vec + r : NULL,
                   key ? d_vec + 2 * r : NULL, part, d_dy, d_q, d_g, d_wo, d_pos, d_u, d_v, b, n,
                   r, d);
        float *g_dqkv = download(d_dqkv, nq, c->bf16), *g_dwo = download(d_dwo, nw, 0);
        float *g_vec = download(d_vec, 3 * (size_t)r, 0);
        /* The fp32 gradients of the tensor-core kernels (templates/mla_tc.cu) are products of
         * bf16 operands (T, dT, dY, Q rounded to bf16 on the way into mma): a bf16 product's
         * tolerance. mla.cu's kernels multiply in fp32 and are held to fp32's. */
        const double tol_wo = tt_kernel_const(tt_gpu_kernel_of(&p, "mla_bwd_wo")->k, "MMA", 0) ? 1e-2 : 1e-5;
        const double tol_q = tt_kernel_const(tt_gpu_kernel_of(&p, "mla_bwd_q")->k, "MMA", 0) ? 1e-2 : 1e-5;
        compare("mla_bwd dqkv", c, g_dqkv, dqkv, nq, c->bf16 ? 1e-2 : 1e-5);
        compare("  dwo", c, g_dwo, dwo, nw, tol_wo);
        compare("  dg", c, g_vec, vec, r, tol_q);
        if (key) {
            float *g_dp = download(d_dp, nr, 0);
            compare("  dp", c, g_dp, dp, nr, 1e-5);
            compare("  du", c, g_vec + r, vec + r, r, 1e-5);
            compare("  dv", c, g_vec + 2 * r, vec + 2 * r, r, 1e-5);
            free(g_dp);
        }
        cudaFree(d_q), cudaFree(d_wo), cudaFree(d_dy), cudaFree(d_pos), cudaFree(d_g), cudaFree(d_u);
        cudaFree(d_v), cudaFree(d_dwo), cudaFree(d_vec), cudaFree(d_dqkv), cudaFree(d_dp), cudaFree(part);
        free(qkv), free(wo), free(theta), free(g), free(pos), free(u), free(v), free(dy), free(dwo0);
        free(vec0), free(dqkv), free(dwo), free(dp), free(vec), free(g_dqkv), free(g_dwo), free(g_vec);
        tt_gpu_program_free(&p);
        tt_spec_free(&s);
    }
}

/* --- the language model's other kernels ----------------------------------------------------- */

static void *upload_bytes(const void *x, size_t bytes)
{
    void *d;
    TT_CUDA(cudaMalloc(&d, bytes));
    TT_CUDA(cudaMemcpy(d, x, bytes, cudaMemcpyHostToDevice));
    return d;
}

/* config c's program with the FFN width f and h cores (load_program has 32 and 2), and `extra`
 * model keys (", key: value", or ""). */
static void load_lm_program(const config *c, int f, int h, const char *extra, tt_spec *s,
                            tt_gpu_program *p)
{
    char text[1024], err[4096];
    snprintf(text, sizeof text,
             "model: {kind: tensorized, vocab: 100, d_model: %d, layers: 1, rank: %d, cores: %d, "
             "seq_len: %d, d_inner: %d, causal: %s, position: %s%s}\n"
             "train: {batch: %d, precision: %s}\n",
             c->d, c->r, h, c->n, f, c->causal ? "true" : "false", c->pos_key ? "key" : "none",
             extra, c->batch, c->bf16 ? "bf16" : "fp32");
    if (tt_spec_parse(text, strlen(text), "test", ".", s, err, sizeof err) != 0) fail_msg("%s", err);
    if (tt_gpu_program_load(p, s, &gpu, &cache, err, sizeof err) != 0) fail_msg("%s", err);
}

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* A dropout site with this run's seed: a different step and site for every call. The kernels
 * read the step from device memory: each call gets its own word of a small ring. */
static tt_dropout test_dropout(float p)
{
    enum { RING = 64 };
    static unsigned long long *steps;
    if (!steps) TT_CUDA(cudaMalloc((void **)&steps, RING * sizeof *steps));
    const unsigned long long step = 1000 + draws++, *at = steps + draws % RING;
    TT_CUDA(cudaMemcpy((void *)at, &step, sizeof step, cudaMemcpyHostToDevice));
    return (tt_dropout){.p = p, .seed = seed ^ 0x5eedull, .step = at, .site = (uint32_t)(draws % 7)};
}

static void cpu_dropout(float *y, uint8_t *mask, const float *x, long n, tt_dropout dr)
{
    unsigned long long step;
    TT_CUDA(cudaMemcpy(&step, dr.step, sizeof step, cudaMemcpyDeviceToHost));
    cpu_dropout_fwd(y, mask, x, n, dr.p, dr.seed, tt_dropout_stream(step, dr.site));
}

/* Embedding forward and its deterministic scatter-add backward, against cpu_model.c's embed and
 * embed_bwd (written out here: they are private to it). Tokens repeat a lot, one of them in every
 * third row (a run longer than a block); dE starts from random values (it is added into), and
 * two backward runs must give the same bits. */
static void test_embedding(void **state)
{
    (void)state;
    /* and wt103's own batch (4800 rows: the sort in shared memory alone), and 10240 rows, for
     * which the sort goes through global memory too */
    static const config big[] = {{"wt103-b60", 256, 80, 40, 60, 1, 0, 1},
                                 {"b128-n80", 64, 80, 8, 128, 1, 0, 0}};
    const size_t nc = sizeof configs / sizeof *configs;
    for (size_t ci = 0; ci < nc + 2; ci++) {
        const config *c = ci < nc ? &configs[ci] : &big[ci - nc];
        if (skip_config(c)) continue;
        tt_spec s;
        tt_gpu_program p;
        load_program(c, &s, &p);
        const int rows = c->batch * c->n, d = c->d, vocab = 50;
        const size_t nd = (size_t)rows * d, ne = (size_t)vocab * d;
        int32_t *tok = tt_xmalloc((size_t)rows * sizeof *tok);
        for (int r = 0; r < rows; r++)
            tok[r] = r % 3 == 1 ? 7 : (int32_t)(tt_uniform(seed, draws, (uint64_t)r) * vocab);
        draws++;
        float *emb = tt_xmalloc(ne * 4), *demb0 = tt_xmalloc(ne * 4), *dx0 = tt_xmalloc(nd * 4);
        randn(emb, ne, 0.5f);
        randn(demb0, ne, 0.1f);
        randn(dx0, nd, 1.f);
        round_storage(dx0, nd, c->bf16);
        const tt_dropout dr = test_dropout(0.25f);
        /* CPU */
        const float scale = (float)sqrt((double)d);
        float *x0 = tt_xmalloc(nd * 4), *dd = tt_xmalloc(nd * 4), *demb = tt_xmalloc(ne * 4);
        uint8_t *mask = tt_xmalloc(nd);
        for (int r = 0; r < rows; r++)
            for (int i = 0; i < d; i++) x0[(size_t)r * d + i] = emb[(size_t)tok[r] * d + i] * scale;
        cpu_dropout(x0, mask, x0, (long)nd, dr);
        cpu_dropout_bwd(dd, dx0, mask, (long)nd, dr.p);
        memcpy(demb, demb0, ne * 4);
        for (int r = 0; r < rows; r++)
            for (int i = 0; i < d; i++) demb[(size_t)tok[r] * d + i] += dd[(size_t)r * d + i] * scale;
        /* GPU */
        float *d_emb = upload(emb, ne, 0), *d_demb = upload(demb0, ne, 0);
        int32_t *d_tok = upload_bytes(tok, (size_t)rows * sizeof *tok);
        /* rows wider than d, as Transformer-XL's padded ones, the padding NaN */
        const int ld = (int)tt_row_pitch(d) + 8;
        void *d_dx0 = upload_pitched(dx0, rows, d, ld, c->bf16);
        void *d_x0 = poisoned((size_t)rows * ld, c->bf16 ? 2 : 4);
        uint64_t *keys = poisoned(tt_embedding_keys(&p), 8);
        tt_embedding_fwd(&p, gpu.stream, d_x0, d_emb, d_tok, rows, d, ld, vocab, dr);
        tt_embedding_bwd(&p, gpu.stream, d_demb, keys, d_dx0, d_tok, rows, d, ld, vocab, dr);
        float *g_x0 = download_pitched(d_x0, rows, d, ld, c->bf16, "embedding_fwd x0");
        float *g_demb = download(d_demb, ne, 0);
        compare("embedding_fwd", c, g_x0, x0, nd, c->bf16 ? 1e-2 : 1e-5);
        compare("embedding_bwd", c, g_demb, demb, ne, 1e-5);
        /* embedding_sort's own twin: the keys (token, row) in ascending order, then padding. A
         * sort that split a token's run would still sum right when blocks happen to run in
         * order, so the keys are checked themselves. */
        const size_t nk = tt_embedding_keys(&p);
        uint64_t *want_keys = tt_xmalloc(nk * 8), *got_keys = tt_xmalloc(nk * 8);
        for (size_t i = 0; i < nk; i++)
            want_keys[i] = i < (size_t)rows ? (uint64_t)(uint32_t)tok[i] << 32 | i : ~0ull;
        qsort(want_keys, (size_t)rows, 8, cmp_u64);
        TT_CUDA(cudaMemcpy(got_keys, keys, nk * 8, cudaMemcpyDeviceToHost));
        if (memcmp(got_keys, want_keys, nk * 8) != 0)
            fail_msg("embedding_sort %s: keys out of order", c->name);
        free(want_keys), free(got_keys);
        /* the same again: bit for bit */
        TT_CUDA(cudaMemcpy(d_demb, demb0, ne * 4, cudaMemcpyHostToDevice));
        tt_embedding_bwd(&p, gpu.stream, d_demb, keys, d_dx0, d_tok, rows, d, ld, vocab, dr);
        float *g_demb2 = download(d_demb, ne, 0);
        if (memcmp(g_demb, g_demb2, ne * 4) != 0)
            fail_msg("embedding_bwd %s: two runs differ", c->name);
        cudaFree(d_emb), cudaFree(d_demb), cudaFree(d_tok), cudaFree(d_dx0), cudaFree(d_x0);
        cudaFree(keys);
        free(tok), free(emb), free(demb0), free(dx0), free(x0), free(dd), free(demb), free(mask);
        free(g_x0), free(g_demb), free(g_demb2);
        tt_gpu_program_free(&p);
        tt_spec_free(&s);
    }
}

/* The rows of each cluster ([lo[c], hi[c]) of ids) as gpu_model.c's route_batch lists them:
 * ascending, then -1 up to a multiple of 64; pos[r] is row r's place in its list. Returns the
 * padded lengths in m. */
enum { ADAPTIVE_CLUSTERS = 3 };
static const int adaptive_lo[ADAPTIVE_CLUSTERS] = {0, 20, 50}, adaptive_hi[ADAPTIVE_CLUSTERS] = {20, 50, 100};
static void adaptive_lists(const int32_t *ids, int rows, int32_t *idx[ADAPTIVE_CLUSTERS],
                           int32_t *pos, int m[ADAPTIVE_CLUSTERS])
{
    for (int c = 0; c < ADAPTIVE_CLUSTERS; c++) {
        int k = 0;
        idx[c] = tt_xmalloc((size_t)(rows + 64) * sizeof *idx[c]);
        for (int r = 0; r < rows; r++)
            if (ids[r] >= adaptive_lo[c] && ids[r] < adaptive_hi[c]) {
                if (pos) pos[r] = k;
                idx[c][k++] = r;
            }
        m[c] = (k + 63) / 64 * 64;
        for (int i = k; i < m[c]; i++) idx[c][i] = -1;
    }
}

/* The adaptive embedding (div_val 2: cluster widths d, d/2, d/4, hence other vector widths at
 * d = 100) and the adaptive softmax's tails against their twins, written out here as
 * cpu_model.c's embed, embed_bwd and output_layer compute them around the products: a vocabulary
 * of 100 with cutoffs 20 and 50; id 25 in every third row (a run of one token longer than a
 * block). x0 starts poisoned (every row must come from its cluster); dE_c and dx are added into
 * and start from random values. */
static void test_adaptive(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < sizeof configs / sizeof *configs; ci++) {
        const config *c = &configs[ci];
        if (skip_config(c)) continue;
        tt_spec s;
        tt_gpu_program p;
        load_lm_program(c, 32, 2, ", adaptive: {cutoffs: [20, 50], div_val: 2}", &s, &p);
        const int rows = c->batch * c->n, d = c->d, bf = c->bf16;
        const int ld = (int)tt_row_pitch(d) + 8; /* x0, dx0, x, dx: padded rows, NaN between */
        const size_t nd = (size_t)rows * d, es = bf ? 2 : 4;
        const float scale = (float)sqrt((double)d);
        const double tol = bf ? 1e-2 : 1e-5;
        int32_t *tok = tt_xmalloc((size_t)rows * sizeof *tok), *pos = tt_xmalloc((size_t)rows * 4);
        for (int r = 0; r < rows; r++)
            tok[r] = r % 3 == 1 ? 25 : (int32_t)(tt_uniform(seed, draws, (uint64_t)r) * 100);
        tok[0] = 5, tok[2] = 75; /* every cluster has rows */
        draws++;
        int32_t *idx[ADAPTIVE_CLUSTERS];
        int m[ADAPTIVE_CLUSTERS];
        adaptive_lists(tok, rows, idx, pos, m);
        int32_t *d_tok = upload_bytes(tok, (size_t)rows * 4), *d_pos = upload_bytes(pos, (size_t)rows * 4);
        const tt_dropout dr = test_dropout(0.25f);

        /* forward: e = E_c rows of the listed tokens; x0[idx] = dropout(y * sqrt(d)), y standing
         * for the projection cuBLAS computes from e */
        float *z = tt_xcalloc(nd, 4), *x0 = tt_xmalloc(nd * 4);
        uint8_t *mask = tt_xmalloc(nd);
        void *d_x0 = poisoned((size_t)rows * ld, es);
        float *emb[ADAPTIVE_CLUSTERS];
        int32_t *d_idx[ADAPTIVE_CLUSTERS];
        for (int k = 0, dim = d; k < ADAPTIVE_CLUSTERS; k++, dim /= 2) {
            const int vc = adaptive_hi[k] - adaptive_lo[k];
            d_idx[k] = upload_bytes(idx[k], (size_t)m[k] * 4);
            emb[k] = tt_xmalloc((size_t)vc * dim * 4);
            randn(emb[k], (size_t)vc * dim, 0.5f);
            float *e = tt_xcalloc((size_t)m[k] * dim, 4), *y = tt_xmalloc((size_t)m[k] * d * 4);
            randn(y, (size_t)m[k] * d, 1.f);
            for (int i = 0; i < m[k]; i++)
                if (idx[k][i] >= 0) {
                    const int r = idx[k][i];
                    memcpy(e + (size_t)i * dim, emb[k] + (size_t)(tok[r] - adaptive_lo[k]) * dim, dim * 4);
                    for (int j = 0; j < d; j++) z[(size_t)r * d + j] = y[(size_t)i * d + j] * scale;
                }
            round_storage(e, (size_t)m[k] * dim, bf);
            float *d_emb = upload(emb[k], (size_t)vc * dim, 0), *d_y = upload(y, (size_t)m[k] * d, 0);
            void *d_e = poisoned((size_t)m[k] * dim, es);
            tt_adaptive_emb_gather(&p, gpu.stream, d_e, d_emb, d_tok, d_idx[k], m[k],
                                   adaptive_lo[k], vc, dim);
            tt_adaptive_emb_scatter(&p, gpu.stream, d_x0, d_y, d_idx[k], m[k], d, ld, dr);
            float *g_e = download(d_e, (size_t)m[k] * dim, bf);
            char name[32];
            snprintf(name, sizeof name, "adaptive_emb_gather %d", k);
            compare(name, c, g_e, e, (size_t)m[k] * dim, 0);
            cudaFree(d_emb), cudaFree(d_y), cudaFree(d_e);
            free(e), free(y), free(g_e);
        }
        cpu_dropout(x0, mask, z, (long)nd, dr);
        round_storage(x0, nd, bf);
        float *g_x0 = download_pitched(d_x0, rows, d, ld, bf, "adaptive_emb_scatter x0");
        compare("adaptive_emb_scatter", c, g_x0, x0, nd, tol);

        /* backward: dy = dropout_bwd(dx0[idx]) * sqrt(d); then dE_c[t - lo] += de[pos[r]] in row
         * order along embedding_sort's keys (de standing for dy P_c from cuBLAS) */
        float *dx0 = tt_xmalloc(nd * 4), *dd = tt_xmalloc(nd * 4);
        randn(dx0, nd, 1.f);
        round_storage(dx0, nd, bf);
        cpu_dropout_bwd(dd, dx0, mask, (long)nd, dr.p);
        void *d_dx0 = upload_pitched(dx0, rows, d, ld, bf);
        uint64_t *keys = poisoned(tt_embedding_keys(&p), 8);
        tt_embedding_sort(&p, gpu.stream, keys, d_tok, rows);
        for (int k = 0, dim = d; k < ADAPTIVE_CLUSTERS; k++, dim /= 2) {
            const int vc = adaptive_hi[k] - adaptive_lo[k];
            float *dy = tt_xcalloc((size_t)m[k] * d, 4), *de = tt_xmalloc((size_t)m[k] * dim * 4);
            for (int i = 0; i < m[k]; i++)
                for (int j = 0; j < d && idx[k][i] >= 0; j++)
                    dy[(size_t)i * d + j] = dd[(size_t)idx[k][i] * d + j] * scale;
            round_storage(dy, (size_t)m[k] * d, bf);
            randn(de, (size_t)m[k] * dim, 1.f);
            round_storage(de, (size_t)m[k] * dim, bf);
            float *demb0 = tt_xmalloc((size_t)vc * dim * 4), *demb = tt_xmalloc((size_t)vc * dim * 4);
            randn(demb0, (size_t)vc * dim, 0.1f);
            memcpy(demb, demb0, (size_t)vc * dim * 4);
            for (int r = 0; r < rows; r++)
                if (tok[r] >= adaptive_lo[k] && tok[r] < adaptive_hi[k])
                    for (int j = 0; j < dim; j++)
                        demb[(size_t)(tok[r] - adaptive_lo[k]) * dim + j] += de[(size_t)pos[r] * dim + j];
            void *d_dy = poisoned((size_t)m[k] * d, es), *d_de = upload(de, (size_t)m[k] * dim, bf);
            float *d_demb = upload(demb0, (size_t)vc * dim, 0);
            tt_adaptive_emb_grad(&p, gpu.stream, d_dy, d_dx0, d_idx[k], m[k], d, ld, dr);
            tt_adaptive_emb_bwd(&p, gpu.stream, d_demb, keys, d_de, d_pos, rows, adaptive_lo[k], vc, dim);
            float *g_dy = download(d_dy, (size_t)m[k] * d, bf), *g_demb = download(d_demb, (size_t)vc * dim, 0);
            char name[32];
            snprintf(name, sizeof name, "adaptive_emb_grad %d", k);
            compare(name, c, g_dy, dy, (size_t)m[k] * d, tol);
            snprintf(name, sizeof name, "adaptive_emb_bwd %d", k);
            compare(name, c, g_demb, demb, (size_t)vc * dim, 1e-6);
            /* the same again: bit for bit */
            TT_CUDA(cudaMemcpy(d_demb, demb0, (size_t)vc * dim * 4, cudaMemcpyHostToDevice));
            tt_adaptive_emb_bwd(&p, gpu.stream, d_demb, keys, d_de, d_pos, rows, adaptive_lo[k], vc, dim);
            float *g_demb2 = download(d_demb, (size_t)vc * dim, 0);
            if (memcmp(g_demb, g_demb2, (size_t)vc * dim * 4) != 0)
                fail_msg("adaptive_emb_bwd %s: two runs differ", c->name);
            cudaFree(d_dy), cudaFree(d_de), cudaFree(d_demb);
            free(dy), free(de), free(demb0), free(demb), free(g_dy), free(g_demb), free(g_demb2);
        }

        /* the softmax's tails, listed by targets: xc = x[idx], and dx[idx] += dxc */
        int32_t *tgt = tt_xmalloc((size_t)rows * 4), *tidx[ADAPTIVE_CLUSTERS];
        int tm[ADAPTIVE_CLUSTERS];
        for (int r = 0; r < rows; r++) tgt[r] = (int32_t)(tt_uniform(seed, draws, (uint64_t)r) * 100);
        tgt[0] = 30, tgt[1] = 80; /* both tails have rows */
        draws++;
        adaptive_lists(tgt, rows, tidx, NULL, tm);
        float *x = tt_xmalloc(nd * 4), *dx = tt_xmalloc(nd * 4);
        randn(x, nd, 1.f);
        randn(dx, nd, 1.f);
        round_storage(x, nd, bf);
        round_storage(dx, nd, bf);
        void *d_x = upload_pitched(x, rows, d, ld, bf), *d_dx = upload_pitched(dx, rows, d, ld, bf);
        for (int k = 1; k < ADAPTIVE_CLUSTERS; k++) {
            const size_t n = (size_t)tm[k] * d, np = (size_t)tm[k] * ld;
            float *xc = tt_xcalloc(n, 4), *dxc = tt_xmalloc(n * 4);
            randn(dxc, n, 1.f);
            round_storage(dxc, n, bf);
            for (int i = 0; i < tm[k]; i++)
                for (int j = 0; j < d && tidx[k][i] >= 0; j++) {
                    xc[(size_t)i * d + j] = x[(size_t)tidx[k][i] * d + j];
                    dx[(size_t)tidx[k][i] * d + j] += dxc[(size_t)i * d + j];
                }
            int32_t *d_tidx = upload_bytes(tidx[k], (size_t)tm[k] * 4);
            void *d_xc = poisoned(np, es), *d_dxc = upload_pitched(dxc, tm[k], d, ld, bf);
            tt_adaptive_gather(&p, gpu.stream, d_xc, d_x, d_tidx, tm[k], d, ld);
            tt_adaptive_scatter_add(&p, gpu.stream, d_dx, d_dxc, d_tidx, tm[k], d, ld);
            float *g_xc = download_pitched(d_xc, tm[k], d, ld, bf, "adaptive_gather xc");
            char name[32];
            snprintf(name, sizeof name, "adaptive_gather %d", k);
            compare(name, c, g_xc, xc, n, 0);
            cudaFree(d_tidx), cudaFree(d_xc), cudaFree(d_dxc);
            free(xc), free(dxc), free(g_xc), free(tidx[k]);
        }
        round_storage(dx, nd, bf);
        float *g_dx = download_pitched(d_dx, rows, d, ld, bf, "adaptive_scatter_add dx");
        compare("adaptive_scatter_add", c, g_dx, dx, nd, tol);

        for (int k = 0; k < ADAPTIVE_CLUSTERS; k++) {
            cudaFree(d_idx[k]);
            free(idx[k]), free(emb[k]);
        }
        free(tidx[0]);
        cudaFree(d_tok), cudaFree(d_pos), cudaFree(d_x0), cudaFree(d_dx0), cudaFree(keys);
        cudaFree(d_x), cudaFree(d_dx);
        free(tok), free(pos), free(z), free(x0), free(mask), free(g_x0), free(dx0), free(dd);
        free(tgt), free(x), free(dx), free(g_dx);
        tt_gpu_program_free(&p);
        tt_spec_free(&s);
    }
}

/* s = x + dropout(y), LayerNorm(s), and back: cpu_dropout_fwd, cpu_layernorm_fwd/bwd and
 * cpu_dropout_bwd. The twin normalizes the stored s (rounded to the storage type), as the kernel
 * does so that its backward differentiates what it computed. */
static void test_residual_ln(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < sizeof configs / sizeof *configs; ci++) {
        const config *c = &configs[ci];
        if (skip_config(c)) continue;
        tt_spec s;
        tt_gpu_program p;
        load_program(c, &s, &p);
        const int rows = c->batch * c->n + 5, d = c->d;
        const size_t nd = (size_t)rows * d;
        float *x = tt_xmalloc(nd * 4), *y = tt_xmalloc(nd * 4), *dout = tt_xmalloc(nd * 4);
        float *gamma = tt_xmalloc(d * 4), *beta = tt_xmalloc(d * 4);
        randn(x, nd, 1.5f);
        randn(y, nd, 1.f);
        for (size_t i = 0; i < nd; i++) x[i] += 0.3f;
        randn(dout, nd, 1.f);
        randn(gamma, d, 0.5f);
        randn(beta, d, 0.5f);
        for (int i = 0; i < d; i++) gamma[i] += 1.f;
        round_storage(x, nd, c->bf16);
        round_storage(y, nd, c->bf16);
        round_storage(dout, nd, c->bf16);
        const tt_dropout dr = test_dropout(0.3f);
        /* CPU */
        float *sum = tt_xmalloc(nd * 4), *out = tt_xmalloc(nd * 4), *mean = tt_xmalloc(rows * 4),
              *rstd = tt_xmalloc(rows * 4), *ds = tt_xmalloc(nd * 4), *dy = tt_xmalloc(nd * 4),
              *dgb = tt_xcalloc(2 * (size_t)d, 4);
        uint8_t *mask = tt_xmalloc(nd);
        cpu_dropout(sum, mask, y, (long)nd, dr);
        for (size_t i = 0; i < nd; i++) sum[i] += x[i];
        round_storage(sum, nd, c->bf16);
        cpu_layernorm_fwd(out, mean, rstd, sum, gamma, beta, rows, d);
        cpu_layernorm_bwd(ds, dgb, dgb + d, dout, sum, mean, rstd, gamma, rows, d);
        cpu_dropout_bwd(dy, ds, mask, (long)nd, dr.p);
        /* GPU forward, on rows wider than d (as Transformer-XL's padded ones), the padding NaN */
        const size_t es = c->bf16 ? 2 : 4;
        const int ld = (int)tt_row_pitch(d) + 8, bf = c->bf16;
        const size_t np = (size_t)rows * ld;
        void *d_x = upload_pitched(x, rows, d, ld, bf), *d_y = upload_pitched(y, rows, d, ld, bf);
        float *d_gamma = upload(gamma, d, 0), *d_beta = upload(beta, d, 0);
        void *d_out = poisoned(np, es), *d_sum = poisoned(np, es);
        float *d_mean = poisoned(rows, 4), *d_rstd = poisoned(rows, 4);
        tt_residual_ln_fwd(&p, gpu.stream, d_out, d_sum, d_mean, d_rstd, d_x, d_y, d_gamma, d_beta,
                           rows, d, ld, dr);
        const double tol = c->bf16 ? 1e-2 : 1e-5;
        float *g_out = download_pitched(d_out, rows, d, ld, bf, "residual_ln_fwd out");
        float *g_sum = download_pitched(d_sum, rows, d, ld, bf, "residual_ln_fwd sum");
        float *g_mean = download(d_mean, rows, 0), *g_rstd = download(d_rstd, rows, 0);
        compare("residual_ln_fwd", c, g_out, out, nd, tol);
        compare("  sum", c, g_sum, sum, nd, 1e-6);
        compare("  mean", c, g_mean, mean, rows, 1e-5);
        compare("  rstd", c, g_rstd, rstd, rows, 1e-5);
        /* GPU backward, from the CPU's s and statistics */
        void *d_s = upload_pitched(sum, rows, d, ld, bf), *d_dout = upload_pitched(dout, rows, d, ld, bf);
        float *d_mean2 = upload(mean, rows, 0), *d_rstd2 = upload(rstd, rows, 0);
        void *d_dx = poisoned(np, es), *d_dy = poisoned(np, es);
        float *d_dgb = poisoned(2 * (size_t)d, 4);
        float *part = poisoned(2 * (size_t)tt_layernorm_bwd_parts(&p, rows) * d, 4);
        tt_residual_ln_bwd(&p, gpu.stream, d_dx, d_dy, d_dgb, d_dgb + d, part, d_dout, d_s, d_mean2,
                           d_rstd2, d_gamma, rows, d, ld, dr);
        float *g_dx = download_pitched(d_dx, rows, d, ld, bf, "residual_ln_bwd dx");
        float *g_dy = download_pitched(d_dy, rows, d, ld, bf, "residual_ln_bwd dy");
        float *g_dgb = download(d_dgb, 2 * (size_t)d, 0);
        compare("residual_ln_bwd", c, g_dx, ds, nd, tol);
        compare("  dy", c, g_dy, dy, nd, tol);
        compare("  dgamma", c, g_dgb, dgb, d, 1e-5);
        compare("  dbeta", c, g_dgb + d, dgb + d, d, 1e-5);
        cudaFree(d_x), cudaFree(d_y), cudaFree(d_gamma), cudaFree(d_beta), cudaFree(d_out);
        cudaFree(d_sum), cudaFree(d_mean), cudaFree(d_rstd), cudaFree(d_s), cudaFree(d_dout);
        cudaFree(d_mean2), cudaFree(d_rstd2), cudaFree(d_dx), cudaFree(d_dy), cudaFree(d_dgb);
        cudaFree(part);
        free(x), free(y), free(dout), free(gamma), free(beta), free(sum), free(out), free(mean);
        free(rstd), free(ds), free(dy), free(dgb), free(mask), free(g_out), free(g_sum);
        free(g_mean), free(g_rstd), free(g_dx), free(g_dy), free(g_dgb);
        tt_gpu_program_free(&p);
        tt_spec_free(&s);
    }
}

/* The FFN activation at widths with 16-, 8- and 4-byte vectors (2100, 64) and none (37), in place
 * (h = z, dz = dhd) for bf16: cpu_relu_fwd/bwd, cpu_dropout_fwd/bwd, and the bias gradient of
 * cpu_linear_bwd. Rows are tt_row_pitch(F) apart, as the model keeps them: wider than F for 2100
 * (2104) and 37 (40), the padding NaN in every input and output, so that reading it fails, and
 * still NaN after (never written). The dropout mask is the CPU's, numbered row * F + col. */
static void test_ffn_act(void **state)
{
    (void)state;
    static const int widths[] = {2100, 64, 37};
    for (size_t ci = 0; ci < 2; ci++)
        for (size_t wi = 0; wi < sizeof widths / sizeof *widths; wi++) {
            const int f = widths[wi], inplace = configs[ci].bf16, ld = (int)tt_row_pitch(f);
            char name[32];
            snprintf(name, sizeof name, "ffn F=%d LD=%d%s", f, ld, inplace ? " inpl" : "");
            config cc = configs[ci];
            cc.name = name;
            const config *c = &cc;
            if (skip_config(&configs[ci])) continue;
            tt_spec s;
            tt_gpu_program p;
            load_lm_program(c, f, 2, "", &s, &p);
            const int rows = c->batch * c->n + 3, bf = c->bf16;
            const size_t nf = (size_t)rows * f, np = (size_t)rows * ld, es = bf ? 2 : 4;
            float *z = tt_xmalloc(nf * 4), *b1 = tt_xmalloc(f * 4), *dhd = tt_xmalloc(nf * 4);
            randn(z, nf, 1.f);
            randn(b1, f, 0.5f);
            randn(dhd, nf, 1.f);
            round_storage(z, nf, c->bf16);
            round_storage(dhd, nf, c->bf16);
            const tt_dropout dr = test_dropout(0.2f);
            /* CPU */
            float *h = tt_xmalloc(nf * 4), *hd = tt_xmalloc(nf * 4), *dz = tt_xmalloc(nf * 4);
            float *db1 = tt_xcalloc(f, 4);
            uint8_t *mask = tt_xmalloc(nf);
            for (size_t i = 0; i < nf; i++) h[i] = z[i] + b1[i % f];
            cpu_relu_fwd(h, h, (long)nf);
            cpu_dropout(hd, mask, h, (long)nf, dr);
            round_storage(h, nf, c->bf16); /* the backward reads the stored h */
            cpu_dropout_bwd(dz, dhd, mask, (long)nf, dr.p);
            cpu_relu_bwd(dz, dz, h, (long)nf);
            cpu_linear_bwd(NULL, NULL, db1, dz, NULL, NULL, rows, 1, f);
            /* GPU */
            void *d_z = upload_pitched(z, rows, f, ld, bf), *d_hd = poisoned(np, es);
            void *d_h = inplace ? d_z : poisoned(np, es);
            float *d_b1 = upload(b1, f, 0);
            tt_ffn_act_fwd(&p, gpu.stream, d_h, d_hd, d_z, d_b1, rows, f, ld, dr);
            const double tol = bf ? 1e-2 : 1e-5;
            float *g_h = download_pitched(d_h, rows, f, ld, bf, "ffn_act_fwd h");
            float *g_hd = download_pitched(d_hd, rows, f, ld, bf, "ffn_act_fwd hd");
            compare("ffn_act_fwd h", c, g_h, h, nf, tol);
            compare("  hd", c, g_hd, hd, nf, tol);
            void *d_hc = upload_pitched(h, rows, f, ld, bf), *d_dhd = upload_pitched(dhd, rows, f, ld, bf);
            void *d_dz = inplace ? d_dhd : poisoned(np, es);
            float *d_db1 = poisoned(f, 4), *part = poisoned(tt_ffn_act_bwd_part_floats(&p), 4);
            tt_ffn_act_bwd(&p, gpu.stream, d_dz, d_db1, part, d_dhd, d_hc, rows, f, ld, dr);
            float *g_dz = download_pitched(d_dz, rows, f, ld, bf, "ffn_act_bwd dz");
            float *g_db1 = download(d_db1, f, 0);
            compare("ffn_act_bwd dz", c, g_dz, dz, nf, tol);
            compare("  db1", c, g_db1, db1, f, 1e-5);
            cudaFree(d_z), cudaFree(d_hd), cudaFree(d_b1), cudaFree(d_hc), cudaFree(d_dhd);
            cudaFree(d_db1), cudaFree(part);
            if (!inplace) cudaFree(d_h), cudaFree(d_dz);
            free(z), free(b1), free(dhd), free(h), free(hd), free(dz), free(db1), free(mask);
            free(g_h), free(g_hd), free(g_dz), free(g_db1);
            tt_gpu_program_free(&p);
            tt_spec_free(&s);
        }
}

/* The core and its backward (added into dtheta) for 1 to 40 cores at each config's rank. */
static void test_core(void **state)
{
    (void)state;
    static const int cores[] = {2, 1, 8, 40};
    for (size_t ci = 0; ci < sizeof configs / sizeof *configs; ci++) {
        const config *c = &configs[ci];
        if (skip_config(c) || c->bf16) continue; /* fp32 throughout: the storage type is unused */
        const int h = cores[ci / 2 % (sizeof cores / sizeof *cores)], r = c->r;
        tt_spec s;
        tt_gpu_program p;
        load_lm_program(c, 32, h, "", &s, &p);
        const size_t nt = (size_t)h * r;
        float *theta = tt_xmalloc(nt * 4), *dg = tt_xmalloc(r * 4), *dt0 = tt_xmalloc(nt * 4);
        randn(theta, nt, 1.5f);
        randn(dg, r, 1.f);
        randn(dt0, nt, 0.1f);
        float *g = tt_xmalloc(r * 4), *dt = tt_xmalloc(nt * 4);
        cpu_core_fwd(g, theta, h, r);
        memcpy(dt, dt0, nt * 4);
        cpu_core_bwd(dt, dg, theta, h, r);
        float *d_theta = upload(theta, nt, 0), *d_dg = upload(dg, r, 0), *d_dt = upload(dt0, nt, 0);
        float *d_g = poisoned(r, 4);
        tt_core_fwd(&p, gpu.stream, d_g, d_theta, h, r);
        tt_core_bwd(&p, gpu.stream, d_dt, d_dg, d_theta, h, r);
        float *g_g = download(d_g, r, 0), *g_dt = download(d_dt, nt, 0);
        char name[32];
        snprintf(name, sizeof name, "%s h=%d", c->name, h);
        config cc = *c;
        cc.name = name;
        compare("core_fwd", &cc, g_g, g, r, 1e-5);
        compare("core_bwd", &cc, g_dt, dt, nt, 1e-5);
        cudaFree(d_theta), cudaFree(d_dg), cudaFree(d_dt), cudaFree(d_g);
        free(theta), free(dg), free(dt0), free(g), free(dt), free(g_g), free(g_dt);
        tt_gpu_program_free(&p);
        tt_spec_free(&s);
    }
}

/* Cross-entropy over rows of 10000 (vector path), 30001 and 517 logits, and of 30003 and 20003
 * logits in rows 30008 and 20008 apart (as the adaptive head's: the vector path with a
 * remainder, the padding NaN: reading it fails), with and without label smoothing, rows of weight
 * 0, 0.5 and 1, in the fp32 instance and in the bf16 one (logits and their gradient in bf16, as
 * the bf16 path's products write and read them). The logits are bf16 values, so both instances
 * read the same numbers: the fp32 one against cpu_cross_entropy row by row, scaled by the weight
 * as cpu_model.c's output layer does; the bf16 one's loss the same, and its gradient the fp32
 * instance's rounded, bit for bit. Without grad the logits must stay as they were. */
static void test_xent(void **state)
{
    (void)state;
    static const int vocabs[] = {10000, 30001, 517, 30003, 20003},
                     lds[] = {10000, 30001, 517, 30008, 20008};
    static const float epss[] = {0.f, 0.1f, 0.1f, 0.1f, 0.f};
    /* a vocabulary of 20003: rows up to it take xent (7 groups of 4 a thread kept: all of 10000
     * and 517, part of 20003), longer ones xent_long */
    tt_spec s[2];
    tt_gpu_program p[2];
    for (int bf = 0; bf < 2; bf++) {
        char text[256], err[4096];
        snprintf(text, sizeof text, "model: {kind: tensorized, vocab: 20003, d_model: 32, layers: 1, "
                 "rank: 8, cores: 2, seq_len: 16, d_inner: 32}\ntrain: {batch: 4, precision: %s}\n",
                 bf ? "bf16" : "fp32");
        if (tt_spec_parse(text, strlen(text), "test", ".", &s[bf], err, sizeof err) != 0) fail_msg("%s", err);
        if (tt_gpu_program_load(&p[bf], &s[bf], &gpu, &cache, err, sizeof err) != 0) fail_msg("%s", err);
        assert_int_equal(tt_kernel_const(tt_gpu_kernel_of(&p[bf], "xent")->k, "HEAD", -1), 20003);
    }
    for (size_t vi = 0; vi < sizeof vocabs / sizeof *vocabs; vi++) {
        const int v = vocabs[vi], ld = lds[vi], rows = 37;
        const float eps = epss[vi];
        const size_t nl = (size_t)rows * v, np = (size_t)rows * ld;
        float *logits = tt_xmalloc(nl * 4), *weight = tt_xmalloc(rows * 4);
        int32_t *tgt = tt_xmalloc((size_t)rows * sizeof *tgt);
        randn(logits, nl, 2.f);
        round_storage(logits, nl, 1);
        float *pitched = tt_xmalloc(np * 4); /* rows ld apart, NaN between */
        for (size_t e = 0; e < np; e++) pitched[e] = NAN;
        for (int r = 0; r < rows; r++) memcpy(pitched + (size_t)r * ld, logits + (size_t)r * v, (size_t)v * 4);
        double wsum = 0;
        for (int r = 0; r < rows; r++) {
            tgt[r] = (int32_t)(tt_uniform(seed, draws, (uint64_t)r) * v);
            weight[r] = r % 5 == 0 ? 0.f : (r % 5 == 1 ? 0.5f : 1.f);
            wsum += weight[r];
        }
        draws++;
        const float scale = (float)(1.0 / wsum);
        /* CPU */
        float *dl = tt_xcalloc(nl, 4), *loss = tt_xmalloc(rows * 4), *nll = tt_xmalloc(rows * 4);
        double loss_sum = 0, nll_sum = 0;
        for (int r = 0; r < rows; r++) {
            if (weight[r] == 0.f) {
                loss[r] = nll[r] = 0.f;
                continue;
            }
            double n1;
            const double l = cpu_cross_entropy(dl + (size_t)r * v, &n1, logits + (size_t)r * v,
                                               tgt + r, 1, v, eps, scale * weight[r]);
            loss[r] = (float)(weight[r] * l);
            nll[r] = (float)(weight[r] * n1);
            loss_sum += weight[r] * l;
            nll_sum += weight[r] * n1;
        }
        float *g_dl = tt_xmalloc(nl * 4), *g32 = tt_xmalloc(nl * 4); /* the fp32 instance's */
        for (int bf = 0; bf < 2; bf++) {
            char name[48];
            snprintf(name, sizeof name, "xent V=%d ld=%d e=%.1f", v, ld, eps);
            const config cc = {name, 0, 0, 0, 0, 0, 0, bf}, *c = &cc;
            /* GPU: the loss only, then with the gradient in place */
            void *d_logits = upload(pitched, np, bf);
            float *d_w = upload(weight, rows, 0);
            int32_t *d_t = upload_bytes(tgt, (size_t)rows * sizeof *tgt);
            float *d_loss = poisoned(rows, 4), *d_nll = poisoned(rows, 4);
            double *d_sums = poisoned(2, 8);
            tt_xent(&p[bf], gpu.stream, d_loss, d_nll, d_logits, d_t, d_w, rows, v, ld, eps, scale, false);
            float *g_same = download(d_logits, np, bf);
            if (memcmp(g_same, pitched, np * 4) != 0) fail_msg("xent %s: logits changed without grad", name);
            TT_CUDA(cudaMemset(d_loss, 0xff, rows * 4));
            TT_CUDA(cudaMemset(d_nll, 0xff, rows * 4));
            tt_xent(&p[bf], gpu.stream, d_loss, d_nll, d_logits, d_t, d_w, rows, v, ld, eps, scale, true);
            tt_xent_sum(&p[bf], gpu.stream, d_sums, d_loss, d_nll, rows);
            float *g_dlp = download(d_logits, np, bf), *g_loss = download(d_loss, rows, 0),
                  *g_nll = download(d_nll, rows, 0);
            /* the rows' v values; the padding must have stayed NaN (never written) */
            for (int r = 0; r < rows; r++) {
                memcpy(g_dl + (size_t)r * v, g_dlp + (size_t)r * ld, (size_t)v * 4);
                for (int i = v; i < ld; i++)
                    if (!isnan(g_dlp[(size_t)r * ld + i]))
                        fail_msg("xent %s: row %d's padding written", name, r);
            }
            double sums[2];
            TT_CUDA(cudaMemcpy(sums, d_sums, sizeof sums, cudaMemcpyDeviceToHost));
            compare("xent loss", c, g_loss, loss, rows, 1e-5);
            compare("  nll", c, g_nll, nll, rows, 1e-5);
            if (!bf) {
                compare("  dlogits", c, g_dl, dl, nl, 1e-5);
                memcpy(g32, g_dl, nl * 4);
            } else { /* the fp32 instance's gradient rounded: bit for bit */
                round_storage(g32, nl, 1);
                compare("  dlogits", c, g_dl, g32, nl, 0.0);
            }
            const float got[2] = {(float)sums[0], (float)sums[1]};
            const float want[2] = {(float)loss_sum, (float)nll_sum};
            compare("  sums", c, got, want, 2, 1e-6);
            cudaFree(d_logits), cudaFree(d_w), cudaFree(d_t), cudaFree(d_loss), cudaFree(d_nll);
            cudaFree(d_sums);
            free(g_dlp), free(g_loss), free(g_nll), free(g_same);
        }
        free(pitched), free(logits), free(weight), free(tgt), free(dl), free(loss), free(nll);
        free(g_dl), free(g32);
    }
    for (int bf = 0; bf < 2; bf++) {
        tt_gpu_program_free(&p[bf]);
        tt_spec_free(&s[bf]);
    }
}

/* Rows [b][c][i] of k floats (the reference's order) to the GPU's head-major [c][b][i], and back
 * (back: 1). */
static float *txl_rows(const float *src, int b, int h, int n, int k, int back)
{
    float *dst = tt_xmalloc((size_t)b * h * n * k * 4);
    for (int s = 0; s < b; s++)
        for (int c = 0; c < h; c++)
            for (int i = 0; i < n; i++) {
                const size_t ref = (((size_t)s * h + c) * n + i) * k, gpu_row = (((size_t)c * b + s) * n + i) * k;
                memcpy(dst + (back ? ref : gpu_row), src + (back ? gpu_row : ref), (size_t)k * 4);
            }
    return dst;
}

/* Transformer-XL's fused relative shift, mask, softmax and dropatt (templates/txl_softmax.cu)
 * against its CPU twin (cpu_txl_probs and cpu_txl_probs_bwd: the formulas of MODEL.md section
 * 3), at fp32 and bf16, with and without memory, dropatt 0.2, outputs poisoned first: prob, pdrop
 * (the same mask as cpu_dropout_fwd draws, in the reference's order although the GPU's rows are
 * head-major) and the backward's dAC and dBD (every element, the unread columns of dBD zero). */
static void test_txl_softmax(void **state)
{
    (void)state;
    static const struct {
        int batch, heads, n, m, bf16;
    } cases[] = {{2, 3, 8, 0, 0}, {2, 3, 8, 8, 0}, {1, 2, 37, 70, 0}, {2, 3, 8, 8, 1}, {1, 2, 37, 70, 1}};
    for (size_t ci = 0; ci < sizeof cases / sizeof *cases; ci++) {
        const int b = cases[ci].batch, h = cases[ci].heads, n = cases[ci].n, m = cases[ci].m;
        const int bf = cases[ci].bf16, k = m + n, rows = b * h * n;
        char text[512], err[4096], name[64];
        snprintf(text, sizeof text,
                 "model: {kind: transformer-xl, vocab: 50, d_model: 16, layers: 1, n_head: %d, "
                 "d_head: 8, seq_len: %d, mem_len: %d, d_inner: 32}\n"
                 "train: {batch: %d, precision: %s}\n", h, n, m > 0 ? m : 1, b, bf ? "bf16" : "fp32");
        snprintf(name, sizeof name, "txl B%d H%d N%d M%d", b, h, n, m);
        const config cc = {name, 0, 0, 0, 0, 0, 0, bf}, *c = &cc;
        tt_spec sp;
        tt_gpu_program p;
        if (tt_spec_parse(text, strlen(text), "test", ".", &sp, err, sizeof err) != 0) fail_msg("%s", err);
        if (tt_gpu_program_load(&p, &sp, &gpu, &cache, err, sizeof err) != 0) fail_msg("%s", err);
        const size_t ne = (size_t)rows * k;
        float *ac = tt_xmalloc(ne * 4), *bd = tt_xmalloc(ne * 4), *dpd = tt_xmalloc(ne * 4);
        randn(ac, ne, 2.f), randn(bd, ne, 2.f), randn(dpd, ne, 1.f);
        const float scale = 0.35355339f;
        const tt_dropout dr = test_dropout(0.2f);
        /* CPU twin */
        float *prob = tt_xcalloc(ne, 4), *pdrop = tt_xmalloc(ne * 4), *dac = tt_xcalloc(ne, 4);
        float *dbd = tt_xcalloc(ne, 4), *dprob = tt_xmalloc(ne * 4);
        uint8_t *mask = tt_xmalloc(ne);
        cpu_txl_probs(prob, ac, bd, rows, n, m, scale);
        round_storage(prob, ne, bf); /* the backward reads the stored prob */
        cpu_dropout(pdrop, mask, prob, (long)ne, dr);
        for (size_t e = 0; e < ne; e++) dprob[e] = mask[e] ? dpd[e] / (1.f - dr.p) : 0.f;
        cpu_txl_probs_bwd(dac, dbd, prob, dprob, rows, n, m, scale);
        /* GPU, head-major */
        float *hac = txl_rows(ac, b, h, n, k, 0), *hbd = txl_rows(bd, b, h, n, k, 0);
        float *hdpd = txl_rows(dpd, b, h, n, k, 0);
        float *d_ac = upload(hac, ne, 0), *d_bd = upload(hbd, ne, 0), *d_dpd = upload(hdpd, ne, 0);
        free(hac), free(hbd), free(hdpd);
        void *d_prob = poisoned(ne, bf ? 2 : 4), *d_pdrop = poisoned(ne, bf ? 2 : 4);
        void *d_dac = poisoned(ne, bf ? 2 : 4), *d_dbd = poisoned(ne, bf ? 2 : 4);
        tt_txl_softmax_fwd(&p, gpu.stream, d_prob, d_pdrop, d_ac, d_bd, b, h, n, m, scale, dr);
        tt_txl_softmax_bwd(&p, gpu.stream, d_dac, d_dbd, d_dpd, d_prob, b, h, n, m, scale, dr);
        float *g[4];
        void *const outs[4] = {d_prob, d_pdrop, d_dac, d_dbd};
        for (int o = 0; o < 4; o++) {
            float *x = download(outs[o], ne, bf);
            g[o] = txl_rows(x, b, h, n, k, 1);
            free(x);
        }
        float *g_prob = g[0], *g_pdrop = g[1], *g_dac = g[2], *g_dbd = g[3];
        const double tol = bf ? 1e-2 : 1e-5;
        compare("txl prob", c, g_prob, prob, ne, tol);
        compare("  pdrop", c, g_pdrop, pdrop, ne, tol);
        compare("  dAC", c, g_dac, dac, ne, tol);
        compare("  dBD", c, g_dbd, dbd, ne, tol);
        cudaFree(d_ac), cudaFree(d_bd), cudaFree(d_dpd), cudaFree(d_prob), cudaFree(d_pdrop);
        cudaFree(d_dac), cudaFree(d_dbd);
        free(ac), free(bd), free(dpd), free(prob), free(pdrop), free(dac), free(dbd), free(dprob);
        free(mask), free(g_prob), free(g_pdrop), free(g_dac), free(g_dbd);
        tt_gpu_program_free(&p);
        tt_spec_free(&sp);
    }
}

/* The largest distance in units in the last place between two float arrays (0: the same bits). */
static long max_ulps(const float *a, const float *b, size_t n, size_t *differ)
{
    long worst = 0;
    *differ = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t x, y;
        memcpy(&x, &a[i], 4);
        memcpy(&y, &b[i], 4);
        if (x < 0) x = INT32_MIN - x; /* monotonic: ordered like the floats */
        if (y < 0) y = INT32_MIN - y;
        const long dist = labs((long)x - y);
        *differ += dist != 0;
        worst = dist > worst ? dist : worst;
    }
    return worst;
}

/* Gradient norm, clipping and Adam against tt_clip_grad_norm and tt_adam_step: w, m and v within
 * one float rounding (the kernels do the CPU's operations in its order, so bit-equal is what is
 * expected), with and without clipping and weight decay, on whole arrays (16-byte path) and on
 * arrays shifted by one float (the scalar path). The bf16 copy is the rounded w. */
static void test_adam(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < 2; ci++) {
        const config *c = &configs[ci];
        tt_spec s;
        tt_gpu_program p;
        load_program(c, &s, &p);
        for (int variant = 0; variant < 3; variant++) {
            const size_t off = variant == 2, n = 100003 - off;
            const double clip = variant == 1 ? 0 : 0.25;
            tt_train_spec t = s.train;
            t.weight_decay = variant == 1 ? 0 : 0.01;
            const long step = 7;
            const double lr = 2.5e-4;
            float *w = tt_xmalloc((n + 1) * 4), *g = tt_xmalloc((n + 1) * 4),
                  *m = tt_xmalloc((n + 1) * 4), *v = tt_xmalloc((n + 1) * 4);
            randn(w, n + 1, 0.02f);
            randn(g, n + 1, 0.01f);
            randn(m, n + 1, 0.01f);
            randn(v, n + 1, 1e-4f);
            for (size_t i = 0; i < n + 1; i++) v[i] = fabsf(v[i]);
            /* GPU first (the CPU updates in place) */
            float *d_w = upload(w, n + 1, 0), *d_g = upload(g, n + 1, 0), *d_m = upload(m, n + 1, 0),
                  *d_v = upload(v, n + 1, 0);
            void *d_copy = poisoned(n + 1, c->bf16 ? 2 : 4);
            tt_adam_scalars host;
            tt_adam_scalars_at(&host, &t, lr, step);
            tt_adam_scalars *d_sc = upload_bytes(&host, sizeof host);
            double *part = poisoned(tt_grad_norm_parts(&p), 8);
            tt_grad_norm(&p, gpu.stream, d_sc, part, d_g + off, n, clip);
            tt_adam(&p, gpu.stream, d_w + off, d_m + off, d_v + off,
                    (char *)d_copy + off * (c->bf16 ? 2 : 4), d_g + off, d_sc, n, &t);
            float *g_w = download(d_w, n + 1, 0), *g_m = download(d_m, n + 1, 0),
                  *g_v = download(d_v, n + 1, 0), *g_copy = download(d_copy, n + 1, c->bf16);
            TT_CUDA(cudaMemcpy(&host, d_sc, sizeof host, cudaMemcpyDeviceToHost));
            /* CPU */
            const double norm = tt_clip_grad_norm(g + off, n, clip);
            tt_adam_step(w + off, g + off, m + off, v + off, n, &t, lr, step);
            char name[48];
            snprintf(name, sizeof name, "adam %s%s", variant == 1 ? "noclip-nowd" : "clip-wd",
                     off ? " shifted" : "");
            printf("  grad norm %-20s gpu %.17g cpu %.17g, clip factor %.9g\n", name, host.norm, norm,
                   host.clip);
            if (!(fabs(host.norm - norm) <= 1e-12 * norm))
                fail_msg("%s: norm %.17g, want %.17g", name, host.norm, norm);
            if (variant == 1 ? host.clip != 1.0 : !(host.clip < 1.0))
                fail_msg("%s: clip factor %.17g", name, host.clip);
            const float *got[3] = {g_w + off, g_m + off, g_v + off};
            const float *want[3] = {w + off, m + off, v + off};
            const char *what[3] = {"w", "m", "v"};
            for (int a = 0; a < 3; a++) {
                size_t differ;
                const long u = max_ulps(got[a], want[a], n, &differ);
                printf("  %-28s %s: %zu of %zu differ, at most %ld ulp\n", name, what[a], differ, n, u);
                if (u > 1) fail_msg("%s %s: %ld ulps apart", name, what[a], u);
            }
            if (g_w[0] != w[0] && off) fail_msg("%s: the element before the slice changed", name);
            float *want_copy = tt_xmalloc(n * 4);
            memcpy(want_copy, w + off, n * 4);
            round_storage(want_copy, n, c->bf16);
            config cc = *c;
            cc.name = name;
            compare("  copy of w", &cc, g_copy + off, want_copy, n, c->bf16 ? 1e-3 : 1e-6);
            cudaFree(d_w), cudaFree(d_g), cudaFree(d_m), cudaFree(d_v), cudaFree(d_copy);
            cudaFree(d_sc), cudaFree(part);
            free(w), free(g), free(m), free(v), free(g_w), free(g_m), free(g_v), free(g_copy);
            free(want_copy);
        }
        tt_gpu_program_free(&p);
        tt_spec_free(&s);
    }
}

/* cuBLAS in nn.Linear's layout against cpu_linear_fwd/bwd, for each precision. */
static void test_gemm(void **state)
{
    (void)state;
    /* cuBLAS's kernels are not ours; compute-sanitizer's racecheck fails inside them */
    if (getenv("TT_TEST_NO_CUBLAS")) {
        print_message("skipped: TT_TEST_NO_CUBLAS is set\n");
        skip();
    }
    static const struct { tt_precision prec; double tol; const char *name; } precs[] = {
        {TT_PREC_FP32, 1e-5, "fp32"}, {TT_PREC_TF32, 1e-3, "tf32"}, {TT_PREC_BF16, 1e-2, "bf16"}};
    /* out 1003: tt_gemm_fwd_bias splits it into 1000 columns and 3 */
    static const int shapes[][3] = {{96, 256, 120}, {37, 100, 2100}, {128, 32, 10000},
                                    {40, 64, 1003}};
    for (size_t pi = 0; pi < 3; pi++)
        for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
            const int rows = shapes[si][0], in = shapes[si][1], out = shapes[si][2];
            const int bf = precs[pi].prec == TT_PREC_BF16;
            const config c = {precs[pi].name, in, rows, out, 1, 0, 0, bf};
            tt_gemm gm;
            tt_gemm_init(&gm, &gpu, precs[pi].prec);
            const size_t nx = (size_t)rows * in, nw = (size_t)out * in, ny = (size_t)rows * out;
            float *x = tt_xmalloc(nx * 4), *w = tt_xmalloc(nw * 4), *dy = tt_xmalloc(ny * 4);
            float *dw0 = tt_xmalloc(nw * 4);
            randn(x, nx, 1.f);
            randn(w, nw, 0.1f);
            randn(dy, ny, 1.f);
            randn(dw0, nw, 0.1f);
            round_storage(x, nx, bf);
            round_storage(w, nw, bf);
            round_storage(dy, ny, bf);
            float *y = tt_xmalloc(ny * 4), *dx = tt_xmalloc(nx * 4), *dw = tt_xmalloc(nw * 4);
            memcpy(dw, dw0, nw * 4);
            cpu_linear_fwd(y, x, w, NULL, rows, in, out);
            cpu_linear_bwd(dx, dw, NULL, dy, x, w, rows, in, out);
            void *d_x = upload(x, nx, bf), *d_w = upload(w, nw, bf), *d_dy = upload(dy, ny, bf);
            float *d_dw = upload(dw0, nw, 0);
            void *d_y = poisoned(ny, bf ? 2 : 4), *d_dx = poisoned(nx, bf ? 2 : 4);
            tt_gemm_fwd(&gm, d_y, false, d_x, d_w, rows, in, out, 0.f);
            tt_gemm_bwd_x(&gm, d_dx, d_dy, d_w, rows, in, out, 0.f);
            tt_gemm_bwd_w(&gm, d_dw, d_dy, d_x, rows, in, out);
            float *gy = download(d_y, ny, bf), *gdx = download(d_dx, nx, bf), *gdw = download(d_dw, nw, 0);
            char what[64];
            snprintf(what, sizeof what, "gemm %dx%dx%d", rows, in, out);
            compare(what, &c, gy, y, ny, precs[pi].tol);
            compare("  dx", &c, gdx, dx, nx, precs[pi].tol);
            /* dw is fp32, but its products are of the precision's inputs */
            compare("  dw", &c, gdw, dw, nw, bf ? 1e-5 : precs[pi].tol);

            /* cuBLASLt with the bias in its epilogue (forward), and the bias gradient beside the
             * weight gradient (a product with ones), on a workspace of our own */
            float *bias = tt_xmalloc((size_t)out * 4), *db = tt_xcalloc((size_t)out, 4);
            float *yb = tt_xmalloc(ny * 4);
            randn(bias, (size_t)out, 1.f);
            round_storage(bias, (size_t)out, bf);
            cpu_linear_fwd(yb, x, w, bias, rows, in, out);
            memcpy(dw, dw0, nw * 4);
            cpu_linear_bwd(NULL, dw, db, dy, x, w, rows, in, out);
            void *ws = NULL;
            TT_CUDA(cudaMalloc(&ws, (size_t)32 << 20));
            tt_gemm_set_workspace(&gm, ws, (size_t)32 << 20);
            void *d_b = upload(bias, (size_t)out, bf);
            float *ones = tt_xmalloc((size_t)rows * 4);
            for (int i = 0; i < rows; i++) ones[i] = 1.f;
            void *d_ones = upload(ones, (size_t)rows, bf);
            free(ones);
            float *d_db = poisoned((size_t)out, 4);
            TT_CUDA(cudaMemcpy(d_dw, dw0, nw * 4, cudaMemcpyHostToDevice));
            tt_gemm_fwd_bias(&gm, d_y, false, out, d_x, in, d_w, in, d_b, rows, in, out);
            tt_gemm_bwd_w_bias(&gm, d_dw, 1.f, d_db, d_dy, out, d_x, in, d_ones, rows, in, out);
            float *gyb = download(d_y, ny, bf), *gdwb = download(d_dw, nw, 0);
            float *gdb = download(d_db, (size_t)out, 0);
            compare("  lt y + b", &c, gyb, yb, ny, precs[pi].tol);
            compare("  lt dw", &c, gdwb, dw, nw, bf ? 1e-5 : precs[pi].tol);
            compare("  lt db", &c, gdb, db, (size_t)out, bf ? 1e-5 : precs[pi].tol);
            free(gyb), free(gdwb), free(gdb);

            /* Each operand's rows wider apart than the operand, its padding NaN (reading it
             * fails) and the outputs' checked still NaN after: as the FFN's activations and its
             * W2 copy are kept, and the logits (and into fp32 with the fp32 bias, as the logits
             * were kept before they were bf16 on the bf16 path). The cached cuBLASLt plans serve a
             * second round of the same products, whose dw is written, not added (beta 0: the
             * output layer's, over NaN here: it must not be read). */
            float *dwz = tt_xcalloc(nw, 4);
            cpu_linear_bwd(NULL, dwz, NULL, dy, x, w, rows, in, out);
            const int ldi = (int)tt_row_pitch(in + 1), ldo = (int)tt_row_pitch(out + 1);
            const size_t es = bf ? 2 : 4;
            void *p_x = upload_pitched(x, rows, in, ldi, bf), *p_w = upload_pitched(w, out, in, ldi, bf);
            void *p_dy = upload_pitched(dy, rows, out, ldo, bf);
            void *p_y = poisoned((size_t)rows * ldo, es), *p_dx = poisoned((size_t)rows * ldi, es);
            void *p_yf = poisoned((size_t)rows * ldo, 4);
            float *d_bf = upload(bias, (size_t)out, 0);
            for (int round = 0; round < 2; round++) {
                TT_CUDA(cudaMemset(d_db, 0xff, (size_t)out * 4));
                if (round) TT_CUDA(cudaMemset(d_dw, 0xff, nw * 4));
                else TT_CUDA(cudaMemcpy(d_dw, dw0, nw * 4, cudaMemcpyHostToDevice));
                tt_gemm_fwd_bias(&gm, p_yf, true, ldo, p_x, ldi, p_w, ldi, d_bf, rows, in, out);
                tt_gemm_bwd_w_bias(&gm, d_dw, round ? 0.f : 1.f, d_db, p_dy, ldo, p_x, ldi, d_ones,
                                   rows, in, out);
                float *g1 = download_pitched(p_yf, rows, out, ldo, 0, "lt y + b, ld");
                float *g2 = download(d_dw, nw, 0), *g3 = download(d_db, (size_t)out, 0);
                compare(round ? "  again" : "  lt ld y + b", &c, g1, yb, ny, precs[pi].tol);
                compare(round ? "  lt ld dw = " : "  lt ld dw", &c, g2, round ? dwz : dw, nw,
                        bf ? 1e-5 : precs[pi].tol);
                compare("  lt ld db", &c, g3, db, (size_t)out, bf ? 1e-5 : precs[pi].tol);
                free(g1), free(g2), free(g3);
            }
            TT_CUDA(cudaMemcpy(d_dw, dw0, nw * 4, cudaMemcpyHostToDevice));
            tt_gemm_fwd_ld(&gm, p_y, false, ldo, p_x, ldi, p_w, ldi, rows, in, out, 0.f);
            tt_gemm_bwd_x_ld(&gm, p_dx, ldi, p_dy, ldo, p_w, ldi, rows, in, out, 0.f);
            tt_gemm_bwd_w_ld(&gm, d_dw, 1.f, p_dy, ldo, p_x, ldi, rows, in, out);
            float *g1 = download_pitched(p_y, rows, out, ldo, bf, "gemm y, ld");
            float *g2 = download_pitched(p_dx, rows, in, ldi, bf, "gemm dx, ld");
            float *g3 = download(d_dw, nw, 0);
            compare("  ld y", &c, g1, y, ny, precs[pi].tol);
            compare("  ld dx", &c, g2, dx, nx, precs[pi].tol);
            compare("  ld dw", &c, g3, dw, nw, bf ? 1e-5 : precs[pi].tol);
            free(g1), free(g2), free(g3);
            cudaFree(p_x), cudaFree(p_w), cudaFree(p_dy), cudaFree(p_y), cudaFree(p_dx);
            cudaFree(p_yf), cudaFree(d_bf);
            free(dwz);
            tt_gemm_set_workspace(&gm, NULL, 0);
            cudaFree(ws), cudaFree(d_b), cudaFree(d_db), cudaFree(d_ones);
            free(bias), free(db), free(yb);
            tt_gemm_free(&gm);

            cudaFree(d_x), cudaFree(d_w), cudaFree(d_dy), cudaFree(d_dw), cudaFree(d_y), cudaFree(d_dx);
            free(x), free(w), free(dy), free(dw0), free(y), free(dx), free(dw), free(gy), free(gdx), free(gdw);
        }
}

int main(void)
{
    seed = tu_seed();
    const int open_rc = tu_gpu_open(&gpu, &cache, seed);
    if (open_rc) return open_rc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_mla_fwd),
        cmocka_unit_test(test_mla_bwd),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_adaptive),
        cmocka_unit_test(test_residual_ln),
        cmocka_unit_test(test_ffn_act),
        cmocka_unit_test(test_core),
        cmocka_unit_test(test_xent),
        cmocka_unit_test(test_txl_softmax),
        cmocka_unit_test(test_adam),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tu_gpu_close(&gpu, &cache);
    return rc;
}
