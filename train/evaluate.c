/* Windowed evaluation (see evaluate.h). */
#include "evaluate.h"

#include <stdlib.h>
#include <string.h>

#include "util.h"

int tt_evaluate(tt_eval_fn run, void *ctx, int batch, int n, const tt_tokens *tokens, int stride,
                long max_tokens, tt_eval_result *res, char *err, size_t errlen)
{
    return tt_evaluate_part(run, ctx, batch, n, tokens, stride, max_tokens, 0, 1, res, err, errlen);
}

int tt_evaluate_part(tt_eval_fn run, void *ctx, int batch, int n, const tt_tokens *tokens,
                     int stride, long max_tokens, int part, int parts, tt_eval_result *res,
                     char *err, size_t errlen)
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
    for (long group = 0; next <= last; group++) {
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
            res->windows += group % parts == part;
        }
        if (group % parts != part) continue; /* another part's group */
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

/* Transformer-XL's streams (tt_evaluate_txl): the first prediction of each of b streams. */
static long *txl_streams(long preds, int b)
{
    long *first = tt_xmalloc(((size_t)b + 1) * sizeof *first);
    for (int s = 0; s <= b; s++) first[s] = preds / b * s + (s < preds % b ? s : preds % b);
    return first;
}

long tt_eval_total(const tt_tokens *tokens, long max_tokens, tt_eval_result *res, char *err,
                   size_t errlen)
{
    const long total = max_tokens > 0 && max_tokens < tokens->n ? max_tokens : tokens->n;
    memset(res, 0, sizeof *res);
    if (total < 2) return tt_errf(err, errlen, "the split has %ld tokens: nothing to predict", total);
    return total;
}

int tt_evaluate_txl(tt_txl_eval_fn run, void *ctx, int batch, int n, const tt_tokens *tokens,
                    long max_tokens, tt_eval_result *res, char *err, size_t errlen)
{
    const long total = tt_eval_total(tokens, max_tokens, res, err, errlen);
    if (total < 0) return -1;
    const int b = tt_txl_eval_streams(total, batch);
    return tt_evaluate_txl_part(run, ctx, b, 0, b, n, tokens, max_tokens, res, err, errlen);
}

int tt_evaluate_txl_part(tt_txl_eval_fn run, void *ctx, int streams, int s0, int s1, int n,
                         const tt_tokens *tokens, long max_tokens, tt_eval_result *res, char *err,
                         size_t errlen)
{
    const long total = tt_eval_total(tokens, max_tokens, res, err, errlen);
    if (total < 0) return -1;
    if (s0 >= s1) return 0;
    /* predictions p = 0 .. preds-1 read token p and predict token p + 1 */
    const long preds = total - 1;
    long *first = txl_streams(preds, streams);
    const long longest = first[1] - first[0], segments = (longest + n - 1) / n;
    const int b = s1 - s0;
    int32_t *in = tt_xmalloc((size_t)b * n * sizeof *in), *tg = tt_xmalloc((size_t)b * n * sizeof *tg);
    float *wt = tt_xmalloc((size_t)b * n * sizeof *wt);
    for (long g = 0; g < segments; g++) {
        for (int s = 0; s < b; s++)
            for (int t = 0; t < n; t++) {
                const long p = first[s0 + s] + g * n + t, last = first[s0 + s + 1] - 1;
                const long q = p <= last ? p : last; /* past the stream's end: its last, unscored */
                in[s * n + t] = tokens->ids[q];
                tg[s * n + t] = tokens->ids[q + 1];
                wt[s * n + t] = p <= last ? 1 : 0;
            }
        tt_lm_result r;
        run(ctx, in, tg, wt, g > 0, &r);
        res->nll += r.nll_sum;
        res->scored += (long)r.scored;
        res->windows++;
    }
    free(in);
    free(tg);
    free(wt);
    free(first);
    return 0;
}

int tt_txl_eval_streams(long total, int batch)
{
    const long preds = total - 1;
    return (int)(preds < batch ? preds : batch);
}

typedef struct {
    tt_cpu_lm lm;
    tt_real *w, *mem;
    int mlen;
} txl_cpu_ctx;

static void run_txl_cpu(void *ctx, const int32_t *in, const int32_t *tg, const float *wt,
                        bool continues, tt_lm_result *r)
{
    txl_cpu_ctx *c = ctx;
    tt_lm_opts o = {.train = false, .weight = wt};
    const int mlen = continues ? c->mlen : 0;
    c->mlen = tt_cpu_txl_lm_run(&c->lm, c->w, NULL, in, tg, mlen ? c->mem : NULL, mlen, c->mem, &o, r);
}

int tt_evaluate_txl_cpu(const tt_layout *l, int batch, tt_real *w, const tt_tokens *tokens,
                        long max_tokens, tt_eval_result *res, char *err, size_t errlen)
{
    const long total = tt_eval_total(tokens, max_tokens, res, err, errlen);
    if (total < 0) return -1;
    const int b = tt_txl_eval_streams(total, batch);
    txl_cpu_ctx c = {.w = w, .mlen = 0};
    tt_cpu_lm_init(&c.lm, l, b);
    c.mem = tt_xmalloc(((size_t)l->m.layers * b * l->m.mem_len * l->m.d_model + 1) * sizeof *c.mem);
    const int rc = tt_evaluate_txl(run_txl_cpu, &c, b, l->m.seq_len, tokens, max_tokens, res, err, errlen);
    free(c.mem);
    tt_cpu_lm_free(&c.lm);
    return rc;
}
