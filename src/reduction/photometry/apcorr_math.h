/* apcorr_math.h — evaluation of the aperture-correction model and the optimal-radius law,
 * shared by the CPU and CUDA twins. C(r; x, y): on the radius grid r_k = r_min + k dr each
 * C_k is a polynomial in u = (2x - (W-1))/(W-1), v = (2y - (H-1))/(H-1) with the terms
 * 1, u, v, u², uv, v², u³, ... (the order of tide_psf_model); between grid radii C is
 * interpolated linearly (the growth curve is smooth on a 0.1 px grid). */
#ifndef TIDE_APCORR_MATH_H
#define TIDE_APCORR_MATH_H
#include <math.h>
#include <stdint.h>
#include "core/gpu/hd.h"

#define TIDE_APCORR_MAX_DEGREE 4
#define TIDE_APCORR_MAX_COEF 15

/* The polynomial terms up to degree at (u, v); returns their number. */
TIDE_HD static inline int tide_apcorr_terms(int degree, double u, double v, double *t) {
    int k = 0;
    for (int d = 0; d <= degree; d++)
        for (int q = 0; q <= d; q++) {
            /* u^(d-q) v^q */
            double a = 1.0;
            for (int e = 0; e < d - q; e++)
                a *= u;
            for (int e = 0; e < q; e++)
                a *= v;
            t[k++] = a;
        }
    return k;
}

TIDE_HD static inline double tide_apcorr_scaled(double c, int64_t size) {
    return size > 1 ? (2.0 * c - (double)(size - 1)) / (double)(size - 1) : 0.0;
}

/* The model's plain data, as the kernels see it (coef and err may be device pointers). */
typedef struct tide_apcorr_table {
    int64_t width, height;
    double r_min, r_max, dr;
    int nrad, degree, ncoef;
    double law_a, law_b;
    const double *coef; /* nrad * ncoef */
    const double *err;  /* nrad */
} tide_apcorr_table;

/* Optimal radius for a detection S/N; *clipped when the law left [r_min, r_max]. */
TIDE_HD static inline double tide_apcorr_law(const tide_apcorr_table *t, double snr, int *clipped) {
    double r = snr > 0.0 && isfinite(snr) ? pow(10.0, t->law_a * log10(snr) + t->law_b) : t->r_min;
    *clipped = !(snr > 0.0 && isfinite(snr));
    if (r < t->r_min) {
        r = t->r_min;
        *clipped = 1;
    }
    if (r > t->r_max) {
        r = t->r_max;
        *clipped = 1;
    }
    return r;
}

/* C and σ_C at radius r and position (x, y). */
TIDE_HD static inline void tide_apcorr_at(const tide_apcorr_table *t, double r, double x, double y,
                                          double *c, double *c_err) {
    double terms[TIDE_APCORR_MAX_COEF];
    const int nt = tide_apcorr_terms(t->degree, tide_apcorr_scaled(x, t->width),
                                     tide_apcorr_scaled(y, t->height), terms);
    double fk = (r - t->r_min) / t->dr;
    if (fk < 0.0)
        fk = 0.0;
    if (fk > t->nrad - 1)
        fk = t->nrad - 1;
    int k0 = (int)floor(fk);
    if (k0 > t->nrad - 2)
        k0 = t->nrad - 2;
    if (k0 < 0)
        k0 = 0;
    const int k1 = t->nrad > 1 ? k0 + 1 : 0;
    const double f = t->nrad > 1 ? fk - k0 : 0.0;
    double c0 = 0.0, c1 = 0.0;
    for (int i = 0; i < nt; i++) {
        c0 += t->coef[k0 * t->ncoef + i] * terms[i];
        c1 += t->coef[k1 * t->ncoef + i] * terms[i];
    }
    *c = c0 + f * (c1 - c0);
    *c_err = t->err[k0] + f * (t->err[k1] - t->err[k0]);
}

/* FLUX_OPT and its error from the aperture flux at the optimal radius (photometry.h):
 * F/C, sqrt((σ_F/C)² + (F σ_C / C²)²). */
TIDE_HD static inline void tide_apcorr_correct(double f, double ferr, double c, double c_err,
                                               double *fo, double *fe) {
    if (!(c > 0.0)) {
        *fo = NAN;
        *fe = NAN;
        return;
    }
    *fo = f / c;
    const double a = ferr / c, b = f * c_err / (c * c);
    *fe = sqrt(a * a + b * b);
}

#endif
