/* Device, cuBLAS and kernel loading (see gpu.h). */
#include "gpu.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bf16.h"
#include "device.h"
#include "tune.h"
#include "util.h"

void tt_cuda_check(cudaError_t e, const char *call, const char *file, int line)
{
    if (e != cudaSuccess) tt_panic(file, line, "%s: %s (%s)", call, cudaGetErrorString(e), cudaGetErrorName(e));
}

void tt_cublas_check(cublasStatus_t s, const char *call, const char *file, int line)
{
    if (s != CUBLAS_STATUS_SUCCESS) tt_panic(file, line, "%s: %s", call, cublasGetStatusString(s));
}

int tt_gpu_open(tt_gpu *gpu, int ordinal, char *why, size_t whylen)
{
    memset(gpu, 0, sizeof *gpu);
    /* Ask the driver directly first: its answer ("libcuda.so.1 not found") says more than the
     * runtime's ("driver version is insufficient") on a machine without one. */
    tt_device_info info;
    if (tt_device_query(ordinal, &info, why, whylen) != 0) return -1;
    int count = 0;
    cudaError_t e = cudaGetDeviceCount(&count);
    if (e != cudaSuccess) {
        cudaGetLastError(); /* clear it: the runtime keeps the last error */
        return tt_errf(why, whylen, "no CUDA device: %s", cudaGetErrorString(e));
    }
    if (count == 0) return tt_errf(why, whylen, "no CUDA device: the driver sees none");
    if (ordinal < 0 || ordinal >= count)
        return tt_errf(why, whylen, "no CUDA device %d (this machine has %d)", ordinal, count);
    struct cudaDeviceProp p;
    TT_CUDA(cudaSetDevice(ordinal));
    TT_CUDA(cudaGetDeviceProperties(&p, ordinal));
    gpu->ordinal = ordinal;
    snprintf(gpu->name, sizeof gpu->name, "%s", p.name);
    gpu->cc_major = p.major;
    gpu->cc_minor = p.minor;
    gpu->sm_count = p.multiProcessorCount;
    gpu->total_mem = p.totalGlobalMem;
    snprintf(gpu->arch, sizeof gpu->arch, "sm_%d%d", p.major, p.minor);
    TT_CUDA(cudaStreamCreateWithFlags(&gpu->stream, cudaStreamNonBlocking));
    TT_CUDA(cudaStreamCreateWithFlags(&gpu->side.stream, cudaStreamNonBlocking));
    TT_CUDA(cudaEventCreateWithFlags(&gpu->side.forked, cudaEventDisableTiming));
    TT_CUDA(cudaEventCreateWithFlags(&gpu->side.joined, cudaEventDisableTiming));
    TT_CUBLAS(cublasCreate(&gpu->blas));
    TT_CUBLAS(cublasSetStream(gpu->blas, gpu->stream));
    return 0;
}

void tt_gpu_close(tt_gpu *gpu)
{
    if (gpu->blas) cublasDestroy(gpu->blas);
    if (gpu->side.joined) cudaEventDestroy(gpu->side.joined);
    if (gpu->side.forked) cudaEventDestroy(gpu->side.forked);
    if (gpu->side.stream) cudaStreamDestroy(gpu->side.stream);
    if (gpu->stream) cudaStreamDestroy(gpu->stream);
    memset(gpu, 0, sizeof *gpu);
}

void tt_gpu_fork(const tt_gpu_side *side, cudaStream_t s)
{
    TT_CUDA(cudaEventRecord(side->forked, s));
    TT_CUDA(cudaStreamWaitEvent(side->stream, side->forked, 0));
}

void tt_gpu_join(const tt_gpu_side *side, cudaStream_t s)
{
    TT_CUDA(cudaEventRecord(side->joined, side->stream));
    TT_CUDA(cudaStreamWaitEvent(s, side->joined, 0));
}

int tt_gpu_program_load(tt_gpu_program *p, const tt_spec *spec, const tt_gpu *gpu,
                        const tt_cache *cache, char *err, size_t errlen)
{
    char *tuning = cache ? tt_tuning_path(cache->dir) : NULL;
    tt_plan plan;
    const int rc = tt_plan_build_for_card(spec, gpu->arch, gpu->name, tuning, &plan, err, errlen);
    free(tuning);
    if (rc == 0 && plan.warning[0]) fprintf(stderr, "tuning cache: %s\n", plan.warning);
    if (rc != 0) {
        memset(p, 0, sizeof *p);
        return -1;
    }
    return tt_gpu_program_load_plan(p, &plan, gpu, cache, err, errlen);
}

/* The switches of p's materialized attention (only its plans have mla_mat_t or mla_mat_rows),
 * read once here: a bad value is reported once, not at every launch. */
static void read_switches(tt_gpu_program *p)
{
    p->mat_tiles = 1;
    for (int i = 0; i < p->plan.n; i++) {
        const tt_kernel *k = &p->plan.kernels[i];
        if (!strcmp(k->op, "mla_mat_t")) p->mat_t = tt_env_long("TT_MAT_T", 0, 1, 1) != 0;
        if (!strcmp(k->op, "mla_mat_rows")) { /* planned only under the causal mask */
            const long n = tt_kernel_const(k, "N", 1);
            p->mat_tiles = (int)tt_env_long("TT_MAT_TILES", 1, n, tt_kernel_const(k, "TILES", 1));
            p->mat_side = tt_env_long("TT_MAT_SIDE", 0, 1, 1) != 0;
            p->mat_dwo_tiles = tt_env_long("TT_MAT_DWO_TILES", 0, 1, 1) != 0;
        }
    }
}

int tt_gpu_program_load_plan(tt_gpu_program *p, tt_plan *plan, const tt_gpu *gpu,
                             const tt_cache *cache, char *err, size_t errlen)
{
    memset(p, 0, sizeof *p);
    p->plan = *plan;
    memset(plan, 0, sizeof *plan);
    char *failed_dir = cache ? tt_xasprintf("%s/failed", cache->dir) : tt_xstrdup("ttgen-failed");
    tt_build_opts o = {.arch = gpu->arch, .cache = cache, .failure_dir = failed_dir};
    int rc = tt_builds_prepare(&p->plan, &o, &p->builds, err, errlen);
    if (rc == 0 && tt_builds_run(p->builds, p->plan.n, &o) != 0) {
        for (int i = 0; i < p->plan.n; i++)
            if (p->builds[i].error) {
                tt_errf(err, errlen, "%s", p->builds[i].error);
                break;
            }
        rc = -1;
    }
    free(failed_dir);
    if (rc != 0) {
        tt_gpu_program_free(p);
        return -1;
    }
    p->kernels = tt_xcalloc((size_t)p->plan.n, sizeof *p->kernels);
    for (int i = 0; i < p->plan.n; i++) {
        tt_gpu_kernel *k = &p->kernels[i];
        k->k = &p->plan.kernels[i];
        TT_CUDA(cudaLibraryLoadData(&k->lib, p->builds[i].cubin, NULL, NULL, 0, NULL, NULL, 0));
        TT_CUDA(cudaLibraryGetKernel(&k->fn, k->lib, k->k->name));
        /* beyond the default 48 KiB, static and dynamic together, needs the kernel's opt-in
         * (a kernel of 48 KiB dynamic beside 192 bytes static, the reverted xent_rows of
         * b3cd824, was refused at launch without it) */
        if (k->k->dyn_smem + k->k->smem_bytes > 48 * 1024)
            TT_CUDA(cudaFuncSetAttribute((const void *)k->fn,
                                         cudaFuncAttributeMaxDynamicSharedMemorySize,
                                         (int)k->k->dyn_smem));
    }
    read_switches(p);
    return 0;
}

void tt_gpu_program_free(tt_gpu_program *p)
{
    if (p->kernels)
        for (int i = 0; i < p->plan.n; i++)
            if (p->kernels[i].lib) cudaLibraryUnload(p->kernels[i].lib);
    free(p->kernels);
    tt_builds_free(p->builds, p->plan.n);
    tt_plan_free(&p->plan);
    memset(p, 0, sizeof *p);
}

const tt_gpu_kernel *tt_gpu_kernel_of(const tt_gpu_program *p, const char *op)
{
    for (int i = 0; i < p->plan.n; i++)
        if (strcmp(p->kernels[i].k->op, op) == 0) return &p->kernels[i];
    tt_panic(__FILE__, __LINE__, "the plan has no %s kernel", op);
}

/* Programmatic dependent launch (templates/common.cuh, tt_pdl_begin): on compute capability 9
 * and later each generated kernel may be launched while the one before it on its stream runs
 * (also inside a captured graph: a programmatic edge), unless TT_PDL=0. The kernels wait for
 * their predecessors before they touch memory, so the results are the same bits either way. */
static bool pdl_enabled(void)
{
    static int on = -1;
    if (on < 0) {
        int dev = 0, major = 0;
        on = tt_env_long("TT_PDL", 0, 1, 1) && cudaGetDevice(&dev) == cudaSuccess &&
             cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev) == cudaSuccess &&
             major >= 9;
    }
    return on;
}

void tt_gpu_launch_smem(const tt_gpu_kernel *k, dim3 grid, void **args, cudaStream_t stream,
                        unsigned smem)
{
    TT_ASSERT(smem <= k->k->dyn_smem);
    const dim3 block = {k->k->block[0], k->k->block[1], k->k->block[2]};
    cudaLaunchAttribute attr = {.id = cudaLaunchAttributeProgrammaticStreamSerialization};
    attr.val.programmaticStreamSerializationAllowed = 1;
    const cudaLaunchConfig_t cfg = {.gridDim = grid, .blockDim = block, .dynamicSmemBytes = smem,
                                    .stream = stream, .attrs = &attr, .numAttrs = pdl_enabled() ? 1 : 0};
    const cudaError_t e = cudaLaunchKernelExC(&cfg, (const void *)k->fn, args);
    if (e != cudaSuccess)
        tt_panic(__FILE__, __LINE__, "launching %s on grid (%u, %u, %u) x (%u, %u, %u), %u bytes of "
                 "dynamic shared memory: %s (%s)", k->k->name, grid.x, grid.y, grid.z, block.x,
                 block.y, block.z, smem, cudaGetErrorString(e), cudaGetErrorName(e));
}

void tt_gpu_launch(const tt_gpu_kernel *k, dim3 grid, void **args, cudaStream_t stream)
{
    tt_gpu_launch_smem(k, grid, args, stream, k->k->dyn_smem);
}

void *tt_gpu_upload(const float *x, size_t n, int bf16)
{
    void *d;
    TT_CUDA(cudaMalloc(&d, n * (bf16 ? 2 : 4) + (n == 0)));
    if (bf16) {
        uint16_t *h = tt_xmalloc(n * 2 + 1);
        for (size_t i = 0; i < n; i++) h[i] = tt_bf16_from_float(x[i]);
        TT_CUDA(cudaMemcpy(d, h, n * 2, cudaMemcpyHostToDevice));
        free(h);
    } else {
        TT_CUDA(cudaMemcpy(d, x, n * 4, cudaMemcpyHostToDevice));
    }
    return d;
}

float *tt_gpu_download(const void *d, size_t n, int bf16)
{
    float *x = tt_xmalloc(n * sizeof *x + 1);
    if (bf16) {
        uint16_t *h = tt_xmalloc(n * 2 + 1);
        TT_CUDA(cudaMemcpy(h, d, n * 2, cudaMemcpyDeviceToHost));
        for (size_t i = 0; i < n; i++) x[i] = tt_bf16_to_float(h[i]);
        free(h);
    } else {
        TT_CUDA(cudaMemcpy(x, d, n * 4, cudaMemcpyDeviceToHost));
    }
    return x;
}

static int cmp_float(const void *a, const void *b)
{
    const float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

double tt_gpu_median_ms(cudaStream_t s, long iters, void (*run)(const void *arg), const void *arg)
{
    cudaEvent_t *ev = tt_xmalloc(2 * (size_t)iters * sizeof *ev);
    for (long i = 0; i < 2 * iters; i++) TT_CUDA(cudaEventCreate(&ev[i]));
    for (long i = 0; i < iters; i++) {
        TT_CUDA(cudaEventRecord(ev[2 * i], s));
        run(arg);
        TT_CUDA(cudaEventRecord(ev[2 * i + 1], s));
    }
    TT_CUDA(cudaStreamSynchronize(s));
    float *ms = tt_xmalloc((size_t)iters * sizeof *ms);
    for (long i = 0; i < iters; i++) TT_CUDA(cudaEventElapsedTime(&ms[i], ev[2 * i], ev[2 * i + 1]));
    for (long i = 0; i < 2 * iters; i++) TT_CUDA(cudaEventDestroy(ev[i]));
    qsort(ms, (size_t)iters, sizeof *ms, cmp_float);
    const double med = iters % 2 ? ms[iters / 2] : 0.5 * ((double)ms[iters / 2 - 1] + ms[iters / 2]);
    free(ms);
    free(ev);
    return med;
}
