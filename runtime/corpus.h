/* Word-level corpora in the PTB/WikiText format (whitespace-separated tokens, one <eos> per line,
 * plain or gzip). This part counts the vocabulary of a file, for specs whose vocab is `data`. */
#ifndef TT_CORPUS_H
#define TT_CORPUS_H

#include <stddef.h>

/* Distinct whitespace-separated words of path, plus <eos>. -1 with "PATH: reason" in err. */
int tt_corpus_count_vocab(const char *path, long *vocab, char *err, size_t errlen);

#endif
