/* Which ranges of the gradient array a training step on several GPUs sums over the ranks, and
 * when (gpu_model.c runs each part on its own stream beside the backward as soon as the backward
 * has written it): each output cluster's weights right after that cluster's backward, what they
 * leave of the output layer's after the whole output layer, each layer's weight matrices after
 * that layer, and the rest at the end. With one embedding table (no projections) and emb_global,
 * every rank runs the embedding's backward over the whole batch after the sums instead: its
 * table is not summed (untied), or is summed with the output layer's before the embedding's
 * backward adds into it (tied). No CUDA here: the plan is the layout's alone, and tested on the
 * CPU (test_sum_parts). */
#ifndef TT_SUM_PARTS_H
#define TT_SUM_PARTS_H

#include <stdbool.h>
#include <stddef.h>

#include "model.h"

/* Ranges of the gradient array (offsets and lengths in floats), adjacent ones merged. */
typedef struct {
    size_t *at, *len;
    int n, cap;
} tt_spans;

typedef struct {
    int layers;
    tt_spans *bucket;                  /* [layers]: layer k's, after its backward */
    tt_spans cluster[TT_MAX_CLUSTERS]; /* output cluster c's, after its backward */
    tt_spans early;                    /* what the clusters' leave of the output layer's */
    tt_spans rest;                     /* after the backward (and the embedding's) */
} tt_sum_parts;

/* The parts of layout l's gradients, whose views g are laid out from base (g's pointers point
 * into base's array). txl: the Transformer-XL layout (its r_net is its layer's); emb_global:
 * the embedding's backward runs over the whole batch on every rank (one table only). */
void tt_sum_parts_plan(tt_sum_parts *s, const tt_layout *l, const tt_view *g, const tt_real *base,
                       bool txl, bool emb_global);
void tt_sum_parts_free(tt_sum_parts *s);

void tt_spans_add(tt_spans *s, size_t at, size_t len);
void tt_spans_free(tt_spans *s);

#endif
