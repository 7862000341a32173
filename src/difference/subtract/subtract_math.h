/* subtract_math.h — per-element math of the subtraction shared by the CPU and CUDA twins. */
#ifndef TIDE_SUBTRACT_MATH_H
#define TIDE_SUBTRACT_MATH_H
#include <stdint.h>
#include <math.h>
#include "core/gpu/hd.h"
#include "core/gpu/unfused.h"
#include "subtract_kernels.h"

/** Number of monomials of total degree <= d in two variables: (d+1)(d+2)/2. */
TIDE_HD static inline int tide_sub_npoly(int d) {
    return (d + 1) * (d + 2) / 2;
}

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
TIDE_HD static inline double tide_sub_poly_eval(const double *coef, double u, double v, int deg) {
    double t[45];
    tide_sub_monomials(u, v, deg, t);
    double s = 0.0;
    int n = tide_sub_npoly(deg);
    for (int p = 0; p < n; p++)
        s += coef[p] * t[p];
    return s;
}
#ifdef __CUDA_ARCH__
#define SUB_UNROLL _Pragma("unroll")
#else
#define SUB_UNROLL
#endif

/** The model (matched reference + background) at pixel (x, y), index idx = y*W + x:
 *  sum_p t_p conv_p[idx] + sum_p bg_p t_p over the monomials t_p of tide_sub_monomials, the
 *  same products and sums in the same order. Written with loops of fixed length (degree
 *  <= 4) and the degree as a guard, so that on the GPU, fully unrolled, every index is a
 *  constant and the powers and monomials stay in registers (with the arrays of
 *  tide_sub_monomials indexed at run time they went to local memory: ~0.6 KB per pixel). */
TIDE_HD static inline double tide_sub_model_at(const tide_sub_model *m, int64_t x, int64_t y,
                                               int64_t w, int64_t h, int64_t idx) {
    double u = tide_sub_norm((double)x, w), v = tide_sub_norm((double)y, h);
    double ud[5], vd[5];
    ud[0] = vd[0] = 1.0;
    SUB_UNROLL
    for (int i = 1; i < 5; i++) {
        ud[i] = ud[i - 1] * u;
        vd[i] = vd[i - 1] * v;
    }
    double s = 0.0, b = 0.0;
    int p = 0;
    SUB_UNROLL
    for (int d = 0; d < 5; d++) {
        SUB_UNROLL
        for (int j = 0; j <= d; j++) {
            double t = ud[d - j] * vd[j];
            if (d <= m->sdeg)
                s += t * (double)m->conv[p][idx];
            if (d <= m->bgdeg)
                b += m->bg[p] * t;
            p++;
        }
    }
    return s + b;
}

/** Is pixel (x, y) of @p pix (row stride @p stride) a local peak: no less than any of its 8
 *  neighbours (all inside the frame: the caller keeps a margin)? Stamps go on peaks so that
 *  a cell next to a star's cell does not take a stamp on that star's wing (the brightest
 *  pixel of such a cell is on its border), which would leave a cell with two stars only
 *  one stamp and a fit on few stars no stamp to spare. */
TIDE_HD static inline int tide_sub_peak(const float *pix, int64_t stride, int64_t x, int64_t y) {
    const float v = pix[y * stride + x];
    for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++)
            if ((dx || dy) && !(v >= pix[(y + dy) * stride + x + dx]))
                return 0;
    return 1;
}

/** Is @p v a usable pixel value with mask @p mk (mask may be absent: pass 0)? */
TIDE_HD static inline int tide_sub_usable(float v, uint16_t mk, uint16_t bits) {
    return isfinite(v) && !(mk & bits);
}

/** Consecutive stamp pixels one GPU thread correlates with a basis kernel. */
#define TIDE_SUB_CORR_R 4

/** The basis-convolved reference at TIDE_SUB_CORR_R consecutive pixels (px + r, py) of a stamp
 *  whose patch (the stamp with its kernel halo, pw wide) is @p patch: acc[r] = sum over kernel
 *  rows jy, then taps jx, of k[jy kw + jx] patch[(py + jy) pw + px + r + jx], in float, in the
 *  CPU twin's order (tide_sub_basis_stamps_cpu). A window of patch values slides along the
 *  taps, so each tap and each patch value is read once for all the pixels. Lanes past the
 *  patch row (px + r + jx >= pw) read 0; their results are not meaningful. */
TIDE_HD static inline void tide_sub_corr_group(const float *patch, int pw, int py, int px,
                                               const float *k, int kw, float *acc) {
    float win[TIDE_SUB_CORR_R];
    for (int r = 0; r < TIDE_SUB_CORR_R; r++)
        acc[r] = 0.0f;
    for (int jy = 0; jy < kw; jy++) {
        const float *pr = patch + (py + jy) * pw + px;
        const float *kr = k + jy * kw;
        /* win[r] = pr[r + jx] at tap jx */
        for (int r = 0; r < TIDE_SUB_CORR_R - 1; r++)
            win[r + 1] = px + r < pw ? pr[r] : 0.0f;
        for (int jx = 0; jx < kw; jx++) {
            for (int r = 0; r < TIDE_SUB_CORR_R - 1; r++)
                win[r] = win[r + 1];
            int e = jx + TIDE_SUB_CORR_R - 1;
            win[TIDE_SUB_CORR_R - 1] = px + e < pw ? pr[e] : 0.0f;
            float kv = kr[jx];
            for (int r = 0; r < TIDE_SUB_CORR_R; r++)
                acc[r] = tide_fadd(acc[r], tide_fmul(kv, win[r]));
        }
    }
}

/** Pair index @p pr of the upper triangle of an nc x nc matrix, row by row, -> (a, b), a <= b;
 *  *a = -1 when pr is past the last pair. */
TIDE_HD static inline void tide_sub_pair(int pr, int nc, int *a, int *b) {
    int i = 0, rem = pr;
    if (pr >= nc * (nc + 1) / 2) {
        *a = -1;
        *b = 0;
        return;
    }
    while (rem >= nc - i) {
        rem -= nc - i;
        i++;
    }
    *a = i;
    *b = i + rem;
}

/** One tile of a normal-matrix entry: acc + sum over i < nt of (w[i] da[i]) db[i], in double,
 *  in order, each product and sum rounded alone: the CPU twin's loop (tide_sub_normal_cpu)
 *  split at tile boundaries, so the same bits. */
TIDE_HD static inline double tide_sub_normal_tile(double acc, const float *w, const float *da,
                                                  const float *db, int nt) {
    for (int i = 0; i < nt; i++)
        acc = tide_dadd(acc, tide_dmul(tide_dmul(w[i], da[i]), db[i]));
    return acc;
}

/** Frame pixel of stamp pixel i of a stamp centred at index c (y*W+x): x, y into *px, *py. */
TIDE_HD static inline void tide_sub_stamp_pixel(int64_t c, int64_t i, int hs, int64_t w,
                                                int64_t *px, int64_t *py) {
    int64_t sw = 2 * hs + 1;
    *px = c % w + i % sw - hs;
    *py = c / w + i / sw - hs;
}
#endif
