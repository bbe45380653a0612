/* The CSV files tt-bench sweep writes and reads back (bench/sweep_csv.h). */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sweep_csv.h"

/* line's fields, split in place at its commas, into at most max; returns how many it has. */
static int split_fields(char *line, char **out, int max)
{
    int n = 0;
    for (char *p = line;; p++) {
        if (n < max) out[n] = p;
        n++;
        p += strcspn(p, ",");
        if (!*p) return n;
        *p = 0;
    }
}

int csv_rows_read(const char *path, const char *header, csv_rows *t, char *err, size_t errlen)
{
    *t = (csv_rows){0};
    size_t len;
    if (access(path, F_OK) != 0 && errno == ENOENT) return 0;
    if (tt_read_file(path, 1 << 26, &t->text, &len, err, errlen) != 0) return -1;
    const size_t hl = strlen(header), fl = strcspn(t->text, "\n"); /* the file's header */
    if (!t->text[fl] || fl > hl - 1 || memcmp(t->text, header, fl) != 0 ||
        (header[fl] != ',' && header[fl] != '\n'))
        return tt_errf(err, errlen, "--resume: %s has another header than this tt-bench writes: "
                       "move it away to start afresh", path);
    enum { MAX_COLS = 64 };
    char *names[MAX_COLS];
    char *head = tt_xstrdup(header);
    head[hl - 1] = 0;
    t->ncols = split_fields(head, names, MAX_COLS);
    t->names = tt_xcalloc((size_t)t->ncols, sizeof *t->names);
    memcpy(t->names, names, (size_t)t->ncols * sizeof *names);
    int file_cols = 1;
    for (size_t k = 0; k < fl; k++) file_cols += t->text[k] == ',';
    for (int c = file_cols; c < t->ncols; c++) /* what finds a row again: in every version's */
        if (!strcmp(t->names[c], "spec_sha256") || !strcmp(t->names[c], "patience"))
            return tt_errf(err, errlen, "--resume: %s has another header than this tt-bench writes "
                           "(no %s column): move it away to start afresh", path, t->names[c]);
    for (char *p = t->text + fl + 1; *p;) {
        char *nl = strchr(p, '\n');
        if (!nl) break; /* a row cut short */
        *nl = 0;
        tt_buf line = {0};
        tt_buf_printf(&line, "%s", p);
        for (int k = file_cols; k < t->ncols; k++) tt_buf_printf(&line, ",");
        char *cells[MAX_COLS];
        if (split_fields(p, cells, MAX_COLS) == file_cols) {
            for (int k = file_cols; k < t->ncols; k++) cells[k] = nl; /* "" */
            t->lines = tt_xrealloc(t->lines, (size_t)(t->nrows + 1) * sizeof *t->lines);
            t->cells = tt_xrealloc(t->cells, (size_t)(t->nrows + 1) * sizeof *t->cells);
            t->lines[t->nrows] = line.data;
            t->cells[t->nrows] = tt_xcalloc((size_t)t->ncols, sizeof **t->cells);
            memcpy(t->cells[t->nrows], cells, (size_t)t->ncols * sizeof *cells);
            t->nrows++;
        } else {
            tt_buf_free(&line);
        }
        p = nl + 1;
    }
    t->taken = tt_xcalloc((size_t)t->nrows + 1, sizeof *t->taken);
    return 0;
}

void csv_rows_free(csv_rows *t)
{
    for (int i = 0; i < t->nrows; i++) free(t->lines[i]), free(t->cells[i]);
    if (t->names) free(t->names[0]); /* the header's copy */
    free(t->names), free(t->lines), free(t->cells), free(t->taken), free(t->text);
}

const char *csv_cell(const csv_rows *t, int i, const char *name)
{
    for (int c = 0; c < t->ncols; c++)
        if (!strcmp(t->names[c], name)) return t->cells[i][c];
    return "";
}

double csv_number(const csv_rows *t, int i, const char *name)
{
    const char *v = csv_cell(t, i, name);
    return *v ? strtod(v, NULL) : NAN;
}

int csv_find(const csv_rows *t, const char *hash, long patience, const char *need)
{
    for (int i = 0; i < t->nrows; i++) {
        if (t->taken[i] || strcmp(csv_cell(t, i, "spec_sha256"), hash)) continue;
        const char *status = csv_cell(t, i, "status");
        if (atol(csv_cell(t, i, "patience")) == patience && *csv_cell(t, i, need) &&
            (!*status || !strcmp(status, "ok")))
            return i;
    }
    return -1;
}

int csv_reuse(csv_rows *t, const char *hash, long patience, const char *need)
{
    const int found = csv_find(t, hash, patience, need);
    for (int i = 0; i < t->nrows; i++)
        if (!strcmp(csv_cell(t, i, "spec_sha256"), hash)) t->taken[i] = true;
    return found;
}

int csv_save(const char *path, const char *header, const tt_buf *rows, const csv_rows *old,
             char *err, size_t errlen)
{
    tt_buf b = {0};
    tt_buf_printf(&b, "%s", header);
    if (rows->len) tt_buf_append(&b, rows->data, rows->len);
    for (int i = 0; old && i < old->nrows; i++)
        if (!old->taken[i]) tt_buf_printf(&b, "%s\n", old->lines[i]);
    const void *parts[1] = {b.data};
    const size_t lens[1] = {b.len};
    const int rc = tt_write_file_atomic(path, parts, lens, 1, err, errlen);
    tt_buf_free(&b);
    return rc;
}
