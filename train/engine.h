/* Where a model runs: the CPU reference or the GPU, behind one interface, so that tt-train and
 * tt-eval are the same code on both. The host holds the weights and Adam's moments between the
 * calls that move them (upload after loading or initializing, download before a checkpoint). */
#ifndef TT_ENGINE_H
#define TT_ENGINE_H

#include <stdbool.h>
#include <stddef.h>

#include "cpu_model.h"
#include "evaluate.h"
#include "model.h"
#include "rendezvous.h"
#include "spec.h"

typedef struct tt_engine tt_engine;

/* device: "cpu", "cuda", or "auto" (the GPU when there is one). desc gets where it runs, e.g.
 * "the cpu" or "NVIDIA H200". -1 with one line in err. */
int tt_engine_open(tt_engine **e, const char *device, const tt_spec *spec, const tt_layout *layout,
                   int batch, char *desc, size_t desclen, char *err, size_t errlen);

/* The same as rank dist->rank of a run on dist->world GPUs (dist NULL or world 1: this device
 * alone): the GPU dist->local, NCCL opened and its communicator made with the other ranks
 * (rank 0's unique id handed over by tt_rendezvous within timeout_ms), and a share of batch,
 * the step's whole batch: the rank's batch / world sequences from rank * batch / world on
 * (batch not divisible by world: an error). A training step then takes the whole batch's tokens
 * and returns the whole batch's sums; the memories (tt_engine_memory, tt_engine_set_memory) are
 * the whole batch's, gathered from the ranks (every rank must call both, together). */
int tt_engine_open_rank(tt_engine **e, const char *device, const tt_spec *spec,
                        const tt_layout *layout, int batch, const tt_dist_env *dist,
                        int timeout_ms, char *desc, size_t desclen, char *err, size_t errlen);
/* A tool's --gpus N (-1: every GPU of this host): N copies of this program as the ranks of one
 * run (ranks.h's tt_ranks_relaunch), each finding its place as under torchrun. Returns the
 * run's status; a failure to start says why in one line after "tool: " (2: no GPU, or fewer than
 * N); -1 when there is one GPU to run on, which the caller then runs on itself. */
int tt_engine_launch(const char *tool, int argc, char **argv, long gpus);

/* Several GPUs: whether a rank raised a stop at this step is in the step's result (flags); this
 * rank raises one for the next step with flag 1. */
void tt_engine_flag(tt_engine *e, int flag);
void tt_engine_close(tt_engine *e);
/* Device memory the model holds, and in *moments (when not NULL) the part Adam's moments take
 * (with a sharded optimizer, this rank's shard); 0 on the CPU. */
size_t tt_engine_device_bytes(const tt_engine *e, size_t *moments);

/* Host arrays of layout->n_floats: weights, exp_avg, exp_avg_sq. */
float *tt_engine_host(tt_engine *e, int which);
void tt_engine_upload(tt_engine *e);
void tt_engine_download(tt_engine *e);

/* Forward, backward and one Adam step (1-based s) on a training batch; returns the gradient
 * norm before clipping. continues: each row of the batch is the segment right after the same
 * row of step s - 1's, so Transformer-XL attends to the memories that step left (when the
 * engine ran it, or they were set with tt_engine_set_memory); else it starts without. */
double tt_engine_train_step(tt_engine *e, const int32_t *inputs, const int32_t *targets,
                            const tt_lm_opts *o, long s, bool continues, tt_lm_result *res);
/* The guarded step: when the step's loss (res->loss_sum) or the returned norm is not finite, the
 * step left the weights and moments as they were (on the GPU without a host sync inside the
 * step: templates/adam.cu), and the next step starts without Transformer-XL's memories.
 * tt_engine_nonfinite then names the first parameter (layout order) whose gradient of that step
 * holds a NaN or an infinity (on several GPUs: as this rank sees the summed gradient); 0 when
 * none does (the loss alone was not finite). */
int tt_engine_nonfinite(tt_engine *e, char *name, size_t len);

/* Whether training steps may be submitted ahead of the last one's result: on one device, not
 * for Transformer-XL (whose next step depends on this one's memories and their fate), unless
 * TT_PIPELINE=0 is in the environment. Then a step is tt_engine_submit and, later,
 * tt_engine_result (the oldest step submitted: at most two in flight, and nothing else on the
 * engine while one is), in place of tt_engine_train_step: the same bits, as the same kernels
 * run in the same order, while the host prepares the next batch as the GPU runs this one. On
 * the CPU a step runs as it is submitted (nothing to overlap; the same semantics, halt
 * included, so that the trainer's loop is the same on both).
 * halt: a step submitted before the last one's result leaves the weights as they are if that
 * one's loss or gradient was not finite (a host that then stops keeps the last step's weights
 * as the guarded step leaves them); else the step runs as after a skipped step. */
bool tt_engine_pipelined(const tt_engine *e);
void tt_engine_submit(tt_engine *e, const int32_t *inputs, const int32_t *targets,
                      const tt_lm_opts *o, long s, bool halt);
double tt_engine_result(tt_engine *e, tt_lm_result *res);

/* Transformer-XL's training memories, those the last training step left: as fp32 [layers,
 * batch, mlen, d_model] into out (when not NULL), *mem_step (may be NULL) the step that left them
 * (-1: none). Returns mlen: 0 when there are none, and always for the tensorized model. */
int tt_engine_memory(tt_engine *e, float *out, long *mem_step);
/* Makes mems ([layers, batch, mlen, d_model] fp32, mlen at most the spec's mem_len; as
 * tt_engine_memory gives them on either device) the memories step mem_step left, so that step
 * mem_step + 1 attends to them when its batch continues that step's (a resumed run's first).
 * mlen 0 or mem_step -1: none. */
void tt_engine_set_memory(tt_engine *e, const float *mems, int mlen, long mem_step);

/* Several GPUs: the optimizer's work and state sharded over the ranks (tt_gpu_lm_shard): each
 * rank clips and steps a world-th of the parameters, after a reduce-scatter of the gradients,
 * and the weights are all-gathered. tt_engine_download (every rank, together) gathers the
 * moments. Returns whether it is sharded (not on one device). */
int tt_engine_shard_optimizer(tt_engine *e);

/* Transformer-XL: the streams an evaluation reads side by side, all ranks' together (default:
 * the batch the engine was opened with), which need not be divisible by the ranks: each rank
 * reads its share of them, every token with the context it has on one device. */
void tt_engine_eval_batch(tt_engine *e, int batch);

/* Perplexity over tokens: the tensorized model in windows of seq_len advancing by stride
 * (tt_evaluate); Transformer-XL in streams with memory at the spec's eval lengths
 * (tt_evaluate_txl_cpu; stride does not apply). */
int tt_engine_evaluate(tt_engine *e, const tt_tokens *tokens, int stride, long max_tokens,
                       tt_eval_result *res, char *err, size_t errlen);

/* Using a trained model: the forward pass alone, without dropout, of inputs [batch, seq_len] (the
 * engine's batch), the last layer's output x_L into hidden [batch * seq_len, D] (fp32), for the
 * caller's output layer (tt_lm_logprobs; the engine's own is skipped). Transformer-XL: mems [L,
 * batch, mlen, D] the memory the segment attends to (mlen 0: none), and mems_out (may be NULL)
 * gets the next (as tt_engine_memory's layout); returns their length (0 for the tensorized
 * model). */
int tt_engine_forward(tt_engine *e, const int32_t *inputs, const float *mems, int mlen,
                      float *mems_out, float *hidden);

#endif
