/* safetensors reader and writer (see safetensors.h). The header is read by a small strict JSON
 * parser of the subset the format uses (objects, arrays, strings, integers) into a tree of nodes,
 * which is then checked entry by entry, and as a whole: the tensors must tile the data region. */
#include "safetensors.h"

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util.h"

/* Tensor data is handed out and copied as it lies in the file, which is little-endian; so is every
 * host we build for (x86-64). A big-endian host would need byte swaps in the reader and writer. */
_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "safetensors.c assumes a little-endian host");

#define MAX_HEADER 100000000ull /* the reference reader's limit: more is an attack, not a model */
#define MAX_DEPTH 16            /* safetensors needs 3; deeper input is refused, never recursed */

static const struct {
    const char *name;
    size_t size;
} dtypes[] = {
    [TT_ST_F32] = {"F32", 4}, [TT_ST_F16] = {"F16", 2}, [TT_ST_BF16] = {"BF16", 2},
    [TT_ST_F64] = {"F64", 8}, [TT_ST_I32] = {"I32", 4}, [TT_ST_I64] = {"I64", 8},
};
#define N_DTYPES ((int)(sizeof dtypes / sizeof dtypes[0]))
#define DTYPE_LIST "F32, F16, BF16, F64, I32, I64"

const char *tt_st_dtype_name(tt_st_dtype d)
{
    TT_ASSERT((unsigned)d < (unsigned)N_DTYPES);
    return dtypes[d].name;
}

size_t tt_st_dtype_size(tt_st_dtype d)
{
    TT_ASSERT((unsigned)d < (unsigned)N_DTYPES);
    return dtypes[d].size;
}

/* Bytes of a shape of elements of esize bytes; -1 when that exceeds 64 bits. A zero dimension
 * makes the tensor empty whatever the others are. */
static int shape_bytes(const int64_t *shape, int ndim, size_t esize, uint64_t *out)
{
    for (int i = 0; i < ndim; i++) {
        if (shape[i] == 0) {
            *out = 0;
            return 0;
        }
    }
    uint64_t b = esize;
    for (int i = 0; i < ndim; i++) {
        uint64_t d = (uint64_t)shape[i];
        if (b > UINT64_MAX / d) return -1;
        b *= d;
    }
    *out = b;
    return 0;
}

size_t tt_st_nbytes(const tt_st_tensor *t)
{
    TT_ASSERT(t->ndim >= 0 && t->ndim <= TT_ST_MAX_DIMS);
    uint64_t b;
    TT_ASSERT(shape_bytes(t->shape, t->ndim, tt_st_dtype_size(t->dtype), &b) == 0 && b <= SIZE_MAX);
    return (size_t)b;
}

/* --- text: UTF-8, JSON escapes, and names as error messages show them ------------------------- */

/* Offset of the first byte of s[0..n) that does not start valid UTF-8, or n if all is valid. */
static size_t utf8_check(const char *s, size_t n)
{
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n;) {
        size_t k = tt_utf8_len(u + i, n - i);
        if (!k) return i;
        i += k;
    }
    return n;
}

static size_t put_utf8(char *o, uint32_t cp)
{
    unsigned char *u = (unsigned char *)o;
    if (cp < 0x80) {
        u[0] = (unsigned char)cp;
        return 1;
    }
    if (cp < 0x800) {
        u[0] = (unsigned char)(0xC0 | cp >> 6);
        u[1] = (unsigned char)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        u[0] = (unsigned char)(0xE0 | cp >> 12);
        u[1] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
        u[2] = (unsigned char)(0x80 | (cp & 0x3F));
        return 3;
    }
    u[0] = (unsigned char)(0xF0 | cp >> 18);
    u[1] = (unsigned char)(0x80 | (cp >> 12 & 0x3F));
    u[2] = (unsigned char)(0x80 | (cp >> 6 & 0x3F));
    u[3] = (unsigned char)(0x80 | (cp & 0x3F));
    return 4;
}

/* s[0..n) as the body of a JSON string: quote, backslash and control characters escaped, every
 * other byte (UTF-8 included) as it is. */
static void json_escape(tt_buf *b, const char *s, size_t n)
{
    size_t run = 0; /* start of the bytes not yet appended */
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c >= 0x20 && c != '"' && c != '\\') continue;
        tt_buf_append(b, s + run, i - run);
        run = i + 1;
        switch (c) {
        case '"': tt_buf_append(b, "\\\"", 2); break;
        case '\\': tt_buf_append(b, "\\\\", 2); break;
        case '\n': tt_buf_append(b, "\\n", 2); break;
        case '\t': tt_buf_append(b, "\\t", 2); break;
        case '\r': tt_buf_append(b, "\\r", 2); break;
        case '\b': tt_buf_append(b, "\\b", 2); break;
        case '\f': tt_buf_append(b, "\\f", 2); break;
        default: tt_buf_printf(b, "\\u%04x", c); break;
        }
    }
    tt_buf_append(b, s + run, n - run);
}

/* A name or key as an error message shows it: escaped as in JSON (bytes that are not UTF-8 as
 * \xNN), so that the message stays one line, and cut to fit out. */
#define SHOWN_CAP 100
static const char *shown(const char *s, size_t n, char out[SHOWN_CAP])
{
    tt_buf b = {0};
    tt_buf_append(&b, "", 0);
    for (size_t i = 0; i < n;) {
        size_t k = tt_utf8_len(s + i, n - i);
        if (!k) {
            tt_buf_printf(&b, "\\x%02x", (unsigned char)s[i]);
            k = 1;
        } else if (k > 1) {
            tt_buf_append(&b, s + i, k);
        } else {
            json_escape(&b, s + i, 1);
        }
        i += k;
    }
    size_t len = b.len;
    if (len >= SHOWN_CAP) {
        len = SHOWN_CAP - 4;
        while (len && ((unsigned char)b.data[len] & 0xC0) == 0x80) len--; /* whole characters */
        memcpy(b.data + len, "...", 4);
        len += 3;
    }
    memcpy(out, b.data, len + 1);
    tt_buf_free(&b);
    return out;
}

static void format_shape(char *out, size_t cap, const int64_t *shape, int ndim, const char *sep)
{
    size_t at = (size_t)snprintf(out, cap, "[");
    for (int i = 0; i < ndim && at < cap; i++)
        at += (size_t)snprintf(out + at, cap - at, "%s%lld", i ? sep : "", (long long)shape[i]);
    if (at < cap) snprintf(out + at, cap - at, "]");
}

/* Indices of names[0..n) in strcmp order; *rep: the index of a name that appears twice, or -1. */
typedef struct {
    const char *name;
    int idx;
} named;

static int by_name(const void *a, const void *b)
{
    const named *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : x->idx - y->idx;
}

static int *sort_names(const char *const *names, int n, int *rep)
{
    named *s = tt_xcalloc((size_t)n, sizeof *s);
    for (int i = 0; i < n; i++) s[i] = (named){names[i], i};
    qsort(s, (size_t)n, sizeof *s, by_name);
    int *idx = tt_xcalloc((size_t)n, sizeof *idx);
    *rep = -1;
    for (int i = 0; i < n; i++) {
        idx[i] = s[i].idx;
        if (i && *rep < 0 && strcmp(s[i - 1].name, s[i].name) == 0) *rep = s[i].idx;
    }
    free(s);
    return idx;
}

/* --- the JSON subset ------------------------------------------------------------------------- */

typedef enum { J_OBJ, J_ARR, J_STR, J_INT } jkind;
static const char *const jkind_name[] = {"an object", "an array", "a string", "an integer"};

/* One value. Children of an object or array are linked through next; an object's children carry
 * their key. Strings live in the parser's arena, decoded and NUL-terminated. */
typedef struct {
    jkind kind;
    int first, next; /* node indices, -1 for none */
    const char *key; /* as a member of an object */
    size_t keylen;
    const char *str; /* J_STR */
    size_t len;
    int64_t num; /* J_INT */
} jnode;

typedef struct {
    const char *path;
    const unsigned char *s; /* the header */
    size_t n, at;
    jnode *nodes;
    int nn, cap;
    char *arena; /* decoded strings: never longer than their JSON text, so n + 1 bytes suffice */
    size_t alen;
    char *err;
    size_t errlen;
} jparser;

static int jerr(jparser *p, size_t pos, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int jerr(jparser *p, size_t pos, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tt_errf(p->err, p->errlen, "%s: invalid header JSON at byte %zu of the header: %s",
                   p->path, pos, msg);
}

/* What is at p->at, for "expected X, found Y". */
static const char *found(const jparser *p, char out[32])
{
    if (p->at >= p->n) return "the end of the header";
    unsigned char c = p->s[p->at];
    if (c > 0x20 && c < 0x7F)
        snprintf(out, 32, "'%c'", c);
    else
        snprintf(out, 32, "byte 0x%02x", c);
    return out;
}

static void skip_ws(jparser *p)
{
    while (p->at < p->n && (p->s[p->at] == ' ' || p->s[p->at] == '\t' || p->s[p->at] == '\n' ||
                            p->s[p->at] == '\r'))
        p->at++;
}

static int new_node(jparser *p, jkind kind)
{
    if (p->nn == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 64;
        p->nodes = tt_xrealloc(p->nodes, (size_t)p->cap * sizeof *p->nodes);
    }
    p->nodes[p->nn] = (jnode){.kind = kind, .first = -1, .next = -1};
    return p->nn++;
}

static int hex4(const jparser *p, size_t at, uint32_t *out)
{
    if (at + 4 > p->n) return -1;
    uint32_t v = 0;
    for (int i = 0; i < 4; i++) {
        unsigned c = p->s[at + (size_t)i];
        unsigned d = c >= '0' && c <= '9'   ? c - '0'
                     : c >= 'a' && c <= 'f' ? c - 'a' + 10
                     : c >= 'A' && c <= 'F' ? c - 'A' + 10
                                            : 16;
        if (d == 16) return -1;
        v = v << 4 | d;
    }
    *out = v;
    return 0;
}

/* The string at p->at (its opening quote), decoded into the arena. */
static int parse_string(jparser *p, const char **out, size_t *len)
{
    size_t start = p->at++;
    char *d = p->arena + p->alen, *o = d;
    for (;;) {
        if (p->at >= p->n) return jerr(p, start, "the string that starts here never ends");
        unsigned char c = p->s[p->at];
        if (c == '"') {
            p->at++;
            break;
        }
        if (c < 0x20)
            return jerr(p, p->at, "control character 0x%02x inside a string (escape it as \\u%04x)",
                        c, c);
        if (c >= 0x80) {
            size_t k = tt_utf8_len(p->s + p->at, p->n - p->at);
            if (!k) return jerr(p, p->at, "invalid UTF-8 in a string");
            memcpy(o, p->s + p->at, k);
            o += k;
            p->at += k;
            continue;
        }
        if (c != '\\') {
            *o++ = (char)c;
            p->at++;
            continue;
        }
        size_t esc = p->at;
        char e = p->at + 1 < p->n ? (char)p->s[p->at + 1] : '\0', simple = '\0';
        switch (e) {
        case '"':
        case '\\':
        case '/': simple = e; break;
        case 'b': simple = '\b'; break;
        case 'f': simple = '\f'; break;
        case 'n': simple = '\n'; break;
        case 'r': simple = '\r'; break;
        case 't': simple = '\t'; break;
        }
        if (simple) {
            *o++ = simple;
            p->at += 2;
            continue;
        }
        uint32_t cp, lo;
        if (e != 'u') {
            p->at++;
            char f[32];
            return jerr(p, esc, "unknown escape: backslash followed by %s", found(p, f));
        }
        if (hex4(p, esc + 2, &cp)) return jerr(p, esc, "\\u must be followed by four hex digits");
        p->at += 6;
        if (cp >= 0xDC00 && cp <= 0xDFFF)
            return jerr(p, esc, "\\u%04X is the low half of a surrogate pair, without a high half",
                        cp);
        if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (p->at + 2 > p->n || p->s[p->at] != '\\' || p->s[p->at + 1] != 'u' ||
                hex4(p, p->at + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
                return jerr(p, esc,
                            "\\u%04X is the high half of a surrogate pair, but no \\uDC00-\\uDFFF "
                            "follows",
                            cp);
            p->at += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
        }
        o += put_utf8(o, cp);
    }
    *o = '\0';
    *out = d;
    *len = (size_t)(o - d);
    p->alen += *len + 1;
    return 0;
}

static int parse_int(jparser *p)
{
    size_t start = p->at;
    bool neg = p->s[p->at] == '-';
    if (neg) p->at++;
    if (p->at >= p->n || p->s[p->at] < '0' || p->s[p->at] > '9')
        return jerr(p, start, "'-' must be followed by digits");
    if (p->s[p->at] == '0' && p->at + 1 < p->n && p->s[p->at + 1] >= '0' && p->s[p->at + 1] <= '9')
        return jerr(p, start, "a number must not start with 0");
    uint64_t v = 0;
    bool big = false;
    for (; p->at < p->n && p->s[p->at] >= '0' && p->s[p->at] <= '9'; p->at++) {
        unsigned d = p->s[p->at] - '0';
        if (v > (UINT64_MAX - d) / 10)
            big = true;
        else
            v = v * 10 + d;
    }
    if (p->at < p->n && (p->s[p->at] == '.' || p->s[p->at] == 'e' || p->s[p->at] == 'E'))
        return jerr(p, start,
                    "a number with a fraction or exponent: a safetensors header has only integers");
    if (big || v > (uint64_t)INT64_MAX + neg)
        return jerr(p, start, "the number %.*s does not fit in 64 bits", (int)(p->at - start),
                    (const char *)p->s + start);
    int idx = new_node(p, J_INT);
    p->nodes[idx].num = !neg ? (int64_t)v : v > (uint64_t)INT64_MAX ? INT64_MIN : -(int64_t)v;
    return idx;
}

static int parse_value(jparser *p, int depth);

static int parse_container(jparser *p, int depth)
{
    bool obj = p->s[p->at] == '{';
    char close = obj ? '}' : ']';
    int idx = new_node(p, obj ? J_OBJ : J_ARR), last = -1;
    char f[32];
    p->at++;
    skip_ws(p);
    if (p->at < p->n && p->s[p->at] == close) {
        p->at++;
        return idx;
    }
    for (;;) {
        const char *key = NULL;
        size_t keylen = 0;
        if (obj) {
            skip_ws(p);
            if (p->at >= p->n || p->s[p->at] != '"')
                return jerr(p, p->at, "expected a key (a string), found %s", found(p, f));
            if (parse_string(p, &key, &keylen)) return -1;
            skip_ws(p);
            if (p->at >= p->n || p->s[p->at] != ':')
                return jerr(p, p->at, "expected ':' after a key, found %s", found(p, f));
            p->at++;
        }
        int child = parse_value(p, depth + 1);
        if (child < 0) return -1;
        p->nodes[child].key = key;
        p->nodes[child].keylen = keylen;
        if (last < 0)
            p->nodes[idx].first = child;
        else
            p->nodes[last].next = child;
        last = child;
        skip_ws(p);
        if (p->at < p->n && p->s[p->at] == ',') {
            p->at++;
            continue;
        }
        if (p->at < p->n && p->s[p->at] == close) {
            p->at++;
            return idx;
        }
        return jerr(p, p->at, "expected ',' or '%c', found %s", close, found(p, f));
    }
}

static int parse_value(jparser *p, int depth)
{
    char f[32];
    skip_ws(p);
    if (p->at >= p->n) return jerr(p, p->at, "expected a value, found the end of the header");
    unsigned char c = p->s[p->at];
    if (c == '{' || c == '[') {
        if (depth >= MAX_DEPTH) return jerr(p, p->at, "nested deeper than %d levels", MAX_DEPTH);
        return parse_container(p, depth);
    }
    if (c == '"') {
        const char *s;
        size_t len;
        if (parse_string(p, &s, &len)) return -1;
        int idx = new_node(p, J_STR);
        p->nodes[idx].str = s;
        p->nodes[idx].len = len;
        return idx;
    }
    if (c == '-' || (c >= '0' && c <= '9')) return parse_int(p);
    static const char *const literals[] = {"true", "false", "null"};
    for (int i = 0; i < 3; i++) {
        size_t k = strlen(literals[i]);
        if (p->n - p->at >= k && memcmp(p->s + p->at, literals[i], k) == 0)
            return jerr(p, p->at,
                        "'%s': a safetensors header has only objects, arrays, strings and integers",
                        literals[i]);
    }
    return jerr(p, p->at, "expected a value, found %s", found(p, f));
}

/* --- the reader ------------------------------------------------------------------------------ */

struct tt_st_file {
    char *path;
    char *buf;             /* the whole file */
    char *arena;           /* names and metadata, NUL-terminated */
    tt_st_tensor *tensors; /* in offset order */
    int n;
    int *by_name; /* indices into tensors, sorted by name, for tt_st_find */
    const char **meta_keys, **meta_values;
    int n_meta;
};

/* A tensor while the header is checked. */
typedef struct {
    const char *name;
    size_t namelen;
    tt_st_dtype dtype;
    int ndim;
    int64_t shape[TT_ST_MAX_DIMS];
    uint64_t begin, end;
    int order; /* place in the header */
} entry;

static int tensor_err(jparser *p, const entry *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int tensor_err(jparser *p, const entry *e, const char *fmt, ...)
{
    char msg[512], nb[SHOWN_CAP];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return tt_errf(p->err, p->errlen, "%s: tensor '%s': %s", p->path,
                   shown(e->name, e->namelen, nb), msg);
}

static bool key_is(const jnode *m, const char *k)
{
    return m->keylen == strlen(k) && memcmp(m->key, k, m->keylen) == 0;
}

/* Checks one tensor's entry in the header against the data region of data_len bytes. */
static int read_entry(jparser *p, const jnode *v, uint64_t data_len, entry *e)
{
    char nb[SHOWN_CAP], sb[256];
    if (memchr(e->name, '\0', e->namelen))
        return tensor_err(p, e, "the name holds a NUL (\\u0000)");
    if (v->kind != J_OBJ)
        return tensor_err(p, e, "the entry is %s, not an object with dtype, shape and data_offsets",
                          jkind_name[v->kind]);
    const jnode *dt = NULL, *sh = NULL, *off = NULL;
    for (int c = v->first; c >= 0; c = p->nodes[c].next) {
        const jnode *m = &p->nodes[c];
        const jnode **slot = key_is(m, "dtype")          ? &dt
                             : key_is(m, "shape")        ? &sh
                             : key_is(m, "data_offsets") ? &off
                                                         : NULL;
        if (!slot)
            return tensor_err(p, e, "unknown key '%s' (an entry has dtype, shape and data_offsets)",
                              shown(m->key, m->keylen, nb));
        if (*slot)
            return tensor_err(p, e, "the key '%s' appears twice", shown(m->key, m->keylen, nb));
        *slot = m;
    }
    if (!dt) return tensor_err(p, e, "missing key 'dtype'");
    if (!sh) return tensor_err(p, e, "missing key 'shape'");
    if (!off) return tensor_err(p, e, "missing key 'data_offsets'");

    if (dt->kind != J_STR)
        return tensor_err(p, e, "dtype is %s, not a string", jkind_name[dt->kind]);
    int d = 0;
    while (d < N_DTYPES &&
           !(strlen(dtypes[d].name) == dt->len && !memcmp(dtypes[d].name, dt->str, dt->len)))
        d++;
    if (d == N_DTYPES)
        return tensor_err(p, e, "dtype '%s' is not one of " DTYPE_LIST,
                          shown(dt->str, dt->len, nb));
    e->dtype = (tt_st_dtype)d;

    if (sh->kind != J_ARR)
        return tensor_err(p, e, "shape is %s, not an array", jkind_name[sh->kind]);
    e->ndim = 0;
    for (int c = sh->first; c >= 0; c = p->nodes[c].next) {
        const jnode *x = &p->nodes[c];
        if (x->kind != J_INT)
            return tensor_err(p, e, "shape holds %s, not only integers", jkind_name[x->kind]);
        if (e->ndim == TT_ST_MAX_DIMS)
            return tensor_err(p, e, "shape has more than %d dimensions", TT_ST_MAX_DIMS);
        e->shape[e->ndim++] = x->num;
    }
    format_shape(sb, sizeof sb, e->shape, e->ndim, ", ");
    for (int i = 0; i < e->ndim; i++)
        if (e->shape[i] < 0) return tensor_err(p, e, "shape %s has a negative dimension", sb);

    if (off->kind != J_ARR)
        return tensor_err(p, e, "data_offsets is %s, not an array [begin, end]",
                          jkind_name[off->kind]);
    int64_t o[2];
    int no = 0;
    for (int c = off->first; c >= 0; c = p->nodes[c].next, no++) {
        const jnode *x = &p->nodes[c];
        if (x->kind != J_INT)
            return tensor_err(p, e, "data_offsets holds %s, not only integers",
                              jkind_name[x->kind]);
        if (no < 2) o[no] = x->num;
    }
    if (no != 2) return tensor_err(p, e, "data_offsets has %d items, not 2 (begin, end)", no);
    if (o[0] < 0 || o[1] < o[0])
        return tensor_err(p, e, "data_offsets [%lld, %lld] are not a range (0 <= begin <= end)",
                          (long long)o[0], (long long)o[1]);
    e->begin = (uint64_t)o[0];
    e->end = (uint64_t)o[1];
    if (e->end > data_len)
        return tensor_err(p, e, "data_offsets [%llu, %llu] go beyond the data region of %llu bytes",
                          (unsigned long long)e->begin, (unsigned long long)e->end,
                          (unsigned long long)data_len);
    uint64_t need = 0, have = e->end - e->begin;
    bool huge = shape_bytes(e->shape, e->ndim, dtypes[d].size, &need) != 0;
    if (huge || need != have) {
        char nd[32] = "more than 2^64";
        if (!huge) snprintf(nd, sizeof nd, "%llu", (unsigned long long)need);
        return tensor_err(p, e,
                          "data_offsets [%llu, %llu] hold %llu bytes, but shape %s of %s needs %s",
                          (unsigned long long)e->begin, (unsigned long long)e->end,
                          (unsigned long long)have, sb, dtypes[d].name, nd);
    }
    return 0;
}

/* Checks "__metadata__": an object of strings, without NULs or repeated keys. */
static int read_meta(jparser *p, const jnode *v, tt_st_file *f)
{
    char nb[SHOWN_CAP];
    if (v->kind != J_OBJ)
        return tt_errf(p->err, p->errlen, "%s: __metadata__ is %s, not an object of strings",
                       p->path, jkind_name[v->kind]);
    int n = 0;
    for (int c = v->first; c >= 0; c = p->nodes[c].next) n++;
    f->meta_keys = tt_xcalloc((size_t)n, sizeof *f->meta_keys);
    f->meta_values = tt_xcalloc((size_t)n, sizeof *f->meta_values);
    for (int c = v->first; c >= 0; c = p->nodes[c].next) {
        const jnode *m = &p->nodes[c];
        const char *k = shown(m->key, m->keylen, nb);
        if (m->kind != J_STR)
            return tt_errf(p->err, p->errlen,
                           "%s: __metadata__ '%s': the value is %s, not a string", p->path, k,
                           jkind_name[m->kind]);
        if (memchr(m->key, '\0', m->keylen) || memchr(m->str, '\0', m->len))
            return tt_errf(p->err, p->errlen, "%s: __metadata__ '%s': holds a NUL (\\u0000)",
                           p->path, k);
        f->meta_keys[f->n_meta] = m->key;
        f->meta_values[f->n_meta++] = m->str;
    }
    int rep;
    free(sort_names(f->meta_keys, f->n_meta, &rep));
    if (rep >= 0)
        return tt_errf(p->err, p->errlen, "%s: __metadata__: the key '%s' appears twice", p->path,
                       shown(f->meta_keys[rep], strlen(f->meta_keys[rep]), nb));
    return 0;
}

static int by_offset(const void *a, const void *b)
{
    const entry *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    if (x->end != y->end) return x->end < y->end ? -1 : 1;
    return x->order - y->order;
}

/* The header's tensors in offset order must tile [0, data_len): no overlap, no gap. */
static int check_tiling(jparser *p, const entry *e, int n, uint64_t data_len)
{
    char na[SHOWN_CAP], nb[SHOWN_CAP];
    uint64_t at = 0;
    for (int i = 0; i < n; i++) {
        if (e[i].begin < at)
            return tt_errf(p->err, p->errlen,
                           "%s: tensors '%s' [%llu, %llu] and '%s' [%llu, %llu] overlap", p->path,
                           shown(e[i - 1].name, e[i - 1].namelen, na),
                           (unsigned long long)e[i - 1].begin, (unsigned long long)e[i - 1].end,
                           shown(e[i].name, e[i].namelen, nb), (unsigned long long)e[i].begin,
                           (unsigned long long)e[i].end);
        if (e[i].begin > at && i == 0)
            return tt_errf(p->err, p->errlen,
                           "%s: data bytes [0, %llu) before tensor '%s' belong to no tensor "
                           "(the format allows no gaps)",
                           p->path, (unsigned long long)e[i].begin,
                           shown(e[i].name, e[i].namelen, nb));
        if (e[i].begin > at)
            return tt_errf(p->err, p->errlen,
                           "%s: data bytes [%llu, %llu) between tensors '%s' and '%s' belong to no "
                           "tensor (the format allows no gaps)",
                           p->path, (unsigned long long)at, (unsigned long long)e[i].begin,
                           shown(e[i - 1].name, e[i - 1].namelen, na),
                           shown(e[i].name, e[i].namelen, nb));
        at = e[i].end;
    }
    if (at < data_len && n == 0)
        return tt_errf(p->err, p->errlen,
                       "%s: data bytes [0, %llu) belong to no tensor (the header lists none)",
                       p->path, (unsigned long long)data_len);
    if (at < data_len)
        return tt_errf(p->err, p->errlen,
                       "%s: data bytes [%llu, %llu) after tensor '%s' belong to no tensor "
                       "(the format allows no gaps)",
                       p->path, (unsigned long long)at, (unsigned long long)data_len,
                       shown(e[n - 1].name, e[n - 1].namelen, nb));
    return 0;
}

/* Parses and checks the header; fills f's tensors and metadata on success. */
static int read_header(jparser *p, tt_st_file *f, const char *data, uint64_t data_len)
{
    int root = parse_value(p, 0);
    if (root < 0) return -1;
    skip_ws(p);
    char fb[32];
    if (p->at < p->n)
        return jerr(p, p->at, "expected the end of the header after its object, found %s",
                    found(p, fb));
    const jnode *r = &p->nodes[root];
    if (r->kind != J_OBJ)
        return tt_errf(p->err, p->errlen, "%s: the header is %s, not a JSON object", p->path,
                       jkind_name[r->kind]);

    int n = 0;
    for (int c = r->first; c >= 0; c = p->nodes[c].next) n++;
    entry *e = tt_xcalloc((size_t)n, sizeof *e);
    int ne = 0, rc = -1;
    bool seen_meta = false;
    for (int c = r->first; c >= 0; c = p->nodes[c].next) {
        const jnode *m = &p->nodes[c];
        if (key_is(m, "__metadata__")) {
            if (seen_meta) {
                tt_errf(p->err, p->errlen, "%s: the key '__metadata__' appears twice", p->path);
                goto out;
            }
            seen_meta = true;
            if (read_meta(p, m, f)) goto out;
            continue;
        }
        e[ne] = (entry){.name = m->key, .namelen = m->keylen, .order = ne};
        if (read_entry(p, m, data_len, &e[ne])) goto out;
        ne++;
    }

    /* Names first: a repeated name usually comes with overlapping offsets, and is the clearer
     * message. */
    const char **names = tt_xcalloc((size_t)ne, sizeof *names);
    for (int i = 0; i < ne; i++) names[i] = e[i].name;
    int rep;
    free(sort_names(names, ne, &rep));
    free(names);
    if (rep >= 0) {
        char nb[SHOWN_CAP];
        tt_errf(p->err, p->errlen, "%s: the tensor name '%s' appears twice", p->path,
                shown(e[rep].name, e[rep].namelen, nb));
        goto out;
    }

    qsort(e, (size_t)ne, sizeof *e, by_offset);
    if (check_tiling(p, e, ne, data_len)) goto out;
    f->n = ne;
    f->tensors = tt_xcalloc((size_t)ne, sizeof *f->tensors);
    names = tt_xcalloc((size_t)ne, sizeof *names);
    for (int i = 0; i < ne; i++) {
        tt_st_tensor *t = &f->tensors[i];
        *t = (tt_st_tensor){
            .name = e[i].name, .dtype = e[i].dtype, .ndim = e[i].ndim, .data = data + e[i].begin};
        memcpy(t->shape, e[i].shape, sizeof t->shape);
        names[i] = t->name;
    }
    f->by_name = sort_names(names, ne, &rep);
    free(names);
    rc = 0;
out:
    free(e);
    return rc;
}

int tt_st_open(const char *path, tt_st_file **out, char *err, size_t errlen)
{
    *out = NULL;
    char *buf;
    size_t len;
    if (tt_read_file(path, 0, &buf, &len, err, errlen)) return -1;
    if (len < 8) {
        free(buf);
        return tt_errf(err, errlen,
                       "%s: the file has %zu bytes, too few for a safetensors file (which starts "
                       "with an 8-byte header length)",
                       path, len);
    }
    uint64_t hl = 0;
    for (int i = 0; i < 8; i++) hl |= (uint64_t)(unsigned char)buf[i] << (8 * i);
    if (hl > MAX_HEADER) {
        free(buf);
        return tt_errf(
            err, errlen,
            "%s: header length %llu is over the limit of %llu bytes: the file is damaged "
            "or not safetensors",
            path, (unsigned long long)hl, MAX_HEADER);
    }
    if (hl > len - 8) {
        free(buf);
        return tt_errf(err, errlen,
                       "%s: header length %llu goes beyond the end of the file (%zu bytes follow "
                       "the length): the file is truncated or not safetensors",
                       path, (unsigned long long)hl, len - 8);
    }

    tt_st_file *f = tt_xcalloc(1, sizeof *f);
    jparser p = {.path = path,
                 .s = (const unsigned char *)buf + 8,
                 .n = (size_t)hl,
                 .arena = tt_xmalloc((size_t)hl + 1),
                 .err = err,
                 .errlen = errlen};
    f->buf = buf;
    f->arena = p.arena;
    int rc = read_header(&p, f, buf + 8 + hl, len - 8 - hl);
    free(p.nodes);
    if (rc) {
        tt_st_close(f);
        return -1;
    }
    f->path = tt_xstrdup(path);
    *out = f;
    return 0;
}

int tt_st_count(const tt_st_file *f) { return f->n; }

const tt_st_tensor *tt_st_get(const tt_st_file *f, int i)
{
    TT_ASSERT(i >= 0 && i < f->n);
    return &f->tensors[i];
}

const tt_st_tensor *tt_st_find(const tt_st_file *f, const char *name)
{
    int lo = 0, hi = f->n;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int c = strcmp(f->tensors[f->by_name[mid]].name, name);
        if (c == 0) return &f->tensors[f->by_name[mid]];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

int tt_st_meta_count(const tt_st_file *f) { return f->n_meta; }

const char *tt_st_meta_key(const tt_st_file *f, int i)
{
    TT_ASSERT(i >= 0 && i < f->n_meta);
    return f->meta_keys[i];
}

const char *tt_st_meta(const tt_st_file *f, const char *key)
{
    for (int i = 0; i < f->n_meta; i++)
        if (strcmp(f->meta_keys[i], key) == 0) return f->meta_values[i];
    return NULL;
}

/* IEEE binary16 to binary32, exactly: subnormals normalized, NaN payloads kept. */
static float f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = h >> 10 & 0x1F, m = h & 0x3FF, bits;
    if (e == 0x1F) {
        bits = sign | 0x7F800000u | m << 13;
    } else if (e) {
        bits = sign | (e + 112) << 23 | m << 13; /* rebias: 127 - 15 */
    } else if (!m) {
        bits = sign;
    } else {
        uint32_t s = 0;
        while (!(m & 0x400)) m <<= 1, s++;
        bits = sign | (113 - s) << 23 | (m & 0x3FF) << 13;
    }
    float x;
    memcpy(&x, &bits, 4);
    return x;
}

int tt_st_read_f32(const tt_st_file *f, const char *name, int ndim, const int64_t *shape,
                   float *dst, char *err, size_t errlen)
{
    TT_ASSERT(ndim >= 0 && (ndim == 0 || shape));
    char nb[SHOWN_CAP], want[256], have[256];
    const tt_st_tensor *t = tt_st_find(f, name);
    if (!t)
        return tt_errf(err, errlen, "%s: no tensor '%s' (the file holds %d tensor%s)", f->path,
                       shown(name, strlen(name), nb), f->n, f->n == 1 ? "" : "s");
    if (t->ndim != ndim || (ndim && memcmp(t->shape, shape, (size_t)ndim * sizeof *shape))) {
        format_shape(want, sizeof want, shape, ndim, ", ");
        format_shape(have, sizeof have, t->shape, t->ndim, ", ");
        return tt_errf(err, errlen, "%s: tensor '%s': expected shape %s, found %s", f->path,
                       shown(name, strlen(name), nb), want, have);
    }
    if (t->dtype == TT_ST_I32 || t->dtype == TT_ST_I64)
        return tt_errf(err, errlen,
                       "%s: tensor '%s' is %s; only F32, F16, BF16 and F64 are read as float32",
                       f->path, shown(name, strlen(name), nb), dtypes[t->dtype].name);
    size_t n = tt_st_nbytes(t) / dtypes[t->dtype].size;
    const unsigned char *src = t->data;
    switch (t->dtype) {
    case TT_ST_F32:
        if (n) memcpy(dst, src, n * 4); /* dst may be NULL for an empty tensor */
        break;
    case TT_ST_F16:
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            dst[i] = f16_to_f32(h);
        }
        break;
    case TT_ST_BF16: /* the top half of a binary32 */
        for (size_t i = 0; i < n; i++) {
            uint16_t h;
            memcpy(&h, src + 2 * i, 2);
            uint32_t bits = (uint32_t)h << 16;
            memcpy(&dst[i], &bits, 4);
        }
        break;
    case TT_ST_F64:
        for (size_t i = 0; i < n; i++) {
            double x;
            memcpy(&x, src + 8 * i, 8);
            dst[i] = (float)x;
        }
        break;
    default: TT_ASSERT(!"a dtype without a conversion");
    }
    return 0;
}

void tt_st_close(tt_st_file *f)
{
    if (!f) return;
    free(f->path);
    free(f->buf);
    free(f->arena);
    free(f->tensors);
    free(f->by_name);
    free(f->meta_keys);
    free(f->meta_values);
    free(f);
}

/* --- the writer ------------------------------------------------------------------------------ */

int tt_st_write(const char *path, const tt_st_tensor *tensors, int n, const char *const *meta_keys,
                const char *const *meta_values, int n_meta, char *err, size_t errlen)
{
    TT_ASSERT(n >= 0 && n_meta >= 0 && (n == 0 || tensors) &&
              (n_meta == 0 || (meta_keys && meta_values)));
    char nb[SHOWN_CAP], sb[256];
    int rep;
    const char **names = tt_xcalloc((size_t)n, sizeof *names);
    for (int i = 0; i < n; i++) {
        TT_ASSERT(tensors[i].name && (unsigned)tensors[i].dtype < (unsigned)N_DTYPES);
        names[i] = tensors[i].name;
    }
    for (int i = 0; i < n_meta; i++) TT_ASSERT(meta_keys[i] && meta_values[i]);
    free(sort_names(names, n, &rep));
    free(names);
    if (rep >= 0)
        return tt_errf(err, errlen, "%s: the tensor name '%s' appears twice", path,
                       shown(tensors[rep].name, strlen(tensors[rep].name), nb));
    free(sort_names(meta_keys, n_meta, &rep));
    if (rep >= 0)
        return tt_errf(err, errlen, "%s: the metadata key '%s' appears twice", path,
                       shown(meta_keys[rep], strlen(meta_keys[rep]), nb));

    tt_buf h = {0};
    tt_buf_append(&h, "{", 1);
    for (int i = 0; i < n_meta; i++) {
        const char *k = meta_keys[i], *v = meta_values[i];
        if (utf8_check(k, strlen(k)) < strlen(k) || utf8_check(v, strlen(v)) < strlen(v)) {
            tt_buf_free(&h);
            return tt_errf(err, errlen, "%s: metadata '%s': not valid UTF-8", path,
                           shown(k, strlen(k), nb));
        }
        tt_buf_printf(&h, "%s\"", i ? "," : "\"__metadata__\":{");
        json_escape(&h, k, strlen(k));
        tt_buf_append(&h, "\":\"", 3);
        json_escape(&h, v, strlen(v));
        tt_buf_printf(&h, "\"%s", i == n_meta - 1 ? "}" : "");
    }
    uint64_t at = 0;
    for (int i = 0; i < n; i++) {
        const tt_st_tensor *t = &tensors[i];
        const char *why = NULL;
        uint64_t nbytes = 0;
        if (utf8_check(t->name, strlen(t->name)) < strlen(t->name))
            why = "the name is not valid UTF-8";
        else if (strcmp(t->name, "__metadata__") == 0)
            why = "the name is reserved for metadata";
        else if (t->ndim < 0 || t->ndim > TT_ST_MAX_DIMS)
            why = "ndim is not in 0..8";
        for (int d = 0; !why && d < t->ndim; d++)
            if (t->shape[d] < 0) why = "the shape has a negative dimension";
        if (!why && (shape_bytes(t->shape, t->ndim, dtypes[t->dtype].size, &nbytes) ||
                     nbytes > SIZE_MAX - at))
            why = "the tensor is too large";
        if (!why && nbytes && !t->data) why = "data is NULL";
        if (why) {
            tt_buf_free(&h);
            return tt_errf(err, errlen, "%s: tensor '%s': %s", path,
                           shown(t->name, strlen(t->name), nb), why);
        }
        tt_buf_printf(&h, "%s\"", n_meta || i ? "," : "");
        json_escape(&h, t->name, strlen(t->name));
        format_shape(sb, sizeof sb, t->shape, t->ndim, ","); /* compact, as the reference writer */
        tt_buf_printf(&h, "\":{\"dtype\":\"%s\",\"shape\":%s,\"data_offsets\":[%llu,%llu]}",
                      dtypes[t->dtype].name, sb, (unsigned long long)at,
                      (unsigned long long)(at + nbytes));
        at += nbytes;
    }
    tt_buf_append(&h, "}", 1);
    while (h.len % 8) tt_buf_append(&h, " ", 1); /* so that the data starts 8-aligned */

    unsigned char len8[8];
    for (int i = 0; i < 8; i++) len8[i] = (unsigned char)((uint64_t)h.len >> (8 * i));
    const void **parts = tt_xcalloc((size_t)n + 2, sizeof *parts);
    size_t *lens = tt_xcalloc((size_t)n + 2, sizeof *lens);
    parts[0] = len8;
    lens[0] = 8;
    parts[1] = h.data;
    lens[1] = h.len;
    for (int i = 0; i < n; i++) {
        lens[i + 2] = tt_st_nbytes(&tensors[i]);
        parts[i + 2] = lens[i + 2] ? tensors[i].data : "";
    }
    int rc = tt_write_file_atomic(path, parts, lens, n + 2, err, errlen);
    free(parts);
    free(lens);
    tt_buf_free(&h);
    return rc;
}
