/* Checkpoints. A checkpoint folder holds step-NNNNNNNN/ folders, each with model.safetensors (the
 * weights under MODEL.md's names; metadata: the spec, the vocabulary's SHA-256, the step),
 * optim.safetensors (Adam's moments "exp_avg.NAME", "exp_avg_sq.NAME"), state.safetensors (what
 * else the next training step reads: Transformer-XL's memories "mems.L", and tt-train's early
 * stopping) and vocab.txt, plus a file `latest` naming the newest. A step folder is written
 * under a temporary name and renamed, and `latest` is replaced atomically after it, so a crash
 * leaves the previous checkpoint intact. */
#ifndef TT_CHECKPOINT_H
#define TT_CHECKPOINT_H

#include <stddef.h>
#include <stdint.h>

#include "corpus.h"
#include "model.h"
#include "spec.h"

/* The training state besides weights and moments that a resumed run needs to go on as the run
 * that never stopped (state.safetensors). The batch of a step and its dropout masks are functions
 * of the step and the seed, so there is no data position or generator state to keep. */
typedef struct {
    long step;
    uint64_t seed;         /* train.seed of the run that wrote it */
    long mem_step;         /* the step whose segments the memories follow; -1: no memories */
    int mem_len;           /* rows of memory per sequence (0: none) */
    int batch;             /* sequences the memories are of */
    double best_valid_ppl; /* the best validation perplexity so far; INFINITY: none yet */
    long best_step, stale; /* its step (0: none), validations since without improvement */
    long skipped;          /* steps whose loss or gradient was not finite, skipped so far */
    float *mems;           /* Transformer-XL's memories [layers, batch, mem_len, d_model] */
} tt_train_state;

typedef struct {
    const tt_spec *spec;
    const tt_layout *layout;
    const tt_vocab *vocab;
    const float *w, *m, *v; /* weights and Adam moments (layout->n_floats each); m, v may be NULL */
    long step;
    const tt_train_state *state; /* NULL: no state.safetensors (weights only) */
} tt_checkpoint;

/* Before a run writes checkpoints under dir: dir created (with its parents) and written to (a
 * file made and removed), so that a folder the run cannot use is found before it trains, not
 * at its first save; and what an interrupted run of an earlier process left there put right:
 * a step folder's temporary (step-N.tmp.PID) or latest's removed, and a step folder moved
 * aside while its replacement was written (step-N.old.PID) put back where that replacement
 * never arrived, else removed, all for PIDs no longer running. *cleaned (may be NULL): how many.
 * -1 with a line in err (an empty path, a folder that cannot be made or written). */
int tt_checkpoint_prepare(const char *dir, int *cleaned, char *err, size_t errlen);

/* Writes ck under dir; the step folder's path goes to out (may be NULL). */
int tt_checkpoint_save(const char *dir, const tt_checkpoint *ck, char *out, size_t outlen,
                       char *err, size_t errlen);

/* The model.safetensors that path names: the file itself, a step folder, or a checkpoint folder
 * (its latest). malloc'd; NULL with a message when there is none. */
char *tt_checkpoint_model_file(const char *path, char *err, size_t errlen);

/* Loads the weights of model_file into w after checking that its spec's model section matches
 * spec's (dropout and vocab aside), that every tensor of the layout is there with its shape and
 * nothing else is, and, when vocab is not NULL, that the vocabulary's hash matches. The first
 * mismatch is the error. *step gets the checkpoint's step.
 * A file without tt's metadata is a state_dict PyTorch saved (MODEL.md section 4's names): its
 * tensors are checked by name and shape against spec's layout (any float dtype; with tied weights
 * the output layer's copies may stand for, or repeat, the embedding's; Transformer-XL's buffer
 * pos_emb.inv_freq may be there), its vocabulary cannot be checked, and *step is 0. */
int tt_checkpoint_load(const char *model_file, const tt_spec *spec, const tt_layout *layout,
                       const tt_vocab *vocab, float *w, long *step, char *err, size_t errlen);

/* Loads the Adam moments saved beside model_file. */
int tt_checkpoint_load_optim(const char *model_file, const tt_layout *layout, float *m, float *v,
                             char *err, size_t errlen);

/* Reads the state.safetensors beside model_file into state after checking everything: its
 * format, that each number parses whole and is in range (mem_len at most layout's, mem_step the
 * step or -1), and that it holds the memories mems.0 .. mems.L-1 of shape [batch, mem_len,
 * d_model], finite, when mem_len > 0 and no other tensor. state->mems is malloc'd (NULL when
 * mem_len is 0); the caller frees it. Returns 0; -1 with one line naming the file in err; or a
 * note in err (one line naming the file) with what can still be used: 1 when there is no
 * state.safetensors (a checkpoint written before it existed: state says nothing is known, no
 * memories, no best validation), 2 when its memories are of another batch than `batch` (they
 * are dropped, the rest is read). */
int tt_checkpoint_load_state(const char *model_file, const tt_layout *layout, int batch,
                             tt_train_state *state, char *err, size_t errlen);

#endif
