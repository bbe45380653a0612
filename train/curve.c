/* The training curve, its data file and its picture through gnuplot (see curve.h). */
#include "curve.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

#define SMOOTH_SHARE 0.01 /* the moving average's span: this share of the longest run's steps */

void tt_curve_row(tt_buf *b, long step, double loss, double valid_ppl)
{
    tt_buf_printf(b, "%ld\t", step);
    if (isfinite(loss)) tt_buf_printf(b, "%.7g", loss);
    tt_buf_printf(b, "\t");
    if (isfinite(valid_ppl)) tt_buf_printf(b, "%.7g", valid_ppl);
    tt_buf_printf(b, "\n");
}

enum { ROW_BAD, ROW_LOSS, ROW_VALID };

/* A row of curve.tsv (without its newline): ROW_LOSS or ROW_VALID with its step, else ROW_BAD. */
static int parse_row(const char *line, long *step)
{
    char *end;
    errno = 0;
    *step = strtol(line, &end, 10);
    if (end == line || errno || *step < 1 || *end != '\t') return ROW_BAD;
    int kind = ROW_BAD;
    for (int field = 0; field < 2; field++) {
        const char *p = end + 1;
        end = (char *)p;
        if (*p != '\t' && *p) {
            const double v = strtod(p, &end);
            if (end == p || !isfinite(v) || kind != ROW_BAD) return ROW_BAD;
            kind = field == 0 ? ROW_LOSS : ROW_VALID;
        }
        if (*end != (field == 0 ? '\t' : '\0')) return ROW_BAD;
    }
    return kind;
}

struct tt_curve {
    char *dir, *tsv;
    FILE *f; /* curve.tsv, appended to; NULL once it could not be written */
    tt_buf row;
    long steps, valids, drawn; /* rows of each kind; steps + valids when curve.png was drawn */
    bool quiet, no_gnuplot, failed; /* gnuplot missing; a failure of it noted (once a run) */
};

static void note(bool quiet, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(bool quiet, const char *fmt, ...)
{
    if (quiet) return;
    va_list ap;
    va_start(ap, fmt);
    printf("note: ");
    vprintf(fmt, ap);
    printf("\n");
    fflush(stdout);
    va_end(ap);
}

/* The temporaries of curve.tsv, curve.gp and curve.png that processes no longer running left. */
static void remove_temporaries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    for (struct dirent *e; (e = readdir(d));) {
        if (strncmp(e->d_name, "curve.", 6) || !tt_pid_gone(tt_temp_pid(e->d_name))) continue;
        char *p = tt_xasprintf("%s/%s", dir, e->d_name);
        unlink(p);
        free(p);
    }
    closedir(d);
}

tt_curve *tt_curve_open(const char *dir, long from, bool quiet)
{
    remove_temporaries(dir);
    tt_curve *c = tt_xcalloc(1, sizeof *c);
    c->dir = tt_xstrdup(dir);
    c->tsv = tt_xasprintf("%s/curve.tsv", dir);
    c->quiet = quiet;
    char err[1024], *old = NULL;
    size_t len = 0;
    tt_buf kept = {0};
    tt_buf_printf(&kept, "# step\tloss\tvalid_ppl\n");
    int rc = 0;
    if (from > 0 && access(c->tsv, F_OK) == 0)
        rc = tt_read_file(c->tsv, 0, &old, &len, err, sizeof err);
    long bad = 0, line_no = 0;
    /* a line without its newline is the last, unfinished by a kill: left out */
    for (char *line = old, *end; rc == 0 && line && (end = strchr(line, '\n')); line = end + 1) {
        *end = '\0';
        line_no++;
        long step;
        const int kind = line[0] == '#' ? ROW_BAD : parse_row(line, &step);
        if (kind == ROW_BAD && line[0] != '#' && !bad) bad = line_no;
        if (kind == ROW_BAD || step > from) continue;
        tt_buf_printf(&kept, "%s\n", line);
        c->steps += kind == ROW_LOSS;
        c->valids += kind == ROW_VALID;
    }
    free(old);
    if (bad)
        note(quiet, "%s:%ld: not a row of step, loss and validation perplexity: left out", c->tsv,
             bad);
    const void *parts[1] = {kept.data};
    if (rc == 0) rc = tt_write_file_atomic(c->tsv, parts, &kept.len, 1, err, sizeof err);
    tt_buf_free(&kept);
    if (rc == 0 && !(c->f = fopen(c->tsv, "ae")))
        rc = tt_errf(err, sizeof err, "%s: cannot open for appending: %s", c->tsv, strerror(errno));
    if (rc != 0) {
        note(quiet, "%s: no curve.png", err);
        tt_curve_close(c);
        return NULL;
    }
    c->drawn = c->steps + c->valids;
    return c;
}

static void append(tt_curve *c, long step, double loss, double valid_ppl)
{
    c->row.len = 0;
    tt_curve_row(&c->row, step, loss, valid_ppl);
    fwrite(c->row.data, 1, c->row.len, c->f);
}

void tt_curve_loss(tt_curve *c, long step, double loss)
{
    if (!c || !c->f) return;
    append(c, step, loss, NAN);
    c->steps++;
}

void tt_curve_flush(tt_curve *c)
{
    if (!c || !c->f || fflush(c->f) == 0) return;
    note(c->quiet, "%s: cannot write: %s: no curve.png from here on", c->tsv, strerror(errno));
    fclose(c->f);
    c->f = NULL;
}

/* curve.gp written and run, when rows came since the last drawing. */
static void draw(tt_curve *c)
{
    tt_curve_flush(c);
    if (!c->f || c->no_gnuplot || c->steps + c->valids == c->drawn) return;
    c->drawn = c->steps + c->valids;
    const tt_curve_run run = {"curve.tsv", NULL, NULL, c->steps, c->valids};
    tt_buf script = {0};
    tt_curve_script(&script, &run, 1, c->dir, "curve.png");
    char *path = tt_xasprintf("%s/curve.gp", c->dir), err[1024];
    const void *parts[1] = {script.data};
    int rc = tt_write_file_atomic(path, parts, &script.len, 1, err, sizeof err);
    if (rc == 0) rc = tt_gnuplot(c->dir, "curve.gp", "curve.png", err, sizeof err);
    if (rc == 1) {
        note(c->quiet, "gnuplot not found: no curve.png");
        c->no_gnuplot = true;
    } else if (rc != 0 && !c->failed) {
        note(c->quiet, "%s: no curve.png", err);
        c->failed = true;
    }
    free(path);
    tt_buf_free(&script);
}

void tt_curve_valid(tt_curve *c, long step, double valid_ppl)
{
    if (!c || !c->f) return;
    append(c, step, NAN, valid_ppl);
    c->valids++;
    draw(c);
}

void tt_curve_close(tt_curve *c)
{
    if (!c) return;
    if (c->f) draw(c);
    if (c->f) fclose(c->f);
    tt_buf_free(&c->row);
    free(c->dir), free(c->tsv), free(c);
}

/* s as a gnuplot string: in single quotes, where only a quote is special (written twice). */
static void quote(tt_buf *b, const char *s)
{
    tt_buf_append(b, "'", 1);
    for (; *s; s++) tt_buf_append(b, *s == '\'' ? "''" : s, 1 + (*s == '\''));
    tt_buf_append(b, "'", 1);
}

void tt_curve_script(tt_buf *b, const tt_curve_run *runs, int n, const char *title, const char *png)
{
    long longest = 0, valids = 0;
    for (int i = 0; i < n; i++) {
        if (runs[i].steps > longest) longest = runs[i].steps;
        valids += runs[i].valids;
    }
    /* the moving average's weight of the past (0, no smoothing, up to 100 steps) */
    const double span = (double)longest * SMOOTH_SHARE, a = span > 1 ? 1 - 1 / span : 0;
    const bool raw = n == 1 && a > 0; /* one run: its raw losses too, behind */
    tt_buf_printf(b, "# Generated by tt (train/curve.c): training loss and validation perplexity "
                     "against steps.\n# gnuplot -e \"out='FILE.png'\" THIS draws it to FILE.png.\n"
                     "if (!exists(\"out\")) out = ");
    quote(b, png);
    /* libgd's png, not cairo's: cairo took 36 s for 400k steps of noisy loss, libgd 1 s (but
     * draws no dashes: validations are circles) */
    tt_buf_printf(b, "\nset terminal png noenhanced size 1000,600\nset output out\n"
                     "set datafile separator tab\n");
    for (int i = 0; i < n; i++)
        if (!runs[i].file) tt_buf_printf(b, "$run%d << EOD\n%sEOD\n", i + 1, runs[i].rows);
    if (title) {
        tt_buf_printf(b, "set title ");
        quote(b, title);
        tt_buf_printf(b, "\n");
    }
    tt_buf_printf(b, "set grid\nset key top right\nset xlabel 'step'\nset ylabel 'training loss%s'\n"
                     "set ytics nomirror\n", n > 1 ? " (smoothed)" : "");
    if (valids)
        tt_buf_printf(b, "set y2label 'validation perplexity (%slog scale)'\nset y2tics\n"
                         "set logscale y2\n", n > 1 ? "circles, " : "");
    /* e != e: e is NaN, before a run's first row */
    tt_buf_printf(b, "ema(x, a) = (e = e != e ? x : a * e + (1 - a) * x)\nplot");
    const char *sep = " ";
    for (int i = 0; i < n; i++) {
        const tt_curve_run *r = &runs[i];
        tt_buf src = {0};
        if (r->file) quote(&src, r->file);
        else tt_buf_printf(&src, "$run%d", i + 1);
        if (r->steps && raw) {
            tt_buf_printf(b, "%s%s using 1:2 with lines lc rgb '#b0b0b0' title 'training loss, per "
                          "step'", sep, src.data);
            sep = ", \\\n     ";
        }
        if (r->steps) {
            tt_buf_printf(b, "%se = NaN, %s using 1:(ema($2, %.6f)) with lines lw 2 lc %d title ",
                          sep, src.data, a, i + 1);
            quote(b, r->label ? r->label : raw ? "smoothed" : "training loss");
            sep = ", \\\n     ";
        }
        if (r->valids) {
            /* a run with a label: its colour, named once (by its loss); else a colour of its own */
            tt_buf_printf(b, "%s%s using 1:3 axes x1y2 with linespoints pt 7 ps 1.2 lc %d %s", sep,
                          src.data, r->label ? i + 1 : i + 2,
                          r->label ? "notitle" : "title 'validation perplexity'");
            sep = ", \\\n     ";
        }
        tt_buf_free(&src);
    }
    tt_buf_printf(b, "\n");
}

/* What gnuplot's output says went wrong, in one line: its last line that names a script line
 * ("FILE" line N: ...), and the last line when another ("system error: ..."). */
static void gnuplot_message(char *out, char *msg, size_t n)
{
    const char *where = NULL, *last = NULL;
    for (char *line = out, *end; line && *line; line = end) {
        end = line + strcspn(line, "\n");
        if (*end) *end++ = '\0';
        if (!line[strspn(line, " \t^")]) continue; /* empty, or the caret under the bad word */
        last = line;
        if (strstr(line, " line ") || !strncmp(line, "line ", 5)) where = line;
    }
    if (where && where != last) snprintf(msg, n, "%s; %s", where, last);
    else snprintf(msg, n, "%s", last ? last : "no output");
}

int tt_gnuplot(const char *dir, const char *script, const char *png, char *err, size_t errlen)
{
    char *tmp = png ? tt_xasprintf("%s.tmp.%ld", png, (long)getpid()) : NULL;
    tt_buf cmds = {0};
    if (dir) {
        tt_buf_printf(&cmds, "cd ");
        quote(&cmds, dir);
        tt_buf_printf(&cmds, "; ");
    }
    if (tmp) {
        tt_buf_printf(&cmds, "out = ");
        quote(&cmds, tmp);
    }
    char *argv[5] = {"gnuplot"};
    int k = 1;
    if (cmds.len) argv[k++] = "-e", argv[k++] = cmds.data;
    argv[k++] = (char *)script;
    int fds[2] = {-1, -1}, rc = pipe2(fds, O_CLOEXEC) != 0 ? errno : 0;
    pid_t pid = 0;
    if (rc == 0) {
        /* its output to the pipe; its own process group, out of reach of the terminal's ^C */
        posix_spawn_file_actions_t fa;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 1);
        posix_spawn_file_actions_adddup2(&fa, fds[1], 2);
        posix_spawnattr_t at;
        posix_spawnattr_init(&at);
        posix_spawnattr_setflags(&at, POSIX_SPAWN_SETPGROUP);
        posix_spawnattr_setpgroup(&at, 0);
        rc = posix_spawnp(&pid, "gnuplot", &fa, &at, argv, environ);
        posix_spawnattr_destroy(&at);
        posix_spawn_file_actions_destroy(&fa);
        close(fds[1]);
    }
    char *path = dir ? tt_xasprintf("%s/%s", dir, script) : tt_xstrdup(script);
    int status = 0;
    if (rc == ENOENT) {
        status = 1;
    } else if (rc != 0) {
        status = tt_errf(err, errlen, "cannot run gnuplot on %s: %s", path, strerror(rc));
    } else {
        tt_buf out = {0};
        char chunk[4096];
        for (;;) {
            const ssize_t got = read(fds[0], chunk, sizeof chunk);
            if (got < 0 && errno == EINTR) continue;
            if (got <= 0) break;
            tt_buf_append(&out, chunk, (size_t)got);
            if (out.len > 65536) { /* a flood of warnings: its end is what matters */
                memmove(out.data, out.data + out.len - 16384, 16384 + 1);
                out.len = 16384;
            }
        }
        int ws;
        while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) continue;
        if (WIFSIGNALED(ws)) {
            status = tt_errf(err, errlen, "gnuplot %s was killed by signal %d (%s)", path,
                             WTERMSIG(ws), strsignal(WTERMSIG(ws)));
        } else if (WEXITSTATUS(ws) != 0) {
            char msg[768];
            gnuplot_message(out.data, msg, sizeof msg);
            status = tt_errf(err, errlen, "gnuplot %s failed: %s", path, msg);
        }
        tt_buf_free(&out);
    }
    if (fds[0] >= 0) close(fds[0]);
    if (tmp) {
        char *from = dir ? tt_xasprintf("%s/%s", dir, tmp) : tt_xstrdup(tmp);
        char *to = dir ? tt_xasprintf("%s/%s", dir, png) : tt_xstrdup(png);
        if (status == 0 && rename(from, to) != 0)
            status = tt_errf(err, errlen, "%s: cannot rename to %s: %s", from, to, strerror(errno));
        if (status != 0) unlink(from);
        free(from), free(to);
    }
    free(path), free(tmp);
    tt_buf_free(&cmds);
    return status;
}
