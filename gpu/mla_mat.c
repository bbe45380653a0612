/* Multi-linear attention with T materialized (see mla_mat.h). */
#include "mla_mat.h"

#include <stdint.h>

#include "util.h"

static size_t align256(size_t x) { return (x + 255) / 256 * 256; }

/* Group g of the causal mask's shell order (templates/mla_mat.cu): rows [s, s + n) of each
 * sequence, K columns, its T at element off of the buffer (batch n rows of K). */
typedef struct {
    int s, n, k;
    size_t off;
} group;

/* The groups' geometry for batch sequences; returns the elements of T they need. */
static size_t groups_of(int groups, int n, int batch, group *gr)
{
    size_t off = 0;
    for (int g = 0; g < groups; g++) {
        const int s0 = g * n / groups, s1 = (g + 1) * n / groups;
        gr[g] = (group){s0, s1 - s0, s1 * s1, off};
        off += (size_t)(s1 - s0) * (size_t)batch * (size_t)s1 * (size_t)s1;
    }
    return off;
}

size_t tt_mla_mat_carve(tt_mla_mat_bufs *b, void *base, int batch, int n, int r, int d, bool key,
                        int groups, size_t es)
{
    TT_ASSERT(groups >= 0 && groups <= TT_MLA_MAT_MAX_GROUPS);
    group gr[TT_MLA_MAT_MAX_GROUPS];
    const size_t bt = (size_t)batch, nn = (size_t)n * n, r2 = (size_t)r * (key ? 2 : 1);
    const size_t t = groups ? groups_of(groups, n, batch, gr) : bt * n * nn;
    const size_t shells = groups ? 1 : 0; /* the reordered Y and Wo, and dWo */
    const size_t bytes[10] = {bt * n * r2 * es, bt * nn * r2 * es, t * es, t * es,
                              bt * n * r2 * 4, bt * nn * r2 * 4, bt * n * 4 * (size_t)r * 4,
                              shells * bt * n * d * es, shells * d * nn * es, shells * d * nn * 4};
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

static void *at_elem(const void *p, size_t i, size_t es) { return (char *)p + i * es; }

/* T = A KV^T, masked, into t: a product per sequence (dense), or per row group and sequence in
 * one batched product per group (shell order). */
static void form_t(const tt_gpu_program *p, const tt_gemm *gm, cudaStream_t s, void *t,
                   const void *qkv, const float *g, const void *pos, const float *u,
                   const float *v, const tt_mla_mat_bufs *b, int batch, int n, int r2,
                   const group *gr, size_t es)
{
    const long long nn = (long long)n * n;
    tt_mla_mat_prep(p, s, b->a, b->kv, qkv, g, pos, u, v, batch);
    if (!b->groups) { /* not causal: nothing to mask */
        tt_gemm_batched(gm, t, false, (int)nn, n * nn, b->a, false, r2, (long long)n * r2, b->kv,
                        true, r2, nn * r2, n, (int)nn, r2, batch, 0.f);
        return;
    }
    for (int i = 0; i < b->groups; i++) /* rows (i - s) batch + b of the group's T */
        tt_gemm_batched(gm, at_elem(t, gr[i].off, es), false, batch * gr[i].k, gr[i].k,
                        at_elem(b->a, (size_t)gr[i].s * r2, es), false, r2, (long long)n * r2,
                        b->kv, true, r2, nn * r2, gr[i].n, gr[i].k, r2, batch, 0.f);
    tt_mla_mat_mask(p, s, t, batch);
}

static size_t storage_size(const tt_gemm *gm) { return gm->act == CUDA_R_16BF ? 2 : 4; }

void tt_mla_mat_fwd(const tt_gpu_program *p, const tt_gemm *gm, cudaStream_t s, void *y,
                    const void *qkv, const float *g, const void *wo, const void *pos,
                    const float *u, const float *v, const tt_mla_mat_bufs *b, int batch, int n,
                    int r, int d)
{
    TT_ASSERT(gm->stream == s);
    TT_ASSERT(b->groups == tt_mla_mat_groups(p));
    const size_t es = storage_size(gm);
    const int r2 = pos ? 2 * r : r, nn = n * n;
    group gr[TT_MLA_MAT_MAX_GROUPS];
    groups_of(b->groups, n, batch, gr);
    form_t(p, gm, s, b->t, qkv, g, pos, u, v, b, batch, n, r2, gr, es);
    if (!b->groups) {
        tt_gemm_fwd(gm, y, false, b->t, wo, batch * n, nn, d, 0.f); /* Y = T Wo^T */
        return;
    }
    /* Y in position order, a product per group over its K_g columns of Wo (shell order) */
    tt_mla_mat_wo(p, s, b->wop, wo);
    for (int i = 0; i < b->groups; i++)
        tt_gemm_fwd_ld(gm, at_elem(b->yp, (size_t)gr[i].s * batch * d, es), false, d,
                       at_elem(b->t, gr[i].off, es), gr[i].k, b->wop, nn, gr[i].n * batch,
                       gr[i].k, d, 0.f);
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
    group gr[TT_MLA_MAT_MAX_GROUPS];
    groups_of(b->groups, n, batch, gr);
    /* T again (the layers share its buffer) */
    form_t(p, gm, s, b->t, qkv, g, pos, u, v, b, batch, n, r2, gr, es);
    if (!b->groups) {
        /* dWo += dY^T T and dT = dY Wo; G = dT KV [N, R2] and E = dT^T A [N^2, R2] a
         * sequence, in fp32 */
        tt_gemm_bwd_w(gm, dwo, dy, b->t, rows, nn, d);
        tt_gemm_bwd_x(gm, b->dt, dy, wo, rows, nn, d, 0.f);
        tt_gemm_batched(gm, b->gm, true, r2, (long long)n * r2, b->dt, false, nn,
                        (long long)n * nn, b->kv, false, r2, (long long)nn * r2, n, r2, nn, batch,
                        0.f);
        tt_gemm_batched(gm, b->em, true, r2, (long long)nn * r2, b->dt, true, nn,
                        (long long)n * nn, b->a, false, r2, (long long)n * r2, nn, r2, n, batch,
                        0.f);
    } else {
        /* dY in position order; per group (the widest first, which writes what the others add
         * to): dWo's first K_g columns (shell order) += dY_g^T T_g, dT_g = dY_g Wo[:, :K_g] */
        tt_mla_mat_wo(p, s, b->wop, wo);
        tt_mla_mat_rows(p, s, b->yp, dy, batch, false);
        for (int i = b->groups - 1; i >= 0; i--) {
            const void *dyg = at_elem(b->yp, (size_t)gr[i].s * batch * d, es);
            const int m = gr[i].n * batch;
            tt_gemm_batched(gm, b->dwop, true, nn, 0, dyg, true, d, 0, at_elem(b->t, gr[i].off, es),
                            false, gr[i].k, 0, d, gr[i].k, m, 1, i == b->groups - 1 ? 0.f : 1.f);
            tt_gemm_bwd_x_ld(gm, at_elem(b->dt, gr[i].off, es), gr[i].k, dyg, d, b->wop, nn, m,
                             gr[i].k, d, 0.f);
        }
        tt_mla_mat_mask(p, s, b->dt, batch);
        tt_mla_mat_dwo(p, s, dwo, b->dwop);
        /* G's rows of the group, and E's first K_g rows (+)= dT_g^T A_g, a sequence each */
        for (int i = b->groups - 1; i >= 0; i--) {
            const void *dtg = at_elem(b->dt, gr[i].off, es);
            const int ld = batch * gr[i].k;
            tt_gemm_batched(gm, b->gm + (size_t)gr[i].s * r2, true, r2, (long long)n * r2, dtg,
                            false, ld, gr[i].k, b->kv, false, r2, (long long)nn * r2, gr[i].n, r2,
                            gr[i].k, batch, 0.f);
            tt_gemm_batched(gm, b->em, true, r2, (long long)nn * r2, dtg, true, ld, gr[i].k,
                            at_elem(b->a, (size_t)gr[i].s * r2, es), false, r2, (long long)n * r2,
                            gr[i].k, r2, gr[i].n, batch, i == b->groups - 1 ? 0.f : 1.f);
        }
    }
    tt_mla_mat_grads(p, s, dqkv, b->part, b->gm, b->em, qkv, g, pos, u, v, batch);
    tt_mla_mat_params(p, s, dp, dg, du, dv, b->part, batch);
}
