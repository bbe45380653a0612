/* The CSV files tt-bench sweep writes and reads back for --resume (sweep.csv, lr_search.csv):
 * rows of fields without commas, a header naming them. */
#ifndef TT_SWEEP_CSV_H
#define TT_SWEEP_CSV_H

#include <stdbool.h>
#include <stddef.h>

#include "util.h"

/* The two files' headers: sweep.csv (README: a row per point) and lr_search.csv (a row per
 * trial). */
#define SWEEP_HEADER                                                                               \
    "rank,cores,seq_len,parameters,flops_forward,flops_train_step,train_tokens_per_s,"             \
    "eval_tokens_per_s,step_ms,peak_memory_bytes,mfu_percent,train_steps,valid_ppl,status,family," \
    "mem_len,lr,lr_from,steps,best_step,test_ppl,seconds,seed,spec_sha256,commit,card,patience,"    \
    "trained_tokens_per_s\n"
#define LR_HEADER                                                                                  \
    "family,lr,steps,valid_ppl,chosen,best_step,test_ppl,seconds,patience,spec_sha256,"            \
    "trained_tokens_per_s\n"

/* The rows of a CSV file the sweep wrote (no field holds a comma: csv_clean): each row's text,
 * its fields by the header's names, and whether this run has dealt with it. */
typedef struct {
    int ncols, nrows;
    char **names;  /* the header's */
    char **lines;  /* each row without its newline */
    char ***cells; /* [row][column] */
    bool *taken;   /* reused or superseded by this run */
    char *text;
} csv_rows;

/* DIR's CSV at path as t, for --resume, its columns header's: nothing when there is no file; a
 * file of an older tt-bench, whose header is the first columns of header down to spec_sha256 and
 * patience at least, is read with the columns it lacks empty (and its rows written back with
 * them); a row of another number of fields than its header (cut short by a kill) is left out.
 * Returns 0, or -1 with why in err (a file of another header). */
int csv_rows_read(const char *path, const char *header, csv_rows *t, char *err, size_t errlen);
void csv_rows_free(csv_rows *t);

/* Row i's field `name` ("" where t has no such column). */
const char *csv_cell(const csv_rows *t, int i, const char *name);
/* The same as a number (NAN where empty). */
double csv_number(const csv_rows *t, int i, const char *name);

/* The row of t that a point of spec hash `hash` trained with `patience` can reuse: one with that
 * hash and patience and a result (need: the column that must not be empty; status "ok" where t
 * has a status), not yet taken. Returns the row, or -1; t is not changed. */
int csv_find(const csv_rows *t, const char *hash, long patience, const char *need);
/* csv_find's row, and every row of that hash marked taken: a row that cannot be reused is
 * superseded by the point's new run. */
int csv_reuse(csv_rows *t, const char *hash, long patience, const char *need);

/* Writes path atomically: header, then this run's rows, then the rows of old (the last run's,
 * NULL: none) this run has not dealt with yet, so that a sweep stopped at any moment leaves
 * every finished point's row for the next --resume. */
int csv_save(const char *path, const char *header, const tt_buf *rows, const csv_rows *old,
             char *err, size_t errlen);

#endif
