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
          float p, unsigned long long seed, const unsigned long long *__restrict__ step, unsigned site, unsigned long long drop0)
{
    tt_pdl_begin();
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
    const unsigned keep_at = tt_keep_threshold(p); // once, not a draw
    const uint64_t stream = tt_dropout_stream(*step, site);
    const long long ref = (long long)drop0 + tt_txl_ref_row(row, n, batch, heads) * klen;
#pragma unroll
    for (int q = 0; q < TT_PER_LANE; q++) {
        const int j = lane + 32 * q;
        if (j >= klen) continue;
        const float pr = s[q] * inv;
        prob[row * klen + j] = tt_store_as<TT_T>(pr);
        const bool keep = tt_dropout_kept(seed, stream, (uint64_t)(ref + j), keep_at);
        pdrop[row * klen + j] = tt_store_as<TT_T>(keep ? pr * keep_scale : 0.f);
    }
}
#endif

#ifdef TT_OP_TXL_SOFTMAX_BWD
// dpdrop: the gradient of pdrop (fp32, from cuBLAS); prob as the forward wrote it.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ dac, TT_T *__restrict__ dbd, const float *__restrict__ dpdrop,
          const TT_T *__restrict__ prob, int rows, int n, int m, int batch, int heads, float scale,
          float p, unsigned long long seed, const unsigned long long *__restrict__ step, unsigned site, unsigned long long drop0)
{
    tt_pdl_begin();
    const int lane = threadIdx.x % 32;
    const long long row = (long long)blockIdx.x * (TT_THREADS / 32) + threadIdx.x / 32;
    if (row >= rows) return;
    const int i = (int)(row % n), klen = m + n, end = m + i + 1, shift = n - 1 - i;
    const float keep_scale = 1.f / (1.f - p);
    const unsigned keep_at = tt_keep_threshold(p); // once, not a draw
    const uint64_t stream = tt_dropout_stream(*step, site);
    const long long ref = (long long)drop0 + tt_txl_ref_row(row, n, batch, heads) * klen;
    float pr[TT_PER_LANE], dp[TT_PER_LANE], dot = 0.f;
#pragma unroll
    for (int q = 0; q < TT_PER_LANE; q++) {
        const int j = lane + 32 * q;
        pr[q] = dp[q] = 0.f;
        if (j < end) {
            pr[q] = tt_float(prob[row * klen + j]);
            const bool keep = tt_dropout_kept(seed, stream, (uint64_t)(ref + j), keep_at);
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
