/* Multi-linear attention with T materialized (see mla_mat.h). */
#include "mla_mat.h"

#include <stdint.h>

#include "util.h"

static size_t align256(size_t x) { return (x + 255) / 256 * 256; }

/* buffers [from, to) of the seven below */
static size_t carve(tt_mla_mat_bufs *b, void *base, int batch, int n, int r, bool key, size_t es,
                    int from, int to)
{
    const size_t bt = (size_t)batch, nn = (size_t)n * n, r2 = (size_t)r * (key ? 2 : 1);
    const size_t bytes[7] = {bt * n * r2 * es, bt * nn * r2 * es, bt * n * nn * es,
                             bt * n * nn * es, bt * n * r2 * 4, bt * nn * r2 * 4,
                             bt * n * 4 * (size_t)r * 4};
    void **at[7] = {&b->a, &b->kv, &b->t, &b->dt, (void **)&b->gm, (void **)&b->em,
                    (void **)&b->part};
    size_t off = 0;
    for (int i = from; i < to; i++) {
        if (base) *at[i] = (char *)base + off;
        off += align256(bytes[i]);
    }
    return off;
}

size_t tt_mla_mat_carve(tt_mla_mat_bufs *b, void *base, int batch, int n, int r, bool key,
                        size_t es)
{
    return carve(b, base, batch, n, r, key, es, 0, 7);
}

size_t tt_mla_mat_carve_part(tt_mla_mat_bufs *b, void *base, int batch, int n, int r, bool key,
                             size_t es, bool t_part)
{
    return t_part ? carve(b, base, batch, n, r, key, es, 0, 3)  /* a, kv, t */
                  : carve(b, base, batch, n, r, key, es, 3, 7); /* the backward's */
}

/* T = A KV^T, masked, into t: a product per sequence. */
static void form_t(const tt_gpu_program *p, const tt_gemm *gm, cudaStream_t s, void *t,
                   const void *qkv, const float *g, const void *pos, const float *u,
                   const float *v, const tt_mla_mat_bufs *b, int batch, int n, int r2)
{
    const long long nn = (long long)n * n;
    tt_mla_mat_prep(p, s, b->a, b->kv, qkv, g, pos, u, v, batch);
    tt_gemm_batched(gm, t, false, (int)nn, n * nn, b->a, false, r2, (long long)n * r2, b->kv, true,
                    r2, nn * r2, n, (int)nn, r2, batch, 0.f);
    tt_mla_mat_mask(p, s, t, batch);
}

void tt_mla_mat_fwd(const tt_gpu_program *p, const tt_gemm *gm, cudaStream_t s, void *y,
                    const void *qkv, const float *g, const void *wo, const void *pos,
                    const float *u, const float *v, const tt_mla_mat_bufs *b, int batch, int n,
                    int r, int d)
{
    TT_ASSERT(gm->stream == s);
    const int r2 = pos ? 2 * r : r, nn = n * n;
    form_t(p, gm, s, b->t, qkv, g, pos, u, v, b, batch, n, r2);
    tt_gemm_fwd(gm, y, false, b->t, wo, batch * n, nn, d, 0.f); /* Y = T Wo^T */
}

void tt_mla_mat_bwd(const tt_gpu_program *p, const tt_gemm *gm, cudaStream_t s, void *dqkv,
                    float *dwo, float *dp, float *dg, float *du, float *dv, const void *dy,
                    const void *qkv, const float *g, const void *wo, const void *pos,
                    const float *u, const float *v, const tt_mla_mat_bufs *b, bool kept,
                    int batch, int n, int r, int d)
{
    TT_ASSERT(gm->stream == s);
    const int r2 = pos ? 2 * r : r, nn = n * n, rows = batch * n;
    /* T (the forward's, or again where the layers share its buffer), then dWo = dY^T T and
     * dT = dY Wo, masked */
    if (!kept) form_t(p, gm, s, b->t, qkv, g, pos, u, v, b, batch, n, r2);
    tt_gemm_bwd_w_ld(gm, dwo, 0.f, dy, d, b->t, nn, rows, nn, d); /* written */
    tt_gemm_bwd_x(gm, b->dt, dy, wo, rows, nn, d, 0.f);
    tt_mla_mat_mask(p, s, b->dt, batch);
    /* G = dT KV [N, R2] and E = dT^T A [N^2, R2] a sequence, in fp32 */
    tt_gemm_batched(gm, b->gm, true, r2, (long long)n * r2, b->dt, false, nn, (long long)n * nn,
                    b->kv, false, r2, (long long)nn * r2, n, r2, nn, batch, 0.f);
    tt_gemm_batched(gm, b->em, true, r2, (long long)nn * r2, b->dt, true, nn, (long long)n * nn,
                    b->a, false, r2, (long long)n * r2, nn, r2, n, batch, 0.f);
    tt_mla_mat_grads(p, s, dqkv, b->part, b->gm, b->em, qkv, g, pos, u, v, batch);
    tt_mla_mat_params(p, s, dp, dg, du, dv, b->part, batch);
}
