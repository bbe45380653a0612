/* Units: one home per generated kernel's check against its CPU twin (cpu/cpu_ops.h,
 * cpu/cpu_txl.h). A unit builds random inputs for a spec (rounded to what the device stores), the
 * twin's results on the first sequences of the batch, runs its kernels as the trainer runs them,
 * and holds every output to the tolerance of how it is computed: the whole tensor's relative L2
 * error, and each row's where rows are positions. The tuner (autotune.c) checks and times each
 * variant through the units; the GPU tests check every unit on hand-written configs, on the
 * shipped specs' plans and on every variant the tuner may choose, and plant errors to show that
 * the checks catch them. */
#ifndef TT_UNIT_H
#define TT_UNIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "gpu.h"
#include "launch.h"
#include "spec.h"

/* An error planted on purpose, to show that a check would catch a kernel that made it: the check
 * of a correct kernel must fail with it. ZERO_ROWS zeroes rows 0 and 1 of every sequence of the
 * GPU's outputs before they are compared; the others recompute the CPU twin with cpu_plant's
 * error (cpu_ops.h) and compare the GPU's outputs with that. */
typedef enum {
    TT_PLANT_NONE,
    TT_PLANT_ZERO_ROWS,
    TT_PLANT_MASK_AHEAD,
    TT_PLANT_KEY_STRICT,
    TT_PLANT_DROPOUT_FWD_UNSCALED,
    TT_PLANT_DROPOUT_BWD_UNSCALED,
    TT_PLANT_TXL_SHIFT, /* Transformer-XL's relative shift a column late */
    TT_PLANTS
} tt_plant;

const char *tt_plant_name(tt_plant p);

typedef struct {
    int check;      /* sequences the check runs on (<= 0 or more than the batch: the batch) */
    uint64_t seed;  /* of the random inputs */
    long params;    /* adam and cast: the elements timed (0: 2^24) */
    long vocab;     /* the vocabulary (0: the spec's model.vocab) */
    int tail_rows;  /* LayerNorm and the FFN: rows checked past the sequences (a partial block) */
    int ld_pad;     /* LayerNorm, embedding and gather: D-wide rows this many elements (a multiple
                     * of 8) wider apart than the trainer keeps them, the padding NaN */
} tt_unit_opts;

/* A bound an output is held to, the one nearest to failing of its kind. */
typedef struct {
    double err, tol;    /* the error (relative L2, ulps, or elements that differ) and its bound */
    const char *tensor; /* the output; NULL: no output is held to a bound of this kind */
    long row;           /* the row, for a per-row bound; else -1 */
} tt_unit_bound;

typedef struct {
    double ratio;        /* the largest error over its bound: <= 1 passes; infinite for NaN, an
                          * unwritten element, padding written, or a difference where none is
                          * allowed */
    tt_unit_bound whole; /* over a whole tensor */
    tt_unit_bound row;   /* over a row of positions */
    char note[192];      /* what failed that is not a number ("dqkv[17] is nan") */
} tt_unit_result;

typedef struct tt_unit tt_unit;
struct tt_unit_impl;

typedef struct {
    const char *name;              /* "mla_bwd" */
    const char *const *ops;        /* the plan's ops it runs, NULL-terminated; a plan without
                                    * ops[0] has no use for it */
    const char *timed;             /* the launcher the tuner times: "tt_mla_bwd" */
    const char *measure;           /* what its errors count: "rel. error", "ulps", "differ" */
    unsigned plants;               /* 1 << p for each plant that applies (MASK_AHEAD and
                                    * KEY_STRICT only where the spec is causal) */
    bool needs_vocab;              /* its inputs are as many as the vocabulary's words */
    const char *slow_twin;         /* "the attention's CPU twin" where the twin takes seconds */
    const struct tt_unit_impl *impl;
} tt_unit_desc;

/* Every unit, in the order the tuner tunes their ops. */
extern const tt_unit_desc tt_units[];
extern const int tt_n_units;

/* The unit that runs op, or NULL. */
const tt_unit_desc *tt_unit_of_op(const char *op);
/* Whether plan runs the unit's kernels. */
bool tt_unit_in_plan(const tt_unit_desc *d, const tt_plan *plan);
/* Whether plant p applies to the unit on spec. */
bool tt_unit_plants(const tt_unit_desc *d, const tt_spec *spec, tt_plant p);

/* Inputs, device buffers and the CPU twin's results for spec (kept by pointer: it must outlive
 * the unit). */
tt_unit *tt_unit_init(const tt_unit_desc *d, const tt_spec *spec, const tt_unit_opts *o);
void tt_unit_free(tt_unit *u);
const tt_unit_desc *tt_unit_desc_of(const tt_unit *u);
/* What the tuner prints after "timing tt_mla_fwd": " at batch 60, checked against the CPU at
 * batch 16". */
void tt_unit_describe(const tt_unit *u, char *out, size_t n);
/* Scratch enough for p's kernels at the spec's batch: call before tt_unit_run with p. */
void tt_unit_fit(tt_unit *u, const tt_gpu_program *p);
/* One run at the spec's batch as the trainer runs it, queued on gpu's streams (for timing). */
void tt_unit_run(const tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu);
/* p's kernels against the CPU twin (with plant's error; TT_PLANT_NONE: as it is), outputs
 * poisoned first (all-ones bits: NaN) or set to what they add into. */
tt_unit_result tt_unit_check(tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu, tt_plant plant);
/* The bound that decided r, as text ("dqkv row 17: rel. error 5.1e-02 over its bound 4e-02"), or
 * its note; measure: the unit's. */
void tt_unit_verdict(const tt_unit_result *r, const char *measure, char *out, size_t n);
/* Runs the check's launch twice: NULL when every output has the same bits both times, else the
 * name of the first that differs. */
const char *tt_unit_differs_twice(tt_unit *u, const tt_gpu_program *p, const tt_gpu *gpu);

/* --- what the units are built from, for the tests' checks of kernels no unit runs ---------- */

/* n draws of N(0, std^2) from (seed, stream), rounded to bf16 when bf16. */
void tt_randn(float *x, size_t n, float std, uint64_t seed, uint64_t stream, int bf16);
/* x rounded in place to what the device holds in the storage type (bf16: to nearest even). */
void tt_round_storage(float *x, size_t n, int bf16);
/* New device memory of bytes, every bit set (NaN in fp32 and bf16); cudaFree it. */
void *tt_gpu_poisoned(size_t bytes);
/* [rows, cols] into new device memory with rows ld apart, the padding NaN; cudaFree it. */
void *tt_gpu_upload_rows(const float *x, long rows, long cols, long ld, int bf16);
/* The [rows, cols] values of device rows ld apart (malloc'd); *written (may be NULL) counts the
 * padding elements that are not NaN any more, and *at the first of them. */
float *tt_gpu_download_rows(const void *d, long rows, long cols, long ld, int bf16, long *written,
                            long *at);
/* got [rows, cols] against want: the whole tensor's relative L2 error (against max(||want||,
 * floor); floor 0: ||want||) and, with row_tol > 0, each row's against max(its reference's norm,
 * 3e-2 x the RMS of the reference's row norms), into r (the worst of each kind kept, r->ratio the
 * largest error over its bound). NaN anywhere fails. */
void tt_compare(tt_unit_result *r, const char *tensor, const float *got, const float *want,
                long rows, long cols, double tol, double row_tol, double floor);
/* Units in the last place between two floats (0: the same bits). */
long tt_ulps_apart(float a, float b);
/* A dropout site of a check: p, a fixed step in new device memory (*step, to cudaFree), seed. */
tt_dropout tt_check_dropout(float p, uint64_t seed, uint32_t site, unsigned long long **step);
/* The mask and output of cpu_dropout_fwd for drop's draws (its step read back from the device). */
void tt_cpu_dropout(float *y, uint8_t *mask, const float *x, long n, tt_dropout drop);

#endif
