/* libtt: a trained model of tt-train (the tensorized Transformer or Transformer-XL) in another
 * program. Open a model from its spec and a checkpoint, on the CPU or a GPU; map words to token
 * ids and back; score a token sequence into per-token log-probabilities; ask for the
 * distribution of the next token; generate. tt-generate and tt-eval --text are built on it.
 *
 * Every call that can fail returns TT_OK (0) or an error code, with a one-line message in *err
 * when err is not NULL; nothing here exits the process or prints, not even on a failure inside
 * (a CUDA error, memory exhausted: TT_ERR_INTERNAL, after which the model can only be closed,
 * and what it held may not all be released). A model is not thread-safe: one thread at a time
 * per model (separate models are independent).
 *
 * Token ids are the checkpoint's vocabulary (its vocab.txt): 0 .. tt_vocab_size() - 1, with
 * <eos> at the end of every line of the training text. Log-probabilities are natural logs.
 * A tensorized model with `causal: false` sees every position of its window: its figures are
 * not a language model's, and a window the text does not fill reads padding in the rest. */
#ifndef TT_H
#define TT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define TT_API __attribute__((visibility("default")))
#else
#define TT_API
#endif

#define TT_API_VERSION 1

typedef enum {
    TT_OK = 0,
    TT_ERR_ARGUMENT = 1,   /* a NULL where a value is needed, a size or option out of range */
    TT_ERR_IO = 2,         /* a file that cannot be read */
    TT_ERR_SPEC = 3,       /* a spec that is not valid */
    TT_ERR_CHECKPOINT = 4, /* a checkpoint that is damaged or of another spec or vocabulary */
    TT_ERR_DEVICE = 5,     /* no CUDA device (or driver) where one was asked for */
    TT_ERR_TOKEN = 6,      /* a token id outside the vocabulary */
    TT_ERR_INTERNAL = 7,   /* a failure inside (a CUDA error, memory exhausted, a broken
                            * invariant): the model cannot be used again, only closed */
} tt_status;

typedef struct {
    tt_status code;
    char message[1024];
} tt_error;

typedef struct tt_model tt_model;

/* Opens the model that spec_path describes with the weights of checkpoint: a model.safetensors,
 * a step folder, or a checkpoint folder (its `latest`); the vocabulary is the vocab.txt beside
 * the weights, so the training corpus need not be there. device: "cpu", "cuda", or "auto" (the
 * GPU when there is one; NULL: auto). The weights are checked as tt-eval checks them (their
 * SHA-256, every value finite, the spec's shapes and the vocabulary's hash). The model runs in
 * fp32 on either device, whatever train.precision says (a bf16-trained model's weights are
 * fp32), so that both give the same numbers to float rounding. */
TT_API tt_status tt_open(tt_model **model, const char *spec_path, const char *checkpoint,
                         const char *device, tt_error *err);
TT_API void tt_close(tt_model *model);

/* What the model is: the size of its vocabulary, the tokens one window or segment holds
 * (seq_len), whether it is Transformer-XL, where it runs ("the cpu", or the GPU's name), and the
 * checkpoint's training step. */
TT_API long tt_vocab_size(const tt_model *model);
TT_API int tt_context_length(const tt_model *model);
TT_API int tt_is_transformer_xl(const tt_model *model);
TT_API const char *tt_device(const tt_model *model);
TT_API long tt_checkpoint_step(const tt_model *model);

/* Words to ids, as tt-train reads its text: split on whitespace (spaces, tabs, newlines), each
 * word its id; a word not in the vocabulary becomes <unk> and is counted in *unknown (may be
 * NULL). eos_per_line 1: an <eos> after every line's words, blank lines too. Text that no corpus
 * may hold (invalid UTF-8, a line over 1 MiB) is TT_ERR_ARGUMENT, naming its line. At most cap ids are written;
 * *n gets how many the text holds (more than cap: TT_ERR_ARGUMENT; ids NULL: only counted). */
TT_API tt_status tt_tokenize(const tt_model *model, const char *text, int eos_per_line,
                             int32_t *ids, size_t cap, size_t *n, size_t *unknown, tt_error *err);
/* The word of id (NULL when id is outside the vocabulary), and the ids of <eos> and <unk>. */
TT_API const char *tt_word(const tt_model *model, int32_t id);
TT_API int32_t tt_eos_id(const tt_model *model);
TT_API int32_t tt_unk_id(const tt_model *model);

/* Log-probabilities of ids[1] .. ids[n-1], each given the ids before it: logprob[i - 1] =
 * log p(ids[i] | ids[0..i-1]) (n - 1 values; n >= 2). The tensorized model reads windows of
 * seq_len tokens that advance by stride (0: seq_len; at most seq_len), each scoring its last
 * stride predictions (the first window all of its own), so every token is scored once with at
 * least seq_len - stride tokens of context, as tt-eval --stride does; Transformer-XL reads
 * segments of seq_len that attend to the memories of those before (stride does not apply). */
TT_API tt_status tt_score(tt_model *model, const int32_t *ids, size_t n, int stride,
                          double *logprob, tt_error *err);

/* The distribution of the token after ids[0..n-1] (n >= 1): logprob[v] = log p(v | ids) for
 * every v of the vocabulary (tt_vocab_size() values). The tensorized model reads the last
 * seq_len tokens (fewer when n is smaller: the positions they fill); Transformer-XL all of them,
 * seq_len at a time with its memory. */
TT_API tt_status tt_next(tt_model *model, const int32_t *ids, size_t n, double *logprob,
                         tt_error *err);

typedef struct {
    double temperature; /* 0: greedy (the most likely token); else logits / temperature */
    int top_k;          /* > 0: sample among the k most likely tokens only */
    double top_p;       /* in (0, 1): among the fewest most likely tokens whose mass reaches p */
    uint64_t seed;      /* the same seed, prompt and options: the same tokens, on either device */
} tt_sample_opts;

/* Called with each generated token as it comes; a non-zero return stops the generation. */
typedef int (*tt_token_fn)(void *ctx, int32_t id, const char *word);

/* Up to k tokens after prompt[0..n-1] (n >= 1) into out (may be NULL), each also passed to fn
 * (may be NULL) as it comes; *made (may be NULL) gets how many were made. The tensorized model
 * predicts each from the window of the last seq_len tokens (on the CPU a row of each layer a
 * token while the window fills; the window recomputed once it slides, and on the GPU);
 * Transformer-XL reads the prompt's whole segments, carrying its memory from one to the next,
 * and then goes a token at a time, each new token one row of each layer that attends to the
 * memory and to the cached layer inputs of the segment's tokens before it (the numbers of
 * reading the text in segments, as tt_next does). A prompt longer than the model can take is
 * read whole by Transformer-XL and cut to its last seq_len tokens by the tensorized model. */
TT_API tt_status tt_generate(tt_model *model, const int32_t *prompt, size_t n, size_t k,
                             const tt_sample_opts *opts, int32_t *out, size_t *made,
                             tt_token_fn fn, void *ctx, tt_error *err);

#ifdef __cplusplus
}
#endif

#endif
