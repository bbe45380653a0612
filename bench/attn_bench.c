/* tt-attn-bench: the fused multi-linear attention alone (tt_mla_fwd, tt_mla_bwd) on one card, at a
 * spec's shapes: medians of CUDA-event times, useful FLOPs, MFU and the device memory the kernels
 * need. --dump writes its inputs and outputs for bench/torch_attn.py, which checks the same
 * computation written with a materialized T and cuBLAS against them and times it.
 * Exit codes: 0 done, 1 a run-time failure, 2 bad usage or spec, 77 no CUDA device. */
#include <getopt.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "cache.h"
#include "cards.h"
#include "gpu.h"
#include "launch.h"
#include "report.h"
#include "rng.h"
#include "safetensors.h"
#include "spec.h"
#include "util.h"

#define WARMUP 10

static void usage(FILE *f)
{
    fprintf(f,
            "usage: tt-attn-bench SPEC [options]\n"
            "Times the spec's fused attention forward and backward alone on the GPU.\n\n"
            "  --batch B     sequences (default: the spec's train.batch)\n"
            "  --iters K     timed iterations of each measurement (default 50)\n"
            "  --seed S      seed of the random inputs (default 1)\n"
            "  --dump FILE   write inputs and outputs (fp32) to FILE.safetensors for\n"
            "                bench/torch_attn.py\n"
            "  -h, --help\n");
}

typedef struct {
    const char *spec, *dump;
    long batch, iters, seed;
} options;

static int parse_args(int argc, char **argv, options *o)
{
    enum { BATCH = 256, ITERS, SEED, DUMP };
    static const struct option longs[] = {
        {"batch", required_argument, 0, BATCH}, {"iters", required_argument, 0, ITERS},
        {"seed", required_argument, 0, SEED},   {"dump", required_argument, 0, DUMP},
        {"help", no_argument, 0, 'h'},          {0, 0, 0, 0}};
    o->iters = 50;
    o->seed = 1;
    opterr = 0;
    int c;
    while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
        long *dst = c == BATCH ? &o->batch : c == ITERS ? &o->iters : c == SEED ? &o->seed : NULL;
        if (dst) { /* the batch as the spec allows it */
            const long lo = c == SEED ? 0 : 1, hi = c == BATCH ? 65536 : 1000000;
            char *end;
            *dst = strtol(optarg, &end, 10);
            if (*optarg == '\0' || *end || *dst < lo || *dst > hi) {
                fprintf(stderr, "tt-attn-bench: --%s takes a number from %ld to %ld, not '%s'\n",
                        longs[c - BATCH].name, lo, hi, optarg);
                return 2;
            }
        } else if (c == DUMP) {
            o->dump = optarg;
        } else if (c == 'h') {
            usage(stdout);
            exit(0);
        } else {
            fprintf(stderr, "tt-attn-bench: unknown option '%s' (see tt-attn-bench --help)\n",
                    argv[optind - 1]);
            return 2;
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "tt-attn-bench: expected one spec (usage: tt-attn-bench SPEC [options])\n");
        return 2;
    }
    o->spec = argv[optind];
    return 0;
}

/* One array of the benchmark: on the host in fp32, holding exactly what the device holds in its
 * storage type (inputs are rounded before they go up), and on the device. */
typedef struct {
    const char *name;
    int ndim;
    int64_t shape[2];
    int bf16; /* stored as bf16 on the device, else fp32 */
    float *host;
    void *dev;
} array;

static size_t numel(const array *a) { return (size_t)a->shape[0] * (a->ndim > 1 ? (size_t)a->shape[1] : 1); }
static size_t dev_bytes(const array *a) { return numel(a) * (a->bf16 ? 2 : 4); }

static void array_alloc(array *a)
{
    a->host = tt_xcalloc(numel(a), sizeof(float));
    TT_CUDA(cudaMalloc(&a->dev, dev_bytes(a)));
}

static void array_free(array *a)
{
    free(a->host);
    if (a->dev) cudaFree(a->dev);
}

static void upload(array *a)
{
    const size_t n = numel(a);
    if (a->bf16) {
        uint16_t *h = tt_xmalloc(n * 2);
        for (size_t i = 0; i < n; i++) h[i] = tt_bf16_from_float(a->host[i]);
        TT_CUDA(cudaMemcpy(a->dev, h, n * 2, cudaMemcpyHostToDevice));
        free(h);
    } else {
        TT_CUDA(cudaMemcpy(a->dev, a->host, n * 4, cudaMemcpyHostToDevice));
    }
}

static void download(array *a, cudaStream_t st)
{
    const size_t n = numel(a);
    TT_CUDA(cudaStreamSynchronize(st));
    if (a->bf16) {
        uint16_t *h = tt_xmalloc(n * 2);
        TT_CUDA(cudaMemcpy(h, a->dev, n * 2, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++) a->host[i] = tt_bf16_to_float(h[i]);
        free(h);
    } else {
        TT_CUDA(cudaMemcpy(a->host, a->dev, n * 4, cudaMemcpyDeviceToHost));
    }
}

/* N(0, std^2) from (seed, stream) by Box-Muller, rounded to what the device will hold. Never all
 * zeros: a kernel that ignored an input would go unnoticed by the comparison. */
static void fill_normal(array *a, uint64_t seed, uint64_t stream, float std)
{
    for (size_t i = 0; i < numel(a); i++) {
        const double u1 = 1.0 - tt_uniform(seed, stream, 2 * i), u2 = tt_uniform(seed, stream, 2 * i + 1);
        const float x = (float)(std * sqrt(-2 * log(u1)) * cos(2 * M_PI * u2));
        a->host[i] = a->bf16 ? tt_bf16_to_float(tt_bf16_from_float(x)) : x;
    }
}

typedef struct {
    const tt_gpu_program *prog;
    cudaStream_t st;
    const tt_gpu_side *side; /* dWo's kernels beside the others, as the trainer runs them */
    int batch, n, r, d;
    array qkv, wo, g, dy;    /* inputs */
    array y, dqkv, dwo, dg;  /* outputs */
    float *part;             /* tt_mla_fwd's and tt_mla_bwd's scratch */
    size_t part_floats;
} bench;

/* One forward and/or backward, as the trainer runs them: dWo and dg are added into, so they are
 * zeroed first, inside what is timed. */
static void run(const bench *b, int fwd, int bwd)
{
    if (fwd)
        tt_mla_fwd(b->prog, b->st, b->y.dev, b->qkv.dev, b->g.dev, b->wo.dev, NULL, NULL, NULL,
                   b->part, b->batch, b->n, b->r, b->d);
    if (bwd) {
        TT_CUDA(cudaMemsetAsync(b->dwo.dev, 0, dev_bytes(&b->dwo), b->st));
        TT_CUDA(cudaMemsetAsync(b->dg.dev, 0, dev_bytes(&b->dg), b->st));
        tt_mla_bwd(b->prog, b->st, b->side, b->dqkv.dev, b->dwo.dev, NULL, b->dg.dev, NULL, NULL,
                   b->part, b->dy.dev, b->qkv.dev, b->g.dev, b->wo.dev, NULL, NULL, NULL, b->batch,
                   b->n, b->r, b->d);
    }
}

typedef struct {
    const bench *b;
    int fwd, bwd;
} timed;

static void timed_run(const void *arg)
{
    const timed *t = arg;
    run(t->b, t->fwd, t->bwd);
}

/* The median of iters runs (tt_gpu_median_ms: the GPU's times). */
static double median_ms(const bench *b, int fwd, int bwd, long iters)
{
    const timed t = {b, fwd, bwd};
    return tt_gpu_median_ms(b->st, iters, timed_run, &t);
}

/* Useful FLOPs of one forward of the attention over the batch, from ttgen's cost report (scores
 * and mix, causal triples and pairs only), so that the bench and the report count alike. */
static double forward_flops(const tt_spec *s)
{
    const tt_model_spec *m = &s->model;
    /* the attention's count does not depend on the vocabulary: any valid one will do */
    const long vocab = m->vocab ? m->vocab : m->n_cutoffs ? m->cutoffs[m->n_cutoffs - 1] + 1 : 2;
    tt_costs c;
    tt_costs_compute(s, vocab, &c);
    return (c.fwd[TT_F_ATTN_SCORE] + c.fwd[TT_F_ATTN_MIX]) / m->layers * s->train.batch *
           m->seq_len;
}

static double mib(size_t bytes) { return (double)bytes / 1048576.0; }

static int dump(const char *path, bench *b, const tt_spec *spec, const tt_gpu *gpu,
                const options *o, const double ms[3], size_t bytes, char *err, size_t errlen)
{
    array *all[] = {&b->qkv, &b->wo, &b->g, &b->dy, &b->y, &b->dqkv, &b->dwo, &b->dg};
    enum { NT = sizeof all / sizeof all[0] };
    tt_st_tensor t[NT];
    for (int i = 0; i < NT; i++) {
        if (i >= 4) download(all[i], b->st);
        t[i] = (tt_st_tensor){.name = all[i]->name, .dtype = TT_ST_F32, .ndim = all[i]->ndim,
                              .data = all[i]->host};
        memcpy(t[i].shape, all[i]->shape, sizeof all[i]->shape);
    }
    char v[12][64];
    snprintf(v[0], sizeof v[0], "%d", b->batch);
    snprintf(v[1], sizeof v[1], "%d", b->n);
    snprintf(v[2], sizeof v[2], "%d", b->r);
    snprintf(v[3], sizeof v[3], "%d", b->d);
    snprintf(v[4], sizeof v[4], "%s", spec->model.causal ? "true" : "false");
    snprintf(v[5], sizeof v[5], "%s", tt_precision_name(spec->train.precision));
    snprintf(v[6], sizeof v[6], "%ld", o->seed);
    snprintf(v[7], sizeof v[7], "%ld", o->iters);
    snprintf(v[8], sizeof v[8], "%.6f", ms[0]);
    snprintf(v[9], sizeof v[9], "%.6f", ms[1]);
    snprintf(v[10], sizeof v[10], "%.6f", ms[2]);
    snprintf(v[11], sizeof v[11], "%zu", bytes);
    const char *keys[] = {"batch", "n", "r", "d", "causal", "precision", "seed", "iters",
                          "fwd_ms", "bwd_ms", "fwd_bwd_ms", "device_bytes", "spec", "device"};
    const char *vals[] = {v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], v[8], v[9], v[10], v[11],
                          o->spec, gpu->name};
    return tt_st_write(path, t, NT, keys, vals, (int)(sizeof keys / sizeof keys[0]), err, errlen);
}

int main(int argc, char **argv)
{
    options o = {0};
    int rc = parse_args(argc, argv, &o);
    if (rc) return rc;
    char err[4096];
    tt_spec spec;
    if (tt_spec_load(o.spec, &spec, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        return 2;
    }
    const tt_model_spec *m = &spec.model;
    if (m->kind != TT_KIND_TENSORIZED || m->position != TT_POS_NONE) {
        fprintf(stderr, "tt-attn-bench: %s: the benchmark is of the tensorized attention with "
                        "position: none\n", o.spec);
        tt_spec_free(&spec);
        return 2;
    }
    if (o.batch) spec.train.batch = (int)o.batch; /* the plan sizes its tiles for the batch */
    tt_gpu gpu;
    if (tt_gpu_open(&gpu, 0, err, sizeof err) != 0) {
        fprintf(stderr, "tt-attn-bench: %s\n", err);
        tt_spec_free(&spec);
        return 77;
    }
    tt_cache cache;
    tt_gpu_program prog;
    if (tt_cache_open(&cache, NULL, err, sizeof err) != 0 ||
        tt_gpu_program_load(&prog, &spec, &gpu, &cache, err, sizeof err) != 0) {
        fprintf(stderr, "tt-attn-bench: %s\n", err);
        return 1;
    }
    const int B = spec.train.batch, N = m->seq_len, R = m->rank, D = m->d_model;
    const int bf16 = spec.train.precision == TT_PREC_BF16;
    bench b = {.prog = &prog, .st = gpu.stream, .side = &gpu.side, .batch = B, .n = N, .r = R, .d = D};
    const int64_t rows = (int64_t)B * N;
    b.qkv = (array){"qkv", 2, {rows, 3 * R}, bf16, NULL, NULL};
    b.wo = (array){"wo", 2, {D, (int64_t)N * N}, bf16, NULL, NULL};
    b.g = (array){"g", 1, {R, 0}, 0, NULL, NULL};
    b.dy = (array){"dy", 2, {rows, D}, bf16, NULL, NULL};
    b.y = (array){"y", 2, {rows, D}, bf16, NULL, NULL};
    b.dqkv = (array){"dqkv", 2, {rows, 3 * R}, bf16, NULL, NULL};
    b.dwo = (array){"dwo", 2, {D, (int64_t)N * N}, 0, NULL, NULL};
    b.dg = (array){"dg", 1, {R, 0}, 0, NULL, NULL};
    array *all[] = {&b.qkv, &b.wo, &b.g, &b.dy, &b.y, &b.dqkv, &b.dwo, &b.dg};
    size_t in_bytes = 0, out_bytes = 0;
    for (int i = 0; i < 8; i++) {
        array_alloc(all[i]);
        *(i < 4 ? &in_bytes : &out_bytes) += dev_bytes(all[i]);
    }
    b.part_floats = tt_mla_scratch_floats(&prog, B);
    TT_CUDA(cudaMalloc((void **)&b.part, b.part_floats * 4));
    const size_t part_bytes = b.part_floats * 4, total = in_bytes + out_bytes + part_bytes;

    /* Inputs: as the trainer's, Q|K|V and dY of unit scale, Wo as initialized, and g a softmax
     * over the rank (positive, summing to 1), rounded to bf16 so that the peer holds it exactly. */
    const uint64_t seed = (uint64_t)o.seed;
    fill_normal(&b.qkv, seed, 0, 1.f);
    fill_normal(&b.wo, seed, 1, 0.05f);
    fill_normal(&b.dy, seed, 2, 1.f);
    fill_normal(&b.g, seed, 3, 1.f);
    double sum = 0;
    for (int i = 0; i < R; i++) sum += exp(b.g.host[i]);
    for (int i = 0; i < R; i++)
        b.g.host[i] = tt_bf16_to_float(tt_bf16_from_float((float)(exp(b.g.host[i]) / sum)));
    for (int i = 0; i < 4; i++) upload(all[i]);

    for (int i = 0; i < WARMUP; i++) run(&b, 1, 1);
    TT_CUDA(cudaStreamSynchronize(b.st));
    const double ms[3] = {median_ms(&b, 1, 0, o.iters), median_ms(&b, 0, 1, o.iters),
                          median_ms(&b, 1, 1, o.iters)};
    b.side = NULL; /* for comparison: every kernel on one stream */
    const double serial_bwd = median_ms(&b, 0, 1, o.iters);
    b.side = &gpu.side;

    const double fwd = forward_flops(&spec), flops[3] = {fwd, 2 * fwd, 3 * fwd};
    const tt_card *card = tt_card_lookup(gpu.name);
    const double peak = tt_card_peak_tflops(card, spec.train.precision);
    printf("tt-attn-bench %s: multi-linear attention alone on %s (%s, %d SMs)\n", o.spec, gpu.name,
           gpu.arch, gpu.sm_count);
    printf("  B %d, N %d, R %d, D %d, %s, %s; seed %ld; %d warm-up runs, then the median of %ld "
           "CUDA-event times each\n", B, N, R, D, m->causal ? "causal" : "NOT causal",
           tt_precision_name(spec.train.precision), o.seed, WARMUP, o.iters);
    printf("  kernels:");
    for (int i = 0; i < prog.plan.n; i++)
        if (strncmp(prog.plan.kernels[i].op, "mla_", 4) == 0) printf(" %s", prog.plan.kernels[i].name);
    printf("\n\n  %-18s %10s %10s %10s %8s\n", "", "ms", "GFLOP", "TFLOP/s", "MFU");
    static const char *const rows_name[] = {"forward", "backward", "forward+backward"};
    for (int i = 0; i < 3; i++) {
        const double tflops = flops[i] / (ms[i] * 1e-3) / 1e12;
        char mfu[32] = "-";
        if (card) snprintf(mfu, sizeof mfu, "%.1f%%", 100 * tflops / peak);
        printf("  %-18s %10.4f %10.3f %10.2f %8s\n", rows_name[i], ms[i], flops[i] / 1e9, tflops, mfu);
    }
    printf("  (backward with dWo's kernels on the same stream instead of beside: %.4f ms)\n",
           serial_bwd);
    printf("  (useful FLOPs as ttgen's report counts them: visible (i,j,k) triples and (i,j) pairs\n"
           "   only; the backward counted as twice the forward)\n");
    if (card)
        printf("  MFU against %s's %.1f TFLOP/s dense %s\n", tt_card_label(card), peak,
               tt_precision_name(spec.train.precision));
    else
        printf("  MFU: unknown peak for %s\n", gpu.name);
    printf("\ndevice memory the kernels need: %.2f MiB = inputs %.2f (qkv, Wo, g, dY) + outputs "
           "%.2f (y, dqkv, dWo, dg) + scratch %.2f (tt_mla_bwd)\n", mib(total), mib(in_bytes),
           mib(out_bytes), mib(part_bytes));

    int status = 0;
    if (o.dump) {
        run(&b, 1, 1); /* the outputs of one clean forward and backward */
        if (dump(o.dump, &b, &spec, &gpu, &o, ms, total, err, sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            status = 1;
        } else {
            printf("wrote %s: inputs and outputs as fp32\n", o.dump);
        }
    }
    for (int i = 0; i < 8; i++) array_free(all[i]);
    cudaFree(b.part);
    tt_gpu_program_free(&prog);
    tt_cache_close(&cache);
    tt_gpu_close(&gpu);
    tt_spec_free(&spec);
    return status;
}
