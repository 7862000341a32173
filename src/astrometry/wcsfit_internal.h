/* wcsfit_internal.h — pieces of the TAN-SIP fit shared by wcsfit.c, wcsfit_poly.c and
 * refine.c: the gnomonic projection on unit vectors, polynomial least squares, and the fit
 * split into its two halves (the forward model on pairs; then the inverse and the WCS), so
 * the refinement's clipping loop refits without building a WCS each time. */
#ifndef TIDE_WCSFIT_INTERNAL_H
#define TIDE_WCSFIT_INTERNAL_H
#include <math.h>
#include <stdint.h>

#include "tide/wcsfit.h"

#define WCSFIT_PI 3.14159265358979323846
#define WCSFIT_D2R (WCSFIT_PI / 180.0)
/* Coefficients of a full 2-D polynomial of total degree o. */
#define WCSFIT_NCOEF(o) (((o) + 1) * ((o) + 2) / 2)
/* Index of u^p v^q: the layout of tide_wcs_tansip (wcs.h). */
#define WCSFIT_CIDX(p, q) (((p) + (q)) * ((p) + (q) + 1) / 2 + (q))
/* Highest order of the inverse AP/BP. */
#define WCSFIT_INV_MAX 9

/* Unit vector of (ra, dec) in degrees. */
static inline void wcsfit_unit(double ra, double dec, double r[3]) {
    double cd = cos(dec * WCSFIT_D2R);
    r[0] = cd * cos(ra * WCSFIT_D2R);
    r[1] = cd * sin(ra * WCSFIT_D2R);
    r[2] = sin(dec * WCSFIT_D2R);
}

/* (ra, dec) in degrees, ra in [0, 360), of a (not necessarily unit) vector. */
static inline void wcsfit_radec(const double r[3], double *ra, double *dec) {
    double a = atan2(r[1], r[0]) / WCSFIT_D2R;
    *ra = a < 0 ? a + 360.0 : a;
    *dec = atan2(r[2], hypot(r[0], r[1])) / WCSFIT_D2R;
}

/* The tangent point t and the east and north unit vectors there. */
typedef struct wcsfit_basis {
    double t[3], e[3], n[3];
} wcsfit_basis;

static inline void wcsfit_basis_make(double a0, double d0, wcsfit_basis *b) {
    double sa = sin(a0 * WCSFIT_D2R), ca = cos(a0 * WCSFIT_D2R);
    double sd = sin(d0 * WCSFIT_D2R), cd = cos(d0 * WCSFIT_D2R);
    b->t[0] = cd * ca, b->t[1] = cd * sa, b->t[2] = sd;
    b->e[0] = -sa, b->e[1] = ca, b->e[2] = 0.0;
    b->n[0] = -sd * ca, b->n[1] = -sd * sa, b->n[2] = cd;
}

/* Gnomonic projection (Calabretta & Greisen 2002, §5.1.3, LONPOLE 180): standard coordinates
 * ξ = (r·e)/(r·t), η = (r·n)/(r·t), in degrees. -1 when r is 90° or more from t. */
static inline int wcsfit_project(const wcsfit_basis *b, const double r[3], double *xi,
                                 double *eta) {
    double den = r[0] * b->t[0] + r[1] * b->t[1] + r[2] * b->t[2];
    if (!(den > 1e-8))
        return -1;
    *xi = (r[0] * b->e[0] + r[1] * b->e[1]) / den / WCSFIT_D2R;
    *eta = (r[0] * b->n[0] + r[1] * b->n[1] + r[2] * b->n[2]) / den / WCSFIT_D2R;
    return 0;
}

/* The inverse: the unit vector of standard coordinates (ξ, η) in degrees. */
static inline void wcsfit_deproject(const wcsfit_basis *b, double xi, double eta, double p[3]) {
    double x = xi * WCSFIT_D2R, y = eta * WCSFIT_D2R;
    double inv = 1.0 / sqrt(1.0 + x * x + y * y);
    for (int k = 0; k < 3; k++)
        p[k] = (b->t[k] + x * b->e[k] + y * b->n[k]) * inv;
}

/* The monomials u^p v^q (p + q <= o, o <= WCSFIT_INV_MAX) in WCSFIT_CIDX order. */
void tide_wcsfit_monomials(int o, double u, double v, double *m);

/* Σ c[k] u^p v^q over p + q <= o. */
double tide_wcsfit_poly(int o, const double *c, double u, double v);

/* Weighted least-squares fit of two full polynomials of degree o in (u, v) to tx and ty
 * (w may be NULL); cx, cy receive WCSFIT_NCOEF(o) coefficients. Normal equations with Jacobi
 * scaling and Cholesky, accumulated in fixed blocks summed in order (deterministic for any
 * thread count). 0, -1 when singular, -2 out of memory. */
int tide_wcsfit_polyfit2(int64_t n, const double *u, const double *v, const double *w,
                         const double *tx, const double *ty, int o, double *cx, double *cy);

/* Pixel offsets (u, v) from CRPIX → standard coordinates (deg) through m's CD and A/B. */
void tide_wcsfit_model_std(const tide_wcs_tansip *m, double u, double v, double *xi, double *eta);

/* Pixels (0-based) → sky (deg) through m, for n points (OpenMP above 20,000). */
void tide_wcsfit_model_pix2sky(const tide_wcs_tansip *m, int64_t n, const double *x,
                               const double *y, double *ra, double *dec);

/* The forward half of tide_wcsfit_tansip: pairs of pixels (x, y) and reference unit vectors
 * r (3 per pair) with weights w (NULL = 1) → m (crpix, crval, cd, cdinv, A, B; no AP/BP),
 * residuals dx, dy (may be NULL) and the info's n, order, RMS fields. Same errors.
 * crval_tol_px: the fit is repeated about the new CRVAL until the sky position of CRPIX is
 * this close to it (moving CRVAL by δ without refitting leaves errors of order δ × the
 * field's radius in radians: 1e-4 px is invisible; tide_wcsfit_tansip uses 1e-7). */
int tide_wcsfit_core(const double *x, const double *y, const double *r, const double *w, int64_t n,
                     int64_t width, int64_t height, const tide_wcsfit_params *p,
                     double crval_tol_px, tide_wcs_tansip *m, tide_wcsfit_info *info, double *dx,
                     double *dy);

/* The second half: fit AP/BP into m (p->inv_tol_px) and build the WCS through header cards;
 * sets info->inv_order and inv_maxerr_px (info may be NULL). */
int tide_wcsfit_finish(tide_wcs_tansip *m, int64_t width, int64_t height,
                       const tide_wcsfit_params *p, tide_wcs **out, tide_wcsfit_info *info);

#endif
