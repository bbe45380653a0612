/* Helpers shared by the generator and the runtime (see util.h). */
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

static _Thread_local tt_panic_trap *panic_trap;

void tt_panic_trap_set(tt_panic_trap *trap) { panic_trap = trap; }
tt_panic_trap *tt_panic_trap_get(void) { return panic_trap; }

void tt_panic(const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    tt_panic_trap *trap = panic_trap;
    if (trap) { /* the library's caller gets the message instead of an abort */
        panic_trap = NULL;
        const int at = snprintf(trap->message, sizeof trap->message, "internal error (%s:%d): ",
                                file, line);
        va_start(ap, fmt);
        if (at > 0 && (size_t)at < sizeof trap->message)
            vsnprintf(trap->message + at, sizeof trap->message - (size_t)at, fmt, ap);
        va_end(ap);
        longjmp(trap->env, 1);
    }
    fprintf(stderr, "%s:%d: internal error: ", file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

void *tt_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) tt_panic(__FILE__, __LINE__, "out of memory (%zu bytes)", n);
    return p;
}

void *tt_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    if (!p) tt_panic(__FILE__, __LINE__, "out of memory (%zu x %zu bytes)", n, size);
    return p;
}

void *tt_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) tt_panic(__FILE__, __LINE__, "out of memory (%zu bytes)", n);
    return q;
}

char *tt_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    return memcpy(tt_xmalloc(n), s, n);
}

char *tt_xasprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    TT_ASSERT(n >= 0);
    char *s = tt_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(s, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return s;
}

int tt_errf(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

typedef struct {
    void (*fn)(void *, int);
    void *ctx;
    int n, next;
    pthread_mutex_t lock;
} pfor;

static void *pfor_worker(void *arg)
{
    pfor *q = arg;
    for (;;) {
        pthread_mutex_lock(&q->lock);
        const int i = q->next < q->n ? q->next++ : -1;
        pthread_mutex_unlock(&q->lock);
        if (i < 0) return NULL;
        q->fn(q->ctx, i);
    }
}

void tt_parallel_for(int n, int threads, void (*fn)(void *ctx, int i), void *ctx)
{
    pfor q = {fn, ctx, n, 0, PTHREAD_MUTEX_INITIALIZER};
    if (threads <= 0) threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
    if (threads > n) threads = n;
    pthread_t *t = threads > 1 ? tt_xcalloc((size_t)threads - 1, sizeof *t) : NULL;
    int started = 0;
    for (int i = 0; i < threads - 1; i++)
        if (pthread_create(&t[started], NULL, pfor_worker, &q) == 0) started++;
    pfor_worker(&q);
    for (int i = 0; i < started; i++) pthread_join(t[i], NULL);
    free(t);
}

int tt_read_file(const char *path, size_t max, char **data, size_t *len, char *err, size_t errlen)
{
    /* O_NONBLOCK: a FIFO without a writer would block the open; it is refused below */
    const int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return tt_errf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
    struct stat st;
    if (fstat(fd, &st) != 0) {
        const int e = errno;
        close(fd);
        return tt_errf(err, errlen, "%s: cannot read: %s", path, strerror(e));
    }
    if (!S_ISREG(st.st_mode)) {
        close(fd);
        return tt_errf(err, errlen, "%s: not a regular file", path);
    }
    if (max && (unsigned long long)st.st_size > max) {
        close(fd);
        return tt_errf(err, errlen, "%s: %lld bytes, more than the %zu this file may have", path,
                       (long long)st.st_size, max);
    }
    FILE *f = fdopen(fd, "rb");
    if (!f) {
        close(fd);
        return tt_errf(err, errlen, "%s: cannot read: %s", path, strerror(errno));
    }
    tt_buf b = {0};
    char chunk[65536];
    size_t n;
    errno = 0;
    while ((n = fread(chunk, 1, sizeof chunk, f)) > 0) {
        tt_buf_append(&b, chunk, n);
        if (max && b.len > max) break; /* grew while read */
    }
    const int bad = ferror(f) ? (errno ? errno : EIO) : 0;
    fclose(f);
    if (bad || (max && b.len > max)) {
        tt_buf_free(&b);
        return bad ? tt_errf(err, errlen, "%s: cannot read: %s", path, strerror(bad))
                   : tt_errf(err, errlen, "%s: more than the %zu bytes this file may have", path, max);
    }
    tt_buf_append(&b, "", 1); /* NUL terminator, not counted */
    *data = b.data;
    *len = b.len - 1;
    return 0;
}

static int write_all(int fd, const void *p, size_t n)
{
    const char *c = p;
    while (n) {
        ssize_t w = write(fd, c, n);
        if (w < 0) {
            if (errno == EINTR) continue;
            return -1;
        }
        c += w;
        n -= (size_t)w;
    }
    return 0;
}

int tt_write_file_atomic(const char *path, const void *const *parts, const size_t *lens, int nparts,
                         char *err, size_t errlen)
{
    /* pid and thread make the temporary unique among concurrent writers of the same path. */
    char *tmp = tt_xasprintf("%s.tmp.%ld.%lx", path, (long)getpid(), (unsigned long)pthread_self());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) {
        tt_errf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        free(tmp);
        return -1;
    }
    for (int i = 0; i < nparts; i++) {
        if (write_all(fd, parts[i], lens[i]) != 0) goto fail;
    }
    if (fsync(fd) != 0) goto fail;
    if (close(fd) != 0) {
        fd = -1;
        goto fail;
    }
    fd = -1;
    if (rename(tmp, path) != 0) goto fail;
    free(tmp);
    return 0;
fail:
    tt_errf(err, errlen, "%s: cannot write: %s", path, strerror(errno));
    if (fd >= 0) close(fd);
    unlink(tmp);
    free(tmp);
    return -1;
}

int tt_mkdir_p(const char *path, char *err, size_t errlen)
{
    char *p = tt_xstrdup(path);
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, 0755) != 0 && errno != EEXIST) {
                tt_errf(err, errlen, "%s: cannot create directory: %s", p, strerror(errno));
                free(p);
                return -1;
            }
            *s = c;
            if (!c) break;
        }
    }
    free(p);
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISDIR(st.st_mode))
        return tt_errf(err, errlen, "%s: not a directory", path);
    return 0;
}

int tt_pid_gone(long pid)
{
    return pid > 0 && pid <= INT_MAX && kill((pid_t)pid, 0) != 0 && errno == ESRCH;
}

long tt_temp_pid(const char *name)
{
    const char *t = strstr(name, ".tmp.");
    if (!t) return -1;
    char *end;
    errno = 0;
    const long pid = strtol(t + 5, &end, 10);
    return errno || end == t + 5 || pid <= 0 || (*end && *end != '.') ? -1 : pid;
}

int tt_opt_refuse(const char *tool, int c, char *const *argv)
{
    const char *opt = argv[optind - 1];
    if (c == ':')
        fprintf(stderr, "%s: %s needs a value (see %s --help)\n", tool, opt, tool);
    else
        fprintf(stderr, "%s: unknown option '%s' (see %s --help)\n", tool, opt, tool);
    return 2;
}

long tt_env_long(const char *name, long lo, long hi, long fallback)
{
    const char *s = getenv(name);
    if (!s || !*s) return fallback;
    char *end;
    errno = 0;
    const long v = strtol(s, &end, 10);
    if (errno || *end || end == s || v < lo || v > hi) {
        fprintf(stderr, "%s=%s: not an integer from %ld to %ld; using %ld\n", name, s, lo, hi,
                fallback);
        return fallback;
    }
    return v;
}

int tt_env_choice(const char *name, const char *const *choices, int fallback)
{
    const char *s = getenv(name);
    if (!s || !*s) return fallback;
    for (int i = 0; choices[i]; i++)
        if (!strcmp(s, choices[i])) return i;
    fprintf(stderr, "%s=%s: not one of", name, s);
    for (int i = 0; choices[i]; i++) fprintf(stderr, "%s %s", i ? "," : "", choices[i]);
    fprintf(stderr, "; using %s\n", choices[fallback]);
    return fallback;
}

double tt_now_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

char *tt_capture(void (*write)(const void *arg, FILE *f), const void *arg)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    if (!f) tt_panic(__FILE__, __LINE__, "open_memstream failed");
    write(arg, f);
    fclose(f);
    return buf;
}

void tt_buf_append(tt_buf *b, const void *p, size_t n)
{
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        b->data = tt_xrealloc(b->data, cap);
        b->cap = cap;
    }
    memcpy(b->data + b->len, p, n);
    b->len += n;
    b->data[b->len] = '\0';
}

void tt_buf_printf(tt_buf *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    TT_ASSERT(n >= 0);
    if (b->len + (size_t)n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + (size_t)n + 1) cap *= 2;
        b->data = tt_xrealloc(b->data, cap);
        b->cap = cap;
    }
    va_start(ap, fmt);
    vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void tt_buf_free(tt_buf *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

size_t tt_utf8_len(const void *s, size_t n)
{
    const unsigned char *p = s;
    if (n == 0) return 0;
    const unsigned char b = p[0];
    size_t len;
    unsigned char lo = 0x80, hi = 0xBF; /* the second byte's range */
    if (b < 0x80) return 1;
    if (b < 0xC2) return 0; /* a continuation byte, or the overlong C0/C1 */
    if (b < 0xE0) {
        len = 2;
    } else if (b < 0xF0) {
        len = 3;
        if (b == 0xE0) lo = 0xA0;      /* overlong below U+0800 */
        else if (b == 0xED) hi = 0x9F; /* surrogates */
    } else if (b < 0xF5) {
        len = 4;
        if (b == 0xF0) lo = 0x90;      /* overlong below U+10000 */
        else if (b == 0xF4) hi = 0x8F; /* above U+10FFFF */
    } else {
        return 0; /* F5..FF: above U+10FFFF, or no lead byte at all */
    }
    if (n < len || p[1] < lo || p[1] > hi) return 0;
    for (size_t i = 2; i < len; i++)
        if (p[i] < 0x80 || p[i] > 0xBF) return 0;
    return len;
}

double tt_rel_l2_floor(const float *got, const float *want, size_t n, double floor)
{
    double num = 0, den = 0;
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(got[i])) return INFINITY;
        num += ((double)got[i] - want[i]) * ((double)got[i] - want[i]);
        den += (double)want[i] * want[i];
    }
    if (den < floor * floor) den = floor * floor;
    return sqrt(num / (den > 0 ? den : 1));
}

double tt_rel_l2(const float *got, const float *want, size_t n)
{
    return tt_rel_l2_floor(got, want, n, 0);
}

void tt_json_string(const char *s, FILE *f)
{
    fputc('"', f);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        if (*c == '"' || *c == '\\') fprintf(f, "\\%c", *c);
        else if (*c < 0x20) fprintf(f, "\\u%04x", *c);
        else fputc(*c, f);
    }
    fputc('"', f);
}
