// The word embedding with its dropout fused in (MODEL.md section 2), forward and backward:
//   x0[row] = dropout(E[tokens[row]] * sqrt(D))       element index row * D + col, as the CPU
// from one table E [vocab, TT_D] (fp32 master weights; div_val 1), or, with div_val > 1 (the
// adaptive embedding), from a table E_c [V_c, TT_DE] and a projection P_c [D, DE] per cluster c:
//   x0[row] = dropout((P_c E_c[tokens[row] - lo_c]) * sqrt(D))
// Constants: TT_D features (d_model), or TT_DE (a cluster's width) for the kernels of one
// cluster's table; TT_VEC features per thread (divides the width), TT_THREADS per block;
// rows of x0 (and dx0) ld elements apart (ld a multiple of TT_VEC: Transformer-XL's padded
// rows), while a dropout draw is numbered row * D + col whatever the pitch;
// embedding_sort: TT_P (a power of two >= the rows it sorts), TT_CHUNK (keys sorted in shared
// memory at a time, a power of two <= TT_P), TT_THREADS; embedding_bwd, adaptive_emb_bwd and
// embedding_bwd_sum: TT_SPAN (sorted positions a block of the first two adds up), and the sum's
// TT_W (the table's width).
// Tunable (ttgen --tune; the plan's heuristic otherwise): the forward's threads per block.
// ttgen: tunable embedding_fwd THREADS 64 128 256 512 1024
//
// The backward is a scatter-add: dE[t] += sum over the rows r with tokens[r] = t of
// dropout_bwd(dx0[r]) * sqrt(D). It is deterministic without float atomics: embedding_sort puts the
// keys (token, row) in ascending order (one block, a bitonic network: its result does not depend on
// scheduling); embedding_bwd adds the rows of each token within a span of TT_SPAN sorted positions
// in increasing row order, and embedding_bwd_sum adds a token's span sums to dE[t] in the same
// order: the CPU reference's order of the rows, with one rounding more at each span boundary.
//
// The adaptive embedding runs on the rows of one cluster at a time, gathered by the host's index
// list idx [count] (the rows whose token the cluster holds, ascending, then -1 up to a multiple of
// 64), so that cuBLAS projects dense rows:
//   adaptive_emb_gather   e[i] = E_c[tokens[idx[i]] - lo]                 (TT_DE wide)
//   (cuBLAS)              y = e P_c^T                                      (fp32)
//   adaptive_emb_scatter  x0[idx[i]] = dropout(y[i] * sqrt(D))
// and back:
//   adaptive_emb_grad     dy[i] = dropout_bwd(dx0[idx[i]]) * sqrt(D)
//   (cuBLAS)              dP_c += dy^T e,  de = dy P_c
//   adaptive_emb_bwd      dE_c[t - lo] += de[pos[r]] for the rows r of token t, in row order
//   (and embedding_bwd_sum)
// where pos[r] is row r's place in its cluster's list; the keys are embedding_sort's of every row.

#ifdef TT_D
// The embedding's output: N values from element `base` of x0 scaled by sqrt(D), through dropout.
template <int N>
__device__ __forceinline__ void tt_embed_out(float (&v)[N], size_t base, float p,
                                             unsigned long long seed, uint64_t stream)
{
    const float scale = (float)sqrt((double)TT_D); // rounded as the CPU rounds it
    const float inv_keep = 1.f / (1.f - p);
    const unsigned keep_at = tt_keep_threshold(p);
#pragma unroll
    for (int j = 0; j < N; j++) {
        const float e = v[j] * scale;
        v[j] = tt_dropout_kept(seed, stream, base + j, keep_at) ? e * inv_keep : 0.f;
    }
}

// A dropout site's test and scale, worked out once (not a draw) from its p.
struct tt_embed_drop {
    unsigned keep_at; // tt_keep_threshold(p)
    float inv_keep;   // 1 / (1 - p)
};
__device__ __forceinline__ tt_embed_drop tt_embed_drop_of(float p) { return {tt_keep_threshold(p), 1.f / (1.f - p)}; }

// Its backward for one element: cpu_dropout_bwd, then embed_bwd's * scale: two roundings, no FMA.
__device__ __forceinline__ float tt_embed_grad(float d, size_t index, const tt_embed_drop &dr,
                                               unsigned long long seed, uint64_t stream)
{
    const float scale = (float)sqrt((double)TT_D);
    const float g = tt_dropout_kept(seed, stream, index, dr.keep_at) ? d * dr.inv_keep : 0.f;
    return __fmul_rn(g, scale);
}
#endif

#ifdef TT_OP_EMBEDDING_FWD
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ x0, const float *__restrict__ emb, const int *__restrict__ tokens,
          int rows, int ld, int vocab, float p, unsigned long long seed,
          const unsigned long long *__restrict__ step, unsigned site, unsigned long long drop0)
{
    tt_pdl_begin();
    int row, col;
    if (!tt_row_slot<TT_D, TT_VEC>(rows, row, col)) return;
    const int t = tokens[row];
    const bool known = t >= 0 && t < vocab;
    float v[TT_VEC];
    tt_load<TT_VEC>(v, emb + (size_t)(known ? t : 0) * TT_D + col);
    tt_embed_out(v, drop0 + (size_t)row * TT_D + col, p, seed, tt_dropout_stream(*step, site));
    if (!known)
#pragma unroll
        for (int j = 0; j < TT_VEC; j++) v[j] = __uint_as_float(0x7fffffffu); // a token outside the vocabulary shows
    tt_store<TT_VEC>(x0 + (size_t)row * ld + col, v);
}
#endif

#ifdef TT_OP_ADAPTIVE_EMB_GATHER
// e [count, DE] (storage type) = the table rows of the listed rows' tokens; a zero row for
// padding, a row of NaN for a token outside the cluster (outside the vocabulary: the host puts it
// in the cluster cluster_of names).
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ e, const float *__restrict__ emb, const int *__restrict__ tokens,
          const int *__restrict__ idx, int count, long long lo, long long vc)
{
    tt_pdl_begin();
    int i, col;
    if (!tt_row_slot<TT_DE, TT_VEC>(count, i, col)) return;
    const int r = idx[i];
    float v[TT_VEC] = {}; // padding: a zero row
    if (r >= 0) {
        const long long t = (long long)tokens[r] - lo;
        if (t >= 0 && t < vc)
            tt_load<TT_VEC>(v, emb + (size_t)t * TT_DE + col);
        else
#pragma unroll
            for (int j = 0; j < TT_VEC; j++) v[j] = __uint_as_float(0x7fffffffu);
    }
    tt_store<TT_VEC>(e + (size_t)i * TT_DE + col, v);
}
#endif

#ifdef TT_OP_ADAPTIVE_EMB_SCATTER
// x0[idx[i]] = dropout(y[i] * sqrt(D)) for the listed rows (y fp32: the cluster's projection).
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ x0, const float *__restrict__ y, const int *__restrict__ idx,
          int count, int ld, float p, unsigned long long seed,
          const unsigned long long *__restrict__ step, unsigned site, unsigned long long drop0)
{
    tt_pdl_begin();
    int i, col;
    if (!tt_row_slot<TT_D, TT_VEC>(count, i, col)) return;
    const int r = idx[i];
    if (r < 0) return;
    float v[TT_VEC];
    tt_load<TT_VEC>(v, y + (size_t)i * TT_D + col);
    tt_embed_out(v, drop0 + (size_t)r * TT_D + col, p, seed, tt_dropout_stream(*step, site));
    tt_store<TT_VEC>(x0 + (size_t)r * ld + col, v);
}
#endif

#ifdef TT_OP_ADAPTIVE_EMB_GRAD
// dy [count, D] (storage type) = dropout_bwd(dx0[idx[i]]) * sqrt(D); a zero row for padding.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ dy, const TT_T *__restrict__ dx0, const int *__restrict__ idx,
          int count, int ld, float p, unsigned long long seed,
          const unsigned long long *__restrict__ step, unsigned site, unsigned long long drop0)
{
    tt_pdl_begin();
    int i, col;
    if (!tt_row_slot<TT_D, TT_VEC>(count, i, col)) return;
    const int r = idx[i];
    float v[TT_VEC] = {}; // padding: a zero row
    if (r >= 0) {
        const size_t base = drop0 + (size_t)r * TT_D + col;
        const uint64_t stream = tt_dropout_stream(*step, site);
        const tt_embed_drop dr = tt_embed_drop_of(p);
        tt_load<TT_VEC>(v, dx0 + (size_t)r * ld + col);
#pragma unroll
        for (int j = 0; j < TT_VEC; j++) v[j] = tt_embed_grad(v[j], base + j, dr, seed, stream);
    }
    tt_store<TT_VEC>(dy + (size_t)i * TT_D + col, v);
}
#endif

#ifdef TT_OP_EMBEDDING_SORT
// Compare-exchange of every pair (i, i + j), i with bit j clear, of the n values at a; `first` is
// the index of a[0] in the whole sequence, which sets each pair's direction within stage k.
__device__ __forceinline__ void tt_bitonic_pass(unsigned long long *a, int first, int n, int k,
                                                int j)
{
    for (int t = threadIdx.x; t < n / 2; t += TT_THREADS) {
        const int i = 2 * t - (t & (j - 1)); // t with a 0 inserted at bit log2(j)
        const unsigned long long lo = a[i], hi = a[i + j];
        const bool ascending = ((first + i) & k) == 0;
        if ((lo > hi) == ascending) {
            a[i] = hi;
            a[i + j] = lo;
        }
    }
}

// keys[0..TT_P) = the pairs (tokens[r] << 32 | r) in ascending order, then all-ones padding.
// One block: passes of stride >= TT_CHUNK go through keys in global memory (a barrier makes a
// block's global writes visible to the block), the rest through shared memory a chunk at a time
// (TT_CHUNK keys of dynamic shared memory: all of them up to 8192, 64 KiB).
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(unsigned long long *keys, const int *__restrict__ tokens, int rows)
{
    tt_pdl_begin();
    extern __shared__ unsigned long long chunk[];
    static_assert(TT_CHUNK * sizeof(unsigned long long) == TT_SMEM, "the shared memory the plan counted is what the block declares");
    // Stages k <= TT_CHUNK stay within a chunk: sort each one, and fill keys on the way.
    for (int first = 0; first < TT_P; first += TT_CHUNK) {
        for (int i = threadIdx.x; i < TT_CHUNK; i += TT_THREADS) {
            const int r = first + i;
            chunk[i] = r < rows ? (unsigned long long)(unsigned)tokens[r] << 32 | (unsigned)r
                                : ~0ull;
        }
        __syncthreads();
        for (int k = 2; k <= TT_CHUNK; k *= 2)
            for (int j = k / 2; j > 0; j /= 2) {
                tt_bitonic_pass(chunk, first, TT_CHUNK, k, j);
                __syncthreads();
            }
        for (int i = threadIdx.x; i < TT_CHUNK; i += TT_THREADS) keys[first + i] = chunk[i];
        __syncthreads();
    }
    // Stages k > TT_CHUNK: strides >= TT_CHUNK in global memory, the smaller ones per chunk.
    for (int k = 2 * TT_CHUNK; k <= TT_P; k *= 2) {
        for (int j = k / 2; j >= TT_CHUNK; j /= 2) {
            tt_bitonic_pass(keys, 0, TT_P, k, j);
            __syncthreads();
        }
        for (int first = 0; first < TT_P; first += TT_CHUNK) {
            for (int i = threadIdx.x; i < TT_CHUNK; i += TT_THREADS) chunk[i] = keys[first + i];
            __syncthreads();
            for (int j = TT_CHUNK / 2; j > 0; j /= 2) {
                tt_bitonic_pass(chunk, first, TT_CHUNK, k, j);
                __syncthreads();
            }
            for (int i = threadIdx.x; i < TT_CHUNK; i += TT_THREADS) keys[first + i] = chunk[i];
            __syncthreads();
        }
    }
}
#endif

#if defined(TT_OP_EMBEDDING_BWD) || defined(TT_OP_ADAPTIVE_EMB_BWD)
// The sorted keys in spans of TT_SPAN positions, a block each: the block cuts its span into
// segments of equal tokens and writes each segment's sum, its rows added in order, to
// part[its first position] (W floats; a token that `slot` maps to no row of the table, slot(t) <
// 0, is skipped). A thread has a VEC-wide column of all TT_SPAN rows in flight at once (load(row,
// col, v)) before it adds them (term(row, element, value) is what an element adds). A frequent
// word's run of hundreds of rows so spreads over many blocks, where one block walking it had
// taken most of the backward's time (120 us of wt103's step on an H200 for a Zipf corpus).
template <int W, int VEC, typename Slot, typename Load, typename Term>
__device__ __forceinline__ void tt_sorted_part(float *__restrict__ part,
                                               const unsigned long long *__restrict__ keys,
                                               int rows, Slot slot, Load load, Term term)
{
    const int first = blockIdx.x * TT_SPAN, n = min(TT_SPAN, rows - first);
    for (int col = threadIdx.x * VEC; col < W; col += TT_THREADS * VEC) {
        int row[TT_SPAN];
        unsigned tok[TT_SPAN];
        float d[TT_SPAN][VEC];
#pragma unroll
        for (int i = 0; i < TT_SPAN; i++) {
            row[i] = -1;
            if (i >= n) continue;
            const unsigned long long key = keys[first + i];
            tok[i] = (unsigned)(key >> 32);
            if (slot(tok[i]) < 0) continue;
            row[i] = (int)(unsigned)key;
            load(row[i], col, d[i]);
        }
        float acc[VEC];
        int start = 0; // the open segment's first position in the span
#pragma unroll
        for (int i = 0; i < TT_SPAN; i++) {
            if (i >= n) break;
            if (row[i] >= 0)
#pragma unroll
                for (int j = 0; j < VEC; j++) {
                    const float t = term(row[i], col + j, d[i][j]);
                    acc[j] = i == start ? t : __fadd_rn(acc[j], t);
                }
            if (i + 1 < n && tok[i + 1] == tok[i]) continue;
            if (row[i] >= 0) tt_store<VEC>(part + (size_t)(first + start) * W + col, acc);
            start = i + 1;
        }
    }
}
#endif

#ifdef TT_OP_EMBEDDING_BWD_SUM
// Block b looks at sorted position b; only the first position of each run of a token in [lo,
// lo + vc) works: it finds the run's end, then adds to table[token - lo] the sums of the run's
// segments, which start at the run's first position and at each span's start inside the run, in
// that order (TT_INFLIGHT segments' loads in flight at once). The order is fixed by the keys
// alone: the same bits run after run.
#define TT_INFLIGHT 8
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(float *__restrict__ table, const float *__restrict__ part,
          const unsigned long long *__restrict__ keys, int rows, long long lo, long long vc)
{
    tt_pdl_begin();
    const int first = blockIdx.x;
    const unsigned t = (unsigned)(keys[first] >> 32);
    if ((first > 0 && (unsigned)(keys[first - 1] >> 32) == t) || (long long)t - lo < 0 ||
        (long long)t - lo >= vc)
        return;
    // The run [first, end): equal tokens are contiguous, so "same token" is a prefix of the
    // positions after first; the block counts it TT_THREADS positions at a time.
    int end = first;
    for (;;) {
        const int at = end + threadIdx.x;
        const int same = __syncthreads_count(at < rows && (unsigned)(keys[at] >> 32) == t);
        end += same;
        if (same < TT_THREADS) break;
    }
    float *dst = table + (size_t)((long long)t - lo) * TT_W;
    for (int col = threadIdx.x * TT_VEC; col < TT_W; col += TT_THREADS * TT_VEC) {
        float acc[TT_VEC];
        tt_load<TT_VEC>(acc, dst + col);
        // segment starts: first, then (first / TT_SPAN + 1) * TT_SPAN, ... below end
        for (int seg = first; seg < end;) {
            float v[TT_INFLIGHT][TT_VEC];
            int at[TT_INFLIGHT];
#pragma unroll
            for (int u = 0; u < TT_INFLIGHT; u++) {
                at[u] = seg < end ? seg : -1;
                if (seg < end) {
                    tt_load<TT_VEC>(v[u], part + (size_t)seg * TT_W + col);
                    seg = (seg / TT_SPAN + 1) * TT_SPAN;
                }
            }
#pragma unroll
            for (int u = 0; u < TT_INFLIGHT; u++) {
                if (at[u] < 0) break;
#pragma unroll
                for (int j = 0; j < TT_VEC; j++) acc[j] = __fadd_rn(acc[j], v[u][j]);
            }
        }
        tt_store<TT_VEC>(dst + col, acc);
    }
}
#endif

#ifdef TT_OP_EMBEDDING_BWD
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(float *__restrict__ part, const TT_T *__restrict__ dx0,
          const unsigned long long *__restrict__ keys, int rows, int ld, int vocab, float p,
          unsigned long long seed, const unsigned long long *__restrict__ step, unsigned site, unsigned long long drop0)
{
    tt_pdl_begin();
    const uint64_t stream = tt_dropout_stream(*step, site);
    const tt_embed_drop dr = tt_embed_drop_of(p);
    // the rows' dropout elements from drop0 on, kept as the first row (drop0 is whole rows): a
    // 64-bit offset held across the span made the kernel spill
    const int row0 = (int)(drop0 / TT_D);
    tt_sorted_part<TT_D, TT_VEC>(
        part, keys, rows, [&](unsigned t) { return t < (unsigned)vocab ? (long long)t : -1ll; },
        [&](int row, int col, float (&v)[TT_VEC]) { tt_load<TT_VEC>(v, dx0 + (size_t)row * ld + col); },
        [&](int row, int e, float d) { return tt_embed_grad(d, (size_t)(row0 + row) * TT_D + e, dr, seed, stream); });
}
#endif

#ifdef TT_OP_ADAPTIVE_EMB_BWD
// The segment sums of de[pos[r]] for the rows r whose token t is in [lo, lo + vc) (keys:
// embedding_sort's of every row's token); embedding_bwd_sum adds them into dE_c [vc, DE].
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(float *__restrict__ part, const TT_T *__restrict__ de,
          const unsigned long long *__restrict__ keys, const int *__restrict__ pos, int rows,
          long long lo, long long vc)
{
    tt_pdl_begin();
    tt_sorted_part<TT_DE, TT_VEC>(
        part, keys, rows,
        [&](unsigned t) { return (long long)t - lo >= 0 && (long long)t - lo < vc ? (long long)t - lo : -1ll; },
        [&](int row, int col, float (&v)[TT_VEC]) { tt_load<TT_VEC>(v, de + (size_t)pos[row] * TT_DE + col); },
        [&](int, int, float d) { return d; });
}
#endif
