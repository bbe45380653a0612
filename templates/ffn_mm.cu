// The position-wise FFN's two products that ffn_act.cu's pass sits between, with that pass fused
// into their epilogues (MODEL.md section 2; read ffn_act.cu first: the same functions):
//   ffn_mm_fwd  hd [rows, N] = dropout(relu(x W1^T + b1))          x [rows, K], W1 [N, K]
//   ffn_mm_bwd  dz [rows, N] = (dy W2) / (1 - p) where hd > 0, else 0  dy [rows, K], W2 [K, N]
//               and db1's partials: the sum of dz over each block's TT_BM rows, part [PARTS][F]
// The plan takes them instead of cuBLAS's product and ffn_act.cu's pass where d_model (K) is
// short: the product's output then costs more than its arithmetic, and the pass would read and
// write it once more. The fp32 accumulators go through the activation before the one rounding
// (cuBLAS's path rounds z to bf16 first, then adds b1).
// N is the activations' pitch (d_inner rounded up to whole 16-byte groups); columns from F on
// are written as zeros, as W1's zero rows and W2's zero columns make cuBLAS's output there, and
// neither draw nor sum counts them. The dropout mask's element index is row * F + col, as
// cpu_dropout_fwd numbers it.
// A block: a TT_BM x TT_BN tile of the output, 8 warps (2 along rows x 4 along columns, 64 x 32
// each, m16n8k16 bf16 mma.sync with fp32 accumulators), K in steps of TT_BK through TT_STAGES
// buffers of shared memory that cp.async fills (rows and columns past the ends as zeros), one
// barrier a step. x and dy are rows TT_LDA apart; W1 [N][K] (k contiguous, TT_TB 0) and W2 [K][N]
// (n contiguous, TT_TB 1) rows TT_LDB apart; B's fragments by ldmatrix, transposed for W2.
// db1: a thread adds its rows of a column in order, the warp's eight row groups meet by a
// butterfly, the two warps of a column in order; bias_colsum adds the PARTS partials in order:
// deterministic, no atomics.
// Constants: TT_K, TT_F, TT_LD (the pitch, N above), TT_VEC (8: rows in 16-byte chunks), TT_LDA,
// TT_LDB, TT_TB, TT_STAGES, TT_THREADS (256), TT_SMEM;
// the backward's TT_PARTS (its grid's rows of blocks). bf16 only.

#define TT_BM 128
#define TT_BN 128
#define TT_BK 32
#define TT_SA (TT_BK + 8) // A's pitch in shared memory: rows 80 bytes apart, so that the 8 rows an
                          // ldmatrix reads fall on distinct banks
#if TT_TB
#define TT_SB (TT_BN + 8) // B [BK][BN + 8] (272 bytes a row)
#define TT_BTILE (TT_BK * TT_SB)
#else
#define TT_SB (TT_BK + 8) // B [BN][BK + 8]
#define TT_BTILE (TT_BN * TT_SB)
#endif
#define TT_ATILE (TT_BM * TT_SA)
#define TT_KT ((TT_K + TT_BK - 1) / TT_BK)
static_assert(TT_THREADS == 256, "8 warps: 2 x 4 warp tiles of 64 x 32");
static_assert(TT_STAGES >= 2 && TT_STAGES * (TT_ATILE + TT_BTILE) * 2 == TT_SMEM,
              "the shared memory the plan gives is what the block carves up below");
static_assert(TT_VEC == 8 && TT_K % 8 == 0 && TT_LD % 8 == 0 && TT_LDA % 8 == 0 && TT_LDB % 8 == 0 && TT_F <= TT_LD,
              "16-byte chunks of every row");

// Step k0's tiles into one buffer: A's rows m0.., B's columns n0.. (zeros past rows, N and K).
__device__ __forceinline__ void tt_mm_load(tt_bf16 *sa, tt_bf16 *sb, const tt_bf16 *a, const tt_bf16 *b,
                                           int rows, int m0, int n0, int k0)
{
    constexpr int CA = TT_BK / 8; // 16-byte chunks of a row of A's tile
#pragma unroll
    for (int q = 0; q < TT_BM * CA / TT_THREADS; q++) {
        const int e = threadIdx.x + q * TT_THREADS, r = e / CA, c = e % CA * 8;
        const bool in = m0 + r < rows && k0 + c < TT_K;
        tt_cp16(sa + r * TT_SA + c, in ? a + (size_t)(m0 + r) * TT_LDA + k0 + c : a, in);
    }
#if TT_TB
    constexpr int CB = TT_BN / 8;
#pragma unroll
    for (int q = 0; q < TT_BK * CB / TT_THREADS; q++) {
        const int e = threadIdx.x + q * TT_THREADS, kr = e / CB, c = e % CB * 8;
        const bool in = k0 + kr < TT_K && n0 + c < TT_LD;
        tt_cp16(sb + kr * TT_SB + c, in ? b + (size_t)(k0 + kr) * TT_LDB + n0 + c : b, in);
    }
#else
#pragma unroll
    for (int q = 0; q < TT_BN * CA / TT_THREADS; q++) {
        const int e = threadIdx.x + q * TT_THREADS, nr = e / CA, c = e % CA * 8;
        const bool in = n0 + nr < TT_LD && k0 + c < TT_K;
        tt_cp16(sb + nr * TT_SB + c, in ? b + (size_t)(n0 + nr) * TT_LDB + k0 + c : b, in);
    }
#endif
}

// acc (the warp's 4 x 4 m16n8 tiles) = A B over the whole of K for the block's tile.
__device__ __forceinline__ void tt_mm_tile(float (&acc)[4][4][4], tt_bf16 *smem, const tt_bf16 *a,
                                           const tt_bf16 *b, int rows, int m0, int n0)
{
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wm = warp / 4, wn = warp % 4;
#pragma unroll
    for (int mt = 0; mt < 4; mt++)
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) acc[mt][nt][e] = 0.f;
#pragma unroll
    for (int s = 0; s < TT_STAGES - 1; s++) {
        if (s < TT_KT)
            tt_mm_load(smem + s * (TT_ATILE + TT_BTILE), smem + s * (TT_ATILE + TT_BTILE) + TT_ATILE, a, b,
                       rows, m0, n0, s * TT_BK);
        tt_cp_commit();
    }
    // this lane's ldmatrix rows: A's (rows lane % 16, k half lane / 16); B's as the layouts need
    const int a_off = (wm * 64 + (lane & 15)) * TT_SA + (lane >> 4) * 8;
#if TT_TB
    const int b_off = ((lane & 7) + ((lane >> 3) & 1) * 8) * TT_SB + wn * 32 + (lane >> 4) * 8;
#else
    const int b_off = (wn * 32 + (lane & 7) + (lane >> 4) * 8) * TT_SB + ((lane >> 3) & 1) * 8;
#endif
    for (int kt = 0; kt < TT_KT; kt++) {
        tt_cp_wait<TT_STAGES - 2>();
        __syncthreads(); // step kt's buffer has landed, and every warp is done with step kt - 1's
        const int nk = kt + TT_STAGES - 1, nb = nk % TT_STAGES;
        if (nk < TT_KT)
            tt_mm_load(smem + nb * (TT_ATILE + TT_BTILE), smem + nb * (TT_ATILE + TT_BTILE) + TT_ATILE, a, b,
                       rows, m0, n0, nk * TT_BK);
        tt_cp_commit();
        const tt_bf16 *sa = smem + (kt % TT_STAGES) * (TT_ATILE + TT_BTILE), *sb = sa + TT_ATILE;
#pragma unroll
        for (int ks = 0; ks < TT_BK; ks += 16) {
            unsigned af[4][4], bf[2][4];
#pragma unroll
            for (int mt = 0; mt < 4; mt++) tt_ldsm(af[mt], sa + a_off + mt * 16 * TT_SA + ks);
#pragma unroll
            for (int np = 0; np < 2; np++) {
#if TT_TB
                tt_ldsm_t(bf[np], sb + b_off + ks * TT_SB + np * 16);
#else
                tt_ldsm(bf[np], sb + b_off + np * 16 * TT_SB + ks);
#endif
            }
#pragma unroll
            for (int mt = 0; mt < 4; mt++)
#pragma unroll
                for (int nt = 0; nt < 4; nt++)
                    tt_mma(acc[mt][nt], af[mt], bf[nt / 2][(nt % 2) * 2], bf[nt / 2][(nt % 2) * 2 + 1]);
        }
    }
}

// Where register pair h (0: e 0-1, 1: e 2-3) of tile (mt, nt) of this lane lands: row and the
// first of its two columns.
__device__ __forceinline__ int tt_mm_row(int m0, int mt, int h)
{
    const int lane = threadIdx.x % 32, wm = threadIdx.x / 32 / 4;
    return m0 + wm * 64 + mt * 16 + (lane >> 2) + 8 * h;
}
__device__ __forceinline__ int tt_mm_col(int n0, int nt)
{
    const int lane = threadIdx.x % 32, wn = threadIdx.x / 32 % 4;
    return n0 + wn * 32 + nt * 8 + (lane & 3) * 2;
}

#ifdef TT_OP_FFN_MM_FWD
extern "C" __global__ void __launch_bounds__(TT_THREADS, 2)
TT_KERNEL(tt_bf16 *__restrict__ hd, const tt_bf16 *__restrict__ x, const tt_bf16 *__restrict__ w1,
          const float *__restrict__ b1, int rows, float p, unsigned long long seed,
          const unsigned long long *__restrict__ step, unsigned site, unsigned long long drop0)
{
    tt_pdl_begin();
    extern __shared__ __align__(16) tt_bf16 smem[];
    const int m0 = blockIdx.y * TT_BM, n0 = blockIdx.x * TT_BN;
    float acc[4][4][4];
    tt_mm_tile(acc, smem, x, w1, rows, m0, n0);
    const float inv_keep = 1.f / (1.f - p);
    const uint64_t stream = tt_dropout_stream(*step, site);
#pragma unroll
    for (int mt = 0; mt < 4; mt++)
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int r = tt_mm_row(m0, mt, h), c = tt_mm_col(n0, nt);
                if (r >= rows || c >= TT_LD) continue; // (N is even: c + 1 < N too)
                float v[2];
#pragma unroll
                for (int q = 0; q < 2; q++) {
                    v[q] = 0.f; // the padding
                    if (c + q < TT_F) {
                        const float z = fmaxf(acc[mt][nt][2 * h + q] + b1[c + q], 0.f);
                        v[q] = tt_dropout_keep(seed, stream, drop0 + (uint64_t)r * TT_F + c + q, p) ? z * inv_keep
                                                                                                   : 0.f;
                    }
                }
                *reinterpret_cast<unsigned *>(hd + (size_t)r * TT_LD + c) = tt_bf16x2(v[0], v[1]);
            }
}
#endif

#ifdef TT_OP_FFN_MM_BWD
// part [PARTS][F]: every element written (a block past the rows writes zeros).
extern "C" __global__ void __launch_bounds__(TT_THREADS, 2)
TT_KERNEL(tt_bf16 *__restrict__ dz, float *__restrict__ part, const tt_bf16 *__restrict__ dy,
          const tt_bf16 *__restrict__ w2, const tt_bf16 *__restrict__ hd, int rows, float p)
{
    tt_pdl_begin();
    extern __shared__ __align__(16) tt_bf16 smem[];
    const int m0 = blockIdx.y * TT_BM, n0 = blockIdx.x * TT_BN;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, wm = warp / 4, wn = warp % 4;
    float acc[4][4][4];
    float cs[4][2]; // this thread's column sums: tile nt, column q of its pair
#pragma unroll
    for (int nt = 0; nt < 4; nt++) cs[nt][0] = cs[nt][1] = 0.f;
    if (m0 < rows) {
        tt_mm_tile(acc, smem, dy, w2, rows, m0, n0);
        const float inv_keep = 1.f / (1.f - p);
#pragma unroll
        for (int mt = 0; mt < 4; mt++)
#pragma unroll
            for (int h = 0; h < 2; h++)
#pragma unroll
                for (int nt = 0; nt < 4; nt++) {
                    const int r = tt_mm_row(m0, mt, h), c = tt_mm_col(n0, nt);
                    if (r >= rows || c >= TT_LD) continue;
                    const unsigned hh = *reinterpret_cast<const unsigned *>(hd + (size_t)r * TT_LD + c);
                    float v[2];
#pragma unroll
                    for (int q = 0; q < 2; q++) {
                        const float hv = __uint_as_float(q ? hh & 0xffff0000u : hh << 16);
                        v[q] = c + q < TT_F && hv > 0.f ? acc[mt][nt][2 * h + q] * inv_keep : 0.f; // kept, h > 0
                        cs[nt][q] += v[q];
                    }
                    *reinterpret_cast<unsigned *>(dz + (size_t)r * TT_LD + c) = tt_bf16x2(v[0], v[1]);
                }
    }
    // the warp's eight row groups (lanes with the same lane % 4) by a butterfly
#pragma unroll
    for (int nt = 0; nt < 4; nt++)
#pragma unroll
        for (int q = 0; q < 2; q++)
#pragma unroll
            for (int o = 4; o < 32; o *= 2) cs[nt][q] += __shfl_xor_sync(0xffffffffu, cs[nt][q], o);
    __syncthreads(); // every warp is done with the pipeline's buffers: they hold the two warps' sums
    float *red = reinterpret_cast<float *>(smem); // [2][BN]
    if (lane < 4)
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int q = 0; q < 2; q++) red[wm * TT_BN + wn * 32 + nt * 8 + lane * 2 + q] = cs[nt][q];
    __syncthreads();
    for (int t = threadIdx.x; t < TT_BN; t += TT_THREADS)
        if (n0 + t < TT_F) part[(size_t)blockIdx.y * TT_F + n0 + t] = red[t] + red[TT_BN + t];
}
#endif
