/* train/rendezvous.c: the place of a process from the launchers' variables, and rank 0's blob
 * handed to every other rank over TCP, with processes standing in for hosts on loopback. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "rendezvous.h"
#include "testutil.h"

static const char *const vars[] = {
    "RANK", "WORLD_SIZE", "LOCAL_RANK", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE",
    "OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID",
    "MASTER_ADDR", "MASTER_PORT", "TT_MASTER_PORT", "TORCHELASTIC_USE_AGENT_STORE"};

static void clear_env(void)
{
    for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) unsetenv(vars[i]);
}

/* the environment set to the NULL-ended name, value pairs, then parsed */
static int parse(tt_dist_env *e, char *err, size_t errlen, ...)
{
    clear_env();
    va_list ap;
    va_start(ap, errlen);
    for (const char *name; (name = va_arg(ap, const char *));) setenv(name, va_arg(ap, const char *), 1);
    va_end(ap);
    err[0] = 0;
    return tt_dist_from_env(e, err, errlen);
}

static void test_env(void **state)
{
    (void)state;
    tt_dist_env e;
    char err[256];
    assert_int_equal(parse(&e, err, sizeof err, NULL), 0);
    assert_int_equal(e.world, 1);
    assert_int_equal(e.rank, 0);
    assert_string_equal(e.from, "none");
    assert_string_equal(e.addr, "127.0.0.1");
    assert_int_equal(e.port, 29500);

    assert_int_equal(parse(&e, err, sizeof err, "RANK", "3", "WORLD_SIZE", "4", "LOCAL_RANK", "1",
                           "MASTER_ADDR", "node7", "MASTER_PORT", "6000", NULL), 0);
    assert_int_equal(e.rank, 3);
    assert_int_equal(e.world, 4);
    assert_int_equal(e.local, 1);
    assert_string_equal(e.from, "torchrun");
    assert_string_equal(e.addr, "node7");
    assert_int_equal(e.port, 6000);

    /* torchrun's agent holds MASTER_PORT: the port after it; TT_MASTER_PORT over both */
    assert_int_equal(parse(&e, err, sizeof err, "RANK", "1", "WORLD_SIZE", "2", "LOCAL_RANK", "1",
                           "MASTER_PORT", "6000", "TORCHELASTIC_USE_AGENT_STORE", "True", NULL), 0);
    assert_int_equal(e.port, 6001);
    assert_int_equal(parse(&e, err, sizeof err, "RANK", "1", "WORLD_SIZE", "2", "LOCAL_RANK", "1",
                           "MASTER_PORT", "6000", "TORCHELASTIC_USE_AGENT_STORE", "False", NULL), 0);
    assert_int_equal(e.port, 6000);
    assert_int_equal(parse(&e, err, sizeof err, "RANK", "1", "WORLD_SIZE", "2", "LOCAL_RANK", "1",
                           "MASTER_PORT", "6000", "TORCHELASTIC_USE_AGENT_STORE", "True",
                           "TT_MASTER_PORT", "7100", NULL), 0);
    assert_int_equal(e.port, 7100);
    assert_int_equal(parse(&e, err, sizeof err, "RANK", "1", "WORLD_SIZE", "2", "LOCAL_RANK", "1",
                           "MASTER_PORT", "65535", "TORCHELASTIC_USE_AGENT_STORE", "True", NULL), -1);
    assert_non_null(strstr(err, "TT_MASTER_PORT"));

    assert_int_equal(parse(&e, err, sizeof err, "OMPI_COMM_WORLD_RANK", "2", "OMPI_COMM_WORLD_SIZE",
                           "8", "OMPI_COMM_WORLD_LOCAL_RANK", "2", NULL), 0);
    assert_string_equal(e.from, "mpirun");
    assert_int_equal(e.world, 8);
    assert_int_equal(parse(&e, err, sizeof err, "SLURM_PROCID", "5", "SLURM_NTASKS", "6",
                           "SLURM_LOCALID", "1", NULL), 0);
    assert_string_equal(e.from, "srun");
    assert_int_equal(e.rank, 5);
    /* torchrun's variables come first */
    assert_int_equal(parse(&e, err, sizeof err, "RANK", "0", "WORLD_SIZE", "2", "LOCAL_RANK", "0",
                           "SLURM_PROCID", "5", "SLURM_NTASKS", "6", "SLURM_LOCALID", "1", NULL), 0);
    assert_string_equal(e.from, "torchrun");

    /* refusals, each one line naming the variable */
    static const struct {
        const char *k[6], *v[6], *says;
    } bad[] = {
        {{"RANK", "WORLD_SIZE", "LOCAL_RANK"}, {"4", "4", "0"}, "RANK=4"},
        {{"RANK", "WORLD_SIZE", "LOCAL_RANK"}, {"1", "two", "0"}, "WORLD_SIZE=two"},
        {{"RANK", "WORLD_SIZE", "LOCAL_RANK"}, {"-1", "2", "0"}, "RANK=-1"},
        {{"RANK", "WORLD_SIZE"}, {"1", "2"}, "LOCAL_RANK is unset"},
        {{"RANK"}, {"1"}, "WORLD_SIZE is not"},
        {{"WORLD_SIZE", "LOCAL_RANK"}, {"2", "0"}, "RANK is not"},
        {{"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT"}, {"0", "2", "0", "70000"}, "MASTER_PORT=70000"},
        {{"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_PORT"}, {"0", "2", "0", "80x"}, "MASTER_PORT=80x"},
        {{"RANK", "WORLD_SIZE", "LOCAL_RANK", "TT_MASTER_PORT"}, {"0", "2", "0", "0"}, "TT_MASTER_PORT=0"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        clear_env();
        for (int j = 0; j < 6 && bad[i].k[j]; j++) setenv(bad[i].k[j], bad[i].v[j], 1);
        err[0] = 0;
        if (tt_dist_from_env(&e, err, sizeof err) != -1 || !strstr(err, bad[i].says))
            fail_msg("case %zu: expected a refusal with \"%s\", got \"%s\"", i, bad[i].says, err);
        assert_null(strchr(err, '\n'));
    }
    clear_env();
}

#define BLOB 128 /* the size of NCCL's unique id */

/* The child of rank `rank`, which claims a world of `says_world`, starting after delay_ms: exit
 * 0 with rank 0's blob, 1 with another, 2 when the rendezvous fails (its message in the pipe
 * fd). */
static pid_t spawn(int rank, int says_world, int port, int delay_ms, int timeout_ms, int fd)
{
    const pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid) return pid;
    const struct timespec pause = {delay_ms / 1000, (long)(delay_ms % 1000) * 1000000};
    nanosleep(&pause, NULL);
    tt_dist_env e = {.rank = rank, .world = says_world, .local = rank, .port = port, .from = "test"};
    snprintf(e.addr, sizeof e.addr, "127.0.0.1");
    unsigned char blob[BLOB];
    for (int i = 0; i < BLOB; i++) blob[i] = rank == 0 ? (unsigned char)(i * 7 + 3) : 0;
    char err[512] = "";
    if (tt_rendezvous(&e, blob, BLOB, timeout_ms, err, sizeof err) != 0) {
        char line[600];
        const int k = snprintf(line, sizeof line, "rank %d: %s\n", rank, err);
        if (write(fd, line, (size_t)k) < 0) _exit(3);
        _exit(2);
    }
    for (int i = 0; i < BLOB; i++)
        if (blob[i] != (unsigned char)(i * 7 + 3)) _exit(1);
    _exit(0);
}

typedef struct {
    int status[8];
    char msgs[4096];
    double seconds;
} outcome;

/* world processes (rank r claims says[r] ranks, starts after delay[r] ms; a negative delay:
 * rank r never starts), their exit codes and messages */
static outcome run_world(int world, const int *says, const int *delay, int timeout_ms)
{
    outcome o = {{0}, "", 0};
    int p[2];
    assert_int_equal(pipe(p), 0);
    const int port = tu_free_port();
    pid_t pid[8];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (int r = 0; r < world; r++)
        pid[r] = delay[r] < 0 ? -1 : spawn(r, says[r], port, delay[r], timeout_ms, p[1]);
    close(p[1]);
    for (int r = 0; r < world; r++) {
        o.status[r] = -1;
        int st;
        if (pid[r] > 0 && waitpid(pid[r], &st, 0) == pid[r] && WIFEXITED(st)) o.status[r] = WEXITSTATUS(st);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    o.seconds = (double)(t1.tv_sec - t0.tv_sec) + (t1.tv_nsec - t0.tv_nsec) / 1e9;
    const ssize_t k = read(p[0], o.msgs, sizeof o.msgs - 1);
    o.msgs[k > 0 ? k : 0] = 0;
    close(p[0]);
    return o;
}

static void test_four_ranks(void **state)
{
    (void)state;
    /* rank 0 starts last: the others retry until it listens */
    const int says[4] = {4, 4, 4, 4}, delay[4] = {300, 0, 50, 100};
    const outcome o = run_world(4, says, delay, 5000);
    for (int r = 0; r < 4; r++)
        if (o.status[r] != 0) fail_msg("rank %d exited %d: %s", r, o.status[r], o.msgs);
}

static void test_missing_rank(void **state)
{
    (void)state;
    /* rank 2 of 3 never comes: rank 0 names it, rank 1 hears that rank 0 gave up; both within
     * the timeout (and a little) */
    const int says[3] = {3, 3, 3}, delay[3] = {0, 0, -1};
    const outcome o = run_world(3, says, delay, 800);
    assert_int_equal(o.status[0], 2);
    assert_int_equal(o.status[1], 2);
    if (!strstr(o.msgs, "rank 0: rendezvous: rank 2 of 3 did not connect") ||
        !strstr(o.msgs, "rank 1: rendezvous: rank 0 refused rank 1: rank 0 gave up"))
        fail_msg("messages: %s", o.msgs);
    if (o.seconds > 3) fail_msg("took %.1f s with a timeout of 0.8 s", o.seconds);
}

static void test_other_world(void **state)
{
    (void)state;
    /* rank 1 believes in a world of 3: refused, and rank 0 stops */
    const int says[2] = {2, 3}, delay[2] = {0, 100};
    const outcome o = run_world(2, says, delay, 3000);
    assert_int_equal(o.status[0], 2);
    assert_int_equal(o.status[1], 2);
    if (!strstr(o.msgs, "says the world is 3 ranks") ||
        !strstr(o.msgs, "rank 0 refused rank 1: rank 0 runs another world size"))
        fail_msg("messages: %s", o.msgs);
}

static void test_no_rank0(void **state)
{
    (void)state;
    /* nobody listens: the rank says it cannot reach rank 0, at the deadline */
    const int says[2] = {2, 2}, delay[2] = {-1, 0};
    const outcome o = run_world(2, says, delay, 500);
    assert_int_equal(o.status[1], 2);
    if (!strstr(o.msgs, "rank 1: rendezvous: rank 1 cannot reach rank 0 at 127.0.0.1:"))
        fail_msg("messages: %s", o.msgs);
}

int main(void)
{
    signal(SIGPIPE, SIG_IGN);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_env),
        cmocka_unit_test(test_four_ranks),
        cmocka_unit_test(test_missing_rank),
        cmocka_unit_test(test_other_world),
        cmocka_unit_test(test_no_rank0),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
