/* psfphot_math.h — the weighted linear least-squares PSF fit, per pixel and per source,
 * shared by the CPU and CUDA twins. Model d_i = F P_i (+ B), weights w_i = 1/σ_i²; the
 * normal equations need only the sums below, and χ² of the solution follows from them:
 * χ² = Σ w d² - F Σ w d P - B Σ w d (Bevington & Robinson, ch. 6–7). */
#ifndef TIDE_PSFPHOT_MATH_H
#define TIDE_PSFPHOT_MATH_H
#include <math.h>
#include <stdint.h>
#include "core/gpu/hd.h"
#include "aperture_kernels.h"
#include "reduction/psf/psf_math.h"
#include "tide/photometry.h"

typedef struct tide_psffit_sums {
    double spp, sdp, sp, sd, s1, sdd; /* Σw P², Σw d P, Σw P, Σw d, Σw, Σw d² */
    double npix;
} tide_psffit_sums;

/* Add pixel (d, P) with variance v: the sky variance plus, after the first pass, the model's
 * own Poisson variance max(F P, 0)/gain_eff. */
TIDE_HD static inline void tide_psffit_add(tide_psffit_sums *s, double d, double P, double v) {
    const double w = 1.0 / v;
    s->spp += w * P * P;
    s->sdp += w * d * P;
    s->sp += w * P;
    s->sd += w * d;
    s->s1 += w;
    s->sdd += w * d * d;
    s->npix += 1.0;
}

TIDE_HD static inline double tide_psffit_var(double sky_var, double F, double P, double gain_eff) {
    double v = sky_var;
    if (gain_eff > 0.0 && F > 0.0 && P > 0.0)
        v += F * P / gain_eff;
    return v;
}

/* Solve for F (and B); returns 0 when the system is singular or has no freedom. */
TIDE_HD static inline int tide_psffit_solve(const tide_psffit_sums *s, int fit_bkg, double *F,
                                            double *B, double *ferr, double *chi2) {
    const int npar = fit_bkg ? 2 : 1;
    if (!(s->npix > npar) || !(s->spp > 0.0))
        return 0;
    if (!fit_bkg) {
        *F = s->sdp / s->spp;
        *B = 0.0;
        *ferr = sqrt(1.0 / s->spp);
        *chi2 = (s->sdd - *F * s->sdp) / (s->npix - npar);
    } else {
        const double det = s->spp * s->s1 - s->sp * s->sp;
        if (!(det > 1e-12 * s->spp * s->s1))
            return 0;
        *F = (s->sdp * s->s1 - s->sp * s->sd) / det;
        *B = (s->spp * s->sd - s->sp * s->sdp) / det;
        *ferr = sqrt(s->s1 / det);
        *chi2 = (s->sdd - *F * s->sdp - *B * s->sd) / (s->npix - npar);
    }
    if (*chi2 < 0.0)
        *chi2 = 0.0;
    return 1;
}

/* Image pixel of stamp pixel (u, v) for a source at (x, y): round(x) - side/2 + u. */
TIDE_HD static inline int64_t tide_psffit_origin(double c, int side) {
    return (int64_t)floor(c + 0.5) - side / 2;
}

/* ---- the local PSF stamp of a source, evaluated from the model (tide_psf_eval_pixel's math,
 * split into per-pixel steps so that a GPU block can share them out; psfphot_cpu.c runs the
 * same steps in order and reproduces tide_psf_eval_pixel exactly). ---- */

#define PSFPHOT_MAXCOEF ((TIDE_PSF_MAX_DEGREE + 1) * (TIDE_PSF_MAX_DEGREE + 2) / 2)

/** Position scaled to [-1, 1] over a frame side of n pixels, clamped (psf.h convention). */
TIDE_HD static inline double psfphot_scaled(double x, int64_t n) {
    if (n <= 1)
        return 0.0;
    const double u = (2.0 * x - (double)(n - 1)) / (double)(n - 1);
    return u < -1.0 ? -1.0 : (u > 1.0 ? 1.0 : u);
}

/** Coefficient of basis b at scaled (u, v): sum_t coef[b*ncoef+t] term_t(u, v), terms
 *  1, u, v, u^2, uv, v^2, ... (tide_psf_terms). */
TIDE_HD static inline double psfphot_coef(const double *coef, int ncoef, int degree, int b,
                                          double u, double v) {
    double s = 0.0;
    int k = 0;
    for (int d = 0; d <= degree; d++)
        for (int j = 0; j <= d; j++) {
            double t = 1.0;
            for (int a = 0; a < d - j; a++)
                t *= u;
            for (int q = 0; q < j; q++)
                t *= v;
            s += coef[b * ncoef + k] * t;
            k++;
        }
    return s;
}

/** Centred model pixel p before normalisation: sum_b c[b] basis_b[p], in double. */
TIDE_HD static inline double psfphot_centred(const float *basis, int npix, int nbasis,
                                             const double *c, int p) {
    double s = 0.0;
    for (int b = 0; b < nbasis; b++)
        s += c[b] * (double)basis[(size_t)b * npix + p];
    return s;
}

/** Integer and fractional parts of the Lanczos shift that puts the centred stamp at the
 *  source's sub-pixel offset: the stamp pixel (i, j) samples the centred PSF at
 *  (i - fx, j - fy), fx = x - round(x) in [-0.5, 0.5). */
TIDE_HD static inline void psfphot_shift_setup(double x, double y, int *ix, int *iy, double *frx,
                                               double *fry) {
    const double X = -(x - floor(x + 0.5)), Y = -(y - floor(y + 0.5));
    const double fx = floor(X), fy = floor(Y);
    *ix = (int)fx;
    *iy = (int)fy;
    *frx = X - fx;
    *fry = Y - fy;
}

/** The shift is separable: stamp pixel (i, j) = sum_b wy[b] R(j + iy + b - 2, i) over rows
 *  inside the stamp, with R(py, i) = sum_a wx[a] c[py][i + ix + a - 2] over columns inside
 *  the stamp (Lanczos-3, samples off the stamp count 0). Row pass: R(py, i) of the
 *  normalised centred stamp c. Summed in tap order, so the two passes give the same bits as
 *  the direct 6×6 sum with rows outer (tide_psf_eval_pixel) at a third of the work. */
TIDE_HD static inline double psfphot_shift_row(const float *c, int side, int i, int py, int ix,
                                               const double *wx) {
    double r = 0.0;
    for (int a = 0; a < 2 * PSF_LANCZOS_A; a++) {
        const int px = i + ix + a - (PSF_LANCZOS_A - 1);
        if (px >= 0 && px < side)
            r += wx[a] * (double)c[py * side + px];
    }
    return r;
}

/** Column pass: stamp pixel (i, j) from the row-pass values R (side × side, row py at
 *  R[py * side]). */
TIDE_HD static inline double psfphot_shift_col(const double *R, int side, int i, int j, int iy,
                                               const double *wy) {
    double acc = 0.0;
    for (int b = 0; b < 2 * PSF_LANCZOS_A; b++) {
        const int py = j + iy + b - (PSF_LANCZOS_A - 1);
        if (py < 0 || py >= side)
            continue;
        acc += wy[b] * R[py * side + i];
    }
    return acc;
}

/** Fit-pixel test of image pixel (i, j) for a source at (cx, cy) with model value p: 0 when it
 *  enters the fit (then *d, *sv are its value and sky variance), -1 when it lies outside the
 *  fit radius (fr2 = fit_radius^2, used when fit_radius > 0), else the flag it raises. */
TIDE_HD static inline int32_t psfphot_pixel(const tide_ap_planes *im, int64_t i, int64_t j,
                                            double cx, double cy, double fit_radius, double fr2,
                                            float p, float *d, float *sv) {
    if (fit_radius > 0.0 && (i - cx) * (i - cx) + (j - cy) * (j - cy) > fr2)
        return -1;
    if (i < 0 || j < 0 || i >= im->width || j >= im->height)
        return TIDE_PHOT_TRUNCATED;
    *d = im->pix[j * im->stride + i];
    *sv = im->var[j * im->var_stride + i];
    if ((im->mask && (im->mask[j * im->stride + i] & im->mask_bits)) || !isfinite(*d) ||
        !isfinite(*sv) || !(*sv > 0.0f) || !isfinite(p))
        return TIDE_PHOT_MASKED;
    return 0;
}

#endif
