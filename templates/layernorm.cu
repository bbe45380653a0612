// ttgen: needs mla_geom.cuh
// LayerNorm over rows of TT_D features, forward and backward (post-LN, as in MODEL.md), plain or
// fused with the residual sum in front of it: s = x + dropout(y), out = LayerNorm(s).
// Constants: TT_D features, TT_TPR threads per row (power of two), TT_ROWS rows per block
// (1 when TT_TPR > 32), TT_VEC features a vector (a power of two that divides TT_D; the plan's:
// 16 bytes where the row has enough of them for the threads and a thread holds at most 16
// values, else 1), TT_VPT values per thread (whole vectors).
// A thread keeps its TT_VPT values in registers: the row is read from memory once, in vectors
// (at wt103's D 256 the step's LayerNorms went from 0.220 to 0.200 ms on an H100). The w-th vector of
// lane holds features (lane + w TT_TPR) TT_VEC on: a thread's value c = w TT_VEC + e is feature
// tt_ln_feat(lane, c), and a vector past the row (TT_D / TT_VEC vectors) holds zeros.
// The residual kernels' rows are ld elements apart (a pitch of whole 16-byte groups, so that the
// products around them stay aligned: Transformer-XL's D 410 in rows of 416); the columns from
// TT_D on are neither read nor written, and a dropout draw is numbered row * TT_D + i whatever
// the pitch, as the CPU numbers it.
// Tunable (ttgen --tune; the plan's heuristic otherwise): threads a row and rows per block (a
// warp a row only) of the fused residual kernels (residual_ln_bwd's also set layernorm_bwd's:
// they write the same partials).
// ttgen: tunable residual_ln_fwd TPR 32 64 128 256
// ttgen: tunable residual_ln_fwd ROWS 1 2 4 8 16
// ttgen: tunable residual_ln_bwd TPR 32 64 128 256
// ttgen: tunable residual_ln_bwd ROWS 1 2 4 8 16

// mla_residual_ln_fwd (the attention's residual, TT_JP > 0): y is not read; each element is the
// sum of the tensor-core attention's TT_JP parts of key positions (ypart [JP][batch][N][D] fp32,
// templates/mla_geom.cuh's layout; a row of tile it has tt_mla_parts(it) of them), added in part
// order and rounded once to the storage type, as mla_fwd_sum would have stored y: the same bits,
// one launch and one round trip of y fewer.
#ifndef TT_JP
#define TT_JP 0
#endif

#define TT_THREADS (TT_TPR * TT_ROWS)
// The backward's sets of partial sums: dgamma and dbeta, and the residual kernel's sum of dy.
#ifdef TT_OP_RESIDUAL_LN_BWD
#define TT_NSETS 3
#else
#define TT_NSETS 2
#endif
#define TT_EPS 1e-5f // nn.LayerNorm's default, which the CPU reference and PyTorch use

#define TT_NV (TT_D / TT_VEC)   // vectors a row
#define TT_NW (TT_VPT / TT_VEC) // vectors a thread
static_assert(TT_D % TT_VEC == 0 && TT_VPT % TT_VEC == 0 && TT_NW * TT_TPR >= TT_NV,
              "a row is whole vectors, and the threads of a row hold all of them");

__device__ __forceinline__ int tt_ln_feat(int lane, int c)
{
    return (lane + c / TT_VEC * TT_TPR) * TT_VEC + c % TT_VEC;
}
// Whether the lane's value c is a feature of the row (its whole vector is).
__device__ __forceinline__ bool tt_ln_live(int lane, int c) { return lane + c / TT_VEC * TT_TPR < TT_NV; }

// The lane's values of a row (TT_T, or fp32 parts: 16 bytes a load at most), zeros past it.
template <typename T> __device__ __forceinline__ void tt_ln_load(float (&v)[TT_VPT], const T *row, int lane)
{
    constexpr int L = sizeof(T) * TT_VEC > 16 ? 16 / (int)sizeof(T) : TT_VEC; // a load's values
#pragma unroll
    for (int w = 0; w < TT_NW; w++)
#pragma unroll
        for (int h = 0; h < TT_VEC; h += L) {
            float t[L];
            const int c = w * TT_VEC + h;
            if (tt_ln_live(lane, c))
                tt_load<L>(t, row + tt_ln_feat(lane, c));
            else
#pragma unroll
                for (int e = 0; e < L; e++) t[e] = 0.f;
#pragma unroll
            for (int e = 0; e < L; e++) v[c + e] = t[e];
        }
}

// The lane's live values stored to a row of the storage type.
__device__ __forceinline__ void tt_ln_store(TT_T *row, const float (&v)[TT_VPT], int lane)
{
#pragma unroll
    for (int w = 0; w < TT_NW; w++) {
        if (!tt_ln_live(lane, w * TT_VEC)) continue;
        float t[TT_VEC];
#pragma unroll
        for (int e = 0; e < TT_VEC; e++) t[e] = v[w * TT_VEC + e];
        tt_store<TT_VEC>(row + tt_ln_feat(lane, w * TT_VEC), t);
    }
}

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

// --- the row math both variants share ----------------------------------------------------------

// Mean and 1/sqrt(variance + eps) of the row whose values v[c] (feature lane + c * TT_TPR) this
// thread holds; features past TT_D hold 0.
__device__ __forceinline__ void tt_ln_stats(const float (&v)[TT_VPT], int lane, float *scratch,
                                            float &mean, float &rstd)
{
    float s = 0.f;
#pragma unroll
    for (int c = 0; c < TT_VPT; c++) s += v[c];
    mean = tt_row_sum(s, scratch) * (1.f / TT_D);
    float q = 0.f;
#pragma unroll
    for (int c = 0; c < TT_VPT; c++) {
        const float d = tt_ln_live(lane, c) ? v[c] - mean : 0.f;
        q += d * d;
    }
    rstd = rsqrtf(tt_row_sum(q, scratch) * (1.f / TT_D) + TT_EPS);
}

// yr = (v - mean) * rstd * gamma + beta.
__device__ __forceinline__ void tt_ln_write(TT_T *yr, const float (&v)[TT_VPT], float mean,
                                            float rstd, const float *gamma, const float *beta,
                                            int lane)
{
    float o[TT_VPT];
#pragma unroll
    for (int c = 0; c < TT_VPT; c++) {
        const int i = tt_ln_feat(lane, c);
        o[c] = tt_ln_live(lane, c) ? (v[c] - mean) * rstd * gamma[i] + beta[i] : 0.f;
    }
    tt_ln_store(yr, o, lane);
}

// One row of the backward: dx = rstd * (gamma*dy - mean(gamma*dy) - xhat * mean(gamma*dy*xhat))
// into dx[c], and this row's terms of dgamma (dy * xhat) and dbeta (dy) added to dg[c], db[c].
__device__ __forceinline__ void tt_ln_row_bwd(float (&dx)[TT_VPT], float (&dg)[TT_VPT],
                                              float (&db)[TT_VPT], const TT_T *dyr, const TT_T *xr,
                                              float mean, float rstd, const float *gamma, int lane,
                                              float *scratch)
{
    float xh[TT_VPT], dyv[TT_VPT];
    tt_ln_load(dyv, dyr, lane);
    tt_ln_load(xh, xr, lane);
    float s1 = 0.f, s2 = 0.f;
#pragma unroll
    for (int c = 0; c < TT_VPT; c++) {
        const int i = tt_ln_feat(lane, c);
        if (tt_ln_live(lane, c)) {
            const float d = dyv[c];
            xh[c] = (xh[c] - mean) * rstd;
            dx[c] = gamma[i] * d; // gamma * dy until the row sums are known
            dg[c] += d * xh[c];
            db[c] += d;
        } else {
            xh[c] = dx[c] = 0.f;
        }
        s1 += dx[c];
        s2 += dx[c] * xh[c];
    }
    const float m1 = tt_row_sum(s1, scratch) * (1.f / TT_D);
    const float m2 = tt_row_sum(s2, scratch) * (1.f / TT_D);
#pragma unroll
    for (int c = 0; c < TT_VPT; c++) dx[c] = rstd * (dx[c] - m1 - xh[c] * m2);
}

// dgamma and dbeta (and, in the residual backward, the sum of dy: the bias gradient of the
// product whose output y is) are sums over all rows: each block writes its partial sums of set s
// (of TT_NSETS) to part[s * gridDim.x + blockIdx.x][0..D), and the colsum kernel adds the
// partials up in a fixed order, so the result does not depend on scheduling.
// rowpart: the block's [TT_NSETS][TT_ROWS][TT_D] shared buffer when TT_ROWS > 1.
__device__ __forceinline__ void tt_ln_write_partials(float *part, const float (*const sets[TT_NSETS])[TT_VPT],
                                                     int lane, int sub, float *rowpart)
{
#if TT_ROWS > 1
#pragma unroll
    for (int s = 0; s < TT_NSETS; s++)
#pragma unroll
        for (int c = 0; c < TT_VPT; c++)
            if (tt_ln_live(lane, c)) rowpart[(s * TT_ROWS + sub) * TT_D + tt_ln_feat(lane, c)] = (*sets[s])[c];
    __syncthreads();
    for (int i = threadIdx.x; i < TT_D; i += TT_THREADS)
#pragma unroll
        for (int s = 0; s < TT_NSETS; s++) {
            float v = 0.f;
#pragma unroll
            for (int r = 0; r < TT_ROWS; r++) v += rowpart[(s * TT_ROWS + r) * TT_D + i];
            part[((size_t)s * gridDim.x + blockIdx.x) * TT_D + i] = v;
        }
#else
    (void)sub, (void)rowpart;
#pragma unroll
    for (int s = 0; s < TT_NSETS; s++)
#pragma unroll
        for (int c = 0; c < TT_VPT; c++)
            if (tt_ln_live(lane, c))
                part[((size_t)s * gridDim.x + blockIdx.x) * TT_D + tt_ln_feat(lane, c)] = (*sets[s])[c];
#endif
}

// --- the kernels -------------------------------------------------------------------------------

#ifdef TT_OP_LAYERNORM_FWD
// y = (x - mean) * rstd * gamma + beta; mean and rstd are kept for the backward pass.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ y, float *__restrict__ mean_out, float *__restrict__ rstd_out,
          const TT_T *__restrict__ x, const float *__restrict__ gamma,
          const float *__restrict__ beta, int rows)
{
    tt_pdl_begin();
    __shared__ float scratch[TT_TPR > 32 ? TT_TPR / 32 : 1];
    static_assert(sizeof scratch == TT_SMEM, "the shared memory the plan counted is what the block declares");
    const int lane = threadIdx.x % TT_TPR;
    const int row = blockIdx.x * TT_ROWS + threadIdx.x / TT_TPR;
    // With TT_TPR > 32 a block is one row, so a block leaves whole and the barriers stay uniform.
    if (row >= rows) return;
    const TT_T *xr = x + (size_t)row * TT_D;

    float v[TT_VPT];
    tt_ln_load(v, xr, lane);
    float mean, rstd;
    tt_ln_stats(v, lane, scratch, mean, rstd);
    tt_ln_write(y + (size_t)row * TT_D, v, mean, rstd, gamma, beta, lane);
    if (lane == 0) {
        mean_out[row] = mean;
        rstd_out[row] = rstd;
    }
}
#endif

#ifdef TT_OP_RESIDUAL_LN_FWD
// s = x + dropout(y) (the dropout site's stream of this step), out = LayerNorm(s). s is stored
// (storage type) for the backward, and the statistics are those of the stored s, so that the
// backward differentiates exactly the function this computed.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ out, TT_T *__restrict__ s_out, float *__restrict__ mean_out,
          float *__restrict__ rstd_out, const TT_T *__restrict__ x, const TT_T *__restrict__ y,
          const float *__restrict__ gamma, const float *__restrict__ beta, int rows, int ld,
          float p, unsigned long long seed, const unsigned long long *__restrict__ step,
          unsigned site, unsigned long long drop0, const float *__restrict__ ypart, int batch)
{
    tt_pdl_begin();
    __shared__ float scratch[TT_TPR > 32 ? TT_TPR / 32 : 1];
    static_assert(sizeof scratch == TT_SMEM, "the shared memory the plan counted is what the block declares");
    const int lane = threadIdx.x % TT_TPR;
    const int row = blockIdx.x * TT_ROWS + threadIdx.x / TT_TPR;
    if (row >= rows) return;
    const uint64_t stream = tt_dropout_stream(*step, site);
    const float inv_keep = 1.f / (1.f - p);
    const unsigned keep_at = tt_keep_threshold(p); // once, not a draw
    const size_t base = (size_t)row * ld, drop = drop0 + (size_t)row * TT_D;
#if TT_JP > 0
    (void)y;
    const int parts = tt_mla_parts(row % TT_N / 16, TT_N, TT_CAUSAL, 16, 16);
    const float *yrow = ypart + (size_t)row * TT_D;
    const size_t part = tt_mla_fwd_part(batch, TT_N, TT_D, 1, 0, 0);
#else
    (void)ypart, (void)batch;
#endif

    float v[TT_VPT], yv[TT_VPT];
    tt_ln_load(v, x + base, lane); // x, then s
#if TT_JP > 0
    // the parts' sum, in part order, rounded once to the storage type
#pragma unroll
    for (int c = 0; c < TT_VPT; c++) yv[c] = 0.f;
#pragma unroll
    for (int jp = 0; jp < TT_JP; jp++)
        if (jp < parts) {
            float t[TT_VPT];
            tt_ln_load(t, yrow + jp * part, lane);
#pragma unroll
            for (int c = 0; c < TT_VPT; c++) yv[c] += t[c];
        }
#pragma unroll
    for (int c = 0; c < TT_VPT; c++) yv[c] = tt_float(tt_store_as<TT_T>(yv[c]));
#else
    tt_ln_load(yv, y + base, lane);
#endif
#pragma unroll
    for (int c = 0; c < TT_VPT; c++) {
        if (!tt_ln_live(lane, c)) continue; // zeros
        const bool keep = tt_dropout_kept(seed, stream, drop + tt_ln_feat(lane, c), keep_at);
        // __fmul_rn: never fused into an FMA with the add, so the sum rounds as on the CPU
        const float yd = keep ? __fmul_rn(yv[c], inv_keep) : 0.f;
        v[c] = tt_float(tt_store_as<TT_T>(v[c] + yd));
    }
    tt_ln_store(s_out + base, v, lane);
    float mean, rstd;
    tt_ln_stats(v, lane, scratch, mean, rstd);
    tt_ln_write(out + base, v, mean, rstd, gamma, beta, lane);
    if (lane == 0) {
        mean_out[row] = mean;
        rstd_out[row] = rstd;
    }
}
#endif

#if defined(TT_OP_LAYERNORM_BWD) || defined(TT_OP_RESIDUAL_LN_BWD)
// Grid-stride over rows: the loop bound is the same for all threads of a row group, and with
// TT_TPR > 32 (one row per block) for the whole block, so the barriers in tt_row_sum are safe.
// Plain: dx = d LayerNorm(x). Residual (s = x + dropout(y)): dx = ds and dy = dropout_bwd(ds),
// with the keep decisions drawn again from the forward's stream. dgamma/dbeta as partials, and
// in the residual kernel a third set: the sum of dy in fp32, before dy is rounded to the storage
// type (the FFN's second product's bias gradient; the attention's output has no bias, and its
// launch leaves that set unsummed).
// (A D that the threads of a row do not divide, such as 410, left ptxas' own register target
// spilling 8 bytes; with one block an SM promised it takes what it needs.)
#if TT_D % TT_TPR
extern "C" __global__ void __launch_bounds__(TT_THREADS, 1)
#else
extern "C" __global__ void __launch_bounds__(TT_THREADS)
#endif
#ifdef TT_OP_LAYERNORM_BWD
TT_KERNEL(TT_T *__restrict__ dx, float *__restrict__ part, const TT_T *__restrict__ dout,
          const TT_T *__restrict__ x, const float *__restrict__ mean_in,
          const float *__restrict__ rstd_in, const float *__restrict__ gamma, int rows)
#else
TT_KERNEL(TT_T *__restrict__ dx, TT_T *__restrict__ dy, float *__restrict__ part,
          const TT_T *__restrict__ dout, const TT_T *__restrict__ x,
          const float *__restrict__ mean_in, const float *__restrict__ rstd_in,
          const float *__restrict__ gamma, int rows, int ld, float p, unsigned long long seed,
          const unsigned long long *__restrict__ step, unsigned site, unsigned long long drop0)
#endif
{
    tt_pdl_begin();
    __shared__ float scratch[TT_TPR > 32 ? TT_TPR / 32 : 1];
#if TT_ROWS > 1
    __shared__ float rowpart[TT_NSETS * TT_ROWS * TT_D];
    static_assert(sizeof scratch + sizeof rowpart == TT_SMEM, "the shared memory the plan counted is what the block declares");
#else
    float *const rowpart = nullptr;
    static_assert(sizeof scratch == TT_SMEM, "the shared memory the plan counted is what the block declares");
#endif
    const int lane = threadIdx.x % TT_TPR;
    const int sub = threadIdx.x / TT_TPR;
#ifdef TT_OP_RESIDUAL_LN_BWD
    const uint64_t stream = tt_dropout_stream(*step, site);
    const float inv_keep = 1.f / (1.f - p);
#endif
    float dg[TT_VPT], db[TT_VPT];
#pragma unroll
    for (int c = 0; c < TT_VPT; c++) dg[c] = db[c] = 0.f;
#ifdef TT_OP_RESIDUAL_LN_BWD
    float dsum[TT_VPT]; // the sum of dy, before it is rounded to the storage type
#pragma unroll
    for (int c = 0; c < TT_VPT; c++) dsum[c] = 0.f;
#endif

#ifdef TT_OP_LAYERNORM_BWD
    const int ld = TT_D;
    const unsigned long long drop0 = 0; // no dropout
#endif
    for (int row = blockIdx.x * TT_ROWS + sub; row < rows; row += gridDim.x * TT_ROWS) {
        const size_t base = (size_t)row * ld, drop = drop0 + (size_t)row * TT_D;
        (void)drop;
        float g[TT_VPT];
#ifdef TT_OP_RESIDUAL_LN_BWD
        // The forward's keep decisions, a bit per value this thread holds, drawn before the row
        // math: fewer values live at once (lm1b's D = 1024 holds 32 per thread).
        static_assert(TT_VPT <= 32, "a keep bit per value");
        const unsigned keep_at = tt_keep_threshold(p); // a row's, not a draw's (a register across
                                                       // the rows spilled at lm1b's D = 1024)
        unsigned kept = 0;
#pragma unroll
        for (int c = 0; c < TT_VPT; c++)
            if (tt_dropout_kept(seed, stream, drop + tt_ln_feat(lane, c), keep_at)) kept |= 1u << c;
#endif
        tt_ln_row_bwd(g, dg, db, dout + base, x + base, mean_in[row], rstd_in[row], gamma, lane,
                      scratch);
        tt_ln_store(dx + base, g, lane);
#ifdef TT_OP_RESIDUAL_LN_BWD
        float d[TT_VPT];
#pragma unroll
        for (int c = 0; c < TT_VPT; c++) {
            d[c] = (kept >> c) & 1u ? g[c] * inv_keep : 0.f;
            if (tt_ln_live(lane, c)) dsum[c] += d[c];
        }
        tt_ln_store(dy + base, d, lane);
#endif
    }
#ifdef TT_OP_RESIDUAL_LN_BWD
    const float(*const sets[TT_NSETS])[TT_VPT] = {&dg, &db, &dsum};
#else
    const float(*const sets[TT_NSETS])[TT_VPT] = {&dg, &db};
#endif
    tt_ln_write_partials(part, sets, lane, sub, rowpart);
}
#endif
