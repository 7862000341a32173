/* tan_sip_math.h — per-point TAN and TAN-SIP transforms, shared by the CPU and CUDA kernels.
 *
 * Pixel -> sky (Shupe et al. 2005, SIP; Calabretta & Greisen 2002, Paper II, TAN):
 *   u = x + 1 - CRPIX1, v = y + 1 - CRPIX2              (x, y 0-based)
 *   U = u + A(u, v),  V = v + B(u, v)                     (SIP forward; absent: U = u)
 *   (xi, eta) = CD (U, V)                                 (degrees -> radians)
 *   ra  = ra0 + atan2(xi, cos d0 - eta sin d0)
 *   dec = atan2(sin d0 + eta cos d0, hypot(xi, cos d0 - eta sin d0))
 * the closed form of the gnomonic inverse for the native pole at (ra0, d0) with
 * LONPOLE = 180; another LONPOLE is a rotation of (xi, eta), folded into CD at extraction.
 * Sky -> pixel is the gnomonic forward projection, CD^-1, then the SIP inverse: AP/BP as the
 * first guess and Newton steps on the forward polynomials for the exact solution. */
#ifndef TIDE_TAN_SIP_MATH_H
#define TIDE_TAN_SIP_MATH_H
#include <math.h>
#include "core/gpu/hd.h"
#include "tide/wcs.h"

#define TIDE_TANSIP_D2R 0.017453292519943295769 /* pi / 180 */
#define TIDE_TANSIP_R2D 57.295779513082320877   /* 180 / pi */

/** A 2-D polynomial sum_{p+q<=order} c[(p+q)(p+q+1)/2 + q] u^p v^q and, when @p du / @p dv
 *  are non-NULL, its partial derivatives. Nested Horner schemes (in v inside, u outside)
 *  with the derivatives carried along: no power tables, so no per-thread local memory on
 *  the GPU, and a fixed order of operations. */
TIDE_HD static inline double tide_tansip_poly(const double *c, int order, double u, double v,
                                              double *du, double *dv) {
    double f = 0.0, fu = 0.0, fv = 0.0;
    for (int p = order; p >= 0; p--) {
        double g = 0.0, gv = 0.0; /* g(v) = sum_q c(p, q) v^q and g'(v) */
        for (int q = order - p; q >= 0; q--) {
            const int d = p + q;
            gv = gv * v + g;
            g = g * v + c[d * (d + 1) / 2 + q];
        }
        fu = fu * u + f;
        f = f * u + g;
        fv = fv * u + gv;
    }
    if (du)
        *du = fu;
    if (dv)
        *dv = fv;
    return f;
}

/** Pixel (0-based) to sky (degrees, ra in [0, 360)). */
TIDE_HD static inline void tide_tansip_pix2sky_one(const tide_wcs_tansip *t, double x, double y,
                                                   double *ra, double *dec) {
    const double u = x + 1.0 - t->crpix[0], v = y + 1.0 - t->crpix[1];
    double U = u, V = v;
    if (t->order[0])
        U += tide_tansip_poly(t->sip[0], t->order[0], u, v, 0, 0);
    if (t->order[1])
        V += tide_tansip_poly(t->sip[1], t->order[1], u, v, 0, 0);
    const double xi = (t->cd[0][0] * U + t->cd[0][1] * V) * TIDE_TANSIP_D2R;
    const double eta = (t->cd[1][0] * U + t->cd[1][1] * V) * TIDE_TANSIP_D2R;
    const double den = t->cos_d0 - eta * t->sin_d0;
    double a = t->crval[0] + atan2(xi, den) * TIDE_TANSIP_R2D;
    a = fmod(a, 360.0);
    if (a < 0.0)
        a += 360.0;
    if (a >= 360.0)
        a = 0.0;
    *ra = a;
    *dec = atan2(t->sin_d0 + eta * t->cos_d0, hypot(xi, den)) * TIDE_TANSIP_R2D;
}

/** Sky (degrees) to pixel (0-based); NaN for points 90 degrees or more from the tangent
 *  point (they have no gnomonic projection). */
TIDE_HD static inline void tide_tansip_sky2pix_one(const tide_wcs_tansip *t, double ra, double dec,
                                                   double *x, double *y) {
    const double dra = (ra - t->crval[0]) * TIDE_TANSIP_D2R, d = dec * TIDE_TANSIP_D2R;
    const double sd = sin(d), cdd = cos(d), cra = cos(dra);
    const double cosc = t->sin_d0 * sd + t->cos_d0 * cdd * cra;
    if (!(cosc > 0.0)) {
        *x = *y = NAN;
        return;
    }
    const double xi = cdd * sin(dra) / cosc * TIDE_TANSIP_R2D;
    const double eta = (t->cos_d0 * sd - t->sin_d0 * cdd * cra) / cosc * TIDE_TANSIP_R2D;
    const double U = t->cdinv[0][0] * xi + t->cdinv[0][1] * eta;
    const double V = t->cdinv[1][0] * xi + t->cdinv[1][1] * eta;
    double u = U, v = V;
    if (t->order[0] || t->order[1]) {
        if (t->order[2])
            u += tide_tansip_poly(t->sip[2], t->order[2], U, V, 0, 0);
        if (t->order[3])
            v += tide_tansip_poly(t->sip[3], t->order[3], U, V, 0, 0);
        /* Newton on F(u, v) = (u + A - U, v + B - V) = 0. A distortion that folds over
         * (no unique inverse: a bad fit evaluated far outside its frame) makes it wander;
         * such points get NaN rather than a wrong position. */
        double step = INFINITY;
        for (int it = 0; it < 20; it++) {
            double au = 0, av = 0, bu = 0, bv = 0;
            const double fa =
                t->order[0] ? tide_tansip_poly(t->sip[0], t->order[0], u, v, &au, &av) : 0.0;
            const double fb =
                t->order[1] ? tide_tansip_poly(t->sip[1], t->order[1], u, v, &bu, &bv) : 0.0;
            const double f = u + fa - U, g = v + fb - V;
            const double j00 = 1.0 + au, j01 = av, j10 = bu, j11 = 1.0 + bv;
            const double det = j00 * j11 - j01 * j10;
            if (det == 0.0)
                break;
            const double du = (j11 * f - j01 * g) / det, dv = (j00 * g - j10 * f) / det;
            u -= du;
            v -= dv;
            step = fabs(du) + fabs(dv);
            if (step < 1e-12)
                break;
        }
        if (!(step < 1e-9)) { /* Newton converges quadratically: 1e-9 px is converged */
            *x = *y = NAN;
            return;
        }
    }
    *x = u + t->crpix[0] - 1.0;
    *y = v + t->crpix[1] - 1.0;
}

#endif
