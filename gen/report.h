/* What a spec'd model costs: parameters by component, useful FLOPs per token, memory. One counting
 * code serves ttgen's report and tt-bench; the README's "Cost model" gives every formula. */
#ifndef TT_REPORT_H
#define TT_REPORT_H

#include <stdio.h>

#include "spec.h"

typedef enum {
    TT_C_EMBEDDING, /* word embedding (adaptive: every cluster and its projection) */
    TT_C_ATTN_QKV,  /* Wq, Wk, Wv (qkv_net) */
    TT_C_ATTN_CORE, /* tensorized: the cores theta (h x R per layer) */
    TT_C_ATTN_POS,  /* r_net per layer, r_w_bias and r_r_bias */
    TT_C_ATTN_O,    /* Wo (o_net) */
    TT_C_FFN,
    TT_C_LAYERNORM,
    TT_C_SOFTMAX,   /* output layer: what is not shared with the embedding */
    TT_C_COUNT
} tt_component;

typedef enum {
    TT_F_EMBEDDING, /* adaptive embedding projections */
    TT_F_ATTN_PROJ, /* Q, K, V (and r_net) projections */
    TT_F_ATTN_SCORE,/* tensorized: A and T; transformer-xl: AC and BD */
    TT_F_ATTN_MIX,  /* tensorized: T Wo; transformer-xl: P V and Wo */
    TT_F_FFN,
    TT_F_SOFTMAX,
    TT_F_COUNT
} tt_flop_part;

/* The roles of a training step's parts: where tt-bench --profile puts each part's time
 * (gpu_model.c's marks) and the cost model its useful bytes (tt_costs.step_bytes). */
typedef enum {
    TT_PROF_EMBEDDING, /* the word embedding (adaptive: its clusters and projections) */
    TT_PROF_QKV,       /* the projections to q, k, v (and P = Wr pe; Transformer-XL: r_net and
                        * the memory's k, v) */
    TT_PROF_ATTENTION, /* the rest of the attention: the core and T (tensorized; with Wo), the
                        * scores, softmax and P V (Transformer-XL) */
    TT_PROF_O,         /* Transformer-XL's o_net */
    TT_PROF_LAYERNORM, /* the residual sums with dropout and their LayerNorms */
    TT_PROF_FFN,       /* W1, the activation with dropout, W2 */
    TT_PROF_SOFTMAX,   /* the output layer and the loss, forward and backward */
    TT_PROF_OPTIMIZER, /* the gradient norm, clipping and Adam, and the weights' copies */
    TT_PROF_ROLES
} tt_prof_role;
const char *tt_prof_role_name(tt_prof_role r);

typedef struct {
    long vocab;
    double params[TT_C_COUNT];
    double params_total;
    /* one attention layer, for the paper's compression claim */
    double attn_layer;        /* every attention parameter of one layer, Wo included */
    double attn_layer_no_o;
    double paper_ratio;       /* 3hDd / (3Dd + Rh) with d = R (tensorized only) */
    double mha_layer;         /* a multi-head attention of width D: 4 D^2 */
    /* useful FLOPs per token (2 per multiply-add; masked products are not counted) */
    double fwd[TT_F_COUNT];
    double fwd_total, train_total;
    double tail_fraction;     /* share of tokens in the adaptive softmax's tail clusters (Zipf) */
    /* bytes, for the spec's training batch */
    double act_bytes;         /* activations the backward pass keeps */
    double state_bytes;       /* weights, gradients, Adam moments (and bf16 copies) */
    double materialized_t_bytes; /* what one layer's dense T would take (the fused kernel: 0) */
    /* useful bytes of device memory one training step of the spec's batch moves (forward,
     * backward, optimizer), by role; report.c's step_bytes says what counts */
    double step_bytes[TT_PROF_ROLES];
} tt_costs;

/* Counts for spec with the given vocabulary size (spec->model.vocab, or from the data). */
void tt_costs_compute(const tt_spec *spec, long vocab, tt_costs *c);

const char *tt_component_name(tt_component c);
const char *tt_flop_part_name(tt_flop_part p);

/* v with an SI suffix as the report prints counts: "12.39M", "240" (3 significant digits). */
void tt_report_number(double v, char *out, size_t n);

void tt_report_text(const tt_spec *spec, const tt_costs *c, FILE *f);
/* The same as one JSON object (no trailing newline), for --json. */
void tt_report_json(const tt_spec *spec, const tt_costs *c, FILE *f);

#endif
