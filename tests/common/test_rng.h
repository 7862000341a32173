/* test_rng.h — the tests' random numbers, in one place.
 *
 * The unit and GPU tests used to carry their own generators (26 files). Their expected
 * values and tolerances were chosen on the streams those generators give, so each family is
 * kept here bit for bit, keyed by an explicit state the test owns; a test names the family it
 * was written against. New tests should use TRNG_SPLITMIX (or the simulator's counter-based
 * streams, src/core/rng.h, when draws must not depend on their order).
 *
 *   xorshift64   Marsaglia 2003, shifts 13, 7, 17
 *   xorshift64*  Vigna 2016, shifts 12, 25, 27, output multiplied by 2685821657736338717
 *   lcg64        Knuth's MMIX linear congruential generator (full 64-bit state)
 *   splitmix64   Steele, Lea & Flood 2014 (Weyl sequence + finaliser)
 *
 * trng_unit maps 64 random bits to [0, 1), trng_open to (0, 1) (safe for log), both from the
 * top 53 bits, so they are exact doubles. */
#ifndef TIDE_TEST_RNG_H
#define TIDE_TEST_RNG_H
#include <math.h>
#include <stdint.h>

static inline uint64_t trng_xorshift64(uint64_t *s) {
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static inline uint64_t trng_xorshift64s(uint64_t *s) {
    *s ^= *s >> 12;
    *s ^= *s << 25;
    *s ^= *s >> 27;
    return *s * 2685821657736338717ULL;
}

static inline uint64_t trng_lcg64(uint64_t *s) {
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return *s;
}

static inline uint64_t trng_splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* [0, 1) from the top 53 bits of @p x. */
static inline double trng_unit(uint64_t x) {
    return (double)(x >> 11) * 0x1.0p-53;
}

/* (0, 1) from the top 53 bits of @p x (the centre of its 2^-53 cell). */
static inline double trng_open(uint64_t x) {
    return ((double)(x >> 11) + 0.5) * 0x1.0p-53;
}

/* Box–Muller: a standard normal deviate from two uniforms, @p u in (0, 1]. */
static inline double trng_box_muller(double u, double v) {
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

#endif
