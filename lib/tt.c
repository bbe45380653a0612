/* libtt (include/tt.h): a trained model through the engine that tt-train and tt-eval use. The
 * engine runs the layers (tt_engine_forward: on the CPU reference or the GPU) and hands back the
 * last layer's output; the output layer and everything after it (log-probabilities, sampling)
 * run here on the host in double, the same code whatever the device, so that the CPU and the
 * GPU choose the same tokens from the same seed. */
#include "tt.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "checkpoint.h"
#include "corpus.h"
#include "cpu_model.h"
#include "engine.h"
#include "model.h"
#include "rng.h"
#include "spec.h"
#include "util.h"

struct tt_model {
    tt_spec spec;
    tt_vocab vocab;
    tt_layout layout;
    tt_view view;       /* of the host weights, for the output layer */
    tt_engine *eng;     /* batch 1 */
    char device[300];
    bool on_gpu;
    long step;
    int n, d;           /* seq_len, d_model */
    bool txl;
    int32_t *in;        /* [n] a window's or segment's inputs */
    float *hidden;      /* [n, d] x_L of the last forward */
    float *mem[2];      /* Transformer-XL: [L, mem_len, d] memories, in and out */
    double *dist;       /* [vocab] */
    /* Transformer-XL's generation a token at a time (opened at its first): the same weights
     * with seq_len 1 and a memory of M + N - 1 rows, which holds the segment's memory and the
     * layers' inputs of its tokens so far (cache: [L, up to M + N - 1, d], in and out) */
    tt_spec inc_spec; /* a shallow copy of spec: not freed */
    tt_layout inc_layout;
    tt_engine *inc;
    float *cache[2];
    tt_cpu_rows *rows;  /* the causal tensorized model on the CPU: its window a row at a time */
    char *broken;       /* an internal error's message: the model can only be closed */
    long forwards, panic_at; /* TT_FAULT_LIB_PANIC's test: the panic_at-th forward fails */
};

static tt_status fail(tt_error *err, tt_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static tt_status fail(tt_error *err, tt_status code, const char *fmt, ...)
{
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

/* What a call does after tt_panic trapped it (see util.h's tt_panic_trap): the model is marked
 * unusable (NULL: a tt_open that did not finish, which leaks what it made). */
static tt_status trapped(tt_model *m, const tt_panic_trap *trap, tt_panic_trap *prev, tt_error *err)
{
    tt_panic_trap_set(prev);
    if (m && !m->broken) m->broken = tt_xstrdup(trap->message);
    return fail(err, TT_ERR_INTERNAL, "%s", trap->message);
}

static tt_status broken(const tt_model *m, tt_error *err)
{
    return fail(err, TT_ERR_INTERNAL, "the model failed before (%s): it can only be closed",
                m->broken);
}

static tt_status ok(tt_error *err)
{
    if (err) {
        err->code = TT_OK;
        err->message[0] = '\0';
    }
    return TT_OK;
}

/* The folder a model.safetensors lies in (its vocab.txt beside it). */
static char *folder_of(const char *file)
{
    const char *slash = strrchr(file, '/');
    return slash ? tt_xasprintf("%.*s", (int)(slash - file), file) : tt_xstrdup(".");
}

static tt_status open_body(tt_model **out, const char *spec_path, const char *checkpoint,
                           const char *device, tt_error *err)
{
    if (!out || !spec_path || !checkpoint)
        return fail(err, TT_ERR_ARGUMENT, "tt_open: the model, spec and checkpoint are required");
    *out = NULL;
    if (!device) device = "auto";
    if (strcmp(device, "cpu") && strcmp(device, "cuda") && strcmp(device, "auto"))
        return fail(err, TT_ERR_ARGUMENT, "device is cpu, cuda or auto, not '%s'", device);
    char msg[1024];
    tt_model *m = tt_xcalloc(1, sizeof *m);
    tt_status code = TT_ERR_SPEC;
    char *file = NULL, *dir = NULL, *vocab_path = NULL;
    if (tt_spec_load(spec_path, &m->spec, msg, sizeof msg) != 0) goto fail;
    code = TT_ERR_CHECKPOINT;
    if (!(file = tt_checkpoint_model_file(checkpoint, msg, sizeof msg))) goto fail;
    dir = folder_of(file);
    vocab_path = tt_xasprintf("%s/vocab.txt", dir);
    if (tt_vocab_load(vocab_path, &m->vocab, msg, sizeof msg) != 0) goto fail;
    code = TT_ERR_SPEC;
    if (m->spec.model.vocab && m->spec.model.vocab != m->vocab.n) {
        snprintf(msg, sizeof msg, "%s: model.vocab is %ld but the checkpoint's vocabulary (%s) "
                 "has %ld words", spec_path, m->spec.model.vocab, vocab_path, m->vocab.n);
        goto fail;
    }
    if (tt_spec_check_vocab(&m->spec, m->vocab.n, msg, sizeof msg) != 0 ||
        tt_layout_build(&m->spec.model, m->vocab.n, &m->layout, msg, sizeof msg) != 0)
        goto fail;
    /* fp32 on either device, whatever the training's precision (the weights are fp32): the GPU
     * then gives the CPU's numbers to float rounding, and a sampled text is the same on both */
    m->spec.train.precision = TT_PREC_FP32;
    code = TT_ERR_DEVICE;
    if (tt_engine_open(&m->eng, device, &m->spec, &m->layout, 1, m->device, sizeof m->device, msg,
                       sizeof msg) != 0)
        goto fail;
    m->on_gpu = tt_engine_device_bytes(m->eng, NULL) > 0;
    code = TT_ERR_CHECKPOINT;
    float *w = tt_engine_host(m->eng, 0);
    if (tt_checkpoint_load(file, &m->spec, &m->layout, &m->vocab, w, &m->step, msg, sizeof msg))
        goto fail;
    tt_engine_upload(m->eng);
    tt_view_make(&m->layout, w, &m->view);
    m->n = m->spec.model.seq_len;
    m->d = m->spec.model.d_model;
    m->txl = m->spec.model.kind == TT_KIND_TXL;
    m->in = tt_xcalloc((size_t)m->n, sizeof *m->in);
    m->hidden = tt_xcalloc((size_t)m->n * m->d, sizeof *m->hidden);
    m->dist = tt_xcalloc((size_t)m->vocab.n, sizeof *m->dist);
    if (m->txl)
        for (int i = 0; i < 2; i++)
            m->mem[i] = tt_xcalloc((size_t)m->spec.model.layers * m->spec.model.mem_len * m->d,
                                   sizeof(float));
    m->panic_at = tt_env_long("TT_FAULT_LIB_PANIC", 0, 1L << 40, 0);
    free(file), free(dir), free(vocab_path);
    *out = m;
    return ok(err);
fail:
    free(file), free(dir), free(vocab_path);
    tt_close(m);
    return fail(err, code, "%s", msg);
}

void tt_close(tt_model *m)
{
    if (!m) return;
    tt_panic_trap trap, *prev = tt_panic_trap_get();
    if (setjmp(trap.env)) { /* the device failed again: what is left stays allocated */
        tt_panic_trap_set(prev);
        return;
    }
    tt_panic_trap_set(&trap);
    tt_engine_close(m->eng);
    tt_engine_close(m->inc);
    tt_panic_trap_set(prev);
    tt_cpu_rows_close(m->rows); /* before the layout it reads */
    tt_view_free(&m->view);
    tt_layout_free(&m->layout);
    tt_vocab_free(&m->vocab);
    tt_spec_free(&m->spec);
    free(m->in), free(m->hidden), free(m->dist);
    free(m->mem[0]), free(m->mem[1]);
    free(m->cache[0]), free(m->cache[1]);
    tt_layout_free(&m->inc_layout);
    free(m->broken);
    free(m);
}

long tt_vocab_size(const tt_model *m) { return m ? m->vocab.n : 0; }
int tt_context_length(const tt_model *m) { return m ? m->n : 0; }
int tt_is_transformer_xl(const tt_model *m) { return m && m->txl; }
const char *tt_device(const tt_model *m) { return m ? m->device : NULL; }
long tt_checkpoint_step(const tt_model *m) { return m ? m->step : 0; }
int32_t tt_eos_id(const tt_model *m) { return m ? (int32_t)m->vocab.eos : -1; }
int32_t tt_unk_id(const tt_model *m) { return m ? (int32_t)m->vocab.unk : -1; }

const char *tt_word(const tt_model *m, int32_t id)
{
    return m && id >= 0 && id < m->vocab.n ? m->vocab.words[id] : NULL;
}

tt_status tt_tokenize(const tt_model *m, const char *text, int eos_per_line, int32_t *ids,
                      size_t cap, size_t *n, size_t *unknown, tt_error *err)
{
    if (!m || !text || !n)
        return fail(err, TT_ERR_ARGUMENT, "tt_tokenize: the model, text and count are required");
    char msg[1024];
    if (tt_text_ids("text", text, strlen(text), &m->vocab, eos_per_line != 0, ids, cap, n,
                    unknown, msg, sizeof msg) != 0)
        return fail(err, TT_ERR_ARGUMENT, "%s", msg);
    if (ids && *n > cap)
        return fail(err, TT_ERR_ARGUMENT, "the text holds %zu tokens, more than the %zu asked for",
                    *n, cap);
    return ok(err);
}

static tt_status check_ids(const tt_model *m, const int32_t *ids, size_t n, tt_error *err)
{
    for (size_t i = 0; i < n; i++)
        if (ids[i] < 0 || ids[i] >= m->vocab.n)
            return fail(err, TT_ERR_TOKEN, "token %zu is id %d, outside the vocabulary of %ld",
                        i, (int)ids[i], m->vocab.n);
    return TT_OK;
}

/* One forward of the window or segment ids[0..len-1] (len <= seq_len; the rest padding, which
 * the causal mask keeps out of the real rows), attending to mlen rows of m->mem[0]
 * (Transformer-XL); m->hidden gets x_L, and m->mem[1] the next memories (returned: their
 * length). */
static int forward(tt_model *m, const int32_t *ids, int len, int mlen)
{
    if (m->panic_at && ++m->forwards == m->panic_at)
        tt_panic(__FILE__, __LINE__, "TT_FAULT_LIB_PANIC: forward %ld fails", m->forwards);
    for (int i = 0; i < m->n; i++) m->in[i] = i < len ? ids[i] : (int32_t)m->vocab.eos;
    return tt_engine_forward(m->eng, m->in, m->txl ? m->mem[0] : NULL, m->txl ? mlen : 0,
                             m->txl ? m->mem[1] : NULL, m->hidden);
}

/* Transformer-XL: the memories a segment left become the next one's. */
static int carry(tt_model *m, int mlen)
{
    float *t = m->mem[0];
    m->mem[0] = m->mem[1];
    m->mem[1] = t;
    return mlen;
}

static const tt_real *row(const tt_model *m, int i) { return m->hidden + (size_t)i * m->d; }

static tt_status score_body(tt_model *m, const int32_t *ids, size_t n, int stride,
                            double *logprob, tt_error *err)
{
    if (!m || !ids || !logprob || n < 2)
        return fail(err, TT_ERR_ARGUMENT, "tt_score: two tokens or more, and somewhere to put "
                    "their log-probabilities");
    if (stride < 0 || stride > m->n)
        return fail(err, TT_ERR_ARGUMENT, "stride %d: 0 (seq_len) .. seq_len %d", stride, m->n);
    if (check_ids(m, ids, n, err)) return TT_ERR_TOKEN;
    const long preds = (long)n - 1, N = m->n, S = stride ? stride : N;
    if (m->txl) { /* segments of N predictions, each after the memories of those before */
        int mlen = 0;
        for (long a = 0; a < preds; a += N) {
            const int len = (int)(preds - a < N ? preds - a : N);
            mlen = carry(m, forward(m, ids + a, len, mlen));
            for (int i = 0; i < len; i++)
                logprob[a + i] = tt_lm_logprob(&m->layout, &m->view, row(m, i), ids[a + i + 1]);
        }
        return ok(err);
    }
    /* windows as tt_evaluate: the first scores all of its predictions, each later one (S on)
     * its last S, the last moved back to end at the last prediction */
    long done = 0;
    for (long a = 0; done < preds; a += S) { /* windows at 0, S, 2S, ... */
        const long start = a + N > preds ? (preds > N ? preds - N : 0) : a;
        const int len = (int)(preds - start < N ? preds - start : N);
        forward(m, ids + start, len, 0);
        for (long i = done; i < start + len; i++)
            logprob[i] = tt_lm_logprob(&m->layout, &m->view, row(m, (int)(i - start)), ids[i + 1]);
        done = start + len;
    }
    return ok(err);
}

/* Transformer-XL: the whole segments of ids[0..n-1] but the last 1 .. N tokens, read in turn,
 * each after the memory of those before (left in m->mem[0], its length in *mlen). Returns where
 * the rest starts. */
static size_t whole_segments(tt_model *m, const int32_t *ids, size_t n, int *mlen)
{
    size_t a = 0;
    *mlen = 0;
    for (; n - a > (size_t)m->n; a += (size_t)m->n)
        *mlen = carry(m, forward(m, ids + a, m->n, *mlen));
    return a;
}

/* The distribution after ids[0..n-1] into out: Transformer-XL reads whole segments with memory
 * first, then the rest as a partial segment; the tensorized model the window of the last N. */
static void next_dist(tt_model *m, const int32_t *ids, size_t n, double *out)
{
    int mlen = 0;
    const size_t start = m->txl ? whole_segments(m, ids, n, &mlen)
                                : n > (size_t)m->n ? n - (size_t)m->n : 0;
    const int len = (int)(n - start);
    forward(m, ids + start, len, mlen);
    tt_lm_logprobs(&m->layout, &m->view, row(m, len - 1), out);
}

static tt_status next_body(tt_model *m, const int32_t *ids, size_t n, double *logprob,
                           tt_error *err)
{
    if (!m || !ids || !logprob || n < 1)
        return fail(err, TT_ERR_ARGUMENT, "tt_next: one token or more, and somewhere to put the "
                    "distribution");
    if (check_ids(m, ids, n, err)) return TT_ERR_TOKEN;
    next_dist(m, ids, n, logprob);
    return ok(err);
}

/* --- sampling ----------------------------------------------------------------------------------- */

typedef struct {
    double lp;
    int32_t id;
} scored_id;

static int by_prob(const void *a, const void *b)
{
    const scored_id *x = a, *y = b;
    if (x->lp != y->lp) return x->lp > y->lp ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* A uniform draw in [0, 1) for token k of a generation from seed (counter-based: no state). */
static double uniform(uint64_t seed, uint64_t k)
{
    const uint64_t x = tt_mix64(tt_mix64(seed ^ 0x7474676eULL) + k);
    return (double)(x >> 11) * 0x1.0p-53;
}

/* A token of dist (log-probabilities over the vocabulary) as opts say, draw k. */
static int32_t sample(const double *dist, long v, const tt_sample_opts *o, uint64_t k,
                      scored_id *buf)
{
    if (o->temperature <= 0) { /* greedy: the most likely, the lowest id on a tie */
        long best = 0;
        for (long i = 1; i < v; i++)
            if (dist[i] > dist[best]) best = i;
        return (int32_t)best;
    }
    for (long i = 0; i < v; i++) buf[i] = (scored_id){dist[i] / o->temperature, (int32_t)i};
    /* truncated: the most likely first (the lower id first on a tie), and the first keep of
     * them; else every id in its order */
    long keep = v;
    if ((o->top_k > 0 && o->top_k < v) || (o->top_p > 0 && o->top_p < 1)) {
        qsort(buf, (size_t)v, sizeof *buf, by_prob);
        if (o->top_k > 0 && o->top_k < v) keep = o->top_k;
    }
    double top = -INFINITY, z = 0;
    for (long i = 0; i < keep; i++) top = buf[i].lp > top ? buf[i].lp : top;
    for (long i = 0; i < keep; i++) z += exp(buf[i].lp - top);
    if (o->top_p > 0 && o->top_p < 1) { /* the fewest whose mass reaches top_p */
        double mass = 0;
        long i = 0;
        while (i < keep && mass < o->top_p * z) mass += exp(buf[i++].lp - top);
        keep = i ? i : 1;
        z = mass;
    }
    const double u = uniform(o->seed, k) * z;
    double c = 0;
    for (long i = 0; i < keep; i++) {
        c += exp(buf[i].lp - top);
        if (u < c) return buf[i].id;
    }
    return buf[keep - 1].id;
}

/* Whether generation goes on after token i (t) was made: counted, handed out, and fn asked. */
static bool emit(tt_model *m, size_t i, int32_t t, int32_t *out, size_t *made, tt_token_fn fn,
                 void *ctx)
{
    if (out) out[i] = t;
    if (made) *made = i + 1;
    return !(fn && fn(ctx, t, m->vocab.words[t]));
}

/* The tensorized model: each token from the window of the last N (the first positions while
 * fewer). While the window fills, on the CPU a causal model adds a row at a time (tt_cpu_rows:
 * one row of each layer a token, the bits of the window's forward); once it slides, every row
 * changes (Wo ties each of T's columns to a position) and the window is recomputed. */
static tt_status generate_window(tt_model *m, const int32_t *prompt, size_t n, size_t k,
                                 const tt_sample_opts *opts, int32_t *out, size_t *made,
                                 tt_token_fn fn, void *ctx, scored_id *buf)
{
    int32_t *win = tt_xmalloc((size_t)m->n * sizeof *win);
    size_t have = n < (size_t)m->n ? n : (size_t)m->n;
    memcpy(win, prompt + n - have, have * sizeof *win);
    bool by_rows = !m->on_gpu && m->spec.model.causal;
    const tt_real *x = NULL;
    if (by_rows) {
        if (!m->rows) m->rows = tt_cpu_rows_open(&m->layout, tt_engine_host(m->eng, 0));
        tt_cpu_rows_reset(m->rows);
        for (size_t i = 0; i < have; i++) x = tt_cpu_rows_push(m->rows, win[i]);
    }
    for (size_t i = 0; i < k; i++) {
        if (!by_rows) {
            forward(m, win, (int)have, 0);
            x = row(m, (int)have - 1);
        }
        tt_lm_logprobs(&m->layout, &m->view, x, m->dist);
        const int32_t t = sample(m->dist, m->vocab.n, opts, i, buf);
        if (have == (size_t)m->n) { /* the window slides by one: every row changes */
            memmove(win, win + 1, (have - 1) * sizeof *win);
            have--;
            by_rows = false;
        }
        win[have++] = t;
        if (!emit(m, i, t, out, made, fn, ctx)) break;
        if (by_rows && i + 1 < k) x = tt_cpu_rows_push(m->rows, t);
    }
    free(win);
    return TT_OK;
}

/* Transformer-XL's engine of one token a step (struct tt_model's inc), opened once. */
static tt_status open_inc(tt_model *m, tt_error *err)
{
    if (m->inc) return TT_OK;
    char msg[1024], desc[300];
    const tt_model_spec *ms = &m->spec.model;
    m->inc_spec = m->spec;
    m->inc_spec.model.seq_len = 1;
    m->inc_spec.model.mem_len = ms->mem_len + ms->seq_len - 1;
    if (tt_layout_build(&m->inc_spec.model, m->vocab.n, &m->inc_layout, msg, sizeof msg) != 0 ||
        tt_engine_open(&m->inc, m->on_gpu ? "cuda" : "cpu", &m->inc_spec, &m->inc_layout, 1, desc,
                       sizeof desc, msg, sizeof msg) != 0)
        return fail(err, TT_ERR_DEVICE, "Transformer-XL's one-token step: %s", msg);
    TT_ASSERT(m->inc_layout.n_floats == m->layout.n_floats);
    memcpy(tt_engine_host(m->inc, 0), tt_engine_host(m->eng, 0),
           m->layout.n_floats * sizeof(float));
    tt_engine_upload(m->inc);
    const size_t cap = (size_t)ms->layers * m->inc_spec.model.mem_len * m->d;
    for (int i = 0; i < 2; i++) m->cache[i] = tt_xcalloc(cap ? cap : 1, sizeof(float));
    return TT_OK;
}

/* One token t at the next position of the segment being filled, attending to the cache's mlen
 * rows; m->hidden's first row gets its x_L, the cache its layers' inputs. Returns the cache's
 * new length. */
static int inc_step(tt_model *m, int32_t t, int mlen)
{
    const int got = tt_engine_forward(m->inc, &t, m->cache[0], mlen, m->cache[1], m->hidden);
    float *c = m->cache[0];
    m->cache[0] = m->cache[1];
    m->cache[1] = c;
    return got;
}

/* A whole segment in the cache: its last mem_len rows (of each layer) are the next segment's
 * memory, as the segment's forward leaves them. Returns their count. */
static int end_segment(tt_model *m, int mlen)
{
    const int keep = mlen < m->spec.model.mem_len ? mlen : m->spec.model.mem_len;
    const size_t d = (size_t)m->d;
    for (int l = 0; l < m->spec.model.layers; l++) /* rows move down: layer by layer is safe */
        memmove(m->cache[0] + (size_t)l * keep * d,
                m->cache[0] + ((size_t)l * mlen + (size_t)(mlen - keep)) * d,
                (size_t)keep * d * sizeof(float));
    return keep;
}

/* Transformer-XL: the prompt's whole segments as the model reads them (its memory carried from
 * one to the next), then a token at a time: each new token attends to the memory and to the
 * segment's tokens before it, kept as the layers' inputs (the cached keys and values' source),
 * so a token costs one row of each layer; a whole segment leaves the next one's memory. The
 * numbers are those of reading the text in segments (tt_next). */
static tt_status generate_txl(tt_model *m, const int32_t *prompt, size_t n, size_t k,
                              const tt_sample_opts *opts, int32_t *out, size_t *made,
                              tt_token_fn fn, void *ctx, scored_id *buf, tt_error *err)
{
    const tt_status rc = open_inc(m, err);
    if (rc != TT_OK) return rc;
    const int N = m->n, L = m->spec.model.layers;
    int mlen;
    size_t a = whole_segments(m, prompt, n, &mlen); /* then the last 1 .. N one by one */
    memcpy(m->cache[0], m->mem[0], (size_t)L * mlen * m->d * sizeof(float));
    int pos = 0; /* the segment's tokens so far */
    for (; a < n; a++) {
        mlen = inc_step(m, prompt[a], mlen);
        if (++pos == N) mlen = end_segment(m, mlen), pos = 0;
    }
    for (size_t i = 0; i < k; i++) {
        tt_lm_logprobs(&m->layout, &m->view, row(m, 0), m->dist);
        const int32_t t = sample(m->dist, m->vocab.n, opts, i, buf);
        if (!emit(m, i, t, out, made, fn, ctx) || i + 1 == k) break;
        mlen = inc_step(m, t, mlen);
        if (++pos == N) mlen = end_segment(m, mlen), pos = 0;
    }
    return TT_OK;
}

static tt_status generate_body(tt_model *m, const int32_t *prompt, size_t n, size_t k,
                               const tt_sample_opts *opts, int32_t *out, size_t *made,
                               tt_token_fn fn, void *ctx, tt_error *err)
{
    if (made) *made = 0;
    if (!m || !prompt || n < 1 || !opts)
        return fail(err, TT_ERR_ARGUMENT, "tt_generate: a prompt of one token or more, and options");
    if (!(opts->temperature >= 0) || !isfinite(opts->temperature) || opts->top_k < 0 ||
        !(opts->top_p >= 0 && opts->top_p <= 1))
        return fail(err, TT_ERR_ARGUMENT, "temperature %g (0 or more), top_k %d (0 or more), "
                    "top_p %g (0 .. 1)", opts->temperature, opts->top_k, opts->top_p);
    if (check_ids(m, prompt, n, err)) return TT_ERR_TOKEN;
    scored_id *buf = tt_xmalloc((size_t)m->vocab.n * sizeof *buf);
    const tt_status rc = m->txl ? generate_txl(m, prompt, n, k, opts, out, made, fn, ctx, buf, err)
                                : generate_window(m, prompt, n, k, opts, out, made, fn, ctx, buf);
    free(buf);
    return rc == TT_OK ? ok(err) : rc;
}

/* --- the calls that run the model: internal errors trapped (tt_panic_trap) --------------------- */

#define TRAPPED(m, err, body)                                                                   \
    do {                                                                                        \
        if ((m) && (m)->broken) return broken((m), (err));                                     \
        tt_panic_trap trap, *prev = tt_panic_trap_get();                                        \
        if (setjmp(trap.env)) return trapped((m), &trap, prev, (err));                          \
        tt_panic_trap_set(&trap);                                                               \
        const tt_status rc = (body);                                                            \
        tt_panic_trap_set(prev);                                                                \
        return rc;                                                                              \
    } while (0)

tt_status tt_score(tt_model *m, const int32_t *ids, size_t n, int stride, double *logprob,
                   tt_error *err)
{
    TRAPPED(m, err, score_body(m, ids, n, stride, logprob, err));
}

tt_status tt_next(tt_model *m, const int32_t *ids, size_t n, double *logprob, tt_error *err)
{
    TRAPPED(m, err, next_body(m, ids, n, logprob, err));
}

tt_status tt_generate(tt_model *m, const int32_t *prompt, size_t n, size_t k,
                      const tt_sample_opts *opts, int32_t *out, size_t *made, tt_token_fn fn,
                      void *ctx, tt_error *err)
{
    TRAPPED(m, err, generate_body(m, prompt, n, k, opts, out, made, fn, ctx, err));
}

tt_status tt_open(tt_model **out, const char *spec_path, const char *checkpoint,
                  const char *device, tt_error *err)
{
    tt_model *none = NULL; /* a tt_open that fails inside leaks what it made */
    TRAPPED(none, err, open_body(out, spec_path, checkpoint, device, err));
}
