/* NCCL opened lazily (see nccl_lib.h). */
#include "nccl_lib.h"

#include <dlfcn.h>
#include <errno.h> /* program_invocation_short_name */
#include <glob.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "gpu.h"
#include "util.h"

static pthread_once_t once = PTHREAD_ONCE_INIT;
static int loaded;      /* 1 ok, -1 failed (after once) */
static char failed[1024]; /* why, when it failed */

#if TT_HAVE_NCCL
static tt_nccl lib;

const tt_nccl *tt_nccl_get(void) { return loaded == 1 ? &lib : NULL; }

/* Where nvidia-nccl-cu13 puts the library, under the Python installations a machine usually has
 * (the system's, /usr/local's, a user's, virtual environments under /opt or $VIRTUAL_ENV). */
static void *open_beside_python(char *path, size_t n)
{
    static const char *const patterns[] = {
        "%s/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2", /* $VIRTUAL_ENV */
        "/usr/local/lib/python3*/dist-packages/nvidia/nccl/lib/libnccl.so.2",
        "/usr/local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
        "/usr/lib/python3/dist-packages/nvidia/nccl/lib/libnccl.so.2",
        "/opt/*/.venv/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2",
        "%s/.local/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2", /* $HOME */
    };
    for (size_t i = 0; i < sizeof patterns / sizeof *patterns; i++) {
        const char *env = i == 0 ? getenv("VIRTUAL_ENV") : i == 5 ? getenv("HOME") : "";
        if (!env || (strstr(patterns[i], "%s") && !*env)) continue;
        char pat[640];
        snprintf(pat, sizeof pat, patterns[i], env);
        glob_t g;
        if (glob(pat, 0, NULL, &g) != 0) continue;
        void *h = NULL;
        for (size_t k = 0; k < g.gl_pathc && !h; k++)
            if ((h = dlopen(g.gl_pathv[k], RTLD_NOW | RTLD_LOCAL)) != NULL)
                snprintf(path, n, "%s", g.gl_pathv[k]);
        globfree(&g);
        if (h) return h;
    }
    return NULL;
}

static void load(void)
{
    loaded = -1;
    /* before the library can read it: NVLink multicast off in this process and its children */
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    const char *want = getenv("TT_NCCL_LIB");
    void *h = NULL;
    if (want && *want) {
        if (!(h = dlopen(want, RTLD_NOW | RTLD_LOCAL))) {
            snprintf(failed, sizeof failed, "no NCCL: TT_NCCL_LIB=%s cannot be opened: %s", want, dlerror());
            return;
        }
        snprintf(lib.path, sizeof lib.path, "%s", want);
    } else if ((h = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL)) != NULL) {
        snprintf(lib.path, sizeof lib.path, "libnccl.so.2");
    } else if (!(h = open_beside_python(lib.path, sizeof lib.path))) {
        snprintf(failed, sizeof failed, "no NCCL: libnccl.so.2 is neither on the dynamic loader's "
                 "path nor in an nvidia-nccl-cu13 beside Python (pip install nvidia-nccl-cu13, or "
                 "set TT_NCCL_LIB to the library's path)");
        return;
    }
#define SYM(field, name)                                                                           \
    if (!(*(void **)&lib.field = dlsym(h, name))) {                                                \
        snprintf(failed, sizeof failed, "no NCCL: %s lacks %s (too old?)", lib.path, name);        \
        return;                                                                                    \
    }
    SYM(get_version, "ncclGetVersion")
    SYM(get_unique_id, "ncclGetUniqueId")
    SYM(comm_init_rank, "ncclCommInitRank")
    SYM(comm_destroy, "ncclCommDestroy")
    SYM(comm_abort, "ncclCommAbort")
    SYM(comm_get_async_error, "ncclCommGetAsyncError")
    SYM(all_reduce, "ncclAllReduce")
    SYM(reduce_scatter, "ncclReduceScatter")
    SYM(all_gather, "ncclAllGather")
    SYM(broadcast, "ncclBroadcast")
    SYM(group_start, "ncclGroupStart")
    SYM(group_end, "ncclGroupEnd")
    SYM(get_error_string, "ncclGetErrorString")
#undef SYM
    ncclResult_t r = lib.get_version(&lib.version);
    if (r != ncclSuccess) {
        snprintf(failed, sizeof failed, "no NCCL: %s: ncclGetVersion: %s", lib.path, lib.get_error_string(r));
        return;
    }
    if (lib.version / 10000 != NCCL_MAJOR || lib.version < TT_NCCL_MIN_VERSION) {
        snprintf(failed, sizeof failed, "no NCCL: %s is version %d.%d.%d; this build needs %d.x from "
                 "%d.%d on", lib.path, lib.version / 10000, lib.version / 100 % 100, lib.version % 100,
                 NCCL_MAJOR, TT_NCCL_MIN_VERSION / 10000, TT_NCCL_MIN_VERSION / 100 % 100);
        return;
    }
    loaded = 1;
}
#else
static void load(void)
{
    loaded = -1;
    setenv("NCCL_NVLS_ENABLE", "0", 1);
    snprintf(failed, sizeof failed, "no NCCL: this build has none (nccl.h was not found when it "
             "was built: give CMake -DTT_NCCL_ROOT=DIR, DIR/include/nccl.h)");
}
#endif

int tt_nccl_load(char *why, size_t whylen)
{
    pthread_once(&once, load);
    return loaded == 1 ? 0 : tt_errf(why, whylen, "%s", failed);
}

#if TT_HAVE_NCCL

/* One line, and exit 1 at once: ncclCommAbort would wait for the collective the dead or stopped
 * peer never joins (measured: it hung), and ending the process frees the GPU and NCCL's
 * resources as a kill does. */
static void stop_rank(int rank, int world, const char *what, const char *cause)
{
    fprintf(stderr, "%s: rank %d of %d: %s: %s; this rank stops\n", program_invocation_short_name,
            rank, world, what, cause);
    fflush(stderr);
    fflush(stdout);
    _exit(1);
}

void tt_nccl_wait(void *comm, cudaStream_t st, bool slow, int rank, int world, const char *what)
{
    const char *limit = slow ? "TT_RANK_SLOW_TIMEOUT_S" : "TT_RANK_TIMEOUT_S";
    const double timeout_s = (double)tt_env_long(limit, 0, 86400, slow ? 300 : 20);
    if (timeout_s <= 0) { /* no limit: the plain wait */
        TT_CUDA(cudaStreamSynchronize(st));
        return;
    }
    const double t0 = tt_now_seconds();
    double next_look = t0 + 0.1;
    for (;;) {
        const cudaError_t e = cudaStreamQuery(st);
        if (e == cudaSuccess) return;
        if (e != cudaErrorNotReady) TT_CUDA(e);
        const double now = tt_now_seconds();
        if (now - t0 > 0.25) { /* a step's end is usually near: spin until then, as a */
            const struct timespec nap = {0, 100000}; /* synchronize would, then nap */
            nanosleep(&nap, NULL);
        }
        if (now < next_look) continue;
        next_look = now + 0.1;
        ncclResult_t r = ncclSuccess;
        if (loaded == 1 && comm && lib.comm_get_async_error((ncclComm_t)comm, &r) == ncclSuccess &&
            r != ncclSuccess && r != ncclInProgress) {
            char cause[256];
            snprintf(cause, sizeof cause, "NCCL: %s (another rank failed or died)",
                     lib.get_error_string(r));
            stop_rank(rank, world, what, cause);
        }
        if (now - t0 > timeout_s) {
            char cause[256];
            snprintf(cause, sizeof cause, "not finished after %.0f s: another rank hangs or has "
                     "died (this one waits for it in NCCL; %s sets the limit)", now - t0, limit);
            stop_rank(rank, world, what, cause);
        }
    }
}
#endif
