/* subtract_math.h — per-element math of the subtraction shared by the CPU and CUDA twins. */
#ifndef TIDE_SUBTRACT_MATH_H
#define TIDE_SUBTRACT_MATH_H
#include <stdint.h>
#include <math.h>
#include "core/hd.h"
#include "diff/subtract_kernels.h"

/** Number of monomials of total degree <= d in two variables: (d+1)(d+2)/2. */
TIDE_HD static inline int tide_sub_npoly(int d) { return (d + 1) * (d + 2) / 2; }

/** Normalised coordinate of pixel x on an axis of n pixels: -1 at the first centre, +1 at
 *  the last (so polynomial coefficients are O(1) whatever the frame size). */
TIDE_HD static inline double tide_sub_norm(double x, int64_t n) {
    return n > 1 ? 2.0 * x / (double)(n - 1) - 1.0 : 0.0;
}

/** The monomials u^(d-j) v^j for d = 0..deg, j = 0..d, in that order, into t[]. */
TIDE_HD static inline void tide_sub_monomials(double u, double v, int deg, double *t) {
    int n = 0;
    double ud[8], vd[8];
    ud[0] = vd[0] = 1.0;
    for (int i = 1; i <= deg; i++) {
        ud[i] = ud[i - 1] * u;
        vd[i] = vd[i - 1] * v;
    }
    for (int d = 0; d <= deg; d++)
        for (int j = 0; j <= d; j++)
            t[n++] = ud[d - j] * vd[j];
}

/** Evaluate sum_p coef[p] * monomial_p(u, v) for degree deg. */
TIDE_HD static inline double tide_sub_poly_eval(const double *coef, double u, double v,
                                                int deg) {
    double t[45];
    tide_sub_monomials(u, v, deg, t);
    double s = 0.0;
    int n = tide_sub_npoly(deg);
    for (int p = 0; p < n; p++)
        s += coef[p] * t[p];
    return s;
}
/** The model (matched reference + background) at pixel (x, y), index idx = y*W + x. */
TIDE_HD static inline double tide_sub_model_at(const tide_sub_model *m, int64_t x, int64_t y,
                                               int64_t w, int64_t h, int64_t idx) {
    double u = tide_sub_norm((double)x, w), v = tide_sub_norm((double)y, h);
    double t[TIDE_SUB_MAXPOLY];
    tide_sub_monomials(u, v, m->sdeg, t);
    double s = 0.0;
    for (int p = 0; p < m->npoly; p++)
        s += t[p] * (double)m->conv[p][idx];
    return s + tide_sub_poly_eval(m->bg, u, v, m->bgdeg);
}

/** Is @p v a usable pixel value with mask @p mk (mask may be absent: pass 0)? */
TIDE_HD static inline int tide_sub_usable(float v, uint16_t mk, uint16_t bits) {
    return isfinite(v) && !(mk & bits);
}

/** Frame pixel of stamp pixel i of a stamp centred at index c (y*W+x): x, y into *px, *py. */
TIDE_HD static inline void tide_sub_stamp_pixel(int64_t c, int64_t i, int hs, int64_t w,
                                                int64_t *px, int64_t *py) {
    int64_t sw = 2 * hs + 1;
    *px = c % w + i % sw - hs;
    *py = c / w + i / sw - hs;
}
#endif
