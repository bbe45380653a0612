// Transformer-XL's relative attention fused, flash-style (MODEL.md section 3), on bf16 tensor
// cores (mma.sync m16n8k16, fp32 accumulation): the scores AC + BD, the relative shift, the mask
// over memory and segment, the softmax, dropatt and the product with V in one kernel, forward and
// backward, without ever writing the [heads, batch, n, klen] scores or probabilities to memory.
// It computes what templates/txl_softmax.cu and the cuBLAS products around it compute (read its
// header for the shapes); the layouts are templates/txl.cu's head-major padded tiles:
//   qu, qv, o, do        [H][batch][n][DP]     q + u, q + v, P' V and its gradient
//   k, v                 [H][batch][klen][DP]  memory rows, then the segment's
//   r                    [H][klen][DP]         row t: the position embedding of distance klen-1-t
//   lse                  [H][batch][n] fp32    a row's log-sum-exp of its scaled scores (the
//                                              backward's D_i = sum_e do_ie o_ie, o as stored,
//                                              is sum_j P_ij dP_ij up to o's rounding: the
//                                              definition its dS = P (dP - D) uses)
//   ds                   [H][batch][n][lds]    dS (bf16, scaled), rows lds >= klen rounded up to
//                                              64 apart: txl_attn_bwd_kv writes the entries of
//                                              the query tiles it visits, txl_attn_bwd_q reads
//                                              the visible ones (scratch between the two)
//   dbd                  [H][batch n][klen]    dS shifted into BD's columns (0 elsewhere), for
//                                              the product dR = dBD^T (q + v) that cuBLAS runs;
//                                              rows ldb >= klen apart (the trainer passes klen:
//                                              rows padded to 16-byte groups made dR's product
//                                              slower, bench/RESULTS.md)
// Query i (0-based in the segment) sees key j iff j <= m + i, and its BD column for key j is
// t = n - 1 - i + j. For a warp's 16 rows iw .. iw+15 and a tile of 64 keys j0 .. j0+63 these
// columns are t0 + c with t0 = n - 1 - (iw + 15) + j0 and c = jj + 15 - rr (row iw + rr, key
// j0 + jj): one 16 x 80 product of q + v with 80 rows of r gives them all, and a pass through
// shared memory skews them onto the keys.
//
// The backward writes the gradients of q, k, v where the projections' products read them, the
// rows of dqkv [batch n][ldq] (q, k, v blocks hs apart, head c at c DH in each) and dkvm
// [batch m][ldkv] (the memory's k, v), and the biases' gradients as partial sums:
//   uvpart               [H][batch][n tiles][2][DH] fp32: a block's column sums of d(q + u) and
//                                              d(q + v), which txl_uv_sum adds into du, dv.
//
// Kernels (4 warps a block, each 16 rows of the block's 64):
//   txl_attn_fwd     a block per (64 queries, sequence, head): o and lse (online softmax).
//   txl_attn_bwd_kv  a block per (64 keys, sequence, head), over the queries that see them:
//                    D, the scores, P' and dS again, dV = P'^T dO and dK = dS^T (q + u), and dS
//                    written; the BD terms of its scores come from a 128 x 64 product of r with
//                    q + v that the block shares. The scores are computed once in the backward.
//   txl_attn_bwd_q   a block per (64 queries, sequence, head), after it: dq = d(q + u) +
//                    d(q + v) = dS K + dBD r from the dS written, their column sums, and dbd.
//   txl_uv_sum       du, dv += the partial sums, a warp per element, in a fixed order.
// Every output element has one writer (no atomics): deterministic.
// Constants: TT_DH (d_head), TT_DP (the heads' padded width, a multiple of 8), TT_DK (DP rounded
// up to 16, the k-steps), TT_H (heads, txl_uv_sum's), TT_SMEM (the dynamic shared memory a block
// gets, which each kernel checks against its layout). bf16 only.

#ifdef TT_DK // the attention's kernels (txl_uv_sum has none of their constants)
#define TT_KS (TT_DK / 16)  // k-steps over the head's width
#define TT_ND (TT_DK / 8)   // n8 tiles over the head's width
#define TT_SP (TT_DK + 8)   // bf16 pitch of the shared tiles of rows of width DK (conflict-free ldmatrix)
#define TT_BQ 64            // queries a block or a tile
#define TT_BK 64            // keys a tile or a block
#define TT_RT 128           // rows of r a (64 queries, 64 keys) pair spans (127)
#define TT_WT 80            // rows of r a warp's 16 queries span over 64 keys (79)
#define TT_XP (TT_WT + 4)   // fp32 pitch of a warp's BD tile
#define TT_DBP (TT_WT + 8)  // bf16 pitch of a warp's skewed dS tile
#define TT_XQ (TT_BQ + 4)   // fp32 pitch of txl_attn_bwd_kv's shared BD product
#define TT_STP (TT_BK + 8)  // bf16 pitch of txl_attn_bwd_kv's dS tile (16-byte rows, fewer conflicts)
static_assert(TT_BQ == TT_BK, "query and key tiles alike (tt_fl_a2)");
static_assert(TT_DP % 8 == 0 && TT_DK % 16 == 0 && TT_DK >= TT_DP && TT_DK < TT_DP + 16,
              "DP whole 16-byte groups, DK its k-steps");

// nrows rows of a [rows][DP] tensor from row r0 on (rows outside [0, limit) as zeros) into a
// shared tile of pitch SP, by the whole block, asynchronously (the caller commits and waits).
// Columns DP .. DK-1 are never written: tt_fl_zero_tail zeroes them once.
__device__ __forceinline__ void tt_fl_load(tt_bf16 *dst, int nrows, const tt_bf16 *src, int r0, int limit)
{
    constexpr int CH = TT_DP / 8;
    for (int e = threadIdx.x; e < nrows * CH; e += blockDim.x) {
        const int row = e / CH, c = e % CH, r = r0 + row;
        const bool in = r >= 0 && r < limit;
        tt_cp16(dst + row * TT_SP + c * 8, in ? src + (size_t)r * TT_DP + c * 8 : src, in);
    }
}

__device__ __forceinline__ void tt_fl_zero_tail(tt_bf16 *dst, int nrows)
{
#if TT_DK > TT_DP
    constexpr int W = TT_DK - TT_DP;
    for (int e = threadIdx.x; e < nrows * W; e += blockDim.x) dst[e / W * TT_SP + TT_DP + e % W].bits = 0;
#else
    (void)dst, (void)nrows;
#endif
}

// A query tile's keys: the 64 keys from j0 of k and v (one sequence's rows) into sk and sv, and
// the 128 rows of r its BD columns span (from n - 1 - (i0 + 63) + j0) into sr; asynchronously.
__device__ __forceinline__ void tt_fl_load_keys(tt_bf16 *sk, tt_bf16 *sv, tt_bf16 *sr, const tt_bf16 *k,
                                                const tt_bf16 *v, const tt_bf16 *r, int i0, int j0, int n,
                                                int klen)
{
    tt_fl_load(sk, TT_BK, k, j0, klen);
    tt_fl_load(sv, TT_BK, v, j0, klen);
    tt_fl_load(sr, TT_RT, r, n - 1 - (i0 + TT_BQ - 1) + j0, klen);
    tt_cp_commit();
}

// The end of the keys a tile of queries from i0 sees: m + its last query + 1.
__device__ __forceinline__ int tt_fl_key_end(int i0, int n, int m)
{
    return m + (i0 + TT_BQ < n ? i0 + TT_BQ : n);
}

template <int NT> __device__ __forceinline__ void tt_fl_zero(float (&x)[NT][4])
{
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) x[nt][e] = 0.f;
}

// A operand (16 rows from row0 of a shared tile of pitch SP, all DK columns) by ldmatrix.
__device__ __forceinline__ void tt_fl_a(unsigned (&a)[TT_KS][4], const tt_bf16 *s, int row0)
{
    const int lane = threadIdx.x % 32;
    const tt_bf16 *p = s + (row0 + (lane & 15)) * TT_SP + (lane >> 4) * 8;
#pragma unroll
    for (int ks = 0; ks < TT_KS; ks++) tt_ldsm(a[ks], p + ks * 16);
}

// The warp's A operands x and y: rows 16 warp .. of a block's tiles of TT_BQ (= TT_BK) rows
// from row r0 of the [rows][DP] tensors gx and gy (rows from limit on as zeros), through the
// shared tiles sx and sy, which are free again on return.
__device__ __forceinline__ void tt_fl_a2(unsigned (&x)[TT_KS][4], unsigned (&y)[TT_KS][4], tt_bf16 *sx,
                                         tt_bf16 *sy, const tt_bf16 *gx, const tt_bf16 *gy, int r0,
                                         int limit)
{
    tt_fl_load(sx, TT_BQ, gx, r0, limit);
    tt_fl_load(sy, TT_BQ, gy, r0, limit);
    tt_cp_commit();
    tt_cp_wait<0>();
    __syncthreads();
    const int warp = threadIdx.x / 32;
    tt_fl_a(x, sx, 16 * warp);
    tt_fl_a(y, sy, 16 * warp);
    __syncthreads();
}

// acc[NT] += A (16 x 16 KSTEPS) B, B stored n-major: rows n0 .. n0 + 8 NT - 1 of s (pitch
// `pitch`), each row its k values contiguous (q + u against K's rows: A B = q k^T).
template <int NT, int KSTEPS>
__device__ __forceinline__ void tt_fl_mma_nk(float (&acc)[NT][4], const unsigned (&a)[KSTEPS][4],
                                             const tt_bf16 *s, int pitch, int n0)
{
    static_assert(NT % 2 == 0, "n8 tiles in pairs");
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int q = 0; q < NT / 2; q++) {
        const tt_bf16 *row = s + (n0 + q * 16 + (lane >> 4) * 8 + (lane & 7)) * pitch + ((lane >> 3) & 1) * 8;
#pragma unroll
        for (int ks = 0; ks < KSTEPS; ks++) {
            unsigned b[4];
            tt_ldsm(b, row + ks * 16);
            tt_mma(acc[2 * q], a[ks], b[0], b[1]);
            tt_mma(acc[2 * q + 1], a[ks], b[2], b[3]);
        }
    }
}

// acc[ND] += A (16 x 16) B, B stored k-major: rows k0 .. k0+15 of s (pitch SP), the head's DK
// columns (P' against V's rows: P' V).
__device__ __forceinline__ void tt_fl_mma_kn(float (&acc)[TT_ND][4], const unsigned (&a)[4],
                                             const tt_bf16 *s, int k0)
{
    const int lane = threadIdx.x % 32;
    const tt_bf16 *row = s + (k0 + (lane & 7) + ((lane >> 3) & 1) * 8) * TT_SP + (lane >> 4) * 8;
#pragma unroll
    for (int q = 0; q < TT_ND / 2; q++) {
        unsigned b[4];
        tt_ldsm_t(b, row + q * 16);
        tt_mma(acc[2 * q], a, b[0], b[1]);
        tt_mma(acc[2 * q + 1], a, b[2], b[3]);
    }
}

// n8 tiles 2 kk and 2 kk + 1 of accumulators as the A operand of a product over their columns.
__device__ __forceinline__ void tt_fl_pack(unsigned (&a)[4], const float (&x)[4], const float (&y)[4])
{
    a[0] = tt_pack_bf16(x[0], x[1]);
    a[1] = tt_pack_bf16(x[2], x[3]);
    a[2] = tt_pack_bf16(y[0], y[1]);
    a[3] = tt_pack_bf16(y[2], y[3]);
}

// rows of a warp's [16][ND n8 tiles] accumulators into [rows][DP] bf16 from row row0, rows < limit
__device__ __forceinline__ void tt_fl_store(tt_bf16 *dst, const float (&acc)[TT_ND][4], int row0, int limit,
                                            float s0, float s1)
{
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int r = row0 + (lane >> 2) + 8 * h;
        if (r >= limit) continue;
#pragma unroll
        for (int nt = 0; nt < TT_ND; nt++) {
            const int col = nt * 8 + (lane & 3) * 2;
            if (col >= TT_DP) continue;
            const float sc = h ? s1 : s0;
            *reinterpret_cast<unsigned *>(dst + (size_t)r * TT_DP + col) =
                tt_pack_bf16(acc[nt][2 * h] * sc, acc[nt][2 * h + 1] * sc);
        }
    }
}

// The first DH columns of rows row0 .. row0+15 (those below limit) of a warp's accumulators x
// (plus y when SUM) into the row at dst(r) of a projection's layout: 2-byte stores, as a head's
// DH values start at any element.
template <bool SUM, typename RowAt>
__device__ __forceinline__ void tt_fl_store_dh(const float (&x)[TT_ND][4], const float (&y)[TT_ND][4], int row0,
                                               int limit, RowAt dst)
{
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const int r = row0 + (lane >> 2) + 8 * h;
        if (r >= limit) continue;
        tt_bf16 *row = dst(r);
#pragma unroll
        for (int nt = 0; nt < TT_ND; nt++)
#pragma unroll
            for (int q = 0; q < 2; q++) {
                const int col = nt * 8 + (lane & 3) * 2 + q;
                if (col < TT_DH) row[col] = tt_store_as<tt_bf16>(x[nt][2 * h + q] + (SUM ? y[nt][2 * h + q] : 0.f));
            }
    }
}

// Max (or sum) over the four lanes that hold a row of an accumulator tile.
__device__ __forceinline__ float tt_fl_quad_max(float x)
{
    x = fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 1));
    return fmaxf(x, __shfl_xor_sync(0xffffffffu, x, 2));
}
__device__ __forceinline__ float tt_fl_quad_sum(float x)
{
    x += __shfl_xor_sync(0xffffffffu, x, 1);
    return x + __shfl_xor_sync(0xffffffffu, x, 2);
}

// Columns c0 .. c0 + 8 NT - 1 of the warp's BD tile ((q + v) against rows r0 + c0 .. of sr) into sbd.
template <int NT>
__device__ __forceinline__ void tt_fl_bd_part(const unsigned (&aqv)[TT_KS][4], const tt_bf16 *sr, float *sbd,
                                              int r0, int c0)
{
    const int lane = threadIdx.x % 32;
    float bd[NT][4];
    tt_fl_zero(bd);
    tt_fl_mma_nk<NT, TT_KS>(bd, aqv, sr, TT_SP, r0 + c0);
#pragma unroll
    for (int nt = 0; nt < NT; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) sbd[tt_acc_row(lane, e) * TT_XP + c0 + nt * 8 + tt_acc_col(lane, e)] = bd[nt][e];
}

// The warp's scaled, masked scores of rows iw .. iw+15 against keys j0 .. j0+63 (s: AC on entry,
// the scores on return, -inf where masked): BD from the warp's 80 rows of r in sr (the block's
// 128 from tb0 = n - 1 - (i0 + 63) + j0; the warp's start 48 - 16 w rows in), skewed through sbd.
__device__ __forceinline__ void tt_fl_scores(float (&s)[8][4], const unsigned (&aqv)[TT_KS][4],
                                             const tt_bf16 *sr, float *sbd, int warp, int iw, int j0,
                                             int n, int m, float scale)
{
    const int lane = threadIdx.x % 32;
    // in two parts of 48 and 32 columns, to hold fewer accumulators at once
    tt_fl_bd_part<6>(aqv, sr, sbd, 48 - 16 * warp, 0);
    tt_fl_bd_part<4>(aqv, sr, sbd, 48 - 16 * warp, 48);
    __syncwarp();
#pragma unroll
    for (int nt = 0; nt < 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int rr = tt_acc_row(lane, e), jj = nt * 8 + tt_acc_col(lane, e);
            const int i = iw + rr, j = j0 + jj;
            s[nt][e] = i < n && j <= m + i ? (s[nt][e] + sbd[rr * TT_XP + jj + 15 - rr]) * scale : TT_NEG_INF;
        }
    __syncwarp(); // sbd is written again by the next tile
}

// The reference's flat index of (sequence b, head c, query i): ((b H + c) n + i), times klen.
__device__ __forceinline__ unsigned long long tt_fl_ref(int b, int c, int i, int heads, int n, int klen)
{
    return (((unsigned long long)b * heads + c) * n + i) * (unsigned long long)klen;
}

#endif // TT_DK

#ifdef TT_OP_TXL_ATTN_FWD
extern "C" __global__ void __launch_bounds__(128)
TT_KERNEL(tt_bf16 *__restrict__ o, float *__restrict__ lse, const tt_bf16 *__restrict__ qu,
          const tt_bf16 *__restrict__ qv, const tt_bf16 *__restrict__ k, const tt_bf16 *__restrict__ v,
          const tt_bf16 *__restrict__ r, int batch, int heads, int n, int m, float scale, float p,
          unsigned long long seed, const unsigned long long *__restrict__ step, unsigned site, unsigned long long drop0)
{
    tt_pdl_begin();
    static_assert(TT_SMEM == (2 * TT_BK + TT_RT) * TT_SP * 2 + 4 * 16 * TT_XP * 4, "the plan's shared memory");
    extern __shared__ __align__(16) unsigned char smem_raw[];
    tt_bf16 *sk = reinterpret_cast<tt_bf16 *>(smem_raw), *sv = sk + TT_BK * TT_SP, *sr = sv + TT_BK * TT_SP;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    float *sbd = reinterpret_cast<float *>(sr + TT_RT * TT_SP) + warp * 16 * TT_XP;
    const int c = blockIdx.z, b = blockIdx.y, i0 = blockIdx.x * TT_BQ, klen = m + n;
    const size_t cb = (size_t)c * batch + b;
    const int iw = i0 + 16 * warp;

    tt_fl_zero_tail(sk, 2 * TT_BK + TT_RT);
    unsigned aqu[TT_KS][4], aqv[TT_KS][4];
    tt_fl_a2(aqu, aqv, sk, sv, qu + cb * n * TT_DP, qv + cb * n * TT_DP, i0, n);

    const uint64_t stream = tt_dropout_stream(*step, site);
    const float keep_scale = 1.f / (1.f - p);
    // in the loop in p's stead (no more registers); 0 (no dropout) where p > 0 is false, NaN too
    const unsigned keep_at = p > 0.f ? tt_keep_threshold(p) : 0u;
    float mrow[2] = {TT_NEG_INF, TT_NEG_INF}, lrow[2] = {0.f, 0.f}, acc[TT_ND][4];
    tt_fl_zero(acc);
    for (int j0 = 0, jend = tt_fl_key_end(i0, n, m); j0 < jend; j0 += TT_BK) {
        tt_fl_load_keys(sk, sv, sr, k + cb * klen * TT_DP, v + cb * klen * TT_DP, r + (size_t)c * klen * TT_DP,
                        i0, j0, n, klen);
        tt_cp_wait<0>();
        __syncthreads();
        if (iw >= n) { // a warp past the segment's rows only helps load
            __syncthreads();
            continue;
        }
        float s[8][4];
        tt_fl_zero(s);
        tt_fl_mma_nk<8, TT_KS>(s, aqu, sk, TT_SP, 0);
        tt_fl_scores(s, aqv, sr, sbd, warp, iw, j0, n, m, scale);
        // online softmax: each lane holds rows g (h 0) and g + 8 (h 1)
        float mx[2] = {mrow[0], mrow[1]};
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) mx[e >> 1] = fmaxf(mx[e >> 1], s[nt][e]);
        float base[2];
#pragma unroll
        for (int h = 0; h < 2; h++) {
            mx[h] = tt_fl_quad_max(mx[h]);
            base[h] = mx[h] == TT_NEG_INF ? 0.f : mx[h];
            const float alpha = mrow[h] == TT_NEG_INF ? 0.f : __expf(mrow[h] - base[h]);
            mrow[h] = mx[h];
            lrow[h] *= alpha;
#pragma unroll
            for (int nt = 0; nt < TT_ND; nt++) acc[nt][2 * h] *= alpha, acc[nt][2 * h + 1] *= alpha;
        }
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const float pe = __expf(s[nt][e] - base[e >> 1]); // 0 where masked
                lrow[e >> 1] += pe;
                float pd = pe;
                if (keep_at > 0u) {
                    const int i = iw + tt_acc_row(lane, e), j = j0 + nt * 8 + tt_acc_col(lane, e);
                    pd = i < n && tt_dropout_kept(seed, stream, drop0 + tt_fl_ref(b, c, i, heads, n, klen) + j, keep_at)
                             ? pe * keep_scale : 0.f;
                }
                s[nt][e] = pd;
            }
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            unsigned a[4];
            tt_fl_pack(a, s[2 * kk], s[2 * kk + 1]);
            tt_fl_mma_kn(acc, a, sv, kk * 16);
        }
        __syncthreads(); // the next tile's loads overwrite sk, sv, sr
    }
    float inv[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        lrow[h] = tt_fl_quad_sum(lrow[h]);
        inv[h] = lrow[h] > 0.f ? 1.f / lrow[h] : 0.f;
        const int i = iw + (lane >> 2) + 8 * h;
        if ((lane & 3) == 0 && i < n) lse[cb * n + i] = mrow[h] + logf(lrow[h]);
    }
    tt_fl_store(o + cb * n * TT_DP, acc, iw, n, inv[0], inv[1]);
}
#endif

#ifdef TT_OP_TXL_ATTN_BWD_Q
extern "C" __global__ void __launch_bounds__(128)
TT_KERNEL(tt_bf16 *__restrict__ dqkv, int ldq, float *__restrict__ uvpart, tt_bf16 *__restrict__ dbd,
          int ldb, const tt_bf16 *__restrict__ ds, int lds, const tt_bf16 *__restrict__ k,
          const tt_bf16 *__restrict__ r, int batch, int n, int m)
{
    tt_pdl_begin();
    static_assert(TT_SMEM == (TT_BK + TT_RT) * TT_SP * 2 + 4 * 16 * TT_DBP * 2, "the plan's shared memory");
    extern __shared__ __align__(16) unsigned char smem_raw[];
    tt_bf16 *sk = reinterpret_cast<tt_bf16 *>(smem_raw), *sr = sk + TT_BK * TT_SP;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    tt_bf16 *sdb = sr + TT_RT * TT_SP + warp * 16 * TT_DBP;
    const int c = blockIdx.z, b = blockIdx.y, i0 = blockIdx.x * TT_BQ, klen = m + n;
    const size_t cb = (size_t)c * batch + b;
    const int iw = i0 + 16 * warp;

    tt_fl_zero_tail(sk, TT_BK + TT_RT);
    for (int rr = 0; rr < 16 && iw + rr < n; rr++) // BD's columns no key reaches: t < n - 1 - i
        for (int t = lane; t < n - 1 - (iw + rr); t += 32) dbd[(cb * n + iw + rr) * ldb + t].bits = 0;
    float gu[TT_ND][4], gv[TT_ND][4];
    tt_fl_zero(gu);
    tt_fl_zero(gv);
    for (int j0 = 0, jend = tt_fl_key_end(i0, n, m); j0 < jend; j0 += TT_BK) {
        tt_fl_load(sk, TT_BK, k + cb * klen * TT_DP, j0, klen);
        tt_fl_load(sr, TT_RT, r + (size_t)c * klen * TT_DP, n - 1 - (i0 + TT_BQ - 1) + j0, klen);
        tt_cp_commit();
        for (int e = lane; e < 16 * TT_DBP / 2; e += 32) reinterpret_cast<unsigned *>(sdb)[e] = 0u;
        // the warp's rows of dS (as txl_attn_bwd_kv stored it; 0 where masked) in the
        // accumulators' layout, a pair of keys a register: the A operand of dS K as it stands
        unsigned w[8][2];
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int i = iw + (lane >> 2) + 8 * h, j = j0 + nt * 8 + (lane & 3) * 2;
                unsigned x = 0u;
                if (i < n && j <= m + i) {
                    x = *reinterpret_cast<const unsigned *>(ds + (cb * n + i) * lds + j);
                    if (j + 1 > m + i) x &= 0xffffu; // the pair's second key is not seen
                }
                w[nt][h] = x;
            }
        tt_cp_wait<0>();
        __syncthreads();
        if (iw >= n) { // a warp past the segment's rows only helps load
            __syncthreads();
            continue;
        }
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
#pragma unroll
            for (int h = 0; h < 2; h++)
#pragma unroll
                for (int q = 0; q < 2; q++) { // skewed onto BD's columns: c = jj + 15 - rr
                    const int rr = (lane >> 2) + 8 * h, jj = nt * 8 + (lane & 3) * 2 + q;
                    sdb[rr * TT_DBP + jj + 15 - rr].bits = (unsigned short)(w[nt][h] >> (16 * q));
                }
        __syncwarp();
#pragma unroll
        for (int kk = 0; kk < 4; kk++) { // d(q + u) += dS K
            const unsigned a[4] = {w[2 * kk][0], w[2 * kk][1], w[2 * kk + 1][0], w[2 * kk + 1][1]};
            tt_fl_mma_kn(gu, a, sk, kk * 16);
        }
        const tt_bf16 *arow = sdb + (lane & 15) * TT_DBP + (lane >> 4) * 8;
#pragma unroll
        for (int kc = 0; kc < TT_WT / 16; kc++) { // d(q + v) += dBD r over the warp's 80 rows of r
            unsigned a[4];
            tt_ldsm(a, arow + kc * 16);
            tt_fl_mma_kn(gv, a, sr, 48 - 16 * warp + kc * 16);
        }
        // dbd's columns t = n - 1 - i + j of this tile's visible keys
        for (int rr = 0; rr < 16; rr++) {
            const int i = iw + rr;
            if (i >= n) break;
            const int jmax = m + i < j0 + TT_BK - 1 ? m + i : j0 + TT_BK - 1; // the last visible key
            tt_bf16 *row = dbd + (cb * n + i) * ldb + (n - 1 - i);
            for (int jj = lane; j0 + jj <= jmax; jj += 32) row[j0 + jj] = sdb[rr * TT_DBP + jj + 15 - rr];
        }
        __syncthreads(); // the next tile's loads overwrite sk, sr; sdb is zeroed again
    }
    // dq = d(q + u) + d(q + v) into the segment's rows of dqkv
    tt_fl_store_dh<true>(gu, gv, iw, n, [&](int i) { return dqkv + ((size_t)b * n + i) * ldq + c * TT_DH; });
    // the block's column sums of d(q + u) and d(q + v) (rows past n hold zeros): over a warp's
    // rows by shuffles, then over the warps in order, through sdb's space
    float *ssum = reinterpret_cast<float *>(sr + TT_RT * TT_SP); // [4 warps][2][DK]
    static_assert(4 * 2 * TT_DK * 4 <= 4 * 16 * TT_DBP * 2, "the sums fit sdb's space");
    __syncthreads(); // every warp is past its last use of sdb
#pragma unroll
    for (int nt = 0; nt < TT_ND; nt++)
#pragma unroll
        for (int q = 0; q < 2; q++) {
            float su = gu[nt][q] + gu[nt][2 + q], sv2 = gv[nt][q] + gv[nt][2 + q];
#pragma unroll
            for (int sh = 4; sh < 32; sh *= 2) {
                su += __shfl_xor_sync(0xffffffffu, su, sh);
                sv2 += __shfl_xor_sync(0xffffffffu, sv2, sh);
            }
            if (lane < 4) {
                const int col = nt * 8 + lane * 2 + q;
                ssum[(warp * 2 + 0) * TT_DK + col] = su;
                ssum[(warp * 2 + 1) * TT_DK + col] = sv2;
            }
        }
    __syncthreads();
    float *part = uvpart + (cb * gridDim.x + blockIdx.x) * 2 * TT_DH;
    for (int e = threadIdx.x; e < 2 * TT_DH; e += blockDim.x) {
        const int which = e / TT_DH, col = e % TT_DH;
        float t = 0.f;
        for (int w = 0; w < 4; w++) t += ssum[(w * 2 + which) * TT_DK + col];
        part[e] = t;
    }
}
#endif

#ifdef TT_OP_TXL_ATTN_BWD_KV
extern "C" __global__ void __launch_bounds__(128)
TT_KERNEL(tt_bf16 *__restrict__ dqkv, tt_bf16 *__restrict__ dkvm, int ldq, int ldkv, int hs,
          tt_bf16 *__restrict__ ds, int lds, const tt_bf16 *__restrict__ qu, const tt_bf16 *__restrict__ qv,
          const tt_bf16 *__restrict__ k, const tt_bf16 *__restrict__ v, const tt_bf16 *__restrict__ r,
          const tt_bf16 *__restrict__ o, const tt_bf16 *__restrict__ dout, const float *__restrict__ lse,
          int batch, int heads, int n, int m, float scale, float p, unsigned long long seed,
          const unsigned long long *__restrict__ step, unsigned site, unsigned long long drop0)
{
    tt_pdl_begin();
    static_assert(TT_SMEM == (3 * TT_BQ + TT_RT) * TT_SP * 2 + TT_RT * TT_XQ * 4 + 2 * TT_BQ * 4 +
                                 TT_BQ * TT_STP * 2,
                  "the plan's shared memory");
    extern __shared__ __align__(16) unsigned char smem_raw[];
    tt_bf16 *sq = reinterpret_cast<tt_bf16 *>(smem_raw), *sqv = sq + TT_BQ * TT_SP, *sdo = sqv + TT_BQ * TT_SP;
    tt_bf16 *sr = sdo + TT_BQ * TT_SP;
    float *sx = reinterpret_cast<float *>(sr + TT_RT * TT_SP), *slse = sx + TT_RT * TT_XQ, *sd = slse + TT_BQ;
    tt_bf16 *sds = reinterpret_cast<tt_bf16 *>(sd + TT_BQ); // [64 queries][STP]: dS, query-major
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int c = blockIdx.z, b = blockIdx.y, j0 = blockIdx.x * TT_BK, klen = m + n;
    const size_t cb = (size_t)c * batch + b;
    const int jw = j0 + 16 * warp;

    tt_fl_zero_tail(sq, 3 * TT_BQ + TT_RT);
    unsigned ak[TT_KS][4], av[TT_KS][4];
    tt_fl_a2(ak, av, sq, sqv, k + cb * klen * TT_DP, v + cb * klen * TT_DP, j0, klen);

    const uint64_t stream = tt_dropout_stream(*step, site);
    const float keep_scale = 1.f / (1.f - p);
    // in the loop in p's stead (no more registers); 0 (no dropout) where p > 0 is false, NaN too
    const unsigned keep_at = p > 0.f ? tt_keep_threshold(p) : 0u;
    float gk[TT_ND][4], gv[TT_ND][4];
    tt_fl_zero(gk);
    tt_fl_zero(gv);
    // the queries that see a key of the block: m + i >= j0
    for (int i0 = j0 - m > 0 ? j0 - m : 0; i0 < n; i0 += TT_BQ) {
        const int tb0 = n - 1 - (i0 + TT_BQ - 1) + j0;
        tt_fl_load(sq, TT_BQ, qu + cb * n * TT_DP, i0, n);
        tt_fl_load(sqv, TT_BQ, qv + cb * n * TT_DP, i0, n);
        tt_fl_load(sdo, TT_BQ, dout + cb * n * TT_DP, i0, n);
        tt_fl_load(sr, TT_RT, r + (size_t)c * klen * TT_DP, tb0, klen);
        tt_cp_commit();
        if (threadIdx.x < TT_BQ) {
            const int i = i0 + threadIdx.x;
            slse[threadIdx.x] = i < n ? lse[cb * n + i] : 0.f;
        }
        tt_cp_wait<0>();
        __syncthreads();
        {   // D of the tile's queries (dO from shared memory, o as the forward stored it): a lane
            // pair a row, 16-byte vectors over each half; published by the next barrier
            const int ii = threadIdx.x >> 1, i = i0 + ii;
            float x = 0.f;
            if (i < n)
                for (int ch = threadIdx.x & 1; ch < TT_DP / 8; ch += 2) {
                    float a[8], e8[8];
                    tt_load<8>(a, sdo + ii * TT_SP + ch * 8);
                    tt_load<8>(e8, o + (cb * n + i) * TT_DP + ch * 8);
#pragma unroll
                    for (int e = 0; e < 8; e++) x += a[e] * e8[e];
                }
            x += __shfl_xor_sync(0xffffffffu, x, 1);
            if ((threadIdx.x & 1) == 0) sd[ii] = x;
        }
        // X[x][ii] = r_{tb0 + x} . (q + v)_{i0 + ii}: the warp's 32 rows of the 128
#pragma unroll
        for (int mt = 0; mt < 2; mt++) {
            unsigned ar[TT_KS][4];
            tt_fl_a(ar, sr, 32 * warp + 16 * mt);
            float x[8][4];
            tt_fl_zero(x);
            tt_fl_mma_nk<8, TT_KS>(x, ar, sqv, TT_SP, 0);
#pragma unroll
            for (int nt = 0; nt < 8; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++)
                    sx[(32 * warp + 16 * mt + tt_acc_row(lane, e)) * TT_XQ + nt * 8 + tt_acc_col(lane, e)] = x[nt][e];
        }
        __syncthreads();
        // S^T (the warp's 16 keys x 64 queries) and dP'^T = V dO^T
        float st[8][4], dpt[8][4];
        tt_fl_zero(st);
        tt_fl_zero(dpt);
        tt_fl_mma_nk<8, TT_KS>(st, ak, sq, TT_SP, 0);
        tt_fl_mma_nk<8, TT_KS>(dpt, av, sdo, TT_SP, 0);
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int rr = tt_acc_row(lane, e), ii = nt * 8 + tt_acc_col(lane, e);
                const int j = jw + rr, i = i0 + ii;
                const bool vis = i < n && j <= m + i; // j < klen follows
                // t - tb0 = (n - 1 - i + j) - (n - 1 - (i0 + 63) + j0)
                const float sc = (st[nt][e] + sx[(TT_BQ - 1 - ii + 16 * warp + rr) * TT_XQ + ii]) * scale;
                const float pr = vis ? __expf(sc - slse[ii]) : 0.f;
                float kp = 1.f;
                if (keep_at > 0u)
                    kp = vis && tt_dropout_kept(seed, stream, drop0 + tt_fl_ref(b, c, i, heads, n, klen) + j, keep_at)
                             ? keep_scale : 0.f;
                st[nt][e] = pr * kp;                                  // P'^T
                dpt[nt][e] = pr * (dpt[nt][e] * kp - sd[ii]) * scale; // dS^T
                sds[ii * TT_STP + 16 * warp + rr] = tt_store_as<tt_bf16>(dpt[nt][e]);
            }
#pragma unroll
        for (int kk = 0; kk < 4; kk++) {
            unsigned a[4];
            tt_fl_pack(a, st[2 * kk], st[2 * kk + 1]);
            tt_fl_mma_kn(gv, a, sdo, kk * 16); // dV += P'^T dO
            tt_fl_pack(a, dpt[2 * kk], dpt[2 * kk + 1]);
            tt_fl_mma_kn(gk, a, sq, kk * 16); // dK += dS^T (q + u)
        }
        __syncthreads(); // sds is whole
        // dS's rows i0 .. (those below n), the block's 64 keys each, for txl_attn_bwd_q
        for (int e = threadIdx.x; e < TT_BQ * (TT_BK / 8); e += blockDim.x) {
            const int ii = e / (TT_BK / 8), ch = e % (TT_BK / 8);
            if (i0 + ii < n)
                *reinterpret_cast<uint4 *>(ds + (cb * n + i0 + ii) * lds + j0 + ch * 8) =
                    *reinterpret_cast<const uint4 *>(sds + ii * TT_STP + ch * 8);
        }
        __syncthreads(); // the next tile's loads overwrite every shared tile
    }
    // key j: the memory's row b m + j of dkvm (k at 0, v at hs), else the segment's b n + j - m
    // of dqkv (k at hs, v at 2 hs)
    auto krow = [&](int j, int part) {
        return j < m ? dkvm + ((size_t)b * m + j) * ldkv + (part - 1) * hs + c * TT_DH
                     : dqkv + ((size_t)b * n + j - m) * ldq + part * hs + c * TT_DH;
    };
    tt_fl_store_dh<false>(gk, gk, jw, klen, [&](int j) { return krow(j, 1); });
    tt_fl_store_dh<false>(gv, gv, jw, klen, [&](int j) { return krow(j, 2); });
}
#endif

#ifdef TT_OP_TXL_UV_SUM
// du [H DH] += the sum of the partials' first halves, dv += their second (the biases are shared by
// every layer): a warp per element, its lanes over the (sequence, query tile) partials of its
// head, a fixed butterfly: deterministic.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(float *__restrict__ du, float *__restrict__ dv, const float *__restrict__ uvpart, int batch,
          int tiles)
{
    tt_pdl_begin();
    const int lane = threadIdx.x % 32, w = blockIdx.x * (TT_THREADS / 32) + threadIdx.x / 32;
    if (w >= 2 * TT_H * TT_DH) return;
    const int which = w / (TT_H * TT_DH), col = w % (TT_H * TT_DH), c = col / TT_DH, e = col % TT_DH;
    const float *src = uvpart + (size_t)c * batch * tiles * 2 * TT_DH + which * TT_DH + e;
    float s = 0.f;
    for (int t = lane; t < batch * tiles; t += 32) s += src[(size_t)t * 2 * TT_DH];
    s = tt_group_sum<32>(s);
    if (lane == 0) (which ? dv : du)[col] += s;
}
#endif
