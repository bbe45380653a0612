// ttgen: needs mla_geom.cuh
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
// On Hopper (TT_WG, built for sm_90a) the large products of the three kernels run on wgmma: a
// warpgroup's four warps feed their stage-1 accumulators (or dY's rows) as its A operand in
// registers, and the operand they share comes into shared memory by the tensor memory
// accelerator and is read by the tensor cores once for the warpgroup (each kernel says how).
// Constants: TT_N, TT_R, TT_D, TT_CAUSAL, TT_POS_KEY, TT_G (warps per block), TT_TD, TT_THREADS,
// TT_WG.
// bf16 only: qkv, wo, p, y are tt_bf16; g, u, v fp32.
// Tunable (ttgen --tune times them; the plan's heuristic otherwise): sequences (warps) per block,
// features per block and slabs of Wo of the forward; j (warps) per block, features per block and
// splits of the batch of mla_bwd_wo; sequences per block and key positions per part of mla_bwd_q;
// and for each, wgmma or mma.sync (WG, on sm_90).
// ttgen: tunable mla_fwd G 1 2 4 8
// ttgen: tunable mla_fwd TD 32 64 128 192 256
// ttgen: tunable mla_fwd WG 0 1
// ttgen: tunable mla_fwd NS 2 3
// ttgen: tunable mla_bwd_wo W 2 4 8 16
// ttgen: tunable mla_bwd_wo TD 32 64 128 192 256
// ttgen: tunable mla_bwd_wo WG 0 1
// ttgen: tunable mla_bwd_wo S 1 2 4 6 8 12 16
// ttgen: tunable mla_bwd_q G 1 2 4 8
// ttgen: tunable mla_bwd_q JS 8 16
// ttgen: tunable mla_bwd_q WG 0 1
// and of both, the blocks an SM should hold at once (MINB: fewer registers a thread as it grows,
// and spills past the register file's share; 0, the heuristic's, leaves it to the compiler):
// ttgen: tunable mla_fwd MINB 0 2 3 4
// ttgen: tunable mla_bwd_q MINB 0 2 3 4
// (mla_bwd_wo's heuristic: 512 / THREADS, at most 128 registers a thread)
// ttgen: tunable mla_bwd_wo MINB 1 2 3 4

#define TT_RK ((TT_R + 15) / 16)        // k-steps of 16 over the rank
#define TT_NPAD ((TT_N + 15) / 16 * 16) // keys, in whole chunks of 16
// Row pitches of the shared tiles, in bf16: 8 more than a multiple of 16, so that the 8 rows a
// fragment load touches fall on distinct banks.
#define TT_SR (TT_RK * 16 + 8)
#define TT_SW (TT_NPAD + 8)
#ifdef TT_TD
static_assert(TT_TD % 8 == 0, "feature tiles are whole n8 tiles");
#endif


__device__ __forceinline__ unsigned tt_lds32(const tt_bf16 *p)
{
    return *reinterpret_cast<const unsigned *>(p);
}

// An 8x8 bf16 matrix transposed in registers: the lane holding (g, 2t), (g, 2t+1) of it gets
// (2t, g), (2t+1, g) back.
__device__ __forceinline__ unsigned tt_movm_t(unsigned x)
{
    unsigned d;
    asm volatile("movmatrix.sync.aligned.m8n8.trans.b16 %0, %1;\n" : "=r"(d) : "r"(x));
    return d;
}


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


// Rows row0 .. row0+NROWS-1 of one of a sequence's Q, K, V (column offset off in qkv's rows of
// 3R) into a shared tile [NROWS][SR] by the threads of one warp, zero past N and from R to the
// k-steps' end (the columns ldmatrix reads). With R a multiple of 8 (rows of qkv 16-byte
// aligned), asynchronously: the caller commits and waits.
// Rows from upto on are left alone (nobody reads them).
template <int NROWS>
__device__ __forceinline__ void tt_load_rows(tt_bf16 *dst, const tt_bf16 *seq, int row0, int upto,
                                             int off, bool live)
{
    const int lane = threadIdx.x % 32;
#if TT_R % 8 == 0
    constexpr int CH = TT_RK * 2; // 16-byte chunks of a row up to the k-steps' end
#pragma unroll
    for (int e = lane; e < NROWS * CH; e += 32) {
        const int row = e / CH, c = e % CH, k = row0 + row;
        if (row >= upto) break;
        const bool in = live && k < TT_N && c * 8 < TT_R;
        tt_cp16(dst + (size_t)row * TT_SR + c * 8, in ? seq + (size_t)k * 3 * TT_R + off + c * 8 : seq, in);
    }
#else
    for (int e = lane; e < NROWS * TT_RK * 16; e += 32) {
        const int row = e / (TT_RK * 16), r = e % (TT_RK * 16), k = row0 + row;
        if (row >= upto) break;
        tt_bf16 x;
        x.bits = 0;
        if (live && k < TT_N && r < TT_R) x = seq[(size_t)k * 3 * TT_R + off + r];
        dst[(size_t)row * TT_SR + r] = x;
    }
#endif
}

// Stage 1 for 16 keys kc..kc+15: t (two m16n8 tiles) = A_j V[kc..]^T, masked by (row, j, key)
// where the tile (rows row0..row0+15) sees a masked (j, key) at all. V's fragments come by
// ldmatrix: per k-step one x4 gives both n8 tiles' B operands.
__device__ __forceinline__ void tt_t_chunk(float (&t)[2][4], const unsigned (&a)[TT_RK][4],
                                           const tt_bf16 *sv, int kc, int row0, int j)
{
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int nt = 0; nt < 2; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) t[nt][e] = 0.f;
    // matrix q = lane / 8: keys kc + (q / 2) * 8 + lane % 8, ranks ks * 16 + (q % 2) * 8
    const tt_bf16 *vrow = sv + (size_t)(kc + (lane >> 4) * 8 + (lane & 7)) * TT_SR + ((lane >> 3) & 1) * 8;
#pragma unroll
    for (int ks = 0; ks < TT_RK; ks++) {
        unsigned b[4];
        tt_ldsm(b, vrow + ks * 16);
        tt_mma(t[0], a[ks], b[0], b[1]);
        tt_mma(t[1], a[ks], b[2], b[3]);
    }
#if TT_CAUSAL
    if (j > row0 || kc + 15 > row0) { // some (row, j, key) of the tile is masked
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int i = row0 + tt_acc_row(lane, e), k = kc + nt * 8 + tt_acc_col(lane, e);
                if (j > i || k > i) t[nt][e] = 0.f;
            }
    }
#else
    (void)row0, (void)j;
#endif
}

// The accumulators of stage 1 as the A operand of stage 2 (keys are its k dimension).
__device__ __forceinline__ void tt_acc_to_a(unsigned (&a)[4], const float (&t)[2][4])
{
    a[0] = tt_pack_bf16(t[0][0], t[0][1]);
    a[1] = tt_pack_bf16(t[0][2], t[0][3]);
    a[2] = tt_pack_bf16(t[1][0], t[1][1]);
    a[3] = tt_pack_bf16(t[1][2], t[1][3]);
}

// kn (<= KMAX) columns of rows d0 .. d0+ROWS-1 of Wo [D, N*N], starting at column col
// (= j*N + k0), into sw [ROWS][pitch]; zero past D and past the kvalid columns that still
// belong to j (N - k0). By the whole block. When N keeps rows of Wo 16-byte aligned,
// asynchronously (cp.async: the caller commits and waits), each thread at fixed rows and
// chunks (pairs of threads share a row's 32-byte sectors), so that the addresses are a base
// and constants; else with plain loads.
template <int ROWS, int KMAX>
__device__ __forceinline__ void tt_load_wo_slab(tt_bf16 *sw, int pitch, const tt_bf16 *wo, int d0,
                                                size_t col, int kn, int kvalid)
{
#if TT_N % 8 == 0
    constexpr int CH = KMAX / 8, PAIR = CH % 2 == 0 ? 2 : 1, RPP = TT_THREADS / PAIR;
    const int half = threadIdx.x % PAIR, rt = threadIdx.x / PAIR;
    // one base pointer; the passes' rows are constant offsets from it
    const tt_bf16 *src0 = wo + (size_t)(d0 + rt) * TT_N * TT_N + col;
#pragma unroll
    for (int pass = 0; pass < (ROWS + RPP - 1) / RPP; pass++) {
        const int row = rt + pass * RPP;
        if (ROWS % RPP != 0 && row >= ROWS) break;
        tt_bf16 *dst = sw + (size_t)row * pitch;
        if (TT_D % ROWS == 0 || d0 + row < TT_D) { // a row of Wo
            const tt_bf16 *src = src0 + (size_t)pass * RPP * TT_N * TT_N;
#pragma unroll
            for (int c = half; c < CH; c += PAIR)
                if (c * 8 < kn) tt_cp16(dst + c * 8, c * 8 < kvalid ? src + c * 8 : wo, c * 8 < kvalid);
        } else {
#pragma unroll
            for (int c = half; c < CH; c += PAIR)
                if (c * 8 < kn) tt_cp16(dst + c * 8, wo, false);
        }
    }
#else
    for (int e = threadIdx.x; e < ROWS * KMAX; e += TT_THREADS) {
        const int dd = e / KMAX, k = e % KMAX;
        if (k >= kn) continue;
        tt_bf16 x;
        x.bits = 0;
        if (d0 + dd < TT_D && k < kvalid) x = wo[(size_t)(d0 + dd) * TT_N * TT_N + col + k];
        sw[(size_t)dd * pitch + k] = x;
    }
#endif
}

#if TT_WG
// ---- wgmma (sm_90a), the tensor memory accelerator and mbarriers: for the kernels with WG ------
// A tensor map (CUtensorMap: 128 opaque bytes, 64-byte aligned), passed by value.
struct __align__(64) tt_tmap {
    unsigned long long v[16];
};

__device__ __forceinline__ void tt_wg_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void tt_wg_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
template <int n> __device__ __forceinline__ void tt_wg_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(n) : "memory");
}
// d += A (this warp's 16 rows x k16, registers) B (k16 x n16, N-major, from the descriptor).
__device__ __forceinline__ void tt_wg_mma16_tb(float (&d)[8], const unsigned (&a)[4], unsigned long long desc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7}, {%8, %9, %10, %11}, %12, p, 1, 1, 1;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                   "+f"(d[7])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc)
                 : "memory");
}
// The descriptor of an N-major operand of 16 columns with the 32-byte swizzle at shared address
// a: rows of 16 (32 bytes), atoms of 8 rows 256 bytes apart along k (both offsets: the one along
// n is never used by an n16 product).
__device__ __forceinline__ unsigned long long tt_wg_desc_n16_sw32(unsigned a)
{
    return (unsigned long long)((a & 0x3FFFF) >> 4) | (unsigned long long)(256 >> 4) << 16 |
           (unsigned long long)(256 >> 4) << 32 | 3ull << 62;
}
// Keeps the compiler from moving accesses of the accumulators across the asynchronous products.
__device__ __forceinline__ void tt_wg_pin(float (&d)[32])
{
#pragma unroll
    for (int i = 0; i < 32; i++) asm volatile("" : "+f"(d[i])::"memory");
}
// The descriptor of a K-major operand with the 32-byte swizzle at shared address a: atoms of 8
// rows 256 bytes apart (stride offset), one atom across k16 (leading offset unused: 1).
__device__ __forceinline__ unsigned long long tt_wg_desc_sw32(unsigned a)
{
    return (unsigned long long)((a & 0x3FFFF) >> 4) | 1ull << 16 | (unsigned long long)(256 >> 4) << 32 |
           3ull << 62;
}
// The descriptor of an N-major operand of 64 columns with the 128-byte swizzle at shared address
// a: rows of 64 (128 bytes), atoms of 8 rows 1024 bytes apart along k. The offset between atoms
// along n is never used by an n64 product; both offsets hold the k one.
__device__ __forceinline__ unsigned long long tt_wg_desc_n64_sw128(unsigned a)
{
    return (unsigned long long)((a & 0x3FFFF) >> 4) | (unsigned long long)(1024 >> 4) << 16 |
           (unsigned long long)(1024 >> 4) << 32 | 1ull << 62;
}
// d += A (this warp's 16 rows x k16, registers) B (k16 x n64 from the descriptor), fp32; B
// K-major (TB 0) or N-major (TB 1).
template <int TB = 0>
__device__ __forceinline__ void tt_wg_mma64(float (&d)[32], const unsigned (&a)[4], unsigned long long desc)
{
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
                 "wgmma.mma_async.sync.aligned.m64n64k16.f32.bf16.bf16 "
                 "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, %16, %17, "
                 "%18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
                 "{%32, %33, %34, %35}, %36, p, 1, 1, %37;\n}\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]),
                   "+f"(d[7]), "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]),
                   "+f"(d[13]), "+f"(d[14]), "+f"(d[15]), "+f"(d[16]), "+f"(d[17]), "+f"(d[18]),
                   "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]), "+f"(d[24]),
                   "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]),
                   "+f"(d[31])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc), "n"(TB)
                 : "memory");
}

// n mbarriers from shared address bar (8 bytes apart), one arrival each, made visible to the
// copy engine. By one thread, before the block's first barrier.
__device__ __forceinline__ void tt_wg_bars_init(unsigned bar, int n)
{
    for (int i = 0; i < n; i++)
        asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;\n" ::"r"(bar + 8 * i) : "memory");
    asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
}
// This thread's arrival at the mbarrier at bar, announcing tx bytes that boxes will bring.
__device__ __forceinline__ void tt_wg_expect(unsigned bar, unsigned tx)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(bar), "r"(tx) : "memory");
}
// One box of map at (x, y) (a 2-D map) or (x, y, z) (3-D) into shared address dst; its bytes
// count towards the mbarrier at bar.
__device__ __forceinline__ void tt_wg_box2d(unsigned dst, unsigned bar, const tt_tmap *map, int x, int y)
{
    asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3}], [%4];\n" ::"r"(dst), "l"((unsigned long long)map), "r"(x), "r"(y), "r"(bar)
                 : "memory");
}
__device__ __forceinline__ void tt_wg_box3d(unsigned dst, unsigned bar, const tt_tmap *map, int x, int y, int z)
{
    asm volatile("cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst), "l"((unsigned long long)map), "r"(x), "r"(y),
                 "r"(z), "r"(bar)
                 : "memory");
}
// Waits until the mbarrier at bar has completed the phase of the given parity.
__device__ __forceinline__ void tt_wg_bar_wait(unsigned bar, unsigned parity)
{
    asm volatile("{\n.reg .pred done;\nwait_%=:\n"
                 "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1;\n"
                 "@!done bra wait_%=;\n}\n" ::"r"(bar), "r"(parity) : "memory");
}

#endif

#ifdef TT_OP_MLA_MAT_T
// T for the materialized strategy (templates/mla_mat.cu says how its products use it), written
// by the forward's stage 1: T[i][j N + k] = A_j V^T (tt_t_chunk), zero where the causal mask
// hides (j, k) from row i, in place of mla_mat_prep's KV, a batched product and mla_mat_mask's
// pass over T (three round trips of it and KV's). Block: rows i0 .. i0+15 of one sequence,
// TT_G warps of TT_JW key positions j each; in shared memory the sequence's V up to the tile's
// last key and the block's K rows. A chunk of 16 keys the mask hides whole is stored as zeros
// without a product. T's rows in the sequences' order (b N + i) or the positions' (i B + b:
// pos_rows), N^2 apart. Where N is whole 16-byte groups each chunk goes out through a warp's tile
// in shared memory, a row's 16 keys (32 bytes, a whole sector) by two lanes' 16-byte stores;
// else straight from the accumulators, two keys a store.
#define TT_TPITCH 24 // the chunk tile's row pitch in bf16: 48 bytes, rows on distinct banks
static_assert(TT_THREADS == 32 * TT_G, "a warp a part of the block's j");
static_assert(2 * ((TT_NPAD + TT_G * TT_JW) * TT_SR + TT_G * 16 * TT_TPITCH) == TT_SMEM,
              "the shared memory the plan gives is what the block carves up");
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ t, const TT_T *__restrict__ qkv, const float *__restrict__ g,
          const TT_T *__restrict__ p, const float *__restrict__ u, const float *__restrict__ v,
          int batch, int pos_rows)
{
    tt_pdl_begin();
    extern __shared__ __align__(16) tt_bf16 smem[];
    tt_bf16 *sv = smem, *sk = smem + (size_t)TT_NPAD * TT_SR;
    tt_bf16 *tile = sk + (size_t)TT_G * TT_JW * TT_SR + (size_t)(threadIdx.x / 32) * 16 * TT_TPITCH;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int i0 = blockIdx.x * 16, b = blockIdx.y, j0 = blockIdx.z * TT_G * TT_JW;
    const tt_bf16 *seq = qkv + (size_t)b * TT_N * 3 * TT_R;
    const int end = TT_CAUSAL ? min(i0 + 16, TT_N) : TT_N; // the tile's j and k stop here
    const int kn = (end + 15) / 16 * 16;
    if (warp == 0) {
        tt_load_rows<TT_NPAD>(sv, seq, 0, kn, 2 * TT_R, true);
        tt_load_rows<TT_G * TT_JW>(sk, seq, j0, TT_G * TT_JW, TT_R, true);
        tt_cp_commit();
        tt_cp_wait<0>();
    }
    __syncthreads();
    float gq[TT_RK][8], gqv[TT_RK][8];
#if TT_POS_KEY
    tt_load_gq(gq, seq, i0, true, g, u);
    tt_load_gq(gqv, seq, i0, true, g, v);
#else
    (void)u, (void)v;
    tt_load_gq(gq, seq, i0, true, g, nullptr);
#endif
    // this lane's rows: i0 + lane / 4 and 8 more
    size_t row[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const size_t i = (size_t)i0 + tt_acc_row(lane, 2 * h);
        row[h] = (pos_rows ? i * batch + b : (size_t)b * TT_N + i) * TT_N * TT_N;
    }
    for (int jj = 0; jj < TT_JW; jj++) {
        const int j = j0 + warp * TT_JW + jj;
        if (j >= TT_N) break;
        const bool seen = j < end; // some row of the tile sees j
        unsigned a[TT_RK][4];
        if (seen) tt_make_aj(a, gq, gqv, sk + (size_t)(j - j0) * TT_SR, TT_POS_KEY ? p + (size_t)j * TT_R : p);
        for (int kc = 0; kc < TT_NPAD; kc += 16) {
            float c[2][4];
            if (seen && kc < kn) {
                tt_t_chunk(c, a, sv, kc, i0, j);
            } else {
#pragma unroll
                for (int nt = 0; nt < 2; nt++)
#pragma unroll
                    for (int e = 0; e < 4; e++) c[nt][e] = 0.f;
            }
            if constexpr (TT_N % 8 == 0) {
                // the chunk into the warp's tile, then row lane / 2's keys 8 (lane % 2) .. + 7
#pragma unroll
                for (int nt = 0; nt < 2; nt++)
#pragma unroll
                    for (int h = 0; h < 2; h++)
                        *reinterpret_cast<unsigned *>(tile + (size_t)tt_acc_row(lane, 2 * h) * TT_TPITCH +
                                                      nt * 8 + tt_acc_col(lane, 0)) =
                            tt_pack_bf16(c[nt][2 * h], c[nt][2 * h + 1]);
                __syncwarp();
                const int r = lane / 2, i = i0 + r, k = kc + (lane % 2) * 8;
                if (i < TT_N && k < TT_N) { // 8 keys a group: in the row whole, 16-byte aligned
                    const size_t base = (pos_rows ? (size_t)i * batch + b : (size_t)b * TT_N + i) * TT_N * TT_N;
                    *reinterpret_cast<uint4 *>(t + base + (size_t)j * TT_N + k) =
                        *reinterpret_cast<const uint4 *>(tile + (size_t)r * TT_TPITCH + (lane % 2) * 8);
                }
                __syncwarp(); // the tile is read before the next chunk writes it
            } else {
#pragma unroll
                for (int nt = 0; nt < 2; nt++)
#pragma unroll
                    for (int h = 0; h < 2; h++) {
                        const int i = i0 + tt_acc_row(lane, 2 * h), k = kc + nt * 8 + tt_acc_col(lane, 0);
                        if (i >= TT_N || k >= TT_N) continue;
                        tt_bf16 *dst = t + row[h] + (size_t)j * TT_N + k;
                        if (TT_N % 2 == 0) { // k even: (k, k + 1) 4-byte aligned and in the row
                            *reinterpret_cast<unsigned *>(dst) = tt_pack_bf16(c[nt][2 * h], c[nt][2 * h + 1]);
                        } else {
                            dst[0] = tt_store_as<tt_bf16>(c[nt][2 * h]);
                            if (k + 1 < TT_N) dst[1] = tt_store_as<tt_bf16>(c[nt][2 * h + 1]);
                        }
                    }
            }
        }
    }
}
#endif

#if defined(TT_OP_MLA_FWD) || defined(TT_OP_MLA_FWD_SUM)
// The parts of the key positions j (16 each) that row tile it sees: under the mask j stops at
// the tile's last row (templates/mla_geom.cuh).
#define TT_FPARTS(it) tt_mla_parts(it, TT_N, TT_CAUSAL, 16, 16)
static_assert(TT_JP == (TT_N + 15) / 16, "parts of 16 key positions");
#endif

#if defined(TT_OP_MLA_FWD) && !TT_WG
static_assert(TT_TD % 16 == 0, "feature tiles are whole pairs of n8 tiles");
static_assert(TT_TASKS == tt_mla_tc_tasks(TT_N, TT_CAUSAL, 16), "the plan's grid: a block a task");
static_assert(2 * (TT_G * (TT_NPAD + 16) * TT_SR + TT_NS * TT_TD * TT_SW) == TT_SMEM,
              "the shared memory the plan gives is what the blocks carve up below");
// Block: rows i0 .. i0+15 of TT_G sequences (one per warp), the key positions j of one part
// (16 of them; so that the last tile's walk is as short as the others'), TT_TD output features.
// With TT_JP > 1 parts, each part's sums go to ypart [JP][B][N][D] fp32 and mla_fwd_sum adds them
// up in order; with one, Y is written here. Dynamic shared memory: V tiles [G][NPAD][SR], the
// part's K rows [G][16][SR], then TT_NS Wo slabs [TD][SW] (j's, and j + 1's on its way; with a
// third, j - 1's may still be read by a slower warp: one barrier a j instead of two).
#if TT_MINB > 0
extern "C" __global__ void __launch_bounds__(TT_THREADS, TT_MINB)
#else
extern "C" __global__ void __launch_bounds__(TT_THREADS)
#endif
TT_KERNEL(TT_T *__restrict__ y, const TT_T *__restrict__ qkv, const float *__restrict__ g,
          const TT_T *__restrict__ wo, const TT_T *__restrict__ p, const float *__restrict__ u,
          const float *__restrict__ v, int batch, float *__restrict__ ypart)
{
    tt_pdl_begin();
    extern __shared__ __align__(16) tt_bf16 smem[];
    tt_bf16 *sv_all = smem, *sk_all = smem + (size_t)TT_G * TT_NPAD * TT_SR;
    tt_bf16 *sw = sk_all + (size_t)TT_G * 16 * TT_SR;
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, gi = lane >> 2, tq = lane & 3;
    int it, jp;
    tt_mla_tc_task(blockIdx.x, TT_N, TT_CAUSAL, 16, &it, &jp);
    const int i0 = it * 16, d0 = blockIdx.z * TT_TD, b = blockIdx.y * TT_G + warp;
    const bool live = b < batch;
    const tt_bf16 *seq = qkv + (size_t)(live ? b : 0) * TT_N * 3 * TT_R;
    tt_bf16 *sv = sv_all + (size_t)warp * TT_NPAD * TT_SR, *sk = sk_all + (size_t)warp * 16 * TT_SR;

    float gq[TT_RK][8], gqv[TT_RK][8];
#if TT_POS_KEY
    tt_load_gq(gq, seq, i0, live, g, u);
    tt_load_gq(gqv, seq, i0, live, g, v);
#else
    (void)p, (void)u, (void)v;
    tt_load_gq(gq, seq, i0, live, g, nullptr);
#endif
    const int jend = TT_CAUSAL ? min(i0 + 16, TT_N) : TT_N; // j and k both stop here
    const int kn = (jend + 15) / 16 * 16;
    tt_load_rows<TT_NPAD>(sv, seq, 0, kn, 2 * TT_R, live); // the sequence's V up to the last key
    tt_load_rows<16>(sk, seq, jp * 16, 16, TT_R, live);    // and K rows of the part's j

    float acc[TT_TD / 8][4];
#pragma unroll
    for (int nt = 0; nt < TT_TD / 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) acc[nt][e] = 0.f;

    const int j0 = jp * 16, j1 = min(j0 + 16, jend); // this part's j
    // TT_NS slabs: j + 1's is in flight while j's is used.
    tt_load_wo_slab<TT_TD, TT_NPAD>(sw, TT_SW, wo, d0, (size_t)j0 * TT_N, kn, TT_N);
    tt_cp_commit();
    static_assert(TT_NS == 2 || TT_NS == 3, "two or three slabs");
    for (int j = j0; j < j1; j++) {
        const tt_bf16 *cur = sw + (size_t)((j - j0) % TT_NS) * TT_TD * TT_SW;
        if (j + 1 < j1)
            tt_load_wo_slab<TT_TD, TT_NPAD>(sw + (size_t)((j + 1 - j0) % TT_NS) * TT_TD * TT_SW, TT_SW, wo, d0,
                                            (size_t)(j + 1) * TT_N, kn, TT_N);
        tt_cp_commit();
        unsigned a[TT_RK][4];
        tt_cp_wait<1>();
        __syncthreads(); // j's slab (and at the first j the V and K tiles) are in shared memory
        tt_make_aj(a, gq, gqv, sk + (size_t)(j - j0) * TT_SR, TT_POS_KEY ? p + (size_t)j * TT_R : p);
        for (int kc = 0; kc < kn; kc += 16) {
            float t[2][4];
            tt_t_chunk(t, a, sv, kc, i0, j);
            unsigned ta[4];
            tt_acc_to_a(ta, t);
            // matrix q = lane / 8: features nt * 8 + (q / 2) * 8 + lane % 8, keys kc + (q % 2) * 8
            const tt_bf16 *wrow = cur + (size_t)((lane >> 4) * 8 + (lane & 7)) * TT_SW + kc + ((lane >> 3) & 1) * 8;
#pragma unroll
            for (int nt = 0; nt < TT_TD / 8; nt += 2) {
                unsigned b[4];
                tt_ldsm(b, wrow + (size_t)nt * 8 * TT_SW);
                tt_mma(acc[nt], ta, b[0], b[1]);
                tt_mma(acc[nt + 1], ta, b[2], b[3]);
            }
        }
        if (TT_NS == 2) __syncthreads(); // j's slab is no longer read: j + 2's may land there
    }
    if (!live) return;
#pragma unroll
    for (int nt = 0; nt < TT_TD / 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int i = i0 + tt_acc_row(lane, e), d = d0 + nt * 8 + tt_acc_col(lane, e);
            if (i >= TT_N || d >= TT_D) continue;
#if TT_JP == 1
            (void)ypart;
            y[((size_t)b * TT_N + i) * TT_D + d] = tt_store_as<TT_T>(acc[nt][e]);
#else
            ypart[tt_mla_fwd_part(batch, TT_N, TT_D, jp, b, i) + d] = acc[nt][e];
#endif
        }
}
#endif

#if defined(TT_OP_MLA_FWD) && TT_WG
// ---- the forward's second stage on wgmma (sm_90a) ----------------------------------------------
// The same tasks and the same first stage as above, but Y += T_j Wo_j^T is one warpgroup-wide
// product: the four warps of a warpgroup hold 16 rows each of four sequences (the same row tile,
// the same j), T_j's chunk of 16 keys goes from their stage-1 accumulators to wgmma's A operand
// in registers (the m16n8 accumulator layout is its per-warp layout), and Wo_j's slab is its B
// operand, read by the tensor cores from shared memory once for the 64 rows instead of once a
// warp. Each k16 step is TD / 64 products m64n64k16 into the fp32 accumulators [TD / 64][32];
// the step's stage 1 for the next 16 keys runs while they are in flight.
// Wo_j's slab comes by the tensor memory accelerator: one thread asks for kn / 16 boxes of TD
// features x 16 keys (Wo as a 2-D tensor [D][N*N], its map built by the launcher; features past
// D arrive as zeros), each box 32 bytes a feature with the 32-byte swizzle, which is wgmma's
// K-major layout for a k16 step (8-feature atoms 256 bytes apart); an mbarrier a slab says when
// its bytes have landed. Two slabs: j + 1's lands while j's products run, and every product of j
// is done before j + 1's barrier (after which j + 2's comes into j's slab). Three: j's last
// product may still run while j + 1's stage 1 and first product start; the first product's wait
// ends it, before the barrier after which j + 3's comes into j's slab.
static_assert(TT_TD % 64 == 0 && TT_TD <= 256, "feature tiles of whole n64 products");
static_assert(TT_G % 4 == 0 && TT_THREADS == 32 * TT_G, "whole warpgroups, a warp a sequence");
static_assert(TT_N % 8 == 0, "rows of Wo 16-byte aligned (the tensor map's stride)");
static_assert(TT_NS == 2 || TT_NS == 3, "two or three slabs");
static_assert(TT_TASKS == tt_mla_tc_tasks(TT_N, TT_CAUSAL, 16), "the plan's grid: a block a task");
static_assert(tt_mla_wg_fwd_smem(TT_N, TT_R, TT_G, TT_TD, TT_NS) == TT_SMEM,
              "the shared memory the plan gives is what the blocks carve up below");
#define TT_WSLAB (TT_TD * TT_NPAD) // bf16 elements of one slab

// Wo_j's kn keys (kn / 16 boxes from column col, rows d0..) into the slab at shared address sw,
// announced to the mbarrier at bar. By one thread.
__device__ __forceinline__ void tt_wg_load_slab(unsigned sw, unsigned bar, const tt_tmap *map, int col, int d0, int kn)
{
    tt_wg_expect(bar, kn * TT_TD * 2);
    for (int kc = 0; kc < kn; kc += 16) tt_wg_box2d(sw + kc * TT_TD * 2, bar, map, col + kc, d0);
}
extern "C" __global__ void __launch_bounds__(TT_THREADS, TT_MINB > 0 ? TT_MINB : 1)
TT_KERNEL(TT_T *__restrict__ y, const TT_T *__restrict__ qkv, const float *__restrict__ g,
          const TT_T *__restrict__ wo, const TT_T *__restrict__ p, const float *__restrict__ u,
          const float *__restrict__ v, int batch, float *__restrict__ ypart, const __grid_constant__ tt_tmap wo_map)
{
    tt_pdl_begin();
    extern __shared__ __align__(16) tt_bf16 smem_raw[];
    // the slabs at a 1024-byte boundary (the swizzle's pattern repeats within it); the plan's
    // size has room for the shift
    const unsigned raw = (unsigned)__cvta_generic_to_shared(smem_raw);
    tt_bf16 *smem = smem_raw + ((raw + 1023u) / 1024u * 1024u - raw) / 2;
    tt_bf16 *sv_all = smem, *sk_all = smem + (size_t)TT_G * TT_NPAD * TT_SR;
    tt_bf16 *sw = smem + tt_mla_wg_fwd_rows_bytes(TT_N, TT_R, TT_G) / 2;
    unsigned long long *bars = (unsigned long long *)(sw + TT_NS * TT_WSLAB);
    const unsigned sw_a = (unsigned)__cvta_generic_to_shared(sw);
    const unsigned bar_a = (unsigned)__cvta_generic_to_shared(bars);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    int it, jp;
    tt_mla_tc_task(blockIdx.x, TT_N, TT_CAUSAL, 16, &it, &jp);
    const int i0 = it * 16, d0 = blockIdx.z * TT_TD, b = blockIdx.y * TT_G + warp;
    const bool live = b < batch; // a warp past the batch still takes part in the products
    const tt_bf16 *seq = qkv + (size_t)(live ? b : 0) * TT_N * 3 * TT_R;
    tt_bf16 *sv = sv_all + (size_t)warp * TT_NPAD * TT_SR, *sk = sk_all + (size_t)warp * 16 * TT_SR;
    (void)wo;

    const int jend = TT_CAUSAL ? min(i0 + 16, TT_N) : TT_N; // j and k both stop here
    const int kn = (jend + 15) / 16 * 16;
    const int j0 = jp * 16, j1 = min(j0 + 16, jend);
    if (threadIdx.x == 0) {
        tt_wg_bars_init(bar_a, TT_NS);
        tt_wg_load_slab(sw_a, bar_a, &wo_map, j0 * TT_N, d0, kn);
    }
    tt_load_rows<TT_NPAD>(sv, seq, 0, kn, 2 * TT_R, live);
    tt_load_rows<16>(sk, seq, jp * 16, 16, TT_R, live);
    tt_cp_commit();

    float gq[TT_RK][8], gqv[TT_RK][8];
#if TT_POS_KEY
    tt_load_gq(gq, seq, i0, live, g, u);
    tt_load_gq(gqv, seq, i0, live, g, v);
#else
    (void)p, (void)u, (void)v;
    tt_load_gq(gq, seq, i0, live, g, nullptr);
#endif
    float acc[TT_TD / 64][32];
#pragma unroll
    for (int q = 0; q < TT_TD / 64; q++)
#pragma unroll
        for (int e = 0; e < 32; e++) acc[q][e] = 0.f;
    tt_cp_wait<0>();

    for (int j = j0; j < j1; j++) {
        const int s = (j - j0) % TT_NS;
        __syncthreads(); // the V and K tiles, the barriers' init; the products of j + 1 - NS are done
        const int s1 = s + 1 == TT_NS ? 0 : s + 1;
        if (threadIdx.x == 0 && j + 1 < j1) // into the slab j + 1 - NS's products were reading
            tt_wg_load_slab(sw_a + s1 * TT_WSLAB * 2, bar_a + 8 * s1, &wo_map, (j + 1) * TT_N, d0, kn);
        unsigned a[TT_RK][4];
        tt_make_aj(a, gq, gqv, sk + (size_t)(j - j0) * TT_SR, TT_POS_KEY ? p + (size_t)j * TT_R : p);
        tt_wg_bar_wait(bar_a + 8 * s, ((j - j0) / TT_NS) & 1); // j's slab has landed
        const unsigned long long desc0 = tt_wg_desc_sw32(sw_a + s * TT_WSLAB * 2);
#pragma unroll
        for (int kc = 0; kc < TT_NPAD; kc += 16) {
            if (kc >= kn) break; // the same for the whole block (one row tile)
            float t[2][4];
            tt_t_chunk(t, a, sv, kc, i0, j);
            unsigned ta[4];
            tt_acc_to_a(ta, t);
            tt_wg_fence();
            // box kc / 16, its features q * 64..: 32 bytes a feature (16-byte address units)
#pragma unroll
            for (int q = 0; q < TT_TD / 64; q++)
                tt_wg_mma64(acc[q], ta, desc0 + (unsigned long long)((kc * TT_TD * 2 + q * 64 * 32) >> 4));
            tt_wg_commit();
            tt_wg_wait<1>(); // the products of the 16 keys before are done with their operands
        }
        if (TT_NS == 2) tt_wg_wait<0>();
    }
    tt_wg_wait<0>();
#pragma unroll
    for (int q = 0; q < TT_TD / 64; q++) tt_wg_pin(acc[q]);
    if (!live) return;
#pragma unroll
    for (int q = 0; q < TT_TD / 64; q++)
#pragma unroll
        for (int nt = 0; nt < 8; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int i = i0 + tt_acc_row(lane, e), d = d0 + q * 64 + nt * 8 + tt_acc_col(lane, e);
                if (i >= TT_N || d >= TT_D) continue;
#if TT_JP == 1
                (void)ypart;
                y[((size_t)b * TT_N + i) * TT_D + d] = tt_store_as<TT_T>(acc[q][nt * 4 + e]);
#else
                ypart[tt_mla_fwd_part(batch, TT_N, TT_D, jp, b, i) + d] = acc[q][nt * 4 + e];
#endif
            }
}
#endif

#ifdef TT_OP_MLA_FWD_SUM
// y [B, N, D] = the sum of the parts' ypart of each row, in part order, rounded once; V elements
// of a row at a time (the parts' loads all in flight).
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ y, const float *__restrict__ ypart, int batch)
{
    tt_pdl_begin();
    constexpr int V = TT_D % 4 == 0 ? 4 : 1;
    const size_t n = (size_t)batch * TT_N * TT_D;
    for (size_t e = ((size_t)blockIdx.x * TT_THREADS + threadIdx.x) * V; e < n; e += (size_t)gridDim.x * TT_THREADS * V) {
        const int it = (int)(e / TT_D % TT_N) / 16;
        float s[V] = {};
#pragma unroll
        for (int jp = 0; jp < TT_JP; jp++)
            if (jp < TT_FPARTS(it)) {
                float x[V];
                tt_load<V>(x, ypart + tt_mla_fwd_part(batch, TT_N, TT_D, jp, 0, 0) + e);
#pragma unroll
                for (int q = 0; q < V; q++) s[q] += x[q];
            }
        tt_store<V>(y + e, s);
    }
}
#endif

// ---- backward ----------------------------------------------------------------------------------
// Two kernels replace mla.cu's mla_bwd_wo and mla_bwd_q; mla.cu's mla_bwd_reduce (with TT_TI =
// 16) adds up the partials mla_bwd_q writes (templates/mla_geom.cuh).

#ifdef TT_OP_MLA_BWD_WO
// dWo[d, j*N + k] += sum_{b,i} T[b,i,j,k] dY[b,i,d], as dWo_j^T (keys x features) = T_j^T dY:
// the contraction runs over rows. A warp owns one j and the 16 keys of its block: for 32 rows at
// a time it recomputes T_j^T = V A_j^T (stage 1, keys x rows) and feeds it from its accumulators
// to stage 2 against the block's dY tile (ldmatrix.trans). Under the mask the walk starts at the
// tile that holds row max(j, k). One writer per element: no atomics. The tiles of Q and dY are
// in three buffers: the next one is in flight while this one is used, one barrier a tile.
// Block: TT_W warps (j = blockIdx.x * W + warp), keys blockIdx.y * 16, features of tile
// blockIdx.z % NDT, and the sequences of split blockIdx.z / NDT: with TT_S > 1 splits, each
// split's sums go to wpart [S][D][N*N] (every element written) and mla_bwd_wo_sum adds them up.
#define TT_NDT ((TT_D + TT_TD - 1) / TT_TD)
#define TT_WO_ASYNC (TT_R % 8 == 0 && TT_D % 8 == 0) // rows of Q and dY 16-byte aligned

// Rows i0 .. i0+31 of sequence b's Q into sq [32][SR] (ranks from R on stay as they are: zero),
// its V rows kc .. kc+15 into sv [16][SR] and K rows j0 .. j0+W-1 into sk [W][SR] (for stage
// 1's operands); zero past N. By the whole block.
__device__ __forceinline__ void tt_wo_load_qvk(tt_bf16 (*sq)[TT_SR], tt_bf16 (*sv)[TT_SR], tt_bf16 (*sk)[TT_SR],
                                               const tt_bf16 *qkv, int b, int i0, int kc, int j0)
{
#if TT_WO_ASYNC
    constexpr int QVK = (32 + 16 + TT_W) * (TT_R / 8); // 16-byte chunks (a compile-time walk)
#pragma unroll
    for (int m = 0; m < (QVK + TT_THREADS - 1) / TT_THREADS; m++) {
        const int e = threadIdx.x + m * TT_THREADS;
        if (QVK % TT_THREADS != 0 && e >= QVK) break;
        const int row = e / (TT_R / 8), c = (e % (TT_R / 8)) * 8;
        // rows 0..31: Q of i0 + row; 32..47: V of kc + row - 32; then K of j0 + row - 48
        const int pos = row < 32 ? i0 + row : row < 48 ? kc + row - 32 : j0 + row - 48;
        const int off = row < 32 ? 0 : row < 48 ? 2 * TT_R : TT_R;
        tt_bf16 *dst = row < 32 ? sq[row] : row < 48 ? sv[row - 32] : sk[row - 48];
        const bool in = pos < TT_N;
        tt_cp16(dst + c, in ? qkv + ((size_t)b * TT_N + pos) * 3 * TT_R + off + c : qkv, in);
    }
#else
    for (int e = threadIdx.x; e < (32 + 16 + TT_W) * TT_R; e += TT_THREADS) {
        const int row = e / TT_R, r = e % TT_R;
        const int pos = row < 32 ? i0 + row : row < 48 ? kc + row - 32 : j0 + row - 48;
        const int off = row < 32 ? 0 : row < 48 ? 2 * TT_R : TT_R;
        tt_bf16 *dst = row < 32 ? sq[row] : row < 48 ? sv[row - 32] : sk[row - 48];
        tt_bf16 x;
        x.bits = 0;
        if (pos < TT_N) x = qkv[((size_t)b * TT_N + pos) * 3 * TT_R + off + r];
        dst[r] = x;
    }
#endif
}

#if !TT_WG
// The same tile's Q, V and K rows (tt_wo_load_qvk), and dY's rows i0 .. i0+31, features d0..,
// into sdy [32][TD+8]; zero past N and D. By the whole block.
__device__ __forceinline__ void tt_wo_load_tile(tt_bf16 (*sq)[TT_SR], tt_bf16 (*sdy)[TT_TD + 8],
                                                tt_bf16 (*sv)[TT_SR], tt_bf16 (*sk)[TT_SR],
                                                const tt_bf16 *qkv, const tt_bf16 *dy, int b,
                                                int i0, int d0, int kc, int j0)
{
    tt_wo_load_qvk(sq, sv, sk, qkv, b, i0, kc, j0);
#if TT_WO_ASYNC
    constexpr int CPR = TT_TD / 8, RSTEP = TT_THREADS / CPR;
    if constexpr (TT_THREADS % CPR == 0 && RSTEP <= 32 && 32 % RSTEP == 0) {
        // dY: a thread at one chunk of features and rows RSTEP apart: a base and constants
        const int c = threadIdx.x % CPR * 8, ir = threadIdx.x / CPR;
        const bool cin = TT_D % TT_TD == 0 || d0 + c < TT_D;
        const tt_bf16 *src = dy + ((size_t)b * TT_N + i0 + ir) * TT_D + d0 + c;
#pragma unroll
        for (int m = 0; m < 32 / RSTEP; m++) {
            const int i = ir + m * RSTEP;
            const bool in = cin && i0 + i < TT_N;
            tt_cp16(&sdy[i][c], in ? src + (size_t)m * RSTEP * TT_D : dy, in);
        }
    } else { // (threads and feature chunks that do not tile 32 rows evenly)
        for (int e = threadIdx.x; e < 32 * CPR; e += TT_THREADS) {
            const int i = e / CPR, c = (e % CPR) * 8;
            const bool in = i0 + i < TT_N && d0 + c < TT_D;
            tt_cp16(&sdy[i][c], in ? dy + ((size_t)b * TT_N + i0 + i) * TT_D + d0 + c : dy, in);
        }
    }
#else
    for (int e = threadIdx.x; e < 32 * TT_TD; e += TT_THREADS) {
        const int i = e / TT_TD, dd = e % TT_TD;
        tt_bf16 x;
        x.bits = 0;
        if (i0 + i < TT_N && d0 + dd < TT_D) x = dy[((size_t)b * TT_N + i0 + i) * TT_D + d0 + dd];
        sdy[i][dd] = x;
    }
#endif
}
#endif

// Stage 1's A operand for a sequence (keys kc.. of j = jj): its V rows kc.. (svr) scaled by
// c1 = g K_j (+ g P_j) (K_j: krow), and for position: key the per-key constant vc0 = V c0 of
// c0 = g (u K_j + v P_j); then T_j^T = (V c1) Q^T + vc0 1^T.
__device__ __forceinline__ void tt_wo_stage1_a(unsigned (&av)[TT_RK][4], float (&vc0)[2], const tt_bf16 *krow,
                                               const tt_bf16 (*svr)[TT_SR], const float *__restrict__ g,
                                               const TT_T *__restrict__ p, const float *__restrict__ u,
                                               const float *__restrict__ v, int jj)
{
    const int lane = threadIdx.x % 32, gi = lane >> 2, tq = lane & 3;
    (void)gi, (void)tq, (void)p, (void)u, (void)v, (void)jj, (void)vc0;
#if !TT_POS_KEY && TT_R % 2 == 0
    // by pairs of ranks (2t, 2t+1; and + 8): one 32-bit load of K's pair, of g's, and of
    // each row's V pair; register h * 2 + rh of k-step ks holds rows g + 8 rh, ranks
    // ks * 16 + 2t + 8h and the next
#pragma unroll
    for (int ks = 0; ks < TT_RK; ks++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int r = ks * 16 + tq * 2 + h * 8;
            float c1x = 0.f, c1y = 0.f;
            if (r < TT_R) {
                const unsigned kp = tt_lds32(&krow[r]); // K row j (zero past N)
                const float2 gg = *reinterpret_cast<const float2 *>(g + r);
                c1x = gg.x * __uint_as_float(kp << 16);
                c1y = gg.y * __uint_as_float(kp & 0xffff0000u);
            }
#pragma unroll
            for (int rh = 0; rh < 2; rh++) {
                const unsigned vp = r < TT_R ? tt_lds32(&svr[gi + rh * 8][r]) : 0u;
                av[ks][h * 2 + rh] = tt_pack_bf16(__uint_as_float(vp << 16) * c1x,
                                                  __uint_as_float(vp & 0xffff0000u) * c1y);
            }
        }
#else
#if TT_POS_KEY
    float s0 = 0.f, s8 = 0.f;
#endif
#pragma unroll
    for (int ks = 0; ks < TT_RK; ks++) {
        float x[8];
#pragma unroll
        for (int e = 0; e < 8; e++) {
            const int r = tt_frag_r(lane, ks, e);
            float c1 = 0.f, vr = 0.f;
            if (r < TT_R) {
                const float kr = tt_float(krow[r]); // K row j (zero past N)
                vr = tt_float(svr[gi + ((e >> 1) & 1) * 8][r]);
#if TT_POS_KEY
                const float pr = tt_float(p[(size_t)jj * TT_R + r]);
                c1 = g[r] * (kr + pr);
                const float c0 = g[r] * (u[r] * kr + v[r] * pr);
                if ((e >> 1) & 1) s8 += vr * c0;
                else s0 += vr * c0;
#else
                c1 = g[r] * kr;
#endif
            }
            x[e] = vr * c1;
        }
#pragma unroll
        for (int q = 0; q < 4; q++) av[ks][q] = tt_pack_bf16(x[2 * q], x[2 * q + 1]);
    }
#if TT_POS_KEY
    // the lane holds ranks 2t, 2t+1, 2t+8, 2t+9 of each k-step: add over the quad
    s0 += __shfl_xor_sync(0xffffffffu, s0, 1);
    s0 += __shfl_xor_sync(0xffffffffu, s0, 2);
    s8 += __shfl_xor_sync(0xffffffffu, s8, 1);
    s8 += __shfl_xor_sync(0xffffffffu, s8, 2);
    vc0[0] = s0, vc0[1] = s8;
#endif
#endif
}

// Stage 1 for the 16 rows ih.. of the tile (qrow: this lane's ldmatrix row of them in Q's tile):
// tt = T_j^T, keys kc.. x the rows (two n8 tiles), masked where the rows see a masked (row, j,
// key) at all. Rows past N keep vc0, but meet dY's zero rows there in stage 2.
__device__ __forceinline__ void tt_wo_t_half(float (&tt)[2][4], const unsigned (&av)[TT_RK][4], const float (&vc0)[2],
                                             const tt_bf16 *qrow, int ih, int j, int kc)
{
    const int lane = threadIdx.x % 32;
    (void)lane, (void)ih, (void)j, (void)kc;
#pragma unroll
    for (int nt = 0; nt < 2; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) tt[nt][e] = vc0[e >> 1];
#pragma unroll
    for (int ks = 0; ks < TT_RK; ks++) {
        unsigned bq[4];
        tt_ldsm(bq, qrow + ks * 16);
        tt_mma(tt[0], av[ks], bq[0], bq[1]);
        tt_mma(tt[1], av[ks], bq[2], bq[3]);
    }
#if TT_CAUSAL
    if (j > ih || kc + 15 > ih)
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int k = kc + tt_acc_row(lane, e), i = ih + nt * 8 + tt_acc_col(lane, e);
                if (j > i || k > i) tt[nt][e] = 0.f;
            }
#endif
}

// Stage 2's sums into dWo for key position j: one m16n8 fragment a (keys kc.., features d8..),
// added into dwo with one split (TT_S 1), else written into this split's part of wpart.
__device__ __forceinline__ float *tt_wo_out(float *dwo, float *wpart, int split)
{
#if TT_S == 1
    (void)wpart, (void)split;
    return dwo;
#else
    (void)dwo;
    return wpart + tt_mla_wo_split(TT_N, TT_D, split); // this split's sums, written
#endif
}
__device__ __forceinline__ void tt_wo_put(float *out, const float *a, int j, int kc, int d8)
{
    const int lane = threadIdx.x % 32;
#pragma unroll
    for (int e = 0; e < 4; e++) {
        const int k = kc + tt_acc_row(lane, e), d = d8 + tt_acc_col(lane, e);
        if (k < TT_N && d < TT_D) {
            float *at = out + (size_t)d * TT_N * TT_N + (size_t)j * TT_N + k;
            *at = TT_S == 1 ? *at + a[e] : a[e];
        }
    }
}

#if !TT_WG
// (at most 128 registers: 512 threads of these blocks per SM)
extern "C" __global__ void __launch_bounds__(TT_THREADS, TT_MINB)
TT_KERNEL(float *__restrict__ dwo, const TT_T *__restrict__ dy, const TT_T *__restrict__ qkv,
          const float *__restrict__ g, const TT_T *__restrict__ p, const float *__restrict__ u,
          const float *__restrict__ v, int batch, float *__restrict__ wpart)
{
    tt_pdl_begin();
    // three buffers: the tile, the next one on its way, and the one before, which a slower warp
    // may still read (so one barrier a tile)
    __shared__ __align__(16) tt_bf16 s_q[3][32][TT_SR];      // Q rows of the tile
    __shared__ __align__(16) tt_bf16 s_dy[3][32][TT_TD + 8]; // dY rows of the tile, features d0..
    __shared__ __align__(16) tt_bf16 s_v[3][16][TT_SR];      // the sequence's V rows kc..
    __shared__ __align__(16) tt_bf16 s_k[3][TT_W][TT_SR];    // and K rows of the block's j
    static_assert(sizeof s_q + sizeof s_dy + sizeof s_v + sizeof s_k == TT_SMEM,
                  "the shared memory the plan counted is what the block declares");
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, gi = lane >> 2, tq = lane & 3;
    const int j = blockIdx.x * TT_W + warp, kc = blockIdx.y * 16, d0 = blockIdx.z % TT_NDT * TT_TD;
    const int split = blockIdx.z / TT_NDT, per_split = (batch + TT_S - 1) / TT_S;
    const int b0 = min(split * per_split, batch), nb = min(per_split, batch - b0);
    const bool jlive = j < TT_N;
    const int jj = jlive ? j : TT_N - 1;
#if !TT_POS_KEY
    (void)p, (void)u, (void)v;
#endif
    float acc[TT_TD / 8][4];
#pragma unroll
    for (int nt = 0; nt < TT_TD / 8; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) acc[nt][e] = 0.f;
    // ranks from R to the k-steps' end are zero in every buffer, once
    for (int e = threadIdx.x; e < 3 * 32 * (TT_RK * 16 - TT_R); e += TT_THREADS) {
        const int bi = e / (32 * (TT_RK * 16 - TT_R)), rest = e % (32 * (TT_RK * 16 - TT_R));
        s_q[bi][rest / (TT_RK * 16 - TT_R)][TT_R + rest % (TT_RK * 16 - TT_R)].bits = 0;
    }
    // the tiles, in order: sequences b, and in each the rows from the first the mask lets through
    const int istart = TT_CAUSAL ? max((int)blockIdx.x * TT_W, kc) / 32 * 32 : 0;
    const int per_seq = (TT_N - istart + 31) / 32, ntiles = nb * per_seq;
    const int j0 = blockIdx.x * TT_W;
    if (ntiles) tt_wo_load_tile(s_q[0], s_dy[0], s_v[0], s_k[0], qkv, dy, b0, istart, d0, kc, j0);
    tt_cp_commit();
    // stage 1's A operand for the tile's sequence (tt_wo_stage1_a), with Q's fragments straight
    // from shared memory
    unsigned av[TT_RK][4];
    float vc0[2] = {0.f, 0.f}; // keys kc + g, kc + g + 8
    for (int t = 0, ts = 0, sb = 0, buf = 0; t < ntiles; t++) { // tile t is sequence b0 + sb's ts-th
        const int i0 = istart + ts * 32, nbuf = buf == 2 ? 0 : buf + 1;
        const int ts1 = ts + 1 == per_seq ? 0 : ts + 1, sb1 = ts + 1 == per_seq ? sb + 1 : sb; // the next's
        // (buffer nbuf was last read by tile t - 2, which every warp finished before the barrier
        // of tile t - 1)
        if (t + 1 < ntiles)
            tt_wo_load_tile(s_q[nbuf], s_dy[nbuf], s_v[nbuf], s_k[nbuf], qkv, dy, b0 + sb1,
                            istart + ts1 * 32, d0, kc, j0);
        tt_cp_commit();
        tt_cp_wait<1>();
        __syncthreads(); // this tile is in shared memory
        if (ts == 0) // a new sequence
            tt_wo_stage1_a(av, vc0, s_k[buf][warp], s_v[buf], g, p, u, v, jj);
        if (jlive) {
            // By halves of 16 rows: a half past N, or whose rows all lie above max(j, kc) under
            // the mask, is skipped. stage 1: T_j^T, keys kc.. x the half's rows (two n8 tiles),
            // masked where the half sees a masked (row, j, key) at all; B operands by ldmatrix
            // from Q's tile (matrix q = lane / 8: rows h * 16 + (q / 2) * 8 + lane % 8, ranks
            // (q % 2) * 8)
            const int ilo = TT_CAUSAL ? max(j, kc) : 0;
            const tt_bf16 *qrow = &s_q[buf][(lane >> 4) * 8 + (lane & 7)][((lane >> 3) & 1) * 8];
#pragma unroll
            for (int h = 0; h < 2; h++) {
                const int ih = i0 + 16 * h;
                if (ih >= TT_N || ih + 15 < ilo) continue;
                float tt[2][4];
                tt_wo_t_half(tt, av, vc0, qrow + (size_t)h * 16 * TT_SR, ih, j, kc);
                // stage 2: acc (keys x features) += T_j^T (keys x the half's rows) dY (its rows x features)
                unsigned ta[4];
                tt_acc_to_a(ta, tt);
                const int q = lane >> 3;
                const tt_bf16 *drow = &s_dy[buf][h * 16 + (q & 1) * 8 + (lane & 7)][(q >> 1) * 8];
#pragma unroll
                for (int nt = 0; nt < TT_TD / 8; nt += 2) {
                    unsigned bb[4];
                    tt_ldsm_t(bb, drow + nt * 8);
                    tt_mma(acc[nt], ta, bb[0], bb[1]);
                    if (nt + 1 < TT_TD / 8) tt_mma(acc[nt + 1], ta, bb[2], bb[3]);
                }
            }
        }
        ts = ts1, sb = sb1, buf = nbuf;
    }
    if (!jlive) return;
    float *out = tt_wo_out(dwo, wpart, split);
#pragma unroll
    for (int nt = 0; nt < TT_TD / 8; nt++) tt_wo_put(out, acc[nt], j, kc, d0 + nt * 8);
}
#else
// ---- the same on wgmma (sm_90a) -----------------------------------------------------------------
// The W warps of a block hold W consecutive j (a warpgroup four of them), the same 16 keys: each
// warp's stage 1 (T_j^T, keys x 16 rows, mma.sync) goes from its accumulators to wgmma's A
// operand in registers, and the rows' dY is B, N-major, read by the tensor cores once for the
// warpgroup's 64 (j, key) rows: dWo_j^T (64 x TD) += T^T dY, TD / 64 products m64n64k16 a half
// tile. dY's tiles (32 rows x TD features) come by the tensor memory accelerator (dY as the 3-D
// tensor [B][N][D], boxes of 32 rows x 64 features with the 128-byte swizzle; rows past N and
// features past D arrive as zeros), Q, V and K rows by cp.async, three buffers of each; an
// mbarrier a buffer says when its dY has landed. A half tile that every j of the warpgroup
// skips under the mask is skipped; a warp whose j lies past N takes part with zeros.
static_assert(TT_TD % 64 == 0 && TT_TD <= 256, "feature tiles of whole n64 products");
static_assert(TT_W % 4 == 0 && TT_THREADS == 32 * TT_W, "whole warpgroups, a warp a j");
static_assert(TT_D % 8 == 0, "rows of dY 16-byte aligned (the tensor map's stride)");
static_assert(tt_mla_wg_bwd_wo_smem(TT_R, TT_W, TT_TD) == TT_SMEM,
              "the shared memory the plan gives is what the blocks carve up below");
#define TT_DYBOX (32 * 64) // bf16 elements of one box of dY

// Tile (b, rows i0..)'s dY boxes into buffer sdy (shared address), announced to bar. By one thread.
__device__ __forceinline__ void tt_wo_load_dy(unsigned sdy, unsigned bar, const tt_tmap *map, int b, int i0, int d0)
{
    tt_wg_expect(bar, TT_TD / 64 * TT_DYBOX * 2);
#pragma unroll
    for (int q = 0; q < TT_TD / 64; q++) tt_wg_box3d(sdy + q * TT_DYBOX * 2, bar, map, d0 + q * 64, i0, b);
}

extern "C" __global__ void __launch_bounds__(TT_THREADS, TT_MINB > 0 ? TT_MINB : 1)
TT_KERNEL(float *__restrict__ dwo, const TT_T *__restrict__ dy, const TT_T *__restrict__ qkv,
          const float *__restrict__ g, const TT_T *__restrict__ p, const float *__restrict__ u,
          const float *__restrict__ v, int batch, float *__restrict__ wpart, const __grid_constant__ tt_tmap dy_map)
{
    tt_pdl_begin();
    extern __shared__ __align__(16) tt_bf16 smem_raw[];
    const unsigned raw = (unsigned)__cvta_generic_to_shared(smem_raw);
    tt_bf16 *smem = smem_raw + ((raw + 1023u) / 1024u * 1024u - raw) / 2; // the swizzle's boundary
    // [3][TD / 64] boxes of dY, then [3] Q [32][SR], V [16][SR], K [W][SR], then 3 mbarriers
    tt_bf16 *s_rows = smem + 3 * (TT_TD / 64) * TT_DYBOX;
    constexpr int QVK = (32 + 16 + TT_W) * TT_SR;
    unsigned long long *bars = (unsigned long long *)(s_rows + 3 * QVK);
    const unsigned dy_a = (unsigned)__cvta_generic_to_shared(smem);
    const unsigned bar_a = (unsigned)__cvta_generic_to_shared(bars);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int j = blockIdx.x * TT_W + warp, kc = blockIdx.y * 16, d0 = blockIdx.z % TT_NDT * TT_TD;
    const int split = blockIdx.z / TT_NDT, per_split = (batch + TT_S - 1) / TT_S;
    const int b0 = min(split * per_split, batch), nb = min(per_split, batch - b0);
    const bool jlive = j < TT_N;
    const int jj = jlive ? j : TT_N - 1;
    (void)dy;
#if !TT_POS_KEY
    (void)p, (void)u, (void)v;
#endif
#define TT_SQ(buf) reinterpret_cast<tt_bf16(*)[TT_SR]>(s_rows + (buf) * QVK)
#define TT_SV(buf) reinterpret_cast<tt_bf16(*)[TT_SR]>(s_rows + (buf) * QVK + 32 * TT_SR)
#define TT_SK(buf) reinterpret_cast<tt_bf16(*)[TT_SR]>(s_rows + (buf) * QVK + 48 * TT_SR)
    float acc[TT_TD / 64][32];
#pragma unroll
    for (int q = 0; q < TT_TD / 64; q++)
#pragma unroll
        for (int e = 0; e < 32; e++) acc[q][e] = 0.f;
    // ranks from R to the k-steps' end are zero in every buffer's Q, once
    for (int e = threadIdx.x; e < 3 * 32 * (TT_RK * 16 - TT_R); e += TT_THREADS) {
        const int bi = e / (32 * (TT_RK * 16 - TT_R)), rest = e % (32 * (TT_RK * 16 - TT_R));
        TT_SQ(bi)[rest / (TT_RK * 16 - TT_R)][TT_R + rest % (TT_RK * 16 - TT_R)].bits = 0;
    }
    // the tiles, in order: sequences b, and in each the rows from the first the mask lets through
    const int istart = TT_CAUSAL ? max((int)blockIdx.x * TT_W, kc) / 32 * 32 : 0;
    const int per_seq = (TT_N - istart + 31) / 32, ntiles = nb * per_seq;
    const int j0 = blockIdx.x * TT_W;
    if (threadIdx.x == 0) {
        tt_wg_bars_init(bar_a, 3);
        if (ntiles) tt_wo_load_dy(dy_a, bar_a, &dy_map, b0, istart, d0);
    }
    if (ntiles) tt_wo_load_qvk(TT_SQ(0), TT_SV(0), TT_SK(0), qkv, b0, istart, kc, j0);
    tt_cp_commit();
    // the smallest j of this warp's warpgroup: a half tile above max(it, kc) is skipped by all four
    const int ilo = TT_CAUSAL ? max(j0 + warp / 4 * 4, kc) : 0;
    unsigned av[TT_RK][4];
    float vc0[2] = {0.f, 0.f}; // keys kc + g, kc + g + 8
    const tt_bf16 *qlane = &TT_SQ(0)[(lane >> 4) * 8 + (lane & 7)][((lane >> 3) & 1) * 8]; // buffer 0's
    for (int t = 0, ts = 0, sb = 0, buf = 0; t < ntiles; t++) { // tile t is sequence b0 + sb's ts-th
        const int i0 = istart + ts * 32, nbuf = buf == 2 ? 0 : buf + 1;
        const int ts1 = ts + 1 == per_seq ? 0 : ts + 1, sb1 = ts + 1 == per_seq ? sb + 1 : sb; // the next's
        // (buffer nbuf was last read by tile t - 2, whose products every warp waited for before
        // the barrier of tile t - 1)
        if (t + 1 < ntiles) {
            if (threadIdx.x == 0)
                tt_wo_load_dy(dy_a + nbuf * (TT_TD / 64) * TT_DYBOX * 2, bar_a + 8 * nbuf, &dy_map, b0 + sb1,
                              istart + ts1 * 32, d0);
            tt_wo_load_qvk(TT_SQ(nbuf), TT_SV(nbuf), TT_SK(nbuf), qkv, b0 + sb1, istart + ts1 * 32, kc, j0);
        }
        tt_cp_commit();
        tt_cp_wait<1>();
        __syncthreads(); // this tile's Q, V and K rows are in shared memory (and the barriers' init)
        if (ts == 0) // a new sequence
            tt_wo_stage1_a(av, vc0, TT_SK(buf)[warp], TT_SV(buf), g, p, u, v, jj);
        tt_wg_bar_wait(bar_a + 8 * buf, (t / 3) & 1); // and its dY
        const unsigned dyb = dy_a + buf * (TT_TD / 64) * TT_DYBOX * 2;
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int ih = i0 + 16 * h;
            if (ih >= TT_N || ih + 15 < ilo) continue; // the same for the whole warpgroup
            float tt[2][4];
            tt_wo_t_half(tt, av, vc0, qlane + (size_t)buf * QVK + (size_t)h * 16 * TT_SR, ih, j, kc);
            unsigned ta[4];
            tt_acc_to_a(ta, tt);
            tt_wg_fence();
            // box q's rows 16 h.. (two atoms of 8 rows)
#pragma unroll
            for (int q = 0; q < TT_TD / 64; q++)
                tt_wg_mma64<1>(acc[q], ta, tt_wg_desc_n64_sw128(dyb + q * TT_DYBOX * 2 + h * 2048));
            tt_wg_commit();
            tt_wg_wait<1>(); // the half before is done with its operands
        }
        tt_wg_wait<0>();
#pragma unroll
        for (int q = 0; q < TT_TD / 64; q++) tt_wg_pin(acc[q]);
        ts = ts1, sb = sb1, buf = nbuf;
    }
#undef TT_SQ
#undef TT_SV
#undef TT_SK
    if (!jlive) return;
    float *out = tt_wo_out(dwo, wpart, split);
#pragma unroll
    for (int q = 0; q < TT_TD / 64; q++)
#pragma unroll
        for (int nt = 0; nt < 8; nt++) tt_wo_put(out, &acc[q][nt * 4], j, kc, d0 + q * 64 + nt * 8);
}
#endif
#endif

#ifdef TT_OP_MLA_BWD_WO_SUM
// dwo [D*N*N] += the TT_S splits' sums of mla_bwd_wo, in split order; V elements at a time.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(float *__restrict__ dwo, const float *__restrict__ wpart)
{
    tt_pdl_begin();
    constexpr int V = (TT_D * TT_N * TT_N) % 4 == 0 ? 4 : 1;
    const size_t n = (size_t)TT_D * TT_N * TT_N;
    for (size_t e = ((size_t)blockIdx.x * TT_THREADS + threadIdx.x) * V; e < n; e += (size_t)gridDim.x * TT_THREADS * V) {
        float s[V];
        tt_load<V>(s, dwo + e);
#pragma unroll
        for (int sp = 0; sp < TT_S; sp++) {
            float x[V];
            tt_load<V>(x, wpart + tt_mla_wo_split(TT_N, TT_D, sp) + e);
#pragma unroll
            for (int q = 0; q < V; q++) s[q] += x[q];
        }
        tt_store<V>(dwo + e, s);
    }
}
#endif

#ifdef TT_OP_MLA_BWD_Q
// position: none (the plan keeps mla.cu's kernel for position: key). A warp owns rows
// i0 .. i0+15 of one sequence and one part of their keys j (TT_JS, 8 or 16, of them); a block,
// TT_G sequences with the same rows and part, which share each slab of Wo. Splitting j keeps the
// longest walk (the last tile's, under the mask) as short as the others'. With a_j = g Q K_j,
// for each chunk of 16 keys kc and each of its j:
//   dT  (rows x keys)   = dY Wo_j[:, kc..]       the contraction over D, dY in registers
//   E^T (ranks x rows)  = V[kc..]^T dT^T         dT's accumulators are E^T's B operands as they are
//   dQ^T += E^T g K_j                             in registers across the whole walk
//   dK~[j] += sum over rows of Q^T . E^T          (elementwise, bf16) times a one-hot matrix
//                                                 that puts j's sums in column j % 8 of an
//                                                 accumulator held across the walk
//   F^T (ranks x keys)  = Q^T dT                  dT transposed in registers (movmatrix)
//   dV^T[kc..] += F^T g K_j                       in registers across j; written per chunk
// Q^T (ranks x rows) is an A operand held across the walk, V[kc..]^T one held for a chunk: every
// product is ranks x something, so that g K_j scales rows of the accumulators and one pair of
// values of it serves dQ and dV alike. At the end dK[j] = g dK~[j], dg = sum_j K_j dK~[j]. The
// part's sums of dQ, dV, dg go to the partials (templates/mla_geom.cuh, TT_TI = 16), which
// mla_bwd_reduce adds up in a fixed order; dK[j] is complete in its part.
// With TT_DT_MEM (the materialized strategy, gpu/mla_mat.c) dT is read from memory instead, where
// cuBLAS's dY Wo wrote it (rows in the sequences' order, or the positions' under pos_rows, N^2
// apart, unmasked): no dY, no slabs of Wo, any D; in place of the mask's pass over dT, its
// batched products with KV and A, and mla_mat_grads.
#ifndef TT_DT_MEM
#define TT_DT_MEM 0
#endif
static_assert(!(TT_DT_MEM && TT_WG), "dT from memory has no product of its own to run on wgmma");
#define TT_DK ((TT_D + 15) / 16) // k-steps of 16 over the features
#define TT_SD 24                 // pitch of the slabs of Wo (16 keys wide), in bf16
#define TT_JSETS (TT_JS / 8)     // accumulators of dK~: 8 key positions j each
static_assert(TT_JS == 8 || TT_JS == 16, "parts of 8 or 16 key positions");
// What the plan checks before it picks this kernel over mla.cu's:
static_assert(!TT_POS_KEY, "position: key is mla.cu's mla_bwd_q: no P, u, v terms here");
static_assert(TT_DT_MEM || TT_D <= 256, "dY's rows are held in registers: D up to 256");
static_assert(TT_TI == 16 && TT_JP == (TT_N + TT_JS - 1) / TT_JS, "tiles of 16 rows, parts of JS");
static_assert(TT_TASKS == tt_mla_tc_tasks(TT_N, TT_CAUSAL, TT_JS), "the plan's grid: a block a task");

// a . b elementwise on bf16 pairs, rounded to nearest even (fma with -0: the product's sign of
// zero kept).
__device__ __forceinline__ unsigned tt_mul_bf16x2(unsigned a, unsigned b)
{
    unsigned d;
    asm("fma.rn.bf16x2 %0, %1, %2, %3;\n" : "=r"(d) : "r"(a), "r"(b), "r"(0x80008000u));
    return d;
}

#if TT_DT_MEM
// dT at j for the tile's rows (rowoff: where rows gi and gi + 8 start) and keys kc.., as cuBLAS
// wrote it (unmasked), in the accumulators' layout: a lane's keys 2t, 2t + 1 and 8 more, by
// 4-byte loads where N keeps them aligned; zeros past N and for a sequence past the batch.
__device__ __forceinline__ void tt_load_dt(float (&d)[2][4], const TT_T *dtm, const size_t (&rowoff)[2],
                                           int i0, int kc, int j, bool live)
{
    const int lane = threadIdx.x % 32, gi = lane >> 2, tq = lane & 3;
#pragma unroll
    for (int nt = 0; nt < 2; nt++)
#pragma unroll
        for (int h = 0; h < 2; h++) {
            const int i = i0 + gi + h * 8, k = kc + nt * 8 + tq * 2;
            float x0 = 0.f, x1 = 0.f;
            if (live && i < TT_N && k < TT_N) {
                const TT_T *src = dtm + rowoff[h] + (size_t)j * TT_N + k;
                if (TT_N % 2 == 0) {
                    const unsigned w = *reinterpret_cast<const unsigned *>(src);
                    x0 = __uint_as_float(w << 16), x1 = __uint_as_float(w & 0xffff0000u);
                } else {
                    x0 = tt_float(src[0]);
                    if (k + 1 < TT_N) x1 = tt_float(src[1]);
                }
            }
            d[nt][2 * h] = x0, d[nt][2 * h + 1] = x1;
        }
}
#endif

#if TT_MINB > 0
extern "C" __global__ void __launch_bounds__(TT_THREADS, TT_MINB)
#else
extern "C" __global__ void __launch_bounds__(TT_THREADS)
#endif
TT_KERNEL(TT_T *__restrict__ dqkv, float *__restrict__ part, const TT_T *__restrict__ dy,
          const TT_T *__restrict__ qkv, const float *__restrict__ g, const TT_T *__restrict__ wo,
          const TT_T *__restrict__ p, const float *__restrict__ u, const float *__restrict__ v,
          int batch
#if TT_WG
          , const __grid_constant__ tt_tmap wo_map
#endif
#if TT_DT_MEM
          , int pos_rows
#endif
)
{
    tt_pdl_begin();
    // dynamic shared memory: three slabs [DK*16][SD] ([DK*16][16] by TMA on wgmma); per warp
    // g K_j and dK~ [JS][RK*16] fp32 and two tiles of V rows [16][SR] (the chunk's, and the next
    // one's on its way); on wgmma, three mbarriers
    extern __shared__ __align__(16) unsigned char smem_raw[];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32, gi = lane >> 2, tq = lane & 3;
    constexpr size_t warp_bytes = (size_t)2 * TT_JS * TT_RK * 16 * 4 + 2 * 16 * TT_SR * 2;
#if TT_WG
    // dT's product on wgmma: the warpgroup's four sequences (the same rows, the same pair) are
    // its 64 rows, dY's rows its A operand in registers (ady below), Wo_j's 16 keys its B, N-major
    // with the 32-byte swizzle, by the tensor memory accelerator (a box of DK*16 features x 16
    // keys; features past D arrive as zeros), an mbarrier a slab
    static_assert(TT_G % 4 == 0, "whole warpgroups, a warp a sequence");
    static_assert(TT_N % 8 == 0, "rows of Wo 16-byte aligned (the tensor map's stride)");
    constexpr size_t slab_bytes = (size_t)3 * TT_DK * 16 * 16 * 2;
    static_assert(1024 + slab_bytes + TT_G * warp_bytes + 3 * 8 == TT_SMEM,
                  "the shared memory the plan gives is what the block carves up");
    const unsigned raw = (unsigned)__cvta_generic_to_shared(smem_raw);
    unsigned char *base = smem_raw + ((raw + 1023u) / 1024u * 1024u - raw); // the swizzle's boundary
    const unsigned sw_a = (unsigned)__cvta_generic_to_shared(base);
    const unsigned bar_a = sw_a + (unsigned)(slab_bytes + TT_G * warp_bytes);
    (void)wo;
#elif TT_DT_MEM
    unsigned char *base = smem_raw;
    constexpr size_t slab_bytes = 0;
    static_assert(TT_G * warp_bytes == TT_SMEM, "the shared memory the plan gives is what the block carves up");
    (void)wo;
#else
    unsigned char *base = smem_raw;
    tt_bf16 *s_w = reinterpret_cast<tt_bf16 *>(smem_raw);
    constexpr size_t slab_bytes = (size_t)3 * TT_DK * 16 * TT_SD * 2;
    static_assert(slab_bytes + TT_G * warp_bytes == TT_SMEM,
                  "the shared memory the plan gives is what the block carves up");
#endif
    unsigned char *mine = base + slab_bytes + warp * warp_bytes;
    float *s_gk = reinterpret_cast<float *>(mine); // g K_j of the part's j, zero past R
    float *s_dk = s_gk + TT_JS * TT_RK * 16;
    tt_bf16 *s_vc = reinterpret_cast<tt_bf16 *>(s_dk + TT_JS * TT_RK * 16);
    (void)p, (void)u, (void)v, (void)dqkv;

    // blockIdx.x: (tile, part) pairs, the last tile's (the most chunks) first
    int it, jp;
    tt_mla_tc_task(blockIdx.x, TT_N, TT_CAUSAL, TT_JS, &it, &jp);
    const int i0 = it * 16, b = blockIdx.y * TT_G + warp;
    const bool live = b < batch;
    const TT_T *seq = qkv + (size_t)(live ? b : 0) * TT_N * 3 * TT_R;
    const int jend = TT_CAUSAL ? min(i0 + 16, TT_N) : TT_N; // j and k both stop here
    const int j0 = jp * TT_JS, nj = min(TT_JS, jend - j0); // this part's keys j
    const int ql = lane >> 3, rl = lane & 7;                 // ldmatrix: matrix, row
#if TT_DT_MEM
    // dT's rows gi and gi + 8 of the tile, this sequence's (dy is dT here)
    size_t dt_row[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        const size_t i = (size_t)i0 + gi + h * 8;
        dt_row[h] = (pos_rows ? i * batch + (live ? b : 0) : (size_t)(live ? b : 0) * TT_N + i) * TT_N * TT_N;
    }
#else
    // dY rows i0.. as A operands over the features
    unsigned ady[TT_DK][4];
#pragma unroll
    for (int ks = 0; ks < TT_DK; ks++) {
        float x[8];
#pragma unroll
        for (int e = 0; e < 8; e++) {
            const int i = i0 + gi + ((e >> 1) & 1) * 8;
            const int d = ks * 16 + tq * 2 + (e & 1) + (e >= 4 ? 8 : 0);
            x[e] = (live && i < TT_N && d < TT_D) ? tt_float(dy[((size_t)b * TT_N + i) * TT_D + d]) : 0.f;
        }
#pragma unroll
        for (int q = 0; q < 4; q++) ady[ks][q] = tt_pack_bf16(x[2 * q], x[2 * q + 1]);
    }
#endif
    // Q^T as A operands (ranks x rows): register q of k-step mt holds ranks mt*16 + g (+8 for
    // q odd), rows 2t, 2t+1 (+8 for q >= 2)
    unsigned aq[TT_RK][4];
#pragma unroll
    for (int mt = 0; mt < TT_RK; mt++)
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const int r = mt * 16 + gi + (q & 1) * 8, ia = i0 + tq * 2 + (q >> 1) * 8;
            const float qa = (live && ia < TT_N && r < TT_R) ? tt_float(seq[(size_t)ia * 3 * TT_R + r]) : 0.f;
            const float qb = (live && ia + 1 < TT_N && r < TT_R) ? tt_float(seq[(size_t)(ia + 1) * 3 * TT_R + r]) : 0.f;
            aq[mt][q] = tt_pack_bf16(qa, qb);
        }
    for (int e = lane; e < TT_JS * TT_RK * 16; e += 32) {
        const int jl = e / (TT_RK * 16), r = e % (TT_RK * 16);
        s_gk[e] = live && jl < nj && r < TT_R ? g[r] * tt_float(seq[(size_t)(j0 + jl) * 3 * TT_R + TT_R + r]) : 0.f;
    }

    // accumulators, ranks x (rows | keys | j): m16 tiles over the rank, n8 tiles
    float dq[TT_RK][2][4], dk[TT_JSETS][TT_RK][4];
#pragma unroll
    for (int mt = 0; mt < TT_RK; mt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            dq[mt][0][e] = dq[mt][1][e] = 0.f;
#pragma unroll
            for (int s = 0; s < TT_JSETS; s++) dk[s][mt][e] = 0.f;
        }
    float *pv = TT_PART_V(live ? b : 0, it, jp);

    // The (chunk, j) pairs the warp visits, in order: chunks kc < jend, then the part's j. Each
    // pair's slab of Wo [DK*16][SD] (features x its 16 keys) is shared by the block's warps; three
    // slabs: the next pair's is in flight while this pair's is used, and the one before may still
    // be read by a slower warp (the next pair's slab was last read two pairs before: one barrier
    // a pair). The next chunk's V rows travel with the slab after a chunk's first.
    const int nchunks = (jend + 15) / 16, npairs = nchunks * nj;
#if TT_WG
    constexpr int SLAB = TT_DK * 16 * 16;
    constexpr unsigned SLAB_TX = TT_DK * 16 * 16 * 2;
    if (threadIdx.x == 0) {
        tt_wg_bars_init(bar_a, 3);
        if (npairs) {
            tt_wg_expect(bar_a, SLAB_TX);
            tt_wg_box2d(sw_a, bar_a, &wo_map, j0 * TT_N, 0);
        }
    }
#elif !TT_DT_MEM
    constexpr int SLAB = TT_DK * 16 * TT_SD; // (slab s at s_w + s * SLAB)
    tt_load_wo_slab<TT_DK * 16, 16>(s_w, TT_SD, wo, 0, (size_t)j0 * TT_N, 16, TT_N);
#endif
    tt_load_rows<16>(s_vc, seq, 0, 16, 2 * TT_R, live);
    tt_cp_commit();
    unsigned av[TT_RK][4]; // V[kc..]^T as A operands (ranks x keys)
    float dv[TT_RK][2][4];
#if TT_DT_MEM
    float dtn[2][4]; // the next pair's dT (the first pair's: chunk 0, the part's first j)
    if (npairs) tt_load_dt(dtn, dy, dt_row, i0, 0, j0, live);
#endif
    for (int pi = 0, c = 0, jl = 0, sl = 0; pi < npairs; pi++) { // pair pi is chunk c's jl-th j
        const int kc = c * 16, j = j0 + jl, nsl = sl == 2 ? 0 : sl + 1; // its slab, the next pair's
        const int c1 = jl + 1 == nj ? c + 1 : c, jl1 = jl + 1 == nj ? 0 : jl + 1; // the next pair's
        if (jl == 0 && c + 1 < nchunks) // (its buffer's last reader was the chunk before)
            tt_load_rows<16>(s_vc + (size_t)((c + 1) & 1) * 16 * TT_SR, seq, kc + 16, 16, 2 * TT_R, live);
        if (pi + 1 < npairs) {
            const int kn1 = c1 * 16;
#if TT_WG
            // (slab nsl's last readers were pair pi - 2's products, which every warp waited for
            // before the barrier of pair pi - 1)
            if (threadIdx.x == 0) {
                tt_wg_expect(bar_a + 8 * nsl, SLAB_TX);
                tt_wg_box2d(sw_a + nsl * SLAB * 2, bar_a + 8 * nsl, &wo_map, (j0 + jl1) * TT_N + kn1, 0);
            }
#elif !TT_DT_MEM
            tt_load_wo_slab<TT_DK * 16, 16>(s_w + nsl * SLAB, TT_SD, wo, 0, (size_t)(j0 + jl1) * TT_N + kn1,
                                            16, TT_N % 16 == 0 ? 16 : TT_N - kn1); // (a constant when whole)
#else
            (void)kn1;
#endif
        }
        tt_cp_commit();
        tt_cp_wait<1>();
        __syncthreads(); // this pair's slab (and the chunk's V rows) are in shared memory
#if TT_WG
        tt_wg_bar_wait(bar_a + 8 * sl, (pi / 3) & 1); // (the slab: when its bytes have landed)
#endif
        if (jl == 0) { // a new chunk: V's operands, dV from zero
            const tt_bf16 *vc = s_vc + (size_t)(c & 1) * 16 * TT_SR;
            // matrix q = lane / 8: keys (q / 2) * 8 + lane % 8, ranks mt*16 + (q % 2) * 8
#pragma unroll
            for (int mt = 0; mt < TT_RK; mt++)
                tt_ldsm_t(av[mt], vc + (size_t)((ql >> 1) * 8 + rl) * TT_SR + mt * 16 + (ql & 1) * 8);
#pragma unroll
            for (int mt = 0; mt < TT_RK; mt++)
#pragma unroll
                for (int e = 0; e < 4; e++) dv[mt][0][e] = dv[mt][1][e] = 0.f;
        }
        float dt[2][4];
#if TT_WG
        // dT = dY Wo_j[:, kc..] (the warpgroup's 64 rows), masked; k-step ks reads the slab's
        // features ks*16.. (two atoms of 8 rows, 512 bytes)
        {
            float d8[8] = {};
            tt_wg_fence();
#pragma unroll
            for (int ks = 0; ks < TT_DK; ks++)
                tt_wg_mma16_tb(d8, ady[ks], tt_wg_desc_n16_sw32(sw_a + sl * SLAB * 2 + ks * 512));
            tt_wg_commit();
            tt_wg_wait<0>();
#pragma unroll
            for (int e = 0; e < 8; e++) {
                asm volatile("" : "+f"(d8[e])::"memory");
                dt[e / 4][e % 4] = d8[e];
            }
        }
#if TT_N % 16 != 0
        // keys past N: the box holds the next j's columns there (or zeros past N*N)
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                if (kc + nt * 8 + tt_acc_col(lane, e) >= TT_N) dt[nt][e] = 0.f;
#endif
#elif TT_DT_MEM
        // this pair's dT (masked below), loaded during the pair before; the next pair's loads in
        // flight while this one's products run
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) dt[nt][e] = dtn[nt][e];
        if (pi + 1 < npairs) tt_load_dt(dtn, dy, dt_row, i0, c1 * 16, j0 + jl1, live);
#else
        const tt_bf16 *cur = s_w + sl * SLAB;
        // dT = dY Wo_j[:, kc..], masked; even and odd k-steps in separate accumulators, so that
        // four chains of products are in flight instead of two
        float dt2[2][4];
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) dt[nt][e] = dt2[nt][e] = 0.f;
#pragma unroll
        for (int ks = 0; ks < TT_DK; ks++) {
            unsigned w4[4];
            tt_ldsm_t(w4, cur + (size_t)(ks * 16 + (ql & 1) * 8 + rl) * TT_SD + (ql >> 1) * 8);
            float(&acc)[2][4] = ks % 2 ? dt2 : dt;
            tt_mma(acc[0], ady[ks], w4[0], w4[1]);
            tt_mma(acc[1], ady[ks], w4[2], w4[3]);
        }
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) dt[nt][e] += dt2[nt][e];
#endif
#if TT_CAUSAL
        if (j > i0 || kc + 15 > i0) // some (row, j, key) of the tile is masked
#pragma unroll
            for (int nt = 0; nt < 2; nt++)
#pragma unroll
                for (int e = 0; e < 4; e++) {
                    const int i = i0 + tt_acc_row(lane, e), k = kc + nt * 8 + tt_acc_col(lane, e);
                    if (j > i || k > i) dt[nt][e] = 0.f;
                }
#endif
        // dT's 8x8 blocks as bf16, (row g, keys 2t, 2t+1) of each: pr[rh][kh] holds rows
        // rh*8.., keys kh*8..: as they are, the B operands of E^T (k = keys, n = rows);
        // transposed, those of F^T (k = rows, n = keys)
        unsigned pr[2][2], pt[2][2];
#pragma unroll
        for (int kh = 0; kh < 2; kh++) {
            pr[0][kh] = tt_pack_bf16(dt[kh][0], dt[kh][1]);
            pr[1][kh] = tt_pack_bf16(dt[kh][2], dt[kh][3]);
            pt[kh][0] = tt_movm_t(pr[0][kh]); // keys kh*8 + g, rows 2t, 2t+1
            pt[kh][1] = tt_movm_t(pr[1][kh]); // rows 8 + 2t..
        }
        // the one-hot B operand: column j % 8 all ones
        const unsigned hot = gi == (jl & 7) ? 0x3f803f80u : 0u;
        const float *gk = s_gk + (size_t)jl * TT_RK * 16; // g K_j, by rank
#pragma unroll
        for (int mt = 0; mt < TT_RK; mt++) {
            const float clo = gk[mt * 16 + gi], chi = gk[mt * 16 + gi + 8]; // ranks g, g + 8
            float e[2][4] = {}, f[2][4] = {};
#pragma unroll
            for (int h = 0; h < 2; h++) {
                tt_mma(e[h], av[mt], pr[h][0], pr[h][1]); // rows h*8..
                tt_mma(f[h], aq[mt], pt[h][0], pt[h][1]); // keys h*8..
            }
            unsigned qe[4]; // Q^T . E^T as an A operand (ranks x rows)
#pragma unroll
            for (int h = 0; h < 2; h++) {
                dq[mt][h][0] += e[h][0] * clo;
                dq[mt][h][1] += e[h][1] * clo;
                dq[mt][h][2] += e[h][2] * chi;
                dq[mt][h][3] += e[h][3] * chi;
                dv[mt][h][0] += f[h][0] * clo;
                dv[mt][h][1] += f[h][1] * clo;
                dv[mt][h][2] += f[h][2] * chi;
                dv[mt][h][3] += f[h][3] * chi;
                qe[2 * h] = tt_mul_bf16x2(tt_pack_bf16(e[h][0], e[h][1]), aq[mt][2 * h]);
                qe[2 * h + 1] = tt_mul_bf16x2(tt_pack_bf16(e[h][2], e[h][3]), aq[mt][2 * h + 1]);
            }
            if (TT_JSETS == 1 || jl < 8)
                tt_mma(dk[0][mt], qe, hot, hot);
            else
                tt_mma(dk[TT_JSETS - 1][mt], qe, hot, hot);
        }
        if (jl == nj - 1 && live) // the chunk is done: its rows of the dV partial, written once
#pragma unroll
            for (int mt = 0; mt < TT_RK; mt++)
#pragma unroll
                for (int h = 0; h < 2; h++)
#pragma unroll
                    for (int e = 0; e < 4; e++) {
                        const int r = mt * 16 + tt_acc_row(lane, e), k = kc + h * 8 + tt_acc_col(lane, e);
                        if (k < TT_N && r < TT_R) pv[(size_t)k * TT_R + r] = dv[mt][h][e];
                    }
        c = c1, jl = jl1, sl = nsl;
    }
    // (the rows of keys and j the tile never sees, under the mask, are left unwritten:
    // mla_bwd_reduce does not read them)
    if (!live) return;
    float *pq = TT_PART_Q(b, it, jp), *pk = TT_PART_K(b, it), *vec = TT_PART_VEC(b, it, jp);
#pragma unroll
    for (int mt = 0; mt < TT_RK; mt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int r = mt * 16 + tt_acc_row(lane, e);
#pragma unroll
            for (int h = 0; h < 2; h++)
                if (r < TT_R) pq[(size_t)(h * 8 + tt_acc_col(lane, e)) * TT_R + r] = dq[mt][h][e];
            // dK~: column jl % 8 of set jl / 8
#pragma unroll
            for (int s = 0; s < TT_JSETS; s++)
                s_dk[(size_t)(s * 8 + tt_acc_col(lane, e)) * TT_RK * 16 + r] = dk[s][mt][e];
        }
    __syncwarp();
    // dK rows of the part's j
    for (int e = lane; e < nj * TT_R; e += 32)
        pk[(size_t)j0 * TT_R + e] = g[e % TT_R] * s_dk[(size_t)(e / TT_R) * TT_RK * 16 + e % TT_R];
    for (int r = lane; r < TT_R; r += 32) {
        float s = 0.f;
        for (int j = 0; j < nj; j++) s += tt_float(seq[(size_t)(j0 + j) * 3 * TT_R + TT_R + r]) * s_dk[(size_t)j * TT_RK * 16 + r];
        vec[r] = s;
        vec[TT_R + r] = 0.f;
        vec[2 * TT_R + r] = 0.f;
    }
}
#endif
