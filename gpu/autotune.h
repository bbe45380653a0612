/* ttgen --tune: for each kernel of a spec's plan whose template declares tunables (gen/tune.h),
 * every variant they span is built (NVRTC, in parallel, through the kernel cache), checked
 * against the CPU twin on fresh random inputs (outputs poisoned first), and timed on the GPU
 * with CUDA events after warm-up, as the trainer runs it (the attention's backward with its
 * second stream). The fastest correct variant goes into the tuning cache for this card, where
 * tt_gpu_program_load finds it. Kernels are tuned one after another, each with the variants
 * already chosen for the kernels before it. */
#ifndef TT_AUTOTUNE_H
#define TT_AUTOTUNE_H

#include <stdio.h>

#include "cache.h"
#include "gpu.h"
#include "spec.h"

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
int tt_tune(const tt_spec *spec, const tt_gpu *gpu, const tt_cache *cache, const tt_tune_opts *o,
            char *err, size_t errlen);

/* What the tuner times for op's variants ("tt_mla_bwd"), or NULL when it has no harness for op:
 * every op a template declares tunables for must have one (tested). */
const char *tt_tune_unit(const char *op);

#endif
