/* The strict spec parser: one YAML document (libyaml's document API, for the marks of every node)
 * to tt_spec. One table lists every key with its type, range and kind; the parser, the required-key
 * check and tt_spec_write all read it, so what is accepted and what is written back cannot drift
 * apart. */
#include "spec.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "util.h"

/* Enum fields are stored through an int pointer. */
_Static_assert(sizeof(tt_kind) == sizeof(int), "enum size");
_Static_assert(sizeof(tt_position) == sizeof(int), "enum size");
_Static_assert(sizeof(tt_precision) == sizeof(int), "enum size");
_Static_assert(sizeof(tt_schedule) == sizeof(int), "enum size");
_Static_assert(sizeof(tt_attention) == sizeof(int), "enum size");

/* ---- the schema ---------------------------------------------------------------------------- */

typedef enum {
    V_INT,     /* int field */
    V_LONG,    /* long field */
    V_U64,     /* uint64_t field, 0 to UINT64_MAX */
    V_FLOAT,   /* double field */
    V_BOOL,    /* bool field */
    V_ENUM,    /* int-sized enum field; .names are the spellings, index = value */
    V_PATH,    /* char * field, resolved against the spec's folder */
    V_ARCH,    /* char[TT_ARCH_MAX]: auto or sm_NN[N][a], sm_80 or newer */
    V_VOCAB,   /* long: an integer, or `data` (stored as 0) */
    V_CUTOFFS, /* model.cutoffs / n_cutoffs / cutoffs_line / cutoffs_col */
    V_BETAS,   /* train.beta1, train.beta2 as a list of two */
    V_MAP,     /* a nested mapping described by .sub */
} vtype;

typedef enum { ALL_KINDS, ONLY_TENSORIZED, ONLY_TXL } kind_scope;

typedef struct section section;
typedef struct ctx ctx;

typedef struct {
    const char *name;
    vtype type;
    size_t off; /* of the field in tt_spec */
    bool required;
    bool first; /* read before the other keys of its mapping (model.kind) */
    kind_scope scope;
    long ilo, ihi;            /* integer range, inclusive; ihi == LONG_MAX: no upper bound */
    double flo, fhi;          /* float range; fhi == INFINITY: no upper bound */
    bool flo_open, fhi_open;  /* bound excluded */
    const char *const *names; /* V_ENUM, NULL-terminated */
    const section *sub;       /* V_MAP */
    const char *alias;        /* another name for the key, answered with "did you mean" */
} key_desc;

struct section {
    const char *path; /* "model", "train.optimizer"; "" for the top level */
    const key_desc *keys;
    int n;
    int (*check)(ctx *c); /* consistency checks once the whole mapping has been read */
};

static const char *const kind_names[] = {"tensorized", "transformer-xl", NULL};
static const char *const position_names[] = {"none", "key", NULL};
static const char *const attention_names[] = {"auto", "fused", "materialized", NULL};
static const char *const precision_names[] = {"fp32", "tf32", "bf16", NULL};
static const char *const schedule_names[] = {"cosine", "inverse-sqrt", NULL};
static const char *const optimizer_names[] = {"adam", NULL};

#define F(member) offsetof(tt_spec, member)
/* A key stored in no field of its own (a mapping, optimizer.name) names `path`: never written to.
 */
#define K(key, vtype, member) .name = key, .type = vtype, .off = F(member)
#define COUNT(a) ((int)(sizeof(a) / sizeof((a)[0])))
#define NO_MAX LONG_MAX
#define MAX_CUTOFF 99999999L /* below the largest vocab, 100000000 */

static int model_check(ctx *c);
static int train_check(ctx *c);
static int root_check(ctx *c);

static const key_desc adaptive_keys[] = {
    {K("cutoffs", V_CUTOFFS, model.cutoffs), .required = true, .ilo = 1, .ihi = MAX_CUTOFF},
    {K("div_val", V_INT, model.div_val), .ilo = 1, .ihi = 64},
};
static const section adaptive_sec = {"model.adaptive", adaptive_keys, COUNT(adaptive_keys), NULL};

static const key_desc model_keys[] = {
    {K("kind", V_ENUM, model.kind), .required = true, .first = true, .names = kind_names},
    {K("vocab", V_VOCAB, model.vocab), .ilo = 2, .ihi = 100000000},
    {K("d_model", V_INT, model.d_model), .required = true, .ilo = 1, .ihi = 65536},
    {K("layers", V_INT, model.layers), .required = true, .ilo = 1, .ihi = 1024},
    {K("seq_len", V_INT, model.seq_len), .required = true, .ilo = 1, .ihi = 8192},
    {K("d_inner", V_INT, model.d_inner), .required = true, .ilo = 1, .ihi = 1048576},
    {K("dropout", V_FLOAT, model.dropout), .flo = 0, .fhi = 1, .fhi_open = true},
    {K("tie_weights", V_BOOL, model.tie_weights)},
    {K("adaptive", V_MAP, path), .sub = &adaptive_sec},
    {K("rank", V_INT, model.rank), .required = true, .scope = ONLY_TENSORIZED, .ilo = 1,
     .ihi = 1024},
    {K("cores", V_INT, model.cores), .scope = ONLY_TENSORIZED, .ilo = 1, .ihi = 64},
    {K("causal", V_BOOL, model.causal), .scope = ONLY_TENSORIZED},
    {K("position", V_ENUM, model.position), .scope = ONLY_TENSORIZED, .names = position_names},
    {K("n_head", V_INT, model.n_head), .required = true, .scope = ONLY_TXL, .ilo = 1, .ihi = 1024},
    {K("d_head", V_INT, model.d_head), .required = true, .scope = ONLY_TXL, .ilo = 1, .ihi = 4096},
    {K("mem_len", V_INT, model.mem_len), .scope = ONLY_TXL, .ilo = 0, .ihi = 8192},
    {K("clamp_len", V_INT, model.clamp_len), .scope = ONLY_TXL, .ilo = 0, .ihi = 1000000},
    {K("dropatt", V_FLOAT, model.dropatt), .scope = ONLY_TXL, .flo = 0, .fhi = 1, .fhi_open = true},
};
static const section model_sec = {"model", model_keys, COUNT(model_keys), model_check};
_Static_assert(COUNT(model_keys) <= 32, "parse_mapping's present[] holds 32 keys");

static const key_desc optimizer_keys[] = {
    {K("name", V_ENUM, path), .names = optimizer_names}, /* one choice: checked, not stored */
    {K("lr", V_FLOAT, train.lr), .flo = 0, .flo_open = true, .fhi = 1},
    {K("betas", V_BETAS, train.beta1), .flo = 0, .fhi = 1, .fhi_open = true},
    {K("eps", V_FLOAT, train.eps), .flo = 0, .flo_open = true, .fhi = INFINITY},
    {K("weight_decay", V_FLOAT, train.weight_decay), .flo = 0, .fhi = INFINITY},
};
static const section optimizer_sec = {"train.optimizer", optimizer_keys, COUNT(optimizer_keys),
                                      NULL};

static const key_desc schedule_keys[] = {
    {K("kind", V_ENUM, train.schedule), .names = schedule_names},
    {K("warmup", V_LONG, train.warmup), .ilo = 0, .ihi = NO_MAX},
    {K("min_lr", V_FLOAT, train.min_lr), .flo = 0, .fhi = INFINITY},
};
static const section schedule_sec = {"train.schedule", schedule_keys, COUNT(schedule_keys), NULL};

static const key_desc checkpoint_keys[] = {
    {K("dir", V_PATH, train.checkpoint_dir), .required = true},
    {K("interval", V_LONG, train.checkpoint_interval), .ilo = 0, .ihi = NO_MAX},
};
static const section checkpoint_sec = {"train.checkpoint", checkpoint_keys, COUNT(checkpoint_keys),
                                       NULL};

static const key_desc train_keys[] = {
    {K("batch", V_INT, train.batch), .ilo = 1, .ihi = 65536},
    {K("steps", V_LONG, train.steps), .ilo = 1, .ihi = 1000000000000L},
    {K("optimizer", V_MAP, path), .sub = &optimizer_sec},
    {K("schedule", V_MAP, path), .sub = &schedule_sec},
    {K("clip", V_FLOAT, train.clip), .flo = 0, .fhi = INFINITY},
    {K("label_smoothing", V_FLOAT, train.label_smoothing), .flo = 0, .fhi = 1, .fhi_open = true},
    {K("seed", V_U64, train.seed)},
    {K("precision", V_ENUM, train.precision), .names = precision_names},
    {K("eval_interval", V_LONG, train.eval_interval), .ilo = 0, .ihi = NO_MAX},
    {K("checkpoint", V_MAP, path), .sub = &checkpoint_sec},
};
static const section train_sec = {"train", train_keys, COUNT(train_keys), train_check};

static const key_desc data_keys[] = {
    {K("train", V_PATH, data.train)},
    {K("valid", V_PATH, data.valid)},
    {K("test", V_PATH, data.test)},
};
static const section data_sec = {"data", data_keys, COUNT(data_keys), NULL};

static const key_desc kernels_keys[] = {
    {K("arch", V_ARCH, kernels.arch)},
    {K("tune", V_BOOL, kernels.tune)},
    {K("attention", V_ENUM, kernels.attention), .scope = ONLY_TENSORIZED, .names = attention_names},
    {K("attention_tiles", V_INT, kernels.attention_tiles), .scope = ONLY_TENSORIZED, .ilo = 0,
     .ihi = 8192},
};
static const section kernels_sec = {"kernels", kernels_keys, COUNT(kernels_keys), NULL};

/* The same ranges as the model's seq_len, mem_len and clamp_len. */
static const key_desc eval_keys[] = {
    {K("tgt_len", V_INT, eval.tgt_len), .ilo = 1, .ihi = 8192, .alias = "seq_len"},
    {K("mem_len", V_INT, eval.mem_len), .scope = ONLY_TXL, .ilo = 0, .ihi = 8192},
    {K("clamp_len", V_INT, eval.clamp_len), .scope = ONLY_TXL, .ilo = 0, .ihi = 1000000},
};
static const section eval_sec = {"eval", eval_keys, COUNT(eval_keys), NULL};

/* model is read first: which keys eval may hold, and train's check against model.adaptive, depend
 * on it wherever it stands in the file. */
static const key_desc root_keys[] = {
    {K("model", V_MAP, path), .required = true, .first = true, .sub = &model_sec},
    {K("train", V_MAP, path), .sub = &train_sec},
    {K("eval", V_MAP, path), .sub = &eval_sec},
    {K("data", V_MAP, path), .sub = &data_sec},
    {K("kernels", V_MAP, path), .sub = &kernels_sec},
};
static const section root_sec = {"", root_keys, COUNT(root_keys), root_check};

static void set_defaults(tt_spec *s)
{
    tt_model_spec *m = &s->model;
    m->vocab = 0;
    m->dropout = 0;
    m->tie_weights = true;
    m->n_cutoffs = 0;
    m->div_val = 1;
    m->cores = 1;
    m->causal = true;
    m->position = TT_POS_NONE;
    tt_train_spec *t = &s->train;
    t->batch = 32;
    t->steps = 10000;
    t->lr = 2.5e-4;
    t->beta1 = 0.9;
    t->beta2 = 0.999;
    t->eps = 1e-8;
    t->weight_decay = 0;
    t->schedule = TT_SCHED_COSINE;
    t->warmup = 0;
    t->min_lr = 0;
    t->clip = 0.25;
    t->label_smoothing = 0;
    t->seed = 1;
    t->precision = TT_PREC_FP32;
    t->eval_interval = 1000;
    t->checkpoint_interval = 0;
    /* -1: not given, root_check takes the model's value once every section has been read */
    s->eval.tgt_len = s->eval.mem_len = s->eval.clamp_len = -1;
    strcpy(s->kernels.arch, "auto");
    s->kernels.tune = true;
}

/* ---- small helpers ------------------------------------------------------------------------- */

static char *dup_n(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    if (d) {
        if (n)
            memcpy(d, s, n);
        d[n] = '\0';
    }
    return d;
}

static char *dup_str(const char *s)
{
    return dup_n(s, strlen(s));
}

/* The folder of a path: "specs/ptb.yaml" -> "specs", "ptb.yaml" -> ".", "/ptb.yaml" -> "/". */
static char *dir_of(const char *path)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/')
        n--;
    while (n > 0 && path[n - 1] != '/')
        n--;
    if (n == 0)
        return dup_str(".");
    while (n > 1 && path[n - 1] == '/')
        n--;
    return dup_n(path, n);
}

/* dir + "/" + value; absolute values, and every value when dir is ".", are kept as they are (so
 * that a written spec read back with dir "." names the same files). */
static char *resolve(const char *dir, const char *value)
{
    if (value[0] == '/' || dir == NULL || dir[0] == '\0' || strcmp(dir, ".") == 0)
        return dup_str(value);
    size_t dl = strlen(dir), vl = strlen(value);
    bool slash = dir[dl - 1] == '/';
    char *r = malloc(dl + !slash + vl + 1);
    if (r) {
        memcpy(r, dir, dl);
        if (!slash)
            r[dl] = '/';
        memcpy(r + dl + !slash, value, vl + 1);
    }
    return r;
}

/* Edit distance with adjacent transpositions (optimal string alignment), for "did you mean". */
static size_t edit_distance(const char *a, size_t n, const char *b)
{
    enum { MAXLEN = 32 };
    size_t m = strlen(b);
    if (n >= MAXLEN || m >= MAXLEN)
        return n > m ? n : m;
    size_t d[MAXLEN + 1][MAXLEN + 1];
    for (size_t i = 0; i <= n; i++)
        d[i][0] = i;
    for (size_t j = 0; j <= m; j++)
        d[0][j] = j;
    for (size_t i = 1; i <= n; i++)
        for (size_t j = 1; j <= m; j++) {
            size_t best = d[i - 1][j - 1] + (a[i - 1] != b[j - 1]);
            if (d[i - 1][j] + 1 < best)
                best = d[i - 1][j] + 1;
            if (d[i][j - 1] + 1 < best)
                best = d[i][j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] &&
                d[i - 2][j - 2] + 1 < best)
                best = d[i - 2][j - 2] + 1;
            d[i][j] = best;
        }
    return d[n][m];
}

/* Shortest "%.Ng" that reads back as the same double (at most %.17g, which always does). */
static void format_double(double v, char *buf, size_t size)
{
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, size, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            return;
    }
}

/* ---- diagnostics --------------------------------------------------------------------------- */

struct ctx {
    const char *name, *dir;
    char *err;
    size_t errlen;
    yaml_document_t *doc;
    tt_spec *spec;
    bool kind_known; /* model.kind has been read */
    struct {
        char path[64];
        const yaml_node_t *key, *val;
    } seen[64]; /* every key read so far, for the consistency checks' marks */
    int n_seen;
};

static int fail_at(const char *name, char *err, size_t errlen, int line, int col, const char *fmt,
                   va_list ap)
{
    if (err && errlen > 0) {
        int n = snprintf(err, errlen, "%s:%d:%d: ", name, line, col);
        if (n >= 0 && (size_t)n < errlen)
            vsnprintf(err + n, errlen - (size_t)n, fmt, ap);
    }
    return -1;
}

static int fail(ctx *c, const yaml_mark_t *mark, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_at(c->name, c->err, c->errlen, (int)mark->line + 1, (int)mark->column + 1, fmt, ap);
    va_end(ap);
    return -1;
}

static int fail_line(const char *name, char *err, size_t errlen, int line, int col, const char *fmt,
                     ...)
{
    va_list ap;
    va_start(ap, fmt);
    fail_at(name, err, errlen, line, col, fmt, ap);
    va_end(ap);
    return -1;
}

/* Text for a message: at most 40 characters, control characters shown as '?'. */
static const char *shown(const char *s, size_t n, char *buf, size_t size)
{
    size_t max = size - 4 < 40 ? size - 4 : 40, o = 0;
    for (size_t i = 0; i < n && o < max; i++)
        buf[o++] = (unsigned char)s[i] < 0x20 || s[i] == 0x7f ? '?' : s[i];
    if (n > max)
        memcpy(buf + o, "...", 3), o += 3;
    buf[o] = '\0';
    return buf;
}

static const char *scalar(const yaml_node_t *n)
{
    return (const char *)n->data.scalar.value;
}
static size_t scalar_len(const yaml_node_t *n)
{
    return n->data.scalar.length;
}
static bool is_plain(const yaml_node_t *n)
{
    return n->type == YAML_SCALAR_NODE && n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE;
}
static bool scalar_is(const yaml_node_t *n, const char *s)
{
    return n->type == YAML_SCALAR_NODE && scalar_len(n) == strlen(s) &&
           memcmp(scalar(n), s, scalar_len(n)) == 0;
}

/* What a node is, for "expected X, got Y". Quoted scalars count as strings where quoted_is_ok is
 * false (numbers, booleans), and show their text otherwise. */
static const char *describe(const yaml_node_t *n, bool quoted_is_ok, char *buf, size_t size)
{
    if (n->type == YAML_MAPPING_NODE)
        return "a mapping";
    if (n->type == YAML_SEQUENCE_NODE)
        return "a list";
    if (!is_plain(n) && !quoted_is_ok)
        return "a quoted string";
    if (scalar_len(n) == 0)
        return is_plain(n) ? "an empty value" : "an empty string";
    char text[48];
    snprintf(buf, size, "'%s'", shown(scalar(n), scalar_len(n), text, sizeof text));
    return buf;
}

static int type_error(ctx *c, const char *path, const yaml_node_t *n, const char *expected,
                      bool quoted_is_ok)
{
    char buf[64];
    return fail(c, &n->start_mark, "%s: expected %s, got %s", path, expected,
                describe(n, quoted_is_ok, buf, sizeof buf));
}

static int range_error(ctx *c, const char *path, const yaml_node_t *n, const char *range)
{
    char text[48];
    return fail(c, &n->start_mark, "%s: %s is out of range (%s)", path,
                shown(scalar(n), scalar_len(n), text, sizeof text), range);
}

static const yaml_node_t *seen_value(const ctx *c, const char *path)
{
    for (int i = 0; i < c->n_seen; i++)
        if (strcmp(c->seen[i].path, path) == 0)
            return c->seen[i].val;
    return NULL;
}

/* ---- scalars ------------------------------------------------------------------------------- */

/* Optional '-' then decimal digits: the only integer spelling. */
static bool integer_syntax(const yaml_node_t *n)
{
    const char *s = scalar(n);
    size_t len = scalar_len(n), i = s[0] == '-';
    if (i == len)
        return false;
    for (; i < len; i++)
        if (s[i] < '0' || s[i] > '9')
            return false;
    return true;
}

static int get_long(ctx *c, const char *path, const yaml_node_t *n, long lo, long hi, long *out)
{
    if (n->type != YAML_SCALAR_NODE || !is_plain(n) || !integer_syntax(n))
        return type_error(c, path, n, "an integer", false);
    errno = 0;
    long v = strtol(scalar(n), NULL, 10);
    if (errno == ERANGE || v < lo || v > hi) {
        char range[64];
        if (hi == NO_MAX)
            snprintf(range, sizeof range, "%ld or more", lo);
        else
            snprintf(range, sizeof range, "%ld to %ld", lo, hi);
        return range_error(c, path, n, range);
    }
    *out = v;
    return 0;
}

static int get_u64(ctx *c, const char *path, const yaml_node_t *n, uint64_t *out)
{
    if (n->type != YAML_SCALAR_NODE || !is_plain(n) || !integer_syntax(n))
        return type_error(c, path, n, "an integer", false);
    const char *s = scalar(n);
    bool negative = s[0] == '-' && strspn(s + 1, "0") != scalar_len(n) - 1; /* "-0" is 0 */
    errno = 0;
    unsigned long long v = strtoull(s[0] == '-' ? s + 1 : s, NULL, 10);
    if (negative || errno == ERANGE || v > UINT64_MAX) {
        char range[64];
        snprintf(range, sizeof range, "0 to %" PRIu64, UINT64_MAX);
        return range_error(c, path, n, range);
    }
    *out = (uint64_t)v;
    return 0;
}

static void float_range_text(const key_desc *d, char *buf, size_t size)
{
    char lo[32], hi[32];
    format_double(d->flo, lo, sizeof lo);
    format_double(d->fhi, hi, sizeof hi);
    int n =
        d->flo_open ? snprintf(buf, size, "above %s", lo) : snprintf(buf, size, "%s or more", lo);
    if (isfinite(d->fhi) && n >= 0 && (size_t)n < size)
        snprintf(buf + n, size - (size_t)n, d->fhi_open ? ", below %s" : ", at most %s", hi);
}

static int get_double(ctx *c, const char *path, const yaml_node_t *n, const key_desc *d,
                      double *out)
{
    if (n->type != YAML_SCALAR_NODE || !is_plain(n))
        return type_error(c, path, n, "a number", false);
    /* Decimal notation only: strtod alone would also take hex, inf and nan. */
    const char *s = scalar(n);
    size_t len = scalar_len(n);
    bool digit = false, ok = len > 0;
    for (size_t i = 0; i < len && ok; i++) {
        digit |= s[i] >= '0' && s[i] <= '9';
        ok = strchr("0123456789.eE+-", s[i]) != NULL && s[i] != '\0';
    }
    char *end;
    errno = 0;
    double v = ok && digit ? strtod(s, &end) : 0;
    if (!ok || !digit || end != s + len)
        return type_error(c, path, n, "a number", false);
    if (errno == ERANGE && fabs(v) < 1.0) { /* underflow: 1e-400 would be 0 (or lose digits) */
        char text[48];
        return fail(c, &n->start_mark, "%s: %s is too small for a double (it would be %g): "
                    "write 0 or a larger number", path, shown(s, len, text, sizeof text), v);
    }
    bool in = isfinite(v) && (d->flo_open ? v > d->flo : v >= d->flo) &&
              (d->fhi_open ? v < d->fhi : v <= d->fhi);
    if (!in) {
        char range[64];
        float_range_text(d, range, sizeof range);
        return range_error(c, path, n, range);
    }
    *out = v;
    return 0;
}

static int get_bool(ctx *c, const char *path, const yaml_node_t *n, bool *out)
{
    if (is_plain(n) && (scalar_is(n, "true") || scalar_is(n, "false"))) {
        *out = scalar_is(n, "true");
        return 0;
    }
    return type_error(c, path, n, "true or false", false);
}

static int get_enum(ctx *c, const char *path, const yaml_node_t *n, const char *const *names,
                    int *out)
{
    if (n->type == YAML_SCALAR_NODE)
        for (int i = 0; names[i]; i++)
            if (scalar_is(n, names[i])) {
                *out = i;
                return 0;
            }
    char list[96] = "", buf[64];
    size_t o = 0;
    for (int i = 0; names[i]; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i ? ", " : "", names[i]);
    return fail(c, &n->start_mark, "%s: expected %s%s; got %s", path, names[1] ? "one of " : "",
                list, describe(n, true, buf, sizeof buf));
}

/* Whether the UTF-8 text at p (libyaml's, so valid) starts with a control character: C0, DEL,
 * C1 (U+0080..U+009F: NEL, U+0085, is a line break to YAML) or the line and paragraph
 * separators U+2028 and U+2029 (line breaks too). */
static bool control_at(const unsigned char *p)
{
    return p[0] < 0x20 || p[0] == 0x7f || (p[0] == 0xc2 && p[1] >= 0x80 && p[1] <= 0x9f) ||
           (p[0] == 0xe2 && p[1] == 0x80 && (p[2] == 0xa8 || p[2] == 0xa9));
}

/* A non-empty string on one line (quoted or not): no control characters, so that it is written
 * back (tt_spec_text) as it was read. */
static int get_string(ctx *c, const char *path, const yaml_node_t *n, const char *what,
                      const char **out)
{
    if (n->type != YAML_SCALAR_NODE || scalar_len(n) == 0)
        return type_error(c, path, n, what, true);
    for (size_t i = 0; i < scalar_len(n); i++)
        if (control_at((const unsigned char *)scalar(n) + i))
            return fail(c, &n->start_mark, "%s: %s cannot contain control characters", path, what);
    *out = scalar(n);
    return 0;
}

/* auto, or sm_ + two or three digits (no leading zero) + optional 'a', at least sm_80. */
static int get_arch(ctx *c, const char *path, const yaml_node_t *n, char *out)
{
    bool ok = false;
    if (n->type == YAML_SCALAR_NODE && scalar_is(n, "auto")) {
        ok = true;
    } else if (n->type == YAML_SCALAR_NODE && scalar_len(n) >= 5 &&
               memcmp(scalar(n), "sm_", 3) == 0) {
        const char *s = scalar(n) + 3;
        size_t digits = strspn(s, "0123456789"), rest = scalar_len(n) - 3 - digits;
        ok = (digits == 2 || digits == 3) && s[0] != '0' && atoi(s) >= 80 &&
             (rest == 0 || (rest == 1 && s[digits] == 'a'));
    }
    if (!ok) {
        char buf[64];
        return fail(c, &n->start_mark, "%s: expected auto or sm_80 or newer (e.g. sm_90), got %s",
                    path, describe(n, true, buf, sizeof buf));
    }
    memcpy(out, scalar(n), scalar_len(n) + 1);
    return 0;
}

/* ---- lists --------------------------------------------------------------------------------- */

static int item_count(const yaml_node_t *n)
{
    return (int)(n->data.sequence.items.top - n->data.sequence.items.start);
}

static const yaml_node_t *item(const ctx *c, const yaml_node_t *n, int i)
{
    return yaml_document_get_node(c->doc, n->data.sequence.items.start[i]);
}

static int get_cutoffs(ctx *c, const char *path, const yaml_node_t *n, const key_desc *d)
{
    tt_model_spec *m = &c->spec->model;
    if (n->type != YAML_SEQUENCE_NODE)
        return type_error(c, path, n, "a list of integers", false);
    int count = item_count(n);
    if (count == 0)
        return fail(c, &n->start_mark, "%s: expected at least one cutoff", path);
    if (count > TT_MAX_CUTOFFS)
        return fail(c, &n->start_mark, "%s: %d cutoffs, at most %d are supported", path, count,
                    TT_MAX_CUTOFFS);
    for (int i = 0; i < count; i++) {
        const yaml_node_t *e = item(c, n, i);
        long v;
        if (get_long(c, path, e, d->ilo, d->ihi, &v))
            return -1;
        if (i > 0 && v <= m->cutoffs[i - 1])
            return fail(c, &e->start_mark, "%s: %ld is not above the previous cutoff %ld", path, v,
                        m->cutoffs[i - 1]);
        m->cutoffs[i] = v;
    }
    m->n_cutoffs = count;
    m->cutoffs_line = (int)n->start_mark.line + 1;
    m->cutoffs_col = (int)n->start_mark.column + 1;
    return 0;
}

static int get_betas(ctx *c, const char *path, const yaml_node_t *n, const key_desc *d)
{
    if (n->type != YAML_SEQUENCE_NODE)
        return type_error(c, path, n, "a list of two numbers", false);
    if (item_count(n) != 2)
        return fail(c, &n->start_mark, "%s: expected a list of two numbers, got %d", path,
                    item_count(n));
    double b[2];
    for (int i = 0; i < 2; i++) {
        const yaml_node_t *e = item(c, n, i);
        if (get_double(c, path, e, d, &b[i]))
            return -1;
    }
    c->spec->train.beta1 = b[0];
    c->spec->train.beta2 = b[1];
    return 0;
}

/* ---- mappings ------------------------------------------------------------------------------ */

static int parse_mapping(ctx *c, const section *sec, const yaml_node_t *n);

static int parse_value(ctx *c, const key_desc *d, const char *path, const yaml_node_t *v)
{
    void *field = (char *)c->spec + d->off;
    long l = 0;
    int e = 0;
    const char *s = "";
    switch (d->type) {
    case V_INT:
        if (get_long(c, path, v, d->ilo, d->ihi, &l))
            return -1;
        *(int *)field = (int)l;
        return 0;
    case V_LONG:
        return get_long(c, path, v, d->ilo, d->ihi, (long *)field);
    case V_U64:
        return get_u64(c, path, v, (uint64_t *)field);
    case V_FLOAT:
        return get_double(c, path, v, d, (double *)field);
    case V_BOOL:
        return get_bool(c, path, v, (bool *)field);
    case V_ENUM:
        if (get_enum(c, path, v, d->names, &e))
            return -1;
        if (d->off != F(path))
            *(int *)field = e;
        return 0;
    case V_PATH:
        if (get_string(c, path, v, "a path", &s))
            return -1;
        free(*(char **)field);
        if ((*(char **)field = resolve(c->dir, s)) == NULL)
            return fail(c, &v->start_mark, "%s: out of memory", path);
        return 0;
    case V_ARCH:
        return get_arch(c, path, v, (char *)field);
    case V_VOCAB:
        if (is_plain(v) && scalar_is(v, "data")) {
            *(long *)field = 0;
            return 0;
        }
        if (v->type != YAML_SCALAR_NODE || !is_plain(v) || !integer_syntax(v))
            return type_error(c, path, v, "an integer or data", false);
        return get_long(c, path, v, d->ilo, d->ihi, (long *)field);
    case V_CUTOFFS:
        return get_cutoffs(c, path, v, d);
    case V_BETAS:
        return get_betas(c, path, v, d);
    case V_MAP:
        if (v->type != YAML_MAPPING_NODE)
            return type_error(c, path, v, "a mapping", true);
        return parse_mapping(c, d->sub, v);
    }
    return -1;
}

static bool in_scope(const ctx *c, const key_desc *d)
{
    if (d->scope == ALL_KINDS)
        return true;
    if (!c->kind_known)
        return false;
    return (c->spec->model.kind == TT_KIND_TENSORIZED) == (d->scope == ONLY_TENSORIZED);
}

static int find_key(const section *sec, const yaml_node_t *k)
{
    for (int i = 0; i < sec->n; i++)
        if (scalar_is(k, sec->keys[i].name))
            return i;
    return -1;
}

static int unknown_key(ctx *c, const section *sec, const yaml_node_t *k)
{
    char text[48];
    shown(scalar(k), scalar_len(k), text, sizeof text);
    if (sec->path[0] == '\0')
        return fail(c, &k->start_mark,
                    "unknown section '%s' (expected model, train, eval, data, kernels)", text);
    const char *best = NULL;
    size_t best_d = 3;
    for (int i = 0; i < sec->n; i++)
        if (sec->keys[i].alias && scalar_is(k, sec->keys[i].alias))
            best = sec->keys[i].name, best_d = 0;
    for (int i = 0; i < sec->n; i++) {
        size_t dist = edit_distance(scalar(k), scalar_len(k), sec->keys[i].name);
        if (dist < best_d && dist < scalar_len(k)) /* a one-letter key is no hint */
            best = sec->keys[i].name, best_d = dist;
    }
    if (best)
        return fail(c, &k->start_mark, "unknown key '%s' in %s (did you mean '%s'?)", text,
                    sec->path, best);
    return fail(c, &k->start_mark, "unknown key '%s' in %s", text, sec->path);
}

static int read_key(ctx *c, const key_desc *d, const char *path, const yaml_node_t *k,
                    const yaml_node_t *v)
{
    if (c->n_seen < COUNT(c->seen)) {
        snprintf(c->seen[c->n_seen].path, sizeof c->seen[0].path, "%s", path);
        c->seen[c->n_seen].key = k;
        c->seen[c->n_seen].val = v;
        c->n_seen++;
    }
    return parse_value(c, d, path, v);
}

static void key_path(const section *sec, const key_desc *d, char *buf, size_t size)
{
    if (sec->path[0])
        snprintf(buf, size, "%s.%s", sec->path, d->name);
    else
        snprintf(buf, size, "%s", d->name);
}

/* Keys in file order: name, duplicate, kind, value. A key marked `first` (model.kind) is read
 * before the others since what they may be depends on it. Then required keys, then the section's
 * checks. */
static int parse_mapping(ctx *c, const section *sec, const yaml_node_t *n)
{
    const bool root = sec->path[0] == '\0';
    const yaml_node_pair_t *pairs = n->data.mapping.pairs.start;
    const int count = (int)(n->data.mapping.pairs.top - pairs);
    bool present[32] = {false}; /* by key index; model_keys is the longest table */
    int first_pair = -1;
    char path[64];

    for (int i = 0; i < sec->n && first_pair < 0; i++) {
        const key_desc *d = &sec->keys[i];
        if (!d->first)
            continue;
        for (int p = 0; p < count; p++) {
            const yaml_node_t *k = yaml_document_get_node(c->doc, pairs[p].key);
            if (k->type == YAML_SCALAR_NODE && scalar_is(k, d->name)) {
                key_path(sec, d, path, sizeof path);
                if (read_key(c, d, path, k, yaml_document_get_node(c->doc, pairs[p].value)))
                    return -1;
                first_pair = p;
                c->kind_known = true;
                break;
            }
        }
    }

    for (int p = 0; p < count; p++) {
        const yaml_node_t *k = yaml_document_get_node(c->doc, pairs[p].key);
        const yaml_node_t *v = yaml_document_get_node(c->doc, pairs[p].value);
        if (k->type != YAML_SCALAR_NODE) {
            char buf[64];
            if (root)
                return fail(c, &k->start_mark, "expected a section name, got %s",
                            describe(k, true, buf, sizeof buf));
            return fail(c, &k->start_mark, "%s: expected a key name, got %s", sec->path,
                        describe(k, true, buf, sizeof buf));
        }
        int i = find_key(sec, k);
        if (i < 0)
            return unknown_key(c, sec, k);
        const key_desc *d = &sec->keys[i];
        if (present[i]) {
            if (root)
                return fail(c, &k->start_mark, "duplicate section '%s'", d->name);
            return fail(c, &k->start_mark, "duplicate key '%s' in %s", d->name, sec->path);
        }
        present[i] = true;
        key_path(sec, d, path, sizeof path);
        if (d->scope != ALL_KINDS && c->kind_known && !in_scope(c, d))
            return fail(c, &k->start_mark, "%s: applies only to kind: %s", path,
                        d->scope == ONLY_TENSORIZED ? "tensorized" : "transformer-xl");
        if (p != first_pair && read_key(c, d, path, k, v))
            return -1;
    }

    for (int i = 0; i < sec->n; i++) {
        const key_desc *d = &sec->keys[i];
        if (!d->required || present[i] || (d->scope != ALL_KINDS && !in_scope(c, d)))
            continue;
        if (root)
            return fail_line(c->name, c->err, c->errlen, 1, 1, "missing required section '%s'",
                             d->name);
        return fail(c, &n->start_mark, "%s: missing required key '%s'", sec->path, d->name);
    }
    return sec->check ? sec->check(c) : 0;
}

/* ---- consistency checks -------------------------------------------------------------------- */

static const yaml_mark_t *mark_of(const ctx *c, const char *path)
{
    const yaml_node_t *n = seen_value(c, path);
    static const yaml_mark_t start = {0, 0, 0};
    return n ? &n->start_mark : &start;
}

static int model_check(ctx *c)
{
    const tt_model_spec *m = &c->spec->model;
    const yaml_node_t *cut = seen_value(c, "model.adaptive.cutoffs");
    if (m->vocab > 0 && cut)
        for (int i = 0; i < m->n_cutoffs; i++)
            if (m->cutoffs[i] >= m->vocab)
                return fail(c, &item(c, cut, i)->start_mark,
                            "model.adaptive.cutoffs: %ld is not below vocab %ld", m->cutoffs[i],
                            m->vocab);
    /* The last cluster of the adaptive embedding is d_model / div_val^n_cutoffs wide. */
    long long width = m->d_model;
    for (int i = 0; i < m->n_cutoffs && width > 0; i++)
        width /= m->div_val;
    if (m->n_cutoffs > 0 && width < 1)
        return fail(c, mark_of(c, "model.adaptive.div_val"),
                    "model.adaptive.div_val: %d^%d is more than d_model %d (the last cluster would "
                    "have no width)",
                    m->div_val, m->n_cutoffs, m->d_model);
    if (m->kind == TT_KIND_TENSORIZED && m->position == TT_POS_KEY && m->d_model % 2)
        return fail(c, mark_of(c, "model.position"),
                    "model.position: key needs an even d_model (sinusoidal positions), got %d",
                    m->d_model);
    if (m->kind == TT_KIND_TXL && m->d_model % 2)
        return fail(c, mark_of(c, "model.d_model"),
                    "model.d_model: transformer-xl needs an even d_model (sinusoidal positions), "
                    "got %d",
                    m->d_model);
    return 0;
}

static int train_check(ctx *c)
{
    const tt_train_spec *t = &c->spec->train;
    const char *steps_default = seen_value(c, "train.steps") ? "" : " (the default)";
    if (t->schedule == TT_SCHED_INVSQRT && t->warmup < 1) {
        if (seen_value(c, "train.schedule.warmup"))
            return fail(
                c, mark_of(c, "train.schedule.warmup"),
                "train.schedule.warmup: inverse-sqrt needs a warmup of 1 or more steps, got %ld",
                t->warmup);
        return fail(
            c, mark_of(c, "train.schedule.kind"),
            "train.schedule.kind: inverse-sqrt needs train.schedule.warmup (1 or more steps)");
    }
    if (t->schedule == TT_SCHED_COSINE && t->warmup > t->steps)
        return fail(c, mark_of(c, "train.schedule.warmup"),
                    "train.schedule.warmup: %ld is more than train.steps %ld%s", t->warmup,
                    t->steps, steps_default);
    if (t->min_lr > t->lr) {
        char a[32], b[32];
        format_double(t->min_lr, a, sizeof a);
        format_double(t->lr, b, sizeof b);
        return fail(c, mark_of(c, "train.schedule.min_lr"),
                    "train.schedule.min_lr: %s is above train.optimizer.lr %s%s", a, b,
                    seen_value(c, "train.optimizer.lr") ? "" : " (the default)");
    }
    /* Smoothing spreads eps over every word: with an adaptive softmax that needs every tail's
     * logits for every token, which is what the adaptive softmax exists to avoid. */
    if (t->label_smoothing > 0 && c->spec->model.n_cutoffs > 0)
        return fail(c, mark_of(c, "train.label_smoothing"),
                    "train.label_smoothing: not supported with model.adaptive (the smoothing term "
                    "needs every tail's logits); use 0");
    return 0;
}

/* Checks across sections, once the whole document has been read. */
static int root_check(ctx *c)
{
    const tt_model_spec *m = &c->spec->model;
    tt_eval_spec *e = &c->spec->eval;
    if (e->tgt_len < 0)
        e->tgt_len = m->seq_len;
    if (e->mem_len < 0)
        e->mem_len = m->mem_len;
    if (e->clamp_len < 0)
        e->clamp_len = m->clamp_len;
    if (m->kind == TT_KIND_TENSORIZED && e->tgt_len != m->seq_len)
        return fail(c, mark_of(c, "eval.tgt_len"),
                    "eval.tgt_len: %d is not model.seq_len %d (a tensorized model's Wo is tied to "
                    "N); for other evaluation strides use tt-eval's --stride",
                    e->tgt_len, m->seq_len);
    /* a number of tiles the plan would drop without a word */
    const tt_kernels_spec *k = &c->spec->kernels;
    if (m->kind == TT_KIND_TENSORIZED && k->attention_tiles > 0 && !m->causal)
        return fail(c, mark_of(c, "kernels.attention_tiles"),
                    "kernels.attention_tiles: tiles of positions follow the causal mask, and "
                    "model.causal is false");
    if (m->kind == TT_KIND_TENSORIZED && k->attention_tiles > 0 && k->attention == TT_ATTN_FUSED)
        return fail(c, mark_of(c, "kernels.attention_tiles"),
                    "kernels.attention_tiles: only the materialized attention runs in tiles, and "
                    "kernels.attention is fused");
    return 0;
}

/* ---- public -------------------------------------------------------------------------------- */

/* libyaml reader errors carry a byte offset, not a mark. */
static void offset_to_mark(const char *text, size_t len, size_t offset, int *line, int *col)
{
    *line = 1, *col = 1;
    for (size_t i = 0; i < offset && i < len; i++) {
        if (text[i] == '\n')
            *line += 1, *col = 1;
        else if (((unsigned char)text[i] & 0xC0) != 0x80)
            *col += 1;
    }
}

static int yaml_error(const yaml_parser_t *p, const char *text, size_t len, const char *name,
                      char *err, size_t errlen)
{
    const char *problem = p->problem ? p->problem : "invalid YAML";
    int line = (int)p->problem_mark.line + 1, col = (int)p->problem_mark.column + 1;
    switch (p->error) {
    case YAML_MEMORY_ERROR:
        return fail_line(name, err, errlen, 1, 1, "out of memory");
    case YAML_READER_ERROR:
        offset_to_mark(text, len, p->problem_offset, &line, &col);
        return fail_line(name, err, errlen, line, col, "%s", problem);
    case YAML_COMPOSER_ERROR:
        if (p->context) /* "found duplicate anchor; first occurrence" + "second occurrence" */
            return fail_line(name, err, errlen, line, col, "%s at %d:%d; %s", p->context,
                             (int)p->context_mark.line + 1, (int)p->context_mark.column + 1,
                             problem);
        return fail_line(name, err, errlen, line, col, "%s", problem);
    default:
        return fail_line(name, err, errlen, line, col, "%s", problem);
    }
}

static int check_document(ctx *c, const yaml_node_t *root)
{
    if (root == NULL || (is_plain(root) && scalar_len(root) == 0))
        return fail_line(c->name, c->err, c->errlen, 1, 1, "empty spec");
    if (root->type != YAML_MAPPING_NODE)
        return fail(c, &root->start_mark,
                    "a spec is a mapping with sections model, train, eval, data, kernels");
    return parse_mapping(c, &root_sec, root);
}

/* The spec's YAML as events, before it is loaded: a tag (explicit, even one naming the type the
 * value would have anyway: `!!str 40` is refused as `!!map`), or nesting deeper than
 * TT_SPEC_MAX_DEPTH, refused at its place (deep nesting also before libyaml's loader spends time
 * quadratic in it). 0 also on a YAML error, which the loader then reports. */
static int scan_events(const char *text, size_t len, const char *name, char *err, size_t errlen)
{
    yaml_parser_t p;
    if (!yaml_parser_initialize(&p)) return fail_line(name, err, errlen, 1, 1, "out of memory");
    yaml_parser_set_input_string(&p, (const unsigned char *)text, len);
    int depth = 0, rc = 0;
    for (bool done = false; !done && rc == 0;) {
        yaml_event_t e;
        if (!yaml_parser_parse(&p, &e)) break;
        const yaml_char_t *tag = NULL;
        switch (e.type) {
        case YAML_SCALAR_EVENT: tag = e.data.scalar.tag; break;
        case YAML_SEQUENCE_START_EVENT: tag = e.data.sequence_start.tag, depth++; break;
        case YAML_MAPPING_START_EVENT: tag = e.data.mapping_start.tag, depth++; break;
        case YAML_SEQUENCE_END_EVENT:
        case YAML_MAPPING_END_EVENT: depth--; break;
        case YAML_STREAM_END_EVENT: done = true; break;
        default: break;
        }
        const int line = (int)e.start_mark.line + 1, col = (int)e.start_mark.column + 1;
        if (tag) { /* as written (the event's mark is the tag's '!'), else as resolved */
            char shown_tag[48];
            const char *t = (const char *)tag;
            size_t n = strlen(t);
            const size_t at = e.start_mark.index;
            if (at < len && text[at] == '!') { /* text need not end in a NUL */
                t = text + at;
                for (n = 0; at + n < len && !strchr(" \t\r\n,[]{}", t[n]); n++) {}
            }
            rc = fail_line(name, err, errlen, line, col, "YAML tags are not supported, got '%s'",
                           shown(t, n, shown_tag, sizeof shown_tag));
        } else if (depth > TT_SPEC_MAX_DEPTH) {
            rc = fail_line(name, err, errlen, line, col,
                           "nested more than %d levels deep (a spec nests 3)", TT_SPEC_MAX_DEPTH);
        }
        yaml_event_delete(&e);
    }
    yaml_parser_delete(&p);
    return rc;
}

int tt_spec_parse(const char *text, size_t len, const char *name, const char *dir, tt_spec *spec,
                  char *err, size_t errlen)
{
    if (err && errlen)
        err[0] = '\0';
    memset(spec, 0, sizeof *spec);
    name = name ? name : "spec";
    dir = dir && dir[0] ? dir : ".";
    spec->path = dup_str(name);
    spec->dir = dup_str(dir);
    spec->text = dup_n(text, len);
    spec->text_len = len;
    if (!spec->path || !spec->dir || !spec->text) {
        tt_spec_free(spec);
        return fail_line(name, err, errlen, 1, 1, "out of memory");
    }
    set_defaults(spec);
    if (scan_events(text, len, name, err, errlen) != 0) {
        tt_spec_free(spec);
        return -1;
    }

    yaml_parser_t parser;
    yaml_document_t doc, extra;
    bool have_doc = false, have_extra = false;
    int rc = -1;
    if (!yaml_parser_initialize(&parser)) {
        tt_spec_free(spec);
        return fail_line(name, err, errlen, 1, 1, "out of memory");
    }
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    /* The file is read as YAML (both documents, so that a second one is an error) before it is
     * checked as a spec. */
    if (!(have_doc = yaml_parser_load(&parser, &doc)) ||
        !(have_extra = yaml_parser_load(&parser, &extra))) {
        yaml_error(&parser, text, len, name, err, errlen);
        goto done;
    }
    if (yaml_document_get_root_node(&extra)) {
        fail_line(name, err, errlen, (int)extra.start_mark.line + 1,
                  (int)extra.start_mark.column + 1,
                  "a second YAML document; a spec is one document");
        goto done;
    }
    ctx c = {.name = name, .dir = dir, .err = err, .errlen = errlen, .doc = &doc, .spec = spec};
    rc = check_document(&c, yaml_document_get_root_node(&doc));
done:
    if (have_extra)
        yaml_document_delete(&extra);
    if (have_doc)
        yaml_document_delete(&doc);
    yaml_parser_delete(&parser);
    if (rc)
        tt_spec_free(spec);
    return rc;
}

int tt_spec_load(const char *path, tt_spec *spec, char *err, size_t errlen)
{
    memset(spec, 0, sizeof *spec);
    char *buf;
    size_t len;
    if (tt_read_file(path, TT_SPEC_MAX_BYTES, &buf, &len, err, errlen) != 0) return -1;
    char *dir = dir_of(path);
    int rc = dir ? tt_spec_parse(buf, len, path, dir, spec, err, errlen)
                 : fail_line(path, err, errlen, 1, 1, "out of memory");
    free(dir);
    free(buf);
    return rc;
}

void tt_spec_free(tt_spec *spec)
{
    if (!spec)
        return;
    free(spec->path);
    free(spec->dir);
    free(spec->text);
    free(spec->train.checkpoint_dir);
    free(spec->data.train);
    free(spec->data.valid);
    free(spec->data.test);
    memset(spec, 0, sizeof *spec);
}

int tt_spec_check_vocab(const tt_spec *spec, long vocab, char *err, size_t errlen)
{
    const char *name = spec->path ? spec->path : "spec";
    if (vocab < 2)
        return fail_line(name, err, errlen, 1, 1,
                         "model.vocab: the vocabulary size %ld taken from the data is below 2",
                         vocab);
    const tt_model_spec *m = &spec->model;
    for (int i = 0; i < m->n_cutoffs; i++)
        if (m->cutoffs[i] >= vocab)
            return fail_line(name, err, errlen, m->cutoffs_line, m->cutoffs_col,
                             "model.adaptive.cutoffs: %ld is not below the vocabulary size %ld "
                             "taken from the data",
                             m->cutoffs[i], vocab);
    return 0;
}

static const char *name_of(const char *const *names, int count, int v)
{
    return v >= 0 && v < count ? names[v] : "invalid";
}

const char *tt_kind_name(tt_kind k)
{
    return name_of(kind_names, 2, (int)k);
}
const char *tt_precision_name(tt_precision p)
{
    return name_of(precision_names, 3, (int)p);
}
const char *tt_schedule_name(tt_schedule s)
{
    return name_of(schedule_names, 2, (int)s);
}
const char *tt_position_name(tt_position p)
{
    return name_of(position_names, 2, (int)p);
}
const char *tt_attention_name(tt_attention a)
{
    return name_of(attention_names, 3, (int)a);
}

/* ---- writing ------------------------------------------------------------------------------- */

static bool key_written(const tt_spec *s, const key_desc *d)
{
    if (d->scope != ALL_KINDS &&
        (s->model.kind == TT_KIND_TENSORIZED) != (d->scope == ONLY_TENSORIZED))
        return false;
    if (d->type == V_PATH)
        return *(char *const *)((const char *)s + d->off) != NULL;
    if (d->sub == &adaptive_sec)
        return s->model.n_cutoffs > 0;
    if (d->sub == &checkpoint_sec)
        return s->train.checkpoint_dir != NULL;
    if (d->sub == &eval_sec) /* a tensorized model's would only repeat model.seq_len */
        return s->model.kind == TT_KIND_TXL;
    return true;
}

static void write_quoted(FILE *f, const char *s)
{
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

static void write_double(FILE *f, double v)
{
    char buf[32];
    format_double(v, buf, sizeof buf);
    fputs(buf, f);
}

static void write_mapping(FILE *f, const tt_spec *s, const section *sec, int indent)
{
    for (int i = 0; i < sec->n; i++) {
        const key_desc *d = &sec->keys[i];
        const void *field = (const char *)s + d->off;
        if (!key_written(s, d))
            continue;
        fprintf(f, "%*s%s:%s", indent, "", d->name, d->type == V_MAP ? "" : " ");
        switch (d->type) {
        case V_INT:
            fprintf(f, "%d", *(const int *)field);
            break;
        case V_LONG:
            fprintf(f, "%ld", *(const long *)field);
            break;
        case V_U64:
            fprintf(f, "%" PRIu64, *(const uint64_t *)field);
            break;
        case V_FLOAT:
            write_double(f, *(const double *)field);
            break;
        case V_BOOL:
            fputs(*(const bool *)field ? "true" : "false", f);
            break;
        case V_ENUM:
            fputs(d->names[d->off != F(path) ? *(const int *)field : 0], f);
            break;
        case V_PATH:
            write_quoted(f, *(char *const *)field);
            break;
        case V_ARCH: /* auto or sm_NN[a]: nothing to quote */
            fputs((const char *)field, f);
            break;
        case V_VOCAB:
            if (*(const long *)field == 0)
                fputs("data", f);
            else
                fprintf(f, "%ld", *(const long *)field);
            break;
        case V_CUTOFFS:
            fputc('[', f);
            for (int j = 0; j < s->model.n_cutoffs; j++)
                fprintf(f, "%s%ld", j ? ", " : "", s->model.cutoffs[j]);
            fputc(']', f);
            break;
        case V_BETAS:
            fputc('[', f);
            write_double(f, s->train.beta1);
            fputs(", ", f);
            write_double(f, s->train.beta2);
            fputc(']', f);
            break;
        case V_MAP: {
            bool empty = true;
            for (int j = 0; j < d->sub->n; j++)
                empty &= !key_written(s, &d->sub->keys[j]);
            if (empty) {
                fputs(" {}\n", f);
            } else {
                fputc('\n', f);
                write_mapping(f, s, d->sub, indent + 2);
            }
            continue;
        }
        }
        fputc('\n', f);
    }
}

void tt_spec_write(const tt_spec *spec, FILE *f)
{
    write_mapping(f, spec, &root_sec, 0);
}

static void write_spec(const void *spec, FILE *f) { tt_spec_write(spec, f); }

char *tt_spec_text(const tt_spec *spec) { return tt_capture(write_spec, spec); }
