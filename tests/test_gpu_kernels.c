/* Every generated kernel against its CPU twin (runtime/cpu_ops.c) on the GPU, on fresh random
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
#include <time.h>

#include "bf16.h"
#include "cache.h"
#include "cpu_ops.h"
#include "gpu.h"
#include "launch.h"
#include "rng.h"
#include "spec.h"
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
    {"wide", 1536, 8, 16, 2, 1, 0, 0},     {"wide", 1536, 8, 16, 2, 1, 0, 1},
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

static void *upload(const float *x, size_t n, int bf16)
{
    void *d;
    const size_t es = bf16 ? 2 : 4;
    TT_CUDA(cudaMalloc(&d, n * es));
    if (bf16) {
        uint16_t *h = tt_xmalloc(n * 2);
        for (size_t i = 0; i < n; i++) h[i] = tt_bf16_from_float(x[i]);
        TT_CUDA(cudaMemcpy(d, h, n * 2, cudaMemcpyHostToDevice));
        free(h);
    } else {
        TT_CUDA(cudaMemcpy(d, x, n * 4, cudaMemcpyHostToDevice));
    }
    return d;
}

static void *poisoned(size_t n, size_t es)
{
    void *d;
    TT_CUDA(cudaMalloc(&d, n * es));
    TT_CUDA(cudaMemset(d, 0xff, n * es)); /* all-ones bits: NaN in fp32 and bf16 */
    return d;
}

static float *download(const void *d, size_t n, int bf16)
{
    float *x = tt_xmalloc(n * sizeof *x);
    TT_CUDA(cudaStreamSynchronize(gpu.stream));
    TT_CUDA(cudaGetLastError());
    if (bf16) {
        uint16_t *h = tt_xmalloc(n * 2);
        TT_CUDA(cudaMemcpy(h, d, n * 2, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++) x[i] = tt_bf16_to_float(h[i]);
        free(h);
    } else {
        TT_CUDA(cudaMemcpy(x, d, n * 4, cudaMemcpyDeviceToHost));
    }
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
        tt_mla_fwd(&p, gpu.stream, dy, dq, dg, dwo, dpos, du, dv, b, n, r, d);
        float *gy = download(dy, ny, c->bf16);
        compare("mla_fwd", c, gy, y, ny, c->bf16 ? 1e-2 : 1e-5);
        cudaFree(dq), cudaFree(dwo), cudaFree(dpos), cudaFree(dg), cudaFree(du), cudaFree(dv);
        cudaFree(dy);
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
        float *part = poisoned(tt_mla_bwd_part_floats(&p, b), 4);
        tt_mla_bwd(&p, gpu.stream, d_dqkv, d_dwo, d_dp, d_vec, key ? d_vec + r : NULL,
                   key ? d_vec + 2 * r : NULL, part, d_dy, d_q, d_g, d_wo, d_pos, d_u, d_v, b, n, r, d);
        float *g_dqkv = download(d_dqkv, nq, c->bf16), *g_dwo = download(d_dwo, nw, 0);
        float *g_vec = download(d_vec, 3 * (size_t)r, 0);
        compare("mla_bwd dqkv", c, g_dqkv, dqkv, nq, c->bf16 ? 1e-2 : 1e-5);
        compare("  dwo", c, g_dwo, dwo, nw, 1e-5);
        compare("  dg", c, g_vec, vec, r, 1e-5);
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

int main(void)
{
    char why[512];
    if (tt_gpu_open(&gpu, 0, why, sizeof why) != 0) {
        printf("SKIP: %s\n", why);
        return 77;
    }
    const char *env = getenv("TT_TEST_SEED");
    seed = env ? strtoull(env, NULL, 10) : (uint64_t)time(NULL);
    printf("%s (%s, %d SMs); seed %llu (TT_TEST_SEED reproduces)\n", gpu.name, gpu.arch,
           gpu.sm_count, (unsigned long long)seed);
    char err[512];
    if (tt_cache_open(&cache, NULL, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 1;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_mla_fwd),
        cmocka_unit_test(test_mla_bwd),
    };
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tt_cache_close(&cache);
    tt_gpu_close(&gpu);
    return rc;
}
