/* The parameters of a spec'd model: names and shapes as kimiyoung's MemTransformerLM state_dict
 * (MODEL.md section 4), laid out in one tt_real buffer with a table of offsets into it, and typed
 * views of that buffer (weights, gradients and optimizer moments share the layout). */
#ifndef TT_MODEL_H
#define TT_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "real.h"
#include "spec.h"

#define TT_MAX_CLUSTERS (TT_MAX_CUTOFFS + 1)

typedef struct {
    char name[96];
    int ndim;
    int64_t shape[2];
    size_t offset; /* in floats */
    size_t numel;
    float init_std;   /* > 0: drawn from N(0, init_std^2) */
    float init_value; /* else this constant */
} tt_param;

typedef struct {
    tt_model_spec m;
    long vocab;
    int n_clusters;               /* 1 + number of cutoffs: cluster 0 is the head's own words */
    long lo[TT_MAX_CLUSTERS], hi[TT_MAX_CLUSTERS]; /* cluster i holds ids [lo, hi) */
    int dim[TT_MAX_CLUSTERS];     /* its embedding width D / div_val^i */
    bool proj;                    /* div_val > 1: clusters have D x dim projections */
    tt_param *params;
    int n_params;
    size_t n_floats;
} tt_layout;

/* The cluster of word t: the last one whose lo is at most t (a t past the vocabulary: the last
 * cluster; below 0: cluster 0). */
int tt_cluster_of(const tt_layout *layout, long t);

/* The parameters of m: the tensorized model's, or Transformer-XL's (kimiyoung's MemTransformerLM,
 * attn_type 0, without its pos_emb.inv_freq buffer, which is not a parameter). Returns 0 and
 * leaves err alone: both kinds the spec parser accepts have a layout. */
int tt_layout_build(const tt_model_spec *m, long vocab, tt_layout *layout, char *err, size_t errlen);
void tt_layout_free(tt_layout *layout);

const tt_param *tt_layout_find(const tt_layout *layout, const char *name);

/* Fills w (layout->n_floats) with the initial weights of MODEL.md section 2, from seed alone. */
void tt_layout_init(const tt_layout *layout, tt_real *w, uint64_t seed);

/* One layer's tensors; shapes as [tensorized] / [transformer-xl], with hd = n_head * d_head. */
typedef struct {
    tt_real *qkv;          /* [3R, D] / [3*hd, D]  dec_attn.qkv_net.weight */
    tt_real *o;            /* [D, N*N] / [D, hd]   dec_attn.o_net.weight */
    tt_real *core;         /* [h, R] / NULL        dec_attn.core_value (theta, before the softmax) */
    tt_real *r_net;        /* [R, D] (position: key, else NULL) / [hd, D]  dec_attn.r_net.weight */
    tt_real *ln1_w, *ln1_b; /* [D]      dec_attn.layer_norm */
    tt_real *ff1_w, *ff1_b; /* [F, D], [F]  pos_ff.CoreNet.0 */
    tt_real *ff2_w, *ff2_b; /* [D, F], [D]  pos_ff.CoreNet.3 */
    tt_real *ln2_w, *ln2_b; /* [D]      pos_ff.layer_norm */
} tt_layer_view;

typedef struct {
    tt_real *emb[TT_MAX_CLUSTERS];      /* [hi-lo, dim]  word_emb.emb_layers.i.weight */
    tt_real *emb_proj[TT_MAX_CLUSTERS]; /* [D, dim]      word_emb.emb_projs.i (proj only) */
    tt_real *out_w[TT_MAX_CLUSTERS];    /* [hi-lo, dim]  crit.out_layers.i.weight; = emb when tied */
    tt_real *out_b[TT_MAX_CLUSTERS];    /* [hi-lo]       crit.out_layers.i.bias */
    tt_real *out_proj[TT_MAX_CLUSTERS]; /* [D, dim]      crit.out_projs.i; = emb_proj when tied */
    tt_real *cluster_w, *cluster_b;     /* [clusters-1, D], [clusters-1] */
    tt_real *u, *v; /* r_w_bias, r_r_bias: [R] (tensorized, position: key) / [n_head, d_head] */
    tt_layer_view *layer;             /* [L] */
} tt_view;

/* Views of a buffer laid out as layout (weights, gradients, moments). Free with tt_view_free. */
void tt_view_make(const tt_layout *layout, tt_real *base, tt_view *view);
void tt_view_free(tt_view *view);

#endif
