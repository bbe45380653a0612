/* The GPU: device, stream and cuBLAS through the CUDA runtime, which opens the driver on first
 * use, so binaries start without one; and the generated kernels of a plan, compiled through
 * ttgen's cache on first use and loaded as CUDA libraries. Every CUDA and cuBLAS call is
 * checked: a failure is an invariant broken, reported with the call, file and line. */
#ifndef TT_GPU_H
#define TT_GPU_H

#include <cublas_v2.h>
#include <cuda_runtime_api.h>
#include <stddef.h>

#include "cache.h"
#include "compile.h"
#include "plan.h"

#define TT_CUDA(call) tt_cuda_check((call), #call, __FILE__, __LINE__)
#define TT_CUBLAS(call) tt_cublas_check((call), #call, __FILE__, __LINE__)
void tt_cuda_check(cudaError_t e, const char *call, const char *file, int line);
void tt_cublas_check(cublasStatus_t s, const char *call, const char *file, int line);

/* A second stream for work that may run beside the main stream's (kernels that fill the card
 * only partly, or leave a tail): tt_gpu_fork makes it wait for what s has queued so far,
 * tt_gpu_join makes s wait for what it has queued since. Under graph capture of s the side
 * stream joins the capture, and the two become parallel branches of the graph. */
typedef struct {
    cudaStream_t stream;
    cudaEvent_t forked, joined;
} tt_gpu_side;

void tt_gpu_fork(const tt_gpu_side *side, cudaStream_t s);
void tt_gpu_join(const tt_gpu_side *side, cudaStream_t s);

typedef struct {
    int ordinal;
    char name[256];
    int cc_major, cc_minor, sm_count;
    size_t total_mem;
    char arch[16]; /* sm_XY of this device */
    cudaStream_t stream;
    tt_gpu_side side; /* beside stream: no cuBLAS on it */
    cublasHandle_t blas;
} tt_gpu;

/* Opens device ordinal. -1 with why ("no CUDA device: ...") when there is none. */
int tt_gpu_open(tt_gpu *gpu, int ordinal, char *why, size_t whylen);
void tt_gpu_close(tt_gpu *gpu);

typedef struct {
    const tt_kernel *k;
    cudaLibrary_t lib;
    cudaKernel_t fn;
} tt_gpu_kernel;

typedef struct {
    tt_plan plan;
    tt_build *builds;
    tt_gpu_kernel *kernels; /* plan.n */
    /* The materialized attention's switches, read from the environment once, at load (see
     * gpu/launch.h): T formed by mla_mat_t (TT_MAT_T), the tiles of the products with Wo
     * (TT_MAT_TILES), those products beside the main stream (TT_MAT_SIDE), and the backward's
     * dWo in the same tiles of positions, as columns (TT_MAT_DWO_TILES). */
    bool mat_t, mat_side, mat_dwo_tiles;
    int mat_tiles;
} tt_gpu_program;

/* Plans, compiles (through the cache; cache may be NULL) and loads spec's kernels for gpu: the
 * variants the tuning cache beside the kernel cache holds for this card (gen/tune.h), else the
 * plan's heuristics. */
int tt_gpu_program_load(tt_gpu_program *p, const tt_spec *spec, const tt_gpu *gpu,
                        const tt_cache *cache, char *err, size_t errlen);
/* The same for a plan already built; takes it over (*plan is zeroed), and frees it on failure. */
int tt_gpu_program_load_plan(tt_gpu_program *p, tt_plan *plan, const tt_gpu *gpu,
                             const tt_cache *cache, char *err, size_t errlen);
void tt_gpu_program_free(tt_gpu_program *p);
/* The kernel of op ("layernorm_fwd"); aborts when the plan has none (a runtime bug). */
const tt_gpu_kernel *tt_gpu_kernel_of(const tt_gpu_program *p, const char *op);

/* n fp32 values into new device memory as the storage type (bf16: rounded); cudaFree it. */
void *tt_gpu_upload(const float *x, size_t n, int bf16);
/* n values of the storage type from device memory, as fp32 (malloc'd); synchronous. */
float *tt_gpu_download(const void *d, size_t n, int bf16);
/* The median of iters runs of run(arg) on stream s, each between its own pair of CUDA events, all
 * queued before one synchronization: the GPU's times, not the launching host's (ms). */
double tt_gpu_median_ms(cudaStream_t s, long iters, void (*run)(const void *arg), const void *arg);

/* Launches k with the given grid and its planned block, checking the launch. */
void tt_gpu_launch(const tt_gpu_kernel *k, dim3 grid, void **args, cudaStream_t stream);
/* The same with smem bytes of dynamic shared memory, up to the plan's (a kernel that sizes what
 * it uses by its arguments: xent keeps a row of the length it is given). */
void tt_gpu_launch_smem(const tt_gpu_kernel *k, dim3 grid, void **args, cudaStream_t stream,
                        unsigned smem);

#endif
