// Multi-linear attention with T materialized (MODEL.md section 1): the strategy for shapes where
// the products with Wo are most of the work (large D), which then run as cuBLAS products near
// the card's peak instead of inside the fused kernels (templates/mla.cu, mla_tc.cu). With
// A = [g (Q+u) | g (Q+v)] (N x R2 a sequence, R2 = R, or 2R with position: key; u = v = 0
// without) and KV[(j,k)] = [K_j V_k | P_j V_k] (N^2 x R2, elementwise products):
//   T = A KV^T (masked)    Y = T Wo^T
//   dT = dY Wo (masked)    dWo += dY^T T    G = dT KV    E = dT^T A
// and from G and E this file's mla_mat_grads and mla_mat_params give dQ, dK, dV, dP, dg, du, dv
// (gpu/mla_mat.c runs the products). Kernels:
//   mla_mat_prep   a block per (sequence, position t): KV's rows (t, k) for every k, and A's row t.
//   mla_mat_mask   a block per (sequence, row i) of T (or dT): zero where the causal mask hides
//                  (j, k) from i (j > i or k > i); T [batch N, N^2], N^2 apart, its rows in the
//                  sequences' order (b N + i) or, under the tiled products, the positions' (i B + b).
//   mla_mat_rows   a block per (position, sequence): a row of D between the two orders. Under the
//                  causal mask row i of T is zero from column (i + 1) N on, so gpu/mla_mat.c runs
//                  Y = T Wo^T and dT = dY Wo in tiles of positions, each over the columns its last
//                  row can see; a tile's rows are contiguous in the positions' order, into which
//                  dY goes before the backward's products and out of which Y comes after the
//                  forward's.
//   mla_mat_grads  a block per (sequence, position t): dQ_t = g (G1_t + G2_t), dK_t = sum_k
//                  E1[t,k] V_k, dV_t = sum_j E1[j,t] K_j + E2[j,t] P_j, written into dqkv; and
//                  the sequence's parts of dP_t = sum_k E2[t,k] V_k and of dg, du, dv at t.
//   mla_mat_params dP (written; a warp an output) and dg, du, dv (added into; a block an output)
//                  from the parts, in a fixed order.
// No float atomics: the result does not depend on scheduling.
// Constants: TT_N, TT_R, TT_D, TT_CAUSAL, TT_POS_KEY, TT_THREADS.

#define TT_R2 (TT_POS_KEY ? 2 * TT_R : TT_R)
#define TT_NN (TT_N * TT_N)

// 16 bytes of the storage type at a time where every row these kernels write (and qkv's and P's
// rows they read) is whole 16-byte groups: R2 (and 3R, R) a multiple of the vector for prep,
// N^2 for the mask; element by element otherwise.
constexpr int TT_VEC = 16 / (int)sizeof(TT_T);
constexpr bool TT_PREP_VEC = TT_R % TT_VEC == 0, TT_MASK_VEC = TT_NN % TT_VEC == 0;

#if defined(TT_OP_MLA_MAT_PREP)
// KV's element (t, k, c) = key_t[c] V_k[c % R], A's (t, c) = g[c % R] (Q_t + u|v)[c % R]; each
// rounded once from fp32, whichever path.
__device__ __forceinline__ float tt_prep_key(const TT_T *seq, const TT_T *p, int t, int c)
{
    const int r = c % TT_R;
#if TT_POS_KEY
    if (c >= TT_R) return tt_float(p[(size_t)t * TT_R + r]);
#else
    (void)p;
#endif
    return tt_float(seq[(size_t)t * 3 * TT_R + TT_R + r]);
}

extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ a, TT_T *__restrict__ kv, const TT_T *__restrict__ qkv,
          const float *__restrict__ g, const TT_T *__restrict__ p, const float *__restrict__ u,
          const float *__restrict__ v)
{
    tt_pdl_begin();
    const int t = blockIdx.x, b = blockIdx.y;
    const TT_T *seq = qkv + (size_t)b * TT_N * 3 * TT_R;
#if !TT_POS_KEY
    (void)u, (void)v;
#endif
    TT_T *kvt = kv + ((size_t)b * TT_NN + (size_t)t * TT_N) * TT_R2;
    if constexpr (TT_PREP_VEC) {
        // a thread per TT_VEC consecutive c of one k (no vector crosses R: R is whole vectors)
        constexpr int CH = TT_R2 / TT_VEC;
        for (int e = threadIdx.x; e < TT_N * CH; e += TT_THREADS) {
            const int k = e / CH, c0 = e % CH * TT_VEC, r0 = c0 % TT_R;
            float key[TT_VEC], vk[TT_VEC];
#if TT_POS_KEY
            if (c0 >= TT_R)
                tt_load<TT_VEC>(key, p + (size_t)t * TT_R + r0);
            else
#endif
                tt_load<TT_VEC>(key, seq + (size_t)t * 3 * TT_R + TT_R + r0);
            tt_load<TT_VEC>(vk, seq + (size_t)k * 3 * TT_R + 2 * TT_R + r0);
#pragma unroll
            for (int i = 0; i < TT_VEC; i++) key[i] *= vk[i];
            tt_store<TT_VEC>(kvt + (size_t)k * TT_R2 + c0, key);
        }
    } else {
        for (int e = threadIdx.x; e < TT_N * TT_R2; e += TT_THREADS) {
            const int k = e / TT_R2, c = e % TT_R2, r = c % TT_R;
            const float vk = tt_float(seq[(size_t)k * 3 * TT_R + 2 * TT_R + r]);
            kvt[e] = tt_store_as<TT_T>(tt_prep_key(seq, p, t, c) * vk);
        }
    }
    TT_T *at = a + ((size_t)b * TT_N + t) * TT_R2;
    for (int c = threadIdx.x; c < TT_R2; c += TT_THREADS) {
        const int r = c % TT_R;
        float q = tt_float(seq[(size_t)t * 3 * TT_R + r]);
#if TT_POS_KEY
        q += c < TT_R ? u[r] : v[r];
#endif
        at[c] = tt_store_as<TT_T>(g[r] * q);
    }
}
#endif

#if defined(TT_OP_MLA_MAT_MASK)
// Row i keeps (j, k) with j <= i and k <= i: for each j <= i the tail k > i of its N columns is
// zeroed, and every column from (i + 1) N on (j > i). Whole vectors past (i + 1) N are stored as
// zeros without a read; a vector that holds kept and hidden columns is read, zeroed where hidden
// and stored; one that holds only kept columns is left alone.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ t, int pos_rows)
{
    tt_pdl_begin();
    const int i = blockIdx.x, b = blockIdx.y;
    TT_T *row = t + (pos_rows ? (size_t)i * gridDim.y + b : (size_t)b * TT_N + i) * TT_NN;
    const TT_T zero = tt_store_as<TT_T>(0.f);
    if constexpr (TT_MASK_VEC) {
        const int kept_end = (i + 1) * TT_N; // columns from here on are all hidden
        for (int c0 = threadIdx.x * TT_VEC; c0 < TT_NN; c0 += TT_THREADS * TT_VEC) {
            tt_vec<TT_T, TT_VEC> *at = reinterpret_cast<tt_vec<TT_T, TT_VEC> *>(row + c0);
            if (c0 >= kept_end) {
                tt_vec<TT_T, TT_VEC> z;
#pragma unroll
                for (int e = 0; e < TT_VEC; e++) z.v[e] = zero;
                *at = z;
                continue;
            }
            bool hidden = false;
#pragma unroll
            for (int e = 0; e < TT_VEC; e++) {
                const int c = c0 + e;
                hidden |= c / TT_N > i || c % TT_N > i;
            }
            if (!hidden) continue;
            tt_vec<TT_T, TT_VEC> x = *at;
#pragma unroll
            for (int e = 0; e < TT_VEC; e++) {
                const int c = c0 + e;
                if (c / TT_N > i || c % TT_N > i) x.v[e] = zero;
            }
            *at = x;
        }
    } else {
        for (int c = threadIdx.x; c < TT_NN; c += TT_THREADS) {
            const int j = c / TT_N, k = c % TT_N;
            if (j > i || k > i) row[c] = zero;
        }
    }
}
#endif

#if defined(TT_OP_MLA_MAT_ROWS)
// to_pos 1: dst's row i B + b = src's row b N + i (the sequences' order into the positions');
// 0: the reverse. B = gridDim.y.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ dst, const TT_T *__restrict__ src, int to_pos)
{
    tt_pdl_begin();
    const int i = blockIdx.x, b = blockIdx.y;
    const size_t seq_row = (size_t)b * TT_N + i, pos_row = (size_t)i * gridDim.y + b;
    const TT_T *from = src + (to_pos ? seq_row : pos_row) * TT_D;
    TT_T *to = dst + (to_pos ? pos_row : seq_row) * TT_D;
    if constexpr (TT_D % TT_VEC == 0) {
        typedef tt_vec<TT_T, TT_VEC> vec;
        for (int c = threadIdx.x; c < TT_D / TT_VEC; c += TT_THREADS)
            reinterpret_cast<vec *>(to)[c] = reinterpret_cast<const vec *>(from)[c];
    } else {
        for (int c = threadIdx.x; c < TT_D; c += TT_THREADS) to[c] = from[c];
    }
}
#endif

#if defined(TT_OP_MLA_MAT_GRADS)
// part: [batch][N] rows of [dP_t (R, with position: key) | dg (R) | du (R) | dv (R)] at (b, t)
#define TT_PART (TT_POS_KEY ? 4 * TT_R : TT_R)
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ dqkv, float *__restrict__ part, const float *__restrict__ gm,
          const float *__restrict__ em, const TT_T *__restrict__ qkv, const float *__restrict__ g,
          const TT_T *__restrict__ p, const float *__restrict__ u, const float *__restrict__ v)
{
    tt_pdl_begin();
    const int t = blockIdx.x, b = blockIdx.y;
    const TT_T *seq = qkv + (size_t)b * TT_N * 3 * TT_R;
    const float *gt = gm + ((size_t)b * TT_N + t) * TT_R2;
    const float *eb = em + (size_t)b * TT_NN * TT_R2;
    TT_T *out = dqkv + ((size_t)b * TT_N + t) * 3 * TT_R;
    float *pt = part + ((size_t)b * TT_N + t) * TT_PART;
#if !TT_POS_KEY
    (void)p, (void)u, (void)v;
#endif
    for (int r = threadIdx.x; r < TT_R; r += TT_THREADS) {
        const float q = tt_float(seq[(size_t)t * 3 * TT_R + r]);
        const float g1 = gt[r];
#if TT_POS_KEY
        const float g2 = gt[TT_R + r];
        out[r] = tt_store_as<TT_T>(g[r] * (g1 + g2));
        pt[TT_R + r] = g1 * (q + u[r]) + g2 * (q + v[r]); // dg
        pt[2 * TT_R + r] = g[r] * g1;                     // du
        pt[3 * TT_R + r] = g[r] * g2;                     // dv
#else
        out[r] = tt_store_as<TT_T>(g[r] * g1);
        pt[r] = g1 * q; // dg
#endif
        // dK_t (and dP_t's part): row t of E, over k
        float dk = 0.f, dp = 0.f;
        for (int k = 0; k < TT_N; k++) {
            const float vk = tt_float(seq[(size_t)k * 3 * TT_R + 2 * TT_R + r]);
            const float *e = eb + ((size_t)t * TT_N + k) * TT_R2;
            dk += e[r] * vk;
#if TT_POS_KEY
            dp += e[TT_R + r] * vk;
#endif
        }
        out[TT_R + r] = tt_store_as<TT_T>(dk);
#if TT_POS_KEY
        pt[r] = dp;
#else
        (void)dp;
#endif
        // dV_t: column t of E, over j
        float dv = 0.f;
        for (int j = 0; j < TT_N; j++) {
            const float *e = eb + ((size_t)j * TT_N + t) * TT_R2;
            dv += e[r] * tt_float(seq[(size_t)j * 3 * TT_R + TT_R + r]);
#if TT_POS_KEY
            dv += e[TT_R + r] * tt_float(p[(size_t)j * TT_R + r]);
#endif
        }
        out[2 * TT_R + r] = tt_store_as<TT_T>(dv);
    }
}
#endif

#if defined(TT_OP_MLA_MAT_PARAMS)
#define TT_PART (TT_POS_KEY ? 4 * TT_R : TT_R)
// dP[t][r] (position: key), summed over the sequences: a warp per output, lanes over the
// sequences and a fixed butterfly, in the first blocks; then dg, du, dv [r], each summed over
// every (b, t), a block per output (a warp each had taken 8 us a layer of lm1b's body for its 40
// outputs of 2560 terms): threads over the terms, then tt_block_sum, a fixed order.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(float *__restrict__ dp, float *__restrict__ dg, float *__restrict__ du,
          float *__restrict__ dv, const float *__restrict__ part, int batch)
{
    tt_pdl_begin();
    __shared__ float scratch[32];
    static_assert(sizeof scratch == TT_SMEM, "the shared memory the plan counted is what the block declares");
    const int n_dp = TT_POS_KEY ? TT_N * TT_R : 0;
    const int dp_blocks = (32 * n_dp + TT_THREADS - 1) / TT_THREADS;
    if ((int)blockIdx.x < dp_blocks) { // whole blocks: none of them meets a barrier
        const int warp = (blockIdx.x * TT_THREADS + threadIdx.x) / 32, lane = threadIdx.x % 32;
        if (warp >= n_dp) return;
        const int t = warp / TT_R, r = warp % TT_R;
        float s = 0.f;
        for (int b = lane; b < batch; b += 32) s += part[((size_t)b * TT_N + t) * TT_PART + r];
        s = tt_group_sum<32>(s);
        if (lane == 0) dp[warp] = s;
        return;
    }
    const int o = (int)blockIdx.x - dp_blocks, which = o / TT_R, r = o % TT_R;
    const int col = (TT_POS_KEY ? TT_R : 0) + which * TT_R + r;
    float s = 0.f;
    for (int bt = threadIdx.x; bt < batch * TT_N; bt += TT_THREADS) s += part[(size_t)bt * TT_PART + col];
    s = tt_block_sum(s, scratch);
    if (threadIdx.x) return;
    float *dst = which == 0 ? dg : which == 1 ? du : dv;
    dst[r] += s;
}
#endif
