// The core of multi-linear attention (MODEL.md section 1): g = (1/h) sum_c softmax(theta_c),
// theta [TT_H, TT_R] (h cores of rank R), and its backward
//   dtheta[c, i] += s_c,i (dg_i - sum_k dg_k s_c,k) / h,      s_c = softmax(theta_c)
// (added into, as every parameter gradient). One small block a layer (the trainer runs every
// layer's core in one launch: the cores are parameters, fixed through a step): block x's theta,
// g, dg and dtheta are x strides from the first layer's. Warp w handles cores w, w + warps..,
// and the mean over cores is taken in core order, so the result is deterministic.
// Constants: TT_H cores, TT_R rank, TT_THREADS (a multiple of 32).
// Tunable: nothing (ttgen --tune): one block of h warps over h x R values, a launch's cost.

#define TT_WARPS (TT_THREADS / 32)

__device__ __forceinline__ float tt_warp_max(float v)
{
#pragma unroll
    for (int o = 16; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
    return v;
}

// The maximum of theta_c and the softmax's normalizer sum_i exp(theta_c,i - max), in every lane.
__device__ __forceinline__ void tt_softmax_stats(const float *th, int lane, float &mx, float &z)
{
    mx = TT_NEG_INF;
    for (int i = lane; i < TT_R; i += 32) mx = fmaxf(mx, th[i]);
    mx = tt_warp_max(mx);
    z = 0.f;
    for (int i = lane; i < TT_R; i += 32) z += expf(th[i] - mx);
    z = tt_group_sum<32>(z);
}

#ifdef TT_OP_CORE_FWD
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(float *__restrict__ g, const float *__restrict__ theta, long long g_stride,
          long long theta_stride)
{
    tt_pdl_begin();
    g += blockIdx.x * g_stride;
    theta += blockIdx.x * theta_stride;
    __shared__ float s[TT_H][TT_R];
    static_assert(sizeof s == TT_SMEM, "the shared memory the plan counted is what the block declares");
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int c = warp; c < TT_H; c += TT_WARPS) {
        const float *th = theta + c * TT_R;
        float mx, z;
        tt_softmax_stats(th, lane, mx, z);
        for (int i = lane; i < TT_R; i += 32) s[c][i] = expf(th[i] - mx) / z;
    }
    __syncthreads();
    for (int i = threadIdx.x; i < TT_R; i += TT_THREADS) {
        float acc = 0.f;
        for (int c = 0; c < TT_H; c++) acc += s[c][i];
        g[i] = acc / TT_H;
    }
}
#endif

#ifdef TT_OP_CORE_BWD
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(float *__restrict__ dtheta, const float *__restrict__ dg, const float *__restrict__ theta,
          long long g_stride, long long theta_stride)
{
    tt_pdl_begin();
    dtheta += blockIdx.x * theta_stride;
    dg += blockIdx.x * g_stride;
    theta += blockIdx.x * theta_stride;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int c = warp; c < TT_H; c += TT_WARPS) {
        const float *th = theta + c * TT_R;
        float mx, z;
        tt_softmax_stats(th, lane, mx, z);
        float dot = 0.f;
        for (int i = lane; i < TT_R; i += 32) dot += dg[i] * (expf(th[i] - mx) / z);
        dot = tt_group_sum<32>(dot);
        for (int i = lane; i < TT_R; i += 32) {
            const float si = expf(th[i] - mx) / z;
            dtheta[c * TT_R + i] += si * (dg[i] - dot) / TT_H;
        }
    }
}
#endif
