/* The model spec: what a YAML file such as specs/ptb.yaml says, checked strictly.
 * Every key, its type, range and default is listed in the README ("Spec format"); the parser
 * rejects anything else with a file:line:col diagnostic taken from libyaml's marks. */
#ifndef TT_SPEC_H
#define TT_SPEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define TT_MAX_CUTOFFS 8
#define TT_ARCH_MAX 16
/* The most bytes a spec file may have (a spec is a few hundred; nothing needs more than a few KB),
 * and the deepest its YAML may nest (a spec nests 3 levels: section, key, list or mapping). */
#define TT_SPEC_MAX_BYTES (1u << 20)
#define TT_SPEC_MAX_DEPTH 16

typedef enum { TT_KIND_TENSORIZED, TT_KIND_TXL } tt_kind;
typedef enum { TT_POS_NONE, TT_POS_KEY } tt_position;
typedef enum { TT_PREC_FP32, TT_PREC_TF32, TT_PREC_BF16 } tt_precision;
typedef enum { TT_SCHED_COSINE, TT_SCHED_INVSQRT } tt_schedule;

typedef struct {
    tt_kind kind;
    long vocab;             /* 0: taken from the training data */
    int d_model;            /* D */
    int layers;             /* L */
    int seq_len;            /* N, the segment (tgt_len) */
    int d_inner;            /* F */
    double dropout;
    bool tie_weights;
    int n_cutoffs;          /* 0: full softmax; else adaptive softmax with these cutoffs */
    long cutoffs[TT_MAX_CUTOFFS];
    int cutoffs_line, cutoffs_col; /* 1-based mark of the cutoffs list, for later diagnostics */
    int div_val;
    /* kind: tensorized */
    int rank;               /* R */
    int cores;              /* h */
    bool causal;
    tt_position position;
    /* kind: transformer-xl */
    int n_head;
    int d_head;
    int mem_len;            /* M */
    int clamp_len;          /* 0: no clamping */
    double dropatt;
} tt_model_spec;

typedef struct {
    int batch;
    long steps;
    double lr;
    double beta1, beta2, eps, weight_decay;
    tt_schedule schedule;
    long warmup;
    double min_lr;
    double clip;            /* 0: no clipping */
    double label_smoothing;
    uint64_t seed;
    tt_precision precision;
    long eval_interval;     /* steps between validation runs; 0: only at the end */
    char *checkpoint_dir;   /* resolved against the spec's folder; NULL: no checkpoints */
    long checkpoint_interval; /* 0: only at the end (and on SIGINT/SIGTERM) */
} tt_train_spec;

/* Evaluation's segment, memory and clamp lengths: kimiyoung's eval.py runs with other values than
 * training (WT103 base: tgt_len 64, mem_len 640, clamp_len 400 against 150, 150, 0). After a
 * successful parse every field is filled; a key left out takes the model's value (seq_len,
 * mem_len, clamp_len). For kind: tensorized, tgt_len is always model.seq_len and the others 0. */
typedef struct {
    int tgt_len;            /* N at evaluation */
    int mem_len;            /* M at evaluation */
    int clamp_len;          /* 0: no clamping */
} tt_eval_spec;

typedef struct {
    char *train, *valid, *test; /* resolved against the spec's folder; NULL when absent */
} tt_data_spec;

/* How the tensorized attention runs (gen/plan.c decides auto per shape): fused, T never written
 * to memory; or materialized, T written in the storage type and its products with Wo through
 * cuBLAS. */
typedef enum { TT_ATTN_AUTO, TT_ATTN_FUSED, TT_ATTN_MATERIALIZED } tt_attention;

typedef struct {
    char arch[TT_ARCH_MAX]; /* "auto" or sm_XY / sm_XYa */
    tt_attention attention;
    int attention_tiles; /* the materialized attention's products with Wo under the causal mask
                          * in this many tiles of positions (at most N); 0: the plan's cost
                          * model chooses */
    bool tune; /* take the variants ttgen --tune chose for this card (gen/tune.h); false: the
                * plan's heuristics */
} tt_kernels_spec;

typedef struct {
    char *path;             /* as given */
    char *dir;              /* the folder relative paths are resolved against */
    char *text;             /* the file's bytes, NUL-terminated (stored in checkpoints) */
    size_t text_len;
    tt_model_spec model;
    tt_train_spec train;
    tt_eval_spec eval;
    tt_data_spec data;
    tt_kernels_spec kernels;
} tt_spec;

/* Load and check a spec. On error returns -1 and writes "file:line:col: message" to err.
 * Exit code 2 is the caller's to choose. */
int tt_spec_load(const char *path, tt_spec *spec, char *err, size_t errlen);

/* The same from memory; name is used in diagnostics, dir for relative paths. */
int tt_spec_parse(const char *text, size_t len, const char *name, const char *dir, tt_spec *spec,
                  char *err, size_t errlen);

void tt_spec_free(tt_spec *spec);

/* Write the spec with every default filled in, as YAML that tt_spec_parse reads back to the same
 * struct (the --dump stage "spec", and the copy stored beside checkpoints). */
void tt_spec_write(const tt_spec *spec, FILE *f);
/* tt_spec_write's text as a malloc'd string. */
char *tt_spec_text(const tt_spec *spec);

/* Checks that need the vocabulary size (cutoffs below it); call once vocab is known. */
int tt_spec_check_vocab(const tt_spec *spec, long vocab, char *err, size_t errlen);

const char *tt_kind_name(tt_kind k);
const char *tt_precision_name(tt_precision p);
const char *tt_schedule_name(tt_schedule s);
const char *tt_position_name(tt_position p);
const char *tt_attention_name(tt_attention a);

#endif
