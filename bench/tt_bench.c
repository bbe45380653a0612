/* tt-bench: what a spec'd model costs against Transformer-XL, side by side with ratios: parameters
 * by component, FLOPs per token (forward and training step) and the training batch's memory, all
 * from gen/report.c (the counting code of ttgen's report), plus the paper's row where the spec is
 * one of its models; and, on a GPU, each model measured: training and evaluation tokens/s, step
 * time, device memory and model-FLOPs utilization (without a GPU those print "-" and a line
 * says why). Subcommands: `sweep` (a grid of rank, cores and mask beside Transformer-XL, each
 * point trained and scored as tt-train and tt-eval would) and `plot` (tt-train's logs on one
 * chart, through gnuplot).
 * Exit codes: 0 done, 2 bad usage, a bad spec or a vocabulary that cannot be read. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cache.h"
#include "cards.h"
#include "corpus.h"
#include "curve.h"
#include "engine.h"
#include "session.h"
#include "sha256.h"
#include "gpu.h"
#include "gpu_model.h"
#include "model.h"
#include "report.h"
#include "rng.h"
#include "spec.h"
#include "util.h"

typedef enum { OUT_TEXT, OUT_JSON, OUT_CSV } out_format;

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tt-bench SPEC [--vs TXL_SPEC] [--steps K] [--profile] [--json | --csv]\n"
            "What SPEC costs against a Transformer-XL: parameters, FLOPs per token, memory, with\n"
            "ratios (SPEC / counterpart), and the paper's figures where SPEC is one of its models.\n\n"
            "  --vs TXL_SPEC  the counterpart (kind: transformer-xl); default: the Transformer-XL of\n"
            "                 SPEC's width, layers, d_inner, segment, vocabulary and softmax, with\n"
            "                 mem_len = seq_len and d_head the largest divisor of d_model up to 64\n"
            "  --steps K      on a GPU, time K training steps and K evaluation runs of each model\n"
            "                 after 3 warm-up steps (default 20)\n"
            "  --profile      on a GPU, where one training step of SPEC goes: each role's time\n"
            "                 (embedding, qkv, attention, o, layernorm, ffn, softmax, optimizer),\n"
            "                 forward and backward, its share, its useful FLOPs and TFLOP/s,\n"
            "                 the fraction of the card's peak, its useful bytes and GB/s, and the\n"
            "                 fraction of the card's roofline, over K steps (--steps) replayed as\n"
            "                 one CUDA graph on one stream with an event node between the parts;\n"
            "                 beside it the step as trained (CUDA graph, two streams)\n"
            "  --json         one JSON object\n"
            "  --csv          model,kind,section,quantity,value,unit (see the README)\n"
            "  -h, --help\n\n"
            "tt-bench sweep SPEC --rank LIST --cores LIST ...   a grid of rank and cores (--help)\n"
            "tt-bench plot LOG.jsonl... [-o FILE.png] [--title T]   tt-train logs on one chart\n");
}

typedef struct {
    const char *spec, *vs;
    out_format format;
    long steps;
    int profile;
} options;

static int parse_args(int argc, char **argv, options *o)
{
    enum { VS = 256, JSON, CSV, STEPS, PROFILE };
    static const struct option longs[] = {{"vs", required_argument, 0, VS},
                                          {"profile", no_argument, 0, PROFILE},
                                          {"steps", required_argument, 0, STEPS},
                                          {"json", no_argument, 0, JSON},
                                          {"csv", no_argument, 0, CSV},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    opterr = 0;
    int c, formats = 0;
    while ((c = getopt_long(argc, argv, ":h", longs, NULL)) != -1) {
        if (c == PROFILE) {
            o->profile = 1;
        } else if (c == VS) {
            o->vs = optarg;
        } else if (c == STEPS) {
            char *end;
            o->steps = strtol(optarg, &end, 10);
            if (*end || end == optarg || o->steps < 1 || o->steps > 100000) {
                fprintf(stderr, "tt-bench: --steps is a count from 1 to 100000, not '%s'\n", optarg);
                return 2;
            }
        } else if (c == JSON || c == CSV) {
            o->format = c == JSON ? OUT_JSON : OUT_CSV;
            formats++;
        } else if (c == 'h') {
            usage(stdout);
            exit(0);
        } else {
            return tt_opt_refuse("tt-bench", c, argv);
        }
    }
    if (formats > 1) {
        fprintf(stderr, "tt-bench: --json and --csv exclude each other\n");
        return 2;
    }
    if (optind != argc - 1) {
        fprintf(stderr, "tt-bench: expected one spec (usage: tt-bench SPEC [--vs TXL_SPEC] [--json|--csv])\n");
        return 2;
    }
    o->spec = argv[optind];
    return 0;
}

/* One model of the comparison: its spec, what the cost model says, and what a GPU measured (NAN
 * where nothing was: no GPU, or the model did not fit, which failed says). */
typedef struct {
    const char *role; /* "ours" or "counterpart" */
    const tt_spec *spec;
    tt_costs costs;
    double train_tok_s, eval_tok_s, step_ms, peak_bytes, mfu;
    char failed[4096]; /* why it was not measured on the GPU there was ("" when it was) */
} model;

static void model_init(model *m, const char *role, const tt_spec *spec, long vocab)
{
    m->role = role;
    m->spec = spec;
    tt_costs_compute(spec, vocab, &m->costs);
    m->train_tok_s = m->eval_tok_s = m->step_ms = m->peak_bytes = m->mfu = NAN;
    m->failed[0] = 0;
}

#define WARMUP_STEPS 3 /* capture the step's CUDA graphs and time the products' algorithms */

/* A random token id of Zipf-like frequency, p(id) about 1 / (id + 1) (log-uniform over 1 ..
 * vocab), as natural text's: an adaptive softmax's clusters get the share of rows they get on
 * real corpora (uniform ids would put nearly every row in its tails). */
static int32_t zipf_id(uint64_t stream, uint64_t i, long vocab)
{
    const double id = exp(tt_uniform(7, stream, i) * log((double)vocab + 1)) - 1;
    return (int32_t)(id < 0 ? 0 : id >= (double)vocab ? vocab - 1 : id);
}

/* ids [rows] shuffled by the draws of stream (Fisher-Yates). */
static void shuffle(int32_t *ids, int rows, uint64_t stream)
{
    for (int i = rows - 1; i > 0; i--) {
        int j = (int)(tt_uniform(9, stream, (uint64_t)i) * (float)(i + 1));
        if (j > i) j = i; /* the float product rounded up */
        const int32_t t = ids[i];
        ids[i] = ids[j];
        ids[j] = t;
    }
}

/* Random tokens of step s (never all zeros): the same Zipf draws every step, each step in an
 * order of its own. So the adaptive softmax's clusters hold the same number of rows in every
 * step, as they nearly do in training (where a step with other counts is captured once and
 * kept: gpu_model.h); with new draws each step, the timed steps would be mostly captures. */
static void random_tokens(int32_t *in, int32_t *tg, int rows, long vocab, long s)
{
    for (int i = 0; i < rows; i++) {
        in[i] = zipf_id(0, (uint64_t)i, vocab);
        tg[i] = zipf_id(1, (uint64_t)i, vocab);
    }
    shuffle(in, rows, 2 * (uint64_t)s);
    shuffle(tg, rows, 2 * (uint64_t)s + 1);
}

/* Milliseconds of the work queued on the device's stream by `steps` calls of one, between CUDA
 * events (each call ends with the host synchronization a training step or run has anyway). */
static double timed_ms(const tt_gpu *g, long steps, void (*one)(void *, long), void *ctx, long first)
{
    cudaEvent_t ev[2];
    for (int i = 0; i < 2; i++) TT_CUDA(cudaEventCreate(&ev[i]));
    TT_CUDA(cudaEventRecord(ev[0], g->stream));
    for (long s = 0; s < steps; s++) one(ctx, first + s);
    TT_CUDA(cudaEventRecord(ev[1], g->stream));
    TT_CUDA(cudaEventSynchronize(ev[1]));
    float ms;
    TT_CUDA(cudaEventElapsedTime(&ms, ev[0], ev[1]));
    for (int i = 0; i < 2; i++) TT_CUDA(cudaEventDestroy(ev[i]));
    return ms;
}

typedef struct {
    tt_gpu_lm *lm;
    int32_t *in, *tg;
    int rows;
    long vocab;
    bool train;
} run_ctx;

/* One training step (forward, backward, Adam) or evaluation run (forward) at step s; a
 * Transformer-XL carries its memory from the call before. */
static void run_one(void *p, long s)
{
    run_ctx *c = p;
    random_tokens(c->in, c->tg, c->rows, c->vocab, s);
    tt_lm_opts o = {.train = c->train, .seed = 1, .step = (uint64_t)s};
    tt_lm_result r;
    tt_gpu_lm_continue(c->lm, s > 1);
    if (c->train)
        tt_gpu_lm_train_step(c->lm, c->in, c->tg, &o, s, &r);
    else
        tt_gpu_lm_run(c->lm, c->in, c->tg, &o, false, &r);
}

/* m trained and evaluated on the GPU at its spec's shapes (train.batch x seq_len, its precision)
 * from its initial weights: `steps` training steps and `steps` evaluation runs, each after
 * WARMUP_STEPS of its kind, timed between CUDA events. A model that cannot be opened (too
 * little device memory among the reasons) is left unmeasured, with why in m->failed. */
static void measure(model *m, tt_gpu *g, const tt_cache *cache, long steps)
{
    const tt_spec *s = m->spec;
    char err[4096];
    tt_layout l;
    if (tt_layout_build(&s->model, m->costs.vocab, &l, err, sizeof err) != 0) {
        snprintf(m->failed, sizeof m->failed, "%s", err);
        return;
    }
    const int batch = s->train.batch, rows = batch * s->model.seq_len;
    tt_gpu_lm *lm;
    if (tt_gpu_lm_open(&lm, g, s, &l, batch, cache, err, sizeof err) != 0) {
        snprintf(m->failed, sizeof m->failed, "%s", err);
        tt_layout_free(&l);
        return;
    }
    float *w = tt_xmalloc(l.n_floats * sizeof *w);
    tt_layout_init(&l, w, 1);
    TT_CUDA(cudaMemcpy(tt_gpu_lm_weights(lm), w, l.n_floats * 4, cudaMemcpyHostToDevice));
    tt_gpu_lm_weights_changed(lm);
    run_ctx c = {lm, tt_xmalloc((size_t)rows * 4), tt_xmalloc((size_t)rows * 4), rows,
                 m->costs.vocab, true};
    for (long i = 1; i <= WARMUP_STEPS; i++) run_one(&c, i);
    const double train_ms = timed_ms(g, steps, run_one, &c, WARMUP_STEPS + 1);
    c.train = false;
    for (long i = 1; i <= WARMUP_STEPS; i++) run_one(&c, i);
    const double eval_ms = timed_ms(g, steps, run_one, &c, WARMUP_STEPS + 1);
    m->step_ms = train_ms / (double)steps;
    m->train_tok_s = rows * 1e3 / m->step_ms;
    m->eval_tok_s = rows * (double)steps * 1e3 / eval_ms;
    m->peak_bytes = (double)tt_gpu_lm_bytes(lm);
    const tt_card *card = tt_card_lookup(g->name);
    if (card)
        m->mfu = 100 * m->train_tok_s * m->costs.train_total /
                 (tt_card_peak_tflops(card, s->train.precision) * 1e12);
    free(c.in);
    free(c.tg);
    free(w);
    tt_gpu_lm_close(lm);
    tt_layout_free(&l);
}

/* The measured quantities, in the order of every output. */
#define N_MEASURED 5
static const char *const measured_name[N_MEASURED] = {
    "train_tokens_per_s", "eval_tokens_per_s", "step_ms", "peak_memory_bytes", "mfu_percent"};
static const char *const measured_unit[N_MEASURED] = {"tokens/s", "tokens/s", "ms", "bytes", "%"};
static double measured(const model *m, int i)
{
    const double v[N_MEASURED] = {m->train_tok_s, m->eval_tok_s, m->step_ms, m->peak_bytes, m->mfu};
    return v[i];
}

/* The vocabulary size: model.vocab, else counted from data.train as ttgen and tt-train do. */
static int resolve_vocab(const tt_spec *spec, long *vocab)
{
    char err[4096];
    *vocab = spec->model.vocab;
    if (*vocab) return 0;
    if (!spec->data.train) {
        fprintf(stderr, "%s: model.vocab is 'data' but the spec names no data.train file\n", spec->path);
        return 2;
    }
    if (tt_corpus_count_vocab(spec->data.train, vocab, err, sizeof err) != 0 ||
        tt_spec_check_vocab(spec, *vocab, err, sizeof err) != 0) {
        fprintf(stderr, "%s: cannot take the vocabulary from data.train: %s\n", spec->path, err);
        return 2;
    }
    return 0;
}

/* The default counterpart's d_head: the largest divisor of d_model up to 64 (64 for a multiple of
 * 64; d_model 410 gives kimiyoung's 10 heads of 41), so that n_head x d_head = d_model. */
static int default_d_head(int d_model)
{
    int dh = d_model < 64 ? d_model : 64;
    while (d_model % dh) dh--;
    return dh;
}

/* The Transformer-XL of ours's shape: everything but the attention taken as it is (vocabulary,
 * softmax, tying, dropout, training batch and precision), memory as long as the segment. Shares
 * ours's strings: not to be freed. */
static int default_counterpart(const tt_spec *ours, tt_spec *txl)
{
    if (ours->model.d_model % 2) {
        fprintf(stderr, "%s: no default Transformer-XL counterpart: d_model %d is odd (its sinusoids "
                        "need an even width); give one with --vs\n", ours->path, ours->model.d_model);
        return 2;
    }
    *txl = *ours;
    tt_model_spec *m = &txl->model;
    m->kind = TT_KIND_TXL;
    m->d_head = default_d_head(m->d_model);
    m->n_head = m->d_model / m->d_head;
    m->mem_len = m->seq_len;
    m->clamp_len = 0;
    m->dropatt = 0;
    m->rank = m->cores = 0;
    m->causal = true;
    m->position = TT_POS_NONE;
    txl->eval = (tt_eval_spec){m->seq_len, m->mem_len, 0};
    return 0;
}

static void describe(const model *m, char *out, size_t n)
{
    const tt_model_spec *s = &m->spec->model;
    if (s->kind == TT_KIND_TENSORIZED)
        snprintf(out, n, "tensorized, %d layers, D %d, R %d, %d core%s, N %d, F %d, vocab %ld%s%s",
                 s->layers, s->d_model, s->rank, s->cores, s->cores == 1 ? "" : "s", s->seq_len,
                 s->d_inner, m->costs.vocab, s->causal ? ", causal" : ", NOT causal",
                 s->position == TT_POS_KEY ? ", position: key" : "");
    else
        snprintf(out, n, "transformer-xl, %d layers, D %d, %d heads x %d, N %d, M %d, F %d, vocab %ld",
                 s->layers, s->d_model, s->n_head, s->d_head, s->seq_len, s->mem_len, s->d_inner,
                 m->costs.vocab);
}

/* --- the paper's rows (MODEL.md section 5), labelled as the paper's ----------------------------- */

typedef struct {
    const char *name;
    int layers, d_model, rank, seq_len, alt_seq_len, d_inner;
    long vocab;
    const char *params;      /* as the paper's FLOPs table gives it; NULL: not given */
    double ppl[2];           /* test perplexity, core-1 and core-2 (unmasked attention) */
    const char *flops_txl, *flops_ours; /* the paper's FLOPs claims (no definition given) */
} paper_row;

static const paper_row paper_rows[] = {
    {"PTB", 3, 256, 40, 32, 30, 2100, 10000, "12M", {57.9, 49.8}, "4.5B", "0.75B"},
    {"WikiText-103", 6, 256, 40, 80, 80, 2100, 267735, "85.5M", {20.9, 18.9}, "22.0B", "17.3B"},
    {"One-Billion", 8, 1024, 40, 80, 80, 2100, 793471, NULL, {20.5, 19.5}, NULL, NULL},
};

/* The paper's row of a tensorized model of the row's L, D, N, F and V (its rank and cores left
 * to the caller). */
static const paper_row *paper_of(const tt_model_spec *s, long vocab)
{
    if (s->kind != TT_KIND_TENSORIZED) return NULL;
    for (size_t i = 0; i < sizeof paper_rows / sizeof paper_rows[0]; i++) {
        const paper_row *p = &paper_rows[i];
        if (s->layers == p->layers && s->d_model == p->d_model &&
            (s->seq_len == p->seq_len || s->seq_len == p->alt_seq_len) && s->d_inner == p->d_inner &&
            vocab == p->vocab)
            return p;
    }
    return NULL;
}

/* The paper's row of a tensorized model with 1 or 2 cores and the row's L, D, R, N, F and V. */
static const paper_row *paper_match(const model *m)
{
    const tt_model_spec *s = &m->spec->model;
    const paper_row *p = paper_of(s, m->costs.vocab);
    return p && s->cores >= 1 && s->cores <= 2 && s->rank == p->rank ? p : NULL;
}

/* The paper's figures as (quantity, value, unit) rows; a figure it does not give is left out. */
typedef struct {
    const char *quantity, *text, *unit;
    double value;
} paper_fig;

static int paper_figures(const paper_row *p, int cores, paper_fig *f)
{
    static const double scale[] = {1e6, 1e9};
    int n = 0;
    if (p->params) f[n++] = (paper_fig){"parameters", p->params, "count", atof(p->params) * scale[0]};
    f[n++] = (paper_fig){cores == 1 ? "test_ppl_core1" : "test_ppl_core2", NULL, "ppl", p->ppl[cores - 1]};
    if (p->flops_txl) {
        f[n++] = (paper_fig){"flops_transformer_xl", p->flops_txl, "FLOP", atof(p->flops_txl) * scale[1]};
        f[n++] = (paper_fig){"flops_tensorized", p->flops_ours, "FLOP", atof(p->flops_ours) * scale[1]};
    }
    return n;
}

/* --- output -------------------------------------------------------------------------------------- */

/* A row of the comparison: a quantity of section for every model. */
typedef struct {
    const char *section, *quantity, *unit;
    double v[2];
} row;

/* Every analytic quantity of the models, in the order of all three outputs. */
static int analytic_rows(const model *m, int nm, row *r)
{
    int n = 0;
    for (int i = 0; i <= TT_C_COUNT; i++, n++) {
        r[n] = (row){"parameters", i < TT_C_COUNT ? tt_component_name(i) : "total", "count", {0, 0}};
        for (int k = 0; k < nm; k++)
            r[n].v[k] = i < TT_C_COUNT ? m[k].costs.params[i] : m[k].costs.params_total;
    }
    for (int i = 0; i < TT_F_COUNT + 2; i++, n++) {
        const char *q = i < TT_F_COUNT ? tt_flop_part_name(i) : i == TT_F_COUNT ? "forward" : "train_step";
        r[n] = (row){"flops_per_token", q, "FLOP/token", {0, 0}};
        for (int k = 0; k < nm; k++)
            r[n].v[k] = i < TT_F_COUNT    ? m[k].costs.fwd[i]
                        : i == TT_F_COUNT ? m[k].costs.fwd_total
                                          : m[k].costs.train_total;
    }
    for (int i = 0; i < 2; i++, n++) {
        r[n] = (row){"memory_bytes", i ? "state" : "activations", "bytes", {0, 0}};
        for (int k = 0; k < nm; k++) r[n].v[k] = i ? m[k].costs.state_bytes : m[k].costs.act_bytes;
    }
    return n;
}
#define MAX_ROWS (TT_C_COUNT + TT_F_COUNT + 8)

static void human(double v, const char *unit, char *out, size_t n)
{
    if (isnan(v)) {
        snprintf(out, n, "-");
    } else if (!strcmp(unit, "count")) {
        snprintf(out, n, "%.0f", v);
    } else if (!strcmp(unit, "bytes")) {
        snprintf(out, n, "%.1f MiB", v / (1024.0 * 1024.0));
    } else if (!strcmp(unit, "ms")) {
        snprintf(out, n, "%.3f ms", v);
    } else if (!strcmp(unit, "%")) {
        snprintf(out, n, "%.1f%%", v);
    } else {
        tt_report_number(v, out, n);
    }
}

static void print_text(const model *m, int nm, int default_vs, const paper_row *paper)
{
    char d[256], a[64], b[64];
    describe(&m[0], d, sizeof d);
    printf("ours:        %s\n", d);
    if (nm > 1) {
        describe(&m[1], d, sizeof d);
        printf("counterpart: %s%s\n", d,
               default_vs ? " (default: n_head x d_head = D, mem_len = N)" : "");
    }
    for (int k = 0; k < nm; k++) {
        const tt_train_spec *t = &m[k].spec->train;
        if (k == 0 || t->batch != m[0].spec->train.batch || t->precision != m[0].spec->train.precision)
            printf("memory of %s: training batch %d at %s\n", k ? "the counterpart" : "ours", t->batch,
                   tt_precision_name(t->precision));
    }
    row r[MAX_ROWS];
    const int n = analytic_rows(m, nm, r);
    const char *section = "";
    static const char *titles[][2] = {{"parameters", "parameters"},
                                      {"flops_per_token", "FLOPs per token (useful: 2 per multiply-add)"},
                                      {"memory_bytes", "memory for the training batch"}};
    printf("\n%-30s %16s", "", "ours");
    if (nm > 1) printf(" %16s %8s", "transformer-xl", "ratio");
    printf("\n");
    for (int i = 0; i < n; i++) {
        if (strcmp(section, r[i].section)) {
            section = r[i].section;
            for (int k = 0; k < 3; k++)
                if (!strcmp(titles[k][0], section)) printf("%s%s\n", i ? "\n" : "", titles[k][1]);
        }
        if (r[i].v[0] == 0 && (nm == 1 || r[i].v[1] == 0)) continue;
        human(r[i].v[0], r[i].unit, a, sizeof a);
        printf("  %-28s %16s", r[i].quantity, a);
        if (nm > 1) {
            human(r[i].v[1], r[i].unit, b, sizeof b);
            printf(" %16s", b);
            if (r[i].v[1] != 0) printf(" %8.3f", r[i].v[0] / r[i].v[1]);
            else printf(" %8s", "-");
        }
        printf("\n");
    }
    printf("\nmeasured%s\n", isnan(m[0].train_tok_s) && (nm < 2 || isnan(m[1].train_tok_s))
                                   ? " (needs a GPU)" : " on the GPU (training: forward, backward, Adam)");
    for (int i = 0; i < N_MEASURED; i++) {
        human(measured(&m[0], i), measured_unit[i], a, sizeof a);
        printf("  %-28s %16s", measured_name[i], a);
        if (nm > 1) {
            human(measured(&m[1], i), measured_unit[i], b, sizeof b);
            printf(" %16s", b);
        }
        printf("\n");
    }
    if (paper) {
        const int cores = m[0].spec->model.cores;
        paper_fig f[4];
        const int nf = paper_figures(paper, cores, f);
        printf("\nthe paper's numbers (Ma et al. 2019, %s row, core-%d; MODEL.md section 5), not ours:\n",
               paper->name, cores);
        for (int i = 0; i < nf; i++) {
            if (f[i].text) printf("  %-28s %16s", f[i].quantity, f[i].text);
            else printf("  %-28s %16.1f", f[i].quantity, f[i].value);
            if (!strcmp(f[i].quantity, "parameters"))
                printf("   (ours %.2fM)", m[0].costs.params_total / 1e6);
            else if (!strncmp(f[i].quantity, "test_ppl", 8))
                printf("   (unmasked attention, not a causal LM score)");
            else if (!strcmp(f[i].quantity, "flops_tensorized")) {
                human(m[0].costs.fwd_total, "FLOP/token", a, sizeof a);
                printf("   (undefined in the paper; ours: %s forward FLOPs per token)", a);
            }
            printf("\n");
        }
    }
}

static void json_number(double v, FILE *f)
{
    if (isnan(v) || isinf(v)) fputs("null", f);
    else fprintf(f, "%.17g", v);
}

static void print_json(const model *m, int nm, int default_vs, const paper_row *paper, const char *gpu)
{
    printf("{\"tt_bench\":\"%s\",\"models\":[", TT_VERSION);
    for (int k = 0; k < nm; k++) {
        const tt_model_spec *s = &m[k].spec->model;
        printf("%s{\"role\":\"%s\",\"shape\":{\"layers\":%d,\"d_model\":%d,\"d_inner\":%d,"
               "\"seq_len\":%d,\"vocab\":%ld",
               k ? "," : "", m[k].role, s->layers, s->d_model, s->d_inner, s->seq_len, m[k].costs.vocab);
        if (s->kind == TT_KIND_TENSORIZED)
            printf(",\"rank\":%d,\"cores\":%d,\"causal\":%s", s->rank, s->cores, s->causal ? "true" : "false");
        else
            printf(",\"n_head\":%d,\"d_head\":%d,\"mem_len\":%d", s->n_head, s->d_head, s->mem_len);
        printf("},\"default_counterpart\":%s,\"costs\":", k == 1 && default_vs ? "true" : "false");
        tt_report_json(m[k].spec, &m[k].costs, stdout);
        printf(",\"measured\":{");
        for (int i = 0; i < N_MEASURED; i++) {
            printf("%s\"%s\":", i ? "," : "", measured_name[i]);
            json_number(measured(&m[k], i), stdout);
        }
        printf("}}");
    }
    printf("],\"ratio\":");
    if (nm > 1) {
        row r[MAX_ROWS];
        const int n = analytic_rows(m, nm, r);
        printf("{");
        for (int i = 0; i < n; i++) {
            printf("%s\"%s.%s\":", i ? "," : "", r[i].section, r[i].quantity);
            json_number(r[i].v[1] != 0 ? r[i].v[0] / r[i].v[1] : NAN, stdout);
        }
        printf("}");
    } else {
        printf("null");
    }
    printf(",\"paper\":");
    if (paper) {
        paper_fig f[4];
        const int nf = paper_figures(paper, m[0].spec->model.cores, f);
        printf("{\"row\":\"%s\",\"cores\":%d", paper->name, m[0].spec->model.cores);
        for (int i = 0; i < nf; i++) printf(",\"%s\":%.15g", f[i].quantity, f[i].value);
        printf("}");
    } else {
        printf("null");
    }
    /* why nothing was measured; the driver's words, with any quote or backslash made a ' */
    printf(",\"measurement\":\"");
    for (const char *c = gpu; *c; c++) putchar(*c == '"' || *c == '\\' || (unsigned char)*c < 0x20 ? '\'' : *c);
    printf("\"}\n");
}

static void print_csv(const model *m, int nm, const paper_row *paper)
{
    printf("model,kind,section,quantity,value,unit\n");
    row r[MAX_ROWS];
    const int n = analytic_rows(m, nm, r);
    for (int k = 0; k < nm; k++) {
        const char *kind = tt_kind_name(m[k].spec->model.kind);
        for (int i = 0; i < n; i++)
            printf("%s,%s,%s,%s,%.17g,%s\n", m[k].role, kind, r[i].section, r[i].quantity, r[i].v[k],
                   r[i].unit);
        for (int i = 0; i < N_MEASURED; i++) {
            printf("%s,%s,measured,%s,", m[k].role, kind, measured_name[i]);
            if (!isnan(measured(&m[k], i))) printf("%.17g", measured(&m[k], i));
            printf(",%s\n", measured_unit[i]);
        }
    }
    if (paper) {
        paper_fig f[4];
        const int nf = paper_figures(paper, m[0].spec->model.cores, f);
        for (int i = 0; i < nf; i++)
            printf("paper,tensorized,paper,%s,%.15g,%s\n", f[i].quantity, f[i].value, f[i].unit);
    }
}

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
        default_counterpart(&ours, &s); /* d_model is even: sweep_main checked */
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
} sweep_result;

/* Trains s's model (its layout l) from its initial weights on d->train as tt-train does (the
 * same steps, on the GPU when there is one), validating over d->valid (windows of seq_len, or
 * Transformer-XL's segments with memory) as the budget says and keeping the best validation's
 * weights; then the test perplexity from those weights as tt-eval --split test computes it.
 * Returns 0, or -1 with why in err. */
static int sweep_train(const tt_spec *s, const tt_layout *l, const sweep_data *d,
                       const sweep_budget *b, sweep_result *r, char *err, size_t errlen)
{
    const int batch = s->train.batch, n = s->model.seq_len;
    *r = (sweep_result){0, 0, INFINITY, NAN, 0};
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
        tt_eval_result ev;
        if (tt_engine_evaluate(e, &d->valid, n, 0, &ev, err, errlen) != 0) {
            rc = -1;
            break;
        }
        const double ppl = exp(ev.nll / (double)ev.scored);
        if (ppl < r->valid_ppl) {
            r->valid_ppl = ppl;
            r->best_step = st;
            stale = 0;
            if (best && st != b->steps) {
                tt_engine_download(e);
                memcpy(best, w, bytes);
            }
        } else if (b->patience && ++stale >= b->patience) {
            break;
        }
    }
    r->seconds = tt_now_seconds() - t0;
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

static void csv_value(FILE *f, double v, const char *fmt)
{
    if (!isnan(v)) fprintf(f, fmt, v);
}

/* A row of the sweep as its plot draws it: the perplexity is the test's where there is one, else
 * the validation's (NAN: not trained). */
typedef struct {
    double params, tps, ppl;
    char label[32];
    /* the rest of its row, for table.md */
    const char *family;
    int rank, cores, seq_len, mem_len; /* rank, cores 0: Transformer-XL */
    double lr, valid_ppl, test_ppl;
    long steps, best_step;
} sweep_point;

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
static int sweep_table(const char *dir, const sweep_point *p, int n, const paper_row *paper,
                       char *err, size_t errlen)
{
    char *path = tt_xasprintf("%s/table.md", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        tt_errf(err, errlen, "%s: cannot write", path);
        free(path);
        return -1;
    }
    fprintf(f, "| family | rank | cores | seq_len | mem_len | parameters | train tok/s | lr | steps "
               "(best) | valid ppl | test ppl | Pareto front |\n"
               "|---|---|---|---|---|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < n; i++) {
        char rank[16] = "", cores[16] = "", tps[32] = "", valid[32] = "", test[32] = "";
        if (p[i].rank) snprintf(rank, sizeof rank, "%d", p[i].rank);
        if (p[i].cores) snprintf(cores, sizeof cores, "%d", p[i].cores);
        if (!isnan(p[i].tps)) snprintf(tps, sizeof tps, "%.0f", p[i].tps);
        if (!isnan(p[i].valid_ppl)) snprintf(valid, sizeof valid, "%.2f", p[i].valid_ppl);
        if (!isnan(p[i].test_ppl)) snprintf(test, sizeof test, "%.2f", p[i].test_ppl);
        const bool fp = on_front(p, n, i, false), ft = on_front(p, n, i, true);
        fprintf(f, "| %s | %s | %s | %d | %d | %.0f | %s | %.3g | %ld (%ld) | %s | %s | %s%s%s |\n",
                p[i].family, rank, cores, p[i].seq_len, p[i].mem_len, p[i].params, tps, p[i].lr,
                p[i].steps, p[i].best_step, valid, test, fp ? "parameters" : "",
                fp && ft ? ", " : "", ft ? "tokens/s" : "");
    }
    if (paper)
        for (int c = 0; c < 2; c++)
            fprintf(f, "| the paper, %s, core-%d (unmasked) | %d | %d | %d | | %s | | | | | %.1f | |\n",
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

/* The plot of a sweep: with perplexities (the test's, else the validation's), perplexity against
 * parameters and, when measured, against training tokens/s, log scales fitted to the points, a
 * colour and a key entry per family, each Pareto front drawn as a line and its points labelled
 * with their rank and cores (u: unmasked) or their Transformer-XL (M: memory, M0: none), the
 * paper's figures beside ours; without perplexities, training tokens/s against parameters. PNG
 * and SVG through gnuplot, its script (data included) kept as DIR/sweep.gp. Returns 0, or -1
 * with why in err (gnuplot missing or failing: the CSV is there either way). */
static int sweep_plot(const char *dir, const sweep_point *p, int n, bool test,
                      const paper_row *paper, char *err, size_t errlen)
{
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
    enum { X_PARAMS, X_TPS, Y_PPL };
    double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
    fprintf(f, "$points << EOD\n"); /* gnuplot skips NaN */
    for (int i = 0; i < n; i++) {
        int fam = 0;
        while (fam < 3 && strcmp(family_name[fam], p[i].family)) fam++;
        present[fam] = true;
        const double v[3] = {p[i].params, p[i].tps, p[i].ppl};
        for (int k = 0; k < 3; k++) {
            fprintf(f, isnan(v[k]) ? "NaN " : "%.17g ", v[k]);
            if (!isnan(v[k]) && (k == Y_PPL || !ppl || !isnan(p[i].ppl)))
                lo[k] = fmin(lo[k], v[k]), hi[k] = fmax(hi[k], v[k]);
        }
        const bool txl = p[i].rank == 0; /* Transformer-XL's are few: always labelled */
        fprintf(f, "\"%s\" %d %d %d\n", p[i].label, fam, txl || on_front(p, n, i, false),
                txl || on_front(p, n, i, true));
    }
    fprintf(f, "EOD\n");
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
    pareto_block(f, "front_params", p, n, false);
    pareto_block(f, "front_tps", p, n, true);
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
    static const char *const terms[2][2] = {{"pngcairo size 1400,560", "png"}, {"svg size 1400,560", "svg"}};
    const char *y = test ? "test perplexity" : "validation perplexity";
    fprintf(f, "set grid\nset logscale x\nset logscale y\nset key outside below horizontal "
               "font ',9'\nset format x '%%.3s%%c'\nset format y '%%.4g'\n");
    for (int t = 0; t < 2; t++) {
        fprintf(f, "set terminal %s\nset output '%s/sweep.%s'\nset multiplot layout 1,%d\n", terms[t][0],
                dir, terms[t][1], ppl && tps ? 2 : 1);
        /* $points: 1 parameters, 2 training tokens/s, 3 perplexity, 4 label, 5 family, 6 and 7
         * labelled on the parameters' and the tokens/s' plot */
        for (int panel = 0; panel < (ppl ? 1 + tps : 1); panel++) {
            const bool by_tps = panel == 1;
            const int xc = by_tps ? 2 : 1, yc = ppl ? 3 : 2, lc = by_tps ? 7 : 6;
            const int xa = by_tps ? X_TPS : X_PARAMS, ya = ppl ? Y_PPL : X_TPS;
            log_axis_tics(f, "x", lo[xa], hi[xa]);
            log_axis_tics(f, "y", lo[ya], hi[ya]);
            fprintf(f, "set xlabel '%s'\nset ylabel '%s'\nset xrange %s\nset yrange %s\nplot ",
                    by_tps ? "training tokens/s" : "parameters", ppl ? y : "training tokens/s",
                    range[xa], range[ya]);
            for (int k = 0; k < 4; k++)
                if (present[k])
                    fprintf(f, "$points using %d:(column(5) == %d ? column(%d) : NaN) with points pt 7 "
                               "ps 1.3 lc %d title '%s', ", xc, k, yc, k + 1, family_name[k]);
            fprintf(f, "$points using %d:%d:(column(%d) > 0 ? stringcolumn(4) : '') with labels offset "
                       "0,0.9 font ',8' notitle", xc, yc, ppl ? lc : 6);
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
            "                      [--txl] [--train-steps K [--eval-interval E] [--patience P]\n"
            "                      [--lr LIST]] [--steps K] [--out DIR] [--resume]\n"
            "Every combination of rank, cores (and seq_len) of the tensorized SPEC, for each mask of\n"
            "--causal (true,false; default SPEC's), and with --txl the Transformer-XL of SPEC's shape\n"
            "with mem_len = seq_len and 0: parameters and FLOPs per token; on a GPU, training and\n"
            "evaluation tokens/s, step time, memory and MFU; with --train-steps, each trained K steps\n"
            "as tt-train would, validated every E steps and at the end, stopped after P validations\n"
            "without a new best, and scored on data.test from its best weights; --lr tries each rate\n"
            "at a family's first point and trains the family with the best. Writes DIR/sweep.csv,\n"
            "DIR/table.md (the same as a Markdown table, the Pareto fronts and, for the paper's\n"
            "shapes, its figures), DIR/lr_search.csv with --lr (default DIR: sweep-<spec name>)\n"
            "and, through gnuplot, DIR/sweep.png and DIR/sweep.svg (perplexity against parameters,\n"
            "beside the paper's, and training tokens/s, the Pareto fronts marked). --resume keeps\n"
            "the rows of DIR's files whose points are finished (the same spec hash and patience)\n"
            "and trains the rest. LISTs: 8,16,32.\n");
}

/* --- the sweep's files, kept across runs for --resume --------------------------------------- */

#define SWEEP_HEADER                                                                               \
    "rank,cores,seq_len,parameters,flops_forward,flops_train_step,train_tokens_per_s,"             \
    "eval_tokens_per_s,step_ms,peak_memory_bytes,mfu_percent,train_steps,valid_ppl,status,family," \
    "mem_len,lr,lr_from,steps,best_step,test_ppl,seconds,seed,spec_sha256,commit,card,patience\n"
#define LR_HEADER "family,lr,steps,valid_ppl,chosen,best_step,test_ppl,seconds,patience,spec_sha256\n"

/* The rows of a CSV file the sweep wrote (no field holds a comma: csv_clean): each row's text,
 * its fields by the header's names, and whether this run has dealt with it. */
typedef struct {
    int ncols, nrows;
    char **names;  /* the header's */
    char **lines;  /* each row without its newline */
    char ***cells; /* [row][column] */
    bool *taken;   /* reused or superseded by this run */
    char *text;
} csv_rows;

/* line's fields, split in place at its commas, into at most max; returns how many it has. */
static int split_fields(char *line, char **out, int max)
{
    int n = 0;
    for (char *p = line;; p++) {
        if (n < max) out[n] = p;
        n++;
        p += strcspn(p, ",");
        if (!*p) return n;
        *p = 0;
    }
}

/* DIR's CSV at path as t, for --resume: nothing when there is no file; a row of another number of
 * fields than the header (cut short by a kill) is left out. Returns 0, or -1 with why in err (a
 * file of another header: not this tool's, or an older one's). */
static int csv_rows_read(const char *path, const char *header, csv_rows *t, char *err, size_t errlen)
{
    *t = (csv_rows){0};
    size_t len;
    if (access(path, F_OK) != 0 && errno == ENOENT) return 0;
    if (tt_read_file(path, 1 << 26, &t->text, &len, err, errlen) != 0) return -1;
    const size_t hl = strlen(header);
    if (len < hl || memcmp(t->text, header, hl) != 0)
        return tt_errf(err, errlen, "--resume: %s has another header than this tt-bench writes: "
                       "move it away to start afresh", path);
    enum { MAX_COLS = 64 };
    char *names[MAX_COLS];
    char *head = tt_xstrdup(t->text);
    head[hl - 1] = 0;
    t->ncols = split_fields(head, names, MAX_COLS);
    t->names = tt_xcalloc((size_t)t->ncols, sizeof *t->names);
    memcpy(t->names, names, (size_t)t->ncols * sizeof *names);
    for (char *p = t->text + hl; *p;) {
        char *nl = strchr(p, '\n');
        if (!nl) break; /* a row cut short */
        *nl = 0;
        char *line = tt_xstrdup(p), *cells[MAX_COLS];
        if (split_fields(p, cells, MAX_COLS) == t->ncols) {
            t->lines = tt_xrealloc(t->lines, (size_t)(t->nrows + 1) * sizeof *t->lines);
            t->cells = tt_xrealloc(t->cells, (size_t)(t->nrows + 1) * sizeof *t->cells);
            t->lines[t->nrows] = line;
            t->cells[t->nrows] = tt_xcalloc((size_t)t->ncols, sizeof **t->cells);
            memcpy(t->cells[t->nrows], cells, (size_t)t->ncols * sizeof *cells);
            t->nrows++;
        } else {
            free(line);
        }
        p = nl + 1;
    }
    t->taken = tt_xcalloc((size_t)t->nrows + 1, sizeof *t->taken);
    return 0;
}

static void csv_rows_free(csv_rows *t)
{
    for (int i = 0; i < t->nrows; i++) free(t->lines[i]), free(t->cells[i]);
    if (t->names) free(t->names[0]); /* the header's copy */
    free(t->names), free(t->lines), free(t->cells), free(t->taken), free(t->text);
}

/* Row i's field `name` ("" where t has no such column). */
static const char *csv_cell(const csv_rows *t, int i, const char *name)
{
    for (int c = 0; c < t->ncols; c++)
        if (!strcmp(t->names[c], name)) return t->cells[i][c];
    return "";
}

static double csv_number(const csv_rows *t, int i, const char *name)
{
    const char *v = csv_cell(t, i, name);
    return *v ? strtod(v, NULL) : NAN;
}

/* The row of t that a point of spec hash `hash` trained with `patience` can reuse: one with that
 * hash and patience and a result (need: the column that must not be empty; status "ok" where t
 * has a status), not yet taken. Every row of that hash is marked taken: a row that cannot be
 * reused is superseded by the point's new run. Returns the row, or -1. */
static int csv_reuse(csv_rows *t, const char *hash, long patience, const char *need)
{
    int found = -1;
    for (int i = 0; i < t->nrows; i++) {
        if (t->taken[i] || strcmp(csv_cell(t, i, "spec_sha256"), hash)) continue;
        t->taken[i] = true;
        const char *status = csv_cell(t, i, "status");
        if (found < 0 && atol(csv_cell(t, i, "patience")) == patience && *csv_cell(t, i, need) &&
            (!*status || !strcmp(status, "ok")))
            found = i;
    }
    return found;
}

/* Writes path atomically: header, then this run's rows, then the rows of old (the last run's,
 * NULL: none) this run has not dealt with yet, so that a sweep stopped at any moment leaves
 * every finished point's row for the next --resume. */
static int csv_save(const char *path, const char *header, const tt_buf *rows, const csv_rows *old,
                    char *err, size_t errlen)
{
    tt_buf b = {0};
    tt_buf_printf(&b, "%s", header);
    if (rows->len) tt_buf_append(&b, rows->data, rows->len);
    for (int i = 0; old && i < old->nrows; i++)
        if (!old->taken[i]) tt_buf_printf(&b, "%s\n", old->lines[i]);
    const void *parts[1] = {b.data};
    const size_t lens[1] = {b.len};
    const int rc = tt_write_file_atomic(path, parts, lens, 1, err, errlen);
    tt_buf_free(&b);
    return rc;
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
    long patience;
} sweep_files;

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
    tt_buf_printf(b, ",%ld,%s\n", patience, hash);
}

/* A family's learning rate: with --lr, each rate trained at the family's first point (its
 * results in trials, a row each in lr_search.csv as it ends and a line on stderr; with --resume a
 * trial the last run finished is read back, not trained), the one of the best validation
 * perplexity chosen; else the spec's. Returns the index of the chosen trial, -1 when there was no
 * search or no trial trained (then *lr is the spec's), -2 when lr_search.csv cannot be written
 * (why in err). */
static int lr_search(const tt_spec *base, family f, const value_list *lrs, const int first[3],
                     long vocab, const sweep_data *d, const sweep_budget *b, sweep_files *io,
                     sweep_result *trials, double *lr, char *err, size_t errlen)
{
    *lr = base->train.lr;
    int chosen = -1;
    char why[4096], hash[SWEEP_MAX][65];
    for (int i = 0; i < lrs->n; i++) {
        tt_spec s = point_spec(base, f, first[0], first[1], first[2], lrs->v[i], b->steps,
                               b->eval_interval);
        spec_sha256(&s, hash[i]);
        trials[i] = (sweep_result){0, 0, NAN, NAN, NAN};
        const int old = csv_reuse(&io->old_lr, hash[i], b->patience, "valid_ppl");
        int rc = 0;
        if (old >= 0) {
            const csv_rows *t = &io->old_lr;
            trials[i] = (sweep_result){atol(csv_cell(t, old, "steps")), atol(csv_cell(t, old, "best_step")),
                                       csv_number(t, old, "valid_ppl"), csv_number(t, old, "test_ppl"),
                                       csv_number(t, old, "seconds")};
        } else {
            tt_layout l;
            rc = tt_layout_build(&s.model, vocab, &l, why, sizeof why);
            if (rc == 0) {
                rc = sweep_train(&s, &l, d, b, &trials[i], why, sizeof why);
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
        /* the file as it stands: the searches that ended, then this one's trials so far */
        tt_buf now = {0};
        if (io->lr_rows.len) tt_buf_append(&now, io->lr_rows.data, io->lr_rows.len);
        for (int k = 0; k <= i; k++)
            lr_row(&now, f, lrs->v[k], &trials[k], i == lrs->n - 1 && k == chosen, b->patience, hash[k]);
        if (i == lrs->n - 1) {
            tt_buf_free(&io->lr_rows);
            io->lr_rows = now;
            now = (tt_buf){0};
        }
        const int saved = csv_save(io->lr_path, LR_HEADER, i == lrs->n - 1 ? &io->lr_rows : &now,
                                   &io->old_lr, err, errlen);
        tt_buf_free(&now);
        if (saved != 0) return -2;
    }
    if (chosen >= 0) *lr = lrs->v[chosen];
    fprintf(stderr, "lr search %s: lr %g%s\n", family_name[f], *lr, chosen < 0 ? " (the spec's: no "
            "rate trained)" : "");
    return chosen;
}

/* The sweep's options beside SPEC. */
typedef struct {
    value_list ranks, cores, seqs, causal, lrs;
    bool txl, resume;
    sweep_budget budget;
    long steps; /* measured steps on the GPU */
    const char *out;
} sweep_options;

static int sweep_parse(int argc, char **argv, sweep_options *o)
{
    enum { RANK = 256, CORES, SEQ, CAUSAL, TXL, LR, TRAIN_STEPS, EVAL_INTERVAL, PATIENCE, STEPS, OUT,
           RESUME };
    static const struct option longs[] = {{"rank", required_argument, 0, RANK},
                                          {"cores", required_argument, 0, CORES},
                                          {"seq-len", required_argument, 0, SEQ},
                                          {"causal", required_argument, 0, CAUSAL},
                                          {"txl", no_argument, 0, TXL},
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
        if (c == TXL) o->txl = true;
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
    if (optind != argc - 1 || !o->ranks.n || !o->cores.n) {
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

static int sweep_main(int argc, char **argv)
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
        rc = resolve_vocab(&base, &vocab);
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
    sweep_files io = {.patience = b->patience};
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
    for (int i = 0; i < o.causal.n; i++) fams[nf++] = o.causal.v[i] ? FAM_CAUSAL : FAM_UNMASKED;
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
            const int chosen = o.lrs.n ? lr_search(&base, f, &o.lrs, first, vocab, &data, b, &io,
                                                   trials, &lr, err, sizeof err) : -1;
            if (chosen == -2) {
                fprintf(stderr, "tt-bench sweep: %s\n", err);
                rc = 1;
                break;
            }
            for (int a = 0; a < nr && !rc; a++)
                for (int c = 0; c < nc && !rc; c++)
                    for (int q = 0; q < o.seqs.n && !rc; q++) {
                        const int rank = txl ? 0 : (int)o.ranks.v[a], cores = txl ? 0 : (int)o.cores.v[c];
                        tt_spec s = point_spec(&base, f, rank, cores, (int)o.seqs.v[q], lr, b->steps,
                                               b->eval_interval);
                        fprintf(stderr, "[%d/%d] %s", ++point, total, family_name[f]);
                        if (!txl) fprintf(stderr, ", rank %d, cores %d", rank, cores);
                        fprintf(stderr, ", seq_len %d: ", s.model.seq_len);
                        model m;
                        model_init(&m, "point", &s, vocab);
                        char status[4200] = "ok", why[4096], hash[65];
                        spec_sha256(&s, hash);
                        sweep_result r = {0, 0, NAN, NAN, NAN};
                        const int old = csv_reuse(&io.old, hash, b->patience, "status");
                        if (old >= 0) { /* the last run's row, as it was */
                            const csv_rows *t = &io.old;
                            tt_buf_printf(&io.rows, "%s\n", t->lines[old]);
                            m.train_tok_s = csv_number(t, old, "train_tokens_per_s");
                            r = (sweep_result){atol(csv_cell(t, old, "steps")),
                                               atol(csv_cell(t, old, "best_step")),
                                               csv_number(t, old, "valid_ppl"),
                                               csv_number(t, old, "test_ppl"),
                                               csv_number(t, old, "seconds")};
                        } else {
                            tt_layout l;
                            if (tt_layout_build(&s.model, vocab, &l, why, sizeof why) != 0) {
                                snprintf(status, sizeof status, "invalid: %s", why);
                            } else {
                                if (on_gpu) {
                                    measure(&m, &g, cached ? &cache : NULL, o.steps);
                                    if (m.failed[0])
                                        snprintf(status, sizeof status, "not measured: %s", m.failed);
                                }
                                /* the search trained the family's first point with the chosen lr */
                                if (chosen >= 0 && a == 0 && c == 0 && q == 0) {
                                    r = trials[chosen];
                                } else if (b->steps &&
                                           sweep_train(&s, &l, &data, b, &r, why, sizeof why) != 0) {
                                    r.valid_ppl = r.test_ppl = NAN;
                                    if (!strcmp(status, "ok"))
                                        snprintf(status, sizeof status, "not trained: %s", why);
                                }
                                tt_layout_free(&l);
                            }
                            csv_clean(status);
                            tt_buf *out = &io.rows;
                            if (txl)
                                tt_buf_printf(out, ",,");
                            else
                                tt_buf_printf(out, "%d,%d,", rank, cores);
                            tt_buf_printf(out, "%d,%.17g,%.17g,%.17g,", s.model.seq_len,
                                          m.costs.params_total, m.costs.fwd_total, m.costs.train_total);
                            const double measured_cols[5] = {m.train_tok_s, m.eval_tok_s, m.step_ms,
                                                             m.peak_bytes, m.mfu};
                            static const char *const fmts[5] = {"%.6g", "%.6g", "%.6g", "%.0f", "%.4g"};
                            for (int i = 0; i < 5; i++) {
                                buf_value(out, measured_cols[i], fmts[i]);
                                tt_buf_printf(out, ",");
                            }
                            tt_buf_printf(out, "%ld,", b->steps);
                            buf_value(out, r.valid_ppl, "%.9g");
                            tt_buf_printf(out, ",%s,%s,%d,%.9g,%s,%ld,%ld,", status, family_name[f],
                                          txl ? s.model.mem_len : 0, s.train.lr,
                                          chosen >= 0 ? "search" : "spec", r.steps, r.best_step);
                            buf_value(out, r.test_ppl, "%.9g");
                            tt_buf_printf(out, ",");
                            buf_value(out, r.seconds, "%.3f");
                            tt_buf_printf(out, ",%llu,%s,%s,%s,%ld\n", (unsigned long long)s.train.seed,
                                          hash, TT_COMMIT, card, b->patience);
                        }
                        if (csv_save(io.csv_path, SWEEP_HEADER, &io.rows, &io.old, err, sizeof err) != 0) {
                            fprintf(stderr, "\ntt-bench sweep: %s\n", err);
                            rc = 1;
                        }
                        sweep_point *drawn = &plotted[point - 1];
                        *drawn = (sweep_point){m.costs.params_total, m.train_tok_s,
                                               data.test.n ? r.test_ppl : r.valid_ppl, "",
                                               family_name[f], rank, cores, s.model.seq_len,
                                               txl ? s.model.mem_len : 0, s.train.lr, r.valid_ppl,
                                               r.test_ppl, r.steps, r.best_step};
                        if (txl)
                            snprintf(drawn->label, sizeof drawn->label, "TXL M%s", s.model.mem_len ? "" : "0");
                        else
                            snprintf(drawn->label, sizeof drawn->label, "R%d c%d%s", rank, cores,
                                     f == FAM_UNMASKED ? " u" : "");
                        char tps[64], pp[64], tp[64];
                        human(m.train_tok_s, "tokens/s", tps, sizeof tps);
                        human(r.valid_ppl, "ppl", pp, sizeof pp);
                        human(r.test_ppl, "ppl", tp, sizeof tp);
                        fprintf(stderr, "%s%.2fM parameters, train %s tokens/s, valid ppl %s, test ppl "
                                "%s%s%s\n", old >= 0 ? "the last run's: " : "", m.costs.params_total / 1e6,
                                tps, pp, tp, strcmp(status, "ok") ? ": " : "",
                                strcmp(status, "ok") ? status : "");
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
            const paper_row *paper = paper_of(&base.model, vocab);
            if (sweep_table(dir, plotted, total, paper, err, sizeof err) == 0) {
                printf("wrote %s/table.md\n", dir);
            } else {
                fprintf(stderr, "tt-bench sweep: %s\n", err);
                rc = 1;
            }
            if (sweep_plot(dir, plotted, total, data.test.n > 0, paper, err, sizeof err) == 0)
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

/* ---- tt-bench plot ---------------------------------------------------------------------------- */

static const char *skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\r') p++;
    return p;
}

static bool is_key(const char *key, size_t len, const char *name)
{
    return len == strlen(name) && !strncmp(key, name, len);
}

/* A row of a run's curve: a training step's loss or a validation's perplexity (the other NAN). */
typedef struct {
    long step;
    double loss, valid_ppl;
} curve_row;

/* One line of tt-train --log-json: a flat JSON object of numbers and booleans with an integer
 * "step" and one of "loss" (a training step), "valid_nll" (a validation) or "skipped": true (a
 * step whose loss was not finite: both values NAN). 0 with its row; -1 for anything else. */
static int parse_log_line(const char *line, curve_row *r)
{
    double step = NAN, loss = NAN, nll = NAN;
    int skipped = 0;
    const char *p = skip_space(line);
    if (*p++ != '{') return -1;
    p = skip_space(p);
    while (*p != '}') {
        if (*p++ != '"') return -1;
        const char *key = p;
        if (!(p = strchr(p, '"'))) return -1;
        const size_t len = (size_t)(p - key);
        p = skip_space(p + 1);
        if (*p++ != ':') return -1;
        p = skip_space(p);
        int flag = -1; /* a boolean's value; -1: a number, v */
        double v = NAN;
        if (!strncmp(p, "true", 4) || !strncmp(p, "false", 5)) {
            flag = *p == 't';
            p += flag ? 4 : 5;
        } else {
            char *end;
            v = strtod(p, &end);
            if (end == p || !isfinite(v)) return -1;
            p = end;
        }
        if (is_key(key, len, "skipped")) {
            if (flag < 0) return -1;
            skipped = flag;
        } else if (is_key(key, len, "step") || is_key(key, len, "loss") ||
                   is_key(key, len, "valid_nll")) {
            if (flag >= 0) return -1;
            *(is_key(key, len, "step") ? &step : is_key(key, len, "loss") ? &loss : &nll) = v;
        }
        p = skip_space(p);
        if (*p == ',' && *(p = skip_space(p + 1)) != '"') return -1;
        if (*p != '"' && *p != '}') return -1;
    }
    if (*skip_space(p + 1) || !(step >= 1 && step < 1e15 && step == floor(step))) return -1;
    if (skipped + !isnan(loss) + !isnan(nll) != 1) return -1;
    *r = (curve_row){(long)step, loss, exp(nll)};
    return 0;
}

/* The rows of the --log-json log at path as curve.tsv's (tt_curve_row) into rows, with how many
 * of each kind. A resumed run appends to its log, repeating the steps after its checkpoint: its
 * lines replace the earlier ones from their step on. 0, or 2 with one line on stderr. */
static int read_log(const char *path, tt_buf *rows, long *steps, long *valids)
{
    char *text, err[1024];
    size_t len;
    if (tt_read_file(path, 0, &text, &len, err, sizeof err) != 0) {
        fprintf(stderr, "tt-bench plot: %s\n", err);
        return 2;
    }
    curve_row *r = NULL;
    size_t n = 0, cap = 0;
    long line_no = 0;
    int rc = 0;
    for (char *line = text, *end; *line; line = end) {
        end = line + strcspn(line, "\n");
        if (*end) *end++ = '\0';
        line_no++;
        curve_row got;
        if (!*skip_space(line)) continue;
        if (parse_log_line(line, &got) != 0) {
            fprintf(stderr, "tt-bench plot: %s:%ld: not a line of tt-train --log-json (a JSON object "
                    "with an integer \"step\" and \"loss\", \"valid_nll\" or \"skipped\": true)\n",
                    path, line_no);
            rc = 2;
            break;
        }
        /* a step replaces the rows of its step and later; a validation, the later rows and
         * its step's validation */
        const bool valid = !isnan(got.valid_ppl);
        while (n && (r[n - 1].step > got.step ||
                     (r[n - 1].step == got.step && (!valid || !isnan(r[n - 1].valid_ppl)))))
            n--;
        if (isnan(got.loss) && !valid) continue; /* a skipped step */
        if (n == cap) r = tt_xrealloc(r, (cap = cap ? 2 * cap : 1024) * sizeof *r);
        r[n++] = got;
    }
    *steps = *valids = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        tt_curve_row(rows, r[i].step, r[i].loss, r[i].valid_ppl);
        *(isnan(r[i].loss) ? valids : steps) += 1;
    }
    if (!rc && !n) {
        fprintf(stderr, "tt-bench plot: %s: no training steps or validations in it\n", path);
        rc = 2;
    }
    free(r);
    free(text);
    return rc;
}

static void plot_usage(FILE *f)
{
    fprintf(f,
            "usage: tt-bench plot LOG.jsonl... [-o FILE.png] [--title T]\n"
            "Draws logs of tt-train --log-json on one chart through gnuplot: each log's training\n"
            "loss (smoothed) on the left axis and, where it has validations, its validation\n"
            "perplexity on the right (log scale), against steps, a colour per log labelled with its\n"
            "file name. Writes FILE.png (default plot.png) and beside it FILE.gp, the gnuplot\n"
            "script with the data in it.\n");
}

static int plot_main(int argc, char **argv)
{
    enum { TITLE = 256 };
    static const struct option longs[] = {{"title", required_argument, 0, TITLE},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    const char *png = "plot.png", *title = NULL;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":ho:", longs, NULL)) != -1) {
        if (c == 'o') {
            png = optarg;
        } else if (c == TITLE) {
            title = optarg;
        } else if (c == 'h') {
            plot_usage(stdout);
            return 0;
        } else {
            return tt_opt_refuse("tt-bench plot", c, argv);
        }
    }
    if (optind == argc) {
        fprintf(stderr, "tt-bench plot: expected one or more logs of tt-train --log-json (see "
                        "tt-bench plot --help)\n");
        return 2;
    }
    const int n = argc - optind;
    tt_curve_run *runs = tt_xcalloc((size_t)n, sizeof *runs);
    tt_buf *rows = tt_xcalloc((size_t)n, sizeof *rows);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        const char *path = argv[optind + i], *slash = strrchr(path, '/');
        rc = read_log(path, &rows[i], &runs[i].steps, &runs[i].valids);
        runs[i].rows = rows[i].data;
        runs[i].label = slash ? slash + 1 : path;
    }
    if (!rc) {
        const size_t len = strlen(png);
        const int stem = len > 4 && !strcmp(png + len - 4, ".png") ? (int)len - 4 : (int)len;
        char *gp = tt_xasprintf("%.*s.gp", stem, png), err[2048];
        tt_buf script = {0};
        tt_curve_script(&script, runs, n, title, png);
        const void *parts[1] = {script.data};
        rc = tt_write_file_atomic(gp, parts, &script.len, 1, err, sizeof err);
        if (rc == 0) rc = tt_gnuplot(NULL, gp, png, err, sizeof err);
        if (rc == 0)
            printf("wrote %s (its gnuplot script: %s)\n", png, gp);
        else if (rc == 1)
            fprintf(stderr, "tt-bench plot: gnuplot not found on PATH (Debian: apt-get install "
                            "gnuplot-nox): no %s (its gnuplot script: %s)\n", png, gp);
        else
            fprintf(stderr, "tt-bench plot: %s\n", err);
        rc = rc ? 1 : 0;
        tt_buf_free(&script);
        free(gp);
    }
    for (int i = 0; i < n; i++) tt_buf_free(&rows[i]);
    free(rows), free(runs);
    return rc;
}

/* --- tt-bench SPEC --profile ---------------------------------------------------------------- */

/* Useful FLOPs a token of one role's forward (the cost model's parts, gen/report.h); 0 where it
 * counts none (elementwise work). The backward's are twice the forward's. */
static double role_fwd_flops(const tt_spec *s, const tt_costs *c, tt_prof_role r)
{
    const tt_model_spec *m = &s->model;
    const double o = m->kind == TT_KIND_TXL ? 2.0 * m->n_head * m->d_head * m->d_model : 0;
    switch (r) {
    case TT_PROF_EMBEDDING: return c->fwd[TT_F_EMBEDDING];
    case TT_PROF_QKV: return c->fwd[TT_F_ATTN_PROJ];
    case TT_PROF_ATTENTION: return c->fwd[TT_F_ATTN_SCORE] + c->fwd[TT_F_ATTN_MIX] - o;
    case TT_PROF_O: return o;
    case TT_PROF_FFN: return c->fwd[TT_F_FFN];
    case TT_PROF_SOFTMAX: return c->fwd[TT_F_SOFTMAX];
    default: return 0;
    }
}

/* A fraction for the table: "-" when there is none (an unknown card, a role without time). */
static void print_percent(double v, int width)
{
    if (isfinite(v)) printf(" %*.1f%%", width - 1, 100 * v);
    else printf(" %*s", width, "-");
}

static int profile_main(const options *o, const tt_spec *s, long vocab)
{
    char err[4096];
    tt_gpu g;
    if (tt_gpu_open(&g, 0, err, sizeof err) != 0) {
        fprintf(stderr, "tt-bench --profile: needs a GPU: %s\n", err);
        return 1;
    }
    tt_costs costs;
    tt_costs_compute(s, vocab, &costs);
    tt_layout l;
    tt_cache cache;
    const int cached = tt_cache_open(&cache, NULL, err, sizeof err) == 0;
    tt_gpu_lm *lm = NULL;
    int rc = 1;
    if (tt_layout_build(&s->model, vocab, &l, err, sizeof err) != 0) {
        fprintf(stderr, "tt-bench --profile: %s\n", err);
        goto close_gpu;
    }
    const int batch = s->train.batch, rows = batch * s->model.seq_len;
    if (tt_gpu_lm_open(&lm, &g, s, &l, batch, cached ? &cache : NULL, err, sizeof err) != 0) {
        fprintf(stderr, "tt-bench --profile: %s\n", err);
        goto free_layout;
    }
    const long steps = o->steps ? o->steps : 20;
    float *w = tt_xmalloc(l.n_floats * sizeof *w);
    tt_layout_init(&l, w, 1);
    TT_CUDA(cudaMemcpy(tt_gpu_lm_weights(lm), w, l.n_floats * 4, cudaMemcpyHostToDevice));
    tt_gpu_lm_weights_changed(lm);
    run_ctx c = {lm, tt_xmalloc((size_t)rows * 4), tt_xmalloc((size_t)rows * 4), rows, vocab, true};
    for (long i = 1; i <= WARMUP_STEPS; i++) run_one(&c, i);
    const double step_ms = timed_ms(&g, steps, run_one, &c, WARMUP_STEPS + 1) / (double)steps;
    random_tokens(c.in, c.tg, rows, vocab, WARMUP_STEPS + steps + 1);
    const tt_lm_opts lo = {.train = true, .seed = 1, .step = (uint64_t)(WARMUP_STEPS + steps + 1)};
    tt_step_profile p;
    tt_gpu_lm_profile(lm, c.in, c.tg, &lo, WARMUP_STEPS + steps + 1, (int)steps, &p);
    const tt_card *card = tt_card_lookup(g.name);
    const double peak = card ? tt_card_peak_tflops(card, s->train.precision) : NAN;
    const double bandwidth = card ? tt_card_bandwidth_gbs(card) : NAN;
    const double tokens = rows;
    if (o->format == OUT_JSON) {
        printf("{\"spec\":");
        tt_json_string(s->path, stdout);
        printf(",\"card\":");
        tt_json_string(g.name, stdout);
        printf(",\"precision\":\"%s\",\"batch\":%d,\"seq_len\":%d,\"steps\":%ld,\"step_ms\":",
               tt_precision_name(s->train.precision), batch, s->model.seq_len, steps);
        json_number(step_ms, stdout);
        printf(",\"parts_sum_ms\":");
        json_number(p.sum_ms, stdout);
        printf(",\"parts\":%d,\"kernels\":%d,\"memsets\":%d,\"copies\":%d,\"peak_tflops\":",
               p.parts, p.kernels, p.memsets, p.copies);
        json_number(peak, stdout);
        printf(",\"bandwidth_gbps\":");
        json_number(bandwidth, stdout);
        printf(",\"roles\":[");
    } else if (o->format == OUT_CSV) {
        printf("role,forward_ms,backward_ms,ms,share,gflop,tflops,peak_fraction,gbytes,gbps,"
               "roofline_fraction\n");
    } else {
        printf("where one training step of %s goes on %s (%s, batch %d x %d): %ld steps as one "
               "CUDA graph on one stream, an event node between %d parts a step\n\n",
               s->path, g.name, tt_precision_name(s->train.precision), batch, s->model.seq_len,
               steps, p.parts);
        printf("%-10s %11s %11s %10s %7s %10s %9s %8s %9s %8s %12s\n", "role", "forward ms",
               "backward ms", "total ms", "share", "GFLOP", "TFLOP/s", "of peak", "GB", "GB/s",
               "of roofline");
    }
    for (int r = 0; r < TT_PROF_ROLES; r++) {
        const double f = p.ms[r][0], b = p.ms[r][1], t = f + b;
        const double flop = 3 * role_fwd_flops(s, &costs, (tt_prof_role)r) * tokens;
        const double tf = flop > 0 && t > 0 ? flop / (t * 1e-3) / 1e12 : NAN;
        const double bytes = costs.step_bytes[r]; /* the cost model's, gen/report.c */
        const double gbps = bytes > 0 && t > 0 ? bytes / (t * 1e-3) / 1e9 : NAN;
        /* the time the role would take at the card's roofline (its FLOPs at the peak or its
         * bytes at the bandwidth, whichever is longer) over the time it took; NaN for an
         * unknown card (both terms NaN: fmax drops one NaN, not two) */
        const double roof_s = fmax(flop / (peak * 1e12), bytes / (bandwidth * 1e9));
        const double roof = bytes > 0 && t > 0 ? roof_s / (t * 1e-3) : NAN;
        if (o->format == OUT_JSON) {
            printf("%s{\"role\":\"%s\",\"forward_ms\":", r ? "," : "", tt_prof_role_name((tt_prof_role)r));
            json_number(f, stdout);
            printf(",\"backward_ms\":");
            json_number(b, stdout);
            printf(",\"ms\":");
            json_number(t, stdout);
            printf(",\"share\":");
            json_number(t / p.sum_ms, stdout);
            printf(",\"gflop\":");
            json_number(flop > 0 ? flop / 1e9 : NAN, stdout);
            printf(",\"tflops\":");
            json_number(tf, stdout);
            printf(",\"peak_fraction\":");
            json_number(tf / peak, stdout);
            printf(",\"gbytes\":");
            json_number(bytes > 0 ? bytes / 1e9 : NAN, stdout);
            printf(",\"gbps\":");
            json_number(gbps, stdout);
            printf(",\"roofline_fraction\":");
            json_number(roof, stdout);
            printf("}");
        } else if (o->format == OUT_CSV) {
            printf("%s,%.6f,%.6f,%.6f,%.6f,", tt_prof_role_name((tt_prof_role)r), f, b, t,
                   t / p.sum_ms);
            if (flop > 0) printf("%.6f,%.6f,", flop / 1e9, tf);
            else printf(",,");
            csv_value(stdout, flop > 0 ? tf / peak : NAN, "%.6f");
            printf(",");
            csv_value(stdout, bytes > 0 ? bytes / 1e9 : NAN, "%.6f");
            printf(",");
            csv_value(stdout, gbps, "%.3f");
            printf(",");
            csv_value(stdout, roof, "%.6f");
            printf("\n");
        } else {
            printf("%-10s %11.4f %11.4f %10.4f %6.1f%%", tt_prof_role_name((tt_prof_role)r), f, b,
                   t, 100 * t / p.sum_ms);
            if (flop > 0) printf(" %10.3f %9.1f", flop / 1e9, tf);
            else printf(" %10s %9s", "-", "-");
            print_percent(flop > 0 ? tf / peak : NAN, 8);
            if (bytes > 0) printf(" %9.4f", bytes / 1e9);
            else printf(" %9s", "-");
            if (isfinite(gbps)) printf(" %8.1f", gbps);
            else printf(" %8s", "-");
            print_percent(roof, 12);
            printf("\n");
        }
    }
    if (o->format == OUT_JSON) {
        printf("]}\n");
    } else if (o->format == OUT_TEXT) {
        printf("%-10s %11s %11s %10.4f %6.1f%%\n\n", "sum", "", "", p.sum_ms, 100.0);
        printf("the step as trained (a CUDA graph, the side stream beside): %.4f ms; the parts sum "
               "to %.2f of it. softmax counts its backward as forward (one pass); GFLOP: the cost "
               "model's useful work (masked products not counted), backward twice the forward's; "
               "GB: the useful device-memory traffic of forward and backward (the cost model's: "
               "each product's operands and result once, never the tensorized T); roofline: the "
               "longer of GFLOP at the peak and GB at the bandwidth, over the time taken; peak "
               "and bandwidth: %s\n", step_ms, p.sum_ms / step_ms,
               card ? tt_card_label(card) : "unknown (this card is not in gpu/cards.c)");
        printf("launches a step: %d kernels (cuBLAS's each counted), %d memsets, %d copies\n",
               p.kernels, p.memsets, p.copies);
    }
    free(c.in), free(c.tg), free(w);
    tt_gpu_lm_close(lm);
    rc = 0;
free_layout:
    tt_layout_free(&l);
close_gpu:
    if (cached) tt_cache_close(&cache);
    tt_gpu_close(&g);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "sweep")) return sweep_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "plot")) return plot_main(argc - 1, argv + 1);
    options o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc;
    char err[4096];
    tt_spec ours, vs, txl;
    if (tt_spec_load(o.spec, &ours, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    long vocab, vs_vocab = 0;
    if ((rc = resolve_vocab(&ours, &vocab))) {
        tt_spec_free(&ours);
        return rc;
    }
    if (o.profile) {
        if (o.vs) {
            fprintf(stderr, "tt-bench: --profile measures SPEC alone, without --vs\n");
            rc = 2;
        } else {
            rc = profile_main(&o, &ours, vocab);
        }
        tt_spec_free(&ours);
        return rc;
    }
    int nm = 1, loaded_vs = 0;
    const int default_vs = !o.vs && ours.model.kind == TT_KIND_TENSORIZED;
    if (o.vs) {
        if (tt_spec_load(o.vs, &vs, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            tt_spec_free(&ours);
            return 2;
        }
        loaded_vs = 1;
        if (vs.model.kind != TT_KIND_TXL) {
            fprintf(stderr, "tt-bench: --vs %s: kind is %s; the counterpart must be kind: transformer-xl\n",
                    o.vs, tt_kind_name(vs.model.kind));
            rc = 2;
        } else {
            rc = resolve_vocab(&vs, &vs_vocab);
        }
        nm = 2;
    } else if (default_vs) {
        rc = default_counterpart(&ours, &txl);
        vs_vocab = vocab;
        nm = 2;
    }
    if (rc) {
        if (loaded_vs) tt_spec_free(&vs);
        tt_spec_free(&ours);
        return rc;
    }

    model m[2];
    model_init(&m[0], "ours", &ours, vocab);
    if (nm > 1) model_init(&m[1], "counterpart", o.vs ? &vs : &txl, vs_vocab);
    const paper_row *paper = paper_match(&m[0]);

    /* Measuring needs a GPU; the driver is opened lazily, so this says why there is none. Every
     * output prints the measured fields as they are ("-", null or empty while NAN). */
    char gpu[9000];
    tt_gpu g;
    if (tt_gpu_open(&g, 0, err, sizeof err) == 0) {
        const long steps = o.steps ? o.steps : 20;
        tt_cache cache;
        const int cached = tt_cache_open(&cache, NULL, err, sizeof err) == 0;
        for (int k = 0; k < nm; k++) measure(&m[k], &g, cached ? &cache : NULL, steps);
        const tt_card *card = tt_card_lookup(g.name);
        int n = snprintf(gpu, sizeof gpu, "measured on %s: %ld training steps and %ld evaluation runs a "
                         "model after %d warm-up steps, random tokens of Zipf frequencies, CUDA events; memory: the model's "
                         "one device allocation; MFU against %s", g.name, steps, steps, WARMUP_STEPS,
                         card ? tt_card_label(card) : "an unknown peak (this card is not in gpu/cards.c)");
        for (int k = 0; k < nm; k++)
            if (m[k].failed[0] && n < (int)sizeof gpu)
                n += snprintf(gpu + n, sizeof gpu - (size_t)n, "; %s not measured: %s", m[k].role, m[k].failed);
        if (cached) tt_cache_close(&cache);
        tt_gpu_close(&g);
    } else {
        snprintf(gpu, sizeof gpu, "measured throughput, step time, memory and MFU need a GPU (%s)", err);
    }

    if (o.format == OUT_JSON) {
        print_json(m, nm, default_vs, paper, gpu);
        fprintf(stderr, "tt-bench: %s\n", gpu);
    } else if (o.format == OUT_CSV) {
        print_csv(m, nm, paper);
        fprintf(stderr, "tt-bench: %s\n", gpu);
    } else {
        print_text(m, nm, default_vs, paper);
        printf("\n%s\n", gpu);
    }
    if (loaded_vs) tt_spec_free(&vs);
    tt_spec_free(&ours);
    return 0;
}
