/* test_reduce_ref.h — random test images and naive float64 references for the reduction
 * tests (unit and GPU). Everything here is deliberately simple: sort, loop, long double. */
#ifndef TEST_REDUCE_REF_H
#define TEST_REDUCE_REF_H
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "common/test_rng.h"
#include "tide/tide.h"

static inline uint64_t ref_rng_next(uint64_t *s) {
    return trng_splitmix64(s);
}
static inline double ref_uniform(uint64_t *s) {
    return (double)(ref_rng_next(s) >> 11) * 0x1.0p-53;
}
static inline double ref_gauss(uint64_t *s) { /* Box-Muller */
    double u = ref_uniform(s), v = ref_uniform(s);
    if (u < 1e-300)
        u = 1e-300;
    return sqrt(-2.0 * log(u)) * cos(6.283185307179586 * v);
}

/* A sky-like image: offset + Gaussian noise, a few bright outliers, NaN and Inf at the rate
 * @p bad, mask bits (NODATA, SATURATED, COSMIC) at the rate @p masked when a mask exists. */
static inline void ref_fill(tide_image *im, uint64_t seed, double offset, double bad,
                            double masked) {
    uint64_t s = seed;
    for (int64_t y = 0; y < im->height; y++)
        for (int64_t x = 0; x < im->width; x++) {
            const int64_t o = y * im->stride + x;
            double v = offset + 10.0 * ref_gauss(&s);
            const double u = ref_uniform(&s);
            if (u < 0.01)
                v += 500.0 * ref_uniform(&s); /* stars / cosmics: the clipping has work */
            float f = (float)v;
            const double b = ref_uniform(&s);
            if (b < bad * 0.8)
                f = NAN;
            else if (b < bad * 0.9)
                f = INFINITY;
            else if (b < bad)
                f = -INFINITY;
            im->pix[o] = f;
            if (im->mask) {
                const double m = ref_uniform(&s);
                im->mask[o] = m < masked / 3       ? TIDE_MASK_NODATA
                              : m < 2 * masked / 3 ? TIDE_MASK_SATURATED
                              : m < masked         ? TIDE_MASK_COSMIC
                                                   : 0;
            }
        }
}

/* Valid values (finite, (mask & bits) == 0) in row-major order; returns the count. */
static inline int64_t ref_valid(const tide_image *im, uint16_t bits, double *out) {
    int64_t n = 0;
    for (int64_t y = 0; y < im->height; y++)
        for (int64_t x = 0; x < im->width; x++) {
            const int64_t o = y * im->stride + x;
            const float f = im->pix[o];
            if (!isfinite(f) || (im->mask && (im->mask[o] & bits)))
                continue;
            out[n++] = f;
        }
    return n;
}

typedef struct {
    int64_t n;
    double sum, mean, std, min, max;
} ref_stats_t;

static inline ref_stats_t ref_stats(const double *v, int64_t n) {
    ref_stats_t r = {n, 0, NAN, NAN, NAN, NAN};
    long double s = 0, m2 = 0;
    for (int64_t i = 0; i < n; i++)
        s += v[i];
    r.sum = (double)s;
    if (n == 0)
        return r;
    const long double mean = s / n;
    r.min = r.max = v[0];
    for (int64_t i = 0; i < n; i++) {
        m2 += (v[i] - mean) * (v[i] - mean);
        r.min = v[i] < r.min ? v[i] : r.min;
        r.max = v[i] > r.max ? v[i] : r.max;
    }
    r.mean = (double)mean;
    r.std = (double)sqrtl(m2 / n);
    return r;
}

static inline int ref_cmp(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* numpy.percentile(v, q) with the default 'linear' method, v sorted. */
static inline double ref_percentile_sorted(const double *v, int64_t n, double q) {
    const double h = (double)(n - 1) * (q / 100.0);
    int64_t j = (int64_t)floor(h);
    if (j > n - 1)
        j = n - 1;
    const int64_t j1 = j + 1 < n ? j + 1 : n - 1;
    const double g = h - (double)j, a = v[j], b = v[j1], d = b - a;
    return g >= 0.5 ? b - d * (1.0 - g) : a + d * g;
}

static inline double ref_median_sorted(const double *v, int64_t n) {
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

/* astropy sigma_clipped_stats(v, sigma, maxiters), cenfunc median, stdfunc std, on doubles.
 * @p v is scratch (reordered). Returns kept count; mean/median/std through pointers. */
static inline int64_t ref_sigclip(double *v, int64_t n, double sigma, int maxiters, double *mean,
                                  double *median, double *std, int *iters) {
    int it = 0;
    qsort(v, (size_t)n, sizeof *v, ref_cmp); /* filtering below keeps it sorted */
    for (;;) {
        ref_stats_t s = ref_stats(v, n);
        const double med = n ? ref_median_sorted(v, n) : NAN;
        *mean = s.mean;
        *median = med;
        *std = s.std;
        if (n == 0 || (maxiters > 0 && it >= maxiters))
            break;
        const double lo = med - s.std * sigma, hi = med + s.std * sigma;
        int64_t k = 0;
        for (int64_t i = 0; i < n; i++)
            if (v[i] >= lo && v[i] <= hi)
                v[k++] = v[i];
        it++;
        if (k == n)
            break;
        n = k;
    }
    *iters = it;
    return n;
}

/* |a - b| <= rel·max(|a|, |b|), or both NaN. */
static inline int ref_close(double a, double b, double rel) {
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    const double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
    return fabs(a - b) <= rel * m;
}

#endif
