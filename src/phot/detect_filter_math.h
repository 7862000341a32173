/* detect_filter_math.h — the per-pixel matched-filter S/N (detect.h, steps 1-2), shared by the
 * CPU and CUDA twins. */
#ifndef TIDE_DETECT_FILTER_MATH_H
#define TIDE_DETECT_FILTER_MATH_H
#include <math.h>
#include <stdint.h>

#include "core/hd.h"
#include "phot/detect_kernels.h"

/** Normalised coordinate (2x - (N-1)) / (N-1) of the PSF model (0 when N == 1). */
TIDE_HD static inline double tide_det_unorm(double x, int64_t n) {
    return n > 1 ? (2.0 * x - (double)(n - 1)) / (double)(n - 1) : 0.0;
}

/** Coefficient c_b at pixel (x, y) of the filter's PSF model: sum over the polynomial terms
 *  of coef[b][k] t_k, the terms t = 1, u, v, u^2, uv, v^2, ... (total degree <= f->degree,
 *  within a degree falling powers of u), each term formed on the fly so
 *  no array is indexed at run time (on the GPU such an array lives in local memory, which made
 *  the per-pixel passes several times slower than their bytes). */
TIDE_HD static inline double tide_det_coef_one(const tide_det_filter *f, int b, double u,
                                               double v) {
    const double *cb = f->coef + b * f->ncoef;
    double s = 0.0;
    int k = 0;
    for (int g = 0; g <= f->degree; g++) {
        for (int j = 0; j <= g; j++, k++) {
            if (k >= f->ncoef) return s;
            double a = 1.0;
            for (int q = 0; q < g - j; q++) a *= u;
            for (int q = 0; q < j; q++) a *= v;
            s += cb[k] * a;
        }
    }
    return s;
}

/** Coefficients c_b at pixel (x, y) of the filter's PSF model (tide_det_coef_one per basis). */
TIDE_HD static inline void tide_det_coefs(const tide_det_filter *f, int64_t x, int64_t y,
                                          double *c) {
    const double u = tide_det_unorm((double)x, f->width), v = tide_det_unorm((double)y, f->height);
    for (int b = 0; b < f->nbasis; b++) c[b] = tide_det_coef_one(f, b, u, v);
}

/** S/N at one pixel: F = sum c_b r_b, E = sum_ab c_a c_b G_ab, SNR = F / (rms sqrt(E)); NaN
 *  where the pixel has no data (see detect.h). @p r holds the nbasis correlations there. */
TIDE_HD static inline float tide_det_snr_pixel(const tide_det_filter *f, int64_t x, int64_t y,
                                               const float *r, float value, float rms,
                                               uint16_t mask) {
    if (!(isfinite(value) && isfinite(rms) && rms > 0.0f) || (mask & f->nodata_bits))
        return NAN;
    double c[TIDE_DET_MAX_BASIS];
    tide_det_coefs(f, x, y, c);
    double F = 0.0, E = 0.0;
    for (int a = 0; a < f->nbasis; a++) {
        F += c[a] * (double)r[a];
        double ea = 0.0;
        for (int b = 0; b < f->nbasis; b++) ea += c[b] * f->gram[a * f->nbasis + b];
        E += c[a] * ea;
    }
    if (!(E > 0.0)) return NAN;
    return (float)(F / ((double)rms * sqrt(E)));
}

/** Streamed form (detect_kernels.h, tide_det_snr_accum): the numerator after basis @p b,
 *  @p acc the sum over bases 0..b-1 (ignored when b == 0), with the same operations in the
 *  same order as tide_det_snr_pixel's F, so the two agree bitwise. */
TIDE_HD static inline double tide_det_snr_accum_pixel(const tide_det_filter *f, int64_t x,
                                                      int64_t y, int b, double acc, float r) {
    const double cb = tide_det_coef_one(f, b, tide_det_unorm((double)x, f->width),
                                        tide_det_unorm((double)y, f->height));
    double F = b == 0 ? 0.0 : acc;
    F += cb * (double)r;
    return F;
}

/** S/N at one pixel from the numerator F of tide_det_snr_accum_pixel: E and the result as in
 *  tide_det_snr_pixel. */
TIDE_HD static inline float tide_det_snr_from_sum(const tide_det_filter *f, int64_t x, int64_t y,
                                                  double F, float value, float rms,
                                                  uint16_t mask) {
    if (!(isfinite(value) && isfinite(rms) && rms > 0.0f) || (mask & f->nodata_bits))
        return NAN;
    double c[TIDE_DET_MAX_BASIS];
    tide_det_coefs(f, x, y, c);
    double E = 0.0;
    for (int a = 0; a < f->nbasis; a++) {
        double ea = 0.0;
        for (int b = 0; b < f->nbasis; b++) ea += c[b] * f->gram[a * f->nbasis + b];
        E += c[a] * ea;
    }
    if (!(E > 0.0)) return NAN;
    return (float)(F / ((double)rms * sqrt(E)));
}

/** On-pixel test of the segmentation (NaN is off). */
TIDE_HD static inline int tide_det_on(float snr, float thresh) { return snr >= thresh; }

#endif
