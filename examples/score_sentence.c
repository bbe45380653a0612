/* score_sentence: a program of its own that uses libtt (include/tt.h) to score a sentence with
 * a model tt-train trained: each word's log-probability given the words before it, then the
 * sentence's total and its perplexity, as tt-eval --text scores a one-line file.
 *   score_sentence SPEC CHECKPOINT "a sentence" [DEVICE]     DEVICE: cpu (default), cuda, auto
 * Build it against an installed libtt with examples/CMakeLists.txt, or with pkg-config:
 *   cc score_sentence.c $(pkg-config --cflags --libs tt) -lm -o score_sentence
 * Exit codes: 0 done, 1 an error (libtt's one-line message on standard error), 2 bad usage. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include <tt.h>

int main(int argc, char **argv)
{
    if (argc < 4 || argc > 5) {
        fprintf(stderr, "usage: score_sentence SPEC CHECKPOINT \"a sentence\" [cpu|cuda|auto]\n");
        return 2;
    }
    const char *spec = argv[1], *checkpoint = argv[2], *sentence = argv[3];
    const char *device = argc == 5 ? argv[4] : "cpu";

    /* Every libtt call that can fail returns TT_OK or an error code, and fills err with a
     * one-line message; the program only has to print it. */
    tt_model *model = NULL;
    int32_t *ids = NULL;
    double *logprob = NULL;
    tt_error err;
    int status = 1;
    if (tt_open(&model, spec, checkpoint, device, &err) != TT_OK) goto fail;

    /* The sentence as the model read a line of its training text: after the <eos> that ended
     * the line before, its words, then its own <eos> (eos_per_line 1). The first call only
     * counts the tokens; the second writes them after the leading <eos>. */
    size_t n = 0, unknown = 0;
    if (tt_tokenize(model, sentence, 1, NULL, 0, &n, NULL, &err) != TT_OK) goto fail;
    if (n == 0) {
        fprintf(stderr, "score_sentence: the sentence has no words\n");
        status = 2;
        goto done;
    }
    ids = malloc((n + 1) * sizeof *ids);
    logprob = malloc(n * sizeof *logprob);
    if (!ids || !logprob) {
        fprintf(stderr, "score_sentence: out of memory\n");
        goto done;
    }
    ids[0] = tt_eos_id(model);
    if (tt_tokenize(model, sentence, 1, ids + 1, n, &n, &unknown, &err) != TT_OK) goto fail;
    if (unknown)
        fprintf(stderr, "note: %zu word%s not in the vocabulary, scored as <unk>\n", unknown,
                unknown == 1 ? " is" : "s are");

    /* logprob[i] = log p(ids[i + 1] | ids[0..i]): one value for each token after the first.
     * Stride 0 reads the text in windows of the model's seq_len tokens. */
    if (tt_score(model, ids, n + 1, 0, logprob, &err) != TT_OK) goto fail;

    printf("%zu tokens on %s (checkpoint step %ld)\n", n, tt_device(model),
           tt_checkpoint_step(model));
    double total = 0;
    for (size_t i = 0; i < n; i++) {
        printf("  %-20s %10.4f\n", tt_word(model, ids[i + 1]), logprob[i]);
        total += logprob[i];
    }
    /* Natural logs: the perplexity is exp of the mean negative log-probability per token. */
    printf("log-probability %.12g\n", total);
    printf("perplexity %.4f\n", exp(-total / (double)n));
    status = 0;
    goto done;
fail:
    fprintf(stderr, "score_sentence: %s\n", err.message);
done:
    free(ids);
    free(logprob);
    tt_close(model);
    return status;
}
