/* fits_fast_math.h — the per-value conversions of a plain data unit, as cfitsio's
 * fits_read_pixll(TFLOAT) with a null value makes them (fits_fast_read.c has the rules and
 * their sources), shared by the host reader and the device conversion after a cuFile read
 * (fits_plain_cuda.cu), so both give the same bits. FITS data are big-endian. Not public. */
#ifndef TIDE_FITS_FAST_MATH_H
#define TIDE_FITS_FAST_MATH_H
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/gpu/hd.h"

/** How the integers of one data unit become floats: BSCALE/BZERO and BLANK. */
typedef struct tide_fits_iconv {
    int scaled; /**< BSCALE != 1 or BZERO != 0 */
    double bscale, bzero;
    int has_blank;
    long long blank;
} tide_fits_iconv;

/** A stored BITPIX -32 value (its bits, host order) to the float cfitsio gives: an all-ones
 *  exponent (NaN, Inf) is null (NaN, *null = 1); an all-zero one (zero, -0, denormals) is
 *  +0 ("underflow"); the rest are copied. */
TIDE_HD static inline float tide_fits_f32_value(uint32_t u, int *null) {
    const uint32_t e = u & 0x7f800000u;
    *null = e == 0x7f800000u;
    if (*null)
        return NAN;
    if (e == 0)
        return 0.0f;
    float v;
    memcpy(&v, &u, sizeof v);
    return v;
}

/** A stored integer to the float cfitsio gives: BLANK, or a scaled value that is not finite,
 *  is null (NaN, *null = 1); else (float)(v * BSCALE + BZERO) in double, or (float)v
 *  unscaled (exact below 2^24, rounded as cfitsio's cast beyond). */
TIDE_HD static inline float tide_fits_int_value(const tide_fits_iconv *c, long long v, int *null) {
    if (c->has_blank && v == c->blank) {
        *null = 1;
        return NAN;
    }
    const float f = c->scaled ? (float)((double)v * c->bscale + c->bzero) : (float)v;
    *null = !isfinite(f);
    return *null ? NAN : f;
}

#endif
