/* The tensorized LM (MODEL.md section 2) and Transformer-XL (section 3) on the CPU, forward and
 * backward, built from cpu_ops and cpu_txl: the reference every GPU result is checked against,
 * and a trainer for small models. */
#ifndef TT_CPU_MODEL_H
#define TT_CPU_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"

typedef struct {
    const tt_layout *layout;
    int batch, rows; /* rows = batch * seq_len */
    tt_view w, g;    /* views of the weights and gradients of the last call */
    /* tt_cpu_lm_round_as: TT_PREC_BF16 when this reference rounds as the GPU's bf16 path does,
     * else TT_PREC_FP32 (the default: it rounds nowhere). wr, wrv: then the last call's weights
     * in bf16, as the GPU keeps them for its products and kernels; pe_r: position: key's pe. */
    tt_precision round;
    tt_real *wr;
    tt_view wrv;
    tt_real *pe_r;
    /* core_scale: NULL, or the caller's [L]: then a tensorized run with gradients writes there
     * the size that the rounding error of each layer's core_value gradient scales with: at
     * least the gradient's norm, more where it is a small sum of large terms (cpu_model.c's
     * core_scale says how). A comparison holds that tensor's error relative to this. */
    double *core_scale;
    /* uv_scale: NULL, or the caller's [2]: then a Transformer-XL run with gradients writes there
     * the same for r_w_bias and r_r_bias, each a sum over every layer, sequence, head and query of
     * a row d(q+u) or d(q+v): the larger of the gradient's norm and the rows' root-sum-square. */
    double *uv_scale;
    tt_real *pe;       /* [N, D] sinusoids of positions N-1 .. 0 (position: key);
                        * Transformer-XL: [mlen+N, D] pos_emb of the last call, after dropout */
    uint8_t *pe_mask;  /* Transformer-XL: pos_emb's dropout */
    tt_real *mem;      /* Transformer-XL: [L, batch, mlen, D] the memories of the last call */
    int mlen;
    /* activations kept for the backward pass */
    tt_real *x0;       /* [rows, D] embedding output after dropout */
    uint8_t *x0_mask;
    struct tt_cpu_layer_acts *acts; /* [L] */
    /* gradients of activations */
    tt_real *dx, *dtmp, *dff;  /* [rows, D], [rows, D], [rows, F] */
    tt_real *dqkv;     /* [rows, 3R] (tensorized) */
    tt_real *d_emb;    /* [rows, D]: d loss / d (embedding output before dropout) */
} tt_cpu_lm;

typedef struct {
    double loss_sum; /* sum over scored tokens of the training loss (label smoothing included) */
    double nll_sum;  /* sum over scored tokens of -log p(target) */
    double scored;   /* sum of the tokens' weights */
    double flags;    /* several GPUs: the sum over the ranks of the flags they raised for the
                      * step (tt_gpu_lm_flag); 0 elsewhere */
} tt_lm_result;

/* For either kind (a Transformer-XL LM runs only through tt_cpu_txl_lm_run). */
void tt_cpu_lm_init(tt_cpu_lm *lm, const tt_layout *layout, int batch);
void tt_cpu_lm_free(tt_cpu_lm *lm);

/* From the next run on, rounds where the GPU's path at precision p rounds. TT_PREC_BF16: every
 * activation, logit and gradient of an activation that the GPU stores in bf16 is rounded to bf16
 * (cpu/bf16.h, the kernels' rounding) from the same values, and the products and the kernels
 * that read the GPU's bf16 copy of the weights read it rounded too; the two then differ by the
 * order of their sums, and by the roundings inside the multi-linear attention's tensor-core
 * kernels (templates/mla_tc.cu: A_j, T_j, dT, ...), which this does not repeat: its parameters'
 * gradients carry them. TT_PREC_FP32 (the default, the reference) and TT_PREC_TF32 round
 * nowhere: tf32's products round their operands inside cuBLAS, in a way cuBLAS does not document
 * (to nearest, or toward zero: either is 2^-11 of an operand) and maybe not at all in the kernels
 * it picks for small products, so a guess repeated here could add an error instead of removing
 * one. For test_gpu_model's comparisons; the trainer never calls it. */
void tt_cpu_lm_round_as(tt_cpu_lm *lm, tt_precision p);

/* The FFN's ReLU input of the last run nearest zero, as a fraction of its layer's RMS; its layer,
 * unit and that RMS into *layer, *unit and *rms. Where it is within rounding of zero, two correct
 * implementations (another summation order) disagree on the ReLU's mask there, and W1, b1 and
 * everything below them differ by a whole term: a gradient test moves that unit's bias off the
 * kink first. At bf16 the input is the stored product W1 x1 plus b1, and another implementation's
 * product may round to the other neighbour: the distance is what is left past one bf16 step of
 * the product (a product of 1 rounds in steps of 2^-7; an input of 5e-3 next to it was 3e-3 of
 * its layer's RMS from the kink, and an H200 run flipped it). */
double tt_cpu_lm_relu_margin(const tt_cpu_lm *lm, int *layer, int *unit, double *rms);

typedef struct {
    bool train;            /* dropout on */
    uint64_t seed, step;   /* the dropout masks' RNG stream */
    tt_real label_smoothing;
    const tt_real *weight;   /* [rows] weight of each token's loss; NULL: every token 1 */
    /* A rank's share of a step's batch (several GPUs): seq0, the index of this batch's first
     * sequence in the whole batch, so that its rows draw the dropout masks they draw in the
     * whole batch on one device; norm, what the loss is divided by (the whole batch's weight,
     * so that the ranks' gradients sum to the whole batch's). 0 and 0: the batch is whole. */
    long seq0;
    double norm;
} tt_lm_opts;

/* Scores inputs [B, N] against targets [B, N]. With grads (laid out as the weights), adds the
 * gradient of loss_sum / scored into them and leaves d_emb set. */
void tt_cpu_lm_run(tt_cpu_lm *lm, tt_real *w, tt_real *grads, const int32_t *inputs,
                   const int32_t *targets, const tt_lm_opts *o, tt_lm_result *res);

/* Transformer-XL on one segment: inputs, targets, o, res and grads as tt_cpu_lm_run.
 *   mems_in [L, B, mlen, D]: layer l's memory, the inputs of layer l at the mlen positions just
 *     before this segment (layer 0's input is the embedding output after its dropout), as the
 *     previous call's mems_out; 0 <= mlen <= mem_len (M); NULL when mlen is 0 (a first segment).
 *     The memories are constants (kimiyoung detaches them): no gradient flows into them.
 *   mems_out [L, B, min(mlen + N, M), D] (may be NULL, may be mems_in): the next memories, the
 *     last rows of concat(mem_l, input of layer l) per sequence.
 * Returns the length of mems_out. Query i sees the memory and keys 0..i of its segment, at
 * relative distances clamped to clamp_len (cpu_txl.h). */
int tt_cpu_txl_lm_run(tt_cpu_lm *lm, tt_real *w, tt_real *grads, const int32_t *inputs,
                      const int32_t *targets, const tt_real *mems_in, int mlen, tt_real *mems_out,
                      const tt_lm_opts *o, tt_lm_result *res);

/* Using a trained model. After a run: the last layer's output x_L [rows, D], what the output
 * layer reads (on the bf16 path, as stored). */
const tt_real *tt_cpu_lm_hidden(const tt_cpu_lm *lm);
/* The output layer of hidden row x (D) with weights w, in double: out [vocab] gets log p(v | x)
 * for every word v (the adaptive softmax's: a tail word's is its cluster's head log-probability
 * plus its own within the cluster); tt_lm_logprob gets that of word t alone. */
void tt_lm_logprobs(const tt_layout *l, const tt_view *w, const tt_real *x, double *out);
double tt_lm_logprob(const tt_layout *l, const tt_view *w, const tt_real *x, long t);

/* The causal tensorized model a row at a time, for a window that fills a token at a time (libtt's
 * generation): row i of each layer needs only rows 0 .. i of the layer below (the mask), so each
 * new token costs one row of each layer, its attention's row T[i] over the keys and values of
 * the rows before. tt_cpu_rows_push appends a token at the next position (fewer than seq_len so
 * far) and returns its x_L [D], the bits tt_cpu_lm_run gives that row without dropout (w
 * fp32, as the run rounds nowhere). A window that slides changes every row: start over. */
typedef struct tt_cpu_rows tt_cpu_rows;
tt_cpu_rows *tt_cpu_rows_open(const tt_layout *l, tt_real *w);
void tt_cpu_rows_reset(tt_cpu_rows *c);
const tt_real *tt_cpu_rows_push(tt_cpu_rows *c, int32_t token);
void tt_cpu_rows_close(tt_cpu_rows *c);

#endif
