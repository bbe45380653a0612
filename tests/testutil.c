/* The tests' shared helpers (see testutil.h). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <netinet/in.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "testutil.h"
#include "util.h"

uint64_t tu_seed(void)
{
    const char *env = getenv("TT_TEST_SEED");
    if (env && *env) return strtoull(env, NULL, 0);
    uint64_t s = 0;
    const int fd = open("/dev/urandom", O_RDONLY);
    if (fd >= 0) {
        if (read(fd, &s, sizeof s) != (ssize_t)sizeof s) s = 0;
        close(fd);
    }
    if (!s) s = (uint64_t)time(NULL) ^ ((uint64_t)getpid() << 32);
    return s;
}

extern char **environ;

/* --- folders and files ------------------------------------------------------------------------ */

void tu_temp_dir(const char *name, char *out, size_t outlen)
{
    const int n = snprintf(out, outlen, "/tmp/tt-test-%s-XXXXXX", name);
    if (n < 0 || (size_t)n >= outlen) fail_msg("tu_temp_dir: the name '%s' is too long", name);
    if (!mkdtemp(out)) fail_msg("mkdtemp %s: %s", out, strerror(errno));
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st, (void)flag, (void)ftw;
    return remove(path);
}

int tu_rm_rf(const char *path) { return nftw(path, rm_entry, 16, FTW_DEPTH | FTW_PHYS); }

int tu_exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

char *tu_read_file(const char *path, size_t *len)
{
    char *data = NULL, err[512];
    size_t n;
    if (tt_read_file(path, 0, &data, &n, err, sizeof err) != 0) fail_msg("%s", err);
    if (len) *len = n;
    return data;
}

void tu_write_file(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    if (!f) fail_msg("%s: cannot open for writing: %s", path, strerror(errno));
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
}

void tu_write_text(const char *path, const char *text) { tu_write_file(path, text, strlen(text)); }

char *tu_data_path(const char *rel)
{
    const char *dir = getenv("TT_DATA_DIR");
    char *p = tt_xasprintf("%s/%s", dir && *dir ? dir : TT_SOURCE_DIR "/../shared/data", rel);
    if (access(p, R_OK) != 0)
        fail_msg("%s: corpus missing (set TT_DATA_DIR to the folder holding ptb/ and wikitext-2/)",
                 p);
    return p;
}

/* --- processes ------------------------------------------------------------------------------- */

/* An unlinked temporary file, closed on exec (the child gets it through dup2 only). */
static int capture_file(void)
{
    char path[] = "/tmp/tt-test-out-XXXXXX";
    const int fd = mkostemp(path, O_CLOEXEC);
    if (fd < 0) fail_msg("mkostemp: %s", strerror(errno));
    unlink(path);
    return fd;
}

static char *read_fd(int fd)
{
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    char *s = tt_xmalloc((size_t)st.st_size + 1);
    size_t got = 0;
    while (got < (size_t)st.st_size) {
        const ssize_t n = pread(fd, s + got, (size_t)st.st_size - got, (off_t)got);
        if (n <= 0) break;
        got += (size_t)n;
    }
    s[got] = '\0';
    return s;
}

/* environ, where each NAME=VALUE of extra replaces NAME. */
static char **make_env(const char *const *extra)
{
    size_t n = 0, k = 0, m = 0;
    while (environ[n]) n++;
    while (extra && extra[m]) m++;
    char **env = tt_xcalloc(n + m + 1, sizeof *env);
    for (size_t i = 0; i < n; i++) {
        int replaced = 0;
        for (size_t j = 0; j < m && !replaced; j++) {
            const size_t len = strcspn(extra[j], "=") + 1;
            replaced = strncmp(environ[i], extra[j], len) == 0;
        }
        if (!replaced) env[k++] = tt_xstrdup(environ[i]);
    }
    for (size_t j = 0; j < m; j++) env[k++] = tt_xstrdup(extra[j]);
    return env;
}

void tu_proc_start(tu_proc *p, const char *const *argv, const char *const *env)
{
    memset(p, 0, sizeof *p);
    p->out_fd = capture_file();
    p->err_fd = capture_file();
    p->env = make_env(env);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
    posix_spawn_file_actions_adddup2(&fa, p->out_fd, 1);
    posix_spawn_file_actions_adddup2(&fa, p->err_fd, 2);
    p->t0 = tt_now_seconds();
    const int rc = posix_spawn(&p->pid, argv[0], &fa, NULL, (char *const *)argv, p->env);
    posix_spawn_file_actions_destroy(&fa);
    if (rc != 0) fail_msg("cannot start %s: %s", argv[0], strerror(rc));
}

static void ended(tu_proc *p, int ws)
{
    p->seconds = tt_now_seconds() - p->t0;
    p->done = 1;
    p->status = WIFEXITED(ws) ? WEXITSTATUS(ws) : -1;
    p->signal = WIFSIGNALED(ws) ? WTERMSIG(ws) : 0;
    p->out = read_fd(p->out_fd);
    p->err = read_fd(p->err_fd);
}

int tu_proc_running(tu_proc *p)
{
    if (p->done) return 0;
    int ws;
    const pid_t r = waitpid(p->pid, &ws, WNOHANG);
    if (r == 0) return 1;
    assert_int_equal(r, p->pid);
    ended(p, ws);
    return 0;
}

void tu_proc_wait(tu_proc *p, double timeout)
{
    if (p->done) return;
    int ws;
    if (timeout <= 0) {
        assert_int_equal(waitpid(p->pid, &ws, 0), p->pid);
        ended(p, ws);
        return;
    }
    const struct timespec tick = {0, 2000000};
    while (tu_proc_running(p)) {
        if (tt_now_seconds() - p->t0 > timeout) {
            kill(p->pid, SIGKILL);
            assert_int_equal(waitpid(p->pid, &ws, 0), p->pid);
            ended(p, ws);
            p->timed_out = 1;
            return;
        }
        nanosleep(&tick, NULL);
    }
}

void tu_proc_signal(const tu_proc *p, int sig)
{
    assert_false(p->done);
    assert_int_equal(kill(p->pid, sig), 0);
}

void tu_proc_free(tu_proc *p)
{
    if (p->pid > 0 && !p->done) {
        kill(p->pid, SIGKILL);
        int ws;
        waitpid(p->pid, &ws, 0);
    }
    if (p->out_fd > 0) close(p->out_fd);
    if (p->err_fd > 0) close(p->err_fd);
    for (char **e = p->env; e && *e; e++) free(*e);
    free(p->env);
    free(p->out);
    free(p->err);
    memset(p, 0, sizeof *p);
}

void tu_expect_exit(const tu_proc *p, int code, const char *what)
{
    if (p->timed_out)
        fail_msg("%s: still running after %.0f s, killed; stdout:\n%s", what, p->seconds, p->out);
    if (p->signal) fail_msg("%s: died of signal %d; stderr:\n%s", what, p->signal, p->err);
    if (p->status != code)
        fail_msg("%s: exit code %d, want %d\nstdout:\n%s\nstderr:\n%s", what, p->status, code,
                 p->out, p->err);
}

int tu_on_path(const char *program)
{
    const char *path = getenv("PATH");
    for (const char *dir = path; dir && *dir; dir += strcspn(dir, ":"), dir += *dir == ':') {
        char *file = tt_xasprintf("%.*s/%s", (int)strcspn(dir, ":"), dir, program);
        const int found = access(file, X_OK) == 0;
        free(file);
        if (found) return 1;
    }
    return 0;
}

void tu_expect_png(const char *path)
{
    size_t len;
    char *data = tu_read_file(path, &len);
    if (len < 8 || memcmp(data, "\x89PNG\r\n\x1a\n", 8) != 0)
        fail_msg("%s (%zu bytes) is not a PNG", path, len);
    free(data);
}

int tu_count_lines(const char *s)
{
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

int tu_free_port(void)
{
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(s, (struct sockaddr *)&a, sizeof a), 0);
    socklen_t len = sizeof a;
    assert_int_equal(getsockname(s, (struct sockaddr *)&a, &len), 0);
    close(s);
    return ntohs(a.sin_port);
}

void tu_test_only_from_env(void)
{
    const char *only = getenv("TT_TEST_ONLY");
    if (only && *only) cmocka_set_test_filter(only);
}
