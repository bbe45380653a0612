/* SHA-256 (FIPS 180-4), for cache keys, the integrity check of cache entries and checkpoints'
 * tensors. */
#ifndef TT_SHA256_H
#define TT_SHA256_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    uint32_t h[8];
    uint64_t bytes;
    uint8_t block[64];
    size_t fill;
} tt_sha256_ctx;

void tt_sha256_init(tt_sha256_ctx *s);
void tt_sha256_update(tt_sha256_ctx *s, const void *data, size_t len);
void tt_sha256_final(tt_sha256_ctx *s, uint8_t digest[32]);
void tt_sha256(const void *data, size_t len, uint8_t digest[32]);
void tt_hex(const uint8_t *bytes, size_t n, char *out); /* out holds 2n + 1 chars */
/* Whether the x86 SHA extensions do the work (where the CPU has them), and for the tests, the
 * portable code forced on (1) or not (0). The digests are the same either way. */
int tt_sha256_accelerated(void);
void tt_sha256_force_portable(int on);

#endif
