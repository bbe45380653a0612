/* Counter-based random numbers: a value depends only on (seed, stream, index), never on what was
 * drawn before. Dropout masks and initial weights are therefore reproducible in any order, on the
 * CPU and on the GPU alike, and a resumed run needs no RNG state beyond the step.
 * Valid C and CUDA C++: ttgen pastes the same functions into kernel sources. */
#ifndef TT_RNG_H
#define TT_RNG_H

/* gen/embed.cmake embeds this very file beside the templates and gen/emit.c pastes it in front of
 * every instance: one definition for both sides. NVRTC has no include paths: hence the types. */
#ifdef __CUDACC_RTC__
typedef unsigned long long uint64_t;
typedef unsigned int uint32_t;
#else
#include <math.h>
#include <stdint.h>
#endif

#ifndef TT_HD
#ifdef __CUDACC__
#define TT_HD __host__ __device__ __forceinline__ /* not static: unused ones raise no warning */
#else
#define TT_HD static inline
#endif
#endif

/* splitmix64's finalizer: a bijection of 64-bit integers with good avalanche. */
TT_HD uint64_t tt_mix64(uint64_t x)
{
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ull;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebull;
    x ^= x >> 31;
    return x;
}

/* The draw's 24 random bits, u: the uniform is u / 2^24. */
TT_HD uint32_t tt_uniform_bits(uint64_t seed, uint64_t stream, uint64_t index)
{
    uint64_t h = tt_mix64(seed + 0x9e3779b97f4a7c15ull * (stream + 1));
    h = tt_mix64(h ^ (index * 0xd1b54a32d192ed03ull));
    return (uint32_t)(h >> 40);
}

/* Uniform in [0, 1) with 24 random bits: exactly representable in float. */
TT_HD float tt_uniform(uint64_t seed, uint64_t stream, uint64_t index)
{
    return (float)tt_uniform_bits(seed, stream, index) * (1.0f / 16777216.0f);
}

/* Dropout keeps a draw when its uniform is >= p, that is when its bits u >= this: u / 2^24 and
 * p 2^24 are exact in float (a power of two's scaling), so u / 2^24 >= p exactly when
 * u >= ceil(p 2^24); p <= 0 keeps all, p >= 1 (or NaN) none, as the float comparison would.
 * The kernels test their draws so (templates/common.cuh): one integer comparison a draw instead
 * of the bits' conversion to float and a float comparison, where a dropout kernel's time is its
 * draws. tests/test_cpu_grad.c holds it to the float test at every 24-bit draw. */
TT_HD uint32_t tt_keep_threshold(float p)
{
    if (p <= 0.f) return 0u;
    if (!(p < 1.f)) return 1u << 24;
    return (uint32_t)ceilf(p * 16777216.0f);
}

/* The stream of a dropout site in a training step: sites are numbered per model. */
TT_HD uint64_t tt_dropout_stream(uint64_t step, uint32_t site) { return (step << 20) | site; }

#endif
