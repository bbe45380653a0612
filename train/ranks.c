/* Several ranks of one run on this host (see ranks.h). */
#include "ranks.h"

#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "util.h"

static volatile sig_atomic_t pending_sig; /* a SIGINT or SIGTERM to pass on to the ranks */

static void on_signal(int sig) { pending_sig = sig; }

/* A TCP port of this host nobody listens on now (the kernel's pick, released), or -1. */
static int free_port(void)
{
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) return -1;
    struct sockaddr_in a = {0};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof a;
    const int ok = bind(s, (struct sockaddr *)&a, sizeof a) == 0 &&
                   getsockname(s, (struct sockaddr *)&a, &len) == 0;
    close(s);
    return ok ? ntohs(a.sin_port) : -1;
}

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* The child's side: its variables, its output, its own process group, then the program. Only
 * async-signal-safe calls and exec after the fork (the environment was built before it). */
static void start_rank(const tt_ranks_opts *o, char *const *env, const char *log)
{
    setpgid(0, 0); /* a terminal's Ctrl-C reaches the launcher alone, which passes it on once */
    signal(SIGINT, SIG_DFL);
    signal(SIGTERM, SIG_DFL);
    if (log) {
        const int fd = open(log, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0 || dup2(fd, 1) < 0 || dup2(fd, 2) < 0) _exit(126);
    }
    execvpe(o->argv[0], o->argv, env);
    _exit(127);
}

/* environ with the rank's variables set (replacing any of the same name). */
static char **rank_env(int rank, const tt_ranks_opts *o, const char *addr, int port,
                       const char *beat_dir)
{
    extern char **environ;
    static const char *const ours[] = {"RANK=", "WORLD_SIZE=", "LOCAL_RANK=", "MASTER_ADDR=",
                                       "MASTER_PORT=", "NCCL_NVLS_ENABLE=", "TT_RANK_HEARTBEAT="};
    size_t n = 0;
    while (environ[n]) n++;
    char **env = tt_xcalloc(n + 8, sizeof *env);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        int mine = 0;
        for (size_t j = 0; j < sizeof ours / sizeof *ours; j++)
            mine |= strncmp(environ[i], ours[j], strlen(ours[j])) == 0;
        if (!mine) env[k++] = tt_xstrdup(environ[i]);
    }
    env[k++] = tt_xasprintf("RANK=%d", rank);
    env[k++] = tt_xasprintf("WORLD_SIZE=%d", o->n);
    env[k++] = tt_xasprintf("LOCAL_RANK=%d", rank);
    env[k++] = tt_xasprintf("MASTER_ADDR=%s", addr);
    env[k++] = tt_xasprintf("MASTER_PORT=%d", port);
    env[k++] = tt_xstrdup("NCCL_NVLS_ENABLE=0"); /* NVLink multicast off in every rank */
    if (beat_dir) env[k++] = tt_xasprintf("TT_RANK_HEARTBEAT=%s/rank-%d", beat_dir, rank);
    env[k] = NULL;
    return env;
}

static void free_env(char **env)
{
    for (size_t i = 0; env[i]; i++) free(env[i]);
    free(env);
}

/* --- heartbeats ------------------------------------------------------------------------------ */

void tt_rank_beat(void)
{
    static int fd = -2;
    static unsigned long long count;
    if (fd == -2) {
        const char *path = getenv("TT_RANK_HEARTBEAT");
        fd = path && *path ? open(path, O_WRONLY | O_CREAT | O_CLOEXEC, 0644) : -1;
    }
    if (fd < 0) return;
    char buf[24];
    snprintf(buf, sizeof buf, "%020llu\n", ++count); /* one fixed-width write: never half read */
    if (pwrite(fd, buf, 21, 0) != 21) return;
}

/* A rank's count (-1: none yet, or not readable). */
static long long read_beat(const char *dir, int rank)
{
    char path[512], buf[32];
    snprintf(path, sizeof path, "%s/rank-%d", dir, rank);
    const int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return -1;
    const ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n < 21) return -1;
    buf[n] = 0;
    return strtoll(buf, NULL, 10);
}

/* Whether process p is stopped (state T in /proc/p/stat). */
static int stopped(pid_t p)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)p);
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    const size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = 0;
    const char *close_paren = strrchr(buf, ')');
    return close_paren && (close_paren[2] == 'T' || close_paren[2] == 't');
}

typedef struct {
    long long count; /* the last count read */
    double since;    /* when it last changed */
} beat_state;

/* Once every live rank has beaten: the rank that has made no progress for stall_ms, with why in
 * one line, or -1. The one that lags behind the highest count, else one that is stopped, else
 * (all waiting at one count) rank 0, saying so. */
static int stalled(const char *dir, const pid_t *pid, int n, beat_state *b, double stall_ms,
                   char *why, size_t whylen)
{
    const double now = now_ms();
    long long top = -1;
    int armed = 1;
    for (int r = 0; r < n; r++) {
        if (pid[r] <= 0) continue;
        const long long c = read_beat(dir, r);
        if (c != b[r].count) b[r].count = c, b[r].since = now;
        armed &= c >= 1;
        top = c > top ? c : top;
    }
    if (!armed) return -1;
    double quiet = 0; /* the last beat of any rank */
    for (int r = 0; r < n; r++)
        if (pid[r] > 0 && b[r].since > quiet) quiet = b[r].since;
    for (int r = 0; r < n; r++)
        if (pid[r] > 0 && b[r].count < top && now - b[r].since >= stall_ms) {
            tt_errf(why, whylen, "rank %d made no progress for %.0f s (at step %lld of its "
                    "heartbeat, the others at %lld): it hangs%s; the run is stopped", r,
                    (now - b[r].since) / 1e3, b[r].count, top, stopped(pid[r]) ? " (stopped)" : "");
            return r;
        }
    if (now - quiet < stall_ms) return -1; /* somebody beat within stall_ms: no lag, no hang */
    for (int r = 0; r < n; r++)
        if (pid[r] > 0 && stopped(pid[r])) {
            tt_errf(why, whylen, "rank %d is stopped and the others have waited %.0f s for it (at "
                    "step %lld of their heartbeats); the run is stopped", r, (now - quiet) / 1e3, top);
            return r;
        }
    for (int r = 0; r < n; r++)
        if (pid[r] > 0) {
            tt_errf(why, whylen, "no rank made progress for %.0f s (every one at step %lld of its "
                    "heartbeat: one hangs in a collective); the run is stopped", (now - quiet) / 1e3,
                    top);
            return r;
        }
    return -1;
}

/* A rank's end in words, and the status the run takes from it. */
static int describe(int rank, int st, char *why, size_t whylen)
{
    if (WIFSIGNALED(st)) {
        tt_errf(why, whylen, "rank %d was killed by signal %d (%s)", rank, WTERMSIG(st),
                strsignal(WTERMSIG(st)));
        return 128 + WTERMSIG(st);
    }
    const int code = WEXITSTATUS(st);
    if (code == 127) tt_errf(why, whylen, "rank %d could not run its program (exit status 127)", rank);
    else tt_errf(why, whylen, "rank %d exited with status %d", rank, code);
    return code;
}

int tt_ranks_run(const tt_ranks_opts *o, char *why, size_t whylen)
{
    if (o->n < 1 || !o->argv || !o->argv[0]) return tt_errf(why, whylen, "no ranks to start");
    const char *addr = o->addr ? o->addr : "127.0.0.1";
    const int port = o->port > 0 ? o->port : free_port();
    if (port <= 0) return tt_errf(why, whylen, "no free TCP port for the ranks' rendezvous");
    const int grace = o->grace_ms > 0 ? o->grace_ms : 5000;
    if (o->log_dir && mkdir(o->log_dir, 0755) != 0 && errno != EEXIST)
        return tt_errf(why, whylen, "%s: cannot create the ranks' log folder: %s", o->log_dir, strerror(errno));

    struct sigaction sa = {0}, old_int, old_term;
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask); /* no SA_RESTART: waitpid returns to pass the signal on */
    pending_sig = 0;
    sigaction(SIGINT, &sa, &old_int);
    sigaction(SIGTERM, &sa, &old_term);

    const double stall = o->stall_ms < 0 ? 0 : o->stall_ms > 0 ? o->stall_ms : 45000;
    char beat_dir[64] = "/tmp/tt-ranks-XXXXXX";
    const int beats = stall > 0 && mkdtemp(beat_dir) != NULL;
    beat_state *bs = tt_xcalloc((size_t)o->n, sizeof *bs);
    for (int r = 0; r < o->n; r++) bs[r].count = -1, bs[r].since = now_ms();
    pid_t *pid = tt_xcalloc((size_t)o->n, sizeof *pid);
    int started = 0, rc = 0;
    fflush(NULL);
    for (int r = 0; r < o->n; r++) {
        char **env = rank_env(r, o, addr, port, beats ? beat_dir : NULL);
        char *log = r > 0 && o->log_dir ? tt_xasprintf("%s/rank-%d.log", o->log_dir, r) : NULL;
        const pid_t p = fork();
        if (p == 0) start_rank(o, env, log);
        free_env(env);
        free(log);
        if (p < 0) {
            rc = tt_errf(why, whylen, "cannot start rank %d: %s", r, strerror(errno));
            break;
        }
        setpgid(p, p); /* (also in the child: whichever runs first) */
        pid[r] = p;
        started++;
    }

    int live = started, failed = rc != 0; /* a failed start ends the others as a failure does */
    double deadline = failed ? now_ms() + grace : 0, next_look = now_ms() + 500;
    if (failed)
        for (int r = 0; r < started; r++) kill(-pid[r], SIGTERM);
    while (live > 0) {
        if (pending_sig) { /* passed on to every rank still running, once */
            const int sig = pending_sig;
            pending_sig = 0;
            for (int r = 0; r < started; r++)
                if (pid[r] > 0) kill(-pid[r], sig);
        }
        int st;
        const pid_t p = waitpid(-1, &st, WNOHANG);
        if (p < 0 && errno == EINTR) continue;
        if (p < 0) break; /* no children left (ECHILD) */
        if (p == 0) { /* nothing ended: a failure's grace, or a look at the heartbeats */
            if (failed && now_ms() >= deadline)
                for (int r = 0; r < started; r++)
                    if (pid[r] > 0) kill(-pid[r], SIGKILL);
            if (!failed && beats && now_ms() >= next_look) {
                next_look = now_ms() + 500;
                if (stalled(beat_dir, pid, started, bs, stall, why, whylen) >= 0) {
                    failed = 1;
                    rc = 1;
                    deadline = now_ms() + grace;
                    for (int k = 0; k < started; k++)
                        if (pid[k] > 0) kill(-pid[k], SIGTERM);
                }
            }
            struct timespec t = {0, 10 * 1000 * 1000};
            nanosleep(&t, NULL);
            continue;
        }
        int r = 0;
        while (r < started && pid[r] != p) r++;
        if (r == started) continue; /* not a rank (a child of the caller's) */
        pid[r] = 0;
        live--;
        const int bad = !WIFEXITED(st) || WEXITSTATUS(st) != 0;
        if (bad && !failed) { /* the first failure: the run's status, and the end of the others */
            failed = 1;
            rc = describe(r, st, why, whylen);
            deadline = now_ms() + grace;
            for (int k = 0; k < started; k++)
                if (pid[k] > 0) kill(-pid[k], SIGTERM);
        }
    }
    sigaction(SIGINT, &old_int, NULL);
    sigaction(SIGTERM, &old_term, NULL);
    if (beats) {
        for (int r = 0; r < o->n; r++) {
            char path[128];
            snprintf(path, sizeof path, "%s/rank-%d", beat_dir, r);
            unlink(path);
        }
        rmdir(beat_dir);
    }
    free(pid), free(bs);
    return rc;
}

int tt_ranks_relaunch(int argc, char **argv, int n, char *why, size_t whylen)
{
    char self[4096];
    const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
    self[len > 0 ? len : 0] = 0;
    char **args = tt_xcalloc((size_t)argc + 1, sizeof *args);
    int k = 0;
    args[k++] = len > 0 ? self : argv[0];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--gpus")) {
            i++; /* and its value */
            continue;
        }
        if (strncmp(argv[i], "--gpus=", 7) != 0) args[k++] = argv[i];
    }
    /* TT_RANKS_STALL_S: the seconds without progress that end the run (0: never) */
    const long stall = tt_env_long("TT_RANKS_STALL_S", 0, 86400, 45);
    const tt_ranks_opts o = {.n = n, .argv = args, .stall_ms = stall ? (int)stall * 1000 : -1};
    const int rc = tt_ranks_run(&o, why, whylen);
    free(args);
    return rc;
}
