/* ttgen --tune: for each kernel of a spec's plan whose template declares tunables (gen/tune.h),
 * every variant they span is built (NVRTC, in parallel, through the kernel cache), checked
 * against the CPU twin on fresh random inputs (outputs poisoned first), and timed on the GPU
 * with CUDA events after warm-up, as the trainer runs it (the attention's backward with its
 * second stream): both through the op's unit (unit.h). The fastest correct variant goes into the
 * tuning cache for this card, where tt_gpu_program_load finds it. Kernels are tuned one after
 * another, each with the variants already chosen for the kernels before it; where both of the
 * tensorized attention's strategies plan under `kernels.attention: auto`, on the fused plan,
 * then the strategy (tt_tune_strategy) with those kernels in place, then the materialized plan's
 * kernels not tuned yet where it won. */
#ifndef TT_AUTOTUNE_H
#define TT_AUTOTUNE_H

#include <stdio.h>

#include "cache.h"
#include "gpu.h"
#include "spec.h"
#include "tune.h"

typedef struct {
    int iters;       /* timed runs per measurement, the median kept (default 30) */
    int check_batch; /* sequences of the check against the CPU (0: the batch, at most 16) */
    int jobs;        /* parallel compiles (0: one per CPU) */
    long params;     /* parameters of the model, what adam is timed on (0: 2^24) */
    long vocab;      /* the vocabulary (0: the spec's model.vocab) */
    FILE *out;       /* the tables; NULL: silent */
} tt_tune_opts;

/* Tunes spec's kernels on gpu and stores the choices beside cache. -1 with a message when
 * something other than a variant failed (a variant that fails its check or does not fit is
 * reported in the table and skipped). */
int tt_tune(const tt_spec *spec, tt_gpu *gpu, const tt_cache *cache, const tt_tune_opts *o,
            char *err, size_t errlen);

/* The tensorized attention's strategy under `kernels.attention: auto` where both strategies
 * plan (tt_strategy_signature): whole training steps of each at the spec's shapes (random
 * weights and tokens, vocab words), alternating, the cost model's choice kept unless the other
 * is faster (medians of three rounds); the choice joins *so_far and the tuning cache (an entry
 * whose default variant and time are the other strategy's). 0 also where there is nothing to
 * choose, or where the other strategy does not open (said on out, nothing chosen); -1 with a
 * message. */
int tt_tune_strategy(const tt_spec *spec, tt_gpu *gpu, const tt_cache *cache, long vocab,
                     FILE *out, tt_tuning *so_far, char *err, size_t errlen);

/* What the tuner times for op's variants ("tt_mla_bwd"), or NULL when no unit runs op: every op
 * a template declares tunables for must have one (tested). */
const char *tt_tune_unit(const char *op);

/* A variant of a tunable op: the values that select it. */
typedef struct {
    char op[32];
    tt_tuning t;     /* its op's values, over the choices made before it */
    char label[96];  /* "G=2 TD=64" */
    char error[320]; /* why the plan refuses it, or (the tuner's) why it was skipped */
    int heuristic;   /* the plan's own choice */
} tt_tune_variant;

/* Every variant the tuner may choose, for each op of spec's plan on arch whose template declares
 * tunables, in the order the tuner tunes them: the product of the declared values that
 * tt_plan_build_tuned accepts, over the heuristic's choices for every other op, and the
 * heuristic's own. *v malloc'd (tt_tune_variants_free). -1 with a message when the declarations
 * or the plan cannot be read. */
int tt_tune_variants(const tt_spec *spec, const char *arch, tt_tune_variant **v, int *n,
                     char *err, size_t errlen);
void tt_tune_variants_free(tt_tune_variant *v, int n);

/* Every kernel of the variants' plans (but those with an error), once, compiled into cache in
 * jobs parallel compiles (0: one per CPU): loading a variant then finds its CUBINs there. -1 with
 * the first failure's message. */
int tt_tune_compile(const tt_spec *spec, const char *arch, const tt_tune_variant *v, int nv,
                    const tt_cache *cache, int jobs, char *err, size_t errlen);

#endif
