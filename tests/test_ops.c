/* The op table (gen/ops.h) against what uses it, on the CPU: every op the plans of the shipped
 * specs and of spec variants covering every path (fp32 and bf16, causal or not, position key,
 * Transformer-XL, the adaptive softmax and embedding) hold is described, with the template the
 * plan built it from; every described op is in some plan (no dead lines); and every op names a
 * check that exists: a unit of gpu/unit.c that runs it, or a GPU test function that is
 * registered with CMocka. A new kernel without a check fails here, before any GPU. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ops.h"
#include "plan.h"
#include "spec.h"
#include "testutil.h"
#include "unit.h"
#include "util.h"

/* Variants that reach the paths the shipped specs do not (tiny, d_model 64; the last, the
 * materialized attention's tiles of positions, which no shipped spec's cost model takes). */
static const char *const variants[] = {
    "model: {kind: tensorized, vocab: 100, d_model: 64, layers: 1, rank: 8, cores: 2, seq_len: 16,"
    " d_inner: 32, causal: true, position: key}\ntrain: {batch: 4, precision: fp32}\n",
    "model: {kind: tensorized, vocab: 100, d_model: 64, layers: 1, rank: 8, cores: 2, seq_len: 16,"
    " d_inner: 32, causal: false, position: none}\ntrain: {batch: 4, precision: bf16}\n",
    "model: {kind: tensorized, vocab: 300, d_model: 64, layers: 1, rank: 8, cores: 2, seq_len: 16,"
    " d_inner: 32, causal: true, position: key, adaptive: {cutoffs: [50, 120], div_val: 2}}\n"
    "train: {batch: 4, precision: bf16}\n",
    "model: {kind: transformer-xl, vocab: 300, d_model: 64, layers: 1, n_head: 2, d_head: 32,"
    " d_inner: 32, seq_len: 16, mem_len: 16, adaptive: {cutoffs: [50, 120], div_val: 2}}\n"
    "train: {batch: 4, precision: fp32}\n",
    "model: {kind: tensorized, vocab: 100, d_model: 64, layers: 1, rank: 8, cores: 2, seq_len: 16,"
    " d_inner: 32, causal: true}\ntrain: {batch: 4, precision: bf16}\n"
    "kernels: {attention: materialized, attention_tiles: 3}\n",
    /* materialized, position: key: dT through mla_mat_grads (mla_bwd_q reads it for none) */
    "model: {kind: tensorized, vocab: 100, d_model: 64, layers: 1, rank: 8, cores: 2, seq_len: 16,"
    " d_inner: 32, causal: true, position: key}\ntrain: {batch: 4, precision: bf16}\n"
    "kernels: {attention: materialized}\n",
};

typedef struct {
    int seen[256];
} coverage;

static void check_plan(const tt_plan *p, const char *what, coverage *cov)
{
    for (int i = 0; i < p->n; i++) {
        const tt_kernel *k = &p->kernels[i];
        const tt_op *d = tt_op_find(k->op);
        if (!d) fail_msg("%s: the plan holds %s, which gen/ops.c does not describe", what, k->op);
        const int tc = d->templates[1] && !strcmp(d->templates[1], k->template_file);
        if (!tc && (!d->templates[0] || strcmp(d->templates[0], k->template_file)))
            fail_msg("%s: %s built from templates/%s, which its description does not name", what,
                     k->op, k->template_file);
        cov->seen[d - tt_ops] = 1;
    }
}

static void plan_text(const char *text, const char *name, coverage *cov)
{
    tt_spec s;
    tt_plan p;
    char err[1024];
    if (tt_spec_parse(text, strlen(text), name, ".", &s, err, sizeof err) != 0) fail_msg("%s", err);
    if (tt_plan_build(&s, "sm_90", &p, err, sizeof err) != 0) fail_msg("%s: %s", name, err);
    check_plan(&p, name, cov);
    tt_plan_free(&p);
    tt_spec_free(&s);
}

static void test_every_planned_op_described(void **state)
{
    (void)state;
    coverage cov = {{0}};
    TT_ASSERT(tt_n_ops <= (int)(sizeof cov.seen / sizeof *cov.seen));
    glob_t g;
    assert_int_equal(glob(TT_SOURCE_DIR "/specs/*.yaml", 0, NULL, &g), 0);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        tt_spec s;
        tt_plan p;
        char err[1024];
        if (tt_spec_load(g.gl_pathv[i], &s, err, sizeof err) != 0) fail_msg("%s", err);
        if (tt_plan_build(&s, "sm_90", &p, err, sizeof err) != 0) fail_msg("%s: %s", g.gl_pathv[i], err);
        check_plan(&p, g.gl_pathv[i], &cov);
        tt_plan_free(&p);
        tt_spec_free(&s);
    }
    globfree(&g);
    for (size_t i = 0; i < sizeof variants / sizeof *variants; i++) {
        char name[32];
        snprintf(name, sizeof name, "variant %zu", i);
        plan_text(variants[i], name, &cov);
    }
    tt_plan marks; /* tt-bench --profile's own plan */
    assert_int_equal(tt_plan_profile_marks("sm_90", &marks), 0);
    check_plan(&marks, "the profile's marks", &cov);
    tt_plan_free(&marks);
    for (int i = 0; i < tt_n_ops; i++)
        if (!cov.seen[i]) fail_msg("gen/ops.c describes %s, which no plan holds", tt_ops[i].op);
}

/* Whether the source file holds `static void fn(void **state)` and registers it with CMocka. */
static int registered_test(const char *file, const char *fn)
{
    char *path = tt_xasprintf("%s/%s", TT_SOURCE_DIR, file), *text, err[256];
    size_t len;
    if (tt_read_file(path, 0, &text, &len, err, sizeof err) != 0) fail_msg("%s", err);
    char *def = tt_xasprintf("static void %s(void **state)", fn);
    char *reg = tt_xasprintf("cmocka_unit_test(%s)", fn);
    const int ok = strstr(text, def) && strstr(text, reg);
    free(path), free(text), free(def), free(reg);
    return ok;
}

static void test_every_op_checked(void **state)
{
    (void)state;
    for (int i = 0; i < tt_n_ops; i++) {
        const tt_op *d = &tt_ops[i];
        if (!strcmp(d->check, "unit")) {
            if (!tt_unit_of_op(d->op))
                fail_msg("%s: checked by a unit, says gen/ops.c, but no unit of gpu/unit.c runs it",
                         d->op);
            continue;
        }
        const char *colon = strchr(d->check, ':');
        if (!colon) fail_msg("%s: its check '%s' is neither \"unit\" nor FILE:FUNCTION", d->op, d->check);
        char file[128];
        snprintf(file, sizeof file, "%.*s", (int)(colon - d->check), d->check);
        if (!registered_test(file, colon + 1))
            fail_msg("%s: checked by %s, says gen/ops.c, but %s has no such registered test", d->op,
                     d->check, file);
        if (tt_unit_of_op(d->op))
            fail_msg("%s: a unit runs it, so gen/ops.c should say \"unit\", not %s", d->op, d->check);
    }
    /* and the units run described ops only */
    for (int u = 0; u < tt_n_units; u++)
        for (const char *const *op = tt_units[u].ops; *op; op++)
            if (!tt_op_find(*op)) fail_msg("unit %s runs %s, which gen/ops.c does not describe",
                                           tt_units[u].name, *op);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_planned_op_described),
        cmocka_unit_test(test_every_op_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
