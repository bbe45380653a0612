/* Transformer-XL's relative-position attention on the CPU (see cpu_txl.h). The projections and
 * the dropout are cpu_ops' own; what is new here is the score of (query, key) pairs, its softmax
 * over the visible keys and the backward of both. With bf16 (the _as entry points), each value
 * the GPU's bf16 path stores is rounded where gpu/gpu_model.c's txl_attn_fwd and txl_attn_bwd
 * store it; without, the arithmetic is the reference's. */
#include "cpu_txl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cpu_ops.h"
#include "util.h"

void cpu_txl_pos_emb(tt_real *pe, int klen, int d, int clamp_len)
{
    tt_real *pos = tt_xmalloc((size_t)(klen > 0 ? klen : 1) * sizeof *pos);
    for (int p = 0; p < klen; p++) {
        const int x = klen - 1 - p;
        pos[p] = (tt_real)(clamp_len > 0 && x > clamp_len ? clamp_len : x);
    }
    cpu_sinusoid(pe, pos, klen, d);
    free(pos);
}

/* What the forward computes on its way, which the backward needs. */
typedef struct {
    int k, hd;      /* klen = m + n; H*dh */
    tt_real *x;     /* [batch, klen, d] concat(mem, h) per sequence */
    tt_real *qkv;   /* [batch, klen, 3*hd] x Wqkv^T (the q of memory rows is unused, as in kimiyoung) */
    tt_real *r;     /* [klen, hd] pe Wr^T */
    tt_real *prob;  /* [batch, H, n, klen] P, 0 where masked */
    tt_real *pdrop; /* P after dropatt */
    uint8_t *mask;  /* dropatt's decisions */
    tt_real *a;     /* [batch*n, hd] P' v, heads side by side */
} txl_acts;

static void acts_free(txl_acts *t)
{
    free(t->x), free(t->qkv), free(t->r), free(t->prob), free(t->pdrop), free(t->mask), free(t->a);
}

/* n values rounded to bf16 when bf16 is set. */
static void round_bf16(bool bf16, tt_real *x, size_t n)
{
    if (bf16) cpu_round_bf16(x, n);
}

/* The rows of query i of sequence b, head c: q + u and q + v (bf16: stored, as
 * templates/txl.cu's heads_qkv). */
static void biased_query(tt_real *qu, tt_real *qv, const txl_acts *t, cpu_txl_weights w,
                         cpu_txl_shape s, int b, int c, int i, bool bf16)
{
    const tt_real *q = t->qkv + ((size_t)b * t->k + s.m + i) * 3 * t->hd + (size_t)c * s.dhead;
    for (int e = 0; e < s.dhead; e++) {
        qu[e] = q[e] + w.u[(size_t)c * s.dhead + e];
        qv[e] = q[e] + w.v[(size_t)c * s.dhead + e];
    }
    round_bf16(bf16, qu, (size_t)s.dhead);
    round_bf16(bf16, qv, (size_t)s.dhead);
}

/* P' V for query i of sequence b, head c as templates/txl_flash.cu's txl_attn_fwd forms it, into
 * a (dh values): an online softmax over tiles of 64 keys, each tile's exponentials taken from the
 * running maximum after it and rounded to bf16 (dropatt's scale applied) for the product with V,
 * the earlier tiles' sums scaled by the maximum's change, the result over the sum of the unrounded
 * exponentials. sc: the visible keys' scores (0 .. end-1); pr: their P' decisions' scales. */
static void flash_row(tt_real *a, const double *sc, const tt_real *keep, int end, const txl_acts *t,
                      cpu_txl_shape s, int b, int c)
{
    const int dh = s.dhead, hd = t->hd;
    double mrow = -INFINITY, l = 0, *acc = tt_xcalloc((size_t)dh, sizeof *acc);
    for (int j0 = 0; j0 < end; j0 += 64) {
        const int j1 = j0 + 64 < end ? j0 + 64 : end;
        double mx = mrow;
        for (int j = j0; j < j1; j++) mx = sc[j] > mx ? sc[j] : mx;
        const double alpha = mrow == -INFINITY ? 0 : exp(mrow - mx);
        mrow = mx, l *= alpha;
        for (int e = 0; e < dh; e++) acc[e] *= alpha;
        for (int j = j0; j < j1; j++) {
            const double pe = exp(sc[j] - mx);
            l += pe;
            const double pd = cpu_bf16((tt_real)(pe * keep[j]));
            const tt_real *vj = t->qkv + ((size_t)b * t->k + j) * 3 * hd + 2 * hd + (size_t)c * dh;
            for (int e = 0; e < dh; e++) acc[e] += pd * vj[e];
        }
    }
    const tt_real inv = l > 0 ? (tt_real)(1.0 / l) : 0;
    for (int e = 0; e < dh; e++) a[e] = cpu_bf16((tt_real)acc[e] * inv);
    free(acc);
}

/* The scaled scores (q+u).k_j + (q+v).r of query i of sequence b, head c, over its visible keys
 * j = 0 .. i+m into sc; returns their count. qu, qv: scratch of d_head. */
static int row_scores(double *sc, tt_real *qu, tt_real *qv, const txl_acts *t, cpu_txl_weights w,
                      cpu_txl_shape s, int b, int c, int i, bool bf16)
{
    const int n = s.n, k = t->k, dh = s.dhead, hd = t->hd, end = i + s.m + 1;
    const double scale = 1.0 / sqrt((double)dh);
    biased_query(qu, qv, t, w, s, b, c, i, bf16);
    for (int j = 0; j < end; j++) {
        const tt_real *kj = t->qkv + ((size_t)b * k + j) * 3 * hd + hd + (size_t)c * dh;
        const tt_real *rj = t->r + (size_t)(n - 1 - i + j) * hd + (size_t)c * dh;
        sc[j] = (cpu_dot(qu, kj, dh) + cpu_dot(qv, rj, dh)) * scale;
    }
    return end;
}

/* bf16: q, k, v and r stored, P and P' stored from the same fp32 P, P' V stored; the scores
 * AC + BD fp32. Fused (templates/txl_flash.cu): P' V as flash_row forms it; P fp32 (the backward
 * forms it again from the scores and the row's log-sum-exp), P' stored as the backward's product
 * dV = P'^T dO reads it. */
static void txl_forward(txl_acts *t, const tt_real *h, const tt_real *mem, const tt_real *pe,
                        cpu_txl_weights w, cpu_txl_shape s, cpu_txl_round rd)
{
    const bool bf16 = rd != CPU_TXL_EXACT, fused = rd == CPU_TXL_BF16_FUSED;
    const int n = s.n, m = s.m, k = m + n, d = s.d, dh = s.dhead, hd = s.heads * dh;
    const size_t rows = (size_t)s.batch * k, nprob = (size_t)s.batch * s.heads * n * k;
    t->k = k, t->hd = hd;
    t->x = tt_xmalloc(rows * d * sizeof *t->x);
    t->qkv = tt_xmalloc(rows * 3 * hd * sizeof *t->qkv);
    t->r = tt_xmalloc((size_t)k * hd * sizeof *t->r);
    t->prob = tt_xcalloc(nprob, sizeof *t->prob);
    t->pdrop = tt_xmalloc(nprob * sizeof *t->pdrop);
    t->mask = tt_xmalloc(nprob);
    t->a = tt_xmalloc((size_t)s.batch * n * hd * sizeof *t->a);
    for (int b = 0; b < s.batch; b++) {
        tt_real *xb = t->x + (size_t)b * k * d;
        if (m) memcpy(xb, mem + (size_t)b * m * d, (size_t)m * d * sizeof *xb);
        memcpy(xb + (size_t)m * d, h + (size_t)b * n * d, (size_t)n * d * sizeof *xb);
    }
    cpu_linear_fwd(t->qkv, t->x, w.wqkv, NULL, (int)rows, d, 3 * hd);
    cpu_linear_fwd(t->r, pe, w.wr, NULL, k, d, hd);
    round_bf16(bf16, t->qkv, rows * 3 * hd);
    round_bf16(bf16, t->r, (size_t)k * hd);

    tt_real *qu = tt_xmalloc((size_t)dh * sizeof *qu), *qv = tt_xmalloc((size_t)dh * sizeof *qv);
    double *sc = tt_xmalloc((size_t)k * sizeof *sc);
    for (int b = 0; b < s.batch; b++)
        for (int c = 0; c < s.heads; c++)
            for (int i = 0; i < n; i++) {
                const int end = row_scores(sc, qu, qv, t, w, s, b, c, i, bf16);
                double mx = -INFINITY, z = 0;
                for (int j = 0; j < end; j++) mx = sc[j] > mx ? sc[j] : mx;
                for (int j = 0; j < end; j++) z += sc[j] = exp(sc[j] - mx);
                tt_real *pr = t->prob + (((size_t)b * s.heads + c) * n + i) * k;
                for (int j = 0; j < end; j++) pr[j] = (tt_real)(sc[j] / z);
            }
    cpu_dropout_fwd_at(t->pdrop, t->mask, t->prob, (long)nprob, s.dropatt, s.seed, s.stream,
                       s.first);
    round_bf16(bf16 && !fused, t->prob, nprob);
    round_bf16(bf16, t->pdrop, nprob);
    if (fused) {
        /* the scores again (they were overwritten by their exponentials), and each row's keep */
        tt_real *keep = tt_xmalloc((size_t)k * sizeof *keep);
        const tt_real kscale = s.dropatt > 0 ? 1 / (1 - s.dropatt) : 1;
        for (int b = 0; b < s.batch; b++)
            for (int c = 0; c < s.heads; c++)
                for (int i = 0; i < n; i++) {
                    const int end = row_scores(sc, qu, qv, t, w, s, b, c, i, bf16);
                    const size_t row = (((size_t)b * s.heads + c) * n + i) * k;
                    for (int j = 0; j < end; j++)
                        keep[j] = s.dropatt > 0 && !t->mask[row + j] ? 0 : kscale;
                    flash_row(t->a + ((size_t)b * n + i) * hd + (size_t)c * dh, sc, keep, end, t, s,
                              b, c);
                }
        free(keep), free(sc), free(qu), free(qv);
        return;
    }

    double *acc = tt_xmalloc((size_t)dh * sizeof *acc);
    for (int b = 0; b < s.batch; b++)
        for (int c = 0; c < s.heads; c++)
            for (int i = 0; i < n; i++) {
                const tt_real *pr = t->pdrop + (((size_t)b * s.heads + c) * n + i) * k;
                memset(acc, 0, (size_t)dh * sizeof *acc);
                for (int j = 0; j < i + m + 1; j++) {
                    const tt_real *vj = t->qkv + ((size_t)b * k + j) * 3 * hd + 2 * hd + (size_t)c * dh;
                    for (int e = 0; e < dh; e++) acc[e] += (double)pr[j] * vj[e];
                }
                tt_real *ai = t->a + ((size_t)b * n + i) * hd + (size_t)c * dh;
                for (int e = 0; e < dh; e++) ai[e] = (tt_real)acc[e];
                round_bf16(bf16, ai, (size_t)dh);
            }
    free(sc), free(acc), free(qu), free(qv);
}

void cpu_txl_attn_fwd_as(tt_real *out, const tt_real *h, const tt_real *mem, const tt_real *pe,
                         cpu_txl_weights w, cpu_txl_shape s, cpu_txl_round rd)
{
    txl_acts t;
    txl_forward(&t, h, mem, pe, w, s, rd);
    cpu_linear_fwd(out, t.a, w.wo, NULL, s.batch * s.n, t.hd, s.d);
    round_bf16(rd != CPU_TXL_EXACT, out, (size_t)s.batch * s.n * s.d);
    acts_free(&t);
}

void cpu_txl_attn_fwd(tt_real *out, const tt_real *h, const tt_real *mem, const tt_real *pe,
                      cpu_txl_weights w, cpu_txl_shape s)
{
    cpu_txl_attn_fwd_as(out, h, mem, pe, w, s, CPU_TXL_EXACT);
}

/* bf16: d(P' V) stored, dP' fp32, dV stored, dS stored (AC's and BD's gradients alike), d(q+u)
 * and d(q+v) stored apart (their sums over rows are du and dv) and dq = their sum stored, dK and
 * dR stored. Fused (templates/txl_flash.cu): dS = P (dP' - D) with P fp32 and D = d(P' V) . P' V
 * as stored; d(q+u) and d(q+v) fp32 (du, dv their sums), dq their sum stored. */
void cpu_txl_attn_bwd_as(tt_real *dh, cpu_txl_grads g, const tt_real *dout, const tt_real *h,
                         const tt_real *mem, const tt_real *pe, cpu_txl_weights w, cpu_txl_shape s,
                         cpu_txl_round rd)
{
    const bool bf16 = rd != CPU_TXL_EXACT, fused = rd == CPU_TXL_BF16_FUSED;
    txl_acts t;
    txl_forward(&t, h, mem, pe, w, s, rd);
    const int n = s.n, m = s.m, k = t.k, d = s.d, dhd = s.dhead, hd = t.hd;
    const size_t rows = (size_t)s.batch * k, nprob = (size_t)s.batch * s.heads * n * k;
    const double scale = 1.0 / sqrt((double)dhd);

    /* out = a Wo^T */
    tt_real *da = tt_xmalloc((size_t)s.batch * n * hd * sizeof *da);
    cpu_linear_bwd(da, g.wo, NULL, dout, t.a, w.wo, s.batch * n, hd, d);
    round_bf16(bf16, da, (size_t)s.batch * n * hd);

    /* a_i = sum_j P'[i,j] v_j: dP' and the gradient of v (the third part of qkv) */
    double *dqkv = tt_xcalloc(rows * 3 * hd, sizeof *dqkv);
    tt_real *dprob = tt_xcalloc(nprob, sizeof *dprob);
    for (int b = 0; b < s.batch; b++)
        for (int c = 0; c < s.heads; c++)
            for (int i = 0; i < n; i++) {
                const size_t row = (((size_t)b * s.heads + c) * n + i) * k;
                const tt_real *dai = da + ((size_t)b * n + i) * hd + (size_t)c * dhd;
                for (int j = 0; j < i + m + 1; j++) {
                    const size_t vo = ((size_t)b * k + j) * 3 * hd + 2 * hd + (size_t)c * dhd;
                    dprob[row + j] = (tt_real)cpu_dot(dai, t.qkv + vo, dhd);
                    for (int e = 0; e < dhd; e++) dqkv[vo + e] += (double)t.pdrop[row + j] * dai[e];
                }
            }
    cpu_dropout_bwd(dprob, dprob, t.mask, (long)nprob, s.dropatt);

    /* softmax, then S = ((q+u).k + (q+v).r) * scale */
    double *dr = tt_xcalloc((size_t)k * hd, sizeof *dr);
    double *du = tt_xcalloc((size_t)hd, sizeof *du), *dv = tt_xcalloc((size_t)hd, sizeof *dv);
    double *dquv = tt_xmalloc((size_t)2 * dhd * sizeof *dquv); /* bf16: d(q+u), d(q+v) of a query */
    tt_real *qu = tt_xmalloc((size_t)dhd * sizeof *qu), *qv = tt_xmalloc((size_t)dhd * sizeof *qv);
    for (int b = 0; b < s.batch; b++)
        for (int c = 0; c < s.heads; c++)
            for (int i = 0; i < n; i++) {
                const size_t row = (((size_t)b * s.heads + c) * n + i) * k;
                const tt_real *pr = t.prob + row, *dp = dprob + row;
                const int end = i + m + 1;
                double dot = 0;
                if (fused) {
                    const tt_real *dai = da + ((size_t)b * n + i) * hd + (size_t)c * dhd;
                    dot = cpu_dot(dai, t.a + ((size_t)b * n + i) * hd + (size_t)c * dhd, dhd);
                } else {
                    for (int j = 0; j < end; j++) dot += (double)pr[j] * dp[j];
                }
                biased_query(qu, qv, &t, w, s, b, c, i, bf16);
                double *dq = dqkv + ((size_t)b * k + m + i) * 3 * hd + (size_t)c * dhd;
                memset(dquv, 0, (size_t)2 * dhd * sizeof *dquv);
                for (int j = 0; j < end; j++) {
                    double ds = pr[j] * (dp[j] - dot) * scale;
                    if (bf16) ds = cpu_bf16((tt_real)ds);
                    if (ds == 0.0) continue;
                    const size_t ko = ((size_t)b * k + j) * 3 * hd + hd + (size_t)c * dhd;
                    const size_t ro = (size_t)(n - 1 - i + j) * hd + (size_t)c * dhd;
                    for (int e = 0; e < dhd; e++) {
                        const double kj = t.qkv[ko + e], rj = t.r[ro + e];
                        dquv[e] += ds * kj;
                        dquv[dhd + e] += ds * rj;
                        dqkv[ko + e] += ds * qu[e];
                        dr[ro + e] += ds * qv[e];
                    }
                }
                /* templates/txl.cu at bf16: du, dv sum the stored rows; dq = their sum stored
                 * (txl_flash.cu: du, dv sum the fp32 rows) */
                for (int e = 0; e < dhd; e++) {
                    double qu_e = dquv[e], qv_e = dquv[dhd + e];
                    if (bf16 && !fused) qu_e = cpu_bf16((tt_real)qu_e), qv_e = cpu_bf16((tt_real)qv_e);
                    du[(size_t)c * dhd + e] += qu_e;
                    dv[(size_t)c * dhd + e] += qv_e;
                    dq[e] = bf16 ? cpu_bf16((tt_real)(qu_e + qv_e)) : dq[e] + qu_e + qv_e;
                    if (g.uv_terms) g.uv_terms[0] += qu_e * qu_e, g.uv_terms[1] += qv_e * qv_e;
                }
            }

    /* the projections: qkv = x Wqkv^T, r = pe Wr^T; dh is the current rows of dx */
    tt_real *dqkv_r = tt_xmalloc(rows * 3 * hd * sizeof *dqkv_r);
    for (size_t e = 0; e < rows * 3 * hd; e++) dqkv_r[e] = (tt_real)dqkv[e];
    round_bf16(bf16, dqkv_r, rows * 3 * hd);
    tt_real *dx = dh ? tt_xmalloc(rows * d * sizeof *dx) : NULL;
    cpu_linear_bwd(dx, g.wqkv, NULL, dqkv_r, t.x, w.wqkv, (int)rows, d, 3 * hd);
    if (dh)
        for (int b = 0; b < s.batch; b++)
            memcpy(dh + (size_t)b * n * d, dx + ((size_t)b * k + m) * d, (size_t)n * d * sizeof *dh);
    if (g.wr) {
        tt_real *dr_r = tt_xmalloc((size_t)k * hd * sizeof *dr_r);
        for (size_t e = 0; e < (size_t)k * hd; e++) dr_r[e] = (tt_real)dr[e];
        round_bf16(bf16, dr_r, (size_t)k * hd);
        cpu_linear_bwd(NULL, g.wr, NULL, dr_r, pe, w.wr, k, d, hd);
        free(dr_r);
    }
    for (int e = 0; e < hd; e++) {
        if (g.u) g.u[e] += (tt_real)du[e];
        if (g.v) g.v[e] += (tt_real)dv[e];
    }
    free(da), free(dqkv), free(dprob), free(dr), free(du), free(dv), free(dquv), free(qu), free(qv);
    free(dqkv_r), free(dx);
    acts_free(&t);
}

void cpu_txl_attn_bwd(tt_real *dh, cpu_txl_grads g, const tt_real *dout, const tt_real *h,
                      const tt_real *mem, const tt_real *pe, cpu_txl_weights w, cpu_txl_shape s)
{
    cpu_txl_attn_bwd_as(dh, g, dout, h, mem, pe, w, s, CPU_TXL_EXACT);
}

/* Row element t of BD's row of k columns, 0 past it (only a planted shift reaches past). */
static double txl_bd_at(const tt_real *row, int t, int k) { return t < k ? (double)row[t] : 0.0; }

void cpu_txl_probs(tt_real *prob, const tt_real *ac, const tt_real *bd, int rows, int n, int m,
                   tt_real scale)
{
    const int k = m + n;
    /* the errors a test may plant (cpu_plant): the mask a key late, the shift a column late */
    const int ahead = cpu_planted() == CPU_PLANT_MASK_AHEAD, late = cpu_planted() == CPU_PLANT_TXL_SHIFT;
    for (int r = 0; r < rows; r++) {
        const int i = r % n, end = m + i + 1 + ahead < k ? m + i + 1 + ahead : k, t0 = n - 1 - i + late;
        const tt_real *a = ac + (size_t)r * k, *b = bd + (size_t)r * k;
        tt_real *p = prob + (size_t)r * k;
        double mx = -INFINITY, z = 0;
        for (int j = 0; j < end; j++) {
            const double x = ((double)a[j] + txl_bd_at(b, t0 + j, k)) * scale;
            mx = x > mx ? x : mx;
        }
        for (int j = 0; j < end; j++) z += exp(((double)a[j] + txl_bd_at(b, t0 + j, k)) * scale - mx);
        for (int j = 0; j < end; j++)
            p[j] = (tt_real)(exp(((double)a[j] + txl_bd_at(b, t0 + j, k)) * scale - mx) / z);
        for (int j = end; j < k; j++) p[j] = 0;
    }
}

void cpu_txl_probs_bwd(tt_real *dac, tt_real *dbd, const tt_real *prob, const tt_real *dprob,
                       int rows, int n, int m, tt_real scale)
{
    const int k = m + n;
    memset(dac, 0, (size_t)rows * k * sizeof *dac);
    memset(dbd, 0, (size_t)rows * k * sizeof *dbd);
    for (int r = 0; r < rows; r++) {
        const int i = r % n, end = m + i + 1;
        const tt_real *p = prob + (size_t)r * k, *dp = dprob + (size_t)r * k;
        double dot = 0;
        for (int j = 0; j < end; j++) dot += (double)p[j] * dp[j];
        for (int j = 0; j < end; j++) {
            const tt_real ds = (tt_real)(p[j] * (dp[j] - dot) * scale);
            dac[(size_t)r * k + j] = ds;
            dbd[(size_t)r * k + n - 1 - i + j] = ds;
        }
    }
}
