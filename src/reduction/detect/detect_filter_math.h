/* detect_filter_math.h — the per-pixel matched-filter S/N (detect.h, steps 1-2), shared by the
 * CPU and CUDA twins. */
#ifndef TIDE_DETECT_FILTER_MATH_H
#define TIDE_DETECT_FILTER_MATH_H
#include <math.h>
#include <stdint.h>

#include "core/gpu/hd.h"
#include "core/gpu/unfused.h"
#include "detect_kernels.h"

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
            if (k >= f->ncoef)
                return s;
            double a = 1.0;
            for (int q = 0; q < g - j; q++)
                a *= u;
            for (int q = 0; q < j; q++)
                a *= v;
            s += cb[k] * a;
        }
    }
    return s;
}

/** Coefficients c_b at pixel (x, y) of the filter's PSF model (tide_det_coef_one per basis). */
TIDE_HD static inline void tide_det_coefs(const tide_det_filter *f, int64_t x, int64_t y,
                                          double *c) {
    const double u = tide_det_unorm((double)x, f->width), v = tide_det_unorm((double)y, f->height);
    for (int b = 0; b < f->nbasis; b++)
        c[b] = tide_det_coef_one(f, b, u, v);
}

/** S/N at one pixel: F = sum c_b r_b, E = sum_ab c_a c_b G_ab, SNR = F / (rms sqrt(E)); NaN
 *  where the pixel has no data (see detect.h). @p r holds the nbasis correlations there. The
 *  direct formula, the tests' reference for the row form both twins compute. */
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
        for (int b = 0; b < f->nbasis; b++)
            ea += c[b] * f->gram[a * f->nbasis + b];
        E += c[a] * ea;
    }
    if (!(E > 0.0))
        return NAN;
    return (float)(F / ((double)rms * sqrt(E)));
}

/* From here on, products and sums are rounded one by one on the GPU too (tide_dmul,
 * tide_dadd: core/gpu/unfused.h), so that the row form gives the CPU's bits. */

/** Along a row (normalised v) each coefficient c_b is a polynomial in u alone: Pb[p]
 *  multiplies u^p in c_b (p <= degree). The row form of both twins' S/N (detect_snr_cpu.c,
 *  detect_snr_cuda.cu), formed once per row; bases are independent (a thread each on the
 *  GPU), every Pb[p] summed over the model's terms in their order. */
TIDE_HD static inline void tide_det_row_coef(const tide_det_filter *f, double v, int b,
                                             double *Pb) {
    const int deg = f->degree;
    for (int p = 0; p <= deg; p++)
        Pb[p] = 0.0;
    int k = 0;
    for (int g = 0; g <= deg; g++)
        for (int j = 0; j <= g; j++, k++) {
            if (k >= f->ncoef)
                continue;
            double vq = 1.0;
            for (int q = 0; q < j; q++)
                vq = tide_dmul(vq, v);
            Pb[g - j] = tide_dadd(Pb[g - j], tide_dmul(f->coef[b * f->ncoef + k], vq));
        }
}

/** The kernel energy E = sum_ab G_ab c_a c_b along a row as a polynomial in u: its
 *  coefficient of u^q (q <= 2 degree) from the row's P (P[b * (degree + 1) + p], as
 *  tide_det_row_coef), summed over a, b, p in order (r = q - p); powers are independent. */
TIDE_HD static inline double tide_det_row_energy(const tide_det_filter *f, const double *P, int q) {
    const int deg = f->degree, nb = f->nbasis, d1 = deg + 1;
    double Q = 0.0;
    for (int a = 0; a < nb; a++)
        for (int b = 0; b < nb; b++) {
            const double g = f->gram[a * nb + b];
            for (int p = 0; p <= deg; p++) {
                const int r = q - p;
                if (r < 0 || r > deg)
                    continue;
                Q = tide_dadd(Q, tide_dmul(tide_dmul(g, P[a * d1 + p]), P[b * d1 + r]));
            }
        }
    return Q;
}

/** The polynomial c[0] + c[1] u + ... + c[deg] u^deg by Horner's rule, each step rounded. */
TIDE_HD static inline double tide_det_horner(const double *c, int deg, double u) {
    double s = c[deg];
    for (int p = deg - 1; p >= 0; p--)
        s = tide_dadd(tide_dmul(s, u), c[p]);
    return s;
}

/** S/N from the numerator F and the kernel energy E at a pixel of value @p value, noise
 *  @p rms and mask @p mask: NaN where the pixel has no data or E <= 0. */
TIDE_HD static inline float tide_det_snr_of(double F, double E, float value, float rms,
                                            uint16_t mask, uint16_t nodata_bits) {
    if (!(isfinite(value) && isfinite(rms) && rms > 0.0f) || (mask & nodata_bits) || !(E > 0.0))
        return NAN;
    return (float)(F / ((double)rms * sqrt(E)));
}

/** On-pixel test of the segmentation (NaN is off). */
TIDE_HD static inline int tide_det_on(float snr, float thresh) {
    return snr >= thresh;
}

#endif
