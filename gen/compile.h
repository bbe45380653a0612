/* The fourth stage: CUDA source -> CUBIN through NVRTC, through the cache. Instances missing from
 * the cache compile in parallel; a failure keeps NVRTC's log and writes source, options and log
 * to a folder whose path is in the error. */
#ifndef TT_COMPILE_H
#define TT_COMPILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "emit.h"
#include "plan.h"

typedef struct {
    const char *arch;                 /* "sm_90" */
    const char *template_dir;         /* NULL: the embedded templates */
    const char *const *extra_options; /* appended to NVRTC's options */
    int n_extra;
    const tt_cache *cache;            /* NULL: compile everything, store nothing */
    const char *failure_dir;          /* where failed builds are written */
    int jobs;                         /* parallel compiles; <= 0: one per CPU */
} tt_build_opts;

typedef struct {
    const tt_kernel *kernel;
    char *source;
    size_t source_len;
    char *options[TT_MAX_OPTIONS];
    int n_options;
    uint8_t key[32];
    char key_hex[65];
    /* results */
    void *cubin;
    size_t cubin_len;
    char *log;             /* NVRTC's log (ptxas' resource report included) */
    bool cached;           /* loaded from the cache, not compiled */
    char cache_note[320];  /* why an existing entry was rebuilt, if it was */
    double seconds;        /* compile time; 0 when cached */
    int registers, spill_bytes, smem_bytes; /* from ptxas' report; -1 when absent */
    char *error;           /* set when this instance failed */
} tt_build;

/* Emits every instance of the plan and computes its cache key. */
int tt_builds_prepare(const tt_plan *plan, const tt_build_opts *o, tt_build **builds, char *err,
                      size_t errlen);

/* Loads what the cache has and compiles the rest. Returns the number of failed instances (their
 * error says why and where the failure was written). */
int tt_builds_run(tt_build *builds, int n, const tt_build_opts *o);

void tt_builds_free(tt_build *builds, int n);

/* NVRTC's version, part of every cache key. */
void tt_nvrtc_version(int *major, int *minor);

/* Whether NVRTC can target arch ("sm_90"); lists what it can in err when not. */
int tt_check_arch(const char *arch, char *err, size_t errlen);

#endif
