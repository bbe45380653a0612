/* The training curve as a picture. tt-train keeps curve.tsv in its checkpoint folder, a row per
 * training step and one per validation, and at every validation (and at the end) draws
 * curve.png from it through gnuplot: training loss on the left axis, validation perplexity on the
 * right (log scale), against steps. tt-bench plot draws several runs' logs with the same script.
 * gnuplot is the one on PATH; without it, or when it fails, the run goes on without a picture. */
#ifndef TT_CURVE_H
#define TT_CURVE_H

#include <stdbool.h>

#include "util.h"

/* One row of curve.tsv, "STEP<TAB>LOSS<TAB>VALID_PPL\n", appended to b: a training step's row has
 * its loss and no perplexity (NAN), a validation's the other way round; the missing field is
 * empty (gnuplot's missing value). */
void tt_curve_row(tt_buf *b, long step, double loss, double valid_ppl);

/* The curve of a run in checkpoint folder dir. */
typedef struct tt_curve tt_curve;

/* Starts the curve of a run that trains from step `from` on: a fresh run (from 0) starts curve.tsv
 * over; a resumed one keeps the rows of steps up to `from` and drops the later ones (those a run
 * left after its last checkpoint), so that the picture is of the whole run. A row that does not
 * parse is dropped with a note, except the unfinished last line a kill leaves. Notes are one line
 * each on stdout ("note: ..."), none when quiet. Never fails the run: NULL, after a note, where
 * curve.tsv cannot be written; every function below does nothing with NULL. */
tt_curve *tt_curve_open(const char *dir, long from, bool quiet);
/* A training step's loss, buffered: rows reach the file at tt_curve_flush, tt_curve_valid and
 * tt_curve_close. */
void tt_curve_loss(tt_curve *c, long step, double loss);
/* A validation's perplexity; then curve.png is drawn (gnuplot's script beside it, curve.gp). */
void tt_curve_valid(tt_curve *c, long step, double valid_ppl);
/* The rows so far to the file (before a checkpoint, so that a resumed run finds them all). */
void tt_curve_flush(tt_curve *c);
/* Draws curve.png once more if rows came since it was last drawn, and frees c. */
void tt_curve_close(tt_curve *c);

/* One run of a chart. */
typedef struct {
    const char *file; /* its rows (curve.tsv's format) in a file gnuplot reads, or NULL: */
    const char *rows; /* the rows themselves, put in the script */
    const char *label; /* its name in the key; NULL: its lines are named by what they show */
    long steps, valids; /* its rows of each kind: what there is to draw */
} tt_curve_run;

/* Appends to b the gnuplot script that draws runs[0..n) on one chart titled title (NULL: none), to
 * the PNG named by gnuplot's variable out (png when it is not set): per run, in a colour of its own,
 * the training loss smoothed by an exponential moving average over about 1% of the longest run's
 * steps (a chart of one run shows the raw losses too, in grey) and, where it has validations,
 * the validation perplexity on the right axis (log scale), circles joined by a line. */
void tt_curve_script(tt_buf *b, const tt_curve_run *runs, int n, const char *title, const char *png);

/* Runs gnuplot (the one on PATH) on script, in folder dir (NULL: this one), with the PNG it draws
 * (its variable out) written to a temporary beside png and renamed to png (png NULL: out unset,
 * the script writes what it says). Returns 0; 1 when there is no gnuplot on PATH; -1 when it
 * could not run or failed, with why in err in one line (its message, from its output). */
int tt_gnuplot(const char *dir, const char *script, const char *png, char *err, size_t errlen);

#endif
