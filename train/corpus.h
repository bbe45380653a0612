/* Word-level corpora in the PTB/WikiText format: whitespace-separated tokens, one <eos> per line,
 * plain or gzip. The vocabulary comes from the training split, ordered by frequency (descending)
 * and then bytewise; words outside it map to <unk>. Token ids of a split are cached in a binary
 * file keyed by a hash of the corpus and the vocabulary, and reused on the next run. Every
 * problem with a file ends in one line naming the file (and line) and the problem. */
#ifndef TT_CORPUS_H
#define TT_CORPUS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Distinct whitespace-separated words of path, plus <eos> (and <unk> when absent): the size of
 * the vocabulary tt_vocab_build would make. -1 with "PATH: reason" in err. */
int tt_corpus_count_vocab(const char *path, long *vocab, char *err, size_t errlen);

typedef struct {
    long n;             /* number of words */
    char **words;       /* id -> word (NUL-terminated) */
    long *counts;       /* id -> occurrences in the training split */
    long eos, unk;      /* ids of <eos> and <unk> */
    uint8_t hash[32];   /* SHA-256 of the words in id order, each followed by '\n' */
    /* word -> id lookup (open addressing); private */
    long *table;
    size_t table_cap;
} tt_vocab;

/* Builds the vocabulary of a training split: through the cache in cache_dir (NULL: none), an
 * entry keyed by the file's identity (its real path, size, modification time, device and inode)
 * that holds the words and their counts, so that a WikiText-103-sized text is not counted again
 * on every start. */
int tt_vocab_build(const char *train_path, const char *cache_dir, tt_vocab *v, char *err, size_t errlen);
/* Reads / writes the vocabulary as text: one word per line in id order (vocab.txt beside a
 * checkpoint). Counts are not stored: a loaded vocabulary has counts NULL. */
int tt_vocab_save(const tt_vocab *v, const char *path, char *err, size_t errlen);
int tt_vocab_load(const char *path, tt_vocab *v, char *err, size_t errlen);
long tt_vocab_id(const tt_vocab *v, const char *word, size_t len); /* -1 if absent */
void tt_vocab_free(tt_vocab *v);

typedef struct {
    int32_t *ids; /* read-only where they come mapped from the cache */
    long n;
    void *map;      /* the cache file's mapping ids lie in (NULL: ids is allocated) */
    size_t map_len;
} tt_tokens;

/* Token ids of a split (any of train/valid/test) under vocabulary v, through the id cache in
 * cache_dir (NULL: no cache): an entry keyed by the file's identity and the vocabulary, mapped
 * on a hit (after checking its CRC-32 and every id's range), written on a miss. */
int tt_corpus_load(const char *path, const tt_vocab *v, const char *cache_dir, tt_tokens *out,
                   char *err, size_t errlen);
void tt_tokens_free(tt_tokens *t);

/* The ids of a text of len bytes read as a split is read (whitespace-separated words, each line,
 * blank ones included, ending in <eos> when eos; words outside v as <unk>, counted in *unknown,
 * which may be NULL): up to cap of them into ids (may be NULL), and how many the text holds in
 * *n. -1 with "NAME:LINE: ..." in err where the text is not one a corpus may be (a NUL byte,
 * invalid UTF-8, a line over 1 MiB). */
int tt_text_ids(const char *name, const char *text, size_t len, const tt_vocab *v, bool eos,
                int32_t *ids, size_t cap, size_t *n, size_t *unknown, char *err, size_t errlen);

/* A training batch of t: B contiguous streams of the token sequence; step s (1-based) reads
 * segment (s-1) mod segments of each, inputs [B, n] and their targets (the next tokens): a
 * function of the step alone, so a resumed run reads what the first would have. Returns
 * whether each row continues the same row of step s - 1 (Transformer-XL's memory). t must hold
 * at least batch * (n + 1) tokens. */
bool tt_tokens_batch(const tt_tokens *t, int batch, int n, long step, int32_t *in, int32_t *tg);

#endif
