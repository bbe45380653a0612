/* One run as several processes on this host: `tt-train --gpus N` starts N copies of itself as the
 * ranks of one run and reports as one run (a rank that fails or hangs ends the run). Each rank finds its place with tt_dist_from_env
 * (rendezvous.h) from the variables set here, as it would under torchrun. Nothing here needs a
 * GPU or NCCL. */
#ifndef TT_RANKS_H
#define TT_RANKS_H

#include <stddef.h>

typedef struct {
    int n;                /* ranks, 1 or more */
    char *const *argv;    /* what every rank runs: a program (searched on PATH) and its arguments */
    const char *addr;     /* MASTER_ADDR handed to them (NULL: 127.0.0.1) */
    int port;             /* MASTER_PORT (0: one nobody listens on now, the kernel's pick) */
    const char *log_dir;  /* ranks 1.. write their output to log_dir/rank-K.log (NULL: ours) */
    int grace_ms;         /* after a failure, between SIGTERM and SIGKILL to the others (0: 5000) */
    int stall_ms;         /* a run whose ranks have all beaten once (tt_rank_beat) and then make
                           * no progress for this long is stopped (0: 45000; -1: never) */
} tt_ranks_opts;

/* Runs o->n copies of o->argv as ranks 0 .. n-1: each in a process group of its own, with RANK,
 * WORLD_SIZE, LOCAL_RANK (the rank: one host), MASTER_ADDR, MASTER_PORT and NCCL_NVLS_ENABLE=0
 * added to this process's environment; rank 0's output is this process's. Waits for all. When a
 * rank fails (a status other than 0, or a signal), the others get SIGTERM, then SIGKILL after
 * grace_ms, and are reaped: no process is left behind. SIGINT and SIGTERM sent to this process
 * meanwhile go to every rank still running (a rank's own handler writes its checkpoint), once
 * each. Returns the run's status: 0 when every rank exited 0, else the first failure's (its
 * exit status, or 128 + the signal), with why naming the rank and the cause in one line; -1 with
 * why when the ranks cannot be started. */
int tt_ranks_run(const tt_ranks_opts *o, char *why, size_t whylen);

/* A rank's heartbeat: each call counts one more step of progress (a training step, a
 * validation, a checkpoint), in the file TT_RANK_HEARTBEAT names (tt_ranks_run sets it; without
 * it, nothing). The ranks of a run beat in the same order, so the launcher compares the counts:
 * once every rank has beaten, a stall of stall_ms stops the run, naming the rank that lags
 * behind the others (or one that is stopped, or, where all wait at one count, that count). */
void tt_rank_beat(void);

/* A tool's --gpus N: N copies of this program (/proc/self/exe) as the ranks of one run, with the
 * arguments argv[1..] less --gpus and its value; tt_ranks_run's status and why. */
int tt_ranks_relaunch(int argc, char **argv, int n, char *why, size_t whylen);

#endif
