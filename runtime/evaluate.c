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

int tt_evaluate_txl_cpu(const tt_layout *l, int batch, tt_real *w, const tt_tokens *tokens,
                        long max_tokens, tt_eval_result *res, char *err, size_t errlen)
{
    const long total = max_tokens > 0 && max_tokens < tokens->n ? max_tokens : tokens->n;
    const int n = l->m.seq_len, d = l->m.d_model;
    memset(res, 0, sizeof *res);
    if (total < 2) return tt_errf(err, errlen, "the split has %ld tokens: nothing to predict", total);
    /* predictions p = 0 .. preds-1 read token p and predict token p + 1 */
    const long preds = total - 1;
    const int b = (int)(preds < batch ? preds : batch);
    long *first = tt_xmalloc(((size_t)b + 1) * sizeof *first);
    for (int s = 0; s <= b; s++) first[s] = preds / b * s + (s < preds % b ? s : preds % b);
    const long longest = first[1] - first[0], segments = (longest + n - 1) / n;
    tt_cpu_lm lm;
    tt_cpu_lm_init(&lm, l, b);
    tt_real *mem = tt_xmalloc(((size_t)l->m.layers * b * l->m.mem_len * d + 1) * sizeof *mem);
    int32_t *in = tt_xmalloc((size_t)b * n * sizeof *in), *tg = tt_xmalloc((size_t)b * n * sizeof *tg);
    tt_real *wt = tt_xmalloc((size_t)b * n * sizeof *wt);
    int mlen = 0;
    for (long g = 0; g < segments; g++) {
        for (int s = 0; s < b; s++)
            for (int t = 0; t < n; t++) {
                const long p = first[s] + g * n + t, last = first[s + 1] - 1;
                const long q = p <= last ? p : last; /* past the stream's end: its last, unscored */
                in[s * n + t] = tokens->ids[q];
                tg[s * n + t] = tokens->ids[q + 1];
                wt[s * n + t] = p <= last ? 1 : 0;
            }
        tt_lm_opts o = {.train = false, .weight = wt};
        tt_lm_result r;
        mlen = tt_cpu_txl_lm_run(&lm, w, NULL, in, tg, mlen ? mem : NULL, mlen, mem, &o, &r);
        res->nll += r.nll_sum;
        res->scored += (long)r.scored;
        res->windows++;
    }
    free(in);
    free(tg);
    free(wt);
    free(mem);
    free(first);
    tt_cpu_lm_free(&lm);
    return 0;
}
