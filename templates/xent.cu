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
// Constants: TT_THREADS per block.
// Tunable (ttgen --tune; the plan's heuristic otherwise): the threads of a row's block (fewer
// keep more of the row in registers; more read it with more loads in flight).
// ttgen: tunable xent THREADS 256 512 1024

#define TT_WARPS (TT_THREADS / 32)
// e^x as 2^(x log2 e) on the special-function unit (ex2.approx: 2 ulp, and x log2 e rounded: a
// relative error of about |x| 1e-7; for the logits' |x - max| < 30, under 4e-6), two
// instructions instead of expf's dozen: the kernel is bound by them, not by memory, otherwise.
__device__ __forceinline__ float tt_fexp(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x * 1.4426950408889634f));
    return y;
}

// (m, s) stands for s * exp(m): a running maximum and the sum of exp(x - m) below it.
__device__ __forceinline__ void tt_lse_add(float &m, float &s, float m2, float s2)
{
    const float mx = fmaxf(m, m2);
    // an empty side (m = -inf) adds nothing; exp(-inf - -inf) would be NaN
    s = (m == TT_NEG_INF ? 0.f : s * tt_fexp(m - mx)) + (m2 == TT_NEG_INF ? 0.f : s2 * tt_fexp(m2 - mx));
    m = mx;
}

#ifdef TT_OP_XENT
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(float *__restrict__ loss, float *__restrict__ nll, TT_T *__restrict__ logits,
          const int *__restrict__ targets, const float *__restrict__ weight, int v, int ld,
          float eps, float scale, int grad)
{
    tt_pdl_begin();
    __shared__ float wm[TT_WARPS], ws[TT_WARPS], wsum[TT_WARPS];
    static_assert(sizeof wm + sizeof ws + sizeof wsum == TT_SMEM, "the shared memory the plan counted is what the block declares");
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
    // Vector accesses of 4 logits (16 bytes of fp32, 8 of bf16) when every row starts aligned to
    // them (a slice of a buffer may not): the row's first v / 4 * 4 logits so, the last v % 4 by
    // threads 0 .. v % 4 - 1
    const bool vec4 = ld % 4 == 0 && ((unsigned long long)logits % (4 * sizeof(TT_T))) == 0;
    const int n4 = v / 4, rest = threadIdx.x < v % 4 ? n4 * 4 + threadIdx.x : -1;
    const float xt = (t >= 0 && t < v) ? tt_float(x[t]) : __int_as_float(0x7fffffff);
    auto load4 = [&](const int i) { // logits 4i .. 4i + 3
        float q[4];
        tt_load<4>(q, x + 4 * (size_t)i);
        return make_float4(q[0], q[1], q[2], q[3]);
    };

    // Pass 1: each thread's running (max, sum of exp) and plain sum, then the block's.
    float m = TT_NEG_INF, s = 0.f, sum = 0.f;
    float4 keep[TT_CACHE]; // the thread's first TT_CACHE vectors, for pass 2
    if (vec4) {
        auto add = [&](const float4 q) {
            const float mq = fmaxf(fmaxf(q.x, q.y), fmaxf(q.z, q.w));
            const float mx = fmaxf(m, mq);
            s = s * tt_fexp(m - mx) + tt_fexp(q.x - mx) + tt_fexp(q.y - mx) + tt_fexp(q.z - mx) + tt_fexp(q.w - mx);
            m = mx;
            sum += (q.x + q.y) + (q.z + q.w);
        };
#pragma unroll
        for (int c = 0; c < TT_CACHE; c++) { // all loads first: in flight together
            const int i = threadIdx.x + c * TT_THREADS;
            if (i < n4) keep[c] = load4(i);
        }
#pragma unroll
        for (int c = 0; c < TT_CACHE; c++)
            if (threadIdx.x + c * TT_THREADS < n4) add(keep[c]);
#pragma unroll 2
        for (int i = threadIdx.x + TT_CACHE * TT_THREADS; i < n4; i += TT_THREADS) add(load4(i));
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
    const float c = scale * w, smooth = eps / v;
    if (vec4) {
        auto grad4 = [&](const int i, float4 q) {
            q.x = c * (tt_fexp(q.x - lse) - smooth);
            q.y = c * (tt_fexp(q.y - lse) - smooth);
            q.z = c * (tt_fexp(q.z - lse) - smooth);
            q.w = c * (tt_fexp(q.w - lse) - smooth);
            if (i == t / 4) {
                const float d = c * (1.f - eps);
                if (t % 4 == 0) q.x -= d;
                if (t % 4 == 1) q.y -= d;
                if (t % 4 == 2) q.z -= d;
                if (t % 4 == 3) q.w -= d;
            }
            const float qs[4] = {q.x, q.y, q.z, q.w};
            tt_store<4>(x + 4 * (size_t)i, qs);
        };
#pragma unroll
        for (int cc = 0; cc < TT_CACHE; cc++) { // from registers
            const int i = threadIdx.x + cc * TT_THREADS;
            if (i < n4) grad4(i, keep[cc]);
        }
        for (int i = threadIdx.x + TT_CACHE * TT_THREADS; i < n4; i += TT_THREADS) grad4(i, load4(i));
        if (rest >= 0) {
            float d = c * (tt_fexp(tt_float(x[rest]) - lse) - smooth);
            if (rest == t) d -= c * (1.f - eps);
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
