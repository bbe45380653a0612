// Transformer-XL's attention on the GPU (MODEL.md section 3), the data movement around its
// products: position embeddings with dropout, the heads split out of the projections (with the
// biases u and v added to the queries) and merged back, and their gradients. The heads live
// head-major and padded: X[c][row][e] for head c, row (b n + i, or b klen + j for keys), e <
// TT_DP, zero from TT_DH on (d_head padded to a multiple of 8, so that every product's rows are
// 16-byte aligned). Keys of sequence b: its m memory rows, then its n current rows.
// Constants: TT_H (heads), TT_DH (d_head), TT_DP (padded), TT_THREADS. Runtime: batch, n, m,
// and the layout of the rows of projections: qkv's rows ldq elements apart with q, k, v starting
// 0, hs and 2 hs into a row, kvm's (the memory's k, v) ldkv apart with k and v at 0 and hs, so
// that the rows can be padded to whole 16-byte groups (Transformer-XL's H d_head 410 in blocks
// of 416); what lies between is neither read nor written.
// Tunable (ttgen --tune; the plan's heuristic otherwise): the heads split's threads per block.
// ttgen: tunable txl_heads_qkv THREADS 128 256 512 1024
#define TT_HD (TT_H * TT_DH)

#ifdef TT_OP_TXL_PE
// pe [rows, d] (rows ld apart) = dropout(src [rows, d]): the sinusoids of distances rows-1 .. 0
// (the last rows of the host's table), element e = row d + col of the stream
// tt_dropout_stream(step, site), as cpu_dropout_fwd draws it.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ pe, const float *__restrict__ src, int rows, int d, int ld, float p,
          unsigned long long seed, const unsigned long long *__restrict__ step, unsigned site, unsigned long long drop0)
{
    tt_pdl_begin();
    const uint64_t stream = tt_dropout_stream(*step, site);
    const float scale = 1.f / (1.f - p);
    const unsigned keep_at = tt_keep_threshold(p); // once, not a draw
    const long long count = (long long)rows * d;
    for (long long e = (long long)blockIdx.x * TT_THREADS + threadIdx.x; e < count;
         e += (long long)gridDim.x * TT_THREADS) {
        const float x = tt_dropout_kept(seed, stream, drop0 + (uint64_t)e, keep_at) ? src[e] * scale : 0.f;
        pe[e / d * ld + e % d] = tt_store_as<TT_T>(x);
    }
}
#endif

#ifdef TT_OP_TXL_HEADS_QKV
// From qkv [batch*n rows] (x Wqkv^T of the current rows) and kvm [batch*m rows] (mem Wkv^T):
// qu = q + u and qv = q + v [H][batch*n][DP], k and v [H][batch*klen][DP].
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ qu, TT_T *__restrict__ qv, TT_T *__restrict__ k, TT_T *__restrict__ v,
          const TT_T *__restrict__ qkv, const TT_T *__restrict__ kvm, const float *__restrict__ u,
          const float *__restrict__ vb, int batch, int n, int m, int ldq, int ldkv, int hs)
{
    tt_pdl_begin();
    const int klen = m + n;
    const long long total = (long long)TT_H * batch * klen * TT_DP;
    for (long long x = (long long)blockIdx.x * TT_THREADS + threadIdx.x; x < total;
         x += (long long)gridDim.x * TT_THREADS) {
        // 32-bit quotients by the runtime sizes (the launcher checks that the rows fit): a 64-bit
        // division is a long software routine
        const int e = (int)(x % TT_DP);
        const int rowc = (int)(x / TT_DP); // (c batch + b) klen + j
        const int j = rowc % klen, cb = rowc / klen;
        const int b = cb % batch, c = cb / batch, col = c * TT_DH + e;
        float kx = 0.f, vx = 0.f;
        if (e < TT_DH) {
            if (j < m) {
                const TT_T *src = kvm + ((size_t)b * m + j) * ldkv;
                kx = tt_float(src[col]), vx = tt_float(src[hs + col]);
            } else {
                const TT_T *src = qkv + ((size_t)b * n + j - m) * ldq;
                kx = tt_float(src[hs + col]), vx = tt_float(src[2 * hs + col]);
            }
        }
        k[x] = tt_store_as<TT_T>(kx);
        v[x] = tt_store_as<TT_T>(vx);
        if (j >= m) {
            const size_t at = ((size_t)cb * n + j - m) * TT_DP + e;
            float q = 0.f, qa = 0.f, qb = 0.f;
            if (e < TT_DH) {
                q = tt_float(qkv[((size_t)b * n + j - m) * ldq + col]);
                qa = q + u[col], qb = q + vb[col];
            }
            qu[at] = tt_store_as<TT_T>(qa);
            qv[at] = tt_store_as<TT_T>(qb);
        }
    }
}
#endif

#ifdef TT_OP_TXL_HEADS
// dst [H][rows][DP] = the heads of src [rows, ld] from column off (head c at off + c DH).
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ dst, const TT_T *__restrict__ src, int rows, int ld, int off)
{
    tt_pdl_begin();
    const long long total = (long long)TT_H * rows * TT_DP;
    for (long long x = (long long)blockIdx.x * TT_THREADS + threadIdx.x; x < total;
         x += (long long)gridDim.x * TT_THREADS) {
        const int e = (int)(x % TT_DP);
        const int rowc = (int)(x / TT_DP); // 32-bit: see txl_heads_qkv
        const int r = rowc % rows, c = rowc / rows;
        dst[x] = e < TT_DH ? src[(size_t)r * ld + off + c * TT_DH + e] : tt_store_as<TT_T>(0.f);
    }
}
#endif

#ifdef TT_OP_TXL_UNHEADS
// dst [rows, ld] from column off = src [H][rows][DP] merged (head c at off + c DH).
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ dst, const TT_T *__restrict__ src, int rows, int ld, int off)
{
    tt_pdl_begin();
    const long long total = (long long)rows * TT_HD;
    for (long long x = (long long)blockIdx.x * TT_THREADS + threadIdx.x; x < total;
         x += (long long)gridDim.x * TT_THREADS) {
        const int col = (int)(x % TT_HD), r = (int)(x / TT_HD), c = col / TT_DH, e = col % TT_DH;
        dst[(size_t)r * ld + off + col] = src[((size_t)c * rows + r) * TT_DP + e];
    }
}
#endif

#ifdef TT_OP_TXL_HEADS_BWD
// The gradients of the split: dqkv [batch*n rows] (dq = dqu + dqv, and the current rows of dk,
// dv) and dkvm [batch*m rows] (the memory rows of dk, dv; NULL when m is 0), laid out as qkv and
// kvm.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ dqkv, TT_T *__restrict__ dkvm, const TT_T *__restrict__ dqu,
          const TT_T *__restrict__ dqv, const TT_T *__restrict__ dk, const TT_T *__restrict__ dv,
          int batch, int n, int m, int ldq, int ldkv, int hs)
{
    tt_pdl_begin();
    const int klen = m + n;
    const long long cur = (long long)batch * n * 3 * TT_HD, total = cur + (long long)batch * m * 2 * TT_HD;
    for (long long x = (long long)blockIdx.x * TT_THREADS + threadIdx.x; x < total;
         x += (long long)gridDim.x * TT_THREADS) {
        if (x < cur) {
            const int col = (int)(x % (3 * TT_HD)), part = col / TT_HD, c = col % TT_HD / TT_DH;
            const int e = col % TT_DH;
            const int r = (int)(x / (3 * TT_HD)); // b n + i (32-bit: see txl_heads_qkv)
            const int b = r / n, i = r % n;
            const size_t q = (((size_t)c * batch + b) * n + i) * TT_DP + e;
            const size_t kv = (((size_t)c * batch + b) * klen + m + i) * TT_DP + e;
            float g;
            if (part == 0) g = tt_float(dqu[q]) + tt_float(dqv[q]);
            else g = tt_float(part == 1 ? dk[kv] : dv[kv]);
            dqkv[(size_t)r * ldq + part * hs + col % TT_HD] = tt_store_as<TT_T>(g);
        } else {
            const long long y = x - cur;
            const int col = (int)(y % (2 * TT_HD)), part = col / TT_HD, c = col % TT_HD / TT_DH;
            const int e = col % TT_DH;
            const int r = (int)(y / (2 * TT_HD)); // b m + j
            const int b = r / m, j = r % m;
            const size_t kv = (((size_t)c * batch + b) * klen + j) * TT_DP + e;
            dkvm[(size_t)r * ldkv + part * hs + col % TT_HD] = part == 0 ? dk[kv] : dv[kv];
        }
    }
}
#endif

#ifdef TT_OP_TXL_UV_BWD
// du [HD] += the sum over the rows of dqu, dv [HD] += that of dqv (the biases are shared by
// all layers): a warp per output, its lanes over the rows, a fixed butterfly: deterministic.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(float *__restrict__ du, float *__restrict__ dv, const TT_T *__restrict__ dqu,
          const TT_T *__restrict__ dqv, int rows)
{
    tt_pdl_begin();
    const int lane = threadIdx.x % 32, w = blockIdx.x * (TT_THREADS / 32) + threadIdx.x / 32;
    if (w >= 2 * TT_HD) return;
    const int col = w % TT_HD, c = col / TT_DH, e = col % TT_DH;
    const TT_T *src = (w < TT_HD ? dqu : dqv) + (size_t)c * rows * TT_DP + e;
    float s = 0.f;
    for (int r = lane; r < rows; r += 32) s += tt_float(src[(size_t)r * TT_DP]);
    s = tt_group_sum<32>(s);
    if (lane == 0) (w < TT_HD ? du : dv)[col] += s;
}
#endif

#ifdef TT_OP_TXL_DR_SUM
// dr [klen, ld] (head c's DH values at c DH of each row) = the sum over s of part [H][splits]
// [klen][DP] (fp32), in order: dR = dBD^T (q + v) as splits products over parts of the rows,
// added here in a fixed order (deterministic), straight into the rows r_net's gradient reads.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ dr, int ld, const float *__restrict__ part, int klen, int splits)
{
    tt_pdl_begin();
    const int total = klen * TT_HD;
    for (int x = blockIdx.x * TT_THREADS + threadIdx.x; x < total; x += gridDim.x * TT_THREADS) {
        const int t = x / TT_HD, col = x % TT_HD, c = col / TT_DH, e = col % TT_DH;
        const float *src = part + ((size_t)c * splits * klen + t) * TT_DP + e;
        float acc = 0.f;
        for (int s = 0; s < splits; s++) acc += src[(size_t)s * klen * TT_DP];
        dr[(size_t)t * ld + col] = tt_store_as<TT_T>(acc);
    }
}
#endif
