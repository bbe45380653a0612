/* Transformer-XL's parameter layout (cpu/model.c) against kimiyoung's MemTransformerLM
 * state_dict (MODEL.md section 4) for specs/txl-ptb.yaml and specs/txl-wt103-base.yaml: every kind
 * of tensor by name and shape, the total against gen/report.c's count, tied and untied output
 * layers, the views, the initial values, a checkpoint round trip (with the training state and
 * its refusals), the engine's devices, its memories carried into a resumed step, and evaluation
 * with memory against one long segment. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "checkpoint.h"
#include "engine.h"
#include "evaluate.h"
#include "model.h"
#include "report.h"
#include "safetensors.h"
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
/* --- an evaluation in parts (several GPUs) ------------------------------------------------------
 * A stand-in for a model: each scored token adds its id plus its position's distance back to
 * what its stream saw (Transformer-XL: how far into its stream it is) to the nll, so a token run
 * twice, never, or in another stream's context changes the sum. The parts of an evaluation (every
 * parts-th group of windows; Transformer-XL: each part its own streams) add up to the whole's. */
typedef struct {
    int n;
    int streams;   /* Transformer-XL: the streams a call runs */
    long seen[64]; /* and the tokens each has read */
} fake_model;

static void fake_run(void *ctx, const int32_t *in, const int32_t *tg, const float *wt,
                     tt_lm_result *r)
{
    const fake_model *f = ctx;
    memset(r, 0, sizeof *r);
    for (int i = 0; i < 8 * f->n; i++) {
        r->nll_sum += wt[i] * (tg[i] + 0.001 * in[i] + 1e-6 * (i % f->n));
        r->scored += wt[i];
    }
}

static void fake_run_txl(void *ctx, const int32_t *in, const int32_t *tg, const float *wt,
                         bool continues, tt_lm_result *r)
{
    fake_model *f = ctx;
    memset(r, 0, sizeof *r);
    for (int s = 0; s < f->streams; s++) {
        if (!continues) f->seen[s] = 0;
        for (int t = 0; t < f->n; t++) {
            const int i = s * f->n + t;
            r->nll_sum += wt[i] * (tg[i] + 0.001 * in[i] + 1e-6 * (double)f->seen[s]);
            r->scored += wt[i];
            f->seen[s] += wt[i] > 0;
        }
    }
}

static void test_eval_parts(void **state)
{
    (void)state;
    enum { TOKENS = 1003, N = 7 };
    tt_tokens t = {.ids = tt_xmalloc(TOKENS * sizeof(int32_t)), .n = TOKENS};
    for (int i = 0; i < TOKENS; i++) t.ids[i] = (int32_t)((i * 7919) % 101);
    char err[256];
    for (int stride = 3; stride <= N; stride += 4) {
        fake_model f = {.n = N};
        tt_eval_result whole, part, sum = {0};
        assert_int_equal(tt_evaluate(fake_run, &f, 8, N, &t, stride, 0, &whole, err, sizeof err), 0);
        for (int p = 0; p < 3; p++) {
            assert_int_equal(tt_evaluate_part(fake_run, &f, 8, N, &t, stride, 0, p, 3, &part, err,
                                              sizeof err), 0);
            sum.nll += part.nll, sum.scored += part.scored, sum.windows += part.windows;
        }
        assert_int_equal(whole.scored, TOKENS - 1);
        assert_int_equal(sum.scored, whole.scored);
        assert_int_equal(sum.windows, whole.windows);
        assert_true(fabs(sum.nll - whole.nll) <= 1e-9 * whole.nll);
    }
    /* Transformer-XL: 8 streams, as parts of 3, 3 and 2 of them */
    fake_model f = {.n = N, .streams = 8};
    tt_eval_result whole, part, sum = {0};
    assert_int_equal(tt_evaluate_txl_part(fake_run_txl, &f, 8, 0, 8, N, &t, 0, &whole, err,
                                          sizeof err), 0);
    const int cut[] = {0, 3, 6, 8};
    for (int p = 0; p < 3; p++) {
        memset(&f, 0, sizeof f);
        f.n = N, f.streams = cut[p + 1] - cut[p];
        assert_int_equal(tt_evaluate_txl_part(fake_run_txl, &f, 8, cut[p], cut[p + 1], N, &t, 0,
                                              &part, err, sizeof err), 0);
        sum.nll += part.nll, sum.scored += part.scored;
    }
    assert_int_equal(whole.scored, TOKENS - 1);
    assert_int_equal(sum.scored, whole.scored);
    assert_true(fabs(sum.nll - whole.nll) <= 1e-9 * whole.nll);
    free(t.ids);
}

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
    if (tt_vocab_build(train, NULL, &vocab, err, sizeof err) != 0) fail_msg("%s", err);
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

    /* A NaN or an infinity in the weights or the moments: refused at load, naming the tensor
     * and the element (issue 19's eighth point), not scored as perplexity nan. */
    {
        const tt_param *p = &l.params[l.n_params / 2];
        float *m = tt_xcalloc(l.n_floats, sizeof *m), *v = tt_xcalloc(l.n_floats, sizeof *v);
        float *bad = tt_xmalloc(l.n_floats * sizeof *bad);
        memcpy(bad, w, l.n_floats * sizeof *bad);
        bad[p->offset + 3] = NAN;
        char *dir2 = tt_xasprintf("%s/ckpt-bad", root), want[256];
        tt_checkpoint nan_ck = ck;
        nan_ck.w = bad, nan_ck.m = m, nan_ck.v = v;
        if (tt_checkpoint_save(dir2, &nan_ck, NULL, 0, err, sizeof err) != 0) fail_msg("%s", err);
        char *bad_model = tt_checkpoint_model_file(dir2, err, sizeof err);
        assert_non_null(bad_model);
        assert_int_equal(tt_checkpoint_load(bad_model, &s, &l, &vocab, w2, &step, err, sizeof err), -1);
        snprintf(want, sizeof want, "tensor '%s' holds NaN at element 3 of %zu", p->name, p->numel);
        if (!strstr(err, want) || strchr(err, '\n')) fail_msg("a NaN weight: '%s'", err);
        bad[p->offset + 3] = w[p->offset + 3];
        v[p->offset + 1] = INFINITY;
        if (tt_checkpoint_save(dir2, &nan_ck, NULL, 0, err, sizeof err) != 0) fail_msg("%s", err);
        assert_int_equal(tt_checkpoint_load(bad_model, &s, &l, &vocab, w2, &step, err, sizeof err), 0);
        assert_int_equal(tt_checkpoint_load_optim(bad_model, &l, m, v, err, sizeof err), -1);
        snprintf(want, sizeof want, "tensor 'exp_avg_sq.%s' holds an infinity at element 1", p->name);
        if (!strstr(err, want)) fail_msg("an infinite moment: '%s'", err);
        /* 20 bytes flipped in the tensor data (the file's end): the tensor named, not a
         * perplexity of 6e23 */
        v[p->offset + 1] = 0;
        if (tt_checkpoint_save(dir2, &nan_ck, NULL, 0, err, sizeof err) != 0) fail_msg("%s", err);
        size_t flen;
        char *bytes = tu_read_file(bad_model, &flen);
        for (size_t i = flen - 20; i < flen; i++) bytes[i] ^= 0x5a;
        tu_write_file(bad_model, bytes, flen);
        free(bytes);
        assert_int_equal(tt_checkpoint_load(bad_model, &s, &l, &vocab, w2, &step, err, sizeof err), -1);
        if (!strstr(err, "does not match its SHA-256") || !strstr(err, "the file is damaged") ||
            !strstr(err, "tensor '"))
            fail_msg("flipped bytes: '%s'", err);
        print_message("  %s\n", err);
        free(bad_model), free(dir2), free(bad), free(m), free(v);
    }

    /* Without a training state there is no state.safetensors, and reading it says so. */
    char *state_file = tt_xasprintf("%s/state.safetensors", step_dir);
    assert_false(tu_exists(state_file));
    tt_train_state got;
    assert_int_equal(tt_checkpoint_load_state(model, &l, 2, &got, err, sizeof err), 1);
    if (!strstr(err, state_file) || strchr(err, '\n') || !strstr(err, "without memory"))
        fail_msg("no state.safetensors: '%s'", err);
    assert_null(got.mems);
    /* With one, every field and the memories come back: best_valid_ppl to the last bit. */
    const int mlen = 6, nmem = 2 * 2 * mlen * 16;
    float *mems = tt_xmalloc(nmem * sizeof *mems);
    for (int i = 0; i < nmem; i++) mems[i] = (float)sin(0.37 * i) * 3;
    const tt_train_state st = {.step = 5, .seed = 18446744073709551615u, .mem_step = 5,
                               .mem_len = mlen, .batch = 2, .best_valid_ppl = 1.0 / 3 + 20,
                               .best_step = 4, .stale = 1, .mems = mems};
    tt_checkpoint with = ck;
    with.state = &st;
    if (tt_checkpoint_save(dir, &with, step_dir, sizeof step_dir, err, sizeof err) != 0)
        fail_msg("%s", err);
    if (tt_checkpoint_load_state(model, &l, 2, &got, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(got.step, 5);
    assert_true(got.seed == st.seed);
    assert_int_equal(got.mem_step, 5);
    assert_int_equal(got.mem_len, mlen);
    assert_int_equal(got.batch, 2);
    assert_true(got.best_valid_ppl == st.best_valid_ppl);
    assert_int_equal(got.best_step, 4);
    assert_int_equal(got.stale, 1);
    assert_non_null(got.mems);
    assert_memory_equal(got.mems, mems, nmem * sizeof *mems);
    free(got.mems);
    /* Another batch: the rest is read, the memories are dropped, and a note says why. */
    assert_int_equal(tt_checkpoint_load_state(model, &l, 3, &got, err, sizeof err), 2);
    if (!strstr(err, state_file) || strchr(err, '\n') || !strstr(err, "batch 2"))
        fail_msg("memories of another batch: '%s'", err);
    print_message("  %s\n", err);
    assert_null(got.mems);
    assert_int_equal(got.mem_len, 0);
    assert_int_equal(got.best_step, 4);
    free(state_file), free(mems);
    free(model), free(dir), free(w), free(w2), free(text), free(train);
    tt_layout_free(&l);
    tt_vocab_free(&vocab);
    tt_spec_free(&s);
    tu_rm_rf(root);
}

/* The engine runs Transformer-XL where it runs the tensorized model: --device cpu on the CPU
 * reference; auto on the GPU when there is one, else on the CPU, saying why; cuda without a GPU
 * is refused in one line that says so. */
static void test_engine_devices(void **state)
{
    (void)state;
    tt_spec s;
    load_spec("txl-ptb.yaml", &s);
    tt_layout l;
    build(&s, &l);
    char err[512] = "", desc[160];
    tt_engine *e = NULL;
    if (tt_engine_open(&e, "cpu", &s, &l, 2, desc, sizeof desc, err, sizeof err) != 0)
        fail_msg("--device cpu: %s", err);
    assert_string_equal(desc, "the cpu");
    tt_engine_close(e);
    e = NULL;
    if (tt_engine_open(&e, "auto", &s, &l, 2, desc, sizeof desc, err, sizeof err) != 0)
        fail_msg("--device auto: %s", err);
    const bool gpu = strncmp(desc, "the cpu", 7) != 0;
    if (!gpu && strncmp(desc, "the cpu (no CUDA device", 23) != 0)
        fail_msg("--device auto says it runs on '%s'", desc);
    tt_engine_close(e);
    e = NULL;
    if (gpu) {
        print_message("  (a GPU is here: --device cuda's refusal not checked)\n");
    } else {
        assert_int_equal(tt_engine_open(&e, "cuda", &s, &l, 2, desc, sizeof desc, err, sizeof err), -1);
        assert_null(e);
        const char *want = "--device cuda: no CUDA device";
        if (strncmp(err, want, strlen(want)) != 0 || strchr(err, '\n'))
            fail_msg("--device cuda's refusal: '%s', want one line starting '%s'", err, want);
    }
    tt_layout_free(&l);
    tt_spec_free(&s);
}

/* A small Transformer-XL (vocab 23, D 16, 2 layers) with its initial weights, for evaluation. */
static void small_txl(tt_spec *s, tt_layout *l, tt_real **w)
{
    char err[512];
    const char *text = "model:\n  kind: transformer-xl\n  vocab: 23\n  d_model: 16\n  layers: 2\n"
                       "  n_head: 2\n  d_head: 8\n  seq_len: 4\n  mem_len: 4\n  d_inner: 32\n"
                       "train:\n  batch: 2\n  steps: 1\n";
    if (tt_spec_parse(text, strlen(text), "txl-eval.yaml", ".", s, err, sizeof err) != 0)
        fail_msg("%s", err);
    build(s, l);
    *w = tt_xmalloc(l->n_floats * sizeof **w);
    tt_layout_init(l, *w, 11);
    /* larger weights than the initial N(0, 0.02): the attention's choices then matter */
    for (size_t i = 0; i < l->n_floats; i++) (*w)[i] *= 10;
}

static double txl_eval(const tt_layout *base, int tgt_len, int mem_len, int clamp_len, int batch,
                       tt_real *w, const tt_tokens *t, long *scored)
{
    tt_layout l = *base;
    l.m.seq_len = tgt_len, l.m.mem_len = mem_len, l.m.clamp_len = clamp_len;
    tt_eval_result r;
    char err[256];
    if (tt_evaluate_txl_cpu(&l, batch, w, t, 0, &r, err, sizeof err) != 0) fail_msg("%s", err);
    *scored = r.scored;
    return r.nll;
}

/* MODEL.md section 3's memory: reading a split in segments of 4 that attend to a memory holding
 * every earlier position gives what one segment over the whole split gives (the same visibility,
 * the same relative distances), to rounding; without the memory it does not. Every token but the
 * first is scored exactly once however the split is cut into streams and segments. */
static void test_eval_memory(void **state)
{
    (void)state;
    tt_spec s;
    tt_layout l;
    tt_real *w;
    small_txl(&s, &l, &w);
    tt_tokens t = {.ids = tt_xmalloc(31 * sizeof(int32_t)), .n = 31};
    for (long i = 0; i < t.n; i++) t.ids[i] = (int32_t)((i * 7 + i * i) % 23);
    long scored;
    const double whole = txl_eval(&l, 30, 0, 0, 1, w, &t, &scored);
    assert_int_equal(scored, 30);
    const double seg = txl_eval(&l, 4, 32, 0, 1, w, &t, &scored);
    assert_int_equal(scored, 30);
    const double nomem = txl_eval(&l, 4, 0, 0, 1, w, &t, &scored);
    print_message("  nll: one segment %.9g, segments of 4 with memory %.9g, without %.9g\n", whole,
                  seg, nomem);
    if (fabs(seg - whole) > 1e-5 * fabs(whole))
        fail_msg("segments with memory: nll %.9g, one segment %.9g", seg, whole);
    if (fabs(nomem - whole) < 1e-3 * fabs(whole))
        fail_msg("without memory the nll (%.9g) should differ from one segment's (%.9g)", nomem, whole);
    /* a memory shorter than the past, clamping, streams: each token still scored once */
    for (int b = 1; b <= 7; b++) {
        txl_eval(&l, 4, 3, 2, b, w, &t, &scored);
        assert_int_equal(scored, 30);
    }
    free(t.ids), free(w);
    tt_layout_free(&l);
    tt_spec_free(&s);
}

/* The inputs and targets of steps 1 and 2 for small_txl, rows * seq_len = count <= 8 tokens. */
static void two_batches(int count, int32_t in[2][8], int32_t tg[2][8])
{
    for (int k = 0; k < 2; k++)
        for (int i = 0; i < count; i++)
            in[k][i] = (k * 5 + i * 3) % 23, tg[k][i] = (k * 5 + i * 3 + 1) % 23;
}

/* Training carries the memory of step s - 1 into step s when the batch continues it, and only
 * then: step 2's loss after step 1 depends on whether it continues step 1, and a step that
 * claims to continue a step this engine did not run (a resumed run's first) starts without. */
static double step2_loss(const tt_spec *s, const tt_layout *l, const tt_real *w, bool run_step1,
                         bool continues)
{
    const int b = 2, n = s->model.seq_len;
    int32_t in[2][8], tg[2][8];
    two_batches(b * n, in, tg);
    char err[512], desc[128];
    tt_engine *e;
    if (tt_engine_open(&e, "cpu", s, l, b, desc, sizeof desc, err, sizeof err) != 0) fail_msg("%s", err);
    memcpy(tt_engine_host(e, 0), w, l->n_floats * sizeof *w);
    tt_lm_opts o = {.train = true, .seed = 1, .step = 1};
    tt_lm_result r;
    if (run_step1) tt_engine_train_step(e, in[0], tg[0], &o, 1, false, &r);
    o.step = 2;
    tt_engine_train_step(e, in[1], tg[1], &o, 2, continues, &r);
    tt_engine_close(e);
    return r.loss_sum / r.scored;
}

static void test_train_memory(void **state)
{
    (void)state;
    tt_spec s;
    tt_layout l;
    tt_real *w;
    small_txl(&s, &l, &w);
    const double with = step2_loss(&s, &l, w, true, true), without = step2_loss(&s, &l, w, true, false);
    const double claimed = step2_loss(&s, &l, w, false, true), alone = step2_loss(&s, &l, w, false, false);
    print_message("  step 2's loss after step 1: with its memory %.9g, without %.9g; step 2 first: "
                  "claiming to continue %.9g, not %.9g\n", with, without, claimed, alone);
    if (with == without) fail_msg("step 2's loss does not depend on step 1's memory");
    if (claimed != alone) fail_msg("a first step that claims to continue used a memory");
    free(w);
    tt_layout_free(&l);
    tt_spec_free(&s);
}

/* Writes w's tensors as a PyTorch user's safetensors.torch.save_file would: no tt metadata;
 * `rename` names the embedding table as the tied output layer does and adds save_model's
 * metadata {"format": "pt"}; `extra` tensors follow. */
static void write_state_dict(const char *path, const tt_layout *l, const float *w, bool rename,
                             const tt_st_tensor *extra, int n_extra)
{
    /* save_model (and save_pretrained) add {"format": "pt"}: with the renamed table, so */
    const char *key = "format", *value = "pt";
    tt_st_tensor *t = tt_xcalloc((size_t)l->n_params + n_extra, sizeof *t);
    for (int i = 0; i < l->n_params; i++) {
        const tt_param *p = &l->params[i];
        const bool emb = rename && !strcmp(p->name, "word_emb.emb_layers.0.weight");
        t[i] = (tt_st_tensor){emb ? "crit.out_layers.0.weight" : p->name, TT_ST_F32, p->ndim,
                              {p->shape[0], p->shape[1]}, w + p->offset};
    }
    for (int i = 0; i < n_extra; i++) t[l->n_params + i] = extra[i];
    char err[512];
    if (tt_st_write(path, t, l->n_params + n_extra, &key, &value, rename ? 1 : 0, err, sizeof err) != 0)
        fail_msg("%s", err);
    free(t);
}

static int load_state(const char *path, const tt_spec *s, const tt_layout *l, float *w, char *err,
                      size_t errlen)
{
    long step = -1;
    const int rc = tt_checkpoint_load(path, s, l, NULL, w, &step, err, errlen);
    if (rc == 0) assert_int_equal(step, 0);
    return rc;
}

/* MODEL.md section 4: a state_dict saved from PyTorch with the safetensors package loads as it
 * is: tied weights under either name (or both, if equal), pos_emb.inv_freq checked against the
 * frequencies; another tensor, a tied copy that differs or other frequencies are refused. */
static void test_state_dict(void **state)
{
    (void)state;
    tt_spec s;
    tt_layout l;
    tt_real *w;
    small_txl(&s, &l, &w);
    assert_true(s.model.tie_weights);
    char root[64], err[512];
    tu_temp_dir("txl-state-dict", root, sizeof root);
    char *path = tt_xasprintf("%s/model.safetensors", root);
    float *got = tt_xmalloc(l.n_floats * sizeof *got);
    const int half = s.model.d_model / 2;
    float *freq = tt_xmalloc(half * sizeof *freq);
    for (int k = 0; k < half; k++) freq[k] = (float)pow(10000.0, -2.0 * k / s.model.d_model);
    const tt_param *emb = tt_layout_find(&l, "word_emb.emb_layers.0.weight");
    const tt_st_tensor inv = {"pos_emb.inv_freq", TT_ST_F32, 1, {half}, freq};
    const tt_st_tensor copy = {"crit.out_layers.0.weight", TT_ST_F32, 2,
                               {emb->shape[0], emb->shape[1]}, w + emb->offset};
    for (int rename = 0; rename < 2; rename++) {
        write_state_dict(path, &l, w, rename, &inv, 1);
        memset(got, 0, l.n_floats * sizeof *got);
        if (load_state(path, &s, &l, got, err, sizeof err) != 0) fail_msg("%s", err);
        if (memcmp(got, w, l.n_floats * sizeof *got) != 0) fail_msg("the weights changed on the way");
    }
    const tt_st_tensor both[] = {inv, copy};
    write_state_dict(path, &l, w, false, both, 2);
    if (load_state(path, &s, &l, got, err, sizeof err) != 0) fail_msg("both names: %s", err);
    /* refusals */
    float *other = tt_xmalloc(emb->numel * sizeof *other);
    memcpy(other, w + emb->offset, emb->numel * sizeof *other);
    other[3] += 1;
    const tt_st_tensor bad_copy = {copy.name, TT_ST_F32, 2, {emb->shape[0], emb->shape[1]}, other};
    freq[1] *= 1.01f;
    const tt_st_tensor unknown = {"pos_emb.unknown", TT_ST_F32, 1, {half}, freq};
    const struct {
        tt_st_tensor t;
        const char *want;
    } cases[] = {{bad_copy, "the tensor it is tied to"}, {inv, "MODEL.md section 3"},
                 {unknown, "is not part of this model"}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        write_state_dict(path, &l, w, false, &cases[c].t, 1);
        assert_int_equal(load_state(path, &s, &l, got, err, sizeof err), -1);
        if (!strstr(err, cases[c].want) || !strstr(err, cases[c].t.name))
            fail_msg("refusal of %s: '%s', want '%s'", cases[c].t.name, err, cases[c].want);
        print_message("  %s\n", err);
    }
    tu_rm_rf(root);
    free(path), free(got), free(freq), free(other), free(w);
    tt_layout_free(&l);
    tt_spec_free(&s);
}

/* A resumed run's first step: an engine given the weights, moments and memories another engine
 * had after step 1 (tt_engine_memory into tt_engine_set_memory) takes step 2 to the same loss
 * and weights, bit for bit, as the engine that ran step 1. */
static void test_engine_memory_resume(void **state)
{
    (void)state;
    tt_spec s;
    tt_layout l;
    tt_real *w;
    small_txl(&s, &l, &w);
    const int b = 2, n = s.model.seq_len;
    int32_t in[2][8], tg[2][8];
    two_batches(b * n, in, tg);
    char err[512], desc[128];
    tt_engine *e[2];
    for (int k = 0; k < 2; k++)
        if (tt_engine_open(&e[k], "cpu", &s, &l, b, desc, sizeof desc, err, sizeof err) != 0)
            fail_msg("%s", err);
    memcpy(tt_engine_host(e[0], 0), w, l.n_floats * sizeof *w);
    long at;
    assert_int_equal(tt_engine_memory(e[0], NULL, &at), 0);
    assert_int_equal(at, -1);
    tt_lm_opts o = {.train = true, .seed = 1, .step = 1};
    tt_lm_result r[2];
    tt_engine_train_step(e[0], in[0], tg[0], &o, 1, false, &r[0]);
    const int mlen = tt_engine_memory(e[0], NULL, &at);
    assert_int_equal(mlen, n);
    assert_int_equal(at, 1);
    const size_t most = (size_t)l.m.layers * b * l.m.mem_len * l.m.d_model;
    float *mems = tt_xmalloc(most * sizeof *mems), *again = tt_xmalloc(most * sizeof *again);
    assert_int_equal(tt_engine_memory(e[0], mems, NULL), mlen);
    for (int i = 0; i < 3; i++)
        memcpy(tt_engine_host(e[1], i), tt_engine_host(e[0], i), l.n_floats * sizeof(float));
    tt_engine_set_memory(e[1], mems, mlen, 1);
    o.step = 2;
    for (int k = 0; k < 2; k++) tt_engine_train_step(e[k], in[1], tg[1], &o, 2, true, &r[k]);
    assert_true(r[0].loss_sum == r[1].loss_sum);
    assert_memory_equal(tt_engine_host(e[0], 0), tt_engine_host(e[1], 0),
                        l.n_floats * sizeof(float));
    /* and the second engine now holds what the first does */
    const int mlen2 = tt_engine_memory(e[0], mems, NULL);
    assert_int_equal(tt_engine_memory(e[1], again, &at), mlen2);
    assert_int_equal(at, 2);
    assert_memory_equal(again, mems, (size_t)l.m.layers * b * mlen2 * l.m.d_model * sizeof *mems);
    for (int k = 0; k < 2; k++) tt_engine_close(e[k]);
    free(mems), free(again), free(w);
    tt_layout_free(&l);
    tt_spec_free(&s);
}

/* How a state.safetensors is spoilt: in none of its tensors, or in one of them. */
enum { MEMS_INTACT, MEMS_SHORT, MEMS_NAN, MEMS_EXTRA };

/* A state.safetensors for small_txl's shapes (2 layers, batch 2, mem_len 4, d_model 16) at step
 * 5, with metadata `key` set to `value` (key not NULL; value NULL: without it) and its tensors
 * spoilt as `how` says. */
static void write_train_state(const char *path, const tt_layout *l, const char *key,
                              const char *value, int how)
{
    static const struct {
        const char *key, *value;
    } meta[] = {{"format", "tt-train-state-1"}, {"step", "5"},      {"seed", "3"},
                {"mem_step", "5"},              {"mem_len", "4"},   {"batch", "2"},
                {"best_valid_ppl", "12.5"},     {"best_step", "4"}, {"stale", "1"}};
    enum { NMETA = sizeof meta / sizeof *meta };
    const char *keys[NMETA], *vals[NMETA];
    int n = 0;
    for (int i = 0; i < NMETA; i++) {
        const bool it = key && !strcmp(meta[i].key, key);
        if (it && !value) continue;
        keys[n] = meta[i].key, vals[n++] = it ? value : meta[i].value;
    }
    const int64_t b = 2, m = 4, d = l->m.d_model;
    float *x = tt_xmalloc((size_t)(2 * b * m * d) * sizeof *x);
    for (int64_t i = 0; i < 2 * b * m * d; i++) x[i] = (float)cos(0.1 * (double)i);
    if (how == MEMS_NAN) x[7] = NAN;
    const tt_st_tensor t[] = {{"mems.0", TT_ST_F32, 3, {b, m, d}, x},
                              {"mems.1", TT_ST_F32, 3, {b, how == MEMS_SHORT ? m - 1 : m, d},
                               x + b * m * d},
                              {"mems.2", TT_ST_F32, 1, {3}, x}};
    char err[512];
    if (tt_st_write(path, t, how == MEMS_EXTRA ? 3 : 2, keys, vals, n, err, sizeof err) != 0)
        fail_msg("%s", err);
    free(x);
}

/* tt_checkpoint_load_state reads back what is right and refuses, in one line naming the file,
 * each thing that can be wrong. */
static void test_train_state_refusals(void **state)
{
    (void)state;
    tt_spec s;
    tt_layout l;
    tt_real *w;
    small_txl(&s, &l, &w);
    char root[64], err[512];
    tu_temp_dir("txl-train-state", root, sizeof root);
    char *model = tt_xasprintf("%s/model.safetensors", root);
    char *path = tt_xasprintf("%s/state.safetensors", root);
    tt_train_state got;
    write_train_state(path, &l, NULL, NULL, MEMS_INTACT);
    if (tt_checkpoint_load_state(model, &l, 2, &got, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(got.mem_len, 4);
    assert_true(got.best_valid_ppl == 12.5);
    free(got.mems);
    static const struct {
        const char *key, *value;
        int how;
        const char *want;
    } cases[] = {
        {"format", "tt-checkpoint-1", MEMS_INTACT, "not a tt training state"},
        {"step", "-1", MEMS_INTACT, "metadata step is '-1', not an integer of at least 0"},
        {"step", "abc", MEMS_INTACT, "metadata step is 'abc'"},
        {"step", "5 ", MEMS_INTACT, "metadata step is '5 '"},
        {"seed", "-3", MEMS_INTACT, "metadata seed is '-3'"},
        {"mem_len", "5", MEMS_INTACT, "mem_len is 5, more than the spec's model.mem_len 4"},
        {"mem_step", "4", MEMS_INTACT, "mem_step is 4, neither the step (5) nor -1"},
        {"mem_step", "-1", MEMS_INTACT, "mem_len is 4 but mem_step -1"},
        {"batch", "0", MEMS_INTACT, "metadata batch is '0'"},
        {"best_valid_ppl", "nan", MEMS_INTACT, "best_valid_ppl is 'nan', not a perplexity"},
        {"best_step", "0", MEMS_INTACT, "best_valid_ppl 12.5 and best_step 0 disagree"},
        {"stale", NULL, MEMS_INTACT, "its metadata lacks 'stale'"},
        {"mem_len", "0", MEMS_INTACT,
         "tensor 'mems.0' is not part of a training state of mem_len 0"},
        {NULL, NULL, MEMS_SHORT, "tensor 'mems.1': expected shape [2, 4, 16], found [2, 3, 16]"},
        {NULL, NULL, MEMS_NAN, "tensor 'mems.0' holds nan at element 7"},
        {NULL, NULL, MEMS_EXTRA, "tensor 'mems.2' is not part of a training state"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        write_train_state(path, &l, cases[c].key, cases[c].value, cases[c].how);
        memset(&got, 0, sizeof got);
        err[0] = '\0';
        assert_int_equal(tt_checkpoint_load_state(model, &l, 2, &got, err, sizeof err), -1);
        assert_null(got.mems);
        if (strncmp(err, path, strlen(path)) != 0 || strchr(err, '\n') ||
            !strstr(err, cases[c].want))
            fail_msg("case %zu: '%s', want one line starting '%s' and saying '%s'", c, err, path,
                     cases[c].want);
        print_message("  %s\n", err + strlen(root) + 1);
    }
    tu_rm_rf(root);
    free(model), free(path), free(w);
    tt_layout_free(&l);
    tt_spec_free(&s);
}

/* tt_checkpoint_prepare: a folder tt-train cannot use is refused before training (issue 19's
 * seventh point), and what a killed run left is put right (its ninth): temporaries of dead
 * processes removed, a step folder moved aside whose replacement never came put back, one whose
 * replacement is there removed; a live process's temporary kept. */
static void test_checkpoint_prepare(void **state)
{
    (void)state;
    char err[512] = "", dir[] = "/tmp/tt-ckprep-XXXXXX";
    int cleaned = -1;
    assert_int_equal(tt_checkpoint_prepare("", &cleaned, err, sizeof err), -1);
    assert_non_null(strstr(err, "empty path"));
    assert_non_null(mkdtemp(dir));
    char path[256], file[320];
    snprintf(file, sizeof file, "%s/a-file", dir);
    FILE *f = fopen(file, "w");
    assert_non_null(f);
    fclose(f);
    char sub[400];
    snprintf(sub, sizeof sub, "%s/sub", file);
    assert_int_equal(tt_checkpoint_prepare(sub, &cleaned, err, sizeof err), -1);
    assert_non_null(strstr(err, "cannot create directory"));
    assert_null(strchr(err, '\n'));
    unlink(file);

    const pid_t child = fork(); /* a PID no process has once it is reaped */
    if (child == 0) _exit(0);
    assert_true(child > 0);
    waitpid(child, NULL, 0);
    const long dead = (long)child, live = (long)getpid();
    const char *made[] = {"step-00000005.tmp.%ld", "step-00000007.old.%ld", "step-00000006.old.%ld",
                          "step-00000006", "step-00000008.tmp.%ld"};
    const long pids[] = {dead, dead, dead, 0, live};
    for (int i = 0; i < 5; i++) {
        char name[64];
        snprintf(name, sizeof name, made[i], pids[i]);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        assert_int_equal(mkdir(path, 0755), 0);
        snprintf(file, sizeof file, "%s/model.safetensors", path);
        f = fopen(file, "w");
        assert_non_null(f);
        fputs(name, f);
        fclose(f);
    }
    snprintf(path, sizeof path, "%s/latest.tmp.%ld.7f00", dir, dead);
    f = fopen(path, "w");
    assert_non_null(f);
    fclose(f);
    assert_int_equal(tt_checkpoint_prepare(dir, &cleaned, err, sizeof err), 0);
    assert_int_equal(cleaned, 4);
    struct stat st;
    const char *gone[] = {"step-00000005.tmp.%ld", "step-00000007.old.%ld", "step-00000006.old.%ld",
                          "latest.tmp.%ld.7f00"};
    for (int i = 0; i < 4; i++) {
        char name[64];
        snprintf(name, sizeof name, gone[i], dead);
        snprintf(path, sizeof path, "%s/%s", dir, name);
        if (stat(path, &st) == 0) fail_msg("%s is still there", path);
    }
    snprintf(path, sizeof path, "%s/step-00000007/model.safetensors", dir); /* put back whole */
    char *text = tu_read_file(path, NULL);
    char want[64];
    snprintf(want, sizeof want, "step-00000007.old.%ld", dead);
    assert_string_equal(text, want);
    free(text);
    snprintf(path, sizeof path, "%s/step-00000006/model.safetensors", dir);
    assert_int_equal(stat(path, &st), 0);
    snprintf(path, sizeof path, "%s/step-00000008.tmp.%ld", dir, live);
    assert_int_equal(stat(path, &st), 0); /* a running process's */
    assert_int_equal(tt_checkpoint_prepare(dir, &cleaned, err, sizeof err), 0);
    assert_int_equal(cleaned, 0);
    char cmd[700];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    assert_int_equal(system(cmd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_eval_parts),
        cmocka_unit_test(test_spec_files),
        cmocka_unit_test(test_init),
        cmocka_unit_test(test_checkpoint_round_trip),
        cmocka_unit_test(test_engine_devices),
        cmocka_unit_test(test_eval_memory),
        cmocka_unit_test(test_train_memory),
        cmocka_unit_test(test_state_dict),
        cmocka_unit_test(test_engine_memory_resume),
        cmocka_unit_test(test_train_state_refusals),
        cmocka_unit_test(test_checkpoint_prepare),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
