/* What the tests share: a fresh folder under /tmp and its removal, whole files read and written,
 * the corpora of $TT_DATA_DIR, and a process runner that starts a built binary with extra
 * environment variables, captures its stdout and stderr, and waits for it with a time limit.
 * Include after <cmocka.h>: a helper that cannot do its job fails the test. */
#ifndef TT_TESTUTIL_H
#define TT_TESTUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The seed of a test's random inputs: $TT_TEST_SEED when set (to replay a run), else fresh from
 * /dev/urandom. Tests print it. */
uint64_t tu_seed(void);

/* Makes /tmp/tt-test-NAME-XXXXXX and writes its path to out (in a setup too: a failure there
 * fails the setup). */
void tu_temp_dir(const char *name, char *out, size_t outlen);
/* rm -rf: the result of nftw (0 when all went). */
int tu_rm_rf(const char *path);
int tu_exists(const char *path);

/* The whole file, NUL-terminated (to free); its length to *len when len is not NULL. */
char *tu_read_file(const char *path, size_t *len);
void tu_write_file(const char *path, const void *data, size_t len);
void tu_write_text(const char *path, const char *text);

/* A file of the corpora: $TT_DATA_DIR/rel, default TT_SOURCE_DIR/../shared/data/rel (to free). A
 * missing corpus fails the test; it is not skipped. */
char *tu_data_path(const char *rel);

/* A child process: argv[0] is the binary's path; stdin is /dev/null. */
typedef struct {
    pid_t pid;
    double t0;
    int out_fd, err_fd; /* unlinked temporary files that stdout and stderr go to */
    char **env;
    int done;
    /* once done */
    int status;    /* the exit code; -1 when a signal ended it */
    int signal;    /* the signal that ended it, else 0 */
    int timed_out; /* killed by tu_proc_wait at its time limit */
    double seconds;
    char *out, *err; /* what it wrote to stdout and stderr */
} tu_proc;

/* Starts argv (NULL-terminated) with the environment of this process, where each "NAME=VALUE" of
 * env (NULL-terminated, or NULL for none) replaces NAME. */
void tu_proc_start(tu_proc *p, const char *const *argv, const char *const *env);
/* 1 while it runs; 0 once it has ended (then p holds the results). */
int tu_proc_running(tu_proc *p);
/* Waits until it ends, or for timeout seconds (0: no limit) and then kills it (timed_out). */
void tu_proc_wait(tu_proc *p, double timeout);
/* Sends sig to a child that still runs. */
void tu_proc_signal(const tu_proc *p, int sig);
/* Kills it if it still runs, reaps it, and frees what p holds. */
void tu_proc_free(tu_proc *p);
/* Fails the test, showing stdout and stderr, unless the ended child exited with code. */
void tu_expect_exit(const tu_proc *p, int code, const char *what);

/* 1 when an executable program of that name is in a folder of $PATH. */
int tu_on_path(const char *program);
/* Fails the test unless path is a file that starts with PNG's signature. */
void tu_expect_png(const char *path);

/* The number of newlines in s. */
int tu_count_lines(const char *s);

/* A loopback TCP port nobody listens on now (the kernel's pick, released). */
int tu_free_port(void);

/* TT_TEST_ONLY (e.g. test_profile): cmocka runs only the tests whose names match it. Before
 * cmocka_run_group_tests. */
void tu_test_only_from_env(void);

#endif
