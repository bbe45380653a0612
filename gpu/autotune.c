/* The GPU half of kernel autotuning (tune.h): every variant of each tunable op built in
 * parallel through the kernel cache, each checked against the CPU twin and timed through the op's
 * unit (unit.h), and the entry the search leaves in the tuning cache. */
#include "autotune.h"

#include <stdlib.h>
#include <string.h>

#include "compile.h"
#include "gpu_model.h"
#include "tune.h"
#include "unit.h"
#include "util.h"

#define WARMUP 5
#define CHECK_BATCH_MAX 16
#define TUNE_SEED 0x7475ae /* of the units' random inputs: every run of the tuner checks the same */

const char *tt_tune_unit(const char *op)
{
    const tt_unit_desc *d = tt_unit_of_op(op);
    return d ? d->timed : NULL;
}

static int cmp_double(const void *x, const void *y)
{
    const double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

typedef struct {
    const tt_unit *u;
    const tt_gpu_program *p;
    const tt_gpu *gpu;
} timed;

static void timed_run(const void *arg)
{
    const timed *t = arg;
    tt_unit_run(t->u, t->p, t->gpu);
}

/* The median of iters event-timed runs of the unit at the spec's batch, after WARMUP. */
static double unit_time(tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, int iters)
{
    tt_unit_fit(u, p);
    const timed t = {u, p, gpu};
    for (int i = 0; i < WARMUP; i++) timed_run(&t);
    return tt_gpu_median_ms(gpu->stream, iters, timed_run, &t);
}

/* --- the variants ------------------------------------------------------------------------------ */

static const tt_kernel *kernel_of(const tt_plan *p, const char *op)
{
    for (int i = 0; i < p->n; i++)
        if (!strcmp(p->kernels[i].op, op)) return &p->kernels[i];
    return NULL;
}

/* op's kernel in plan when its template declares tunables for it, else NULL. */
static const tt_kernel *tunable(const tt_plan *plan, const char *op, const tt_tunable *tu, int nt)
{
    const tt_kernel *k = kernel_of(plan, op);
    for (int i = 0; k && i < nt; i++)
        if (!strcmp(tu[i].template_file, k->template_file) && !strcmp(tu[i].op, k->op)) return k;
    return NULL;
}

int tt_tune_compile(const tt_spec *spec, const char *arch, const tt_tune_variant *v, int nv,
                    const tt_cache *cache, int jobs, char *err, size_t errlen)
{
    tt_plan all = {0};
    snprintf(all.arch, sizeof all.arch, "%s", arch);
    for (int i = 0; i < nv; i++) {
        if (v[i].error[0]) continue;
        tt_plan p;
        if (tt_plan_build_tuned(spec, arch, &v[i].t, &p, err, errlen) != 0) {
            tt_plan_free(&all);
            return -1;
        }
        for (int k = 0; k < p.n; k++) {
            int seen = 0;
            for (int j = 0; j < all.n && !seen; j++) seen = tt_kernel_same(&all.kernels[j], &p.kernels[k]);
            if (seen) continue;
            all.kernels = tt_xrealloc(all.kernels, (size_t)(all.n + 1) * sizeof *all.kernels);
            all.kernels[all.n++] = p.kernels[k];
        }
        tt_plan_free(&p);
    }
    char *failed = tt_xasprintf("%s/failed", cache->dir);
    tt_build_opts o = {.arch = arch, .cache = cache, .failure_dir = failed, .jobs = jobs};
    tt_build *b = NULL;
    int rc = tt_builds_prepare(&all, &o, &b, err, errlen);
    if (rc == 0 && tt_builds_run(b, all.n, &o) != 0) {
        for (int i = 0; i < all.n; i++)
            if (b[i].error) {
                tt_errf(err, errlen, "%s", b[i].error);
                break;
            }
        rc = -1;
    }
    tt_builds_free(b, all.n);
    tt_plan_free(&all);
    free(failed);
    return rc;
}

/* The variants of k's op: the product of its tunables' values over the choices made so far, and
 * the heuristic's when its values are not among them; those the plan refuses say why in error. */
static tt_tune_variant *enumerate(const tt_spec *spec, const char *arch, const tt_kernel *k,
                                  const tt_tunable *tu, int nt, const tt_tuning *so_far,
                                  const tt_kernel *heuristic, int *count)
{
    const tt_tunable *mine[TT_TUNE_KEYS];
    int nm = 0, total = 1;
    for (int i = 0; i < nt && nm < TT_TUNE_KEYS; i++)
        if (!strcmp(tu[i].template_file, k->template_file) && !strcmp(tu[i].op, k->op)) {
            mine[nm++] = &tu[i];
            total *= tu[i].n_values;
        }
    tt_tune_variant *v = tt_xcalloc((size_t)total, sizeof *v);
    for (int idx = 0; idx < total; idx++) {
        tt_tune_variant *x = &v[idx];
        snprintf(x->op, sizeof x->op, "%s", k->op);
        for (int c = 0; c < so_far->n; c++)
            tt_tuning_set(&x->t, so_far->c[c].op, so_far->c[c].key, so_far->c[c].value);
        int rest = idx, used = 0;
        for (int m = 0; m < nm; m++) { /* the first tunable varies slowest */
            int stride = 1;
            for (int q = m + 1; q < nm; q++) stride *= mine[q]->n_values;
            const long value = mine[m]->values[(rest / stride) % mine[m]->n_values];
            tt_tuning_set(&x->t, k->op, mine[m]->key, value);
            used += snprintf(x->label + used, sizeof x->label - (size_t)used, "%s%s=%ld",
                             m ? " " : "", mine[m]->key, value);
        }
        tt_plan p;
        if (tt_plan_build_tuned(spec, arch, &x->t, &p, x->error, sizeof x->error) == 0) {
            const tt_kernel *mk = kernel_of(&p, k->op);
            x->heuristic = mk && tt_kernel_same(mk, heuristic);
            tt_plan_free(&p);
        }
    }
    int found = 0;
    for (int i = 0; i < total; i++) found |= v[i].heuristic;
    if (!found) { /* the heuristic's values are not among the declared ones: time them too */
        v = tt_xrealloc(v, (size_t)(total + 1) * sizeof *v);
        tt_tune_variant *x = &v[total++];
        memset(x, 0, sizeof *x);
        snprintf(x->op, sizeof x->op, "%s", k->op);
        for (int c = 0; c < so_far->n; c++)
            tt_tuning_set(&x->t, so_far->c[c].op, so_far->c[c].key, so_far->c[c].value);
        tt_kernel_variant(heuristic, tu, nt, x->label, sizeof x->label);
        if (tt_variant_parse(x->label, k->op, &x->t) != 0)
            snprintf(x->error, sizeof x->error, "the heuristic's variant '%s' does not parse", x->label);
        x->heuristic = 1;
    }
    *count = total;
    return v;
}

void tt_tune_variants_free(tt_tune_variant *v, int n)
{
    for (int i = 0; i < n; i++) tt_tuning_free(&v[i].t);
    free(v);
}

int tt_tune_variants(const tt_spec *spec, const char *arch, tt_tune_variant **out, int *n,
                     char *err, size_t errlen)
{
    *out = NULL, *n = 0;
    tt_tunable *tu;
    int nt;
    if (tt_tunables_load(NULL, &tu, &nt, err, errlen) != 0) return -1;
    tt_plan plan;
    if (tt_plan_build(spec, arch, &plan, err, errlen) != 0) {
        free(tu);
        return -1;
    }
    const tt_tuning none = {0};
    for (int u = 0; u < tt_n_units; u++)
        for (const char *const *op = tt_units[u].ops; *op && tt_unit_in_plan(&tt_units[u], &plan); op++) {
            const tt_kernel *k = tunable(&plan, *op, tu, nt);
            if (!k) continue;
            int nv;
            tt_tune_variant *v = enumerate(spec, arch, k, tu, nt, &none, k, &nv);
            for (int i = 0; i < nv; i++) {
                if (v[i].error[0]) {
                    tt_tuning_free(&v[i].t);
                    continue;
                }
                *out = tt_xrealloc(*out, (size_t)(*n + 1) * sizeof **out);
                (*out)[(*n)++] = v[i];
            }
            free(v);
        }
    tt_plan_free(&plan);
    free(tu);
    return 0;
}

/* --- the search ------------------------------------------------------------------------------ */

/* A variant's trial: its program while it is needed, its check's error and its time. */
typedef struct {
    double err, ms;
    tt_gpu_program prog;
    int loaded;
} trial;

static void release(trial *t)
{
    if (t->loaded) tt_gpu_program_free(&t->prog);
    t->loaded = 0;
}

static int load(const tt_spec *spec, const tt_gpu *gpu, const tt_cache *cache,
                const tt_tune_variant *v, trial *t, char *err, size_t errlen)
{
    tt_plan p;
    if (tt_plan_build_tuned(spec, gpu->arch, &v->t, &p, err, errlen) != 0 ||
        tt_gpu_program_load_plan(&t->prog, &p, gpu, cache, err, errlen) != 0)
        return -1;
    t->loaded = 1;
    return 0;
}

/* Tunes one op through unit u; its choice joins *so_far. */
static int tune_op(const tt_spec *spec, const tt_gpu *gpu, const tt_cache *cache,
                   const tt_tune_opts *o, tt_unit *u, const tt_kernel *k, const tt_tunable *tu,
                   int nt, tt_tuning *so_far, char *err, size_t errlen)
{
    FILE *out = o->out;
    const tt_unit_desc *d = tt_unit_desc_of(u);
    const bool rel = !strcmp(d->measure, "rel. error");
    /* the heuristic's kernel, given the choices so far */
    tt_plan base;
    if (tt_plan_build_tuned(spec, gpu->arch, so_far, &base, err, errlen) != 0) return -1;
    const tt_kernel *hk = kernel_of(&base, k->op);
    char sig[320], heur_label[96];
    if (tt_kernel_signature(k, spec, gpu->arch, tu, nt, sig, sizeof sig, err, errlen) != 0) {
        tt_plan_free(&base);
        return -1;
    }
    tt_kernel_variant(hk, tu, nt, heur_label, sizeof heur_label);
    int nv;
    tt_tune_variant *v = enumerate(spec, gpu->arch, k, tu, nt, so_far, hk, &nv);
    trial *tr = tt_xcalloc((size_t)nv, sizeof *tr);
    tt_plan_free(&base);
    if (out) {
        char inputs[160];
        tt_unit_describe(u, inputs, sizeof inputs);
        fprintf(out, "\n%s (templates/%s): %d variants, timing %s%s\n", k->op, k->template_file, nv,
                d->timed, inputs);
        fflush(out);
    }
    const double t0 = tt_now_seconds();
    if (tt_tune_compile(spec, gpu->arch, v, nv, cache, o->jobs, err, errlen) != 0) goto fail;
    if (out) {
        char check[32];
        snprintf(check, sizeof check, "check (%s)", d->measure);
        fprintf(out, "  built in %.1f s\n  %-22s %-22s %10s %8s\n", tt_now_seconds() - t0,
                "variant", check, "ms", "speed");
    }
    int best = -1, heur = -1;
    for (int i = 0; i < nv; i++) {
        tt_tune_variant *x = &v[i];
        if (x->heuristic) heur = i;
        if (x->error[0]) {
            if (out) fprintf(out, "  %-22s skipped: %s\n", x->label, x->error);
            continue;
        }
        if (load(spec, gpu, cache, x, &tr[i], err, errlen) != 0) goto fail;
        const tt_unit_result r = tt_unit_check(u, &tr[i].prog, gpu, TT_PLANT_NONE);
        tr[i].err = r.whole.err;
        if (!(r.ratio <= 1)) {
            char verdict[256];
            tt_unit_verdict(&r, d->measure, verdict, sizeof verdict);
            snprintf(x->error, sizeof x->error, "WRONG: %s", verdict);
            if (out) fprintf(out, "  %-22s %s\n", x->label, x->error);
            release(&tr[i]);
            continue;
        }
        tr[i].ms = unit_time(u, &tr[i].prog, gpu, o->iters);
        if (best < 0 || tr[i].ms < tr[best].ms) best = i;
        if (!x->heuristic) release(&tr[i]); /* kept: the heuristic's, for the final comparison */
    }
    if (heur < 0 || v[heur].error[0]) {
        tt_errf(err, errlen, "%s: the plan's own variant (%s) failed: %s", k->op, heur_label,
                heur < 0 ? "not among the variants" : v[heur].error);
        goto fail;
    }
    for (int i = 0; i < nv && out; i++) {
        if (v[i].error[0]) continue;
        char check[32];
        snprintf(check, sizeof check, rel ? "ok (%.1e)" : "ok (%.0f)", tr[i].err);
        fprintf(out, "  %-22s %-22s %10.4f %7.2fx%s%s\n", v[i].label, check, tr[i].ms,
                tr[heur].ms / tr[i].ms, i == heur ? "  the heuristic's" : "",
                i == best ? "  fastest" : "");
    }
    /* the gain, measured again with the two alternating, so that drift hits both alike */
    double best_ms = tr[best].ms, heur_ms = tr[heur].ms;
    if (best != heur) {
        if (load(spec, gpu, cache, &v[best], &tr[best], err, errlen) != 0) goto fail;
        double hb[3], bb[3];
        for (int round = 0; round < 3; round++) {
            hb[round] = unit_time(u, &tr[heur].prog, gpu, o->iters);
            bb[round] = unit_time(u, &tr[best].prog, gpu, o->iters);
        }
        qsort(hb, 3, sizeof *hb, cmp_double);
        qsort(bb, 3, sizeof *bb, cmp_double);
        heur_ms = hb[1], best_ms = bb[1];
    }
    /* the heuristic stays unless the other is faster in the alternating measurement too */
    const int keep = best == heur || !(best_ms < heur_ms);
    const tt_tune_variant *chosen = keep ? &v[heur] : &v[best];
    tt_tune_entry e = {0};
    snprintf(e.card, sizeof e.card, "%s", gpu->name);
    snprintf(e.signature, sizeof e.signature, "%s", sig);
    snprintf(e.variant, sizeof e.variant, "%s", chosen->label);
    snprintf(e.default_variant, sizeof e.default_variant, "%s", heur_label);
    e.best_ms = keep ? heur_ms : best_ms;
    e.default_ms = heur_ms;
    snprintf(e.unit, sizeof e.unit, "%s", d->timed);
    tt_tune_today(e.date);
    char *path = tt_tuning_path(cache->dir);
    const int rc = tt_tuning_store(path, &e, err, errlen);
    free(path);
    if (rc != 0) goto fail;
    for (int c = 0; c < chosen->t.n; c++)
        if (!strcmp(chosen->t.c[c].op, k->op))
            tt_tuning_set(so_far, k->op, chosen->t.c[c].key, chosen->t.c[c].value);
    if (out) {
        if (best == heur)
            fprintf(out, "  chosen: %s, the heuristic's (fastest of all): %.4f ms\n", chosen->label,
                    heur_ms);
        else if (keep)
            fprintf(out, "  chosen: %s, the heuristic's: the fastest, %s, was not faster when the "
                    "two were timed alternately (%.4f ms against %.4f)\n", chosen->label,
                    v[best].label, best_ms, heur_ms);
        else
            fprintf(out, "  chosen: %s: %.4f ms against %.4f ms for the heuristic's %s, timed "
                    "alternately (%.2fx)\n", chosen->label, e.best_ms, heur_ms, heur_label,
                    heur_ms / e.best_ms);
        fflush(out);
    }
    for (int i = 0; i < nv; i++) release(&tr[i]);
    tt_tune_variants_free(v, nv);
    free(tr);
    return 0;
fail:
    for (int i = 0; i < nv; i++) release(&tr[i]);
    tt_tune_variants_free(v, nv);
    free(tr);
    return -1;
}

/* A model of spec's shapes on gpu for timing whole training steps: random weights (the times do
 * not depend on the values), the spec's batch; *l its layout (tt_layout_free after
 * tt_gpu_lm_close). NULL with a message. */
static tt_gpu_lm *open_timed(const tt_spec *spec, tt_gpu *gpu, const tt_cache *cache, long vocab,
                             tt_layout *l, char *err, size_t errlen)
{
    if (tt_layout_build(&spec->model, vocab, l, err, errlen) != 0) return NULL;
    tt_gpu_lm *lm;
    if (tt_gpu_lm_open(&lm, gpu, spec, l, spec->train.batch, cache, err, errlen) != 0) {
        tt_layout_free(l);
        return NULL;
    }
    float *w = tt_xmalloc(l->n_floats * sizeof *w);
    tt_layout_init(l, w, TUNE_SEED);
    TT_CUDA(cudaMemcpy(tt_gpu_lm_weights(lm), w, l->n_floats * sizeof *w, cudaMemcpyHostToDevice));
    tt_gpu_lm_weights_changed(lm);
    free(w);
    return lm;
}

/* The next random batch of rows inputs and targets from the generator state *x. */
static void random_batch(uint64_t *x, size_t rows, long vocab, int32_t *in, int32_t *tg)
{
    for (size_t i = 0; i < rows; i++) {
        *x = *x * 6364136223846793005ull + 1442695040888963407ull;
        in[i] = (int32_t)((*x >> 33) % (uint64_t)vocab);
        tg[i] = (int32_t)((*x >> 13) % (uint64_t)vocab);
    }
}

/* One training step s of lm on the batch. */
static void timed_step(tt_gpu_lm *lm, const int32_t *in, const int32_t *tg, long s)
{
    const tt_lm_opts lo = {.train = true, .seed = TUNE_SEED, .step = (uint64_t)s};
    tt_lm_result r;
    tt_gpu_lm_train_step(lm, in, tg, &lo, s, &r);
}

/* The matrix products of two training steps of spec, each timed again on gpu and recorded in
 * the tuning cache in place of what was there (gemm.h), on two random batches. */
static int retime_products(const tt_spec *spec, tt_gpu *gpu, const tt_cache *cache, long vocab,
                           FILE *out, char *err, size_t errlen)
{
    tt_layout l;
    tt_gpu_lm *lm = open_timed(spec, gpu, cache, vocab, &l, err, errlen);
    if (!lm) return -1;
    tt_gpu_lm_retime_products(lm);
    const size_t rows = (size_t)spec->train.batch * (size_t)spec->model.seq_len;
    int32_t *in = tt_xmalloc(rows * sizeof *in), *tg = tt_xmalloc(rows * sizeof *tg);
    uint64_t x = TUNE_SEED;
    for (int s = 1; s <= 2; s++) {
        random_batch(&x, rows, vocab, in, tg);
        timed_step(lm, in, tg, s);
    }
    long n_timed, n_recorded;
    tt_gpu_lm_products(lm, &n_timed, &n_recorded);
    if (out)
        fprintf(out, "\nmatrix products: %ld timed again and recorded (cuBLASLt's algorithms; "
                "an adaptive softmax's tail products of other row counts are timed when a run "
                "first meets them)\n", n_timed);
    free(in), free(tg);
    tt_gpu_lm_close(lm);
    tt_layout_free(&l);
    return 0;
}

/* --- the attention's strategy ------------------------------------------------------------------ */

#define STRATEGY_WARM 8    /* steps before the timing: graphs captured, products timed */
#define STRATEGY_STEPS 10  /* steps a window */
#define STRATEGY_WINDOWS 5 /* windows a round, the median kept */
#define STRATEGY_ROUNDS 3  /* rounds, the two strategies alternating, the median kept */

/* ms a training step of spec with the attention's strategy forced (mat: materialized), on one
 * random batch: the median of STRATEGY_WINDOWS windows after STRATEGY_WARM steps; -1 with a
 * message. */
static double strategy_step_ms(const tt_spec *spec, int mat, tt_gpu *gpu, const tt_cache *cache,
                               long vocab, char *err, size_t errlen)
{
    tt_spec forced = *spec;
    forced.kernels.attention = mat ? TT_ATTN_MATERIALIZED : TT_ATTN_FUSED;
    tt_layout l;
    tt_gpu_lm *lm = open_timed(&forced, gpu, cache, vocab, &l, err, errlen);
    if (!lm) return -1;
    const size_t rows = (size_t)spec->train.batch * (size_t)spec->model.seq_len;
    int32_t *in = tt_xmalloc(rows * sizeof *in), *tg = tt_xmalloc(rows * sizeof *tg);
    uint64_t x = TUNE_SEED;
    random_batch(&x, rows, vocab, in, tg);
    long s = 1;
    for (int i = 0; i < STRATEGY_WARM; i++) timed_step(lm, in, tg, s++);
    double win[STRATEGY_WINDOWS];
    for (int w = 0; w < STRATEGY_WINDOWS; w++) {
        const double t0 = tt_now_seconds(); /* each step ends synchronized (its sums) */
        for (int i = 0; i < STRATEGY_STEPS; i++) timed_step(lm, in, tg, s++);
        win[w] = (tt_now_seconds() - t0) * 1e3 / STRATEGY_STEPS;
    }
    qsort(win, STRATEGY_WINDOWS, sizeof *win, cmp_double);
    free(in), free(tg);
    tt_gpu_lm_close(lm);
    tt_layout_free(&l);
    return win[STRATEGY_WINDOWS / 2];
}

int tt_tune_strategy(const tt_spec *spec, tt_gpu *gpu, const tt_cache *cache, long vocab,
                     FILE *out, tt_tuning *so_far, char *err, size_t errlen)
{
    if (spec->model.kind != TT_KIND_TENSORIZED) return 0;
    char sig[320];
    if (tt_strategy_signature(spec, gpu->arch, sig, sizeof sig, err, errlen) != 0) return -1;
    if (!sig[0] || vocab <= 0) {
        if (out)
            fprintf(out, "\nattention strategy: not tuned (%s)\n",
                    spec->kernels.attention != TT_ATTN_AUTO ? "kernels.attention is set"
                    : sig[0] ? "the vocabulary is not known yet"
                             : "only one strategy fits these shapes");
        return 0;
    }
    tt_plan p;
    if (tt_plan_build(spec, gpu->arch, &p, err, errlen) != 0) return -1;
    const int model = tt_plan_materialized(&p); /* the cost model's choice */
    tt_plan_free(&p);
    if (out) {
        fprintf(out, "\nattention strategy: fused against materialized, %d rounds of %d x %d "
                "training steps each, alternating (the cost model's: %s)\n", STRATEGY_ROUNDS,
                STRATEGY_WINDOWS, STRATEGY_STEPS, model ? "materialized" : "fused");
        fflush(out);
    }
    double ms[2][STRATEGY_ROUNDS];
    for (int round = 0; round < STRATEGY_ROUNDS; round++)
        for (int j = 0; j < 2; j++) {
            const int mat = j ? !model : model;
            ms[mat][round] = strategy_step_ms(spec, mat, gpu, cache, vocab, err, errlen);
            if (ms[mat][round] >= 0) continue;
            if (mat == model) return -1; /* the plan's own strategy must run */
            /* the other does not open (e.g. materialized's T beyond the free device memory):
             * the cost model's stays, with no entry */
            if (out) fprintf(out, "  %s: not timed: %s; the cost model's kept\n",
                             mat ? "materialized" : "fused", err);
            err[0] = '\0';
            return 0;
        }
    for (int mat = 0; mat < 2; mat++) qsort(ms[mat], STRATEGY_ROUNDS, sizeof **ms, cmp_double);
    const double med[2] = {ms[0][STRATEGY_ROUNDS / 2], ms[1][STRATEGY_ROUNDS / 2]};
    const int chosen = med[!model] < med[model] ? !model : model;
    tt_tune_entry e = {0};
    snprintf(e.card, sizeof e.card, "%s", gpu->name);
    snprintf(e.signature, sizeof e.signature, "%s", sig);
    snprintf(e.variant, sizeof e.variant, "%s=%d", TT_STRATEGY_KEY, chosen);
    snprintf(e.default_variant, sizeof e.default_variant, "%s=%d", TT_STRATEGY_KEY, !chosen);
    e.best_ms = med[chosen];
    e.default_ms = med[!chosen];
    snprintf(e.unit, sizeof e.unit, "train steps; the cost model's: %s",
             model ? "materialized" : "fused");
    tt_tune_today(e.date);
    char *path = tt_tuning_path(cache->dir);
    const int rc = tt_tuning_store(path, &e, err, errlen);
    free(path);
    if (rc != 0) return -1;
    tt_tuning_set(so_far, TT_STRATEGY_OP, TT_STRATEGY_KEY, chosen);
    if (out) {
        fprintf(out, "  fused %.4f ms a step, materialized %.4f (medians); chosen: %s%s\n", med[0],
                med[1], chosen ? "materialized" : "fused",
                chosen == model ? ", the cost model's" : ", not the cost model's");
        fflush(out);
    }
    return 0;
}

/* Whether t sets any key of op. */
static bool op_in(const tt_tuning *t, const char *op)
{
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->c[i].op, op)) return true;
    return false;
}

/* One pass of the kernels' tuning over the plan of ks (with the choices so far): each tunable
 * op not chosen yet, in the units' order; *tuned counts them. */
static int tune_pass(const tt_spec *ks, tt_gpu *gpu, const tt_cache *cache, const tt_tune_opts *o,
                     const tt_unit_opts *uo, const tt_tunable *tu, int nt, tt_tuning *so_far,
                     int *tuned, char *err, size_t errlen)
{
    tt_plan plan;
    if (tt_plan_build_tuned(ks, gpu->arch, so_far, &plan, err, errlen) != 0) return -1;
    int rc = 0;
    for (int i = 0; i < tt_n_units && rc == 0; i++) {
        const tt_unit_desc *d = &tt_units[i];
        if (!tt_unit_in_plan(d, &plan)) continue; /* (mla_bwd_q: the fused strategy's, or the
                                                   * materialized one's, which reads dT) */
        tt_unit *u = NULL; /* built for the first of its ops the plan tunes */
        for (const char *const *op = d->ops; *op && rc == 0; op++) {
            const tt_kernel *k = tunable(&plan, *op, tu, nt);
            if (!k || op_in(so_far, *op)) continue;
            if (d->needs_vocab && uo->vocab <= 0) {
                if (o->out) fprintf(o->out, "\n%s: not tuned: the vocabulary is not known yet\n", *op);
                continue;
            }
            if (!u && d->slow_twin && o->out) {
                fprintf(o->out, "%s at batch %d (the reference every variant is held to)...\n",
                        d->slow_twin, uo->check);
                fflush(o->out);
            }
            if (!u) u = tt_unit_init(d, ks, uo);
            rc = tune_op(ks, gpu, cache, o, u, k, tu, nt, so_far, err, errlen);
            *tuned += rc == 0;
        }
        tt_unit_free(u);
    }
    tt_plan_free(&plan);
    return rc;
}

int tt_tune(const tt_spec *spec, tt_gpu *gpu, const tt_cache *cache, const tt_tune_opts *o,
            char *err, size_t errlen)
{
    tt_tune_opts opts = *o;
    if (opts.iters < 3) opts.iters = 30;
    tt_tunable *tu;
    int nt;
    if (tt_tunables_load(NULL, &tu, &nt, err, errlen) != 0) return -1;
    int check = opts.check_batch > 0 ? opts.check_batch : spec->train.batch;
    if (check > spec->train.batch) check = spec->train.batch;
    if (opts.check_batch <= 0 && check > CHECK_BATCH_MAX) check = CHECK_BATCH_MAX;
    const long vocab = opts.vocab > 0 ? opts.vocab : spec->model.vocab;
    const tt_unit_opts uo = {.check = check, .seed = TUNE_SEED, .params = opts.params, .vocab = vocab};
    /* Where both attention strategies plan, the kernels are tuned on the fused plan first, so
     * that the strategies' steps compare the fused kernels tuned (the materialized ones declare
     * no tunables; the kernels both share are the same); then the strategy; then, where it is
     * materialized, that plan's kernels not tuned yet. Elsewhere the plan's own kernels. */
    char sig[320];
    if (tt_strategy_signature(spec, gpu->arch, sig, sizeof sig, err, errlen) != 0) {
        free(tu);
        return -1;
    }
    const bool both = sig[0] && vocab > 0;
    tt_spec fused = *spec, mat = *spec;
    fused.kernels.attention = TT_ATTN_FUSED;
    mat.kernels.attention = TT_ATTN_MATERIALIZED;
    int tuned = 0;
    tt_tuning so_far = {0};
    int rc = tune_pass(both ? &fused : spec, gpu, cache, &opts, &uo, tu, nt, &so_far, &tuned, err,
                       errlen);
    tt_tuning strategy = {0};
    if (rc == 0 && tt_tune_strategy(spec, gpu, cache, vocab, opts.out, &strategy, err, errlen) != 0)
        rc = -1;
    if (rc == 0 && both && tt_tuning_get(&strategy, TT_STRATEGY_OP, TT_STRATEGY_KEY, 0))
        rc = tune_pass(&mat, gpu, cache, &opts, &uo, tu, nt, &so_far, &tuned, err, errlen);
    if (rc == 0 && !tuned)
        rc = tt_errf(err, errlen, "no kernel of this spec's plan declares tunables");
    if (rc == 0 && vocab > 0)
        rc = retime_products(spec, gpu, cache, vocab, opts.out, err, errlen);
    tt_tuning_free(&strategy);
    tt_tuning_free(&so_far);
    free(tu);
    return rc;
}
