/* The parts of a multi-GPU step's sums: gpu/sum_parts.h. */
#include "sum_parts.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

void tt_spans_add(tt_spans *s, size_t at, size_t len)
{
    if (s->n && s->at[s->n - 1] + s->len[s->n - 1] == at) {
        s->len[s->n - 1] += len;
        return;
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 8;
        s->at = tt_xrealloc(s->at, (size_t)s->cap * sizeof *s->at);
        s->len = tt_xrealloc(s->len, (size_t)s->cap * sizeof *s->len);
    }
    s->at[s->n] = at, s->len[s->n] = len, s->n++;
}

void tt_spans_free(tt_spans *s)
{
    free(s->at), free(s->len);
    *s = (tt_spans){0};
}

/* Into to, what s holds of [at, at + len). */
static void add_overlap(tt_spans *to, const tt_spans *s, size_t at, size_t len)
{
    for (int i = 0; i < s->n; i++) {
        const size_t a = s->at[i] > at ? s->at[i] : at;
        const size_t b = s->at[i] + s->len[i] < at + len ? s->at[i] + s->len[i] : at + len;
        if (a < b) tt_spans_add(to, a, b - a);
    }
}

/* s without [at, at + len) (a span it falls inside split in two). */
static void cut_span(tt_spans *s, size_t at, size_t len)
{
    tt_spans kept = {0};
    for (int i = 0; i < s->n; i++) {
        const size_t a = s->at[i], b = a + s->len[i];
        if (b <= at || a >= at + len) {
            tt_spans_add(&kept, a, b - a);
            continue;
        }
        if (a < at) tt_spans_add(&kept, a, at - a);
        if (b > at + len) tt_spans_add(&kept, at + len, b - at - len);
    }
    tt_spans_free(s);
    *s = kept;
}

/* The weight matrices of a layer whose gradients are whole once that layer's backward has run
 * on both streams: its products write them there and nothing writes them again in the step
 * (the biases and LayerNorms are summed after the last layer's backward, the cores after that,
 * the tensorized model's r_net with the cores). Transformer-XL's r_net is its layer's. */
static const char *const bucket_names[] = {"dec_attn.qkv_net.weight", "dec_attn.o_net.weight",
                                           "pos_ff.CoreNet.0.weight", "pos_ff.CoreNet.3.weight",
                                           "dec_attn.r_net.weight"};

/* Which part parameter p's gradient is summed in: a layer's bucket (its k), the output layer's
 * (early: whole once the output layer's backward has run, as nothing later writes it), none
 * (the one table's embedding, untied, which every rank computes for the whole batch), or the
 * rest. With one table the tied embedding is the output layer's (the embedding's backward adds
 * into it after the sum); with projections it stays in the rest, as the embedding's backward
 * adds into it on every rank. */
enum { PART_EARLY = -1, PART_NONE = -2, PART_REST = -3 };
static int part_of(const tt_layout *l, const tt_param *p, bool txl, bool emb_global)
{
    const int kinds = txl ? 5 : 4;
    int k, at = 0;
    if (sscanf(p->name, "layers.%d.%n", &k, &at) == 1 && at > 0 && k >= 0 && k < l->m.layers) {
        for (int b = 0; b < kinds; b++)
            if (!strcmp(p->name + at, bucket_names[b])) return k;
        return PART_REST;
    }
    if (!strncmp(p->name, "crit.", 5)) return PART_EARLY;
    if (emb_global && !strcmp(p->name, "word_emb.emb_layers.0.weight"))
        return l->m.tie_weights ? PART_EARLY : PART_NONE;
    return PART_REST;
}

void tt_sum_parts_plan(tt_sum_parts *s, const tt_layout *l, const tt_view *g, const tt_real *base,
                       bool txl, bool emb_global)
{
    *s = (tt_sum_parts){.layers = l->m.layers};
    s->bucket = tt_xcalloc((size_t)l->m.layers, sizeof *s->bucket);
    for (int i = 0; i < l->n_params; i++) {
        const tt_param *p = &l->params[i];
        const int part = part_of(l, p, txl, emb_global);
        if (part >= 0) tt_spans_add(&s->bucket[part], p->offset, p->numel);
        if (part == PART_EARLY) tt_spans_add(&s->early, p->offset, p->numel);
        if (part == PART_REST) tt_spans_add(&s->rest, p->offset, p->numel);
    }
    /* each output cluster's part: what the early part holds of the gradients its backward writes
     * (its rows of the table or its weight, its biases; the head's also the cluster logits';
     * with projections, its projection) */
    for (int c = 0; c < l->n_clusters; c++) {
        const size_t vc = (size_t)(l->hi[c] - l->lo[c]), nc = (size_t)(l->n_clusters - 1);
        const struct {
            const tt_real *at;
            size_t n;
        } t[] = {{g->out_w[c], vc * (size_t)l->dim[c]},
                 {g->out_b[c], vc},
                 {c ? NULL : g->cluster_w, nc * (size_t)l->m.d_model},
                 {c ? NULL : g->cluster_b, nc},
                 {l->proj ? g->out_proj[c] : NULL, (size_t)l->m.d_model * (size_t)l->dim[c]}};
        for (size_t i = 0; i < sizeof t / sizeof *t; i++)
            if (t[i].at && t[i].n)
                add_overlap(&s->cluster[c], &s->early, (size_t)(t[i].at - base), t[i].n);
    }
    for (int c = 0; c < l->n_clusters; c++)
        for (int i = 0; i < s->cluster[c].n; i++)
            cut_span(&s->early, s->cluster[c].at[i], s->cluster[c].len[i]);
}

void tt_sum_parts_free(tt_sum_parts *s)
{
    for (int k = 0; k < s->layers && s->bucket; k++) tt_spans_free(&s->bucket[k]);
    free(s->bucket);
    for (int c = 0; c < TT_MAX_CLUSTERS; c++) tt_spans_free(&s->cluster[c]);
    tt_spans_free(&s->early), tt_spans_free(&s->rest);
    *s = (tt_sum_parts){0};
}
