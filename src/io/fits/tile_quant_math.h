/* tile_quant_math.h — the per-pixel arithmetic of reading a tile-compressed FITS image into
 * floats, shared by the CPU decoder (tile_decode.c) and its CUDA twin (tile_decode_cuda.cu).
 *
 * It reproduces what cfitsio 4.2.0 gives fits_read_pixll(TFLOAT) with a NaN null value, so
 * that tide's pixels are bit for bit those of the cfitsio path (and of funpack's output):
 *  - integer tiles (fffi1r4 / fffi2r4 / fffi4r4): a value equal to the null value (ZBLANK,
 *    else BLANK, when the header has one) is NaN; others are (float)v when unscaled, else
 *    (float)(v * scale + zero) in double precision;
 *  - quantized floats with SUBTRACTIVE_DITHER_1/_2 (unquantize_i4r4): the same null test,
 *    then (float)((v - r + 0.5) * scale + zero), r the next value of the dither sequence;
 *    under _2 the reserved value ZERO_VALUE is an exact 0.0;
 *  - the dither sequence (fits_init_randoms): 10000 floats of the Park-Miller "minimal
 *    standard" generator (a = 16807, m = 2^31 - 1, seed 1; Park & Miller, CACM 31, 1988),
 *    as the FITS tiled-image convention (Pence et al. 2009, sec. 4) publishes it. Tile k
 *    (1-based) of an image of ZDITHER0 d starts at index i0 = (k + d - 2) mod 10000, at
 *    element (int)(r[i0] * 500); after element 9999 the next start is r[i0 + 1].
 * The operations are written with unfused.h so the GPU rounds as the CPU does. Not public. */
#ifndef TIDE_TILE_QUANT_MATH_H
#define TIDE_TILE_QUANT_MATH_H
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "core/gpu/hd.h"
#include "core/gpu/unfused.h"

/** Length of the dither sequence (cfitsio's N_RANDOM). */
#define TIDE_TILE_NRANDOM 10000

/** cfitsio's reserved quantized values: a null pixel, and under SUBTRACTIVE_DITHER_2 an exact
 *  zero. */
#define TIDE_TILE_NULL_VALUE (-2147483647)
#define TIDE_TILE_ZERO_VALUE (-2147483646)

/** How a tile's integers become floats. */
enum {
    TIDE_TILE_SCALE = 0,   /**< integers, or quantized floats without dither: v*scale+zero */
    TIDE_TILE_DITHER1 = 1, /**< SUBTRACTIVE_DITHER_1 */
    TIDE_TILE_DITHER2 = 2  /**< SUBTRACTIVE_DITHER_2 (ZERO_VALUE is 0.0) */
};

/** One tile's conversion: scaling, null value and dither. */
typedef struct {
    double scale, zero;
    int scaled;     /**< scale != 1 or zero != 0 (else the cast alone, as cfitsio) */
    int has_null;   /**< compare with @c null (cfitsio's nullcheck) */
    int64_t null;   /**< already cast to the tile's integer type, as cfitsio casts tnull */
    int dither;     /**< TIDE_TILE_SCALE / _DITHER1 / _DITHER2 */
    int first_rand; /**< the dither sequence's start index for the tile (i0) */
} tide_tile_conv;

/** The dither sequence: @p r gets TIDE_TILE_NRANDOM floats. Returns the last seed, which is
 *  1043618065 for a correct sequence (the convention's check). */
static inline int64_t tide_tile_randoms(float *r) {
    const double a = 16807.0, m = 2147483647.0;
    double seed = 1;
    for (int i = 0; i < TIDE_TILE_NRANDOM; i++) {
        double temp = a * seed;
        seed = temp - m * (double)(int)(temp / m);
        r[i] = (float)(seed / m);
    }
    return (int64_t)seed;
}

/** The float of integer @p v (a tile's raw value) under @p c; @p rand the dither value for the
 *  pixel (unused without dither). */
TIDE_HD static inline float tide_tile_value(const tide_tile_conv *c, int64_t v, float rand) {
    if (c->has_null && v == c->null)
        return NAN;
    if (c->dither) {
        if (c->dither == TIDE_TILE_DITHER2 && v == TIDE_TILE_ZERO_VALUE)
            return 0.0f;
        double d = tide_dadd(tide_dsub((double)v, (double)rand), 0.5);
        return (float)tide_dadd(tide_dmul(d, c->scale), c->zero);
    }
    if (!c->scaled)
        return (float)v;
    return (float)tide_dadd(tide_dmul((double)v, c->scale), c->zero);
}

/** The next dither index after @p *idx, whose sequence started at @p *i0 (cfitsio's
 *  nextrand / iseed walk). */
TIDE_HD static inline void tide_tile_rand_next(const float *r, int *i0, int *idx) {
    (*idx)++;
    if (*idx == TIDE_TILE_NRANDOM) {
        (*i0)++;
        if (*i0 == TIDE_TILE_NRANDOM)
            *i0 = 0;
        *idx = (int)(r[*i0] * 500);
    }
}

/** The dither value of pixel @p p (0-based, tile order) of a tile whose sequence starts at
 *  @p i0: tide_tile_rand_next's walk from the tile's first pixel, jumped over whole runs (the
 *  GPU converts pixels independently). */
TIDE_HD static inline float tide_tile_dither_at(const float *r, int i0, int64_t p) {
    int idx = (int)(r[i0] * 500);
    while (p >= TIDE_TILE_NRANDOM - idx) {
        p -= TIDE_TILE_NRANDOM - idx;
        i0 = i0 + 1 == TIDE_TILE_NRANDOM ? 0 : i0 + 1;
        idx = (int)(r[i0] * 500);
    }
    return r[idx + p];
}

/** The float of an IEEE value of @p bytes (4 or 8) bytes whose bits are @p bits, as cfitsio's
 *  fffr4r4 / fffr8r4 read it: with @p nullcheck a NaN or Inf is null (NaN) and a zero or a
 *  denormal (exponent 0) underflows to 0 (to @p zero when scaled); otherwise the value
 *  itself (a float's bits unchanged) or value * scale + zero. */
TIDE_HD static inline float tide_tile_real_value(uint64_t bits, int bytes, int nullcheck,
                                                 double scale, double zero) {
    const int scaled = scale != 1.0 || zero != 0.0;
    double d;
    int cls; /* 1: NaN/Inf, 2: underflow */
    if (bytes == 4) {
        const uint32_t u = (uint32_t)bits, e = u & 0x7f800000u;
        float f;
        memcpy(&f, &u, 4);
        cls = e == 0x7f800000u ? 1 : e == 0 ? 2 : 0;
        if (!scaled && !(nullcheck && cls))
            return f;
        d = f;
    } else {
        const uint64_t e = bits & 0x7ff0000000000000ull;
        memcpy(&d, &bits, 8);
        cls = e == 0x7ff0000000000000ull ? 1 : e == 0 ? 2 : 0;
    }
    if (nullcheck && cls == 1)
        return NAN;
    if (nullcheck && cls == 2)
        return scaled ? (float)zero : 0.0f;
    return scaled ? (float)tide_dadd(tide_dmul(d, scale), zero) : (float)d;
}

#endif
