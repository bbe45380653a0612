/* Spec, vocabulary and layout for the CLIs (see session.h). */
#include "session.h"

#include <stdlib.h>
#include <string.h>

#include "cache.h"
#include "util.h"

int tt_session_open(tt_session *s, const char *spec_path, char *err, size_t errlen)
{
    memset(s, 0, sizeof *s);
    if (tt_spec_load(spec_path, &s->spec, err, errlen) != 0) return -1;
    if (!s->spec.data.train) {
        tt_errf(err, errlen, "%s: data.train is not set: the vocabulary comes from the training data",
                spec_path);
        goto fail;
    }
    char *root = tt_cache_root(NULL);
    if (root) {
        s->token_cache = tt_xasprintf("%s/tokens", root);
        free(root);
    }
    if (tt_vocab_build(s->spec.data.train, s->token_cache, &s->vocab, err, errlen) != 0) goto fail;
    const long model_vocab = s->spec.model.vocab;
    if (model_vocab && model_vocab != s->vocab.n) {
        tt_errf(err, errlen, "%s: model.vocab is %ld but %s has %ld words (with <eos> and <unk>); "
                "set vocab: %ld or vocab: data", spec_path, model_vocab, s->spec.data.train,
                s->vocab.n, s->vocab.n);
        goto fail;
    }
    if (tt_spec_check_vocab(&s->spec, s->vocab.n, err, errlen) != 0) goto fail;
    if (tt_layout_build(&s->spec.model, s->vocab.n, &s->layout, err, errlen) != 0) goto fail;
    return 0;
fail:
    tt_session_close(s);
    return -1;
}

void tt_session_close(tt_session *s)
{
    tt_layout_free(&s->layout);
    tt_vocab_free(&s->vocab);
    tt_spec_free(&s->spec);
    free(s->token_cache);
    memset(s, 0, sizeof *s);
}

int tt_session_tokens(const tt_session *s, const char *split, tt_tokens *t, char *err,
                      size_t errlen)
{
    const char *path = !strcmp(split, "train")   ? s->spec.data.train
                       : !strcmp(split, "valid") ? s->spec.data.valid
                       : !strcmp(split, "test")  ? s->spec.data.test
                                                 : NULL;
    if (!path)
        return tt_errf(err, errlen, "%s: data.%s is not set", s->spec.path, split);
    return tt_corpus_load(path, &s->vocab, s->token_cache, t, err, errlen);
}
