/* apcorr_internal.h — the small least-squares fits behind the aperture-correction model
 * (host side: they see at most a few hundred calibration stars). */
#ifndef TIDE_APCORR_INTERNAL_H
#define TIDE_APCORR_INTERNAL_H
#include <stdint.h>

/* Fit val ≈ Σ_t coef_t term_t(u, v) (degree as apcorr_math.h) with iterated clipping at
 * sigma × rms (up to iters rounds). keep (n) is in/out: 1 = used. Returns 0, or -1 when
 * the system is singular / fewer points than terms. *rms: rms of the kept residuals. */
int tide_apcorr_fit_poly(int n, const double *u, const double *v, const double *val,
                         int degree, double sigma, int iters, unsigned char *keep, double *coef,
                         double *rms, int *nkept);

/* Vertex of the least-squares parabola through (x_i, y_i), i in [0, n); returns 0 and the
 * vertex abscissa when the parabola opens downward, -1 otherwise. */
int tide_apcorr_parabola_max(int n, const double *x, const double *y, double *xmax);

#endif
