// Column sums of a [parts x TT_D] fp32 matrix in a fixed order: the second stage of every
// deterministic reduction over rows (LayerNorm's dgamma/dbeta, biases). Each of up to TT_SETS
// consecutive [parts x TT_D] blocks of `in` is summed into its own output: the first into `out`,
// the second (LayerNorm's dbeta beside its dgamma) into `out1`, the third (the bias of the FFN's
// second product, whose gradient the residual LayerNorm's backward sums beside) into `out2`,
// each TT_D wide, so that each lands in its gradient's own place. out = sum (ACCUMULATE 0) or
// out += sum (ACCUMULATE 1). Constants: TT_D, TT_SETS, TT_THREADS (a multiple of 32). The grid:
// ceil(TT_D / 32) x the sets a launch sums (at most TT_SETS) x the jobs: job z's partials start
// in_stride floats after job z - 1's and its outputs out_stride after (the trainer sums every
// layer's LayerNorm and bias gradients in one launch after the backward: one launch instead of
// one a layer, each job's sums in the same order as alone).

// A block: 32 columns, and TT_THREADS / 32 warps over the parts (warp w adds parts w, w + W, ...,
// in four chains), then the warps' sums in warp order: a fixed order, and enough blocks and loads
// in flight for a few hundred partials (one thread per column walking them all was 16 us for
// LayerNorm's 264).
// Tunable (ttgen --tune, timed inside the backward it ends; the plan's heuristic otherwise): the
// warps over the partials (the order of the sums changes with them, and stays fixed for each).
// ttgen: tunable colsum THREADS 64 128 256 512 1024
// ttgen: tunable bias_colsum THREADS 64 128 256 512 1024
#define TT_PW (TT_THREADS / 32)
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(float *__restrict__ out, float *__restrict__ out1, float *__restrict__ out2,
          const float *__restrict__ in, int parts, long long in_stride, long long out_stride)
{
    tt_pdl_begin();
    __shared__ float red[TT_PW][32];
    static_assert(sizeof red == TT_SMEM, "the shared memory the plan counted is what the block declares");
    const int lane = threadIdx.x % 32, w = threadIdx.x / 32;
    const int col = blockIdx.x * 32 + lane, set = blockIdx.y;
    const float *p = in + blockIdx.z * in_stride + (size_t)set * parts * TT_D + col;
    float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
    if (col < TT_D) {
        int g = w;
        for (; g + 3 * TT_PW < parts; g += 4 * TT_PW) {
            s0 += p[(size_t)g * TT_D];
            s1 += p[(size_t)(g + TT_PW) * TT_D];
            s2 += p[(size_t)(g + 2 * TT_PW) * TT_D];
            s3 += p[(size_t)(g + 3 * TT_PW) * TT_D];
        }
        for (; g < parts; g += TT_PW) s0 += p[(size_t)g * TT_D];
    }
    red[w][lane] = (s0 + s1) + (s2 + s3);
    __syncthreads();
    if (w != 0 || col >= TT_D) return;
    float s = red[0][lane];
#pragma unroll
    for (int k = 1; k < TT_PW; k++) s += red[k][lane];
    static_assert(TT_SETS >= 1 && TT_SETS <= 3, "an output pointer per set");
    float *o = (set == 0 ? out : set == 1 ? out1 : out2) + blockIdx.z * out_stride + col;
#if TT_ACCUMULATE
    *o += s;
#else
    *o = s;
#endif
}
