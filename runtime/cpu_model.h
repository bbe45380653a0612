/* The tensorized LM on the CPU (MODEL.md section 2), forward and backward, built from cpu_ops:
 * the reference every GPU result is checked against, and a trainer for small models. */
#ifndef TT_CPU_MODEL_H
#define TT_CPU_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "model.h"

typedef struct {
    const tt_layout *layout;
    int batch, rows; /* rows = batch * seq_len */
    tt_view w, g;    /* views of the weights and gradients of the last call */
    tt_real *pe;       /* [N, D] sinusoids of positions N-1 .. 0 (position: key) */
    /* activations kept for the backward pass */
    tt_real *x0;       /* [rows, D] embedding output after dropout */
    uint8_t *x0_mask;
    struct tt_cpu_layer_acts *acts; /* [L] */
    /* gradients of activations */
    tt_real *dx, *dtmp, *dff;  /* [rows, D], [rows, D], [rows, F] */
    tt_real *dqkv;     /* [rows, 3R] */
    tt_real *d_emb;    /* [rows, D]: d loss / d (embedding output before dropout) */
} tt_cpu_lm;

typedef struct {
    double loss_sum; /* sum over scored tokens of the training loss (label smoothing included) */
    double nll_sum;  /* sum over scored tokens of -log p(target) */
    double scored;   /* sum of the tokens' weights */
} tt_lm_result;

void tt_cpu_lm_init(tt_cpu_lm *lm, const tt_layout *layout, int batch);
void tt_cpu_lm_free(tt_cpu_lm *lm);

typedef struct {
    bool train;            /* dropout on */
    uint64_t seed, step;   /* the dropout masks' RNG stream */
    tt_real label_smoothing;
    const tt_real *weight;   /* [rows] weight of each token's loss; NULL: every token 1 */
} tt_lm_opts;

/* Scores inputs [B, N] against targets [B, N]. With grads (laid out as the weights), adds the
 * gradient of loss_sum / scored into them and leaves d_emb set. */
void tt_cpu_lm_run(tt_cpu_lm *lm, tt_real *w, tt_real *grads, const int32_t *inputs,
                   const int32_t *targets, const tt_lm_opts *o, tt_lm_result *res);

#endif
