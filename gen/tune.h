/* Kernel autotuning, the part that needs no GPU: the tunable parameters templates declare, the
 * variants of a plan they span, and the tuning cache that keeps, per card and kernel signature,
 * the variant `ttgen --tune` found fastest (gpu/autotune.c measures; this file decides what a
 * later plan uses).
 *
 * A template declares a tunable constant of one of its kernels on a line of its own:
 *     // ttgen: tunable OP KEY V1 V2 ...
 * The plan uses its own heuristic for KEY unless a tuning names a value; a value that does not
 * fit the shapes (shared memory, tiles wider than the model) makes the plan fail, and the tuner
 * skips that variant.
 *
 * The tuning cache is one text file, tuning.tsv, in the kernel cache's folder: a line per (card,
 * signature) with the chosen values and the times that chose them. A kernel's signature is
 * everything that decides what a variant computes and how fast: op, storage type, arch, the
 * spec's training batch, the kernel's other constants, and a hash of its source with the
 * tunables left out, so that an edited template is tuned again, never trusted stale. */
#ifndef TT_TUNE_H
#define TT_TUNE_H

#include "plan.h"
#include "spec.h"

#define TT_TUNE_VALUES 8
#define TT_TUNE_KEYS 4

/* The tensorized attention's strategy under `kernels.attention: auto`, as a tuning sets it:
 * attention MAT=1 materialized, MAT=0 fused (gpu/autotune.c times whole training steps of both;
 * the plan's cost model decides where no tuning does). */
#define TT_STRATEGY_OP "attention"
#define TT_STRATEGY_KEY "MAT"

typedef struct {
    char template_file[32]; /* the template that declares it */
    char op[32];
    char key[24];
    long values[TT_TUNE_VALUES];
    int n_values;
} tt_tunable;

/* The tunables every template declares (from dir, or the embedded copies when dir is NULL):
 * *out malloc'd, *n of them. -1 with a message on a malformed declaration. */
int tt_tunables_load(const char *template_dir, tt_tunable **out, int *n, char *err, size_t errlen);

/* One constant a tuning sets: op's KEY = value. */
typedef struct {
    char op[32];
    char key[24];
    long value;
} tt_tune_choice;

typedef struct tt_tuning {
    tt_tune_choice *c;
    int n;
} tt_tuning;

void tt_tuning_set(tt_tuning *t, const char *op, const char *key, long value);
/* The value t sets for op's key, or fallback. */
long tt_tuning_get(const tt_tuning *t, const char *op, const char *key, long fallback);
int tt_tuning_has(const tt_tuning *t, const char *op, const char *key);
void tt_tuning_free(tt_tuning *t);

/* The plan of tt_plan_build with t's values in place of the heuristics' (t may be NULL). -1 with
 * a message when a value does not fit. */
int tt_plan_build_tuned(const tt_spec *spec, const char *arch, const tt_tuning *t, tt_plan *plan,
                        char *err, size_t errlen);

/* The signature of kernel k of a plan of spec (see above) into out; tunables: those of
 * tt_tunables_load. -1 with a message when its source cannot be emitted. */
int tt_kernel_signature(const tt_kernel *k, const tt_spec *spec, const char *arch,
                        const tt_tunable *tunables, int n_tunables, char *out, size_t n,
                        char *err, size_t errlen);

/* The signature of spec's attention strategy on arch (its tuning entry's): the shapes and a
 * hash of both strategies' attention kernels' signatures, so that an edited template or other
 * shapes miss the entry. Empty (0) where there is nothing to choose: Transformer-XL, a fixed
 * kernels.attention, or a strategy that does not plan (T over 4 GiB, tiles that do not fit). -1
 * with a message when a source cannot be emitted. */
int tt_strategy_signature(const tt_spec *spec, const char *arch, char *out, size_t n, char *err,
                          size_t errlen);

/* Whether a and b are the same instance: name and every constant (a tunable that is not part of
 * the name, such as adam's THREADS, makes variants of one name). */
int tt_kernel_same(const tt_kernel *a, const tt_kernel *b);

/* "G=2 TD=64": k's values of op's tunables. */
void tt_kernel_variant(const tt_kernel *k, const tt_tunable *tunables, int n_tunables, char *out,
                       size_t n);

/* A line of the tuning cache. */
typedef struct {
    char card[256];
    char signature[320];
    char variant[160];         /* "G=2 TD=64"; a product's: its cuBLASLt algorithm, in hex */
    char default_variant[160]; /* the plan's own choice when it was tuned (the heuristic's) */
    double best_ms, default_ms;
    char unit[64];             /* what was timed, e.g. "tt_mla_bwd"; a product's algorithm */
    /* the attention strategy's entry (TT_STRATEGY_OP): variant "MAT=1" or "MAT=0", the chosen;
     * default_variant and default_ms the other strategy's, both timed; unit what was timed and
     * the cost model's choice */
    char date[16];
} tt_tune_entry;

/* Today as YYYY-MM-DD (UTC), for an entry's date. */
void tt_tune_today(char out[16]);
/* The tuning cache's file in the kernel cache folder (malloc'd). */
char *tt_tuning_path(const char *cache_dir);
/* Its entries (*n of them; a missing file is none). -1 with a message on a malformed line. */
int tt_tuning_load(const char *path, tt_tune_entry **out, int *n, char *err, size_t errlen);
/* Adds e, replacing the entry of the same card and signature, atomically. */
int tt_tuning_store(const char *path, const tt_tune_entry *e, char *err, size_t errlen);
/* The tuning cache's exclusive lock (a file beside it), for a reader that decides what to add
 * from what it reads (the matrix products: the first process to time a product records it, and
 * one that comes later takes that): the descriptor to pass to tt_tuning_unlock, or -1 with a
 * message. tt_tuning_store_locked is tt_tuning_store under a lock the caller holds. */
int tt_tuning_lock(const char *path, char *err, size_t errlen);
void tt_tuning_unlock(int lock);
int tt_tuning_store_locked(const char *path, const tt_tune_entry *e, char *err, size_t errlen);
/* Parses a variant string ("G=2 TD=64") into t as op's values. -1 when malformed. */
int tt_variant_parse(const char *variant, const char *op, tt_tuning *t);

/* The plan for spec on arch as card runs it: tt_plan_build's, with the variants the tuning cache
 * at tuning_path holds for (card, signature). Each tunable kernel's `variant` note says what was
 * chosen and why. card NULL or tuning_path NULL (or TT_TUNE=0 in the environment): the plan's
 * own heuristics, said so in the notes. A tuning cache that cannot be read leaves the
 * heuristics too, and plan->warning says why (for the caller to print once). */
int tt_plan_build_for_card(const tt_spec *spec, const char *arch, const char *card,
                           const char *tuning_path, tt_plan *plan, char *err, size_t errlen);

#endif
