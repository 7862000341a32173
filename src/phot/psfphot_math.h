/* psfphot_math.h — the weighted linear least-squares PSF fit, per pixel and per source,
 * shared by the CPU and CUDA twins. Model d_i = F P_i (+ B), weights w_i = 1/σ_i²; the
 * normal equations need only the sums below, and χ² of the solution follows from them:
 * χ² = Σ w d² - F Σ w d P - B Σ w d (Bevington & Robinson, ch. 6–7). */
#ifndef TIDE_PSFPHOT_MATH_H
#define TIDE_PSFPHOT_MATH_H
#include <math.h>
#include <stdint.h>
#include "core/hd.h"

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
    if (gain_eff > 0.0 && F > 0.0 && P > 0.0) v += F * P / gain_eff;
    return v;
}

/* Solve for F (and B); returns 0 when the system is singular or has no freedom. */
TIDE_HD static inline int tide_psffit_solve(const tide_psffit_sums *s, int fit_bkg, double *F,
                                            double *B, double *ferr, double *chi2) {
    const int npar = fit_bkg ? 2 : 1;
    if (!(s->npix > npar) || !(s->spp > 0.0)) return 0;
    if (!fit_bkg) {
        *F = s->sdp / s->spp;
        *B = 0.0;
        *ferr = sqrt(1.0 / s->spp);
        *chi2 = (s->sdd - *F * s->sdp) / (s->npix - npar);
    } else {
        const double det = s->spp * s->s1 - s->sp * s->sp;
        if (!(det > 1e-12 * s->spp * s->s1)) return 0;
        *F = (s->sdp * s->s1 - s->sp * s->sd) / det;
        *B = (s->spp * s->sd - s->sp * s->sdp) / det;
        *ferr = sqrt(s->s1 / det);
        *chi2 = (s->sdd - *F * s->sdp - *B * s->sd) / (s->npix - npar);
    }
    if (*chi2 < 0.0) *chi2 = 0.0;
    return 1;
}

/* Image pixel of stamp pixel (u, v) for a source at (x, y): round(x) - side/2 + u. */
TIDE_HD static inline int64_t tide_psffit_origin(double c, int side) {
    return (int64_t)floor(c + 0.5) - side / 2;
}

#endif
