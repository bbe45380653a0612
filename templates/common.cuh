// Shared by every kernel template: the storage types, their conversions, and reductions.
// ttgen pastes this file in front of each instance, so a dumped .cu compiles on its own.
// The instance defines TT_T (the activation storage type: float or tt_bf16) before this text.

// bfloat16 as raw bits: no CUDA header is needed, so NVRTC compiles without include paths.
struct __align__(2) tt_bf16 {
    unsigned short bits;
};

__device__ __forceinline__ float tt_float(float x) { return x; }
__device__ __forceinline__ float tt_float(tt_bf16 x) { return __uint_as_float((unsigned)x.bits << 16); }

template <typename T> __device__ __forceinline__ T tt_store_as(float x);
template <> __device__ __forceinline__ float tt_store_as<float>(float x) { return x; }
template <> __device__ __forceinline__ tt_bf16 tt_store_as<tt_bf16>(float x)
{
    // Round to nearest, ties to even, as the CPU reference does; NaN stays NaN (quiet).
    unsigned u = __float_as_uint(x);
    tt_bf16 r;
    if ((u & 0x7fffffffu) > 0x7f800000u) {
        r.bits = (unsigned short)((u >> 16) | 0x40u);
    } else {
        u += 0x7fffu + ((u >> 16) & 1u);
        r.bits = (unsigned short)(u >> 16);
    }
    return r;
}

// Sum over groups of WIDTH consecutive lanes (WIDTH a power of two, at most 32).
template <int WIDTH> __device__ __forceinline__ float tt_group_sum(float v)
{
#pragma unroll
    for (int o = WIDTH / 2; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o, WIDTH);
    return v;
}
