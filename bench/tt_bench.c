/* tt-bench: what a spec'd model costs against Transformer-XL, side by side with ratios: parameters
 * by component, FLOPs per token (forward and training step) and the training batch's memory, all
 * from gen/report.c (the counting code of ttgen's report), plus the paper's row where the spec is
 * one of its models; and, on a GPU, each model measured: training and evaluation tokens/s, step
 * time, device memory and model-FLOPs utilization (without a GPU those print "-" and a line
 * says why); `--profile`, one step's time by role. Subcommands: `sweep` (bench/sweep.c: a grid of
 * rank, cores and mask beside Transformer-XL, each point trained and scored as tt-train and
 * tt-eval would) and `plot` (bench/plot.c: tt-train's logs on one chart, through gnuplot).
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

#include "bench.h"

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
            "                 one CUDA graph on one stream with a clock reading between the parts;\n"
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

void bench_model_init(bench_model *m, const char *role, const tt_spec *spec, long vocab)
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
void bench_measure(bench_model *m, tt_gpu *g, const tt_cache *cache, long steps)
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
static double measured(const bench_model *m, int i)
{
    const double v[N_MEASURED] = {m->train_tok_s, m->eval_tok_s, m->step_ms, m->peak_bytes, m->mfu};
    return v[i];
}

/* The vocabulary size: model.vocab, else counted from data.train as ttgen and tt-train do. */
int bench_resolve_vocab(const tt_spec *spec, long *vocab)
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
int bench_default_counterpart(const tt_spec *ours, tt_spec *txl)
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

static void describe(const bench_model *m, char *out, size_t n)
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

static const bench_paper_row paper_rows[] = {
    {"PTB", 3, 256, 40, 32, 30, 2100, 10000, "12M", {57.9, 49.8}, "4.5B", "0.75B"},
    {"WikiText-103", 6, 256, 40, 80, 80, 2100, 267735, "85.5M", {20.9, 18.9}, "22.0B", "17.3B"},
    {"One-Billion", 8, 1024, 40, 80, 80, 2100, 793471, NULL, {20.5, 19.5}, NULL, NULL},
};

/* The paper's row of a tensorized model of the row's L, D, N, F and V (its rank and cores left
 * to the caller). */
const bench_paper_row *bench_paper_of(const tt_model_spec *s, long vocab)
{
    if (s->kind != TT_KIND_TENSORIZED) return NULL;
    for (size_t i = 0; i < sizeof paper_rows / sizeof paper_rows[0]; i++) {
        const bench_paper_row *p = &paper_rows[i];
        if (s->layers == p->layers && s->d_model == p->d_model &&
            (s->seq_len == p->seq_len || s->seq_len == p->alt_seq_len) && s->d_inner == p->d_inner &&
            vocab == p->vocab)
            return p;
    }
    return NULL;
}

/* The paper's row of a tensorized model with 1 or 2 cores and the row's L, D, R, N, F and V. */
static const bench_paper_row *paper_match(const bench_model *m)
{
    const tt_model_spec *s = &m->spec->model;
    const bench_paper_row *p = bench_paper_of(s, m->costs.vocab);
    return p && s->cores >= 1 && s->cores <= 2 && s->rank == p->rank ? p : NULL;
}

/* The paper's figures as (quantity, value, unit) rows; a figure it does not give is left out. */
typedef struct {
    const char *quantity, *text, *unit;
    double value;
} paper_fig;

static int paper_figures(const bench_paper_row *p, int cores, paper_fig *f)
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
static int analytic_rows(const bench_model *m, int nm, row *r)
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

void bench_human(double v, const char *unit, char *out, size_t n)
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

static void print_text(const bench_model *m, int nm, int default_vs, const bench_paper_row *paper)
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
        bench_human(r[i].v[0], r[i].unit, a, sizeof a);
        printf("  %-28s %16s", r[i].quantity, a);
        if (nm > 1) {
            bench_human(r[i].v[1], r[i].unit, b, sizeof b);
            printf(" %16s", b);
            if (r[i].v[1] != 0) printf(" %8.3f", r[i].v[0] / r[i].v[1]);
            else printf(" %8s", "-");
        }
        printf("\n");
    }
    printf("\nmeasured%s\n", isnan(m[0].train_tok_s) && (nm < 2 || isnan(m[1].train_tok_s))
                                   ? " (needs a GPU)" : " on the GPU (training: forward, backward, Adam)");
    for (int i = 0; i < N_MEASURED; i++) {
        bench_human(measured(&m[0], i), measured_unit[i], a, sizeof a);
        printf("  %-28s %16s", measured_name[i], a);
        if (nm > 1) {
            bench_human(measured(&m[1], i), measured_unit[i], b, sizeof b);
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
                bench_human(m[0].costs.fwd_total, "FLOP/token", a, sizeof a);
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

static void print_json(const bench_model *m, int nm, int default_vs, const bench_paper_row *paper, const char *gpu)
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

static void print_csv(const bench_model *m, int nm, const bench_paper_row *paper)
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

static void csv_value(FILE *f, double v, const char *fmt)
{
    if (!isnan(v)) fprintf(f, fmt, v);
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
    const double replay_ms = tt_gpu_lm_replay_ms(lm, steps);
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
        printf(",\"one_stream_ms\":");
        json_number(p.one_stream_ms, stdout);
        printf(",\"replay_ms\":");
        json_number(replay_ms, stdout);
        printf(",\"parts\":%d,\"kernels\":%d,\"memsets\":%d,\"copies\":%d,\"kernels_by_op\":[",
               p.parts, p.kernels, p.memsets, p.copies);
        for (int i = 0; i < p.n_ops; i++) {
            printf("%s{\"op\":", i ? "," : "");
            tt_json_string(p.ops[i].op, stdout);
            printf(",\"n\":%d}", p.ops[i].n);
        }
        printf("],\"peak_tflops\":");
        json_number(peak, stdout);
        printf(",\"bandwidth_gbps\":");
        json_number(bandwidth, stdout);
        printf(",\"roles\":[");
    } else if (o->format == OUT_CSV) {
        printf("role,forward_ms,backward_ms,ms,share,gflop,tflops,peak_fraction,gbytes,gbps,"
               "roofline_fraction\n");
    } else {
        printf("where one training step of %s goes on %s (%s, batch %d x %d): %ld steps as one "
               "CUDA graph on one stream, a clock reading between %d parts a step\n\n",
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
        printf("the step on one stream, as profiled without the marks: %.4f ms; the parts sum to "
               "%.2f of it. The step as trained (a CUDA graph, the side stream beside): %.4f ms, "
               "%.2f of one stream's. softmax counts its backward as forward (one pass); GFLOP: "
               "the cost model's useful work (masked products not counted), backward twice the "
               "forward's; GB: the useful device-memory traffic of forward and backward (the cost "
               "model's: each product's operands and result once, never the tensorized T); "
               "roofline: the longer of GFLOP at the peak and GB at the bandwidth, over the time "
               "taken; peak and bandwidth: %s\n", p.one_stream_ms, p.sum_ms / p.one_stream_ms,
               step_ms, step_ms / p.one_stream_ms,
               card ? tt_card_label(card) : "unknown (this card is not in gpu/cards.c)");
        printf("launches a step: %d kernels (cuBLAS's each counted), %d memsets, %d copies\n",
               p.kernels, p.memsets, p.copies);
        if (isfinite(replay_ms))
            printf("the step's graph replayed back to back, nothing of the host's between: %.4f ms; "
                   "the host between steps (this bench's token draws among it, and the copies up "
                   "and down) costs %.4f ms a step as trained\n",
                   replay_ms, step_ms - replay_ms);
        else
            printf("the step's graph replayed back to back: none (CUDA graphs off)\n");
        if (p.n_ops) {
            printf("kernels by op:");
            for (int i = 0; i < p.n_ops; i++) printf("%s %s %d", i ? "," : "", p.ops[i].op, p.ops[i].n);
            printf("\n");
        }
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
    if (argc > 1 && !strcmp(argv[1], "sweep")) return bench_sweep_main(argc - 1, argv + 1);
    if (argc > 1 && !strcmp(argv[1], "plot")) return bench_plot_main(argc - 1, argv + 1);
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
    if ((rc = bench_resolve_vocab(&ours, &vocab))) {
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
            rc = bench_resolve_vocab(&vs, &vs_vocab);
        }
        nm = 2;
    } else if (default_vs) {
        rc = bench_default_counterpart(&ours, &txl);
        vs_vocab = vocab;
        nm = 2;
    }
    if (rc) {
        if (loaded_vs) tt_spec_free(&vs);
        tt_spec_free(&ours);
        return rc;
    }

    bench_model m[2];
    bench_model_init(&m[0], "ours", &ours, vocab);
    if (nm > 1) bench_model_init(&m[1], "counterpart", o.vs ? &vs : &txl, vs_vocab);
    const bench_paper_row *paper = paper_match(&m[0]);

    /* Measuring needs a GPU; the driver is opened lazily, so this says why there is none. Every
     * output prints the measured fields as they are ("-", null or empty while NAN). */
    char gpu[9000];
    tt_gpu g;
    if (tt_gpu_open(&g, 0, err, sizeof err) == 0) {
        const long steps = o.steps ? o.steps : 20;
        tt_cache cache;
        const int cached = tt_cache_open(&cache, NULL, err, sizeof err) == 0;
        for (int k = 0; k < nm; k++) bench_measure(&m[k], &g, cached ? &cache : NULL, steps);
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
