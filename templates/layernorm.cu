// LayerNorm over rows of TT_D features, forward and backward (post-LN, as in MODEL.md).
// Constants: TT_D features, TT_TPR threads per row (power of two), TT_ROWS rows per block
// (1 when TT_TPR > 32), TT_VPT = ceil(TT_D / TT_TPR) values per thread.
// A thread keeps its TT_VPT values in registers: the row is read from memory once.

#define TT_THREADS (TT_TPR * TT_ROWS)
#define TT_EPS 1e-5f // nn.LayerNorm's default, which the CPU reference and PyTorch use

// Sum over the TT_TPR threads of one row; every one of them gets the result.
__device__ __forceinline__ float tt_row_sum(float v, float *scratch)
{
#if TT_TPR <= 32
    (void)scratch;
    return tt_group_sum<TT_TPR>(v);
#else
    v = tt_group_sum<32>(v);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    __syncthreads(); // scratch may still be read from the previous call
    if (lane == 0) scratch[warp] = v;
    __syncthreads();
    float s = 0.f;
#pragma unroll
    for (int w = 0; w < TT_TPR / 32; w++) s += scratch[w];
    return s;
#endif
}

#ifdef TT_OP_LAYERNORM_FWD
// y = (x - mean) * rstd * gamma + beta; mean and rstd are kept for the backward pass.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ y, float *__restrict__ mean_out, float *__restrict__ rstd_out,
          const TT_T *__restrict__ x, const float *__restrict__ gamma,
          const float *__restrict__ beta, int rows)
{
    __shared__ float scratch[TT_TPR > 32 ? TT_TPR / 32 : 1];
    const int lane = threadIdx.x % TT_TPR;
    const int row = blockIdx.x * TT_ROWS + threadIdx.x / TT_TPR;
    // With TT_TPR > 32 a block is one row, so a block leaves whole and the barriers stay uniform.
    if (row >= rows) return;
    const TT_T *xr = x + (size_t)row * TT_D;

    float v[TT_VPT];
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < TT_VPT; c++) {
        const int i = lane + c * TT_TPR;
        v[c] = (i < TT_D) ? tt_float(xr[i]) : 0.f;
        s += v[c];
    }
    const float mean = tt_row_sum(s, scratch) * (1.f / TT_D);
    float q = 0.f;
#pragma unroll
    for (int c = 0; c < TT_VPT; c++) {
        const int i = lane + c * TT_TPR;
        const float d = (i < TT_D) ? v[c] - mean : 0.f;
        q += d * d;
    }
    const float rstd = rsqrtf(tt_row_sum(q, scratch) * (1.f / TT_D) + TT_EPS);

    TT_T *yr = y + (size_t)row * TT_D;
#pragma unroll
    for (int c = 0; c < TT_VPT; c++) {
        const int i = lane + c * TT_TPR;
        if (i < TT_D) yr[i] = tt_store_as<TT_T>((v[c] - mean) * rstd * gamma[i] + beta[i]);
    }
    if (lane == 0) {
        mean_out[row] = mean;
        rstd_out[row] = rstd;
    }
}
#endif

#ifdef TT_OP_LAYERNORM_BWD
// dx = rstd * (gamma*dy - mean(gamma*dy) - xhat * mean(gamma*dy*xhat)).
// dgamma and dbeta are sums over all rows: each block writes its partial sums to
// part[blockIdx.x][0..D) (dgamma) and part[gridDim.x + blockIdx.x][0..D) (dbeta), and the colsum
// kernel adds the partials up in a fixed order, so the result does not depend on scheduling.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ dx, float *__restrict__ part, const TT_T *__restrict__ dy,
          const TT_T *__restrict__ x, const float *__restrict__ mean_in,
          const float *__restrict__ rstd_in, const float *__restrict__ gamma, int rows)
{
    __shared__ float scratch[TT_TPR > 32 ? TT_TPR / 32 : 1];
#if TT_ROWS > 1
    __shared__ float rowpart[2][TT_ROWS][TT_D];
#endif
    const int lane = threadIdx.x % TT_TPR;
    const int sub = threadIdx.x / TT_TPR;
    float dg[TT_VPT], db[TT_VPT];
#pragma unroll
    for (int c = 0; c < TT_VPT; c++) dg[c] = db[c] = 0.f;

    // Grid-stride over rows: the loop bound is the same for all threads of a row group, and with
    // TT_TPR > 32 (one row per block) for the whole block, so the barriers in tt_row_sum are safe.
    for (int row = blockIdx.x * TT_ROWS + sub; row < rows; row += gridDim.x * TT_ROWS) {
        const TT_T *xr = x + (size_t)row * TT_D;
        const TT_T *dyr = dy + (size_t)row * TT_D;
        const float mean = mean_in[row], rstd = rstd_in[row];
        float xh[TT_VPT], gd[TT_VPT];
        float s1 = 0.f, s2 = 0.f;
#pragma unroll
        for (int c = 0; c < TT_VPT; c++) {
            const int i = lane + c * TT_TPR;
            if (i < TT_D) {
                const float d = tt_float(dyr[i]);
                xh[c] = (tt_float(xr[i]) - mean) * rstd;
                gd[c] = gamma[i] * d;
                dg[c] += d * xh[c];
                db[c] += d;
            } else {
                xh[c] = gd[c] = 0.f;
            }
            s1 += gd[c];
            s2 += gd[c] * xh[c];
        }
        const float m1 = tt_row_sum(s1, scratch) * (1.f / TT_D);
        const float m2 = tt_row_sum(s2, scratch) * (1.f / TT_D);
        TT_T *dxr = dx + (size_t)row * TT_D;
#pragma unroll
        for (int c = 0; c < TT_VPT; c++) {
            const int i = lane + c * TT_TPR;
            if (i < TT_D) dxr[i] = tt_store_as<TT_T>(rstd * (gd[c] - m1 - xh[c] * m2));
        }
    }

    float *pg = part + (size_t)blockIdx.x * TT_D;
    float *pb = part + ((size_t)gridDim.x + blockIdx.x) * TT_D;
#if TT_ROWS > 1
#pragma unroll
    for (int c = 0; c < TT_VPT; c++) {
        const int i = lane + c * TT_TPR;
        if (i < TT_D) {
            rowpart[0][sub][i] = dg[c];
            rowpart[1][sub][i] = db[c];
        }
    }
    __syncthreads();
    for (int i = threadIdx.x; i < TT_D; i += TT_THREADS) {
        float g = 0.f, b = 0.f;
#pragma unroll
        for (int r = 0; r < TT_ROWS; r++) {
            g += rowpart[0][r][i];
            b += rowpart[1][r][i];
        }
        pg[i] = g;
        pb[i] = b;
    }
#else
#pragma unroll
    for (int c = 0; c < TT_VPT; c++) {
        const int i = lane + c * TT_TPR;
        if (i < TT_D) {
            pg[i] = dg[c];
            pb[i] = db[c];
        }
    }
#endif
}
#endif
