// The word embedding of a single table E [vocab, TT_D] (fp32 master weights; div_val 1), forward
// and backward, with the embedding's dropout fused in (MODEL.md section 2):
//   x0[row] = dropout(E[tokens[row]] * sqrt(D))       element index row * D + col, as the CPU
// Constants: TT_D features, TT_VEC features per thread (divides TT_D), TT_THREADS per block;
// embedding_sort: TT_P (a power of two >= the rows it sorts), TT_CHUNK (keys sorted in shared
// memory at a time, a power of two <= TT_P), TT_THREADS.
//
// The backward is a scatter-add: dE[t] += sum over the rows r with tokens[r] = t of
// dropout_bwd(dx0[r]) * sqrt(D). It is deterministic without float atomics: embedding_sort puts the
// keys (token, row) in ascending order (one block, a bitonic network: its result does not depend on
// scheduling), and embedding_bwd gives each run of equal tokens to one block, which adds that
// token's rows to dE[t] in increasing row order, exactly as the CPU reference does.

#define TT_NV (TT_D / TT_VEC) // vectors per row

#ifdef TT_OP_EMBEDDING_FWD
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ x0, const float *__restrict__ emb, const int *__restrict__ tokens,
          int rows, int vocab, float p, unsigned long long seed,
          const unsigned long long *__restrict__ step, unsigned site)
{
    const long long vi = (long long)blockIdx.x * TT_THREADS + threadIdx.x;
    if (vi >= (long long)rows * TT_NV) return;
    const int row = (int)(vi / TT_NV), col = (int)(vi % TT_NV) * TT_VEC;
    const int t = tokens[row];
    const bool known = t >= 0 && t < vocab;
    float v[TT_VEC];
    tt_load<TT_VEC>(v, emb + (size_t)(known ? t : 0) * TT_D + col);
    const float scale = (float)sqrt((double)TT_D); // rounded as the CPU rounds it
    const float inv_keep = 1.f / (1.f - p);
    const uint64_t stream = tt_dropout_stream(*step, site);
    const size_t base = (size_t)row * TT_D + col;
#pragma unroll
    for (int j = 0; j < TT_VEC; j++) {
        const float e = v[j] * scale;
        v[j] = tt_dropout_keep(seed, stream, base + j, p) ? e * inv_keep : 0.f;
        if (!known) v[j] = __uint_as_float(0x7fffffffu); // a token outside the vocabulary shows
    }
    tt_store<TT_VEC>(x0 + base, v);
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
// block's global writes visible to the block), the rest through shared memory a chunk at a time.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(unsigned long long *keys, const int *__restrict__ tokens, int rows)
{
    __shared__ unsigned long long chunk[TT_CHUNK];
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

#ifdef TT_OP_EMBEDDING_BWD
// Block b looks at sorted position b; only the first position of each token's run works. It
// finds the run's end, then walks the run in order: its rows ascend, as on the CPU. Rows are
// read four at a time, so four loads are in flight, and added one by one, in order.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(float *__restrict__ demb, const TT_T *__restrict__ dx0,
          const unsigned long long *__restrict__ keys, int rows, int vocab, float p,
          unsigned long long seed, const unsigned long long *__restrict__ step, unsigned site)
{
    const int first = blockIdx.x;
    const unsigned t = (unsigned)(keys[first] >> 32);
    if ((first > 0 && (unsigned)(keys[first - 1] >> 32) == t) || t >= (unsigned)vocab) return;
    // The run [first, end): equal tokens are contiguous, so "same token" is a prefix of the
    // positions after first; the block counts it TT_THREADS positions at a time.
    int end = first;
    for (;;) {
        const int at = end + threadIdx.x;
        const int same = __syncthreads_count(at < rows && (unsigned)(keys[at] >> 32) == t);
        end += same;
        if (same < TT_THREADS) break;
    }

    const float scale = (float)sqrt((double)TT_D);
    const float inv_keep = 1.f / (1.f - p);
    const uint64_t stream = tt_dropout_stream(*step, site);
    for (int col = threadIdx.x * TT_VEC; col < TT_D; col += TT_THREADS * TT_VEC) {
        float acc[TT_VEC];
        tt_load<TT_VEC>(acc, demb + (size_t)t * TT_D + col);
        for (int k = first; k < end; k += 4) {
            int row[4];
            float d[4][TT_VEC];
#pragma unroll
            for (int u = 0; u < 4; u++) {
                row[u] = k + u < end ? (int)(unsigned)keys[k + u] : -1;
                if (row[u] >= 0) tt_load<TT_VEC>(d[u], dx0 + (size_t)row[u] * TT_D + col);
            }
#pragma unroll
            for (int u = 0; u < 4; u++) {
                if (row[u] < 0) break;
                const size_t base = (size_t)row[u] * TT_D + col;
#pragma unroll
                for (int j = 0; j < TT_VEC; j++) {
                    // cpu_dropout_bwd, then embed_bwd's ge += d * scale: two roundings, no FMA
                    const bool keep = tt_dropout_keep(seed, stream, base + j, p);
                    const float g = keep ? d[u][j] * inv_keep : 0.f;
                    acc[j] = __fadd_rn(acc[j], __fmul_rn(g, scale));
                }
            }
        }
        tt_store<TT_VEC>(demb + (size_t)t * TT_D + col, acc);
    }
}
#endif
