/* Reads a word-level corpus through zlib (which passes plain files through unchanged). */
#include "corpus.h"

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "util.h"

/* An open-addressing set of words; FNV-1a hashes. */
typedef struct {
    char **slot;
    size_t cap, n;
} word_set;

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

static void set_add(word_set *ws, const char *w, size_t n);

static void set_grow(word_set *ws)
{
    word_set big = {tt_xcalloc(ws->cap ? ws->cap * 2 : 1024, sizeof(char *)), ws->cap ? ws->cap * 2 : 1024, 0};
    for (size_t i = 0; i < ws->cap; i++)
        if (ws->slot[i]) {
            set_add(&big, ws->slot[i], strlen(ws->slot[i]));
            free(ws->slot[i]);
        }
    free(ws->slot);
    *ws = big;
}

static void set_add(word_set *ws, const char *w, size_t n)
{
    if (2 * (ws->n + 1) > ws->cap) set_grow(ws);
    size_t i = fnv1a(w, n) & (ws->cap - 1);
    while (ws->slot[i]) {
        if (strlen(ws->slot[i]) == n && memcmp(ws->slot[i], w, n) == 0) return;
        i = (i + 1) & (ws->cap - 1);
    }
    char *c = tt_xmalloc(n + 1);
    memcpy(c, w, n);
    c[n] = '\0';
    ws->slot[i] = c;
    ws->n++;
}

static void set_free(word_set *ws)
{
    for (size_t i = 0; i < ws->cap; i++) free(ws->slot[i]);
    free(ws->slot);
}

static int is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }

int tt_corpus_count_vocab(const char *path, long *vocab, char *err, size_t errlen)
{
    gzFile g = gzopen(path, "rb");
    if (!g) return tt_errf(err, errlen, "%s: cannot open: %s", path, strerror(errno ? errno : ENOENT));
    gzbuffer(g, 1 << 20);
    word_set ws = {0};
    set_add(&ws, "<eos>", 5);
    tt_buf word = {0};
    char chunk[1 << 16];
    int n;
    while ((n = gzread(g, chunk, sizeof chunk)) > 0) {
        for (int i = 0; i < n; i++) {
            if (is_space(chunk[i])) {
                if (word.len) set_add(&ws, word.data, word.len);
                word.len = 0;
            } else {
                tt_buf_append(&word, &chunk[i], 1);
            }
        }
    }
    if (word.len) set_add(&ws, word.data, word.len);
    int bad = n < 0;
    const char *zmsg = bad ? gzerror(g, &n) : NULL;
    if (bad) tt_errf(err, errlen, "%s: cannot read: %s", path, zmsg);
    gzclose(g);
    *vocab = (long)ws.n;
    tt_buf_free(&word);
    set_free(&ws);
    return bad ? -1 : 0;
}
