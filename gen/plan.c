/* Chooses the kernel instances of a spec and their constants (see plan.h). Each family has one
 * function that turns shapes into constants, launch shapes and a sentence saying why. */
#include "plan.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "copy_rows.cuh"
#include "mla_geom.cuh"
#include "ops.h"
#include "tune.h"
#include "util.h"

#define SMEM_STATIC_LIMIT (48 * 1024) /* static __shared__ arrays; more needs opt-in */
/* Blocks of the grid-stride kernels over a flat array (cast, the attention's sums of parts):
 * four per SM of a 132-SM H100 or H200 (gpu/launch.c launches the same 528). */
#define GRID_STRIDE_BLOCKS (4 * 132)
/* Threads of a colsum block (templates/colsum.cu): 32 columns by 8 warps over the partials. */
#define COLSUM_THREADS 256

static unsigned ceil_div(long a, long b) { return (unsigned)((a + b - 1) / b); }

/* A new kernel of op (gen/ops.h describes every one), from its tensor-core template when tc. */
static tt_kernel *add_kernel(tt_plan *plan, const char *op, int tc, const char *dtype)
{
    const tt_op *d = tt_op_find(op);
    if (!d || !d->templates[tc])
        tt_panic(__FILE__, __LINE__, "the plan adds %s%s, which gen/ops.c does not describe", op,
                 tc ? " on tensor cores" : "");
    const char *tpl = d->templates[tc];
    plan->kernels = tt_xrealloc(plan->kernels, (size_t)(plan->n + 1) * sizeof *plan->kernels);
    tt_kernel *k = &plan->kernels[plan->n++];
    memset(k, 0, sizeof *k);
    snprintf(k->op, sizeof k->op, "%s", op);
    snprintf(k->template_file, sizeof k->template_file, "%s", tpl);
    k->dtype = dtype;
    k->block[0] = k->block[1] = k->block[2] = 1;
    k->grid[0] = k->grid[1] = k->grid[2] = 1;
    return k;
}

static void set_const(tt_kernel *k, const char *key, long value)
{
    TT_ASSERT(k->n_consts < TT_MAX_CONSTS);
    snprintf(k->consts[k->n_consts].key, sizeof k->consts[0].key, "%s", key);
    k->consts[k->n_consts++].value = value;
}

/* k's grid, x by y by z blocks, and the rule that gives it (printf's fmt), which ttgen shows. */
static void set_grid(tt_kernel *k, unsigned x, unsigned y, unsigned z, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void set_grid(tt_kernel *k, unsigned x, unsigned y, unsigned z, const char *fmt, ...)
{
    k->grid[0] = x, k->grid[1] = y, k->grid[2] = z;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->grid_rule, sizeof k->grid_rule, fmt, ap);
    va_end(ap);
}

long tt_kernel_const(const tt_kernel *k, const char *key, long fallback)
{
    for (int i = 0; i < k->n_consts; i++)
        if (strcmp(k->consts[i].key, key) == 0) return k->consts[i].value;
    return fallback;
}

/* A tunable constant (templates declare them; gen/tune.h): the value the plan's tuning sets, else
 * the heuristic's. */
static long pick(const tt_plan *plan, const char *op, const char *key, long heuristic)
{
    return tt_tuning_get(plan->tuning, op, key, heuristic);
}

static int tuned(const tt_plan *plan, const char *op)
{
    if (!plan->tuning) return 0;
    for (int i = 0; i < plan->tuning->n; i++)
        if (!strcmp(plan->tuning->c[i].op, op)) return 1;
    return 0;
}

long tt_row_pitch(long cols) { return (cols + 7) / 8 * 8; }

/* The symbol: op, then KEYvalue for each constant, then the dtype. Constants that are flags
 * print as their key in lower case when set and are left out when not. */
static void name_kernel(tt_kernel *k, const char *const *flags)
{
    int n = snprintf(k->name, sizeof k->name, "%s", k->op);
    for (int i = 0; i < k->n_consts; i++) {
        const tt_const *c = &k->consts[i];
        int is_flag = 0;
        for (const char *const *f = flags; f && *f; f++) is_flag |= strcmp(*f, c->key) == 0;
        if (is_flag) {
            if (!c->value) continue;
            n += snprintf(k->name + n, sizeof k->name - (size_t)n, "_");
            for (const char *s = c->key; *s; s++)
                n += snprintf(k->name + n, sizeof k->name - (size_t)n, "%c",
                              (*s >= 'A' && *s <= 'Z') ? *s - 'A' + 'a' : *s);
        } else {
            n += snprintf(k->name + n, sizeof k->name - (size_t)n, "_%s%ld", c->key, c->value);
        }
        TT_ASSERT(n < (int)sizeof k->name);
    }
    n += snprintf(k->name + n, sizeof k->name - (size_t)n, "_%s", k->dtype);
    TT_ASSERT(n < (int)sizeof k->name);
}

/* A kernel whose only constants are its THREADS and its op's define (OP_ADAM): named by the
 * first, a block of that many threads. */
static tt_kernel *threads_kernel(tt_plan *plan, const char *op, const char *define, long threads,
                                 const char *dtype)
{
    const char *const flags[] = {NULL};
    tt_kernel *k = add_kernel(plan, op, 0, dtype);
    set_const(k, "THREADS", threads);
    name_kernel(k, flags);
    set_const(k, define, 1);
    k->block[0] = (unsigned)threads;
    return k;
}

static void whyf(tt_kernel *k, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void whyf(tt_kernel *k, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(k->why, sizeof k->why, fmt, ap);
    va_end(ap);
}

/* LayerNorm's vector of features a load at tpr threads a row: the longest (16 bytes at most)
 * that divides d and still gives a warp's 32 threads a vector each where d has that many
 * features; none (1) where a thread holds more than 16 values, as at D 1024 in a warp, where
 * the backward's registers bind (255 of them) and vectors were not faster (lm1b's body 0.996x
 * trained, H100, 2026-12-08; wt103's D 256, 8 values a thread, 1.010x). */
static long layernorm_vec(int d, const char *dtype, long tpr)
{
    if (ceil_div(d, tpr) > 16) return 1;
    long v = strcmp(dtype, "bf16") == 0 ? 8 : 4;
    while (v > 1 && (d % v || d / v < 32)) v /= 2;
    return v;
}

/* The values a thread of a row holds: whole vectors of a row of d over tpr threads. */
static long layernorm_vpt(int d, const char *dtype, long tpr)
{
    const long vec = layernorm_vec(d, dtype, tpr);
    return ceil_div(d / vec, tpr) * vec;
}

/* LayerNorm's threads a row for op (a power of two, 32 to 1024): the tuning's, else the fewest
 * that leave a thread at most 32 values: a warp a row up to D 1024. The backward too, though it
 * keeps three sums for each value and a warp a row takes 255 registers at D 1024: there 4 rows a
 * block of warps took 0.0205 ms, 64 threads a row 0.0257 and 128 0.0284 (`ttgen --tune`,
 * lm1b's body, H100, 2026-12-08), and 64 threads trained lm1b's body at 0.94x. -1 with a
 * message when the tuning's does not fit: over 32 values a thread, or half the threads past
 * the row's vectors. */
static long layernorm_tpr(const tt_plan *plan, const char *op, int d, const char *dtype,
                          char *err, size_t errlen)
{
    long t = 32;
    while (t < 1024 && layernorm_vpt(d, dtype, t) > 32) t *= 2;
    const long tpr = pick(plan, op, "TPR", t);
    if (tpr == t) return tpr;
    if (tpr < 32 || tpr > 1024 || (tpr & (tpr - 1)))
        return tt_errf(err, errlen, "%s: TPR=%ld: threads a row are a power of two from 32 to 1024",
                       op, tpr), -1;
    const long vpt = layernorm_vpt(d, dtype, tpr);
    if (vpt > 32)
        return tt_errf(err, errlen, "%s: TPR=%ld: D %d leaves %ld values a thread, over 32", op, tpr,
                       d, vpt), -1;
    const long vec = layernorm_vec(d, dtype, tpr), nv = d / vec;
    if (tpr > 32 && 2 * nv <= tpr)
        return tt_errf(err, errlen, "%s: TPR=%ld: D %d is %ld vectors of %ld, so half the threads "
                       "would hold none", op, tpr, d, nv, vec), -1;
    return tpr;
}

/* The heuristic's rows a block: several for a warp a row, which amortize the backward's
 * per-block partials (its shared buffer of 2 x rows x d floats within 32 KiB); one for a block
 * a row. */
static long layernorm_rows_heuristic(int d, long tpr)
{
    long rows = 1;
    while (tpr == 32 && rows < 8 && 2 * (rows * 2) * d * 4 <= 32 * 1024) rows *= 2;
    return rows;
}

/* The constants both LayerNorm directions share, in two halves: those of the kernel's name
 * (layernorm_named: D, TPR, ROWS; a caller may add its own before the name is made), then the
 * name (with flags), VPT and op_flag, which selects the kernel in the template. */
static tt_kernel *layernorm_named(tt_plan *plan, const char *op, const char *dtype, int d,
                                  long tpr, long rpb)
{
    tt_kernel *k = add_kernel(plan, op, 0, dtype);
    set_const(k, "D", d);
    set_const(k, "TPR", tpr);
    set_const(k, "ROWS", rpb);
    return k;
}

static tt_kernel *layernorm_finish(tt_kernel *k, const char *const *flags, const char *op_flag)
{
    name_kernel(k, flags);
    const long d = tt_kernel_const(k, "D", 0), tpr = tt_kernel_const(k, "TPR", 0);
    set_const(k, "VEC", layernorm_vec((int)d, k->dtype, tpr));
    set_const(k, "VPT", layernorm_vpt((int)d, k->dtype, tpr));
    set_const(k, op_flag, 1);
    k->block[0] = (unsigned)(tpr * tt_kernel_const(k, "ROWS", 0));
    return k;
}

static tt_kernel *layernorm_instance(tt_plan *plan, const char *op, const char *op_flag,
                                     const char *dtype, int d, long tpr, long rpb)
{
    const char *const flags[] = {NULL};
    return layernorm_finish(layernorm_named(plan, op, dtype, d, tpr, rpb), flags, op_flag);
}

/* A tuning's rows per block for op (a warp per row only), or the heuristic's; -1 with a message
 * when it does not fit: the backward's shared buffer of 2 x rows x d floats within the static
 * limit. */
static long layernorm_rows(const tt_plan *plan, const char *op, int d, long tpr, char *err,
                           size_t errlen)
{
    const long heuristic = layernorm_rows_heuristic(d, tpr);
    const long rows = pick(plan, op, "ROWS", heuristic);
    if (rows == heuristic) return rows;
    if (rows < 1 || (tpr > 32 && rows > 1))
        return tt_errf(err, errlen, "%s: ROWS=%ld: D %d takes a block of %ld threads a row, so one "
                       "row a block", op, rows, d, tpr), -1;
    if (2 * rows * d * 4 + 64 > SMEM_STATIC_LIMIT)
        return tt_errf(err, errlen, "%s: ROWS=%ld: the backward's 2 x ROWS x D floats (%ld KiB) are "
                       "over %d KiB of shared memory", op, rows, 2 * rows * d * 4 / 1024,
                       SMEM_STATIC_LIMIT / 1024), -1;
    return rows;
}

/* A second stage of parameter gradients (templates/colsum.cu, op colsum or bias_colsum): sets
 * sums of d columns each over the partials a first stage wrote, 32 columns a block, the
 * partials in a fixed order. */
static tt_kernel *add_colsum(tt_plan *plan, const char *op, int d, int sets)
{
    const char *const flags[] = {NULL};
    tt_kernel *c = add_kernel(plan, op, 0, "f32");
    const long ct = pick(plan, op, "THREADS", COLSUM_THREADS);
    set_const(c, "D", d);
    set_const(c, "SETS", sets);
    set_const(c, "ACCUMULATE", 0);
    set_const(c, "THREADS", ct);
    name_kernel(c, flags);
    c->block[0] = (unsigned)ct;
    set_grid(c, ceil_div(d, 32), (unsigned)sets, 1, "x = ceil(%d / 32)%s", d,
             sets > 1 ? ", y = the sets summed (2 or 3)" : "");
    c->smem_bytes = (unsigned)(ct * 4); /* a float a thread: the warps' sums of 32 columns */
    return c;
}

static int plan_layernorm(tt_plan *plan, const tt_spec *s, const char *dtype, char *err,
                          size_t errlen)
{
    const int d = s->model.d_model;
    const long rows = (long)s->train.batch * s->model.seq_len;
    const long tpr = layernorm_tpr(plan, "layernorm_fwd", d, dtype, err, errlen);
    if (tpr < 0) return -1;
    const long rpb = layernorm_rows_heuristic(d, tpr);
    /* layernorm_bwd writes the partials residual_ln_bwd writes too: the same rows per block (and
     * threads a row) */
    const long tpr_b = layernorm_tpr(plan, "residual_ln_bwd", d, dtype, err, errlen);
    if (tpr_b < 0) return -1;
    const long rpb_b = layernorm_rows(plan, "residual_ln_bwd", d, tpr_b, err, errlen);
    if (rpb_b < 0) return -1;

    tt_kernel *k = layernorm_instance(plan, "layernorm_fwd", "OP_LAYERNORM_FWD", dtype, d, tpr, rpb);
    set_grid(k, ceil_div(rows, rpb), 1, 1, "x = ceil(rows / %ld)", rpb);
    k->smem_bytes = tpr > 32 ? (unsigned)(tpr / 32 * 4) : 4;
    const long vec = tt_kernel_const(k, "VEC", 1), vpt = tt_kernel_const(k, "VPT", 0);
    char loads[48] = "a load each";
    if (vec > 1) snprintf(loads, sizeof loads, "in vectors of %ld", vec);
    whyf(k, "%s per row, %ld value%s per thread in registers, %s: one read of x",
         tpr == 32 ? "one warp" : "one block", vpt, vpt == 1 ? "" : "s", loads);

    tt_kernel *b = layernorm_instance(plan, "layernorm_bwd", "OP_LAYERNORM_BWD", dtype, d, tpr_b, rpb_b);
    unsigned blocks = ceil_div(rows, rpb_b);
    if (blocks > TT_LN_BWD_MAX_BLOCKS) blocks = TT_LN_BWD_MAX_BLOCKS;
    set_grid(b, blocks, 1, 1, "x = min(ceil(rows / %ld), %d)", rpb_b,
             TT_LN_BWD_MAX_BLOCKS);
    b->smem_bytes = (tpr_b > 32 ? (unsigned)(tpr_b / 32 * 4) : 4) +
                    (rpb_b > 1 ? (unsigned)(2 * rpb_b * d * 4) : 0);
    whyf(b, "grid-stride rows; dgamma/dbeta partials per block, summed by colsum in a fixed order");

    /* The second stage of LayerNorm's parameter gradients: two sets (dgamma, dbeta), or three
     * (the residual backward's sum of dy beside: a bias gradient). */
    tt_kernel *c = add_colsum(plan, "colsum", d, 3);
    whyf(c, "32 columns a block, %ld warps over %u partials, fixed order: deterministic",
         tt_kernel_const(c, "THREADS", 0) / 32, blocks);
    return 0;
}

/* Kernels whose partial sums a second, fixed-order pass adds up: two blocks per SM of an H100. */
#define PARTIAL_BLOCKS TT_LN_BWD_MAX_BLOCKS

/* residual_ln_fwd's kernel (op: it, or mla_residual_ln_fwd, whose y is the sum of the
 * attention's jp > 0 parts): the plain LayerNorm's shape, residual_ln_fwd's rows per block (its
 * tuning's), a block per that many rows. NULL with a message when the tuning's rows do not fit. */
static tt_kernel *residual_ln_fwd_instance(tt_plan *plan, const tt_spec *s, const char *op,
                                           const char *dtype, int jp, char *err, size_t errlen)
{
    const tt_model_spec *m = &s->model;
    const int d = m->d_model;
    const long rows = (long)s->train.batch * m->seq_len;
    const long tpr = layernorm_tpr(plan, "residual_ln_fwd", d, dtype, err, errlen);
    if (tpr < 0) return NULL;
    const long rpb = layernorm_rows(plan, "residual_ln_fwd", d, tpr, err, errlen);
    if (rpb < 0) return NULL;
    tt_kernel *k = layernorm_named(plan, op, dtype, d, tpr, rpb);
    if (jp) {
        set_const(k, "N", m->seq_len);
        set_const(k, "CAUSAL", m->causal);
        set_const(k, "JP", jp);
    }
    layernorm_finish(k, jp ? (const char *const[]){"CAUSAL", NULL} : (const char *const[]){NULL},
                     "OP_RESIDUAL_LN_FWD");
    set_grid(k, ceil_div(rows, rpb), 1, 1, "x = ceil(rows / %ld)", rpb);
    k->smem_bytes = tpr > 32 ? (unsigned)(tpr / 32 * 4) : 4;
    return k;
}

/* The residual sum in front of each post-LN (MODEL.md section 2), fused with it: templates/
 * layernorm.cu with the residual op flags, the plain LayerNorm's shape and its colsum. */
static int plan_residual_ln(tt_plan *plan, const tt_spec *s, const char *dtype, char *err,
                            size_t errlen)
{
    const int d = s->model.d_model;
    const long rows = (long)s->train.batch * s->model.seq_len;
    tt_kernel *k = residual_ln_fwd_instance(plan, s, "residual_ln_fwd", dtype, 0, err, errlen);
    if (!k) return -1;
    whyf(k, "s = x + dropout(y) and LayerNorm(s) in one pass: the mask drawn, never stored; s "
            "stored for the backward");
    const long tpr = layernorm_tpr(plan, "residual_ln_bwd", d, dtype, err, errlen);
    if (tpr < 0) return -1;
    const long rpb = layernorm_rows(plan, "residual_ln_bwd", d, tpr, err, errlen);
    if (rpb < 0) return -1;

    tt_kernel *b = layernorm_instance(plan, "residual_ln_bwd", "OP_RESIDUAL_LN_BWD", dtype, d, tpr,
                                      rpb);
    unsigned blocks = ceil_div(rows, rpb);
    if (blocks > TT_LN_BWD_MAX_BLOCKS) blocks = TT_LN_BWD_MAX_BLOCKS;
    set_grid(b, blocks, 1, 1, "x = min(ceil(rows / %ld), %d)", rpb,
             TT_LN_BWD_MAX_BLOCKS);
    b->smem_bytes = (tpr > 32 ? (unsigned)(tpr / 32 * 4) : 4) +
                    (rpb > 1 ? (unsigned)(3 * rpb * d * 4) : 0);
    whyf(b, "LayerNorm backward, then dx = ds and dy = dropout_bwd(ds) from the same registers "
            "(mask redrawn); dgamma/dbeta partials for colsum, and dy's (the FFN's second bias "
            "gradient: no product of its own)");
    return 0;
}

/* Widest vector access (up to 4 values) that divides a row of w features. */
static long row_vec(long w) { return w % 4 == 0 ? 4 : (w % 2 == 0 ? 2 : 1); }

/* A kernel over `count` rows of w features (key: the width's constant), a thread per VEC of them;
 * its grid for up to `rows` rows. */
static tt_kernel *row_kernel(tt_plan *plan, const char *op, const char *op_flag,
                             const char *dtype, const char *key, long w, long rows,
                             const char *count)
{
    const long vec = row_vec(w), nv = w / vec, threads = pick(plan, op, "THREADS", 256);
    const char *const flags[] = {NULL};
    tt_kernel *k = add_kernel(plan, op, 0, dtype);
    set_const(k, key, w);
    set_const(k, "VEC", vec);
    name_kernel(k, flags);
    set_const(k, "THREADS", threads);
    set_const(k, op_flag, 1);
    k->block[0] = (unsigned)threads;
    set_grid(k, ceil_div(rows * nv, threads), 1, 1, "x = ceil(%s * %ld / %ld)", count, nv, threads);
    return k;
}

/* The sort of the batch's (token, row) keys that makes the embedding's scatter-add deterministic. */
static void plan_embedding_sort(tt_plan *plan, long rows)
{
    const char *const flags[] = {NULL};
    long p2 = 1;
    while (p2 < rows) p2 *= 2;
    /* up to 8192 keys (64 KiB of dynamic shared memory) sorted in shared memory alone: wt103's
     * 4800 rows took 88 us on an H200 with 4096 and a pass through global memory */
    const long chunk = p2 < 8192 ? p2 : 8192, sort_threads = 1024;
    tt_kernel *o = add_kernel(plan, "embedding_sort", 0, "f32");
    set_const(o, "P", p2);
    name_kernel(o, flags);
    set_const(o, "CHUNK", chunk);
    set_const(o, "THREADS", sort_threads);
    set_const(o, "OP_EMBEDDING_SORT", 1);
    o->block[0] = (unsigned)sort_threads;
    set_grid(o, 1, 1, 1, "x = 1; rows <= %ld", p2);
    o->dyn_smem = (unsigned)(chunk * 8);
    whyf(o, "bitonic sort of %ld (token, row) keys in one block, %ld at a time in shared memory: "
            "a fixed order for the backward's sums", p2, chunk);
}

/* The scatter-add into a table of w features (key: the width's constant) along the sorted keys:
 * op's kernel sums each token's rows within a span of EMB_SPAN sorted keys (a block a span, a
 * thread per VEC features), and embedding_bwd_sum (one per width) adds a token's span sums into
 * its row of the table (a block per sorted key: the first of each token's run works). */
#define EMB_SPAN 16
static tt_kernel *span_kernel(tt_plan *plan, const char *op, const char *op_flag,
                              const char *dtype, const char *key, long w)
{
    const long vec = row_vec(w), nv = w / vec, threads = nv >= 256 ? 256 : (nv + 31) / 32 * 32;
    const char *const flags[] = {NULL};
    tt_kernel *k = add_kernel(plan, op, 0, dtype);
    set_const(k, key, w);
    set_const(k, "VEC", vec);
    set_const(k, "SPAN", EMB_SPAN);
    name_kernel(k, flags);
    set_const(k, "THREADS", threads);
    set_const(k, op_flag, 1);
    k->block[0] = (unsigned)threads;
    return k;
}
static tt_kernel *sorted_add_kernel(tt_plan *plan, const char *op, const char *op_flag,
                                    const char *dtype, const char *key, long w, long rows)
{
    tt_kernel *b = span_kernel(plan, op, op_flag, dtype, key, w);
    set_grid(b, ceil_div(rows, EMB_SPAN), 1, 1,
             "x = ceil(rows / %d) (a block per span of sorted keys)", EMB_SPAN);
    const int at = (int)(b - plan->kernels); /* add_kernel moves the array: b is found again */
    tt_kernel *sum = span_kernel(plan, "embedding_bwd_sum", "OP_EMBEDDING_BWD_SUM", "f32", "W", w);
    set_grid(sum, (unsigned)rows, 1, 1, "x = rows (a block per sorted key)");
    whyf(sum, "a block per run of equal tokens adds its spans' sums into the table's row in order: "
              "no atomics, the same bits every run");
    return &plan->kernels[at];
}

/* The word embedding of one table (div_val 1) with its dropout; the backward's scatter-add made
 * deterministic by sorting the batch's (token, row) keys (templates/embedding.cu says how). */
static void plan_embedding(tt_plan *plan, const tt_spec *s, const char *dtype)
{
    const tt_model_spec *m = &s->model;
    if (m->div_val > 1) return; /* adaptive input: plan_adaptive */
    const int d = m->d_model;
    const long rows = (long)s->train.batch * m->seq_len, vec = row_vec(d);
    tt_kernel *k = row_kernel(plan, "embedding_fwd", "OP_EMBEDDING_FWD", dtype,
                              "D", d, rows, "rows");
    whyf(k, "thread per %ld features of a row (%ld-byte loads of E), dropout drawn in place: no "
            "mask stored", vec, vec * 4);
    plan_embedding_sort(plan, rows);
    tt_kernel *b = sorted_add_kernel(plan, "embedding_bwd", "OP_EMBEDDING_BWD", dtype, "D", d, rows);
    whyf(b, "a block per %d sorted keys adds each token's rows in row order, all %d rows' loads in "
            "flight: a frequent word's run spread over many blocks", EMB_SPAN, EMB_SPAN);
}

/* The head's cluster columns (templates/cluster_cols.cu) where the cluster weights fit in a
 * block's static shared memory as fp32 (else cuBLAS's products run them): a warp a row forward;
 * backward a thread a column over a run of rows, partials of ~16 rows a block, and their sums. */
static void plan_cluster_cols(tt_plan *plan, const tt_spec *s, const char *dtype)
{
    const tt_model_spec *m = &s->model;
    const int d = m->d_model, nc = m->n_cutoffs;
    if (nc < 1 || nc > 8 || (long)nc * d * 4 > SMEM_STATIC_LIMIT) return;
    const long rows = (long)s->train.batch * m->seq_len;
    long parts = ceil_div(rows, 16);
    if (parts > 1024) parts = 1024;
    const long bthreads = d >= 256 ? 256 : (long)ceil_div(d, 32) * 32;
    const char *const flags[] = {NULL};
    static const char *const ops[] = {"cluster_cols_fwd", "cluster_cols_bwd", "cluster_cols_sum"};
    static const char *const op_flags[] = {"OP_CLUSTER_COLS_FWD", "OP_CLUSTER_COLS_BWD", "OP_CLUSTER_COLS_SUM"};
    for (int i = 0; i < 3; i++) {
        tt_kernel *k = add_kernel(plan, ops[i], 0, i == 2 ? "f32" : dtype);
        const long threads = i == 1 ? bthreads : 256;
        set_const(k, "D", d);
        set_const(k, "NC", nc);
        if (i) set_const(k, "PARTS", parts);
        name_kernel(k, flags);
        set_const(k, "THREADS", threads);
        set_const(k, op_flags[i], 1);
        k->block[0] = (unsigned)threads;
        if (i == 0) {
            k->smem_bytes = (unsigned)(nc * d * 4);
            set_grid(k, ceil_div(rows, 8 * 4), 1, 1, "x = ceil(rows / 32): a warp a row, four rows a warp");
            whyf(k, "%d logits a row, a warp's dot products with the cluster weights in shared memory "
                    "and the bias: one launch for cuBLAS's N = %d and K = 1 products", nc, nc);
        } else if (i == 1) {
            set_grid(k, (unsigned)parts, 1, 1, "x = %ld runs of ceil(rows / %ld) rows", parts, parts);
            whyf(k, "d x += dy Wc and the partials of dWc, dbc: a thread a column, rows in order");
        } else {
            k->smem_bytes = 256 * 4;
            set_grid(k, ceil_div((long)nc * d + nc, 32), 1, 1, "x = ceil(%d / 32)", nc * d + nc);
            whyf(k, "dWc, dbc += the %ld partials, eight warps over them, in a fixed order", parts);
        }
    }
}

/* The adaptive softmax's tails and the adaptive embedding (div_val > 1) work on one cluster's rows
 * at a time, gathered by the host's index lists (padded to TT_ADAPTIVE_BUCKET rows) so that
 * cuBLAS runs dense products, and scattered back (templates/adaptive.cu, templates/embedding.cu).
 * The softmax itself is plan_xent's kernel, on the head's columns and then on each tail's. The
 * grids are for the worst case: one cluster holds every row. */
static void plan_adaptive(tt_plan *plan, const tt_spec *s, const char *dtype)
{
    const tt_model_spec *m = &s->model;
    if (!m->n_cutoffs) return;
    const int d = m->d_model;
    const long rows = (long)s->train.batch * m->seq_len;
    const long worst = (long)ceil_div(rows, TT_ADAPTIVE_BUCKET) * TT_ADAPTIVE_BUCKET;
    tt_kernel *k = row_kernel(plan, "adaptive_gather", "OP_ADAPTIVE_GATHER", dtype,
                              "D", d, worst, "count");
    whyf(k, "a tail cluster's rows (the host's list) packed for its products: a tail is scored "
            "only for the rows whose target it holds");
    k = row_kernel(plan, "adaptive_scatter_add", "OP_ADAPTIVE_SCATTER_ADD", dtype,
                   "D", d, worst, "count");
    whyf(k, "d x of a tail's rows added into theirs: a target is in one cluster, so one writer "
            "per row, no atomics");
    plan_cluster_cols(plan, s, dtype);
    if (m->div_val == 1) return; /* one table: plan_embedding's kernels */
    k = row_kernel(plan, "adaptive_emb_scatter", "OP_ADAPTIVE_EMB_SCATTER", dtype,
                   "D", d, worst, "count");
    whyf(k, "a cluster's projected rows (fp32 from cuBLAS) into x0, scaled, dropout drawn in "
            "place");
    k = row_kernel(plan, "adaptive_emb_grad", "OP_ADAPTIVE_EMB_GRAD", dtype, "D",
                   d, worst, "count");
    whyf(k, "d x0 of a cluster's rows packed for its products, dropout mask redrawn and scaled");
    int w = d;
    for (int c = 0; c <= m->n_cutoffs; c++, w /= m->div_val) {
        k = row_kernel(plan, "adaptive_emb_gather", "OP_ADAPTIVE_EMB_GATHER",
                       dtype, "DE", w, worst, "count");
        whyf(k, "cluster %d's table rows of its tokens (fp32 master weights), packed for the "
                "projection", c);
        k = sorted_add_kernel(plan, "adaptive_emb_bwd", "OP_ADAPTIVE_EMB_BWD", dtype, "DE", w, rows);
        whyf(k, "cluster %d: a block per %d sorted keys adds each token's rows' d e in row order, "
                "their loads in flight together", c, EMB_SPAN);
    }
    plan_embedding_sort(plan, rows);
}

/* The FFN's ReLU and inner dropout between its GEMMs, the first GEMM's bias fused in; the
 * backward's bias gradient as per-row-group partials that bias_colsum adds up. */
/* A tuning's threads per block for op (whole warps, at most 1024), else the heuristic's; -1 with
 * a message when it is not a block size. */
static long block_threads(const tt_plan *plan, const char *op, long heuristic, char *err,
                          size_t errlen)
{
    const long t = pick(plan, op, "THREADS", heuristic);
    if (t < 32 || t > 1024 || t % 32)
        return tt_errf(err, errlen, "%s: THREADS=%ld: whole warps, at most 1024", op, t), -1;
    return t;
}

static int plan_ffn_act(tt_plan *plan, const tt_spec *s, const char *dtype, char *err,
                        size_t errlen)
{
    const int f = s->model.d_inner;
    const long rows = (long)s->train.batch * s->model.seq_len, ld = tt_row_pitch(f);
    /* 16-byte vectors over the pitch (a multiple of 8 elements), padding included */
    const long vec = strcmp(dtype, "bf16") == 0 ? 8 : 4, nv = ld / vec;
    const long threads = block_threads(plan, "ffn_act_fwd", 256, err, errlen);
    if (threads < 0) return -1;
    /* two vectors a thread in flight: 64 KiB a full SM, what the H100 and H200 need to stream */
    const long unroll = pick(plan, "ffn_act_fwd", "UNROLL", 2);
    if (unroll < 1 || unroll > 8)
        return tt_errf(err, errlen, "ffn_act_fwd: UNROLL=%ld: from 1 to 8", unroll);
    const char *const flags[] = {NULL};

    tt_kernel *k = add_kernel(plan, "ffn_act_fwd", 0, dtype);
    set_const(k, "F", f);
    set_const(k, "LD", ld);
    set_const(k, "VEC", vec);
    set_const(k, "UNROLL", unroll);
    name_kernel(k, flags);
    set_const(k, "THREADS", threads);
    set_const(k, "OP_FFN_ACT_FWD", 1);
    k->block[0] = (unsigned)threads;
    set_grid(k, ceil_div(rows * nv, threads * unroll), 1, 1, "x = ceil(rows * %ld / %ld)", nv,
             threads * unroll);
    whyf(k, "thread per %ld vectors of %ld features, their loads in flight together: bias, ReLU "
            "and dropout in one pass over z; rows %ld apart, whole 16-byte groups for cuBLAS",
         unroll, vec, ld);

    long tx = (nv + 31) / 32 * 32;
    const long tx_max = 256 / vec > 32 ? 256 / vec : 32;
    if (tx > tx_max) tx = tx_max;
    const long ty = 256 / tx, gx = ceil_div(nv, tx);
    /* eight blocks an SM: a streaming kernel needs every warp it can get (two an SM ran at a
     * third of the card's bandwidth); the partials stay small (parts x F floats) */
    long parts = ceil_div(4 * PARTIAL_BLOCKS, gx);
    if (parts > (long)ceil_div(rows, ty)) parts = ceil_div(rows, ty);
    const long tuned_parts = pick(plan, "ffn_act_bwd", "PARTS", parts);
    if (tuned_parts != parts && (tuned_parts < 1 || tuned_parts > (long)ceil_div(rows, ty)))
        return tt_errf(err, errlen, "ffn_act_bwd: PARTS=%ld: from 1 to the %u groups of %ld rows",
                       tuned_parts, ceil_div(rows, ty), ty);
    parts = tuned_parts;
    const long bunroll = pick(plan, "ffn_act_bwd", "UNROLL", 2);
    if (bunroll < 1 || bunroll > 8)
        return tt_errf(err, errlen, "ffn_act_bwd: UNROLL=%ld: from 1 to 8", bunroll);
    tt_kernel *b = add_kernel(plan, "ffn_act_bwd", 0, dtype);
    set_const(b, "F", f);
    set_const(b, "LD", ld);
    set_const(b, "VEC", vec);
    set_const(b, "TX", tx);
    set_const(b, "TY", ty);
    set_const(b, "PARTS", parts);
    set_const(b, "UNROLL", bunroll);
    name_kernel(b, flags);
    set_const(b, "OP_FFN_ACT_BWD", 1);
    b->block[0] = (unsigned)(tx * ty);
    set_grid(b, (unsigned)gx, (unsigned)parts, 1, "x = ceil(%ld / %ld), y = %ld row groups", nv, tx,
             parts);
    b->smem_bytes = (unsigned)(ty * tx * vec * 4);
    whyf(b, "dz = dropout_bwd(dhd) * (h > 0), %ld rows a thread in flight; db1 partials of %ld "
            "row groups, no atomics", bunroll, parts);

    tt_kernel *c = add_colsum(plan, "bias_colsum", f, 1);
    whyf(c, "db1: 32 columns a block, %ld warps over %ld partials, fixed order: deterministic",
         tt_kernel_const(c, "THREADS", 0) / 32, parts);
    return 0;
}

/* The core g = mean of h softmaxes of rank R: one small block, a warp per core. */
static int plan_core(tt_plan *plan, const tt_spec *s, char *err, size_t errlen)
{
    const int h = s->model.cores, r = s->model.rank;
    const long threads = 32L * (h < 8 ? h : 8), smem = 4L * h * r;
    if (smem > SMEM_STATIC_LIMIT)
        return tt_errf(err, errlen, "core_fwd: %d cores of rank %d need more than %d KiB of shared "
                       "memory; lower model.cores", h, r, SMEM_STATIC_LIMIT / 1024);
    const char *const flags[] = {NULL};
    const char *ops[] = {"core_fwd", "core_bwd"}, *op_flags[] = {"OP_CORE_FWD", "OP_CORE_BWD"};
    for (int i = 0; i < 2; i++) {
        tt_kernel *k = add_kernel(plan, ops[i], 0, "f32");
        set_const(k, "H", h);
        set_const(k, "R", r);
        name_kernel(k, flags);
        set_const(k, "THREADS", threads);
        set_const(k, op_flags[i], 1);
        k->block[0] = (unsigned)threads;
        set_grid(k, (unsigned)s->model.layers, 1, 1, "x = the layers (a block each)");
        k->smem_bytes = i == 0 ? (unsigned)smem : 0;
        whyf(k, "%ld values: a block a layer, every layer in one launch, a warp per core, cores "
                "summed in order", (long)h * r);
    }
    return 0;
}

/* Opt-in shared memory per block on sm_80 and later (227 KiB on sm_90; the smallest, sm_86's
 * 99 KiB, bounds what the plan asks for). */
#define SMEM_DYN_LIMIT (99 * 1024)

/* Shared memory a block may opt into on sm_90 (227 KiB): for kernels built for sm_90a alone. */
#define SMEM_DYN_LIMIT_SM90 (227 * 1024)

static bool is_sm90(const tt_plan *plan)
{
    return !strcmp(plan->arch, "sm_90") || !strcmp(plan->arch, "sm_90a");
}

/* Softmax cross-entropy over full rows of logits (the vocabulary, or an adaptive softmax's
 * head), and the fixed-order sum of its per-row losses. */
/* Bytes of one element of the storage type dtype ("bf16" or "f32"). */
static long dtype_bytes(const char *dtype)
{
    return strcmp(dtype, "bf16") == 0 ? 2 : 4;
}

/* Logits in one of xent's vectors (its TT_XV; the launcher sizes a row's shared memory by it): 8
 * whatever the type, so that fp32 and bf16 group their sums alike and a bf16 row's gradient is
 * the fp32 instance's rounded, bit for bit. */
#define XENT_VEC 8

/* One instance of xent over logits of dtype: a block of `threads` per row, keeping up to `cap`
 * of its vectors of logits in shared memory between its two passes. */
static tt_kernel *xent_kernel(tt_plan *plan, const char *op, const char *dtype, long rows,
                              long threads, long cap)
{
    const char *const flags[] = {NULL};
    tt_kernel *k = add_kernel(plan, op, 0, dtype);
    set_const(k, "THREADS", threads);
    set_const(k, "ROWCAP", cap);
    name_kernel(k, flags);
    set_const(k, "OP_XENT", 1);
    k->block[0] = (unsigned)threads;
    set_grid(k, (unsigned)rows, 1, 1, "x = rows");
    k->smem_bytes = 3 * (unsigned)(threads / 32) * 4;
    set_const(k, "SMEM", k->smem_bytes); /* the static part; the row's is dynamic */
    set_const(k, "XV", XENT_VEC);
    k->dyn_smem = (unsigned)(cap * XENT_VEC * dtype_bytes(dtype));
    return k;
}

/* xent's vectors of logits of dtype in a row of n, up to limit bytes of them. */
static long xent_cap(long n, const char *dtype, long limit)
{
    const long bytes = XENT_VEC * dtype_bytes(dtype), cap = ceil_div(n, XENT_VEC);
    return cap < limit / bytes ? cap : limit / bytes;
}

/* A row length that stands for "not known to the plan" (vocab: data): longer than any limit. */
#define XENT_UNKNOWN (1L << 30)

static int plan_xent(tt_plan *plan, const tt_spec *s, const char *dtype, char *err, size_t errlen)
{
    const long rows = (long)s->train.batch * s->model.seq_len, sthreads = 256;
    /* 256 threads a row: ttgen --tune found them 1.26x-1.29x faster than 512 on an H200 for
     * every shipped spec's head (bench/RESULTS.md) */
    const long threads = block_threads(plan, "xent", 256, err, errlen);
    if (threads < 0) return -1;
    const char *const flags[] = {NULL};
    /* The head's row (the whole vocabulary without cutoffs) kept whole in shared memory between
     * the two passes up to 72 KiB (three blocks an SM on sm_90, two on sm_80), so that it is read
     * once: the wt103 head's 20,003 bf16 logits are 40 KB; a longer row has the rest read again. */
    const tt_model_spec *m = &s->model;
    const long limit = 72 * 1024, known = m->n_cutoffs ? m->cutoffs[0] + m->n_cutoffs : m->vocab;
    /* a vocabulary taken from the data (vocab: data, no cutoffs): rows up to the length that
     * fits come here (the launcher gives a block the shared memory its row takes) */
    const long head = known ? known : xent_cap(XENT_UNKNOWN, dtype, limit) * XENT_VEC;
    const long cap = xent_cap(head, dtype, limit);
    tt_kernel *k = xent_kernel(plan, "xent", dtype, rows, threads, cap);
    set_const(k, "HEAD", head); /* the launcher's choice: rows up to the head's length here */
    whyf(k, "block per row, any length: online max and sum of exp, then the gradient over the "
            "logits in place, in the storage type the products read; the row's first %ld "
            "logits kept in shared memory (a row up to them read once, written once)",
         cap * XENT_VEC);
    /* Rows longer than the head's (an adaptive softmax's tails, a few hundred rows each): as
     * much of the longest tail's row as one block may hold (on sm_90 200 KiB: wt103's last tail
     * of 67,735 bf16 logits whole, its 160,000 in part), so a block an SM, of 1024 threads for
     * the loads in flight; the head's length when there are no tails (then only the unit
     * tests' longer rows come here), all it may keep when the vocabulary is the data's (a
     * launch gives a block the shared memory its row takes). */
    long longest = m->vocab ? head : XENT_UNKNOWN; /* unknown: the last tail's, or the rows' */
    for (int c = 0; c < m->n_cutoffs; c++) {
        const long hi = c + 1 < m->n_cutoffs ? m->cutoffs[c + 1] : m->vocab, len = hi - m->cutoffs[c];
        if (len > longest) longest = len;
    }
    const long lcap = xent_cap(longest, dtype, is_sm90(plan) ? 200 * 1024 : SMEM_DYN_LIMIT);
    k = xent_kernel(plan, "xent_long", dtype, rows, 1024, lcap);
    whyf(k, "xent for rows over the head's %ld logits: their first %ld kept in shared memory, "
            "the rest read twice",
         head, lcap * XENT_VEC);

    tt_kernel *t = add_kernel(plan, "xent_sum", 0, "f32");
    set_const(t, "THREADS", sthreads);
    name_kernel(t, flags);
    set_const(t, "OP_XENT_SUM", 1);
    t->block[0] = (unsigned)sthreads;
    set_grid(t, 1, 1, 1, "x = 1");
    t->smem_bytes = 32 * 8;
    whyf(t, "the per-row losses summed in double in a fixed order: a deterministic total");
    return 0;
}

/* Adam over the flat fp32 parameters, and the gradient norm that clips it. */
static int plan_adam(tt_plan *plan, const char *dtype, char *err, size_t errlen)
{
    const long threads = 256, at = pick(plan, "adam", "THREADS", threads);
    if (at < 32 || at > 1024 || at % 32)
        return tt_errf(err, errlen, "adam: THREADS=%ld: whole warps, at most 1024", at);
    tt_kernel *k = threads_kernel(plan, "adam", "OP_ADAM", at, dtype);
    set_grid(k, 1, 1, 1, "x = ceil(parameters / %ld)", 4 * at); /* x: set at launch */
    k->smem_bytes = TT_ADAM_PAD_SMEM; /* the padded copies' jobs */
    whyf(k, "one pass over w, g, m, v (16-byte accesses)%s and the padded copies of the weights "
            "(no copy_rows after it); scalars read from device memory",
         strcmp(dtype, "bf16") == 0 ? ", bf16 copy of w for the GEMMs" : "");

    tt_kernel *g = add_kernel(plan, "grad_norm", 0, "f32");
    set_const(g, "BLOCKS", PARTIAL_BLOCKS);
    set_const(g, "THREADS", threads);
    name_kernel(g, (const char *const[]){NULL});
    set_const(g, "OP_GRAD_NORM", 1);
    g->block[0] = (unsigned)threads;
    set_grid(g, PARTIAL_BLOCKS, 1, 1, "x = %d", PARTIAL_BLOCKS);
    g->smem_bytes = 32 * 8 + 4; /* the block sum's doubles, and the last-block flag */
    whyf(g, "sums of squares in double, a partial per block of a fixed grid; the last block to "
            "finish adds them in a fixed order and writes norm and clip factor");
    return 0;
}

/* fp32 -> storage type, for the bf16 path's fp32 results and master weights (cast); and back,
 * for the gradients summed over several GPUs in bf16 (cast_widen). */
static void plan_cast(tt_plan *plan, const char *dtype)
{
    static const char *const ops[2] = {"cast", "cast_widen"}, *const defines[2] = {"OP_CAST",
                                                                                  "OP_CAST_WIDEN"};
    static const char *const why[2] = {
        "bf16 copies of fp32 results (dP, the master weights) for the bf16 GEMMs",
        "bf16 back to fp32, exact: the gradients summed over several GPUs in bf16"};
    for (int i = 0; i < 2; i++) {
        const long threads = pick(plan, ops[i], "THREADS", 256);
        tt_kernel *k = threads_kernel(plan, ops[i], defines[i], threads, dtype);
        set_grid(k, GRID_STRIDE_BLOCKS, 1, 1, "x = min(ceil(n / %ld), %d), grid-stride", threads,
                 GRID_STRIDE_BLOCKS);
        whyf(k, "%s", why[i]);
    }
}

/* The padded copies of the weights (gpu_model.c's padded), every one in one launch after each
 * write of the masters: a job per array of rows, blockIdx.y; the launcher sets the grid's x by the
 * tallest job. Planned for every spec: what is padded is the GPU runtime's choice (by the rows'
 * alignment), and a spec with nothing padded never launches it. */
static void plan_copy_rows(tt_plan *plan, const char *dtype)
{
    const long threads = pick(plan, "copy_rows", "THREADS", 256);
    tt_kernel *k = threads_kernel(plan, "copy_rows", "OP_COPY_ROWS", threads, dtype);
    set_grid(k, GRID_STRIDE_BLOCKS, 1, 1, "x = min(ceil(tallest job's rows / %ld), %d), y = jobs",
             threads / 32, GRID_STRIDE_BLOCKS);
    whyf(k, "the padded weights' copies after each Adam step in one launch, not a copy node "
            "each; a warp a row, in the widest access that fits");
}

/* Blocks an attention kernel should launch at least: two per SM of a 132-SM H100 or H200. The
 * plan knows no device, so a card with more SMs gets the same tiles. */
#define MLA_MIN_BLOCKS 264

/* The largest row tile from 32 down to `floor` that still gives MLA_MIN_BLOCKS blocks
 * (per_tile blocks each), else floor: fewer rows per block, more blocks, finer causal skipping. */
static long mla_row_tile(int n, long per_tile, long floor)
{
    long ti = 32;
    while (ti > floor && (long)ceil_div(n, ti) * per_tile < MLA_MIN_BLOCKS) ti /= 2;
    return ti;
}

static void mla_shape_consts(tt_kernel *k, const tt_model_spec *m);
static int plan_mla_fwd_sum(tt_plan *plan, const tt_spec *s, char *err, size_t errlen);
static int plan_mla_bwd_wo_sum(tt_plan *plan, const tt_model_spec *m, long splits);

/* mla_bwd_wo's tiles (w j a block, td features, splits of the batch), name, threads and grid,
 * alike for its mma.sync and wgmma variants. */
static void bwd_wo_shape(tt_kernel *k, int n, int d, long w, long td, long splits, long minb)
{
    const char *const flags[] = {"CAUSAL", "POS_KEY", "MMA", "WG", NULL};
    set_const(k, "W", w);
    set_const(k, "TD", td);
    set_const(k, "S", splits);
    name_kernel(k, flags);
    set_const(k, "THREADS", 32 * w);
    set_const(k, "MINB", minb);
    set_const(k, "OP_MLA_BWD_WO", 1);
    k->block[0] = (unsigned)(32 * w);
    set_grid(k, ceil_div(n, w), ceil_div(n, 16), ceil_div(d, td) * (unsigned)splits,
             "x = ceil(%d / %ld) (j), y = ceil(%d / 16), z = ceil(%d / %ld) x %ld splits", n, w, n, d,
             td, splits);
}

/* mla_fwd's tiles (g sequences and td features a block, ns slabs of Wo), name, threads, grid
 * and shared memory (smem), alike for its mma.sync and wgmma variants. */
static void fwd_shape(tt_kernel *k, const tt_spec *s, long tasks, long g, long td, long ns,
                      long minb, long smem)
{
    const char *const flags[] = {"CAUSAL", "POS_KEY", "MMA", "WG", NULL};
    const int d = s->model.d_model, batch = s->train.batch;
    set_const(k, "G", g);
    set_const(k, "TD", td);
    set_const(k, "JP", ceil_div(s->model.seq_len, 16));
    name_kernel(k, flags);
    set_const(k, "THREADS", 32 * g);
    set_const(k, "MINB", minb);
    set_const(k, "NS", ns);
    set_const(k, "OP_MLA_FWD", 1);
    k->block[0] = (unsigned)(32 * g);
    set_grid(k, (unsigned)tasks, ceil_div(batch, g), ceil_div(d, td),
             "x = %d tasks, y = ceil(batch / %d), z = ceil(%d / %d)", (int)tasks, (int)g, d, (int)td);
    k->dyn_smem = (unsigned)smem;
    set_const(k, "SMEM", k->dyn_smem);
    set_const(k, "TASKS", tasks);
}

/* The (row tile, part of j) tasks of mla_tc.cu's mla_fwd and mla_bwd_q (templates/mla_geom.cuh). */
static long mla_tc_tasks(const tt_model_spec *m, long js)
{
    return tt_mla_tc_tasks(m->seq_len, m->causal, (int)js);
}

/* An attention kernel of mla_tc.cu on wgmma (WG): built for sm_90a, its shape, MMA and WG set;
 * the caller adds the rest of its name's constants and names it. */
static tt_kernel *add_wg_kernel(tt_plan *plan, const char *op, const tt_model_spec *m)
{
    tt_kernel *k = add_kernel(plan, op, 1, "bf16");
    mla_shape_consts(k, m);
    set_const(k, "MMA", 1);
    set_const(k, "WG", 1);
    snprintf(k->arch, sizeof k->arch, "sm_90a");
    return k;
}

/* The blocks of the wgmma forward with g sequences a block and feature tiles of td. */
static long wg_fwd_blocks(const tt_spec *s, long g, long td)
{
    return mla_tc_tasks(&s->model, 16) * (long)ceil_div(s->train.batch, g) *
           (long)ceil_div(s->model.d_model, td);
}

/* The forward's second stage on wgmma (mla_tc.cu, TT_WG): warpgroups of four sequences, td
 * output features a block in whole n64 products (up to 256), Wo's slabs of a j whole, two of
 * them. The feature tiles as even as whole n64s allow; then narrower tiles and one warpgroup a
 * block instead of two until the shared memory fits. 0 with the constants, -1 when
 * no shape fits (the mma.sync kernel then runs). */
static int plan_mla_wg_fwd(const tt_plan *plan, const tt_spec *s, long *g, long *td, long *ns,
                           long *narrowed_from)
{
    const tt_model_spec *m = &s->model;
    const int n = m->seq_len, r = m->rank, d = m->d_model;
    const long tiles = ceil_div(d, 256);
    /* two warpgroups a block where that still gives a block to most SMs (a block an SM: their
     * shared memory), else one (wt103 on an H200: 120 blocks of 8 sequences 0.047 ms, 225 of 4
     * 0.058) */
    *g = pick(plan, "mla_fwd", "G", wg_fwd_blocks(s, 8, 256) >= MLA_MIN_BLOCKS / 3 ? 8 : 4);
    *td = pick(plan, "mla_fwd", "TD", (long)ceil_div(ceil_div(d, tiles), 64) * 64);
    /* j + 1's lands while j's products run; with three, j's last products also run on while
     * j + 1's start: three where they fit */
    *ns = pick(plan, "mla_fwd", "NS", 3);
    if (!tuned(plan, "mla_fwd"))
        while (tt_mla_wg_fwd_smem(n, r, *g, *td, *ns) > SMEM_DYN_LIMIT_SM90) {
            if (*ns == 3) *ns = 2;
            else if (*td > 64) *td -= 64;
            else if (*g == 8) *g = 4, *td = (long)ceil_div(ceil_div(d, tiles), 64) * 64;
            else return -1;
        }
    /* Too few blocks to cover a quarter of the MLA_MIN_BLOCKS (half the SMs): more feature
     * tiles, as even as whole n64s allow, each block recomputing its T (cheap at such shapes:
     * ptb.yaml's 3 x 8 blocks of TD=256 took 0.0206 ms, 3 x 8 x 4 of TD=64 0.0170 on an H100,
     * `ttgen --tune`, 2026-12-06). Narrower tiles never need more shared memory. Not where a
     * tuning sets TD (one that sets only G or NS still gets these tiles). */
    *narrowed_from = 0;
    if (!tt_tuning_has(plan->tuning, "mla_fwd", "TD")) {
        const long before = *td;
        for (long t = ceil_div(d, *td) + 1;
             *td > 64 && wg_fwd_blocks(s, *g, *td) < MLA_MIN_BLOCKS / 4; t++) {
            const long narrower = (long)ceil_div(ceil_div(d, t), 64) * 64;
            if (narrower < *td) *td = narrower;
        }
        if (*td != before) *narrowed_from = before;
    }
    if ((*g != 4 && *g != 8) || *td % 64 || *td < 64 || *td > 256 || (*ns != 2 && *ns != 3) ||
        tt_mla_wg_fwd_smem(n, r, *g, *td, *ns) > SMEM_DYN_LIMIT_SM90)
        return -1;
    return 0;
}

/* The bf16 forward on tensor cores: a warp per sequence (g of them per block) and 16 rows, td
 * output features per block. Fewer sequences per block, then narrower feature tiles, until
 * there are MLA_MIN_BLOCKS blocks. On sm_90 with N a multiple of 8, the second stage on wgmma
 * (plan_mla_wg_fwd) unless a tuning says WG=0. */
static int plan_mla_tc_fwd(tt_plan *plan, const tt_spec *s, char *err, size_t errlen)
{
    const tt_model_spec *m = &s->model;
    const int n = m->seq_len, r = m->rank, d = m->d_model, batch = s->train.batch;
    const long tasks = mla_tc_tasks(m, 16);
    /* wgmma where it can run and the tuning's values (if any) fit it: a tuning from before WG
     * existed, made for the mma.sync kernel, keeps that kernel */
    long wg_g = 0, wg_td = 0, wg_ns = 0, wg_td_was = 0;
    const bool wg_fits = is_sm90(plan) && n % 8 == 0 &&
                         !plan_mla_wg_fwd(plan, s, &wg_g, &wg_td, &wg_ns, &wg_td_was);
    const long wg_want = pick(plan, "mla_fwd", "WG", wg_fits);
    if (wg_want && !wg_fits)
        return tt_errf(err, errlen, "mla_fwd: WG=1 needs sm_90, seq_len a multiple of 8 and G 4 or 8, "
                       "TD a multiple of 64 up to 256, NS 2 or 3 within 227 KiB of shared memory");
    if (wg_want) {
        tt_kernel *k = add_wg_kernel(plan, "mla_fwd", m);
        fwd_shape(k, s, tasks, wg_g, wg_td, wg_ns, pick(plan, "mla_fwd", "MINB", 0),
                  tt_mla_wg_fwd_smem(n, r, wg_g, wg_td, wg_ns)); /* MINB 0: a block an SM */
        char narrowed[96] = "";
        if (wg_td_was)
            snprintf(narrowed, sizeof narrowed, "; TD %ld: %ld blocks (TD %ld: %ld)", wg_td,
                     wg_fwd_blocks(s, wg_g, wg_td), wg_td_was, wg_fwd_blocks(s, wg_g, wg_td_was));
        whyf(k, "T = A_j V^T by mma.sync, Y += T Wo_j^T by wgmma (a warpgroup: 4 seqs' rows, T as A in "
                "registers, Wo_j by TMA)%s%s", m->causal ? "; causal: j, k stop at the tile's end" : "",
             narrowed);
        return plan_mla_fwd_sum(plan, s, err, errlen);
    }
    /* feature tiles in whole pairs of n8 tiles (one ldmatrix.x4 feeds two products) */
    long g = 4, td = d >= 128 ? 128 : (long)ceil_div(d, 16) * 16, ns = 2;
    while (tasks * ceil_div(batch, g) * ceil_div(d, td) < MLA_MIN_BLOCKS) {
        if (g > 1) g /= 2;
        else if (td > 64) td = (long)ceil_div(td / 2, 16) * 16;
        else break;
    }
    while (tt_mla_tc_fwd_smem(n, r, g, td, ns) > SMEM_DYN_LIMIT && (g > 1 || td > 16)) {
        if (g > 1) g /= 2;
        else td = td / 2 < 16 ? 16 : (long)ceil_div(td / 2, 16) * 16;
    }
    /* slabs of Wo: two (a barrier before a slab is overwritten) or three (one more slab of
     * shared memory, no such barrier): three where they fit, at half the feature tile if need
     * be (wt103 on an H100: G=4 TD=64 with three 0.078 ms, TD=128 with two 0.085) */
    if (tt_mla_tc_fwd_smem(n, r, g, td, 3) <= SMEM_DYN_LIMIT)
        ns = 3;
    else if (td >= 128 && tt_mla_tc_fwd_smem(n, r, g, td / 2, 3) <= SMEM_DYN_LIMIT)
        td /= 2, ns = 3;
    g = pick(plan, "mla_fwd", "G", g);
    td = pick(plan, "mla_fwd", "TD", td);
    ns = pick(plan, "mla_fwd", "NS", ns);
    if (ns != 2 && ns != 3) return tt_errf(err, errlen, "mla_fwd: NS=%ld: 2 or 3 slabs", ns);
    if (tuned(plan, "mla_fwd") && (g < 1 || g > 8 || td % 16 || td < 16 || td > (long)ceil_div(d, 16) * 16))
        return tt_errf(err, errlen, "mla_fwd: G=%ld TD=%ld: G from 1 to 8, TD a multiple of 16 "
                       "up to the model's %d features", g, td, d);
    if (tt_mla_tc_fwd_smem(n, r, g, td, ns) > SMEM_DYN_LIMIT)
        return tt_errf(err, errlen, "mla_fwd: seq_len %d with rank %d needs more than %d KiB of "
                       "shared memory; lower model.seq_len or model.rank", n, r,
                       SMEM_DYN_LIMIT / 1024);
    tt_kernel *k = add_kernel(plan, "mla_fwd", 1, "bf16");
    mla_shape_consts(k, m);
    set_const(k, "MMA", 1);
    set_const(k, "WG", 0);
    fwd_shape(k, s, tasks, g, td, ns, pick(plan, "mla_fwd", "MINB", 0),
              tt_mla_tc_fwd_smem(n, r, g, td, ns)); /* MINB 0: the compiler's registers */
    whyf(k, "bf16 mma.sync, T = A_j V^T then Y += T Wo_j^T in registers (T never in memory); "
            "%ld seq/block share Wo slabs%s", g, m->causal ? "; causal: j, k stop at the tile's end" : "");
    return plan_mla_fwd_sum(plan, s, err, errlen);
}

/* The sum of the forward's parts of j (mla_tc.cu's mla_fwd_sum), where there are several. */
static int plan_mla_fwd_sum(tt_plan *plan, const tt_spec *s, char *err, size_t errlen)
{
    const tt_model_spec *m = &s->model;
    const int n = m->seq_len;
    const char *const flags[] = {"CAUSAL", "POS_KEY", "MMA", NULL};
    if (ceil_div(n, 16) == 1) return 0;
    tt_kernel *c = add_kernel(plan, "mla_fwd_sum", 1, "bf16");
    mla_shape_consts(c, m);
    set_const(c, "JP", ceil_div(n, 16));
    name_kernel(c, flags);
    set_const(c, "THREADS", 256);
    set_const(c, "OP_MLA_FWD_SUM", 1);
    c->block[0] = 256;
    set_grid(c, GRID_STRIDE_BLOCKS, 1, 1, "x = %d, grid-stride over B N D", GRID_STRIDE_BLOCKS);
    whyf(c, "Y = the parts' fp32 sums in order, rounded once: deterministic (where the attention's "
            "residual LayerNorm does not add them itself: tt-bench and the units)");
    /* The attention's residual LayerNorm reading the parts itself */
    tt_kernel *k = residual_ln_fwd_instance(plan, s, "mla_residual_ln_fwd", "bf16",
                                            (int)ceil_div(n, 16), err, errlen);
    if (!k) return -1;
    whyf(k, "x1 = LayerNorm(x + dropout(y)) with y the attention's %ld parts summed in order and "
            "rounded once, as mla_fwd_sum stores it: that launch and y's round trip saved",
         (long)ceil_div(n, 16));
    return 0;
}

static int plan_mla(tt_plan *plan, const tt_spec *s, const char *dtype, char *err, size_t errlen)
{
    const tt_model_spec *m = &s->model;
    if (!strcmp(dtype, "bf16")) return plan_mla_tc_fwd(plan, s, err, errlen);
    const int n = m->seq_len, r = m->rank, d = m->d_model;
    const int pos_key = m->position == TT_POS_KEY;
    const long threads = 256, warps = threads / 32;
    /* Row tile: up to 32 rows share each Wo chunk, fewer when that leaves SMs idle. */
    long td = d >= 128 ? 128 : (long)ceil_div(d, 32) * 32;
    long ti = mla_row_tile(n, (long)ceil_div(d, td) * s->train.batch, 8);
    long tk = n >= 32 ? 32 : (long)ceil_div(n, 8) * 8;
    if (tuned(plan, "mla_fwd")) {
        ti = pick(plan, "mla_fwd", "TI", ti);
        td = pick(plan, "mla_fwd", "TD", td);
        if (ti < warps || ti % warps || td % 32 || td < 32 || td > (long)ceil_div(d, 32) * 32 ||
            tt_mla_fwd_smem(ti, td, tk, r, pos_key) > SMEM_STATIC_LIMIT)
            return tt_errf(err, errlen, "mla_fwd: TI=%ld TD=%ld: TI a multiple of %ld, TD of 32 up "
                           "to the model's %d features, within %d KiB of shared memory", ti, td,
                           warps, d, SMEM_STATIC_LIMIT / 1024);
    }
    while (tt_mla_fwd_smem(ti, td, tk, r, pos_key) > SMEM_STATIC_LIMIT) {
        if (ti > warps) ti /= 2;
        else if (td > 32) td /= 2;
        else if (tk > 8) tk /= 2;
        else
            return tt_errf(err, errlen,
                           "mla_fwd: rank %d needs more than %d KiB of shared memory even with the "
                           "smallest tiles; lower model.rank",
                           r, SMEM_STATIC_LIMIT / 1024);
    }
    tt_kernel *k = add_kernel(plan, "mla_fwd", 0, dtype);
    const char *const flags[] = {"CAUSAL", "POS_KEY", NULL};
    set_const(k, "N", n);
    set_const(k, "R", r);
    set_const(k, "D", d);
    set_const(k, "CAUSAL", m->causal);
    set_const(k, "POS_KEY", pos_key);
    set_const(k, "TI", ti);
    set_const(k, "TD", td);
    set_const(k, "TK", tk);
    name_kernel(k, flags);
    set_const(k, "THREADS", threads);
    set_const(k, "OP_MLA_FWD", 1);
    k->block[0] = (unsigned)threads;
    set_grid(k, ceil_div(n, ti), ceil_div(d, td), (unsigned)s->train.batch,
             "x = ceil(%d / %ld), y = ceil(%d / %ld), z = batch", n, ti, d, td);
    k->smem_bytes = (unsigned)tt_mla_fwd_smem(ti, td, tk, r, pos_key);
    set_const(k, "SMEM", k->smem_bytes);
    if (m->causal) {
        /* Triples (i,j,k) a tile visits against N^3: the work the mask lets it skip. */
        double visited = 0;
        for (long i0 = 0; i0 < n; i0 += ti) {
            long last = i0 + ti < n ? i0 + ti : n;
            visited += (double)(last - i0) * (double)last * (double)last;
        }
        whyf(k, "fused SIMT fp32 (T tile in shared memory, never in DRAM); causal: visits %.0f%% "
                "of the N^3 triples", 100.0 * visited / ((double)n * n * n));
    } else {
        whyf(k, "fused SIMT fp32 (T tile in shared memory, never in DRAM); no mask: all N^3 triples");
    }
    return 0;
}

/* The shape constants every mla kernel carries, in the order of their names. */
static void mla_shape_consts(tt_kernel *k, const tt_model_spec *m)
{
    set_const(k, "N", m->seq_len);
    set_const(k, "R", m->rank);
    set_const(k, "D", m->d_model);
    set_const(k, "CAUSAL", m->causal);
    set_const(k, "POS_KEY", m->position == TT_POS_KEY);
}

/* The backward of multi-linear attention: four kernels (templates/mla.cu says what each does).
 * TK is 32 in both large kernels: a lane of a warp owns one key k of a tile. */
/* mla_bwd_wo of templates/mla.cu (SIMT, fp32 math). */
static int plan_mla_bwd_wo_simt(tt_plan *plan, const tt_spec *s, const char *dtype, char *err,
                                size_t errlen)
{
    const tt_model_spec *m = &s->model;
    const int n = m->seq_len, r = m->rank, d = m->d_model;
    const long threads = 256, warps = threads / 32, tk = 32;
    const char *const flags[] = {"CAUSAL", "POS_KEY", NULL};
    long ti = n > 16 ? 32 : (n > 8 ? 16 : 8), td = d >= 128 ? 128 : (long)ceil_div(d, 32) * 32;
    /* One block per (j, key tile, feature tile): narrower feature tiles when that is too few
     * blocks (each recomputes its T tiles, a cost of R per TD features). */
    while (td > 32 && (long)n * ceil_div(n, tk) * ceil_div(d, td) < MLA_MIN_BLOCKS) td /= 2;
    while (tt_mla_bwd_wo_smem(ti, td, tk, r) > SMEM_STATIC_LIMIT && (ti > warps || td > 32)) {
        if (td > 32) td /= 2;
        else ti /= 2;
    }
    if (tuned(plan, "mla_bwd_wo")) {
        ti = pick(plan, "mla_bwd_wo", "TI", ti);
        td = pick(plan, "mla_bwd_wo", "TD", td);
        if (ti < warps || ti % warps || td % 32 || td < 32 || td > (long)ceil_div(d, 32) * 32)
            return tt_errf(err, errlen, "mla_bwd_wo: TI=%ld TD=%ld: TI a multiple of %ld, TD of 32 "
                           "up to the model's %d features", ti, td, warps, d);
    }
    if (tt_mla_bwd_wo_smem(ti, td, tk, r) > SMEM_STATIC_LIMIT)
        return tt_errf(err, errlen, "mla_bwd_wo: rank %d needs more than %d KiB of shared memory; "
                       "lower model.rank", r, SMEM_STATIC_LIMIT / 1024);
    tt_kernel *k = add_kernel(plan, "mla_bwd_wo", 0, dtype);
    mla_shape_consts(k, m);
    set_const(k, "TI", ti);
    set_const(k, "TD", td);
    set_const(k, "TK", tk);
    name_kernel(k, flags);
    set_const(k, "THREADS", threads);
    set_const(k, "OP_MLA_BWD_WO", 1);
    k->block[0] = (unsigned)threads;
    set_grid(k, (unsigned)n, ceil_div(n, tk), ceil_div(d, td),
             "x = %d (j), y = ceil(%d / %ld), z = ceil(%d / %ld)", n, n, tk, d, td);
    k->smem_bytes = (unsigned)tt_mla_bwd_wo_smem(ti, td, tk, r);
    set_const(k, "SMEM", k->smem_bytes);
    whyf(k, "one writer per dWo element, rows walked in a fixed order (no atomics); T recomputed "
            "per %ld-row tile%s", ti, m->causal ? ", rows above max(j, k) skipped" : "");

    return 0;
}

/* mla_bwd_q of templates/mla.cu (SIMT, fp32 math); returns its row tile (the partials'), or -1. */
static long plan_mla_bwd_q_simt(tt_plan *plan, const tt_spec *s, const char *dtype, char *err,
                                size_t errlen)
{
    const tt_model_spec *m = &s->model;
    const int n = m->seq_len, r = m->rank, key = m->position == TT_POS_KEY;
    const long threads = 256, warps = threads / 32, tk = 32;
    const char *const flags[] = {"CAUSAL", "POS_KEY", NULL};
    /* Rows per block down to 16, not 8: at 8 the D = 1024 instance spills registers. */
    long tq = n > 8 ? mla_row_tile(n, s->train.batch, 16) : 8, dc = 32;
    while (tt_mla_bwd_q_smem(tq, tk, dc, r, key) > SMEM_STATIC_LIMIT && tq > warps) tq /= 2;
    tq = pick(plan, "mla_bwd_q", "TI", tq);
    if (tq < warps || tq % warps)
        return tt_errf(err, errlen, "mla_bwd_q: TI=%ld: a multiple of %ld", tq, warps), -1;
    if (tt_mla_bwd_q_smem(tq, tk, dc, r, key) > SMEM_STATIC_LIMIT)
        return tt_errf(err, errlen, "mla_bwd_q: rank %d needs more than %d KiB of shared memory; "
                       "lower model.rank", r, SMEM_STATIC_LIMIT / 1024), -1;
    tt_kernel *q = add_kernel(plan, "mla_bwd_q", 0, dtype);
    mla_shape_consts(q, m);
    set_const(q, "TI", tq);
    set_const(q, "TK", tk);
    set_const(q, "DC", dc);
    name_kernel(q, flags);
    set_const(q, "THREADS", threads);
    set_const(q, "OP_MLA_BWD_Q", 1);
    q->block[0] = (unsigned)threads;
    set_grid(q, ceil_div(n, tq), (unsigned)s->train.batch, 1, "x = ceil(%d / %ld), y = batch", n, tq);
    q->smem_bytes = (unsigned)tt_mla_bwd_q_smem(tq, tk, dc, r, key);
    set_const(q, "SMEM", q->smem_bytes);
    whyf(q, "dT = dY Wo_j^T tile by tile, never stored; per-tile partials of dK, dV, dP, dg, du, "
            "dv summed in a fixed order by mla_bwd_reduce");

    return tq;
}

/* Splits of the batch for mla_bwd_wo with base blocks a split, each summed into its own copy of
 * dWo: so that no block walks more than about 32 tiles of 32 rows (the walk is the kernel's
 * critical path), and so that there are MLA_MIN_BLOCKS blocks without narrowing the tiles; at
 * most 8, and each split at least 4 tiles (the sums cost a pass over dWo per split). */
static long mla_bwd_wo_splits(const tt_spec *s, long base)
{
    const long batch = s->train.batch, per_seq = ceil_div(s->model.seq_len, 32);
    long splits = (long)ceil_div(batch * per_seq, 32);
    if ((long)ceil_div(2 * MLA_MIN_BLOCKS, base) > splits) splits = ceil_div(2 * MLA_MIN_BLOCKS, base);
    if (splits > 8) splits = 8;
    while (splits > 1 && (long)ceil_div(batch, splits) * per_seq < 4) splits--;
    if (splits > batch) splits = batch;
    return splits;
}

/* mla_bwd_wo on wgmma (mla_tc.cu, TT_WG): W = 4 or 8 warps (j) a block, td features in whole
 * n64 products (up to 256, as even as they allow), the splits of mla_bwd_wo_splits. 0 with the
 * constants, -1 when they do not fit (the mma.sync kernel then runs). */
static int plan_mla_wg_bwd_wo(const tt_plan *plan, const tt_spec *s, long *w, long *td, long *splits)
{
    const tt_model_spec *m = &s->model;
    const int n = m->seq_len, d = m->d_model;
    const long tiles = ceil_div(d, 256);
    *w = pick(plan, "mla_bwd_wo", "W", 4); /* wt103 on an H200: 4 j a block 1.06x 8 */
    *td = pick(plan, "mla_bwd_wo", "TD", (long)ceil_div(ceil_div(d, tiles), 64) * 64);
    *splits = pick(plan, "mla_bwd_wo", "S",
                   mla_bwd_wo_splits(s, (long)ceil_div(n, *w > 0 ? *w : 1) * ceil_div(n, 16) * ceil_div(d, *td > 0 ? *td : 1)));
    if ((*w != 4 && *w != 8) || *td % 64 || *td < 64 || *td > 256 || *splits < 1 || *splits > s->train.batch ||
        d % 8 != 0 || tt_mla_wg_bwd_wo_smem(m->rank, *w, *td) > SMEM_DYN_LIMIT_SM90)
        return -1;
    return 0;
}

/* mla_bwd_wo of templates/mla_tc.cu: a warp per j, W of them per block, 16 keys and td
 * features per block, a split of the batch. On sm_90 with D a multiple of 8, the second stage on
 * wgmma (plan_mla_wg_bwd_wo) unless a tuning says WG=0. */
static int plan_mla_bwd_wo_tc(tt_plan *plan, const tt_spec *s, char *err, size_t errlen)
{
    const tt_model_spec *m = &s->model;
    const int n = m->seq_len, d = m->d_model;
    long wg_w = 0, wg_td = 0, wg_s = 0;
    const bool wg_fits = is_sm90(plan) && !plan_mla_wg_bwd_wo(plan, s, &wg_w, &wg_td, &wg_s);
    const long wg_want = pick(plan, "mla_bwd_wo", "WG", wg_fits);
    if (wg_want && !wg_fits)
        return tt_errf(err, errlen, "mla_bwd_wo: WG=1 needs sm_90, d_model a multiple of 8, W 4 or 8, TD a "
                       "multiple of 64 up to 256, S from 1 to the batch, within 227 KiB of shared memory");
    if (wg_want) {
        tt_kernel *k = add_wg_kernel(plan, "mla_bwd_wo", m);
        bwd_wo_shape(k, n, d, wg_w, wg_td, wg_s, pick(plan, "mla_bwd_wo", "MINB", 1));
        k->dyn_smem = (unsigned)tt_mla_wg_bwd_wo_smem(m->rank, wg_w, wg_td);
        set_const(k, "SMEM", k->dyn_smem);
        whyf(k, "T_j^T by mma.sync a warp, dWo_j^T += T_j^T dY by wgmma a warpgroup (4 j, dY by TMA, "
                "read once for 64 rows)%s", m->causal ? "; rows above max(j, k) skipped" : "");
        return plan_mla_bwd_wo_sum(plan, m, wg_s);
    }
    /* eight j per block share its tiles (fewer when N is short: blocks); the batch splits
     * below make the blocks */
    const long w = pick(plan, "mla_bwd_wo", "W", n >= 64 ? 8 : n >= 32 ? 4 : 2);
    /* the heuristic's feature tile narrows until the tiles fit in static shared memory */
    long td_h = d >= 128 ? 128 : (long)ceil_div(d, 16) * 16;
    while (td_h > 16 && tt_mla_tc_bwd_wo_smem(m->rank, w, td_h) > SMEM_STATIC_LIMIT)
        td_h = ceil_div(td_h / 2, 16) * 16;
    const long td = pick(plan, "mla_bwd_wo", "TD", td_h);
    const long batch = s->train.batch;
    const long base = (long)ceil_div(n, w) * ceil_div(n, 16) * ceil_div(d, td);
    const long splits = pick(plan, "mla_bwd_wo", "S", mla_bwd_wo_splits(s, base));
    if (w < 1 || w > 16 || td % 16 || td < 16 || td > (long)ceil_div(d, 16) * 16 || splits < 1 ||
        splits > batch)
        return tt_errf(err, errlen, "mla_bwd_wo: W=%ld TD=%ld S=%ld: W from 1 to 16, TD a multiple "
                       "of 16 up to the model's %d features, S from 1 to the batch (%ld)", w, td,
                       splits, d, batch);
    if (tt_mla_tc_bwd_wo_smem(m->rank, w, td) > SMEM_STATIC_LIMIT)
        return tt_errf(err, errlen, "mla_bwd_wo: W=%ld TD=%ld: rank %d needs more than %d KiB of "
                       "shared memory; lower W or TD", w, td, m->rank, SMEM_STATIC_LIMIT / 1024);
    tt_kernel *k = add_kernel(plan, "mla_bwd_wo", 1, "bf16");
    mla_shape_consts(k, m);
    set_const(k, "MMA", 1);
    set_const(k, "WG", 0);
    bwd_wo_shape(k, n, d, w, td, splits,
                 pick(plan, "mla_bwd_wo", "MINB", 512 / (32 * w) > 0 ? 512 / (32 * w) : 1));
    k->smem_bytes = (unsigned)tt_mla_tc_bwd_wo_smem(m->rank, w, td);
    set_const(k, "SMEM", k->smem_bytes);
    whyf(k, "bf16 mma.sync: T_j^T = V A_j^T then dWo_j^T += T_j^T dY in registers, 32 rows a "
            "step, one writer per element%s", m->causal ? "; rows above max(j, k) skipped" : "");
    return plan_mla_bwd_wo_sum(plan, m, splits);
}

/* The sum of mla_bwd_wo's splits (mla_tc.cu's mla_bwd_wo_sum), where there are several. */
static int plan_mla_bwd_wo_sum(tt_plan *plan, const tt_model_spec *m, long splits)
{
    const char *const flags[] = {"CAUSAL", "POS_KEY", "MMA", NULL};
    if (splits == 1) return 0;
    tt_kernel *c = add_kernel(plan, "mla_bwd_wo_sum", 1, "f32");
    mla_shape_consts(c, m);
    set_const(c, "S", splits);
    name_kernel(c, flags);
    set_const(c, "THREADS", 256);
    set_const(c, "OP_MLA_BWD_WO_SUM", 1);
    c->block[0] = 256;
    set_grid(c, GRID_STRIDE_BLOCKS, 1, 1, "x = %d, grid-stride over D N^2", GRID_STRIDE_BLOCKS);
    whyf(c, "dWo += the %ld splits' sums, in order: deterministic", splits);
    return 0;
}

/* mla_bwd_q of templates/mla_tc.cu (position: none, D <= 256: dY's rows live in registers): a
 * warp per sequence, 16 rows and up to 16 j, g sequences per block; returns the row tile (16).
 * dt_mem: the materialized strategy's (DT_MEM: dT read from memory, any D, no slabs of Wo, no
 * wgmma). */
static long plan_mla_bwd_q_tc(tt_plan *plan, const tt_spec *s, bool dt_mem, char *err, size_t errlen)
{
    const tt_model_spec *m = &s->model;
    const int n = m->seq_len, r = m->rank, d = m->d_model, batch = s->train.batch;
    /* parts of 8 key positions j instead of 16 when that is what fills the card (two of G's
     * warps per SM slot: the kernel holds about 200 registers a thread) */
    const long js = pick(plan, "mla_bwd_q", "JS",
                         mla_tc_tasks(m, 16) * ceil_div(batch, 2) < 4L * 132 ? 8 : 16);
    if (js != 8 && js != 16)
        return tt_errf(err, errlen, "mla_bwd_q: JS=%ld: parts of 8 or 16 key positions", js), -1;
    const long tasks = mla_tc_tasks(m, js);
    /* dT's product on wgmma (mla_tc.cu, TT_WG) on sm_90 with N a multiple of 8: a warpgroup
     * of four sequences a block (or two); a tuning from before WG keeps mma.sync where its G
     * does not fit it */
    const long wg_g = pick(plan, "mla_bwd_q", "G", 4);
    const bool wg_fits = !dt_mem && is_sm90(plan) && n % 8 == 0 && (wg_g == 4 || wg_g == 8) &&
                         tt_mla_wg_bwd_q_smem(r, d, js, wg_g) <= SMEM_DYN_LIMIT_SM90;
    const long wg = pick(plan, "mla_bwd_q", "WG", wg_fits);
    const long slabs = dt_mem ? 0 : tt_mla_tc_bwd_q_slabs(d); /* (their smem: see below) */
    if (wg && !wg_fits)
        return tt_errf(err, errlen, "mla_bwd_q: WG=1 needs sm_90, seq_len a multiple of 8 and G 4 or 8 "
                       "within 227 KiB of shared memory"), -1;
    long g = 4;
    while (!wg && g > 1 && (tasks * ceil_div(batch, g) < MLA_MIN_BLOCKS ||
                            slabs + g * tt_mla_tc_bwd_q_warp(r, js) > SMEM_DYN_LIMIT))
        g /= 2;
    g = wg ? wg_g : pick(plan, "mla_bwd_q", "G", g);
    if (!wg && (g < 1 || g > 8 || slabs + g * tt_mla_tc_bwd_q_warp(r, js) > SMEM_DYN_LIMIT))
        return tt_errf(err, errlen, "mla_bwd_q: G=%ld: from 1 to 8, within %d KiB of shared memory",
                       g, SMEM_DYN_LIMIT / 1024), -1;
    tt_kernel *q = add_kernel(plan, "mla_bwd_q", 1, "bf16");
    const char *const flags[] = {"CAUSAL", "POS_KEY", "MMA", "WG", "DT_MEM", NULL};
    mla_shape_consts(q, m);
    set_const(q, "MMA", 1);
    set_const(q, "WG", wg);
    if (dt_mem) set_const(q, "DT_MEM", 1); /* (the fused strategy's kernel without the constant) */
    set_const(q, "G", g);
    set_const(q, "TI", 16);
    set_const(q, "JS", js);
    set_const(q, "JP", ceil_div(n, js));
    name_kernel(q, flags);
    set_const(q, "THREADS", 32 * g);
    set_const(q, "MINB", pick(plan, "mla_bwd_q", "MINB", 0));
    set_const(q, "OP_MLA_BWD_Q", 1);
    q->block[0] = (unsigned)(32 * g);
    set_grid(q, (unsigned)tasks, ceil_div(batch, g), 1, "x = %ld (row tile, part of j), y = ceil(batch / %ld)",
             tasks, g);
    q->dyn_smem = (unsigned)(wg ? tt_mla_wg_bwd_q_smem(r, d, js, g) : slabs + g * tt_mla_tc_bwd_q_warp(r, js));
    set_const(q, "SMEM", q->dyn_smem);
    set_const(q, "TASKS", tasks);
    if (wg) {
        snprintf(q->arch, sizeof q->arch, "sm_90a");
        whyf(q, "dT = dY Wo_j^T by wgmma (a warpgroup: 4 seqs, dY in registers, Wo_j by TMA); E, F, dQ, "
                "dV, dK~ by mma.sync, a warp per 16 rows x %ld j; fixed-order partials", js);
    } else if (dt_mem)
        whyf(q, "dT read as cuBLAS's dY Wo wrote it, masked in registers; E^T = V^T dT^T, F^T = Q^T dT; "
                "dQ, dV, dK~ in registers; a warp per 16 rows x %ld j; partials summed in a fixed "
                "order: no mask pass over dT, no products of it with KV and A", js);
    else
        whyf(q, "bf16 mma.sync: dT = dY Wo_j^T, E^T = V^T dT^T, F^T = Q^T dT; dQ, dV, dK~ in registers; "
                "a warp per 16 rows x %ld j; partials summed in a fixed order", js);
    return 16;
}

/* The backward of multi-linear attention: four kernels (templates/mla.cu says what each does).
 * On the bf16 path the two large ones run on tensor cores (templates/mla_tc.cu); mla_bwd_q only
 * for position: none and D <= 256, else mla.cu's. */
static int plan_mla_bwd_reduce(tt_plan *plan, const tt_spec *s, const char *dtype, long tq);
static int plan_mla_bwd(tt_plan *plan, const tt_spec *s, const char *dtype, char *err,
                        size_t errlen)
{
    const tt_model_spec *m = &s->model;
    const int r = m->rank, tc = !strcmp(dtype, "bf16");
    if (tc ? plan_mla_bwd_wo_tc(plan, s, err, errlen) != 0
           : plan_mla_bwd_wo_simt(plan, s, dtype, err, errlen) != 0)
        return -1;
    long tq;
    if (tc && m->position == TT_POS_NONE && m->d_model <= 256 &&
        tt_mla_tc_bwd_q_smem(r, m->d_model, 8, 1) <= SMEM_DYN_LIMIT)
        tq = plan_mla_bwd_q_tc(plan, s, false, err, errlen);
    else
        tq = plan_mla_bwd_q_simt(plan, s, dtype, err, errlen);
    if (tq < 0) return -1;
    return plan_mla_bwd_reduce(plan, s, dtype, tq);
}

/* The sums of mla_bwd_q's partials (the kernel just planned, whose row tile is tq): its tiles and
 * parts must be the ones mla_bwd_q wrote. dqkv's first (a thread per vec elements of a row: 4
 * when R keeps them 16-byte aligned), then in the blocks after those the parameters' (a warp per
 * output: dP's, then dg, du, dv): one launch. */
static int plan_mla_bwd_reduce(tt_plan *plan, const tt_spec *s, const char *dtype, long tq)
{
    const tt_model_spec *m = &s->model;
    const int n = m->seq_len, r = m->rank;
    const char *const flags[] = {"CAUSAL", "POS_KEY", NULL};
    const long jp = tt_kernel_const(&plan->kernels[plan->n - 1], "JP", 0);
    const long js = tt_kernel_const(&plan->kernels[plan->n - 1], "JS", 0);
    const long threads = pick(plan, "mla_bwd_reduce", "THREADS", 256);
    tt_kernel *c = add_kernel(plan, "mla_bwd_reduce", 0, dtype);
    mla_shape_consts(c, m);
    set_const(c, "TI", tq);
    if (jp) { /* mla_tc.cu's parts (and its dQ partials) */
        set_const(c, "JS", js);
        set_const(c, "JP", jp);
    }
    name_kernel(c, flags);
    set_const(c, "THREADS", threads);
    set_const(c, "OP_MLA_BWD_REDUCE", 1);
    const long vec = r % 4 == 0 ? 4 : 1;
    set_const(c, "VEC", vec);
    c->block[0] = (unsigned)threads;
    const long elems = (long)s->train.batch * n * r / vec;
    const long outputs = (m->position == TT_POS_KEY ? (long)n * r : 0) + 3L * r;
    set_grid(c, ceil_div(elems, threads) + ceil_div(32 * outputs, threads), 1, 1,
             "x = ceil(batch * %d / %ld / %ld) + ceil(32 * %ld / %ld)", n * r, vec, threads, outputs,
             threads);
    whyf(c, "thread per element, tiles summed in a fixed order; then a warp per parameter output, "
            "lanes over sequences, a fixed butterfly: deterministic");
    return 0;
}

long tt_mat_tile_end(long t, long tiles, long n) { return (t + 1) * n / tiles; }

/* The share of the dense products' FLOPs the materialized attention's products with Wo run in
 * tiles of positions under the causal mask (gpu/mla_mat.c): Y = T Wo^T's and dT = dY Wo's tile
 * [i0, i1) over i1 N columns; with cols, dWo = dY^T T's tile [i0, i1) as N (i1 - i0) columns
 * over the rows from position i0 on. */
static double mat_tile_share(long tiles, long n, bool cols)
{
    double sum = 0;
    for (long t = 0, i0 = 0; t < tiles; t++) {
        const long i1 = tt_mat_tile_end(t, tiles, n);
        sum += (double)(i1 - i0) * (cols ? n - i0 : i1);
        i0 = i1;
    }
    return sum / ((double)n * n);
}

/* The three products' share: Y's, dT's and dWo's. */
static double mat_tiles_share(long tiles, long n)
{
    return (2 * mat_tile_share(tiles, n, false) + mat_tile_share(tiles, n, true)) / 3;
}

/* mla_mat_t's dynamic shared memory: V's rows up to N in whole chunks of 16 and its block's 16 K
 * rows, each the k-steps' ranks and 8 more (templates/mla_tc.cu's TT_SR), and each of its four
 * warps' tile of a chunk, 16 rows 24 apart; bf16. */
static long mat_t_smem(const tt_model_spec *m)
{
    const long sr = (m->rank + 15) / 16 * 16 + 8;
    return 2 * (((m->seq_len + 15) / 16 * 16 + 16) * sr + 4 * 16 * 24);
}

/* Whether the materialized strategy's backward reads dT itself (mla_tc.cu's mla_bwd_q with
 * DT_MEM, summed by mla_bwd_reduce): bf16, position: none, and its warps' shared memory fits;
 * and whether T comes from mla_mat_t (bf16, and its shared memory fits). */
static bool mat_dt_mem(const tt_spec *s)
{
    return s->train.precision == TT_PREC_BF16 && s->model.position == TT_POS_NONE &&
           tt_mla_tc_bwd_q_warp(s->model.rank, 8) <= SMEM_DYN_LIMIT;
}
static bool mat_forms_t(const tt_spec *s)
{
    return s->train.precision == TT_PREC_BF16 && mat_t_smem(&s->model) <= SMEM_DYN_LIMIT;
}

/* Whether it runs lean, both: no pass forms T's factors or masks dT, and no G or E is written. */
static bool mat_lean(const tt_spec *s) { return mat_dt_mem(s) && mat_forms_t(s); }

/* The cost model's fixed costs, fitted to the trained steps' graphs replayed at seven shapes
 * (bench/strategy-check.sh, H100, forty-eighth session: ptb, ptb at batch 120, wt103 and the
 * grid's d256 at N 32, 80 and 160 and d128-n80): a fused kernel at least 8.8 us, the serial
 * chain of its blocks at 12.5% occupancy (the fused attention took 50 us a layer at ptb's N 32,
 * where its FLOPs take 6); the materialized strategy about 8 us a layer more than mat_cost
 * (its launches at 4 us; kept there, as mat_tiles' choice between tiles was measured with it).
 * All seven were bf16: fp32 and tf32 keep 4 us a launch and no more. */
#define FUSED_KERNEL_S 8.8e-6
#define MAT_EXTRA_S 8e-6

/* The cost model's seconds a layer of the materialized strategy (mla_strategy says how) with its
 * products with Wo in that many tiles. */
static double mat_cost(const tt_spec *s, long tiles)
{
    const tt_model_spec *m = &s->model;
    const double B = s->train.batch, N = m->seq_len, D = m->d_model;
    const double R2 = m->rank * (m->position == TT_POS_KEY ? 2.0 : 1.0);
    const double es = s->train.precision == TT_PREC_BF16 ? 2 : 4, dense = 2 * B * N * N * N * D;
    const double gemm = s->train.precision == TT_PREC_BF16 ? 500e12
                        : s->train.precision == TT_PREC_TF32 ? 250e12 : 40e12;
    const double t_bytes = B * N * N * N * es, rows_bytes = tiles > 1 ? 4 * B * N * D * es : 0;
    const bool lean = mat_lean(s);
    const double passes = lean ? 5 : 8, e_bytes = lean ? 0 : 2 * B * N * N * R2 * 4;
    return 3 * mat_tiles_share(tiles, m->seq_len) * dense / gemm +
           (passes * t_bytes + e_bytes + rows_bytes) / 3e12 +
           (double)((lean ? 6 : 7) + (tiles > 1 ? 2 + 3 * (tiles - 1) : 0)) * 4e-6;
}

/* The materialized attention's tiles of positions for its products with Wo under the causal
 * mask (templates/mla_mat.cu's mla_mat_rows): kernels.attention_tiles (at most N), else the
 * cheapest by mat_cost of 1 to 8, no more than N, and at least 512 rows a tile so that cuBLAS's
 * products stay large; 1 (a product over every column) without the mask, and where the cheapest
 * saves less than a tenth of the layer's estimate. mat_cost takes the tiles' smaller products
 * at the dense ones' rate, which they do not reach: on H100s (bench/RESULTS.md, the 39th and 40th
 * sessions) lm1b's body (B 32, N 80, D 1024), where it estimates 4% less at 3 tiles, trained
 * 2% slower; d1024-n160 (B 16), 14% less at 5, 1.3% faster; d512-n160, 8% less at 4, 0.3%
 * faster (10% less by the lean estimate, so 4 tiles: 1.7% faster than one product in the
 * forty-fifth session). With dWo tiled too (the forty-fifth session, H100): lm1b's body 3
 * tiles, 1.018x one product; d1024-n160 1.048x and d512-n160 1.043x dWo whole. */
static long mat_tiles(const tt_spec *s)
{
    const tt_model_spec *m = &s->model;
    if (!m->causal) return 1;
    const long given = s->kernels.attention_tiles;
    if (given) return given < m->seq_len ? given : m->seq_len;
    long most = (long)s->train.batch * m->seq_len / 512, best = 1;
    most = most > 8 ? 8 : most < m->seq_len ? most : m->seq_len;
    const double one = mat_cost(s, 1);
    double cost = one;
    for (long t = 2; t <= most; t++) {
        const double c = mat_cost(s, t);
        if (c < cost) best = t, cost = c;
    }
    return cost < 0.9 * one ? best : 1;
}

/* The tensorized attention's strategy per shape: fused (templates/mla.cu, mla_tc.cu: T never
 * leaves the chip, and the mask skips the hidden (j, k)) or materialized (templates/mla_mat.cu:
 * T written, its products with Wo through cuBLAS, dense). A cost model of a layer's forward and
 * backward decides `kernels.attention: auto`:
 *   fused: the products with Wo under the mask (about a third of the dense FLOPs when causal)
 *     at the rate the fused kernels reach: about 98 TFLOP/s on tensor cores (the slope of the
 *     seven replayed shapes' attention time against their FLOPs, H100, forty-eighth session;
 *     wt103's 6 layers did 111 GFLOP in 1.25 ms in the forty-fourth), where the backward's
 *     mla_bwd_q is on tensor cores only for position: none and D <= 256; fp32 math elsewhere,
 *     about 3 TFLOP/s (lm1b's body, H200: 8 layers' 268 GFLOP in about 0.1 s); and its 5
 *     kernels a layer at FUSED_KERNEL_S each (bf16; 4 us otherwise);
 *   materialized: the dense products (3 of 2 B N^3 D FLOPs; under the causal mask Y's and
 *     dT's and dWo's the share of them their tiles of positions run, mat_tiles_share) at
 *     cuBLAS's rate (bf16 500, tf32 250, fp32 40 TFLOP/s), T's and dT's traffic (about 8
 *     passes of B N^3 elements, with the forward's T kept for the backward, and E's B N^2 R2
 *     fp32 twice; 5 passes and no E where it runs lean, mat_lean: T written by mla_mat_t and
 *     read by Y's product and dWo's, dT written by its product and read by mla_bwd_q; with
 *     tiles, Y's and dY's rows moved between orders, 4 passes of B N D) at 3 TB/s, and its 7
 *     more launches (6 lean; with tiles, 2 more and 3 a tile after the first) at 4 us, and
 *     at bf16 MAT_EXTRA_S (the wt103 shapes on an H100, lean: 0.229 ms estimated, 0.242 measured,
 *     bench/RESULTS.md's forty-eighth session);
 * materialized only while T fits in 4 GiB. A tuning's attention MAT (`ttgen --tune`'s whole
 * training steps of both, gpu/autotune.c) overrides the estimate under `auto` where T fits.
 * Returns 1 for materialized; why says the estimate. */
static int mla_strategy(const tt_plan *plan, const tt_spec *s, const char *dtype, char *why,
                        size_t n)
{
    const tt_model_spec *m = &s->model;
    const double B = s->train.batch, N = m->seq_len, D = m->d_model;
    const bool bf16 = !strcmp(dtype, "bf16");
    const double es = bf16 ? 2 : 4, dense = 2 * B * N * N * N * D;
    double masked = 0; /* sum over rows i of the (j, k) they see */
    for (int i = 0; i < m->seq_len; i++) masked += m->causal ? (double)(i + 1) * (i + 1) : N * N;
    const double frac = masked / (N * N * N);
    const bool tc_bwd = bf16 && m->position == TT_POS_NONE && m->d_model <= 256;
    const double fused = frac * dense * (1 / (bf16 ? 98e12 : 3e12) + 2 / (tc_bwd ? 98e12 : 3e12)) +
                         5 * (bf16 ? FUSED_KERNEL_S : 4e-6);
    const double t_bytes = B * N * N * N * es,
                 mat = mat_cost(s, mat_tiles(s)) + (bf16 ? MAT_EXTRA_S : 0);
    if (s->kernels.attention != TT_ATTN_AUTO) {
        const bool m_ = s->kernels.attention == TT_ATTN_MATERIALIZED;
        snprintf(why, n, "kernels.attention: %s (the cost model's estimates a layer: %.3g ms fused, "
                 "%.3g ms materialized)", m_ ? "materialized" : "fused", fused * 1e3, mat * 1e3);
        return m_;
    }
    const bool fits = t_bytes <= 4.0 * 1024 * 1024 * 1024;
    if (tt_tuning_has(plan->tuning, TT_STRATEGY_OP, TT_STRATEGY_KEY)) {
        const int m_ = fits && tt_tuning_get(plan->tuning, TT_STRATEGY_OP, TT_STRATEGY_KEY, 0) != 0;
        snprintf(why, n, "auto: timed (the cost model's estimates a layer: %.3g ms fused, %.3g ms "
                 "materialized)", fused * 1e3, mat * 1e3);
        return m_;
    }
    const int materialized = fits && mat < fused;
    snprintf(why, n, "auto: %.3g ms a layer %s against %.3g ms %s (cost model)%s",
             (materialized ? mat : fused) * 1e3, materialized ? "materialized" : "fused",
             (materialized ? fused : mat) * 1e3, materialized ? "fused" : "materialized",
             fits ? "" : "; T would need over 4 GiB");
    return materialized;
}

/* The materialized strategy's kernels (templates/mla_mat.cu); gpu/mla_mat.c runs them with the
 * products. Under the causal mask also mla_mat_rows, whose TILES is the number of tiles of
 * positions the products with Wo run in (mat_tiles). At bf16 T comes from mla_mat_t (stage 1 of
 * the fused forward, templates/mla_tc.cu); mla_mat_prep's A and KV then only serve the
 * backward's products, where mla_bwd_q does not read dT itself. */
static long plan_mla_bwd_q_tc(tt_plan *plan, const tt_spec *s, bool dt_mem, char *err, size_t errlen);
static int plan_mla_mat(tt_plan *plan, const tt_spec *s, const char *dtype, char *err, size_t errlen)
{
    const tt_model_spec *m = &s->model;
    const long batch = s->train.batch, n = m->seq_len, r = m->rank;
    /* bf16, position: none: the backward's dT read by mla_tc.cu's mla_bwd_q (DT_MEM) and summed
     * by mla_bwd_reduce, in place of the mask's pass over dT, G's and E's products and
     * mla_mat_grads and mla_mat_params */
    const bool dt_mem = mat_dt_mem(s);
    const char *const flags[] = {"CAUSAL", "POS_KEY", NULL};
    const char *ops[] = {"mla_mat_prep", "mla_mat_mask", "mla_mat_grads", "mla_mat_params"};
    const char *op_flags[] = {"OP_MLA_MAT_PREP", "OP_MLA_MAT_MASK", "OP_MLA_MAT_GRADS",
                              "OP_MLA_MAT_PARAMS"};
    for (int i = 0; i < 4; i++) {
        if (i == 1 && !m->causal) continue; /* nothing to mask */
        if (i >= 2 && dt_mem) continue;     /* mla_bwd_q's and mla_bwd_reduce's work */
        /* the mask and the sums: 256 threads; the row kernels: about a thread per rank */
        const long threads = i == 1 || i == 3 ? 256 : r <= 64 ? 64 : r <= 128 ? 128 : 256;
        tt_kernel *k = add_kernel(plan, ops[i], 0, dtype);
        mla_shape_consts(k, m);
        name_kernel(k, flags);
        set_const(k, "THREADS", threads);
        set_const(k, op_flags[i], 1);
        k->block[0] = (unsigned)threads;
        if (i < 3) {
            set_grid(k, (unsigned)n, (unsigned)batch, 1, "x = %ld positions, y = batch", n);
        } else {
            const long n_dp = m->position == TT_POS_KEY ? n * r : 0;
            const long big = (m->position == TT_POS_KEY ? 3 : 1) * r;
            set_grid(k, ceil_div(32 * n_dp, threads) + (unsigned)big, 1, 1,
                     "x = ceil(32 * %ld / %ld) + %ld", n_dp, threads, big);
            k->smem_bytes = 32 * 4; /* tt_block_sum's warps' sums */
        }
        static const char *const what[] = {
            "A and KV (rows of T's factors) a block per (sequence, position)",
            "zeros where the causal mask hides (j, k) from row i, a block per row",
            "dQ, dK, dV from dT KV and dT^T A; parts of dP, dg, du, dv: fixed order",
            ("dP a warp an output, dg, du, dv a block an output over the parts: fixed orders, "
             "deterministic")};
        whyf(k, "%s", what[i]);
    }
    if (mat_forms_t(s)) {
        /* T by the forward's stage 1 on tensor cores (templates/mla_tc.cu): four warps of four j */
        const long g = 4, jw = 4;
        tt_kernel *k = add_kernel(plan, "mla_mat_t", 1, dtype);
        mla_shape_consts(k, m);
        set_const(k, "G", g);
        set_const(k, "JW", jw);
        name_kernel(k, flags);
        set_const(k, "THREADS", 32 * g);
        set_const(k, "OP_MLA_MAT_T", 1);
        k->block[0] = (unsigned)(32 * g);
        k->dyn_smem = (unsigned)mat_t_smem(m);
        set_const(k, "SMEM", k->dyn_smem);
        set_grid(k, ceil_div(n, 16), (unsigned)batch, ceil_div(n, g * jw),
                 "x = ceil(%ld / 16) row tiles, y = batch, z = ceil(%ld / %ld) parts of j", n, n, g * jw);
        whyf(k, "T = A_j V^T by mma.sync, 16 rows x %ld j a block, masked in registers and written "
                "once: no KV, batched product or mask pass over T in the forward", g * jw);
    }
    if (dt_mem) {
        const long tq = plan_mla_bwd_q_tc(plan, s, true, err, errlen);
        if (tq < 0 || plan_mla_bwd_reduce(plan, s, dtype, tq) != 0) return -1;
    }
    const long tiles = mat_tiles(s);
    if (tiles > 1) {
        const long threads = 128;
        tt_kernel *k = add_kernel(plan, "mla_mat_rows", 0, dtype);
        mla_shape_consts(k, m);
        name_kernel(k, flags);
        set_const(k, "THREADS", threads);
        set_const(k, "OP_MLA_MAT_ROWS", 1);
        set_const(k, "TILES", tiles);
        k->block[0] = (unsigned)threads;
        set_grid(k, (unsigned)n, (unsigned)batch, 1, "x = %ld positions, y = batch", n);
        whyf(k, "rows between orders: Y = T Wo^T and dT = dY Wo in %ld tiles of positions, each "
                "over the columns its last row sees, and dWo = dY^T T in the same tiles as columns, "
                "each over the rows from its first position on (%.0f%% of the dense products' "
                "FLOPs; %.3g ms a layer, not %.3g: %s)", tiles,
             100 * mat_tiles_share(tiles, n),
             1e3 * mat_cost(s, tiles), 1e3 * mat_cost(s, 1),
             s->kernels.attention_tiles ? "kernels.attention_tiles" : "cost model");
    }
    return 0;
}

/* Transformer-XL's attention probabilities (templates/txl_softmax.cu): the relative shift, the
 * mask, the softmax and dropatt between its products, forward and backward; a warp per row of
 * keys, which it holds in registers: as many as training's or evaluation's memory and segment
 * need. */
static int plan_txl_softmax(tt_plan *plan, const tt_spec *s, const char *dtype, char *err,
                            size_t errlen)
{
    const tt_model_spec *m = &s->model;
    const long train_k = (long)m->mem_len + m->seq_len, eval_k = (long)s->eval.mem_len + s->eval.tgt_len;
    const long kk = train_k > eval_k ? train_k : eval_k, kmax = (kk + 31) / 32 * 32;
    const long rows = (long)s->train.batch * m->n_head * m->seq_len;
    const char *const flags[] = {NULL};
    static const char *const ops[2][2] = {{"txl_softmax_fwd", "OP_TXL_SOFTMAX_FWD"},
                                          {"txl_softmax_bwd", "OP_TXL_SOFTMAX_BWD"}};
    for (int b = 0; b < 2; b++) {
        const long threads = block_threads(plan, ops[b][0], 128, err, errlen);
        if (threads < 0) return -1;
        tt_kernel *k = add_kernel(plan, ops[b][0], 0, dtype);
        set_const(k, "KMAX", kmax);
        name_kernel(k, flags);
        set_const(k, "THREADS", threads);
        set_const(k, ops[b][1], 1);
        k->block[0] = (unsigned)threads;
        set_grid(k, ceil_div(rows, threads / 32), 1, 1, "x = ceil(batch * heads * rows / %ld)",
                 threads / 32);
        whyf(k, b ? "warp per row: dropatt and softmax backward, the relative shift undone into "
                    "dAC and dBD (no atomics: each element one writer)"
                  : "warp per row of up to %ld keys in registers: relative shift, mask over memory "
                    "and segment, softmax, dropatt, in one pass", kmax);
    }
    return 0;
}

/* Transformer-XL's attention fused, flash-style (templates/txl_flash.cu): bf16 on tensor cores.
 * The unfused strategy (plan_txl_softmax between cuBLAS's products) writes and reads the
 * [heads, batch, n, klen] scores AC and BD in fp32, the probabilities twice in bf16 and their
 * gradients again in the backward, and runs each product with an inner dimension of only d_head
 * (txl-wt103-base: 41, padded to 48), where cuBLAS reaches a few percent of the card; the fused
 * kernels keep the scores in registers and shared memory and write only P'V, a row's
 * log-sum-exp, the gradients, and in the backward dS (bf16, from txl_attn_bwd_kv to
 * txl_attn_bwd_q, so that the backward computes the scores once) and dBD (for the one large
 * product dR = dBD^T (q + v)). Blocks of 64 queries (or keys) of one (sequence, head), 4 warps.
 * Their accumulators grow with the head's width: txl_attn_bwd_kv holds 212 registers at d_head
 * 41 (padded 48) and 236 at 64; wider heads keep the unfused strategy, whose products are no
 * longer of a width cuBLAS runs poorly (TXL_FUSED_MAX_DK; at 80 the kernel holds 255 registers
 * without spilling, but the fused kernels have been checked and timed on a GPU only up to 64). */
#define TXL_FUSED_MAX_DK 64

/* The fused kernels' k-steps over a head: d_head padded to whole 16-byte groups (DP), then to 16. */
static long txl_dk(int d_head) { return (tt_row_pitch(d_head) + 15) / 16 * 16; }

bool tt_txl_fuses_at(const tt_model_spec *m, tt_precision p)
{
    return m->kind == TT_KIND_TXL && p == TT_PREC_BF16 && txl_dk(m->d_head) <= TXL_FUSED_MAX_DK;
}

bool tt_txl_fuses(const tt_spec *s) { return tt_txl_fuses_at(&s->model, s->train.precision); }

static void plan_txl_flash(tt_plan *plan, const tt_spec *s, const char *dtype)
{
    const tt_model_spec *m = &s->model;
    const long dp = tt_row_pitch(m->d_head), dk = txl_dk(m->d_head), sp = dk + 8;
    const long b = s->train.batch, n = m->seq_len, klen = (long)m->mem_len + n;
    /* shared memory (bytes), as the template lays it out: the bf16 tiles of pitch sp, then fp32 */
    const long tiles_f = (2 * 64 + 128) * sp * 2, bd = 4 * 16 * (80 + 4) * 4, db = 4 * 16 * (80 + 8) * 2;
    const long tiles_kv = (3 * 64 + 128) * sp * 2, x = 128 * (64 + 4) * 4 + 2 * 64 * 4, dst = 64 * (64 + 8) * 2;
    const long smem[] = {tiles_f + bd, tiles_kv + x + dst, (64 + 128) * sp * 2 + db}; /* in the order of ops */
    static const struct {
        const char *op, *define, *why;
        bool per_key;
    } ops[] = {
        {"txl_attn_fwd", "OP_TXL_ATTN_FWD", "scores (AC + BD skewed through shared memory), mask, "
         "online softmax, dropatt and P'V in one pass; writes P'V and each row's log-sum-exp", false},
        {"txl_attn_bwd_kv", "OP_TXL_ATTN_BWD_KV", "a block per 64 keys over the queries that see "
         "them: scores and P again from the log-sum-exp, D, dS; dV = P'^T dO, dK = dS^T (q + u), "
         "into qkv's and the memory's rows; BD's terms from one shared 128 x 64 product; dS "
         "written (bf16) for txl_attn_bwd_q, so the backward computes the scores once", true},
        {"txl_attn_bwd_q", "OP_TXL_ATTN_BWD_Q", "dq = dS K + dBD r from the dS written, in "
         "registers, into qkv's rows, with its column sums for du, dv; dBD written for dR", false},
    };
    const char *const flags[] = {NULL};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        tt_kernel *k = add_kernel(plan, ops[i].op, 1, dtype);
        set_const(k, "DH", m->d_head);
        set_const(k, "DP", dp);
        set_const(k, "DK", dk);
        name_kernel(k, flags);
        set_const(k, ops[i].define, 1);
        k->dyn_smem = (unsigned)smem[i];
        k->block[0] = 128;
        set_grid(k, ceil_div(ops[i].per_key ? klen : n, 64), (unsigned)b, (unsigned)m->n_head,
                 "x = ceil(%s / 64), y = batch, z = heads", ops[i].per_key ? "klen" : "n");
        snprintf(k->strategy, sizeof k->strategy, "fused: bf16 on tensor cores, no score written");
        whyf(k, "%s", ops[i].why);
    }
    /* the biases' gradients from txl_attn_bwd_q's partial sums */
    tt_kernel *k = add_kernel(plan, "txl_uv_sum", 1, dtype);
    set_const(k, "H", m->n_head);
    set_const(k, "DH", m->d_head);
    name_kernel(k, flags);
    set_const(k, "THREADS", 256);
    set_const(k, "OP_TXL_UV_SUM", 1);
    k->block[0] = 256;
    set_grid(k, ceil_div(2L * m->n_head * m->d_head, 256 / 32), 1, 1, "x = ceil(2 H DH / 8)");
    snprintf(k->strategy, sizeof k->strategy, "fused: bf16 on tensor cores, no score written");
    whyf(k, "warp per bias element, lanes over the (sequence, query tile) partials, a fixed "
            "butterfly: deterministic");
}

/* The rest of Transformer-XL's attention between its products (templates/txl.cu): position
 * embeddings with dropout, the heads split out of the projections (d_head padded to a multiple
 * of 8 with zeros, so that the batched products' rows are 16-byte aligned) and merged back, and
 * their gradients. Grid-stride kernels over what each moves. */
static void plan_txl(tt_plan *plan, const tt_spec *s, const char *dtype)
{
    const tt_model_spec *m = &s->model;
    const long dp = tt_row_pitch(m->d_head);
    /* the strategies an op serves: the fused attention's backward writes the projections'
     * gradients and du, dv itself, and sums its own split dR */
    enum { BOTH, UNFUSED, FUSED };
    static const struct {
        const char *op, *define, *why;
        bool heads;    /* shaped by the heads: H, DH, DP */
        bool per_bias; /* a warp per element of u and v, else grid-stride over what it moves */
        int path;
    } ops[] = {
        {"txl_pe", "OP_TXL_PE", "pos_emb with its dropout drawn in place, the sinusoids read from a table",
         false, false, BOTH},
        {"txl_heads_qkv", "OP_TXL_HEADS_QKV",
         "q + u, q + v, k, v of memory and segment rows into padded head-major tiles: one pass", true,
         false, BOTH},
        {"txl_heads", "OP_TXL_HEADS", "rows of heads side by side into padded head-major tiles", true,
         false, BOTH},
        {"txl_unheads", "OP_TXL_UNHEADS", "padded head-major tiles back into rows of heads side by side",
         true, false, BOTH},
        {"txl_heads_bwd", "OP_TXL_HEADS_BWD",
         "d qkv of the segment (dq = the two biased queries' sum) and d kv of the memory: one pass", true,
         false, UNFUSED},
        {"txl_uv_bwd", "OP_TXL_UV_BWD",
         "warp per bias element, lanes over rows, a fixed butterfly: deterministic", true, true, UNFUSED},
        {"txl_dr_sum", "OP_TXL_DR_SUM",
         "dR's split products added in a fixed order into r_net's gradient rows: one pass", true,
         false, FUSED},
    };
    const int path = tt_txl_fuses(s) ? FUSED : UNFUSED;
    /* what each grid-stride kernel moves at the training shapes with a full memory, in the
     * order of ops (its launcher's grid: one thread an element, up to 2048 blocks) */
    const long h = m->n_head, hd = (long)m->n_head * m->d_head, b = s->train.batch;
    const long n = m->seq_len, klen = (long)m->mem_len + n;
    const long moved[] = {klen * m->d_model, h * b * klen * dp, h * b * n * dp, b * n * hd,
                          b * (3 * n + 2L * m->mem_len) * hd, 0, klen * hd};
    const char *const flags[] = {NULL};
    for (size_t i = 0; i < sizeof ops / sizeof *ops; i++) {
        if (ops[i].path != BOTH && ops[i].path != path) continue;
        const long threads = pick(plan, ops[i].op, "THREADS", 256);
        tt_kernel *k = add_kernel(plan, ops[i].op, 0, dtype);
        if (ops[i].heads) {
            set_const(k, "H", m->n_head);
            set_const(k, "DH", m->d_head);
            set_const(k, "DP", dp);
        }
        name_kernel(k, flags);
        set_const(k, "THREADS", threads);
        set_const(k, ops[i].define, 1);
        k->block[0] = (unsigned)threads;
        const long blocks = ceil_div(moved[i], threads);
        set_grid(k, ops[i].per_bias ? ceil_div(2 * hd, threads / 32)
                                    : (unsigned)(blocks < 2048 ? blocks : 2048), 1, 1, "%s",
                 ops[i].per_bias ? "x = ceil(2 H DH / warps a block)"
                                 : "x = min(ceil(elements / 256), 2048), grid-stride");
        whyf(k, "%s", ops[i].why);
    }
}

int tt_plan_build(const tt_spec *spec, const char *arch, tt_plan *plan, char *err, size_t errlen)
{
    return tt_plan_build_tuned(spec, arch, NULL, plan, err, errlen);
}

int tt_plan_build_tuned(const tt_spec *spec, const char *arch, const tt_tuning *t, tt_plan *plan,
                        char *err, size_t errlen)
{
    memset(plan, 0, sizeof *plan);
    snprintf(plan->arch, sizeof plan->arch, "%s", arch);
    plan->tuning = t;
    const char *dtype = spec->train.precision == TT_PREC_BF16 ? "bf16" : "f32";
    if (plan_layernorm(plan, spec, dtype, err, errlen) != 0) {
        tt_plan_free(plan);
        return -1;
    }
    if (spec->model.kind == TT_KIND_TENSORIZED) {
        char why[176];
        const int first = plan->n;
        int mat = mla_strategy(plan, spec, dtype, why, sizeof why);
        int rc = mat ? plan_mla_mat(plan, spec, dtype, err, errlen)
                     : plan_mla(plan, spec, dtype, err, errlen) != 0 ||
                               plan_mla_bwd(plan, spec, dtype, err, errlen) != 0 ? -1 : 0;
        const bool fused_tuned = tuned(plan, "mla_fwd") || tuned(plan, "mla_bwd_wo") ||
                                 tuned(plan, "mla_bwd_q") || tuned(plan, "mla_bwd_reduce");
        if (rc != 0 && spec->kernels.attention == TT_ATTN_AUTO && !fused_tuned) {
            /* the fused kernels do not fit these shapes (e.g. rank 128's tiles in shared
             * memory): the materialized ones do (a tuning's value that does not fit stays an
             * error: the tuner skips that variant) */
            snprintf(why, sizeof why, "auto: the fused kernels do not fit (%.130s)", err);
            plan->n = first;
            mat = 1;
            rc = plan_mla_mat(plan, spec, dtype, err, errlen);
        }
        for (int i = first; rc == 0 && i < plan->n; i++)
            snprintf(plan->kernels[i].strategy, sizeof plan->kernels[i].strategy, "%s: %.170s",
                     mat ? "materialized" : "fused", why);
        if (rc != 0 || plan_core(plan, spec, err, errlen) != 0) {
            tt_plan_free(plan);
            return -1;
        }
    }
    if (spec->model.kind == TT_KIND_TXL) {
        const int first = plan->n;
        if (tt_txl_fuses(spec)) {
            plan_txl_flash(plan, spec, dtype);
        } else if (plan_txl_softmax(plan, spec, dtype, err, errlen) != 0) {
            tt_plan_free(plan);
            return -1;
        } else {
            for (int i = first; i < plan->n; i++)
                snprintf(plan->kernels[i].strategy, sizeof plan->kernels[i].strategy,
                         "unfused: cuBLAS's products write the scores (%s)",
                         strcmp(dtype, "bf16") ? "fp32: the fused kernels are bf16's"
                                               : "d_head padded past 64: the fused kernels take up to 64");
        }
        plan_txl(plan, spec, dtype);
    }
    /* what both kinds share: the embedding, the layers' residual LayerNorms and FFN, the
     * adaptive softmax and the loss, the optimizer */
    plan_embedding(plan, spec, dtype);
    if (plan_residual_ln(plan, spec, dtype, err, errlen) != 0) {
        tt_plan_free(plan);
        return -1;
    }
    if (plan_ffn_act(plan, spec, dtype, err, errlen) != 0 ||
        plan_xent(plan, spec, dtype, err, errlen) != 0) {
        tt_plan_free(plan);
        return -1;
    }
    plan_adaptive(plan, spec, dtype);
    if (plan_adam(plan, dtype, err, errlen) != 0) {
        tt_plan_free(plan);
        return -1;
    }
    if (strcmp(dtype, "bf16") == 0) plan_cast(plan, dtype);
    plan_copy_rows(plan, dtype);
    plan->tuning = NULL;
    /* the shared memory each kernel declares, which its template static_asserts (the attention's
     * families set theirs with their geometry) */
    for (int i = 0; i < plan->n; i++) {
        tt_kernel *k = &plan->kernels[i];
        if (tt_kernel_const(k, "SMEM", -1) < 0) set_const(k, "SMEM", k->dyn_smem ? k->dyn_smem : k->smem_bytes);
    }
    /* what a tuning may have set: every block whole warps, at most 1024 threads */
    for (int i = 0; t && i < plan->n; i++) {
        const tt_kernel *k = &plan->kernels[i];
        const unsigned threads = k->block[0] * k->block[1] * k->block[2];
        const long minb = tt_kernel_const(k, "MINB", 0);
        if (minb < 0 || minb * threads > 2048) {
            tt_errf(err, errlen, "%s: MINB=%ld blocks of %u threads: up to the 2048 threads an SM "
                    "holds", k->op, minb, threads);
            tt_plan_free(plan);
            return -1;
        }
        if (threads > 1024 || threads % 32) {
            tt_errf(err, errlen, "%s: blocks of %u threads: whole warps, at most 1024", k->op,
                    threads);
            tt_plan_free(plan);
            return -1;
        }
    }
    return 0;
}

int tt_plan_profile_marks(const char *arch, tt_plan *plan)
{
    memset(plan, 0, sizeof *plan);
    snprintf(plan->arch, sizeof plan->arch, "%s", arch);
    tt_kernel *k = threads_kernel(plan, "prof_mark", "OP_PROF_MARK", 32, "f32");
    set_const(k, "SMEM", 0);
    set_grid(k, 1, 1, 1, "one block");
    whyf(k, "a clock reading between two parts of the profiled step; lets the next kernel launch "
         "before it waits, where an event node would hold that launch back");
    return 0;
}

int tt_plan_materialized(const tt_plan *plan)
{
    for (int i = 0; i < plan->n; i++)
        if (!strcmp(plan->kernels[i].op, "mla_mat_prep")) return 1;
    return 0;
}

void tt_plan_free(tt_plan *plan)
{
    free(plan->kernels);
    memset(plan, 0, sizeof *plan);
}

void tt_plan_write(const tt_plan *plan, FILE *f)
{
    fprintf(f, "# ttgen plan: %d kernel instances for %s\n", plan->n, plan->arch);
    for (int i = 0; i < plan->n; i++) {
        const tt_kernel *k = &plan->kernels[i];
        fprintf(f, "\n%s\n  template: templates/%s\n  dtype: %s\n  constants:", k->name,
                k->template_file, k->dtype);
        for (int c = 0; c < k->n_consts; c++)
            fprintf(f, " %s=%ld", k->consts[c].key, k->consts[c].value);
        fprintf(f, "\n  block: %u x %u x %u\n  grid: %u x %u x %u (%s)\n  static smem: %u bytes\n",
                k->block[0], k->block[1], k->block[2], k->grid[0], k->grid[1], k->grid[2],
                k->grid_rule, k->smem_bytes);
        if (k->dyn_smem) fprintf(f, "  dynamic smem: %u bytes\n", k->dyn_smem);
        if (k->arch[0]) fprintf(f, "  arch: %s\n", k->arch);
        fprintf(f, "  why: %s\n", k->why);
    }
}
