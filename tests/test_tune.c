/* Kernel autotuning without a GPU: the tunables the templates declare, that the plan honors each
 * of their values (or refuses it with a reason), that every variant of the shipped specs'
 * attention compiles for sm_90, the tuning cache's file, and that a later plan takes the variant
 * the cache holds for its card and signature, and only that one. The timing itself needs a GPU:
 * `ttgen --tune` in bench/gpu-check.sh. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "autotune.h"
#include "cache.h"
#include "compile.h"
#include "plan.h"
#include "spec.h"
#include "templates.h"
#include "testutil.h"
#include "tune.h"
#include "util.h"

#define ARCH "sm_90"

static void load(const char *rel, tt_spec *s)
{
    char err[1024], *path = tt_xasprintf("%s/%s", TT_SOURCE_DIR, rel);
    if (tt_spec_load(path, s, err, sizeof err) != 0) fail_msg("%s", err);
    free(path);
}

static void parse(const char *text, tt_spec *s)
{
    char err[1024];
    if (tt_spec_parse(text, strlen(text), "test", ".", s, err, sizeof err) != 0) fail_msg("%s", err);
}

static const tt_kernel *kernel_of(const tt_plan *p, const char *op)
{
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->kernels[i].op, op)) return &p->kernels[i];
    return NULL;
}

static void tunables(tt_tunable **tu, int *n)
{
    char err[512];
    if (tt_tunables_load(NULL, tu, n, err, sizeof err) != 0) fail_msg("%s", err);
}

/* The declarations: both attention templates declare some, each op's has a harness, and each
 * value list is distinct and sorted (what a reader of the template expects). */
static void test_declarations(void **state)
{
    (void)state;
    tt_tunable *tu;
    int n, tc = 0, simt = 0;
    tunables(&tu, &n);
    for (int i = 0; i < n; i++) {
        print_message("  templates/%-12s %-12s %-3s", tu[i].template_file, tu[i].op, tu[i].key);
        for (int v = 0; v < tu[i].n_values; v++) print_message(" %ld", tu[i].values[v]);
        print_message("\n");
        if (!tt_tune_unit(tu[i].op)) fail_msg("%s: no harness times it", tu[i].op);
        for (int v = 1; v < tu[i].n_values; v++) assert_true(tu[i].values[v] > tu[i].values[v - 1]);
        tc += !strcmp(tu[i].template_file, "mla_tc.cu");
        simt += !strcmp(tu[i].template_file, "mla.cu");
    }
    assert_true(tc >= 5);
    assert_true(simt >= 3);
    free(tu);
}

/* A malformed declaration is an error with the template's name, not a silent skip. */
static void test_bad_declaration(void **state)
{
    (void)state;
    char dir[96], err[512];
    tu_temp_dir("tune-decl", dir, sizeof dir);
    /* every template from the build, then one with a bad line */
    for (const tt_template *t = tt_embedded_templates; t->name; t++) {
        char *path = tt_xasprintf("%s/%s", dir, t->name);
        tu_write_file(path, t->text, t->len);
        free(path);
    }
    static const char *const bad[] = {"// ttgen: tunable mla_fwd G 1\n",
                                      "// ttgen: tunable mla_fwd g 1 2\n",
                                      "// ttgen: tunable mla_fwd G 1 x\n",
                                      "// ttgen: tunable mla_fwd\n"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *path = tt_xasprintf("%s/core.cu", dir);
        tu_write_text(path, bad[i]);
        free(path);
        tt_tunable *tu;
        int n;
        assert_int_equal(tt_tunables_load(dir, &tu, &n, err, sizeof err), -1);
        print_message("  %s", err);
        print_message("\n");
        assert_non_null(strstr(err, "core.cu"));
    }
    tu_rm_rf(dir);
}

/* Every declared value of every tunable of spec's plan, and the heuristic's own when it is not
 * among them (as ttgen --tune times it), one tunable at a time over the heuristic's plan: visit
 * gets the tunable, the value, the plan it gave (NULL when refused, err saying why) and the
 * heuristic's kernel of that op. */
typedef void (*value_visit)(const tt_tunable *t, long value, const tt_plan *p, const char *err,
                            const tt_kernel *heuristic, void *ctx);

static void each_value(const tt_spec *s, value_visit visit, void *ctx)
{
    tt_tunable *tu;
    int nt;
    tunables(&tu, &nt);
    tt_plan base;
    char err[512];
    if (tt_plan_build(s, ARCH, &base, err, sizeof err) != 0) fail_msg("%s", err);
    for (int i = 0; i < nt; i++) {
        const tt_kernel *k = kernel_of(&base, tu[i].op);
        if (!k || strcmp(k->template_file, tu[i].template_file)) continue;
        const long own = tt_kernel_const(k, tu[i].key, -1);
        int declared = 0;
        for (int v = 0; v < tu[i].n_values; v++) declared |= tu[i].values[v] == own;
        for (int v = 0; v <= tu[i].n_values; v++) {
            if (v == tu[i].n_values && declared) break;
            const long value = v < tu[i].n_values ? tu[i].values[v] : own;
            tt_tuning t = {0};
            tt_tuning_set(&t, tu[i].op, tu[i].key, value);
            tt_plan p;
            const int ok = tt_plan_build_tuned(s, ARCH, &t, &p, err, sizeof err) == 0;
            visit(&tu[i], value, ok ? &p : NULL, err, k, ctx);
            if (ok) tt_plan_free(&p);
            tt_tuning_free(&t);
        }
    }
    tt_plan_free(&base);
    free(tu);
}

typedef struct {
    const tt_spec *s;
    int taken, refused;
} value_counts;

/* The plan either takes a value (the kernel carries it) or refuses it with a reason naming the
 * op; the heuristic's own value, set explicitly, is taken and gives the heuristic's kernel. */
static void check_value(const tt_tunable *t, long value, const tt_plan *p, const char *err,
                        const tt_kernel *heuristic, void *ctx)
{
    value_counts *c = ctx;
    if (!p && tt_kernel_const(heuristic, t->key, -1) == value) fail_msg("%s", err);
    if (!p) {
        assert_non_null(strstr(err, t->op));
        c->refused++;
        return;
    }
    const tt_kernel *pk = kernel_of(p, t->op);
    assert_non_null(pk);
    if (tt_kernel_const(pk, t->key, -1) != value)
        fail_msg("%s: %s %s=%ld not in the plan's kernel %s", c->s->path, t->op, t->key, value,
                 pk->name);
    c->taken++;
    if (tt_kernel_const(heuristic, t->key, -1) == value)
        assert_true(tt_kernel_same(pk, heuristic));
}

static void check_values(const tt_spec *s, int *taken, int *refused)
{
    value_counts c = {s, 0, 0};
    each_value(s, check_value, &c);
    *taken = c.taken, *refused = c.refused;
}

static void test_plan_honors_values(void **state)
{
    (void)state;
    static const char *const specs[] = {"specs/wt103.yaml", "specs/ptb.yaml", "specs/tiny.yaml"};
    for (size_t i = 0; i < sizeof specs / sizeof *specs; i++) {
        tt_spec s;
        load(specs[i], &s);
        int taken = 0, refused = 0;
        check_values(&s, &taken, &refused);
        print_message("  %-18s %d values taken, %d refused\n", specs[i], taken, refused);
        assert_true(taken > 0);
        tt_spec_free(&s);
    }
    /* fp32 (mla.cu's tunables) and shapes that refuse some values: TD wider than D 48 */
    tt_spec s;
    parse("model: {kind: tensorized, vocab: 50, d_model: 48, layers: 1, rank: 8, cores: 2, "
          "seq_len: 24, d_inner: 32}\ntrain: {batch: 3, precision: fp32}\n", &s);
    int taken = 0, refused = 0;
    check_values(&s, &taken, &refused);
    print_message("  %-18s %d values taken, %d refused\n", "fp32, D 48", taken, refused);
    assert_true(taken > 0);
    assert_true(refused > 0);
    tt_spec_free(&s);
}

static const char *variant_of(const tt_kernel *k, const tt_tunable *tu, int nt)
{
    static char v[96];
    tt_kernel_variant(k, tu, nt, v, sizeof v);
    return v;
}

/* The variant's kernel of the op into the plan ctx, once. */
static void collect_kernel(const tt_tunable *t, long value, const tt_plan *p, const char *err,
                           const tt_kernel *heuristic, void *ctx)
{
    (void)value, (void)err, (void)heuristic;
    tt_plan *all = ctx;
    if (!p) return;
    const tt_kernel *pk = kernel_of(p, t->op);
    for (int j = 0; j < all->n; j++)
        if (tt_kernel_same(&all->kernels[j], pk)) return;
    all->kernels = tt_xrealloc(all->kernels, (size_t)(all->n + 1) * sizeof *all->kernels);
    all->kernels[all->n++] = *pk;
}

/* Each variant of a spec's tunable kernels, one tunable at a time, compiles for sm_90. */
static void compile_variants(const char *rel)
{
    tt_spec s;
    load(rel, &s);
    tt_tunable *tu;
    int nt;
    tunables(&tu, &nt);
    char dir[96], err[512];
    tu_temp_dir("tune-compile", dir, sizeof dir);
    tt_cache cache;
    if (tt_cache_open(&cache, dir, err, sizeof err) != 0) fail_msg("%s", err);
    tt_plan all = {0};
    snprintf(all.arch, sizeof all.arch, ARCH);
    /* one tunable at a time over the heuristic (the product is what --tune walks on the GPU) */
    each_value(&s, collect_kernel, &all);
    char *failed = tt_xasprintf("%s/failed", dir);
    const tt_build_opts o = {.arch = ARCH, .cache = &cache, .failure_dir = failed, .jobs = 2};
    tt_build *b;
    if (tt_builds_prepare(&all, &o, &b, err, sizeof err) != 0) fail_msg("%s", err);
    const double t0 = tt_now_seconds();
    const int bad = tt_builds_run(b, all.n, &o);
    for (int i = 0; i < all.n; i++) {
        if (b[i].error) print_error("%s\n", b[i].error);
        else
            print_message("  %-58s %-16s %3d registers, %d B spilled\n", b[i].kernel->name,
                          variant_of(b[i].kernel, tu, nt), b[i].registers, b[i].spill_bytes);
    }
    print_message("  %s: %d variants compiled in %.1f s\n", rel, all.n, tt_now_seconds() - t0);
    assert_int_equal(bad, 0);
    assert_true(all.n >= 10);
    tt_builds_free(b, all.n);
    tt_plan_free(&all);
    tt_cache_close(&cache);
    free(failed);
    free(tu);
    tu_rm_rf(dir);
    tt_spec_free(&s);
}

/* What ttgen --tune would build: wt103's (the attention, LayerNorm, the FFN, the loss, Adam) and
 * txl-wt103-base's (its softmax between the products). */
static void test_variants_compile(void **state)
{
    (void)state;
    compile_variants("specs/wt103.yaml");
    compile_variants("specs/txl-wt103-base.yaml");
}

static tt_tune_entry entry(const char *card, const char *sig, const char *variant, double best)
{
    tt_tune_entry e = {0};
    snprintf(e.card, sizeof e.card, "%s", card);
    snprintf(e.signature, sizeof e.signature, "%s", sig);
    snprintf(e.variant, sizeof e.variant, "%s", variant);
    snprintf(e.default_variant, sizeof e.default_variant, "G=4 TD=128");
    e.best_ms = best;
    e.default_ms = 0.09;
    snprintf(e.unit, sizeof e.unit, "tt_mla_fwd");
    snprintf(e.date, sizeof e.date, "2026-11-26");
    return e;
}

/* The file: entries stored, replaced per (card, signature), read back; a bad line is an error. */
static void test_cache_file(void **state)
{
    (void)state;
    char dir[96], err[512];
    tu_temp_dir("tune-file", dir, sizeof dir);
    char *path = tt_tuning_path(dir);
    tt_tune_entry *e;
    int n;
    assert_int_equal(tt_tuning_load(path, &e, &n, err, sizeof err), 0); /* none yet */
    assert_int_equal(n, 0);
    tt_tune_entry a = entry("NVIDIA H100 80GB HBM3", "mla_fwd|x", "G=2 TD=64", 0.08);
    tt_tune_entry b = entry("NVIDIA H200", "mla_fwd|x", "G=1 TD=32", 0.07);
    tt_tune_entry a2 = entry("NVIDIA H100 80GB HBM3", "mla_fwd|x", "G=4 TD=64", 0.075);
    assert_int_equal(tt_tuning_store(path, &a, err, sizeof err), 0);
    assert_int_equal(tt_tuning_store(path, &b, err, sizeof err), 0);
    assert_int_equal(tt_tuning_store(path, &a2, err, sizeof err), 0);
    assert_int_equal(tt_tuning_load(path, &e, &n, err, sizeof err), 0);
    assert_int_equal(n, 2);
    assert_string_equal(e[0].card, "NVIDIA H200");
    assert_string_equal(e[1].variant, "G=4 TD=64");
    assert_true(e[1].best_ms == 0.075 && e[1].default_ms == 0.09);
    assert_string_equal(e[1].unit, "tt_mla_fwd");
    free(e);
    tu_write_text(path, "NVIDIA H200\tsig\tG=2\tG=4\tfast\t0.09\ttt_mla_fwd\t2026-11-26\n");
    assert_int_equal(tt_tuning_load(path, &e, &n, err, sizeof err), -1);
    print_message("  %s\n", err);
    assert_non_null(strstr(err, ":1:"));
    free(path);
    tu_rm_rf(dir);
}

/* Four processes storing at once (four ttgen --tune on one cache): every entry kept. */
static void test_concurrent_store(void **state)
{
    (void)state;
    char dir[96], err[512];
    tu_temp_dir("tune-lock", dir, sizeof dir);
    char *path = tt_tuning_path(dir);
    pid_t kids[4];
    for (int k = 0; k < 4; k++) {
        kids[k] = fork();
        assert_true(kids[k] >= 0);
        if (kids[k] == 0) {
            for (int i = 0; i < 25; i++) {
                char sig[32];
                snprintf(sig, sizeof sig, "op|%d|%d", k, i);
                tt_tune_entry e = entry("NVIDIA H200", sig, "G=2 TD=64", 0.08);
                if (tt_tuning_store(path, &e, err, sizeof err) != 0) _exit(1);
            }
            free(path); /* (the child's copy: valgrind follows children) */
            _exit(0);
        }
    }
    for (int k = 0; k < 4; k++) {
        int st;
        assert_int_equal(waitpid(kids[k], &st, 0), kids[k]);
        assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    }
    tt_tune_entry *e;
    int n;
    assert_int_equal(tt_tuning_load(path, &e, &n, err, sizeof err), 0);
    print_message("  %d entries from 4 writers of 25\n", n);
    assert_int_equal(n, 100);
    free(e);
    free(path);
    tu_rm_rf(dir);
}

/* A spec's heuristic plan (base) and an empty tuning cache (path in dir), with the signature of
 * one op's kernel. */
typedef struct {
    tt_tunable *tu;
    int nt;
    char dir[96], sig[320];
    char *path;
    tt_plan base;
} tuning_case;

/* Opens c for op's kernel of s; returns that kernel of the heuristic plan. */
static const tt_kernel *tuning_open(tuning_case *c, const char *tag, const tt_spec *s, const char *op)
{
    char err[512];
    tunables(&c->tu, &c->nt);
    tu_temp_dir(tag, c->dir, sizeof c->dir);
    c->path = tt_tuning_path(c->dir);
    if (tt_plan_build(s, ARCH, &c->base, err, sizeof err) != 0) fail_msg("%s", err);
    const tt_kernel *k = kernel_of(&c->base, op);
    if (tt_kernel_signature(k, s, ARCH, c->tu, c->nt, c->sig, sizeof c->sig, err, sizeof err) != 0)
        fail_msg("%s", err);
    return k;
}

/* The plan of s for card once the cache holds variant as the tuned one of c's kernel. */
static void plan_tuned_as(const tuning_case *c, const tt_spec *s, const char *card,
                          const char *variant, tt_plan *p)
{
    char err[512];
    tt_tune_entry e = entry(card, c->sig, variant, 0.08);
    assert_int_equal(tt_tuning_store(c->path, &e, err, sizeof err), 0);
    assert_int_equal(tt_plan_build_for_card(s, ARCH, card, c->path, p, err, sizeof err), 0);
}

static void tuning_close(tuning_case *c)
{
    tt_plan_free(&c->base);
    free(c->path);
    free(c->tu);
    tu_rm_rf(c->dir);
}

/* A later plan takes the cached variant for its card and signature; other cards, TT_TUNE=0, an
 * edited signature, and a variant the plan refuses all leave the heuristic, each said so. */
static void test_plan_for_card(void **state)
{
    (void)state;
    tt_spec s;
    load("specs/wt103.yaml", &s);
    tuning_case c;
    const tt_kernel *k = tuning_open(&c, "tune-card", &s, "mla_fwd");
    const char *sig = c.sig, *path = c.path;
    char err[512];
    print_message("  signature %s\n", sig);
    assert_non_null(strstr(sig, "mla_fwd|bf16|sm_90|batch=60|N=80,R=40,D=256"));
    assert_null(strstr(sig, "G=")); /* the tunables are not part of it */
    const char *card = "NVIDIA H100 80GB HBM3";
    tt_plan p;
    plan_tuned_as(&c, &s, card, "G=2 TD=64", &p);
    const tt_kernel *pk = kernel_of(&p, "mla_fwd");
    print_message("  %s: %s\n", pk->name, pk->variant);
    assert_int_equal(tt_kernel_const(pk, "G", 0), 2);
    assert_int_equal(tt_kernel_const(pk, "TD", 0), 64);
    assert_int_equal(tt_kernel_const(pk, "THREADS", 0), 64);
    assert_non_null(strstr(pk->variant, "tuned on NVIDIA H100 80GB HBM3"));
    assert_non_null(strstr(kernel_of(&p, "mla_bwd_wo")->variant, "heuristic"));
    tt_plan_free(&p);

    /* another card */
    assert_int_equal(tt_plan_build_for_card(&s, ARCH, "NVIDIA H200", path, &p, err, sizeof err), 0);
    assert_string_equal(kernel_of(&p, "mla_fwd")->name, k->name);
    assert_non_null(strstr(kernel_of(&p, "mla_fwd")->variant, "not tuned on NVIDIA H200"));
    tt_plan_free(&p);
    /* no card */
    assert_int_equal(tt_plan_build_for_card(&s, ARCH, NULL, path, &p, err, sizeof err), 0);
    assert_string_equal(kernel_of(&p, "mla_fwd")->name, k->name);
    tt_plan_free(&p);
    /* kernels.tune: false */
    s.kernels.tune = false;
    assert_int_equal(tt_plan_build_for_card(&s, ARCH, card, path, &p, err, sizeof err), 0);
    assert_string_equal(kernel_of(&p, "mla_fwd")->name, k->name);
    assert_non_null(strstr(kernel_of(&p, "mla_fwd")->variant, "kernels.tune: false"));
    tt_plan_free(&p);
    s.kernels.tune = true;
    /* TT_TUNE=0 */
    setenv("TT_TUNE", "0", 1);
    assert_int_equal(tt_plan_build_for_card(&s, ARCH, card, path, &p, err, sizeof err), 0);
    assert_string_equal(kernel_of(&p, "mla_fwd")->name, k->name);
    assert_non_null(strstr(kernel_of(&p, "mla_fwd")->variant, "TT_TUNE=0"));
    tt_plan_free(&p);
    unsetenv("TT_TUNE");
    /* another batch: another signature */
    tt_spec s2;
    load("specs/wt103.yaml", &s2);
    s2.train.batch = 32;
    tt_plan heuristic;
    if (tt_plan_build(&s2, ARCH, &heuristic, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(tt_plan_build_for_card(&s2, ARCH, card, path, &p, err, sizeof err), 0);
    assert_string_equal(kernel_of(&p, "mla_fwd")->name, kernel_of(&heuristic, "mla_fwd")->name);
    assert_non_null(strstr(kernel_of(&p, "mla_fwd")->variant, "not tuned on"));
    tt_plan_free(&p);
    tt_plan_free(&heuristic);
    tt_spec_free(&s2);
    /* a variant the plan refuses (TD wider than D): the heuristic, and why */
    plan_tuned_as(&c, &s, card, "G=2 TD=512", &p);
    assert_string_equal(kernel_of(&p, "mla_fwd")->name, k->name);
    print_message("  %s\n", kernel_of(&p, "mla_fwd")->variant);
    assert_non_null(strstr(kernel_of(&p, "mla_fwd")->variant, "no longer fits"));
    tt_plan_free(&p);
    /* nor a slab count other than two or three */
    plan_tuned_as(&c, &s, card, "G=4 TD=64 NS=4", &p);
    print_message("  %s\n", kernel_of(&p, "mla_fwd")->variant);
    assert_non_null(strstr(kernel_of(&p, "mla_fwd")->variant, "NS=4: 2 or 3 slabs"));
    assert_int_equal(tt_kernel_const(kernel_of(&p, "mla_fwd"), "NS", 0),
                     tt_kernel_const(kernel_of(&c.base, "mla_fwd"), "NS", 0));
    tt_plan_free(&p);

    tuning_close(&c);
    tt_spec_free(&s);
}

/* The kernels of p that carry the attention's strategy all start with want ("fused: ..."). */
static void assert_strategy(const tt_plan *p, const char *want)
{
    int n = 0;
    for (int i = 0; i < p->n; i++) {
        const char *st = p->kernels[i].strategy;
        if (!st[0]) continue;
        if (strncmp(st, want, strlen(want)) || st[strlen(want)] != ':')
            fail_msg("%s: strategy '%s', not %s", p->kernels[i].name, st, want);
        n++;
    }
    assert_true(n > 0);
}

/* The attention's strategy as a tuning sets it (attention MAT): the plan takes it under `auto`
 * where T fits, says it was timed, and ignores it where the spec fixes the strategy; its entry's
 * signature changes with the shapes and exists only where both strategies plan; a later plan
 * for that card takes the entry and shows both timings under the attention's kernels. */
static void test_strategy_tuned(void **state)
{
    (void)state;
    char err[512], sig[320], sig2[320];
    tt_spec s;
    load("specs/ptb.yaml", &s);
    s.model.seq_len = 80; /* where the cost model fuses (at ptb's N 32 it materializes) */
    tt_plan p;
    if (tt_plan_build(&s, ARCH, &p, err, sizeof err) != 0) fail_msg("%s", err);
    assert_strategy(&p, "fused"); /* the cost model's */
    tt_plan_free(&p);
    for (int mat = 0; mat <= 1; mat++) {
        tt_tuning t = {0};
        tt_tuning_set(&t, TT_STRATEGY_OP, TT_STRATEGY_KEY, mat);
        if (tt_plan_build_tuned(&s, ARCH, &t, &p, err, sizeof err) != 0) fail_msg("%s", err);
        assert_strategy(&p, mat ? "materialized" : "fused");
        for (int i = 0; i < p.n; i++)
            if (p.kernels[i].strategy[0]) assert_non_null(strstr(p.kernels[i].strategy, "auto: timed"));
        tt_plan_free(&p);
        /* a spec that fixes the strategy keeps it */
        s.kernels.attention = mat ? TT_ATTN_FUSED : TT_ATTN_MATERIALIZED;
        if (tt_plan_build_tuned(&s, ARCH, &t, &p, err, sizeof err) != 0) fail_msg("%s", err);
        assert_strategy(&p, mat ? "fused" : "materialized");
        tt_plan_free(&p);
        assert_int_equal(tt_strategy_signature(&s, ARCH, sig, sizeof sig, err, sizeof err), 0);
        assert_string_equal(sig, ""); /* nothing to choose */
        s.kernels.attention = TT_ATTN_AUTO;
        tt_tuning_free(&t);
    }
    assert_int_equal(tt_strategy_signature(&s, ARCH, sig, sizeof sig, err, sizeof err), 0);
    print_message("  signature %s\n", sig);
    assert_non_null(strstr(sig, "attention|bf16|sm_90|batch=32|N=80,R=40,D=256,H=2,L=3,F=2100"));
    s.train.batch = 33;
    assert_int_equal(tt_strategy_signature(&s, ARCH, sig2, sizeof sig2, err, sizeof err), 0);
    assert_string_not_equal(sig, sig2);
    s.train.batch = 32;
    s.model.rank = 24; /* the kernels' shapes, and so the hash of their signatures */
    assert_int_equal(tt_strategy_signature(&s, ARCH, sig2, sizeof sig2, err, sizeof err), 0);
    assert_string_not_equal(sig, sig2);
    s.model.rank = 40;

    /* the cache: this card's entry chooses materialized; another card's plan stays fused */
    char dir[96];
    tu_temp_dir("tune-strategy", dir, sizeof dir);
    char *path = tt_tuning_path(dir);
    const char *card = "NVIDIA H100 80GB HBM3";
    tt_tune_entry e = entry(card, sig, "MAT=1", 0.5);
    snprintf(e.default_variant, sizeof e.default_variant, "MAT=0");
    e.default_ms = 0.6;
    snprintf(e.unit, sizeof e.unit, "train steps; the cost model's: fused");
    assert_int_equal(tt_tuning_store(path, &e, err, sizeof err), 0);
    assert_int_equal(tt_plan_build_for_card(&s, ARCH, card, path, &p, err, sizeof err), 0);
    assert_strategy(&p, "materialized");
    for (int i = 0; i < p.n; i++)
        if (p.kernels[i].strategy[0]) {
            print_message("  %s\n", p.kernels[i].strategy);
            assert_non_null(strstr(p.kernels[i].strategy, "tuned on NVIDIA H100 80GB HBM3 (2026-11-26): "
                                                          "0.5000 ms a step against 0.6000 ms fused (1.20x"));
        }
    tt_plan_free(&p);
    assert_int_equal(tt_plan_build_for_card(&s, ARCH, "NVIDIA H200", path, &p, err, sizeof err), 0);
    assert_strategy(&p, "fused");
    tt_plan_free(&p);
    setenv("TT_TUNE", "0", 1);
    assert_int_equal(tt_plan_build_for_card(&s, ARCH, card, path, &p, err, sizeof err), 0);
    assert_strategy(&p, "fused");
    tt_plan_free(&p);
    unsetenv("TT_TUNE");
    /* another batch misses the entry */
    s.train.batch = 33;
    assert_int_equal(tt_plan_build_for_card(&s, ARCH, card, path, &p, err, sizeof err), 0);
    assert_strategy(&p, "fused");
    tt_plan_free(&p);
    tt_spec_free(&s);

    /* Transformer-XL has no such choice */
    load("specs/txl-ptb.yaml", &s);
    assert_int_equal(tt_strategy_signature(&s, ARCH, sig, sizeof sig, err, sizeof err), 0);
    assert_string_equal(sig, "");
    tt_spec_free(&s);
    free(path);
    tu_rm_rf(dir);
}

/* mla_bwd_wo's three buffers of tiles: on wgmma (sm_90's heuristic) in dynamic shared memory;
 * on mma.sync in 48 KiB of static shared memory, where at rank 64 the heuristic's feature tile
 * narrows to fit, and a tuned W and TD that do not fit are refused with the reason. */
static void test_wo_tiles_fit(void **state)
{
    (void)state;
    tt_spec s;
    load("specs/wt103.yaml", &s);
    s.model.rank = 64;
    tuning_case c;
    const tt_kernel *k = tuning_open(&c, "tune-wo", &s, "mla_bwd_wo");
    print_message("  rank 64: %s, %u bytes of dynamic shared memory\n", k->name, k->dyn_smem);
    assert_int_equal(tt_kernel_const(k, "WG", 0), 1);
    assert_true(k->dyn_smem <= 227 * 1024 && k->smem_bytes == 0);
    tt_plan p;
    plan_tuned_as(&c, &s, "NVIDIA H100 80GB HBM3", "WG=0", &p);
    const tt_kernel *mk = kernel_of(&p, "mla_bwd_wo");
    print_message("  rank 64, mma.sync: %s, %u bytes of static shared memory\n", mk->name, mk->smem_bytes);
    assert_int_equal(tt_kernel_const(mk, "WG", 1), 0);
    assert_true(mk->smem_bytes <= 48 * 1024);
    assert_int_equal(tt_kernel_const(mk, "TD", 0), 64); /* 128 would need 50,304 bytes */
    tt_plan_free(&p);
    plan_tuned_as(&c, &s, "NVIDIA H100 80GB HBM3", "WG=0 W=8 TD=128 S=6", &p);
    const tt_kernel *pk = kernel_of(&p, "mla_bwd_wo");
    print_message("  %s\n", pk->variant);
    assert_non_null(strstr(pk->variant, "no longer fits"));
    assert_non_null(strstr(pk->variant, "rank 64 needs more than 48 KiB of shared memory"));
    assert_string_equal(pk->name, k->name);
    tt_plan_free(&p);
    tuning_close(&c);
    tt_spec_free(&s);
}

/* A tuning cache's value out of a tunable's range (edited by hand, or from another version) ends
 * the plan with one line naming the op, the key and the range: the FFN activation's UNROLL, and
 * LayerNorm's threads a row (wt103's D 256 bf16: 32 vectors of 8, a warp's worth). */
static void test_out_of_range(void **state)
{
    (void)state;
    tt_spec s;
    load("specs/wt103.yaml", &s);
    static const struct { const char *op, *key; long value; const char *want; } cases[] = {
        {"ffn_act_fwd", "UNROLL", 9, "ffn_act_fwd: UNROLL=9: from 1 to 8"},
        {"ffn_act_bwd", "UNROLL", 0, "ffn_act_bwd: UNROLL=0: from 1 to 8"},
        {"residual_ln_bwd", "TPR", 48,
         "residual_ln_bwd: TPR=48: threads a row are a power of two from 32 to 1024"},
        {"residual_ln_fwd", "TPR", 64,
         "residual_ln_fwd: TPR=64: D 256 is 32 vectors of 8, so half the threads would hold none"}};
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        tt_tuning t = {0};
        tt_tuning_set(&t, cases[i].op, cases[i].key, cases[i].value);
        tt_plan p;
        char err[512];
        assert_int_not_equal(tt_plan_build_tuned(&s, ARCH, &t, &p, err, sizeof err), 0);
        print_message("  %s\n", err);
        assert_string_equal(err, cases[i].want);
        tt_tuning_free(&t);
    }
    tt_spec_free(&s);
}

static int count_lines(const char *text)
{
    int lines = 0;
    for (const char *c = text; *c; c++) lines += *c == '\n';
    return lines;
}

/* ttgen: --tune without a GPU says so and fails; --card reports the tuned variant. */
static void test_cli(void **state)
{
    (void)state;
    char dir[96], err[512], sig[320];
    tu_temp_dir("tune-cli", dir, sizeof dir);
    const char *spec = TT_SOURCE_DIR "/specs/wt103.yaml";
    tu_proc p;
    const char *const tune[] = {TTGEN_BIN, spec, "--tune", "--cache-dir", dir, NULL};
    tu_proc_start(&p, tune, NULL);
    tu_proc_wait(&p, 120);
    if (strstr(p.err, "no CUDA device")) {
        tu_expect_exit(&p, 1, "ttgen --tune without a GPU");
        print_message("  %s", p.err);
    } else {
        print_message("  a GPU is here: ttgen --tune ran (exit %d)\n", p.status);
    }
    tu_proc_free(&p);

    /* an entry for a card, then ttgen --card with it */
    tt_spec s;
    load("specs/wt103.yaml", &s);
    tt_tunable *tu;
    int nt;
    tunables(&tu, &nt);
    tt_plan base;
    if (tt_plan_build(&s, ARCH, &base, err, sizeof err) != 0) fail_msg("%s", err);
    if (tt_kernel_signature(kernel_of(&base, "mla_bwd_q"), &s, ARCH, tu, nt, sig, sizeof sig, err,
                            sizeof err) != 0)
        fail_msg("%s", err);
    tt_cache cache;
    if (tt_cache_open(&cache, dir, err, sizeof err) != 0) fail_msg("%s", err);
    char *path = tt_tuning_path(cache.dir);
    tt_tune_entry e = entry("Some Card", sig, "G=2 JS=16", 0.2);
    assert_int_equal(tt_tuning_store(path, &e, err, sizeof err), 0);
    const char *const report[] = {TTGEN_BIN, spec, "--no-compile", "--cache-dir", dir, "--card",
                                  "Some Card", NULL};
    tu_proc_start(&p, report, NULL);
    tu_proc_wait(&p, 120);
    tu_expect_exit(&p, 0, "ttgen --card");
    assert_non_null(strstr(p.out, "mla_bwd_q_N80_R40_D256_causal_mma_G2_TI16_JS16_JP5_bf16"));
    assert_non_null(strstr(p.out, "variant G=2 JS=16: tuned on Some Card"));
    tu_proc_free(&p);
    /* the user's mistakes with the new options: exit 2, one line each */
    const char *const both[] = {TTGEN_BIN, spec, "--tune", "--card", "X", NULL};
    const char *const iters[] = {TTGEN_BIN, spec, "--tune", "--tune-iters", "2", NULL};
    const char *const nocache[] = {TTGEN_BIN, spec, "--tune", "--no-cache", NULL};
    const struct {
        const char *const *argv;
        const char *says;
    } usage[] = {{both, "not with --card"},
                 {iters, "--tune-iters takes a number from 3 to 10000, not '2'"},
                 {nocache, "not with --no-cache or --no-compile"}};
    for (size_t i = 0; i < sizeof usage / sizeof *usage; i++) {
        tu_proc_start(&p, usage[i].argv, NULL);
        tu_proc_wait(&p, 60);
        tu_expect_exit(&p, 2, usage[i].says);
        assert_non_null(strstr(p.err, usage[i].says));
        assert_int_equal(count_lines(p.err), 1);
        tu_proc_free(&p);
    }
    /* a tuning cache that is not one: one line, and the plan's heuristics */
    tu_write_text(path, "NVIDIA H200\tsig\tG=2\n");
    tu_proc_start(&p, report, NULL);
    tu_proc_wait(&p, 120);
    tu_expect_exit(&p, 0, "ttgen --card with a broken tuning cache");
    print_message("  %s", p.err);
    assert_non_null(strstr(p.err, "tuning.tsv:1: not a tuning entry"));
    assert_non_null(strstr(p.err, "the plan's heuristics instead"));
    assert_int_equal(count_lines(p.err), 1);
    assert_non_null(strstr(p.out, "mla_bwd_q_N80_R40_D256_causal_mma_wg_G4_TI16_JS8_JP10_bf16"));
    tu_proc_free(&p);
    free(path);
    tt_cache_close(&cache);
    tt_plan_free(&base);
    free(tu);
    tt_spec_free(&s);
    tu_rm_rf(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_declarations),     cmocka_unit_test(test_bad_declaration),
        cmocka_unit_test(test_plan_honors_values), cmocka_unit_test(test_cache_file),
        cmocka_unit_test(test_concurrent_store),
        cmocka_unit_test(test_plan_for_card),    cmocka_unit_test(test_strategy_tuned),
        cmocka_unit_test(test_wo_tiles_fit),
        cmocka_unit_test(test_out_of_range),
        cmocka_unit_test(test_cli),
        cmocka_unit_test(test_variants_compile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
