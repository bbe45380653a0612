/* bfloat16 on the host: the same rounding as the kernels' tt_store_as<tt_bf16> (to nearest, ties
 * to even; NaN stays a quiet NaN), so CPU and GPU agree on every rounded value. */
#ifndef TT_BF16_H
#define TT_BF16_H

#include <stdint.h>
#include <string.h>

static inline uint16_t tt_bf16_from_float(float x)
{
    uint32_t u;
    memcpy(&u, &x, sizeof u);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x40u);
    u += 0x7fffu + ((u >> 16) & 1u);
    return (uint16_t)(u >> 16);
}

static inline float tt_bf16_to_float(uint16_t b)
{
    const uint32_t u = (uint32_t)b << 16;
    float x;
    memcpy(&x, &u, sizeof x);
    return x;
}

#endif
