/* Launchers (see launch.h). */
#include "launch.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "mla_geom.cuh"
#include "optim.h"
#include "util.h"

static unsigned ceil_div(long a, long b) { return (unsigned)((a + b - 1) / b); }

/* Whether the plan has a kernel of op: which strategy it chose. */
static bool plan_has(const tt_gpu_program *p, const char *op)
{
    for (int i = 0; i < p->plan.n; i++)
        if (!strcmp(p->plan.kernels[i].op, op)) return true;
    return false;
}

static long need(const tt_gpu_kernel *k, const char *key)
{
    const long v = tt_kernel_const(k->k, key, -1);
    if (v < 0) tt_panic(__FILE__, __LINE__, "%s has no constant %s", k->k->name, key);
    return v;
}

/* The grid the plan chose, for kernels whose grid does not depend on the batch or a count. */
static dim3 plan_grid(const tt_gpu_kernel *k)
{
    return (dim3){k->k->grid[0], k->k->grid[1], k->k->grid[2]};
}

/* The kernel was specialized for `baked`; running it on other shapes would be silently wrong. */
static void expect(const tt_gpu_kernel *k, const char *key, long given)
{
    const long baked = need(k, key);
    if (baked != given)
        tt_panic(__FILE__, __LINE__, "%s is specialized for %s = %ld, called with %ld", k->k->name,
                 key, baked, given);
}

/* Rows ld elements apart, ld >= d: so that every row starts as aligned as the first, a multiple
 * of VEC where the kernel moves VEC values at a time (vec 0: it does not). */
static void expect_pitch(const tt_gpu_kernel *k, int d, int ld, bool vec)
{
    if (ld < d || (vec && ld % need(k, "VEC") != 0))
        tt_panic(__FILE__, __LINE__, "%s: rows %d apart cannot hold %d values%s", k->k->name, ld, d,
                 vec ? " in whole vectors" : "");
}

/* Kernels that move VEC values at a time need their arrays aligned to the whole vector: of fp32
 * values (es 4) or of the storage type (es 0). */
static void expect_aligned(const tt_gpu_kernel *k, const void *a, int es)
{
    if (es == 0) es = strcmp(k->k->dtype, "bf16") == 0 ? 2 : 4;
    const long bytes = es * need(k, "VEC");
    if ((uintptr_t)a % (uintptr_t)bytes != 0)
        tt_panic(__FILE__, __LINE__, "%s needs its arrays aligned to %ld bytes, got %p",
                 k->k->name, bytes, a);
}

void tt_layernorm_fwd(const tt_gpu_program *p, cudaStream_t s, void *y, float *mean, float *rstd,
                      const void *x, const float *gamma, const float *beta, int rows, int d)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "layernorm_fwd");
    expect(k, "D", d);
    void *args[] = {&y, &mean, &rstd, &x, &gamma, &beta, &rows};
    tt_gpu_launch(k, (dim3){ceil_div(rows, need(k, "ROWS")), 1, 1}, args, s);
}

int tt_layernorm_bwd_parts(const tt_gpu_program *p, int rows)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "layernorm_bwd");
    const unsigned blocks = ceil_div(rows, need(k, "ROWS"));
    return (int)(blocks < TT_LN_BWD_MAX_BLOCKS ? blocks : TT_LN_BWD_MAX_BLOCKS);
}

void tt_colsums(const tt_gpu_program *p, cudaStream_t st, const char *op, const tt_colsum_jobs *j,
                int width)
{
    const tt_gpu_kernel *c = tt_gpu_kernel_of(p, op);
    expect(c, "D", width);
    TT_ASSERT(j->sets >= 1 && j->sets <= need(c, "SETS") && j->jobs >= 1 && j->jobs <= 65535);
    for (int s = 0; s < j->sets; s++) TT_ASSERT(j->out[s]);
    float *out[3] = {j->out[0], j->out[1], j->out[2]};
    const float *in = j->in;
    int parts = j->parts;
    long long in_stride = j->in_stride, out_stride = j->out_stride;
    void *cargs[] = {&out[0], &out[1], &out[2], &in, &parts, &in_stride, &out_stride};
    tt_gpu_launch(c, (dim3){ceil_div(width, 32), (unsigned)j->sets, (unsigned)j->jobs}, cargs, st);
}

/* colsum over the sets of LayerNorm's partials: dgamma, dbeta, and dbias unless NULL. */
static void colsum_sets(const tt_gpu_program *p, cudaStream_t st, float *dgamma, float *dbeta,
                        float *dbias, float *part, int parts, int d)
{
    const tt_colsum_jobs j = {.in = part, .out = {dgamma, dbeta, dbias}, .jobs = 1,
                              .parts = parts, .sets = dbias ? 3 : 2};
    tt_colsums(p, st, "colsum", &j, d);
}

void tt_layernorm_bwd(const tt_gpu_program *p, cudaStream_t s, void *dx, float *dgamma,
                      float *dbeta, float *part, const void *dy, const void *x, const float *mean,
                      const float *rstd, const float *gamma, int rows, int d)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "layernorm_bwd");
    expect(k, "D", d);
    int parts = tt_layernorm_bwd_parts(p, rows);
    void *args[] = {&dx, &part, &dy, &x, &mean, &rstd, &gamma, &rows};
    tt_gpu_launch(k, (dim3){(unsigned)parts, 1, 1}, args, s);
    colsum_sets(p, s, dgamma, dbeta, NULL, part, parts, d);
}

void tt_residual_ln_fwd(const tt_gpu_program *p, cudaStream_t st, void *out, void *sum, float *mean,
                        float *rstd, const void *x, const void *y, const float *gamma,
                        const float *beta, int rows, int d, int ld, tt_dropout drop)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "residual_ln_fwd");
    expect(k, "D", d);
    expect_pitch(k, d, ld, false);
    const float *ypart = NULL;
    int batch = 0;
    void *args[] = {&out, &sum, &mean, &rstd, &x, &y, &gamma, &beta, &rows, &ld,
                    &drop.p, &drop.seed, &drop.step, &drop.site, &drop.first, &ypart, &batch};
    tt_gpu_launch(k, (dim3){ceil_div(rows, need(k, "ROWS")), 1, 1}, args, st);
}

bool tt_mla_ln_sums(const tt_gpu_program *p) { return plan_has(p, "mla_residual_ln_fwd"); }

void tt_mla_residual_ln_fwd(const tt_gpu_program *p, cudaStream_t st, void *out, void *sum,
                            float *mean, float *rstd, const void *x, const float *ypart, int batch,
                            const float *gamma, const float *beta, int rows, int d, int ld,
                            tt_dropout drop)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "mla_residual_ln_fwd");
    expect(k, "D", d);
    expect_pitch(k, d, ld, false);
    TT_ASSERT(rows <= batch * need(k, "N"));
    const void *y = NULL;
    void *args[] = {&out, &sum, &mean, &rstd, &x, &y, &gamma, &beta, &rows, &ld,
                    &drop.p, &drop.seed, &drop.step, &drop.site, &drop.first, &ypart, &batch};
    tt_gpu_launch(k, (dim3){ceil_div(rows, need(k, "ROWS")), 1, 1}, args, st);
}

int tt_residual_ln_bwd_parts(const tt_gpu_program *p, cudaStream_t st, void *dx, void *dy,
                             float *part, const void *dout, const void *sum, const float *mean,
                             const float *rstd, const float *gamma, int rows, int d, int ld,
                             tt_dropout drop)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "residual_ln_bwd");
    expect(k, "D", d);
    expect_pitch(k, d, ld, false);
    /* the same partials as layernorm_bwd's, so that its scratch size and colsum serve */
    expect(k, "ROWS", need(tt_gpu_kernel_of(p, "layernorm_bwd"), "ROWS"));
    int parts = tt_layernorm_bwd_parts(p, rows);
    void *args[] = {&dx, &dy, &part, &dout, &sum, &mean, &rstd, &gamma, &rows, &ld,
                    &drop.p, &drop.seed, &drop.step, &drop.site, &drop.first};
    tt_gpu_launch(k, (dim3){(unsigned)parts, 1, 1}, args, st);
    return parts;
}

void tt_residual_ln_bwd(const tt_gpu_program *p, cudaStream_t st, void *dx, void *dy, float *dgamma,
                        float *dbeta, float *dbias, float *part, const void *dout, const void *sum,
                        const float *mean, const float *rstd, const float *gamma, int rows, int d,
                        int ld, tt_dropout drop)
{
    const int parts = tt_residual_ln_bwd_parts(p, st, dx, dy, part, dout, sum, mean, rstd, gamma,
                                               rows, d, ld, drop);
    colsum_sets(p, st, dgamma, dbeta, dbias, part, parts, d);
}

/* A kernel over `count` rows of `width` features, a thread per VEC of them (plan.c's row_kernel). */
static void launch_rows(const tt_gpu_kernel *k, long count, int width, void **args, cudaStream_t st)
{
    if (count == 0) return;
    const long vectors = count * (width / need(k, "VEC"));
    tt_gpu_launch(k, (dim3){ceil_div(vectors, need(k, "THREADS")), 1, 1}, args, st);
}

/* The instance of op whose constant key is value (one per adaptive cluster width). */
static const tt_gpu_kernel *kernel_with(const tt_gpu_program *p, const char *op, const char *key,
                                        long value)
{
    for (int i = 0; i < p->plan.n; i++)
        if (!strcmp(p->kernels[i].k->op, op) && tt_kernel_const(p->kernels[i].k, key, -1) == value)
            return &p->kernels[i];
    tt_panic(__FILE__, __LINE__, "the plan has no %s kernel for %s = %ld", op, key, value);
}

void tt_embedding_fwd(const tt_gpu_program *p, cudaStream_t st, void *x0, const float *emb,
                      const int32_t *tokens, int rows, int d, int ld, int vocab, tt_dropout drop)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "embedding_fwd");
    expect(k, "D", d);
    expect_pitch(k, d, ld, true);
    expect_aligned(k, emb, 4);
    expect_aligned(k, x0, 0);
    void *args[] = {&x0, &emb, &tokens, &rows, &ld, &vocab, &drop.p, &drop.seed, &drop.step,
                    &drop.site, &drop.first};
    launch_rows(k, rows, d, args, st);
}

size_t tt_embedding_keys(const tt_gpu_program *p)
{
    return (size_t)need(tt_gpu_kernel_of(p, "embedding_sort"), "P");
}

void tt_embedding_sort(const tt_gpu_program *p, cudaStream_t st, uint64_t *keys,
                       const int32_t *tokens, int rows)
{
    const tt_gpu_kernel *o = tt_gpu_kernel_of(p, "embedding_sort");
    if (rows > need(o, "P"))
        tt_panic(__FILE__, __LINE__, "%s sorts at most %ld rows, called with %d", o->k->name,
                 need(o, "P"), rows);
    if (rows == 0) return;
    void *oargs[] = {&keys, &tokens, &rows};
    tt_gpu_launch(o, (dim3){1, 1, 1}, oargs, st);
}

size_t tt_embedding_part_floats(const tt_gpu_program *p)
{
    long w = 0;
    for (int i = 0; i < p->plan.n; i++)
        if (!strcmp(p->kernels[i].k->op, "embedding_bwd_sum") && need(&p->kernels[i], "W") > w)
            w = need(&p->kernels[i], "W");
    return tt_embedding_keys(p) * (size_t)w;
}

/* A table's sum of the span sums sorted_part wrote (templates/embedding.cu). */
static void sorted_sum(const tt_gpu_program *p, cudaStream_t st, const tt_gpu_kernel *part_k,
                       float *table, const float *part, const uint64_t *keys, int rows, long long lo,
                       long long vc, int w)
{
    const tt_gpu_kernel *k = kernel_with(p, "embedding_bwd_sum", "W", w);
    expect(k, "SPAN", need(part_k, "SPAN"));
    expect_aligned(k, table, 4);
    void *args[] = {&table, &part, &keys, &rows, &lo, &vc};
    tt_gpu_launch(k, (dim3){(unsigned)rows, 1, 1}, args, st);
}

void tt_embedding_bwd(const tt_gpu_program *p, cudaStream_t st, float *demb,
                      const uint64_t *keys, float *part, const void *dx0, int rows, int d, int ld,
                      int vocab, tt_dropout drop)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "embedding_bwd");
    expect(k, "D", d);
    expect_pitch(k, d, ld, true);
    expect_aligned(k, demb, 4);
    expect_aligned(k, dx0, 0);
    if (rows > need(tt_gpu_kernel_of(p, "embedding_sort"), "P"))
        tt_panic(__FILE__, __LINE__, "%s: %d rows, more than the sorted keys", k->k->name, rows);
    if (rows == 0) return;
    void *args[] = {&part, &dx0, &keys, &rows, &ld, &vocab, &drop.p, &drop.seed, &drop.step,
                    &drop.site, &drop.first};
    tt_gpu_launch(k, (dim3){ceil_div(rows, need(k, "SPAN")), 1, 1}, args, st);
    sorted_sum(p, st, k, demb, part, keys, rows, 0, vocab, d);
}

void tt_adaptive_emb_gather(const tt_gpu_program *p, cudaStream_t st, void *e, const float *emb,
                            const int32_t *tokens, const int32_t *idx, int count, long lo, long vc,
                            int dim)
{
    const tt_gpu_kernel *k = kernel_with(p, "adaptive_emb_gather", "DE", dim);
    expect_aligned(k, e, 0);
    expect_aligned(k, emb, 4);
    long long lo_ = lo, vc_ = vc;
    void *args[] = {&e, &emb, &tokens, &idx, &count, &lo_, &vc_};
    launch_rows(k, count, dim, args, st);
}

void tt_adaptive_emb_scatter(const tt_gpu_program *p, cudaStream_t st, void *x0, const float *y,
                             const int32_t *idx, int count, int d, int ld, tt_dropout drop)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "adaptive_emb_scatter");
    expect(k, "D", d);
    expect_pitch(k, d, ld, true);
    expect_aligned(k, x0, 0);
    expect_aligned(k, y, 4);
    void *args[] = {&x0, &y, &idx, &count, &ld, &drop.p, &drop.seed, &drop.step, &drop.site, &drop.first};
    launch_rows(k, count, d, args, st);
}

void tt_adaptive_emb_grad(const tt_gpu_program *p, cudaStream_t st, void *dy, const void *dx0,
                          const int32_t *idx, int count, int d, int ld, tt_dropout drop)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "adaptive_emb_grad");
    expect(k, "D", d);
    expect_pitch(k, d, ld, true);
    expect_aligned(k, dy, 0);
    expect_aligned(k, dx0, 0);
    void *args[] = {&dy, &dx0, &idx, &count, &ld, &drop.p, &drop.seed, &drop.step, &drop.site, &drop.first};
    launch_rows(k, count, d, args, st);
}

void tt_adaptive_emb_bwd(const tt_gpu_program *p, cudaStream_t st, float *demb,
                         const uint64_t *keys, float *part, const void *de, const int32_t *pos,
                         int rows, long lo, long vc, int dim)
{
    const tt_gpu_kernel *k = kernel_with(p, "adaptive_emb_bwd", "DE", dim);
    expect_aligned(k, demb, 4);
    expect_aligned(k, de, 0);
    if (rows > need(tt_gpu_kernel_of(p, "embedding_sort"), "P"))
        tt_panic(__FILE__, __LINE__, "%s: %d rows, more than the sorted keys", k->k->name, rows);
    if (rows == 0) return;
    long long lo_ = lo, vc_ = vc;
    void *args[] = {&part, &de, &keys, &pos, &rows, &lo_, &vc_};
    tt_gpu_launch(k, (dim3){ceil_div(rows, need(k, "SPAN")), 1, 1}, args, st);
    sorted_sum(p, st, k, demb, part, keys, rows, lo_, vc_, dim);
}

void tt_adaptive_gather(const tt_gpu_program *p, cudaStream_t st, void *xc, const void *x,
                        const int32_t *idx, int count, int d, int ld)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "adaptive_gather");
    expect(k, "D", d);
    expect_pitch(k, d, ld, true);
    expect_aligned(k, xc, 0);
    expect_aligned(k, x, 0);
    void *args[] = {&xc, &x, &idx, &count, &ld};
    launch_rows(k, count, d, args, st);
}

void tt_adaptive_scatter_add(const tt_gpu_program *p, cudaStream_t st, void *dx, const void *dxc,
                             const int32_t *idx, int count, int d, int ld)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "adaptive_scatter_add");
    expect(k, "D", d);
    expect_pitch(k, d, ld, true);
    expect_aligned(k, dx, 0);
    expect_aligned(k, dxc, 0);
    void *args[] = {&dx, &dxc, &idx, &count, &ld};
    launch_rows(k, count, d, args, st);
}

bool tt_cluster_cols(const tt_gpu_program *p) { return plan_has(p, "cluster_cols_fwd"); }

void tt_cluster_cols_fwd(const tt_gpu_program *p, cudaStream_t st, void *y, int ldy, const void *x,
                         int ldx, const void *w, int ldw, const void *b, int rows, int nc, int d)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "cluster_cols_fwd");
    expect(k, "NC", nc);
    expect(k, "D", d);
    if (rows == 0) return;
    void *args[] = {&y, &ldy, &x, &ldx, &w, &ldw, &b, &rows};
    tt_gpu_launch(k, (dim3){ceil_div(rows, need(k, "THREADS") / 32 * 4), 1, 1}, args, st);
}

size_t tt_cluster_cols_part_floats(const tt_gpu_program *p)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "cluster_cols_bwd");
    return (size_t)need(k, "PARTS") * (size_t)(need(k, "NC") * need(k, "D") + need(k, "NC"));
}

void tt_cluster_cols_bwd(const tt_gpu_program *p, cudaStream_t st, void *dx, int ldx, float *dw,
                         float *db, float *part, const void *dy, int ldy, const void *x,
                         const void *w, int ldw, int rows, int nc, int d)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "cluster_cols_bwd"), *sum = tt_gpu_kernel_of(p, "cluster_cols_sum");
    const tt_gpu_kernel *both[] = {k, sum};
    for (int i = 0; i < 2; i++) {
        expect(both[i], "NC", nc);
        expect(both[i], "D", d);
    }
    expect(sum, "PARTS", need(k, "PARTS"));
    /* every partial written (a run past the rows: zeros), then their sums */
    void *args[] = {&dx, &ldx, &part, &dy, &ldy, &x, &w, &ldw, &rows};
    tt_gpu_launch(k, (dim3){(unsigned)need(k, "PARTS"), 1, 1}, args, st);
    void *sargs[] = {&dw, &db, &part};
    tt_gpu_launch(sum, plan_grid(sum), sargs, st);
}

void tt_ffn_act_fwd(const tt_gpu_program *p, cudaStream_t st, void *hd, const void *z,
                    const float *b1, int rows, int f, int ld, tt_dropout drop)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "ffn_act_fwd");
    expect(k, "F", f);
    expect(k, "LD", ld);
    expect_aligned(k, hd, 0);
    expect_aligned(k, z, 0);
    void *args[] = {&hd, &z, &b1, &rows, &drop.p, &drop.seed, &drop.step, &drop.site, &drop.first};
    if (rows == 0) return;
    const long vectors = (long)rows * (ld / need(k, "VEC")); /* the padding's included */
    tt_gpu_launch(k, (dim3){ceil_div(vectors, need(k, "THREADS") * need(k, "UNROLL")), 1, 1}, args,
                  st);
}

size_t tt_ffn_act_bwd_part_floats(const tt_gpu_program *p)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "ffn_act_bwd");
    return (size_t)need(k, "PARTS") * (size_t)need(k, "F");
}

int tt_ffn_act_bwd_parts(const tt_gpu_program *p, cudaStream_t st, void *dz, float *part,
                         const void *dhd, const void *hd, int rows, int f, int ld, float drop)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "ffn_act_bwd");
    expect(k, "F", f);
    expect(k, "LD", ld);
    expect_aligned(k, dz, 0);
    expect_aligned(k, dhd, 0);
    expect_aligned(k, hd, 0);
    void *args[] = {&dz, &part, &dhd, &hd, &rows, &drop};
    const long vectors = ld / need(k, "VEC");
    const int parts = (int)need(k, "PARTS");
    tt_gpu_launch(k, (dim3){ceil_div(vectors, need(k, "TX")), (unsigned)parts, 1}, args, st);
    return parts;
}

void tt_ffn_act_bwd(const tt_gpu_program *p, cudaStream_t st, void *dz, float *db1, float *part,
                    const void *dhd, const void *hd, int rows, int f, int ld, float drop)
{
    const int parts = tt_ffn_act_bwd_parts(p, st, dz, part, dhd, hd, rows, f, ld, drop);
    const tt_colsum_jobs j = {.in = part, .out = {db1}, .jobs = 1, .parts = parts, .sets = 1};
    tt_colsums(p, st, "bias_colsum", &j, f);
}

void tt_core_fwd(const tt_gpu_program *p, cudaStream_t st, float *g, const float *theta, int h,
                 int r, int layers, long long g_stride, long long theta_stride)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "core_fwd");
    expect(k, "H", h);
    expect(k, "R", r);
    TT_ASSERT(layers >= 1);
    void *args[] = {&g, &theta, &g_stride, &theta_stride};
    tt_gpu_launch(k, (dim3){(unsigned)layers, 1, 1}, args, st);
}

void tt_core_bwd(const tt_gpu_program *p, cudaStream_t st, float *dtheta, const float *dg,
                 const float *theta, int h, int r, int layers, long long g_stride,
                 long long theta_stride)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "core_bwd");
    expect(k, "H", h);
    expect(k, "R", r);
    TT_ASSERT(layers >= 1);
    void *args[] = {&dtheta, &dg, &theta, &g_stride, &theta_stride};
    tt_gpu_launch(k, (dim3){(unsigned)layers, 1, 1}, args, st);
}

void tt_xent(const tt_gpu_program *p, cudaStream_t st, float *loss, float *nll, void *logits,
             const int32_t *targets, const float *weight, int rows, int v, int ld, float eps,
             float scale, bool grad)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "xent");
    /* rows longer than the head's (the tails) go to xent_long (more of a row kept, bigger blocks) */
    if (v > need(k, "HEAD")) k = tt_gpu_kernel_of(p, "xent_long");
    TT_ASSERT(v > 0 && ld >= v);
    if (rows == 0) return;
    int g = grad;
    void *args[] = {&loss, &nll, &logits, &targets, &weight, &v, &ld, &eps, &scale, &g};
    /* the shared memory the row's whole vectors (of XV logits) take, up to what the plan gave
     * the kernel: more blocks an SM for shorter rows */
    const long cap = need(k, "ROWCAP"), xv = need(k, "XV"), nv = v / xv < cap ? v / xv : cap;
    const unsigned smem = cap ? (unsigned)(nv * (long)(k->k->dyn_smem / (unsigned)cap)) : 0;
    tt_gpu_launch_smem(k, (dim3){(unsigned)rows, 1, 1}, args, st, smem);
}

static void txl_softmax(const char *op, const tt_gpu_program *p, cudaStream_t st, void *a, void *b,
                        const void *c, const void *d, int batch, int heads, int n, int m,
                        float scale, tt_dropout drop)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, op);
    TT_ASSERT(m >= 0 && m + n <= need(k, "KMAX"));
    int rows = batch * heads * n;
    if (rows == 0) return;
    void *args[] = {&a,     &b,     &c,      &d,         &rows,     &n,         &m,        &batch,
                    &heads, &scale, &drop.p, &drop.seed, &drop.step, &drop.site, &drop.first};
    const long per_block = need(k, "THREADS") / 32;
    tt_gpu_launch(k, (dim3){ceil_div(rows, per_block), 1, 1}, args, st);
}

void tt_txl_softmax_fwd(const tt_gpu_program *p, cudaStream_t st, void *prob, void *pdrop,
                        const float *ac, const float *bd, int batch, int heads, int n, int m,
                        float scale, tt_dropout drop)
{
    txl_softmax("txl_softmax_fwd", p, st, prob, pdrop, ac, bd, batch, heads, n, m, scale, drop);
}

void tt_txl_softmax_bwd(const tt_gpu_program *p, cudaStream_t st, void *dac, void *dbd,
                        const float *dpdrop, const void *prob, int batch, int heads, int n, int m,
                        float scale, tt_dropout drop)
{
    txl_softmax("txl_softmax_bwd", p, st, dac, dbd, dpdrop, prob, batch, heads, n, m, scale, drop);
}

/* q, k, v blocks of hd = heads x d_head values each, hs apart, inside rows of ldq (and k, v
 * inside rows of ldkv); k's name in the message. */
static void expect_qkv_rows(const tt_gpu_kernel *k, long hd, tt_qkv_rows lay)
{
    if (lay.hs < hd || lay.ldq < 2 * lay.hs + hd || lay.ldkv < lay.hs + hd)
        tt_panic(__FILE__, __LINE__, "%s: blocks of %ld values %d apart do not fit rows of %d and %d",
                 k->k->name, hd, lay.hs, lay.ldq, lay.ldkv);
}

bool tt_txl_fused(const tt_gpu_program *p) { return plan_has(p, "txl_attn_fwd"); }

void tt_txl_attn_fwd(const tt_gpu_program *p, cudaStream_t st, void *o, float *lse, const void *qu,
                     const void *qv, const void *k, const void *v, const void *r, int batch,
                     int heads, int n, int m, float scale, tt_dropout drop)
{
    const tt_gpu_kernel *kk = tt_gpu_kernel_of(p, "txl_attn_fwd");
    TT_ASSERT(m >= 0 && n > 0 && batch >= 0 && heads > 0);
    if (batch == 0) return;
    void *args[] = {&o,     &lse, &qu,    &qv,     &k,         &v,         &r,        &batch,
                    &heads, &n,   &m,     &scale,  &drop.p,    &drop.seed, &drop.step, &drop.site, &drop.first};
    tt_gpu_launch(kk, (dim3){ceil_div(n, 64), (unsigned)batch, (unsigned)heads}, args, st);
}

size_t tt_txl_uv_part_floats(const tt_gpu_program *p, int batch, int heads, int n)
{
    return (size_t)heads * batch * ceil_div(n, 64) * 2 * need(tt_gpu_kernel_of(p, "txl_uv_sum"), "DH");
}

int tt_txl_ds_pitch(int klen) { return (int)ceil_div(klen, 64) * 64; }

void tt_txl_attn_bwd(const tt_gpu_program *p, cudaStream_t st, void *dqkv, void *dkvm,
                     tt_qkv_rows lay, float *du, float *dvb, float *uvpart, void *dbd, int ldb,
                     void *ds, const void *qu, const void *qv, const void *k, const void *v,
                     const void *r, const void *o, const void *dout, const float *lse, int batch,
                     int heads, int n, int m, float scale, tt_dropout drop)
{
    const tt_gpu_kernel *q = tt_gpu_kernel_of(p, "txl_attn_bwd_q"), *kv = tt_gpu_kernel_of(p, "txl_attn_bwd_kv");
    const tt_gpu_kernel *uv = tt_gpu_kernel_of(p, "txl_uv_sum");
    TT_ASSERT(m >= 0 && n > 0 && batch >= 0 && heads > 0 && ldb >= m + n && (m == 0 || dkvm));
    const long hd = heads * need(q, "DH");
    expect_qkv_rows(q, hd, lay);
    if (batch == 0) return;
    int lds = tt_txl_ds_pitch(m + n);
    void *kvargs[] = {&dqkv,  &dkvm,     &lay.ldq,  &lay.ldkv, &lay.hs,   &ds,        &lds,
                      &qu,    &qv,       &k,        &v,        &r,        &o,         &dout,
                      &lse,   &batch,    &heads,    &n,        &m,        &scale,     &drop.p,
                      &drop.seed, &drop.step, &drop.site, &drop.first};
    tt_gpu_launch(kv, (dim3){ceil_div(m + n, 64), (unsigned)batch, (unsigned)heads}, kvargs, st);
    void *qargs[] = {&dqkv, &lay.ldq, &uvpart, &dbd, &ldb, &ds, &lds, &k, &r, &batch, &n, &m};
    tt_gpu_launch(q, (dim3){ceil_div(n, 64), (unsigned)batch, (unsigned)heads}, qargs, st);
    int tiles = (int)ceil_div(n, 64);
    void *uvargs[] = {&du, &dvb, &uvpart, &batch, &tiles};
    tt_gpu_launch(uv, (dim3){ceil_div(2 * hd, need(uv, "THREADS") / 32), 1, 1}, uvargs, st);
}

/* Blocks for a grid-stride kernel over total elements: enough to fill the card, no more. */
static unsigned stride_blocks(const tt_gpu_kernel *k, long long total)
{
    long long b = (total + need(k, "THREADS") - 1) / need(k, "THREADS");
    return (unsigned)(b < 1 ? 1 : b > 2048 ? 2048 : b);
}

void tt_txl_pe(const tt_gpu_program *p, cudaStream_t st, void *pe, const float *src, int rows,
               int d, int ld, tt_dropout drop)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "txl_pe");
    expect_pitch(k, d, ld, false);
    void *args[] = {&pe, &src, &rows, &d, &ld, &drop.p, &drop.seed, &drop.step, &drop.site, &drop.first};
    tt_gpu_launch(k, (dim3){stride_blocks(k, (long long)rows * d), 1, 1}, args, st);
}

void tt_txl_heads_qkv(const tt_gpu_program *p, cudaStream_t st, void *qu, void *qv, void *k,
                      void *v, const void *qkv, const void *kvm, const float *u, const float *vb,
                      int batch, int n, int m, tt_qkv_rows lay)
{
    const tt_gpu_kernel *kk = tt_gpu_kernel_of(p, "txl_heads_qkv");
    TT_ASSERT(m == 0 || kvm);
    expect_qkv_rows(kk, need(kk, "H") * need(kk, "DH"), lay);
    void *args[] = {&qu, &qv, &k, &v, &qkv, &kvm, &u, &vb, &batch, &n, &m, &lay.ldq, &lay.ldkv, &lay.hs};
    const long long total = need(kk, "H") * (long long)batch * (m + n) * need(kk, "DP");
    TT_ASSERT(total / need(kk, "DP") < INT_MAX); /* the kernel's 32-bit row index */
    tt_gpu_launch(kk, (dim3){stride_blocks(kk, total), 1, 1}, args, st);
}

static void txl_move(const char *op, const tt_gpu_program *p, cudaStream_t st, void *dst,
                     const void *src, int rows, int ld, int off)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, op);
    void *args[] = {&dst, &src, &rows, &ld, &off};
    const long long total = need(k, "H") * (long long)rows * need(k, "DP");
    TT_ASSERT(total / need(k, "DP") < INT_MAX); /* the kernels' 32-bit row index */
    tt_gpu_launch(k, (dim3){stride_blocks(k, total), 1, 1}, args, st);
}

void tt_txl_heads(const tt_gpu_program *p, cudaStream_t st, void *dst, const void *src, int rows,
                  int ld, int off)
{
    txl_move("txl_heads", p, st, dst, src, rows, ld, off);
}

void tt_txl_unheads(const tt_gpu_program *p, cudaStream_t st, void *dst, const void *src, int rows,
                    int ld, int off)
{
    txl_move("txl_unheads", p, st, dst, src, rows, ld, off);
}

void tt_txl_heads_bwd(const tt_gpu_program *p, cudaStream_t st, void *dqkv, void *dkvm,
                      const void *dqu, const void *dqv, const void *dk, const void *dv, int batch,
                      int n, int m, tt_qkv_rows lay)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "txl_heads_bwd");
    TT_ASSERT(m == 0 || dkvm);
    expect_qkv_rows(k, need(k, "H") * need(k, "DH"), lay);
    void *args[] = {&dqkv, &dkvm, &dqu, &dqv, &dk, &dv, &batch, &n, &m, &lay.ldq, &lay.ldkv, &lay.hs};
    const long long hd = need(k, "H") * need(k, "DH"), total = (long long)batch * (3LL * n + 2LL * m) * hd;
    TT_ASSERT((long long)batch * (n > m ? n : m) < INT_MAX); /* the kernel's 32-bit row index */
    tt_gpu_launch(k, (dim3){stride_blocks(k, total), 1, 1}, args, st);
}

int tt_txl_dr_splits(int batch)
{
    int s = batch < 16 ? batch : 16;
    while (s > 1 && batch % s) s--;
    return s > 0 ? s : 1;
}

void tt_txl_dr_sum(const tt_gpu_program *p, cudaStream_t st, void *dr, int ld, const float *part,
                   int klen, int splits)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "txl_dr_sum");
    expect_pitch(k, (int)(need(k, "H") * need(k, "DH")), ld, false);
    void *args[] = {&dr, &ld, &part, &klen, &splits};
    tt_gpu_launch(k, (dim3){stride_blocks(k, (long long)klen * need(k, "H") * need(k, "DH")), 1, 1}, args, st);
}

void tt_txl_uv_bwd(const tt_gpu_program *p, cudaStream_t st, float *du, float *dv, const void *dqu,
                   const void *dqv, int rows)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "txl_uv_bwd");
    void *args[] = {&du, &dv, &dqu, &dqv, &rows};
    const long warps = 2 * need(k, "H") * need(k, "DH");
    tt_gpu_launch(k, (dim3){ceil_div(32 * warps, need(k, "THREADS")), 1, 1}, args, st);
}

void tt_xent_sum(const tt_gpu_program *p, cudaStream_t st, double *out, const float *loss,
                 const float *nll, int rows)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "xent_sum");
    void *args[] = {&out, &loss, &nll, &rows};
    tt_gpu_launch(k, (dim3){1, 1, 1}, args, st);
}

void tt_adam_scalars_at(tt_adam_scalars *host, const tt_train_spec *t, double lr, long s)
{
    host->lr = lr;
    tt_adam_bias_corrections(t, s, &host->bc1, &host->bc2);
}

size_t tt_grad_norm_parts(const tt_gpu_program *p)
{
    return (size_t)need(tt_gpu_kernel_of(p, "grad_norm"), "BLOCKS") + 1; /* and the counter */
}

static void grad_norm(const tt_gpu_program *p, cudaStream_t st, tt_adam_scalars *sc, double *part,
                      const float *g, size_t n, double max_norm, int raw, const double *add,
                      tt_step_guard *guard, const double *loss, unsigned *last)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "grad_norm");
    long long nn = (long long)n;
    double *norm = &sc->norm, *clip = &sc->clip; /* device addresses, not dereferenced here */
    unsigned *done = (unsigned *)(part + need(k, "BLOCKS"));
    void *args[] = {&norm, &clip, &part, &done, &g, &nn, &max_norm, &raw, &add, &guard, &loss, &last};
    tt_gpu_launch(k, (dim3){(unsigned)need(k, "BLOCKS"), 1, 1}, args, st);
}

void tt_grad_norm_ex(const tt_gpu_program *p, cudaStream_t st, tt_adam_scalars *sc, double *part,
                     const float *g, size_t n, double max_norm, int raw, const double *add)
{
    grad_norm(p, st, sc, part, g, n, max_norm, raw, add, NULL, NULL, NULL);
}

void tt_grad_norm_guarded(const tt_gpu_program *p, cudaStream_t st, tt_adam_scalars *sc,
                          double *part, const float *g, size_t n, double max_norm,
                          tt_step_guard *guard, const double *loss, unsigned *last)
{
    TT_ASSERT(!guard || last);
    grad_norm(p, st, sc, part, g, n, max_norm, 0, NULL, guard, loss, last);
}

void tt_adam(const tt_gpu_program *p, cudaStream_t st, float *w, float *m, float *v, void *wcopy,
             const float *g, const tt_adam_scalars *sc, const double *loss, size_t n,
             const tt_train_spec *t, const long long *pads, int npads)
{
    tt_adam_guarded(p, st, w, m, v, wcopy, g, sc, loss, n, t, pads, npads, NULL, 0);
}

void tt_adam_guarded(const tt_gpu_program *p, cudaStream_t st, float *w, float *m, float *v,
                     void *wcopy, const float *g, const tt_adam_scalars *sc, const double *loss,
                     size_t n, const tt_train_spec *t, const long long *pads, int npads,
                     tt_step_guard *guard, long long base)
{
    TT_ASSERT(npads >= 0 && npads <= TT_ADAM_PAD_JOBS && (pads || !npads));
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "adam");
    if (n == 0) return;
    const double *lr = &sc->lr, *bc1 = &sc->bc1, *bc2 = &sc->bc2, *clip = &sc->clip;
    const double *norm = &sc->norm;
    long long nn = (long long)n;
    /* converted as tt_adam_step converts them */
    float b1 = (float)t->beta1, b2 = (float)t->beta2, eps = (float)t->eps;
    float wd = (float)t->weight_decay;
    void *args[] = {&w,   &m,    &v,  &wcopy, &g,  &lr,  &bc1, &bc2,   &clip,
                    &norm, &loss, &nn, &b1,   &b2, &eps, &wd, &pads, &npads, &guard, &base};
    /* four elements a thread; past 8192 blocks the threads loop (the result is the same) */
    unsigned blocks = ceil_div((long)((n + 3) / 4), need(k, "THREADS"));
    if (blocks > 8192) blocks = 8192;
    tt_gpu_launch(k, (dim3){blocks, 1, 1}, args, st);
}

/* The scratch of the attention's kernels is laid out by templates/mla_geom.cuh, which the
 * kernels index with too. mla_fwd's parts' sums (mla_tc.cu with more than one part). */
static size_t mla_fwd_floats(const tt_gpu_program *p, int batch)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "mla_fwd");
    if (!tt_kernel_const(k->k, "MMA", 0) || need(k, "JP") == 1) return 0;
    return tt_mla_fwd_part(batch, need(k, "N"), need(k, "D"), need(k, "JP"), 0, 0);
}

/* mla_bwd_q's partials; mla_bwd_wo's splits follow them. */
static size_t mla_bwd_q_floats(const tt_gpu_program *p, int batch)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "mla_bwd_q");
    const long qp = tt_kernel_const(k->k, "JP", 0) > 0; /* mla_tc.cu's: parts of j, dQ's sums */
    return tt_mla_parts_floats(tt_mla_parts_of(batch, need(k, "N"), need(k, "R"), need(k, "TI"),
                                               qp ? need(k, "JP") : 1, need(k, "POS_KEY"), qp));
}

static size_t mla_bwd_wo_floats(const tt_gpu_program *p)
{
    const tt_gpu_kernel *w = tt_gpu_kernel_of(p, "mla_bwd_wo");
    const long splits = tt_kernel_const(w->k, "S", 1);
    return splits > 1 ? tt_mla_wo_split(need(w, "N"), need(w, "D"), splits) : 0;
}

size_t tt_mla_scratch_floats(const tt_gpu_program *p, int batch)
{
    if (tt_mla_materialized(p)) /* gpu/mla_mat.c's buffers instead, but for mla_bwd_q's partials */
        return tt_mla_mat_dt_mem(p) ? mla_bwd_q_floats(p, batch) : 0;
    const size_t fwd = mla_fwd_floats(p, batch), bwd = mla_bwd_q_floats(p, batch) + mla_bwd_wo_floats(p);
    return fwd > bwd ? fwd : bwd;
}

bool tt_mla_materialized(const tt_gpu_program *p) { return tt_plan_materialized(&p->plan); }

void tt_mla_mat_prep(const tt_gpu_program *p, cudaStream_t s, void *a, void *kv, const void *qkv,
                     const float *g, const void *pos, const float *u, const float *v, int batch)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "mla_mat_prep");
    TT_ASSERT((pos != NULL) == (need(k, "POS_KEY") != 0));
    void *args[] = {&a, &kv, &qkv, &g, &pos, &u, &v};
    tt_gpu_launch(k, (dim3){(unsigned)need(k, "N"), (unsigned)batch, 1}, args, s);
}

void tt_mla_mat_mask(const tt_gpu_program *p, cudaStream_t s, void *t, int batch, bool pos_rows)
{
    for (int i = 0; i < p->plan.n; i++) /* planned only under the causal mask */
        if (!strcmp(p->plan.kernels[i].op, "mla_mat_mask")) {
            const tt_gpu_kernel *k = &p->kernels[i];
            int pos = pos_rows;
            void *args[] = {&t, &pos};
            tt_gpu_launch(k, (dim3){(unsigned)need(k, "N"), (unsigned)batch, 1}, args, s);
        }
}

bool tt_mla_mat_forms_t(const tt_gpu_program *p)
{
    return p->mat_t;
}

void tt_mla_mat_t(const tt_gpu_program *p, cudaStream_t s, void *t, const void *qkv, const float *g,
                  const void *pos, const float *u, const float *v, int batch, bool pos_rows)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "mla_mat_t");
    TT_ASSERT((pos != NULL) == (need(k, "POS_KEY") != 0));
    const long n = need(k, "N"), j_block = need(k, "G") * need(k, "JW");
    int rows = pos_rows;
    void *args[] = {&t, &qkv, &g, &pos, &u, &v, &batch, &rows};
    tt_gpu_launch(k, (dim3){ceil_div(n, 16), (unsigned)batch, ceil_div(n, j_block)}, args, s);
}

int tt_mla_mat_tiles(const tt_gpu_program *p)
{
    return p->mat_tiles;
}

void tt_mla_mat_rows(const tt_gpu_program *p, cudaStream_t s, void *dst, const void *src,
                     int batch, bool to_pos)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "mla_mat_rows");
    int pos = to_pos;
    void *args[] = {&dst, &src, &pos};
    tt_gpu_launch(k, (dim3){(unsigned)need(k, "N"), (unsigned)batch, 1}, args, s);
}

void tt_mla_mat_grads(const tt_gpu_program *p, cudaStream_t s, void *dqkv, float *part,
                      const float *gm, const float *em, const void *qkv, const float *g,
                      const void *pos, const float *u, const float *v, int batch)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "mla_mat_grads");
    TT_ASSERT((pos != NULL) == (need(k, "POS_KEY") != 0));
    void *args[] = {&dqkv, &part, &gm, &em, &qkv, &g, &pos, &u, &v};
    tt_gpu_launch(k, (dim3){(unsigned)need(k, "N"), (unsigned)batch, 1}, args, s);
}

void tt_mla_mat_params(const tt_gpu_program *p, cudaStream_t s, float *dp, float *dg, float *du,
                       float *dv, const float *part, int batch)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "mla_mat_params");
    void *args[] = {&dp, &dg, &du, &dv, &part, &batch};
    tt_gpu_launch(k, plan_grid(k), args, s);
}

/* A tensor map for kernel k's operand at base (tt_device_tensor_map); a failure is a runtime bug
 * (the plan chose the kernel for this card and these shapes). */
static void tensor_map(const tt_gpu_kernel *k, void *map, const void *base, int rank, const uint64_t *dims,
                       const uint64_t *strides, const uint32_t *box, int swizzle)
{
    char why[256];
    if (tt_device_tensor_map(map, base, rank, dims, strides, box, swizzle, why, sizeof why) != 0)
        tt_panic(__FILE__, __LINE__, "%s: %s", k->k->name, why);
}

/* Wo [D][N*N] as the wgmma kernels read it: boxes of `rows` features x 16 keys, 32-byte swizzle. */
static void wo_map(const tt_gpu_kernel *k, void *map, const void *wo, int n, int d, long rows)
{
    const uint64_t dims[] = {(uint64_t)n * n, (uint64_t)d}, strides[] = {(uint64_t)n * n * 2};
    const uint32_t box[] = {16, (uint32_t)rows};
    tensor_map(k, map, wo, 2, dims, strides, box, 32);
}

static void mla_fwd(const tt_gpu_program *p, cudaStream_t s, void *y, const void *qkv,
                    const float *g, const void *wo, const void *pos, const float *u,
                    const float *v, float *scratch, int batch, int n, int r, int d, bool sum_parts)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "mla_fwd");
    expect(k, "N", n);
    expect(k, "R", r);
    expect(k, "D", d);
    TT_ASSERT((pos != NULL) == (need(k, "POS_KEY") != 0));
    if (tt_kernel_const(k->k, "MMA", 0)) { /* templates/mla_tc.cu */
        /* the wgmma kernel reads Wo [D][N*N] through a tensor map, by boxes of TD x 16 */
        _Alignas(64) unsigned char map[TT_TENSOR_MAP_BYTES] = {0};
        if (tt_kernel_const(k->k, "WG", 0)) wo_map(k, map, wo, n, d, need(k, "TD"));
        void *args[] = {&y, &qkv, &g, &wo, &pos, &u, &v, &batch, &scratch, map};
        const dim3 grid = {(unsigned)need(k, "TASKS"), ceil_div(batch, need(k, "G")),
                           ceil_div(d, need(k, "TD"))};
        tt_gpu_launch(k, grid, args, s);
        if (need(k, "JP") > 1 && sum_parts) { /* the parts' sums into y */
            const tt_gpu_kernel *sum = tt_gpu_kernel_of(p, "mla_fwd_sum");
            expect(sum, "JP", need(k, "JP"));
            void *sargs[] = {&y, &scratch, &batch};
            tt_gpu_launch(sum, plan_grid(sum), sargs, s); /* grid-stride */
        }
        return;
    }
    TT_ASSERT(sum_parts); /* the SIMT kernel writes y itself */
    void *args[] = {&y, &qkv, &g, &wo, &pos, &u, &v};
    const dim3 grid = {ceil_div(n, need(k, "TI")), ceil_div(d, need(k, "TD")), (unsigned)batch};
    tt_gpu_launch(k, grid, args, s);
}

void tt_mla_fwd(const tt_gpu_program *p, cudaStream_t s, void *y, const void *qkv, const float *g,
                const void *wo, const void *pos, const float *u, const float *v, float *scratch,
                int batch, int n, int r, int d)
{
    mla_fwd(p, s, y, qkv, g, wo, pos, u, v, scratch, batch, n, r, d, true);
}

void tt_mla_fwd_parts(const tt_gpu_program *p, cudaStream_t s, const void *qkv, const float *g,
                      const void *wo, const void *pos, const float *u, const float *v,
                      float *scratch, int batch, int n, int r, int d)
{
    mla_fwd(p, s, NULL, qkv, g, wo, pos, u, v, scratch, batch, n, r, d, false);
}

/* mla_bwd_reduce: dqkv's sums, then the parameters' in the blocks after (a warp an output) */
static void bwd_reduce(const tt_gpu_kernel *red, cudaStream_t s, void *dqkv, float *dp, float *dg,
                       float *du, float *dv, float *part, int batch, int n, int r, bool key)
{
    int reduce_blocks = (int)ceil_div((long)batch * n * r / need(red, "VEC"), need(red, "THREADS"));
    const long outputs = (key ? (long)n * r : 0) + 3L * r;
    void *rargs[] = {&dqkv, &dp, &dg, &du, &dv, &part, &batch, &reduce_blocks};
    tt_gpu_launch(red, (dim3){(unsigned)(reduce_blocks + ceil_div(32 * outputs, need(red, "THREADS"))), 1, 1},
                  rargs, s);
}

bool tt_mla_mat_dt_mem(const tt_gpu_program *p)
{
    for (int i = 0; i < p->plan.n; i++)
        if (!strcmp(p->plan.kernels[i].op, "mla_bwd_q"))
            return tt_kernel_const(&p->plan.kernels[i], "DT_MEM", 0) != 0;
    return false;
}

void tt_mla_mat_bwd_dt(const tt_gpu_program *p, cudaStream_t s, void *dqkv, float *dg, float *part,
                       const void *dt, const void *qkv, const float *g, int batch, bool pos_rows)
{
    const tt_gpu_kernel *q = tt_gpu_kernel_of(p, "mla_bwd_q"), *red = tt_gpu_kernel_of(p, "mla_bwd_reduce");
    TT_ASSERT(need(q, "DT_MEM") && !need(q, "POS_KEY"));
    expect(red, "TI", need(q, "TI"));
    TT_ASSERT(tt_kernel_const(red->k, "JP", 0) == tt_kernel_const(q->k, "JP", 0));
    const int n = (int)need(q, "N"), r = (int)need(q, "R");
    const void *none = NULL;
    int rows = pos_rows;
    void *qargs[] = {&dqkv, &part, &dt, &qkv, &g, &none, &none, &none, &none, &batch, &rows};
    tt_gpu_launch(q, (dim3){(unsigned)need(q, "TASKS"), ceil_div(batch, need(q, "G")), 1}, qargs, s);
    bwd_reduce(red, s, dqkv, NULL, dg, NULL, NULL, part, batch, n, r, false);
}

void tt_mla_bwd(const tt_gpu_program *p, cudaStream_t s, const tt_gpu_side *side, void *dqkv,
                float *dwo, float *dp, float *dg, float *du, float *dv, float *part, const void *dy,
                const void *qkv, const float *g, const void *wo, const void *pos, const float *u,
                const float *v, int batch, int n, int r, int d)
{
    const tt_gpu_kernel *w = tt_gpu_kernel_of(p, "mla_bwd_wo"), *q = tt_gpu_kernel_of(p, "mla_bwd_q");
    const tt_gpu_kernel *red = tt_gpu_kernel_of(p, "mla_bwd_reduce");
    const tt_gpu_kernel *all[] = {w, q, red};
    for (int i = 0; i < 3; i++) {
        expect(all[i], "N", n);
        expect(all[i], "R", r);
        expect(all[i], "D", d);
        TT_ASSERT((pos != NULL) == (need(all[i], "POS_KEY") != 0));
    }
    expect(red, "TI", need(q, "TI")); /* the sums read the tiles mla_bwd_q wrote */
    TT_ASSERT(tt_kernel_const(red->k, "JP", 0) == tt_kernel_const(q->k, "JP", 0));
    TT_ASSERT(tt_kernel_const(red->k, "JS", 0) == tt_kernel_const(q->k, "JS", 0));
    /* dY's path to dqkv, dg (and dp, du, dv) on s; dWo's beside it on side when there is one */
    const cudaStream_t ws = side ? side->stream : s;
    if (side) tt_gpu_fork(side, s);
    /* the tensor-core variants (templates/mla_tc.cu) take the same arguments on other grids; the
     * plan may pair mla_tc.cu's mla_bwd_wo with mla.cu's mla_bwd_q (position: key) */
    /* the wgmma variant reads Wo [D][N*N] through a tensor map, by boxes of the padded D x 16 */
    _Alignas(64) unsigned char qmap[TT_TENSOR_MAP_BYTES] = {0};
    if (tt_kernel_const(q->k, "WG", 0)) wo_map(q, qmap, wo, n, d, ceil_div(d, 16) * 16);
    void *qargs[] = {&dqkv, &part, &dy, &qkv, &g, &wo, &pos, &u, &v, &batch, qmap};
    if (tt_kernel_const(q->k, "MMA", 0))
        tt_gpu_launch(q, (dim3){(unsigned)need(q, "TASKS"), ceil_div(batch, need(q, "G")), 1}, qargs, s);
    else
        tt_gpu_launch(q, (dim3){ceil_div(n, need(q, "TI")), (unsigned)batch, 1}, qargs, s);
    bwd_reduce(red, s, dqkv, dp, dg, du, dv, part, batch, n, r, pos != NULL);
    if (tt_kernel_const(w->k, "MMA", 0)) {
        /* its splits' sums go after mla_bwd_q's partials (tt_mla_bwd_part_floats counts both) */
        const long splits = need(w, "S");
        float *wpart = part + mla_bwd_q_floats(p, batch);
        /* the wgmma kernel reads dY [B][N][D] through a tensor map, by boxes of 32 rows x 64 */
        _Alignas(64) unsigned char map[TT_TENSOR_MAP_BYTES] = {0};
        if (tt_kernel_const(w->k, "WG", 0)) {
            const uint64_t dims[] = {(uint64_t)d, (uint64_t)n, (uint64_t)batch},
                           strides[] = {(uint64_t)d * 2, (uint64_t)n * d * 2};
            const uint32_t box[] = {64, 32, 1};
            tensor_map(w, map, dy, 3, dims, strides, box, 128);
        }
        void *targs[] = {&dwo, &dy, &qkv, &g, &pos, &u, &v, &batch, &wpart, map};
        tt_gpu_launch(w, (dim3){ceil_div(n, need(w, "W")), ceil_div(n, 16),
                                ceil_div(d, need(w, "TD")) * (unsigned)splits},
                      targs, ws);
        if (splits > 1) {
            const tt_gpu_kernel *sum = tt_gpu_kernel_of(p, "mla_bwd_wo_sum");
            expect(sum, "S", splits);
            void *sargs[] = {&dwo, &wpart};
            tt_gpu_launch(sum, plan_grid(sum), sargs, ws); /* grid-stride */
        }
    } else {
        void *wargs[] = {&dwo, &dy, &qkv, &g, &pos, &u, &v, &batch};
        tt_gpu_launch(w, (dim3){(unsigned)n, ceil_div(n, need(w, "TK")), ceil_div(d, need(w, "TD"))},
                      wargs, ws);
    }
    if (side) tt_gpu_join(side, s);
}

/* A grid-stride conversion of n values (cast, cast_widen): ceil(n / THREADS) blocks, at most
 * the plan's. */
static void convert(const tt_gpu_program *p, const char *op, cudaStream_t s, void *out,
                    const void *in, long n)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, op);
    const long threads = need(k, "THREADS");
    long blocks = (n + threads - 1) / threads;
    if (blocks > k->k->grid[0]) blocks = k->k->grid[0]; /* the plan's grid-stride blocks */
    if (blocks < 1) blocks = 1;
    void *args[] = {&out, &in, &n};
    tt_gpu_launch(k, (dim3){(unsigned)blocks, 1, 1}, args, s);
}

void tt_cast(const tt_gpu_program *p, cudaStream_t s, void *out, const float *in, long n)
{
    convert(p, "cast", s, out, in, n);
}

void tt_cast_widen(const tt_gpu_program *p, cudaStream_t s, float *out, const void *in, long n)
{
    convert(p, "cast_widen", s, out, in, n);
}

void tt_copy_job(long long *job, void *dst, size_t dst_pitch, const void *src, size_t src_pitch,
                 size_t row_bytes, long rows)
{
    TT_ASSERT(row_bytes <= dst_pitch && (rows <= 1 || row_bytes <= src_pitch) && rows >= 0);
    job[TT_COPY_SRC] = (long long)(uintptr_t)src;
    job[TT_COPY_DST] = (long long)(uintptr_t)dst;
    job[TT_COPY_SRC_PITCH] = (long long)src_pitch;
    job[TT_COPY_DST_PITCH] = (long long)dst_pitch;
    job[TT_COPY_ROW_BYTES] = (long long)row_bytes;
    job[TT_COPY_ROWS] = rows;
}

static int by_copy_src(const void *a, const void *b)
{
    const unsigned long long x = (unsigned long long)((const long long *)a)[TT_COPY_SRC];
    const unsigned long long y = (unsigned long long)((const long long *)b)[TT_COPY_SRC];
    return (x > y) - (x < y);
}

void tt_copy_jobs_for_adam(long long *jobs, int njobs)
{
    qsort(jobs, (size_t)njobs, TT_COPY_FIELDS * sizeof *jobs, by_copy_src);
    for (int k = 0; k < njobs; k++) { /* what Adam's search assumes */
        const long long *q = jobs + (size_t)k * TT_COPY_FIELDS;
        const long long span = q[TT_COPY_ROWS] * q[TT_COPY_SRC_PITCH];
        TT_ASSERT(span >= 0 && span < (1ll << 32) && q[TT_COPY_DST_PITCH] < (1ll << 32));
        TT_ASSERT(k + 1 == njobs || q[TT_COPY_SRC] + span <= q[TT_COPY_FIELDS + TT_COPY_SRC]);
    }
}

/* A warp a row: ceil(max_rows / warps) blocks a job, at most the plan's (its grid's x), the warps
 * striding over the rows past them. */
void tt_copy_rows(const tt_gpu_program *p, cudaStream_t s, const long long *jobs, int njobs,
                  long max_rows)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "copy_rows");
    TT_ASSERT(njobs >= 1 && njobs <= 65535 && max_rows >= 0);
    const long warps = need(k, "THREADS") / 32;
    long blocks = (max_rows + warps - 1) / warps;
    if (blocks > k->k->grid[0]) blocks = k->k->grid[0];
    if (blocks < 1) blocks = 1;
    void *args[] = {&jobs, &njobs};
    tt_gpu_launch(k, (dim3){(unsigned)blocks, (unsigned)njobs, 1}, args, s);
}
