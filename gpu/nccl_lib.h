/* NCCL, opened on first use (dlopen), as the driver is: every binary starts and does its CPU work
 * on a machine without NCCL, and says in one line what is missing where a run needs it. Only the
 * entry points the multi-GPU trainer calls are resolved, each through the table below; their
 * types are nccl.h's (the header the build found: the CUDA toolkit's copy, or the one in the
 * nvidia-nccl-cu13 Python package). Built without nccl.h (TT_HAVE_NCCL 0), tt_nccl_load says
 * so and nothing else here is usable. */
#ifndef TT_NCCL_LIB_H
#define TT_NCCL_LIB_H

#include <stdbool.h>
#include <stddef.h>

#if TT_HAVE_NCCL
#include <nccl.h>

typedef struct {
    int version; /* the library's, as ncclGetVersion gives it (2.28.9: 22809) */
    char path[512]; /* where it was found */
    ncclResult_t (*get_version)(int *);
    ncclResult_t (*get_unique_id)(ncclUniqueId *);
    ncclResult_t (*comm_init_rank)(ncclComm_t *, int, ncclUniqueId, int);
    ncclResult_t (*comm_destroy)(ncclComm_t);
    ncclResult_t (*comm_abort)(ncclComm_t);
    ncclResult_t (*comm_get_async_error)(ncclComm_t, ncclResult_t *);
    ncclResult_t (*all_reduce)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t, ncclComm_t,
                               cudaStream_t);
    ncclResult_t (*reduce_scatter)(const void *, void *, size_t, ncclDataType_t, ncclRedOp_t,
                                   ncclComm_t, cudaStream_t);
    ncclResult_t (*all_gather)(const void *, void *, size_t, ncclDataType_t, ncclComm_t, cudaStream_t);
    ncclResult_t (*broadcast)(const void *, void *, size_t, ncclDataType_t, int, ncclComm_t,
                              cudaStream_t);
    ncclResult_t (*group_start)(void);
    ncclResult_t (*group_end)(void);
    const char *(*get_error_string)(ncclResult_t);
} tt_nccl;

/* The loaded library's table (after a tt_nccl_load that returned 0). */
const tt_nccl *tt_nccl_get(void);
#endif

/* The oldest library the trainer takes (ncclCommInitRankConfig's era, and bf16 sums). */
#define TT_NCCL_MIN_VERSION 21800

/* Opens libnccl.so.2 once per process: the path in TT_NCCL_LIB when it is set (and only that),
 * else the dynamic loader's search (LD_LIBRARY_PATH, the system's), else the copy that the
 * nvidia-nccl-cu13 Python package installs beside Python (system and virtual environments).
 * Before anything is opened, NCCL_NVLS_ENABLE=0 is put in this process's environment, whatever
 * it held: NVLink multicast stays off (the shared machines' rule), and ranks started from here
 * inherit it. Returns 0, or -1 with why in one line ("no NCCL: ..."): not found, a library
 * without an entry point, older than TT_NCCL_MIN_VERSION, or this build has no nccl.h. Later
 * calls return the first call's verdict. */
int tt_nccl_load(char *why, size_t whylen);

#if TT_HAVE_NCCL
#include <cuda_runtime.h>

/* The rank-side watchdog of a run on several GPUs: waits for everything enqueued on st (the
 * collectives over comm among it) to finish, for at most the limit that slow picks: with slow
 * false TT_RANK_TIMEOUT_S (default 20 s; with torchrun's 30 s between SIGTERM and SIGKILL for a
 * stopped rank, every rank has ended within 60 s), the limit of a training step; with slow true
 * TT_RANK_SLOW_TIMEOUT_S (default 300 s), for the first step (whose capture and product timing
 * may take a rank a while), for what follows a validation or a checkpoint (rank 0 writes it
 * while the others go on to the next step's sums) and for the gathers around them; either 0: no
 * limit, and a plain cudaStreamSynchronize. A collective waits for every rank, so a rank that hangs (stopped,
 * deadlocked) or died under a launcher that does not end the others would hold this one for
 * ever: past the limit, or when NCCL reports an error on comm, this process says in one line
 * which rank it is, what it waited for (`what`, e.g. "step 57") and the cause, and exits 1
 * (_exit, without ncclCommAbort, which waits for the stuck collective), so that the launcher
 * ends the run. It never returns an error. Nothing is copied to the host here: a caller copies
 * after it (a copy into pageable memory would block before the limit is looked at). */
void tt_nccl_wait(void *comm, cudaStream_t st, bool slow, int rank, int world, const char *what);
#endif

#endif
