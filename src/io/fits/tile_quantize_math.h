/* tile_quantize_math.h — float tiles quantized to integers as fpack quantizes them by default
 * (q = 4, SUBTRACTIVE_DITHER_1), shared by the CPU encoder (tile_encode.c) and its CUDA twin
 * (tile_encode_cuda.cu) so that both give the same integers, ZSCALE and ZZERO. The inverse is
 * tile_quant_math.h.
 *
 * What cfitsio 4.2.0 does (fits_quantize_float and its noise estimate FnNoise5_float), which
 * is reproduced here operation for operation, in the same precisions:
 *  - null pixels: when a tile holds a NaN or an infinity, every such pixel, and any pixel equal
 *    to cfitsio's float null value (-9.11912e-36), is null; otherwise no pixel is;
 *  - the noise (per tile, the tile read as rows of ZTILE1 pixels, or as one row when ZTILE1 is
 *    below 9): in every row with 9 or more good pixels, over each run v1..v9 of consecutive
 *    good pixels (nulls skipped), the float values |v5 - v7| (kept unless v5 = v6 = v7),
 *    |2 v5 - v3 - v7| and |6 v5 - 4 v3 - 4 v7 + v1 + v9| (kept unless v3..v7 are equal); a row's
 *    figure is the median (element (n - 1) / 2) of each list, n counting the third list — so
 *    the first list's median also reads n - n2 stale entries, as cfitsio's does — and the
 *    tile's is the median over rows (mean of the two middle ones). noise2/3/5 are those times
 *    1.0483579 / 0.6052697 / 0.1772048; the noise is noise3, or the smaller non-zero of
 *    noise2 and noise5 when smaller;
 *  - delta = noise / q; a tile of one pixel, a zero delta (a constant tile) or a range over
 *    2 * 2147483647 - 10 deltas is not quantized (the caller stores it losslessly);
 *  - a tile without nulls gets zero = round-half-up(min / delta) * delta (through a cast to
 *    int64), or (min + max) / 2 when its range exceeds 2147483647 - 10 deltas; a tile with
 *    nulls (or under SUBTRACTIVE_DITHER_2) gets zero = min - delta * (-2147483647 + 10);
 *  - each value q = NINT((v - zero) / delta + r - 0.5) with r the tile's next dither value
 *    (tile_quant_math.h's sequence and walk), NINT rounding half away from zero through an
 *    int cast; a null is -2147483647. The dither index moves on for every pixel.
 * The medians use the same selection algorithm as cfitsio's quick_select (N. Devillard's
 * public-domain quickselect), because its reordering of the first list is what the stale
 * entries of the next row read. Not public. */
#ifndef TIDE_TILE_QUANTIZE_MATH_H
#define TIDE_TILE_QUANTIZE_MATH_H
#include <float.h>
#include <stdint.h>
#include <string.h>

#include "core/gpu/hd.h"
#include "core/gpu/unfused.h"
#include "tile_quant_math.h"

/** cfitsio's null value for float pixels read with nulls (FLOATNULLVALUE). */
#define TIDE_TILE_FLOAT_NULL (-9.11912E-36F)

/** The quantization level fpack uses unless told otherwise. */
#define TIDE_TILE_DEFAULT_Q 4.0f

/** cfitsio's nearest integer: half away from zero, through an int cast. */
TIDE_HD static inline int tide_tile_nint(double x) {
    return x >= 0. ? (int)tide_dadd(x, 0.5) : (int)tide_dsub(x, 0.5);
}

/* Element (n - 1) / 2 of the sorted @p arr (n >= 1), reordering @p arr exactly as cfitsio's
 * quick_select does. One definition per element type. */
#define TIDE_TILE_QSELECT(name, T)                                                                 \
    TIDE_HD static inline T name(T *arr, int64_t n) {                                              \
        int64_t low = 0, high = n - 1, median = (low + high) / 2;                                  \
        T t;                                                                                       \
        for (;;) {                                                                                 \
            if (high <= low)                                                                       \
                return arr[median];                                                                \
            if (high == low + 1) {                                                                 \
                if (arr[low] > arr[high]) {                                                        \
                    t = arr[low], arr[low] = arr[high], arr[high] = t;                             \
                }                                                                                  \
                return arr[median];                                                                \
            }                                                                                      \
            const int64_t middle = (low + high) / 2;                                               \
            if (arr[middle] > arr[high]) {                                                         \
                t = arr[middle], arr[middle] = arr[high], arr[high] = t;                           \
            }                                                                                      \
            if (arr[low] > arr[high]) {                                                            \
                t = arr[low], arr[low] = arr[high], arr[high] = t;                                 \
            }                                                                                      \
            if (arr[middle] > arr[low]) {                                                          \
                t = arr[middle], arr[middle] = arr[low], arr[low] = t;                             \
            }                                                                                      \
            t = arr[middle], arr[middle] = arr[low + 1], arr[low + 1] = t;                         \
            int64_t ll = low + 1, hh = high;                                                       \
            for (;;) {                                                                             \
                do                                                                                 \
                    ll++;                                                                          \
                while (arr[low] > arr[ll]);                                                        \
                do                                                                                 \
                    hh--;                                                                          \
                while (arr[hh] > arr[low]);                                                        \
                if (hh < ll)                                                                       \
                    break;                                                                         \
                t = arr[ll], arr[ll] = arr[hh], arr[hh] = t;                                       \
            }                                                                                      \
            t = arr[low], arr[low] = arr[hh], arr[hh] = t;                                         \
            if (hh <= median)                                                                      \
                low = ll;                                                                          \
            if (hh >= median)                                                                      \
                high = hh - 1;                                                                     \
        }                                                                                          \
    }
TIDE_TILE_QSELECT(tide_tile_qselect_f, float)
TIDE_TILE_QSELECT(tide_tile_qselect_d, double)
#undef TIDE_TILE_QSELECT

/** The median of the @p n (>= 1) row figures @p v (sorted in place): the middle one, or the
 *  mean of the two middle ones. Insertion sort: a tile has few rows. */
TIDE_HD static inline double tide_tile_median_rows(double *v, int64_t n) {
    for (int64_t i = 1; i < n; i++) {
        const double x = v[i];
        int64_t j = i;
        for (; j > 0 && v[j - 1] > x; j--)
            v[j] = v[j - 1];
        v[j] = x;
    }
    return n == 1 ? v[0] : tide_ddiv(tide_dadd(v[(n - 1) / 2], v[n / 2]), 2.);
}

/** Scratch of one tile's noise estimate: three lists of a row's width (floats), three of its
 *  row count (doubles), and the radix selection's histogram and candidates. */
typedef struct {
    float *d2, *d3, *d5;  /**< nx each; d2 must start zeroed (cfitsio callocs it) */
    double *r2, *r3, *r5; /**< ny each */
    uint32_t *hist;       /**< TIDE_TILE_RADIX_BUCKETS */
    uint32_t *cand;       /**< nx */
} tide_tile_noise_scratch;

/** Buckets of the radix selection's widest digit. */
#define TIDE_TILE_RADIX_BUCKETS 2048

/* One digit of the radix selection: among the @p m keys @p in (all sharing the digits above),
 * the bucket of bits [shift, shift + width) holding the @p *k-th smallest; *k becomes its rank
 * in the bucket, the keys of the bucket are copied to @p out, their count returned. */
TIDE_HD static inline int64_t tide_tile_radix_digit(const uint32_t *in, int64_t m, int shift,
                                                    int width, int64_t *k, uint32_t *hist,
                                                    uint32_t *out, uint32_t *bucket) {
    const uint32_t nb = 1u << width, mask = nb - 1u;
    for (uint32_t b = 0; b < nb; b++)
        hist[b] = 0;
    for (int64_t i = 0; i < m; i++)
        hist[(in[i] >> shift) & mask]++;
    uint32_t b = 0;
    for (int64_t below = 0;; b++) {
        if (below + hist[b] > *k) {
            *k -= below;
            break;
        }
        below += hist[b];
    }
    int64_t n = 0;
    for (int64_t i = 0; i < m; i++) { /* without a branch: out may be in itself (n <= i) */
        const uint32_t key = in[i];
        out[n] = key;
        n += ((key >> shift) & mask) == b;
    }
    *bucket = b;
    return n;
}

/** Element (n - 1) / 2 of the sorted @p a (n >= 1 non-negative floats, no NaN), as
 *  tide_tile_qselect_f gives it, but without reordering @p a and without its branches on the
 *  data: the order of non-negative IEEE floats is that of their bits, selected 11, 11 and 10
 *  bits at a time. */
TIDE_HD static inline float tide_tile_radix_median(const float *a, int64_t n, uint32_t *hist,
                                                   uint32_t *cand) {
    int64_t k = (n - 1) / 2;
    uint32_t b1, b2, b3;
    for (int64_t i = 0; i < n; i++) /* the bits, copied: no type-punned reads of @p a */
        memcpy(&cand[i], &a[i], 4);
    int64_t m = tide_tile_radix_digit(cand, n, 21, 11, &k, hist, cand, &b1);
    m = tide_tile_radix_digit(cand, m, 10, 11, &k, hist, cand, &b2);
    tide_tile_radix_digit(cand, m, 0, 10, &k, hist, cand, &b3);
    const uint32_t bits = b1 << 21 | b2 << 10 | b3;
    float v;
    memcpy(&v, &bits, 4);
    return v;
}

/** Whether @p v is null in a tile that has nulls. */
TIDE_HD static inline int tide_tile_is_null(float v, int nullcheck) {
    return nullcheck && v == TIDE_TILE_FLOAT_NULL;
}

/* One run v1..v9 (@p v) of good pixels: its differences appended to the lists (cfitsio's
 * order of float operations), or a constant stretch counted in @p good. */
TIDE_HD static inline void tide_tile_noise_step(const float *v, const tide_tile_noise_scratch *s,
                                                int64_t *nvals, int64_t *nvals2, int *odd,
                                                int64_t *good) {
    if (!(v[4] == v[5] && v[5] == v[6])) {
        const float d2 = fabsf(tide_fsub(v[4], v[6]));
        s->d2[(*nvals2)++] = d2;
        *odd |= isnan(d2);
    }
    if (!(v[2] == v[3] && v[3] == v[4] && v[4] == v[5] && v[5] == v[6])) {
        const float d3 = fabsf(tide_fsub(tide_fsub(tide_fmul(2.f, v[4]), v[2]), v[6]));
        const float d5 = fabsf(
            tide_fadd(tide_fadd(tide_fsub(tide_fsub(tide_fmul(6.f, v[4]), tide_fmul(4.f, v[2])),
                                          tide_fmul(4.f, v[6])),
                                v[0]),
                      v[8]));
        s->d3[*nvals] = d3;
        s->d5[*nvals] = d5;
        *odd |= isnan(d3) | isnan(d5);
        (*nvals)++;
    } else {
        (*good)++; /* a constant stretch: counted, not measured */
    }
}

/** The noise estimate of the @p nx x @p ny tile @p a (nulls already TIDE_TILE_FLOAT_NULL when
 *  @p nullcheck): the good pixel count, min, max and the three MAD noises. */
TIDE_HD static inline void tide_tile_noise5(const float *a, int64_t nx, int64_t ny, int nullcheck,
                                            const tide_tile_noise_scratch *s, int64_t *ngood,
                                            float *minval, float *maxval, double *noise2,
                                            double *noise3, double *noise5) {
    int64_t good = 0, nrows = 0, nrows2 = 0;
    float lo = FLT_MAX, hi = -FLT_MAX;
    *noise2 = *noise3 = *noise5 = 0.;
    if (nx < 9) {
        nx *= ny;
        ny = 1;
    }
    if (nx < 9) {
        for (int64_t i = 0; i < nx; i++) {
            if (tide_tile_is_null(a[i], nullcheck))
                continue;
            if (a[i] < lo)
                lo = a[i];
            if (a[i] > hi)
                hi = a[i];
            good++;
        }
        *ngood = good, *minval = lo, *maxval = hi;
        return;
    }
    int odd_tile = 0;
    for (int64_t jj = 0; jj < ny; jj++) {
        const float *row = a + jj * nx;
        int64_t nvals = 0, nvals2 = 0;
        int odd = 0;      /* a NaN difference in this row (from infinite sums): only
                             quick_select's answer is cfitsio's then */
        if (!nullcheck) { /* every pixel good: the runs are the row's own windows */
            for (int64_t ii = 0; ii < nx; ii++) {
                lo = row[ii] < lo ? row[ii] : lo;
                hi = row[ii] > hi ? row[ii] : hi;
            }
            good += 8;
            for (int64_t ii = 8; ii < nx; ii++)
                tide_tile_noise_step(row + ii - 8, s, &nvals, &nvals2, &odd, &good);
        } else {
            float v[9];
            int64_t ii = 0;
            int have = 0; /* pixels v1..v8 found so far */
            for (; ii < nx && have < 8; ii++) {
                if (tide_tile_is_null(row[ii], nullcheck))
                    continue;
                v[have++] = row[ii];
                good++;
                if (row[ii] < lo)
                    lo = row[ii];
                if (row[ii] > hi)
                    hi = row[ii];
            }
            if (have < 8)
                continue;
            for (; ii < nx; ii++) {
                if (tide_tile_is_null(row[ii], nullcheck))
                    continue;
                v[8] = row[ii];
                if (v[8] < lo)
                    lo = v[8];
                if (v[8] > hi)
                    hi = v[8];
                tide_tile_noise_step(v, s, &nvals, &nvals2, &odd, &good);
                for (int k = 0; k < 8; k++)
                    v[k] = v[k + 1];
            }
        }
        good += nvals;
        if (nvals == 0)
            continue;
        if (nvals == 1) {
            if (nvals2 == 1)
                s->r2[nrows2++] = s->d2[0];
            s->r3[nrows] = s->d3[0];
            s->r5[nrows] = s->d5[0];
        } else {
            /* d3 and d5 are written afresh for each row, so any exact selection of a
             * NaN-free list gives cfitsio's medians. d2 is read over nvals entries as cfitsio
             * reads it, the ones after nvals2 left by earlier rows' quick_select: its
             * reordering must be cfitsio's on every row but a tile's last, and a NaN of any
             * earlier row may linger there. */
            odd_tile |= odd;
            const int exact2 = odd_tile || jj + 1 < ny;
            if (nvals2 > 1) /* over nvals entries, as cfitsio */
                s->r2[nrows2++] = exact2 ? tide_tile_qselect_f(s->d2, nvals)
                                         : tide_tile_radix_median(s->d2, nvals, s->hist, s->cand);
            s->r3[nrows] = odd ? tide_tile_qselect_f(s->d3, nvals)
                               : tide_tile_radix_median(s->d3, nvals, s->hist, s->cand);
            s->r5[nrows] = odd ? tide_tile_qselect_f(s->d5, nvals)
                               : tide_tile_radix_median(s->d5, nvals, s->hist, s->cand);
        }
        nrows++;
    }
    double x3 = 0., x5 = 0., x2 = 0.;
    if (nrows > 0) {
        x3 = tide_tile_median_rows(s->r3, nrows);
        x5 = tide_tile_median_rows(s->r5, nrows);
    }
    if (nrows2 > 0)
        x2 = tide_tile_median_rows(s->r2, nrows2);
    *ngood = good, *minval = lo, *maxval = hi;
    *noise2 = tide_dmul(1.0483579, x2);
    *noise3 = tide_dmul(0.6052697, x3);
    *noise5 = tide_dmul(0.1772048, x5);
}

/** Quantize the @p nx x @p ny tile @p a (nulls already TIDE_TILE_FLOAT_NULL when
 *  @p nullcheck) into @p q (may alias @p a) with SUBTRACTIVE_DITHER_1 at level @p qlevel (> 0),
 *  the dither walk starting at index @p i0 of @p rand (tile k of ZDITHER0 d: (k + d - 2) mod
 *  10000, k 1-based). Returns 1 with *scale, *zero set, or 0 when the tile is not quantized. */
TIDE_HD static inline int tide_tile_quantize(const float *a, int64_t nx, int64_t ny, int nullcheck,
                                             float qlevel, const float *rand, int i0,
                                             const tide_tile_noise_scratch *s, int32_t *q,
                                             double *scale, double *zero) {
    const int64_t n = nx * ny;
    if (n <= 1)
        return 0;
    int64_t ngood;
    float lo, hi;
    double n2, n3, n5, stdev;
    tide_tile_noise5(a, nx, ny, nullcheck, s, &ngood, &lo, &hi, &n2, &n3, &n5);
    if (nullcheck && ngood == 0) { /* all null: dummy figures, as cfitsio */
        lo = 0.f;
        hi = 1.f;
        stdev = 1.;
    } else {
        stdev = n3;
        if (n2 != 0. && n2 < stdev)
            stdev = n2;
        if (n5 != 0. && n5 < stdev)
            stdev = n5;
    }
    const double delta = tide_ddiv(stdev, (double)qlevel);
    if (delta == 0.)
        return 0;
    const double range = tide_ddiv((double)tide_fsub(hi, lo), delta);
    if (range > 2. * 2147483647. - 10)
        return 0;
    double zp;
    if (ngood == n) {
        if (range < 2147483647. - 10) {
            const int64_t f = (int64_t)tide_dadd(tide_ddiv((double)lo, delta), 0.5);
            zp = tide_dmul((double)f, delta);
        } else {
            zp = tide_ddiv(tide_dadd((double)lo, (double)hi), 2.);
        }
    } else {
        zp = tide_dsub((double)lo, tide_dmul(delta, (double)(TIDE_TILE_NULL_VALUE + 10)));
    }
    int i0w = i0, idx = (int)((double)rand[i0] * 500.); /* 500. as cfitsio's start */
    for (int64_t i = 0; i < n; i++) {
        const float v = a[i];
        if (ngood != n && v == TIDE_TILE_FLOAT_NULL)
            q[i] = TIDE_TILE_NULL_VALUE;
        else
            q[i] = tide_tile_nint(tide_dsub(
                tide_dadd(tide_ddiv(tide_dsub((double)v, zp), delta), (double)rand[idx]), 0.5));
        tide_tile_rand_next(rand, &i0w, &idx);
    }
    *scale = delta;
    *zero = zp;
    return 1;
}

#endif
