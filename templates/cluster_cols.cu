// The adaptive softmax head's cluster columns (MODEL.md section 3; cpu_model.c's output_layer):
// after the shortlist's logits, one logit per tail cluster, TT_NC of them, from the head's input
// x [rows, D] and the cluster weights Wc [NC, D], bc [NC] (their storage-type copies):
//   cluster_cols_fwd  y[r, j] = x[r] . Wc[j] + bc[j]       (the fp32 sum rounded once)
//   cluster_cols_bwd  dx[r] += sum_j dy[r, j] Wc[j]        (added: the head's product wrote dx)
//                     and the partial sums over each block's rows of dWc[j] = sum_r dy[r, j] x[r]
//                     and dbc[j] = sum_r dy[r, j]: part [PARTS][NC * D + NC]
//   cluster_cols_sum  dWc += the PARTS partials, dbc likewise, in part order
// Instead of cuBLAS: a product of N = NC (at most 8) columns and a K = 1 product for the bias,
// each way, ran on small sm_75 kernels with split-K sums after them (five to seven launches and
// about 50 us a wt103 step). Deterministic: every sum in a fixed order (a warp's lanes by a
// butterfly, a block's rows in order, the parts by warps in order, then the warps in order).
// y and dy: rows ldy apart, from the head's column c0 on (any alignment); x and dx rows ldx apart,
// Wc's rows ldw apart; only the first D columns of a row are read or written.
// Constants: TT_D, TT_NC, TT_THREADS; the backward's and the sum's TT_PARTS (the backward's
// blocks, each a contiguous run of ceil(rows / PARTS) rows).

static_assert(TT_NC >= 1 && TT_NC <= 8 && TT_THREADS % 32 == 0, "a few clusters, whole warps");

#ifdef TT_OP_CLUSTER_COLS_FWD
// A warp a row (rows strided over the grid's warps), Wc in shared memory as fp32.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ y, int ldy, const TT_T *__restrict__ x, int ldx,
          const TT_T *__restrict__ w, int ldw, const TT_T *__restrict__ b, int rows)
{
    tt_pdl_begin();
    __shared__ float sw[TT_NC][TT_D];
    static_assert(sizeof sw == TT_SMEM, "the shared memory the plan counted is what the block declares");
    for (int e = threadIdx.x; e < TT_NC * TT_D; e += TT_THREADS)
        sw[e / TT_D][e % TT_D] = tt_float(w[(size_t)(e / TT_D) * ldw + e % TT_D]);
    __syncthreads();
    const int lane = threadIdx.x % 32, warps = TT_THREADS / 32;
    for (int r = blockIdx.x * warps + threadIdx.x / 32; r < rows; r += gridDim.x * warps) {
        const TT_T *xr = x + (size_t)r * ldx;
        float acc[TT_NC];
#pragma unroll
        for (int j = 0; j < TT_NC; j++) acc[j] = 0.f;
        for (int d = lane; d < TT_D; d += 32) {
            const float xv = tt_float(xr[d]);
#pragma unroll
            for (int j = 0; j < TT_NC; j++) acc[j] += xv * sw[j][d];
        }
        float mine = 0.f;
#pragma unroll
        for (int j = 0; j < TT_NC; j++) {
            const float s = tt_group_sum<32>(acc[j]);
            if (lane == j) mine = s;
        }
        if (lane < TT_NC) y[(size_t)r * ldy + lane] = tt_store_as<TT_T>(mine + tt_float(b[lane]));
    }
}
#endif

#ifdef TT_OP_CLUSTER_COLS_BWD
// A thread per column d (and d + THREADS, ...) of the block's rows, in order, four rows' loads in
// flight at a time; thread j < NC sums dbc[j] too.
#define TT_CPT ((TT_D + TT_THREADS - 1) / TT_THREADS) // columns a thread
#define TT_U 4
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ dx, int ldx, float *__restrict__ part, const TT_T *__restrict__ dy,
          int ldy, const TT_T *__restrict__ x, const TT_T *__restrict__ w, int ldw, int rows)
{
    tt_pdl_begin();
    const int per = (rows + TT_PARTS - 1) / TT_PARTS, r0 = min((int)blockIdx.x * per, rows);
    const int r1 = min(r0 + per, rows);
    float wc[TT_NC][TT_CPT], gw[TT_NC][TT_CPT], gb = 0.f;
#pragma unroll
    for (int j = 0; j < TT_NC; j++)
#pragma unroll
        for (int c = 0; c < TT_CPT; c++) {
            const int d = threadIdx.x + c * TT_THREADS;
            wc[j][c] = d < TT_D ? tt_float(w[(size_t)j * ldw + d]) : 0.f;
            gw[j][c] = 0.f;
        }
    for (int r = r0; r < r1; r += TT_U) {
        float g[TT_U][TT_NC], xv[TT_U][TT_CPT], dv[TT_U][TT_CPT];
#pragma unroll
        for (int u = 0; u < TT_U; u++) {
            const bool in = r + u < r1;
#pragma unroll
            for (int j = 0; j < TT_NC; j++) g[u][j] = in ? tt_float(dy[(size_t)(r + u) * ldy + j]) : 0.f;
#pragma unroll
            for (int c = 0; c < TT_CPT; c++) {
                const int d = threadIdx.x + c * TT_THREADS;
                const bool at = in && d < TT_D;
                xv[u][c] = at ? tt_float(x[(size_t)(r + u) * ldx + d]) : 0.f;
                dv[u][c] = at ? tt_float(dx[(size_t)(r + u) * ldx + d]) : 0.f;
            }
        }
#pragma unroll
        for (int u = 0; u < TT_U; u++) {
            if (r + u >= r1) break;
#pragma unroll
            for (int c = 0; c < TT_CPT; c++) {
                const int d = threadIdx.x + c * TT_THREADS;
                float s = 0.f;
#pragma unroll
                for (int j = 0; j < TT_NC; j++) {
                    s += g[u][j] * wc[j][c];
                    gw[j][c] += g[u][j] * xv[u][c];
                }
                if (d < TT_D) dx[(size_t)(r + u) * ldx + d] = tt_store_as<TT_T>(dv[u][c] + s);
            }
#pragma unroll
            for (int j = 0; j < TT_NC; j++)
                if (threadIdx.x == j) gb += g[u][j];
        }
    }
    float *pr = part + (size_t)blockIdx.x * (TT_NC * TT_D + TT_NC);
#pragma unroll
    for (int j = 0; j < TT_NC; j++)
#pragma unroll
        for (int c = 0; c < TT_CPT; c++) {
            const int d = threadIdx.x + c * TT_THREADS;
            if (d < TT_D) pr[j * TT_D + d] = gw[j][c];
        }
    if (threadIdx.x < TT_NC) pr[TT_NC * TT_D + threadIdx.x] = gb;
}
#endif

#ifdef TT_OP_CLUSTER_COLS_SUM
// A block per 32 of the NC * D + NC sums: warp w adds parts w, w + W, ... (W warps), then warp 0
// the warps' sums in warp order, into dw (the first NC * D) or db.
#define TT_PW (TT_THREADS / 32)
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(float *__restrict__ dw, float *__restrict__ db, const float *__restrict__ part)
{
    tt_pdl_begin();
    constexpr int W = TT_NC * TT_D + TT_NC;
    __shared__ float red[TT_PW][32];
    static_assert(sizeof red == TT_SMEM, "the shared memory the plan counted is what the block declares");
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, e = blockIdx.x * 32 + lane;
    float s = 0.f;
    if (e < W)
        for (int p = warp; p < TT_PARTS; p += TT_PW) s += part[(size_t)p * W + e];
    red[warp][lane] = s;
    __syncthreads();
    if (warp != 0 || e >= W) return;
    float t = red[0][lane];
#pragma unroll
    for (int k = 1; k < TT_PW; k++) t += red[k][lane];
    float *o = e < TT_NC * TT_D ? dw + e : db + (e - TT_NC * TT_D);
    *o += t;
}
#endif
