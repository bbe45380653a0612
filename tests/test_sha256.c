/* SHA-256 against FIPS 180-4's test vectors, padding edge cases around the 56- and 64-byte block
 * boundaries, and incremental updates (any split of the input) against the one-shot digest.
 * Cache keys and the integrity check of cache entries both rest on this file. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "sha256.h"

static void check_digest(const uint8_t d[32], const char *want_hex)
{
    char hex[65];
    tt_hex(d, 32, hex);
    assert_string_equal(hex, want_hex);
}

static void check_oneshot(const void *data, size_t len, const char *want_hex)
{
    uint8_t d[32];
    tt_sha256(data, len, d);
    check_digest(d, want_hex);
}

/* FIPS 180-4 / NIST's example messages (one block, two blocks, and the 896-bit message). */
static void test_fips_vectors(void **state)
{
    (void)state;
    check_oneshot("", 0, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    check_oneshot("abc", 3, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    assert_int_equal(strlen(m448) * 8, 448);
    check_oneshot(m448, strlen(m448),
                  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopq"
                       "klmnopqrlmnopqrsmnopqrstnopqrstu";
    assert_int_equal(strlen(m896) * 8, 896);
    check_oneshot(m896, strlen(m896),
                  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");
}

/* One million 'a', fed in chunks of uneven sizes that straddle block boundaries every way. */
static void test_million_a_uneven_chunks(void **state)
{
    (void)state;
    const size_t total = 1000000;
    char *a = malloc(total);
    assert_non_null(a);
    memset(a, 'a', total);
    static const size_t chunks[] = {1, 63, 64, 65, 0, 7, 127, 128, 129, 1000, 55, 56, 57, 4093};
    tt_sha256_ctx s;
    tt_sha256_init(&s);
    size_t done = 0;
    for (int i = 0; done < total; i++) {
        size_t n = chunks[i % (sizeof chunks / sizeof chunks[0])];
        if (n > total - done) n = total - done;
        tt_sha256_update(&s, a + done, n);
        done += n;
    }
    uint8_t d[32];
    tt_sha256_final(&s, d);
    check_digest(d, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    check_oneshot(a, total, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    free(a);
}

/* Lengths where the padding (0x80, zeros, 64-bit length) spills into an extra block or not.
 * Expected digests come from an independent implementation (Python's hashlib). */
static void test_padding_boundaries(void **state)
{
    (void)state;
    static const struct {
        size_t n;
        const char *hex;
    } cases[] = {
        {55, "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318"},
        {56, "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a"},
        {57, "f13b2d724659eb3bf47f2dd6af1accc87b81f09f59f2b75e5c0bed6589dfe8c6"},
        {63, "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34"},
        {64, "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb"},
        {65, "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0"},
        {119, "31eba51c313a5c08226adf18d4a359cfdfd8d2e816b13f4af952f7ea6584dcfb"},
        {120, "2f3d335432c70b580af0e8e1b3674a7c020d683aa5f73aaaedfdc55af904c21c"},
        {127, "c57e9278af78fa3cab38667bef4ce29d783787a2f731d4e12200270f0c32320a"},
        {128, "6836cf13bac400e9105071cd6af47084dfacad4e5e302c94bfed24e013afb73e"},
        {129, "c12cb024a2e5551cca0e08fce8f1c5e314555cc3fef6329ee994a3db752166ae"},
    };
    char a[129];
    memset(a, 'a', sizeof a);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        uint8_t d[32];
        char hex[65];
        tt_sha256(a, cases[i].n, d);
        tt_hex(d, 32, hex);
        if (strcmp(hex, cases[i].hex) != 0)
            fail_msg("%zu x 'a': got %s, want %s", cases[i].n, hex, cases[i].hex);
    }
    /* Every byte value once: catches sign-extension of bytes >= 0x80. */
    uint8_t all[256];
    for (int i = 0; i < 256; i++) all[i] = (uint8_t)i;
    check_oneshot(all, sizeof all, "40aff2e9d2d8922e47afd4648e6967497158785fbd1da870e7110266bf944880");
}

static uint64_t rng_next(uint64_t *x) /* xorshift64*: a fixed sequence, so failures repeat */
{
    *x ^= *x >> 12;
    *x ^= *x << 25;
    *x ^= *x >> 27;
    return *x * 0x2545F4914F6CDD1DULL;
}

/* Random messages cut at random places: the incremental digest equals the one-shot one. */
static void test_incremental_equals_oneshot(void **state)
{
    (void)state;
    uint64_t seed = 0x9e3779b97f4a7c15ULL;
    uint8_t msg[3000];
    for (int trial = 0; trial < 400; trial++) {
        const size_t len = (size_t)(rng_next(&seed) % sizeof msg);
        for (size_t i = 0; i < len; i++) msg[i] = (uint8_t)rng_next(&seed);
        uint8_t want[32], got[32];
        tt_sha256(msg, len, want);

        tt_sha256_ctx s;
        tt_sha256_init(&s);
        size_t done = 0;
        while (done < len) {
            /* Mostly short pieces, sometimes long ones, sometimes empty updates. */
            uint64_t r = rng_next(&seed);
            size_t n = (r & 3) == 0 ? (size_t)(r >> 8) % 300 : (size_t)(r >> 8) % 70;
            if (n > len - done) n = len - done;
            tt_sha256_update(&s, msg + done, n);
            done += n;
        }
        tt_sha256_final(&s, got);
        if (memcmp(want, got, 32) != 0) fail_msg("trial %d: length %zu: split digest differs", trial, len);
    }
}

/* A context is reusable after tt_sha256_init, and one-byte messages differ from each other. */
static void test_reinit_and_distinct(void **state)
{
    (void)state;
    tt_sha256_ctx s;
    uint8_t d1[32], d2[32];
    tt_sha256_init(&s);
    tt_sha256_update(&s, "some other message", 18);
    tt_sha256_final(&s, d1);
    tt_sha256_init(&s);
    tt_sha256_update(&s, "abc", 3);
    tt_sha256_final(&s, d2);
    check_digest(d2, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");

    uint8_t a[32], b[32];
    tt_sha256("\x00", 1, a);
    tt_sha256("\x01", 1, b);
    assert_memory_not_equal(a, b, 32);
}

static void test_hex(void **state)
{
    (void)state;
    const uint8_t bytes[] = {0x00, 0xff, 0x1a, 0xa1, 0x09};
    char out[2 * sizeof bytes + 1];
    memset(out, 'x', sizeof out);
    tt_hex(bytes, sizeof bytes, out);
    assert_string_equal(out, "00ff1aa109");
    tt_hex(bytes, 0, out);
    assert_string_equal(out, "");
}

/* The SHA extensions' path (where this CPU has it) against the portable one: FIPS's vectors with
 * the portable path forced, then random inputs of every length to 300 bytes and a few large
 * ones, fed whole and in pieces, the same digest both ways. */
static void test_accelerated_equals_portable(void **state)
{
    (void)state;
    tt_sha256_force_portable(1);
    assert_int_equal(tt_sha256_accelerated(), 0);
    test_fips_vectors(NULL);
    tt_sha256_force_portable(0);
    print_message("  this CPU: %s\n", tt_sha256_accelerated() ? "SHA extensions" : "portable only");
    const size_t most = 1 << 20;
    uint8_t *buf = malloc(most);
    assert_non_null(buf);
    uint32_t x = 12345;
    for (size_t i = 0; i < most; i++) buf[i] = (uint8_t)((x = x * 1664525u + 1013904223u) >> 24);
    const size_t big[] = {4096, 65536 + 7, most};
    for (size_t len = 0; len <= 300 + sizeof big / sizeof *big; len++) {
        const size_t n = len <= 300 ? len : big[len - 301];
        uint8_t a[32], b[32], c[32];
        tt_sha256(buf, n, a);
        tt_sha256_force_portable(1);
        tt_sha256(buf, n, b);
        tt_sha256_force_portable(0);
        tt_sha256_ctx s;
        tt_sha256_init(&s);
        for (size_t at = 0; at < n;) { /* pieces of 1 to 130 bytes */
            const size_t k = 1 + (at * 7 + n) % 130 < n - at ? 1 + (at * 7 + n) % 130 : n - at;
            tt_sha256_update(&s, buf + at, k);
            at += k;
        }
        tt_sha256_final(&s, c);
        if (memcmp(a, b, 32) || memcmp(a, c, 32)) fail_msg("length %zu: the digests differ", n);
    }
    free(buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fips_vectors),
        cmocka_unit_test(test_accelerated_equals_portable),
        cmocka_unit_test(test_million_a_uneven_chunks),
        cmocka_unit_test(test_padding_boundaries),
        cmocka_unit_test(test_incremental_equals_oneshot),
        cmocka_unit_test(test_reinit_and_distinct),
        cmocka_unit_test(test_hex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
