/* Multi-linear attention with T materialized (see mla_mat.h). */
#include "mla_mat.h"

#include <stdint.h>

#include "mla_geom.cuh"
#include "util.h"

static size_t align256(size_t x) { return (x + 255) / 256 * 256; }

size_t tt_mla_mat_carve(tt_mla_mat_bufs *b, void *base, int batch, int n, int r, int d, bool key,
                        size_t es)
{
    const size_t bt = (size_t)batch, nn = (size_t)n * n, r2 = (size_t)r * (key ? 2 : 1);
    const size_t bytes[8] = {bt * n * r2 * es, bt * nn * r2 * es, bt * n * nn * es,
                             bt * n * nn * es, bt * n * r2 * 4, bt * nn * r2 * 4,
                             bt * n * 4 * (size_t)r * 4, bt * n * (size_t)d * es};
    void **at[8] = {&b->a, &b->kv, &b->t, &b->dt, (void **)&b->gm, (void **)&b->em,
                    (void **)&b->part, &b->yp};
    size_t off = 0;
    for (int i = 0; i < 8; i++) {
        if (base) *at[i] = (char *)base + off;
        off += align256(bytes[i]);
    }
    return off;
}

/* T = A KV^T, masked, into t: a product per sequence, its rows at t's position-major places. */
static void form_t(const tt_gpu_program *p, const tt_gemm *gm, cudaStream_t s, void *t,
                   const void *qkv, const float *g, const void *pos, const float *u,
                   const float *v, const tt_mla_mat_bufs *b, int batch, int n, int r2)
{
    const long long nn = (long long)n * n;
    tt_mla_mat_prep(p, s, b->a, b->kv, qkv, g, pos, u, v, batch);
    tt_gemm_batched(gm, t, false, (int)(batch * nn), nn, b->a, false, r2, (long long)n * r2, b->kv,
                    true, r2, nn * r2, n, (int)nn, r2, batch, 0.f);
    tt_mla_mat_mask(p, s, t, batch);
}

/* The position tiles of the products with Wo (templates/mla_geom.cuh): under the causal mask,
 * rows of positions [first, last) reach only T's columns below last N (j < last); eight equal
 * tiles leave 9/16 of the full products' work. Without the mask, one tile of every column. */
typedef struct {
    int tiles, n;
} pos_tiles;

static pos_tiles tiles_of(const tt_gpu_program *p, int n)
{
    return (pos_tiles){tt_mla_mat_tiles(n, tt_mla_mat_causal(p)), n};
}
static int tile_first(pos_tiles pt, int i) { return tt_mla_mat_tile_first(pt.n, pt.tiles, i); }
static int tile_cols(pos_tiles pt, int i)
{
    return pt.tiles == 1 ? pt.n * pt.n : tile_first(pt, i + 1) * pt.n;
}

void tt_mla_mat_fwd(const tt_gpu_program *p, const tt_gemm *gm, cudaStream_t s, void *y,
                    const void *qkv, const float *g, const void *wo, const void *pos,
                    const float *u, const float *v, const tt_mla_mat_bufs *b, int batch, int n,
                    int r, int d)
{
    TT_ASSERT(gm->stream == s);
    const int r2 = pos ? 2 * r : r, nn = n * n;
    const size_t es = gm->act == CUDA_R_16BF ? 2 : 4;
    form_t(p, gm, s, b->t, qkv, g, pos, u, v, b, batch, n, r2);
    const pos_tiles pt = tiles_of(p, n);
    for (int i = 0; i < pt.tiles; i++) { /* Y' = T Wo^T, a position tile at a time */
        const size_t row = (size_t)tile_first(pt, i) * batch;
        const int rows = (tile_first(pt, i + 1) - tile_first(pt, i)) * batch;
        tt_gemm_fwd_ld(gm, (char *)b->yp + row * d * es, false, d, (const char *)b->t + row * nn * es,
                       nn, wo, nn, rows, tile_cols(pt, i), d, 0.f);
    }
    tt_mla_mat_perm(p, s, y, b->yp, batch, false);
}

void tt_mla_mat_bwd(const tt_gpu_program *p, const tt_gemm *gm, cudaStream_t s, void *dqkv,
                    float *dwo, float *dp, float *dg, float *du, float *dv, const void *dy,
                    const void *qkv, const float *g, const void *wo, const void *pos,
                    const float *u, const float *v, const tt_mla_mat_bufs *b, int batch, int n,
                    int r, int d)
{
    TT_ASSERT(gm->stream == s);
    const int r2 = pos ? 2 * r : r, nn = n * n;
    const size_t es = gm->act == CUDA_R_16BF ? 2 : 4;
    /* T again (the layers share its buffer) and dY in T's order; then, a position tile at a
     * time, dWo += dY^T T and dT = dY Wo over the columns the tile reaches (the mask zeroes the
     * rest of dT) */
    form_t(p, gm, s, b->t, qkv, g, pos, u, v, b, batch, n, r2);
    tt_mla_mat_perm(p, s, b->yp, dy, batch, true);
    const pos_tiles pt = tiles_of(p, n);
    for (int i = 0; i < pt.tiles; i++) {
        const size_t row = (size_t)tile_first(pt, i) * batch;
        const int rows = (tile_first(pt, i + 1) - tile_first(pt, i)) * batch, cols = tile_cols(pt, i);
        const char *dyt = (const char *)b->yp + row * d * es;
        tt_gemm_bwd_w_part(gm, dwo, nn, 1.f, dyt, d, (const char *)b->t + row * nn * es, nn, rows,
                           cols, d);
        tt_gemm_bwd_x_ld(gm, (char *)b->dt + row * nn * es, nn, dyt, d, wo, nn, rows, cols, d, 0.f);
    }
    tt_mla_mat_mask(p, s, b->dt, batch);
    /* G = dT KV [N, R2] and E = dT^T A [N^2, R2] a sequence, in fp32 (dT's rows of a sequence
     * batch N^2 apart) */
    const int ldt = batch * nn;
    tt_gemm_batched(gm, b->gm, true, r2, (long long)n * r2, b->dt, false, ldt, nn, b->kv, false, r2,
                    (long long)nn * r2, n, r2, nn, batch, 0.f);
    tt_gemm_batched(gm, b->em, true, r2, (long long)nn * r2, b->dt, true, ldt, nn, b->a, false, r2,
                    (long long)n * r2, nn, r2, n, batch, 0.f);
    tt_mla_mat_grads(p, s, dqkv, b->part, b->gm, b->em, qkv, g, pos, u, v, batch);
    tt_mla_mat_params(p, s, dp, dg, du, dv, b->part, batch);
}
