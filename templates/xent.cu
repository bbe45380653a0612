// Softmax cross-entropy over full rows of logits [rows, v] of the storage type TT_T (v up to the
// whole vocabulary), in fp32 arithmetic, with label smoothing eps and a weight per row, as
// cpu_cross_entropy defines it:
//   nll_r  = lse - x[target]                       lse = log sum_i exp(x_i)
//   loss_r = (1 - eps) * nll_r + eps * (lse - mean_i x_i)
// loss[r] and nll[r] are written multiplied by the row's weight (a plain sum is then the weighted
// total); with grad, the row is overwritten by its gradient (rounded to TT_T: what the products
// read next)
//   dlogits = scale * weight * (softmax - (1 - eps) * onehot(target) - eps / v).
// A row of weight 0 (outside an evaluation window) is not read: 0 loss, and a zero gradient. A
// target outside [0, v) gives a NaN loss.
// xent_sum adds the per-row values in a fixed order (double), for a deterministic total.
// Constants: TT_THREADS per block; TT_XV logits a vector (8 whatever the type: 16 bytes of bf16,
// 32 of fp32, so that the sums are grouped alike and a bf16 row's gradient is the fp32
// instance's rounded, bit for bit, as a unit test holds them); TT_ROWCAP, the vectors of a row
// the block keeps in (dynamic) shared memory between its two passes: a row up to TT_ROWCAP
// vectors is read once and written once, a longer one has the rest read again. The launch gives
// the block the shared memory of min(v / TT_XV, TT_ROWCAP) vectors.
// Tunable (ttgen --tune; the plan's heuristic otherwise): the threads of a row's block (more read
// it with more loads in flight; fewer let more rows share an SM).
// ttgen: tunable xent THREADS 256 512 1024

#define TT_WARPS (TT_THREADS / 32)
#define TT_XUNROLL 4 // vectors a thread has in flight in the first pass

// e^x as 2^(x log2 e) on the special-function unit (ex2.approx: 2 ulp, and x log2 e rounded: a
// relative error of about |x| 1e-7; for the logits' |x - max| < 30, under 4e-6; the vector loops'
// fma(x, log2 e, -(m log2 e)) errs as little), two instructions instead of expf's dozen: the
// kernel is bound by its instructions, not by memory (an H200 ran the wt103 head's row at the
// same speed read once as read twice), so each element's are counted.
#define TT_LOG2E 1.4426950408889634f
__device__ __forceinline__ float tt_fexp2(float x) // 2^x
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}
__device__ __forceinline__ float tt_fexp(float x) { return tt_fexp2(x * TT_LOG2E); }

// (m, s) stands for s * exp(m): a running maximum and the sum of exp(x - m) below it.
__device__ __forceinline__ void tt_lse_add(float &m, float &s, float m2, float s2)
{
    const float mx = fmaxf(m, m2);
    // an empty side (m = -inf) adds nothing; exp(-inf - -inf) would be NaN
    s = (m == TT_NEG_INF ? 0.f : s * tt_fexp(m - mx)) + (m2 == TT_NEG_INF ? 0.f : s2 * tt_fexp(m2 - mx));
    m = mx;
}

#ifdef TT_OP_XENT
typedef tt_vec<TT_T, TT_XV> tt_xvec;

extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(float *__restrict__ loss, float *__restrict__ nll, TT_T *__restrict__ logits,
          const int *__restrict__ targets, const float *__restrict__ weight, int v, int ld,
          float eps, float scale, int grad)
{
    tt_pdl_begin();
    __shared__ float wm[TT_WARPS], ws[TT_WARPS], wsum[TT_WARPS];
    static_assert(sizeof wm + sizeof ws + sizeof wsum == TT_SMEM, "the shared memory the plan counted is what the block declares");
    extern __shared__ tt_xvec kept[]; // TT_ROWCAP vectors: the row's first ones, between the passes
    const int row = blockIdx.x, lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    TT_T *x = logits + (size_t)row * ld; // rows ld >= v apart (a stride the products can align)
    const float w = weight ? weight[row] : 1.f;
    const int t = targets[row];
    if (w == 0.f) {
        if (threadIdx.x == 0) loss[row] = nll[row] = 0.f;
        if (grad)
            for (int i = threadIdx.x; i < v; i += TT_THREADS) x[i] = tt_store_as<TT_T>(0.f);
        return;
    }
    // Vector accesses when every row starts aligned to them (a slice of a buffer may not): the
    // row's first v / TT_XV * TT_XV logits so, the last v % TT_XV by threads 0 .. v % TT_XV - 1.
    // Thread j handles vectors j, j + TT_THREADS, ... in both passes, so that it reads back from
    // shared memory only what it wrote itself.
    const bool vec = ld % TT_XV == 0 && ((unsigned long long)logits % sizeof(tt_xvec)) == 0;
    const int nv = v / TT_XV, rest = threadIdx.x < v % TT_XV ? nv * TT_XV + threadIdx.x : -1;
    const int cap = nv < TT_ROWCAP ? nv : TT_ROWCAP;
    const float xt = (t >= 0 && t < v) ? tt_float(x[t]) : __int_as_float(0x7fffffff);
    const tt_xvec *xv = reinterpret_cast<const tt_xvec *>(x);

    // Pass 1: each thread's running (max, sum of exp) and plain sum (for the smoothing alone),
    // then the block's. In the vector loops exp(x - mx) is 2^(x log2 e - mx log2 e), one fused
    // multiply-add and the special-function unit's 2^x an element.
    const bool smoothing = eps != 0.f;
    float m = TT_NEG_INF, s = 0.f, sum = 0.f;
    if (vec) {
        for (int i0 = threadIdx.x; i0 < nv; i0 += TT_XUNROLL * TT_THREADS) {
            tt_xvec q[TT_XUNROLL];
#pragma unroll
            for (int u = 0; u < TT_XUNROLL; u++) // the loads first: in flight together
                if (i0 + u * TT_THREADS < nv) q[u] = xv[i0 + u * TT_THREADS];
#pragma unroll
            for (int u = 0; u < TT_XUNROLL; u++) {
                const int i = i0 + u * TT_THREADS;
                if (i >= nv) break;
                if (i < cap) kept[i] = q[u];
                float f[TT_XV], mq = TT_NEG_INF;
#pragma unroll
                for (int e = 0; e < TT_XV; e++) {
                    f[e] = tt_float(q[u].v[e]);
                    mq = fmaxf(mq, f[e]);
                }
                const float mx = fmaxf(m, mq), mxl = mx * TT_LOG2E;
                float se = 0.f;
#pragma unroll
                for (int e = 0; e < TT_XV; e++) se += tt_fexp2(fmaf(f[e], TT_LOG2E, -mxl));
                s = s * tt_fexp(m - mx) + se;
                m = mx;
                if (smoothing) {
                    float sx = 0.f;
#pragma unroll
                    for (int e = 0; e < TT_XV; e++) sx += f[e];
                    sum += sx;
                }
            }
        }
        if (rest >= 0) {
            const float xi = tt_float(x[rest]), mx = fmaxf(m, xi);
            s = s * tt_fexp(m - mx) + tt_fexp(xi - mx);
            m = mx;
            sum += xi;
        }
    } else {
        for (int i = threadIdx.x; i < v; i += TT_THREADS) {
            const float xi = tt_float(x[i]);
            const float mx = fmaxf(m, xi);
            s = s * tt_fexp(m - mx) + tt_fexp(xi - mx);
            m = mx;
            sum += xi;
        }
    }
    if (m == TT_NEG_INF) s = 0.f; // no element here (v < threads): keep (-inf, 0) exact
#pragma unroll
    for (int o = 16; o > 0; o /= 2)
        tt_lse_add(m, s, __shfl_xor_sync(0xffffffffu, m, o), __shfl_xor_sync(0xffffffffu, s, o));
    sum = tt_group_sum<32>(sum);
    if (lane == 0) {
        wm[warp] = m;
        ws[warp] = s;
        wsum[warp] = sum;
    }
    __syncthreads();
    m = wm[0], s = ws[0], sum = wsum[0];
    for (int k = 1; k < TT_WARPS; k++) {
        tt_lse_add(m, s, wm[k], ws[k]);
        sum += wsum[k];
    }
    const float lse = m + logf(s);
    if (threadIdx.x == 0) {
        const float l = lse - xt;
        nll[row] = w * l;
        loss[row] = w * ((1.f - eps) * l + eps * (lse - sum / v));
    }
    if (!grad) return;

    // Pass 2: the gradient, over the logits it replaces (x[t] was read above, before any write).
    // In the vector loop c (e^(x - lse) - eps / v) as two fused multiply-adds and 2^x, the
    // target's own term subtracted by the thread whose vector holds it.
    const float c = scale * w, smooth = eps / v;
    if (vec) {
        const float lsel = lse * TT_LOG2E, cs = c * smooth, ct = c * (1.f - eps);
        tt_xvec *yv = reinterpret_cast<tt_xvec *>(x);
        for (int i = threadIdx.x; i < nv; i += TT_THREADS) {
            const tt_xvec q = i < cap ? kept[i] : xv[i];
            float d[TT_XV];
#pragma unroll
            for (int e = 0; e < TT_XV; e++) d[e] = fmaf(c, tt_fexp2(fmaf(tt_float(q.v[e]), TT_LOG2E, -lsel)), -cs);
            const int te = t - i * TT_XV;
            if ((unsigned)te < (unsigned)TT_XV) {
#pragma unroll
                for (int e = 0; e < TT_XV; e++)
                    if (e == te) d[e] -= ct;
            }
            tt_store<TT_XV>(&yv[i].v[0], d);
        }
        if (rest >= 0) {
            float d = c * (tt_fexp(tt_float(x[rest]) - lse) - smooth);
            if (rest == t) d -= ct;
            x[rest] = tt_store_as<TT_T>(d);
        }
    } else {
        for (int i = threadIdx.x; i < v; i += TT_THREADS) {
            float d = c * (tt_fexp(tt_float(x[i]) - lse) - smooth);
            if (i == t) d -= c * (1.f - eps);
            x[i] = tt_store_as<TT_T>(d);
        }
    }
}
#endif

#ifdef TT_OP_XENT_SUM
// out[0] = sum of loss, out[1] = sum of nll, over rows, in double and in an order fixed by
// TT_THREADS alone. One block.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(double *__restrict__ out, const float *__restrict__ loss, const float *__restrict__ nll,
          int rows)
{
    tt_pdl_begin();
    __shared__ double scratch[32];
    static_assert(sizeof scratch == TT_SMEM, "the shared memory the plan counted is what the block declares");
    double a = 0, b = 0;
    for (int r = threadIdx.x; r < rows; r += TT_THREADS) {
        a += loss[r];
        b += nll[r];
    }
    a = tt_block_sum(a, scratch);
    b = tt_block_sum(b, scratch);
    if (threadIdx.x == 0) {
        out[0] = a;
        out[1] = b;
    }
}
#endif
