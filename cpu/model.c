/* Parameter table, initial weights and views (see model.h). */
#include "model.h"

#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "util.h"

#define INIT_STD 0.02f      /* MODEL.md section 2 */
#define INIT_PROJ_STD 0.01f /* adaptive projections */

static tt_param *add(tt_layout *l, int ndim, int64_t d0, int64_t d1, float std, float value,
                     const char *fmt, ...) __attribute__((format(printf, 7, 8)));
static tt_param *add(tt_layout *l, int ndim, int64_t d0, int64_t d1, float std, float value,
                     const char *fmt, ...)
{
    l->params = tt_xrealloc(l->params, (size_t)(l->n_params + 1) * sizeof *l->params);
    tt_param *p = &l->params[l->n_params++];
    memset(p, 0, sizeof *p);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(p->name, sizeof p->name, fmt, ap);
    va_end(ap);
    p->ndim = ndim;
    p->shape[0] = d0;
    p->shape[1] = ndim > 1 ? d1 : 1;
    p->numel = (size_t)d0 * (size_t)(ndim > 1 ? d1 : 1);
    p->offset = l->n_floats;
    /* Every tensor starts on a 16-element boundary: 64-byte aligned for vector loads. */
    l->n_floats += (p->numel + 15) & ~(size_t)15;
    p->init_std = std;
    p->init_value = value;
    return p;
}

/* A LayerNorm: weight 1, bias 0 (MODEL.md section 2). */
static void add_layer_norm(tt_layout *l, int d, const char *module, int k)
{
    add(l, 1, d, 0, 0, 1, "layers.%d.%s.layer_norm.weight", k, module);
    add(l, 1, d, 0, 0, 0, "layers.%d.%s.layer_norm.bias", k, module);
}

/* The position-wise feed-forward block, the same in both kinds. */
static void add_pos_ff(tt_layout *l, int d, int f, int k)
{
    add(l, 2, f, d, INIT_STD, 0, "layers.%d.pos_ff.CoreNet.0.weight", k);
    add(l, 1, f, 0, 0, 0, "layers.%d.pos_ff.CoreNet.0.bias", k);
    add(l, 2, d, f, INIT_STD, 0, "layers.%d.pos_ff.CoreNet.3.weight", k);
    add(l, 1, d, 0, 0, 0, "layers.%d.pos_ff.CoreNet.3.bias", k);
    add_layer_norm(l, d, "pos_ff", k);
}

/* Tensorized attention: Q|K|V of rank R, the core, Wo from the N x N of a sequence. */
static void add_tensorized_attn(tt_layout *l, const tt_model_spec *m, int k)
{
    const int d = m->d_model, r = m->rank, n = m->seq_len;
    add(l, 2, 3 * r, d, INIT_STD, 0, "layers.%d.dec_attn.qkv_net.weight", k);
    add(l, 2, d, (int64_t)n * n, INIT_STD, 0, "layers.%d.dec_attn.o_net.weight", k);
    add(l, 2, m->cores, r, INIT_STD, 0, "layers.%d.dec_attn.core_value", k);
    if (m->position == TT_POS_KEY)
        add(l, 2, r, d, INIT_STD, 0, "layers.%d.dec_attn.r_net.weight", k);
}

/* kimiyoung's RelPartialLearnableMultiHeadAttn: three Linear(bias=False) of H*dh heads. */
static void add_txl_attn(tt_layout *l, const tt_model_spec *m, int k)
{
    const int d = m->d_model, hd = m->n_head * m->d_head;
    add(l, 2, 3 * hd, d, INIT_STD, 0, "layers.%d.dec_attn.qkv_net.weight", k);
    add(l, 2, hd, d, INIT_STD, 0, "layers.%d.dec_attn.r_net.weight", k);
    add(l, 2, d, hd, INIT_STD, 0, "layers.%d.dec_attn.o_net.weight", k);
}

int tt_layout_build(const tt_model_spec *m, long vocab, tt_layout *l, char *err, size_t errlen)
{
    (void)err, (void)errlen;
    memset(l, 0, sizeof *l);
    const bool txl = m->kind == TT_KIND_TXL;
    l->m = *m;
    l->vocab = vocab;
    l->n_clusters = m->n_cutoffs + 1;
    l->proj = m->div_val > 1;
    const int d = m->d_model, f = m->d_inner;
    for (int i = 0; i < l->n_clusters; i++) {
        l->lo[i] = i ? m->cutoffs[i - 1] : 0;
        l->hi[i] = i < m->n_cutoffs ? m->cutoffs[i] : vocab;
        int w = d;
        for (int k = 0; k < i && l->proj; k++) w /= m->div_val;
        l->dim[i] = w;
    }
    /* The embedding: one table for every word when div_val is 1, else one per cluster. */
    const int tables = l->proj ? l->n_clusters : 1;
    for (int i = 0; i < tables; i++) {
        const long rows = l->proj ? l->hi[i] - l->lo[i] : vocab;
        add(l, 2, rows, l->dim[i], INIT_STD, 0, "word_emb.emb_layers.%d.weight", i);
        if (l->proj) add(l, 2, d, l->dim[i], INIT_PROJ_STD, 0, "word_emb.emb_projs.%d", i);
    }
    /* u and v, shared by every layer. kimiyoung's are [n_head, d_head] (untie_r off), drawn by
     * weights_init's init_weight: N(0, init_std). The tensorized position term keeps them [R]. */
    if (txl) {
        add(l, 2, m->n_head, m->d_head, INIT_STD, 0, "r_w_bias");
        add(l, 2, m->n_head, m->d_head, INIT_STD, 0, "r_r_bias");
    } else if (m->position == TT_POS_KEY) {
        add(l, 1, m->rank, 0, INIT_STD, 0, "r_w_bias");
        add(l, 1, m->rank, 0, INIT_STD, 0, "r_r_bias");
    }
    for (int k = 0; k < m->layers; k++) {
        if (txl)
            add_txl_attn(l, m, k);
        else
            add_tensorized_attn(l, m, k);
        add_layer_norm(l, d, "dec_attn", k);
        add_pos_ff(l, d, f, k);
    }
    /* The output layer: untied weights and projections, every bias, the cluster logits. */
    for (int i = 0; i < tables; i++) {
        const long rows = l->proj ? l->hi[i] - l->lo[i] : vocab;
        if (!m->tie_weights) {
            add(l, 2, rows, l->dim[i], INIT_STD, 0, "crit.out_layers.%d.weight", i);
            if (l->proj) add(l, 2, d, l->dim[i], INIT_PROJ_STD, 0, "crit.out_projs.%d", i);
        }
        add(l, 1, rows, 0, 0, 0, "crit.out_layers.%d.bias", i);
    }
    if (m->n_cutoffs) {
        add(l, 2, m->n_cutoffs, d, INIT_STD, 0, "crit.cluster_weight");
        add(l, 1, m->n_cutoffs, 0, 0, 0, "crit.cluster_bias");
    }
    return 0;
}

int tt_cluster_of(const tt_layout *l, long t)
{
    int c = 0;
    while (c + 1 < l->n_clusters && t >= l->lo[c + 1]) c++;
    return c;
}

void tt_layout_free(tt_layout *l)
{
    free(l->params);
    memset(l, 0, sizeof *l);
}

const tt_param *tt_layout_find(const tt_layout *l, const char *name)
{
    for (int i = 0; i < l->n_params; i++)
        if (strcmp(l->params[i].name, name) == 0) return &l->params[i];
    return NULL;
}

void tt_layout_init(const tt_layout *l, tt_real *w, uint64_t seed)
{
    memset(w, 0, l->n_floats * sizeof *w);
    for (int i = 0; i < l->n_params; i++) {
        const tt_param *p = &l->params[i];
        tt_real *x = w + p->offset;
        if (p->init_std <= 0) {
            for (size_t k = 0; k < p->numel; k++) x[k] = p->init_value;
            continue;
        }
        /* Box-Muller on the counter-based RNG: the stream is the parameter's index, so each
         * tensor's values depend on the seed and its position in the table only. */
        const uint64_t stream = (1ull << 62) | (uint64_t)i;
        for (size_t k = 0; k < p->numel; k++) {
            const double u1 = 1.0 - tt_uniform(seed, stream, 2 * k); /* (0, 1] */
            const double u2 = tt_uniform(seed, stream, 2 * k + 1);
            x[k] = (tt_real)(p->init_std * sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2));
        }
    }
}

static tt_real *at(const tt_layout *l, tt_real *base, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static tt_real *at(const tt_layout *l, tt_real *base, const char *fmt, ...)
{
    char name[96];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof name, fmt, ap);
    va_end(ap);
    const tt_param *p = tt_layout_find(l, name);
    return p ? base + p->offset : NULL;
}

void tt_view_make(const tt_layout *l, tt_real *base, tt_view *v)
{
    memset(v, 0, sizeof *v);
    const tt_model_spec *m = &l->m;
    for (int i = 0; i < l->n_clusters; i++) {
        if (l->proj) {
            v->emb[i] = at(l, base, "word_emb.emb_layers.%d.weight", i);
            v->emb_proj[i] = at(l, base, "word_emb.emb_projs.%d", i);
            v->out_b[i] = at(l, base, "crit.out_layers.%d.bias", i);
            v->out_w[i] = m->tie_weights ? v->emb[i] : at(l, base, "crit.out_layers.%d.weight", i);
            v->out_proj[i] = m->tie_weights ? v->emb_proj[i] : at(l, base, "crit.out_projs.%d", i);
        } else { /* one table: cluster i is a slice of rows [lo, hi) */
            const size_t off = (size_t)l->lo[i] * m->d_model;
            v->emb[i] = at(l, base, "word_emb.emb_layers.0.weight") + off;
            v->out_w[i] = (m->tie_weights ? at(l, base, "word_emb.emb_layers.0.weight")
                                          : at(l, base, "crit.out_layers.0.weight")) + off;
            v->out_b[i] = at(l, base, "crit.out_layers.0.bias") + l->lo[i];
        }
    }
    v->cluster_w = at(l, base, "crit.cluster_weight");
    v->cluster_b = at(l, base, "crit.cluster_bias");
    v->u = at(l, base, "r_w_bias");
    v->v = at(l, base, "r_r_bias");
    v->layer = tt_xcalloc((size_t)m->layers, sizeof *v->layer);
    for (int k = 0; k < m->layers; k++) {
        tt_layer_view *y = &v->layer[k];
        y->qkv = at(l, base, "layers.%d.dec_attn.qkv_net.weight", k);
        y->o = at(l, base, "layers.%d.dec_attn.o_net.weight", k);
        y->core = at(l, base, "layers.%d.dec_attn.core_value", k);
        y->r_net = at(l, base, "layers.%d.dec_attn.r_net.weight", k);
        y->ln1_w = at(l, base, "layers.%d.dec_attn.layer_norm.weight", k);
        y->ln1_b = at(l, base, "layers.%d.dec_attn.layer_norm.bias", k);
        y->ff1_w = at(l, base, "layers.%d.pos_ff.CoreNet.0.weight", k);
        y->ff1_b = at(l, base, "layers.%d.pos_ff.CoreNet.0.bias", k);
        y->ff2_w = at(l, base, "layers.%d.pos_ff.CoreNet.3.weight", k);
        y->ff2_b = at(l, base, "layers.%d.pos_ff.CoreNet.3.bias", k);
        y->ln2_w = at(l, base, "layers.%d.pos_ff.layer_norm.weight", k);
        y->ln2_b = at(l, base, "layers.%d.pos_ff.layer_norm.bias", k);
    }
}

void tt_view_free(tt_view *v)
{
    free(v->layer);
    v->layer = NULL;
}
