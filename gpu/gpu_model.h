/* The tensorized LM and Transformer-XL on the GPU: the generated kernels for every non-GEMM op, cuBLAS for the
 * products, in one device allocation planned up front from the spec (for the adaptive softmax
 * and embedding: for the worst case, every row in one cluster). The same parameter layout
 * as the CPU reference (cpu/model.h), so weights, gradients and checkpoints are
 * interchangeable, and the same dropout sites and RNG, so a step computes what the CPU's does. */
#ifndef TT_GPU_MODEL_H
#define TT_GPU_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "cpu_model.h"
#include "gemm.h"
#include "gpu.h"
#include "launch.h"
#include "model.h"
#include "report.h" /* tt_prof_role */

typedef struct tt_gpu_lm tt_gpu_lm;

/* Plans, compiles (through cache) and loads the kernels, and allocates everything for batch
 * sequences. -1 with one line in err (what the spec needs, and what to lower, when the device
 * memory is too small). */
int tt_gpu_lm_open(tt_gpu_lm **lm, tt_gpu *gpu, const tt_spec *spec, const tt_layout *layout,
                   int batch, const tt_cache *cache, char *err, size_t errlen);
void tt_gpu_lm_close(tt_gpu_lm *lm);

/* Device copies of the parameters, their gradients and Adam's moments (layout->n_floats). */
float *tt_gpu_lm_weights(tt_gpu_lm *lm);
/* After the host wrote the weights: refresh the copies the products read (on bf16 the
 * storage-type copy of every weight; at every precision each layer's W2 with padded rows). */
void tt_gpu_lm_weights_changed(tt_gpu_lm *lm);
float *tt_gpu_lm_grads(tt_gpu_lm *lm);
float *tt_gpu_lm_moments(tt_gpu_lm *lm, int which); /* 0: exp_avg, 1: exp_avg_sq */

/* Forward (and with grads, backward into the gradient buffer, which it zeroes first) for
 * host tokens [B, N] -> targets, as tt_cpu_lm_run. Synchronizes to return the sums. */
/* After a run: the last layer's output x_L [rows, D] as fp32 (from the storage type). */
void tt_gpu_lm_hidden(tt_gpu_lm *lm, float *out);
void tt_gpu_lm_run(tt_gpu_lm *lm, const int32_t *inputs, const int32_t *targets,
                   const tt_lm_opts *o, bool grads, tt_lm_result *res);

/* One Adam step (1-based step s) on the gradients of the last tt_gpu_lm_run; returns the
 * gradient norm before clipping. */
double tt_gpu_lm_adam(tt_gpu_lm *lm, long s);

/* One training step (1-based step s): tt_gpu_lm_run with grads, then tt_gpu_lm_adam, without a
 * host synchronization until the sums and the norm come back at its end. The kernels and
 * products of the step are captured in a CUDA graph the first time they run for o's seed, label
 * smoothing and mode and the batch's padded cluster counts (the adaptive softmax and embedding
 * run each cluster on the rows the host lists for it, padded to TT_ADAPTIVE_BUCKET), and replayed
 * after: the inputs, the lists, the dropout step and the optimizer's scalars are copied into
 * device memory ahead of the replay. Up to 64 graphs are kept (TT_CUDA_GRAPHS=K in the
 * environment: K), the least recently launched replaced first. With o->weight, or with
 * TT_CUDA_GRAPH=0 in the environment, the step is launched kernel by kernel instead (the same
 * kernels: the results are bit-identical). Returns the gradient norm before clipping. */
double tt_gpu_lm_train_step(tt_gpu_lm *lm, const int32_t *inputs, const int32_t *targets,
                            const tt_lm_opts *o, long s, tt_lm_result *res);

/* The same step in two halves, so that the host can submit the next step before it waits for
 * this one (one GPU, not Transformer-XL: at most two steps in flight, and no other call on lm
 * while one is): submit copies the batch and enqueues the step, which runs after any step
 * submitted before it; result waits for the oldest submitted step and returns its norm, filling
 * res. halt: leave the weights as they are if the step before this one skipped (its loss or
 * gradient not finite: the step guard, gpu/launch.h's tt_step_guard), for a host that stops at
 * such a step. The same kernels in the same order as tt_gpu_lm_train_step's: the same bits. */
void tt_gpu_lm_train_submit(tt_gpu_lm *lm, const int32_t *inputs, const int32_t *targets,
                            const tt_lm_opts *o, long s, bool halt);
double tt_gpu_lm_train_result(tt_gpu_lm *lm, tt_lm_result *res);
/* The index into the flat gradient of its first non-finite element in the step whose result came
 * last, where its loss or gradient norm was not finite (-1: none, or none looked for). */
long long tt_gpu_lm_first_bad(const tt_gpu_lm *lm);
/* Several GPUs: comm (an ncclComm_t) is the communicator of the run's ranks, each of which holds
 * a share of every step's batch (tt_lm_opts' seq0 and norm). Each training step then sums the
 * ranks' gradients and loss sums over it between the backward and Adam, inside the step's graph,
 * so that every rank takes the same step; its result's sums are the whole batch's, and its
 * flags the sum of the flags the ranks raised for it (tt_gpu_lm_flag: a rank that was asked to
 * stop raises 1, and every rank sees it after the same step). NULL: this GPU alone. This is
 * rank of world, holding sequences rank x batch .. (rank + 1) x batch - 1 of the whole batch.
 * The sums run in parts beside the backward, each as soon as it is written (TT_NCCL_BUCKETS=0:
 * one all-reduce after it); with one embedding table every rank runs the embedding's backward
 * over the whole batch instead of summing the table (TT_NCCL_EMB_GLOBAL=0: not). */
void tt_gpu_lm_set_comm(tt_gpu_lm *lm, void *comm, int rank, int world);
void tt_gpu_lm_flag(tt_gpu_lm *lm, double flag);
/* Several GPUs: the next training step's wait for the ranks takes the slow limit (tt_nccl_wait,
 * tt_nccl_timeout): after a validation or a checkpoint, which ranks end at other times. */
void tt_gpu_lm_slow_wait(tt_gpu_lm *lm);
/* The optimizer sharded over the communicator's world ranks (after tt_gpu_lm_set_comm), this one
 * rank: each training step reduce-scatters the gradients (each rank gets the sums of its shard,
 * a world-th of the parameters), clips with the norm of the whole gradient (the ranks' sums of
 * squares all-reduced), runs Adam on its shard alone, and all-gathers the new weights (and
 * their bf16 copy). Each rank keeps the moments of its shard alone (a world-th of the memory):
 * tt_gpu_lm_moments_io moves them. */
void tt_gpu_lm_shard(tt_gpu_lm *lm, int rank, int world);
/* Adam's moments (exp_avg m, exp_avg_sq v: n_floats each, on the host) to the device (upload)
 * or back. With a sharded optimizer each rank holds its shard alone: an upload takes this rank's
 * part of the arrays, and a download gathers every rank's (every rank must call it, together). */
void tt_gpu_lm_moments_io(tt_gpu_lm *lm, float *m, float *v, bool upload);
/* Bytes of device memory the moments take (a sharded optimizer's: its shard). */
size_t tt_gpu_lm_moment_bytes(const tt_gpu_lm *lm);

/* Transformer-XL: whether the next run continues the segments of the last one (each row the
 * segment right after the same row's), attending to the memories the last run left, or starts
 * without memory. Each run leaves the memories for the next: the last min(mlen + N, M) inputs
 * of each layer, in device memory. tt_gpu_lm_memory: the length the next run would attend to. */
void tt_gpu_lm_continue(tt_gpu_lm *lm, bool continues);
int tt_gpu_lm_memory(const tt_gpu_lm *lm);
/* The memories the next run would attend to, as fp32 [L, B, mlen, D] into out (when not NULL;
 * L * B * mlen * D floats); returns mlen (0 for the tensorized model). Waits for the stream. */
int tt_gpu_lm_memory_get(tt_gpu_lm *lm, float *out);
/* Makes mems ([L, B, mlen, D] fp32, as tt_gpu_lm_memory_get gives them or the CPU reference
 * keeps them) the memories the next run attends to (rounded to the storage type), mlen <= M. */
void tt_gpu_lm_memory_set(tt_gpu_lm *lm, const float *mems, int mlen);
/* Training steps captured into a graph so far, and steps that replayed one. */
void tt_gpu_lm_graph_counts(const tt_gpu_lm *lm, long *captured, long *replayed);
/* The matrix products so far whose cuBLASLt algorithm this process timed, and those that took
 * the algorithm recorded for them in the tuning cache (gemm.h's tt_gemm_record: a product is
 * timed once per card, before it first runs, and every later run takes the same algorithm). */
void tt_gpu_lm_products(const tt_gpu_lm *lm, long *timed, long *recorded);
/* ttgen --tune: the products met from now on are timed again, and their records replaced. */
void tt_gpu_lm_retime_products(tt_gpu_lm *lm);

#define TT_PROF_MAX_OPS 64
typedef struct {
    char op[32];
    int n;
} tt_prof_op;

/* Where a training step's time goes (tt-bench --profile), by role (report.h's tt_prof_role). */
typedef struct {
    double ms[TT_PROF_ROLES][2]; /* [role][forward, backward]: mean ms a step */
    double sum_ms;               /* all of them */
    int parts;                   /* the parts a step was cut into */
    int kernels, memsets, copies; /* a step's launches by kind (the graph's nodes; cuBLAS's
                                   * kernels each count) */
    double one_stream_ms;        /* the same step on the main stream alone without the marks, a
                                  * graph replayed as the parts' is (the median replay): what
                                  * their sum answers to */
    /* the kernel nodes by op, most first: ours under the plan's op (e.g. "mla_bwd_q"), every
     * other kernel (cuBLAS's, with its split-K sums) under "cuBLAS and others" */
    int n_ops;
    tt_prof_op ops[TT_PROF_MAX_OPS];
} tt_step_profile;

/* reps training steps on inputs on the main stream alone, captured as a CUDA graph with an event
 * node between the parts of each role, so that the parts tile the step: their mean times by role
 * and direction (after one step kernel by kernel and one replay, not counted). The step s's
 * dropout and Adam's scalars; the weights move as in training. */
void tt_gpu_lm_profile(tt_gpu_lm *lm, const int32_t *inputs, const int32_t *targets,
                       const tt_lm_opts *o, long s, int reps, tt_step_profile *out);

/* The median of reps launches of the training step's graph last launched, back to back on the
 * stream (the host's work between steps left out: against tt_gpu_lm_train_step's own time, what
 * that work costs a step); NAN without one (graphs off). The weights move as in training. */
double tt_gpu_lm_replay_ms(tt_gpu_lm *lm, long reps);

/* Bytes of device memory the model needs for batch (to say what a spec needs before failing). */
size_t tt_gpu_lm_bytes(const tt_gpu_lm *lm);

#endif
