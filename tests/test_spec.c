/* Tests of the spec parser: every diagnostic in tests/specs-invalid/ (one file each, the expected
 * line in its first comment), every spec in specs/, the defaults, the eval section, the write/parse
 * round trip, relative paths and the vocabulary check. */
#ifndef _POSIX_C_SOURCE
#define _POSIX_C_SOURCE 200809L /* open_memstream, mkdtemp */
#endif
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "spec.h"

#ifndef TT_SOURCE_DIR
#define TT_SOURCE_DIR "."
#endif

#define MIN_INVALID_SPECS 30
#define MAX_FILES 512

static const char tensorized_min[] = "model:\n"
                                     "  kind: tensorized\n"
                                     "  d_model: 256\n"
                                     "  layers: 3\n"
                                     "  seq_len: 32\n"
                                     "  d_inner: 2100\n"
                                     "  rank: 40\n";

/* tensorized_min on one line (seq_len 32), for messages that point at the next one. */
#define MODEL_TZ                                                                                   \
    "model: {kind: tensorized, d_model: 256, layers: 3, seq_len: 32, d_inner: 2100, rank: 40}\n"

static const char txl_min[] = "model:\n"
                              "  kind: transformer-xl\n"
                              "  d_model: 410\n"
                              "  layers: 16\n"
                              "  seq_len: 150\n"
                              "  d_inner: 2100\n"
                              "  n_head: 10\n"
                              "  d_head: 41\n";

/* Every key set to something other than its default. */
static const char tensorized_full[] = "model:\n"
                                      "  kind: tensorized\n"
                                      "  vocab: 267735\n"
                                      "  d_model: 256\n"
                                      "  layers: 6\n"
                                      "  seq_len: 80\n"
                                      "  d_inner: 2100\n"
                                      "  dropout: 0.1\n"
                                      "  tie_weights: false\n"
                                      "  adaptive:\n"
                                      "    cutoffs: [20000, 40000, 200000]\n"
                                      "    div_val: 2\n"
                                      "  rank: 40\n"
                                      "  cores: 2\n"
                                      "  causal: false\n"
                                      "  position: key\n"
                                      "train:\n"
                                      "  batch: 60\n"
                                      "  steps: 200000\n"
                                      "  optimizer:\n"
                                      "    name: adam\n"
                                      "    lr: 0.00025\n"
                                      "    betas: [0.8, 0.98]\n"
                                      "    eps: 1e-9\n"
                                      "    weight_decay: 0.01\n"
                                      "  schedule:\n"
                                      "    kind: inverse-sqrt\n"
                                      "    warmup: 4000\n"
                                      "    min_lr: 1e-6\n"
                                      "  clip: 0.5\n"
                                      "  label_smoothing: 0\n"
                                      "  seed: 18446744073709551615\n"
                                      "  precision: bf16\n"
                                      "  eval_interval: 0\n"
                                      "  checkpoint:\n"
                                      "    dir: \"runs/wt103 #1: \\\"best\\\" \\\\ \xc3\xa9\"\n"
                                      "    interval: 5000\n"
                                      "data:\n"
                                      "  train: ../data/wt103/wiki.train.tokens\n"
                                      "  valid: /abs/wiki.valid.tokens\n"
                                      "  test: 'data/wiki test.tokens'\n"
                                      "kernels:\n"
                                      "  arch: sm_90a\n"
                                      "  tune: false\n";

static const char txl_full[] = "model:\n"
                               "  kind: transformer-xl\n"
                               "  vocab: 10000\n"
                               "  d_model: 1024\n"
                               "  layers: 18\n"
                               "  seq_len: 384\n"
                               "  d_inner: 4096\n"
                               "  dropout: 0.2\n"
                               "  tie_weights: false\n"
                               "  n_head: 16\n"
                               "  d_head: 64\n"
                               "  mem_len: 384\n"
                               "  clamp_len: 1000\n"
                               "  dropatt: 0.05\n"
                               "train:\n"
                               "  batch: 8\n"
                               "  steps: 4000000\n"
                               "  optimizer: {lr: 0.001, betas: [0, 0.5], eps: 0.001, "
                               "weight_decay: 0.1}\n"
                               "  schedule: {kind: cosine, warmup: 1000, min_lr: 0.0001}\n"
                               "  clip: 0\n"
                               "  label_smoothing: 0.3\n"
                               "  seed: 0\n"
                               "  precision: tf32\n"
                               "  eval_interval: 4000\n"
                               "  checkpoint: {dir: /ckpt, interval: 0}\n"
                               "eval: {tgt_len: 128, mem_len: 1600, clamp_len: 999}\n"
                               "data: {train: t.txt}\n"
                               "kernels: {arch: sm_120, tune: false}\n";

/* ---- helpers ------------------------------------------------------------------------------- */

static int cmp_names(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The *.yaml files of a folder as full paths, sorted; -1 when the folder cannot be opened. */
static int list_yaml(const char *dir, char **paths, int max)
{
    DIR *d = opendir(dir);
    if (!d)
        return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL && n < max;) {
        size_t len = strlen(e->d_name);
        if (len > 5 && strcmp(e->d_name + len - 5, ".yaml") == 0) {
            paths[n] = malloc(strlen(dir) + len + 2);
            sprintf(paths[n], "%s/%s", dir, e->d_name);
            n++;
        }
    }
    closedir(d);
    qsort(paths, (size_t)n, sizeof paths[0], cmp_names);
    return n;
}

static void free_list(char **paths, int n)
{
    for (int i = 0; i < n; i++)
        free(paths[i]);
}

static bool is_zeroed(const tt_spec *s)
{
    static const tt_spec zero;
    return memcmp(s, &zero, sizeof zero) == 0;
}


static void parse_ok(const char *text, const char *dir, tt_spec *s)
{
    char err[512] = "";
    int rc = tt_spec_parse(text, strlen(text), "test.yaml", dir, s, err, sizeof err);
    if (rc != 0)
        fail_msg("unexpected error: %s", err);
}

static void expect_error(const char *text, const char *expected)
{
    tt_spec s;
    char err[512] = "";
    assert_int_equal(tt_spec_parse(text, strlen(text), "t.yaml", ".", &s, err, sizeof err), -1);
    assert_string_equal(err, expected);
    assert_true(is_zeroed(&s));
}

static void assert_same_string(const char *a, const char *b)
{
    if (a == NULL || b == NULL)
        assert_ptr_equal(a, b);
    else
        assert_string_equal(a, b);
}

/* Every field but path, dir, text and the diagnostic mark of the cutoffs list. */
static void assert_same_spec(const tt_spec *a, const tt_spec *b)
{
    const tt_model_spec *m = &a->model, *n = &b->model;
    assert_int_equal(m->kind, n->kind);
    assert_int_equal(m->vocab, n->vocab);
    assert_int_equal(m->d_model, n->d_model);
    assert_int_equal(m->layers, n->layers);
    assert_int_equal(m->seq_len, n->seq_len);
    assert_int_equal(m->d_inner, n->d_inner);
    assert_true(m->dropout == n->dropout);
    assert_int_equal(m->tie_weights, n->tie_weights);
    assert_int_equal(m->n_cutoffs, n->n_cutoffs);
    for (int i = 0; i < TT_MAX_CUTOFFS; i++)
        assert_int_equal(m->cutoffs[i], n->cutoffs[i]);
    assert_int_equal(m->div_val, n->div_val);
    assert_int_equal(m->rank, n->rank);
    assert_int_equal(m->cores, n->cores);
    assert_int_equal(m->causal, n->causal);
    assert_int_equal(m->position, n->position);
    assert_int_equal(m->n_head, n->n_head);
    assert_int_equal(m->d_head, n->d_head);
    assert_int_equal(m->mem_len, n->mem_len);
    assert_int_equal(m->clamp_len, n->clamp_len);
    assert_true(m->dropatt == n->dropatt);

    const tt_train_spec *t = &a->train, *u = &b->train;
    assert_int_equal(t->batch, u->batch);
    assert_int_equal(t->steps, u->steps);
    assert_true(t->lr == u->lr);
    assert_true(t->beta1 == u->beta1);
    assert_true(t->beta2 == u->beta2);
    assert_true(t->eps == u->eps);
    assert_true(t->weight_decay == u->weight_decay);
    assert_int_equal(t->schedule, u->schedule);
    assert_int_equal(t->warmup, u->warmup);
    assert_true(t->min_lr == u->min_lr);
    assert_true(t->clip == u->clip);
    assert_true(t->label_smoothing == u->label_smoothing);
    assert_true(t->seed == u->seed);
    assert_int_equal(t->precision, u->precision);
    assert_int_equal(t->eval_interval, u->eval_interval);
    assert_same_string(t->checkpoint_dir, u->checkpoint_dir);
    assert_int_equal(t->checkpoint_interval, u->checkpoint_interval);

    assert_int_equal(a->eval.tgt_len, b->eval.tgt_len);
    assert_int_equal(a->eval.mem_len, b->eval.mem_len);
    assert_int_equal(a->eval.clamp_len, b->eval.clamp_len);

    assert_same_string(a->data.train, b->data.train);
    assert_same_string(a->data.valid, b->data.valid);
    assert_same_string(a->data.test, b->data.test);
    assert_string_equal(a->kernels.arch, b->kernels.arch);
    assert_int_equal(a->kernels.tune, b->kernels.tune);
}

/* Write, read back with dir ".", compare; the second write must give the same bytes. */
static void assert_round_trip(const tt_spec *s)
{
    char *out = tt_spec_text(s);
    tt_spec back;
    char err[512] = "";
    if (tt_spec_parse(out, strlen(out), "written.yaml", ".", &back, err, sizeof err) != 0)
        fail_msg("the written spec does not parse: %s\n%s", err, out);
    assert_same_spec(s, &back);
    char *again = tt_spec_text(&back);
    assert_string_equal(out, again);
    free(again);
    free(out);
    tt_spec_free(&back);
}

/* ---- tests --------------------------------------------------------------------------------- */

static void test_invalid_specs(void **state)
{
    (void)state;
    const char *dir = TT_SOURCE_DIR "/tests/specs-invalid";
    char *paths[MAX_FILES];
    int n = list_yaml(dir, paths, MAX_FILES);
    if (n < MIN_INVALID_SPECS)
        fail_msg("%s holds %d .yaml files, expected at least %d", dir, n, MIN_INVALID_SPECS);
    int failures = 0;
    for (int i = 0; i < n; i++) {
        char line[512] = "", expected[1024], err[1024] = "";
        FILE *f = fopen(paths[i], "rb");
        assert_non_null(f);
        if (!fgets(line, sizeof line, f))
            line[0] = '\0';
        fclose(f);
        line[strcspn(line, "\r\n")] = '\0';
        const char *tag = "# expect: ";
        if (strncmp(line, tag, strlen(tag)) != 0) {
            print_error("%s: the first line is not '# expect: LINE:COL: message'\n", paths[i]);
            failures++;
            continue;
        }
        snprintf(expected, sizeof expected, "%s:%s", paths[i], line + strlen(tag));
        tt_spec s;
        int rc = tt_spec_load(paths[i], &s, err, sizeof err);
        if (rc != -1 || strcmp(err, expected) != 0 || !is_zeroed(&s) || strchr(err, '\n')) {
            print_error("%s\n  expected: %s\n  got (%d): %s\n", paths[i], expected, rc, err);
            failures++;
        }
        tt_spec_free(&s);
    }
    print_message("%d invalid specs checked\n", n);
    free_list(paths, n);
    assert_int_equal(failures, 0);
}

static void test_project_specs(void **state)
{
    (void)state;
    const char *dir = TT_SOURCE_DIR "/specs";
    char *paths[MAX_FILES];
    int n = list_yaml(dir, paths, MAX_FILES);
    if (n <= 0)
        fail_msg("no specs/*.yaml found in %s: the project's example specs are missing", dir);
    int failures = 0;
    for (int i = 0; i < n; i++) {
        tt_spec s;
        char err[1024] = "";
        if (tt_spec_load(paths[i], &s, err, sizeof err) != 0) {
            print_error("%s\n", err);
            failures++;
            continue;
        }
        assert_round_trip(&s);
        tt_spec_free(&s);
    }
    print_message("%d specs parsed\n", n);
    free_list(paths, n);
    assert_int_equal(failures, 0);
}

static void test_defaults_tensorized(void **state)
{
    (void)state;
    tt_spec s;
    parse_ok(tensorized_min, ".", &s);
    const tt_model_spec *m = &s.model;
    assert_int_equal(m->kind, TT_KIND_TENSORIZED);
    assert_int_equal(m->vocab, 0);
    assert_int_equal(m->d_model, 256);
    assert_int_equal(m->layers, 3);
    assert_int_equal(m->seq_len, 32);
    assert_int_equal(m->d_inner, 2100);
    assert_true(m->dropout == 0);
    assert_true(m->tie_weights);
    assert_int_equal(m->n_cutoffs, 0);
    assert_int_equal(m->div_val, 1);
    assert_int_equal(m->rank, 40);
    assert_int_equal(m->cores, 1);
    assert_true(m->causal);
    assert_int_equal(m->position, TT_POS_NONE);
    assert_int_equal(m->n_head, 0);
    assert_int_equal(m->d_head, 0);
    assert_int_equal(m->mem_len, 0);
    assert_int_equal(m->clamp_len, 0);
    assert_true(m->dropatt == 0);

    const tt_train_spec *t = &s.train;
    assert_int_equal(t->batch, 32);
    assert_int_equal(t->steps, 10000);
    assert_true(t->lr == 2.5e-4);
    assert_true(t->beta1 == 0.9);
    assert_true(t->beta2 == 0.999);
    assert_true(t->eps == 1e-8);
    assert_true(t->weight_decay == 0);
    assert_int_equal(t->schedule, TT_SCHED_COSINE);
    assert_int_equal(t->warmup, 0);
    assert_true(t->min_lr == 0);
    assert_true(t->clip == 0.25);
    assert_true(t->label_smoothing == 0);
    assert_true(t->seed == 1);
    assert_int_equal(t->precision, TT_PREC_FP32);
    assert_int_equal(t->eval_interval, 1000);
    assert_null(t->checkpoint_dir);
    assert_int_equal(t->checkpoint_interval, 0);

    assert_int_equal(s.eval.tgt_len, 32); /* the model's */
    assert_int_equal(s.eval.mem_len, 0);
    assert_int_equal(s.eval.clamp_len, 0);

    assert_null(s.data.train);
    assert_null(s.data.valid);
    assert_null(s.data.test);
    assert_string_equal(s.kernels.arch, "auto");
    assert_true(s.kernels.tune);

    assert_string_equal(s.path, "test.yaml");
    assert_string_equal(s.dir, ".");
    assert_int_equal(s.text_len, strlen(tensorized_min));
    assert_string_equal(s.text, tensorized_min);
    assert_round_trip(&s);
    tt_spec_free(&s);
    assert_true(is_zeroed(&s));
}

static void test_defaults_txl(void **state)
{
    (void)state;
    tt_spec s;
    parse_ok(txl_min, ".", &s);
    const tt_model_spec *m = &s.model;
    assert_int_equal(m->kind, TT_KIND_TXL);
    assert_int_equal(m->n_head, 10);
    assert_int_equal(m->d_head, 41);
    assert_int_equal(m->mem_len, 0);
    assert_int_equal(m->clamp_len, 0);
    assert_true(m->dropatt == 0);
    assert_int_equal(m->vocab, 0);
    assert_true(m->tie_weights);
    assert_int_equal(m->n_cutoffs, 0);
    assert_int_equal(m->div_val, 1);
    assert_int_equal(m->rank, 0);
    assert_int_equal(s.train.batch, 32);
    assert_int_equal(s.eval.tgt_len, 150); /* the model's */
    assert_int_equal(s.eval.mem_len, 0);
    assert_int_equal(s.eval.clamp_len, 0);
    assert_string_equal(s.kernels.arch, "auto");
    assert_round_trip(&s);
    tt_spec_free(&s);
}

static void test_full_specs(void **state)
{
    (void)state;
    tt_spec s;
    parse_ok(tensorized_full, ".", &s);
    assert_int_equal(s.model.vocab, 267735);
    assert_int_equal(s.model.n_cutoffs, 3);
    assert_int_equal(s.model.cutoffs[2], 200000);
    assert_int_equal(s.model.cutoffs_line, 11);
    assert_int_equal(s.model.cutoffs_col, 14);
    assert_int_equal(s.model.div_val, 2);
    assert_int_equal(s.model.cores, 2);
    assert_false(s.model.causal);
    assert_int_equal(s.model.position, TT_POS_KEY);
    assert_true(s.train.beta1 == 0.8 && s.train.beta2 == 0.98);
    assert_true(s.train.eps == 1e-9);
    assert_int_equal(s.train.schedule, TT_SCHED_INVSQRT);
    assert_int_equal(s.train.warmup, 4000);
    assert_true(s.train.seed == UINT64_MAX);
    assert_int_equal(s.train.precision, TT_PREC_BF16);
    assert_string_equal(s.train.checkpoint_dir, "runs/wt103 #1: \"best\" \\ \xc3\xa9");
    assert_int_equal(s.train.checkpoint_interval, 5000);
    assert_string_equal(s.data.test, "data/wiki test.tokens");
    assert_string_equal(s.kernels.arch, "sm_90a");
    assert_false(s.kernels.tune);
    assert_round_trip(&s);
    tt_spec_free(&s);

    parse_ok(txl_full, ".", &s);
    assert_int_equal(s.model.kind, TT_KIND_TXL);
    assert_int_equal(s.model.mem_len, 384);
    assert_int_equal(s.model.clamp_len, 1000);
    assert_true(s.model.dropatt == 0.05);
    assert_int_equal(s.model.n_cutoffs, 0);
    assert_true(s.train.label_smoothing == 0.3);
    assert_true(s.train.beta1 == 0 && s.train.beta2 == 0.5);
    assert_true(s.train.clip == 0);
    assert_true(s.train.seed == 0);
    assert_int_equal(s.train.precision, TT_PREC_TF32);
    assert_string_equal(s.train.checkpoint_dir, "/ckpt");
    assert_string_equal(s.kernels.arch, "sm_120");
    assert_int_equal(s.eval.tgt_len, 128);
    assert_int_equal(s.eval.mem_len, 1600);
    assert_int_equal(s.eval.clamp_len, 999);
    assert_round_trip(&s);
    tt_spec_free(&s);
}

/* eval: each key left out takes the model's value, whatever the order of the sections; the written
 * spec of a transformer-xl always has the section, a tensorized one's never (it could only repeat
 * model.seq_len). */
static void test_eval(void **state)
{
    (void)state;
#define TXL "model: {kind: transformer-xl, d_model: 410, layers: 16, seq_len: 150, d_inner: 2100, " \
            "n_head: 10, d_head: 41, mem_len: 150, clamp_len: 1000}\n"
    static const struct {
        const char *text;
        int tgt_len, mem_len, clamp_len;
    } cases[] = {
        {TXL, 150, 150, 1000},
        {TXL "eval: {}\n", 150, 150, 1000},
        {TXL "eval: {tgt_len: 64, mem_len: 640, clamp_len: 400}\n", 64, 640, 400},
        {TXL "eval: {mem_len: 640}\n", 150, 640, 1000},
        {TXL "eval: {tgt_len: 64}\n", 64, 150, 1000},
        {TXL "eval: {clamp_len: 0, mem_len: 0, tgt_len: 1}\n", 1, 0, 0},
        {"eval: {mem_len: 8192}\n" TXL, 150, 8192, 1000},
        {"eval:\n  clamp_len: 400\n" TXL "train: {batch: 4}\n", 150, 150, 400},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tt_spec s;
        parse_ok(cases[i].text, ".", &s);
        assert_int_equal(s.eval.tgt_len, cases[i].tgt_len);
        assert_int_equal(s.eval.mem_len, cases[i].mem_len);
        assert_int_equal(s.eval.clamp_len, cases[i].clamp_len);
        assert_int_equal(s.model.seq_len, 150);
        assert_int_equal(s.model.mem_len, 150);
        assert_int_equal(s.model.clamp_len, 1000);
        char *out = tt_spec_text(&s);
        char want[128];
        snprintf(want, sizeof want, "\neval:\n  tgt_len: %d\n  mem_len: %d\n  clamp_len: %d\n",
                 cases[i].tgt_len, cases[i].mem_len, cases[i].clamp_len);
        if (strstr(out, want) == NULL)
            fail_msg("case %zu: the written spec lacks%s\n%s", i, want, out);
        free(out);
        assert_round_trip(&s);
        tt_spec_free(&s);
    }
#undef TXL

    /* tensorized: tgt_len may be given if it is seq_len; nothing is written. */
    tt_spec s;
    char text[sizeof tensorized_min + 32];
    snprintf(text, sizeof text, "%seval: {tgt_len: 32}\n", tensorized_min);
    parse_ok(text, ".", &s);
    assert_int_equal(s.eval.tgt_len, 32);
    assert_int_equal(s.eval.mem_len, 0);
    assert_int_equal(s.eval.clamp_len, 0);
    char *out = tt_spec_text(&s);
    assert_null(strstr(out, "\neval:"));
    free(out);
    assert_round_trip(&s);
    tt_spec_free(&s);

    /* The diagnostics without a file of their own. */
    expect_error("eval: 64\n" MODEL_TZ, "t.yaml:1:7: eval: expected a mapping, got '64'");
    expect_error(MODEL_TZ "eval: {tgt_len: 64}\neval: {}\n", "t.yaml:3:1: duplicate section 'eval'");
    expect_error(MODEL_TZ "eval: {tgt_len: 31}\n",
                 "t.yaml:2:17: eval.tgt_len: 31 is not model.seq_len 32 (a tensorized model's Wo is "
                 "tied to N); for other evaluation strides use tt-eval's --stride");
    expect_error(MODEL_TZ "eval: {seq_len: 32}\n",
                 "t.yaml:2:8: unknown key 'seq_len' in eval (did you mean 'tgt_len'?)");
    expect_error(MODEL_TZ "eval: {mem_len: 0}\n",
                 "t.yaml:2:8: eval.mem_len: applies only to kind: transformer-xl");
    expect_error(MODEL_TZ "evaluation: {}\n",
                 "t.yaml:2:1: unknown section 'evaluation' (expected model, train, eval, data, "
                 "kernels)");
}

/* Spellings that are valid YAML for the same spec: flow style, quoted keys and enums, anchors, kind
 * after the keys that depend on it, a document marker, -0. */
static void test_accepted_forms(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "{model: {kind: tensorized, d_model: 256, layers: 3, seq_len: 32, d_inner: 2100, rank: "
        "40}}",
        "---\n# comment\nmodel:\n  rank: 40\n  \"d_model\": 256\n  layers: 3\n  seq_len: 32\n"
        "  d_inner: 2100\n  kind: 'tensorized'\n...\n",
        "model: &m\n  kind: tensorized\n  d_model: &w 256\n  layers: 3\n  seq_len: 32\n"
        "  d_inner: 2100\n  rank: 40\n  vocab: data\n  causal: true\ntrain:\n  seed: -0\n",
    };
    tt_spec ref;
    parse_ok(tensorized_min, ".", &ref);
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        tt_spec s;
        parse_ok(texts[i], ".", &s);
        ref.train.seed = i == 2 ? 0 : 1;
        assert_same_spec(&ref, &s);
        tt_spec_free(&s);
    }
    tt_spec_free(&ref);

    /* Text from memory need not end in a NUL. */
    char buf[sizeof tensorized_min + 8];
    memcpy(buf, tensorized_min, sizeof tensorized_min - 1);
    memcpy(buf + sizeof tensorized_min - 1, "garbage", 8);
    tt_spec s;
    char err[256];
    assert_int_equal(tt_spec_parse(buf, sizeof tensorized_min - 1, "m", NULL, &s, err, sizeof err),
                     0);
    assert_int_equal(s.text_len, sizeof tensorized_min - 1);
    assert_string_equal(s.text, tensorized_min);
    assert_string_equal(s.dir, ".");
    tt_spec_free(&s);
}

/* Diagnostics that need no file of their own: the error buffer and rules about suggestions. */
/* A spec that is not a regular file (a device, a FIFO, a directory) or larger than any spec
 * needs is refused in one line without being read: /dev/zero would fill memory, a FIFO or
 * /dev/urandom would never end. */
static void test_spec_file_kinds(void **state)
{
    (void)state;
    char dir[] = "/tmp/tt-spec-kinds-XXXXXX", path[512], err[512];
    assert_non_null(mkdtemp(dir));
    tt_spec s;
    const char *odd[] = {"/dev/zero", "/dev/urandom", "/dev/null", dir};
    for (size_t i = 0; i < sizeof odd / sizeof *odd; i++) {
        err[0] = 0;
        assert_int_equal(tt_spec_load(odd[i], &s, err, sizeof err), -1);
        char want[600];
        snprintf(want, sizeof want, "%s: not a regular file", odd[i]);
        assert_string_equal(err, want);
        assert_true(is_zeroed(&s));
    }
    snprintf(path, sizeof path, "%s/fifo.yaml", dir);
    assert_int_equal(mkfifo(path, 0644), 0);
    assert_int_equal(tt_spec_load(path, &s, err, sizeof err), -1); /* no writer: must not block */
    assert_non_null(strstr(err, "not a regular file"));
    unlink(path);
    snprintf(path, sizeof path, "%s/big.yaml", dir);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    for (size_t n = 0; n <= TT_SPEC_MAX_BYTES; n += 16) fputs("# a long comment\n", f);
    fclose(f);
    assert_int_equal(tt_spec_load(path, &s, err, sizeof err), -1);
    assert_non_null(strstr(err, "more than the 1048576"));
    assert_null(strchr(err, '\n'));
    unlink(path);
    rmdir(dir);
}

static void test_inline_errors(void **state)
{
#define MODEL "model: {kind: tensorized, rank: 1, d_model: 8, layers: 1, seq_len: 1, d_inner: 1}\n"
    (void)state;
    expect_error("model: {kind: tensorized, x: 1}", "t.yaml:1:27: unknown key 'x' in model");
    expect_error("model: {kind: tensorized, Rank: 1}",
                 "t.yaml:1:27: unknown key 'Rank' in model (did you mean 'rank'?)");
    expect_error("model: {kind: tensorized, rank: 1, dmodel: 8}",
                 "t.yaml:1:36: unknown key 'dmodel' in model (did you mean 'd_model'?)");
    expect_error("model: {kind: tensorized, rank: 0x10}",
                 "t.yaml:1:33: model.rank: expected an integer, got '0x10'");
    expect_error("model: {kind: tensorized, dropout: 0x1p-3}",
                 "t.yaml:1:36: model.dropout: expected a number, got '0x1p-3'");
    expect_error("model: {kind: tensorized, dropout: inf}",
                 "t.yaml:1:36: model.dropout: expected a number, got 'inf'");
    expect_error("model: {kind: tensorized, causal: True}",
                 "t.yaml:1:35: model.causal: expected true or false, got 'True'");
    expect_error(
        MODEL "kernels: {arch: sm_9}",
        "t.yaml:2:17: kernels.arch: expected auto or sm_80 or newer (e.g. sm_90), got 'sm_9'");
    expect_error(
        MODEL "kernels: {arch: sm_90b}",
        "t.yaml:2:17: kernels.arch: expected auto or sm_80 or newer (e.g. sm_90), got 'sm_90b'");
    expect_error(
        MODEL "kernels: {arch: sm_1000}",
        "t.yaml:2:17: kernels.arch: expected auto or sm_80 or newer (e.g. sm_90), got 'sm_1000'");
    expect_error(MODEL "train: {steps: 10, schedule: {warmup: 11}}",
                 "t.yaml:2:39: train.schedule.warmup: 11 is more than train.steps 10");
    expect_error(MODEL "train: {schedule: {warmup: 10001}}",
                 "t.yaml:2:28: train.schedule.warmup: 10001 is more than train.steps 10000 (the "
                 "default)");

    /* A small buffer is truncated, never overrun; a NULL one is allowed. */
    tt_spec s;
    char small[12];
    memset(small, 'x', sizeof small);
    assert_int_equal(tt_spec_parse("[1]", 3, "name.yaml", ".", &s, small, 8), -1);
    assert_string_equal(small, "name.ya");
    assert_int_equal(small[8], 'x');
    assert_int_equal(tt_spec_parse("[1]", 3, "name.yaml", ".", &s, NULL, 0), -1);
    assert_true(is_zeroed(&s));
#undef MODEL
}

static void test_paths(void **state)
{
    (void)state;
    static const char text[] = "model: {kind: tensorized, d_model: 8, layers: 1, seq_len: 4, "
                               "d_inner: 8, rank: 2}\n"
                               "train: {checkpoint: {dir: ckpt}}\n"
                               "data: {train: ../data/ptb.train.txt, valid: /abs/ptb.valid.txt}\n";
    static const struct {
        const char *dir, *train, *valid, *ckpt;
    } cases[] = {
        {"specs", "specs/../data/ptb.train.txt", "/abs/ptb.valid.txt", "specs/ckpt"},
        {"specs/", "specs/../data/ptb.train.txt", "/abs/ptb.valid.txt", "specs/ckpt"},
        {".", "../data/ptb.train.txt", "/abs/ptb.valid.txt", "ckpt"},
        {"/", "/../data/ptb.train.txt", "/abs/ptb.valid.txt", "/ckpt"},
        {"/srv/tt", "/srv/tt/../data/ptb.train.txt", "/abs/ptb.valid.txt", "/srv/tt/ckpt"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        tt_spec s;
        parse_ok(text, cases[i].dir, &s);
        assert_string_equal(s.dir, cases[i].dir);
        assert_string_equal(s.data.train, cases[i].train);
        assert_string_equal(s.data.valid, cases[i].valid);
        assert_null(s.data.test);
        assert_string_equal(s.train.checkpoint_dir, cases[i].ckpt);
        assert_round_trip(
            &s); /* resolved paths are written, and read back unchanged with dir "." */
        tt_spec_free(&s);
    }

    /* tt_spec_load: the folder of the file, its bytes kept. */
    char tmp[] = "/tmp/tt_spec_test_XXXXXX";
    assert_non_null(mkdtemp(tmp));
    char sub[64], file[96], err[512] = "", want[256];
    snprintf(sub, sizeof sub, "%s/sub", tmp);
    snprintf(file, sizeof file, "%s//spec.yaml", sub);
    assert_int_equal(mkdir(sub, 0700), 0);
    FILE *f = fopen(file, "wb");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
    tt_spec s;
    assert_int_equal(tt_spec_load(file, &s, err, sizeof err), 0);
    assert_string_equal(s.path, file);
    assert_string_equal(s.dir, sub);
    assert_int_equal(s.text_len, strlen(text));
    assert_string_equal(s.text, text);
    snprintf(want, sizeof want, "%s/../data/ptb.train.txt", sub);
    assert_string_equal(s.data.train, want);
    tt_spec_free(&s);

    /* Unreadable files: one line naming the file. */
    snprintf(want, sizeof want, "%s/missing.yaml", sub);
    assert_int_equal(tt_spec_load(want, &s, err, sizeof err), -1);
    char msg[512];
    snprintf(msg, sizeof msg, "%s: cannot open: No such file or directory", want);
    assert_string_equal(err, msg);
    assert_true(is_zeroed(&s));
    assert_int_equal(tt_spec_load(sub, &s, err, sizeof err), -1);
    snprintf(msg, sizeof msg, "%s: not a regular file", sub);
    assert_string_equal(err, msg);

    remove(file);
    rmdir(sub);
    rmdir(tmp);
}

static void test_check_vocab(void **state)
{
    (void)state;
    static const char text[] = "model:\n  kind: tensorized\n  d_model: 256\n  layers: 3\n"
                               "  seq_len: 32\n  d_inner: 2100\n  rank: 40\n"
                               "  adaptive:\n    cutoffs:\n      - 20000\n      - 40000\n";
    tt_spec s;
    char err[512] = "";
    parse_ok(text, ".", &s);
    assert_int_equal(s.model.cutoffs_line, 10);
    assert_int_equal(s.model.cutoffs_col, 7);
    assert_int_equal(tt_spec_check_vocab(&s, 40001, err, sizeof err), 0);
    assert_int_equal(tt_spec_check_vocab(&s, 30000, err, sizeof err), -1);
    assert_string_equal(err, "test.yaml:10:7: model.adaptive.cutoffs: 40000 is not below the "
                             "vocabulary size 30000 taken from the data");
    assert_int_equal(tt_spec_check_vocab(&s, 10000, err, sizeof err), -1);
    assert_string_equal(err, "test.yaml:10:7: model.adaptive.cutoffs: 20000 is not below the "
                             "vocabulary size 10000 taken from the data");
    tt_spec_free(&s);

    parse_ok(tensorized_min, ".", &s);
    assert_int_equal(tt_spec_check_vocab(&s, 2, err, sizeof err), 0);
    assert_int_equal(tt_spec_check_vocab(&s, 1, err, sizeof err), -1);
    assert_string_equal(
        err, "test.yaml:1:1: model.vocab: the vocabulary size 1 taken from the data is below 2");
    tt_spec_free(&s);
}

static void test_names(void **state)
{
    (void)state;
    assert_string_equal(tt_kind_name(TT_KIND_TENSORIZED), "tensorized");
    assert_string_equal(tt_kind_name(TT_KIND_TXL), "transformer-xl");
    assert_string_equal(tt_precision_name(TT_PREC_FP32), "fp32");
    assert_string_equal(tt_precision_name(TT_PREC_TF32), "tf32");
    assert_string_equal(tt_precision_name(TT_PREC_BF16), "bf16");
    assert_string_equal(tt_schedule_name(TT_SCHED_COSINE), "cosine");
    assert_string_equal(tt_schedule_name(TT_SCHED_INVSQRT), "inverse-sqrt");
    assert_string_equal(tt_position_name(TT_POS_NONE), "none");
    assert_string_equal(tt_position_name(TT_POS_KEY), "key");
}

static void test_free_zeroed(void **state)
{
    (void)state;
    tt_spec s;
    memset(&s, 0, sizeof s);
    tt_spec_free(&s);
    tt_spec_free(&s);
    tt_spec_free(NULL);
    assert_true(is_zeroed(&s));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_invalid_specs),       cmocka_unit_test(test_project_specs),
        cmocka_unit_test(test_defaults_tensorized), cmocka_unit_test(test_defaults_txl),
        cmocka_unit_test(test_full_specs),          cmocka_unit_test(test_eval),
        cmocka_unit_test(test_accepted_forms),
        cmocka_unit_test(test_spec_file_kinds),
        cmocka_unit_test(test_inline_errors),       cmocka_unit_test(test_paths),
        cmocka_unit_test(test_check_vocab),         cmocka_unit_test(test_names),
        cmocka_unit_test(test_free_zeroed),
    };
    return cmocka_run_group_tests_name("spec", tests, NULL, NULL);
}
