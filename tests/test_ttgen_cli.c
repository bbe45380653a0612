/* ttgen as a user runs it: the built binary (TTGEN_BIN) started by testutil's process runner, its
 * stdout and stderr captured, and TTGEN_CACHE_DIR pointing at a fresh folder under /tmp. Covers the
 * cache across runs (hits, damaged entries rebuilt, concurrent runs), --dump, compile errors and
 * where their evidence is written, spec and usage errors with their exit codes, the fallback
 * architecture without a GPU driver, and the time of a cached run. ptb's kernels are compiled
 * once, into a warm cache that tests which need no cold one copy into their own folder. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dlfcn.h>
#include <ftw.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cache.h"
#include "plan.h"
#include "spec.h"
#include "testutil.h"
#include "util.h"

#define PTB TT_SOURCE_DIR "/specs/ptb.yaml"
#define TXL TT_SOURCE_DIR "/specs/txl-ptb.yaml" /* no mla_fwd: the quickest spec to compile */
#define MAX_KERNELS 64

/* --- fixture: a folder per test; the default cache lives in it ---------------------------------- */

typedef struct {
    char root[64];
    char *cache;   /* TTGEN_CACHE_DIR of every run unless a test passes another */
    char *unused;  /* XDG_CACHE_HOME of every run: ttgen must never create it */
} fixture;

static int setup(void **state)
{
    fixture *f = tt_xcalloc(1, sizeof *f);
    tu_temp_dir("cli", f->root, sizeof f->root);
    f->cache = tt_xasprintf("%s/cache", f->root);
    f->unused = tt_xasprintf("%s/xdg-unused", f->root);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    tu_rm_rf(f->root);
    free(f->cache);
    free(f->unused);
    free(f);
    return 0;
}

/* --- running ttgen ----------------------------------------------------------------------------- */

typedef tu_proc run;

/* TTGEN_CACHE_DIR and XDG_CACHE_HOME replaced: no run can reach the user's cache. */
static void start(fixture *f, const char *cache, const char *const *args, run *r)
{
    const char *argv[32] = {TTGEN_BIN};
    int n = 1;
    for (; args[n - 1]; n++) {
        assert_true(n < 31);
        argv[n] = args[n - 1];
    }
    argv[n] = NULL;
    char *env[3] = {tt_xasprintf("TTGEN_CACHE_DIR=%s", cache),
                    tt_xasprintf("XDG_CACHE_HOME=%s", f->unused), NULL};
    tu_proc_start(r, argv, (const char *const *)env);
    free(env[0]), free(env[1]);
}

static void finish(run *r)
{
    tu_proc_wait(r, 0);
    if (r->signal) fail_msg("ttgen died of signal %d; stderr:\n%s", r->signal, r->err);
}

static void run_free(run *r) { tu_proc_free(r); }

#define TTGEN(f, cache, r, ...)                                                                    \
    do {                                                                                           \
        start((f), (cache), (const char *const[]){__VA_ARGS__, NULL}, (r));                        \
        finish(r);                                                                                 \
    } while (0)

/* --- a cache that already holds ptb's kernels, compiled once for the tests that need no cold one -- */

static fixture *warm; /* its cache holds every kernel of ptb */

static int group_setup(void **state)
{
    (void)state;
    if (setup((void **)&warm) != 0) return -1;
    run r;
    TTGEN(warm, warm->cache, &r, PTB, "-q");
    const int status = r.status;
    if (status != 0) fprintf(stderr, "ttgen %s: exit code %d\n%s", PTB, status, r.err);
    run_free(&r);
    return status == 0 ? 0 : -1;
}

static int group_teardown(void **state)
{
    (void)state;
    return warm ? teardown((void **)&warm) : 0;
}

/* Copies the warm cache's entries into f's cache folder. */
static void use_warm_cache(fixture *f)
{
    char *pattern = tt_xasprintf("%s/*/*.cubin", warm->cache), err[512];
    glob_t g;
    assert_int_equal(glob(pattern, 0, NULL, &g), 0);
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *rel = g.gl_pathv[i] + strlen(warm->cache);
        char *dst = tt_xasprintf("%s%s", f->cache, rel);
        char *dir = tt_xasprintf("%.*s", (int)(strrchr(dst, '/') - dst), dst);
        assert_int_equal(tt_mkdir_p(dir, err, sizeof err), 0);
        char *data;
        size_t len;
        assert_int_equal(tt_read_file(g.gl_pathv[i], 0, &data, &len, err, sizeof err), 0);
        tu_write_file(dst, data, len);
        free(data), free(dir), free(dst);
    }
    globfree(&g);
    free(pattern);
}

/* --- --json, read just enough ------------------------------------------------------------------ */

typedef struct {
    char name[128];
    char key[65];
    char arch[16]; /* what it was built for */
    int cached;    /* 1, 0, or -1 when absent */
} jkernel;

/* The kernels array of ttgen --json: each object's name, key and cached flag. */
static int parse_kernels(const char *json, jkernel *k, int max)
{
    if (json[0] != '{') fail_msg("not a JSON object:\n%s", json);
    int n = 0;
    const char *p = json;
    while ((p = strstr(p, "{\"name\":\"")) != NULL) {
        assert_true(n < max);
        p += 9;
        const char *q = strchr(p, '"');
        assert_non_null(q);
        assert_true((size_t)(q - p) < sizeof k[n].name);
        memcpy(k[n].name, p, (size_t)(q - p));
        k[n].name[q - p] = '\0';
        const char *next = strstr(q, "{\"name\":\"");
        const char *key = strstr(q, "\"key\":\"");
        if (!key || (next && key > next)) fail_msg("kernel %s has no key", k[n].name);
        memcpy(k[n].key, key + 7, 64);
        k[n].key[64] = '\0';
        const char *a = strstr(q, "\"arch\":\"");
        if (!a || (next && a > next)) fail_msg("kernel %s has no arch", k[n].name);
        a += 8;
        const size_t al = strcspn(a, "\"");
        assert_true(al < sizeof k[n].arch);
        memcpy(k[n].arch, a, al);
        k[n].arch[al] = '\0';
        const char *c = strstr(q, "\"cached\":");
        k[n].cached = !c || (next && c > next) ? -1 : strncmp(c + 9, "true", 4) == 0 ? 1 : 0;
        n++;
        p = q;
    }
    if (n == 0) fail_msg("no kernels in:\n%s", json);
    return n;
}

static int count_cached(const jkernel *k, int n, int want)
{
    int c = 0;
    for (int i = 0; i < n; i++) c += k[i].cached == want;
    return c;
}

static int count_str(const char *s, const char *what)
{
    int n = 0;
    for (const char *p = s; (p = strstr(p, what)) != NULL; p += strlen(what)) n++;
    return n;
}

static void key_from_hex(const char *hex, uint8_t key[32])
{
    for (int i = 0; i < 32; i++) {
        unsigned v;
        if (sscanf(hex + 2 * i, "%2x", &v) != 1) fail_msg("bad key '%s'", hex);
        key[i] = (uint8_t)v;
    }
}

static char *entry_path(const char *cache_dir, const char *key_hex)
{
    tt_cache c = {0};
    char err[512];
    if (tt_cache_open(&c, cache_dir, err, sizeof err) != 0) fail_msg("%s", err);
    uint8_t key[32];
    key_from_hex(key_hex, key);
    char *p = tt_cache_path(&c, key);
    tt_cache_close(&c);
    return p;
}

/* Every entry of these kernels loads through the library. */
static void expect_valid_entries(const char *cache_dir, const jkernel *k, int n)
{
    tt_cache c = {0};
    char err[512];
    if (tt_cache_open(&c, cache_dir, err, sizeof err) != 0) fail_msg("%s", err);
    for (int i = 0; i < n; i++) {
        uint8_t key[32];
        key_from_hex(k[i].key, key);
        void *cubin = NULL;
        size_t len = 0;
        char *log = NULL, why[256] = "";
        if (tt_cache_get(&c, key, &cubin, &len, &log, why, sizeof why) != TT_CACHE_HIT)
            fail_msg("cache entry of %s does not load: %s", k[i].name, why);
        free(cubin);
        free(log);
    }
    tt_cache_close(&c);
}

static int tmp_found;
static int find_tmp(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag;
    if (strstr(path + ftw->base, ".tmp.")) {
        print_error("left behind: %s\n", path);
        tmp_found++;
    }
    return 0;
}

/* --- tests -------------------------------------------------------------------------------------- */

/* The number of kernel instances the library plans for a spec. */
static int plan_size(const char *spec_path)
{
    char err[1024];
    tt_spec s;
    tt_plan p;
    if (tt_spec_load(spec_path, &s, err, sizeof err) != 0) fail_msg("%s", err);
    if (tt_plan_build(&s, "sm_90", &p, err, sizeof err) != 0) fail_msg("%s", err);
    const int n = p.n;
    tt_plan_free(&p);
    tt_spec_free(&s);
    return n;
}

/* How many of those instances come from template file tpl. */
static int plan_instances_of(const char *spec_path, const char *tpl)
{
    char err[1024];
    tt_spec s;
    tt_plan p;
    if (tt_spec_load(spec_path, &s, err, sizeof err) != 0) fail_msg("%s", err);
    if (tt_plan_build(&s, "sm_90", &p, err, sizeof err) != 0) fail_msg("%s", err);
    int n = 0;
    for (int i = 0; i < p.n; i++) n += strcmp(p.kernels[i].template_file, tpl) == 0;
    tt_plan_free(&p);
    tt_spec_free(&s);
    return n;
}

/* First run compiles everything, the second loads everything from the cache. */
static void test_json_cached_second_run(void **state)
{
    fixture *f = *state;
    run r1, r2;
    jkernel k1[MAX_KERNELS], k2[MAX_KERNELS];
    TTGEN(f, f->cache, &r1, PTB, "--json");
    tu_expect_exit(&r1, 0, "first run");
    int n = parse_kernels(r1.out, k1, MAX_KERNELS);
    assert_int_equal(n, plan_size(PTB)); /* every kernel of the plan, each once */
    if (count_cached(k1, n, 0) != n) fail_msg("first run: not every kernel \"cached\":false:\n%s", r1.out);
    assert_string_equal(r1.err, "");

    TTGEN(f, f->cache, &r2, PTB, "--json");
    tu_expect_exit(&r2, 0, "second run");
    assert_int_equal(parse_kernels(r2.out, k2, MAX_KERNELS), n);
    if (count_cached(k2, n, 1) != n) fail_msg("second run: not every kernel \"cached\":true:\n%s", r2.out);
    for (int i = 0; i < n; i++) {
        assert_string_equal(k1[i].name, k2[i].name);
        assert_string_equal(k1[i].key, k2[i].key);
    }
    assert_false(tu_exists(f->unused));
    print_message("  %d kernels: compiled in %.2f s, then cached in %.3f s\n", n, r1.seconds,
                  r2.seconds);
    run_free(&r1), run_free(&r2);
}

/* --json stays JSON when the spec's path holds a quote and a backslash: they are escaped. */
static void test_json_escapes_spec_path(void **state)
{
    fixture *f = *state;
    char *dir = tt_xasprintf("%s/a \"quoted\" and back\\slashed folder", f->root), err[512];
    assert_int_equal(tt_mkdir_p(dir, err, sizeof err), 0);
    char *path = tt_xasprintf("%s/ptb.yaml", dir), *text = tu_read_file(PTB, NULL);
    tu_write_file(path, text, strlen(text));
    run r;
    TTGEN(f, f->cache, &r, path, "--json", "--no-compile");
    tu_expect_exit(&r, 0, "a spec in an odd folder");
    char *want = tt_xasprintf("\"spec\":\"%s/a \\\"quoted\\\" and back\\\\slashed folder/ptb.yaml\",",
                              f->root);
    if (!strstr(r.out, want)) fail_msg("stdout lacks %s:\n%s", want, r.out);
    run_free(&r);
    free(want), free(text), free(path), free(dir);
}

/* A truncated entry and one with a flipped byte are rebuilt; the rest still hit. */
static void test_damaged_entries_rebuilt(void **state)
{
    fixture *f = *state;
    use_warm_cache(f);
    run r;
    jkernel k[MAX_KERNELS], k4[MAX_KERNELS];
    TTGEN(f, f->cache, &r, PTB, "--json");
    tu_expect_exit(&r, 0, "first run");
    const int n = parse_kernels(r.out, k, MAX_KERNELS);
    assert_true(n >= 3);
    /* Entries do not depend on the folder they were written in. */
    if (count_cached(k, n, 1) != n) fail_msg("a copied cache does not hit:\n%s", r.out);
    run_free(&r);

    char *truncated = entry_path(f->cache, k[0].key), *flipped = entry_path(f->cache, k[n - 1].key);
    struct stat st;
    assert_int_equal(stat(truncated, &st), 0);
    assert_int_equal(truncate(truncated, st.st_size / 2), 0);
    char *data = tu_read_file(flipped, NULL);
    assert_int_equal(stat(flipped, &st), 0);
    data[st.st_size * 2 / 3] ^= 0x10;
    tu_write_file(flipped, data, (size_t)st.st_size);
    free(data);

    TTGEN(f, f->cache, &r, PTB);
    tu_expect_exit(&r, 0, "run over damaged entries");
    if (count_str(r.out, "rebuilt") != 2) fail_msg("want two entries rebuilt:\n%s", r.out);
    for (int i = 0; i < n; i++) {
        char note[64];
        snprintf(note, sizeof note, "rebuilt: cache entry %.16s", k[i].key);
        const int damaged = i == 0 || i == n - 1;
        if ((strstr(r.out, note) != NULL) != damaged)
            fail_msg("%s: %s\n%s", k[i].name, damaged ? "damaged but not rebuilt" : "rebuilt but intact",
                     r.out);
    }
    assert_int_equal(count_str(r.out, "; compiled in"), 2);
    assert_int_equal(count_str(r.out, "; cached"), n - 2);
    const char *note = strstr(r.out, "rebuilt");
    print_message("  %.*s\n", (int)strcspn(note, "\n"), note);
    run_free(&r);

    expect_valid_entries(f->cache, k, n);
    TTGEN(f, f->cache, &r, PTB, "--json");
    tu_expect_exit(&r, 0, "run after the rebuild");
    assert_int_equal(parse_kernels(r.out, k4, MAX_KERNELS), n);
    if (count_cached(k4, n, 1) != n) fail_msg("not all cached after the rebuild:\n%s", r.out);
    run_free(&r);
    free(truncated);
    free(flipped);
}

/* Two runs started together on an empty cache both succeed and leave a whole cache. */
static void test_concurrent_runs(void **state)
{
    fixture *f = *state;
    for (int rep = 0; rep < 3; rep++) {
        char *cache = tt_xasprintf("%s/concurrent%d", f->root, rep);
        run a, b, c;
        start(f, cache, (const char *const[]){TXL, "--json", NULL}, &a);
        start(f, cache, (const char *const[]){TXL, "--json", NULL}, &b);
        finish(&a);
        finish(&b);
        tu_expect_exit(&a, 0, "first of two concurrent runs");
        tu_expect_exit(&b, 0, "second of two concurrent runs");
        jkernel ka[MAX_KERNELS], kb[MAX_KERNELS], kc[MAX_KERNELS];
        const int n = parse_kernels(a.out, ka, MAX_KERNELS);
        assert_int_equal(parse_kernels(b.out, kb, MAX_KERNELS), n);
        TTGEN(f, cache, &c, TXL, "--json");
        tu_expect_exit(&c, 0, "run after the concurrent ones");
        assert_int_equal(parse_kernels(c.out, kc, MAX_KERNELS), n);
        if (count_cached(kc, n, 1) != n) fail_msg("not all cached after concurrent runs:\n%s", c.out);
        tmp_found = 0;
        nftw(cache, find_tmp, 16, FTW_PHYS);
        if (tmp_found) fail_msg("%d temporary files left in %s", tmp_found, cache);
        print_message("  round %d: %.2f s and %.2f s together, %d + %d compiled\n", rep, a.seconds,
                      b.seconds, count_cached(ka, n, 0), count_cached(kb, n, 0));
        run_free(&a), run_free(&b), run_free(&c);
        free(cache);
    }
}

static void expect_nonempty(const char *dir, const char *name)
{
    char *path = tt_xasprintf("%s/%s", dir, name);
    struct stat st;
    if (stat(path, &st) != 0) fail_msg("%s is missing", path);
    if (!S_ISREG(st.st_mode) || st.st_size == 0) fail_msg("%s is empty or not a file", path);
    free(path);
}

static char *read_in(const char *dir, const char *name)
{
    char *path = tt_xasprintf("%s/%s", dir, name);
    char *data = tu_read_file(path, NULL);
    free(path);
    return data;
}

/* --dump writes every stage; once compiled and once from the cache. */
static void check_dump(const char *dir, const run *r)
{
    jkernel k[MAX_KERNELS];
    const int n = parse_kernels(r->out, k, MAX_KERNELS);
    expect_nonempty(dir, "spec.yaml");
    expect_nonempty(dir, "plan.txt");
    expect_nonempty(dir, "report.json");
    char *plan = read_in(dir, "plan.txt"), *report = read_in(dir, "report.json");
    /* report.json is the "report" member of --json's output. */
    size_t rl = strlen(report);
    assert_true(rl > 2 && report[rl - 1] == '\n');
    report[rl - 1] = '\0';
    if (!strstr(r->out, report)) fail_msg("report.json differs from --json's report:\n%s", report);
    for (int i = 0; i < n; i++) {
        static const char *const ext[] = {"cu", "options", "log", "cubin"};
        for (int e = 0; e < 4; e++) {
            char name[160];
            snprintf(name, sizeof name, "%.127s.%s", k[i].name, ext[e]);
            expect_nonempty(dir, name);
        }
        if (!strstr(plan, k[i].name)) fail_msg("plan.txt lacks %s", k[i].name);
        char name[160];
        snprintf(name, sizeof name, "%.127s.cu", k[i].name);
        char *src = read_in(dir, name);
        assert_true(strncmp(src, "// Generated by ttgen", 21) == 0);
        free(src);
        snprintf(name, sizeof name, "%.127s.cubin", k[i].name);
        char *cubin = read_in(dir, name);
        assert_memory_equal(cubin, "\x7f" "ELF", 4);
        free(cubin);
        snprintf(name, sizeof name, "%.127s.options", k[i].name);
        char *opts = read_in(dir, name);
        char want[48];
        snprintf(want, sizeof want, "--gpu-architecture=%s\n", k[i].arch);
        if (!strstr(opts, want)) fail_msg("%s.options lacks %s", k[i].name, want);
        /* sm_90's own instructions (wgmma) only where the plan asks for them */
        if (strcmp(k[i].arch, "sm_90") != 0 && !(strcmp(k[i].arch, "sm_90a") == 0 && strstr(k[i].name, "_wg_")))
            fail_msg("%s is built for %s", k[i].name, k[i].arch);
        free(opts);
    }
    free(plan);
    free(report);
}

static void test_dump(void **state)
{
    fixture *f = *state;
    char *d1 = tt_xasprintf("%s/dump/compiled", f->root), *d2 = tt_xasprintf("%s/dump/cached", f->root);
    run r;
    TTGEN(f, f->cache, &r, PTB, "--json", "--dump", d1);
    tu_expect_exit(&r, 0, "--dump");
    check_dump(d1, &r);
    run_free(&r);
    TTGEN(f, f->cache, &r, PTB, "--json", "--dump", d2);
    tu_expect_exit(&r, 0, "--dump from the cache");
    jkernel k[MAX_KERNELS];
    const int n = parse_kernels(r.out, k, MAX_KERNELS);
    assert_int_equal(count_cached(k, n, 1), n);
    check_dump(d2, &r);
    run_free(&r);
    free(d1);
    free(d2);
}

/* Each "written to DIR/" of stderr names a folder with the source, options and log. Returns how
 * many folders there were; each log must contain `in_log`, each options file `in_options`. */
static int check_failure_folders(const char *err, const char *in_log, const char *in_options,
                                 const char *in_source)
{
    int n = 0;
    const char *p = err;
    while ((p = strstr(p, "written to ")) != NULL) {
        p += 11;
        const char *eol = strchr(p, '\n');
        size_t len = eol ? (size_t)(eol - p) : strlen(p);
        while (len && (p[len - 1] == '/' || p[len - 1] == ' ')) len--;
        char *dir = tt_xasprintf("%.*s", (int)len, p);
        if (dir[0] != '/') fail_msg("failure folder '%s' is not an absolute path", dir);
        struct stat st;
        if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) fail_msg("failure folder %s is missing", dir);
        char *pattern = tt_xasprintf("%s/*.cu", dir);
        glob_t g;
        if (glob(pattern, 0, NULL, &g) != 0 || g.gl_pathc != 1)
            fail_msg("%s should hold one .cu file", dir);
        char *src = tu_read_file(g.gl_pathv[0], NULL);
        if (!strstr(src, in_source)) fail_msg("%s lacks '%s'", g.gl_pathv[0], in_source);
        free(src);
        globfree(&g);
        free(pattern);
        expect_nonempty(dir, "options.txt");
        expect_nonempty(dir, "nvrtc.log");
        char *log = read_in(dir, "nvrtc.log"), *opts = read_in(dir, "options.txt");
        if (!strstr(log, in_log)) fail_msg("%s/nvrtc.log lacks '%s':\n%s", dir, in_log, log);
        if (!strstr(opts, in_options)) fail_msg("%s/options.txt lacks '%s'", dir, in_options);
        free(log), free(opts), free(dir);
        n++;
        p += len;
    }
    return n;
}

/* The offset of the first blank line's newline pair ("\n\n") in text. */
static size_t blank_line_at(const char *text)
{
    size_t i = 0;
    while (text[i] && !(text[i] == '\n' && text[i + 1] == '\n')) i++;
    if (!text[i]) fail_msg("no blank line in a template");
    return i;
}

/* The templates into tpl (made), file `name` replaced by edit(its text, ctx) (a new string). */
typedef char *(*template_edit)(const char *text, void *ctx);
static void copy_templates(const char *tpl, const char *name, template_edit edit, void *ctx)
{
    char err[512];
    assert_int_equal(tt_mkdir_p(tpl, err, sizeof err), 0);
    glob_t g;
    assert_int_equal(glob(TT_SOURCE_DIR "/templates/*", 0, NULL, &g), 0);
    int edited = 0;
    for (size_t i = 0; i < g.gl_pathc; i++) {
        const char *base = strrchr(g.gl_pathv[i], '/') + 1;
        char *text = tu_read_file(g.gl_pathv[i], NULL), *dst = tt_xasprintf("%s/%s", tpl, base);
        if (strcmp(base, name) == 0) {
            char *changed = edit(text, ctx);
            tu_write_file(dst, changed, strlen(changed));
            free(changed);
            edited++;
        } else {
            tu_write_file(dst, text, strlen(text));
        }
        free(text);
        free(dst);
    }
    globfree(&g);
    assert_int_equal(edited, 1);
}

/* mla.cu with its first line (its "// ttgen: needs FILE") replaced by ctx. */
static char *replace_needs_line(const char *text, void *ctx)
{
    assert_true(strncmp(text, "// ttgen: needs ", 16) == 0);
    return tt_xasprintf("%s%s", (const char *)ctx, strchr(text, '\n'));
}

/* A template's "// ttgen: needs FILE" line: a missing FILE, or a line naming none, is an error
 * that names the template or the file, never a crash or a silent compile without it. */
static void test_template_needs(void **state)
{
    fixture *f = *state;
    static const struct { const char *first, *want; } cases[] = {
        {"// ttgen: needs no-such-part.cuh", "no-such-part.cuh"},
        {"// ttgen: needs ", "a bad 'ttgen: needs' line"},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char *tpl = tt_xasprintf("%s/templates-needs-%zu", f->root, c);
        copy_templates(tpl, "mla.cu", replace_needs_line, (void *)cases[c].first);
        run r;
        TTGEN(f, f->cache, &r, PTB, "--templates", tpl);
        if (r.status == 0) fail_msg("ttgen accepted '%s'", cases[c].first);
        if (!strstr(r.err, cases[c].want)) fail_msg("stderr lacks '%s':\n%s", cases[c].want, r.err);
        run_free(&r);
        free(tpl);
    }
}

/* layernorm.cu with a syntax error after its opening comment, at the first blank line; *ctx gets
 * the error's line number. */
static char *inject_syntax_error(const char *text, void *ctx)
{
    const size_t at = blank_line_at(text);
    int line = 2;
    for (size_t c = 0; c < at; c++) line += text[c] == '\n';
    *(int *)ctx = line;
    return tt_xasprintf("%.*s\n__device__ float tt_injected_error = ;\n%s", (int)at, text, text + at + 1);
}

/* A template with a syntax error: exit 1, NVRTC's log (pointing into the template) on stderr, and
 * the evidence saved where stderr says. */
static void test_template_syntax_error(void **state)
{
    fixture *f = *state;
    char *tpl = tt_xasprintf("%s/templates", f->root);
    int line = 0;
    copy_templates(tpl, "layernorm.cu", inject_syntax_error, &line);
    assert_true(line > 0);

    run r;
    TTGEN(f, f->cache, &r, PTB, "--templates", tpl);
    tu_expect_exit(&r, 1, "a template with a syntax error");
    char where[64];
    snprintf(where, sizeof where, "templates/layernorm.cu(%d): error", line);
    if (!strstr(r.err, where)) fail_msg("stderr lacks NVRTC's '%s':\n%s", where, r.err);
    /* layernorm.cu serves several instances (plain and residual, forward and backward): all
     * fail, all are saved. */
    const int want = plan_instances_of(PTB, "layernorm.cu");
    assert_true(want >= 2);
    int n = check_failure_folders(r.err, where, "--gpu-architecture=sm_90", "tt_injected_error");
    if (n != want) fail_msg("%d failure folders named on stderr, want %d:\n%s", n, want, r.err);
    run_free(&r);
    free(tpl);
}

/* An option NVRTC does not know: exit 1, its complaint on stderr, the evidence saved. */
static void test_bad_nvrtc_option(void **state)
{
    fixture *f = *state;
    run r;
    TTGEN(f, f->cache, &r, PTB, "--nvrtc-opt=--no-such-option");
    tu_expect_exit(&r, 1, "--nvrtc-opt=--no-such-option");
    if (!strstr(r.err, "--no-such-option")) fail_msg("stderr does not name the option:\n%s", r.err);
    int n = check_failure_folders(r.err, "no-such-option", "--no-such-option\n", "#define TT_KERNEL");
    if (n < 1) fail_msg("no failure folder named on stderr:\n%s", r.err);
    run_free(&r);
}

/* A spec with an unknown key: exit 2 and one line, "path:line:col: message". */
static void test_spec_error(void **state)
{
    fixture *f = *state;
    char *path = tt_xasprintf("%s/unknown-key.yaml", f->root);
    const char *spec = "model:\n"
                       "  kind: tensorized\n"
                       "  d_model: 256\n"
                       "  layers: 3\n"
                       "  seq_len: 32\n"
                       "  d_inner: 2100\n"
                       "  rank: 40\n"
                       "  vocab: 10000\n"
                       "  colour: blue\n";
    tu_write_file(path, spec, strlen(spec));
    run r;
    TTGEN(f, f->cache, &r, path);
    tu_expect_exit(&r, 2, "a spec with an unknown key");
    char *want = tt_xasprintf("%s:9:3: ", path);
    if (strncmp(r.err, want, strlen(want)) != 0 || tu_count_lines(r.err) != 1 ||
        r.err[strlen(r.err) - 1] != '\n')
        fail_msg("stderr should be one line starting with '%s', is:\n%s", want, r.err);
    assert_string_equal(r.out, "");
    print_message("  %s", r.err);
    run_free(&r);
    free(want);
    free(path);
}

/* Usage errors: exit 2 with a message, nothing on stdout, nothing compiled. */
static void test_usage_errors(void **state)
{
    fixture *f = *state;
    char *missing = tt_xasprintf("%s/no-such-spec.yaml", f->root);
    struct {
        const char *what, *args[4], *in_err;
    } cases[] = {
        {"missing spec file", {missing, NULL}, missing},
        {"no arguments", {NULL}, "usage"},
        {"two specs", {PTB, PTB, NULL}, "usage"},
        {"--arch sm_70", {PTB, "--arch", "sm_70", NULL}, "sm_70"},
        {"--arch garbage", {PTB, "--arch", "gfx90a", NULL}, "gfx90a"},
        {"unknown option", {PTB, "--frobnicate", NULL}, "--frobnicate"},
        {"--jobs 0", {PTB, "--jobs", "0", NULL}, "--jobs"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        run r;
        start(f, f->cache, cases[i].args[0] ? cases[i].args : (const char *const[]){NULL}, &r);
        finish(&r);
        tu_expect_exit(&r, 2, cases[i].what);
        if (!strstr(r.err, cases[i].in_err))
            fail_msg("%s: stderr lacks '%s':\n%s", cases[i].what, cases[i].in_err, r.err);
        if (tu_count_lines(r.err) != 1)
            fail_msg("%s: stderr is not one line:\n%s", cases[i].what, r.err);
        assert_string_equal(r.out, "");
        print_message("  %-18s %s", cases[i].what, r.err);
        run_free(&r);
    }
    assert_false(tu_exists(f->cache)); /* nothing got as far as the cache */
    free(missing);
}

/* Without libcuda the architecture falls back to sm_90 and the report says why. */
static void test_no_gpu_driver(void **state)
{
    fixture *f = *state;
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h) {
        dlclose(h);
        print_message("  libcuda.so.1 is present on this machine: the no-driver fallback is not "
                      "testable here\n");
        skip();
    }
    use_warm_cache(f);
    run r;
    TTGEN(f, f->cache, &r, PTB);
    tu_expect_exit(&r, 0, "text report");
    if (!strstr(r.out, "no CUDA device")) fail_msg("stdout does not say 'no CUDA device':\n%s", r.out);
    if (!strstr(r.out, "kernels for sm_90 (")) fail_msg("the arch is not sm_90:\n%s", r.out);
    print_message("  %.*s\n", (int)strcspn(strstr(r.out, "kernels for"), "\n"), strstr(r.out, "kernels for"));
    run_free(&r);
    TTGEN(f, f->cache, &r, PTB, "--json");
    tu_expect_exit(&r, 0, "--json");
    assert_non_null(strstr(r.out, "\"arch\":\"sm_90\""));
    run_free(&r);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* A run whose kernels are all cached is quick: the median of five under 1 s (target: 0.1 s). */
static void test_cached_run_is_fast(void **state)
{
    fixture *f = *state;
    use_warm_cache(f);
    run r;
    double t[5];
    for (int i = 0; i < 5; i++) {
        TTGEN(f, f->cache, &r, PTB, "--json");
        tu_expect_exit(&r, 0, "cached run");
        jkernel k[MAX_KERNELS];
        const int n = parse_kernels(r.out, k, MAX_KERNELS);
        assert_int_equal(count_cached(k, n, 1), n);
        t[i] = r.seconds;
        run_free(&r);
    }
    qsort(t, 5, sizeof t[0], cmp_double);
    print_message("  cached runs %.1f / %.1f / %.1f ms (min / median / max)\n", 1e3 * t[0],
                  1e3 * t[2], 1e3 * t[4]);
    if (t[2] >= 1.0) fail_msg("a cached run takes %.3f s (median), want < 1 s", t[2]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_json_cached_second_run, setup, teardown),
        cmocka_unit_test_setup_teardown(test_json_escapes_spec_path, setup, teardown),
        cmocka_unit_test_setup_teardown(test_damaged_entries_rebuilt, setup, teardown),
        cmocka_unit_test_setup_teardown(test_concurrent_runs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dump, setup, teardown),
        cmocka_unit_test_setup_teardown(test_template_syntax_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_template_needs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_bad_nvrtc_option, setup, teardown),
        cmocka_unit_test_setup_teardown(test_spec_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_usage_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_gpu_driver, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cached_run_is_fast, setup, teardown),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
