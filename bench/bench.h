/* tt-bench's parts (bench/tt_bench.c: a spec's costs against Transformer-XL, measured on a GPU,
 * and --profile; bench/sweep.c: `tt-bench sweep`; bench/plot.c: `tt-bench plot`): what they
 * share. */
#ifndef TT_BENCH_H
#define TT_BENCH_H

#include <stddef.h>

#include "cache.h"
#include "gpu.h"
#include "report.h"
#include "spec.h"

/* One model of the comparison: its spec, what the cost model says, and what a GPU measured (NAN
 * where nothing was: no GPU, or the model did not fit, which failed says). */
typedef struct {
    const char *role; /* "ours" or "counterpart" */
    const tt_spec *spec;
    tt_costs costs;
    double train_tok_s, eval_tok_s, step_ms, peak_bytes, mfu;
    char failed[4096]; /* why it was not measured on the GPU there was ("" when it was) */
} bench_model;

/* m for spec (its vocabulary vocab resolved), its costs from the cost model, nothing measured. */
void bench_model_init(bench_model *m, const char *role, const tt_spec *spec, long vocab);
/* m trained and evaluated on the GPU g at its spec's shapes from its initial weights on drawn
 * tokens (tuning choices from cache, NULL: none), timed between CUDA events after a warm-up; a
 * model that cannot be opened is left unmeasured, with why in m->failed. */
void bench_measure(bench_model *m, tt_gpu *g, const tt_cache *cache, long steps);
/* The vocabulary size: model.vocab, else counted from data.train as ttgen and tt-train do; 0,
 * or 2 with a line on stderr. */
int bench_resolve_vocab(const tt_spec *spec, long *vocab);
/* The Transformer-XL of ours's shape: everything but the attention taken as it is, memory as
 * long as the segment. Shares ours's strings: not to be freed. */
int bench_default_counterpart(const tt_spec *ours, tt_spec *txl);
/* v in unit with a k/M/G prefix ("-" for NAN) into out. */
void bench_human(double v, const char *unit, char *out, size_t n);

/* --- the paper's rows (MODEL.md section 5), labelled as the paper's --- */

typedef struct {
    const char *name;
    int layers, d_model, rank, seq_len, alt_seq_len, d_inner;
    long vocab;
    const char *params;      /* as the paper's FLOPs table gives it; NULL: not given */
    double ppl[2];           /* test perplexity, core-1 and core-2 (unmasked attention) */
    const char *flops_txl, *flops_ours; /* the paper's FLOPs claims (no definition given) */
} bench_paper_row;

/* The paper's row of a tensorized model of the row's L, D, N, F and V (rank and cores left to
 * the caller), or NULL. */
const bench_paper_row *bench_paper_of(const tt_model_spec *s, long vocab);

/* The subcommands: exit codes as tt-bench's. */
int bench_sweep_main(int argc, char **argv);
int bench_plot_main(int argc, char **argv);

#endif
