/* train/ranks.c: several ranks of one run on this host, with /bin/sh standing in for tt-train:
 * every rank's variables, a failure ending the others (SIGTERM, then SIGKILL for a rank that
 * ignores it) with the run's status and one line naming the rank, a signal to the launcher
 * passed on to every rank once, the ranks' logs, and a hung rank found by its heartbeat. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "ranks.h"
#include "testutil.h"
#include "util.h"

static char dir[256];

static int setup(void **state)
{
    (void)state;
    tu_temp_dir("ranks", dir, sizeof dir);
    setenv("DIR", dir, 1); /* the ranks' scripts write there */
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    tu_rm_rf(dir);
    return 0;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

/* DIR/name's text, or NULL when there is no such file (yet). */
static char *slurp(const char *name)
{
    char *path = tt_xasprintf("%s/%s", dir, name);
    char *s = access(path, F_OK) == 0 ? tu_read_file(path, NULL) : NULL;
    free(path);
    return s;
}

static int run_sh(int n, const char *script, int grace_ms, char *why, size_t whylen)
{
    char *const argv[] = {"sh", "-c", (char *)script, NULL};
    const tt_ranks_opts o = {.n = n, .argv = argv, .grace_ms = grace_ms};
    why[0] = 0;
    return tt_ranks_run(&o, why, whylen);
}

/* Whether a process of pid (read from DIR/name) still exists; a rank that never wrote it never
 * got that far. */
static int alive(const char *name)
{
    char *s = slurp(name);
    if (!s) return 0;
    const pid_t p = (pid_t)atol(s);
    free(s);
    return p > 0 && (kill(p, 0) == 0 || errno != ESRCH);
}

static void test_variables(void **state)
{
    (void)state;
    char why[256];
    const int rc = run_sh(3, "echo \"$RANK $WORLD_SIZE $LOCAL_RANK $MASTER_ADDR $NCCL_NVLS_ENABLE\" "
                             "> \"$DIR/v$RANK\"; echo \"$MASTER_PORT\" > \"$DIR/port$RANK\"",
                          0, why, sizeof why);
    assert_int_equal(rc, 0);
    char *port0 = slurp("port0");
    assert_non_null(port0);
    assert_true(atoi(port0) > 0 && atoi(port0) < 65536);
    for (int r = 0; r < 3; r++) {
        char name[16], want[64];
        snprintf(name, sizeof name, "v%d", r);
        snprintf(want, sizeof want, "%d 3 %d 127.0.0.1 0\n", r, r);
        char *v = slurp(name);
        assert_non_null(v);
        assert_string_equal(v, want);
        free(v);
        snprintf(name, sizeof name, "port%d", r);
        char *p = slurp(name);
        assert_string_equal(p, port0); /* one rendezvous for all */
        free(p);
    }
    free(port0);
}

static void test_failure_ends_all(void **state)
{
    (void)state;
    char why[256];
    const double t0 = now();
    const int rc = run_sh(3, "echo $$ > \"$DIR/f$RANK\"; if [ \"$RANK\" = 1 ]; then sleep 0.3; exit 3; fi; "
                             "exec sleep 30", 0, why, sizeof why);
    const double took = now() - t0;
    print_message("  %s (%.2f s)\n", why, took);
    assert_int_equal(rc, 3);
    assert_non_null(strstr(why, "rank 1 exited with status 3"));
    assert_null(strchr(why, '\n'));
    assert_true(took < 5); /* SIGTERM ended the sleeping ranks at once */
    assert_false(alive("f0"));
    assert_false(alive("f2"));
}

static void test_killed(void **state)
{
    (void)state;
    char why[256];
    const int rc = run_sh(3, "if [ \"$RANK\" = 2 ]; then sleep 0.2; kill -9 $$; fi; exec sleep 30", 0,
                          why, sizeof why);
    print_message("  %s\n", why);
    assert_int_equal(rc, 128 + 9);
    assert_non_null(strstr(why, "rank 2 was killed by signal 9"));
}

/* A rank that ignores SIGTERM is killed when the grace runs out. */
static void test_grace(void **state)
{
    (void)state;
    char why[256];
    const double t0 = now();
    const int rc = run_sh(2, "trap '' TERM; echo $$ > \"$DIR/g$RANK\"; if [ \"$RANK\" = 0 ]; then "
                             "sleep 0.3; exit 5; fi; while :; do sleep 0.05; done",
                          700, why, sizeof why);
    const double took = now() - t0;
    print_message("  %s (%.2f s)\n", why, took);
    assert_int_equal(rc, 5);
    assert_non_null(strstr(why, "rank 0 exited with status 5"));
    assert_true(took >= 0.9 && took < 5); /* 0.3 s, then the 0.7 s of grace, then SIGKILL */
    assert_false(alive("g1"));
}

static void test_no_program(void **state)
{
    (void)state;
    char *const argv[] = {"/nonexistent/tt-train", NULL};
    const tt_ranks_opts o = {.n = 2, .argv = argv};
    char why[256] = "";
    const int rc = tt_ranks_run(&o, why, sizeof why);
    print_message("  %s\n", why);
    assert_int_equal(rc, 127);
    assert_non_null(strstr(why, "could not run its program"));
}

/* SIGINT to the launcher reaches every rank once; ranks that handle it and exit 0 end the run
 * with 0. The launcher runs in a child of the test, which sends the signal when all ranks wait. */
static void test_signal_passed_on(void **state)
{
    (void)state;
    fflush(NULL);
    const pid_t launcher = fork();
    assert_true(launcher >= 0);
    if (launcher == 0) {
        char why[256];
        const int rc = run_sh(3, "n=0; trap 'n=$((n+1)); echo $n > \"$DIR/s$RANK\"; exit 0' INT; "
                                 "echo $$ > \"$DIR/ready$RANK\"; while :; do sleep 0.05; done",
                              0, why, sizeof why);
        _exit(rc);
    }
    for (int tries = 0; tries < 500; tries++) { /* every rank's trap is set */
        int ready = 0;
        for (int r = 0; r < 3; r++) {
            char name[16];
            snprintf(name, sizeof name, "ready%d", r);
            char *s = slurp(name);
            ready += s != NULL;
            free(s);
        }
        if (ready == 3) break;
        struct timespec t = {0, 10 * 1000 * 1000};
        nanosleep(&t, NULL);
    }
    assert_int_equal(kill(launcher, SIGINT), 0);
    int st;
    pid_t done = 0;
    for (int tries = 0; tries < 1000 && done == 0; tries++) { /* 10 s at most */
        done = waitpid(launcher, &st, WNOHANG);
        struct timespec t = {0, 10 * 1000 * 1000};
        if (done == 0) nanosleep(&t, NULL);
    }
    if (done == 0) { /* the signal never reached the ranks: end them and the launcher */
        for (int r = 0; r < 3; r++) {
            char name[16];
            snprintf(name, sizeof name, "ready%d", r);
            char *s = slurp(name);
            if (s) kill((pid_t)atol(s), SIGKILL);
            free(s);
        }
        kill(launcher, SIGKILL);
        waitpid(launcher, &st, 0);
        fail_msg("the launcher's ranks were still running 10 s after its SIGINT");
    }
    assert_int_equal(done, launcher);
    assert_true(WIFEXITED(st));
    assert_int_equal(WEXITSTATUS(st), 0);
    for (int r = 0; r < 3; r++) {
        char name[16];
        snprintf(name, sizeof name, "s%d", r);
        char *s = slurp(name);
        if (!s) fail_msg("rank %d never got the signal", r);
        assert_string_equal(s, "1\n"); /* once */
        free(s);
    }
}

/* A hung rank (heartbeats, tt_rank_beat's files): the run is stopped within the stall time
 * (1.5 s here) plus the grace, with one line naming the rank that lags (one that stops beating,
 * one that stops itself with SIGSTOP), or saying that all wait at one count. Before every rank
 * has beaten, nothing is judged (the ranks' start: compiling, timing products). */
static int run_stall(const char *script, char *why, size_t whylen, double *secs)
{
    char *const argv[] = {"sh", "-c", (char *)script, NULL};
    const tt_ranks_opts o = {.n = 3, .argv = argv, .grace_ms = 500, .stall_ms = 1500};
    const double t0 = now();
    const int rc = tt_ranks_run(&o, why, whylen);
    *secs = now() - t0;
    return rc;
}

#define BEAT "printf '%020d\\n' $i > $TT_RANK_HEARTBEAT.tmp && mv $TT_RANK_HEARTBEAT.tmp $TT_RANK_HEARTBEAT"

static void test_hang(void **state)
{
    (void)state;
    char why[512];
    double secs;
    /* rank 1 stops beating after 3 beats; the others beat on */
    int rc = run_stall("i=0; while :; do i=$((i+1)); " BEAT "; "
                       "if [ $RANK = 1 ] && [ $i = 3 ]; then sleep 100; fi; sleep 0.1; done",
                       why, sizeof why, &secs);
    print_message("  a rank that stops beating: status %d after %.1f s: %s\n", rc, secs, why);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(why, "rank 1 made no progress"));
    assert_true(secs < 6);
    /* rank 2 stops itself */
    rc = run_stall("i=0; while :; do i=$((i+1)); " BEAT "; "
                   "if [ $RANK = 2 ] && [ $i = 3 ]; then kill -STOP $$; fi; sleep 0.1; done",
                   why, sizeof why, &secs);
    print_message("  a stopped rank: status %d after %.1f s: %s\n", rc, secs, why);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(why, "rank 2 made no progress"));
    assert_non_null(strstr(why, "(stopped)"));
    assert_true(secs < 6);
    /* every rank waits at one count */
    rc = run_stall("i=0; while [ $i -lt 3 ]; do i=$((i+1)); " BEAT "; sleep 0.1; done; sleep 100",
                   why, sizeof why, &secs);
    print_message("  all waiting: status %d after %.1f s: %s\n", rc, secs, why);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(why, "no rank made progress"));
    assert_true(secs < 6);
    /* no beat yet: a long start is not a hang */
    rc = run_stall("sleep 2.5; exit 0", why, sizeof why, &secs);
    assert_int_equal(rc, 0);
}

/* tt_rank_beat writes the count the launcher reads (in a child: its state is the process's). */
static void test_beat(void **state)
{
    (void)state;
    char *path = tt_xasprintf("%s/beat", dir);
    fflush(NULL);
    const pid_t p = fork();
    if (p == 0) {
        setenv("TT_RANK_HEARTBEAT", path, 1);
        for (int i = 0; i < 12; i++) tt_rank_beat();
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(p, &st, 0), p);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    char *text = slurp("beat");
    assert_non_null(text);
    assert_string_equal(text, "00000000000000000012\n");
    free(text), free(path);
    unsetenv("TT_RANK_HEARTBEAT");
    tt_rank_beat(); /* without the variable: nothing, and no failure */
}

static void test_logs(void **state)
{
    (void)state;
    char *logs = tt_xasprintf("%s/logs", dir);
    char *const argv[] = {"sh", "-c", "echo out of $RANK; echo err of $RANK >&2", NULL};
    const tt_ranks_opts o = {.n = 3, .argv = argv, .log_dir = logs};
    char why[256] = "";
    assert_int_equal(tt_ranks_run(&o, why, sizeof why), 0);
    for (int r = 1; r < 3; r++) {
        char *path = tt_xasprintf("%s/rank-%d.log", logs, r), want[64];
        char *s = tu_read_file(path, NULL);
        snprintf(want, sizeof want, "out of %d\nerr of %d\n", r, r);
        assert_non_null(s);
        assert_string_equal(s, want);
        free(s), free(path);
    }
    char *zero = tt_xasprintf("%s/rank-0.log", logs);
    assert_int_equal(access(zero, F_OK), -1); /* rank 0's output is the launcher's */
    free(zero), free(logs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_variables, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failure_ends_all, setup, teardown),
        cmocka_unit_test_setup_teardown(test_killed, setup, teardown),
        cmocka_unit_test_setup_teardown(test_grace, setup, teardown),
        cmocka_unit_test_setup_teardown(test_no_program, setup, teardown),
        cmocka_unit_test_setup_teardown(test_signal_passed_on, setup, teardown),
        cmocka_unit_test_setup_teardown(test_logs, setup, teardown),
        cmocka_unit_test_setup_teardown(test_hang, setup, teardown),
        cmocka_unit_test_setup_teardown(test_beat, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
