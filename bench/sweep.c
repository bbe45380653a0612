/* tt-bench sweep: a grid of rank, cores and mask of a tensorized spec beside Transformer-XL of its
 * shape, each point's costs from the cost model, measured on a GPU and (--train-steps) trained
 * and scored as tt-train and tt-eval would, with a learning-rate search per family; sweep.csv,
 * lr_search.csv, table.md and the plots, resumable (--resume). */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "sweep_csv.h"
#include "corpus.h"
#include "curve.h"
#include "engine.h"
#include "session.h"
#include "sha256.h"
#include "util.h"

/* ---- tt-bench sweep --------------------------------------------------------------------------- */

#define SWEEP_MAX 16

typedef enum { LIST_INT, LIST_REAL, LIST_BOOL } list_kind;

typedef struct {
    double v[SWEEP_MAX];
    int n;
} value_list;

/* "8,16,32" (LIST_INT, each within lo .. hi), "1e-3,5e-4" (LIST_REAL, above lo and at most hi)
 * or "true,false" (LIST_BOOL, as 1 and 0) into l; -1 with a line on stderr. */
static int parse_list(const char *opt, const char *text, list_kind kind, double lo, double hi,
                      value_list *l)
{
    l->n = 0;
    const char *p = text;
    while (*p) {
        char *end = (char *)p;
        double v = 0;
        errno = 0;
        if (kind == LIST_INT && isdigit((unsigned char)*p)) {
            v = (double)strtol(p, &end, 10);
        } else if (kind == LIST_REAL && (isdigit((unsigned char)*p) || *p == '.')) {
            v = strtod(p, &end);
        } else if (kind == LIST_BOOL) {
            const size_t len = strcspn(p, ",");
            v = len == 4 && !strncmp(p, "true", 4) ? 1 : len == 5 && !strncmp(p, "false", 5) ? 0 : -1;
            end = v < 0 ? (char *)p : (char *)p + len;
        }
        const bool inside = kind == LIST_REAL ? v > lo && v <= hi : v >= lo && v <= hi;
        if (end == p || errno || !inside || (*end && *end != ',') || (*end == ',' && !end[1]) ||
            l->n == SWEEP_MAX) {
            if (kind == LIST_INT)
                fprintf(stderr, "tt-bench sweep: %s takes up to %d integers from %g to %g separated "
                        "by commas, not '%s'\n", opt, SWEEP_MAX, lo, hi, text);
            else if (kind == LIST_REAL)
                fprintf(stderr, "tt-bench sweep: %s takes up to %d numbers above %g and at most %g "
                        "separated by commas, not '%s'\n", opt, SWEEP_MAX, lo, hi, text);
            else
                fprintf(stderr, "tt-bench sweep: %s takes true, false or both separated by commas, "
                        "not '%s'\n", opt, text);
            return -1;
        }
        l->v[l->n++] = v;
        p = *end ? end + 1 : end;
    }
    if (l->n == 0) {
        fprintf(stderr, "tt-bench sweep: %s is empty\n", opt);
        return -1;
    }
    return 0;
}

/* The model families a sweep compares: the tensorized model with its mask and without, and the
 * Transformer-XL of its shape with memory (mem_len = seq_len) and without. */
typedef enum { FAM_CAUSAL, FAM_UNMASKED, FAM_TXL_MEM, FAM_TXL_NOMEM } family;
static const char *const family_name[] = {"tensorized-causal", "tensorized-unmasked", "txl-mem",
                                          "txl-nomem"};

/* The spec of family f's point (rank, cores, seq_len; rank and cores unused by Transformer-XL)
 * from base, trained with lr for the budget's steps and validated every eval_interval steps, as
 * tt-train would run it. Shares base's strings: not to be freed. */
static tt_spec point_spec(const tt_spec *base, family f, int rank, int cores, int seq_len, double lr,
                          long steps, long eval_interval)
{
    tt_spec s = *base;
    s.model.rank = rank;
    s.model.cores = cores;
    s.model.seq_len = seq_len;
    s.model.causal = f == FAM_CAUSAL;
    s.eval.tgt_len = seq_len;
    if (f == FAM_TXL_MEM || f == FAM_TXL_NOMEM) {
        const tt_spec ours = s;
        bench_default_counterpart(&ours, &s); /* d_model is even: sweep_main checked */
        s.model.mem_len = s.eval.mem_len = f == FAM_TXL_MEM ? seq_len : 0;
    }
    s.train.lr = lr;
    if (steps) {
        s.train.steps = steps;
        s.train.eval_interval = eval_interval;
    }
    return s;
}

/* How long a point trains: K steps, a validation every eval_interval steps and after the last
 * (0: after the last alone), and a stop after patience validations in a row without a new best
 * (0: never). */
typedef struct {
    long steps, eval_interval, patience;
} sweep_budget;

typedef struct {
    tt_tokens train, valid, test; /* test: empty when the spec has no data.test */
} sweep_data;

typedef struct {
    long steps, best_step; /* trained; of the best validation */
    double valid_ppl;      /* the best validation's */
    double test_ppl;       /* over data.test from the best validation's weights (NAN: no test) */
    double seconds;        /* training and validation */
    double train_tok_s;    /* the training steps' tokens over their time, validations left out */
} sweep_result;

#define NO_RESULT ((sweep_result){.valid_ppl = NAN, .test_ppl = NAN, .seconds = NAN, .train_tok_s = NAN})

/* Trains s's model (its layout l) from its initial weights on d->train as tt-train does (the
 * same steps, on the GPU when there is one), validating over d->valid (windows of seq_len, or
 * Transformer-XL's segments with memory) as the budget says and keeping the best validation's
 * weights; then the test perplexity from those weights as tt-eval --split test computes it.
 * Returns 0, or -1 with why in err. */
static int sweep_train(const tt_spec *s, const tt_layout *l, const sweep_data *d,
                       const sweep_budget *b, sweep_result *r, char *err, size_t errlen)
{
    const int batch = s->train.batch, n = s->model.seq_len;
    *r = (sweep_result){.valid_ppl = INFINITY, .test_ppl = NAN, .train_tok_s = NAN};
    if (d->train.n / batch < (long)n + 1)
        return tt_errf(err, errlen, "data.train has %ld tokens: too few for batch %d x seq_len %d",
                       d->train.n, batch, n);
    tt_engine *e;
    char where[256];
    if (tt_engine_open(&e, "auto", s, l, batch, where, sizeof where, err, errlen) != 0) return -1;
    float *w = tt_engine_host(e, 0);
    tt_layout_init(l, w, (uint64_t)s->train.seed);
    tt_engine_upload(e);
    const size_t bytes = l->n_floats * sizeof(float);
    float *best = b->eval_interval ? tt_xmalloc(bytes) : NULL; /* more than one validation */
    int32_t *in = tt_xmalloc((size_t)batch * n * 4), *tg = tt_xmalloc((size_t)batch * n * 4);
    const double t0 = tt_now_seconds();
    double validating = 0; /* seconds */
    long stale = 0;
    int rc = 0;
    for (long st = 1; st <= b->steps; st++) {
        const bool continues = tt_tokens_batch(&d->train, batch, n, st, in, tg);
        tt_lm_opts o = {.train = true, .seed = (uint64_t)s->train.seed, .step = (uint64_t)st,
                        .label_smoothing = (tt_real)s->train.label_smoothing};
        tt_lm_result res;
        const double gnorm = tt_engine_train_step(e, in, tg, &o, st, continues, &res);
        if (!isfinite(res.loss_sum) || !isfinite(gnorm)) {
            rc = tt_errf(err, errlen, "step %ld: the loss or the gradient is not finite (a lower lr?)",
                         st);
            break;
        }
        r->steps = st;
        if (st != b->steps && !(b->eval_interval && st % b->eval_interval == 0)) continue;
        const double v0 = tt_now_seconds();
        tt_eval_result ev;
        if (tt_engine_evaluate(e, &d->valid, n, 0, &ev, err, errlen) != 0) {
            rc = -1;
            break;
        }
        const double ppl = exp(ev.nll / (double)ev.scored);
        const bool better = ppl < r->valid_ppl;
        if (better) {
            r->valid_ppl = ppl;
            r->best_step = st;
            stale = 0;
            if (best && st != b->steps) {
                tt_engine_download(e);
                memcpy(best, w, bytes);
            }
        }
        validating += tt_now_seconds() - v0;
        if (!better && b->patience && ++stale >= b->patience) break;
    }
    r->seconds = tt_now_seconds() - t0;
    if (r->steps && r->seconds > validating)
        r->train_tok_s = (double)r->steps * batch * n / (r->seconds - validating);
    if (!rc && r->best_step == 0) rc = tt_errf(err, errlen, "no finite validation perplexity");
    if (!rc && d->test.n) {
        if (r->best_step != r->steps) {
            memcpy(w, best, bytes);
            tt_engine_upload(e);
        }
        tt_eval_result ev;
        rc = tt_engine_evaluate(e, &d->test, n, 0, &ev, err, errlen);
        if (!rc) r->test_ppl = exp(ev.nll / (double)ev.scored);
    }
    free(best);
    free(in);
    free(tg);
    tt_engine_close(e);
    return rc;
}

/* The SHA-256 of s's text with every default filled in (what a checkpoint stores), in hex. */
static void spec_sha256(const tt_spec *s, char hex[65])
{
    char *text = tt_spec_text(s);
    uint8_t d[32];
    tt_sha256(text, strlen(text), d);
    tt_hex(d, sizeof d, hex);
    free(text);
}

/* One CSV field: a comma, quote or newline becomes ';'. */
static void csv_clean(char *p)
{
    for (; *p; p++)
        if (*p == ',' || *p == '"' || *p == '\n') *p = ';';
}

/* A row of the sweep as its plot draws it: the perplexity is the test's where there is one, else
 * the validation's (NAN: not trained). */
typedef struct {
    double params, tps, ppl; /* tps: the rate drawn and on the fronts (use_trained_rate) */
    char label[32];
    /* the rest of its row, for table.md */
    const char *family;
    int rank, cores, seq_len, mem_len; /* rank, cores 0: Transformer-XL */
    double lr, valid_ppl, test_ppl;
    long steps, best_step;
    double measured_tps, trained_tps; /* tt-bench's measurement; over the point's training run */
} sweep_point;

/* The tokens/s the plot draws and the fronts rank by: the rate over each point's training run
 * where every point with a perplexity has one (thousands of steps: steadier than tt-bench's
 * measurement of a few), else tt-bench's measurement for all. Returns whether the training run's
 * were taken. */
static bool use_trained_rate(sweep_point *p, int n)
{
    bool all = false;
    for (int i = 0; i < n; i++) {
        if (isnan(p[i].ppl)) continue;
        if (isnan(p[i].trained_tps)) return false;
        all = true;
    }
    for (int i = 0; all && i < n; i++) p[i].tps = p[i].trained_tps;
    return all;
}

/* p's Pareto front over (x, perplexity), x taken from params (fewer is better) or from tps (more
 * is better): the points no other beats on both, as a gnuplot data block `name`, from the best x
 * on. */
static void pareto_block(FILE *f, const char *name, const sweep_point *p, int n, bool tps)
{
    fprintf(f, "$%s << EOD\n", name);
    double best = INFINITY, last = tps ? INFINITY : -INFINITY;
    for (;;) { /* the next point along x (ties: the lower perplexity) */
        int k = -1;
        for (int i = 0; i < n; i++) {
            const double x = tps ? p[i].tps : p[i].params;
            const double kx = k < 0 ? 0 : tps ? p[k].tps : p[k].params;
            if (isnan(p[i].ppl) || isnan(x) || (tps ? x >= last : x <= last)) continue;
            if (k < 0 || (tps ? x > kx : x < kx) || (x == kx && p[i].ppl < p[k].ppl)) k = i;
        }
        if (k < 0) break;
        last = tps ? p[k].tps : p[k].params;
        if (p[k].ppl < best) {
            best = p[k].ppl;
            fprintf(f, "%.17g %.17g\n", last, best);
        }
    }
    fprintf(f, "EOD\n");
}

/* Whether no other point of p beats point i on both (x, perplexity): fewer parameters, or more
 * tokens/s (tps), and a lower perplexity, one of them strictly. */
static bool on_front(const sweep_point *p, int n, int i, bool tps)
{
    const double xi = tps ? -p[i].tps : p[i].params;
    if (isnan(p[i].ppl) || isnan(xi)) return false;
    for (int j = 0; j < n; j++) {
        const double xj = tps ? -p[j].tps : p[j].params;
        if (j == i || isnan(p[j].ppl) || isnan(xj)) continue;
        if (xj <= xi && p[j].ppl <= p[i].ppl && (xj < xi || p[j].ppl < p[i].ppl)) return false;
    }
    return true;
}

/* DIR/table.md: the sweep as a Markdown table, a row per point (the Pareto fronts marked) and,
 * where the spec is of the paper's shapes, the paper's figures (its unmasked attention) last. */
static int sweep_table(const char *dir, const sweep_point *p, int n, const bench_paper_row *paper,
                       char *err, size_t errlen)
{
    char *path = tt_xasprintf("%s/table.md", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        tt_errf(err, errlen, "%s: cannot write", path);
        free(path);
        return -1;
    }
    fprintf(f, "| family | rank | cores | seq_len | mem_len | parameters | measured tok/s | trained "
               "tok/s | lr | steps (best) | valid ppl | test ppl | Pareto front |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++) {
        char rank[16] = "", cores[16] = "", measured[32] = "", trained[32] = "", valid[32] = "",
             test[32] = "";
        if (p[i].rank) snprintf(rank, sizeof rank, "%d", p[i].rank);
        if (p[i].cores) snprintf(cores, sizeof cores, "%d", p[i].cores);
        if (!isnan(p[i].measured_tps)) snprintf(measured, sizeof measured, "%.0f", p[i].measured_tps);
        if (!isnan(p[i].trained_tps)) snprintf(trained, sizeof trained, "%.0f", p[i].trained_tps);
        if (!isnan(p[i].valid_ppl)) snprintf(valid, sizeof valid, "%.2f", p[i].valid_ppl);
        if (!isnan(p[i].test_ppl)) snprintf(test, sizeof test, "%.2f", p[i].test_ppl);
        const bool fp = on_front(p, n, i, false), ft = on_front(p, n, i, true);
        fprintf(f, "| %s | %s | %s | %d | %d | %.0f | %s | %s | %.3g | %ld (%ld) | %s | %s | %s%s%s |\n",
                p[i].family, rank, cores, p[i].seq_len, p[i].mem_len, p[i].params, measured,
                trained, p[i].lr, p[i].steps, p[i].best_step, valid, test, fp ? "parameters" : "",
                fp && ft ? ", " : "", ft ? "tokens/s" : "");
    }
    if (paper)
        for (int c = 0; c < 2; c++)
            fprintf(f, "| the paper, %s, core-%d (unmasked) | %d | %d | %d | | %s | | | | | | %.1f | |\n",
                    paper->name, c + 1, paper->rank, c + 1, paper->alt_seq_len,
                    paper->params ? paper->params : "", paper->ppl[c]);
    const int bad = ferror(f);
    fclose(f);
    if (bad) tt_errf(err, errlen, "%s: cannot write", path);
    free(path);
    return bad ? -1 : 0;
}

/* gnuplot's tics for the log axis named axis over [lo, hi]: left to gnuplot over a wide range,
 * else about five evenly spaced values (1, 2 or 5 times a power of ten apart), labelled with a
 * k, M or G prefix where that is shorter: a log axis narrower than a decade gets none or one
 * otherwise. */
static void log_axis_tics(FILE *f, const char *axis, double lo, double hi)
{
    if (!(lo > 0) || !isfinite(hi) || hi / lo > 20) {
        fprintf(f, "set %stics autofreq\n", axis);
        return;
    }
    double step = pow(10, floor(log10((hi - lo) / 5)));
    const double span = (hi - lo) / step;
    step *= span > 25 ? 5 : span > 10 ? 2 : 1;
    fprintf(f, "set %stics (", axis);
    for (double v = ceil(lo / step) * step; v <= hi; v += step) {
        static const char prefix[] = " kMG";
        int k = 0;
        double shown = v;
        while (k < 3 && fabs(shown) >= 1000) shown /= 1000, k++;
        fprintf(f, "%s\"%.4g%.*s\" %.9g", v > ceil(lo / step) * step ? ", " : "", shown, k > 0,
                prefix + k, v);
    }
    fprintf(f, ")\n");
}

/* The plot's axes: the parameters, the training tokens/s, the perplexity. */
enum { X_PARAMS, X_TPS, Y_PPL };

static double axis_value(const sweep_point *q, int axis)
{
    return axis == X_PARAMS ? q->params : axis == X_TPS ? q->tps : q->ppl;
}

/* The share of an axis's log extent a point's label takes on the plot, across and up (a label of
 * about ten characters at 8 points on a panel of 1400 x 560 pixels, two panels). */
#define LABEL_W 0.09
#define LABEL_H 0.04

/* The labels of one panel of the plot, x on axis xa and y on axis ya. Labelled: each
 * Transformer-XL point and each point on the panel's Pareto front (front: over the tokens/s),
 * lowest y first; a label that would overlap one already placed joins it when it is the same
 * family, rank and seq_len at other cores ("R8 c1,2 u"), else is left out. out[i][panel]:
 * point i's label on this panel (0: over the parameters, 1: over the tokens/s), "" for none. */
static void panel_labels(const sweep_point *p, int n, int panel, int ya, const double lo[3],
                         const double hi[3], char (*out)[2][48])
{
    const int xa = panel ? X_TPS : X_PARAMS;
    int *order = tt_xcalloc((size_t)n, sizeof *order), *kept = tt_xcalloc((size_t)n, sizeof *kept);
    unsigned long long *cores = tt_xcalloc((size_t)n, sizeof *cores); /* bit c - 1: c cores */
    int want = 0, placed = 0;
    for (int i = 0; i < n; i++) {
        out[i][panel][0] = 0;
        if (!isnan(axis_value(&p[i], xa)) && !isnan(axis_value(&p[i], ya)) &&
            (p[i].rank == 0 || on_front(p, n, i, panel == 1)))
            order[want++] = i;
    }
    for (int a = 1; a < want; a++) /* lowest y first: an insertion sort of a few points */
        for (int b = a; b > 0 && axis_value(&p[order[b]], ya) < axis_value(&p[order[b - 1]], ya); b--) {
            const int t = order[b];
            order[b] = order[b - 1], order[b - 1] = t;
        }
    const double wx = LABEL_W * log(hi[xa] / lo[xa]), wy = LABEL_H * log(hi[ya] / lo[ya]);
    for (int a = 0; a < want; a++) {
        const sweep_point *q = &p[order[a]];
        int near = -1;
        for (int b = 0; b < placed && near < 0; b++)
            if (fabs(log(axis_value(q, xa) / axis_value(&p[kept[b]], xa))) < wx &&
                fabs(log(axis_value(q, ya) / axis_value(&p[kept[b]], ya))) < wy)
                near = kept[b];
        if (near < 0) {
            kept[placed++] = order[a];
            if (q->rank) cores[order[a]] = 1ull << (q->cores - 1);
            snprintf(out[order[a]][panel], sizeof out[0][0], "%s", q->label);
        } else if (q->rank && p[near].rank == q->rank && p[near].seq_len == q->seq_len &&
                   !strcmp(p[near].family, q->family)) {
            cores[near] |= 1ull << (q->cores - 1);
        }
    }
    for (int b = 0; b < placed; b++) { /* the joined ones: their cores in order */
        const int k = kept[b];
        if (!p[k].rank || !(cores[k] & (cores[k] - 1))) continue;
        char *l = out[k][panel];
        const size_t size = sizeof out[0][0];
        size_t len = (size_t)snprintf(l, size, "R%d c", p[k].rank);
        for (int c = 1; c <= 64 && len < size; c++)
            if (cores[k] >> (c - 1) & 1)
                len += (size_t)snprintf(l + len, size - len, "%s%d", l[len - 1] == 'c' ? "" : ",", c);
        if (len < size)
            snprintf(l + len, size - len, "%s",
                     strcmp(p[k].family, family_name[FAM_UNMASKED]) ? "" : " u");
    }
    free(order), free(kept), free(cores);
}

/* The plot of a sweep: with perplexities (the test's, else the validation's), perplexity against
 * parameters and against training tokens/s (trained_rate: each point's over its training run,
 * else tt-bench's measurement), log scales fitted to the points, a colour and a key entry per
 * family, each Pareto front drawn as a line and its points labelled with their rank and cores
 * (u: unmasked) or their Transformer-XL (M: memory, M0: none) as panel_labels places them, the
 * paper's figures beside ours; without perplexities, training tokens/s against parameters. PNG
 * and SVG through gnuplot, its script (data included) kept as DIR/sweep.gp. Returns 0, or -1
 * with why in err (gnuplot missing or failing: the CSV is there either way). */
static int sweep_plot(const char *dir, const sweep_point *p, int n, bool test, bool trained_rate,
                      const bench_paper_row *paper, char *err, size_t errlen)
{
    const char *rate = trained_rate ? "training tokens/s (over each training run)"
                                    : "training tokens/s (measured by tt-bench)";
    bool ppl = false, tps = false, present[4] = {false};
    for (int i = 0; i < n; i++) ppl |= !isnan(p[i].ppl), tps |= !isnan(p[i].tps);
    if (!ppl && !tps) return tt_errf(err, errlen, "nothing to plot: no perplexity (--train-steps) and "
                                     "no throughput (no GPU)");
    char *script = tt_xasprintf("%s/sweep.gp", dir);
    FILE *f = fopen(script, "w");
    if (!f) {
        tt_errf(err, errlen, "%s: cannot write", script);
        free(script);
        return -1;
    }
    /* each axis's extent over the points drawn on it (the paper's with the parameters) */
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    int *fam = tt_xcalloc((size_t)n, sizeof *fam);
    for (int i = 0; i < n; i++) {
        while (fam[i] < 3 && strcmp(family_name[fam[i]], p[i].family)) fam[i]++;
        present[fam[i]] = true;
        for (int k = 0; k < 3; k++) {
            const double v = axis_value(&p[i], k);
            if (!isnan(v) && (k == Y_PPL || !ppl || !isnan(p[i].ppl)))
                lo[k] = fmin(lo[k], v), hi[k] = fmax(hi[k], v);
        }
    }
    /* the paper's figures where it gives the parameters: drawn beside ours, hollow */
    const bool paper_pts = ppl && paper && paper->params;
    if (paper_pts) {
        fprintf(f, "$paper << EOD\n");
        for (int c = 0; c < 2; c++) {
            const double x = atof(paper->params) * 1e6;
            fprintf(f, "%.17g %.17g \"paper core-%d\"\n", x, paper->ppl[c], c + 1);
            lo[X_PARAMS] = fmin(lo[X_PARAMS], x), hi[X_PARAMS] = fmax(hi[X_PARAMS], x);
            lo[Y_PPL] = fmin(lo[Y_PPL], paper->ppl[c]), hi[Y_PPL] = fmax(hi[Y_PPL], paper->ppl[c]);
        }
        fprintf(f, "EOD\n");
    }
    char range[3][96];
    for (int k = 0; k < 3; k++) { /* a margin of 5% of the extent (as a ratio) each side */
        const double pad = pow(hi[k] / lo[k], 0.05) * (k == Y_PPL ? 1.08 : 1.03);
        if (isfinite(lo[k]) && lo[k] > 0) {
            lo[k] /= pad, hi[k] *= pad;
            snprintf(range[k], sizeof range[k], "[%.6g:%.6g]", lo[k], hi[k]);
        } else {
            snprintf(range[k], sizeof range[k], "[*:*]");
        }
    }
    /* each point's label on each panel: over the parameters, and over the tokens/s */
    char(*labels)[2][48] = tt_xcalloc((size_t)n, sizeof *labels);
    for (int panel = 0; panel < 2; panel++) panel_labels(p, n, panel, ppl ? Y_PPL : X_TPS, lo, hi, labels);
    fprintf(f, "$points << EOD\n"); /* gnuplot skips NaN */
    for (int i = 0; i < n; i++) {
        for (int k = 0; k < 3; k++) {
            const double v = axis_value(&p[i], k);
            fprintf(f, isnan(v) ? "NaN " : "%.17g ", v);
        }
        fprintf(f, "%d \"%s\" \"%s\"\n", fam[i], labels[i][0], labels[i][1]);
    }
    fprintf(f, "EOD\n");
    free(fam), free(labels);
    pareto_block(f, "front_params", p, n, false);
    pareto_block(f, "front_tps", p, n, true);
    static const char *const terms[2][2] = {{"pngcairo size 1400,560", "png"}, {"svg size 1400,560", "svg"}};
    const char *y = test ? "test perplexity" : "validation perplexity";
    fprintf(f, "set grid\nset logscale x\nset logscale y\nset key outside below horizontal "
               "font ',9'\nset format x '%%.3s%%c'\nset format y '%%.4g'\n");
    for (int t = 0; t < 2; t++) {
        fprintf(f, "set terminal %s\nset output '%s/sweep.%s'\nset multiplot layout 1,%d\n", terms[t][0],
                dir, terms[t][1], ppl && tps ? 2 : 1);
        /* $points: 1 parameters, 2 training tokens/s, 3 perplexity, 4 family, 5 and 6 the label
         * on the parameters' and the tokens/s' plot ("": none) */
        for (int panel = 0; panel < (ppl ? 1 + tps : 1); panel++) {
            const bool by_tps = panel == 1;
            const int xc = by_tps ? 2 : 1, yc = ppl ? 3 : 2, lc = by_tps ? 6 : 5;
            const int xa = by_tps ? X_TPS : X_PARAMS, ya = ppl ? Y_PPL : X_TPS;
            log_axis_tics(f, "x", lo[xa], hi[xa]);
            log_axis_tics(f, "y", lo[ya], hi[ya]);
            fprintf(f, "set xlabel '%s'\nset ylabel '%s'\nset xrange %s\nset yrange %s\nplot ",
                    by_tps ? rate : "parameters", ppl ? y : rate,
                    range[xa], range[ya]);
            for (int k = 0; k < 4; k++)
                if (present[k])
                    fprintf(f, "$points using %d:(column(4) == %d ? column(%d) : NaN) with points pt 7 "
                               "ps 1.3 lc %d title '%s', ", xc, k, yc, k + 1, family_name[k]);
            fprintf(f, "$points using %d:%d:%d with labels offset 0,0.9 font ',8' notitle", xc, yc,
                    lc);
            if (ppl)
                fprintf(f, ", $front_%s using 1:2 with steps lw 2 lc rgb 'gray50' title 'Pareto front'",
                        by_tps ? "tps" : "params");
            if (paper_pts && !by_tps)
                fprintf(f, ", $paper using 1:2 with points pt 6 ps 2 lc rgb 'black' title 'the paper "
                           "(unmasked)', '' every ::0::0 using 1:2:3 with labels offset 0,1.2 font ',8' "
                           "notitle, '' every ::1::1 using 1:2:3 with labels offset 0,-1.2 font ',8' "
                           "notitle");
            fprintf(f, "\n");
        }
        fprintf(f, "unset multiplot\n");
    }
    fclose(f);
    const int rc = tt_gnuplot(NULL, script, NULL, err, errlen);
    free(script);
    if (rc == 1)
        return tt_errf(err, errlen, "gnuplot failed: not found on PATH (Debian: apt-get install "
                       "gnuplot-nox)");
    return rc;
}

static void sweep_usage(FILE *f)
{
    fprintf(f,
            "usage: tt-bench sweep SPEC --rank LIST --cores LIST [--seq-len LIST] [--causal LIST]\n"
            "                      [--txl|--no-txl|--txl-only] [--train-steps K [--eval-interval E]\n"
            "                      [--patience P] [--lr LIST]] [--steps K] [--out DIR] [--resume]\n"
            "Every combination of rank, cores (and seq_len) of the tensorized SPEC, for each mask of\n"
            "--causal (true,false; default SPEC's), and with --txl the Transformer-XL of SPEC's shape\n"
            "with mem_len = seq_len and 0 (--txl-only: those alone; no --rank or --cores needed):\n"
            "parameters and FLOPs per token; on a GPU, training and evaluation tokens/s, step time,\n"
            "memory and MFU; with --train-steps, each trained K steps as tt-train would, validated\n"
            "every E steps and at the end, stopped after P validations without a new best, and\n"
            "scored on data.test from its best weights; --lr tries each rate at a family's first\n"
            "point and trains the family with the best. Writes DIR/sweep.csv, DIR/table.md (the same\n"
            "as a Markdown table, the Pareto fronts and, for the paper's shapes, its figures),\n"
            "DIR/lr_search.csv with --lr (default DIR: sweep-<spec name>) and, through gnuplot,\n"
            "DIR/sweep.png and DIR/sweep.svg (perplexity against parameters, beside the paper's, and\n"
            "training tokens/s, the Pareto fronts marked). --resume keeps the rows of DIR's files\n"
            "whose points are finished (the same spec hash and patience) and trains the rest.\n"
            "LISTs: 8,16,32.\n");
}

/* --- the sweep's files, kept across runs for --resume --------------------------------------- */

/* The training result row i of t holds (a sweep.csv or an lr_search.csv row). */
static sweep_result old_result(const csv_rows *t, int i)
{
    return (sweep_result){atol(csv_cell(t, i, "steps")), atol(csv_cell(t, i, "best_step")),
                          csv_number(t, i, "valid_ppl"), csv_number(t, i, "test_ppl"),
                          csv_number(t, i, "seconds"), csv_number(t, i, "trained_tokens_per_s")};
}

static void buf_value(tt_buf *b, double v, const char *fmt)
{
    if (!isnan(v)) tt_buf_printf(b, fmt, v);
}

/* What a sweep writes and, with --resume, what the last run of it wrote. */
typedef struct {
    char *csv_path, *lr_path;
    csv_rows old, old_lr; /* the last run's rows (none without --resume) */
    tt_buf rows;          /* this run's sweep.csv rows so far */
    tt_buf lr_rows;       /* this run's lr_search.csv rows of the searches that ended */
} sweep_files;

/* What every point of a sweep shares. */
typedef struct {
    const tt_spec *base;
    long vocab;
    const sweep_data *data;
    const sweep_budget *budget;
    sweep_files *io;
    tt_gpu *gpu;           /* NULL: no GPU */
    const tt_cache *cache; /* the tuning choices bench_measure takes (NULL: none) */
    long measure_steps;    /* --steps */
    const char *card;      /* the GPU's name, or "cpu" */
} sweep_ctx;

/* One lr_search.csv row: a rate's trial at a family's first point. */
static void lr_row(tt_buf *b, family f, double lr, const sweep_result *r, bool chosen, long patience,
                   const char *hash)
{
    tt_buf_printf(b, "%s,%.9g,%ld,", family_name[f], lr, r->steps);
    buf_value(b, r->valid_ppl, "%.9g");
    tt_buf_printf(b, ",%d,%ld,", chosen, r->best_step);
    buf_value(b, r->test_ppl, "%.9g");
    tt_buf_printf(b, ",");
    buf_value(b, r->seconds, "%.3f");
    tt_buf_printf(b, ",%ld,%s,", patience, hash);
    buf_value(b, r->train_tok_s, "%.6g");
    tt_buf_printf(b, "\n");
}

/* A family's learning rate: with --lr, each rate trained at the family's first point (its
 * results in trials, a row each in lr_search.csv as it ends and a line on stderr; with --resume a
 * trial the last run finished, in lr_search.csv or as that point's row in sweep.csv, is read
 * back, not trained), the one of the best validation perplexity chosen; else the spec's.
 * Returns the index of the chosen trial, -1 when there was no search or no trial trained (then
 * *lr is the spec's), -2 when lr_search.csv cannot be written (why in err). */
static int lr_search(const sweep_ctx *cx, family f, const value_list *lrs, const int first[3],
                     sweep_result *trials, double *lr, char *err, size_t errlen)
{
    const sweep_budget *b = cx->budget;
    sweep_files *io = cx->io;
    *lr = cx->base->train.lr;
    int chosen = -1;
    char why[4096], hash[SWEEP_MAX][65];
    for (int i = 0; i < lrs->n; i++) {
        tt_spec s = point_spec(cx->base, f, first[0], first[1], first[2], lrs->v[i], b->steps,
                               b->eval_interval);
        spec_sha256(&s, hash[i]);
        trials[i] = NO_RESULT;
        /* the last run's trial, or else its point of this spec: the same training */
        int old = csv_reuse(&io->old_lr, hash[i], b->patience, "valid_ppl");
        const csv_rows *from = &io->old_lr;
        if (old < 0 && (old = csv_find(&io->old, hash[i], b->patience, "valid_ppl")) >= 0)
            from = &io->old;
        int rc = 0;
        if (old >= 0) {
            trials[i] = old_result(from, old);
        } else {
            tt_layout l;
            rc = tt_layout_build(&s.model, cx->vocab, &l, why, sizeof why);
            if (rc == 0) {
                rc = sweep_train(&s, &l, cx->data, b, &trials[i], why, sizeof why);
                tt_layout_free(&l);
            }
        }
        if (rc == 0) {
            fprintf(stderr, "lr search %s: lr %g: valid ppl %.3f (best at step %ld of %ld)%s\n",
                    family_name[f], lrs->v[i], trials[i].valid_ppl, trials[i].best_step,
                    trials[i].steps, old >= 0 ? ", the last run's" : "");
            if (chosen < 0 || trials[i].valid_ppl < trials[chosen].valid_ppl) chosen = i;
        } else {
            trials[i].valid_ppl = NAN;
            fprintf(stderr, "lr search %s: lr %g: not trained: %s\n", family_name[f], lrs->v[i], why);
        }
        /* the file as it stands: the searches that ended, then this one's trials so far (the
         * chosen one marked once the last has run); after the last, the searches that ended */
        const bool last = i == lrs->n - 1;
        tt_buf now = {0};
        if (io->lr_rows.len) tt_buf_append(&now, io->lr_rows.data, io->lr_rows.len);
        for (int k = 0; k <= i; k++)
            lr_row(&now, f, lrs->v[k], &trials[k], last && k == chosen, b->patience, hash[k]);
        const int saved = csv_save(io->lr_path, LR_HEADER, &now, &io->old_lr, err, errlen);
        if (last) {
            tt_buf_free(&io->lr_rows);
            io->lr_rows = now;
        } else {
            tt_buf_free(&now);
        }
        if (saved != 0) return -2;
    }
    if (chosen >= 0) *lr = lrs->v[chosen];
    fprintf(stderr, "lr search %s: lr %g%s\n", family_name[f], *lr, chosen < 0 ? " (the spec's: no "
            "rate trained)" : "");
    return chosen;
}

/* A point's row of sweep.csv (SWEEP_HEADER's columns): its spec s and hash, m's costs and
 * measured figures, r its training, status, and whether its lr came from the search. */
static void point_row(tt_buf *out, const sweep_ctx *cx, const tt_spec *s, family f,
                      const bench_model *m, const sweep_result *r, const char *status,
                      bool searched, const char *hash)
{
    const bool txl = f >= FAM_TXL_MEM;
    if (txl)
        tt_buf_printf(out, ",,");
    else
        tt_buf_printf(out, "%d,%d,", s->model.rank, s->model.cores);
    tt_buf_printf(out, "%d,%.17g,%.17g,%.17g,", s->model.seq_len, m->costs.params_total,
                  m->costs.fwd_total, m->costs.train_total);
    const double measured_cols[5] = {m->train_tok_s, m->eval_tok_s, m->step_ms, m->peak_bytes, m->mfu};
    static const char *const fmts[5] = {"%.6g", "%.6g", "%.6g", "%.0f", "%.4g"};
    for (int i = 0; i < 5; i++) {
        buf_value(out, measured_cols[i], fmts[i]);
        tt_buf_printf(out, ",");
    }
    tt_buf_printf(out, "%ld,", cx->budget->steps);
    buf_value(out, r->valid_ppl, "%.9g");
    tt_buf_printf(out, ",%s,%s,%d,%.9g,%s,%ld,%ld,", status, family_name[f],
                  txl ? s->model.mem_len : 0, s->train.lr, searched ? "search" : "spec", r->steps,
                  r->best_step);
    buf_value(out, r->test_ppl, "%.9g");
    tt_buf_printf(out, ",");
    buf_value(out, r->seconds, "%.3f");
    tt_buf_printf(out, ",%llu,%s,%s,%s,%ld,", (unsigned long long)s->train.seed, hash, TT_COMMIT,
                  cx->card, cx->budget->patience);
    buf_value(out, r->train_tok_s, "%.6g");
    tt_buf_printf(out, "\n");
}

/* One point of the grid (family f's at rank, cores and seq_len, trained with lr): its row of
 * sweep.csv, the last run's where --resume finds it, else measured on the GPU and trained (trial:
 * the search's run of this point with the chosen lr, taken as it is; NULL: train it), the file
 * saved; a line on stderr; and how the plot draws it in drawn. Returns 0, or 1 when sweep.csv
 * cannot be written (a last line on stderr says why). */
static int sweep_one(const sweep_ctx *cx, family f, int rank, int cores, int seq_len, double lr,
                     bool searched, const sweep_result *trial, sweep_point *drawn)
{
    const sweep_budget *b = cx->budget;
    const bool txl = f >= FAM_TXL_MEM;
    tt_spec s = point_spec(cx->base, f, rank, cores, seq_len, lr, b->steps, b->eval_interval);
    fprintf(stderr, "%s", family_name[f]);
    if (!txl) fprintf(stderr, ", rank %d, cores %d", rank, cores);
    fprintf(stderr, ", seq_len %d: ", s.model.seq_len);
    bench_model m;
    bench_model_init(&m, "point", &s, cx->vocab);
    char status[4200] = "ok", why[4096], hash[65];
    spec_sha256(&s, hash);
    sweep_result r = NO_RESULT;
    csv_rows *old_rows = &cx->io->old;
    const int old = csv_reuse(old_rows, hash, b->patience, "status");
    if (old >= 0) { /* the last run's row, as it was */
        tt_buf_printf(&cx->io->rows, "%s\n", old_rows->lines[old]);
        m.train_tok_s = csv_number(old_rows, old, "train_tokens_per_s");
        r = old_result(old_rows, old);
    } else {
        tt_layout l;
        if (tt_layout_build(&s.model, cx->vocab, &l, why, sizeof why) != 0) {
            snprintf(status, sizeof status, "invalid: %s", why);
        } else {
            if (cx->gpu) {
                bench_measure(&m, cx->gpu, cx->cache, cx->measure_steps);
                if (m.failed[0]) snprintf(status, sizeof status, "not measured: %s", m.failed);
            }
            if (trial) {
                r = *trial;
            } else if (b->steps && sweep_train(&s, &l, cx->data, b, &r, why, sizeof why) != 0) {
                r.valid_ppl = r.test_ppl = NAN;
                if (!strcmp(status, "ok")) snprintf(status, sizeof status, "not trained: %s", why);
            }
            tt_layout_free(&l);
        }
        csv_clean(status);
        point_row(&cx->io->rows, cx, &s, f, &m, &r, status, searched, hash);
    }
    char err[4096];
    const int rc = csv_save(cx->io->csv_path, SWEEP_HEADER, &cx->io->rows, old_rows, err, sizeof err);
    *drawn = (sweep_point){m.costs.params_total, m.train_tok_s,
                           cx->data->test.n ? r.test_ppl : r.valid_ppl, "", family_name[f], rank,
                           cores, s.model.seq_len, txl ? s.model.mem_len : 0, s.train.lr,
                           r.valid_ppl, r.test_ppl, r.steps, r.best_step, m.train_tok_s,
                           r.train_tok_s};
    if (txl)
        snprintf(drawn->label, sizeof drawn->label, "TXL M%s", s.model.mem_len ? "" : "0");
    else
        snprintf(drawn->label, sizeof drawn->label, "R%d c%d%s", rank, cores,
                 f == FAM_UNMASKED ? " u" : "");
    char tps[64], pp[64], tp[64];
    bench_human(m.train_tok_s, "tokens/s", tps, sizeof tps);
    bench_human(r.valid_ppl, "ppl", pp, sizeof pp);
    bench_human(r.test_ppl, "ppl", tp, sizeof tp);
    fprintf(stderr, "%s%.2fM parameters, train %s tokens/s, valid ppl %s, test ppl %s%s%s\n",
            old >= 0 ? "the last run's: " : "", m.costs.params_total / 1e6, tps, pp, tp,
            strcmp(status, "ok") ? ": " : "", strcmp(status, "ok") ? status : "");
    if (rc != 0) fprintf(stderr, "tt-bench sweep: %s\n", err); /* the last line: the sweep stops */
    return rc ? 1 : 0;
}

/* The sweep's options beside SPEC. */
typedef struct {
    value_list ranks, cores, seqs, causal, lrs;
    bool txl, txl_only, resume;
    sweep_budget budget;
    long steps; /* measured steps on the GPU */
    const char *out;
} sweep_options;

static int sweep_parse(int argc, char **argv, sweep_options *o)
{
    enum { RANK = 256, CORES, SEQ, CAUSAL, TXL, NO_TXL, LR, TRAIN_STEPS, EVAL_INTERVAL, PATIENCE,
           STEPS, OUT, RESUME, TXL_ONLY };
    static const struct option longs[] = {{"rank", required_argument, 0, RANK},
                                          {"cores", required_argument, 0, CORES},
                                          {"seq-len", required_argument, 0, SEQ},
                                          {"causal", required_argument, 0, CAUSAL},
                                          {"txl", no_argument, 0, TXL},
                                          {"no-txl", no_argument, 0, NO_TXL},
                                          {"txl-only", no_argument, 0, TXL_ONLY},
                                          {"lr", required_argument, 0, LR},
                                          {"train-steps", required_argument, 0, TRAIN_STEPS},
                                          {"eval-interval", required_argument, 0, EVAL_INTERVAL},
                                          {"patience", required_argument, 0, PATIENCE},
                                          {"steps", required_argument, 0, STEPS},
                                          {"out", required_argument, 0, OUT},
                                          {"resume", no_argument, 0, RESUME},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    *o = (sweep_options){.steps = 20};
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":h", longs, NULL)) != -1) {
        if (c == RANK && parse_list("--rank", optarg, LIST_INT, 1, 4096, &o->ranks) != 0) return 2;
        if (c == CORES && parse_list("--cores", optarg, LIST_INT, 1, 64, &o->cores) != 0) return 2;
        if (c == SEQ && parse_list("--seq-len", optarg, LIST_INT, 1, 8192, &o->seqs) != 0) return 2;
        if (c == CAUSAL && parse_list("--causal", optarg, LIST_BOOL, 0, 1, &o->causal) != 0) return 2;
        if (c == LR && parse_list("--lr", optarg, LIST_REAL, 0, 1, &o->lrs) != 0) return 2;
        if (c == TXL || c == NO_TXL || c == TXL_ONLY) {
            o->txl = c != NO_TXL;
            o->txl_only = c == TXL_ONLY;
        }
        if (c == TRAIN_STEPS || c == EVAL_INTERVAL || c == PATIENCE || c == STEPS) {
            static const char *const names[] = {"train-steps", "eval-interval", "patience", "steps"};
            long *const to[] = {&o->budget.steps, &o->budget.eval_interval, &o->budget.patience,
                                &o->steps};
            char *end;
            const long v = strtol(optarg, &end, 10);
            if (*end || end == optarg || v < 1 || v > 10000000) {
                fprintf(stderr, "tt-bench sweep: --%s is a count from 1, not '%s'\n",
                        names[c - TRAIN_STEPS], optarg);
                return 2;
            }
            *to[c - TRAIN_STEPS] = v;
        }
        if (c == OUT) o->out = optarg;
        if (c == RESUME) o->resume = true;
        if (c == 'h') {
            sweep_usage(stdout);
            return 0;
        }
        if (c == '?' || c == ':') return tt_opt_refuse("tt-bench sweep", c, argv);
    }
    if (optind != argc - 1 || (!o->txl_only && (!o->ranks.n || !o->cores.n))) {
        fprintf(stderr, "tt-bench sweep: expected one spec, --rank and --cores (see tt-bench sweep "
                        "--help)\n");
        return 2;
    }
    const sweep_budget *b = &o->budget;
    if (!b->steps && (b->eval_interval || b->patience || o->lrs.n)) {
        fprintf(stderr, "tt-bench sweep: --%s needs --train-steps K (the points are trained)\n",
                b->eval_interval ? "eval-interval" : b->patience ? "patience" : "lr");
        return 2;
    }
    if (b->patience && !b->eval_interval) {
        fprintf(stderr, "tt-bench sweep: --patience needs --eval-interval E (the validations it "
                        "counts)\n");
        return 2;
    }
    return -1;
}

int bench_sweep_main(int argc, char **argv)
{
    sweep_options o;
    int rc = sweep_parse(argc, argv, &o);
    if (rc >= 0) return rc;
    const sweep_budget *b = &o.budget;
    char err[4096];
    tt_spec base;
    if (tt_spec_load(argv[optind], &base, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    rc = 0;
    long vocab = 0;
    sweep_data data = {{0}, {0}, {0}};
    tt_session ses;
    bool session = false;
    if (base.model.kind != TT_KIND_TENSORIZED) {
        fprintf(stderr, "tt-bench sweep: %s: the sweep is over rank and cores of kind: tensorized\n",
                base.path);
        rc = 2;
    } else if (o.txl && base.model.d_model % 2) {
        fprintf(stderr, "tt-bench sweep: --txl: %s: d_model %d is odd (Transformer-XL's sinusoids "
                "need an even width)\n", base.path, base.model.d_model);
        rc = 2;
    } else if (b->steps) { /* the data: the vocabulary from data.train, as tt-train builds it */
        if (tt_session_open(&ses, argv[optind], err, sizeof err) != 0 ||
            (session = true, tt_session_tokens(&ses, "train", &data.train, err, sizeof err)) != 0 ||
            tt_session_tokens(&ses, "valid", &data.valid, err, sizeof err) != 0 ||
            (base.data.test && tt_session_tokens(&ses, "test", &data.test, err, sizeof err) != 0)) {
            fprintf(stderr, "tt-bench sweep: %s\n", err);
            rc = 2;
        } else {
            vocab = ses.vocab.n;
        }
    } else {
        rc = bench_resolve_vocab(&base, &vocab);
    }
    char *dir = NULL;
    if (!rc) {
        const char *slash = strrchr(base.path, '/');
        const char *name = slash ? slash + 1 : base.path;
        dir = o.out ? tt_xstrdup(o.out) : tt_xasprintf("sweep-%.*s", (int)strcspn(name, "."), name);
        if (tt_mkdir_p(dir, err, sizeof err) != 0) {
            fprintf(stderr, "tt-bench sweep: %s\n", err);
            rc = 2;
        }
    }
    sweep_files io = {0};
    if (!rc) {
        io.csv_path = tt_xasprintf("%s/sweep.csv", dir);
        io.lr_path = tt_xasprintf("%s/lr_search.csv", dir);
        if (o.resume && (csv_rows_read(io.csv_path, SWEEP_HEADER, &io.old, err, sizeof err) != 0 ||
                         csv_rows_read(io.lr_path, LR_HEADER, &io.old_lr, err, sizeof err) != 0)) {
            fprintf(stderr, "tt-bench sweep: %s\n", err);
            rc = 2;
        }
    }
    if (rc) {
        csv_rows_free(&io.old);
        csv_rows_free(&io.old_lr);
        free(io.csv_path);
        free(io.lr_path);
        if (session) tt_session_close(&ses);
        tt_tokens_free(&data.train);
        tt_tokens_free(&data.valid);
        tt_tokens_free(&data.test);
        free(dir);
        tt_spec_free(&base);
        return rc;
    }
    if (!o.seqs.n) o.seqs.v[o.seqs.n++] = base.model.seq_len;
    if (!o.causal.n) o.causal.v[o.causal.n++] = base.model.causal;
    family fams[SWEEP_MAX + 2];
    int nf = 0;
    for (int i = 0; i < o.causal.n && !o.txl_only; i++)
        fams[nf++] = o.causal.v[i] ? FAM_CAUSAL : FAM_UNMASKED;
    if (o.txl) fams[nf++] = FAM_TXL_MEM, fams[nf++] = FAM_TXL_NOMEM;

    tt_gpu g;
    tt_cache cache;
    const bool on_gpu = tt_gpu_open(&g, 0, err, sizeof err) == 0;
    const bool cached = on_gpu && tt_cache_open(&cache, NULL, err, sizeof err) == 0;
    if (!on_gpu)
        fprintf(stderr, "tt-bench sweep: no throughput columns: measuring needs a GPU (%s)\n", err);
    char card[256];
    snprintf(card, sizeof card, "%s", on_gpu ? g.name : "cpu");
    csv_clean(card);
    const sweep_ctx cx = {&base, vocab, &data, b, &io, on_gpu ? &g : NULL, cached ? &cache : NULL,
                          o.steps, card};
    {
        int total = 0, point = 0;
        for (int k = 0; k < nf; k++)
            total += (fams[k] >= FAM_TXL_MEM ? 1 : o.ranks.n * o.cores.n) * o.seqs.n;
        sweep_point *plotted = tt_xcalloc((size_t)total, sizeof *plotted);
        for (int k = 0; k < nf && !rc; k++) {
            const family f = fams[k];
            const bool txl = f >= FAM_TXL_MEM;
            const int nr = txl ? 1 : o.ranks.n, nc = txl ? 1 : o.cores.n;
            const int first[3] = {txl ? 0 : (int)o.ranks.v[0], txl ? 0 : (int)o.cores.v[0],
                                  (int)o.seqs.v[0]};
            sweep_result trials[SWEEP_MAX];
            double lr = base.train.lr;
            const int chosen = o.lrs.n ? lr_search(&cx, f, &o.lrs, first, trials, &lr, err,
                                                   sizeof err) : -1;
            if (chosen == -2) {
                fprintf(stderr, "tt-bench sweep: %s\n", err);
                rc = 1;
                break;
            }
            for (int a = 0; a < nr && !rc; a++)
                for (int c = 0; c < nc && !rc; c++)
                    for (int q = 0; q < o.seqs.n && !rc; q++) {
                        const bool first_point = a == 0 && c == 0 && q == 0;
                        fprintf(stderr, "[%d/%d] ", ++point, total);
                        rc = sweep_one(&cx, f, txl ? 0 : (int)o.ranks.v[a], txl ? 0 : (int)o.cores.v[c],
                                       (int)o.seqs.v[q], lr, chosen >= 0,
                                       chosen >= 0 && first_point ? &trials[chosen] : NULL,
                                       &plotted[point - 1]);
                    }
        }
        /* the grid's rows alone: the last run's others (another grid's) are dropped */
        if (!rc && csv_save(io.csv_path, SWEEP_HEADER, &io.rows, NULL, err, sizeof err) != 0) {
            fprintf(stderr, "tt-bench sweep: %s\n", err);
            rc = 1;
        }
        if (!rc && o.lrs.n &&
            csv_save(io.lr_path, LR_HEADER, &io.lr_rows, NULL, err, sizeof err) != 0) {
            fprintf(stderr, "tt-bench sweep: %s\n", err);
            rc = 1;
        }
        if (!rc) {
            printf("wrote %s\n", io.csv_path);
            if (o.lrs.n) printf("wrote %s\n", io.lr_path);
            const bench_paper_row *paper = bench_paper_of(&base.model, vocab);
            const bool trained_rate = use_trained_rate(plotted, total);
            if (sweep_table(dir, plotted, total, paper, err, sizeof err) == 0) {
                printf("wrote %s/table.md\n", dir);
            } else {
                fprintf(stderr, "tt-bench sweep: %s\n", err);
                rc = 1;
            }
            if (sweep_plot(dir, plotted, total, data.test.n > 0, trained_rate, paper, err,
                           sizeof err) == 0)
                printf("wrote %s/sweep.png and %s/sweep.svg\n", dir, dir);
            else
                printf("no plot: %s\n", err);
        }
        free(plotted);
    }
    if (cached) tt_cache_close(&cache);
    if (on_gpu) tt_gpu_close(&g);
    if (session) tt_session_close(&ses);
    tt_tokens_free(&data.train);
    tt_tokens_free(&data.valid);
    tt_tokens_free(&data.test);
    csv_rows_free(&io.old);
    csv_rows_free(&io.old_lr);
    tt_buf_free(&io.rows);
    tt_buf_free(&io.lr_rows);
    free(io.csv_path);
    free(io.lr_path);
    free(dir);
    tt_spec_free(&base);
    return rc;
}
