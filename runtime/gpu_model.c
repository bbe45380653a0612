/* The tensorized LM on the GPU (see gpu_model.h). Dropout sites as cpu_model.c numbers them:
 * 0 the embedding, 1 + 3 layer + {0 attention output, 1 FFN hidden, 2 FFN output}. */
#include "gpu_model.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "cpu_ops.h"
#include "optim.h"
#include "util.h"

typedef struct {
    void *qkv, *y, *s1, *x1, *h, *hd, *f, *s2, *x2; /* activations of the storage type */
    void *p;                                         /* P = Wr pe [N, R], storage type */
    float *g;                                        /* the core [R] */
    float *mean1, *rstd1, *mean2, *rstd2;
} layer_acts;

struct tt_gpu_lm {
    tt_gpu *gpu;
    const tt_spec *spec;
    const tt_layout *l;
    tt_gpu_program prog;
    tt_gemm gemm;
    int batch, rows;
    size_t es; /* bytes per activation element */
    char *arena;
    size_t bytes;
    float *w, *g, *m, *v;
    void *wc; /* the weights in the storage type (bf16: a copy Adam keeps current; fp32: w) */
    tt_view wv, gv;
    int32_t *tokens, *targets;
    float *weight;
    void *x0, *pe, *ones;
    layer_acts *acts;
    float *logits, *loss, *nll;
    double *sums;
    void *dx, *dres, *dy, *dqkv, *dff;
    float *dg, *dp, *dln, *ln_part, *ffn_part, *mla_part;
    void *dlog_c, *dp_c; /* bf16: dlogits and dP rounded for the bf16 products */
    uint64_t *keys;
    double *norm_part;
    tt_adam_scalars *sc;
    unsigned long long *step; /* the dropout step the kernels read (device) */
    unsigned long long host_step;
    void *blas_ws;           /* cuBLAS's workspace, so that it allocates nothing in a capture */
    /* the training step as a CUDA graph, captured on first use for these options */
    cudaGraphExec_t graph;
    tt_lm_opts graph_opts;
    bool graphs;             /* TT_CUDA_GRAPH=0 turns them off (to compare, or to debug) */
};

/* cuBLAS's recommended workspace on Hopper; more than enough before it. */
#define TT_BLAS_WORKSPACE ((size_t)32 << 20)

/* Two passes over the same list of buffers: the first adds up their sizes, the second, once the
 * one allocation exists, hands out pointers into it. */
typedef struct {
    char *base;
    size_t used;
} bump;

static void *take(bump *b, size_t bytes)
{
    void *p = b->base ? b->base + b->used : NULL;
    b->used += (bytes + 255) & ~(size_t)255;
    return p;
}

static void carve(tt_gpu_lm *lm, bump *b)
{
    const tt_model_spec *m = &lm->l->m;
    const size_t rows = (size_t)lm->rows, d = m->d_model, f = m->d_inner, r = m->rank;
    const size_t n = m->seq_len, es = lm->es, nf = lm->l->n_floats, v = (size_t)lm->l->vocab;
    lm->w = take(b, nf * 4);
    lm->g = take(b, nf * 4);
    lm->m = take(b, nf * 4);
    lm->v = take(b, nf * 4);
    lm->wc = es == 4 ? lm->w : take(b, nf * es);
    lm->tokens = take(b, rows * 4);
    lm->targets = take(b, rows * 4);
    lm->weight = take(b, rows * 4);
    lm->x0 = take(b, rows * d * es);
    lm->pe = take(b, n * d * es);
    lm->ones = take(b, rows * es);
    for (int k = 0; k < m->layers; k++) {
        layer_acts *a = &lm->acts[k];
        a->qkv = take(b, rows * 3 * r * es);
        a->g = take(b, r * 4);
        a->p = take(b, n * r * es);
        a->y = take(b, rows * d * es);
        a->s1 = take(b, rows * d * es);
        a->x1 = take(b, rows * d * es);
        a->h = take(b, rows * f * es);
        a->hd = take(b, rows * f * es);
        a->f = take(b, rows * d * es);
        a->s2 = take(b, rows * d * es);
        a->x2 = take(b, rows * d * es);
        a->mean1 = take(b, rows * 4);
        a->rstd1 = take(b, rows * 4);
        a->mean2 = take(b, rows * 4);
        a->rstd2 = take(b, rows * 4);
    }
    lm->logits = take(b, rows * v * 4);
    lm->loss = take(b, rows * 4);
    lm->nll = take(b, rows * 4);
    lm->sums = take(b, 2 * 8);
    lm->dx = take(b, rows * d * es);
    lm->dres = take(b, rows * d * es);
    lm->dy = take(b, rows * d * es);
    lm->dqkv = take(b, rows * 3 * r * es);
    lm->dff = take(b, rows * f * es);
    lm->dg = take(b, r * 4);
    lm->dp = take(b, n * r * 4);
    lm->dln = take(b, 2 * d * 4);
    lm->ln_part = take(b, 2 * (size_t)TT_LN_BWD_MAX_BLOCKS * d * 4);
    lm->ffn_part = take(b, tt_ffn_act_bwd_part_floats(&lm->prog) * 4);
    lm->mla_part = take(b, tt_mla_scratch_floats(&lm->prog, lm->batch) * 4);
    lm->keys = take(b, tt_embedding_keys(&lm->prog) * 8);
    lm->norm_part = take(b, tt_grad_norm_parts(&lm->prog) * 8);
    lm->sc = take(b, sizeof(tt_adam_scalars));
    lm->step = take(b, sizeof *lm->step);
    lm->blas_ws = take(b, TT_BLAS_WORKSPACE);
    lm->dlog_c = es == 4 ? NULL : take(b, rows * v * es);
    lm->dp_c = es == 4 ? NULL : take(b, n * r * es);
}

/* n floats from the host into dst of the storage type. */
static void upload_storage(tt_gpu_lm *lm, void *dst, const float *src, size_t n)
{
    if (lm->es == 4) {
        TT_CUDA(cudaMemcpy(dst, src, n * 4, cudaMemcpyHostToDevice));
        return;
    }
    uint16_t *h = tt_xmalloc(n * 2);
    for (size_t i = 0; i < n; i++) h[i] = tt_bf16_from_float(src[i]);
    TT_CUDA(cudaMemcpy(dst, h, n * 2, cudaMemcpyHostToDevice));
    free(h);
}

int tt_gpu_lm_open(tt_gpu_lm **out, tt_gpu *gpu, const tt_spec *spec, const tt_layout *layout,
                   int batch, const tt_cache *cache, char *err, size_t errlen)
{
    const tt_model_spec *m = &layout->m;
    if (m->n_cutoffs || m->div_val > 1)
        return tt_errf(err, errlen, "%s: model.adaptive: the GPU trainer has the full softmax only in "
                       "this build; use --device cpu", spec->path);
    tt_gpu_lm *lm = tt_xcalloc(1, sizeof *lm);
    lm->gpu = gpu;
    lm->spec = spec;
    lm->l = layout;
    lm->batch = batch;
    lm->rows = batch * m->seq_len;
    lm->es = spec->train.precision == TT_PREC_BF16 ? 2 : 4;
    if (batch > spec->train.batch) {
        free(lm);
        return tt_errf(err, errlen, "batch %d is more than the spec's train.batch %d, which the "
                       "kernels are planned for", batch, spec->train.batch);
    }
    if (tt_gpu_program_load(&lm->prog, spec, gpu, cache, err, errlen) != 0) {
        free(lm);
        return -1;
    }
    tt_gemm_init(&lm->gemm, gpu, spec->train.precision);
    lm->acts = tt_xcalloc((size_t)m->layers, sizeof *lm->acts);
    bump b = {0};
    carve(lm, &b);
    lm->bytes = b.used;
    size_t free_b = 0, total_b = 0;
    TT_CUDA(cudaMemGetInfo(&free_b, &total_b));
    if (lm->bytes > free_b) {
        tt_errf(err, errlen, "%s needs %.2f GiB of device memory for batch %d; %s has %.2f GiB free "
                "of %.2f: lower train.batch (or seq_len, d_inner, the vocabulary)", spec->path,
                lm->bytes / 1073741824.0, batch, gpu->name, free_b / 1073741824.0,
                total_b / 1073741824.0);
        tt_gpu_lm_close(lm);
        return -1;
    }
    TT_CUDA(cudaMalloc((void **)&lm->arena, lm->bytes));
    b = (bump){lm->arena, 0};
    carve(lm, &b);
    TT_CUBLAS(cublasSetWorkspace(gpu->blas, lm->blas_ws, TT_BLAS_WORKSPACE));
    const char *graphs = getenv("TT_CUDA_GRAPH");
    lm->graphs = !(graphs && !strcmp(graphs, "0"));
    TT_CUDA(cudaMemset(lm->m, 0, layout->n_floats * 4));
    TT_CUDA(cudaMemset(lm->v, 0, layout->n_floats * 4));
    tt_view_make(layout, lm->w, &lm->wv);
    tt_view_make(layout, lm->g, &lm->gv);
    /* constants in the storage type: ones (bias products), the sinusoids of positions N-1 .. 0 */
    const int n = m->seq_len, d = m->d_model;
    float *h = tt_xmalloc((size_t)(lm->rows > n * d ? lm->rows : n * d) * sizeof *h);
    for (int i = 0; i < lm->rows; i++) h[i] = 1.f;
    upload_storage(lm, lm->ones, h, (size_t)lm->rows);
    float *pos = tt_xmalloc((size_t)n * sizeof *pos);
    for (int j = 0; j < n; j++) pos[j] = (float)(n - 1 - j);
    cpu_sinusoid(h, pos, n, d);
    upload_storage(lm, lm->pe, h, (size_t)n * d);
    free(pos);
    free(h);
    *out = lm;
    return 0;
}

void tt_gpu_lm_close(tt_gpu_lm *lm)
{
    if (!lm) return;
    if (lm->graph) cudaGraphExecDestroy(lm->graph);
    if (lm->arena) {
        TT_CUBLAS(cublasSetWorkspace(lm->gpu->blas, NULL, 0)); /* ours goes with the arena */
        cudaFree(lm->arena);
    }
    tt_view_free(&lm->wv);
    tt_view_free(&lm->gv);
    tt_gpu_program_free(&lm->prog);
    free(lm->acts);
    free(lm);
}

float *tt_gpu_lm_weights(tt_gpu_lm *lm) { return lm->w; }

void tt_gpu_lm_weights_changed(tt_gpu_lm *lm)
{
    if (lm->es == 4) return;
    tt_cast(&lm->prog, lm->gpu->stream, lm->wc, lm->w, (long)lm->l->n_floats);
    TT_CUDA(cudaStreamSynchronize(lm->gpu->stream));
}
float *tt_gpu_lm_grads(tt_gpu_lm *lm) { return lm->g; }
float *tt_gpu_lm_moments(tt_gpu_lm *lm, int which) { return which ? lm->v : lm->m; }
size_t tt_gpu_lm_bytes(const tt_gpu_lm *lm) { return lm->bytes; }

static tt_dropout drop_at(const tt_gpu_lm *lm, const tt_lm_opts *o, float p, uint32_t site)
{
    return (tt_dropout){o->train ? p : 0.f, o->seed, lm->step, site};
}

/* The storage-type copy of a parameter that the products and mla kernels read. */
static const void *wcp(const tt_gpu_lm *lm, const float *master)
{
    return (const char *)lm->wc + (size_t)(master - lm->w) * lm->es;
}

/* y[rows, out] += 1 b^T: a bias as a rank-1 product (the storage type's ones) */
static void add_bias(tt_gpu_lm *lm, void *y, bool y_f32, const float *b, int out)
{
    tt_gemm_fwd(&lm->gemm, y, y_f32, lm->ones, wcp(lm, b), lm->rows, 1, out, 1.f);
}

/* The inputs of a run into device memory (ahead of its kernels, on the same stream): tokens,
 * targets, the weights, and the dropout step. Returns the sum of the weights. */
static double upload_inputs(tt_gpu_lm *lm, const int32_t *inputs, const int32_t *targets,
                            const tt_lm_opts *o)
{
    const cudaStream_t st = lm->gpu->stream;
    const int rows = lm->rows;
    TT_CUDA(cudaMemcpyAsync(lm->tokens, inputs, (size_t)rows * 4, cudaMemcpyHostToDevice, st));
    TT_CUDA(cudaMemcpyAsync(lm->targets, targets, (size_t)rows * 4, cudaMemcpyHostToDevice, st));
    if (o->weight)
        TT_CUDA(cudaMemcpyAsync(lm->weight, o->weight, (size_t)rows * 4, cudaMemcpyHostToDevice, st));
    lm->host_step = o->step;
    TT_CUDA(cudaMemcpyAsync(lm->step, &lm->host_step, sizeof lm->host_step, cudaMemcpyHostToDevice, st));
    double weights = 0;
    for (int i = 0; i < rows; i++) weights += o->weight ? o->weight[i] : 1.0;
    return weights;
}

/* Forward, and with grads the backward, as kernels on the stream: no host copy, no
 * synchronization, nothing that changes from one training step to the next but device memory
 * (so that it can be captured). */
static void enqueue_run(tt_gpu_lm *lm, const tt_lm_opts *o, bool grads, double weights)
{
    const tt_model_spec *m = &lm->l->m;
    const tt_gpu_program *p = &lm->prog;
    const cudaStream_t st = lm->gpu->stream;
    const int rows = lm->rows, d = m->d_model, f = m->d_inner, r = m->rank, n = m->seq_len;
    const int v = (int)lm->l->vocab, key = m->position == TT_POS_KEY;
    const float drop = (float)m->dropout;
    const tt_view *w = &lm->wv, *g = &lm->gv;
    const tt_gemm *gm = &lm->gemm;
    const float scale = weights > 0 ? (float)(1.0 / weights) : 0.f;

    /* forward */
    tt_embedding_fwd(p, st, lm->x0, w->emb[0], lm->tokens, rows, d, v, drop_at(lm, o, drop, 0));
    const void *x = lm->x0;
    for (int k = 0; k < m->layers; k++) {
        const tt_layer_view *lw = &w->layer[k];
        layer_acts *a = &lm->acts[k];
        tt_gemm_fwd(gm, a->qkv, false, x, wcp(lm, lw->qkv), rows, d, 3 * r, 0.f);
        tt_core_fwd(p, st, a->g, lw->core, m->cores, r);
        if (key) tt_gemm_fwd(gm, a->p, false, lm->pe, wcp(lm, lw->r_net), n, d, r, 0.f);
        tt_mla_fwd(p, st, a->y, a->qkv, a->g, wcp(lm, lw->o), key ? a->p : NULL, w->u, w->v,
                   lm->mla_part, lm->batch, n, r, d);
        tt_residual_ln_fwd(p, st, a->x1, a->s1, a->mean1, a->rstd1, x, a->y, lw->ln1_w, lw->ln1_b,
                           rows, d, drop_at(lm, o, drop, 1 + 3 * k));
        tt_gemm_fwd(gm, a->h, false, a->x1, wcp(lm, lw->ff1_w), rows, d, f, 0.f);
        tt_ffn_act_fwd(p, st, a->h, a->hd, a->h, lw->ff1_b, rows, f, drop_at(lm, o, drop, 2 + 3 * k));
        tt_gemm_fwd(gm, a->f, false, a->hd, wcp(lm, lw->ff2_w), rows, f, d, 0.f);
        add_bias(lm, a->f, false, lw->ff2_b, d);
        tt_residual_ln_fwd(p, st, a->x2, a->s2, a->mean2, a->rstd2, a->x1, a->f, lw->ln2_w,
                           lw->ln2_b, rows, d, drop_at(lm, o, drop, 3 + 3 * k));
        x = a->x2;
    }
    tt_gemm_fwd(gm, lm->logits, true, x, wcp(lm, w->out_w[0]), rows, d, v, 0.f);
    add_bias(lm, lm->logits, true, w->out_b[0], v);
    tt_xent(p, st, lm->loss, lm->nll, lm->logits, lm->targets, o->weight ? lm->weight : NULL, rows,
            v, o->label_smoothing, scale, grads);
    tt_xent_sum(p, st, lm->sums, lm->loss, lm->nll, rows);

    if (grads) {
        TT_CUDA(cudaMemsetAsync(lm->g, 0, lm->l->n_floats * 4, st));
        /* output layer: logits hold dlogits (fp32), rounded for the bf16 products */
        const void *dlog = lm->logits;
        if (lm->dlog_c) {
            tt_cast(p, st, lm->dlog_c, lm->logits, (long)rows * v);
            dlog = lm->dlog_c;
        }
        tt_gemm_bwd_w(gm, g->out_w[0], dlog, x, rows, d, v);
        tt_gemm_bwd_w(gm, g->out_b[0], dlog, lm->ones, rows, 1, v);
        tt_gemm_bwd_x(gm, lm->dx, dlog, wcp(lm, w->out_w[0]), rows, d, v, 0.f);
        for (int k = m->layers - 1; k >= 0; k--) {
            const tt_layer_view *lw = &w->layer[k], *lg = &g->layer[k];
            layer_acts *a = &lm->acts[k];
            const void *xin = k ? lm->acts[k - 1].x2 : lm->x0;
            /* x2 = LN(x1 + drop(W2 hd + b2)): dres = d x1 (residual), dy = d f */
            tt_residual_ln_bwd(p, st, lm->dres, lm->dy, lm->dln, lm->dln + d, lm->ln_part, lm->dx,
                               a->s2, a->mean2, a->rstd2, lw->ln2_w, rows, d,
                               drop_at(lm, o, drop, 3 + 3 * k));
            TT_CUDA(cudaMemcpyAsync(lg->ln2_w, lm->dln, (size_t)d * 4, cudaMemcpyDeviceToDevice, st));
            TT_CUDA(cudaMemcpyAsync(lg->ln2_b, lm->dln + d, (size_t)d * 4, cudaMemcpyDeviceToDevice, st));
            tt_gemm_bwd_w(gm, lg->ff2_b, lm->dy, lm->ones, rows, 1, d);
            tt_gemm_bwd_w(gm, lg->ff2_w, lm->dy, a->hd, rows, f, d);
            tt_gemm_bwd_x(gm, lm->dff, lm->dy, wcp(lm, lw->ff2_w), rows, f, d, 0.f);
            tt_ffn_act_bwd(p, st, lm->dff, lg->ff1_b, lm->ffn_part, lm->dff, a->h, rows, f,
                           drop_at(lm, o, drop, 2 + 3 * k));
            tt_gemm_bwd_w(gm, lg->ff1_w, lm->dff, a->x1, rows, d, f);
            tt_gemm_bwd_x(gm, lm->dres, lm->dff, wcp(lm, lw->ff1_w), rows, d, f, 1.f); /* d x1 in full */
            /* x1 = LN(x + drop(MLA(x))): dx = d x (residual), dy = d y */
            tt_residual_ln_bwd(p, st, lm->dx, lm->dy, lm->dln, lm->dln + d, lm->ln_part, lm->dres,
                               a->s1, a->mean1, a->rstd1, lw->ln1_w, rows, d,
                               drop_at(lm, o, drop, 1 + 3 * k));
            TT_CUDA(cudaMemcpyAsync(lg->ln1_w, lm->dln, (size_t)d * 4, cudaMemcpyDeviceToDevice, st));
            TT_CUDA(cudaMemcpyAsync(lg->ln1_b, lm->dln + d, (size_t)d * 4, cudaMemcpyDeviceToDevice, st));
            TT_CUDA(cudaMemsetAsync(lm->dg, 0, (size_t)r * 4, st));
            tt_mla_bwd(p, st, lm->dqkv, lg->o, key ? lm->dp : NULL, lm->dg, key ? g->u : NULL,
                       key ? g->v : NULL, lm->mla_part, lm->dy, a->qkv, a->g, wcp(lm, lw->o),
                       key ? a->p : NULL, w->u, w->v, lm->batch, n, r, d);
            tt_core_bwd(p, st, lg->core, lm->dg, lw->core, m->cores, r);
            if (key) {
                const void *dp = lm->dp;
                if (lm->dp_c) {
                    tt_cast(p, st, lm->dp_c, lm->dp, (long)n * r);
                    dp = lm->dp_c;
                }
                tt_gemm_bwd_w(gm, lg->r_net, dp, lm->pe, n, d, r);
            }
            tt_gemm_bwd_w(gm, lg->qkv, lm->dqkv, xin, rows, d, 3 * r);
            tt_gemm_bwd_x(gm, lm->dx, lm->dqkv, wcp(lm, lw->qkv), rows, d, 3 * r, 1.f);
        }
        tt_embedding_bwd(p, st, g->emb[0], lm->keys, lm->dx, lm->tokens, rows, d, v,
                         drop_at(lm, o, drop, 0));
    }
}

/* The sums of the last run back to the host: the one synchronization of a run or a step. */
static void download_sums(tt_gpu_lm *lm, double weights, tt_lm_result *res)
{
    double sums[2];
    TT_CUDA(cudaMemcpyAsync(sums, lm->sums, sizeof sums, cudaMemcpyDeviceToHost, lm->gpu->stream));
    TT_CUDA(cudaStreamSynchronize(lm->gpu->stream));
    res->loss_sum = sums[0];
    res->nll_sum = sums[1];
    res->scored = weights;
}

void tt_gpu_lm_run(tt_gpu_lm *lm, const int32_t *inputs, const int32_t *targets,
                   const tt_lm_opts *o, bool grads, tt_lm_result *res)
{
    const double weights = upload_inputs(lm, inputs, targets, o);
    enqueue_run(lm, o, grads, weights);
    download_sums(lm, weights, res);
}

/* The host owns lr and the bias corrections of step s; tt_grad_norm writes norm and clip after
 * them, in device memory. */
static void upload_adam_scalars(tt_gpu_lm *lm, tt_adam_scalars *host, long s)
{
    const tt_train_spec *t = &lm->spec->train;
    tt_adam_scalars_at(host, t, tt_lr_at(t, s), s);
    TT_CUDA(cudaMemcpyAsync(lm->sc, host, sizeof *host, cudaMemcpyHostToDevice, lm->gpu->stream));
}

static void enqueue_adam(tt_gpu_lm *lm)
{
    const tt_train_spec *t = &lm->spec->train;
    const cudaStream_t st = lm->gpu->stream;
    tt_grad_norm(&lm->prog, st, lm->sc, lm->norm_part, lm->g, lm->l->n_floats, t->clip);
    tt_adam(&lm->prog, st, lm->w, lm->m, lm->v, lm->es == 4 ? NULL : lm->wc, lm->g, lm->sc,
            lm->l->n_floats, t);
}

double tt_gpu_lm_adam(tt_gpu_lm *lm, long s)
{
    tt_adam_scalars host;
    upload_adam_scalars(lm, &host, s);
    enqueue_adam(lm);
    TT_CUDA(cudaMemcpyAsync(&host, lm->sc, sizeof host, cudaMemcpyDeviceToHost, lm->gpu->stream));
    TT_CUDA(cudaStreamSynchronize(lm->gpu->stream));
    return host.norm;
}

/* A captured step is valid for the options it was captured with; the step number is read from
 * device memory, and so are the inputs and the optimizer's scalars. */
static bool same_step_opts(const tt_lm_opts *a, const tt_lm_opts *b)
{
    return a->train == b->train && a->seed == b->seed && a->label_smoothing == b->label_smoothing &&
           !a->weight && !b->weight;
}

double tt_gpu_lm_train_step(tt_gpu_lm *lm, const int32_t *inputs, const int32_t *targets,
                            const tt_lm_opts *o, long s, tt_lm_result *res)
{
    const cudaStream_t st = lm->gpu->stream;
    const double weights = upload_inputs(lm, inputs, targets, o);
    tt_adam_scalars host;
    upload_adam_scalars(lm, &host, s);
    if (!lm->graphs || o->weight) {
        enqueue_run(lm, o, true, weights);
        enqueue_adam(lm);
    } else {
        if (lm->graph && !same_step_opts(&lm->graph_opts, o)) {
            TT_CUDA(cudaGraphExecDestroy(lm->graph));
            lm->graph = NULL;
        }
        if (!lm->graph) {
            cudaGraph_t g;
            TT_CUDA(cudaStreamBeginCapture(st, cudaStreamCaptureModeThreadLocal));
            enqueue_run(lm, o, true, weights);
            enqueue_adam(lm);
            TT_CUDA(cudaStreamEndCapture(st, &g));
            TT_CUDA(cudaGraphInstantiate(&lm->graph, g, 0));
            TT_CUDA(cudaGraphDestroy(g));
            lm->graph_opts = *o;
        }
        TT_CUDA(cudaGraphLaunch(lm->graph, st));
    }
    TT_CUDA(cudaMemcpyAsync(&host, lm->sc, sizeof host, cudaMemcpyDeviceToHost, st));
    download_sums(lm, weights, res);
    return host.norm;
}
