/* libFuzzer target: the corpus reader (plain text or gzip): the vocabulary of a training file,
 * then its token ids under that vocabulary (no cache). Every id must be in the vocabulary. */
#include <string.h>

#include "corpus.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size, ".txt");
    tt_vocab v;
    char err[512];
    if (tt_vocab_build(path, NULL, &v, err, sizeof err) != 0) {
        if (strchr(err, '\n')) abort();
        return 0;
    }
    tt_tokens t;
    if (tt_corpus_load(path, &v, NULL, &t, err, sizeof err) == 0) {
        for (long i = 0; i < t.n; i++)
            if (t.ids[i] < 0 || t.ids[i] >= v.n) abort();
        tt_tokens_free(&t);
    } else if (strchr(err, '\n')) {
        abort();
    }
    tt_vocab_free(&v);
    return 0;
}
