// The position-wise FFN's activation between its two GEMMs (MODEL.md section 2), with the bias of
// the first GEMM and the FFN's inner dropout fused in:
//   forward   hd = dropout(relu(z + b1))             (in place over z: relu's output is not kept)
//   backward  dz = dhd / (1 - p) where hd > 0, else 0; db1 = sum over rows of dz as partials
// The backward needs neither h nor the dropout mask: a kept element is h / (1 - p), positive
// exactly where the stored h is, and a dropped one has a zero gradient whatever h is; so this is
// cpu_dropout_bwd then cpu_relu_bwd bit for bit, without drawing the mask again (but for an h
// below 2^-133, which bf16 stores as 0 and h / (1 - p) may not be).
// The activations are stored TT_LD elements from one row to the next (TT_F rounded up to whole
// 16-byte groups, so that cuBLAS keeps its tensor-core kernels for the products on either side);
// the TT_LD - TT_F columns of padding are never read or written. The dropout mask's element index
// is row * TT_F + col whatever the pitch, as cpu_dropout_fwd numbers them.
// Constants: TT_F features, TT_LD the row pitch, TT_VEC features per thread (divides TT_F and
// TT_LD), TT_THREADS per block;
// backward: the block is TT_TX threads across columns by TT_TY rows, and blockIdx.y of TT_PARTS
// row groups, each of which writes its own partial sums of db1 (the bias_colsum kernel adds the
// TT_PARTS rows of partials in a fixed order: deterministic, no atomics).
// Tunable (ttgen --tune; the plan's heuristic otherwise): the forward's threads per block, the
// backward's row groups (more partials to add, more blocks in flight).
// ttgen: tunable ffn_act_fwd THREADS 128 256 512 1024
// ttgen: tunable ffn_act_bwd PARTS 32 64 128 256 512

#define TT_NV (TT_F / TT_VEC) // vectors per row
static_assert(TT_F % TT_VEC == 0 && TT_LD % TT_VEC == 0 && TT_LD >= TT_F,
              "whole vectors per row, each row's start aligned to one");

#ifdef TT_OP_FFN_ACT_FWD
// hd may be z itself (in place): each thread reads its z before it writes the same hd.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *hd, const TT_T *z, const float *__restrict__ b1, int rows, float p,
          unsigned long long seed, const unsigned long long *__restrict__ step, unsigned site)
{
    const long long vi = (long long)blockIdx.x * TT_THREADS + threadIdx.x;
    if (vi >= (long long)rows * TT_NV) return;
    const long long row = vi / TT_NV;
    const int col = (int)(vi % TT_NV) * TT_VEC;
    const size_t base = (size_t)row * TT_LD + col; // in storage
    const uint64_t elem = (uint64_t)vi * TT_VEC;    // row * TT_F + col: the mask's numbering
    const float inv_keep = 1.f / (1.f - p);
    const uint64_t stream = tt_dropout_stream(*step, site);
    float a[TT_VEC];
    tt_load<TT_VEC>(a, z + base);
#pragma unroll
    for (int j = 0; j < TT_VEC; j++) {
        const float h = fmaxf(a[j] + b1[col + j], 0.f);
        a[j] = tt_dropout_keep(seed, stream, elem + j, p) ? h * inv_keep : 0.f;
    }
    tt_store<TT_VEC>(hd + base, a);
}
#endif

#ifdef TT_OP_FFN_ACT_BWD
// dz may be dhd itself (in place). part: [TT_PARTS, TT_F], every element written.
extern "C" __global__ void __launch_bounds__(TT_TX * TT_TY)
TT_KERNEL(TT_T *dz, float *__restrict__ part, const TT_T *dhd, const TT_T *__restrict__ hd,
          int rows, float p)
{
    __shared__ float colpart[TT_TY][TT_TX * TT_VEC];
    static_assert(sizeof colpart == TT_SMEM, "the shared memory the plan counted is what the block declares");
    const int tx = threadIdx.x % TT_TX, ty = threadIdx.x / TT_TX;
    const int col = (blockIdx.x * TT_TX + tx) * TT_VEC;
    const float inv_keep = 1.f / (1.f - p);
    float db[TT_VEC];
#pragma unroll
    for (int j = 0; j < TT_VEC; j++) db[j] = 0.f;
    if (col < TT_F) {
        for (int row = blockIdx.y * TT_TY + ty; row < rows; row += TT_PARTS * TT_TY) {
            const size_t base = (size_t)row * TT_LD + col;
            float g[TT_VEC], a[TT_VEC];
            tt_load<TT_VEC>(g, dhd + base);
            tt_load<TT_VEC>(a, hd + base);
#pragma unroll
            for (int j = 0; j < TT_VEC; j++) {
                g[j] = a[j] > 0.f ? g[j] * inv_keep : 0.f; // kept, and h > 0
                db[j] += g[j];
            }
            tt_store<TT_VEC>(dz + base, g);
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
