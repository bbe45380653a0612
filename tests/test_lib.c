/* libtt (include/tt.h) on the CPU, against tt-eval and against itself: small models trained here
 * for a few steps (the tensorized model with a full softmax, with an adaptive softmax and
 * projections, and Transformer-XL with an adaptive softmax), then
 *   - tt_score's log-probabilities of a split sum to tt-eval's (the engine's own output layer),
 *     at two strides and for Transformer-XL's segments with memory;
 *   - tt_next's distribution sums to 1 and gives each token the log-probability tt_score gives
 *     it with the same context (stride 1: the window of the last seq_len tokens);
 *   - greedy generation picks tt_next's most likely token every time, past several windows or
 *     segments; sampling repeats itself from the same seed; a callback stops it;
 *   - every error is a code and a line, on bad arguments, files and ids;
 *   - tt-generate and tt-eval --text --per-line, the tools built on it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_model.h"
#include "device.h"
#include "model.h"
#include "spec.h"
#include "testutil.h"
#include "tt.h"
#include "util.h"

#ifndef TT_GENERATE_BIN
#error "TT_GENERATE_BIN is set by tests/CMakeLists.txt"
#endif

#define TIMEOUT 120.0

enum { PLAIN, ADAPTIVE, TXL, MODELS };
static const char *const model_names[MODELS] = {"tensorized", "tensorized, adaptive softmax",
                                                "transformer-xl, adaptive softmax"};

typedef struct {
    char root[64];
    char *env[2];
    char *spec[MODELS], *ckpt[MODELS];
    char *valid;
    char *valid_text;
} fixture;

static fixture fx;

/* Lines of ten words of w0 .. w19, word j of line i being (7 i + 3 j + (i / 5) j^2) mod 20: some
 * pattern to learn, and no two lines alike. */
static void write_corpus(const char *path, int lines, int shift)
{
    tt_buf b = {0};
    for (int i = 0; i < lines; i++)
        for (int j = 0; j < 10; j++)
            tt_buf_printf(&b, "w%d%c", (7 * (i + shift) + 3 * j + (i / 5) * j * j) % 20,
                          j == 9 ? '\n' : ' ');
    tu_write_file(path, b.data, b.len);
    tt_buf_free(&b);
}

static char *write_spec(const char *name, int which, const char *train, const char *valid)
{
    const char *model =
        which == TXL ? "  kind: transformer-xl\n  d_model: 32\n  layers: 2\n  n_head: 2\n"
                       "  d_head: 16\n  seq_len: 8\n  mem_len: 8\n  d_inner: 64\n"
                     : "  kind: tensorized\n  d_model: 32\n  layers: 2\n  rank: 8\n  cores: 2\n"
                       "  seq_len: 8\n  d_inner: 64\n  causal: true\n";
    const char *adaptive = which == PLAIN ? ""
                           : which == ADAPTIVE ? "  adaptive: {cutoffs: [6, 14], div_val: 2}\n"
                                               : "  adaptive: {cutoffs: [10]}\n";
    char *text = tt_xasprintf("model:\n%s  vocab: data\n  dropout: 0.1\n%s"
                              "train:\n  batch: 4\n  steps: 12\n  optimizer: {lr: 1.0e-2}\n"
                              "  schedule: {kind: cosine, warmup: 2}\n  seed: 3\n"
                              "  precision: fp32\n  eval_interval: 0\n"
                              "data:\n  train: %s\n  valid: %s\n",
                              model, adaptive, train, valid);
    char *path = tt_xasprintf("%s/%s", fx.root, name);
    tu_write_text(path, text);
    free(text);
    return path;
}

static void run_ok(const char *what, const char *const *argv)
{
    tu_proc p;
    tu_proc_start(&p, argv, (const char *const *)fx.env);
    tu_proc_wait(&p, TIMEOUT);
    if (p.timed_out || p.status != 0) fail_msg("%s: status %d\n%s%s", what, p.status, p.out, p.err);
    tu_proc_free(&p);
}

static int group_setup(void **state)
{
    (void)state;
    tu_temp_dir("lib", fx.root, sizeof fx.root);
    fx.env[0] = tt_xasprintf("TTGEN_CACHE_DIR=%s/cache", fx.root);
    char *train = tt_xasprintf("%s/train.txt", fx.root);
    fx.valid = tt_xasprintf("%s/valid.txt", fx.root);
    write_corpus(train, 200, 0);
    write_corpus(fx.valid, 9, 3); /* 99 tokens: several windows and segments */
    size_t len;
    fx.valid_text = tu_read_file(fx.valid, &len);
    for (int k = 0; k < MODELS; k++) {
        char name[32];
        snprintf(name, sizeof name, "m%d.yaml", k);
        fx.spec[k] = write_spec(name, k, train, fx.valid);
        fx.ckpt[k] = tt_xasprintf("%s/ckpt-%d", fx.root, k);
        const char *argv[] = {TT_TRAIN_BIN, fx.spec[k], "--checkpoint-dir", fx.ckpt[k],
                              "--device", "cpu", "--quiet", NULL};
        run_ok("training", argv);
    }
    free(train);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    tu_rm_rf(fx.root);
    for (int k = 0; k < MODELS; k++) free(fx.spec[k]), free(fx.ckpt[k]);
    free(fx.valid), free(fx.valid_text), free(fx.env[0]);
    return 0;
}

static tt_model *open_model(int k)
{
    tt_model *m = NULL;
    tt_error e;
    if (tt_open(&m, fx.spec[k], fx.ckpt[k], "cpu", &e) != TT_OK) fail_msg("tt_open: %s", e.message);
    return m;
}

/* The valid split's ids as tt-eval reads them (each line's words, then <eos>). */
static int32_t *valid_ids(const tt_model *m, size_t *n)
{
    tt_error e;
    if (tt_tokenize(m, fx.valid_text, 1, NULL, 0, n, NULL, &e) != TT_OK) fail_msg("%s", e.message);
    int32_t *ids = tt_xmalloc(*n * sizeof *ids);
    if (tt_tokenize(m, fx.valid_text, 1, ids, *n, n, NULL, &e) != TT_OK) fail_msg("%s", e.message);
    return ids;
}

/* tt-eval --json's nll times its tokens: the split's summed -log p. */
static double eval_nll(int k, const char *stride)
{
    const char *argv[] = {TT_EVAL_BIN, fx.spec[k], "--checkpoint", fx.ckpt[k], "--device", "cpu",
                          "--json", "--batch", "1", stride ? "--stride" : NULL, stride, NULL};
    tu_proc p;
    tu_proc_start(&p, argv, (const char *const *)fx.env);
    tu_proc_wait(&p, TIMEOUT);
    tu_expect_exit(&p, 0, "tt-eval");
    const char *nll = strstr(p.out, "\"nll\":"), *tokens = strstr(p.out, "\"tokens\":");
    if (!nll || !tokens) fail_msg("tt-eval's JSON lacks nll or tokens: %s", p.out);
    const double v = strtod(nll + 6, NULL) * strtod(tokens + 9, NULL);
    tu_proc_free(&p);
    return v;
}

static void test_score_matches_eval(void **state)
{
    (void)state;
    for (int k = 0; k < MODELS; k++) {
        tt_model *m = open_model(k);
        size_t n;
        int32_t *ids = valid_ids(m, &n);
        double *lp = tt_xmalloc(n * sizeof *lp);
        for (int s = 0; s < (k == TXL ? 1 : 2); s++) {
            const int stride = s ? tt_context_length(m) / 2 : 0;
            char num[16];
            snprintf(num, sizeof num, "%d", stride);
            tt_error e;
            if (tt_score(m, ids, n, stride, lp, &e) != TT_OK) fail_msg("tt_score: %s", e.message);
            double sum = 0;
            for (size_t i = 0; i + 1 < n; i++) sum -= lp[i];
            const double want = eval_nll(k, s ? num : NULL);
            print_message("  %-34s stride %d: tt_score %.12f, tt-eval %.12f\n", model_names[k],
                          stride, sum, want);
            if (!(fabs(sum - want) <= 1e-9 * want))
                fail_msg("%s, stride %d: tt_score sums to %.15g, tt-eval %.15g", model_names[k],
                         stride, sum, want);
        }
        free(lp), free(ids);
        tt_close(m);
    }
}

static void test_next_matches_score(void **state)
{
    (void)state;
    for (int k = 0; k < MODELS; k++) {
        tt_model *m = open_model(k);
        size_t n;
        int32_t *ids = valid_ids(m, &n);
        const size_t use = 3 * (size_t)tt_context_length(m) + 2; /* past two windows or segments */
        assert_true(n > use);
        const long v = tt_vocab_size(m);
        double *lp = tt_xmalloc(use * sizeof *lp), *dist = tt_xmalloc((size_t)v * sizeof *dist);
        tt_error e;
        if (tt_score(m, ids, use + 1, 1, lp, &e) != TT_OK) fail_msg("tt_score: %s", e.message);
        double worst = 0, mass_err = 0;
        for (size_t i = 0; i < use; i++) {
            if (tt_next(m, ids, i + 1, dist, &e) != TT_OK) fail_msg("tt_next: %s", e.message);
            double mass = 0;
            for (long t = 0; t < v; t++) mass += exp(dist[t]);
            mass_err = fmax(mass_err, fabs(mass - 1));
            worst = fmax(worst, fabs(dist[ids[i + 1]] - lp[i]));
        }
        print_message("  %-34s %zu contexts: |tt_next - tt_score| at most %.1e, |mass - 1| at "
                      "most %.1e\n", model_names[k], use, worst, mass_err);
        if (worst > 1e-12) fail_msg("%s: tt_next and tt_score differ by %g", model_names[k], worst);
        if (mass_err > 1e-9) fail_msg("%s: a distribution sums to 1 +- %g", model_names[k], mass_err);
        free(lp), free(dist), free(ids);
        tt_close(m);
    }
}

static int count_stop(void *ctx, int32_t id, const char *word)
{
    (void)id, (void)word;
    return ++*(int *)ctx == 5;
}

static void test_generate(void **state)
{
    (void)state;
    for (int k = 0; k < MODELS; k++) {
        tt_model *m = open_model(k);
        const long v = tt_vocab_size(m);
        const size_t steps = 3 * (size_t)tt_context_length(m) + 3, np = 3;
        int32_t *ctx = tt_xmalloc((np + steps) * sizeof *ctx), *out = tt_xmalloc(steps * sizeof *out);
        size_t n;
        int32_t *ids = valid_ids(m, &n);
        memcpy(ctx, ids, np * sizeof *ctx);
        double *dist = tt_xmalloc((size_t)v * sizeof *dist);
        tt_error e;
        tt_sample_opts greedy = {.temperature = 0};
        size_t made;
        if (tt_generate(m, ctx, np, steps, &greedy, out, &made, NULL, NULL, &e) != TT_OK)
            fail_msg("tt_generate: %s", e.message);
        assert_int_equal(made, steps);
        for (size_t i = 0; i < steps; i++) { /* each the argmax of tt_next on what came before */
            if (tt_next(m, ctx, np + i, dist, &e) != TT_OK) fail_msg("tt_next: %s", e.message);
            long best = 0;
            for (long t = 1; t < v; t++) best = dist[t] > dist[best] ? t : best;
            if (out[i] != best)
                fail_msg("%s: greedy token %zu is %d, tt_next's most likely %ld", model_names[k], i,
                         (int)out[i], best);
            ctx[np + i] = out[i];
        }
        /* sampling: the same seed the same tokens; top_k 1 the greedy ones */
        int32_t *a = tt_xmalloc(steps * sizeof *a), *b = tt_xmalloc(steps * sizeof *b);
        tt_sample_opts s = {.temperature = 1.0, .top_p = 0.9, .seed = 11};
        assert_int_equal(tt_generate(m, ctx, np, steps, &s, a, NULL, NULL, NULL, &e), TT_OK);
        assert_int_equal(tt_generate(m, ctx, np, steps, &s, b, NULL, NULL, NULL, &e), TT_OK);
        assert_memory_equal(a, b, steps * sizeof *a);
        s.seed = 12;
        assert_int_equal(tt_generate(m, ctx, np, steps, &s, b, NULL, NULL, NULL, &e), TT_OK);
        if (!memcmp(a, b, steps * sizeof *a)) fail_msg("%s: seeds 11 and 12 gave the same text", model_names[k]);
        const tt_sample_opts top1 = {.temperature = 2.0, .top_k = 1, .seed = 5};
        assert_int_equal(tt_generate(m, ctx, np, steps, &top1, b, NULL, NULL, NULL, &e), TT_OK);
        assert_memory_equal(out, b, steps * sizeof *b);
        int calls = 0;
        assert_int_equal(tt_generate(m, ctx, np, steps, &s, a, &made, count_stop, &calls, &e), TT_OK);
        assert_int_equal(made, 5);
        print_message("  %-34s %zu greedy tokens each tt_next's most likely; sampling repeats "
                      "from a seed\n", model_names[k], steps);
        free(ctx), free(out), free(ids), free(dist), free(a), free(b);
        tt_close(m);
    }
}

static void expect_code(tt_status got, tt_status want, const tt_error *e, const char *part)
{
    if (got != want || e->code != want)
        fail_msg("status %d (err %d), want %d: %s", got, e->code, want, e->message);
    if (!e->message[0] || strchr(e->message, '\n'))
        fail_msg("the message is not one line: '%s'", e->message);
    if (part && !strstr(e->message, part)) fail_msg("'%s' lacks '%s'", e->message, part);
    print_message("  %d: %s\n", want, e->message);
}

static void test_errors(void **state)
{
    (void)state;
    tt_model *m = NULL;
    tt_error e;
    char *missing = tt_xasprintf("%s/no-such-checkpoint", fx.root);
    expect_code(tt_open(&m, fx.spec[PLAIN], missing, "cpu", &e), TT_ERR_CHECKPOINT, &e, missing);
    assert_null(m);
    expect_code(tt_open(&m, missing, fx.ckpt[PLAIN], "cpu", &e), TT_ERR_SPEC, &e, missing);
    expect_code(tt_open(&m, fx.spec[PLAIN], fx.ckpt[TXL], "cpu", &e), TT_ERR_CHECKPOINT, &e, NULL);
    expect_code(tt_open(&m, fx.spec[PLAIN], fx.ckpt[PLAIN], "tpu", &e), TT_ERR_ARGUMENT, &e, "tpu");
    expect_code(tt_open(NULL, fx.spec[PLAIN], fx.ckpt[PLAIN], "cpu", &e), TT_ERR_ARGUMENT, &e, NULL);
    tt_device_info info;
    char why[256];
    if (tt_device_query(0, &info, why, sizeof why) != 0)
        expect_code(tt_open(&m, fx.spec[PLAIN], fx.ckpt[PLAIN], "cuda", &e), TT_ERR_DEVICE, &e,
                    "CUDA");
    else
        print_message("  (a GPU is here: --device cuda's error not tried)\n");
    free(missing);

    m = open_model(PLAIN);
    const long v = tt_vocab_size(m);
    int32_t ids[3] = {1, 2, (int32_t)v};
    double lp[3], *dist = tt_xmalloc((size_t)v * sizeof *dist);
    expect_code(tt_score(m, ids, 3, 0, lp, &e), TT_ERR_TOKEN, &e, "outside the vocabulary");
    expect_code(tt_next(m, ids, 3, dist, &e), TT_ERR_TOKEN, &e, NULL);
    expect_code(tt_score(m, ids, 1, 0, lp, &e), TT_ERR_ARGUMENT, &e, NULL);
    expect_code(tt_score(m, ids, 2, tt_context_length(m) + 1, lp, &e), TT_ERR_ARGUMENT, &e, NULL);
    const tt_sample_opts hot = {.temperature = -1};
    expect_code(tt_generate(m, ids, 2, 3, &hot, NULL, NULL, NULL, NULL, &e), TT_ERR_ARGUMENT, &e,
                "temperature");
    size_t n, unknown;
    int32_t few[2];
    expect_code(tt_tokenize(m, "w1 w2 w3", 0, few, 2, &n, NULL, &e), TT_ERR_ARGUMENT, &e, "3 tokens");
    assert_int_equal(tt_tokenize(m, "w1 nosuchword\nw2\n\n", 1, NULL, 0, &n, &unknown, &e), TT_OK);
    assert_int_equal(n, 6); /* w1 <unk> <eos> w2 <eos> <eos> */
    assert_int_equal(unknown, 1);
    expect_code(tt_tokenize(m, "w1\nw2 \xff\n", 1, NULL, 0, &n, NULL, &e), TT_ERR_ARGUMENT, &e,
                "text:2: invalid UTF-8");
    assert_null(tt_word(m, (int32_t)v));
    assert_string_equal(tt_word(m, tt_eos_id(m)), "<eos>");
    free(dist);
    tt_close(m);
    tt_close(NULL);
}

/* The window a row at a time (tt_cpu_rows, libtt's generation as the window fills) gives the
 * bits of the whole window's forward for every row: without and with the adaptive softmax's
 * projections, and with position: key (u, v, P), on random weights. */
static void test_rows_match_window(void **state)
{
    (void)state;
    for (int variant = 0; variant < 3; variant++) {
        tt_spec spec;
        char err[512];
        if (tt_spec_load(fx.spec[variant ? ADAPTIVE : PLAIN], &spec, err, sizeof err) != 0)
            fail_msg("%s", err);
        if (variant == 2) spec.model.position = TT_POS_KEY;
        tt_layout l;
        const long vocab = 22;
        if (tt_layout_build(&spec.model, vocab, &l, err, sizeof err) != 0) fail_msg("%s", err);
        float *w = tt_xmalloc(l.n_floats * sizeof *w);
        tt_layout_init(&l, w, 7 + (uint64_t)variant);
        for (size_t i = 0; i < l.n_floats; i++) w[i] += 0.01f * (float)((i * 2654435761u) % 97) / 97;
        const int n = spec.model.seq_len, d = spec.model.d_model;
        int32_t in[64];
        for (int i = 0; i < n; i++) in[i] = (int32_t)((5 * i + variant) % vocab);
        tt_cpu_lm lm;
        tt_cpu_lm_init(&lm, &l, 1);
        const tt_lm_opts o = {.train = false};
        tt_lm_result res;
        tt_cpu_lm_run(&lm, w, NULL, in, in, &o, &res);
        const float *whole = tt_cpu_lm_hidden(&lm);
        tt_cpu_rows *rows = tt_cpu_rows_open(&l, w);
        int differ = 0;
        for (int i = 0; i < n; i++)
            differ += memcmp(tt_cpu_rows_push(rows, in[i]), whole + (size_t)i * d, (size_t)d * 4) != 0;
        print_message("  variant %d: %d of %d rows differ from the window's forward\n", variant,
                      differ, n);
        if (differ) fail_msg("variant %d: %d rows a row at a time differ from the window's", variant,
                             differ);
        tt_cpu_rows_close(rows);
        tt_cpu_lm_free(&lm);
        free(w);
        tt_layout_free(&l);
        tt_spec_free(&spec);
    }
}

/* A failure inside (TT_FAULT_LIB_PANIC=3: the third forward pass fails as a CUDA error would)
 * is a code and a line, the process goes on, the model refuses further work and closes. */
static void test_internal_error(void **state)
{
    (void)state;
    setenv("TT_FAULT_LIB_PANIC", "3", 1);
    tt_model *m = open_model(TXL);
    unsetenv("TT_FAULT_LIB_PANIC");
    size_t n;
    int32_t *ids = valid_ids(m, &n);
    double *lp = tt_xmalloc(n * sizeof *lp);
    tt_error e;
    expect_code(tt_score(m, ids, n, 0, lp, &e), TT_ERR_INTERNAL, &e, "TT_FAULT_LIB_PANIC");
    expect_code(tt_next(m, ids, 3, lp, &e), TT_ERR_INTERNAL, &e, "can only be closed");
    tt_close(m);
    m = open_model(TXL); /* another model is not touched by it */
    assert_int_equal(tt_score(m, ids, n, 0, lp, &e), TT_OK);
    tt_close(m);
    free(lp), free(ids);
}

/* tt-generate: the same seed the same text; greedy the library's; notes and errors in a line. */
static void test_generate_cli(void **state)
{
    (void)state;
    char *outs[2];
    for (int i = 0; i < 2; i++) {
        const char *argv[] = {TT_GENERATE_BIN, fx.spec[TXL], "--checkpoint", fx.ckpt[TXL],
                              "--device", "cpu", "--prompt", "w3 w9 nosuchword", "--tokens", "30",
                              "--seed", "7", "--top-k", "5", NULL};
        tu_proc p;
        tu_proc_start(&p, argv, (const char *const *)fx.env);
        tu_proc_wait(&p, TIMEOUT);
        tu_expect_exit(&p, 0, "tt-generate");
        if (!strstr(p.err, "1 word of the prompt is not in the vocabulary"))
            fail_msg("no note of the unknown word:\n%s", p.err);
        outs[i] = tt_xstrdup(p.out);
        tu_proc_free(&p);
    }
    assert_string_equal(outs[0], outs[1]);
    print_message("  tt-generate twice with seed 7: the same text: %.60s...\n", outs[0]);
    free(outs[0]), free(outs[1]);
    /* a prompt longer than the window: cut to it, with a note, and the same words as its last
     * window alone gives (greedy) */
    tt_buf longer = {0};
    for (int i = 0; i < 30; i++) tt_buf_printf(&longer, "w%d ", (5 * i) % 20);
    const char *tail = longer.data + strlen(longer.data) - 3 * 7; /* "wX " words, last 7 */
    while (*tail != ' ') tail++;
    char *outs2[2];
    for (int i = 0; i < 2; i++) {
        const char *argv[] = {TT_GENERATE_BIN, fx.spec[PLAIN], "--checkpoint", fx.ckpt[PLAIN],
                              "--device", "cpu", "--prompt", i ? tail + 1 : longer.data,
                              "--tokens", "12", "--temperature", "0", NULL};
        tu_proc p;
        tu_proc_start(&p, argv, (const char *const *)fx.env);
        tu_proc_wait(&p, TIMEOUT);
        tu_expect_exit(&p, 0, "tt-generate with a long prompt");
        if (!i && !strstr(p.err, "more than the window of 8: the model reads its last 8"))
            fail_msg("no note that the prompt was cut:\n%s", p.err);
        if (!i) print_message("  %s", p.err);
        outs2[i] = tt_xstrdup(p.out);
        tu_proc_free(&p);
    }
    assert_string_equal(outs2[0], outs2[1]);
    free(outs2[0]), free(outs2[1]);
    tt_buf_free(&longer);
    char *nul = tt_xasprintf("%s/nul-prompt.txt", fx.root);
    tu_write_file(nul, "w1 w2\0w3\n", 9);
    char *latin1 = tt_xasprintf("%s/latin1-prompt.txt", fx.root);
    tu_write_file(latin1, "w1 caf\xe9\n", 8);
    const char *bad[][9] = {
        {TT_GENERATE_BIN, fx.spec[PLAIN], "--checkpoint", "/nonexistent", "--prompt", "w1", NULL},
        {TT_GENERATE_BIN, fx.spec[PLAIN], "--checkpoint", fx.ckpt[TXL], "--prompt", "w1", NULL},
        {TT_GENERATE_BIN, fx.spec[PLAIN], "--checkpoint", fx.ckpt[PLAIN], "--prompt-file",
         "/nonexistent", NULL},
        {TT_GENERATE_BIN, fx.spec[PLAIN], "--checkpoint", fx.ckpt[PLAIN], "--prompt-file", nul,
         NULL},
        {TT_GENERATE_BIN, fx.spec[PLAIN], "--checkpoint", fx.ckpt[PLAIN], "--prompt-file", latin1,
         NULL},
        {TT_GENERATE_BIN, fx.spec[PLAIN], "--checkpoint", fx.ckpt[PLAIN], "--tokens", NULL},
        {TT_GENERATE_BIN, fx.spec[PLAIN], "--checkpoint", fx.ckpt[PLAIN], "--top-p", "1.5", NULL},
        {TT_GENERATE_BIN, fx.spec[PLAIN], "--checkpoint", fx.ckpt[PLAIN], "--prompt", "a",
         "--prompt-file", "b", NULL},
        {TT_GENERATE_BIN, fx.spec[PLAIN], "--prompt", "w1", NULL},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        tu_proc p;
        tu_proc_start(&p, bad[i], (const char *const *)fx.env);
        tu_proc_wait(&p, TIMEOUT);
        tu_expect_exit(&p, 2, "a bad tt-generate");
        if (tu_count_lines(p.err) != 1 || strncmp(p.err, "tt-generate: ", 13))
            fail_msg("not one line starting with tt-generate:\n%s", p.err);
        print_message("  %s", p.err);
        tu_proc_free(&p);
    }
    free(nul), free(latin1);
}

/* tt-eval --text --per-line: a line's logprob is tt_score's of <eos> + its words + <eos>, and the
 * last object (--json) adds them up. */
static void test_eval_per_line(void **state)
{
    (void)state;
    const int k = ADAPTIVE;
    char *text = tt_xasprintf("%s/lines.txt", fx.root);
    tu_write_text(text, "w1 w2 w3\n\nw4 nosuchword w5 w6\n");
    const char *argv[] = {TT_EVAL_BIN, fx.spec[k], "--checkpoint", fx.ckpt[k], "--device", "cpu",
                          "--text", text, "--per-line", "--json", NULL};
    tu_proc p;
    tu_proc_start(&p, argv, (const char *const *)fx.env);
    tu_proc_wait(&p, TIMEOUT);
    tu_expect_exit(&p, 0, "tt-eval --per-line");
    assert_int_equal(tu_count_lines(p.out), 4);
    tt_model *m = open_model(k);
    const char *lines[] = {"w1 w2 w3\n", "\n", "w4 nosuchword w5 w6\n"};
    const char *at = p.out;
    double total = 0;
    for (int i = 0; i < 3; i++) {
        int32_t ids[8];
        size_t n;
        double lp[8], want = 0;
        tt_error e;
        ids[0] = tt_eos_id(m);
        assert_int_equal(tt_tokenize(m, lines[i], 1, ids + 1, 7, &n, NULL, &e), TT_OK);
        assert_int_equal(tt_score(m, ids, n + 1, 0, lp, &e), TT_OK);
        for (size_t j = 0; j < n; j++) want += lp[j];
        const char *lpos = strstr(at, "\"logprob\":");
        assert_non_null(lpos);
        const double got = strtod(lpos + 10, NULL);
        if (fabs(got - want) > 1e-12 * fabs(want))
            fail_msg("line %d: logprob %.17g, want %.17g", i + 1, got, want);
        char tok[32];
        snprintf(tok, sizeof tok, "\"tokens\":%zu", n);
        if (!strstr(at, tok)) fail_msg("line %d lacks %s: %s", i + 1, tok, at);
        total += want;
        at = strchr(at, '\n') + 1;
    }
    const double got = strtod(strstr(at, "\"logprob\":") + 10, NULL);
    if (fabs(got - total) > 1e-12 * fabs(total)) fail_msg("the total %.17g, want %.17g", got, total);
    print_message("  %s", p.out);
    tu_proc_free(&p);
    tt_close(m);
    const char *bad[] = {TT_EVAL_BIN, fx.spec[k], "--checkpoint", fx.ckpt[k], "--per-line", NULL};
    tu_proc_start(&p, bad, (const char *const *)fx.env);
    tu_proc_wait(&p, TIMEOUT);
    tu_expect_exit(&p, 2, "--per-line without --text");
    tu_proc_free(&p);
    const char *split[] = {TT_EVAL_BIN, fx.spec[k], "--checkpoint", fx.ckpt[k], "--text", text,
                           "--split", "test", NULL};
    tu_proc_start(&p, split, (const char *const *)fx.env);
    tu_proc_wait(&p, TIMEOUT);
    tu_expect_exit(&p, 2, "--text with --split");
    if (tu_count_lines(p.err) != 1 || !strstr(p.err, "not with --split"))
        fail_msg("--text with --split:\n%s", p.err);
    tu_proc_free(&p);
    char *empty = tt_xasprintf("%s/empty.txt", fx.root);
    tu_write_text(empty, "");
    const char *nothing[] = {TT_EVAL_BIN, fx.spec[k], "--checkpoint", fx.ckpt[k], "--device", "cpu",
                             "--text", empty, NULL};
    tu_proc_start(&p, nothing, (const char *const *)fx.env);
    tu_proc_wait(&p, TIMEOUT);
    if (p.status != 2 || tu_count_lines(p.err) != 1 || !strstr(p.err, "no words to score"))
        fail_msg("--text of an empty file: status %d:\n%s", p.status, p.err);
    print_message("  %s", p.err);
    tu_proc_free(&p);
    free(empty);
    tu_write_text(text, "w1 w2\nw3 \xff w4\n");
    const char *utf8[] = {TT_EVAL_BIN, fx.spec[k], "--checkpoint", fx.ckpt[k], "--device", "cpu",
                          "--text", text, "--per-line", NULL};
    tu_proc_start(&p, utf8, (const char *const *)fx.env);
    tu_proc_wait(&p, TIMEOUT);
    tu_expect_exit(&p, 2, "--text with invalid UTF-8");
    if (tu_count_lines(p.err) != 1 || !strstr(p.err, "text:2: invalid UTF-8") || p.out[0])
        fail_msg("--text with invalid UTF-8: not one line, or output before it:\n%s%s", p.out, p.err);
    print_message("  %s", p.err);
    tu_proc_free(&p);
    free(text);
}

/* TT_TEST_DEVICE=cuda (ctest's test_gpu_lib): each model on the GPU against the CPU: tt_score's
 * sums within 1e-5 (fp32 on both), tt_next's distributions within 1e-4, and the same tokens
 * generated from the same seed, greedy and sampled; the GPU's words a second. */
static void test_gpu_matches_cpu(void **state)
{
    (void)state;
    for (int k = 0; k < MODELS; k++) {
        tt_model *c = open_model(k), *g = NULL;
        tt_error e;
        if (tt_open(&g, fx.spec[k], fx.ckpt[k], "cuda", &e) != TT_OK)
            fail_msg("tt_open on the GPU: %s", e.message);
        size_t n;
        int32_t *ids = valid_ids(c, &n);
        const long v = tt_vocab_size(c);
        double *lc = tt_xmalloc(n * sizeof *lc), *lg = tt_xmalloc(n * sizeof *lg);
        assert_int_equal(tt_score(c, ids, n, 0, lc, &e), TT_OK);
        assert_int_equal(tt_score(g, ids, n, 0, lg, &e), TT_OK);
        double sc = 0, sg = 0;
        for (size_t i = 0; i + 1 < n; i++) sc += lc[i], sg += lg[i];
        double *dc = tt_xmalloc((size_t)v * sizeof *dc), *dg = tt_xmalloc((size_t)v * sizeof *dg);
        double worst = 0;
        for (size_t i = 1; i < 20; i++) {
            assert_int_equal(tt_next(c, ids, i, dc, &e), TT_OK);
            assert_int_equal(tt_next(g, ids, i, dg, &e), TT_OK);
            for (long t = 0; t < v; t++) worst = fmax(worst, fabs(dc[t] - dg[t]));
        }
        enum { STEPS = 60 };
        int32_t a[STEPS], b[STEPS];
        const tt_sample_opts opts[2] = {{.temperature = 0}, {.temperature = 1, .top_p = 0.9, .seed = 7}};
        int same = 1;
        double secs = 0;
        for (int o = 0; o < 2; o++) {
            assert_int_equal(tt_generate(c, ids, 5, STEPS, &opts[o], a, NULL, NULL, NULL, &e), TT_OK);
            const double t0 = tt_now_seconds();
            assert_int_equal(tt_generate(g, ids, 5, STEPS, &opts[o], b, NULL, NULL, NULL, &e), TT_OK);
            secs += tt_now_seconds() - t0;
            same &= !memcmp(a, b, sizeof a);
        }
        print_message("  %-34s on %s: scores %.9f / %.9f (cpu / gpu), next-token log-probabilities "
                      "within %.1e, generated text %s; %.0f words/s on the GPU\n", model_names[k],
                      tt_device(g), sc, sg, worst, same ? "the same" : "DIFFERS", 2 * STEPS / secs);
        if (!(fabs(sc - sg) <= 1e-5 * fabs(sc))) fail_msg("%s: scores %.9f and %.9f", model_names[k], sc, sg);
        if (worst > 1e-4) fail_msg("%s: next-token log-probabilities %g apart", model_names[k], worst);
        if (!same) fail_msg("%s: the GPU generated other words than the CPU", model_names[k]);
        free(lc), free(lg), free(dc), free(dg), free(ids);
        tt_close(c), tt_close(g);
    }
}

int main(void)
{
    const char *want = getenv("TT_TEST_DEVICE");
    if (want && !strcmp(want, "cuda")) {
        tt_device_info info;
        char why[256];
        if (tt_device_query(0, &info, why, sizeof why) != 0) {
            printf("skipped: libtt on the GPU needs one: %s\n", why);
            return 77;
        }
        const struct CMUnitTest gpu_tests[] = {cmocka_unit_test(test_gpu_matches_cpu)};
        return cmocka_run_group_tests(gpu_tests, group_setup, group_teardown);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_score_matches_eval), cmocka_unit_test(test_next_matches_score),
        cmocka_unit_test(test_generate),           cmocka_unit_test(test_errors),
        cmocka_unit_test(test_generate_cli),       cmocka_unit_test(test_eval_per_line),
        cmocka_unit_test(test_internal_error),     cmocka_unit_test(test_rows_match_window),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
