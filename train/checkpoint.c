/* Checkpoints as safetensors (see checkpoint.h). */
#include "checkpoint.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
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
/* Since the nineteenth session each tensor's SHA-256 is in its file's metadata, under SUM_PREFIX
 * and its name, and SUMS_KEY says so (older checkpoints have neither, and load unchecked). */
#define SUMS_KEY "tensor_sums"
#define SUM_PREFIX "sha256:"
#define STATE_FORMAT "tt-train-state-1"

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

/* The SHA-256 (hex) of each tensor, several at a time (a wt103 checkpoint's weights and
 * moments, 1 GB, hash in about a second on one core with the SHA extensions). */
typedef struct {
    const tt_st_tensor *t;
    char **hex;
} sum_job;

static void sum_at(void *ctx, int i)
{
    const sum_job *j = ctx;
    uint8_t d[32];
    tt_sha256(j->t[i].data, tt_st_nbytes(&j->t[i]), d); /* the bytes written: little-endian f32 */
    tt_hex(d, 32, j->hex[i]);
}

/* Writes every parameter of l from each of nsets buffers, named prefix[k] + the parameter's name,
 * each one's SHA-256 in the metadata. */
static int write_tensors(const char *path, const tt_layout *l, int nsets, const float *const *base,
                         const char *const *prefix, const char *const *keys,
                         const char *const *vals, int n_meta, char *err, size_t errlen)
{
    const int n = l->n_params * nsets, nm = n_meta + 1 + n;
    tt_st_tensor *t = tt_xcalloc((size_t)n, sizeof *t);
    char **names = tt_xcalloc((size_t)n, sizeof *names), **sums = tt_xcalloc((size_t)n, sizeof *sums);
    const char **mk = tt_xcalloc((size_t)nm, sizeof *mk), **mv = tt_xcalloc((size_t)nm, sizeof *mv);
    for (int i = 0; i < n_meta; i++) mk[i] = keys[i], mv[i] = vals[i];
    mk[n_meta] = SUMS_KEY, mv[n_meta] = "sha256";
    for (int k = 0; k < nsets; k++)
        for (int i = 0; i < l->n_params; i++) {
            const tt_param *p = &l->params[i];
            const int j = k * l->n_params + i;
            tt_st_tensor *e = &t[j];
            names[j] = tt_xasprintf("%s%s", prefix[k], p->name);
            e->name = names[j];
            e->dtype = TT_ST_F32;
            e->ndim = p->ndim;
            e->shape[0] = p->shape[0];
            e->shape[1] = p->shape[1];
            e->data = base[k] + p->offset;
            sums[j] = tt_xmalloc(65);
            mk[n_meta + 1 + j] = tt_xasprintf(SUM_PREFIX "%s", names[j]);
            mv[n_meta + 1 + j] = sums[j];
        }
    sum_job job = {t, sums};
    tt_parallel_for(n, 8, sum_at, &job);
    int rc = tt_st_write(path, t, n, mk, mv, nm, err, errlen);
    for (int i = 0; i < n; i++) free(names[i]), free(sums[i]), free((char *)mk[n_meta + 1 + i]);
    free(names), free(sums), free(mk), free(mv);
    free(t);
    return rc;
}

/* state.safetensors: the numbers as metadata (best_valid_ppl with 17 digits, so that it reads
 * back to the same double), the memories as one tensor per layer. */
static int write_state(const char *path, const tt_layout *l, const tt_train_state *st, char *err,
                       size_t errlen)
{
    char num[9][32];
    snprintf(num[0], sizeof num[0], "%ld", st->step);
    snprintf(num[1], sizeof num[1], "%" PRIu64, st->seed);
    snprintf(num[2], sizeof num[2], "%ld", st->mem_step);
    snprintf(num[3], sizeof num[3], "%d", st->mem_len);
    snprintf(num[4], sizeof num[4], "%d", st->batch);
    if (isinf(st->best_valid_ppl)) snprintf(num[5], sizeof num[5], "inf");
    else snprintf(num[5], sizeof num[5], "%.17g", st->best_valid_ppl);
    snprintf(num[6], sizeof num[6], "%ld", st->best_step);
    snprintf(num[7], sizeof num[7], "%ld", st->stale);
    snprintf(num[8], sizeof num[8], "%ld", st->skipped);
    const char *keys[] = {"format", "step", "seed", "mem_step", "mem_len", "batch",
                          "best_valid_ppl", "best_step", "stale", "skipped", "data", "rng"};
    const char *vals[] = {STATE_FORMAT, num[0], num[1], num[2], num[3], num[4], num[5], num[6],
                          num[7], num[8],
                          "the batch of step s is a function of s (tt_tokens_batch: segment "
                          "(s - 1) mod S of each stream); the next step is step + 1",
                          "dropout masks are counter-based on (seed, step, site, element): no "
                          "generator state"};
    const int layers = st->mem_len > 0 ? l->m.layers : 0, d = l->m.d_model;
    TT_ASSERT(!layers || st->mems);
    tt_st_tensor *t = tt_xcalloc((size_t)layers + 1, sizeof *t);
    char (*names)[32] = tt_xcalloc((size_t)layers + 1, sizeof *names);
    const size_t per_layer = (size_t)st->batch * st->mem_len * d;
    for (int k = 0; k < layers; k++) {
        snprintf(names[k], sizeof names[k], "mems.%d", k);
        t[k] = (tt_st_tensor){names[k], TT_ST_F32, 3, {st->batch, st->mem_len, d},
                              st->mems + k * per_layer};
    }
    const int rc = tt_st_write(path, t, layers, keys, vals, (int)(sizeof keys / sizeof *keys), err,
                               errlen);
    free(names);
    free(t);
    return rc;
}

/* Whether name is "step-" + a number + kind (".tmp", ".old") + "." + a PID no longer running;
 * *stem: the length of "step-N". */
static bool step_left_by_dead(const char *name, const char *kind, size_t *stem)
{
    const char *d = name + 5, *e = d;
    if (strncmp(name, "step-", 5) != 0) return false;
    while (isdigit((unsigned char)*e)) e++;
    if (e == d || strncmp(e, kind, strlen(kind)) != 0 || e[strlen(kind)] != '.') return false;
    *stem = (size_t)(e - name);
    char *end;
    errno = 0;
    const long pid = strtol(e + strlen(kind) + 1, &end, 10);
    return !errno && !*end && tt_pid_gone(pid);
}

int tt_checkpoint_prepare(const char *dir, int *cleaned, char *err, size_t errlen)
{
    if (cleaned) *cleaned = 0;
    if (!dir || !dir[0])
        return tt_errf(err, errlen, "the checkpoint folder is an empty path (--checkpoint-dir, "
                       "or train.checkpoint.dir)");
    if (tt_mkdir_p(dir, err, errlen) != 0) return -1;
    char *probe = tt_xasprintf("%s/.write-test.%ld", dir, (long)getpid());
    FILE *f = fopen(probe, "wb");
    bool bad = !f || fputc('\n', f) == EOF;
    int e = errno;
    if (f && fclose(f) != 0 && !bad) bad = true, e = errno;
    unlink(probe);
    free(probe);
    if (bad) return tt_errf(err, errlen, "%s: cannot write: %s", dir, strerror(e));
    DIR *d = opendir(dir);
    if (!d) return tt_errf(err, errlen, "%s: cannot read: %s", dir, strerror(errno));
    struct dirent *de;
    int n = 0;
    while ((de = readdir(d))) {
        size_t stem;
        char *p = tt_xasprintf("%s/%s", dir, de->d_name);
        if (step_left_by_dead(de->d_name, ".tmp", &stem)) {
            rm_tree(p), n++;
        } else if (step_left_by_dead(de->d_name, ".old", &stem)) {
            char *final = tt_xasprintf("%s/%.*s", dir, (int)stem, de->d_name);
            struct stat st;
            if (stat(final, &st) != 0) { /* its replacement never came: it is the step's */
                if (rename(p, final) == 0) n++;
            } else {
                rm_tree(p), n++;
            }
            free(final);
        } else if (!strncmp(de->d_name, "latest.tmp.", 11) &&
                   tt_pid_gone(tt_temp_pid(de->d_name)) && unlink(p) == 0) {
            n++;
        }
        free(p);
    }
    closedir(d);
    if (cleaned) *cleaned = n;
    return 0;
}

/* The fault test's kill -9 inside a save (test_train_cli's test_kill_anywhere): TT_FAULT_SAVE=K
 * ends this process with SIGKILL at point K of its first save that reaches it: 1, every file
 * written under the temporary name; 2, an older folder of the same step moved aside; 3, the new
 * folder in place, latest not yet pointed at it. Unset (always, but in that test): nothing. */
static void fault_point(int k)
{
    const char *v = getenv("TT_FAULT_SAVE");
    if (v && atoi(v) == k) raise(SIGKILL);
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
    char *state = tt_xasprintf("%s/state.safetensors", tmp);
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
    if (ck->state && write_state(state, ck->layout, ck->state, err, errlen) != 0) goto out;
    if (tt_vocab_save(ck->vocab, vocab, err, errlen) != 0) goto out;
    fault_point(1);
    /* Replace an older folder of the same step (moved aside, the new one put in its place, and
     * only then removed: no more than two renames apart is there no whole folder under the
     * name), then point latest at the new one. */
    char *old = tt_xasprintf("%s.old.%ld", final, (long)getpid());
    const int had_old = rename(final, old) == 0;
    if (had_old) fault_point(2);
    if (rename(tmp, final) != 0) {
        tt_errf(err, errlen, "%s: cannot rename to %s: %s", tmp, final, strerror(errno));
        if (had_old) rename(old, final); /* the old one back */
        free(old);
        goto out;
    }
    if (had_old) rm_tree(old);
    free(old);
    fault_point(3);
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
    free(state);
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
    if (tt_read_file(latest, 4096, &text, &len, NULL, 0) != 0) {
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

static int meta_long(const tt_st_file *f, const char *path, const char *key, long lo, long hi,
                     long *out, char *err, size_t errlen);

/* tt_st_read_f32 of tensor name (p's shape) into out, checked against its SHA-256 where the file
 * records them, and every value finite: a NaN or an infinity in a checkpoint's weights or
 * moments would otherwise score as `perplexity nan`, or be trained on. */
static int read_finite(tt_st_file *f, const char *file, const char *name, const tt_param *p,
                       float *out, char *err, size_t errlen)
{
    if (tt_st_read_f32(f, name, p->ndim, p->shape, out, err, errlen) != 0) return -1;
    const char *kind = tt_st_meta(f, SUMS_KEY);
    if (kind) { /* the file says its tensors' SHA-256 are in its metadata: each checked */
        char key[160], hex[65];
        snprintf(key, sizeof key, SUM_PREFIX "%s", name);
        const char *want = tt_st_meta(f, key);
        if (strcmp(kind, "sha256") != 0 || !want)
            return tt_errf(err, errlen, "%s: tensor '%s' has no %s sum in the metadata", file,
                           name, kind);
        uint8_t d[32];
        tt_sha256(out, p->numel * sizeof(float), d);
        tt_hex(d, 32, hex);
        if (strcmp(hex, want) != 0)
            return tt_errf(err, errlen, "%s: tensor '%s' does not match its SHA-256 (%.12s..., "
                           "recorded %.12s...): the file is damaged", file, name, hex, want);
    }
    for (size_t i = 0; i < p->numel; i++)
        if (!isfinite(out[i]))
            return tt_errf(err, errlen, "%s: tensor '%s' holds %s at element %zu of %zu: the "
                           "checkpoint is damaged", file, name, isnan(out[i]) ? "NaN" : "an infinity",
                           i, p->numel);
    return 0;
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
        if (read_finite(f, file, name, p, w + p->offset, err, errlen) != 0) return -1;
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
        if (read_finite(f, model_file, p->name, p, w + p->offset, err, errlen) != 0) goto out;
    }
    for (int i = 0; i < tt_st_count(f); i++) {
        const char *n = tt_st_get(f, i)->name;
        if (!tt_layout_find(l, n)) {
            tt_errf(err, errlen, "%s: tensor '%s' is not part of this model", model_file, n);
            goto out;
        }
    }
    /* checked, not trusted: a negative step read outside the batch's buffer, letters resumed
     * at step 0 over the step folders */
    if (meta_long(f, model_file, "step", 0, LONG_MAX, step, err, errlen) != 0) goto out;
    rc = 0;
out:
    tt_spec_free(&ck);
    tt_st_close(f);
    return rc;
}

/* The file `name` in model_file's folder. malloc'd. */
static char *beside(const char *model_file, const char *name)
{
    const char *slash = strrchr(model_file, '/');
    return slash ? tt_xasprintf("%.*s/%s", (int)(slash - model_file), model_file, name)
                 : tt_xstrdup(name);
}

int tt_checkpoint_load_optim(const char *model_file, const tt_layout *l, float *m, float *v,
                             char *err, size_t errlen)
{
    char *path = beside(model_file, "optim.safetensors");
    tt_st_file *f;
    int rc = tt_st_open(path, &f, err, errlen);
    for (int i = 0; rc == 0 && i < l->n_params; i++) {
        const tt_param *p = &l->params[i];
        char a[128], b[128];
        snprintf(a, sizeof a, "exp_avg.%s", p->name);
        snprintf(b, sizeof b, "exp_avg_sq.%s", p->name);
        if (!tt_st_find(f, a) || !tt_st_find(f, b))
            rc = tt_errf(err, errlen, "%s: the moments of '%s' are missing", path, p->name);
        else if (read_finite(f, path, a, p, m + p->offset, err, errlen) != 0 ||
                 read_finite(f, path, b, p, v + p->offset, err, errlen) != 0)
            rc = -1;
    }
    if (f) tt_st_close(f);
    free(path);
    return rc;
}

/* Metadata `key` of f as a whole decimal integer in lo..hi. */
static int meta_long(const tt_st_file *f, const char *path, const char *key, long lo, long hi,
                     long *out, char *err, size_t errlen)
{
    const char *s = tt_st_meta(f, key);
    if (!s) return tt_errf(err, errlen, "%s: its metadata lacks '%s'", path, key);
    char *end;
    errno = 0;
    const long v = strtol(s, &end, 10);
    const bool digits =
        isdigit((unsigned char)s[0]) || (s[0] == '-' && isdigit((unsigned char)s[1]));
    if (!digits || *end || errno || v < lo || v > hi) {
        if (hi == LONG_MAX || hi == INT_MAX)
            return tt_errf(err, errlen, "%s: metadata %s is '%.40s', not an integer of at least "
                           "%ld", path, key, s, lo);
        return tt_errf(err, errlen, "%s: metadata %s is '%.40s', not an integer in %ld..%ld", path,
                       key, s, lo, hi);
    }
    *out = v;
    return 0;
}

/* The numbers of a state file, each checked on its own and against the others. */
static int read_state_meta(const tt_st_file *f, const char *path, const tt_layout *l,
                           tt_train_state *st, char *err, size_t errlen)
{
    const char *format = tt_st_meta(f, "format");
    if (!format || strcmp(format, STATE_FORMAT) != 0)
        return tt_errf(err, errlen, "%s: not a tt training state (its metadata lacks format %s)",
                       path, STATE_FORMAT);
    long v[7] = {0};
    if (meta_long(f, path, "step", 0, LONG_MAX, &v[0], err, errlen) ||
        meta_long(f, path, "mem_step", -1, v[0], &v[1], err, errlen) ||
        meta_long(f, path, "mem_len", 0, INT_MAX, &v[2], err, errlen) ||
        meta_long(f, path, "batch", 1, INT_MAX, &v[3], err, errlen) ||
        meta_long(f, path, "best_step", 0, v[0], &v[4], err, errlen) ||
        meta_long(f, path, "stale", 0, v[0], &v[5], err, errlen) ||
        /* skipped came later: a state without it skipped none */
        (tt_st_meta(f, "skipped") && meta_long(f, path, "skipped", 0, v[0], &v[6], err, errlen)))
        return -1;
    st->step = v[0], st->mem_step = v[1], st->mem_len = (int)v[2], st->batch = (int)v[3];
    st->best_step = v[4], st->stale = v[5], st->skipped = v[6];
    if (st->mem_len > l->m.mem_len)
        return tt_errf(err, errlen, "%s: mem_len is %d, more than the spec's model.mem_len %d",
                       path, st->mem_len, l->m.mem_len);
    if (st->mem_step != -1 && st->mem_step != st->step)
        return tt_errf(err, errlen, "%s: mem_step is %ld, neither the step (%ld) nor -1", path,
                       st->mem_step, st->step);
    if (st->mem_step == -1 && st->mem_len)
        return tt_errf(err, errlen, "%s: mem_len is %d but mem_step -1 (memories of no step)",
                       path, st->mem_len);
    const char *seed = tt_st_meta(f, "seed");
    char *end = NULL;
    errno = 0;
    if (seed) st->seed = strtoull(seed, &end, 10);
    if (!seed || !isdigit((unsigned char)seed[0]) || *end || errno)
        return tt_errf(err, errlen, "%s: metadata seed is '%.40s', not an unsigned 64-bit integer",
                       path, seed ? seed : "(missing)");
    const char *best = tt_st_meta(f, "best_valid_ppl");
    if (best && !strcmp(best, "inf")) {
        st->best_valid_ppl = INFINITY;
    } else {
        end = NULL;
        if (best) st->best_valid_ppl = strtod(best, &end);
        if (!best || !best[0] || isspace((unsigned char)best[0]) || *end ||
            !isfinite(st->best_valid_ppl) || st->best_valid_ppl < 1)
            return tt_errf(err, errlen, "%s: metadata best_valid_ppl is '%.40s', not a perplexity "
                           "(a number of at least 1, or inf)", path, best ? best : "(missing)");
    }
    if ((st->best_step == 0) != isinf(st->best_valid_ppl))
        return tt_errf(err, errlen, "%s: best_valid_ppl %s and best_step %ld disagree (inf goes "
                       "with step 0)", path, best, st->best_step);
    return 0;
}

/* The memories: mems.0 .. mems.L-1 of shape [batch, mem_len, d_model] when mem_len > 0, and no
 * other tensor; the shapes are checked before anything is allocated. */
static int read_state_mems(const tt_st_file *f, const char *path, const tt_layout *l,
                           tt_train_state *st, char *err, size_t errlen)
{
    const int layers = st->mem_len ? l->m.layers : 0;
    for (int i = 0; i < tt_st_count(f); i++) {
        const char *n = tt_st_get(f, i)->name;
        int k = -1;
        char canon[32] = "";
        if (sscanf(n, "mems.%d", &k) == 1) snprintf(canon, sizeof canon, "mems.%d", k);
        if (strcmp(n, canon) != 0 || k < 0 || k >= layers)
            return tt_errf(err, errlen, "%s: tensor '%.60s' is not part of a training state of "
                           "mem_len %d (%d layers)", path, n, st->mem_len, l->m.layers);
    }
    const int64_t shape[3] = {st->batch, st->mem_len, l->m.d_model};
    for (int k = 0; k < layers; k++) {
        char name[32];
        snprintf(name, sizeof name, "mems.%d", k);
        const tt_st_tensor *t = tt_st_find(f, name);
        if (!t) return tt_errf(err, errlen, "%s: tensor '%s' is missing", path, name);
        if (t->ndim != 3 || memcmp(t->shape, shape, sizeof shape) != 0) /* the reader says how */
            return tt_st_read_f32(f, name, 3, shape, NULL, err, errlen);
    }
    if (!layers) return 0;
    const size_t per_layer = (size_t)st->batch * st->mem_len * l->m.d_model;
    st->mems = tt_xmalloc((size_t)layers * per_layer * sizeof *st->mems);
    for (int k = 0; k < layers; k++) {
        char name[32];
        snprintf(name, sizeof name, "mems.%d", k);
        float *x = st->mems + k * per_layer;
        if (tt_st_read_f32(f, name, 3, shape, x, err, errlen) != 0) return -1;
        for (size_t i = 0; i < per_layer; i++)
            if (!isfinite(x[i]))
                return tt_errf(err, errlen, "%s: tensor '%s' holds %g at element %zu", path, name,
                               (double)x[i], i);
    }
    return 0;
}

int tt_checkpoint_load_state(const char *model_file, const tt_layout *l, int batch,
                             tt_train_state *st, char *err, size_t errlen)
{
    *st = (tt_train_state){.mem_step = -1, .batch = batch, .best_valid_ppl = INFINITY};
    char *path = beside(model_file, "state.safetensors");
    const bool txl = l->m.kind == TT_KIND_TXL;
    int rc = -1;
    tt_st_file *f = NULL;
    if (access(path, F_OK) != 0 && errno == ENOENT) {
        rc = 1;
        tt_errf(err, errlen, "%s is missing: this checkpoint holds no training state (written "
                "before state.safetensors existed): %sthe best validation so far is unknown",
                path, txl ? "Transformer-XL's first step starts without memory, and " : "");
        goto out;
    }
    if (tt_st_open(path, &f, err, errlen) != 0) goto out;
    if (read_state_meta(f, path, l, st, err, errlen) != 0 ||
        read_state_mems(f, path, l, st, err, errlen) != 0)
        goto out;
    rc = 0;
    if (st->mem_len && st->batch != batch) {
        rc = 2;
        tt_errf(err, errlen, "%s: its memories are of batch %d, the spec's train.batch is %d: they "
                "cannot be used, and the first step starts without memory", path, st->batch, batch);
        free(st->mems);
        st->mems = NULL;
        st->mem_len = 0;
        st->mem_step = -1;
    }
out:
    if (rc < 0) {
        free(st->mems);
        st->mems = NULL;
    }
    if (f) tt_st_close(f);
    free(path);
    return rc;
}
