/* libFuzzer target: tt-bench sweep's reader of its own CSVs (sweep.csv and lr_search.csv, read
 * back by --resume from a folder the user names): the file read under each of the two headers,
 * or refused in one line; every row's fields looked up and the rows matched against a hash. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "sweep_csv.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const headers[2] = {SWEEP_HEADER, LR_HEADER};
    const char *path = fuzz_file(data, size, ".csv");
    for (int h = 0; h < 2; h++) {
        csv_rows t;
        char err[512];
        if (csv_rows_read(path, headers[h], &t, err, sizeof err) != 0) {
            if (strchr(err, '\n')) abort();
            csv_rows_free(&t);
            continue;
        }
        for (int i = 0; i < t.nrows; i++) {
            if (!t.lines[i]) abort();
            for (int c = 0; c < t.ncols; c++) (void)csv_number(&t, i, t.names[c]);
        }
        /* the first row's hash: every row of it taken by the first call, none found again */
        const char *hash = t.nrows ? csv_cell(&t, 0, "spec_sha256") : "x";
        (void)csv_reuse(&t, hash, 3, "valid_ppl");
        if (csv_reuse(&t, hash, 3, "valid_ppl") >= 0) abort();
        csv_rows_free(&t);
    }
    return 0;
}
