/* Multi-linear attention with T materialized (see mla_mat.h). */
#include "mla_mat.h"

#include <stdint.h>

#include "util.h"

static size_t align256(size_t x) { return (x + 255) / 256 * 256; }

/* The buffers in carve's order. */
enum { BUF_A, BUF_KV, BUF_T, BUF_DT, BUF_ROWS, BUF_GM, BUF_EM, BUF_PART, BUFS };

/* buffers [from, to) of the eight below; lean: only T, dT and the rows (mla_mat_t forms T and
 * mla_bwd_q reads dT: no factors, no G, E or parts), the others NULL */
static size_t carve(tt_mla_mat_bufs *b, void *base, int batch, int n, int r, int d, bool key,
                    size_t es, int from, int to, bool lean)
{
    const size_t bt = (size_t)batch, nn = (size_t)n * n, r2 = (size_t)r * (key ? 2 : 1);
    const size_t bytes[BUFS] = {bt * n * r2 * es, bt * nn * r2 * es, bt * n * nn * es,
                             bt * n * nn * es, bt * n * (size_t)d * es, bt * n * r2 * 4,
                             bt * nn * r2 * 4, bt * n * 4 * (size_t)r * 4};
    void **at[BUFS] = {&b->a, &b->kv, &b->t, &b->dt, &b->rows, (void **)&b->gm, (void **)&b->em,
                    (void **)&b->part};
    size_t off = 0;
    for (int i = from; i < to; i++) {
        if (lean && i != BUF_T && i != BUF_DT && i != BUF_ROWS) {
            if (base) *at[i] = NULL;
            continue;
        }
        if (base) *at[i] = (char *)base + off;
        off += align256(bytes[i]);
    }
    return off;
}

size_t tt_mla_mat_carve(tt_mla_mat_bufs *b, void *base, int batch, int n, int r, int d, bool key,
                        size_t es)
{
    return carve(b, base, batch, n, r, d, key, es, 0, BUFS, false);
}

size_t tt_mla_mat_carve_part(tt_mla_mat_bufs *b, void *base, int batch, int n, int r, int d,
                             bool key, size_t es, bool t_part, bool lean)
{
    return t_part ? carve(b, base, batch, n, r, d, key, es, BUF_A, BUF_DT, lean) /* a, kv, t */
                  : carve(b, base, batch, n, r, d, key, es, BUF_DT, BUFS, lean); /* shared */
}

/* T's (and dT's) leading dimension and the distance between its sequences: rows in the
 * sequences' order (b N + i), or in the positions' (i batch + b) under tiles */
static int t_ld(int batch, int n, int tiles) { return tiles > 1 ? batch * n * n : n * n; }
static long long t_seq(int n, int tiles) { return tiles > 1 ? (long long)n * n : (long long)n * n * n; }

/* T = A KV^T, masked, into t: by mla_mat_t where the plan has it (A and KV left unformed), else a
 * product per sequence of mla_mat_prep's A and KV, then the mask. */
static void form_t(const tt_gpu_program *p, const tt_gemm *gm, cudaStream_t s, void *t,
                   const void *qkv, const float *g, const void *pos, const float *u,
                   const float *v, const tt_mla_mat_bufs *b, int batch, int n, int r2, int tiles)
{
    if (tt_mla_mat_forms_t(p)) {
        tt_mla_mat_t(p, s, t, qkv, g, pos, u, v, batch, tiles > 1);
        return;
    }
    const long long nn = (long long)n * n;
    tt_mla_mat_prep(p, s, b->a, b->kv, qkv, g, pos, u, v, batch);
    tt_gemm_batched(gm, t, false, t_ld(batch, n, tiles), t_seq(n, tiles), b->a, false, r2,
                    (long long)n * r2, b->kv, true, r2, nn * r2, n, (int)nn, r2, batch, 0.f);
    tt_mla_mat_mask(p, s, t, batch, tiles > 1);
}

/* Under the causal mask, row i of T (and of dT) is zero from column (i + 1) N on: tile [i0, i1)
 * of positions, rows i0 batch to i1 batch in the positions' order, needs the first i1 N columns
 * of T and Wo only. Its rows' and columns' offsets in elements. */
typedef struct {
    int rows, cols;
    size_t t_off, y_off;
} mat_tile;

static mat_tile tile_of(int t, int tiles, int batch, int n, int d)
{
    const int i0 = t ? (int)tt_mat_tile_end(t - 1, tiles, n) : 0;
    const int i1 = (int)tt_mat_tile_end(t, tiles, n);
    return (mat_tile){(i1 - i0) * batch, i1 * n, (size_t)i0 * batch * n * n,
                      (size_t)i0 * batch * d};
}

static void *at(const void *base, size_t elems, size_t es) { return (char *)base + elems * es; }

/* The side stream, where there is one and TT_MAT_SIDE is not 0 (p->mat_side) */
static const tt_mla_mat_side *side_of(const tt_gpu_program *p, const tt_mla_mat_side *side)
{
    return side && side->side && p->mat_side ? side : NULL;
}

void tt_mla_mat_fwd(const tt_gpu_program *p, const tt_gemm *gm, cudaStream_t s, void *y,
                    const void *qkv, const float *g, const void *wo, const void *pos,
                    const float *u, const float *v, const tt_mla_mat_bufs *b, int batch, int n,
                    int r, int d, const tt_mla_mat_side *side)
{
    TT_ASSERT(gm->stream == s);
    const int r2 = pos ? 2 * r : r, nn = n * n, tiles = tt_mla_mat_tiles(p);
    form_t(p, gm, s, b->t, qkv, g, pos, u, v, b, batch, n, r2, tiles);
    if (tiles == 1) {
        tt_gemm_fwd(gm, y, false, b->t, wo, batch * n, nn, d, 0.f); /* Y = T Wo^T */
        return;
    }
    /* Y's rows of each tile, in the positions' order: the last tile (every column) on s, the
     * others beside it on the side stream (at 3 tiles of equal rows, the same FLOPs) */
    const size_t es = gm->act == CUDA_R_16BF ? 2 : 4;
    side = side_of(p, side);
    if (side) tt_gpu_fork(side->side, s);
    for (int t = 0; t < tiles; t++) {
        const mat_tile c = tile_of(t, tiles, batch, n, d);
        tt_gemm_fwd_ld(side && t < tiles - 1 ? side->gemm : gm, at(b->rows, c.y_off, es), false, d,
                       at(b->t, c.t_off, es), nn, wo, nn, c.rows, c.cols, d, 0.f);
    }
    if (side) tt_gpu_join(side->side, s);
    tt_mla_mat_rows(p, s, y, b->rows, batch, false);
}

void tt_mla_mat_bwd(const tt_gpu_program *p, const tt_gemm *gm, cudaStream_t s, void *dqkv,
                    float *dwo, float *dp, float *dg, float *du, float *dv, const void *dy,
                    const void *qkv, const float *g, const void *wo, const void *pos,
                    const float *u, const float *v, const tt_mla_mat_bufs *b, float *part, bool kept,
                    int batch, int n, int r, int d, const tt_mla_mat_side *side)
{
    TT_ASSERT(gm->stream == s);
    const int r2 = pos ? 2 * r : r, nn = n * n, rows = batch * n, tiles = tt_mla_mat_tiles(p);
    const size_t es = gm->act == CUDA_R_16BF ? 2 : 4;
    /* T (the forward's, or again where the layers share its buffer), then dWo = dY^T T and
     * dT = dY Wo, masked */
    if (!kept) form_t(p, gm, s, b->t, qkv, g, pos, u, v, b, batch, n, r2, tiles);
    side = tiles > 1 ? side_of(p, side) : NULL;
    if (tiles == 1) {
        tt_gemm_bwd_w_ld(gm, dwo, 0.f, dy, d, b->t, nn, rows, nn, d); /* written */
        tt_gemm_bwd_x(gm, b->dt, dy, wo, rows, nn, d, 0.f);
    } else {
        /* dY in the positions' order. dWo written (on the side stream, beside the rest of this
         * backward, where there is one): a tile's key positions j at a time, dWo's columns j N
         * to j N + N - 1, over the rows from the tile's first position on (the earlier ones see
         * none of those j: T is zero there), or in one product over every row (TT_MAT_DWO_TILES
         * =0); dT a tile at a time, each tile's columns past its own left to the mask, which
         * zeroes them */
        tt_mla_mat_rows(p, s, b->rows, dy, batch, true);
        if (side) tt_gpu_fork(side->side, s);
        const tt_gemm *gw = side ? side->gemm : gm;
        if (p->mat_dwo_tiles) {
            for (int t = 0; t < tiles; t++) {
                const mat_tile c = tile_of(t, tiles, batch, n, d);
                const int j0 = c.cols / n - c.rows / batch; /* the tile's first position */
                tt_gemm_bwd_w_ldw(gw, dwo + (size_t)j0 * n, nn, 0.f, at(b->rows, c.y_off, es),
                                  d, at(b->t, c.t_off + (size_t)j0 * n, es), nn,
                                  rows - j0 * batch, c.cols - j0 * n, d);
            }
        } else {
            tt_gemm_bwd_w_ld(gw, dwo, 0.f, b->rows, d, b->t, nn, rows, nn, d);
        }
        for (int t = 0; t < tiles; t++) {
            const mat_tile c = tile_of(t, tiles, batch, n, d);
            tt_gemm_bwd_x_ld(gm, at(b->dt, c.t_off, es), nn, at(b->rows, c.y_off, es), d, wo, nn,
                             c.rows, c.cols, d, 0.f);
        }
    }
    if (tt_mla_mat_dt_mem(p)) { /* dT read as it is by mla_bwd_q (through part), masked there */
        TT_ASSERT(!pos && part);
        tt_mla_mat_bwd_dt(p, s, dqkv, dg, part, b->dt, qkv, g, batch, tiles > 1);
        if (side) tt_gpu_join(side->side, s); /* dWo, before the next layer's dY takes its rows */
        return;
    }
    tt_mla_mat_mask(p, s, b->dt, batch, tiles > 1);
    /* G = dT KV [N, R2] and E = dT^T A [N^2, R2] a sequence, in fp32; A and KV formed here where
     * mla_mat_t formed T */
    if (tt_mla_mat_forms_t(p)) tt_mla_mat_prep(p, s, b->a, b->kv, qkv, g, pos, u, v, batch);
    const int ld = t_ld(batch, n, tiles);
    const long long seq = t_seq(n, tiles);
    tt_gemm_batched(gm, b->gm, true, r2, (long long)n * r2, b->dt, false, ld, seq, b->kv, false,
                    r2, (long long)nn * r2, n, r2, nn, batch, 0.f);
    tt_gemm_batched(gm, b->em, true, r2, (long long)nn * r2, b->dt, true, ld, seq, b->a, false,
                    r2, (long long)n * r2, nn, r2, n, batch, 0.f);
    tt_mla_mat_grads(p, s, dqkv, b->part, b->gm, b->em, qkv, g, pos, u, v, batch);
    tt_mla_mat_params(p, s, dp, dg, du, dv, b->part, batch);
    if (side) tt_gpu_join(side->side, s); /* dWo, before the next layer's dY takes its rows */
}
