/* apcorr_internal.h — the small least-squares fits behind the aperture-correction model
 * (host side: they see at most a few hundred calibration stars). */
#ifndef TIDE_APCORR_INTERNAL_H
#define TIDE_APCORR_INTERNAL_H
#include <stdint.h>

/** The fixed part of clipped polynomial fits of many value sets on the same points (one per
 *  growth-curve radius): every point's terms, and the Cholesky factor of the normal matrix
 *  of all points, which the first round of every fit that keeps all points shares. */
typedef struct tide_apcorr_design {
    int n, m;  /**< points, terms */
    double *T; /**< n × m: tide_apcorr_terms of each point */
    double *L; /**< m × m lower Cholesky factor of sum_i T_i T_i^T; NULL when singular */
} tide_apcorr_design;

/** The design of @p n points (u, v) for polynomials of @p degree (apcorr_math.h). Returns 0 or
 *  TIDE_E_NOMEM; free with tide_apcorr_design_free. */
int tide_apcorr_design_make(int n, const double *u, const double *v, int degree,
                            tide_apcorr_design *d);
/** Free the arrays of @p d. */
void tide_apcorr_design_free(tide_apcorr_design *d);

/* Fit val ≈ Σ_t coef_t term_t(u, v) on the points of @p d with iterated clipping at
 * sigma × rms (up to iters rounds). keep (n) is in/out: 1 = used. Returns 0, or -1 when
 * the system is singular / fewer points than terms. *rms: rms of the kept residuals. */
int tide_apcorr_fit_poly(const tide_apcorr_design *d, const double *val, double sigma, int iters,
                         unsigned char *keep, double *coef, double *rms, int *nkept);

/* Vertex of the least-squares parabola through (x_i, y_i), i in [0, n); returns 0 and the
 * vertex abscissa when the parabola opens downward, -1 otherwise. */
int tide_apcorr_parabola_max(int n, const double *x, const double *y, double *xmax);

#endif
