/* libFuzzer target: the spec parser. Any input is refused in one line or parses; a spec that
 * parses is written back (tt_spec_text) and must parse again to the same text. */
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "spec.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tt_spec s;
    char err[512];
    if (tt_spec_parse((const char *)data, size, "fuzz.yaml", ".", &s, err, sizeof err) != 0) {
        if (strchr(err, '\n')) abort(); /* one line */
        return 0;
    }
    char *text = tt_spec_text(&s);
    tt_spec back;
    if (tt_spec_parse(text, strlen(text), "written.yaml", ".", &back, err, sizeof err) != 0) abort();
    char *again = tt_spec_text(&back);
    if (strcmp(text, again) != 0) abort();
    free(again);
    free(text);
    tt_spec_free(&back);
    tt_spec_free(&s);
    return 0;
}
