/* gpu/sum_parts.c: the parts a multi-GPU step sums its gradients in, for every shipped spec and
 * variants of their output layers (tied and untied, one table or projections, the embedding's
 * backward over the whole batch or not). A wrong part makes every rank step from a different
 * gradient, which only a run on several GPUs shows; here the plan itself is checked against
 * what writes each gradient and when:
 *   - every float of every parameter is in exactly one part, but the untied table of
 *     emb_global, which no part holds (every rank computes it for the whole batch);
 *   - layer k's bucket holds its weight matrices and nothing of another tensor;
 *   - output cluster c's part holds only what its backward writes (its rows of the table or
 *     its weight, its bias, the head's cluster logits' weight and bias, its projection);
 *   - what the embedding's backward adds into on every rank before the rest is summed (the
 *     table or tables and projections when that backward is this rank's) is in the rest, and
 *     the tied table of emb_global is in the output clusters' parts, each cluster its rows. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model.h"
#include "spec.h"
#include "sum_parts.h"
#include "testutil.h"

typedef struct {
    const char *name;
    const tt_spans *s;
} named_spans;

/* Of [at, at + len), the floats s holds. */
static size_t overlap(const tt_spans *s, size_t at, size_t len)
{
    size_t n = 0;
    for (int i = 0; i < s->n; i++) {
        const size_t a = s->at[i] > at ? s->at[i] : at;
        const size_t b = s->at[i] + s->len[i] < at + len ? s->at[i] + s->len[i] : at + len;
        if (a < b) n += b - a;
    }
    return n;
}

static size_t total(const tt_spans *s)
{
    size_t n = 0;
    for (int i = 0; i < s->n; i++) n += s->len[i];
    return n;
}

/* Every span of s lies inside one of the n ranges [at[i], at[i] + len[i]). */
static void expect_inside(const char *what, const tt_spans *s, const size_t *at, const size_t *len,
                          int n)
{
    size_t in = 0;
    for (int i = 0; i < n; i++) in += overlap(s, at[i], len[i]);
    if (in != total(s))
        fail_msg("%s: %zu of its %zu floats lie outside what it may hold", what, total(s) - in,
                 total(s));
}

static int by_at(const void *a, const void *b)
{
    const size_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

static void check(const tt_model_spec *m, long vocab, bool txl, bool emb_global, const char *what)
{
    char err[512];
    tt_layout l;
    if (tt_layout_build(m, vocab, &l, err, sizeof err) != 0) fail_msg("%s: %s", what, err);
    emb_global = emb_global && !l.proj; /* gpu_model.c's rule: one table only */
    /* the views' pointers only: the pages are never touched */
    tt_real *base = calloc(l.n_floats, sizeof *base);
    assert_non_null(base);
    tt_view g;
    tt_view_make(&l, base, &g);
    tt_sum_parts p;
    tt_sum_parts_plan(&p, &l, &g, base, txl, emb_global);

    /* all parts, and no two spans of them overlapping */
    const int np = l.m.layers + l.n_clusters + 2;
    named_spans *all = calloc((size_t)np, sizeof *all);
    char (*names)[32] = calloc((size_t)np, sizeof *names);
    int k = 0;
    for (int i = 0; i < l.m.layers; i++, k++)
        snprintf(names[k], 32, "bucket %d", i), all[k] = (named_spans){names[k], &p.bucket[i]};
    for (int c = 0; c < l.n_clusters; c++, k++)
        snprintf(names[k], 32, "cluster %d", c), all[k] = (named_spans){names[k], &p.cluster[c]};
    all[k++] = (named_spans){"early", &p.early};
    all[k++] = (named_spans){"rest", &p.rest};
    size_t nspans = 0;
    for (int i = 0; i < np; i++) nspans += (size_t)all[i].s->n;
    size_t(*sp)[2] = calloc(nspans ? nspans : 1, sizeof *sp);
    size_t j = 0;
    for (int i = 0; i < np; i++)
        for (int q = 0; q < all[i].s->n; q++) sp[j][0] = all[i].s->at[q], sp[j++][1] = all[i].s->len[q];
    qsort(sp, nspans, sizeof *sp, by_at);
    for (size_t q = 1; q < nspans; q++)
        if (sp[q - 1][0] + sp[q - 1][1] > sp[q][0])
            fail_msg("%s: two parts hold floats %zu..%zu", what, sp[q][0], sp[q - 1][0] + sp[q - 1][1]);

    /* every parameter whole in the parts, but the untied table of emb_global in none */
    const tt_param *table = tt_layout_find(&l, "word_emb.emb_layers.0.weight");
    for (int i = 0; i < l.n_params; i++) {
        const tt_param *pr = &l.params[i];
        size_t in = 0;
        for (int q = 0; q < np; q++) in += overlap(all[q].s, pr->offset, pr->numel);
        const size_t want = emb_global && !m->tie_weights && pr == table ? 0 : pr->numel;
        if (in != want)
            fail_msg("%s: %s: %zu of its %zu floats summed, want %zu", what, pr->name, in,
                     pr->numel, want);
    }

    /* layer k's bucket: its weight matrices (Transformer-XL's r_net too), nothing else */
    static const char *const mats[] = {"dec_attn.qkv_net.weight", "dec_attn.o_net.weight",
                                       "pos_ff.CoreNet.0.weight", "pos_ff.CoreNet.3.weight",
                                       "dec_attn.r_net.weight"};
    for (int i = 0; i < l.m.layers; i++) {
        size_t at[5], len[5];
        int n = 0;
        for (int b = 0; b < (txl ? 5 : 4); b++) {
            char name[96];
            snprintf(name, sizeof name, "layers.%d.%s", i, mats[b]);
            const tt_param *pr = tt_layout_find(&l, name);
            if (!pr) continue;
            at[n] = pr->offset, len[n++] = pr->numel;
            if (overlap(&p.bucket[i], pr->offset, pr->numel) != pr->numel)
                fail_msg("%s: %s not in its layer's bucket", what, name);
        }
        char name[256];
        snprintf(name, sizeof name, "%s: bucket %d", what, i);
        expect_inside(name, &p.bucket[i], at, len, n);
    }

    /* cluster c's part: only what its backward writes */
    for (int c = 0; c < l.n_clusters; c++) {
        const size_t vc = (size_t)(l.hi[c] - l.lo[c]), nc = (size_t)(l.n_clusters - 1);
        size_t at[5], len[5];
        int n = 0;
        at[n] = (size_t)(g.out_w[c] - base), len[n++] = vc * (size_t)l.dim[c];
        at[n] = (size_t)(g.out_b[c] - base), len[n++] = vc;
        if (c == 0 && nc) {
            at[n] = (size_t)(g.cluster_w - base), len[n++] = nc * (size_t)l.m.d_model;
            at[n] = (size_t)(g.cluster_b - base), len[n++] = nc;
        }
        if (l.proj) at[n] = (size_t)(g.out_proj[c] - base), len[n++] = (size_t)l.m.d_model * l.dim[c];
        char name[256];
        snprintf(name, sizeof name, "%s: cluster %d", what, c);
        expect_inside(name, &p.cluster[c], at, len, n);
        /* the tied table of emb_global: each cluster its rows, summed right after its backward */
        if (emb_global && m->tie_weights &&
            overlap(&p.cluster[c], at[0], len[0]) != len[0])
            fail_msg("%s: cluster %d's rows of the tied table not in its part", what, c);
    }

    /* what the embedding's backward on this rank adds into is summed in the rest, after it */
    if (!emb_global)
        for (int i = 0; i < l.n_params; i++) {
            const tt_param *pr = &l.params[i];
            if (strncmp(pr->name, "word_emb.", 9)) continue;
            if (overlap(&p.rest, pr->offset, pr->numel) != pr->numel)
                fail_msg("%s: %s, which the embedding's backward adds into, is summed before it",
                         what, pr->name);
        }

    free(sp), free(all), free(names);
    tt_sum_parts_free(&p);
    tt_view_free(&g);
    free(base);
    tt_layout_free(&l);
}

static void check_spec(const char *file)
{
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/specs/%s", TT_SOURCE_DIR, file);
    tt_spec s;
    if (tt_spec_load(path, &s, err, sizeof err) != 0) fail_msg("%s", err);
    const bool txl = s.model.kind == TT_KIND_TXL;
    for (int tie = 0; tie < 2; tie++)
        for (int eg = 0; eg < 2; eg++) {
            tt_model_spec m = s.model;
            m.tie_weights = tie;
            char what[160];
            snprintf(what, sizeof what, "%s, %s, emb_global %d", file, tie ? "tied" : "untied", eg);
            check(&m, s.model.vocab ? s.model.vocab : 50000, txl, eg, what); /* vocab: data */
        }
    tt_spec_free(&s);
}

static void test_shipped_specs(void **state)
{
    (void)state;
    static const char *const files[] = {"wt103.yaml", "ptb.yaml", "lm1b.yaml", "tiny.yaml",
                                        "wt2.yaml", "txl-ptb.yaml", "txl-wt103-base.yaml"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) check_spec(files[i]);
}

/* The span arithmetic on its own: merging, and a part cut out of the middle of a span. */
static void test_spans(void **state)
{
    (void)state;
    tt_spans s = {0};
    tt_spans_add(&s, 0, 10);
    tt_spans_add(&s, 10, 5); /* adjacent: merged */
    tt_spans_add(&s, 20, 5);
    assert_int_equal(s.n, 2);
    assert_int_equal(s.len[0], 15);
    assert_int_equal(total(&s), 20);
    assert_int_equal(overlap(&s, 12, 10), 5);
    tt_spans_free(&s);
    assert_int_equal(s.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spans),
        cmocka_unit_test(test_shipped_specs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
