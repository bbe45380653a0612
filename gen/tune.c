/* Tunables, signatures and the tuning cache (tune.h). */
#include "tune.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "emit.h"
#include "sha256.h"
#include "templates.h"
#include "util.h"

static int parse_declaration(const char *tpl, const char *line, size_t len, tt_tunable *t,
                             char *err, size_t errlen)
{
    char buf[256];
    if (len >= sizeof buf) return tt_errf(err, errlen, "templates/%s: a tunable line too long", tpl);
    memcpy(buf, line, len);
    buf[len] = '\0';
    memset(t, 0, sizeof *t);
    snprintf(t->template_file, sizeof t->template_file, "%s", tpl);
    char *save = NULL, *op = strtok_r(buf, " \t", &save), *key = strtok_r(NULL, " \t", &save);
    if (!op || !key || strlen(op) >= sizeof t->op || strlen(key) >= sizeof t->key)
        return tt_errf(err, errlen, "templates/%s: 'ttgen: tunable' needs OP KEY VALUES...", tpl);
    for (const char *c = key; *c; c++)
        if (!isupper((unsigned char)*c) && !isdigit((unsigned char)*c) && *c != '_')
            return tt_errf(err, errlen, "templates/%s: tunable key '%s' is not a constant's name",
                           tpl, key);
    snprintf(t->op, sizeof t->op, "%s", op);
    snprintf(t->key, sizeof t->key, "%s", key);
    for (char *v; (v = strtok_r(NULL, " \t", &save));) {
        char *end;
        const long x = strtol(v, &end, 10);
        if (*end || x < 0 || t->n_values == TT_TUNE_VALUES)
            return tt_errf(err, errlen, "templates/%s: tunable %s %s: '%s' (at most %d integers "
                           "from 0)", tpl, op, key, v, TT_TUNE_VALUES);
        t->values[t->n_values++] = x;
    }
    if (t->n_values < 2)
        return tt_errf(err, errlen, "templates/%s: tunable %s %s names fewer than two values", tpl,
                       op, key);
    return 0;
}

int tt_tunables_load(const char *template_dir, tt_tunable **out, int *n, char *err, size_t errlen)
{
    static const char mark[] = "// ttgen: tunable ";
    *out = NULL;
    *n = 0;
    for (const tt_template *e = tt_embedded_templates; e->name; e++) {
        if (!strstr(e->name, ".cu") || strstr(e->name, ".cuh")) continue;
        char *text;
        size_t len;
        if (tt_template_load(template_dir, e->name, &text, &len, err, errlen) != 0) goto fail;
        for (const char *p = text; (p = strstr(p, mark)); ) {
            if (p != text && p[-1] != '\n') { /* only a line of its own */
                p += sizeof mark - 1;
                continue;
            }
            p += sizeof mark - 1;
            const char *end = strchr(p, '\n');
            const size_t l = end ? (size_t)(end - p) : strlen(p);
            *out = tt_xrealloc(*out, (size_t)(*n + 1) * sizeof **out);
            if (parse_declaration(e->name, p, l, &(*out)[*n], err, errlen) != 0) {
                free(text);
                goto fail;
            }
            ++*n;
        }
        free(text);
    }
    return 0;
fail:
    free(*out);
    *out = NULL;
    *n = 0;
    return -1;
}

void tt_tuning_set(tt_tuning *t, const char *op, const char *key, long value)
{
    for (int i = 0; i < t->n; i++)
        if (!strcmp(t->c[i].op, op) && !strcmp(t->c[i].key, key)) {
            t->c[i].value = value;
            return;
        }
    t->c = tt_xrealloc(t->c, (size_t)(t->n + 1) * sizeof *t->c);
    tt_tune_choice *c = &t->c[t->n++];
    snprintf(c->op, sizeof c->op, "%s", op);
    snprintf(c->key, sizeof c->key, "%s", key);
    c->value = value;
}

long tt_tuning_get(const tt_tuning *t, const char *op, const char *key, long fallback)
{
    for (int i = 0; t && i < t->n; i++)
        if (!strcmp(t->c[i].op, op) && !strcmp(t->c[i].key, key)) return t->c[i].value;
    return fallback;
}

int tt_tuning_has(const tt_tuning *t, const char *op, const char *key)
{
    for (int i = 0; t && i < t->n; i++)
        if (!strcmp(t->c[i].op, op) && !strcmp(t->c[i].key, key)) return 1;
    return 0;
}

void tt_tuning_free(tt_tuning *t)
{
    free(t->c);
    t->c = NULL;
    t->n = 0;
}

static int is_tunable(const tt_kernel *k, const tt_tunable *tu, int nt, const char *key)
{
    for (int i = 0; i < nt; i++)
        if (!strcmp(tu[i].template_file, k->template_file) && !strcmp(tu[i].op, k->op) &&
            !strcmp(tu[i].key, key))
            return 1;
    return 0;
}

static int has_tunables(const tt_kernel *k, const tt_tunable *tu, int nt)
{
    for (int i = 0; i < nt; i++)
        if (!strcmp(tu[i].template_file, k->template_file) && !strcmp(tu[i].op, k->op)) return 1;
    return 0;
}

int tt_kernel_signature(const tt_kernel *k, const tt_spec *spec, const char *arch,
                        const tt_tunable *tunables, int n_tunables, char *out, size_t n,
                        char *err, size_t errlen)
{
    /* The kernel without its tunables and what follows from them (its threads, its parts of j):
     * its source then changes only with the templates, and its name with the shapes. */
    tt_kernel bare = *k;
    bare.n_consts = 0;
    tt_buf consts = {0};
    for (int i = 0; i < k->n_consts; i++) {
        const tt_const *c = &k->consts[i];
        if (is_tunable(k, tunables, n_tunables, c->key) || !strcmp(c->key, "THREADS") ||
            !strcmp(c->key, "JP"))
            continue;
        bare.consts[bare.n_consts++] = *c;
        if (strncmp(c->key, "OP_", 3) != 0)
            tt_buf_printf(&consts, "%s%s=%ld", consts.len ? "," : "", c->key, c->value);
    }
    snprintf(bare.name, sizeof bare.name, "%s", k->op);
    size_t len;
    char *src = tt_emit_source(&bare, NULL, &len, err, errlen);
    if (!src) {
        tt_buf_free(&consts);
        return -1;
    }
    uint8_t digest[32];
    char hex[65];
    tt_sha256(src, len, digest);
    tt_hex(digest, 6, hex);
    snprintf(out, n, "%s|%s|%s|batch=%d|%s|src=%s", k->op, k->dtype, arch, spec->train.batch,
             consts.len ? consts.data : "", hex);
    free(src);
    tt_buf_free(&consts);
    return 0;
}

int tt_strategy_signature(const tt_spec *spec, const char *arch, char *out, size_t n, char *err,
                          size_t errlen)
{
    out[0] = '\0';
    const tt_model_spec *m = &spec->model;
    if (m->kind != TT_KIND_TENSORIZED || spec->kernels.attention != TT_ATTN_AUTO) return 0;
    tt_tunable *tu;
    int nt;
    if (tt_tunables_load(NULL, &tu, &nt, err, errlen) != 0) return -1;
    tt_sha256_ctx h;
    tt_sha256_init(&h);
    int rc = 0, kernels = 0;
    for (int mat = 0; mat <= 1 && rc == 0; mat++) {
        tt_tuning t = {0};
        tt_tuning_set(&t, TT_STRATEGY_OP, TT_STRATEGY_KEY, mat);
        tt_plan p;
        char perr[512];
        if (tt_plan_build_tuned(spec, arch, &t, &p, perr, sizeof perr) != 0) {
            rc = 1; /* that strategy does not plan: nothing to choose */
        } else if (tt_plan_materialized(&p) != mat) {
            rc = 1; /* the plan fell back to the other (it does not fit) */
            tt_plan_free(&p);
        } else {
            for (int i = 0; i < p.n && rc == 0; i++) {
                const tt_kernel *k = &p.kernels[i];
                if (!k->strategy[0]) continue; /* the attention's kernels */
                char sig[320];
                if (tt_kernel_signature(k, spec, arch, tu, nt, sig, sizeof sig, err, errlen) != 0)
                    rc = -1;
                else
                    tt_sha256_update(&h, sig, strlen(sig) + 1), kernels++;
            }
            tt_plan_free(&p);
        }
        tt_tuning_free(&t);
    }
    free(tu);
    if (rc < 0) return -1;
    if (rc > 0 || !kernels) return 0;
    uint8_t digest[32];
    char hex[65];
    tt_sha256_final(&h, digest);
    tt_hex(digest, 6, hex);
    snprintf(out, n,
             "%s|%s|%s|batch=%d|N=%d,R=%d,D=%d,H=%d,L=%d,F=%d,V=%ld,C=%d,DV=%d,TIE=%d,CAUSAL=%d,"
             "POS_KEY=%d|src=%s",
             TT_STRATEGY_OP,
             spec->train.precision == TT_PREC_BF16   ? "bf16"
             : spec->train.precision == TT_PREC_TF32 ? "tf32"
                                                     : "fp32",
             arch,
             spec->train.batch, m->seq_len, m->rank, m->d_model, m->cores, m->layers, m->d_inner,
             m->vocab, m->n_cutoffs, m->div_val, m->tie_weights, m->causal,
             m->position == TT_POS_KEY, hex);
    return 0;
}

int tt_kernel_same(const tt_kernel *a, const tt_kernel *b)
{
    if (strcmp(a->name, b->name) || a->n_consts != b->n_consts) return 0;
    for (int i = 0; i < a->n_consts; i++)
        if (strcmp(a->consts[i].key, b->consts[i].key) || a->consts[i].value != b->consts[i].value)
            return 0;
    return 1;
}

void tt_kernel_variant(const tt_kernel *k, const tt_tunable *tunables, int n_tunables, char *out,
                       size_t n)
{
    size_t used = 0;
    out[0] = '\0';
    for (int i = 0; i < n_tunables; i++) {
        const tt_tunable *t = &tunables[i];
        if (strcmp(t->template_file, k->template_file) || strcmp(t->op, k->op)) continue;
        const int w = snprintf(out + used, n - used, "%s%s=%ld", used ? " " : "", t->key,
                               tt_kernel_const(k, t->key, -1));
        if (w < 0 || (size_t)w >= n - used) break;
        used += (size_t)w;
    }
}

int tt_variant_parse(const char *variant, const char *op, tt_tuning *t)
{
    char buf[128];
    if (strlen(variant) >= sizeof buf) return -1;
    snprintf(buf, sizeof buf, "%s", variant);
    char *save = NULL;
    int count = 0;
    for (char *tok = strtok_r(buf, " ", &save); tok; tok = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(tok, '='), *end;
        if (!eq || eq == tok || eq - tok >= 24) return -1;
        *eq = '\0';
        const long v = strtol(eq + 1, &end, 10);
        if (*end || end == eq + 1) return -1;
        tt_tuning_set(t, op, tok, v);
        count++;
    }
    return count ? 0 : -1;
}

char *tt_tuning_path(const char *cache_dir) { return tt_xasprintf("%s/tuning.tsv", cache_dir); }


/* A line: card, signature, variant, default variant, best ms, default ms, unit, date; tabs. */
#define TUNE_FIELDS 8

static int parse_entry(char *line, tt_tune_entry *e)
{
    char *f[TUNE_FIELDS];
    int n = 0;
    for (char *p = line; n < TUNE_FIELDS; n++) {
        f[n] = p;
        char *tab = strchr(p, '\t');
        if (!tab) {
            n++;
            break;
        }
        *tab = '\0';
        p = tab + 1;
    }
    if (n != TUNE_FIELDS) return -1;
    memset(e, 0, sizeof *e);
    char *end1, *end2;
    e->best_ms = strtod(f[4], &end1);
    e->default_ms = strtod(f[5], &end2);
    if (*end1 || *end2 || !(e->best_ms > 0) || !(e->default_ms > 0)) return -1;
    if (strlen(f[0]) >= sizeof e->card || strlen(f[1]) >= sizeof e->signature ||
        strlen(f[2]) >= sizeof e->variant || strlen(f[3]) >= sizeof e->default_variant ||
        strlen(f[6]) >= sizeof e->unit || strlen(f[7]) >= sizeof e->date)
        return -1;
    snprintf(e->card, sizeof e->card, "%s", f[0]);
    snprintf(e->signature, sizeof e->signature, "%s", f[1]);
    snprintf(e->variant, sizeof e->variant, "%s", f[2]);
    snprintf(e->default_variant, sizeof e->default_variant, "%s", f[3]);
    snprintf(e->unit, sizeof e->unit, "%s", f[6]);
    snprintf(e->date, sizeof e->date, "%s", f[7]);
    return 0;
}

int tt_tuning_load(const char *path, tt_tune_entry **out, int *n, char *err, size_t errlen)
{
    *out = NULL;
    *n = 0;
    FILE *f = fopen(path, "r");
    if (!f) return 0; /* nothing tuned yet */
    char line[2048];
    int lineno = 0;
    while (fgets(line, sizeof line, f)) {
        lineno++;
        size_t l = strlen(line);
        if (l && line[l - 1] == '\n') line[--l] = '\0';
        if (!l || line[0] == '#') continue;
        tt_tune_entry e;
        if (parse_entry(line, &e) != 0) {
            fclose(f);
            free(*out);
            *out = NULL;
            *n = 0;
            return tt_errf(err, errlen, "%s:%d: not a tuning entry (card, signature, variant, "
                           "default variant, best ms, default ms, unit, date; tab-separated)",
                           path, lineno);
        }
        *out = tt_xrealloc(*out, (size_t)(*n + 1) * sizeof **out);
        (*out)[(*n)++] = e;
    }
    fclose(f);
    return 0;
}

int tt_tuning_lock(const char *path, char *err, size_t errlen)
{
    char *lock_path = tt_xasprintf("%s.lock", path);
    const int lock = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
    free(lock_path);
    if (lock < 0 || flock(lock, LOCK_EX) != 0) {
        if (lock >= 0) close(lock);
        return tt_errf(err, errlen, "%s: cannot lock the tuning cache: %s", path, strerror(errno));
    }
    return lock;
}

void tt_tuning_unlock(int lock) { close(lock); /* releases the lock */ }

int tt_tuning_store(const char *path, const tt_tune_entry *e, char *err, size_t errlen)
{
    /* read, replace, write under an exclusive lock: two ttgen --tune at once keep both entries */
    const int lock = tt_tuning_lock(path, err, errlen);
    if (lock < 0) return -1;
    const int rc = tt_tuning_store_locked(path, e, err, errlen);
    tt_tuning_unlock(lock);
    return rc;
}

int tt_tuning_store_locked(const char *path, const tt_tune_entry *e, char *err, size_t errlen)
{
    tt_tune_entry *all;
    int n;
    if (tt_tuning_load(path, &all, &n, err, errlen) != 0) return -1;
    tt_buf b = {0};
    tt_buf_printf(&b, "# ttgen --tune: card\tsignature\tvariant\tdefault variant\tbest ms\t"
                      "default ms\ttimed\tdate\n");
    for (int i = 0; i <= n; i++) {
        const tt_tune_entry *x = i < n ? &all[i] : e;
        if (i < n && !strcmp(x->card, e->card) && !strcmp(x->signature, e->signature)) continue;
        tt_buf_printf(&b, "%s\t%s\t%s\t%s\t%.6f\t%.6f\t%s\t%s\n", x->card, x->signature, x->variant,
                      x->default_variant, x->best_ms, x->default_ms, x->unit, x->date);
    }
    free(all);
    const void *parts[] = {b.data};
    const size_t lens[] = {b.len};
    const int rc = tt_write_file_atomic(path, parts, lens, 1, err, errlen);
    tt_buf_free(&b);
    return rc;
}

/* The notes of every tunable kernel of plan (the plan's own heuristic: why). */
static void note_defaults(tt_plan *plan, const tt_tunable *tu, int nt, const char *why)
{
    for (int i = 0; i < plan->n; i++) {
        tt_kernel *k = &plan->kernels[i];
        if (!has_tunables(k, tu, nt)) continue;
        char v[96];
        tt_kernel_variant(k, tu, nt, v, sizeof v);
        snprintf(k->variant, sizeof k->variant, "%.60s: the plan's heuristic (%.170s)", v, why);
    }
}

int tt_plan_build_for_card(const tt_spec *spec, const char *arch, const char *card,
                           const char *tuning_path, tt_plan *plan, char *err, size_t errlen)
{
    if (tt_plan_build(spec, arch, plan, err, errlen) != 0) return -1;
    tt_tunable *tu;
    int nt;
    if (tt_tunables_load(NULL, &tu, &nt, err, errlen) != 0) {
        tt_plan_free(plan);
        return -1;
    }
    const long use = tt_env_long("TT_TUNE", 0, 1, 1);
    tt_tune_entry *entries = NULL;
    int ne = 0;
    char why[256];
    if (!spec->kernels.tune) snprintf(why, sizeof why, "kernels.tune: false");
    else if (!use) snprintf(why, sizeof why, "TT_TUNE=0");
    else if (!card) snprintf(why, sizeof why, "no card named: no GPU here, and no --card");
    else if (!tuning_path) snprintf(why, sizeof why, "no tuning cache");
    else if (tt_tuning_load(tuning_path, &entries, &ne, why, sizeof why) == 0)
        snprintf(why, sizeof why, "not tuned on %s: ttgen --tune", card);
    else /* said once by the caller, and beside each kernel */
        snprintf(plan->warning, sizeof plan->warning, "%s; the plan's heuristics instead", why);
    note_defaults(plan, tu, nt, why);
    if (!spec->kernels.tune || !use || !card || !ne) goto done;

    /* the attention's strategy first (its entry's signature: tt_strategy_signature), then the
     * entries that match the kernels of that strategy's plan, found by their signatures */
    tt_tuning t = {0};
    const tt_tune_entry *strategy = NULL;
    char ssig[320], sserr[256];
    /* (the signature plans both strategies: only where this card has a strategy entry at all) */
    bool any = false;
    for (int e = 0; e < ne && !any; e++)
        any = !strcmp(entries[e].card, card) &&
              !strncmp(entries[e].signature, TT_STRATEGY_OP "|", strlen(TT_STRATEGY_OP "|"));
    if (any && tt_strategy_signature(spec, arch, ssig, sizeof ssig, sserr, sizeof sserr) == 0 && ssig[0])
        for (int e = 0; e < ne && !strategy; e++)
            if (!strcmp(entries[e].card, card) && !strcmp(entries[e].signature, ssig) &&
                tt_variant_parse(entries[e].variant, TT_STRATEGY_OP, &t) == 0)
                strategy = &entries[e];
    if (strategy) {
        tt_plan sp;
        char perr[512];
        if (tt_plan_build_tuned(spec, arch, &t, &sp, perr, sizeof perr) == 0) {
            tt_plan_free(plan);
            *plan = sp;
            note_defaults(plan, tu, nt, why);
        } else { /* signed as planning both: not expected; the cost model decides */
            tt_tuning_free(&t);
            strategy = NULL;
        }
    }
    const tt_tune_entry **hit = tt_xcalloc((size_t)plan->n, sizeof *hit);
    for (int i = 0; i < plan->n; i++) {
        const tt_kernel *k = &plan->kernels[i];
        if (!has_tunables(k, tu, nt)) continue;
        char sig[320], serr[256];
        if (tt_kernel_signature(k, spec, arch, tu, nt, sig, sizeof sig, serr, sizeof serr) != 0)
            continue;
        for (int e = 0; e < ne; e++)
            if (!strcmp(entries[e].card, card) && !strcmp(entries[e].signature, sig) &&
                tt_variant_parse(entries[e].variant, k->op, &t) == 0) {
                hit[i] = &entries[e];
                break;
            }
    }
    if (t.n) {
        tt_plan tuned;
        char terr[512];
        if (tt_plan_build_tuned(spec, arch, &t, &tuned, terr, sizeof terr) != 0) {
            /* an entry the plan no longer accepts: keep the heuristics, and say so */
            snprintf(why, sizeof why, "the tuned variant for %.60s no longer fits: %.150s", card,
                     terr);
            note_defaults(plan, tu, nt, why);
        } else {
            for (int i = 0; i < plan->n; i++) {
                if (!hit[i]) continue;
                for (int j = 0; j < tuned.n; j++) {
                    tt_kernel *k = &tuned.kernels[j];
                    if (strcmp(k->op, plan->kernels[i].op)) continue;
                    const tt_tune_entry *e = hit[i];
                    snprintf(k->variant, sizeof k->variant,
                             "%.40s: tuned on %.40s (%s): %.4f ms against %.4f ms for the "
                             "heuristic's %.40s (%.2fx, timing %.20s)",
                             e->variant, card, e->date, e->best_ms, e->default_ms,
                             e->default_variant, e->default_ms / e->best_ms, e->unit);
                }
            }
            for (int j = 0; j < tuned.n; j++) /* the untuned ones keep their notes */
                for (int i = 0; i < plan->n; i++)
                    if (!hit[i] && !tuned.kernels[j].variant[0] &&
                        !strcmp(tuned.kernels[j].op, plan->kernels[i].op))
                        snprintf(tuned.kernels[j].variant, sizeof tuned.kernels[j].variant, "%s",
                                 plan->kernels[i].variant);
            tt_plan_free(plan);
            *plan = tuned;
        }
    }
    const bool mat = strategy && tt_plan_materialized(plan);
    for (int i = 0; strategy && i < plan->n; i++) {
        tt_kernel *k = &plan->kernels[i];
        if (!k->strategy[0]) continue;
        /* a strategy's entry: default_variant and default_ms are the other strategy's */
        snprintf(k->strategy, sizeof k->strategy,
                 "%s: tuned on %.40s (%s): %.4f ms a step against %.4f ms %s (%.2fx; %.48s)",
                 mat ? "materialized" : "fused", card, strategy->date, strategy->best_ms,
                 strategy->default_ms, mat ? "fused" : "materialized",
                 strategy->default_ms / strategy->best_ms, strategy->unit);
    }
    free(hit);
    tt_tuning_free(&t);
done:
    free(entries);
    free(tu);
    return 0;
}

void tt_tune_today(char out[16])
{
    const time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(out, 16, "%Y-%m-%d", &tm);
}
