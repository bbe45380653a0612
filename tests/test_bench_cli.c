/* tt-bench as a user runs it (the analytic part; CI has no GPU). Parameter totals and forward
 * FLOPs per token of two specs of each kind, worked out here by hand from the README's "Cost
 * model" (not through tt_costs_compute), against --json; the default counterpart's shape; the
 * CSV schema; the refusals; and the line that says measuring needs a GPU. */
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "device.h"
#include "sha256.h"
#include "spec.h"
#include "testutil.h"
#include "util.h"

#define PTB TT_SOURCE_DIR "/specs/ptb.yaml"
#define TXL_PTB TT_SOURCE_DIR "/specs/txl-ptb.yaml"
#define TIMEOUT 60

/* A small tensorized spec that takes every other branch of the count: several cores, no mask,
 * the positional key term, untied output layer. */
static const char SMALL_TT[] = "model:\n"
                               "  kind: tensorized\n"
                               "  vocab: 500\n"
                               "  d_model: 32\n"
                               "  layers: 2\n"
                               "  rank: 4\n"
                               "  cores: 3\n"
                               "  seq_len: 6\n"
                               "  d_inner: 48\n"
                               "  causal: false\n"
                               "  position: key\n"
                               "  tie_weights: false\n"
                               "train: {batch: 4}\n";

/* A small Transformer-XL: heads x d_head below d_model, memory longer than the segment, and an
 * adaptive softmax with projections (div_val 2). */
static const char SMALL_TXL[] = "model:\n"
                                "  kind: transformer-xl\n"
                                "  vocab: 300\n"
                                "  d_model: 24\n"
                                "  layers: 2\n"
                                "  n_head: 2\n"
                                "  d_head: 10\n"
                                "  seq_len: 4\n"
                                "  mem_len: 5\n"
                                "  d_inner: 40\n"
                                "  adaptive: {cutoffs: [50, 150], div_val: 2}\n"
                                "train: {batch: 3}\n";

/* --- fixture: a folder per test for its inline specs ------------------------------------------- */

typedef struct {
    char root[64];
} fixture;

static int setup(void **state)
{
    fixture *f = tt_xcalloc(1, sizeof *f);
    tu_temp_dir("bench", f->root, sizeof f->root);
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

static char *write_spec(const fixture *f, const char *name, const char *text)
{
    char *path = tt_xasprintf("%s/%s", f->root, name);
    tu_write_text(path, text);
    return path;
}

#define RUN(p, ...)                                                                                \
    do {                                                                                           \
        tu_proc_start((p), (const char *const[]){TT_BENCH_BIN, __VA_ARGS__, NULL}, NULL);          \
        tu_proc_wait((p), TIMEOUT);                                                                \
    } while (0)

/* tt-bench TEXT --json, the spec written to the fixture's folder as name; exit 0 expected. */
static void run_inline_json(const fixture *f, const char *name, const char *text, tu_proc *p)
{
    char *spec = write_spec(f, name, text);
    RUN(p, spec, "--json");
    tu_expect_exit(p, 0, name);
    free(spec);
}

/* --- --json, read just enough ------------------------------------------------------------------ */

/* The number at "key": inside the object "section":{...} of the model whose role is role. */
static double json_at(const char *json, const char *role, const char *section, const char *key)
{
    char *needle = tt_xasprintf("\"role\":\"%s\"", role);
    const char *p = strstr(json, needle);
    if (!p) fail_msg("no model with %s in:\n%s", needle, json);
    free(needle);
    needle = tt_xasprintf("\"%s\":{", section);
    p = strstr(p, needle);
    if (!p) fail_msg("no %s for %s in:\n%s", needle, role, json);
    free(needle);
    const char *end = strchr(p, '}');
    needle = tt_xasprintf("\"%s\":", key);
    const char *k = strstr(p, needle);
    if (!k || k > end) fail_msg("no %s in %s of %s:\n%s", needle, section, role, json);
    k += strlen(needle);
    free(needle);
    char *stop;
    const double v = strtod(k, &stop);
    if (stop == k) fail_msg("%s.%s of %s is not a number:\n%s", section, key, role, json);
    return v;
}

static void expect_close(double got, double want, const char *what)
{
    if (fabs(got - want) > 1e-12 * fabs(want))
        fail_msg("%s: tt-bench says %.17g, by hand %.17g", what, got, want);
}

/* The parameter total, forward and training FLOPs per token of role in json, against by hand. */
static void expect_costs(const char *json, const char *role, double params, double fwd)
{
    expect_close(json_at(json, role, "parameters", "total"), params, "parameters");
    expect_close(json_at(json, role, "flops_per_token", "forward"), fwd, "forward FLOPs per token");
    expect_close(json_at(json, role, "flops_per_token", "train_step"), 3 * fwd, "training FLOPs per token");
}

/* The line about measuring: "need a GPU" without a device (CI), else what was measured on it. */
static void expect_measuring_line(const char *text)
{
    tt_device_info info;
    char why[512];
    const char *want = tt_device_query(0, &info, why, sizeof why) != 0
                           ? "measured throughput, step time, memory and MFU need a GPU (no CUDA device"
                           : "measured on ";
    if (!strstr(text, want)) fail_msg("no '%s' in:\n%s", want, text);
}

/* --- the counts by hand (README, "Cost model") ------------------------------------------------- */

/* Transformer-XL's per-token attention FLOPs and its attention parameters. */
static double txl_attn_flops(double l, double d, double a, double n, double m, double b)
{
    const double visible = n * m + n * (n + 1) / 2; /* query i sees the memory and keys 0..i */
    const double proj = 2 * d * a + 2 * 2 * d * a * (m + n) / n + 2 * (m + n) * d * a / (b * n);
    const double score = 2 * 2 * a * visible / n, mix = 2 * a * visible / n + 2 * a * d;
    return l * (proj + score + mix);
}

static double txl_attn_params(double l, double d, double a)
{
    return l * 3 * d * a /* qkv */ + l * a * d + 2 * a /* r_net, u, v */ + l * a * d /* o_net */;
}

/* FFN and LayerNorm parameters, and FFN FLOPs per token. */
static double ffn_ln_params(double l, double d, double f) { return l * (2 * d * f + f + d) + l * 2 * 2 * d; }
static double ffn_flops(double l, double d, double f) { return l * 2 * 2 * d * f; }

static double harmonic(int k)
{
    double h = 0;
    for (int r = 1; r <= k; r++) h += 1.0 / r;
    return h;
}

/* --- tests ------------------------------------------------------------------------------------- */

/* specs/ptb.yaml: V 10000, D 256, L 3, R 40, h 2, N 32, F 2100, causal, tied, full softmax; and
 * its default counterpart, 4 heads of 64 with mem_len 32. */
static void test_ptb_counts(void **state)
{
    (void)state;
    tu_proc p;
    RUN(&p, PTB, "--json");
    tu_expect_exit(&p, 0, "tt-bench ptb --json");
    const double v = 10000, d = 256, l = 3, r = 40, h = 2, n = 32, f = 2100;
    const double pairs = n * (n + 1) / 2, triples = n * (n + 1) * (2 * n + 1) / 6; /* causal */
    const double params = v * d /* embedding */ + l * 3 * d * r /* Wq Wk Wv */ + l * h * r /* cores */
                          + l * n * n * d /* Wo */ + ffn_ln_params(l, d, f) + v /* softmax bias */;
    assert_true(params == 6684572); /* as the README's worked example */
    const double fwd = l * 2 * 3 * d * r + l * (2 * r * pairs + 2 * r * triples) / n
                       + l * 2 * d * triples / n + ffn_flops(l, d, f) + 2 * d * v;
    expect_costs(p.out, "ours", params, fwd);

    const double a = 256, m = 32, b = 32;
    const double txl_params = v * d + txl_attn_params(l, d, a) + ffn_ln_params(l, d, f) + v;
    const double txl_fwd = txl_attn_flops(l, d, a, n, m, b) + ffn_flops(l, d, f) + 2 * d * v;
    expect_costs(p.out, "counterpart", txl_params, txl_fwd);
    const char *shape = "\"role\":\"counterpart\",\"shape\":{\"layers\":3,\"d_model\":256,"
                        "\"d_inner\":2100,\"seq_len\":32,\"vocab\":10000,\"n_head\":4,\"d_head\":64,"
                        "\"mem_len\":32},\"default_counterpart\":true";
    if (!strstr(p.out, shape)) fail_msg("no '%s' in:\n%s", shape, p.out);
    char *ratio = tt_xasprintf("\"parameters.total\":%.17g", params / txl_params);
    if (!strstr(p.out, ratio)) fail_msg("no '%s' in:\n%s", ratio, p.out);
    free(ratio);
    /* the paper's PTB row, core-2 */
    if (!strstr(p.out, "\"paper\":{\"row\":\"PTB\",\"cores\":2,\"parameters\":12000000,"
                       "\"test_ppl_core2\":49.8,"))
        fail_msg("no paper row in:\n%s", p.out);
    expect_measuring_line(p.err);
    tu_proc_free(&p);
}

static void test_small_tensorized_counts(void **state)
{
    tu_proc p;
    run_inline_json(*state, "small-tt.yaml", SMALL_TT, &p);
    const double v = 500, d = 32, l = 2, r = 4, h = 3, n = 6, f = 48, b = 4;
    const double params = v * d + l * 3 * d * r + l * h * r + (l * r * d + 2 * r) /* Wr, u, v */
                          + l * n * n * d + ffn_ln_params(l, d, f) + (v + v * d) /* untied */;
    /* causal: false: N^2 pairs, N^3 triples; position: key doubles the pairs' work and adds
     * P = Wr pe, 2NDR once per batch of B sequences */
    const double fwd = l * (2 * 3 * d * r + 2 * n * d * r / (b * n)) + l * 2 * r * (2 * n * n + n * n * n) / n
                       + l * 2 * d * n * n * n / n + ffn_flops(l, d, f) + 2 * d * v;
    expect_costs(p.out, "ours", params, fwd);
    /* d_model 32: one head of 32, memory 6 */
    if (!strstr(p.out, "\"n_head\":1,\"d_head\":32,\"mem_len\":6}")) fail_msg("counterpart:\n%s", p.out);
    const double txl_params = v * d + txl_attn_params(l, d, d) + ffn_ln_params(l, d, f) + v + v * d;
    expect_costs(p.out, "counterpart", txl_params,
                 txl_attn_flops(l, d, d, n, n, b) + ffn_flops(l, d, f) + 2 * d * v);
    if (!strstr(p.out, "\"paper\":null")) fail_msg("a paper row for a small spec:\n%s", p.out);
    tu_proc_free(&p);
}

/* specs/txl-ptb.yaml alone (a Transformer-XL without --vs is printed by itself), and as --vs. */
static void test_txl_ptb_counts(void **state)
{
    (void)state;
    const double v = 10000, d = 256, l = 3, a = 8 * 32, n = 32, m = 32, f = 2100, b = 32;
    const double params = v * d + txl_attn_params(l, d, a) + ffn_ln_params(l, d, f) + v;
    const double fwd = txl_attn_flops(l, d, a, n, m, b) + ffn_flops(l, d, f) + 2 * d * v;
    tu_proc p;
    RUN(&p, TXL_PTB, "--json");
    tu_expect_exit(&p, 0, "tt-bench txl-ptb --json");
    expect_costs(p.out, "ours", params, fwd);
    if (strstr(p.out, "\"role\":\"counterpart\"") || !strstr(p.out, "\"ratio\":null"))
        fail_msg("a counterpart for a Transformer-XL spec:\n%s", p.out);
    tu_proc_free(&p);

    RUN(&p, PTB, "--vs", TXL_PTB, "--json");
    tu_expect_exit(&p, 0, "tt-bench ptb --vs txl-ptb --json");
    expect_costs(p.out, "counterpart", params, fwd);
    if (!strstr(p.out, "\"n_head\":8,\"d_head\":32,\"mem_len\":32},\"default_counterpart\":false"))
        fail_msg("--vs counterpart:\n%s", p.out);
    tu_proc_free(&p);
}

static void test_small_txl_counts(void **state)
{
    tu_proc p;
    run_inline_json(*state, "small-txl.yaml", SMALL_TXL, &p);
    const double v = 300, d = 24, l = 2, a = 2 * 10, n = 4, m = 5, f = 40, b = 3;
    /* clusters [0,50) at 24, [50,150) at 12, [150,300) at 6, each with a D x d_i projection */
    const double vi[3] = {50, 100, 150}, di[3] = {24, 12, 6};
    double emb = 0;
    for (int i = 0; i < 3; i++) emb += vi[i] * di[i] + d * di[i];
    const double softmax = v /* biases */ + 2 * (d + 1) /* cluster weights and biases; tied */;
    const double params = emb + txl_attn_params(l, d, a) + ffn_ln_params(l, d, f) + softmax;
    /* Zipf's shares of the clusters, (H_b - H_a) / H_V */
    const double hv = harmonic(300);
    const double share[3] = {harmonic(50) / hv, (harmonic(150) - harmonic(50)) / hv,
                             (harmonic(300) - harmonic(150)) / hv};
    double emb_flops = 0, out_flops = 2 * di[0] * (vi[0] + 2) + 2 * d * di[0]; /* head, every token */
    for (int i = 0; i < 3; i++) emb_flops += share[i] * 2 * d * di[i];
    for (int i = 1; i < 3; i++) out_flops += share[i] * (2 * di[i] * vi[i] + 2 * d * di[i]);
    const double fwd = emb_flops + txl_attn_flops(l, d, a, n, m, b) + ffn_flops(l, d, f) + out_flops;
    expect_costs(p.out, "ours", params, fwd);
    tu_proc_free(&p);
}

/* The CSV: the documented header, six fields on every row, numbers that parse (a value is empty
 * only for what was not measured), and the roles and sections the README lists. */
static void test_csv_schema(void **state)
{
    (void)state;
    tu_proc p;
    RUN(&p, PTB, "--csv");
    tu_expect_exit(&p, 0, "tt-bench ptb --csv");
    const char *header = "model,kind,section,quantity,value,unit\n";
    if (strncmp(p.out, header, strlen(header))) fail_msg("header:\n%s", p.out);
    int rows = 0, paper = 0, measured = 0;
    char *text = tt_xstrdup(p.out + strlen(header)), *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save), rows++) {
        const char *field[6] = {"", "", "", "", "", ""}; /* a short row's missing fields: empty */
        char *s = line;
        int nf = 0;
        for (char *c; nf < 6; s = c + 1) {
            field[nf++] = s;
            if (!(c = strchr(s, ','))) break;
            *c = '\0';
        }
        if (nf != 6 || strchr(field[5], ',')) fail_msg("row %d has not 6 fields: %s", rows + 1, line);
        if (strcmp(field[0], "ours") && strcmp(field[0], "counterpart") && strcmp(field[0], "paper"))
            fail_msg("row %d: model '%s'", rows + 1, field[0]);
        if (strcmp(field[1], "tensorized") && strcmp(field[1], "transformer-xl"))
            fail_msg("row %d: kind '%s'", rows + 1, field[1]);
        const char *sections[] = {"parameters", "flops_per_token", "memory_bytes", "measured", "paper"};
        int known = 0;
        for (int i = 0; i < 5; i++) known |= !strcmp(field[2], sections[i]);
        if (!known) fail_msg("row %d: section '%s'", rows + 1, field[2]);
        paper += !strcmp(field[0], "paper");
        if (field[4][0] == '\0') {
            if (strcmp(field[2], "measured")) fail_msg("row %d: an empty value outside measured", rows + 1);
            measured++;
            continue;
        }
        char *end;
        strtod(field[4], &end);
        if (*end) fail_msg("row %d: value '%s' is not a number", rows + 1, field[4]);
    }
    free(text);
    /* per model: 8 components + total, 6 parts + forward + training, 2 memory, 5 measured */
    assert_int_equal(rows, 2 * (9 + 8 + 2 + 5) + paper);
    assert_int_equal(paper, 4); /* PTB: parameters, test PPL, two FLOPs claims */
    /* the measured values: empty without a GPU, all given with one */
    tt_device_info info;
    char why[512];
    assert_int_equal(measured, tt_device_query(0, &info, why, sizeof why) != 0 ? 2 * 5 : 0);
    if (!strstr(p.out, "\nours,tensorized,parameters,total,6684572,count\n") ||
        !strstr(p.out, "\ncounterpart,transformer-xl,flops_per_token,forward,"))
        fail_msg("rows missing:\n%s", p.out);
    expect_measuring_line(p.err);
    tu_proc_free(&p);
}

/* The table: both models, ratios, the paper's row labelled as the paper's, the measuring line. */
static void test_text(void **state)
{
    (void)state;
    tu_proc p;
    RUN(&p, PTB);
    tu_expect_exit(&p, 0, "tt-bench ptb");
    const char *want[] = {"ours:        tensorized, 3 layers, D 256, R 40, 2 cores, N 32",
                          "counterpart: transformer-xl, 3 layers, D 256, 4 heads x 64, N 32, M 32",
                          "  total                                 6684572          6789292    0.985\n",
                          "the paper's numbers (Ma et al. 2019, PTB row, core-2",
                          "  test_ppl_core2                           49.8"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(p.out, want[i])) fail_msg("no '%s' in:\n%s", want[i], p.out);
    expect_measuring_line(p.out);
    tu_proc_free(&p);
}

/* Refusals: one line on stderr, exit code (2: bad usage or input), nothing on stdout. */
static void expect_refusal_code(const tu_proc *p, int code, const char *what, const char *part)
{
    tu_expect_exit(p, code, what);
    if (tu_count_lines(p->err) != 1 || !strstr(p->err, part))
        fail_msg("%s: stderr is not one line with '%s':\n%s", what, part, p->err);
    if (p->out[0]) fail_msg("%s: stdout is not empty:\n%s", what, p->out);
}

static void expect_refusal(const tu_proc *p, const char *what, const char *part)
{
    expect_refusal_code(p, 2, what, part);
}

/* tt-bench with the arguments after what and part: refused, as expect_refusal says. */
#define REFUSES(what, part, ...)                                                                   \
    do {                                                                                           \
        tu_proc p_;                                                                                \
        RUN(&p_, __VA_ARGS__);                                                                     \
        expect_refusal(&p_, (what), (part));                                                       \
        tu_proc_free(&p_);                                                                         \
    } while (0)

static void test_refusals(void **state)
{
    fixture *fx = *state;
    REFUSES("--vs a tensorized spec", "the counterpart must be kind: transformer-xl", PTB, "--vs",
            TT_SOURCE_DIR "/specs/wt103.yaml");
    char *odd = write_spec(fx, "odd.yaml",
                           "model: {kind: tensorized, vocab: 50, d_model: 33, layers: 1, rank: 2,\n"
                           "        seq_len: 4, d_inner: 8}\n");
    REFUSES("odd d_model without --vs", "d_model 33 is odd", odd);
    char *no_data = write_spec(fx, "no-data.yaml",
                               "model: {kind: tensorized, d_model: 32, layers: 1, rank: 2,\n"
                               "        seq_len: 4, d_inner: 8}\n"
                               "data: {train: missing.txt}\n");
    REFUSES("vocab: data from a missing file", "cannot take the vocabulary from data.train",
            no_data);
    REFUSES("--json --csv", "exclude each other", PTB, "--json", "--csv");
    REFUSES("--steps 0", "--steps is a count from 1 to 100000, not '0'", PTB, "--steps", "0");
    free(odd);
    free(no_data);
}

/* The comma-separated numbers of the line at `at` (up to its newline) into f, NaN for an empty
 * field; returns how many, or -1 for anything else (more than max, a field not a number). */
static int csv_fields(const char *at, double *f, int max)
{
    for (int n = 0; n < max; at++) {
        f[n] = NAN;
        if (*at != ',' && *at != '\n' && *at) {
            char *end;
            f[n] = strtod(at, &end);
            at = end;
        }
        n++;
        if (*at != ',') return *at == '\n' || !*at ? n : -1;
    }
    return -1;
}

/* tt-bench --profile: without a GPU one line on stderr that says so, exit 1; with one, the CSV of
 * every role (8 rows), shares that add up to 1, time in the roles every step has, useful FLOPs
 * where the cost model counts them, useful bytes for every role that has time, GB/s their ratio,
 * and a roofline fraction at least the FLOPs' share of the peak. --vs is refused. */
static void test_profile(void **state)
{
    (void)state;
    REFUSES("--profile --vs", "--profile measures SPEC alone", PTB, "--profile", "--vs", TXL_PTB);
    tu_proc p;
    RUN(&p, PTB, "--profile", "--csv", "--steps", "3");
    tt_device_info info;
    char why[512];
    if (tt_device_query(0, &info, why, sizeof why) != 0) {
        tu_expect_exit(&p, 1, "tt-bench --profile without a GPU");
        if (tu_count_lines(p.err) != 1 || !strstr(p.err, "tt-bench --profile: needs a GPU: no CUDA device"))
            fail_msg("not one line that says a GPU is needed:\n%s", p.err);
        assert_string_equal(p.out, "");
        print_message("  %s", p.err);
        tu_proc_free(&p);
        return;
    }
    tu_expect_exit(&p, 0, "tt-bench --profile");
    static const char *const roles[] = {"embedding", "qkv", "attention", "o", "layernorm", "ffn",
                                        "softmax", "optimizer"};
    static const char header[] = "role,forward_ms,backward_ms,ms,share,gflop,tflops,peak_fraction,"
                                 "gbytes,gbps,roofline_fraction\n";
    const char *line = strchr(p.out, '\n');
    if (!line || (size_t)(line - p.out + 1) != strlen(header) || strncmp(p.out, header, strlen(header)))
        fail_msg("not the profile's CSV header:\n%s", p.out);
    double share = 0;
    for (int r = 0; r < 8; r++) {
        line++;
        char name[32];
        int at = 0;
        double v[12];
        if (sscanf(line, "%31[^,],%n", name, &at) != 1 || strcmp(name, roles[r]) ||
            csv_fields(line + at, v, 12) != 10)
            fail_msg("row %d is not %s's: %.120s", r + 1, roles[r], line);
        /* forward_ms backward_ms ms share gflop tflops peak_fraction gbytes gbps roofline */
        const double ms = v[2], peak_fraction = v[6], gbytes = v[7], gbps = v[8], roof = v[9];
        const bool has = r != 3; /* the tensorized model has no o_net */
        if (has != (ms > 0)) fail_msg("%s: %g ms", roles[r], ms);
        if (has != (gbytes > 0)) fail_msg("%s: %g GB in %g ms", roles[r], gbytes, ms);
        if (has && fabs(gbps - gbytes / (ms * 1e-3)) > 1e-2 * gbps + 1e-3)
            fail_msg("%s: %g GB/s for %g GB in %g ms", roles[r], gbps, gbytes, ms);
        /* an unknown card leaves both fractions empty */
        if (has && !isnan(roof) &&
            !(roof > 0 && (isnan(peak_fraction) || roof >= peak_fraction - 2e-6)))
            fail_msg("%s: roofline fraction %g, peak fraction %g", roles[r], roof, peak_fraction);
        share += v[3];
        line = strchr(line, '\n');
    }
    /* each share is printed to 6 decimals (within 5e-7): the 8 of them sum to 1 within 4e-6 */
    if (fabs(share - 1) > 8 * 5e-7 + 1e-12) fail_msg("the shares add up to %.9f", share);
    tu_proc_free(&p);
    /* --json: the kernels by op add up to the kernel nodes, ours named by the plan's ops (the
     * attention's backward and Adam among them), cuBLAS's products under one name */
    RUN(&p, PTB, "--profile", "--json", "--steps", "3");
    tu_expect_exit(&p, 0, "tt-bench --profile --json");
    const char *k = strstr(p.out, "\"kernels\":"), *ops = strstr(p.out, "\"kernels_by_op\":[");
    if (!k || !ops) fail_msg("no kernels or kernels_by_op:\n%.400s", p.out);
    const int kernels = atoi(k + strlen("\"kernels\":"));
    const char *end = strchr(ops, ']');
    int sum = 0, named = 0;
    for (const char *n = strstr(ops, "\"n\":"); n && n < end; n = strstr(n + 1, "\"n\":")) sum += atoi(n + 4);
    static const char *const want[] = {"\"op\":\"mla_bwd_q\"", "\"op\":\"adam\"",
                                       "\"op\":\"cuBLAS and others\""};
    for (int i = 0; i < 3; i++) {
        const char *at = strstr(ops, want[i]);
        named += at && at < end;
    }
    print_message("  %d kernels; by op: %.*s\n", kernels, (int)(end - ops), ops);
    /* the parts' sum against the same step on one stream without the marks: within 10%, what
     * issue 17 asks of the profile (the marks' cost; a replay miscounted, or a missing division
     * by the steps, is far outside). Event nodes as marks summed to 1.20 here, clock-reading
     * kernels to 1.03 (H100, forty-first session). */
    const char *one = strstr(p.out, "\"one_stream_ms\":"), *psum = strstr(p.out, "\"parts_sum_ms\":");
    if (!one || !psum) fail_msg("no one_stream_ms or parts_sum_ms:\n%.400s", p.out);
    const double one_ms = atof(one + strlen("\"one_stream_ms\":")),
                 sum_ms = atof(psum + strlen("\"parts_sum_ms\":"));
    print_message("  parts %.4f ms, one stream %.4f ms (%.2f)\n", sum_ms, one_ms, sum_ms / one_ms);
    if (!(one_ms > 0 && fabs(sum_ms / one_ms - 1) <= 0.10))
        fail_msg("parts %g ms against one stream's %g ms", sum_ms, one_ms);
    if (kernels <= 0 || sum != kernels || named != 3)
        fail_msg("kernels %d, by op %d, named %d of 3:\n%.*s", kernels, sum, named, (int)(end - ops + 1), ops);
    /* the trained step's graph replayed back to back: the same work as the step on one stream
     * but for the side stream's overlap (a few percent), and no slower than the steps with the
     * host between them (another graph, or launches timed without their work, are far off) */
    const char *rep = strstr(p.out, "\"replay_ms\":"), *st = strstr(p.out, "\"step_ms\":");
    if (!rep || !st) fail_msg("no replay_ms or step_ms:\n%.400s", p.out);
    const double replay_ms = atof(rep + strlen("\"replay_ms\":")), step_ms = atof(st + strlen("\"step_ms\":"));
    print_message("  replayed %.4f ms, trained %.4f ms a step\n", replay_ms, step_ms);
    if (!(replay_ms >= 0.8 * one_ms && replay_ms <= 1.1 * step_ms))
        fail_msg("replayed %g ms against one stream's %g and the trained step's %g", replay_ms, one_ms, step_ms);
    tu_proc_free(&p);
}

/* tt-bench sweep on a small spec and corpus: every (rank, cores, seq_len) a row of the
 * documented CSV, in order; parameters and FLOPs as tt-bench reports the same variant; with
 * --train-steps a finite validation perplexity; the measured columns empty without a GPU (and
 * filled with one); the plot written when gnuplot is there, else a line says why; and the
 * refusals in one line. */
static void test_sweep(void **state)
{
    fixture *fx = *state;
    char *train = tt_xasprintf("%s/train.txt", fx->root), *valid = tt_xasprintf("%s/valid.txt", fx->root);
    FILE *t = fopen(train, "w"), *v = fopen(valid, "w");
    assert_non_null(t);
    assert_non_null(v);
    for (int i = 0; i < 300; i++) fprintf(t, "w%d w%d w%d\n", i % 17, (i * 7) % 17, (i * 3) % 17);
    for (int i = 0; i < 30; i++) fprintf(v, "w%d w%d\n", (i * 5) % 17, i % 17);
    fclose(t);
    fclose(v);
    char *text = tt_xasprintf("model: {kind: tensorized, vocab: data, d_model: 16, layers: 1, rank: 2,\n"
                              "        seq_len: 4, d_inner: 24}\n"
                              "train: {batch: 2, steps: 100}\n"
                              "data: {train: %s, valid: %s}\n", train, valid);
    char *spec = write_spec(fx, "sweep.yaml", text), *out = tt_xasprintf("%s/out", fx->root);
    tu_proc p;
    RUN(&p, "sweep", spec, "--rank", "2,4", "--cores", "1,2", "--seq-len", "4,6", "--train-steps", "3",
        "--out", out);
    tu_expect_exit(&p, 0, "tt-bench sweep");
    if (tu_count_lines(p.err) < 8) fail_msg("no progress line per point on stderr:\n%s", p.err);
    char *csv_path = tt_xasprintf("%s/sweep.csv", out);
    size_t len;
    char *csv = tu_read_file(csv_path, &len);
    const char *header = "rank,cores,seq_len,parameters,flops_forward,flops_train_step,"
                         "train_tokens_per_s,eval_tokens_per_s,step_ms,peak_memory_bytes,mfu_percent,"
                         "train_steps,valid_ppl,status,family,mem_len,lr,lr_from,steps,best_step,"
                         "test_ppl,seconds,seed,spec_sha256,commit,card,patience,trained_tokens_per_s\n";
    if (strncmp(csv, header, strlen(header)) != 0) fail_msg("sweep.csv's header:\n%s", csv);
    tt_device_info info;
    char why[512];
    const bool gpu = tt_device_query(0, &info, why, sizeof why) == 0;
    const char *line = csv + strlen(header);
    int rows = 0;
    for (int a = 0; a < 2; a++)
        for (int b = 0; b < 2; b++)
            for (int q = 0; q < 2; q++) {
                const int rank = a ? 4 : 2, cores = b + 1, n = q ? 6 : 4;
                char f[28][128];
                int nf = 0, k = 0;
                const char *c = line;
                for (; *c && *c != '\n'; c++) {
                    if (*c == ',') {
                        f[nf++][k] = 0, k = 0;
                        if (nf == 28) fail_msg("a row of more than 28 fields: %s", line);
                    } else if (k < 127) {
                        f[nf][k++] = *c;
                    }
                }
                f[nf++][k] = 0;
                if (nf != 28) fail_msg("row %d has %d fields: %.*s", rows, nf, (int)(c - line), line);
                if (atoi(f[0]) != rank || atoi(f[1]) != cores || atoi(f[2]) != n)
                    fail_msg("row %d is (%s, %s, %s), want (%d, %d, %d)", rows, f[0], f[1], f[2], rank,
                             cores, n);
                /* the same variant through tt-bench --json (17 words, <eos> and <unk>) */
                char name[64];
                snprintf(name, sizeof name, "v%d-%d-%d.yaml", rank, cores, n);
                char *vt = tt_xasprintf("model: {kind: tensorized, vocab: 19, d_model: 16, layers: 1, "
                                        "rank: %d, cores: %d, seq_len: %d, d_inner: 24}\n"
                                        "train: {batch: 2}\n", rank, cores, n);
                tu_proc j;
                run_inline_json(fx, name, vt, &j);
                expect_close(atof(f[3]), json_at(j.out, "ours", "parameters", "total"), "parameters");
                expect_close(atof(f[4]), json_at(j.out, "ours", "flops_per_token", "forward"), "forward FLOPs");
                expect_close(atof(f[5]), json_at(j.out, "ours", "flops_per_token", "train_step"), "step FLOPs");
                tu_proc_free(&j);
                free(vt);
                for (int m = 6; m <= 10; m++)
                    if ((f[m][0] != 0) != gpu)
                        fail_msg("row %d: measured column %d is '%s' %s a GPU", rows, m, f[m],
                                 gpu ? "with" : "without");
                if (atoi(f[11]) != 3) fail_msg("row %d: train_steps '%s'", rows, f[11]);
                const double ppl = atof(f[12]);
                if (!(ppl > 1 && ppl < 1000)) fail_msg("row %d: valid_ppl '%s'", rows, f[12]);
                if (strcmp(f[13], "ok")) fail_msg("row %d: status '%s'", rows, f[13]);
                if (strcmp(f[14], "tensorized-causal") || strcmp(f[17], "spec") || atoi(f[18]) != 3 ||
                    atoi(f[19]) != 3 || f[20][0])
                    fail_msg("row %d: family '%s', lr from '%s', steps '%s', best_step '%s', test_ppl "
                             "'%s' (no data.test)", rows, f[14], f[17], f[18], f[19], f[20]);
                rows++;
                line = *c ? c + 1 : c;
            }
    if (*line) fail_msg("rows after the 8 points: %s", line);
    char *png = tt_xasprintf("%s/sweep.png", out), *svg = tt_xasprintf("%s/sweep.svg", out);
    if (system("command -v gnuplot > /dev/null 2>&1") == 0) {
        size_t a, b;
        char *x = tu_read_file(png, &a), *y = tu_read_file(svg, &b);
        if (a < 8 || memcmp(x, "\x89PNG", 4) != 0 || !strstr(y, "<svg"))
            fail_msg("the plot is not a PNG and an SVG");
        if (strstr(p.out, "no plot")) fail_msg("gnuplot failed on the sweep's script:\n%s", p.out);
        free(x), free(y);
    } else if (!strstr(p.out, "no plot: gnuplot failed")) {
        fail_msg("without gnuplot, no line says why there is no plot:\n%s", p.out);
    }
    tu_proc_free(&p);
    /* refusals: one line each, exit 2 */
    REFUSES("sweep of a transformer-xl", "the sweep is over rank and cores of kind: tensorized",
            "sweep", TXL_PTB, "--rank", "8", "--cores", "1");
    REFUSES("--rank 8,x", "--rank takes up to", "sweep", spec, "--rank", "8,x", "--cores", "1");
    REFUSES("--rank 8, (a trailing comma)", "--rank takes up to", "sweep", spec, "--rank", "8,",
            "--cores", "1");
    REFUSES("--cores +2", "--cores takes up to", "sweep", spec, "--rank", "8", "--cores", "+2");
    REFUSES("--rank ' 8'", "--rank takes up to", "sweep", spec, "--rank", " 8", "--cores", "1");
    REFUSES("no --cores", "expected one spec, --rank and --cores", "sweep", spec, "--rank", "8");
    REFUSES("--train-steps x", "--train-steps is a count from 1, not 'x'", "sweep", spec, "--rank",
            "8", "--cores", "1", "--train-steps", "x");
    REFUSES("sweep --bogus", "unknown option '--bogus'", "sweep", spec, "--rank", "8", "--cores", "1",
            "--bogus");
    char *no_valid = write_spec(fx, "no-valid.yaml",
                                "model: {kind: tensorized, vocab: data, d_model: 16, layers: 1, rank: 2,\n"
                                "        seq_len: 4, d_inner: 24}\n"
                                "data: {train: missing.txt}\n");
    REFUSES("--train-steps without data", "tt-bench sweep: ", "sweep", no_valid, "--rank", "8",
            "--cores", "1", "--train-steps", "2");
    free(no_valid);
    free(train), free(valid), free(text), free(spec), free(out), free(csv_path), free(csv), free(png);
    free(svg);
}

/* --- tt-bench sweep trained to convergence ---------------------------------------------------- */

/* train.txt, valid.txt and test.txt in the fixture's folder: a training text of one fixed
 * sentence every other line and words drawn (a fixed generator) from 40 on the others, the
 * validation and test texts of such drawn words alone, so that validation stops improving after
 * some dozens of steps of a small model. */
static void write_unlearnable(const fixture *fx)
{
    static const char *const names[] = {"train", "valid", "test"};
    uint64_t x = 1;
    for (int k = 0; k < 3; k++) {
        char *path = tt_xasprintf("%s/%s.txt", fx->root, names[k]);
        FILE *f = fopen(path, "w");
        assert_non_null(f);
        for (int i = 0; i < (k ? 40 : 400); i++) {
            if (k == 0 && i % 2) {
                fprintf(f, "a b c d e f g h\n");
                continue;
            }
            for (int j = 0; j < 8; j++) {
                x = x * 6364136223846793005ull + 1442695040888963407ull;
                fprintf(f, "%sw%d", j ? " " : "", (int)(x >> 33) % 40);
            }
            fputc('\n', f);
        }
        fclose(f);
        free(path);
    }
}

#define SWEEP_SPEC                                                                                 \
    "model: {kind: tensorized, vocab: data, d_model: 32, layers: 2, rank: 4, seq_len: 8,\n"       \
    "        d_inner: 48}\n"                                                                       \
    "train: {batch: 4, steps: 1000, optimizer: {lr: 0.002}}\n"                                     \
    "data: {train: train.txt, valid: valid.txt, test: test.txt}\n"

/* A CSV the sweep wrote: row 0 the header. */
typedef struct {
    int rows, cols;
    char f[24][32][128];
} csv_table;

static csv_table *read_table(const char *path)
{
    char *text = tu_read_file(path, NULL);
    csv_table *t = tt_xcalloc(1, sizeof *t);
    int col = 0, k = 0;
    for (const char *c = text; *c; c++) {
        if (t->rows == 24 || col == 32) fail_msg("%s: more than 24 rows or 32 columns", path);
        if (*c == ',' || *c == '\n') {
            t->f[t->rows][col++][k] = 0;
            k = 0;
            if (*c == '\n') {
                if (t->rows && col != t->cols) fail_msg("%s: row %d has %d fields", path, t->rows, col);
                t->cols = col;
                t->rows++;
                col = 0;
            }
        } else if (k < 127) {
            t->f[t->rows][col][k++] = *c;
        }
    }
    free(text);
    return t;
}

static const char *cell(const csv_table *t, int row, const char *name)
{
    for (int c = 0; c < t->cols; c++)
        if (!strcmp(t->f[0][c], name)) return t->f[row][c];
    fail_msg("no column '%s'", name);
    return NULL;
}

/* tt-bench sweep of SWEEP_SPEC on write_unlearnable's corpus, both in the fixture's folder, with
 * args (NULL-terminated) after it, into DIR/out; exit 0 expected. Returns sweep.csv. */
static csv_table *run_sweep(const fixture *fx, const char *const *args)
{
    write_unlearnable(fx);
    char *spec = write_spec(fx, "sweep.yaml", SWEEP_SPEC), *out = tt_xasprintf("%s/out", fx->root);
    char *csv = tt_xasprintf("%s/sweep.csv", out);
    const char *argv[32] = {TT_BENCH_BIN, "sweep", spec, "--out", out};
    int n = 5;
    while (*args && n < 31) argv[n++] = *args++;
    argv[n] = NULL;
    tu_proc p;
    tu_proc_start(&p, argv, NULL);
    tu_proc_wait(&p, TIMEOUT);
    tu_expect_exit(&p, 0, "tt-bench sweep");
    if (strstr(p.out, "no plot") && system("command -v gnuplot > /dev/null 2>&1") == 0)
        fail_msg("gnuplot failed on the sweep's script:\n%s", p.out);
    tu_proc_free(&p);
    csv_table *t = read_table(csv);
    free(spec), free(out), free(csv);
    return t;
}

/* Row row of the sweep (t) against tt-train and tt-eval of the point's spec (text, written to
 * the fixture's folder): the same hash of the spec with its defaults filled in; tt-train with
 * the sweep's patience stops at the same step with the same best step and validation
 * perplexity; and tt-eval --split test of tt-train's weights at the best step gives the sweep's
 * test perplexity. */
static void expect_as_tt_train(const fixture *fx, const csv_table *t, int row, const char *text,
                               const char *patience)
{
    char *spec = write_spec(fx, "point.yaml", text), err[4096], hex[65];
    tt_spec s;
    if (tt_spec_load(spec, &s, err, sizeof err) != 0) fail_msg("%s", err);
    char *full = tt_spec_text(&s);
    uint8_t d[32];
    tt_sha256(full, strlen(full), d);
    tt_hex(d, sizeof d, hex);
    if (strcmp(hex, cell(t, row, "spec_sha256")))
        fail_msg("row %d: spec_sha256 %s, the point's spec gives %s:\n%s", row,
                 cell(t, row, "spec_sha256"), hex, full);
    free(full);
    tt_spec_free(&s);
    const long steps = atol(cell(t, row, "steps")), best = atol(cell(t, row, "best_step"));
    char *ck = tt_xasprintf("%s/ck", fx->root), *ck_best = tt_xasprintf("%s/ck-best", fx->root);
    char stop[32];
    snprintf(stop, sizeof stop, "%ld", best);
    tu_proc p;
    tu_proc_start(&p, (const char *const[]){TT_TRAIN_BIN, spec, "--patience", patience,
                                            "--checkpoint-dir", ck, "-q", NULL}, NULL);
    tu_proc_wait(&p, TIMEOUT);
    tu_expect_exit(&p, 0, "tt-train --patience");
    long first, last, at;
    double ppl;
    const char *trained = strstr(p.out, "trained steps ");
    const char *b = strstr(p.out, "(best ");
    if (!trained || !b || sscanf(trained, "trained steps %ld..%ld", &first, &last) != 2 ||
        sscanf(b, "(best %lf at step %ld)", &ppl, &at) != 2)
        fail_msg("tt-train's summary:\n%s", p.out);
    if (last != steps || at != best || fabs(ppl - atof(cell(t, row, "valid_ppl"))) > 6e-4)
        fail_msg("row %d: the sweep trained %ld steps, best %s at step %ld; tt-train:\n%s", row, steps,
                 cell(t, row, "valid_ppl"), best, p.out);
    tu_proc_free(&p);
    tu_proc_start(&p, (const char *const[]){TT_TRAIN_BIN, spec, "--stop-after", stop,
                                            "--checkpoint-dir", ck_best, "-q", NULL}, NULL);
    tu_proc_wait(&p, TIMEOUT);
    tu_expect_exit(&p, 0, "tt-train --stop-after");
    tu_proc_free(&p);
    tu_proc_start(&p, (const char *const[]){TT_EVAL_BIN, spec, "--checkpoint", ck_best, "--split",
                                            "test", "--json", NULL}, NULL);
    tu_proc_wait(&p, TIMEOUT);
    tu_expect_exit(&p, 0, "tt-eval --split test");
    const char *nll = strstr(p.out, "\"nll\":");
    if (!nll) fail_msg("tt-eval's JSON: %s", p.out);
    const double want = exp(atof(nll + 6)), got = atof(cell(t, row, "test_ppl"));
    if (fabs(got - want) > 1e-8 * want)
        fail_msg("row %d: test_ppl %.9g, tt-eval of the best step's weights %.9g", row, got, want);
    tu_proc_free(&p);
    tu_rm_rf(ck);
    tu_rm_rf(ck_best);
    free(ck), free(ck_best), free(spec);
}

/* Training until validation stops improving: the point stops P validations of E steps after its
 * best, well before K; the best step, the validation perplexity, the spec's hash and the test
 * perplexity (from the best step's weights) are tt-train's and tt-eval's for the same spec; every
 * column but the measured ones (without a GPU) is filled. */
static void test_sweep_patience(void **state)
{
    fixture *fx = *state;
    csv_table *t = run_sweep(fx, (const char *const[]){"--rank", "4", "--cores", "1", "--txl",
                                                       "--no-txl", "--train-steps", "300",
                                                       "--eval-interval", "10", "--patience", "3",
                                                       NULL});
    if (t->rows != 2) fail_msg("sweep.csv has %d rows, want 1 point (--no-txl after --txl)", t->rows - 1);
    const long steps = atol(cell(t, 1, "steps")), best = atol(cell(t, 1, "best_step"));
    if (!(steps < 300 && best >= 10 && steps - best == 30 && best % 10 == 0))
        fail_msg("trained %ld steps, best at %ld: not stopped 3 validations of 10 steps after the "
                 "best", steps, best);
    if (strcmp(cell(t, 1, "family"), "tensorized-causal") || strcmp(cell(t, 1, "lr_from"), "spec") ||
        atof(cell(t, 1, "lr")) != 0.002 || strcmp(cell(t, 1, "status"), "ok") ||
        atol(cell(t, 1, "train_steps")) != 300 || atol(cell(t, 1, "seed")) != 1)
        fail_msg("family %s, lr %s from %s, train_steps %s, seed %s, status %s", cell(t, 1, "family"),
                 cell(t, 1, "lr"), cell(t, 1, "lr_from"), cell(t, 1, "train_steps"),
                 cell(t, 1, "seed"), cell(t, 1, "status"));
    tt_device_info info;
    char why[512];
    const bool gpu = tt_device_query(0, &info, why, sizeof why) == 0;
    if (!gpu && strcmp(cell(t, 1, "card"), "cpu")) fail_msg("card '%s' without a GPU", cell(t, 1, "card"));
    for (int c = 0; c < t->cols; c++)
        if (!t->f[1][c][0] && (gpu || !strstr("train_tokens_per_s eval_tokens_per_s step_ms "
                                              "peak_memory_bytes mfu_percent", t->f[0][c])))
            fail_msg("column %s is empty", t->f[0][c]);
    expect_as_tt_train(fx, t, 1,
                       "model: {kind: tensorized, vocab: data, d_model: 32, layers: 2, rank: 4,\n"
                       "        cores: 1, seq_len: 8, d_inner: 48}\n"
                       "train: {batch: 4, steps: 300, eval_interval: 10, optimizer: {lr: 0.002}}\n"
                       "data: {train: train.txt, valid: valid.txt, test: test.txt}\n", "3");
    free(t);
}

/* A sweep's CSV with the columns of times (`seconds`, `trained_tokens_per_s`) blanked in every
 * row: what a rerun of its points must give (the CPU reference: bit-identical but for the time). */
static char *without_seconds(const char *path)
{
    csv_table *t = read_table(path);
    tt_buf b = {0};
    for (int r = 0; r < t->rows; r++)
        for (int c = 0; c < t->cols; c++)
            tt_buf_printf(&b, "%s%s",
                          r && (!strcmp(t->f[0][c], "seconds") || !strcmp(t->f[0][c], "trained_tokens_per_s"))
                              ? "" : t->f[r][c],
                          c + 1 < t->cols ? "," : "\n");
    free(t);
    return b.data;
}

/* tt-bench sweep SPEC --out DIR with the NULL-terminated option lists a and then b (a later
 * option wins; either may be NULL); exit 0 expected (what names the run). Fails unless `want`
 * lines of its stderr say a result was reused ("the last run's"). */
static void sweep_reusing(const char *spec, const char *dir, const char *const *a,
                          const char *const *b, int want, const char *what)
{
    const char *argv[48] = {TT_BENCH_BIN, "sweep", spec, "--out", dir};
    int n = 5;
    for (int i = 0; a && a[i]; i++) argv[n++] = a[i];
    for (int i = 0; b && b[i]; i++) argv[n++] = b[i];
    tu_proc p;
    tu_proc_start(&p, argv, NULL);
    tu_proc_wait(&p, TIMEOUT);
    tu_expect_exit(&p, 0, what);
    int reused = 0;
    for (const char *c = p.err; (c = strstr(c, "the last run's")); c++) reused++;
    if (reused != want)
        fail_msg("%s: %d lines say a result was reused, want %d:\n%s", what, reused, want, p.err);
    tu_proc_free(&p);
}

/* --resume: a sweep run again over its own output reuses every finished point and search trial
 * (a line says so; the files stay byte for byte); after a kill (a row gone, a row cut short, the
 * last search trial gone) it trains what is missing alone and gives the same files but for the
 * times; files of an older tt-bench (without the last column) are reused, the column empty;
 * without --resume nothing is reused; a file of another header is refused in one line. */
static void test_sweep_resume(void **state)
{
    fixture *fx = *state;
    static const char *const args[] = {"--rank", "2,4", "--cores", "1", "--causal", "true,false",
                                       "--lr", "3e-3,1e-3", "--train-steps", "60", "--eval-interval",
                                       "10", "--patience", "2", NULL};
    free(run_sweep(fx, args));
    char *csv = tt_xasprintf("%s/out/sweep.csv", fx->root), *lrs = tt_xasprintf("%s/out/lr_search.csv", fx->root);
    char *want_csv = tu_read_file(csv, NULL), *want_lr = tu_read_file(lrs, NULL);
    char *want_csv_ns = without_seconds(csv), *want_lr_ns = without_seconds(lrs);
    const char *resume[24] = {"--resume"};
    for (int i = 0; args[i]; i++) resume[i + 1] = args[i];
    /* all reused */
    char *spec = tt_xasprintf("%s/sweep.yaml", fx->root), *out = tt_xasprintf("%s/out", fx->root);
    sweep_reusing(spec, out, resume, NULL, 4 + 4, "tt-bench sweep --resume");
    char *got = tu_read_file(csv, NULL), *got_lr = tu_read_file(lrs, NULL);
    if (strcmp(got, want_csv) || strcmp(got_lr, want_lr))
        fail_msg("resumed over a finished sweep, the files changed:\n%s\n%s", got, got_lr);
    free(got), free(got_lr);
    /* a kill: the third row (unmasked, rank 2: the search's chosen trial) and the fourth gone, a
     * row cut short after them, the last trial gone from lr_search.csv */
    {
        const char *r2 = want_csv, *r3;
        for (int k = 0; k < 3; k++) r2 = strchr(r2, '\n') + 1;
        r3 = strchr(strchr(r2, '\n') + 1, '\n') + 1;
        tt_buf b = {0};
        tt_buf_append(&b, want_csv, (size_t)(r2 - want_csv));
        tt_buf_printf(&b, "%s", r3);
        tt_buf_append(&b, r2, 20); /* a row cut short */
        tu_write_text(csv, b.data);
        tt_buf_free(&b);
        char *lr_cut = tt_xstrdup(want_lr);
        char *last = lr_cut + strlen(lr_cut) - 1;
        while (last > lr_cut && last[-1] != '\n') last--;
        *last = 0;
        tu_write_text(lrs, lr_cut);
        free(lr_cut);
    }
    sweep_reusing(spec, out, resume, NULL, 8 - 3, "tt-bench sweep --resume after a kill");
    got = without_seconds(csv), got_lr = without_seconds(lrs);
    if (strcmp(got, want_csv_ns) || strcmp(got_lr, want_lr_ns))
        fail_msg("the resumed sweep's files differ from the first run's (times aside):\n%s\nwant\n%s\n"
                 "%s\nwant\n%s", got, want_csv_ns, got_lr, want_lr_ns);
    free(got), free(got_lr);
    /* files of the tt-bench before trained_tokens_per_s: read, every point and trial reused, the
     * column written back empty */
    {
        const char *const paths[2] = {csv, lrs};
        char *const wants[2] = {want_csv_ns, want_lr_ns};
        char *first = NULL;
        for (int k = 0; k < 2; k++) {
            char *text = tu_read_file(paths[k], NULL);
            tt_buf b = {0};
            for (char *line = text, *nl; (nl = strchr(line, '\n')); line = nl + 1) {
                const char *last = nl;
                while (last > line && last[-1] != ',') last--; /* the last column cut off */
                tt_buf_append(&b, line, (size_t)(last - 1 - line));
                tt_buf_printf(&b, "\n");
            }
            tu_write_text(paths[k], b.data);
            if (!k) first = b.data;
            else tt_buf_free(&b);
            free(text);
        }
        sweep_reusing(spec, out, resume, NULL, 8, "tt-bench sweep --resume over an older tt-bench's files");
        for (int k = 0; k < 2; k++) {
            got = without_seconds(paths[k]);
            if (strcmp(got, wants[k]))
                fail_msg("an older file resumed is not this one's with its new column empty:\n%s\n"
                         "want\n%s", got, wants[k]);
            free(got);
        }
        char *now = tu_read_file(csv, NULL);
        if (!strstr(now, ",\n") || strncmp(now, first, strcspn(first, "\n")))
            fail_msg("the older file's rows not written back with the new column empty:\n%s", now);
        free(now), free(first);
    }
    /* without --resume: nothing reused */
    sweep_reusing(spec, out, (const char *const[]){"--rank", "2", "--cores", "1", "--train-steps", "20", NULL},
                  NULL, 0, "tt-bench sweep over an old one");
    /* another header */
    tu_write_text(csv, "rank,cores\n8,1\n");
    REFUSES("--resume over another tool's CSV", "has another header than this tt-bench writes", "sweep",
            spec, "--out", out, "--resume", "--rank", "2", "--cores", "1", "--train-steps", "20");
    free(csv), free(lrs), free(want_csv), free(want_lr), free(want_csv_ns), free(want_lr_ns);
    free(spec), free(out);
}

/* Rows of a sweep's CSV at path without its header (the whole file when header is true). */
static char *csv_body(const char *path, bool header)
{
    char *text = tu_read_file(path, NULL);
    if (header) return text;
    char *body = tt_xstrdup(strchr(text, '\n') + 1);
    free(text);
    return body;
}

/* A grid split over four runs, as bench/paper-sweep.sh's options split it for several GPUs (by
 * family, the Transformer-XLs alone with --txl-only, and a family's later ranks at the rate its
 * search chose), their files joined (one header, every part's rows) and the whole grid run over
 * them with --resume: every point and trial reused, and the files those of the whole grid run at
 * once, but for the times. */
static void test_sweep_split(void **state)
{
    fixture *fx = *state;
    static const char *const grid[] = {"--rank", "2,4", "--cores", "1", "--causal", "true,false",
                                       "--txl", "--lr", "3e-3,1e-3", "--train-steps", "40",
                                       "--eval-interval", "10", "--patience", "2", NULL};
    free(run_sweep(fx, grid)); /* the whole grid at once: out/ */
    char *out = tt_xasprintf("%s/out", fx->root), *spec = tt_xasprintf("%s/sweep.yaml", fx->root);
    enum { PARTS = 4 };
    char *files[2][1 + PARTS]; /* [sweep.csv, lr_search.csv][whole, the parts] */
    static const char *const names[2] = {"sweep.csv", "lr_search.csv"};
    for (int k = 0; k < 2; k++) files[k][0] = tt_xasprintf("%s/%s", out, names[k]);
    char *want[2] = {without_seconds(files[0][0]), without_seconds(files[1][0])};
    const char *resumed[24] = {"--resume"};
    for (int i = 0; grid[i]; i++) resumed[i + 1] = grid[i];
    /* the causal family's search with its first rank; the unmasked family; the Transformer-XLs
     * alone; the causal family's other rank at the rate the first part chose (its one trial is
     * that point's run, a row the whole grid does not keep) */
    char chosen[64] = "";
    const char *parts[PARTS][8] = {{"--causal", "true", "--rank", "2", "--no-txl", NULL},
                                   {"--causal", "false", "--no-txl", NULL},
                                   {"--txl-only", NULL},
                                   {"--causal", "true", "--rank", "4", "--no-txl", "--lr", chosen, NULL}};
    for (int part = 0; part < PARTS; part++) {
        char *dir = tt_xasprintf("%s/part%d", fx->root, part);
        sweep_reusing(spec, dir, grid, parts[part], 0, "a part of the grid");
        for (int k = 0; k < 2; k++) files[k][1 + part] = tt_xasprintf("%s/%s", dir, names[k]);
        free(dir);
        if (part == 0) {
            csv_table *t = read_table(files[1][1]);
            for (int r = 1; r < t->rows; r++)
                if (atoi(cell(t, r, "chosen"))) snprintf(chosen, sizeof chosen, "%s", cell(t, r, "lr"));
            if (!*chosen) fail_msg("the first part's lr_search.csv marks no rate chosen");
            free(t);
        }
        if (part == 2) { /* --txl-only: the two Transformer-XL rows alone */
            csv_table *t = read_table(files[0][3]);
            if (t->rows != 3 || strcmp(cell(t, 1, "family"), "txl-mem") ||
                strcmp(cell(t, 2, "family"), "txl-nomem"))
                fail_msg("--txl-only wrote %d rows, want the two Transformer-XLs'", t->rows - 1);
            free(t);
        }
    }
    /* the last part again over the whole grid's sweep.csv alone: its one trial is that point's
     * row there, the same training, so nothing is trained */
    {
        char *seeded = tt_xasprintf("%s/seeded", fx->root), *csv = tt_xasprintf("%s/sweep.csv", seeded);
        assert_int_equal(mkdir(seeded, 0755), 0);
        char *text = tu_read_file(files[0][0], NULL);
        tu_write_text(csv, text);
        sweep_reusing(spec, seeded, resumed, parts[PARTS - 1], 2,
                      "a part over the whole grid's sweep.csv alone (2: the trial, its point)");
        free(text), free(csv), free(seeded);
    }
    /* joined into a fresh folder, the last part's rows first: rows are found by their hash */
    char *joined = tt_xasprintf("%s/joined", fx->root);
    assert_int_equal(mkdir(joined, 0755), 0);
    for (int k = 0; k < 2; k++) {
        char *text = csv_body(files[k][PARTS], true);
        for (int part = PARTS - 1; part >= 1; part--) {
            char *body = csv_body(files[k][part], false), *both = tt_xasprintf("%s%s", text, body);
            free(text), free(body);
            text = both;
        }
        char *path = tt_xasprintf("%s/%s", joined, names[k]);
        tu_write_text(path, text);
        free(text), free(path);
    }
    sweep_reusing(spec, joined, resumed, NULL, 6 + 8,
                  "the whole grid over the joined parts (14: 6 points, 8 trials)");
    for (int k = 0; k < 2; k++) {
        char *path = tt_xasprintf("%s/%s", joined, names[k]), *got = without_seconds(path);
        if (strcmp(got, want[k]))
            fail_msg("the joined parts' %s is not the whole grid's:\n%s\nwant\n%s", names[k], got,
                     want[k]);
        free(got), free(path);
        for (int j = 0; j <= PARTS; j++) free(files[k][j]);
        free(want[k]);
    }
    free(joined), free(out), free(spec);
}

/* Both masks, Transformer-XL with memory and without, each family's learning rate searched:
 * lr_search.csv has each family's rates, the chosen one of the lowest validation perplexity;
 * each family's rows are trained with it (its first point is the search's run); the
 * Transformer-XL rows have no rank or cores and mem_len seq_len or 0; and the Transformer-XL
 * with memory is tt-train's and tt-eval's (its segments with memory) for its spec; and the plot's
 * Pareto front over parameters is the rows that no other beats. */
static void test_sweep_families(void **state)
{
    fixture *fx = *state;
    csv_table *t = run_sweep(fx, (const char *const[]){"--rank", "2,4,8", "--cores", "1", "--causal",
                                                       "true,false", "--txl", "--lr", "3e-3,1e-3",
                                                       "--train-steps", "300", "--eval-interval",
                                                       "10", "--patience", "3", NULL});
    char *path = tt_xasprintf("%s/out/lr_search.csv", fx->root);
    csv_table *s = read_table(path);
    static const char *const fams[] = {"tensorized-causal", "tensorized-unmasked", "txl-mem",
                                       "txl-nomem"};
    static const int mem[] = {0, 0, 8, 0}, rows[] = {1, 4, 7, 8, 9}; /* each family's first row */
    if (t->rows != 9 || s->rows != 9)
        fail_msg("%d rows in sweep.csv and %d in lr_search.csv, want 8 and 8", t->rows - 1, s->rows - 1);
    for (int k = 0; k < 4; k++) {
        const int a = 1 + 2 * k, b = a + 1, chosen = atoi(cell(s, a, "chosen")) ? a : b;
        const int other = chosen == a ? b : a;
        if (strcmp(cell(s, a, "family"), fams[k]) || strcmp(cell(s, b, "family"), fams[k]) ||
            atof(cell(s, a, "lr")) != 3e-3 || atof(cell(s, b, "lr")) != 1e-3 ||
            atoi(cell(s, a, "chosen")) + atoi(cell(s, b, "chosen")) != 1 ||
            !(atof(cell(s, chosen, "valid_ppl")) <= atof(cell(s, other, "valid_ppl"))))
            fail_msg("lr_search.csv's rows of %s: (%s %s %s) (%s %s %s)", fams[k], cell(s, a, "lr"),
                     cell(s, a, "valid_ppl"), cell(s, a, "chosen"), cell(s, b, "lr"),
                     cell(s, b, "valid_ppl"), cell(s, b, "chosen"));
        for (int r = rows[k]; r < rows[k + 1]; r++)
            if (strcmp(cell(t, r, "family"), fams[k]) || atoi(cell(t, r, "mem_len")) != mem[k] ||
                strcmp(cell(t, r, "lr"), cell(s, chosen, "lr")) ||
                strcmp(cell(t, r, "lr_from"), "search") ||
                (r == rows[k] && strcmp(cell(t, r, "valid_ppl"), cell(s, chosen, "valid_ppl"))) ||
                (r == rows[k] && strcmp(cell(t, r, "steps"), cell(s, chosen, "steps"))) ||
                (k >= 2) != !cell(t, r, "rank")[0] || (k >= 2) != !cell(t, r, "cores")[0] ||
                strcmp(cell(t, r, "status"), "ok"))
                fail_msg("sweep.csv's row %d: %s rank '%s' cores '%s' mem_len %s lr %s from %s, "
                         "valid %s, status %s", r, cell(t, r, "family"), cell(t, r, "rank"),
                         cell(t, r, "cores"), cell(t, r, "mem_len"), cell(t, r, "lr"),
                         cell(t, r, "lr_from"), cell(t, r, "valid_ppl"), cell(t, r, "status"));
    }
    /* the default counterpart of d_model 32: one head of 32 */
    char *txl = tt_xasprintf("model: {kind: transformer-xl, vocab: data, d_model: 32, layers: 2,\n"
                             "        n_head: 1, d_head: 32, seq_len: 8, mem_len: 8, d_inner: 48}\n"
                             "train: {batch: 4, steps: 300, eval_interval: 10, optimizer: {lr: %s}}\n"
                             "data: {train: train.txt, valid: valid.txt, test: test.txt}\n",
                             cell(t, 7, "lr"));
    expect_as_tt_train(fx, t, 7, txl, "3");
    /* the plot's Pareto front over parameters: the rows no other has as few parameters and as
     * low a test perplexity as, by parameters */
    char *gp_path = tt_xasprintf("%s/out/sweep.gp", fx->root), *gp = tu_read_file(gp_path, NULL);
    const char *front = strstr(gp, "$front_params << EOD\n");
    if (!front) fail_msg("sweep.gp has no $front_params:\n%s", gp);
    front += strlen("$front_params << EOD\n");
    double last = 0;
    for (int n = 0;; n++) {
        double x, y;
        if (!strncmp(front, "EOD\n", 4)) {
            int want = 0;
            for (int i = 1; i < t->rows; i++) {
                bool beaten = false;
                for (int j = 1; j < t->rows; j++)
                    beaten |= j != i && atof(cell(t, j, "parameters")) <= atof(cell(t, i, "parameters")) &&
                              atof(cell(t, j, "test_ppl")) < atof(cell(t, i, "test_ppl"));
                want += !beaten;
            }
            if (n != want) fail_msg("the front has %d points, want %d:\n%s", n, want, gp);
            break;
        }
        if (sscanf(front, "%lf %lf", &x, &y) != 2 || x <= last) fail_msg("sweep.gp's front:\n%s", gp);
        last = x;
        bool row = false, beaten = false;
        for (int j = 1; j < t->rows; j++) {
            const double px = atof(cell(t, j, "parameters")), py = atof(cell(t, j, "test_ppl"));
            row |= px == x && fabs(py - y) <= 1e-8 * y;
            beaten |= px <= x && py < y * (1 - 1e-8);
        }
        if (!row || beaten) fail_msg("front point (%g, %g): %s", x, y, row ? "beaten" : "not a row");
        front = strchr(front, '\n') + 1;
    }
    free(gp), free(gp_path);
    /* table.md: a row per CSV row in its order, marked on the parameters' front exactly where no
     * other row has as few parameters and as low a test perplexity, one of them fewer */
    char *md_path = tt_xasprintf("%s/out/table.md", fx->root), *md = tu_read_file(md_path, NULL);
    const char *line = strstr(md, "|---");
    if (!line || strstr(md, "the paper")) fail_msg("table.md:\n%s", md);
    line = strchr(line, '\n') + 1;
    for (int i = 1; i < t->rows; i++, line = strchr(line, '\n') + 1) {
        char want[64];
        snprintf(want, sizeof want, "| %s |", cell(t, i, "family"));
        if (strncmp(line, want, strlen(want))) fail_msg("table.md's row %d is not %s:\n%s", i, want, md);
        const double xi = atof(cell(t, i, "parameters")), yi = atof(cell(t, i, "test_ppl"));
        bool beaten = false;
        for (int j = 1; j < t->rows; j++) {
            const double xj = atof(cell(t, j, "parameters")), yj = atof(cell(t, j, "test_ppl"));
            beaten |= j != i && xj <= xi && yj <= yi && (xj < xi || yj < yi);
        }
        const char *end = strchr(line, '\n');
        const char *mark = strstr(line, "parameters");
        if (beaten == (mark && mark < end))
            fail_msg("table.md's row %d is %s the parameters' front:\n%s", i, beaten ? "on" : "off", md);
    }
    if (*line) fail_msg("table.md has more rows than sweep.csv:\n%s", md);
    free(md), free(md_path);
    free(txl), free(path), free(s), free(t);
}

/* The plot's labels: two points a core count apart have about the same parameters, so on the
 * parameters' panel their labels would overlap: one label, on the better point, stands for both
 * ("R2 c1,2 u") when both are on the front; else the front's point alone is labelled. */
static void test_sweep_labels(void **state)
{
    fixture *fx = *state;
    csv_table *t = run_sweep(fx, (const char *const[]){"--rank", "2", "--cores", "1,2", "--causal",
                                                       "false", "--train-steps", "40",
                                                       "--eval-interval", "10", NULL});
    if (t->rows != 3) fail_msg("%d rows in sweep.csv, want 2", t->rows - 1);
    const double p1 = atof(cell(t, 1, "parameters")), p2 = atof(cell(t, 2, "parameters"));
    const bool both = atof(cell(t, 2, "test_ppl")) < atof(cell(t, 1, "test_ppl"));
    if (!(p2 > p1 && p2 < p1 * 1.001)) fail_msg("parameters %g and %g: want a hair more at 2 cores", p1, p2);
    char *gp_path = tt_xasprintf("%s/out/sweep.gp", fx->root), *gp = tu_read_file(gp_path, NULL);
    const char *pts = strstr(gp, "$points << EOD\n");
    if (!pts) fail_msg("sweep.gp has no $points:\n%s", gp);
    pts += strlen("$points << EOD\n");
    char label[2][64];
    for (int i = 0; i < 2; i++) {
        double x, y, z;
        int fam;
        if (sscanf(pts, "%lf %lf %lf %d \"%63[^\"]\"", &x, &y, &z, &fam, label[i]) != 5) label[i][0] = 0;
        pts = strchr(pts, '\n') + 1;
    }
    const char *want = both ? "R2 c1,2 u" : "R2 c1 u";
    if (!!label[0][0] + !!label[1][0] != 1 || strcmp(label[0][0] ? label[0] : label[1], want))
        fail_msg("the parameters' labels: '%s' and '%s', want '%s' on one alone:\n%s", label[0],
                 label[1], want, gp);
    free(gp), free(gp_path), free(t);
}

/* The paper's figures beside ours where the spec has its shapes (ptb.yaml: L 3, D 256, N 32 for
 * the paper's 30, F 2100, V 10000): two rows of table.md, its core-1 and core-2 test perplexity;
 * with the cost model alone (no training, no GPU) the table has every point's parameters. */
static void test_sweep_paper(void **state)
{
    fixture *fx = *state;
    char *spec = tt_xasprintf("%s/specs/ptb.yaml", TT_SOURCE_DIR), *out = tt_xasprintf("%s/p", fx->root);
    tu_proc p;
    RUN(&p, "sweep", spec, "--rank", "20,40", "--cores", "1,2", "--out", out);
    tu_expect_exit(&p, 0, "a sweep of ptb.yaml");
    tu_proc_free(&p);
    char *md_path = tt_xasprintf("%s/table.md", out), *md = tu_read_file(md_path, NULL);
    if (!strstr(md, "| the paper, PTB, core-1 (unmasked) | 40 | 1 | 30 | | 12M | | | | | | 57.9 |") ||
        !strstr(md, "| the paper, PTB, core-2 (unmasked) | 40 | 2 | 30 | | 12M | | | | | | 49.8 |") ||
        !strstr(md, "| tensorized-causal | 40 | 2 | 32 | 0 | 6684572 |"))
        fail_msg("table.md lacks the paper's rows or a point's:\n%s", md);
    print_message("  %s", strstr(md, "| the paper"));
    free(md), free(md_path), free(out), free(spec);
}

/* The sweep's options refused in one line, exit 2. */
static void test_sweep_refusals(void **state)
{
    fixture *fx = *state;
    write_unlearnable(fx);
    char *spec = write_spec(fx, "sweep.yaml", SWEEP_SPEC);
    char *odd = write_spec(fx, "odd.yaml",
                           "model: {kind: tensorized, vocab: 50, d_model: 33, layers: 1, rank: 2,\n"
                           "        seq_len: 4, d_inner: 8}\n");
#define SWEEP_REFUSES(what, part, ...) REFUSES(what, part, "sweep", spec, "--rank", "4", "--cores", "1", __VA_ARGS__)
    SWEEP_REFUSES("--causal yes", "--causal takes true, false or both", "--causal", "yes");
    SWEEP_REFUSES("--causal true,", "--causal takes true, false or both", "--causal", "true,");
    SWEEP_REFUSES("--lr 0", "--lr takes up to 16 numbers above 0 and at most 1", "--train-steps", "2",
                  "--lr", "0");
    SWEEP_REFUSES("--lr 1e-3,x", "--lr takes up to", "--train-steps", "2", "--lr", "1e-3,x");
    SWEEP_REFUSES("--lr 2", "--lr takes up to", "--train-steps", "2", "--lr", "2");
    SWEEP_REFUSES("--lr without --train-steps", "--lr needs --train-steps K", "--lr", "1e-3");
    SWEEP_REFUSES("--patience without --eval-interval", "--patience needs --eval-interval E",
                  "--train-steps", "2", "--patience", "2");
    SWEEP_REFUSES("--eval-interval without --train-steps", "--eval-interval needs --train-steps K",
                  "--eval-interval", "2");
    SWEEP_REFUSES("--patience 0", "--patience is a count from 1, not '0'", "--train-steps", "2",
                  "--eval-interval", "1", "--patience", "0");
    SWEEP_REFUSES("--eval-interval x", "--eval-interval is a count from 1, not 'x'", "--train-steps",
                  "2", "--eval-interval", "x");
    /* a folder where sweep.csv cannot be written (a directory of that name): --resume cannot
     * read it (exit 2, one line); without, the first point's save fails: exit 1, the last line
     * of stderr saying which file */
    char *out = tt_xasprintf("%s/blocked", fx->root), *blocker = tt_xasprintf("%s/sweep.csv", out);
    assert_int_equal(mkdir(out, 0755), 0);
    assert_int_equal(mkdir(blocker, 0755), 0);
    SWEEP_REFUSES("--resume over a sweep.csv that is a directory", "sweep.csv: not a regular file",
                  "--train-steps", "2", "--out", out, "--resume");
    tu_proc p;
    RUN(&p, "sweep", spec, "--rank", "4", "--cores", "1", "--train-steps", "2", "--out", out);
    tu_expect_exit(&p, 1, "a sweep whose sweep.csv cannot be written");
    const char *last = p.err + strlen(p.err);
    while (last > p.err && last[-1] == '\n') last--;
    while (last > p.err && last[-1] != '\n') last--;
    if (strncmp(last, "tt-bench sweep: ", 16) || !strstr(last, blocker) ||
        strchr(last, '\n') != p.err + strlen(p.err) - 1)
        fail_msg("the last line of stderr does not say sweep.csv cannot be written:\n%s", p.err);
    tu_proc_free(&p);
    free(out), free(blocker);
#undef SWEEP_REFUSES
    REFUSES("--txl of an odd d_model", "--txl: ", "sweep", odd, "--rank", "2", "--cores", "1", "--txl");
    free(spec), free(odd);
}

/* A log of tt-train --log-json in the fixture's folder. */
static char *write_log(const fixture *f, const char *name, const char *const *lines)
{
    tt_buf b = {0};
    for (; *lines; lines++) tt_buf_printf(&b, "%s\n", *lines);
    char *path = tt_xasprintf("%s/%s", f->root, name);
    tu_write_file(path, b.data, b.len);
    tt_buf_free(&b);
    return path;
}

/* tt-bench plot: two logs of tt-train --log-json, one of a run resumed after step 3 (its log
 * repeats the steps after its checkpoint), one with a skipped step; the script beside the
 * picture holds each log's rows in curve.tsv's format, the resumed run's later lines replacing
 * the earlier ones, and gnuplot draws a PNG from it when it is on PATH. Without gnuplot, and for
 * each bad input (a malformed line, a missing file, a log without steps, no log), one line. */
static void test_plot(void **state)
{
    fixture *fx = *state;
    char *a = write_log(fx, "a.jsonl", (const char *const[]){
        "{\"step\":1,\"loss\":3,\"nll\":3,\"lr\":0.1,\"grad_norm\":1}",
        "{\"step\":2,\"loss\":2.5,\"nll\":2.5,\"lr\":0.1,\"grad_norm\":1}",
        "{\"step\":2,\"valid_nll\":3,\"valid_tokens\":100}",
        "{\"step\":3,\"loss\":2.25,\"nll\":2.25,\"lr\":0.1,\"grad_norm\":1}",
        "{\"step\":4,\"loss\":2,\"nll\":2,\"lr\":0.1,\"grad_norm\":1}",
        "{\"step\":4,\"valid_nll\":2,\"valid_tokens\":100}",
        "{\"step\":5,\"loss\":1.75,\"nll\":1.75,\"lr\":0.1,\"grad_norm\":1}",
        "{\"step\":4,\"loss\":1.5,\"nll\":1.5,\"lr\":0.1,\"grad_norm\":1}",
        "{\"step\":4,\"valid_nll\":1,\"valid_tokens\":100}",
        "{\"step\":5,\"loss\":1.25,\"nll\":1.25,\"lr\":0.1,\"grad_norm\":1}", NULL});
    char *b = write_log(fx, "b.jsonl", (const char *const[]){
        "{\"step\":1,\"loss\":4,\"nll\":4,\"lr\":0.1,\"grad_norm\":1}",
        "{\"step\":2,\"skipped\":true,\"lr\":0.1}",
        "{\"step\":3,\"loss\":3.5,\"nll\":3.5,\"lr\":0.1,\"grad_norm\":1}", NULL});
    char *png = tt_xasprintf("%s/out.png", fx->root), *gp = tt_xasprintf("%s/out.gp", fx->root);
    tu_proc p;
    RUN(&p, "plot", a, b, "-o", png, "--title", "two runs");
    if (tu_on_path("gnuplot")) {
        tu_expect_exit(&p, 0, "tt-bench plot");
        tu_expect_png(png);
    } else {
        expect_refusal_code(&p, 1, "tt-bench plot without gnuplot", "gnuplot not found on PATH");
        print_message("  skipped the check of the PNG: no gnuplot on PATH\n");
    }
    tu_proc_free(&p);
    char *script = tu_read_file(gp, NULL);
    char *rows = tt_xasprintf("\n$run1 << EOD\n1\t3\t\n2\t2.5\t\n2\t\t%.7g\n3\t2.25\t\n4\t1.5\t\n"
                              "4\t\t%.7g\n5\t1.25\t\nEOD\n$run2 << EOD\n1\t4\t\n3\t3.5\t\nEOD\n",
                              exp(3.0), exp(1.0));
    if (!strstr(script, rows) || !strstr(script, "title 'a.jsonl'") ||
        !strstr(script, "title 'b.jsonl'") || !strstr(script, "\nset title 'two runs'\n"))
        fail_msg("%s lacks the runs' rows (%s) or their names:\n%s", gp, rows, script);
    free(script), free(rows);

    char *nobin = tt_xasprintf("%s/nobin", fx->root), *path = tt_xasprintf("PATH=%s", nobin);
    assert_int_equal(mkdir(nobin, 0755), 0);
    tu_proc_start(&p, (const char *const[]){TT_BENCH_BIN, "plot", a, "-o", png, NULL},
                  (const char *const[]){path, NULL});
    tu_proc_wait(&p, TIMEOUT);
    expect_refusal_code(&p, 1, "tt-bench plot, no gnuplot on PATH", "tt-bench plot: gnuplot not found");
    tu_proc_free(&p);

    static const char *const bad[] = {"garbage", "{\"step\":2}", "{\"step\":2.5,\"loss\":1}",
                                      "{\"step\":2,\"loss\":\"x\"}", "{\"step\":2,\"loss\":1} x",
                                      "{\"step\":2,\"loss\":1,}", "{\"step\":2,\"loss\":NaN}",
                                      "{\"step\":2,\"loss\":1,\"valid_nll\":1}"};
    char *where = tt_xasprintf("%s/bad.jsonl:2: not a line of tt-train --log-json", fx->root);
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        char *bad_log = write_log(fx, "bad.jsonl", (const char *const[]){"{\"step\":1,\"loss\":1}",
                                                                         bad[i], NULL});
        REFUSES(bad[i], where, "plot", a, bad_log, "-o", png);
        free(bad_log);
    }
    char *missing = tt_xasprintf("%s/missing.jsonl", fx->root);
    REFUSES("a missing log", missing, "plot", missing);
    char *no_steps = write_log(fx, "no-steps.jsonl",
                               (const char *const[]){"{\"step\":1,\"skipped\":true,\"lr\":0.1}", NULL});
    REFUSES("a log without steps", "no training steps or validations", "plot", no_steps);
    REFUSES("no log", "expected one or more logs", "plot", "-o", png);
    free(a), free(b), free(png), free(gp), free(nobin), free(path), free(where), free(missing);
    free(no_steps);
}

#define IN_OWN_FOLDER(test) cmocka_unit_test_setup_teardown(test, setup, teardown)

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ptb_counts),
        IN_OWN_FOLDER(test_small_tensorized_counts),
        cmocka_unit_test(test_txl_ptb_counts),
        IN_OWN_FOLDER(test_small_txl_counts),
        cmocka_unit_test(test_csv_schema),
        cmocka_unit_test(test_text),
        IN_OWN_FOLDER(test_refusals),
        cmocka_unit_test(test_profile),
        IN_OWN_FOLDER(test_sweep),
        IN_OWN_FOLDER(test_sweep_patience),
        IN_OWN_FOLDER(test_sweep_families),
        IN_OWN_FOLDER(test_sweep_resume),
        IN_OWN_FOLDER(test_sweep_split),
        IN_OWN_FOLDER(test_sweep_refusals),
        IN_OWN_FOLDER(test_sweep_labels),
        IN_OWN_FOLDER(test_sweep_paper),
        IN_OWN_FOLDER(test_plot),
    };
    tu_test_only_from_env();
    return cmocka_run_group_tests(tests, NULL, NULL);
}
