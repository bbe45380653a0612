/* Word-level corpora (see corpus.h): one reader for plain and gzip files, one scanner that checks
 * each line (length, NUL, UTF-8) and splits it into words, the vocabulary of a training split, and
 * the token-id cache. The vocabulary and the token ids both come from the same scanner, so the
 * words counted are exactly the words looked up. */
#define ZLIB_CONST
#include "corpus.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "sha256.h"
#include "util.h"

#define MAX_LINE ((size_t)1 << 20) /* bytes in a line, not counting its '\n' */

/* ---- reading: raw bytes, then gzip or not by content ---------------------------------------- */

/* Raw bytes of a file; "PATH: empty file" for a file without any. */
static int read_raw(const char *path, char **raw, size_t *len, char *err, size_t errlen)
{
    if (tt_read_file(path, 0, raw, len, err, errlen) != 0) return -1;
    if (*len == 0) {
        free(*raw);
        *raw = NULL;
        return tt_errf(err, errlen, "%s: empty file", path);
    }
    return 0;
}

static int is_gzip(const char *p, size_t n)
{
    return n >= 2 && (unsigned char)p[0] == 0x1f && (unsigned char)p[1] == 0x8b;
}

/* Inflates gzip data: one member or several in a row (as `cat a.gz b.gz` makes, and gzip -d
 * accepts). Anything after the last member is an error rather than silently dropped. */
static int gunzip(const char *path, const char *in, size_t inlen, char **out, size_t *outlen,
                  char *err, size_t errlen)
{
    const size_t chunk = (size_t)1 << 30; /* avail_in/avail_out are 32-bit */
    z_stream z;
    memset(&z, 0, sizeof z);
    TT_ASSERT(inflateInit2(&z, 16 + MAX_WBITS) == Z_OK); /* 16: gzip wrapper only */
    size_t cap = 4 * inlen + 65536, len = 0, used = 0;     /* text inflates about 3-4x */
    char *buf = tt_xmalloc(cap);
    const char *why = NULL;
    for (;;) {
        if (len == cap) buf = tt_xrealloc(buf, cap *= 2);
        size_t nin = inlen - used < chunk ? inlen - used : chunk;
        size_t nout = cap - len < chunk ? cap - len : chunk;
        z.next_in = (const Bytef *)in + used;
        z.avail_in = (uInt)nin;
        z.next_out = (Bytef *)buf + len;
        z.avail_out = (uInt)nout;
        int rc = inflate(&z, Z_NO_FLUSH);
        used += nin - z.avail_in;
        len += nout - z.avail_out;
        if (rc == Z_OK) continue;
        if (rc == Z_STREAM_END) {
            if (used == inlen) break;
            if (is_gzip(in + used, inlen - used)) {
                inflateReset(&z);
                continue;
            }
            why = "trailing data after the gzip stream";
        } else if (rc == Z_BUF_ERROR) {
            why = "unexpected end of file"; /* no progress: the input ran out mid-stream */
        } else if (rc == Z_MEM_ERROR) {
            tt_panic(__FILE__, __LINE__, "zlib: out of memory");
        } else {
            why = z.msg ? z.msg : "inflate failed";
        }
        break;
    }
    if (why) {
        tt_errf(err, errlen, "%s: corrupt gzip data (%s)", path, why);
        inflateEnd(&z);
        free(buf);
        return -1;
    }
    inflateEnd(&z);
    *out = buf;
    *outlen = len;
    return 0;
}

/* The text of a file whose raw bytes are given: gzip data, recognized by its magic bytes as
 * gzread does, is inflated; anything else is the text itself (*text == raw, nothing to free). */
static int decode(const char *path, char *raw, size_t rawlen, char **text, size_t *len, char *err,
                  size_t errlen)
{
    if (!is_gzip(raw, rawlen)) {
        *text = raw;
        *len = rawlen;
        return 0;
    }
    if (gunzip(path, raw, rawlen, text, len, err, errlen) != 0) return -1;
    if (*len == 0) {
        free(*text);
        return tt_errf(err, errlen, "%s: empty file", path);
    }
    return 0;
}

/* ---- lines and words ------------------------------------------------------------------------- */

static int is_space(unsigned char c)
{
    return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

/* A line is at most 1 MiB of UTF-8 without NUL bytes. Columns count bytes from 1. */
static int check_line(const char *path, long line, const char *s, size_t n, char *err,
                      size_t errlen)
{
    if (n > MAX_LINE) return tt_errf(err, errlen, "%s:%ld: line longer than 1 MiB", path, line);
    const unsigned char *p = (const unsigned char *)s, *end = p + n;
    while (p < end) {
        if (*p == 0)
            return tt_errf(err, errlen, "%s:%ld: NUL byte at column %zu", path, line,
                           (size_t)(p - (const unsigned char *)s) + 1);
        if (*p < 0x80) {
            p++;
            continue;
        }
        size_t k = tt_utf8_len(p, (size_t)(end - p));
        if (k == 0)
            return tt_errf(err, errlen, "%s:%ld: invalid UTF-8 (byte 0x%02X at column %zu)", path,
                           line, *p, (size_t)(p - (const unsigned char *)s) + 1);
        p += k;
    }
    return 0;
}

/* Walks a text word by word; each line, blank ones included, ends in an end-of-line token. */
typedef struct {
    const char *path;
    const char *p, *end;  /* the rest of the text */
    const char *line_end; /* end of the current line: its '\n', or the end of the text */
    long line;            /* 1-based number of the current line */
    int in_line;
    long words, lines;
} scanner;

enum { SCAN_ERROR = -2, SCAN_END = -1, SCAN_EOL = 0, SCAN_WORD = 1 };

static scanner scan_start(const char *path, const char *text, size_t len)
{
    return (scanner){.path = path, .p = text, .end = text + len};
}

/* SCAN_WORD with the word in *w, *n; SCAN_EOL; SCAN_END; or SCAN_ERROR with err set. */
static int scan_next(scanner *s, const char **w, size_t *n, char *err, size_t errlen)
{
    if (!s->in_line) {
        if (s->p == s->end) return SCAN_END;
        const char *nl = memchr(s->p, '\n', (size_t)(s->end - s->p));
        s->line_end = nl ? nl : s->end;
        s->line++;
        if (check_line(s->path, s->line, s->p, (size_t)(s->line_end - s->p), err, errlen) != 0)
            return SCAN_ERROR;
        s->in_line = 1;
    }
    const char *p = s->p, *e = s->line_end;
    while (p < e && is_space((unsigned char)*p)) p++;
    if (p == e) {
        s->p = e < s->end ? e + 1 : e;
        s->in_line = 0;
        s->lines++;
        return SCAN_EOL;
    }
    const char *start = p;
    while (p < e && !is_space((unsigned char)*p)) p++;
    s->p = p;
    s->words++;
    *w = start;
    *n = (size_t)(p - start);
    return SCAN_WORD;
}

/* ---- the vocabulary ------------------------------------------------------------------------- */

static uint64_t fnv1a(const char *s, size_t n)
{
    uint64_t h = 1469598103934665603ull;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 1099511628211ull;
    return h;
}

/* memcmp order; on a common prefix the shorter word first. */
static int bytewise(const char *a, size_t an, const char *b, size_t bn)
{
    int r = memcmp(a, b, an < bn ? an : bn);
    return r ? r : (an > bn) - (an < bn);
}

/* Word counts of a training split: an open-addressing table whose slots are the entries (one
 * memory access per probe), at most half full. Words point into the text (no copy until the end),
 * so a new word costs no allocation beyond the table's amortized growth. */
typedef struct {
    const char *w; /* NULL: an empty slot */
    size_t len;
    uint64_t hash;
    long count;
    long order; /* when it was first met: 0, 1, ... (a slot moves when the table grows) */
} counted;

typedef struct {
    counted *slot;
    size_t cap, n;
} counter;

static void counter_grow(counter *c, size_t cap)
{
    counted *old = c->slot;
    size_t old_cap = c->cap;
    c->slot = tt_xcalloc(cap, sizeof *c->slot);
    c->cap = cap;
    for (size_t k = 0; k < old_cap; k++) {
        if (!old[k].w) continue;
        size_t i = (size_t)old[k].hash & (cap - 1);
        while (c->slot[i].w) i = (i + 1) & (cap - 1);
        c->slot[i] = old[k];
    }
    free(old);
}

/* The entry of a word, made with count 0 if new. Valid until the next call. */
static counted *counter_get(counter *c, const char *w, size_t len)
{
    uint64_t h = fnv1a(w, len);
    size_t i = (size_t)h & (c->cap - 1);
    for (; c->slot[i].w; i = (i + 1) & (c->cap - 1)) {
        counted *e = &c->slot[i];
        if (e->hash == h && e->len == len && memcmp(e->w, w, len) == 0) return e;
    }
    if (2 * (c->n + 1) > c->cap) {
        counter_grow(c, 2 * c->cap);
        return counter_get(c, w, len);
    }
    c->slot[i] = (counted){w, len, h, 0, (long)c->n};
    c->n++;
    return &c->slot[i];
}

static int by_count_then_bytes(const void *pa, const void *pb)
{
    const counted *a = pa, *b = pb;
    if (a->count != b->count) return a->count > b->count ? -1 : 1;
    return bytewise(a->w, a->len, b->w, b->len);
}

/* The text tt_vocab_save writes and v->hash covers: each word in id order, then '\n'. */
static void vocab_text(const tt_vocab *v, tt_buf *b)
{
    for (long i = 0; i < v->n; i++) {
        tt_buf_append(b, v->words[i], strlen(v->words[i]));
        tt_buf_append(b, "\n", 1);
    }
}

/* The word -> id table: table_cap slots of two longs, the id (-1: empty) and bits of the word's
 * hash, so that a probe rarely has to look at a word that is not the one sought. */
static long hash_tag(uint64_t h) { return (long)(h >> 33); } /* fits any long */

/* Fills the table, eos, unk and hash from v->words. Returns -1 with the two ids in dup[] when a
 * word occurs twice. */
static int vocab_index(tt_vocab *v, long dup[2])
{
    size_t cap = 16;
    while (cap < 2 * (size_t)v->n) cap *= 2;
    v->table = tt_xmalloc(2 * cap * sizeof *v->table);
    for (size_t i = 0; i < cap; i++) v->table[2 * i] = -1;
    v->table_cap = cap;
    for (long id = 0; id < v->n; id++) {
        const char *w = v->words[id];
        uint64_t h = fnv1a(w, strlen(w));
        size_t i = (size_t)h & (cap - 1);
        for (; v->table[2 * i] >= 0; i = (i + 1) & (cap - 1)) {
            if (strcmp(v->words[v->table[2 * i]], w) == 0) {
                dup[0] = v->table[2 * i];
                dup[1] = id;
                return -1;
            }
        }
        v->table[2 * i] = id;
        v->table[2 * i + 1] = hash_tag(h);
    }
    v->eos = tt_vocab_id(v, "<eos>", 5);
    v->unk = tt_vocab_id(v, "<unk>", 5);
    tt_buf b = {0};
    vocab_text(v, &b);
    tt_sha256(b.data, b.len, v->hash);
    tt_buf_free(&b);
    return 0;
}

long tt_vocab_id(const tt_vocab *v, const char *word, size_t len)
{
    size_t mask = v->table_cap - 1;
    uint64_t h = fnv1a(word, len);
    long tag = hash_tag(h);
    for (size_t i = (size_t)h & mask; v->table[2 * i] >= 0; i = (i + 1) & mask) {
        if (v->table[2 * i + 1] != tag) continue;
        const char *w = v->words[v->table[2 * i]];
        if (strncmp(w, word, len) == 0 && w[len] == '\0') return v->table[2 * i];
    }
    return -1;
}

/* All words of a vocabulary live in one block, in id order, starting at words[0]. */
void tt_vocab_free(tt_vocab *v)
{
    if (v->words) free(v->words[0]);
    free(v->words);
    free(v->counts);
    free(v->table);
    memset(v, 0, sizeof *v);
}

/* ---- what keys the caches: a corpus file's identity ------------------------------------------ */

/* The cache entry of the file at path, "cache_dir/KEY.ext" (to free; NULL with err when the
 * file is not there): KEY the SHA-256 of tag, the file's real path, size, modification time (to
 * the nanosecond), device and inode, and the vocabulary's hash when v is given, as 64 hex
 * digits. Neither the corpus nor its ids are read to find an entry (a hit must not cost a pass
 * over a WikiText-103-sized text); a file edited in place is another size or time, hence a
 * miss. */
static char *cache_entry(const char *cache_dir, const char *path, const char *tag, const tt_vocab *v,
                         const char *ext, char *err, size_t errlen)
{
    struct stat st;
    char *real = NULL;
    if (stat(path, &st) != 0 || !(real = realpath(path, NULL))) {
        tt_errf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
        return NULL;
    }
    const uint64_t id[5] = {(uint64_t)st.st_size, (uint64_t)st.st_mtim.tv_sec,
                            (uint64_t)st.st_mtim.tv_nsec, (uint64_t)st.st_dev, (uint64_t)st.st_ino};
    uint8_t le[sizeof id], key[32];
    for (size_t i = 0; i < 5; i++)
        for (int b = 0; b < 8; b++) le[8 * i + b] = (uint8_t)(id[i] >> (8 * b));
    tt_sha256_ctx c;
    tt_sha256_init(&c);
    tt_sha256_update(&c, tag, strlen(tag) + 1);
    tt_sha256_update(&c, real, strlen(real) + 1);
    tt_sha256_update(&c, le, sizeof le);
    if (v) tt_sha256_update(&c, v->hash, sizeof v->hash);
    tt_sha256_final(&c, key);
    char hex[65];
    tt_hex(key, sizeof key, hex);
    free(real);
    return tt_xasprintf("%s/%s.%s", cache_dir, hex, ext);
}

/* zlib's CRC-32 of n bytes (in pieces: its lengths are 32-bit). */
static uint32_t crc32_of(const void *p, size_t n)
{
    uLong c = crc32(0L, Z_NULL, 0);
    for (size_t at = 0; at < n;) {
        const size_t k = n - at < ((size_t)1 << 30) ? n - at : (size_t)1 << 30;
        c = crc32(c, (const Bytef *)p + at, (uInt)k);
        at += k;
    }
    return (uint32_t)c;
}

/* ---- the vocabulary and its cache --------------------------------------------------------------- */

/* A cached vocabulary: the line "TTVOCAB 1 N CRC\n", then N lines "COUNT WORD\n" in id order,
 * CRC the CRC-32 of those lines. Fills v (words, counts, the index); 0 when the file is missing
 * or not whole (the caller builds the vocabulary again). */
#define VOCAB_CACHE_TAG "tt-vocab/1"
static int vocab_cache_read(const char *path, tt_vocab *v)
{
    memset(v, 0, sizeof *v);
    char *data;
    size_t len;
    char err[64];
    if (access(path, F_OK) != 0 || tt_read_file(path, 0, &data, &len, err, sizeof err) != 0) return 0;
    long n = -1;
    unsigned long crc = 0;
    int head = 0;
    if (sscanf(data, "TTVOCAB 1 %ld %lu\n%n", &n, &crc, &head) != 2 || head <= 0 || n <= 0 ||
        (size_t)n > len || crc32_of(data + head, len - (size_t)head) != (uint32_t)crc) {
        free(data);
        return 0;
    }
    /* the words into a block of their own, each NUL-ended, in id order (words[0] its start,
     * which tt_vocab_free frees): no longer than the lines they come from */
    char *pool = tt_xmalloc(len - (size_t)head + 1), *at = pool;
    v->words = tt_xmalloc((size_t)n * sizeof *v->words);
    v->counts = tt_xmalloc((size_t)n * sizeof *v->counts);
    const char *p = data + head, *end = data + len;
    long k = 0;
    for (; k < n && p < end; k++) {
        const char *nl = memchr(p, '\n', (size_t)(end - p)), *sp = nl ? memchr(p, ' ', (size_t)(nl - p)) : NULL;
        if (!sp || sp + 1 == nl) break;
        char *stop;
        v->counts[k] = strtol(p, &stop, 10);
        if (stop != sp || v->counts[k] < 0) break;
        v->words[k] = at;
        memcpy(at, sp + 1, (size_t)(nl - sp - 1));
        at += nl - sp - 1;
        *at++ = '\0';
        p = nl + 1;
    }
    free(data);
    long dup[2];
    v->n = k;
    if (k != n || p != end || vocab_index(v, dup) != 0 || v->eos < 0 || v->unk < 0) {
        free(pool);
        free(v->words);
        free(v->counts);
        free(v->table);
        memset(v, 0, sizeof *v);
        return 0;
    }
    return 1;
}

static int vocab_cache_write(const char *path, const tt_vocab *v, char *err, size_t errlen)
{
    tt_buf body = {0};
    for (long i = 0; i < v->n; i++) tt_buf_printf(&body, "%ld %s\n", v->counts[i], v->words[i]);
    char head[64];
    const int hl = snprintf(head, sizeof head, "TTVOCAB 1 %ld %lu\n", v->n,
                            (unsigned long)crc32_of(body.data, body.len));
    const void *parts[] = {head, body.data};
    size_t lens[] = {(size_t)hl, body.len};
    const int rc = tt_write_file_atomic(path, parts, lens, 2, err, errlen);
    tt_buf_free(&body);
    return rc;
}

static int vocab_build_text(const char *train_path, tt_vocab *v, tt_tokens *ids, char *err, size_t errlen);
static int cache_write(const char *cache_dir, const char *path, const tt_tokens *t, char *err,
                       size_t errlen);
#define CACHE_TAG "tt-corpus-ids/2"

/* A lock on cache_dir (an flock of its corpus.lock, made if missing): processes that meet a
 * missing entry at once (the ranks of a run on one host) build it one at a time, and the later
 * ones find it once they hold the lock. -1 where the folder or the lock cannot be made: then
 * each builds its own, as without it. */
static int lock_cache(const char *cache_dir)
{
    char ignored[64];
    if (tt_mkdir_p(cache_dir, ignored, sizeof ignored) != 0) return -1;
    char *p = tt_xasprintf("%s/corpus.lock", cache_dir);
    const int fd = open(p, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    free(p);
    if (fd < 0) return -1;
    while (flock(fd, LOCK_EX) != 0)
        if (errno != EINTR) {
            close(fd);
            return -1;
        }
    return fd;
}

static void unlock_cache(int fd)
{
    if (fd >= 0) close(fd); /* closing releases the flock */
}

int tt_vocab_build(const char *train_path, const char *cache_dir, tt_vocab *v, char *err, size_t errlen)
{
    if (!cache_dir) return vocab_build_text(train_path, v, NULL, err, errlen);
    char *path = cache_entry(cache_dir, train_path, VOCAB_CACHE_TAG, NULL, "vocab", err, errlen);
    if (!path) return -1;
    int rc = 0, lock = -1;
    /* a miss: built under the cache's lock, unless another process built it meanwhile */
    if (!vocab_cache_read(path, v) &&
        ((lock = lock_cache(cache_dir)) < 0 || !vocab_cache_read(path, v))) {
        /* counted from the text, which gives the split's ids in the same pass: their cache
         * entry too, so that the first run does not read the text again */
        tt_tokens ids = {0};
        rc = vocab_build_text(train_path, v, &ids, err, errlen);
        char *ids_path = NULL;
        if (rc == 0 && (tt_mkdir_p(cache_dir, err, errlen) != 0 || vocab_cache_write(path, v, err, errlen) != 0 ||
                        !(ids_path = cache_entry(cache_dir, train_path, CACHE_TAG, v, "ids", err, errlen)) ||
                        cache_write(cache_dir, ids_path, &ids, err, errlen) != 0)) {
            tt_vocab_free(v);
            rc = -1;
        }
        free(ids_path);
        tt_tokens_free(&ids);
    }
    unlock_cache(lock);
    free(path);
    return rc;
}

/* The vocabulary counted from the text itself; with ids, the text's token ids too (those
 * tt_corpus_load would give under it), from the same pass. */
static int vocab_build_text(const char *train_path, tt_vocab *v, tt_tokens *ids, char *err, size_t errlen)
{
    memset(v, 0, sizeof *v);
    char *raw, *text;
    size_t rawlen, len;
    if (read_raw(train_path, &raw, &rawlen, err, errlen) != 0) return -1;
    if (decode(train_path, raw, rawlen, &text, &len, err, errlen) != 0) {
        free(raw);
        return -1;
    }
    counter c = {0};
    counter_grow(&c, 1 << 10); /* grows as it fills (small files: the fuzzer, tests) */
    scanner s = scan_start(train_path, text, len);
    const char *w = NULL;
    size_t n = 0;
    int r;
    /* with ids: each token's word by the order it was first met (-1: a line's end, <eos>) */
    long cap = ids ? 1 << 16 : 0, nt = 0;
    int32_t *order = ids ? tt_xmalloc((size_t)cap * sizeof *order) : NULL;
    while ((r = scan_next(&s, &w, &n, err, errlen)) >= 0) {
        counted *e = r == SCAN_WORD ? counter_get(&c, w, n) : NULL;
        if (e) e->count++;
        if (ids) {
            if (nt == cap) order = tt_xrealloc(order, (size_t)(cap *= 2) * sizeof *order);
            order[nt++] = e ? (int32_t)e->order : -1;
        }
    }
    int rc = -1;
    if (r == SCAN_ERROR) goto done;
    if (s.words == 0) {
        tt_errf(err, errlen, "%s: no tokens", train_path);
        goto done;
    }
    counter_get(&c, "<eos>", 5)->count += s.lines; /* added to any literal <eos> of the text */
    counter_get(&c, "<unk>", 5);                     /* count 0 unless the text has it */
    if (c.n >= INT32_MAX) {                           /* ids are int32 */
        tt_errf(err, errlen, "%s: more than 2^31 distinct words", train_path);
        goto done;
    }
    counted *e = c.slot; /* the entries, packed to the front of the table */
    size_t ne = 0;
    for (size_t i = 0; i < c.cap; i++)
        if (c.slot[i].w) e[ne++] = c.slot[i];
    qsort(e, ne, sizeof *e, by_count_then_bytes);

    size_t bytes = 0;
    for (size_t i = 0; i < ne; i++) bytes += e[i].len + 1;
    char *pool = tt_xmalloc(bytes);
    v->n = (long)ne;
    v->words = tt_xmalloc(ne * sizeof *v->words);
    v->counts = tt_xmalloc(ne * sizeof *v->counts);
    for (size_t i = 0; i < ne; i++) {
        memcpy(pool, e[i].w, e[i].len);
        pool[e[i].len] = '\0';
        v->words[i] = pool;
        v->counts[i] = e[i].count;
        pool += e[i].len + 1;
    }
    long dup[2];
    int distinct = vocab_index(v, dup) == 0; /* the counter merged equal words already */
    TT_ASSERT(distinct);
    if (ids) { /* first-met order -> id, then each token's id in place */
        int32_t *id_of = tt_xmalloc(ne * sizeof *id_of);
        for (size_t i = 0; i < ne; i++) id_of[e[i].order] = (int32_t)i;
        for (long k = 0; k < nt; k++) order[k] = order[k] < 0 ? (int32_t)v->eos : id_of[order[k]];
        free(id_of);
        ids->ids = tt_xrealloc(order, (size_t)nt * sizeof *order);
        ids->n = nt;
        order = NULL;
    }
    rc = 0;
done:
    free(order);
    free(c.slot);
    if (text != raw) free(text);
    free(raw);
    return rc;
}

int tt_corpus_count_vocab(const char *path, long *vocab, char *err, size_t errlen)
{
    tt_vocab v;
    if (tt_vocab_build(path, NULL, &v, err, errlen) != 0) return -1;
    *vocab = v.n;
    tt_vocab_free(&v);
    return 0;
}

int tt_vocab_save(const tt_vocab *v, const char *path, char *err, size_t errlen)
{
    tt_buf b = {0};
    vocab_text(v, &b);
    const void *parts[] = {b.data};
    size_t lens[] = {b.len};
    int rc = tt_write_file_atomic(path, parts, lens, 1, err, errlen);
    tt_buf_free(&b);
    return rc;
}

/* One word per line. The file's own buffer becomes the block of words: each '\n' turns into the
 * word's NUL, and words[0] is the start of the buffer because an empty line is an error. */
int tt_vocab_load(const char *path, tt_vocab *v, char *err, size_t errlen)
{
    memset(v, 0, sizeof *v);
    char *data;
    size_t len;
    if (read_raw(path, &data, &len, err, errlen) != 0) return -1;
    long cap = 0, line = 0;
    for (char *p = data, *end = data + len; p < end;) {
        char *nl = memchr(p, '\n', (size_t)(end - p));
        char *e = nl ? nl : end;
        line++;
        if (e == p) {
            tt_errf(err, errlen, "%s:%ld: empty line", path, line);
            goto fail;
        }
        if (check_line(path, line, p, (size_t)(e - p), err, errlen) != 0) goto fail;
        for (char *q = p; q < e; q++)
            if (is_space((unsigned char)*q)) {
                tt_errf(err, errlen, "%s:%ld: whitespace in a word (column %zu)", path, line,
                        (size_t)(q - p) + 1);
                goto fail;
            }
        if (v->n == cap) {
            cap = cap ? 2 * cap : 1024;
            v->words = tt_xrealloc(v->words, (size_t)cap * sizeof *v->words);
        }
        v->words[v->n++] = p;
        *e = '\0'; /* the '\n', or the buffer's own terminator after a last line without one */
        p = e + 1;
    }
    long dup[2];
    if (vocab_index(v, dup) != 0) {
        tt_errf(err, errlen, "%s:%ld: duplicate word '%s' (first on line %ld)", path, dup[1] + 1,
                v->words[dup[1]], dup[0] + 1);
        goto fail;
    }
    if (v->eos < 0 || v->unk < 0) {
        tt_errf(err, errlen, "%s: no %s in the vocabulary", path, v->eos < 0 ? "<eos>" : "<unk>");
        goto fail;
    }
    return 0;
fail:
    free(data);
    free(v->words);
    free(v->table);
    memset(v, 0, sizeof *v);
    return -1;
}

/* ---- token ids and their cache --------------------------------------------------------------- */

/* The cache file: a header, then the ids as int32 little-endian. The key (the file name) covers
 * the format tag, the corpus file's identity (file_key) and the vocabulary; the header's CRC-32
 * covers the ids, so a truncated or damaged file is noticed and rebuilt. A hit maps the file
 * (the ids are used where they lie: a One-Billion-Word-sized corpus is 3.2 GB of them) after one
 * pass that checks the CRC and every id's range. Bump the tag when tokenization changes. */
#define CACHE_FORMAT 2u
static const char cache_magic[8] = {'T', 'T', 'I', 'D', 'S', '\r', '\n', 0x1a};
/* magic, format (4 bytes), 4 zero, count (8), CRC-32 of the ids (4), 28 zero */
enum { HDR_MAGIC = 0, HDR_FORMAT = 8, HDR_COUNT = 16, HDR_SUM = 24, HDR_SIZE = 56 };

static void put_le(uint8_t *p, uint64_t x, int n)
{
    for (int i = 0; i < n; i++) p[i] = (uint8_t)(x >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, int n)
{
    uint64_t x = 0;
    for (int i = 0; i < n; i++) x |= (uint64_t)p[i] << (8 * i);
    return x;
}

static int little_endian(void)
{
    const uint32_t one = 1;
    return *(const uint8_t *)&one == 1;
}

/* The ids of a cache file if it is whole and well-formed, mapped (or, on a big-endian host,
 * read and swapped); 0 otherwise (missing or bad). */
static int cache_read(const char *path, const tt_vocab *v, tt_tokens *out)
{
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    struct stat st;
    uint8_t *map = MAP_FAILED;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < HDR_SIZE) goto bad;
    map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) goto bad;
    const uint64_t count = get_le(map + HDR_COUNT, 8);
    int zero = 1;
    for (int i = HDR_FORMAT + 4; i < HDR_COUNT; i++) zero &= map[i] == 0;
    for (int i = HDR_SUM + 4; i < HDR_SIZE; i++) zero &= map[i] == 0;
    if (memcmp(map + HDR_MAGIC, cache_magic, 8) != 0 || get_le(map + HDR_FORMAT, 4) != CACHE_FORMAT ||
        !zero || count > (uint64_t)LONG_MAX / 4 || (uint64_t)st.st_size - HDR_SIZE != 4 * count ||
        crc32_of(map + HDR_SIZE, 4 * count) != (uint32_t)get_le(map + HDR_SUM, 4))
        goto bad;
    int32_t *ids;
    if (little_endian()) {
        ids = (int32_t *)(void *)(map + HDR_SIZE); /* 56 bytes into a page: 8-byte aligned */
    } else {
        ids = tt_xmalloc(4 * count);
        for (uint64_t i = 0; i < count; i++) ids[i] = (int32_t)get_le(map + HDR_SIZE + 4 * i, 4);
    }
    uint32_t over = 0; /* any id out of range, without a branch a token */
    for (uint64_t i = 0; i < count; i++) over |= (uint32_t)ids[i] >= (uint32_t)v->n;
    if (over) {
        if (!little_endian()) free(ids);
        goto bad;
    }
    close(fd);
    out->ids = ids;
    out->n = (long)count;
    if (little_endian()) {
        out->map = map;
        out->map_len = (size_t)st.st_size;
    } else {
        munmap(map, (size_t)st.st_size);
    }
    return 1;
bad:
    if (map != MAP_FAILED) munmap(map, (size_t)st.st_size);
    close(fd);
    return 0;
}

static int cache_write(const char *cache_dir, const char *path, const tt_tokens *t, char *err,
                       size_t errlen)
{
    if (tt_mkdir_p(cache_dir, err, errlen) != 0) return -1;
    uint8_t hdr[HDR_SIZE] = {0};
    uint8_t *body = tt_xmalloc(4 * (size_t)t->n);
    for (long i = 0; i < t->n; i++) put_le(body + 4 * i, (uint32_t)t->ids[i], 4);
    memcpy(hdr + HDR_MAGIC, cache_magic, 8);
    put_le(hdr + HDR_FORMAT, CACHE_FORMAT, 4);
    put_le(hdr + HDR_COUNT, (uint64_t)t->n, 8);
    put_le(hdr + HDR_SUM, crc32_of(body, 4 * (size_t)t->n), 4);
    const void *parts[] = {hdr, body};
    size_t lens[] = {sizeof hdr, 4 * (size_t)t->n};
    int rc = tt_write_file_atomic(path, parts, lens, 2, err, errlen);
    free(body);
    return rc;
}

int tt_text_ids(const char *name, const char *text, size_t len, const tt_vocab *v, bool eos,
                int32_t *ids, size_t cap, size_t *n, size_t *unknown, char *err, size_t errlen)
{
    scanner s = scan_start(name, text, len);
    const char *w = NULL;
    size_t wn = 0, k = 0, unk = 0;
    int r;
    while ((r = scan_next(&s, &w, &wn, err, errlen)) >= 0) {
        long id = v->eos;
        if (r == SCAN_EOL && !eos) continue;
        if (r == SCAN_WORD && (id = tt_vocab_id(v, w, wn)) < 0) id = v->unk, unk++;
        if (ids && k < cap) ids[k] = (int32_t)id;
        k++;
    }
    *n = k;
    if (unknown) *unknown = unk;
    return r == SCAN_ERROR ? -1 : 0;
}

static int tokenize(const char *path, const char *text, size_t len, const tt_vocab *v,
                    tt_tokens *out, char *err, size_t errlen)
{
    long cap = 1 << 16, n = 0;
    int32_t *ids = tt_xmalloc((size_t)cap * sizeof *ids);
    scanner s = scan_start(path, text, len);
    const char *w = NULL;
    size_t wn = 0;
    int r;
    while ((r = scan_next(&s, &w, &wn, err, errlen)) >= 0) {
        long id = v->eos;
        if (r == SCAN_WORD && (id = tt_vocab_id(v, w, wn)) < 0) id = v->unk;
        if (n == cap) ids = tt_xrealloc(ids, (size_t)(cap *= 2) * sizeof *ids);
        ids[n++] = (int32_t)id;
    }
    if (r == SCAN_ERROR || s.words == 0) {
        if (r != SCAN_ERROR) tt_errf(err, errlen, "%s: no tokens", path);
        free(ids);
        return -1;
    }
    out->ids = tt_xrealloc(ids, (size_t)n * sizeof *ids);
    out->n = n;
    return 0;
}

int tt_corpus_load(const char *path, const tt_vocab *v, const char *cache_dir, tt_tokens *out,
                   char *err, size_t errlen)
{
    TT_ASSERT(v->n > 0 && v->table && v->eos >= 0 && v->unk >= 0);
    memset(out, 0, sizeof *out);
    char *cpath = NULL;
    int lock = -1;
    if (cache_dir) {
        if (!(cpath = cache_entry(cache_dir, path, CACHE_TAG, v, "ids", err, errlen))) return -1;
        if (cache_read(cpath, v, out) ||
            ((lock = lock_cache(cache_dir)) >= 0 && cache_read(cpath, v, out))) {
            unlock_cache(lock);
            free(cpath);
            return 0;
        }
    }
    char *raw, *text;
    size_t rawlen, len;
    int rc = -1;
    if (read_raw(path, &raw, &rawlen, err, errlen) == 0) {
        if (decode(path, raw, rawlen, &text, &len, err, errlen) == 0) {
            rc = tokenize(path, text, len, v, out, err, errlen);
            if (text != raw) free(text);
            if (rc == 0 && cpath && cache_write(cache_dir, cpath, out, err, errlen) != 0) {
                tt_tokens_free(out);
                rc = -1;
            }
        }
        free(raw);
    }
    unlock_cache(lock);
    free(cpath);
    return rc;
}

void tt_tokens_free(tt_tokens *t)
{
    if (t->map) munmap(t->map, t->map_len);
    else free(t->ids);
    memset(t, 0, sizeof *t);
}

bool tt_tokens_batch(const tt_tokens *t, int batch, int n, long step, int32_t *in, int32_t *tg)
{
    const long len = t->n / batch, segments = (len - 1) / n;
    const long seg = (step - 1) % segments;
    for (int b = 0; b < batch; b++)
        for (int i = 0; i < n; i++) {
            const long at = (long)b * len + seg * n + i;
            in[b * n + i] = t->ids[at];
            tg[b * n + i] = t->ids[at + 1];
        }
    return seg != 0;
}
