/* The training curve (train/curve.c): curve.tsv kept up to a resumed run's step, the gnuplot
 * script for one run and for several, how gnuplot's absence and failure are reported, and
 * tt-train drawing curve.png in its checkpoint folder (a tiny CPU run), or saying once that it
 * cannot. The checks of a PNG need gnuplot on PATH; without it they say they were skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "curve.h"
#include "testutil.h"
#include "util.h"

#define TIMEOUT 120.0

typedef struct {
    char root[64];
    char *nobin;  /* an empty folder: PATH without gnuplot */
    char *path;   /* PATH as it was, put back by the teardown (a test may set nobin) */
    char *env[3]; /* TTGEN_CACHE_DIR=root/cache, then PATH=nobin for runs without gnuplot */
} fixture;

static int setup(void **state)
{
    fixture *f = tt_xcalloc(1, sizeof *f);
    tu_temp_dir("curve", f->root, sizeof f->root);
    f->nobin = tt_xasprintf("%s/nobin", f->root);
    assert_int_equal(mkdir(f->nobin, 0755), 0);
    f->env[0] = tt_xasprintf("TTGEN_CACHE_DIR=%s/cache", f->root);
    f->env[1] = tt_xasprintf("PATH=%s", f->nobin);
    f->path = tt_xstrdup(getenv("PATH"));
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    tu_rm_rf(f->root);
    setenv("PATH", f->path, 1);
    free(f->nobin), free(f->path), free(f->env[0]), free(f->env[1]);
    free(f);
    return 0;
}

static char *in_root(const fixture *f, const char *name)
{
    return tt_xasprintf("%s/%s", f->root, name);
}

static void expect_has(const char *text, const char *part)
{
    if (!strstr(text, part)) fail_msg("no '%s' in:\n%s", part, text);
}

/* Fails when folder dir holds a temporary (NAME.tmp.PID...). */
static void expect_no_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    for (struct dirent *e; (e = readdir(d));)
        if (strstr(e->d_name, ".tmp.")) fail_msg("%s/%s is left behind", dir, e->d_name);
    closedir(d);
}

/* Sends stdout (the curve's notes) to the file out; returns what stdout_back takes. */
static int stdout_to(const char *out)
{
    fflush(stdout);
    const int saved = dup(1), fd = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    assert_true(saved >= 0 && fd >= 0);
    dup2(fd, 1);
    close(fd);
    return saved;
}

static void stdout_back(int saved)
{
    fflush(stdout);
    dup2(saved, 1);
    close(saved);
}

static void expect_text(const char *path, const char *want)
{
    char *got = tu_read_file(path, NULL);
    assert_string_equal(got, want);
    free(got);
}

/* A resumed run keeps the rows of steps up to its own, validations included, and drops the later
 * ones, a row that does not parse (with a note naming its line) and the unfinished last line a
 * kill leaves; its own rows follow, and closing notes that gnuplot is missing. A fresh run starts
 * the file over. */
static void test_resume_keeps_rows_up_to_its_step(void **state)
{
    fixture *f = *state;
    char *tsv = in_root(f, "curve.tsv"), *notes = in_root(f, "notes.txt");
    setenv("PATH", f->nobin, 1); /* closing draws: no gnuplot here */
    tu_write_text(tsv, "# step\tloss\tvalid_ppl\n1\t5\t\n2\t4.5\t\n3\t4\t\n3\t\t60\nbad row\n4\t3.5\t\n"
                       "5\t3.25\t\n6\t3\t\n6\t\t25\n7\t2.");
    int saved = stdout_to(notes);
    tt_curve *c = tt_curve_open(f->root, 3, false);
    stdout_back(saved);
    assert_non_null(c);
    const char *kept = "# step\tloss\tvalid_ppl\n1\t5\t\n2\t4.5\t\n3\t4\t\n3\t\t60\n";
    expect_text(tsv, kept);
    char *want = tt_xasprintf("note: %s:6: not a row of step, loss and validation perplexity: left "
                              "out\n", tsv);
    expect_text(notes, want);
    free(want);

    tt_curve_loss(c, 4, 3.75);
    tt_curve_flush(c);
    want = tt_xasprintf("%s4\t3.75\t\n", kept);
    expect_text(tsv, want);
    free(want);
    saved = stdout_to(notes);
    tt_curve_close(c);
    stdout_back(saved);
    expect_text(notes, "note: gnuplot not found: no curve.png\n");

    c = tt_curve_open(f->root, 0, true);
    assert_non_null(c);
    tt_curve_close(c);
    expect_text(tsv, "# step\tloss\tvalid_ppl\n");
    expect_no_temporaries(f->root);
    free(tsv), free(notes);
}

/* The script of a chart of one run (raw and smoothed loss, validations on the right axis, a title
 * with a quote) and of two runs given inline, one without validations; gnuplot draws both when
 * it is there. */
static void test_script(void **state)
{
    fixture *f = *state;
    char *tsv = in_root(f, "curve.tsv");
    tt_buf rows = {0};
    for (long s = 1; s <= 1000; s++) tt_curve_row(&rows, s, 5.0 - s * 1e-3, NAN);
    tt_curve_row(&rows, 1000, NAN, 50);
    tu_write_file(tsv, rows.data, rows.len);
    tt_buf_free(&rows);

    const tt_curve_run one = {"curve.tsv", NULL, NULL, 1000, 1};
    tt_buf b = {0};
    tt_curve_script(&b, &one, 1, "it's a run", "curve.png");
    static const char *const one_wants[] = {
        "# Generated by tt (train/curve.c)",
        "\nif (!exists(\"out\")) out = 'curve.png'\n",
        "\nset terminal png noenhanced size 1000,600\nset output out\n",
        "\nset title 'it''s a run'\n",
        "\nset y2tics\nset logscale y2\n",
        "\nplot 'curve.tsv' using 1:2 with lines lc rgb '#b0b0b0' title 'training loss, per step', "
        "\\\n     e = NaN, 'curve.tsv' using 1:(ema($2, 0.900000)) with lines lw 2 lc 1 title "
        "'smoothed', \\\n     'curve.tsv' using 1:3 axes x1y2 with linespoints pt 7 ps 1.2 lc 2 "
        "title 'validation perplexity'\n"};
    if (strncmp(b.data, one_wants[0], strlen(one_wants[0])) != 0) fail_msg("first line:\n%s", b.data);
    for (size_t i = 1; i < sizeof one_wants / sizeof *one_wants; i++) expect_has(b.data, one_wants[i]);
    char *one_gp = in_root(f, "one.gp");
    tu_write_file(one_gp, b.data, b.len);
    tt_buf_free(&b);

    const tt_curve_run two[] = {{NULL, "1\t3\t\n1\t\t20\n", "a.jsonl", 1, 1},
                                {NULL, "1\t2.5\t\n", "b.jsonl", 1, 0}};
    tt_curve_script(&b, two, 2, NULL, "two.png");
    static const char *const two_wants[] = {
        "\n$run1 << EOD\n1\t3\t\n1\t\t20\nEOD\n$run2 << EOD\n1\t2.5\t\nEOD\n",
        "\nset ylabel 'training loss (smoothed)'\n",
        "\nset y2label 'validation perplexity (circles, log scale)'\n",
        "\nplot e = NaN, $run1 using 1:(ema($2, 0.000000)) with lines lw 2 lc 1 title 'a.jsonl', "
        "\\\n     $run1 using 1:3 axes x1y2 with linespoints pt 7 ps 1.2 lc 1 notitle, \\\n     "
        "e = NaN, $run2 using 1:(ema($2, 0.000000)) with lines lw 2 lc 2 title 'b.jsonl'\n"};
    for (size_t i = 0; i < sizeof two_wants / sizeof *two_wants; i++) expect_has(b.data, two_wants[i]);
    if (strstr(b.data, "set title")) fail_msg("a title nobody gave:\n%s", b.data);
    char *two_gp = in_root(f, "two.gp");
    tu_write_file(two_gp, b.data, b.len);
    tt_buf_free(&b);

    const tt_curve_run none = {NULL, "1\t3\t\n", NULL, 1, 0};
    tt_curve_script(&b, &none, 1, NULL, "none.png");
    if (strstr(b.data, "y2")) fail_msg("a right axis without validations:\n%s", b.data);
    tt_buf_free(&b);

    if (!tu_on_path("gnuplot")) {
        print_message("  skipped drawing the scripts: no gnuplot on PATH\n");
    } else {
        char err[1024];
        if (tt_gnuplot(f->root, "one.gp", "one.png", err, sizeof err) != 0) fail_msg("%s", err);
        char *one_png = in_root(f, "one.png"), *two_png = in_root(f, "two.png");
        if (tt_gnuplot(NULL, two_gp, two_png, err, sizeof err) != 0) fail_msg("%s", err);
        tu_expect_png(one_png);
        tu_expect_png(two_png);
        free(one_png), free(two_png);
        expect_no_temporaries(f->root);
    }
    free(tsv), free(one_gp), free(two_gp);
}

/* No gnuplot on PATH: 1, nothing written. A script gnuplot refuses: -1 with its message in one
 * line naming the script's line, and no picture or temporary left. */
static void test_gnuplot_missing_or_failing(void **state)
{
    fixture *f = *state;
    char *gp = in_root(f, "bad.gp"), *png = in_root(f, "bad.png"), err[1024] = "";
    tu_write_text(gp, "set terminal png\nset output out\nplot $nothing using 1:2\n");
    setenv("PATH", f->nobin, 1);
    assert_int_equal(tt_gnuplot(f->root, "bad.gp", "bad.png", err, sizeof err), 1);
    setenv("PATH", f->path, 1);
    assert_false(tu_exists(png));
    if (!tu_on_path("gnuplot")) {
        print_message("  skipped a failing gnuplot: no gnuplot on PATH\n");
    } else {
        assert_int_equal(tt_gnuplot(f->root, "bad.gp", "bad.png", err, sizeof err), -1);
        char *want = tt_xasprintf("gnuplot %s failed: ", gp);
        if (strncmp(err, want, strlen(want)) || !strstr(err, "line 3:") || strchr(err, '\n'))
            fail_msg("not one line naming the script's line: %s", err);
        print_message("  %s\n", err);
        assert_false(tu_exists(png));
        free(want);
    }
    expect_no_temporaries(f->root);
    free(gp), free(png);
}

/* --- tt-train ---------------------------------------------------------------------------------- */

/* A small tensorized model on a corpus of 20 words, 12 steps, validating every 5 and at the end. */
static char *write_run_spec(const fixture *f)
{
    tt_buf words = {0};
    for (int i = 0; i < 200; i++)
        for (int j = 0; j < 10; j++) tt_buf_printf(&words, "w%d%c", (i * 7 + j * 3) % 20, j == 9 ? '\n' : ' ');
    char *corpus = in_root(f, "words.txt"), *spec = in_root(f, "spec.yaml");
    tu_write_file(corpus, words.data, words.len);
    char *text = tt_xasprintf("model:\n  kind: tensorized\n  vocab: data\n  d_model: 32\n  layers: 2\n"
                              "  rank: 8\n  cores: 2\n  seq_len: 16\n  d_inner: 64\n"
                              "train:\n  batch: 8\n  steps: 12\n  optimizer: {lr: 5.0e-3}\n"
                              "  eval_interval: 5\n"
                              "data:\n  train: %s\n  valid: %s\n", corpus, corpus);
    tu_write_text(spec, text);
    tt_buf_free(&words);
    free(corpus), free(text);
    return spec;
}

/* tt-train SPEC --device cpu --checkpoint-dir DIR and the arguments after, with gnuplot's folder
 * on PATH or not; exit 0 expected. */
static void train(const fixture *f, tu_proc *p, bool gnuplot, const char *dir, const char *more,
                  const char *spec)
{
    const char *const argv[] = {TT_TRAIN_BIN, spec, "--device", "cpu", "--checkpoint-dir", dir, more,
                                NULL};
    const char *const env[] = {f->env[0], gnuplot ? NULL : f->env[1], NULL};
    tu_proc_start(p, argv, env);
    tu_proc_wait(p, TIMEOUT);
    tu_expect_exit(p, 0, "tt-train on a small corpus");
}

/* curve.tsv after 12 steps: a row per step, a validation's after its step's, nothing else. */
static void expect_rows(const char *tsv)
{
    char *text = tu_read_file(tsv, NULL);
    const char *line = strchr(text, '\n') + 1;
    for (long step = 1; step <= 12; step++) {
        const bool valid = step == 5 || step == 10 || step == 12;
        for (int k = 0; k <= valid; k++) {
            char want[32];
            snprintf(want, sizeof want, k ? "%ld\t\t" : "%ld\t", step);
            if (strncmp(line, want, strlen(want)) || (!k && line[strlen(want)] == '\t'))
                fail_msg("%s: step %ld's %s row is not where it should be:\n%s", tsv, step,
                         k ? "validation" : "loss", text);
            line = strchr(line, '\n') + 1;
        }
    }
    if (*line) fail_msg("%s: rows after the run's:\n%s", tsv, text);
    free(text);
}

/* A run draws curve.png beside its checkpoints (with gnuplot on PATH); a run stopped at step 7
 * whose curve.tsv then got rows past its checkpoint (as a kill leaves them), resumed, ends with
 * the uninterrupted run's curve.tsv, byte for byte. Without gnuplot, one note a run, none with
 * -q, and no picture. */
static void test_train_draws_its_curve(void **state)
{
    fixture *f = *state;
    char *spec = write_run_spec(f), *whole = in_root(f, "whole"), *cut = in_root(f, "cut");
    char *tsv = in_root(f, "whole/curve.tsv"), *cut_tsv = in_root(f, "cut/curve.tsv");
    char *png = in_root(f, "whole/curve.png"), *none = in_root(f, "none");
    const bool have = tu_on_path("gnuplot");
    tu_proc p;
    train(f, &p, true, whole, "-q", spec);
    tu_proc_free(&p);
    expect_rows(tsv);
    if (have) tu_expect_png(png);
    else print_message("  skipped the check of curve.png: no gnuplot on PATH\n");

    train(f, &p, true, cut, "--stop-after=7", spec);
    if (have && strstr(p.out, "note:")) fail_msg("a note with gnuplot on PATH:\n%s", p.out);
    tu_proc_free(&p);
    FILE *a = fopen(cut_tsv, "a");
    assert_non_null(a);
    fputs("8\t9.5\t\n10\t\t999\n11\t2.", a);
    fclose(a);
    train(f, &p, true, cut, "--resume", spec);
    tu_proc_free(&p);
    char *x = tu_read_file(tsv, NULL), *y = tu_read_file(cut_tsv, NULL);
    assert_string_equal(y, x);
    free(x), free(y);

    train(f, &p, false, none, NULL, spec);
    const char *note = "note: gnuplot not found: no curve.png\n", *at = strstr(p.out, note);
    if (!at || strstr(at + 1, note) || (at != p.out && at[-1] != '\n'))
        fail_msg("not one line '%s' in:\n%s", note, p.out);
    tu_proc_free(&p);
    char *none_png = in_root(f, "none/curve.png");
    assert_false(tu_exists(none_png));
    train(f, &p, false, none, "-q", spec);
    if (strstr(p.out, "note:")) fail_msg("a note with -q:\n%s", p.out);
    tu_proc_free(&p);
    expect_no_temporaries(whole);
    free(spec), free(whole), free(cut), free(tsv), free(cut_tsv), free(png), free(none);
    free(none_png);
}

#define IN_OWN_FOLDER(test) cmocka_unit_test_setup_teardown(test, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        IN_OWN_FOLDER(test_resume_keeps_rows_up_to_its_step),
        IN_OWN_FOLDER(test_script),
        IN_OWN_FOLDER(test_gnuplot_missing_or_failing),
        IN_OWN_FOLDER(test_train_draws_its_curve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
