/* Multi-linear attention with T materialized (see mla_mat.h). */
#include "mla_mat.h"

#include <stdint.h>

#include "util.h"

static size_t align256(size_t x) { return (x + 255) / 256 * 256; }

size_t tt_mla_mat_carve(tt_mla_mat_bufs *b, void *base, int batch, int n, int r, int d, bool key,
                        int groups, size_t es)
{
    TT_ASSERT(groups >= 0 && groups <= n);
    const size_t bt = (size_t)batch, nn = (size_t)n * n, r2 = (size_t)r * (key ? 2 : 1);
    const size_t shells = groups ? 1 : 0; /* the reordered Y and Wo, and dWo */
    const size_t bytes[10] = {bt * n * r2 * es, bt * nn * r2 * es, bt * n * nn * es,
                              bt * n * nn * es, bt * n * r2 * 4, bt * nn * r2 * 4,
                              bt * n * 4 * (size_t)r * 4, shells * bt * n * d * es,
                              shells * d * nn * es, shells * d * nn * 4};
    void **at[10] = {&b->a, &b->kv, &b->t, &b->dt, (void **)&b->gm, (void **)&b->em,
                     (void **)&b->part, &b->yp, &b->wop, (void **)&b->dwop};
    size_t off = 0;
    for (int i = 0; i < 10; i++) {
        if (base) *at[i] = bytes[i] ? (char *)base + off : NULL;
        off += align256(bytes[i]);
    }
    b->groups = groups;
    return off;
}

static size_t storage_size(const tt_gemm *gm) { return gm->act == CUDA_R_16BF ? 2 : 4; }
static void *at_elem(const void *p, size_t i, size_t es) { return (char *)p + i * es; }
/* Group g's first position (g = groups: n). */
static int group_start(const tt_mla_mat_bufs *b, int n, int g) { return g * n / b->groups; }

/* T = A KV^T, a product per sequence, masked: rows in sequence order (dense), or in position
 * order with the columns in shell order (groups), masked to each row group's K_g. */
static void form_t(const tt_gpu_program *p, const tt_gemm *gm, cudaStream_t s, const void *qkv,
                   const float *g, const void *pos, const float *u, const float *v,
                   const tt_mla_mat_bufs *b, int batch, int n, int r2)
{
    const long long nn = (long long)n * n;
    tt_mla_mat_prep(p, s, b->a, b->kv, qkv, g, pos, u, v, batch);
    if (!b->groups) { /* not causal: nothing to mask */
        tt_gemm_batched(gm, b->t, false, (int)nn, n * nn, b->a, false, r2, (long long)n * r2,
                        b->kv, true, r2, nn * r2, n, (int)nn, r2, batch, 0.f);
        return;
    }
    tt_gemm_batched(gm, b->t, false, batch * (int)nn, nn, b->a, false, r2, (long long)n * r2,
                    b->kv, true, r2, nn * r2, n, (int)nn, r2, batch, 0.f);
    tt_mla_mat_mask(p, s, b->t, batch, false);
}

void tt_mla_mat_fwd(const tt_gpu_program *p, const tt_gemm *gm, cudaStream_t s, void *y,
                    const void *qkv, const float *g, const void *wo, const void *pos,
                    const float *u, const float *v, const tt_mla_mat_bufs *b, int batch, int n,
                    int r, int d)
{
    TT_ASSERT(gm->stream == s);
    TT_ASSERT(b->groups == tt_mla_mat_groups(p));
    const size_t es = storage_size(gm);
    const int r2 = pos ? 2 * r : r, nn = n * n;
    form_t(p, gm, s, qkv, g, pos, u, v, b, batch, n, r2);
    if (!b->groups) {
        tt_gemm_fwd(gm, y, false, b->t, wo, batch * n, nn, d, 0.f); /* Y = T Wo^T */
        return;
    }
    /* Y in position order, a product per group over its K_g columns of Wo (shell order) */
    tt_mla_mat_wo(p, s, b->wop, wo);
    for (int i = 0; i < b->groups; i++) {
        const int s0 = group_start(b, n, i), s1 = group_start(b, n, i + 1);
        tt_gemm_fwd_ld(gm, at_elem(b->yp, (size_t)s0 * batch * d, es), false, d,
                       at_elem(b->t, (size_t)s0 * batch * nn, es), nn, b->wop, nn,
                       (s1 - s0) * batch, s1 * s1, d, 0.f);
    }
    tt_mla_mat_rows(p, s, y, b->yp, batch, true);
}

void tt_mla_mat_bwd(const tt_gpu_program *p, const tt_gemm *gm, cudaStream_t s, void *dqkv,
                    float *dwo, float *dp, float *dg, float *du, float *dv, const void *dy,
                    const void *qkv, const float *g, const void *wo, const void *pos,
                    const float *u, const float *v, const tt_mla_mat_bufs *b, int batch, int n,
                    int r, int d)
{
    TT_ASSERT(gm->stream == s);
    TT_ASSERT(b->groups == tt_mla_mat_groups(p));
    const size_t es = storage_size(gm);
    const int r2 = pos ? 2 * r : r, nn = n * n, rows = batch * n;
    /* T again (the layers share its buffer) */
    form_t(p, gm, s, qkv, g, pos, u, v, b, batch, n, r2);
    int ld = nn, stride = n * nn; /* dT's rows and sequences, for G and E */
    if (!b->groups) {
        /* dWo += dY^T T and dT = dY Wo */
        tt_gemm_bwd_w(gm, dwo, dy, b->t, rows, nn, d);
        tt_gemm_bwd_x(gm, b->dt, dy, wo, rows, nn, d, 0.f);
    } else {
        /* dY in position order; dWo's columns [K_{g-1}, K_g) (shell order) from the rows that
         * see them (groups g on: consecutive), written; dT_g = dY_g Wo[:, :K_g], then masked
         * whole (G and E read it so) */
        tt_mla_mat_wo(p, s, b->wop, wo);
        tt_mla_mat_rows(p, s, b->yp, dy, batch, false);
        for (int i = 0; i < b->groups; i++) {
            const int s0 = group_start(b, n, i), s1 = group_start(b, n, i + 1);
            const int k0 = s0 * s0, k1 = s1 * s1;
            const size_t row0 = (size_t)s0 * batch;
            tt_gemm_batched(gm, b->dwop + k0, true, nn, 0, at_elem(b->yp, row0 * d, es), true, d,
                            0, at_elem(b->t, row0 * nn + k0, es), false, nn, 0, d, k1 - k0,
                            (n - s0) * batch, 1, 0.f);
            tt_gemm_bwd_x_ld(gm, at_elem(b->dt, row0 * nn, es), nn, at_elem(b->yp, row0 * d, es),
                             d, b->wop, nn, (s1 - s0) * batch, k1, d, 0.f);
        }
        tt_mla_mat_mask(p, s, b->dt, batch, true);
        tt_mla_mat_dwo(p, s, dwo, b->dwop);
        ld = batch * nn, stride = nn;
    }
    /* G = dT KV [N, R2] and E = dT^T A [N^2, R2] a sequence, in fp32 */
    tt_gemm_batched(gm, b->gm, true, r2, (long long)n * r2, b->dt, false, ld, stride, b->kv, false,
                    r2, (long long)nn * r2, n, r2, nn, batch, 0.f);
    tt_gemm_batched(gm, b->em, true, r2, (long long)nn * r2, b->dt, true, ld, stride, b->a, false,
                    r2, (long long)n * r2, nn, r2, n, batch, 0.f);
    tt_mla_mat_grads(p, s, dqkv, b->part, b->gm, b->em, qkv, g, pos, u, v, batch);
    tt_mla_mat_params(p, s, dp, dg, du, dv, b->part, batch);
}
