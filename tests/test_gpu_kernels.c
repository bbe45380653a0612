/* Every generated kernel against its CPU twin (cpu/cpu_ops.c, cpu/cpu_txl.c) on the GPU, on fresh
 * random inputs, with outputs poisoned (NaN) first so that an unwritten element fails. The kernels
 * a unit runs (gpu/unit.h: the attention, the residual LayerNorms, the FFN's activation, the loss,
 * Transformer-XL's softmax and heads, the embedding, the gather, Adam, the cast) are checked
 * through it, with its tolerances: on hand-written configs, on the plan of every spec in specs/ as
 * shipped, and on every variant ttgen --tune may choose; errors planted in the twin or in the
 * GPU's outputs show that each check fails where a kernel is wrong. The rest (the products, the
 * plain LayerNorm, the embedding's backward and sort, the adaptive clusters, the core, the loss on
 * other rows, Adam's clipping) are checked here with the units' helpers: relative L2 errors that
 * fit the precision, fp32 1e-5 and bf16 1e-2 (the CPU computes in fp32 on the same bf16-rounded
 * inputs). TT_TEST_CONFIGS=substring runs only the configs and specs whose name contains it
 * (racecheck is slow), TT_TEST_ONLY=name only the tests whose names match it (testutil.h);
 * TT_TEST_NO_VARIANTS=1 leaves the tuner's variants out (compute-sanitizer).
 * Without a CUDA device the test exits 77: CTest reports it skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <glob.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "autotune.h"
#include "cache.h"
#include "cpu_ops.h"
#include "gemm.h"
#include "gpu.h"
#include "gpu_testutil.h"
#include "launch.h"
#include "optim.h"
#include "rng.h"
#include "spec.h"
#include "testutil.h"
#include "tune.h"
#include "unit.h"
#include "util.h"

static tt_gpu gpu;
static tt_cache cache;
static uint64_t seed;
static uint64_t draws;

/* A tensorized model's shapes: D, N, R, the batch and the FFN's width F. */
typedef struct {
    const char *name;
    int d, n, r, batch, f;
    int causal, pos_key, bf16;
    int mat; /* kernels.attention: materialized (T written, cuBLAS's products; else the plan's) */
    int tiles; /* kernels.attention_tiles: the materialized products with Wo in tiles of
                * positions (0: the plan's; 1: one product over every column, T's rows in the
                * sequences' order) */
} config;

/* F 2100, 64 and 37: the FFN's rows with 16-, 8- and 4-byte vectors and with none, 2104 and 40
 * apart (tt_row_pitch) */
static const config configs[] = {
    {"ptb", 256, 32, 40, 4, 2100, 1, 0, 0, 0, 0},  {"ptb", 256, 32, 40, 4, 2100, 1, 0, 1, 0, 0},
    {"wt103", 256, 80, 40, 3, 64, 1, 0, 0, 0, 0},  {"wt103", 256, 80, 40, 3, 64, 1, 0, 1, 0, 0},
    {"odd-key", 100, 13, 7, 2, 37, 0, 1, 0, 0, 0}, {"odd-key", 100, 13, 7, 2, 37, 0, 1, 1, 0, 0},
    {"odd-causal-key", 72, 37, 12, 2, 32, 1, 1, 1, 0, 0},
    {"causal-key", 64, 24, 16, 2, 32, 1, 1, 0, 0, 0},  {"causal-key", 64, 24, 16, 2, 32, 1, 1, 1, 0, 0},
    {"d96", 96, 32, 16, 2, 32, 1, 0, 1, 0, 0}, /* mla_bwd_wo's dY tile by the loop for uneven chunks */
    {"wide", 1536, 8, 16, 2, 32, 1, 0, 0, 0, 0},   {"wide", 1536, 8, 16, 2, 32, 1, 0, 1, 0, 0},
    {"tiny", 32, 16, 8, 4, 32, 1, 0, 1, 0, 0},     {"nocausal", 64, 40, 24, 3, 32, 0, 0, 1, 0, 0},
    /* the materialized strategy (templates/mla_mat.cu, gpu/mla_mat.c) */
    {"mat", 128, 32, 40, 4, 64, 1, 0, 0, 1, 0},  {"mat", 128, 32, 40, 4, 64, 1, 0, 1, 1, 0},
    {"mat-odd-key", 100, 13, 7, 3, 37, 1, 1, 0, 1, 0}, {"mat-odd-key", 100, 13, 7, 3, 37, 1, 1, 1, 1, 0},
    {"mat-nocausal-key", 64, 20, 12, 2, 32, 0, 1, 1, 1, 0},
    /* its causal products with Wo: one over every column, and tiles of uneven positions, down
     * to a position a tile */
    {"mat-1-tile", 128, 32, 40, 4, 64, 1, 0, 1, 1, 1}, {"mat-odd-1-tile", 100, 13, 7, 3, 37, 1, 1, 0, 1, 1},
    {"mat-5-tiles", 128, 32, 40, 4, 64, 1, 0, 1, 1, 5}, {"mat-odd-13-tiles", 100, 13, 7, 3, 37, 1, 1, 1, 1, 13},
    {"mat-odd-4-tiles", 100, 13, 7, 3, 37, 1, 0, 0, 1, 4},
    /* bf16 without position: key: dT read by mla_bwd_q (DT_MEM), at odd N and R, in tiles */
    {"mat-odd-4-tiles", 100, 13, 7, 3, 37, 1, 0, 1, 1, 4},
};

/* Transformer-XL's: with and without memory, a segment of 37 rows after 70 of memory; at bf16
 * (the fused attention's tiles of 64 queries and keys) also two query tiles after 5 memory rows,
 * and a short segment after a long memory, as evaluation runs it. */
typedef struct {
    const char *name;
    int batch, heads, n, m, bf16;
} txl_config;

static const txl_config txl_configs[] = {
    {"txl-m0", 2, 3, 8, 0, 0},      {"txl-m8", 2, 3, 8, 8, 0}, {"txl-n37-m70", 1, 2, 37, 70, 0},
    {"txl-m0", 2, 3, 8, 0, 1},      {"txl-m8", 2, 3, 8, 8, 1},      {"txl-n37-m70", 1, 2, 37, 70, 1},
    {"txl-n70-m5", 1, 2, 70, 5, 1}, {"txl-n5-m130", 2, 2, 5, 130, 1},
};

/* Sequences the units check of a shipped spec's batch: the CPU twin of the attention at wt103's
 * shapes takes about a second for eight. */
#define SPEC_CHECK 8

/* TT_TEST_CONFIGS=substring runs only the configs and specs whose name contains it. */
static int skip_name(const char *name)
{
    const char *f = getenv("TT_TEST_CONFIGS");
    return f && *f && !strstr(name, f);
}

static void randn(float *x, size_t n, float std) { tt_randn(x, n, std, seed, draws++, 0); }

static void *upload(const float *x, size_t n, int bf16) { return tt_gpu_upload(x, n, bf16); }

static void *poisoned(size_t n, size_t es) { return tt_gpu_poisoned(n * es); }

/* A [rows, cols] matrix into device memory with its rows ld apart, as the GPU keeps the FFN's
 * activations and the logits: the ld - cols padding elements of a row are NaN, so that a kernel or
 * product that reads them fails. */
static void *upload_pitched(const float *x, int rows, int cols, int ld, int bf16)
{
    return tt_gpu_upload_rows(x, rows, cols, ld, bf16);
}

static float *download(const void *d, size_t n, int bf16)
{
    TT_CUDA(cudaStreamSynchronize(gpu.stream));
    TT_CUDA(cudaGetLastError());
    return tt_gpu_download(d, n, bf16);
}

/* The [rows, cols] values of a device matrix whose rows are ld apart and whose padding was NaN:
 * fails where a padding element is not NaN any more (written where nothing may be). */
static float *download_pitched(const void *d, int rows, int cols, int ld, int bf16, const char *what)
{
    TT_CUDA(cudaStreamSynchronize(gpu.stream));
    long written, at = 0;
    float *x = tt_gpu_download_rows(d, rows, cols, ld, bf16, &written, &at);
    if (written)
        fail_msg("%s: %ld padding elements of rows %d wide, %d apart, written; the first (%ld, %ld)",
                 what, written, cols, ld, at / ld, at % ld);
    return x;
}

/* Relative L2 error over the whole; NaN anywhere (an unwritten or broken element) fails. */
static void compare(const char *what, const config *c, const float *got, const float *want,
                    size_t n, double tol)
{
    tt_unit_result r = {.whole.row = -1, .row.row = -1};
    tt_compare(&r, what, got, want, 1, (long)n, tol, 0, 0);
    printf("  %-14s %-15s %-4s  rel err %.2e  (tol %.0e)%s\n", what, c->name, c->bf16 ? "bf16" : "fp32",
           r.whole.err, tol, r.note[0] ? "  NOT FINITE" : "");
    if (r.note[0]) fail_msg("%s %s: %s", what, c->name, r.note);
    if (!(r.ratio <= 1)) fail_msg("%s %s: relative error %.3e over %.0e", what, c->name, r.whole.err, tol);
}

/* A spec's text and its program. */
static void load_text(const char *text, tt_spec *s, tt_gpu_program *p)
{
    char err[4096];
    if (tt_spec_parse(text, strlen(text), "test", ".", s, err, sizeof err) != 0) fail_msg("%s", err);
    if (tt_gpu_program_load(p, s, &gpu, &cache, err, sizeof err) != 0) fail_msg("%s", err);
}

/* config c's spec with the FFN width f and h cores, and `extra` model keys (", key: value", or
 * ""). */
static void lm_text(const config *c, int f, int h, const char *extra, char *text, size_t n)
{
    char kernels[96] = "";
    if (c->mat)
        snprintf(kernels, sizeof kernels, "kernels: {attention: materialized, attention_tiles: %d}\n",
                 c->tiles);
    snprintf(text, n,
             "model: {kind: tensorized, vocab: 100, d_model: %d, layers: 1, rank: %d, cores: %d, "
             "seq_len: %d, d_inner: %d, causal: %s, position: %s%s}\n"
             "train: {batch: %d, precision: %s}\n%s",
             c->d, c->r, h, c->n, f, c->causal ? "true" : "false", c->pos_key ? "key" : "none",
             extra, c->batch, c->bf16 ? "bf16" : "fp32",
             kernels);
}

static void txl_text(const txl_config *c, char *text, size_t n)
{
    snprintf(text, n,
             "model: {kind: transformer-xl, vocab: 50, d_model: 16, layers: 1, n_head: %d, "
             "d_head: 8, seq_len: %d, mem_len: %d, d_inner: 32}\n"
             "train: {batch: %d, precision: %s}\n", c->heads, c->n, c->m, c->batch,
             c->bf16 ? "bf16" : "fp32");
}

static void load_lm_program(const config *c, int f, int h, const char *extra, tt_spec *s,
                            tt_gpu_program *p)
{
    char text[1024];
    lm_text(c, f, h, extra, text, sizeof text);
    load_text(text, s, p);
}

static void load_program(const config *c, tt_spec *s, tt_gpu_program *p)
{
    load_lm_program(c, c->f, 2, "", s, p);
}

/* A shipped spec and the program of its plan as shipped (the heuristics, whatever a tuning cache
 * holds). */
static void load_spec(const char *path, tt_spec *s, tt_gpu_program *p)
{
    char err[4096];
    if (tt_spec_load(path, s, err, sizeof err) != 0) fail_msg("%s", err);
    tt_plan plan;
    if (tt_plan_build(s, gpu.arch, &plan, err, sizeof err) != 0 ||
        tt_gpu_program_load_plan(p, &plan, &gpu, &cache, err, sizeof err) != 0)
        fail_msg("%s: %s", path, err);
}

/* --- the units ------------------------------------------------------------------------------- */

/* One line: the unit, where (config, spec, variant), the precision, the whole-tensor error and the
 * worst row's, each with its tensor and bound. */
static void print_check(const tt_unit *u, const char *where, int bf16, const tt_unit_result *r)
{
    const tt_unit_desc *d = tt_unit_desc_of(u);
    char whole[80] = "", row[80] = "";
    if (r->whole.tensor)
        snprintf(whole, sizeof whole, "%s %.2e (tol %.0e)", r->whole.tensor, r->whole.err, r->whole.tol);
    if (r->row.tensor)
        snprintf(row, sizeof row, "row %.2e %s[%ld] (tol %.0e)", r->row.err, r->row.tensor,
                 r->row.row, r->row.tol);
    printf("  %-16s %-44s %-4s  %-10s %-30s %s%s\n", d->name, where, bf16 ? "bf16" : "fp32",
           d->measure, whole, row, r->ratio <= 1 ? "" : "  FAILS");
}

static void check_one(tt_unit *u, const tt_gpu_program *p, const char *where, int bf16)
{
    const tt_unit_result r = tt_unit_check(u, p, &gpu, TT_PLANT_NONE);
    print_check(u, where, bf16, &r);
    if (!(r.ratio <= 1)) {
        char why[256];
        tt_unit_verdict(&r, tt_unit_desc_of(u)->measure, why, sizeof why);
        fail_msg("%s, %s: %s", tt_unit_desc_of(u)->name, where, why);
    }
}

/* The attention's backward is deterministic: the same inputs, the same bits in every output. */
static void same_twice(tt_unit *u, const tt_gpu_program *p, const char *where)
{
    const char *differs = tt_unit_differs_twice(u, p, &gpu);
    printf("  %-16s %-44s twice: %s\n", tt_unit_desc_of(u)->name, where,
           differs ? "DIFFERENT BITS" : "the same bits");
    if (differs) fail_msg("%s, %s: %s differs between two runs", tt_unit_desc_of(u)->name, where, differs);
}

/* Every unit of p's plan for spec s (check: its whole batch), and the backward run twice. */
static void check_units(const tt_spec *s, const tt_gpu_program *p, const char *where)
{
    const tt_unit_opts o = {.check = s->train.batch, .seed = seed, .tail_rows = 5, .ld_pad = 8};
    const int bf = s->train.precision == TT_PREC_BF16;
    for (int i = 0; i < tt_n_units; i++) {
        if (!tt_unit_in_plan(&tt_units[i], &p->plan)) continue;
        tt_unit *u = tt_unit_init(&tt_units[i], s, &o);
        check_one(u, p, where, bf);
        if (!strcmp(tt_units[i].name, "mla_bwd")) same_twice(u, p, where);
        tt_unit_free(u);
    }
}

/* What runs on a spec and its program; where: the config's or the spec's name. */
typedef void (*on_program)(const tt_spec *s, const tt_gpu_program *p, const char *where);

static void with_text(const char *text, const char *where, on_program run)
{
    tt_spec s;
    tt_gpu_program p;
    load_text(text, &s, &p);
    run(&s, &p, where);
    tt_gpu_program_free(&p);
    tt_spec_free(&s);
}

static void with_config(const config *c, on_program run)
{
    char text[1024];
    lm_text(c, c->f, 2, "", text, sizeof text);
    with_text(text, c->name, run);
}

static void with_txl_config(const txl_config *c, on_program run)
{
    char text[512];
    txl_text(c, text, sizeof text);
    with_text(text, c->name, run);
}

/* (a) Each unit on the hand-written configs: rows past whole blocks (5 more than the sequences)
 * and D-wide rows 8 elements wider apart than the trainer's, the padding NaN (read or written, it
 * fails). */
static void test_units_configs(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < sizeof configs / sizeof *configs; ci++)
        if (!skip_name(configs[ci].name)) with_config(&configs[ci], check_units);
    for (size_t ci = 0; ci < sizeof txl_configs / sizeof *txl_configs; ci++)
        if (!skip_name(txl_configs[ci].name)) with_txl_config(&txl_configs[ci], check_units);
}

/* A kernel already checked for an earlier spec, with the sizes of its unit's inputs. */
typedef struct {
    tt_kernel k;
    char sizes[160];
} checked;

/* The unit built for op (the first that runs it of those built for the plan), or NULL. */
static tt_unit *unit_for(tt_unit *const *units, const char *op)
{
    for (int i = 0; i < tt_n_units; i++)
        for (const char *const *o = tt_units[i].ops; *o; o++)
            if (!strcmp(*o, op) && units[i]) return units[i];
    return NULL;
}

static const tt_kernel *kernel_of(const tt_plan *p, const char *op)
{
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->kernels[i].op, op)) return &p->kernels[i];
    return NULL;
}

/* (c) Every variant the tuner may choose of every tunable op of spec, built in parallel through
 * the kernel cache and checked through the op's unit; not again where the same kernel at the same
 * sizes was checked for an earlier spec (seen). */
static void check_variants(const tt_spec *s, const char *name, tt_unit *const *units,
                           checked **seen, int *n_seen)
{
    /* compute-sanitizer: a thousand programs loaded under it take hours */
    if (getenv("TT_TEST_NO_VARIANTS")) {
        printf("  %s: variants not checked: TT_TEST_NO_VARIANTS is set\n", name);
        return;
    }
    char err[4096];
    tt_tune_variant *v;
    int n, no_unit = 0, again = 0, todo = 0;
    if (tt_tune_variants(s, gpu.arch, &v, &n, err, sizeof err) != 0) fail_msg("%s: %s", name, err);
    for (int i = 0; i < n; i++) {
        const tt_unit *u = unit_for(units, v[i].op);
        if (!u) { /* its unit needs the vocabulary */
            snprintf(v[i].error, sizeof v[i].error, "no unit");
            no_unit++;
            continue;
        }
        tt_plan p;
        if (tt_plan_build_tuned(s, gpu.arch, &v[i].t, &p, err, sizeof err) != 0) fail_msg("%s", err);
        checked c = {*kernel_of(&p, v[i].op), ""};
        tt_plan_free(&p);
        tt_unit_describe(u, c.sizes, sizeof c.sizes);
        int dup = 0;
        for (int j = 0; j < *n_seen && !dup; j++)
            dup = tt_kernel_same(&(*seen)[j].k, &c.k) && !strcmp((*seen)[j].sizes, c.sizes);
        if (dup) {
            snprintf(v[i].error, sizeof v[i].error, "checked before");
            again++;
            continue;
        }
        *seen = tt_xrealloc(*seen, (size_t)(*n_seen + 1) * sizeof **seen);
        (*seen)[(*n_seen)++] = c;
        todo++;
    }
    const double t0 = tt_now_seconds();
    if (tt_tune_compile(s, gpu.arch, v, n, &cache, 0, err, sizeof err) != 0) fail_msg("%s: %s", name, err);
    const double t1 = tt_now_seconds();
    const int bf = s->train.precision == TT_PREC_BF16;
    for (int i = 0; i < n; i++) {
        if (v[i].error[0]) continue;
        tt_plan plan;
        tt_gpu_program p;
        if (tt_plan_build_tuned(s, gpu.arch, &v[i].t, &plan, err, sizeof err) != 0 ||
            tt_gpu_program_load_plan(&p, &plan, &gpu, &cache, err, sizeof err) != 0)
            fail_msg("%s %s %s: %s", name, v[i].op, v[i].label, err);
        char where[160];
        snprintf(where, sizeof where, "%s %s %s%s", name, v[i].op, v[i].label,
                 v[i].heuristic ? " (heur.)" : "");
        check_one(unit_for(units, v[i].op), &p, where, bf);
        tt_gpu_program_free(&p);
    }
    printf("  %s: %d variants checked (built in %.1f s, checked in %.1f s)", name, todo, t1 - t0,
           tt_now_seconds() - t1);
    if (again) printf("; %d the same kernels at the same sizes as an earlier spec's", again);
    if (no_unit) printf("; %d of units that need the vocabulary", no_unit);
    printf("\n");
    tt_tune_variants_free(v, n);
}

/* (b) Every unit on the plan of every spec in specs/ as shipped (the plan for the spec's own
 * batch, the check on its first SPEC_CHECK sequences, as the tuner checks), the backward run twice
 * at wt103's; then (c) every variant the tuner may choose. A spec whose vocabulary comes from its
 * data skips the units sized by it. */
static void test_units_specs(void **state)
{
    (void)state;
    glob_t g;
    if (glob(TT_SOURCE_DIR "/specs/*.yaml", 0, NULL, &g) != 0) fail_msg("no specs/*.yaml");
    checked *seen = NULL;
    int n_seen = 0;
    for (size_t f = 0; f < g.gl_pathc; f++) {
        const char *name = strrchr(g.gl_pathv[f], '/') + 1;
        if (skip_name(name)) continue;
        tt_spec s;
        tt_gpu_program p;
        load_spec(g.gl_pathv[f], &s, &p);
        const int bf = s.train.precision == TT_PREC_BF16;
        const tt_unit_opts o = {.check = SPEC_CHECK, .seed = seed};
        tt_unit *units[64] = {0};
        TT_ASSERT(tt_n_units <= 64);
        for (int i = 0; i < tt_n_units; i++) {
            const tt_unit_desc *d = &tt_units[i];
            if (!tt_unit_in_plan(d, &p.plan)) continue;
            if (d->needs_vocab && s.model.vocab <= 0) {
                printf("  %-16s %-44s skipped: the vocabulary is not known until the data is read\n",
                       d->name, name);
                continue;
            }
            units[i] = tt_unit_init(d, &s, &o);
            check_one(units[i], &p, name, bf);
            if (!strcmp(name, "wt103.yaml") && !strcmp(d->name, "mla_bwd")) same_twice(units[i], &p, name);
        }
        tt_gpu_program_free(&p);
        check_variants(&s, name, units, &seen, &n_seen);
        for (int i = 0; i < tt_n_units; i++) tt_unit_free(units[i]);
        tt_spec_free(&s);
    }
    free(seen);
    globfree(&g);
}

/* Each unit's check with each planted error that applies to it: it must fail with it, and pass
 * without. */
static void plant_errors(const tt_spec *s, const tt_gpu_program *p, const char *where)
{
    const tt_unit_opts o = {.check = SPEC_CHECK, .seed = seed};
    const char *prec = s->train.precision == TT_PREC_BF16 ? "bf16" : "fp32";
    for (int i = 0; i < tt_n_units; i++) {
        const tt_unit_desc *d = &tt_units[i];
        if (!tt_unit_in_plan(d, &p->plan) || (d->needs_vocab && s->model.vocab <= 0)) continue;
        int plants = 0;
        for (int k = TT_PLANT_NONE + 1; k < TT_PLANTS; k++) plants += tt_unit_plants(d, s, (tt_plant)k);
        if (!plants) continue;
        tt_unit *u = tt_unit_init(d, s, &o);
        const tt_unit_result none = tt_unit_check(u, p, &gpu, TT_PLANT_NONE);
        if (!(none.ratio <= 1)) fail_msg("%s, %s: fails without a planted error", d->name, where);
        for (int k = TT_PLANT_NONE + 1; k < TT_PLANTS; k++) {
            if (!tt_unit_plants(d, s, (tt_plant)k)) continue;
            const tt_unit_result planted = tt_unit_check(u, p, &gpu, (tt_plant)k);
            printf("  %-16s %-16s %-4s  %-22s ratio %.2e without, %.2e with it%s\n", d->name, where,
                   prec, tt_plant_name((tt_plant)k), none.ratio, planted.ratio,
                   planted.ratio > 1 ? "" : "  NOT CAUGHT");
            if (!(planted.ratio > 1))
                fail_msg("%s, %s: the planted %s is not caught", d->name, where, tt_plant_name((tt_plant)k));
        }
        tt_unit_free(u);
    }
}

/* (d) Each unit's check catches the errors planted for it: at the wt103 shapes in bf16 with the
 * shipped plan (Transformer-XL's units at txl-wt103's), and at fp32 configs (the attention
 * causal with position: key). */
static void test_plants(void **state)
{
    (void)state;
    static const char *const shipped[] = {"wt103.yaml", "txl-wt103.yaml"};
    for (size_t i = 0; i < sizeof shipped / sizeof *shipped; i++) {
        if (skip_name(shipped[i])) continue;
        char *path = tt_xasprintf("%s/specs/%s", TT_SOURCE_DIR, shipped[i]);
        tt_spec s;
        tt_gpu_program p;
        load_spec(path, &s, &p);
        plant_errors(&s, &p, shipped[i]);
        tt_gpu_program_free(&p);
        tt_spec_free(&s);
        free(path);
    }
    for (size_t ci = 0; ci < sizeof configs / sizeof *configs; ci++)
        if (!strcmp(configs[ci].name, "causal-key") && !skip_name(configs[ci].name))
            with_config(&configs[ci], plant_errors);
    for (size_t ci = 0; ci < sizeof txl_configs / sizeof *txl_configs; ci++)
        if (!strcmp(txl_configs[ci].name, "txl-m8") && !txl_configs[ci].bf16 &&
            !skip_name(txl_configs[ci].name))
            with_txl_config(&txl_configs[ci], plant_errors);
}

/* --- the kernels no unit runs ------------------------------------------------------------------ */

static void test_layernorm(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < sizeof configs / sizeof *configs; ci++) {
        const config *c = &configs[ci];
        if (skip_name(c->name)) continue;
        tt_spec s;
        tt_gpu_program p;
        load_program(c, &s, &p);
        const int rows = c->batch * c->n + 5, d = c->d; /* not a multiple of the block's rows */
        const size_t nd = (size_t)rows * d;
        float *x = tt_xmalloc(nd * 4), *dy = tt_xmalloc(nd * 4), *gamma = tt_xmalloc(d * 4),
              *beta = tt_xmalloc(d * 4);
        randn(x, nd, 1.5f);
        for (size_t i = 0; i < nd; i++) x[i] += 0.3f; /* a mean to remove */
        randn(dy, nd, 1.f);
        randn(gamma, d, 0.5f);
        randn(beta, d, 0.5f);
        for (int i = 0; i < d; i++) gamma[i] += 1.f;
        tt_round_storage(x, nd, c->bf16);
        tt_round_storage(dy, nd, c->bf16);
        /* CPU twin */
        float *y = tt_xmalloc(nd * 4), *mean = tt_xmalloc(rows * 4), *rstd = tt_xmalloc(rows * 4);
        float *dx = tt_xmalloc(nd * 4), *dgb = tt_xcalloc(2 * (size_t)d, 4);
        cpu_layernorm_fwd(y, mean, rstd, x, gamma, beta, rows, d);
        cpu_layernorm_bwd(dx, dgb, dgb + d, dy, x, mean, rstd, gamma, rows, d);
        /* GPU */
        void *dx_d = upload(x, nd, c->bf16), *ddy = upload(dy, nd, c->bf16);
        float *dgamma_d = upload(gamma, d, 0), *dbeta_d = upload(beta, d, 0);
        void *dy_out = poisoned(nd, c->bf16 ? 2 : 4);
        float *dmean = poisoned(rows, 4), *drstd = poisoned(rows, 4);
        tt_layernorm_fwd(&p, gpu.stream, dy_out, dmean, drstd, dx_d, dgamma_d, dbeta_d, rows, d);
        const double tol = c->bf16 ? 1e-2 : 1e-5;
        float *gy = download(dy_out, nd, c->bf16), *gmean = download(dmean, rows, 0),
              *grstd = download(drstd, rows, 0);
        compare("layernorm_fwd", c, gy, y, nd, tol);
        compare("  mean", c, gmean, mean, rows, 1e-5);
        compare("  rstd", c, grstd, rstd, rows, 1e-5);
        /* backward, from the CPU's statistics so that only the kernel is under test */
        float *dmean2 = upload(mean, rows, 0), *drstd2 = upload(rstd, rows, 0);
        void *ddx = poisoned(nd, c->bf16 ? 2 : 4);
        float *dgb_d = poisoned(2 * (size_t)d, 4);
        float *part = poisoned(2 * (size_t)tt_layernorm_bwd_parts(&p, rows) * d, 4);
        tt_layernorm_bwd(&p, gpu.stream, ddx, dgb_d, dgb_d + d, part, ddy, dx_d, dmean2, drstd2,
                         dgamma_d, rows, d);
        float *gdx = download(ddx, nd, c->bf16), *gdgb = download(dgb_d, 2 * (size_t)d, 0);
        compare("layernorm_bwd", c, gdx, dx, nd, tol);
        compare("  dgamma", c, gdgb, dgb, d, 1e-5);
        compare("  dbeta", c, gdgb + d, dgb + d, d, 1e-5);
        cudaFree(dx_d), cudaFree(ddy), cudaFree(dgamma_d), cudaFree(dbeta_d), cudaFree(dy_out);
        cudaFree(dmean), cudaFree(drstd), cudaFree(dmean2), cudaFree(drstd2), cudaFree(ddx);
        cudaFree(dgb_d), cudaFree(part);
        free(x), free(dy), free(gamma), free(beta), free(y), free(mean), free(rstd), free(dx);
        free(dgb), free(gy), free(gmean), free(grstd), free(gdx), free(gdgb);
        tt_gpu_program_free(&p);
        tt_spec_free(&s);
    }
}

/* tt_colsums over several jobs at once, as the trainer sums every layer's LayerNorm and bias
 * partials after the backward: each job's sums against double sums of its own partials, the
 * same bits as that job summed alone (the trainer's sums are the per-layer ones'), and nothing
 * written between one job's outputs and the next's (poisoned gaps stay NaN). For colsum (width
 * d_model, 3 sets and 2) and bias_colsum (d_inner, 1 set), at each config's shapes. */
static void colsums_on(const tt_spec *s, const tt_gpu_program *p, const char *where)
{
    const config cc = {.name = where}, *c = &cc;
    const struct {
        const char *op;
        int width, sets;
    } kinds[3] = {{"colsum", s->model.d_model, 3}, {"colsum", s->model.d_model, 2},
                  {"bias_colsum", s->model.d_inner, 1}};
    for (int t = 0; t < 3; t++) {
        const int w = kinds[t].width, sets = kinds[t].sets, jobs = 3, parts = 37 + t;
        const long long in_stride = (long long)sets * parts * w + 64, out_stride = 3LL * w + 17;
        const size_t nin = (size_t)(jobs - 1) * in_stride + (size_t)sets * parts * w;
        const size_t nout = (size_t)(jobs - 1) * out_stride + 3 * (size_t)w;
        float *in = tt_xmalloc(nin * 4);
        randn(in, nin, 1.f);
        float *din = upload(in, nin, 0), *dout = poisoned(nout, 4), *dalone = poisoned(3 * (size_t)w, 4);
        tt_colsum_jobs j = {din, in_stride, {dout, dout + w, sets > 2 ? dout + 2 * w : NULL},
                            out_stride, jobs, parts, sets};
        tt_colsums(p, gpu.stream, kinds[t].op, &j, w);
        float *got = download(dout, nout, 0);
        double *want = tt_xmalloc((size_t)w * 8);
        float *wantf = tt_xmalloc((size_t)w * 4);
        char what[64];
        for (int z = 0; z < jobs; z++) {
            for (int set = 0; set < sets; set++) {
                const float *pz = in + (size_t)z * in_stride + (size_t)set * parts * w;
                for (int col = 0; col < w; col++) {
                    want[col] = 0;
                    for (int q = 0; q < parts; q++) want[col] += pz[(size_t)q * w + col];
                    wantf[col] = (float)want[col];
                }
                snprintf(what, sizeof what, "%s j%d s%d", kinds[t].op, z, set);
                compare(what, c, got + (size_t)z * out_stride + (size_t)set * w, wantf, w, 1e-5);
            }
            /* the same job alone: the same bits */
            tt_colsum_jobs one = {din + (size_t)z * in_stride, 0,
                                  {dalone, dalone + w, sets > 2 ? dalone + 2 * w : NULL}, 0, 1,
                                  parts, sets};
            tt_colsums(p, gpu.stream, kinds[t].op, &one, w);
            float *alone = download(dalone, (size_t)sets * w, 0);
            if (memcmp(alone, got + (size_t)z * out_stride, (size_t)sets * w * 4))
                fail_msg("%s %s: job %d's sums differ from its sums alone", kinds[t].op, c->name, z);
            free(alone);
        }
        for (size_t i = 0; i < nout; i++) {
            const size_t z = i / (size_t)out_stride, off = i % (size_t)out_stride;
            const bool out_of_job = z >= (size_t)jobs || off >= (size_t)sets * w;
            if (out_of_job && !isnan(got[i]))
                fail_msg("%s %s: element %zu between jobs' outputs written", kinds[t].op, c->name, i);
        }
        free(in), free(got), free(want), free(wantf);
        cudaFree(din), cudaFree(dout), cudaFree(dalone);
    }
}

static void test_colsums(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < sizeof configs / sizeof *configs; ci++)
        if (!skip_name(configs[ci].name)) with_config(&configs[ci], colsums_on);
}

static void *upload_bytes(const void *x, size_t bytes)
{
    void *d;
    TT_CUDA(cudaMalloc(&d, bytes));
    TT_CUDA(cudaMemcpy(d, x, bytes, cudaMemcpyHostToDevice));
    return d;
}

static int cmp_u64(const void *a, const void *b)
{
    const uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* A dropout site with this run's seed: a different step and site for every call. The kernels
 * read the step from device memory: each call gets its own word of a small ring. */
static tt_dropout test_dropout(float p)
{
    enum { RING = 64 };
    static unsigned long long *steps;
    if (!steps) TT_CUDA(cudaMalloc((void **)&steps, RING * sizeof *steps));
    const unsigned long long step = 1000 + draws++, *at = steps + draws % RING;
    TT_CUDA(cudaMemcpy((void *)at, &step, sizeof step, cudaMemcpyHostToDevice));
    return (tt_dropout){.p = p, .seed = seed ^ 0x5eedull, .step = at, .site = (uint32_t)(draws % 7)};
}

/* Embedding forward and its deterministic scatter-add backward, against cpu_model.c's embed and
 * embed_bwd (written out here: they are private to it). Tokens repeat a lot, one of them in every
 * third row (a run longer than a block); dE starts from random values (it is added into), and
 * two backward runs must give the same bits. */
static void test_embedding(void **state)
{
    (void)state;
    /* and wt103's own batch (4800 rows: the sort in shared memory alone), and 10240 rows, for
     * which the sort goes through global memory too */
    static const config big[] = {{"wt103-b60", 256, 80, 40, 60, 32, 1, 0, 1, 0, 0},
                                 {"b128-n80", 64, 80, 8, 128, 32, 1, 0, 0, 0, 0}};
    const size_t nc = sizeof configs / sizeof *configs;
    for (size_t ci = 0; ci < nc + 2; ci++) {
        const config *c = ci < nc ? &configs[ci] : &big[ci - nc];
        if (skip_name(c->name)) continue;
        tt_spec s;
        tt_gpu_program p;
        load_program(c, &s, &p);
        const int rows = c->batch * c->n, d = c->d, vocab = 50;
        const size_t nd = (size_t)rows * d, ne = (size_t)vocab * d;
        int32_t *tok = tt_xmalloc((size_t)rows * sizeof *tok);
        for (int r = 0; r < rows; r++)
            tok[r] = r % 3 == 1 ? 7 : (int32_t)(tt_uniform(seed, draws, (uint64_t)r) * vocab);
        draws++;
        float *emb = tt_xmalloc(ne * 4), *demb0 = tt_xmalloc(ne * 4), *dx0 = tt_xmalloc(nd * 4);
        randn(emb, ne, 0.5f);
        randn(demb0, ne, 0.1f);
        randn(dx0, nd, 1.f);
        tt_round_storage(dx0, nd, c->bf16);
        const tt_dropout dr = test_dropout(0.25f);
        /* CPU */
        float *x0 = tt_xmalloc(nd * 4), *dd = tt_xmalloc(nd * 4), *demb = tt_xmalloc(ne * 4);
        uint8_t *mask = tt_xmalloc(nd);
        for (int r = 0; r < rows; r++) cpu_embedding_row(x0 + (size_t)r * d, emb + (size_t)tok[r] * d, d);
        tt_cpu_dropout(x0, mask, x0, (long)nd, dr);
        cpu_dropout_bwd(dd, dx0, mask, (long)nd, dr.p);
        memcpy(demb, demb0, ne * 4);
        for (int r = 0; r < rows; r++)
            cpu_embedding_row_bwd(demb + (size_t)tok[r] * d, dd + (size_t)r * d, d);
        /* GPU */
        float *d_emb = upload(emb, ne, 0), *d_demb = upload(demb0, ne, 0);
        int32_t *d_tok = upload_bytes(tok, (size_t)rows * sizeof *tok);
        /* rows wider than d, as Transformer-XL's padded ones, the padding NaN */
        const int ld = (int)tt_row_pitch(d) + 8;
        void *d_dx0 = upload_pitched(dx0, rows, d, ld, c->bf16);
        void *d_x0 = poisoned((size_t)rows * ld, c->bf16 ? 2 : 4);
        uint64_t *keys = poisoned(tt_embedding_keys(&p), 8);
        float *part = poisoned(tt_embedding_part_floats(&p), 4);
        tt_embedding_fwd(&p, gpu.stream, d_x0, d_emb, d_tok, rows, d, ld, vocab, dr);
        tt_embedding_sort(&p, gpu.stream, keys, d_tok, rows);
        tt_embedding_bwd(&p, gpu.stream, d_demb, keys, part, d_dx0, rows, d, ld, vocab, dr);
        float *g_x0 = download_pitched(d_x0, rows, d, ld, c->bf16, "embedding_fwd x0");
        float *g_demb = download(d_demb, ne, 0);
        compare("embedding_fwd", c, g_x0, x0, nd, c->bf16 ? 1e-2 : 1e-5);
        compare("embedding_bwd", c, g_demb, demb, ne, 1e-5);
        /* embedding_sort's own twin: the keys (token, row) in ascending order, then padding. A
         * sort that split a token's run would still sum right when blocks happen to run in
         * order, so the keys are checked themselves. */
        const size_t nk = tt_embedding_keys(&p);
        uint64_t *want_keys = tt_xmalloc(nk * 8), *got_keys = tt_xmalloc(nk * 8);
        for (size_t i = 0; i < nk; i++)
            want_keys[i] = i < (size_t)rows ? (uint64_t)(uint32_t)tok[i] << 32 | i : ~0ull;
        qsort(want_keys, (size_t)rows, 8, cmp_u64);
        TT_CUDA(cudaMemcpy(got_keys, keys, nk * 8, cudaMemcpyDeviceToHost));
        if (memcmp(got_keys, want_keys, nk * 8) != 0)
            fail_msg("embedding_sort %s: keys out of order", c->name);
        free(want_keys), free(got_keys);
        /* the same again: bit for bit */
        TT_CUDA(cudaMemcpy(d_demb, demb0, ne * 4, cudaMemcpyHostToDevice));
        tt_embedding_bwd(&p, gpu.stream, d_demb, keys, part, d_dx0, rows, d, ld, vocab, dr);
        float *g_demb2 = download(d_demb, ne, 0);
        if (memcmp(g_demb, g_demb2, ne * 4) != 0)
            fail_msg("embedding_bwd %s: two runs differ", c->name);
        cudaFree(d_emb), cudaFree(d_demb), cudaFree(d_tok), cudaFree(d_dx0), cudaFree(d_x0);
        cudaFree(keys), cudaFree(part);
        free(tok), free(emb), free(demb0), free(dx0), free(x0), free(dd), free(demb), free(mask);
        free(g_x0), free(g_demb), free(g_demb2);
        tt_gpu_program_free(&p);
        tt_spec_free(&s);
    }
}

/* The rows of each cluster ([lo[c], hi[c]) of ids) as gpu_model.c's route_batch lists them:
 * ascending, then -1 up to a multiple of 64; pos[r] is row r's place in its list. Returns the
 * padded lengths in m. */
enum { ADAPTIVE_CLUSTERS = 3 };
static const int adaptive_lo[ADAPTIVE_CLUSTERS] = {0, 20, 50}, adaptive_hi[ADAPTIVE_CLUSTERS] = {20, 50, 100};
static void adaptive_lists(const int32_t *ids, int rows, int32_t *idx[ADAPTIVE_CLUSTERS],
                           int32_t *pos, int m[ADAPTIVE_CLUSTERS])
{
    for (int c = 0; c < ADAPTIVE_CLUSTERS; c++) {
        int k = 0;
        idx[c] = tt_xmalloc((size_t)(rows + 64) * sizeof *idx[c]);
        for (int r = 0; r < rows; r++)
            if (ids[r] >= adaptive_lo[c] && ids[r] < adaptive_hi[c]) {
                if (pos) pos[r] = k;
                idx[c][k++] = r;
            }
        m[c] = (k + 63) / 64 * 64;
        for (int i = k; i < m[c]; i++) idx[c][i] = -1;
    }
}

/* The adaptive embedding (div_val 2: cluster widths d, d/2, d/4, hence other vector widths at
 * d = 100) and the adaptive softmax's tails against their twins, written out here as
 * cpu_model.c's embed, embed_bwd and output_layer compute them around the products: a vocabulary
 * of 100 with cutoffs 20 and 50; id 25 in every third row (a run of one token longer than a
 * block). x0 starts poisoned (every row must come from its cluster); dE_c and dx are added into
 * and start from random values. */
static void test_adaptive(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < sizeof configs / sizeof *configs; ci++) {
        const config *c = &configs[ci];
        if (skip_name(c->name)) continue;
        tt_spec s;
        tt_gpu_program p;
        load_lm_program(c, 32, 2, ", adaptive: {cutoffs: [20, 50], div_val: 2}", &s, &p);
        const int rows = c->batch * c->n, d = c->d, bf = c->bf16;
        const int ld = (int)tt_row_pitch(d) + 8; /* x0, dx0, x, dx: padded rows, NaN between */
        const size_t nd = (size_t)rows * d, es = bf ? 2 : 4;
        const float scale = (float)sqrt((double)d);
        const double tol = bf ? 1e-2 : 1e-5;
        int32_t *tok = tt_xmalloc((size_t)rows * sizeof *tok), *pos = tt_xmalloc((size_t)rows * 4);
        for (int r = 0; r < rows; r++)
            tok[r] = r % 3 == 1 ? 25 : (int32_t)(tt_uniform(seed, draws, (uint64_t)r) * 100);
        tok[0] = 5, tok[2] = 75; /* every cluster has rows */
        draws++;
        int32_t *idx[ADAPTIVE_CLUSTERS];
        int m[ADAPTIVE_CLUSTERS];
        adaptive_lists(tok, rows, idx, pos, m);
        int32_t *d_tok = upload_bytes(tok, (size_t)rows * 4), *d_pos = upload_bytes(pos, (size_t)rows * 4);
        const tt_dropout dr = test_dropout(0.25f);

        /* forward: e = E_c rows of the listed tokens; x0[idx] = dropout(y * sqrt(d)), y standing
         * for the projection cuBLAS computes from e */
        float *z = tt_xcalloc(nd, 4), *x0 = tt_xmalloc(nd * 4);
        uint8_t *mask = tt_xmalloc(nd);
        void *d_x0 = poisoned((size_t)rows * ld, es);
        float *emb[ADAPTIVE_CLUSTERS];
        int32_t *d_idx[ADAPTIVE_CLUSTERS];
        for (int k = 0, dim = d; k < ADAPTIVE_CLUSTERS; k++, dim /= 2) {
            const int vc = adaptive_hi[k] - adaptive_lo[k];
            d_idx[k] = upload_bytes(idx[k], (size_t)m[k] * 4);
            emb[k] = tt_xmalloc((size_t)vc * dim * 4);
            randn(emb[k], (size_t)vc * dim, 0.5f);
            float *e = tt_xcalloc((size_t)m[k] * dim, 4), *y = tt_xmalloc((size_t)m[k] * d * 4);
            randn(y, (size_t)m[k] * d, 1.f);
            for (int i = 0; i < m[k]; i++)
                if (idx[k][i] >= 0) {
                    const int r = idx[k][i];
                    memcpy(e + (size_t)i * dim, emb[k] + (size_t)(tok[r] - adaptive_lo[k]) * dim, dim * 4);
                    for (int j = 0; j < d; j++) z[(size_t)r * d + j] = y[(size_t)i * d + j] * scale;
                }
            tt_round_storage(e, (size_t)m[k] * dim, bf);
            float *d_emb = upload(emb[k], (size_t)vc * dim, 0), *d_y = upload(y, (size_t)m[k] * d, 0);
            void *d_e = poisoned((size_t)m[k] * dim, es);
            tt_adaptive_emb_gather(&p, gpu.stream, d_e, d_emb, d_tok, d_idx[k], m[k],
                                   adaptive_lo[k], vc, dim);
            tt_adaptive_emb_scatter(&p, gpu.stream, d_x0, d_y, d_idx[k], m[k], d, ld, dr);
            float *g_e = download(d_e, (size_t)m[k] * dim, bf);
            char name[32];
            snprintf(name, sizeof name, "adaptive_emb_gather %d", k);
            compare(name, c, g_e, e, (size_t)m[k] * dim, 0);
            cudaFree(d_emb), cudaFree(d_y), cudaFree(d_e);
            free(e), free(y), free(g_e);
        }
        tt_cpu_dropout(x0, mask, z, (long)nd, dr);
        tt_round_storage(x0, nd, bf);
        float *g_x0 = download_pitched(d_x0, rows, d, ld, bf, "adaptive_emb_scatter x0");
        compare("adaptive_emb_scatter", c, g_x0, x0, nd, tol);

        /* backward: dy = dropout_bwd(dx0[idx]) * sqrt(d); then dE_c[t - lo] += de[pos[r]] in row
         * order along embedding_sort's keys (de standing for dy P_c from cuBLAS) */
        float *dx0 = tt_xmalloc(nd * 4), *dd = tt_xmalloc(nd * 4);
        randn(dx0, nd, 1.f);
        tt_round_storage(dx0, nd, bf);
        cpu_dropout_bwd(dd, dx0, mask, (long)nd, dr.p);
        void *d_dx0 = upload_pitched(dx0, rows, d, ld, bf);
        uint64_t *keys = poisoned(tt_embedding_keys(&p), 8);
        float *part = poisoned(tt_embedding_part_floats(&p), 4);
        tt_embedding_sort(&p, gpu.stream, keys, d_tok, rows);
        for (int k = 0, dim = d; k < ADAPTIVE_CLUSTERS; k++, dim /= 2) {
            const int vc = adaptive_hi[k] - adaptive_lo[k];
            float *dy = tt_xcalloc((size_t)m[k] * d, 4), *de = tt_xmalloc((size_t)m[k] * dim * 4);
            for (int i = 0; i < m[k]; i++)
                for (int j = 0; j < d && idx[k][i] >= 0; j++)
                    dy[(size_t)i * d + j] = dd[(size_t)idx[k][i] * d + j] * scale;
            tt_round_storage(dy, (size_t)m[k] * d, bf);
            randn(de, (size_t)m[k] * dim, 1.f);
            tt_round_storage(de, (size_t)m[k] * dim, bf);
            float *demb0 = tt_xmalloc((size_t)vc * dim * 4), *demb = tt_xmalloc((size_t)vc * dim * 4);
            randn(demb0, (size_t)vc * dim, 0.1f);
            memcpy(demb, demb0, (size_t)vc * dim * 4);
            for (int r = 0; r < rows; r++)
                if (tok[r] >= adaptive_lo[k] && tok[r] < adaptive_hi[k])
                    for (int j = 0; j < dim; j++)
                        demb[(size_t)(tok[r] - adaptive_lo[k]) * dim + j] += de[(size_t)pos[r] * dim + j];
            void *d_dy = poisoned((size_t)m[k] * d, es), *d_de = upload(de, (size_t)m[k] * dim, bf);
            float *d_demb = upload(demb0, (size_t)vc * dim, 0);
            tt_adaptive_emb_grad(&p, gpu.stream, d_dy, d_dx0, d_idx[k], m[k], d, ld, dr);
            tt_adaptive_emb_bwd(&p, gpu.stream, d_demb, keys, part, d_de, d_pos, rows,
                                adaptive_lo[k], vc, dim);
            float *g_dy = download(d_dy, (size_t)m[k] * d, bf), *g_demb = download(d_demb, (size_t)vc * dim, 0);
            char name[32];
            snprintf(name, sizeof name, "adaptive_emb_grad %d", k);
            compare(name, c, g_dy, dy, (size_t)m[k] * d, tol);
            snprintf(name, sizeof name, "adaptive_emb_bwd %d", k);
            compare(name, c, g_demb, demb, (size_t)vc * dim, 1e-6);
            /* the same again: bit for bit */
            TT_CUDA(cudaMemcpy(d_demb, demb0, (size_t)vc * dim * 4, cudaMemcpyHostToDevice));
            tt_adaptive_emb_bwd(&p, gpu.stream, d_demb, keys, part, d_de, d_pos, rows,
                                adaptive_lo[k], vc, dim);
            float *g_demb2 = download(d_demb, (size_t)vc * dim, 0);
            if (memcmp(g_demb, g_demb2, (size_t)vc * dim * 4) != 0)
                fail_msg("adaptive_emb_bwd %s: two runs differ", c->name);
            cudaFree(d_dy), cudaFree(d_de), cudaFree(d_demb);
            free(dy), free(de), free(demb0), free(demb), free(g_dy), free(g_demb), free(g_demb2);
        }

        /* the softmax's tails, listed by targets: xc = x[idx], and dx[idx] += dxc */
        int32_t *tgt = tt_xmalloc((size_t)rows * 4), *tidx[ADAPTIVE_CLUSTERS];
        int tm[ADAPTIVE_CLUSTERS];
        for (int r = 0; r < rows; r++) tgt[r] = (int32_t)(tt_uniform(seed, draws, (uint64_t)r) * 100);
        tgt[0] = 30, tgt[1] = 80; /* both tails have rows */
        draws++;
        adaptive_lists(tgt, rows, tidx, NULL, tm);
        float *x = tt_xmalloc(nd * 4), *dx = tt_xmalloc(nd * 4);
        randn(x, nd, 1.f);
        randn(dx, nd, 1.f);
        tt_round_storage(x, nd, bf);
        tt_round_storage(dx, nd, bf);
        void *d_x = upload_pitched(x, rows, d, ld, bf), *d_dx = upload_pitched(dx, rows, d, ld, bf);
        for (int k = 1; k < ADAPTIVE_CLUSTERS; k++) {
            const size_t n = (size_t)tm[k] * d, np = (size_t)tm[k] * ld;
            float *xc = tt_xcalloc(n, 4), *dxc = tt_xmalloc(n * 4);
            randn(dxc, n, 1.f);
            tt_round_storage(dxc, n, bf);
            for (int i = 0; i < tm[k]; i++)
                for (int j = 0; j < d && tidx[k][i] >= 0; j++) {
                    xc[(size_t)i * d + j] = x[(size_t)tidx[k][i] * d + j];
                    dx[(size_t)tidx[k][i] * d + j] += dxc[(size_t)i * d + j];
                }
            int32_t *d_tidx = upload_bytes(tidx[k], (size_t)tm[k] * 4);
            void *d_xc = poisoned(np, es), *d_dxc = upload_pitched(dxc, tm[k], d, ld, bf);
            tt_adaptive_gather(&p, gpu.stream, d_xc, d_x, d_tidx, tm[k], d, ld);
            tt_adaptive_scatter_add(&p, gpu.stream, d_dx, d_dxc, d_tidx, tm[k], d, ld);
            float *g_xc = download_pitched(d_xc, tm[k], d, ld, bf, "adaptive_gather xc");
            char name[32];
            snprintf(name, sizeof name, "adaptive_gather %d", k);
            compare(name, c, g_xc, xc, n, 0);
            cudaFree(d_tidx), cudaFree(d_xc), cudaFree(d_dxc);
            free(xc), free(dxc), free(g_xc), free(tidx[k]);
        }
        tt_round_storage(dx, nd, bf);
        float *g_dx = download_pitched(d_dx, rows, d, ld, bf, "adaptive_scatter_add dx");
        compare("adaptive_scatter_add", c, g_dx, dx, nd, tol);

        for (int k = 0; k < ADAPTIVE_CLUSTERS; k++) {
            cudaFree(d_idx[k]);
            free(idx[k]), free(emb[k]);
        }
        free(tidx[0]);
        cudaFree(d_tok), cudaFree(d_pos), cudaFree(d_x0), cudaFree(d_dx0), cudaFree(keys);
        cudaFree(part);
        cudaFree(d_x), cudaFree(d_dx);
        free(tok), free(pos), free(z), free(x0), free(mask), free(g_x0), free(dx0), free(dd);
        free(tgt), free(x), free(dx), free(g_dx);
        tt_gpu_program_free(&p);
        tt_spec_free(&s);
    }
}

/* The core and its backward (added into dtheta) for 1 to 40 cores at each config's rank. */
static void test_core(void **state)
{
    (void)state;
    static const int cores[] = {2, 1, 8, 40};
    for (size_t ci = 0; ci < sizeof configs / sizeof *configs; ci++) {
        const config *c = &configs[ci];
        if (skip_name(c->name) || c->bf16) continue; /* fp32 throughout: the storage type is unused */
        const int h = cores[ci / 2 % (sizeof cores / sizeof *cores)], r = c->r;
        tt_spec s;
        tt_gpu_program p;
        load_lm_program(c, 32, h, "", &s, &p);
        const size_t nt = (size_t)h * r;
        float *theta = tt_xmalloc(nt * 4), *dg = tt_xmalloc(r * 4), *dt0 = tt_xmalloc(nt * 4);
        randn(theta, nt, 1.5f);
        randn(dg, r, 1.f);
        randn(dt0, nt, 0.1f);
        float *g = tt_xmalloc(r * 4), *dt = tt_xmalloc(nt * 4);
        cpu_core_fwd(g, theta, h, r);
        memcpy(dt, dt0, nt * 4);
        cpu_core_bwd(dt, dg, theta, h, r);
        float *d_theta = upload(theta, nt, 0), *d_dg = upload(dg, r, 0), *d_dt = upload(dt0, nt, 0);
        float *d_g = poisoned(r, 4);
        tt_core_fwd(&p, gpu.stream, d_g, d_theta, h, r, 1, 0, 0);
        tt_core_bwd(&p, gpu.stream, d_dt, d_dg, d_theta, h, r, 1, 0, 0);
        float *g_g = download(d_g, r, 0), *g_dt = download(d_dt, nt, 0);
        char name[32];
        snprintf(name, sizeof name, "%s h=%d", c->name, h);
        config cc = *c;
        cc.name = name;
        compare("core_fwd", &cc, g_g, g, r, 1e-5);
        compare("core_bwd", &cc, g_dt, dt, nt, 1e-5);
        cudaFree(d_theta), cudaFree(d_dg), cudaFree(d_dt), cudaFree(d_g);
        free(theta), free(dg), free(dt0), free(g), free(dt), free(g_g), free(g_dt);
        /* three layers in one launch, as the trainer runs them: each layer's own theta and dg
         * at strides with gaps, which stay unwritten (NaN) */
        enum { L = 3 };
        const long long gs = r + 5, ts = (long long)nt + 7;
        const size_t ng = (size_t)(L - 1) * gs + r, nth = (size_t)(L - 1) * ts + nt;
        float *th3 = tt_xmalloc(nth * 4), *dg3 = tt_xmalloc(ng * 4), *dt3 = tt_xmalloc(nth * 4);
        randn(th3, nth, 1.5f);
        randn(dg3, ng, 1.f);
        randn(dt3, nth, 0.1f);
        float *d_th3 = upload(th3, nth, 0), *d_dg3 = upload(dg3, ng, 0), *d_dt3 = upload(dt3, nth, 0);
        float *d_g3 = poisoned(ng, 4);
        tt_core_fwd(&p, gpu.stream, d_g3, d_th3, h, r, L, gs, ts);
        tt_core_bwd(&p, gpu.stream, d_dt3, d_dg3, d_th3, h, r, L, gs, ts);
        float *g_g3 = download(d_g3, ng, 0), *g_dt3 = download(d_dt3, nth, 0);
        float *want_g = tt_xmalloc(r * 4), *want_dt = tt_xmalloc(nt * 4);
        for (int l = 0; l < L; l++) {
            cpu_core_fwd(want_g, th3 + l * ts, h, r);
            memcpy(want_dt, dt3 + l * ts, nt * 4);
            cpu_core_bwd(want_dt, dg3 + l * gs, th3 + l * ts, h, r);
            compare("core_fwd L3", &cc, g_g3 + l * gs, want_g, r, 1e-5);
            compare("core_bwd L3", &cc, g_dt3 + l * ts, want_dt, nt, 1e-5);
            for (long long i = r; l < L - 1 && i < gs; i++)
                if (!isnan(g_g3[l * gs + i])) fail_msg("core_fwd %s: g written between layers", name);
            for (long long i = (long long)nt; l < L - 1 && i < ts; i++)
                if (g_dt3[l * ts + i] != dt3[l * ts + i])
                    fail_msg("core_bwd %s: dtheta written between layers", name);
        }
        cudaFree(d_th3), cudaFree(d_dg3), cudaFree(d_dt3), cudaFree(d_g3);
        free(th3), free(dg3), free(dt3), free(g_g3), free(g_dt3), free(want_g), free(want_dt);
        tt_gpu_program_free(&p);
        tt_spec_free(&s);
    }
}

/* Cross-entropy over rows of 10000 (vector path), 30001 and 517 logits, and of 30003 and 20003
 * logits in rows 30008 and 20008 apart (as the adaptive head's: the vector path with a
 * remainder, the padding NaN: reading it fails), with and without label smoothing, rows of weight
 * 0, 0.5 and 1, in the fp32 instance and in the bf16 one (logits and their gradient in bf16, as
 * the bf16 path's products write and read them). The logits are bf16 values, so both instances
 * read the same numbers: the fp32 one against cpu_cross_entropy row by row, scaled by the weight
 * as cpu_model.c's output layer does; the bf16 one's loss the same, and its gradient the fp32
 * instance's rounded, bit for bit. Without grad the logits must stay as they were. */
static void test_xent(void **state)
{
    (void)state;
    static const int vocabs[] = {10000, 30001, 517, 30003, 20003},
                     lds[] = {10000, 30001, 517, 30008, 20008};
    static const float epss[] = {0.f, 0.1f, 0.1f, 0.1f, 0.f};
    /* a vocabulary of 20003: rows up to it take xent (kept whole in shared memory between the
     * passes), longer ones xent_long (which keeps as many logits as 20003, the rest read again) */
    tt_spec s[2];
    tt_gpu_program p[2];
    for (int bf = 0; bf < 2; bf++) {
        char text[256], err[4096];
        snprintf(text, sizeof text, "model: {kind: tensorized, vocab: 20003, d_model: 32, layers: 1, "
                 "rank: 8, cores: 2, seq_len: 16, d_inner: 32}\ntrain: {batch: 4, precision: %s}\n",
                 bf ? "bf16" : "fp32");
        if (tt_spec_parse(text, strlen(text), "test", ".", &s[bf], err, sizeof err) != 0) fail_msg("%s", err);
        if (tt_gpu_program_load(&p[bf], &s[bf], &gpu, &cache, err, sizeof err) != 0) fail_msg("%s", err);
        assert_int_equal(tt_kernel_const(tt_gpu_kernel_of(&p[bf], "xent")->k, "HEAD", -1), 20003);
    }
    for (size_t vi = 0; vi < sizeof vocabs / sizeof *vocabs; vi++) {
        const int v = vocabs[vi], ld = lds[vi], rows = 37;
        const float eps = epss[vi];
        const size_t nl = (size_t)rows * v, np = (size_t)rows * ld;
        float *logits = tt_xmalloc(nl * 4), *weight = tt_xmalloc(rows * 4);
        int32_t *tgt = tt_xmalloc((size_t)rows * sizeof *tgt);
        randn(logits, nl, 2.f);
        tt_round_storage(logits, nl, 1);
        float *pitched = tt_xmalloc(np * 4); /* rows ld apart, NaN between */
        for (size_t e = 0; e < np; e++) pitched[e] = NAN;
        for (int r = 0; r < rows; r++) memcpy(pitched + (size_t)r * ld, logits + (size_t)r * v, (size_t)v * 4);
        double wsum = 0;
        for (int r = 0; r < rows; r++) {
            tgt[r] = (int32_t)(tt_uniform(seed, draws, (uint64_t)r) * v);
            weight[r] = r % 5 == 0 ? 0.f : (r % 5 == 1 ? 0.5f : 1.f);
            wsum += weight[r];
        }
        draws++;
        const float scale = (float)(1.0 / wsum);
        /* CPU */
        float *dl = tt_xcalloc(nl, 4), *loss = tt_xmalloc(rows * 4), *nll = tt_xmalloc(rows * 4);
        double loss_sum = 0, nll_sum = 0;
        for (int r = 0; r < rows; r++) {
            if (weight[r] == 0.f) {
                loss[r] = nll[r] = 0.f;
                continue;
            }
            double n1;
            const double l = cpu_cross_entropy(dl + (size_t)r * v, &n1, logits + (size_t)r * v,
                                               tgt + r, 1, v, eps, scale * weight[r]);
            loss[r] = (float)(weight[r] * l);
            nll[r] = (float)(weight[r] * n1);
            loss_sum += weight[r] * l;
            nll_sum += weight[r] * n1;
        }
        float *g_dl = tt_xmalloc(nl * 4), *g32 = tt_xmalloc(nl * 4); /* the fp32 instance's */
        for (int bf = 0; bf < 2; bf++) {
            char name[48];
            snprintf(name, sizeof name, "xent V=%d ld=%d e=%.1f", v, ld, eps);
            const config cc = {name, 0, 0, 0, 0, 0, 0, 0, bf, 0, 0}, *c = &cc;
            /* GPU: the loss only, then with the gradient in place */
            void *d_logits = upload(pitched, np, bf);
            float *d_w = upload(weight, rows, 0);
            int32_t *d_t = upload_bytes(tgt, (size_t)rows * sizeof *tgt);
            float *d_loss = poisoned(rows, 4), *d_nll = poisoned(rows, 4);
            double *d_sums = poisoned(2, 8);
            tt_xent(&p[bf], gpu.stream, d_loss, d_nll, d_logits, d_t, d_w, rows, v, ld, eps, scale, false);
            float *g_same = download(d_logits, np, bf);
            if (memcmp(g_same, pitched, np * 4) != 0) fail_msg("xent %s: logits changed without grad", name);
            TT_CUDA(cudaMemset(d_loss, 0xff, rows * 4));
            TT_CUDA(cudaMemset(d_nll, 0xff, rows * 4));
            tt_xent(&p[bf], gpu.stream, d_loss, d_nll, d_logits, d_t, d_w, rows, v, ld, eps, scale, true);
            tt_xent_sum(&p[bf], gpu.stream, d_sums, d_loss, d_nll, rows);
            float *g_dlp = download(d_logits, np, bf), *g_loss = download(d_loss, rows, 0),
                  *g_nll = download(d_nll, rows, 0);
            /* the rows' v values; the padding must have stayed NaN (never written) */
            for (int r = 0; r < rows; r++) {
                memcpy(g_dl + (size_t)r * v, g_dlp + (size_t)r * ld, (size_t)v * 4);
                for (int i = v; i < ld; i++)
                    if (!isnan(g_dlp[(size_t)r * ld + i]))
                        fail_msg("xent %s: row %d's padding written", name, r);
            }
            double sums[2];
            TT_CUDA(cudaMemcpy(sums, d_sums, sizeof sums, cudaMemcpyDeviceToHost));
            compare("xent loss", c, g_loss, loss, rows, 1e-5);
            compare("  nll", c, g_nll, nll, rows, 1e-5);
            if (!bf) {
                compare("  dlogits", c, g_dl, dl, nl, 1e-5);
                memcpy(g32, g_dl, nl * 4);
            } else { /* the fp32 instance's gradient rounded: bit for bit */
                tt_round_storage(g32, nl, 1);
                compare("  dlogits", c, g_dl, g32, nl, 0.0);
            }
            const float got[2] = {(float)sums[0], (float)sums[1]};
            const float want[2] = {(float)loss_sum, (float)nll_sum};
            compare("  sums", c, got, want, 2, 1e-6);
            cudaFree(d_logits), cudaFree(d_w), cudaFree(d_t), cudaFree(d_loss), cudaFree(d_nll);
            cudaFree(d_sums);
            free(g_dlp), free(g_loss), free(g_nll), free(g_same);
        }
        free(pitched), free(logits), free(weight), free(tgt), free(dl), free(loss), free(nll);
        free(g_dl), free(g32);
    }
    for (int bf = 0; bf < 2; bf++) {
        tt_gpu_program_free(&p[bf]);
        tt_spec_free(&s[bf]);
    }
}

/* The largest distance in units in the last place between two float arrays (0: the same bits). */
static long max_ulps(const float *a, const float *b, size_t n, size_t *differ)
{
    long worst = 0;
    *differ = 0;
    for (size_t i = 0; i < n; i++) {
        const long dist = tt_ulps_apart(a[i], b[i]);
        *differ += dist != 0;
        worst = dist > worst ? dist : worst;
    }
    return worst;
}

/* Gradient norm, clipping and Adam against tt_clip_grad_norm and tt_adam_step: w, m and v within
 * one float rounding (the kernels do the CPU's operations in its order, so bit-equal is what is
 * expected), with and without clipping and weight decay, on whole arrays (16-byte path) and on
 * arrays shifted by one float (the scalar path). The bf16 copy is the rounded w. The guarded
 * step (under a step guard, tt_grad_norm_guarded and tt_adam_guarded, g's element 0 the flat
 * gradient's 1000): with a NaN and an infinity in the gradient (variant 3), an infinite loss
 * (variant 4), or halt after a skipped step (variant 5, all finite), w, m, v and the copy keep
 * their bits, the guard says skip (and so does the word kept for the next step), and first_bad
 * is the base plus the least index of a non-finite element (variant 3; none otherwise). */
static void test_adam(void **state)
{
    (void)state;
    for (size_t ci = 0; ci < 2; ci++) {
        const config *c = &configs[ci];
        tt_spec s;
        tt_gpu_program p;
        load_program(c, &s, &p);
        for (int variant = 0; variant < 6; variant++) {
            const size_t off = variant == 2, n = 100003 - off;
            const bool guarded = variant >= 3;
            const double clip = variant == 1 ? 0 : 0.25;
            tt_train_spec t = s.train;
            t.weight_decay = variant == 1 ? 0 : 0.01;
            const long step = 7;
            const double lr = 2.5e-4;
            float *w = tt_xmalloc((n + 1) * 4), *g = tt_xmalloc((n + 1) * 4),
                  *m = tt_xmalloc((n + 1) * 4), *v = tt_xmalloc((n + 1) * 4);
            randn(w, n + 1, 0.02f);
            randn(g, n + 1, 0.01f);
            randn(m, n + 1, 0.01f);
            randn(v, n + 1, 1e-4f);
            for (size_t i = 0; i < n + 1; i++) v[i] = fabsf(v[i]);
            if (variant == 3) g[off + 2 * n / 3] = INFINITY, g[off + n / 3] = NAN;
            const double loss = variant == 4 ? INFINITY : 4.25; /* the loss sum adam reads */
            /* GPU first (the CPU updates in place) */
            float *d_w = upload(w, n + 1, 0), *d_g = upload(g, n + 1, 0), *d_m = upload(m, n + 1, 0),
                  *d_v = upload(v, n + 1, 0);
            double *d_loss = upload_bytes(&loss, sizeof loss);
            void *d_copy = poisoned(n + 1, c->bf16 ? 2 : 4);
            void *copy0 = tt_xmalloc((n + 1) * (c->bf16 ? 2 : 4));
            TT_CUDA(cudaMemcpy(copy0, d_copy, (n + 1) * (c->bf16 ? 2 : 4), cudaMemcpyDeviceToHost));
            tt_adam_scalars host;
            tt_adam_scalars_at(&host, &t, lr, step);
            tt_adam_scalars *d_sc = upload_bytes(&host, sizeof host);
            const size_t np = tt_grad_norm_parts(&p);
            double *part = poisoned(np, 8);
            TT_CUDA(cudaMemset(part + np - 1, 0, 8)); /* the count of blocks done */
            const tt_step_guard guard0 = {.halt = variant == 5, .skip = 0, .first_bad = LLONG_MAX};
            tt_step_guard *d_guard = guarded ? upload_bytes(&guard0, sizeof guard0) : NULL;
            const unsigned last0 = variant == 5; /* the last guarded step skipped */
            unsigned *d_last = upload_bytes(&last0, sizeof last0);
            tt_grad_norm_guarded(&p, gpu.stream, d_sc, part, d_g + off, n, clip, d_guard, d_loss,
                                 d_last);
            tt_adam_guarded(&p, gpu.stream, d_w + off, d_m + off, d_v + off,
                            (char *)d_copy + off * (c->bf16 ? 2 : 4), d_g + off, d_sc, d_loss, n,
                            &t, NULL, 0, d_guard, 1000);
            float *g_w = download(d_w, n + 1, 0), *g_m = download(d_m, n + 1, 0),
                  *g_v = download(d_v, n + 1, 0), *g_copy = download(d_copy, n + 1, c->bf16);
            TT_CUDA(cudaMemcpy(&host, d_sc, sizeof host, cudaMemcpyDeviceToHost));
            if (guarded) {
                const char *name = variant == 3   ? "adam, a NaN gradient"
                                   : variant == 4 ? "adam, an infinite loss"
                                                  : "adam, halted after a skip";
                void *g_copy0 = tt_xmalloc((n + 1) * (c->bf16 ? 2 : 4));
                TT_CUDA(cudaMemcpy(g_copy0, d_copy, (n + 1) * (c->bf16 ? 2 : 4),
                                   cudaMemcpyDeviceToHost));
                const bool same = !memcmp(g_w, w, (n + 1) * 4) && !memcmp(g_m, m, (n + 1) * 4) &&
                                  !memcmp(g_v, v, (n + 1) * 4) &&
                                  !memcmp(g_copy0, copy0, (n + 1) * (c->bf16 ? 2 : 4));
                printf("  %-28s norm %g: w, m, v and the copy %s\n", name, host.norm,
                       same ? "unchanged" : "CHANGED");
                if (variant == 3 && !isnan(host.norm)) fail_msg("%s: norm %g, want NaN", name, host.norm);
                if (!same) fail_msg("%s: the step changed the weights or moments", name);
                tt_step_guard got;
                unsigned last;
                TT_CUDA(cudaMemcpy(&got, d_guard, sizeof got, cudaMemcpyDeviceToHost));
                TT_CUDA(cudaMemcpy(&last, d_last, sizeof last, cudaMemcpyDeviceToHost));
                const long long want_bad = variant == 3 ? 1000 + (long long)(n / 3) : LLONG_MAX;
                printf("  %-28s guard: skip %g, last %u, first_bad %lld (want %lld)\n", name,
                       got.skip, last, got.first_bad, want_bad);
                if (got.skip != 1 || last != 1 || got.first_bad != want_bad)
                    fail_msg("%s: guard skip %g, last %u, first_bad %lld (want 1, 1, %lld)", name,
                             got.skip, last, got.first_bad, want_bad);
                free(g_copy0);
            }
            if (guarded) goto next;
            /* CPU */
            const double norm = tt_clip_grad_norm(g + off, n, clip);
            tt_adam_step(w + off, g + off, m + off, v + off, n, &t, lr, step);
            char name[48];
            snprintf(name, sizeof name, "adam %s%s", variant == 1 ? "noclip-nowd" : "clip-wd",
                     off ? " shifted" : "");
            printf("  grad norm %-20s gpu %.17g cpu %.17g, clip factor %.9g\n", name, host.norm, norm,
                   host.clip);
            if (!(fabs(host.norm - norm) <= 1e-12 * norm))
                fail_msg("%s: norm %.17g, want %.17g", name, host.norm, norm);
            if (variant == 1 ? host.clip != 1.0 : !(host.clip < 1.0))
                fail_msg("%s: clip factor %.17g", name, host.clip);
            const float *got[3] = {g_w + off, g_m + off, g_v + off};
            const float *want[3] = {w + off, m + off, v + off};
            const char *what[3] = {"w", "m", "v"};
            for (int a = 0; a < 3; a++) {
                size_t differ;
                const long u = max_ulps(got[a], want[a], n, &differ);
                printf("  %-28s %s: %zu of %zu differ, at most %ld ulp\n", name, what[a], differ, n, u);
                if (u > 1) fail_msg("%s %s: %ld ulps apart", name, what[a], u);
            }
            if (g_w[0] != w[0] && off) fail_msg("%s: the element before the slice changed", name);
            float *want_copy = tt_xmalloc(n * 4);
            memcpy(want_copy, w + off, n * 4);
            tt_round_storage(want_copy, n, c->bf16);
            config cc = *c;
            cc.name = name;
            compare("  copy of w", &cc, g_copy + off, want_copy, n, c->bf16 ? 1e-3 : 1e-6);
            free(want_copy);
        next:
            cudaFree(d_w), cudaFree(d_g), cudaFree(d_m), cudaFree(d_v), cudaFree(d_copy);
            cudaFree(d_sc), cudaFree(part), cudaFree(d_loss), cudaFree(d_last);
            if (d_guard) cudaFree(d_guard);
            free(w), free(g), free(m), free(v), free(g_w), free(g_m), free(g_v), free(g_copy);
            free(copy0);
        }
        tt_gpu_program_free(&p);
        tt_spec_free(&s);
    }
}

/* cuBLAS in nn.Linear's layout against cpu_linear_fwd/bwd, for each precision. */
static void test_gemm(void **state)
{
    (void)state;
    /* cuBLAS's kernels are not ours; compute-sanitizer's racecheck fails inside them */
    if (getenv("TT_TEST_NO_CUBLAS")) {
        print_message("skipped: TT_TEST_NO_CUBLAS is set\n");
        skip();
    }
    static const struct { tt_precision prec; double tol; const char *name; } precs[] = {
        {TT_PREC_FP32, 1e-5, "fp32"}, {TT_PREC_TF32, 1e-3, "tf32"}, {TT_PREC_BF16, 1e-2, "bf16"}};
    /* out 1003: tt_gemm_fwd_bias splits it into 1000 columns and 3 */
    static const int shapes[][3] = {{96, 256, 120}, {37, 100, 2100}, {128, 32, 10000},
                                    {40, 64, 1003}};
    for (size_t pi = 0; pi < 3; pi++)
        for (size_t si = 0; si < sizeof shapes / sizeof *shapes; si++) {
            const int rows = shapes[si][0], in = shapes[si][1], out = shapes[si][2];
            const int bf = precs[pi].prec == TT_PREC_BF16;
            const config c = {precs[pi].name, in, rows, out, 1, 0, 0, 0, bf, 0, 0};
            tt_gemm gm;
            tt_gemm_init(&gm, &gpu, precs[pi].prec);
            const size_t nx = (size_t)rows * in, nw = (size_t)out * in, ny = (size_t)rows * out;
            float *x = tt_xmalloc(nx * 4), *w = tt_xmalloc(nw * 4), *dy = tt_xmalloc(ny * 4);
            float *dw0 = tt_xmalloc(nw * 4);
            randn(x, nx, 1.f);
            randn(w, nw, 0.1f);
            randn(dy, ny, 1.f);
            randn(dw0, nw, 0.1f);
            tt_round_storage(x, nx, bf);
            tt_round_storage(w, nw, bf);
            tt_round_storage(dy, ny, bf);
            float *y = tt_xmalloc(ny * 4), *dx = tt_xmalloc(nx * 4), *dw = tt_xmalloc(nw * 4);
            memcpy(dw, dw0, nw * 4);
            cpu_linear_fwd(y, x, w, NULL, rows, in, out);
            cpu_linear_bwd(dx, dw, NULL, dy, x, w, rows, in, out);
            void *d_x = upload(x, nx, bf), *d_w = upload(w, nw, bf), *d_dy = upload(dy, ny, bf);
            float *d_dw = upload(dw0, nw, 0);
            void *d_y = poisoned(ny, bf ? 2 : 4), *d_dx = poisoned(nx, bf ? 2 : 4);
            tt_gemm_fwd(&gm, d_y, false, d_x, d_w, rows, in, out, 0.f);
            tt_gemm_bwd_x(&gm, d_dx, d_dy, d_w, rows, in, out, 0.f);
            tt_gemm_bwd_w(&gm, d_dw, d_dy, d_x, rows, in, out);
            float *gy = download(d_y, ny, bf), *gdx = download(d_dx, nx, bf), *gdw = download(d_dw, nw, 0);
            char what[64];
            snprintf(what, sizeof what, "gemm %dx%dx%d", rows, in, out);
            compare(what, &c, gy, y, ny, precs[pi].tol);
            compare("  dx", &c, gdx, dx, nx, precs[pi].tol);
            /* dw is fp32, but its products are of the precision's inputs */
            compare("  dw", &c, gdw, dw, nw, bf ? 1e-5 : precs[pi].tol);

            /* cuBLASLt with the bias in its epilogue (forward), and the bias gradient beside the
             * weight gradient (a product with ones), on a workspace of our own */
            float *bias = tt_xmalloc((size_t)out * 4), *db = tt_xcalloc((size_t)out, 4);
            float *yb = tt_xmalloc(ny * 4);
            randn(bias, (size_t)out, 1.f);
            tt_round_storage(bias, (size_t)out, bf);
            cpu_linear_fwd(yb, x, w, bias, rows, in, out);
            memcpy(dw, dw0, nw * 4);
            cpu_linear_bwd(NULL, dw, db, dy, x, w, rows, in, out);
            void *ws = NULL;
            TT_CUDA(cudaMalloc(&ws, (size_t)32 << 20));
            tt_gemm_set_workspace(&gm, ws, (size_t)32 << 20);
            void *d_b = upload(bias, (size_t)out, bf);
            float *ones = tt_xmalloc((size_t)rows * 4);
            for (int i = 0; i < rows; i++) ones[i] = 1.f;
            void *d_ones = upload(ones, (size_t)rows, bf);
            free(ones);
            float *d_db = poisoned((size_t)out, 4);
            TT_CUDA(cudaMemcpy(d_dw, dw0, nw * 4, cudaMemcpyHostToDevice));
            tt_gemm_fwd_bias(&gm, d_y, false, out, d_x, in, d_w, in, d_b, rows, in, out);
            tt_gemm_bwd_w_bias(&gm, d_dw, 1.f, d_db, d_dy, out, d_x, in, d_ones, rows, in, out);
            float *gyb = download(d_y, ny, bf), *gdwb = download(d_dw, nw, 0);
            float *gdb = download(d_db, (size_t)out, 0);
            compare("  lt y + b", &c, gyb, yb, ny, precs[pi].tol);
            compare("  lt dw", &c, gdwb, dw, nw, bf ? 1e-5 : precs[pi].tol);
            compare("  lt db", &c, gdb, db, (size_t)out, bf ? 1e-5 : precs[pi].tol);
            free(gyb), free(gdwb), free(gdb);

            /* Each operand's rows wider apart than the operand, its padding NaN (reading it
             * fails) and the outputs' checked still NaN after: as the FFN's activations and its
             * W2 copy are kept, and the logits (and into fp32 with the fp32 bias, as the logits
             * were kept before they were bf16 on the bf16 path). The cached cuBLASLt plans serve a
             * second round of the same products, whose dw is written, not added (beta 0: the
             * output layer's, over NaN here: it must not be read). */
            float *dwz = tt_xcalloc(nw, 4);
            cpu_linear_bwd(NULL, dwz, NULL, dy, x, w, rows, in, out);
            const int ldi = (int)tt_row_pitch(in + 1), ldo = (int)tt_row_pitch(out + 1);
            const size_t es = bf ? 2 : 4;
            void *p_x = upload_pitched(x, rows, in, ldi, bf), *p_w = upload_pitched(w, out, in, ldi, bf);
            void *p_dy = upload_pitched(dy, rows, out, ldo, bf);
            void *p_y = poisoned((size_t)rows * ldo, es), *p_dx = poisoned((size_t)rows * ldi, es);
            void *p_yf = poisoned((size_t)rows * ldo, 4);
            float *d_bf = upload(bias, (size_t)out, 0);
            for (int round = 0; round < 2; round++) {
                TT_CUDA(cudaMemset(d_db, 0xff, (size_t)out * 4));
                if (round) TT_CUDA(cudaMemset(d_dw, 0xff, nw * 4));
                else TT_CUDA(cudaMemcpy(d_dw, dw0, nw * 4, cudaMemcpyHostToDevice));
                tt_gemm_fwd_bias(&gm, p_yf, true, ldo, p_x, ldi, p_w, ldi, d_bf, rows, in, out);
                tt_gemm_bwd_w_bias(&gm, d_dw, round ? 0.f : 1.f, d_db, p_dy, ldo, p_x, ldi, d_ones,
                                   rows, in, out);
                float *g1 = download_pitched(p_yf, rows, out, ldo, 0, "lt y + b, ld");
                float *g2 = download(d_dw, nw, 0), *g3 = download(d_db, (size_t)out, 0);
                compare(round ? "  again" : "  lt ld y + b", &c, g1, yb, ny, precs[pi].tol);
                compare(round ? "  lt ld dw = " : "  lt ld dw", &c, g2, round ? dwz : dw, nw,
                        bf ? 1e-5 : precs[pi].tol);
                compare("  lt ld db", &c, g3, db, (size_t)out, bf ? 1e-5 : precs[pi].tol);
                free(g1), free(g2), free(g3);
            }
            TT_CUDA(cudaMemcpy(d_dw, dw0, nw * 4, cudaMemcpyHostToDevice));
            tt_gemm_fwd_ld(&gm, p_y, false, ldo, p_x, ldi, p_w, ldi, rows, in, out, 0.f);
            tt_gemm_bwd_x_ld(&gm, p_dx, ldi, p_dy, ldo, p_w, ldi, rows, in, out, 0.f);
            tt_gemm_bwd_w_ld(&gm, d_dw, 1.f, p_dy, ldo, p_x, ldi, rows, in, out);
            float *g1 = download_pitched(p_y, rows, out, ldo, bf, "gemm y, ld");
            float *g2 = download_pitched(p_dx, rows, in, ldi, bf, "gemm dx, ld");
            float *g3 = download(d_dw, nw, 0);
            compare("  ld y", &c, g1, y, ny, precs[pi].tol);
            compare("  ld dx", &c, g2, dx, nx, precs[pi].tol);
            compare("  ld dw", &c, g3, dw, nw, bf ? 1e-5 : precs[pi].tol);
            free(g1), free(g2), free(g3);
            /* dw written into the first columns of a wider one (rows ldw apart), as the
             * materialized attention's dWo takes a tile of positions' columns (gpu/mla_mat.c):
             * the columns past in stay as they were (NaN here) */
            const int ldw = (int)tt_row_pitch(in + 3);
            float *p_dw = poisoned((size_t)out * ldw, 4);
            tt_gemm_bwd_w_ldw(&gm, p_dw, ldw, 0.f, p_dy, ldo, p_x, ldi, rows, in, out);
            float *g4 = download_pitched(p_dw, out, in, ldw, 0, "gemm dw, ldw");
            compare("  ldw dw =", &c, g4, dwz, nw, bf ? 1e-5 : precs[pi].tol);
            free(g4);
            cudaFree(p_dw);
            cudaFree(p_x), cudaFree(p_w), cudaFree(p_dy), cudaFree(p_y), cudaFree(p_dx);
            cudaFree(p_yf), cudaFree(d_bf);
            free(dwz);
            tt_gemm_set_workspace(&gm, NULL, 0);
            cudaFree(ws), cudaFree(d_b), cudaFree(d_db), cudaFree(d_ones);
            free(bias), free(db), free(yb);
            tt_gemm_free(&gm);

            cudaFree(d_x), cudaFree(d_w), cudaFree(d_dy), cudaFree(d_dw), cudaFree(d_y), cudaFree(d_dx);
            free(x), free(w), free(dy), free(dw0), free(y), free(dx), free(dw), free(gy), free(gdx), free(gdw);
        }
}

int main(void)
{
    seed = tu_seed();
    const int open_rc = tu_gpu_open(&gpu, &cache, seed);
    if (open_rc) return open_rc;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_units_configs),
        cmocka_unit_test(test_plants),
        cmocka_unit_test(test_units_specs),
        cmocka_unit_test(test_layernorm),
        cmocka_unit_test(test_colsums),
        cmocka_unit_test(test_gemm),
        cmocka_unit_test(test_embedding),
        cmocka_unit_test(test_adaptive),
        cmocka_unit_test(test_core),
        cmocka_unit_test(test_xent),
        cmocka_unit_test(test_adam),
    };
    tu_test_only_from_env();
    const int rc = cmocka_run_group_tests(tests, NULL, NULL);
    tu_gpu_close(&gpu, &cache);
    return rc;
}
