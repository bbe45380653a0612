/* The CPU and GPU engines (see engine.h). */
#include "engine.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "device.h"
#include "gpu_model.h"
#include "nccl_lib.h"
#include "optim.h"
#include "ranks.h"
#include "util.h"

struct tt_engine {
    const tt_spec *spec;
    const tt_layout *l;
    int batch;
    float *host[3];  /* w, exp_avg, exp_avg_sq */
    float *grad;     /* CPU: the gradients */
    tt_cpu_lm cpu;
    bool on_gpu;
    tt_gpu gpu;
    tt_cache cache;
    tt_gpu_lm *glm;
    /* Transformer-XL's training memories [L, batch, mlen, D]: those step mem_step left */
    tt_real *mem;
    int mlen;
    long mem_step;
    /* several GPUs: this rank of world holds sequences seq0 .. seq0 + batch - 1 of the step's
     * whole batch of world * batch; comm its communicator (ncclComm_t) */
    int rank, world, seq0;
    void *comm;
    int eval_batch; /* Transformer-XL: an evaluation's streams, all ranks' (tt_engine_eval_batch) */
    bool pipelined; /* tt_engine_pipelined */
    /* one device: the least index of a non-finite gradient element in the step whose result
     * came last (-1: none); the CPU's steps submitted and not yet taken, and whether the last
     * step left the weights alone (the step guard's state on the GPU: templates/adam.cu) */
    long long first_bad;
    struct cpu_result {
        tt_lm_result res;
        double norm;
        long long first_bad;
    } cpend[2];
    int ncpend;
    bool cpu_skipped;
};

int tt_engine_open(tt_engine **out, const char *device, const tt_spec *spec, const tt_layout *l,
                   int batch, char *desc, size_t desclen, char *err, size_t errlen)
{
    return tt_engine_open_rank(out, device, spec, l, batch, NULL, 0, desc, desclen, err, errlen);
}

/* Several GPUs: NCCL's communicator among the ranks of dist, for the GPU already current. */
static int open_comm(tt_engine *e, const tt_dist_env *dist, int timeout_ms, char *err,
                     size_t errlen)
{
#if TT_HAVE_NCCL
    char why[1024];
    if (tt_nccl_load(why, sizeof why) != 0)
        return tt_errf(err, errlen, "rank %d of %d: %s", dist->rank, dist->world, why);
    const tt_nccl *nc = tt_nccl_get();
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    ncclResult_t r = ncclSuccess;
    if (dist->rank == 0 && (r = nc->get_unique_id(&id)) != ncclSuccess)
        return tt_errf(err, errlen, "rank 0: ncclGetUniqueId: %s", nc->get_error_string(r));
    if (tt_rendezvous(dist, &id, sizeof id, timeout_ms, why, sizeof why) != 0)
        return tt_errf(err, errlen, "rank %d of %d: %s", dist->rank, dist->world, why);
    ncclComm_t comm;
    if ((r = nc->comm_init_rank(&comm, dist->world, id, dist->rank)) != ncclSuccess)
        return tt_errf(err, errlen, "rank %d of %d: ncclCommInitRank: %s", dist->rank, dist->world,
                       nc->get_error_string(r));
    e->comm = comm;
    return 0;
#else
    (void)e, (void)timeout_ms;
    return tt_errf(err, errlen, "rank %d of %d: no NCCL: this build has none (nccl.h was not found "
                   "when it was built)", dist->rank, dist->world);
#endif
}

int tt_engine_open_rank(tt_engine **out, const char *device, const tt_spec *spec,
                        const tt_layout *l, int batch, const tt_dist_env *dist, int timeout_ms,
                        char *desc, size_t desclen, char *err, size_t errlen)
{
    if (strcmp(device, "cpu") && strcmp(device, "cuda") && strcmp(device, "auto"))
        return tt_errf(err, errlen, "--device is cpu, cuda or auto, not '%s'", device);
    const int world = dist ? dist->world : 1;
    if (world > 1 && !strcmp(device, "cpu"))
        return tt_errf(err, errlen, "rank %d of %d: several ranks run on GPUs, not --device cpu",
                       dist->rank, world);
    if (batch % world)
        return tt_errf(err, errlen, "train.batch %d is not divisible by the %d GPUs (each trains "
                       "an equal share of every step's batch)", batch, world);
    tt_engine *e = tt_xcalloc(1, sizeof *e);
    e->spec = spec;
    e->l = l;
    e->world = world;
    e->rank = dist ? dist->rank : 0;
    e->batch = batch / world;
    e->seq0 = e->rank * e->batch;
    for (int i = 0; i < 3; i++) e->host[i] = tt_xcalloc(l->n_floats, sizeof(float));
    e->mem_step = -1;
    char why[512] = "";
    const bool txl = spec->model.kind == TT_KIND_TXL;
    if (strcmp(device, "cpu") != 0) {
        if (tt_gpu_open(&e->gpu, dist ? dist->local : 0, why, sizeof why) == 0) {
            e->on_gpu = true;
        } else if (!strcmp(device, "cuda") || world > 1) {
            if (world > 1)
                tt_errf(err, errlen, "rank %d of %d: %s", e->rank, world, why);
            else
                tt_errf(err, errlen, "--device cuda: %s", why);
            tt_engine_close(e);
            return -1;
        }
    }
    /* the CPU's steps run as they are submitted: the same semantics, for the tests */
    e->pipelined = world == 1 && !txl && tt_env_long("TT_PIPELINE", 0, 1, 1);
    e->first_bad = -1;
    if (world > 1 && open_comm(e, dist, timeout_ms, err, errlen) != 0) {
        tt_engine_close(e);
        return -1;
    }
    if (e->on_gpu) {
        if (tt_cache_open(&e->cache, NULL, err, errlen) != 0 ||
            tt_gpu_lm_open(&e->glm, &e->gpu, spec, l, e->batch, &e->cache, err, errlen) != 0) {
            tt_engine_close(e);
            return -1;
        }
        tt_gpu_lm_set_comm(e->glm, e->comm, e->rank, e->world);
        snprintf(desc, desclen, "%s", e->gpu.name);
    } else {
        e->grad = tt_xcalloc(l->n_floats, sizeof(float));
        tt_cpu_lm_init(&e->cpu, l, batch);
        if (txl)
            e->mem = tt_xmalloc(((size_t)l->m.layers * batch * l->m.mem_len * l->m.d_model + 1) *
                                sizeof *e->mem);
        snprintf(desc, desclen, "the cpu%s%s%s", *why ? " (" : "", why, *why ? ")" : "");
    }
    *out = e;
    return 0;
}

void tt_engine_close(tt_engine *e)
{
    if (!e) return;
    tt_gpu_lm_close(e->glm);
#if TT_HAVE_NCCL
    if (e->comm) tt_nccl_get()->comm_destroy(e->comm);
#endif
    if (e->cache.dir) tt_cache_close(&e->cache);
    if (e->on_gpu) tt_gpu_close(&e->gpu);
    tt_cpu_lm_free(&e->cpu);
    for (int i = 0; i < 3; i++) free(e->host[i]);
    free(e->grad);
    free(e->mem);
    free(e);
}

float *tt_engine_host(tt_engine *e, int which) { return e->host[which]; }

size_t tt_engine_device_bytes(const tt_engine *e, size_t *moments)
{
    if (moments) *moments = e->on_gpu ? tt_gpu_lm_moment_bytes(e->glm) : 0;
    return e->on_gpu ? tt_gpu_lm_bytes(e->glm) : 0;
}

void tt_engine_upload(tt_engine *e)
{
    if (!e->on_gpu) return;
    TT_CUDA(cudaMemcpy(tt_gpu_lm_weights(e->glm), e->host[0], e->l->n_floats * 4,
                       cudaMemcpyHostToDevice));
    tt_gpu_lm_moments_io(e->glm, e->host[1], e->host[2], true);
    tt_gpu_lm_weights_changed(e->glm);
}

void tt_engine_download(tt_engine *e)
{
    if (!e->on_gpu) return;
    TT_CUDA(cudaMemcpy(e->host[0], tt_gpu_lm_weights(e->glm), e->l->n_floats * 4,
                       cudaMemcpyDeviceToHost));
    /* a sharded optimizer's moments: every rank's shard, gathered (every rank calls this) */
    tt_gpu_lm_moments_io(e->glm, e->host[1], e->host[2], false);
    tt_gpu_lm_slow_wait(e->glm); /* rank 0 writes a checkpoint before its next step */
}

/* The least index of a non-finite element of g [n] (-1: none). */
static long long first_nonfinite(const float *g, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!isfinite(g[i])) return (long long)i;
    return -1;
}

/* The CPU's step: forward and backward, the norm, and Adam unless the loss or the norm is not
 * finite (the GPU's guard, templates/adam.cu), or, with halt (as the GPU's step guard:
 * tt_engine_submit), when the last step skipped it. */
static double cpu_train_step(tt_engine *e, const int32_t *inputs, const int32_t *targets,
                             const tt_lm_opts *o, long s, bool continues, bool halt,
                             tt_lm_result *res)
{
    const size_t nf = e->l->n_floats;
    memset(e->grad, 0, nf * sizeof *e->grad);
    if (e->mem) { /* Transformer-XL: the memories of step s - 1 when this batch continues it */
        const int mlen = continues && e->mem_step == s - 1 ? e->mlen : 0;
        e->mlen = tt_cpu_txl_lm_run(&e->cpu, e->host[0], e->grad, inputs, targets,
                                    mlen ? e->mem : NULL, mlen, e->mem, o, res);
        e->mem_step = s;
    } else {
        tt_cpu_lm_run(&e->cpu, e->host[0], e->grad, inputs, targets, o, res);
    }
    const double norm = tt_clip_grad_norm(e->grad, nf, e->spec->train.clip);
    const bool finite = isfinite(norm) && isfinite(res->loss_sum);
    if (finite && !(halt && e->cpu_skipped))
        tt_adam_step(e->host[0], e->grad, e->host[1], e->host[2], nf, &e->spec->train,
                     tt_lr_at(&e->spec->train, s), s);
    e->cpu_skipped = !finite || (halt && e->cpu_skipped);
    e->first_bad = finite ? -1 : first_nonfinite(e->grad, nf);
    return norm;
}

double tt_engine_train_step(tt_engine *e, const int32_t *inputs, const int32_t *targets,
                            const tt_lm_opts *o, long s, bool continues, tt_lm_result *res)
{
    double norm;
    if (e->on_gpu) {
        /* Transformer-XL: the memories the last step left, when this batch continues it */
        tt_gpu_lm_continue(e->glm, continues && e->mem_step == s - 1);
        e->mem_step = s;
        if (e->world == 1) {
            norm = tt_gpu_lm_train_step(e->glm, inputs, targets, o, s, res);
        } else {
            /* this rank's share: its sequences, the masks they draw in the whole batch, and
             * the whole batch's weight as the loss's divisor */
            TT_ASSERT(!o->weight);
            const size_t off = (size_t)e->seq0 * e->l->m.seq_len;
            tt_lm_opts share = *o;
            share.seq0 = e->seq0;
            share.norm = (double)e->batch * e->world * e->l->m.seq_len;
            norm = tt_gpu_lm_train_step(e->glm, inputs + off, targets + off, &share, s, res);
        }
    } else {
        norm = cpu_train_step(e, inputs, targets, o, s, continues, false, res);
    }
    if (e->on_gpu && e->world == 1) e->first_bad = tt_gpu_lm_first_bad(e->glm);
    /* a step whose loss or gradient is not finite left the weights alone (adam.cu, and
     * cpu_train_step), but its memories may hold what made it so: the next step starts
     * without them */
    if (!isfinite(norm) || !isfinite(res->loss_sum)) e->mem_step = -1;
    return norm;
}

bool tt_engine_pipelined(const tt_engine *e) { return e->pipelined; }

void tt_engine_submit(tt_engine *e, const int32_t *inputs, const int32_t *targets,
                      const tt_lm_opts *o, long s, bool halt)
{
    TT_ASSERT(e->pipelined);
    if (e->on_gpu) {
        tt_gpu_lm_train_submit(e->glm, inputs, targets, o, s, halt);
        return;
    }
    TT_ASSERT(e->ncpend < 2);
    struct cpu_result *c = &e->cpend[e->ncpend++];
    c->norm = cpu_train_step(e, inputs, targets, o, s, false, halt, &c->res);
    c->first_bad = e->first_bad;
}

double tt_engine_result(tt_engine *e, tt_lm_result *res)
{
    TT_ASSERT(e->pipelined);
    if (e->on_gpu) {
        const double norm = tt_gpu_lm_train_result(e->glm, res);
        e->first_bad = tt_gpu_lm_first_bad(e->glm);
        return norm;
    }
    TT_ASSERT(e->ncpend > 0);
    const struct cpu_result c = e->cpend[0];
    e->cpend[0] = e->cpend[1];
    e->ncpend--;
    *res = c.res;
    e->first_bad = c.first_bad;
    return c.norm;
}

/* The parameter (in layout order, which is the flat array's) that holds element at (-1: none). */
static int param_at(const tt_layout *l, long long at, char *name, size_t len)
{
    for (int p = 0; at >= 0 && p < l->n_params; p++) {
        const tt_param *t = &l->params[p];
        if ((size_t)at < t->offset || (size_t)at >= t->offset + t->numel) continue;
        snprintf(name, len, "%s", t->name);
        return 1;
    }
    return 0;
}

int tt_engine_nonfinite(tt_engine *e, char *name, size_t len)
{
    const tt_layout *l = e->l;
    if (e->world == 1) return param_at(l, e->first_bad, name, len); /* found after the step */
    /* several GPUs: the summed gradient as this rank holds it */
    float *g = tt_xmalloc(l->n_floats * sizeof *g);
    TT_CUDA(cudaMemcpy(g, tt_gpu_lm_grads(e->glm), l->n_floats * sizeof *g, cudaMemcpyDeviceToHost));
    const int found = param_at(l, first_nonfinite(g, l->n_floats), name, len);
    free(g);
    return found;
}

int tt_engine_launch(const char *tool, int argc, char **argv, long gpus)
{
    if (gpus == 1) return -1;
    char why[1024];
    const int have = tt_device_count(why, sizeof why);
    if (have < 0) {
        fprintf(stderr, "%s: --gpus: %s\n", tool, why);
        return 2;
    }
    const int n = gpus < 0 ? have : (int)gpus;
    if (n == 1) return -1; /* --gpus all on a host of one */
    if (n > have) {
        fprintf(stderr, "%s: --gpus %d: this host has %d GPU%s\n", tool, n, have, have == 1 ? "" : "s");
        return 2;
    }
    const int rc = tt_ranks_relaunch(argc, argv, n, why, sizeof why);
    if (rc) fprintf(stderr, "%s: %s\n", tool, why);
    return rc < 0 ? 1 : rc;
}

void tt_engine_eval_batch(tt_engine *e, int batch) { e->eval_batch = batch; }

int tt_engine_shard_optimizer(tt_engine *e)
{
    if (e->world == 1 || !e->on_gpu) return 0;
    tt_gpu_lm_shard(e->glm, e->rank, e->world);
    return 1;
}

void tt_engine_flag(tt_engine *e, int flag)
{
    if (e->on_gpu) tt_gpu_lm_flag(e->glm, flag);
}

/* Several GPUs: the memories [L, world * batch, mlen, D] of every rank's share (as
 * tt_gpu_lm_memory_get gives each, [L, batch, mlen, D]) into out, through an all-gather. */
static void gather_memory(tt_engine *e, int mlen, float *out)
{
#if TT_HAVE_NCCL
    const tt_model_spec *m = &e->l->m;
    const size_t share = (size_t)m->layers * e->batch * mlen * m->d_model;
    const size_t row = (size_t)e->batch * mlen * m->d_model; /* a layer of a share */
    float *mine = tt_xmalloc(share * sizeof *mine), *dev;
    tt_gpu_lm_memory_get(e->glm, mine);
    TT_CUDA(cudaMalloc((void **)&dev, share * e->world * sizeof *dev));
    TT_CUDA(cudaMemcpy(dev + share * e->rank, mine, share * sizeof *dev, cudaMemcpyHostToDevice));
    const tt_nccl *nc = tt_nccl_get();
    const ncclResult_t r = nc->all_gather(dev + share * e->rank, dev, share, ncclFloat32, e->comm,
                                          e->gpu.stream);
    if (r != ncclSuccess)
        tt_panic(__FILE__, __LINE__, "NCCL: the memories' all-gather: %s", nc->get_error_string(r));
    tt_nccl_wait(e->comm, e->gpu.stream, true, e->rank, e->world,
                 "the memories' all-gather");
    float *all = tt_xmalloc(share * e->world * sizeof *all);
    TT_CUDA(cudaMemcpyAsync(all, dev, share * e->world * sizeof *all, cudaMemcpyDeviceToHost,
                            e->gpu.stream));
    TT_CUDA(cudaStreamSynchronize(e->gpu.stream));
    for (int k = 0; k < m->layers; k++) /* rank q's layer k is row q share + k row */
        for (int q = 0; q < e->world; q++)
            memcpy(out + ((size_t)k * e->world + q) * row, all + (size_t)q * share + (size_t)k * row,
                   row * sizeof *out);
    TT_CUDA(cudaFree(dev));
    free(all), free(mine);
#else
    (void)e, (void)mlen, (void)out;
    TT_ASSERT(!"built without NCCL");
#endif
}

int tt_engine_memory(tt_engine *e, float *out, long *mem_step)
{
    if (e->world > 1) {
        const int mlen = e->mem_step < 0 ? 0 : tt_gpu_lm_memory(e->glm);
        if (mem_step) *mem_step = mlen ? e->mem_step : -1;
        if (mlen && out) gather_memory(e, mlen, out);
        return mlen;
    }
    const int mlen = e->mem_step < 0 ? 0 : e->on_gpu ? tt_gpu_lm_memory_get(e->glm, out) : e->mlen;
    if (mem_step) *mem_step = mlen ? e->mem_step : -1;
    if (!e->on_gpu && out) {
        const size_t n = (size_t)e->l->m.layers * e->batch * mlen * e->l->m.d_model;
        for (size_t i = 0; i < n; i++) out[i] = (float)e->mem[i];
    }
    return mlen;
}

void tt_engine_set_memory(tt_engine *e, const float *mems, int mlen, long mem_step)
{
    const tt_model_spec *m = &e->l->m;
    TT_ASSERT(mlen >= 0 && mlen <= (m->kind == TT_KIND_TXL ? m->mem_len : 0));
    if (mem_step < 0) mlen = 0;
    e->mem_step = mlen ? mem_step : -1;
    if (e->on_gpu && e->world > 1 && m->kind == TT_KIND_TXL && mlen) {
        /* the rank's sequences of each layer of the whole batch's [L, world * batch, mlen, D] */
        const size_t row = (size_t)e->batch * mlen * m->d_model;
        float *mine = tt_xmalloc((size_t)m->layers * row * sizeof *mine);
        for (int k = 0; k < m->layers; k++)
            memcpy(mine + (size_t)k * row, mems + ((size_t)k * e->world + e->rank) * row,
                   row * sizeof *mine);
        tt_gpu_lm_memory_set(e->glm, mine, mlen);
        free(mine);
        return;
    }
    if (e->on_gpu) {
        if (m->kind == TT_KIND_TXL) tt_gpu_lm_memory_set(e->glm, mems, mlen);
        return;
    }
    e->mlen = mlen;
    const size_t n = (size_t)m->layers * e->batch * mlen * m->d_model;
    for (size_t i = 0; i < n; i++) e->mem[i] = (tt_real)mems[i];
}

static void run_gpu(void *ctx, const int32_t *inputs, const int32_t *targets, const float *weights,
                    tt_lm_result *res)
{
    tt_lm_opts o = {.train = false, .weight = weights};
    tt_gpu_lm_run(ctx, inputs, targets, &o, false, res);
}

static void run_txl_gpu(void *ctx, const int32_t *inputs, const int32_t *targets,
                        const float *weights, bool continues, tt_lm_result *res)
{
    tt_lm_opts o = {.train = false, .weight = weights};
    tt_gpu_lm_continue(ctx, continues);
    tt_gpu_lm_run(ctx, inputs, targets, &o, false, res);
}

/* Transformer-XL on the GPU at the spec's eval segment, memory and clamp lengths: a model
 * opened for those shapes (its kernels planned for them, through the same cache) with the
 * training model's weights, for the length of the evaluation. */
static int evaluate_txl_gpu(tt_engine *e, const tt_tokens *tokens, long max_tokens,
                            tt_eval_result *res, char *err, size_t errlen)
{
    const long total = tt_eval_total(tokens, max_tokens, res, err, errlen);
    if (total < 0) return -1;
    /* the streams of the whole batch; several GPUs: this rank's share of them */
    const int want = e->eval_batch ? e->eval_batch : e->batch * e->world;
    const int streams = tt_txl_eval_streams(total, want);
    const int s0 = (int)((long)streams * e->rank / e->world);
    const int s1 = (int)((long)streams * (e->rank + 1) / e->world);
    if (s1 == s0) return 0;
    tt_spec s = *e->spec;
    s.model.seq_len = s.eval.tgt_len;
    s.model.mem_len = s.eval.mem_len;
    s.model.clamp_len = s.eval.clamp_len;
    s.train.batch = s1 - s0;
    tt_layout l = *e->l;
    l.m = s.model;
    tt_gpu_lm *lm;
    if (tt_gpu_lm_open(&lm, &e->gpu, &s, &l, s.train.batch, &e->cache, err, errlen) != 0) return -1;
    TT_CUDA(cudaMemcpy(tt_gpu_lm_weights(lm), tt_gpu_lm_weights(e->glm), e->l->n_floats * 4,
                       cudaMemcpyDeviceToDevice));
    tt_gpu_lm_weights_changed(lm);
    const int rc = tt_evaluate_txl_part(run_txl_gpu, lm, streams, s0, s1, s.model.seq_len, tokens,
                                        max_tokens, res, err, errlen);
    tt_gpu_lm_close(lm);
    return rc;
}

/* Several GPUs: n values summed over the ranks, in place (in a fixed order: every rank gets the
 * same bits). */
static void sum_over_ranks(tt_engine *e, double *v, int n)
{
#if TT_HAVE_NCCL
    double *dev;
    TT_CUDA(cudaMalloc((void **)&dev, (size_t)n * sizeof *dev));
    TT_CUDA(cudaMemcpy(dev, v, (size_t)n * sizeof *dev, cudaMemcpyHostToDevice));
    const tt_nccl *nc = tt_nccl_get();
    const ncclResult_t r = nc->all_reduce(dev, dev, (size_t)n, ncclFloat64, ncclSum, e->comm,
                                          e->gpu.stream);
    if (r != ncclSuccess)
        tt_panic(__FILE__, __LINE__, "NCCL: the evaluation's sums: %s", nc->get_error_string(r));
    tt_nccl_wait(e->comm, e->gpu.stream, true, e->rank, e->world,
                 "the evaluation's sums");
    tt_gpu_lm_slow_wait(e->glm); /* the ranks' validations end at other times */
    TT_CUDA(cudaMemcpyAsync(v, dev, (size_t)n * sizeof *dev, cudaMemcpyDeviceToHost, e->gpu.stream));
    TT_CUDA(cudaStreamSynchronize(e->gpu.stream));
    TT_CUDA(cudaFree(dev));
#else
    (void)e, (void)v, (void)n;
    TT_ASSERT(!"built without NCCL");
#endif
}

int tt_engine_evaluate(tt_engine *e, const tt_tokens *tokens, int stride, long max_tokens,
                       tt_eval_result *res, char *err, size_t errlen)
{
    if (e->world > 1) {
        /* each rank its share (its streams; every world-th group of windows), then the sums of
         * all: every rank returns the whole split's perplexity. The inputs are the same on every
         * rank, so an error is every rank's. */
        const int rc = e->spec->model.kind == TT_KIND_TXL
                           ? evaluate_txl_gpu(e, tokens, max_tokens, res, err, errlen)
                           : tt_evaluate_part(run_gpu, e->glm, e->batch, e->l->m.seq_len, tokens,
                                              stride, max_tokens, e->rank, e->world, res, err,
                                              errlen);
        if (rc) return rc;
        double v[3] = {res->nll, (double)res->scored, (double)res->windows};
        sum_over_ranks(e, v, 3);
        res->nll = v[0], res->scored = (long)v[1];
        if (e->spec->model.kind != TT_KIND_TXL) res->windows = (long)v[2]; /* else: segments */
        return 0;
    }
    if (e->on_gpu && e->spec->model.kind == TT_KIND_TXL)
        return evaluate_txl_gpu(e, tokens, max_tokens, res, err, errlen);
    if (e->mem) { /* Transformer-XL: the spec's eval segment, memory and clamp lengths */
        tt_layout l = *e->l;
        l.m.seq_len = e->spec->eval.tgt_len;
        l.m.mem_len = e->spec->eval.mem_len;
        l.m.clamp_len = e->spec->eval.clamp_len;
        return tt_evaluate_txl_cpu(&l, e->batch, e->host[0], tokens, max_tokens, res, err, errlen);
    }
    if (e->on_gpu)
        return tt_evaluate(run_gpu, e->glm, e->batch, e->l->m.seq_len, tokens, stride, max_tokens,
                           res, err, errlen);
    return tt_evaluate_cpu(&e->cpu, e->host[0], tokens, stride, max_tokens, res, err, errlen);
}

int tt_engine_forward(tt_engine *e, const int32_t *inputs, const float *mems, int mlen,
                      float *mems_out, float *hidden)
{
    const tt_model_spec *m = &e->l->m;
    const size_t rows = (size_t)e->batch * m->seq_len;
    /* the output layer is the caller's (tt_lm_logprobs): every row's weight 0 skips it */
    float *zero = tt_xcalloc(rows, sizeof *zero);
    const tt_lm_opts o = {.weight = zero};
    tt_lm_result r;
    int out = 0;
    TT_ASSERT(m->kind == TT_KIND_TXL || (!mems && !mlen && !mems_out));
    if (e->on_gpu) {
        if (m->kind == TT_KIND_TXL) {
            tt_gpu_lm_continue(e->glm, mlen > 0);
            tt_gpu_lm_memory_set(e->glm, mems, mlen);
        }
        tt_gpu_lm_run(e->glm, inputs, inputs, &o, false, &r);
        tt_gpu_lm_hidden(e->glm, hidden);
        if (m->kind == TT_KIND_TXL) {
            out = tt_gpu_lm_memory(e->glm);
            if (mems_out) tt_gpu_lm_memory_get(e->glm, mems_out);
        }
        e->mem_step = -1; /* the training memories are not these */
    } else {
        if (m->kind == TT_KIND_TXL)
            out = tt_cpu_txl_lm_run(&e->cpu, e->host[0], NULL, inputs, inputs, mlen ? mems : NULL,
                                    mlen, mems_out, &o, &r);
        else
            tt_cpu_lm_run(&e->cpu, e->host[0], NULL, inputs, inputs, &o, &r);
        memcpy(hidden, tt_cpu_lm_hidden(&e->cpu), rows * m->d_model * sizeof *hidden);
    }
    free(zero);
    return out;
}

