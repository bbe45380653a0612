// Transformer-XL's attention probabilities (MODEL.md section 3), the part between its products:
// the relative shift, the causal mask over memory and segment, the softmax and dropatt, fused,
// forward and backward. The products around it (AC = (q + u) k^T, BD = (q + v) r^T, P V) are
// cuBLAS's. Rows are head-major, (head c, sequence b, query i) at row (c B + b) n + i, so that BD
// is one product per head over all sequences; the dropout draws are numbered in the reference's
// order (below). Shapes, per (sequence b, head c, query i): klen = m + n keys (m of memory);
//   ac[b,c,i,j]  j < klen          (q_i + u) . k_j
//   bd[b,c,i,t]  t < klen          (q_i + v) . r_t, r_t the position embedding of distance
//                                  klen - 1 - t (the unshifted BD: row t of r for every query)
//   s_j = (ac[i,j] + bd[i, n - 1 - i + j]) / sqrt(d_head) for j <= m + i (the keys i sees, at
//         distance m + i - j: kimiyoung's rel_shift), masked (-inf) after
//   prob = softmax(s) (0 where masked); pdrop = dropatt(prob), element index
//         ((b H + c) n + i) klen + j of the stream tt_dropout_stream(step, site), as
//         cpu/cpu_txl.c draws it.
// Backward, from dpdrop: dprob = dropatt_bwd(dpdrop); ds = prob (dprob - sum prob dprob) /
// sqrt(d_head); dac[i,j] = ds_j (0 where masked) and dbd[i, n - 1 - i + j] = ds_j (0 at the
// columns t < n - 1 - i, which row i does not read); both of the storage type, as the products
// after them read them.
// A warp per row (b, c, i), TT_THREADS / 32 rows a block; the row's scores in registers up to
// TT_KMAX keys (klen <= TT_KMAX, checked by the launcher). Constants: TT_THREADS, TT_KMAX.
// Tunable (ttgen --tune; the plan's heuristic otherwise): rows (warps) per block.
// ttgen: tunable txl_softmax_fwd THREADS 64 128 256 512
// ttgen: tunable txl_softmax_bwd THREADS 64 128 256 512
#define TT_PER_LANE ((TT_KMAX + 31) / 32)

// The reference's number of row (c B + b) n + i: ((b H + c) n + i).
__device__ __forceinline__ long long tt_txl_ref_row(long long row, int n, int batch, int heads)
{
    const long long i = row % n, cb = row / n, c = cb / batch, b = cb % batch;
    return (b * heads + c) * n + i;
}

#ifdef TT_OP_TXL_SOFTMAX_FWD
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ prob, TT_T *__restrict__ pdrop, const float *__restrict__ ac,
          const float *__restrict__ bd, int rows, int n, int m, int batch, int heads, float scale,
          float p, unsigned long long seed, const unsigned long long *__restrict__ step, unsigned site)
{
    const int lane = threadIdx.x % 32;
    const long long row = (long long)blockIdx.x * (TT_THREADS / 32) + threadIdx.x / 32;
    if (row >= rows) return;
    const int i = (int)(row % n), klen = m + n, end = m + i + 1;
    const float *a = ac + row * klen, *r = bd + row * klen + (n - 1 - i);
    float s[TT_PER_LANE], mx = TT_NEG_INF;
#pragma unroll
    for (int q = 0; q < TT_PER_LANE; q++) {
        const int j = lane + 32 * q;
        s[q] = j < end ? (a[j] + r[j]) * scale : TT_NEG_INF;
        mx = fmaxf(mx, s[q]);
    }
#pragma unroll
    for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    float z = 0.f;
#pragma unroll
    for (int q = 0; q < TT_PER_LANE; q++) {
        const int j = lane + 32 * q;
        s[q] = j < end ? __expf(s[q] - mx) : 0.f;
        z += s[q];
    }
    z = tt_group_sum<32>(z);
    const float inv = 1.f / z, keep_scale = 1.f / (1.f - p);
    const uint64_t stream = tt_dropout_stream(*step, site);
    const long long ref = tt_txl_ref_row(row, n, batch, heads) * klen;
#pragma unroll
    for (int q = 0; q < TT_PER_LANE; q++) {
        const int j = lane + 32 * q;
        if (j >= klen) continue;
        const float pr = s[q] * inv;
        prob[row * klen + j] = tt_store_as<TT_T>(pr);
        const bool keep = tt_dropout_keep(seed, stream, (uint64_t)(ref + j), p);
        pdrop[row * klen + j] = tt_store_as<TT_T>(keep ? pr * keep_scale : 0.f);
    }
}
#endif

#ifdef TT_OP_TXL_SOFTMAX_BWD
// dpdrop: the gradient of pdrop (fp32, from cuBLAS); prob as the forward wrote it.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ dac, TT_T *__restrict__ dbd, const float *__restrict__ dpdrop,
          const TT_T *__restrict__ prob, int rows, int n, int m, int batch, int heads, float scale,
          float p, unsigned long long seed, const unsigned long long *__restrict__ step, unsigned site)
{
    const int lane = threadIdx.x % 32;
    const long long row = (long long)blockIdx.x * (TT_THREADS / 32) + threadIdx.x / 32;
    if (row >= rows) return;
    const int i = (int)(row % n), klen = m + n, end = m + i + 1, shift = n - 1 - i;
    const float keep_scale = 1.f / (1.f - p);
    const uint64_t stream = tt_dropout_stream(*step, site);
    const long long ref = tt_txl_ref_row(row, n, batch, heads) * klen;
    float pr[TT_PER_LANE], dp[TT_PER_LANE], dot = 0.f;
#pragma unroll
    for (int q = 0; q < TT_PER_LANE; q++) {
        const int j = lane + 32 * q;
        pr[q] = dp[q] = 0.f;
        if (j < end) {
            pr[q] = tt_float(prob[row * klen + j]);
            const bool keep = tt_dropout_keep(seed, stream, (uint64_t)(ref + j), p);
            dp[q] = keep ? dpdrop[row * klen + j] * keep_scale : 0.f;
        }
        dot += pr[q] * dp[q];
    }
    dot = tt_group_sum<32>(dot);
    TT_T *da = dac + row * klen, *db = dbd + row * klen;
#pragma unroll
    for (int q = 0; q < TT_PER_LANE; q++) {
        const int j = lane + 32 * q;
        if (j >= klen) continue;
        const float ds = j < end ? pr[q] * (dp[q] - dot) * scale : 0.f;
        da[j] = tt_store_as<TT_T>(ds);
        if (j + shift < klen) db[j + shift] = tt_store_as<TT_T>(ds); // every column t >= shift is some j's
        if (j < shift) db[j] = tt_store_as<TT_T>(0.f);               // and the columns before shift are no j's
    }
}
#endif

#ifdef TT_OP_TXL_ATTN_FWD
// The whole forward between the biased queries and P'V, fused (bf16 only; mma.sync m16n8k16,
// fp32 accumulation), where the keys fit shared memory: AC and BD are never written. A block:
// 64 query rows (a warp per 16) of one (head c, sequence b): item c B + b of the head-major
// tiles qu, qv [item][n][DP], tk, tv [item][klen][DP], rh [c][klen][DP] (DP: d_head padded to
// whole 16-byte groups, zeros past d_head). Its keys' K and V rows, and the rows of r its
// queries reach, sit in shared memory. Each warp walks its visible keys 16 at a time twice:
//   1. s = (ac + bd) * scale as above: ac = (q+u) K_chunk^T; bd through the band of 32 rows of
//      r its rows reach in the chunk, (q+v) R_band^T, read back skewed through the warp's
//      scratch (row r, key c: band column 15 - r + c); the rows' running maxima and sums;
//   2. s again, prob = exp(s - max) / sum and pdrop = dropatt(prob) written (the backward reads
//      them, and zeros past each row's keys), and O += pdrop V_chunk from pdrop as stored.
// O goes to oh [item][n][DP] (as the product P'V would write it). The same draws as
// txl_softmax_fwd; the sums in another order (a running maximum), within rounding of it.
// Constants: TT_DP, TT_KMAX (klen <= KMAX, a multiple of 16), TT_SP (shared rows' pitch),
// TT_THREADS 128.
#define TT_KS ((TT_DP + 15) / 16) // k-steps over a head
static_assert(TT_THREADS == 128 && TT_KMAX % 16 == 0 && TT_SP >= TT_KS * 16 && TT_SP % 8 == 0,
              "four warps of 16 queries; whole chunks of keys; rows of whole k-steps, 16-byte aligned");
static_assert((3 * TT_KMAX * TT_SP * 2 + 4 * 16 * 33 * 4) == TT_SMEM,
              "the shared memory the plan counted is what the block carves up below");

// rows [from, to) of a [rows][DP] head tile into a shared [.][SP] one, zero past DP (to the
// k-steps' end) and for the rows in [to, zero_to)
__device__ __forceinline__ void tt_stage_rows(tt_bf16 *dst, const tt_bf16 *src, int from, int to,
                                              int zero_to)
{
    const int w = TT_KS * 16;
    for (int e = threadIdx.x; e < (zero_to - from) * w; e += TT_THREADS) {
        const int row = from + e / w, col = e % w;
        tt_bf16 x;
        x.bits = 0;
        if (row < to && col < TT_DP) x = src[(size_t)row * TT_DP + col];
        dst[(size_t)(row - from) * TT_SP + col] = x;
    }
}

// A-operand fragments of 16 rows (row0..) of a [n][DP] head tile, zero past n.
__device__ __forceinline__ void tt_rows_frag(unsigned (&a)[TT_KS][4], const tt_bf16 *src, int row0, int n)
{
    const int lane = threadIdx.x % 32, g = lane >> 2, t = lane & 3;
#pragma unroll
    for (int ks = 0; ks < TT_KS; ks++)
#pragma unroll
        for (int q = 0; q < 4; q++) {
            const int row = row0 + g + (q & 1) * 8, col = ks * 16 + 2 * t + (q >> 1) * 8;
            unsigned v = 0;
            if (row < n && col < TT_DP) v = *reinterpret_cast<const unsigned *>(src + (size_t)row * TT_DP + col);
            a[ks][q] = v;
        }
}

extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ prob, TT_T *__restrict__ pdrop, TT_T *__restrict__ oh,
          const TT_T *__restrict__ qu, const TT_T *__restrict__ qv, const TT_T *__restrict__ tk,
          const TT_T *__restrict__ tv, const TT_T *__restrict__ rh, int n, int m, int batch,
          int heads, float scale, float p, unsigned long long seed,
          const unsigned long long *__restrict__ step, unsigned site)
{
    extern __shared__ __align__(16) unsigned char smem_raw[];
    tt_bf16 *sk = reinterpret_cast<tt_bf16 *>(smem_raw), *sv = sk + (size_t)TT_KMAX * TT_SP;
    tt_bf16 *sr = sv + (size_t)TT_KMAX * TT_SP;
    float *scratch = reinterpret_cast<float *>(sr + (size_t)TT_KMAX * TT_SP);
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
    const int item = blockIdx.y, c = item / batch, b = item % batch, klen = m + n;
    const int i0 = blockIdx.x * 64, iw = i0 + 16 * warp;
    const int kend = m + min(i0 + 64, n), kz = (kend + 15) / 16 * 16; // the block's keys
    const int tlo = max(0, n - 1 - (i0 + 63));                         // the first r row reached
    tt_stage_rows(sk, tk + (size_t)item * klen * TT_DP, 0, kend, kz);
    tt_stage_rows(sv, tv + (size_t)item * klen * TT_DP, 0, kend, kz);
    tt_stage_rows(sr, rh + (size_t)c * klen * TT_DP, tlo, klen, klen);
    __syncthreads();
    if (iw >= n) return;
    float *bb = scratch + (size_t)warp * 16 * 33;
    unsigned au[TT_KS][4], av[TT_KS][4];
    tt_rows_frag(au, qu + (size_t)item * n * TT_DP, iw, n);
    tt_rows_frag(av, qv + (size_t)item * n * TT_DP, iw, n);
    const int jlast = m + min(iw + 15, n - 1); // the last key the warp's rows see

    // s of the chunk of keys kc .. kc+15 for the lane's accumulator elements: (row, key) of
    // n-tile nt and register e at (g + 8 (e >= 2), kc + 8 nt + tt_acc_col); -inf where masked
    auto scores = [&](float (&s)[2][4], int kc) {
        float ac[2][4] = {}, bd[4][4] = {};
        const tt_bf16 *krow = sk + (size_t)(kc + (lane >> 4) * 8 + (lane & 7)) * TT_SP + ((lane >> 3) & 1) * 8;
        // r rows of the band: tb + q 16 + (lane >> 4) 8 + lane % 8 (q = 0, 1), clamped
        const int tb = n - 1 - iw - 15 + kc;
        const tt_bf16 *rrow[2];
#pragma unroll
        for (int q = 0; q < 2; q++) {
            const int t = min(max(tb + q * 16 + (lane >> 4) * 8 + (lane & 7), tlo), klen - 1);
            rrow[q] = sr + (size_t)(t - tlo) * TT_SP + ((lane >> 3) & 1) * 8;
        }
#pragma unroll
        for (int ks = 0; ks < TT_KS; ks++) {
            unsigned kb[4];
            tt_ldsm(kb, krow + ks * 16);
            tt_mma(ac[0], au[ks], kb[0], kb[1]);
            tt_mma(ac[1], au[ks], kb[2], kb[3]);
#pragma unroll
            for (int q = 0; q < 2; q++) {
                unsigned rb[4];
                tt_ldsm(rb, rrow[q] + ks * 16);
                tt_mma(bd[2 * q], av[ks], rb[0], rb[1]);
                tt_mma(bd[2 * q + 1], av[ks], rb[2], rb[3]);
            }
        }
#pragma unroll
        for (int nt = 0; nt < 4; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++)
                bb[tt_acc_row(lane, e) * 33 + nt * 8 + tt_acc_col(lane, e)] = bd[nt][e];
        __syncwarp();
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int r = tt_acc_row(lane, e), col = nt * 8 + tt_acc_col(lane, e);
                const int i = iw + r, j = kc + col;
                const float x = (ac[nt][e] + bb[r * 33 + 15 - r + col]) * scale;
                s[nt][e] = i < n && j <= m + i ? x : TT_NEG_INF;
            }
        __syncwarp(); // the scratch is free for the next chunk
    };

    // 1. each row's maximum and sum of exp(s - max), rows g (e < 2) and g + 8 (e >= 2)
    float mx[2] = {TT_NEG_INF, TT_NEG_INF}, sum[2] = {0.f, 0.f};
    for (int kc = 0; kc <= jlast; kc += 16) {
        float s[2][4];
        scores(s, kc);
#pragma unroll
        for (int h = 0; h < 2; h++) {
            float cm = fmaxf(fmaxf(s[0][2 * h], s[0][2 * h + 1]), fmaxf(s[1][2 * h], s[1][2 * h + 1]));
            cm = fmaxf(cm, __shfl_xor_sync(0xffffffffu, cm, 1));
            cm = fmaxf(cm, __shfl_xor_sync(0xffffffffu, cm, 2));
            const float nm = fmaxf(mx[h], cm);
            if (nm == TT_NEG_INF) continue; // nothing seen yet in this row
            float add = 0.f;
#pragma unroll
            for (int nt = 0; nt < 2; nt++)
#pragma unroll
                for (int e = 2 * h; e < 2 * h + 2; e++) add += __expf(s[nt][e] - nm);
            sum[h] = (mx[h] == TT_NEG_INF ? 0.f : sum[h] * __expf(mx[h] - nm)) + add;
            mx[h] = nm;
        }
    }
    float inv[2];
#pragma unroll
    for (int h = 0; h < 2; h++) {
        sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 1);
        sum[h] += __shfl_xor_sync(0xffffffffu, sum[h], 2);
        inv[h] = 1.f / sum[h];
    }

    // 2. prob, pdrop, and O = pdrop V
    const float keep_scale = 1.f / (1.f - p);
    const uint64_t stream = tt_dropout_stream(*step, site);
    float o[TT_KS * 2][4] = {};
    const int kall = (klen + 15) / 16 * 16;
    for (int kc = 0; kc < kall; kc += 16) {
        float s[2][4] = {};
        const bool seen = kc <= jlast;
        if (seen) scores(s, kc);
        float pd[2][4];
#pragma unroll
        for (int nt = 0; nt < 2; nt++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int r = tt_acc_row(lane, e), i = iw + r, j = kc + nt * 8 + tt_acc_col(lane, e);
                const float pr = seen && s[nt][e] != TT_NEG_INF ? __expf(s[nt][e] - mx[e >> 1]) * inv[e >> 1] : 0.f;
                const size_t row = (size_t)item * n + i;
                const long long ref = tt_txl_ref_row((long long)row, n, batch, heads) * klen;
                const bool keep = tt_dropout_keep(seed, stream, (uint64_t)(ref + j), p);
                const TT_T ps = tt_store_as<TT_T>(pr), pds = tt_store_as<TT_T>(keep ? pr * keep_scale : 0.f);
                if (i < n && j < klen) {
                    prob[row * klen + j] = ps;
                    pdrop[row * klen + j] = pds;
                }
                pd[nt][e] = tt_float(pds);
            }
        if (!seen) continue;
        unsigned a[4];
        a[0] = tt_pack_bf16(pd[0][0], pd[0][1]);
        a[1] = tt_pack_bf16(pd[0][2], pd[0][3]);
        a[2] = tt_pack_bf16(pd[1][0], pd[1][1]);
        a[3] = tt_pack_bf16(pd[1][2], pd[1][3]);
        // V [keys][dims] is the B operand's k x n, row-major: matrices (keys +0 / +8) x (dims +0 / +8)
        const tt_bf16 *vrow = sv + (size_t)(kc + ((lane >> 3) & 1) * 8 + (lane & 7)) * TT_SP + (lane >> 4) * 8;
#pragma unroll
        for (int nt = 0; nt < TT_KS * 2; nt += 2) {
            unsigned vb[4];
            tt_ldsm_t(vb, vrow + nt * 8);
            tt_mma(o[nt], a, vb[0], vb[1]);
            tt_mma(o[nt + 1], a, vb[2], vb[3]);
        }
    }
#pragma unroll
    for (int nt = 0; nt < TT_KS * 2; nt++)
#pragma unroll
        for (int e = 0; e < 4; e++) {
            const int i = iw + tt_acc_row(lane, e), d = nt * 8 + tt_acc_col(lane, e);
            if (i < n && d < TT_DP) oh[((size_t)item * n + i) * TT_DP + d] = tt_store_as<TT_T>(o[nt][e]);
        }
}
#endif
