/* The training engine's pipelined steps (train/engine.h: tt_engine_submit, tt_engine_result) on
 * the CPU, whose steps run as they are submitted with the GPU's semantics, so that tt-train's
 * loop over them is the same on both: steps submitted ahead give the bits of tt_engine_train_step
 * one at a time; a step made non-finite (its label smoothing NaN) is skipped and named by its
 * first non-finite gradient, whichever step was submitted after it; a step submitted with halt
 * after it leaves the weights and moments as the step before it left them. The GPU's own are in
 * test_gpu_model (test_pipelined) and test_train_cli on the GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine.h"
#include "model.h"
#include "spec.h"
#include "testutil.h"
#include "util.h"

enum { BATCH = 2, STEPS = 5 };

typedef struct {
    tt_spec s;
    tt_layout l;
    tt_real *w0;
} setup;

static void open_setup(setup *u)
{
    char err[512];
    const char *text = "model:\n  kind: tensorized\n  vocab: 29\n  d_model: 16\n  layers: 2\n"
                       "  rank: 4\n  cores: 2\n  seq_len: 5\n  d_inner: 24\n  dropout: 0.1\n"
                       "  causal: true\ntrain:\n  batch: 2\n  steps: 5\n  clip: 0.25\n";
    if (tt_spec_parse(text, strlen(text), "engine.yaml", ".", &u->s, err, sizeof err) != 0)
        fail_msg("%s", err);
    if (tt_layout_build(&u->s.model, u->s.model.vocab, &u->l, err, sizeof err) != 0)
        fail_msg("%s", err);
    u->w0 = tt_xmalloc(u->l.n_floats * sizeof *u->w0);
    tt_layout_init(&u->l, u->w0, 3);
}

static void close_setup(setup *u)
{
    free(u->w0);
    tt_layout_free(&u->l);
    tt_spec_free(&u->s);
}

/* A run of `steps` steps from w0 (moments zero): step nan_step (0: none) with label smoothing
 * NaN; pipelined: step k + 1 submitted before step k's result, step nan_step + 1 with halt.
 * Each step's loss sum and norm, the name of the first non-finite gradient after step
 * nan_step's result (bad, "" for none), and the weights and moments at the end (3 n_floats). */
typedef struct {
    double loss[STEPS], norm[STEPS];
    char bad[128];
    float *wmv;
} run_out;

static void run(const setup *u, int steps, int nan_step, bool pipelined, bool halt, run_out *out)
{
    char err[512], desc[128];
    tt_engine *e;
    if (!pipelined) setenv("TT_PIPELINE", "0", 1);
    const int rc = tt_engine_open(&e, "cpu", &u->s, &u->l, BATCH, desc, sizeof desc, err, sizeof err);
    unsetenv("TT_PIPELINE");
    if (rc != 0) fail_msg("%s", err);
    assert_int_equal(tt_engine_pipelined(e), pipelined);
    const size_t nf = u->l.n_floats;
    memcpy(tt_engine_host(e, 0), u->w0, nf * sizeof *u->w0);
    const int rows = BATCH * u->s.model.seq_len;
    int32_t in[BATCH * 5], tg[BATCH * 5];
    out->bad[0] = 0;
    for (int k = 1; k <= steps + pipelined; k++) {
        if (k <= steps) {
            for (int i = 0; i < rows; i++)
                in[i] = (k * 7 + i * 3) % 29, tg[i] = (k * 11 + i * 5 + 1) % 29;
            const tt_lm_opts o = {.train = true, .seed = 1, .step = (uint64_t)k,
                                  .label_smoothing = k == nan_step ? NAN : 0.f};
            if (pipelined) {
                tt_engine_submit(e, in, tg, &o, k, halt && k == nan_step + 1);
            } else {
                tt_lm_result r;
                out->norm[k - 1] = tt_engine_train_step(e, in, tg, &o, k, false, &r);
                out->loss[k - 1] = r.loss_sum;
                if (k == nan_step) tt_engine_nonfinite(e, out->bad, sizeof out->bad);
            }
        }
        if (pipelined && k > 1) {
            tt_lm_result r;
            out->norm[k - 2] = tt_engine_result(e, &r);
            out->loss[k - 2] = r.loss_sum;
            if (k - 1 == nan_step) tt_engine_nonfinite(e, out->bad, sizeof out->bad);
        }
    }
    out->wmv = tt_xmalloc(3 * nf * sizeof *out->wmv);
    for (int i = 0; i < 3; i++) memcpy(out->wmv + i * nf, tt_engine_host(e, i), nf * sizeof(float));
    tt_engine_close(e);
}

static void test_pipelined_cpu(void **state)
{
    (void)state;
    setup u;
    open_setup(&u);
    const size_t bytes = 3 * u.l.n_floats * sizeof(float);
    for (int nan = 0; nan < 2; nan++) {
        run_out a, b;
        run(&u, STEPS, nan ? 3 : 0, false, false, &a);
        run(&u, STEPS, nan ? 3 : 0, true, false, &b);
        for (int k = 0; k < STEPS; k++) {
            if (memcmp(&a.loss[k], &b.loss[k], 8) || memcmp(&a.norm[k], &b.norm[k], 8))
                fail_msg("step %d: loss %.9g / %.9g, norm %.9g / %.9g (one at a time / pipelined)",
                         k + 1, a.loss[k], b.loss[k], a.norm[k], b.norm[k]);
            if (!!isfinite(a.loss[k]) != (!nan || k != 2)) fail_msg("step %d: loss %g", k + 1, a.loss[k]);
        }
        if (memcmp(a.wmv, b.wmv, bytes)) fail_msg("the weights or moments differ pipelined");
        print_message("  %s: %d steps pipelined as one at a time%s%s\n",
                      nan ? "step 3 NaN" : "no NaN", STEPS, nan ? "; first non-finite gradient: " : "",
                      b.bad);
        if (nan && (!a.bad[0] || strcmp(a.bad, b.bad)))
            fail_msg("the first non-finite gradient: '%s', pipelined '%s'", a.bad, b.bad);
        free(a.wmv), free(b.wmv);
    }
    /* step 4 halted after the NaN step 3: step 2's weights and moments */
    run_out two, halted;
    run(&u, 2, 0, false, false, &two);
    run(&u, 4, 3, true, true, &halted);
    if (memcmp(two.wmv, halted.wmv, bytes))
        fail_msg("a halted step after a NaN step moved the weights or moments");
    if (!memcmp(two.wmv, u.w0, u.l.n_floats * sizeof(float))) fail_msg("the weights did not move");
    print_message("  step 4 halted after the NaN step 3 left step 2's weights and moments\n");
    free(two.wmv), free(halted.wmv);
    close_setup(&u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_pipelined_cpu)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
