// Multi-linear attention on bf16 tensor cores (mma.sync m16n8k16, fp32 accumulation): the same
// computations as templates/mla.cu (read it first for the notation), as chains of small matrix
// products whose intermediate tiles stay in registers. T is never written to memory.
//
// The two stages of the forward are matrix products: for a key position j,
//   T_j = A_j V^T       (rows i x keys k; A_j = g*Q scaled by K_j, the contraction over r)
//   Y  += T_j Wo_j^T    (Wo_j = the N columns of Wo for j; the contraction over k)
// A warp owns 16 rows of one sequence. It forms T_j 16 keys at a time in the accumulators of
// stage 1, masks them, and feeds them as the A operand of stage 2 without leaving registers (the
// accumulator layout of m16n8 is the operand layout of m16k16). Under the causal mask a tile of
// rows stops j and k at its last row: masked (j, k) tiles are never visited.
// Constants: TT_N, TT_R, TT_D, TT_CAUSAL, TT_POS_KEY, TT_G (warps per block), TT_TD, TT_THREADS.
// bf16 only: qkv, wo, p, y are tt_bf16; g, u, v fp32.

#define TT_RK ((TT_R + 15) / 16)        // k-steps of 16 over the rank
#define TT_NPAD ((TT_N + 15) / 16 * 16) // keys, in whole chunks of 16
// Row pitches of the shared tiles, in bf16: 8 more than a multiple of 16, so that the 8 rows a
// fragment load touches fall on distinct banks.
#define TT_SR (TT_RK * 16 + 8)
#define TT_SW (TT_NPAD + 8)

// d += a b: one m16n8k16 product, bf16 inputs, fp32 accumulators.
__device__ __forceinline__ void tt_mma(float (&d)[4], const unsigned (&a)[4], unsigned b0, unsigned b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, "
                 "{%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// Two floats as a bf16 pair, lo in the low half, each rounded to nearest even.
__device__ __forceinline__ unsigned tt_pack_bf16(float lo, float hi)
{
    unsigned d;
    asm("cvt.rn.bf16x2.f32 %0, %1, %2;\n" : "=r"(d) : "f"(hi), "f"(lo));
    return d;
}

__device__ __forceinline__ unsigned tt_lds32(const tt_bf16 *p)
{
    return *reinterpret_cast<const unsigned *>(p);
}

// Element (row, col) of a warp's m16n8 accumulator tile that register e of lane holds.
__device__ __forceinline__ int tt_acc_row(int lane, int e) { return (lane >> 2) + (e >= 2 ? 8 : 0); }
__device__ __forceinline__ int tt_acc_col(int lane, int e) { return (lane & 3) * 2 + (e & 1); }

// The rank index of a lane's A-operand element e (0..7) in k-step ks: pairs at 2t and 2t+8.
__device__ __forceinline__ int tt_frag_r(int lane, int ks, int e)
{
    return ks * 16 + (lane & 3) * 2 + (e & 1) + (e >= 4 ? 8 : 0);
}

// rows (b, row0 .. row0+15) x rank of a sequence's Q (+ add) times g, in A-operand order, fp32;
// zero past the sequence or the rank.
__device__ __forceinline__ void tt_load_gq(float (&gq)[TT_RK][8], const tt_bf16 *seq, int row0,
                                           bool live, const float *g, const float *add)
{
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int ks = 0; ks < TT_RK; ks++)
#pragma unroll
        for (int e = 0; e < 8; e++) {
            const int r = tt_frag_r(lane, ks, e), i = row0 + (lane >> 2) + ((e >> 1) & 1) * 8;
            float x = 0.f;
            if (live && r < TT_R && i < TT_N) {
                x = tt_float(seq[(size_t)i * 3 * TT_R + r]);
                if (add) x += add[r];
                x *= g[r];
            }
            gq[ks][e] = x;
        }
}

// The A operand of stage 1 for key position j: a[ks] = gq * (K_j (+ P_j against gqv)).
__device__ __forceinline__ void tt_make_aj(unsigned (&a)[TT_RK][4], const float (&gq)[TT_RK][8],
                                           const float (&gqv)[TT_RK][8], const tt_bf16 *kj,
                                           const tt_bf16 *pj)
{
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int ks = 0; ks < TT_RK; ks++) {
        float f[4]; // factors of the lane's ranks 2t, 2t+1, 2t+8, 2t+9
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const int r = tt_frag_r(lane, ks, q < 2 ? q : q + 2);
            f[q] = r < TT_R ? tt_float(kj[r]) : 0.f;
        }
        float x[8];
#pragma unroll
        for (int e = 0; e < 8; e++) x[e] = gq[ks][e] * f[(e & 1) + (e >= 4 ? 2 : 0)];
#if TT_POS_KEY
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const int r = tt_frag_r(lane, ks, q < 2 ? q : q + 2);
            f[q] = r < TT_R ? tt_float(pj[r]) : 0.f;
        }
#pragma unroll
        for (int e = 0; e < 8; e++) x[e] += gqv[ks][e] * f[(e & 1) + (e >= 4 ? 2 : 0)];
#else
        (void)gqv, (void)pj;
#endif
        // registers: (row g, r 2t..), (row g+8, r 2t..), (row g, r 2t+8..), (row g+8, r 2t+8..)
        a[ks][0] = tt_pack_bf16(x[0], x[1]);
        a[ks][1] = tt_pack_bf16(x[2], x[3]);
        a[ks][2] = tt_pack_bf16(x[4], x[5]);
        a[ks][3] = tt_pack_bf16(x[6], x[7]);
    }
}

// A sequence's V [N, R] into a shared tile [NPAD][SR], zero-padded, by the threads of one warp.
__device__ __forceinline__ void tt_load_v_tile(tt_bf16 *sv, const tt_bf16 *seq, bool live)
{
    const int lane = threadIdx.x % 32;
    for (int e = lane; e < TT_NPAD * TT_SR; e += 32) {
        const int k = e / TT_SR, r = e % TT_SR;
        tt_bf16 x;
        x.bits = 0;
        if (live && k < TT_N && r < TT_R) x = seq[(size_t)k * 3 * TT_R + 2 * TT_R + r];
        sv[e] = x;
    }
}

// Stage 1 for 16 keys kc..kc+15: t (two m16n8 tiles) = A_j V[kc..]^T, masked by (row, j, key).
__device__ __forceinline__ void tt_t_chunk(float (&t)[2][4], const unsigned (&a)[TT_RK][4],
                                           const tt_bf16 *sv, int kc, int row0, int j)
{
    const int lane = threadIdx.x % 32, gi = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int nt = 0; nt < 2; nt++) {
#pragma unroll
        for (int e = 0; e < 4; e++) t[nt][e] = 0.f;
        const tt_bf16 *vrow = sv + (size_t)(kc + nt * 8 + gi) * TT_SR + tq * 2;
#pragma unroll
        for (int ks = 0; ks < TT_RK; ks++)
            tt_mma(t[nt], a[ks], tt_lds32(vrow + ks * 16), tt_lds32(vrow + ks * 16 + 8));
#if TT_CAUSAL
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int i = row0 + tt_acc_row(lane, e), k = kc + nt * 8 + tt_acc_col(lane, e);
            if (j > i || k > i) t[nt][e] = 0.f;
        }
#else
        (void)row0, (void)j;
#endif
    }
}

// The accumulators of stage 1 as the A operand of stage 2 (keys are its k dimension).
__device__ __forceinline__ void tt_acc_to_a(unsigned (&a)[4], const float (&t)[2][4])
{
    a[0] = tt_pack_bf16(t[0][0], t[0][1]);
    a[1] = tt_pack_bf16(t[0][2], t[0][3]);
    a[2] = tt_pack_bf16(t[1][0], t[1][1]);
    a[3] = tt_pack_bf16(t[1][2], t[1][3]);
}

// Columns j*N + k0 .. k0+kn-1 of rows d0 .. d0+rows-1 of Wo [D, N*N] into sw [rows][SW] (zero
// past D or N), by the whole block; 16-byte loads when N keeps them aligned.
__device__ __forceinline__ void tt_load_wo_slab(tt_bf16 *sw, const tt_bf16 *wo, int d0, int rows,
                                                int j, int kn)
{
#if TT_N % 8 == 0
    const int per_row = kn / 8;
    for (int e = threadIdx.x; e < rows * per_row; e += TT_THREADS) {
        const int dd = e / per_row, k = (e % per_row) * 8;
        uint4 x = make_uint4(0, 0, 0, 0);
        if (d0 + dd < TT_D && k < TT_N)
            x = *reinterpret_cast<const uint4 *>(wo + (size_t)(d0 + dd) * TT_N * TT_N + (size_t)j * TT_N + k);
        *reinterpret_cast<uint4 *>(sw + (size_t)dd * TT_SW + k) = x;
    }
#else
    for (int e = threadIdx.x; e < rows * kn; e += TT_THREADS) {
        const int dd = e / kn, k = e % kn;
        tt_bf16 x;
        x.bits = 0;
        if (d0 + dd < TT_D && k < TT_N) x = wo[(size_t)(d0 + dd) * TT_N * TT_N + (size_t)j * TT_N + k];
        sw[(size_t)dd * TT_SW + k] = x;
    }
#endif
}

#ifdef TT_OP_MLA_FWD
// Block: rows i0 .. i0+15 of TT_G sequences (one per warp) and TT_TD output features. The row
// tiles with the most work come first under the mask. Dynamic shared memory:
// V tiles [G][NPAD][SR], then the Wo slab of j [TD][SW].
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ y, const TT_T *__restrict__ qkv, const float *__restrict__ g,
          const TT_T *__restrict__ wo, const TT_T *__restrict__ p, const float *__restrict__ u,
          const float *__restrict__ v, int batch)
{
    extern __shared__ __align__(16) tt_bf16 smem[];
    tt_bf16 *sv_all = smem, *sw = smem + (size_t)TT_G * TT_NPAD * TT_SR;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, gi = lane >> 2, tq = lane & 3;
    const int it = TT_CAUSAL ? gridDim.x - 1 - blockIdx.x : blockIdx.x;
    const int i0 = it * 16, d0 = blockIdx.z * TT_TD, b = blockIdx.y * TT_G + warp;
    const bool live = b < batch;
    const tt_bf16 *seq = qkv + (size_t)(live ? b : 0) * TT_N * 3 * TT_R;
    tt_bf16 *sv = sv_all + (size_t)warp * TT_NPAD * TT_SR;

    float gq[TT_RK][8], gqv[TT_RK][8];
#if TT_POS_KEY
    tt_load_gq(gq, seq, i0, live, g, u);
    tt_load_gq(gqv, seq, i0, live, g, v);
#else
    (void)p, (void)u, (void)v;
    tt_load_gq(gq, seq, i0, live, g, nullptr);
#endif
    tt_load_v_tile(sv, seq, live);

    float acc[TT_TD / 8][4];
#pragma unroll
    for (int nt = 0; nt < TT_TD / 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) acc[nt][e] = 0.f;

    const int jend = TT_CAUSAL ? min(i0 + 16, TT_N) : TT_N; // j and k both stop here
    const int kn = (jend + 15) / 16 * 16;
    for (int j = 0; j < jend; j++) {
        __syncthreads(); // the previous slab is no longer read (and the V tiles are written)
        tt_load_wo_slab(sw, wo, d0, TT_TD, j, kn);
        unsigned a[TT_RK][4];
        tt_make_aj(a, gq, gqv, seq + (size_t)j * 3 * TT_R + TT_R, TT_POS_KEY ? p + (size_t)j * TT_R : p);
        __syncthreads();
        for (int kc = 0; kc < kn; kc += 16) {
            float t[2][4];
            tt_t_chunk(t, a, sv, kc, i0, j);
            unsigned ta[4];
            tt_acc_to_a(ta, t);
            const tt_bf16 *wrow = sw + (size_t)gi * TT_SW + kc + tq * 2;
#pragma unroll
            for (int nt = 0; nt < TT_TD / 8; nt++)
                tt_mma(acc[nt], ta, tt_lds32(wrow + (size_t)nt * 8 * TT_SW),
                       tt_lds32(wrow + (size_t)nt * 8 * TT_SW + 8));
        }
    }
    if (!live) return;
#pragma unroll
    for (int nt = 0; nt < TT_TD / 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int i = i0 + tt_acc_row(lane, e), d = d0 + nt * 8 + tt_acc_col(lane, e);
            if (i < TT_N && d < TT_D) y[((size_t)b * TT_N + i) * TT_D + d] = tt_store_as<TT_T>(acc[nt][e]);
        }
}
#endif
