/* The plan: which kernel instances a spec needs, with their baked constants and launch shapes.
 * It is the second stage of the pipeline (spec -> plan -> source -> CUBIN) and is pure data:
 * the same spec and arch give the same plan, byte for byte, in tt_plan_write's output. */
#ifndef TT_PLAN_H
#define TT_PLAN_H

#include <stdio.h>

#include "spec.h"

#define TT_MAX_CONSTS 24
#define TT_NAME_MAX 128
/* layernorm_bwd runs at most this many blocks (two per SM of a 132-SM H100), each writing one
 * partial sum that colsum adds up. */
#define TT_LN_BWD_MAX_BLOCKS 264
/* The adaptive softmax and embedding run each cluster on the rows the host lists for it, their
 * count padded up to a multiple of this: a graph and a plan for each bucket, not each count. */
#define TT_ADAPTIVE_BUCKET 64

typedef struct {
    char key[24]; /* emitted as #define TT_<key> */
    long value;
} tt_const;

typedef struct {
    char op[32];                   /* kernel family and direction, e.g. "layernorm_fwd" */
    char template_file[32];        /* file in templates/ */
    char name[TT_NAME_MAX];        /* the instance's symbol: op + its constants + dtype */
    const char *dtype;             /* "f32" or "bf16": the activation storage type */
    tt_const consts[TT_MAX_CONSTS];
    int n_consts;
    unsigned block[3];
    unsigned grid[3];              /* for the spec's training batch; grid_rule says how it scales */
    char grid_rule[96];
    unsigned smem_bytes;           /* static shared memory the template declares */
    unsigned dyn_smem;             /* dynamic shared memory every launch passes (0: none) */
    char why[200];                 /* why this variant and these constants */
    char variant[256];             /* a tunable kernel's: default or tuned, and why (tune.h) */
    char strategy[192];            /* the tensorized attention's kernels: fused or materialized,
                                    * and why (the plan's cost model, or the spec) */
    char arch[16];                 /* compiled for this instead of the plan's arch ("" = the
                                    * plan's): sm_90a for kernels on Hopper's own instructions */
} tt_kernel;

struct tt_tuning;

typedef struct {
    tt_kernel *kernels;
    int n;
    char arch[16];
    const struct tt_tuning *tuning; /* while it is built: values that replace the heuristics' */
    char warning[320];              /* tt_plan_build_for_card: a tuning cache it could not read */
} tt_plan;

/* Builds the plan for spec on arch ("sm_90"). -1 with a message when no variant fits. */
int tt_plan_build(const tt_spec *spec, const char *arch, tt_plan *plan, char *err, size_t errlen);
void tt_plan_free(tt_plan *plan);

/* The plan of tt-bench --profile's one extra kernel, prof_mark (templates/prof_mark.cu), for
 * arch: a clock reading between the parts of the profiled step. No spec's plan holds it. */
int tt_plan_profile_marks(const char *arch, tt_plan *plan);

/* Whether the plan's tensorized attention is the materialized strategy (it has mla_mat_prep):
 * what the plan chose, not its note. */
int tt_plan_materialized(const tt_plan *plan);
/* Where tile t of tiles of n positions ends (its last position + 1): the materialized
 * attention's products with Wo in tiles (mla_mat_rows's TILES). */
long tt_mat_tile_end(long t, long tiles, long n);

/* Human-readable, one block per kernel; deterministic. */
void tt_plan_write(const tt_plan *plan, FILE *f);

/* The value of constant key in k, or fallback when k has none. */
long tt_kernel_const(const tt_kernel *k, const char *key, long fallback);

/* Elements from one row to the next of a [rows, cols] matrix the GPU keeps with padding (the
 * FFN's activations, the logits): cols rounded up to a multiple of 8, whole 16-byte groups at bf16
 * (32 at fp32). cuBLAS's tensor-core kernels need 16-byte aligned leading dimensions; an odd one,
 * such as the paper's F = 2100 at bf16 (4200 bytes), sends a product to a slow SIMT kernel. */
long tt_row_pitch(long cols);
/* Whether a Transformer-XL spec's attention runs fused (templates/txl_flash.cu: bf16, d_head
 * padded to at most 64), else cuBLAS's products around templates/txl_softmax.cu. */
bool tt_txl_fuses(const tt_spec *s);
/* The same for a model m trained at precision p. */
bool tt_txl_fuses_at(const tt_model_spec *m, tt_precision p);

#endif
