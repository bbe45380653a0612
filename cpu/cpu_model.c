/* The tensorized LM and Transformer-XL on the CPU (see cpu_model.h). They share the embedding,
 * the tail of a layer (residual, LayerNorm, FFN) and the output layer; only the attention differs.
 * Dropout sites, each its own RNG stream (tt_dropout_stream(step, site)):
 *   tensorized:     0 embedding; 1 + 3*layer + {0: attention output, 1: FFN hidden, 2: FFN output}
 *                   (the GPU numbers them alike);
 *   Transformer-XL: 0 embedding; 1 pos_emb; 2 + 4*layer + {0: attention output, 1: dropatt,
 *                   2: FFN hidden, 3: FFN output}.
 * With tt_cpu_lm_round_as (a GPU path's roundings), every rounding is written where the GPU's
 * kernel or product makes it (gpu/gpu_model.c), and each is a no-op for the reference, whose
 * arithmetic stays as it was to the bit. */
#include "cpu_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_ops.h"
#include "cpu_txl.h"
#include "plan.h"
#include "rng.h"
#include "util.h"

struct tt_cpu_layer_acts {
    tt_real *qkv;            /* [rows, 3R] */
    tt_real *g;              /* [R] the core */
    tt_real *p;              /* [N, R] P = Wr pe (position: key) */
    tt_real *y;              /* [rows, D] attention output before dropout */
    uint8_t *y_mask;
    tt_real *s1, *mean1, *rstd1, *x1; /* LayerNorm 1: input, statistics, output */
    tt_real *h;              /* [rows, F] ReLU output */
    uint8_t *h_mask;
    tt_real *hd;             /* [rows, F] after dropout */
    uint8_t *f_mask;
    tt_real *s2, *mean2, *rstd2, *x2;
};

static int head_columns(const tt_layout *l) { return (int)l->hi[0] + l->n_clusters - 1; }

/* --- the bf16 path's roundings (tt_cpu_lm_round_as) --------------------------------------- */

/* x as the GPU stores it: bf16 on its bf16 path, else as computed. */
static tt_real stored(const tt_cpu_lm *lm, tt_real x)
{
    return lm->round == TT_PREC_BF16 ? cpu_bf16(x) : x;
}
static void store(const tt_cpu_lm *lm, tt_real *x, long n)
{
    if (lm->round == TT_PREC_BF16) cpu_round_bf16(x, (size_t)n);
}

/* The weights as the GPU's products and the kernels that take its storage type read them: its
 * bf16 copy (tt_cast of the weights), else the weights themselves. */
static const tt_view *wcopy(const tt_cpu_lm *lm)
{
    return lm->round == TT_PREC_BF16 ? &lm->wrv : &lm->w;
}

void tt_cpu_lm_init(tt_cpu_lm *lm, const tt_layout *l, int batch)
{
    memset(lm, 0, sizeof *lm);
    const tt_model_spec *m = &l->m;
    TT_ASSERT(m->kind == TT_KIND_TENSORIZED || m->kind == TT_KIND_TXL);
    const bool txl = m->kind == TT_KIND_TXL;
    const size_t rows = (size_t)batch * m->seq_len, d = m->d_model, f = m->d_inner, r = m->rank;
    lm->layout = l;
    lm->batch = batch;
    lm->rows = (int)rows;
    lm->x0 = tt_xmalloc(rows * d * sizeof(tt_real));
    lm->x0_mask = tt_xmalloc(rows * d);
    lm->acts = tt_xcalloc((size_t)m->layers, sizeof *lm->acts);
    for (int k = 0; k < m->layers; k++) {
        struct tt_cpu_layer_acts *a = &lm->acts[k];
        if (!txl) { /* Transformer-XL's attention recomputes what its backward needs */
            a->qkv = tt_xmalloc(rows * 3 * r * sizeof(tt_real));
            a->g = tt_xmalloc(r * sizeof(tt_real));
            if (m->position == TT_POS_KEY)
                a->p = tt_xmalloc((size_t)m->seq_len * r * sizeof(tt_real));
        }
        a->y = tt_xmalloc(rows * d * sizeof(tt_real));
        a->y_mask = tt_xmalloc(rows * d);
        a->s1 = tt_xmalloc(rows * d * sizeof(tt_real));
        a->mean1 = tt_xmalloc(rows * sizeof(tt_real));
        a->rstd1 = tt_xmalloc(rows * sizeof(tt_real));
        a->x1 = tt_xmalloc(rows * d * sizeof(tt_real));
        a->h = tt_xmalloc(rows * f * sizeof(tt_real));
        a->h_mask = tt_xmalloc(rows * f);
        a->hd = tt_xmalloc(rows * f * sizeof(tt_real));
        a->f_mask = tt_xmalloc(rows * d);
        a->s2 = tt_xmalloc(rows * d * sizeof(tt_real));
        a->mean2 = tt_xmalloc(rows * sizeof(tt_real));
        a->rstd2 = tt_xmalloc(rows * sizeof(tt_real));
        a->x2 = tt_xmalloc(rows * d * sizeof(tt_real));
    }
    if (txl) {
        const size_t klen = (size_t)m->mem_len + m->seq_len;
        lm->pe = tt_xmalloc(klen * d * sizeof(tt_real));
        lm->pe_mask = tt_xmalloc(klen * d);
        lm->mem = tt_xmalloc(((size_t)m->layers * batch * m->mem_len * d + 1) * sizeof(tt_real));
    } else if (m->position == TT_POS_KEY) {
        tt_real *pos = tt_xmalloc((size_t)m->seq_len * sizeof *pos);
        for (int j = 0; j < m->seq_len; j++) pos[j] = (tt_real)(m->seq_len - 1 - j);
        lm->pe = tt_xmalloc((size_t)m->seq_len * d * sizeof(tt_real));
        cpu_sinusoid(lm->pe, pos, m->seq_len, (int)d);
        free(pos);
    }
    lm->dx = tt_xmalloc(rows * d * sizeof(tt_real));
    lm->dtmp = tt_xmalloc(rows * d * sizeof(tt_real));
    lm->dff = tt_xmalloc(rows * f * sizeof(tt_real));
    if (!txl) lm->dqkv = tt_xmalloc(rows * 3 * r * sizeof(tt_real));
    lm->d_emb = tt_xmalloc(rows * d * sizeof(tt_real));
}

double tt_cpu_lm_relu_margin(const tt_cpu_lm *lm, int *layer, int *unit, double *rms)
{
    const tt_model_spec *m = &lm->layout->m;
    const int d = m->d_model, f = m->d_inner;
    double best = INFINITY;
    *layer = *unit = -1;
    for (int k = 0; k < m->layers; k++) {
        const tt_layer_view *lw = &lm->w.layer[k], *lp = &wcopy(lm)->layer[k];
        const tt_real *x1 = lm->acts[k].x1;
        double sq = 0, near = INFINITY;
        int at = -1;
        for (int r = 0; r < lm->rows; r++)
            for (int u = 0; u < f; u++) {
                double z = lm->round == TT_PREC_FP32 ? lw->ff1_b[u] : 0;
                for (int c = 0; c < d; c++)
                    z += (double)x1[(size_t)r * d + c] * lp->ff1_w[(size_t)u * d + c];
                double slack = 0;
                if (lm->round != TT_PREC_FP32) { /* as the bf16 path's kernel adds b1 */
                    const double prod = stored(lm, (tt_real)z);
                    z = prod + lw->ff1_b[u];
                    /* the GPU's product may round to the other neighbour: a step of bf16 */
                    if (lm->round == TT_PREC_BF16 && prod != 0) {
                        int e;
                        frexp(prod, &e);
                        slack = ldexp(1, e - 8);
                    }
                }
                sq += z * z;
                const double dist = fabs(z) > slack ? fabs(z) - slack : 0;
                if (dist < near) near = dist, at = u;
            }
        const double q = sqrt(sq / ((double)lm->rows * f)), rel = near / (q > 0 ? q : 1);
        if (rel < best) best = rel, *layer = k, *unit = at, *rms = q;
    }
    return best;
}

void tt_cpu_lm_free(tt_cpu_lm *lm)
{
    if (!lm->layout) return;
    for (int k = 0; k < lm->layout->m.layers; k++) {
        struct tt_cpu_layer_acts *a = &lm->acts[k];
        free(a->qkv), free(a->g), free(a->p), free(a->y), free(a->y_mask), free(a->s1);
        free(a->mean1), free(a->rstd1), free(a->x1), free(a->h), free(a->h_mask), free(a->hd);
        free(a->f_mask), free(a->s2), free(a->mean2), free(a->rstd2), free(a->x2);
    }
    free(lm->acts), free(lm->x0), free(lm->x0_mask), free(lm->pe), free(lm->pe_mask), free(lm->mem);
    free(lm->dx), free(lm->dtmp), free(lm->dff), free(lm->dqkv), free(lm->d_emb);
    free(lm->wr), free(lm->pe_r);
    tt_view_free(&lm->w);
    tt_view_free(&lm->g);
    tt_view_free(&lm->wrv);
    memset(lm, 0, sizeof *lm);
}

void tt_cpu_lm_round_as(tt_cpu_lm *lm, tt_precision p)
{
    const tt_layout *l = lm->layout;
    lm->round = p == TT_PREC_BF16 ? p : TT_PREC_FP32;
    if (lm->round == TT_PREC_FP32 || lm->wr) return;
    lm->wr = tt_xmalloc(l->n_floats * sizeof(tt_real));
    tt_view_make(l, lm->wr, &lm->wrv);
    if (l->m.kind == TT_KIND_TENSORIZED && l->m.position == TT_POS_KEY) {
        const size_t n = (size_t)l->m.seq_len * l->m.d_model;
        lm->pe_r = tt_xmalloc(n * sizeof(tt_real));
        for (size_t i = 0; i < n; i++) lm->pe_r[i] = cpu_bf16(lm->pe[i]);
    }
}

/* Embedding of one token (adaptive when div_val > 1), scaled by sqrt(D). Rounding as the bf16
 * path: the table row gathered in bf16, its product with the projection fp32, then scaled
 * (templates/embedding.cu). */
static void embed(const tt_cpu_lm *lm, long t, tt_real *out)
{
    const tt_layout *l = lm->layout;
    const tt_view *w = &lm->w;
    const int d = l->m.d_model, c = tt_cluster_of(l, t);
    const tt_real scale = (tt_real)sqrt((double)d);
    const tt_real *e = w->emb[c] + (size_t)(t - l->lo[c]) * l->dim[c];
    if (!l->proj) {
        cpu_embedding_row(out, e, d);
        return;
    }
    const int dc = l->dim[c];
    const tt_real *proj = wcopy(lm)->emb_proj[c];
    for (int i = 0; i < d; i++) {
        double s = 0;
        if (lm->round == TT_PREC_FP32) {
            for (int k = 0; k < dc; k++) s += (double)proj[(size_t)i * dc + k] * e[k];
            out[i] = (tt_real)(s * scale);
        } else {
            for (int k = 0; k < dc; k++)
                s += (double)proj[(size_t)i * dc + k] * stored(lm, e[k]);
            out[i] = (tt_real)s * scale;
        }
    }
}

/* Its backward from dout = d x0 before the embedding's dropout. Rounding as the bf16 path: dy =
 * dout * sqrt(D) stored, dP += dy^T e and de = dy P stored, added into the table row. */
static void embed_bwd(tt_cpu_lm *lm, long t, const tt_real *dout)
{
    const tt_layout *l = lm->layout;
    const tt_view *w = &lm->w, *g = &lm->g;
    const int d = l->m.d_model, c = tt_cluster_of(l, t);
    const tt_real scale = (tt_real)sqrt((double)d);
    tt_real *ge = g->emb[c] + (size_t)(t - l->lo[c]) * l->dim[c];
    if (!l->proj) {
        cpu_embedding_row_bwd(ge, dout, d);
        return;
    }
    const int dc = l->dim[c];
    const tt_real *e = w->emb[c] + (size_t)(t - l->lo[c]) * dc;
    if (lm->round == TT_PREC_FP32) {
        for (int k = 0; k < dc; k++) {
            double s = 0;
            for (int i = 0; i < d; i++) {
                s += (double)w->emb_proj[c][(size_t)i * dc + k] * dout[i];
                g->emb_proj[c][(size_t)i * dc + k] += dout[i] * scale * e[k];
            }
            ge[k] += (tt_real)(s * scale);
        }
        return;
    }
    const tt_real *proj = wcopy(lm)->emb_proj[c];
    for (int k = 0; k < dc; k++) {
        const tt_real ek = stored(lm, e[k]);
        double s = 0;
        for (int i = 0; i < d; i++) {
            const tt_real dy = stored(lm, dout[i] * scale);
            s += (double)proj[(size_t)i * dc + k] * dy;
            g->emb_proj[c][(size_t)i * dc + k] += dy * ek;
        }
        ge[k] += stored(lm, (tt_real)s);
    }
}

/* h_c = x proj_c (or x itself without projections): the input of cluster c's logits. */
static const tt_real *cluster_input(const tt_layout *l, const tt_view *w, int c, const tt_real *x,
                                  tt_real *buf)
{
    if (!l->proj) return x;
    const int d = l->m.d_model, dc = l->dim[c];
    for (int k = 0; k < dc; k++) {
        double s = 0;
        for (int i = 0; i < d; i++) s += (double)x[i] * w->out_proj[c][(size_t)i * dc + k];
        buf[k] = (tt_real)s;
    }
    return buf;
}

/* d(loss)/d(h_c) -> gradients of the projection and of x (added). */
static void cluster_input_bwd(const tt_layout *l, const tt_view *w, const tt_view *g, int c,
                              const tt_real *x, const double *dh, tt_real *dx)
{
    const int d = l->m.d_model, dc = l->dim[c];
    if (!l->proj) {
        for (int i = 0; i < d; i++) dx[i] += (tt_real)dh[i];
        return;
    }
    for (int i = 0; i < d; i++) {
        double s = 0;
        for (int k = 0; k < dc; k++) {
            s += dh[k] * w->out_proj[c][(size_t)i * dc + k];
            g->out_proj[c][(size_t)i * dc + k] += (tt_real)(dh[k] * x[i]);
        }
        dx[i] += (tt_real)s;
    }
}

/* The head's logits of a row whose cluster-0 input is h0 (cluster_input): the word columns, then
 * the tail clusters' columns, into logit [head_columns]; returns their largest. */
static double head_logits(const tt_layout *l, const tt_view *w, const tt_real *h0, double *logit)
{
    const int d = l->m.d_model, d0 = l->dim[0], cols = head_columns(l);
    const long c0 = l->hi[0];
    double mx = -INFINITY;
    for (int j = 0; j < cols; j++) {
        const tt_real *wr = j < c0 ? w->out_w[0] + (size_t)j * d0 : w->cluster_w + (size_t)(j - c0) * d;
        logit[j] = (j < c0 ? w->out_b[0][j] : w->cluster_b[j - c0]) + cpu_dot(h0, wr, d0);
        mx = logit[j] > mx ? logit[j] : mx;
    }
    return mx;
}

/* Tail cluster c's logits of a row whose cluster-c input is hc, into logit [its words]; returns
 * their largest. */
static double tail_logits(const tt_layout *l, const tt_view *w, int c, const tt_real *hc,
                          double *logit)
{
    const int dc = l->dim[c];
    double mx = -INFINITY;
    for (long j = 0; j < l->hi[c] - l->lo[c]; j++) {
        const tt_real *wr = w->out_w[c] + (size_t)j * dc;
        double s = w->out_b[c][j];
        for (int k = 0; k < dc; k++) s += (double)hc[k] * wr[k];
        logit[j] = s;
        mx = s > mx ? s : mx;
    }
    return mx;
}

/* The most logits a row holds at once: the head's columns, or the largest tail cluster's. */
static size_t most_logits(const tt_layout *l)
{
    long most = head_columns(l);
    for (int c = 1; c < l->n_clusters; c++)
        most = l->hi[c] - l->lo[c] > most ? l->hi[c] - l->lo[c] : most;
    return (size_t)most;
}

/* The output layer and the loss: the adaptive softmax (kimiyoung's ProjectedAdaptiveLogSoftmax;
 * with no cutoffs, the full softmax). Tail cluster c is scored by head column
 * hi[0] + clusters - 1 - c, as in that code. With grads, its backward runs here too and leaves
 * d loss / d x in dx. */
static void output_layer(tt_cpu_lm *lm, const tt_real *x, const int32_t *targets, const tt_real *wt,
                         tt_real eps, double scale, bool grads, tt_lm_result *res)
{
    const tt_layout *l = lm->layout;
    const int d = l->m.d_model, nc = l->n_clusters - 1, cols = head_columns(l);
    const long c0 = l->hi[0];
    const tt_view *w = &lm->w, *g = &lm->g;
    int maxdim = 0;
    for (int c = 0; c < l->n_clusters; c++) maxdim = l->dim[c] > maxdim ? l->dim[c] : maxdim;
    tt_real *hbuf = tt_xmalloc((size_t)maxdim * sizeof *hbuf);
    double *logit = tt_xmalloc(most_logits(l) * sizeof *logit);
    double *dh = tt_xmalloc((size_t)(maxdim > d ? maxdim : d) * sizeof *dh);
    if (grads) memset(lm->dx, 0, (size_t)lm->rows * d * sizeof(tt_real));

    for (int r = 0; r < lm->rows; r++) {
        const double weight = wt ? wt[r] : 1.0;
        if (weight == 0) continue;
        const tt_real *xr = x + (size_t)r * d;
        const long t = targets[r];
        const int tc = tt_cluster_of(l, t);
        /* head */
        const tt_real *h0 = cluster_input(l, w, 0, xr, hbuf);
        const int d0 = l->dim[0];
        const double mx = head_logits(l, w, h0, logit);
        double z = 0, sum = 0;
        const long col = tc == 0 ? t : c0 + nc - tc;
        const double target_logit = logit[col];
        for (int j = 0; j < cols; j++) {
            sum += logit[j];
            z += logit[j] = TT_EXP(logit[j] - mx); /* now the unnormalized probability */
        }
        const double lse = mx + log(z);
        double nll = lse - target_logit;
        double loss = (1.0 - eps) * nll + eps * (lse - sum / cols); /* eps is 0 with clusters */
        if (grads) {
            const double s = scale * weight;
            memset(dh, 0, (size_t)d0 * sizeof *dh);
            for (int j = 0; j < cols; j++) {
                double dl = s * (logit[j] / z - (double)eps / cols);
                if (j == col) dl -= s * (1.0 - eps);
                const tt_real *wr = j < c0 ? w->out_w[0] + (size_t)j * d0 : w->cluster_w + (size_t)(j - c0) * d;
                tt_real *gr = j < c0 ? g->out_w[0] + (size_t)j * d0 : g->cluster_w + (size_t)(j - c0) * d;
                const tt_real dlr = (tt_real)dl;
                for (int k = 0; k < d0; k++) {
                    dh[k] += dl * wr[k];
                    gr[k] += dlr * h0[k];
                }
                if (j < c0) g->out_b[0][j] += dlr;
                else g->cluster_b[j - c0] += dlr;
            }
            cluster_input_bwd(l, w, g, 0, xr, dh, lm->dx + (size_t)r * d);
        }
        /* the target's tail cluster */
        if (tc > 0) {
            const tt_real *hc = cluster_input(l, w, tc, xr, hbuf);
            const int dc = l->dim[tc];
            const long vc = l->hi[tc] - l->lo[tc];
            const double tmx = tail_logits(l, w, tc, hc, logit);
            double tz = 0;
            for (long j = 0; j < vc; j++) tz += exp(logit[j] - tmx);
            const double tlse = tmx + log(tz);
            const double tnll = tlse - logit[t - l->lo[tc]];
            nll += tnll;
            loss += tnll;
            if (grads) {
                const double s = scale * weight;
                memset(dh, 0, (size_t)dc * sizeof *dh);
                for (long j = 0; j < vc; j++) {
                    double dl = s * exp(logit[j] - tlse);
                    if (j == t - l->lo[tc]) dl -= s;
                    const tt_real *wr = w->out_w[tc] + (size_t)j * dc;
                    tt_real *gr = g->out_w[tc] + (size_t)j * dc;
                    for (int k = 0; k < dc; k++) {
                        dh[k] += dl * wr[k];
                        gr[k] += (tt_real)(dl * hc[k]);
                    }
                    g->out_b[tc][j] += (tt_real)dl;
                }
                cluster_input_bwd(l, w, g, tc, xr, dh, lm->dx + (size_t)r * d);
            }
        }
        res->nll_sum += weight * nll;
        res->loss_sum += weight * loss;
        res->scored += weight;
    }
    free(hbuf);
    free(logit);
    free(dh);
}

/* output_layer as the bf16 path computes it (gpu_model.c's enqueue_output): every product's
 * output stored (the logits, a projection's h, d h, d x), the loss and dlogits from the stored
 * logits and dlogits stored, the head's cluster columns a second product that adds their bias
 * to the stored x Wc^T, a tail's d x stored and then added into d x (adaptive_scatter_add). The
 * products and their bias epilogues read the weights' bf16 copy. */
static void output_layer_rounded(tt_cpu_lm *lm, const tt_real *x, const int32_t *targets,
                                 const tt_real *wt, tt_real eps, double scale, bool grads,
                                 tt_lm_result *res)
{
    const tt_layout *l = lm->layout;
    const int d = l->m.d_model, nc = l->n_clusters - 1, cols = head_columns(l);
    const long c0 = l->hi[0];
    const tt_view *wc = wcopy(lm), *g = &lm->g;
    const size_t most = most_logits(l);
    tt_real *ho = tt_xmalloc((size_t)d * sizeof *ho), *dh = tt_xmalloc((size_t)d * sizeof *dh);
    tt_real *tdx = tt_xmalloc((size_t)d * sizeof *tdx);
    tt_real *logit = tt_xmalloc((size_t)most * sizeof *logit);
    tt_real *dl = tt_xmalloc((size_t)most * sizeof *dl);
    if (grads) memset(lm->dx, 0, (size_t)lm->rows * d * sizeof(tt_real));

    for (int r = 0; r < lm->rows; r++) {
        const double weight = wt ? wt[r] : 1.0;
        if (weight == 0) continue;
        const long t = targets[r];
        const int tc = tt_cluster_of(l, t);
        const tt_real *xo = x + (size_t)r * d;
        tt_real *dxr = lm->dx + (size_t)r * d;
        for (int c = 0; c <= (tc > 0); c++) { /* the head, then the target's tail cluster */
            const int cl = c ? tc : 0, dc = l->dim[cl];
            const long vc = c ? l->hi[cl] - l->lo[cl] : cols;
            const tt_real *pj = l->proj ? wc->out_proj[cl] : NULL;
            /* h = x P (stored) */
            for (int k = 0; k < dc; k++) {
                double s = 0;
                if (pj)
                    for (int i = 0; i < d; i++) s += (double)xo[i] * pj[(size_t)i * dc + k];
                ho[k] = pj ? stored(lm, (tt_real)s) : xo[k];
            }
            double mx = -INFINITY, z = 0, sum = 0;
            for (long j = 0; j < vc; j++) {
                const bool cw = !c && j >= c0; /* a column of the head's cluster logits */
                const tt_real *wr =
                    cw ? wc->cluster_w + (size_t)(j - c0) * d : wc->out_w[cl] + (size_t)j * dc;
                double s = 0;
                for (int k = 0; k < dc; k++) s += (double)ho[k] * wr[k];
                logit[j] = stored(lm, (tt_real)((cw ? wc->cluster_b[j - c0] : wc->out_b[cl][j]) + s));
                mx = logit[j] > mx ? logit[j] : mx;
            }
            for (long j = 0; j < vc; j++) {
                sum += logit[j];
                z += exp(logit[j] - mx);
            }
            const double lse = mx + log(z), e = c ? 0.0 : eps;
            const long col = c ? t - l->lo[cl] : tc == 0 ? t : c0 + nc - tc;
            const double nll = lse - logit[col];
            res->nll_sum += weight * nll;
            res->loss_sum += weight * ((1.0 - e) * nll + e * (lse - sum / vc));
            if (!grads) continue;
            const double sw = scale * weight;
            for (long j = 0; j < vc; j++) {
                double q = sw * (exp(logit[j] - lse) - e / vc);
                if (j == col) q -= sw * (1.0 - e);
                dl[j] = stored(lm, (tt_real)q);
            }
            /* dW += dl^T h, db += dl, d h = dl W stored (the cluster columns' product adds to it) */
            double *acc = tt_xcalloc((size_t)dc * 2, sizeof *acc);
            for (long j = 0; j < vc; j++) {
                const bool cw = !c && j >= c0;
                const size_t at = cw ? (size_t)(j - c0) * d : (size_t)j * dc;
                const tt_real *wr = (cw ? wc->cluster_w : wc->out_w[cl]) + at;
                tt_real *gr = (cw ? g->cluster_w : g->out_w[cl]) + at;
                for (int k = 0; k < dc; k++) {
                    gr[k] += dl[j] * ho[k];
                    acc[(size_t)cw * dc + k] += (double)dl[j] * wr[k];
                }
                if (cw) g->cluster_b[j - c0] += dl[j];
                else g->out_b[cl][j] += dl[j];
            }
            for (int k = 0; k < dc; k++) {
                dh[k] = stored(lm, (tt_real)acc[k]);
                if (!c && nc) dh[k] = stored(lm, (tt_real)(dh[k] + acc[dc + k]));
            }
            free(acc);
            /* through the projection: dP += x^T d h, d x = d h P^T (stored) */
            tt_real *dxc = c ? tdx : dxr;
            for (int i = 0; i < d; i++) {
                double s = 0;
                if (pj)
                    for (int k = 0; k < dc; k++) {
                        s += (double)dh[k] * pj[(size_t)i * dc + k];
                        g->out_proj[cl][(size_t)i * dc + k] += xo[i] * dh[k];
                    }
                dxc[i] = pj ? stored(lm, (tt_real)s) : dh[i];
            }
            if (c)
                for (int i = 0; i < d; i++) dxr[i] = stored(lm, dxr[i] + tdx[i]);
        }
        res->scored += weight;
    }
    free(ho), free(dh), free(tdx), free(logit), free(dl);
}

static uint64_t stream(const tt_lm_opts *o, uint32_t site) { return tt_dropout_stream(o->step, site); }

/* The index of the batch's first row in the step's whole batch (tt_lm_opts' seq0). */
static uint64_t first_row(const tt_cpu_lm *lm, const tt_lm_opts *o)
{
    return (uint64_t)o->seq0 * (uint64_t)lm->layout->m.seq_len;
}

/* What every run starts with: views of this call's weights and gradients, a zero result; on the
 * bf16 path, the weights' bf16 copy (the GPU's tt_cast). */
static void run_begin(tt_cpu_lm *lm, tt_real *w, tt_real *grads, tt_lm_result *res)
{
    tt_view_free(&lm->w);
    tt_view_free(&lm->g);
    tt_view_make(lm->layout, w, &lm->w);
    if (grads) tt_view_make(lm->layout, grads, &lm->g);
    memset(res, 0, sizeof *res);
    if (lm->round == TT_PREC_BF16)
        for (size_t i = 0; i < lm->layout->n_floats; i++) lm->wr[i] = cpu_bf16(w[i]);
}

/* x0 = dropout(E[inputs] * sqrt(D)), dropout site 0 in both models. */
static void embed_fwd(tt_cpu_lm *lm, const int32_t *inputs, tt_real p, const tt_lm_opts *o)
{
    const int d = lm->layout->m.d_model;
    for (int i = 0; i < lm->rows; i++) embed(lm, inputs[i], lm->x0 + (size_t)i * d);
    cpu_dropout_fwd_at(lm->x0, lm->x0_mask, lm->x0, (long)lm->rows * d, p, o->seed, stream(o, 0),
                       first_row(lm, o) * d);
    store(lm, lm->x0, (long)lm->rows * d);
}

/* lm->dx holds d loss / d x0: the embedding tables' (and projections') gradients. */
static void embed_backward(tt_cpu_lm *lm, const int32_t *inputs, tt_real p)
{
    const int d = lm->layout->m.d_model;
    cpu_dropout_bwd(lm->d_emb, lm->dx, lm->x0_mask, (long)lm->rows * d, p);
    for (int i = 0; i < lm->rows; i++) embed_bwd(lm, inputs[i], lm->d_emb + (size_t)i * d);
}

/* The output layer on x_L and the loss, weighted by o->weight; with grads,
 * lm->dx = d loss / d x_L. */
static void score(tt_cpu_lm *lm, const tt_real *x, const int32_t *targets, const tt_lm_opts *o,
                  bool grads, tt_lm_result *res)
{
    double weights = 0;
    for (int i = 0; i < lm->rows; i++) weights += o->weight ? o->weight[i] : 1.0;
    const double scale = o->norm > 0 ? 1.0 / o->norm : weights > 0 ? 1.0 / weights : 0.0;
    if (lm->round == TT_PREC_FP32)
        output_layer(lm, x, targets, o->weight, o->label_smoothing, scale, grads, res);
    else
        output_layer_rounded(lm, x, targets, o->weight, o->label_smoothing, scale, grads, res);
}

/* The dropout streams of a layer's sites after its attention (see the top of this file). */
typedef struct {
    uint64_t attn_out, ff_hidden, ff_out;
    uint64_t row0; /* the batch's first row in the whole batch (first_row) */
} layer_streams;

/* What follows layer k's attention output a->y (stored), in both models:
 *   x1 = LN(x + drop(y));  x2 = LN(x1 + drop(W2 drop(relu(W1 x1 + b1)) + b2))
 * Rounding as a GPU path: the sums s1, s2 stored and normalized as stored
 * (templates/layernorm.cu's residual kernels), x1, x2 stored; W1 x1 stored before b1 is added
 * (templates/ffn_act.cu), and h and its dropout hd stored from the same fp32 value; W2 hd + b2
 * stored (b2 the epilogue's). */
static void layer_tail_fwd(tt_cpu_lm *lm, int k, const tt_real *x, tt_real p, uint64_t seed,
                           layer_streams st)
{
    const tt_model_spec *m = &lm->layout->m;
    struct tt_cpu_layer_acts *a = &lm->acts[k];
    const tt_layer_view *lw = &lm->w.layer[k], *lp = &wcopy(lm)->layer[k];
    const int rows = lm->rows, d = m->d_model, f = m->d_inner;
    const long rd = (long)rows * d, rf = (long)rows * f;
    cpu_dropout_fwd_at(a->s1, a->y_mask, a->y, rd, p, seed, st.attn_out, st.row0 * d);
    for (long i = 0; i < rd; i++) a->s1[i] += x[i];
    store(lm, a->s1, rd);
    cpu_layernorm_fwd(a->x1, a->mean1, a->rstd1, a->s1, lw->ln1_w, lw->ln1_b, rows, d);
    store(lm, a->x1, rd);
    if (lm->round == TT_PREC_FP32) {
        cpu_linear_fwd(a->h, a->x1, lw->ff1_w, lw->ff1_b, rows, d, f);
    } else {
        cpu_linear_fwd(a->h, a->x1, lp->ff1_w, NULL, rows, d, f);
        for (long i = 0; i < rf; i++) a->h[i] = stored(lm, a->h[i]) + lw->ff1_b[i % f];
    }
    cpu_relu_fwd(a->h, a->h, rf);
    cpu_dropout_fwd_at(a->hd, a->h_mask, a->h, rf, p, seed, st.ff_hidden, st.row0 * f);
    store(lm, a->h, rf);
    store(lm, a->hd, rf);
    cpu_linear_fwd(a->s2, a->hd, lp->ff2_w, wcopy(lm)->layer[k].ff2_b, rows, f, d);
    store(lm, a->s2, rd);
    cpu_dropout_fwd_at(a->s2, a->f_mask, a->s2, rd, p, seed, st.ff_out, st.row0 * d);
    for (long i = 0; i < rd; i++) a->s2[i] += a->x1[i];
    store(lm, a->s2, rd);
    cpu_layernorm_fwd(a->x2, a->mean2, a->rstd2, a->s2, lw->ln2_w, lw->ln2_b, rows, d);
    store(lm, a->x2, rd);
}

/* Its backward: from lm->dx = d x2 to lm->dx = d x through the residual alone and lm->dtmp = d y;
 * the caller adds the attention's d x into lm->dx. Rounding as a GPU path: the two gradients of
 * each LayerNorm's sum stored from the same fp32 value (the residual's, and its dropout's), d hd
 * = dy W2 stored, d z stored after db1 is summed from it (templates/ffn_act.cu), d x1 = dz W1 +
 * the residual's stored once (a product with beta 1). */
static void layer_tail_bwd(tt_cpu_lm *lm, int k, tt_real p)
{
    const tt_model_spec *m = &lm->layout->m;
    const struct tt_cpu_layer_acts *a = &lm->acts[k];
    const tt_layer_view *lw = &lm->w.layer[k], *lg = &lm->g.layer[k], *lp = &wcopy(lm)->layer[k];
    const int rows = lm->rows, d = m->d_model, f = m->d_inner;
    const long rd = (long)rows * d, rf = (long)rows * f;
    cpu_layernorm_bwd(lm->dtmp, lg->ln2_w, lg->ln2_b, lm->dx, a->s2, a->mean2, a->rstd2,
                      lw->ln2_w, rows, d); /* dtmp = d s2 */
    memcpy(lm->dx, lm->dtmp, (size_t)rd * sizeof(tt_real)); /* residual: d x1 so far */
    store(lm, lm->dx, rd);
    cpu_dropout_bwd(lm->dtmp, lm->dtmp, a->f_mask, rd, p);
    store(lm, lm->dtmp, rd);
    cpu_linear_bwd(lm->dff, lg->ff2_w, lg->ff2_b, lm->dtmp, a->hd,
                   lp->ff2_w, rows, f, d);
    store(lm, lm->dff, rf);
    cpu_dropout_bwd(lm->dff, lm->dff, a->h_mask, rf, p);
    cpu_relu_bwd(lm->dff, lm->dff, a->h, rf);
    if (lm->round == TT_PREC_FP32) {
        cpu_linear_bwd(lm->dtmp, lg->ff1_w, lg->ff1_b, lm->dff, a->x1, lw->ff1_w, rows, d, f);
    } else {
        cpu_linear_bwd(NULL, NULL, lg->ff1_b, lm->dff, NULL, NULL, rows, d, f);
        store(lm, lm->dff, rf);
        cpu_linear_bwd(lm->dtmp, lg->ff1_w, NULL, lm->dff,
                       a->x1, lp->ff1_w, rows, d, f);
    }
    for (long i = 0; i < rd; i++) lm->dx[i] = stored(lm, lm->dx[i] + lm->dtmp[i]); /* d x1 */
    cpu_layernorm_bwd(lm->dtmp, lg->ln1_w, lg->ln1_b, lm->dx, a->s1, a->mean1, a->rstd1,
                      lw->ln1_w, rows, d); /* dtmp = d s1 */
    memcpy(lm->dx, lm->dtmp, (size_t)rd * sizeof(tt_real)); /* residual: d x so far */
    store(lm, lm->dx, rd);
    cpu_dropout_bwd(lm->dtmp, lm->dtmp, a->y_mask, rd, p); /* d y */
    store(lm, lm->dtmp, rd);
}

static layer_streams tensorized_streams(const tt_cpu_lm *lm, const tt_lm_opts *o, int k)
{
    return (layer_streams){stream(o, 1 + 3 * k), stream(o, 2 + 3 * k), stream(o, 3 + 3 * k),
                           first_row(lm, o)};
}

/* What the rounding error of layer k's core_value gradient scales with (tt_cpu_lm's core_scale),
 * from d y (lm->dtmp) as the backward hands it to the attention and dg, the attention's gradient
 * of the core g. dg is a sum over the B N positions (b, i) of their terms, cpu_mla_bwd's d g
 * from that row of d y alone; where they cancel, dg is far smaller than they are, and a sum's
 * rounding errors (of the terms, or of the inputs they come from) scale with the terms'
 * root-sum-square, not with the sum. The core's backward then maps dg's error through its
 * Jacobian J (d theta = J dg: the softmax of each core's row), by J's RMS gain ||J||_F /
 * sqrt(R) for an error of no preferred direction. So: the larger of |d theta| and that gain
 * times the larger of |dg| and the terms' root-sum-square. */
static double core_scale(const tt_cpu_lm *lm, int k, const tt_real *dg, const tt_real *wo,
                         cpu_mla_shape shape)
{
    const tt_model_spec *m = &lm->layout->m;
    const struct tt_cpu_layer_acts *a = &lm->acts[k];
    const tt_real *theta = lm->w.layer[k].core;
    const int n = shape.n, r = shape.r, d = shape.d, h = m->cores;
    tt_real *dy = tt_xcalloc((size_t)n * d, sizeof *dy), *t = tt_xmalloc((size_t)r * sizeof *t);
    tt_real *dth = tt_xmalloc((size_t)h * r * sizeof *dth);
    cpu_mla_shape one = shape;
    one.batch = 1;
    double terms = 0, sum = 0, result = 0, gain = 0;
    for (int b = 0; b < shape.batch; b++)
        for (int i = 0; i < n; i++) {
            memcpy(dy + (size_t)i * d, lm->dtmp + ((size_t)b * n + i) * d, (size_t)d * sizeof *dy);
            memset(t, 0, (size_t)r * sizeof *t);
            cpu_mla_bwd(NULL, t, NULL, NULL, NULL, NULL, dy, a->qkv + (size_t)b * n * 3 * r, a->g,
                        wo, a->p, lm->w.u, lm->w.v, one);
            for (int e = 0; e < r; e++) terms += (double)t[e] * t[e];
            memset(dy + (size_t)i * d, 0, (size_t)d * sizeof *dy);
        }
    for (int e = 0; e < r; e++) sum += (double)dg[e] * dg[e];
    memset(dth, 0, (size_t)h * r * sizeof *dth);
    cpu_core_bwd(dth, dg, theta, h, r);
    for (int e = 0; e < h * r; e++) result += (double)dth[e] * dth[e];
    for (int c = 0; c < r; c++) { /* J's column c: the core's backward of the unit vector */
        memset(t, 0, (size_t)r * sizeof *t);
        t[c] = 1;
        memset(dth, 0, (size_t)h * r * sizeof *dth);
        cpu_core_bwd(dth, t, theta, h, r);
        for (int e = 0; e < h * r; e++) gain += (double)dth[e] * dth[e];
    }
    free(dy), free(t), free(dth);
    const double spread = sqrt(gain / r) * sqrt(terms > sum ? terms : sum);
    return sqrt(result) > spread ? sqrt(result) : spread;
}

void tt_cpu_lm_run(tt_cpu_lm *lm, tt_real *w, tt_real *grads, const int32_t *inputs,
                   const int32_t *targets, const tt_lm_opts *o, tt_lm_result *res)
{
    const tt_layout *l = lm->layout;
    const tt_model_spec *m = &l->m;
    TT_ASSERT(m->kind == TT_KIND_TENSORIZED);
    const int rows = lm->rows, d = m->d_model, r = m->rank, n = m->seq_len;
    const long rd = (long)rows * d;
    const tt_real p = o->train ? (tt_real)m->dropout : 0.f;
    const bool key = m->position == TT_POS_KEY;
    run_begin(lm, w, grads, res);
    const cpu_mla_shape shape = {lm->batch, n, r, d, m->causal};

    /* pe as the GPU keeps it (bf16: rounded), and the weights the attention's kernels read (its
     * storage type's copy of Wo; the core, u and v fp32) */
    const tt_real *pe = lm->round == TT_PREC_BF16 ? lm->pe_r : lm->pe;
    const tt_view *wc = wcopy(lm);

    /* forward: the projections and the attention's output stored */
    embed_fwd(lm, inputs, p, o);
    const tt_real *x = lm->x0;
    for (int k = 0; k < m->layers; k++) {
        const tt_layer_view *lw = &lm->w.layer[k];
        struct tt_cpu_layer_acts *a = &lm->acts[k];
        cpu_linear_fwd(a->qkv, x, wc->layer[k].qkv, NULL, rows, d, 3 * r);
        store(lm, a->qkv, rd / d * 3 * r);
        cpu_core_fwd(a->g, lw->core, m->cores, r);
        if (key) {
            cpu_linear_fwd(a->p, pe, wc->layer[k].r_net, NULL, n, d, r);
            store(lm, a->p, (long)n * r);
        }
        cpu_mla_fwd(a->y, a->qkv, a->g, wc->layer[k].o, a->p, lm->w.u, lm->w.v, shape);
        store(lm, a->y, rd);
        layer_tail_fwd(lm, k, x, p, o->seed, tensorized_streams(lm, o, k));
        x = a->x2;
    }
    score(lm, x, targets, o, grads != NULL, res);
    if (!grads) return;

    /* backward: lm->dx holds d loss / d x_L. Rounding as a GPU path: d qkv stored, dP (fp32)
     * stored before its product with pe (bf16), d x = d qkv Wqkv + the residual's stored once */
    for (int k = m->layers - 1; k >= 0; k--) {
        const tt_layer_view *lw = &lm->w.layer[k];
        const tt_layer_view *lg = &lm->g.layer[k];
        struct tt_cpu_layer_acts *a = &lm->acts[k];
        const tt_real *xin = k ? lm->acts[k - 1].x2 : lm->x0;
        layer_tail_bwd(lm, k, p);
        /* x1 = LN(x + drop(MLA(x))): lm->dtmp holds d MLA(x) */
        tt_real *dg = tt_xcalloc((size_t)r, sizeof *dg);
        tt_real *dp = key ? tt_xcalloc((size_t)n * r, sizeof *dp) : NULL;
        cpu_mla_bwd(lm->dqkv, dg, lg->o, dp, lm->g.u, lm->g.v, lm->dtmp, a->qkv, a->g,
                    wc->layer[k].o, a->p, lm->w.u, lm->w.v, shape);
        store(lm, lm->dqkv, rd / d * 3 * r);
        if (lm->core_scale) lm->core_scale[k] = core_scale(lm, k, dg, wc->layer[k].o, shape);
        cpu_core_bwd(lg->core, dg, lw->core, m->cores, r);
        if (key) {
            store(lm, dp, (long)n * r);
            cpu_linear_bwd(NULL, lg->r_net, NULL, dp,
                           pe, wc->layer[k].r_net, n, d, r);
        }
        cpu_linear_bwd(lm->dtmp, lg->qkv, NULL, lm->dqkv,
                       xin, wc->layer[k].qkv, rows, d, 3 * r);
        for (long i = 0; i < rd; i++) lm->dx[i] = stored(lm, lm->dx[i] + lm->dtmp[i]);
        free(dg);
        free(dp);
    }
    embed_backward(lm, inputs, p);
}

/* Transformer-XL's layer k keys: its memory rows of sequence b first, then the current ones. */
static tt_real *txl_mem(const tt_cpu_lm *lm, int k)
{
    const tt_model_spec *m = &lm->layout->m;
    return lm->mem + (size_t)k * lm->batch * lm->mlen * m->d_model;
}

int tt_cpu_txl_lm_run(tt_cpu_lm *lm, tt_real *w, tt_real *grads, const int32_t *inputs,
                      const int32_t *targets, const tt_real *mems_in, int mlen, tt_real *mems_out,
                      const tt_lm_opts *o, tt_lm_result *res)
{
    const tt_layout *l = lm->layout;
    const tt_model_spec *m = &l->m;
    TT_ASSERT(m->kind == TT_KIND_TXL);
    TT_ASSERT(mlen >= 0 && mlen <= m->mem_len && (mlen == 0 || mems_in));
    const int rows = lm->rows, d = m->d_model, n = m->seq_len, klen = mlen + n, b = lm->batch;
    const long rd = (long)rows * d;
    const tt_real p = o->train ? (tt_real)m->dropout : 0.f;
    run_begin(lm, w, grads, res);

    /* The memories are copied: mems_out may be mems_in, and the backward needs them. */
    lm->mlen = mlen;
    if (mlen) memcpy(lm->mem, mems_in, (size_t)m->layers * b * mlen * d * sizeof(tt_real));
    cpu_txl_pos_emb(lm->pe, klen, d, m->clamp_len);
    cpu_dropout_fwd(lm->pe, lm->pe_mask, lm->pe, (long)klen * d, p, o->seed, stream(o, 1));
    store(lm, lm->pe, (long)klen * d);
    const cpu_txl_shape shape = {b, n, mlen, d, m->n_head, m->d_head,
                                 o->train ? (tt_real)m->dropatt : 0.f, o->seed, 0,
                                 (uint64_t)o->seq0 * m->n_head * n * klen};
    const bool bf16 = lm->round == TT_PREC_BF16;
    const cpu_txl_round rnd = !bf16                          ? CPU_TXL_EXACT
                              : tt_txl_fuses_at(m, lm->round) ? CPU_TXL_BF16_FUSED
                                                              : CPU_TXL_BF16;
    const tt_view *wc = wcopy(lm); /* the attention's products read the bf16 copy; u, v fp32 */

    /* forward */
    embed_fwd(lm, inputs, p, o);
    const tt_real *x = lm->x0;
    for (int k = 0; k < m->layers; k++) {
        const tt_layer_view *lw = &wc->layer[k];
        struct tt_cpu_layer_acts *a = &lm->acts[k];
        cpu_txl_shape s = shape;
        s.stream = stream(o, 3 + 4 * k);
        const cpu_txl_weights tw = {lw->qkv, lw->r_net, lw->o, lm->w.u, lm->w.v};
        cpu_txl_attn_fwd_as(a->y, x, mlen ? txl_mem(lm, k) : NULL, lm->pe, tw, s, rnd);
        const layer_streams st = {stream(o, 2 + 4 * k), stream(o, 4 + 4 * k), stream(o, 5 + 4 * k),
                                  first_row(lm, o)};
        layer_tail_fwd(lm, k, x, p, o->seed, st);
        x = a->x2;
    }

    /* mem_l <- the last M rows of concat(mem_l, input of layer l), per sequence */
    const int keep = klen < m->mem_len ? klen : m->mem_len;
    if (mems_out)
        for (int k = 0; k < m->layers; k++) {
            const tt_real *in = k ? lm->acts[k - 1].x2 : lm->x0, *mem = txl_mem(lm, k);
            for (int s = 0; s < b; s++)
                for (int j = klen - keep; j < klen; j++) {
                    const tt_real *src = j < mlen ? mem + ((size_t)s * mlen + j) * d
                                                  : in + ((size_t)s * n + j - mlen) * d;
                    tt_real *dst = mems_out + (((size_t)k * b + s) * keep + j - (klen - keep)) * d;
                    memcpy(dst, src, (size_t)d * sizeof *dst);
                }
        }

    score(lm, x, targets, o, grads != NULL, res);
    if (!grads) return keep;

    /* backward: lm->dx holds d loss / d x_L */
    double uv_terms[2] = {0, 0};
    for (int k = m->layers - 1; k >= 0; k--) {
        const tt_layer_view *lw = &wc->layer[k];
        const tt_layer_view *lg = &lm->g.layer[k];
        const tt_real *xin = k ? lm->acts[k - 1].x2 : lm->x0;
        layer_tail_bwd(lm, k, p);
        /* x1 = LN(x + drop(attn(x, mem))): lm->dtmp holds d attn */
        cpu_txl_shape s = shape;
        s.stream = stream(o, 3 + 4 * k);
        tt_real *dh = tt_xmalloc((size_t)rd * sizeof *dh);
        const cpu_txl_weights tw = {lw->qkv, lw->r_net, lw->o, lm->w.u, lm->w.v};
        cpu_txl_attn_bwd_as(dh,
                            (cpu_txl_grads){lg->qkv, lg->r_net, lg->o, lm->g.u, lm->g.v, uv_terms},
                            lm->dtmp, xin, mlen ? txl_mem(lm, k) : NULL, lm->pe, tw, s, rnd);
        for (long i = 0; i < rd; i++) lm->dx[i] = stored(lm, lm->dx[i] + dh[i]);
        free(dh);
    }
    if (lm->uv_scale) {
        const tt_real *g[2] = {lm->g.u, lm->g.v};
        for (int t = 0; t < 2; t++) {
            double norm = 0;
            for (int e = 0; e < m->n_head * m->d_head; e++) norm += (double)g[t][e] * g[t][e];
            lm->uv_scale[t] = sqrt(fmax(norm, uv_terms[t]));
        }
    }
    embed_backward(lm, inputs, p);
    return keep;
}

/* --- using a trained model (libtt) ------------------------------------------------------------ */

const tt_real *tt_cpu_lm_hidden(const tt_cpu_lm *lm)
{
    return lm->acts[lm->layout->m.layers - 1].x2;
}

/* The log-sum-exp of logit[0..n), whose largest is mx. */
static double log_sum_exp(const double *logit, long n, double mx)
{
    double z = 0;
    for (long j = 0; j < n; j++) z += exp(logit[j] - mx);
    return mx + log(z);
}

void tt_lm_logprobs(const tt_layout *l, const tt_view *w, const tt_real *x, double *out)
{
    const int nc = l->n_clusters - 1;
    const long c0 = l->hi[0];
    tt_real *hbuf = tt_xmalloc((size_t)l->m.d_model * sizeof *hbuf);
    double *logit = tt_xmalloc(most_logits(l) * sizeof *logit);
    const double lse = log_sum_exp(logit, head_columns(l),
                                   head_logits(l, w, cluster_input(l, w, 0, x, hbuf), logit));
    for (long j = 0; j < c0; j++) out[j] = logit[j] - lse;
    double *cluster = tt_xmalloc((size_t)(nc ? nc : 1) * sizeof *cluster);
    for (int c = 1; c <= nc; c++) cluster[c - 1] = logit[c0 + nc - c] - lse;
    for (int c = 1; c <= nc; c++) {
        const long vc = l->hi[c] - l->lo[c];
        const double tlse =
            log_sum_exp(logit, vc, tail_logits(l, w, c, cluster_input(l, w, c, x, hbuf), logit));
        for (long j = 0; j < vc; j++) out[l->lo[c] + j] = cluster[c - 1] + logit[j] - tlse;
    }
    free(cluster), free(logit), free(hbuf);
}

double tt_lm_logprob(const tt_layout *l, const tt_view *w, const tt_real *x, long t)
{
    const int nc = l->n_clusters - 1, tc = tt_cluster_of(l, t);
    const long c0 = l->hi[0];
    tt_real *hbuf = tt_xmalloc((size_t)l->m.d_model * sizeof *hbuf);
    double *logit = tt_xmalloc(most_logits(l) * sizeof *logit);
    const double lse = log_sum_exp(logit, head_columns(l),
                                   head_logits(l, w, cluster_input(l, w, 0, x, hbuf), logit));
    double lp = logit[tc == 0 ? t : c0 + nc - tc] - lse;
    if (tc > 0) {
        const double tlse = log_sum_exp(
            logit, l->hi[tc] - l->lo[tc], tail_logits(l, w, tc, cluster_input(l, w, tc, x, hbuf), logit));
        lp += logit[t - l->lo[tc]] - tlse;
    }
    free(logit), free(hbuf);
    return lp;
}

/* The tensorized model a row at a time (libtt's window as it fills; see cpu_model.h). */
struct tt_cpu_rows {
    tt_cpu_lm lm; /* batch 1, for the weights' views, the embedding and pe */
    int len;
    tt_real *qkv;         /* [L][N][3R] the rows so far */
    tt_real *g, *p;       /* [L][R] the cores; [L][N][R] P = Wr pe (position: key, else NULL) */
    tt_real **wt;         /* [L] Wo transposed */
    tt_real *x, *y, *x1, *h, *s2, *stat; /* one row's */
    double *scratch;                     /* cpu_mla_fwd_row's */
};

tt_cpu_rows *tt_cpu_rows_open(const tt_layout *l, tt_real *w)
{
    const tt_model_spec *m = &l->m;
    TT_ASSERT(m->kind == TT_KIND_TENSORIZED && m->causal);
    const int L = m->layers, n = m->seq_len, r = m->rank, d = m->d_model;
    tt_cpu_rows *c = tt_xcalloc(1, sizeof *c);
    tt_cpu_lm_init(&c->lm, l, 1);
    tt_view_make(l, w, &c->lm.w);
    c->qkv = tt_xcalloc((size_t)L * n * 3 * r, sizeof *c->qkv);
    c->g = tt_xcalloc((size_t)L * r, sizeof *c->g);
    c->wt = tt_xcalloc((size_t)L, sizeof *c->wt);
    if (m->position == TT_POS_KEY) c->p = tt_xcalloc((size_t)L * n * r, sizeof *c->p);
    for (int k = 0; k < L; k++) {
        const tt_layer_view *lw = &c->lm.w.layer[k];
        cpu_core_fwd(c->g + (size_t)k * r, lw->core, m->cores, r);
        if (c->p) cpu_linear_fwd(c->p + (size_t)k * n * r, c->lm.pe, lw->r_net, NULL, n, d, r);
        c->wt[k] = cpu_mla_wo_t(lw->o, n, d);
    }
    c->x = tt_xmalloc((size_t)d * sizeof *c->x);
    c->y = tt_xmalloc((size_t)d * sizeof *c->y);
    c->x1 = tt_xmalloc((size_t)d * sizeof *c->x1);
    c->s2 = tt_xmalloc((size_t)d * sizeof *c->s2);
    c->h = tt_xmalloc((size_t)m->d_inner * sizeof *c->h);
    c->stat = tt_xmalloc(2 * sizeof *c->stat);
    c->scratch = tt_xmalloc(cpu_mla_row_scratch((cpu_mla_shape){1, n, r, d, true}) *
                            sizeof *c->scratch);
    return c;
}

void tt_cpu_rows_reset(tt_cpu_rows *c) { c->len = 0; }

/* What tt_cpu_lm_run computes for row len of each layer without dropout, in its order: the
 * qkv row, the attention's row (cpu_mla_fwd_row), then layer_tail_fwd's sums and norms. */
const tt_real *tt_cpu_rows_push(tt_cpu_rows *c, int32_t token)
{
    const tt_layout *l = c->lm.layout;
    const tt_model_spec *m = &l->m;
    const int n = m->seq_len, r = m->rank, d = m->d_model, f = m->d_inner, i = c->len;
    TT_ASSERT(i < n);
    const cpu_mla_shape one = {1, n, r, d, true};
    embed(&c->lm, token, c->x);
    for (int k = 0; k < m->layers; k++) {
        const tt_layer_view *lw = &c->lm.w.layer[k];
        tt_real *seq = c->qkv + (size_t)k * n * 3 * r;
        cpu_linear_fwd(seq + (size_t)i * 3 * r, c->x, lw->qkv, NULL, 1, d, 3 * r);
        cpu_mla_fwd_row(c->y, seq, i, c->g + (size_t)k * r, c->wt[k],
                        c->p ? c->p + (size_t)k * n * r : NULL, c->lm.w.u, c->lm.w.v, one,
                        c->scratch);
        for (int e = 0; e < d; e++) c->y[e] += c->x[e]; /* s1 = y + x */
        cpu_layernorm_fwd(c->x1, c->stat, c->stat + 1, c->y, lw->ln1_w, lw->ln1_b, 1, d);
        cpu_linear_fwd(c->h, c->x1, lw->ff1_w, lw->ff1_b, 1, d, f);
        cpu_relu_fwd(c->h, c->h, f);
        cpu_linear_fwd(c->s2, c->h, lw->ff2_w, lw->ff2_b, 1, f, d);
        for (int e = 0; e < d; e++) c->s2[e] += c->x1[e];
        cpu_layernorm_fwd(c->x, c->stat, c->stat + 1, c->s2, lw->ln2_w, lw->ln2_b, 1, d);
    }
    c->len++;
    return c->x;
}

void tt_cpu_rows_close(tt_cpu_rows *c)
{
    if (!c) return;
    for (int k = 0; k < c->lm.layout->m.layers; k++) free(c->wt[k]);
    tt_view_free(&c->lm.w);
    tt_cpu_lm_free(&c->lm);
    free(c->qkv), free(c->g), free(c->p), free(c->wt);
    free(c->x), free(c->y), free(c->x1), free(c->s2), free(c->h), free(c->stat), free(c->scratch);
    free(c);
}

