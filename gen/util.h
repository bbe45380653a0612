/* Small helpers shared by the generator and the runtime: checked allocation, whole-file I/O,
 * atomic writes, directories, clocks and UTF-8. Allocation failure aborts (an invariant, not user
 * input). */
#ifndef TT_UTIL_H
#define TT_UTIL_H

#include <setjmp.h>
#include <stddef.h>
#include <stdio.h>

#define TT_ASSERT(c)                                                                            \
    do {                                                                                        \
        if (!(c)) tt_panic(__FILE__, __LINE__, "assertion failed: %s", #c);                     \
    } while (0)

_Noreturn void tt_panic(const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Where a library's call (libtt) catches the internal errors that would end a tool: while a trap
 * is set on a thread, tt_panic on that thread writes its message into the trap and longjmps to
 * its env (setjmp'd by the caller) instead of printing and aborting. NULL: none (the default).
 * What the interrupted call held is not released: the caller marks its object unusable. */
typedef struct {
    jmp_buf env;
    char message[1024];
} tt_panic_trap;
void tt_panic_trap_set(tt_panic_trap *trap);
tt_panic_trap *tt_panic_trap_get(void);

void *tt_xmalloc(size_t n);
void *tt_xcalloc(size_t n, size_t size);
void *tt_xrealloc(void *p, size_t n);
char *tt_xstrdup(const char *s);
char *tt_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* snprintf into err, for the error-message convention of every module: return -1 afterwards. */
int tt_errf(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* fn(ctx, i) for every i in [0, n), on up to threads threads (this one among them; 0: one a
 * core), each taking the next i in turn; returns when all are done. */
void tt_parallel_for(int n, int threads, void (*fn)(void *ctx, int i), void *ctx);

/* Reads a whole regular file (not a FIFO, a device or a directory) of at most max bytes (0: any
 * size) into a NUL-terminated buffer. -1 with "PATH: reason" in err. */
int tt_read_file(const char *path, size_t max, char **data, size_t *len, char *err, size_t errlen);

/* Writes a file atomically: a temporary beside it, fsync, rename. A crash leaves either the old
 * file or the new one, never half of one. */
int tt_write_file_atomic(const char *path, const void *const *parts, const size_t *lens, int nparts,
                         char *err, size_t errlen);

/* mkdir -p. */
int tt_mkdir_p(const char *path, char *err, size_t errlen);

double tt_now_seconds(void);
/* The relative L2 error of got against want, ||got - want|| / ||want|| (want all zero: the
 * absolute error); infinity when got holds anything not finite. */
double tt_rel_l2(const float *got, const float *want, size_t n);
/* The same against max(||want||, floor): for a reference that may be smaller than the error its
 * computation can carry (a sum whose parts cancel); floor 0 is tt_rel_l2. */
double tt_rel_l2_floor(const float *got, const float *want, size_t n, double floor);

/* The integer in environment variable name: fallback when it is unset or empty; when it is not
 * an integer from lo to hi, one line on stderr says so and fallback is used (a knob for tests
 * and benchmarks, never worth stopping a run for). */
long tt_env_long(const char *name, long lo, long hi, long fallback);
/* Which of choices (NULL-terminated) environment variable name holds, its index: fallback when it
 * is unset or empty; any other value, one line on stderr naming the variable, its value and the
 * choices, and fallback (TT_NCCL_SUMS: fp32 or bf16). */
int tt_env_choice(const char *name, const char *const *choices, int fallback);

/* 1 when no process pid runs (another user's process counts as running), else 0. */
int tt_pid_gone(long pid);
/* The PID in a temporary's name, "NAME.tmp.PID" or "NAME.tmp.PID.MORE" (tt_write_file_atomic's and
 * the checkpoints' step folders'), or -1 when name is not one. */
long tt_temp_pid(const char *name);

/* A tool's command-line error after getopt_long (with an optstring that starts with ':', so that
 * an option given without its value returns ':'): "TOOL: --opt needs a value" or "TOOL: unknown
 * option '--opt'", each with "(see TOOL --help)", one line on stderr. Returns 2, the usage
 * status. */
int tt_opt_refuse(const char *tool, int c, char *const *argv);

/* What write(arg, f) prints, as a malloc'd string: stages that are written to a FILE (a spec,
 * a plan, a report) also become text for a file, a checkpoint's metadata or a comparison. */
char *tt_capture(void (*write)(const void *arg, FILE *f), const void *arg);

/* Length of the well-formed UTF-8 sequence that starts s (n bytes available), or 0 if none does
 * (n == 0 included): no overlong forms, no surrogates (U+D800..DFFF), nothing above U+10FFFF, no
 * sequence cut short (Unicode's table 3-7). The corpus reader and the safetensors header share it. */
size_t tt_utf8_len(const void *s, size_t n);

/* A growing string buffer. */
typedef struct {
    char *data;
    size_t len, cap;
} tt_buf;
void tt_buf_append(tt_buf *b, const void *p, size_t n);
void tt_buf_printf(tt_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tt_buf_free(tt_buf *b);

/* s as a JSON string, quoted, with '"', '\\' and control characters escaped. */
void tt_json_string(const char *s, FILE *f);

#endif
