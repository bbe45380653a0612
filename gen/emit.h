/* Instantiates a plan's kernel from its template: the third stage (plan -> CUDA source).
 * The source is self-contained (cpu/rng.h and common.cuh are pasted in), so a dumped .cu
 * compiles on its own, and it depends only on the kernel instance: the same plan gives
 * byte-identical source. */
#ifndef TT_EMIT_H
#define TT_EMIT_H

#include <stddef.h>

#include "plan.h"

/* malloc'd source for k; templates come from template_dir when set, else the embedded copies. */
char *tt_emit_source(const tt_kernel *k, const char *template_dir, size_t *len, char *err,
                     size_t errlen);

#define TT_MAX_OPTIONS 16

/* NVRTC options for k on arch; extra (may be NULL) are appended as given. Returns the count;
 * opts[i] are malloc'd (free with tt_emit_free_options). */
int tt_emit_options(const char *arch, const char *const *extra, int n_extra,
                    char *opts[TT_MAX_OPTIONS]);
void tt_emit_free_options(char *opts[], int n);

#endif
