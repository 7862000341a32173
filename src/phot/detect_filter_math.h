/* detect_filter_math.h — the per-pixel matched-filter S/N (detect.h, steps 1-2), shared by the
 * CPU and CUDA twins. */
#ifndef TIDE_DETECT_FILTER_MATH_H
#define TIDE_DETECT_FILTER_MATH_H
#include <math.h>
#include <stdint.h>

#include "core/hd.h"
#include "phot/detect_kernels.h"

/** Polynomial terms 1, u, v, u^2, uv, v^2, ... (total degree <= @p degree, within a degree
 *  falling powers of u) at normalised position u, v; returns the number of terms. */
TIDE_HD static inline int tide_det_poly_terms(int degree, double u, double v, double *t) {
    int n = 0;
    for (int g = 0; g <= degree; g++) {
        for (int j = 0; j <= g; j++) {
            double a = 1.0;
            for (int q = 0; q < g - j; q++) a *= u;
            for (int q = 0; q < j; q++) a *= v;
            t[n++] = a;
        }
    }
    return n;
}

/** Normalised coordinate (2x - (N-1)) / (N-1) of the PSF model (0 when N == 1). */
TIDE_HD static inline double tide_det_unorm(double x, int64_t n) {
    return n > 1 ? (2.0 * x - (double)(n - 1)) / (double)(n - 1) : 0.0;
}

/** Coefficients c_b at pixel (x, y) of the filter's PSF model. */
TIDE_HD static inline void tide_det_coefs(const tide_det_filter *f, int64_t x, int64_t y,
                                          double *c) {
    double t[TIDE_DET_MAX_COEF];
    int nt = tide_det_poly_terms(f->degree, tide_det_unorm((double)x, f->width),
                                 tide_det_unorm((double)y, f->height), t);
    for (int b = 0; b < f->nbasis; b++) {
        double s = 0.0;
        for (int k = 0; k < nt && k < f->ncoef; k++) s += f->coef[b * f->ncoef + k] * t[k];
        c[b] = s;
    }
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
    double c[TIDE_DET_MAX_BASIS];
    tide_det_coefs(f, x, y, c);
    double F = b == 0 ? 0.0 : acc;
    F += c[b] * (double)r;
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
