/* Multi-linear attention with T materialized (templates/mla_mat.cu says what and why): its
 * kernels between cuBLAS's products, forward and backward, as the plan chooses for shapes where
 * the products with Wo dominate (gen/plan.c's cost model, or kernels.attention). The same
 * arguments as tt_mla_fwd / tt_mla_bwd (launch.h), with the products' tt_gemm and buffers of
 * their own instead of the fused kernels' scratch. */
#ifndef TT_MLA_MAT_H
#define TT_MLA_MAT_H

#include <stdbool.h>
#include <stddef.h>

#include "gemm.h"
#include "launch.h"

typedef struct {
    /* T and its factors: the forward writes them, the backward reads them (tt_mla_mat_bwd's
     * kept) or forms them again; a layer's own, or one set the layers share */
    void *a;     /* [batch, N, R2] g (Q+u) | g (Q+v), the storage type */
    void *kv;    /* [batch, N^2, R2] K_j V_k | P_j V_k */
    void *t;     /* [batch N, N^2] T */
    /* the layers share these: the backward's, and rows the forward's tiles use too */
    void *dt;    /* [batch N, N^2] dT */
    void *rows;  /* [batch N, D] Y or dY in the positions' order (tt_mla_mat_tiles > 1) */
    float *gm;   /* [batch, N, R2] dT KV */
    float *em;   /* [batch, N^2, R2] dT^T A */
    float *part; /* [batch, N, 4R] the parts of dP, dg, du, dv */
} tt_mla_mat_bufs;

/* Bytes of those buffers for batch sequences (es: bytes of the storage type), and their places
 * in base (256-byte aligned each; base NULL: only the count). d: the model's features where the
 * products with Wo run in tiles (tt_mla_mat_tiles > 1), which need rows; 0 leaves rows empty. */
size_t tt_mla_mat_carve(tt_mla_mat_bufs *b, void *base, int batch, int n, int r, int d, bool key,
                        size_t es);
/* The same for one part (b's other members untouched): t_part, a, kv and t (a layer's own T);
 * else the shared dt, rows, gm, em and part. lean (where mla_mat_t forms T and mla_bwd_q reads
 * dT: tt_mla_mat_forms_t and tt_mla_mat_dt_mem): t, dt and rows only, the others NULL. */
size_t tt_mla_mat_carve_part(tt_mla_mat_bufs *b, void *base, int batch, int n, int r, int d,
                             bool key, size_t es, bool t_part, bool lean);

/* A stream beside the main one for the tiled products (tt_mla_mat_tiles > 1), with its own
 * products (gemm: on side's stream): the forward's tiles but the last run there, and the
 * backward's dWo beside the rest of the backward; NULL, or TT_MAT_SIDE=0: all on the main
 * stream. The same bits either way. */
typedef struct {
    const tt_gpu_side *side;
    const tt_gemm *gemm;
} tt_mla_mat_side;

void tt_mla_mat_fwd(const tt_gpu_program *p, const tt_gemm *gm, cudaStream_t s, void *y,
                    const void *qkv, const float *g, const void *wo, const void *pos,
                    const float *u, const float *v, const tt_mla_mat_bufs *b, int batch, int n,
                    int r, int d, const tt_mla_mat_side *side);
/* dqkv, dwo written, dp written (position: key), dg, du, dv added into. kept: b's a, kv and t
 * hold what this layer's forward left there (from the same qkv, g, pos, u, v); else they are
 * formed again. part: mla_bwd_q's partials (tt_mla_scratch_floats) where it reads dT
 * (tt_mla_mat_dt_mem); else not touched. */
void tt_mla_mat_bwd(const tt_gpu_program *p, const tt_gemm *gm, cudaStream_t s, void *dqkv,
                    float *dwo, float *dp, float *dg, float *du, float *dv, const void *dy,
                    const void *qkv, const float *g, const void *wo, const void *pos,
                    const float *u, const float *v, const tt_mla_mat_bufs *b, float *part, bool kept,
                    int batch, int n, int r, int d, const tt_mla_mat_side *side);

#endif
