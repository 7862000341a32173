/* stats_math.h — per-element math of the reductions, shared by the CPU and CUDA twins
 * (DESIGN §3), so validity, the float↔key map and the accumulation steps exist once. */
#ifndef TIDE_REDUCE_MATH_H
#define TIDE_REDUCE_MATH_H
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/gpu/hd.h"
#include "core/gpu/unfused.h"

/* Radix levels of the order-statistic search over 32-bit keys: 11 + 11 + 10 bits, top first. */
#define TIDE_RSEL_BINS 2048
#define TIDE_RSEL_LEVELS 3
/* Histograms computed in one sweep over the pixels (shared memory on the GPU: 4×2048×4 B). */
#define TIDE_RSEL_MAX_TARGETS 4

/** Shift of level @p L's digit inside a key (21, 10, 0). */
TIDE_HD static inline int tide_rsel_shift(int level) {
    return level == 0 ? 21 : level == 1 ? 10 : 0;
}

/** Number of bins at level L (2048, 2048, 1024). */
TIDE_HD static inline int tide_rsel_nbins(int level) {
    return level == 2 ? 1024 : 2048;
}

/** Order-preserving map of a float's bits to an unsigned key: for non-NaN a < b ⇔ key(a) <
 *  key(b), with -0 just below +0 (the standard radix-sort transform: flip all bits of
 *  negatives, the sign bit of positives). */
TIDE_HD static inline uint32_t tide_reduce_key(float v) {
#ifdef __CUDA_ARCH__
    uint32_t u = __float_as_uint(v);
#else
    uint32_t u;
    memcpy(&u, &v, sizeof u);
#endif
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
}

/** Inverse of tide_reduce_key. */
TIDE_HD static inline float tide_reduce_unkey(uint32_t k) {
    uint32_t u = (k & 0x80000000u) ? (k & 0x7FFFFFFFu) : ~k;
#ifdef __CUDA_ARCH__
    return __uint_as_float(u);
#else
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
#endif
}

/** A pixel counts when finite, no excluded mask bit is set, and lo <= v <= hi (the running
 *  sigma-clip bounds; -inf, +inf when not clipping). */
TIDE_HD static inline int tide_reduce_valid(float v, uint16_t m, uint16_t bits, double lo,
                                            double hi) {
    double d = (double)v;
    return isfinite(v) && (m & bits) == 0 && d >= lo && d <= hi;
}

/** acc + x in double, exactly one rounding (never fused). */
TIDE_HD static inline double tide_reduce_add(double acc, double x) {
    return tide_dadd(acc, x);
}

/** (x - mean)² in double, each operation rounded once: the products must not be contracted
 *  into an FMA, or CPU and GPU would differ in the last bits. */
TIDE_HD static inline double tide_reduce_sqdev(float x, double mean) {
    const double d = tide_dsub((double)x, mean);
    return tide_dmul(d, d);
}

/** Linear pixel index (row-major over width × height) to the storage offset. */
TIDE_HD static inline int64_t tide_reduce_offset(int64_t idx, int64_t width, int64_t stride) {
    return stride == width ? idx : (idx / width) * stride + idx % width;
}

#endif
