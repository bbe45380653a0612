/* SHA-256 as FIPS 180-4 defines it; checked against the standard's test vectors in tests/. */
#include "sha256.h"

#include <string.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void compress(uint32_t h[8], const uint8_t *p)
{
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
               p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = k + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        k = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += k;
}

/* n whole blocks: FIPS 180-4's compression as written above, or with the x86 SHA extensions
 * (SHA-NI: sha256rnds2 does two rounds, sha256msg1/msg2 the message schedule), where the CPU
 * has them: 5-10 times faster, which is what makes hashing every tensor of a checkpoint cheap. */
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#define TT_SHA_NI 1

__attribute__((target("sha,sse4.1,ssse3"))) static void blocks_ni(uint32_t h[8], const uint8_t *p,
                                                                   size_t n)
{
    /* the state as sha256rnds2 takes it: ABEF (lanes F, E, B, A) and CDGH (H, G, D, C) */
    const __m128i abcd = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)h), 0xB1);
    const __m128i hgfe = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)(h + 4)), 0x1B);
    __m128i abef = _mm_alignr_epi8(abcd, hgfe, 8), cdgh = _mm_blend_epi16(hgfe, abcd, 0xF0);
    const __m128i swap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    for (; n; n--, p += 64) {
        const __m128i abef0 = abef, cdgh0 = cdgh;
        __m128i w[4]; /* w[j % 4]: words 4j .. 4j + 3 of the schedule */
        for (int j = 0; j < 16; j++) {
            __m128i *m = &w[j & 3];
            if (j < 4) {
                *m = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * j)), swap);
            } else { /* W[t] = s1(W[t-2]) + W[t-7] + s0(W[t-15]) + W[t-16] */
                const __m128i prev = w[(j + 3) & 3], t7 = _mm_alignr_epi8(prev, w[(j + 2) & 3], 4);
                *m = _mm_sha256msg2_epu32(
                    _mm_add_epi32(_mm_sha256msg1_epu32(*m, w[(j + 1) & 3]), t7), prev);
            }
            __m128i k = _mm_add_epi32(*m, _mm_loadu_si128((const __m128i *)(K + 4 * j)));
            /* two rounds: their ABEF into cdgh; two more from it, the old ABEF being the CDGH
             * of two rounds on: ABEF into abef, and cdgh holds the CDGH it leaves */
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, k);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, _mm_shuffle_epi32(k, 0x0E));
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
    }
    const __m128i feba = _mm_shuffle_epi32(abef, 0x1B), dchg = _mm_shuffle_epi32(cdgh, 0xB1);
    _mm_storeu_si128((__m128i *)h, _mm_blend_epi16(feba, dchg, 0xF0));
    _mm_storeu_si128((__m128i *)(h + 4), _mm_alignr_epi8(dchg, feba, 8));
}

static int have_ni(void)
{
    static int have = -1;
    if (have < 0) {
        unsigned a, b, c, d;
        have = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b >> 29 & 1); /* CPUID.7.0:EBX.SHA */
    }
    return have;
}
#else
#define TT_SHA_NI 0
#endif

static int portable_only;

void tt_sha256_force_portable(int on) { portable_only = on; }

int tt_sha256_accelerated(void)
{
#if TT_SHA_NI
    return !portable_only && have_ni();
#else
    return 0;
#endif
}

static void blocks(uint32_t h[8], const uint8_t *p, size_t n)
{
#if TT_SHA_NI
    if (tt_sha256_accelerated()) {
        blocks_ni(h, p, n);
        return;
    }
#endif
    for (; n; n--, p += 64) compress(h, p);
}

void tt_sha256_init(tt_sha256_ctx *s)
{
    static const uint32_t h0[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(s->h, h0, sizeof h0);
    s->bytes = 0;
    s->fill = 0;
}

void tt_sha256_update(tt_sha256_ctx *s, const void *data, size_t len)
{
    const uint8_t *p = data;
    s->bytes += len;
    while (len) {
        if (s->fill == 0 && len >= 64) { /* whole blocks straight from the input */
            const size_t n = len / 64;
            blocks(s->h, p, n);
            p += 64 * n;
            len -= 64 * n;
            continue;
        }
        size_t n = 64 - s->fill;
        if (n > len) n = len;
        memcpy(s->block + s->fill, p, n);
        s->fill += n;
        p += n;
        len -= n;
        if (s->fill == 64) {
            blocks(s->h, s->block, 1);
            s->fill = 0;
        }
    }
}

void tt_sha256_final(tt_sha256_ctx *s, uint8_t digest[32])
{
    uint64_t bits = s->bytes * 8;
    uint8_t pad = 0x80;
    tt_sha256_update(s, &pad, 1);
    pad = 0;
    while (s->fill != 56) tt_sha256_update(s, &pad, 1);
    uint8_t len[8];
    for (int i = 0; i < 8; i++) len[i] = (uint8_t)(bits >> (56 - 8 * i));
    tt_sha256_update(s, len, 8);
    for (int i = 0; i < 8; i++) {
        digest[4 * i] = (uint8_t)(s->h[i] >> 24);
        digest[4 * i + 1] = (uint8_t)(s->h[i] >> 16);
        digest[4 * i + 2] = (uint8_t)(s->h[i] >> 8);
        digest[4 * i + 3] = (uint8_t)s->h[i];
    }
}

void tt_sha256(const void *data, size_t len, uint8_t digest[32])
{
    tt_sha256_ctx s;
    tt_sha256_init(&s);
    tt_sha256_update(&s, data, len);
    tt_sha256_final(&s, digest);
}

void tt_hex(const uint8_t *bytes, size_t n, char *out)
{
    static const char d[] = "0123456789abcdef";
    for (size_t i = 0; i < n; i++) {
        out[2 * i] = d[bytes[i] >> 4];
        out[2 * i + 1] = d[bytes[i] & 15];
    }
    out[2 * n] = '\0';
}
