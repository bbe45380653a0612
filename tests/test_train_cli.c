/* tt-train and tt-eval as a user runs them: the built binaries (TT_TRAIN_BIN, TT_EVAL_BIN), each
 * test in its own folder under /tmp with TTGEN_CACHE_DIR (and so the token cache) inside it, and
 * specs written there with absolute data paths. Covers: specs/tiny.yaml's model trained on PTB
 * for its 300 steps (validation perplexity under a bound) and tt-eval on that checkpoint (every
 * token but the first scored once with either stride, the trainer's figure reproduced); a
 * synthetic corpus whose next word is set by the current one, which a broken backward does not
 * learn; exact resume and bit-identical runs of both kinds at fp32 and bf16 (Transformer-XL's
 * memories and the early stopping's state through state.safetensors, and what a resume without
 * them does); SIGINT and SIGTERM; one line and exit code 2 for each bad input; the note of
 * causal: false. The 300-step run starts in the group setup and runs while the other tests do;
 * the two tests that need it come last. PTB comes from $TT_DATA_DIR (default: shared/data
 * beside the repository); missing, it fails the tests. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <dlfcn.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "cache.h"
#include "device.h"
#include "safetensors.h"
#include "testutil.h"
#include "tune.h"
#include "util.h"

#define TIMEOUT 300.0 /* seconds any one run may take */

/* TT_TEST_DEVICE=cuda (ctest's test_gpu_repro): the reproducibility tests alone, on the GPU,
 * each run from a kernel cache whose tuning file is gone; else every test, on the device that
 * --device auto finds. */
static const char *device = "auto";
#define PTB_VALID_TOKENS 73760
#define PTB_TEST_TOKENS 82430
/* A run gave 877. A wrong gradient of the output layer, of the optimizer or of every weight stays
 * far above; a wrong input gradient of the linear layers does not (see test_learns_context). */
#define TINY_PPL_BOUND 1100.0

/* --- fixture: a folder per test, the cache inside it ----------------------------------------- */

typedef struct {
    char root[64];
    char *env[2]; /* TTGEN_CACHE_DIR=root/cache */
} fixture;

static int setup(void **state)
{
    fixture *f = tt_xcalloc(1, sizeof *f);
    tu_temp_dir("train", f->root, sizeof f->root);
    f->env[0] = tt_xasprintf("TTGEN_CACHE_DIR=%s/cache", f->root);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    tu_rm_rf(f->root);
    free(f->env[0]);
    free(f);
    return 0;
}

static char *in_root(const fixture *f, const char *name)
{
    return tt_xasprintf("%s/%s", f->root, name);
}

/* --- running the binaries -------------------------------------------------------------------- */

static void start(const fixture *f, tu_proc *p, const char *const *argv)
{
    tu_proc_start(p, argv, (const char *const *)f->env);
}

#define RUN(f, p, ...)                                                                             \
    do {                                                                                           \
        start((f), (p), (const char *const[]){__VA_ARGS__, NULL});                                 \
        tu_proc_wait((p), TIMEOUT);                                                                \
    } while (0)

/* Exit code 2, nothing on stdout, and one line on stderr that starts with `prefix` (when not
 * NULL) and contains `part` (when not NULL). */
static void expect_error(const tu_proc *p, const char *what, const char *prefix, const char *part)
{
    tu_expect_exit(p, 2, what);
    const size_t len = strlen(p->err);
    if (tu_count_lines(p->err) != 1 || p->err[len - 1] != '\n')
        fail_msg("%s: stderr is not one line:\n%s", what, p->err);
    if (prefix && strncmp(p->err, prefix, strlen(prefix)) != 0)
        fail_msg("%s: stderr does not start with '%s':\n%s", what, prefix, p->err);
    if (part && !strstr(p->err, part)) fail_msg("%s: stderr lacks '%s':\n%s", what, part, p->err);
    if (p->out[0]) fail_msg("%s: stdout is not empty:\n%s", what, p->out);
    print_message("  %-30s %s", what, p->err);
}

/* --- what the binaries write ----------------------------------------------------------------- */

/* The number after "key": in a JSON object. */
static double json_num(const char *json, const char *key)
{
    char pat[64];
    snprintf(pat, sizeof pat, "\"%s\":", key);
    const char *at = strstr(json, pat);
    if (!at) fail_msg("no %s in %s", pat, json);
    char *end;
    const double v = strtod(at + strlen(pat), &end);
    if (end == at + strlen(pat)) fail_msg("%s is not a number in %s", pat, json);
    return v;
}

/* The number after the last `label` in text. */
static double last_number_after(const char *text, const char *label)
{
    const char *at = NULL;
    for (const char *p = text; (p = strstr(p, label)) != NULL; p++) at = p;
    if (!at) fail_msg("no '%s' in:\n%s", label, text);
    return strtod(at + strlen(label), NULL);
}

/* DIR/latest names the step folder of step. */
static void expect_latest(const char *dir, long step)
{
    char want[32], *path = tt_xasprintf("%s/latest", dir), *got = tu_read_file(path, NULL);
    snprintf(want, sizeof want, "step-%08ld\n", step);
    if (strcmp(got, want) != 0) fail_msg("%s holds '%s', want '%s'", path, got, want);
    free(got), free(path);
}

static void expect_same_file(const char *a, const char *b)
{
    size_t la, lb;
    char *x = tu_read_file(a, &la), *y = tu_read_file(b, &lb);
    size_t i = 0;
    while (i < la && i < lb && x[i] == y[i]) i++;
    if (la != lb || i < la)
        fail_msg("%s (%zu bytes) and %s (%zu bytes) differ at byte %zu", a, la, b, lb, i);
    free(x);
    free(y);
}

/* Both checkpoint folders' step folder holds the same files (weights, moments, training state,
 * vocabulary, and nothing else), byte for byte. */
static void expect_same_checkpoint(const char *dir_a, const char *dir_b, long step)
{
    static const char *const files[] = {"model.safetensors", "optim.safetensors",
                                        "state.safetensors", "vocab.txt"};
    enum { NFILES = sizeof files / sizeof *files };
    for (int i = 0; i < NFILES; i++) {
        char *a = tt_xasprintf("%s/step-%08ld/%s", dir_a, step, files[i]);
        char *b = tt_xasprintf("%s/step-%08ld/%s", dir_b, step, files[i]);
        expect_same_file(a, b);
        free(a), free(b);
    }
    for (int k = 0; k < 2; k++) {
        char *step_dir = tt_xasprintf("%s/step-%08ld", k ? dir_b : dir_a, step);
        DIR *d = opendir(step_dir);
        if (!d) fail_msg("%s: cannot open", step_dir);
        int n = 0;
        for (struct dirent *e; (e = readdir(d));) n += e->d_name[0] != '.';
        closedir(d);
        if (n != NFILES)
            fail_msg("%s holds %d files, not the %d of a checkpoint", step_dir, n, NFILES);
        free(step_dir);
    }
}

/* --- specs and corpora ----------------------------------------------------------------------- */

/* A small model of tiny.yaml's shapes, or a small Transformer-XL (txl: D 32, 2 layers, 2 heads
 * of 16, seq_len 8, mem_len 16), with the train and data sections as asked. */
typedef struct {
    const char *train, *valid; /* absolute paths; valid may be NULL */
    long steps;                /* default 2 */
    int rank;                  /* default 8 */
    double dropout;
    int non_causal;
    const char *vocab; /* default "data" */
    int seed;          /* default 1 */
    int txl;
    const char *precision;         /* default fp32 */
    long eval_interval, ckpt_every; /* default 0 */
} spec_opts;

static char *write_spec(const fixture *f, const char *name, spec_opts o)
{
    const long steps = o.steps ? o.steps : 2;
    const char *vocab = o.vocab ? o.vocab : "data";
    char *valid = o.valid ? tt_xasprintf("  valid: %s\n", o.valid) : tt_xstrdup("");
    char *model =
        o.txl ? tt_xasprintf("  kind: transformer-xl\n  vocab: %s\n  d_model: 32\n  layers: 2\n"
                             "  n_head: 2\n  d_head: 16\n  seq_len: 8\n  mem_len: 16\n"
                             "  d_inner: 64\n", vocab)
              : tt_xasprintf("  kind: tensorized\n  vocab: %s\n  d_model: 32\n  layers: 2\n"
                             "  rank: %d\n  cores: 2\n  seq_len: 16\n  d_inner: 64\n"
                             "  causal: %s\n", vocab, o.rank ? o.rank : 8,
                             o.non_causal ? "false" : "true");
    char *ckpt = o.ckpt_every ? tt_xasprintf("  checkpoint: {dir: %s/unused, interval: %ld}\n",
                                             f->root, o.ckpt_every)
                              : tt_xstrdup("");
    char *text = tt_xasprintf(
        "model:\n%s  dropout: %g\n"
        "train:\n  batch: 8\n  steps: %ld\n  optimizer: {lr: 5.0e-3}\n"
        "  schedule: {kind: cosine, warmup: %ld}\n  seed: %d\n  precision: %s\n"
        "  eval_interval: %ld\n%s"
        "data:\n  train: %s\n%s",
        model, o.dropout, steps, steps < 20 ? steps : 20, o.seed ? o.seed : 1,
        o.precision ? o.precision : "fp32", o.eval_interval, ckpt, o.train, valid);
    char *path = in_root(f, name);
    tu_write_text(path, text);
    free(text), free(valid), free(model), free(ckpt);
    return path;
}

/* A corpus of `lines` lines of ten words drawn from prefix0 .. prefix19 (all of them), word j of
 * line i being (7 i + stride j) mod 20: two calls with other prefixes give vocabularies of one
 * size that differ in every word; two with other strides, one vocabulary and other bigrams. */
static char *write_words_stride(const fixture *f, const char *name, const char *prefix, int lines,
                                int stride)
{
    tt_buf b = {0};
    for (int i = 0; i < lines; i++)
        for (int j = 0; j < 10; j++)
            tt_buf_printf(&b, "%s%d%c", prefix, (i * 7 + j * stride) % 20, j == 9 ? '\n' : ' ');
    char *path = in_root(f, name);
    tu_write_file(path, b.data, b.len);
    tt_buf_free(&b);
    return path;
}

static char *write_words(const fixture *f, const char *name, const char *prefix, int lines)
{
    return write_words_stride(f, name, prefix, lines, 3);
}

/* The PTB files, absolute. */
typedef struct {
    char *train, *valid, *test;
} ptb_paths;

static ptb_paths ptb(void)
{
    return (ptb_paths){tu_data_path("ptb/ptb.train.txt.gz"), tu_data_path("ptb/ptb.valid.txt"),
                       tu_data_path("ptb/ptb.test.txt")};
}

static void ptb_free(ptb_paths *p) { free(p->train), free(p->valid), free(p->test); }

/* A 2-step model of write_spec's shapes trained on `corpus` (with it as data.valid too), its
 * checkpoints in ckpt_dir. */
static void train_small(const fixture *f, const char *corpus, int rank, const char *ckpt_dir)
{
    char *spec = write_spec(f, "small-train.yaml",
                            (spec_opts){.train = corpus, .valid = corpus, .rank = rank});
    tu_proc p;
    RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", ckpt_dir, "-q");
    tu_expect_exit(&p, 0, "a 2-step run on a small corpus");
    tu_proc_free(&p);
    free(spec);
}

/* --- the 300-step run of specs/tiny.yaml, started by the group setup ------------------------- */

static struct {
    fixture *f;
    char *spec, *ckpt, *log;
    tu_proc run;
} tiny;

/* specs/tiny.yaml with its model and train sections as they are and its data section made
 * absolute. Periodic validation (eval_interval 100) runs on the first 4000 tokens to save time;
 * the final one always runs on all of data.valid. */
static int group_setup(void **state)
{
    (void)state;
    ptb_paths p = ptb();
    char *text = tu_read_file(TT_SOURCE_DIR "/specs/tiny.yaml", NULL);
    char *data = strstr(text, "\ndata:\n");
    if (!data) fail_msg("specs/tiny.yaml has no data section");
    data[1] = '\0';
    if (setup((void **)&tiny.f) != 0) return -1;
    char *spec = tt_xasprintf("%sdata:\n  train: %s\n  valid: %s\n  test: %s\n", text, p.train,
                              p.valid, p.test);
    tiny.spec = in_root(tiny.f, "tiny.yaml");
    tiny.ckpt = in_root(tiny.f, "ckpt");
    tiny.log = in_root(tiny.f, "tiny.json");
    tu_write_text(tiny.spec, spec);
    start(tiny.f, &tiny.run,
          (const char *const[]){TT_TRAIN_BIN, tiny.spec, "--checkpoint-dir", tiny.ckpt,
                                "--log-json", tiny.log, "--eval-tokens", "4000", NULL});
    free(spec), free(text);
    ptb_free(&p);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    tu_proc_free(&tiny.run);
    free(tiny.spec), free(tiny.ckpt), free(tiny.log);
    return tiny.f ? teardown((void **)&tiny.f) : 0;
}

static void tiny_wait(void)
{
    tu_proc_wait(&tiny.run, 2 * TIMEOUT);
    tu_expect_exit(&tiny.run, 0, "tt-train on specs/tiny.yaml");
}

/* The line of text that starts with `start`, with its newline. */
static const char *line_of(const char *text, const char *start)
{
    for (const char *p = text; p; p = strchr(p, '\n'), p = p ? p + 1 : NULL)
        if (strncmp(p, start, strlen(start)) == 0) return p;
    fail_msg("no line starts with '%s' in:\n%s", start, text);
    return NULL;
}

/* The final validation line of the run's --log-json: step 300, every token but the first. */
static double tiny_valid_nll(void)
{
    char *log = tu_read_file(tiny.log, NULL);
    const char *at = strstr(log, "{\"step\":300,\"valid_nll\":");
    if (!at) fail_msg("%s has no validation at step 300", tiny.log);
    const double nll = json_num(at, "valid_nll");
    assert_int_equal((long)json_num(at, "valid_tokens"), PTB_VALID_TOKENS - 1);
    free(log);
    return nll;
}

static void test_tiny_trains_on_ptb(void **state)
{
    (void)state;
    tiny_wait();
    const double printed = last_number_after(tiny.run.out, "valid ppl ");
    const double ppl = exp(tiny_valid_nll());
    print_message("  valid ppl %.3f after 300 steps (bound %.0f)\n", ppl, TINY_PPL_BOUND);
    /* Its times, by its own clock: the final validation, and training with every validation. */
    const char *v = line_of(tiny.run.out, "step 300: valid ppl"),
               *t = line_of(tiny.run.out, "trained");
    print_message("  %.*s  %.*s", (int)strcspn(v, "\n") + 1, v, (int)strcspn(t, "\n") + 1, t);
    if (fabs(printed - ppl) > 5e-4 * (1 + 1e-9))
        fail_msg("printed %.3f, logged %.6f", printed, ppl);
    if (!(ppl < TINY_PPL_BOUND)) fail_msg("valid ppl %.3f is not below %.0f", ppl, TINY_PPL_BOUND);
    char *log = tu_read_file(tiny.log, NULL);
    assert_int_equal(tu_count_lines(log), 300 + 3); /* a line per step and per validation */
    free(log);
    expect_latest(tiny.ckpt, 300);
    assert_string_equal(tiny.run.err, "");
}

/* tt-eval on the checkpoint: both splits with the default stride (seq_len 16) and with stride 5,
 * four runs at once. Every token but the first is scored once; the first window scores its 16
 * predictions and each later one its last S, so windows = 1 + ceil((tokens - 1 - 16) / S). */
static void test_eval_counts_every_token_once(void **state)
{
    (void)state;
    tiny_wait();
    static const struct {
        const char *split, *stride;
        long tokens;
    } runs[] = {
        {"valid", NULL, PTB_VALID_TOKENS},
        {"test", NULL, PTB_TEST_TOKENS},
        {"valid", "5", PTB_VALID_TOKENS},
        {"test", "5", PTB_TEST_TOKENS},
    };
    enum { NRUNS = sizeof runs / sizeof runs[0] };
    tu_proc p[NRUNS];
    for (int i = 0; i < NRUNS; i++) {
        const char *argv[] = {TT_EVAL_BIN, tiny.spec, "--checkpoint", tiny.ckpt,
                              "--split", runs[i].split, "--json",
                              runs[i].stride ? "--stride" : NULL, runs[i].stride, NULL};
        start(tiny.f, &p[i], argv);
    }
    for (int i = 0; i < NRUNS; i++) tu_proc_wait(&p[i], 2 * TIMEOUT);
    const double trainer_nll = tiny_valid_nll();
    for (int i = 0; i < NRUNS; i++) {
        tu_expect_exit(&p[i], 0, "tt-eval");
        assert_string_equal(p[i].err, "");
        const char *js = p[i].out;
        const long stride = runs[i].stride ? atol(runs[i].stride) : 16;
        const long scored = runs[i].tokens - 1, windows = 1 + (scored - 16 + stride - 1) / stride;
        assert_int_equal((long)json_num(js, "tokens"), scored);
        assert_int_equal((long)json_num(js, "windows"), windows);
        assert_int_equal((long)json_num(js, "stride"), stride);
        assert_int_equal((long)json_num(js, "step"), 300);
        assert_null(strstr(js, "\"note\""));
        const double nll = json_num(js, "nll"), ppl = json_num(js, "perplexity");
        if (fabs(ppl - exp(nll)) > 1e-6 * (1 + ppl))
            fail_msg("perplexity %.6f is not exp(nll)", ppl);
        print_message(
            "  %-5s stride %2ld: %ld tokens in %ld windows, ppl %.3f (%.1f s, four at once)\n",
            runs[i].split, stride, scored, windows, ppl, json_num(js, "seconds"));
        if (!strcmp(runs[i].split, "valid") && stride == 16) {
            const double rel = fabs(exp(nll) / exp(trainer_nll) - 1);
            if (rel > 1e-9)
                fail_msg(
                    "tt-eval's valid ppl %.12g differs from the trainer's %.12g (%.2g relative)",
                    exp(nll), exp(trainer_nll), rel);
            print_message("  the trainer's final valid ppl, to %.1g relative\n", rel);
        }
    }
    for (int i = 0; i < NRUNS; i++) tu_proc_free(&p[i]);
}

/* --- learning from context ------------------------------------------------------------------- */

/* Lines of 100 words w0 .. w49 in which the next word is a fixed permutation of the current one:
 * the unigram perplexity is about 50, and a model that uses its input gets near 1 (only the
 * first word of a line cannot be known). In 200 steps tiny's shapes reach 1.17; with the input
 * gradient of cpu_linear_bwd negated, 1.83, while that broken model passes on PTB (862 < 1100):
 * what PTB's 300 steps teach is mostly the unigram distribution. */
#define CYCLE_PPL_BOUND 1.3

static void write_cycle_corpus(const char *path, const int perm[50], int lines, uint32_t *rng)
{
    tt_buf b = {0};
    for (int i = 0; i < lines; i++) {
        *rng = *rng * 1664525u + 1013904223u;
        int w = (int)(*rng >> 16) % 50;
        for (int j = 0; j < 100; j++, w = perm[w])
            tt_buf_printf(&b, "w%d%c", w, j == 99 ? '\n' : ' ');
    }
    tu_write_file(path, b.data, b.len);
    tt_buf_free(&b);
}

static void test_learns_context(void **state)
{
    fixture *f = *state;
    int perm[50];
    uint32_t rng = 12345;
    for (int i = 0; i < 50; i++) perm[i] = i;
    for (int i = 49; i > 0; i--) {
        rng = rng * 1664525u + 1013904223u;
        const int j = (int)((rng >> 16) % (uint32_t)(i + 1)), t = perm[i];
        perm[i] = perm[j], perm[j] = t;
    }
    char *train = in_root(f, "cycle.train.txt"), *valid = in_root(f, "cycle.valid.txt");
    write_cycle_corpus(train, perm, 100, &rng);
    write_cycle_corpus(valid, perm, 10, &rng);
    char *spec =
        write_spec(f, "cycle.yaml", (spec_opts){.train = train, .valid = valid, .steps = 200});
    char *ckpt = in_root(f, "ckpt");
    tu_proc p;
    RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", ckpt);
    tu_expect_exit(&p, 0, "tt-train on the cycle corpus");
    const double ppl = last_number_after(p.out, "valid ppl ");
    print_message("  valid ppl %.3f after 200 steps (unigram: about 50; bound %.1f)\n", ppl,
                  CYCLE_PPL_BOUND);
    if (!(ppl < CYCLE_PPL_BOUND))
        fail_msg("valid ppl %.3f: the model does not learn from its input", ppl);
    tu_proc_free(&p);
    free(train), free(valid), free(spec), free(ckpt);
}

/* --- exact resume ---------------------------------------------------------------------------- */

#define RESUME_STEPS 24

/* A run that is stopped and resumed: the model, its precision (the CPU trains in fp32 whatever
 * it is; the spec must still run and be reproducible), and the step it stops after. */
typedef struct {
    const char *name;
    int txl;
    const char *precision;
    long stop;
    /* validation (else only at the end) and a checkpoint every 5 steps with --patience 100, on
     * a split whose best perplexity comes before the stop: the resumed run's best and stale
     * come from the checkpoint */
    int validates;
} resume_case;

static const resume_case resume_cases[] = {
    {"tensorized, fp32", 0, "fp32", 9, 0},
    {"tensorized, bf16", 0, "bf16", 9, 0},
    {"transformer-xl, fp32", 1, "fp32", 9, 0},
    {"transformer-xl, bf16", 1, "bf16", 9, 0},
    {"transformer-xl, stop on a validation", 1, "fp32", 10, 1},
};

/* The training and validation corpora of the resume tests: one vocabulary, other bigrams, so
 * that the validation perplexity gets worse once the model learns the training text's. */
static void resume_corpora(const fixture *f, char **train, char **valid)
{
    *train = write_words_stride(f, "resume.train.txt", "w", 120, 3);
    *valid = write_words_stride(f, "resume.valid.txt", "w", 30, 11);
}

static char *resume_spec(const fixture *f, const resume_case *c, const char *train,
                         const char *valid)
{
    return write_spec(f, "resume.yaml",
                      (spec_opts){.train = train, .valid = valid,
                                  .steps = RESUME_STEPS, .dropout = 0.1, .seed = 3, .txl = c->txl,
                                  .precision = c->precision, .eval_interval = c->validates ? 5 : 0,
                                  .ckpt_every = c->validates ? 5 : 0});
}

/* tt-train spec into dir, logging to log, with `more` (up to two options) after the case's. */
static void train_into(const fixture *f, tu_proc *p, const resume_case *c, const char *spec,
                       const char *dir, const char *log, const char *more0, const char *more1)
{
    const char *argv[14] = {TT_TRAIN_BIN, spec, "--checkpoint-dir", dir, "--log-json", log,
                            "--device", device};
    int n = 8;
    if (c->validates) argv[n++] = "--patience", argv[n++] = "100";
    argv[n++] = more0, argv[n++] = more1;
    start(f, p, argv);
    tu_proc_wait(p, TIMEOUT);
}

/* "(best X at step Y)" of a run's final summary line. */
static char *best_of(const char *out)
{
    const char *at = strstr(line_of(out, "trained steps"), "(best ");
    if (!at) fail_msg("the summary names no best validation:\n%s", out);
    return tt_xasprintf("%.*s", (int)strcspn(at, "\n"), at);
}

/* Deletes the tuning file of f's kernel cache (TTGEN_CACHE_DIR=root/cache: tt_cache_open finds
 * its folder as the binaries do), so that the next run on a GPU starts with no product's
 * algorithm recorded. */
static void forget_tuning(const fixture *f)
{
    char *dir = in_root(f, "cache"), err[512];
    tt_cache cache;
    if (tt_cache_open(&cache, dir, err, sizeof err) != 0) fail_msg("%s", err);
    char *tuning = tt_tuning_path(cache.dir);
    if (unlink(tuning) != 0 && errno != ENOENT) fail_msg("%s: cannot delete", tuning);
    free(tuning);
    tt_cache_close(&cache);
    free(dir);
}

/* For each case, with dropout (so that the masks, functions of the step, matter): A and C in one
 * go, B stopped after step c->stop and resumed. The logs (B's appended to on --resume) and final
 * checkpoints, every file of the step folder, are byte-identical. */
static void test_resume_is_exact(void **state)
{
    fixture *f = *state;
    char *train, *valid;
    resume_corpora(f, &train, &valid);
    char last[16], stop[16];
    snprintf(last, sizeof last, "%d", RESUME_STEPS);
    for (size_t i = 0; i < sizeof resume_cases / sizeof *resume_cases; i++) {
        const resume_case *c = &resume_cases[i];
        char *spec = resume_spec(f, c, train, valid);
        char *dir[3], *log[3], n[64];
        for (int k = 0; k < 3; k++) {
            snprintf(n, sizeof n, "ckpt-%zu-%c", i, 'a' + k);
            dir[k] = in_root(f, n);
            snprintf(n, sizeof n, "%zu-%c.json", i, 'a' + k);
            log[k] = in_root(f, n);
        }
        snprintf(stop, sizeof stop, "%ld", c->stop);
        tu_proc a, p;
        forget_tuning(f); /* A times every product it meets, and records it; B and C read it */
        train_into(f, &a, c, spec, dir[0], log[0], NULL, NULL);
        tu_expect_exit(&a, 0, "A: in one go");
        const double t_a = a.seconds;
        train_into(f, &p, c, spec, dir[2], log[2], NULL, NULL);
        tu_expect_exit(&p, 0, "C: in one go again");
        tu_proc_free(&p);
        train_into(f, &p, c, spec, dir[1], log[1], "--stop-after", stop);
        tu_expect_exit(&p, 0, "B: --stop-after");
        expect_latest(dir[1], c->stop);
        tu_proc_free(&p);
        train_into(f, &p, c, spec, dir[1], log[1], "--resume", NULL);
        tu_expect_exit(&p, 0, "B: --resume");
        char at[32];
        snprintf(at, sizeof at, "at step %ld", c->stop);
        if (!strstr(p.out, at)) fail_msg("the resumed run does not say '%s':\n%s", at, p.out);
        assert_string_equal(p.err, "");

        char *text = tu_read_file(log[0], NULL);
        assert_int_equal(tu_count_lines(text), RESUME_STEPS + (c->validates ? 5 : 1));
        free(text);
        for (int k = 1; k < 3; k++) {
            expect_same_file(log[0], log[k]);
            expect_latest(dir[k], RESUME_STEPS);
            expect_same_checkpoint(dir[0], dir[k], RESUME_STEPS);
        }
        if (c->validates) {
            /* the stop's checkpoint is the one A wrote at that step, and the best validation
             * came before it: the resumed run knows it only from the checkpoint */
            expect_same_checkpoint(dir[0], dir[1], c->stop);
            char *best_a = best_of(a.out), *best_b = best_of(p.out);
            const long best_step = atol(strstr(best_a, "at step ") + 8);
            if (best_step > c->stop)
                fail_msg("the best validation (%s) comes after the stop at %ld: the case "
                         "checks nothing", best_a, c->stop);
            assert_string_equal(best_a, best_b);
            print_message("  %s: %s\n", c->name, best_b);
            free(best_a), free(best_b);
        }
        print_message("  %-38s %d steps in %.2f s; stopped at %ld, resumed: the same bytes\n",
                      c->name, RESUME_STEPS, t_a, c->stop);
        tu_proc_free(&p);
        tu_proc_free(&a);
        for (int k = 0; k < 3; k++) free(dir[k]), free(log[k]);
        free(spec);
    }
    char *tokens = in_root(f, "cache/tokens");
    if (!tu_exists(tokens)) fail_msg("no token cache in %s", tokens);
    free(tokens);

    /* The dropout is live: step 1 without it has another loss. */
    const char *logs[2] = {"dropout.json", "no-dropout.json"};
    double loss[2];
    for (int k = 0; k < 2; k++) {
        char *spec = write_spec(f, "dropout.yaml", (spec_opts){.train = train, .dropout = 0.1 * !k,
                                                               .seed = 3});
        char *log = in_root(f, logs[k]), *dir = in_root(f, "ckpt-dropout");
        tu_proc p;
        RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", dir, "--log-json", log, "--stop-after",
            "1");
        tu_expect_exit(&p, 0, "1 step with and without dropout");
        char *text = tu_read_file(log, NULL);
        loss[k] = json_num(text, "loss");
        free(text), free(spec), free(log), free(dir);
        tu_proc_free(&p);
    }
    if (loss[0] == loss[1]) fail_msg("step 1 has the same loss with dropout 0.1 and without");
    free(train), free(valid);
}

/* Transformer-XL's checkpoint holds its memories, and they matter: B's state.safetensors at the
 * stop holds [batch, mem_len, d_model] per layer; with it deleted, B still resumes (saying so in
 * one line) but ends elsewhere than A, the run in one go. tt-eval reads weights only: it scores
 * a step folder the same with and without state.safetensors. */
static void test_resume_needs_memory(void **state)
{
    fixture *f = *state;
    const resume_case *c = &resume_cases[2];
    char *train, *valid;
    resume_corpora(f, &train, &valid);
    char *spec = resume_spec(f, c, train, valid);
    char *dir_a = in_root(f, "ckpt-a"), *dir_b = in_root(f, "ckpt-b");
    char *log_a = in_root(f, "a.json"), *log_b = in_root(f, "b.json");
    tu_proc p;
    train_into(f, &p, c, spec, dir_a, log_a, NULL, NULL);
    tu_expect_exit(&p, 0, "A: in one go");
    tu_proc_free(&p);
    train_into(f, &p, c, spec, dir_b, log_b, "--stop-after", "9");
    tu_expect_exit(&p, 0, "B: --stop-after 9");
    tu_proc_free(&p);

    char *file = tt_xasprintf("%s/step-00000009/state.safetensors", dir_b), err[512];
    tt_st_file *st;
    if (tt_st_open(file, &st, err, sizeof err) != 0) fail_msg("%s", err);
    assert_string_equal(tt_st_meta(st, "format"), "tt-train-state-1");
    assert_string_equal(tt_st_meta(st, "step"), "9");
    assert_string_equal(tt_st_meta(st, "mem_step"), "9");
    assert_string_equal(tt_st_meta(st, "mem_len"), "16");
    assert_string_equal(tt_st_meta(st, "batch"), "8");
    assert_int_equal(tt_st_count(st), 2);
    for (int k = 0; k < 2; k++) {
        char name[16];
        snprintf(name, sizeof name, "mems.%d", k);
        const tt_st_tensor *t = tt_st_find(st, name);
        if (!t) fail_msg("%s holds no %s", file, name);
        assert_int_equal(t->dtype, TT_ST_F32);
        assert_int_equal(t->ndim, 3);
        assert_int_equal(t->shape[0], 8);
        assert_int_equal(t->shape[1], 16);
        assert_int_equal(t->shape[2], 32);
        float *x = tt_xmalloc(8 * 16 * 32 * sizeof *x);
        double sq = 0;
        if (tt_st_read_f32(st, name, 3, t->shape, x, err, sizeof err) != 0) fail_msg("%s", err);
        for (int i = 0; i < 8 * 16 * 32; i++) sq += (double)x[i] * x[i];
        if (!(sq > 0)) fail_msg("%s: %s is all zeros", file, name);
        free(x);
    }
    tt_st_close(st);

    if (unlink(file) != 0) fail_msg("%s: cannot delete", file);
    train_into(f, &p, c, spec, dir_b, log_b, "--resume", NULL);
    tu_expect_exit(&p, 0, "B: --resume without state.safetensors");
    if (tu_count_lines(p.err) != 1 || !strstr(p.err, file) ||
        !strstr(p.err, "first step starts without memory"))
        fail_msg("the resumed run does not say in one line that %s is missing:\n%s", file, p.err);
    print_message("  %s", p.err);
    tu_proc_free(&p);
    char *model_a = tt_xasprintf("%s/step-%08d/model.safetensors", dir_a, RESUME_STEPS);
    char *model_b = tt_xasprintf("%s/step-%08d/model.safetensors", dir_b, RESUME_STEPS);
    size_t la, lb;
    char *x = tu_read_file(model_a, &la), *y = tu_read_file(model_b, &lb);
    if (la == lb && !memcmp(x, y, la))
        fail_msg("resumed without its memories, the run ends at the same weights: the memories "
                 "do not matter");
    free(x), free(y);

    /* tt-eval: the same score with and without state.safetensors */
    char *step_a = tt_xasprintf("%s/step-%08d", dir_a, RESUME_STEPS);
    char *state_a = tt_xasprintf("%s/state.safetensors", step_a);
    char *score[2];
    for (int k = 0; k < 2; k++) {
        if (k && unlink(state_a) != 0) fail_msg("%s: cannot delete", state_a);
        RUN(f, &p, TT_EVAL_BIN, spec, "--checkpoint", step_a);
        tu_expect_exit(&p, 0, k ? "tt-eval without state.safetensors" : "tt-eval");
        const char *at = line_of(p.out, "valid perplexity");
        score[k] = tt_xasprintf("%.*s", (int)strcspn(at, "("), at); /* the times aside */
        tu_proc_free(&p);
    }
    assert_string_equal(score[0], score[1]);
    free(score[0]), free(score[1]), free(step_a), free(state_a), free(model_a), free(model_b);
    free(file), free(spec), free(dir_a), free(dir_b), free(log_a), free(log_b), free(train),
        free(valid);
}

/* --- SIGINT and SIGTERM ---------------------------------------------------------------------- */

/* A run of 100000 steps gets `sig` once its log has 5 lines: it writes a checkpoint of the step
 * it finished, says so, and exits 0 within seconds. Resumed to 5 steps later, its log is the log
 * of a run that went there in one go, and so are its weights. */
static void check_stop_signal(const fixture *f, int sig, const char *name)
{
    ptb_paths d = ptb();
    char *spec =
        write_spec(f, "long.yaml", (spec_opts){.train = d.train, .steps = 100000, .dropout = 0.1});
    char *dir = in_root(f, "ckpt"), *log = in_root(f, "log.json");
    char *dir_u = in_root(f, "ckpt-uninterrupted"), *log_u = in_root(f, "uninterrupted.json");
    tu_proc p;
    start(f, &p,
          (const char *const[]){TT_TRAIN_BIN, spec, "--checkpoint-dir", dir, "--log-json", log,
                                NULL});
    const struct timespec tick = {0, 10000000};
    for (;;) {
        if (!tu_proc_running(&p)) {
            tu_expect_exit(&p, 0, "a run waiting for a signal");
            fail_msg("the run ended before its signal:\n%s", p.out);
        }
        if (tu_exists(log)) {
            char *text = tu_read_file(log, NULL);
            const int lines = tu_count_lines(text);
            free(text);
            if (lines >= 5) break;
        }
        if (tt_now_seconds() - p.t0 > TIMEOUT) {
            tu_proc_free(&p);
            fail_msg("fewer than 5 steps logged in %.0f s", TIMEOUT);
        }
        nanosleep(&tick, NULL);
    }
    const double t0 = tt_now_seconds();
    tu_proc_signal(&p, sig);
    tu_proc_wait(&p, TIMEOUT);
    const double took = tt_now_seconds() - t0;
    tu_expect_exit(&p, 0, name);
    if (took > 5) fail_msg("%s: exited %.1f s after the signal", name, took);
    const char *said = strstr(p.out, "interrupted (");
    if (!said) fail_msg("%s: stdout does not say 'interrupted':\n%s", name, p.out);
    const char *after = strstr(said, "after step ");
    if (!after) fail_msg("%s: no step in '%s'", name, said);
    const long step = atol(after + 11), k = step + 5;
    print_message("  %s %.2f s after it was sent: %.*s", name, took, (int)strcspn(said, "\n") + 1,
                  said);
    expect_latest(dir, step);
    char *text = tu_read_file(log, NULL);
    assert_int_equal(tu_count_lines(text), step); /* the log ends where the checkpoint does */
    free(text);
    tu_proc_free(&p);

    char stop[32];
    snprintf(stop, sizeof stop, "%ld", k);
    RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", dir, "--log-json", log, "--resume",
        "--stop-after", stop);
    tu_expect_exit(&p, 0, "--resume --stop-after K");
    tu_proc_free(&p);
    RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", dir_u, "--log-json", log_u, "--stop-after",
        stop);
    tu_expect_exit(&p, 0, "--stop-after K in one go");
    tu_proc_free(&p);
    char *a = tu_read_file(log, NULL), *b = tu_read_file(log_u, NULL);
    assert_int_equal(tu_count_lines(a), k);
    /* The 5 steps after the signal, then the whole log. */
    const char *la = a, *lb = b;
    for (long s = 1; s <= step; s++) la = strchr(la, '\n') + 1, lb = strchr(lb, '\n') + 1;
    assert_string_equal(la, lb);
    assert_string_equal(a, b);
    expect_same_checkpoint(dir, dir_u, k);
    free(a), free(b), free(spec), free(dir), free(log), free(dir_u), free(log_u);
    ptb_free(&d);
}

/* --- faults: kill -9 anywhere, a full disk (issue 19) ------------------------------------------ */

#define FAULT_STEPS 60

/* Starts tt-train spec into dir on the CPU (--resume where dir holds a checkpoint, else from the
 * start), with `fault` (NULL: none) in its environment. */
static void start_in(const fixture *f, tu_proc *p, const char *spec, const char *dir,
                     const char *fault)
{
    char *latest = tt_xasprintf("%s/latest", dir);
    const int have = tu_exists(latest);
    free(latest);
    const char *argv[] = {TT_TRAIN_BIN, spec, "--checkpoint-dir", dir, "--device", "cpu",
                          "--quiet", have ? "--resume" : NULL, NULL};
    const char *env[] = {f->env[0], fault, NULL};
    tu_proc_start(p, argv, env);
}

/* Runs spec into dir until a run ends with status 0 (start_in, at most 5 runs). */
static void run_to_end(const fixture *f, const char *spec, const char *dir, int *runs)
{
    for (*runs = 0; *runs < 5; (*runs)++) {
        tu_proc p;
        start_in(f, &p, spec, dir, NULL);
        tu_proc_wait(&p, TIMEOUT);
        const int ok = !p.timed_out && p.status == 0;
        tu_proc_free(&p);
        if (ok) return;
    }
    fail_msg("%s: no run ended well in 5", dir);
}

/* Only step folders, latest and the training curve's files in dir: no temporary of a killed run
 * left behind. */
static void expect_tidy(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) fail_msg("%s: cannot open", dir);
    for (struct dirent *e; (e = readdir(d));) {
        const char *n = e->d_name;
        if (!strcmp(n, ".") || !strcmp(n, "..") || !strcmp(n, "latest") || !strcmp(n, "curve.tsv") ||
            !strcmp(n, "curve.gp") || !strcmp(n, "curve.png"))
            continue;
        if (strncmp(n, "step-", 5) || strlen(n) != 13) fail_msg("%s: '%s' left behind", dir, n);
    }
    closedir(d);
}

/* One run of spec into dir (start_in) with `fault` in its environment, which must end it with
 * SIGKILL. */
static void run_to_end_killed(const fixture *f, const char *spec, const char *dir, const char *fault)
{
    tu_proc p;
    start_in(f, &p, spec, dir, fault);
    tu_proc_wait(&p, TIMEOUT);
    if (p.signal != SIGKILL)
        fail_msg("%s: the run did not end by SIGKILL at the save (status %d):\n%s%s", fault,
                 p.status, p.out, p.err);
    tu_proc_free(&p);
}

/* kill -9 at 20 points of training on the CPU reference, each followed by --resume (or a new start
 * where no checkpoint was written yet) until the run ends: every time the same checkpoint and
 * training curve (curve.tsv), byte for byte, as the run never killed, and nothing left behind. Three points are inside a save
 * (TT_FAULT_SAVE: its files written, not renamed; an older folder of the step moved aside, the
 * new one not yet in; the new one in, latest not yet moved); 17 at times spread over the run. */
static void test_kill_anywhere(void **state)
{
    fixture *f = *state;
    char *train = write_words_stride(f, "fault.train.txt", "w", 120, 3);
    char *spec = write_spec(f, "fault.yaml", (spec_opts){.train = train, .steps = FAULT_STEPS,
                                                        .dropout = 0.1, .seed = 5, .ckpt_every = 3});
    char *ref = in_root(f, "ckpt-ref");
    tu_proc p;
    RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", ref, "--device", "cpu", "--quiet");
    tu_expect_exit(&p, 0, "the run never killed");
    const double t = p.seconds;
    tu_proc_free(&p);
    int in_save = 0;
    for (int k = 0; k < 20; k++) {
        char name[32];
        snprintf(name, sizeof name, "ckpt-kill-%d", k);
        char *dir = in_root(f, name);
        int runs = 0;
        if (k < 3) {
            /* point 2 needs an older folder of the step: a run killed at point 3 leaves one */
            if (k == 1) run_to_end_killed(f, spec, dir, "TT_FAULT_SAVE=3");
            char fault[32];
            snprintf(fault, sizeof fault, "TT_FAULT_SAVE=%d", k + 1);
            run_to_end_killed(f, spec, dir, fault);
            in_save++;
        } else { /* SIGKILL at (k - 3 + 0.5) / 17 of the run's time */
            const char *argv[] = {TT_TRAIN_BIN, spec, "--checkpoint-dir", dir, "--device", "cpu",
                                  "--quiet", NULL};
            start(f, &p, argv);
            const double at = t * (k - 3 + 0.5) / 17;
            const struct timespec nap = {(time_t)at, (long)((at - (long)at) * 1e9)};
            nanosleep(&nap, NULL);
            tu_proc_signal(&p, SIGKILL);
            tu_proc_wait(&p, TIMEOUT);
            tu_proc_free(&p);
        }
        run_to_end(f, spec, dir, &runs);
        expect_latest(dir, FAULT_STEPS);
        expect_same_checkpoint(ref, dir, FAULT_STEPS);
        char *ref_curve = tt_xasprintf("%s/curve.tsv", ref), *curve = tt_xasprintf("%s/curve.tsv", dir);
        expect_same_file(ref_curve, curve);
        expect_tidy(dir);
        free(dir), free(ref_curve), free(curve);
    }
    print_message("  20 kills (%d inside a save, 17 over %.2f s of training): each resumed to the "
                  "same checkpoint\n", in_save, t);
    free(ref), free(spec), free(train);
}

/* A full disk during a save (every file limited to fewer bytes than the moments' file, with
 * SIGXFSZ ignored, so that the write fails as on a full disk): the run stops with one line, latest
 * names the previous checkpoint, whole; --resume without the limit ends where the run never
 * stopped does, byte for byte. */
static void test_full_disk(void **state)
{
    fixture *f = *state;
    char *train = write_words_stride(f, "disk.train.txt", "w", 120, 3);
    char *spec = write_spec(f, "disk.yaml", (spec_opts){.train = train, .steps = 12,
                                                       .dropout = 0.1, .seed = 5, .ckpt_every = 3});
    char *ref = in_root(f, "ckpt-ref"), *dir = in_root(f, "ckpt-full");
    tu_proc p;
    RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", ref, "--device", "cpu", "--quiet");
    tu_expect_exit(&p, 0, "the run with room");
    tu_proc_free(&p);
    RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", dir, "--device", "cpu", "--quiet",
        "--stop-after", "6");
    tu_expect_exit(&p, 0, "up to step 6");
    tu_proc_free(&p);
    char *model = tt_xasprintf("%s/step-%08d/model.safetensors", dir, 6);
    size_t model_bytes;
    free(tu_read_file(model, &model_bytes));
    /* ulimit -f counts 512-byte blocks in sh: room for the weights, not for the moments */
    char limit[32];
    snprintf(limit, sizeof limit, "%zu", (model_bytes * 3 / 2) / 512);
    RUN(f, &p, "/bin/sh", "-c", "trap '' XFSZ; ulimit -f \"$1\"; shift; exec \"$@\"", "sh", limit,
        TT_TRAIN_BIN, spec, "--checkpoint-dir", dir, "--device", "cpu", "--quiet", "--resume");
    tu_expect_exit(&p, 1, "a save on a full disk");
    if (tu_count_lines(p.err) != 1 || !strstr(p.err, "optim.safetensors"))
        fail_msg("a save on a full disk: stderr is not one line naming the file:\n%s", p.err);
    print_message("  full disk: %s", p.err);
    tu_proc_free(&p);
    expect_latest(dir, 6);
    RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", dir, "--device", "cpu", "--quiet",
        "--resume");
    tu_expect_exit(&p, 0, "--resume with room");
    tu_proc_free(&p);
    expect_latest(dir, 12);
    expect_same_checkpoint(ref, dir, 12);
    expect_tidy(dir);
    free(model), free(ref), free(dir), free(spec), free(train);
}

/* Every tensor of two safetensors files the same, name, shape and bytes (their metadata may
 * differ: a step number). */
static void expect_same_tensors(const char *a, const char *b)
{
    char err[512];
    tt_st_file *x, *y;
    if (tt_st_open(a, &x, err, sizeof err) || tt_st_open(b, &y, err, sizeof err)) fail_msg("%s", err);
    if (tt_st_count(x) != tt_st_count(y))
        fail_msg("%s holds %d tensors, %s %d", a, tt_st_count(x), b, tt_st_count(y));
    for (int i = 0; i < tt_st_count(x); i++) {
        const tt_st_tensor *t = tt_st_get(x, i), *u = tt_st_find(y, t->name);
        if (!u || tt_st_nbytes(t) != tt_st_nbytes(u) || memcmp(t->data, u->data, tt_st_nbytes(t)))
            fail_msg("tensor %s differs between %s and %s", t->name, a, b);
    }
    tt_st_close(x), tt_st_close(y);
}

/* The guarded step, on the tensorized model and on Transformer-XL: step 5 made non-finite
 * (TT_FAULT_NAN_STEP: its loss and every gradient NaN). Without --skip-nonfinite the run stops
 * with exit 1 and one line naming the step, a tensor and the last checkpoint, which latest still
 * names, with no folder of step 5 and nothing left behind. With --skip-nonfinite 1 the step is
 * skipped: its checkpoint holds step 4's weights and moments exactly, and the run goes on to
 * its end (Transformer-XL's next step without the memories the bad step left). */
static void test_nonfinite_step(void **state)
{
    fixture *f = *state;
    char *train = write_words_stride(f, "nan.train.txt", "w", 120, 3);
    for (int txl = 0; txl < 2; txl++) {
        const char *kind = txl ? "transformer-xl" : "tensorized";
        char name[64];
        snprintf(name, sizeof name, "nan-%d.yaml", txl);
        char *spec = write_spec(f, name, (spec_opts){.train = train, .steps = 8, .dropout = 0.1,
                                                    .seed = 5, .ckpt_every = 3, .txl = txl});
        snprintf(name, sizeof name, "ckpt-ref-%d", txl);
        char *ref = in_root(f, name);
        snprintf(name, sizeof name, "ckpt-stop-%d", txl);
        char *stop = in_root(f, name);
        snprintf(name, sizeof name, "ckpt-skip-%d", txl);
        char *skip = in_root(f, name);
        tu_proc p;
        RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", ref, "--device", device, "--quiet",
            "--stop-after", "4");
        tu_expect_exit(&p, 0, "up to step 4");
        tu_proc_free(&p);

        const char *env[] = {f->env[0], "TT_FAULT_NAN_STEP=5", NULL};
        const char *stop_argv[] = {TT_TRAIN_BIN, spec, "--checkpoint-dir", stop, "--device",
                                   device, "--quiet", NULL};
        tu_proc_start(&p, stop_argv, env);
        tu_proc_wait(&p, TIMEOUT);
        tu_expect_exit(&p, 1, "a NaN step");
        if (tu_count_lines(p.err) != 1 || !strstr(p.err, "step 5: the loss is NaN") ||
            !strstr(p.err, "first non-finite gradient: ") || !strstr(p.err, "step-00000003"))
            fail_msg("%s, a NaN step: stderr is not one line naming the step, a tensor and the "
                     "last checkpoint:\n%s", kind, p.err);
        print_message("  %s: %s", kind, p.err);
        tu_proc_free(&p);
        expect_latest(stop, 3);
        char *step5 = tt_xasprintf("%s/step-%08d", stop, 5);
        if (tu_exists(step5)) fail_msg("%s: a folder of the NaN step", step5);
        expect_tidy(stop);

        const char *skip_argv[] = {TT_TRAIN_BIN, spec, "--checkpoint-dir", skip, "--device",
                                   device, "--stop-after", "5", "--skip-nonfinite", "1", NULL};
        tu_proc_start(&p, skip_argv, env);
        tu_proc_wait(&p, TIMEOUT);
        tu_expect_exit(&p, 0, "a NaN step skipped");
        if (!strstr(p.out, "step 5: the loss is NaN") || !strstr(p.out, "skipped"))
            fail_msg("%s: no line says step 5 was skipped:\n%s", kind, p.out);
        tu_proc_free(&p);
        for (int k = 0; k < 2; k++) {
            const char *file = k ? "optim.safetensors" : "model.safetensors";
            char *a = tt_xasprintf("%s/step-%08d/%s", ref, 4, file);
            char *b = tt_xasprintf("%s/step-%08d/%s", skip, 5, file);
            expect_same_tensors(a, b);
            free(a), free(b);
        }
        char err[512], *sfile = tt_xasprintf("%s/step-%08d/state.safetensors", skip, 5);
        tt_st_file *st;
        if (tt_st_open(sfile, &st, err, sizeof err)) fail_msg("%s", err);
        assert_string_equal(tt_st_meta(st, "skipped"), "1");
        assert_string_equal(tt_st_meta(st, "mem_step"), "-1");
        tt_st_close(st);
        RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", skip, "--device", device, "--quiet",
            "--resume");
        tu_expect_exit(&p, 0, "the skipping run resumed to its end");
        tu_proc_free(&p);
        expect_latest(skip, 8);
        print_message("  %s: step 5 skipped with step 4's weights and moments; resumed to step 8\n",
                      kind);
        /* On one GPU the trainer submits a step before the last one's result (step 6 before
         * step 5's is back): to step 6 with step 5 skipped, the checkpoint is the one of the
         * same run one step at a time (TT_PIPELINE=0), to the bit */
        char *seq = tt_xasprintf("%s-seq", skip), *pip = tt_xasprintf("%s-pipe", skip);
        for (int k = 0; k < 2; k++) {
            const char *env6[] = {f->env[0], "TT_FAULT_NAN_STEP=5", k ? NULL : "TT_PIPELINE=0",
                                  NULL};
            const char *argv6[] = {TT_TRAIN_BIN, spec, "--checkpoint-dir", k ? pip : seq,
                                   "--device", device, "--quiet", "--stop-after", "6",
                                   "--skip-nonfinite", "1", NULL};
            tu_proc_start(&p, argv6, env6);
            tu_proc_wait(&p, TIMEOUT);
            tu_expect_exit(&p, 0, k ? "to step 6, pipelined" : "to step 6, one step at a time");
            tu_proc_free(&p);
        }
        for (int k = 0; k < 3; k++) {
            static const char *const files[] = {"model.safetensors", "optim.safetensors",
                                                "state.safetensors"};
            char *a = tt_xasprintf("%s/step-%08d/%s", seq, 6, files[k]);
            char *b = tt_xasprintf("%s/step-%08d/%s", pip, 6, files[k]);
            expect_same_tensors(a, b);
            free(a), free(b);
        }
        print_message("  %s: to step 6 past the skipped step 5, pipelined as one step at a time\n",
                      kind);
        free(seq), free(pip);
        free(sfile), free(step5), free(spec), free(ref), free(stop), free(skip);
    }
    free(train);
}

static void test_sigint(void **state) { check_stop_signal(*state, SIGINT, "SIGINT"); }
static void test_sigterm(void **state) { check_stop_signal(*state, SIGTERM, "SIGTERM"); }

/* --- bad inputs: one line, exit code 2 ------------------------------------------------------- */

static void test_missing_train_file(void **state)
{
    fixture *f = *state;
    char *missing = in_root(f, "no-such-corpus.txt");
    char *spec = write_spec(f, "missing.yaml", (spec_opts){.train = missing});
    char *ckpt = in_root(f, "ckpt");
    tu_proc p;
    RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", ckpt);
    expect_error(&p, "missing data.train", missing, ": cannot open: No such file or directory");
    tu_proc_free(&p);
    free(missing), free(spec), free(ckpt);
}

static void test_model_vocab_mismatch(void **state)
{
    fixture *f = *state;
    ptb_paths d = ptb();
    char *spec = write_spec(f, "vocab9999.yaml", (spec_opts){.train = d.train, .vocab = "9999"});
    char *want = tt_xasprintf("%s: model.vocab is 9999 but %s has 10000 words", spec, d.train);
    tu_proc p;
    RUN(f, &p, TT_TRAIN_BIN, spec);
    expect_error(&p, "model.vocab 9999 on PTB", want, "set vocab: 10000 or vocab: data");
    tu_proc_free(&p);
    free(spec), free(want);
    ptb_free(&d);
}

static void test_nul_byte(void **state)
{
    fixture *f = *state;
    char *train = write_words(f, "nul.txt", "w", 30);
    size_t len;
    char *text = tu_read_file(train, &len);
    char *third = strchr(strchr(text, '\n') + 1, '\n') + 1;
    third[4] = '\0'; /* line 3, column 5 */
    tu_write_file(train, text, len);
    char *spec = write_spec(f, "nul.yaml", (spec_opts){.train = train});
    char *want = tt_xasprintf("%s:3: NUL byte at column 5\n", train);
    tu_proc p;
    RUN(f, &p, TT_TRAIN_BIN, spec);
    expect_error(&p, "a NUL byte in data.train", want, NULL);
    tu_proc_free(&p);
    free(train), free(text), free(spec), free(want);
}

/* A checkpoint of a small corpus under a spec whose vocabulary is another: PTB (10000 words), or
 * one of the same size whose words differ. Only the vocabulary's hash tells the second apart. */
static void test_eval_other_vocabulary(void **state)
{
    fixture *f = *state;
    char *a = write_words(f, "a.txt", "a", 30), *b = write_words(f, "b.txt", "b", 30);
    char *ckpt = in_root(f, "ckpt");
    train_small(f, a, 8, ckpt);
    char *model = tt_xasprintf("%s/step-00000002/model.safetensors", ckpt);
    ptb_paths d = ptb();
    char *spec_ptb = write_spec(f, "ptb.yaml", (spec_opts){.train = d.train, .valid = d.valid});
    char *spec_b = write_spec(f, "b.yaml", (spec_opts){.train = b, .valid = b});
    tu_proc p;
    RUN(f, &p, TT_EVAL_BIN, spec_ptb, "--checkpoint", ckpt);
    expect_error(&p, "PTB's vocabulary", model, "the vocabulary does not match the checkpoint's");
    tu_proc_free(&p);
    RUN(f, &p, TT_EVAL_BIN, spec_b, "--checkpoint", ckpt);
    expect_error(&p, "a vocabulary of the same size", model,
                 "the vocabulary does not match the checkpoint's");
    tu_proc_free(&p);
    /* The same vocabulary written as a number instead of `data` is the same model. */
    char *spec_n = write_spec(f, "a-22.yaml", (spec_opts){.train = a, .valid = a, .vocab = "22"});
    RUN(f, &p, TT_EVAL_BIN, spec_n, "--checkpoint", ckpt);
    tu_expect_exit(&p, 0, "vocab: 22 for a checkpoint of vocab: data");
    tu_proc_free(&p);
    free(a), free(b), free(ckpt), free(model), free(spec_ptb), free(spec_b), free(spec_n);
    ptb_free(&d);
}

static void test_eval_other_model(void **state)
{
    fixture *f = *state;
    char *a = write_words(f, "a.txt", "a", 30), *ckpt = in_root(f, "ckpt");
    train_small(f, a, 4, ckpt);
    char *spec = write_spec(f, "rank8.yaml", (spec_opts){.train = a, .valid = a, .rank = 8});
    char *model = tt_xasprintf("%s/step-00000002/model.safetensors", ckpt);
    tu_proc p;
    RUN(f, &p, TT_EVAL_BIN, spec, "--checkpoint", ckpt);
    expect_error(&p, "rank 4 checkpoint, rank 8 spec", model,
                 "checkpoint has 'model.rank: 4', spec has 'model.rank: 8'");
    tu_proc_free(&p);
    free(a), free(ckpt), free(spec), free(model);
}

/* kind: transformer-xl trains and evaluates where the tensorized model does (--device auto: the
 * GPU when there is one, else the CPU, saying why): it learns the corpus, tt-eval scores its
 * checkpoint to the perplexity tt-train's final validation printed (the spec's eval lengths, here
 * other than training's), the checkpoint holds kimiyoung's names, and --stride (tt-eval) and,
 * without a GPU, --device cuda are refused in one line. */
static void test_txl_trains(void **state)
{
    fixture *f = *state;
    char *corpus = write_words(f, "txl.txt", "t", 60), *spec = in_root(f, "txl.yaml");
    char *ckpt = in_root(f, "txl-ckpt");
    char *text = tt_xasprintf("model:\n  kind: transformer-xl\n  vocab: data\n  d_model: 32\n"
                              "  layers: 2\n  n_head: 2\n  d_head: 16\n  seq_len: 8\n  mem_len: 8\n"
                              "  d_inner: 64\n  dropout: 0.1\n"
                              "train:\n  batch: 4\n  steps: 60\n  optimizer: {lr: 5.0e-3}\n"
                              "  schedule: {kind: cosine, warmup: 5}\n  eval_interval: 0\n"
                              "eval:\n  tgt_len: 6\n  mem_len: 12\n  clamp_len: 10\n"
                              "data:\n  train: %s\n  valid: %s\n", corpus, corpus);
    tu_write_text(spec, text);
    tu_proc p;
    RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", ckpt, "--log-every", "20");
    tu_expect_exit(&p, 0, "tt-train on transformer-xl");
    /* where it runs: the GPU when there is one, else the cpu, saying why */
    if (!strstr(p.out, "on the cpu (no CUDA device") && !strstr(p.out, "on NVIDIA"))
        fail_msg("tt-train does not say where it runs and why:\n%s", p.out);
    const double trained = last_number_after(p.out, "valid ppl ");
    print_message("  valid ppl %.3f after 60 steps (20 words)\n", trained);
    if (!(trained < 6)) fail_msg("valid ppl %.3f after 60 steps on a corpus of 20 words", trained);
    tu_proc_free(&p);
    RUN(f, &p, TT_EVAL_BIN, spec, "--checkpoint", ckpt);
    tu_expect_exit(&p, 0, "tt-eval on transformer-xl");
    const double evaluated = last_number_after(p.out, "valid perplexity ");
    if (fabs(evaluated - trained) > 0.0015)
        fail_msg("tt-eval: %.3f, tt-train's final validation: %.3f\n%s", evaluated, trained, p.out);
    if (!strstr(p.out, "tgt_len 6, mem_len 12, clamp_len 10"))
        fail_msg("tt-eval does not print the eval lengths it used:\n%s", p.out);
    tu_proc_free(&p);
    char *model = tt_xasprintf("%s/step-00000060/model.safetensors", ckpt);
    size_t len;
    char *bytes = tu_read_file(model, &len);
    const char *names[] = {"\"r_w_bias\"", "\"r_r_bias\"", "\"layers.1.dec_attn.qkv_net.weight\"",
                           "\"layers.1.dec_attn.r_net.weight\"", "\"layers.0.pos_ff.CoreNet.3.bias\"",
                           "\"word_emb.emb_layers.0.weight\""};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!memmem(bytes, len, names[i], strlen(names[i])))
            fail_msg("%s has no tensor %s", model, names[i]);
    RUN(f, &p, TT_EVAL_BIN, spec, "--checkpoint", ckpt, "--stride", "4");
    expect_error(&p, "tt-eval --stride on txl", "tt-eval: --stride is for kind: tensorized",
                 "eval: tgt_len, mem_len, clamp_len");
    tu_proc_free(&p);
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver) {
        dlclose(driver);
        print_message("  (a GPU driver is here: --device cuda's no-device message not checked)\n");
    } else {
        RUN(f, &p, TT_TRAIN_BIN, spec, "--device", "cuda");
        expect_error(&p, "tt-train --device cuda without a GPU", "--device cuda: no CUDA device", NULL);
        tu_proc_free(&p);
    }
    free(corpus), free(spec), free(ckpt), free(text), free(model), free(bytes);
}

/* A checkpoint that is not there, a truncated one, nothing to resume, and bad options. */
static void test_checkpoint_and_usage_errors(void **state)
{
    fixture *f = *state;
    char *a = write_words(f, "a.txt", "a", 30), *ckpt = in_root(f, "ckpt");
    train_small(f, a, 8, ckpt);
    char *spec = write_spec(f, "a.yaml", (spec_opts){.train = a, .valid = a});
    char *missing = in_root(f, "no-such-checkpoint"), *empty = in_root(f, "empty");
    tu_proc p;
    RUN(f, &p, TT_EVAL_BIN, spec, "--checkpoint", missing);
    expect_error(&p, "a missing checkpoint", missing, "no such checkpoint");
    tu_proc_free(&p);

    RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", empty, "--resume");
    expect_error(&p, "--resume with nothing", "tt-train: --resume: ", empty);
    tu_proc_free(&p);

    RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", empty, "--device", "tpu");
    expect_error(&p, "--device tpu", "--device is cpu, cuda or auto", "'tpu'");
    tu_proc_free(&p);
    RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", empty, "--patience", "x");
    expect_error(&p, "--patience x", "tt-train: --patience", "'x'");
    tu_proc_free(&p);
    RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", empty, "--skip-nonfinite", "-1");
    expect_error(&p, "--skip-nonfinite -1", "tt-train: --skip-nonfinite", "'-1'");
    tu_proc_free(&p);
    /* an option's value left out: said so, not "unknown option" */
    RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", empty, "--stop-after");
    expect_error(&p, "--stop-after (no value)", "tt-train: --stop-after needs a value", NULL);
    tu_proc_free(&p);
    RUN(f, &p, TT_EVAL_BIN, spec, "--checkpoint");
    expect_error(&p, "--checkpoint (no value)", "tt-eval: --checkpoint needs a value", NULL);
    tu_proc_free(&p);
    RUN(f, &p, TT_TRAIN_BIN, spec, "--bogus");
    expect_error(&p, "--bogus", "tt-train: unknown option '--bogus'", NULL);
    tu_proc_free(&p);
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver) {
        dlclose(driver);
        print_message("  (a GPU driver is here: --device cuda's no-device message not checked)\n");
    } else {
        RUN(f, &p, TT_EVAL_BIN, spec, "--checkpoint", ckpt, "--device", "cuda");
        expect_error(&p, "--device cuda without a GPU", "--device cuda: no CUDA device", NULL);
        tu_proc_free(&p);
    }

    RUN(f, &p, TT_EVAL_BIN, spec, "--checkpoint", ckpt, "--split", "bogus");
    expect_error(&p, "--split bogus", "tt-eval: --split", "'bogus'");
    tu_proc_free(&p);
    RUN(f, &p, TT_EVAL_BIN, spec, "--checkpoint", ckpt, "--stride", "0");
    expect_error(&p, "--stride 0", "tt-eval: --stride", "'0'");
    tu_proc_free(&p);

    char *model = tt_xasprintf("%s/step-00000002/model.safetensors", ckpt);
    size_t len;
    char *bytes = tu_read_file(model, &len);
    tu_write_file(model, bytes, len / 2);
    char *prefix = tt_xasprintf("%s: ", model);
    RUN(f, &p, TT_EVAL_BIN, spec, "--checkpoint", ckpt);
    expect_error(&p, "a truncated model.safetensors", prefix, NULL);
    tu_proc_free(&p);
    RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", ckpt, "--resume");
    expect_error(&p, "--resume from it", prefix, NULL);
    tu_proc_free(&p);
    free(a), free(ckpt), free(spec), free(missing), free(empty);
    free(model), free(bytes), free(prefix);
}

/* --- a checkpoint's step is checked, not trusted ----------------------------------------------
 * model.safetensors' metadata step, rewritten in place (the header's length kept) to a negative
 * number or to letters: tt-eval and tt-train --resume refuse it in one line naming the file, and
 * never train from it (a negative step read outside the batch's buffer; letters resumed at step
 * 0 and overwrote the step folders). */
static void test_checkpoint_step_checked(void **state)
{
    fixture *f = *state;
    char *a = write_words(f, "a.txt", "a", 30), *ckpt = in_root(f, "ckpt-step");
    char *spec = write_spec(f, "st.yaml", (spec_opts){.train = a, .valid = a, .steps = 12});
    tu_proc p;
    RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", ckpt, "-q");
    tu_expect_exit(&p, 0, "a 12-step run");
    tu_proc_free(&p);
    char *model = tt_xasprintf("%s/step-00000012/model.safetensors", ckpt);
    size_t len;
    char *bytes = tu_read_file(model, &len);
    char *at = NULL;
    for (size_t i = 0; i + 11 <= len && !at; i++)
        if (!memcmp(bytes + i, "\"step\":\"12\"", 11)) at = bytes + i + 8;
    assert_non_null(at);
    static const char *const bad[] = {"-5", "ab"};
    for (size_t b = 0; b < sizeof bad / sizeof *bad; b++) {
        memcpy(at, bad[b], 2);
        tu_write_file(model, bytes, len);
        char *what = tt_xasprintf("step '%s' (tt-eval)", bad[b]), *part = tt_xasprintf("'%s'", bad[b]);
        RUN(f, &p, TT_EVAL_BIN, spec, "--checkpoint", ckpt);
        expect_error(&p, what, model, part);
        tu_proc_free(&p);
        free(what);
        what = tt_xasprintf("step '%s' (--resume)", bad[b]);
        RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", ckpt, "--resume");
        expect_error(&p, what, model, part);
        tu_proc_free(&p);
        free(what), free(part);
    }
    free(a), free(ckpt), free(spec), free(model), free(bytes);
}

/* --- several GPUs: what is refused before any GPU is used --------------------------------------
 * A run under a launcher's variables (RANK, WORLD_SIZE, LOCAL_RANK) or with --gpus: a batch the
 * ranks cannot share equally, ranks on the CPU, --gpus under a launcher, and (without a driver)
 * no GPU to run on, each refused in one line. */
static void run_as_rank(const fixture *f, tu_proc *p, int world, const char *const *argv)
{
    char *ws = tt_xasprintf("WORLD_SIZE=%d", world);
    const char *env[] = {f->env[0], "RANK=0", ws, "LOCAL_RANK=0", "MASTER_ADDR=127.0.0.1",
                         "MASTER_PORT=1", NULL};
    tu_proc_start(p, argv, env);
    tu_proc_wait(p, TIMEOUT);
    free(ws);
}

static void test_ranks_refused(void **state)
{
    fixture *f = *state;
    char *a = write_words(f, "a.txt", "a", 30), *ckpt = in_root(f, "ckpt-ranks");
    char *spec = write_spec(f, "r.yaml", (spec_opts){.train = a, .valid = a}); /* batch 8 */
    train_small(f, a, 2, ckpt);
    tu_proc p;
    run_as_rank(f, &p, 3, (const char *const[]){TT_TRAIN_BIN, spec, "--checkpoint-dir", ckpt, NULL});
    expect_error(&p, "batch 8 on 3 ranks", NULL, "train.batch 8 is not divisible by the 3 GPUs");
    tu_proc_free(&p);
    run_as_rank(f, &p, 2, (const char *const[]){TT_TRAIN_BIN, spec, "--checkpoint-dir", ckpt,
                                                 "--device", "cpu", NULL});
    expect_error(&p, "2 ranks on the CPU", "rank 0 of 2: several ranks run on GPUs", NULL);
    tu_proc_free(&p);
    run_as_rank(f, &p, 2, (const char *const[]){TT_TRAIN_BIN, spec, "--checkpoint-dir", ckpt,
                                                 "--gpus", "2", NULL});
    expect_error(&p, "--gpus under a launcher", "tt-train: --gpus under a launcher", "rank 0 of 2");
    tu_proc_free(&p);
    RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", ckpt, "--gpus", "0");
    expect_error(&p, "--gpus 0", "tt-train: --gpus takes a number of at least 1", NULL);
    tu_proc_free(&p);
    RUN(f, &p, TT_EVAL_BIN, spec, "--checkpoint", ckpt, "--gpus", "x");
    expect_error(&p, "tt-eval --gpus x", "tt-eval: --gpus takes a positive number or all", NULL);
    tu_proc_free(&p);
    run_as_rank(f, &p, 3, (const char *const[]){TT_EVAL_BIN, spec, "--checkpoint", ckpt, "--device",
                                                 "cpu", NULL});
    expect_error(&p, "tt-eval as a rank on the CPU", "rank 0 of 3: several ranks run on GPUs",
                 NULL);
    tu_proc_free(&p);
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (driver) {
        dlclose(driver);
        print_message("  (a GPU driver is here: the no-device messages of ranks not checked)\n");
    } else {
        RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", ckpt, "--gpus", "2");
        expect_error(&p, "--gpus 2 without a GPU", "tt-train: --gpus: no CUDA device", NULL);
        tu_proc_free(&p);
        RUN(f, &p, TT_EVAL_BIN, spec, "--checkpoint", ckpt, "--gpus", "all");
        expect_error(&p, "tt-eval --gpus all without one", "tt-eval: --gpus: no CUDA device", NULL);
        tu_proc_free(&p);
        run_as_rank(f, &p, 2, (const char *const[]){TT_TRAIN_BIN, spec, "--checkpoint-dir", ckpt, NULL});
        expect_error(&p, "a rank without a GPU", "rank 0 of 2: no CUDA device", NULL);
        tu_proc_free(&p);
    }
    free(a), free(ckpt), free(spec);
}

/* --- causal: false --------------------------------------------------------------------------- */

static void test_causal_false_note(void **state)
{
    fixture *f = *state;
    char *a = write_words(f, "a.txt", "a", 30), *ckpt = in_root(f, "ckpt");
    char *spec =
        write_spec(f, "unmasked.yaml", (spec_opts){.train = a, .valid = a, .non_causal = 1});
    tu_proc p;
    RUN(f, &p, TT_TRAIN_BIN, spec, "--checkpoint-dir", ckpt);
    tu_expect_exit(&p, 0, "tt-train, causal: false");
    if (!strstr(p.out, "[causal: false: not a causal LM score]"))
        fail_msg("the trainer's validation does not say it is no LM score:\n%s", p.out);
    tu_proc_free(&p);
    static const char note[] = "causal: false: every position sees later tokens of its window, so "
                               "this perplexity is not a causal language-model score";
    RUN(f, &p, TT_EVAL_BIN, spec, "--checkpoint", ckpt);
    tu_expect_exit(&p, 0, "tt-eval, causal: false");
    char *want = tt_xasprintf("\nNOTE: %s\n", note);
    if (!strstr(p.out, want)) fail_msg("tt-eval lacks the note:\n%s", p.out);
    free(want);
    tu_proc_free(&p);
    RUN(f, &p, TT_EVAL_BIN, spec, "--checkpoint", ckpt, "--json");
    tu_expect_exit(&p, 0, "tt-eval --json, causal: false");
    want = tt_xasprintf("\"causal\":false,");
    char *field = tt_xasprintf("\"note\":\"%s\"}\n", note);
    if (!strstr(p.out, want) || !strstr(p.out, field))
        fail_msg("tt-eval --json lacks the note:\n%s", p.out);
    free(want), free(field);
    tu_proc_free(&p);
    free(a), free(ckpt), free(spec);
}

/* Each test in a fresh folder of its own. */
#define IN_OWN_FOLDER(test) cmocka_unit_test_setup_teardown(test, setup, teardown)

/* A checkpoint moves between the devices (TT_TEST_DEVICE=cuda only): Transformer-XL at fp32
 * stopped after step 9 on one and resumed on the other; the first resumed step's loss is the
 * straight run's on the first device within fp32's tolerance of a step (1e-5 relative; the GPU
 * tests hold a step to that), which it would not be without the memories. */
static void test_resume_across_devices(void **state)
{
    fixture *f = *state;
    const resume_case *c = &resume_cases[2];
    char *train, *valid;
    resume_corpora(f, &train, &valid);
    char *spec = resume_spec(f, c, train, valid);
    static const char *const dev[2] = {"cpu", "cuda"};
    for (int from = 0; from < 2; from++) {
        char *dir_a = in_root(f, from ? "ckpt-gpu-a" : "ckpt-cpu-a");
        char *dir_b = in_root(f, from ? "ckpt-gpu-b" : "ckpt-cpu-b");
        char *log_a = in_root(f, from ? "gpu-a.json" : "cpu-a.json");
        char *log_b = in_root(f, from ? "gpu-b.json" : "cpu-b.json");
        tu_proc p;
        RUN(f, &p, TT_TRAIN_BIN, spec, "--device", dev[from], "--checkpoint-dir", dir_a,
            "--log-json", log_a, "--stop-after", "10");
        tu_expect_exit(&p, 0, "A: 10 steps");
        tu_proc_free(&p);
        RUN(f, &p, TT_TRAIN_BIN, spec, "--device", dev[from], "--checkpoint-dir", dir_b,
            "--log-json", log_b, "--stop-after", "9");
        tu_expect_exit(&p, 0, "B: 9 steps");
        tu_proc_free(&p);
        RUN(f, &p, TT_TRAIN_BIN, spec, "--device", dev[!from], "--checkpoint-dir", dir_b,
            "--log-json", log_b, "--resume", "--stop-after", "10");
        tu_expect_exit(&p, 0, "B: resumed on the other device");
        assert_string_equal(p.err, "");
        tu_proc_free(&p);
        char *a = tu_read_file(log_a, NULL), *b = tu_read_file(log_b, NULL);
        const char *la = strstr(a, "{\"step\":10,"), *lb = strstr(b, "{\"step\":10,");
        if (!la || !lb) fail_msg("no step 10 in %s or %s", log_a, log_b);
        const double x = json_num(la, "loss"), y = json_num(lb, "loss");
        print_message("  step 10 on the %s: loss %.9g; resumed on the %s from step 9: %.9g "
                      "(%.1e relative)\n", dev[from], x, dev[!from], y, fabs(y - x) / x);
        if (!(fabs(y - x) <= 1e-5 * x))
            fail_msg("resumed on the %s, step 10's loss is %.9g against %.9g", dev[!from], y, x);
        free(a), free(b), free(dir_a), free(dir_b), free(log_a), free(log_b);
    }
    free(spec), free(train), free(valid);
}

int main(void)
{
    tu_test_only_from_env();
    const char *want = getenv("TT_TEST_DEVICE");
    if (want && !strcmp(want, "cuda")) {
        tt_device_info info;
        char why[256];
        if (tt_device_query(0, &info, why, sizeof why) != 0) {
            printf("skipped: the reproducibility tests on the GPU need one: %s\n", why);
            return 77;
        }
        printf("the reproducibility tests on %s, each run from a cache without tuning\n",
               info.name);
        device = "cuda";
        const struct CMUnitTest gpu_tests[] = {
            IN_OWN_FOLDER(test_resume_is_exact),
            IN_OWN_FOLDER(test_resume_needs_memory),
            IN_OWN_FOLDER(test_resume_across_devices),
            IN_OWN_FOLDER(test_nonfinite_step),
        };
        return cmocka_run_group_tests(gpu_tests, NULL, NULL);
    }
    const struct CMUnitTest tests[] = {
        IN_OWN_FOLDER(test_missing_train_file),
        IN_OWN_FOLDER(test_model_vocab_mismatch),
        IN_OWN_FOLDER(test_nul_byte),
        IN_OWN_FOLDER(test_eval_other_vocabulary),
        IN_OWN_FOLDER(test_eval_other_model),
        IN_OWN_FOLDER(test_checkpoint_and_usage_errors),
        IN_OWN_FOLDER(test_ranks_refused),
        IN_OWN_FOLDER(test_checkpoint_step_checked),
        IN_OWN_FOLDER(test_txl_trains),
        IN_OWN_FOLDER(test_causal_false_note),
        IN_OWN_FOLDER(test_learns_context),
        IN_OWN_FOLDER(test_resume_is_exact),
        IN_OWN_FOLDER(test_resume_needs_memory),
        IN_OWN_FOLDER(test_sigint),
        IN_OWN_FOLDER(test_sigterm),
        IN_OWN_FOLDER(test_kill_anywhere),
        IN_OWN_FOLDER(test_full_disk),
        IN_OWN_FOLDER(test_nonfinite_step),
        /* These two wait for the 300-step run of the group setup. */
        cmocka_unit_test(test_tiny_trains_on_ptb),
        cmocka_unit_test(test_eval_counts_every_token_once),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
