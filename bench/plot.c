/* tt-bench plot: tt-train's --log-json logs on one chart through gnuplot (training loss and
 * validation perplexity against steps). */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bench.h"
#include "curve.h"
#include "util.h"

static const char *skip_space(const char *p)
{
    while (*p == ' ' || *p == '\t' || *p == '\r') p++;
    return p;
}

static bool is_key(const char *key, size_t len, const char *name)
{
    return len == strlen(name) && !strncmp(key, name, len);
}

/* A row of a run's curve: a training step's loss or a validation's perplexity (the other NAN). */
typedef struct {
    long step;
    double loss, valid_ppl;
} curve_row;

/* One line of tt-train --log-json: a flat JSON object of numbers and booleans with an integer
 * "step" and one of "loss" (a training step), "valid_nll" (a validation) or "skipped": true (a
 * step whose loss was not finite: both values NAN). 0 with its row; -1 for anything else. */
static int parse_log_line(const char *line, curve_row *r)
{
    double step = NAN, loss = NAN, nll = NAN;
    int skipped = 0;
    const char *p = skip_space(line);
    if (*p++ != '{') return -1;
    p = skip_space(p);
    while (*p != '}') {
        if (*p++ != '"') return -1;
        const char *key = p;
        if (!(p = strchr(p, '"'))) return -1;
        const size_t len = (size_t)(p - key);
        p = skip_space(p + 1);
        if (*p++ != ':') return -1;
        p = skip_space(p);
        int flag = -1; /* a boolean's value; -1: a number, v */
        double v = NAN;
        if (!strncmp(p, "true", 4) || !strncmp(p, "false", 5)) {
            flag = *p == 't';
            p += flag ? 4 : 5;
        } else {
            char *end;
            v = strtod(p, &end);
            if (end == p || !isfinite(v)) return -1;
            p = end;
        }
        if (is_key(key, len, "skipped")) {
            if (flag < 0) return -1;
            skipped = flag;
        } else if (is_key(key, len, "step") || is_key(key, len, "loss") ||
                   is_key(key, len, "valid_nll")) {
            if (flag >= 0) return -1;
            *(is_key(key, len, "step") ? &step : is_key(key, len, "loss") ? &loss : &nll) = v;
        }
        p = skip_space(p);
        if (*p == ',' && *(p = skip_space(p + 1)) != '"') return -1;
        if (*p != '"' && *p != '}') return -1;
    }
    if (*skip_space(p + 1) || !(step >= 1 && step < 1e15 && step == floor(step))) return -1;
    if (skipped + !isnan(loss) + !isnan(nll) != 1) return -1;
    *r = (curve_row){(long)step, loss, exp(nll)};
    return 0;
}

/* The rows of the --log-json log at path as curve.tsv's (tt_curve_row) into rows, with how many
 * of each kind. A resumed run appends to its log, repeating the steps after its checkpoint: its
 * lines replace the earlier ones from their step on. 0, or 2 with one line on stderr. */
static int read_log(const char *path, tt_buf *rows, long *steps, long *valids)
{
    char *text, err[1024];
    size_t len;
    if (tt_read_file(path, 0, &text, &len, err, sizeof err) != 0) {
        fprintf(stderr, "tt-bench plot: %s\n", err);
        return 2;
    }
    curve_row *r = NULL;
    size_t n = 0, cap = 0;
    long line_no = 0;
    int rc = 0;
    for (char *line = text, *end; *line; line = end) {
        end = line + strcspn(line, "\n");
        if (*end) *end++ = '\0';
        line_no++;
        curve_row got;
        if (!*skip_space(line)) continue;
        if (parse_log_line(line, &got) != 0) {
            fprintf(stderr, "tt-bench plot: %s:%ld: not a line of tt-train --log-json (a JSON object "
                    "with an integer \"step\" and \"loss\", \"valid_nll\" or \"skipped\": true)\n",
                    path, line_no);
            rc = 2;
            break;
        }
        /* a step replaces the rows of its step and later; a validation, the later rows and
         * its step's validation */
        const bool valid = !isnan(got.valid_ppl);
        while (n && (r[n - 1].step > got.step ||
                     (r[n - 1].step == got.step && (!valid || !isnan(r[n - 1].valid_ppl)))))
            n--;
        if (isnan(got.loss) && !valid) continue; /* a skipped step */
        if (n == cap) r = tt_xrealloc(r, (cap = cap ? 2 * cap : 1024) * sizeof *r);
        r[n++] = got;
    }
    *steps = *valids = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        tt_curve_row(rows, r[i].step, r[i].loss, r[i].valid_ppl);
        *(isnan(r[i].loss) ? valids : steps) += 1;
    }
    if (!rc && !n) {
        fprintf(stderr, "tt-bench plot: %s: no training steps or validations in it\n", path);
        rc = 2;
    }
    free(r);
    free(text);
    return rc;
}

static void plot_usage(FILE *f)
{
    fprintf(f,
            "usage: tt-bench plot LOG.jsonl... [-o FILE.png] [--title T]\n"
            "Draws logs of tt-train --log-json on one chart through gnuplot: each log's training\n"
            "loss (smoothed) on the left axis and, where it has validations, its validation\n"
            "perplexity on the right (log scale), against steps, a colour per log labelled with its\n"
            "file name. Writes FILE.png (default plot.png) and beside it FILE.gp, the gnuplot\n"
            "script with the data in it.\n");
}

int bench_plot_main(int argc, char **argv)
{
    enum { TITLE = 256 };
    static const struct option longs[] = {{"title", required_argument, 0, TITLE},
                                          {"help", no_argument, 0, 'h'},
                                          {0, 0, 0, 0}};
    const char *png = "plot.png", *title = NULL;
    opterr = 0;
    optind = 1;
    int c;
    while ((c = getopt_long(argc, argv, ":ho:", longs, NULL)) != -1) {
        if (c == 'o') {
            png = optarg;
        } else if (c == TITLE) {
            title = optarg;
        } else if (c == 'h') {
            plot_usage(stdout);
            return 0;
        } else {
            return tt_opt_refuse("tt-bench plot", c, argv);
        }
    }
    if (optind == argc) {
        fprintf(stderr, "tt-bench plot: expected one or more logs of tt-train --log-json (see "
                        "tt-bench plot --help)\n");
        return 2;
    }
    const int n = argc - optind;
    tt_curve_run *runs = tt_xcalloc((size_t)n, sizeof *runs);
    tt_buf *rows = tt_xcalloc((size_t)n, sizeof *rows);
    int rc = 0;
    for (int i = 0; i < n && !rc; i++) {
        const char *path = argv[optind + i], *slash = strrchr(path, '/');
        rc = read_log(path, &rows[i], &runs[i].steps, &runs[i].valids);
        runs[i].rows = rows[i].data;
        runs[i].label = slash ? slash + 1 : path;
    }
    if (!rc) {
        const size_t len = strlen(png);
        const int stem = len > 4 && !strcmp(png + len - 4, ".png") ? (int)len - 4 : (int)len;
        char *gp = tt_xasprintf("%.*s.gp", stem, png), err[2048];
        tt_buf script = {0};
        tt_curve_script(&script, runs, n, title, png);
        const void *parts[1] = {script.data};
        rc = tt_write_file_atomic(gp, parts, &script.len, 1, err, sizeof err);
        if (rc == 0) rc = tt_gnuplot(NULL, gp, png, err, sizeof err);
        if (rc == 0)
            printf("wrote %s (its gnuplot script: %s)\n", png, gp);
        else if (rc == 1)
            fprintf(stderr, "tt-bench plot: gnuplot not found on PATH (Debian: apt-get install "
                            "gnuplot-nox): no %s (its gnuplot script: %s)\n", png, gp);
        else
            fprintf(stderr, "tt-bench plot: %s\n", err);
        rc = rc ? 1 : 0;
        tt_buf_free(&script);
        free(gp);
    }
    for (int i = 0; i < n; i++) tt_buf_free(&rows[i]);
    free(rows), free(runs);
    return rc;
}
