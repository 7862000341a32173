/* sha256_ni.c — SHA-256 blocks on the x86 SHA extensions (SHA-NI: sha256rnds2, sha256msg1,
 * sha256msg2), about 8x the portable code per core.
 *
 * The instructions keep the eight working variables as two vectors, ABEF and CDGH (Intel,
 * "Intel SHA Extensions", 2013; Intel SDM vol. 2, SHA256RNDS2): each sha256rnds2 does two
 * rounds with W[t] + K[t] from the low two lanes of its third operand; the message schedule of
 * FIPS 180-4 §6.2.2 step 1 is W[t..t+3] = msg2(msg1(W[t-16..t-13], W[t-12..t-9]) + W[t-7..t-4],
 * W[t-4..t-1]). Built only for x86-64 GCC/Clang (function-level target attribute, so the rest
 * of the build needs no -msha) and used only when the processor reports SHA and SSE4.1. */
#include "sha256.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>
#include <immintrin.h>

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

/* Four rounds t..t+3 with the message words in m. */
#define QROUND(m, t)                                                                               \
    do {                                                                                           \
        msg = _mm_add_epi32((m), _mm_loadu_si128((const __m128i *)&K[t]));                         \
        cdgh = _mm_sha256rnds2_epu32(cdgh, abef, msg);                                             \
        msg = _mm_shuffle_epi32(msg, 0x0E);                                                        \
        abef = _mm_sha256rnds2_epu32(abef, cdgh, msg);                                             \
    } while (0)
/* a = W[t-16..t-13] becomes W[t..t+3]; b, c, d: the next three groups. */
#define SCHED(a, b, c, d)                                                                          \
    a = _mm_sha256msg2_epu32(_mm_add_epi32(_mm_sha256msg1_epu32(a, b), _mm_alignr_epi8(d, c, 4)), d)

__attribute__((target("sha,sse4.1"))) static void blocks_ni(uint32_t h[8], const unsigned char *p,
                                                            size_t nblocks) {
    /* big-endian words: reverse the bytes of each 32-bit lane */
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bLL, 0x0405060700010203LL);
    __m128i t = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[0]), 0xB1);    /* BADC */
    __m128i cdgh = _mm_shuffle_epi32(_mm_loadu_si128((const __m128i *)&h[4]), 0x1B); /* HGFE */
    __m128i abef = _mm_alignr_epi8(t, cdgh, 8);
    cdgh = _mm_blend_epi16(cdgh, t, 0xF0);
    for (; nblocks; nblocks--, p += 64) {
        const __m128i abef0 = abef, cdgh0 = cdgh;
        __m128i msg;
        __m128i m0 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 0)), bswap);
        __m128i m1 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16)), bswap);
        __m128i m2 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 32)), bswap);
        __m128i m3 = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 48)), bswap);
        QROUND(m0, 0);
        QROUND(m1, 4);
        QROUND(m2, 8);
        QROUND(m3, 12);
        for (int t16 = 16; t16 < 64; t16 += 16) {
            SCHED(m0, m1, m2, m3);
            QROUND(m0, t16);
            SCHED(m1, m2, m3, m0);
            QROUND(m1, t16 + 4);
            SCHED(m2, m3, m0, m1);
            QROUND(m2, t16 + 8);
            SCHED(m3, m0, m1, m2);
            QROUND(m3, t16 + 12);
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
    }
    t = _mm_shuffle_epi32(abef, 0x1B);                                  /* ABEF -> lanes A B E F */
    cdgh = _mm_shuffle_epi32(cdgh, 0xB1);                               /* CDGH -> lanes G H C D */
    _mm_storeu_si128((__m128i *)&h[0], _mm_blend_epi16(t, cdgh, 0xF0)); /* A B C D */
    _mm_storeu_si128((__m128i *)&h[4], _mm_alignr_epi8(cdgh, t, 8));    /* E F G H */
}

/* The processor's own answer through cpuid (leaf 1 ECX bit 19: SSE4.1; leaf 7 subleaf 0 EBX
 * bit 29: SHA), not __builtin_cpu_supports: clang 14 does not know its "sha" feature name. */
tide_sha256_blocks_fn tide_sha256_blocks_ni(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 19)))
        return NULL;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(b & (1u << 29)))
        return NULL;
    return blocks_ni;
}

#else

tide_sha256_blocks_fn tide_sha256_blocks_ni(void) {
    return NULL;
}

#endif
