/* The CPU reference of Transformer-XL's relative-position attention (MODEL.md section 3,
 * kimiyoung/transformer-xl's RelPartialLearnableMultiHeadAttn, attn_type 0), forward and
 * backward, for a batch of independent sequences, each with its own memory.
 * Same conventions as cpu_ops.h: row-major, weights as PyTorch stores them ([out, in]), sums in
 * double; a backward WRITES the input gradient dh and ADDS into the parameter gradients. */
#ifndef TT_CPU_TXL_H
#define TT_CPU_TXL_H

#include <stdbool.h>
#include <stdint.h>

#include "real.h"

/* pe [klen, d]: the sinusoids (cpu_sinusoid) of positions klen-1 down to 0, each clamped to
 * clamp_len when clamp_len > 0 (kimiyoung's pos_seq.clamp_(max=clamp_len)). The LM computes it
 * once per segment for all layers, as kimiyoung does, and applies its dropout (self.drop) there. */
void cpu_txl_pos_emb(tt_real *pe, int klen, int d, int clamp_len);

/* One layer's attention core; klen = m + n keys: the m memory rows, then the n current rows.
 *   h [batch*n, d]      this segment's layer input, sequence b at rows b*n ..
 *   mem [batch*m, d]    the layer's memory (the previous segment's inputs; NULL when m == 0).
 *                       Detached: no gradient is computed for it.
 *   pe [klen, d]        cpu_txl_pos_emb (possibly after dropout)
 *   wqkv [3*H*dh, d]    qkv_net.weight, no bias; rows [q | k | v], each head-major (head, dh)
 *   wr [H*dh, d]        r_net.weight, no bias
 *   wo [d, H*dh]        o_net.weight, no bias
 *   u, v [H, dh]        r_w_bias, r_r_bias
 *   out [batch*n, d]    the o_net output, before the residual and the LayerNorm
 * Per sequence and head, with x = concat(mem, h), q = (x Wq)[m..], k = x Wk, v' = x Wv,
 * r = pe Wr^T (row p holds position klen-1-p):
 *   S[i,j] = ((q_i + u) . k_j + (q_i + v) . r_{n-1-i+j}) / sqrt(dh)   for j <= i + m
 * Query i stands at position m+i, so key j is at distance (m+i)-j and r_{klen-1-((m+i)-j)} =
 * r_{n-1-i+j} is its embedding: on the visible entries this is exactly what kimiyoung's
 * _rel_shift((q + v) r^T) gives (it reads column j + qlen-1-i of row i); on the masked ones
 * _rel_shift leaves values the mask discards. P = softmax over the visible j (0 elsewhere);
 * dropatt: P' = cpu_dropout_fwd of the flat P [batch, H, n, klen] with (seed, stream), i.e.
 * element ((b*H + head)*n + i)*klen + j is kept iff tt_uniform(seed, stream, that index) >= p;
 * a_i = sum_j P'[i,j] v'_j; out = a Wo^T. */
typedef struct {
    int batch, n, m, d, heads, dhead;
    tt_real dropatt;       /* dropout on P (0: none) */
    uint64_t seed, stream; /* its RNG: stream = tt_dropout_stream(step, site), like every dropout */
    uint64_t first;        /* P's element 0 in the stream (a rank's share of a batch; else 0) */
} cpu_txl_shape;

typedef struct {
    const tt_real *wqkv, *wr, *wo, *u, *v;
} cpu_txl_weights;

/* The attention probabilities between Transformer-XL's products, for rows of queries of k = m + n
 * keys each (m of memory, then n of the segment), as templates/txl_softmax.cu computes them: row r
 * is query i = r % n, and p[j] = softmax over the visible j <= m + i of (ac[j] + bd[n - 1 - i + j])
 * * scale (BD's relative shift, MODEL.md section 3), 0 past them. */
void cpu_txl_probs(tt_real *prob, const tt_real *ac, const tt_real *bd, int rows, int n, int m,
                   tt_real scale);
/* Its backward from d prob: ds = prob (dprob - sum_j prob dprob) scale, into dac[j] and
 * dbd[n - 1 - i + j]; everything else of both rows 0. */
void cpu_txl_probs_bwd(tt_real *dac, tt_real *dbd, const tt_real *prob, const tt_real *dprob,
                       int rows, int n, int m, tt_real scale);

/* The parameter gradients, added into; any may be NULL. */
typedef struct {
    tt_real *wqkv, *wr, *wo, *u, *v;
    /* NULL, or [2]: added into, the sums of squares of u's and v's terms, the rows d(q+u) and
     * d(q+v) of each (sequence, head, query) whose sums over rows are u's and v's gradients
     * (their root-sum-square is what a rounding error of those sums scales with) */
    double *uv_terms;
} cpu_txl_grads;

void cpu_txl_attn_fwd(tt_real *out, const tt_real *h, const tt_real *mem, const tt_real *pe,
                      cpu_txl_weights w, cpu_txl_shape s);
/* dh [batch*n, d] is written (may be NULL); g's tensors are added into. The forward is recomputed
 * from the inputs (the reference keeps no activations), with the same dropout mask. */
void cpu_txl_attn_bwd(tt_real *dh, cpu_txl_grads g, const tt_real *dout, const tt_real *h,
                      const tt_real *mem, const tt_real *pe, cpu_txl_weights w, cpu_txl_shape s);

/* How the _as entry points round: not at all (the reference's arithmetic), as the GPU's bf16 path
 * between cuBLAS's products (templates/txl_softmax.cu), or as its fused bf16 kernels
 * (templates/txl_flash.cu, where tt_txl_fuses_at). */
typedef enum { CPU_TXL_EXACT, CPU_TXL_BF16, CPU_TXL_BF16_FUSED } cpu_txl_round;

/* The same two, with bf16 set as the GPU's bf16 path computes them (tt_cpu_lm_round_as): each
 * value it stores in bf16 rounded to it where it stores it (q, k, v, r, q + u, q + v, P, P' and
 * P' V, the output; d(P' V), dV, dS, d(q + u), d(q + v), dq, dK, dR), the scores and dP' fp32.
 * The caller passes the weights' bf16 copy (u and v stay fp32, as the GPU reads them) and h,
 * mem, pe and dout as it stores them; dh is dq Wqkv before the caller adds and stores it. */
void cpu_txl_attn_fwd_as(tt_real *out, const tt_real *h, const tt_real *mem, const tt_real *pe,
                         cpu_txl_weights w, cpu_txl_shape s, cpu_txl_round rd);
void cpu_txl_attn_bwd_as(tt_real *dh, cpu_txl_grads g, const tt_real *dout, const tt_real *h,
                         const tt_real *mem, const tt_real *pe, cpu_txl_weights w, cpu_txl_shape s,
                         cpu_txl_round rd);

#endif
