// fp32 -> the storage type TT_T, element by element (rounding as tt_store_as: to nearest, ties to
// even): the bf16 path's conversions of fp32 results (dP) and of the master weights; and back
// (cast_widen, exact): the gradients summed over several GPUs in bf16 (TT_NCCL_SUMS=bf16).
// Constants: TT_THREADS. Grid-stride, so any grid covers any n.
// Tunable (ttgen --tune; the plan's heuristic otherwise):
// ttgen: tunable cast THREADS 128 256 512 1024
// ttgen: tunable cast_widen THREADS 128 256 512 1024

#ifdef TT_OP_CAST
// bf16 in pairs where both ends allow it (8-byte reads, 4-byte writes: two values, one conversion
// of tt_bf16x2), the odd last element apart; else element by element.
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(TT_T *__restrict__ out, const float *__restrict__ in, long n)
{
    tt_pdl_begin();
    const long first = (long)blockIdx.x * TT_THREADS + threadIdx.x, stride = (long)gridDim.x * TT_THREADS;
    if (sizeof(TT_T) == 2 && (unsigned long long)out % 4 == 0 && (unsigned long long)in % 8 == 0) {
        for (long j = first; j < n / 2; j += stride) {
            const float2 v = reinterpret_cast<const float2 *>(in)[j];
            const float f[2] = {v.x, v.y};
            tt_store<2>(out + 2 * j, f);
        }
        if (first == 0 && n % 2) out[n - 1] = tt_store_as<TT_T>(in[n - 1]);
        return;
    }
    for (long i = first; i < n; i += stride) out[i] = tt_store_as<TT_T>(in[i]);
}
#endif

#ifdef TT_OP_CAST_WIDEN
extern "C" __global__ void __launch_bounds__(TT_THREADS)
TT_KERNEL(float *__restrict__ out, const TT_T *__restrict__ in, long n)
{
    tt_pdl_begin();
    for (long i = (long)blockIdx.x * TT_THREADS + threadIdx.x; i < n; i += (long)gridDim.x * TT_THREADS)
        out[i] = tt_float(in[i]);
}
#endif
