/* Launchers (see launch.h). */
#include "launch.h"

#include "util.h"

static unsigned ceil_div(long a, long b) { return (unsigned)((a + b - 1) / b); }

static long need(const tt_gpu_kernel *k, const char *key)
{
    const long v = tt_kernel_const(k->k, key, -1);
    if (v < 0) tt_panic(__FILE__, __LINE__, "%s has no constant %s", k->k->name, key);
    return v;
}

/* The kernel was specialized for `baked`; running it on other shapes would be silently wrong. */
static void expect(const tt_gpu_kernel *k, const char *key, long given)
{
    const long baked = need(k, key);
    if (baked != given)
        tt_panic(__FILE__, __LINE__, "%s is specialized for %s = %ld, called with %ld", k->k->name,
                 key, baked, given);
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

void tt_layernorm_bwd(const tt_gpu_program *p, cudaStream_t s, void *dx, float *dgamma,
                      float *dbeta, float *part, const void *dy, const void *x, const float *mean,
                      const float *rstd, const float *gamma, int rows, int d)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "layernorm_bwd");
    expect(k, "D", d);
    int parts = tt_layernorm_bwd_parts(p, rows);
    void *args[] = {&dx, &part, &dy, &x, &mean, &rstd, &gamma, &rows};
    tt_gpu_launch(k, (dim3){(unsigned)parts, 1, 1}, args, s);
    /* dgamma and dbeta are adjacent sets of the colsum: the caller passes dbeta = dgamma + d */
    const tt_gpu_kernel *c = tt_gpu_kernel_of(p, "colsum");
    expect(c, "D", d);
    expect(c, "SETS", 2);
    TT_ASSERT(dbeta == dgamma + d);
    void *cargs[] = {&dgamma, &part, &parts};
    tt_gpu_launch(c, (dim3){ceil_div(d, need(c, "THREADS")), 2, 1}, cargs, s);
}

void tt_mla_fwd(const tt_gpu_program *p, cudaStream_t s, void *y, const void *qkv, const float *g,
                const void *wo, const void *pos, const float *u, const float *v, int batch, int n,
                int r, int d)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "mla_fwd");
    expect(k, "N", n);
    expect(k, "R", r);
    expect(k, "D", d);
    TT_ASSERT((pos != NULL) == (need(k, "POS_KEY") != 0));
    void *args[] = {&y, &qkv, &g, &wo, &pos, &u, &v};
    const dim3 grid = {ceil_div(n, need(k, "TI")), ceil_div(d, need(k, "TD")), (unsigned)batch};
    tt_gpu_launch(k, grid, args, s);
}

size_t tt_mla_bwd_part_floats(const tt_gpu_program *p, int batch)
{
    const tt_gpu_kernel *k = tt_gpu_kernel_of(p, "mla_bwd_q");
    const long n = need(k, "N"), r = need(k, "R"), it = ceil_div(n, need(k, "TI"));
    return (size_t)batch * it * ((2 + need(k, "POS_KEY")) * n * r + 3 * r);
}

void tt_mla_bwd(const tt_gpu_program *p, cudaStream_t s, void *dqkv, float *dwo, float *dp,
                float *dg, float *du, float *dv, float *part, const void *dy, const void *qkv,
                const float *g, const void *wo, const void *pos, const float *u, const float *v,
                int batch, int n, int r, int d)
{
    const tt_gpu_kernel *w = tt_gpu_kernel_of(p, "mla_bwd_wo"), *q = tt_gpu_kernel_of(p, "mla_bwd_q");
    const tt_gpu_kernel *red = tt_gpu_kernel_of(p, "mla_bwd_reduce");
    const tt_gpu_kernel *par = tt_gpu_kernel_of(p, "mla_bwd_params");
    const tt_gpu_kernel *all[] = {w, q, red, par};
    for (int i = 0; i < 4; i++) {
        expect(all[i], "N", n);
        expect(all[i], "R", r);
        expect(all[i], "D", d);
        TT_ASSERT((pos != NULL) == (need(all[i], "POS_KEY") != 0));
    }
    expect(red, "TI", need(q, "TI")); /* the reductions read the tiles mla_bwd_q wrote */
    expect(par, "TI", need(q, "TI"));
    void *wargs[] = {&dwo, &dy, &qkv, &g, &pos, &u, &v, &batch};
    tt_gpu_launch(w, (dim3){(unsigned)n, ceil_div(n, need(w, "TK")), ceil_div(d, need(w, "TD"))},
                  wargs, s);
    void *qargs[] = {&dqkv, &part, &dy, &qkv, &g, &wo, &pos, &u, &v, &batch};
    tt_gpu_launch(q, (dim3){ceil_div(n, need(q, "TI")), (unsigned)batch, 1}, qargs, s);
    void *rargs[] = {&dqkv, &part, &batch};
    tt_gpu_launch(red, (dim3){ceil_div((long)batch * n * r, need(red, "THREADS")), 1, 1}, rargs, s);
    void *pargs[] = {&dp, &dg, &du, &dv, &part, &batch};
    const long elems = (long)n * r > 3L * r ? (long)n * r : 3L * r;
    tt_gpu_launch(par, (dim3){ceil_div(elems, need(par, "THREADS")), 1, 1}, pargs, s);
}
