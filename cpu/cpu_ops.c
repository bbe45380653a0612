/* The CPU reference of each operation (see cpu_ops.h). Loops are ordered so that the innermost
 * runs over contiguous memory; every long sum is a double. */
#include "cpu_ops.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "rng.h"
#include "util.h"

void cpu_linear_fwd(tt_real *y, const tt_real *x, const tt_real *w, const tt_real *b, int rows, int in,
                    int out)
{
    for (int r = 0; r < rows; r++) {
        const tt_real *xr = x + (size_t)r * in;
        tt_real *yr = y + (size_t)r * out;
        for (int o = 0; o < out; o++)
            yr[o] = (tt_real)((b ? b[o] : 0.0) + cpu_dot(xr, w + (size_t)o * in, in));
    }
}

void cpu_linear_bwd(tt_real *dx, tt_real *dw, tt_real *db, const tt_real *dy, const tt_real *x,
                    const tt_real *w, int rows, int in, int out)
{
    if (dx) {
        double *acc = tt_xmalloc((size_t)in * sizeof *acc);
        for (int r = 0; r < rows; r++) {
            memset(acc, 0, (size_t)in * sizeof *acc);
            const tt_real *dyr = dy + (size_t)r * out;
            for (int o = 0; o < out; o++) {
                const double d = dyr[o];
                if (d == 0.0) continue;
                const tt_real *wo = w + (size_t)o * in;
                for (int i = 0; i < in; i++) acc[i] += d * wo[i];
            }
            for (int i = 0; i < in; i++) dx[(size_t)r * in + i] = (tt_real)acc[i];
        }
        free(acc);
    }
    if (dw) {
        double *acc = tt_xcalloc((size_t)out * in, sizeof *acc);
        for (int r = 0; r < rows; r++) {
            const tt_real *xr = x + (size_t)r * in;
            const tt_real *dyr = dy + (size_t)r * out;
            for (int o = 0; o < out; o++) {
                const double d = dyr[o];
                if (d == 0.0) continue;
                double *ao = acc + (size_t)o * in;
                for (int i = 0; i < in; i++) ao[i] += d * xr[i];
            }
        }
        for (size_t k = 0; k < (size_t)out * in; k++) dw[k] += (tt_real)acc[k];
        free(acc);
    }
    if (db) {
        for (int o = 0; o < out; o++) {
            double s = 0;
            for (int r = 0; r < rows; r++) s += dy[(size_t)r * out + o];
            db[o] += (tt_real)s;
        }
    }
}

void cpu_layernorm_fwd(tt_real *y, tt_real *mean, tt_real *rstd, const tt_real *x, const tt_real *gamma,
                       const tt_real *beta, int rows, int d)
{
    for (int r = 0; r < rows; r++) {
        const tt_real *xr = x + (size_t)r * d;
        double m = 0, v = 0;
        for (int i = 0; i < d; i++) m += xr[i];
        m /= d;
        for (int i = 0; i < d; i++) v += (xr[i] - m) * (xr[i] - m);
        v /= d;
        const double rs = 1.0 / sqrt(v + TT_LN_EPS);
        for (int i = 0; i < d; i++)
            y[(size_t)r * d + i] = (tt_real)((xr[i] - m) * rs * gamma[i] + beta[i]);
        mean[r] = (tt_real)m;
        rstd[r] = (tt_real)rs;
    }
}

void cpu_layernorm_bwd(tt_real *dx, tt_real *dgamma, tt_real *dbeta, const tt_real *dy, const tt_real *x,
                       const tt_real *mean, const tt_real *rstd, const tt_real *gamma, int rows, int d)
{
    double *dg = tt_xcalloc((size_t)d, sizeof *dg), *db = tt_xcalloc((size_t)d, sizeof *db);
    for (int r = 0; r < rows; r++) {
        const tt_real *xr = x + (size_t)r * d, *dyr = dy + (size_t)r * d;
        double m1 = 0, m2 = 0;
        for (int i = 0; i < d; i++) {
            const double xh = (xr[i] - mean[r]) * (double)rstd[r];
            const double gd = (double)gamma[i] * dyr[i];
            m1 += gd;
            m2 += gd * xh;
            dg[i] += dyr[i] * xh;
            db[i] += dyr[i];
        }
        m1 /= d;
        m2 /= d;
        if (dx)
            for (int i = 0; i < d; i++) {
                const double xh = (xr[i] - mean[r]) * (double)rstd[r];
                dx[(size_t)r * d + i] = (tt_real)(rstd[r] * ((double)gamma[i] * dyr[i] - m1 - xh * m2));
            }
    }
    for (int i = 0; i < d; i++) {
        if (dgamma) dgamma[i] += (tt_real)dg[i];
        if (dbeta) dbeta[i] += (tt_real)db[i];
    }
    free(dg);
    free(db);
}

void cpu_embedding_row(tt_real *y, const tt_real *e, int d)
{
    const tt_real scale = (tt_real)sqrt((double)d);
    for (int i = 0; i < d; i++) y[i] = e[i] * scale;
}

void cpu_embedding_row_bwd(tt_real *de, const tt_real *dy, int d)
{
    const tt_real scale = (tt_real)sqrt((double)d);
    for (int i = 0; i < d; i++) de[i] += dy[i] * scale;
}

static cpu_plant_kind planted;
void cpu_plant(cpu_plant_kind k) { planted = k; }
cpu_plant_kind cpu_planted(void) { return planted; }

void cpu_dropout_fwd(tt_real *y, uint8_t *mask, const tt_real *x, long n, tt_real p, uint64_t seed,
                     uint64_t stream)
{
    cpu_dropout_fwd_at(y, mask, x, n, p, seed, stream, 0);
}

void cpu_dropout_fwd_at(tt_real *y, uint8_t *mask, const tt_real *x, long n, tt_real p,
                        uint64_t seed, uint64_t stream, uint64_t first)
{
    if (p <= 0.f) {
        if (y != x) memcpy(y, x, (size_t)n * sizeof *y);
        if (mask) memset(mask, 1, (size_t)n);
        return;
    }
    const tt_real scale = planted == CPU_PLANT_DROPOUT_FWD_UNSCALED ? 1.f : 1.f / (1.f - p);
    for (long i = 0; i < n; i++) {
        const int keep = tt_uniform(seed, stream, first + (uint64_t)i) >= p;
        if (mask) mask[i] = (uint8_t)keep;
        y[i] = keep ? x[i] * scale : 0.f;
    }
}

void cpu_dropout_bwd(tt_real *dx, const tt_real *dy, const uint8_t *mask, long n, tt_real p)
{
    const tt_real scale = p > 0.f && planted != CPU_PLANT_DROPOUT_BWD_UNSCALED ? 1.f / (1.f - p) : 1.f;
    for (long i = 0; i < n; i++) dx[i] = mask[i] ? dy[i] * scale : 0.f;
}

void cpu_relu_fwd(tt_real *y, const tt_real *x, long n)
{
    for (long i = 0; i < n; i++) y[i] = x[i] > 0.f ? x[i] : 0.f;
}

void cpu_relu_bwd(tt_real *dx, const tt_real *dy, const tt_real *y, long n)
{
    for (long i = 0; i < n; i++) dx[i] = y[i] > 0.f ? dy[i] : 0.f;
}

static void softmax_row(double *s, const tt_real *theta, int r)
{
    double mx = theta[0], z = 0;
    for (int i = 1; i < r; i++) mx = theta[i] > mx ? theta[i] : mx;
    for (int i = 0; i < r; i++) z += s[i] = exp(theta[i] - mx);
    for (int i = 0; i < r; i++) s[i] /= z;
}

void cpu_core_fwd(tt_real *g, const tt_real *theta, int h, int r)
{
    double *s = tt_xmalloc((size_t)r * sizeof *s), *acc = tt_xcalloc((size_t)r, sizeof *acc);
    for (int c = 0; c < h; c++) {
        softmax_row(s, theta + (size_t)c * r, r);
        for (int i = 0; i < r; i++) acc[i] += s[i];
    }
    for (int i = 0; i < r; i++) g[i] = (tt_real)(acc[i] / h);
    free(s);
    free(acc);
}

void cpu_core_bwd(tt_real *dtheta, const tt_real *dg, const tt_real *theta, int h, int r)
{
    double *s = tt_xmalloc((size_t)r * sizeof *s);
    for (int c = 0; c < h; c++) {
        softmax_row(s, theta + (size_t)c * r, r);
        double dot = 0;
        for (int i = 0; i < r; i++) dot += dg[i] * s[i];
        for (int i = 0; i < r; i++) dtheta[(size_t)c * r + i] += (tt_real)(s[i] * (dg[i] - dot) / h);
    }
    free(s);
}

void cpu_sinusoid(tt_real *pe, const tt_real *positions, int n, int d)
{
    const int half = d / 2;
    for (int p = 0; p < n; p++)
        for (int t = 0; t < half; t++) {
            const double f = pow(10000.0, -2.0 * t / d);
            pe[(size_t)p * d + t] = (tt_real)sin(positions[p] * f);
            pe[(size_t)p * d + half + t] = (tt_real)cos(positions[p] * f);
        }
}

/* Wo [D, N*N] transposed to [N*N, D], so that a (j,k) column is contiguous. */
static tt_real *transpose(const tt_real *a, int rows, int cols)
{
    tt_real *t = tt_xmalloc((size_t)rows * cols * sizeof *t);
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++) t[(size_t)j * rows + i] = a[(size_t)i * cols + j];
    return t;
}

/* Where row i's key positions j and value positions k stop (exclusive): i + 1 under the mask,
 * unless an error is planted (cpu_plant). */
static int causal_end(cpu_mla_shape s, int i)
{
    if (!s.causal) return s.n;
    if (planted == CPU_PLANT_MASK_AHEAD) return i + 2 < s.n ? i + 2 : s.n;
    return i + 1;
}
static int key_end(cpu_mla_shape s, int i)
{
    return s.causal && planted == CPU_PLANT_KEY_STRICT ? i : causal_end(s, i);
}

/* The key factor of (i, j): a[r] = g_r ((Q+u)[i,r] K[j,r] + (Q+v)[i,r] P[j,r]). */
static void key_factor(double *a, const tt_real *q, const tt_real *k, const tt_real *pj, const tt_real *g,
                       const tt_real *u, const tt_real *v, int r)
{
    for (int t = 0; t < r; t++) {
        double x = ((double)q[t] + (u ? u[t] : 0.f)) * k[t];
        if (pj) x += ((double)q[t] + v[t]) * pj[t];
        a[t] = g[t] * x;
    }
}

void cpu_mla_fwd_row(tt_real *y, const tt_real *seq, int i, const tt_real *g, const tt_real *wt,
                     const tt_real *p, const tt_real *u, const tt_real *v, cpu_mla_shape s,
                     double *scratch)
{
    const int n = s.n, r = s.r, d = s.d;
    const int end = causal_end(s, i), kend = key_end(s, i);
    double *a = scratch, *acc = scratch + r;
    memset(acc, 0, (size_t)d * sizeof *acc);
    for (int j = 0; j < end; j++) {
        key_factor(a, seq + (size_t)i * 3 * r, seq + (size_t)j * 3 * r + r, p ? p + (size_t)j * r : NULL,
                   g, u, v, r);
        for (int k = 0; k < kend; k++) {
            const tt_real *vk = seq + (size_t)k * 3 * r + 2 * r;
            double t = 0;
            for (int q = 0; q < r; q++) t += a[q] * vk[q];
            const tt_real *w = wt + ((size_t)j * n + k) * d;
            for (int e = 0; e < d; e++) acc[e] += t * w[e];
        }
    }
    for (int e = 0; e < d; e++) y[e] = (tt_real)acc[e];
}

tt_real *cpu_mla_wo_t(const tt_real *wo, int n, int d) { return transpose(wo, d, n * n); }
size_t cpu_mla_row_scratch(cpu_mla_shape s) { return (size_t)s.r + (size_t)s.d; }

void cpu_mla_fwd(tt_real *y, const tt_real *qkv, const tt_real *g, const tt_real *wo, const tt_real *p,
                 const tt_real *u, const tt_real *v, cpu_mla_shape s)
{
    const int n = s.n, r = s.r, d = s.d;
    tt_real *wt = transpose(wo, d, n * n);
    double *scratch = tt_xmalloc(cpu_mla_row_scratch(s) * sizeof *scratch);
    for (int b = 0; b < s.batch; b++)
        for (int i = 0; i < n; i++)
            cpu_mla_fwd_row(y + ((size_t)b * n + i) * d, qkv + (size_t)b * n * 3 * r, i, g, wt, p, u,
                            v, s, scratch);
    free(scratch);
    free(wt);
}

void cpu_mla_bwd(tt_real *dqkv, tt_real *dg, tt_real *dwo, tt_real *dp, tt_real *du, tt_real *dv,
                 const tt_real *dy, const tt_real *qkv, const tt_real *g, const tt_real *wo,
                 const tt_real *p, const tt_real *u, const tt_real *v, cpu_mla_shape s)
{
    const int n = s.n, r = s.r, d = s.d;
    const size_t nn = (size_t)n * n;
    tt_real *wt = transpose(wo, d, (int)nn);
    double *a = tt_xmalloc((size_t)r * sizeof *a), *da = tt_xmalloc((size_t)r * sizeof *da);
    double *dwt = tt_xcalloc(nn * d, sizeof *dwt);
    double *dseq = tt_xmalloc((size_t)n * 3 * r * sizeof *dseq);
    double *dg_acc = tt_xcalloc((size_t)r, sizeof *dg_acc);
    double *dp_acc = tt_xcalloc((size_t)n * r, sizeof *dp_acc);
    double *du_acc = tt_xcalloc((size_t)r, sizeof *du_acc), *dv_acc = tt_xcalloc((size_t)r, sizeof *dv_acc);
    for (int b = 0; b < s.batch; b++) {
        const tt_real *seq = qkv + (size_t)b * n * 3 * r;
        memset(dseq, 0, (size_t)n * 3 * r * sizeof *dseq);
        for (int i = 0; i < n; i++) {
            const int end = causal_end(s, i), kend = key_end(s, i);
            const tt_real *qi = seq + (size_t)i * 3 * r;
            const tt_real *dyi = dy + ((size_t)b * n + i) * d;
            for (int j = 0; j < end; j++) {
                const tt_real *kj = seq + (size_t)j * 3 * r + r;
                const tt_real *pj = p ? p + (size_t)j * r : NULL;
                key_factor(a, qi, kj, pj, g, u, v, r);
                memset(da, 0, (size_t)r * sizeof *da);
                for (int k = 0; k < kend; k++) {
                    const tt_real *vk = seq + (size_t)k * 3 * r + 2 * r;
                    const tt_real *w = wt + ((size_t)j * n + k) * d;
                    double *dw = dwt + ((size_t)j * n + k) * d;
                    double t = 0, dt = 0;
                    for (int q = 0; q < r; q++) t += a[q] * vk[q];
                    for (int e = 0; e < d; e++) {
                        dt += (double)dyi[e] * w[e];
                        dw[e] += t * dyi[e];
                    }
                    double *dvk = dseq + (size_t)k * 3 * r + 2 * r;
                    for (int q = 0; q < r; q++) {
                        dvk[q] += dt * a[q];
                        da[q] += dt * vk[q];
                    }
                }
                /* a_q = g_q ((Q+u)_q K_q + (Q+v)_q P_q) */
                double *dqi = dseq + (size_t)i * 3 * r, *dkj = dseq + (size_t)j * 3 * r + r;
                for (int q = 0; q < r; q++) {
                    const double qu = (double)qi[q] + (u ? u[q] : 0.f);
                    double x = qu * kj[q];
                    const double gq = da[q] * g[q];
                    dqi[q] += gq * kj[q];
                    du_acc[q] += gq * kj[q];
                    dkj[q] += gq * qu;
                    if (pj) {
                        const double qv = (double)qi[q] + v[q];
                        x += qv * pj[q];
                        dqi[q] += gq * pj[q];
                        dv_acc[q] += gq * pj[q];
                        dp_acc[(size_t)j * r + q] += gq * qv;
                    }
                    dg_acc[q] += da[q] * x;
                }
            }
        }
        if (dqkv)
            for (size_t e = 0; e < (size_t)n * 3 * r; e++)
                dqkv[(size_t)b * n * 3 * r + e] = (tt_real)dseq[e];
    }
    for (int q = 0; q < r; q++) {
        if (dg) dg[q] += (tt_real)dg_acc[q];
        if (du && u) du[q] += (tt_real)du_acc[q];
        if (dv && v) dv[q] += (tt_real)dv_acc[q];
    }
    if (dp && p)
        for (size_t e = 0; e < (size_t)n * r; e++) dp[e] += (tt_real)dp_acc[e];
    if (dwo)
        for (int e = 0; e < d; e++)
            for (size_t jk = 0; jk < nn; jk++) dwo[(size_t)e * nn + jk] += (tt_real)dwt[jk * d + e];
    free(wt);
    free(a);
    free(da);
    free(dwt);
    free(dseq);
    free(dg_acc);
    free(dp_acc);
    free(du_acc);
    free(dv_acc);
}

double cpu_cross_entropy(tt_real *dlogits, double *nll, const tt_real *logits, const int32_t *targets,
                         int rows, int n, tt_real eps, tt_real scale)
{
    double loss = 0, nll_sum = 0;
    for (int r = 0; r < rows; r++) {
        const tt_real *x = logits + (size_t)r * n;
        double mx = x[0], z = 0, sum = 0;
        for (int i = 1; i < n; i++) mx = x[i] > mx ? x[i] : mx;
        for (int i = 0; i < n; i++) {
            z += exp(x[i] - mx);
            sum += x[i];
        }
        const double lse = mx + log(z);
        const double l = lse - x[targets[r]];
        nll_sum += l;
        loss += (1.0 - eps) * l + eps * (lse - sum / n);
        if (dlogits) {
            tt_real *dx = dlogits + (size_t)r * n;
            for (int i = 0; i < n; i++)
                dx[i] = (tt_real)(scale * (exp(x[i] - lse) - (double)eps / n));
            dx[targets[r]] -= (tt_real)(scale * (1.0 - eps));
        }
    }
    if (nll) *nll = nll_sum;
    return loss;
}
