/* The CPU reference of every operation of the models (MODEL.md sections 1-2), forward and
 * backward. It is the oracle the GPU kernels are checked against, so it is written for clarity
 * and exactness, not speed: fp32 storage, sums accumulated in double. Layouts are row-major and
 * weights are stored as PyTorch stores them (nn.Linear: [out, in]).
 * Convention: a backward writes the gradients of its inputs (dx = ...) and ADDS into the
 * gradients of parameters (dw += ...), so that shared parameters accumulate. Any gradient
 * pointer may be NULL when it is not wanted. */
#ifndef TT_CPU_OPS_H
#define TT_CPU_OPS_H

#include <stdbool.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>

#include "bf16.h"
#include "real.h"

/* sum a[i] b[i] in double, in a fixed order. Four independent chains keep the adds pipelined
 * (and in vector registers); inline, as the output layer calls it once per logit. */
static inline double cpu_dot(const tt_real *a, const tt_real *b, int n)
{
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        s0 += (double)a[i] * b[i];
        s1 += (double)a[i + 1] * b[i + 1];
        s2 += (double)a[i + 2] * b[i + 2];
        s3 += (double)a[i + 3] * b[i + 3];
    }
    for (; i < n; i++) s0 += (double)a[i] * b[i];
    return (s0 + s1) + (s2 + s3);
}

/* exp at the precision of tt_real: an fp32 logit carries no more digits than expf keeps. */
#define TT_EXP(x) (sizeof(tt_real) == sizeof(float) ? (double)expf((float)(x)) : exp(x))

/* y[rows, out] = x[rows, in] w[out, in]^T + b[out]   (b may be NULL) */
void cpu_linear_fwd(tt_real *y, const tt_real *x, const tt_real *w, const tt_real *b, int rows, int in,
                    int out);
void cpu_linear_bwd(tt_real *dx, tt_real *dw, tt_real *db, const tt_real *dy, const tt_real *x,
                    const tt_real *w, int rows, int in, int out);

/* LayerNorm over the last dimension d with eps 1e-5 (nn.LayerNorm's default). */
#define TT_LN_EPS 1e-5f
void cpu_layernorm_fwd(tt_real *y, tt_real *mean, tt_real *rstd, const tt_real *x, const tt_real *gamma,
                       const tt_real *beta, int rows, int d);
void cpu_layernorm_bwd(tt_real *dx, tt_real *dgamma, tt_real *dbeta, const tt_real *dy, const tt_real *x,
                       const tt_real *mean, const tt_real *rstd, const tt_real *gamma, int rows, int d);

/* x as a bf16 store keeps it (cpu/bf16.h: the kernels' rounding, to nearest even): the bf16
 * path's rounding, which cpu_model.c and cpu_txl.c repeat where asked; and n values rounded so in
 * place. */
static inline tt_real cpu_bf16(tt_real x)
{
    return (tt_real)tt_bf16_to_float(tt_bf16_from_float((float)x));
}
static inline void cpu_round_bf16(tt_real *x, size_t n)
{
    for (size_t i = 0; i < n; i++) x[i] = cpu_bf16(x[i]);
}

/* Mutation testing: an error planted in this reference on purpose, so that a test can show its
 * comparison would catch a GPU kernel that made the same error (the kernel would then compute
 * what the planted reference computes). Process-wide, CPU_PLANT_NONE unless a test sets it; the
 * runtime never does.
 *   MASK_AHEAD: the causal mask one position late, j, k <= i + 1 (a future token leaks); in
 *     cpu_txl_probs, j <= m + i + 1;
 *   TXL_SHIFT: cpu_txl_probs' relative shift one column late, BD's column n - i + j for key j
 *     (0 past the row);
 *   KEY_STRICT: k < i instead of k <= i (the diagonal value dropped);
 *   DROPOUT_BWD_UNSCALED: cpu_dropout_bwd without its 1 / (1 - p);
 *   DROPOUT_FWD_UNSCALED: cpu_dropout_fwd without it. */
typedef enum {
    CPU_PLANT_NONE,
    CPU_PLANT_MASK_AHEAD,
    CPU_PLANT_KEY_STRICT,
    CPU_PLANT_DROPOUT_BWD_UNSCALED,
    CPU_PLANT_DROPOUT_FWD_UNSCALED,
    CPU_PLANT_TXL_SHIFT,
} cpu_plant_kind;
void cpu_plant(cpu_plant_kind k);
cpu_plant_kind cpu_planted(void);

/* Inverted dropout with the counter-based RNG (rng.h): element i is kept when
 * tt_uniform(seed, stream, i) >= p, and then scaled by 1/(1-p). mask (n bytes) records the
 * decision for the backward; p == 0 copies and sets the mask to 1. In place allowed. */
void cpu_dropout_fwd(tt_real *y, uint8_t *mask, const tt_real *x, long n, tt_real p, uint64_t seed,
                     uint64_t stream);
/* The same for the n elements from element first of the stream on (a rank's share of a batch). */
void cpu_dropout_fwd_at(tt_real *y, uint8_t *mask, const tt_real *x, long n, tt_real p,
                        uint64_t seed, uint64_t stream, uint64_t first);
void cpu_dropout_bwd(tt_real *dx, const tt_real *dy, const uint8_t *mask, long n, tt_real p);

void cpu_relu_fwd(tt_real *y, const tt_real *x, long n);
void cpu_relu_bwd(tt_real *dx, const tt_real *dy, const tt_real *y, long n); /* y: the ReLU output */

/* The core g = (1/h) sum_c softmax(theta_c) (MODEL.md section 1); theta [h, R]. */
void cpu_core_fwd(tt_real *g, const tt_real *theta, int h, int r);
void cpu_core_bwd(tt_real *dtheta, const tt_real *dg, const tt_real *theta, int h, int r);

/* The word embedding of one table (div_val 1, MODEL.md section 2): y = e sqrt(d) for the row e
 * of E of a token; its backward adds dy sqrt(d) into that row's gradient de. */
void cpu_embedding_row(tt_real *y, const tt_real *e, int d);
void cpu_embedding_row_bwd(tt_real *de, const tt_real *dy, int d);

/* Sinusoid of MODEL.md: pe(p) = [sin(p f_0..f_{D/2-1}), cos(p f_0..)], f_t = 10000^(-2t/D). */
void cpu_sinusoid(tt_real *pe, const tt_real *positions, int n, int d);

/* Multi-linear attention (MODEL.md section 1), one call for a batch of sequences.
 *   qkv [B*N, 3R] (Q | K | V), g [R], wo [D, N*N], y [B*N, D]
 *   position key: p [N, R] (P[j] = Wr pe(N-1-j)), u, v [R]; else p, u, v are NULL.
 * T[i,j,k] = sum_r g_r ((Q+u)[i,r] K[j,r] + (Q+v)[i,r] P[j,r]) V[k,r] * m(i,j,k),
 * m = [j <= i and k <= i] when causal; Y[i,:] = sum_{j,k} T[i,j,k] Wo[:, j*N+k]. */
typedef struct {
    int batch, n, r, d;
    bool causal;
} cpu_mla_shape;
void cpu_mla_fwd(tt_real *y, const tt_real *qkv, const tt_real *g, const tt_real *wo, const tt_real *p,
                 const tt_real *u, const tt_real *v, cpu_mla_shape s);
/* Row i of one sequence's y (y [D]) from its qkv rows seq [.., 3R] (rows 0 .. i are read when
 * causal, all N when not) and wt, Wo transposed ([N*N, D]: cpu_mla_wo_t, which the caller frees):
 * what cpu_mla_fwd computes for that row, in the same order. scratch: cpu_mla_row_scratch(s)
 * doubles of the caller's. */
void cpu_mla_fwd_row(tt_real *y, const tt_real *seq, int i, const tt_real *g, const tt_real *wt,
                     const tt_real *p, const tt_real *u, const tt_real *v, cpu_mla_shape s,
                     double *scratch);
tt_real *cpu_mla_wo_t(const tt_real *wo, int n, int d);
size_t cpu_mla_row_scratch(cpu_mla_shape s);
/* dqkv is written; dg, dwo, dp, du, dv are added into. */
void cpu_mla_bwd(tt_real *dqkv, tt_real *dg, tt_real *dwo, tt_real *dp, tt_real *du, tt_real *dv,
                 const tt_real *dy, const tt_real *qkv, const tt_real *g, const tt_real *wo,
                 const tt_real *p, const tt_real *u, const tt_real *v, cpu_mla_shape s);

/* Cross-entropy of logits [rows, n] against targets, with label smoothing eps:
 *   loss_t = (1 - eps) * (-log p[target]) + eps * mean_v(-log p[v]).
 * Returns the sum over rows of loss_t; *nll (may be NULL) gets the sum of -log p[target].
 * dlogits (may be NULL) gets d(sum loss_t * scale)/dlogits. */
double cpu_cross_entropy(tt_real *dlogits, double *nll, const tt_real *logits, const int32_t *targets,
                         int rows, int n, tt_real eps, tt_real scale);

#endif
