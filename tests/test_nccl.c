/* gpu/nccl_lib.c: NCCL opened on first use, on a machine without a GPU: the one line when it is
 * missing, NVLink multicast forced off, and rank 0's unique id handed to the other ranks by
 * train/rendezvous.c (processes standing in for hosts, on loopback). Each case runs in a child
 * process: the library is opened once per process. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nccl_lib.h"
#include "rendezvous.h"
#include "testutil.h"

/* Runs fn in a child; its exit status, and what it wrote to out (a line). */
static int in_child(int (*fn)(FILE *), char *out, size_t n)
{
    int fd[2];
    assert_int_equal(pipe(fd), 0);
    fflush(NULL);
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        close(fd[0]);
        FILE *f = fdopen(fd[1], "w");
        const int rc = fn(f);
        fclose(f);
        _exit(rc);
    }
    close(fd[1]);
    size_t got = 0;
    ssize_t r;
    while (got + 1 < n && (r = read(fd[0], out + got, n - 1 - got)) > 0) got += (size_t)r;
    out[got] = 0;
    close(fd[0]);
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st));
    return WEXITSTATUS(st);
}

/* 0: refused with its line; 1: loaded; 2: NCCL_NVLS_ENABLE is not "0" afterwards */
static int load_bad_path(FILE *out)
{
    setenv("TT_NCCL_LIB", "/nonexistent/libnccl.so.2", 1);
    setenv("NCCL_NVLS_ENABLE", "1", 1);
    char why[1024] = "";
    const int rc = tt_nccl_load(why, sizeof why);
    fprintf(out, "%s", why);
    const char *nvls = getenv("NCCL_NVLS_ENABLE");
    if (!nvls || strcmp(nvls, "0") != 0) return 2;
    /* the verdict stays */
    char again[1024] = "";
    if (tt_nccl_load(again, sizeof again) != rc || strcmp(again, why) != 0) return 3;
    return rc == 0 ? 1 : 0;
}

static void test_missing(void **state)
{
    (void)state;
    char out[1100];
    const int rc = in_child(load_bad_path, out, sizeof out);
    print_message("  %s\n", out);
    if (rc == 2) fail_msg("NCCL_NVLS_ENABLE was left as the environment had it");
    if (rc == 3) fail_msg("a second tt_nccl_load gave another verdict");
    assert_int_equal(rc, 0);
    assert_true(strncmp(out, "no NCCL: ", 9) == 0);
#if TT_HAVE_NCCL
    assert_non_null(strstr(out, "TT_NCCL_LIB=/nonexistent/libnccl.so.2"));
#endif
    assert_null(strchr(out, '\n'));
}

/* 0: loaded, a version at least the minimum, NVLS off, a unique id that is not zeros; 77: no
 * library here (the line in out); else a failure */
static int load_real(FILE *out)
{
    unsetenv("TT_NCCL_LIB");
    setenv("NCCL_NVLS_ENABLE", "1", 1);
    char why[1024] = "";
    if (tt_nccl_load(why, sizeof why) != 0) {
        fprintf(out, "%s", why);
        return 77;
    }
#if TT_HAVE_NCCL
    const tt_nccl *n = tt_nccl_get();
    fprintf(out, "%s: version %d", n->path, n->version);
    if (n->version < TT_NCCL_MIN_VERSION) return 4;
    if (strcmp(getenv("NCCL_NVLS_ENABLE"), "0") != 0) return 2;
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    if (n->get_unique_id(&id) != ncclSuccess) return 5;
    int nonzero = 0;
    for (size_t i = 0; i < sizeof id.internal; i++) nonzero |= id.internal[i] != 0;
    return nonzero ? 0 : 6;
#else
    return 7; /* a build without NCCL loaded one */
#endif
}

static void test_load(void **state)
{
    (void)state;
    char out[1100];
    const int rc = in_child(load_real, out, sizeof out);
    print_message("  %s\n", out);
    if (rc == 77) {
        /* the one line is all a user gets: it must say what to do */
        assert_true(strncmp(out, "no NCCL: ", 9) == 0);
        skip(); /* no libnccl.so.2 on this machine: nothing to load (the line is checked above) */
    }
    assert_int_equal(rc, 0);
}

#if TT_HAVE_NCCL
#define RANKS 3

/* Rank r of RANKS: rank 0 draws NCCL's unique id, every rank ends with it; written to fd. */
static int rank_main(int r, int port, int fd)
{
    tt_dist_env e = {.rank = r, .world = RANKS, .local = r, .port = port, .from = "test"};
    snprintf(e.addr, sizeof e.addr, "127.0.0.1");
    ncclUniqueId id;
    memset(&id, 0, sizeof id);
    char why[1024];
    if (r == 0) {
        if (tt_nccl_load(why, sizeof why) != 0 || tt_nccl_get()->get_unique_id(&id) != ncclSuccess) return 2;
    }
    if (tt_rendezvous(&e, &id, sizeof id, 10000, why, sizeof why) != 0) return 3;
    return write(fd, &id, sizeof id) == (ssize_t)sizeof id ? 0 : 4;
}
#endif

static void test_unique_id(void **state)
{
    (void)state;
#if TT_HAVE_NCCL
    char probe[1100];
    if (in_child(load_real, probe, sizeof probe) == 77) skip(); /* no libnccl.so.2 here (test_load says) */
    const int port = tu_free_port();
    int fd[RANKS][2];
    pid_t pid[RANKS];
    fflush(NULL);
    for (int r = 0; r < RANKS; r++) {
        assert_int_equal(pipe(fd[r]), 0);
        pid[r] = fork();
        assert_true(pid[r] >= 0);
        if (pid[r] == 0) {
            close(fd[r][0]);
            _exit(rank_main(r, port, fd[r][1]));
        }
        close(fd[r][1]);
    }
    ncclUniqueId got[RANKS];
    for (int r = 0; r < RANKS; r++) {
        assert_int_equal(read(fd[r][0], &got[r], sizeof got[r]), (ssize_t)sizeof got[r]);
        close(fd[r][0]);
        int st;
        assert_int_equal(waitpid(pid[r], &st, 0), pid[r]);
        assert_true(WIFEXITED(st));
        assert_int_equal(WEXITSTATUS(st), 0);
    }
    for (int r = 1; r < RANKS; r++) assert_memory_equal(&got[r], &got[0], sizeof got[0]);
#else
    skip(); /* this build has no nccl.h: no unique id to hand over */
#endif
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_missing),
        cmocka_unit_test(test_load),
        cmocka_unit_test(test_unique_id),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
