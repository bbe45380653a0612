/* The corpus reader against the published PTB and WikiText-2 figures (tokens, vocabulary, no OOV
 * in valid/test), the vocabulary order and its save/load round trip, the token-id cache (hit,
 * truncated or damaged entry rebuilt), every error a data file can cause, message by message, and
 * the UTF-8 check it shares with the safetensors reader.
 * The corpora come from $TT_DATA_DIR (default: shared/data beside the repository); a missing
 * corpus fails the test, it is not skipped. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include <dirent.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "corpus.h"
#include "sha256.h"
#include "testutil.h"
#include "util.h"

static char tmpdir[64];

/* ---- helpers --------------------------------------------------------------------------------- */

static char *tmp_path(const char *name) { return tt_xasprintf("%s/%s", tmpdir, name); }

/* Writes a file in the temporary folder; returns its path (to free). */
static char *put_file(const char *name, const void *data, size_t len)
{
    char *p = tmp_path(name);
    tu_write_file(p, data, len);
    return p;
}

static char *put_text(const char *name, const char *text)
{
    return put_file(name, text, strlen(text));
}

/* gzip through zlib; mode "wb" starts the file, "ab" appends a second member. */
static void gz_put(const char *path, const char *mode, const char *text)
{
    gzFile g = gzopen(path, mode);
    assert_non_null(g);
    assert_int_equal(gzwrite(g, text, (unsigned)strlen(text)), (int)strlen(text));
    assert_int_equal(gzclose(g), Z_OK);
}

static void build_ok(const char *path, tt_vocab *v)
{
    char err[512] = "";
    if (tt_vocab_build(path, NULL, v, err, sizeof err) != 0) fail_msg("%s", err);
}

static void load_ok(const char *path, const tt_vocab *v, const char *cache_dir, tt_tokens *t)
{
    char err[512] = "";
    if (tt_corpus_load(path, v, cache_dir, t, err, sizeof err) != 0) fail_msg("%s", err);
}

static void assert_err(const char *err, const char *path, const char *suffix)
{
    char *want = tt_xasprintf("%s%s", path, suffix);
    assert_string_equal(err, want);
    free(want);
}

/* Both the vocabulary build and the token load (with and without cache) fail with PATH+suffix. */
static void expect_fail(const char *path, const tt_vocab *v, const char *suffix)
{
    char err[512] = "";
    tt_vocab bad;
    assert_int_equal(tt_vocab_build(path, NULL, &bad, err, sizeof err), -1);
    assert_err(err, path, suffix);
    tt_vocab_free(&bad); /* harmless after a failure */
    long n = -7;
    assert_int_equal(tt_corpus_count_vocab(path, &n, err, sizeof err), -1);
    assert_err(err, path, suffix);
    assert_int_equal(n, -7);
    char *cache = tmp_path("cache-errors");
    for (int c = 0; c < 2; c++) {
        tt_tokens t = {.ids = (int32_t *)1, .n = 7};
        strcpy(err, "");
        assert_int_equal(tt_corpus_load(path, v, c ? cache : NULL, &t, err, sizeof err), -1);
        assert_err(err, path, suffix);
        assert_null(t.ids);
    }
    free(cache);
}

static void expect_vocab_load_fail(const char *text, const char *suffix)
{
    char *p = put_text("bad-vocab.txt", text);
    char err[512] = "";
    tt_vocab v;
    assert_int_equal(tt_vocab_load(p, &v, err, sizeof err), -1);
    assert_err(err, p, suffix);
    assert_null(v.words);
    free(p);
}

static void hash_hex(const uint8_t h[32], char hex[65]) { tt_hex(h, 32, hex); }

/* A small vocabulary for the error tests: a ab b c <eos> <unk>. */
static void small_vocab(tt_vocab *v)
{
    char *p = put_text("small-train.txt", "ab a\fb\n\n\tab\va  \r\nc");
    build_ok(p, v);
    free(p);
}

/* ---- the real corpora ------------------------------------------------------------------------ */

typedef struct {
    const char *name, *train, *valid, *test;
    long ntrain, nvalid, ntest, vocab, train_lines, first_count;
    const char *first, *hash;
} corpus_case;

static const corpus_case ptb = {
    "PTB", "ptb/ptb.train.txt.gz", "ptb/ptb.valid.txt", "ptb/ptb.test.txt", 929589, 73760, 82430,
    10000, 42068, 50770, "the", "ab5a101c0a4fc91bce28e83556c3ab4f550a1982221752f1c964bb0d27590f7d"};
static const corpus_case wikitext2 = {
    "WikiText-2", "wikitext-2/wiki.train.tokens.gz", "wikitext-2/wiki.valid.tokens",
    "wikitext-2/wiki.test.tokens", 2088628, 217646, 245569, 33278, 36718, 113161, "the",
    "08b331300de95d3e831205ba90286105050b51f2ebde1050a0f0d30f54791359"};

/* Ids in non-increasing count order, ties bytewise (strcmp compares unsigned bytes, shorter
 * first on a common prefix). */
static void check_order(const tt_vocab *v)
{
    for (long i = 1; i < v->n; i++) {
        if (v->counts[i - 1] > v->counts[i]) continue;
        assert_int_equal(v->counts[i - 1], v->counts[i]);
        if (strcmp(v->words[i - 1], v->words[i]) >= 0)
            fail_msg("ids %ld '%s' and %ld '%s' (count %ld) out of bytewise order", i - 1,
                     v->words[i - 1], i, v->words[i], v->counts[i]);
    }
}

/* Words of a split missing from the training vocabulary: every distinct word of the split
 * (its own vocabulary) looked up in the training one. */
static long oov_words(const tt_vocab *train, const char *path)
{
    tt_vocab split;
    build_ok(path, &split);
    long missing = 0;
    for (long i = 0; i < split.n; i++)
        if (tt_vocab_id(train, split.words[i], strlen(split.words[i])) < 0) missing++;
    tt_vocab_free(&split);
    return missing;
}

static long count_id(const tt_tokens *t, long id)
{
    long k = 0;
    for (long i = 0; i < t->n; i++) k += t->ids[i] == id;
    return k;
}

static void check_corpus(const corpus_case *c)
{
    char *train = tu_data_path(c->train), *valid = tu_data_path(c->valid);
    char *test = tu_data_path(c->test);
    tt_vocab v;
    double t0 = tt_now_seconds();
    clock_t cpu0 = clock(); /* CPU time too: wall time swells on a busy machine */
    build_ok(train, &v);
    double build_s = tt_now_seconds() - t0, build_cpu = (double)(clock() - cpu0) / CLOCKS_PER_SEC;
    print_message("%s train vocabulary: %ld words in %.1f ms (%.1f ms CPU)\n", c->name, v.n,
                  1e3 * build_s, 1e3 * build_cpu);

    assert_int_equal(v.n, c->vocab);
    assert_string_equal(v.words[0], c->first);
    assert_int_equal(v.counts[0], c->first_count);
    assert_string_equal(v.words[v.eos], "<eos>");
    assert_string_equal(v.words[v.unk], "<unk>");
    assert_int_equal(v.counts[v.eos], c->train_lines);
    check_order(&v);
    char hex[65];
    hash_hex(v.hash, hex);
    assert_string_equal(hex, c->hash); /* the order as Python's sorted(key=(-count, bytes)) gives */

    long count = -1;
    char err[512] = "";
    if (tt_corpus_count_vocab(train, &count, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(count, v.n);

    /* Train: the ids, counted, give back the vocabulary's counts (one scanner for both). */
    tt_tokens t;
    t0 = tt_now_seconds();
    load_ok(train, &v, NULL, &t);
    print_message("%s train ids: %ld tokens in %.1f ms\n", c->name, t.n,
                  1e3 * (tt_now_seconds() - t0));
    assert_int_equal(t.n, c->ntrain);
    long *hist = tt_xcalloc((size_t)v.n, sizeof *hist);
    for (long i = 0; i < t.n; i++) {
        assert_in_range(t.ids[i], 0, v.n - 1);
        hist[t.ids[i]]++;
    }
    for (long i = 0; i < v.n; i++) assert_int_equal(hist[i], v.counts[i]);
    free(hist);
    assert_int_equal(t.ids[t.n - 1], v.eos);
    tt_tokens_free(&t);

    const char *paths[2] = {valid, test};
    const long want[2] = {c->nvalid, c->ntest};
    for (int s = 0; s < 2; s++) {
        assert_int_equal(oov_words(&v, paths[s]), 0);
        load_ok(paths[s], &v, NULL, &t);
        assert_int_equal(t.n, want[s]);
        /* No replacements: the <unk> ids are the <unk> words already in the text. */
        tt_vocab own;
        build_ok(paths[s], &own);
        long own_unk = own.counts[own.unk];
        assert_int_equal(count_id(&t, v.unk), own_unk);
        assert_int_equal(count_id(&t, v.eos), own.counts[own.eos]);
        tt_vocab_free(&own);
        tt_tokens_free(&t);
    }
    tt_vocab_free(&v);
    free(train);
    free(valid);
    free(test);
}

static void test_ptb(void **state)
{
    (void)state;
    check_corpus(&ptb);
    tt_vocab v;
    char *train = tu_data_path(ptb.train);
    build_ok(train, &v);
    assert_string_equal(v.words[1], "<unk>");
    assert_string_equal(v.words[2], "<eos>");
    assert_string_equal(v.words[3], "N");
    assert_int_equal(v.counts[v.unk], 45020);
    tt_vocab_free(&v);
    free(train);
}

static void test_wikitext2(void **state)
{
    (void)state;
    check_corpus(&wikitext2);
}

/* ---- format and order on small files --------------------------------------------------------- */

/* Every kind of ASCII whitespace separates words; blank lines give an <eos>; a last line without
 * '\n' still counts; equal counts go bytewise, the shorter word first on a common prefix. */
static void test_small_format_and_order(void **state)
{
    (void)state;
    tt_vocab v;
    small_vocab(&v);
    static const char *const words[] = {"<eos>", "a", "ab", "b", "c", "<unk>"};
    static const long counts[] = {4, 2, 2, 1, 1, 0};
    assert_int_equal(v.n, 6);
    for (long i = 0; i < v.n; i++) {
        assert_string_equal(v.words[i], words[i]);
        assert_int_equal(v.counts[i], counts[i]);
        assert_int_equal(tt_vocab_id(&v, words[i], strlen(words[i])), i);
    }
    assert_int_equal(v.eos, 0);
    assert_int_equal(v.unk, 5);
    assert_int_equal(tt_vocab_id(&v, "abc", 2), 2); /* the length bounds the word */
    assert_int_equal(tt_vocab_id(&v, "abc", 3), -1);
    assert_int_equal(tt_vocab_id(&v, "", 0), -1);
    uint8_t h[32];
    const char *text = "<eos>\na\nab\nb\nc\n<unk>\n";
    tt_sha256(text, strlen(text), h);
    assert_memory_equal(h, v.hash, 32);

    char *p = tmp_path("small-train.txt");
    tt_tokens t;
    load_ok(p, &v, NULL, &t);
    static const int32_t want[] = {2, 1, 3, 0, 0, 2, 1, 0, 4, 0};
    assert_int_equal(t.n, 10);
    assert_memory_equal(t.ids, want, sizeof want);
    tt_tokens_free(&t);
    free(p);

    /* Unknown words become <unk>; a literal <unk> is <unk> too. */
    p = put_text("small-unknown.txt", "a zzz <unk>\nb");
    load_ok(p, &v, NULL, &t);
    static const int32_t want2[] = {1, 5, 5, 0, 3, 0};
    assert_int_equal(t.n, 6);
    assert_memory_equal(t.ids, want2, sizeof want2);
    tt_tokens_free(&t);
    free(p);
    tt_vocab_free(&v);

    /* <unk> in the text keeps its count; count_vocab agrees with the build either way. */
    long n;
    char err[512];
    p = put_text("with-unk.txt", "x <unk> <unk>\n");
    build_ok(p, &v);
    assert_int_equal(v.n, 3);
    assert_string_equal(v.words[0], "<unk>");
    assert_int_equal(v.counts[v.unk], 2);
    assert_int_equal(tt_corpus_count_vocab(p, &n, err, sizeof err), 0);
    assert_int_equal(n, 3);
    tt_vocab_free(&v);
    free(p);
    p = put_text("without-unk.txt", "x y\n");
    assert_int_equal(tt_corpus_count_vocab(p, &n, err, sizeof err), 0);
    assert_int_equal(n, 4);
    free(p);
}

/* ---- vocabulary files ------------------------------------------------------------------------ */

static void test_vocab_save_load(void **state)
{
    (void)state;
    char *train = tu_data_path(ptb.train), *valid = tu_data_path(ptb.valid);
    char *path = tmp_path("vocab.txt");
    tt_vocab v, w;
    build_ok(train, &v);
    char err[512] = "";
    if (tt_vocab_save(&v, path, err, sizeof err) != 0) fail_msg("%s", err);
    size_t len;
    char *data = tu_read_file(path, &len);
    uint8_t h[32];
    tt_sha256(data, len, h);
    assert_memory_equal(h, v.hash, 32); /* the file is exactly the hashed text */
    free(data);

    if (tt_vocab_load(path, &w, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(w.n, v.n);
    assert_memory_equal(w.hash, v.hash, 32);
    assert_null(w.counts);
    assert_int_equal(w.eos, v.eos);
    assert_int_equal(w.unk, v.unk);
    for (long i = 0; i < v.n; i++) {
        assert_string_equal(w.words[i], v.words[i]);
        assert_int_equal(tt_vocab_id(&w, v.words[i], strlen(v.words[i])), i);
    }
    tt_tokens a, b;
    load_ok(valid, &v, NULL, &a);
    load_ok(valid, &w, NULL, &b);
    assert_int_equal(a.n, b.n);
    assert_memory_equal(a.ids, b.ids, (size_t)a.n * sizeof *a.ids);
    tt_tokens_free(&a);
    tt_tokens_free(&b);
    tt_vocab_free(&v);
    tt_vocab_free(&w);

    /* A last line without '\n' is still a word; the hash covers the words, not the file. */
    char *p = put_text("vocab-no-newline.txt", "<eos>\nthe\n<unk>");
    if (tt_vocab_load(p, &w, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(w.n, 3);
    assert_int_equal(w.unk, 2);
    tt_sha256("<eos>\nthe\n<unk>\n", 16, h);
    assert_memory_equal(h, w.hash, 32);
    tt_vocab_free(&w);
    free(p);
    free(path);
    free(train);
    free(valid);
}

static void test_vocab_load_errors(void **state)
{
    (void)state;
    expect_vocab_load_fail("<eos>\na\n<unk>\nb\na\n", ":5: duplicate word 'a' (first on line 2)");
    expect_vocab_load_fail("<eos>\na\n\n<unk>\n", ":3: empty line");
    expect_vocab_load_fail("\n", ":1: empty line");
    expect_vocab_load_fail("a\n<unk>\n", ": no <eos> in the vocabulary");
    expect_vocab_load_fail("<eos>\na\n", ": no <unk> in the vocabulary");
    expect_vocab_load_fail("<eos>\n<unk>\na b\n", ":3: whitespace in a word (column 2)");
    expect_vocab_load_fail("<eos>\r\n<unk>\n", ":1: whitespace in a word (column 6)");
    expect_vocab_load_fail("<eos>\n<unk>\n\xC3\x28\n", ":3: invalid UTF-8 (byte 0xC3 at column 1)");
    expect_vocab_load_fail("", ": empty file");
    char err[512];
    tt_vocab v;
    char *p = tmp_path("no-such-vocab.txt");
    assert_int_equal(tt_vocab_load(p, &v, err, sizeof err), -1);
    assert_err(err, p, ": cannot open: No such file or directory");
    free(p);
}

/* ---- the id cache ---------------------------------------------------------------------------- */

/* The number of *.ids files in dir, and the path of one of them in *one (to free) if asked. */
static int cache_files(const char *dir, char **one)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 4 || strcmp(e->d_name + len - 4, ".ids") != 0) continue;
        if (n++ == 0 && one) *one = tt_xasprintf("%s/%s", dir, e->d_name);
    }
    closedir(d);
    return n;
}

/* The one *.ids file in dir (there must be exactly one). */
static char *only_cache_file(const char *dir)
{
    char *file = NULL;
    assert_int_equal(cache_files(dir, &file), 1);
    return file;
}

static void flip_byte(const char *path, long offset)
{
    FILE *f = fopen(path, "r+b");
    assert_non_null(f);
    assert_int_equal(fseek(f, offset, SEEK_SET), 0);
    int c = fgetc(f);
    assert_true(c != EOF);
    assert_int_equal(fseek(f, offset, SEEK_SET), 0);
    assert_int_equal(fputc(c ^ 0x5a, f), c ^ 0x5a);
    assert_int_equal(fclose(f), 0);
}

static void same_tokens(const tt_tokens *a, const tt_tokens *b)
{
    assert_int_equal(a->n, b->n);
    assert_memory_equal(a->ids, b->ids, (size_t)a->n * sizeof *a->ids);
}

/* A load through the cache gives ref's ids; returns the cache file's inode afterwards. */
static ino_t load_cached(const char *path, const tt_vocab *v, const char *dir, const tt_tokens *ref,
                         double *seconds)
{
    tt_tokens t;
    double t0 = tt_now_seconds();
    load_ok(path, v, dir, &t);
    if (seconds) *seconds = tt_now_seconds() - t0;
    same_tokens(&t, ref);
    tt_tokens_free(&t);
    char *file = only_cache_file(dir);
    struct stat st;
    assert_int_equal(stat(file, &st), 0);
    assert_int_equal(st.st_size, 56 + 4 * ref->n); /* header + int32 ids */
    free(file);
    return st.st_ino;
}

static void test_cache(void **state)
{
    (void)state;
    char *train = tu_data_path(ptb.train);
    char *dir = tmp_path("cache/nested/ids"); /* created on first use */
    tt_vocab v;
    build_ok(train, &v);
    tt_tokens ref;
    load_ok(train, &v, NULL, &ref);

    double cold, warm;
    ino_t ino = load_cached(train, &v, dir, &ref, &cold); /* miss: tokenize, write */
    ino_t again = load_cached(train, &v, dir, &ref, &warm); /* hit: read, verify */
    print_message("PTB train ids: %.1f ms building the cache, %.1f ms from it\n", 1e3 * cold,
                  1e3 * warm);
    assert_true(again == ino); /* a hit does not rewrite the file (a rewrite is a new inode) */

    char *file = only_cache_file(dir);
    size_t good_len;
    char *good = tu_read_file(file, &good_len);
    assert_int_equal(memcmp(good, "TTIDS", 5), 0);

    /* Truncated: rebuilt, and the same file comes back. */
    assert_int_equal(truncate(file, (off_t)good_len - 3), 0);
    ino = load_cached(train, &v, dir, &ref, NULL);
    assert_true(ino != again);
    size_t len;
    char *data = tu_read_file(file, &len);
    assert_int_equal(len, good_len);
    assert_memory_equal(data, good, len);
    free(data);

    /* One flipped byte anywhere (an id, the checksum, the count, the magic): rebuilt. */
    const long offsets[] = {56 + 4 * 1000 + 1, (long)good_len - 1, 30, 16, 0, 8};
    for (size_t i = 0; i < sizeof offsets / sizeof offsets[0]; i++) {
        flip_byte(file, offsets[i]);
        ino_t now = load_cached(train, &v, dir, &ref, NULL);
        assert_true(now != ino);
        ino = now;
        data = tu_read_file(file, &len);
        assert_memory_equal(data, good, good_len);
        free(data);
    }
    /* Empty: rebuilt. */
    assert_int_equal(truncate(file, 0), 0);
    load_cached(train, &v, dir, &ref, NULL);
    free(good);
    free(file);

    /* Another vocabulary means another entry, not a wrong hit. */
    tt_vocab small;
    small_vocab(&small);
    tt_tokens t;
    load_ok(train, &small, dir, &t);
    assert_int_equal(t.n, ref.n);
    assert_int_equal(count_id(&t, small.eos), ptb.train_lines);
    assert_true(memcmp(t.ids, ref.ids, (size_t)t.n * sizeof *t.ids) != 0);
    tt_tokens_free(&t);
    assert_int_equal(cache_files(dir, NULL), 2);

    /* A cache folder that cannot be made is an error, not a silent miss. */
    char *blocker = put_text("not-a-dir", "x");
    char *bad_dir = tmp_path("not-a-dir/ids");
    char err[512] = "";
    assert_int_equal(tt_corpus_load(train, &v, bad_dir, &t, err, sizeof err), -1);
    assert_err(err, bad_dir, ": cannot create directory: Not a directory");
    free(bad_dir);
    free(blocker);

    tt_vocab_free(&small);
    tt_tokens_free(&ref);
    tt_vocab_free(&v);
    free(dir);
    free(train);
}

/* The one *.vocab file in dir. */
static char *only_vocab_file(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    char *one = NULL;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));) {
        size_t len = strlen(e->d_name);
        if (len < 6 || strcmp(e->d_name + len - 6, ".vocab") != 0) continue;
        if (n++ == 0) one = tt_xasprintf("%s/%s", dir, e->d_name);
    }
    closedir(d);
    assert_int_equal(n, 1);
    return one;
}

static void same_vocab(const tt_vocab *a, const tt_vocab *b)
{
    assert_int_equal(a->n, b->n);
    assert_memory_equal(a->hash, b->hash, sizeof a->hash);
    for (long i = 0; i < a->n; i++) {
        assert_string_equal(a->words[i], b->words[i]);
        assert_int_equal(a->counts[i], b->counts[i]);
    }
    assert_int_equal(a->eos, b->eos);
    assert_int_equal(a->unk, b->unk);
    assert_int_equal(tt_vocab_id(b, a->words[a->n / 2], strlen(a->words[a->n / 2])), a->n / 2);
}

/* The vocabulary through its cache: the same words, counts and hash as counted from the text; a
 * hit leaves the entry alone; a damaged entry is rebuilt; an edited corpus is another entry. */
static void test_vocab_cache(void **state)
{
    (void)state;
    char *train = tu_data_path(ptb.train);
    char *dir = tmp_path("vcache");
    tt_vocab ref, v;
    build_ok(train, &ref);
    char err[512] = "";
    double t0 = tt_now_seconds();
    if (tt_vocab_build(train, dir, &v, err, sizeof err) != 0) fail_msg("%s", err);
    const double cold = tt_now_seconds() - t0;
    same_vocab(&ref, &v);
    /* the pass that counted the words gave the split's ids too: their entry is there, and a
     * load hits it (no rewrite) with the ids tokenizing gives */
    char *ids_file = only_cache_file(dir);
    struct stat st;
    assert_int_equal(stat(ids_file, &st), 0);
    const ino_t ids_ino = st.st_ino;
    tt_tokens from_text, cached;
    load_ok(train, &v, NULL, &from_text);
    load_ok(train, &v, dir, &cached);
    same_tokens(&from_text, &cached);
    assert_non_null(cached.map); /* mapped, not read */
    assert_int_equal(stat(ids_file, &st), 0);
    assert_true(st.st_ino == ids_ino);
    tt_tokens_free(&from_text), tt_tokens_free(&cached);
    free(ids_file);
    tt_vocab_free(&v);
    char *file = only_vocab_file(dir);
    assert_int_equal(stat(file, &st), 0);
    const ino_t ino = st.st_ino;
    t0 = tt_now_seconds();
    if (tt_vocab_build(train, dir, &v, err, sizeof err) != 0) fail_msg("%s", err);
    const double warm = tt_now_seconds() - t0;
    print_message("PTB vocabulary: %.1f ms counted, %.1f ms from the cache\n", 1e3 * cold, 1e3 * warm);
    same_vocab(&ref, &v);
    tt_vocab_free(&v);
    assert_int_equal(stat(file, &st), 0);
    assert_true(st.st_ino == ino); /* a hit does not rewrite it */

    /* damaged: a count, a word, the header, truncated, empty: rebuilt, and right */
    size_t good_len;
    char *good = tu_read_file(file, &good_len);
    const long offsets[] = {2, 20, (long)good_len / 2, (long)good_len - 2};
    for (size_t i = 0; i < sizeof offsets / sizeof *offsets; i++) {
        flip_byte(file, offsets[i]);
        if (tt_vocab_build(train, dir, &v, err, sizeof err) != 0) fail_msg("%s", err);
        same_vocab(&ref, &v);
        tt_vocab_free(&v);
        size_t len;
        char *now = tu_read_file(file, &len);
        assert_int_equal(len, good_len);
        assert_memory_equal(now, good, len);
        free(now);
    }
    assert_int_equal(truncate(file, (off_t)good_len - 5), 0);
    if (tt_vocab_build(train, dir, &v, err, sizeof err) != 0) fail_msg("%s", err);
    same_vocab(&ref, &v);
    tt_vocab_free(&v);
    free(good);

    /* an edited corpus (another size and time): another entry, its own words */
    char *copy = put_text("vc-train.txt", "a b c\nb c\nc\n");
    tt_vocab a, b;
    if (tt_vocab_build(copy, dir, &a, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(a.n, 5); /* c b a <eos> <unk> */
    free(put_text("vc-train.txt", "a b c d\nb c\nc\n"));
    if (tt_vocab_build(copy, dir, &b, err, sizeof err) != 0) fail_msg("%s", err);
    assert_int_equal(b.n, 6);
    tt_vocab_free(&a), tt_vocab_free(&b);
    free(copy);
    tt_vocab_free(&ref);
    free(file), free(dir), free(train);
}

/* ---- errors ---------------------------------------------------------------------------------- */

/* The ranks of a run on one host meet an empty cache at once: three processes build the
 * vocabulary and the ids of one split together (one at a time, under the cache's lock) and all
 * get what a build without a cache gives. */
static void test_cache_together(void **state)
{
    (void)state;
    char *train = tu_data_path(ptb.train);
    char *dir = tmp_path("together");
    tt_vocab ref;
    build_ok(train, &ref);
    tt_tokens want;
    load_ok(train, &ref, NULL, &want);
    enum { PROCS = 3 };
    pid_t pid[PROCS];
    fflush(NULL);
    for (int k = 0; k < PROCS; k++) {
        pid[k] = fork();
        assert_true(pid[k] >= 0);
        if (pid[k] == 0) {
            char err[512];
            tt_vocab v;
            tt_tokens t;
            if (tt_vocab_build(train, dir, &v, err, sizeof err) != 0) _exit(2);
            if (v.n != ref.n || memcmp(v.hash, ref.hash, sizeof v.hash) != 0) _exit(3);
            if (tt_corpus_load(train, &v, dir, &t, err, sizeof err) != 0) _exit(4);
            if (t.n != want.n || memcmp(t.ids, want.ids, (size_t)t.n * sizeof *t.ids) != 0) _exit(5);
            _exit(0);
        }
    }
    for (int k = 0; k < PROCS; k++) {
        int st;
        assert_int_equal(waitpid(pid[k], &st, 0), pid[k]);
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
            fail_msg("process %d of %d: status %d", k, PROCS, WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    }
    tt_tokens_free(&want);
    tt_vocab_free(&ref);
    free(train), free(dir);
}

static void test_file_errors(void **state)
{
    (void)state;
    tt_vocab v;
    small_vocab(&v);
    char *p = tmp_path("no-such-file.txt");
    expect_fail(p, &v, ": cannot open: No such file or directory");
    free(p);
    p = put_text("empty.txt", "");
    expect_fail(p, &v, ": empty file");
    free(p);
    p = tmp_path("empty.gz");
    gz_put(p, "wb", "");
    expect_fail(p, &v, ": empty file");
    free(p);
    p = put_text("blank.txt", " \t\n\r\n\n\v\f");
    expect_fail(p, &v, ": no tokens");
    free(p);
    p = put_file("nul.txt", "ok\nab\0c\n", 8);
    expect_fail(p, &v, ":2: NUL byte at column 3");
    free(p);
    p = put_file("nul-end.txt", "ok\n\0", 4);
    expect_fail(p, &v, ":2: NUL byte at column 1");
    free(p);

    /* Exactly 1 MiB (not counting '\n') is fine, with '\n' or without; one byte more is not. */
    const size_t mib = (size_t)1 << 20;
    char *big = tt_xmalloc(mib + 8);
    memcpy(big, "x\n", 2);
    memset(big + 2, 'a', mib + 1);
    big[2 + mib] = '\n';
    p = put_file("mib.txt", big, mib + 3);
    tt_vocab w;
    build_ok(p, &w);
    assert_int_equal(w.n, 4);
    assert_int_equal(w.counts[w.eos], 2);
    tt_vocab_free(&w);
    free(p);
    p = put_file("mib-no-newline.txt", big, mib + 2);
    build_ok(p, &w);
    tt_vocab_free(&w);
    free(p);
    big[2 + mib] = 'a';
    big[3 + mib] = '\n';
    p = put_file("mib-plus-one.txt", big, mib + 4);
    expect_fail(p, &v, ":2: line longer than 1 MiB");
    free(p);
    p = put_file("mib-plus-one-no-newline.txt", big, mib + 3);
    expect_fail(p, &v, ":2: line longer than 1 MiB");
    free(p);
    free(big);
    tt_vocab_free(&v);
}

typedef struct {
    const char *bytes;
    int col;
    unsigned char bad;
} utf8_case;

static void test_utf8(void **state)
{
    (void)state;
    tt_vocab v;
    small_vocab(&v);
    static const utf8_case bad[] = {
        {"\x80", 3, 0x80},                 /* lone continuation byte */
        {"\xBF", 3, 0xBF},
        {"\xC0\x80", 3, 0xC0},             /* overlong NUL */
        {"\xC1\xBF", 3, 0xC1},             /* overlong U+007F */
        {"\xE0\x80\x80", 3, 0xE0},         /* overlong, 3 bytes */
        {"\xE0\x9F\xBF", 3, 0xE0},         /* overlong U+07FF */
        {"\xED\xA0\x80", 3, 0xED},         /* surrogate U+D800 */
        {"\xED\xBF\xBF", 3, 0xED},         /* surrogate U+DFFF */
        {"\xF0\x80\x80\x80", 3, 0xF0},     /* overlong, 4 bytes */
        {"\xF0\x8F\xBF\xBF", 3, 0xF0},     /* overlong U+FFFF */
        {"\xF4\x90\x80\x80", 3, 0xF4},     /* U+110000 */
        {"\xF5\x80\x80\x80", 3, 0xF5},
        {"\xF8\x88\x80\x80\x80", 3, 0xF8}, /* old 5-byte form */
        {"\xFE", 3, 0xFE},
        {"\xFF", 3, 0xFF},
        {"\xC3\x28", 3, 0xC3},             /* bad continuation */
        {"\xE2\x82", 3, 0xE2},             /* cut short by the space after it */
        {"\xE2\x28\xA1", 3, 0xE2},
        {"\xF0\x9F\x98", 3, 0xF0},
        {"\xC3\xA9\xFF", 5, 0xFF},         /* columns count bytes: é is two */
        {"\xE2\x82\xAC\xE2\x82\xAC\x80", 9, 0x80},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *text = tt_xasprintf("fine\nx %s y\n", bad[i].bytes);
        char *p = put_text("utf8.txt", text);
        char suffix[128];
        snprintf(suffix, sizeof suffix, ":2: invalid UTF-8 (byte 0x%02X at column %d)", bad[i].bad,
                 bad[i].col);
        expect_fail(p, &v, suffix);
        free(p);
        free(text);
    }
    /* Cut short by the end of the line, and by the end of the file. */
    char *p = put_text("utf8-eol.txt", "ab\xC3\nc\n");
    expect_fail(p, &v, ":1: invalid UTF-8 (byte 0xC3 at column 3)");
    free(p);
    p = put_text("utf8-eof.txt", "a\nab\xF0\x9F\x98");
    expect_fail(p, &v, ":2: invalid UTF-8 (byte 0xF0 at column 3)");
    free(p);

    /* The edges of every range are accepted and become words. */
    static const char *const good[] = {"\xC2\x80", "\xDF\xBF", "\xE0\xA0\x80", "\xED\x9F\xBF",
                                       "\xEE\x80\x80", "\xEF\xBF\xBF", "\xF0\x90\x80\x80",
                                       "\xF4\x8F\xBF\xBF", "caf\xC3\xA9", "\xF0\x9F\x98\x80",
                                       "\x7F"};
    tt_buf text = {0};
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) tt_buf_printf(&text, "%s ", good[i]);
    p = put_text("utf8-good.txt", text.data);
    tt_vocab w;
    build_ok(p, &w);
    assert_int_equal(w.n, (long)(sizeof good / sizeof good[0]) + 2);
    for (size_t i = 0; i < sizeof good / sizeof good[0]; i++)
        assert_true(tt_vocab_id(&w, good[i], strlen(good[i])) >= 0);
    tt_vocab_free(&w);
    tt_buf_free(&text);
    free(p);
    tt_vocab_free(&v);
}

/* tt_utf8_len, which the corpus reader and the safetensors header share: the length of each
 * form at the edges of its range, and 0 for overlong forms, surrogates, code points above
 * U+10FFFF and a sequence that the n bytes available cut short. */
static void test_utf8_len(void **state)
{
    (void)state;
    static const struct {
        const char *bytes;
        size_t n, len;
    } cases[] = {
        {"\x00", 1, 1},                 {"\x7F", 1, 1},
        {"\xC2\x80", 2, 2},             {"\xDF\xBF", 2, 2},             /* U+0080, U+07FF */
        {"\xE0\xA0\x80", 3, 3},         {"\xED\x9F\xBF", 3, 3},         /* U+0800, U+D7FF */
        {"\xEE\x80\x80", 3, 3},         {"\xEF\xBF\xBF", 3, 3},         /* U+E000, U+FFFF */
        {"\xF0\x90\x80\x80", 4, 4},     {"\xF4\x8F\xBF\xBF", 4, 4},     /* U+10000, U+10FFFF */
        {"\xC3\xA9xyz", 5, 2},          /* the bytes after a sequence are not its own */
        {"a", 0, 0},                    /* nothing available */
        {"\x80", 1, 0},                 {"\xBF", 1, 0}, /* continuation bytes */
        {"\xC0\x80", 2, 0},             {"\xC1\xBF", 2, 0},             /* overlong, 2 bytes */
        {"\xE0\x9F\xBF", 3, 0},         {"\xF0\x8F\xBF\xBF", 4, 0},     /* overlong, 3 and 4 */
        {"\xED\xA0\x80", 3, 0},         {"\xED\xBF\xBF", 3, 0},         /* U+D800, U+DFFF */
        {"\xF4\x90\x80\x80", 4, 0},     {"\xF5\x80\x80\x80", 4, 0},     /* U+110000, F5 */
        {"\xF8\x88\x80\x80\x80", 5, 0}, {"\xFF", 1, 0}, /* no lead byte */
        {"\xC3\x28", 2, 0},             {"\xE2\x28\xA1", 3, 0},         /* bad continuation */
        {"\xF0\x9F\x98\x28", 4, 0},
        {"\xC3\xA9", 1, 0},             {"\xE2\x82\xAC", 2, 0},         /* cut short by n */
        {"\xF0\x9F\x98\x80", 3, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const size_t got = tt_utf8_len(cases[i].bytes, cases[i].n);
        if (got != cases[i].len)
            fail_msg("case %zu (n %zu): length %zu, want %zu", i, cases[i].n, got, cases[i].len);
    }
}

/* gzip is recognized by content, not by name; several members in a row are one text. */
static void test_gzip(void **state)
{
    (void)state;
    const char *text = "the cat sat\n\non the mat\nthe end";
    char *plain = put_text("plain.gz", text); /* misnamed on purpose */
    char *packed = tmp_path("packed.txt");
    gz_put(packed, "wb", text);
    char *multi = tmp_path("multi.txt.gz");
    gz_put(multi, "wb", "the cat sat\n\non the");
    gz_put(multi, "ab", " mat\nthe end");
    tt_vocab a, b;
    build_ok(plain, &a);
    build_ok(packed, &b);
    assert_memory_equal(a.hash, b.hash, 32);
    assert_int_equal(a.n, 8);
    tt_tokens ta, tb, tm;
    load_ok(plain, &a, NULL, &ta);
    load_ok(packed, &a, NULL, &tb);
    load_ok(multi, &a, NULL, &tm);
    assert_int_equal(ta.n, 12);
    same_tokens(&ta, &tb);
    same_tokens(&ta, &tm);
    tt_tokens_free(&ta);
    tt_tokens_free(&tb);
    tt_tokens_free(&tm);
    tt_vocab_free(&b);
    free(plain);
    free(multi);

    /* Damaged copies of a real .gz, and of the small one. */
    char *train = tu_data_path(ptb.train);
    size_t gzlen;
    char *gz = tu_read_file(train, &gzlen);
    char *p = put_file("truncated.gz", gz, gzlen / 2);
    expect_fail(p, &a, ": corrupt gzip data (unexpected end of file)");
    free(p);
    p = put_file("header-only.gz", gz, 10);
    expect_fail(p, &a, ": corrupt gzip data (unexpected end of file)");
    free(p);
    free(gz);
    free(train);

    gz = tu_read_file(packed, &gzlen);
    gz[gzlen - 8] ^= 1; /* the CRC-32 of the trailer */
    p = put_file("bad-crc.gz", gz, gzlen);
    expect_fail(p, &a, ": corrupt gzip data (incorrect data check)");
    free(p);
    gz[gzlen - 8] ^= 1;
    gz[gzlen - 1] ^= 1; /* the length in the trailer */
    p = put_file("bad-length.gz", gz, gzlen);
    expect_fail(p, &a, ": corrupt gzip data (incorrect length check)");
    free(p);
    gz[gzlen - 1] ^= 1;
    gz[2] = 9; /* compression method: only 8 (deflate) exists */
    p = put_file("bad-method.gz", gz, gzlen);
    expect_fail(p, &a, ": corrupt gzip data (unknown compression method)");
    free(p);
    gz[2] = 8;
    gz = tt_xrealloc(gz, gzlen + 5);
    memcpy(gz + gzlen, "junk\n", 5);
    p = put_file("trailing.gz", gz, gzlen + 5);
    expect_fail(p, &a, ": corrupt gzip data (trailing data after the gzip stream)");
    free(p);
    free(gz);
    free(packed);
    tt_vocab_free(&a);
}

/* ---- setup ----------------------------------------------------------------------------------- */

static int make_tmpdir(void **state)
{
    (void)state;
    tu_temp_dir("corpus", tmpdir, sizeof tmpdir);
    return 0;
}

static int remove_tmpdir(void **state)
{
    (void)state;
    return tu_rm_rf(tmpdir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ptb),
        cmocka_unit_test(test_wikitext2),
        cmocka_unit_test(test_small_format_and_order),
        cmocka_unit_test(test_vocab_save_load),
        cmocka_unit_test(test_vocab_load_errors),
        cmocka_unit_test(test_cache),
        cmocka_unit_test(test_vocab_cache),
        cmocka_unit_test(test_cache_together),
        cmocka_unit_test(test_file_errors),
        cmocka_unit_test(test_utf8),
        cmocka_unit_test(test_utf8_len),
        cmocka_unit_test(test_gzip),
    };
    return cmocka_run_group_tests(tests, make_tmpdir, remove_tmpdir);
}
