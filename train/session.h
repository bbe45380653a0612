/* What tt-train and tt-eval share before they differ: the spec, the vocabulary of its training
 * data (checked against model.vocab), the parameter layout, and token ids through the cache. */
#ifndef TT_SESSION_H
#define TT_SESSION_H

#include <stddef.h>

#include "corpus.h"
#include "model.h"
#include "spec.h"

typedef struct {
    tt_spec spec;
    tt_vocab vocab;
    tt_layout layout;
    char *token_cache; /* folder of cached token ids; NULL: none */
} tt_session;

/* Loads spec_path and builds its vocabulary and layout. -1 with one line in err. */
int tt_session_open(tt_session *s, const char *spec_path, char *err, size_t errlen);
void tt_session_close(tt_session *s);

/* Token ids of split "train", "valid" or "test" (the spec's data paths). */
int tt_session_tokens(const tt_session *s, const char *split, tt_tokens *t, char *err,
                      size_t errlen);

#endif
