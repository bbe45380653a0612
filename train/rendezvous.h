/* Where a process stands in a run of several (one per GPU, on one host or several), and the
 * one exchange NCCL needs before its communicator exists: rank 0's unique id handed to every
 * other rank, over TCP. Nothing here needs a GPU or NCCL. */
#ifndef TT_RENDEZVOUS_H
#define TT_RENDEZVOUS_H

#include <stddef.h>

typedef struct {
    int rank, world; /* this process's rank among world */
    int local;       /* its rank on its host: the GPU it takes */
    char addr[256];  /* where rank 0 listens: MASTER_ADDR, default 127.0.0.1 */
    int port;        /* TT_MASTER_PORT, else MASTER_PORT (+ 1 under torchrun), default 29500 */
    const char *from; /* whose variables: "torchrun", "mpirun", "srun", or "none" (one rank) */
} tt_dist_env;

/* The process's place from the environment, the first set of these that is present:
 *   RANK, WORLD_SIZE, LOCAL_RANK             (torchrun and launchers like it)
 *   OMPI_COMM_WORLD_RANK, _SIZE, _LOCAL_RANK (Open MPI's mpirun)
 *   SLURM_PROCID, SLURM_NTASKS, SLURM_LOCALID (srun)
 * with MASTER_ADDR and MASTER_PORT in every case; none present: one rank. Rank 0 listens on
 * TT_MASTER_PORT when that is set, else on MASTER_PORT, or on the port after it where torchrun's
 * agent holds its own store there (TORCHELASTIC_USE_AGENT_STORE=True). Returns 0, or -1 with
 * err (one line) for a value that is not a number, out of range, or missing from its set. */
int tt_dist_from_env(tt_dist_env *e, char *err, size_t errlen);

/* Rank 0 hands the n bytes at blob to every other rank of e->world: it listens on e->port (every
 * interface), and the others connect to e->addr, retrying until rank 0 listens. Each rank says
 * who it is (its rank, the world size and n, after a magic); rank 0 refuses a rank out of range,
 * a rank twice, another world size or another n, and tells that rank why. Everything happens
 * within timeout_ms of the call (a connected rank waits a second longer for rank 0's answer,
 * which is then the verdict). Returns 0 with the blob on every rank, or -1 with err naming
 * what failed: the ranks that never connected (rank 0), or rank 0's refusal, its silence or its
 * absence (the others). */
int tt_rendezvous(const tt_dist_env *e, void *blob, size_t n, int timeout_ms, char *err,
                  size_t errlen);

#endif
