/* libFuzzer target: the tuning cache's reader (tuning.tsv, which ttgen --tune appends to and
 * every ttgen reads): each line an entry or the file refused in one line. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "tune.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = fuzz_file(data, size, ".tsv");
    tt_tune_entry *e = NULL;
    int n = 0;
    char err[512];
    if (tt_tuning_load(path, &e, &n, err, sizeof err) != 0 && strchr(err, '\n')) abort();
    if (n < 0 || (n > 0 && !e)) abort();
    free(e);
    return 0;
}
