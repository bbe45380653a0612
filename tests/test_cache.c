/* The kernel cache at library level (gen/cache.h): a put is read back byte for byte; a damaged
 * entry (truncated, extended, any byte flipped, or filed under another key) is reported corrupt
 * and never returns data; the folder is chosen in the documented order; writes leave no
 * temporaries, and readers never see half an entry while others write. Every test works in its
 * own folder under /tmp, never in the user's cache. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <pthread.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "sha256.h"
#include "testutil.h"
#include "util.h"

/* --- fixture: a fresh folder and a cache opened in it ------------------------------------------ */

typedef struct {
    char root[64];
    tt_cache cache;
} fixture;

static int setup(void **state)
{
    fixture *f = tt_xcalloc(1, sizeof *f);
    tu_temp_dir("cache", f->root, sizeof f->root);
    char err[512];
    if (tt_cache_open(&f->cache, f->root, err, sizeof err) != 0) {
        fprintf(stderr, "tt_cache_open: %s\n", err);
        tu_rm_rf(f->root);
        free(f);
        return -1;
    }
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    tt_cache_close(&f->cache);
    tu_rm_rf(f->root);
    free(f);
    return 0;
}

/* --- helpers ------------------------------------------------------------------------------------ */

static void key_of(const char *name, uint8_t key[32]) { tt_sha256(name, strlen(name), key); }

/* A CUBIN-like payload: the ELF magic, then bytes that depend on seed. */
static uint8_t *make_cubin(size_t len, unsigned seed)
{
    uint8_t *p = tt_xmalloc(len);
    uint32_t x = 2463534242u ^ seed;
    for (size_t i = 0; i < len; i++) {
        x ^= x << 13, x ^= x >> 17, x ^= x << 5;
        p[i] = (uint8_t)x;
    }
    if (len >= 4) memcpy(p, "\x7f" "ELF", 4);
    return p;
}

static void put_ok(const tt_cache *c, const uint8_t key[32], const void *cubin, size_t len,
                   const char *log)
{
    char err[512] = "";
    if (tt_cache_put(c, key, cubin, len, log, err, sizeof err) != 0) fail_msg("put: %s", err);
}

/* A get that must hit with exactly these bytes and log. */
static void expect_hit(const tt_cache *c, const uint8_t key[32], const void *cubin, size_t len,
                       const char *log)
{
    void *got = NULL;
    size_t got_len = 0;
    char *got_log = NULL, why[256] = "";
    tt_cache_status st = tt_cache_get(c, key, &got, &got_len, &got_log, why, sizeof why);
    if (st != TT_CACHE_HIT) fail_msg("expected a hit, got status %d (%s)", (int)st, why);
    assert_int_equal(got_len, len);
    assert_memory_equal(got, cubin, len);
    assert_non_null(got_log);
    assert_string_equal(got_log, log);
    free(got);
    free(got_log);
}

/* A get that must fail with `want` and leave the outputs untouched. */
static void expect_no_data(const tt_cache *c, const uint8_t key[32], tt_cache_status want,
                           const char *what)
{
    void *got = NULL;
    size_t got_len = 12345;
    char *got_log = NULL, why[256] = "";
    tt_cache_status st = tt_cache_get(c, key, &got, &got_len, &got_log, why, sizeof why);
    if (st != want)
        fail_msg("%s: status %d, want %d (why: '%s')", what, (int)st, (int)want, why);
    if (got || got_log || got_len != 12345) fail_msg("%s: a failed get returned data", what);
    if (want == TT_CACHE_CORRUPT && why[0] == '\0') fail_msg("%s: corrupt without a reason", what);
    free(got);
    free(got_log);
}

static int is_entry_name(const char *name)
{
    size_t n = strlen(name);
    if (n != 64 + strlen(".cubin") || strcmp(name + 64, ".cubin") != 0) return 0;
    for (int i = 0; i < 64; i++)
        if (!((name[i] >= '0' && name[i] <= '9') || (name[i] >= 'a' && name[i] <= 'f'))) return 0;
    return 1;
}

/* Counts the folder's files; fails on anything that is not an entry (a leftover temporary). */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    assert_non_null(d);
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0) continue;
        if (!is_entry_name(e->d_name)) {
            closedir(d);
            fail_msg("%s holds '%s', which is not a cache entry (a temporary left behind?)", dir,
                     e->d_name);
        }
        n++;
    }
    closedir(d);
    return n;
}

/* --- tests -------------------------------------------------------------------------------------- */

static void test_miss_put_hit(void **state)
{
    fixture *f = *state;
    uint8_t key[32], other[32];
    key_of("layernorm_fwd", key);
    key_of("colsum", other);
    expect_no_data(&f->cache, key, TT_CACHE_MISS, "empty cache");

    uint8_t *cubin = make_cubin(777, 1);
    const char *log = "ptxas info    : Used 32 registers, used 0 barriers\n";
    put_ok(&f->cache, key, cubin, 777, log);

    char *path = tt_cache_path(&f->cache, key);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_true(S_ISREG(st.st_mode));
    assert_true((size_t)st.st_size > 777 + strlen(log));
    free(path);

    expect_hit(&f->cache, key, cubin, 777, log);
    expect_hit(&f->cache, key, cubin, 777, log); /* a get does not consume the entry */
    expect_no_data(&f->cache, other, TT_CACHE_MISS, "another key");

    /* No log is stored as an empty one; a later put replaces the entry. */
    put_ok(&f->cache, other, cubin, 100, NULL);
    expect_hit(&f->cache, other, cubin, 100, "");
    uint8_t *cubin2 = make_cubin(300, 2);
    put_ok(&f->cache, key, cubin2, 300, "second");
    expect_hit(&f->cache, key, cubin2, 300, "second");
    assert_int_equal(count_entries(f->cache.dir), 2);
    free(cubin);
    free(cubin2);
}

/* Cuts an entry at lengths inside the header, at its end, inside the payload, one byte short; and
 * extends it by a byte. Each is corrupt; the intact entry hits again afterwards. */
static void test_truncated_entry(void **state)
{
    fixture *f = *state;
    uint8_t key[32];
    key_of("truncated", key);
    const size_t clen = 200;
    uint8_t *cubin = make_cubin(clen, 3);
    const char *log = "a log of some length\n";
    put_ok(&f->cache, key, cubin, clen, log);

    char *path = tt_cache_path(&f->cache, key), err[512];
    char *orig;
    size_t len;
    assert_int_equal(tt_read_file(path, 0, &orig, &len, err, sizeof err), 0);
    const size_t payload_at = len - clen - strlen(log); /* header + its checksum */
    const size_t cuts[] = {0, 1, 7, 8, 16, 47, 48, payload_at / 2, payload_at - 1, payload_at,
                           payload_at + 1, payload_at + clen / 2, payload_at + clen, len - 1};
    for (size_t i = 0; i < sizeof cuts / sizeof cuts[0]; i++) {
        assert_true(cuts[i] < len);
        tu_write_file(path, orig, len);
        assert_int_equal(truncate(path, (off_t)cuts[i]), 0);
        char what[64];
        snprintf(what, sizeof what, "truncated to %zu of %zu bytes", cuts[i], len);
        expect_no_data(&f->cache, key, TT_CACHE_CORRUPT, what);
    }
    char *longer = tt_xmalloc(len + 1);
    memcpy(longer, orig, len);
    longer[len] = 0;
    tu_write_file(path, longer, len + 1);
    expect_no_data(&f->cache, key, TT_CACHE_CORRUPT, "one byte appended");

    tu_write_file(path, orig, len);
    expect_hit(&f->cache, key, cubin, clen, log);
    free(longer);
    free(orig);
    free(path);
    free(cubin);
}

/* Flips bits at every position of the entry (or at positions `stride` apart) with two masks: each
 * damaged file must be rejected. */
static void flip_every_byte(const tt_cache *c, const uint8_t key[32], size_t stride)
{
    char *path = tt_cache_path(c, key), err[512];
    char *orig;
    size_t len;
    assert_int_equal(tt_read_file(path, 0, &orig, &len, err, sizeof err), 0);
    char *bad = tt_xmalloc(len);
    static const uint8_t masks[] = {0x01, 0x80};
    int checked = 0;
    for (size_t pos = 0;; pos = pos + stride < len ? pos + stride : len - 1) {
        for (int m = 0; m < 2; m++) {
            memcpy(bad, orig, len);
            bad[pos] = (char)(bad[pos] ^ masks[m]);
            tu_write_file(path, bad, len);
            char what[80];
            snprintf(what, sizeof what, "byte %zu of %zu xor 0x%02x", pos, len, masks[m]);
            expect_no_data(c, key, TT_CACHE_CORRUPT, what);
            checked++;
        }
        if (pos == len - 1) break;
    }
    print_message("  %d damaged copies of a %zu-byte entry rejected\n", checked, len);
    tu_write_file(path, orig, len);
    free(bad);
    free(orig);
    free(path);
}

/* An entry that is not a regular file (a link to /dev/zero, a FIFO: either would be read for
 * ever), or larger than any cubin, is corrupt at once: nothing is read into memory. */
static void test_entry_not_a_file(void **state)
{
    fixture *f = *state;
    uint8_t key[32];
    key_of("odd kinds", key);
    char *path = tt_cache_path(&f->cache, key);
    assert_int_equal(symlink("/dev/zero", path), 0);
    expect_no_data(&f->cache, key, TT_CACHE_CORRUPT, "a link to /dev/zero");
    assert_int_equal(unlink(path), 0);
    assert_int_equal(mkfifo(path, 0644), 0);
    expect_no_data(&f->cache, key, TT_CACHE_CORRUPT, "a FIFO without a writer");
    assert_int_equal(unlink(path), 0);
    FILE *big = fopen(path, "wb");
    assert_non_null(big);
    assert_int_equal(ftruncate(fileno(big), (off_t)TT_CACHE_ENTRY_MAX_BYTES + 1), 0);
    fclose(big);
    char why[256] = "";
    void *got = NULL;
    size_t got_len = 0;
    char *got_log = NULL;
    assert_int_equal(tt_cache_get(&f->cache, key, &got, &got_len, &got_log, why, sizeof why),
                     TT_CACHE_CORRUPT);
    assert_non_null(strstr(why, "more than"));
    assert_int_equal(unlink(path), 0);
    free(path);
}

static void test_every_flipped_byte(void **state)
{
    fixture *f = *state;
    uint8_t key[32];
    key_of("flip-small", key);
    uint8_t *cubin = make_cubin(64, 4);
    const char *log = "ptxas info: 0 bytes spill\n";
    put_ok(&f->cache, key, cubin, 64, log);
    flip_every_byte(&f->cache, key, 1); /* every position, header and payload */
    expect_hit(&f->cache, key, cubin, 64, log);

    /* A larger entry, sampled densely (the last byte always included). */
    uint8_t big_key[32];
    key_of("flip-large", big_key);
    const size_t big = 64 * 1024;
    uint8_t *big_cubin = make_cubin(big, 5);
    put_ok(&f->cache, big_key, big_cubin, big, log);
    flip_every_byte(&f->cache, big_key, 257);
    expect_hit(&f->cache, big_key, big_cubin, big, log);
    free(cubin);
    free(big_cubin);
}

/* A valid entry of key A renamed to key B's file is not B's entry. */
static void test_entry_under_other_key(void **state)
{
    fixture *f = *state;
    uint8_t a[32], b[32];
    key_of("kernel-a", a);
    key_of("kernel-b", b);
    uint8_t *ca = make_cubin(150, 6), *cb = make_cubin(150, 7);
    put_ok(&f->cache, a, ca, 150, "log a");
    put_ok(&f->cache, b, cb, 150, "log b");
    char *pa = tt_cache_path(&f->cache, a), *pb = tt_cache_path(&f->cache, b);
    assert_string_not_equal(pa, pb);
    assert_int_equal(rename(pa, pb), 0);
    expect_no_data(&f->cache, b, TT_CACHE_CORRUPT, "A's entry in B's file");
    expect_no_data(&f->cache, a, TT_CACHE_MISS, "A after its file moved");
    /* Putting B again repairs it. */
    put_ok(&f->cache, b, cb, 150, "log b");
    expect_hit(&f->cache, b, cb, 150, "log b");
    free(pa);
    free(pb);
    free(ca);
    free(cb);
}

/* Many puts, several of them to one key: only entries remain, no temporaries. */
static void test_put_leaves_no_temporaries(void **state)
{
    fixture *f = *state;
    uint8_t *cubin = make_cubin(4096, 8);
    for (int i = 0; i < 20; i++) {
        char name[32];
        snprintf(name, sizeof name, "kernel-%d", i % 5);
        uint8_t key[32];
        key_of(name, key);
        put_ok(&f->cache, key, cubin, 4096 - (size_t)i, name);
    }
    assert_int_equal(count_entries(f->cache.dir), 5);
    free(cubin);
}

/* A put that cannot write reports it, and leaves neither an entry nor a temporary. */
/* A temporary an interrupted ttgen left (its PID gone) is removed when the cache is opened; one
 * of a running process is not. */
static void test_stale_temporaries_removed(void **state)
{
    fixture *f = *state;
    const pid_t child = fork();
    if (child == 0) _exit(0);
    assert_true(child > 0);
    waitpid(child, NULL, 0);
    char stale[600], live[600];
    snprintf(stale, sizeof stale, "%s/%064d.cubin.tmp.%ld.7f3a", f->cache.dir, 0, (long)child);
    snprintf(live, sizeof live, "%s/%064d.cubin.tmp.%ld.7f3a", f->cache.dir, 1, (long)getpid());
    tu_write_file(stale, "half", 4);
    tu_write_file(live, "half", 4);
    tt_cache again;
    char err[256];
    assert_int_equal(tt_cache_open(&again, f->root, err, sizeof err), 0);
    assert_int_equal(access(stale, F_OK), 0); /* a minute old at least, first */
    const struct timeval old[2] = {{time(NULL) - 120, 0}, {time(NULL) - 120, 0}};
    assert_int_equal(utimes(stale, old), 0);
    assert_int_equal(utimes(live, old), 0);
    tt_cache_close(&again);
    assert_int_equal(tt_cache_open(&again, f->root, err, sizeof err), 0);
    assert_int_equal(access(stale, F_OK), -1);
    assert_int_equal(access(live, F_OK), 0);
    unlink(live);
    tt_cache_close(&again);
}

static void test_put_failure_reported(void **state)
{
    fixture *f = *state;
    uint8_t key[32];
    key_of("unwritable", key);
    char *moved = tt_xasprintf("%s.moved", f->cache.dir);
    assert_int_equal(rename(f->cache.dir, moved), 0);
    char err[512] = "";
    uint8_t cubin[16] = {0x7f, 'E', 'L', 'F'};
    assert_int_equal(tt_cache_put(&f->cache, key, cubin, sizeof cubin, "log", err, sizeof err), -1);
    print_message("  put into a missing folder: %s\n", err);
    assert_true(err[0] != '\0');
    assert_int_equal(rename(moved, f->cache.dir), 0);
    expect_no_data(&f->cache, key, TT_CACHE_MISS, "after a failed put");
    assert_int_equal(count_entries(f->cache.dir), 0);
    free(moved);
}

/* Writers replace one entry over and over while a reader reads it: the reader only ever sees
 * one complete version or the other. */
typedef struct {
    const tt_cache *cache;
    const uint8_t *key;
    const uint8_t *cubin[2];
    size_t len[2];
    int writer;
    volatile int *stop;
    int bad, reads;
    char why[512];
} race_arg;

static void *race_writer(void *p)
{
    race_arg *a = p;
    char err[512];
    for (int i = 0; i < 25; i++) {
        int v = (i + a->writer) & 1;
        if (tt_cache_put(a->cache, a->key, a->cubin[v], a->len[v], v ? "one" : "zero", err,
                         sizeof err) != 0) {
            a->bad++;
            snprintf(a->why, sizeof a->why, "%s", err);
        }
    }
    return NULL;
}

static void *race_reader(void *p)
{
    race_arg *a = p;
    while (!*a->stop) {
        void *got = NULL;
        size_t len = 0;
        char *log = NULL;
        tt_cache_status st = tt_cache_get(a->cache, a->key, &got, &len, &log, a->why, sizeof a->why);
        a->reads++;
        if (st != TT_CACHE_HIT) {
            a->bad++;
        } else {
            int v = strcmp(log, "one") == 0;
            if (len != a->len[v] || memcmp(got, a->cubin[v], len) != 0) {
                a->bad++;
                snprintf(a->why, sizeof a->why, "a hit with mixed contents");
            }
        }
        free(got);
        free(log);
    }
    return NULL;
}

static void test_concurrent_put_and_get(void **state)
{
    fixture *f = *state;
    uint8_t key[32];
    key_of("raced", key);
    uint8_t *c0 = make_cubin(20000, 9), *c1 = make_cubin(30000, 10);
    put_ok(&f->cache, key, c0, 20000, "zero");
    volatile int stop = 0;
    race_arg w[2], r;
    for (int i = 0; i < 2; i++)
        w[i] = (race_arg){.cache = &f->cache, .key = key, .cubin = {c0, c1}, .len = {20000, 30000},
                          .writer = i, .stop = &stop};
    r = w[0];
    pthread_t tw[2], tr;
    assert_int_equal(pthread_create(&tr, NULL, race_reader, &r), 0);
    for (int i = 0; i < 2; i++) assert_int_equal(pthread_create(&tw[i], NULL, race_writer, &w[i]), 0);
    for (int i = 0; i < 2; i++) pthread_join(tw[i], NULL);
    stop = 1;
    pthread_join(tr, NULL);
    print_message("  %d reads during 50 puts\n", r.reads);
    if (w[0].bad || w[1].bad) fail_msg("a put failed: %s", w[0].bad ? w[0].why : w[1].why);
    if (r.bad) fail_msg("%d of %d reads did not hit a whole entry: %s", r.bad, r.reads, r.why);
    assert_int_equal(count_entries(f->cache.dir), 1);
    free(c0);
    free(c1);
}

/* --- the folder's choice: flag > $TTGEN_CACHE_DIR > $XDG_CACHE_HOME/ttgen > $HOME/.cache/ttgen --- */

static const char *const env_names[] = {"TTGEN_CACHE_DIR", "XDG_CACHE_HOME", "HOME"};
typedef struct {
    fixture fx;
    char *saved[3];
    int had[3];
    char cwd[4096]; /* the test runs in its folder, so a relative path lands there */
} env_fixture;

static int setup_env(void **state)
{
    if (setup(state) != 0) return -1;
    env_fixture *e = calloc(1, sizeof *e);
    if (!e) return -1;
    e->fx = *(fixture *)*state;
    free(*state);
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(env_names[i]);
        e->had[i] = v != NULL;
        e->saved[i] = v ? strdup(v) : NULL;
    }
    if (!getcwd(e->cwd, sizeof e->cwd) || chdir(e->fx.root) != 0) return -1;
    *state = e;
    return 0;
}

static int teardown_env(void **state)
{
    env_fixture *e = *state;
    for (int i = 0; i < 3; i++) {
        if (e->had[i]) setenv(env_names[i], e->saved[i], 1);
        else unsetenv(env_names[i]);
        free(e->saved[i]);
    }
    if (chdir(e->cwd) != 0) return -1;
    tt_cache_close(&e->fx.cache);
    tu_rm_rf(e->fx.root);
    free(e);
    return 0;
}

/* Opens with flag and checks that the folder is under want_base and exists. */
static void expect_dir(const char *flag, const char *want_base, const char *what)
{
    tt_cache c = {0};
    char err[512] = "";
    if (tt_cache_open(&c, flag, err, sizeof err) != 0) fail_msg("%s: open failed: %s", what, err);
    size_t n = strlen(want_base);
    if (strncmp(c.dir, want_base, n) != 0 || c.dir[n] != '/')
        fail_msg("%s: cache in %s, want it under %s/", what, c.dir, want_base);
    struct stat st;
    assert_int_equal(stat(c.dir, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    tt_cache_close(&c);
    assert_null(c.dir);
}

static void test_open_precedence(void **state)
{
    env_fixture *e = *state;
    const char *r = e->fx.root;
    char *flag = tt_xasprintf("%s/flag", r), *env = tt_xasprintf("%s/env", r);
    char *xdg = tt_xasprintf("%s/xdg", r), *home = tt_xasprintf("%s/home", r);
    char *xdg_want = tt_xasprintf("%s/ttgen", xdg), *home_want = tt_xasprintf("%s/.cache/ttgen", home);
    setenv("TTGEN_CACHE_DIR", env, 1);
    setenv("XDG_CACHE_HOME", xdg, 1);
    setenv("HOME", home, 1);

    expect_dir(flag, flag, "flag over everything");
    assert_false(tu_exists(env));
    assert_false(tu_exists(xdg));
    assert_false(tu_exists(home));
    expect_dir(NULL, env, "TTGEN_CACHE_DIR without a flag");
    assert_false(tu_exists(xdg));

    setenv("TTGEN_CACHE_DIR", "", 1);
    expect_dir(NULL, xdg_want, "empty TTGEN_CACHE_DIR");
    unsetenv("TTGEN_CACHE_DIR");
    expect_dir(NULL, xdg_want, "XDG_CACHE_HOME");
    assert_false(tu_exists(home));

    /* The XDG spec: a relative path is ignored (the test runs in its own folder). */
    setenv("XDG_CACHE_HOME", "relative/xdg", 1);
    expect_dir(NULL, home_want, "relative XDG_CACHE_HOME");
    assert_false(tu_exists("relative/xdg"));
    unsetenv("XDG_CACHE_HOME");
    expect_dir(NULL, home_want, "HOME");

    unsetenv("HOME");
    tt_cache c = {0};
    char err[512] = "";
    assert_int_equal(tt_cache_open(&c, NULL, err, sizeof err), -1);
    print_message("  no variable set: %s\n", err);
    assert_true(err[0] != '\0');
    expect_dir(flag, flag, "flag with no variable set");

    free(flag), free(env), free(xdg), free(home), free(xdg_want), free(home_want);
}

/* A folder that cannot be created is an error with a message, not a crash. */
static void test_open_unusable_dir(void **state)
{
    fixture *f = *state;
    char *file = tt_xasprintf("%s/a-file", f->root);
    tu_write_file(file, "x", 1);
    char *under = tt_xasprintf("%s/sub", file);
    tt_cache c = {0};
    char err[512] = "";
    assert_int_equal(tt_cache_open(&c, under, err, sizeof err), -1);
    print_message("  %s\n", err);
    assert_true(err[0] != '\0');
    assert_null(c.dir);
    free(file);
    free(under);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_miss_put_hit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_truncated_entry, setup, teardown),
        cmocka_unit_test_setup_teardown(test_entry_not_a_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_every_flipped_byte, setup, teardown),
        cmocka_unit_test_setup_teardown(test_entry_under_other_key, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_leaves_no_temporaries, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stale_temporaries_removed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_put_failure_reported, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_put_and_get, setup, teardown),
        cmocka_unit_test_setup_teardown(test_open_precedence, setup_env, teardown_env),
        cmocka_unit_test_setup_teardown(test_open_unusable_dir, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
