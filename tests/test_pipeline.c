/* The pipeline at library level for every spec in specs/: spec -> plan -> source is deterministic
 * (byte-identical plans, sources and cache keys when built twice), kernel names carry their
 * constants, and every kernel of every spec compiles with NVRTC for sm_90 through one temporary
 * cache with no spills; a second run over a plan compiles nothing. No GPU needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "cache.h"
#include "compile.h"
#include "emit.h"
#include "plan.h"
#include "sha256.h"
#include "spec.h"
#include "testutil.h"
#include "util.h"

#define ARCH "sm_90"
#define MIN_SPECS 8

typedef struct {
    char root[64];
    char *failure_dir;
    tt_cache cache;
    glob_t specs;
} fixture;

static int group_setup(void **state)
{
    fixture *f = tt_xcalloc(1, sizeof *f);
    tu_temp_dir("pipeline", f->root, sizeof f->root);
    char err[512];
    if (tt_cache_open(&f->cache, f->root, err, sizeof err) != 0) {
        fprintf(stderr, "tt_cache_open: %s\n", err);
        return -1;
    }
    f->failure_dir = tt_xasprintf("%s/failed", f->root);
    int rc = glob(TT_SOURCE_DIR "/specs/*.yaml", 0, NULL, &f->specs);
    if (rc != 0 && rc != GLOB_NOMATCH) return -1;
    *state = f;
    return 0;
}

static int group_teardown(void **state)
{
    fixture *f = *state;
    if (!f) return 0;
    globfree(&f->specs);
    tt_cache_close(&f->cache);
    free(f->failure_dir);
    tu_rm_rf(f->root);
    free(f);
    return 0;
}

static void load_spec(const char *path, tt_spec *s)
{
    char err[1024];
    if (tt_spec_load(path, s, err, sizeof err) != 0) fail_msg("%s", err);
}

static void build_plan(const tt_spec *s, const char *arch, tt_plan *p)
{
    char err[512];
    if (tt_plan_build(s, arch, p, err, sizeof err) != 0) fail_msg("%s: plan: %s", s->path, err);
}

static void write_plan(const void *p, FILE *f) { tt_plan_write(p, f); }

static char *plan_text(const tt_plan *p) { return tt_capture(write_plan, p); }

static tt_build_opts opts_for(const fixture *f, const char *arch, const char *template_dir,
                              const char *const *extra, int n_extra)
{
    return (tt_build_opts){.arch = arch, .template_dir = template_dir, .extra_options = extra,
                           .n_extra = n_extra, .cache = &f->cache, .failure_dir = f->failure_dir,
                           .jobs = 2};
}

static tt_build *prepare(const tt_plan *p, const tt_build_opts *o)
{
    tt_build *b = NULL;
    char err[512];
    if (tt_builds_prepare(p, o, &b, err, sizeof err) != 0) fail_msg("prepare: %s", err);
    return b;
}

static const char *base(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

/* --- tests -------------------------------------------------------------------------------------- */

static void test_enough_specs(void **state)
{
    fixture *f = *state;
    print_message("  %zu specs in %s/specs\n", f->specs.gl_pathc, TT_SOURCE_DIR);
    if (f->specs.gl_pathc < MIN_SPECS)
        fail_msg("found %zu specs in %s/specs, want at least %d", f->specs.gl_pathc, TT_SOURCE_DIR,
                 MIN_SPECS);
}

/* Two loads of one spec give byte-identical plans; kernel names are unique within a plan. */
static void test_plan_deterministic(void **state)
{
    fixture *f = *state;
    assert_true(f->specs.gl_pathc >= MIN_SPECS);
    for (size_t i = 0; i < f->specs.gl_pathc; i++) {
        tt_spec s1, s2;
        load_spec(f->specs.gl_pathv[i], &s1);
        load_spec(f->specs.gl_pathv[i], &s2);
        tt_plan p1, p2, p3;
        build_plan(&s1, ARCH, &p1);
        build_plan(&s2, ARCH, &p2);
        build_plan(&s1, ARCH, &p3);
        assert_string_equal(p1.arch, ARCH);
        if (p1.n < 3) fail_msg("%s: %d kernels planned, want at least 3", s1.path, p1.n);
        char *t1 = plan_text(&p1), *t2 = plan_text(&p2), *t3 = plan_text(&p3);
        if (strcmp(t1, t2) != 0 || strcmp(t1, t3) != 0)
            fail_msg("%s: the plan differs between two builds:\n%s\n---\n%s", s1.path, t1, t2);
        for (int a = 0; a < p1.n; a++) {
            if (!strstr(t1, p1.kernels[a].name)) fail_msg("plan.txt lacks %s", p1.kernels[a].name);
            for (int b = a + 1; b < p1.n; b++)
                if (strcmp(p1.kernels[a].name, p1.kernels[b].name) == 0)
                    fail_msg("%s: kernel %s planned twice", s1.path, p1.kernels[a].name);
        }
        print_message("  %-22s %d kernels\n", base(s1.path), p1.n);
        free(t1), free(t2), free(t3);
        tt_plan_free(&p1), tt_plan_free(&p2), tt_plan_free(&p3);
        tt_spec_free(&s1), tt_spec_free(&s2);
    }
}

static void expect_in_name(const tt_kernel *k, const char *part, int want, const char *spec)
{
    int has = strstr(k->name, part) != NULL;
    if (has != want)
        fail_msg("%s: kernel %s %s '%s'", spec, k->name, want ? "lacks" : "should not contain", part);
}

/* Names carry the constants they were built for: op first, dtype last, shapes in between. */
static void test_names_carry_constants(void **state)
{
    fixture *f = *state;
    for (size_t i = 0; i < f->specs.gl_pathc; i++) {
        tt_spec s;
        load_spec(f->specs.gl_pathv[i], &s);
        tt_plan p;
        build_plan(&s, ARCH, &p);
        const tt_model_spec *m = &s.model;
        const char *act = s.train.precision == TT_PREC_BF16 ? "bf16" : "f32";
        int mla = 0, ln_fwd = 0, ln_bwd = 0;
        /* the LM's other kernels: one instance each, but the embedding's of one table
         * (div_val 1), the adaptive softmax's (cutoffs) and the adaptive embedding's (div_val > 1:
         * one per cluster for the kernels of a cluster's width DE) */
        static const char *const lm_ops[] = {
            "residual_ln_fwd", "residual_ln_bwd", "ffn_act_fwd", "ffn_act_bwd", "bias_colsum",
            "core_fwd", "core_bwd", "xent", "xent_sum", "adam", "grad_norm",
            "embedding_sort", "embedding_fwd", "embedding_bwd",
            "adaptive_gather", "adaptive_scatter_add", "adaptive_emb_scatter", "adaptive_emb_grad",
            "adaptive_emb_gather", "adaptive_emb_bwd", "embedding_bwd_sum"};
        const int one_table = m->div_val <= 1, adaptive = m->n_cutoffs > 0;
        const int lm_want[] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, one_table, one_table,
                               adaptive, adaptive, !one_table, !one_table,
                               one_table ? 0 : m->n_cutoffs + 1, one_table ? 0 : m->n_cutoffs + 1,
                               one_table ? 1 : m->n_cutoffs + 1};
        _Static_assert(sizeof lm_want / sizeof *lm_want == sizeof lm_ops / sizeof *lm_ops,
                       "a count for each op");
        int lm_count[sizeof lm_ops / sizeof *lm_ops] = {0};
        char part[96];
        for (int k = 0; k < p.n; k++) {
            const tt_kernel *kn = &p.kernels[k];
            const size_t opl = strlen(kn->op), nl = strlen(kn->name), dl = strlen(kn->dtype);
            if (strncmp(kn->name, kn->op, opl) != 0 || kn->name[opl] != '_')
                fail_msg("%s: kernel %s does not start with its op %s", s.path, kn->name, kn->op);
            if (nl < dl + 1 || kn->name[nl - dl - 1] != '_' || strcmp(kn->name + nl - dl, kn->dtype))
                fail_msg("%s: kernel %s does not end with its dtype %s", s.path, kn->name, kn->dtype);
            for (const char *c = kn->name; *c; c++)
                if (!((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z') ||
                      (*c >= '0' && *c <= '9') || *c == '_'))
                    fail_msg("%s: kernel name %s is not a C identifier", s.path, kn->name);
            /* widths in the name: D is d_model (d_inner for the FFN bias's colsum), F d_inner, DE
             * the width of an adaptive embedding's cluster (d_model / div_val^c) */
            const long dk = tt_kernel_const(kn, "D", -1), fk = tt_kernel_const(kn, "F", -1);
            const long dek = tt_kernel_const(kn, "DE", -1);
            const long wk = strcmp(kn->op, "embedding_bwd_sum") ? -1 : tt_kernel_const(kn, "W", -1);
            if (wk >= 0) { /* embedding_bwd_sum's table: the one table's, or a cluster's */
                snprintf(part, sizeof part, "_W%ld_", wk);
                expect_in_name(kn, part, 1, s.path);
                long w = m->d_model;
                int c = 0;
                while (!one_table && c < m->n_cutoffs && w != wk) w /= m->div_val, c++;
                if (w != wk) fail_msg("%s: %s: W %ld is no table's width", s.path, kn->name, wk);
            }
            if (dek >= 0) {
                snprintf(part, sizeof part, "_DE%ld_", dek);
                expect_in_name(kn, part, 1, s.path);
                long w = m->d_model;
                int c = 0;
                while (c < m->n_cutoffs && w != dek) w /= m->div_val, c++;
                if (w != dek) fail_msg("%s: %s: DE %ld is no cluster's width", s.path, kn->name, dek);
            }
            if (dk >= 0) {
                snprintf(part, sizeof part, "_D%ld_", dk);
                expect_in_name(kn, part, 1, s.path);
                assert_int_equal(dk, strcmp(kn->op, "bias_colsum") == 0 ? m->d_inner : m->d_model);
            }
            if (fk >= 0) {
                snprintf(part, sizeof part, "_F%ld_", fk);
                expect_in_name(kn, part, 1, s.path);
                assert_int_equal(fk, m->d_inner);
                /* the FFN's activations' row pitch, the runtime's: F padded to whole 16-byte
                 * groups of bf16, whole vectors of the kernel */
                const long ldk = tt_kernel_const(kn, "LD", -1), vec = tt_kernel_const(kn, "VEC", -1);
                snprintf(part, sizeof part, "_LD%ld_", ldk);
                expect_in_name(kn, part, 1, s.path);
                assert_int_equal(ldk, tt_row_pitch(m->d_inner));
                if (ldk < fk || ldk - fk >= 8 || ldk * 2 % 16 != 0 || vec < 1 || ldk % vec != 0)
                    fail_msg("%s: %s: row pitch %ld for F %ld and VEC %ld", s.path, kn->name, ldk,
                             fk, vec);
            }
            /* Transformer-XL's softmax rows: KMAX keys, enough for training's memory and
             * segment and evaluation's, in whole warps */
            const long kk = tt_kernel_const(kn, "KMAX", -1);
            if (kk >= 0) {
                snprintf(part, sizeof part, "_KMAX%ld_", kk);
                expect_in_name(kn, part, 1, s.path);
                if (kk % 32 || kk < m->mem_len + m->seq_len || kk < s.eval.mem_len + s.eval.tgt_len)
                    fail_msg("%s: %s: KMAX %ld", s.path, kn->name, kk);
            }
            /* Transformer-XL's heads: H heads of DH, padded to DP (whole 16-byte groups) */
            const long hk = strncmp(kn->op, "txl_", 4) == 0 ? tt_kernel_const(kn, "H", -1) : -1;
            if (hk >= 0) { /* DP where the kernel moves padded heads (not txl_uv_sum's sums) */
                const long dhk = tt_kernel_const(kn, "DH", -1), dpk = tt_kernel_const(kn, "DP", -1);
                if (dpk >= 0) snprintf(part, sizeof part, "_H%ld_DH%ld_DP%ld_", hk, dhk, dpk);
                else snprintf(part, sizeof part, "_H%ld_DH%ld_", hk, dhk);
                expect_in_name(kn, part, 1, s.path);
                if (hk != m->n_head || dhk != m->d_head ||
                    (dpk != tt_row_pitch(m->d_head) && strcmp(kn->op, "txl_uv_sum") != 0))
                    fail_msg("%s: %s: H %ld DH %ld DP %ld", s.path, kn->name, hk, dhk, dpk);
            }
            /* Transformer-XL's fused attention: heads DP wide (whole 16-byte groups), DK its
             * k-steps of 16 */
            const long fdk = strncmp(kn->op, "txl_attn_", 9) == 0 ? tt_kernel_const(kn, "DK", -1) : -1;
            if (fdk >= 0) {
                const long dpk = tt_kernel_const(kn, "DP", -1);
                snprintf(part, sizeof part, "_DH%d_DP%ld_DK%ld_", m->d_head, dpk, fdk);
                expect_in_name(kn, part, 1, s.path);
                if (dpk != tt_row_pitch(m->d_head) || fdk != (dpk + 15) / 16 * 16)
                    fail_msg("%s: %s: DP %ld DK %ld", s.path, kn->name, dpk, fdk);
            }
            /* adam, cast, cast_widen and txl_pe walk flat arrays of any length, xent rows of
             * logits of any length, copy_rows rows of bytes of any length: they have no width to
             * name */
            if (dk < 0 && fk < 0 && dek < 0 && kk < 0 && hk < 0 && fdk < 0 && strcmp(kn->dtype, "f32") != 0 && strcmp(kn->op, "adam") != 0 &&
                strncmp(kn->op, "cast", 4) != 0 && strncmp(kn->op, "xent", 4) != 0 &&
                strcmp(kn->op, "txl_pe") != 0 && strcmp(kn->op, "copy_rows") != 0)
                fail_msg("%s: kernel %s of the storage type names no width", s.path, kn->name);
            for (size_t o = 0; o < sizeof lm_ops / sizeof *lm_ops; o++)
                lm_count[o] += strcmp(kn->op, lm_ops[o]) == 0;
            if (!strncmp(kn->op, "mla_", 4) && !kn->strategy[0])
                fail_msg("%s: %s says no strategy", s.path, kn->name);
            if (strcmp(kn->op, "mla_fwd") == 0 || strcmp(kn->op, "mla_mat_prep") == 0) {
                mla++;
                /* the cost model, as the replayed steps measured it: T materialized at D 1024
                 * (lm1b) and at D 256 with N 32 (ptb, wt2), fused at D 256 with N 80 (wt103) */
                const bool mat = strcmp(kn->op, "mla_mat_prep") == 0;
                if (m->d_model >= 1024 || (m->d_model == 256 && m->seq_len == 32) ? !mat
                    : m->d_model == 256 && m->seq_len >= 80 && mat)
                    fail_msg("%s: D %d, and the attention is %s: %s", s.path, m->d_model,
                             mat ? "materialized" : "fused", kn->strategy);
                snprintf(part, sizeof part, "_N%d_R%d_D%d", m->seq_len, m->rank, m->d_model);
                expect_in_name(kn, part, 1, s.path);
                expect_in_name(kn, "_causal", m->causal, s.path);
                expect_in_name(kn, "_pos_key", m->position == TT_POS_KEY, s.path);
                assert_string_equal(kn->dtype, act);
                assert_int_equal(tt_kernel_const(kn, "N", -1), m->seq_len);
                assert_int_equal(tt_kernel_const(kn, "R", -1), m->rank);
            } else if (strncmp(kn->op, "layernorm_", 10) == 0) {
                ln_fwd += strcmp(kn->op, "layernorm_fwd") == 0;
                ln_bwd += strcmp(kn->op, "layernorm_bwd") == 0;
                assert_string_equal(kn->dtype, act);
            }
        }
        if (ln_fwd != 1 || ln_bwd != 1)
            fail_msg("%s: %d layernorm_fwd and %d layernorm_bwd instances, want one each", s.path,
                     ln_fwd, ln_bwd);
        if (mla != (m->kind == TT_KIND_TENSORIZED))
            fail_msg("%s (%s): %d instances of the attention's forward", s.path,
                     tt_kind_name(m->kind), mla);
        /* the bf16 path's attention runs on tensor cores (templates/mla_tc.cu): the forward and
         * mla_bwd_wo always, mla_bwd_q for position: none and D <= 256, or (reading dT, DT_MEM)
         * for position: none under the materialized strategy; feature tiles are whole n8 tiles
         * and the dynamic shared memory stays within what sm_80 and later opt in to */
        for (int k = 0; k < p.n && m->kind == TT_KIND_TENSORIZED; k++) {
            const tt_kernel *kn = &p.kernels[k];
            const int big = !strcmp(kn->op, "mla_fwd") || !strcmp(kn->op, "mla_bwd_wo") ||
                            !strcmp(kn->op, "mla_bwd_q");
            if (!big) continue;
            const bool mat = !strncmp(kn->strategy, "materialized", 12);
            const int want_mma = !strcmp(act, "bf16") &&
                                 (strcmp(kn->op, "mla_bwd_q") != 0 ||
                                  (m->position == TT_POS_NONE && (m->d_model <= 256 || mat)));
            if (tt_kernel_const(kn, "MMA", 0) != want_mma)
                fail_msg("%s: %s is %sthe tensor-core variant", s.path, kn->name, want_mma ? "not " : "");
            if (tt_kernel_const(kn, "DT_MEM", 0) != mat)
                fail_msg("%s: %s %s dT from memory", s.path, kn->name, mat ? "does not read" : "reads");
            if (want_mma) {
                assert_string_equal(kn->template_file, "mla_tc.cu");
                const int wg = (int)tt_kernel_const(kn, "WG", 0);
                const long td = tt_kernel_const(kn, "TD", wg ? 64 : 8); /* (mla_bwd_q has none) */
                if (td % (wg ? 64 : 8) != 0)
                    fail_msg("%s: %s: TD %ld is not whole %s tiles", s.path, kn->name, td, wg ? "n64" : "n8");
                /* the wgmma kernels run on sm_90 alone (227 KiB); the others on sm_86 too (99) */
                if (kn->dyn_smem > (wg ? 227u : 99u) * 1024)
                    fail_msg("%s: %s asks %u B of shared memory", s.path, kn->name, kn->dyn_smem);
                if (wg && strcmp(kn->arch, "sm_90a") != 0)
                    fail_msg("%s: %s uses wgmma but is built for '%s'", s.path, kn->name, kn->arch);
                if (!wg && kn->arch[0]) fail_msg("%s: %s is built for %s", s.path, kn->name, kn->arch);
            }
        }
        /* the padded copies' one launch, in every plan */
        int copies = 0;
        for (int k = 0; k < p.n; k++) copies += !strcmp(p.kernels[k].op, "copy_rows");
        if (copies != 1) fail_msg("%s: %d copy_rows instances, want 1", s.path, copies);
        for (size_t o = 0; o < sizeof lm_ops / sizeof *lm_ops; o++) {
            /* Transformer-XL has them all but the core's */
            const int want = m->kind == TT_KIND_TENSORIZED || strncmp(lm_ops[o], "core_", 5) != 0 ? lm_want[o] : 0;
            if (lm_count[o] != want)
                fail_msg("%s: %d %s instances, want %d", s.path, lm_count[o], lm_ops[o], want);
        }
        tt_plan_free(&p);
        tt_spec_free(&s);
    }
}

/* The source of an instance: the generated-file line first, TT_KERNEL and every constant defined. */
static void check_source(const tt_build *b, const char *spec)
{
    const tt_kernel *k = b->kernel;
    const char *head = "// Generated by ttgen";
    if (b->source_len < strlen(head) || strncmp(b->source, head, strlen(head)) != 0)
        fail_msg("%s: source of %s does not start with '%s'", spec, k->name, head);
    assert_int_equal(strlen(b->source), b->source_len);
    char line[256];
    snprintf(line, sizeof line, "\n#define TT_KERNEL %s\n", k->name);
    if (!strstr(b->source, line)) fail_msg("%s: source of %s lacks '%s'", spec, k->name, line + 1);
    for (int c = 0; c < k->n_consts; c++) {
        snprintf(line, sizeof line, "\n#define TT_%s %ld\n", k->consts[c].key, k->consts[c].value);
        if (!strstr(b->source, line)) fail_msg("%s: source of %s lacks '%s'", spec, k->name, line + 1);
    }
    char hex[65];
    tt_hex(b->key, 32, hex);
    assert_string_equal(hex, b->key_hex);
}

/* Sources and keys are byte-identical between two builds, and the embedded templates are the
 * files in templates/ (the same keys either way). The key changes with the arch and options. */
/* Transformer-XL's attention strategy by shape: fused at bf16 while d_head (padded) is at most
 * 64, cuBLAS's products around the softmax kernel otherwise, each kernel saying which and why. */
static void test_txl_strategy(void **state)
{
    (void)state;
    static const struct {
        int d_head;
        const char *precision;
        int fused;
    } cases[] = {{41, "bf16", 1}, {64, "bf16", 1}, {8, "bf16", 1}, {72, "bf16", 0},
                 {128, "bf16", 0}, {41, "fp32", 0}, {41, "tf32", 0}};
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char *text = tt_xasprintf("model: {kind: transformer-xl, vocab: 100, d_model: 64, layers: 1, "
                                  "n_head: 2, d_head: %d, seq_len: 16, mem_len: 16, d_inner: 64}\n"
                                  "train: {batch: 4, precision: %s}\n",
                                  cases[c].d_head, cases[c].precision);
        tt_spec s;
        char err[512];
        if (tt_spec_parse(text, strlen(text), "txl.yaml", ".", &s, err, sizeof err) != 0) fail_msg("%s", err);
        tt_plan p;
        build_plan(&s, ARCH, &p);
        int fused = 0, unfused = 0;
        for (int i = 0; i < p.n; i++) {
            const tt_kernel *k = &p.kernels[i];
            if (!strncmp(k->op, "txl_attn_", 9)) {
                fused++;
                if (strncmp(k->strategy, "fused", 5)) fail_msg("%s: strategy '%s'", k->name, k->strategy);
            }
            if (!strncmp(k->op, "txl_softmax_", 12)) {
                unfused++;
                if (strncmp(k->strategy, "unfused", 7)) fail_msg("%s: strategy '%s'", k->name, k->strategy);
            }
        }
        if (cases[c].fused ? fused != 3 || unfused : unfused != 2 || fused)
            fail_msg("d_head %d at %s: %d fused and %d unfused kernels", cases[c].d_head,
                     cases[c].precision, fused, unfused);
        assert_int_equal(tt_txl_fuses(&s), cases[c].fused);
        tt_plan_free(&p);
        tt_spec_free(&s);
        free(text);
    }
}

/* The materialized attention's products with Wo in tiles of positions under the causal mask
 * (mla_mat_rows's TILES): the cost model's choice where it saves a tenth (d1024-n160, measured
 * faster), none (no mla_mat_rows) where it saves less (lm1b's body at N 80 and d512-n160,
 * measured slower or at the noise), without the mask, or at small N; kernels.attention_tiles
 * taken, capped at N (without the mask, or with the fused attention, it is an error:
 * tests/specs-invalid/check-attention_tiles-*). The tiles partition 0..N in order, each at
 * least a position. */
static void test_mat_tiles(void **state)
{
    (void)state;
    static const struct {
        int d, n, batch, causal, given;
        long lo, hi; /* TILES within [lo, hi]; 0: no mla_mat_rows */
    } cases[] = {
        {1024, 80, 32, 1, 0, 3, 3},  {1024, 160, 16, 1, 0, 5, 5}, {512, 160, 16, 1, 0, 4, 4},
        {1024, 80, 32, 0, 0, 0, 0},  {1024, 32, 80, 1, 0, 0, 0},
        {1024, 80, 32, 1, 7, 7, 7},  {1024, 80, 32, 1, 500, 80, 80}, {1024, 80, 32, 1, 1, 0, 0},
        {256, 13, 3, 1, 4, 4, 4},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char *text = tt_xasprintf("model: {kind: tensorized, vocab: 100, d_model: %d, layers: 1, "
                                  "rank: 40, cores: 2, seq_len: %d, d_inner: 64, causal: %s}\n"
                                  "train: {batch: %d, precision: bf16}\n"
                                  "kernels: {attention: materialized, attention_tiles: %d}\n",
                                  cases[c].d, cases[c].n, cases[c].causal ? "true" : "false",
                                  cases[c].batch, cases[c].given);
        tt_spec s;
        char err[512];
        if (tt_spec_parse(text, strlen(text), "m.yaml", ".", &s, err, sizeof err) != 0) fail_msg("%s", err);
        tt_plan p;
        build_plan(&s, ARCH, &p);
        long tiles = 0;
        for (int i = 0; i < p.n; i++)
            if (!strcmp(p.kernels[i].op, "mla_mat_rows")) tiles = tt_kernel_const(&p.kernels[i], "TILES", -1);
        print_message("  D %d N %d batch %d%s, attention_tiles %d: %ld tiles\n", cases[c].d,
                      cases[c].n, cases[c].batch, cases[c].causal ? " causal" : "", cases[c].given,
                      tiles);
        if (tiles < cases[c].lo || tiles > cases[c].hi)
            fail_msg("case %zu: %ld tiles, want %ld to %ld", c, tiles, cases[c].lo, cases[c].hi);
        for (long t = 0, end = 0; t < tiles; t++) {
            const long e = tt_mat_tile_end(t, tiles, cases[c].n);
            if (e <= end || e > cases[c].n || (t == tiles - 1 && e != cases[c].n))
                fail_msg("case %zu: tile %ld of %ld ends at %ld after %ld", c, t, tiles, e, end);
            end = e;
        }
        tt_plan_free(&p);
        tt_spec_free(&s);
        free(text);
    }
}

/* xent's rows in shared memory: rows up to HEAD take xent, kept whole (ROWCAP vectors of 8
 * logits); longer ones xent_long, kept as far as a block may hold. A vocabulary from the data
 * (unknown to the plan) must still keep rows: a plan that kept none read every row twice and
 * ran lm1b's body's softmax 1.2x slower. */
static void test_xent_rows(void **state)
{
    (void)state;
    static const struct {
        const char *vocab, *adaptive, *precision, *arch;
        long head, cap, long_cap;
    } cases[] = {
        {"20003", "", "bf16", ARCH, 20003, 2501, 2501},
        {"20003", "", "fp32", ARCH, 20003, 2304, 2501},
        {"data", "", "bf16", ARCH, 36864, 4608, 12800},
        {"data", "", "fp32", ARCH, 18432, 2304, 6400},
        {"data", "", "bf16", "sm_80", 36864, 4608, 6336},
        {"267735", ", adaptive: {cutoffs: [20000, 40000, 200000]}", "bf16", ARCH, 20003, 2501, 12800},
        {"100000", ", adaptive: {cutoffs: [20000, 40000]}", "bf16", ARCH, 20002, 2501, 7500},
    };
    for (size_t c = 0; c < sizeof cases / sizeof *cases; c++) {
        char *text = tt_xasprintf("model: {kind: tensorized, vocab: %s, d_model: 32, layers: 1, rank: 8, "
                                  "cores: 2, seq_len: 16, d_inner: 32%s}\n"
                                  "train: {batch: 4, precision: %s}\ndata: {train: t.txt}\n",
                                  cases[c].vocab, cases[c].adaptive, cases[c].precision);
        tt_spec s;
        char err[512];
        if (tt_spec_parse(text, strlen(text), "x.yaml", ".", &s, err, sizeof err) != 0) fail_msg("%s", err);
        tt_plan p;
        build_plan(&s, cases[c].arch, &p);
        const tt_kernel *x = NULL, *xl = NULL;
        for (int i = 0; i < p.n; i++) {
            if (!strcmp(p.kernels[i].op, "xent")) x = &p.kernels[i];
            if (!strcmp(p.kernels[i].op, "xent_long")) xl = &p.kernels[i];
        }
        assert_non_null(x);
        assert_non_null(xl);
        const long es = strcmp(cases[c].precision, "bf16") ? 4 : 2;
        print_message("  vocab %s%s %s %s: %s HEAD %ld, %s\n", cases[c].vocab, cases[c].adaptive,
                      cases[c].precision, cases[c].arch, x->name, tt_kernel_const(x, "HEAD", -1), xl->name);
        assert_int_equal(tt_kernel_const(x, "HEAD", -1), cases[c].head);
        assert_int_equal(tt_kernel_const(x, "ROWCAP", -1), cases[c].cap);
        assert_int_equal(tt_kernel_const(xl, "ROWCAP", -1), cases[c].long_cap);
        assert_int_equal(x->dyn_smem, cases[c].cap * 8 * es);
        assert_int_equal(xl->dyn_smem, cases[c].long_cap * 8 * es);
        tt_plan_free(&p);
        tt_spec_free(&s);
        free(text);
    }
}

static void test_sources_and_keys_deterministic(void **state)
{
    fixture *f = *state;
    const char *extra[] = {"-DTT_TEST_EXTRA=1"};
    for (size_t i = 0; i < f->specs.gl_pathc; i++) {
        tt_spec s1, s2;
        load_spec(f->specs.gl_pathv[i], &s1);
        load_spec(f->specs.gl_pathv[i], &s2);
        tt_plan p1, p2, p80;
        build_plan(&s1, ARCH, &p1);
        build_plan(&s2, ARCH, &p2);
        build_plan(&s1, "sm_80", &p80);
        assert_int_equal(p1.n, p2.n);
        const tt_build_opts o = opts_for(f, ARCH, NULL, NULL, 0);
        const tt_build_opts o_files = opts_for(f, ARCH, TT_SOURCE_DIR "/templates", NULL, 0);
        const tt_build_opts o80 = opts_for(f, "sm_80", NULL, NULL, 0);
        const tt_build_opts o_extra = opts_for(f, ARCH, NULL, extra, 1);
        tt_build *b1 = prepare(&p1, &o), *b2 = prepare(&p2, &o), *bf = prepare(&p1, &o_files);
        tt_build *b80 = prepare(&p80, &o80), *bx = prepare(&p1, &o_extra);
        for (int k = 0; k < p1.n; k++) {
            const char *name = b1[k].kernel->name;
            check_source(&b1[k], s1.path);
            if (b1[k].source_len != b2[k].source_len ||
                memcmp(b1[k].source, b2[k].source, b1[k].source_len) != 0)
                fail_msg("%s: source of %s differs between two builds", s1.path, name);
            if (memcmp(b1[k].key, b2[k].key, 32) != 0)
                fail_msg("%s: key of %s differs between two builds", s1.path, name);
            if (b1[k].source_len != bf[k].source_len ||
                memcmp(b1[k].source, bf[k].source, b1[k].source_len) != 0 ||
                memcmp(b1[k].key, bf[k].key, 32) != 0)
                fail_msg("%s: %s: the embedded templates differ from %s/templates (rebuild?)",
                         s1.path, name, TT_SOURCE_DIR);
            if (memcmp(b1[k].key, b80[k].key, 32) == 0)
                fail_msg("%s: %s has the same key for sm_90 and sm_80", s1.path, name);
            if (memcmp(b1[k].key, bx[k].key, 32) == 0)
                fail_msg("%s: %s: an extra NVRTC option leaves the key unchanged", s1.path, name);
            assert_int_equal(bx[k].n_options, b1[k].n_options + 1);
            assert_string_equal(bx[k].options[bx[k].n_options - 1], extra[0]);
            for (int j = 0; j < k; j++)
                if (memcmp(b1[k].key, b1[j].key, 32) == 0)
                    fail_msg("%s: %s and %s share a key", s1.path, name, b1[j].kernel->name);
        }
        tt_builds_free(b1, p1.n), tt_builds_free(b2, p2.n), tt_builds_free(bf, p1.n);
        tt_builds_free(b80, p80.n), tt_builds_free(bx, p1.n);
        tt_plan_free(&p1), tt_plan_free(&p2), tt_plan_free(&p80);
        tt_spec_free(&s1), tt_spec_free(&s2);
    }
}

static uint16_t le16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

/* A compiled instance: a 64-bit ELF for EM_CUDA whose entry function is the kernel's name, with
 * ptxas' resource report parsed and no spills. Returns 1 when it spilled (reported by the caller). */
static int check_cubin(const tt_build *b, const char *spec)
{
    const char *name = b->kernel->name;
    if (b->error) fail_msg("%s: %s failed: %s", spec, name, b->error);
    if (!b->cubin || b->cubin_len < 64) fail_msg("%s: %s: CUBIN of %zu bytes", spec, name, b->cubin_len);
    const uint8_t *e = b->cubin;
    if (memcmp(e, "\x7f" "ELF", 4) != 0) fail_msg("%s: %s: CUBIN lacks the ELF magic", spec, name);
    if (e[4] != 2 || le16(e + 18) != 190)
        fail_msg("%s: %s: not a 64-bit ELF for EM_CUDA (class %d, machine %d)", spec, name, e[4],
                 le16(e + 18));
    assert_non_null(b->log);
    char entry[200];
    snprintf(entry, sizeof entry, "entry function '%s' for '%s'", name,
             b->kernel->arch[0] ? b->kernel->arch : ARCH);
    if (!strstr(b->log, entry)) fail_msg("%s: %s: ptxas' log lacks \"%s\":\n%s", spec, name, entry, b->log);
    if (b->registers <= 0) fail_msg("%s: %s: registers %d (log:\n%s)", spec, name, b->registers, b->log);
    if (b->spill_bytes < 0) fail_msg("%s: %s: no spill report in the log:\n%s", spec, name, b->log);
    if (b->smem_bytes < 0) fail_msg("%s: %s: no smem report in the log:\n%s", spec, name, b->log);
    return b->spill_bytes != 0;
}

/* Every kernel of every spec through NVRTC and one shared cache; then once more, from the cache. */
static void test_compile_every_kernel(void **state)
{
    fixture *f = *state;
    assert_true(f->specs.gl_pathc >= MIN_SPECS);
    const tt_build_opts o = opts_for(f, ARCH, NULL, NULL, 0);
    int total = 0, compiled = 0, spilled = 0;
    double nvrtc = 0, t_all = tt_now_seconds();
    for (size_t i = 0; i < f->specs.gl_pathc; i++) {
        tt_spec s;
        load_spec(f->specs.gl_pathv[i], &s);
        tt_plan p;
        build_plan(&s, ARCH, &p);
        tt_build *b = prepare(&p, &o);
        const double t0 = tt_now_seconds();
        const int failed = tt_builds_run(b, p.n, &o);
        const double t1 = tt_now_seconds();
        if (failed) {
            for (int k = 0; k < p.n; k++)
                if (b[k].error) print_error("%s\n", b[k].error);
            fail_msg("%s: %d of %d kernels failed to compile", s.path, failed, p.n);
        }
        int here = 0;
        for (int k = 0; k < p.n; k++) {
            if (check_cubin(&b[k], s.path)) {
                print_error("%s: %s spills %d bytes (log:\n%s)\n", s.path, b[k].kernel->name,
                            b[k].spill_bytes, b[k].log);
                spilled++;
            }
            if (b[k].cached) {
                assert_true(b[k].seconds == 0);
            } else {
                assert_true(b[k].seconds > 0);
                here++;
                nvrtc += b[k].seconds;
            }
            if (i == 0 && b[k].cached) fail_msg("%s: a hit in a fresh cache", b[k].kernel->name);
        }
        compiled += here;
        total += p.n;

        /* The same plan again: everything from the cache, the same bytes and report. */
        tt_build *again = prepare(&p, &o);
        const double t2 = tt_now_seconds();
        assert_int_equal(tt_builds_run(again, p.n, &o), 0);
        const double t3 = tt_now_seconds();
        for (int k = 0; k < p.n; k++) {
            const char *name = b[k].kernel->name;
            if (!again[k].cached) fail_msg("%s: %s compiled again on the second run", s.path, name);
            if (again[k].cache_note[0]) fail_msg("%s: %s: %s", s.path, name, again[k].cache_note);
            check_cubin(&again[k], s.path);
            if (again[k].cubin_len != b[k].cubin_len ||
                memcmp(again[k].cubin, b[k].cubin, b[k].cubin_len) != 0 ||
                strcmp(again[k].log, b[k].log) != 0)
                fail_msg("%s: %s: the cached CUBIN or log differs from the compiled one", s.path, name);
            assert_int_equal(again[k].registers, b[k].registers);
            assert_int_equal(again[k].spill_bytes, b[k].spill_bytes);
            assert_int_equal(again[k].smem_bytes, b[k].smem_bytes);
        }
        print_message("  %-22s %d kernels, %d compiled in %.2f s, cached run %.1f ms\n",
                      base(s.path), p.n, here, t1 - t0, 1e3 * (t3 - t2));
        tt_builds_free(b, p.n);
        tt_builds_free(again, p.n);
        tt_plan_free(&p);
        tt_spec_free(&s);
    }
    print_message("  %d kernels, %d distinct compiled (%.1f s of NVRTC), %.1f s in all\n", total,
                  compiled, nvrtc, tt_now_seconds() - t_all);
    if (spilled) fail_msg("%d kernel instances spill registers (listed above)", spilled);
    struct stat st;
    assert_true(stat(f->failure_dir, &st) != 0); /* nothing failed, so nothing was written there */
}

/* tt-bench --profile's own plan (its clock reading between the parts of a step) through NVRTC:
 * one kernel, compiled for sm_90 without spills, reading %globaltimer and waiting on the grid
 * before it. */
static void test_compile_profile_marks(void **state)
{
    fixture *f = *state;
    const tt_build_opts o = opts_for(f, ARCH, NULL, NULL, 0);
    tt_plan p;
    assert_int_equal(tt_plan_profile_marks(ARCH, &p), 0);
    assert_int_equal(p.n, 1);
    assert_string_equal(p.kernels[0].op, "prof_mark");
    tt_build *b = prepare(&p, &o);
    if (tt_builds_run(b, p.n, &o) != 0) fail_msg("prof_mark: %s", b[0].error);
    assert_int_equal(check_cubin(&b[0], "the profile's marks"), 0);
    assert_non_null(strstr(b[0].source, "%%globaltimer"));
    assert_non_null(strstr(b[0].source, "griddepcontrol.wait"));
    tt_builds_free(b, p.n);
    tt_plan_free(&p);
}

/* Every kernel of every template begins with tt_pdl_begin() or tt_pdl_trigger_then_wait()
 * (templates/common.cuh): the runtime launches them programmatically, so a kernel that touched
 * memory before that wait could read what the kernel before it has not finished writing. The
 * first statement of each body, by text. */
static void test_kernels_wait_first(void **state)
{
    (void)state;
    glob_t g;
    assert_int_equal(glob(TT_SOURCE_DIR "/templates/*.cu", 0, NULL, &g), 0);
    int kernels = 0;
    for (size_t f = 0; f < g.gl_pathc; f++) {
        size_t len;
        char *text = NULL, err[256];
        if (tt_read_file(g.gl_pathv[f], 0, &text, &len, err, sizeof err) != 0) fail_msg("%s", err);
        for (const char *k = strstr(text, "TT_KERNEL("); k; k = strstr(k + 1, "TT_KERNEL(")) {
            const char *c = k + strlen("TT_KERNEL(");
            for (int depth = 1; *c && depth; c++) depth += (*c == '(') - (*c == ')');
            const char *body = strchr(c, '{');
            assert_non_null(body);
            body++;
            while (*body == ' ' || *body == '\n') body++;
            /* or with tt_pdl_trigger_then_wait(), which also waits first thing (checked below) */
            if (strncmp(body, "tt_pdl_begin();", strlen("tt_pdl_begin();")) != 0 &&
                strncmp(body, "tt_pdl_trigger_then_wait();", strlen("tt_pdl_trigger_then_wait();")) != 0)
                fail_msg("%s: the kernel at offset %ld does not begin with tt_pdl_begin() or "
                         "tt_pdl_trigger_then_wait()", g.gl_pathv[f], (long)(k - text));
            kernels++;
        }
        free(text);
    }
    globfree(&g);
    /* tt_pdl_trigger_then_wait: the trigger, then the wait, before its end */
    size_t len;
    char *common = NULL, err[256];
    if (tt_read_file(TT_SOURCE_DIR "/templates/common.cuh", 0, &common, &len, err, sizeof err) != 0)
        fail_msg("%s", err);
    const char *fn = strstr(common, "void tt_pdl_trigger_then_wait()");
    assert_non_null(fn);
    const char *trig = strstr(fn, "griddepcontrol.launch_dependents"), *wait = strstr(fn, "griddepcontrol.wait");
    const char *end = strstr(fn, "\n}\n");
    if (!trig || !wait || !end || !(trig < wait && wait < end))
        fail_msg("tt_pdl_trigger_then_wait must trigger, then wait");
    free(common);
    print_message("  %d kernel signatures begin with tt_pdl_begin() or tt_pdl_trigger_then_wait()\n",
                  kernels);
    assert_true(kernels >= 40);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_enough_specs),
        cmocka_unit_test(test_plan_deterministic),
        cmocka_unit_test(test_names_carry_constants),
        cmocka_unit_test(test_txl_strategy),
        cmocka_unit_test(test_mat_tiles),
        cmocka_unit_test(test_xent_rows),
        cmocka_unit_test(test_sources_and_keys_deterministic),
        cmocka_unit_test(test_kernels_wait_first),
        cmocka_unit_test(test_compile_profile_marks),
        cmocka_unit_test(test_compile_every_kernel),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}
