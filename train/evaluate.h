/* Perplexity as MODEL.md section 2 defines it: windows of N tokens with stride S over the whole
 * split; the first window scores all its N predictions, each later one its last S, and the last
 * window is moved back to end at the split's end and scores only what is left. Every token but
 * the first is scored exactly once, with at least N - S tokens of context. */
#ifndef TT_EVALUATE_H
#define TT_EVALUATE_H

#include "corpus.h"
#include "cpu_model.h"

typedef struct {
    double nll;   /* sum of -log p over scored tokens */
    long scored;  /* tokens scored */
    long windows;
} tt_eval_result;

/* Runs one batch of windows: inputs, targets, weights [batch, N]; fills res (nll_sum, scored). */
typedef void (*tt_eval_fn)(void *ctx, const int32_t *inputs, const int32_t *targets,
                           const float *weights, tt_lm_result *res);

/* Evaluates tokens (the first max_tokens of them when max_tokens > 0), batch windows at a time
 * through run. -1 with a message when the split is shorter than N + 1. */
int tt_evaluate(tt_eval_fn run, void *ctx, int batch, int n, const tt_tokens *tokens, int stride,
                long max_tokens, tt_eval_result *res, char *err, size_t errlen);
/* Its part `part` of `parts` (several GPUs): the same groups of batch windows, of which this part
 * runs every parts-th from the part-th; res holds this part's sums, and the parts' sums add up
 * to the whole evaluation's. */
int tt_evaluate_part(tt_eval_fn run, void *ctx, int batch, int n, const tt_tokens *tokens,
                     int stride, long max_tokens, int part, int parts, tt_eval_result *res,
                     char *err, size_t errlen);

/* tt_evaluate with the CPU reference (lm's batch windows at a time). */
int tt_evaluate_cpu(tt_cpu_lm *lm, float *w, const tt_tokens *tokens, int stride, long max_tokens,
                    tt_eval_result *res, char *err, size_t errlen);

/* Transformer-XL (MODEL.md section 3) on the CPU reference, with l's seq_len (tgt_len), mem_len
 * and clamp_len: the predictions of tokens 1 .. total-1 in `batch` contiguous streams (of equal
 * length, to a token), each read in order in segments of tgt_len that attend to the memories its
 * previous segments left, every token but the first scored exactly once (a stream's last segment
 * may be short: the positions past its end have weight 0 and come last, so the causal mask keeps
 * them out). A stream's first tokens see only what came before them in that stream (batch 1:
 * every token has its whole past, up to mem_len + tgt_len tokens). res->windows counts the
 * segments. -1 with a message when the split has fewer than 2 tokens. */
int tt_evaluate_txl_cpu(const tt_layout *l, int batch, tt_real *w, const tt_tokens *tokens,
                        long max_tokens, tt_eval_result *res, char *err, size_t errlen);

/* The same through run, whatever it runs on: one segment of each stream a call, continues
 * false for the first (no memory) and true after. tt_txl_eval_streams: the streams (and the
 * batch run gets) for a split of total tokens. */
typedef void (*tt_txl_eval_fn)(void *ctx, const int32_t *inputs, const int32_t *targets,
                               const float *weights, bool continues, tt_lm_result *res);
int tt_evaluate_txl(tt_txl_eval_fn run, void *ctx, int batch, int n, const tt_tokens *tokens,
                    long max_tokens, tt_eval_result *res, char *err, size_t errlen);
/* Streams s0 .. s1-1 of that evaluation in `streams` streams (s1 - s0 of them a call; several
 * GPUs: each rank its own streams, every token with the context it has in the whole). */
int tt_evaluate_txl_part(tt_txl_eval_fn run, void *ctx, int streams, int s0, int s1, int n,
                         const tt_tokens *tokens, long max_tokens, tt_eval_result *res, char *err,
                         size_t errlen);
int tt_txl_eval_streams(long total, int batch);
/* The tokens an evaluation reads: all of them, or the first max_tokens (> 0); res zeroed. -1 with
 * a message when they are fewer than 2 (nothing to predict). */
long tt_eval_total(const tt_tokens *tokens, long max_tokens, tt_eval_result *res, char *err,
                   size_t errlen);

#endif
