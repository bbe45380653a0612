/* The safetensors reader and writer (train/safetensors.h): a byte-exact round trip of every dtype
 * with metadata, the writer's exact header text, a file written by Python's safetensors
 * (tests/data/py-ref.safetensors, made by tests/data/make-py-ref.py), the exact one-line message
 * of every malformed header we know of, and every byte of a valid header flipped or cut, which
 * must never crash (run under ASan/UBSan and valgrind). Files go to a fresh folder under /tmp. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "safetensors.h"
#include "testutil.h"
#include "util.h"

#ifndef TT_SOURCE_DIR
#define TT_SOURCE_DIR "."
#endif

/* --- fixture: a fresh folder ----------------------------------------------------------------- */

typedef struct {
    char root[64];
    char path[128]; /* root/t.safetensors: the file each test writes and reads */
} fixture;

static int setup(void **state)
{
    fixture *f = tt_xcalloc(1, sizeof *f);
    tu_temp_dir("safetensors", f->root, sizeof f->root);
    snprintf(f->path, sizeof f->path, "%s/t.safetensors", f->root);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture *f = *state;
    tu_rm_rf(f->root);
    free(f);
    return 0;
}

/* A file with the header text as given (no padding) and data_len bytes of data. */
static void write_raw(const char *path, const char *header, size_t data_len)
{
    size_t hl = strlen(header), len = 8 + hl + data_len;
    unsigned char *b = calloc(1, len);
    assert_non_null(b);
    for (int i = 0; i < 8; i++) b[i] = (unsigned char)((uint64_t)hl >> (8 * i));
    memcpy(b + 8, header, hl);
    for (size_t i = 0; i < data_len; i++) b[8 + hl + i] = (unsigned char)(i * 37 + 11);
    tu_write_file(path, b, len);
    free(b);
}

static void expect_open_error(const char *path, const char *want)
{
    char err[512] = "", full[768];
    tt_st_file *st = (tt_st_file *)1;
    int rc = tt_st_open(path, &st, err, sizeof err);
    snprintf(full, sizeof full, "%s: %s", path, want);
    if (rc != -1 || strcmp(err, full) != 0)
        fail_msg("rc %d\n  got:  %s\n  want: %s", rc, err, full);
    assert_null(st);
}

static void fill_bytes(void *p, size_t n, uint32_t seed)
{
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++) {
        seed = seed * 1664525u + 1013904223u;
        b[i] = (unsigned char)(seed >> 24);
    }
}

/* --- round trips ------------------------------------------------------------------------------ */

/* A YAML spec as a checkpoint carries it: many lines, quotes, backslashes, tabs, CRLF, control
 * characters, and UTF-8 of two, three and four bytes. */
static const char spec_text[] = "model:\n"
                                "  kind: tensorized   # \"Tensorized Transformer\"\n"
                                "  d_model: 256\n"
                                "\tpath: 'C:\\data\\wiki\\' \\\\ \"quoted\"\r\n"
                                "  note: Gr\xc3\xb6\xc3\x9f"
                                "e \xe6\x97\xa5\xe6\x9c\xac\xe8\xaa\x9e \xf0\x9f\x98\x80\n"
                                "  ctl: \x01\x1f\x7f end\n";

static void test_round_trip_every_dtype(void **state)
{
    fixture *f = *state;
    enum { N = 9 };
    tt_st_tensor t[N] = {
        {.name = "emb.weight", .dtype = TT_ST_F64, .ndim = 2, .shape = {3, 5}},
        {.name = "layers.0.w", .dtype = TT_ST_I64, .ndim = 1, .shape = {7}},
        {.name = "layers.0.core.0", .dtype = TT_ST_F32, .ndim = 3, .shape = {2, 3, 4}},
        {.name = "step", .dtype = TT_ST_I32, .ndim = 0},
        {.name = "empty", .dtype = TT_ST_F32, .ndim = 2, .shape = {0, 4}},
        {.name = "layers.0.b", .dtype = TT_ST_I32, .ndim = 1, .shape = {5}},
        {.name = "h.f16", .dtype = TT_ST_F16, .ndim = 2, .shape = {3, 3}},
        {.name = "h.bf16", .dtype = TT_ST_BF16, .ndim = 4, .shape = {1, 2, 1, 3}},
        {.name = "na\xc3\xafve.\xe2\x88\x91", .dtype = TT_ST_BF16, .ndim = 1, .shape = {1}},
    };
    void *bufs[N];
    for (int i = 0; i < N; i++) {
        size_t nb = tt_st_nbytes(&t[i]);
        bufs[i] = malloc(nb ? nb : 1);
        fill_bytes(bufs[i], nb, (uint32_t)i + 1);
        t[i].data = bufs[i];
    }
    assert_int_equal(tt_st_nbytes(&t[0]), 120);
    assert_int_equal(tt_st_nbytes(&t[3]), 4);
    assert_int_equal(tt_st_nbytes(&t[4]), 0);

    const char *keys[] = {"format", "spec", "empty", "tt.version"};
    const char *values[] = {"pt", spec_text, "", "0.1.0"};
    char err[512] = "";
    assert_int_equal(tt_st_write(f->path, t, N, keys, values, 4, err, sizeof err), 0);

    tt_st_file *st = NULL;
    if (tt_st_open(f->path, &st, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(tt_st_count(st), N);
    for (int i = 0; i < N; i++) { /* data in the order given is file order */
        const tt_st_tensor *g = tt_st_get(st, i);
        assert_ptr_equal(tt_st_find(st, t[i].name), g);
        assert_string_equal(g->name, t[i].name);
        assert_int_equal(g->dtype, t[i].dtype);
        assert_int_equal(g->ndim, t[i].ndim);
        for (int d = 0; d < g->ndim; d++) assert_int_equal(g->shape[d], t[i].shape[d]);
        assert_int_equal(tt_st_nbytes(g), tt_st_nbytes(&t[i]));
        assert_memory_equal(g->data, t[i].data, tt_st_nbytes(g));
    }
    assert_null(tt_st_find(st, "layers.0"));
    assert_null(tt_st_find(st, ""));
    assert_int_equal(tt_st_meta_count(st), 4);
    for (int i = 0; i < 4; i++) {
        assert_string_equal(tt_st_meta_key(st, i), keys[i]);
        assert_string_equal(tt_st_meta(st, keys[i]), values[i]);
    }
    assert_null(tt_st_meta(st, "absent"));
    tt_st_close(st);
    for (int i = 0; i < N; i++) free(bufs[i]);
}

/* The writer's JSON, byte for byte: __metadata__ first, keys in the order given, escapes,
 * compact, padded with spaces to a multiple of 8. */
static void test_writer_header_text(void **state)
{
    fixture *f = *state;
    float a[2] = {1, 2};
    int64_t e = 7;
    tt_st_tensor t[] = {
        {.name = "a\"b\\c", .dtype = TT_ST_F32, .ndim = 1, .shape = {2}, .data = a},
        {.name = "\xc3\xa9", .dtype = TT_ST_I64, .ndim = 0, .data = &e},
    };
    const char *keys[] = {"k\n", "z"};
    const char *values[] = {"v\t\x01\xc3\xa9/\x1f", "\"\\"};
    char err[512] = "";
    assert_int_equal(tt_st_write(f->path, t, 2, keys, values, 2, err, sizeof err), 0);

    static const char want[] =
        "{\"__metadata__\":{\"k\\n\":\"v\\t\\u0001\xc3\xa9/\\u001f\",\"z\":\"\\\"\\\\\"},"
        "\"a\\\"b\\\\c\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
        "\"\xc3\xa9\":{\"dtype\":\"I64\",\"shape\":[],\"data_offsets\":[8,16]}}";
    char *file;
    size_t len;
    assert_int_equal(tt_read_file(f->path, 0, &file, &len, err, sizeof err), 0);
    uint64_t hl = 0;
    for (int i = 0; i < 8; i++) hl |= (uint64_t)(unsigned char)file[i] << (8 * i);
    assert_int_equal(hl % 8, 0);
    assert_true(hl >= strlen(want) && hl < strlen(want) + 8);
    assert_int_equal(len, 8 + hl + 16);
    assert_memory_equal(file + 8, want, strlen(want));
    for (size_t i = strlen(want); i < hl; i++) assert_int_equal(file[8 + i], ' ');
    assert_memory_equal(file + 8 + hl, a, 8);
    assert_memory_equal(file + 8 + hl + 8, &e, 8);
    free(file);

    /* No tensors and no metadata: "{}" and six spaces. */
    assert_int_equal(tt_st_write(f->path, NULL, 0, NULL, NULL, 0, err, sizeof err), 0);
    assert_int_equal(tt_read_file(f->path, 0, &file, &len, err, sizeof err), 0);
    assert_int_equal(len, 16);
    assert_memory_equal(file, "\x08\0\0\0\0\0\0\0{}      ", 16);
    free(file);
    tt_st_file *st = NULL;
    assert_int_equal(tt_st_open(f->path, &st, err, sizeof err), 0);
    assert_int_equal(tt_st_count(st), 0);
    assert_int_equal(tt_st_meta_count(st), 0);
    tt_st_close(st);
}

static void test_write_errors(void **state)
{
    fixture *f = *state;
    float x[4] = {0};
    char err[512], want[512];
    tt_st_tensor t[2] = {
        {.name = "w", .dtype = TT_ST_F32, .ndim = 1, .shape = {4}, .data = x},
        {.name = "w", .dtype = TT_ST_F32, .ndim = 1, .shape = {4}, .data = x},
    };
    assert_int_equal(tt_st_write(f->path, t, 2, NULL, NULL, 0, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: the tensor name 'w' appears twice", f->path);
    assert_string_equal(err, want);

    t[1].name = "__metadata__";
    assert_int_equal(tt_st_write(f->path, t, 2, NULL, NULL, 0, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: tensor '__metadata__': the name is reserved for metadata",
             f->path);
    assert_string_equal(err, want);

    t[1].name = "b\xff\n";
    assert_int_equal(tt_st_write(f->path, t, 2, NULL, NULL, 0, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: tensor 'b\\xff\\n': the name is not valid UTF-8", f->path);
    assert_string_equal(err, want);

    t[1].name = "v";
    t[1].shape[0] = -4;
    assert_int_equal(tt_st_write(f->path, t, 2, NULL, NULL, 0, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: tensor 'v': the shape has a negative dimension", f->path);
    assert_string_equal(err, want);

    const char *keys[] = {"k", "k"}, *values[] = {"1", "2"};
    assert_int_equal(tt_st_write(f->path, t, 1, keys, values, 2, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: the metadata key 'k' appears twice", f->path);
    assert_string_equal(err, want);
    assert_int_equal(access(f->path, F_OK), -1); /* nothing written */
}

/* --- reading as float32 ---------------------------------------------------------------------- */

static void test_read_f32(void **state)
{
    fixture *f = *state;
    /* 1, -2, 0.5, 65504 (largest), 2^-24 (smallest subnormal), 3 * 2^-24, inf, -0 */
    uint16_t h[8] = {0x3C00, 0xC000, 0x3800, 0x7BFF, 0x0001, 0x0003, 0x7C00, 0x8000};
    uint16_t bf[3] = {0x3F80, 0xC040, 0x7F80}; /* 1, -3, inf */
    double d[3] = {0.1, -1e300, 1.0 / 3.0};
    float s[3] = {1.5f, -0.0f, 3e38f};
    int64_t i[2] = {1, 2};
    tt_st_tensor t[] = {
        {.name = "h", .dtype = TT_ST_F16, .ndim = 2, .shape = {2, 4}, .data = h},
        {.name = "bf", .dtype = TT_ST_BF16, .ndim = 1, .shape = {3}, .data = bf},
        {.name = "d", .dtype = TT_ST_F64, .ndim = 1, .shape = {3}, .data = d},
        {.name = "s", .dtype = TT_ST_F32, .ndim = 1, .shape = {3}, .data = s},
        {.name = "i", .dtype = TT_ST_I64, .ndim = 1, .shape = {2}, .data = i},
        {.name = "x", .dtype = TT_ST_F32, .ndim = 2, .shape = {2, 0}, .data = NULL},
    };
    char err[512], want[512];
    assert_int_equal(tt_st_write(f->path, t, 6, NULL, NULL, 0, err, sizeof err), 0);
    tt_st_file *st;
    assert_int_equal(tt_st_open(f->path, &st, err, sizeof err), 0);

    float out[8];
    const float hw[8] = {1, -2, 0.5f, 65504, ldexpf(1, -24), 3 * ldexpf(1, -24), INFINITY, 0};
    assert_int_equal(tt_st_read_f32(st, "h", 2, (int64_t[]){2, 4}, out, err, sizeof err), 0);
    for (int k = 0; k < 8; k++) assert_true(out[k] == hw[k]);
    assert_true(signbit(out[7]));
    assert_int_equal(tt_st_read_f32(st, "bf", 1, (int64_t[]){3}, out, err, sizeof err), 0);
    assert_true(out[0] == 1 && out[1] == -3 && isinf(out[2]));
    assert_int_equal(tt_st_read_f32(st, "d", 1, (int64_t[]){3}, out, err, sizeof err), 0);
    assert_true(out[0] == 0.1f && isinf(out[1]) && out[1] < 0 && out[2] == (float)(1.0 / 3.0));
    assert_int_equal(tt_st_read_f32(st, "s", 1, (int64_t[]){3}, out, err, sizeof err), 0);
    assert_memory_equal(out, s, sizeof s);
    assert_int_equal(tt_st_read_f32(st, "x", 2, (int64_t[]){2, 0}, NULL, err, sizeof err), 0);

    /* Every finite half converts as the hardware would (a float16 -> float32 cast is exact). */
    tt_st_close(st);
    static uint16_t all[65536];
    for (int k = 0; k < 65536; k++) all[k] = (uint16_t)k;
    tt_st_tensor ta = {.name = "all", .dtype = TT_ST_F16, .ndim = 1, .shape = {65536}, .data = all};
    assert_int_equal(tt_st_write(f->path, &ta, 1, NULL, NULL, 0, err, sizeof err), 0);
    assert_int_equal(tt_st_open(f->path, &st, err, sizeof err), 0);
    float *conv = malloc(65536 * sizeof *conv);
    assert_int_equal(tt_st_read_f32(st, "all", 1, (int64_t[]){65536}, conv, err, sizeof err), 0);
    for (int k = 0; k < 65536; k++) {
        int e = k >> 10 & 0x1F, m = k & 0x3FF;
        double v = e ? ldexp(1024 + m, e - 25) : ldexp(m, -24);
        if (k & 0x8000) v = -v;
        if (e == 0x1F)
            assert_true(m ? isnan(conv[k]) : isinf(conv[k]) && (conv[k] < 0) == (k >> 15));
        else if (conv[k] != (float)v || !signbit(conv[k]) != !signbit(v))
            fail_msg("half 0x%04x: got %g, want %g", k, conv[k], v);
    }
    free(conv);
    tt_st_close(st);

    assert_int_equal(tt_st_write(f->path, t, 6, NULL, NULL, 0, err, sizeof err), 0);
    assert_int_equal(tt_st_open(f->path, &st, err, sizeof err), 0);
    assert_int_equal(tt_st_read_f32(st, "h", 2, (int64_t[]){4, 2}, out, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: tensor 'h': expected shape [4, 2], found [2, 4]", f->path);
    assert_string_equal(err, want);
    assert_int_equal(tt_st_read_f32(st, "h", 3, (int64_t[]){2, 4, 1}, out, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: tensor 'h': expected shape [2, 4, 1], found [2, 4]", f->path);
    assert_string_equal(err, want);
    assert_int_equal(tt_st_read_f32(st, "s", 0, NULL, out, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: tensor 's': expected shape [], found [3]", f->path);
    assert_string_equal(err, want);
    assert_int_equal(tt_st_read_f32(st, "hh", 2, (int64_t[]){2, 4}, out, err, sizeof err), -1);
    snprintf(want, sizeof want, "%s: no tensor 'hh' (the file holds 6 tensors)", f->path);
    assert_string_equal(err, want);
    assert_int_equal(tt_st_read_f32(st, "i", 1, (int64_t[]){2}, out, err, sizeof err), -1);
    snprintf(want, sizeof want,
             "%s: tensor 'i' is I64; only F32, F16, BF16 and F64 are read as float32", f->path);
    assert_string_equal(err, want);
    tt_st_close(st);
}

/* --- interop: a file written by Python's safetensors ------------------------------------------ */

static void test_python_reference_file(void **state)
{
    (void)state;
    const char *path = TT_SOURCE_DIR "/tests/data/py-ref.safetensors";
    char err[512] = "";
    tt_st_file *st = NULL;
    if (tt_st_open(path, &st, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(tt_st_count(st), 6);
    /* The reference writer orders data by dtype (widest first), then by name. */
    static const char *const order[] = {"ids",          "step",  "layers.0.scale",
                                        "embed.weight", "empty", "layers.0.attn.bias"};
    for (int i = 0; i < 6; i++) assert_string_equal(tt_st_get(st, i)->name, order[i]);
    for (int i = 1; i < 6; i++)
        assert_ptr_equal(tt_st_get(st, i)->data, (const char *)tt_st_get(st, i - 1)->data +
                                                     tt_st_nbytes(tt_st_get(st, i - 1)));

    float v[12];
    assert_int_equal(tt_st_read_f32(st, "embed.weight", 2, (int64_t[]){3, 4}, v, err, sizeof err),
                     0);
    for (int i = 0; i < 12; i++) assert_true(v[i] == (float)i * 0.25f - 1.0f);
    assert_int_equal(tt_st_find(st, "layers.0.attn.bias")->dtype, TT_ST_F16);
    assert_int_equal(
        tt_st_read_f32(st, "layers.0.attn.bias", 1, (int64_t[]){6}, v, err, sizeof err), 0);
    for (int i = 0; i < 6; i++) assert_true(v[i] == (float)i * 0.5f - 1.0f);

    const tt_st_tensor *t = tt_st_find(st, "layers.0.scale");
    assert_int_equal(t->dtype, TT_ST_F64);
    assert_int_equal(t->ndim, 2);
    for (int i = 0; i < 4; i++) {
        double x;
        memcpy(&x, (const char *)t->data + 8 * i, 8);
        assert_true(x == (double)i / 3.0);
    }
    t = tt_st_find(st, "ids");
    assert_int_equal(t->dtype, TT_ST_I64);
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->shape[0], 2);
    assert_int_equal(t->shape[1], 3);
    for (int i = 0; i < 6; i++) {
        int64_t x;
        memcpy(&x, (const char *)t->data + 8 * i, 8);
        assert_int_equal(x, i - 3);
    }
    t = tt_st_find(st, "step");
    assert_int_equal(t->ndim, 0);
    int64_t step;
    memcpy(&step, t->data, 8);
    assert_int_equal(step, 1234567890123LL);
    t = tt_st_find(st, "empty");
    assert_int_equal(t->ndim, 2);
    assert_int_equal(t->shape[0], 0);
    assert_int_equal(t->shape[1], 5);
    assert_int_equal(tt_st_nbytes(t), 0);

    assert_int_equal(tt_st_meta_count(st), 2);
    assert_string_equal(tt_st_meta(st, "format"), "pt");
    assert_string_equal(
        tt_st_meta(st, "note"),
        "line one\nline \"two\"\twith a \\ and \xc3\xbc\xc3\x9f \xe6\x97\xa5\xe6\x9c\xac");
    tt_st_close(st);
}

/* --- malformed files: each with its exact message -------------------------------------------- */

#define F32_1(off) "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":" off "}"

static const struct {
    const char *header;
    size_t data_len;
    const char *want; /* after "PATH: " */
} bad_headers[] = {
    /* not JSON, or JSON outside the subset the format uses */
    {"", 0,
     "invalid header JSON at byte 0 of the header: expected a value, found the end of the header"},
    {"{\"a\" 1}", 0,
     "invalid header JSON at byte 5 of the header: expected ':' after a key, found '1'"},
    {"{\"a\":{\"dtype\":\"F32\",", 0,
     "invalid header JSON at byte 20 of the header: expected a key (a string), found the end of "
     "the header"},
    {"{\"a\":1,}", 0,
     "invalid header JSON at byte 7 of the header: expected a key (a string), found '}'"},
    {"{\"a\":[1 2]}", 0,
     "invalid header JSON at byte 8 of the header: expected ',' or ']', found '2'"},
    {"{} x", 0,
     "invalid header JSON at byte 3 of the header: expected the end of the header after its "
     "object, found 'x'"},
    {"{\"a\":1.5}", 0,
     "invalid header JSON at byte 5 of the header: a number with a fraction or exponent: a "
     "safetensors header has only integers"},
    {"{\"a\":1e3}", 0,
     "invalid header JSON at byte 5 of the header: a number with a fraction or exponent: a "
     "safetensors header has only integers"},
    {"{\"a\":007}", 0,
     "invalid header JSON at byte 5 of the header: a number must not start with 0"},
    {"{\"a\":-x}", 0,
     "invalid header JSON at byte 5 of the header: '-' must be followed by digits"},
    {"{\"a\":99999999999999999999}", 0,
     "invalid header JSON at byte 5 of the header: the number 99999999999999999999 does not fit in "
     "64 bits"},
    {"{\"a\":true}", 0,
     "invalid header JSON at byte 5 of the header: 'true': a safetensors header has only objects, "
     "arrays, strings and integers"},
    {"{\"a\":null}", 0,
     "invalid header JSON at byte 5 of the header: 'null': a safetensors header has only objects, "
     "arrays, strings and integers"},
    {"{\"a\":x}", 0, "invalid header JSON at byte 5 of the header: expected a value, found 'x'"},
    {"{\"a\x01\":1}", 0,
     "invalid header JSON at byte 3 of the header: control character 0x01 inside a string (escape "
     "it as \\u0001)"},
    {"{\"a\\q\":1}", 0,
     "invalid header JSON at byte 3 of the header: unknown escape: backslash followed by 'q'"},
    {"{\"a\\u12g4\":1}", 0,
     "invalid header JSON at byte 3 of the header: \\u must be followed by four hex digits"},
    {"{\"\\udc00\":1}", 0,
     "invalid header JSON at byte 2 of the header: \\uDC00 is the low half of a surrogate pair, "
     "without a high half"},
    {"{\"\\ud83dx\":1}", 0,
     "invalid header JSON at byte 2 of the header: \\uD83D is the high half of a surrogate pair, "
     "but no \\uDC00-\\uDFFF follows"},
    {"{\"\\ud83d\\u0041\":1}", 0,
     "invalid header JSON at byte 2 of the header: \\uD83D is the high half of a surrogate pair, "
     "but no \\uDC00-\\uDFFF follows"},
    {"{\"a\xff\":1}", 0, "invalid header JSON at byte 3 of the header: invalid UTF-8 in a string"},
    {"{\"a\xc0\xaf\":1}", 0,
     "invalid header JSON at byte 3 of the header: invalid UTF-8 in a string"}, /* overlong '/' */
    {"{\"a\xed\xa0\x80\":1}", 0,
     "invalid header JSON at byte 3 of the header: invalid UTF-8 in a string"}, /* surrogate */
    {"{\"abc", 0,
     "invalid header JSON at byte 1 of the header: the string that starts here never ends"},
    {"{\"a\":[[[[[[[[[[[[[[[[1]]]]]]]]]]]]]]]]}", 0,
     "invalid header JSON at byte 20 of the header: nested deeper than 16 levels"},
    /* JSON, but not a safetensors header */
    {"[1, 2]", 0, "the header is an array, not a JSON object"},
    {"\"x\"", 0, "the header is a string, not a JSON object"},
    {"{\"w\":[0,4]}", 4,
     "tensor 'w': the entry is an array, not an object with dtype, shape and data_offsets"},
    {"{\"w\":{\"dtype\":\"F33\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "tensor 'w': dtype 'F33' is not one of F32, F16, BF16, F64, I32, I64"},
    {"{\"w\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "tensor 'w': dtype 'f32' is not one of F32, F16, BF16, F64, I32, I64"},
    {"{\"w\":{\"dtype\":32,\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "tensor 'w': dtype is an integer, not a string"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4, "tensor 'w': missing key 'data_offsets'"},
    {"{\"w\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4, "tensor 'w': missing key 'dtype'"},
    {"{\"w\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4, "tensor 'w': missing key 'shape'"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"offsets\":[0,4]}}", 4,
     "tensor 'w': unknown key 'offsets' (an entry has dtype, shape and data_offsets)"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"shape\":[1],\"data_offsets\":[0,4]}}", 4,
     "tensor 'w': the key 'shape' appears twice"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":4,\"data_offsets\":[0,4]}}", 4,
     "tensor 'w': shape is an integer, not an array"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]}}", 4,
     "tensor 'w': shape holds a string, not only integers"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[2,-2],\"data_offsets\":[0,4]}}", 4,
     "tensor 'w': shape [2, -2] has a negative dimension"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,4]}}", 4,
     "tensor 'w': shape has more than 8 dimensions"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 4,
     "tensor 'w': data_offsets has 3 items, not 2 (begin, end)"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4]}}", 4,
     "tensor 'w': data_offsets has 1 items, not 2 (begin, end)"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":{}}}", 4,
     "tensor 'w': data_offsets is an object, not an array [begin, end]"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,4]}}", 8,
     "tensor 'w': data_offsets [8, 4] are not a range (0 <= begin <= end)"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 8,
     "tensor 'w': data_offsets [-4, 0] are not a range (0 <= begin <= end)"},
    {"{\"w\":{\"dtype\":\"F32\",\"shape\":[12],\"data_offsets\":[0,48]}}", 24,
     "tensor 'w': data_offsets [0, 48] go beyond the data region of 24 bytes"},
    {"{\"x\":{\"dtype\":\"F32\",\"shape\":[2,3],\"data_offsets\":[0,12]}}", 12,
     "tensor 'x': data_offsets [0, 12] hold 12 bytes, but shape [2, 3] of F32 needs 24"},
    {"{\"x\":{\"dtype\":\"F32\",\"shape\":[],\"data_offsets\":[0,0]}}", 0,
     "tensor 'x': data_offsets [0, 0] hold 0 bytes, but shape [] of F32 needs 4"},
    {"{\"x\":{\"dtype\":\"BF16\",\"shape\":[4294967296,4294967296,4],\"data_offsets\":[0,8]}}", 8,
     "tensor 'x': data_offsets [0, 8] hold 8 bytes, but shape [4294967296, 4294967296, 4] of BF16 "
     "needs more than 2^64"},
    {"{\"x\\u0000y\":" F32_1("[0,4]") "}", 4, "tensor 'x\\u0000y': the name holds a NUL (\\u0000)"},
    /* the tensors must tile the data region */
    {"{\"a\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[0,24]},"
     "\"b\":{\"dtype\":\"F32\",\"shape\":[6],\"data_offsets\":[16,40]}}",
     40, "tensors 'a' [0, 24] and 'b' [16, 40] overlap"},
    {"{\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[16,24]},"
     "\"a\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]}}",
     24,
     "data bytes [8, 16) between tensors 'a' and 'b' belong to no tensor (the format allows no "
     "gaps)"},
    {"{\"a\":" F32_1("[4,8]") "}", 8,
     "data bytes [0, 4) before tensor 'a' belong to no tensor (the format allows no gaps)"},
    {"{\"a\":" F32_1("[0,4]") "}", 10,
     "data bytes [4, 10) after tensor 'a' belong to no tensor (the format allows no gaps)"},
    {"{}", 3, "data bytes [0, 3) belong to no tensor (the header lists none)"},
    {"{\"a\":" F32_1("[0,4]") ",\"e\":{\"dtype\":\"I64\",\"shape\":[0],\"data_offsets\":[2,2]}}", 4,
     "tensors 'a' [0, 4] and 'e' [2, 2] overlap"},
    {"{\"a\":" F32_1("[0,4]") ",\"a\":" F32_1("[4,8]") "}", 8, "the tensor name 'a' appears twice"},
    {"{\"\\u00e9\":" F32_1("[0,4]") ",\"\xc3\xa9\":" F32_1("[4,8]") "}", 8,
     "the tensor name '\xc3\xa9' appears twice"},
    /* metadata */
    {"{\"__metadata__\":{\"epoch\":3}}", 0,
     "__metadata__ 'epoch': the value is an integer, not a string"},
    {"{\"__metadata__\":{\"a\":\"x\",\"b\":[\"y\"]}}", 0,
     "__metadata__ 'b': the value is an array, not a string"},
    {"{\"__metadata__\":[]}", 0, "__metadata__ is an array, not an object of strings"},
    {"{\"__metadata__\":{},\"__metadata__\":{}}", 0, "the key '__metadata__' appears twice"},
    {"{\"__metadata__\":{\"k\":\"1\",\"k\":\"2\"}}", 0, "__metadata__: the key 'k' appears twice"},
    {"{\"__metadata__\":{\"k\":\"a\\u0000b\"}}", 0, "__metadata__ 'k': holds a NUL (\\u0000)"},
};

static void test_malformed_headers(void **state)
{
    fixture *f = *state;
    int n = (int)(sizeof bad_headers / sizeof bad_headers[0]);
    for (int i = 0; i < n; i++) {
        write_raw(f->path, bad_headers[i].header, bad_headers[i].data_len);
        expect_open_error(f->path, bad_headers[i].want);
    }
    print_message("%d malformed headers rejected\n", n);
}

static void test_malformed_length(void **state)
{
    fixture *f = *state;
    tu_write_file(f->path, "abc", 3);
    expect_open_error(f->path, "the file has 3 bytes, too few for a safetensors file (which starts "
                               "with an 8-byte header length)");
    tu_write_file(f->path, "", 0);
    expect_open_error(f->path, "the file has 0 bytes, too few for a safetensors file (which starts "
                               "with an 8-byte header length)");
    tu_write_file(f->path, "\x64\0\0\0\0\0\0\0{}        ", 18);
    expect_open_error(f->path, "header length 100 goes beyond the end of the file (10 bytes follow "
                               "the length): the file is truncated or not safetensors");
    tu_write_file(f->path, "\0\xc2\xeb\x0b\0\0\0\0{}", 10); /* 200000000 */
    expect_open_error(f->path, "header length 200000000 is over the limit of 100000000 bytes: the "
                               "file is damaged or not safetensors");
    tu_write_file(f->path, "PK\x03\x04\x14\0\0\0\0\0", 10); /* a zip (torch.save) */
    expect_open_error(f->path,
                      "header length 85966670672 is over the limit of 100000000 bytes: the "
                      "file is damaged or not safetensors");
    char err[512], want[512];
    tt_st_file *st;
    snprintf(want, sizeof want, "%s/absent: cannot open: No such file or directory", f->root);
    char absent[128];
    snprintf(absent, sizeof absent, "%s/absent", f->root);
    assert_int_equal(tt_st_open(absent, &st, err, sizeof err), -1);
    assert_string_equal(err, want);
}

/* Valid corner cases: scalars, zero-size tensors anywhere, escapes decoded, padding, whitespace. */
static void test_valid_corners(void **state)
{
    fixture *f = *state;
    write_raw(
        f->path,
        "{ \"__metadata__\" : { \"e\" : \"\\\"\\\\\\/\\b\\f\\n\\r\\t\\u00e9\\u65E5\\ud83d\\ude00\" "
        "} ,\n"
        "\t\"z\\u00e9ro\": {\"dtype\": \"I64\", \"shape\": [0, 3], \"data_offsets\": [0, 0]},\r\n"
        "  \"s\": {\"data_offsets\": [0, 8], \"shape\": [], \"dtype\": \"F64\"},"
        "  \"e2\": {\"dtype\": \"BF16\", \"shape\": [4294967296, 4294967296, 0], \"data_offsets\": "
        "[8, 8]},"
        "  \"\\ud83d\\ude00\": {\"dtype\": \"F32\", \"shape\": [1], \"data_offsets\": [12, 16]},"
        "  \"e3\": {\"dtype\": \"F16\", \"shape\": [0], \"data_offsets\": [16, 16]},"
        "  \"i\": {\"dtype\": \"I32\", \"shape\": [1], \"data_offsets\": [8, 12]}}    ",
        16);
    char err[512] = "";
    tt_st_file *st = NULL;
    if (tt_st_open(f->path, &st, err, sizeof err)) fail_msg("%s", err);
    assert_int_equal(tt_st_count(st), 6);
    static const char *const order[] = {"z\xc3\xa9ro", "s", "e2", "i", "\xf0\x9f\x98\x80", "e3"};
    for (int i = 0; i < 6; i++) assert_string_equal(tt_st_get(st, i)->name, order[i]);
    assert_string_equal(tt_st_meta(st, "e"), "\"\\/\b\f\n\r\t\xc3\xa9\xe6\x97\xa5\xf0\x9f\x98\x80");
    const tt_st_tensor *s = tt_st_find(st, "s");
    assert_int_equal(s->ndim, 0);
    assert_int_equal(tt_st_nbytes(s), 8);
    assert_int_equal(tt_st_nbytes(tt_st_find(st, "e2")), 0);
    assert_int_equal(tt_st_find(st, "e2")->shape[1], 4294967296LL);
    tt_st_close(st);
}

/* --- every byte of a valid header flipped, or the file cut anywhere: never a crash ------------ */

/* 1 if the file opened, 0 if it failed with a proper message. */
static int check_survives(const char *path)
{
    char err[512] = "";
    tt_st_file *st = (tt_st_file *)1;
    if (tt_st_open(path, &st, err, sizeof err) == 0) {
        /* Touch everything the file claims, so that ASan sees any read out of bounds. */
        unsigned sum = 0;
        for (int i = 0; i < tt_st_count(st); i++) {
            const tt_st_tensor *t = tt_st_get(st, i);
            size_t nb = tt_st_nbytes(t);
            for (size_t k = 0; k < nb; k++) sum += ((const unsigned char *)t->data)[k];
            if (t->dtype == TT_ST_I32 || t->dtype == TT_ST_I64) continue;
            float *dst = malloc(nb / tt_st_dtype_size(t->dtype) * sizeof(float) + 1);
            assert_int_equal(tt_st_read_f32(st, t->name, t->ndim, t->shape, dst, err, sizeof err),
                             0);
            free(dst);
        }
        for (int i = 0; i < tt_st_meta_count(st); i++)
            sum += (unsigned)strlen(tt_st_meta(st, tt_st_meta_key(st, i)));
        (void)sum;
        tt_st_close(st);
        return 1;
    }
    assert_null(st);
    size_t pl = strlen(path);
    if (strncmp(err, path, pl) != 0 || strncmp(err + pl, ": ", 2) != 0 || strchr(err, '\n') ||
        strlen(err) < pl + 10)
        fail_msg("not a one-line message naming the file: '%s'", err);
    return 0;
}

static void test_mutated_headers(void **state)
{
    fixture *f = *state;
    double w[3] = {1, 2, 3};
    uint16_t h[2] = {0x3C00, 0x4000};
    int32_t step = 5;
    tt_st_tensor t[] = {
        {.name = "w", .dtype = TT_ST_F64, .ndim = 2, .shape = {1, 3}, .data = w},
        {.name = "step", .dtype = TT_ST_I32, .ndim = 0, .data = &step},
        {.name = "h\xc3\xa9", .dtype = TT_ST_F16, .ndim = 1, .shape = {2}, .data = h},
        {.name = "z", .dtype = TT_ST_BF16, .ndim = 1, .shape = {0}},
    };
    const char *keys[] = {"k"}, *values[] = {"a\n\"\xe6\x97\xa5\\"};
    char err[512];
    assert_int_equal(tt_st_write(f->path, t, 4, keys, values, 1, err, sizeof err), 0);
    char *orig;
    size_t len;
    assert_int_equal(tt_read_file(f->path, 0, &orig, &len, err, sizeof err), 0);
    size_t hl = (unsigned char)orig[0] | (size_t)(unsigned char)orig[1] << 8;
    assert_true(hl > 100 && 8 + hl < len);
    assert_int_equal(check_survives(f->path), 1);

    static const int subst[] = {'"', '\\', '{', '}', '[', ']', ',',  ':',
                                '0', '9',  '-', ' ', 'u', 0,   0xC3, 0xFF};
    char *m = malloc(len);
    int opened = 0, tries = 0;
    for (size_t pos = 0; pos < 8 + hl; pos++) {
        for (int k = 0; k < 8 + (int)(sizeof subst / sizeof subst[0]); k++) {
            memcpy(m, orig, len);
            unsigned char *b = (unsigned char *)m + pos;
            if (k < 8)
                *b ^= (unsigned char)(1u << k);
            else
                *b = (unsigned char)subst[k - 8];
            if (memcmp(m, orig, len) == 0) continue;
            tu_write_file(f->path, m, len);
            opened += check_survives(f->path);
            tries++;
        }
    }
    for (size_t cut = 0; cut < len; cut++) {
        tu_write_file(f->path, orig, cut);
        check_survives(f->path);
        tries++;
    }
    print_message("%d damaged files, %d of them still valid\n", tries, opened);
    free(m);
    free(orig);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_round_trip_every_dtype, setup, teardown),
        cmocka_unit_test_setup_teardown(test_writer_header_text, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_f32, setup, teardown),
        cmocka_unit_test(test_python_reference_file),
        cmocka_unit_test_setup_teardown(test_malformed_headers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_malformed_length, setup, teardown),
        cmocka_unit_test_setup_teardown(test_valid_corners, setup, teardown),
        cmocka_unit_test_setup_teardown(test_mutated_headers, setup, teardown),
    };
    return cmocka_run_group_tests_name("safetensors", tests, NULL, NULL);
}
