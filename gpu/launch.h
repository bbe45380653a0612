/* Launchers of the generated kernels: each checks that the shapes it is given are the ones its
 * kernel was specialized for, computes the grid as the plan's grid_rule says, and launches. */
#ifndef TT_LAUNCH_H
#define TT_LAUNCH_H

#include <stdbool.h>
#include <stdint.h>

#include "copy_rows.cuh"
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

/* A dropout site of one training step: the mask is drawn from (seed, the site's stream of step)
 * in the kernel that applies it and drawn again in the backward (nothing stored). p is 0 in
 * evaluation. Sites are numbered as cpu_model.c numbers them. The step is read from device
 * memory (always a valid pointer), so that a step captured in a CUDA graph draws each replay's
 * masks. */
typedef struct {
    float p;
    uint64_t seed;
    const unsigned long long *step;
    uint32_t site;
    /* where the batch's element 0 lies in the site's stream: 0 on one GPU; on a rank whose rows
     * are sequences b0 .. of the step's batch, b0 times the site's elements a sequence, so that
     * every element draws what it would draw on one GPU */
    unsigned long long first;
} tt_dropout;

/* s = x + dropout(y), out = LayerNorm(s) (the residual variant of templates/layernorm.cu): out,
 * sum (= s, kept for the backward), x, y: [rows, d] of the storage type, rows ld >= d apart (the
 * columns from d on neither read nor written); mean, rstd: [rows]. */
void tt_residual_ln_fwd(const tt_gpu_program *p, cudaStream_t st, void *out, void *sum, float *mean,
                        float *rstd, const void *x, const void *y, const float *gamma,
                        const float *beta, int rows, int d, int ld, tt_dropout drop);
/* Where the plan has it (tt_mla_ln_sums: the tensor-core attention with several parts of key
 * positions), the attention's residual LayerNorm reads y as the sum of mla_fwd's parts (ypart,
 * [JP][batch][N][D] fp32, templates/mla_geom.cuh), rounded once as mla_fwd_sum would store it;
 * tt_mla_fwd_parts runs the attention without that sum. */
bool tt_mla_ln_sums(const tt_gpu_program *p);
void tt_mla_residual_ln_fwd(const tt_gpu_program *p, cudaStream_t st, void *out, void *sum,
                            float *mean, float *rstd, const void *x, const float *ypart, int batch,
                            const float *gamma, const float *beta, int rows, int d, int ld,
                            tt_dropout drop);
void tt_mla_fwd_parts(const tt_gpu_program *p, cudaStream_t s, const void *qkv, const float *g,
                      const void *wo, const void *pos, const float *u, const float *v,
                      float *scratch, int batch, int n, int r, int d);
/* Its backward from dout: dx = ds (the residual path) and dy = dropout_bwd(ds), both [rows, d]
 * ld apart; dgamma, dbeta [d] written, and dbias [d] = the sum of dy's rows in fp32, before dy
 * is rounded to the storage type (the bias gradient of the product whose output y is) unless
 * NULL; part: 3 x tt_layernorm_bwd_parts x d floats. */
void tt_residual_ln_bwd(const tt_gpu_program *p, cudaStream_t st, void *dx, void *dy, float *dgamma,
                        float *dbeta, float *dbias, float *part, const void *dout, const void *sum,
                        const float *mean, const float *rstd, const float *gamma, int rows, int d,
                        int ld, tt_dropout drop);

/* The same without the column sums: the kernel alone, its partials (3 x the returned count x d
 * floats) left in part for tt_colsums, as the trainer sums every layer's in one launch. */
int tt_residual_ln_bwd_parts(const tt_gpu_program *p, cudaStream_t st, void *dx, void *dy,
                             float *part, const void *dout, const void *sum, const float *mean,
                             const float *rstd, const float *gamma, int rows, int d, int ld,
                             tt_dropout drop);

/* Column sums of parameter-gradient partials (templates/colsum.cu) for `jobs` alike at a fixed
 * stride: job j's partials (sets x parts x width floats) at in + j in_stride, its set s summed
 * into out[s] + j out_stride (written, not added), for s < sets. op: "colsum" (LayerNorm's,
 * width d_model, up to 3 sets) or "bias_colsum" (the FFN's first bias, width d_inner, 1 set). */
typedef struct {
    const float *in;
    long long in_stride;
    float *out[3];
    long long out_stride;
    int jobs, parts, sets;
} tt_colsum_jobs;
void tt_colsums(const tt_gpu_program *p, cudaStream_t st, const char *op, const tt_colsum_jobs *j,
                int width);

/* Every kernel below that takes d and ld: rows of d values ld apart (a multiple of the kernel's
 * vector, so that every row is as aligned as the first), the columns from d on neither read nor
 * written; dropout draws are numbered row * d + column whatever ld is.
 * The embedding of one table E [vocab, d] fp32 (div_val 1; templates/embedding.cu):
 * x0 [rows, d] (storage type) = dropout(E[tokens] * sqrt(d)). A token outside the vocabulary
 * gives a row of NaN. */
void tt_embedding_fwd(const tt_gpu_program *p, cudaStream_t st, void *x0, const float *emb,
                      const int32_t *tokens, int rows, int d, int ld, int vocab, tt_dropout drop);
/* The uint64 keys of scratch tt_embedding_bwd needs; rows may not exceed it. */
size_t tt_embedding_keys(const tt_gpu_program *p);
/* The floats of scratch (part) tt_embedding_bwd and tt_adaptive_emb_bwd need: a sum of a
 * table's width for each sorted key. */
size_t tt_embedding_part_floats(const tt_gpu_program *p);
/* dE [vocab, d] += dropout_bwd(dx0[r]) * sqrt(d) for each row r, into the row of its token, each
 * token's rows added in increasing order, in sums of a span of sorted keys at a time, and those
 * in order (deterministic, no atomics); keys: tt_embedding_sort's of the rows' tokens (queued
 * before, on this stream or one it waits for); part: tt_embedding_part_floats of scratch. */
void tt_embedding_bwd(const tt_gpu_program *p, cudaStream_t st, float *demb,
                      const uint64_t *keys, float *part, const void *dx0, int rows, int d, int ld,
                      int vocab, tt_dropout drop);
/* keys [tt_embedding_keys] = the pairs (token, row) of tokens [rows] in ascending order, then
 * all-ones: the order tt_embedding_bwd and tt_adaptive_emb_bwd add rows in. */
void tt_embedding_sort(const tt_gpu_program *p, cudaStream_t st, uint64_t *keys,
                       const int32_t *tokens, int rows);

/* The adaptive embedding (div_val > 1; templates/embedding.cu), one cluster at a time: idx
 * [count] lists the rows whose token is in the cluster [lo, lo + vc), ascending, then -1 (padding).
 * e [count, dim] (storage type) = E_c [vc, dim] (fp32) rows of those tokens; a zero row for padding,
 * NaN for a token outside the cluster. */
void tt_adaptive_emb_gather(const tt_gpu_program *p, cudaStream_t st, void *e, const float *emb,
                            const int32_t *tokens, const int32_t *idx, int count, long lo, long vc,
                            int dim);
/* x0[idx[i]] = dropout(y[i] * sqrt(d)) for the listed rows; y [count, d] fp32 (e P_c^T). */
void tt_adaptive_emb_scatter(const tt_gpu_program *p, cudaStream_t st, void *x0, const float *y,
                             const int32_t *idx, int count, int d, int ld, tt_dropout drop);
/* dy [count, d] (storage type, packed) = dropout_bwd(dx0[idx[i]]) * sqrt(d) (dx0's rows ld
 * apart); zero rows for padding. */
void tt_adaptive_emb_grad(const tt_gpu_program *p, cudaStream_t st, void *dy, const void *dx0,
                          const int32_t *idx, int count, int d, int ld, tt_dropout drop);
/* dE_c [vc, dim] += de[pos[r]] (storage type) for each of the rows r whose token t is in
 * [lo, lo + vc), into row t - lo, each token's rows in increasing order (as tt_embedding_bwd);
 * keys: tt_embedding_sort's of all rows' tokens; pos [rows]: row r's place in its cluster's
 * list; part: tt_embedding_part_floats of scratch. */
void tt_adaptive_emb_bwd(const tt_gpu_program *p, cudaStream_t st, float *demb,
                         const uint64_t *keys, float *part, const void *de, const int32_t *pos,
                         int rows, long lo, long vc, int dim);

/* The adaptive softmax's tail clusters (templates/adaptive.cu): idx [count] lists the rows whose
 * target is in the cluster, ascending, then -1 (padding). xc [count, d] = x[idx[i]], zero rows for
 * padding (storage type). */
void tt_adaptive_gather(const tt_gpu_program *p, cudaStream_t st, void *xc, const void *x,
                        const int32_t *idx, int count, int d, int ld);
/* dx[idx[i]] += dxc[i] for the listed rows (a row in at most one list). */
void tt_adaptive_scatter_add(const tt_gpu_program *p, cudaStream_t st, void *dx, const void *dxc,
                             const int32_t *idx, int count, int d, int ld);

/* The adaptive head's nc cluster columns (templates/cluster_cols.cu), where the plan has them:
 *   y [rows, nc] (rows ldy apart) = x [rows, d] (ldx) Wc^T + bc: Wc [nc, d] rows ldw apart, bc
 *     [nc], all of the storage type;
 *   dx [rows, d] (ldx) += dy Wc, and dWc [nc, d] += dy^T x, dbc [nc] += dy's column sums (fp32),
 *     through part (tt_cluster_cols_part_floats floats). */
bool tt_cluster_cols(const tt_gpu_program *p);
void tt_cluster_cols_fwd(const tt_gpu_program *p, cudaStream_t st, void *y, int ldy, const void *x,
                         int ldx, const void *w, int ldw, const void *b, int rows, int nc, int d);
size_t tt_cluster_cols_part_floats(const tt_gpu_program *p);
void tt_cluster_cols_bwd(const tt_gpu_program *p, cudaStream_t st, void *dx, int ldx, float *dw,
                         float *db, float *part, const void *dy, int ldy, const void *x,
                         const void *w, int ldw, int rows, int nc, int d);

/* hd = dropout(relu(z + b1)) (templates/ffn_act.cu): hd, z [rows, f] of the storage type,
 * ld = tt_row_pitch(f) elements from one row to the next (hd may be z); b1 [f]. The ld - f
 * columns of padding are neither read nor written. */
void tt_ffn_act_fwd(const tt_gpu_program *p, cudaStream_t st, void *hd, const void *z,
                    const float *b1, int rows, int f, int ld, tt_dropout drop);
/* Floats of scratch tt_ffn_act_bwd needs. */
size_t tt_ffn_act_bwd_part_floats(const tt_gpu_program *p);
/* dz = dropout_bwd(dhd) * (h > 0) [rows, f] from the forward's hd and its dropout probability p
 * (no mask drawn: see the kernel), ld apart as the forward's (dz may be dhd); db1 [f] written
 * (not added). */
void tt_ffn_act_bwd(const tt_gpu_program *p, cudaStream_t st, void *dz, float *db1, float *part,
                    const void *dhd, const void *hd, int rows, int f, int ld, float drop);
/* The same without db1's column sums: its partials (the returned count x f floats) left in part
 * for tt_colsums. */
int tt_ffn_act_bwd_parts(const tt_gpu_program *p, cudaStream_t st, void *dz, float *part,
                         const void *dhd, const void *hd, int rows, int f, int ld, float drop);

/* The core g [r] = (1/h) sum_c softmax(theta_c), theta [h, r] (templates/core.cu); the backward
 * adds into dtheta [h, r]. For `layers` layers in one launch: layer l's g and dg are l g_stride
 * floats after the first's, its theta and dtheta l theta_stride. */
void tt_core_fwd(const tt_gpu_program *p, cudaStream_t st, float *g, const float *theta, int h,
                 int r, int layers, long long g_stride, long long theta_stride);
void tt_core_bwd(const tt_gpu_program *p, cudaStream_t st, float *dtheta, const float *dg,
                 const float *theta, int h, int r, int layers, long long g_stride,
                 long long theta_stride);

/* Cross-entropy of logits [rows, v] of the storage type (bf16 on the bf16 path, as the products
 * write them; fp32 arithmetic), rows ld >= v apart, against targets with label smoothing eps
 * (templates/xent.cu): loss, nll [rows] (fp32), each times its row's weight (weight NULL: all
 * 1). With grad, d(scale * sum weight * loss)/d logits overwrites the logits, rounded to the
 * storage type, columns past v untouched. A target outside [0, v) gives a NaN loss. */
void tt_xent(const tt_gpu_program *p, cudaStream_t st, float *loss, float *nll, void *logits,
             const int32_t *targets, const float *weight, int rows, int v, int ld, float eps,
             float scale, bool grad);
/* Transformer-XL's attention probabilities (templates/txl_softmax.cu) for heads x batch x n
 * queries of m + n keys each, rows head-major ((c batch + b) n + i): prob and pdrop (after
 * dropatt) [rows, m+n] of the storage type from AC and the unshifted BD (fp32, [rows, m+n]); and
 * the backward from dpdrop (fp32) into dac and dbd (storage type). scale = 1 / sqrt(d_head);
 * drop.p is dropatt, its draws numbered as the CPU reference's [batch, heads, n, m+n]. */
void tt_txl_softmax_fwd(const tt_gpu_program *p, cudaStream_t st, void *prob, void *pdrop,
                        const float *ac, const float *bd, int batch, int heads, int n, int m,
                        float scale, tt_dropout drop);
void tt_txl_softmax_bwd(const tt_gpu_program *p, cudaStream_t st, void *dac, void *dbd,
                        const float *dpdrop, const void *prob, int batch, int heads, int n, int m,
                        float scale, tt_dropout drop);

/* The rest of Transformer-XL's attention between its products (templates/txl.cu). Heads are
 * head-major and padded, X[c][row][e] with e < DP (d_head rounded up to a multiple of 8, zero
 * past d_head); keys of sequence b are its m memory rows, then its n segment rows.
 * pe [rows, d] (storage type, rows ld apart) = dropout of src [rows, d] (fp32), element row d +
 * col of the drop's stream. */
void tt_txl_pe(const tt_gpu_program *p, cudaStream_t st, void *pe, const float *src, int rows,
               int d, int ld, tt_dropout drop);
/* Where the rows of the projections hold q, k, v (H dh values each): qkv's rows are ldq apart with
 * q, k, v at 0, hs, 2 hs; kvm's (the memory's k and v) ldkv apart with k, v at 0, hs. Packed:
 * {3 H dh, 2 H dh, H dh}. */
typedef struct {
    int ldq, ldkv, hs;
} tt_qkv_rows;
/* qu = q + u, qv = q + v [H][batch*n][DP]; k, v [H][batch*(m+n)][DP] from qkv [batch*n rows]
 * (the segment's) and kvm [batch*m rows] (the memory's; NULL when m is 0). */
void tt_txl_heads_qkv(const tt_gpu_program *p, cudaStream_t st, void *qu, void *qv, void *k,
                      void *v, const void *qkv, const void *kvm, const float *u, const float *vb,
                      int batch, int n, int m, tt_qkv_rows lay);
/* Transformer-XL's attention fused (templates/txl_flash.cu; in the plan for bf16, see
 * tt_txl_fused), in templates/txl.cu's head-major padded layouts: from qu = q + u and qv = q + v
 * [heads][batch][n][DP], k and v [heads][batch][m + n][DP] (memory rows first) and r
 * [heads][m + n][DP], o = P' V [heads][batch][n][DP] and lse [heads batch n], each row's
 * log-sum-exp of its scaled scores, which the backward reads. */
bool tt_txl_fused(const tt_gpu_program *p);
void tt_txl_attn_fwd(const tt_gpu_program *p, cudaStream_t st, void *o, float *lse, const void *qu,
                     const void *qv, const void *k, const void *v, const void *r, int batch,
                     int heads, int n, int m, float scale, tt_dropout drop);
/* Its backward from dout = d(P' V), with o and lse as the forward wrote them: dq (= d(q + u) +
 * d(q + v)) and dk, dv written where the projections' products read them, the segment's rows of
 * dqkv and the memory's of dkvm (NULL when m is 0) in the layout tt_txl_heads_qkv reads (lay);
 * du, dvb [heads d_head] (r_w_bias, r_r_bias: shared by the layers) added into; dbd [heads][batch
 * n][m + n] (rows ldb >= m + n apart; dS shifted into BD's columns, 0 where no key lands: dR =
 * dBD^T qv is the caller's product) written. uvpart (tt_txl_uv_part_floats) and ds (dS, bf16
 * [heads batch n][tt_txl_ds_pitch(m + n)]) are scratch. */
size_t tt_txl_uv_part_floats(const tt_gpu_program *p, int batch, int heads, int n);
int tt_txl_ds_pitch(int klen);
void tt_txl_attn_bwd(const tt_gpu_program *p, cudaStream_t st, void *dqkv, void *dkvm,
                     tt_qkv_rows lay, float *du, float *dvb, float *uvpart, void *dbd, int ldb,
                     void *ds, const void *qu, const void *qv, const void *k, const void *v,
                     const void *r, const void *o, const void *dout, const float *lse, int batch,
                     int heads, int n, int m, float scale, tt_dropout drop);
/* dst [H][rows][DP] = the heads of src [rows, ld] from column off, and back. */
void tt_txl_heads(const tt_gpu_program *p, cudaStream_t st, void *dst, const void *src, int rows,
                  int ld, int off);
void tt_txl_unheads(const tt_gpu_program *p, cudaStream_t st, void *dst, const void *src, int rows,
                    int ld, int off);
/* dqkv [batch*n rows] (dq = dqu + dqv) and dkvm [batch*m rows] (NULL when m is 0), laid out as
 * qkv and kvm, from the heads' gradients; what lies between the blocks is not written. */
void tt_txl_heads_bwd(const tt_gpu_program *p, cudaStream_t st, void *dqkv, void *dkvm,
                      const void *dqu, const void *dqv, const void *dk, const void *dv, int batch,
                      int n, int m, tt_qkv_rows lay);
/* dR = dBD^T (q + v) in splits products over whole sequences (tt_txl_dr_splits of the batch: at
 * most 16, dividing it), each into part [H][splits][klen][DP] fp32, then tt_txl_dr_sum: dr
 * [klen, ld] (head c at c d_head) = their sum, in a fixed order. */
int tt_txl_dr_splits(int batch);
void tt_txl_dr_sum(const tt_gpu_program *p, cudaStream_t st, void *dr, int ld, const float *part,
                   int klen, int splits);
/* du, dv [H dh] (fp32) += the sums over rows of dqu, dqv [H][rows][DP]. */
void tt_txl_uv_bwd(const tt_gpu_program *p, cudaStream_t st, float *du, float *dv, const void *dqu,
                   const void *dqv, int rows);

/* out[0] = sum of loss, out[1] = sum of nll over rows, in double, in a fixed order. */
void tt_xent_sum(const tt_gpu_program *p, cudaStream_t st, double *out, const float *loss,
                 const float *nll, int rows);

/* The optimizer's scalars of a step, in device memory, so that a captured step reads each
 * replay's values: lr, bc1, bc2 the host writes (tt_adam_scalars_at), norm and clip (the factor
 * the gradient is scaled by) tt_grad_norm_guarded writes. */
typedef struct {
    double lr, bc1, bc2;
    double norm, clip;
} tt_adam_scalars;
/* The guarded step across steps in flight (templates/adam.cu; gpu_model.c's trainer submits a
 * step before the last one's result is back): in device memory, a step's own. The host writes
 * halt (1: leave the weights alone if the last guarded step skipped) and first_bad (LLONG_MAX)
 * before the step; tt_grad_norm_guarded's final block writes skip (the norm or the loss not finite,
 * or halt and the last step skipped, which it keeps in *last for the next); tt_adam leaves w, m
 * and v as they are on skip, and where the norm or the loss is not finite writes into first_bad
 * the least index (plus its base) of a non-finite element of g. */
typedef struct {
    double halt, skip;
    long long first_bad;
} tt_step_guard;
_Static_assert(sizeof(tt_step_guard) == 24, "templates/adam.cu's tt_step_guard is three 8-byte fields");
/* The host's part for step s (1-based) at learning rate lr, as tt_adam_step computes it. */
void tt_adam_scalars_at(tt_adam_scalars *host, const tt_train_spec *t, double lr, long s);
/* Doubles of scratch tt_grad_norm_guarded needs: a partial sum a block, then the count of blocks done,
 * which must be zero before the first call (each call leaves it zero). */
size_t tt_grad_norm_parts(const tt_gpu_program *p);
/* tt_grad_norm_guarded without a guard, with the sharded optimizer's two steps (templates/adam.cu): raw 1 leaves the sum of
 * g's squares in sc->norm (no clip factor); add (a device address, NULL: none) is added to the
 * sum before the norm is taken (n 0 and add &sc->norm: the norm of the ranks' summed squares). */
void tt_grad_norm_ex(const tt_gpu_program *p, cudaStream_t st, tt_adam_scalars *sc, double *part,
                     const float *g, size_t n, double max_norm, int raw, const double *add);
/* sc->norm = ||g||, sc->clip = max_norm / (norm + 1e-6) when norm > max_norm > 0, else 1: as
 * tt_clip_grad_norm, which scales g itself; here tt_adam applies the factor. With a step guard
 * (device addresses): its skip decided from the norm, *loss and *last (a word the guarded steps
 * share, 0 before the first), which it updates; guard NULL: none (loss and last unread). */
void tt_grad_norm_guarded(const tt_gpu_program *p, cudaStream_t st, tt_adam_scalars *sc,
                          double *part, const float *g, size_t n, double max_norm,
                          tt_step_guard *guard, const double *loss, unsigned *last);
/* tt_adam_step on w, m, v [n] with gradient g * sc->clip; wcopy (may be NULL) gets the new w in
 * the storage type (the bf16 weights of the GEMMs), and so do the padded copies of pads (npads
 * copy_rows jobs, at most TT_ADAM_PAD_JOBS, ordered by tt_copy_jobs_for_adam, whose sources lie in wcopy,
 * or in w where wcopy is NULL; NULL and 0: none): what tt_copy_rows of those jobs would copy.
 * Nothing changes when sc->norm, or *loss (a device address; NULL: not looked at), is not finite:
 * the guarded step. */
void tt_adam(const tt_gpu_program *p, cudaStream_t st, float *w, float *m, float *v, void *wcopy,
             const float *g, const tt_adam_scalars *sc, const double *loss, size_t n,
             const tt_train_spec *t, const long long *pads, int npads);
/* The same under a step guard (tt_grad_norm_guarded's), g's element 0 being the flat gradient's
 * element base. */
void tt_adam_guarded(const tt_gpu_program *p, cudaStream_t st, float *w, float *m, float *v,
                     void *wcopy, const float *g, const tt_adam_scalars *sc, const double *loss,
                     size_t n, const tt_train_spec *t, const long long *pads, int npads,
                     tt_step_guard *guard, long long base);

/* templates/mla_mat.cu's kernels, which gpu/mla_mat.c runs between cuBLAS's products when the
 * plan's attention is materialized (tt_mla_materialized): A [batch, N, R2] and KV [batch, N^2,
 * R2] from qkv, g (and p, u, v with position: key: else NULL); T's (or dT's) hidden entries
 * zeroed (nothing without the causal mask); dqkv (written) and the parts of dP, dg, du, dv from
 * G = dT KV and E = dT^T A (fp32); dP (written), dg, du, dv (added into) from the parts. */
bool tt_mla_materialized(const tt_gpu_program *p);
/* Whether the materialized backward sums dT by mla_tc.cu's mla_bwd_q reading it from memory
 * (DT_MEM: bf16, position: none), and that: dqkv written and dg added into from dT [batch N,
 * N^2] (unmasked; rows in the positions' order under pos_rows) through part
 * (tt_mla_scratch_floats), by mla_bwd_q and mla_bwd_reduce. */
bool tt_mla_mat_dt_mem(const tt_gpu_program *p);
void tt_mla_mat_bwd_dt(const tt_gpu_program *p, cudaStream_t s, void *dqkv, float *dg, float *part,
                       const void *dt, const void *qkv, const float *g, int batch, bool pos_rows);
void tt_mla_mat_prep(const tt_gpu_program *p, cudaStream_t s, void *a, void *kv, const void *qkv,
                     const float *g, const void *pos, const float *u, const float *v, int batch);
void tt_mla_mat_mask(const tt_gpu_program *p, cudaStream_t s, void *t, int batch, bool pos_rows);
/* Whether the plan forms T itself, masked, by mla_mat_t (templates/mla_tc.cu: bf16 plans; not
 * with TT_MAT_T=0 in the environment), and that launch, rows in the positions' order under
 * pos_rows; else mla_mat_prep, a batched product and mla_mat_mask form it. */
bool tt_mla_mat_forms_t(const tt_gpu_program *p);
void tt_mla_mat_t(const tt_gpu_program *p, cudaStream_t s, void *t, const void *qkv, const float *g,
                  const void *pos, const float *u, const float *v, int batch, bool pos_rows);
/* The tiles of positions the products with Wo run in (mla_mat_rows's TILES; TT_MAT_TILES, 1 to
 * N, replaces it, for measurement): 1, a product over every column with T's rows in the
 * sequences' order, without the causal mask. Under tiles > 1, T's and dT's rows are in the
 * positions' order (i batch + b), and mla_mat_rows moves rows of D between the orders: to_pos,
 * the sequences' (src) into the positions' (dst); else the reverse. */
int tt_mla_mat_tiles(const tt_gpu_program *p);
void tt_mla_mat_rows(const tt_gpu_program *p, cudaStream_t s, void *dst, const void *src,
                     int batch, bool to_pos);
void tt_mla_mat_grads(const tt_gpu_program *p, cudaStream_t s, void *dqkv, float *part,
                      const float *gm, const float *em, const void *qkv, const float *g,
                      const void *pos, const float *u, const float *v, int batch);
void tt_mla_mat_params(const tt_gpu_program *p, cudaStream_t s, float *dp, float *dg, float *du,
                       float *dv, const float *part, int batch);

/* Floats of scratch tt_mla_fwd and tt_mla_bwd need for batch sequences (one buffer serves both:
 * a layer's forward and backward never overlap). */
size_t tt_mla_scratch_floats(const tt_gpu_program *p, int batch);
/* Multi-linear attention forward (templates/mla.cu, or mla_tc.cu on the bf16 path); p, u, v
 * NULL unless position: key; scratch as tt_mla_scratch_floats says. */
void tt_mla_fwd(const tt_gpu_program *p, cudaStream_t s, void *y, const void *qkv, const float *g,
                const void *wo, const void *pos, const float *u, const float *v, float *scratch,
                int batch, int n, int r, int d);
/* Multi-linear attention backward: dqkv [B*N, 3R] written; dwo [D, N*N], dg, du, dv [R] added
 * into (fp32 gradients); dp [N, R] written (position: key; else NULL, as pos, u, v, du, dv).
 * With side, dWo's kernels run on it beside the others (neither fills the card alone) and s
 * waits for them before its next work; NULL: all on s. */
void tt_mla_bwd(const tt_gpu_program *p, cudaStream_t s, const tt_gpu_side *side, void *dqkv,
                float *dwo, float *dp, float *dg, float *du, float *dv, float *part, const void *dy,
                const void *qkv, const float *g, const void *wo, const void *pos, const float *u,
                const float *v, int batch, int n, int r, int d);

/* out [n] (storage type) = in [n] (fp32), rounded to nearest even (bf16 plans only). */
void tt_cast(const tt_gpu_program *p, cudaStream_t s, void *out, const float *in, long n);
/* The storage type back to fp32, exactly (cast_widen): in's n values into out. */
void tt_cast_widen(const tt_gpu_program *p, cudaStream_t s, float *out, const void *in, long n);

/* Rows of bytes from one pitch to another (templates/copy.cu's copy_rows): the padded copies of
 * the weights, every one in a launch. A job's fields: templates/copy_rows.cuh. */
/* One job's fields into job[TT_COPY_FIELDS]. */
void tt_copy_job(long long *job, void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                 size_t row_bytes, long rows);
/* The table of njobs jobs (host memory) in the order tt_adam's padded copies need: by source
 * address, the sources disjoint, each under 4 GiB with its destination pitch (asserted). */
void tt_copy_jobs_for_adam(long long *jobs, int njobs);
/* njobs jobs (1..65535) of the table at jobs (device memory, njobs * TT_COPY_FIELDS values),
 * whose tallest has max_rows rows, in one launch on s. The arrays must not overlap. */
void tt_copy_rows(const tt_gpu_program *p, cudaStream_t s, const long long *jobs, int njobs,
                  long max_rows);

#endif
