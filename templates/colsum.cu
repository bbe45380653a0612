// Column sums of a [parts x TT_D] fp32 matrix in a fixed order: the second stage of every
// deterministic reduction over rows (LayerNorm's dgamma/dbeta, biases). Each of TT_SETS
// consecutive [parts x TT_D] blocks of `in` is summed into its own TT_D-slice of `out`.
// out = sum (ACCUMULATE 0) or out += sum (ACCUMULATE 1). Constants: TT_D, TT_SETS, TT_THREADS.

extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(float *__restrict__ out, const float *__restrict__ in, int parts)
{
    const int col = blockIdx.x * TT_THREADS + threadIdx.x;
    const int set = blockIdx.y;
    if (col >= TT_D) return;
    const float *p = in + (size_t)set * parts * TT_D + col;
    // Four independent chains keep several loads in flight; their order is fixed.
    float s0 = 0.f, s1 = 0.f, s2 = 0.f, s3 = 0.f;
    int g = 0;
    for (; g + 4 <= parts; g += 4) {
        s0 += p[(size_t)g * TT_D];
        s1 += p[(size_t)(g + 1) * TT_D];
        s2 += p[(size_t)(g + 2) * TT_D];
        s3 += p[(size_t)(g + 3) * TT_D];
    }
    for (; g < parts; g++) s0 += p[(size_t)g * TT_D];
    const float s = (s0 + s1) + (s2 + s3);
#if TT_ACCUMULATE
    out[(size_t)set * TT_D + col] += s;
#else
    out[(size_t)set * TT_D + col] = s;
#endif
}
