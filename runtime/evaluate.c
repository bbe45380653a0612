/* Windowed evaluation (see evaluate.h). */
#include "evaluate.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

int tt_evaluate(tt_eval_fn run, void *ctx, int batch, int n, const tt_tokens *tokens, int stride,
                long max_tokens, tt_eval_result *res, char *err, size_t errlen)
{
    const long total = max_tokens > 0 && max_tokens < tokens->n ? max_tokens : tokens->n;
    memset(res, 0, sizeof *res);
    if (stride < 1 || stride > n)
        return tt_errf(err, errlen, "--stride must be from 1 to seq_len %d, not %d", n, stride);
    if (total < n + 1)
        return tt_errf(err, errlen, "the split has %ld tokens, fewer than seq_len + 1 = %d", total,
                       n + 1);
    const long last = total - 1; /* predictions are of tokens 1 .. total-1 */
    int32_t *in = tt_xmalloc((size_t)batch * n * sizeof *in);
    int32_t *tg = tt_xmalloc((size_t)batch * n * sizeof *tg);
    float *wt = tt_xmalloc((size_t)batch * n * sizeof *wt);
    long next = 1; /* the first token not yet scored */
    while (next <= last) {
        int b = 0;
        for (; b < batch && next <= last; b++) {
            /* The window predicts tokens start+1 .. start+n and scores those from `next`. */
            long end = next == 1 ? n : next - 1 + stride;
            if (end > last) end = last;
            const long start = end - n;
            for (int t = 0; t < n; t++) {
                in[b * n + t] = tokens->ids[start + t];
                tg[b * n + t] = tokens->ids[start + t + 1];
                wt[b * n + t] = start + t + 1 >= next ? 1.f : 0.f;
            }
            next = end + 1;
            res->windows++;
        }
        for (; b < batch; b++) /* pad the last group: repeated windows that score nothing */
            for (int t = 0; t < n; t++) {
                in[b * n + t] = in[t];
                tg[b * n + t] = tg[t];
                wt[b * n + t] = 0.f;
            }
        tt_lm_result r;
        run(ctx, in, tg, wt, &r);
        res->nll += r.nll_sum;
        res->scored += (long)r.scored;
    }
    free(in);
    free(tg);
    free(wt);
    return 0;
}

typedef struct {
    tt_cpu_lm *lm;
    float *w;
} cpu_ctx;

static void run_cpu(void *ctx, const int32_t *inputs, const int32_t *targets, const float *weights,
                    tt_lm_result *res)
{
    cpu_ctx *c = ctx;
    tt_lm_opts o = {.train = false, .weight = weights};
    tt_cpu_lm_run(c->lm, c->w, NULL, inputs, targets, &o, res);
}

int tt_evaluate_cpu(tt_cpu_lm *lm, float *w, const tt_tokens *tokens, int stride, long max_tokens,
                    tt_eval_result *res, char *err, size_t errlen)
{
    cpu_ctx c = {lm, w};
    return tt_evaluate(run_cpu, &c, lm->batch, lm->layout->m.seq_len, tokens, stride, max_tokens,
                       res, err, errlen);
}
