// The position-wise FFN's activation between its two GEMMs (MODEL.md section 2), with the bias of
// the first GEMM and the FFN's inner dropout fused in:
//   forward   hd = dropout(relu(z + b1))             (in place over z: relu's output is not kept)
//   backward  dz = dhd / (1 - p) where hd > 0, else 0; db1 = sum over rows of dz as partials
// The backward needs neither h nor the dropout mask: a kept element is h / (1 - p), positive
// exactly where the stored h is, and a dropped one has a zero gradient whatever h is; so this is
// cpu_dropout_bwd then cpu_relu_bwd bit for bit, without drawing the mask again (but for an h
// below 2^-133, which bf16 stores as 0 and h / (1 - p) may not be).
// The activations are stored TT_LD elements from one row to the next (TT_F rounded up to whole
// 16-byte groups, so that cuBLAS keeps its tensor-core kernels for the products on either side).
// The kernels walk the rows in vectors of TT_VEC elements over the whole pitch (16 bytes where the
// pitch allows, whatever TT_F's factors: d_inner 2100 at bf16 is 525 groups of 4 but 263 of 8),
// so a vector may end in padding: its TT_LD - TT_F padding elements are stored back as they
// were read (the products keep them zero), and neither draw nor sum counts them. The
// dropout mask's element index is row * TT_F + col whatever the pitch, as cpu_dropout_fwd
// numbers them.
// A thread has TT_UNROLL vectors (forward) or rows (backward) in flight at once: the loads are
// issued together before any is used, as the kernels are bound by memory latency otherwise (one
// 8-byte load a thread moved a quarter of the card's bandwidth).
// Constants: TT_F features, TT_LD the row pitch, TT_VEC elements a vector (divides TT_LD),
// TT_UNROLL, TT_THREADS per block;
// backward: the block is TT_TX threads across a row's vectors by TT_TY rows, and blockIdx.y of
// TT_PARTS row groups, each of which writes its own partial sums of db1 (the bias_colsum kernel
// adds the TT_PARTS rows of partials in a fixed order: deterministic, no atomics); a thread adds
// its rows in increasing order.
// Tunable (ttgen --tune; the plan's heuristic otherwise): the forward's threads per block and
// vectors in flight, the backward's row groups (more partials to add, more blocks in flight) and
// rows in flight.
// ttgen: tunable ffn_act_fwd THREADS 128 256 512 1024
// ttgen: tunable ffn_act_fwd UNROLL 1 2 4
// ttgen: tunable ffn_act_bwd PARTS 32 64 128 256 512
// ttgen: tunable ffn_act_bwd UNROLL 1 2 4

#define TT_NV (TT_LD / TT_VEC) // vectors per row, the padding's included
static_assert(TT_LD % TT_VEC == 0 && TT_LD >= TT_F, "whole vectors per row, each row's start aligned to one");

#ifdef TT_OP_FFN_ACT_FWD
// hd may be z itself (in place): each thread reads its z before it writes the same hd. Vector vi
// starts at element vi * TT_VEC (rows are TT_NV whole vectors); block b's thread t has vectors
// b * TT_THREADS * TT_UNROLL + u * TT_THREADS + t.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *hd, const TT_T *z, const float *__restrict__ b1, int rows, float p,
          unsigned long long seed, const unsigned long long *__restrict__ step, unsigned site, unsigned long long drop0)
{
    tt_pdl_begin();
    const long long total = (long long)rows * TT_NV;
    const long long first = (long long)blockIdx.x * (TT_THREADS * TT_UNROLL) + threadIdx.x;
    const float inv_keep = 1.f / (1.f - p);
    const unsigned keep_at = tt_keep_threshold(p); // once, not a draw
    const uint64_t stream = tt_dropout_stream(*step, site);
    float a[TT_UNROLL][TT_VEC];
#pragma unroll
    for (int u = 0; u < TT_UNROLL; u++) {
        const long long vi = first + (long long)u * TT_THREADS;
        if (vi < total) tt_load<TT_VEC>(a[u], z + (size_t)vi * TT_VEC);
    }
#pragma unroll
    for (int u = 0; u < TT_UNROLL; u++) {
        const long long vi = first + (long long)u * TT_THREADS;
        if (vi >= total) break;
        const long long row = vi / TT_NV;
        const int col = (int)(vi % TT_NV) * TT_VEC;
        const uint64_t elem = drop0 + (uint64_t)row * TT_F + col; // the mask's numbering
#pragma unroll
        for (int j = 0; j < TT_VEC; j++) {
            if (TT_LD != TT_F && col + j >= TT_F) break; // padding: stored back as read
            const float h = fmaxf(a[u][j] + b1[col + j], 0.f);
            a[u][j] = tt_dropout_kept(seed, stream, elem + j, keep_at) ? h * inv_keep : 0.f;
        }
        tt_store<TT_VEC>(hd + (size_t)vi * TT_VEC, a[u]);
    }
}
#endif

#ifdef TT_OP_FFN_ACT_BWD
// dz may be dhd itself (in place). part: [TT_PARTS, TT_F], every element written.
extern "C" __global__ void __launch_bounds__(TT_TX * TT_TY)
TT_KERNEL(TT_T *dz, float *__restrict__ part, const TT_T *dhd, const TT_T *__restrict__ hd,
          int rows, float p)
{
    tt_pdl_begin();
    __shared__ float colpart[TT_TY][TT_TX * TT_VEC];
    static_assert(sizeof colpart == TT_SMEM, "the shared memory the plan counted is what the block declares");
    constexpr int stride = TT_PARTS * TT_TY; // between a thread's rows
    const int tx = threadIdx.x % TT_TX, ty = threadIdx.x / TT_TX;
    const int col = (blockIdx.x * TT_TX + tx) * TT_VEC;
    const float inv_keep = 1.f / (1.f - p);
    float db[TT_VEC];
#pragma unroll
    for (int j = 0; j < TT_VEC; j++) db[j] = 0.f;
    if (col < TT_LD) {
        for (int row0 = blockIdx.y * TT_TY + ty; row0 < rows; row0 += TT_UNROLL * stride) {
            float g[TT_UNROLL][TT_VEC], a[TT_UNROLL][TT_VEC];
#pragma unroll
            for (int u = 0; u < TT_UNROLL; u++) {
                const int row = row0 + u * stride;
                if (row >= rows) break;
                const size_t base = (size_t)row * TT_LD + col;
                tt_load<TT_VEC>(g[u], dhd + base);
                tt_load<TT_VEC>(a[u], hd + base);
            }
#pragma unroll
            for (int u = 0; u < TT_UNROLL; u++) {
                const int row = row0 + u * stride;
                if (row >= rows) break;
#pragma unroll
                for (int j = 0; j < TT_VEC; j++) {
                    if (TT_LD != TT_F && col + j >= TT_F) break; // padding: stored back as read
                    g[u][j] = a[u][j] > 0.f ? g[u][j] * inv_keep : 0.f; // kept, and h > 0
                    db[j] += g[u][j];
                }
                tt_store<TT_VEC>(dz + (size_t)row * TT_LD + col, g[u]);
            }
        }
    }
    // The block's TT_TY row threads of a column, added in a fixed order.
#pragma unroll
    for (int j = 0; j < TT_VEC; j++) colpart[ty][tx * TT_VEC + j] = db[j];
    __syncthreads();
    for (int c = threadIdx.x; c < TT_TX * TT_VEC; c += TT_TX * TT_TY) {
        const int f = blockIdx.x * TT_TX * TT_VEC + c;
        if (f >= TT_F) continue;
        float s = 0.f;
#pragma unroll
        for (int y = 0; y < TT_TY; y++) s += colpart[y][c];
        part[(size_t)blockIdx.y * TT_F + f] = s;
    }
}
#endif
