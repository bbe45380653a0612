/* Transformer-XL's parameter layout (runtime/model.c) against kimiyoung's MemTransformerLM
 * state_dict (MODEL.md section 4) for specs/txl-ptb.yaml and specs/txl-wt103-base.yaml: every kind
 * of tensor by name and shape, the total against gen/report.c's count, tied and untied output
 * layers, the views, the initial values, a checkpoint round trip, and the one-line refusal of the
 * engine while the Transformer-XL LM does not exist. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "engine.h"
#include "model.h"
#include "report.h"
#include "spec.h"
#include "testutil.h"
#include "util.h"

static void load_spec(const char *name, tt_spec *s)
{
    char path[512], err[512];
    snprintf(path, sizeof path, "%s/specs/%s", TT_SOURCE_DIR, name);
    if (tt_spec_load(path, s, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(s->model.kind, TT_KIND_TXL);
}

static void build(const tt_spec *s, tt_layout *l)
{
    char err[512];
    if (tt_spec_check_vocab(s, s->model.vocab, err, sizeof err) != 0) fail_msg("%s", err);
    if (tt_layout_build(&s->model, s->model.vocab, l, err, sizeof err) != 0) fail_msg("%s", err);
}

/* The tensor `name` has this shape (ndim 1: d1 ignored). */
static const tt_param *expect(const tt_layout *l, const char *name, int ndim, int64_t d0,
                              int64_t d1)
{
    const tt_param *p = tt_layout_find(l, name);
    if (!p) fail_msg("no tensor %s", name);
    if (p->ndim != ndim || p->shape[0] != d0 || (ndim > 1 && p->shape[1] != d1))
        fail_msg("%s: shape [%lld, %lld] (ndim %d), want [%lld, %lld] (ndim %d)", name,
                 (long long)p->shape[0], (long long)p->shape[1], p->ndim, (long long)d0,
                 (long long)d1, ndim);
    return p;
}

static void expect_absent(const tt_layout *l, const char *name)
{
    if (tt_layout_find(l, name)) fail_msg("%s should not be in the layout", name);
}

/* Every name, shape and count a spec implies; the total equals the report's. */
static void check_layout(const tt_spec *s, const tt_layout *l)
{
    const tt_model_spec *m = &s->model;
    const int64_t d = m->d_model, f = m->d_inner, hd = (int64_t)m->n_head * m->d_head;
    const long v = m->vocab;
    char name[96];
    const int tables = m->div_val > 1 ? m->n_cutoffs + 1 : 1;
    for (int i = 0; i < tables; i++) {
        const int64_t rows = tables > 1 ? l->hi[i] - l->lo[i] : v;
        snprintf(name, sizeof name, "word_emb.emb_layers.%d.weight", i);
        expect(l, name, 2, rows, l->dim[i]);
        snprintf(name, sizeof name, "crit.out_layers.%d.bias", i);
        expect(l, name, 1, rows, 0);
        snprintf(name, sizeof name, "crit.out_layers.%d.weight", i);
        if (m->tie_weights)
            expect_absent(l, name);
        else
            expect(l, name, 2, rows, l->dim[i]);
        if (m->div_val > 1) {
            snprintf(name, sizeof name, "word_emb.emb_projs.%d", i);
            expect(l, name, 2, d, l->dim[i]);
            snprintf(name, sizeof name, "crit.out_projs.%d", i);
            if (m->tie_weights)
                expect_absent(l, name);
            else
                expect(l, name, 2, d, l->dim[i]);
        }
    }
    if (m->div_val == 1) { /* d_proj = d_embed: no projection */
        expect_absent(l, "word_emb.emb_projs.0");
        expect_absent(l, "crit.out_projs.0");
    }
    if (m->n_cutoffs) {
        expect(l, "crit.cluster_weight", 2, m->n_cutoffs, d);
        expect(l, "crit.cluster_bias", 1, m->n_cutoffs, 0);
    } else {
        expect_absent(l, "crit.cluster_weight");
    }
    expect(l, "r_w_bias", 2, m->n_head, m->d_head);
    expect(l, "r_r_bias", 2, m->n_head, m->d_head);
    for (int k = 0; k < m->layers; k++) {
        struct {
            const char *suffix;
            int ndim;
            int64_t d0, d1;
        } want[] = {
            {"dec_attn.qkv_net.weight", 2, 3 * hd, d}, {"dec_attn.r_net.weight", 2, hd, d},
            {"dec_attn.o_net.weight", 2, d, hd},       {"dec_attn.layer_norm.weight", 1, d, 0},
            {"dec_attn.layer_norm.bias", 1, d, 0},     {"pos_ff.CoreNet.0.weight", 2, f, d},
            {"pos_ff.CoreNet.0.bias", 1, f, 0},        {"pos_ff.CoreNet.3.weight", 2, d, f},
            {"pos_ff.CoreNet.3.bias", 1, d, 0},        {"pos_ff.layer_norm.weight", 1, d, 0},
            {"pos_ff.layer_norm.bias", 1, d, 0},
        };
        for (size_t j = 0; j < sizeof want / sizeof want[0]; j++) {
            snprintf(name, sizeof name, "layers.%d.%s", k, want[j].suffix);
            expect(l, name, want[j].ndim, want[j].d0, want[j].d1);
        }
        snprintf(name, sizeof name, "layers.%d.dec_attn.core_value", k);
        expect_absent(l, name);
        snprintf(name, sizeof name, "layers.%d.dec_attn.r_w_bias", k); /* shared, not per layer */
        expect_absent(l, name);
    }
    snprintf(name, sizeof name, "layers.%d.dec_attn.qkv_net.weight", m->layers);
    expect_absent(l, name);

    /* The table: 11 tensors a layer and the rest, no name twice, no overlap, inside n_floats. */
    const int per_table = 2 + (m->div_val > 1) + !m->tie_weights * (1 + (m->div_val > 1));
    const int rest = tables * per_table
                     + 2 * (m->n_cutoffs > 0) + 2;
    assert_int_equal(l->n_params, 11 * m->layers + rest);
    double total = 0;
    for (int i = 0; i < l->n_params; i++) {
        const tt_param *p = &l->params[i];
        total += (double)p->numel;
        assert_true(p->offset % 16 == 0);
        assert_true(p->offset + p->numel <= l->n_floats);
        if (i) assert_true(l->params[i - 1].offset + l->params[i - 1].numel <= p->offset);
        assert_ptr_equal(tt_layout_find(l, p->name), p);
    }
    tt_costs c;
    tt_costs_compute(s, v, &c);
    if (total != c.params_total)
        fail_msg("layout holds %.0f parameters, gen/report.c counts %.0f", total, c.params_total);
    print_message("  %s: %d tensors, %.0f parameters (= report)\n", s->path, l->n_params, total);
}

/* The views point at the named tensors; tied output weights share the embedding's storage. */
static void check_views(const tt_layout *l)
{
    const tt_model_spec *m = &l->m;
    tt_real *base = (tt_real *)(uintptr_t)4096; /* never dereferenced */
#define AT(name) (base + tt_layout_find(l, name)->offset)
    tt_view v;
    tt_view_make(l, base, &v);
    assert_ptr_equal(v.u, AT("r_w_bias"));
    assert_ptr_equal(v.v, AT("r_r_bias"));
    char name[96];
    for (int k = 0; k < m->layers; k++) {
        const tt_layer_view *y = &v.layer[k];
        snprintf(name, sizeof name, "layers.%d.dec_attn.qkv_net.weight", k);
        assert_ptr_equal(y->qkv, AT(name));
        snprintf(name, sizeof name, "layers.%d.dec_attn.r_net.weight", k);
        assert_ptr_equal(y->r_net, AT(name));
        snprintf(name, sizeof name, "layers.%d.dec_attn.o_net.weight", k);
        assert_ptr_equal(y->o, AT(name));
        assert_null(y->core);
        snprintf(name, sizeof name, "layers.%d.pos_ff.layer_norm.bias", k);
        assert_ptr_equal(y->ln2_b, AT(name));
        assert_non_null(y->ln1_w), assert_non_null(y->ff1_w), assert_non_null(y->ff2_b);
    }
    for (int i = 0; i < l->n_clusters; i++) {
        assert_non_null(v.emb[i]);
        assert_non_null(v.out_b[i]);
        if (m->tie_weights) {
            assert_ptr_equal(v.out_w[i], v.emb[i]);
            assert_ptr_equal(v.out_proj[i], v.emb_proj[i]);
        } else {
            assert_ptr_not_equal(v.out_w[i], v.emb[i]);
        }
        if (l->proj) assert_non_null(v.out_proj[i]);
    }
    if (!l->proj) /* one table: cluster i starts at row lo[i] */
        for (int i = 0; i < l->n_clusters; i++)
            assert_ptr_equal(v.emb[i], AT("word_emb.emb_layers.0.weight") + l->lo[i] * m->d_model);
#undef AT
    tt_view_free(&v);
}

/* The layout of s: clusters and widths as kimiyoung's (d_embed / div_val^i), then check_layout
 * and check_views. */
static void check_spec(const tt_spec *s, int clusters)
{
    tt_layout l;
    build(s, &l);
    assert_int_equal(l.n_clusters, clusters);
    assert_int_equal(l.proj, s->model.div_val > 1);
    assert_int_equal(l.hi[clusters - 1], s->model.vocab);
    for (int i = 0, w = s->model.d_model; i < clusters; i++, w /= s->model.div_val)
        assert_int_equal(l.dim[i], w);
    check_layout(s, &l);
    check_views(&l);
    tt_layout_free(&l);
}

/* Both spec files; wt103 also as the large configuration's div_val 4, tied and untied:
 * per-cluster tables and projections. */
static void test_spec_files(void **state)
{
    (void)state;
    tt_spec s;
    load_spec("txl-ptb.yaml", &s);
    check_spec(&s, 1);
    tt_spec_free(&s);
    load_spec("txl-wt103-base.yaml", &s);
    check_spec(&s, 4);
    s.model.div_val = 4;
    for (int tie = 0; tie < 2; tie++) {
        s.model.tie_weights = tie;
        check_spec(&s, 4);
    }
    tt_spec_free(&s);
}

/* MODEL.md section 2: weights N(0, 0.02), projections N(0, 0.01), LayerNorm 1 and 0, biases 0;
 * r_w_bias and r_r_bias N(0, 0.02) as kimiyoung's init_weight. */
static void test_init(void **state)
{
    (void)state;
    tt_spec s;
    load_spec("txl-ptb.yaml", &s);
    s.model.div_val = 2;
    s.model.n_cutoffs = 1;
    s.model.cutoffs[0] = 2000;
    s.model.tie_weights = false;
    tt_layout l;
    build(&s, &l);
    tt_real *w = tt_xmalloc(l.n_floats * sizeof *w);
    tt_layout_init(&l, w, 7);
    for (int i = 0; i < l.n_params; i++) {
        const tt_param *p = &l.params[i];
        const tt_real *x = w + p->offset;
        const bool ln_w = strstr(p->name, "layer_norm.weight") != NULL;
        const bool bias = !ln_w && (strstr(p->name, ".bias") || strstr(p->name, "cluster_bias"));
        const bool proj = strstr(p->name, "projs") != NULL;
        if (ln_w || bias) {
            for (size_t k = 0; k < p->numel; k++)
                if (x[k] != (ln_w ? 1 : 0)) fail_msg("%s[%zu] = %g", p->name, k, (double)x[k]);
            continue;
        }
        double sum = 0, sq = 0;
        for (size_t k = 0; k < p->numel; k++) sum += x[k], sq += (double)x[k] * x[k];
        const double n = (double)p->numel, mean = sum / n, sd = sqrt(sq / n - mean * mean);
        const double want = proj ? 0.01 : 0.02;
        /* 256 draws (r_w_bias) give a relative standard error of about 4.5% */
        if (fabs(sd - want) > 0.2 * want || fabs(mean) > 5 * want / sqrt(n))
            fail_msg("%s: mean %g sd %g, want N(0, %g^2)", p->name, mean, sd, want);
    }
    free(w);
    tt_layout_free(&l);
    tt_spec_free(&s);
}

/* A small Transformer-XL's weights through model.safetensors: the loader checks that every
 * tensor of the layout is there with its shape and nothing else is; the values come back. */
static void test_checkpoint_round_trip(void **state)
{
    (void)state;
    char root[64], err[512];
    tu_temp_dir("txl-layout", root, sizeof root);
    char *train = tt_xasprintf("%s/train.txt", root);
    tt_buf b = {0};
    for (int i = 0; i < 40; i++) tt_buf_printf(&b, "w%d w%d w%d\n", i % 17, i % 5, i % 11);
    tu_write_text(train, b.data);
    tt_buf_free(&b);
    char *text = tt_xasprintf("model:\n  kind: transformer-xl\n  vocab: data\n  d_model: 16\n"
                              "  layers: 2\n  n_head: 2\n  d_head: 4\n  seq_len: 8\n  mem_len: 8\n"
                              "  d_inner: 32\n  tie_weights: false\n"
                              "  adaptive: {cutoffs: [6], div_val: 2}\n"
                              "train:\n  batch: 2\n  steps: 1\ndata:\n  train: %s\n", train);
    tt_spec s;
    if (tt_spec_parse(text, strlen(text), "txl-small.yaml", root, &s, err, sizeof err) != 0)
        fail_msg("%s", err);
    tt_vocab vocab;
    if (tt_vocab_build(train, &vocab, err, sizeof err) != 0) fail_msg("%s", err);
    if (tt_spec_check_vocab(&s, vocab.n, err, sizeof err) != 0) fail_msg("%s", err);
    tt_layout l;
    if (tt_layout_build(&s.model, vocab.n, &l, err, sizeof err) != 0) fail_msg("%s", err);
    float *w = tt_xmalloc(l.n_floats * sizeof *w), *w2 = tt_xcalloc(l.n_floats, sizeof *w2);
    tt_layout_init(&l, w, 3);
    char *dir = tt_xasprintf("%s/ckpt", root);
    char step_dir[512];
    const tt_checkpoint ck = {.spec = &s, .layout = &l, .vocab = &vocab, .w = w, .step = 5};
    if (tt_checkpoint_save(dir, &ck, step_dir, sizeof step_dir, err, sizeof err) != 0)
        fail_msg("%s", err);
    char *model = tt_checkpoint_model_file(dir, err, sizeof err);
    if (!model) fail_msg("%s", err);
    long step = 0;
    if (tt_checkpoint_load(model, &s, &l, &vocab, w2, &step, err, sizeof err) != 0)
        fail_msg("%s", err);
    assert_int_equal(step, 5);
    for (int i = 0; i < l.n_params; i++) {
        const tt_param *p = &l.params[i];
        if (memcmp(w + p->offset, w2 + p->offset, p->numel * sizeof *w) != 0)
            fail_msg("%s changed through the checkpoint", p->name);
    }
    expect(&l, "crit.out_projs.1", 2, 16, 8);
    free(model), free(dir), free(w), free(w2), free(text), free(train);
    tt_layout_free(&l);
    tt_vocab_free(&vocab);
    tt_spec_free(&s);
    tu_rm_rf(root);
}

/* Until the Transformer-XL LM exists, the engine (CPU and GPU alike) refuses the spec in one line
 * that names it. */
static void test_engine_refuses(void **state)
{
    (void)state;
    tt_spec s;
    load_spec("txl-ptb.yaml", &s);
    tt_layout l;
    build(&s, &l);
    char err[512] = "", desc[64];
    tt_engine *e = NULL;
    assert_int_equal(tt_engine_open(&e, "cpu", &s, &l, 2, desc, sizeof desc, err, sizeof err), -1);
    assert_null(e);
    char *want = tt_xasprintf("%s: model.kind: transformer-xl: ", s.path);
    if (strncmp(err, want, strlen(want)) != 0 || strchr(err, '\n'))
        fail_msg("engine's refusal: '%s', want one line starting '%s'", err, want);
    free(want);
    tt_layout_free(&l);
    tt_spec_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_spec_files),
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_checkpoint_round_trip),
        cmocka_unit_test(test_engine_refuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
