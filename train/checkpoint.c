/* Checkpoints as safetensors (see checkpoint.h). */
#include "checkpoint.h"

#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "safetensors.h"
#include "sha256.h"
#include "util.h"

#define FORMAT "tt-checkpoint-1"

static void rm_tree(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        char *p = tt_xasprintf("%s/%s", dir, e->d_name);
        unlink(p);
        free(p);
    }
    closedir(d);
    rmdir(dir);
}

/* Writes every parameter of l from each of nsets buffers, named prefix[k] + the parameter's name. */
static int write_tensors(const char *path, const tt_layout *l, int nsets, const float *const *base,
                         const char *const *prefix, const char *const *keys,
                         const char *const *vals, int n_meta, char *err, size_t errlen)
{
    const int n = l->n_params * nsets;
    tt_st_tensor *t = tt_xcalloc((size_t)n, sizeof *t);
    char **names = tt_xcalloc((size_t)n, sizeof *names);
    for (int k = 0; k < nsets; k++)
        for (int i = 0; i < l->n_params; i++) {
            const tt_param *p = &l->params[i];
            tt_st_tensor *e = &t[k * l->n_params + i];
            names[k * l->n_params + i] = tt_xasprintf("%s%s", prefix[k], p->name);
            e->name = names[k * l->n_params + i];
            e->dtype = TT_ST_F32;
            e->ndim = p->ndim;
            e->shape[0] = p->shape[0];
            e->shape[1] = p->shape[1];
            e->data = base[k] + p->offset;
        }
    int rc = tt_st_write(path, t, n, keys, vals, n_meta, err, errlen);
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    free(t);
    return rc;
}

int tt_checkpoint_save(const char *dir, const tt_checkpoint *ck, char *out, size_t outlen,
                       char *err, size_t errlen)
{
    if (tt_mkdir_p(dir, err, errlen) != 0) return -1;
    char *name = tt_xasprintf("step-%08ld", ck->step);
    char *final = tt_xasprintf("%s/%s", dir, name);
    char *tmp = tt_xasprintf("%s.tmp.%ld", final, (long)getpid());
    rm_tree(tmp);
    int rc = -1;
    char hex[65], step[32];
    char *text = tt_spec_text(ck->spec);
    tt_hex(ck->vocab->hash, 32, hex);
    snprintf(step, sizeof step, "%ld", ck->step);
    const char *keys[] = {"format", "step", "vocab_sha256", "spec"};
    const char *vals[] = {FORMAT, step, hex, text};
    char *model = tt_xasprintf("%s/model.safetensors", tmp);
    char *optim = tt_xasprintf("%s/optim.safetensors", tmp);
    char *vocab = tt_xasprintf("%s/vocab.txt", tmp);
    if (mkdir(tmp, 0755) != 0) {
        tt_errf(err, errlen, "%s: cannot create: %s", tmp, strerror(errno));
        goto out;
    }
    const float *wb[] = {ck->w}, *mv[] = {ck->m, ck->v};
    const char *wp[] = {""}, *mp[] = {"exp_avg.", "exp_avg_sq."};
    const char *ok[] = {"format", "step"}, *ov[] = {FORMAT, step};
    if (write_tensors(model, ck->layout, 1, wb, wp, keys, vals, 4, err, errlen) != 0) goto out;
    if (ck->m && ck->v &&
        write_tensors(optim, ck->layout, 2, mv, mp, ok, ov, 2, err, errlen) != 0)
        goto out;
    if (tt_vocab_save(ck->vocab, vocab, err, errlen) != 0) goto out;
    /* Replace an older folder of the same step, then point latest at the new one. */
    char *old = tt_xasprintf("%s.old.%ld", final, (long)getpid());
    if (rename(final, old) == 0) rm_tree(old);
    free(old);
    if (rename(tmp, final) != 0) {
        tt_errf(err, errlen, "%s: cannot rename to %s: %s", tmp, final, strerror(errno));
        goto out;
    }
    char *latest = tt_xasprintf("%s/latest", dir);
    char *line = tt_xasprintf("%s\n", name);
    const void *parts[] = {line};
    size_t lens[] = {strlen(line)};
    rc = tt_write_file_atomic(latest, parts, lens, 1, err, errlen);
    free(latest);
    free(line);
    if (rc == 0 && out) snprintf(out, outlen, "%s", final);
out:
    if (rc != 0) rm_tree(tmp);
    free(text);
    free(model);
    free(optim);
    free(vocab);
    free(name);
    free(final);
    free(tmp);
    return rc;
}

static int is_dir(const char *p)
{
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

char *tt_checkpoint_model_file(const char *path, char *err, size_t errlen)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        tt_errf(err, errlen, "%s: no such checkpoint: %s", path, strerror(errno));
        return NULL;
    }
    if (!S_ISDIR(st.st_mode)) return tt_xstrdup(path);
    char *file = tt_xasprintf("%s/model.safetensors", path);
    if (access(file, F_OK) == 0) return file;
    free(file);
    char *latest = tt_xasprintf("%s/latest", path), *text = NULL;
    size_t len;
    if (tt_read_file(latest, &text, &len, NULL, 0) != 0) {
        tt_errf(err, errlen, "%s: not a checkpoint (no model.safetensors, no latest)", path);
        free(latest);
        return NULL;
    }
    free(latest);
    text[strcspn(text, "\r\n")] = '\0';
    char *step = tt_xasprintf("%s/%s", path, text);
    file = is_dir(step) ? tt_xasprintf("%s/model.safetensors", step) : NULL;
    if (!file || access(file, F_OK) != 0) {
        tt_errf(err, errlen, "%s/latest names %s, which holds no model.safetensors", path, text);
        free(file);
        file = NULL;
    }
    free(step);
    free(text);
    return file;
}

/* The model section of a spec as written by tt_spec_write, one "key: value" per line with the
 * path of the key, dropout aside (it may differ between training and evaluation), and vocab
 * aside (`data` and the number it stands for are the same model; the vocabulary's hash and the
 * tensors' shapes are checked instead). */
static int model_lines(const tt_spec *s, char lines[][160], int max)
{
    char *text = tt_spec_text(s);
    int n = 0, in_model = 0;
    char parent[64] = "";
    for (char *line = strtok(text, "\n"); line && n < max; line = strtok(NULL, "\n")) {
        if (line[0] != ' ') {
            in_model = strncmp(line, "model:", 6) == 0;
            continue;
        }
        if (!in_model) continue;
        const int nested = strncmp(line, "    ", 4) == 0;
        const char *kv = line + (nested ? 4 : 2);
        const char *colon = strchr(kv, ':');
        if (!colon) continue;
        if (!nested) {
            snprintf(parent, sizeof parent, "%.*s", (int)(colon - kv), kv);
            if (colon[1] == '\0') continue; /* a mapping such as adaptive: */
        }
        if (!nested && (!strcmp(parent, "dropout") || !strcmp(parent, "dropatt") ||
                        !strcmp(parent, "vocab")))
            continue;
        snprintf(lines[n++], 160, "model.%s%s%s", nested ? parent : "", nested ? "." : "", kv);
    }
    free(text);
    return n;
}

static int compare_specs(const char *file, const tt_spec *ck, const tt_spec *spec, char *err,
                         size_t errlen)
{
    char a[64][160], b[64][160];
    const int na = model_lines(ck, a, 64), nb = model_lines(spec, b, 64);
    for (int i = 0; i < na || i < nb; i++) {
        const char *x = i < na ? a[i] : "(nothing)", *y = i < nb ? b[i] : "(nothing)";
        if (strcmp(x, y) != 0)
            return tt_errf(err, errlen,
                           "%s: the checkpoint's model does not match the spec: checkpoint has "
                           "'%s', spec has '%s'",
                           file, x, y);
    }
    return 0;
}

/* With tied weights kimiyoung's output layer holds the embedding's tensors under its own names
 * too (crit.out_layers.i.weight, and crit.out_projs.i with projections): the other name of a
 * layout tensor, or NULL. */
static bool tied_alias(const tt_layout *l, const char *name, char *alias, size_t n)
{
    int i;
    char rest;
    if (!l->m.tie_weights) return false;
    if (sscanf(name, "word_emb.emb_layers.%d.weight%c", &i, &rest) == 1)
        return snprintf(alias, n, "crit.out_layers.%d.weight", i) < (int)n;
    if (l->proj && sscanf(name, "word_emb.emb_projs.%d%c", &i, &rest) == 1)
        return snprintf(alias, n, "crit.out_projs.%d", i) < (int)n;
    return false;
}

/* A state_dict that PyTorch saved with the safetensors package (no tt metadata): every tensor of
 * the layout by its name (or, tied, by the output layer's name), any dtype the reader converts;
 * besides them only the tied copies (equal to the embedding's, value for value) and
 * Transformer-XL's buffer pos_emb.inv_freq (equal to MODEL.md's frequencies). */
static int load_state_dict(tt_st_file *f, const char *file, const tt_layout *l, float *w,
                           char *err, size_t errlen)
{
    char alias[128];
    for (int i = 0; i < l->n_params; i++) {
        const tt_param *p = &l->params[i];
        const char *name = p->name;
        if (!tt_st_find(f, name) && tied_alias(l, name, alias, sizeof alias) && tt_st_find(f, alias))
            name = alias;
        if (!tt_st_find(f, name))
            return tt_errf(err, errlen, "%s: tensor '%s' is missing", file, p->name);
        if (tt_st_read_f32(f, name, p->ndim, p->shape, w + p->offset, err, errlen) != 0) return -1;
    }
    for (int i = 0; i < tt_st_count(f); i++) {
        const char *n = tt_st_get(f, i)->name;
        if (tt_layout_find(l, n)) continue;
        const tt_param *tied = NULL;
        for (int k = 0; k < l->n_params && !tied; k++)
            if (tied_alias(l, l->params[k].name, alias, sizeof alias) && !strcmp(alias, n))
                tied = &l->params[k];
        const bool inv_freq = l->m.kind == TT_KIND_TXL && !strcmp(n, "pos_emb.inv_freq");
        if (!tied && !inv_freq)
            return tt_errf(err, errlen, "%s: tensor '%s' is not part of this model", file, n);
        const int64_t half = l->m.d_model / 2;
        float *x = tt_xmalloc((tied ? tied->numel : (size_t)half) * sizeof *x);
        int rc = tt_st_read_f32(f, n, tied ? tied->ndim : 1, tied ? tied->shape : &half, x, err, errlen);
        /* the frequencies to their dtype's precision (a model saved in half or bfloat16) */
        const tt_st_dtype dt = tt_st_get(f, i)->dtype;
        const double tol = dt == TT_ST_BF16 ? 8e-3 : dt == TT_ST_F16 ? 1e-3 : 2e-6;
        for (size_t k = 0; rc == 0 && k < (tied ? tied->numel : (size_t)half); k++) {
            const double want = tied ? w[tied->offset + k] : pow(10000.0, -2.0 * (double)k / l->m.d_model);
            if (tied ? x[k] != want : fabs(x[k] - want) > tol * want)
                rc = tt_errf(err, errlen, "%s: '%s'[%zu] is %.9g, not %.9g (%s)", file, n, k,
                             (double)x[k], want,
                             !tied ? "10000^(-2k/d_model), MODEL.md section 3"
                             : strstr(n, "out_projs.0") ? "the tensor it is tied to: tt ties every "
                               "projection, kimiyoung's tie_projs leaves the first cluster's untied"
                             : "the tensor it is tied to");
        }
        free(x);
        if (rc) return -1;
    }
    return 0;
}

int tt_checkpoint_load(const char *model_file, const tt_spec *spec, const tt_layout *l,
                       const tt_vocab *vocab, float *w, long *step, char *err, size_t errlen)
{
    tt_st_file *f;
    if (tt_st_open(model_file, &f, err, errlen) != 0) return -1;
    int rc = -1;
    tt_spec ck = {0};
    /* without tt's metadata (none, or another writer's, e.g. save_model's {"format": "pt"}): a
     * PyTorch state_dict */
    const char *fmt = tt_st_meta(f, "format");
    if (!tt_st_meta(f, "spec") && (!fmt || strcmp(fmt, FORMAT) != 0)) {
        *step = 0;
        rc = load_state_dict(f, model_file, l, w, err, errlen);
        tt_st_close(f);
        return rc;
    }
    const char *format = tt_st_meta(f, "format"), *text = tt_st_meta(f, "spec");
    const char *hash = tt_st_meta(f, "vocab_sha256"), *st = tt_st_meta(f, "step");
    if (!format || strcmp(format, FORMAT) != 0 || !text || !hash || !st) {
        tt_errf(err, errlen, "%s: not a tt checkpoint (its metadata lacks format %s, spec, "
                "vocab_sha256 or step)", model_file, FORMAT);
        goto out;
    }
    char *name = tt_xasprintf("%s (its spec)", model_file);
    char perr[512];
    int prc = tt_spec_parse(text, strlen(text), name, ".", &ck, perr, sizeof perr);
    free(name);
    if (prc != 0) {
        tt_errf(err, errlen, "%s: its spec does not parse: %s", model_file, perr);
        goto out;
    }
    if (compare_specs(model_file, &ck, spec, err, errlen) != 0) goto out;
    if (vocab) {
        char hex[65];
        tt_hex(vocab->hash, 32, hex);
        if (strcmp(hex, hash) != 0) {
            tt_errf(err, errlen, "%s: the vocabulary does not match the checkpoint's (its SHA-256 "
                    "is %.12s..., the data's %.12s...): the training data changed?", model_file,
                    hash, hex);
            goto out;
        }
    }
    for (int i = 0; i < l->n_params; i++) {
        const tt_param *p = &l->params[i];
        if (!tt_st_find(f, p->name)) {
            tt_errf(err, errlen, "%s: tensor '%s' is missing", model_file, p->name);
            goto out;
        }
        if (tt_st_read_f32(f, p->name, p->ndim, p->shape, w + p->offset, err, errlen) != 0)
            goto out;
    }
    for (int i = 0; i < tt_st_count(f); i++) {
        const char *n = tt_st_get(f, i)->name;
        if (!tt_layout_find(l, n)) {
            tt_errf(err, errlen, "%s: tensor '%s' is not part of this model", model_file, n);
            goto out;
        }
    }
    *step = strtol(st, NULL, 10);
    rc = 0;
out:
    tt_spec_free(&ck);
    tt_st_close(f);
    return rc;
}

int tt_checkpoint_load_optim(const char *model_file, const tt_layout *l, float *m, float *v,
                             char *err, size_t errlen)
{
    char *dir = tt_xstrdup(model_file);
    char *slash = strrchr(dir, '/');
    if (slash) *slash = '\0';
    char *path = tt_xasprintf("%s/optim.safetensors", slash ? dir : ".");
    free(dir);
    tt_st_file *f;
    int rc = tt_st_open(path, &f, err, errlen);
    for (int i = 0; rc == 0 && i < l->n_params; i++) {
        const tt_param *p = &l->params[i];
        char a[128], b[128];
        snprintf(a, sizeof a, "exp_avg.%s", p->name);
        snprintf(b, sizeof b, "exp_avg_sq.%s", p->name);
        if (!tt_st_find(f, a) || !tt_st_find(f, b))
            rc = tt_errf(err, errlen, "%s: the moments of '%s' are missing", path, p->name);
        else if (tt_st_read_f32(f, a, p->ndim, p->shape, m + p->offset, err, errlen) != 0 ||
                 tt_st_read_f32(f, b, p->ndim, p->shape, v + p->offset, err, errlen) != 0)
            rc = -1;
    }
    if (f) tt_st_close(f);
    free(path);
    return rc;
}
