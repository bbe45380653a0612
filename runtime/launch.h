/* Launchers of the generated kernels: each checks that the shapes it is given are the ones its
 * kernel was specialized for, computes the grid as the plan's grid_rule says, and launches. */
#ifndef TT_LAUNCH_H
#define TT_LAUNCH_H

#include "gpu.h"

/* y, x: [rows, d] of the spec's storage type; mean, rstd: [rows]. */
void tt_layernorm_fwd(const tt_gpu_program *p, cudaStream_t s, void *y, float *mean, float *rstd,
                      const void *x, const float *gamma, const float *beta, int rows, int d);
/* The number of partial sums layernorm_bwd writes for rows: part needs 2 x that x d floats. */
int tt_layernorm_bwd_parts(const tt_gpu_program *p, int rows);
/* dx: [rows, d]; dgamma, dbeta: [d], written (not accumulated); part: scratch as above. */
void tt_layernorm_bwd(const tt_gpu_program *p, cudaStream_t s, void *dx, float *dgamma,
                      float *dbeta, float *part, const void *dy, const void *x, const float *mean,
                      const float *rstd, const float *gamma, int rows, int d);
/* Multi-linear attention forward (templates/mla.cu); p, u, v NULL unless position: key. */
void tt_mla_fwd(const tt_gpu_program *p, cudaStream_t s, void *y, const void *qkv, const float *g,
                const void *wo, const void *pos, const float *u, const float *v, int batch, int n,
                int r, int d);

/* Floats of scratch tt_mla_bwd needs for batch sequences. */
size_t tt_mla_bwd_part_floats(const tt_gpu_program *p, int batch);
/* Multi-linear attention backward: dqkv [B*N, 3R] written; dwo [D, N*N], dg, du, dv [R] added
 * into (fp32 gradients); dp [N, R] written (position: key; else NULL, as pos, u, v, du, dv). */
void tt_mla_bwd(const tt_gpu_program *p, cudaStream_t s, void *dqkv, float *dwo, float *dp,
                float *dg, float *du, float *dv, float *part, const void *dy, const void *qkv,
                const float *g, const void *wo, const void *pos, const float *u, const float *v,
                int batch, int n, int r, int d);

#endif
