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

/* Evaluates tokens (the first max_tokens of them when max_tokens > 0) with lm (whose batch is
 * the number of windows run at once). -1 with a message when the split is shorter than N + 1. */
int tt_evaluate_cpu(tt_cpu_lm *lm, float *w, const tt_tokens *tokens, int stride, long max_tokens,
                    tt_eval_result *res, char *err, size_t errlen);

#endif
